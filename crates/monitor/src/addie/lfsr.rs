//! The Addie's random-number generator: a 31-stage maximal-length shift register with feedback
//! from stages 3 and 31 (seed 002, "Random Number Generation" and Figure 4).
//!
//! **Stage numbering.** Stage 1 is the input stage; each clock moves stage i into stage i+1 and
//! loads stage 1 with `stage 3 XOR stage 31` (a Fibonacci register, characteristic polynomial
//! x^31 + x^3 + 1, one of the primitive trinomials of degree 31). The state is held as a 31-bit
//! word with **stage 1 in bit 30** (the most significant bit) and stage i in bit 31-i, so a clock
//! is a right shift with the feedback entering at the top, and "the top n bits" of the register
//! are stages 1..n with stage 1 most significant. This orientation is the one in which the
//! seed's correlated variant reads naturally: the most significant bit of one random number
//! moves one stage on and becomes the next-to-most-significant bit of the next (see
//! [`super::RandomMode::Correlated`]).
//!
//! **Maximal length.** 2^31 - 1 is a (Mersenne) prime, so the order of the transition map T
//! divides 2^31 - 1 iff T^(2^31-1) = I, and then every non-zero state has period 1 or 2^31 - 1;
//! period 1 is impossible (the only word fixed by the shift is all ones, whose feedback
//! 1 XOR 1 = 0 breaks it). The tests check T^(2^31-1) = I and T != I by squaring the 31x31 bit
//! matrix, which proves the period of every non-zero state is exactly 2^31 - 1.

/// Number of stages.
pub const STAGES: u32 = 31;
/// The period of every non-zero state.
pub const PERIOD: u64 = (1 << STAGES) - 1;
const MASK: u32 = (1 << STAGES) - 1;

/// A 31-stage LFSR (see the module documentation for the stage numbering).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Lfsr31 {
    state: u32,
}

