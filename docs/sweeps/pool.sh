#!/bin/bash
# The local pool against the sum of its runs (issue 18: "no more than the sum of its runs
# divided by the cores, plus 5 %"). For each repetition, the sweep is planned afresh and run
# with --jobs 1 (its wall time is the sum of the runs, one after the other) and with --jobs
# JOBS (default: the host's cores); also the sum of the runs' own durations inside the pool,
# from its progress lines. Prints one line per sweep run, then the medians.
#
#   cargo build --release && docs/sweeps/pool.sh [SWEEP.toml] [REPS] [JOBS]
# (BIN=path/to/pmusim measures another build.)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${BIN:-$PWD/target/release/pmusim}
SWEEP=${1:-docs/sweeps/flashpoint.toml}
REPS=${2:-3}
JOBS=${3:-$(nproc)}
OUT=$(mktemp -d)
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "rep,jobs,wall_s,sum_of_runs_s"
for r in $(seq "$REPS"); do
    for j in 1 "$JOBS"; do
        rm -rf "$OUT/d"
        "$BIN" sweep plan "$SWEEP" -o "$OUT/d" > /dev/null
        t0=$(date +%s.%N)
        env -u SLURM_ARRAY_TASK_ID -u JOB_COMPLETION_INDEX "$BIN" sweep run "$OUT/d" --jobs "$j" 2> "$OUT/log" > /dev/null
        t1=$(date +%s.%N)
        sum=$(sed -n 's/.* ok (\([0-9.]*\) s;.*/\1/p' "$OUT/log" | awk '{s += $1} END {print s}')
        echo "$r,$j,$(awk "BEGIN{print $t1 - $t0}"),$sum"
    done
done | tee "$OUT/runs.csv"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$OUT/runs.csv" "$JOBS" <<'PY'
import csv, statistics, sys
jobs = int(sys.argv[2])
rows = list(csv.reader(open(sys.argv[1])))
seq = statistics.median(float(r[2]) for r in rows if r[1] == "1")
pool = statistics.median(float(r[2]) for r in rows if r[1] == str(jobs))
inner = statistics.median(float(r[3]) for r in rows if r[1] == str(jobs))
print(f"median wall: --jobs 1 {seq:.2f} s, --jobs {jobs} {pool:.2f} s")
print(f"pool / (sequential sum / {jobs}) = {pool / (seq / jobs):.3f}")
print(f"pool / (sum of its runs' own durations / {jobs}) = {pool / (inner / jobs):.3f}")
PY
rm -rf "$OUT"
