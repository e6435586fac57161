//! SPLASH-2 RADIX (`radix.C` [WOT+95]): parallel integer radix sort; the FlashPoint study sorts
//! 1M keys with radix 256 (seed 004, section 3.2.1).
//!
//! Keys are 4-byte integers (SPLASH's `long` on the 32-bit MIPS of the study; ranks and
//! densities likewise) below `MAX_KEY` = 2^20 (three 8-bit digits), in two ping-pong
//! arrays `key0` and `key1`; processor p owns the contiguous partition [p N/P, (p+1) N/P) of
//! both. Per digit, as SPLASH's `slave_sort`:
//!
//! 1. each processor builds the histogram of its keys' digit in its row of `rank_me`;
//! 2. the histograms are combined by a tree-based parallel prefix over the processors on the
//!    `prefix_tree` (one page per node, as SPLASH pads them): in the up-sweep the odd child
//!    waits for its left sibling's `done` flag and writes the sum of both into the parent
//!    (SPLASH's PAUSE flags); barrier; then each processor sums the densities of the left
//!    siblings along its path to the root (its rank among processors per digit) and adds the
//!    digit's global start from the root's totals, leaving in its `rank_me` row where its first
//!    key of each digit goes;
//! 3. barrier; each processor permutes its keys into the other array at those ranks —
//!    scattered, mostly remote writes (RADIX's remote write misses in Table 1); barrier.
//!
//! Keys are generated per processor into its own partition (SPLASH's `init` runs in each
//! process); each processor also reads its partition of `key1` then, so that first-touch
//! placement homes both partitions on its node (the paper's RADIX reads are almost all local).
//! `rank_me` rows are one page each and first touch; `prefix_tree` nodes are homed on the
//! node of the processor that writes them.
//!
//! Instruction charges per key (approximate, from the loops of `radix.C`): histogram 1 load of
//! the key, 3 int (mask, shift, index), load + store of the count, 1 branch; permutation the same
//! plus the store of the key; random key generation 6 int.

use super::common::{is_pow2, phase, within};
use crate::{Array, Barrier, Ctx, Lock, Place, Procedure, Shared, Verification, Workload};
use engine::SimRng;
use machine::cpu::op::Op;
use machine::sim::Setup;

/// Radix of the FlashPoint runs (8-bit digits).
pub const RADIX: usize = 256;

/// PhaseID values (KERNELS.md, "Phases"): key generation, then per digit the local
/// histogram, the prefix over all processors' histograms (the rank merge) and the permutation,
/// each with the barrier wait that ends it.
pub const PHASE_INIT: u16 = 1;
pub const PHASE_HISTOGRAM: u16 = 2;
pub const PHASE_PREFIX: u16 = 3;
pub const PHASE_PERMUTE: u16 = 4;
/// Keys are below this bound.
pub const MAX_KEY: u64 = 1 << 20;
const DIGIT_BITS: u32 = 8;
/// Bytes of a key, a rank or a density.
const WORD: usize = 4;
/// Entries per page-sized row of `rank_me` and node of `prefix_tree`.
const ROW: usize = 4096 / WORD;

struct Procs {
    init: Procedure,
    histogram: Procedure,
    prefix: Procedure,
    permute: Procedure,
}

/// The SPLASH-2 RADIX kernel.
pub struct Radix {
    n: usize,
    per: usize,
    keys: [Array; 2],
    key: [Shared<u64>; 2],
    rank_me: Array,
    rank: Shared<u64>,
    /// Each node: `RADIX` densities (one page per node).
    prefix_tree: Array,
    density: Shared<u64>,
    done: Vec<Lock>,
    input: Vec<u64>,
    digits: u32,
    bar_rank: Option<Barrier>,
    bar_key: Option<Barrier>,
    procs: Option<Procs>,
}

impl Radix {
    /// Sorts `n` keys.
    pub fn new(n: usize) -> Radix {
        let a = Array {
            base: 0,
            elem: WORD as u64,
        };
        Radix {
            n,
            per: 0,
            keys: [a, a],
            key: [Shared::new(0, 0), Shared::new(0, 0)],
            rank_me: a,
            rank: Shared::new(0, 0),
            prefix_tree: a,
            density: Shared::new(0, 0),
            done: Vec::new(),
            input: Vec::new(),
            digits: (64 - (MAX_KEY - 1).leading_zeros()).div_ceil(DIGIT_BITS),
            bar_rank: None,
            bar_key: None,
            procs: None,
        }
    }

    /// The array holding the sorted keys at the end.
    fn sorted(&self) -> &Shared<u64> {
        &self.key[self.digits as usize % 2]
    }
    /// Swaps two output keys (for tests of the verification).
    pub fn corrupt(&self) {
        let k = self.sorted();
        let (a, b) = (k.get(0), k.get(self.n - 1));
        k.set(0, b);
        k.set(self.n - 1, a);
    }