impl Lfsr31 {
    /// A register loaded with `state` (the low 31 bits; stage 1 in bit 30). The all-zero state
    /// locks the register at zero, so it is refused.
    pub fn new(state: u32) -> Result<Lfsr31, String> {
        let state = state & MASK;
        if state == 0 {
            return Err(
                "LFSR state must be non-zero in its low 31 bits (all zeros is a lock-up state)"
                    .into(),
            );
        }
        Ok(Lfsr31 { state })
    }
    /// The 31-bit state word (stage 1 in bit 30, stage 31 in bit 0).
    pub fn state(&self) -> u32 {
        self.state
    }
    /// Stage `i` (1..=31).
    pub fn stage(&self, i: u32) -> bool {
        assert!((1..=STAGES).contains(&i), "LFSR stage {i} is not in 1..=31");
        (self.state >> (STAGES - i)) & 1 == 1
    }
    /// One clock; returns the bit shifted into stage 1.
    #[inline(always)]
    pub fn clock(&mut self) -> u32 {
        // Stage 3 is bit 28, stage 31 is bit 0.
        let fb = ((self.state >> 28) ^ self.state) & 1;
        self.state = (self.state >> 1) | (fb << 30);
        fb
    }
    /// `k` clocks (k <= 28) at once: the feedback bits of k consecutive clocks only read stages
    /// that are still the original stages 3..31 (bits 0..28), so they are computed as one word.
    #[inline(always)]
    pub fn clock_n(&mut self, k: u32) {
        debug_assert!(k <= 28);
        if k == 0 {
            return;
        }
        // Clock j (0-based) feeds back bit 0 XOR bit 28 of the word it sees, which are still
        // the original bits j and 28 + j while 28 + j <= 30: chunks of at most 3 clocks.
        let mut left = k;
        while left > 0 {
            let c = left.min(3);
            let s = self.state;
            let fb = (s ^ (s >> 28)) & ((1 << c) - 1); // bit j = feedback of clock j
                                                       // Clock j's bit enters bit 30 and moves c - 1 - j more: it ends in bit 31 - c + j.
            self.state = (s >> c) | (fb << (STAGES - c));
            left -= c;
        }
    }
    /// The top `n` stages (stages 1..n, stage 1 most significant) as an n-bit number.
    #[inline(always)]
    pub fn top(&self, n: u32) -> u32 {
        self.state >> (STAGES - n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The register as an array of stages, clocked the textbook way: an independent model.
    struct Stages([bool; 32]); // index 1..=31
    impl Stages {
        fn clock(&mut self) {
            let fb = self.0[3] ^ self.0[31];
            for i in (2..=31).rev() {
                self.0[i] = self.0[i - 1];
            }
            self.0[1] = fb;
        }
    }

    #[test]
    fn matches_the_stage_array_model() {
        let mut l = Lfsr31::new(0x1234_5678).unwrap();
        let mut s = Stages([false; 32]);
        for i in 1..=31 {
            s.0[i] = l.stage(i as u32);
        }
        for _ in 0..5000 {
            l.clock();
            s.clock();
            for i in 1..=31 {
                assert_eq!(l.stage(i as u32), s.0[i]);
            }
        }
    }

    #[test]
    fn known_sequence_from_stage_31_only() {
        // Only stage 31 set: it feeds back a 1 into stage 1 while shifting out; the next 30
        // clocks move that single 1 down, feeding back stage 3 when it passes there.
        let mut l = Lfsr31::new(1).unwrap();
        assert_eq!(l.clock(), 1);
        assert_eq!(l.state(), 1 << 30); // stage 1 only
        assert_eq!(l.clock(), 0);
        assert_eq!(l.state(), 1 << 29); // stage 2
        assert_eq!(l.clock(), 0);
        assert_eq!(l.state(), 1 << 28); // stage 3
        assert_eq!(l.clock(), 1); // stage 3 feeds back
        assert_eq!(l.state(), (1 << 30) | (1 << 27)); // stages 1 and 4
    }

    #[test]
    fn clock_n_equals_repeated_clock() {
        let mut a = Lfsr31::new(0x5EED_0001).unwrap();
        let mut b = a;
        for k in [1, 2, 3, 4, 7, 8, 12, 16, 1, 28] {
            for _ in 0..200 {
                a.clock_n(k);
                for _ in 0..k {
                    b.clock();
                }
                assert_eq!(a, b, "k = {k}");
            }
        }
    }

    /// 31x31 matrices over GF(2): row i is a bit mask of the input bits output bit i reads.
    type M = [u32; 31];
    fn mul(a: &M, b: &M) -> M {
        // (a*b) x = a (b x): row i of a*b is the XOR of b's rows selected by a's row i.
        std::array::from_fn(|i| {
            b.iter()
                .enumerate()
                .filter(|(j, _)| (a[i] >> j) & 1 == 1)
                .fold(0, |acc, (_, row)| acc ^ row)
        })
    }
    fn transition() -> M {
        // Output bit i = bit i+1 of the input for i < 30; bit 30 = bit 28 XOR bit 0.
        let mut t = [0u32; 31];
        for (i, row) in t.iter_mut().enumerate().take(30) {
            *row = 1 << (i + 1);
        }
        t[30] = (1 << 28) | 1;
        t
    }
    fn apply(m: &M, x: u32) -> u32 {
        (0..31).fold(0, |acc, i| acc | (((m[i] & x).count_ones() & 1) << i))
    }

    #[test]
    fn maximal_length_period_is_2_pow_31_minus_1() {
        let t = transition();
        // The matrix is the register: check it on a few states.
        let mut l = Lfsr31::new(0x0ABC_DEF1).unwrap();
        for _ in 0..100 {
            let before = l.state();
            l.clock();
            assert_eq!(apply(&t, before), l.state());
        }
        // T^(2^31) by 31 squarings; T^(2^31 - 1) = I  <=>  T^(2^31) = T.
        let mut p = t;
        for _ in 0..31 {
            p = mul(&p, &p);
        }
        assert_eq!(p, t, "T^(2^31) != T: the period does not divide 2^31 - 1");
        let identity: M = std::array::from_fn(|i| 1 << i);
        assert_ne!(t, identity);
        // No non-zero fixed point: T x = x only for x = 0, so with 2^31 - 1 prime every
        // non-zero state has period exactly 2^31 - 1.
        let all_ones = MASK;
        assert_ne!(apply(&t, all_ones), all_ones);
        assert_eq!(PERIOD, 2_147_483_647);
        // 2^31 - 1 is prime (trial division up to its square root).
        let n = PERIOD;
        assert!((2..=46_341u64).all(|d| n.rem_euclid(d) != 0));
    }

    #[test]
    fn zero_state_is_refused() {
        assert!(Lfsr31::new(0).is_err());
        assert!(Lfsr31::new(1 << 31).is_err()); // only bit 31, outside the register
    }
}
