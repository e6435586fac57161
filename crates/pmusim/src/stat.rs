//! `pmusim stat -e EVENT,... [-x SEP] [-j] [-I N] -- <run arguments>`: perf-stat-style counting
//! of named events on a monitor that offers them (`monitor::counting`), each monitored value
//! beside its exact value from the ground truth.
//!
//! When the requests do not fit the monitor's counters at once, the monitor plans several
//! groups and `stat` rotates them every `--mux-period` processor cycles of simulated time, as
//! perf rotates event groups on a timer; each count is then scaled as perf scales it (value x
//! time enabled / time running) and the time running is printed beside it. Times are
//! processor cycles (perf prints nanoseconds).
//!
//! Output formats follow perf's: the text layout; `-x SEP` CSV lines `value, unit, event, run
//! time, percentage running, metric value, metric unit` (the metric is the exact count, unit
//! `exact`); `-j` one JSON object per line with perf's keys and `exact`. With `-I N`, interval
//! lines (perf's `-I` layout, the time field a processor cycle) come first, during the run.
//! Everything goes to standard output.

use crate::cli::RunArgs;
use crate::Failure;
use clap::{Args, Parser};
use machine::state::State;
use machine::Machine;
use monitor::counting::{parse_modifiers, Privilege, Request};
use monitor::plugin::{self, Error, Monitor, Output};
use std::cell::RefCell;
use std::fmt::Write as _;
use std::io::Write as _;
use std::rc::Rc;

#[derive(Args)]
pub struct StatArgs {
    /// Events to count: NAME[:u|:k],... (PAPI presets and the monitor's native events; `-e
    /// list` lists them). `:u` counts user state only, `:k` supervisor state only.
    #[arg(short = 'e', long = "event", value_name = "EVENT,...", required = true)]
    pub events: Vec<String>,
    /// CSV output with this field separator (perf's -x).
    #[arg(short = 'x', long = "field-separator", value_name = "SEP")]
    pub field_separator: Option<String>,
    /// One JSON object per line (perf's -j).
    #[arg(short = 'j', long = "json-lines", conflicts_with = "field_separator")]
    pub json_lines: bool,
    /// Print the counts every CYCLES processor cycles (perf's -I, in simulated cycles).
    #[arg(short = 'I', long, value_name = "CYCLES", value_parser = clap::value_parser!(u64).range(1..))]
    pub interval: Option<u64>,
    /// Multiplexing: rotate the counter programming every CYCLES processor cycles when the
    /// events need more counters than the monitor has.
    #[arg(long, value_name = "CYCLES", default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub mux_period: u64,
    /// The run's arguments, as `pmusim run` takes them (workload, --machine, --monitor NAME,
    /// --size, ...).
    #[arg(last = true, value_name = "RUN ARGUMENTS")]
    pub run: Vec<String>,
}

/// The session a run carries (`RunArgs::stat`): the live views tick it and the report is its.
pub type Handle = Rc<RefCell<Session>>;

#[derive(Clone, Debug, PartialEq, Eq)]
enum Format {
    Text,
    Csv(String),
    Json,
}

/// The counting monitor, the requests, the rotation and what was counted.
pub struct Session {
    mon: Box<dyn Monitor>,
    names: Vec<String>,
    reqs: Vec<Request>,
    groups: Vec<Vec<usize>>,
    active: usize,
    /// Cycle at which the active group was programmed.
    since: u64,
    mux: Option<u64>,
    interval: Option<u64>,
    /// Counts and running cycles of the groups no longer active, per request.
    raw: Vec<u64>,
    running: Vec<u64>,
    /// The previous interval's totals (raw, running, exact) and cycle.
    last: (Vec<u64>, Vec<u64>, Vec<Option<u64>>, u64),
    format: Format,
    workload: String,
    /// At the end: simulated cycles, the processors' cycles summed (time enabled),
    /// processor clock in Hz, exact counts.
    end: Option<(u64, u64, u64, Vec<Option<u64>>)>,
    /// The processors' cycles summed at the previous interval.
    last_enabled: u64,
    rotations: u64,
}

/// The processors' cycles so far, summed: the time base of enabled and running times.
fn cycles_of(st: &State) -> u64 {
    st.cores.iter().map(|c| c.cnt.cycles()).sum()
}

impl Session {
    /// Cycles between the live views' ticks: the rotation and interval periods' common
    /// divisor (the default tick without either).
    pub fn tick_cycles(&self) -> Option<u64> {
        match (self.mux, self.interval) {
            (Some(a), Some(b)) => Some(crate::live::gcd(a, b)),
            (a, b) => a.or(b),
        }
    }

