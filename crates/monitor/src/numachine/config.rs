//! Monitor configuration files: TOML with symbolic names, compiled to register values
//! (DESIGN.md "Configuration in TOML with symbolic names ... the raw register values are accepted
//! as well"). Every error names the field (`counter[2].event: ...`); unknown keys are errors.
//!
//! ```toml
//! monitor = "numachine"        # optional: the monitor this file configures (the default)
//! name = "my-config"
//! gpc_enable = true            # GPCE (4.4.6)
//! sram_enable = true           # SRAMCE
//! phase = 0                    # PR at start
//! phase_watch = 3              # PW
//! command_watch = "read-response"   # CW: a command name (see `command::NAMES`) or a number
//! command_filter = "0x3E"      # CF
//! address = "stream"           # AW/AF: a data structure's name, or "0xBASE/0xSIZE"
//! address_station = 1          # also match Table 4.1 station bits 39..36 (the home node)
//! split_id = false             # R4400 split secondary cache (SRAM mode 0)
//! queues = true                # queue histograms (item 15)
//! pipeline = false             # request the pipeline-status stream even if disabled at start
//! estimators = false           # run the Fig. 4.8 estimators even when no counter counts E/F
//!
//! [[counter]]                  # up to four, GPCM0..3 in order
//! papi = "PAPI_TOT_INS"        # a PAPI-style preset (fills event and pipeline selection), or:
//! event = "pipeline"           # Table 4.5 name (or number 0-15)
//! count = "occurrences"        # or "cycles" (bit 10)
//! ps_mode = "running"          # "single", "running", "idle" (Table 4.2)
//! ps_select = ["loads-stores", "branches", "other"]   # Table 4.3 groups, or ps_state = "load"
//! filter = ["phase", "!address", "command"]           # enabled comparisons, '!' inverts
//! mask = "receive"             # "send", "receive", "both", with '!' to invert
//! interrupt = true             # bit 15
//! preload = -1000              # a negative threshold: overflow after 1000 events
//! label = "my name"
//!
//! [sram]
//! mode = "compact-latency"     # "cache-index", "latency", "mcc", "compact-latency" (Table 4.7)
//! event = "line-requests"      # Table 4.6 name
//! mux = ["rsr", "pr-lo"]       # "miss", "rsr", "pr-hi", "pr-mid", "pr-lo"
//! count = "occurrences"
//! filter = []
//! mask = "receive"
//! interrupt = false
//! threshold = 100              # preload every word with -100 (watch-points, item 11)
//!
//! [registers]                  # raw values, written last: GPCM0 = "0x..."
//! ```

use super::gpc::EV_PIPELINE;
use super::regs::{encode, parse_u64, Reg, Regs, GPC_EVENTS, SRAM_EVENTS, SRAM_MODES};
use super::{command, Setup};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The built-in default configuration (`--monitor numachine`): instructions and cycles,
/// cache-line read and read-exclusive counts, and the compact latency histogram of every
/// cache-line request split by the Response State Register (whose bit 0 separates reads from
/// read-exclusives/upgrades, so both latencies come out of one histogram).
pub const DEFAULT: &str = r#"
name = "default"
gpc_enable = true
sram_enable = true
queues = true
estimators = true         # invalidation estimators of Fig. 4.8 beside the exact counts

[[counter]]
papi = "PAPI_TOT_INS"     # pipeline status, running cycles, all instruction groups (x4 prescaled)

[[counter]]
papi = "PAPI_TOT_CYC"     # count always (monitor clock; x3 for processor cycles)

[[counter]]
papi = "PAPI_L2_LDM"      # cache line reads {occurrences}

[[counter]]
papi = "PAPI_L2_STM"      # cache line read-exclusives {occurrences}

[sram]
mode = "compact-latency"  # Table 4.7 mode 3
event = "line-requests"   # Table 4.6 event 6
mux = ["rsr"]             # SRAM address bits 15..11 = RSR (Table 4.9)
count = "occurrences"
mask = "receive"          # the seed's advice: use the receiving mask with the RSR
"#;

