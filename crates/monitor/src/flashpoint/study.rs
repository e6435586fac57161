//! `pmusim study flashpoint`: seed 004's accuracy and perturbation study (section 3.2).
//!
//! The study is a sweep (issue 18): FFT, LU, OCEAN and RADIX on the `flash` preset under DP,
//! FP-NoProc and FP-Proc (FFT also at further processor counts for Table 5), each an
//! independent `pmusim run --json` ([`sweep`] writes the sweep file), run on the local pool or
//! a scheduler's job array, then a table step ([`tables`]) that prints our Tables 1-5 with the
//! paper's numbers beside ours (`paper.toml` in this folder, compiled in). Each simulation is
//! single-threaded and deterministic, so the tables depend neither on the pool nor its order.
//!
//! What a run hands the table step is its JSON document with `--study-data`
//! (`monitors.flashpoint.study`, [`run_data`]): raw integer counts and sums, so that the table
//! step computes every figure exactly as a run in the same process would (JSON carries
//! integers exactly; floating-point values could lose their last bit in parsing).
//!
//! - The **DP run's ground truth is the control** (the seed's "idealized control run");
//!   FP columns are what FlashPoint's records say in the FP runs.
//! - Latencies are in 10 ns system cycles. The ground truth measures from the processor's
//!   issue to the fill; FlashPoint's counter stops when the reply reaches the processor bus,
//!   one system cycle earlier (`machine::flash::flashpoint`).
//! - Execution time is the whole simulated run in system cycles: every thread runs the
//!   kernel's parallel section (the kernels' first-touch initialization is inside it);
//!   the setup allocations are not part of it.
//! - Errors are relative: (FP - DP) / DP.

use crate::plugin::{Error, StudyArgs, StudyRun, SweepStudy};
use machine::flash::flashpoint::{FlashProtocol, Record};
use machine::flash::handlers::Handler;
use machine::memsys::System;
use machine::state::State;
use machine::truth::MissStats;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::OnceLock;

/// The study's default processor counts: all four kernels at 16, FFT also at 64 (Table 5).
pub const DEFAULT_PROCS: [usize; 2] = [16, 64];
/// The study's default kernels.
pub const DEFAULT_KERNELS: [&str; 4] = ["fft", "lu", "ocean", "radix"];

/// Rows of [DP, FP-NoProc, FP-Proc], each a triple, by kernel.
type Triples = BTreeMap<String, [[f64; 3]; 3]>;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReadWrite {
    read: Triples,
    write: Triples,
}

#[derive(Deserialize)]
struct Table3 {
    metrics: Vec<String>,
    /// Per data bin, [DP run, FP run] per metric.
    #[serde(flatten)]
    bins: BTreeMap<String, Vec<[f64; 2]>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Fft64 {
    metric: String,
    values: [f64; 3],
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table5 {
    time: BTreeMap<String, [f64; 3]>,
    fft64: Vec<Fft64>,
}

/// The paper's numbers (seed 004, 3.2): `paper.toml` beside this file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Paper {
    table1: ReadWrite,
    table2: ReadWrite,
    table3: Table3,
    table4: BTreeMap<String, [[f64; 2]; 4]>,
    table5: Table5,
}

fn paper() -> &'static Paper {
    static P: OnceLock<Paper> = OnceLock::new();
    P.get_or_init(|| {
        toml::from_str(include_str!("paper.toml")).expect("flashpoint/paper.toml is valid")
    })
}

/// Counts and latency sums (system cycles) in one shape for truth and FlashPoint.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    rl: f64,
    rr: f64,
    wl: f64,
    wr: f64,
    rll: f64,
    rlr: f64,
    wll: f64,
    wlr: f64,
    cold: f64,
    inval: f64,
}

/// A run's counts as integers, in [`Counts`]' field order: the ground truth's or FlashPoint's,
/// with the latency sums in processor cycles (truth) or system cycles (records).
type Raw = [u64; 10];

fn raw_truth(s: &MissStats) -> Raw {
    [
        s.read_local,
        s.read_remote,
        s.write_local,
        s.write_remote,
        s.read_lat_local,
        s.read_lat_remote,
        s.write_lat_local,
        s.write_lat_remote,
        s.global_cold,
        s.coherence,
    ]
}

fn raw_record(r: &Record) -> Raw {
    [
        r.rd_miss_local,
        r.rd_miss_remote,
        r.wr_miss_local,
        r.wr_miss_remote,
        r.rd_lat_local,
        r.rd_lat_remote,
        r.wr_lat_local,
        r.wr_lat_remote,
        r.cold,
        r.inval_misses,
    ]
}

