//! Informing memory operations (seed 000, Table 4.10 item 8) against the exact counters.

use crate::addr::Place;
use crate::config::Preset;
use crate::cpu::ctx::{MissInfo, Served};
use crate::sim::{Machine, Options};
use std::cell::RefCell;
use std::rc::Rc;

/// One thread sweeps `bytes` `passes` times, with the miss trap on (`trap`) or with
/// informing loads; returns the machine and what the program saw.
fn sweep(trap: bool, bytes: u64, passes: u64) -> (Machine, Vec<MissInfo>, [u64; 3]) {
    let p = Preset::builtin("numachine").unwrap().with_procs(4).unwrap();
    let mut m = Machine::new(p, Options::default()).unwrap();
    let a = m.setup().alloc("array", bytes, Place::RoundRobin);
    let seen = Rc::new(RefCell::new(Vec::new()));
    let levels = Rc::new(RefCell::new([0u64; 3]));
    let (s2, l2) = (seen.clone(), levels.clone());
    m.spawn(0, move |ctx| {
        if trap {
            let s3 = s2.clone();
            ctx.on_miss(Some(Box::new(move |ctx, info| {
                s3.borrow_mut().push(info);
                ctx.int(2);
            })));
        }
        for _ in 0..passes {
            for i in 0..bytes / 8 {
                if trap {
                    ctx.load(a + i * 8);
                } else {
                    let k = match ctx.load_informing(a + i * 8) {
                        Served::L1 => 0,
                        Served::L2 => 1,
                        Served::Memory => 2,
                    };
                    l2.borrow_mut()[k] += 1;
                }
            }
        }
    });
    m.run(Some(1_000_000_000)).unwrap();
    let s = seen.borrow().clone();
    let l = *levels.borrow();
    (m, s, l)
}

#[test]
fn the_miss_trap_fires_once_per_l1_data_miss_with_its_level_and_stall() {
    let (m, seen, _) = sweep(true, 64 * 1024, 3);
    let c = &m.state().cores[0].cnt;
    assert_eq!(seen.len() as u64, c.l1d_misses);
    let mem = seen.iter().filter(|i| i.served == Served::Memory).count() as u64;
    // 64 KiB / 64-byte L2 lines: the first pass fetches each L2 line once; everything else
    // is an L1 miss served by the L2 (32-byte L1 lines). The other L2 misses are the
    // code's (2 KiB of it, 32 lines, fetched once: `l2_misses` counts both sides).
    assert_eq!(mem, 1024);
    assert_eq!(c.l2_misses, mem + 32);
    assert_eq!(seen.len() as u64, 3 * 2048);
    let l2_hit = m.state().preset.caches.last_private().hit_cycles as u64;
    assert!(seen
        .iter()
        .filter(|i| i.served == Served::L2)
        .all(|i| i.cycles == l2_hit));
    assert!(seen
        .iter()
        .filter(|i| i.served == Served::Memory)
        .all(|i| i.cycles > l2_hit));
    assert!(seen.iter().all(|i| !i.write));
}

#[test]
fn informing_loads_report_the_level_the_counters_saw() {
    let (m, seen, levels) = sweep(false, 64 * 1024, 3);
    assert!(seen.is_empty());
    let c = &m.state().cores[0].cnt;
    assert_eq!(levels[0], c.l1d_hits);
    assert_eq!(levels[1] + levels[2], c.l1d_misses);
    assert_eq!(levels[2], 1024, "one memory fetch per 64-byte L2 line");
    assert_eq!(c.l2_misses, levels[2] + 32, "plus the 32 lines of code");
    assert_eq!(levels.iter().sum::<u64>(), 3 * 8192);
}

#[test]
fn the_trap_costs_two_taken_branches_plus_its_handler() {
    let (with, seen, _) = sweep(true, 32 * 1024, 1);
    let p = Preset::builtin("numachine").unwrap().with_procs(4).unwrap();
    let mut m = Machine::new(p, Options::default()).unwrap();
    let a = m.setup().alloc("array", 32 * 1024, Place::RoundRobin);
    m.spawn(0, move |ctx| {
        for i in 0..32 * 1024 / 8 {
            ctx.load(a + i * 8);
        }
    });
    m.run(Some(1_000_000_000)).unwrap();
    let (c, c0) = (&with.state().cores[0].cnt, &m.state().cores[0].cnt);
    let n = seen.len() as u64;
    // Branch-and-link and return (taken branches), and the handler's two instructions.
    assert_eq!(c.instructions() - c0.instructions(), n * 4);
    assert_eq!(c.instr[2] - c0.instr[2], 2 * n);
}
