//! The `bgq` preset's timing against the hand computations in `presets/bgq.toml`, its
//! write-through store path, and its L1P (issue 14 items 1 and 4).

use crate::addr::Place;
use crate::config::Preset;
use crate::probe::{kind, Cmd, L1pEvent, L2Event, Observation, Probe, Signals};
use crate::sim::{Machine, Options};
use engine::Tick;
use std::cell::RefCell;
use std::rc::Rc;

fn bgq() -> Preset {
    Preset::builtin("bgq").unwrap()
}

/// Records the observations of the kinds it asks for.
struct Rec(Rc<RefCell<Vec<Observation>>>, u32);

impl Probe for Rec {
    fn observe(&mut self, o: &Observation, _sig: &mut Signals) {
        self.0.borrow_mut().push(*o);
    }
    fn interest(&self) -> u32 {
        self.1
    }
    fn name(&self) -> &str {
        "rec"
    }
}

fn cpu_ticks(p: &Preset) -> Tick {
    p.clocks_built().unwrap().get("cpu").unwrap().period
}

/// The preset as written: 17 cores, the 17th the system's; `--procs 16` is the same machine;
/// 64 threads fill cores 0 to 15 with four each and leave core 16 idle.
#[test]
fn the_seventeenth_core_is_the_systems() {
    let p = bgq();
    assert_eq!((p.procs, p.program_procs()), (17, 16));
    let q = bgq().with_procs(16).unwrap();
    assert_eq!((q.procs, q.program_procs()), (17, 16));
    let mut m = Machine::new(p, Options::default()).unwrap();
    let a = m.setup().alloc("x", 4096, Place::Default);
    for t in 0..64 {
        m.spawn(t, move |ctx| {
            assert_ne!(ctx.proc(), 16, "thread {t} on the system's core");
            ctx.load(a + 64 * (t as u64 % 64));
            ctx.int(10);
        });
    }
    m.run(Some(10_000_000)).unwrap();
    let st = m.state();
    assert_eq!(st.cores[16].cnt.instructions(), 0);
    assert!(st.cores[..16].iter().all(|c| c.cnt.instructions() > 0));
}

/// Uncontended L1 D load misses: core 1 reads a line (the slice misses: memory), then core 2
/// reads it (the slice hits). The preset's hand computation: 82 and 350 processor cycles.
#[test]
fn uncontended_l1_miss_latency_is_the_presets_hand_computation() {
    let p = bgq();
    let cpu = cpu_ticks(&p);
    let mut m = Machine::new(p, Options::default()).unwrap();
    let a = m.setup().alloc("x", 4096, Place::Default);
    let seen = Rc::new(RefCell::new(Vec::new()));
    m.attach(Box::new(Rec(seen.clone(), kind::TX_DONE)));
    for (i, r) in [1usize, 2].into_iter().enumerate() {
        m.spawn(r, move |ctx| {
            ctx.int(20_000 * i as u64 + 1);
            ctx.load_value(a);
        });
    }
    m.run(Some(1_000_000)).unwrap();
    let lat: Vec<(u16, Tick)> = seen
        .borrow()
        .iter()
        .filter_map(|o| match *o {
            Observation::TxDone {
                proc,
                t,
                issued,
                cmd: Cmd::Read,
                addr,
                ..
            } if addr == a => Some((proc, (t - issued) / cpu)),
            _ => None,
        })
        .collect();
    assert_eq!(lat, vec![(1, 350), (2, 82)]);
}

