//! `pmusim run`.

use crate::cli::RunArgs;
use crate::Failure;
use machine::{Machine, Options};
use monitor::Monitor;
use serde_json::json;
use std::time::Instant;
use workload::{Size, Workload};

/// `--bins` and `--place` are a trace's (its address regions, its threads' processors): on a
/// kernel they would be silently ignored (issue 17), so they are refused before the run.
fn refuse_trace_flags(a: &RunArgs) -> Result<(), Failure> {
    let what = match (&a.bins, a.place.as_str()) {
        (Some(b), _) => format!("--bins {}", b.display()),
        (None, "spread") => return Ok(()),
        (None, p) => format!("--place {p}"),
    };
    Err(Failure::input(format!(
        "{what}: applies to a trace (`trace:FILE` or --record), not to the kernel `{}`; leave it out",
        a.workload
    )))
}

/// The monitors of a run, in the order they were selected.
pub(crate) type Monitors = Vec<Box<dyn Monitor>>;

pub fn run(mut a: RunArgs) -> Result<u8, Failure> {
    let mut mons = crate::monitors::select(a.monitor.as_deref(), &a.monitor_flags)?;
    restrict(&mut a, &mut mons)?;
    if let Some(s) = &a.stat {
        mons.push(crate::stat::monitor(s));
    }
    if let (Some(f), true) = (&a.svg, mons.is_empty()) {
        if f.ends_with(".svg") {
            return Err(Failure::input(format!(
                "--svg {f}: a FILE.svg is an attached monitor's plot: add --monitor NAME (see `pmusim list monitors`), or give a directory for every plot of the run"
            )));
        }
    }
    check_html_path(&a)?;
    if let Some(d) = &a.csv {
        check_output_dir("--csv", std::path::Path::new(d))?;
    }
    if let Some(f) = &a.svg {
        let p = std::path::Path::new(f);
        if f.ends_with(".svg") {
            check_output_file("--svg", p)?;
        } else {
            check_output_dir("--svg", p)?;
        }
    }
    let mut preset = a.machine.preset()?;
    if a.workload.contains('+') && preset.os.is_none() {
        // Several processes need the operating-system model: its default numbers.
        preset.os = Some(machine::os::config::OsCfg::default());
    }
    for mon in &mut mons {
        mon.adjust_preset(&mut preset)?;
    }
    if let Some(mon) = mons.iter().find(|m| m.replaces_report()) {
        let shaping: Vec<&str> = [
            (a.json, "--json"),
            (a.csv.is_some(), "--csv"),
            (a.html.is_some(), "--html"),
        ]
        .into_iter()
        .filter_map(|(on, f)| on.then_some(f))
        .collect();
        if !shaping.is_empty() {
            return Err(Failure::input(format!(
                "{}: monitor `{}`'s report replaces the run's report here; give its own --format (json, csv, ...) instead, or drop its report flag for the run's",
                shaping.join(", "),
                mon.name()
            )));
        }
    }
    let size = Size::parse(&a.size).map_err(Failure::input)?;
    if a.record {
        return record_and_run(&a, preset, mons);
    }
    if !a.program.is_empty() {
        return Err(Failure::input(format!(
            "`-- {}`: a program to run needs --record (pmusim run --record -- PROGRAM ARGS)",
            a.program.join(" ")
        )));
    }
    if let Some(path) = a.workload.strip_prefix("trace:") {
        return run_trace(&a, preset, path, mons);
    }
    refuse_trace_flags(&a)?;
    if a.workload.contains('+') {
        return crate::multi::run(&a, preset, mons, size);
    }
    if !a.mark.is_empty() && preset.os.is_none() {
        return Err(Failure::input(
            "--mark: marking a process needs the operating-system model (--os, an [os] preset section, or a multiprogrammed run a+b)",
        ));
    }
    let w = workload::find(&a.workload, size).map_err(Failure::input)?;
    let mut m = new_machine(preset, &a)?;
    let start = Instant::now();
    if m.state().os.is_some() {
        let marked = a.mark.iter().any(|n| n == "main");
        if let Some(bad) = a.mark.iter().find(|n| *n != "main") {
            return Err(Failure::input(format!(
                "--mark {bad}: no such process (a single workload runs as process `main`)"
            )));
        }
        m.new_process("main", marked).map_err(Failure::input)?;
    }
    let w = workload::install(w, &mut m, a.threads).map_err(Failure::input)?;
    for mon in &mut mons {
        mon.attach(&mut m)?;
    }
    let (sum, stop) = crate::live::simulate(&a, &mut m, &mut mons)?;
    let wall = start.elapsed().as_secs_f64();
    let v = verify_unless_stopped(|| w.verify(), stop, &sum);
    let wl = json!({
        "name": a.workload,
        "size": size.name(),
        "threads": a.threads.unwrap_or(m.state().preset.program_procs()),
        "verified": v.verified,
        "detail": v.detail,
    });
    finish(&a, &m, &mons, &sum, stop, wl, wall, v.verified, &v.detail)
}

