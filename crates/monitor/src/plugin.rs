//! The `Monitor` plug-in trait and the registry of monitors (`pmusim list monitors`).
//!
//! A monitor is one folder under `crates/monitor/src/<name>/` and one line in [`registry`]. The
//! command line knows monitors only through this module: it selects them by name or
//! configuration file ([`select`]), lets each adjust the preset before the machine is built,
//! attach its probes once the workload has allocated its data, and render its report (a JSON
//! section under `monitors.<name>`, text, CSV tables, an SVG plot). Nothing here downcasts a
//! probe: a monitor that must read its probe's state at the end keeps it behind a [`Shared`]
//! handle.
//!
//! Every monitor describes its mechanism as the same triple, in its module documentation:
//! **state** (what it holds), **trigger** (what decides that an event counts) and **handler**
//! (what counting it does to the state).

use machine::probe::{Observation, Probe, Signals};
use machine::{Machine, Preset};
use serde_json::Value;
use std::cell::RefCell;
use std::rc::Rc;

/// An error with the exit code it deserves (2 bad input, 3 the simulation could not finish).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub code: u8,
    pub msg: String,
}

impl Error {
    pub fn input(msg: impl Into<String>) -> Error {
        Error {
            code: 2,
            msg: msg.into(),
        }
    }
    pub fn sim(msg: impl Into<String>) -> Error {
        Error {
            code: 3,
            msg: msg.into(),
        }
    }
}

impl From<String> for Error {
    fn from(msg: String) -> Error {
        Error::input(msg)
    }
}

/// A flag a monitor adds to `pmusim run` and `pmusim study` (`--<long> [VALUE]`). The command
/// line builds it from this description and hands what was given back through
/// [`Monitor::flag`]; giving any of a monitor's flags selects that monitor.
#[derive(Debug)]
pub struct Flag {
    pub long: &'static str,
    /// The value's name in the help (`None`: a switch without a value).
    pub value: Option<&'static str>,
    pub help: &'static str,
    /// `pmusim study <monitor>` takes it too.
    pub study: bool,
}

/// Flags given on the command line: (long name, value; `None` for a switch).
pub type GivenFlags = [(String, Option<String>)];

/// A report that takes the place of the run's report (FlashPoint's `--report`).
pub struct Output {
    pub text: String,
    /// Write it to this file instead of standard output.
    pub file: Option<std::path::PathBuf>,
}

/// What `pmusim study <monitor>` hands a monitor's study (defaults are the study's own).
#[derive(Clone, Debug, Default)]
pub struct StudyArgs {
    /// Processor counts (empty: the study's default).
    pub procs: Vec<usize>,
    /// Problem size name (test, small, paper).
    pub size: String,
    /// Kernels (empty: the study's default).
    pub kernels: Vec<String>,
    /// Host threads.
    pub jobs: usize,
    pub json: bool,
    pub seed: u64,
    /// Seeds of a seed-sweeping study (`None`: the study's default).
    pub seeds: Option<u64>,
    /// Samples per run of a sampling study (`None`: the study's default).
    pub samples: Option<u64>,
    /// Write the study's plots as SVG files into this directory.
    pub svg: Option<std::path::PathBuf>,
    /// The monitor's flags given.
    pub flags: Vec<(String, Option<String>)>,
    /// The study's name as given (`pmusim study NAME`: the monitor's, or an alias naming
    /// one of its studies, e.g. `imr` or `marking` for `power2`).
    pub study: String,
}

/// How a monitor is restricted to one process (`pmusim run --monitor-process NAME
/// --restrict-by WAY`, issue 15 item 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restrict {
    /// Hardware marking: the process's MSR[PM] set (saved and restored by the operating
    /// system with its state) and the monitor counting marked work only (POWER2's MARKED).
    Marking,
    /// Counter virtualization at context switch: the counters run free, the operating
    /// system's switch path reads them and keeps per-thread totals (`perf_event_open`).
    Virtualization,
    /// Both, side by side in one run (a monitor with marking hardware).
    Both,
}

