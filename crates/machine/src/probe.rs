//! Probe points: the typed observations the machine emits, and the `Probe` trait monitors
//! implement.
//!
//! The machine never knows which monitors exist: it hands every observation to the ground-truth
//! collector and then to each attached probe. L1 hits are not observed one by one (they are
//! counted in the processor, see `cpu::Counters`); everything from an L1 miss outward is.
//! Observations are small `Copy` values passed by reference; a machine with no probes attached
//! pays one branch per probe point.

use crate::addr::Addr;
pub use crate::bgq::events::{CoreEvent, L1pEvent, L2Event};
use engine::Tick;

/// Commands of external transactions issued by a processor's external agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cmd {
    /// Cache-line read (shared).
    Read,
    /// Cache-line read-exclusive (MESI without E: straight to dirty).
    ReadEx,
    /// Ownership request for a line held shared (an "upgrade").
    Upgrade,
    /// Write-back of a dirty line.
    Writeback,
    /// Uncached read (monitor registers, FlashPoint procedure commands).
    UncachedRead,
    /// Uncached write (monitor registers, FlashPoint bin commands).
    UncachedWrite,
}

/// Who a request belongs to: the hardware thread (core and its context), the software thread
/// and the PhaseID register of that thread when it made the request. Carried by the
/// observations of every level (processor, bus, memory, network) so that queue and latency
/// statistics can be split by phase and by thread (seed 000, Table 4.10 items 9 and 21–23).
///
/// At the processor it is exact: the thread holding the core (for its own references) or the
/// thread whose transaction the external agent carries. Inside a memory system, work is
/// attributed to the latest processor request for its line (`origin::Lines`): a home serves
/// one request per line at a time, so while a request is served it is that one. Write-backs
/// belong to the thread that evicted the line. `Origin::default()` (core 0, thread 0, phase 0)
/// is reported at those levels unless some observer asked for origins of memory-system work:
/// a probe that wants them says so (`Probe::wants_origins`), as does the ground truth's split
/// by phase (the bookkeeping costs a table update per request and a lookup per event, about
/// 4% of a monitored run, so it is not paid by monitors that do not use it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Origin {
    /// The software thread (`Ctx::tid`).
    pub thread: u32,
    /// The core (processor) of the hardware thread.
    pub core: u16,
    /// The full PhaseID register (16 bits; the NUMAchine card keeps its low 4).
    pub phase: u16,
    /// The hardware context on the core (`0..threads_per_core`).
    pub context: u8,
    /// The thread's process (0 when there is no operating-system model).
    pub process: u16,
    /// The thread was in supervisor state (MSR[PR] = 0) rather than user (problem) state.
    pub supervisor: bool,
    /// The thread's process is marked (MSR[PM], bit 29; seed 003 "Monitoring States").
    pub marked: bool,
}

/// Observation kinds, one bit each: what a probe asks for with [`Probe::interest`].
pub mod kind {
    pub const L2_ACCESS: u32 = 1 << 0;
    pub const TX_ISSUE: u32 = 1 << 1;
    pub const TX_NACK: u32 = 1 << 2;
    pub const TX_DONE: u32 = 1 << 3;
    pub const INBOUND: u32 = 1 << 4;
    pub const LINE_STATE: u32 = 1 << 5;
    pub const STORE_PERFORMED: u32 = 1 << 6;
    pub const LOAD_PERFORMED: u32 = 1 << 7;
    pub const HANDLER: u32 = 1 << 8;
    pub const DIRECTORY: u32 = 1 << 9;
    pub const QUEUE: u32 = 1 << 10;
    pub const PIPELINE: u32 = 1 << 11;
    pub const PHASE: u32 = 1 << 12;
    pub const PROCEDURE: u32 = 1 << 13;
    pub const BUS_REQUEST: u32 = 1 << 14;
    pub const TLB_MISS: u32 = 1 << 15;
    /// A request at a memory controller's interface buffer (issue 16).
    pub const MEM_REQUEST: u32 = 1 << 16;
    /// Instructions retired, by fine class (`Observation::Retire`).
    pub const RETIRE: u32 = 1 << 17;
    /// A context switch: the software thread holding a core changed (`Observation::Switch`).
    pub const SWITCH: u32 = 1 << 18;
    /// An event at a slice of the shared level (`Observation::L2Slice`; issue 14's UPC_L2).
    /// Bits 19 to 21 (CONTRACTS.md §1: 17 is `RETIRE`, 18 the operating system's `SWITCH`).
    pub const L2_SLICE: u32 = 1 << 19;
    /// An event of a core's L1 prefetcher (`Observation::L1p`).
    pub const L1P: u32 = 1 << 20;
    /// A core performance event (`Observation::CoreEvent`).
    pub const CORE_EVENT: u32 = 1 << 21;
    /// The thread holding a processor is about to change its MSR state (PR or PM):
    /// `Observation::Mode` (CONTRACTS.md §1: bit 22 is the POWER2 branch's).
    pub const MODE: u32 = 1 << 22;
    /// The packets through a processor's external agent.
    pub const PACKETS: u32 = TX_ISSUE | TX_NACK | TX_DONE | INBOUND;
    pub const ALL: u32 = !0;
}

