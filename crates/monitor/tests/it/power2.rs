//! The POWER2 monitor driven by the kernels on the `power2` preset, every counter compared with
//! the machine's ground truth (`Sig::exact` of the core's own counters).

use machine::{Ctx, Machine, Options, Preset};
use monitor::plugin::Shared;
use monitor::power2::events::{counter_of, Sig, Unit, COUNTERS, TABLE};
use monitor::power2::regs::{self, Imr, Mmcr};
use monitor::power2::{Power2Monitor, Setup};
use std::cell::RefCell;
use std::rc::Rc;
use workload::Size;

fn preset(procs: usize) -> Preset {
    let mut p = Preset::builtin("power2")
        .unwrap()
        .with_procs(procs)
        .unwrap();
    // TLB reloads too, so that the TLB events count something.
    p.cpu.tlb.enabled = true;
    p
}

/// Runs kernel `name` at test size with the monitor set up as `s`; returns the machine and
/// the monitor.
fn run(name: &str, procs: usize, s: Setup) -> (Machine, Rc<RefCell<Power2Monitor>>) {
    let p = preset(procs);
    let (probe, h) = Shared::new(Power2Monitor::new(&p, s).unwrap());
    let mut m = Machine::new(p, Options::default()).unwrap();
    m.attach(Box::new(probe));
    let w = workload::find(name, Size::Test).unwrap();
    let w = workload::install(w, &mut m, None).unwrap();
    m.run(None).unwrap();
    assert!(w.verify().verified, "{name}");
    (m, h)
}

fn all_groups(g: u8) -> Mmcr {
    Unit::ALL
        .into_iter()
        .fold(Mmcr(0), |m, u| m.with_group(u, g))
}

/// Every event of groups 0-3 of every unit equals its exact count, on every processor (two
/// processors of fft and radix: misses, TLB reloads, pipes, cycles by state).
#[test]
fn groups_0_to_3_equal_the_exact_counts() {
    for (kernel, g) in [("fft", 0u8), ("fft", 1), ("radix", 2), ("radix", 3)] {
        let (m, h) = run(
            kernel,
            2,
            Setup {
                mmcr: all_groups(g),
                imr: Imr::default(),
            },
        );
        let mon = h.borrow();
        for (p, pmu) in mon.pmus.iter().enumerate() {
            let c = &m.state().cores[p].cnt;
            let sigs = pmu.mmcr.signals();
            for (i, sg) in sigs.iter().enumerate() {
                let want = sg.exact(c).unwrap();
                let what =
                    counter_of(i).map_or("shared".into(), |(u, n)| format!("{} {n}", u.name()));
                assert_eq!(
                    pmu.value(i),
                    want,
                    "{kernel} group {g}, proc {p}, {what}: {}",
                    sg.name()
                );
            }
            // Something real was counted.
            assert!(pmu.value(0) > 10_000 && pmu.value(1) > 10_000);
        }
        // The table's signals for this group are the ones counted.
        assert_eq!(
            mon.pmus[0].mmcr.signals()[2..7],
            TABLE[Unit::Fpu as usize][g as usize]
        );
    }
}

/// User only + supervisor only = all, counter by counter (without an operating-system model
/// all the work is problem state: supervisor-only counts zero); marked-only counts nothing for
/// an unmarked program; a frozen monitor counts nothing.
#[test]
fn user_plus_supervisor_equals_all() {
    let base = all_groups(0);
    let count = |m: Mmcr| {
        let (_, h) = run(
            "lu",
            1,
            Setup {
                mmcr: m,
                imr: Imr::default(),
            },
        );
        let v: Vec<u64> = (0..COUNTERS).map(|i| h.borrow().pmus[0].value(i)).collect();
        v
    };
    let all = count(base);
    let user = count(Mmcr(base.0 | regs::NOSUP));
    let sup = count(Mmcr(base.0 | regs::NOPROB));
    for i in 0..COUNTERS {
        assert_eq!(user[i] + sup[i], all[i], "counter {i}");
    }
    assert!(all[0] > 100_000);
    assert_eq!(sup.iter().sum::<u64>(), 0);
    assert_eq!(count(Mmcr(base.0 | regs::MARKED)).iter().sum::<u64>(), 0);
    assert_eq!(count(Mmcr(base.0 | regs::FREEZE)).iter().sum::<u64>(), 0);
}

