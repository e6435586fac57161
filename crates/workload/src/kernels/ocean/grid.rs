//! Grids partitioned into contiguous subgrids, as SPLASH-2's OCEAN "contiguous partitions"
//! version stores them: each processor's square-ish block of the grid, with a one-point ghost
//! border, lies in its own page-aligned piece of memory.
//!
//! **Layout.** The pieces are laid out processor-major, as SPLASH's `main` allocates them (one
//! `G_MALLOC` per processor and grid, processor by processor): processor 0's pieces of every
//! grid, then processor 1's, and so on ([`alloc_fields`]). So one processor's data is one
//! contiguous range and its grids cannot evict each other in a cache that holds it. Each piece
//! is a region of the memory map carrying its grid's name (reports merge same-named regions).
//!
//! A grid-major layout (each grid one block of `procs` page-rounded pieces) makes every grid a
//! multiple of a large power of two when `procs` is one: at `--size paper` on 64 processors
//! `q_multi` and `rhs_multi` were 2 MiB each and `psi`, `work1`, `work3` 1.5 MiB apart, so a
//! processor's `q_multi` and `rhs_multi` pieces (read together by `relax`) fell on the same
//! lines of a direct-mapped 1 MiB L2: 57 M read misses for 282 M references on `numachine`.

use crate::{Ctx, Place, Shared};
use machine::sim::Setup;
use machine::Addr;

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

/// One point of a [`Field`]: its index in the host array and its simulated address.
#[derive(Clone, Copy, Debug)]
pub struct Pt {
    pub i: usize,
    pub a: Addr,
}

/// One named structure holding `copies` partitioned grids (layers or multigrid levels).
pub struct Field {
    /// Host values, processor-major: processor `p`'s piece is `[p * per, (p + 1) * per)`.
    pub v: Shared<f64>,
    name: &'static str,
    lay: Vec<Layout>,
    /// Offset of each copy inside a processor's piece (elements).
    offs: Vec<usize>,
    /// Elements per processor (whole pages).
    per: usize,
    /// Simulated address of processor 0's piece, and the distance between processors' pieces
    /// (one processor's pieces of all fields).
    base: Addr,
    stride: u64,
}

impl Field {
    /// A field named `name` with one grid per layout in `lay` (not yet placed in memory).
    pub fn new(name: &'static str, lay: Vec<Layout>, procs: usize) -> Field {
        let mut offs = Vec::with_capacity(lay.len());
        let mut per = 0;
        for l in &lay {
            offs.push(per);
            per += l.part;
        }
        Field {
            v: Shared::new(per * procs, 0.0),
            name,
            lay,
            offs,
            per,
            base: 0,
            stride: 0,
        }
    }
    pub fn layout(&self, c: usize) -> &Layout {
        &self.lay[c]
    }
    /// Local point (li, lj) of processor `p`'s partition of copy `c`.
    #[inline]
    pub fn idx(&self, c: usize, p: usize, li: usize, lj: usize) -> Pt {
        let l = &self.lay[c];
        let local = self.offs[c] + li * (l.w + 2) + lj;
        Pt {
            i: p * self.per + local,
            a: self.base + p as u64 * self.stride + 8 * local as u64,
        }
    }
    /// Global point (gi, gj) of copy `c` (boundary points: the adjacent partition's ghost
    /// slot, which holds the boundary value).
    pub fn gidx(&self, c: usize, gi: usize, gj: usize) -> Pt {
        let l = &self.lay[c];
        let pr = (gi.max(1) - 1) / l.h;
        let pc = (gj.max(1) - 1) / l.w;
        let (pr, pc) = (pr.min(l.py - 1), pc.min(l.px - 1));
        self.idx(c, pr * l.px + pc, gi - pr * l.h, gj - pc * l.w)
    }
    #[inline]
    pub fn ld(&self, ctx: &mut Ctx, p: Pt) -> f64 {
        ctx.load(p.a);
        self.v.get(p.i)
    }
    #[inline]
    pub fn st(&self, ctx: &mut Ctx, p: Pt, x: f64) {
        self.v.set(p.i, x);
        ctx.store(p.a);
    }
}

/// Places `fields` in simulated memory processor-major (see the module documentation): for
/// each processor, its piece of every field in order, each a first-touch region named after
/// its field.
pub fn alloc_fields(s: &mut Setup, fields: &mut [&mut Field], procs: usize) {
    let stride: u64 = fields.iter().map(|f| 8 * f.per as u64).sum();
    for p in 0..procs {
        for f in fields.iter_mut() {
            let a = s.alloc(f.name, 8 * f.per as u64, Place::FirstTouch);
            if p == 0 {
                f.base = a;
                f.stride = stride;
            }
            // Pieces are whole pages, so the bump allocator puts them back to back.
            assert_eq!(
                a,
                f.base + p as u64 * stride,
                "{}: piece {p} misplaced",
                f.name
            );
        }
    }
}