/// The write-through store path (docs/bgq.md): a plain store issues no transaction and
/// allocates nothing on a miss, costs the core its one cycle, reaches its slice 20 cycles
/// later (crossbar traversal 8 + 2 flits, x2 cycles), where it is a store-through miss that
/// allocates a partial line, and invalidates another core's read-only copy. A store to a line
/// the core holds read-only updates it in place (an L1 hit, no upgrade).
#[test]
fn a_write_through_store_posts_to_its_slice_and_invalidates_the_copies() {
    let p = bgq();
    let cpu = cpu_ticks(&p);
    let mut m = Machine::new(p, Options::default()).unwrap();
    let a = m.setup().alloc("x", 4096, Place::Default);
    let b = a + 1024;
    let c = a + 2048;
    let seen = Rc::new(RefCell::new(Vec::new()));
    m.attach(Box::new(Rec(
        seen.clone(),
        kind::L2_SLICE | kind::TX_ISSUE | kind::CORE_EVENT,
    )));
    let stored_at = Rc::new(RefCell::new((0, 0)));
    let s2 = stored_at.clone();
    m.spawn(1, move |ctx| {
        ctx.code_from_trace();
        ctx.load(b); // b read-only in core 1's L1 D
        ctx.int(5_000);
        let t0 = ctx.cycles();
        ctx.store(a); // a miss: no allocation, no transaction
        let t1 = ctx.cycles();
        ctx.store(b); // a hit on a read-only line
        ctx.store(c); // a miss, on a line no cache has
        *s2.borrow_mut() = (t0, t1 - t0);
        ctx.int(5_000);
        ctx.load(a); // still not in the L1 D
    });
    m.spawn(2, move |ctx| {
        ctx.code_from_trace();
        ctx.load(a);
        ctx.int(20_000);
        ctx.load(a); // invalidated by core 1's store: a miss again
    });
    m.run(Some(1_000_000)).unwrap();
    let (t0, cost) = *stored_at.borrow();
    assert_eq!(cost, 1, "a posted store costs its one cycle");
    let st = m.state();
    let c1 = &st.cores[1].cnt;
    // Core 1: loads of b and a missed; the stores to a and c missed, the one to b hit.
    assert_eq!((c1.l1d_misses, c1.l1d_hits), (4, 1));
    assert_eq!(st.cores[2].cnt.l1d_misses, 2);
    let obs = seen.borrow();
    // Core 1 issued only its two reads: no read-exclusive, no upgrade.
    let tx: Vec<Cmd> = obs
        .iter()
        .filter_map(|o| match *o {
            Observation::TxIssue { proc: 1, cmd, .. } => Some(cmd),
            _ => None,
        })
        .collect();
    assert_eq!(tx, vec![Cmd::Read, Cmd::Read]);
    let stores: Vec<(Tick, L2Event)> = obs
        .iter()
        .filter_map(|o| match *o {
            Observation::L2Slice { t, event, .. }
                if matches!(event, L2Event::StoreThrough | L2Event::StoreThroughMiss) =>
            {
                Some((t / cpu, event))
            }
            _ => None,
        })
        .collect();
    // The store to a retired at t0 + 1 and reached its slice 20 cycles later (a's line is
    // there: core 2 read it); the store queue sends one store per 4 cycles, so b's and c's
    // arrive 4 and 8 cycles after; c's line was never fetched: a miss.
    assert_eq!(
        stores,
        vec![
            (t0 + 21, L2Event::StoreThrough),
            (t0 + 25, L2Event::StoreThrough),
            (t0 + 29, L2Event::StoreThrough),
            (t0 + 29, L2Event::StoreThroughMiss),
        ]
    );
    let invalidations = obs
        .iter()
        .filter(|o| {
            matches!(
                o,
                Observation::L2Slice {
                    event: L2Event::InvalidateSent,
                    ..
                }
            )
        })
        .count();
    assert_eq!(invalidations, 1);
    let back_inval = st.truth.as_ref().unwrap().core_events[2 * 4]
        [crate::probe::CoreEvent::BackInvalidateHit as usize];
    assert_eq!(back_inval, 1);
}

