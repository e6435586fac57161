//! What the POWER2 monitor can count: the signals of the core model (`Sig`) and the event table
//! (16 groups of 5 events per unit) that the MMCR's 4-bit group selects choose from.
//!
//! The seed's figures with the real event groups were lost (issue 15), so the table is pmusim's
//! own, built on what the core model produces and keeping the positions that PAPI's POWER2
//! Super Chip port (`src/aix-p2sc.c` in `icl-utk-edu/papi`) gave its presets: counter numbers
//! 0 (cycles) and 1 (instructions) are shared by every group, a unit's own five counters are
//! numbered 2 to 6, and a preset is (unit, group, counter number). `docs/power2.md` prints the
//! whole table.

use machine::cpu::Class;
use machine::cpu::Counters;

/// A unit of the POWER2 MCM that has five counters and a 4-bit group select, in MMCR order
/// (PAPI's `stuff_mmcr`: FPU at bits 0-3, FXU 4-7, ICU 8-11, SCU 12-15).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Unit {
    Fpu = 0,
    Fxu = 1,
    Icu = 2,
    Scu = 3,
}

impl Unit {
    pub const ALL: [Unit; 4] = [Unit::Fpu, Unit::Fxu, Unit::Icu, Unit::Scu];
    pub fn name(self) -> &'static str {
        match self {
            Unit::Fpu => "FPU",
            Unit::Fxu => "FXU",
            Unit::Icu => "ICU",
            Unit::Scu => "SCU",
        }
    }
    pub fn parse(s: &str) -> Option<Unit> {
        Unit::ALL
            .into_iter()
            .find(|u| u.name().eq_ignore_ascii_case(s))
    }
    /// The lowest bit of the unit's group select in the MMCR.
    pub fn shift(self) -> u32 {
        4 * self as u32
    }
}

/// Number of counters: the shared cycle and instruction counters, then five per unit.
pub const COUNTERS: usize = 22;

/// The global index (0..22) of a unit's counter number `num` (2..=6, PAPI's numbering).
pub fn counter_index(u: Unit, num: usize) -> usize {
    debug_assert!((2..=6).contains(&num));
    2 + 5 * u as usize + (num - 2)
}

/// (unit, counter number 2..=6) of global counter `i` >= 2.
pub fn counter_of(i: usize) -> Option<(Unit, usize)> {
    if !(2..COUNTERS).contains(&i) {
        return None;
    }
    Some((Unit::ALL[(i - 2) / 5], (i - 2) % 5 + 2))
}

/// A signal of the core model: a dense index (`Sig::COUNT` of them), so that the counters
/// selecting a signal are one bit mask per signal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Sig(pub u16);

impl Sig {
    /// Processor cycles (every cycle, running or not).
    pub const CYCLES: Sig = Sig(0);
    /// Instructions completed (every class).
    pub const INSTR: Sig = Sig(1);
    /// Instructions of `Class` c: `Sig(2 + c)`.
    pub const fn class(c: Class) -> Sig {
        Sig(2 + c as u16)
    }
    /// Cycles in pipeline state `ps` (`cpu::pipeline::Ps` code 1..=15): `Sig(7 + code)`.
    pub const fn ps(code: u8) -> Sig {
        Sig(7 + code as u16)
    }
    /// Data references that missed the L1 D (each `L2Access` of a data reference).
    pub const L1D_MISS: Sig = Sig(23);
    pub const L1D_MISS_READ: Sig = Sig(24);
    pub const L1D_MISS_WRITE: Sig = Sig(25);
    /// Instruction fetches that missed the L1 I.
    pub const L1I_MISS: Sig = Sig(26);
    pub const DTLB_MISS: Sig = Sig(27);
    pub const ITLB_MISS: Sig = Sig(28);
    /// L1 misses the last private level could not serve: a memory transaction (read,
    /// read-exclusive or upgrade) leaves the SCU.
    pub const MEM_TX: Sig = Sig(29);
    pub const TX_READ: Sig = Sig(30);
    pub const TX_READ_EX: Sig = Sig(31);
    pub const TX_UPGRADE: Sig = Sig(32);
    pub const TX_WRITEBACK: Sig = Sig(33);
    /// Processor cycles from a transaction's first issue to its data (summed over line
    /// transactions: the SCU's "miss latency" count).
    pub const MISS_CYCLES: Sig = Sig(34);
    /// Fixed-point-unit instructions (integer, loads and stores) dispatched to pipe 0 / pipe 1.
    pub const FXU0: Sig = Sig(35);
    pub const FXU1: Sig = Sig(36);
    /// Floating-point instructions dispatched to pipe 0 / pipe 1.
    pub const FPU0: Sig = Sig(37);
    pub const FPU1: Sig = Sig(38);
    /// Branches (taken and not taken).
    pub const BRANCHES: Sig = Sig(39);
    /// Cycles with the Software Programmable Event bit set.
    pub const SPE_CYCLES: Sig = Sig(40);
    /// Instructions matching the Instruction Match Register.
    pub const IMR_MATCH: Sig = Sig(41);
    /// Instructions executed by the fixed-point unit (integer, loads, stores).
    pub const FXU_INSTR: Sig = Sig(42);
    /// Cycles in which no instruction completed (stalls, slips, killed cycles).
    pub const IDLE_CYCLES: Sig = Sig(43);
    /// Loads and stores.
    pub const MEM_INSTR: Sig = Sig(44);
    /// Cycles of data-cache miss stalls (primary D, secondary, memory-system stalls).
    pub const DMISS_CYCLES: Sig = Sig(45);
    pub const COUNT: usize = 46;

