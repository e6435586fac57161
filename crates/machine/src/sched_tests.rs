//! Tests of the scheduler: hardware contexts and time-sliced software threads, against exact
//! counts computed from what the threads do.

use crate::addr::Place;
use crate::config::Preset;
use crate::cpu::context;
use crate::cpu::pipeline::Ps;
use crate::cpu::{Class, Counters};
use crate::sched::{context_counts, Run};
use crate::sim::{Machine, Options};

fn preset(name: &str, procs: usize, tpc: u32) -> Preset {
    let mut p = Preset::builtin(name).unwrap().with_procs(procs).unwrap();
    p.cpu.threads_per_core = tpc;
    p.validate().unwrap();
    p
}

/// Threads that each retire a known number of instructions of each class, with a barrier
/// between two halves (so threads of one context must yield to each other to get through).
fn run_counted(p: Preset, threads: usize) -> Machine {
    let mut m = Machine::new(p, Options::default()).unwrap();
    let mut s = m.setup();
    let data = s.alloc("data", threads as u64 * 4096, Place::RoundRobin);
    let bar = s.barrier("b", threads);
    for t in 0..threads {
        m.spawn(t, move |ctx| {
            assert_eq!(ctx.tid(), t);
            assert_eq!(ctx.nthreads(), threads);
            for half in 0..2u64 {
                ctx.int(100 * (t as u64 + 1));
                for k in 0..32u64 {
                    ctx.load(data + t as u64 * 4096 + k * 64);
                    ctx.store(data + t as u64 * 4096 + k * 64 + 8);
                }
                ctx.fp(10 + half);
                ctx.barrier(bar);
            }
        });
    }
    m.run(Some(500_000_000)).unwrap();
    m
}

/// Instructions thread `t` of `run_counted` retires outside the barriers: integer, loads,
/// stores, fp.
fn expected(t: usize) -> [u64; 4] {
    [200 * (t as u64 + 1), 64, 64, 21]
}

fn sum_threads(m: &Machine, core: usize) -> Counters {
    let s = &m.state().sched;
    let mut c = Counters::default();
    for th in s.threads.iter().filter(|th| th.present && th.core == core) {
        context::add(&mut c, &th.cnt);
    }
    c
}

fn check_counts(m: &Machine, threads: usize) {
    let st = m.state();
    let s = &st.sched;
    for (t, th) in s.threads.iter().enumerate().take(threads) {
        assert_eq!(th.run, Run::Done, "thread {t} finished");
        let e = expected(t);
        // The barrier adds loads, stores (fetch-and-add, flag) and branches: at least.
        assert!(th.cnt.instr[Class::Integer as usize] >= e[0], "thread {t}");
        assert!(th.cnt.instr[Class::Load as usize] >= e[1], "thread {t}");
        assert!(th.cnt.instr[Class::Store as usize] >= e[2], "thread {t}");
        assert_eq!(
            th.cnt.instr[Class::Fp as usize],
            e[3],
            "thread {t}: fp instructions"
        );
    }
    for (p, c) in st.cores.iter().enumerate() {
        let sum = sum_threads(m, p);
        assert_eq!(
            sum.instr, c.cnt.instr,
            "core {p}: threads' instructions sum to the core's"
        );
        assert_eq!(
            sum.ps, c.cnt.ps,
            "core {p}: threads' cycles sum to the core's"
        );
        assert_eq!(sum.refs, c.cnt.refs, "core {p}");
        assert_eq!(sum.l1d_misses, c.cnt.l1d_misses, "core {p}");
        assert_eq!(sum.l2_misses, c.cnt.l2_misses, "core {p}");
        let mut per_ctx = Counters::default();
        for k in 0..s.threads_per_core {
            context::add(&mut per_ctx, &context_counts(s, p * s.threads_per_core + k));
        }
        assert_eq!(
            per_ctx.instr, c.cnt.instr,
            "core {p}: contexts sum to the core"
        );
        assert_eq!(per_ctx.ps, c.cnt.ps, "core {p}");
        // Every cycle of the core's time is classified exactly once.
        assert_eq!(
            c.cnt.cycles(),
            c.now / c.period,
            "core {p}: cycles = local time"
        );
    }
}

#[test]
fn hardware_contexts_count_every_thread_exactly() {
    for (procs, tpc) in [(1, 2), (2, 2), (2, 4)] {
        let n = procs * tpc as usize;
        let m = run_counted(preset("numachine", procs, tpc), n);
        check_counts(&m, n);
        assert!(m.state().cores.iter().all(|c| c.multi));
    }
}

