//! PAPI's presets as a Blue Gene/Q user meets them: every row of PAPI's table for the chip
//! (`src/papi_events.csv`, section `CPU,BGQ`), each either computed from UPC_P counters as PAPI
//! computes it, or refused by name with the native event pmusim does not produce.
//!
//! PAPI computes a preset from one counter per native event: `NOT_DERIVED` (the one counter),
//! `DERIVED_ADD` (their sum), `DERIVED_SUB` (the first less the others) and `DERIVED_POSTFIX`
//! (a postfix formula over `N0`, `N1`, ... separated by `|`, as `N0|N1|-|N2|-|`), in signed
//! 64-bit arithmetic (`long long`). [`Preset::value`] does the same, so a formula that does
//! not mean what the preset's name says gives the same wrong answer as on the chip, and the
//! report puts it beside the exact count.
//!
//! Where pmusim differs from PAPI's row (the opcode-group masks, the TLB events) the row says
//! so (`note`); docs/upc.md, "PAPI presets", lists the whole table.

use super::events::{self, PEvent};
use crate::plugin::Error;

/// How PAPI derives a preset from its native events (`papi_events.csv`'s second column).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Derive {
    /// `NOT_DERIVED` (one event) or `DERIVED_ADD`: the sum.
    Add,
    /// `DERIVED_SUB`: the first event less the others.
    Sub,
    /// `DERIVED_POSTFIX`: a postfix formula over `N0`, `N1`, ... (`|`-separated).
    Postfix(&'static str),
}

/// One preset pmusim computes.
#[derive(Clone, Copy, Debug)]
pub struct Preset {
    pub name: &'static str,
    pub derive: Derive,
    /// The `PEVT_*` events, one UPC_P counter each, in PAPI's order (`N0`, `N1`, ...).
    pub events: &'static [&'static str],
    /// Where pmusim's events differ from PAPI's row; empty when they are PAPI's.
    pub note: &'static str,
    /// Where PAPI's formula does not give what the preset's name means: a postfix formula
    /// over the same events that does (with pmusim's event definitions), reported beside
    /// PAPI's value (`PAPI_BR_NTK`: PAPI subtracts the unconditional branches twice).
    pub means: Option<&'static str>,
}

/// One preset of PAPI's table that pmusim refuses: the native events it lacks.
#[derive(Clone, Copy, Debug)]
pub struct Absent {
    pub name: &'static str,
    /// PAPI's derivation and events, as in its table.
    pub papi: &'static str,
    /// The native events pmusim does not produce.
    pub missing: &'static [&'static str],
}

const fn p(
    name: &'static str,
    derive: Derive,
    events: &'static [&'static str],
    note: &'static str,
) -> Preset {
    Preset {
        name,
        derive,
        events,
        note,
        means: None,
    }
}

/// A preset whose PAPI formula differs from what its name means (`means`).
const fn pm(
    name: &'static str,
    derive: Derive,
    events: &'static [&'static str],
    note: &'static str,
    means: &'static str,
) -> Preset {
    Preset {
        means: Some(means),
        ..p(name, derive, events, note)
    }
}

use Derive::{Add, Postfix, Sub};