    /// The signal's name in configurations and reports.
    pub fn name(self) -> &'static str {
        NAMES[self.0 as usize]
    }
    pub fn parse(s: &str) -> Option<Sig> {
        NAMES.iter().position(|n| *n == s).map(|i| Sig(i as u16))
    }
    /// What the signal is, against the core model.
    pub fn doc(self) -> &'static str {
        DOCS[self.0 as usize]
    }

    /// [`Sig::exact`], with the Instruction Match Register's signal counted as the exact
    /// number of retired instructions whose opcode group `imr` matches.
    pub fn exact_with_imr(self, imr: super::regs::Imr, c: &Counters) -> Option<u64> {
        if self == Sig::IMR_MATCH {
            let ops = c.ops();
            Some(
                (0..ops.len())
                    .filter(|&k| imr.matches(k as u8))
                    .map(|k| ops[k])
                    .sum(),
            )
        } else {
            self.exact(c)
        }
    }

    /// The exact count of this signal on one core, from the machine's own counters (the ground
    /// truth), when the core model keeps one.
    pub fn exact(self, c: &Counters) -> Option<u64> {
        let i = self.0 as usize;
        let fxu = c.instr[Class::Integer as usize]
            + c.instr[Class::Load as usize]
            + c.instr[Class::Store as usize];
        let fp = c.instr[Class::Fp as usize];
        Some(match self {
            Sig::CYCLES => c.cycles(),
            Sig::INSTR => c.instructions(),
            _ if (2..8).contains(&i) => c.instr[i - 2],
            _ if (8..23).contains(&i) => c.ps[i - 7],
            Sig::L1D_MISS => c.l1d_misses,
            Sig::L1I_MISS => c.l1i_misses,
            Sig::DTLB_MISS => c.dtlb_misses,
            Sig::ITLB_MISS => c.itlb_misses,
            Sig::MEM_TX => c.l2_misses,
            Sig::FXU0 => fxu.div_ceil(2),
            Sig::FXU1 => fxu / 2,
            Sig::FPU0 => fp.div_ceil(2),
            Sig::FPU1 => fp / 2,
            Sig::BRANCHES => {
                c.instr[Class::BranchTaken as usize] + c.instr[Class::BranchNotTaken as usize]
            }
            Sig::FXU_INSTR => fxu,
            Sig::IDLE_CYCLES => {
                c.cycles()
                    - machine::cpu::pipeline::Ps::ALL
                        .iter()
                        .filter(|p| p.running())
                        .map(|p| c.ps[p.code() as usize])
                        .sum::<u64>()
            }
            Sig::MEM_INSTR => c.instr[Class::Load as usize] + c.instr[Class::Store as usize],
            Sig::DMISS_CYCLES => dmiss_cycles(&c.ps),
            _ => return None,
        })
    }
}

/// The pipeline states whose cycles `Sig::DMISS_CYCLES` counts.
pub const DMISS_STATES: [u8; 3] = [15, 13, 11];

