//! The interface every memory system implements (`ideal`, `numachine`, `flash`): what the
//! processors' external agents and the event loop may ask of the interconnect-plus-protocol
//! behind them, and what it promises in return.
//!
//! Dispatch stays static: the machine holds the preset's system in the `memsys::System` enum
//! and each method is generic over the machine's event type `S` (one instantiation), so no
//! `dyn` call sits on the per-message path. The trait is the boundary a new system is written
//! against; adding one is a folder implementing it plus one variant in `memsys`.
//!
//! # Invariants (what the processor side and the event loop rely on)
//! 1. **Inbound delay.** Every change to a processor's caches is made through
//!    [`Env::deliver`], which schedules it `inbound_cycles` after the event that caused it.
//!    A system never touches a core directly. This is what lets a thread run ahead of the
//!    event queue by up to that delay without missing anything (see `sim`'s module docs).
//! 2. **Every request answered.** Each `Read`, `ReadEx` and `Upgrade` gets exactly one of
//!    `Data`, `Grant` (Upgrade only), `Nack` or `Cancel` (Upgrade only); each `Writeback` one
//!    `WbAck`; each `Uncached` one `UncachedReply`; each `Invalidate { ack: true }` and
//!    `Intervention` sent is answered by the processor (`InvalAck`, `InterventionReply`) and
//!    the system waits for that answer before it lets the line move on. A system that drops a
//!    message deadlocks the run, which the event loop reports.
//! 3. **Causality.** An event the system schedules for itself is at or after the time of the
//!    event that scheduled it (the queue panics otherwise); deliveries for one processor
//!    leave the system in the order the processor must see them (a later invalidation never
//!    overtakes the data of a read served before it).
//! 4. **Observation is free of side effects.** What is handed to `Env::observe*` never
//!    changes timing: the same run with and without probes gives the same events.
//! 5. **Determinism.** Randomness comes only from `Env::rng`; iteration orders are fixed.

use crate::addr::{Addr, MemoryMap, StructId};
use crate::env::Env;
use crate::mem::controller::Controller;
use crate::msg::ProcMsg;
use crate::settings::Settings;
use crate::uncached::Windows;
use engine::{Clocks, Tick};

/// A memory system: the interconnect from the processors' external agents to the homes, and
/// the coherence protocol at the homes (and any intermediate controllers).
pub trait MemorySystem {
    /// The system's own events (timers, messages in flight on its interconnect).
    type Ev: Copy + std::fmt::Debug;

    /// A message from processor `p`'s external agent, leaving it at `t`.
    #[allow(clippy::wrong_self_convention)] // "a message from a processor", not a conversion
    fn from_proc<S: Copy + From<Self::Ev>>(
        &mut self,
        env: &mut Env<'_, S>,
        t: Tick,
        p: usize,
        m: ProcMsg,
    );

