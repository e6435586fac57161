//! Tests of probes that wake and act (issue 13 item 7), against exact counts: wake-ups on a
//! probe clock, interrupts with handler cycles, setting changes, page migrations, origins and
//! the ground truth's split by phase.

use crate::addr::{Addr, Place};
use crate::config::Preset;
use crate::cpu::pipeline::Ps;
use crate::probe::{kind, Action, Observation, Probe, ProbeClock, Signals};
use crate::settings::{Declare, SettingId};
use crate::sim::{Machine, Options, RunSummary};
use engine::Tick;
use std::cell::RefCell;
use std::rc::Rc;

fn preset(name: &str, procs: usize, tpc: u32) -> Preset {
    let mut p = Preset::builtin(name).unwrap().with_procs(procs).unwrap();
    p.cpu.threads_per_core = tpc;
    p.validate().unwrap();
    p
}

/// Wakes every `every` cycles of its clock from cycle `every`, recording (cycle, tick), and
/// asks for `act(cycle)`'s actions.
struct Waker {
    clock: ProbeClock,
    every: u64,
    seen: Rc<RefCell<Vec<(u64, Tick)>>>,
    act: fn(u64) -> Vec<Action>,
}

impl Probe for Waker {
    fn observe(&mut self, _o: &Observation, _sig: &mut Signals) {}
    fn interest(&self) -> u32 {
        0
    }
    fn wakes(&self) -> Option<(ProbeClock, u64)> {
        Some((self.clock, self.every))
    }
    fn wake(&mut self, cycle: u64, t: Tick, sig: &mut Signals) -> Option<u64> {
        self.seen.borrow_mut().push((cycle, t));
        for a in (self.act)(cycle) {
            sig.act(a);
        }
        Some(cycle + self.every)
    }
    fn name(&self) -> &str {
        "waker"
    }
}

fn none(_: u64) -> Vec<Action> {
    Vec::new()
}

/// Every thread computes `n` integer instructions and reads `lines` lines of its own page.
fn compute(m: &mut Machine, threads: usize, n: u64, lines: u64) {
    let data = m
        .setup()
        .alloc("data", threads as u64 * 4096, Place::RoundRobin);
    for t in 0..threads {
        m.spawn(t, move |ctx| {
            for k in 0..lines {
                ctx.load(data + t as u64 * 4096 + k * 64);
                ctx.int(n / lines.max(1));
            }
            ctx.int(n % lines.max(1));
        });
    }
}

/// A waking probe: its clock, its period in cycles of it, and what it does at each wake-up.
type WakeSpec = (ProbeClock, u64, fn(u64) -> Vec<Action>);

fn run_with(
    p: Preset,
    threads: usize,
    n: u64,
    probe: Option<WakeSpec>,
) -> (Machine, RunSummary, Vec<(u64, Tick)>) {
    let mut m = Machine::new(p, Options::default()).unwrap();
    compute(&mut m, threads, n, 16);
    let seen = Rc::new(RefCell::new(Vec::new()));
    if let Some((clock, every, act)) = probe {
        m.attach(Box::new(Waker {
            clock,
            every,
            seen: seen.clone(),
            act,
        }));
    }
    let s = m.run(Some(100_000_000)).unwrap();
    let v = seen.borrow().clone();
    (m, s, v)
}

const CORE: ProbeClock = ProbeClock {
    name: "core",
    num: 1,
    den: 1,
};
const X2: ProbeClock = ProbeClock {
    name: "x2",
    num: 2,
    den: 1,
};

/// A probe waking every N cycles of its clock is called exactly floor(T / N) times, at
/// ticks k * N * period, and the wake-ups change nothing else in the run.
#[test]
fn wakes_floor_t_over_n_times_at_exact_ticks_and_change_nothing() {
    let (base, bs, _) = run_with(preset("ideal", 4, 1), 4, 20_000, None);
    for (clock, every) in [(CORE, 400), (X2, 400), (CORE, 1), (X2, 7_777)] {
        let (m, s, seen) = run_with(preset("ideal", 4, 1), 4, 20_000, Some((clock, every, none)));
        let period = m.state().cpu_period * clock.num / clock.den * every;
        assert_eq!(s.ticks, bs.ticks, "{clock:?} every {every}");
        assert_eq!(
            seen.len() as u64,
            s.ticks / period,
            "{clock:?} every {every}"
        );
        for (k, &(cycle, t)) in seen.iter().enumerate() {
            assert_eq!(cycle, (k as u64 + 1) * every);
            assert_eq!(t, (k as u64 + 1) * period);
        }
        assert_eq!(m.state().acted.wakes, seen.len() as u64);
        for (a, b) in m.state().cores.iter().zip(&base.state().cores) {
            assert_eq!(a.cnt.ps, b.cnt.ps, "wake-ups changed a core's cycles");
            assert_eq!(a.cnt.instr, b.cnt.instr);
        }
    }
}