fn dmiss_cycles(ps: &[u64; 16]) -> u64 {
    DMISS_STATES.iter().map(|&k| ps[k as usize]).sum()
}

const NAMES: [&str; Sig::COUNT] = [
    "cycles",
    "instructions",
    "load",
    "store",
    "branch-taken",
    "branch-not-taken",
    "integer",
    "fp",
    "cyc-load",
    "cyc-store",
    "cyc-branch-taken",
    "cyc-branch-not-taken",
    "cyc-other-integer",
    "cyc-other-fp",
    "cyc-integer-slip",
    "cyc-fp-slip",
    "cyc-killed-exception",
    "cyc-killed-branch",
    "cyc-memory-stall",
    "cyc-other-stall",
    "cyc-secondary-stall",
    "cyc-icache-stall",
    "cyc-dcache-stall",
    "l1d-miss",
    "l1d-miss-read",
    "l1d-miss-write",
    "l1i-miss",
    "dtlb-miss",
    "itlb-miss",
    "mem-transaction",
    "tx-read",
    "tx-read-exclusive",
    "tx-upgrade",
    "tx-writeback",
    "miss-latency-cycles",
    "fxu0-instr",
    "fxu1-instr",
    "fpu0-instr",
    "fpu1-instr",
    "branches",
    "spe-cycles",
    "imr-match",
    "fxu-instr",
    "idle-cycles",
    "load-store",
    "dmiss-stall-cycles",
];

const DOCS: [&str; Sig::COUNT] = [
    "processor cycles",
    "instructions completed",
    "load instructions completed",
    "store instructions completed",
    "taken branches completed",
    "not-taken branches completed",
    "other integer instructions completed",
    "floating-point instructions completed",
    "cycles completing a load",
    "cycles completing a store",
    "cycles completing a taken branch",
    "cycles completing a not-taken branch",
    "cycles completing another integer instruction",
    "cycles completing an FP instruction",
    "integer slip cycles (load-use)",
    "FP slip cycles",
    "cycles killed by an exception (interrupt, TLB reload)",
    "cycles killed by a taken branch",
    "cycles waiting for the memory system",
    "other stalls (programmed I/O, sleeps, switches)",
    "cycles checking the last private level before a transaction",
    "instruction-cache miss stall cycles",
    "data-cache miss stall cycles served by the last private level",
    "data references missing the L1 D",
    "loads missing the L1 D",
    "stores missing the L1 D",
    "instruction fetches missing the L1 I",
    "data TLB reloads",
    "instruction TLB reloads",
    "line transactions issued to memory (reads, read-exclusives, upgrades)",
    "read transactions issued",
    "read-exclusive transactions issued",
    "upgrade transactions issued",
    "write-backs of dirty lines",
    "cycles from first issue to data, summed over line transactions",
    "FXU instructions dispatched to fixed-point pipe 0",
    "FXU instructions dispatched to fixed-point pipe 1",
    "FP instructions dispatched to FP pipe 0",
    "FP instructions dispatched to FP pipe 1",
    "branches completed (taken and not taken)",
    "cycles with the Software Programmable Event bit set",
    "instructions matching the Instruction Match Register",
    "instructions executed by the FXU (integer, loads, stores)",
    "cycles without a completing instruction",
    "loads and stores completed",
    "data-miss stall cycles (L1 D, last-level check, memory system)",
];

/// One group of a unit: the signals of its counter numbers 2 to 6.
pub type Group = [Sig; 5];

/// The event table: `TABLE[unit][group]`. Groups 0 to 3 of every unit hold only signals with
/// an exact count in the core model (`Sig::exact`), the ones the tests compare, and none of
/// the per-pipe signals (whose split depends on the dispatch history, not on a thread's own
/// counts alone).
pub const TABLE: [[Group; 16]; 4] = [FPU, FXU, ICU, SCU];

use Sig as S;

const fn cs(code: u8) -> Sig {
    Sig::ps(code)
}