    fn pr(&self) -> &Procs {
        self.procs.as_ref().expect("setup ran")
    }
    /// Index of entry `d` of row `p` of `rank_me` (rows one page apart).
    fn rank_idx(p: usize, d: usize) -> usize {
        p * ROW + d
    }
    /// Index of density `d` of tree node `node` (nodes one page apart).
    fn node_idx(node: usize, d: usize) -> usize {
        node * ROW + d
    }

    fn init(&self, ctx: &mut Ctx, lo: usize, hi: usize) {
        within(ctx, self.pr().init, |ctx| {
            for i in lo..hi {
                ctx.ops(&[(Op::IntCompare, 1), (Op::IntAdd, 5)]);
                self.key[0].set(i, self.input[i]);
                ctx.store(self.keys[0].at(i));
                ctx.branch(true);
            }
            // A separate sweep: key0[i] and key1[i] are often a multiple of the L2 size apart,
            // and touching both in one loop would make every access a conflict miss.
            for i in lo..hi {
                ctx.load(self.keys[1].at(i));
                ctx.int(1);
                ctx.branch(true);
            }
        });
    }

    fn histogram(&self, ctx: &mut Ctx, me: usize, from: usize, shift: u32, lo: usize, hi: usize) {
        within(ctx, self.pr().histogram, |ctx| {
            for d in 0..RADIX {
                self.rank.set(Self::rank_idx(me, d), 0);
                ctx.store(self.rank_me.at(Self::rank_idx(me, d)));
                ctx.int(1);
            }
            for i in lo..hi {
                ctx.load(self.keys[from].at(i));
                let d = ((self.key[from].get(i) >> shift) as usize) & (RADIX - 1);
                // The digit: a shift, a mask, the index.
                ctx.ops(&[(Op::IntShift, 1), (Op::IntLogical, 1), (Op::IntAdd, 1)]);
                let r = Self::rank_idx(me, d);
                ctx.load(self.rank_me.at(r));
                self.rank.set(r, self.rank.get(r) + 1);
                ctx.int(1);
                ctx.store(self.rank_me.at(r));
                ctx.branch(true);
            }
        });
    }

    /// Node `node` := `left` + `right` (densities), reading and writing the simulated tree.
    fn combine(&self, ctx: &mut Ctx, node: usize, left: usize, right: usize) {
        for d in 0..RADIX {
            let (l, r, o) = (
                Self::node_idx(left, d),
                Self::node_idx(right, d),
                Self::node_idx(node, d),
            );
            ctx.load(self.prefix_tree.at(l));
            ctx.load(self.prefix_tree.at(r));
            self.density
                .set(o, self.density.get(l) + self.density.get(r));
            ctx.int(2);
            ctx.store(self.prefix_tree.at(o));
        }
    }

    /// The tree-based parallel prefix (see the module doc); leaves this processor's first
    /// destination index per digit in its `rank_me` row.
    fn prefix(&self, ctx: &mut Ctx, me: usize, pass: u64) {
        let p = ctx.nthreads();
        let epoch = pass + 1;
        within(ctx, self.pr().prefix, |ctx| {
            // Leaf: this processor's histogram.
            for d in 0..RADIX {
                let (r, o) = (Self::rank_idx(me, d), Self::node_idx(me, d));
                ctx.load(self.rank_me.at(r));
                self.density.set(o, self.rank.get(r));
                ctx.store(self.prefix_tree.at(o));
            }
            ctx.store_value(self.done[me].0, epoch);
            // Up-sweep: an odd child combines with its left sibling into the parent.
            let (mut offset, mut base, mut level) = (me, 0, p);
            while offset % 2 == 1 {
                let right = base + offset;
                let left = right - 1;
                ctx.spin_until(self.done[left].0, |v| v >= epoch);
                let parent = base + level + offset / 2;
                self.combine(ctx, parent, left, right);
                ctx.store_value(self.done[parent].0, epoch);
                offset /= 2;
                base += level;
                level /= 2;
            }
        });
        ctx.barrier(self.bar_rank.expect("setup ran"));
        within(ctx, self.pr().prefix, |ctx| {
            // This processor's rank per digit: left siblings' densities along its path.
            let mut mine = [0u64; RADIX];
            let (mut offset, mut base, mut level) = (me, 0, p);
            while level > 1 {
                if offset % 2 == 1 {
                    for (d, m) in mine.iter_mut().enumerate() {
                        let i = Self::node_idx(base + offset - 1, d);
                        ctx.load(self.prefix_tree.at(i));
                        *m += self.density.get(i);
                        ctx.int(1);
                    }
                }
                offset /= 2;
                base += level;
                level /= 2;
            }
            // The root (at `base`) holds the totals: the digit's global start.
            let mut start = 0u64;
            for (d, m) in mine.iter().enumerate() {
                let i = Self::node_idx(base, d);
                ctx.load(self.prefix_tree.at(i));
                let r = Self::rank_idx(me, d);
                self.rank.set(r, start + m);
                start += self.density.get(i);
                ctx.int(2);
                ctx.store(self.rank_me.at(r));
            }
        });
    }

