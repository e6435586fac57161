//! A bimodal branch predictor, a preset option (`[cpu.branch_predictor]`) for seed 000's
//! Table 4.10 item 6 ("branch prediction": n/a on the R4400, which predicts nothing, so the
//! R4400 presets leave it out and `Ctx::branch` keeps the fixed taken-branch penalty).
//!
//! A table of 2-bit saturating counters (0-1 predict not taken, 2-3 taken), indexed by the
//! branch's address. pmusim's programs give their branches no instruction address, so a
//! branch's address is its call site in the program (`Ctx::branch` is `#[track_caller]`): one
//! static branch per source location, as a compiled loop has one branch instruction.
//! Two call sites can alias in the table, as two branches do in a real one.

use crate::config::BranchPredictorCfg;

#[derive(Clone, Debug)]
pub struct Bimodal {
    counters: Vec<u8>,
    mask: u64,
    /// Cycles killed by a mispredicted branch.
    pub penalty: u64,
}

impl Bimodal {
    pub fn new(c: &BranchPredictorCfg) -> Bimodal {
        Bimodal {
            // Weakly not taken.
            counters: vec![1; c.entries as usize],
            mask: c.entries as u64 - 1,
            penalty: c.mispredict_cycles as u64,
        }
    }

    /// The table index of the branch at `site` (a call-site address).
    fn index(&self, site: u64) -> usize {
        // Call-site records are a few words apart: drop the low bits, fold the rest.
        let h = (site >> 3) ^ (site >> 17);
        (h & self.mask) as usize
    }

    /// Predicts the branch at `site`, learns its outcome `taken`; true if it was mispredicted.
    pub fn resolve(&mut self, site: u64, taken: bool) -> bool {
        let i = self.index(site);
        let c = &mut self.counters[i];
        let predicted = *c >= 2;
        *c = if taken {
            (*c + 1).min(3)
        } else {
            c.saturating_sub(1)
        };
        predicted != taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_bit_counters_learn_and_tolerate_one_exception() {
        let mut b = Bimodal::new(&BranchPredictorCfg {
            entries: 1024,
            mispredict_cycles: 3,
        });
        let site = 0x1000;
        // Weakly not taken: the first taken branch is mispredicted, the second is not.
        assert!(b.resolve(site, true));
        assert!(!b.resolve(site, true));
        assert!(!b.resolve(site, true));
        // A loop exit (not taken) is mispredicted once; the loop's next taken branch is still
        // predicted taken (the counter went 3 -> 2, not below).
        assert!(b.resolve(site, false));
        assert!(!b.resolve(site, true));
        // A loop of 10 iterations run 5 times: one mispredict per exit, after the first run.
        let mut wrong = 0;
        for _ in 0..5 {
            for i in 0..10 {
                wrong += b.resolve(0x2000, i < 9) as u32;
            }
        }
        assert_eq!(wrong, 1 + 5, "first entry + every exit");
    }
}
