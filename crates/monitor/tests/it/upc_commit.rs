//! The A2 commit events counted from retirements (`PEVT_XU_BR_COMMIT`,
//! `PEVT_XU_BR_TAKEN_COMMIT`, `PEVT_LSU_COMMIT_CACHEABLE_LDS`, `PEVT_LSU_COMMIT_STS`;
//! `monitor::upc::events::a2_ops`, docs/upc.md "Commit events"): exact per hardware thread
//! against the machine's ground truth, and the PAPI presets they make available.

use machine::cpu::op::Op;
use machine::Machine;
use monitor::upc::config::Config;
use monitor::upc::counting::ops_in;
use monitor::upc::events::{a2, a2_ops, Group};
use monitor::upc::probe::Upc;
use std::cell::RefCell;
use std::rc::Rc;

/// Iterations of each thread's loop.
const N: u64 = 3000;

/// 8 threads on 2 `bgq` cores x 4 hardware threads; after an idle start (the counters start
/// before anything retires), thread `t` runs `N` iterations of: loads of 1..32 bytes, stores
/// of 1..32 bytes, a taken and a not-taken conditional branch (their share varying with `t`),
/// an unconditional and an indirect branch, integer work, and every 16th iteration an atomic
/// add to a shared word (a lwarx/stwcx. loop: `Larx`, `Stcx`, and its branch).
fn run(cfg: &Config) -> (Machine, Rc<RefCell<Upc>>) {
    let (mut m, upc) = crate::bgq2_with_upc(cfg);
    let data = m.setup().alloc("data", 8 << 14, machine::Place::FirstTouch);
    let word = m.setup().alloc("word", 128, machine::Place::FirstTouch);
    for t in 0..8u64 {
        m.spawn(t as usize, move |ctx| {
            ctx.idle(1000);
            let base = data + (t << 14);
            for i in 0..N {
                let a = base + (i * 40) % (1 << 14);
                let size = [1, 2, 4, 8, 16, 32][(i % 6) as usize];
                ctx.load_n(a & !31, size);
                ctx.store_n((a + 64) & !31, size);
                ctx.branch(i % (2 + t) == 0);
                ctx.branch(i % 3 != 0);
                ctx.op(Op::BrUncond, 1);
                if i % 5 == t % 5 {
                    ctx.op(Op::BrIndirect, 1);
                }
                ctx.int(1 + i % 3);
                if i % 16 == 0 {
                    ctx.fetch_add(word, 1);
                }
            }
        });
    }
    m.run(None).unwrap();
    (m, upc)
}

/// The four commit events on each hardware thread's own counter (16 counters), and the
/// opcode groups they overlap (BRC, BRU, LD, ST) over all threads: every counter of both
/// program cores equals the machine's count of its `Op`s on its hardware thread (the ground
/// truth: the software threads' exact fine-class counts, `sched::context_counts`), and
/// UPC_C's total equals it; and the sums agree (branches = BRC + BRU; loads = LD + QLD +
/// larx).
#[test]
fn commit_events_count_each_threads_retirements_exactly() {
    let events = [
        "PEVT_XU_BR_COMMIT",
        "PEVT_XU_BR_TAKEN_COMMIT",
        "PEVT_LSU_COMMIT_CACHEABLE_LDS",
        "PEVT_LSU_COMMIT_STS",
    ];
    let mut text = String::new();
    for k in 0..4 {
        for (e, name) in events.iter().enumerate() {
            text += &format!(
                "[[counter]]\nindex = {}\nevent = \"{name}\"\nthreads = [{k}]\n",
                4 * k + e
            );
        }
    }
    for (i, name) in [
        "PEVT_INST_XU_BRC",
        "PEVT_INST_XU_BRU",
        "PEVT_INST_XU_LD",
        "PEVT_INST_XU_ST",
    ]
    .iter()
    .enumerate()
    {
        text += &format!("[[counter]]\nindex = {}\nevent = \"{name}\"\n", 16 + i);
    }
    let cfg = Config::from_toml(&text, "commit.toml").unwrap();
    let (m, upc) = run(&cfg);
    let st = m.state();
    let u = upc.borrow();
    for core in 0..2 {
        let mut by_sub = [0u64; a2::COUNT];
        for (i, c) in u.units[core].counters.iter().enumerate().take(20) {
            let what = format!("core {core} counter {i}");
            assert_eq!(c.lost, 0, "{what}");
            assert_eq!(u.counted(c.sram), c.exact, "{what}: UPC_C's total");
            let (mask, ctxs) = if c.cfg.group == Group::A2 as u8 {
                (a2_ops(c.cfg.event), vec![core * 4 + i / 4])
            } else {
                let mask = (0..Op::COUNT)
                    .filter(|&o| monitor::upc::events::OP_GROUPS[o].contains(&c.cfg.event))
                    .fold(0u64, |m, o| m | 1 << o);
                (mask, (core * 4..core * 4 + 4).collect())
            };
            let want: u64 = ctxs
                .iter()
                .map(|&x| ops_in(mask, &machine::sched::context_counts(&st.sched, x).ops()))
                .sum();
            assert_eq!(c.exact, want, "{what} ({})", c.cfg.event);
            assert!(want > N, "{what}: {want}");
            if c.cfg.group == Group::A2 as u8 {
                by_sub[c.cfg.event as usize] += c.exact;
            }
        }
        let n = |i: usize| u.units[core].counters[i].exact;
        let ops = st.cores[core].cnt.ops();
        assert_eq!(
            by_sub[a2::BR_COMMIT as usize],
            n(16) + n(17),
            "core {core}: BRC + BRU"
        );
        assert_eq!(
            by_sub[a2::BR_TAKEN as usize],
            ops[Op::BrCondTaken as usize] + n(17),
            "core {core}: taken = conditional taken + BRU"
        );
        assert_eq!(
            by_sub[a2::LDS as usize],
            n(18) + ops[Op::Load32 as usize] + ops[Op::Larx as usize],
            "core {core}: loads"
        );
        assert_eq!(
            by_sub[a2::STS as usize],
            n(19) + ops[Op::Store32 as usize] + ops[Op::Stcx as usize],
            "core {core}: stores"
        );
        assert!(ops[Op::Larx as usize] > 0 && ops[Op::Stcx as usize] > 0);
    }
}

