//! Blue Gene/Q's instruction groups (issue 14 item 1): the opcode groups that the A2 core's
//! XU and AXU (QPU) decoders report to the UPC_P, derived from the fine instruction classes
//! `cpu::op::Op` that the core already counts exactly (`Counters::ops`) and reports
//! (`Observation::Retire`). There is no second instruction count: a group's count is the sum
//! of the counts of the ops that [`InstGroup::of`] maps to it.
//!
//! The groups, their order and their mask bits are the driver's (`jedbrown/bgq-driver`,
//! `spi/include/upci/upc_p.h`: `UPC_P_XU_OGRP_*` and `UPC_P_AXU_OGRP_*`, "copied from ... of
//! upc_opcode_grps.xls"; event names from `spi/include/upci/events.h`: `PEVT_INST_XU_*`,
//! `PEVT_INST_QFPU_*`). 25 XU groups and 21 AXU groups: the "about 50 opcode groups".
//! Which op goes to which group is pmusim's mapping (the driver's spreadsheet of opcodes is not
//! public); docs/bgq.md gives the table and the reason for each choice that is not obvious.
//! Groups no op maps to are about instructions pmusim does not distinguish (FP loads apart
//! from integer loads, cache management, TLB management, watch, rounding, estimates): they
//! are listed, with `modelled() == false`, and always count 0.

use crate::cpu::op::Op;

/// Which decoder reports a group: the XU (integer, load/store, branch: every instruction
/// the A2's fixed-point unit completes, FP and quad loads and stores among them) or the AXU
/// (the quad floating-point unit, QFPU: FP and quad FP arithmetic).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decoder {
    Xu,
    Axu,
}

