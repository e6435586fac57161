#!/usr/bin/env python3
"""Monitoring overhead of the NUMAchine monitor.

Runs `pmusim run WORKLOAD...` N times each, alternating: without a monitor, with the built-in
configuration (four counters, the SRAM and the queue histograms), with the four counters and the
SRAM only (docs/numachine/counters-sram.toml), and configured but disabled (GPCE = SRAMCE = 0,
docs/numachine/disabled.toml). Reports the medians of the run's own wall time
(`run.wall_seconds`) and of the process's CPU time (user + sys, steadier on a shared host).

Usage (from the repository root, after `cargo build --release -p pmusim`):
    python3 docs/numachine/overhead.py [N] [WORKLOAD ARGS...]
e.g. `python3 docs/numachine/overhead.py 7 stream -s test`,
     `python3 docs/numachine/overhead.py 5 fft -s small`,
     `python3 docs/numachine/overhead.py 5 false-sharing -s small`.
The default is 7 runs of `stream -s test` (16 processors on the `numachine` preset).
"""
import json, os, resource, statistics as st, subprocess, sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 7
w = sys.argv[2:] if len(sys.argv) > 2 else ["stream", "-s", "test"]
cases = {"none": [], "numachine": ["--monitor", "numachine"],
         "counters-sram": ["--monitor", "docs/numachine/counters-sram.toml"],
         "disabled": ["--monitor", "docs/numachine/disabled.toml"]}
wall = {k: [] for k in cases}
cpu = {k: [] for k in cases}
for _ in range(n):
    for k, extra in cases.items():
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run(["nice", "target/release/pmusim", "run", *w, "--json", *extra],
                             check=True, capture_output=True, text=True).stdout
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        wall[k].append(json.loads(out)["run"]["wall_seconds"])
        cpu[k].append((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime))
bw, bc = st.median(wall["none"]), st.median(cpu["none"])
print(f"{' '.join(w)}: {n} alternating runs, load average {os.getloadavg()[0]:.2f} at the end")
for k in cases:
    mw, mc = st.median(wall[k]), st.median(cpu[k])
    print(f"{k:14s} wall median {mw:.3f} s ({(mw / bw - 1) * 100:+.1f}%)   cpu median {mc:.3f} s ({(mc / bc - 1) * 100:+.1f}%)")
