//! The deterministic event queue: a calendar queue for the near future and a binary heap for
//! the far future.
//!
//! Events are ordered by `(time, priority, source, sequence)`. The source is the caller's
//! (`set_source`, 0 unless set); the sequence number is assigned at `schedule` time, so two
//! events at the same tick, priority and source come out in the order they were scheduled;
//! this is what makes runs repeatable.
//!
//! The near window holds `WINDOW` consecutive ticks, one bucket per tick, with a bitmap of
//! non-empty buckets so that finding the next event skips empty ticks 64 at a time. Simulated
//! machines schedule most events a few to a few hundred ticks ahead, so almost every operation
//! touches one bucket: several times cheaper than a heap of all events.
//!
//! *The lane.* Light events ([`EventQueue::set_light`]: a simulated machine's thread
//! resumptions, at most one per processor and most of a 16-thread replay's events) are kept
//! apart, in one list sorted by `(time, ord)` with equal keys in arrival order, and merged
//! with the calendar's earliest by one comparison when popping: a light event is taken when
//! it is strictly earlier, since at one tick every heavy event comes before every light
//! one. A resumption is nearly always scheduled later than all or all but one or two of
//! those pending (omp16's replay: none to walk back over for 49 % of them, 1.3 on average;
//! BENCHMARKS.md, "Issue 19: the cost of a resumption"), so inserting walks back from the
//! tail a step or two, and popping takes the head: cheaper than the calendar's node, tail,
//! bitmap and cached time, and the calendar then holds only heavy events, so
//! [`EventQueue::first_heavy`] is the calendar's earliest time, not a scan of the buckets'
//! heads. The order is unchanged: `(time, priority, source, sequence)` over both.

use crate::time::Tick;
use std::cell::Cell;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

const WINDOW_BITS: u32 = 12;
const WINDOW: u64 = 1 << WINDOW_BITS;
const MASK: u64 = WINDOW - 1;
const WORDS: usize = (WINDOW / 64) as usize;