/// The IMR counts the instructions of the matched fine classes exactly (FXU group 4, counter
/// 3): an opcode alone, a mask pairing two opcodes (int-shift 4 with int-compare 5; the two
/// conditional branches), and mask 0 (everything), against `Counters::ops`.
#[test]
fn imr_counts_the_matched_classes() {
    use machine::cpu::op::Op;
    for (opcode, mask, least) in [
        (Op::Load8 as u8, 0xFF, 1),
        (Op::IntShift as u8, 0xFE, 2),
        (Op::BrCondTaken as u8, 0xFE, 2),
        (0, 0, Op::COUNT),
    ] {
        let s = Setup {
            mmcr: Mmcr(0).with_group(Unit::Fxu, 4),
            imr: Imr { opcode, mask },
        };
        assert!(monitor::power2::imr_matches(s.imr).len() >= least);
        let (m, h) = run("radix", 1, s);
        let ops = m.state().cores[0].cnt.ops();
        let want: u64 = (0..Op::COUNT)
            .filter(|&k| s.imr.matches(k as u8))
            .map(|k| ops[k])
            .sum();
        let i = monitor::power2::events::counter_index(Unit::Fxu, 3);
        assert_eq!(h.borrow().pmus[0].mmcr.signals()[i], Sig::IMR_MATCH);
        assert_eq!(
            h.borrow().pmus[0].value(i),
            want,
            "IMR {opcode:#x}/{mask:#x}"
        );
        assert!(want > 1000);
    }
}

/// A program measures its own region with the SPE bit: the SPE-cycles count follows the
/// region's length cycle for cycle (the difference of two regions' counts equals the difference
/// of their lengths as the program reads its clock), the fixed part being the programmed I/O
/// around the region.
#[test]
fn spe_bit_counts_the_cycles_of_a_region() {
    let p = preset(1);
    let uncached = p.cpu.uncached_cycles as u64 + p.cpu.inbound_cycles as u64;
    let s = Setup {
        mmcr: Mmcr(0).with_group(Unit::Fxu, 4),
        imr: Imr::default(),
    };
    let spe_ctr = monitor::power2::events::counter_index(Unit::Fxu, 2);
    let mut got = Vec::new();
    for work in [1_000u64, 7_000] {
        let (probe, h) = Shared::new(Power2Monitor::new(&p, s).unwrap());
        let mut m = Machine::new(p.clone(), Options::default()).unwrap();
        m.attach(Box::new(probe));
        let measured = Rc::new(RefCell::new((0u64, 0u32)));
        let out = measured.clone();
        m.spawn(0, move |ctx: &mut Ctx| {
            ctx.int(500);
            monitor::power2::set_spe(ctx, true);
            let c0 = ctx.cycles();
            ctx.int(work);
            ctx.fp(work / 2);
            let c1 = ctx.cycles();
            monitor::power2::set_spe(ctx, false);
            let v = monitor::power2::read_counter(ctx, spe_ctr);
            *out.borrow_mut() = (c1 - c0, v);
        });
        m.run(None).unwrap();
        let (len, read) = *measured.borrow();
        let counted = h.borrow().pmus[0].value(spe_ctr);
        assert_eq!(
            read as u64, counted,
            "the program reads what the monitor holds"
        );
        assert!(
            counted >= len && counted <= len + 2 * uncached,
            "{counted} vs {len}"
        );
        got.push((len, counted));
    }
    assert_eq!(got[1].1 - got[0].1, got[1].0 - got[0].0);
}

/// The MMCR and counters by programmed I/O: a program freezes the counters, reads PMC1, and the
/// value is what the monitor holds; each access costs the preset's uncached cycles.
#[test]
fn programmed_io_reads_and_writes_the_registers() {
    let p = preset(1);
    let (probe, h) = Shared::new(Power2Monitor::new(&p, Setup::default()).unwrap());
    let mut m = Machine::new(p.clone(), Options::default()).unwrap();
    m.attach(Box::new(probe));
    let seen = Rc::new(RefCell::new((0u32, 0u64, 0u64)));
    let out = seen.clone();
    m.spawn(0, move |ctx: &mut Ctx| {
        ctx.int(10_000);
        let n = ctx.counters().instructions();
        monitor::power2::write_mmcr(ctx, regs::FREEZE);
        let before = ctx.cycles();
        let v = monitor::power2::read_counter(ctx, 1);
        let cost = ctx.cycles() - before;
        ctx.int(10_000);
        *out.borrow_mut() = (v, cost, n);
    });
    m.run(None).unwrap();
    let (v, cost, n) = *seen.borrow();
    let mon = h.borrow();
    // Frozen at the MMCR store (which retires before it reaches the card): PMC1 stays there,
    // though 10,000 more instructions follow.
    assert_eq!(v as u64, mon.pmus[0].value(1));
    assert_eq!(v as u64, n + 1);
    assert!(n >= 10_000);
    assert!(m.state().cores[0].cnt.instructions() > n + 10_000);
    assert!(mon.pmus[0].reprogrammed);
    assert!(cost >= p.cpu.uncached_cycles as u64, "{cost}");
}