fn irq_core1_ctx0(_: u64) -> Vec<Action> {
    vec![Action::Interrupt {
        core: 1,
        context: 0,
        vector: 9,
        handler_cycles: 250,
    }]
}

/// An interrupt's exception entry and handler cycles appear as killed-exception cycles of
/// the core that took it, exactly, and nothing else of the classification changes.
#[test]
fn interrupt_handler_cycles_are_killed_exception_cycles_exactly() {
    let (base, _, _) = run_with(preset("ideal", 2, 1), 2, 50_000, None);
    let (m, _, seen) = run_with(
        preset("ideal", 2, 1),
        2,
        50_000,
        Some((CORE, 1000, irq_core1_ctx0)),
    );
    let a = &m.state().acted;
    assert!(seen.len() >= 40, "{} wake-ups", seen.len());
    // Raised while core 1's thread lives; every one raised before it finished is taken.
    assert_eq!(a.interrupts, seen.len() as u64);
    assert_eq!(a.interrupts_taken + a.interrupts_dropped, a.interrupts);
    let exc = m.state().preset.cpu.exception_cycles as u64;
    let c1 = &m.state().cores[1].cnt;
    let b1 = &base.state().cores[1].cnt;
    assert_eq!(c1.interrupts, a.interrupts_taken);
    assert_eq!(
        c1.ps[Ps::KilledException as usize] - b1.ps[Ps::KilledException as usize],
        a.interrupts_taken * (exc + 250)
    );
    assert_eq!(a.interrupt_cycles, a.interrupts_taken * (exc + 250));
    assert_eq!(a.handler_cycles, a.interrupts_taken * 250);
    for ps in Ps::ALL.iter().filter(|&&p| p != Ps::KilledException) {
        assert_eq!(c1.ps[*ps as usize], b1.ps[*ps as usize], "{ps:?} changed");
    }
    assert_eq!(m.state().cores[0].cnt.ps, base.state().cores[0].cnt.ps);
}

fn irq_core0_ctx1(_: u64) -> Vec<Action> {
    vec![Action::Interrupt {
        core: 0,
        context: 1,
        vector: 3,
        handler_cycles: 100,
    }]
}

/// On a core with two hardware contexts, an interrupt raised on context 1 is taken by the
/// software thread loaded there, not by its sibling.
#[test]
fn interrupts_go_to_the_named_hardware_context() {
    let (m, _, _) = run_with(
        preset("ideal", 1, 2),
        2,
        40_000,
        Some((CORE, 2000, irq_core0_ctx1)),
    );
    let st = m.state();
    let exc = st.preset.cpu.exception_cycles as u64;
    let a = &st.acted;
    assert!(a.interrupts_taken > 5);
    let th = &st.sched.threads;
    assert_eq!(th[1].context, 1);
    assert_eq!(th[1].cnt.interrupts, a.interrupts_taken);
    assert_eq!(th[0].cnt.interrupts, 0);
    assert_eq!(
        th[1].cnt.ps[Ps::KilledException as usize],
        a.interrupts_taken * (exc + 100)
    );
    assert_eq!(th[0].cnt.ps[Ps::KilledException as usize], 0);
}

/// Records the home of every completed miss by address.
struct Homes(Rc<RefCell<Vec<(Addr, u16, Tick)>>>);
impl Probe for Homes {
    fn observe(&mut self, o: &Observation, _sig: &mut Signals) {
        if let Observation::TxDone { addr, home, t, .. } = *o {
            self.0.borrow_mut().push((addr, home, t));
        }
    }
    fn interest(&self) -> u32 {
        kind::TX_DONE
    }
    fn name(&self) -> &str {
        "homes"
    }
}

/// Moves page `a` (the first page of "moved", on node 0) to node 1 and page `b` (the first
/// page of "touched", in use by then) to node 1, once.
struct Migrator {
    a: Addr,
    b: Addr,
}
impl Probe for Migrator {
    fn observe(&mut self, _o: &Observation, _sig: &mut Signals) {}
    fn interest(&self) -> u32 {
        0
    }
    fn wakes(&self) -> Option<(ProbeClock, u64)> {
        Some((CORE, 5_000))
    }
    fn wake(&mut self, _cycle: u64, _t: Tick, sig: &mut Signals) -> Option<u64> {
        sig.act(Action::MigratePage {
            addr: self.a,
            node: 1,
        });
        sig.act(Action::MigratePage {
            addr: self.b,
            node: 1,
        });
        sig.act(Action::MigratePage {
            addr: self.a,
            node: 99,
        });
        None
    }
    fn name(&self) -> &str {
        "migrator"
    }
}

