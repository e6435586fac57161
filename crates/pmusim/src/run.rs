//! `pmusim run`.

use crate::cli::RunArgs;
use crate::Failure;
use machine::{Machine, Options};
use serde_json::json;
use std::time::Instant;
use workload::{Size, Workload};

pub fn run(a: RunArgs) -> Result<u8, Failure> {
    if a.csv.is_some() && a.monitor.is_none() {
        return Err(Failure::input(
            "--csv DIR writes the NUMAchine monitor's tables: add --monitor numachine (or a configuration file)",
        ));
    }
    let preset = crate::flashpoint::apply_protocol(a.machine.preset()?, &a.fp)?;
    let size = Size::parse(&a.size).map_err(Failure::input)?;
    if let Some(path) = a.workload.strip_prefix("trace:") {
        return run_trace(&a, preset, path);
    }
    let w = workload::find(&a.workload, size).map_err(Failure::input)?;
    if let Some(t) = a.threads {
        if t == 0 || t > preset.procs {
            return Err(Failure::input(format!(
                "--threads {t}: must be between 1 and the machine's {} processors",
                preset.procs
            )));
        }
    }
    let mut m = Machine::new(
        preset,
        Options {
            seed: a.machine.seed,
            ground_truth: !a.no_ground_truth,
            ..Options::default()
        },
    )
    .map_err(|e| Failure::input(e.0))?;
    let start = Instant::now();
    let w = workload::install(w, &mut m, a.threads).map_err(Failure::input)?;
    if let Some(spec) = &a.monitor {
        crate::monitors::attach(spec, &mut m)?;
    }
    let sum = m
        .run(a.max_cycles)
        .map_err(|e| Failure::sim(e.to_string()))?;
    let wall = start.elapsed().as_secs_f64();
    let v = w.verify();
    let wl = json!({
        "name": a.workload,
        "size": size.name(),
        "threads": a.threads.unwrap_or(m.state().cores.len()),
        "verified": v.verified,
        "detail": v.detail,
    });
    finish(&a, &m, &sum, wl, wall, v.verified, &v.detail)
}

fn finish(
    a: &RunArgs,
    m: &Machine,
    sum: &machine::RunSummary,
    wl: serde_json::Value,
    wall: f64,
    verified: bool,
    detail: &str,
) -> Result<u8, Failure> {
    let nm = crate::monitors::json(m);
    let mons = if nm.is_null() {
        json!({})
    } else {
        json!({ "numachine": nm })
    };
    let doc = report::run_document(m.state(), sum, wl, mons, wall);
    if a.fp.report.is_some() {
        return crate::flashpoint::report(&a.fp, m, verified, detail);
    }
    if let Some(f) = &a.svg {
        let svg = crate::monitors::svg(&doc["monitors"]["numachine"]).ok_or_else(|| {
            Failure::input("--svg: the monitor configuration records no latency histogram")
        })?;
        std::fs::write(f, svg).map_err(|e| Failure::input(format!("--svg {f}: {e}")))?;
    }
    if let Some(dir) = &a.csv {
        let files =
            crate::monitor_csv::write(m, &doc["monitors"]["numachine"], std::path::Path::new(dir))
                .map_err(Failure::input)?;
        eprintln!("pmusim: wrote {} CSV files to {dir}", files.len());
    }
    if a.json {
        println!("{}", serde_json::to_string_pretty(&doc).unwrap());
    } else {
        print!("{}", report::text::render(&doc, a.top));
        print!(
            "{}",
            crate::monitors::text(m, &doc["monitors"]["numachine"], a.top)
        );
    }
    if !verified {
        eprintln!("pmusim: the workload's result is wrong: {detail}");
        return Ok(1);
    }
    Ok(0)
}

/// `pmusim run trace:FILE`: replays a trace, one traced thread per processor.
fn run_trace(a: &RunArgs, preset: machine::Preset, path: &str) -> Result<u8, Failure> {
    use workload::trace::replay;
    let place = replay::ThreadPlacement::parse(&a.place).map_err(Failure::input)?;
    let r = replay::open(std::path::Path::new(path), a.bins.as_deref(), place)
        .map_err(|e| Failure::input(e.to_string()))?;
    if a.no_decode_thread {
        r.set_decode_ahead(false);
    }
    let threads = r.threads();
    let mut m = Machine::new(
        preset,
        Options {
            seed: a.machine.seed,
            ground_truth: !a.no_ground_truth,
            ..Options::default()
        },
    )
    .map_err(|e| Failure::input(e.0))?;
    let start = Instant::now();
    let r = replay::install(r, &mut m).map_err(Failure::input)?;
    let sum = m.run(a.max_cycles);
    // A corrupt record is bad input, whatever the simulation made of the shortened stream.
    if let Some(e) = r.read_error() {
        return Err(Failure::input(format!(
            "the trace could not be read to its end: {e}"
        )));
    }
    let sum = sum.map_err(|e| Failure::sim(e.to_string()))?;
    let wall = start.elapsed().as_secs_f64();
    let v = r.verify();
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
    finish(a, &m, &sum, wl, wall, v.verified, &v.detail)
}
