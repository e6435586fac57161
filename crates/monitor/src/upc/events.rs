//! The events the UPC units count: the UPC_P's three event groups (A2 core unit, opcode groups,
//! L1P) and the UPC_L2's slice events, each with the driver's `PEVT_*` name where one exists
//! (`jedbrown/bgq-driver`, `spi/include/upci/events.h`) and the observation that produces it in
//! pmusim (docs/upc.md, "Events").
//!
//! An event is a *pulse* (one count per occurrence, possibly several in one x2 cycle) or a
//! *level* (a signal that stays asserted for a number of processor cycles: counted per cycle
//! asserted, or per rising edge with the counter's edge bit, or per cycle not asserted with
//! its polarity bit; patent: "Edge Level Polarity module").

use machine::bgq::inst::{Decoder, InstGroup};

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
/// (`machine::probe::CoreEvent`, in its order), then the x1 cycles and two of pmusim's own,
/// then the four commit events that follow from retired instructions ([`a2_ops`]).
pub mod a2 {
    pub const IL1_MISS: u8 = 0;
    pub const IL1_MISS_CYC: u8 = 1;
    pub const LD_MISS: u8 = 2;
    pub const ST_MISS: u8 = 3;
    pub const CI_LD: u8 = 4;
    pub const LARX: u8 = 5;
    pub const STCX: u8 = 6;
    pub const STCX_FAIL: u8 = 7;
    pub const BACK_INVAL: u8 = 8;
    pub const BACK_INVAL_HIT: u8 = 9;
    pub const IERAT_MISS: u8 = 10;
    pub const DERAT_MISS: u8 = 11;
    pub const INTS: u8 = 12;
    pub const DATA_MISS_CYC: u8 = 13;
    pub const CYCLES: u8 = 14;
    pub const MISS_PENDING: u8 = 15;
    pub const NACK: u8 = 16;
    /// The commit events counted from `Observation::Retire` ([`super::a2_ops`]).
    pub const BR_COMMIT: u8 = 17;
    pub const BR_TAKEN: u8 = 18;
    pub const LDS: u8 = 19;
    pub const STS: u8 = 20;
    /// The first of them: the A2 events before it come from the core's slow paths and agent.
    pub const RETIRED: u8 = BR_COMMIT;
    /// Committed branches the predictor got wrong (`CoreEvent::BrMispredict`, which the
    /// machine reports after the commit events were numbered).
    pub const BR_MISPRED: u8 = 21;
    pub const COUNT: usize = 22;

    /// The A2 sub-selection of a core event: its number, but `BR_MISPRED` for the last.
    pub const fn of_core(e: machine::probe::CoreEvent) -> u8 {
        match e {
            machine::probe::CoreEvent::BrMispredict => BR_MISPRED,
            e => e as u8,
        }
    }
    /// The core event (its number) A2 sub-selection `sub` counts, if one does.
    pub const fn core_of(sub: u8) -> Option<usize> {
        match sub {
            BR_MISPRED => Some(machine::probe::CoreEvent::BrMispredict as usize),
            s if s < CYCLES => Some(s as usize),
            _ => None,
        }
    }
}

/// The `Op`s whose retirement A2 event `sub` counts (bit `op as usize`; 0 for the events that
/// do not come from retirements). The driver's definitions (`bgpm/docs`, `events.h` 62, 64, 80,
/// 84): `PEVT_XU_BR_COMMIT` every committed branch; `PEVT_XU_BR_TAKEN_COMMIT` the taken ones,
/// unconditional branches among them (always taken); `PEVT_LSU_COMMIT_CACHEABLE_LDS`
/// completed loads, "include larx"; `PEVT_LSU_COMMIT_STS` completed stores, "includes stcx"
/// and cache-inhibited stores. *Difference*: the driver's loads exclude cache-inhibited ones;
/// pmusim retires an uncached load (a UPC register read among them) as a load, so they are
/// counted here (docs/upc.md, "Commit events").
pub const fn a2_ops(sub: u8) -> u64 {
    use machine::cpu::op::Op::*;
    const fn bits(ops: &[machine::cpu::op::Op]) -> u64 {
        let mut m = 0u64;
        let mut i = 0;
        while i < ops.len() {
            m |= 1 << ops[i] as u32;
            i += 1;
        }
        m
    }
    match sub {
        a2::BR_COMMIT => bits(&[BrCondTaken, BrCondNotTaken, BrUncond, BrIndirect]),
        a2::BR_TAKEN => bits(&[BrCondTaken, BrUncond, BrIndirect]),
        a2::LDS => bits(&[Load1, Load2, Load4, Load8, Load16, Load32, Larx]),
        a2::STS => bits(&[Store1, Store2, Store4, Store8, Store16, Store32, Stcx]),
        _ => 0,
    }
}

