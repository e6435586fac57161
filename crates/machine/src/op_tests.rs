//! Tests of the fine instruction classes (`cpu::op`): exact counts by class, the preset's
//! extra cycles, and `Retire` observations that add up to the exact counts, with and without
//! several threads per core and spin loops.

use crate::addr::Place;
use crate::config::Preset;
use crate::cpu::op::Op;
use crate::cpu::pipeline::Ps;
use crate::cpu::Class;
use crate::probe::{kind, Observation, Probe, Signals};
use crate::sim::{Machine, Options};
use std::cell::RefCell;
use std::rc::Rc;

/// Sums `Retire` observations per (core, op), and checks that each core's spans follow one
/// another without overlap.
struct Retired {
    per: Rc<RefCell<Vec<[u64; Op::COUNT]>>>,
    last: Vec<(u64, u64)>,
}

impl Probe for Retired {
    fn observe(&mut self, o: &Observation, _sig: &mut Signals) {
        if let Observation::Retire {
            proc,
            t,
            from,
            op,
            n,
            ..
        } = *o
        {
            let p = proc as usize;
            assert!(from <= t, "span ({from}, {t}]");
            let (lf, lt) = self.last[p];
            // One report's fine classes share its span; the next report starts where it ended.
            assert!(
                (from, t) == (lf, lt) || from >= lt,
                "core {p}: span ({from}, {t}] overlaps the previous ({lf}, {lt}]"
            );
            assert!(n > 0);
            self.last[p] = (from, t);
            self.per.borrow_mut()[p][op as usize] += n;
        }
    }
    fn interest(&self) -> u32 {
        kind::RETIRE
    }
    fn name(&self) -> &str {
        "retired"
    }
}

fn preset(tpc: u32, extra: &[(&str, u32)]) -> Preset {
    let mut p = Preset::builtin("ideal").unwrap().with_procs(2).unwrap();
    p.cpu.threads_per_core = tpc;
    for (k, v) in extra {
        p.cpu.op_extra_cycles.insert(k.to_string(), *v);
    }
    p.validate().unwrap();
    p
}

/// Each thread: 10 FMAs, 3 divides, 7 plain FP, 5 int, 2 compares, loads of 4 and 8 bytes,
/// stores of 1 and 32 bytes, an indirect branch, and a lock (spin loops when contended).
fn program(m: &mut Machine, threads: usize) {
    let data = m.setup().alloc("data", 1 << 16, Place::RoundRobin);
    let lock = m.setup().lock("lock");
    for t in 0..threads {
        m.spawn(t, move |ctx| {
            for k in 0..50u64 {
                let a = data + ((t as u64 * 64 + k) % 1024) * 64;
                ctx.op(Op::FpFma, 10);
                ctx.op(Op::FpDiv, 3);
                ctx.fp(7);
                ctx.int(5);
                ctx.op(Op::IntCompare, 2);
                ctx.load_n(a, 4);
                ctx.load(a + 8);
                ctx.store_n(a + 16, 1);
                ctx.store_n(a + 32, 32);
                ctx.op(Op::BrIndirect, 1);
                ctx.lock(lock);
                ctx.int(20);
                ctx.unlock(lock);
            }
        });
    }
}

fn run(
    tpc: u32,
    threads: usize,
    extra: &[(&str, u32)],
    watch: bool,
) -> (Machine, Vec<[u64; Op::COUNT]>) {
    let mut m = Machine::new(preset(tpc, extra), Options::default()).unwrap();
    program(&mut m, threads);
    let per = Rc::new(RefCell::new(vec![[0u64; Op::COUNT]; 2]));
    if watch {
        m.attach(Box::new(Retired {
            per: per.clone(),
            last: vec![(0, 0); 2],
        }));
    }
    m.run(Some(1_000_000_000)).unwrap();
    let v = per.borrow().clone();
    (m, v)
}

