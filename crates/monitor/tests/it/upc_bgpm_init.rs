//! BGPM's modes for a simulated program's event sets (`monitor::upc::bgpm::Bgpm`,
//! `Bgpm_Init(mode)`; docs/upc.md, "BGPM modes in a program"): the low-latency mode's 14-bit
//! local counters off the chain, the hardware-distributed mode's one start for every unit, and
//! the driver's named errors for conflicting choices.

use super::{contains_each, err};
use machine::cpu::op::Op;
use machine::{Machine, Options, Preset};
use monitor::upc::bgpm::Bgpm;
use monitor::upc::bgpm_mode::BgpmMode;
use monitor::upc::config::Config;
use monitor::upc::probe::Upc;
use std::cell::RefCell;
use std::rc::Rc;

/// A `bgq` machine of 2 program cores with the UPC attached and every counter left to the
/// program (the chain started at cycle 0, as the monitor does).
fn machine() -> (Machine, Rc<RefCell<Upc>>) {
    let preset = Preset::builtin("bgq").unwrap().with_procs(2).unwrap();
    let mut m = Machine::new(preset, Options::default()).unwrap();
    let cfg = Config {
        p: vec![Default::default(); 24],
        l2: vec![Default::default(); 16],
        ..Config::default()
    };
    let upc = monitor::upc::attach(&mut m, &cfg).unwrap();
    (m, upc)
}

type Log = Rc<RefCell<Vec<String>>>;

/// The driver's checks, by name: a second `Bgpm_Init` on a thread (`BGPM_EINITED`), a mode
/// other than the node's (`BGPM_ECONF_MODE`, naming the thread that chose it), an event set
/// before `Bgpm_Init` (`BGPM_ENOT_INIT`), overflow and multiplexing outside the
/// software-distributed mode (`BGPM_EINV_OP`).
#[test]
fn conflicting_bgpm_choices_get_the_drivers_errors() {
    let (mut m, _upc) = machine();
    let log: Log = Default::default();
    let node = Bgpm::new();
    let hw = Bgpm::new();
    let b = m.setup().barrier("b", 2);
    for t in 0..2 {
        let (log, node, hw) = (log.clone(), node.clone(), hw.clone());
        m.spawn(t, move |ctx| {
            let mut l = log.borrow_mut();
            if t == 0 {
                l.push(err(node.create_event_set(ctx)));
                l.push(err(node.init(ctx, BgpmMode::SwDistrib)));
                l.push(err(node.init(ctx, BgpmMode::SwDistrib)));
                l.push(err(hw.init(ctx, BgpmMode::HwDistrib)));
                let mut set = hw.create_event_set(ctx).unwrap();
                set.add("PEVT_CYCLES", 1).unwrap();
                l.push(err(set.set_overflow(0, 1000)));
                l.push(err(hw.create_mux(ctx, 10_000)));
                l.push(err(node.create_mux(ctx, 10_000)));
            }
            drop(l);
            ctx.barrier(b);
            if t == 1 {
                let mut l = log.borrow_mut();
                l.push(err(node.init(ctx, BgpmMode::LlDistrib)));
                l.push(err(node.init(ctx, BgpmMode::SwDistrib)));
            }
        });
    }
    m.run(None).unwrap();
    let l = log.borrow();
    let want = [
        "Bgpm_CreateEventSet on thread 0: BGPM_ENOT_INIT: not init yet",
        "ok",
        "Bgpm_Init(BGPM_MODE_SWDISTRIB) on thread 0: BGPM_EINITED: bgpm is already initialized on this thread",
        "ok",
        "Bgpm_SetOverflow: BGPM_EINV_OP: BGPM_MODE_HWDISTRIB supports no overflow",
        "Bgpm_SetMultiplex: BGPM_EINV_OP: BGPM_MODE_HWDISTRIB supports no multiplexing",
        "ok",
        "Bgpm_Init(BGPM_MODE_LLDISTRIB) on thread 1: BGPM_ECONF_MODE: init mode conflicts with another initialized thread mode on the node (thread 0 chose BGPM_MODE_SWDISTRIB",
        "ok",
    ];
    contains_each(&l, &want);
}