/// Process marking: three threads time-sliced on one processor, thread 1 marked (MSR[PM]):
/// with MARKED, every counter of groups 0-3 of every unit equals thread 1's exact count; the
/// unmarked threads' work is not counted.
#[test]
fn marked_only_counts_the_marked_thread_exactly() {
    for g in 0..4u8 {
        let mut p = preset(1);
        p.sched.quantum_cycles = 20_000;
        let s = Setup {
            mmcr: Mmcr(all_groups(g).0 | regs::MARKED),
            imr: Imr::default(),
        };
        let (probe, h) = Shared::new(Power2Monitor::new(&p, s).unwrap());
        let mut m = Machine::new(p, Options::default()).unwrap();
        m.attach(Box::new(probe));
        let w = workload::find("radix", Size::Test).unwrap();
        let w = workload::install(w, &mut m, Some(4)).unwrap();
        let msr = m.state().sched.threads[1].regs.msr;
        m.state_mut().sched.threads[1].regs.msr = msr | machine::cpu::context::MSR_PM;
        m.run(None).unwrap();
        assert!(w.verify().verified);
        let st = m.state();
        assert!(st.sched.threads[1].switches > 2);
        let mine = &st.sched.threads[1].cnt;
        let mon = h.borrow();
        let pmu = &mon.pmus[0];
        for (i, sg) in pmu.mmcr.signals().iter().enumerate() {
            assert_eq!(
                pmu.value(i),
                sg.exact(mine).unwrap(),
                "group {g}, counter {i}: {}",
                sg.name()
            );
            // The report's exact column says the same (from the threads' MSR states).
            assert_eq!(
                monitor::power2::report::exact(st, &mon, 0, i),
                Some(pmu.value(i))
            );
        }
        assert!(pmu.value(0) < st.cores[0].cnt.cycles() / 2);
        assert!(pmu.value(1) > 10_000);
    }
}

/// With supervisor-state work in the run (thread 2 of 4 time-sliced on one processor runs in
/// supervisor state): supervisor-only counts equal thread 2's exact counts, and user-only plus
/// supervisor-only equals all, counter by counter, for groups 0-3.
#[test]
fn supervisor_only_and_user_only_split_the_run() {
    for g in [0u8, 2] {
        let run_mode = |bits: u32| {
            let mut p = preset(1);
            p.sched.quantum_cycles = 20_000;
            let s = Setup {
                mmcr: Mmcr(all_groups(g).0 | bits),
                imr: Imr::default(),
            };
            let (probe, h) = Shared::new(Power2Monitor::new(&p, s).unwrap());
            let mut m = Machine::new(p, Options::default()).unwrap();
            m.attach(Box::new(probe));
            let w = workload::find("radix", Size::Test).unwrap();
            let w = workload::install(w, &mut m, Some(4)).unwrap();
            m.state_mut().sched.threads[2].regs.msr = 0;
            m.run(None).unwrap();
            assert!(w.verify().verified);
            let v: Vec<u64> = (0..COUNTERS).map(|i| h.borrow().pmus[0].value(i)).collect();
            let sigs = h.borrow().pmus[0].mmcr.signals();
            let exact: Vec<u64> = sigs
                .iter()
                .map(|s| s.exact(&m.state().sched.threads[2].cnt).unwrap())
                .collect();
            (v, exact)
        };
        let (all, _) = run_mode(0);
        let (user, _) = run_mode(regs::NOSUP);
        let (sup, exact2) = run_mode(regs::NOPROB);
        assert_eq!(sup, exact2, "group {g}: supervisor only = thread 2");
        for i in 0..COUNTERS {
            assert_eq!(user[i] + sup[i], all[i], "group {g}, counter {i}");
        }
        assert!(sup[1] > 10_000 && user[1] > sup[1]);
    }
}

