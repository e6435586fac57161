//! Classification of every retired instruction and every processor cycle.
//!
//! The NUMAchine monitor counts the R4400's pipeline states (seed 000, section 4.3.2, Tables 4.2
//! and 4.3, which refer to the thesis's Table 2.3 for the single-event encoding). Table 2.3 is not
//! in the seed, so pmusim defines the 15 states below and their 4-bit codes; the grouping follows
//! Table 4.3 exactly (running: loads+stores, taken+not-taken branches, other integer+other FP;
//! idle: primary I+D cache stalls, secondary cache stalls, multiprocessing+other stalls, killed by
//! exception+branches, integer+FP slips). Code 0 is "no event".
//!
//! Every cycle of a processor is exactly one of these states:
//! - a *running* cycle retires one instruction and is classified by the instruction's class;
//! - an *idle* cycle is a stall (by cause), a slip, or a killed cycle.
//!
//! What causes each idle cycle:
//! - L1 miss that hits the L2: the L2 hit time is a primary I- or D-cache stall;
//! - L2 miss: the L2 tag check (the L2 hit time) is a secondary-cache stall, and the time waiting
//!   for the external transaction is a multiprocessing (memory system) stall;
//! - uncached accesses (monitor registers, FlashPoint commands) and fences are "other" stalls;
//! - a taken branch kills `branch_taken_killed_cycles`; an exception (monitor interrupt, bus
//!   error) kills `exception_cycles`;
//! - FP instructions add `fp_slip_cycles` FP slips, loads `load_slip_cycles` integer slips;
//! - a spin loop waiting on a lock or flag retires one load and one taken branch per
//!   `spin_iteration_cycles`, the rest of each iteration being killed-by-branch cycles.
//!
//! Restarts (seed 000 Table 4.10 item 4, "pipeline flushing and restarting": the R4400 gives
//! no restart signal, so the seed rates it partial): a core with `[cpu] restart_signal` counts
//! one restart per flush that killed at least one cycle (`Core::kill`: an exception, a taken
//! branch's or a misprediction's killed cycles, a spin iteration's branch, the unfinished
//! iteration at the end of a spin) in `Counters::restarts`, and puts it on the
//! pipeline-status stream beside the states (`Observation::Pipeline::restarts`) for the
//! card's running-mode PS[3] (a reserved encoding in Table 4.3; pmusim's choice).

/// Pipeline states with their 4-bit single-event codes (pmusim's Table 2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Ps {
    Load = 1,
    Store = 2,
    BranchTaken = 3,
    BranchNotTaken = 4,
    OtherInteger = 5,
    OtherFp = 6,
    IntegerSlip = 7,
    FpSlip = 8,
    KilledException = 9,
    KilledBranch = 10,
    MultiprocessingStall = 11,
    OtherStall = 12,
    SecondaryCacheStall = 13,
    PrimaryICacheStall = 14,
    PrimaryDCacheStall = 15,
}

impl Ps {
    pub const ALL: [Ps; 15] = [
        Ps::Load,
        Ps::Store,
        Ps::BranchTaken,
        Ps::BranchNotTaken,
        Ps::OtherInteger,
        Ps::OtherFp,
        Ps::IntegerSlip,
        Ps::FpSlip,
        Ps::KilledException,
        Ps::KilledBranch,
        Ps::MultiprocessingStall,
        Ps::OtherStall,
        Ps::SecondaryCacheStall,
        Ps::PrimaryICacheStall,
        Ps::PrimaryDCacheStall,
    ];

