//! Tests of the operating-system model against exact counts: what each supervisor path
//! references, per-process and per-mode sums, blocking calls, marking, bad `[os]` fields.

use crate::addr::Place;
use crate::config::Preset;
use crate::cpu::{context, Counters};
use crate::os::config::OsCfg;
use crate::sim::{Machine, Options};

fn preset(name: &str, procs: usize, os: OsCfg) -> Preset {
    let mut p = Preset::builtin(name).unwrap().with_procs(procs).unwrap();
    p.os = Some(os);
    p.validate().unwrap();
    p
}

fn small_os() -> OsCfg {
    OsCfg {
        quantum_cycles: 20_000,
        timer_period_cycles: 10_000,
        ..OsCfg::default()
    }
}

/// Two processes of two threads each on two processors: each thread walks its own array.
fn two_processes(p: Preset) -> Machine {
    let mut m = Machine::new(p, Options::default()).unwrap();
    for name in ["a", "b"] {
        let pid = m.new_process(name, name == "b").unwrap();
        let data = m
            .setup_process(pid)
            .alloc("data", 2 * 256 * 1024, Place::RoundRobin);
        for t in 0..2 {
            m.spawn_in(pid, t, 2, move |ctx| {
                assert_eq!(ctx.nthreads(), 2);
                let base = data + ctx.tid() as u64 * 256 * 1024;
                for rep in 0..3 {
                    for k in 0..(256 * 1024 / 64) {
                        ctx.load(base + k * 64);
                        ctx.int(4 + rep);
                    }
                }
            });
        }
    }
    m.run(Some(2_000_000_000)).unwrap();
    m
}

fn eq(a: &Counters, b: &Counters, what: &str) {
    assert_eq!(a.instr, b.instr, "{what}: instructions");
    assert_eq!(a.ps, b.ps, "{what}: cycles");
    assert_eq!(a.refs, b.refs, "{what}: references");
    assert_eq!(a.l1d_misses, b.l1d_misses, "{what}: L1 D misses");
    assert_eq!(a.l2_misses, b.l2_misses, "{what}: L2 misses");
    assert_eq!(a.dtlb_misses, b.dtlb_misses, "{what}: D-TLB misses");
}

/// Per thread user + supervisor = all; per process the threads' sums; over the processes the
/// processors' totals, field by field. The supervisor references are exactly those of the
/// paths that ran: each switch stores and loads `saved_registers + 1` words, each timer
/// interrupt and each TLB miss reads two words and each page fault writes one.
#[test]
fn counts_split_exactly_by_process_and_mode() {
    for name in ["ideal", "numachine"] {
        let mut p = preset(name, 2, small_os());
        p.cpu.tlb.enabled = true;
        let m = two_processes(p);
        let st = m.state();
        let os = st.os.as_ref().unwrap();
        let mut machine = Counters::default();
        for c in &st.cores {
            context::add(&mut machine, &c.cnt);
        }
        let mut procs = Counters::default();
        let mut sup = Counters::default();
        for pr in &os.processes {
            let mut one = Counters::default();
            for &t in &pr.threads {
                let th = &st.sched.threads[t];
                let mut both = th.mode[0].clone();
                context::add(&mut both, &th.mode[1]);
                eq(
                    &both,
                    &th.cnt,
                    &format!("{name} thread {t}: user + supervisor"),
                );
                context::add(&mut one, &th.cnt);
                context::add(&mut sup, &th.mode[1]);
            }
            context::add(&mut procs, &one);
        }
        eq(
            &procs,
            &machine,
            &format!("{name}: processes sum to the machine"),
        );
        let s = &os.stats;
        let words = os.cfg.saved_registers + 1;
        assert!(s.switches > 10, "{name}: {} switches", s.switches);
        assert!(s.timer_interrupts > 10, "{name}");
        assert_eq!(
            s.page_faults,
            os.processes.iter().map(|p| p.touched.len() as u64).sum()
        );
        assert_eq!(
            sup.refs,
            s.switches * 2 * words + 2 * s.timer_interrupts + 2 * s.tlb_misses + s.page_faults,
            "{name}: supervisor references"
        );
        // The TLB misses are the user references' (the handlers' own are unmapped).
        assert_eq!(s.tlb_misses, machine.dtlb_misses + machine.itlb_misses);
        // Supervisor instructions: per path, its stated count plus its references.
        let c = &os.cfg;
        let sup_int = s.switches * c.switch_instructions
            + s.timer_interrupts * c.timer_instructions
            + s.tlb_misses * c.tlb_miss_instructions
            + s.page_faults * c.page_fault_instructions;
        assert_eq!(sup.instructions(), sup_int + sup.refs, "{name}");
        assert_eq!(
            st.sched.threads.iter().map(|t| t.switches).sum::<u64>(),
            s.switches
        );
    }
}

