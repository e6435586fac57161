//! Sampling the instruction mix with the Instruction Match Register (seed 003: "by repetitively
//! cycling through all desired instruction codes, one can obtain a sampling of instruction
//! execution frequencies"; issue 15 item 5).
//!
//! A sampler reprograms the IMR every `period` processor cycles to the next opcode of a list
//! (round robin) and reads the match count at the end of each window; the instruction mix is
//! reconstructed by scaling each opcode's matches by the share of time the IMR held it. The
//! schedule is a function of time alone (window w holds opcode `order[w mod len]`), as a
//! timer-driven daemon's would be; its reprogramming costs are not charged (the study measures
//! the estimate, not the daemon).

use engine::Tick;

/// The round-robin IMR schedule and what it saw.
#[derive(Clone, Debug)]
pub struct Sampler {
    /// Window length in ticks.
    pub period: Tick,
    /// Ticks per processor cycle.
    pub cycle: Tick,
    /// Opcodes in the order the IMR takes them.
    pub order: Vec<u8>,
    /// Matches counted per opcode (index: opcode).
    pub matches: Vec<u64>,
}

impl Sampler {
    /// A sampler over `order` changing every `period_cycles` processor cycles of `cycle` ticks.
    pub fn new(order: Vec<u8>, period_cycles: u64, cycle: Tick) -> Sampler {
        assert!(!order.is_empty() && period_cycles > 0);
        let n = *order.iter().max().unwrap() as usize + 1;
        Sampler {
            period: period_cycles * cycle,
            cycle,
            order,
            matches: vec![0; n],
        }
    }

    /// The opcode the IMR holds at tick `t`.
    #[inline]
    pub fn opcode_at(&self, t: Tick) -> u8 {
        self.order[((t / self.period) % self.order.len() as u64) as usize]
    }

    /// `n` instructions of opcode `op` completing one per processor cycle from tick `t`: counts
    /// those that retire while the IMR holds `op`. Returns the matches.
    pub fn retire(&mut self, op: u8, t: Tick, n: u64) -> u64 {
        let mut got = 0;
        let (mut t, mut left) = (t, n);
        while left > 0 {
            let end = (t / self.period + 1) * self.period;
            let here = (end - t).div_ceil(self.cycle).min(left);
            if self.opcode_at(t) == op {
                got += here;
            }
            left -= here;
            t += here * self.cycle;
        }
        if let Some(m) = self.matches.get_mut(op as usize) {
            *m += got;
        }
        got
    }

    /// `n` instructions of opcode `op` retired at unknown times spread uniformly over the
    /// span of ticks (`from`, `t`] (an `Observation::Retire`: the machine reports what a core
    /// retired between two returns to the event loop, not when each instruction completed).
    /// The span's instructions are shared among the windows it overlaps in proportion to the
    /// overlap (integer shares by cumulative rounding, so they sum to `n`); counts those in
    /// windows where the IMR holds `op`. Returns the matches.
    pub fn retire_span(&mut self, op: u8, from: Tick, t: Tick, n: u64) -> u64 {
        if n == 0 {
            return 0;
        }
        if t <= from {
            return self.retire_at(op, t, n);
        }
        let len = (t - from) as u128;
        // Instructions of the span retired by tick x (from <= x <= t).
        let by = |x: Tick| ((n as u128 * (x - from) as u128) / len) as u64;
        let mut got = 0;
        let mut a = from;
        while a < t {
            let end = ((a / self.period + 1) * self.period).min(t);
            if self.opcode_at(a) == op {
                got += by(end) - by(a);
            }
            a = end;
        }
        if let Some(m) = self.matches.get_mut(op as usize) {
            *m += got;
        }
        got
    }

    /// `n` instructions of `op` retiring at tick `t` together.
    fn retire_at(&mut self, op: u8, t: Tick, n: u64) -> u64 {
        let got = if self.opcode_at(t) == op { n } else { 0 };
        if let Some(m) = self.matches.get_mut(op as usize) {
            *m += got;
        }
        got
    }

