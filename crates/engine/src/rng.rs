//! The one seeded random generator of a run.
//!
//! Every random choice in a simulation (replacement victims, NACK back-off, tester operations)
//! draws from one `SimRng`, in event order, so a seed fixes the whole run.

use rand_core::{RngCore, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

#[derive(Clone, Debug)]
pub struct SimRng(Xoshiro256PlusPlus);

impl SimRng {
    pub fn new(seed: u64) -> SimRng {
        SimRng(Xoshiro256PlusPlus::seed_from_u64(seed))
    }
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    /// A value in `0..n` (n > 0), by Lemire's multiply-shift (bias below 2^-32 for small n).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }
    /// True with probability `p`.
    #[inline]
    pub fn chance(&mut self, p: f64) -> bool {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64) < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn same_seed_same_stream() {
        let mut a = SimRng::new(42);
        let mut b = SimRng::new(42);
        let xs: Vec<u64> = (0..100).map(|_| a.below(1000)).collect();
        let ys: Vec<u64> = (0..100).map(|_| b.below(1000)).collect();
        assert_eq!(xs, ys);
        assert!(xs.iter().all(|x| *x < 1000));
        let mut c = SimRng::new(43);
        let zs: Vec<u64> = (0..100).map(|_| c.below(1000)).collect();
        assert_ne!(xs, zs);
    }
}
