#!/bin/bash
# Issue 19: pmusim's --cachegrind-out against Cachegrind's on one program, like with like: the
# same cache geometry and the same process environment (docs/qemu-tracer.md, "The same
# program"). Cachegrind's guest starts with the environment valgrind gives it (its core
# preload library in LD_PRELOAD; Debian's wrapper script adds /usr/lib/debug to
# LD_LIBRARY_PATH), so the dynamic loader does more work before `main` under Cachegrind than
# in a plain run; this script reads that environment from valgrind itself and hands it to the
# guest under QEMU with QEMU_SET_ENV, so both tools count the same start-up.
#
# Usage, from the repository root after `cargo build --release`:
#   tests/bench/cg-like.sh [-g host|small] [-n] PROGRAM ARGS...
#   -g host   (default) the `cachegrind` preset: --I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64
#   -g small  numachine's sizes: --I1=16384,1,32 --D1=16384,1,32 --LL=1048576,1,64
#   -n        plain environment for pmusim's guest (shows the start-up difference)
# Prints tests/bench/cgcmp.py's comparison (all functions, then those that ran the same Ir).
set -euo pipefail
geometry=host
same_env=1
while getopts "g:n" o; do
  case $o in
    g) geometry=$OPTARG ;;
    n) same_env=0 ;;
    *) echo "usage: $0 [-g host|small] [-n] PROGRAM ARGS..." >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
if [ $# -lt 1 ]; then
  echo "usage: $0 [-g host|small] [-n] PROGRAM ARGS..." >&2
  exit 2
fi
root=$(cd "$(dirname "$0")/../.." && pwd)
P=$root/target/release/pmusim
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
case $geometry in
  host)
    machine=cachegrind
    cg=(--I1=32768,8,64 --D1=32768,8,64 --LL=8388608,16,64) ;;
  small)
    # A copy of the preset with numachine's L1 and L2 sizes, direct-mapped.
    "$P" list machines --show cachegrind |
      sed -e 's/^name = "cachegrind"/name = "cachegrind-small"/' \
          -e 's/^l1i = .*/l1i = { size_bytes = 16384, assoc = 1, line_bytes = 32, hit_cycles = 1 }/' \
          -e 's/^l1d = .*/l1d = { size_bytes = 16384, assoc = 1, line_bytes = 32, hit_cycles = 1 }/' \
          -e 's/^cache = { size_bytes = 8388608, assoc = 16, line_bytes = 64/cache = { size_bytes = 1048576, assoc = 1, line_bytes = 64/' \
          > "$D/small.toml"
    machine=$D/small.toml
    cg=(--I1=16384,1,32 --D1=16384,1,32 --LL=1048576,1,64) ;;
  *) echo "$0: -g takes host or small, not '$geometry'" >&2; exit 2 ;;
esac
if [ $same_env = 1 ]; then
  # What valgrind sets in its guest's environment, as KEY=VALUE,KEY=VALUE.
  QEMU_SET_ENV=$(valgrind --tool=none /usr/bin/env 2>/dev/null |
    grep -E '^LD_(PRELOAD|LIBRARY_PATH)=' | paste -sd, -)
  export QEMU_SET_ENV
  echo "guest environment under QEMU: $QEMU_SET_ENV"
fi
"$P" run --record -m "$machine" --cachegrind-out "$D/pm.out" -- "$@" > /dev/null
unset QEMU_SET_ENV
valgrind --tool=cachegrind --cache-sim=yes "${cg[@]}" --cachegrind-out-file="$D/cg.out" "$@" \
  > /dev/null 2> "$D/cg.err"
python3 "$root/tests/bench/cgcmp.py" "$D/pm.out" "$D/cg.out"