#[test]
fn more_threads_than_contexts_are_time_sliced_and_counted() {
    for (procs, tpc, n) in [(1, 1, 3), (2, 1, 5), (2, 2, 9), (4, 1, 2)] {
        let m = run_counted(preset("ideal", procs, tpc), n);
        check_counts(&m, n);
    }
}

#[test]
fn one_thread_per_core_is_the_single_thread_machine() {
    // The same threads with 1 and 2 contexts per core but one thread per core: the second
    // contexts stay empty and nothing changes, cycle for cycle.
    let a = run_counted(preset("numachine", 4, 1), 4);
    let b = run_counted(preset("numachine", 4, 2), 4);
    for (x, y) in a.state().cores.iter().zip(&b.state().cores) {
        assert!(!x.multi && !y.multi);
        assert_eq!(x.now, y.now);
        assert_eq!(x.cnt.instr, y.cnt.instr);
        assert_eq!(x.cnt.ps, y.cnt.ps);
    }
}

/// Two compute-only threads on the two contexts of one core interleave in slices: both
/// finish together, and the core is never idle.
#[test]
fn contexts_interleave_round_robin() {
    let mut p = preset("ideal", 1, 2);
    p.cpu.issue_slice_cycles = 10;
    let mut m = Machine::new(p, Options::default()).unwrap();
    let ends = std::rc::Rc::new(std::cell::RefCell::new(vec![0u64; 2]));
    for t in 0..2 {
        let ends = ends.clone();
        m.spawn(t, move |ctx| {
            for _ in 0..2000 {
                ctx.int(1);
            }
            ends.borrow_mut()[t] = ctx.cycles();
        });
    }
    m.run(None).unwrap();
    let e = ends.borrow().clone();
    let c = &m.state().cores[0];
    // Each slice is 10 cycles: whoever finishes first is at most one slice (plus an
    // instruction-fetch miss) ahead of the other.
    assert!(
        e[0].abs_diff(e[1]) <= 10 + 2 * c.timing.l2_hit + 200,
        "{e:?}"
    );
    assert_eq!(m.state().sched.threads[0].cnt.instructions(), 2000);
    assert_eq!(m.state().sched.threads[1].cnt.instructions(), 2000);
    // Compute only: no other stall was charged (hardware contexts switch for free).
    assert_eq!(c.cnt.ps[Ps::OtherStall as usize], 0);
}

/// One context, two compute threads: the quantum preempts, each switch costs
/// `switch_cycles` of "other stall", charged to the incoming thread.
#[test]
fn quantum_preempts_and_switches_cost_their_cycles() {
    let mut p = preset("ideal", 1, 1);
    p.sched.quantum_cycles = 1000;
    p.sched.switch_cycles = 50;
    let mut m = Machine::new(p, Options::default()).unwrap();
    for t in 0..2 {
        m.spawn(t, move |ctx| {
            for _ in 0..10_000 {
                ctx.int(1);
            }
        });
    }
    m.run(None).unwrap();
    let s = &m.state().sched;
    let switches: u64 = s.threads.iter().map(|t| t.switches).sum();
    // 20,000 cycles of work in 1,000-cycle quanta: about 20 switches (not exact: cold
    // instruction misses lengthen the first quanta).
    assert!((15..=25).contains(&switches), "{switches} switches");
    let c = &m.state().cores[0];
    assert_eq!(c.cnt.ps[Ps::OtherStall as usize], switches * 50);
    for th in &s.threads {
        assert_eq!(th.cnt.ps[Ps::OtherStall as usize], th.switches * 50);
    }
}

/// A thread spinning on a flag that a sibling context of its own core sets (no invalidation
/// ever reaches it) wakes up; so does one whose flag is set by a thread time-sliced on the
/// same context.
#[test]
fn sibling_stores_wake_spinners() {
    for (tpc, quantum) in [(2, 1_000_000), (1, 1_000_000), (1, 100)] {
        let mut p = preset("numachine", 1, tpc);
        p.sched.quantum_cycles = quantum;
        let mut m = Machine::new(p, Options::default()).unwrap();
        let mut s = m.setup();
        let flag = s.lock("flag").0;
        let seen = std::rc::Rc::new(std::cell::Cell::new(0));
        let seen2 = seen.clone();
        m.spawn(0, move |ctx| {
            let v = ctx.spin_until(flag, |v| v == 7);
            seen2.set(v);
        });
        m.spawn(1, move |ctx| {
            ctx.int(5000);
            ctx.store_value(flag, 7);
        });
        m.run(Some(10_000_000)).unwrap();
        assert_eq!(seen.get(), 7, "threads_per_core {tpc}, quantum {quantum}");
    }
}

