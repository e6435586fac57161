//! The Master Configuration Controller's user registers (seed 000, Table 4.4), their place in
//! the monitor region, and field-level encode/decode.
//!
//! # The monitor region (byte offsets from `machine::state::MONITOR_BASE`)
//! Table 4.4 gives word addresses 0-F; the seed gives no addresses for the counters or the
//! SRAM, so pmusim chooses them (marked *pmusim*):
//!
//! | offset | what |
//! | --- | --- |
//! | `0x000 + 4*w` | Table 4.4 register at word address `w` (0x0-0xF) |
//! | `0x100 + 4*i` | general-purpose counter `i` (read; write = preload) *pmusim* |
//! | `0x120 + 4*i` | counter `i`, reset-on-read address (4.3.3) *pmusim* |
//! | `0x1C0` | interrupt status: bit i = counter i overflowed, bit 4 = SRAM; reading clears it and acknowledges the interrupt *pmusim* |
//! | `0x1C4` | SRAM address of the last SRAM overflow *pmusim* |
//! | `0x1C8` | C&Inc accumulate register: a word write adds the value to the SRAM word the current mode addresses (4.3.5's unimplemented mode; SCM event 7) *pmusim* |
//! | `0x40000 + 4*a` | SRAM word `a` (0..65535), scratch-readable and writable (the muxAR path) |
//!
//! Word (4-byte) and doubleword (8-byte) accesses are supported (4.3). A doubleword at an
//! 8-byte-aligned offset covers two consecutive words in big-endian data-word order: the high
//! 32 bits go to the lower address. So AWhi/AWlo (words 4/5) and AFhi/AFlo (6/7) are written
//! with one doubleword (4.4.3), and GPCE/SRAMCE (E/F) are enabled together with one
//! doubleword write (4.4.6).

use std::fmt;

pub const GPC_BASE: u64 = 0x100;
pub const GPC_RESET_BASE: u64 = 0x120;
pub const ISR: u64 = 0x1C0;
pub const SRAM_OVF_ADDR: u64 = 0x1C4;
pub const ACCUMULATE: u64 = 0x1C8;
pub const SRAM_BASE: u64 = 0x40000;
pub const SRAM_WORDS: usize = 1 << 16;

/// The registers of Table 4.4, by word address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Reg {
    Pr = 0,
    Pw = 1,
    Cw = 2,
    Cf = 3,
    AwHi = 4,
    AwLo = 5,
    AfHi = 6,
    AfLo = 7,
    Gpcm0 = 8,
    Gpcm1 = 9,
    Gpcm2 = 0xA,
    Gpcm3 = 0xB,
    Scm = 0xC,
    Gpce = 0xE,
    Sramce = 0xF,
}