/// What the attached probes want, asked when a probe is attached and after every `mmio` call
/// (the only way a program reprograms a monitor). The machine hands a probe only the kinds it
/// asked for, builds `LineState` observations only if someone wants them, and reports the
/// pipeline status only before the kinds of observation some probe needs it before.
#[derive(Clone, Debug, Default)]
pub struct Interests {
    /// Per attached probe: its `interest()`, with `kind::PIPELINE` iff `wants_pipeline()`.
    pub each: Vec<u32>,
    /// Union of `each`.
    pub any: u32,
    /// Union of `pipeline_before()` of the probes that want the pipeline status.
    pub pipeline_before: u32,
    /// Kinds emitted whether or not a probe asks (`LINE_STATE` for the protocol tester).
    pub always: u32,
    /// Some probe wants the origins of memory-system work (`Probe::wants_origins`).
    pub origins: bool,
    /// Per attached probe, what [`Interests::ask`] last had from it.
    pub asked: Vec<Asked>,
}

/// One probe's answers: its interest (with `kind::PIPELINE` iff it wants the pipeline
/// status), `wants_origins`, and `pipeline_before` (0 unless it wants the pipeline status).
pub type Asked = (u32, bool, u32);

impl Interests {
    pub fn refresh(&mut self, probes: &[Box<dyn Probe>]) {
        self.each.clear();
        self.asked.clear();
        self.any = 0;
        self.pipeline_before = 0;
        self.origins = false;
        for p in probes {
            let a = Self::ask(&**p);
            let (k, origins, before) = a;
            self.origins |= origins;
            self.pipeline_before |= before;
            self.each.push(k);
            self.asked.push(a);
            self.any |= k;
        }
    }

    fn ask(p: &dyn Probe) -> Asked {
        let mut k = p.interest() & !kind::PIPELINE;
        let mut before = 0;
        if p.wants_pipeline() {
            k |= kind::PIPELINE;
            before = p.pipeline_before();
        }
        (k, p.wants_origins(), before)
    }

    /// Probe `k` (`p`) answers as at the last [`Interests::refresh`]: nothing to refresh
    /// after its wake-up (most wake-ups reprogram nothing; a refresh asks every probe and
    /// rebuilds the machine's flags: about 450 instructions per wake-up of the Blue Gene/Q
    /// UPC, BENCHMARKS.md).
    pub fn unchanged(&self, k: usize, p: &dyn Probe) -> bool {
        self.asked.get(k) == Some(&Self::ask(p))
    }
    /// Some probe wants the pipeline-status stream.
    pub fn pipeline(&self) -> bool {
        self.any & kind::PIPELINE != 0
    }
    /// `LineState` observations are needed.
    pub fn line_state(&self) -> bool {
        (self.any | self.always) & kind::LINE_STATE != 0
    }
}

