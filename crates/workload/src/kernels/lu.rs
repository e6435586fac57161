//! SPLASH-2 LU, "contiguous blocks" version (`lu.C` of `LU/contiguous_blocks` [WOT+95]): blocked
//! dense LU factorization without pivoting of an n x n matrix, block size 16; the FlashPoint study
//! factors 512 x 512 (seed 004, section 3.2.1).
//!
//! The matrix `a` is an nb x nb array of 16 x 16 blocks, each stored contiguously in column-major
//! order. Blocks are scattered over a `rows x cols` processor grid (SPLASH's `BlockOwner`:
//! block (I, J) belongs to `I mod cols + (J mod rows) cols`, with `rows x cols = P` as square as
//! possible), and each processor's blocks lie together (SPLASH allocates them from the owner's
//! memory): here in one page-aligned slice per processor, placed by first touch after SPLASH's
//! `TouchA`, in which each processor reads its own blocks.
//!
//! Step K (SPLASH's `lu`): the owner of the diagonal block factors it (`lu0`); barrier; owners of
//! the blocks below it divide them by its upper factor (`bdiv`) and owners of the blocks right
//! of it by its lower factor (`bmodd`); barrier; owners of the trailing blocks subtract the
//! products of the perimeter blocks (`bmod`). All three inner loops call `daxpy` (y += αx over a
//! block column), entered as a procedure as in the original.
//!
//! The factors: L lower triangular (with its diagonal), U unit upper triangular, as `lu0` leaves
//! them. Instruction charges per `daxpy` element (approximate, from its loop): 2 loads, 1 store,
//! 2 fp, 1 int, 1 branch; per call 1 load of α plus 1-2 fp.

use super::common::{doubles, phase, uniform, within};
use crate::{Array, Barrier, Ctx, Place, Procedure, Shared, Verification, Workload};
use engine::SimRng;
use machine::cpu::op::Op;
use machine::sim::Setup;

/// SPLASH's block size for the FlashPoint runs.
pub const BLOCK: usize = 16;

/// PhaseID values (KERNELS.md, "Phases"): the first touch, then per step k the diagonal
/// block's factorisation, the perimeter blocks' divisions and the interior blocks' updates,
/// each with the barrier wait that ends it.
pub const PHASE_INIT: u16 = 1;
pub const PHASE_DIAGONAL: u16 = 2;
pub const PHASE_PERIMETER: u16 = 3;
pub const PHASE_INTERIOR: u16 = 4;

struct Procs {
    touch: Procedure,
    lu0: Procedure,
    bdiv: Procedure,
    bmodd: Procedure,
    bmod: Procedure,
    daxpy: Procedure,
}

/// The SPLASH-2 LU kernel.
pub struct Lu {
    n: usize,
    nb: usize,
    rows: usize,
    cols: usize,
    /// Element index of the first element of block (I, J) = `slot[I + J nb] * BLOCK²`.
    slot: Vec<usize>,
    at: Array,
    a: Shared<f64>,
    /// The original matrix, row-major.
    orig: Vec<f64>,
    bar: Option<Barrier>,
    procs: Option<Procs>,
}

impl Lu {
    /// Factors an `n` x `n` matrix (`n` a multiple of 16).
    pub fn new(n: usize) -> Lu {
        Lu {
            n,
            nb: n / BLOCK,
            rows: 1,
            cols: 1,
            slot: Vec::new(),
            at: doubles(0),
            a: Shared::new(0, 0.0),
            orig: Vec::new(),
            bar: None,
            procs: None,
        }
    }

    fn owner(&self, bi: usize, bj: usize) -> usize {
        bi % self.cols + (bj % self.rows) * self.cols
    }
    /// Index in `a` of element (i, j) of block (bi, bj).
    #[inline]
    fn idx(&self, bi: usize, bj: usize, i: usize, j: usize) -> usize {
        self.slot[bi + bj * self.nb] * BLOCK * BLOCK + i + j * BLOCK
    }
    /// Element (r, c) of the factored matrix (host).
    fn get(&self, r: usize, c: usize) -> f64 {
        self.a
            .get(self.idx(r / BLOCK, c / BLOCK, r % BLOCK, c % BLOCK))
    }
    /// Perturbs one factor entry (for tests of the verification).
    pub fn corrupt(&self) {
        let i = self.idx(0, 0, 1, 1);
        self.a.set(i, self.a.get(i) * 1.001);
    }

    fn pr(&self) -> &Procs {
        self.procs.as_ref().expect("setup ran")
    }

    #[inline]
    fn ld(&self, ctx: &mut Ctx, i: usize) -> f64 {
        ctx.load(self.at.at(i));
        self.a.get(i)
    }
    #[inline]
    fn st(&self, ctx: &mut Ctx, i: usize, v: f64) {
        self.a.set(i, v);
        ctx.store(self.at.at(i));
    }

