#!/bin/bash
# Issue 19: fused pmusim against Cachegrind on python3.11 sum(range(3_000_000)), 5 alternating
# rounds; prints "tool round load wall user sys" (BENCHMARKS.md, "Fused through shared memory").
# Run from the repository root after cargo build --release.
P=$PWD/target/release/pmusim
D=$(mktemp -d)
for r in 1 2 3 4 5; do
  l=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -o $D/tf -f "%e %U %S" $P run --record -p 1 -- /usr/bin/python3.11 -c 'sum(range(3_000_000))' > /dev/null 2>&1
  echo "fused $r load=$l $(cat $D/tf)"
  l=$(cut -d' ' -f1 /proc/loadavg)
  /usr/bin/time -o $D/tc -f "%e %U %S" valgrind --tool=cachegrind --cache-sim=yes --cachegrind-out-file=/dev/null /usr/bin/python3.11 -c 'sum(range(3_000_000))' > /dev/null 2>&1
  echo "cachegrind $r load=$l $(cat $D/tc)"
done
rm -r "$D"
