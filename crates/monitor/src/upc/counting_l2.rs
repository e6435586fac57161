//! The UPC_L2 slice events of `pmusim stat -e` (seed 001's UPC_L2: 16 counters per L2 slice;
//! docs/upc.md), beside the UPC_P events of `counting.rs`.
//!
//! An event is one of the slice events pmusim models (`L2Event::modelled`), counted on one
//! UPC_L2 counter of every slice and summed over the slices: the driver's combined name
//! (`PEVT_L2_HITS`, which BGPM also sums over the slices) for its 16 selections, `l2.NAME`
//! for pmusim's 16 protocol events (`l2.read`, `l2.invalidate-sent`, ...). The counters are
//! per slice (UPC_C's L2 combine off), so a count is the sum of the slices' SRAM + local.
//!
//! A group holds up to 24 UPC_P requests and up to 16 UPC_L2 requests: the two pools are
//! separate hardware, so a request starts a new group only when its own pool is full.
//!
//! The exact count is the ground truth's (`GroundTruth::l2_events`, every event of every
//! slice); the counters start when UPC_C's start command takes effect, so events of the first
//! cycles are not counted.

use super::events::L2Event;
use super::probe::{L2_COUNTERS, P_COUNTERS};
use super::regs::CounterCfg;
use crate::counting::Request;
use crate::plugin::Error;
use machine::state::State;

/// One L2 event as `stat` names it.
#[derive(Clone, Debug)]
pub struct L2Ev {
    pub name: String,
    pub event: L2Event,
}

/// The modelled L2 slice events, in the driver's order.
pub fn l2_events() -> Vec<L2Ev> {
    L2Event::ALL
        .iter()
        .filter(|e| e.modelled())
        .map(|&event| L2Ev {
            name: event
                .pevt()
                .map_or_else(|| format!("l2.{}", event.name()), str::to_string),
            event,
        })
        .collect()
}

/// What one event's description says.
pub fn describe(e: &L2Ev) -> String {
    format!(
        "UPC_L2 slice event {} (`{}`), one counter per slice, summed over the slices",
        e.event as u8,
        e.event.name()
    )
}

/// A UPC_L2 counter counting `e`.
pub fn cfg(e: L2Event) -> CounterCfg {
    CounterCfg {
        event: e as u8,
        enable: true,
        ..Default::default()
    }
}

/// The exact count of `e` over every slice so far.
pub fn exact(st: &State, e: L2Event) -> Option<u64> {
    let gt = st.truth.as_ref()?;
    Some(gt.l2_events.iter().map(|s| s[e as usize]).sum())
}

/// Packs requests into groups of 24 UPC_P and 16 UPC_L2 counters, in the order asked.
/// `width(event)`: `(counters, on the UPC_L2)` of an event. Returns (request, event) pairs
/// per group, as `counting::pack_groups` does.
pub fn pack(
    reqs: &[Request],
    width: impl Fn(usize) -> Result<(usize, bool), Error>,
) -> Result<Vec<Vec<(usize, usize)>>, Error> {
    let mut groups: Vec<Vec<(usize, usize)>> = Vec::new();
    let (mut p, mut l2) = (P_COUNTERS, L2_COUNTERS);
    for (r, q) in reqs.iter().enumerate() {
        let (n, slice) = width(q.event)?;
        let full = if slice {
            l2 + n > L2_COUNTERS
        } else {
            p + n > P_COUNTERS
        };
        if full {
            groups.push(Vec::new());
            (p, l2) = (0, 0);
        }
        groups.last_mut().expect("pushed").push((r, q.event));
        if slice {
            l2 += n;
        } else {
            p += n;
        }
    }
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_pools() {
        let ev = l2_events();
        assert_eq!(ev.len(), 26, "32 events, 6 of speculation not modelled");
        assert_eq!(ev[0].name, "PEVT_L2_HITS");
        assert!(ev.iter().any(|e| e.name == "l2.read"));
        // 24 UPC_P events and 16 L2 events fit one group; the 17th L2 event starts another.
        let req = |event| Request {
            event,
            privilege: crate::counting::Privilege::All,
        };
        let mut reqs: Vec<Request> = (0..24).map(|_| req(0)).collect();
        reqs.extend((0..17).map(|_| req(1)));
        let g = pack(&reqs, |e| Ok((1, e == 1))).unwrap();
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].len(), 40);
        assert_eq!(g[1], vec![(40, 1)]);
    }
}
