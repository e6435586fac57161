//! FlashPoint (seed 004, sections 3.1.3-3.2.4): miss and latency statistics per data structure
//! and procedure, kept by the FLASH coherence protocol itself.
//!
//! # State, trigger, handler
//! - **State**: per processor, statistics records indexed by (procedure, bin) at MAGIC
//!   addresses, and the warm bit and 10-bit bin in every directory header's spare bits
//!   (`machine::flash::flashpoint`, the protocol side, which stays in `machine`).
//! - **Trigger**: the handler that sends a miss's reply to the processor (PILocal* at the
//!   home, NIRemotePut/PutX/UpgradeAck at a remote requester, ...) for a Get, GetX or Upgrade;
//!   the bin and warm bit come from the home's header, the procedure from the requester's
//!   procedure register (FP-Proc's procedure-delta commands).
//! - **Handler**: the augmented handler adds to the requester's record of (procedure, bin):
//!   read or write miss, local or remote, latency (processor-interface counter), cold (warm bit
//!   clear), invalidations and invalidation misses, and pays its named extra PP cost.
//!
//! Unlike the NUMAchine card, FlashPoint attaches no probe: the protocol keeps the records, and
//! this monitor selects the protocol variant before the machine is built
//! ([`Monitor::adjust_preset`]: `dp`, `fp-noproc` or `fp-proc`) and reads the records at the
//! end ([`view::FlashPointView`]). `pmusim study flashpoint` ([`study`]) reproduces the seed's
//! Tables 1-5 with the paper's numbers (`paper.toml`) beside ours; `docs/flashpoint.md`
//! describes the model.

pub mod counting;
pub mod restrict;
pub mod study;
pub mod view;

pub use view::{FlashPointView, Row};

use crate::plugin::{Entry, Error, Flag, Monitor, Output, Restrict, StudyArgs};
use machine::flash::flashpoint::FlashProtocol;
use machine::{Machine, Preset};
use serde_json::Value;

/// The monitor's registry name.
pub const NAME: &str = "flashpoint";

/// The flags of `pmusim run` that select FlashPoint (kept from before the registry; `pmusim
/// report` is `run` with them).
pub const FLAGS: &[Flag] = &[
    Flag {
        long: "protocol",
        value: Some("dp|fp-noproc|fp-proc"),
        help: "Coherence protocol of the `flash` preset: dp (the preset's default), fp-noproc or fp-proc (FlashPoint without / with per-procedure statistics)",
        study: false,
    },
    Flag {
        long: "report",
        value: Some("CATEGORIES"),
        help: "Print FlashPoint's report instead of the ground-truth report, by these categories: data, proc, proc-data (comma-separated), e.g. `--report data,proc`",
        study: false,
    },
    Flag {
        long: "format",
        value: Some("FORMAT"),
        help: "Format of the FlashPoint report: text (default), json, csv or svg (a bar chart)",
        study: false,
    },
    Flag {
        long: "out",
        value: Some("FILE"),
        help: "Write the FlashPoint report to this file instead of standard output",
        study: false,
    },
    Flag {
        long: "rows",
        value: Some("N"),
        help: "Rows per category in the FlashPoint report (default 10)",
        study: false,
    },
    Flag {
        long: "no-fence",
        value: None,
        help: "FP-Proc without the memory fence before procedure commands (seed 3.2.4's variant)",
        study: true,
    },
    Flag {
        long: "study-machine",
        value: Some("PRESET"),
        help: "study flashpoint: the FLASH preset its runs use (default flash; flash-r10k has the R10000-like core, docs/flashpoint.md); a run takes -m instead",
        study: true,
    },
    Flag {
        long: "study-data",
        value: None,
        help: "Add what `pmusim study flashpoint` tabulates to the JSON document (monitors.flashpoint.study: raw counts per data structure, handler sums); the study's sweep runs set it",
        study: false,
    },
];

