//! The memory system of a preset: one of the three interconnect-plus-protocol modules, each
//! implementing `memory_system::MemorySystem`, held in an enum so that every call is a match
//! and a static call (no `dyn` on the per-message path). Adding a system: one variant here,
//! one in `SysEv`, one `From`, and its construction in `sim::Machine::new`.

use crate::addr::{Addr, MemoryMap, StructId};
use crate::env::Env;
use crate::mem::controller::{Controller, ControllerReport};
use crate::memory_system::MemorySystem;
use crate::msg::ProcMsg;
use crate::uncached::Windows;
use crate::{cmp, flash, ideal, numachine};
use engine::{Clocks, Tick};

/// The events of whichever memory system the preset has (the `S` of `Env<S>` and `Ev<S>`).
#[derive(Clone, Copy, Debug)]
pub enum SysEv {
    Ideal(ideal::Ev),
    Numachine(numachine::Ev),
    Flash(flash::Ev),
    Cmp(cmp::Ev),
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
impl From<cmp::Ev> for SysEv {
    #[inline(always)]
    fn from(e: cmp::Ev) -> SysEv {
        SysEv::Cmp(e)
    }
}

/// `each!(system, s => expr)`: `expr` with `s` bound to whichever system is inside.
macro_rules! each {
    ($sys:expr, $s:ident => $e:expr) => {
        match $sys {
            System::Ideal($s) => $e,
            System::Numachine($s) => $e,
            System::Flash($s) => $e,
            System::Cmp($s) => $e,
        }
    };
}

/// The memory system of the preset (interconnect plus home-side protocol).
pub enum System {
    Ideal(ideal::IdealSys),
    Numachine(Box<numachine::NumaSys>),
    Flash(Box<flash::FlashSys>),
    Cmp(Box<cmp::CmpSys>),
}

impl System {
    /// Home-side state of a line, for diagnostics.
    pub fn describe(&self, line: u64) -> String {
        each!(self, s => s.describe(line))
    }
    /// Protocol event counts of the memory system (NACKs sent, converted upgrades, ...).
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        each!(self, s => s.counters())
    }
    /// Core `p`'s misses in the shared cache level so far (`MemorySystem::shared_misses`).
    pub fn shared_misses(&self, p: usize) -> Option<u64> {
        each!(self, s => s.shared_misses(p))
    }
    /// Largest NACK back-off window (ticks).
    pub fn backoff_ticks(&self) -> Tick {
        each!(self, s => s.backoff_ticks())
    }
    /// The least time from a request's issue to a delivery it causes
    /// (`MemorySystem::min_issue_to_delivery`), at least `inbound`.
    pub fn min_issue_to_delivery(&self, inbound: Tick) -> Tick {
        each!(self, s => s.min_issue_to_delivery(inbound))
    }
    /// Age at which a transaction raises a bus error, if the system has one.
    pub fn timeout_ticks(&self) -> Option<Tick> {
        each!(self, s => s.timeout_ticks())
    }
    /// The period of the clock the time-out counts.
    pub fn timeout_clock_ticks(&self) -> Tick {
        each!(self, s => s.timeout_clock_ticks())
    }
    #[allow(clippy::wrong_self_convention)] // "a message from a processor", not a conversion
    pub(crate) fn from_proc(&mut self, env: &mut Env<SysEv>, t: Tick, p: usize, m: ProcMsg) {
        each!(self, s => s.from_proc(env, t, p, m))
    }
    #[inline(always)]
    pub(crate) fn handle(&mut self, env: &mut Env<SysEv>, t: Tick, e: SysEv) {
        match (self, e) {
            (System::Ideal(s), SysEv::Ideal(e)) => s.handle(env, t, e),
            (System::Numachine(s), SysEv::Numachine(e)) => s.handle(env, t, e),
            (System::Flash(s), SysEv::Flash(e)) => s.handle(env, t, e),
            (System::Cmp(s), SysEv::Cmp(e)) => s.handle(env, t, e),
            _ => unreachable!("event of another protocol"),
        }
    }
    /// Uncached commands the system wants issued when a structure is allocated (FlashPoint
    /// bin assignment).
    pub(crate) fn alloc_commands(&mut self, a: Addr, bytes: u64, id: StructId) -> Vec<(Addr, u64)> {
        each!(self, s => s.alloc_commands(a, bytes, id))
    }
    pub(crate) fn procedure_command(
        &mut self,
        p: usize,
        prev: u32,
        cur: u32,
    ) -> Option<(Addr, u64)> {
        each!(self, s => s.procedure_command(p, prev, cur))
    }
    pub(crate) fn switch_command(
        &mut self,
        p: usize,
        from: (u16, u32),
        to: (u16, u32),
    ) -> Option<(Addr, u64)> {
        each!(self, s => s.switch_command(p, from, to))
    }
    /// The memory controllers (empty without an enabled `[memctl]`).
    pub fn controllers(&self) -> &[Controller] {
        each!(self, s => s.controllers())
    }
    /// The memory controllers, to change their settings.
    pub fn controllers_mut(&mut self) -> &mut [Controller] {
        each!(self, s => s.controllers_mut())
    }
    /// Each controller's counts, in node order.
    pub fn controller_reports(&self) -> Vec<ControllerReport> {
        self.controllers().iter().map(Controller::report).collect()
    }
    /// The end-of-run drain of the controllers.
    pub(crate) fn finish(&mut self, t: Tick) {
        each!(self, s => s.finish(t))
    }
    /// Lines whose DRAM copy differs from the home's value after the drain.
    pub fn memory_mismatches(&self, map: &MemoryMap, line_shift: u32) -> Vec<(u64, u64, u64)> {
        each!(self, s => s.memory_mismatches(map, line_shift))
    }
    /// A write-through store reaching the memory system.
    pub(crate) fn write_through(
        &mut self,
        env: &mut Env<SysEv>,
        t: Tick,
        p: usize,
        a: Addr,
        token: u64,
        whole: bool,
    ) -> Tick {
        each!(self, s => s.write_through(env, t, p, a, token, whole))
    }
    /// Registers the system's uncached windows.
    pub(crate) fn register_windows(&self, w: &mut Windows, clocks: &Clocks) -> Result<(), String> {
        each!(self, s => s.register_windows(w, clocks))
    }
    /// Registers the settings the system lets probes change.
    pub(crate) fn register_settings(
        &self,
        set: &mut crate::settings::Settings,
        clocks: &Clocks,
    ) -> Result<(), String> {
        each!(self, s => s.register_settings(set, clocks))?;
        for (n, c) in self.controllers().iter().enumerate() {
            c.register_settings(n, set, clocks)?;
        }
        Ok(())
    }
    /// A setting change reached its time: the memory controllers' settings (`memctl.N.*`) are
    /// pushed to their controller (the controllers do not read the registry per request).
    pub(crate) fn setting_applied(&mut self, name: &str, value: u64) {
        let Some(rest) = name.strip_prefix("memctl.") else {
            return;
        };
        let Some((n, what)) = rest.split_once('.') else {
            return;
        };
        if let Some(c) = n
            .parse::<usize>()
            .ok()
            .and_then(|n| self.controllers_mut().get_mut(n))
        {
            c.apply_setting(what, value);
        }
    }
    /// The line an event works on (for the origin of its observations).
    #[inline]
    pub(crate) fn event_line(&self, e: &SysEv) -> Option<u64> {
        match e {
            SysEv::Ideal(e) => ideal::IdealSys::event_line(e),
            SysEv::Numachine(e) => numachine::NumaSys::event_line(e),
            SysEv::Flash(e) => flash::FlashSys::event_line(e),
            SysEv::Cmp(e) => cmp::CmpSys::event_line(e),
        }
    }
    /// Whether a page's home may change now (see `MemorySystem::page_movable`).
    pub(crate) fn page_movable(&self, lines: std::ops::Range<u64>) -> bool {
        each!(self, s => s.page_movable(lines))
    }
    /// An allocation made before the threads start (FlashPoint bins it at time 0).
    pub(crate) fn setup_alloc(&mut self, a: Addr, bytes: u64, id: StructId) {
        each!(self, s => s.setup_alloc(a, bytes, id))
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Preset;
    use crate::sim::{Machine, Options};

    /// The trait's back-off and time-out reach the machine in ticks of each preset's clocks:
    /// back-off `backoff_cycles` of the protocol's clock, the bus-error time-out only on
    /// NUMAchine (4096 bus cycles, seed 000 4.1).
    #[test]
    fn backoff_and_timeout_come_from_each_system() {
        for (name, backoff_cycles, timeout_cycles, clock) in [
            ("ideal", 30, None, "cpu"),
            ("numachine", 8, Some(4096), "system"),
            ("flash", 20, None, "system"),
            ("cmp", 20, None, "cpu"),
        ] {
            let m = Machine::new(Preset::builtin(name).unwrap(), Options::default()).unwrap();
            let st = m.state();
            let period = st.clocks.get(clock).unwrap().period;
            assert_eq!(st.backoff_max, backoff_cycles * period, "{name} back-off");
            assert_eq!(
                st.timeout,
                timeout_cycles.map(|c| c * period),
                "{name} time-out"
            );
            assert_eq!(st.system.timeout_ticks(), st.timeout, "{name}");
        }
    }
}
