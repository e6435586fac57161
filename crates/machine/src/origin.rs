//! Which request memory-system work belongs to (`probe::Origin` at the memory and network
//! levels).
//!
//! The processor knows whose request it sends; a memory system's own events (a message
//! crossing a bus, a ring, a mesh; a home's directory step; a protocol handler) carry a line
//! but not the requester. The machine therefore remembers, per line, the origin of the latest
//! processor request for it (`note`, when the request leaves the external agent) and, before
//! a memory-system event runs, sets `Env::origin` from the event's line (`of`). Homes serve
//! one request per line at a time (a second one is NACKed or queued behind it), so while a
//! request is being served its line's entry is that request: invalidations, interventions,
//! acknowledgements and queue waits caused by it are attributed to it.
//!
//! The table is direct-mapped (`SIZE` entries, tagged with the line): a lookup is an index and
//! a compare. Two lines in flight at once that share an entry (their line numbers equal modulo
//! `SIZE`) would see the newer request's origin; with at most one transaction and a few
//! write-backs per core in flight that is rare, and an untagged line reads as unknown
//! (`Origin::default()`), never as another line's request. Only kept while some observer
//! wants memory-level origins (`Aux::on`: a probe's `wants_origins`, or the ground truth's
//! split by phase).

use crate::probe::Origin;
use crate::settings::Settings;
use std::cell::Cell;

/// What a memory system's environment reaches besides the queue and the observers: the
/// settings probes may change, and the attribution of its work to requests. One reference
/// in `Env` (building an environment per event stays cheap); the current origin is a `Cell`
/// the machine sets only while `on`, so with no observer asking nothing is written.
#[derive(Default)]
pub struct Aux {
    pub settings: Settings,
    /// The latest request per line, kept while `on`.
    pub lines: Lines,
    /// Some observer wants origins of memory-system work (`State::refresh_origins`).
    pub on: bool,
    /// Whose request the memory system works for now.
    pub current: Cell<Origin>,
}

const BITS: u32 = 12;
/// Entries of the table.
pub const SIZE: usize = 1 << BITS;

/// The origin of the latest request per line.
pub struct Lines {
    tags: Vec<u64>,
    who: Vec<Origin>,
}

impl Default for Lines {
    fn default() -> Lines {
        Lines {
            tags: vec![u64::MAX; SIZE],
            who: vec![Origin::default(); SIZE],
        }
    }
}

impl Lines {
    /// A request for `line` by `who` leaves its processor.
    #[inline]
    pub fn note(&mut self, line: u64, who: Origin) {
        let i = line as usize & (SIZE - 1);
        self.tags[i] = line;
        self.who[i] = who;
    }
    /// The origin of the latest request for `line` (unknown if none is remembered).
    #[inline]
    pub fn of(&self, line: u64) -> Origin {
        let i = line as usize & (SIZE - 1);
        if self.tags[i] == line {
            self.who[i]
        } else {
            Origin::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_the_latest_request_per_line_and_never_another_lines() {
        let mut l = Lines::default();
        let a = Origin {
            thread: 3,
            core: 1,
            phase: 7,
            context: 1,
            process: 2,
            supervisor: true,
            marked: true,
        };
        let b = Origin { phase: 9, ..a };
        l.note(5, a);
        assert_eq!(l.of(5), a);
        l.note(5, b);
        assert_eq!(l.of(5), b);
        assert_eq!(l.of(6), Origin::default());
        // A line sharing the entry replaces it; the old line then reads as unknown.
        l.note(5 + SIZE as u64, a);
        assert_eq!(l.of(5), Origin::default());
        assert_eq!(l.of(5 + SIZE as u64), a);
    }
}