/// The store queue: back-to-back stores by one thread (no instruction fetch) retire one per
/// cycle until 16 wait in the queue, which drains one per 4 cycles (2 flits of the x2-clock
/// port); the core then waits for each entry. Checked against the queue's arithmetic done
/// here: store k is taken at a_k = max(a_(k-1) + 1, l_(k-16)) and leaves at
/// l_k = max(a_k, l_(k-1)) + 4.
#[test]
fn the_store_queue_stalls_the_core_when_full() {
    let p = bgq();
    let mut m = Machine::new(p, Options::default()).unwrap();
    let n = 64u64;
    let a = m.setup().alloc("x", 64 * n, Place::Default);
    let got = Rc::new(RefCell::new(0));
    let g = got.clone();
    m.spawn(0, move |ctx| {
        ctx.code_from_trace();
        let t0 = ctx.cycles();
        for k in 0..n {
            ctx.store(a + 64 * k);
        }
        *g.borrow_mut() = ctx.cycles() - t0;
    });
    m.run(Some(1_000_000)).unwrap();
    let (mut acc, mut left) = (Vec::new(), Vec::<u64>::new());
    let mut t = 0u64;
    for k in 0..n as usize {
        let a_k = if k >= 16 { t.max(left[k - 16]) } else { t };
        let l_k = a_k.max(left.last().copied().unwrap_or(0)) + 4;
        acc.push(a_k);
        left.push(l_k);
        t = a_k + 1;
    }
    assert_eq!(*got.borrow(), t);
    // The waits are the core's other-stall cycles; without the queue's limit the stores would
    // take one cycle each.
    let stall = m.state().cores[0].cnt.ps[crate::cpu::pipeline::Ps::OtherStall as usize];
    assert_eq!(stall, t - n);
    assert!(t > 3 * n, "{t}");
}

/// The L1P: one thread reads a long array line by line, 400 cycles apart; after the second
/// miss the stream is established and the L1P asks for the next lines, whose data is in the
/// slices when the demands come (L1P hits: two lines ahead is more than the 350 cycles of a
/// memory read); a demand that finds its line being
/// prefetched waits for that read instead of reading memory again, so memory reads = L2
/// lines, not more. The observations equal the ground truth.
#[test]
fn the_l1p_follows_a_stream() {
    let p = bgq();
    let mut m = Machine::new(p, Options::default()).unwrap();
    let lines = 512u64;
    let a = m.setup().alloc("x", 128 * lines, Place::Default);
    let seen = Rc::new(RefCell::new(Vec::new()));
    m.attach(Box::new(Rec(seen.clone(), kind::L1P)));
    m.spawn(0, move |ctx| {
        ctx.code_from_trace();
        for k in 0..lines {
            ctx.load(a + 128 * k);
            ctx.int(400);
        }
    });
    m.run(Some(10_000_000)).unwrap();
    let gt = m.state().truth.as_ref().unwrap();
    let e = gt.l1p_events[0];
    let mut counted = [0u64; L1pEvent::COUNT];
    for o in seen.borrow().iter() {
        if let Observation::L1p { who, event, .. } = *o {
            assert_eq!(who.core, 0);
            counted[event as usize] += 1;
        }
    }
    assert_eq!(counted, e);
    use L1pEvent as E;
    assert_eq!(e[E::Load as usize], lines);
    assert_eq!(
        e[E::Hit as usize] + e[E::Pf2dfc as usize] + e[E::Miss as usize],
        lines
    );
    assert_eq!(e[E::StreamEstablished as usize], 1);
    // The first two lines miss; every later one was asked for (depth 2).
    assert_eq!(e[E::Miss as usize], 2);
    assert_eq!(e[E::StreamLineEstablished as usize], lines);
    assert_eq!(e[E::Hit as usize], lines - 2, "{e:?}");
    let memory_reads: u64 = gt
        .slices
        .iter()
        .map(|s| s.memory_reads + s.prefetches)
        .sum();
    assert_eq!(
        memory_reads,
        lines + 2,
        "each line read from memory once (+2 asked beyond)"
    );
}