impl Counts {
    /// The counts, with the latency sums divided by `div` (the truth's processor cycles per
    /// system cycle; 1 for FlashPoint's records, already in system cycles).
    fn from_raw(r: &Raw, div: f64) -> Counts {
        Counts {
            rl: r[0] as f64,
            rr: r[1] as f64,
            wl: r[2] as f64,
            wr: r[3] as f64,
            rll: r[4] as f64 / div,
            rlr: r[5] as f64 / div,
            wll: r[6] as f64 / div,
            wlr: r[7] as f64 / div,
            cold: r[8] as f64,
            inval: r[9] as f64,
        }
    }
    fn add(&mut self, o: &Counts) {
        self.rl += o.rl;
        self.rr += o.rr;
        self.wl += o.wl;
        self.wr += o.wr;
        self.rll += o.rll;
        self.rlr += o.rlr;
        self.wll += o.wll;
        self.wlr += o.wlr;
        self.cold += o.cold;
        self.inval += o.inval;
    }
    fn reads(&self) -> [f64; 3] {
        [self.rl + self.rr, self.rl, self.rr]
    }
    fn writes(&self) -> [f64; 3] {
        [self.wl + self.wr, self.wl, self.wr]
    }
    fn read_lat(&self) -> [f64; 3] {
        [
            div(self.rll + self.rlr, self.rl + self.rr),
            div(self.rll, self.rl),
            div(self.rlr, self.rr),
        ]
    }
    fn write_lat(&self) -> [f64; 3] {
        [
            div(self.wll + self.wlr, self.wl + self.wr),
            div(self.wll, self.wl),
            div(self.wlr, self.wr),
        ]
    }
    /// Table 3's ten metrics.
    fn metrics(&self) -> [f64; 10] {
        [
            self.rl, self.rll, self.rr, self.rlr, self.wl, self.wll, self.wr, self.wlr, self.cold,
            self.inval,
        ]
    }
}

fn div(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        0.0
    } else {
        a / b
    }
}

/// Misses to lines no bin was assigned to (code, synchronization variables, unnamed memory):
/// FlashPoint's bin 0. The DP control's structures that FlashPoint did not bin are merged
/// into it for Table 3.
const UNBINNED: &str = "(unbinned)";

/// One simulation's results, as the table step rebuilds them from its JSON document.
#[derive(Clone, Debug)]
struct Outcome {
    kernel: String,
    procs: usize,
    proto: FlashProtocol,
    /// Run time in system cycles.
    time: f64,
    verified: bool,
    wall: f64,
    /// The measurement: ground truth under DP, FlashPoint's records under FP.
    total: Counts,
    /// Ground truth of this run (also for FP runs, to separate perturbation from error).
    truth: Counts,
    by_struct: BTreeMap<String, Counts>,
    /// (latency, occupancy) averages of PILocalGet and NILocalGet, system cycles.
    handlers: [(f64, f64); 2],
}

/// The data of one run the table step needs (`pmusim run --study-data`, in the JSON document
/// as `monitors.flashpoint.study`): the system and processor clock periods, the ground
/// truth's totals, the counts per data structure (the ground truth's under DP, each in the
/// truth's own order, since its latency sums are divided before they are added; FlashPoint's
/// records, summed per bin name, under FP) and the two handlers' (runs, latency sum,
/// occupancy sum). `None` without ground truth.
pub fn run_data(st: &State) -> Option<Value> {
    let gt = st.truth.as_ref()?;
    let fp = match &st.system {
        System::Flash(s) => s.flashpoint(),
        _ => None,
    };
    let by_struct: Vec<Value> = match fp {
        None => gt
            .per_struct
            .iter()
            .map(|(id, s)| {
                let name = if (*id as usize) < st.map.regions().len() {
                    st.map.name_of(*id).to_string()
                } else {
                    "(unnamed)".into()
                };
                json!([name, raw_truth(s)])
            })
            .collect(),
        Some(fp) => {
            // Integers: their sum is exact in any order (and in f64 below 2^53).
            let mut by: BTreeMap<String, Raw> = BTreeMap::new();
            for n in 0..fp.nodes() {
                for (&(_, b), r) in fp.records(n) {
                    let e = by.entry(fp.record_name(b, &st.map)).or_default();
                    for (x, y) in e.iter_mut().zip(raw_record(r)) {
                        *x += y;
                    }
                }
            }
            by.into_iter().map(|(n, r)| json!([n, r])).collect()
        }
    };
    let h = |x: Handler| {
        gt.handlers
            .get(&(x as u16))
            .map(|s| json!([s.runs, s.latency_sum, s.occupancy_sum]))
    };
    Some(json!({
        "sys_period": st.sys_period,
        "cpu_period": st.cpu_period,
        "source": if fp.is_some() { "flashpoint" } else { "truth" },
        "truth": raw_truth(&gt.total()),
        "by_struct": by_struct,
        "handlers": {"PILocalGet": h(Handler::PILocalGet), "NILocalGet": h(Handler::NILocalGet)},
    }))
}