#[rustfmt::skip]
const FPU: [Group; 16] = [
    // 0: FP instructions (PAPI_FP_INS at counter 2), FP-completing cycles, FP slips, idle and
    // data-miss stall cycles.
    [S::class(Class::Fp), cs(6), cs(8), S::IDLE_CYCLES, S::DMISS_CYCLES],
    [S::class(Class::Fp), S::INSTR, S::CYCLES, S::class(Class::Load), S::class(Class::Store)],
    [S::class(Class::Fp), S::class(Class::Load), S::class(Class::Store), cs(6), cs(8)],
    [S::class(Class::Fp), S::IDLE_CYCLES, S::DMISS_CYCLES, S::L1D_MISS, S::DTLB_MISS],
    [S::class(Class::Fp), S::FPU0, S::FPU1, S::L1D_MISS, S::DTLB_MISS],
    [S::class(Class::Fp), S::cs_fp_slip(), S::IMR_MATCH, S::SPE_CYCLES, S::IDLE_CYCLES],
    [S::FPU0, S::FPU1, S::MEM_INSTR, S::L1D_MISS_READ, S::L1D_MISS_WRITE],
    [S::class(Class::Fp), S::class(Class::Integer), S::BRANCHES, S::MEM_INSTR, S::IDLE_CYCLES],
    [S::FPU0, S::FPU1, S::cs_fp_slip(), S::DMISS_CYCLES, S::MISS_CYCLES],
    [S::class(Class::Fp), S::FPU0, S::FPU1, S::cs_fp_slip(), S::CYCLES],
    [S::class(Class::Fp), S::FPU0, S::FPU1, S::cs_fp_slip(), S::INSTR],
    [S::FPU0, S::FPU1, S::class(Class::Fp), S::MEM_TX, S::MISS_CYCLES],
    [S::class(Class::Fp), S::class(Class::Load), S::class(Class::Store), S::L1D_MISS, S::MEM_TX],
    [S::FPU0, S::FPU1, S::SPE_CYCLES, S::IMR_MATCH, S::INSTR],
    [S::class(Class::Fp), S::IDLE_CYCLES, S::DMISS_CYCLES, S::cs_fp_slip(), S::cs_dcache()],
    [S::FPU0, S::FPU1, S::class(Class::Fp), S::CYCLES, S::INSTR],
];

#[rustfmt::skip]
const FXU: [Group; 16] = [
    // 0: PAPI_INT_INS at 2, PAPI_L1_DCM at 4, PAPI_TLB_TL at 5 (the data TLB: see docs).
    [S::class(Class::Integer), S::FXU_INSTR, S::L1D_MISS, S::DTLB_MISS, S::MEM_INSTR],
    [S::FXU_INSTR, S::class(Class::Integer), cs(7), S::MEM_INSTR, S::cs_killed_exception()],
    [S::class(Class::Load), S::class(Class::Store), S::L1D_MISS, S::MEM_TX, S::DMISS_CYCLES],
    [S::FXU_INSTR, S::MEM_INSTR, S::cs_dcache(), S::cs_memory(), S::cs_other_stall()],
    [S::SPE_CYCLES, S::IMR_MATCH, S::FXU_INSTR, S::L1D_MISS, S::DTLB_MISS],
    [S::IMR_MATCH, S::FXU0, S::FXU1, S::SPE_CYCLES, S::MEM_INSTR],
    // 6: PAPI_LD_INS at 3, PAPI_SR_INS at 5.
    [S::FXU_INSTR, S::class(Class::Load), S::L1D_MISS_READ, S::class(Class::Store), S::L1D_MISS_WRITE],
    [S::SPE_CYCLES, S::FXU_INSTR, S::class(Class::Integer), S::class(Class::Load), S::class(Class::Store)],
    [S::L1D_MISS, S::L1D_MISS_READ, S::L1D_MISS_WRITE, S::DTLB_MISS, S::DMISS_CYCLES],
    [S::IMR_MATCH, S::INSTR, S::FXU_INSTR, S::SPE_CYCLES, S::CYCLES],
    [S::FXU0, S::FXU1, S::MEM_INSTR, S::L1D_MISS, S::cs_dcache()],
    [S::class(Class::Integer), cs(7), S::cs_killed_exception(), S::DTLB_MISS, S::SPE_CYCLES],
    [S::FXU_INSTR, S::MEM_TX, S::TX_READ, S::TX_READ_EX, S::TX_UPGRADE],
    [S::IMR_MATCH, S::class(Class::Load), S::class(Class::Store), S::class(Class::Integer), S::FXU_INSTR],
    [S::SPE_CYCLES, S::IDLE_CYCLES, S::DMISS_CYCLES, S::cs_other_stall(), S::cs_killed_exception()],
    [S::FXU0, S::FXU1, S::IMR_MATCH, S::SPE_CYCLES, S::FXU_INSTR],
];

