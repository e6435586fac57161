//! Sharing micro-kernels: false sharing, producer/consumer, a contended lock, migratory data.

use crate::{Array, Barrier, Ctx, Lock, Place, Shared, Verification, Workload};
use machine::sim::Setup;
use std::cell::Cell;

/// Per-thread counters packed into one line: every increment is a coherence miss.
pub struct FalseSharing {
    iters: u64,
    counters: Array,
    values: Shared<u64>,
    start: Option<Barrier>,
}

impl FalseSharing {
    pub fn new(iters: u64) -> Self {
        FalseSharing {
            iters,
            counters: Array { base: 0, elem: 8 },
            values: Shared::new(0, 0),
            start: None,
        }
    }
}

impl Workload for FalseSharing {
    fn setup(&mut self, s: &mut Setup, n: usize) {
        self.counters.base = s.alloc("counters", 8 * n as u64, Place::Node(0));
        self.values = Shared::new(n, 0);
        self.start = Some(s.barrier("start", n));
    }
    fn thread(&self, ctx: &mut Ctx) {
        let me = ctx.tid();
        ctx.barrier(self.start.unwrap());
        let a = self.counters.at(me);
        for _ in 0..self.iters {
            ctx.load(a);
            ctx.int(1);
            self.values.set(me, self.values.get(me) + 1);
            ctx.store(a);
            ctx.branch(true);
        }
    }
    fn verify(&self) -> Verification {
        let bad = (0..self.values.len()).find(|&i| self.values.get(i) != self.iters);
        Verification::check(
            bad.is_none(),
            format!(
                "{} counters each incremented {} times{}",
                self.values.len(),
                self.iters,
                bad.map(|i| format!("; counter {i} is {}", self.values.get(i)))
                    .unwrap_or_default()
            ),
        )
    }
}

/// Pairs of threads hand a block back and forth: the producer fills it, raises `full`, the
/// consumer sums it and raises `empty`.
pub struct ProducerConsumer {
    rounds: u64,
    words: usize,
    buffer: Array,
    data: Shared<u64>,
    flags: Vec<(u64, u64)>,
    sums: Shared<u64>,
}

impl ProducerConsumer {
    pub fn new(rounds: u64, words: usize) -> Self {
        ProducerConsumer {
            rounds,
            words,
            buffer: Array { base: 0, elem: 8 },
            data: Shared::new(0, 0),
            flags: Vec::new(),
            sums: Shared::new(0, 0),
        }
    }
    fn value(pair: usize, round: u64, k: usize) -> u64 {
        (pair as u64 + 1) * 1_000_003 + round * 1009 + k as u64
    }
}

impl Workload for ProducerConsumer {
    fn setup(&mut self, s: &mut Setup, n: usize) {
        let pairs = n.div_ceil(2).max(1);
        let bytes = (pairs * self.words * 8) as u64;
        self.buffer.base = s.alloc("buffer", bytes, Place::RoundRobin);
        self.data = Shared::new(pairs * self.words, 0);
        self.sums = Shared::new(pairs, 0);
        // Each flag on a line of its own: the machine keeps one data word per line, so two
        // flags sharing a line (128-byte lines on `flash`) would overwrite each other.
        let line = s.map().line_bytes();
        let flags = s.alloc("flags", 2 * line * pairs as u64, Place::RoundRobin);
        self.flags = (0..pairs as u64)
            .map(|i| (flags + 2 * i * line, flags + (2 * i + 1) * line))
            .collect();
    }
    fn thread(&self, ctx: &mut Ctx) {
        let me = ctx.tid();
        let pair = me / 2;
        let (full, empty) = self.flags[pair];
        let base = pair * self.words;
        let consumer = me % 2 == 1;
        if !consumer && me + 1 >= ctx.nthreads() {
            return; // an odd thread out has no partner
        }
        for r in 1..=self.rounds {
            if consumer {
                ctx.spin_until(full, |v| v >= r);
                let mut sum = 0u64;
                for k in 0..self.words {
                    ctx.load(self.buffer.at(base + k));
                    ctx.int(1);
                    sum = sum.wrapping_add(self.data.get(base + k));
                }
                self.sums.set(pair, self.sums.get(pair).wrapping_add(sum));
                ctx.store_value(empty, r);
            } else {
                ctx.spin_until(empty, |v| v >= r - 1);
                for k in 0..self.words {
                    self.data.set(base + k, Self::value(pair, r, k));
                    ctx.int(1);
                    ctx.store(self.buffer.at(base + k));
                }
                ctx.store_value(full, r);
            }
        }
    }
    fn verify(&self) -> Verification {
        let pairs = self.sums.len();
        for p in 0..pairs {
            let want: u64 = (1..=self.rounds)
                .flat_map(|r| (0..self.words).map(move |k| Self::value(p, r, k)))
                .fold(0u64, |a, b| a.wrapping_add(b));
            let got = self.sums.get(p);
            // A pair whose consumer did not exist (odd thread count) sums nothing.
            if got != want && got != 0 {
                return Verification::failed(format!(
                    "pair {p}: consumer summed {got}, expected {want}"
                ));
            }
        }
        Verification::ok(format!(
            "{pairs} consumers summed {} rounds of {} words each, as produced",
            self.rounds, self.words
        ))
    }
}