impl Reg {
    pub const ALL: [Reg; 15] = [
        Reg::Pr,
        Reg::Pw,
        Reg::Cw,
        Reg::Cf,
        Reg::AwHi,
        Reg::AwLo,
        Reg::AfHi,
        Reg::AfLo,
        Reg::Gpcm0,
        Reg::Gpcm1,
        Reg::Gpcm2,
        Reg::Gpcm3,
        Reg::Scm,
        Reg::Gpce,
        Reg::Sramce,
    ];
    /// The register at a word address; word D is reserved (Table 4.4).
    pub fn from_word(w: u64) -> Result<Reg, RegError> {
        Reg::ALL
            .iter()
            .copied()
            .find(|r| *r as u64 == w)
            .ok_or(if w == 0xD {
                RegError::Reserved("word address D is reserved (Table 4.4)".into())
            } else {
                RegError::Unknown(format!("no register at word address {w:#x}"))
            })
    }
    pub fn acronym(self) -> &'static str {
        match self {
            Reg::Pr => "PR",
            Reg::Pw => "PW",
            Reg::Cw => "CW",
            Reg::Cf => "CF",
            Reg::AwHi => "AWhi",
            Reg::AwLo => "AWlo",
            Reg::AfHi => "AFhi",
            Reg::AfLo => "AFlo",
            Reg::Gpcm0 => "GPCM0",
            Reg::Gpcm1 => "GPCM1",
            Reg::Gpcm2 => "GPCM2",
            Reg::Gpcm3 => "GPCM3",
            Reg::Scm => "SCM",
            Reg::Gpce => "GPCE",
            Reg::Sramce => "SRAMCE",
        }
    }
    pub fn title(self) -> &'static str {
        match self {
            Reg::Pr => "PhaseID Register",
            Reg::Pw => "PhaseID Watch",
            Reg::Cw => "Command Watch",
            Reg::Cf => "Command Filter",
            Reg::AwHi => "Address Watch High",
            Reg::AwLo => "Address Watch Low",
            Reg::AfHi => "Address Filter High",
            Reg::AfLo => "Address Filter Low",
            Reg::Gpcm0 => "General-Purpose Counter 0 Mode",
            Reg::Gpcm1 => "General-Purpose Counter 1 Mode",
            Reg::Gpcm2 => "General-Purpose Counter 2 Mode",
            Reg::Gpcm3 => "General-Purpose Counter 3 Mode",
            Reg::Scm => "SRAM Counter Mode",
            Reg::Gpce => "Master General-Purpose Counter Enable",
            Reg::Sramce => "Master SRAM Counter Enable",
        }
    }
    /// Parses an acronym (case-insensitive) or a word address (`0x8`, `8`).
    pub fn parse(s: &str) -> Result<Reg, RegError> {
        if let Some(r) = Reg::ALL
            .iter()
            .find(|r| r.acronym().eq_ignore_ascii_case(s))
        {
            return Ok(*r);
        }
        let n = parse_u64(s).map_err(|_| {
            RegError::Unknown(format!(
                "unknown register `{s}`: use one of {} or a word address 0-F",
                Reg::ALL.map(|r| r.acronym()).join(", ")
            ))
        })?;
        Reg::from_word(n)
    }
    pub fn fields(self) -> &'static [Field] {
        match self {
            Reg::Pr => PR_FIELDS,
            Reg::Pw => PW_FIELDS,
            Reg::Cw => CW_FIELDS,
            Reg::Cf => CF_FIELDS,
            Reg::AwHi => AWHI_FIELDS,
            Reg::AwLo => AWLO_FIELDS,
            Reg::AfHi => AFHI_FIELDS,
            Reg::AfLo => AFLO_FIELDS,
            Reg::Gpcm0 | Reg::Gpcm1 | Reg::Gpcm2 | Reg::Gpcm3 => GPCM_FIELDS,
            Reg::Scm => SCM_FIELDS,
            Reg::Gpce => GPCE_FIELDS,
            Reg::Sramce => SRAMCE_FIELDS,
        }
    }
    /// Bits that no field defines (reserved: must be written as zero).
    pub fn defined_mask(self) -> u32 {
        self.fields().iter().fold(0, |m, f| m | f.mask())
    }
}

/// Parses decimal, `0x` hex or `0b` binary, with optional `_` separators.
pub fn parse_u64(s: &str) -> Result<u64, String> {
    let t = s.trim().replace('_', "");
    let r = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else if let Some(b) = t.strip_prefix("0b") {
        u64::from_str_radix(b, 2)
    } else {
        t.parse()
    };
    r.map_err(|_| format!("`{s}` is not a number (decimal, 0x hex or 0b binary)"))
}

/// One field of a register: bits `hi..lo`.
#[derive(Clone, Copy, Debug)]
pub struct Field {
    pub name: &'static str,
    pub hi: u8,
    pub lo: u8,
    pub what: &'static str,
}

impl Field {
    pub const fn new(name: &'static str, hi: u8, lo: u8, what: &'static str) -> Field {
        Field { name, hi, lo, what }
    }
    pub fn width(&self) -> u32 {
        (self.hi - self.lo + 1) as u32
    }
    pub fn mask(&self) -> u32 {
        (((1u64 << self.width()) - 1) << self.lo) as u32
    }
    pub fn get(&self, v: u32) -> u32 {
        (v & self.mask()) >> self.lo
    }
    pub fn put(&self, v: u32, x: u32) -> u32 {
        (v & !self.mask()) | ((x << self.lo) & self.mask())
    }
    pub fn bits(&self) -> String {
        if self.hi == self.lo {
            format!("{}", self.hi)
        } else {
            format!("{}..{}", self.hi, self.lo)
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegError {
    Unknown(String),
    Reserved(String),
    Value(String),
}
impl fmt::Display for RegError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegError::Unknown(s) | RegError::Reserved(s) | RegError::Value(s) => f.write_str(s),
        }
    }
}
impl std::error::Error for RegError {}

