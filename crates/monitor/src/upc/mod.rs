//! Blue Gene/Q's distributed performance counters, the UPC (seed 001, IBM patent 8,595,389;
//! issue 14 items 2-7; docs/upc.md): a UPC_P of 24 14-bit counters per core, a UPC_L2 of 16
//! 10-bit counters per L2 slice, and UPC_C, whose 256 x 264-bit SRAM keeps every counter's 64-bit
//! count, fed over a 96-bit daisy chain on which each unit sends its counters in its slot of a
//! repeating 400-cycle frame of the x2 clock.
//!
//! - *State* (`unit.rs`, `probe.rs`): per local counter its configuration register, the
//!   `width`-bit register, armed / big-overflow / frozen bits and its next transfer; per unit
//!   its run bit; UPC_C's SRAM, control, accumulate and L2-combine registers, and the chain's
//!   start/stop as the units act on it.
//! - *Trigger* (`events.rs`, `probe.rs`): an observation mapped to an event (A2 core events,
//!   L2 slice events; opcodes and L1P when the machine produces them), of a hardware thread in
//!   the counter's thread mask, while the counter runs: the chain's synchronous start/stop
//!   (position-dependent delays, `chain.rs`), or its unit's own run bit with sync override.
//! - *Handler* (`unit.rs`): the local counter adds the events; at its slot (`chain.rs`) its top
//!   bit moves to its SRAM counter; an SRAM counter near overflow arms the local counter, whose
//!   next overflow raises an interrupt on the thread (`Action::Interrupt`) and may freeze it.
//!
//! The chain's slots are wake-ups of the x2 clock, one per unit packet per frame, not a tick per
//! cycle (one per frame, at its last packet, while no counter can interrupt: `Upc::irq_any`);
//! each counter also does its due transfers before counting an event, so a count falls in the
//! frame of its time whichever order the probe sees processors in.

pub mod bgpm;
pub mod bgpm_ctrs;
pub mod bgpm_l2;
pub mod bgpm_mode;
pub mod chain;
pub mod config;
pub mod counting;
pub mod counting_l2;
pub mod events;
pub mod mode1;
pub mod papi;
pub mod probe;
pub mod regs;
pub mod report;
pub mod restrict;
pub mod study;
pub mod unit;

use crate::plugin::{Entry, Error, Flag, Monitor, StudyArgs};
use config::Config;
use machine::probe::{Observation, Probe, ProbeClock, Signals};
use machine::Machine;
use probe::Upc;
use serde_json::Value;
use std::cell::RefCell;
use std::rc::Rc;

pub const NAME: &str = "upc";

pub const ENTRY: Entry = Entry {
    name: NAME,
    description: "Blue Gene/Q UPC: 24 local counters per core, 16 per L2 slice, 64-bit counts in UPC_C's SRAM over a daisy chain (Mode 0)",
    seed: "seed 001 (IBM patent 8,595,389): UPC_P, UPC_L2, UPC_C, the daisy chain, Mode 0",
    flags: &[
        Flag {
            long: "upc-period",
            value: Some("X2CYCLES"),
            help: "UPC: frame length of the daisy chain in x2 cycles (400)",
            study: true,
        },
        Flag {
            long: "upc-mode",
            value: Some("0|1"),
            help: "UPC: 0 distributed (every unit's counters), 1 detailed (one unit owns the chain: 116 events of a core, 32 of a slice)",
            study: false,
        },
        Flag {
            long: "upc-owner",
            value: Some("core:K|slice:J"),
            help: "UPC: the unit that owns the chain in Mode 1 (core:0)",
            study: false,
        },
        Flag {
            long: "bgpm-mode",
            value: Some("ll-distrib|sw-distrib|hw-distrib"),
            help: "UPC: the BGPM mode the counters obey (6 per hardware thread; docs/upc.md, BGPM modes)",
            study: false,
        },
        Flag {
            long: "upc-width",
            value: Some("BITS"),
            help: "UPC: width of the UPC_P local counters (14)",
            study: true,
        },
    ],
    study: true,
    new: || Box::new(Plugin::default()),
};