#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
struct File {
    /// The monitor this file configures (`monitor::plugin::select`); only `numachine` here.
    #[serde(default)]
    monitor: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    gpc_enable: Option<bool>,
    #[serde(default)]
    sram_enable: Option<bool>,
    #[serde(default)]
    phase: Option<u16>,
    #[serde(default)]
    phase_watch: Option<u16>,
    #[serde(default)]
    command_watch: Option<toml::Value>,
    #[serde(default)]
    command_filter: Option<toml::Value>,
    #[serde(default)]
    address: Option<String>,
    #[serde(default)]
    address_station: Option<u8>,
    #[serde(default)]
    split_id: bool,
    #[serde(default)]
    queues: Option<bool>,
    #[serde(default)]
    pipeline: bool,
    #[serde(default)]
    estimators: bool,
    #[serde(default)]
    counter: Vec<CounterCfg>,
    #[serde(default)]
    sram: Option<SramCfg>,
    #[serde(default)]
    registers: BTreeMap<String, toml::Value>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
struct CounterCfg {
    papi: Option<String>,
    event: Option<toml::Value>,
    count: Option<String>,
    ps_mode: Option<String>,
    #[serde(default)]
    ps_select: Vec<String>,
    ps_state: Option<String>,
    #[serde(default)]
    filter: Vec<String>,
    mask: Option<String>,
    #[serde(default)]
    interrupt: bool,
    preload: Option<i64>,
    label: Option<String>,
    #[serde(default = "yes")]
    enable: bool,
}

fn yes() -> bool {
    true
}

#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
struct SramCfg {
    mode: Option<String>,
    event: Option<toml::Value>,
    #[serde(default)]
    mux: Vec<String>,
    count: Option<String>,
    #[serde(default)]
    filter: Vec<String>,
    mask: Option<String>,
    #[serde(default)]
    interrupt: bool,
    threshold: Option<u32>,
}

/// PAPI-style presets: (name, event, PS[6..0], count occurrences, what).
pub const PAPI: &[(&str, u8, u8, bool, &str)] = &[
    (
        "PAPI_TOT_INS",
        EV_PIPELINE,
        0b10_00111,
        false,
        "instructions completed (prescaled x4)",
    ),
    (
        "PAPI_LST_INS",
        EV_PIPELINE,
        0b10_00001,
        false,
        "load/store instructions (prescaled x4)",
    ),
    (
        "PAPI_BR_INS",
        EV_PIPELINE,
        0b10_00010,
        false,
        "branch instructions (prescaled x4)",
    ),
    (
        "PAPI_LD_INS",
        EV_PIPELINE,
        0b00_00001,
        false,
        "load instructions (prescaled x4)",
    ),
    (
        "PAPI_SR_INS",
        EV_PIPELINE,
        0b00_00010,
        false,
        "store instructions (prescaled x4)",
    ),
    (
        "PAPI_FP_INS",
        EV_PIPELINE,
        0b00_00110,
        false,
        "floating-point instructions (prescaled x4)",
    ),
    (
        "PAPI_RES_STL",
        EV_PIPELINE,
        0b11_00111,
        false,
        "cycles stalled on cache and memory (prescaled x4)",
    ),
    ("PAPI_TOT_CYC", 1, 0, false, "total cycles (monitor clock)"),
    (
        "PAPI_L2_LDM",
        4,
        0,
        true,
        "L2 read misses: cache line reads",
    ),
    (
        "PAPI_L2_STM",
        5,
        0,
        true,
        "L2 write misses: cache line read-exclusives",
    ),
    (
        "PAPI_L2_TCM",
        6,
        0,
        true,
        "L2 misses: cache line reads + read-exclusives",
    ),
    (
        "PAPI_CA_INV",
        0xE,
        0,
        true,
        "external invalidations that hit (estimate)",
    ),
];

fn err<T>(field: &str, msg: impl std::fmt::Display) -> Result<T, String> {
    Err(format!("{field}: {msg}"))
}

fn number(field: &str, v: &toml::Value) -> Result<u64, String> {
    match v {
        toml::Value::Integer(i) if *i >= 0 => Ok(*i as u64),
        toml::Value::String(s) => parse_u64(s).or_else(|e| err(field, e)),
        _ => err(field, "expected a non-negative number or a string"),
    }
}

fn event_of(field: &str, v: &toml::Value, names: &[(&str, &str)]) -> Result<u8, String> {
    if let toml::Value::String(s) = v {
        if let Some(i) = names.iter().position(|(n, _)| n == s) {
            return Ok(i as u8);
        }
    }
    let n = number(field, v).or_else(|_| {
        err(
            field,
            format!(
                "unknown event {v}: use one of {}",
                names.iter().map(|n| n.0).collect::<Vec<_>>().join(", ")
            ),
        )
    })?;
    if n as usize >= names.len() {
        return err(field, format!("event {n} is reserved or out of range"));
    }
    Ok(n as u8)
}

fn edges(field: &str, c: &Option<String>, default: bool) -> Result<u32, String> {
    match c.as_deref() {
        None => Ok(default as u32),
        Some("occurrences") | Some("transitions") => Ok(1),
        Some("cycles") => Ok(0),
        Some(x) => err(field, format!("`{x}`: use \"cycles\" or \"occurrences\"")),
    }
}

/// Count-enable bits 9..0 from filter and mask names.
fn enable_bits(field: &str, filter: &[String], mask: &Option<String>) -> Result<u32, String> {
    let mut b = 0u32;
    for f in filter {
        let (inv, name) = match f.strip_prefix('!') {
            Some(n) => (1, n),
            None => (0, f.as_str()),
        };
        let en = match name {
            "phase" => 7,
            "address" => 5,
            "command" => 3,
            _ => {
                return err(
                    &format!("{field}.filter"),
                    format!("`{f}`: use phase, address or command, optionally with '!'"),
                )
            }
        };
        b |= 1 << en | inv << (en - 1);
    }
    if let Some(m) = mask {
        let (inv, name) = match m.strip_prefix('!') {
            Some(n) => (1, n),
            None => (0, m.as_str()),
        };
        let sr = match name {
            "send" => 2,
            "receive" => 1,
            "both" => 3,
            _ => {
                return err(
                    &format!("{field}.mask"),
                    format!("`{m}`: use send, receive or both, optionally with '!'"),
                )
            }
        };
        b |= 1 << 9 | inv << 8 | sr;
    }
    Ok(b)
}

fn ps_value(field: &str, c: &CounterCfg) -> Result<u8, String> {
    use machine::cpu::pipeline::Ps;
    if let Some(s) = &c.ps_state {
        let p = Ps::ALL.iter().find(|p| p.name() == s).ok_or_else(|| {
            format!(
                "{field}.ps_state: unknown state `{s}` (states: {})",
                Ps::ALL.map(|p| p.name()).join(", ")
            )
        })?;
        return Ok(p.code());
    }
    let mode = c.ps_mode.as_deref().unwrap_or("running");
    let (hi, groups): (u8, &[&str]) = match mode {
        // "restarts": running-mode PS[3], reserved in Table 4.3 (`regs::ps_restarts`).
        "running" => (0b10, &["loads-stores", "branches", "other", "restarts"]),
        "idle" => (
            0b11,
            &[
                "primary-stalls",
                "secondary-stalls",
                "memory-other-stalls",
                "killed",
                "slips",
            ],
        ),
        "single" => return err(&format!("{field}.ps_mode"), "single mode needs ps_state"),
        x => {
            return err(
                &format!("{field}.ps_mode"),
                format!("`{x}`: use single, running or idle"),
            )
        }
    };
    let mut sel = 0u8;
    for s in &c.ps_select {
        let i = groups.iter().position(|g| g == s).ok_or_else(|| {
            format!(
                "{field}.ps_select: `{s}` is not a {mode} group (groups: {})",
                groups.join(", ")
            )
        })?;
        sel |= 1 << i;
    }
    Ok(hi << 5 | sel)
}

/// Resolves a data structure's name to (base, bytes).
pub type Resolver<'a> = &'a dyn Fn(&str) -> Option<(u64, u64)>;

/// Compiles a configuration file's text. `resolve` maps data-structure names to address
/// ranges (only available once a workload has allocated them).
pub fn compile(text: &str, file: &str, resolve: Option<Resolver>) -> Result<Setup, String> {
    let f: File = toml::from_str(text).map_err(|e| format!("{file}: {e}"))?;
    compile_file(&f, file, resolve)
}

/// A configuration file as read (`--monitor FILE.toml`, deserialized once when the run reads
/// it: `plugin::ConfigFile`), compiled at attach against the workload's memory map.
#[derive(Clone)]
pub struct Parsed(File);

impl Parsed {
    /// Deserializes the parsed file; errors name `source`, the line and the key.
    pub fn of(file: crate::plugin::ConfigFile) -> Result<Parsed, String> {
        let source = file.source().to_string();
        file.deserialize()
            .map(Parsed)
            .map_err(|e| format!("{source}: {e}"))
    }
}

/// Compiles a parsed configuration file (see [`compile`]).
pub fn compile_parsed(p: &Parsed, file: &str, resolve: Option<Resolver>) -> Result<Setup, String> {
    compile_file(&p.0, file, resolve)
}

fn compile_file(f: &File, file: &str, resolve: Option<Resolver>) -> Result<Setup, String> {
    if let Some(m) = f.monitor.as_deref().filter(|m| *m != super::NAME) {
        return Err(format!(
            "{file}: monitor = \"{m}\": not a configuration of the `{}` monitor",
            super::NAME
        ));
    }
    let mut s = Setup {
        name: f.name.clone().unwrap_or_else(|| file.to_string()),
        split_id: f.split_id,
        queues: f.queues.unwrap_or(true),
        pipeline: f.pipeline,
        estimators: f.estimators,
        ..Setup::default()
    };
    let r = &mut s.regs;
    r.gpce = f.gpc_enable.unwrap_or(true);
    r.sramce = f.sram_enable.unwrap_or(f.sram.is_some());
    r.pr = f.phase.unwrap_or(0);
    r.pw = f.phase_watch.unwrap_or(0);
    let cmd = |field: &str, v: &Option<toml::Value>| -> Result<u16, String> {
        match v {
            None => Ok(0),
            Some(toml::Value::String(n)) if command::NAMES.iter().any(|c| c.0 == n) => {
                Ok(command::NAMES.iter().find(|c| c.0 == n).unwrap().1)
            }
            Some(v) => {
                let x = number(field, v).map_err(|_| {
                    format!(
                        "{field}: unknown command {v}: use a number or one of {}",
                        command::NAMES
                            .iter()
                            .map(|c| c.0)
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                })?;
                if x > 0x1FFF {
                    return err(field, format!("{x:#x} does not fit 13 bits"));
                }
                Ok(x as u16)
            }
        }
    };
    r.cw = cmd("command_watch", &f.command_watch)?;
    r.cf = if f.command_filter.is_none() && f.command_watch.is_some() {
        0x1FFF
    } else {
        cmd("command_filter", &f.command_filter)?
    };
    if r.cw & !r.cf != 0 {
        return err("command_watch", format!("CW {:#x} has bits outside CF {:#x}: the comparison could never match (4.4.2 note 4)", r.cw, r.cf));
    }
    if let Some(a) = &f.address {
        let (base, bytes) = if let Some((b, n)) = a.split_once('/') {
            (
                parse_u64(b).or_else(|e| err("address", e))?,
                parse_u64(n).or_else(|e| err("address", e))?,
            )
        } else {
            match resolve.and_then(|r| r(a)) {
                Some(x) => x,
                None => {
                    return err(
                        "address",
                        format!(
                            "no data structure `{a}` (give a workload, or use \"0xBASE/0xSIZE\")"
                        ),
                    )
                }
            }
        };
        // The smallest aligned power-of-two block holding the range (4.4.3).
        let mut size = bytes.max(1).next_power_of_two();
        while base & !(size - 1) != (base + bytes.max(1) - 1) & !(size - 1) {
            size <<= 1;
        }
        let mut af = !(size - 1) & 0xF_FFFF_FFFF;
        let mut aw = base & af;
        if let Some(st) = f.address_station {
            if st > 15 {
                return err("address_station", "station is 4 bits (Table 4.1)");
            }
            af |= 0xF << 36;
            aw |= (st as u64) << 36;
        }
        r.aw_hi = (aw >> 32) as u8;
        r.aw_lo = aw as u32;
        r.af_hi = (af >> 32) as u8;
        r.af_lo = af as u32;
    }
    if f.counter.len() > 4 {
        return err(
            "counter",
            format!("{} counters configured; the card has four", f.counter.len()),
        );
    }
    for (i, c) in f.counter.iter().enumerate() {
        let field = format!("counter[{i}]");
        let (mut ev, mut ps, mut occ) = (0u8, 0u8, false);
        if let Some(p) = &c.papi {
            let x = PAPI.iter().find(|x| x.0 == p).ok_or_else(|| {
                format!(
                    "{field}.papi: unknown preset `{p}` (presets: {})",
                    PAPI.iter().map(|x| x.0).collect::<Vec<_>>().join(", ")
                )
            })?;
            (ev, ps, occ) = (x.1, x.2, x.3);
            s.labels[i] = p.clone();
        }
        if let Some(e) = &c.event {
            ev = event_of(&format!("{field}.event"), e, &GPC_EVENTS)?;
            s.labels[i] = GPC_EVENTS[ev as usize].0.to_string();
        }
        if ev == EV_PIPELINE && c.papi.is_none() {
            ps = ps_value(&field, c)?;
        }
        if let Some(l) = &c.label {
            s.labels[i] = l.clone();
        }
        let bits = enable_bits(&field, &c.filter, &c.mask)?;
        let v = encode(
            Reg::Gpcm0,
            &[
                ("enable", c.enable as u32),
                ("ps", ps as u32),
                ("interrupt", c.interrupt as u32),
                ("event", ev as u32),
                (
                    "cycles_or_edges",
                    edges(&format!("{field}.count"), &c.count, occ)?,
                ),
            ],
        )
        .map_err(|e| format!("{field}: {e}"))?;
        r.gpcm[i] = v | bits;
        if let Some(p) = c.preload {
            if !(-(1i64 << 32)..(1i64 << 32)).contains(&p) {
                return err(&format!("{field}.preload"), "does not fit 32 bits");
            }
            s.gpc_preload[i] = Some(p as u32);
        }
    }
    if let Some(sc) = &f.sram {
        let mode = match sc.mode.as_deref() {
            None => 0,
            Some(m) => SRAM_MODES.iter().position(|x| x.0 == m).ok_or_else(|| {
                format!(
                    "sram.mode: unknown mode `{m}` (modes: {})",
                    SRAM_MODES.map(|x| x.0).join(", ")
                )
            })? as u32,
        };
        let ev = match &sc.event {
            None => 0,
            Some(e) => event_of("sram.event", e, &SRAM_EVENTS)?,
        };
        let ok = match ev {
            2..=5 => mode == 0,
            6 => mode != 0,
            _ => true,
        };
        if !ok {
            return err(
                "sram.event",
                format!(
                    "event `{}` is not appropriate in mode `{}` (Table 4.6)",
                    SRAM_EVENTS[ev as usize].0, SRAM_MODES[mode as usize].0
                ),
            );
        }
        let mut fields = vec![
            ("interrupt", sc.interrupt as u32),
            ("mode", mode),
            ("event", ev as u32),
            ("cycles_or_edges", edges("sram.count", &sc.count, true)?),
        ];
        for m in &sc.mux {
            let name = match m.as_str() {
                "miss" => "mux_miss",
                "rsr" => "mux_rsr",
                "pr-hi" => "mux_pr_hi",
                "pr-mid" => "mux_pr_mid",
                "pr-lo" => "mux_pr_lo",
                _ => {
                    return err(
                        "sram.mux",
                        format!("`{m}`: use miss, rsr, pr-hi, pr-mid or pr-lo"),
                    )
                }
            };
            fields.push((name, 1));
        }
        let v = encode(Reg::Scm, &fields).map_err(|e| format!("sram: {e}"))?;
        r.scm = v | enable_bits("sram", &sc.filter, &sc.mask)?;
        s.sram_threshold = sc.threshold;
    }
    for (k, v) in &f.registers {
        let field = format!("registers.{k}");
        let reg = Reg::parse(k).map_err(|e| format!("{field}: {e}"))?;
        let x = number(&field, v)?;
        super::regs::describe(reg, x).map_err(|e| format!("{field}: {e}"))?;
        s.regs.set(reg, x as u32);
    }
    Ok(s)
}

/// The built-in default, compiled.
pub fn default_setup() -> Setup {
    compile(DEFAULT, "built-in default", None).expect("the built-in configuration compiles")
}

/// All register values of a setup, as (acronym, value, fields in words) for `pmusim decode`.
pub fn listing(r: &Regs) -> Vec<(Reg, u32)> {
    r.list()
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn default_compiles_to_documented_registers() {
        let s = default_setup();
        let r = &s.regs;
        assert!(r.gpce && r.sramce);
        assert_eq!(r.gpcm[0], 1 << 23 | 0x47 << 16 | 2 << 11);
        assert_eq!(r.gpcm[1], 1 << 23 | 1 << 11);
        assert_eq!(r.gpcm[2], 1 << 23 | 4 << 11 | 1 << 10);
        assert_eq!(r.gpcm[3], 1 << 23 | 5 << 11 | 1 << 10);
        assert_eq!(r.scm, 3 << 20 | 1 << 18 | 6 << 11 | 1 << 10 | 1 << 9 | 1);
        assert_eq!(s.labels[0], "PAPI_TOT_INS");
        assert!(s.uses_pipeline());
    }
    #[test]
    fn errors_name_the_field() {
        let e = compile("[[counter]]\nevent = \"bogus\"", "f.toml", None).unwrap_err();
        assert!(e.contains("counter[0].event"), "{e}");
        let e = compile(
            "[sram]\nmode = \"latency\"\nevent = \"l2-misses\"",
            "f.toml",
            None,
        )
        .unwrap_err();
        assert!(e.contains("sram.event"), "{e}");
        let e = compile("address = \"heap\"", "f.toml", None).unwrap_err();
        assert!(e.contains("address"), "{e}");
        let e = compile("bogus = 1", "f.toml", None).unwrap_err();
        assert!(e.contains("bogus"), "{e}");
        let e = compile("[registers]\nGPCM1 = \"0x1000000\"", "f.toml", None).unwrap_err();
        assert!(
            e.contains("registers.GPCM1") && e.contains("reserved"),
            "{e}"
        );
        let e = compile("command_watch = 3\ncommand_filter = 1", "f.toml", None).unwrap_err();
        assert!(e.contains("command_watch"), "{e}");
    }
    #[test]
    fn address_and_commands() {
        let s = compile(
            "address = \"0x10040000/0x8000\"\naddress_station = 2\ncommand_watch = \"0x32\"\ncommand_filter = \"0x3E\"\n[[counter]]\nevent = \"read-any\"\nfilter = [\"address\", \"!command\"]\nmask = \"receive\"",
            "f.toml",
            None,
        )
        .unwrap();
        assert_eq!(s.regs.aw(), 2 << 36 | 0x1004_0000);
        assert_eq!(s.regs.af(), 0xF << 36 | (0xF_FFFF_FFFF & !0x7FFF));
        assert_eq!(
            s.regs.gpcm[0] & 0x3FF,
            1 << 5 | 1 << 3 | 1 << 2 | 1 << 9 | 1
        );
        assert_eq!((s.regs.cw, s.regs.cf), (0x32, 0x3E));
        let r = |n: &str| {
            if n == "list" {
                Some((0x1000_0100, 0x100))
            } else {
                None
            }
        };
        let s = compile("address = \"list\"", "f", Some(&r)).unwrap();
        assert_eq!((s.regs.aw(), s.regs.af()), (0x1000_0100, 0xF_FFFF_FF00));
    }
}
