#!/usr/bin/env python3
"""Checks that moving the monitors' reports onto the typed model kept every number: runs a
fixed list of monitored runs (text, CSV files, SVG) with an OLD and a NEW binary and checks
with numbers_kept.py that every number of the old output is in the new one (text against
text; the CSV files of a run against the new CSV files and text together).

    python3 tests/golden/monitor_numbers.py OLD_BINARY NEW_BINARY [OUT_DIR]

Exit 0 when every case keeps its numbers, 1 otherwise.
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DOCS = os.path.join(os.path.dirname(os.path.dirname(HERE)), "docs", "numachine")
sys.path.insert(0, HERE)
import numbers_kept  # noqa: E402

CASES = [
    ("mon-builtin-fft", ["run", "fft", "-s", "test", "-p", "16", "--monitor", "numachine", "--top", "16"]),
    ("mon-builtin-lock", ["run", "lock", "-s", "test", "-p", "16", "--monitor", "numachine"]),
    ("mon-counters-sram", ["run", "false-sharing", "-s", "test", "-p", "16", "--monitor", "@counters-sram.toml"]),
    ("mon-disabled", ["run", "stream", "-s", "test", "-p", "4", "--monitor", "@disabled.toml"]),
    ("mon-cache-profile", ["run", "fft", "-s", "test", "-p", "16", "--monitor", "@cache-profile.toml"]),
    ("mon-locality", ["run", "pointer-chase", "-s", "test", "-p", "16", "--monitor", "@locality.toml"]),
    ("mon-phase-timing", ["run", "migratory", "-s", "test", "-p", "16", "--monitor", "@phase-timing.toml"]),
    ("mon-builtin-flash", ["run", "producer-consumer", "-m", "flash", "-s", "test", "-p", "16", "--monitor", "numachine"]),
    ("fp-run-fft", ["run", "fft", "-m", "flash", "-s", "test", "-p", "16", "--monitor", "flashpoint"]),
    ("fp-report-text", ["report", "radix", "-s", "test", "-p", "16", "--by", "data,proc,proc-data"]),
    ("fp-report-csv", ["report", "lu", "-s", "test", "-p", "16", "--no-fence", "--format", "csv"]),
    ("addie-radix", ["run", "radix", "-s", "test", "-p", "4", "--monitor", "addie", "--addie-window", "64"]),
]
# The text report's wall-clock figures (as golden.py removes them).
WALL_TEXT = re.compile(r"(references) in [0-9.]+ s \([0-9.]+ [kMG]? ?references/s\)")
# Cases whose CSV files are compared too (`--csv DIR` on a run).
CSV = {"mon-builtin-fft", "mon-counters-sram", "mon-cache-profile", "mon-locality", "mon-phase-timing", "fp-run-fft"}


def run(binary, args, out, csv_dir=None):
    args = [a.replace("@", DOCS + "/") for a in args]
    if csv_dir:
        args += ["--csv", csv_dir]
    p = subprocess.run([binary] + args, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("%s %s: exit %d\n%s" % (binary, " ".join(args), p.returncode, p.stderr))
    text = WALL_TEXT.sub(r"\1 (wall-clock figures removed)", p.stdout)
    if "csv" in args and "--format" in args:
        # CSV on standard output: fields split by spaces, as cat_dir does for CSV files.
        text = text.replace(",", " ")
    with open(out, "w") as f:
        f.write(text)


def cat_dir(d, out):
    """The CSV files of a run as one text, fields split by spaces (numbers_kept reads commas
    as thousands separators)."""
    with open(out, "w") as f:
        for name in sorted(os.listdir(d)):
            f.write(open(os.path.join(d, name)).read().replace(",", " ") + "\n")


# Figures of the old text that the new renderers recompute from numbers that are kept: the
# signed error of an estimate ("+216.4%", now "+216.43%", or "+5 abs" where the exact value
# is small; docs/reports.md), the locality map's remote share ("(75.0% remote)", now a
# percent column with two decimals), and the "/4" of the old prescaler note.
DERIVED = re.compile(r"(?<![\w.])[-+]\d[\d,]*(?:\.\d+)?%|\(\d+\.\d% remote\)|events/4")


def strip_derived(path):
    text = open(path).read()
    n = len(DERIVED.findall(text))
    out = path + ".kept"
    with open(out, "w") as f:
        f.write(DERIVED.sub(" ", text))
    return out, n


def main(args):
    if len(args) < 2:
        print(__doc__)
        return 2
    old, new = args[0], args[1]
    out = args[2] if len(args) > 2 else os.path.join("/tmp", "monitor-numbers")
    os.makedirs(out, exist_ok=True)
    pairs = []
    derived = 0
    for name, a in CASES:
        for tag, binary in (("old", old), ("new", new)):
            run(binary, a, os.path.join(out, "%s.%s.txt" % (name, tag)))
        old_txt, n = strip_derived(os.path.join(out, name + ".old.txt"))
        derived += n
        pairs += [old_txt, os.path.join(out, name + ".new.txt")]
        if name in CSV and a[0] == "run":
            for tag, binary in (("old", old), ("new", new)):
                d = os.path.join(out, "%s.%s.csv.d" % (name, tag))
                subprocess.run(["rm", "-rf", d], check=True)
                run(binary, a, os.path.join(out, "%s.%s.csvrun.txt" % (name, tag)), d)
                cat_dir(d, os.path.join(out, "%s.%s.csv" % (name, tag)))
            # The new CSV files and text together must hold every number of the old CSV files.
            both = os.path.join(out, name + ".new.csv+txt")
            with open(both, "w") as f:
                f.write(open(os.path.join(out, name + ".new.csv")).read())
                f.write(open(os.path.join(out, name + ".new.txt")).read())
            pairs += [os.path.join(out, name + ".old.csv"), both]
    print("%d derived figures of the old texts (estimate errors, shares) left out: the renderers recompute them" % derived)
    return numbers_kept.main(pairs)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