/// The monitor: its configuration, and after `attach` the probe's state.
#[derive(Default)]
pub struct Plugin {
    cfg: Config,
    upc: Option<Rc<RefCell<Upc>>>,
    /// The processor card's uncached access cost (cycles), for the report.
    uncached_cycles: u64,
    /// `pmusim stat`'s plan (`counting.rs`): its groups replace the configuration's UPC_P
    /// counters.
    stat: Option<counting::Plan>,
    /// `--monitor-process NAME` (`restrict.rs`), and after `attach` its virtualizer.
    process: Option<String>,
    restriction: Option<Rc<RefCell<restrict::Restriction>>>,
}

impl Plugin {
    /// A flag given after `--bgpm-mode` (or a file's `bgpm`) must still suit the mode.
    fn check_bgpm(&self, what: &str) -> Result<(), Error> {
        match self.cfg.bgpm {
            Some(b) => b.check(&self.cfg, what),
            None => Ok(()),
        }
    }
}

/// The probe the machine owns: the shared UPC, every call forwarded (wake-ups included).
struct Handle(Rc<RefCell<Upc>>);

impl Probe for Handle {
    #[inline]
    fn observe(&mut self, o: &Observation, sig: &mut Signals) {
        self.0.borrow_mut().observe(o, sig)
    }
    fn mmio(
        &mut self,
        proc: u16,
        t: engine::Tick,
        offset: u64,
        size: u8,
        write: Option<u64>,
        sig: &mut Signals,
    ) -> Option<u64> {
        self.0.borrow_mut().mmio(proc, t, offset, size, write, sig)
    }
    fn interest(&self) -> u32 {
        self.0.borrow().interest()
    }
    fn pipeline_before(&self) -> u32 {
        self.0.borrow().pipeline_before()
    }
    fn wakes(&self) -> Option<(ProbeClock, u64)> {
        self.0.borrow().wakes()
    }
    fn wake(&mut self, cycle: u64, t: engine::Tick, sig: &mut Signals) -> Option<u64> {
        self.0.borrow_mut().wake(cycle, t, sig)
    }
    fn retire_sink(&self) -> Option<machine::retire_sink::Shared> {
        self.0.borrow().retire_sink()
    }
    fn finish(&mut self, t: engine::Tick) {
        self.0.borrow_mut().finish(t)
    }
    fn name(&self) -> &str {
        NAME
    }
}