impl Restrict {
    /// `--restrict-by WAY`.
    pub fn parse(s: &str) -> Result<Restrict, Error> {
        match s {
            "marking" => Ok(Restrict::Marking),
            "virtualization" => Ok(Restrict::Virtualization),
            "both" => Ok(Restrict::Both),
            _ => Err(Error::input(format!(
                "--restrict-by {s}: give marking, virtualization or both"
            ))),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Restrict::Marking => "marking",
            Restrict::Virtualization => "virtualization",
            Restrict::Both => "both",
        }
    }
    /// The process must carry the mark (MSR[PM]).
    pub fn marks(self) -> bool {
        self != Restrict::Virtualization
    }
    /// The operating system's switch path reads the counters.
    pub fn virtualizes(self) -> bool {
        self != Restrict::Marking
    }
}

/// The error of a monitor that cannot be restricted the way asked.
pub fn cannot_restrict(monitor: &str, by: Restrict) -> Error {
    Error::input(format!(
        "--restrict-by {}: monitor `{monitor}` has no process-mark hardware (only POWER2's MSR[PM] marking is modelled); use --restrict-by virtualization",
        by.name()
    ))
}

/// A performance monitor: configuration, the probes it attaches, its report.
///
/// The order of calls in a run: [`Monitor::configure_toml`] and [`Monitor::flag`] (command
/// line), [`Monitor::adjust_preset`] (before the machine is built), [`Monitor::attach`] (after
/// the workload has allocated its data, so names resolve), the run, then the report methods.
pub trait Monitor {
    fn name(&self) -> &'static str;
    /// Studies this monitor runs under their own names besides `pmusim study <name>` (POWER2's
    /// `imr`, `marking`): `pmusim study NAME` finds its monitor here.
    fn studies(&self) -> &'static [&'static str] {
        &[]
    }
    /// Built-in machine presets this monitor belongs to (name prefixes: `power2` covers
    /// `power2-os`), which `pmusim stat` asks first for a named event.
    fn home_presets(&self) -> &'static [&'static str] {
        &[]
    }
    /// Reads a configuration file (`--monitor FILE.toml`), parsed once by the caller.
    fn configure_toml(&mut self, file: ConfigFile) -> Result<(), Error> {
        Err(Error::input(format!(
            "{}: monitor `{}` takes no configuration file",
            file.source(),
            self.name()
        )))
    }
    /// The monitor was named (`--monitor NAME` or a file), not only selected by its flags.
    fn selected_by_name(&mut self) {}
    /// One of this monitor's [`Entry::flags`] as given.
    fn flag(&mut self, long: &str, _value: Option<&str>) -> Result<(), Error> {
        Err(Error::input(format!(
            "--{long}: not a flag of monitor `{}`",
            self.name()
        )))
    }
    /// Restricts the monitor to process `process` (`--monitor-process`), the way `by` asks
    /// (`None`: the monitor's own hardware way if it has one, else counter virtualization).
    /// Returns the way taken; the command line marks the process when it marks. Called
    /// before [`Monitor::adjust_preset`], which sets `[os] virtual_counters` when
    /// virtualizing. The default: the monitor cannot be restricted.
    fn restrict(&mut self, _process: &str, _by: Option<Restrict>) -> Result<Restrict, Error> {
        Err(Error::input(format!(
            "--monitor-process: monitor `{}` cannot be restricted to one process (the monitors that can: numachine, power2, upc, flashpoint, c2c)",
            self.name()
        )))
    }
    /// Changes to the preset the monitor needs before the machine is built (FlashPoint selects
    /// the FLASH protocol variant); also where flags are checked against each other.
    fn adjust_preset(&mut self, _p: &mut Preset) -> Result<(), Error> {
        Ok(())
    }
    /// Attaches the monitor's probes (the workload's data structures are allocated by now).
    fn attach(&mut self, _m: &mut Machine) -> Result<(), Error> {
        Ok(())
    }
    /// The monitor's section of the run's JSON document (`monitors.<name>`), if it has one.
    fn json(&self, _m: &Machine) -> Option<Value> {
        None
    }
    /// The monitor's report as a typed section (`report::model`): its counters as estimate
    /// columns beside the exact values, scale factors and clocks in table notes, histograms as
    /// plots. `json` is the monitor's JSON section (`Value::Null` if none), `top` the rows a
    /// ranked table keeps (`usize::MAX` for every row: CSV files and the typed JSON). The
    /// command line appends it to the base report and renders the whole report with the one
    /// renderer chosen (text, CSV files, SVG files, the HTML page, the typed JSON); `text`,
    /// `csv` and `svg` below are then never called. `None` (the default): the monitor renders
    /// its own formats through them.
    fn section(&self, _m: &Machine, _json: &Value, _top: usize) -> Option<report::model::Section> {
        None
    }
    /// False when [`Monitor::section`] does not read its `json` argument: a report without
    /// `--json` then does not build the monitor's JSON section (it gets `Value::Null`), so
    /// that the JSON's cost is paid only when it is asked for.
    fn section_needs_json(&self) -> bool {
        true
    }
    /// Text report, after the run's, from the JSON section (`Value::Null` if none). Only for
    /// a monitor whose [`Monitor::section`] is `None`.
    fn text(&self, _m: &Machine, _section: &Value, _top: usize) -> String {
        String::new()
    }
    /// The report as CSV files: (file name, contents). Only without a [`Monitor::section`].
    fn csv(&self, _m: &Machine, _section: &Value) -> Vec<(String, String)> {
        Vec::new()
    }
    /// An SVG plot of the run; `Err` says why there is none. Only without a
    /// [`Monitor::section`].
    fn svg(&self, _m: &Machine, _section: &Value) -> Result<String, String> {
        Err(format!("monitor `{}` draws no plot", self.name()))
    }
    /// True when the monitor's flags ask for a report that replaces the run's own
    /// ([`Monitor::exclusive_report`]): known before the run, so that `--json`, `--csv` or
    /// `--html`, which shape the run's report, can be refused before simulating.
    fn replaces_report(&self) -> bool {
        false
    }
    /// A report that replaces the run's report (selected by the monitor's flags). `doc` is the
    /// run's JSON document (workload name and size, machine), for the report's heading.
    fn exclusive_report(&self, _m: &Machine, _doc: &Value) -> Option<Result<Output, Error>> {
        None
    }
    /// The monitor's register map: `value` of register `reg` in words, field by field. `None`:
    /// the monitor has no registers.
    fn decode_register(&self, _reg: &str, _value: &str) -> Option<Result<String, Error>> {
        None
    }
    /// The configuration (built-in, or read by `configure_toml`) compiled to register values,
    /// in words. `None`: the monitor has no registers.
    fn describe_config(&self) -> Option<Result<String, Error>> {
        None
    }
    /// [`Monitor::decode_register`] for `pmusim decode --json`: the body of a
    /// `pmusim.decode/1` document, `{"registers": [{"register", "title", "value", "fields":
    /// [{"name", "hi", "lo", "value", "meaning"}]}]}` (docs/json.md). `None`: no registers,
    /// or the monitor decodes only to text.
    fn decode_register_json(&self, _reg: &str, _value: &str) -> Option<Result<Value, Error>> {
        None
    }
    /// [`Monitor::describe_config`] for `pmusim decode --config ... --json`: as
    /// [`Monitor::decode_register_json`] with every register the configuration sets, and
    /// whatever else the configuration names (counter labels, preloads).
    fn describe_config_json(&self) -> Option<Result<Value, Error>> {
        None
    }
    /// `pmusim study <name>`: the monitor's study, as (standard output, exit code). `None`:
    /// the monitor has none.
    fn study(&mut self, _a: &StudyArgs) -> Option<Result<(String, u8), Error>> {
        None
    }
    /// `pmusim study <name>` as a sweep (issue 18): the study's independent runs as a sweep
    /// file, and the table step that turns their results into the study's output. The command
    /// plans and runs the sweep (on the local pool, or a scheduler's job array through
    /// `pmusim sweep submit`), then calls the table step. `None`: the study is not a sweep
    /// ([`Monitor::study`] runs it).
    fn study_sweep(&mut self, _a: &StudyArgs) -> Option<Result<SweepStudy, Error>> {
        None
    }
    /// The monitor's named events and how to program them, for `pmusim stat -e`
    /// ([`crate::counting`]). `None`: the monitor counts no named events.
    fn counting(&mut self) -> Option<&mut dyn crate::counting::Counting> {
        None
    }
}

