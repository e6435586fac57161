#!/usr/bin/env python3
# Usage: tests/memctl_phase_oracle.py WORKLOAD MACHINE SIZE WATERMARKS [SEED]  (e.g. fft elan test 1,2,3,4,8,16,24,31,32)
# Runs every fixed setting (the watermarks, read-ahead on and off) and splits the memory stall
# (read + write latency cycles) by procedure: on elan (one in-order processor) a run's cycles are a
# nearly constant residual plus that sum, so the per-procedure best setting bounds what a loop that
# follows phases could gain over the best fixed setting (docs/memctl-phases.md).
# Per-procedure memory stall (read+write latency cycles) at every fixed setting; oracle per-procedure choice.
import json, subprocess, sys, itertools
from concurrent.futures import ThreadPoolExecutor
import os
B=os.path.join(os.path.dirname(os.path.abspath(__file__)),'..','target','release','pmusim')
wl, mach, size = sys.argv[1], sys.argv[2], sys.argv[3]
wms = [int(x) for x in sys.argv[4].split(',')]
seed = sys.argv[5] if len(sys.argv)>5 else '1'
def run(s):
    wm, ra = s
    out = subprocess.run(['nice',B,'run',wl,'-m',mach,'-s',size,'--seed',seed,'-q','--json','--memctl',f'watermark={wm},read_ahead={ra}'],capture_output=True,text=True)
    d = json.loads(out.stdout)
    g = d['ground_truth']
    cyc = d['run']['simulated_cycles']
    procs = {p['name']: p['read_latency_local_cycles']+p['write_latency_local_cycles']+p['read_latency_remote_cycles']+p['write_latency_remote_cycles'] for p in g['procedures']}
    return s, cyc, procs
settings = [(w,r) for w in wms for r in ('on','off')]
with ThreadPoolExecutor(2) as ex: res = list(ex.map(run, settings))
names = sorted({n for _,_,p in res for n in p}, key=lambda n:-res[0][2].get(n,0))
json.dump([(s,c,p) for s,c,p in res], open(f'/tmp/{wl.replace(":","_").replace("/","_")}_{mach}_{size}_{seed}.json','w'))
print('setting cycles total_lat', ' '.join(n[:10] for n in names))
for s,c,p in res: print(s, c, sum(p.values()), ' '.join(str(p.get(n,0)) for n in names))
best_fixed = min(res, key=lambda r: sum(r[2].values()))
print('best fixed by latency', best_fixed[0], sum(best_fixed[2].values()), 'cycles', best_fixed[1])
orc = 0
for n in names:
    b = min(res, key=lambda r: r[2].get(n,0))
    print(f'  {n}: best {b[0]} {b[2].get(n,0)}  at best-fixed {best_fixed[2].get(n,0)}  worst {max(r[2].get(n,0) for r in res)}')
    orc += b[2].get(n,0)
print('oracle per-procedure total', orc, 'gain vs best fixed', sum(best_fixed[2].values())-orc, 'cycles = %.3f %% of run' % (100*(sum(best_fixed[2].values())-orc)/best_fixed[1]))
