#!/bin/bash
# The real-Slurm check of issue 18, item 6 (not in `cargo test`): runs a sweep through a
# single-node Slurm cluster on this machine (`pmusim sweep submit --slurm --wait`) and
# compares it with a local run of the same sweep: the collected tables must be byte-identical
# and every result identical apart from its wall-clock fields.
#
#   cargo build --release && sudo docs/sweeps/slurm-check.sh [SWEEP.toml]
#
# As root. Installs Debian's slurm-wlm and munge if missing; when no slurmctld is running,
# writes /etc/slurm/slurm.conf (only if there is none), starts munged, slurmctld and slurmd,
# and at the end stops exactly the daemons it started, by their process ids. Uses the
# binary target/release/pmusim; the default sweep is docs/sweeps/flashpoint.toml (15 runs
# at --size test). See docs/sweeps/README.md and /work/shared/notes/slurm-single-node.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=$ROOT/target/release/pmusim
SWEEP=${1:-$ROOT/docs/sweeps/flashpoint.toml}
WORK=${SWEEP_CHECK_DIR:-/tmp/pmusim-slurm-check}
[ "$(id -u)" = 0 ] || { echo "slurm-check: run as root (it starts Slurm's daemons)" >&2; exit 2; }
[ -x "$BIN" ] || { echo "slurm-check: build first: cargo build --release" >&2; exit 2; }

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    echo "slurm-check: installing slurm-wlm and munge"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge
fi

STARTED=()   # "name pid" of the daemons this script started
stop() {
    for s in "${STARTED[@]}"; do
        set -- $s
        if kill -0 "$2" 2>/dev/null; then
            echo "slurm-check: stopping $1 (pid $2)"
            kill "$2" || true
        fi
    done
}
trap stop EXIT

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }
start() { # name pidfile command...
    local name=$1 pidfile=$2; shift 2
    if alive "$pidfile"; then
        echo "slurm-check: $name already runs (pid $(cat "$pidfile")): using it, leaving it running"
        return
    fi
    "$@"
    for _ in $(seq 50); do alive "$pidfile" && break; sleep 0.1; done
    alive "$pidfile" || { echo "slurm-check: $name did not start" >&2; exit 1; }
    STARTED+=("$name $(cat "$pidfile")")
    echo "slurm-check: started $name (pid $(cat "$pidfile"))"
}

H=$(hostname -s)
if [ ! -f /etc/slurm/slurm.conf ]; then
    mkdir -p /etc/slurm
    cat > /etc/slurm/slurm.conf <<CONF
ClusterName=local
SlurmctldHost=$H
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurmctld.log
SlurmdLogFile=/var/log/slurmd.log
JobAcctGatherType=jobacct_gather/none
NodeName=$H CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=$H Default=YES MaxTime=INFINITE State=UP
CONF
    echo "slurm-check: wrote /etc/slurm/slurm.conf"
fi
mkdir -p /var/spool/slurmctld /var/spool/slurmd /run/munge
chown munge:munge /run/munge
start munged /run/munge/munged.pid munged --force
start slurmctld /run/slurmctld.pid slurmctld
start slurmd /run/slurmd.pid slurmd
for _ in $(seq 60); do sinfo -h -o %t 2>/dev/null | grep -q idle && break; sleep 1; done
sinfo

rm -rf "$WORK"; mkdir -p "$WORK"
"$BIN" sweep plan "$SWEEP" -o "$WORK/local"
"$BIN" sweep plan "$SWEEP" -o "$WORK/slurm"
cmp "$WORK/local/manifest.jsonl" "$WORK/slurm/manifest.jsonl"

T0=$(date +%s.%N)
env -u SLURM_ARRAY_TASK_ID -u JOB_COMPLETION_INDEX "$BIN" sweep run "$WORK/local"
T1=$(date +%s.%N)
"$BIN" sweep submit "$WORK/slurm" --slurm --wait --time 00:30:00
T2=$(date +%s.%N)
echo "slurm-check: local pool $(awk "BEGIN{print $T1 - $T0}") s, Slurm array $(awk "BEGIN{print $T2 - $T1}") s (load average: $(cut -d' ' -f1-3 /proc/loadavg))"

"$BIN" sweep collect "$WORK/local" -o "$WORK/local.csv"
"$BIN" sweep collect "$WORK/slurm" -o "$WORK/slurm.csv"
cmp "$WORK/local.csv" "$WORK/slurm.csv"
echo "slurm-check: the collected tables are byte-identical ($(($(wc -l < "$WORK/local.csv") - 1)) runs)"
python3 - "$WORK" <<'PY'
import json, os, sys
w = sys.argv[1]
names = sorted(os.listdir(f"{w}/local/results"))
assert names == sorted(os.listdir(f"{w}/slurm/results")), "different result sets"
WALL = ('"wall_seconds":', '"references_per_second":')
def load(p):  # the bytes, without the two wall-clock lines of the run's pretty-printed document
    lines = open(p, "rb").read().split(b"\n")
    return b"\n".join(l for l in lines if not any(k.encode() in l for k in WALL))
for n in names:
    a, b = load(f"{w}/local/results/{n}"), load(f"{w}/slurm/results/{n}")
    assert a == b, f"{n} differs"
print(f"slurm-check: {len(names)} results byte-identical apart from the wall-clock lines")
PY
ls "$WORK/slurm/slurm" | head -3
echo "slurm-check: OK"