const PR_FIELDS: &[Field] = &[Field::new(
    "phase",
    15,
    0,
    "PhaseID (low 4 bits tag transactions)",
)];
const PW_FIELDS: &[Field] = &[Field::new("watch", 15, 0, "compared against PR")];
const CW_FIELDS: &[Field] = &[Field::new(
    "command",
    12,
    0,
    "compared against the filtered command",
)];
const CF_FIELDS: &[Field] = &[Field::new("filter", 12, 0, "removes unwanted command bits")];
const AWHI_FIELDS: &[Field] = &[Field::new("aw_39_32", 7, 0, "forms AW bits 39..32")];
const AWLO_FIELDS: &[Field] = &[Field::new("aw_31_0", 31, 0, "forms AW bits 31..0")];
const AFHI_FIELDS: &[Field] = &[Field::new("af_39_32", 7, 0, "forms AF bits 39..32")];
const AFLO_FIELDS: &[Field] = &[Field::new("af_31_0", 31, 0, "forms AF bits 31..0")];
const GPCE_FIELDS: &[Field] = &[Field::new(
    "enable",
    0,
    0,
    "master enable for all four general-purpose counters",
)];
const SRAMCE_FIELDS: &[Field] = &[Field::new(
    "enable",
    0,
    0,
    "master enable for SRAM counters",
)];

/// Count-enable bits 10..0, shared by GPCMx and SCM (Table 4.4, Fig. 4.7).
macro_rules! enable_fields {
    () => {
        [
            Field::new(
                "cycles_or_edges",
                10,
                10,
                "0: count cycles the event is high; 1: count low-to-high transitions",
            ),
            Field::new(
                "mask_enable",
                9,
                9,
                "enable the sending/receiving masks below",
            ),
            Field::new("mask_invert", 8, 8, "invert mask sense"),
            Field::new("pw_enable", 7, 7, "enable PW compare"),
            Field::new("pw_invert", 6, 6, "invert PW compare sense"),
            Field::new("aw_enable", 5, 5, "enable AW compare"),
            Field::new("aw_invert", 4, 4, "invert AW compare sense"),
            Field::new("cw_enable", 3, 3, "enable CW compare"),
            Field::new("cw_invert", 2, 2, "invert CW compare sense"),
            Field::new("sm", 1, 1, "enable sending mask, SM"),
            Field::new("rm", 0, 0, "enable receiving mask, RM"),
        ]
    };
}

const GPCM_FIELDS: &[Field] = &{
    let e = enable_fields!();
    [
        Field::new("enable", 23, 23, "counter enable"),
        Field::new("ps", 22, 16, "pipeline status configuration bits PS[6..0]"),
        Field::new("interrupt", 15, 15, "enable interrupt on overflow"),
        Field::new("event", 14, 11, "event select (Table 4.5)"),
        e[0],
        e[1],
        e[2],
        e[3],
        e[4],
        e[5],
        e[6],
        e[7],
        e[8],
        e[9],
        e[10],
    ]
};

const SCM_FIELDS: &[Field] = &{
    let e = enable_fields!();
    [
        Field::new("interrupt", 22, 22, "enable interrupt on overflow"),
        Field::new("mode", 21, 20, "counter mode (Table 4.7)"),
        Field::new("mux_miss", 19, 19, "muxMISS: uses miss type when set"),
        Field::new("mux_rsr", 18, 18, "muxRSR: uses RSR when set"),
        Field::new(
            "mux_pr_hi",
            17,
            17,
            "muxPRhi: uses upper 5 bits of PR when set",
        ),
        Field::new(
            "mux_pr_mid",
            16,
            16,
            "muxPRmid: uses middle 7 bits of PR when set",
        ),
        Field::new(
            "mux_pr_lo",
            15,
            15,
            "muxPRlo: uses lower 4 bits of PR when set",
        ),
        Field::new("event", 14, 11, "event select (Table 4.6)"),
        e[0],
        e[1],
        e[2],
        e[3],
        e[4],
        e[5],
        e[6],
        e[7],
        e[8],
        e[9],
        e[10],
    ]
};

