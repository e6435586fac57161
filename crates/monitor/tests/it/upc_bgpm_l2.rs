//! BGPM's L2 unit for a simulated program (`monitor::upc::bgpm_l2`; docs/upc.md, "BGPM's L2
//! unit in a program"): `PEVT_L2_*` event sets, combined over the slices or per slice, started
//! and stopped by UPC_C's synchronous start, read as UPC_C's SRAM counters plus the slices'
//! low bits, against the machine's L2 events inside the chain's start-to-stop window; and the
//! driver's named errors.

use super::{bgq2_with_upc, contains_each, err, Record};
use machine::probe::{kind, Observation};
use monitor::upc::bgpm::{Bgpm, EventSet};
use monitor::upc::bgpm_mode::BgpmMode;
use monitor::upc::config::Config;
use monitor::upc::probe::{Command, Upc};
use std::cell::RefCell;
use std::rc::Rc;

const SLICES: usize = 16;
/// The events of both sets (L2 event numbers: hits, misses, line fetches).
const EVENTS: [usize; 3] = [0, 1, 3];

/// What the program read: phase 1 (combined) the 3 sums; phase 2 (per slice) the 3 sums and
/// the 3 x 16 slice counts.
#[derive(Default)]
struct Got {
    combined: Vec<u64>,
    sums: Vec<u64>,
    slices: Vec<[u64; SLICES]>,
    errors: Vec<String>,
}

/// The machine both tests run: 2 `bgq` cores with a UPC whose every UPC_P and UPC_L2 counter
/// is configured, the machine's L2 slice events recorded (the exact counts), `regions`
/// regions of 256 KiB allocated as "regions" (their size and base returned) and a barrier of
/// the 2 threads.
type TwoCores = (
    machine::Machine,
    Rc<RefCell<Upc>>,
    Rc<RefCell<Vec<Observation>>>,
    u64,
    u64,
    machine::Barrier,
);

fn two_cores_with_l2_log(regions: u64) -> TwoCores {
    let cfg = Config {
        p: vec![Default::default(); 24],
        l2: vec![Default::default(); 16],
        ..Config::default()
    };
    let (mut m, upc) = bgq2_with_upc(&cfg);
    let log = Record::attach(&mut m, kind::L2_SLICE);
    let region = 256 * 1024;
    let base = m
        .setup()
        .alloc("regions", regions * region, machine::Place::Default);
    let b = m.setup().barrier("b", 2);
    (m, upc, log, region, base, b)
}

/// The chain's start-to-stop windows (effective ticks) after the monitor's own start.
fn run_windows(cmds: &[Command]) -> Vec<(u64, u64)> {
    cmds.windows(2)
        .skip(1)
        .filter(|w| w[0].run && !w[1].run)
        .map(|w| (w[0].effective, w[1].effective))
        .collect()
}

/// Loads and stores over `bytes` of a fresh region, then loads over it again (L2 misses and
/// line fetches, then L2 hits: the L1 holds 16 KiB).
fn work(ctx: &mut machine::Ctx, base: u64, bytes: u64) {
    for pass in 0..2 {
        for off in (0..bytes).step_by(128) {
            if pass == 0 && off % 256 == 0 {
                ctx.store(base + off);
            } else {
                ctx.load(base + off);
            }
        }
    }
}

