//! SPLASH-2 OCEAN, "contiguous partitions" version [WOT+95], simplified physics (see
//! `physics`): the FlashPoint study runs a 258 x 258 grid (seed 004, section 3.2.1).
//!
//! The (n+2) x (n+2) grids are split over a `py` x `px` processor grid (as square as possible);
//! each processor's block, with a one-point ghost border, is stored contiguously and homed on its
//! node by first touch (each processor initializes its own partitions, as SPLASH's `slave1`).
//! A processor's blocks of all grids lie back to back (`grid::alloc_fields`), as SPLASH's
//! per-processor allocations put them.
//! Grids: `psi` and `psim` (stream function now and before, two layers), `work1` (vorticity),
//! `work2` (Jacobian), `work3` (new vorticity), `tauz` (wind forcing), and the multigrid levels
//! `q_multi` (solution) and `rhs_multi` (right-hand side); `multi` holds the global error.
//!
//! A time step (SPLASH's `slave2`): barrier; `copy_borders` of `psi` (each processor pulls its
//! neighbours' edge values into its ghosts — the remote reads); `laplacalc` (`work1`); barrier;
//! `copy_borders` of `work1`; `jacobcalc` (`work2`); the pointwise update to `work3` and `psim`;
//! then per layer `multig`: V-cycles of red-black Gauss-Seidel (`relax`), each colour followed
//! by a barrier and `copy_red`/`copy_black` ghost pulls, residual restriction (`rescal`) and
//! correction (`intadd`), until max |residual| <= tol max |rhs|; after each V-cycle the
//! processors' residual maxima are combined under the lock `error_lock` into `multi` (three
//! rotating slots so that resetting one never races with a reader), then a barrier.
//!
//! Multigrid levels halve the grid while every processor keeps at least one point per side
//! (`Params::levels`), so the coarsest level depends on the processor grid: 2x2 on 1
//! processor, 4x4 on 16, 8x8 on 64. It gets `Params::coarse_sweeps` red-black sweeps (8, or
//! m²/2 on an m x m level) so that it is solved about equally well whatever its size, and a
//! solve takes about the same number of V-cycles at every processor count (258x258: 42 V-cycles
//! in the 6 solves on 1 processor, 39 on 16, 36 on 64). With a fixed 8 sweeps the 8x8 level
//! was left badly unsolved and 64 processors needed 72 V-cycles: 282 M references instead of
//! 149 M (`KERNELS.md`, "Paper-size matrix").
//!
//! Instruction charges per point (approximate, from SPLASH's loops): Laplacian 5 fp, 2 int;
//! Jacobian 10 fp, 2 int; update 9 fp; relaxation 5 fp, 2 int; residual 6 fp; every loop
//! iteration one branch; a ghost copy 2 int.

pub mod grid;
pub mod physics;
pub mod reference;

use super::common::{is_pow2, max_rel_diff, phase, within};
use crate::{Barrier, Ctx, Lock, Place, Procedure, Shared, Verification, Workload};
use grid::{Field, Layout};
use machine::cpu::op::Op;
use machine::sim::Setup;
use physics::Params;
use std::cell::RefCell;

const RED: usize = 0;
const BLACK: usize = 1;

struct Procs {
    init: Procedure,
    slave2: Procedure,
    laplacalc: Procedure,
    jacobcalc: Procedure,
    multig: Procedure,
    relax: Procedure,
    rescal: Procedure,
    intadd: Procedure,
    copy_borders: Procedure,
    copy_red: Procedure,
    copy_black: Procedure,
}

struct Fields {
    psi: Field,
    psim: Field,
    work1: Field,
    work2: Field,
    work3: Field,
    tauz: Field,
    q: Field,
    rhs: Field,
}

/// PhaseID values (KERNELS.md, "Phases"): initialisation, a time step's grid computations
/// outside the solver (Laplacians, Jacobians, the vorticity update), and the multigrid solver
/// by level: level `lv` is phase `PHASE_LEVEL0 + lv` (relaxation, restriction and prolongation
/// at that level), so the card's SRAM and the memory queues split the solver's time by grid size.
pub const PHASE_INIT: u16 = 1;
pub const PHASE_STEP: u16 = 2;
pub const PHASE_LEVEL0: u16 = 3;