/// Builds the UPC of machine `m` under configuration `cfg`: every unit's counters set, the
/// overflow thresholds preloaded, the start command written at `cfg.start_cycle`.
pub fn build(m: &Machine, cfg: &Config) -> Result<Upc, Error> {
    let st = m.state();
    let cores = st.cores.len();
    let slices = st
        .preset
        .caches
        .shared
        .first()
        .map_or(0, |s| s.slices as usize);
    if cores > probe::MAX_CORES || slices > probe::MAX_SLICES {
        return Err(Error::input(format!(
            "monitor `upc`: the Mode 0 SRAM map holds 17 cores and 16 L2 slices; this machine has {cores} cores and {slices} slices"
        )));
    }
    if st.preset.cpu.threads_per_core > 4 {
        return Err(Error::input(format!(
            "monitor `upc`: a UPC_P counts 4 hardware threads; the machine has {} per core",
            st.preset.cpu.threads_per_core
        )));
    }
    let chain = chain::Chain {
        cores,
        slices,
        period: cfg.period,
        x2: st.cpu_period * 2,
    };
    let owner = if cfg.mode == 1 {
        let (slice, k) = cfg.owner;
        let (kind, n) = if slice {
            ("slice", slices)
        } else {
            ("core", cores)
        };
        if k >= n {
            return Err(Error::input(format!(
                "monitor `upc`: Mode 1 owner {kind}:{k}: this machine has {n} {kind}s"
            )));
        }
        Some(chain.pos(slice, k))
    } else {
        None
    };
    let mut u = Upc::new(chain, st.cpu_period, cfg.p_width, cfg.l2_width);
    u.c.control.reset_on_enable = cfg.reset_on_enable;
    if cfg.l2_combine {
        u.set_l2_combine(true, 0);
    }
    if let Some(o) = owner {
        u.set_mode(1, o, 0);
    }
    for pos in 0..u.chain.units() {
        // In Mode 1 only the owner's packet is on the chain.
        if owner.is_some_and(|o| o != pos) {
            continue;
        }
        let list = if u.units[pos].slice { &cfg.l2 } else { &cfg.p };
        u.configure_unit(pos, list, 0);
    }
    // The start first: its reset on enable clears the local counters, and would clear the
    // thresholds' low parts written before it (BGPM writes them after the reset, too).
    u.command(cfg.start_cycle * st.cpu_period, true);
    if cfg.bgpm.is_some_and(|b| b.sync_override()) {
        // BGPM's thread-started modes: each UPC_P's run bit set at the start cycle.
        let x2 = u.chain.x2;
        let t = (cfg.start_cycle * st.cpu_period).div_ceil(x2) * x2;
        for unit in u.units.iter_mut().filter(|x| !x.slice && !x.central) {
            for c in &mut unit.counters {
                c.run.set(t, true);
            }
        }
    }
    for &(l2, i, n) in &cfg.overflow {
        if l2 && cfg.l2_combine {
            // Under L2 combine the threshold is the combined SRAM counter's alone (BGPM's
            // `ResetThreshold` on `UPC_C_SRAM_BASE_L2_GROUP`): the slices hand over their
            // whole counts and UPC_C raises the interrupt on the transfer that wraps it
            // (`unit::transfer_central`); no slice is preloaded or armed.
            let n_sram = probe::sram_index(true, 0, i, true);
            u.write_sram(n_sram, n.wrapping_neg(), 0);
            continue;
        }
        let w = if l2 { cfg.l2_width } else { cfg.p_width };
        let half = 1u64 << (w - 1);
        let total = n.wrapping_neg();
        let hi = total & !(half - 1);
        let lo = total & (half - 1);
        for pos in 0..u.chain.units() {
            if u.units[pos].slice != l2 || owner.is_some_and(|o| o != pos) {
                continue;
            }
            let n = u.units[pos].counters[i].sram;
            u.write_sram(n, hi, 0);
            u.write_local(pos, i, lo, hi.checked_add(half).is_none(), 0);
        }
    }
    Ok(u)
}

/// Builds the UPC of `m` under `cfg` and attaches it; the handle reads its state after the run.
pub fn attach(m: &mut Machine, cfg: &Config) -> Result<Rc<RefCell<Upc>>, Error> {
    let rc = Rc::new(RefCell::new(build(m, cfg)?));
    m.attach(Box::new(Handle(rc.clone())));
    Ok(rc)
}

