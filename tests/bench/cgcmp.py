#!/usr/bin/env python3
"""Compare two Cachegrind files per function (pmusim's --cachegrind-out, then Cachegrind's): Ir, I1,
D1 (D1mr + D1mw) and LL (ILmr + DLmr + DLmw) over all functions, over the functions that ran the
same Ir under both tools, and for each FUNCTION named. Functions are keyed by name (all files
merged). Usage: cgcmp.py PMUSIM_FILE CACHEGRIND_FILE [FUNCTION...] (docs/qemu-tracer.md)."""
import sys, collections
def load(p):
    f = collections.defaultdict(lambda: [0]*9); fl = None; fn = None; ev = None
    for line in open(p):
        line = line.rstrip('\n')
        if line.startswith('events:'): ev = line.split()[1:]
        elif line.startswith('fl='): fl = line[3:]
        elif line.startswith('fn='): fn = line[3:]
        elif line and line[0].isdigit():
            v = [int(x) for x in line.split()[1:]]; v += [0]*(9-len(v))
            acc = f[fn]
            for i in range(9): acc[i] += v[i]
    return f
a, b = load(sys.argv[1]), load(sys.argv[2])
def agg(keys, f): 
    t = [0]*9
    for k in keys:
        for i in range(9): t[i] += f[k][i]
    return t
same = [k for k in a if k in b and a[k][0] == b[k][0]]
def show(name, x, y):
    d1 = lambda t: t[4]+t[7]; ll = lambda t: t[2]+t[5]+t[8]
    for lab, fx in (('Ir', lambda t: t[0]), ('I1', lambda t: t[1]), ('D1', d1), ('LL', ll)):
        p, c = fx(x), fx(y)
        print(f"{name:>10} {lab}: pmusim {p:,} cachegrind {c:,} ({(p-c)/c*100 if c else 0:+.2f} %)")
show('all', agg(a, a), agg(b, b))
show(f'same-Ir({len(same)})', agg(same, a), agg(same, b))
for fn in sys.argv[3:]:
    if fn in a and fn in b: show(fn, a[fn], b[fn])
