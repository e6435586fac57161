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
    /// `k` clocks (k <= 31) at once, in a fixed handful of word operations whatever `k`.
    ///
    /// Number the register's bits as one stream: the state holds x_m..x_{m+30} (bit i is
    /// x_{m+i}, bit 0 the next to leave), and a clock appends x_{m+31} = x_m XOR x_{m+28}
    /// (stage 31 XOR stage 3). Relative to the current state, clock j (0-based) feeds back
    /// fb_j = x_j XOR x_{28+j}: for j < 3 both are bits of the current word; for j >= 3,
    /// x_{28+j} is fb_{j-3}, a bit this same call produced. So fb_j = v_j XOR fb_{j-3} with
    /// v = the current word XOR its bits 28..30 moved to 0..2, a stride-3 prefix XOR of v that
    /// four shift-XORs compute for every j <= 30 (they reach back 3 + 6 + 12 + 24 >= 30 places).
    /// The k feedback bits then enter at the top in order: fb_j ends in bit 31 - k + j.
    #[inline(always)]
    pub fn clock_n(&mut self, k: u32) {
        debug_assert!(k <= STAGES);
        let s = self.state;
        let mut f = s ^ (s >> 28); // bits 0..2: x_j ^ x_{28+j}; bits 3..30: x_j
        f ^= f << 3;
        f ^= f << 6;
        f ^= f << 12;
        f ^= f << 24;
        let fb = f & ((1u32 << k) - 1); // bit j = fb_j; the bits above k are not clocked
                                        // For k = 31 both shifts stay below 32 (s >> 31 is 0: the word has 31 bits).
        self.state = (s >> k) | (fb << (STAGES - k));
    }
    /// The top `n` stages (stages 1..n, stage 1 most significant) as an n-bit number.
    #[inline(always)]
    pub fn top(&self, n: u32) -> u32 {
        self.state >> (STAGES - n)
    }
}

/// The register read ahead, 31 clocks at a time: what an Addie clocks on every sample.
///
/// `bits` holds 62 consecutive output bits of the register's stream (bit i of the state word is
/// x_{m+i} in [`Lfsr31::clock_n`]'s numbering): the low 31 are a state word and the high 31 the
/// state word 31 clocks later. The register as the unit sees it is the 31 bits from `pos`
/// (0..=31). A clock of k <= 31 moves `pos` by k; only when it passes 31 is a new word made,
/// by `clock_n(31)` (which turns a state word into the next 31 bits of the stream) -- so a
/// sample costs an add, a compare and a shift, and the word operations of `clock_n` are paid
/// once every 31 clocks (every 3.9 samples of an 8-bit independent Addie) instead of every
/// sample. The numbers it gives are bit for bit those of clocking an [`Lfsr31`] (tested).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ahead {
    bits: u64,
    pos: u32,
}

impl Ahead {
    /// Reads ahead of `l`: the unit's register starts at `l`'s state (the high word; the low
    /// one, the 31 bits before it, is never read).
    pub fn new(l: Lfsr31) -> Ahead {
        Ahead {
            bits: (l.state as u64) << STAGES,
            pos: STAGES,
        }
    }
    /// `k` clocks (k <= 31).
    #[inline(always)]
    pub fn clock_n(&mut self, k: u32) {
        debug_assert!(k <= STAGES);
        let mut pos = self.pos + k;
        if pos > STAGES {
            let mut next = Lfsr31 {
                state: (self.bits >> STAGES) as u32,
            };
            next.clock_n(STAGES); // the state word 31 clocks on: the stream's next 31 bits
            self.bits = (self.bits >> STAGES) | ((next.state as u64) << STAGES);
            pos -= STAGES;
        }
        self.pos = pos;
    }
    /// The top `n` stages of the register now (as [`Lfsr31::top`]).
    #[inline(always)]
    pub fn top(&self, n: u32) -> u32 {
        self.top_with(STAGES - n, (1 << n) - 1)
    }
    /// [`Ahead::top`] with `31 - n` and `2^n - 1` given (a unit computes them once).
    #[inline(always)]
    pub fn top_with(&self, below: u32, mask: u32) -> u32 {
        (self.bits >> (self.pos + below)) as u32 & mask
    }
    /// The register now.
    pub fn register(&self) -> Lfsr31 {
        Lfsr31 {
            state: (self.bits >> self.pos) as u32 & MASK,
        }
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

    /// `clock_n(k)` for every k in 0..=31 against k clocks of the stage array, from several
    /// states (including the lone stage 31 and all ones), each stage compared.
    #[test]
    fn clock_n_matches_the_stage_array_model() {
        for start in [1, 0x1234_5678, 0x7FFF_FFFF, 0x4000_0000, 0x0ABC_DEF1] {
            let mut l = Lfsr31::new(start).unwrap();
            let mut s = Stages([false; 32]);
            for i in 1..=31 {
                s.0[i] = l.stage(i as u32);
            }
            for round in 0..40 {
                for k in 0..=31 {
                    l.clock_n(k);
                    for _ in 0..k {
                        s.clock();
                    }
                    for i in 1..=31 {
                        assert_eq!(
                            l.stage(i as u32),
                            s.0[i],
                            "start {start:#x} round {round} k {k} stage {i}"
                        );
                    }
                }
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
        for k in (0..=31).chain([1, 16, 31, 8]) {
            for _ in 0..200 {
                a.clock_n(k);
                for _ in 0..k {
                    b.clock();
                }
                assert_eq!(a, b, "k = {k}");
            }
        }
    }

    /// The read-ahead register against the register clocked directly: every k in 0..=31 in a
    /// scrambled order, the whole register and every top n compared after each.
    #[test]
    fn ahead_equals_the_register() {
        for start in [1, 0x5EED_0001, 0x7FFF_FFFF] {
            let mut l = Lfsr31::new(start).unwrap();
            let mut a = Ahead::new(l);
            assert_eq!(a.register(), l);
            for i in 0..3000u32 {
                let k = (i.wrapping_mul(7) ^ (i >> 3)) % 32;
                l.clock_n(k);
                a.clock_n(k);
                assert_eq!(a.register(), l, "start {start:#x} i {i} k {k}");
                for n in 1..=31 {
                    assert_eq!(a.top(n), l.top(n), "n {n}");
                }
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
