#!/usr/bin/env python3
# Used for docs/memory-buffer.md, "`elan` at `-s small`": python3 tests/memctl_elan_sweep.py target/release/pmusim small fft,lu,... 2 > out.json
"""Every fixed setting of elan's buffer (watermark 1..32, read-ahead on/off), the closed loop
(cost rules) and the seed's rules, at one size, one run each (elan has no seed noise)."""
import re, subprocess, sys, json
from concurrent.futures import ThreadPoolExecutor
P = sys.argv[1]; size = sys.argv[2]; kernels = sys.argv[3].split(','); jobs = int(sys.argv[4])
def run(args):
    out = subprocess.run(['nice', P, 'run'] + args, capture_output=True, text=True)
    m = re.search(r'simulated ([\d,]+) processor cycles', out.stdout)
    ok = 'verified: true' in out.stdout
    if not m or not ok:
        return (args, None, out.stdout[:300] + out.stderr[:300])
    return (args, int(m.group(1).replace(',', '')), '')
tasks = []
for w in kernels:
    base = [w, '-s', size, '-m', 'elan']
    for ra in ('on', 'off'):
        for wm in range(1, 33):
            tasks.append(((w, f'wm{wm}_{ra}'), base + ['--memctl', f'watermark={wm},read_ahead={ra}']))
    tasks.append(((w, 'loop'), base + ['--monitor', 'memctl']))
    tasks.append(((w, 'seed'), base + ['--monitor', 'memctl', '--memctl-rule', 'seed']))
res = {}
with ThreadPoolExecutor(jobs) as ex:
    for (key, _), r in zip(tasks, ex.map(lambda t: run(t[1]), tasks)):
        res.setdefault(key[0], {})[key[1]] = r[1]
        if r[1] is None: print('FAILED', key, r[2], file=sys.stderr)
        sys.stderr.flush()
json.dump(res, sys.stdout, indent=1)