/// One run of a study's sweep, for its table step: the run's axis values (as the manifest
/// has them) and its `pmusim run --json` document.
pub struct StudyRun {
    pub axes: serde_json::Map<String, Value>,
    pub doc: Value,
}

/// A study made of independent runs ([`Monitor::study_sweep`]).
pub struct SweepStudy {
    /// The sweep file (TOML, `docs/sweeps/README.md`); it names no relative paths.
    pub sweep: String,
    /// The table step: the study's (standard output, exit code) from every run's result, in
    /// the manifest's order, with the pool's wall time in seconds and its host threads.
    #[allow(clippy::type_complexity)]
    pub tables: Box<dyn Fn(&[StudyRun], f64, usize) -> Result<(String, u8), Error>>,
}

/// One line of the registry.
pub struct Entry {
    pub name: &'static str,
    /// One line for `pmusim list monitors`.
    pub description: &'static str,
    /// The seed document and sections it models.
    pub seed: &'static str,
    pub flags: &'static [Flag],
    /// Has `pmusim study <name>`.
    pub study: bool,
    pub new: fn() -> Box<dyn Monitor>,
}

/// Every monitor, one line each. A new monitor is a folder and a line here.
pub fn registry() -> &'static [Entry] {
    &[
        crate::numachine::ENTRY,
        crate::flashpoint::ENTRY,
        crate::addie::ENTRY,
        crate::memctl::ENTRY,
        crate::power2::ENTRY,
        crate::upc::ENTRY,
        crate::c2c::ENTRY,
    ]
}

