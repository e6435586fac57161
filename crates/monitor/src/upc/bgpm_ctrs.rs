//! BGPM's Punit counter rules for a program's event sets (issue 14 item 6): how many events and
//! which counters a hardware thread's sets may use, from the driver's "Punit Simultaneous
//! Event Rules" (`jedbrown/bgq-driver`, `bgpm/docs/DocCounterRules.h`; errors `bgpm/include/
//! err.h`):
//!
//! - "Each thread starts out with 6 counters associated with the hardware thread": thread k's
//!   *block* is counters k, k+4, k+8, k+12, k+16, k+20.
//! - "When a 7th event is assigned ... if that hw thread is free, then the siblings counters
//!   are reserved" (threads 0 & 1 and 2 & 3 are siblings); "when a 13th event is assigned, all
//!   24 counters are reserved if possible". So a thread may hold 1, 2 or 4 blocks: 6 events
//!   when the 4 threads count, 12 when 2 do, 24 when one does. A block another thread holds
//!   is `BGPM_ECTRRESERVED` ("Counter Reserved (possibles for event are all used)"); the
//!   thread's own block held by another (which took 12 or 24) is `BGPM_ETHD_CTRS_RSV`.
//! - A2 events: each subunit (XU, LSU, IU, MMU, AXU: the event name's prefix) "may count up to
//!   2 events when all 4 hw threads are busy counting", 4 when 2 threads count (8 signals per
//!   subunit in all), and "counters beyond the initial 6 or 12 can only be used by the opcode
//!   events": at most 6 A2 events on one block, 12 on more; "hardware constraints restrict
//!   the XU subunit events to counters 16-23" (each block has 2 of them). Beyond these,
//!   `BGPM_ESIGRESERVED` ("A2 Signals Reserved").
//! - Opcode events (and `PEVT_CYCLES`, which the driver counts in the opcode unit) may sit on
//!   any counter of the thread's blocks.
//!
//! A configuration file's BGPM mode (`bgpm_mode`) gives each thread the same initial block
//! (counter i serves thread i % 4). Not modelled: the L1P events' one counter per thread and
//! their conflicts (`L1pConflicts`).

use super::events::{Group, PEvent};
use crate::plugin::Error;

/// Counters in a hardware thread's block.
pub const BLOCK: usize = 6;

/// The A2 subunit (signal group) of a Punit event, from its driver name; `None` for opcode,
/// L1P and cycle events.
pub fn subunit(e: &PEvent) -> Option<&'static str> {
    if e.group != Group::A2 {
        return None;
    }
    ["XU", "LSU", "IU", "MMU", "AXU"].into_iter().find(|u| {
        e.name
            .strip_prefix("PEVT_")
            .is_some_and(|r| r.starts_with(&format!("{u}_")))
    })
}

/// The counters of hardware thread `k`'s block.
pub fn block(k: usize) -> impl Iterator<Item = usize> {
    (0..BLOCK).map(move |j| k + 4 * j)
}

/// The blocks (1, 2 or 4) a thread's events need, or why none suffice: `Err(true)` for too
/// many A2 events of a subunit (or in all), `Err(false)` for more than 24 events.
pub fn blocks_needed(events: &[&PEvent]) -> Result<usize, bool> {
    let a2: Vec<&str> = events.iter().filter_map(|e| subunit(e)).collect();
    let worst = a2
        .iter()
        .map(|u| a2.iter().filter(|v| *v == u).count())
        .max()
        .unwrap_or(0);
    for b in [1, 2, 4] {
        let fits_ctrs = events.len() <= BLOCK * b;
        let fits_a2 = a2.len() <= (BLOCK * b).min(2 * BLOCK) && worst <= 2 * b;
        match (fits_ctrs, fits_a2) {
            (true, true) => return Ok(b),
            _ if b == 4 => return Err(fits_ctrs),
            _ => {}
        }
    }
    unreachable!()
}

/// The blocks thread `k` holds with `n` of them: its own, its sibling's, then the other two.
pub fn blocks_of(k: usize, n: usize) -> Vec<usize> {
    [k, k ^ 1, k ^ 2, k ^ 3][..n].to_vec()
}

/// Which hardware thread holds each of a core's 4 blocks.
#[derive(Clone, Debug, Default)]
pub struct CoreBlocks {
    pub owner: [Option<usize>; 4],
}