/// Rebuilds a run's [`Outcome`] from its sweep axes and its `--json --study-data` document.
fn outcome_of(r: &StudyRun) -> Result<Outcome, String> {
    let axis = |k: &str| {
        r.axes
            .get(k)
            .ok_or_else(|| format!("the run has no `{k}` axis"))
    };
    let kernel = axis("workload")?
        .as_str()
        .ok_or("workload: not a name")?
        .to_string();
    let procs = axis("procs")?.as_u64().ok_or("procs: not a number")? as usize;
    let proto = FlashProtocol::parse(axis("protocol")?.as_str().ok_or("protocol: not a name")?)?;
    let d = &r.doc["monitors"]["flashpoint"]["study"];
    if !d.is_object() {
        return Err(format!(
            "{kernel} at {procs} processors under {}: the result has no monitors.flashpoint.study (run with --study-data and ground truth)",
            proto.name()
        ));
    }
    let bad = |what: &str| format!("{kernel} {procs}P {}: {what}", proto.name());
    let int = |v: &Value, what: &str| v.as_u64().ok_or_else(|| bad(what));
    let raw = |v: &Value| -> Result<Raw, String> {
        let a = v
            .as_array()
            .filter(|a| a.len() == 10)
            .ok_or_else(|| bad("counts"))?;
        let mut r = Raw::default();
        for (x, y) in r.iter_mut().zip(a) {
            *x = int(y, "counts")?;
        }
        Ok(r)
    };
    let sys = int(&d["sys_period"], "sys_period")?;
    let cpu = int(&d["cpu_period"], "cpu_period")?;
    let ratio = (sys / cpu) as f64;
    let truth = Counts::from_raw(&raw(&d["truth"])?, ratio);
    let from_truth = d["source"] == "truth";
    let lat_div = if from_truth { ratio } else { 1.0 };
    let mut by_struct: BTreeMap<String, Counts> = BTreeMap::new();
    let mut t = Counts::default();
    for e in d["by_struct"].as_array().ok_or_else(|| bad("by_struct"))? {
        let name = e[0].as_str().ok_or_else(|| bad("by_struct name"))?;
        let c = Counts::from_raw(&raw(&e[1])?, lat_div);
        by_struct.entry(name.to_string()).or_default().add(&c);
        t.add(&c);
    }
    let total = if from_truth { truth } else { t };
    let h = |x: &str| -> Result<(f64, f64), String> {
        let v = &d["handlers"][x];
        if v.is_null() {
            return Ok((0.0, 0.0));
        }
        let (runs, lat, occ) = (int(&v[0], x)?, int(&v[1], x)?, int(&v[2], x)?);
        let dd = runs as f64 * sys as f64;
        Ok((div(lat as f64, dd), div(occ as f64, dd)))
    };
    let ticks = int(&r.doc["run"]["simulated_ticks"], "run.simulated_ticks")?;
    Ok(Outcome {
        kernel: kernel.clone(),
        procs,
        proto,
        time: ticks as f64 / sys as f64,
        verified: r.doc["workload"]["verified"].as_bool() == Some(true),
        wall: r.doc["run"]["wall_seconds"].as_f64().unwrap_or(0.0),
        total,
        truth,
        by_struct,
        handlers: [h("PILocalGet")?, h("NILocalGet")?],
    })
}

fn err(fp: f64, dp: f64) -> String {
    if dp == 0.0 {
        if fp == 0.0 {
            "0%".into()
        } else {
            "n/a".into()
        }
    } else {
        format!("{:+.0}%", 100.0 * (fp - dp) / dp)
    }
}
fn k3(v: [f64; 3], scale: f64) -> String {
    v.iter()
        .map(|x| fmt_num(x / scale))
        .collect::<Vec<_>>()
        .join(" / ")
}
fn fmt_num(x: f64) -> String {
    if x == 0.0 {
        "0".into()
    } else if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}
fn e3(fp: [f64; 3], dp: [f64; 3]) -> String {
    (0..3)
        .map(|i| err(fp[i], dp[i]))
        .collect::<Vec<_>>()
        .join(" / ")
}
fn paper3(t: &Triples, k: &str, i: usize) -> String {
    t.get(k).map_or("-".into(), |x| k3(x[i], 1.0))
}

/// The study's arguments with its defaults filled in, checked before anything runs.
#[derive(Clone)]
struct Prepared {
    a: StudyArgs,
    fence: bool,
    size: workload::Size,
    /// The preset the runs use (`--study-machine`; default `flash`).
    machine: String,
}

fn prepare(a: &StudyArgs) -> Result<Prepared, Error> {
    let mut fence = true;
    let mut machine = "flash".to_string();
    for (f, v) in &a.flags {
        match f.as_str() {
            "no-fence" => fence = false,
            "study-machine" => machine = v.clone().unwrap_or_default(),
            f => {
                return Err(Error::input(format!(
                "--{f}: not a flag of `study flashpoint` (its flags: --no-fence, --study-machine)"
            )))
            }
        }
    }
    // A FLASH preset (a built-in name or a preset file), checked before any simulation.
    let preset = machine::Preset::load(&machine)
        .map_err(|e| Error::input(format!("--study-machine: {e}")))?;
    if preset.flash.is_none() {
        return Err(Error::input(format!(
            "--study-machine {machine}: not a FLASH preset (flash, flash-r10k, or a file with a [flash] section)"
        )));
    }
    // The sweep reads a file relative to its own folder: give it the file's absolute path.
    if machine::Preset::is_file_name(&machine) {
        machine = std::fs::canonicalize(&machine)
            .map_err(|e| Error::input(format!("--study-machine {machine}: {e}")))?
            .to_string_lossy()
            .into_owned();
    }
    let mut a = a.clone();
    if a.procs.is_empty() {
        a.procs = DEFAULT_PROCS.to_vec();
    }
    if a.kernels.is_empty() {
        a.kernels = DEFAULT_KERNELS.iter().map(|k| k.to_string()).collect();
    }
    // Before any simulation (issue 17: `--kernels fft,nosuch` was found after the FFT runs).
    if let Some(k) = a
        .kernels
        .iter()
        .find(|k| !DEFAULT_KERNELS.contains(&k.as_str()))
    {
        return Err(Error::input(format!(
            "--kernels: unknown kernel `{k}`; the study runs {}",
            DEFAULT_KERNELS.join(", ")
        )));
    }
    // (A sweep's axis takes each value once.)
    for (i, p) in a.procs.iter().enumerate() {
        if a.procs[..i].contains(p) {
            return Err(Error::input(format!("--procs: {p} is given twice")));
        }
    }
    for (i, k) in a.kernels.iter().enumerate() {
        if a.kernels[..i].contains(k) {
            return Err(Error::input(format!("--kernels: {k} is given twice")));
        }
    }
    let size = workload::Size::parse(&a.size).map_err(Error::input)?;
    if a.jobs == 0 {
        return Err(Error::input("--procs and --jobs must not be empty or 0"));
    }
    Ok(Prepared {
        a,
        fence,
        size,
        machine,
    })
}