struct Far<E> {
    time: Tick,
    ord: u32,
    seq: u64,
    ev: E,
}
impl<E> PartialEq for Far<E> {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl<E> Eq for Far<E> {}
impl<E> PartialOrd for Far<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Far<E> {
    fn cmp(&self, o: &Self) -> Ordering {
        // BinaryHeap is a max-heap: reverse so the earliest comes out first.
        (o.time, o.ord, o.seq).cmp(&(self.time, self.ord, self.seq))
    }
}

const NIL: u32 = u32::MAX;

/// The bit that marks a node of the lane in the handle [`EventQueue::pop_node`] returns (the
/// calendar's node indices stay far below it).
const LANE: u32 = 1 << 31;

/// The largest event source ([`EventQueue::set_source`]).
pub const MAX_SOURCE: u32 = (1 << 24) - 1;

/// The order of events of one tick: priority, then source.
#[inline(always)]
fn ord(prio: u8, src: u32) -> u32 {
    (prio as u32) << 24 | src
}

/// One pending near event, linked into its tick's bucket list (or, when free, into the
/// free list).
///
/// No sequence number: within a bucket, events arrive in sequence order. A near event at
/// tick `T` can only be scheduled once `T - now < WINDOW`, and every `pop` that advances
/// `now` first migrates the far events with `time - now < WINDOW`, so a far event always
/// reaches its bucket before any later-scheduled near event of the same tick; far events
/// migrate in `(time, ord, seq)` order. Keeping a bucket sorted by `ord` (priority, then
/// source), with equal `ord`s in arrival order, is therefore keeping it in `(ord, seq)` order.
///
/// Events are `Copy` (plain data), so a freed node keeps its stale event: nothing to drop,
/// no `Option` to test when popping.
struct Node<E> {
    /// The event's priority and source, [`ord`]: the order of events of one tick.
    ord: u32,
    next: u32,
    ev: E,
}

/// One pending light event, linked into the lane in `(time, ord)` order (or, when free, into
/// the lane's free list through `next`). Arrival order is sequence order here too: equal
/// keys are linked after each other as they arrive, and no light event is ever far.
struct LaneNode<E> {
    time: Tick,
    ord: u32,
    prev: u32,
    next: u32,
    ev: E,
}

/// A deterministic priority queue of events of type `E`.
///
/// Near events live in one slab of nodes; each tick of the window has a singly linked list
/// (head and tail indices) kept in `(ord, seq)` order. Freed nodes are reused last-in first
/// out, so the nodes in use stay few and hot in the host's caches.
pub struct EventQueue<E> {
    now: Tick,
    seq: u64,
    /// The source of the events being scheduled ([`EventQueue::set_source`]).
    src: u32,
    nodes: Vec<Node<E>>,
    /// Head of the list of free nodes, linked through `next`.
    free: u32,
    /// Per tick of the window, the first and last node of its list (fixed-size arrays: a
    /// bucket index is masked to the window, so indexing needs no bounds check).
    head: Box<[u32; WINDOW as usize]>,
    tail: Box<[u32; WINDOW as usize]>,
    bits: [u64; WORDS],
    /// The smallest `ord` of a light event ([`EventQueue::set_light`]; `u32::MAX`: none).
    /// Light events go to the lane, so every event of the calendar and the far heap is
    /// heavy.
    light_ord: u32,
    /// The lane's nodes (see the module documentation), its first and last, its free list
    /// and its length.
    lane: Vec<LaneNode<E>>,
    lane_head: u32,
    /// The time of the lane's first event, `Tick::MAX` when it is empty: what the merge
    /// with the calendar reads, without a test of the head and a load through it.
    lane_first: Tick,
    lane_tail: u32,
    lane_free: u32,
    lane_len: usize,
    near_len: usize,
    /// The time of the earliest near event when known (`None`: scan the bitmap). Set by a
    /// scan, lowered by each insertion, kept by a pop that leaves its tick's bucket
    /// non-empty, forgotten by one that empties it. An event loop peeks at the next time
    /// after each pop (a run-ahead bound) and pops again after scheduling a few events:
    /// the pop then finds the time known, where it scanned the bitmap a second time
    /// (about 14 instructions per event in a 16-thread replay, BENCHMARKS.md). A `Cell`:
    /// `peek_time` takes `&self`.
    next: Cell<Option<Tick>>,
    far: BinaryHeap<Far<E>>,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            now: 0,
            seq: 0,
            src: 0,
            nodes: Vec::new(),
            free: NIL,
            head: Box::new([NIL; WINDOW as usize]),
            tail: Box::new([NIL; WINDOW as usize]),
            bits: [0; WORDS],
            light_ord: u32::MAX,
            lane: Vec::new(),
            lane_head: NIL,
            lane_first: Tick::MAX,
            lane_tail: NIL,
            lane_free: NIL,
            lane_len: 0,
            near_len: 0,
            next: Cell::new(None),
            far: BinaryHeap::new(),
        }
    }

    /// Time of the most recently popped event (the current simulated time).
    #[inline]
    pub fn now(&self) -> Tick {
        self.now
    }

    /// Number of pending events.
    pub fn len(&self) -> usize {
        self.near_len + self.far.len() + self.lane_len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Schedules `ev` at `time` with `prio` (lower runs first among events of the same tick),
    /// from the current source ([`EventQueue::set_source`]).
    ///
    /// # Panics
    /// If `time` is before the current time: an event in the past is a simulator bug.
    #[inline(always)]
    pub fn schedule(&mut self, time: Tick, prio: u8, ev: E) {
        assert!(
            time >= self.now,
            "event scheduled in the past ({time} < {})",
            self.now
        );
        let ord = ord(prio, self.src);
        if ord >= self.light_ord {
            self.insert_lane(time, ord, ev);
        } else if time - self.now < WINDOW {
            self.insert_near(time, ord, ev);
        } else {
            // Only far events carry a sequence number (near ones are ordered by arrival,
            // see `Node`): it orders far events of the same time, priority and source
            // among themselves, which is all it must do.
            let seq = self.seq;
            self.seq += 1;
            self.far.push(Far { time, ord, seq, ev });
        }
    }

    /// [`EventQueue::schedule`] in line at its call site, for an event loop's most frequent
    /// scheduling of a small event: the node then gets the event's few bytes, not a copy
    /// of a whole event (as large as the largest kind) passed by reference.
    #[inline(always)]
    pub fn schedule_inline(&mut self, time: Tick, prio: u8, ev: E) {
        assert!(
            time >= self.now,
            "event scheduled in the past ({time} < {})",
            self.now
        );
        let ord = ord(prio, self.src);
        if ord >= self.light_ord {
            self.insert_lane_inline(time, ord, ev);
        } else if time - self.now < WINDOW {
            self.insert_near_inline(time, ord, ev);
        } else {
            self.schedule(time, prio, ev);
        }
    }

    /// The source of the events scheduled from now on (0, the default, up to
    /// [`MAX_SOURCE`]): events of the same tick and priority are taken by source, lowest
    /// first, and those of one source in the order they were scheduled. An event loop
    /// whose sources run ahead of it in stretches it cuts as it likes (a simulated
    /// machine's processors) gets an order of same-tick events that does not depend on
    /// where it cut them (`machine::sim`'s module documentation).
    #[inline(always)]
    pub fn set_source(&mut self, src: u32) {
        debug_assert!(src <= MAX_SOURCE, "event source {src} out of range");
        self.src = src;
    }

    /// Events of priority `prio` or above are *light*, the others *heavy*
    /// ([`EventQueue::first_heavy`]); light events are kept in the lane (the module
    /// documentation). Set before any event is scheduled.
    pub fn set_light(&mut self, prio: u8) {
        assert!(self.is_empty(), "set_light with events queued");
        self.light_ord = ord(prio, 0);
    }

    /// The time of the earliest heavy event ([`EventQueue::set_light`]) at `from` or later,
    /// if it is before `limit`; otherwise `limit`, or less (a far event, beyond the near
    /// window, is taken as heavy: the answer is then the window's end, which is still no
    /// later than any heavy event's time). `from` is no earlier than the current time.
    /// Every event of the calendar is heavy (the light ones are in the lane), so this is
    /// the calendar's earliest time when that is at `from` or later, and otherwise a scan
    /// of its bitmap from `from`, 64 ticks a word: for an event loop that needs the next
    /// event of some kinds only within a short distance of the next event of any kind
    /// (`machine::sim`'s run-ahead bound).
    #[inline]
    pub fn first_heavy(&self, from: Tick, limit: Tick) -> Tick {
        debug_assert!(from >= self.now);
        // Far events are all at `now + WINDOW` or later (`migrate`).
        let end = self.now + WINDOW;
        if from >= end {
            return from.min(limit);
        }
        let limit = limit.min(end);
        // Every near event is heavy (the light ones are in the lane): the answer is the
        // calendar's earliest when it is at `from` or later, as it is for a run-ahead
        // bound (`from` the next event of any kind).
        match self.next_near_time() {
            None => limit,
            Some(n) if n >= from => n.min(limit),
            Some(_) => self.first_near_from(from, limit),
        }
    }

    /// The first tick in `[from, limit)` whose bucket holds an event, or `limit` (`limit`
    /// no later than the window's end): [`EventQueue::first_heavy`] when events lie before
    /// `from`. Scans the bitmap 64 ticks a word.
    #[cold]
    #[inline(never)]
    fn first_near_from(&self, from: Tick, limit: Tick) -> Tick {
        let mut t = from;
        while t < limit {
            let b = (t & MASK) as usize;
            let word = self.bits[b >> 6] & (!0u64 << (b & 63));
            if word == 0 {
                t += 64 - (b & 63) as u64;
                continue;
            }
            let at = t + (word.trailing_zeros() as usize - (b & 63)) as u64;
            return at.min(limit);
        }
        limit
    }

    /// A node holding `ev`, from the free list (or a new one). A reused node's fields are
    /// written one by one: building the whole node and copying it in took the node's size in
    /// stores and loads (64 bytes for the machine's events) where a small event (a thread's
    /// `Resume`, most events of a 16-thread replay) needs its tag and a few bytes, about 8
    /// instructions per event (issue 19, BENCHMARKS.md).
    #[inline(always)]
    fn alloc(&mut self, ord: u32, ev: E) -> u32 {
        let i = self.free;
        if i != NIL {
            let slot = &mut self.nodes[i as usize];
            self.free = slot.next;
            slot.ord = ord;
            slot.next = NIL;
            slot.ev = ev;
            i
        } else {
            self.grow(Node { ord, next: NIL, ev })
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, node: Node<E>) -> u32 {
        self.nodes.push(node);
        (self.nodes.len() - 1) as u32
    }

    /// Inserts into the bucket of `time`, after every node of the same or a lower `ord`
    /// (see [`Node`] for why arrival order is sequence order).
    #[inline]
    fn insert_near(&mut self, time: Tick, ord: u32, ev: E) {
        self.insert_near_inline(time, ord, ev)
    }

    #[inline(always)]
    fn insert_near_inline(&mut self, time: Tick, ord: u32, ev: E) {
        let b = (time & MASK) as usize;
        let n = self.alloc(ord, ev);
        let t = self.tail[b];
        if t == NIL {
            self.head[b] = n;
            self.tail[b] = n;
            self.bits[b >> 6] |= 1 << (b & 63);
        } else {
            if self.nodes[t as usize].ord <= ord {
                // The common case: same or higher priority value (or source) than the last.
                self.nodes[t as usize].next = n;
                self.tail[b] = n;
            } else {
                self.insert_before_later(b, n, ord);
            }
        }
        self.near_len += 1;
        if let Some(next) = self.next.get() {
            if time < next {
                self.next.set(Some(time));
            }
        }
    }

    /// Inserts a light event into the lane, after every node of the same or an earlier
    /// `(time, ord)` (so equal keys keep their arrival order): a walk back from the tail,
    /// nearly always of none to two steps (the module documentation).
    #[inline]
    fn insert_lane(&mut self, time: Tick, ord: u32, ev: E) {
        self.insert_lane_inline(time, ord, ev)
    }

    #[inline(always)]
    fn insert_lane_inline(&mut self, time: Tick, ord: u32, ev: E) {
        let mut prev = self.lane_tail;
        while prev != NIL {
            let q = self.ln(prev);
            if q.time < time || (q.time == time && q.ord <= ord) {
                break;
            }
            prev = q.prev;
        }
        let next = if prev == NIL {
            self.lane_head
        } else {
            self.ln(prev).next
        };
        let n = self.lane_free;
        let n = if n != NIL {
            // Fields one by one, as `alloc` does (a small event's few bytes, not the node).
            self.lane_free = self.ln(n).next;
            let slot = self.ln_mut(n);
            slot.time = time;
            slot.ord = ord;
            slot.prev = prev;
            slot.next = next;
            slot.ev = ev;
            n
        } else {
            self.grow_lane(LaneNode {
                time,
                ord,
                prev,
                next,
                ev,
            })
        };
        if prev == NIL {
            self.lane_head = n;
            self.lane_first = time;
        } else {
            self.ln_mut(prev).next = n;
        }
        if next == NIL {
            self.lane_tail = n;
        } else {
            self.ln_mut(next).prev = n;
        }
        self.lane_len += 1;
    }

    #[cold]
    #[inline(never)]
    fn grow_lane(&mut self, node: LaneNode<E>) -> u32 {
        self.lane.push(node);
        let n = (self.lane.len() - 1) as u32;
        assert!(n < LANE, "too many light events");
        n
    }

    /// The lane's node `i`, without a bounds test: about a dozen of them per light event
    /// scheduled and popped, each test with its loads of the vector's length about 3
    /// instructions (callgrind of the omp16 replay: +143 M instructions with the tests,
    /// BENCHMARKS.md "Issue 19: the cost of a resumption").
    #[inline(always)]
    fn ln(&self, i: u32) -> &LaneNode<E> {
        debug_assert!((i as usize) < self.lane.len());
        // SAFETY: `i` is a link of the lane (its head, tail, free list or a node's `prev` or
        // `next`) other than `NIL`; every such link is the index of a node pushed by
        // `grow_lane`, and nodes are never removed, so it is below `lane.len()`.
        unsafe { self.lane.get_unchecked(i as usize) }
    }

    /// [`EventQueue::ln`], mutable.
    #[inline(always)]
    fn ln_mut(&mut self, i: u32) -> &mut LaneNode<E> {
        debug_assert!((i as usize) < self.lane.len());
        // SAFETY: as in `ln`.
        unsafe { self.lane.get_unchecked_mut(i as usize) }
    }

    /// Links node `n` into bucket `b` before the first node of a higher `ord`.
    #[cold]
    #[inline(never)]
    fn insert_before_later(&mut self, b: usize, n: u32, ord: u32) {
        // Walk to the first node that must come after the new one.
        let mut prev = NIL;
        let mut cur = self.head[b];
        while cur != NIL {
            let c = &self.nodes[cur as usize];
            if c.ord > ord {
                break;
            }
            prev = cur;
            cur = c.next;
        }
        self.nodes[n as usize].next = cur;
        if prev == NIL {
            self.head[b] = n;
        } else {
            self.nodes[prev as usize].next = n;
        }
    }

    /// Moves far events that now fall inside the window into their buckets.
    #[inline]
    fn migrate(&mut self) {
        if self
            .far
            .peek()
            .is_some_and(|top| top.time - self.now < WINDOW)
        {
            self.migrate_due();
        }
    }

    #[cold]
    #[inline(never)]
    fn migrate_due(&mut self) {
        while let Some(top) = self.far.peek() {
            if top.time - self.now >= WINDOW {
                break;
            }
            let f = self.far.pop().unwrap();
            self.insert_near(f.time, f.ord, f.ev);
        }
    }

    /// The time of the next near event, scanning the bitmap from the current tick. Inlined
    /// into `pop`: once the event loop grew (the retire flush after each resumption) the
    /// compiler stopped taking it, costing a call per event (+2% instructions on L1 hits).
    #[inline(always)]
    fn next_near_time(&self) -> Option<Tick> {
        if self.near_len == 0 {
            return None;
        }
        if let Some(t) = self.next.get() {
            return Some(t);
        }
        let t = self.scan_near_time();
        self.next.set(Some(t));
        Some(t)
    }

    /// The time of the next near event (there is one), scanning the bitmap from the
    /// current tick.
    #[inline(always)]
    fn scan_near_time(&self) -> Tick {
        let start = (self.now & MASK) as usize;
        let mut w = start >> 6;
        let mut word = self.bits[w] & (!0u64 << (start & 63));
        for _ in 0..=WORDS {
            if word != 0 {
                let i = (w << 6) + word.trailing_zeros() as usize;
                let off = (i as u64).wrapping_sub(start as u64) & MASK;
                return self.now + off;
            }
            w = (w + 1) % WORDS;
            word = self.bits[w];
        }
        unreachable!("near_len > 0 but no bucket bit set")
    }

    /// Time of the next event without removing it.
    #[inline]
    pub fn peek_time(&self) -> Option<Tick> {
        let heavy = match self.next_near_time() {
            Some(t) => Some(t),
            None => self.far.peek().map(|f| f.time),
        };
        let l = self.lane_first;
        match heavy {
            Some(h) => Some(h.min(l)),
            None if l == Tick::MAX && self.lane_head == NIL => None,
            None => Some(l),
        }
    }

    /// Removes and returns the next event with its time. Always inlined: the event loop
    /// calls it once per event (with a second, cold call site at the end of a run with
    /// probe wake-ups, a plain `#[inline]` was no longer taken: +4% instructions).
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(Tick, E)> {
        let (t, n) = self.pop_node()?;
        Some((t, *self.popped(n)))
    }

    /// [`EventQueue::pop`] without copying the event out: the time and the node that held
    /// it, which is free again; its event stays readable with [`EventQueue::popped`] until
    /// the next `schedule`. For an event loop that reads its most common event's few bytes
    /// in place (a copy of the whole event, as large as the largest kind, cost a 16-thread
    /// replay about 20 instructions per event: issue 19, BENCHMARKS.md).
    #[inline(always)]
    pub fn pop_node(&mut self) -> Option<(Tick, u32)> {
        // The calendar's earliest (or the far heap's), merged with the lane's: a light
        // event is taken only when strictly earlier (heavy events first at one tick).
        let lt = self.lane_first;
        let ct = if self.near_len != 0 {
            self.next_near_time().expect("near events present")
        } else if let Some(f) = self.far.peek() {
            f.time
        } else if self.lane_head == NIL {
            return None;
        } else {
            return Some(self.pop_lane(lt));
        };
        if lt < ct {
            return Some(self.pop_lane(lt));
        }
        if self.near_len == 0 {
            self.now = ct;
            self.migrate();
        }
        let t = self.next_near_time().expect("near events present");
        if t != self.now {
            self.now = t;
            self.migrate();
        }
        let b = (t & MASK) as usize;
        let n = self.head[b];
        let node = &mut self.nodes[n as usize];
        let next = node.next;
        node.next = self.free;
        self.free = n;
        self.head[b] = next;
        if next == NIL {
            self.tail[b] = NIL;
            self.bits[b >> 6] &= !(1 << (b & 63));
            self.next.set(None);
        } else {
            // The bucket's next node is of the same tick: still the earliest.
            self.next.set(Some(t));
        }
        self.near_len -= 1;
        Some((t, n))
    }

    /// Takes the lane's first event, at `t` (the earliest of all events).
    #[inline(always)]
    fn pop_lane(&mut self, t: Tick) -> (Tick, u32) {
        let n = self.lane_head;
        let free = self.lane_free;
        let node = self.ln_mut(n);
        let next = node.next;
        node.next = free;
        self.lane_free = n;
        self.lane_head = next;
        if next == NIL {
            self.lane_tail = NIL;
            self.lane_first = Tick::MAX;
        } else {
            let second = self.ln_mut(next);
            second.prev = NIL;
            self.lane_first = second.time;
        }
        self.lane_len -= 1;
        if t != self.now {
            self.now = t;
            self.migrate();
        }
        (t, n | LANE)
    }

    /// The event of node `n` just returned by [`EventQueue::pop_node`] (valid until the
    /// next `schedule`, which may reuse the node).
    #[inline(always)]
    pub fn popped(&self, n: u32) -> &E {
        if n & LANE != 0 {
            &self.ln(n & !LANE).ev
        } else {
            &self.nodes[n as usize].ev
        }
    }

    /// Whether the node `n` just returned by [`EventQueue::pop_node`] was a light event's
    /// (so an event loop whose only light events are of one kind knows the kind).
    #[inline(always)]
    pub fn popped_light(n: u32) -> bool {
        n & LANE != 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SimRng;
    use std::collections::BTreeSet;

    #[test]
    fn orders_by_time_priority_sequence() {
        let mut q = EventQueue::new();
        q.schedule(5, 1, "b");
        q.schedule(5, 0, "a");
        q.schedule(5, 1, "c");
        q.schedule(3, 9, "first");
        q.schedule(10_000, 0, "far");
        q.schedule(10_000, 0, "far2");
        let got: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            got,
            vec![
                (3, "first"),
                (5, "a"),
                (5, "b"),
                (5, "c"),
                (10_000, "far"),
                (10_000, "far2")
            ]
        );
    }

    /// The calendar queue gives exactly the order of a reference sorted set, with events
    /// scheduled while popping (as a simulation does), across window boundaries.
    #[test]
    fn matches_reference_order_under_random_use() {
        for light in [None, Some(1), Some(2)] {
            check_against_reference(light, |rng| {
                if rng.chance(0.1) {
                    rng.below(50_000)
                } else {
                    rng.below(300)
                }
            });
        }
    }

    /// Far and near events of the same tick and priority, crossing the window edge: the
    /// order must still be the scheduling order (the buckets keep no sequence numbers).
    #[test]
    fn far_and_near_events_of_one_tick_keep_sequence_order() {
        const DT: [u64; 7] = [0, 1, 2, WINDOW - 1, WINDOW, WINDOW + 1, 2 * WINDOW];
        for light in [None, Some(1), Some(2)] {
            check_against_reference(light, |rng| DT[rng.below(DT.len() as u64) as usize]);
        }
    }

    /// `first_heavy` gives the earliest heavy event in its range, as a scan of a reference
    /// set does, with events scheduled and popped at random across the window's edge
    /// (never later than it, and exactly it when the range is inside the near window).
    #[test]
    fn first_heavy_matches_the_reference() {
        let mut rng = SimRng::new(11);
        let mut q = EventQueue::new();
        q.set_light(3);
        let mut reference = BTreeSet::new();
        let mut seq = 0u64;
        let mut exact = 0;
        for _ in 0..30_000 {
            for _ in 0..rng.below(3) {
                let dt = if rng.chance(0.05) {
                    rng.below(3 * WINDOW)
                } else {
                    rng.below(200)
                };
                let (t, p) = (q.now() + dt, rng.below(4) as u8);
                q.set_source(rng.below(3) as u32);
                q.schedule(t, p, seq);
                reference.insert((t, p, q.src, seq));
                seq += 1;
            }
            let from = q.now() + rng.below(50);
            let limit = from + rng.below(300);
            let want = reference
                .iter()
                .filter(|e| e.0 >= from && e.1 < 3)
                .map(|e| e.0)
                .min()
                .map_or(limit, |t| t.min(limit));
            let got = q.first_heavy(from, limit);
            assert!(got <= want && got >= from.min(limit), "{got} {want}");
            if limit <= q.now() + WINDOW {
                assert_eq!(got, want);
                exact += 1;
            }
            if rng.chance(0.6) {
                if let Some((t, ev)) = q.pop() {
                    let first = *reference.iter().next().unwrap();
                    reference.remove(&first);
                    assert_eq!((t, ev), (first.0, first.3));
                }
            }
        }
        assert!(exact > 20_000);
    }

    /// `light`: the lightest priority kept in the lane (`set_light`), or none; the
    /// order must be the reference's either way, the lane's events merged with the
    /// calendar's and the far heap's.
    fn check_against_reference(light: Option<u8>, mut delay: impl FnMut(&mut SimRng) -> u64) {
        let mut rng = SimRng::new(7);
        let mut q = EventQueue::new();
        if let Some(l) = light {
            q.set_light(l);
        }
        let mut from_lane = 0;
        // Order: time, priority, source, sequence.
        let mut reference = BTreeSet::new();
        let mut seq = 0u64;
        let mut popped = 0;
        for _ in 0..200 {
            let t = rng.below(20_000);
            let p = rng.below(3) as u8;
            let src = rng.below(3) as u32 * 5;
            q.set_source(src);
            q.schedule(t, p, seq);
            reference.insert((t, p, src, seq));
            seq += 1;
        }
        while let Some((t, n)) = q.pop_node() {
            let ev = *q.popped(n);
            let first = *reference.iter().next().unwrap();
            reference.remove(&first);
            assert_eq!((t, ev), (first.0, first.3));
            assert_eq!(q.now(), t);
            assert_eq!(
                EventQueue::<u64>::popped_light(n),
                light.is_some_and(|l| first.1 >= l)
            );
            from_lane += usize::from(EventQueue::<u64>::popped_light(n));
            popped += 1;
            if popped < 20_000 {
                for _ in 0..rng.below(3) {
                    let dt = delay(&mut rng);
                    let p = rng.below(3) as u8;
                    let src = if rng.chance(0.5) { 0 } else { MAX_SOURCE };
                    q.set_source(src);
                    q.schedule(t + dt, p, seq);
                    reference.insert((t + dt, p, src, seq));
                    seq += 1;
                }
            }
            assert_eq!(q.peek_time(), reference.iter().next().map(|e| e.0));
        }
        assert!(reference.is_empty());
        assert!(popped > 1000);
        assert_eq!(q.len(), 0);
        if light.is_some() {
            assert!(
                from_lane > popped / 4,
                "{from_lane} of {popped} from the lane"
            );
        } else {
            assert_eq!(from_lane, 0);
        }
    }

    #[test]
    #[should_panic(expected = "in the past")]
    fn scheduling_in_the_past_panics() {
        let mut q = EventQueue::new();
        q.schedule(10, 0, ());
        q.pop();
        q.schedule(9, 0, ());
    }
}
