//! Tests of the ground-truth collector: its views against a naive count of the same probe
//! stream, and its histograms against direct sums.

use super::*;
use crate::addr::Place;
use crate::sim::{Machine, Options};
use engine::SimRng;
use std::cell::RefCell;
use std::rc::Rc;

use crate::test_probes::Record;

/// A machine with false sharing, true sharing and private streams over three structures and
/// two procedures, run to the end with ground truth and a recording probe.
fn run(preset: &str, procs: usize) -> (Machine, Vec<Observation>) {
    let p = Preset::builtin(preset).unwrap().with_procs(procs).unwrap();
    let mut m = Machine::new(p, Options::default()).unwrap();
    let seen = Rc::new(RefCell::new(Vec::new()));
    m.attach(Box::new(Record(seen.clone())));
    let mut s = m.setup();
    let shared = s.alloc("shared", 4096, Place::RoundRobin);
    let table = s.alloc("table", 64 * 1024, Place::RoundRobin);
    let own = s.alloc("own", procs as u64 * 256 * 1024, Place::FirstTouch);
    let work = s.procedure("work");
    let sweep = s.procedure("sweep");
    for q in 0..procs {
        m.spawn(q, move |ctx| {
            for i in 0..300u64 {
                ctx.enter(work);
                ctx.store_value(shared + (q as u64 % 16) * 8, i);
                ctx.load_value(table + ((i * 97 + q as u64 * 13) % 1024) * 64);
                ctx.leave();
                ctx.enter(sweep);
                for k in 0..8 {
                    ctx.load_value(
                        own + q as u64 * 256 * 1024 + ((i * 8 + k) * 128) % (256 * 1024),
                    );
                }
                ctx.leave();
            }
        });
    }
    m.run(Some(200_000_000)).unwrap();
    let v = seen.borrow().clone();
    (m, v)
}

fn same_misses(a: &MissStats, b: &MissStats, what: &str) {
    let f = |s: &MissStats| {
        [
            s.read_local,
            s.read_remote,
            s.write_local,
            s.write_remote,
            s.upgrades,
            s.read_lat_local,
            s.read_lat_remote,
            s.write_lat_local,
            s.write_lat_remote,
            s.cold,
            s.global_cold,
            s.coherence,
            s.capacity,
            s.invalidations,
            s.cancelled,
            s.bus_errors,
        ]
    };
    assert_eq!(f(a), f(b), "{what}");
}

fn sum<'a>(it: impl Iterator<Item = &'a MissStats>) -> MissStats {
    let mut t = MissStats::default();
    for s in it {
        t.add(s);
    }
    t
}

fn check_views(preset: &str, procs: usize) {
    let (m, obs) = run(preset, procs);
    let st = m.state();
    let gt = st.truth.as_ref().unwrap();
    let map = &st.map;
    let total = gt.total();
    assert!(
        total.misses() > 1000 && total.invalidations > 100,
        "{total:?}"
    );
    assert!(total.coherence > 0 && total.cold > 0, "{total:?}");

    // Every view sums to the per-processor totals (NACKs are kept per processor only;
    // invalidations belong to no procedure).
    let mut no_nacks = total.clone();
    no_nacks.nacks = 0;
    same_misses(&sum(gt.per_struct.values()), &no_nacks, "per structure");
    same_misses(
        &sum(gt.per_cpu_struct.values()),
        &no_nacks,
        "per (cpu, structure)",
    );
    let mut no_inv = no_nacks.clone();
    no_inv.invalidations = 0;
    same_misses(&sum(gt.per_procedure.values()), &no_inv, "per procedure");
    same_misses(
        &sum(gt.per_proc_struct.values()),
        &no_inv,
        "per (procedure, structure)",
    );
    for p in 0..procs {
        let mine = sum(gt
            .per_cpu_struct
            .iter()
            .filter(|((q, _), _)| *q as usize == p)
            .map(|(_, s)| s));
        let mut want = gt.per_proc[p].clone();
        want.nacks = 0;
        same_misses(&mine, &want, &format!("processor {p}"));
    }

    // Completed misses per (structure, procedure), transactions, inbound actions and queue
    // uses, counted directly from the probe stream.
    let mut misses: FxHashMap<(StructId, u32), u64> = FxHashMap::default();
    let mut tx: FxHashMap<Cmd, u64> = FxHashMap::default();
    let mut inbound: FxHashMap<&str, u64> = FxHashMap::default();
    let mut queues: FxHashMap<Resource, (u64, u64, u64, u32)> = FxHashMap::default();
    for o in &obs {
        match *o {
            Observation::TxIssue { cmd, .. } => *tx.entry(cmd).or_default() += 1,
            Observation::TxDone {
                cmd: Cmd::Read | Cmd::ReadEx | Cmd::Upgrade,
                addr,
                outcome: Outcome::Done,
                procedure,
                ..
            } => {
                *misses
                    .entry((map.structure_of(addr), procedure))
                    .or_default() += 1
            }
            Observation::Inbound { kind, .. } => {
                *inbound.entry(INBOUND_NAMES[kind as usize]).or_default() += 1
            }
            Observation::Queue {
                res,
                wait,
                busy,
                queue,
                ..
            } => {
                let q = queues.entry(res).or_default();
                q.0 += 1;
                q.1 += wait;
                q.2 += busy;
                q.3 = q.3.max(queue);
            }
            _ => {}
        }
    }
    let got: FxHashMap<(StructId, u32), u64> = gt
        .per_proc_struct
        .iter()
        .filter(|(_, s)| s.misses() > 0)
        .map(|((proc, sid), s)| ((*sid, *proc), s.misses()))
        .collect();
    assert_eq!(got, misses);
    for name in ["shared", "table", "own"] {
        assert!(
            gt.per_struct
                .iter()
                .any(|(id, s)| map.name_of(*id) == name && s.misses() > 0),
            "{name} has no misses"
        );
    }
    assert_eq!(gt.transactions, tx);
    assert_eq!(gt.inbound, inbound);
    check_l1(st, gt, &obs);
    assert!(!queues.is_empty());
    let got: FxHashMap<Resource, (u64, u64, u64, u32)> = gt
        .queues
        .iter()
        .map(|(r, q)| (*r, (q.uses, q.wait_sum, q.busy_sum, q.max_queue)))
        .collect();
    assert_eq!(got, queues);
    for q in gt.queues.values() {
        assert_eq!(q.waits.n, q.uses);
        assert_eq!(q.waits.sum() as u64, q.wait_sum);
    }
}