impl Monitor for Plugin {
    fn name(&self) -> &'static str {
        NAME
    }
    fn home_presets(&self) -> &'static [&'static str] {
        &["bgq"]
    }
    fn configure_toml(&mut self, file: crate::plugin::ConfigFile) -> Result<(), Error> {
        // The file comes first; `--upc-period` and `--upc-width` given with it then override.
        self.cfg = Config::from_file(file)?;
        Ok(())
    }
    fn flag(&mut self, long: &str, value: Option<&str>) -> Result<(), Error> {
        let v = value.unwrap_or("");
        if long == "bgpm-mode" {
            let m = bgpm_mode::BgpmMode::parse(v, "--bgpm-mode")?;
            return m.apply(&mut self.cfg, "--bgpm-mode");
        }
        if long == "upc-owner" {
            self.cfg.owner = config::parse_owner(v, "--upc-owner")?;
            if self.cfg.mode != 1 {
                self.cfg.set_mode(1);
            }
            return self.check_bgpm("--upc-owner");
        }
        let n: u64 = v
            .parse()
            .map_err(|_| Error::input(format!("--{long}: `{v}` is not a whole number")))?;
        match long {
            "upc-period" => self.cfg.period = n,
            "upc-width" => self.cfg.p_width = n as u32,
            "upc-mode" if n <= 1 => self.cfg.set_mode(n as u8),
            "upc-mode" => {
                return Err(Error::input(format!(
                    "--upc-mode: {n} is not 0 (distributed) or 1 (detailed)"
                )))
            }
            _ => {
                return Err(Error::input(format!(
                    "--{long}: not a flag of monitor `upc`"
                )))
            }
        }
        self.cfg.check_widths(&format!("--{long}"))?;
        self.check_bgpm(&format!("--{long}"))
    }
    fn attach(&mut self, m: &mut Machine) -> Result<(), Error> {
        self.uncached_cycles = m.state().preset.cpu.uncached_cycles as u64;
        let Some(plan) = &self.stat else {
            let upc = attach(m, &self.cfg)?;
            if let Some(name) = &self.process {
                self.restriction = Some(restrict::attach(m, &upc, &self.cfg, name)?);
            }
            self.upc = Some(upc);
            return Ok(());
        };
        // Group 0 attaches; the machine asks the probe's interests once, so it asks for
        // every group's.
        let mut k = 0;
        for g in 0..plan.groups() {
            k |= build(m, &plan.config(&self.cfg, g))?.interest();
        }
        let upc = Rc::new(RefCell::new(build(m, &plan.config(&self.cfg, 0))?));
        upc.borrow_mut().stat_interest = k;
        m.attach(Box::new(Handle(upc.clone())));
        self.upc = Some(upc);
        Ok(())
    }
    fn json(&self, m: &Machine) -> Option<Value> {
        let u = self.upc.as_ref()?.borrow();
        let mut doc = report::json(&u, &self.cfg, self.uncached_cycles);
        if let Some(r) = self.restricted(m) {
            doc["process"] = restrict::json(&r);
        }
        Some(doc)
    }
    /// The text, CSV and HTML reports are built from the probe, not from the JSON section:
    /// without `--json` it is not built (it cost 10 M instructions of LU's 1,170 M on `bgq`,
    /// about 1 % of the UPC's cost figure: BENCHMARKS.md).
    fn section_needs_json(&self) -> bool {
        false
    }
    fn text(&self, m: &Machine, _section: &Value, _top: usize) -> String {
        match &self.upc {
            Some(u) => {
                let r = ::report::model::Report {
                    sections: vec![self.with_process(
                        m,
                        report::section(&u.borrow(), &self.cfg, self.uncached_cycles),
                    )],
                };
                ::report::render::text::render(&r)
            }
            None => String::new(),
        }
    }
    fn csv(&self, m: &Machine, _section: &Value) -> Vec<(String, String)> {
        match &self.upc {
            Some(u) => self
                .with_process(
                    m,
                    report::section(&u.borrow(), &self.cfg, self.uncached_cycles),
                )
                .tables()
                .map(|t| (format!("{}.csv", t.id), ::report::render::csv::table(t)))
                .collect(),
            None => Vec::new(),
        }
    }
    /// `--monitor-process NAME`: counter virtualization only (`restrict.rs`: the UPC has no
    /// process mark).
    fn restrict(
        &mut self,
        process: &str,
        by: Option<crate::plugin::Restrict>,
    ) -> Result<crate::plugin::Restrict, Error> {
        let way = restrict::way(by)?;
        self.process = Some(process.to_string());
        Ok(way)
    }
    /// Virtualizing: the switch path reads the counters one hardware context owns.
    fn adjust_preset(&mut self, p: &mut machine::config::Preset) -> Result<(), Error> {
        if let Some(name) = &self.process {
            let tpc = p.cpu.threads_per_core.max(1) as usize;
            let Some(os) = p.os.as_mut() else {
                return Err(Error::input(format!(
                    "--monitor-process {name}: restricting a monitor to a process needs processes (a multiprogrammed run a+b, --os, or an [os] preset section)"
                )));
            };
            os.virtual_counters += restrict::counters_read(&self.cfg, tpc);
        }
        Ok(())
    }
    fn decode_register(&self, reg: &str, value: &str) -> Option<Result<String, Error>> {
        regs::decode(reg, value)
    }
    fn describe_config(&self) -> Option<Result<String, Error>> {
        Some(Ok(self.cfg.describe()))
    }
    fn counting(&mut self) -> Option<&mut dyn crate::counting::Counting> {
        Some(self)
    }
    fn study(&mut self, a: &StudyArgs) -> Option<Result<(String, u8), Error>> {
        Some(study::run(a))
    }
}