/// The metrics `pmusim sweep collect` tabulates for the study's sweep (the study's own tables
/// come from the table step).
const METRICS: &str = r#"
[metrics]
simulated_cycles = { path = "/run/simulated_cycles", unit = "cycles" }
references = { path = "/run/references", unit = "count" }
read_misses = { path = "/ground_truth/totals/read_misses", unit = "count" }
write_misses = { path = "/ground_truth/totals/write_misses", unit = "count" }
l2_misses = { path = "/ground_truth/processors/*/l2/misses", unit = "count" }
verified = "/workload/verified"
"#;

/// The study's runs as a sweep file: every kernel at the first processor count, FFT also at
/// the others, each under the three protocols, with `--study-data`.
fn sweep_file(p: &Prepared) -> String {
    let a = &p.a;
    let list = |v: Vec<String>| v.join(", ");
    let mut t = format!(
        "# `pmusim study flashpoint` (seed 004, Tables 1-5) as a sweep: {} on {} FLASH processors{}, each under DP, FP-NoProc and FP-Proc.\n\
         # Written by the study; its table step reads the runs' monitors.flashpoint.study.\n\n\
         [axes]\nmachine = [{}]\nworkload = [{}]\nsize = [\"{}\"]\nprocs = [{}]\nseed = [{}]\nprotocol = [{}]\n\n\
         [axes.flags]\nstudy-data = true\n",
        a.kernels.join(", "),
        a.procs[0],
        if a.procs.len() > 1 {
            format!(
                ", FFT also on {}",
                list(a.procs[1..].iter().map(|p| p.to_string()).collect())
            )
        } else {
            String::new()
        },
        toml::Value::String(p.machine.clone()),
        list(a.kernels.iter().map(|k| format!("\"{k}\"")).collect()),
        p.size.name(),
        list(a.procs.iter().map(|p| p.to_string()).collect()),
        a.seed,
        list(
            FlashProtocol::ALL
                .iter()
                .map(|x| format!("\"{}\"", x.name()))
                .collect()
        ),
    );
    if !p.fence {
        t += "no-fence = true\n";
    }
    for &n in &a.procs[1..] {
        for k in a.kernels.iter().filter(|k| *k != "fft") {
            write!(t, "\n[[exclude]]\nworkload = \"{k}\"\nprocs = {n}\n").unwrap();
        }
    }
    t + METRICS
}

/// `pmusim study flashpoint` as a sweep: its file and its table step.
pub fn sweep(a: &StudyArgs) -> Result<SweepStudy, Error> {
    let p = prepare(a)?;
    Ok(SweepStudy {
        sweep: sweep_file(&p),
        tables: Box::new(move |runs, wall, jobs| tables(&p, runs, wall, jobs)),
    })
}

