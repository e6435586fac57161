//! Fine instruction classes: what event tables count (issue 14's XU/QPU opcode groups, issue
//! 15's POWER2 FXU/FPU/ICU events and Instruction Match Register).
//!
//! The pipeline model times six coarse [`Class`]es (load, store, taken and not-taken branch,
//! integer, FP; `cpu::pipeline`). Each fine class [`Op`] belongs to one of them, which gives its
//! base timing; a preset may add cycles per fine class (`[cpu.op_extra_cycles]`).
//!
//! *Exact counts at no cost on the hot path*: every class has a default op (`int` retires
//! `IntAdd`, `fp` `Fp`, a taken branch `BrCondTaken`, an 8-byte or smaller `load`/`store`
//! `Load8`/`Store8`). The core counts only the others (`Counters::xops`, bumped by
//! `Ctx::op` and by sized accesses of another size); a default op's count is its class's
//! count less the other ops of that class ([`Counters::ops`]). So the paths that existed
//! before (`int`, `fp`, `load`, ...) do no more work than before.
//!
//! [`Counters::ops`]: super::Counters::ops

use super::pipeline::Ps;

/// Instruction classes of retired instructions (index into `Counters::instr`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Load = 0,
    Store = 1,
    BranchTaken = 2,
    BranchNotTaken = 3,
    Integer = 4,
    Fp = 5,
}

impl Class {
    /// Every class, in index order.
    pub const ALL: [Class; 6] = [
        Class::Load,
        Class::Store,
        Class::BranchTaken,
        Class::BranchNotTaken,
        Class::Integer,
        Class::Fp,
    ];
    pub const NAMES: [&'static str; 6] = [
        "load",
        "store",
        "branch-taken",
        "branch-not-taken",
        "integer",
        "fp",
    ];
    pub(crate) fn ps(self) -> Ps {
        match self {
            Class::Load => Ps::Load,
            Class::Store => Ps::Store,
            Class::BranchTaken => Ps::BranchTaken,
            Class::BranchNotTaken => Ps::BranchNotTaken,
            Class::Integer => Ps::OtherInteger,
            Class::Fp => Ps::OtherFp,
        }
    }
}