/// Event names of Table 4.5 (general-purpose counters), by GPCMx[14..11].
pub const GPC_EVENTS: [(&str, &str); 16] = [
    ("nothing", "count nothing (disable)"),
    ("always", "count always (high-resolution cycle counter)"),
    ("pipeline", "pipeline status events"),
    ("interrupt", "interrupt request latency {interrupt requests}"),
    ("read", "cache line read latency {cache line reads}"),
    ("read-exclusive", "cache line read-exclusive latency {cache line read-exclusives}"),
    ("read-any", "cache line read latency + read-exclusive latency {cache line reads + cache read-exclusives}"),
    ("ownership", "successful ownership miss latency (upgrades + updates) {successful ownership misses}"),
    ("ownership-cancelled", "cancelled ownership miss latency (upgrades + updates) {cancelled ownership misses}"),
    ("nack-retries", "negative acknowledgement retries (may be >1 per request)"),
    ("nack-cycles", "negative acknowledgement cycles {transactions with one or more negative acknowledgements}"),
    ("last-latency", "latency of most recent (cached or uncached) request, eg: read, read exclusive, upgrade"),
    ("bus-activity", "external agent bus activity (i.e., utilization)"),
    ("bus-request", "bus request latency (until a bus grant is given) {bus requests}"),
    ("inval-hits", "external invalidations that hit in the cache (estimate)"),
    ("inval-misses", "invalidation miss latency (estimate) {invalidation misses}"),
];

/// Event names of Table 4.6 (SRAM counters), by SCM[14..11]; 8-F are reserved. Event 7 is
/// reserved in the seed; pmusim gives it the accumulate function 4.3.5 describes but the
/// original left unimplemented (Table 4.10 item 23).
pub const SRAM_EVENTS: [(&str, &str); 8] = [
    ("nothing", "count nothing (disable)"),
    ("always", "count always"),
    ("l2-accesses", "count secondary cache accesses (mode 0)"),
    ("l2-reads", "count secondary cache reads (mode 0)"),
    ("l2-writes", "count secondary cache writes (mode 0)"),
    ("l2-misses", "count secondary cache misses (mode 0)"),
    (
        "line-requests",
        "cache line reads + read exclusives + upgrades (mode 1, 2 or 3)",
    ),
    (
        "accumulate",
        "pmusim: C&Inc accumulate (word writes to 0x1C8 are added to the addressed SRAM word)",
    ),
];

/// SRAM address modes of Table 4.7, by SCM[21..20].
pub const SRAM_MODES: [(&str, &str); 4] = [
    ("cache-index", "Secondary Cache Mode: secondary cache index"),
    ("latency", "Latency Timer Mode: latency timer (all 12 bits) plus muxPRlo data"),
    ("mcc", "MCC Mode: all MCC sources (muxPRlo, muxPRmid, and muxPRhi)"),
    ("compact-latency", "Latency Timer Compact Mode: latency timer (lower 7 bits, compressed format) plus muxPRlo and muxPRhi data"),
];

/// Pipeline-status modes of Table 4.2, by PS[6..5].
pub fn ps_mode(ps: u32) -> &'static str {
    match ps >> 5 {
        0 | 1 => "single event",
        2 => "running cycles",
        _ => "idle cycles",
    }
}

/// The pipeline states a PS[6..0] value selects (Tables 4.2, 4.3), as pmusim codes.
pub fn ps_states(ps: u32) -> Vec<machine::cpu::pipeline::Ps> {
    use machine::cpu::pipeline::Ps;
    let sel = ps & 0x1F;
    let groups: &[(u32, &[Ps])] = match ps >> 5 {
        0 | 1 => return Ps::from_code((ps & 0xF) as u8).into_iter().collect(),
        2 => &[
            (0, &[Ps::Load, Ps::Store]),
            (1, &[Ps::BranchTaken, Ps::BranchNotTaken]),
            (2, &[Ps::OtherInteger, Ps::OtherFp]),
        ],
        _ => &[
            (0, &[Ps::PrimaryICacheStall, Ps::PrimaryDCacheStall]),
            (1, &[Ps::SecondaryCacheStall]),
            (2, &[Ps::MultiprocessingStall, Ps::OtherStall]),
            (3, &[Ps::KilledException, Ps::KilledBranch]),
            (4, &[Ps::IntegerSlip, Ps::FpSlip]),
        ],
    };
    let mut v = Vec::new();
    for (bit, states) in groups {
        if sel & (1 << bit) != 0 {
            v.extend_from_slice(states);
        }
    }
    v
}