/// Every thread increments one shared counter under one lock.
pub struct LockCounter {
    iters: u64,
    lock: Option<Lock>,
    counter: u64,
    value: Cell<u64>,
    threads: Cell<u64>,
}

impl LockCounter {
    pub fn new(iters: u64) -> Self {
        LockCounter {
            iters,
            lock: None,
            counter: 0,
            value: Cell::new(0),
            threads: Cell::new(0),
        }
    }
}

impl Workload for LockCounter {
    fn setup(&mut self, s: &mut Setup, n: usize) {
        self.lock = Some(s.lock("lock"));
        self.counter = s.alloc("counter", 8, Place::Node(0));
        self.threads.set(n as u64);
    }
    fn thread(&self, ctx: &mut Ctx) {
        let l = self.lock.unwrap();
        for _ in 0..self.iters {
            ctx.lock(l);
            ctx.load(self.counter);
            self.value.set(self.value.get() + 1);
            ctx.int(1);
            ctx.store(self.counter);
            ctx.unlock(l);
            ctx.int(20);
        }
    }
    fn verify(&self) -> Verification {
        let want = self.iters * self.threads.get();
        Verification::check(
            self.value.get() == want,
            format!("counter = {} (expected {want})", self.value.get()),
        )
    }
}

/// A record that migrates: each thread, in turn, reads and rewrites all its fields.
pub struct Migratory {
    iters: u64,
    record: Array,
    fields: Shared<u64>,
    lock: Option<Lock>,
    threads: Cell<u64>,
}

const RECORD_WORDS: usize = 32; // 4 lines of 64 bytes

impl Migratory {
    pub fn new(iters: u64) -> Self {
        Migratory {
            iters,
            record: Array { base: 0, elem: 8 },
            fields: Shared::new(RECORD_WORDS, 0),
            lock: None,
            threads: Cell::new(0),
        }
    }
}

impl Workload for Migratory {
    fn setup(&mut self, s: &mut Setup, n: usize) {
        self.record.base = s.alloc("record", (RECORD_WORDS * 8) as u64, Place::Node(0));
        self.lock = Some(s.lock("lock"));
        self.threads.set(n as u64);
    }
    fn thread(&self, ctx: &mut Ctx) {
        let l = self.lock.unwrap();
        for _ in 0..self.iters {
            ctx.lock(l);
            for k in 0..RECORD_WORDS {
                ctx.load(self.record.at(k));
                ctx.int(1);
                self.fields.set(k, self.fields.get(k) + k as u64 + 1);
                ctx.store(self.record.at(k));
            }
            ctx.unlock(l);
            ctx.int(50);
        }
    }
    fn verify(&self) -> Verification {
        let visits = self.iters * self.threads.get();
        let bad = (0..RECORD_WORDS).find(|&k| self.fields.get(k) != visits * (k as u64 + 1));
        Verification::check(
            bad.is_none(),
            format!(
                "{visits} updates of every field{}",
                bad.map(|k| format!("; field {k} wrong"))
                    .unwrap_or_default()
            ),
        )
    }
}