/// `--monitor-process NAME [--restrict-by WAY]`: restricts every monitor of `--monitor` to
/// the process, and marks it (`--mark NAME`) when a monitor restricts by marking.
fn restrict(a: &mut RunArgs, mons: &mut Monitors) -> Result<(), Failure> {
    let Some(name) = a.monitor_process.clone() else {
        return Ok(());
    };
    if mons.is_empty() {
        return Err(Failure::input(format!(
            "--monitor-process {name}: no monitor to restrict; add --monitor NAME (numachine, power2, upc, flashpoint, c2c)"
        )));
    }
    let by = a
        .restrict_by
        .as_deref()
        .map(monitor::plugin::Restrict::parse)
        .transpose()?;
    for mon in mons.iter_mut() {
        let way = mon.restrict(&name, by)?;
        if way.marks() && !a.mark.contains(&name) {
            a.mark.push(name.clone());
        }
    }
    Ok(())
}

/// The workload's check, or, for a run that stopped early, a failed check saying why (a
/// partial result is not a wrong one, and is not a verified one either).
pub(crate) fn verify_unless_stopped(
    verify: impl FnOnce() -> workload::Verification,
    stop: Option<crate::live::Stop>,
    sum: &machine::RunSummary,
) -> workload::Verification {
    match stop {
        None => verify(),
        Some(s) => workload::Verification {
            verified: false,
            detail: format!(
                "not checked: the run stopped at processor cycle {} ({})",
                sum.cycles,
                s.reason()
            ),
        },
    }
}

/// The run's outputs: a monitor's report that replaces the run's, or the run's document (JSON
/// or text, with each monitor's section), and the monitors' SVG and CSV files.
#[allow(clippy::too_many_arguments)]
pub(crate) fn finish(
    a: &RunArgs,
    m: &Machine,
    mons: &Monitors,
    sum: &machine::RunSummary,
    stop: Option<crate::live::Stop>,
    wl: serde_json::Value,
    wall: f64,
    verified: bool,
    detail: &str,
) -> Result<u8, Failure> {
    let mut sections = serde_json::Map::new();
    for mon in mons {
        // A monitor whose report does not read its JSON section gets one only when asked.
        if !a.json && !mon.section_needs_json() {
            continue;
        }
        if let Some(v) = mon.json(m) {
            sections.insert(mon.name().to_string(), v);
        }
    }
    // `Value::Object`, not `json!`: the macro would serialize the sections again (a deep copy).
    let mut doc = report::run_document(
        m.state(),
        sum,
        wl,
        serde_json::Value::Object(sections),
        wall,
    );
    doc["run"]["partial"] = json!(stop.is_some());
    doc["run"]["stop_reason"] = json!(stop.map_or("finished", |s| s.reason()));
    // A stopped run's report is printed, then the exit code says it is partial.
    let code = |verified: bool, detail: &str| match stop {
        Some(s) => s.exit_code(),
        None => wrong(verified, detail),
    };
    if let Some(out) = mons.iter().find_map(|mon| mon.exclusive_report(m, &doc)) {
        let out = out?;
        match &out.file {
            Some(p) => std::fs::write(p, out.text)
                .map_err(|e| Failure::input(format!("cannot write {}: {e}", p.display())))?,
            None => print!("{}", out.text),
        }
        return Ok(code(verified, detail));
    }
    let out = Outputs { m, mons, doc: &doc };
    if let Some(f) = &a.svg {
        out.svg(f, a.top)?;
    }
    if let Some(dir) = &a.csv {
        out.csv(std::path::Path::new(dir))?;
    }
    if let Some(path) = &a.typed_json {
        let (r, _) = out.report(report::base::build(&doc, usize::MAX), usize::MAX);
        std::fs::write(path, report::render::json::render(&r) + "\n")
            .map_err(|e| Failure::input(format!("--typed-json {}: {e}", path.display())))?;
    }
    if let Some(path) = &a.html {
        std::fs::write(path, out.html(a.top))
            .map_err(|e| Failure::input(format!("--html {}: {e}", path.display())))?;
        eprintln!("pmusim: wrote the HTML report to {}", path.display());
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&doc).unwrap());
    } else {
        print!("{}", out.text(a.top));
    }
    Ok(code(verified, detail))
}

