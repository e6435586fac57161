#!/usr/bin/env python3
"""The accuracy of the Fig. 4.8 invalidation estimators (seed 000, 4.4.4), as a Markdown table.

Runs each case with the built-in configuration (`--monitor numachine`, which runs the
estimators beside their exact counts) and prints, summed over the cards: external invalidation
hits (event E) and invalidation misses (event F), each estimate beside the exact count, and
the misses the ground truth classifies as cold (a processor's first miss on a line). F's
excess over the exact count is the misses whose index reads invalid although the line is not an
invalidated copy of the same tag: the cold misses (the R4400's secondary-cache state bits start
invalid) and misses to an index whose invalid line has another tag; the last column is that
excess minus the cold misses.

Usage (from the repository root, after `cargo build --release -p pmusim`):
    python3 docs/numachine/estimators.py            # the table of docs/numachine-monitor.md
    python3 docs/numachine/estimators.py WORKLOAD MACHINE PROCS ...
"""
import json
import subprocess
import sys

CASES = [
    ("false-sharing", "ideal", 4),
    ("migratory", "ideal", 4),
    ("producer-consumer", "ideal", 4),
    ("false-sharing", "numachine", 16),
    ("lock", "numachine", 16),
    ("fft", "numachine", 16),
    ("lu", "numachine", 16),
    ("ocean", "numachine", 16),
    ("radix", "numachine", 16),
]


def pct(est, exact):
    if exact == 0:
        return "+%d abs" % est if est else "0"
    return "%+.1f%%" % ((est - exact) * 100.0 / exact)


def main():
    args = sys.argv[1:]
    cases = [(args[i], args[i + 1], int(args[i + 2])) for i in range(0, len(args), 3)] or CASES
    print("| workload | machine, processors | invalidation hits (E) | invalidation misses (F) "
          "| cold misses | F excess - cold |")
    print("| --- | --- | --- | --- | --- | --- |")
    for w, machine, procs in cases:
        out = subprocess.run(
            ["target/release/pmusim", "run", w, "-s", "test", "-m", machine, "-p", str(procs),
             "--monitor", "numachine", "--json"],
            check=True, capture_output=True, text=True).stdout
        d = json.loads(out)
        cards = d["monitors"]["numachine"]["cards"]
        e = [sum(c["estimators"]["invalidation_hits"][k] for c in cards)
             for k in ("estimate", "exact")]
        f = [sum(c["estimators"]["invalidation_misses"][k] for c in cards)
             for k in ("estimate", "exact")]
        cold = d["ground_truth"]["totals"]["cold"]
        print("| %s | %s, %d | %s vs exact %s (%s) | %s vs exact %s (%s) | %s | %+d |" % (
            w, machine, procs, f"{e[0]:,}", f"{e[1]:,}", pct(*e), f"{f[0]:,}", f"{f[1]:,}",
            pct(*f), f"{cold:,}", f[0] - f[1] - cold))
    print()
    print("(`python3 docs/numachine/estimators.py`, test size, built-in configuration)")


if __name__ == "__main__":
    main()
