//! The memory controller's monitor and studies (issue 16 items 2 and 6).
//!
//! - [`adaptive`]: the closed loop (`--monitor memctl`): beside every memory controller a
//!   tuning controller reads two Addies (write-buffer hit, read-buffer hit) on a period and
//!   sets the watermark and the read-ahead enable by seed 002's rules, through the machine's
//!   settings (`probe::Action::Set`).
//! - [`study`]: `pmusim study memctl` measures the seed 002 interface buffer's effect per
//!   workload (DRAM transactions and execution time with and without it, on `elan` and
//!   `numachine`), and with `--memctl-sweep` runs every fixed setting (watermark 1..=capacity,
//!   read-ahead on and off) and the adaptive loop, tabulating time and DRAM traffic.
//!
//! The machine side is `machine::mem` (docs/memory-buffer.md).
//!
//! - *State*, *trigger*, *handler*: see [`adaptive`] (the study keeps one row per run).

pub mod adaptive;
pub mod counting;
pub mod report;
pub mod study;

use crate::plugin::{Entry, Error, Flag, Monitor, Restrict, Shared, StudyArgs};
use adaptive::{Adaptive, Rule, Rules};
use machine::config::Preset;
use machine::mem::config::MemCtlCfg;
use machine::Machine;
use serde_json::Value;
use std::cell::RefCell;
use std::rc::Rc;

pub const NAME: &str = "memctl";

pub const ENTRY: Entry = Entry {
    name: NAME,
    description: "Closed-loop memory controller: reads two Addies per controller on a period and sets the buffer's watermark and read-ahead (enables --memctl on if the preset has no controller); study memctl: the buffer's effect and every fixed setting against the loop",
    seed: "seed 002, 'Write buffer hit monitoring', 'Read buffer hit monitoring', Figure 5",
    flags: &[
        Flag {
            long: "memctl-period",
            value: Some("CYCLES"),
            help: "Processor cycles between two decisions of the loop (default 10000)",
            study: true,
        },
        Flag {
            long: "memctl-rule",
            value: Some("cost|seed"),
            help: "The loop's rules: cost (default: read-ahead against its break-even from the DRAM timings, the watermark searched for fewer requests kept waiting by writes) or seed (seed 002's rules on the write-buffer and read-buffer hit averages)",
            study: true,
        },
        Flag {
            long: "memctl-step",
            value: Some("UNITS"),
            help: "Rule cost: the watermark search's coarse step in buffer units (default: one block, 4 words on elan, 1 line in line mode)",
            study: true,
        },
        Flag {
            long: "memctl-hit",
            value: Some("LOW,HIGH"),
            help: "Rule seed: write-buffer hit averages below LOW halve the watermark, above HIGH double it (default 0.25,0.5)",
            study: true,
        },
        Flag {
            long: "memctl-rb-low",
            value: Some("RATIO"),
            help: "Rule seed: read-buffer hit average below which read-ahead is turned off (default 0.25)",
            study: true,
        },
        Flag {
            long: "memctl-retry",
            value: Some("N"),
            help: "Decisions read-ahead stays off before it is tried again (default 8)",
            study: true,
        },
        Flag {
            long: "memctl-width",
            value: Some("BITS"),
            help: "Width of the loop's Addies, 4..=16 bits (default 8)",
            study: true,
        },
        Flag {
            long: "memctl-sweep",
            value: None,
            help: "study memctl: every fixed setting (watermark 1..=capacity x read-ahead on/off) and the adaptive loop, per workload",
            study: true,
        },
    ],
    study: true,
    new: || Box::new(Plugin::default()),
};

/// The loop's rules and, after `attach`, its probe.
#[derive(Default)]
pub struct Plugin {
    rules: Rules,
    sweep: bool,
    probe: Option<Rc<RefCell<Adaptive>>>,
    /// `pmusim stat`'s requests (`counting.rs`): the run then attaches the request tally
    /// instead of the loop.
    stat: Option<counting::Stat>,
}