pub const ENTRY: Entry = Entry {
    name: NAME,
    description: "FlashPoint: misses and latencies per data structure and procedure, kept by the FLASH protocol handlers (machine flash)",
    seed: "seed 004, sections 3.1.3-3.2.4",
    flags: FLAGS,
    study: true,
    new: || Box::new(Plugin::default()),
};

pub struct Plugin {
    protocol: Option<String>,
    report: Option<String>,
    format: String,
    out: Option<std::path::PathBuf>,
    rows: usize,
    /// `--format` or `--rows` given (they shape `--report`, and mean nothing without it).
    shaped: bool,
    no_fence: bool,
    /// `--study-data`: the study's per-run data in the JSON document ([`study::run_data`]).
    study_data: bool,
    /// Named with `--monitor flashpoint` (not only selected by its flags): FP-Proc unless a
    /// protocol is given, and a `monitors.flashpoint` JSON section.
    named: bool,
    /// `pmusim stat`'s requests (`counting.rs`).
    stat: Option<counting::Stat>,
    /// `--monitor-process NAME` (`restrict.rs`), and after `attach` the process's number.
    process: Option<String>,
    pid: Option<u16>,
}

impl Default for Plugin {
    fn default() -> Plugin {
        Plugin {
            protocol: None,
            report: None,
            format: "text".into(),
            out: None,
            rows: 10,
            shaped: false,
            no_fence: false,
            study_data: false,
            named: false,
            stat: None,
            process: None,
            pid: None,
        }
    }
}

