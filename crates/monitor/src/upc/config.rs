//! The UPC's configuration as a user writes it (`--monitor FILE.toml`, `monitor = "upc"`):
//! counters by `PEVT_*` name with their flags, BGPM-style overflow thresholds, and the chain's
//! parameters; and the built-in one (every counter of every unit enabled). Examples in
//! docs/upc.md.

use super::events::{self, a2, Group, L2Event, P_EVENTS};
use super::probe::{L2_COUNTERS, P_COUNTERS};
use super::regs::CounterCfg;
use crate::plugin::Error;
use serde::Deserialize;

/// One UPC_P counter as written (`[[counter]]`), the same on every core.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CounterSpec {
    pub index: usize,
    pub event: String,
    /// Hardware threads counted (several: thread combine); default all.
    #[serde(default)]
    pub threads: Option<Vec<u8>>,
    #[serde(default)]
    pub edge: bool,
    #[serde(default)]
    pub invert: bool,
    #[serde(default)]
    pub sync_override: bool,
    #[serde(default)]
    pub freeze: bool,
    /// BGPM overflow threshold: an interrupt after this many events (SRAM and local counter
    /// preloaded to 2^64 - threshold, interrupt enabled).
    #[serde(default)]
    pub overflow: Option<u64>,
}

/// One UPC_L2 counter (`[[l2counter]]`), the same on every slice.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct L2Spec {
    pub index: usize,
    pub event: String,
    #[serde(default)]
    pub overflow: Option<u64>,
}

/// The file.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    monitor: Option<String>,
    #[serde(default)]
    mode: Option<u8>,
    #[serde(default)]
    owner: Option<String>,
    #[serde(default)]
    period: Option<u64>,
    #[serde(default)]
    p_width: Option<u32>,
    #[serde(default)]
    l2_width: Option<u32>,
    #[serde(default)]
    start_cycle: Option<u64>,
    #[serde(default)]
    l2_combine: Option<bool>,
    #[serde(default)]
    reset_on_enable: Option<bool>,
    #[serde(default)]
    counter: Vec<CounterSpec>,
    #[serde(default)]
    l2counter: Vec<L2Spec>,
    #[serde(default)]
    bgpm: Option<String>,
}

/// The UPC's configuration, compiled to register values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Frame length in x2 cycles (400).
    pub period: u64,
    /// Local counter widths (14 and 10).
    pub p_width: u32,
    pub l2_width: u32,
    /// Processor cycle at which UPC_C's start command is written.
    pub start_cycle: u64,
    pub l2_combine: bool,
    pub reset_on_enable: bool,
    pub p: Vec<CounterCfg>,
    pub l2: Vec<CounterCfg>,
    /// Overflow thresholds: (L2 counter?, counter, threshold).
    pub overflow: Vec<(bool, usize, u64)>,
    /// UPC_C's mode: 0 distributed, 1 detailed (one unit owns the chain; `mode1.rs`).
    pub mode: u8,
    /// Mode 1's owner: (a slice?, its index); core 0 by default.
    pub owner: (bool, usize),
    /// The BGPM mode the counters obey (`bgpm_mode`); `None`: the registers as written.
    pub bgpm: Option<super::bgpm_mode::BgpmMode>,
    /// PAPI presets asked for by name (`event = "PAPI_..."`): (first counter, preset), its
    /// events on consecutive counters; the report computes each as PAPI does.
    pub presets: Vec<(usize, &'static str)>,
}