/// The presets pmusim computes, in PAPI's table order.
pub const PRESETS: &[Preset] = &[
    p("PAPI_BR_CN", Add, &["PEVT_INST_XU_BRC"], ""),
    p("PAPI_BR_INS", Add, &["PEVT_XU_BR_COMMIT"], ""),
    p("PAPI_BR_MSP", Add, &["PEVT_XU_BR_MISPRED_COMMIT"], ""),
    p(
        "PAPI_BR_PRC",
        Sub,
        &["PEVT_INST_XU_BRC", "PEVT_XU_BR_MISPRED_COMMIT"],
        "",
    ),
    pm(
        "PAPI_BR_NTK",
        Postfix("N0|N1|-|N2|-|"),
        &["PEVT_INST_XU_BRC", "PEVT_XU_BR_TAKEN_COMMIT", "PEVT_INST_XU_BRU"],
        "PEVT_XU_BR_TAKEN_COMMIT counts the unconditional branches (always taken; PAPI_BR_TKN's formula assumes it), so PAPI's formula subtracts them twice: the not-taken conditional branches less PEVT_INST_XU_BRU",
        "N0|N1|-|N2|+|",
    ),
    p("PAPI_BR_TKN", Sub, &["PEVT_XU_BR_TAKEN_COMMIT", "PEVT_INST_XU_BRU"], ""),
    p("PAPI_BR_UCN", Add, &["PEVT_INST_XU_BRU"], ""),
    p("PAPI_CSR_FAL", Add, &["PEVT_XU_STCX_FAIL"], ""),
    p("PAPI_CSR_SUC", Sub, &["PEVT_LSU_COMMIT_STCX", "PEVT_XU_STCX_FAIL"], ""),
    p("PAPI_CSR_TOT", Add, &["PEVT_LSU_COMMIT_STCX"], ""),
    p("PAPI_FAD_INS", Add, &["PEVT_INST_QFPU_FADD", "PEVT_INST_QFPU_QADD"], ""),
    p("PAPI_FDV_INS", Add, &["PEVT_INST_QFPU_FDIV"], ""),
    p("PAPI_FMA_INS", Add, &["PEVT_INST_QFPU_FMA", "PEVT_INST_QFPU_QMA"], ""),
    p("PAPI_FML_INS", Add, &["PEVT_INST_QFPU_FMUL", "PEVT_INST_QFPU_QMUL"], ""),
    p("PAPI_FP_INS", Add, &["PEVT_INST_QFPU_ALL"], ""),
    p(
        "PAPI_FP_OPS",
        Add,
        &["PEVT_INST_QFPU_FPGRP1"],
        "flops (each instruction weighted, docs/upc.md, Flop counting); pmusim's fp-convert and qp-other include the FP and quad moves the chip's FPGRP1 leaves out (FMOV, QMOV), so a move retired as one of them counts 1 or 4 flops",
    ),
    p("PAPI_FSQ_INS", Add, &["PEVT_INST_QFPU_FSQ"], ""),
    p("PAPI_HW_INT", Add, &["PEVT_XU_INTS_TAKEN"], ""),
    p(
        "PAPI_INT_INS",
        Add,
        &[
            "PEVT_INST_XU_IADD",
            "PEVT_INST_XU_IMUL",
            "PEVT_INST_XU_IDIV",
            "PEVT_INST_XU_ICMP",
            "PEVT_INST_XU_IMOV",
            "PEVT_INST_XU_ILOG",
            "PEVT_INST_XU_BITS",
        ],
        "PAPI: one counter on the mask PEVT_INST_XU_GRP_MASK:837800 of these 7 groups; pmusim (no mask selector): 7 counters",
    ),
    p("PAPI_TOT_CYC", Add, &["PEVT_CYCLES"], ""),
    p("PAPI_TOT_INS", Add, &["PEVT_INST_ALL"], ""),
    p(
        "PAPI_VEC_INS",
        Add,
        &[
            "PEVT_INST_QFPU_QADD",
            "PEVT_INST_QFPU_QMUL",
            "PEVT_INST_QFPU_QMA",
            "PEVT_INST_QFPU_QOTH",
            "PEVT_INST_XU_QLD",
            "PEVT_INST_XU_QST",
        ],
        "PAPI: 2 counters on the masks PEVT_INST_QFPU_GRP_MASK:3FE (9 quad groups) and PEVT_INST_XU_GRP_MASK:3000000 (QLD, QST); pmusim: one counter per group that receives instructions (QCMP, QCVT, QMOV, QRES, QRND have none)",
    ),
    p("PAPI_L1_DCM", Add, &["PEVT_LSU_COMMIT_LD_MISSES", "PEVT_LSU_COMMIT_ST_MISSES"], ""),
    p(
        "PAPI_L1_DCR",
        Add,
        &["PEVT_LSU_COMMIT_CACHEABLE_LDS"],
        "pmusim's PEVT_LSU_COMMIT_CACHEABLE_LDS includes the uncached loads (UPC register reads among them), which pmusim retires as loads",
    ),
    p("PAPI_L1_DCW", Add, &["PEVT_LSU_COMMIT_STS"], ""),
    p("PAPI_L1_ICM", Add, &["PEVT_IU_IL1_MISS"], ""),
    p(
        "PAPI_L1_LDM",
        Add,
        &["PEVT_IU_IL1_MISS", "PEVT_LSU_COMMIT_LD_MISSES"],
        "PAPI's: instruction-fetch misses count as load misses",
    ),
    p("PAPI_L1_STM", Add, &["PEVT_LSU_COMMIT_ST_MISSES"], ""),
    pm(
        "PAPI_LD_INS",
        Add,
        &["PEVT_LSU_COMMIT_CACHEABLE_LDS", "PEVT_LSU_COMMIT_CACHE_INHIB_LD_MISSES"],
        "pmusim's PEVT_LSU_COMMIT_CACHEABLE_LDS includes the uncached loads, so PAPI's sum counts them twice",
        "N0|",
    ),
    p("PAPI_SR_INS", Add, &["PEVT_LSU_COMMIT_STS"], ""),
    p("PAPI_STL_CCY", Sub, &["PEVT_CYCLES", "PEVT_INST_ALL"], ""),
    p("PAPI_SYC_INS", Add, &["PEVT_INST_XU_SYNC"], ""),
    p(
        "PAPI_TLB_DM",
        Add,
        &["PEVT_MMU_DERAT_MISS"],
        "PAPI: PEVT_MMU_TLB_MISS_DIRECT_DERAT + _INDIR_DERAT (the A2 MMU's TLB behind the ERAT); pmusim: its one software TLB's data misses",
    ),
    p(
        "PAPI_TLB_IM",
        Add,
        &["PEVT_MMU_IERAT_MISS"],
        "PAPI: PEVT_MMU_TLB_MISS_DIRECT_DERAT (a data event); pmusim: its TLB's instruction misses",
    ),
    p(
        "PAPI_TLB_TL",
        Postfix("N0|N1|+|"),
        &["PEVT_MMU_DERAT_MISS", "PEVT_MMU_IERAT_MISS"],
        "PAPI: N0|N1|+|N2|+| over the three A2 TLB-miss events; pmusim: data + instruction misses",
    ),
];