/// L1 misses per structure (issue 19): each L1 miss is one `L2Access` observation, so the
/// per-structure rows equal a count of that stream by the structure of its address and its
/// kind; they sum to the cores' counters, and so do the per-procedure rows.
fn check_l1(st: &crate::state::State, gt: &GroundTruth, obs: &[Observation]) {
    use crate::l1_misses::{FETCH, READ, WRITE};
    let mut want: BTreeMap<StructId, [u64; 3]> = BTreeMap::new();
    for o in obs {
        if let Observation::L2Access {
            addr,
            write,
            ifetch,
            ..
        } = *o
        {
            let k = if ifetch {
                FETCH
            } else if write {
                WRITE
            } else {
                READ
            };
            want.entry(st.map.structure_of(addr)).or_default()[k] += 1;
        }
    }
    let got: BTreeMap<StructId, [u64; 3]> = gt.l1.structs().collect();
    assert_eq!(got, want);
    let (d, i) = st.cores.iter().fold((0, 0), |(d, i), c| {
        (d + c.cnt.l1d_misses, i + c.cnt.l1i_misses)
    });
    let t = gt.l1.total();
    assert_eq!((t[READ] + t[WRITE], t[FETCH]), (d, i));
    assert!(t[READ] > 1000 && t[WRITE] > 100, "{t:?}");
    let mut by_proc = [0u64; 3];
    for (_, r) in gt.l1.procedures() {
        crate::l1_misses::add(&mut by_proc, &r);
    }
    assert_eq!(by_proc, t);
    // `own` is only read, by `sweep`; `shared` written by `work` (a store_value).
    let own = gt.l1.of_struct(
        st.map.structure_of(
            st.map
                .regions()
                .iter()
                .find(|r| r.name == "own")
                .unwrap()
                .base,
        ),
    );
    assert!(
        own[READ] > 0 && own[WRITE] == 0 && own[FETCH] == 0,
        "{own:?}"
    );
}

#[test]
fn views_match_the_probe_stream_on_numachine() {
    check_views("numachine", 16);
}

#[test]
fn views_match_the_probe_stream_on_flash() {
    check_views("flash", 16);
}

#[test]
fn finish_is_idempotent() {
    let (mut m, _) = run("ideal", 4);
    let before = format!("{:?}", m.state().truth.as_ref().unwrap().total());
    let gt = m.state_mut().truth.as_mut().unwrap();
    let n = gt.per_struct.len();
    let s: u64 = gt.per_struct.values().map(|s| s.misses()).sum();
    gt.finish();
    gt.finish();
    assert_eq!(gt.per_struct.len(), n);
    assert_eq!(gt.per_struct.values().map(|s| s.misses()).sum::<u64>(), s);
    assert_eq!(format!("{:?}", gt.total()), before);
}

#[test]
fn histogram_moments_and_percentiles_equal_direct_computation() {
    let mut rng = SimRng::new(42);
    let mut h = Histogram::default();
    let mut v = Vec::new();
    for i in 0..20_000u64 {
        // Mostly small values (dense part), some beyond 8192 (sparse part).
        let x = if i % 50 == 0 {
            8192 + rng.below(100_000)
        } else {
            rng.below(300)
        };
        h.add(x);
        v.push(x);
    }
    v.sort_unstable();
    let sum: u128 = v.iter().map(|&x| x as u128).sum();
    let sum_sq: u128 = v.iter().map(|&x| x as u128 * x as u128).sum();
    assert_eq!(h.n, v.len() as u64);
    assert_eq!(h.sum(), sum);
    assert_eq!(h.sum_sq(), sum_sq);
    let mean = sum as f64 / v.len() as f64;
    assert!((h.mean() - mean).abs() < 1e-9);
    assert!((h.variance() - (sum_sq as f64 / v.len() as f64 - mean * mean)).abs() < 1e-6);
    for q in [0.1, 0.5, 0.9, 0.99, 1.0] {
        let k = ((v.len() as f64 * q).ceil() as usize).max(1) - 1;
        assert_eq!(h.percentile(q), v[k], "q = {q}");
    }
    assert_eq!(h.max(), *v.last().unwrap());
}
