//! Load-and-reserve / store-conditional reservations (`cpu.atomics = "larx-stcx"`, the Blue
//! Gene/Q preset): one reservation per hardware thread.
//!
//! On the A2 core an atomic is a `lwarx` / `stwcx.` loop (seed 001 counts the pair with the
//! core's LSU events; the driver names them `PEVT_LSU_LARX_FINISHED`, `PEVT_LSU_COMMIT_STCX`
//! and `PEVT_XU_STCX_FAIL`). The architecture (Power ISA Book II, "Atomic Update
//! Primitives") gives each hardware thread one reservation on a granule, set by the load and
//! reserve, and makes the store conditional store only while it still exists. The reservation
//! is lost here when:
//!
//! - another thread's store to the granule performs: a value store or atomic of any thread of
//!   the machine (`agent::perform`, in the coherence order the protocol gives those stores,
//!   since each needs the line exclusively), or a plain store of a sibling thread of the same
//!   core (`Ctx::post_write`: it shares the L1 D, which no invalidation reaches);
//! - an invalidation of the line reaches the thread's core (a plain write-through store of
//!   another core, or the L2 dropping the line: on Blue Gene/Q the reservation is kept at the
//!   L2, which loses it with the line);
//! - the thread's own store conditional (successful or not) or a later load and reserve;
//! - the thread's own context events: an interrupt taken, or a software context switch on its
//!   hardware thread (the architecture lets an implementation lose the reservation on both;
//!   an operating system clears it on a switch with a dummy store conditional).
//!
//! The granule is the coherence line of the cores' last private level (the 64-byte L1 D line
//! on Blue Gene/Q). Not modelled: a plain store of another core to a line this core owns
//! exclusively (the slice updates its array only and sends no invalidation: see docs/bgq.md),
//! which leaves the reservation in place; plain stores carry no data value, so no atomic's
//! result can be wrong for it.

use engine::Tick;
use rustc_hash::FxHashMap;

/// The reservations of every hardware thread of the machine, by global hardware context
/// (`core * threads_per_core + context`).
///
/// *Times.* A store that hits a line its core holds performs on the storing thread's time,
/// while the event loop lets each processor's thread run ahead of the others
/// (`machine::sim`): another thread's load and reserve at an earlier time may be simulated
/// after the store, and one at a later time before it. So each reservation keeps the time it
/// was set, a store loses only those set before its time, and a reservation
/// set before a store of its line at a later time that was simulated earlier is lost at
/// once. Such a store precedes the reserving thread's store conditional: that thread's load
/// of the line takes it from the storing core, which cannot then store to it without a
/// transaction, so every later store performs in the event loop's order.
#[derive(Clone, Debug, Default)]
pub struct Reservations {
    /// The preset uses them (`cpu.atomics = "larx-stcx"`); otherwise every call is a no-op.
    pub on: bool,
    threads_per_core: usize,
    /// Per hardware thread: the reserved line + 1 (0: none).
    line: Vec<u64>,
    /// Per hardware thread: the software thread that reserved, and its switch count then (a
    /// switch off and back on the context loses the reservation).
    owner: Vec<(usize, u64)>,
    /// Reservations lost to another thread's store or an invalidation, per hardware thread
    /// (the ground truth of why a store conditional failed).
    pub lost: Vec<u64>,
    /// Per hardware thread: the time its reservation was set.
    set_at: Vec<Tick>,
    /// Per line stored to: the latest time of a store that performed on it.
    stored: FxHashMap<u64, Tick>,
}

impl Reservations {
    pub fn new(on: bool, cores: usize, threads_per_core: usize) -> Reservations {
        let n = if on { cores * threads_per_core } else { 0 };
        Reservations {
            on,
            threads_per_core,
            line: vec![0; n],
            owner: vec![(0, 0); n],
            lost: vec![0; n],
            set_at: vec![0; n],
            stored: FxHashMap::default(),
        }
    }

    /// Hardware thread `hw` reserves `line` at `t` for software thread `tid` (switched in
    /// `switches` times so far). Lost at once if a store of a later time performed on the
    /// line already (see the type's documentation).
    pub fn set(&mut self, hw: usize, line: u64, tid: usize, switches: u64, t: Tick) {
        self.owner[hw] = (tid, switches);
        self.set_at[hw] = t;
        if self.stored.get(&line).is_some_and(|&s| s > t) {
            self.line[hw] = 0;
            self.lost[hw] += 1;
        } else {
            self.line[hw] = line + 1;
        }
    }