/// The presets of PAPI's table that pmusim refuses, with what they lack.
pub const ABSENT: &[Absent] = &[
    a(
        "PAPI_BTAC_M",
        "PEVT_XU_BR_TARG_ADDR_MISPRED_COMMIT",
        &["PEVT_XU_BR_TARG_ADDR_MISPRED_COMMIT"],
    ),
    a(
        "PAPI_FP_STAL",
        "PEVT_IU_AXU_FXU_DEP_HIT_CYC",
        &["PEVT_IU_AXU_FXU_DEP_HIT_CYC"],
    ),
    a("PAPI_FXU_IDL", "PEVT_AXU_IDLE", &["PEVT_AXU_IDLE"]),
    a(
        "PAPI_TOT_IIS",
        "PEVT_IU_TOT_ISSUE_COUNT",
        &["PEVT_IU_TOT_ISSUE_COUNT"],
    ),
    a(
        "PAPI_L1_ICR",
        "PEVT_IU_ICACHE_FETCH",
        &["PEVT_IU_ICACHE_FETCH"],
    ),
    a(
        "PAPI_RES_STL",
        "PEVT_IU_IS1_STALL_CYC",
        &["PEVT_IU_IS1_STALL_CYC"],
    ),
    a(
        "PAPI_STL_ICY",
        "DERIVED_SUB PEVT_CYCLES - PEVT_IU_TOT_ISSUE_COUNT",
        &["PEVT_IU_TOT_ISSUE_COUNT"],
    ),
    a(
        "PAPI_TLB_SD",
        "PEVT_MMU_TLBIVAX_SNOOP_TOT",
        &["PEVT_MMU_TLBIVAX_SNOOP_TOT"],
    ),
];

const fn a(name: &'static str, papi: &'static str, missing: &'static [&'static str]) -> Absent {
    Absent {
        name,
        papi,
        missing,
    }
}

impl Preset {
    /// Its events as UPC_P events.
    pub fn parts(&self) -> Vec<&'static PEvent> {
        self.events
            .iter()
            .map(|e| events::p_event_named(e).expect("a preset names UPC_P events pmusim produces"))
            .collect()
    }

    /// What the preset's name means, from its events' counts, where PAPI's formula gives
    /// something else (`means`).
    pub fn meaning(&self, n: &[i64]) -> Option<i64> {
        self.means.map(|f| postfix(f, n))
    }

    /// The preset from its events' counts (`n[i]` for `events[i]`), as PAPI computes it:
    /// signed 64-bit, wrapping.
    pub fn value(&self, n: &[i64]) -> i64 {
        match self.derive {
            Add => n.iter().fold(0i64, |s, &x| s.wrapping_add(x)),
            Sub => n[1..].iter().fold(n[0], |s, &x| s.wrapping_sub(x)),
            Postfix(f) => postfix(f, n),
        }
    }

    /// The derivation in words (`PEVT_CYCLES - PEVT_INST_ALL`).
    pub fn formula(&self) -> String {
        match self.derive {
            Add => self.events.join(" + "),
            Sub => self.events.join(" - "),
            Postfix(f) => format!("{f} over {}", self.events.join(", ")),
        }
    }

    /// PAPI's derivation keyword.
    pub fn papi_kind(&self) -> &'static str {
        match (self.derive, self.events.len()) {
            (Add, 1) => "NOT_DERIVED",
            (Add, _) => "DERIVED_ADD",
            (Sub, _) => "DERIVED_SUB",
            (Postfix(_), _) => "DERIVED_POSTFIX",
        }
    }
}

