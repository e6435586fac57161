//! The deterministic event queue: a calendar queue for the near future and a binary heap for
//! the far future.
//!
//! Events are ordered by `(time, priority, sequence)`. The sequence number is assigned at
//! `schedule` time, so two events at the same tick and priority come out in the order they were
//! scheduled; this is what makes runs repeatable.
//!
//! The near window holds `WINDOW` consecutive ticks, one bucket per tick, with a bitmap of
//! non-empty buckets so that finding the next event skips empty ticks 64 at a time. Simulated
//! machines schedule most events a few to a few hundred ticks ahead, so almost every operation
//! touches one bucket: several times cheaper than a heap of all events.

use crate::time::Tick;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

const WINDOW_BITS: u32 = 12;
const WINDOW: u64 = 1 << WINDOW_BITS;
const MASK: u64 = WINDOW - 1;
const WORDS: usize = (WINDOW / 64) as usize;

struct Far<E> {
    time: Tick,
    prio: u8,
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
        (o.time, o.prio, o.seq).cmp(&(self.time, self.prio, self.seq))
    }
}

const NIL: u32 = u32::MAX;

/// One pending near event, linked into its tick's bucket list.
struct Node<E> {
    prio: u8,
    seq: u64,
    next: u32,
    ev: Option<E>,
}

/// A deterministic priority queue of events of type `E`.
///
/// Near events live in one slab of nodes; each tick of the window has a singly linked list
/// (head and tail indices) kept in `(prio, seq)` order. Freed nodes are reused last-in first
/// out, so the nodes in use stay few and hot in the host's caches.
pub struct EventQueue<E> {
    now: Tick,
    seq: u64,
    nodes: Vec<Node<E>>,
    free: Vec<u32>,
    head: Vec<u32>,
    tail: Vec<u32>,
    bits: [u64; WORDS],
    near_len: usize,
    far: BinaryHeap<Far<E>>,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            now: 0,
            seq: 0,
            nodes: Vec::new(),
            free: Vec::new(),
            head: vec![NIL; WINDOW as usize],
            tail: vec![NIL; WINDOW as usize],
            bits: [0; WORDS],
            near_len: 0,
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
        self.near_len + self.far.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Schedules `ev` at `time` with `prio` (lower runs first among events of the same tick).
    ///
    /// # Panics
    /// If `time` is before the current time: an event in the past is a simulator bug.
    #[inline]
    pub fn schedule(&mut self, time: Tick, prio: u8, ev: E) {
        assert!(
            time >= self.now,
            "event scheduled in the past ({time} < {})",
            self.now
        );
        let seq = self.seq;
        self.seq += 1;
        if time - self.now < WINDOW {
            self.insert_near(time, prio, seq, ev);
        } else {
            self.far.push(Far {
                time,
                prio,
                seq,
                ev,
            });
        }
    }

    #[inline]
    fn alloc(&mut self, prio: u8, seq: u64, ev: E) -> u32 {
        let node = Node {
            prio,
            seq,
            next: NIL,
            ev: Some(ev),
        };
        match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        }
    }

    #[inline]
    fn insert_near(&mut self, time: Tick, prio: u8, seq: u64, ev: E) {
        let b = (time & MASK) as usize;
        let n = self.alloc(prio, seq, ev);
        let t = self.tail[b];
        if t == NIL {
            self.head[b] = n;
            self.tail[b] = n;
            self.bits[b >> 6] |= 1 << (b & 63);
        } else {
            let tn = &self.nodes[t as usize];
            if (tn.prio, tn.seq) <= (prio, seq) {
                // The common case: later sequence, same or higher priority value.
                self.nodes[t as usize].next = n;
                self.tail[b] = n;
            } else {
                // Walk to the first node that must come after the new one.
                let mut prev = NIL;
                let mut cur = self.head[b];
                while cur != NIL {
                    let c = &self.nodes[cur as usize];
                    if (c.prio, c.seq) > (prio, seq) {
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
        }
        self.near_len += 1;
    }

    /// Moves far events that now fall inside the window into their buckets.
    fn migrate(&mut self) {
        while let Some(top) = self.far.peek() {
            if top.time - self.now >= WINDOW {
                break;
            }
            let f = self.far.pop().unwrap();
            self.insert_near(f.time, f.prio, f.seq, f.ev);
        }
    }

    /// The time of the next near event, scanning the bitmap from the current tick.
    fn next_near_time(&self) -> Option<Tick> {
        if self.near_len == 0 {
            return None;
        }
        let start = (self.now & MASK) as usize;
        let mut w = start >> 6;
        let mut word = self.bits[w] & (!0u64 << (start & 63));
        for _ in 0..=WORDS {
            if word != 0 {
                let i = (w << 6) + word.trailing_zeros() as usize;
                let off = (i as u64).wrapping_sub(start as u64) & MASK;
                return Some(self.now + off);
            }
            w = (w + 1) % WORDS;
            word = self.bits[w];
        }
        unreachable!("near_len > 0 but no bucket bit set")
    }

    /// Time of the next event without removing it.
    #[inline]
    pub fn peek_time(&self) -> Option<Tick> {
        match self.next_near_time() {
            Some(t) => Some(t),
            None => self.far.peek().map(|f| f.time),
        }
    }

    /// Removes and returns the next event with its time.
    pub fn pop(&mut self) -> Option<(Tick, E)> {
        if self.near_len == 0 {
            let t = self.far.peek()?.time;
            self.now = t;
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
        let ev = node.ev.take().expect("live node");
        self.head[b] = node.next;
        if node.next == NIL {
            self.tail[b] = NIL;
            self.bits[b >> 6] &= !(1 << (b & 63));
        }
        self.free.push(n);
        self.near_len -= 1;
        Some((t, ev))
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
        let mut rng = SimRng::new(7);
        let mut q = EventQueue::new();
        let mut reference = BTreeSet::new();
        let mut seq = 0u64;
        let mut popped = 0;
        for _ in 0..200 {
            let t = rng.below(20_000);
            let p = rng.below(3) as u8;
            q.schedule(t, p, seq);
            reference.insert((t, p, seq));
            seq += 1;
        }
        while let Some((t, ev)) = q.pop() {
            let first = *reference.iter().next().unwrap();
            reference.remove(&first);
            assert_eq!((t, ev), (first.0, first.2));
            assert_eq!(q.now(), t);
            popped += 1;
            if popped < 20_000 {
                for _ in 0..rng.below(3) {
                    let dt = if rng.chance(0.1) {
                        rng.below(50_000)
                    } else {
                        rng.below(300)
                    };
                    let p = rng.below(3) as u8;
                    q.schedule(t + dt, p, seq);
                    reference.insert((t + dt, p, seq));
                    seq += 1;
                }
            }
            assert_eq!(q.peek_time(), reference.iter().next().map(|e| e.0));
        }
        assert!(reference.is_empty());
        assert!(popped > 1000);
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