/// The phase of multigrid level `lv` (levels past the 13th share phase 15, the last 4-bit tag).
fn level_phase(lv: usize) -> u16 {
    PHASE_LEVEL0 + lv.min(12) as u16
}

/// The SPLASH-2 OCEAN kernel (simplified physics).
pub struct Ocean {
    p: Params,
    levels: Vec<usize>,
    f: Option<Fields>,
    multi: u64,
    err: Shared<f64>,
    rounds: Shared<usize>,
    lock: Option<Lock>,
    bar: Option<Barrier>,
    procs: Option<Procs>,
    /// V-cycles of every solve (thread 0 records them), step-major, layer-minor.
    cycles: RefCell<Vec<usize>>,
    /// Last solve of each layer: its relative residual, as the processors agreed on it.
    final_residual: Shared<f64>,
}

/// The processor grid for `procs`: `py` rows of `px`, as square as possible.
fn proc_grid(procs: usize) -> (usize, usize) {
    let mut py = (procs as f64).sqrt() as usize;
    while procs % py != 0 {
        py -= 1;
    }
    (procs / py, py)
}

impl Ocean {
    /// A run on an (n+2) x (n+2) grid for `steps` time steps.
    pub fn new(n: usize, steps: usize) -> Ocean {
        Ocean {
            p: Params::new(n, steps),
            levels: Vec::new(),
            f: None,
            multi: 0,
            err: Shared::new(3, 0.0),
            rounds: Shared::new(0, 0),
            lock: None,
            bar: None,
            procs: None,
            cycles: RefCell::new(Vec::new()),
            final_residual: Shared::new(2, 0.0),
        }
    }
    fn f(&self) -> &Fields {
        self.f.as_ref().expect("setup ran")
    }
    fn pr(&self) -> &Procs {
        self.procs.as_ref().expect("setup ran")
    }
    fn barrier(&self, ctx: &mut Ctx) {
        ctx.barrier(self.bar.expect("setup ran"));
    }
    /// Perturbs one point of the result (for tests of the verification).
    pub fn corrupt(&self) {
        let psi = &self.f().psi;
        let i = psi.gidx(0, 1, 1).i;
        psi.v.set(i, psi.v.get(i) + 1e-3);
    }

    /// Local point (li, lj) of copy `c` of `g`, reflecting points outside the domain into it
    /// (`physics::mirror`; the mirror is this processor's own point).
    #[inline]
    fn val(&self, ctx: &mut Ctx, g: &Field, c: usize, li: usize, lj: usize) -> f64 {
        let me = ctx.tid();
        let l = g.layout(c);
        let (pr, pc) = l.coords(me);
        let (mut i, mut j, mut sign) = (li, lj, 1.0);
        if (li == 0 && pr == 0) || (li == l.h + 1 && pr + 1 == l.py) {
            i = li.clamp(1, l.h);
            sign = -sign;
        }
        if (lj == 0 && pc == 0) || (lj == l.w + 1 && pc + 1 == l.px) {
            j = lj.clamp(1, l.w);
            sign = -sign;
        }
        sign * g.ld(ctx, g.idx(c, me, i, j))
    }

