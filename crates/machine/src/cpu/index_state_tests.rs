//! The L2 index states the agent reports with its observations (`L2Access::index_invalid`,
//! `TxDone::evicted` and `TxDone::index_invalid`) against an independent replay of every L2
//! state change (`LineState`): the NUMAchine monitor's estimators read these fields instead of
//! tracking the state changes themselves, so they must agree with them exactly.

use crate::addr::Place;
use crate::config::Preset;
use crate::probe::{InboundKind, Observation, Outcome};
use crate::sim::{Machine, Options};
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use crate::test_probes::Record;

/// What the replay found: (L2 accesses checked, cancelled upgrades checked, evictions, drops).
type Checked = (u64, u64, u64, u64);

/// Runs contended stores (upgrades that race and get cancelled), shared reads and private
/// sweeps larger than the L2 (evictions) on `preset`, optionally with a smaller L2 of `assoc`
/// ways, and replays the observations.
fn run_and_replay(preset: &str, small_l2_assoc: Option<u32>) -> Checked {
    let procs = 4;
    let mut p = Preset::builtin(preset).unwrap().with_procs(procs).unwrap();
    if let Some(a) = small_l2_assoc {
        let l2 = p.caches.l2.as_mut().unwrap();
        l2.size_bytes = 64 * 1024;
        l2.assoc = a;
    }
    let (line_bytes, sets, ways, size) = {
        let l2 = p.caches.last_private();
        (l2.line_bytes, l2.sets(), l2.assoc as usize, l2.size_bytes)
    };
    let mut m = Machine::new(p, Options::default()).unwrap();
    let seen = Rc::new(RefCell::new(Vec::new()));
    m.attach(Box::new(Record(seen.clone())));
    let mut s = m.setup();
    let hot = s.alloc("hot", 256, Place::RoundRobin);
    // Per processor, 64 lines at the same offsets of five L2-sized windows: more lines per
    // set than ways, so fills evict.
    let own = s.alloc("own", procs as u64 * 5 * size, Place::FirstTouch);
    for q in 0..procs {
        m.spawn(q, move |ctx| {
            for i in 0..400u64 {
                // Read a hot line, then write it: upgrades that race each other.
                ctx.load_value(hot + (i % 2) * 64);
                ctx.store_value(hot + (i % 2) * 64 + q as u64 * 8, i);
                let base = own + q as u64 * 5 * size;
                for k in 0..6 {
                    let j = i * 6 + k;
                    ctx.load_value(base + (j % 5) * size + (j / 5 % 64) * line_bytes);
                }
            }
        });
    }
    m.run(Some(500_000_000)).unwrap();
    let obs = seen.borrow();

    let set_of = |a: u64| ((a / line_bytes) % sets) as usize;
    // Valid lines per (processor, set), from the state changes.
    let mut valid: HashMap<(u16, usize), usize> = HashMap::new();
    // The last valid-to-invalid change per processor: (time, set).
    let mut last_drop: HashMap<u16, (u64, usize)> = HashMap::new();
    let (mut accesses, mut cancels, mut evictions, mut drops, mut explained) = (0, 0, 0, 0, 0);
    for o in obs.iter() {
        match *o {
            Observation::LineState {
                proc,
                t,
                line_addr,
                old,
                new,
                ..
            } => {
                let v = valid.entry((proc, set_of(line_addr))).or_default();
                match (old != 0, new != 0) {
                    (false, true) => *v += 1,
                    (true, false) => {
                        *v -= 1;
                        drops += 1;
                        last_drop.insert(proc, (t, set_of(line_addr)));
                    }
                    _ => {}
                }
            }
            Observation::L2Access {
                proc,
                addr,
                index_invalid,
                index,
                ..
            } => {
                assert_eq!(index as usize, set_of(addr));
                let v = valid.get(&(proc, set_of(addr))).copied().unwrap_or(0);
                assert_eq!(
                    index_invalid,
                    v < ways,
                    "proc {proc} L2 access at {addr:#x}"
                );
                accesses += 1;
            }
            Observation::TxDone {
                proc,
                t,
                addr,
                outcome,
                evicted,
                index_invalid,
                ..
            } => {
                let set = set_of(addr);
                let v = valid.get(&(proc, set)).copied().unwrap_or(0);
                if outcome == Outcome::Cancelled {
                    assert_eq!(index_invalid, v < ways, "proc {proc} cancel at {addr:#x}");
                    cancels += 1;
                }
                if evicted {
                    assert_eq!(
                        last_drop.get(&proc),
                        Some(&(t, set)),
                        "proc {proc}: eviction reported at {t} without the state change"
                    );
                    evictions += 1;
                    explained += 1;
                }
            }
            Observation::Inbound {
                proc,
                t,
                kind,
                addr,
                hit: true,
                ..
            } if kind != InboundKind::InterventionShared => {
                assert_eq!(last_drop.get(&proc), Some(&(t, set_of(addr))));
                explained += 1;
            }
            _ => {}
        }
    }
    // Every valid-to-invalid change is an inbound hit or a reported eviction.
    assert_eq!(
        drops, explained,
        "drops not reported by Inbound or TxDone::evicted"
    );
    (accesses, cancels, evictions, drops)
}

#[test]
fn index_states_agree_with_the_state_changes_on_numachine() {
    let (a, c, e, d) = run_and_replay("numachine", None);
    assert!(a > 5000 && e > 1000 && d > e, "{a} {c} {e} {d}");
    eprintln!("numachine: {a} accesses, {c} cancels, {e} evictions, {d} drops");
    assert!(c > 0, "no cancelled upgrade exercised");
}

#[test]
fn index_states_agree_with_the_state_changes_on_flash() {
    let (a, _, e, d) = run_and_replay("flash", None);
    assert!(a > 5000 && e > 1000 && d > e, "{a} {e} {d}");
}

#[test]
fn index_states_agree_on_a_small_set_associative_l2() {
    for ways in [2, 4] {
        let (a, _, e, _) = run_and_replay("numachine", Some(ways));
        assert!(a > 5000 && e > 1000, "{ways} ways: {a} {e}");
    }
}
