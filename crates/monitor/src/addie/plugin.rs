//! The Addie's line in the monitor registry: `--monitor addie` attaches two Addies to every
//! memory controller of a run (`attached`), and `pmusim study addie` runs the synthetic-stream
//! study of seed 002 Figures 2 and 3.

use super::attached::{AddieProbe, REGISTER_BASE, REGISTER_BYTES, REGISTER_OFFSET};
use super::{report, study, AddieInput, RandomMode};
use crate::plugin::{Entry, Error, Flag, Monitor, Restrict, Shared, StudyArgs};
use machine::config::Preset;
use machine::Machine;
use serde_json::Value;
use std::cell::RefCell;
use std::rc::Rc;

pub const NAME: &str = "addie";

pub const ENTRY: Entry = Entry {
    name: NAME,
    description: "Addie stochastic estimators: two n-bit saturating counters against a 31-stage LFSR per memory controller, fed by its buffer events (enables --memctl on if the preset has no controller)",
    seed: "seed 002, Figures 1-5",
    flags: &[
        Flag {
            long: "addie-inputs",
            value: Some("A,B"),
            help: "The two Addies' inputs per controller: wb-hit, wb-full, read-merge, rb-hit (default wb-hit,rb-hit)",
            study: false,
        },
        Flag {
            long: "addie-width",
            value: Some("BITS"),
            help: "Addie counter width, 4..=16 bits (default 8)",
            study: false,
        },
        Flag {
            long: "addie-window",
            value: Some("N"),
            help: "Samples per reading: each reading is compared with the exact ratio over the same samples (default 256)",
            study: false,
        },
        Flag {
            long: "addie-register-cycles",
            value: Some("N"),
            help: "Processor cycles of a program's uncached read of an Addie register (default: the preset's cpu.uncached_cycles; the debug port's readings are free)",
            study: false,
        },
        Flag {
            long: "addie-correlated",
            value: None,
            help: "Correlated random numbers (consecutive LFSR stages, top bit inverted) instead of independent ones",
            study: false,
        },
    ],
    study: true,
    new: || Box::new(Plugin::default()),
};

/// The Addie monitor's settings and, after `attach`, its probe.
pub struct Plugin {
    pub(super) inputs: [AddieInput; 2],
    width: u32,
    window: u64,
    mode: RandomMode,
    /// Cost of a register read; `None`: the preset's `cpu.uncached_cycles`.
    register_cycles: Option<u64>,
    pub(super) probe: Option<Rc<RefCell<AddieProbe>>>,
    /// `pmusim stat`'s plan (`counting.rs`): its groups set the Addies' inputs.
    pub(super) stat: Option<super::counting::Plan>,
}

impl Default for Plugin {
    fn default() -> Plugin {
        Plugin {
            inputs: [AddieInput::WriteBufferHit, AddieInput::ReadBufferHit],
            width: 8,
            window: 256,
            mode: RandomMode::Independent,
            register_cycles: None,
            probe: None,
            stat: None,
        }
    }
}

/// Seeds of the width table at most: its 16-bit runs are 1.6 M samples each.
const WIDTH_SEEDS: u64 = 20;
/// Samples of the Figure 2/3 trajectories at most.
const PLOT_SAMPLES: u64 = 5_000;