    /// Pulls the neighbours' edge values of copy `c` into this processor's ghosts (all points,
    /// or those of one colour).
    fn pull(&self, ctx: &mut Ctx, g: &Field, c: usize, color: Option<usize>) {
        let me = ctx.tid();
        let l = *g.layout(c);
        let (pr, pc) = l.coords(me);
        let proc = match color {
            None => self.pr().copy_borders,
            Some(RED) => self.pr().copy_red,
            Some(_) => self.pr().copy_black,
        };
        within(ctx, proc, |ctx| {
            let copy = |ctx: &mut Ctx, src: (usize, usize, usize), li: usize, lj: usize| {
                let (gi, gj) = l.global(me, li, lj);
                if color.is_some_and(|k| (gi + gj) % 2 != k) {
                    return;
                }
                let v = g.ld(ctx, g.idx(c, src.0, src.1, src.2));
                g.st(ctx, g.idx(c, me, li, lj), v);
                ctx.ops(&[(Op::IntCompare, 1), (Op::IntAdd, 1)]);
                ctx.branch(true);
            };
            if pr > 0 {
                for lj in 1..=l.w {
                    copy(ctx, (me - l.px, l.h, lj), 0, lj);
                }
            }
            if pr + 1 < l.py {
                for lj in 1..=l.w {
                    copy(ctx, (me + l.px, 1, lj), l.h + 1, lj);
                }
            }
            if pc > 0 {
                for li in 1..=l.h {
                    copy(ctx, (me - 1, li, l.w), li, 0);
                }
            }
            if pc + 1 < l.px {
                for li in 1..=l.h {
                    copy(ctx, (me + 1, li, 1), li, l.w + 1);
                }
            }
            // Corners (bilinear prolongation reads them), from the diagonal neighbours.
            let (up, down, left, right) = (pr > 0, pr + 1 < l.py, pc > 0, pc + 1 < l.px);
            if up && left {
                copy(ctx, (me - l.px - 1, l.h, l.w), 0, 0);
            }
            if up && right {
                copy(ctx, (me - l.px + 1, l.h, 1), 0, l.w + 1);
            }
            if down && left {
                copy(ctx, (me + l.px - 1, 1, l.w), l.h + 1, 0);
            }
            if down && right {
                copy(ctx, (me + l.px + 1, 1, 1), l.h + 1, l.w + 1);
            }
        });
    }

    /// The global maximum of the processors' `x` (lock-protected reduction, then a barrier).
    fn global_max(&self, ctx: &mut Ctx, x: f64) -> f64 {
        let me = ctx.tid();
        let r = self.rounds.get(me);
        self.rounds.set(me, r + 1);
        let (slot, next) = (r % 3, (r + 1) % 3);
        let at = |s: usize| self.multi + 8 * s as u64;
        if me == 0 {
            // Last read two rounds ago, before the previous barrier; next used after this one.
            self.err.set(next, 0.0);
            ctx.store(at(next));
        }
        let lock = self.lock.expect("setup ran");
        ctx.lock(lock);
        ctx.load(at(slot));
        ctx.op(Op::FpCompare, 1);
        ctx.branch(x > self.err.get(slot));
        if x > self.err.get(slot) {
            self.err.set(slot, x);
            ctx.store(at(slot));
        }
        ctx.unlock(lock);
        self.barrier(ctx);
        ctx.load(at(slot));
        self.err.get(slot)
    }

    /// Red-black relaxation of one colour of this processor's points at level `lv`.
    fn relax(&self, ctx: &mut Ctx, lv: usize, color: usize) {
        let (q, b) = (&self.f().q, &self.f().rhs);
        let me = ctx.tid();
        let l = *q.layout(lv);
        within(ctx, self.pr().relax, |ctx| {
            for li in 1..=l.h {
                let (gi, gj0) = l.global(me, li, 1);
                let start = if (gi + gj0) % 2 == color { 1 } else { 2 };
                for lj in (start..=l.w).step_by(2) {
                    let x = physics::relax(
                        self.val(ctx, q, lv, li - 1, lj),
                        self.val(ctx, q, lv, li + 1, lj),
                        self.val(ctx, q, lv, li, lj - 1),
                        self.val(ctx, q, lv, li, lj + 1),
                        b.ld(ctx, b.idx(lv, me, li, lj)),
                    );
                    // Three sums, the difference, the quarter.
                    ctx.ops(&[(Op::FpAdd, 4), (Op::FpMul, 1)]);
                    ctx.ops(&[(Op::IntCompare, 1), (Op::IntAdd, 1)]);
                    q.st(ctx, q.idx(lv, me, li, lj), x);
                    ctx.branch(true);
                }
            }
        });
    }

    /// `k` red-black sweeps, each colour followed by a barrier and its ghost pull.
    fn sweeps(&self, ctx: &mut Ctx, lv: usize, k: usize) {
        for _ in 0..k {
            for color in [RED, BLACK] {
                self.relax(ctx, lv, color);
                self.barrier(ctx);
                self.pull(ctx, &self.f().q, lv, Some(color));
            }
        }
    }

