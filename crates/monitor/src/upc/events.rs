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
/// the cycles and two agent events), group L1P (`Observation::L1p`), and the opcode group
/// (`Observation::Retire`, by its fine instruction class `Op`: [`op_groups`]).
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
    opc(op::QLD, "PEVT_INST_XU_QLD", "Op load32 (a QPX quad load)"),
    opc(op::QST, "PEVT_INST_XU_QST", "Op store32 (a QPX quad store)"),
    opc(op::BITS, "PEVT_INST_XU_BITS", "Op int-shift"),
    opc(op::BRC, "PEVT_INST_XU_BRC", "Op br-cond-taken, br-cond-not-taken"),
    opc(op::BRU, "PEVT_INST_XU_BRU", "Op br-uncond, br-indirect"),
    opc(op::IADD, "PEVT_INST_XU_IADD", "Op int-add"),
    opc(op::ICMP, "PEVT_INST_XU_ICMP", "Op int-compare"),
    opc(op::IDIV, "PEVT_INST_XU_IDIV", "Op int-div"),
    opc(op::ILOG, "PEVT_INST_XU_ILOG", "Op int-logical, cr-logical, nop (ori 0,0,0)"),
    opc(op::IMOV, "PEVT_INST_XU_IMOV", "Op spr-move"),
    opc(op::IMUL, "PEVT_INST_XU_IMUL", "Op int-mul"),
    opc(op::INT, "PEVT_INST_XU_INT", "Op syscall"),
    opc(op::LD, "PEVT_INST_XU_LD", "Op load1 .. load16"),
    opc(op::LSCX, "PEVT_INST_XU_LSCX", "Op larx, stcx"),
    opc(op::ST, "PEVT_INST_XU_ST", "Op store1 .. store16"),
    opc(op::SYNC, "PEVT_INST_XU_SYNC", "Op sync"),
    opc(op::XU_ALL, "PEVT_INST_XU_ALL", "every Op of the integer, load, store and branch classes"),
    opc(op::FOTH, "PEVT_INST_QFPU_FOTH", "Op fp (FP arithmetic of no finer class)"),
    opc(op::FADD, "PEVT_INST_QFPU_FADD", "Op fp-add"),
    opc(op::FCVT, "PEVT_INST_QFPU_FCVT", "Op fp-convert"),
    opc(op::FCMP, "PEVT_INST_QFPU_FCMP", "Op fp-compare"),
    opc(op::FDIV, "PEVT_INST_QFPU_FDIV", "Op fp-div"),
    opc(op::FMA, "PEVT_INST_QFPU_FMA", "Op fp-fma"),
    opc(op::FMUL, "PEVT_INST_QFPU_FMUL", "Op fp-mul"),
    opc(op::FSQ, "PEVT_INST_QFPU_FSQ", "Op fp-sqrt"),
    opc(op::QOTH, "PEVT_INST_QFPU_QOTH", "Op qp-other, qp-div (QPX has no divide instruction)"),
    opc(op::QADD, "PEVT_INST_QFPU_QADD", "Op qp-add"),
    opc(op::QMUL, "PEVT_INST_QFPU_QMUL", "Op qp-mul"),
    opc(op::QMA, "PEVT_INST_QFPU_QMA", "Op qp-fma"),
    opc(op::QFPU_ALL, "PEVT_INST_QFPU_ALL", "every Op of the fp class (fp*, qp*)"),
    opc(op::ALL, "PEVT_INST_ALL", "every Op"),
];

const fn opc(sub: u8, name: &'static str, source: &'static str) -> PEvent {
    PEvent {
        group: Group::Opcode,
        sub,
        name,
        level: false,
        per_thread: true,
        source,
    }
}