/// The registry entry called `name`.
pub fn find(name: &str) -> Result<&'static Entry, Error> {
    registry().iter().find(|e| e.name == name).ok_or_else(|| {
        Error::input(format!(
            "unknown monitor `{name}`: the monitors are {} (see `pmusim list monitors`)",
            names().join(", ")
        ))
    })
}

/// The monitor that runs `pmusim study <study>`: the one called so (which may still have no
/// study: the caller says so), or the one listing it in [`Monitor::studies`].
pub fn study_owner(study: &str) -> Result<&'static Entry, Error> {
    registry()
        .iter()
        .find(|e| e.name == study || (e.new)().studies().contains(&study))
        .ok_or_else(|| {
            Error::input(format!(
                "unknown study `{study}`: the studies are {} (see `pmusim list monitors`)",
                study_names().join(", ")
            ))
        })
}

/// Every name `pmusim study` takes: each monitor with a study, then the studies it names.
pub fn study_names() -> Vec<&'static str> {
    registry()
        .iter()
        .flat_map(|e| {
            let own = e.study.then_some(e.name);
            own.into_iter().chain((e.new)().studies().iter().copied())
        })
        .collect()
}

/// The monitor whose home a machine preset is ([`Monitor::home_presets`]; `machine` a preset
/// name or a file named after one), if any.
pub fn home_monitor(machine: &str) -> Option<&'static str> {
    let m = machine.trim_end_matches(".toml");
    let m = m.rsplit('/').next().unwrap_or(m);
    registry()
        .iter()
        .find(|e| (e.new)().home_presets().iter().any(|h| m.starts_with(h)))
        .map(|e| e.name)
}

/// The registry's names, in order.
pub fn names() -> Vec<&'static str> {
    registry().iter().map(|e| e.name).collect()
}

