//! The invalidation estimators of Figure 4.8 (seed 000, 4.4.4, events E and F).
//!
//! The MCC cannot see the secondary cache's tags (not enough FPGA pins), so both machines match
//! on the cache *index* only, and both are estimates. Each keeps the exact count beside it (from
//! what the machine knows: the inbound action's `hit`, the miss's type), so the report shows the
//! error.
//!
//! (a) External invalidation hits: an external invalidate (or exclusive intervention) starts a
//! cache-watching state that waits, for about 34 processor cycles (the processor services an
//! external invalidate within that window), for the processor's probe of the same index to
//! change a valid line to invalid; then the event is counted. An access to a different index
//! first, or the window expiring, returns to idle. pmusim's machine applies the inbound
//! invalidation and reports the state change in the same tick *before* the inbound observation,
//! so a valid-to-invalid change at the same index and tick as the invalidate also completes the
//! pattern. Errors: over-counts if the processor itself invalidates or evicts a line of the same
//! index within the window (the estimator cannot tell), counts cancelled ownership misses (as the
//! seed says), under-counts never here because pmusim's processor services the invalidate at
//! once.
//!
//! (b) Invalidation misses: waits for a secondary-cache access that reads an invalid state at its
//! index; if the next read or read-exclusive the external agent emits maps to the same index, the
//! event is counted. A different index or an uncached read resets; writes and write-backs are
//! waited through. The index's state is what the processor's probe reads there (the state bits
//! the MCC sees, reported by the machine with each L2 access), without tags: misses to
//! never-filled sets (cold misses) and misses whose index holds an invalid line of another tag
//! are over-counted. For a set-associative L2 the index reads "invalid" when some way of the set
//! is invalid (pmusim's choice).

use engine::Tick;

/// Figure 4.8a.
#[derive(Clone, Debug, Default)]
pub struct InvalHit {
    watch: Option<(u32, Tick)>,
    /// The most recent valid-to-invalid change: (index, time).
    last_drop: Option<(u32, Tick)>,
    pub estimate: u64,
    pub exact: u64,
}

impl InvalHit {
    /// An external invalidate or exclusive intervention at `index`; `hit` is the exact answer
    /// (kept for the comparison only). Returns true when the event is counted.
    pub fn inbound(&mut self, t: Tick, index: u32, hit: bool) -> bool {
        if hit {
            self.exact += 1;
        }
        if self.last_drop == Some((index, t)) {
            self.last_drop = None;
            self.estimate += 1;
            return true;
        }
        self.watch = Some((index, t));
        false
    }
    /// The processor probed its L2 at `index` (an access from the processor side).
    pub fn access(&mut self, index: u32) {
        if self.watch.is_some_and(|(i, _)| i != index) {
            self.watch = None;
        }
    }
    /// A line at `index` changed from valid to invalid at `t`. `window` in ticks.
    pub fn dropped(&mut self, t: Tick, index: u32, window: Tick) -> bool {
        self.last_drop = Some((index, t));
        match self.watch {
            Some((i, w)) if i == index && t <= w + window => {
                self.watch = None;
                self.last_drop = None;
                self.estimate += 1;
                true
            }
            Some((_, w)) if t > w + window => {
                self.watch = None;
                false
            }
            _ => false,
        }
    }
}

/// Figure 4.8b.
#[derive(Clone, Debug, Default)]
pub struct InvalMiss {
    wait: Option<u32>,
    pub estimate: u64,
    pub exact: u64,
}

impl InvalMiss {
    /// A secondary-cache access at `index` that missed; `index_invalid`: the state bits the
    /// probe read at the index were invalid (`Observation::L2Access::index_invalid`).
    pub fn l2_miss(&mut self, index: u32, index_invalid: bool) {
        if index_invalid {
            self.wait = Some(index);
        }
    }
    /// A read or read-exclusive leaves the external agent; returns true if counted.
    pub fn read(&mut self, index: u32) -> bool {
        match self.wait.take() {
            Some(i) if i == index => {
                self.estimate += 1;
                true
            }
            _ => false,
        }
    }
    /// An uncached read resets the machine.
    pub fn uncached_read(&mut self) {
        self.wait = None;
    }
    /// The exact count: a miss the machine classified as an invalidation miss (tag matched,
    /// state invalid; Table 4.8 value 2).
    pub fn exact_miss(&mut self) {
        self.exact += 1;
    }
}

/// Estimate minus exact, relative to exact (0 when both are 0).
pub fn relative_error(estimate: u64, exact: u64) -> f64 {
    if exact == 0 {
        if estimate == 0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else {
        (estimate as f64 - exact as f64) / exact as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn hit_machine() {
        let mut h = InvalHit::default();
        // Change reported first (pmusim's order), then the invalidate: counted.
        h.dropped(100, 5, 34);
        assert!(h.inbound(100, 5, true));
        // Invalidate that misses, then an eviction at the same index in the window: over-count.
        assert!(!h.inbound(200, 7, false));
        assert!(h.dropped(210, 7, 34));
        // Invalidate, access to another index: idle.
        assert!(!h.inbound(300, 9, false));
        h.access(10);
        assert!(!h.dropped(301, 9, 34));
        assert_eq!((h.estimate, h.exact), (2, 1));
    }
    #[test]
    fn miss_machine() {
        let mut m = InvalMiss::default();
        m.l2_miss(3, false); // valid: a conflict miss, not counted
        assert!(!m.read(3));
        m.l2_miss(3, true);
        assert!(m.read(3));
        // A probe of a valid index leaves the wait as it was.
        m.l2_miss(5, true);
        m.l2_miss(6, false);
        assert!(m.read(5));
        // Another index, or an uncached read, resets it.
        m.l2_miss(7, true);
        assert!(!m.read(8));
        m.l2_miss(4, true);
        m.uncached_read();
        assert!(!m.read(4));
        assert_eq!(m.estimate, 2);
    }
}