impl Default for Config {
    /// Every counter of every unit enabled, synchronized to the chain: UPC_P counters 0..16 the
    /// 17 A2 events over all threads, 17..23 load, store and L1 I misses one thread each; UPC_L2
    /// counters on the 10 modelled driver events and 6 protocol events (`DEFAULT_L2`).
    fn default() -> Config {
        let mut p = Vec::new();
        // The A2 events before the commit events (those follow from retirements, which the
        // opcode group counts: `docs/upc-opcodes.toml`).
        for e in P_EVENTS
            .iter()
            .filter(|e| e.group == Group::A2 && e.sub < a2::RETIRED)
        {
            p.push(CounterCfg {
                event: e.sub,
                group: e.group as u8,
                threads: 0xf,
                enable: true,
                ..Default::default()
            });
        }
        let per_thread: Vec<_> = [a2::LD_MISS, a2::ST_MISS, a2::IL1_MISS]
            .iter()
            .map(|&s| events::p_event(Group::A2, s).expect("an A2 event"))
            .collect();
        let mut k = 0;
        while p.len() < P_COUNTERS {
            let e = per_thread[k % per_thread.len()];
            p.push(CounterCfg {
                event: e.sub,
                group: e.group as u8,
                threads: 1 << (k % 4),
                enable: true,
                ..Default::default()
            });
            k += 1;
        }
        let l2 = DEFAULT_L2
            .iter()
            .map(|&e| CounterCfg {
                event: e as u8,
                enable: true,
                ..Default::default()
            })
            .collect();
        Config {
            period: 400,
            p_width: 14,
            l2_width: 10,
            start_cycle: 0,
            l2_combine: false,
            reset_on_enable: true,
            p,
            l2,
            overflow: Vec::new(),
            mode: 0,
            owner: (false, 0),
            bgpm: None,
            presets: Vec::new(),
        }
    }
}

impl Config {
    /// Reads a configuration file; `source` names it in errors.
    pub fn from_toml(text: &str, source: &str) -> Result<Config, Error> {
        let f: File = toml::from_str(text)
            .map_err(|e| Error::input(format!("{source}: {}", e.message().trim())))?;
        Config::from_parsed(f, source)
    }

    /// Reads a configuration file parsed once by the run (`plugin::ConfigFile`).
    pub fn from_file(file: crate::plugin::ConfigFile) -> Result<Config, Error> {
        let source = file.source().to_string();
        let f: File = file
            .deserialize()
            .map_err(|e| Error::input(format!("{source}: {}", e.message().trim())))?;
        Config::from_parsed(f, &source)
    }

