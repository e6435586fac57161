//! One Addie unit (seed 002, Figure 1 and "An 8-bit Addie"): an n-bit saturating up/down
//! counter, a comparator against an n-bit random number, and an XOR with the input bit.
//!
//! Per sample: the comparator emits `counter > random`; when that differs from the input bit
//! (the XOR is 1) the counter takes one step toward the input, up on a 1 and down on a 0,
//! saturating at 0 and 2^n - 1. The random number is uniform on 0..2^n, so the comparator emits
//! a 1 with probability counter / 2^n and the expected step is `p - counter / 2^n`: the counter
//! settles around p * 2^n, with time constant 2^n samples (docs/addie.md derives both).
//!
//! The reading is `counter / (2^n - 1)` (the seed's scale: 64/255 is "25 %", 128 is "50 %"),
//! readable at any time at no cost to the unit.

use super::lfsr::{Ahead, Lfsr31};

/// Counter widths the unit accepts (the seed uses 8 and 12; 4..=16 is our range).
pub const WIDTHS: std::ops::RangeInclusive<u32> = 4..=16;

/// How the n-bit random number of each sample is drawn from the LFSR.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RandomMode {
    /// The LFSR is clocked n times per sample and the random number is its top n stages
    /// (stages 1..n, stage 1 most significant): every sample's n bits are new, none shared
    /// with the previous sample's number.
    Independent,
    /// The seed's correlated variant: the LFSR is clocked **once** per sample and the random
    /// number is the top n stages with the most significant bit inverted. Stage 1 moves to
    /// stage 2, so with `R_k` the number of sample k and `b` the bit just clocked into stage 1,
    /// `R_{k+1} = (!b) << (n-1) | (R_k XOR 2^(n-1)) >> 1`: the MSB of `R_k`, inverted,
    /// becomes the next-to-MSB of `R_{k+1}` ("the MSB of the current random number will be
    /// inverted, becoming the next-to MSB of the next random number"), and the lower bits
    /// shift down one place.
    Correlated,
}

impl RandomMode {
    pub const ALL: [RandomMode; 2] = [RandomMode::Independent, RandomMode::Correlated];
    pub fn name(self) -> &'static str {
        match self {
            RandomMode::Independent => "independent",
            RandomMode::Correlated => "correlated",
        }
    }
}

/// An Addie's settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddieConfig {
    /// Counter and random-number width in bits (4..=16).
    pub width: u32,
    pub mode: RandomMode,
    /// The counter's value at reset; `None` is half scale, 2^(n-1) (128 for 8 bits, the
    /// seed's start at "50 %").
    pub start: Option<u32>,
    /// The LFSR's state at reset (non-zero in its low 31 bits).
    pub lfsr_state: u32,
}

impl AddieConfig {
    pub fn new(width: u32, mode: RandomMode, lfsr_state: u32) -> AddieConfig {
        AddieConfig {
            width,
            mode,
            start: None,
            lfsr_state,
        }
    }
}

/// An Addie unit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Addie {
    width: u32,
    max: u32,
    count: u32,
    mode: RandomMode,
    /// The LFSR, read ahead ([`Ahead`]).
    lfsr: Ahead,
    /// Clocks per sample: n for independent random numbers, 1 for correlated ones; with
    /// `flip`, the random mode decided once here rather than on every sample.
    step: u32,
    /// XORed into the top n stages: 0, or the most significant bit for the correlated variant.
    flip: u32,
    /// 31 - n: the register's stages below the top n.
    below: u32,
    samples: u64,
}