/// The human-readable outputs of a finished run. Each is the one typed report (the base
/// report, then the section of every monitor that builds one, `Monitor::section`, in the order
/// the monitors were selected) handed to one renderer; a monitor without a section still
/// renders its own text, CSV and SVG, after the typed report.
struct Outputs<'a> {
    m: &'a Machine,
    mons: &'a Monitors,
    doc: &'a serde_json::Value,
}

impl<'a> Outputs<'a> {
    fn json_of(&self, mon: &dyn Monitor) -> &'a serde_json::Value {
        &self.doc["monitors"][mon.name()]
    }

    /// `base` with every monitor's typed section appended (ranked tables keep `top` rows),
    /// and the monitors that build none.
    fn report(&self, base: report::Report, top: usize) -> (report::Report, Vec<&'a dyn Monitor>) {
        let mut r = base;
        let mut legacy = Vec::new();
        for mon in self.mons {
            match mon.section(self.m, self.json_of(mon.as_ref()), top) {
                Some(s) => r.sections.push(s),
                None => legacy.push(mon.as_ref()),
            }
        }
        (r, legacy)
    }

    /// The text report on standard output.
    fn text(&self, top: usize) -> String {
        let (r, legacy) = self.report(report::base::build(self.doc, top), top);
        let mut out = report::render::text::render(&r);
        for mon in legacy {
            out.push_str(&mon.text(self.m, self.json_of(mon), top));
        }
        out
    }

    /// `--csv DIR`: every table of the report, one file each (`DIR/<table id>.csv`), with every
    /// row (no `--top` cut).
    fn csv(&self, dir: &std::path::Path) -> Result<(), Failure> {
        let place =
            |e: &dyn std::fmt::Display| Failure::input(format!("--csv {}: {e}", dir.display()));
        std::fs::create_dir_all(dir).map_err(|e| place(&e))?;
        let (r, legacy) = self.report(report::base::build(self.doc, usize::MAX), usize::MAX);
        let mut n = report::render::csv::write_dir(&r, dir)
            .map_err(|e| place(&e))?
            .len();
        for mon in legacy {
            for (name, text) in mon.csv(self.m, self.json_of(mon)) {
                std::fs::write(dir.join(&name), text).map_err(|e| place(&e))?;
                n += 1;
            }
        }
        eprintln!("pmusim: wrote {n} CSV files to {}", dir.display());
        Ok(())
    }

    /// `--svg DIR`: every plot of the report, one file each (`DIR/<plot id>.svg`; a monitor
    /// without a typed section adds `DIR/<monitor>.svg`). `--svg FILE.svg`: the first plot
    /// of an attached monitor.
    fn svg(&self, path: &str, top: usize) -> Result<(), Failure> {
        let place = |e: &dyn std::fmt::Display| Failure::input(format!("--svg {path}: {e}"));
        if path.ends_with(".svg") {
            let mut why = Vec::new();
            for mon in self.mons {
                let plot = match mon.section(self.m, self.json_of(mon.as_ref()), top) {
                    Some(s) => s
                        .plots()
                        .next()
                        .map(report::render::svg::plot)
                        .ok_or_else(|| format!("monitor `{}` has no plot in this run", mon.name())),
                    None => mon.svg(self.m, self.json_of(mon.as_ref())),
                };
                match plot {
                    Ok(svg) => return std::fs::write(path, svg).map_err(|e| place(&e)),
                    Err(e) => why.push(e),
                }
            }
            return Err(Failure::input(if why.is_empty() {
                format!("--svg {path}: a FILE.svg is an attached monitor's plot: add --monitor NAME, or give a directory for every plot of the run")
            } else {
                format!("--svg {path}: {}", why.join("; "))
            }));
        }
        let dir = std::path::Path::new(path);
        std::fs::create_dir_all(dir).map_err(|e| place(&e))?;
        let base = report::base::build_with_histograms(self.doc, self.m.state(), top);
        let (r, legacy) = self.report(base, top);
        let mut n = report::render::svg::write_dir(&r, dir)
            .map_err(|e| place(&e))?
            .len();
        for mon in legacy {
            if let Ok(svg) = mon.svg(self.m, self.json_of(mon)) {
                std::fs::write(dir.join(format!("{}.svg", mon.name())), svg)
                    .map_err(|e| place(&e))?;
                n += 1;
            }
        }
        eprintln!("pmusim: wrote {n} SVG files to {}", dir.display());
        Ok(())
    }

    /// The HTML page: the typed base report with its latency histograms, the heat map of
    /// misses by data structure and processor, then each monitor's section in order (typed:
    /// sortable tables and inline plots; otherwise its text, preformatted, and its plot).
    fn html(&self, top: usize) -> String {
        use report::render::html::Page;
        let doc = self.doc;
        let title = format!(
            "pmusim: {} on {} ({} processors)",
            doc["workload"]["name"].as_str().unwrap_or("?"),
            doc["machine"]["name"].as_str().unwrap_or("?"),
            doc["machine"]["procs"]
        );
        let mut page = Page::new(&title);
        page.report(&report::base::build_with_histograms(
            doc,
            self.m.state(),
            top,
        ));
        if let Some(h) = structure_heatmap(doc, top) {
            page.heading("Misses by data structure and processor");
            page.heatmap(&h);
        }
        for mon in self.mons {
            let json = self.json_of(mon.as_ref());
            if let Some(s) = mon.section(self.m, json, top) {
                page.report(&report::Report { sections: vec![s] });
                continue;
            }
            page.heading(&format!("Monitor: {}", mon.name()));
            page.preformatted(&mon.text(self.m, json, top));
            if let Ok(svg) = mon.svg(self.m, json) {
                page.svg(&format!("{}: plot", mon.name()), &svg);
            }
        }
        page.finish()
    }
}