    fn permute(&self, ctx: &mut Ctx, me: usize, from: usize, shift: u32, lo: usize, hi: usize) {
        let to = 1 - from;
        within(ctx, self.pr().permute, |ctx| {
            for i in lo..hi {
                ctx.load(self.keys[from].at(i));
                let k = self.key[from].get(i);
                let d = ((k >> shift) as usize) & (RADIX - 1);
                // The digit: a shift, a mask, the index.
                ctx.ops(&[(Op::IntShift, 1), (Op::IntLogical, 1), (Op::IntAdd, 1)]);
                let r = Self::rank_idx(me, d);
                ctx.load(self.rank_me.at(r));
                let dest = self.rank.get(r) as usize;
                self.key[to].set(dest, k);
                ctx.store(self.keys[to].at(dest));
                self.rank.set(r, dest as u64 + 1);
                ctx.int(1);
                ctx.store(self.rank_me.at(r));
                ctx.branch(true);
            }
        });
    }
}

impl Workload for Radix {
    fn check(&self, p: usize) -> Result<(), String> {
        if !is_pow2(p) {
            return Err(format!(
                "RADIX: --threads {p}: the prefix tree needs a power of two"
            ));
        }
        if self.n % p != 0 {
            return Err(format!(
                "RADIX: {} keys do not divide among --threads {p}",
                self.n
            ));
        }
        Ok(())
    }

    fn setup(&mut self, s: &mut Setup, p: usize) {
        self.per = self.n / p;
        let bytes = (self.n * WORD) as u64;
        self.keys[0].base = s.alloc("key0", bytes, Place::FirstTouch);
        self.keys[1].base = s.alloc("key1", bytes, Place::FirstTouch);
        self.key = [Shared::new(self.n, 0), Shared::new(self.n, 0)];
        self.rank_me.base = s.alloc("rank_me", p as u64 * 4096, Place::FirstTouch);
        self.rank = Shared::new(p * ROW, 0);
        let nodes = 2 * p - 1;
        self.prefix_tree.base = s.alloc("prefix_tree", nodes as u64 * 4096, Place::FirstTouch);
        self.density = Shared::new(nodes * ROW, 0);
        self.done = (0..nodes)
            .map(|i| s.lock(&format!("prefix_tree.done[{i}]")))
            .collect();
        let mut rng = SimRng::new(0x7ad1c5 ^ self.n as u64);
        self.input = (0..self.n).map(|_| rng.below(MAX_KEY)).collect();
        self.bar_rank = Some(s.barrier("barrier_rank", p));
        self.bar_key = Some(s.barrier("barrier_key", p));
        self.procs = Some(Procs {
            init: s.procedure("init"),
            histogram: s.procedure("histogram"),
            prefix: s.procedure("prefix"),
            permute: s.procedure("permute"),
        });
    }

    fn thread(&self, ctx: &mut Ctx) {
        let me = ctx.tid();
        let (lo, hi) = (me * self.per, (me + 1) * self.per);
        let bar_key = self.bar_key.expect("setup ran");
        phase(ctx, PHASE_INIT);
        self.init(ctx, lo, hi);
        ctx.barrier(bar_key);
        for pass in 0..self.digits {
            let from = pass as usize % 2;
            let shift = pass * DIGIT_BITS;
            phase(ctx, PHASE_HISTOGRAM);
            self.histogram(ctx, me, from, shift, lo, hi);
            ctx.barrier(self.bar_rank.expect("setup ran"));
            phase(ctx, PHASE_PREFIX);
            self.prefix(ctx, me, pass as u64);
            ctx.barrier(bar_key);
            phase(ctx, PHASE_PERMUTE);
            self.permute(ctx, me, from, shift, lo, hi);
            ctx.barrier(bar_key);
        }
    }

    fn verify(&self) -> Verification {
        let mut want = self.input.clone();
        want.sort_unstable();
        let got = self.sorted().to_vec();
        let bad = got.iter().zip(&want).position(|(a, b)| a != b);
        Verification::check(
            bad.is_none(),
            format!(
                "{} keys below {MAX_KEY}, {} digits of radix {RADIX}: {}",
                self.n,
                self.digits,
                match bad {
                    None => "equal to the host sort".to_string(),
                    Some(i) => format!("position {i} holds {} (host sort: {})", got[i], want[i]),
                }
            ),
        )
    }
}