/// The low-latency mode: the thread's UPC_P leaves the chain, so its 14-bit counter is the
/// whole count. 5,000 multiplies read 5,000 with no wrap; after a reset, 20,000 read 20,000 -
/// 2^14 = 3,616 with the wrap bit set; UPC_C's SRAM counter saw none of them (no transfer),
/// while the counter's shadow count (the same observations in 64 bits) is 25,000, the
/// machine's count of the multiplies.
#[test]
fn low_latency_reads_the_14_bit_local_counter() {
    let (mut m, upc) = machine();
    let got: Rc<RefCell<Vec<(u64, bool)>>> = Default::default();
    let out = got.clone();
    let node = Bgpm::new();
    m.spawn(0, move |ctx| {
        node.init(ctx, BgpmMode::LlDistrib).unwrap();
        let mut set = node.create_event_set(ctx).unwrap();
        set.add("PEVT_INST_XU_IMUL", 0xf).unwrap();
        set.apply(ctx);
        for n in [5_000, 20_000] {
            set.reset(ctx);
            set.start(ctx);
            ctx.op(Op::IntMul, n);
            set.stop(ctx);
            let r = set.read_ll(ctx, 0);
            assert_eq!(set.read(ctx, 0), r.0);
            out.borrow_mut().push(r);
        }
    });
    m.run(None).unwrap();
    assert_eq!(
        *got.borrow(),
        vec![(5_000, false), (20_000 - (1 << 14), true)]
    );
    let u = upc.borrow();
    let c = &u.units[0].counters[0];
    assert!(c.discon && c.cfg.sync_override);
    assert_eq!((c.transfers, u.counted(c.sram)), (0, 0));
    assert_eq!(c.exact, 25_000);
    assert_eq!(m.state().cores[0].cnt.ops()[Op::IntMul as usize], 25_000);
}

/// The hardware-distributed mode: a thread on each of 2 cores applies its set (PEVT_CYCLES
/// and its multiplies), thread 0 alone starts and stops them with UPC_C's run bit; both
/// cores' counters count their first cycle on the same tick, `units` x2 cycles after the
/// start was written, and both read the same cycles, the chain's start to its stop exactly;
/// each reads its own multiplies exactly.
#[test]
fn hardware_distributed_one_start_for_every_unit() {
    let (mut m, upc) = machine();
    let got: Rc<RefCell<Vec<(usize, u64, u64)>>> = Default::default();
    let node = Bgpm::new();
    let b = m.setup().barrier("b", 2);
    for t in 0..2 {
        let (out, node) = (got.clone(), node.clone());
        m.spawn(t, move |ctx| {
            node.init(ctx, BgpmMode::HwDistrib).unwrap();
            let mut set = node.create_event_set(ctx).unwrap();
            set.add("PEVT_CYCLES", 0xf).unwrap();
            set.add("PEVT_INST_XU_IMUL", 0xf).unwrap();
            set.apply(ctx);
            set.reset(ctx);
            ctx.barrier(b);
            if t == 0 {
                set.start(ctx);
            }
            ctx.barrier(b);
            ctx.idle(200);
            ctx.op(Op::IntMul, 3_000 + 1_000 * t as u64);
            ctx.barrier(b);
            if t == 0 {
                set.stop(ctx);
            }
            ctx.barrier(b);
            ctx.idle(200);
            let (c, n) = (set.read(ctx, 0), set.read(ctx, 1));
            out.borrow_mut().push((t, c, n));
        });
    }
    m.run(None).unwrap();
    let u = upc.borrow();
    let x2 = u.chain.x2;
    let cp = u.cp;
    // The monitor's own start at 0, then the program's stop (apply), start and stop.
    let cmds = &u.c.commands;
    let start = cmds.iter().rev().find(|c| c.run).unwrap();
    let stop = cmds.last().unwrap();
    assert!(!stop.run && stop.written > start.written);
    assert_eq!(
        start.effective - start.written.div_ceil(x2) * x2,
        u.chain.units() as u64 * x2
    );
    let cycles = (stop.effective - start.effective) / cp;
    let mut got = got.borrow().clone();
    got.sort();
    assert_eq!(got, vec![(0, cycles, 3_000), (1, cycles, 4_000)]);
    let first: Vec<_> = (0..2).map(|k| u.units[k].counters[0].first).collect();
    assert_eq!(first[0], Some(start.effective));
    assert_eq!(first[0], first[1]);
    assert!(!u.units[0].counters[0].cfg.sync_override);
}

