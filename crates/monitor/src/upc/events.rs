//! The events the UPC units count: the UPC_P's three event groups (A2 core unit, opcode groups,
//! L1P) and the UPC_L2's slice events, each with the driver's `PEVT_*` name where one exists
//! (`jedbrown/bgq-driver`, `spi/include/upci/events.h`) and the observation that produces it in
//! pmusim (docs/upc.md, "Events").
//!
//! An event is a *pulse* (one count per occurrence, possibly several in one x2 cycle) or a
//! *level* (a signal that stays asserted for a number of processor cycles: counted per cycle
//! asserted, or per rising edge with the counter's edge bit, or per cycle not asserted with
//! its polarity bit; patent: "Edge Level Polarity module").

/// A UPC_P counter's event group (the counter configuration's group field; the driver's
/// `EVENT_GROUP_SEL`: 00 A2, 01 opcodes, 10/11 L1P).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Group {
    /// The A2 core's performance event bus (XU, IU, LSU, MMU, AXU units) and the x1 clock.
    A2 = 0,
    /// The XU and QPU decoders' instruction groups (seed: "roughly 50 groups of instructions").
    Opcode = 1,
    /// The L1 prefetcher's events.
    L1p = 2,
}

impl Group {
    pub const ALL: [Group; 3] = [Group::A2, Group::Opcode, Group::L1p];
    pub fn name(self) -> &'static str {
        match self {
            Group::A2 => "a2",
            Group::Opcode => "opcode",
            Group::L1p => "l1p",
        }
    }
    pub fn from_code(c: u64) -> Option<Group> {
        Group::ALL.get(c as usize).copied()
    }
}

/// One countable event of a UPC_P: its group and number in the group (the configuration's
/// sub-selection), whether it is a level signal, its name and where it comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PEvent {
    pub group: Group,
    pub sub: u8,
    pub name: &'static str,
    pub level: bool,
    /// Per hardware thread (the thread mask applies), or core-wide.
    pub per_thread: bool,
    /// What produces it in pmusim.
    pub source: &'static str,
}

const fn a2(
    sub: u8,
    name: &'static str,
    level: bool,
    per_thread: bool,
    source: &'static str,
) -> PEvent {
    PEvent {
        group: Group::A2,
        sub,
        name,
        level,
        per_thread,
        source,
    }
}

/// Sub-selections of the A2 group (indices into [`P_EVENTS`]).
pub mod a2 {
    pub const CYCLES: u8 = 0;
    pub const IL1_MISS: u8 = 1;
    pub const LD_MISS: u8 = 2;
    pub const ST_MISS: u8 = 3;
    pub const DERAT_MISS: u8 = 4;
    pub const IERAT_MISS: u8 = 5;
    pub const BACK_INVAL: u8 = 6;
    pub const BACK_INVAL_HITS: u8 = 7;
    pub const MISS_PENDING: u8 = 8;
    pub const NACK: u8 = 9;
    pub const COUNT: usize = 10;
}

/// The UPC_P events pmusim produces, group A2 first. The opcode group's events follow the
/// fine instruction classes once the machine reports retirements (`Observation::Retire`);
/// the L1P group's once the `bgq` preset's L1 prefetcher does (docs/upc.md lists both).
pub const P_EVENTS: &[PEvent] = &[
    a2(a2::CYCLES, "PEVT_CYCLES", true, false, "the x1 (processor) clock: asserted every cycle"),
    a2(a2::IL1_MISS, "PEVT_IU_IL1_MISS", false, true, "L2Access with ifetch: an L1 I miss"),
    a2(a2::LD_MISS, "PEVT_LSU_COMMIT_LD_MISSES", false, true, "L2Access, data read: an L1 D load miss"),
    a2(a2::ST_MISS, "PEVT_LSU_COMMIT_ST_MISSES", false, true, "L2Access, data write: an L1 D store miss"),
    a2(a2::DERAT_MISS, "PEVT_MMU_DERAT_MISS", false, true, "TlbMiss, data reference"),
    a2(a2::IERAT_MISS, "PEVT_MMU_IERAT_MISS", false, true, "TlbMiss, instruction fetch"),
    a2(a2::BACK_INVAL, "PEVT_LSU_L1_DCACHE_BACK_INVAL", false, false, "Inbound invalidation from the L2 directory"),
    a2(a2::BACK_INVAL_HITS, "PEVT_LSU_L1_DCACHE_BACK_INVAL_HITS", false, false, "Inbound invalidation of a line the core held"),
    a2(a2::MISS_PENDING, "PEVT_LSU_MISS_PENDING_CYC", true, false, "level: a read, read-exclusive or upgrade outstanding at the core's agent (TxIssue to TxDone; no driver name)"),
    a2(a2::NACK, "PEVT_LSU_MISS_NACKED", false, true, "TxNack: a request refused and retried (no driver name)"),
];

/// The event of `group` numbered `sub`, if pmusim produces it.
pub fn p_event(group: Group, sub: u8) -> Option<&'static PEvent> {
    P_EVENTS.iter().find(|e| e.group == group && e.sub == sub)
}

/// The UPC_P event called `name` (`PEVT_*`, case-insensitive).
pub fn p_event_named(name: &str) -> Option<&'static PEvent> {
    P_EVENTS.iter().find(|e| e.name.eq_ignore_ascii_case(name))
}

