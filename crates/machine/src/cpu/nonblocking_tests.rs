//! Non-blocking loads (`cpu::nonblocking`; seed 000 Table 4.10 items 18 and 19) against
//! computations of what each miss must cost.

use crate::addr::Place;
use crate::config::{NonBlockingCfg, Preset};
use crate::cpu::pipeline::Ps;
use crate::cpu::Counters;
use crate::sim::{Machine, Options};

/// The `ideal` preset on `procs` processors, with non-blocking loads or without.
fn preset(nonblocking: bool, procs: usize) -> Preset {
    let mut p = Preset::builtin("ideal").unwrap().with_procs(procs).unwrap();
    if nonblocking {
        p.cpu.nonblocking = Some(NonBlockingCfg {
            mshrs: 1,
            stores: false,
            loads: true,
            active_list: 0,
            address_queue: 0,
        });
    }
    p.validate().unwrap();
    p
}

/// One thread loads one word of each of `lines` L2 lines (all on node 0, 1 KiB apart so
/// that no two share an L1 or L2 line), then does `work` integer instructions and uses the
/// value (`Ctx::use_loads`). Returns processor 0's counters.
fn load_work_use(nonblocking: bool, lines: u64, work: u64) -> Counters {
    let mut m = Machine::new(preset(nonblocking, 1), Options::default()).unwrap();
    let a = m.setup().alloc("array", lines * 1024, Place::Node(0));
    m.spawn(0, move |ctx| {
        // Warm the procedure's code (2 KiB: 512 instructions), so that the loop makes no
        // instruction misses.
        ctx.int(1024);
        for i in 0..lines {
            ctx.load(a + i * 1024);
            ctx.int(work);
            ctx.use_loads();
        }
    });
    m.run(Some(1_000_000_000)).unwrap();
    m.state().cores[0].cnt.clone()
}

#[test]
fn a_blocking_core_sees_every_miss_cycle() {
    let c = load_work_use(false, 200, 20);
    assert!(c.miss_cycles > 200 * 20, "{}", c.miss_cycles);
    assert_eq!(c.miss_stall_cycles, c.miss_cycles, "item 19 = item 18");
    assert_eq!(c.miss_stall_cycles, c.ps[Ps::MultiprocessingStall as usize]);
}

#[test]
fn work_under_a_miss_hides_exactly_its_cycles() {
    let (lines, work) = (200, 20);
    let off = load_work_use(false, lines, work);
    let on = load_work_use(true, lines, work);
    // The same misses with the same latencies (one thread on `ideal`: no contention).
    assert_eq!(on.l2_misses, off.l2_misses);
    assert_eq!(on.miss_cycles, off.miss_cycles);
    // Each of the `lines` data misses hides the `work` instructions run under it (the
    // latency, 12-cycle local memory + 24 cycles, is longer than 20).
    assert_eq!(on.miss_stall_cycles, off.miss_stall_cycles - lines * work);
    assert_eq!(
        on.miss_stall_cycles,
        on.ps[Ps::MultiprocessingStall as usize]
    );
    // Nothing else changed: the same instructions, and the run is shorter by the hidden cycles.
    assert_eq!(on.instr, off.instr);
    assert_eq!(on.cycles(), off.cycles() - lines * work);
}

#[test]
fn a_miss_longer_than_the_work_is_waited_for_and_a_second_miss_waits_for_the_first() {
    // Work longer than the latency: nothing left to wait for at the use point.
    let long = load_work_use(true, 100, 400);
    // Only the code's misses (before the loop, blocking) stall.
    let warm = load_work_use(false, 0, 400);
    assert_eq!(long.miss_stall_cycles, warm.miss_stall_cycles);
    // Back-to-back misses without work: the second waits for the first (one MSHR), so
    // only the load instruction and its tag check run under each miss.
    let mut m = Machine::new(preset(true, 1), Options::default()).unwrap();
    let a = m.setup().alloc("array", 64 * 1024, Place::Node(0));
    m.spawn(0, move |ctx| {
        for i in 0..64 {
            ctx.load(a + i * 1024);
        }
    });
    m.run(Some(1_000_000_000)).unwrap();
    let c = &m.state().cores[0].cnt;
    assert!(c.miss_stall_cycles < c.miss_cycles);
    assert_eq!(c.miss_stall_cycles, c.ps[Ps::MultiprocessingStall as usize]);
}

