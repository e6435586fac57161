//! The machine's events and their priorities: what the event loop (`sim`) dispatches.

use crate::memsys::SysEv;
use crate::msg::SysMsg;

pub const PRIO_SYS: u8 = 0;
pub const PRIO_DELIVER: u8 = 1;
pub const PRIO_RESUME: u8 = 2;

/// Why a thread returns to the event loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Yield {
    Quantum,
    Blocked,
}

/// Events of the machine.
#[derive(Clone, Copy, Debug)]
pub enum Ev {
    /// Continue running processor p's thread.
    Resume(u16),
    /// Processor p's pending transaction leaves its external agent.
    Issue(u16),
    /// Processor p re-issues after a NACK back-off.
    Retry(u16),
    /// A message reaches processor p's caches.
    ToProc(u16, SysMsg),
    /// Memory-system events of the preset's protocol.
    Sys(SysEv),
}
