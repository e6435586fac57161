//! A bimodal branch predictor, a preset option (`[cpu.branch_predictor]`) for seed 000's
//! Table 4.10 item 6 ("branch prediction": n/a on the R4400, which predicts nothing, so the
//! R4400 presets leave it out and `Ctx::branch` keeps the fixed taken-branch penalty).
//!
//! A table of 2-bit saturating counters (0-1 predict not taken, 2-3 taken), indexed by the
//! branch's address. pmusim's programs give their branches no instruction address, so a
//! branch's address is its call site in the program (`Ctx::branch` is `#[track_caller]`): one
//! static branch per source location, as a compiled loop has one branch instruction.
//! Two call sites can alias in the table, as two branches do in a real one.
//!
//! *The address is a function of the source location, not of the host* ([`site_address`]).
//! It was the host address of the call site's `Location` record in the pmusim executable,
//! which moves with every load of a position-independent executable (ASLR) and with every
//! build: whether two call sites shared a counter could depend on where the host loaded the
//! program, so two runs of one build could differ (task det19). Ocean on `flash-r10k` has
//! 12 call sites that predict; forcing its spin-wait branch (`Ctx::wait_on`) and its residual
//! test (`ocean/mod.rs`, `ctx.branch(x > err)`) to share a counter gives 81,868 coherence
//! misses instead of 81,616, the very count of the one failed run of `window::flash_r10k`
//! (none of the other 65 pairs gives it). A generic function's branch also had one record
//! per crate that instantiated it: radix's spin-wait branch trained two counters, one for
//! the copy in `machine` and one for the copy in `workload`, which a test build and a
//! release build need not split alike; one source location is now one address.

use crate::config::BranchPredictorCfg;
use std::panic::Location;

/// The address of the branch at `file:line` (a call site's source location): the hash of the
/// file's last two path components above bit 17 and the line at bit 3, so that
/// [`Bimodal`]'s index, `(a >> 3 ^ a >> 17) & (entries - 1)`, is the line XOR the file's
/// hash: branches of one file less than `entries` lines apart never share a counter (as
/// nearby branches of a compiled function do not), those of different files share one as
/// the hash falls. The same address in every build, on every host and at every load
/// address; it moves only when the branch's line or file does, as a recompiled program's
/// addresses do. Two branches on one line share a counter (no workload writes that).
///
/// The last two components (`ocean/mod.rs`, `cpu/ctx.rs`): the path rustc records is
/// relative to the workspace for its members but absolute for a crate built elsewhere or
/// with a remapped prefix; the file's own directory and name are the same in each. Hashed
/// with FNV-1a (64-bit), written out here so that no dependency's update moves an address.
pub fn site_address(file: &str, line: u32) -> u64 {
    let b = file.as_bytes();
    let sep = |c: u8| c == b'/' || c == b'\\';
    let mut start = b.len();
    let mut seps = 0;
    while start > 0 {
        if sep(b[start - 1]) {
            seps += 1;
            if seps == 2 {
                break;
            }
        }
        start -= 1;
    }
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &c in &b[start..] {
        h ^= if c == b'\\' { b'/' } else { c } as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h << 17) ^ ((line as u64) << 3)
}

/// Entries of [`Bimodal`]'s memo of call sites' addresses (a power of two).
const MEMO: usize = 64;

#[derive(Clone, Debug)]
pub struct Bimodal {
    counters: Vec<u8>,
    mask: u64,
    /// Cycles killed by a mispredicted branch.
    pub penalty: u64,
    /// The addresses of call sites met lately ([`Bimodal::resolve_at`]), direct-mapped by
    /// their `Location` record's host address: (that address, [`site_address`]), 0 for an
    /// empty slot. A cache only: a slot holds what `site_address` gives for the record at its
    /// key, so its hits and misses (which do depend on the host) change no prediction. It
    /// saves hashing the file name at each branch (ocean on `flash-r10k` runs 384 thousand
    /// predicted branches at 12 call sites).
    memo: Box<[(usize, u64); MEMO]>,
}

impl Bimodal {
    pub fn new(c: &BranchPredictorCfg) -> Bimodal {
        Bimodal {
            // Weakly not taken.
            counters: vec![1; c.entries as usize],
            mask: c.entries as u64 - 1,
            penalty: c.mispredict_cycles as u64,
            memo: Box::new([(0, 0); MEMO]),
        }
    }