/// A second load to the line being filled waits for the fill and reads it: the same L1
/// misses and hits as a blocking core, and only the second load's issue cycle is hidden.
#[test]
fn a_load_to_the_line_being_filled_waits_for_it_and_hits() {
    let run = |nb: bool| {
        let mut m = Machine::new(preset(nb, 1), Options::default()).unwrap();
        let a = m.setup().alloc("array", 100 * 1024, Place::Node(0));
        m.spawn(0, move |ctx| {
            ctx.int(1024);
            for i in 0..100 {
                ctx.load(a + i * 1024);
                ctx.load(a + i * 1024 + 8);
                ctx.int(20);
            }
        });
        m.run(Some(1_000_000_000)).unwrap();
        m.state().cores[0].cnt.clone()
    };
    let (off, on) = (run(false), run(true));
    assert_eq!(on.l1d_misses, off.l1d_misses);
    assert_eq!(on.l1d_hits, off.l1d_hits);
    assert_eq!(on.l2_misses, off.l2_misses);
    assert_eq!(on.miss_cycles, off.miss_cycles);
    assert_eq!(on.miss_stall_cycles, off.miss_stall_cycles - 100);
    assert_eq!(on.cycles(), off.cycles() - 100);
}

#[test]
fn nonblocking_loads_need_one_mshr_and_one_context() {
    let mut p = preset(true, 1);
    p.cpu.nonblocking = Some(NonBlockingCfg {
        mshrs: 2,
        stores: false,
        loads: true,
        active_list: 0,
        address_queue: 0,
    });
    let e = p.validate().unwrap_err().to_string();
    assert!(e.contains("cpu.nonblocking.mshrs"), "{e}");
    let mut p = preset(true, 1);
    p.cpu.threads_per_core = 2;
    let e = p.validate().unwrap_err().to_string();
    assert!(e.contains("cpu.nonblocking"), "{e}");
}

/// `ideal` on one processor with non-blocking loads and stores (`stores = true`).
fn preset_stores() -> Preset {
    let mut p = preset(true, 1);
    p.cpu.nonblocking.as_mut().unwrap().stores = true;
    p.validate().unwrap();
    p
}

/// One thread stores to one word of each of `lines` L2 lines, 1 KiB apart, then does `work`
/// integer instructions and a value load of a word it holds (a use point). Processor 0's
/// counters.
fn store_work(p: Preset, lines: u64, work: u64) -> Counters {
    let mut m = Machine::new(p, Options::default()).unwrap();
    let a = m.setup().alloc("array", lines * 1024, Place::Node(0));
    m.spawn(0, move |ctx| {
        ctx.int(1024);
        for i in 0..lines {
            ctx.store(a + i * 1024);
            ctx.int(work);
            ctx.use_loads();
        }
    });
    m.run(Some(1_000_000_000)).unwrap();
    m.state().cores[0].cnt.clone()
}

#[test]
fn work_under_a_store_miss_is_hidden_only_with_nonblocking_stores() {
    let (lines, work) = (200, 20);
    let blocking = store_work(preset(false, 1), lines, work);
    // Non-blocking loads alone leave stores blocking: the same run.
    let loads_only = store_work(preset(true, 1), lines, work);
    assert_eq!(loads_only.cycles(), blocking.cycles());
    assert_eq!(loads_only.miss_stall_cycles, blocking.miss_stall_cycles);
    let on = store_work(preset_stores(), lines, work);
    assert_eq!(on.l2_misses, blocking.l2_misses);
    assert_eq!(on.miss_cycles, blocking.miss_cycles);
    // Each store miss hides the `work` instructions run under it (latency > 20 cycles).
    assert_eq!(
        on.miss_stall_cycles,
        blocking.miss_stall_cycles - lines * work
    );
    assert_eq!(on.cycles(), blocking.cycles() - lines * work);
    assert_eq!(on.instr, blocking.instr);
}

/// A store under an outstanding store miss to the same line waits for the fill and then
/// hits (the line arrives writable): the L1 counts of a blocking core.
#[test]
fn a_store_to_the_line_being_filled_waits_and_hits() {
    let run = |p: Preset| {
        let mut m = Machine::new(p, Options::default()).unwrap();
        let a = m.setup().alloc("array", 100 * 1024, Place::Node(0));
        m.spawn(0, move |ctx| {
            ctx.int(1024);
            for i in 0..100 {
                ctx.store(a + i * 1024);
                ctx.store(a + i * 1024 + 8);
                ctx.load(a + i * 1024 + 16);
                ctx.int(20);
            }
        });
        m.run(Some(1_000_000_000)).unwrap();
        m.state().cores[0].cnt.clone()
    };
    let (off, on) = (run(preset(false, 1)), run(preset_stores()));
    assert_eq!(on.l1d_misses, off.l1d_misses);
    assert_eq!(on.l1d_hits, off.l1d_hits);
    assert_eq!(on.l2_misses, off.l2_misses);
    assert_eq!(on.miss_cycles, off.miss_cycles);
    // Only the second store's issue cycle runs under each miss (the load hits the filled
    // line after the wait; the 20 instructions come after the fill either way).
    assert_eq!(on.cycles(), off.cycles() - 100);
}