impl Observation {
    /// This observation's bit in [`kind`].
    #[inline]
    pub fn kind(&self) -> u32 {
        match self {
            Observation::L2Access { .. } => kind::L2_ACCESS,
            Observation::TxIssue { .. } => kind::TX_ISSUE,
            Observation::TxNack { .. } => kind::TX_NACK,
            Observation::TxDone { .. } => kind::TX_DONE,
            Observation::Inbound { .. } => kind::INBOUND,
            Observation::LineState { .. } => kind::LINE_STATE,
            Observation::StorePerformed { .. } => kind::STORE_PERFORMED,
            Observation::LoadPerformed { .. } => kind::LOAD_PERFORMED,
            Observation::Handler { .. } => kind::HANDLER,
            Observation::Directory { .. } => kind::DIRECTORY,
            Observation::Queue { .. } => kind::QUEUE,
            Observation::Pipeline { .. } => kind::PIPELINE,
            Observation::Phase { .. } => kind::PHASE,
            Observation::Procedure { .. } => kind::PROCEDURE,
            Observation::BusRequest { .. } => kind::BUS_REQUEST,
            Observation::TlbMiss { .. } => kind::TLB_MISS,
            Observation::MemRequest { .. } => kind::MEM_REQUEST,
            Observation::Retire { .. } => kind::RETIRE,
            Observation::L2Slice { .. } => kind::L2_SLICE,
            Observation::L1p { .. } => kind::L1P,
            Observation::CoreEvent { .. } => kind::CORE_EVENT,
            Observation::Switch { .. } => kind::SWITCH,
            Observation::Mode { .. } => kind::MODE,
        }
    }
    /// The processor an observation belongs to, if any.
    pub fn proc(&self) -> Option<u16> {
        match *self {
            Observation::L2Access { proc, .. }
            | Observation::TxIssue { proc, .. }
            | Observation::TxNack { proc, .. }
            | Observation::TxDone { proc, .. }
            | Observation::Inbound { proc, .. }
            | Observation::LineState { proc, .. }
            | Observation::StorePerformed { proc, .. }
            | Observation::LoadPerformed { proc, .. }
            | Observation::Phase { proc, .. }
            | Observation::Procedure { proc, .. }
            | Observation::TlbMiss { proc, .. }
            | Observation::Retire { proc, .. }
            | Observation::BusRequest { proc, .. }
            | Observation::Mode { proc, .. }
            | Observation::Pipeline { proc, .. } => Some(proc),
            Observation::CoreEvent { who, .. } => Some(who.core),
            // So that a probe wanting the pipeline status before a switch gets the core's
            // counts up to it, which belong to the outgoing thread (the POWER2 monitor's
            // mode filter attributes cycles that way).
            Observation::Switch { core, .. } => Some(core),
            _ => None,
        }
    }
    /// The observation's time (for handlers, when the handler started).
    pub fn time(&self) -> Tick {
        match *self {
            Observation::L2Access { t, .. }
            | Observation::TxIssue { t, .. }
            | Observation::TxNack { t, .. }
            | Observation::TxDone { t, .. }
            | Observation::Inbound { t, .. }
            | Observation::LineState { t, .. }
            | Observation::StorePerformed { t, .. }
            | Observation::LoadPerformed { t, .. }
            | Observation::Directory { t, .. }
            | Observation::Queue { t, .. }
            | Observation::Phase { t, .. }
            | Observation::Procedure { t, .. }
            | Observation::TlbMiss { t, .. }
            | Observation::Retire { t, .. }
            | Observation::BusRequest { t, .. }
            | Observation::MemRequest { t, .. }
            | Observation::L2Slice { t, .. }
            | Observation::L1p { t, .. }
            | Observation::CoreEvent { t, .. }
            | Observation::Switch { t, .. }
            | Observation::Mode { t, .. }
            | Observation::Pipeline { t, .. } => t,
            Observation::Handler { start, .. } => start,
        }
    }
}

impl Resource {
    /// Number of resource kinds (the range of `slot().0`).
    pub const KINDS: usize = 9;