/// Two threads on 2 `bgq` cores: thread 0 applies and starts an L2 set of the combined hits,
/// misses and line fetches, both threads touch 256 KiB each, thread 0 stops and reads; then
/// (a second node's BGPM) the same with the per-slice events, read per slice and summed. Each
/// of the 3 sums and 48 slice counts equals the machine's L2 events of that slice (or of
/// all) at the x2 cycles the chain's start and stop let count; the driver's errors come by
/// name: combined and per-slice events mixed on the node (`BGPM_ECONF_L2_COMBINE`, also in a
/// second set), units mixed (`BGPM_ECONF_UNIT`, both ways), a slice read of a combined set
/// (`BGPM_EINV_OP`) and of slice 16 (`BGPM_EINV_L2_SLICE`), an I/O unit event and a
/// speculation event refused by name.
#[test]
fn l2_event_sets_equal_the_slices_exact_counts() {
    let (mut m, upc, log, region, base, b) = two_cores_with_l2_log(4);
    let got: Rc<RefCell<Got>> = Default::default();
    for t in 0..2u64 {
        let got = got.clone();
        m.spawn(t as usize, move |ctx| {
            let mut set: Option<EventSet> = None;
            for phase in 0..2u64 {
                if t == 0 {
                    let node = Bgpm::new();
                    node.init(ctx, BgpmMode::SwDistrib).unwrap();
                    let mut s = node.create_event_set(ctx).unwrap();
                    let suffix = if phase == 0 { "" } else { "_SLICE" };
                    for n in ["HITS", "MISSES", "FETCH_LINE"] {
                        s.add(&format!("PEVT_L2_{n}{suffix}"), 0xf).unwrap();
                    }
                    let mut g = got.borrow_mut();
                    let other = if phase == 0 { "_SLICE" } else { "" };
                    g.errors
                        .push(err(s.add(&format!("PEVT_L2_MISSES{other}"), 1)));
                    let mut s2 = node.create_event_set(ctx).unwrap();
                    g.errors
                        .push(err(s2.add(&format!("PEVT_L2_HITS{other}"), 1)));
                    if phase == 0 {
                        g.errors.push(err(s.add("PEVT_CYCLES", 1)));
                        let mut p = node.create_event_set(ctx).unwrap();
                        p.add("PEVT_CYCLES", 1).unwrap();
                        g.errors.push(err(p.add("PEVT_L2_HITS", 1)));
                        g.errors.push(err(p.add("PEVT_MU_PKT_INJ", 1)));
                        g.errors.push(err(p.add("PEVT_L2_SPEC_RETRY", 1)));
                        g.errors.push(err(s.read_slice(ctx, 0, 0)));
                    } else {
                        g.errors.push(err(s.read_slice(ctx, 16, 0)));
                    }
                    drop(g);
                    s.apply(ctx);
                    s.start(ctx);
                    set = Some(s);
                }
                ctx.barrier(b);
                work(ctx, base + (2 * phase + t) * region, region);
                ctx.barrier(b);
                if let Some(s) = set.as_ref().filter(|_| t == 0) {
                    s.stop(ctx);
                    let sums: Vec<u64> = (0..3).map(|i| s.read(ctx, i)).collect();
                    let mut g = got.borrow_mut();
                    if phase == 0 {
                        g.combined = sums;
                    } else {
                        g.sums = sums;
                        for i in 0..3 {
                            let mut per = [0; SLICES];
                            for (j, v) in per.iter_mut().enumerate() {
                                *v = s.read_slice(ctx, j, i).unwrap();
                            }
                            g.slices.push(per);
                        }
                    }
                }
                ctx.barrier(b);
            }
        });
    }
    m.run(None).unwrap();
    let u = upc.borrow();
    // The monitor's start at 0, then per phase: apply's stop (phase 1 only: the chain was
    // running), the set's start and its stop.
    let cmds = &u.c.commands;
    let windows = run_windows(cmds);
    assert_eq!(windows.len(), 2, "{cmds:?}");
    let mut exact = vec![[[0u64; SLICES]; 3]; 2];
    let mut all = [[0u64; 32]; SLICES];
    for o in log.borrow().iter() {
        if let Observation::L2Slice {
            slice, t, event, ..
        } = *o
        {
            all[slice as usize][event as usize] += 1;
            for (w, &(a, z)) in windows.iter().enumerate() {
                if let Some(i) = EVENTS.iter().position(|&e| e == event as usize) {
                    if (a..z).contains(&t) {
                        exact[w][i][slice as usize] += 1;
                    }
                }
            }
        }
    }
    // The log is the machine's ground truth.
    assert_eq!(
        all.to_vec(),
        m.state().truth.as_ref().unwrap().l2_events[..SLICES].to_vec()
    );
    let g = got.borrow();
    let sum = |w: usize, i: usize| exact[w][i].iter().sum::<u64>();
    println!("combined {:?}, per slice {:?}", g.combined, g.sums);
    for i in 0..3 {
        assert_eq!(g.combined[i], sum(0, i), "combined event {}", EVENTS[i]);
        assert_eq!(g.sums[i], sum(1, i), "per-slice sum of event {}", EVENTS[i]);
        assert_eq!(g.slices[i], exact[1][i], "slices of event {}", EVENTS[i]);
    }
    // Both threads' 256 KiB: 2,048 lines each, about a miss apiece, then hits.
    assert!(
        g.combined[1] > 4000 && g.combined[0] > 4000,
        "{:?}",
        g.combined
    );
    assert!(g.sums[1] > 4000, "{:?}", g.sums);
    assert!(g.slices[1].iter().all(|&n| n > 0), "{:?}", g.slices[1]);
    let want = [
        "PEVT_L2_MISSES_SLICE: BGPM_ECONF_L2_COMBINE: an L2 'slice' or 'combined' event was requested while the L2 mode is 'combined' or 'slice' respectively (the L2 mode is 'combined'",
        "PEVT_L2_HITS_SLICE: BGPM_ECONF_L2_COMBINE",
        "PEVT_CYCLES: BGPM_ECONF_UNIT: event id conflicts with unit assigned to event set (the set counts L2 unit events",
        "PEVT_L2_HITS: BGPM_ECONF_UNIT: event id conflicts with unit assigned to event set (the set counts Punit events",
        "PEVT_MU_PKT_INJ is an event of the I/O unit (Message Unit), which pmusim's machines do not have",
        "PEVT_L2_SPEC_RETRY is about speculation, which pmusim does not model",
        "Bgpm_L2_ReadEvent(slice 0, event 0): BGPM_EINV_OP: the set's events are combined",
        "PEVT_L2_MISSES: BGPM_ECONF_L2_COMBINE: an L2 'slice' or 'combined' event was requested while the L2 mode is 'combined' or 'slice' respectively (the L2 mode is 'slice'",
        "PEVT_L2_HITS: BGPM_ECONF_L2_COMBINE",
        "Bgpm_L2_ReadEvent(slice 16, event 0): BGPM_EINV_L2_SLICE",
    ];
    contains_each(&g.errors, &want);
}

