//! The OCEAN model computed sequentially on the host, on whole (n+2) x (n+2) arrays: the
//! reference the partitioned simulated run must reproduce.

use super::physics::{self, Params};

/// A whole grid with its boundary, row-major.
#[derive(Clone)]
pub struct Grid {
    pub n: usize,
    pub v: Vec<f64>,
}

impl Grid {
    pub fn zero(n: usize) -> Grid {
        Grid {
            n,
            v: vec![0.0; (n + 2) * (n + 2)],
        }
    }
    #[inline]
    pub fn at(&self, i: usize, j: usize) -> f64 {
        self.v[i * (self.n + 2) + j]
    }
    #[inline]
    pub fn set(&mut self, i: usize, j: usize, x: f64) {
        self.v[i * (self.n + 2) + j] = x;
    }
    /// The value at (i, j), reflecting points outside the domain (`physics::mirror`).
    #[inline]
    pub fn r(&self, i: usize, j: usize) -> f64 {
        let ((i, si), (j, sj)) = (physics::mirror(i, self.n), physics::mirror(j, self.n));
        si * sj * self.at(i, j)
    }
    fn lap(&self, i: usize, j: usize) -> f64 {
        physics::lap(
            self.at(i, j),
            self.r(i - 1, j),
            self.r(i + 1, j),
            self.r(i, j - 1),
            self.r(i, j + 1),
        )
    }
}

/// Result of the reference run.
pub struct Outcome {
    pub psi: [Grid; 2],
    /// V-cycles of every solve, in order (step-major, layer-minor).
    pub cycles: Vec<usize>,
}

/// The residual max |b − A q| over the interior.
pub fn residual_max(q: &Grid, b: &Grid) -> f64 {
    let mut m = 0f64;
    for i in 1..=q.n {
        for j in 1..=q.n {
            m = m.max((b.at(i, j) - q.lap(i, j)).abs());
        }
    }
    m
}

fn max_abs(b: &Grid) -> f64 {
    let mut m = 0f64;
    for i in 1..=b.n {
        for j in 1..=b.n {
            m = m.max(b.at(i, j).abs());
        }
    }
    m
}

struct Multigrid {
    q: Vec<Grid>,
    b: Vec<Grid>,
}

impl Multigrid {
    fn relax(&mut self, l: usize, color: usize) {
        let (q, b) = (&mut self.q[l], &self.b[l]);
        for i in 1..=q.n {
            for j in 1..=q.n {
                if (i + j) % 2 == color {
                    let x = physics::relax(
                        q.r(i - 1, j),
                        q.r(i + 1, j),
                        q.r(i, j - 1),
                        q.r(i, j + 1),
                        b.at(i, j),
                    );
                    q.set(i, j, x);
                }
            }
        }
    }
    fn sweeps(&mut self, l: usize, k: usize) {
        for _ in 0..k {
            self.relax(l, 0);
            self.relax(l, 1);
        }
    }
    fn vcycle(&mut self, p: &Params, l: usize) {
        if l + 1 == self.q.len() {
            self.sweeps(l, p.coarse_sweeps(self.q[l].n));
            return;
        }
        self.sweeps(l, p.pre);
        let nc = self.q[l + 1].n;
        self.q[l + 1] = Grid::zero(nc);
        for ci in 1..=nc {
            for cj in 1..=nc {
                let mut s = 0.0;
                for (di, dj) in [(1, 1), (1, 0), (0, 1), (0, 0)] {
                    let (i, j) = (2 * ci - di, 2 * cj - dj);
                    s += self.b[l].at(i, j) - self.q[l].lap(i, j);
                }
                self.b[l + 1].set(ci, cj, s);
            }
        }
        self.vcycle(p, l + 1);
        for i in 1..=self.q[l].n {
            for j in 1..=self.q[l].n {
                let ((ci, di), (cj, dj)) = (physics::coarse_of(i), physics::coarse_of(j));
                let (ni, nj) = (ci.wrapping_add_signed(di), cj.wrapping_add_signed(dj));
                let c = &self.q[l + 1];
                let c = physics::bilinear(c.at(ci, cj), c.r(ni, cj), c.r(ci, nj), c.r(ni, nj));
                let x = self.q[l].at(i, j) + c;
                self.q[l].set(i, j, x);
            }
        }
        self.sweeps(l, p.post);
    }
}

/// Solves ∇²ψ = ζ (scaled: lap ψ = h² ζ) starting from `psi`; returns the V-cycles used.
pub fn solve(p: &Params, levels: &[usize], psi: &mut Grid, zeta: &Grid) -> usize {
    let h2 = p.h() * p.h();
    let mut mg = Multigrid {
        q: levels.iter().map(|&n| Grid::zero(n)).collect(),
        b: levels.iter().map(|&n| Grid::zero(n)).collect(),
    };
    mg.q[0] = psi.clone();
    for i in 1..=p.n {
        for j in 1..=p.n {
            mg.b[0].set(i, j, h2 * zeta.at(i, j));
        }
    }
    let bmax = max_abs(&mg.b[0]);
    let mut cycles = 0;
    while cycles < p.max_cycles {
        mg.vcycle(p, 0);
        cycles += 1;
        if residual_max(&mg.q[0], &mg.b[0]) <= p.tol * bmax {
            break;
        }
    }
    *psi = mg.q.swap_remove(0);
    cycles
}

/// Runs the whole model; `levels` as the simulated run uses them.
pub fn run(p: &Params, levels: &[usize]) -> Outcome {
    let n = p.n;
    let mut psi = [Grid::zero(n), Grid::zero(n)];
    let mut f = Grid::zero(n);
    for i in 1..=n {
        for j in 1..=n {
            for (k, g) in psi.iter_mut().enumerate() {
                g.set(i, j, physics::initial_psi(p, k, i, j));
            }
            f.set(i, j, physics::tauz(p, i, j));
        }
    }
    let inv_h2 = 1.0 / (p.h() * p.h());
    let mut cycles = Vec::new();
    for _ in 0..p.steps {
        let mut zeta = [Grid::zero(n), Grid::zero(n)];
        for k in 0..2 {
            for i in 1..=n {
                for j in 1..=n {
                    zeta[k].set(i, j, psi[k].lap(i, j) * inv_h2);
                }
            }
        }
        let mut znew = [Grid::zero(n), Grid::zero(n)];
        for k in 0..2 {
            let (s, z) = (&psi[k], &zeta[k]);
            for i in 1..=n {
                for j in 1..=n {
                    let jv = physics::jac(
                        s.r(i - 1, j),
                        s.r(i + 1, j),
                        s.r(i, j - 1),
                        s.r(i, j + 1),
                        z.r(i - 1, j),
                        z.r(i + 1, j),
                        z.r(i, j - 1),
                        z.r(i, j + 1),
                    ) * inv_h2;
                    let force = if k == 0 { f.at(i, j) } else { 0.0 };
                    let x =
                        physics::step(p, z.at(i, j), jv, force, s.at(i, j), psi[1 - k].at(i, j));
                    znew[k].set(i, j, x);
                }
            }
        }
        for k in 0..2 {
            cycles.push(solve(p, levels, &mut psi[k], &znew[k]));
        }
    }
    Outcome { psi, cycles }
}
