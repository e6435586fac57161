#!/bin/sh
# Callgrind instruction counts (Ir) of the seven cases BENCHMARKS.md tracks for the hot path.
# usage: tests/bench/callgrind-cases.sh [BIN] [LABEL]   (from the repository's root; BIN
# defaults to target/release/pmusim). One run each: the counts are deterministic.
BIN=${1:-target/release/pmusim}; L=${2:-$(git rev-parse --short HEAD 2>/dev/null)}
run() {
  name=$1; shift
  ir=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$@" 2>&1 >/dev/null \
    | grep -o 'Collected : [0-9]*' | grep -o '[0-9]*')
  echo "$L $name $ir"
}
run hits "$BIN" run hits -m ideal -s test -p 4
run false-sharing "$BIN" run false-sharing -s test -p 16
run fft "$BIN" run fft -s test -p 16
run stream-disabled "$BIN" run stream -s test -p 4 --monitor docs/numachine/disabled.toml
run uni-hit "$BIN" bench --case uni-hit --repeat 1
run trace-hit-1t "$BIN" bench --case trace-hit-1t --repeat 1
run numa16-share "$BIN" bench --case numa16-share --repeat 1