#[rustfmt::skip]
const ICU: [Group; 16] = [
    // 0: PAPI_L1_ICM at 2, PAPI_TLB_IM at 6.
    [S::L1I_MISS, S::BRANCHES, S::cs_icache(), S::class(Class::BranchTaken), S::ITLB_MISS],
    [S::BRANCHES, S::class(Class::BranchTaken), S::class(Class::BranchNotTaken), cs(3), cs(4)],
    [S::L1I_MISS, S::cs_icache(), S::ITLB_MISS, S::cs_killed_branch(), S::IDLE_CYCLES],
    // 3: PAPI_BR_INS at 2, PAPI_BR_CN at 4, PAPI_BR_TKN at 6 (PAPI_BR_NTK: 5 here, derived 4-6 in PAPI).
    [S::BRANCHES, S::cs_killed_branch(), S::BRANCHES, S::class(Class::BranchNotTaken), S::class(Class::BranchTaken)],
    // 4: PAPI_BR_UCN at 6 (no unconditional branch class before `Op`: taken branches).
    [S::L1I_MISS, S::ITLB_MISS, S::BRANCHES, S::class(Class::BranchNotTaken), S::class(Class::BranchTaken)],
    [S::INSTR, S::class(Class::Integer), S::class(Class::Fp), S::MEM_INSTR, S::BRANCHES],
    [S::cs_icache(), S::cs_killed_branch(), S::cs_killed_exception(), S::IDLE_CYCLES, S::CYCLES],
    [S::L1I_MISS, S::MEM_TX, S::MISS_CYCLES, S::ITLB_MISS, S::cs_icache()],
    [S::BRANCHES, S::class(Class::BranchTaken), S::class(Class::BranchNotTaken), S::L1I_MISS, S::ITLB_MISS],
    [S::FXU_INSTR, S::class(Class::Fp), S::BRANCHES, S::INSTR, S::CYCLES],
    [S::class(Class::BranchTaken), cs(3), S::cs_killed_branch(), S::L1I_MISS, S::cs_icache()],
    [S::class(Class::BranchNotTaken), cs(4), S::BRANCHES, S::ITLB_MISS, S::cs_killed_exception()],
    [S::L1I_MISS, S::L1D_MISS, S::ITLB_MISS, S::DTLB_MISS, S::MEM_TX],
    [S::INSTR, S::IDLE_CYCLES, S::cs_icache(), S::cs_killed_branch(), S::cs_killed_exception()],
    [S::BRANCHES, S::INSTR, S::L1I_MISS, S::IMR_MATCH, S::SPE_CYCLES],
    [S::class(Class::BranchTaken), S::class(Class::BranchNotTaken), S::L1I_MISS, S::ITLB_MISS, S::CYCLES],
];

#[rustfmt::skip]
const SCU: [Group; 16] = [
    [S::MEM_TX, S::L1D_MISS, S::L1I_MISS, S::cs_memory(), S::cs_secondary()],
    [S::DTLB_MISS, S::ITLB_MISS, S::MEM_TX, S::DMISS_CYCLES, S::cs_other_stall()],
    [S::L1D_MISS, S::cs_dcache(), S::cs_secondary(), S::cs_memory(), S::IDLE_CYCLES],
    [S::MEM_TX, S::MEM_INSTR, S::class(Class::Load), S::class(Class::Store), S::DMISS_CYCLES],
    [S::TX_READ, S::TX_READ_EX, S::TX_UPGRADE, S::TX_WRITEBACK, S::MISS_CYCLES],
    [S::MEM_TX, S::MISS_CYCLES, S::TX_WRITEBACK, S::L1D_MISS_READ, S::L1D_MISS_WRITE],
    [S::TX_READ, S::TX_READ_EX, S::TX_UPGRADE, S::MEM_TX, S::L1D_MISS],
    [S::TX_WRITEBACK, S::MISS_CYCLES, S::cs_memory(), S::cs_secondary(), S::MEM_TX],
    [S::L1D_MISS_READ, S::L1D_MISS_WRITE, S::L1I_MISS, S::DTLB_MISS, S::ITLB_MISS],
    [S::cs_memory(), S::cs_secondary(), S::cs_dcache(), S::cs_icache(), S::cs_other_stall()],
    [S::MEM_TX, S::TX_READ, S::TX_READ_EX, S::INSTR, S::CYCLES],
    [S::MISS_CYCLES, S::MEM_TX, S::DMISS_CYCLES, S::IDLE_CYCLES, S::CYCLES],
    [S::L1D_MISS, S::L1I_MISS, S::MEM_TX, S::TX_WRITEBACK, S::SPE_CYCLES],
    [S::DTLB_MISS, S::ITLB_MISS, S::cs_killed_exception(), S::MEM_TX, S::IMR_MATCH],
    [S::TX_UPGRADE, S::TX_READ_EX, S::L1D_MISS_WRITE, S::class(Class::Store), S::MEM_TX],
    [S::MEM_TX, S::L1D_MISS, S::L1I_MISS, S::DTLB_MISS, S::ITLB_MISS],
];

