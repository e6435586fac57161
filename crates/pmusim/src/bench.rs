//! `pmusim bench`: simulated references per second of host time on fixed cases.

use crate::cli::{load_preset, BenchArgs};
use crate::Failure;
use machine::{Machine, Options};
use serde_json::json;
use std::time::Instant;
use workload::Size;

struct Case {
    name: &'static str,
    machine: &'static str,
    procs: usize,
    workload: &'static str,
    size: Size,
    what: &'static str,
}

const CASES: &[Case] = &[
    Case {
        name: "uni-hit",
        machine: "numachine",
        procs: 4,
        workload: "hits",
        size: Size::Small,
        what: "1 thread, L1-resident loop (>95% L1 hits)",
    },
    Case {
        name: "trace-hit",
        machine: "numachine",
        procs: 4,
        workload: "trace",
        size: Size::Small,
        what: "1 traced thread, synthetic native trace of an L1-resident loop, decoded ahead on a 2nd host thread",
    },
    Case {
        name: "trace-hit-1t",
        machine: "numachine",
        procs: 4,
        workload: "trace",
        size: Size::Small,
        what: "the same, decoded on the simulation's host thread",
    },
    Case {
        name: "numa16-fft",
        machine: "numachine",
        procs: 16,
        workload: "fft",
        size: Size::Small,
        what: "16-processor numachine, SPLASH-2 FFT 64K points",
    },
    Case {
        name: "numa16-share",
        machine: "numachine",
        procs: 16,
        workload: "false-sharing",
        size: Size::Small,
        what: "16-processor numachine, every counter access a coherence miss",
    },
];

struct Measure {
    refs: u64,
    cycles: u64,
    secs: f64,
    miss_rate: f64,
}

fn once(c: &Case, gt: bool) -> Result<Measure, Failure> {
    let preset = load_preset(c.machine)
        .and_then(|p| p.with_procs(c.procs))
        .map_err(|e| Failure::input(e.0))?;
    let mut m = Machine::new(
        preset,
        Options {
            ground_truth: gt,
            ..Options::default()
        },
    )
    .map_err(|e| Failure::input(e.0))?;
    let (s, secs, v) = if c.workload == "trace" {
        // The trace is made before the clock starts; the time covers what `pmusim run
        // trace:FILE` does after reading the file: splitting it by thread, the pre-scan,
        // decompression, decoding and the simulation.
        let bytes = trace_hit_bytes();
        let start = Instant::now();
        let r = workload::trace::replay::from_bytes(
            "trace-hit",
            bytes,
            None,
            workload::trace::replay::ThreadPlacement::Pack,
        )
        .map_err(|e| Failure::input(e.to_string()))?;
        r.set_decode_ahead(!c.name.ends_with("-1t"));
        let r = workload::trace::replay::install(r, &mut m).map_err(Failure::input)?;
        let s = m.run(None).map_err(|e| Failure::sim(e.to_string()))?;
        let secs = start.elapsed().as_secs_f64();
        (s, secs, workload::Workload::verify(&*r))
    } else {
        let w = workload::find(c.workload, c.size).map_err(Failure::input)?;
        let threads = if c.name == "uni-hit" { Some(1) } else { None };
        let start = Instant::now();
        let w = workload::install(w, &mut m, threads).map_err(Failure::input)?;
        let s = m.run(None).map_err(|e| Failure::sim(e.to_string()))?;
        let secs = start.elapsed().as_secs_f64();
        (s, secs, w.verify())
    };
    if !v.verified {
        return Err(Failure::sim(format!("bench case {}: {}", c.name, v.detail)));
    }
    let st = m.state();
    let (hits, misses) = st.cores.iter().fold((0, 0), |a, c| {
        (a.0 + c.cnt.l1d_hits, a.1 + c.cnt.l1d_misses)
    });
    Ok(Measure {
        refs: s.references,
        cycles: s.cycles,
        secs,
        miss_rate: misses as f64 / (hits + misses).max(1) as f64,
    })
}

/// References of the `trace-hit` case.
const TRACE_HIT_REFS: u64 = 10_000_000;

/// The synthetic trace of the `trace-hit` case, made once per process.
fn trace_hit_bytes() -> &'static [u8] {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| workload::trace::synthetic::hit_loop(TRACE_HIT_REFS))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

pub fn run(a: BenchArgs) -> Result<u8, Failure> {
    if let Some(f) = &a.case {
        if !CASES.iter().any(|c| c.name.contains(f.as_str())) {
            return Err(Failure::input(format!(
                "--case `{f}` matches no bench case; the cases are {}",
                CASES.iter().map(|c| c.name).collect::<Vec<_>>().join(", ")
            )));
        }
    }
    let mut rows = Vec::new();
    if !a.json {
        println!(
            "{:<14} {:>12} {:>14} {:>9} {:>12} {:>12} {:>8}  case",
            "case", "references", "sim cycles", "L1D miss", "Mrefs/s GT", "Mrefs/s noGT", "GT cost"
        );
    }
    for c in CASES
        .iter()
        .filter(|c| a.case.as_ref().is_none_or(|f| c.name.contains(f.as_str())))
    {
        let mut with = Vec::new();
        let mut without = Vec::new();
        let mut last = None;
        for _ in 0..a.repeat.max(1) {
            let m = once(c, true)?;
            with.push(m.refs as f64 / m.secs);
            let n = once(c, false)?;
            without.push(n.refs as f64 / n.secs);
            last = Some(m);
        }
        let m = last.unwrap();
        let (w, wo) = (median(with), median(without));
        let cost = (wo / w - 1.0) * 100.0;
        if a.json {
            rows.push(json!({"case": c.name, "machine": c.machine, "procs": c.procs, "workload": c.workload,
                "references": m.refs, "simulated_cycles": m.cycles, "l1d_miss_rate": m.miss_rate,
                "refs_per_second_ground_truth": w, "refs_per_second_no_ground_truth": wo, "ground_truth_cost_percent": cost}));
        } else {
            println!(
                "{:<14} {:>12} {:>14} {:>8.2}% {:>12.2} {:>12.2} {:>7.1}%  {}",
                c.name,
                m.refs,
                m.cycles,
                100.0 * m.miss_rate,
                w / 1e6,
                wo / 1e6,
                cost,
                c.what
            );
        }
    }
    if a.json {
        crate::cli::print_json("bench", "cases", rows);
    }
    Ok(0)
}
