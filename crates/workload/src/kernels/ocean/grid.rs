//! Grids partitioned into contiguous subgrids, as SPLASH-2's OCEAN "contiguous partitions"
//! version stores them: each processor's square-ish block of the grid, with a one-point ghost
//! border, lies in its own page-aligned piece of memory.

use crate::kernels::common::doubles;
use crate::{Array, Ctx, Place, Shared};
use machine::sim::Setup;

/// The processor grid and one level's partition sizes.
#[derive(Clone, Copy, Debug)]
pub struct Layout {
    /// Interior points per side.
    pub n: usize,
    /// Processor grid: `py` rows of `px` processors.
    pub px: usize,
    pub py: usize,
    /// Interior rows and columns of each partition.
    pub h: usize,
    pub w: usize,
    /// Elements per partition, ghosts included, rounded up to whole pages.
    pub part: usize,
}

impl Layout {
    pub fn new(n: usize, px: usize, py: usize) -> Layout {
        let (h, w) = (n / py, n / px);
        let per_page = 4096 / 8;
        Layout {
            n,
            px,
            py,
            h,
            w,
            part: ((h + 2) * (w + 2)).div_ceil(per_page) * per_page,
        }
    }
    /// Processor grid row and column of processor `p`.
    pub fn coords(&self, p: usize) -> (usize, usize) {
        (p / self.px, p % self.px)
    }
    /// Global coordinates of local point (li, lj) of processor `p` (ghosts included).
    pub fn global(&self, p: usize, li: usize, lj: usize) -> (usize, usize) {
        let (pr, pc) = self.coords(p);
        (pr * self.h + li, pc * self.w + lj)
    }
}

/// One named structure holding `copies` partitioned grids (layers or multigrid levels).
pub struct Field {
    pub at: Array,
    pub v: Shared<f64>,
    lay: Vec<Layout>,
    offs: Vec<usize>,
}

impl Field {
    /// Allocates `name` with one grid per layout in `lay`, first touch (each processor
    /// initializes its own partitions first).
    pub fn alloc(s: &mut Setup, name: &str, lay: Vec<Layout>, procs: usize) -> Field {
        let mut offs = Vec::with_capacity(lay.len());
        let mut total = 0;
        for l in &lay {
            offs.push(total);
            total += l.part * procs;
        }
        Field {
            at: doubles(s.alloc(name, (total * 8) as u64, Place::FirstTouch)),
            v: Shared::new(total, 0.0),
            lay,
            offs,
        }
    }
    pub fn layout(&self, c: usize) -> &Layout {
        &self.lay[c]
    }
    /// Index of local point (li, lj) of processor `p`'s partition of copy `c`.
    #[inline]
    pub fn idx(&self, c: usize, p: usize, li: usize, lj: usize) -> usize {
        let l = &self.lay[c];
        self.offs[c] + p * l.part + li * (l.w + 2) + lj
    }
    /// Index of global point (gi, gj) of copy `c` (boundary points: the adjacent partition's
    /// ghost slot, which holds the boundary value).
    pub fn gidx(&self, c: usize, gi: usize, gj: usize) -> usize {
        let l = &self.lay[c];
        let pr = (gi.max(1) - 1) / l.h;
        let pc = (gj.max(1) - 1) / l.w;
        let (pr, pc) = (pr.min(l.py - 1), pc.min(l.px - 1));
        self.idx(c, pr * l.px + pc, gi - pr * l.h, gj - pc * l.w)
    }
    #[inline]
    pub fn ld(&self, ctx: &mut Ctx, i: usize) -> f64 {
        ctx.load(self.at.at(i));
        self.v.get(i)
    }
    #[inline]
    pub fn st(&self, ctx: &mut Ctx, i: usize, x: f64) {
        self.v.set(i, x);
        ctx.store(self.at.at(i));
    }
}