/// What the overflow test's threads saw: per thread the overflow vectors their handler got,
/// thread 0's reads, the errors.
#[derive(Default)]
struct Ovf {
    masks: [Vec<u64>; 2],
    reads: Vec<u64>,
    overflows: u64,
    overshoots: Vec<u64>,
    errors: Vec<String>,
}

/// `Bgpm_SetOverflow` on a program's L2 set (docs/upc.md, "BGPM's L2 unit in a program"):
/// two threads on 2 `bgq` cores each apply a combined set of L2 hits (period 5,000, the same
/// node-wide threshold) and misses, and install a handler that calls the set's
/// `on_interrupt`; thread 0 starts, both touch 256 KiB 12 times, thread 0 stops and reads. The
/// reads equal the machine's hits and misses inside the chain's start-to-stop window
/// exactly, through every re-arm; the node had one overflow per 5,000 hits whose interrupt
/// came before the stop; every UPC_L2 interrupt reached both threads (UPC_P
/// `P_CINT_ENABLE`), each dated against the crossing of the combined count; the driver's
/// errors come by name (`BGPM_EINV_OVF`, `BGPM_EINV_EVT_IDX`, `BGPM_ETHRES_MISMATCH`,
/// `BGPM_EUNSUP_OVERFLOW`).
#[test]
fn l2_overflow_in_a_programs_set() {
    const PERIOD: u64 = 5000;
    let (mut m, upc, log, region, base, b) = two_cores_with_l2_log(2);
    let node = Bgpm::new();
    let got: Rc<RefCell<Ovf>> = Default::default();
    for t in 0..2usize {
        let (got, node) = (got.clone(), node.clone());
        m.spawn(t, move |ctx| {
            node.init(ctx, BgpmMode::SwDistrib).unwrap();
            let mut s = node.create_event_set(ctx).unwrap();
            s.add("PEVT_L2_HITS", 0xf).unwrap();
            s.add("PEVT_L2_MISSES", 0xf).unwrap();
            {
                let mut g = got.borrow_mut();
                g.errors.push(err(s.set_overflow(0, 0)));
                g.errors.push(err(s.set_overflow(0, 1 << 63 | 1)));
                g.errors.push(err(s.set_overflow(2, PERIOD)));
            }
            s.set_overflow(0, PERIOD).unwrap();
            if t == 1 {
                let mut g = got.borrow_mut();
                let mut s2 = node.create_event_set(ctx).unwrap();
                s2.add("PEVT_L2_HITS", 0xf).unwrap();
                g.errors.push(err(s2.set_overflow(0, 2 * PERIOD)));
                let other = Bgpm::new();
                other.init(ctx, BgpmMode::SwDistrib).unwrap();
                let mut s3 = other.create_event_set(ctx).unwrap();
                s3.add("PEVT_L2_HITS_SLICE", 0xf).unwrap();
                g.errors.push(err(s3.set_overflow(0, PERIOD)));
            }
            let s = Rc::new(RefCell::new(s));
            let (h, hg) = (s.clone(), got.clone());
            ctx.on_interrupt(Box::new(move |ctx, v| {
                if let Ok(mut s) = h.try_borrow_mut() {
                    let mask = s.on_interrupt(ctx, v);
                    hg.borrow_mut().masks[t].push(mask);
                }
            }));
            if t == 0 {
                s.borrow().apply(ctx);
            }
            ctx.barrier(b);
            if t == 1 {
                s.borrow().apply(ctx);
            }
            ctx.barrier(b);
            if t == 0 {
                s.borrow().start(ctx);
            }
            ctx.barrier(b);
            // A miss per line, then 11 hits per line: about 2,800 hits a slice, so each
            // slice's 10-bit counter turns its top bit on about 5 times.
            let at = base + t as u64 * region;
            for pass in 0..12 {
                for off in (0..region).step_by(128) {
                    if pass == 0 && off % 256 == 0 {
                        ctx.store(at + off);
                    } else {
                        ctx.load(at + off);
                    }
                }
            }
            ctx.barrier(b);
            if t == 0 {
                let s = s.borrow();
                s.stop(ctx);
                let reads: Vec<u64> = (0..2).map(|i| s.read(ctx, i)).collect();
                let mut g = got.borrow_mut();
                g.reads = reads;
                g.overflows = s.overflows(0);
                g.overshoots = s.overshoots(0);
            }
        });
    }
    m.run(None).unwrap();
    let u = upc.borrow();
    let cmds = &u.c.commands;
    let (a, z) = *run_windows(cmds).last().unwrap();
    let mut exact = [0u64; 2];
    for o in log.borrow().iter() {
        if let Observation::L2Slice { t, event, .. } = *o {
            let e = event as usize;
            if e < 2 && (a..z).contains(&t) {
                exact[e] += 1;
            }
        }
    }
    let g = got.borrow();
    let cp = u.cp;
    let l2: Vec<_> = u.irqs.iter().filter(|q| u.units[q.pos].slice).collect();
    let hits: Vec<u64> = log
        .borrow()
        .iter()
        .filter_map(|o| match *o {
            Observation::L2Slice { t, event, .. } if event as usize == 0 => Some(t),
            _ => None,
        })
        .collect();
    // Per interrupt (on thread 0), cycles and hits from the crossing to the interrupt.
    let late: Vec<(u64, usize)> = l2
        .iter()
        .filter(|q| q.core == 0)
        .filter_map(|q| q.crossed.map(|c| (c, q.raised)))
        .map(|(c, r)| {
            (
                (r - c) / cp,
                hits.iter().filter(|&&t| t > c && t <= r).count(),
            )
        })
        .collect();
    println!(
        "reads {:?} exact {exact:?}, overflows {}, masks {:?} / {:?}, {} L2 interrupts, (cycles, hits) from crossing to interrupt {late:?}",
        g.reads,
        g.overflows,
        g.masks[0].iter().filter(|&&x| x != 0).count(),
        g.masks[1].iter().filter(|&&x| x != 0).count(),
        l2.len()
    );
    assert_eq!(
        g.reads,
        exact.to_vec(),
        "hits and misses through the re-arms"
    );
    assert!(exact[0] > 8 * PERIOD, "{exact:?}");
    // Every L2 interrupt went to both threads, dated against the combined count's crossing.
    let to = |core: u16| {
        l2.iter()
            .filter(|q| (q.core, q.context) == (core, 0))
            .count()
    };
    assert_eq!(to(0), to(1));
    assert_eq!(to(0) * 2, l2.len());
    // Each overflow the handlers accounted is one crossing raised (on both threads).
    assert!(g.overflows >= 1);
    assert_eq!(late.len() as u64, g.overflows, "{late:?}");
    // UPC_C raises the interrupt itself (the driver's `ccg_int_en` on the L2 combined group)
    // at the transfer whose whole-count hand-over wraps the combined SRAM counter (patent:
    // the UPC_L2 places its counters' data on the chain, 4 per data flit): at most one frame
    // (400 x2 cycles = 800 processor cycles) after the crossing, the driver's "up to 800
    // processor cycles to accumulate an event and detect an overflow" (`DocSwFeatures.h`,
    // "Slow Overflow"). Measured: 229 .. 644 cycles, 5 .. 15 hits, 9 overflows.
    assert!(late.iter().all(|&(c, _)| c <= 800), "{late:?}");
    assert_eq!(
        late,
        [
            (519, 12),
            (625, 14),
            (267, 6),
            (373, 8),
            (374, 8),
            (565, 12),
            (644, 15),
            (229, 5),
            (355, 8)
        ]
    );
    // Where the crossings fall: the k-th is the window's hit that wrapped the combined count.
    // The first is the 5,000th hit; each later one comes a period plus the overshoot the
    // handler's re-arm found after the one before (the re-arm counts the period from its own
    // moment, as the driver's `ResetAndGetIntMask` does), not at the next multiple of 5,000.
    let index = |c: u64| hits.iter().filter(|&&t| (a..=c).contains(&t)).count() as u64;
    let at: Vec<u64> = l2
        .iter()
        .filter(|q| q.core == 0)
        .filter_map(|q| q.crossed)
        .map(index)
        .collect();
    let mut want_at = vec![PERIOD];
    for v in &g.overshoots {
        want_at.push(want_at.last().unwrap() + PERIOD + v);
    }
    println!("crossings at hits {at:?}, overshoots {:?}", g.overshoots);
    assert_eq!(at, want_at[..at.len()], "overshoots {:?}", g.overshoots);
    // Each thread's set got each overflow at most once. Both threads are interrupted on the
    // same tick; the one that finds the leader latch held answers before the leader has
    // counted the overflow (mask 0) and gets it with the next (the driver's shared queue),
    // so a mask may stand for two overflows: here 6 non-zero masks a thread for 9.
    for t in 0..2 {
        let seen: u64 = g.masks[t].iter().map(|m| m & 1).sum();
        assert!(
            seen <= g.overflows && 2 * seen >= g.overflows,
            "thread {t}: {seen}"
        );
        assert!(g.masks[t].iter().all(|m| m & !1 == 0), "{:?}", g.masks[t]);
    }
    let want = [
        "Bgpm_SetOverflow(event 0, period 0): BGPM_EINV_OVF",
        "BGPM_EINV_OVF",
        "Bgpm_SetOverflow(event 2, period 5000): BGPM_EINV_EVT_IDX",
        "BGPM_EINV_OVF",
        "BGPM_EINV_OVF",
        "BGPM_EINV_EVT_IDX",
        "Bgpm_SetOverflow(event 0, period 10000): BGPM_ETHRES_MISMATCH: a different node wide overflow threshold (period 5000)",
        "BGPM_EUNSUP_OVERFLOW: overflow is not supported for the per-slice L2 events",
    ];
    contains_each(&g.errors, &want);
}