/// The `Op`s whose retirement the UPC_P event (`group`, `sub`) counts (bit `op as usize`): an
/// opcode group's ([`OP_GROUPS`]) or an A2 commit event's ([`a2_ops`]); 0 for every other
/// event. A counter with a non-zero mask is fed by the retirement path (`Unit::by_op`).
pub const fn op_mask(group: Group, sub: u8) -> u64 {
    match group {
        Group::A2 => a2_ops(sub),
        Group::L1p => 0,
        Group::Opcode if sub == op::FPGRP1 => FPGRP1_OPS,
        Group::Opcode => {
            let mut m = 0u64;
            let mut o = 0;
            while o < OP_GROUPS.len() {
                let g = OP_GROUPS[o];
                if g[0] == sub || g[1] == sub || g[2] == sub {
                    m |= 1 << o;
                }
                o += 1;
            }
            m
        }
    }
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
/// the cycles and two agent events, 17..20 commit events from `Observation::Retire`), group L1P (`Observation::L1p`), and the opcode group
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
    a2(a2::BR_COMMIT, "PEVT_XU_BR_COMMIT", false, true, "Observation::Retire: br-cond-taken, br-cond-not-taken, br-uncond, br-indirect"),
    a2(a2::BR_TAKEN, "PEVT_XU_BR_TAKEN_COMMIT", false, true, "Observation::Retire: br-cond-taken, br-uncond, br-indirect"),
    a2(a2::LDS, "PEVT_LSU_COMMIT_CACHEABLE_LDS", false, true, "Observation::Retire: load1 .. load32, larx (uncached loads among them: pmusim retires them as loads)"),
    a2(a2::STS, "PEVT_LSU_COMMIT_STS", false, true, "Observation::Retire: store1 .. store32, stcx"),
    a2(a2::BR_MISPRED, "PEVT_XU_BR_MISPRED_COMMIT", false, true, "CoreEvent br-mispredict (a core with [cpu.branch_predictor])"),
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
    grp(InstGroup::XuQld),
    grp(InstGroup::XuQst),
    grp(InstGroup::XuBits),
    grp(InstGroup::XuBrc),
    grp(InstGroup::XuBru),
    grp(InstGroup::XuIadd),
    grp(InstGroup::XuIcmp),
    grp(InstGroup::XuIdiv),
    grp(InstGroup::XuIlog),
    grp(InstGroup::XuImov),
    grp(InstGroup::XuImul),
    grp(InstGroup::XuInt),
    grp(InstGroup::XuLd),
    grp(InstGroup::XuLscx),
    grp(InstGroup::XuSt),
    grp(InstGroup::XuSync),
    opc(op::XU_ALL, "PEVT_INST_XU_ALL", "every Op of the integer, load, store and branch classes (the XU decoder's groups)"),
    grp(InstGroup::QfpuFoth),
    grp(InstGroup::QfpuFadd),
    grp(InstGroup::QfpuFcvt),
    grp(InstGroup::QfpuFcmp),
    grp(InstGroup::QfpuFdiv),
    grp(InstGroup::QfpuFma),
    grp(InstGroup::QfpuFmul),
    grp(InstGroup::QfpuFsq),
    grp(InstGroup::QfpuQoth),
    grp(InstGroup::QfpuQadd),
    grp(InstGroup::QfpuQmul),
    grp(InstGroup::QfpuQma),
    opc(op::QFPU_ALL, "PEVT_INST_QFPU_ALL", "every Op of the fp class (fp*, qp*: the AXU decoder's groups)"),
    opc(op::ALL, "PEVT_INST_ALL", "every Op"),
    opc(op::FPGRP1, "PEVT_INST_QFPU_FPGRP1", "Observation::Retire: the Ops of the AXU groups but the moves (every fp and qp op), each counted as its flops (events::flops: the driver's FPScale weights)"),
];