    fn from_parsed(f: File, source: &str) -> Result<Config, Error> {
        if let Some(m) = &f.monitor {
            if m != "upc" {
                return Err(Error::input(format!(
                    "{source}: monitor: `{m}` is not `upc`"
                )));
            }
        }
        let mut c = Config::default();
        match f.mode {
            None | Some(0) => {}
            Some(1) => c.set_mode(1),
            Some(2) => {
                return Err(Error::input(format!(
                    "{source}: mode: 2 (the UPC's trace mode, UPC_TRACE_MODE in the driver) is not modelled: 0 (distributed) or 1 (detailed)"
                )))
            }
            Some(m) => return Err(Error::input(format!("{source}: mode: {m} is not 0 or 1"))),
        }
        if let Some(o) = &f.owner {
            if c.mode != 1 {
                return Err(Error::input(format!(
                    "{source}: owner: the chain has an owner in Mode 1 only (mode = 1)"
                )));
            }
            c.owner = parse_owner(o, &format!("{source}: owner"))?;
        }
        if let Some(p) = f.period {
            c.period = p;
        }
        if let Some(w) = f.p_width {
            c.p_width = w;
        }
        if let Some(w) = f.l2_width {
            c.l2_width = w;
        }
        c.check_widths(source)?;
        c.start_cycle = f.start_cycle.unwrap_or(0);
        c.l2_combine = f.l2_combine.unwrap_or(false);
        c.reset_on_enable = f.reset_on_enable.unwrap_or(true);
        if !f.counter.is_empty() || !f.l2counter.is_empty() {
            c.p = vec![CounterCfg::default(); P_COUNTERS];
            c.l2 = vec![CounterCfg::default(); L2_COUNTERS];
        }
        let mut seen = [false; P_COUNTERS];
        for s in &f.counter {
            let what = format!("{source}: counter {}", s.index);
            if s.index >= P_COUNTERS {
                return Err(Error::input(format!(
                    "{what}: a UPC_P has counters 0..{}",
                    P_COUNTERS - 1
                )));
            }
            if std::mem::replace(&mut seen[s.index], true) {
                return Err(Error::input(format!("{what}: configured twice")));
            }
            let mut threads = 0u8;
            for &k in s.threads.as_deref().unwrap_or(&[0, 1, 2, 3]) {
                if k > 3 {
                    return Err(Error::input(format!(
                        "{what}: threads: {k} is not a hardware thread 0..3"
                    )));
                }
                threads |= 1 << k;
            }
            let parts: Vec<&events::PEvent> =
                match super::papi::lookup(&s.event, &format!("{what}: event")) {
                    Some(p) => {
                        let p = p?;
                        c.presets.push((s.index, p.name));
                        preset_counters(p, s, &mut seen, &what)?
                    }
                    None => vec![p_event_named(&s.event, &what)?],
                };
            for (j, e) in parts.into_iter().enumerate() {
                let cfg = CounterCfg {
                    event: e.sub,
                    group: e.group as u8,
                    threads,
                    edge: s.edge,
                    invert: s.invert,
                    sync_override: s.sync_override,
                    int_enable: s.overflow.is_some(),
                    freeze: s.freeze,
                    enable: true,
                };
                cfg.check_p(&what)?;
                c.p[s.index + j] = cfg;
            }
            if let Some(n) = s.overflow {
                c.overflow
                    .push((false, s.index, check_threshold(n, &what)?));
            }
        }
        let mut seen = [false; L2_COUNTERS];
        let mut combined = None;
        for s in &f.l2counter {
            let what = format!("{source}: l2counter {}", s.index);
            if s.index >= L2_COUNTERS {
                return Err(Error::input(format!(
                    "{what}: a UPC_L2 has counters 0..{}",
                    L2_COUNTERS - 1
                )));
            }
            if std::mem::replace(&mut seen[s.index], true) {
                return Err(Error::input(format!("{what}: configured twice")));
            }
            let (e, comb) = events::l2_event_named(&s.event).ok_or_else(|| {
                Error::input(format!(
                    "{what}: event: `{}` is not an L2 event (PEVT_L2_*, or one of pmusim's protocol events: docs/bgq.md)",
                    s.event
                ))
            })?;
            if !e.modelled() {
                return Err(Error::input(format!(
                    "{what}: event: {} is about speculation, which pmusim does not model",
                    s.event
                )));
            }
            if let Some(comb) = comb {
                if combined.is_some_and(|x| x != comb) {
                    return Err(Error::input(format!(
                        "{what}: event: {} mixes combined and per-slice L2 events in one set (UPC_C's L2 combine is one bit for every slice)",
                        s.event
                    )));
                }
                combined = Some(comb);
            }
            if let Some(n) = s.overflow {
                c.overflow.push((true, s.index, check_threshold(n, &what)?));
            }
            c.l2[s.index] = CounterCfg {
                event: e as u8,
                int_enable: s.overflow.is_some(),
                enable: true,
                ..Default::default()
            };
        }
        if let Some(comb) = combined {
            if f.l2_combine.is_some_and(|x| x != comb) {
                return Err(Error::input(format!(
                    "{source}: l2_combine = {} contradicts the L2 events chosen",
                    !comb
                )));
            }
            c.l2_combine = comb;
        }
        if let Some(b) = &f.bgpm {
            super::bgpm_mode::BgpmMode::parse(b, &format!("{source}: bgpm"))?
                .apply(&mut c, source)?;
        }
        Ok(c)
    }

    /// Sets the mode; Mode 1 without counters of the user's turns a core owner's local counters
    /// to `mode1::core_locals` (the opcode groups without a raw bit, and more).
    pub fn set_mode(&mut self, mode: u8) {
        if mode == 1 && self.mode != 1 && self.p == Config::default().p {
            self.p = super::mode1::core_locals();
        }
        self.mode = mode;
    }

