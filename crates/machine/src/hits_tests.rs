//! `Ctx::traced_hits` and `Ctx::traced_run` (`cpu/hits.rs`) against the one-by-one replay
//! they shorten: the same records give the same counts, times and ground truth, with and
//! without a TLB, on a machine whose other processor's misses move the run-ahead bound.

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
            if r % 1009 == 0 {
                // A record the replay takes itself (`traced_run` returns at it).
                Traced::Other
            } else if r % 3 == 0 {
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

/// How a thread takes its records.
#[derive(Clone, Copy, Debug)]
enum Mode {
    OneByOne,
    /// `traced_hits`, then `traced_one` for the record that ended the run.
    Hits,
    /// `traced_run`, which stops at each `Traced::Other`.
    Run,
}

/// Runs two threads replaying their records as `mode` says; returns each core's counters
/// and time, the run's summary, the ground truth's miss totals and the `Other` records
/// seen.
fn run(mode: Mode, tlb: bool, line_bytes: u64) -> Vec<String> {
    run_watched(mode, tlb, line_bytes, None)
}

/// [`run`], with `watch` (if any) attached: a probe that looks at L2 accesses makes every L1
/// miss take `agent::l1_miss_full` instead of the quiet L2 hit. Also returns the L1 misses
/// of each structure and the L2 accesses the ground truth counted.
fn run_watched(
    mode: Mode,
    tlb: bool,
    line_bytes: u64,
    watch: Option<Box<dyn crate::probe::Probe>>,
) -> Vec<String> {
    let mut p = Preset::builtin("numachine").unwrap().with_procs(2).unwrap();
    p.cpu.tlb.enabled = tlb;
    p.caches.l1d.line_bytes = line_bytes;
    p.caches.l1i.line_bytes = line_bytes;
    p.validate().unwrap();
    let mut m = Machine::new(p, Options::default()).unwrap();
    let data = m.setup().alloc("data", 1 << 19, Place::RoundRobin);
    let code = m.setup().alloc("code", 1 << 17, Place::RoundRobin);
    if let Some(w) = watch {
        m.attach(w);
    }
    let others = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    for t in 0..2 {
        let recs = records(t as u64 + 7, 20_000, data + t as u64 * (1 << 18), code);
        let others = others.clone();
        m.spawn(t, move |ctx| {
            ctx.code_from_trace();
            let mut i = 0;
            while i < recs.len() {
                match mode {
                    Mode::OneByOne => {}
                    Mode::Hits => {
                        i = ctx.traced_hits(&recs, i, |&r| r);
                        if i == recs.len() {
                            break;
                        }
                    }
                    Mode::Run => {
                        i = ctx.traced_run(&recs, i, |&r| r);
                        if i == recs.len() {
                            break;
                        }
                        assert_eq!(recs[i], Traced::Other);
                        others.borrow_mut().push((t, i, ctx.cycles()));
                        i += 1;
                        continue;
                    }
                }
                if !ctx.traced_one(recs[i]) {
                    others.borrow_mut().push((t, i, ctx.cycles()));
                }
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
    let gt = st.truth.as_ref().unwrap();
    let rows = [data, code].map(|a| gt.l1.of_struct(st.map.structure_of(a)));
    out.push(format!("{rows:?} {}", gt.l2_accesses));
    let mut others = others.borrow().clone();
    others.sort();
    out.push(format!("{others:?}"));
    out
}

#[test]
fn runs_of_hits_count_and_time_as_one_by_one() {
    // 32-byte lines (`numachine`'s: `hit_run`'s copy with a constant shift) and 64.
    for (tlb, line) in [(false, 32), (true, 32), (false, 64), (true, 64)] {
        let one = run(Mode::OneByOne, tlb, line);
        assert_eq!(
            one,
            run(Mode::Hits, tlb, line),
            "hits: tlb {tlb}, {line}-byte lines"
        );
        assert_eq!(
            one,
            run(Mode::Run, tlb, line),
            "run: tlb {tlb}, {line}-byte lines"
        );
        // Every `Other` was seen, at the same cycle.
        assert!(
            one.last().unwrap().matches('(').count() > 20,
            "{}",
            one.last().unwrap()
        );
        // The records hit, miss and cross pages: the runs were taken and also left.
        assert!(one[0].contains("l1d_misses: ") && !one[0].contains("l1d_misses: 0,"));
    }
}

/// `agent::l1_miss`'s quiet L2 hit (no probe looking at L2 accesses) counts, times, fills
/// and attributes as its full path (`l1_miss_full`, taken when a probe looks): the same
/// cores' counters and times, ground truth and L1 misses by structure, with the probe seeing
/// an L2 access for each L1 miss.
#[test]
fn quiet_l2_hits_count_as_the_full_path() {
    use crate::probe::Observation;
    for (tlb, line) in [(false, 32), (true, 64)] {
        let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let quiet = run(Mode::Run, tlb, line);
        let probe = crate::test_probes::Record(seen.clone());
        let full = run_watched(Mode::Run, tlb, line, Some(Box::new(probe)));
        assert_eq!(quiet, full, "tlb {tlb}, {line}-byte lines");
        let (hits, accesses) = seen.borrow().iter().fold((0, 0), |(h, n), o| match o {
            Observation::L2Access { hit, .. } => (h + u64::from(*hit), n + 1),
            _ => (h, n),
        });
        // Most L1 misses were L2 hits (the quiet path's case), and the ground truth's count
        // of L2 accesses is the probe's.
        assert!(hits > 1000 && hits * 2 > accesses, "{hits} of {accesses}");
        let counted = quiet[quiet.len() - 2]
            .rsplit(' ')
            .next()
            .unwrap()
            .to_string();
        assert_eq!(counted, accesses.to_string());
    }
}
