//! The machine's events and their priorities: what the event loop (`sim`) dispatches.
//!
//! Priorities order events of the same tick: the memory system's own events first, then
//! deliveries to processors, then probes waking and actions taking effect, then processors
//! resuming (so a thread resumed at `t` sees every delivery of `t`, and an interrupt raised
//! or a setting changed at `t`).

use crate::msg::SysMsg;

pub const PRIO_SYS: u8 = 0;
pub const PRIO_DELIVER: u8 = 1;
pub const PRIO_WAKE: u8 = 2;
pub const PRIO_RESUME: u8 = 3;

/// Why a thread returns to the event loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Yield {
    Quantum,
    Blocked,
}

/// Events of the machine. `S` is the memory system's event type (`memsys::SysEv` in the
/// machine): generic so that this module, and `env` which schedules these events, name no
/// memory system, and the memory systems import neither back.
#[derive(Clone, Copy, Debug)]
pub enum Ev<S> {
    /// Continue running processor p's thread.
    Resume(u16),
    /// Processor p's pending transaction leaves its external agent.
    Issue(u16),
    /// Processor p re-issues after a NACK back-off.
    Retry(u16),
    /// Processor p's bus-error timer (`cpu::agent::timer_live`): its pending transaction
    /// raises a bus error if this is its deadline. At most one is queued per processor.
    Timeout(u16),
    /// A message reaches processor p's caches.
    ToProc(u16, SysMsg),
    /// Memory-system events of the preset's protocol.
    Sys(S),
    /// Probe number k's wake-up (`Probe::wake`).
    Wake(u16),
    /// The oldest delayed action (a setting change, a page migration) takes effect.
    Apply,
    /// The I/O a software thread (core, thread) waits for in a blocking system call is done.
    IoDone(u16, u32),
    /// Processor p's spin-wait ends here if an armed counter still needs its iterations
    /// counted (`spin_check`; passive, as a wake-up).
    SpinCheck(u16),
}