/// Evaluates a PAPI postfix formula (`N0|N1|-|N2|+|`): `Nk` pushes event k's count, `+ - * /`
/// pop two and push the result.
fn postfix(f: &str, n: &[i64]) -> i64 {
    let mut st: Vec<i64> = Vec::with_capacity(4);
    for tok in f.split('|').filter(|t| !t.is_empty()) {
        if let Some(k) = tok.strip_prefix('N') {
            st.push(n[k.parse::<usize>().expect("a PAPI operand Nk")]);
            continue;
        }
        let b = st.pop().expect("a postfix operand");
        let a = st.pop().expect("a postfix operand");
        st.push(match tok {
            "+" => a.wrapping_add(b),
            "-" => a.wrapping_sub(b),
            "*" => a.wrapping_mul(b),
            "/" => a.checked_div(b).unwrap_or(0),
            _ => panic!("`{tok}` is not a PAPI postfix operator"),
        });
    }
    st.pop().expect("a postfix result")
}

/// The preset called `name` (case-insensitive), if pmusim computes it.
pub fn preset(name: &str) -> Option<&'static Preset> {
    PRESETS.iter().find(|p| p.name.eq_ignore_ascii_case(name))
}

/// Why pmusim refuses the preset called `name`, if it is one of PAPI's BG/Q presets it does
/// not compute; `what` names the place.
pub fn refusal(name: &str, what: &str) -> Option<Error> {
    absent_reason(name).map(|r| Error::input(format!("{what}: {r}")))
}

/// Why pmusim does not compute PAPI preset `name`, if it is one of the chip's it refuses.
pub fn absent_reason(name: &str) -> Option<String> {
    let a = ABSENT.iter().find(|a| a.name.eq_ignore_ascii_case(name))?;
    Some(format!(
        "{} is not available on pmusim's Blue Gene/Q: PAPI computes it from {} and pmusim produces no {} (docs/upc.md, PAPI presets)",
        a.name,
        a.papi,
        a.missing.join(", ")
    ))
}

/// The preset called `name`, or the refusal naming what it lacks, or `None` if `name` is no
/// PAPI preset of the chip.
pub fn lookup(name: &str, what: &str) -> Option<Result<&'static Preset, Error>> {
    preset(name)
        .map(Ok)
        .or_else(|| refusal(name, what).map(Err))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The whole CPU,BGQ table: 43 active rows, 35 computed, 8 refused; each computed one
    /// resolves to events pmusim produces and evaluates as PAPI does.
    #[test]
    fn table_and_formulas() {
        assert_eq!(PRESETS.len() + ABSENT.len(), 43);
        assert_eq!(PRESETS.len(), 35);
        for p in PRESETS {
            assert_eq!(p.parts().len(), p.events.len());
            assert!(ABSENT.iter().all(|a| a.name != p.name));
        }
        for a in ABSENT {
            for m in a.missing {
                assert!(events::p_event_named(m).is_none(), "{m}");
            }
        }
        let ccy = preset("papi_stl_ccy").unwrap();
        assert_eq!(ccy.value(&[1000, 640]), 360);
        assert_eq!(ccy.papi_kind(), "DERIVED_SUB");
        assert_eq!(preset("PAPI_CSR_SUC").unwrap().value(&[50, 8]), 42);
        assert_eq!(
            preset("PAPI_INT_INS")
                .unwrap()
                .value(&[1, 2, 3, 4, 5, 6, 7]),
            28
        );
        assert_eq!(preset("PAPI_TLB_TL").unwrap().value(&[9, 4]), 13);
        // 100 conditional branches, 70 of them taken, and 20 unconditional ones: the taken
        // branches are 90. PAPI's BR_NTK is 100 - 90 - 20 = -10; not taken: 30. BR_TKN's
        // formula gives the 70 conditional taken ones.
        let ntk = preset("PAPI_BR_NTK").unwrap();
        assert_eq!(ntk.value(&[100, 90, 20]), -10);
        assert_eq!(ntk.meaning(&[100, 90, 20]), Some(30));
        assert_eq!(preset("PAPI_BR_TKN").unwrap().value(&[90, 20]), 70);
        assert_eq!(preset("PAPI_BR_TKN").unwrap().meaning(&[90, 20]), None);
        // 500 loads, 12 of them uncached: PAPI's LD_INS counts those twice.
        let ld = preset("PAPI_LD_INS").unwrap();
        assert_eq!(
            (ld.value(&[500, 12]), ld.meaning(&[500, 12])),
            (512, Some(500))
        );
        assert_eq!(postfix("N0|N1|*|N2|/|", &[6, 7, 2]), 21);
        let e = refusal("PAPI_BTAC_M", "-e PAPI_BTAC_M").unwrap();
        assert!(format!("{e:?}").contains("pmusim produces no PEVT_XU_BR_TARG_ADDR_MISPRED_COMMIT"));
        assert!(refusal("PAPI_TOT_CYC", "x").is_none());
        assert!(lookup("PAPI_NOPE", "x").is_none());
    }
}