    /// (kind, number) of the resource: a dense index for per-resource tables (ground
    /// truth, monitor queue histograms), so that a queue use costs an index, not a hash.
    #[inline]
    pub fn slot(self) -> (usize, usize) {
        match self {
            Resource::Bus(i) => (0, i as usize),
            Resource::Memory(i) => (1, i as usize),
            Resource::NetworkCache(i) => (2, i as usize),
            Resource::RingInterface(i) => (3, i as usize),
            Resource::InterRing(i) => (4, i as usize),
            Resource::ProtocolProcessor(i) => (5, i as usize),
            Resource::MeshLink(n, d) => (6, n as usize * 4 + d as usize),
            Resource::CrossbarPort(n, d) => (7, n as usize * 4 + d as usize),
            Resource::Slice(n) => (8, n as usize),
        }
    }
}

impl Cmd {
    pub fn name(self) -> &'static str {
        match self {
            Cmd::Read => "read",
            Cmd::ReadEx => "read-exclusive",
            Cmd::Upgrade => "upgrade",
            Cmd::Writeback => "writeback",
            Cmd::UncachedRead => "uncached-read",
            Cmd::UncachedWrite => "uncached-write",
        }
    }
}

/// How a transaction ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Data or ownership granted.
    Done,
    /// An upgrade cancelled because a competing processor won ownership first; the agent
    /// re-issues it as a read-exclusive (NUMAchine GPCM event 8).
    Cancelled,
    /// No response within the time-out (4096 bus cycles on NUMAchine): a bus error exception.
    BusError,
}

/// Miss types of the NUMAchine Miss Type Register (seed 000, Table 4.8).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MissType {
    SuccessfulOwnership = 0,
    CancelledOwnership = 1,
    /// A miss on a line whose tag matched but whose state was invalid.
    Invalidation = 2,
    Other = 3,
}

/// The memory-state indicator returned with every response (seed 000, section 4.4.5 and
/// Table 4.9): where the data came from and the state at the responder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Hash)]
pub struct RespState {
    /// Served by the requester's network cache (NUMAchine) rather than memory.
    pub nc_hit: bool,
    /// Global (copies may be on other stations) rather than local state.
    pub global: bool,
    /// The responder's copy was valid (LV/GV) rather than invalid (LI/GI).
    pub valid: bool,
    /// The home of the line is remote to the requester.
    pub remote: bool,
}

impl RespState {
    /// The 5-bit Response State Register value of Table 4.9 for a request that was a read
    /// (`exclusive` false) or a read-exclusive/upgrade.
    pub fn rsr(self, exclusive: bool) -> u8 {
        (self.nc_hit as u8) << 4
            | (self.global as u8) << 3
            | (self.valid as u8) << 2
            | (self.remote as u8) << 1
            | exclusive as u8
    }
}

/// Inbound coherence actions at a processor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InboundKind {
    /// Invalidate the line.
    Invalidate,
    /// Supply the dirty line and keep a shared copy.
    InterventionShared,
    /// Supply the dirty line and invalidate it.
    InterventionExclusive,
}

/// Interconnect and queueing resources that report activity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Resource {
    /// Station bus (NUMAchine) of a station.
    Bus(u16),
    /// Memory module of a node.
    Memory(u16),
    /// Network cache of a station (NUMAchine).
    NetworkCache(u16),
    /// Ring interface of a station (NUMAchine).
    RingInterface(u16),
    /// Inter-ring interface of a local ring (NUMAchine).
    InterRing(u16),
    /// Protocol processor of a node (FLASH MAGIC).
    ProtocolProcessor(u16),
    /// A mesh link (FLASH): node and direction 0..4 (east, west, north, south).
    MeshLink(u16, u8),
    /// A crossbar port (`cmp`): port number and which (0 request input of a core, 1 request
    /// output to a slice, 2 response input of a slice, 3 response output to a core).
    CrossbarPort(u16, u8),
    /// The pipeline of a shared cache slice (`cmp`).
    Slice(u16),
}