/// Multiplexing switched by the cycle counter's overflow interrupt, as BGPM does with a
/// period (`MuxSet::on_overflow`, `install`): 27 events in 2 groups of at most 23 (each group
/// gets a `PEVT_CYCLES` counter with a threshold of 100,000 cycles, whose interrupt handler
/// switches), and a program that never polls: a steady loop of 4 x 10^6 cycles on one `bgq`
/// core. The interrupt switched the groups about every 100,000 cycles, and the 8 checked
/// estimates (cycles, integer adds, FP, branches, each in both groups) are within 3 % of the
/// exact counts between start and stop, where the raw sums are 35-65 % of them.
#[test]
fn multiplexing_switched_by_the_cycle_counters_interrupt() {
    use monitor::upc::bgpm::MuxSet;
    let (mut m, _upc) = machine();
    type Out = Vec<(u64, u64, u64)>;
    let got: Rc<RefCell<(Out, u64)>> = Rc::default();
    let out = got.clone();
    m.spawn(0, move |ctx| {
        let set = Rc::new(RefCell::new(MuxSet::on_overflow(100_000, 1).unwrap()));
        let checked = [
            "PEVT_CYCLES",
            "PEVT_INST_XU_IADD",
            "PEVT_INST_QFPU_FOTH",
            "PEVT_INST_XU_BRC",
        ];
        let mut idx = Vec::new();
        {
            let mut s = set.borrow_mut();
            for n in checked {
                idx.push(s.add(n, 1).unwrap());
            }
            // 19 other events fill group 0 (23 with the checked ones).
            let others = monitor::upc::events::P_EVENTS
                .iter()
                .filter(|e| e.per_thread && !checked.contains(&e.name))
                .take(19);
            for e in others {
                s.add(e.name, 1).unwrap();
            }
            for n in checked {
                idx.push(s.add(n, 1).unwrap());
            }
            assert_eq!(s.groups(), 2);
        }
        let before = (ctx.cycles(), ctx.counters().ops());
        MuxSet::install(&set, ctx);
        while ctx.cycles() - before.0 < 4_000_000 {
            ctx.int(20);
            ctx.fp(4);
            ctx.branch(true);
        }
        set.borrow_mut().stop(ctx);
        let exact = crate::mux_loop_exact(ctx, before.0, &before.1);
        let s = set.borrow();
        let mut o = out.borrow_mut();
        for (j, &i) in idx.iter().enumerate() {
            o.0.push((s.estimate(i), s.raw(i).0, exact[j % 4]));
        }
        o.1 = s.switches;
    });
    m.run(None).unwrap();
    let (rows, switches) = got.borrow().clone();
    assert!((35..=40).contains(&switches), "{switches} switches");
    for &(est, raw, exact) in &rows {
        eprintln!("estimate {est} raw {raw} exact {exact}");
    }
    eprintln!("{switches} switches");
    for (est, raw, exact) in rows {
        let err = (est as f64 - exact as f64).abs() / exact as f64;
        assert!(err < 0.03, "estimate {est} exact {exact}");
        let share = raw as f64 / exact as f64;
        assert!((0.35..0.65).contains(&share), "raw {raw} of {exact}");
    }
}

