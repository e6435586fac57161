//! The `flash-r10k` preset (an R10000-like core on FLASH, `presets/flash-r10k.toml`): what it
//! changes against `flash`, and FlashPoint's fence draining an outstanding miss.

use crate::addr::Place;
use crate::config::Preset;
use crate::cpu::pipeline::Ps;
use crate::sim::{Machine, Options};
use std::cell::Cell;
use std::rc::Rc;

#[test]
fn flash_r10k_is_flash_with_the_r10000_core() {
    let base = Preset::builtin("flash").unwrap();
    let p = Preset::builtin("flash-r10k").unwrap();
    assert_eq!(p.name, "flash-r10k");
    assert_eq!(p.cpu.issue_width, 4);
    assert_eq!(base.cpu.issue_width, 1);
    assert_eq!(p.cpu.fp_slip_cycles, 0);
    assert_eq!(p.cpu.branch_predictor.as_ref().unwrap().entries, 512);
    let nb = p.cpu.nonblocking.as_ref().unwrap();
    assert!(nb.stores && nb.mshrs == 4);
    assert_eq!((nb.active_list, nb.address_queue), (32, 16));
    let fp = &p.flash.as_ref().unwrap().flashpoint;
    assert_eq!(fp.fence_cycles, 8);
    // Everything else is the base's: set the fields above back and the two are the same.
    let mut q = p.clone();
    q.name = base.name.clone();
    q.description = base.description.clone();
    q.cpu = base.cpu.clone();
    q.flash.as_mut().unwrap().flashpoint.fence_cycles = 20;
    assert_eq!(
        toml::to_string(&q).unwrap(),
        toml::to_string(&base).unwrap()
    );
}

#[test]
fn a_derived_preset_names_a_bad_base_and_bad_keys() {
    let e = Preset::parse("base = \"nosuch\"\n", "x.toml").unwrap_err();
    assert!(
        e.0.starts_with("x.toml: base: `nosuch` is not a built-in preset"),
        "{e}"
    );
    let e = Preset::parse("base = \"flash\"\n[cpu]\nbogus = 1\n", "x.toml").unwrap_err();
    assert!(
        e.0.contains("x.toml: over preset `flash`") && e.0.contains("bogus"),
        "{e}"
    );
    let e = Preset::parse("base = \"flash\"\n[cpu]\nissue_width = 8\n", "x.toml").unwrap_err();
    assert!(e.0.contains("cpu.issue_width"), "{e}");
}

/// FP-Proc on `flash-r10k`, two processors: a store miss to a line homed on the other
/// node, then a procedure entry. The fence waits for the store's ownership (the drain, a
/// multiprocessing stall) and then its 8 cycles (other stall); with no miss outstanding,
/// only the 8 cycles. `fence_cycles` raised by 12 adds exactly 12 other-stall cycles.
#[test]
fn the_fence_drains_the_outstanding_miss() {
    let run_with = |miss: bool, fence: u32| {
        let mut p = Preset::builtin("flash-r10k")
            .unwrap()
            .with_procs(2)
            .unwrap();
        let fl = p.flash.as_mut().unwrap();
        fl.protocol = crate::flash::flashpoint::FlashProtocol::FpProc;
        fl.flashpoint.fence_cycles = fence;
        let mut m = Machine::new(p, Options::default()).unwrap();
        let a = m.setup().alloc("array", 4096, Place::Node(1));
        let f = m.setup().procedure("f");
        let out = Rc::new(Cell::new((0, 0)));
        let o = out.clone();
        m.spawn(0, move |ctx| {
            ctx.int(4096);
            if miss {
                ctx.store(a);
            }
            let stalls = |c: &crate::cpu::Counters| {
                (
                    c.ps[Ps::MultiprocessingStall as usize],
                    c.ps[Ps::OtherStall as usize],
                )
            };
            let before = stalls(ctx.counters());
            ctx.enter(f);
            let after = stalls(ctx.counters());
            ctx.leave();
            o.set((after.0 - before.0, after.1 - before.1));
        });
        m.run(Some(100_000_000)).unwrap();
        out.get()
    };
    let run = |miss| run_with(miss, 8);
    let (drained, other) = run(true);
    let (mp, other_idle) = run(false);
    // The fixed part (the fence's 8 cycles and the uncached command's own cycles) is the
    // same whether or not a miss was outstanding ...
    assert_eq!(other, other_idle);
    // ... and the drain is a multiprocessing stall: a remote store miss on FLASH takes well
    // over 50 processor cycles, all waited for at the fence.
    assert!(drained > mp + 50, "{drained} {mp}");
    let (drained20, other20) = run_with(true, 20);
    assert_eq!(other20, other + 12);
    assert_eq!(drained20, drained);
}