    pub fn code(self) -> u8 {
        self as u8
    }
    pub fn from_code(c: u8) -> Option<Ps> {
        Ps::ALL.get((c as usize).wrapping_sub(1)).copied()
    }
    /// True for states in which an instruction retires.
    pub fn running(self) -> bool {
        (self as u8) <= 6
    }
    pub fn name(self) -> &'static str {
        match self {
            Ps::Load => "load",
            Ps::Store => "store",
            Ps::BranchTaken => "branch-taken",
            Ps::BranchNotTaken => "branch-not-taken",
            Ps::OtherInteger => "other-integer",
            Ps::OtherFp => "other-fp",
            Ps::IntegerSlip => "integer-slip",
            Ps::FpSlip => "fp-slip",
            Ps::KilledException => "killed-exception",
            Ps::KilledBranch => "killed-branch",
            Ps::MultiprocessingStall => "multiprocessing-stall",
            Ps::OtherStall => "other-stall",
            Ps::SecondaryCacheStall => "secondary-cache-stall",
            Ps::PrimaryICacheStall => "primary-icache-stall",
            Ps::PrimaryDCacheStall => "primary-dcache-stall",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Preset;
    use crate::cpu::{Class, Core};

    fn core(restart_signal: bool) -> Core {
        let mut p = Preset::builtin("flash").unwrap();
        p.cpu.restart_signal = restart_signal;
        p.cpu.spin_iteration_cycles = 4;
        Core::new(0, 0, &p, 1, 10)
    }

    #[test]
    fn a_restart_ends_each_flush_that_killed_cycles() {
        let mut c = core(true);
        c.kill(Ps::KilledBranch, 4, 1);
        c.kill(Ps::KilledException, 10, 1);
        c.kill(Ps::KilledBranch, 0, 1); // a predicted branch kills nothing: no flush
        c.kill(Ps::KilledBranch, 6, 3); // three taken branches retired in bulk
        assert_eq!(c.cnt.restarts(), 5);
        // A spin of 10 cycles at 4 per iteration: 2 iterations (load, branch, 2 killed
        // each) and 2 cycles of the unfinished one: 3 restarts, 6 killed cycles.
        c.charge_spin(0, 10);
        assert_eq!(c.cnt.restarts(), 8);
        assert_eq!(c.cnt.ps[Ps::KilledBranch as usize], 4 + 6 + 6);
        // Exactly whole iterations: no unfinished one.
        c.charge_spin(c.now, c.now + 8);
        assert_eq!(c.cnt.restarts(), 10);
        // The R4400 has no restart signal: the same flushes, no restarts.
        let mut r = core(false);
        r.kill(Ps::KilledBranch, 4, 1);
        r.charge_spin(0, 10);
        assert_eq!(
            (r.cnt.restarts(), r.cnt.ps[Ps::KilledBranch as usize]),
            (0, 10)
        );
    }

    /// A taken branch outside a spin and a predictor (`Ctx::branch`, `compute`, `op`) charges
    /// its killed cycles without counting: its restart comes from the taken-branch count.
    #[test]
    fn taken_branches_restart_when_they_kill_cycles() {
        let taken = |signal: bool, killed: u32| {
            let mut p = Preset::builtin("flash").unwrap();
            p.cpu.restart_signal = signal;
            p.cpu.branch_taken_killed_cycles = killed;
            p.cpu.spin_iteration_cycles = 4;
            let mut c = Core::new(0, 0, &p, 1, 10);
            c.retire_n(Class::BranchTaken, 7);
            c.charge(Ps::KilledBranch, 7 * killed as u64);
            c.charge_spin(0, 100); // 25 whole iterations: 25 restarts of their own
            c.kill(Ps::KilledException, 10, 1);
            let base = c.cnt.clone();
            c.retire(Class::BranchTaken);
            let mut thread = crate::cpu::Counters::default();
            crate::cpu::context::account(&mut thread, &c.cnt, &base);
            (c.cnt.restarts(), thread.restarts())
        };
        assert_eq!(taken(true, 1), (7 + 25 + 1 + 1, 1));
        assert_eq!(taken(true, 0), (25 + 1, 0)); // killing nothing, they flush nothing
        assert_eq!(taken(false, 1), (0, 0));
    }

    #[test]
    fn codes_round_trip_and_group() {
        for p in Ps::ALL {
            assert_eq!(Ps::from_code(p.code()), Some(p));
        }
        assert_eq!(Ps::from_code(0), None);
        assert_eq!(Ps::ALL.iter().filter(|p| p.running()).count(), 6);
    }
}