/// Whether a PS value selects the pipeline's restart signal: running mode with PS[3] set.
/// Table 4.3 marks PS[3] *reserved* in running mode; pmusim's choice (the seed names no
/// encoding, and its R4400 has no restart signal: Table 4.10 item 4, "processor support
/// required for counting restarts") gives it the restarts, the running-mode counterpart of
/// idle mode's PS[3] (the cycles killed by the flushes): a restart is the first running
/// cycle after a flush. Counts on a core with `[cpu] restart_signal`; 0 on the R4400.
pub fn ps_restarts(ps: u32) -> bool {
    ps >> 5 == 2 && ps & 0x8 != 0
}

/// Reserved PS bits for a PS value (Table 4.3): single mode uses PS[3..0] (PS[4] reserved),
/// running mode PS[2..0] and (pmusim, `ps_restarts`) PS[3] (PS[4] reserved), idle mode all
/// five.
pub fn ps_reserved(ps: u32) -> u32 {
    match ps >> 5 {
        0..=2 => ps & 0x10,
        _ => 0,
    }
}

/// The exact count of what PS value `ps` selects, from a core's (or thread's) counters:
/// the selected states' cycles, plus the restarts when selected.
pub fn ps_exact(ps: u32, c: &machine::cpu::Counters) -> u64 {
    let states: u64 = ps_states(ps).iter().map(|s| c.ps[s.code() as usize]).sum();
    states + if ps_restarts(ps) { c.restarts() } else { 0 }
}

/// Words for one field's value.
fn words(reg: Reg, f: &Field, x: u32) -> String {
    let yes = |b| if b != 0 { "yes" } else { "no" };
    match (reg, f.name) {
        (Reg::Pr, _) => format!("phase {x} (transactions tagged with {})", x & 0xF),
        (Reg::Pw, _) => format!("watch phase {x}"),
        (Reg::Cw | Reg::Cf, _) => super::command::describe(x as u16),
        (Reg::AwHi | Reg::AfHi, _) => format!(
            "bits 39..32 = {x:#04x} (station {}, magic {:#x})",
            x >> 4,
            x & 0xF
        ),
        (Reg::AwLo | Reg::AfLo, _) => format!("bits 31..0 = {x:#010x}"),
        (_, "ps") => {
            let mut names: Vec<&str> = ps_states(x).iter().map(|s| s.name()).collect();
            if ps_restarts(x) {
                names.push("restarts (pmusim: the seed's reserved running-mode PS[3])");
            }
            format!(
                "{} mode: {}",
                ps_mode(x),
                if names.is_empty() {
                    "no state selected".to_string()
                } else {
                    names.join(" + ")
                }
            )
        }
        (Reg::Scm, "event") => SRAM_EVENTS
            .get(x as usize)
            .map(|e| format!("{}: {}", e.0, e.1))
            .unwrap_or_else(|| "reserved".into()),
        (_, "event") => format!("{}: {}", GPC_EVENTS[x as usize].0, GPC_EVENTS[x as usize].1),
        (_, "mode") => format!("{}: {}", SRAM_MODES[x as usize].0, SRAM_MODES[x as usize].1),
        (_, "cycles_or_edges") => {
            if x != 0 {
                "count low-to-high transitions (event occurrences)".into()
            } else {
                "count cycles the event is high".into()
            }
        }
        _ => format!("{} ({})", yes(x), f.what),
    }
}

/// One decoded field: name, value, words.
pub type FieldValue = (String, u32, String);