impl Plugin {
    /// Applies one of the loop's flags to `rules` (shared by runs and the study).
    pub fn rule_flag(rules: &mut Rules, long: &str, v: &str) -> Result<(), Error> {
        let num = |what: &str| -> Result<f64, Error> {
            v.trim()
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| Error::input(format!("--{long} {v}: {what} is not a number")))
        };
        match long {
            "memctl-period" => {
                rules.period = v.parse().map_err(|_| {
                    Error::input(format!("--memctl-period {v}: not a number of cycles"))
                })?
            }
            "memctl-hit" => {
                let (a, b) = v.split_once(',').ok_or_else(|| {
                    Error::input(format!(
                        "--memctl-hit {v}: two ratios LOW,HIGH (e.g. 0.25,0.5)"
                    ))
                })?;
                let p = |x: &str| {
                    x.trim().parse::<f64>().map_err(|_| {
                        Error::input(format!("--memctl-hit {v}: `{x}` is not a ratio"))
                    })
                };
                rules.hit_low = p(a)?;
                rules.hit_high = p(b)?;
            }
            "memctl-rb-low" => rules.rb_low = num("the ratio")?,
            "memctl-rule" => {
                rules.rule = match v {
                    "cost" => Rule::Cost,
                    "seed" => Rule::Seed,
                    _ => return Err(Error::input(format!("--memctl-rule {v}: cost or seed"))),
                }
            }
            "memctl-step" => {
                rules.step = v.parse().map_err(|_| {
                    Error::input(format!("--memctl-step {v}: not a number of buffer units"))
                })?
            }
            "memctl-retry" => {
                rules.retry = v.parse().map_err(|_| {
                    Error::input(format!("--memctl-retry {v}: not a number of decisions"))
                })?
            }
            "memctl-width" => {
                rules.width = v
                    .parse()
                    .map_err(|_| Error::input(format!("--memctl-width {v}: not a width in bits")))?
            }
            _ => {
                return Err(Error::input(format!(
                    "--{long}: not a flag of monitor `{NAME}`"
                )))
            }
        }
        rules.validate().map_err(Error::input)
    }
}

impl Monitor for Plugin {
    fn name(&self) -> &'static str {
        NAME
    }
    /// Refused (issue 15): the closed loop reads the controllers' Addies and sets the
    /// buffer's watermark and read-ahead for every request it serves; there is no per-process
    /// count to keep, and a setting cannot apply to one process's requests only.
    fn restrict(&mut self, process: &str, _by: Option<Restrict>) -> Result<Restrict, Error> {
        Err(Error::input(format!(
            "--monitor-process {process}: monitor `{NAME}` cannot be restricted to a process: it is a closed loop that sets each memory controller's buffer for the requests of every processor (its Addies see no process); restrict another monitor, or run the process alone"
        )))
    }
    fn flag(&mut self, long: &str, value: Option<&str>) -> Result<(), Error> {
        if long == "memctl-sweep" {
            self.sweep = true;
            return Ok(());
        }
        Plugin::rule_flag(&mut self.rules, long, value.unwrap_or_default())
    }
    /// The loop tunes a memory controller: a preset without one gets the default controller
    /// (`--memctl on`).
    fn adjust_preset(&mut self, p: &mut Preset) -> Result<(), Error> {
        if self.sweep {
            return Err(Error::input(
                "--memctl-sweep: a flag of `pmusim study memctl`, not of a run",
            ));
        }
        if p.memctl_enabled().is_none() {
            let line = p.memory_line_bytes();
            p.memctl =
                Some(MemCtlCfg::apply_spec(p.memctl.take(), "on", line).map_err(Error::input)?);
        }
        Ok(())
    }
    fn attach(&mut self, m: &mut Machine) -> Result<(), Error> {
        let n = m.state().system.controllers().len();
        if n == 0 {
            return Err(Error::input(
                "monitor `memctl`: the machine has no memory controller (pass --memctl on)",
            ));
        }
        if let Some(s) = self.stat.as_mut() {
            let (probe, handle) = Shared::new(counting::Tally::new(n));
            m.attach(Box::new(probe));
            s.tally = Some(handle);
            return Ok(());
        }
        let cfg = m
            .state()
            .preset
            .memctl_enabled()
            .cloned()
            .ok_or_else(|| Error::input("monitor `memctl`: the machine has no [memctl]"))?;
        let line = m.state().preset.memory_line_bytes();
        let a = Adaptive::new(self.rules, n, m.settings(), &cfg, line).map_err(Error::input)?;
        let (probe, handle) = Shared::new(a);
        m.attach(Box::new(probe));
        self.probe = Some(handle);
        Ok(())
    }
    fn json(&self, m: &Machine) -> Option<Value> {
        let p = self.probe.as_ref()?;
        Some(report::json(&p.borrow(), m))
    }
    fn section(&self, m: &Machine, _json: &Value, _top: usize) -> Option<::report::Section> {
        let p = self.probe.as_ref()?;
        Some(report::section(&p.borrow(), m))
    }
    fn study(&mut self, a: &StudyArgs) -> Option<Result<(String, u8), Error>> {
        Some(study::run(a))
    }
    fn counting(&mut self) -> Option<&mut dyn crate::counting::Counting> {
        Some(self)
    }
}