impl Monitor for Plugin {
    fn name(&self) -> &'static str {
        NAME
    }
    fn home_presets(&self) -> &'static [&'static str] {
        &["flash"]
    }

    fn selected_by_name(&mut self) {
        self.named = true;
    }

    fn flag(&mut self, long: &str, value: Option<&str>) -> Result<(), Error> {
        let v = || value.unwrap_or_default().to_string();
        match long {
            "protocol" => self.protocol = Some(v()),
            "report" => self.report = Some(v()),
            "format" => {
                self.format = v();
                self.shaped = true;
            }
            "out" => self.out = Some(v().into()),
            "rows" => {
                self.shaped = true;
                self.rows = v()
                    .parse()
                    .map_err(|_| Error::input(format!("--rows {}: not a number", v())))?
            }
            "no-fence" => self.no_fence = true,
            "study-data" => self.study_data = true,
            "study-machine" => {
                return Err(Error::input(
                    "--study-machine is a flag of `pmusim study flashpoint`; a run names its machine with -m",
                ))
            }
            _ => {
                return Err(Error::input(format!(
                    "--{long}: not a flag of monitor `{NAME}`"
                )))
            }
        }
        Ok(())
    }

    /// `--monitor-process NAME`: each process gets its own record array and the operating
    /// system's switch path moves the PP's register between them (`restrict.rs`): counter
    /// virtualization's place, by the monitor's own pointer. FlashPoint has no mark.
    fn restrict(&mut self, process: &str, by: Option<Restrict>) -> Result<Restrict, Error> {
        match by {
            None | Some(Restrict::Virtualization) => {
                self.process = Some(process.to_string());
                Ok(Restrict::Virtualization)
            }
            Some(w) => Err(Error::input(format!(
                "--restrict-by {}: FlashPoint has no process mark (the directory header's spare bits hold the warm bit and the bin, and the records have no mark field); use --restrict-by virtualization (the default: the switch path moves the protocol processor's record pointer to the incoming process's array)",
                w.name()
            ))),
        }
    }

    /// Sets the preset's `[flash] protocol` from `--protocol` (FP-Proc when named without one
    /// on a preset whose protocol is DP).
    fn adjust_preset(&mut self, p: &mut Preset) -> Result<(), Error> {
        self.check_report_flags()?;
        if let Some(name) = &self.process {
            if !self.named && self.protocol.is_none() {
                return Err(Error::input(format!(
                    "--monitor-process {name}: add --monitor {NAME} (or --protocol fp-noproc|fp-proc)"
                )));
            }
            if p.os.is_none() {
                return Err(Error::input(format!(
                    "--monitor-process {name}: restricting a monitor to a process needs processes (a multiprogrammed run a+b, --os, or an [os] preset section)"
                )));
            }
        }
        let given = match (&self.protocol, self.named) {
            (Some(s), _) => Some((
                FlashProtocol::parse(s).map_err(|e| Error::input(format!("--protocol: {e}")))?,
                format!("--protocol {s}"),
            )),
            (None, true) => match p.flash.as_ref().map(|f| f.protocol) {
                Some(FlashProtocol::Dp) | None => {
                    Some((FlashProtocol::FpProc, format!("--monitor {NAME}")))
                }
                Some(_) => None,
            },
            (None, false) if self.no_fence => {
                return Err(Error::input("--no-fence needs --protocol fp-proc"))
            }
            (None, false) => None,
        };
        if let Some((proto, what)) = given {
            let Some(f) = p.flash.as_mut() else {
                return Err(Error::input(format!(
                    "{what}: machine `{}` has no FLASH memory system (use --machine flash)",
                    p.name
                )));
            };
            f.protocol = proto;
        }
        if self.no_fence {
            if let Some(f) = p.flash.as_mut() {
                f.flashpoint.fence = false;
            }
        }
        let records = p
            .flash
            .as_ref()
            .is_some_and(|f| f.protocol != FlashProtocol::Dp);
        if self.report.is_some() && !records {
            return Err(Error::input(
                "--report needs FlashPoint: run on --machine flash with --protocol fp-noproc or fp-proc",
            ));
        }
        if let (Some(name), false) = (&self.process, records) {
            return Err(Error::input(format!(
                "--monitor-process {name}: FlashPoint's records need --protocol fp-noproc or fp-proc on --machine flash"
            )));
        }
        Ok(())
    }

    /// Restricted to a process: the records are kept by process (checked before the run:
    /// one hardware context per core, the processes' arrays fit the record region).
    fn attach(&mut self, m: &mut Machine) -> Result<(), Error> {
        let Some(name) = &self.process else {
            return Ok(());
        };
        let pid = m
            .state()
            .os
            .as_ref()
            .and_then(|os| os.processes.iter().position(|p| &p.name == name));
        let Some(pid) = pid else {
            let known: Vec<String> = m
                .state()
                .os
                .iter()
                .flat_map(|os| os.processes.iter().map(|p| p.name.clone()))
                .collect();
            return Err(Error::input(format!(
                "--monitor-process {name}: no such process (the processes: {})",
                known.join(", ")
            )));
        };
        m.flashpoint_by_process()
            .map_err(|e| Error::input(format!("--monitor-process {name}: {e}")))?;
        self.pid = Some(pid as u16);
        Ok(())
    }

    fn json(&self, m: &Machine) -> Option<Value> {
        let view = self.named.then(|| self.view(m).map(|v| v.json())).flatten();
        let view = match (view, self.restricted(m)) {
            (Some(mut v), Some(r)) => {
                v["process"] = restrict::json(&r);
                Some(v)
            }
            (v, _) => v,
        };
        if !self.study_data {
            return view;
        }
        let mut v = view.unwrap_or_else(|| Value::Object(Default::default()));
        v["study"] = study::run_data(m.state()).unwrap_or(Value::Null);
        Some(v)
    }

    fn section(&self, m: &Machine, _json: &Value, top: usize) -> Option<::report::Section> {
        if !self.named {
            return None;
        }
        let mut s = self.view(m).map(|v| v.section(&["data", "proc"], top))?;
        if let Some(r) = self.restricted(m) {
            restrict::tables(&mut s, &r);
        }
        Some(s)
    }

    /// `--report CATEGORIES`: FlashPoint's ranking in place of the run's report.
    fn replaces_report(&self) -> bool {
        self.report.is_some()
    }

    fn exclusive_report(&self, m: &Machine, doc: &Value) -> Option<Result<Output, Error>> {
        let by = self.report.as_deref()?;
        Some(self.ranking(m, doc, by))
    }

    fn study_sweep(&mut self, a: &StudyArgs) -> Option<Result<crate::plugin::SweepStudy, Error>> {
        Some(study::sweep(a))
    }

    fn counting(&mut self) -> Option<&mut dyn crate::counting::Counting> {
        Some(self)
    }
}

