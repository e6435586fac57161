//! Pointer chasing: dependent loads, each a miss to another node's memory.

use crate::{Array, Barrier, Ctx, Place, Shared, Verification, Workload};
use machine::sim::Setup;

/// Each thread follows a random cyclic list of line-sized nodes homed on the next node.
pub struct PointerChase {
    hops: u64,
    nodes_per_list: usize,
    list: Vec<Array>,
    next: Vec<Shared<u32>>,
    end: Shared<u32>,
    start: Option<Barrier>,
}

impl PointerChase {
    pub fn new(hops: u64) -> Self {
        PointerChase {
            hops,
            nodes_per_list: 1 << 15,
            list: Vec::new(),
            next: Vec::new(),
            end: Shared::new(0, 0),
            start: None,
        }
    }
    /// A random cyclic permutation (Sattolo's algorithm) from a fixed seed.
    fn cycle(n: usize, seed: u64) -> Vec<u32> {
        let mut rng = engine::SimRng::new(seed);
        let mut order: Vec<u32> = (0..n as u32).collect();
        for i in (1..n).rev() {
            let j = rng.below(i as u64) as usize;
            order.swap(i, j);
        }
        let mut next = vec![0u32; n];
        for i in 0..n {
            next[order[i] as usize] = order[(i + 1) % n];
        }
        next
    }
}

impl Workload for PointerChase {
    fn setup(&mut self, s: &mut Setup, n: usize) {
        let nodes = s.nodes();
        let line = 128u64;
        for t in 0..n {
            let home = (t + 1) % nodes.max(1);
            let node_of_thread = if nodes > 1 { home } else { 0 };
            let a = s.alloc(
                &format!("list.{t}"),
                self.nodes_per_list as u64 * line,
                Place::Node(node_of_thread),
            );
            self.list.push(Array {
                base: a,
                elem: line,
            });
            self.next.push(Shared::from_vec(Self::cycle(
                self.nodes_per_list,
                0xC4A5E + t as u64,
            )));
        }
        self.end = Shared::new(n, 0);
        self.start = Some(s.barrier("start", n));
    }
    fn thread(&self, ctx: &mut Ctx) {
        let me = ctx.tid();
        ctx.barrier(self.start.unwrap());
        let mut i = 0u32;
        for _ in 0..self.hops {
            ctx.load(self.list[me].at(i as usize));
            i = self.next[me].get(i as usize);
            ctx.int(2);
        }
        self.end.set(me, i);
    }
    fn verify(&self) -> Verification {
        for t in 0..self.end.len() {
            let next = Self::cycle(self.nodes_per_list, 0xC4A5E + t as u64);
            let mut i = 0u32;
            for _ in 0..self.hops {
                i = next[i as usize];
            }
            if self.end.get(t) != i {
                return Verification::failed(format!(
                    "thread {t} ended at {} not {i}",
                    self.end.get(t)
                ));
            }
        }
        Verification::ok(format!(
            "{} lists chased {} hops",
            self.end.len(),
            self.hops
        ))
    }
}