    /// Widths the counters can have (the study sweeps 6..14), and a frame holding a slot.
    pub fn check_widths(&self, source: &str) -> Result<(), Error> {
        for (name, w) in [("p_width", self.p_width), ("l2_width", self.l2_width)] {
            if !(2..=32).contains(&w) {
                return Err(Error::input(format!(
                    "{source}: {name}: {w} bits is outside 2..32"
                )));
            }
        }
        if !(16..=1_000_000).contains(&self.period) {
            return Err(Error::input(format!(
                "{source}: period: {} x2 cycles is outside 16..1000000",
                self.period
            )));
        }
        Ok(())
    }

    /// The configuration in words (`pmusim decode --config`).
    pub fn describe(&self) -> String {
        let mut s = format!(
            "UPC Mode {}{}: frame {} x2 cycles, UPC_P {} bits, UPC_L2 {} bits, start at cycle {}, L2 combine {}, reset on enable {}\n",
            self.mode,
            if self.mode == 1 {
                format!(
                    " (owner {} {})",
                    if self.owner.0 { "slice" } else { "core" },
                    self.owner.1
                )
            } else if let Some(b) = self.bgpm {
                format!(" under {}", b.driver())
            } else {
                String::new()
            },
            self.period, self.p_width, self.l2_width, self.start_cycle, self.l2_combine, self.reset_on_enable
        );
        for (i, c) in self.p.iter().enumerate().filter(|(_, c)| c.enable) {
            let name = Group::from_code(c.group as u64)
                .and_then(|g| events::p_event(g, c.event))
                .map_or("?", |e| e.name);
            s.push_str(&format!(
                "UPC_P_CFG{i} = {:#x}  {name} threads {:04b}\n",
                c.encode(),
                c.threads
            ));
        }
        for (i, c) in self.l2.iter().enumerate().filter(|(_, c)| c.enable) {
            s.push_str(&format!(
                "UPC_L2_CFG{i} = {:#x}  {}\n",
                c.encode(),
                events::l2_name(c.event, self.l2_combine)
            ));
        }
        s
    }
}

/// The UPC_P event called `name` in a configuration file, or why not; `what` names the place.
fn p_event_named(name: &str, what: &str) -> Result<&'static events::PEvent, Error> {
    if let Some(n) = events::absent_opcode(name) {
        return Err(Error::input(format!(
            "{what}: event: {n} is an opcode group no instruction class of pmusim falls in (docs/upc.md, Opcode group)"
        )));
    }
    events::p_event_named(name).ok_or_else(|| {
        Error::input(format!(
            "{what}: event: `{name}` is not a UPC_P event pmusim produces, nor a PAPI preset of the chip (docs/upc.md, Events, PAPI presets)"
        ))
    })
}

/// The counters PAPI preset `p` takes from counter `s.index` on (one per event), marked in
/// `seen`; a preset is one value, so an overflow threshold or edge/invert on it is refused.
fn preset_counters(
    p: &super::papi::Preset,
    s: &CounterSpec,
    seen: &mut [bool; P_COUNTERS],
    what: &str,
) -> Result<Vec<&'static events::PEvent>, Error> {
    let n = p.events.len();
    if s.index + n > P_COUNTERS {
        return Err(Error::input(format!(
            "{what}: event: {} takes {n} counters ({}), counters {}..{} do not exist",
            p.name,
            p.events.join(", "),
            s.index,
            s.index + n - 1
        )));
    }
    if s.overflow.is_some() || s.edge || s.invert {
        return Err(Error::input(format!(
            "{what}: event: {} is computed from {n} counters; overflow, edge and invert apply to one event (give them on a PEVT_* counter)",
            p.name
        )));
    }
    for (i, taken) in seen
        .iter_mut()
        .enumerate()
        .take(s.index + n)
        .skip(s.index + 1)
    {
        if std::mem::replace(taken, true) {
            return Err(Error::input(format!(
                "{what}: event: {} takes counters {}..{}, and counter {i} is configured too",
                p.name,
                s.index,
                s.index + n - 1
            )));
        }
    }
    Ok(p.parts())
}