/// An output directory (`--csv DIR`, `--svg DIR`) is checked before any simulation (issue
/// 17: a bad one was found after the run, its results lost): it is a directory, or does not
/// exist yet and its parent does, in which case the report creates it (one level, as
/// `mkdir` would; a mistyped parent is refused rather than silently created).
pub(crate) fn check_output_dir(flag: &str, dir: &std::path::Path) -> Result<(), Failure> {
    if dir.is_dir() {
        return Ok(());
    }
    if dir.exists() {
        return Err(Failure::input(format!(
            "{flag} {}: exists and is not a directory; give a directory (it is created if its parent exists)",
            dir.display()
        )));
    }
    let parent = match dir.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !parent.is_dir() {
        return Err(Failure::input(format!(
            "{flag} {}: directory `{}` does not exist (create it first: `mkdir -p {}`)",
            dir.display(),
            parent.display(),
            parent.display()
        )));
    }
    Ok(())
}

/// An output file's (`--svg FILE.svg`) directory must exist, before any simulation.
fn check_output_file(flag: &str, file: &std::path::Path) -> Result<(), Failure> {
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        return Err(Failure::input(format!(
            "{flag} {}: directory `{}` does not exist (create it first: `mkdir -p {}`)",
            file.display(),
            dir.display(),
            dir.display()
        )));
    }
    Ok(())
}