impl CoreBlocks {
    /// Reserves `n` blocks for thread `k` (keeping those it has); `what` names the event.
    pub fn reserve(&mut self, k: usize, n: usize, what: &str) -> Result<(), Error> {
        for b in blocks_of(k, n) {
            match self.owner[b] {
                Some(o) if o != k && b == k => {
                    return Err(Error::input(format!(
                        "{what}: BGPM_ETHD_CTRS_RSV: Core base pm counters normally used by this hwthread are already reserved by a different hwthread (hardware thread {o} holds thread {k}'s counters {})",
                        list(block(k))
                    )))
                }
                Some(o) if o != k => {
                    return Err(Error::input(format!(
                        "{what}: BGPM_ECTRRESERVED: Counter Reserved (possibles for event are all used): hardware thread {k} needs {} counters, and thread {o} counts on counters {} (6 per thread when 4 threads count, 12 when 2, 24 when one)",
                        BLOCK * n,
                        list(block(b))
                    )))
                }
                _ => {}
            }
        }
        for b in blocks_of(k, n) {
            self.owner[b] = Some(k);
        }
        Ok(())
    }
}

fn list(it: impl Iterator<Item = usize>) -> String {
    it.map(|c| c.to_string()).collect::<Vec<_>>().join(", ")
}

/// Each event's counter among thread `k`'s `n` blocks: XU events on the thread's counters in
/// 16..23, the others on the rest, in ascending order (`blocks_needed` made both fit).
pub fn assign(events: &[&PEvent], k: usize, n: usize) -> Vec<usize> {
    let mut ctrs: Vec<usize> = blocks_of(k, n).into_iter().flat_map(block).collect();
    ctrs.sort();
    let (mut hi, mut rest): (Vec<usize>, Vec<usize>) = ctrs.into_iter().partition(|&c| c >= 16);
    let mut out = vec![0; events.len()];
    for (i, e) in events.iter().enumerate() {
        if subunit(e) == Some("XU") {
            out[i] = hi.remove(0);
        }
    }
    rest.append(&mut hi);
    let mut rest = rest.into_iter();
    for (i, e) in events.iter().enumerate() {
        if subunit(e) != Some("XU") {
            out[i] = rest.next().expect("blocks_needed made room");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upc::events::p_event_named;

    fn ev(names: &[&str]) -> Vec<&'static PEvent> {
        names.iter().map(|n| p_event_named(n).unwrap()).collect()
    }

    #[test]
    fn blocks_and_counters_follow_the_drivers_rules() {
        let xu = [
            "PEVT_XU_BR_COMMIT",
            "PEVT_XU_STCX_FAIL",
            "PEVT_XU_INTS_TAKEN",
        ];
        assert_eq!(blocks_needed(&ev(&xu[..2])), Ok(1));
        assert_eq!(blocks_needed(&ev(&xu)), Ok(2));
        let e = ev(&["PEVT_CYCLES", "PEVT_XU_BR_COMMIT", "PEVT_INST_ALL"]);
        assert_eq!(assign(&e, 1, 1), vec![1, 17, 5]);
        assert_eq!(assign(&e, 2, 2), vec![2, 18, 3]);
        assert_eq!(blocks_of(2, 2), vec![2, 3]);
        let mut ops = vec!["PEVT_INST_ALL"; 13];
        assert_eq!(blocks_needed(&ev(&ops)), Ok(4));
        ops.extend(["PEVT_INST_ALL"; 12]);
        assert_eq!(blocks_needed(&ev(&ops)), Err(false));
        let a2 = vec!["PEVT_LSU_COMMIT_LD_MISSES"; 9];
        assert_eq!(blocks_needed(&ev(&a2)), Err(true));
        let mut c = CoreBlocks::default();
        c.reserve(0, 1, "x").unwrap();
        c.reserve(1, 1, "x").unwrap();
        let e = c.reserve(0, 2, "x").unwrap_err();
        assert!(e.msg.contains("BGPM_ECTRRESERVED"), "{}", e.msg);
        c.reserve(2, 2, "x").unwrap();
        let e = c.reserve(3, 1, "x").unwrap_err();
        assert!(e.msg.contains("BGPM_ETHD_CTRS_RSV"), "{}", e.msg);
    }
}
