//! Informing memory operations (seed 000, Table 4.10 item 8): a program that measures its
//! own misses, first with the miss trap, then with informing loads' condition codes.

use crate::{Array, Barrier, Ctx, Place, Shared, Verification, Workload};
use machine::sim::Setup;
use machine::Served;
use std::cell::Cell;
use std::rc::Rc;

/// Each thread sums its private array `passes` times with the informing-miss trap on (its
/// handler keeps a profile: misses served by the L2 and by memory, and their stall
/// cycles), then once more with informing loads, counting the outcome of each.
pub struct Informing {
    bytes: u64,
    passes: u64,
    arr: Array,
    per_thread: usize,
    start: Option<Barrier>,
    sums: Shared<u64>,
    /// Per thread: trap profile [L2, memory, stall cycles], then informing-load counts
    /// [L1, L2, memory].
    profile: Shared<u64>,
}

const FIELDS: usize = 6;

impl Informing {
    pub fn new(bytes: u64, passes: u64) -> Self {
        Informing {
            bytes,
            passes,
            arr: Array { base: 0, elem: 8 },
            per_thread: 0,
            start: None,
            sums: Shared::new(0, 0),
            profile: Shared::new(0, 0),
        }
    }
}

impl Workload for Informing {
    fn setup(&mut self, s: &mut Setup, n: usize) {
        self.per_thread = (self.bytes / 8) as usize;
        self.arr.base = s.alloc("array", self.bytes * n as u64, Place::FirstTouch);
        self.start = Some(s.barrier("start", n));
        self.sums = Shared::new(n, 0);
        self.profile = Shared::new(n * FIELDS, 0);
    }
    fn thread(&self, ctx: &mut Ctx) {
        let me = ctx.tid();
        ctx.barrier(self.start.unwrap());
        let base = me * self.per_thread;
        let trap = Rc::new(Cell::new([0u64; 3]));
        let t2 = trap.clone();
        // The handler: classify, accumulate (a few register instructions).
        ctx.on_miss(Some(Box::new(move |ctx, info| {
            let mut p = t2.get();
            p[if info.served == Served::Memory { 1 } else { 0 }] += 1;
            p[2] += info.cycles;
            t2.set(p);
            ctx.int(3);
        })));
        let mut sum = 0u64;
        for _ in 0..self.passes {
            for i in base..base + self.per_thread {
                ctx.load(self.arr.at(i));
                sum += i as u64;
                ctx.int(1);
            }
        }
        ctx.on_miss(None);
        let mut cc = [0u64; 3];
        for i in base..base + self.per_thread {
            let served = ctx.load_informing(self.arr.at(i));
            cc[served as usize] += 1;
            ctx.branch(served != Served::L1);
            sum += i as u64;
        }
        self.sums.set(me, sum);
        for (k, v) in trap.get().into_iter().chain(cc).enumerate() {
            self.profile.set(me * FIELDS + k, v);
        }
    }
    fn verify(&self) -> Verification {
        let n = self.sums.len();
        let per = self.per_thread as u64;
        let mut tot = [0u64; FIELDS];
        for t in 0..n {
            let b = t as u64 * per;
            let want = (self.passes + 1) * (per * b + per * (per - 1) / 2);
            if self.sums.get(t) != want {
                return Verification::failed(format!(
                    "thread {t}: sum {} expected {want}",
                    self.sums.get(t)
                ));
            }
            for (k, x) in tot.iter_mut().enumerate() {
                *x += self.profile.get(t * FIELDS + k);
            }
            let loads: u64 = (3..6).map(|k| self.profile.get(t * FIELDS + k)).sum();
            if loads != per {
                return Verification::failed(format!(
                    "thread {t}: informing loads counted {loads} outcomes for {per} loads"
                ));
            }
        }
        let traps = tot[0] + tot[1];
        Verification::ok(format!(
            "{n} threads; miss trap: {traps} L1 misses ({} from L2, {} from memory, {:.1} stall cycles each); informing loads: {} L1 hits, {} L2 hits, {} memory",
            tot[0],
            tot[1],
            tot[2] as f64 / traps.max(1) as f64,
            tot[3],
            tot[4],
            tot[5]
        ))
    }
}
