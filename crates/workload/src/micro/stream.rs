//! Streaming (capacity misses) and L1-resident loops (hits).

use crate::{Array, Barrier, Ctx, Place, Shared, Verification, Workload};
use machine::sim::Setup;

/// Each thread sums its own array and scales it in place, several passes.
pub struct Stream {
    bytes: u64,
    passes: u64,
    arr: Array,
    per_thread: usize,
    data: Shared<f64>,
    sums: Shared<f64>,
    start: Option<Barrier>,
}

impl Stream {
    pub fn new(bytes: u64, passes: u64) -> Self {
        Stream {
            bytes,
            passes,
            arr: Array { base: 0, elem: 8 },
            per_thread: 0,
            data: Shared::new(0, 0.0),
            sums: Shared::new(0, 0.0),
            start: None,
        }
    }
}

impl Workload for Stream {
    fn setup(&mut self, s: &mut Setup, n: usize) {
        self.per_thread = (self.bytes / 8) as usize;
        self.arr.base = s.alloc("stream", self.bytes * n as u64, Place::FirstTouch);
        self.data = Shared::from_vec((0..self.per_thread * n).map(|i| (i % 7) as f64).collect());
        self.sums = Shared::new(n, 0.0);
        self.start = Some(s.barrier("start", n));
    }
    fn thread(&self, ctx: &mut Ctx) {
        let me = ctx.tid();
        ctx.barrier(self.start.unwrap());
        let base = me * self.per_thread;
        for _ in 0..self.passes {
            let mut sum = 0.0;
            for i in base..base + self.per_thread {
                ctx.load(self.arr.at(i));
                sum += self.data.get(i);
                self.data.set(i, self.data.get(i) * 0.5);
                ctx.fp(2);
                ctx.store(self.arr.at(i));
            }
            self.sums.set(me, self.sums.get(me) + sum);
        }
    }
    fn verify(&self) -> Verification {
        // Pass k sums the original values times 0.5^k.
        let f: f64 = (0..self.passes).map(|k| 0.5f64.powi(k as i32)).sum();
        for t in 0..self.sums.len() {
            let orig: f64 = (t * self.per_thread..(t + 1) * self.per_thread)
                .map(|i| (i % 7) as f64)
                .sum();
            let want = orig * f;
            if (self.sums.get(t) - want).abs() > 1e-9 * want.max(1.0) {
                return Verification::failed(format!(
                    "thread {t}: sum {} expected {want}",
                    self.sums.get(t)
                ));
            }
        }
        Verification::ok(format!(
            "{} threads x {} passes over {} doubles",
            self.sums.len(),
            self.passes,
            self.per_thread
        ))
    }
}

/// Each thread loops over its own small array: almost every access hits the L1.
pub struct Hits {
    refs: u64,
    arr: Array,
    sums: Shared<u64>,
}

const HITS_WORDS: u64 = 1024; // 8 KiB

impl Hits {
    pub fn new(refs: u64) -> Self {
        Hits {
            refs,
            arr: Array { base: 0, elem: 8 },
            sums: Shared::new(0, 0),
        }
    }
}

impl Workload for Hits {
    fn setup(&mut self, s: &mut Setup, n: usize) {
        self.arr.base = s.alloc("hits", HITS_WORDS * 8 * n as u64 + 4096, Place::FirstTouch);
        self.sums = Shared::new(n, 0);
    }
    fn thread(&self, ctx: &mut Ctx) {
        let me = ctx.tid() as u64;
        let base = me * (HITS_WORDS + 64);
        let mut sum = 0u64;
        let mut i = 0u64;
        for k in 0..self.refs {
            ctx.load(self.arr.at((base + i) as usize));
            sum = sum.wrapping_add(i);
            i += 1;
            if i == HITS_WORDS {
                i = 0;
            }
            if k % 4 == 3 {
                ctx.int(1);
            }
        }
        self.sums.set(me as usize, sum);
    }
    fn verify(&self) -> Verification {
        let full = self.refs / HITS_WORDS;
        let rest = self.refs % HITS_WORDS;
        let want = full * (HITS_WORDS * (HITS_WORDS - 1) / 2) + rest * (rest.saturating_sub(1)) / 2;
        let bad = (0..self.sums.len()).find(|&t| self.sums.get(t) != want);
        Verification::check(
            bad.is_none(),
            format!(
                "{} threads each summed {} indices",
                self.sums.len(),
                self.refs
            ),
        )
    }
}
