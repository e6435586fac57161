//! Atomics as lwarx/stwcx. loops on the `bgq` preset (`cpu.atomics = "larx-stcx"`,
//! `machine::cpu::reserve`), counted by the UPC's A2 events (`PEVT_LSU_LARX_FINISHED`,
//! `PEVT_LSU_COMMIT_STCX`, `PEVT_XU_STCX_FAIL`) and the `PEVT_INST_XU_LSCX` opcode group.

use machine::cpu::op::Op;
use machine::probe::CoreEvent;
use machine::{Machine, Options, Preset};
use monitor::upc::config::Config;
use std::cell::RefCell;
use std::rc::Rc;

/// Per-thread counters on core `core`: larx, stcx and stcx-fail over the four threads, each
/// thread's stcx failures, and the lwarx/stwcx. opcode group.
const CFG: &str = r#"
[[counter]]
index = 0
event = "PEVT_LSU_LARX_FINISHED"
threads = [0, 1, 2, 3]
[[counter]]
index = 1
event = "PEVT_LSU_COMMIT_STCX"
threads = [0, 1, 2, 3]
[[counter]]
index = 2
event = "PEVT_XU_STCX_FAIL"
threads = [0, 1, 2, 3]
[[counter]]
index = 3
event = "PEVT_XU_STCX_FAIL"
threads = [0]
[[counter]]
index = 4
event = "PEVT_XU_STCX_FAIL"
threads = [1]
[[counter]]
index = 5
event = "PEVT_XU_STCX_FAIL"
threads = [2]
[[counter]]
index = 6
event = "PEVT_XU_STCX_FAIL"
threads = [3]
[[counter]]
index = 7
event = "PEVT_INST_XU_LSCX"
threads = [0, 1, 2, 3]
"#;

/// A contended counter on `bgq` with 2 program cores x 4 hardware threads: 8 threads each
/// `fetch_add` 1 to one shared word 300 times. Every old value 0..2399 is returned exactly once
/// (no update lost), the machine's stcx failures equal the reservations it saw lost (the ground
/// truth of why a stwcx. fails) and the stwcx. retired beyond one per increment, and every UPC
/// counter equals the machine's exact count per thread and per core.
#[test]
fn contended_fetch_add_is_a_larx_stcx_loop_counted_exactly() {
    const THREADS: usize = 8;
    const K: u64 = 300;
    let cfg = Config::from_toml(CFG, "larx.toml").unwrap();
    let (mut m, upc) = crate::bgq2_with_upc(&cfg);
    let word = m.setup().alloc("counter", 128, machine::Place::FirstTouch);
    let olds = Rc::new(RefCell::new(Vec::new()));
    for t in 0..THREADS {
        let out = olds.clone();
        m.spawn(t, move |ctx| {
            // Past the UPC's synchronous start (33 x2 cycles down the chain).
            ctx.idle(1000);
            for i in 0..K {
                let old = ctx.fetch_add(word, 1);
                out.borrow_mut().push(old);
                ctx.int(1 + (i + t as u64) % 5);
            }
        });
    }
    m.run(None).unwrap();
    let mut olds = olds.borrow().clone();
    olds.sort_unstable();
    assert_eq!(olds, (0..THREADS as u64 * K).collect::<Vec<_>>());

    let st = m.state();
    let truth = st.truth.as_ref().unwrap();
    let tpc = 4;
    let ev = |hw: usize, e: CoreEvent| truth.core_events[hw][e as usize];
    let (mut fails, mut stcx, mut larx, mut lost, mut lscx_ops) = (0, 0, 0, 0, 0);
    for core in 0..2 {
        let ops = st.cores[core].cnt.ops();
        lscx_ops += ops[Op::Larx as usize] + ops[Op::Stcx as usize];
        for k in 0..tpc {
            let hw = core * tpc + k;
            fails += ev(hw, CoreEvent::StcxFail);
            stcx += ev(hw, CoreEvent::Stcx);
            larx += ev(hw, CoreEvent::LarxFinished);
            lost += st.resv.lost[hw];
        }
        let stcx_ops = ops[Op::Stcx as usize];
        let core_fails: u64 = (0..tpc)
            .map(|k| ev(core * tpc + k, CoreEvent::StcxFail))
            .sum();
        // Each of the core's 4 x 300 increments took one successful stwcx.
        assert_eq!(stcx_ops, 4 * K + core_fails, "core {core}");
    }
    assert!(fails > 50, "contention makes stwcx. fail: {fails}");
    assert_eq!(fails, lost, "every failure is a lost reservation");
    assert_eq!(stcx, THREADS as u64 * K + fails);
    assert_eq!(larx, stcx);
    assert_eq!(lscx_ops, larx + stcx);

    let u = upc.borrow();
    for core in 0..2 {
        let c = &u.units[core].counters;
        let per = |k: usize, e: CoreEvent| ev(core * tpc + k, e);
        let all = |e: CoreEvent| (0..tpc).map(|k| per(k, e)).sum::<u64>();
        let ops = st.cores[core].cnt.ops();
        let want = [
            all(CoreEvent::LarxFinished),
            all(CoreEvent::Stcx),
            all(CoreEvent::StcxFail),
            per(0, CoreEvent::StcxFail),
            per(1, CoreEvent::StcxFail),
            per(2, CoreEvent::StcxFail),
            per(3, CoreEvent::StcxFail),
            ops[Op::Larx as usize] + ops[Op::Stcx as usize],
        ];
        for (i, w) in want.iter().enumerate() {
            assert_eq!(c[i].lost, 0);
            assert_eq!(c[i].exact, *w, "core {core} counter {i}");
            assert_eq!(u.counted(c[i].sram), *w, "core {core} counter {i}");
        }
        println!("core {core}: UPC larx/stcx/fail {:?}", &want[..3]);
    }
}

/// Other presets keep the one-step atomic: `cmp`'s `fetch_add` retires one store, no
/// `Larx`/`Stcx` op, and never fails.
#[test]
fn cmp_keeps_one_step_atomics() {
    let mut m = Machine::new(Preset::builtin("cmp").unwrap(), Options::default()).unwrap();
    let word = m.setup().alloc("counter", 128, machine::Place::FirstTouch);
    for t in 0..4 {
        m.spawn(t, move |ctx| {
            for _ in 0..100 {
                ctx.fetch_add(word, 1);
            }
        });
    }
    m.run(None).unwrap();
    let st = m.state();
    let truth = st.truth.as_ref().unwrap();
    for core in 0..4 {
        let ops = st.cores[core].cnt.ops();
        assert_eq!(ops[Op::Stcx as usize] + ops[Op::Larx as usize], 0);
        assert_eq!(truth.core_events[core][CoreEvent::Stcx as usize], 100);
        assert_eq!(truth.core_events[core][CoreEvent::StcxFail as usize], 0);
    }
}