    /// Ticks of `[0, end)` during which the IMR held each opcode (index: opcode).
    pub fn exposure(&self, end: Tick) -> Vec<Tick> {
        let mut e = vec![0; self.matches.len()];
        let len = self.order.len() as u64;
        let full = end / self.period;
        for (k, &op) in self.order.iter().enumerate() {
            // Windows w < full with w mod len == k.
            let n = full / len + u64::from(full % len > k as u64);
            e[op as usize] += n * self.period;
        }
        e[self.opcode_at(end) as usize] += end % self.period;
        e
    }

    /// The reconstructed count of each opcode over `[0, end)`: matches scaled by the whole time
    /// over the time the IMR held it (`None` for an opcode never held).
    pub fn estimates(&self, end: Tick) -> Vec<Option<f64>> {
        self.exposure(end)
            .iter()
            .zip(&self.matches)
            .map(|(&x, &m)| (x > 0).then(|| m as f64 * end as f64 / x as f64))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of a constant mix: each window sees its opcode's instructions only; a batch that
    /// straddles a boundary is split cycle by cycle; the estimates recover the mix exactly.
    #[test]
    fn windows_split_batches_and_recover_a_steady_mix() {
        // 3 ticks per cycle, windows of 10 cycles, opcodes 0, 1, 2.
        let mut s = Sampler::new(vec![0, 1, 2], 10, 3);
        assert_eq!(s.opcode_at(0), 0);
        assert_eq!(s.opcode_at(29), 0);
        assert_eq!(s.opcode_at(30), 1);
        assert_eq!(s.opcode_at(90), 0);
        // 8 instructions of opcode 0 from cycle 6: cycles 6-9 in window 0 (4), 10-13 not.
        assert_eq!(s.retire(0, 18, 8), 4);
        // Opcode 1 from cycle 8 for 15 cycles: cycles 10-19 (window 1) match.
        assert_eq!(s.retire(1, 24, 15), 10);
        // A steady mix, one instruction a cycle cycling 0,0,1,2 ... over 600 cycles.
        let mut s = Sampler::new(vec![0, 1, 2], 10, 3);
        let mix = [0u8, 0, 1, 2];
        for c in 0..600u64 {
            s.retire(mix[(c % 4) as usize], c * 3, 1);
        }
        let est = s.estimates(600 * 3);
        let exp = s.exposure(600 * 3);
        assert_eq!(exp.iter().sum::<u64>(), 1800);
        assert_eq!(est[0].unwrap().round() as u64, 300);
        assert_eq!(est[1].unwrap().round() as u64, 150);
        assert_eq!(est[2].unwrap().round() as u64, 150);
        // A partial last window counts its own part.
        assert_eq!(s.exposure(35 * 3), vec![45, 30, 30]);
    }

    /// A span's instructions are shared among the windows it overlaps by the overlap, and
    /// the shares sum to the span's count.
    #[test]
    fn spans_are_shared_by_overlap() {
        // 1 tick per cycle, windows of 100 ticks, opcodes 0 and 1.
        let mut s = Sampler::new(vec![0, 1], 100, 1);
        // (50, 250]: window 0 holds (50, 100) = 50 ticks, window 1 100, window 2 50.
        // 40 instructions: 10 in window 0, 20 in window 1, 10 in window 2.
        assert_eq!(s.retire_span(0, 50, 250, 40), 20);
        assert_eq!(s.retire_span(1, 50, 250, 40), 20);
        // Shares by cumulative rounding: 7 over (0, 150]: window 0 gets floor(7 * 100/150) = 4.
        assert_eq!(s.retire_span(0, 0, 150, 7), 4);
        assert_eq!(s.retire_span(1, 0, 150, 7), 3);
        // A span inside one window; an empty span at its end tick.
        assert_eq!(s.retire_span(1, 110, 120, 5), 5);
        assert_eq!(s.retire_span(0, 120, 120, 5), 0);
        assert_eq!(s.matches, vec![24, 28]);
    }
}