/// Sub-selections of the opcode group: the driver's `PEVT_INST_XU_*` and `PEVT_INST_QFPU_*`
/// groups in the driver's order (`events.h`, 214..277 without its match and mask selectors),
/// then the sums. 50 groups (seed: "roughly 50 groups of instructions"), of which pmusim's
/// fine instruction classes (`machine::cpu::op::Op`) fill 31; the others are [`ABSENT_OPCODE`].
pub mod op {
    pub const FLD: u8 = 0;
    pub const FST: u8 = 1;
    pub const QLD: u8 = 2;
    pub const QST: u8 = 3;
    pub const BITS: u8 = 4;
    pub const BRC: u8 = 5;
    pub const BRU: u8 = 6;
    pub const IADD: u8 = 10;
    pub const ICMP: u8 = 11;
    pub const IDIV: u8 = 13;
    pub const ILOG: u8 = 14;
    pub const IMOV: u8 = 15;
    pub const IMUL: u8 = 16;
    pub const INT: u8 = 17;
    pub const LD: u8 = 18;
    pub const LSCX: u8 = 19;
    pub const ST: u8 = 20;
    pub const SYNC: u8 = 21;
    pub const XU_ALL: u8 = 25;
    pub const FOTH: u8 = 26;
    pub const FADD: u8 = 28;
    pub const FCVT: u8 = 29;
    pub const FCMP: u8 = 30;
    pub const FDIV: u8 = 31;
    pub const FMA: u8 = 33;
    pub const FMUL: u8 = 34;
    pub const FSQ: u8 = 37;
    pub const QOTH: u8 = 39;
    pub const QADD: u8 = 40;
    pub const QMUL: u8 = 41;
    pub const QMA: u8 = 43;
    pub const QFPU_ALL: u8 = 48;
    pub const ALL: u8 = 49;
}

/// The driver's opcode groups no `Op` falls in (pmusim has no instruction of theirs, or does
/// not tell it apart: an FP load is a load of its size), with their sub-selection; `add` and
/// configuration files refuse them by name.
pub const ABSENT_OPCODE: &[(u8, &str)] = &[
    (op::FLD, "PEVT_INST_XU_FLD"),
    (op::FST, "PEVT_INST_XU_FST"),
    (7, "PEVT_INST_XU_CINV"),
    (8, "PEVT_INST_XU_CSTO"),
    (9, "PEVT_INST_XU_CTCH"),
    (12, "PEVT_INST_XU_ICSW"),
    (22, "PEVT_INST_XU_TLB"),
    (23, "PEVT_INST_XU_TLBI"),
    (24, "PEVT_INST_XU_WCH"),
    (27, "PEVT_INST_QFPU_FRES"),
    (32, "PEVT_INST_QFPU_FMOV"),
    (35, "PEVT_INST_QFPU_FRND"),
    (36, "PEVT_INST_QFPU_FSQE"),
    (38, "PEVT_INST_QFPU_QMOV"),
    (42, "PEVT_INST_QFPU_QRES"),
    (44, "PEVT_INST_QFPU_QRND"),
    (45, "PEVT_INST_QFPU_QCVT"),
    (46, "PEVT_INST_QFPU_QCMP"),
    (47, "PEVT_INST_QFPU_UCODE"),
];

/// The opcode groups an instruction of class `o` counts in: its own group, its unit's sum
/// (`PEVT_INST_XU_ALL` or `PEVT_INST_QFPU_ALL`) and `PEVT_INST_ALL` (docs/upc.md, "Opcode
/// group"). Each `Op` falls in exactly one own group, as each opcode does in the decoders.
pub fn op_groups(o: machine::cpu::op::Op) -> [u8; 3] {
    use machine::cpu::op::Op::*;
    let own = match o {
        IntAdd => op::IADD,
        IntMul => op::IMUL,
        IntDiv => op::IDIV,
        IntLogical | CrLogical | Nop => op::ILOG,
        IntShift => op::BITS,
        IntCompare => op::ICMP,
        SprMove => op::IMOV,
        Sync => op::SYNC,
        Larx | Stcx => op::LSCX,
        Syscall => op::INT,
        Load1 | Load2 | Load4 | Load8 | Load16 => op::LD,
        Load32 => op::QLD,
        Store1 | Store2 | Store4 | Store8 | Store16 => op::ST,
        Store32 => op::QST,
        Fp => op::FOTH,
        FpAdd => op::FADD,
        FpMul => op::FMUL,
        FpFma => op::FMA,
        FpDiv => op::FDIV,
        FpSqrt => op::FSQ,
        FpCompare => op::FCMP,
        FpConvert => op::FCVT,
        QpAdd => op::QADD,
        QpMul => op::QMUL,
        QpFma => op::QMA,
        QpDiv | QpOther => op::QOTH,
        BrCondTaken | BrCondNotTaken => op::BRC,
        BrUncond | BrIndirect => op::BRU,
    };
    let unit = if o.class() == machine::cpu::Class::Fp {
        op::QFPU_ALL
    } else {
        op::XU_ALL
    };
    [own, unit, op::ALL]
}

/// The absent opcode group called `name`, if it is one.
pub fn absent_opcode(name: &str) -> Option<&'static str> {
    ABSENT_OPCODE
        .iter()
        .find(|(_, n)| n.eq_ignore_ascii_case(name))
        .map(|&(_, n)| n)
}

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