/// The driver's per-thread counter rules (`monitor::upc::bgpm_ctrs`; `bgpm/docs/
/// DocCounterRules.h`): on core 0, hardware threads 0 and 1 hold a block of 6 counters each
/// (k, k+4, .., k+20), so thread 0's 7th event is `BGPM_ECTRRESERVED`; thread 2 takes 12
/// (its sibling 3's block too), so thread 3's first event is `BGPM_ETHD_CTRS_RSV`; on core
/// 1, a lone thread takes 24 events but not 25 (`BGPM_ECTRRESERVED`), and 9 LSU events
/// (`BGPM_ESIGRESERVED`: at most 8 signals a subunit). Threads 0 and 1 count at once on
/// their own counters (0 and 1 for their multiplies; 16 and 17 for their committed branches:
/// XU events on counters 16..23), each reading its own 3,000 / 5,000 multiplies.
#[test]
fn per_thread_counter_blocks_follow_the_driver() {
    let (mut m, upc) = machine();
    let log: Log = Default::default();
    let got: Rc<RefCell<Vec<(usize, u64)>>> = Default::default();
    let node = Bgpm::new();
    let b = m.setup().barrier("b", 8);
    for t in 0..8 {
        let (log, node, got) = (log.clone(), node.clone(), got.clone());
        m.spawn(t, move |ctx| {
            node.init(ctx, BgpmMode::SwDistrib).unwrap();
            // Software thread t runs on core t % 2, hardware thread t / 2.
            let k = t / 2;
            let mut set = node.create_event_set(ctx).unwrap();
            let mine = 1u8 << (k % 4);
            for step in 0..4 {
                if t % 2 == 0 && k == step {
                    let mut l = log.borrow_mut();
                    match k {
                        0 | 1 => {
                            set.add("PEVT_INST_XU_IMUL", mine).unwrap();
                            set.add("PEVT_XU_BR_COMMIT", mine).unwrap();
                            for _ in 0..(if k == 0 { 4 } else { 0 }) {
                                set.add("PEVT_INST_ALL", mine).unwrap();
                            }
                        }
                        2 => {
                            for _ in 0..12 {
                                set.add("PEVT_INST_ALL", mine).unwrap();
                            }
                        }
                        _ => l.push(err(set.add("PEVT_INST_ALL", mine))),
                    }
                }
                if t == 0 && step == 2 {
                    log.borrow_mut().push(err(set.add("PEVT_INST_ALL", mine)));
                }
                ctx.barrier(b);
            }
            if t == 1 {
                let mut l = log.borrow_mut();
                for _ in 0..24 {
                    set.add("PEVT_INST_ALL", 1).unwrap();
                }
                l.push(err(set.add("PEVT_INST_ALL", 1)));
                let mut lsu = node.create_event_set(ctx).unwrap();
                for _ in 0..8 {
                    lsu.add("PEVT_LSU_COMMIT_LD_MISSES", 1).unwrap();
                }
                l.push(err(lsu.add("PEVT_LSU_COMMIT_STS", 1)));
            }
            let counting = t == 0 || t == 2;
            if counting {
                set.apply(ctx);
                set.start(ctx);
            }
            ctx.barrier(b);
            if counting {
                ctx.op(Op::IntMul, 3_000 + 1_000 * t as u64);
            }
            ctx.barrier(b);
            if counting {
                set.stop(ctx);
                let r = (k, set.read(ctx, 0));
                got.borrow_mut().push(r);
            }
        });
    }
    m.run(None).unwrap();
    let l = log.borrow();
    let want = [
        "Bgpm_AddEvent: PEVT_INST_ALL (event 7 of hardware thread 0's set on core 0): BGPM_ECTRRESERVED: Counter Reserved (possibles for event are all used): hardware thread 0 needs 12 counters, and thread 1 counts on counters 1, 5, 9, 13, 17, 21",
        "Bgpm_AddEvent: PEVT_INST_ALL (event 1 of hardware thread 3's set on core 0): BGPM_ETHD_CTRS_RSV: Core base pm counters normally used by this hwthread are already reserved by a different hwthread (hardware thread 2 holds thread 3's counters 3, 7, 11, 15, 19, 23)",
        "(event 25 of hardware thread 0's set on core 1): BGPM_ECTRRESERVED: Counter Reserved (possibles for event are all used): a core has 24 counters",
        "Bgpm_AddEvent: PEVT_LSU_COMMIT_STS (event 9 of hardware thread 0's set on core 1): BGPM_ESIGRESERVED: A2 Signals Reserved",
    ];
    contains_each(&l, &want);
    let mut got = got.borrow().clone();
    got.sort();
    assert_eq!(got, vec![(0, 3_000), (1, 5_000)]);
    let u = upc.borrow();
    let cfg = |i: usize| u.units[0].counters[i].cfg;
    for (k, ctr) in [(0, 0), (1, 1), (0, 16), (1, 17)] {
        assert_eq!(cfg(ctr).threads, 1 << k, "counter {ctr}");
    }
    assert_eq!(cfg(16).event, monitor::upc::events::a2::BR_COMMIT);
    assert_eq!(cfg(17).event, monitor::upc::events::a2::BR_COMMIT);
}