/// The table step: the study's (standard output, exit code) from its runs' results.
fn tables(p: &Prepared, runs: &[StudyRun], wall: f64, jobs: usize) -> Result<(String, u8), Error> {
    let (a, fence, size) = (&p.a, p.fence, p.size);
    let mut stdout = String::new();
    let mut res: BTreeMap<(String, usize, &'static str), Outcome> = BTreeMap::new();
    for r in runs {
        let o = outcome_of(r).map_err(Error::sim)?;
        res.insert((o.kernel.clone(), o.procs, o.proto.name()), o);
    }
    let n_jobs = runs.len();
    let p0 = a.procs[0];
    let get = |k: &str, p: usize, proto: FlashProtocol| res.get(&(k.to_string(), p, proto.name()));
    let tables = build_tables(a, p0, &get);
    if a.json {
        let runs: Vec<Value> = res
            .values()
            .map(|o| {
                json!({
                    "kernel": o.kernel, "procs": o.procs, "protocol": o.proto.name(),
                    "time_system_cycles": o.time, "verified": o.verified, "wall_seconds": o.wall,
                    "reads": o.total.reads(), "writes": o.total.writes(),
                    "read_latency": o.total.read_lat(), "write_latency": o.total.write_lat(),
                    "truth_reads": o.truth.reads(), "truth_writes": o.truth.writes(),
                    "pilocalget": o.handlers[0], "nilocalget": o.handlers[1],
                })
            })
            .collect();
        let doc = json!({"schema": "pmusim.study-flashpoint/1", "size": size.name(), "procs": a.procs, "fence": fence, "wall_seconds": wall, "runs": runs, "tables": tables.iter().map(|(t, s)| json!({"title": t, "text": s})).collect::<Vec<_>>()});
        // The machine when it is not the default (the default's document is as before).
        let mut doc = doc;
        if p.machine != "flash" {
            doc["machine"] = json!(p.machine);
        }
        writeln!(stdout, "{}", serde_json::to_string_pretty(&doc).unwrap()).unwrap();
    } else {
        for (t, s) in &tables {
            writeln!(stdout, "{t}\n{s}").unwrap();
        }
        writeln!(
            stdout,
            "study wall time: {wall:.1} s for {n_jobs} simulations on {jobs} host threads ({} size; FP-Proc fence {}{})",
            size.name(),
            if fence { "on" } else { "off" },
            if p.machine == "flash" {
                String::new()
            } else {
                format!("; machine {}", p.machine)
            }
        )
        .unwrap();
    }
    let bad: Vec<String> = res
        .values()
        .filter(|o| !o.verified)
        .map(|o| format!("{} {} {}", o.kernel, o.procs, o.proto.name()))
        .collect();
    if !bad.is_empty() {
        eprintln!("pmusim: wrong kernel results: {}", bad.join(", "));
        return Ok((stdout, 1));
    }
    Ok((stdout, 0))
}

type Get<'a> = dyn Fn(&str, usize, FlashProtocol) -> Option<&'a Outcome> + 'a;

/// The five tables as (title, text).
fn build_tables<'a>(a: &StudyArgs, p0: usize, get: &Get<'a>) -> Vec<(String, String)> {
    use FlashProtocol::*;
    let mut out = Vec::new();
    let head = [
        "app",
        "DP",
        "FP-NoProc",
        "error",
        "FP-Proc",
        "error",
        "paper DP",
        "paper FP-NoProc",
        "paper FP-Proc",
    ];
    // Tables 1 and 2.
    for (title, f, paper, scale) in [
        (
            "Read miss counts (x10^3, total / local / remote)",
            Counts::reads as fn(&Counts) -> [f64; 3],
            &paper().table1.read,
            1000.0,
        ),
        (
            "Write miss counts (x10^3)",
            Counts::writes,
            &paper().table1.write,
            1000.0,
        ),
        (
            "Read latency (system cycles, average / local / remote)",
            Counts::read_lat,
            &paper().table2.read,
            1.0,
        ),
        (
            "Write latency (system cycles)",
            Counts::write_lat,
            &paper().table2.write,
            1.0,
        ),
    ] {
        let mut rows = Vec::new();
        for k in &a.kernels {
            let (Some(dp), Some(np), Some(pr)) =
                (get(k, p0, Dp), get(k, p0, FpNoProc), get(k, p0, FpProc))
            else {
                continue;
            };
            let (d, n, p) = (f(&dp.total), f(&np.total), f(&pr.total));
            rows.push(vec![
                k.to_uppercase(),
                k3(d, scale),
                k3(n, scale),
                e3(n, d),
                k3(p, scale),
                e3(p, d),
                paper3(paper, k, 0),
                paper3(paper, k, 1),
                paper3(paper, k, 2),
            ]);
        }
        let tno = if scale > 1.0 { 1 } else { 2 };
        out.push((
            format!("Table {tno} ({p0} processors): {title}"),
            render_table(&head, &rows),
        ));
    }
    // Table 3.
    if let (Some(dp), Some(fp)) = (get("fft", p0, Dp), get("fft", p0, FpProc)) {
        let tot = |o: &Outcome| {
            let mut t = Counts::default();
            for c in o.by_struct.values() {
                t.add(c);
            }
            t.metrics()
        };
        let (td, tf) = (tot(dp), tot(fp));
        // The control's structures FlashPoint did not bin count as unbinned.
        let mut dps: BTreeMap<String, Counts> = BTreeMap::new();
        for (n, c) in &dp.by_struct {
            let k = if fp.by_struct.contains_key(n) {
                n.clone()
            } else {
                UNBINNED.into()
            };
            dps.entry(k).or_default().add(c);
        }
        let mut ranked: Vec<(&String, f64)> = fp
            .by_struct
            .iter()
            .filter(|(n, _)| n.as_str() != UNBINNED)
            .map(|(n, c)| (n, c.reads()[0] + c.writes()[0]))
            .collect();
        ranked.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(y.0)));
        let all: f64 = tf[0] + tf[2] + tf[4] + tf[6];
        let mut rows = Vec::new();
        let mut share = 0.0;
        for (rank, (name, m)) in ranked.iter().take(2).enumerate() {
            share += m;
            rows.push(vec![
                format!("#{} bin: {name}", rank + 1),
                String::new(),
                String::new(),
                String::new(),
                String::new(),
            ]);
            let d = dps.get(*name).copied().unwrap_or_default().metrics();
            let f = fp.by_struct[*name].metrics();
            let t3 = &paper().table3;
            let paper = t3.bins.get(name.as_str());
            for (i, metric) in t3.metrics.iter().enumerate() {
                let (pd, pf) = (100.0 * div(d[i], td[i]), 100.0 * div(f[i], tf[i]));
                rows.push(vec![
                    format!("  {metric}"),
                    format!("{pd:.0}%"),
                    format!("{pf:.0}%"),
                    err(pf, pd),
                    paper.map_or("-".into(), |p| format!("{:.0}% / {:.0}%", p[i][0], p[i][1])),
                ]);
            }
        }
        out.push((
            format!(
                "Table 3 (FFT, {p0} processors): per-data-structure proportions, DP ground truth vs FP-Proc records; the two top data bins hold {:.0}% of the misses (paper: trans and x, 84%)",
                100.0 * div(share, all)
            ),
            render_table(&["metric", "DP run", "FP run", "error", "paper DP / FP"], &rows),
        ));
    }
    // Table 4.
    let mut rows = Vec::new();
    for k in &a.kernels {
        let (Some(dp), Some(pr)) = (get(k, p0, Dp), get(k, p0, FpProc)) else {
            continue;
        };
        let lo = |x: (f64, f64)| format!("{:.0}/{:.0}", x.0, x.1);
        let ov = |f: (f64, f64), d: (f64, f64)| format!("{}/{}", err(f.0, d.0), err(f.1, d.1));
        let paper = paper().table4.get(k.as_str());
        rows.push(vec![
            k.to_uppercase(),
            lo(dp.handlers[0]),
            lo(pr.handlers[0]),
            ov(pr.handlers[0], dp.handlers[0]),
            lo(dp.handlers[1]),
            lo(pr.handlers[1]),
            ov(pr.handlers[1], dp.handlers[1]),
            paper.map_or("-".into(), |p| {
                let q = |i: usize| lo((p[i][0], p[i][1]));
                format!("{}->{} {}->{}", q(0), q(1), q(2), q(3))
            }),
        ]);
    }
    out.push((
        format!(
            "Table 4 ({p0} processors): handler latency/occupancy (system cycles), DP vs FP-Proc"
        ),
        render_table(
            &[
                "app",
                "PILocalGet DP",
                "FP-Proc",
                "overhead",
                "NILocalGet DP",
                "FP-Proc",
                "overhead",
                "paper PILocalGet / NILocalGet",
            ],
            &rows,
        ),
    ));
    // Figure 5 / Table 5: execution time.
    let mut rows = Vec::new();
    for &p in &a.procs {
        for k in &a.kernels {
            let (Some(dp), Some(np), Some(pr)) =
                (get(k, p, Dp), get(k, p, FpNoProc), get(k, p, FpProc))
            else {
                continue;
            };
            let paper = if k == "fft" {
                paper()
                    .table5
                    .time
                    .get(&p.to_string())
                    .map_or("-".into(), |x| format!("{} / {} / {}", x[0], x[1], x[2]))
            } else {
                "-".into()
            };
            rows.push(vec![
                format!("{} {p}P", k.to_uppercase()),
                format!("{:.3}", dp.time / 1e6),
                format!("{:.3}", np.time / 1e6),
                err(np.time, dp.time),
                format!("{:.3}", pr.time / 1e6),
                err(pr.time, dp.time),
                paper,
            ]);
        }
    }
    out.push((
        "Figure 5 / Table 5: parallel execution time (10^6 system cycles) and overhead".into(),
        render_table(
            &[
                "app",
                "DP",
                "FP-NoProc",
                "overhead",
                "FP-Proc",
                "overhead",
                "paper (FFT)",
            ],
            &rows,
        ),
    ));
    // Table 5: FFT at each processor count.
    let mut rows = Vec::new();
    for &p in &a.procs {
        let (Some(dp), Some(np), Some(pr)) = (
            get("fft", p, Dp),
            get("fft", p, FpNoProc),
            get("fft", p, FpProc),
        ) else {
            continue;
        };
        let m = |o: &Outcome| {
            [
                o.total.reads()[0] / 1e3,
                o.total.read_lat()[0],
                o.total.writes()[0] / 1e3,
                o.total.write_lat()[0],
            ]
        };
        let (d, n, r) = (m(dp), m(np), m(pr));
        for i in 0..4 {
            let paper_cell = match p {
                16 => {
                    let pp = paper();
                    let t = [
                        &pp.table1.read,
                        &pp.table2.read,
                        &pp.table1.write,
                        &pp.table2.write,
                    ][i]["fft"]
                        .map(|x| x[0]);
                    format!("{} / {} / {}", t[0], t[1], t[2])
                }
                64 => {
                    let t = paper().table5.fft64[i].values;
                    format!("{} / {} / {}", t[0], t[1], t[2])
                }
                _ => "-".into(),
            };
            rows.push(vec![
                format!("FFT {p}P {}", paper().table5.fft64[i].metric),
                fmt_num(d[i]),
                fmt_num(n[i]),
                err(n[i], d[i]),
                fmt_num(r[i]),
                err(r[i], d[i]),
                paper_cell,
            ]);
        }
    }
    out.push((
        "Table 5: scaling FFT".into(),
        render_table(
            &[
                "metric",
                "DP",
                "FP-NoProc",
                "error",
                "FP-Proc",
                "error",
                "paper DP / NoProc / Proc",
            ],
            &rows,
        ),
    ));
    out
}