/// `--html FILE` is checked before any simulation: its directory must exist, and it must not
/// be the trace being replayed (an input is never overwritten).
/// The machine a run's flags ask for (seed, ground truth, split by phase); a preset the
/// machine refuses is bad input.
pub(crate) fn new_machine(preset: machine::Preset, a: &RunArgs) -> Result<Machine, Failure> {
    Machine::new(
        preset,
        Options {
            seed: a.machine.seed,
            ground_truth: !a.no_ground_truth,
            phase_split: a.by_phase,
            ..Options::default()
        },
    )
    .map_err(|e| Failure::input(e.0))
}

fn check_html_path(a: &RunArgs) -> Result<(), Failure> {
    let Some(path) = &a.html else { return Ok(()) };
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    if !dir.is_dir() {
        return Err(Failure::input(format!(
            "--html {}: directory `{}` does not exist (create it first)",
            path.display(),
            dir.display()
        )));
    }
    if let Some(input) = a.workload.strip_prefix("trace:") {
        if crate::trace::same_file(path, std::path::Path::new(input)) {
            return Err(Failure::input(format!(
                "--html {}: that is the trace being replayed; choose another file",
                path.display()
            )));
        }
    }
    Ok(())
}

/// Misses (read + write) of the `top` data structures with the most, per processor.
fn structure_heatmap(doc: &serde_json::Value, top: usize) -> Option<report::render::html::HeatMap> {
    let gt = &doc["ground_truth"];
    let names: Vec<String> = gt["data_structures"]
        .as_array()?
        .iter()
        .take(top)
        .filter_map(|s| s["name"].as_str().map(String::from))
        .collect();
    let procs = doc["machine"]["procs"].as_u64()? as usize;
    if names.is_empty() || procs == 0 {
        return None;
    }
    let mut values = vec![vec![0u64; procs]; names.len()];
    for c in gt["structure_x_processor"].as_array()? {
        let (Some(s), Some(p)) = (c["structure"].as_str(), c["processor"].as_u64()) else {
            continue;
        };
        if let (Some(r), true) = (names.iter().position(|n| n == s), (p as usize) < procs) {
            values[r][p as usize] +=
                c["read_misses"].as_u64().unwrap_or(0) + c["write_misses"].as_u64().unwrap_or(0);
        }
    }
    Some(report::render::html::HeatMap {
        title: "Misses by data structure (rows) and processor (columns)".into(),
        what: "read + write misses, count".into(),
        rows: names,
        cols: (0..procs).map(|p| p.to_string()).collect(),
        values,
    })
}

/// Exit code 1, with a message, when the workload's result is wrong.
fn wrong(verified: bool, detail: &str) -> u8 {
    if !verified {
        eprintln!("pmusim: the workload's result is wrong: {detail}");
        return 1;
    }
    0
}

/// `pmusim run --record [--save FILE] -- PROGRAM ARGS`: records the program with the QEMU
/// tracer into FILE (or a temporary file) and simulates it while it runs (`crate::fused`).
fn record_and_run(a: &RunArgs, preset: machine::Preset, mons: Monitors) -> Result<u8, Failure> {
    crate::fused::record_and_run(a, preset, mons)
}

/// Writes the replay's per-function events in Cachegrind's format (`--cachegrind-out`).
fn write_cachegrind(
    out: &std::path::Path,
    r: &workload::trace::replay::TraceReplay,
    profile: &workload::trace::cachegrind::Profile,
    caches: &machine::config::CachesCfg,
) -> Result<(), Failure> {
    use workload::trace::cachegrind;
    // The final header (a fused replay started with an earlier one): the libraries'
    // mappings name their functions.
    let header = r.final_header();
    let mut namer = cachegrind::Namer::new(&header, r.program.as_deref());
    let cmd = std::iter::once(r.header.program.as_str())
        .chain(r.header.args.iter().map(String::as_str))
        .collect::<Vec<_>>()
        .join(" ");
    // The last level: the private L2, else the shared one (`cmp`), else the L1 D.
    let ll = caches
        .l2
        .as_ref()
        .or(caches.shared.first().map(|s| &s.cache))
        .unwrap_or(&caches.l1d);
    let text = cachegrind::render(
        profile,
        &mut namer,
        [("I1", &caches.l1i), ("D1", &caches.l1d), ("LL", ll)],
        &cmd,
    );
    std::fs::write(out, text)
        .map_err(|e| Failure::input(format!("--cachegrind-out {}: {e}", out.display())))
}