/// The XU and AXU opcode groups (`bgq::inst`) from the core's fine instruction classes: four
/// hardware threads of core 3 retire a known mix; the `Retire` observations summed by group
/// (`InstGroup::of`) per hardware thread equal the hand count, and per core they equal
/// `InstGroup::counts` of the core's exact `Counters::ops`.
#[test]
fn opcode_groups_from_retire_match_the_exact_counts() {
    use crate::bgq::inst::{Decoder, InstGroup, AXU_ALL, XU_ALL};
    use crate::cpu::op::Op;
    let mut m = Machine::new(bgq(), Options::default()).unwrap();
    let a = m.setup().alloc("x", 4096, Place::Default);
    let seen = Rc::new(RefCell::new(Vec::new()));
    m.attach(Box::new(Rec(seen.clone(), kind::RETIRE)));
    // Threads 3, 19, 35, 51: core 3, contexts 0 to 3 (thread t on core t mod 16).
    for k in 0..4u64 {
        m.spawn(3 + 16 * k as usize, move |ctx| {
            assert_eq!(ctx.proc(), 3);
            ctx.int(10 + k); // IADD
            ctx.op(Op::IntMul, 3); // IMUL
            ctx.op(Op::IntShift, 4); // BITS
            ctx.op(Op::Nop, 1 + k); // ILOG
            ctx.op(Op::Larx, 2); // LSCX
            ctx.op(Op::Stcx, 2); // LSCX
            ctx.load(a + 64 * k); // LD (an 8-byte load)
            ctx.load_n(a + 64 * k + 8, 32); // QLD
            ctx.store_n(a + 64 * k, 4); // ST
            ctx.store_n(a + 64 * k, 32); // QST
            ctx.fp(5); // FOTH
            ctx.op(Op::FpFma, 6); // FMA
            ctx.op(Op::FpDiv, 1); // FDIV
            ctx.op(Op::QpFma, 7 + k); // QMA
            ctx.op(Op::QpDiv, 1); // QOTH
            ctx.branch(true); // BRC
            ctx.branch(false); // BRC
            ctx.op(Op::BrIndirect, 1); // BRU
        });
    }
    m.run(Some(10_000_000)).unwrap();
    let mut by_ctx = [[0u64; InstGroup::COUNT]; 4];
    for o in seen.borrow().iter() {
        if let Observation::Retire {
            proc, op, n, who, ..
        } = *o
        {
            assert_eq!((proc, who.core), (3, 3));
            by_ctx[who.context as usize][InstGroup::of(op) as usize] += n;
        }
    }
    use InstGroup as G;
    for (k, g) in by_ctx.iter().enumerate() {
        let k = k as u64;
        let want = [
            (G::XuIadd, 10 + k),
            (G::XuImul, 3),
            (G::XuBits, 4),
            (G::XuIlog, 1 + k),
            (G::XuLscx, 4),
            (G::XuLd, 1),
            (G::XuQld, 1),
            (G::XuSt, 1),
            (G::XuQst, 1),
            (G::QfpuFoth, 5),
            (G::QfpuFma, 6),
            (G::QfpuFdiv, 1),
            (G::QfpuQma, 7 + k),
            (G::QfpuQoth, 1),
            (G::XuBrc, 2),
            (G::XuBru, 1),
        ];
        let mut expect = [0u64; InstGroup::COUNT];
        for (grp, n) in want {
            expect[grp as usize] = n;
        }
        assert_eq!(*g, expect, "context {k}");
        assert_eq!(InstGroup::masked(g, Decoder::Axu, AXU_ALL), 20 + k);
        assert_eq!(InstGroup::masked(g, Decoder::Xu, XU_ALL), 29 + 2 * k);
    }
    let core = InstGroup::counts(&m.state().cores[3].cnt.ops());
    let mut sum = [0u64; InstGroup::COUNT];
    for g in &by_ctx {
        for (s, n) in sum.iter_mut().zip(g) {
            *s += n;
        }
    }
    assert_eq!(core, sum);
}

