//! Blue Gene/Q's L1 prefetcher (L1P) as a stream prefetcher in the L1 D's prefetcher slot
//! (`caches.l1d.prefetch = "stream"`; issue 14, seed 001: "a plurality of cores with
//! associated L1 cache prefetchers L1P"), one per core, sitting between the core and its
//! crossbar input port, so it sees every L1 D miss and every write-through store.
//!
//! Model (pmusim's; the driver's `L1P_CFG_PF_USR` register has a data-fetch depth and a
//! stream-establish enable, which is what is kept):
//! - *Stream detection*: a demand miss on shared-level line `l` whose predecessor `l - 1`
//!   missed recently (a table of `streams` recent misses) establishes a stream expecting
//!   `l + 1`; a miss on a stream's expected line advances it. Either way the L1P asks for
//!   the lines `l + 1 ..= l + depth` it does not hold yet.
//! - *Holding*: the L1P remembers up to `lines` lines it asked for (FIFO), each with the time
//!   its data is at the slice. A demand miss on one whose data is there is an L1P hit, on
//!   one still in flight a prefetch-to-demand conversion; the entry is then used and leaves.
//!   An entry pushed out unused counts as evicted unused.
//! - *Where the data goes*: a prefetch reads the line from memory into its slice's array
//!   (the coherence point), not into a buffer beside the core: prefetched lines are never
//!   copies the directory must track, so the protocol is untouched. A demand miss on a
//!   prefetched line then hits its slice instead of going to memory (a demand that finds the
//!   prefetch in flight waits for it). The L1P buffer's own shorter hit latency is not
//!   modelled (docs/bgq.md).

use crate::probe::L1pEvent;
use engine::Tick;
use std::collections::VecDeque;

/// A line the L1P asked for: its shared-level line number and when its data is at the slice
/// (`Tick::MAX` until the slice said).
#[derive(Clone, Copy, Debug)]
struct Held {
    line: u64,
    ready: Tick,
}

/// One core's L1P.
#[derive(Clone, Debug)]
pub struct Stream {
    depth: u64,
    lines: usize,
    streams: usize,
    held: VecDeque<Held>,
    /// Lines that missed lately (stream detection).
    recent: VecDeque<u64>,
    /// The next line each active stream expects.
    expect: VecDeque<u64>,
}

/// What a demand miss did at the L1P: its outcome (`Hit`, `Pf2dfc` or `Miss`), whether it
/// established a stream, the lines to prefetch (`first..first + count`), and how many
/// unused lines their entries pushed out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Demand {
    pub outcome: L1pEvent,
    pub established: bool,
    pub first: u64,
    pub count: u64,
    pub evicted_unused: u32,
}

impl Stream {
    pub fn new(depth: u32, lines: u32, streams: u32) -> Stream {
        Stream {
            depth: depth as u64,
            lines: lines as usize,
            streams: streams as usize,
            held: VecDeque::with_capacity(lines as usize),
            recent: VecDeque::with_capacity(streams as usize),
            expect: VecDeque::with_capacity(streams as usize),
        }
    }

    /// A demand miss on shared-level line `l` at `t`.
    pub fn demand(&mut self, l: u64, t: Tick) -> Demand {
        let outcome = match self.held.iter().position(|h| h.line == l) {
            Some(i) => {
                let h = self.held.remove(i).expect("found");
                if h.ready <= t {
                    L1pEvent::Hit
                } else {
                    L1pEvent::Pf2dfc
                }
            }
            None => L1pEvent::Miss,
        };
        let mut established = false;
        let on_stream = match self.expect.iter().position(|&e| e == l) {
            Some(i) => {
                self.expect[i] = l + 1;
                true
            }
            None if l > 0 && self.recent.contains(&(l - 1)) => {
                established = true;
                if self.expect.len() == self.streams {
                    self.expect.pop_front();
                }
                self.expect.push_back(l + 1);
                true
            }
            None => false,
        };
        if self.recent.len() == self.streams {
            self.recent.pop_front();
        }
        self.recent.push_back(l);
        let (mut first, mut count, mut evicted_unused) = (l + 1, 0, 0);
        if on_stream {
            // Ask for the lines ahead not held yet (a run: lines already held are skipped
            // from the front; held lines beyond the first gap are asked again, harmlessly).
            while first <= l + self.depth && self.holds(first) {
                first += 1;
            }
            let last = l + self.depth;
            if first <= last {
                count = last - first + 1;
                for k in first..=last {
                    if self.holds(k) {
                        continue;
                    }
                    if self.held.len() == self.lines {
                        self.held.pop_front();
                        evicted_unused += 1;
                    }
                    self.held.push_back(Held {
                        line: k,
                        ready: Tick::MAX,
                    });
                }
            }
        }
        Demand {
            outcome,
            established,
            first,
            count,
            evicted_unused,
        }
    }

    fn holds(&self, l: u64) -> bool {
        self.held.iter().any(|h| h.line == l)
    }

    /// The slice says when prefetched line `l`'s data is there.
    pub fn ready(&mut self, l: u64, at: Tick) {
        if let Some(h) = self.held.iter_mut().find(|h| h.line == l) {
            h.ready = at;
        }
    }

    /// Drops line `l` (a store by the core or an invalidation from a slice); true if held.
    pub fn drop_line(&mut self, l: u64) -> bool {
        match self.held.iter().position(|h| h.line == l) {
            Some(i) => {
                self.held.remove(i);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sequential walk: the second miss establishes the stream and asks for the next
    /// `depth` lines; later misses find their lines (hits once the data is there, a
    /// conversion while in flight) and ask for one more line each.
    #[test]
    fn a_sequential_walk_becomes_a_stream() {
        let mut s = Stream::new(2, 32, 8);
        let d = s.demand(100, 0);
        assert_eq!(
            (d.outcome, d.established, d.count),
            (L1pEvent::Miss, false, 0)
        );
        let d = s.demand(101, 10);
        assert_eq!(
            d,
            Demand {
                outcome: L1pEvent::Miss,
                established: true,
                first: 102,
                count: 2,
                evicted_unused: 0
            }
        );
        s.ready(102, 50);
        s.ready(103, 60);
        let d = s.demand(102, 55);
        assert_eq!(
            (d.outcome, d.established, d.first, d.count),
            (L1pEvent::Hit, false, 104, 1)
        );
        let d = s.demand(103, 58);
        assert_eq!((d.outcome, d.first, d.count), (L1pEvent::Pf2dfc, 105, 1));
        // A store to a held line drops it.
        assert!(s.drop_line(104));
        assert!(!s.drop_line(104));
    }

    /// A full table pushes out its oldest line, unused.
    #[test]
    fn a_full_table_evicts_unused_lines() {
        let mut s = Stream::new(4, 4, 8);
        s.demand(10, 0);
        let d = s.demand(11, 0);
        assert_eq!((d.count, d.evicted_unused), (4, 0));
        // A second stream far away needs four more entries: four unused lines go.
        s.demand(500, 0);
        let d = s.demand(501, 0);
        assert_eq!((d.established, d.count, d.evicted_unused), (true, 4, 4));
    }
}
