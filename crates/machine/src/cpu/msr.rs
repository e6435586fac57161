//! The machine state register bits pmusim models (POWER's MSR[PR] and MSR[PM]): what the
//! operating system saves and restores with a thread's state and what monitors filter by.
//! A module of its own so that `cpu/mod.rs` (the core) and `cpu/context.rs` (the thread's
//! saved state) both use it without importing each other.

/// MSR[PR], the problem-state bit (bit 17 of the 32-bit POWER MSR, counted from the most
/// significant bit as POWER numbers them; Linux `reg.h` `MSR_PR_LG = 14`): set in user
/// (problem) state, clear in supervisor state.
pub const MSR_PR: u32 = 1 << 14;
/// MSR[PM], the process-mark bit (bit 29; seed 003, "Monitoring States"; Linux `reg.h`
/// `MSR_PMM_LG = 2`): the operating system saves and restores it with the process state, so
/// a monitor can count for marked processes only.
pub const MSR_PM: u32 = 1 << 2;
/// A new software thread's MSR: user state, unmarked.
pub const MSR_USER: u32 = MSR_PR;