/// Issue 15 item 2: the monitor restricted to one process both ways. Three processes on one
/// processor under the operating system: the marked run's 22 counters (MMCR MARKED, the
/// process's MSR[PM] set by `--mark` and restored by the OS at each switch) and the
/// virtualized run's per-thread totals each equal the process's exact counts in their run;
/// marking leaves every switch as it was (the same cycles: the MSR is saved anyway), while
/// virtualization's 22 counter reads lengthen it.
#[test]
fn marking_and_virtualization_count_one_process_exactly() {
    use monitor::power2::marking::{measure, Spec};
    let spec = Spec {
        kernels: ["fft", "radix", "lu"].map(String::from).to_vec(),
        size: Size::Test,
        procs: 1,
        threads: 1,
        mark: None,
        virtualize: None,
        setups: vec![Setup::default()],
        tlb: true,
    };
    let o = measure(&spec, "radix").unwrap();
    assert_eq!(o.rows.len(), COUNTERS);
    for (s, unit, m, v, em, ev) in &o.rows {
        let (em, ev) = (em.unwrap(), ev.unwrap());
        assert_eq!(*m, em, "marked {unit} {}", s.name());
        assert_eq!(*v, ev, "virtualized {unit} {}", s.name());
    }
    // The process did something: instructions and L1 D misses.
    assert!(
        o.rows[1].2 > 100_000 && o.rows[9].2 > 100,
        "{:?}",
        o.rows[9]
    );
    let (none, marking, virt) = (o.cost[0], o.cost[1], o.cost[2]);
    assert!(none.1 >= 2, "switches: {none:?}");
    assert_eq!(
        marking.1..=marking.4,
        none.1..=none.4,
        "marking changes no timing"
    );
    assert_eq!(none.3, 0);
    assert!(
        virt.3 > 0 && virt.2 > none.2 * virt.1 / none.1,
        "{virt:?} {none:?}"
    );
    // Interference: alone and multiprogrammed, each count its exact one; sharing the
    // processor with two other processes costs radix cycles and L1 D misses.
    assert_eq!(o.interference.len(), 8);
    for &(s, a, ae, m, me) in &o.interference {
        assert_eq!((a, m), (ae, me), "{}", s.name());
    }
    let (c, d) = (o.interference[0], o.interference[2]);
    assert!(c.3 > c.1 && d.3 > d.1, "{c:?} {d:?}");
}

/// Issue 15's marked-process figure at test size, two of its nine cells (2 processes on 1
/// processor, 8 on 4; `pmusim study marking-matrix` prints all nine): every counter of
/// groups 0-3 of every unit, in all, user-only and supervisor-only modes with MARKED, equals
/// the marked process's exact count in that mode, and user-only + supervisor-only = all for
/// the unmarked monitors. Fails if the operating system's mode changes do not reach the
/// monitor (`Observation::Mode`), which would move user work into supervisor counts.
#[test]
fn marked_process_matrix_cells_are_exact() {
    use monitor::power2::matrix::{cell, GROUPS};
    for (n, p) in [(2, 1), (8, 4)] {
        let c = cell(n, p, Size::Test).unwrap();
        assert_eq!(c.compared, GROUPS as usize * 3 * COUNTERS);
        assert!(c.ok(), "{n} processes on {p}: {:?}", c.wrong);
        assert!(c.switches > 0 || n <= p, "{c:?}");
        assert!(c.instructions > 100_000, "{c:?}");
    }
}

/// A process that marks and unmarks itself mid-run (`Ctx::mark_process`, a system call),
/// time-sliced on one processor with an unmarked process: with MARKED, every counter of groups
/// 0-3 equals the process's counts while it was marked (the mark as it was at each moment,
/// split at every system call), not its whole counts (the mark at the end of the run), and the
/// report's exact column agrees; user + supervisor of the marked part add up too.
#[test]
fn a_process_toggling_its_mark_counts_only_its_marked_intervals() {
    use machine::addr::Place;
    use machine::cpu::context;
    for g in 0..4u8 {
        let mut p = preset(1);
        p.os = Some(machine::os::config::OsCfg {
            quantum_cycles: 20_000,
            timer_period_cycles: 10_000,
            ..Default::default()
        });
        let s = Setup {
            mmcr: Mmcr(all_groups(g).0 | regs::MARKED),
            imr: Imr::default(),
        };
        let (probe, h) = Shared::new(Power2Monitor::new(&p, s).unwrap());
        let mut m = Machine::new(p, Options::default()).unwrap();
        m.attach(Box::new(probe));
        let mut toggler = 0;
        for name in ["toggler", "other"] {
            let pid = m.new_process(name, false).unwrap();
            let data = m
                .setup_process(pid)
                .alloc("data", 512 * 1024, Place::RoundRobin);
            let toggles = name == "toggler";
            let tid = m.spawn_in(pid, 0, 1, move |ctx| {
                for phase in 0..5u64 {
                    if toggles {
                        // Marked in phases 1 and 3, unmarked at the end.
                        ctx.mark_process(phase % 2 == 1);
                    }
                    for k in 0..(512 * 1024 / 256) {
                        ctx.load(data + k * 256);
                        ctx.int(3 + phase);
                        ctx.store(data + k * 256 + 8);
                        ctx.fp(1);
                    }
                }
            });
            if toggles {
                toggler = tid;
            }
        }
        m.run(Some(4_000_000_000)).unwrap();
        let st = m.state();
        let th = &st.sched.threads[toggler];
        assert!(th.switches > 4, "time-sliced: {} switches", th.switches);
        assert_eq!(th.regs.msr & context::MSR_PM, 0, "unmarked at the end");
        let mut marked = th.marked[0].clone();
        context::add(&mut marked, &th.marked[1]);
        let mon = h.borrow();
        let pmu = &mon.pmus[0];
        for (i, sg) in pmu.mmcr.signals().iter().enumerate() {
            let e = sg.exact(&marked).unwrap();
            assert_eq!(pmu.value(i), e, "group {g}, counter {i}: {}", sg.name());
            assert_eq!(monitor::power2::report::exact(st, &mon, 0, i), Some(e));
        }
        // The marked user work is exactly phases 1 and 3 (2,048 iterations of 3 + 4 and
        // 3 + 6 instructions); the rest of the marked count is supervisor work (switches,
        // timer interrupts, page faults) taken while marked. The end-of-run mark (clear)
        // would have given 0, a mark for the whole run all of it.
        assert_eq!(th.marked[0].instructions(), 2048 * (7 + 9));
        let (mine, all) = (pmu.value(1), th.cnt.instructions());
        assert!(mine > 2048 * 16 && mine * 2 < all, "{mine} of {all}");
    }
}

