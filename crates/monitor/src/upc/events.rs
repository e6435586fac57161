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

/// Sub-selections of the A2 group: 0..13 the core events the machine reports
/// (`machine::probe::CoreEvent`, in its order), then the x1 cycles and two of pmusim's own.
pub mod a2 {
    pub const IL1_MISS: u8 = 0;
    pub const LD_MISS: u8 = 2;
    pub const ST_MISS: u8 = 3;
    pub const BACK_INVAL: u8 = 8;
    pub const IERAT_MISS: u8 = 10;
    pub const DERAT_MISS: u8 = 11;
    pub const CYCLES: u8 = 14;
    pub const MISS_PENDING: u8 = 15;
    pub const NACK: u8 = 16;
    pub const COUNT: usize = 17;
}

const fn l1p(sub: u8, name: &'static str) -> PEvent {
    PEvent {
        group: Group::L1p,
        sub,
        name,
        level: false,
        per_thread: false,
        source: "Observation::L1p (the bgq preset's L1 prefetcher)",
    }
}

/// The UPC_P events pmusim produces: group A2 (sub 0..13 `Observation::CoreEvent`, 14..16
/// the cycles and two agent events), then group L1P (`Observation::L1p`). The opcode group's
/// events follow the fine instruction classes once the machine reports retirements
/// (`Observation::Retire`).
pub const P_EVENTS: &[PEvent] = &[
    a2(0, "PEVT_IU_IL1_MISS", false, true, "CoreEvent il1-miss"),
    a2(1, "PEVT_IU_IL1_MISS_CYC", false, true, "CoreEvent il1-miss-cycles (n cycles when served)"),
    a2(2, "PEVT_LSU_COMMIT_LD_MISSES", false, true, "CoreEvent load-miss"),
    a2(3, "PEVT_LSU_COMMIT_ST_MISSES", false, true, "CoreEvent store-miss"),
    a2(4, "PEVT_LSU_COMMIT_CACHE_INHIB_LD_MISSES", false, true, "CoreEvent cache-inhibited-load"),
    a2(5, "PEVT_LSU_LARX_FINISHED", false, true, "CoreEvent larx-finished"),
    a2(6, "PEVT_LSU_COMMIT_STCX", false, true, "CoreEvent stcx"),
    a2(7, "PEVT_XU_STCX_FAIL", false, true, "CoreEvent stcx-fail"),
    a2(8, "PEVT_LSU_L1_DCACHE_BACK_INVAL", false, false, "CoreEvent back-invalidate"),
    a2(9, "PEVT_LSU_L1_DCACHE_BACK_INVAL_HITS", false, false, "CoreEvent back-invalidate-hit"),
    a2(10, "PEVT_MMU_IERAT_MISS", false, true, "CoreEvent ierat-miss"),
    a2(11, "PEVT_MMU_DERAT_MISS", false, true, "CoreEvent derat-miss"),
    a2(12, "PEVT_XU_INTS_TAKEN", false, true, "CoreEvent interrupt-taken"),
    a2(13, "PEVT_LSU_DATA_MISS_CYC", false, true, "CoreEvent data-miss-cycles (n cycles when served; no driver name)"),
    a2(a2::CYCLES, "PEVT_CYCLES", true, false, "the x1 (processor) clock: asserted every cycle"),
    a2(a2::MISS_PENDING, "PEVT_LSU_MISS_PENDING_CYC", true, false, "level: a read, read-exclusive or upgrade outstanding at the core's agent (TxIssue to TxDone; no driver name)"),
    a2(a2::NACK, "PEVT_LSU_MISS_NACKED", false, true, "TxNack: a request refused and retried (no driver name)"),
    l1p(0, "PEVT_L1P_BAS_HIT"),
    l1p(1, "PEVT_L1P_BAS_PF2DFC"),
    l1p(2, "PEVT_L1P_BAS_MISS"),
    l1p(3, "PEVT_L1P_BAS_LD"),
    l1p(4, "PEVT_L1P_BAS_ST"),
    l1p(5, "PEVT_L1P_BAS_STRM_LINE_ESTB"),
    l1p(6, "PEVT_L1P_STRM_STRM_ESTB"),
    l1p(7, "PEVT_L1P_STRM_EVICT_UNUSED"),
    l1p(8, "PEVT_L1P_STRM_WRT_INVAL"),
    l1p(9, "PEVT_L1P_STRM_REMOTE_INVAL_MATCH"),
];

/// The event of `group` numbered `sub`, if pmusim produces it.
pub fn p_event(group: Group, sub: u8) -> Option<&'static PEvent> {
    P_EVENTS.iter().find(|e| e.group == group && e.sub == sub)
}

/// The UPC_P event called `name` (`PEVT_*`, case-insensitive).
pub fn p_event_named(name: &str) -> Option<&'static PEvent> {
    P_EVENTS.iter().find(|e| e.name.eq_ignore_ascii_case(name))
}

pub use machine::probe::L2Event;

/// The L2 event a name selects (case-insensitive): the driver's `PEVT_L2_*_SLICE` (per slice,
/// `Some(false)`), `PEVT_L2_*` (combined over the slices by UPC_C's L2 combine, `Some(true)`),
/// or pmusim's name of one of the 16 protocol events (`read`, `invalidate-sent`, ...; either).
pub fn l2_event_named(name: &str) -> Option<(L2Event, Option<bool>)> {
    L2Event::ALL.iter().find_map(|&e| {
        if e.pevt_slice().is_some_and(|n| n.eq_ignore_ascii_case(name)) {
            Some((e, Some(false)))
        } else if e.pevt().is_some_and(|n| n.eq_ignore_ascii_case(name)) {
            Some((e, Some(true)))
        } else if e.name().eq_ignore_ascii_case(name) {
            Some((e, None))
        } else {
            None
        }
    })
}

/// The name of L2 event `num` as a UPC_L2 counter counts it.
pub fn l2_name(num: u8, combined: bool) -> &'static str {
    match L2Event::ALL.get(num as usize) {
        Some(e) => {
            let driver = if combined { e.pevt() } else { e.pevt_slice() };
            driver.unwrap_or(e.name())
        }
        None => "reserved",
    }
}