/// The processor the reading thread runs on: the first of node 1.
fn reader(p: &Preset) -> usize {
    (0..p.procs).find(|&q| p.node_of_proc(q) == 1).unwrap()
}

fn migration_run(p: &str, migrate: bool) -> (Machine, Vec<(Addr, u16, Tick)>, Addr, Addr) {
    let pr = preset(p, 8, 1);
    let r = reader(&pr);
    let mut m = Machine::new(pr, Options::default()).unwrap();
    let mut s = m.setup();
    let moved = s.alloc("moved", 4096, Place::Node(0));
    let touched = s.alloc("touched", 4096, Place::Node(0));
    // The reader (on node 1) reads "touched" at once, then "moved" long after the migration
    // has been asked (cycle 5,000) and done (4,096 cycles later).
    for t in 0..r {
        m.spawn(t, |ctx| ctx.int(10));
    }
    m.spawn(r, move |ctx| {
        ctx.load(touched);
        ctx.int(20_000);
        for k in 0..8 {
            ctx.load(moved + k * 128);
        }
        ctx.load(touched + 128);
    });
    let seen = Rc::new(RefCell::new(Vec::new()));
    m.attach(Box::new(Homes(seen.clone())));
    if migrate {
        m.attach(Box::new(Migrator {
            a: moved,
            b: touched,
        }));
    }
    m.run(Some(10_000_000)).unwrap();
    let v = seen.borrow().clone();
    (m, v, moved, touched)
}

/// A migrated page's later misses see its new home (local to processor 1 now); a page with a
/// cached line is refused, as is a node that does not exist; each outcome is counted.
#[test]
fn page_migration_changes_the_home_of_later_misses() {
    for p in ["ideal", "numachine", "flash"] {
        let (base, bv, moved, _) = migration_run(p, false);
        let (m, v, _, touched) = migration_run(p, true);
        let in_page = |a: Addr, page: Addr| a & !4095 == page;
        let homes = |v: &[(Addr, u16, Tick)], page: Addr| -> Vec<u16> {
            v.iter()
                .filter(|x| in_page(x.0, page))
                .map(|x| x.1)
                .collect()
        };
        assert_eq!(homes(&bv, moved), vec![0; 8], "{p}: without migration");
        assert_eq!(homes(&v, moved), vec![1; 8], "{p}: after migration");
        assert_eq!(homes(&v, touched), vec![0; 2], "{p}: refused page stays");
        let a = &m.state().acted;
        assert_eq!(a.migrations, 1, "{p}");
        assert_eq!(a.migrations_refused, 2, "{p}");
        assert_eq!(a.migration_cycles, 4096, "{p}");
        let gt = m.state().truth.as_ref().unwrap();
        let bgt = base.state().truth.as_ref().unwrap();
        let r = reader(&m.state().preset);
        assert_eq!(
            gt.per_proc[r].read_local,
            bgt.per_proc[r].read_local + 8,
            "{p}: the 8 misses became local"
        );
    }
}

fn set_watermark(cycle: u64) -> Vec<Action> {
    vec![Action::Set {
        setting: SettingId(0),
        value: if cycle == 1000 { 8 } else { 64 },
    }]
}

/// A setting change is applied through the queue, counted per setting, and a value outside
/// the setting's range is refused.
#[test]
fn settings_change_after_their_latency_and_out_of_range_is_refused() {
    let mut m = Machine::new(preset("ideal", 2, 1), Options::default()).unwrap();
    let clocks = m.state().clocks.clone();
    let id = m
        .state_mut()
        .aux
        .settings
        .register(
            &clocks,
            Declare {
                name: "test.watermark",
                doc: "a test setting",
                value: 16,
                min: 1,
                max: 32,
                latency_cycles: 3,
                clock: "cpu",
            },
        )
        .unwrap();
    assert_eq!(id, SettingId(0));
    compute(&mut m, 2, 10_000, 4);
    m.attach(Box::new(Waker {
        clock: CORE,
        every: 1000,
        seen: Rc::new(RefCell::new(Vec::new())),
        act: set_watermark,
    }));
    m.run(Some(10_000_000)).unwrap();
    assert_eq!(m.settings().get(id), 8);
    let a = &m.state().acted;
    assert_eq!(a.settings_applied, vec![1]);
    assert_eq!(a.settings_refused, a.wakes - 1);
}