/// A plain aligned table (first column left, the rest right): the study's tables, which mix
/// the paper's figures with ours in text cells. Not yet on the typed model (`report::model`).
pub fn render_table(head: &[&str], rows: &[Vec<String>]) -> String {
    let n = head.len();
    let mut w = vec![0; n];
    let head: Vec<String> = head.iter().map(|s| s.to_string()).collect();
    for r in std::iter::once(&head).chain(rows.iter()) {
        for (i, c) in r.iter().enumerate().take(n) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for (k, r) in std::iter::once(&head).chain(rows.iter()).enumerate() {
        let mut line = String::new();
        for (i, wi) in w.iter().enumerate() {
            let c = r.get(i).map(String::as_str).unwrap_or("");
            let pad = " ".repeat(wi - c.chars().count());
            if i == 0 {
                line += c;
                line += &pad;
            } else {
                line += "  ";
                line += &pad;
                line += c;
            }
        }
        out += line.trim_end();
        out.push('\n');
        if k == 0 {
            out += &"-".repeat(w.iter().sum::<usize>() + 2 * (n.saturating_sub(1)));
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use machine::{Machine, Options, Preset};

    /// One of the study's runs in this process, handed to the table step as the sweep would
    /// hand it: its axes and a document with `monitors.flashpoint.study`.
    fn simulate(kernel: &str, procs: usize, proto: FlashProtocol) -> Outcome {
        let mut p = Preset::builtin("flash").unwrap().with_procs(procs).unwrap();
        p.flash.as_mut().unwrap().protocol = proto;
        let mut m = Machine::new(
            p,
            Options {
                seed: 1,
                ..Options::default()
            },
        )
        .unwrap();
        let w = workload::find(kernel, workload::Size::Test).unwrap();
        let w = workload::install(w, &mut m, None).unwrap();
        let sum = m.run(None).unwrap();
        let doc = json!({
            "run": {"simulated_ticks": sum.ticks, "wall_seconds": 0.0},
            "workload": {"verified": w.verify().verified},
            "monitors": {"flashpoint": {"study": run_data(m.state()).unwrap()}},
        });
        let axes = json!({"workload": kernel, "procs": procs, "protocol": proto.name()});
        outcome_of(&StudyRun {
            axes: axes.as_object().unwrap().clone(),
            doc,
        })
        .unwrap()
    }

    /// The generated sweep file: every kernel at the first count, FFT alone at the others,
    /// under the three protocols; `--no-fence` as a flag of every run.
    #[test]
    fn sweep_file_has_the_studys_runs() {
        let a = StudyArgs {
            size: "test".into(),
            jobs: 2,
            seed: 3,
            flags: vec![("no-fence".into(), None)],
            ..StudyArgs::default()
        };
        let t = sweep_file(&prepare(&a).unwrap());
        for l in [
            "workload = [\"fft\", \"lu\", \"ocean\", \"radix\"]",
            "size = [\"test\"]",
            "procs = [16, 64]",
            "seed = [3]",
            "protocol = [\"dp\", \"fp-noproc\", \"fp-proc\"]",
            "study-data = true",
            "no-fence = true",
        ] {
            assert!(t.lines().any(|x| x == l), "{l}\n{t}");
        }
        assert_eq!(t.matches("[[exclude]]").count(), 3, "{t}");
        assert!(t.contains("workload = \"ocean\"\nprocs = 64"), "{t}");
        let one = StudyArgs {
            kernels: vec!["fft".into()],
            procs: vec![4, 4],
            ..a
        };
        assert!(prepare(&one).is_err());
    }

    /// `--study-machine`: the default is `flash`; another FLASH preset goes into the sweep's
    /// machine axis; a machine without FLASH is refused before any run.
    #[test]
    fn study_machine_names_a_flash_preset() {
        let with = |m: Option<&str>| StudyArgs {
            size: "test".into(),
            jobs: 1,
            flags: m
                .map(|m| vec![("study-machine".into(), Some(m.into()))])
                .unwrap_or_default(),
            ..StudyArgs::default()
        };
        let t = sweep_file(&prepare(&with(None)).unwrap());
        assert!(t.lines().any(|x| x == "machine = [\"flash\"]"), "{t}");
        let t = sweep_file(&prepare(&with(Some("flash-r10k"))).unwrap());
        assert!(t.lines().any(|x| x == "machine = [\"flash-r10k\"]"), "{t}");
        let e = prepare(&with(Some("numachine"))).err().unwrap();
        assert!(
            e.code == 2 && e.msg.contains("not a FLASH preset"),
            "{}",
            e.msg
        );
    }

    /// `--study-machine FILE`: a preset file with a `[flash]` section goes into the sweep by
    /// its absolute path (the sweep reads files relative to its own folder); an unreadable
    /// file and a file without FLASH are refused before any run.
    #[test]
    fn study_machine_takes_a_preset_file() {
        let dir = std::env::temp_dir().join(format!("pmusim-fp-study-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let text = |name: &str| {
            machine::config::BUILTIN
                .iter()
                .find(|(n, _)| *n == name)
                .unwrap()
                .1
        };
        let flash = dir.join("my-flash.toml");
        std::fs::write(&flash, text("flash-r10k")).unwrap();
        let other = dir.join("my-numachine.toml");
        std::fs::write(&other, text("numachine")).unwrap();
        let with = |m: &std::path::Path| StudyArgs {
            size: "test".into(),
            jobs: 1,
            flags: vec![(
                "study-machine".into(),
                Some(m.to_string_lossy().into_owned()),
            )],
            ..StudyArgs::default()
        };
        let t = sweep_file(&prepare(&with(&flash)).unwrap());
        let want = format!(
            "machine = [{}]",
            toml::Value::String(
                std::fs::canonicalize(&flash)
                    .unwrap()
                    .to_string_lossy()
                    .into()
            )
        );
        assert!(t.lines().any(|x| x == want), "{want}\n{t}");
        let e = prepare(&with(&other)).err().unwrap();
        assert!(
            e.code == 2 && e.msg.contains("not a FLASH preset"),
            "{}",
            e.msg
        );
        let e = prepare(&with(&dir.join("missing.toml"))).err().unwrap();
        assert!(
            e.code == 2 && e.msg.contains("cannot read machine preset"),
            "{}",
            e.msg
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// `paper.toml` holds seed 004's tables as the paper prints them (spot checks of each).
    #[test]
    fn paper_tables_load() {
        let p = paper();
        assert_eq!(p.table1.read["fft"][0], [215.0, 122.0, 93.0]);
        assert_eq!(p.table1.write["ocean"][2], [629.0, 629.0, 0.307]);
        assert_eq!(p.table2.read["radix"][1], [109.0, 104.0, 226.0]);
        assert_eq!(p.table2.write["lu"][0], [62.0, 31.0, 110.0]);
        assert_eq!(p.table3.metrics.len(), 10);
        assert_eq!(p.table3.metrics[9], "Invalidation Misses");
        for bin in ["trans", "x"] {
            assert_eq!(p.table3.bins[bin].len(), 10, "{bin}");
        }
        assert_eq!(p.table3.bins["trans"][9], [59.0, 59.0]);
        assert_eq!(p.table4["lu"][2], [15.0, 49.0]);
        assert_eq!(p.table5.time["64"], [1.11, 1.17, 1.55]);
        assert_eq!(p.table5.fft64.len(), 4);
        assert_eq!(p.table5.fft64[1].metric, "Read Latency");
        assert_eq!(p.table5.fft64[3].values, [81.0, 126.0, 127.0]);
        for k in DEFAULT_KERNELS {
            assert!(
                p.table1.read.contains_key(k) && p.table4.contains_key(k),
                "{k}"
            );
        }
    }

    /// The study's tables have the seed's shape: Tables 1-5 with the paper's columns, one row
    /// per kernel, FFT's two top bins with ten metrics each.
    #[test]
    fn study_table_shape() {
        let a = StudyArgs {
            procs: vec![4],
            size: "test".into(),
            kernels: vec!["fft".into(), "lu".into()],
            jobs: 2,
            json: false,
            seed: 1,
            flags: Vec::new(),
            ..StudyArgs::default()
        };
        let mut res = BTreeMap::new();
        for k in &a.kernels {
            for proto in FlashProtocol::ALL {
                let o = simulate(k, 4, proto);
                assert!(o.verified);
                res.insert((k.clone(), proto.name()), o);
            }
        }
        let get =
            |k: &str, _p: usize, proto: FlashProtocol| res.get(&(k.to_string(), proto.name()));
        let t = build_tables(&a, 4, &get);
        let titles: Vec<&str> = t.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(t.len(), 8, "{titles:?}");
        assert!(titles[6].starts_with("Figure 5") && titles[7].starts_with("Table 5"));
        assert!(titles[0].starts_with("Table 1") && titles[2].starts_with("Table 2"));
        assert!(titles[4].starts_with("Table 3") && titles[5].starts_with("Table 4"));
        for (title, text) in &t[..4] {
            // header, rule, one row per kernel
            assert_eq!(text.lines().count(), 4, "{title}\n{text}");
            assert!(text.contains("FFT") && text.contains("LU"));
        }
        assert_eq!(t[4].1.lines().count(), 2 + 2 * 11, "{}", t[4].1);
        assert!(t[4].1.contains("Cold Misses") && t[4].1.contains("Invalidation Misses"));
        // DP read counts: FP-NoProc within 3% on FFT's fixed partition.
        let dp = res[&("fft".to_string(), "dp")].total.reads()[0];
        let np = res[&("fft".to_string(), "fp-noproc")].total.reads()[0];
        assert!((np - dp).abs() <= 0.03 * dp, "{np} vs {dp}");
        // Perturbation: LU (test size) FP-NoProc within 10% of DP's time, FP-Proc within 2x.
        let t = |k: &str, p: &'static str| res[&(k.to_string(), p)].time;
        assert!(t("lu", "fp-noproc") <= 1.10 * t("lu", "dp"));
        for k in ["fft", "lu"] {
            assert!(t(k, "fp-proc") <= 2.0 * t(k, "dp"));
            assert!(t(k, "fp-noproc") > t(k, "dp"));
        }
    }
}