/// The `Op`s `PEVT_INST_QFPU_FPGRP1` counts (bit `op as usize`): those whose group is in the
/// driver's `UPC_P_AXU_OGRP_FPGRP1` mask (every AXU group but the moves; pmusim has no op
/// in the move groups, so every FP op).
pub const FPGRP1_OPS: u64 = {
    use machine::bgq::inst::AXU_FPGRP1;
    let mut m = 0u64;
    let mut i = 0;
    while i < machine::cpu::op::Op::COUNT {
        let g = InstGroup::of(machine::cpu::op::Op::ALL[i]);
        if matches!(g.decoder(), Decoder::Axu) && g.mask() & AXU_FPGRP1 != 0 {
            m |= 1 << i;
        }
        i += 1;
    }
    m
};

/// Floating-point operations per retired `o` in a flop-counting counter
/// (`PEVT_INST_QFPU_FPGRP1`): its group's weight (`InstGroup::flops`, the driver's `FPScale`)
/// with the UPC_P's divide and square-root weights `div`, `sqrt` (log2, `regs::FpWeights`); 0
/// for an op outside `UPC_P_AXU_OGRP_FPGRP1`.
pub const fn flops(o: machine::cpu::op::Op, div: u8, sqrt: u8) -> u64 {
    if FPGRP1_OPS >> o as u32 & 1 == 0 {
        return 0;
    }
    InstGroup::of(o).flops(div, sqrt)
}

/// [`flops`] of every `Op`, by `Op as usize`.
pub fn flops_table(div: u8, sqrt: u8) -> [u8; machine::cpu::op::Op::COUNT] {
    let mut t = [0u8; machine::cpu::op::Op::COUNT];
    for o in machine::cpu::op::Op::ALL {
        t[o as usize] = flops(o, div, sqrt) as u8;
    }
    t
}

/// The flops of the retirements `ops` (by `Op`) with weights `div`, `sqrt`: what
/// `PEVT_INST_QFPU_FPGRP1` counts (the exact count beside a counter's).
pub fn flops_in(ops: &[u64; machine::cpu::op::Op::COUNT], div: u8, sqrt: u8) -> u64 {
    machine::cpu::op::Op::ALL
        .iter()
        .map(|&o| ops[o as usize] * flops(o, div, sqrt))
        .sum()
}

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

/// The event of one decoder group: its name is the chip's (`InstGroup::pevt`), its `Op`s
/// those `InstGroup::of` maps to it (the one table; docs/bgq.md lists it).
const fn grp(g: InstGroup) -> PEvent {
    opc(
        sub_of(g),
        g.pevt(),
        "Observation::Retire: the Ops machine::bgq::inst::InstGroup::of maps to this group",
    )
}

/// The opcode-group sub-selection of decoder group `g`: the driver's order (`events.h`,
/// 214..277 without its match and mask selectors): the 25 XU groups, `PEVT_INST_XU_ALL`, the
/// 21 AXU groups, `PEVT_INST_QFPU_UCODE`, `PEVT_INST_QFPU_ALL`, `PEVT_INST_ALL`. The chip
/// lists its groups in that order too (`InstGroup::ALL`, XU first), so an AXU group's
/// sub-selection is its index plus one (the XU sum between).
pub const fn sub_of(g: InstGroup) -> u8 {
    match g.decoder() {
        Decoder::Xu => g as u8,
        Decoder::Axu => g as u8 + 1,
    }
}