/// One observation at a probe point.
#[derive(Clone, Copy, Debug)]
pub enum Observation {
    /// A read or write request reached node `node`'s memory controller (issue 16, seed 002):
    /// what its interface buffer did with it, as `mem::buffer::flags` bits (write-buffer
    /// hit, full, read merge, read-buffer hit, read-ahead used, the delays; `WRITE` for a
    /// write) and the address it asked for (a line's start, or a write-through store's word).
    /// One per request, so an Addie sampling every request sees one bit per request.
    MemRequest {
        node: u16,
        t: Tick,
        addr: u64,
        flags: u16,
    },
    /// An event at slice `slice` of the shared level at `t` (the slice's decision, or a fill's
    /// arrival), for Blue Gene/Q's UPC_L2 (`bgq::events::L2Event`). `who`: the request the
    /// slice was serving (`Origin::default()` unless some observer wants origins; a prefetch
    /// belongs to no request). Built only when a probe asks for `kind::L2_SLICE`; the ground
    /// truth counts every one (`GroundTruth::l2_events`).
    L2Slice {
        slice: u16,
        t: Tick,
        who: Origin,
        event: L2Event,
    },
    /// An event of core `who.core`'s L1 prefetcher at `t` (`bgq::events::L1pEvent`). The L1P
    /// serves the core's hardware threads together, so only `who.core` is set (the rest is
    /// `Origin::default()`'s). Built only for `kind::L1P`.
    L1p {
        who: Origin,
        t: Tick,
        event: L1pEvent,
    },
    /// `n` occurrences (or, for `CoreEvent::cycles` events, `n` processor cycles ending at
    /// `t`) of a core performance event of the thread `who` (exact at the processor). Built
    /// only for `kind::CORE_EVENT`.
    CoreEvent {
        who: Origin,
        t: Tick,
        event: CoreEvent,
        n: u32,
    },
    /// An access that missed the L1 and reached the L2 (a "secondary cache access").
    L2Access {
        proc: u16,
        t: Tick,
        addr: Addr,
        /// The L2 set index (the NUMAchine SRAM's secondary-cache index).
        index: u32,
        write: bool,
        ifetch: bool,
        hit: bool,
        /// Some way at `index` held no valid line at the probe: the state bits the probe
        /// reads at the index, whatever the tag (for a set-associative L2, any invalid way).
        /// What the NUMAchine monitor's invalidation-miss estimator (Fig. 4.8b) sees.
        index_invalid: bool,
        /// Whose request this belongs to.
        who: Origin,
    },
    /// A transaction leaves the external agent (the latency timer starts here).
    TxIssue {
        proc: u16,
        t: Tick,
        cmd: Cmd,
        addr: Addr,
        /// Low 4 bits of the PhaseID register, carried with the transaction.
        phase: u8,
        home: u16,
        /// Whose request this belongs to.
        who: Origin,
    },
    /// A processor card's external agent asked for its bus at `t` to send a message (a
    /// request, write-back, intervention reply, invalidation acknowledgement or uncached
    /// access) and is granted it at `grant` (NUMAchine GPCM event D, "bus request latency
    /// until a bus grant is given"). Presets without processor-bus arbitration (`ideal`,
    /// `flash`) grant at once: `grant == t`. Reported when the request is made, so `grant`
    /// may lie ahead of the other observations.
    BusRequest {
        proc: u16,
        t: Tick,
        grant: Tick,
        /// The thread whose message asked for the bus.
        who: Origin,
    },
    /// A request was negatively acknowledged and will be retried.
    TxNack {
        proc: u16,
        t: Tick,
        cmd: Cmd,
        addr: Addr,
        /// Whose request this belongs to.
        who: Origin,
    },
    /// A transaction's response reached the processor (or it timed out).
    TxDone {
        proc: u16,
        t: Tick,
        cmd: Cmd,
        addr: Addr,
        /// When the first attempt was issued.
        issued: Tick,
        /// When the first NACK arrived (0 if none).
        first_nack: Tick,
        nacks: u32,
        outcome: Outcome,
        miss_type: MissType,
        resp: RespState,
        home: u16,
        phase: u8,
        procedure: u32,
        /// The response's fill replaced a valid L2 line (another address at the same index)
        /// at `t`: a valid-to-invalid change that no `Inbound` reports.
        evicted: bool,
        /// Some way at the line's L2 index holds no valid line once the response has taken
        /// effect (as `L2Access::index_invalid`; for a cancelled upgrade, what the retry's
        /// probe reads).
        index_invalid: bool,
        /// Whose request this belongs to.
        who: Origin,
    },
    /// An inbound invalidation or intervention took effect at a processor's caches.
    Inbound {
        proc: u16,
        t: Tick,
        kind: InboundKind,
        addr: Addr,
        /// The line was valid in the L2 when the action arrived.
        hit: bool,
        /// Whose request this belongs to.
        who: Origin,
    },
    /// A processor's L2 state for a line changed (fills, upgrades, invalidations, evictions).
    LineState {
        proc: u16,
        t: Tick,
        line_addr: Addr,
        old: u8,
        new: u8,
        /// The line's data token after the change.
        value: u64,
    },
    /// A store performed (the data token written), for the protocol tester.
    StorePerformed {
        proc: u16,
        t: Tick,
        addr: Addr,
        value: u64,
    },
    /// A load performed, returning `value`.
    LoadPerformed {
        proc: u16,
        t: Tick,
        addr: Addr,
        value: u64,
    },
    /// A FLASH protocol handler ran on a node's protocol processor.
    Handler {
        node: u16,
        handler: u16,
        /// When the handler's first instruction ran (it may have queued before).
        start: Tick,
        queued: Tick,
        latency: Tick,
        occupancy: Tick,
        addr: Addr,
        /// The directory header after the handler (FLASH DPA layout, see `flash::dir`).
        header: u64,
        /// Whose request this belongs to.
        who: Origin,
    },
    /// Directory (memory) state of a line changed at its home.
    Directory {
        node: u16,
        t: Tick,
        line_addr: Addr,
        old: u8,
        new: u8,
        /// Whose request this belongs to.
        who: Origin,
    },
    /// A message occupied a resource: it waited `wait` ticks with `queue` others ahead.
    Queue {
        res: Resource,
        t: Tick,
        wait: Tick,
        busy: Tick,
        queue: u32,
        /// Whose request this belongs to.
        who: Origin,
    },
    /// The processor's pipeline-status outputs, accumulated: cycles per pipeline state
    /// (`cpu::pipeline::Ps` code as index) and retired instructions per class, up to `t`.
    /// Emitted, when a probe asks for it (`Probe::wants_pipeline`), just before the
    /// observations of that processor whose kinds some such probe names in
    /// `Probe::pipeline_before`, before every uncached access to the monitor region, and at the
    /// end of the run; never twice with the same cycles. `restarts`: the pipeline's restarts
    /// after flushes (`Counters::restarts`; always 0 without `[cpu] restart_signal`).
    Pipeline {
        proc: u16,
        t: Tick,
        cycles: [u64; 16],
        instr: [u64; 6],
        restarts: u64,
    },
    /// A TLB refill exception: the reference to `addr` (an instruction fetch when `ifetch`)
    /// found no TLB entry (see `cpu::tlb`).
    TlbMiss {
        proc: u16,
        t: Tick,
        addr: Addr,
        ifetch: bool,
        /// The thread that made the reference.
        who: Origin,
    },
    /// `n` instructions of fine class `op` retired on processor `proc` by thread `who` in
    /// the span of ticks (`from`, `t`]. Reported when the thread returns to the event loop
    /// (`State::flush_retired`), so a span never reaches past the next event of any kind
    /// (a probe's wake-up included) by more than `cpu.inbound_cycles`; the retiring paths
    /// themselves test nothing. Built only while some probe asks for `kind::RETIRE`.
    Retire {
        proc: u16,
        t: Tick,
        from: Tick,
        op: crate::cpu::op::Op,
        n: u64,
        who: Origin,
    },
    /// The software thread holding core `core` changed at `t` (a software context switch, or
    /// the hardware issue policy handing the pipeline to another context's thread): the
    /// core's counts up to `t` belong to `from`, those after to `to` (software thread ids;
    /// `None`: no thread, the core idle). What counter virtualization hooks (save the
    /// outgoing thread's counts, restore the incoming one's), as `perf_event_open` does at a
    /// task switch. Not emitted for a core with one software thread, which never switches.
    Switch {
        core: u16,
        context: u8,
        t: Tick,
        from: Option<u32>,
        to: Option<u32>,
    },
    /// The thread holding processor `proc` is about to change its MSR state at `t`: enter or
    /// leave supervisor state (an operating-system path), or set or clear its process mark
    /// (the marking system call). `who` is the state until now; the next observation of the
    /// processor carries the new one, `to`. A monitor filtering by mode (POWER2's MMCR)
    /// counts the processor's work up to here under `who` (with the pipeline status reported
    /// just before, `Probe::pipeline_before`) and what follows under `to`. Built only while a
    /// probe asks for `kind::MODE`.
    Mode {
        proc: u16,
        t: Tick,
        who: Origin,
        to: Origin,
    },
    /// A phase change (PhaseID register write) on a processor.
    Phase { proc: u16, t: Tick, phase: u16 },
    /// Procedure entry (`enter`) or exit (`leave`); `procedure` is the one now current.
    Procedure {
        proc: u16,
        t: Tick,
        procedure: u32,
        entered: bool,
    },
}