#[test]
fn exact_counts_by_fine_class() {
    let (m, _) = run(1, 2, &[], false);
    for c in &m.state().cores {
        let ops = c.cnt.ops();
        assert_eq!(ops[Op::FpFma as usize], 500);
        assert_eq!(ops[Op::FpDiv as usize], 150);
        assert_eq!(ops[Op::IntCompare as usize], 100);
        assert_eq!(ops[Op::Load4 as usize], 50);
        assert_eq!(ops[Op::Store1 as usize], 50);
        assert_eq!(ops[Op::Store32 as usize], 50);
        assert_eq!(ops[Op::BrIndirect as usize], 50);
        // The plain FP instructions are the FP class's default op.
        assert_eq!(ops[Op::Fp as usize], 350);
        // Fine classes add up to their pipeline classes.
        for class in Class::ALL {
            let sum: u64 = Op::ALL
                .iter()
                .filter(|o| o.class() == class)
                .map(|o| ops[*o as usize])
                .sum();
            assert_eq!(sum, c.cnt.instr[class as usize], "{class:?}");
        }
    }
}

#[test]
fn extra_cycles_are_charged_as_slips() {
    let (a, _) = run(1, 2, &[], false);
    let (b, _) = run(1, 2, &[("fp-div", 16), ("int-compare", 3)], false);
    for (x, y) in a.state().cores.iter().zip(&b.state().cores) {
        // The lock's spin loops and swaps (loads, stores, branches) depend on timing.
        for class in [Class::Integer, Class::Fp] {
            assert_eq!(x.cnt.instr[class as usize], y.cnt.instr[class as usize]);
        }
        assert_eq!(x.cnt.xops, y.cnt.xops);
        let fp = |c: &crate::cpu::Counters| c.ps[Ps::FpSlip as usize];
        let int = |c: &crate::cpu::Counters| c.ps[Ps::IntegerSlip as usize];
        assert_eq!(fp(&y.cnt) - fp(&x.cnt), 150 * 16);
        assert_eq!(int(&y.cnt) - int(&x.cnt), 100 * 3);
    }
}

#[test]
fn retire_observations_add_up_to_the_exact_counts_and_change_nothing() {
    for (tpc, threads) in [(1, 2), (2, 4), (2, 7)] {
        let (quiet, _) = run(tpc, threads, &[], false);
        let (m, seen) = run(tpc, threads, &[], true);
        for (p, c) in m.state().cores.iter().enumerate() {
            assert_eq!(
                seen[p],
                c.cnt.ops(),
                "core {p}, {threads} threads on {tpc} per core"
            );
            let q = &quiet.state().cores[p];
            assert_eq!(q.cnt.ps, c.cnt.ps, "watching changed the timing");
        }
    }
}

#[test]
fn unknown_op_in_the_preset_is_named() {
    let mut p = Preset::builtin("ideal").unwrap();
    p.cpu.op_extra_cycles.insert("fma".into(), 2);
    let e = p.validate().unwrap_err().to_string();
    assert!(
        e.contains("cpu.op_extra_cycles") && e.contains("`fma`") && e.contains("fp-fma"),
        "{e}"
    );
}

/// A few retirements of pseudo-random kinds (`step % 5` of them, from the generator state
/// `x`): default ops of each class, fine ops, sized loads and stores with and without ops of
/// their own, counted as the core counts them.
fn retire_some(c: &mut crate::cpu::Counters, x: &mut u64, step: u64) {
    for _ in 0..(step % 5) {
        *x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let x = *x;
        let n = x >> 60;
        let o = Op::ALL[(x >> 32) as usize % Op::COUNT];
        c.instr[o.class() as usize] += n;
        match o {
            Op::Load1 | Op::Load2 | Op::Load4 | Op::Load16 | Op::Load32 => {
                let size = match o {
                    Op::Load1 => 1,
                    Op::Load2 => 2,
                    Op::Load4 => 4,
                    Op::Load16 => 16,
                    _ => 32,
                };
                c.by_size[0][size] += n;
            }
            Op::Store1 | Op::Store2 | Op::Store4 | Op::Store16 | Op::Store32 => {
                let size = match o {
                    Op::Store1 => 1,
                    Op::Store2 => 2,
                    Op::Store4 => 4,
                    Op::Store16 => 16,
                    _ => 32,
                };
                c.by_size[1][size] += n;
            }
            // A load or store of a size without an op of its own is the default.
            Op::Load8 => c.by_size[0][8 + (x >> 8) as usize % 2 * 4] += n,
            Op::Store8 => c.by_size[1][8] += n,
            _ if !o.is_default() => c.xops[o as usize] += n,
            _ => {}
        }
    }
}