    /// The residual b − A q at own local point (li, lj) of level `lv`.
    fn residual(&self, ctx: &mut Ctx, lv: usize, li: usize, lj: usize) -> f64 {
        let (q, b) = (&self.f().q, &self.f().rhs);
        let me = ctx.tid();
        let a = physics::lap(
            q.ld(ctx, q.idx(lv, me, li, lj)),
            self.val(ctx, q, lv, li - 1, lj),
            self.val(ctx, q, lv, li + 1, lj),
            self.val(ctx, q, lv, li, lj - 1),
            self.val(ctx, q, lv, li, lj + 1),
        );
        let r = b.ld(ctx, b.idx(lv, me, li, lj)) - a;
        // The Laplacian's three sums and product, b - a; one more unspecified.
        ctx.ops(&[(Op::FpAdd, 4), (Op::FpMul, 1), (Op::Fp, 1)]);
        ctx.ops(&[(Op::IntCompare, 1), (Op::IntAdd, 1)]);
        r
    }

    /// SPLASH's `rescal`: the coarse right-hand side from the fine residuals; zeroes the coarse
    /// solution (own points and ghosts).
    fn restrict(&self, ctx: &mut Ctx, lv: usize) {
        let (q, b) = (&self.f().q, &self.f().rhs);
        let me = ctx.tid();
        let lc = *q.layout(lv + 1);
        within(ctx, self.pr().rescal, |ctx| {
            for ci in 0..lc.h + 2 {
                for cj in 0..lc.w + 2 {
                    q.st(ctx, q.idx(lv + 1, me, ci, cj), 0.0);
                }
            }
            for ci in 1..=lc.h {
                for cj in 1..=lc.w {
                    let mut s = 0.0;
                    for (di, dj) in [(1, 1), (1, 0), (0, 1), (0, 0)] {
                        s += self.residual(ctx, lv, 2 * ci - di, 2 * cj - dj);
                    }
                    ctx.op(Op::FpAdd, 4);
                    b.st(ctx, b.idx(lv + 1, me, ci, cj), s);
                    ctx.branch(true);
                }
            }
        });
    }

    /// SPLASH's `intadd`: adds the coarse correction to the fine points.
    fn prolong(&self, ctx: &mut Ctx, lv: usize) {
        let q = &self.f().q;
        let me = ctx.tid();
        let l = *q.layout(lv);
        within(ctx, self.pr().intadd, |ctx| {
            for li in 1..=l.h {
                for lj in 1..=l.w {
                    let ((ci, di), (cj, dj)) = (physics::coarse_of(li), physics::coarse_of(lj));
                    let (ni, nj) = (ci.wrapping_add_signed(di), cj.wrapping_add_signed(dj));
                    let c = physics::bilinear(
                        q.ld(ctx, q.idx(lv + 1, me, ci, cj)),
                        self.val(ctx, q, lv + 1, ni, cj),
                        self.val(ctx, q, lv + 1, ci, nj),
                        self.val(ctx, q, lv + 1, ni, nj),
                    );
                    let i = q.idx(lv, me, li, lj);
                    let x = q.ld(ctx, i) + c;
                    // Bilinear: four products, three sums; the correction's add.
                    ctx.ops(&[(Op::FpMul, 4), (Op::FpAdd, 4)]);
                    ctx.ops(&[(Op::IntCompare, 1), (Op::IntAdd, 1)]);
                    q.st(ctx, i, x);
                    ctx.branch(true);
                }
            }
        });
    }

    fn vcycle(&self, ctx: &mut Ctx, lv: usize) {
        phase(ctx, level_phase(lv));
        if lv + 1 == self.levels.len() {
            self.sweeps(ctx, lv, self.p.coarse_sweeps(self.levels[lv]));
            return;
        }
        self.sweeps(ctx, lv, self.p.pre);
        // Own coarse points depend only on own fine points and ghosts: no barrier needed.
        self.restrict(ctx, lv);
        self.vcycle(ctx, lv + 1);
        phase(ctx, level_phase(lv));
        self.prolong(ctx, lv);
        self.barrier(ctx);
        // Red relaxation reads only black neighbours; red ghosts follow after it.
        self.pull(ctx, &self.f().q, lv, Some(BLACK));
        self.sweeps(ctx, lv, self.p.post);
    }