impl Sig {
    const fn cs_fp_slip() -> Sig {
        cs(8)
    }
    const fn cs_killed_exception() -> Sig {
        cs(9)
    }
    const fn cs_killed_branch() -> Sig {
        cs(10)
    }
    const fn cs_memory() -> Sig {
        cs(11)
    }
    const fn cs_other_stall() -> Sig {
        cs(12)
    }
    const fn cs_secondary() -> Sig {
        cs(13)
    }
    const fn cs_icache() -> Sig {
        cs(14)
    }
    const fn cs_dcache() -> Sig {
        cs(15)
    }
}

/// A PAPI preset the P2SC port defined, at its (unit, group, counter number) position; unit
/// `None` with group `None`: the shared counters (number 0 cycles, 1 instructions).
pub struct Preset {
    pub name: &'static str,
    pub unit: Option<Unit>,
    pub group: Option<u8>,
    pub num: usize,
}

/// The presets of PAPI's `aix-p2sc.c` `preset_map`, at the positions it gave them.
pub const PAPI: [Preset; 15] = [
    p("PAPI_L1_DCM", Some(Unit::Fxu), Some(0), 4),
    p("PAPI_L1_ICM", Some(Unit::Icu), Some(0), 2),
    p("PAPI_TLB_IM", Some(Unit::Icu), Some(0), 6),
    p("PAPI_TLB_TL", Some(Unit::Fxu), Some(0), 5),
    p("PAPI_BR_UCN", Some(Unit::Icu), Some(4), 6),
    p("PAPI_BR_CN", Some(Unit::Icu), Some(3), 4),
    p("PAPI_BR_TKN", Some(Unit::Icu), Some(3), 6),
    p("PAPI_BR_NTK", Some(Unit::Icu), Some(3), 5),
    p("PAPI_INT_INS", Some(Unit::Fxu), Some(0), 2),
    p("PAPI_FP_INS", Some(Unit::Fpu), Some(0), 2),
    p("PAPI_LD_INS", Some(Unit::Fxu), Some(6), 3),
    p("PAPI_SR_INS", Some(Unit::Fxu), Some(6), 5),
    p("PAPI_BR_INS", Some(Unit::Icu), Some(3), 2),
    p("PAPI_TOT_INS", None, None, 1),
    p("PAPI_TOT_CYC", None, None, 0),
];

const fn p(name: &'static str, unit: Option<Unit>, group: Option<u8>, num: usize) -> Preset {
    Preset {
        name,
        unit,
        group,
        num,
    }
}

/// The PAPI preset at (unit, group, counter number), if any.
pub fn papi_name(unit: Option<Unit>, group: Option<u8>, num: usize) -> Option<&'static str> {
    PAPI.iter()
        .find(|p| p.num == num && (p.unit.is_none() || (p.unit == unit && p.group == group)))
        .map(|p| p.name)
}

/// The event table as Markdown (one table per unit: group, counters 2-6, PAPI presets), as
/// `docs/power2.md` prints it (a test keeps the two equal).
pub fn table_markdown() -> String {
    let mut s = String::new();
    for u in Unit::ALL {
        s += &format!(
            "#### {} (MMCR bits {}-{})\n\n| group | counter 2 | counter 3 | counter 4 | counter 5 | counter 6 |\n| --- | --- | --- | --- | --- | --- |\n",
            u.name(),
            u.shift(),
            u.shift() + 3
        );
        for (g, group) in TABLE[u as usize].iter().enumerate() {
            s += &format!("| {g} |");
            for (k, sig) in group.iter().enumerate() {
                match papi_name(Some(u), Some(g as u8), k + 2) {
                    Some(p) => s += &format!(" `{}` ({p}) |", sig.name()),
                    None => s += &format!(" `{}` |", sig.name()),
                }
            }
            s += "\n";
        }
        s += "\n";
    }
    s
}