macro_rules! groups {
    ($( $(#[$doc:meta])* $v:ident = $pevt:literal, $dec:ident, $mask:literal; )*) => {
        /// An opcode group of the XU or AXU decoder. See the module documentation.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum InstGroup {
            $( $(#[$doc])* $v, )*
        }
        impl InstGroup {
            /// Every group, XU groups first, each decoder's in the driver's bit order (most
            /// significant mask bit first).
            pub const ALL: [InstGroup; InstGroup::COUNT] = [$(InstGroup::$v,)*];
            pub const COUNT: usize = [$(InstGroup::$v,)*].len();
            /// The driver's event name (`PEVT_INST_XU_*`, `PEVT_INST_QFPU_*`).
            pub const fn pevt(self) -> &'static str {
                match self { $(InstGroup::$v => $pevt,)* }
            }
            /// The decoder that reports the group.
            pub const fn decoder(self) -> Decoder {
                match self { $(InstGroup::$v => Decoder::$dec,)* }
            }
            /// The group's bit in its decoder's opcode-group mask (the driver's
            /// `UPC_P_XU_OGRP_*` or `UPC_P_AXU_OGRP_*` value): what a UPC_P counter's
            /// opcode-group selection ORs together.
            pub const fn mask(self) -> u32 {
                match self { $(InstGroup::$v => $mask,)* }
            }
        }
    };
}

groups! {
    /// Floating-point loads (lfd, lfs, ...): not told apart from integer loads (`Load*`).
    XuFld = "PEVT_INST_XU_FLD", Xu, 0x800_0000;
    /// Floating-point stores: not told apart from integer stores (`Store*`).
    XuFst = "PEVT_INST_XU_FST", Xu, 0x400_0000;
    /// Quad FP loads (qvlfdx, 32 bytes): `Load32`.
    XuQld = "PEVT_INST_XU_QLD", Xu, 0x200_0000;
    /// Quad FP stores: `Store32`.
    XuQst = "PEVT_INST_XU_QST", Xu, 0x100_0000;
    /// Bit manipulation (rotates, shifts, masks): `IntShift`.
    XuBits = "PEVT_INST_XU_BITS", Xu, 0x080_0000;
    /// Conditional branches, taken or not: `BrCondTaken`, `BrCondNotTaken`.
    XuBrc = "PEVT_INST_XU_BRC", Xu, 0x040_0000;
    /// Unconditional branches: `BrUncond`, `BrIndirect`.
    XuBru = "PEVT_INST_XU_BRU", Xu, 0x020_0000;
    /// Cache invalidates (dcbi, icbi): not modelled.
    XuCinv = "PEVT_INST_XU_CINV", Xu, 0x010_0000;
    /// Cache stores (dcbst, dcbf, dcbz): not modelled.
    XuCsto = "PEVT_INST_XU_CSTO", Xu, 0x008_0000;
    /// Cache touches (dcbt, icbt): not modelled.
    XuCtch = "PEVT_INST_XU_CTCH", Xu, 0x004_0000;
    /// Integer arithmetic: `IntAdd` (the integer default: what `Ctx::int` retires).
    XuIadd = "PEVT_INST_XU_IADD", Xu, 0x002_0000;
    /// Compares: `IntCompare`.
    XuIcmp = "PEVT_INST_XU_ICMP", Xu, 0x001_0000;
    /// Coprocessor (icswx): not modelled.
    XuIcsw = "PEVT_INST_XU_ICSW", Xu, 0x000_8000;
    /// Integer divides: `IntDiv`.
    XuIdiv = "PEVT_INST_XU_IDIV", Xu, 0x000_4000;
    /// Logical: `IntLogical`, `CrLogical`, `Nop` (ori 0,0,0).
    XuIlog = "PEVT_INST_XU_ILOG", Xu, 0x000_2000;
    /// Quick register moves: `SprMove`.
    XuImov = "PEVT_INST_XU_IMOV", Xu, 0x000_1000;
    /// Integer multiplies: `IntMul`.
    XuImul = "PEVT_INST_XU_IMUL", Xu, 0x000_0800;
    /// Interrupts and system calls: `Syscall`.
    XuInt = "PEVT_INST_XU_INT", Xu, 0x000_0400;
    /// Loads: `Load1` to `Load16` (FP loads among them, see `XuFld`).
    XuLd = "PEVT_INST_XU_LD", Xu, 0x000_0200;
    /// Load and reserve, store conditional: `Larx`, `Stcx`.
    XuLscx = "PEVT_INST_XU_LSCX", Xu, 0x000_0100;
    /// Stores: `Store1` to `Store16`.
    XuSt = "PEVT_INST_XU_ST", Xu, 0x000_0080;
    /// Context synchronization (sync, isync, msync): `Sync`.
    XuSync = "PEVT_INST_XU_SYNC", Xu, 0x000_0040;
    /// Other TLB management: not modelled.
    XuTlb = "PEVT_INST_XU_TLB", Xu, 0x000_0020;
    /// TLB invalidates: not modelled.
    XuTlbi = "PEVT_INST_XU_TLBI", Xu, 0x000_0010;
    /// Watch instructions (wchkall, wclr): not modelled.
    XuWch = "PEVT_INST_XU_WCH", Xu, 0x000_0008;
    /// Other FP arithmetic: `Fp` (the FP default: what `Ctx::fp` retires, its kind
    /// unspecified).
    QfpuFoth = "PEVT_INST_QFPU_FOTH", Axu, 0x20_0000;
    /// FP reciprocal estimates: not modelled.
    QfpuFres = "PEVT_INST_QFPU_FRES", Axu, 0x10_0000;
    QfpuFadd = "PEVT_INST_QFPU_FADD", Axu, 0x08_0000;
    /// FP conversions: `FpConvert` (moves and rounding included, see `QfpuFmov`).
    QfpuFcvt = "PEVT_INST_QFPU_FCVT", Axu, 0x04_0000;
    QfpuFcmp = "PEVT_INST_QFPU_FCMP", Axu, 0x02_0000;
    /// FP divides (microcoded on the A2: `PEVT_INST_QFPU_UCODE` is this group with `QfpuFsq`).
    QfpuFdiv = "PEVT_INST_QFPU_FDIV", Axu, 0x01_0000;
    /// FP moves: not told apart from conversions (`FpConvert`).
    QfpuFmov = "PEVT_INST_QFPU_FMOV", Axu, 0x00_8000;
    QfpuFma = "PEVT_INST_QFPU_FMA", Axu, 0x00_4000;
    QfpuFmul = "PEVT_INST_QFPU_FMUL", Axu, 0x00_2000;
    /// FP rounding: not told apart from conversions.
    QfpuFrnd = "PEVT_INST_QFPU_FRND", Axu, 0x00_1000;
    /// FP square-root estimates: not modelled.
    QfpuFsqe = "PEVT_INST_QFPU_FSQE", Axu, 0x00_0800;
    /// FP square roots: `FpSqrt`.
    QfpuFsq = "PEVT_INST_QFPU_FSQ", Axu, 0x00_0400;
    /// Quad moves: not told apart from the other quad ops (`QpOther`).
    QfpuQmov = "PEVT_INST_QFPU_QMOV", Axu, 0x00_0200;
    /// Other quad ops: `QpOther` (permutes, compares, selects, conversions) and `QpDiv`
    /// (QPX has no quad divide instruction: a quad divide is a sequence, counted here).
    QfpuQoth = "PEVT_INST_QFPU_QOTH", Axu, 0x00_0100;
    QfpuQadd = "PEVT_INST_QFPU_QADD", Axu, 0x00_0080;
    QfpuQmul = "PEVT_INST_QFPU_QMUL", Axu, 0x00_0040;
    /// Quad reciprocal estimates: not modelled.
    QfpuQres = "PEVT_INST_QFPU_QRES", Axu, 0x00_0020;
    /// Quad multiply-adds: `QpFma`.
    QfpuQma = "PEVT_INST_QFPU_QMA", Axu, 0x00_0010;
    /// Quad rounding: not modelled.
    QfpuQrnd = "PEVT_INST_QFPU_QRND", Axu, 0x00_0008;
    /// Quad conversions: not told apart (`QpOther`).
    QfpuQcvt = "PEVT_INST_QFPU_QCVT", Axu, 0x00_0004;
    /// Quad compares: not told apart (`QpOther`).
    QfpuQcmp = "PEVT_INST_QFPU_QCMP", Axu, 0x00_0002;
}

/// The driver's `UPC_P_XU_OGRP_ALL`: every XU group's bit.
pub const XU_ALL: u32 = 0xFFF_FFF8;
/// The driver's `UPC_P_AXU_OGRP_ALL`: every AXU group's bit.
pub const AXU_ALL: u32 = 0x3F_FFFE;
/// The driver's `UPC_P_AXU_OGRP_UCODE`: the microcoded AXU groups (divide, square root).
pub const AXU_UCODE: u32 = 0x01_0400;

/// The driver's `UPC_P_AXU_OGRP_FPGRP1` (`spi/include/upci/upc_p.h`): every AXU group but the
/// moves (`FMOV`, `QMOV`), the groups `PEVT_INST_QFPU_FPGRP1` (PAPI's `PAPI_FP_OPS`) weights
/// by floating-point operations.
pub const AXU_FPGRP1: u32 = 0x3F_7DFE;

/// The UPC_P's default square-root and divide weights (log2 of the flops per instruction): 3,
/// 8 flops, as the driver configures every UPC_P (`spi/include/upci/punit_config.h`,
/// `Upci_Punit_Cfg_Init`: `DIV_WEIGHT_set(3)`, `SQRT_WEIGHT_set(3)`, "8 flops/op").
pub const DEFAULT_FP_SCALE: u8 = 3;

impl InstGroup {
    /// Floating-point operations per instruction of an AXU group when a UPC_P counter counts
    /// flops (`OPS_NOT_FLOPS` clear; the driver's `UPC_ES_OP_FP_OPS`): the hardware's
    /// weights, the `FPScale` column of the driver's opcode table
    /// (`bgpm/docs/tables/Instr-Map-QPU.html`): 1 for a scalar instruction, 2 for a scalar
    /// multiply-add, 4 for a quad one, 8 for a quad multiply-add. Divides and square roots are
    /// microcoded and weighted by the UPC_P's configurable `DIV_WEIGHT` and `SQRT_WEIGHT`
    /// (`hwi/include/bqc/upc_p_hw.h`: 0..3 give 1, 2, 4 or 8 flops per scalar divide or square
    /// root), `div` and `sqrt` here (log2). XU groups: 0 (the flop count selects AXU groups).
    pub const fn flops(self, div: u8, sqrt: u8) -> u64 {
        use InstGroup::*;
        match self {
            QfpuFdiv => 1 << (div & 3),
            QfpuFsq => 1 << (sqrt & 3),
            QfpuFma => 2,
            QfpuQoth | QfpuQadd | QfpuQmul | QfpuQres | QfpuQrnd | QfpuQcvt | QfpuQcmp => 4,
            QfpuQma => 8,
            g => match g.decoder() {
                Decoder::Axu => 1,
                Decoder::Xu => 0,
            },
        }
    }

    /// The group an op's instructions are counted in (the table in docs/bgq.md).
    pub const fn of(op: Op) -> InstGroup {
        use InstGroup::*;
        match op {
            Op::IntAdd => XuIadd,
            Op::IntMul => XuImul,
            Op::IntDiv => XuIdiv,
            Op::IntLogical | Op::CrLogical | Op::Nop => XuIlog,
            Op::IntShift => XuBits,
            Op::IntCompare => XuIcmp,
            Op::SprMove => XuImov,
            Op::Sync => XuSync,
            Op::Larx | Op::Stcx => XuLscx,
            Op::Syscall => XuInt,
            Op::Load1 | Op::Load2 | Op::Load4 | Op::Load8 | Op::Load16 => XuLd,
            Op::Load32 => XuQld,
            Op::Store1 | Op::Store2 | Op::Store4 | Op::Store8 | Op::Store16 => XuSt,
            Op::Store32 => XuQst,
            Op::Fp => QfpuFoth,
            Op::FpAdd => QfpuFadd,
            Op::FpMul => QfpuFmul,
            Op::FpFma => QfpuFma,
            Op::FpDiv => QfpuFdiv,
            Op::FpSqrt => QfpuFsq,
            Op::FpCompare => QfpuFcmp,
            Op::FpConvert => QfpuFcvt,
            Op::QpAdd => QfpuQadd,
            Op::QpMul => QfpuQmul,
            Op::QpFma => QfpuQma,
            Op::QpDiv | Op::QpOther => QfpuQoth,
            Op::BrCondTaken | Op::BrCondNotTaken => XuBrc,
            Op::BrUncond | Op::BrIndirect => XuBru,
        }
    }

    /// Some op maps to the group (the others always count 0).
    pub fn modelled(self) -> bool {
        Op::ALL.iter().any(|&o| InstGroup::of(o) == self)
    }

    /// The group by its driver name.
    pub fn by_pevt(name: &str) -> Option<InstGroup> {
        InstGroup::ALL.iter().copied().find(|g| g.pevt() == name)
    }

    /// Exact counts by group from exact counts by op (`Counters::ops`, or the sum of
    /// `Observation::Retire` reports).
    pub fn counts(ops: &[u64; Op::COUNT]) -> [u64; InstGroup::COUNT] {
        let mut g = [0u64; InstGroup::COUNT];
        for op in Op::ALL {
            g[InstGroup::of(op) as usize] += ops[op as usize];
        }
        g
    }

    /// What a counter selecting the groups of `mask` on `decoder` counts (the driver's
    /// `PEVT_INST_XU_GRP_MASK` / `PEVT_INST_QFPU_GRP_MASK` with a mask; `XU_ALL`, `AXU_ALL`
    /// give `PEVT_INST_XU_ALL`, `PEVT_INST_QFPU_ALL`; both summed, `PEVT_INST_ALL`).
    pub fn masked(groups: &[u64; InstGroup::COUNT], decoder: Decoder, mask: u32) -> u64 {
        InstGroup::ALL
            .iter()
            .filter(|g| g.decoder() == decoder && g.mask() & mask != 0)
            .map(|&g| groups[g as usize])
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::op::Class;

    /// The driver's group list: 25 XU and 21 AXU groups, one mask bit each, distinct, and
    /// together exactly its `_ALL` masks; the microcoded set is divide and square root.
    #[test]
    fn groups_and_masks_are_the_drivers() {
        let n = |d| InstGroup::ALL.iter().filter(|g| g.decoder() == d).count();
        assert_eq!((n(Decoder::Xu), n(Decoder::Axu)), (25, 21));
        for d in [Decoder::Xu, Decoder::Axu] {
            let mut or = 0u32;
            for g in InstGroup::ALL.iter().filter(|g| g.decoder() == d) {
                assert_eq!(g.mask().count_ones(), 1, "{g:?}");
                assert_eq!(or & g.mask(), 0, "{g:?} shares a bit");
                or |= g.mask();
            }
            let all = if d == Decoder::Xu { XU_ALL } else { AXU_ALL };
            assert_eq!(or, all, "{d:?}");
        }
        assert_eq!(
            AXU_UCODE,
            InstGroup::QfpuFdiv.mask() | InstGroup::QfpuFsq.mask()
        );
        assert_eq!(
            InstGroup::by_pevt("PEVT_INST_XU_LSCX"),
            Some(InstGroup::XuLscx)
        );
        assert_eq!(InstGroup::XuFld.mask(), 0x800_0000); // UPC_P_XU_OGRP_FLD
        assert_eq!(InstGroup::QfpuQcmp.mask(), 0x2); // UPC_P_AXU_OGRP_QCMP
    }

    /// The flop weights are the driver's `FPScale` column (`bgpm/docs/tables/
    /// Instr-Map-QPU.html`), group by group: every AXU group's instructions share one weight,
    /// divides and square roots follow the UPC_P's weights (0..3: 1..8 flops); FPGRP1 is every
    /// AXU group but the two move groups.
    #[test]
    fn flop_weights_are_the_drivers() {
        use InstGroup::*;
        let table: [(InstGroup, u64); 19] = [
            (QfpuFoth, 1),
            (QfpuFres, 1),
            (QfpuFadd, 1),
            (QfpuFcvt, 1),
            (QfpuFcmp, 1),
            (QfpuFmov, 1),
            (QfpuFma, 2),
            (QfpuFmul, 1),
            (QfpuFrnd, 1),
            (QfpuFsqe, 1),
            (QfpuQmov, 1),
            (QfpuQoth, 4),
            (QfpuQadd, 4),
            (QfpuQmul, 4),
            (QfpuQres, 4),
            (QfpuQma, 8),
            (QfpuQrnd, 4),
            (QfpuQcvt, 4),
            (QfpuQcmp, 4),
        ];
        for (g, w) in table {
            assert_eq!(g.flops(0, 0), w, "{g:?}");
            assert_eq!(g.flops(3, 3), w, "{g:?}");
        }
        for k in 0..4 {
            assert_eq!(QfpuFdiv.flops(k, 0), 1 << k);
            assert_eq!(QfpuFsq.flops(0, k), 1 << k);
        }
        assert_eq!(QfpuFdiv.flops(DEFAULT_FP_SCALE, 0), 8);
        assert_eq!(XuLd.flops(3, 3), 0);
        assert_eq!(AXU_FPGRP1, AXU_ALL & !(QfpuFmov.mask() | QfpuQmov.mask()));
    }

    /// Every op lands in a group of the decoder that handles it on the A2: loads, stores,
    /// branches and integer ops in the XU (quad loads and stores too), FP and quad
    /// arithmetic in the AXU.
    #[test]
    fn ops_go_to_their_decoder() {
        for op in Op::ALL {
            let want = match op.class() {
                Class::Fp => Decoder::Axu,
                _ => Decoder::Xu,
            };
            assert_eq!(InstGroup::of(op).decoder(), want, "{op:?}");
        }
        let modelled = InstGroup::ALL.iter().filter(|g| g.modelled()).count();
        assert_eq!(modelled, 28);
    }

    /// Counts by group: every op's count lands once, so XU_ALL + AXU_ALL = every
    /// instruction, and a mask selects exactly its groups.
    #[test]
    fn counts_by_group_sum_to_the_instructions() {
        let mut ops = [0u64; Op::COUNT];
        for (i, o) in Op::ALL.iter().enumerate() {
            ops[*o as usize] = 1 + i as u64;
        }
        let g = InstGroup::counts(&ops);
        let total: u64 = ops.iter().sum();
        let xu = InstGroup::masked(&g, Decoder::Xu, XU_ALL);
        let axu = InstGroup::masked(&g, Decoder::Axu, AXU_ALL);
        assert_eq!(xu + axu, total);
        let fp: u64 = Op::ALL
            .iter()
            .filter(|o| o.class() == Class::Fp)
            .map(|&o| ops[o as usize])
            .sum();
        assert_eq!(axu, fp);
        let lscx = ops[Op::Larx as usize] + ops[Op::Stcx as usize];
        assert_eq!(g[InstGroup::XuLscx as usize], lscx);
        let ucode = ops[Op::FpDiv as usize] + ops[Op::FpSqrt as usize];
        assert_eq!(InstGroup::masked(&g, Decoder::Axu, AXU_UCODE), ucode);
        assert_eq!(g[InstGroup::XuCtch as usize], 0);
    }
}