/// `Counters::ops_since` (what a `Retire` report costs) equals `ops()` now less `ops()` at
/// the mark, after every kind of retirement: default ops of each class, fine ops, sized loads
/// and stores with and without ops of their own.
#[test]
fn ops_since_a_mark_is_the_difference_of_ops() {
    use crate::cpu::Counters;
    let mut c = Counters::default();
    let mut m = c.retire_mark(0);
    let mut prev = c.ops();
    let mut x = 12345u64;
    for step in 1..400u64 {
        retire_some(&mut c, &mut x, step);
        let now = c.ops();
        let moved = c.ops_since(&mut m, !0, step);
        for o in Op::ALL {
            let want = now[o as usize] - prev[o as usize];
            assert_eq!(moved >> o as usize & 1 == 1, want > 0, "{o:?} step {step}");
            if want > 0 {
                assert_eq!(m.delta[o as usize], want, "{o:?} step {step}");
            }
        }
        assert_eq!((m.t, m.instr), (step, c.instr));
        prev = now;
    }
}

/// `Counters::add_since` (a report a probe's sink takes, `retire_sink`) sums what
/// `ops_since` splits: with reports alternating between the two on one mark, the
/// `ops_since` deltas plus the sums split by `RetireSum::take_ops` whenever taken give
/// `ops()` now less `ops()` at the start, op by op; and a sum built op by op
/// (`RetireSum::add_op`, the probe summing a span itself) splits back into those ops.
#[test]
fn add_since_sums_what_ops_since_splits() {
    use crate::cpu::{Counters, RetireSum};
    // Adds the counts of the ops in `moved` (each non-zero) to `got`.
    let add = |got: &mut [u64; Op::COUNT], moved: u64, v: &[u64; Op::COUNT]| {
        for (o, g) in got.iter_mut().enumerate() {
            if moved >> o & 1 == 1 {
                assert!(v[o] > 0, "a moved op has a count");
                *g += v[o];
            }
        }
    };
    let mut c = Counters::default();
    let mut m = c.retire_mark(0);
    let mut sum = RetireSum::default();
    let mut got = [0u64; Op::COUNT];
    let mut split = [0u64; Op::COUNT];
    let mut x = 777u64;
    let mut sums = 0;
    for step in 1..600u64 {
        retire_some(&mut c, &mut x, step);
        if (x >> 20).is_multiple_of(3) {
            let moved = c.ops_since(&mut m, !0, step);
            add(&mut got, moved, &m.delta);
        } else {
            c.add_since(&mut m, !0, step, &mut sum);
            sums += 1;
        }
        assert_eq!((m.t, m.instr), (step, c.instr));
        if (x >> 24).is_multiple_of(7) {
            let moved = sum.take_ops(&mut split);
            add(&mut got, moved, &split);
            assert_eq!(sum, RetireSum::default(), "taking a sum empties it");
        }
    }
    let moved = sum.take_ops(&mut split);
    add(&mut got, moved, &split);
    assert!(sums > 300, "{sums}");
    assert_eq!(got, c.ops());
    assert!(c.ops().iter().all(|&n| n > 0), "every op retired");

    let mut s = RetireSum::default();
    for (k, o) in Op::ALL.into_iter().enumerate() {
        s.add_op(o, k as u64 + 1);
    }
    let moved = s.take_ops(&mut split);
    assert_eq!(moved, (1u64 << Op::COUNT) - 1);
    for (k, o) in Op::ALL.into_iter().enumerate() {
        assert_eq!(split[o as usize], k as u64 + 1, "{o:?}");
    }
}
