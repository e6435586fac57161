#!/usr/bin/env python3
"""Monitoring overhead of the NUMAchine monitor in instructions (callgrind Ir), every workload.

For each built-in workload (`pmusim list workloads`) and each size, runs
`pmusim run W -s SIZE -p 16` under `valgrind --tool=callgrind` three times with the same
binary: without a monitor, with the four counters and the SRAM
(docs/numachine/counters-sram.toml) and configured but disabled (docs/numachine/disabled.toml),
and prints the instructions and the overheads as a Markdown table (issue 20's goal: at most
+10 % and +1 %). Instruction counts are deterministic for a binary and input, so one run each
is the figure whatever the host's load.

Usage (from the repository root, after `cargo build --release -p pmusim`):
    python3 docs/numachine/overhead_ir.py [--sizes test,small] [--workloads W,...] [--jobs N]
(PMUSIM=BINARY to measure another build.)
"""
import argparse, concurrent.futures as cf, os, re, subprocess, sys

BIN = os.environ.get("PMUSIM", "target/release/pmusim")
CASES = {"none": [], "counters-sram": ["--monitor", "docs/numachine/counters-sram.toml"],
         "disabled": ["--monitor", "docs/numachine/disabled.toml"]}


def workloads():
    out = subprocess.run([BIN, "list", "workloads", "--json"], check=True, capture_output=True,
                         text=True).stdout
    import json
    d = json.loads(out)
    items = d.get("workloads", d) if isinstance(d, dict) else d
    return [w["name"] for w in items]


def ir(args):
    r = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", BIN,
                        "run", *args], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{' '.join(args)}: exit {r.returncode}\n{r.stderr[-2000:]}")
    m = re.search(r"Collected : (\d+)", r.stderr)
    return int(m.group(1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="test,small")
    ap.add_argument("--workloads", default="")
    ap.add_argument("--procs", default="16")
    ap.add_argument("--jobs", type=int, default=1)
    a = ap.parse_args()
    ws = a.workloads.split(",") if a.workloads else workloads()
    jobs = [(w, s, k) for s in a.sizes.split(",") for w in ws for k in CASES]
    with cf.ThreadPoolExecutor(a.jobs) as ex:
        res = dict(zip(jobs, ex.map(
            lambda j: ir([j[0], "-s", j[1], "-p", a.procs, *CASES[j[2]]]), jobs)))
    print(f"callgrind Ir (millions), `pmusim run W -s SIZE -p {a.procs}`, one run each")
    print()
    print("| workload | size | no monitor | four counters + SRAM | disabled |")
    print("| --- | --- | --- | --- | --- |")
    worst = {"counters-sram": -1e9, "disabled": -1e9}
    for s in a.sizes.split(","):
        for w in ws:
            b = res[(w, s, "none")]
            cells = []
            for k in ("counters-sram", "disabled"):
                v = res[(w, s, k)]
                pct = (v / b - 1) * 100
                worst[k] = max(worst[k], pct)
                cells.append(f"{v / 1e6:,.1f} ({pct:+.2f} %)")
            print(f"| `{w}` | {s} | {b / 1e6:,.1f} | {cells[0]} | {cells[1]} |")
    print()
    print(f"worst: four counters + SRAM {worst['counters-sram']:+.2f} % (goal <= 10 %), "
          f"disabled {worst['disabled']:+.2f} % (goal <= 1 %)")


if __name__ == "__main__":
    main()
