//! The equations of the simplified OCEAN model, as pointwise formulas shared by the simulated
//! kernel and the sequential host reference (so both compute bit-identical values).
//!
//! Two fluid layers k = 0, 1 (SPLASH's upper and lower layers), stream functions ψ_k on the unit
//! square with ψ = 0 on the boundary, vorticity ζ_k = ∇²ψ_k. The discretization is cell-centred
//! on every grid: the boundary lies on the faces of the outer cells, and a point outside the
//! domain stands for minus its mirror image inside (`mirror`), on every level, so that coarse
//! and fine grids cover the same square (with ghosts held at zero, vertex-style, the coarse
//! grids would be half a cell larger and multigrid would stall). One time step (explicit Euler):
//!
//!   ζ_k' = ζ_k + dt (−J(ψ_k, ζ_k) + F_k − r ζ_k + κ (ψ_(1−k) − ψ_k)),   then solve ∇²ψ_k' = ζ_k'
//!
//! with F_0 the wind-stress curl `tauz`, F_1 = 0, bottom friction r and interface coupling κ.
//! SPLASH-2's OCEAN has more terms (β-effect, lateral friction, a Helmholtz equation for the
//! baroclinic mode, leapfrog stepping) and more work arrays; this keeps its memory behaviour:
//! 5-point Laplacian and Jacobian stencil sweeps over partitioned grids, then an elliptic solve by
//! red-black Gauss-Seidel multigrid.
//!
//! Multigrid is cell-centred: level l has n/2^l points per side, coarse point (I, J) covers fine
//! points 2I−1..2I x 2J−1..2J; the scaled equation at every level is
//! `up + down + left + right − 4 q = b` (b = h² f at the finest level); restriction sums the
//! four fine residuals; prolongation adds the bilinear interpolation of the coarse correction
//! (weights 9/16, 3/16, 3/16, 1/16 from the nearest coarse points; piecewise-constant
//! prolongation converges far too slowly, about 0.6 per V-cycle).

/// Parameters of a run.
#[derive(Clone, Copy, Debug)]
pub struct Params {
    /// Interior points per side (the grid is (n+2) x (n+2)); a power of two.
    pub n: usize,
    pub steps: usize,
    pub dt: f64,
    pub friction: f64,
    pub coupling: f64,
    /// A solve stops when max |residual| <= tol · max |b| ...
    pub tol: f64,
    /// ... or after this many V-cycles.
    pub max_cycles: usize,
    /// Red-black sweeps before and after the coarse-grid correction, and the least number on
    /// the coarsest level (see [`Params::coarse_sweeps`]).
    pub pre: usize,
    pub post: usize,
    pub coarse: usize,
}

impl Params {
    pub fn new(n: usize, steps: usize) -> Params {
        Params {
            n,
            steps,
            dt: 0.01,
            friction: 0.1,
            coupling: 0.5,
            tol: 1e-9,
            max_cycles: 40,
            pre: 2,
            post: 2,
            coarse: 8,
        }
    }
    /// Grid spacing (cell-centred: n cells per side).
    pub fn h(&self) -> f64 {
        1.0 / self.n as f64
    }
    /// Red-black sweeps on a coarsest level of `m` points per side: `coarse`, or m²/2 when
    /// that is more. The coarsest level is as coarse as the processor grid allows (one point
    /// per processor per side, [`Params::levels`]), so it is 2x2 on 1 processor, 4x4 on 16 and
    /// 8x8 on 64; Gauss-Seidel needs O(m²) sweeps to reduce the error on an m x m grid by a
    /// fixed factor, and a fixed 8 sweeps leave an 8x8 coarsest level badly unsolved (the
    /// V-cycles per solve at 258x258 go from 7 to 14). m²/2 keeps 8 sweeps for m <= 4 and
    /// gives 32 at m = 8, which solves it as well as 8 do at 4x4. SPLASH's `multig` instead
    /// relaxes the coarsest level until its residual meets a tolerance.
    pub fn coarse_sweeps(&self, m: usize) -> usize {
        self.coarse.max(m * m / 2)
    }
    /// Interior points per side of each multigrid level, finest first: halving while every
    /// processor keeps at least one point per side (and at least 2 points per side).
    pub fn levels(&self, px: usize, py: usize) -> Vec<usize> {
        let mut v = vec![self.n];
        loop {
            let m = v[v.len() - 1] / 2;
            if m < 2 || m % px != 0 || m % py != 0 {
                return v;
            }
            v.push(m);
        }
    }
}

/// The mirror of coordinate `i` of a grid with `n` interior points per side, and the sign of
/// the value there: outside points reflect into the domain with a change of sign.
#[inline]
pub fn mirror(i: usize, n: usize) -> (usize, f64) {
    if i == 0 {
        (1, -1.0)
    } else if i == n + 1 {
        (n, -1.0)
    } else {
        (i, 1.0)
    }
}

/// Initial stream function of layer `k` at global point (gi, gj).
pub fn initial_psi(p: &Params, k: usize, gi: usize, gj: usize) -> f64 {
    let (x, y) = ((gj as f64 - 0.5) * p.h(), (gi as f64 - 0.5) * p.h());
    let pi = std::f64::consts::PI;
    if k == 0 {
        0.01 * (pi * x).sin() * (pi * y).sin()
    } else {
        0.005 * (2.0 * pi * x).sin() * (pi * y).sin()
    }
}

/// Wind-stress curl at global point (gi, gj) (forcing of the upper layer).
pub fn tauz(p: &Params, gi: usize, _gj: usize) -> f64 {
    let y = (gi as f64 - 0.5) * p.h();
    -(std::f64::consts::PI * y).sin()
}

/// Sum of the four neighbours minus four times the centre (the Laplacian times h²).
#[inline]
pub fn lap(c: f64, up: f64, down: f64, left: f64, right: f64) -> f64 {
    ((up + down) + (left + right)) - 4.0 * c
}

/// The Jacobian J(ψ, ζ) = ψ_x ζ_y − ψ_y ζ_x times h², by centred differences (x: columns).
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn jac(pu: f64, pd: f64, pl: f64, pr: f64, zu: f64, zd: f64, zl: f64, zr: f64) -> f64 {
    ((pr - pl) * (zd - zu) - (pd - pu) * (zr - zl)) * 0.25
}

/// The new vorticity ζ' of one point.
#[inline]
pub fn step(p: &Params, z: f64, j: f64, f: f64, psi: f64, psi_other: f64) -> f64 {
    z + p.dt * (((f - j) - p.friction * z) + p.coupling * (psi_other - psi))
}

/// One Gauss-Seidel update of a point.
#[inline]
pub fn relax(up: f64, down: f64, left: f64, right: f64, b: f64) -> f64 {
    (((up + down) + (left + right)) - b) * 0.25
}

/// Bilinear (cell-centred) interpolation: `near` the coarse point containing the fine point,
/// `row`/`col` its neighbours towards the fine point, `diag` the diagonal one.
#[inline]
pub fn bilinear(near: f64, row: f64, col: f64, diag: f64) -> f64 {
    (((9.0 * near + 3.0 * row) + 3.0 * col) + diag) * 0.0625
}

/// The coarse coordinate containing fine coordinate `i` and the direction of its nearer
/// coarse neighbour along that axis.
#[inline]
pub fn coarse_of(i: usize) -> (usize, isize) {
    (i.div_ceil(2), if i % 2 == 1 { -1 } else { 1 })
}