/// A probe's own clock (issue 13 item 7): `num / den` processor cycles per cycle of it. The
/// BG/Q counter units run on the half-rate "x2" clock (`num = 2, den = 1`); a probe sampling
/// every processor cycle uses `1 / 1`. The period must be a whole number of ticks (the
/// machine refuses the probe otherwise, naming the clock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProbeClock {
    pub name: &'static str,
    pub num: u64,
    pub den: u64,
}

/// The actions a probe may take on the machine: the only ways a monitor changes the simulated
/// machine, each with a cost the machine charges and the ground truth reports (`Acted`).
/// ARCHITECTURE.md ("Probes: observe, wake, act") has the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Action {
    /// Raise interrupt `vector` on hardware context `context` of core `core`. The software
    /// thread loaded on that context takes it at its next instruction boundary: the
    /// exception entry (`cpu.exception_cycles`) plus `handler_cycles` (the handler's own
    /// cost, stated by the monitor), all classified killed-exception, then the program's
    /// handler (`Ctx::on_interrupt`) if it installed one.
    Interrupt {
        core: u16,
        context: u8,
        vector: u32,
        handler_cycles: u64,
    },
    /// Set a registered setting (`settings::Settings`) to `value`. It takes effect the
    /// setting's registered latency later; a value outside its range is refused.
    Set {
        setting: crate::settings::SettingId,
        value: u64,
    },
    /// Move the page holding `addr` to home node `node`: the home changes
    /// `memory.page_migration_cycles` processor cycles later (the copy), and later misses
    /// see the new home. Refused when the memory system holds state for a line of the page
    /// it cannot move (`MemorySystem::page_movable`) or the node does not exist.
    MigratePage { addr: Addr, node: u16 },
}

