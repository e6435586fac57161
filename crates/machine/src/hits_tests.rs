//! `Ctx::traced_hits` (`cpu/hits.rs`) against the one-by-one replay it shortens: the same
//! records give the same counts, times and ground truth, with and without a TLB, on a
//! machine whose other processor's misses move the run-ahead bound.

use crate::addr::Place;
use crate::config::Preset;
use crate::cpu::ctx::{Traced, TracedRef};
use crate::sim::{Machine, Options};

/// A deterministic mix of data references (loads, stores, modifies of 1 to 16 bytes, some
/// spanning two lines) and code blocks (1 to 200 bytes) over `data` and `code` regions
/// larger than the L1s, so that hits, misses, page changes and yields all occur.
fn records(seed: u64, n: usize, data: u64, code: u64) -> Vec<Traced> {
    let mut x = seed | 1;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut pc = code;
    (0..n)
        .map(|_| {
            let r = next();
            if r % 3 == 0 {
                // Mostly sequential code, now and then a jump.
                pc = if r % 29 == 0 {
                    code + (r >> 8) % (1 << 16)
                } else {
                    pc + 40
                };
                Traced::Code {
                    addr: pc,
                    bytes: (r >> 32) % 200,
                }
            } else {
                let write = r % 5 < 2;
                // Mostly a small working set, now and then anywhere in 256 KiB.
                let span = if r % 17 == 0 { 1 << 18 } else { 1 << 12 };
                Traced::Data(TracedRef {
                    write,
                    modify: write && r % 7 == 0,
                    addr: data + (r >> 16) % span,
                    size: [1, 2, 4, 8, 16][(r >> 40) as usize % 5],
                    before: (r >> 48) % 9,
                })
            }
        })
        .collect()
}

/// Runs two threads replaying their records, in runs (`hits`) or one by one; returns each
/// core's counters and time, the run's summary and the ground truth's miss totals.
fn run(hits: bool, tlb: bool, line_bytes: u64) -> Vec<String> {
    let mut p = Preset::builtin("numachine").unwrap().with_procs(2).unwrap();
    p.cpu.tlb.enabled = tlb;
    p.caches.l1d.line_bytes = line_bytes;
    p.caches.l1i.line_bytes = line_bytes;
    p.validate().unwrap();
    let mut m = Machine::new(p, Options::default()).unwrap();
    let data = m.setup().alloc("data", 1 << 19, Place::RoundRobin);
    let code = m.setup().alloc("code", 1 << 17, Place::RoundRobin);
    for t in 0..2 {
        let recs = records(t as u64 + 7, 20_000, data + t as u64 * (1 << 18), code);
        m.spawn(t, move |ctx| {
            ctx.code_from_trace();
            let mut i = 0;
            while i < recs.len() {
                if hits {
                    i = ctx.traced_hits(&recs, i, |&r| r);
                    if i == recs.len() {
                        break;
                    }
                }
                ctx.traced_one(recs[i]);
                i += 1;
            }
        });
    }
    let sum = m.run(None).unwrap();
    let st = m.state();
    let mut out: Vec<String> = st
        .cores
        .iter()
        .map(|c| format!("{} {} {:?}", c.now, c.code_at, c.cnt))
        .collect();
    out.push(format!("{} {} {}", sum.ticks, sum.cycles, sum.references));
    out.push(format!("{:?}", st.truth.as_ref().map(|t| t.total())));
    out
}

#[test]
fn runs_of_hits_count_and_time_as_one_by_one() {
    // 32-byte lines (`numachine`'s: `hit_run`'s copy with a constant shift) and 64.
    for (tlb, line) in [(false, 32), (true, 32), (false, 64), (true, 64)] {
        let (one, runs) = (run(false, tlb, line), run(true, tlb, line));
        assert_eq!(one, runs, "tlb {tlb}, {line}-byte lines");
        // The records hit, miss and cross pages: the runs were taken and also left.
        assert!(one[0].contains("l1d_misses: ") && !one[0].contains("l1d_misses: 0,"));
    }
}