/// The signals as Markdown: name, what it counts, whether the ground truth has its exact count.
pub fn signals_markdown() -> String {
    let c = Counters::default();
    let mut s = String::from("| event | counts | exact in ground truth |\n| --- | --- | --- |\n");
    for i in 0..Sig::COUNT {
        let sig = Sig(i as u16);
        s += &format!(
            "| `{}` | {} | {} |\n",
            sig.name(),
            sig.doc(),
            if sig.exact(&c).is_some() || sig == Sig::IMR_MATCH {
                "yes"
            } else {
                "no"
            }
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counter numbering: 22 counters, two shared and five per unit, round trip.
    #[test]
    fn counters_number_22_and_round_trip() {
        let mut seen = [false; COUNTERS];
        seen[0] = true;
        seen[1] = true;
        for u in Unit::ALL {
            for num in 2..=6 {
                let i = counter_index(u, num);
                assert!(!seen[i]);
                seen[i] = true;
                assert_eq!(counter_of(i), Some((u, num)));
            }
        }
        assert!(seen.iter().all(|s| *s));
        assert_eq!(counter_index(Unit::Scu, 6), 21);
    }

    /// docs/power2.md prints the table and the signals as the code has them.
    #[test]
    fn docs_print_the_table() {
        let doc = include_str!("../../../../docs/power2.md");
        if std::env::var_os("POWER2_PRINT_DOCS").is_some() {
            println!("{}\n=====\n{}", table_markdown(), signals_markdown());
        }
        assert!(
            doc.contains(&table_markdown()),
            "docs/power2.md: regenerate the event table"
        );
        assert!(
            doc.contains(&signals_markdown()),
            "docs/power2.md: regenerate the signal list"
        );
    }

    /// Every name parses back to its signal; groups 0-3 hold only exact signals; the PAPI
    /// presets sit on the signals their names say.
    #[test]
    fn table_names_exactness_and_papi_positions() {
        for i in 0..Sig::COUNT {
            assert_eq!(Sig::parse(Sig(i as u16).name()), Some(Sig(i as u16)));
        }
        let c = Counters::default();
        for u in Unit::ALL {
            for (g, group) in TABLE[u as usize].iter().take(4).enumerate() {
                for s in group {
                    assert!(
                        s.exact(&c).is_some(),
                        "{} group {g}: {}",
                        u.name(),
                        s.name()
                    );
                }
            }
        }
        let at = |u: Unit, g: usize, n: usize| TABLE[u as usize][g][n - 2];
        assert_eq!(at(Unit::Fxu, 0, 4), Sig::L1D_MISS);
        assert_eq!(at(Unit::Fxu, 0, 5), Sig::DTLB_MISS);
        assert_eq!(at(Unit::Fxu, 0, 2), Sig::class(Class::Integer));
        assert_eq!(at(Unit::Icu, 0, 2), Sig::L1I_MISS);
        assert_eq!(at(Unit::Icu, 0, 6), Sig::ITLB_MISS);
        assert_eq!(at(Unit::Fpu, 0, 2), Sig::class(Class::Fp));
        assert_eq!(at(Unit::Fxu, 6, 3), Sig::class(Class::Load));
        assert_eq!(at(Unit::Fxu, 6, 5), Sig::class(Class::Store));
        assert_eq!(at(Unit::Icu, 3, 2), Sig::BRANCHES);
        assert_eq!(at(Unit::Icu, 3, 6), Sig::class(Class::BranchTaken));
        assert_eq!(papi_name(Some(Unit::Fxu), Some(0), 4), Some("PAPI_L1_DCM"));
        assert_eq!(papi_name(None, None, 0), Some("PAPI_TOT_CYC"));
        assert_eq!(papi_name(Some(Unit::Scu), Some(3), 1), Some("PAPI_TOT_INS"));
    }
}