impl Monitor for Plugin {
    fn name(&self) -> &'static str {
        NAME
    }
    /// Refused (issue 15): an Addie sits at a memory controller whose requests come from
    /// every processor at once and carry no process (no mark to filter on), and its state is
    /// a pair of saturating counters racing an LFSR, not a count a switch path could read
    /// and add per thread; even a single processor's requests reach the buffer after the
    /// switch that follows them (posted writes, drains). `perf stat -p` refuses uncore
    /// events the same way.
    fn restrict(&mut self, process: &str, _by: Option<Restrict>) -> Result<Restrict, Error> {
        Err(Error::input(format!(
            "--monitor-process {process}: monitor `{NAME}` cannot be restricted to a process: its estimators sit at the memory controllers, which see the requests of every processor at once with no process in them, and its state is a pair of saturating counters against an LFSR, not a count a context switch can save and add (as perf refuses per-task uncore events); restrict another monitor, or run the process alone"
        )))
    }
    fn flag(&mut self, long: &str, value: Option<&str>) -> Result<(), Error> {
        let v = value.unwrap_or_default();
        match long {
            "addie-inputs" => {
                let parts: Vec<&str> = v.split(',').map(str::trim).collect();
                let [a, b] = parts[..] else {
                    return Err(Error::input(format!(
                        "--addie-inputs {v}: two inputs, comma-separated (e.g. wb-hit,rb-hit)"
                    )));
                };
                let parse = |s: &str| -> Result<AddieInput, Error> {
                    match AddieInput::parse(s) {
                        Ok(AddieInput::Probe(n)) => Err(Error::input(format!(
                            "--addie-inputs: probe:{n} is not wired on runs; the inputs are wb-hit, wb-full, read-merge, rb-hit"
                        ))),
                        Ok(i) => Ok(i),
                        Err(e) => Err(Error::input(format!("--addie-inputs: {e}"))),
                    }
                };
                self.inputs = [parse(a)?, parse(b)?];
            }
            "addie-width" => {
                self.width = v
                    .parse()
                    .ok()
                    .filter(|w| (4..=16).contains(w))
                    .ok_or_else(|| {
                        Error::input(format!("--addie-width {v}: not a width in 4..=16 bits"))
                    })?
            }
            "addie-window" => {
                self.window = v.parse().ok().filter(|&w| w > 0).ok_or_else(|| {
                    Error::input(format!("--addie-window {v}: not a positive number"))
                })?
            }
            "addie-correlated" => self.mode = RandomMode::Correlated,
            "addie-register-cycles" => {
                self.register_cycles = Some(v.parse().map_err(|_| {
                    Error::input(format!(
                        "--addie-register-cycles {v}: not a number of processor cycles"
                    ))
                })?)
            }
            _ => {
                return Err(Error::input(format!(
                    "--{long}: not a flag of monitor `{NAME}`"
                )))
            }
        }
        Ok(())
    }
    /// The Addies read a memory controller's events: a preset without one gets the default
    /// controller (`--memctl on`).
    fn adjust_preset(&mut self, p: &mut Preset) -> Result<(), Error> {
        if p.memctl_enabled().is_none() {
            let line = p.memory_line_bytes();
            p.memctl = Some(
                machine::mem::config::MemCtlCfg::apply_spec(p.memctl.take(), "on", line)
                    .map_err(Error::input)?,
            );
        }
        Ok(())
    }
    fn attach(&mut self, m: &mut Machine) -> Result<(), Error> {
        let nodes = m.state().system.controllers().len();
        if nodes == 0 {
            return Err(Error::input(
                "monitor `addie`: the machine has no memory controller (pass --memctl on)",
            ));
        }
        let mut p = AddieProbe::new(nodes, &self.inputs, self.width, self.mode, self.window)
            .map_err(Error::input)?;
        let st = m.state_mut();
        let cycles = self
            .register_cycles
            .unwrap_or(st.preset.cpu.uncached_cycles as u64);
        let cost = machine::uncached::Cost {
            cycles,
            clock: "cpu",
        };
        let len = nodes as u64 * 2 * REGISTER_BYTES;
        st.uncached
            .register_device(
                &st.clocks,
                REGISTER_BASE,
                len,
                "addie",
                cost,
                REGISTER_OFFSET,
            )
            .map_err(|e| Error::input(format!("monitor `addie`: {e}")))?;
        p.register_cycles = cycles;
        let (probe, handle) = Shared::new(p);
        m.attach(Box::new(probe));
        self.probe = Some(handle);
        Ok(())
    }
    fn json(&self, m: &Machine) -> Option<Value> {
        let p = self.probe.as_ref()?;
        Some(report::attached_json(
            &p.borrow(),
            m.state().cpu_period,
            self.width,
            self.mode,
        ))
    }
    /// The section is built from the probe's channels, so a text report does not build the
    /// JSON (every reading of every Addie as a JSON object: about 6,000 `Ir` a reading, 1.5 %
    /// of `run lu -m elan -s test`).
    fn section_needs_json(&self) -> bool {
        false
    }
    fn section(&self, m: &Machine, _json: &Value, _top: usize) -> Option<::report::Section> {
        let p = self.probe.as_ref()?;
        Some(report::attached_section(
            &p.borrow(),
            m.state().cpu_period,
            self.width,
            self.mode,
        ))
    }
    fn study(&mut self, a: &StudyArgs) -> Option<Result<(String, u8), Error>> {
        Some(run(a))
    }
    fn counting(&mut self) -> Option<&mut dyn crate::counting::Counting> {
        Some(self)
    }
}

/// `pmusim study addie [--json] [--svg DIR] [--seeds N] [--samples N] [--seed FIRST]`.
pub fn run(a: &StudyArgs) -> Result<(String, u8), Error> {
    if !a.procs.is_empty() || !a.kernels.is_empty() {
        return Err(Error::input(
            "study addie: --procs and --kernels do not apply (the study feeds synthetic streams)",
        ));
    }
    let seeds = a.seeds.unwrap_or(100);
    let samples = a.samples.unwrap_or(20_000);
    let cfg = study::StudyConfig {
        first_seed: a.seed,
        seeds,
        samples,
        plot_samples: samples.min(PLOT_SAMPLES),
        width_seeds: seeds.min(WIDTH_SEEDS),
        ..study::StudyConfig::default()
    };
    let s = study::run(&cfg).map_err(|e| Error::input(format!("study addie: {e}")))?;
    if let Some(dir) = &a.svg {
        let place =
            |e: &dyn std::fmt::Display| Error::input(format!("--svg {}: {e}", dir.display()));
        std::fs::create_dir_all(dir).map_err(|e| place(&e))?;
        for p in report::plots(&s) {
            let f = dir.join(format!("{}.svg", p.id));
            std::fs::write(&f, ::report::render::svg::plot(&p)).map_err(|e| place(&e))?;
        }
    }
    let out = if a.json {
        let mut v = serde_json::to_value(&s).map_err(|e| Error::sim(e.to_string()))?;
        v["schema"] = "pmusim.study-addie/1".into();
        v["seed_reference"] = serde_json::json!({
            "figures": "Figure 2: 64/255 (25 %), Figure 3: 200/255 (78 %), 8 bits, start 128",
            "convergence": "about 500 samples",
        });
        serde_json::to_string_pretty(&v).expect("plain data") + "\n"
    } else {
        report::text(&s)
    };
    Ok((out, 0))
}