/// The protocol tester on `flash-r10k` (half its operations are plain loads and stores left
/// outstanding while the thread goes on), under DP and FP-Proc: no violation, and the races
/// happen (NACKs, invalidations, interventions).
#[test]
fn tester_on_flash_r10k_finds_no_violation() {
    use crate::flash::flashpoint::FlashProtocol;
    for (proto, seed) in [
        (FlashProtocol::Dp, 1),
        (FlashProtocol::Dp, 2),
        (FlashProtocol::FpProc, 3),
    ] {
        let p = Preset::builtin("flash-r10k").unwrap();
        // Four MSHRs: misses overlap (about one in six operations at 200,000 ops).
        tester_finds_no_violation(p, proto, seed);
    }
}

/// The protocol tester (30,000 operations on 4 lines, 16 processors) on `p` with `proto`:
/// no violation, NACKs, invalidations and interventions all exercised, and more than 1,000
/// misses issued under other misses (a core with several MSHRs).
pub(super) fn tester_finds_no_violation(
    p: Preset,
    proto: crate::flash::flashpoint::FlashProtocol,
    seed: u64,
) {
    use crate::tester::{run, TesterConfig};
    let mut p = p.with_procs(16).unwrap();
    p.flash.as_mut().unwrap().protocol = proto;
    let cfg = TesterConfig {
        ops: 30_000,
        seed,
        lines: 4,
        fault: crate::fault::Fault::None,
    };
    let r = run(p, &cfg).unwrap();
    assert_eq!(r.violations, 0, "{proto:?} {seed}: {:?}", r.first_violation);
    assert!(
        r.nacks > 0 && r.invalidations > 0 && r.interventions > 0,
        "{r:?}"
    );
    assert!(r.misses_under_misses > 1_000, "{r:?}");
}

/// Two plain loads to two lines homed on the other node, then their use, on one processor
/// of `flash-r10k` with `mshrs` MSHRs: over that sequence, (cycles, total miss cycles,
/// apparent miss cycles), and the misses issued under misses.
fn two_remote_loads(mshrs: u32, second: bool) -> ([u64; 3], u64) {
    let mut p = Preset::builtin("flash-r10k")
        .unwrap()
        .with_procs(2)
        .unwrap();
    p.cpu.nonblocking.as_mut().unwrap().mshrs = mshrs;
    let mut m = Machine::new(p, Options::default()).unwrap();
    let a = m.setup().alloc("array", 1 << 20, Place::Node(1));
    let out = Rc::new(Cell::new([0; 3]));
    let o = out.clone();
    m.spawn(0, move |ctx| {
        ctx.int(4096);
        let at = |c: &crate::cpu::Counters| [c.cycles(), c.miss_cycles, c.miss_stall_cycles];
        let before = at(ctx.counters());
        ctx.load(a);
        if second {
            // Another L2 set (the next line), so nothing but the MSHRs orders the two.
            ctx.load(a + 128);
        }
        ctx.use_loads();
        let after = at(ctx.counters());
        o.set([0, 1, 2].map(|i| after[i] - before[i]));
    });
    m.run(Some(100_000_000)).unwrap();
    (out.get(), m.state().cores[0].under_misses)
}