/// The two clocks (seed 001: the core "outputs 2 events per operating cycle of the
/// performance counters"): the core clock x1 at 1.6 GHz and the x2 clock at half its rate,
/// one x2 cycle = 2 core cycles. A probe waking every x2 cycle (`ProbeClock { num: 2, den: 1
/// }`, how the UPC monitor steps its counter units) wakes floor(T / x2 period) times at
/// the x2 clock's edges during a 16-thread run, which it does not change.
#[test]
fn the_x1_and_x2_clocks() {
    use crate::probe::ProbeClock;
    let p = bgq();
    let clocks = p.clocks_built().unwrap();
    let (x1, x2) = (
        clocks.get("cpu").unwrap().clone(),
        clocks.get("system").unwrap().clone(),
    );
    assert_eq!((x1.hz, x2.hz), (1_600_000_000, 800_000_000));
    assert_eq!(x2.period, 2 * x1.period);
    struct Wake(Rc<RefCell<Vec<(u64, Tick)>>>);
    impl Probe for Wake {
        fn observe(&mut self, _: &Observation, _: &mut Signals) {}
        fn interest(&self) -> u32 {
            0
        }
        fn name(&self) -> &str {
            "x2"
        }
        fn wakes(&self) -> Option<(ProbeClock, u64)> {
            Some((
                ProbeClock {
                    name: "x2",
                    num: 2,
                    den: 1,
                },
                1,
            ))
        }
        fn wake(&mut self, cycle: u64, t: Tick, _: &mut Signals) -> Option<u64> {
            self.0.borrow_mut().push((cycle, t));
            Some(cycle + 1)
        }
    }
    let run = |probe: bool| {
        let mut m = Machine::new(bgq(), Options::default()).unwrap();
        let a = m.setup().alloc("x", 1 << 16, Place::Default);
        let seen = Rc::new(RefCell::new(Vec::new()));
        if probe {
            m.attach(Box::new(Wake(seen.clone())));
        }
        for t in 0..16 {
            m.spawn(t, move |ctx| {
                for k in 0..32u64 {
                    ctx.load(a + 4096 * (t as u64 % 16) + 128 * k);
                    ctx.int(7);
                }
            });
        }
        let s = m.run(Some(100_000_000)).unwrap();
        let v = seen.borrow().clone();
        (m, s.ticks, v)
    };
    let (base, base_ticks, _) = run(false);
    let (m, ticks, seen) = run(true);
    assert_eq!(ticks, base_ticks);
    assert_eq!(seen.len() as u64, ticks / x2.period);
    for (k, &(cycle, t)) in seen.iter().enumerate() {
        assert_eq!((cycle, t), (k as u64 + 1, (k as u64 + 1) * x2.period));
    }
    for (a, b) in m.state().cores.iter().zip(&base.state().cores) {
        assert_eq!(a.cnt.ps, b.cnt.ps);
    }
}

/// The protocol tester on `bgq`. Its atomics are lwarx/stwcx. loops whose successful stwcx.
/// also writes through to the slice; when that store reaches the slice after the core lost
/// the line, the slice invalidates the other read-only copies without acknowledgements
/// (`SysMsg::PostedInvalidate`). These were sent as the fault injector's late invalidation
/// (`Invalidate { ack: false }`), which a core ignores while it has a request in flight for
/// the line: the copy stayed, the slice had taken the core off the sharers, and a later
/// owner met it (seeds 2 and 5: 7 and 2 single-writer violations; 3 of 20 seeds failed).
#[test]
fn posted_invalidations_remove_the_copy_whatever_is_in_flight() {
    use crate::fault::Fault;
    use crate::tester::{run, TesterConfig};
    for seed in [2, 5, 16] {
        let r = run(
            bgq(),
            &TesterConfig {
                ops: 50_000,
                seed,
                lines: 8,
                fault: Fault::None,
            },
        )
        .unwrap();
        assert_eq!(r.violations, 0, "seed {seed}: {:?}", r.first_violation);
        assert!(r.invalidations > 0, "seed {seed}: {r:?}");
    }
}