    /// [`Bimodal::resolve`] for the branch whose call site is `loc` (its address,
    /// [`site_address`], taken from the memo when there).
    #[inline]
    pub fn resolve_at(&mut self, loc: &'static Location<'static>, taken: bool) -> bool {
        let key = loc as *const Location<'static> as usize;
        // Records are 24 bytes apart: bits from 3 up tell neighbours apart.
        let slot = &mut self.memo[(key >> 3) & (MEMO - 1)];
        let site = if slot.0 == key {
            slot.1
        } else {
            let a = site_address(loc.file(), loc.line());
            *slot = (key, a);
            a
        };
        self.resolve(site, taken)
    }

    /// The table index of the branch at `file:line` (for tests).
    pub fn index_of(&self, file: &str, line: u32) -> usize {
        self.index(site_address(file, line))
    }

    /// The 2-bit counter at table index `i` (for tests).
    pub fn counter(&self, i: usize) -> u8 {
        self.counters[i]
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
    use crate::config::Preset;
    use crate::sim::{Machine, Options};
    use std::cell::Cell;
    use std::rc::Rc;

    /// A thread's branch trains the counter its source location names, and only that one:
    /// the table index does not come from the host. Before task det19 the index was the
    /// host address of the call site's `Location` record (`Ctx::branch`), so the counter
    /// trained here was another (this test failed: the counter below stayed at 1).
    #[test]
    fn a_branch_trains_the_counter_of_its_source_location() {
        let p = Preset::builtin("flash-r10k")
            .unwrap()
            .with_procs(2)
            .unwrap();
        let mut m = Machine::new(p, Options::default()).unwrap();
        let at = Rc::new(Cell::new(0));
        let a = at.clone();
        m.spawn(0, move |ctx| {
            for _ in 0..4 {
                ctx.int(1);
                a.set(line!() + 1);
                ctx.branch(true);
            }
        });
        m.run(None).unwrap();
        let bp = m.state().cores[0].bp.as_ref().expect("flash-r10k predicts");
        let i = bp.index_of(file!(), at.get());
        assert_eq!(bp.counter(i), 3, "entry {i}");
        let moved: Vec<usize> = (0..512).filter(|&j| bp.counter(j) != 1).collect();
        assert_eq!(moved, [i]);
        assert_eq!(m.state().cores[0].cnt.branch_mispredicts, 1);
    }

    /// The address is the same wherever the path was recorded from and whichever separator
    /// it uses; these values are pinned (a change of `site_address` changes every
    /// `flash-r10k` run: say so and why when changing them).
    #[test]
    fn site_addresses_are_fixed_values_of_the_file_and_line() {
        let ocean = site_address("crates/workload/src/kernels/ocean/mod.rs", 241);
        assert_eq!(ocean, site_address("ocean/mod.rs", 241));
        assert_eq!(
            ocean,
            site_address(
                "/home/someone/pmusim/crates/workload/src/kernels/ocean/mod.rs",
                241
            )
        );
        assert_eq!(
            ocean,
            site_address(r"C:\pmusim\crates\workload\src\kernels\ocean\mod.rs", 241)
        );
        assert_ne!(ocean, site_address("fft/mod.rs", 241));
        assert_eq!(site_address("mod.rs", 7), site_address("mod.rs", 7));
        let b = Bimodal::new(&BranchPredictorCfg {
            entries: 512,
            mispredict_cycles: 4,
        });
        let idx = |f: &str, l: u32| b.index_of(f, l);
        assert_eq!(
            (idx("ocean/mod.rs", 241), idx("cpu/ctx.rs", 1503)),
            (94, 215)
        );
        // Lines of one file fewer than `entries` apart never share a counter.
        let mut seen = vec![false; 512];
        for l in 1000..1512 {
            let i = idx("kernels/fft.rs", l);
            assert!(!seen[i], "line {l}");
            seen[i] = true;
        }
    }

    /// `resolve_at` (through the memo) predicts as `resolve` at the source location's address.
    #[test]
    fn the_memo_changes_no_prediction() {
        #[track_caller]
        fn here() -> &'static Location<'static> {
            Location::caller()
        }
        // Three call sites on three lines (three addresses).
        let first = here();
        let second = here();
        let third = here();
        let sites = [first, second, third];
        let cfg = BranchPredictorCfg {
            entries: 16,
            mispredict_cycles: 4,
        };
        let (mut a, mut b) = (Bimodal::new(&cfg), Bimodal::new(&cfg));
        for k in 0..300u32 {
            let s = sites[(k % 7 % 3) as usize];
            let taken = k % 5 != 0;
            assert_eq!(
                a.resolve_at(s, taken),
                b.resolve(site_address(s.file(), s.line()), taken),
                "branch {k}"
            );
        }
        assert_eq!(a.counters, b.counters);
    }

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