/// `pmusim run trace:FILE`: replays a trace, one traced thread per processor.
pub(crate) fn run_trace(
    a: &RunArgs,
    preset: machine::Preset,
    path: &str,
    mons: Monitors,
) -> Result<u8, Failure> {
    use workload::trace::replay;
    let place = replay::ThreadPlacement::parse(&a.place).map_err(Failure::input)?;
    let r = replay::open(std::path::Path::new(path), a.bins.as_deref(), place)
        .map_err(|e| Failure::input(e.to_string()))?;
    let done = replay_trace(a, preset, path, r, mons, &mut |_| Ok(()))?;
    Ok(done.expect("a file replay runs to its end"))
}

/// Simulates an opened trace and reports it; `None` when a fused replay gave up (a second
/// thread: `crate::fused` replays the finished file instead).
pub(crate) fn replay_trace(
    a: &RunArgs,
    preset: machine::Preset,
    path: &str,
    r: workload::trace::replay::TraceReplay,
    mut mons: Monitors,
    after: &mut dyn FnMut(&workload::trace::replay::TraceReplay) -> Result<(), Failure>,
) -> Result<Option<u8>, Failure> {
    use workload::trace::replay;
    for w in &r.warnings {
        eprintln!("pmusim: warning: {path}: {w}");
    }
    if a.no_decode_thread {
        r.set_decode_ahead(false);
    }
    if let Some(out) = &a.cachegrind_out {
        if !r.header.code_records {
            return Err(Failure::input(format!(
                "--cachegrind-out {}: trace `{path}` has no code records (instruction fetch); \
                 record it again with the QEMU tracer (`pmusim trace record --tracer qemu`)",
                out.display()
            )));
        }
        r.set_profile(true);
    }
    let caches = preset.caches.clone();
    let mut m = new_machine(preset, a)?;
    let start = Instant::now();
    let r = replay::install(r, &mut m).map_err(Failure::input)?;
    for mon in &mut mons {
        mon.attach(&mut m)?;
    }
    let sim = crate::live::simulate(a, &mut m, &mut mons);
    // A fused replay: the rest of the recording, its final header and record count.
    after(&r)?;
    r.name_procedures(m.state_mut());
    let threads = r.threads();
    // A corrupt record is bad input, whatever the simulation made of the shortened stream.
    if let Some(e) = r.read_error() {
        return Err(Failure::input(format!(
            "the trace could not be read to its end: {e}"
        )));
    }
    // A replay stuck because threads waited for processors: say how many are needed.
    let (sum, stop) = sim.map_err(|mut f| {
        if let Some(h) = r.short_of_processors() {
            f.msg = format!("{}: {h}", f.msg);
        }
        f
    })?;
    if sum.references == 0 {
        // Nothing was simulated: a report of zeros would say "verified" about nothing.
        return Err(Failure::input(format!(
            "trace `{path}` holds no memory references: there is nothing to simulate"
        )));
    }
    let wall = start.elapsed().as_secs_f64();
    if let (Some(out), Some(profile)) = (&a.cachegrind_out, r.profile()) {
        write_cachegrind(out, &r, &profile, &caches)?;
    }
    let v = verify_unless_stopped(|| r.verify(), stop, &sum);
    let wl = json!({
        "name": format!("trace:{path}"),
        "size": null,
        "threads": threads,
        "tracer": r.header.tracer,
        "program": r.header.program,
        "thread_ids": r.tids(),
        "processors": r.processors(),
        "verified": v.verified,
        "detail": v.detail,
    });
    finish(a, &m, &mons, &sum, stop, wl, wall, v.verified, &v.detail).map(Some)
}