    /// SPLASH's `multig`: solves lap ψ = ζ for layer `k` (ψ in `psi`, ζ in `work3`).
    fn multig(&self, ctx: &mut Ctx, k: usize) {
        let f = self.f();
        let me = ctx.tid();
        let l = *f.q.layout(0);
        let h2 = self.p.h() * self.p.h();
        phase(ctx, level_phase(0));
        within(ctx, self.pr().multig, |ctx| {
            let mut bmax = 0f64;
            for li in 1..=l.h {
                for lj in 1..=l.w {
                    let v = f.psi.ld(ctx, f.psi.idx(k, me, li, lj));
                    f.q.st(ctx, f.q.idx(0, me, li, lj), v);
                    let z = f.work3.ld(ctx, f.work3.idx(k, me, li, lj));
                    let b = h2 * z;
                    f.rhs.st(ctx, f.rhs.idx(0, me, li, lj), b);
                    bmax = bmax.max(b.abs());
                    ctx.ops(&[(Op::FpMul, 1), (Op::FpCompare, 1)]);
                    ctx.branch(true);
                }
            }
            let bmax = self.global_max(ctx, bmax);
            self.pull(ctx, &f.q, 0, Some(BLACK));
            let mut cycles = 0;
            let mut res;
            loop {
                self.vcycle(ctx, 0);
                cycles += 1;
                let mut local = 0f64;
                for li in 1..=l.h {
                    for lj in 1..=l.w {
                        local = local.max(self.residual(ctx, 0, li, lj).abs());
                        ctx.branch(true);
                    }
                }
                res = self.global_max(ctx, local);
                ctx.ops(&[(Op::FpMul, 1), (Op::FpCompare, 1)]);
                if res <= self.p.tol * bmax || cycles >= self.p.max_cycles {
                    break;
                }
            }
            for li in 1..=l.h {
                for lj in 1..=l.w {
                    let v = f.q.ld(ctx, f.q.idx(0, me, li, lj));
                    f.psi.st(ctx, f.psi.idx(k, me, li, lj), v);
                }
            }
            if me == 0 {
                self.cycles.borrow_mut().push(cycles);
                self.final_residual
                    .set(k, if bmax > 0.0 { res / bmax } else { res });
            }
        });
    }

    /// SPLASH's `slave1` part: each processor initializes (first touches) its partitions.
    fn init(&self, ctx: &mut Ctx) {
        let f = self.f();
        let me = ctx.tid();
        let p = &self.p;
        within(ctx, self.pr().init, |ctx| {
            let l = *f.psi.layout(0);
            for li in 0..l.h + 2 {
                for lj in 0..l.w + 2 {
                    let (gi, gj) = l.global(me, li, lj);
                    let inside = (1..=p.n).contains(&gi) && (1..=p.n).contains(&gj);
                    for k in 0..2 {
                        let v = if inside {
                            physics::initial_psi(p, k, gi, gj)
                        } else {
                            0.0
                        };
                        f.psi.st(ctx, f.psi.idx(k, me, li, lj), v);
                        for g in [&f.psim, &f.work1, &f.work2, &f.work3] {
                            g.st(ctx, g.idx(k, me, li, lj), 0.0);
                        }
                    }
                    let t = if inside {
                        physics::tauz(p, gi, gj)
                    } else {
                        0.0
                    };
                    f.tauz.st(ctx, f.tauz.idx(0, me, li, lj), t);
                    ctx.fp(8);
                    ctx.branch(true);
                }
            }
            for lv in 0..self.levels.len() {
                let l = *f.q.layout(lv);
                for li in 0..l.h + 2 {
                    for lj in 0..l.w + 2 {
                        f.q.st(ctx, f.q.idx(lv, me, li, lj), 0.0);
                        f.rhs.st(ctx, f.rhs.idx(lv, me, li, lj), 0.0);
                    }
                }
            }
        });
    }