    /// SPLASH's `daxpy`: y[0..len] += alpha x[0..len] (both columns of blocks, contiguous).
    fn daxpy(&self, ctx: &mut Ctx, y: usize, x: usize, len: usize, alpha: f64) {
        within(ctx, self.pr().daxpy, |ctx| {
            for i in 0..len {
                let xv = self.ld(ctx, x + i);
                let yv = self.ld(ctx, y + i);
                // A multiply and an add (the kernel counts the unfused pair).
                ctx.ops(&[(Op::FpMul, 1), (Op::FpAdd, 1)]);
                self.st(ctx, y + i, yv + alpha * xv);
                ctx.int(1);
                ctx.branch(true);
            }
        });
    }

    /// SPLASH's `lu0`: factors the diagonal block in place.
    fn lu0(&self, ctx: &mut Ctx, k: usize) {
        within(ctx, self.pr().lu0, |ctx| {
            for kk in 0..BLOCK {
                for j in kk + 1..BLOCK {
                    let piv = self.ld(ctx, self.idx(k, k, kk, kk));
                    let akj = self.idx(k, k, kk, j);
                    let v = self.ld(ctx, akj) / piv;
                    self.st(ctx, akj, v);
                    // The divide by the pivot and the negation (fneg) of daxpy's factor.
                    ctx.ops(&[(Op::FpDiv, 1), (Op::FpConvert, 1)]);
                    ctx.ops(&[(Op::IntCompare, 1), (Op::IntAdd, 2)]);
                    let (y, x) = (self.idx(k, k, kk + 1, j), self.idx(k, k, kk + 1, kk));
                    self.daxpy(ctx, y, x, BLOCK - kk - 1, -v);
                }
            }
        });
    }

    /// SPLASH's `bdiv`: block (I, K) := block (I, K) U(K, K)^-1.
    fn bdiv(&self, ctx: &mut Ctx, bi: usize, k: usize) {
        within(ctx, self.pr().bdiv, |ctx| {
            for kk in 0..BLOCK {
                for j in kk + 1..BLOCK {
                    let alpha = -self.ld(ctx, self.idx(k, k, kk, j));
                    // The negation (fneg).
                    ctx.op(Op::FpConvert, 1);
                    ctx.ops(&[(Op::IntCompare, 1), (Op::IntAdd, 2)]);
                    let (y, x) = (self.idx(bi, k, 0, j), self.idx(bi, k, 0, kk));
                    self.daxpy(ctx, y, x, BLOCK, alpha);
                }
            }
        });
    }

    /// SPLASH's `bmodd`: block (K, J) := L(K, K)^-1 block (K, J).
    fn bmodd(&self, ctx: &mut Ctx, k: usize, bj: usize) {
        within(ctx, self.pr().bmodd, |ctx| {
            for kk in 0..BLOCK {
                for j in 0..BLOCK {
                    let piv = self.ld(ctx, self.idx(k, k, kk, kk));
                    let c = self.idx(k, bj, kk, j);
                    let v = self.ld(ctx, c) / piv;
                    self.st(ctx, c, v);
                    // The divide by the pivot and the negation (fneg) of daxpy's factor.
                    ctx.ops(&[(Op::FpDiv, 1), (Op::FpConvert, 1)]);
                    ctx.ops(&[(Op::IntCompare, 1), (Op::IntAdd, 2)]);
                    let (y, x) = (self.idx(k, bj, kk + 1, j), self.idx(k, k, kk + 1, kk));
                    self.daxpy(ctx, y, x, BLOCK - kk - 1, -v);
                }
            }
        });
    }

    /// SPLASH's `bmod`: block (I, J) -= block (I, K) block (K, J).
    fn bmod(&self, ctx: &mut Ctx, bi: usize, bj: usize, k: usize) {
        within(ctx, self.pr().bmod, |ctx| {
            for kk in 0..BLOCK {
                for j in 0..BLOCK {
                    let alpha = -self.ld(ctx, self.idx(k, bj, kk, j));
                    // The negation (fneg).
                    ctx.op(Op::FpConvert, 1);
                    ctx.ops(&[(Op::IntCompare, 1), (Op::IntAdd, 2)]);
                    let (y, x) = (self.idx(bi, bj, 0, j), self.idx(bi, k, 0, kk));
                    self.daxpy(ctx, y, x, BLOCK, alpha);
                }
            }
        });
    }

    /// SPLASH's `TouchA`: reads every element of this processor's blocks.
    fn touch(&self, ctx: &mut Ctx, me: usize) {
        within(ctx, self.pr().touch, |ctx| {
            for bj in 0..self.nb {
                for bi in 0..self.nb {
                    if self.owner(bi, bj) == me {
                        let first = self.idx(bi, bj, 0, 0);
                        for e in first..first + BLOCK * BLOCK {
                            ctx.load(self.at.at(e));
                            ctx.int(1);
                        }
                    }
                }
            }
        });
    }
}

impl Workload for Lu {
    fn check(&self, _p: usize) -> Result<(), String> {
        if self.n == 0 || self.n % BLOCK != 0 {
            return Err(format!(
                "LU: n = {} must be a positive multiple of the block size {BLOCK}",
                self.n
            ));
        }
        Ok(())
    }