    /// One of the system's own events, due at `t`.
    fn handle<S: Copy + From<Self::Ev>>(&mut self, env: &mut Env<'_, S>, t: Tick, e: Self::Ev);

    /// The home-side state of `line` in words, for deadlock and protocol-violation reports.
    fn describe(&self, line: u64) -> String;

    /// Largest NACK back-off window (ticks); the agent doubles it per NACK of one request.
    fn backoff_ticks(&self) -> Tick;

    /// `D`: the least time from a request's issue to the earliest delivery to any processor
    /// that the request can cause, given that a delivery takes `inbound` (`cpu.inbound_cycles`
    /// in ticks) to take effect after the handler event that sends it. "Cause" is meant by
    /// scheduling: every delivery made by the handling of the request (`from_proc` with a
    /// `Read`, `ReadEx` or `Upgrade` at the issue time `t`) or of any event scheduled, directly
    /// or through other events, from there, whatever request or line that later event works
    /// on (a server that picks the next queued request, an eviction it makes), is at
    /// `t + D` or later, in every state of the system and with every configuration value.
    /// The run-ahead bound takes a queued thread resumption this much later than `inbound`
    /// alone would (`sim`'s module documentation, "The memory system's lookahead"). At least
    /// `inbound`; the default `inbound` (no extension) is right for every system, so a system
    /// that does not prove more keeps the shorter window. Uncached requests are not covered
    /// (the window is off where a thread can make one).
    fn min_issue_to_delivery(&self, inbound: Tick) -> Tick {
        inbound
    }

    /// A transaction waiting this long raises a bus error (NUMAchine); `None`: no time-out.
    fn timeout_ticks(&self) -> Option<Tick> {
        None
    }

    /// The period of the clock the time-out counts (its deadline is a whole number of that
    /// clock's edges after the request).
    fn timeout_clock_ticks(&self) -> Tick {
        1
    }

    /// Protocol event counts (NACKs sent, converted upgrades, ...) for the tester's report.
    fn counters(&self) -> Vec<(&'static str, u64)> {
        Vec::new()
    }

    /// Misses in the shared cache level (`[[caches.shared]]`) of the requests of core `p` so
    /// far (reads, read-exclusives and upgrades the level's array did not hold; write-backs
    /// are not counted), or `None` for a system without a shared level. Counted when the
    /// request is decided at its slice, so around a reference that waits for its miss the
    /// difference is that reference's (`--cachegrind-out`'s LL misses on a machine without a
    /// private L2: `Ctx::last_level_misses`).
    fn shared_misses(&self, _p: usize) -> Option<u64> {
        None
    }

    /// Uncached commands (address, value) the processor issues when it allocates a structure
    /// during the run (FlashPoint's bin assignment, seed 004 3.2.3); none by default. `id` is
    /// the data structure (`MemoryMap::data_structure`: the first region of its name).
    fn alloc_commands(&mut self, _a: Addr, _bytes: u64, _id: StructId) -> Vec<(Addr, u64)> {
        Vec::new()
    }

    /// An uncached command processor `p` issues when its procedure changes from `prev` to
    /// `cur`, with the processor cycles of the fence before it (FlashPoint's FP-Proc, seed 004
    /// 3.2.4); none by default.
    fn procedure_command(&mut self, _p: usize, _prev: u32, _cur: u32) -> Option<(Addr, u64)> {
        None
    }

    /// An uncached command the operating system's switch path issues on processor `p` when
    /// the processor goes from a thread of (process, procedure) `from` to one of `to`, with
    /// the processor cycles of the fence before it: FlashPoint's procedure delta, moving the
    /// PP's current-procedure register to the incoming thread's record (issue 15). None by
    /// default.
    fn switch_command(
        &mut self,
        _p: usize,
        _from: (u16, u32),
        _to: (u16, u32),
    ) -> Option<(Addr, u64)> {
        None
    }

    /// Registers the uncached address windows the system owns (FlashPoint's MAGIC command
    /// windows; a memory controller's settings). Accesses to them arrive as
    /// `ProcMsg::Uncached` like any uncached access outside the processor card's windows; the
    /// registration makes them known to the machine (overlaps are refused) with their cost.
    fn register_windows(&self, _w: &mut Windows, _clocks: &Clocks) -> Result<(), String> {
        Ok(())
    }

    /// An allocation made before the threads start (FlashPoint bins it at time 0 without
    /// cost); nothing by default. `id` as in `alloc_commands`.
    fn setup_alloc(&mut self, _a: Addr, _bytes: u64, _id: StructId) {}

    /// Registers the settings the system lets probes change (`probe::Action::Set`; a memory
    /// controller's watermark and read-ahead enable, issue 16), keeping each `SettingId` to
    /// read the value where it is used (`Env::settings`). None by default.
    fn register_settings(&self, _s: &mut Settings, _clocks: &Clocks) -> Result<(), String> {
        Ok(())
    }

    /// The line an event of the system works on, if any: its work is attributed to the
    /// latest request for that line (`origin`). Asked only while some observer wants origins.
    fn event_line(_e: &Self::Ev) -> Option<u64> {
        None
    }

    /// Whether the home of the page made of `lines` may change now
    /// (`probe::Action::MigratePage`): no cache holds any of its lines and no request for
    /// one is in progress, so no state of the protocol names the old home. Refused by default.
    fn page_movable(&self, _lines: std::ops::Range<u64>) -> bool {
        false
    }

    /// A write-through store of processor `p` at `t` (`caches.l1d_write_through`): the word at
    /// `a`, whose line's value is `token` (`whole`: a value store, the whole 8-byte value is
    /// written); returns when memory accepted it. Only systems that allow write-through
    /// caches implement it (`ideal`, one processor).
    fn write_through<S: Copy + From<Self::Ev>>(
        &mut self,
        _env: &mut Env<'_, S>,
        t: Tick,
        _p: usize,
        _a: Addr,
        _token: u64,
        _whole: bool,
    ) -> Tick {
        t
    }

    /// The memory controllers (issue 16), one per home; empty without an enabled `[memctl]`.
    fn controllers(&self) -> &[Controller] {
        &[]
    }

    /// The memory controllers, to change their settings.
    fn controllers_mut(&mut self) -> &mut [Controller] {
        &mut []
    }

    /// The run ended at `t`: each memory controller drains its write buffer, so no run ends
    /// with writes left in it.
    fn finish(&mut self, t: Tick) {
        for c in self.controllers_mut() {
            c.finish(t);
        }
    }

    /// After `finish`: lines whose DRAM copy differs from the value the home holds as memory's
    /// (line, DRAM value, home value); a write the buffer lost shows here. Lines a cache owns
    /// are skipped (memory is allowed to be stale for them). Empty without controllers.
    fn memory_mismatches(&self, _map: &MemoryMap, _line_shift: u32) -> Vec<(u64, u64, u64)> {
        Vec::new()
    }
}