    /// One time step (SPLASH's `slave2`).
    fn time_step(&self, ctx: &mut Ctx) {
        let f = self.f();
        let me = ctx.tid();
        let l = *f.psi.layout(0);
        let inv_h2 = 1.0 / (self.p.h() * self.p.h());
        within(ctx, self.pr().slave2, |ctx| {
            self.barrier(ctx);
            for k in 0..2 {
                self.pull(ctx, &f.psi, k, None);
            }
            within(ctx, self.pr().laplacalc, |ctx| {
                for k in 0..2 {
                    for li in 1..=l.h {
                        for lj in 1..=l.w {
                            let s = &f.psi;
                            let z = physics::lap(
                                s.ld(ctx, s.idx(k, me, li, lj)),
                                self.val(ctx, s, k, li - 1, lj),
                                self.val(ctx, s, k, li + 1, lj),
                                self.val(ctx, s, k, li, lj - 1),
                                self.val(ctx, s, k, li, lj + 1),
                            ) * inv_h2;
                            // The Laplacian (three sums, one product) times 1/h^2.
                            ctx.ops(&[(Op::FpAdd, 3), (Op::FpMul, 2)]);
                            ctx.ops(&[(Op::IntCompare, 1), (Op::IntAdd, 1)]);
                            f.work1.st(ctx, f.work1.idx(k, me, li, lj), z);
                            ctx.branch(true);
                        }
                    }
                }
            });
            self.barrier(ctx);
            for k in 0..2 {
                self.pull(ctx, &f.work1, k, None);
            }
            within(ctx, self.pr().jacobcalc, |ctx| {
                for k in 0..2 {
                    for li in 1..=l.h {
                        for lj in 1..=l.w {
                            let (s, z) = (&f.psi, &f.work1);
                            let j = physics::jac(
                                self.val(ctx, s, k, li - 1, lj),
                                self.val(ctx, s, k, li + 1, lj),
                                self.val(ctx, s, k, li, lj - 1),
                                self.val(ctx, s, k, li, lj + 1),
                                self.val(ctx, z, k, li - 1, lj),
                                self.val(ctx, z, k, li + 1, lj),
                                self.val(ctx, z, k, li, lj - 1),
                                self.val(ctx, z, k, li, lj + 1),
                            ) * inv_h2;
                            // Five differences, four products; one more unspecified.
                            ctx.ops(&[(Op::FpAdd, 5), (Op::FpMul, 4), (Op::Fp, 1)]);
                            ctx.ops(&[(Op::IntCompare, 1), (Op::IntAdd, 1)]);
                            f.work2.st(ctx, f.work2.idx(k, me, li, lj), j);
                            ctx.branch(true);
                        }
                    }
                }
            });
            // The pointwise update (old ψ into psim, new vorticity into work3).
            for k in 0..2 {
                for li in 1..=l.h {
                    for lj in 1..=l.w {
                        let z = f.work1.ld(ctx, f.work1.idx(k, me, li, lj));
                        let j = f.work2.ld(ctx, f.work2.idx(k, me, li, lj));
                        let force = if k == 0 {
                            f.tauz.ld(ctx, f.tauz.idx(0, me, li, lj))
                        } else {
                            0.0
                        };
                        let s = f.psi.ld(ctx, f.psi.idx(k, me, li, lj));
                        let so = f.psi.ld(ctx, f.psi.idx(1 - k, me, li, lj));
                        f.psim.st(ctx, f.psim.idx(k, me, li, lj), s);
                        let x = physics::step(&self.p, z, j, force, s, so);
                        // physics::step: five sums, three products; one more unspecified.
                        ctx.ops(&[(Op::FpAdd, 5), (Op::FpMul, 3), (Op::Fp, 1)]);
                        f.work3.st(ctx, f.work3.idx(k, me, li, lj), x);
                        ctx.branch(true);
                    }
                }
            }
            for k in 0..2 {
                self.multig(ctx, k);
            }
        });
    }
}

impl Workload for Ocean {
    fn check(&self, procs: usize) -> Result<(), String> {
        let n = self.p.n;
        if !is_pow2(n) || n < 2 {
            return Err(format!(
                "OCEAN: the grid is (n+2) x (n+2) with n a power of two; n = {n}"
            ));
        }
        let (px, py) = proc_grid(procs);
        if n % px != 0 || n % py != 0 {
            return Err(format!(
                "OCEAN: --threads {procs} as a {py} x {px} grid do not divide the {n} x {n} interior"
            ));
        }
        Ok(())
    }

