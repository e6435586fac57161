//! The memory system of a preset: one of the three interconnect-plus-protocol modules, behind
//! one interface (messages from processors in, events of its own, deliveries out through `Env`).

use crate::addr::{Addr, StructId};
use crate::env::Env;
use crate::msg::ProcMsg;
use crate::{flash, ideal, numachine};
use engine::Tick;

/// The events of whichever memory system the preset has (the `S` of `Env<S>` and `Ev<S>`).
#[derive(Clone, Copy, Debug)]
pub enum SysEv {
    Ideal(ideal::Ev),
    Numachine(numachine::Ev),
    Flash(flash::Ev),
}

impl From<ideal::Ev> for SysEv {
    #[inline(always)]
    fn from(e: ideal::Ev) -> SysEv {
        SysEv::Ideal(e)
    }
}
impl From<numachine::Ev> for SysEv {
    #[inline(always)]
    fn from(e: numachine::Ev) -> SysEv {
        SysEv::Numachine(e)
    }
}
impl From<flash::Ev> for SysEv {
    #[inline(always)]
    fn from(e: flash::Ev) -> SysEv {
        SysEv::Flash(e)
    }
}

/// The memory system of the preset (interconnect plus home-side protocol).
pub enum System {
    Ideal(ideal::IdealSys),
    Numachine(Box<numachine::NumaSys>),
    Flash(Box<flash::FlashSys>),
}

impl System {
    /// Home-side state of a line, for diagnostics.
    pub fn describe(&self, line: u64) -> String {
        match self {
            System::Ideal(s) => s.describe(line),
            System::Flash(s) => s.describe(line),
            System::Numachine(s) => s.describe(line),
        }
    }
    /// Protocol event counts of the memory system (NACKs sent, converted upgrades, ...).
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        match self {
            System::Flash(s) => s.counters(),
            _ => Vec::new(),
        }
    }
    #[allow(clippy::wrong_self_convention)] // "a message from a processor", not a conversion
    pub(crate) fn from_proc(&mut self, env: &mut Env<SysEv>, t: Tick, p: usize, m: ProcMsg) {
        match self {
            System::Ideal(s) => s.from_proc(env, t, p, m),
            System::Numachine(s) => s.from_proc(env, t, p, m),
            System::Flash(s) => s.from_proc(env, t, p, m),
        }
    }
    pub(crate) fn handle(&mut self, env: &mut Env<SysEv>, t: Tick, e: SysEv) {
        match (self, e) {
            (System::Ideal(s), SysEv::Ideal(e)) => s.handle(env, t, e),
            (System::Numachine(s), SysEv::Numachine(e)) => s.handle(env, t, e),
            (System::Flash(s), SysEv::Flash(e)) => s.handle(env, t, e),
            _ => unreachable!("event of another protocol"),
        }
    }
    /// Uncached commands the system wants issued when a structure is allocated (FlashPoint
    /// bin assignment).
    pub(crate) fn alloc_commands(&mut self, a: Addr, bytes: u64, id: StructId) -> Vec<(Addr, u64)> {
        match self {
            System::Flash(s) => s.alloc_commands(a, bytes, id),
            _ => Vec::new(),
        }
    }
    pub(crate) fn procedure_command(
        &mut self,
        p: usize,
        prev: u32,
        cur: u32,
    ) -> Option<(Addr, u64)> {
        match self {
            System::Flash(s) => s.procedure_command(p, prev, cur),
            _ => None,
        }
    }
    /// An allocation made before the threads start (FlashPoint bins it at time 0).
    pub(crate) fn setup_alloc(&mut self, a: Addr, bytes: u64, id: StructId) {
        if let System::Flash(s) = self {
            s.setup_alloc(a, bytes, id);
        }
    }
}