    /// `hw` still holds a reservation on `line` made by software thread `tid` in its current
    /// stay on the context.
    pub fn holds(&self, hw: usize, line: u64, tid: usize, switches: u64) -> bool {
        self.line[hw] == line + 1 && self.owner[hw] == (tid, switches)
    }

    /// `hw` holds a reservation on `line` (whoever made it): what a store conditional
    /// checks when it performs.
    pub fn holds_line(&self, hw: usize, line: u64) -> bool {
        self.on && self.line[hw] == line + 1
    }

    /// Clears `hw`'s reservation (its own store conditional, interrupt or switch).
    pub fn clear(&mut self, hw: usize) {
        if self.on {
            self.line[hw] = 0;
        }
    }

    /// A store to `line` performed at `t`: every reservation on it set before `t` is lost (one
    /// set at `t` follows the store, as a thread resumed at `t` follows the events of `t`).
    pub fn store(&mut self, line: u64, t: Tick) {
        if !self.on {
            return;
        }
        let s = self.stored.entry(line).or_insert(t);
        *s = (*s).max(t);
        for (hw, l) in self.line.iter_mut().enumerate() {
            if *l == line + 1 && self.set_at[hw] < t {
                *l = 0;
                self.lost[hw] += 1;
            }
        }
    }

    /// A store or invalidation reaching core `p` for `line`: the reservations of its threads
    /// other than `except` (the storing thread) are lost.
    pub fn on_core(&mut self, p: usize, line: u64, except: Option<usize>) {
        if !self.on {
            return;
        }
        let n = self.threads_per_core;
        for hw in p * n..(p + 1) * n {
            if Some(hw) != except && self.line[hw] == line + 1 {
                self.line[hw] = 0;
                self.lost[hw] += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Stores and reservations simulated out of their time order (threads running ahead):
    /// a store loses only reservations set by its time, and a reservation set before a store
    /// simulated earlier but timed later is lost at once.
    #[test]
    fn stores_lose_reservations_by_time_not_by_simulation_order() {
        let mut r = Reservations::new(true, 2, 1);
        r.set(0, 7, 0, 0, 100);
        r.store(7, 90);
        assert!(
            r.holds_line(0, 7),
            "a store at 90 precedes a reservation at 100"
        );
        r.store(7, 100);
        assert!(
            r.holds_line(0, 7),
            "a store at the reservation's time precedes it"
        );
        r.store(7, 101);
        assert!(
            !r.holds_line(0, 7),
            "a store after the reservation loses it"
        );
        r.set(1, 9, 1, 0, 50);
        assert!(r.holds_line(1, 9));
        r.store(8, 60);
        r.set(1, 8, 1, 0, 55);
        assert!(!r.holds_line(1, 8), "the store at 60 was simulated first");
        r.set(1, 8, 1, 0, 60);
        assert!(
            r.holds_line(1, 8),
            "a store at the same time as the reservation precedes it"
        );
        assert_eq!(r.lost, vec![1, 1]);
    }

    #[test]
    fn stores_and_invalidations_lose_reservations_on_their_line_only() {
        let mut r = Reservations::new(true, 2, 4);
        r.set(1, 7, 1, 0, 0);
        r.set(5, 7, 5, 0, 0);
        r.set(6, 8, 6, 0, 0);
        assert!(r.holds(1, 7, 1, 0));
        // A switch off and back on the context (switch count moved), another thread: lost.
        assert!(!r.holds(1, 7, 1, 1));
        assert!(!r.holds(1, 7, 2, 0));
        // A sibling's plain store on core 0 (thread 1 storing: its own kept).
        r.on_core(0, 7, Some(1));
        assert!(r.holds_line(1, 7));
        r.on_core(1, 7, None);
        assert!(!r.holds_line(5, 7) && r.holds_line(6, 8) && r.holds_line(1, 7));
        r.store(7, 10);
        assert!(!r.holds_line(1, 7));
        assert_eq!(r.lost, vec![0, 1, 0, 0, 0, 1, 0, 0]);
        let mut off = Reservations::new(false, 2, 4);
        off.store(7, 0);
        off.clear(3);
        assert!(!off.holds_line(0, 7));
    }
}