    fn setup(&mut self, s: &mut Setup, procs: usize) {
        let (px, py) = proc_grid(procs);
        self.levels = self.p.levels(px, py);
        let fine = Layout::new(self.p.n, px, py);
        let two = vec![fine, fine];
        let lv: Vec<Layout> = self
            .levels
            .iter()
            .map(|&n| Layout::new(n, px, py))
            .collect();
        let mut f = Fields {
            psi: Field::new("psi", two.clone(), procs),
            psim: Field::new("psim", two.clone(), procs),
            work1: Field::new("work1", two.clone(), procs),
            work2: Field::new("work2", two.clone(), procs),
            work3: Field::new("work3", two, procs),
            tauz: Field::new("tauz", vec![fine], procs),
            q: Field::new("q_multi", lv.clone(), procs),
            rhs: Field::new("rhs_multi", lv, procs),
        };
        let Fields {
            psi,
            psim,
            work1,
            work2,
            work3,
            tauz,
            q,
            rhs,
        } = &mut f;
        grid::alloc_fields(
            s,
            &mut [psi, psim, work1, work2, work3, tauz, q, rhs],
            procs,
        );
        self.f = Some(f);
        self.multi = s.alloc("multi", 64, Place::Node(0));
        self.rounds = Shared::new(procs, 0);
        self.lock = Some(s.lock("error_lock"));
        self.bar = Some(s.barrier("ocean.barrier", procs));
        self.procs = Some(Procs {
            init: s.procedure("slave1"),
            slave2: s.procedure("slave2"),
            laplacalc: s.procedure("laplacalc"),
            jacobcalc: s.procedure("jacobcalc"),
            multig: s.procedure("multig"),
            relax: s.procedure("relax"),
            rescal: s.procedure("rescal"),
            intadd: s.procedure("intadd"),
            copy_borders: s.procedure("copy_borders"),
            copy_red: s.procedure("copy_red"),
            copy_black: s.procedure("copy_black"),
        });
    }

    fn thread(&self, ctx: &mut Ctx) {
        phase(ctx, PHASE_INIT);
        self.init(ctx);
        for _ in 0..self.p.steps {
            phase(ctx, PHASE_STEP);
            self.time_step(ctx);
        }
    }

    fn verify(&self) -> Verification {
        let n = self.p.n;
        let psi = &self.f().psi;
        let got: Vec<f64> = (0..2)
            .flat_map(|k| {
                (1..=n).flat_map(move |i| (1..=n).map(move |j| psi.v.get(psi.gidx(k, i, j).i)))
            })
            .collect();
        // The residual of the last solve of each layer, recomputed from the final grids.
        let mut worst_res = 0f64;
        let h2 = self.p.h() * self.p.h();
        for k in 0..2 {
            let mut q = reference::Grid::zero(n);
            let mut b = reference::Grid::zero(n);
            for i in 1..=n {
                for j in 1..=n {
                    q.set(i, j, psi.v.get(psi.gidx(k, i, j).i));
                    let w = &self.f().work3;
                    b.set(i, j, h2 * w.v.get(w.gidx(k, i, j).i));
                }
            }
            let bmax = b.v.iter().fold(0f64, |m, v| m.max(v.abs()));
            worst_res = worst_res.max(reference::residual_max(&q, &b) / bmax);
        }
        let cycles = self.cycles.borrow().clone();
        let res_ok = worst_res <= self.p.tol * 1.000001;
        let mut detail = format!(
            "{0}x{0} grid, {1} steps, {2} levels, V-cycles per solve {cycles:?}; final relative residual {worst_res:.2e} (bound {3:.0e})",
            n + 2,
            self.p.steps,
            self.levels.len(),
            self.p.tol
        );
        let mut ok = res_ok;
        if n <= 128 {
            let r = reference::run(&self.p, &self.levels);
            let want: Vec<f64> = r
                .psi
                .iter()
                .flat_map(|g| (1..=n).flat_map(move |i| (1..=n).map(move |j| g.at(i, j))))
                .collect();
            let d = max_rel_diff(&got, &want);
            detail += &format!("; vs sequential host run {d:.2e}");
            ok &= d < 1e-6 && r.cycles == cycles;
        }
        Verification::check(ok, detail)
    }
}