    fn setup(&mut self, s: &mut Setup, p: usize) {
        // SPLASH: rows = floor(sqrt P), decreased until it divides P.
        let mut rows = (p as f64).sqrt() as usize;
        while p % rows != 0 {
            rows -= 1;
        }
        self.rows = rows;
        self.cols = p / rows;
        // Each processor's blocks together, its slice page-aligned.
        let nb = self.nb;
        let bbytes = (BLOCK * BLOCK * 8) as u64;
        let per_page = (s.map().page_bytes() / bbytes).max(1) as usize;
        let mut count = vec![0usize; p];
        for bj in 0..nb {
            for bi in 0..nb {
                count[self.owner(bi, bj)] += 1;
            }
        }
        let mut start = vec![0usize; p];
        let mut next = 0;
        for q in 0..p {
            start[q] = next;
            next += count[q].div_ceil(per_page) * per_page;
        }
        self.slot = vec![0; nb * nb];
        let mut used = start.clone();
        for bj in 0..nb {
            for bi in 0..nb {
                let q = self.owner(bi, bj);
                self.slot[bi + bj * nb] = used[q];
                used[q] += 1;
            }
        }
        self.at = doubles(s.alloc("a", next as u64 * bbytes, Place::FirstTouch));
        self.a = Shared::new(next * BLOCK * BLOCK, 0.0);
        // A diagonally dominant random matrix (no pivoting needed).
        let n = self.n;
        let mut rng = SimRng::new(0x1u64 << 40 ^ n as u64);
        self.orig = (0..n * n)
            .map(|e| {
                let v = uniform(&mut rng) - 0.5;
                if e / n == e % n {
                    v + n as f64
                } else {
                    v
                }
            })
            .collect();
        for r in 0..n {
            for c in 0..n {
                let i = self.idx(r / BLOCK, c / BLOCK, r % BLOCK, c % BLOCK);
                self.a.set(i, self.orig[r * n + c]);
            }
        }
        self.bar = Some(s.barrier("lu.barrier", p));
        self.procs = Some(Procs {
            touch: s.procedure("TouchA"),
            lu0: s.procedure("lu0"),
            bdiv: s.procedure("bdiv"),
            bmodd: s.procedure("bmodd"),
            bmod: s.procedure("bmod"),
            daxpy: s.procedure("daxpy"),
        });
    }

    fn thread(&self, ctx: &mut Ctx) {
        let me = ctx.tid();
        let bar = self.bar.expect("setup ran");
        phase(ctx, PHASE_INIT);
        self.touch(ctx, me);
        ctx.barrier(bar);
        let nb = self.nb;
        for k in 0..nb {
            phase(ctx, PHASE_DIAGONAL);
            if self.owner(k, k) == me {
                self.lu0(ctx, k);
            }
            ctx.barrier(bar);
            phase(ctx, PHASE_PERIMETER);
            for bi in k + 1..nb {
                ctx.ops(&[(Op::IntCompare, 1), (Op::IntAdd, 1)]);
                if self.owner(bi, k) == me {
                    self.bdiv(ctx, bi, k);
                }
            }
            for bj in k + 1..nb {
                ctx.ops(&[(Op::IntCompare, 1), (Op::IntAdd, 1)]);
                if self.owner(k, bj) == me {
                    self.bmodd(ctx, k, bj);
                }
            }
            ctx.barrier(bar);
            phase(ctx, PHASE_INTERIOR);
            for bi in k + 1..nb {
                for bj in k + 1..nb {
                    ctx.ops(&[(Op::IntCompare, 1), (Op::IntAdd, 1)]);
                    if self.owner(bi, bj) == me {
                        self.bmod(ctx, bi, bj, k);
                    }
                }
            }
        }
        ctx.barrier(bar);
    }

    fn verify(&self) -> Verification {
        // (L U)(r, c) = sum over k <= min(r, c) of L(r, k) U(k, c), U with unit diagonal.
        let n = self.n;
        let l = |r: usize, k: usize| self.get(r, k);
        let mut rows = vec![0.0; n * n];
        for r in 0..n {
            for k in 0..=r {
                let lrk = l(r, k);
                // U(k, k) = 1, U(k, c) = a(k, c) for c > k.
                rows[r * n + k] += lrk;
                for c in k + 1..n {
                    rows[r * n + c] += lrk * self.get(k, c);
                }
            }
        }
        let scale = self.orig.iter().fold(0f64, |m, v| m.max(v.abs()));
        let worst = rows
            .iter()
            .zip(&self.orig)
            .fold(0f64, |m, (a, b)| m.max((a - b).abs()))
            / scale;
        Verification::check(
            worst < 1e-8,
            format!(
                "{n}x{n}, blocks of {BLOCK} on a {}x{} grid: max |LU - A| / max |A| = {worst:.2e} (full product)",
                self.rows, self.cols
            ),
        )
    }
}