/// A thread blocked in `io_wait` gives its context to the other process's thread: the
/// machine finishes in about the longer of the two, not their sum, and the waiting thread's
/// process reports the call.
#[test]
fn io_wait_runs_another_process() {
    let run = |with_other: bool| {
        let mut m = Machine::new(preset("ideal", 1, small_os()), Options::default()).unwrap();
        let a = m.new_process("io", false).unwrap();
        m.spawn_in(a, 0, 1, |ctx| {
            for _ in 0..5 {
                ctx.int(1000);
                ctx.io_wait(200_000);
            }
        });
        if with_other {
            let b = m.new_process("cpu", false).unwrap();
            m.spawn_in(b, 0, 1, |ctx| {
                for _ in 0..9000 {
                    ctx.int(100);
                }
            });
        }
        m.run(None).unwrap();
        let st = m.state();
        let s = &st.os.as_ref().unwrap().stats;
        assert_eq!((s.io_waits, s.io_cycles, s.syscalls), (5, 1_000_000, 5));
        st.cores[0].cnt.cycles()
    };
    let alone = run(false);
    let both = run(true);
    assert!(alone >= 1_000_000, "{alone}: the waits are idle time");
    // The compute thread's 900,000 cycles fit in the waits (plus switches and timers).
    assert!(both < alone + 150_000, "{both} vs {alone}");
}

/// A program marks itself with a system call: its observations carry the mark from then on,
/// and the other process's never do; `--mark` (a marked process) marks from the start.
#[test]
fn marking_by_system_call_and_at_creation() {
    use crate::probe::{kind, Observation, Probe, Signals};
    use std::cell::RefCell;
    use std::rc::Rc;
    struct Rec(Rc<RefCell<Vec<(u16, bool, bool)>>>);
    impl Probe for Rec {
        fn observe(&mut self, o: &Observation, _: &mut Signals) {
            if let Observation::L2Access { who, .. } = *o {
                self.0
                    .borrow_mut()
                    .push((who.process, who.marked, who.supervisor));
            }
        }
        fn interest(&self) -> u32 {
            kind::L2_ACCESS
        }
        fn name(&self) -> &str {
            "rec"
        }
    }
    let mut m = Machine::new(preset("ideal", 1, small_os()), Options::default()).unwrap();
    let a = m.new_process("self", false).unwrap();
    let b = m.new_process("other", false).unwrap();
    let c = m.new_process("marked", true).unwrap();
    let mut bases = Vec::new();
    for pid in [a, b, c] {
        bases.push(m.setup_process(pid).alloc("d", 1 << 20, Place::Default));
    }
    let (da, db, dc) = (bases[0], bases[1], bases[2]);
    m.spawn_in(a, 0, 1, move |ctx| {
        ctx.load(da);
        ctx.mark_process(true);
        for k in 1..2000 {
            ctx.load(da + k * 64);
        }
    });
    m.spawn_in(b, 0, 1, move |ctx| {
        for k in 0..2000 {
            ctx.load(db + k * 64);
        }
    });
    m.spawn_in(c, 0, 1, move |ctx| {
        for k in 0..2000 {
            ctx.load(dc + k * 64);
        }
    });
    let seen = Rc::new(RefCell::new(Vec::new()));
    m.attach(Box::new(Rec(seen.clone())));
    m.run(None).unwrap();
    let seen = seen.borrow();
    let user = |p: u16| seen.iter().filter(move |s| s.0 == p && !s.2);
    // Process 0: its first load unmarked (with its code's first fetches), then marked.
    assert!(user(a).filter(|s| s.1).count() >= 1999);
    assert!(user(a).filter(|s| !s.1).count() <= 3, "before the call");
    assert!(user(b).all(|s| !s.1));
    assert!(user(c).all(|s| s.1));
    assert_eq!(m.state().os.as_ref().unwrap().stats.syscalls, 1);
}

/// Bad `[os]` fields are refused, naming the field.
#[test]
fn bad_os_fields_are_named() {
    let base = Preset::builtin("ideal").unwrap();
    type Edit = fn(&mut OsCfg);
    let cases: [(Edit, &str); 4] = [
        (|c| c.quantum_cycles = 15_000, "os.quantum_cycles"),
        (|c| c.timer_period_cycles = 0, "os.timer_period_cycles"),
        (|c| c.page_table_bytes = 5000, "os.page_table_bytes"),
        (|c| c.table_place = "node7".into(), "os.table_place"),
    ];
    for (f, field) in cases {
        let mut p = base.clone();
        let mut c = small_os();
        f(&mut c);
        p.os = Some(c);
        let e = p.validate().unwrap_err();
        assert!(e.0.starts_with(field), "{}", e.0);
    }
    let text = format!(
        "{}\n[os]\nquantum = 5\n",
        toml::to_string(&Preset::builtin("ideal").unwrap()).unwrap()
    );
    let e = Preset::parse(&text, "x.toml").unwrap_err();
    assert!(e.0.contains("quantum"), "{}", e.0);
}

/// Without `[os]` a machine has no operating system and every thread is in user state.
#[test]
fn no_os_section_no_operating_system() {
    let p = Preset::builtin("ideal").unwrap().with_procs(2).unwrap();
    assert!(p.os.is_none());
    let m = Machine::new(p, Options::default()).unwrap();
    assert!(m.state().os.is_none());
    assert!(m
        .state()
        .cores
        .iter()
        .all(|c| !c.os && c.msr == context::MSR_USER));
}