/// Mode 1's owner as written: `core:K` or `slice:J`.
pub fn parse_owner(text: &str, what: &str) -> Result<(bool, usize), Error> {
    let bad = || {
        Error::input(format!(
            "{what}: `{text}` is not `core:K` or `slice:J` (the unit that owns the chain in Mode 1)"
        ))
    };
    let (kind, n) = text.split_once(':').ok_or_else(bad)?;
    let n: usize = n.trim().parse().map_err(|_| bad())?;
    match kind.trim() {
        "core" => Ok((false, n)),
        "slice" => Ok((true, n)),
        _ => Err(bad()),
    }
}

/// The UPC_L2 counters of the built-in configuration: every modelled event of the driver's 16,
/// then six protocol events.
pub const DEFAULT_L2: [L2Event; 16] = {
    use L2Event::*;
    [
        Hits,
        Misses,
        Prefetch,
        FetchLine,
        StoreLine,
        StorePartialLine,
        ReqReject,
        ReqRetire,
        ReqMissAndEvict,
        MissAndEvict,
        Read,
        ReadEx,
        Upgrade,
        Writeback,
        InvalidateSent,
        DataSent,
    ]
};

fn check_threshold(n: u64, what: &str) -> Result<u64, Error> {
    if n == 0 {
        return Err(Error::input(format!(
            "{what}: overflow: a threshold of 0 events never fires"
        )));
    }
    Ok(n)
}

/// The A2 cycles event's configuration (used by the study and tests).
pub fn cycles_counter() -> CounterCfg {
    CounterCfg {
        event: a2::CYCLES,
        group: Group::A2 as u8,
        threads: 0xf,
        enable: true,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_compiles_and_refuses_conflicts() {
        let c = Config::from_toml(
            r#"
monitor = "upc"
period = 800
[[counter]]
index = 3
event = "PEVT_LSU_COMMIT_LD_MISSES"
threads = [0, 2]
overflow = 1000
[[l2counter]]
index = 0
event = "PEVT_L2_REQ_RETIRE"
"#,
            "f.toml",
        )
        .unwrap();
        assert_eq!(c.period, 800);
        assert!(c.p[3].enable && c.p[3].int_enable && c.p[3].threads == 0b101);
        assert!(!c.p[0].enable);
        assert!(c.l2_combine);
        assert_eq!(c.overflow, vec![(false, 3, 1000)]);
        for (text, want) in [
            ("[[counter]]\nindex = 1\nevent = \"PEVT_NOPE\"\n", "f.toml: counter 1: event: `PEVT_NOPE`"),
            ("[[counter]]\nindex = 24\nevent = \"PEVT_CYCLES\"\n", "counters 0..23"),
            ("[[counter]]\nindex = 1\nevent = \"PEVT_IU_IL1_MISS\"\nedge = true\n", "edge and invert apply to level events"),
            ("[[l2counter]]\nindex = 0\nevent = \"PEVT_L2_REQ_RETIRE\"\n[[l2counter]]\nindex = 1\nevent = \"PEVT_L2_REQ_RETIRE_SLICE\"\n", "mixes combined and per-slice"),
            ("[[l2counter]]\nindex = 0\nevent = \"PEVT_L2_SPEC_RETRY\"\n", "speculation, which pmusim does not model"),
            ("mode = 2\n", "mode: 2 (the UPC's trace mode"),
            ("mode = 3\n", "mode: 3 is not 0 or 1"),
            ("owner = \"core:1\"\n", "Mode 1 only"),
            ("mode = 1\nowner = \"l2:1\"\n", "f.toml: owner: `l2:1` is not"),
            ("p_width = 40\n", "p_width: 40 bits"),
            ("bogus = 1\n", "f.toml: unknown field `bogus`"),
        ] {
            let e = Config::from_toml(text, "f.toml").unwrap_err();
            assert_eq!(e.code, 2);
            assert!(e.msg.contains(want), "{text}: {}", e.msg);
        }
    }

    #[test]
    fn default_enables_every_counter() {
        let c = Config::default();
        assert_eq!(c.p.len(), 24);
        assert!(c.p.iter().all(|c| c.enable && c.check_p("x").is_ok()));
        assert!(c.l2.iter().all(|c| c.enable));
    }
}