/// What the probes' actions did, for the ground truth and the report: how many of each, and
/// what they cost.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Acted {
    /// Probe wake-ups made.
    pub wakes: u64,
    /// Interrupts raised (`Action::Interrupt` and `Signals::raise`), and those dropped
    /// because no live software thread was loaded on the context.
    pub interrupts: u64,
    pub interrupts_dropped: u64,
    /// Interrupts taken by threads, and the cycles they cost them (exception entries plus
    /// handler cycles, all classified killed-exception); of those, the handlers' own.
    pub interrupts_taken: u64,
    pub interrupt_cycles: u64,
    pub handler_cycles: u64,
    /// Setting changes applied, per setting (index = `SettingId`), and those refused.
    pub settings_applied: Vec<u64>,
    pub settings_refused: u64,
    /// Page migrations done, the processor cycles their copies took, and those refused.
    pub migrations: u64,
    pub migration_cycles: u64,
    pub migrations_refused: u64,
}

impl Acted {
    /// Some probe woke or acted beyond the interrupts a monitor raises on overflow (which
    /// the report already shows per processor): the report gets its actions section.
    pub fn shown(&self) -> bool {
        self.wakes > 0
            || self.handler_cycles > 0
            || self.interrupts_dropped > 0
            || self.settings_applied.iter().any(|&n| n > 0)
            || self.settings_refused > 0
            || self.migrations + self.migrations_refused > 0
    }
}