/// Per-thread start and stop (the driver's `Upci_Punit_Start_Indep`: `Bgpm_Start` writes the
/// set's counters to the UPC_P's `control_w1s`, `Bgpm_Stop` to `control_w1c`): hardware
/// threads 0 and 1 of core 0 each count their own multiplies, starting and stopping at
/// different times. Thread 0 counts phases 1 and 2 (1,000 + 3,000), thread 1 phases 2 and 3
/// (4,000 + 600): neither's start or stop moves the other's counter. With one run bit for the
/// whole UPC_P, thread 1's counter ran from thread 0's start and stopped at its stop (2,000 +
/// 4,000), and thread 0's stop ended both.
#[test]
fn each_threads_start_and_stop_reach_its_own_counters() {
    let (mut m, upc) = machine();
    let got: Rc<RefCell<Vec<(usize, u64)>>> = Default::default();
    let node = Bgpm::new();
    let b = m.setup().barrier("b", 2);
    // Software threads 0 and 2: core 0, hardware threads 0 and 1.
    for t in [0, 2] {
        let (node, got) = (node.clone(), got.clone());
        m.spawn(t, move |ctx| {
            let k = t / 2;
            node.init(ctx, BgpmMode::SwDistrib).unwrap();
            let mut set = node.create_event_set(ctx).unwrap();
            set.add("PEVT_INST_XU_IMUL", 1 << k).unwrap();
            set.apply(ctx);
            // (start, multiplies, stop) of phases 1 to 3, per thread.
            let phases: [(bool, u64, bool); 3] = if k == 0 {
                [
                    (true, 1_000, false),
                    (false, 3_000, true),
                    (false, 500, false),
                ]
            } else {
                [
                    (false, 2_000, false),
                    (true, 4_000, false),
                    (false, 600, true),
                ]
            };
            for (start, n, stop) in phases {
                if start {
                    set.start(ctx);
                }
                ctx.barrier(b);
                ctx.op(Op::IntMul, n);
                ctx.barrier(b);
                if stop {
                    set.stop(ctx);
                }
                ctx.barrier(b);
            }
            let r = (k, set.read(ctx, 0));
            got.borrow_mut().push(r);
        });
    }
    m.run(None).unwrap();
    let mut got = got.borrow().clone();
    got.sort();
    assert_eq!(got, vec![(0, 4_000), (1, 4_600)]);
    let u = upc.borrow();
    // Each counter's shadow count (the same observations in 64 bits, gated by its run bit).
    assert_eq!(u.units[0].counters[0].exact, 4_000);
    assert_eq!(u.units[0].counters[1].exact, 4_600);
    assert_eq!(m.state().cores[0].cnt.ops()[Op::IntMul as usize], 11_100);
}