    fn counting(&mut self) -> &mut dyn monitor::counting::Counting {
        self.mon
            .counting()
            .expect("a stat session's monitor counts")
    }

    /// The totals so far: (raw counts, running cycles), the active group's included. Time
    /// is the processors' own cycles summed (`cycles_of`): each processor's counting window
    /// is its cycles between two programmings, as perf sums time over the CPUs it counts on.
    /// `st` brings the monitor's counters up to the processors' (`end`: the run is over and
    /// the monitor's `finish` did; `Counting::read_end`).
    fn totals(&mut self, st: &State, end: bool, now: u64) -> (Vec<u64>, Vec<u64>) {
        let (mut raw, mut running) = (self.raw.clone(), self.running.clone());
        let counted = if end {
            self.counting().read_end(st)
        } else {
            self.counting().read(Some(st))
        };
        for (k, &r) in self.groups[self.active].iter().enumerate() {
            raw[r] += counted.get(k).copied().unwrap_or(0);
            running[r] += now - self.since;
        }
        (raw, running)
    }

    /// Called by the run's ticker at every multiple of [`Session::tick_cycles`].
    pub fn tick(&mut self, st: &State, cycle: u64) {
        if self.mux.is_some_and(|p| cycle.is_multiple_of(p)) {
            let now = cycles_of(st);
            let (raw, running) = self.totals(st, false, now);
            self.raw = raw;
            self.running = running;
            self.active = (self.active + 1) % self.groups.len();
            let g = self.active;
            self.counting().program(g, Some(st));
            self.since = now;
            self.rotations += 1;
        }
        if self.interval.is_some_and(|i| cycle.is_multiple_of(i)) {
            self.print_interval(st, cycle);
        }
    }

    /// The run is over (or stopped) at `cycles`: the last interval, the totals and the exact
    /// counts.
    pub fn finish(&mut self, m: &Machine, cycles: u64) {
        let st = m.state();
        if self.interval.is_some() && self.last.3 < cycles {
            self.print_interval(st, cycles);
        }
        let now = cycles_of(st);
        let (raw, running) = self.totals(st, true, now);
        self.raw = raw;
        self.running = running;
        self.since = now;
        let exact = self.exact(st, true);
        self.end = Some((cycles, now, st.preset.clocks.cpu_hz, exact));
    }

    fn exact(&mut self, st: &State, end: bool) -> Vec<Option<u64>> {
        let reqs = self.reqs.clone();
        let c = self.counting();
        reqs.iter().map(|r| c.exact(st, r, end)).collect()
    }

    fn print_interval(&mut self, st: &State, cycle: u64) {
        let now = cycles_of(st);
        let (raw, running) = self.totals(st, false, now);
        let exact = self.exact(st, false);
        let (lraw, lrun, lexact, lcycle) = &self.last;
        let enabled = now - self.last_enabled;
        self.last_enabled = now;
        let mut out = String::new();
        if self.format == Format::Text && *lcycle == 0 {
            out += "#      proc. cycle             counts   event                       exact\n";
        }
        for r in 0..self.reqs.len() {
            let run = running[r] - lrun[r];
            let line = Line {
                value: scaled(raw[r] - lraw[r], enabled, run),
                event: &self.names[r],
                running: run,
                pct: pct(run, enabled),
                exact: match (exact[r], lexact[r]) {
                    (Some(a), Some(b)) => Some(a - b),
                    (Some(a), None) if *lcycle == 0 => Some(a),
                    _ => None,
                },
            };
            line.write(&mut out, &self.format, Some(cycle));
        }
        self.last = (raw, running, exact, cycle);
        let _ = std::io::stdout().lock().write_all(out.as_bytes());
    }

    /// The final report in the chosen format.
    pub fn render(&self) -> String {
        let Some((cycles, enabled, hz, exact)) = &self.end else {
            return String::new();
        };
        let mut out = String::new();
        let text = self.format == Format::Text;
        if text {
            let _ = writeln!(
                out,
                "\n Performance counter stats for '{}' (monitor {}{}):\n",
                self.workload,
                self.mon.name(),
                if self.groups.len() > 1 {
                    format!(
                        ", {} groups multiplexed every {} cycles, {} rotations",
                        self.groups.len(),
                        report::model::format::int(self.mux.unwrap_or(0)),
                        report::model::format::int(self.rotations)
                    )
                } else {
                    String::new()
                }
            );
        }
        for (r, &exact) in exact.iter().enumerate() {
            let line = Line {
                value: scaled(self.raw[r], *enabled, self.running[r]),
                event: &self.names[r],
                running: self.running[r],
                pct: pct(self.running[r], *enabled),
                exact,
            };
            line.write(&mut out, &self.format, None);
        }
        if text {
            let _ = writeln!(
                out,
                "\n{:>18} processor cycles simulated ({:.9} seconds of simulated time)\n",
                report::model::format::int(*cycles),
                *cycles as f64 / (*hz).max(1) as f64
            );
        }
        out
    }
}

