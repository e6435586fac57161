//! A traced thread's saved horizon scan (`ctx::hits::horizon`; `sim`, "The thread's
//! horizon"), kept in its core between yields. Its own module so that the core holds it
//! without the core's module depending on the thread context's.

use engine::Tick;

/// A thread's horizon scan (`ctx::hits::horizon`), kept between its yields: the thread takes the
/// records the scan read, with the L1 and L2 contents the scan saw, unless something is
/// delivered to its caches (`agent::receive` clears `valid`) or it takes other records
/// (`run_loop` clears it on entry), so the next yield reads on from where this one stopped
/// instead of reading the same records again.
#[derive(Default)]
pub struct Scan {
    /// The L1 D and L1 I entries the scan would have filled, per set, stamped with the
    /// scan's number (so that a new scan does not clear what the last wrote).
    pub(crate) d: Vec<(u32, u64)>,
    pub(crate) i: Vec<(u32, u64)>,
    pub(crate) stamp: u32,
    /// The saved scan holds: records `first..first + len` of the slice at `items`.
    pub valid: bool,
    pub(crate) items: usize,
    pub(crate) first: usize,
    /// `cum[k]` for `k < len`: the least ticks records `first + 1..=first + k` take (the
    /// first record's own are not counted: the thread may have taken it in part);
    /// `hits::MAX_SAVED` long.
    pub(crate) cum: Vec<Tick>,
    pub(crate) len: usize,
    /// The scan stopped at the limit or its length, not at a record that may send.
    pub(crate) open: bool,
}