impl Addie {
    /// A unit at reset. Errors name the bad setting: a width outside 4..=16, a start value
    /// above 2^n - 1, an all-zero LFSR state.
    pub fn new(c: AddieConfig) -> Result<Addie, String> {
        if !WIDTHS.contains(&c.width) {
            return Err(format!(
                "Addie width {} is not in {}..={} bits",
                c.width,
                WIDTHS.start(),
                WIDTHS.end()
            ));
        }
        let max = (1u32 << c.width) - 1;
        let count = c.start.unwrap_or(1 << (c.width - 1));
        if count > max {
            return Err(format!(
                "Addie start value {count} does not fit {} bits (0..={max})",
                c.width
            ));
        }
        let (step, flip) = match c.mode {
            RandomMode::Independent => (c.width, 0),
            RandomMode::Correlated => (1, 1 << (c.width - 1)),
        };
        Ok(Addie {
            width: c.width,
            max,
            count,
            mode: c.mode,
            lfsr: Ahead::new(Lfsr31::new(c.lfsr_state).map_err(|e| format!("Addie: {e}"))?),
            step,
            flip,
            below: super::lfsr::STAGES - c.width,
            samples: 0,
        })
    }

    /// The random number the register holds now: its top n stages, the most significant
    /// inverted for the correlated variant.
    #[inline(always)]
    fn random(&self) -> u32 {
        self.lfsr.top_with(self.below, self.max) ^ self.flip
    }

    /// Draws the random number for the next sample: n clocks (independent) or one (correlated).
    #[inline(always)]
    fn next_random(&mut self) -> u32 {
        self.lfsr.clock_n(self.step);
        self.random()
    }

    /// One sample of the input stream; returns the comparator's output (the Addie's own
    /// stochastic stream, the one the seed's figures average).
    #[inline]
    pub fn sample(&mut self, input: bool) -> bool {
        let r = self.next_random();
        let out = self.count > r;
        // The XOR rule as one step of input - output (in -1..=1: none when they agree),
        // clamped at full scale. Up happens on a 1 the comparator missed, where
        // count <= r <= max, so only count = r = max needs the clamp; down happens on a 0 it
        // emitted, where count > r >= 0 already keeps the counter off zero (no underflow).
        self.count = (self.count + input as u32 - out as u32).min(self.max);
        self.samples += 1;
        out
    }