#[test]
fn threads_per_core_is_validated_by_name() {
    for bad in [0, 17] {
        let mut p = Preset::builtin("numachine").unwrap();
        p.cpu.threads_per_core = bad;
        let e = p.validate().unwrap_err().0;
        assert!(e.contains("cpu.threads_per_core"), "{e}");
    }
    let mut p = Preset::builtin("numachine").unwrap();
    p.cpu.issue_slice_cycles = 0;
    assert!(p
        .validate()
        .unwrap_err()
        .0
        .contains("cpu.issue_slice_cycles"));
    let mut p = Preset::builtin("numachine").unwrap();
    p.sched.quantum_cycles = 0;
    assert!(p.validate().unwrap_err().0.contains("sched.quantum_cycles"));
    // Defaults stay out of the serialized preset (the report's JSON keeps its layout).
    let text = toml::to_string(&Preset::builtin("numachine").unwrap()).unwrap();
    assert!(!text.contains("threads_per_core") && !text.contains("[sched]"));
}

/// The MSR and the process are per software thread, swapped with its state: a thread whose
/// MSR has the PM bit and a supervisor-state thread keep them across time slicing, every
/// observation of the core names the thread's own bits, and every change of the thread
/// holding the core is an `Observation::Switch` naming both threads (seed 003, "Monitoring
/// States").
#[test]
fn msr_is_swapped_with_the_thread_and_switches_are_observed() {
    use crate::probe::{kind, Observation, Probe, Signals};
    use std::cell::RefCell;
    use std::rc::Rc;
    struct Rec(Rc<RefCell<Vec<Observation>>>);
    impl Probe for Rec {
        fn observe(&mut self, o: &Observation, _sig: &mut Signals) {
            self.0.borrow_mut().push(*o);
        }
        fn interest(&self) -> u32 {
            kind::SWITCH | kind::L2_ACCESS
        }
        fn name(&self) -> &str {
            "rec"
        }
    }
    let mut p = preset("ideal", 1, 1);
    p.sched.quantum_cycles = 1000;
    let mut m = Machine::new(p, Options::default()).unwrap();
    let mut s = m.setup();
    let data = s.alloc("data", 3 * 64 * 1024, Place::RoundRobin);
    for t in 0..3u64 {
        m.spawn(t as usize, move |ctx| {
            for k in 0..1000 {
                ctx.load(data + t * 64 * 1024 + k * 64);
            }
        });
    }
    // Thread 1 marked (user state), thread 2 in supervisor state, unmarked.
    m.state_mut().sched.threads[1].regs.msr = context::MSR_USER | context::MSR_PM;
    m.state_mut().sched.threads[1].regs.process = 7;
    m.state_mut().sched.threads[2].regs.msr = 0;
    let seen = Rc::new(RefCell::new(Vec::new()));
    m.attach(Box::new(Rec(seen.clone())));
    m.run(None).unwrap();
    let seen = seen.borrow();
    let mut holder = 0u32;
    let (mut switches, mut accesses) = (0u64, [0u64; 3]);
    for o in seen.iter() {
        match *o {
            Observation::Switch { from, to, .. } => {
                assert_eq!(from, Some(holder), "a switch starts from the holder");
                holder = to.unwrap();
                switches += 1;
            }
            Observation::L2Access { who, .. } => {
                assert_eq!(who.thread, holder);
                assert_eq!(who.marked, who.thread == 1, "{who:?}");
                assert_eq!(who.supervisor, who.thread == 2, "{who:?}");
                assert_eq!(who.process, if who.thread == 1 { 7 } else { 0 });
                accesses[who.thread as usize] += 1;
            }
            _ => {}
        }
    }
    let s = &m.state().sched;
    assert_eq!(switches, s.threads.iter().map(|t| t.switches).sum::<u64>());
    assert!(switches >= 6, "{switches} switches");
    // Each thread's 1,000 loads of distinct lines all miss the L1: one L2 access each (plus
    // its instruction fetches' misses, as counted by the core for that thread).
    for (t, th) in s.threads.iter().enumerate() {
        assert_eq!(
            accesses[t],
            th.cnt.l1d_misses + th.cnt.l1i_misses,
            "thread {t}"
        );
    }
}