/// Several MSHRs (`cpu::nonblocking`): two misses to different lines overlap. The second's
/// request leaves before the first's data arrives, so the pair costs about one remote
/// latency with four MSHRs and two with one; the ground truth's miss cycles (each miss from
/// its request to its data) are two latencies either way, and the stall the processor sees
/// is what is not overlapped.
#[test]
fn two_misses_overlap_with_four_mshrs() {
    let ([one, span, _], _) = two_remote_loads(4, false);
    assert!(
        one > 100 && span + 20 >= one,
        "a remote miss on FLASH: {one} {span}"
    );
    let ([t1, total1, stall1], under1) = two_remote_loads(1, true);
    let ([t4, total4, stall4], under4) = two_remote_loads(4, true);
    assert_eq!((under1, under4), (0, 1));
    // One MSHR: the second miss waits for the first, then takes its own latency; the
    // processor stalls for both.
    assert!(t1 >= 2 * one - 10, "{t1} {one}");
    assert!(
        total1 + 20 >= 2 * span && stall1 + 20 >= total1,
        "{total1} {stall1} {span}"
    );
    // Four: the second leaves a few cycles after the first and completes soon after it
    // (behind it in the two PPs' queues: the handlers' occupancy) ...
    assert!(t4 < one + one / 4, "{t4} {one}");
    // ... each miss is still a full remote latency in the ground truth ...
    assert!(total4 + 20 >= 2 * span, "{total4} {span}");
    // ... but the processor stalls for about one of them: the second's latency ran under
    // the first's.
    assert!(stall4 + span <= total4 + 20, "{stall4} {total4} {span}");
    assert!(stall4 + span / 2 < stall1, "{stall4} {stall1} {span}");
}

/// Two remote plain loads on `flash-r10k` (4 MSHRs) with `active_list`/`address_queue` set
/// to `window` and `ints` integer instructions and `hits` L1-hitting loads between them:
/// the cycles of the sequence up to the use of both, and the misses issued under misses.
fn two_loads_apart(window: (u32, u32), ints: u64, hits: u64) -> (u64, u64) {
    let mut p = Preset::builtin("flash-r10k")
        .unwrap()
        .with_procs(2)
        .unwrap();
    let nb = p.cpu.nonblocking.as_mut().unwrap();
    (nb.active_list, nb.address_queue) = window;
    let mut m = Machine::new(p, Options::default()).unwrap();
    let a = m.setup().alloc("array", 1 << 20, Place::Node(1));
    let b = m.setup().alloc("local", 4096, Place::Node(0));
    let out = Rc::new(Cell::new(0));
    let o = out.clone();
    m.spawn(0, move |ctx| {
        ctx.load(b);
        ctx.use_loads();
        ctx.int(4096);
        let before = ctx.counters().cycles();
        ctx.load(a);
        ctx.int(ints);
        for _ in 0..hits {
            ctx.load(b);
        }
        ctx.load(a + 128);
        ctx.use_loads();
        o.set(ctx.counters().cycles() - before);
    });
    m.run(Some(100_000_000)).unwrap();
    (out.get(), m.state().cores[0].under_misses)
}

/// The active list and the address queue (`cpu::nonblocking`, "The active list"): a miss
/// decoded 32 or more instructions (or 16 or more loads and stores) after the oldest
/// outstanding one waits for it to graduate; within the window the two overlap as before.
/// Fails without the limit (the second miss then always overlaps the first).
#[test]
fn active_list_bounds_misses_under_a_miss() {
    let (free, under) = two_loads_apart((0, 0), 40, 0);
    assert_eq!(under, 1);
    // Within the window: the same as without a limit.
    let (within, under) = two_loads_apart((32, 16), 20, 0);
    assert_eq!(under, 1);
    assert!(within <= free, "{within} {free}");
    // 40 instructions after the first miss (the load and 40 integer ones): the active list
    // is full, the second miss leaves after the first's data, a remote latency later.
    let (full, under) = two_loads_apart((32, 0), 40, 0);
    assert_eq!(under, 0);
    assert!(full > free + 100, "{full} {free}");
    // 16 loads (hits) after it: the address queue is full; 8 fit.
    let (q8, u8) = two_loads_apart((0, 16), 0, 8);
    let (q16, u16) = two_loads_apart((0, 16), 0, 16);
    assert_eq!((u8, u16), (1, 0), "{q8} {q16}");
    assert!(q16 > q8 + 100, "{q8} {q16}");
}
