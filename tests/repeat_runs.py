#!/usr/bin/env python3
"""Repeat runs: the same pmusim run, repeated in fresh processes, prints the same --json document.

    python3 tests/repeat_runs.py [ROUNDS] [CASE ...]

Each round runs every case twice, with no run-ahead (PMUSIM_WINDOW=min) and with the
default window, each time in a new process (so at a new load address: ASLR), from a
different working directory and with an environment of a different size. Every document,
stripped of the wall-clock fields and `run.events` (as tests/it/window.rs strips them), must
equal the first one of its case. A case is `WORKLOAD@PRESET` (default: the window test's seven
workloads on `flash-r10k`, the preset with a branch predictor, and on `flash` and `numachine`).
ROUNDS defaults to 20 (about 20 s a round on the shared 2-core machine). Exit 0 when every
case repeats, 1 otherwise, naming the first differing path.

Why (task det19): one `window::flash_r10k` run once gave 81,868 coherence misses against
81,616, because the branch predictor's table index came from the host address of a call
site's `Location` record, which moves with each load of the executable. Host dependence of
this kind shows only in separate processes, and only at some load addresses: hence many
fresh processes. It would not have shown that one in the builds of 29 November, whose
records met at no load address (BENCHMARKS.md, "a run that depended on its load address"): it
finds host dependence at the rate the hosts' variation does. Set PMUSIM to use another binary
(default: target/release/pmusim).
"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXE = os.environ.get("PMUSIM", os.path.join(ROOT, "target", "release", "pmusim"))
WORKLOADS = ["fft", "lu", "radix", "ocean", "lock", "false-sharing", "producer-consumer"]
PRESETS = ["flash-r10k", "flash", "numachine"]


def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items()
                if not (k.endswith("wall_seconds") or k in ("references_per_second", "events"))}
    if isinstance(v, list):
        return [strip(x) for x in v]
    return v


def first_difference(a, b, path=""):
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k} missing on one side"
            d = first_difference(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_difference(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if a == b else f"{path}: {a} against {b}"


def run(case, window_min, round_no, scratch):
    workload, preset = case.split("@")
    env = dict(os.environ)
    env.pop("PMUSIM_WINDOW", None)
    if window_min:
        env["PMUSIM_WINDOW"] = "min"
    env["REPEAT_RUNS_PAD"] = "x" * (round_no * 613 % 5000)
    cwd = os.path.join(scratch, str(round_no % 3))
    os.makedirs(cwd, exist_ok=True)
    out = subprocess.run([EXE, "run", workload, "-m", preset, "-s", "test", "--json"],
                         env=env, cwd=cwd, capture_output=True, check=True)
    return strip(json.loads(out.stdout))


def main():
    args = sys.argv[1:]
    rounds = int(args.pop(0)) if args and args[0].isdigit() else 20
    cases = args or [f"{w}@{p}" for p in PRESETS for w in WORKLOADS]
    first = {}
    with tempfile.TemporaryDirectory() as scratch:
        for r in range(rounds):
            for case in cases:
                for window_min in (True, False):
                    doc = run(case, window_min, r, scratch)
                    ref = first.setdefault(case, doc)
                    d = first_difference(ref, doc)
                    if d:
                        how = "no run-ahead" if window_min else "window"
                        print(f"{case} round {r} ({how}): {d}")
                        return 1
            print(f"round {r + 1}/{rounds}: {len(cases)} cases x 2 identical", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