/// Without an operating system a program marks itself directly (`Ctx::mark_process` sets
/// MSR[PM]); the machine splits the counts at each change and each switch all the same, so
/// with MARKED every counter of groups 0-3 equals the marked intervals' exact counts (two
/// threads time-sliced on one processor, the toggling one marked in phases 1 and 3 of 5 and
/// unmarked at the end), and the report's exact column agrees. Before, the exact column
/// used the mark at the end of the run (0 here) without an OS.
#[test]
fn a_program_marking_itself_without_an_os_counts_its_marked_intervals() {
    use machine::addr::Place;
    use machine::cpu::context;
    for g in 0..4u8 {
        let mut p = preset(1);
        p.sched.quantum_cycles = 20_000;
        assert!(p.os.is_none());
        let s = Setup {
            mmcr: Mmcr(all_groups(g).0 | regs::MARKED),
            imr: Imr::default(),
        };
        let (probe, h) = Shared::new(Power2Monitor::new(&p, s).unwrap());
        let mut m = Machine::new(p, Options::default()).unwrap();
        m.attach(Box::new(probe));
        for tid in 0..2 {
            let data = m.setup().alloc("data", 512 * 1024, Place::RoundRobin);
            m.spawn(tid, move |ctx: &mut Ctx| {
                for phase in 0..5u64 {
                    if tid == 0 {
                        ctx.mark_process(phase % 2 == 1);
                    }
                    for k in 0..(512 * 1024 / 256) {
                        ctx.load(data + k * 256);
                        ctx.int(3 + phase);
                        ctx.store(data + k * 256 + 8);
                        ctx.fp(1);
                    }
                }
            });
        }
        m.run(Some(4_000_000_000)).unwrap();
        let st = m.state();
        assert!(st.os.is_none());
        let th = &st.sched.threads[0];
        assert!(th.switches > 4, "time-sliced: {} switches", th.switches);
        assert_eq!(th.regs.msr & context::MSR_PM, 0, "unmarked at the end");
        // No supervisor state without an OS; the marked work is phases 1 and 3 (2,048
        // iterations of 7 and of 9 instructions) and the TLB refills taken in them, far
        // from the whole count (the end-of-run mark gave 0, a mark for the whole run all).
        assert_eq!(th.marked[1].instructions(), 0);
        let mine = th.marked[0].instructions();
        assert!(
            mine >= 2048 * 16 && mine * 2 < th.cnt.instructions(),
            "{mine}"
        );
        let marked = th.marked[0].clone();
        let mon = h.borrow();
        let pmu = &mon.pmus[0];
        for (i, sg) in pmu.mmcr.signals().iter().enumerate() {
            let e = sg.exact(&marked).unwrap();
            assert_eq!(pmu.value(i), e, "group {g}, counter {i}: {}", sg.name());
            assert_eq!(monitor::power2::report::exact(st, &mon, 0, i), Some(e));
        }
        let other = &st.sched.threads[1];
        assert_eq!(other.marked[0].instructions(), 0);
        let mut both = th.mode[0].clone();
        context::add(&mut both, &th.mode[1]);
        assert_eq!(both.instructions(), th.cnt.instructions());
    }
}
