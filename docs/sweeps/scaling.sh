#!/bin/bash
# How far one run scales (issue 18, item 7): FFT --size small (65,536 points) on flash at 16,
# 64, 256 and 1024 processors and on numachine at 16, 64 and 128 (its largest machine: the
# routing mask has room for 8 rings of 4 stations of 4 processors), each REPS times (default
# 3), one run at a time; wall time and peak resident memory by GNU time, references and events
# from the run's --json; CPU time (user + system) is the figure that depends least on the
# machine's load. Prints one CSV line per run, then the medians as a Markdown table.
# FFT gives each thread sqrt(n)/P rows, so at most 256 threads at this size: on 1024
# processors it runs 256 threads (the other 768 processors idle; the machine is still built
# and simulated whole).
#
#   cargo build --release && docs/sweeps/scaling.sh [REPS] > scaling.txt
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=target/release/pmusim
REPS=${1:-3}
OUT=$(mktemp -d)
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "machine,procs,threads,rep,wall_s,cpu_s,max_rss_kb,references,events,simulated_cycles,verified"
for cfg in flash:16 flash:64 flash:256 flash:1024 numachine:16 numachine:64 numachine:128; do
    m=${cfg%:*} p=${cfg#*:}
    t=$(( p > 256 ? 256 : p ))
    for r in $(seq "$REPS"); do
        /usr/bin/time -o "$OUT/time" -f "%e %M %U %S" "$BIN" run fft -m "$m" -s small -p "$p" --threads "$t" --json > "$OUT/run.json"
        read -r wall rss usr sys < "$OUT/time"
        cpu=$(awk "BEGIN{print $usr + $sys}")
        python3 - "$OUT/run.json" "$m,$p,$t,$r,$wall,$cpu,$rss" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["run"]
print(f'{sys.argv[2]},{r["references"]},{r["events"]},{r["simulated_cycles"]},{d["workload"]["verified"]}')
PY
    done
done | tee "$OUT/runs.csv"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$OUT/runs.csv" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), fieldnames="machine procs threads rep wall_s cpu_s max_rss_kb references events simulated_cycles verified".split()))
groups = {}
for r in rows:
    groups.setdefault((r["machine"], int(r["procs"]), int(r["threads"])), []).append(r)
print()
print("| machine | processors | threads | wall s (median) | min-max | CPU s (median) | peak RSS MiB | references | CPU µs per reference | events per reference | CPU ns per event | host KiB per processor |")
print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
for (m, p, t), rs in groups.items():
    w = [float(r["wall_s"]) for r in rs]
    rss = statistics.median(int(r["max_rss_kb"]) for r in rs)
    refs, ev = int(rs[0]["references"]), int(rs[0]["events"])
    assert all(r["references"] == rs[0]["references"] for r in rs), "runs differ"
    wm = statistics.median(w)
    cm = statistics.median(float(r["cpu_s"]) for r in rs)
    print(f"| {m} | {p} | {t} | {wm:.2f} | {min(w):.2f}-{max(w):.2f} | {cm:.2f} | {rss/1024:.0f} | {refs:,} | {cm/refs*1e6:.3f} | {ev/refs:.2f} | {cm/ev*1e9:.0f} | {rss/p:.0f} |")
PY