/// Decodes a register value field by field. Errors name the reserved bits that are set.
pub fn describe(reg: Reg, value: u64) -> Result<Vec<FieldValue>, RegError> {
    if value > u32::MAX as u64 {
        return Err(RegError::Value(format!(
            "{}: {value:#x} does not fit the 32-bit register",
            reg.acronym()
        )));
    }
    let v = value as u32;
    let extra = v & !reg.defined_mask();
    if extra != 0 {
        return Err(RegError::Reserved(format!(
            "{}: reserved bits {:#x} are set (defined bits: {})",
            reg.acronym(),
            extra,
            reg.fields()
                .iter()
                .map(|f| format!("{} {}", f.name, f.bits()))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let mut out = Vec::new();
    for f in reg.fields() {
        let x = f.get(v);
        if f.name == "ps" {
            let r = ps_reserved(x);
            if r != 0 {
                return Err(RegError::Reserved(format!(
                    "{}.ps: PS bits {r:#x} are reserved in {} mode (Table 4.3)",
                    reg.acronym(),
                    ps_mode(x)
                )));
            }
        }
        if reg == Reg::Scm && f.name == "event" && x >= SRAM_EVENTS.len() as u32 {
            return Err(RegError::Reserved(format!(
                "SCM.event: event {x:#x} is reserved (Table 4.6)"
            )));
        }
        out.push((f.name.to_string(), x, words(reg, f, x)));
    }
    Ok(out)
}

/// Encodes named field values into a register value. Errors name the field.
pub fn encode(reg: Reg, fields: &[(&str, u32)]) -> Result<u32, RegError> {
    let mut v = 0u32;
    for (name, x) in fields {
        let f = reg
            .fields()
            .iter()
            .find(|f| f.name == *name)
            .ok_or_else(|| {
                RegError::Unknown(format!(
                    "{}: no field `{name}` (fields: {})",
                    reg.acronym(),
                    reg.fields()
                        .iter()
                        .map(|f| f.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
        if *x as u64 >= 1u64 << f.width() {
            return Err(RegError::Value(format!(
                "{}.{name}: {x} does not fit {} bit(s) ({})",
                reg.acronym(),
                f.width(),
                f.bits()
            )));
        }
        v = f.put(v, *x);
    }
    Ok(v)
}

/// The register file of one card (Table 4.4), plus the 40-bit watch and filter they form.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Regs {
    pub pr: u16,
    pub pw: u16,
    pub cw: u16,
    pub cf: u16,
    pub aw_hi: u8,
    pub aw_lo: u32,
    pub af_hi: u8,
    pub af_lo: u32,
    pub gpcm: [u32; 4],
    pub scm: u32,
    pub gpce: bool,
    pub sramce: bool,
}

impl Regs {
    /// AW bits 39..0.
    pub fn aw(&self) -> u64 {
        (self.aw_hi as u64) << 32 | self.aw_lo as u64
    }
    /// AF bits 39..0.
    pub fn af(&self) -> u64 {
        (self.af_hi as u64) << 32 | self.af_lo as u64
    }
    pub fn get(&self, r: Reg) -> u32 {
        match r {
            Reg::Pr => self.pr as u32,
            Reg::Pw => self.pw as u32,
            Reg::Cw => self.cw as u32,
            Reg::Cf => self.cf as u32,
            Reg::AwHi => self.aw_hi as u32,
            Reg::AwLo => self.aw_lo,
            Reg::AfHi => self.af_hi as u32,
            Reg::AfLo => self.af_lo,
            Reg::Gpcm0 => self.gpcm[0],
            Reg::Gpcm1 => self.gpcm[1],
            Reg::Gpcm2 => self.gpcm[2],
            Reg::Gpcm3 => self.gpcm[3],
            Reg::Scm => self.scm,
            Reg::Gpce => self.gpce as u32,
            Reg::Sramce => self.sramce as u32,
        }
    }
    /// Writes a register as the hardware does: bits outside the register's width are
    /// dropped (they do not exist). `check` first rejects them (for configuration files).
    pub fn set(&mut self, r: Reg, v: u32) {
        let v = v & r.defined_mask();
        match r {
            Reg::Pr => self.pr = v as u16,
            Reg::Pw => self.pw = v as u16,
            Reg::Cw => self.cw = v as u16,
            Reg::Cf => self.cf = v as u16,
            Reg::AwHi => self.aw_hi = v as u8,
            Reg::AwLo => self.aw_lo = v,
            Reg::AfHi => self.af_hi = v as u8,
            Reg::AfLo => self.af_lo = v,
            Reg::Gpcm0 => self.gpcm[0] = v,
            Reg::Gpcm1 => self.gpcm[1] = v,
            Reg::Gpcm2 => self.gpcm[2] = v,
            Reg::Gpcm3 => self.gpcm[3] = v,
            Reg::Scm => self.scm = v,
            Reg::Gpce => self.gpce = v & 1 != 0,
            Reg::Sramce => self.sramce = v & 1 != 0,
        }
    }
    /// All registers with their values, in word-address order.
    pub fn list(&self) -> Vec<(Reg, u32)> {
        Reg::ALL.iter().map(|r| (*r, self.get(*r))).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field of Table 4.4 round-trips: encode each value that fits, decode it back, and
    /// the other fields stay zero.
    #[test]
    fn every_field_round_trips() {
        for r in Reg::ALL {
            for f in r.fields() {
                let w = f.width();
                let vals: Vec<u32> = if w <= 8 {
                    (0..(1u32 << w)).collect()
                } else {
                    vec![0, 1, (1u64 << (w - 1)) as u32, ((1u64 << w) - 1) as u32]
                };
                for x in vals {
                    let v = encode(r, &[(f.name, x)]).unwrap();
                    assert_eq!(v & !f.mask(), 0);
                    if f.name == "ps" && ps_reserved(x) != 0 {
                        assert!(describe(r, v as u64).is_err());
                        continue;
                    }
                    if r == Reg::Scm && f.name == "event" && x >= 8 {
                        assert!(describe(r, v as u64).is_err());
                        continue;
                    }
                    let d = describe(r, v as u64).unwrap();
                    for (name, got, _) in d {
                        if name == f.name {
                            assert_eq!(got, x, "{}.{name}", r.acronym());
                        } else {
                            assert_eq!(got, 0, "{}.{name} disturbed", r.acronym());
                        }
                    }
                    let mut regs = Regs::default();
                    regs.set(r, v);
                    assert_eq!(regs.get(r), v);
                }
            }
        }
    }

    #[test]
    fn table_4_4_bit_positions() {
        let g = |n| GPCM_FIELDS.iter().find(|f| f.name == n).unwrap();
        assert_eq!((g("enable").hi, g("ps").hi, g("ps").lo), (23, 22, 16));
        assert_eq!(
            (g("interrupt").hi, g("event").hi, g("event").lo),
            (15, 14, 11)
        );
        assert_eq!(
            (g("cycles_or_edges").hi, g("sm").hi, g("rm").hi),
            (10, 1, 0)
        );
        let s = |n| SCM_FIELDS.iter().find(|f| f.name == n).unwrap();
        assert_eq!(
            (s("interrupt").hi, s("mode").hi, s("mode").lo),
            (22, 21, 20)
        );
        assert_eq!(
            (s("mux_miss").hi, s("mux_rsr").hi, s("mux_pr_hi").hi),
            (19, 18, 17)
        );
        assert_eq!((s("mux_pr_mid").hi, s("mux_pr_lo").hi), (16, 15));
        assert_eq!(Reg::Cw.defined_mask(), 0x1FFF);
        assert_eq!(Reg::AwHi.defined_mask(), 0xFF);
        assert_eq!(Reg::Gpcm2.defined_mask(), 0xFF_FFFF);
        assert_eq!(Reg::Scm.defined_mask(), 0x7F_FFFF);
    }

    #[test]
    fn errors_name_the_field() {
        let e = describe(Reg::Gpcm0, 1 << 24).unwrap_err().to_string();
        assert!(e.contains("GPCM0") && e.contains("reserved"), "{e}");
        let e = Reg::parse("0xd").unwrap_err().to_string();
        assert!(e.contains("reserved"), "{e}");
        let e = encode(Reg::Scm, &[("mode", 4)]).unwrap_err().to_string();
        assert!(e.contains("SCM.mode"), "{e}");
        let e = Reg::parse("XYZ").unwrap_err().to_string();
        assert!(e.contains("unknown register"), "{e}");
        assert_eq!(Reg::parse("gpcm3").unwrap(), Reg::Gpcm3);
        assert_eq!(Reg::parse("0xC").unwrap(), Reg::Scm);
    }

    #[test]
    fn ps_groups_follow_table_4_3() {
        use machine::cpu::pipeline::Ps;
        assert_eq!(ps_states(0b10_00111).len(), 6);
        assert_eq!(ps_states(0b11_11111).len(), 9);
        assert_eq!(ps_states(0b00_01010), vec![Ps::KilledBranch]);
        assert_eq!(ps_states(0b11_00010), vec![Ps::SecondaryCacheStall]);
        // Running-mode PS[3] (reserved in Table 4.3): the restarts, no state.
        assert!(ps_restarts(0b10_01000) && ps_states(0b10_01000).is_empty());
        assert!(!ps_restarts(0b11_01000) && !ps_restarts(0b00_01000));
        assert_eq!(ps_reserved(0b10_01000), 0);
        assert_eq!(ps_reserved(0b10_10000), 0x10);
        let mut c = machine::cpu::Counters {
            restarts_counted: 7,
            ..Default::default()
        };
        c.ps[Ps::Load.code() as usize] = 5;
        c.ps[Ps::KilledBranch.code() as usize] = 100;
        assert_eq!(ps_exact(0b10_01001, &c), 12);
        assert_eq!(ps_exact(0b11_01000, &c), 100);
    }
}