fn everything(cycle: u64) -> Vec<Action> {
    vec![
        Action::Interrupt {
            core: (cycle / 700 % 4) as u16,
            context: 0,
            vector: 1,
            handler_cycles: cycle % 97,
        },
        Action::MigratePage {
            addr: 0x10_0000 + (cycle % 8) * 4096,
            node: (cycle % 4) as u16,
        },
    ]
}

/// The same run with actions gives the same results twice.
#[test]
fn actions_are_deterministic() {
    let run = || {
        let (m, s, seen) = run_with(
            preset("numachine", 4, 1),
            4,
            30_000,
            Some((X2, 700, everything)),
        );
        let cores: Vec<_> = m.state().cores.iter().map(|c| c.cnt.ps).collect();
        (s.ticks, s.events, seen, m.state().acted.clone(), cores)
    };
    let a = run();
    assert!(a.3.interrupts_taken > 0 && a.3.migrations + a.3.migrations_refused > 0);
    assert_eq!(a, run());
}

/// Records (memory queue use?, phase, core, address) of every memory-module queue use and
/// every completed read.
type PhaseLog = Rc<RefCell<Vec<(bool, u16, u16, Addr)>>>;
struct Phases(PhaseLog);
impl Probe for Phases {
    fn observe(&mut self, o: &Observation, _sig: &mut Signals) {
        match *o {
            Observation::Queue {
                res: crate::probe::Resource::Memory(_),
                who,
                ..
            } => self.0.borrow_mut().push((true, who.phase, who.core, 0)),
            Observation::TxDone {
                who,
                cmd: crate::probe::Cmd::Read,
                addr,
                ..
            } => self.0.borrow_mut().push((false, who.phase, who.core, addr)),
            _ => {}
        }
    }
    fn interest(&self) -> u32 {
        kind::QUEUE | kind::TX_DONE
    }
    fn wants_origins(&self) -> bool {
        true
    }
    fn name(&self) -> &str {
        "phases"
    }
}

/// A run whose phases are known: thread 0 reads 32 lines of "a" in phase 0, then 48 lines of
/// "b" in phase 5. The ground truth's split by phase gives phase 5 exactly b's misses and
/// their memory accesses, and agrees with the origins the probes see.
#[test]
fn ground_truth_splits_memory_latency_by_phase() {
    let opts = Options {
        phase_split: true,
        ..Options::default()
    };
    let mut m = Machine::new(preset("numachine", 4, 1), opts).unwrap();
    let mut s = m.setup();
    let a = s.alloc("a", 32 * 64, Place::Node(1));
    let b = s.alloc("b", 48 * 64, Place::Node(0));
    m.spawn(0, move |ctx| {
        for k in 0..32 {
            ctx.load(a + k * 64);
        }
        ctx.phase(5);
        for k in 0..48 {
            ctx.load(b + k * 64);
        }
    });
    let seen = Rc::new(RefCell::new(Vec::new()));
    m.attach(Box::new(Phases(seen.clone())));
    m.run(Some(10_000_000)).unwrap();
    let gt = m.state().truth.as_ref().unwrap();
    assert!(gt.by_phase());
    let b_id = m.state().map.structure_of(b);
    assert_eq!(gt.per_struct[&b_id].reads(), 48);
    let n = |ph: u16| -> u64 { gt.phases[&ph].latency.iter().map(|h| h.n).sum() };
    let v = seen.borrow();
    // Phase 5's reads, as the processor saw them: b's 48 and the code lines fetched then.
    let reads5: Vec<Addr> = v.iter().filter(|x| !x.0 && x.1 == 5).map(|x| x.3).collect();
    assert_eq!(n(5), reads5.len() as u64);
    assert_eq!(
        reads5
            .iter()
            .filter(|&&x| (b..b + 48 * 64).contains(&x))
            .count(),
        48
    );
    assert!(reads5
        .iter()
        .all(|&x| (b..b + 48 * 64).contains(&x) || x >= crate::cpu::CODE_BASE));
    assert_eq!(n(0) + n(5), gt.latency.iter().map(|h| h.n).sum::<u64>());
    // Memory: one home access per read miss (loads only: no write-backs).
    let mem5 = &gt.phases[&5].queues[1];
    assert_eq!(mem5.uses, n(5));
    let probe_mem5 = v.iter().filter(|x| x.0 && x.1 == 5).count() as u64;
    assert_eq!(probe_mem5, mem5.uses);
    let total_mem: u64 = gt
        .queues
        .iter()
        .filter(|(r, _)| matches!(r, crate::probe::Resource::Memory(_)))
        .map(|(_, q)| q.uses)
        .sum();
    assert_eq!(gt.phases[&0].queues[1].uses + mem5.uses, total_mem);
    assert!(v.iter().all(|x| x.2 == 0), "every request is core 0's");
}