    /// The counter value (what the debug port reads).
    pub fn value(&self) -> u32 {
        self.count
    }
    /// The probability estimate: value / (2^n - 1).
    pub fn estimate(&self) -> f64 {
        self.count as f64 / self.max as f64
    }
    pub fn width(&self) -> u32 {
        self.width
    }
    /// Full scale, 2^n - 1.
    pub fn full_scale(&self) -> u32 {
        self.max
    }
    pub fn mode(&self) -> RandomMode {
        self.mode
    }
    /// Samples taken since reset.
    pub fn samples(&self) -> u64 {
        self.samples
    }
    /// The random number the last sample was compared against (0 before the first).
    pub fn last_random(&self) -> u32 {
        if self.samples == 0 {
            0
        } else {
            self.random()
        }
    }
    /// The LFSR as the unit has clocked it.
    pub fn lfsr(&self) -> Lfsr31 {
        self.lfsr.register()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addie(width: u32, mode: RandomMode) -> Addie {
        Addie::new(AddieConfig::new(width, mode, 0x2468_ACE1)).unwrap()
    }

    #[test]
    fn widths_and_start_are_validated() {
        for w in [0, 1, 3, 17, 32] {
            let e = Addie::new(AddieConfig::new(w, RandomMode::Independent, 1)).unwrap_err();
            assert!(e.contains(&format!("width {w}")), "{e}");
        }
        for w in WIDTHS {
            let a = addie(w, RandomMode::Independent);
            assert_eq!(a.value(), 1 << (w - 1));
            assert_eq!(a.full_scale(), (1 << w) - 1);
        }
        assert_eq!(addie(8, RandomMode::Correlated).value(), 128);
        let mut c = AddieConfig::new(8, RandomMode::Independent, 1);
        c.start = Some(256);
        assert!(Addie::new(c).unwrap_err().contains("start value 256"));
        assert!(Addie::new(AddieConfig::new(8, RandomMode::Independent, 0)).is_err());
    }

    #[test]
    fn step_rule_against_the_comparator() {
        // Every sample: compute the comparator from the exposed random number and check the
        // counter moved exactly as the XOR rule says.
        for mode in RandomMode::ALL {
            let mut a = addie(8, mode);
            let mut rng = engine::SimRng::new(5);
            for _ in 0..20_000 {
                let before = a.value();
                let input = rng.chance(0.4);
                let out = a.sample(input);
                let r = a.last_random();
                assert!(r <= 255);
                assert_eq!(out, before > r);
                let want = match (out != input, input) {
                    (false, _) => before,
                    (true, true) => (before + 1).min(255),
                    (true, false) => before.saturating_sub(1),
                };
                assert_eq!(a.value(), want);
            }
        }
    }

    #[test]
    fn saturates_without_overflow() {
        // All ones: the comparator can never exceed 2^n - 1 > r for r = 2^n - 1, so the counter
        // climbs to full scale and stays; all zeros pins it at 0.
        for w in [4, 8, 16] {
            let mut a = addie(w, RandomMode::Independent);
            for _ in 0..(40u64 << w) {
                a.sample(true);
                assert!(a.value() <= a.full_scale());
            }
            assert_eq!(a.value(), a.full_scale());
            assert_eq!(a.estimate(), 1.0);
            for _ in 0..(40u64 << w) {
                a.sample(false);
            }
            assert_eq!(a.value(), 0);
            assert_eq!(a.estimate(), 0.0);
        }
    }

    #[test]
    fn correlated_random_numbers_follow_the_seed_rule() {
        for w in [4, 8, 12, 16] {
            let mut a = addie(w, RandomMode::Correlated);
            a.sample(false);
            let msb = 1u32 << (w - 1);
            for _ in 0..5000 {
                let prev = a.last_random();
                a.sample(true);
                let r = a.last_random();
                // Lower n-1 bits: the previous number with its MSB inverted, shifted down one.
                assert_eq!(r & (msb - 1), (prev ^ msb) >> 1, "width {w}");
                // The MSB: stage 1 (the bit just clocked in), inverted.
                assert_eq!(r & msb != 0, !a.lfsr().stage(1));
            }
        }
    }

    #[test]
    fn independent_random_numbers_share_no_bits() {
        // Each number is the n feedback bits of the n clocks since the previous one.
        let w = 8;
        let mut a = addie(w, RandomMode::Independent);
        let mut shadow = a.lfsr();
        for _ in 0..2000 {
            let mut fresh = 0;
            for _ in 0..w {
                fresh = (fresh >> 1) | (shadow.clock() << (w - 1));
            }
            a.sample(true);
            assert_eq!(a.last_random(), fresh);
        }
    }

    #[test]
    fn random_numbers_are_uniform() {
        // Over 2^16 samples, every 8-bit value appears 256 times up to sampling noise
        // (chi-square with 255 degrees of freedom stays far below 400).
        for mode in RandomMode::ALL {
            let mut a = addie(8, mode);
            let mut hist = [0u32; 256];
            let n = 1 << 16;
            for _ in 0..n {
                a.sample(false);
                hist[a.last_random() as usize] += 1;
            }
            let e = n as f64 / 256.0;
            let chi2: f64 = hist.iter().map(|&h| (h as f64 - e).powi(2) / e).sum();
            assert!(chi2 < 400.0, "{mode:?}: chi2 {chi2}");
        }
    }

    #[test]
    fn settles_at_p_times_2_pow_n() {
        // Mean counter over a long tail against the fixed point p * 2^n (64.25 for 64/255).
        for mode in RandomMode::ALL {
            let mut a = addie(8, mode);
            let mut rng = engine::SimRng::new(11);
            let p = 64.0 / 255.0;
            for _ in 0..5000 {
                a.sample(rng.chance(p));
            }
            let mut sum = 0u64;
            let n = 400_000;
            for _ in 0..n {
                a.sample(rng.chance(p));
                sum += a.value() as u64;
            }
            let mean = sum as f64 / n as f64;
            assert!((mean - p * 256.0).abs() < 0.6, "{mode:?}: mean {mean}");
        }
    }
}