/// Sub-selections of the opcode group (see [`sub_of`]): 50 (seed: "roughly 50 groups of
/// instructions"), of which pmusim's fine instruction classes (`machine::cpu::op::Op`) fill
/// 31; the others are absent ([`absent_opcode`]).
pub mod op {
    use super::sub_of;
    use machine::bgq::inst::InstGroup as G;
    pub const FLD: u8 = sub_of(G::XuFld);
    pub const FST: u8 = sub_of(G::XuFst);
    pub const QLD: u8 = sub_of(G::XuQld);
    pub const QST: u8 = sub_of(G::XuQst);
    pub const BITS: u8 = sub_of(G::XuBits);
    pub const BRC: u8 = sub_of(G::XuBrc);
    pub const BRU: u8 = sub_of(G::XuBru);
    pub const IADD: u8 = sub_of(G::XuIadd);
    pub const ICMP: u8 = sub_of(G::XuIcmp);
    pub const IDIV: u8 = sub_of(G::XuIdiv);
    pub const ILOG: u8 = sub_of(G::XuIlog);
    pub const IMOV: u8 = sub_of(G::XuImov);
    pub const IMUL: u8 = sub_of(G::XuImul);
    pub const INT: u8 = sub_of(G::XuInt);
    pub const LD: u8 = sub_of(G::XuLd);
    pub const LSCX: u8 = sub_of(G::XuLscx);
    pub const ST: u8 = sub_of(G::XuSt);
    pub const SYNC: u8 = sub_of(G::XuSync);
    /// After the 25 XU groups.
    pub const XU_ALL: u8 = 25;
    pub const FOTH: u8 = sub_of(G::QfpuFoth);
    pub const FADD: u8 = sub_of(G::QfpuFadd);
    pub const FCVT: u8 = sub_of(G::QfpuFcvt);
    pub const FCMP: u8 = sub_of(G::QfpuFcmp);
    pub const FDIV: u8 = sub_of(G::QfpuFdiv);
    pub const FMA: u8 = sub_of(G::QfpuFma);
    pub const FMUL: u8 = sub_of(G::QfpuFmul);
    pub const FSQ: u8 = sub_of(G::QfpuFsq);
    pub const QOTH: u8 = sub_of(G::QfpuQoth);
    pub const QADD: u8 = sub_of(G::QfpuQadd);
    pub const QMUL: u8 = sub_of(G::QfpuQmul);
    pub const QMA: u8 = sub_of(G::QfpuQma);
    /// The driver's composite of the microcoded groups (divide, square root): refused.
    pub const UCODE: u8 = 47;
    pub const QFPU_ALL: u8 = 48;
    pub const ALL: u8 = 49;
    /// Sub-selections of the driver's list above (its decoder groups and sums).
    pub const COUNT: usize = 50;
    /// After them, pmusim's number for the driver's `PEVT_INST_QFPU_FPGRP1` (`events.h` 265,
    /// between `QFPU_ALL` and `INST_ALL` there; added after the list so the others keep their
    /// numbers): the AXU groups of `UPC_P_AXU_OGRP_FPGRP1` counted in floating-point operations
    /// (the driver's event source `UPC_ES_OP_FP_OPS`, `OPS_NOT_FLOPS` clear:
    /// `spi/src/upci/punit_config.c`), each instruction weighted ([`super::flops`]).
    pub const FPGRP1: u8 = 50;
}

/// The opcode groups an instruction of class `o` counts in: its own decoder group (the
/// chip's table, `InstGroup::of`), its decoder's sum (`PEVT_INST_XU_ALL` or
/// `PEVT_INST_QFPU_ALL`) and `PEVT_INST_ALL` (docs/upc.md, "Opcode group").
pub const fn op_groups(o: machine::cpu::op::Op) -> [u8; 3] {
    let g = InstGroup::of(o);
    let unit = match g.decoder() {
        Decoder::Xu => op::XU_ALL,
        Decoder::Axu => op::QFPU_ALL,
    };
    [sub_of(g), unit, op::ALL]
}

/// [`op_groups`] of every `Op`, by `Op as usize` (what the probe looks up per `Retire`).
pub const OP_GROUPS: [[u8; 3]; machine::cpu::op::Op::COUNT] = {
    let mut t = [[0u8; 3]; machine::cpu::op::Op::COUNT];
    let mut i = 0;
    while i < t.len() {
        t[i] = op_groups(machine::cpu::op::Op::ALL[i]);
        i += 1;
    }
    t
};

/// The driver's opcode group called `name` (case-insensitive) if pmusim refuses it: a decoder
/// group no `Op` falls in (pmusim has no instruction of its kind, or does not tell it apart: an
/// FP load is a load of its size; `InstGroup::modelled`), or the microcoded composite
/// `PEVT_INST_QFPU_UCODE`. `Bgpm_AddEvent` and configuration files refuse them by name.
pub fn absent_opcode(name: &str) -> Option<&'static str> {
    const UCODE: &str = "PEVT_INST_QFPU_UCODE";
    if UCODE.eq_ignore_ascii_case(name) {
        return Some(UCODE);
    }
    InstGroup::ALL
        .iter()
        .find(|g| g.pevt().eq_ignore_ascii_case(name))
        .filter(|g| !g.modelled())
        .map(|g| g.pevt())
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