/// What a probe asks of the machine while it observes, answers an access or wakes.
#[derive(Default, Debug)]
pub struct Signals {
    /// Actions in the order asked; the machine applies them when the probe returns.
    pub actions: Vec<Action>,
}

impl Signals {
    /// Raise interrupt `vector` on processor `proc` (its context 0, no handler cost beyond the
    /// exception entry): the NUMAchine monitor's interrupt.
    pub fn raise(&mut self, proc: u16, vector: u32) {
        self.act(Action::Interrupt {
            core: proc,
            context: 0,
            vector,
            handler_cycles: 0,
        });
    }
    /// Asks for `a` (see [`Action`]).
    pub fn act(&mut self, a: Action) {
        self.actions.push(a);
    }
}

/// A monitor attached to the machine. The machine owns it and hands nothing back: a monitor
/// that reports after the run shares its state with the probe it attaches
/// (`monitor::plugin::Shared`).
pub trait Probe {
    /// Called for every observation, in simulated-time order per processor.
    fn observe(&mut self, o: &Observation, sig: &mut Signals);
    /// An uncached access by processor `proc` to the monitor region at byte offset `offset`
    /// (`write` holds the data for a store). Returns the data for a load; `None` if this
    /// probe does not own the offset. `size` is 4 (word) or 8 (doubleword).
    fn mmio(
        &mut self,
        _proc: u16,
        _t: Tick,
        _offset: u64,
        _size: u8,
        _write: Option<u64>,
        _sig: &mut Signals,
    ) -> Option<u64> {
        None
    }
    /// True if this probe needs the origin (`Origin`) of bus, memory and network
    /// observations (`BusRequest`, `Queue`, `Directory`, `Handler`, `Inbound`): the machine
    /// then keeps the latest request per line (`origin`). Processor-level observations carry
    /// theirs always. Asked with `interest`.
    fn wants_origins(&self) -> bool {
        false
    }
    /// True if this probe needs `Observation::Pipeline` (the pipeline-status stream).
    fn wants_pipeline(&self) -> bool {
        false
    }
    /// The observation kinds ([`kind`]) this probe wants now; it receives no others. Asked when
    /// the probe is attached and after each of its `mmio` calls, so it may change only there.
    fn interest(&self) -> u32 {
        kind::ALL
    }
    /// The kinds of observation before which this probe needs a fresh pipeline status (if it
    /// `wants_pipeline`); it always gets one before `mmio` and at the end. Asked with
    /// `interest`. Default: before every observation of a processor.
    fn pipeline_before(&self) -> u32 {
        kind::ALL
    }
    /// The probe's clock and the cycle of it at which it first wants to be called
    /// ([`Probe::wake`]); `None` (the default) never wakes it. Asked once, when attached.
    fn wakes(&self) -> Option<(ProbeClock, u64)> {
        None
    }
    /// A wake-up at `cycle` of the probe's clock (tick `t`). Returns the next cycle it wants
    /// (after `cycle`), or `None` to stop. Wake-ups are events of the machine's queue, after
    /// the memory system's events and deliveries of the same tick and before processors
    /// resume; wake-ups of several probes at one tick come in the order they were scheduled.
    /// Those falling after the last thread finished are not made, so a probe waking every N
    /// cycles of a run of T cycles is called floor(T / N) times.
    fn wake(&mut self, _cycle: u64, _t: Tick, _sig: &mut Signals) -> Option<u64> {
        None
    }
    /// A sink in which the machine may sum this probe's `Observation::Retire`s per hardware
    /// context and class instead of reporting them, for spans ending before each core's
    /// horizon (`retire_sink`). Taken only while this is the one probe asking for
    /// `kind::RETIRE`; asked with `interest`. Default: none.
    fn retire_sink(&self) -> Option<crate::retire_sink::Shared> {
        None
    }
    /// Called once at the end of the run with the final time.
    fn finish(&mut self, _t: Tick) {}
    fn name(&self) -> &str;
}