/// The seven PAPI presets the commit events make available, from a configuration file over
/// the same program: each preset's value (PAPI's formula over UPC_C's counts) equals its exact
/// value and the machine's counts of the instructions the formula stands for. `PAPI_BR_NTK`
/// is PAPI's formula, the not-taken conditional branches less the unconditional ones (PAPI
/// subtracts those twice), and the report gives beside it the exact not-taken count;
/// `PAPI_BR_TKN` is the taken conditional branches.
#[test]
fn commit_presets_equal_the_machines_counts() {
    let names = [
        "PAPI_BR_INS",
        "PAPI_BR_NTK",
        "PAPI_BR_TKN",
        "PAPI_L1_DCR",
        "PAPI_L1_DCW",
        "PAPI_LD_INS",
        "PAPI_SR_INS",
    ];
    let mut text = String::new();
    let mut at = 0;
    for n in names {
        text += &format!("[[counter]]\nindex = {at}\nevent = \"{n}\"\n");
        at += monitor::upc::papi::preset(n).unwrap().events.len();
    }
    assert_eq!(at, 11);
    let cfg = Config::from_toml(&text, "presets.toml").unwrap();
    let (m, upc) = run(&cfg);
    let st = m.state();
    let u = upc.borrow();
    let j = monitor::upc::report::json(&u, &cfg, 0);
    let papi = j["papi"].as_array().unwrap();
    assert_eq!(papi.len(), names.len());
    let mut ops = [0u64; Op::COUNT];
    for c in &st.cores {
        for (x, y) in ops.iter_mut().zip(c.cnt.ops()) {
            *x += y;
        }
    }
    let n = |o: Op| ops[o as usize] as i64;
    let bru = n(Op::BrUncond) + n(Op::BrIndirect);
    let loads = ops_in(a2_ops(a2::LDS), &ops) as i64;
    let stores = ops_in(a2_ops(a2::STS), &ops) as i64;
    let want = [
        n(Op::BrCondTaken) + n(Op::BrCondNotTaken) + bru,
        n(Op::BrCondNotTaken) - 2 * bru,
        n(Op::BrCondTaken),
        loads,
        stores,
        // No uncached load in this program: PAPI's sum adds nothing to the loads.
        loads,
        stores,
    ];
    for (i, p) in papi.iter().enumerate() {
        assert_eq!(p["preset"], names[i]);
        assert_eq!(p["value"], p["exact"], "{p}");
        assert_eq!(p["value"].as_i64().unwrap(), want[i], "{p}");
    }
    assert!(want[1] < 0, "PAPI's BR_NTK here: {}", want[1]);
    assert_eq!(papi[1]["meaning"]["exact"], n(Op::BrCondNotTaken));
    assert_eq!(papi[5]["meaning"]["exact"], loads);
    assert!(papi[0].get("meaning").is_none());
    assert!(n(Op::BrCondNotTaken) > 1000 && loads > 8 * N as i64);
}