/// A monitor's configuration file (`--monitor FILE.toml`), parsed once: the file's document
/// (`toml_edit`'s, which keeps each item's place in the text, so a monitor's errors name the
/// line and key as `toml::from_str` did) and its name for errors. The run finds the monitor
/// from its top-level `monitor` key and hands the same document to that monitor, which
/// deserializes it; the text is never parsed twice, nor scanned for the key by lines (a
/// `monitor` key in a table, comment or multi-line string is not the file's).
pub struct ConfigFile {
    doc: toml_edit::ImDocument<String>,
    source: String,
}

impl ConfigFile {
    /// Parses `text`; `source` names the file in errors (`{source}: {error}`).
    pub fn parse(text: String, source: &str) -> Result<ConfigFile, Error> {
        let doc = toml_edit::ImDocument::parse(text)
            .map_err(|e| Error::input(format!("{source}: {}", toml_edit::de::Error::from(e))))?;
        Ok(ConfigFile {
            doc,
            source: source.to_string(),
        })
    }

    /// Reads and parses the file at `path` (`what` names the option in a read error).
    pub fn read(path: &str, what: &str) -> Result<ConfigFile, Error> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::input(format!("{what}cannot read `{path}`: {e}")))?;
        ConfigFile::parse(text, path)
    }

    /// The file's name, as errors give it.
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The monitor the file configures: its top-level `monitor = "NAME"`, else `numachine`
    /// (the files of `docs/numachine/` predate the key).
    pub fn monitor(&self) -> Result<&'static str, Error> {
        let source = &self.source;
        match self.doc.as_table().get("monitor") {
            None => Ok(crate::numachine::NAME),
            Some(item) => match item.as_str() {
                Some(s) => Ok(find(s)
                    .map_err(|e| Error::input(format!("{source}: monitor: {}", e.msg)))?
                    .name),
                None => Err(Error::input(format!(
                    "{source}: monitor: expected a monitor's name, found {}",
                    item.to_string().trim()
                ))),
            },
        }
    }

    /// The document as the monitor's file type; errors carry the line, key and snippet,
    /// without the file's name (callers prefix it, as they did `toml::from_str`'s).
    pub fn deserialize<T: serde::de::DeserializeOwned>(self) -> Result<T, toml_edit::de::Error> {
        T::deserialize(toml_edit::de::Deserializer::from(self.doc))
    }
}

/// The monitors a run attaches: `--monitor SPEC` (`NAME[,NAME...]`, or a TOML file naming its
/// monitor with `monitor = "..."`) and those whose flags were given, each once, in that order.
pub fn select(spec: Option<&str>, flags: &GivenFlags) -> Result<Vec<Box<dyn Monitor>>, Error> {
    let mut out: Vec<Box<dyn Monitor>> = Vec::new();
    if let Some(spec) = spec {
        if spec.trim().is_empty() {
            return Err(Error::input(format!(
                "--monitor: empty; give NAME[,NAME...] ({}) or FILE.toml",
                names().join(", ")
            )));
        }
        if spec.ends_with(".toml") || spec.contains('/') {
            let file = ConfigFile::read(spec, "--monitor: ")?;
            let e = find(file.monitor()?)?;
            let mut m = (e.new)();
            m.selected_by_name();
            m.configure_toml(file)?;
            out.push(m);
        } else {
            for name in spec.split(',').map(str::trim) {
                let e = find(name).map_err(|e| Error::input(format!("--monitor: {}", e.msg)))?;
                if out.iter().any(|m| m.name() == e.name) {
                    return Err(Error::input(format!("--monitor: `{name}` is named twice")));
                }
                let mut m = (e.new)();
                m.selected_by_name();
                out.push(m);
            }
        }
    }
    for e in registry() {
        let mine: Vec<_> = flags
            .iter()
            .filter(|(f, _)| e.flags.iter().any(|x| x.long == f))
            .collect();
        if mine.is_empty() {
            continue;
        }
        if !out.iter().any(|m| m.name() == e.name) {
            out.push((e.new)());
        }
        let m = out.iter_mut().find(|m| m.name() == e.name).unwrap();
        for (f, v) in mine {
            m.flag(f, v.as_deref())?;
        }
    }
    Ok(out)
}