impl Plugin {
    /// The view the reports show: the whole machine's records, or the restricted process's
    /// array alone (`--monitor-process`).
    fn view(&self, m: &Machine) -> Option<FlashPointView> {
        match self.pid {
            Some(pid) => FlashPointView::of_process(m.state(), pid),
            None => FlashPointView::from_state(m.state()),
        }
    }

    fn restricted(&self, m: &Machine) -> Option<restrict::Restricted> {
        self.pid?;
        restrict::measure(m.state(), self.process.as_deref()?)
    }

    /// The report's flags, checked before the run (issue 17: found after the simulation, or
    /// silently ignored, before): the categories and format are known ones, and `--format`,
    /// `--rows` and `--out` come with `--report`.
    fn check_report_flags(&self) -> Result<(), Error> {
        let Some(by) = &self.report else {
            let given: Vec<&str> = [
                (self.shaped, "--format/--rows"),
                (self.out.is_some(), "--out"),
            ]
            .into_iter()
            .filter_map(|(on, f)| on.then_some(f))
            .collect();
            if given.is_empty() {
                return Ok(());
            }
            return Err(Error::input(format!(
                "{}: these shape FlashPoint's report, which --report CATEGORIES selects (e.g. --report data,proc); add it or drop them",
                given.join(", ")
            )));
        };
        for b in by.split(',').map(str::trim) {
            if !matches!(b, "data" | "proc" | "proc-data") {
                return Err(Error::input(format!(
                    "--report: unknown category `{b}`: use data, proc, proc-data"
                )));
            }
        }
        if !matches!(self.format.as_str(), "text" | "json" | "csv" | "svg") {
            return Err(Error::input(format!(
                "--format {}: FlashPoint's report is text, json, csv or svg",
                self.format
            )));
        }
        Ok(())
    }

    fn ranking(&self, m: &Machine, doc: &Value, by: &str) -> Result<Output, Error> {
        // (Categories and format were checked before the run: `check_report_flags`.)
        let by: Vec<&str> = by.split(',').map(str::trim).collect();
        let Some(mut v) = self.view(m) else {
            return Err(Error::input(
                "--report needs FlashPoint: run on --machine flash with --protocol fp-noproc or fp-proc",
            ));
        };
        if let (Some(name), Some(size)) = (
            doc["workload"]["name"].as_str(),
            doc["workload"]["size"].as_str(),
        ) {
            v.workload = Some(format!("{name} ({size} size)"));
        }
        use ::report::render;
        let one = |s: ::report::Section| ::report::Report { sections: vec![s] };
        let text = match self.format.as_str() {
            "text" => render::text::render(&one(v.section(&by, self.rows))),
            "json" => {
                let mut doc = v.json_by(&by);
                doc["schema"] = "pmusim.flashpoint-report/1".into();
                serde_json::to_string_pretty(&doc).unwrap() + "\n"
            }
            "csv" => render::csv::table(&v.records(&by)),
            "svg" => {
                let s = v.section(&by, self.rows);
                let plots: Vec<_> = s.plots().take(2).collect();
                if plots.is_empty() {
                    return Err(Error::input("--format svg: no category to plot"));
                }
                view::stack_svg(
                    &plots
                        .iter()
                        .map(|p| render::svg::plot(p))
                        .collect::<Vec<_>>(),
                )
            }
            f => {
                return Err(Error::input(format!(
                    "--format {f}: use text, json, csv or svg"
                )))
            }
        };
        Ok(Output {
            text,
            file: self.out.clone(),
        })
    }
}
