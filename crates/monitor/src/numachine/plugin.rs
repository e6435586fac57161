//! The NUMAchine monitor as a plug-in: `--monitor numachine` (the built-in configuration,
//! [`config::DEFAULT`]) or `--monitor FILE.toml` (examples in `docs/numachine/`).

use super::{config, decode, report, section, NumachineMonitor};
use crate::plugin::{Entry, Error, Monitor, Shared};
use machine::Machine;
use serde_json::Value;
use std::cell::RefCell;
use std::rc::Rc;

/// The monitor's registry name (also the JSON section's key).
pub const NAME: &str = "numachine";

pub const ENTRY: Entry = Entry {
    name: NAME,
    description: "NUMAchine processor-card monitor: PhaseID, watch/filter, 4 counters, 64K SRAM counters, latency timer, estimators, interrupts",
    seed: "seed 000, sections 4.3-4.5",
    flags: &[crate::plugin::Flag {
        long: "virtualize",
        value: Some("PROCESS"),
        help: "also count PROCESS alone: counter virtualization at context switch (per-thread totals summed, as perf_event_open counts one task; the OS reads the 4 counters at each switch, [os] virtual_counters = 4), beside the exact per-process counts",
        study: false,
    }],
    study: false,
    new: || Box::new(Plugin::default()),
};

#[derive(Default)]
pub struct Plugin {
    /// A configuration file (parsed, name); `None`: the built-in configuration.
    file: Option<(config::Parsed, String)>,
    /// The attached monitor, shared with the machine.
    pub(super) mon: Option<Rc<RefCell<NumachineMonitor>>>,
    /// `--virtualize PROCESS` (or `--monitor-process`), and the flag that asked.
    virtualize: Option<String>,
    flag: &'static str,
    /// `pmusim stat`'s plan (`counting.rs`): its groups replace the configuration.
    pub(super) stat: Option<super::counting::Plan>,
}

impl Plugin {
    /// The configuration without a workload's memory map (names do not resolve).
    fn setup(&self) -> Result<super::Setup, Error> {
        match &self.file {
            None => Ok(config::default_setup()),
            Some((f, src)) => config::compile_parsed(f, src, None).map_err(Error::input),
        }
    }
}

impl Monitor for Plugin {
    fn name(&self) -> &'static str {
        NAME
    }
    fn home_presets(&self) -> &'static [&'static str] {
        &["numachine"]
    }

    fn flag(&mut self, long: &str, value: Option<&str>) -> Result<(), Error> {
        match (long, value) {
            ("virtualize", Some(v)) => {
                self.virtualize = Some(v.to_string());
                self.flag = "--virtualize";
                Ok(())
            }
            _ => Err(Error::input(format!(
                "--{long}: not a flag of monitor `{NAME}`"
            ))),
        }
    }

    /// `--monitor-process NAME`: the card has no process-mark hardware, so counter
    /// virtualization (what `--virtualize NAME` does).
    fn restrict(
        &mut self,
        process: &str,
        by: Option<crate::plugin::Restrict>,
    ) -> Result<crate::plugin::Restrict, Error> {
        use crate::plugin::Restrict;
        match by.unwrap_or(Restrict::Virtualization) {
            Restrict::Virtualization => {
                self.virtualize = Some(process.to_string());
                self.flag = "--monitor-process";
                Ok(Restrict::Virtualization)
            }
            by => Err(crate::plugin::cannot_restrict(NAME, by)),
        }
    }

    /// Virtualizing: the operating system saves and restores the card's four counters at
    /// every context switch (`[os] virtual_counters`).
    fn adjust_preset(&mut self, preset: &mut machine::config::Preset) -> Result<(), Error> {
        if self.virtualize.is_some() {
            if let Some(os) = preset.os.as_mut() {
                os.virtual_counters += 4;
            }
        }
        Ok(())
    }

    fn configure_toml(&mut self, file: crate::plugin::ConfigFile) -> Result<(), Error> {
        let source = file.source().to_string();
        self.file = Some((config::Parsed::of(file).map_err(Error::input)?, source));
        Ok(())
    }

    /// Compiles the configuration against the workload's memory map and attaches the cards.
    fn attach(&mut self, m: &mut Machine) -> Result<(), Error> {
        let setup = match &self.file {
            None if self.stat.is_some() => self.stat.as_ref().expect("checked").setup(0), // group 0
            None => config::default_setup(),
            Some((parsed, spec)) => {
                let map = &m.state().map;
                let resolve = |name: &str| {
                    map.regions()
                        .iter()
                        .find(|r| r.name == name)
                        .map(|r| (r.base, r.bytes))
                };
                config::compile_parsed(parsed, spec, Some(&resolve)).map_err(|e| {
                    if e.starts_with("address:") {
                        let names: Vec<&str> =
                            map.regions().iter().map(|r| r.name.as_str()).collect();
                        Error::input(format!(
                            "{e}; this workload's data structures: {}",
                            names.join(", ")
                        ))
                    } else {
                        Error::input(e)
                    }
                })?
            }
        };
        let mut mon = NumachineMonitor::new(&m.state().preset, setup).map_err(Error::input)?;
        if let Some(plan) = &self.stat {
            // Group 0 attaches; a rotation may program another group's events.
            mon.stat_interest = plan.interest(&m.state().preset);
        }
        if let Some(name) = &self.virtualize {
            let v = crate::virt::Virtualizer::named(m, name, super::VIRT_VALUES, self.flag)?;
            mon.virtualize(v);
        }
        let (probe, handle) = Shared::new(mon);
        m.attach(Box::new(probe));
        self.mon = Some(handle);
        Ok(())
    }

    fn json(&self, m: &Machine) -> Option<Value> {
        let mon = self.mon.as_ref()?;
        Some(report::json(m.state(), &mon.borrow()))
    }

    fn section(&self, m: &Machine, _json: &Value, top: usize) -> Option<::report::Section> {
        let mon = self.mon.as_ref()?;
        Some(section::build(m.state(), &mon.borrow(), top))
    }

    /// The section is built from the cards, so a text report does not build the JSON.
    fn section_needs_json(&self) -> bool {
        false
    }

    fn counting(&mut self) -> Option<&mut dyn crate::counting::Counting> {
        Some(self)
    }

    fn decode_register(&self, reg: &str, value: &str) -> Option<Result<String, Error>> {
        Some(decode::register(reg, value))
    }

    fn describe_config(&self) -> Option<Result<String, Error>> {
        Some(self.setup().and_then(|s| decode::config(&s)))
    }

    fn decode_register_json(&self, reg: &str, value: &str) -> Option<Result<Value, Error>> {
        Some(decode::register_json(reg, value))
    }

    fn describe_config_json(&self) -> Option<Result<Value, Error>> {
        Some(self.setup().and_then(|s| decode::config_json(&s)))
    }
}