/// perf's scaling of a multiplexed count: value x enabled / running (`None`: never counted).
fn scaled(raw: u64, enabled: u64, running: u64) -> Option<f64> {
    (running > 0).then(|| raw as f64 * enabled as f64 / running as f64)
}

fn pct(running: u64, enabled: u64) -> f64 {
    if enabled == 0 {
        100.0
    } else {
        100.0 * running as f64 / enabled as f64
    }
}

/// One event's line in any format.
struct Line<'a> {
    value: Option<f64>,
    event: &'a str,
    running: u64,
    pct: f64,
    exact: Option<u64>,
}

impl Line<'_> {
    fn write(&self, out: &mut String, f: &Format, interval: Option<u64>) {
        let value = match self.value {
            Some(v) => format!("{v:.0}"),
            None => "<not counted>".to_string(),
        };
        let exact = self.exact.map(|e| e.to_string()).unwrap_or_default();
        let _ = match f {
            Format::Csv(sep) => {
                let time = interval.map(|c| format!("{c}{sep}")).unwrap_or_default();
                writeln!(
                    out,
                    "{time}{value}{sep}{sep}{}{sep}{}{sep}{:.2}{sep}{exact}{sep}{}",
                    self.event,
                    self.running,
                    self.pct,
                    if self.exact.is_some() { "exact" } else { "" }
                )
            }
            Format::Json => {
                let time = interval
                    .map(|c| format!("\"interval\" : {c}, "))
                    .unwrap_or_default();
                let value = match self.value {
                    Some(v) => format!("{v:.6}"),
                    None => "<not counted>".to_string(),
                };
                let (metric, unit, ex) = match self.exact {
                    Some(e) => (format!("{e}"), "exact", e.to_string()),
                    None => (String::new(), "", "null".to_string()),
                };
                writeln!(
                    out,
                    "{{{time}\"counter-value\" : \"{value}\", \"unit\" : \"\", \"event\" : {}, \"event-runtime\" : {}, \"pcnt-running\" : {:.2}, \"metric-value\" : \"{metric}\", \"metric-unit\" : \"{unit}\", \"exact\" : {ex}}}",
                    serde_json::Value::from(self.event),
                    self.running,
                    self.pct
                )
            }
            Format::Text => {
                let value = match self.value {
                    Some(v) => report::model::format::int(v.round() as u64),
                    None => "<not counted>".to_string(),
                };
                let time = interval.map(|c| format!("{c:>18} ")).unwrap_or_default();
                let exact = match (self.exact, self.value) {
                    (Some(e), Some(v)) => format!(
                        "#  exact {:>15}  {}",
                        report::model::format::int(e),
                        error(v, e)
                    ),
                    (Some(e), None) => format!("#  exact {:>15}", report::model::format::int(e)),
                    (None, _) => "#  exact not in the ground truth".to_string(),
                };
                let mux = if self.pct < 100.0 {
                    format!("  ({:.2}%)", self.pct)
                } else {
                    String::new()
                };
                // perf's 26-column event field, wider for a longer name (PEVT_*).
                let w = 26.max(self.event.len() + 2);
                writeln!(out, "{time}{value:>18}      {:<w$}{exact}{mux}", self.event)
            }
        };
    }
}

/// The estimate's error against the exact count, relative (absolute for tiny counts).
fn error(v: f64, exact: u64) -> String {
    if exact >= 100 {
        format!("{:+.2}%", 100.0 * (v - exact as f64) / exact as f64)
    } else {
        format!("{:+.0} abs", v - exact as f64)
    }
}

/// The monitor `stat` counts with, in a run's monitor list: the run attaches it, and its
/// report (the stat output) replaces the run's.
struct StatMonitor(Handle);

impl Monitor for StatMonitor {
    fn name(&self) -> &'static str {
        self.0.borrow().mon.name()
    }
    fn adjust_preset(&mut self, p: &mut machine::Preset) -> Result<(), Error> {
        self.0.borrow_mut().mon.adjust_preset(p)
    }
    fn attach(&mut self, m: &mut Machine) -> Result<(), Error> {
        self.0.borrow_mut().mon.attach(m)
    }
    fn exclusive_report(
        &self,
        _m: &Machine,
        _doc: &serde_json::Value,
    ) -> Option<Result<Output, Error>> {
        Some(Ok(Output {
            text: self.0.borrow().render(),
            file: None,
        }))
    }
}