macro_rules! ops {
    ($( $(#[$doc:meta])* $v:ident = $name:literal, $class:ident; )*) => {
        /// A fine instruction class. See the module documentation.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u8)]
        pub enum Op {
            $( $(#[$doc])* $v, )*
        }
        impl Op {
            /// Every op, in index order.
            pub const ALL: [Op; Op::COUNT] = [$(Op::$v,)*];
            /// Number of ops.
            pub const COUNT: usize = [$(Op::$v,)*].len();
            /// The op's name in reports, configurations and event tables (kebab case).
            pub const fn name(self) -> &'static str {
                match self { $(Op::$v => $name,)* }
            }
            /// The pipeline class that times the op.
            pub const fn class(self) -> Class {
                match self { $(Op::$v => Class::$class,)* }
            }
        }
    };
}

ops! {
    /// Integer add, subtract, move, load immediate: the integer default.
    IntAdd = "int-add", Integer;
    IntMul = "int-mul", Integer;
    IntDiv = "int-div", Integer;
    /// And, or, xor, nand, ...
    IntLogical = "int-logical", Integer;
    /// Shifts and rotates (with mask).
    IntShift = "int-shift", Integer;
    /// Integer compares (setting a condition field).
    IntCompare = "int-compare", Integer;
    /// Condition-register logic (crand, cror, mcrf, ...).
    CrLogical = "cr-logical", Integer;
    /// Moves to and from special-purpose registers (mtspr, mfspr, mtmsr, ...).
    SprMove = "spr-move", Integer;
    /// Memory barriers (sync, lwsync, msync, isync).
    Sync = "sync", Integer;
    /// Load and reserve (lwarx, ldarx).
    Larx = "larx", Integer;
    /// Store conditional (stwcx., stdcx.).
    Stcx = "stcx", Integer;
    /// System call (sc).
    Syscall = "syscall", Integer;
    Nop = "nop", Integer;
    Load1 = "load1", Load;
    Load2 = "load2", Load;
    Load4 = "load4", Load;
    /// An 8-byte (or unsized) load: the load default.
    Load8 = "load8", Load;
    Load16 = "load16", Load;
    /// A 32-byte quad (QPX) load.
    Load32 = "load32", Load;
    Store1 = "store1", Store;
    Store2 = "store2", Store;
    Store4 = "store4", Store;
    /// An 8-byte (or unsized) store: the store default.
    Store8 = "store8", Store;
    Store16 = "store16", Store;
    /// A 32-byte quad (QPX) store.
    Store32 = "store32", Store;
    /// FP arithmetic of unspecified kind: what `Ctx::fp` retires, the FP default.
    Fp = "fp", Fp;
    FpAdd = "fp-add", Fp;
    FpMul = "fp-mul", Fp;
    /// Fused multiply-add (fmadd, fmsub, fnmadd, fnmsub).
    FpFma = "fp-fma", Fp;
    FpDiv = "fp-div", Fp;
    FpSqrt = "fp-sqrt", Fp;
    FpCompare = "fp-compare", Fp;
    /// FP moves, rounding and conversions (fmr, frsp, fctiw, ...).
    FpConvert = "fp-convert", Fp;
    /// Quad (4-wide) FP add/subtract.
    QpAdd = "qp-add", Fp;
    QpMul = "qp-mul", Fp;
    QpFma = "qp-fma", Fp;
    QpDiv = "qp-div", Fp;
    /// Quad permutes, compares, selects and conversions.
    QpOther = "qp-other", Fp;
    /// A taken conditional branch: the taken-branch default.
    BrCondTaken = "br-cond-taken", BranchTaken;
    /// A conditional branch not taken: the not-taken default.
    BrCondNotTaken = "br-cond-not-taken", BranchNotTaken;
    /// An unconditional direct branch (b, bl).
    BrUncond = "br-uncond", BranchTaken;
    /// A branch through the link or count register (blr, bctr).
    BrIndirect = "br-indirect", BranchTaken;
}

impl Op {
    /// The op the class's plain calls retire (`Ctx::int`, `fp`, `branch`, `load`, `store`).
    pub const fn default_of(c: Class) -> Op {
        match c {
            Class::Load => Op::Load8,
            Class::Store => Op::Store8,
            Class::BranchTaken => Op::BrCondTaken,
            Class::BranchNotTaken => Op::BrCondNotTaken,
            Class::Integer => Op::IntAdd,
            Class::Fp => Op::Fp,
        }
    }

    /// True for the op its class's plain calls retire (not counted in `Counters::xops`).
    #[inline(always)]
    pub const fn is_default(self) -> bool {
        self as u8 == Op::default_of(self.class()) as u8
    }

    /// The op by its name.
    pub fn by_name(name: &str) -> Option<Op> {
        Op::ALL.iter().copied().find(|o| o.name() == name)
    }

    /// The load or store of `size` bytes (sizes other than 1, 2, 4, 16 and 32 count as 8:
    /// the plain access).
    #[inline(always)]
    pub const fn sized(size: u32, write: bool) -> Op {
        match (write, size) {
            (false, 1) => Op::Load1,
            (false, 2) => Op::Load2,
            (false, 4) => Op::Load4,
            (false, 16) => Op::Load16,
            (false, 32) => Op::Load32,
            (false, _) => Op::Load8,
            (true, 1) => Op::Store1,
            (true, 2) => Op::Store2,
            (true, 4) => Op::Store4,
            (true, 16) => Op::Store16,
            (true, 32) => Op::Store32,
            (true, _) => Op::Store8,
        }
    }

    /// The pipeline state that an op's extra cycles (`[cpu.op_extra_cycles]`) are charged to:
    /// FP slips for FP ops, integer slips for the others.
    pub const fn extra_state(self) -> Ps {
        match self.class() {
            Class::Fp => Ps::FpSlip,
            _ => Ps::IntegerSlip,
        }
    }
}

/// What `Ctx::retire_op` charges per instruction of an op beyond its running cycle, worked
/// out once per core (`Timing::op_cost`) so that a block of ops tests no option: its
/// pipeline class's slips (an FP op's, a load's) or killed cycles (a taken branch's), plus
/// its `[cpu.op_extra_cycles]` when they go to the same state (`Op::extra_state`: every class
/// but a taken branch, whose extra cycles are integer slips), all in `ps`.
#[derive(Clone, Copy, Debug)]
pub struct OpCost {
    pub per: u64,
    pub ps: Ps,
    /// `Ctx::retire_op_cold` has more to do: a taken branch's extra cycles, or a wide core's
    /// ALU op (`cpu::wide`; never at `issue_width = 1`).
    pub cold: bool,
}

/// Every op's `OpCost` on a core with these slips and killed cycles per instruction
/// (`fp`, `load`, `taken`: `Timing`'s), the extra cycles `extra`, and an issue width above one
/// or not (`wide`).
pub fn costs(
    fp: u64,
    load: u64,
    taken: u64,
    wide: bool,
    extra: &[u64; Op::COUNT],
) -> [OpCost; Op::COUNT] {
    Op::ALL.map(|op| {
        let class = op.class();
        let (ps, per) = match class {
            Class::Fp => (Ps::FpSlip, fp),
            Class::BranchTaken => (Ps::KilledBranch, taken),
            Class::Load => (Ps::IntegerSlip, load),
            _ => (Ps::IntegerSlip, 0),
        };
        let x = extra[op as usize];
        let merged = ps == op.extra_state();
        let alu = matches!(class, Class::Integer | Class::Fp);
        OpCost {
            per: per + if merged { x } else { 0 },
            ps,
            cold: (wide && alu) || (!merged && x > 0),
        }
    })
}

/// The per-op extra cycles of `[cpu.op_extra_cycles]` (names checked by `Preset::validate`;
/// an unknown one is ignored here).
pub fn extra_cycles(by_name: &std::collections::BTreeMap<String, u32>) -> [u64; Op::COUNT] {
    let mut v = [0; Op::COUNT];
    for (name, &c) in by_name {
        if let Some(o) = Op::by_name(name) {
            v[o as usize] = c as u64;
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn op_costs_merge_slips_and_extra_cycles_of_one_state() {
        let mut extra = [0; Op::COUNT];
        extra[Op::IntMul as usize] = 2;
        extra[Op::FpFma as usize] = 4;
        extra[Op::BrUncond as usize] = 5;
        let c = costs(1, 3, 7, false, &extra);
        let got = |o: Op| (c[o as usize].ps, c[o as usize].per, c[o as usize].cold);
        assert_eq!(got(Op::IntAdd), (Ps::IntegerSlip, 0, false));
        assert_eq!(got(Op::IntMul), (Ps::IntegerSlip, 2, false));
        assert_eq!(got(Op::FpFma), (Ps::FpSlip, 1 + 4, false));
        assert_eq!(got(Op::BrCondTaken), (Ps::KilledBranch, 7, false));
        // A taken branch's extra cycles are integer slips, not killed cycles: the cold path.
        assert_eq!(got(Op::BrUncond), (Ps::KilledBranch, 7, true));
        // A wide core's ALU ops take the cold path (`Core::retire_wide`), its branches not.
        let w = costs(1, 3, 7, true, &extra);
        assert!(w[Op::IntAdd as usize].cold && w[Op::FpFma as usize].cold);
        assert!(!w[Op::BrCondTaken as usize].cold);
    }

    #[test]
    fn names_are_unique_and_round_trip() {
        for (i, o) in Op::ALL.iter().enumerate() {
            assert_eq!(*o as usize, i);
            assert_eq!(Op::by_name(o.name()), Some(*o));
        }
        assert_eq!(Op::COUNT, 42);
        assert_eq!(Op::by_name("fp-fma"), Some(Op::FpFma));
        assert_eq!(Op::by_name("fma"), None);
    }

    #[test]
    fn each_class_has_one_default() {
        for c in [
            Class::Load,
            Class::Store,
            Class::BranchTaken,
            Class::BranchNotTaken,
            Class::Integer,
            Class::Fp,
        ] {
            let d: Vec<Op> = Op::ALL
                .iter()
                .copied()
                .filter(|o| o.class() == c && o.is_default())
                .collect();
            assert_eq!(d, vec![Op::default_of(c)]);
        }
    }

    #[test]
    fn sizes_map_to_their_ops() {
        assert_eq!(Op::sized(1, false), Op::Load1);
        assert_eq!(Op::sized(4, true), Op::Store4);
        assert_eq!(Op::sized(8, false), Op::Load8);
        assert_eq!(Op::sized(3, false), Op::Load8);
        assert_eq!(Op::sized(32, true), Op::Store32);
        assert_eq!(Op::sized(16, false), Op::Load16);
    }
}
