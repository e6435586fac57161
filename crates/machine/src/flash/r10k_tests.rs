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
    assert!(nb.stores && nb.mshrs == 1);
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
    use crate::tester::{run, TesterConfig};
    for (proto, seed) in [
        (FlashProtocol::Dp, 1),
        (FlashProtocol::Dp, 2),
        (FlashProtocol::FpProc, 3),
    ] {
        let mut p = Preset::builtin("flash-r10k")
            .unwrap()
            .with_procs(16)
            .unwrap();
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
    }
}