/// The monitor a run with a stat session attaches.
pub fn monitor(h: &Handle) -> Box<dyn Monitor> {
    Box::new(StatMonitor(h.clone()))
}

/// Every monitor that counts named events, fresh.
fn counting_monitors() -> Vec<Box<dyn Monitor>> {
    plugin::registry()
        .iter()
        .map(|e| (e.new)())
        .filter_map(|mut m| m.counting().is_some().then_some(m))
        .collect()
}

/// `pmusim stat -e list` and `pmusim list events`.
pub fn list_events(json: bool) -> Result<u8, Failure> {
    let mut rows = Vec::new();
    let mut text = String::new();
    for mut m in counting_monitors() {
        let name = m.name();
        let c = m.counting().expect("filtered");
        let mods = if c.privileges() { ":u :k" } else { "" };
        for e in c.events() {
            if json {
                rows.push(serde_json::json!({
                    "monitor": name,
                    "name": e.name,
                    "kind": e.kind,
                    "modifiers": if c.privileges() { vec!["u", "k"] } else { vec![] },
                    "exact": e.exact,
                    "description": e.description,
                }));
            } else {
                let _ = writeln!(
                    text,
                    "{name:<10} {:<22} {:<12} {mods:<6} {}{}",
                    e.name,
                    e.kind,
                    e.description,
                    if e.exact { "" } else { " [no exact count]" }
                );
            }
        }
    }
    if json {
        crate::cli::print_json("list-events", "events", rows);
    } else {
        let mons: Vec<&str> = plugin::registry().iter().map(|e| e.name).collect();
        let with: Vec<&str> = counting_monitors().iter().map(|m| m.name()).collect();
        print!(
            "{:<10} {:<22} {:<12} {:<6} description\n{text}\nMonitors with named events: {}; the others ({}) count no named events yet.\n",
            "monitor",
            "event",
            "kind",
            "mods",
            with.join(", "),
            mons.iter()
                .filter(|n| !with.contains(n))
                .copied()
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(0)
}

/// The requests of `-e` on monitor `mon`: each name resolved, then each modifier allowed.
/// `Err((names_known, message))`: `names_known` when every name resolved and only a modifier
/// was refused (the monitor is then still the one to count on, and its refusal the answer).
fn requests(
    specs: &[(String, String, Privilege)],
    mon: &mut dyn Monitor,
) -> Result<Vec<Request>, (bool, String)> {
    let name = mon.name();
    let c = mon.counting().ok_or_else(|| {
        (
            false,
            format!(
                "monitor `{name}` counts no named events (monitors that do: {})",
                counting_monitors()
                    .iter()
                    .map(|m| m.name())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )
    })?;
    let events = c.events();
    let mut reqs = Vec::new();
    for (spec, ev, p) in specs {
        let event = events.iter().position(|e| e.name == *ev).ok_or_else(|| match c
            .refusal(ev)
        {
            Some(why) => (false, format!("-e {spec}: monitor `{name}`: {why}")),
            None => (
                false,
                format!("-e {spec}: monitor `{name}` has no event `{ev}` (`pmusim stat -e list` lists them)"),
            ),
        })?;
        reqs.push(Request {
            event,
            privilege: *p,
        });
    }
    if let Some((spec, _, p)) = specs.iter().find(|s| s.2 != Privilege::All) {
        if !c.privileges() {
            let able: Vec<&str> = counting_monitors()
                .into_iter()
                .filter_map(|mut m| {
                    let n = m.name();
                    m.counting().filter(|c| c.privileges()).map(|_| n)
                })
                .collect();
            return Err((
                true,
                format!(
                    "-e {spec}: monitor `{name}` cannot restrict counting to user or supervisor state (it does not see the processor's MSR[PR]); drop the `{}` modifier, or count on a monitor that can ({}, named with --monitor after `--`)",
                    p.suffix(),
                    able.join(", ")
                ),
            ));
        }
    }
    Ok(reqs)
}

/// `pmusim stat`.
pub fn run(a: StatArgs) -> Result<u8, Failure> {
    let specs: Vec<&str> = a
        .events
        .iter()
        .flat_map(|e| e.split(','))
        .map(str::trim)
        .collect();
    if specs == ["list"] {
        return list_events(false);
    }
    let mut parsed = Vec::new();
    for s in &specs {
        if s.is_empty() {
            return Err(Failure::input(
                "-e: an empty event name (give NAME[:u|:k],...; `pmusim stat -e list` lists them)",
            ));
        }
        let (name, p) = parse_modifiers(s).map_err(|e| Failure::input(format!("-e {e}")))?;
        parsed.push((s.to_string(), name.to_string(), p));
    }
    let args = std::iter::once("pmusim".to_string())
        .chain(std::iter::once("run".to_string()))
        .chain(a.run.iter().cloned());
    let mut r = match crate::cli::Cli::try_parse_from(args) {
        Ok(crate::cli::Cli {
            cmd: crate::cli::Cmd::Run(r),
        }) => r,
        Ok(_) => unreachable!("parsed as `run`"),
        Err(e) => {
            return Err(Failure::input(format!(
                "the run arguments after `--`: {}",
                e.render().to_string().trim_end()
            )))
        }
    };
    refuse_run_outputs(&r)?;
    // The counting monitor: the one named, else the first that knows every event.
    let mon = match r.monitor.take() {
        Some(spec) => {
            let e = plugin::find(spec.trim()).map_err(|e| {
                Failure::input(format!(
                    "--monitor {spec}: {} (stat counts on one monitor, named)",
                    e.msg
                ))
            })?;
            let mut m = (e.new)();
            let reqs = requests(&parsed, m.as_mut()).map_err(|e| Failure::input(e.1))?;
            (m, reqs)
        }
        None => {
            let mut found = None;
            let mut why = Vec::new();
            let mut mons = counting_monitors();
            // The machine's own monitor first (`-m power2` counts on the POWER2 monitor).
            if let Some(home) = monitor::plugin::home_monitor(&r.machine.machine) {
                mons.sort_by_key(|m| m.name() != home);
            }
            // The first monitor knowing every name counts, or refuses a modifier itself
            // (another monitor is not silently chosen for a modifier's sake). The machine's
            // own monitor refusing a preset of its chip by name (a BG/Q preset pmusim's UPC
            // cannot compute) is the answer too: another chip's monitor does not count it.
            let home = monitor::plugin::home_monitor(&r.machine.machine);
            for mut m in mons {
                let own = home == Some(m.name());
                match requests(&parsed, m.as_mut()) {
                    Ok(reqs) => {
                        found = Some((m, reqs));
                        break;
                    }
                    Err((true, e)) => return Err(Failure::input(e)),
                    Err((false, e)) => {
                        let c = m.counting().expect("a counting monitor");
                        if own && parsed.iter().any(|p| c.refusal(&p.1).is_some()) {
                            return Err(Failure::input(e));
                        }
                        why.push(e)
                    }
                }
            }
            found.ok_or_else(|| Failure::input(why.join("; ")))?
        }
    };
    let (mut mon, reqs) = mon;
    let c = mon.counting().expect("checked");
    let groups = c.plan(&reqs)?;
    c.program(0, None);
    let n = reqs.len();
    let session = Session {
        mon,
        names: parsed.iter().map(|p| p.0.clone()).collect(),
        reqs,
        mux: (groups.len() > 1).then_some(a.mux_period),
        groups,
        active: 0,
        since: 0,
        interval: a.interval,
        raw: vec![0; n],
        running: vec![0; n],
        last: (vec![0; n], vec![0; n], vec![Some(0); n], 0),
        format: match (&a.field_separator, a.json_lines) {
            (Some(s), _) => Format::Csv(s.clone()),
            (None, true) => Format::Json,
            _ => Format::Text,
        },
        workload: r.workload.clone(),
        end: None,
        last_enabled: 0,
        rotations: 0,
    };
    r.stat = Some(Rc::new(RefCell::new(session)));
    crate::run::run(r)
}

/// The run's own output flags would be silently replaced by stat's output: refused.
fn refuse_run_outputs(r: &RunArgs) -> Result<(), Failure> {
    let given = [
        (r.json, "--json (stat's JSON is -j, before `--`)"),
        (
            r.interval.is_some(),
            "-I/--interval (stat's is -I, before `--`)",
        ),
        (r.svg.is_some(), "--svg"),
        (r.csv.is_some(), "--csv (stat's CSV is -x SEP, before `--`)"),
        (r.html.is_some(), "--html"),
        (r.typed_json.is_some(), "--typed-json"),
    ];
    for (on, what) in given {
        if on {
            return Err(Failure::input(format!(
                "pmusim stat: {what} is a `pmusim run` output that stat replaces; leave it out of the run arguments"
            )));
        }
    }
    Ok(())
}
