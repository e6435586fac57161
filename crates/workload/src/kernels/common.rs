//! Small helpers shared by the SPLASH-2 kernels.

use crate::{Array, Ctx, Procedure};
use engine::SimRng;

/// A uniform double in [0, 1) from the simulation's seeded generator.
pub fn uniform(rng: &mut SimRng) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// An array of doubles: its simulated address range. Element `i` is at `base + 8 i`.
pub fn doubles(base: u64) -> Array {
    Array { base, elem: 8 }
}

/// Runs `f` inside procedure `p` (so misses are attributed to it, as SPLASH-2's functions are).
#[inline]
pub fn within<R>(ctx: &mut Ctx, p: Procedure, f: impl FnOnce(&mut Ctx) -> R) -> R {
    ctx.enter(p);
    let r = f(ctx);
    ctx.leave();
    r
}

/// The largest relative difference between two equally long slices, relative to the largest
/// magnitude in `want` (so near-zero entries do not blow the ratio up).
pub fn max_rel_diff(got: &[f64], want: &[f64]) -> f64 {
    let scale = want.iter().fold(0f64, |m, v| m.max(v.abs())).max(1e-300);
    got.iter()
        .zip(want)
        .fold(0f64, |m, (a, b)| m.max((a - b).abs()))
        / scale
}

/// `n` is a power of two (and not zero).
pub fn is_pow2(n: usize) -> bool {
    n != 0 && n & (n - 1) == 0
}

/// Marks the start of phase `id` in the PhaseID register (seed 000 §4.3: the low 4 bits tag
/// every transaction, the card's SRAM can be addressed by all 16), only when it changes: each
/// write is an uncached store the program pays for, as an instrumented program would. The
/// kernels' phase numbers are listed in `KERNELS.md` ("Phases"); 0 is "before any phase".
#[inline]
pub fn phase(ctx: &mut Ctx, id: u16) {
    if ctx.current_phase() != id {
        ctx.phase(id);
    }
}
