//! A software thread's architectural state, swapped in and out of its core.
//!
//! The core (`Core`) keeps the state of the thread that holds its pipeline in its own fields
//! (PhaseID, current procedure and call stack, program counter, the result of the last blocking
//! access, the in-handler flag), so the hit path reads them as it always did. When the
//! scheduler (`sched`) gives the pipeline to another software thread, `swap` saves them into
//! the outgoing thread's `ThreadRegs` and loads the incoming thread's. Caches, TLB, write-back
//! buffer and the external agent's transaction belong to the core and are not swapped: the
//! hardware contexts of a core share them.
//!
//! The MSR's problem-state (PR) and process-mark (PM) bits and the thread's process number
//! are part of that state (seed 003, "Monitoring States": "the MSR is part of the process
//! state, and the operating system saves and restores the MSR when processes pause and
//! resume"), so every observation's `Origin` says whether the thread holding the core was in
//! supervisor state and marked.
//!
//! Counts: the core's `Counters` keep running for the core; `account` adds what the core
//! counted since the outgoing thread was switched in to that thread's totals, so the counts of
//! the software threads of a core sum exactly to the core's (the ground truth per software
//! thread, per hardware context and per core).

use super::{Block, Core, Counters};

pub use super::msr::{MSR_PM, MSR_PR, MSR_USER};

/// The per-thread part of the processor state.
#[derive(Clone, Debug)]
pub struct ThreadRegs {
    pub phase: u16,
    pub procedure: u32,
    pub stack: Vec<u32>,
    pub pc: u64,
    /// `Core::code_at`.
    pub code_at: u64,
    pub result: u64,
    pub in_handler: bool,
    /// The machine state register (`MSR_PR`, `MSR_PM`; other bits are not modelled).
    pub msr: u32,
    /// The thread's process (0 without an operating-system model).
    pub process: u16,
}

impl Default for ThreadRegs {
    fn default() -> ThreadRegs {
        ThreadRegs {
            phase: 0,
            procedure: 0,
            stack: Vec::new(),
            pc: 0,
            code_at: 0,
            result: 0,
            in_handler: false,
            msr: MSR_USER,
            process: 0,
        }
    }
}

/// Saves the core's per-thread state into `out` and loads `inc`'s.
pub fn swap(c: &mut Core, out: &mut ThreadRegs, inc: &mut ThreadRegs) {
    out.phase = c.phase;
    out.procedure = c.procedure;
    out.pc = c.pc;
    out.code_at = c.code_at;
    out.result = c.result;
    out.in_handler = c.in_handler;
    out.msr = c.msr;
    out.process = c.process;
    std::mem::swap(&mut out.stack, &mut c.stack);
    c.phase = inc.phase;
    c.procedure = inc.procedure;
    c.pc = inc.pc;
    c.code_at = inc.code_at;
    c.result = inc.result;
    c.in_handler = inc.in_handler;
    c.msr = inc.msr;
    c.process = inc.process;
    std::mem::swap(&mut c.stack, &mut inc.stack);
    debug_assert!(matches!(c.block, Block::None | Block::Done));
}

/// Adds `now - base` to `total`, field by field.
pub fn account(total: &mut Counters, now: &Counters, base: &Counters) {
    for (t, (n, b)) in total
        .instr
        .iter_mut()
        .zip(now.instr.iter().zip(&base.instr))
    {
        *t += n - b;
    }
    for (t, (n, b)) in total.ps.iter_mut().zip(now.ps.iter().zip(&base.ps)) {
        *t += n - b;
    }
    for (t, (n, b)) in total.xops.iter_mut().zip(now.xops.iter().zip(&base.xops)) {
        *t += n - b;
    }
    for w in 0..2 {
        let (t, n, b) = (&mut total.by_size[w], &now.by_size[w], &base.by_size[w]);
        for k in 0..64 {
            t[k] += n[k] - b[k];
        }
    }
    let d = |n: u64, b: u64| n - b;
    total.l1i_hits += d(now.l1i_hits, base.l1i_hits);
    total.l1i_misses += d(now.l1i_misses, base.l1i_misses);
    total.l1d_hits += d(now.l1d_hits, base.l1d_hits);
    total.l1d_misses += d(now.l1d_misses, base.l1d_misses);
    total.l2_hits += d(now.l2_hits, base.l2_hits);
    total.l2_misses += d(now.l2_misses, base.l2_misses);
    total.refs += d(now.refs, base.refs);
    total.nacks += d(now.nacks, base.nacks);
    total.cancelled_upgrades += d(now.cancelled_upgrades, base.cancelled_upgrades);
    total.bus_errors += d(now.bus_errors, base.bus_errors);
    total.interrupts += d(now.interrupts, base.interrupts);
    total.uncached += d(now.uncached, base.uncached);
    total.dtlb_misses += d(now.dtlb_misses, base.dtlb_misses);
    total.itlb_misses += d(now.itlb_misses, base.itlb_misses);
    total.branch_mispredicts += d(now.branch_mispredicts, base.branch_mispredicts);
    // `total` holds them whole (its `restart_per_taken` is 0).
    total.restarts_counted += d(now.restarts(), base.restarts());
    total.miss_cycles += d(now.miss_cycles, base.miss_cycles);
    total.miss_stall_cycles += d(now.miss_stall_cycles, base.miss_stall_cycles);
}

/// Adds `b` to `a`, field by field.
pub fn add(a: &mut Counters, b: &Counters) {
    account(a, b, &Counters::default());
}
