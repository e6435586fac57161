#!/usr/bin/env python3
"""Checks that a text layout change kept every number: each number of OLD appears in NEW at
least as often (thousands separators and a trailing % ignored).

    python3 tests/golden/numbers_kept.py OLD NEW [OLD NEW ...]

Exit 0 when every pair keeps its numbers, 1 otherwise (the missing numbers are listed).
"""
import collections
import re
import sys

# A number not glued to a word (so "L2", "p50", "PAPI_L2_LDM" are names, not numbers).
NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?(?![\w])")


def numbers(path):
    with open(path) as f:
        text = f.read()
    return collections.Counter(m.group(0).replace(",", "").lstrip("+") for m in NUMBER.finditer(text))


def main(args):
    if not args or len(args) % 2:
        print(__doc__)
        return 2
    bad = 0
    for old, new in zip(args[::2], args[1::2]):
        a, b = numbers(old), numbers(new)
        missing = {n: c - b[n] for n, c in a.items() if b[n] < c}
        total = sum(a.values())
        if missing:
            bad += 1
            print(f"{new}: {sum(missing.values())} of {total} numbers of {old} missing: {sorted(missing.items())[:40]}")
        else:
            print(f"{new}: all {total} numbers of {old} kept")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