/// A probe whose state its monitor reads after the run: the machine owns the boxed `Shared`,
/// the monitor keeps a clone of the `Rc`. (The machine hands probes observations one at a time
/// and never re-enters a probe, so the `RefCell` borrow never fails.)
pub struct Shared<P> {
    probe: Rc<RefCell<P>>,
    name: String,
}

impl<P: Probe> Shared<P> {
    /// The probe to attach, and the handle its monitor keeps.
    pub fn new(p: P) -> (Shared<P>, Rc<RefCell<P>>) {
        let name = p.name().to_string();
        let probe = Rc::new(RefCell::new(p));
        (
            Shared {
                probe: probe.clone(),
                name,
            },
            probe,
        )
    }
}

impl<P: Probe + 'static> Probe for Shared<P> {
    #[inline]
    fn observe(&mut self, o: &Observation, sig: &mut Signals) {
        self.probe.borrow_mut().observe(o, sig)
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
        self.probe
            .borrow_mut()
            .mmio(proc, t, offset, size, write, sig)
    }
    fn wants_origins(&self) -> bool {
        self.probe.borrow().wants_origins()
    }
    fn wants_pipeline(&self) -> bool {
        self.probe.borrow().wants_pipeline()
    }
    fn interest(&self) -> u32 {
        self.probe.borrow().interest()
    }
    fn pipeline_before(&self) -> u32 {
        self.probe.borrow().pipeline_before()
    }
    fn wakes(&self) -> Option<(machine::probe::ProbeClock, u64)> {
        self.probe.borrow().wakes()
    }
    fn wake(&mut self, cycle: u64, t: engine::Tick, sig: &mut Signals) -> Option<u64> {
        self.probe.borrow_mut().wake(cycle, t, sig)
    }
    fn finish(&mut self, t: engine::Tick) {
        self.probe.borrow_mut().finish(t)
    }
    fn name(&self) -> &str {
        &self.name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The registry holds both seed monitors, each name and flag once (the CLI builds one
    /// `--flag` per declared flag, so a clash would be ambiguous).
    #[test]
    fn registry_lists_each_monitor_and_flag_once() {
        assert_eq!(
            names(),
            [
                "numachine",
                "flashpoint",
                "addie",
                "memctl",
                "power2",
                "upc",
                "c2c"
            ]
        );
        let mut flags: Vec<&str> = registry()
            .iter()
            .flat_map(|e| e.flags.iter().map(|f| f.long))
            .collect();
        let n = flags.len();
        flags.sort();
        flags.dedup();
        assert_eq!(flags.len(), n, "{flags:?}");
        for e in registry() {
            assert_eq!((e.new)().name(), e.name);
        }
        assert!(find("flashpoint").unwrap().study);
        assert!(!find("numachine").unwrap().study);
    }

    #[test]
    fn select_by_name_flag_and_file_key() {
        let names_of = |v: &[Box<dyn Monitor>]| v.iter().map(|m| m.name()).collect::<Vec<_>>();
        let v = select(Some("flashpoint, numachine"), &[]).unwrap();
        assert_eq!(names_of(&v), ["flashpoint", "numachine"]);
        // A flag selects its monitor after the named ones, once.
        let flags = [("protocol".to_string(), Some("fp-noproc".to_string()))];
        let v = select(Some("numachine"), &flags).unwrap();
        assert_eq!(names_of(&v), ["numachine", "flashpoint"]);
        let v = select(Some("flashpoint"), &flags).unwrap();
        assert_eq!(names_of(&v), ["flashpoint"]);
        assert!(select(None, &[]).unwrap().is_empty());
        for (spec, want) in [
            (
                "nope",
                "unknown monitor `nope`: the monitors are numachine, flashpoint",
            ),
            ("numachine,numachine", "`numachine` is named twice"),
            ("", "--monitor: empty"),
        ] {
            let e = select(Some(spec), &[]).err().unwrap();
            assert_eq!(e.code, 2);
            assert!(e.msg.contains(want), "{spec}: {}", e.msg);
        }
        let of = |text: &str| ConfigFile::parse(text.to_string(), "f.toml")?.monitor();
        assert_eq!(of("name = \"x\"\n").unwrap(), "numachine");
        assert_eq!(of("monitor = \"flashpoint\"\n").unwrap(), "flashpoint");
        let e = of("monitor = 3\n").unwrap_err();
        assert_eq!(e.msg, "f.toml: monitor: expected a monitor's name, found 3");
        let e = of("monitor = \"bogus\"\n").unwrap_err();
        assert!(e.msg.starts_with("f.toml: monitor: "), "{}", e.msg);
        let e = of("monitor = \n").unwrap_err();
        assert!(
            e.msg.starts_with("f.toml: TOML parse error at line 1"),
            "{}",
            e.msg
        );
    }

    /// The monitor is the document's top-level `monitor` key, wherever lines start: a line
    /// scan (f420651's shortcut) took the escaped key below for no key (and sent a `upc` file
    /// to `numachine`), and keys in a table, a comment or a multi-line string for the key.
    #[test]
    fn config_file_monitor_is_the_top_level_key() {
        let of = |text: &str| {
            ConfigFile::parse(text.to_string(), "f.toml")
                .unwrap()
                .monitor()
                .unwrap()
        };
        assert_eq!(of("\"mon\\u0069tor\" = \"upc\"\n"), "upc");
        assert_eq!(of("# monitor = \"upc\"\nname = \"x\"\n"), "numachine");
        assert_eq!(
            of("name = \"\"\"\nmonitor = \"upc\"\n\"\"\"\n"),
            "numachine"
        );
        assert_eq!(of("[counter]\nmonitor = \"upc\"\n"), "numachine");
        assert_eq!(of("name = \"x\"\n[t]\nmonitor = 3\n"), "numachine");
        // The same document configures the monitor: the upc file with the escaped key.
        let file = ConfigFile::parse("\"mon\\u0069tor\" = \"upc\"\n".into(), "f.toml").unwrap();
        let mut m = (find(file.monitor().unwrap()).unwrap().new)();
        m.configure_toml(file).unwrap();
        // A deserialization error still names the file, the line and the key.
        let file = ConfigFile::parse("name = \"x\"\nbogus = 1\n".into(), "g.toml").unwrap();
        let mut m = (find(file.monitor().unwrap()).unwrap().new)();
        let e = m.configure_toml(file).unwrap_err();
        assert!(
            e.msg.starts_with("g.toml: TOML parse error at line 2"),
            "{}",
            e.msg
        );
    }

    /// FlashPoint named without `--protocol` selects FP-Proc on a DP preset, keeps an FP
    /// preset's variant, and refuses a machine without FLASH.
    #[test]
    fn flashpoint_adjusts_the_preset() {
        use machine::flash::flashpoint::FlashProtocol;
        let mut fp = select(Some("flashpoint"), &[]).unwrap().pop().unwrap();
        let mut p = Preset::builtin("flash").unwrap();
        fp.adjust_preset(&mut p).unwrap();
        assert_eq!(p.flash.as_ref().unwrap().protocol, FlashProtocol::FpProc);
        let flags = [("protocol".to_string(), Some("fp-noproc".to_string()))];
        let mut fp = select(None, &flags).unwrap().pop().unwrap();
        let mut p = Preset::builtin("flash").unwrap();
        fp.adjust_preset(&mut p).unwrap();
        assert_eq!(p.flash.as_ref().unwrap().protocol, FlashProtocol::FpNoProc);
        let mut p = Preset::builtin("numachine").unwrap();
        let e = fp.adjust_preset(&mut p).unwrap_err();
        assert!(e.msg.contains("has no FLASH memory system"), "{}", e.msg);
    }
}