/// One of the 32 L2 slice events (patent: "all 32 events supported by the L2 slice"; the
/// driver names 16 per slice and 16 combined over the slices, `PEVT_L2_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct L2Event {
    pub num: u8,
    pub name: &'static str,
    /// Produced by pmusim (events about speculation are listed but absent).
    pub present: bool,
    pub source: &'static str,
}

const fn l2(num: u8, name: &'static str, present: bool, source: &'static str) -> L2Event {
    L2Event {
        num,
        name,
        present,
        source,
    }
}

/// Event numbers of the L2 slice events pmusim produces.
pub mod l2ev {
    pub const REQUESTS: u8 = 7;
}

/// The 32 L2 events: 0..15 the slice's own (`*_SLICE` in the driver), 16..31 the same events
/// as the driver's combined names (UPC_C's L2 combine sums the slices into one group). Until
/// the machine reports slice events (`Observation::L2Slice`, the `bgq` branch) only the slice
/// pipeline's uses are produced, as request retirements.
pub const L2_EVENTS: [L2Event; 32] = [
    l2(0, "PEVT_L2_HITS_SLICE", false, "L2Slice hit (bgq)"),
    l2(1, "PEVT_L2_MISSES_SLICE", false, "L2Slice miss (bgq)"),
    l2(2, "PEVT_L2_PREFETCH_SLICE", false, "L2Slice prefetch (bgq)"),
    l2(
        3,
        "PEVT_L2_FETCH_LINE_SLICE",
        false,
        "L2Slice line fetched from memory (bgq)",
    ),
    l2(
        4,
        "PEVT_L2_STORE_LINE_SLICE",
        false,
        "L2Slice full line stored to memory (bgq)",
    ),
    l2(
        5,
        "PEVT_L2_STORE_PARTIAL_LINE_SLICE",
        false,
        "L2Slice partial line stored (bgq)",
    ),
    l2(
        6,
        "PEVT_L2_REQ_REJECT_SLICE",
        false,
        "L2Slice request rejected (bgq)",
    ),
    l2(
        7,
        "PEVT_L2_REQ_RETIRE_SLICE",
        true,
        "Queue at the slice's pipeline: one per request the slice serves",
    ),
    l2(
        8,
        "PEVT_L2_REQ_MISS_AND_EVICT_SLICE",
        false,
        "L2Slice miss with eviction (bgq)",
    ),
    l2(
        9,
        "PEVT_L2_REQ_MISS_AND_EVICT_SPEC_SLICE",
        false,
        "speculation: not modelled",
    ),
    l2(
        10,
        "PEVT_L2_MISS_AND_EVICT_SLICE",
        false,
        "L2Slice miss with eviction (bgq)",
    ),
    l2(
        11,
        "PEVT_L2_MISS_AND_EVICT_SPEC_SLICE",
        false,
        "speculation: not modelled",
    ),
    l2(
        12,
        "PEVT_L2_REQ_SPEC_ADDR_CLEANUP_SLICE",
        false,
        "speculation: not modelled",
    ),
    l2(
        13,
        "PEVT_L2_SPEC_ADDR_CLEANUP_SLICE",
        false,
        "speculation: not modelled",
    ),
    l2(
        14,
        "PEVT_L2_SPEC_SET_CLEANUP_SLICE",
        false,
        "speculation: not modelled",
    ),
    l2(
        15,
        "PEVT_L2_SPEC_RETRY_SLICE",
        false,
        "speculation: not modelled",
    ),
    l2(16, "PEVT_L2_HITS", false, "combined over slices"),
    l2(17, "PEVT_L2_MISSES", false, "combined over slices"),
    l2(18, "PEVT_L2_PREFETCH", false, "combined over slices"),
    l2(19, "PEVT_L2_FETCH_LINE", false, "combined over slices"),
    l2(20, "PEVT_L2_STORE_LINE", false, "combined over slices"),
    l2(
        21,
        "PEVT_L2_STORE_PARTIAL_LINE",
        false,
        "combined over slices",
    ),
    l2(22, "PEVT_L2_REQ_REJECT", false, "combined over slices"),
    l2(23, "PEVT_L2_REQ_RETIRE", true, "combined over slices"),
    l2(
        24,
        "PEVT_L2_REQ_MISS_AND_EVICT",
        false,
        "combined over slices",
    ),
    l2(
        25,
        "PEVT_L2_REQ_MISS_AND_EVICT_SPEC",
        false,
        "speculation: not modelled",
    ),
    l2(26, "PEVT_L2_MISS_AND_EVICT", false, "combined over slices"),
    l2(
        27,
        "PEVT_L2_MISS_AND_EVICT_SPEC",
        false,
        "speculation: not modelled",
    ),
    l2(
        28,
        "PEVT_L2_REQ_SPEC_ADDR_CLEANUP",
        false,
        "speculation: not modelled",
    ),
    l2(
        29,
        "PEVT_L2_SPEC_ADDR_CLEANUP",
        false,
        "speculation: not modelled",
    ),
    l2(
        30,
        "PEVT_L2_SPEC_SET_CLEANUP",
        false,
        "speculation: not modelled",
    ),
    l2(31, "PEVT_L2_SPEC_RETRY", false, "speculation: not modelled"),
];

/// The L2 event called `name` (`PEVT_L2_*`, case-insensitive).
pub fn l2_event_named(name: &str) -> Option<&'static L2Event> {
    L2_EVENTS.iter().find(|e| e.name.eq_ignore_ascii_case(name))
}
