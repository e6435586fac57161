//! The Addie study's report: the text tables of `pmusim study addie` and the Figure 2/3 plots
//! (the report crate's typed plot, rendered to SVG by its renderer).

use super::attached::AddieProbe;
use super::study::{Dist, Study, Window};
use super::RandomMode;
use report::{Axis, Plot, PlotData, Series, Unit};
use std::fmt::Write as _;

fn pct(x: f64) -> String {
    format!("{:.2}", 100.0 * x)
}

fn opt(x: Option<f64>) -> String {
    x.map_or_else(|| "never".into(), |v| format!("{v:.0}"))
}

fn dist_cells(d: &Dist) -> String {
    format!(
        "{:>4}/{:<4} {:>6} {:>6} {:>7} {:>6} {:>6}",
        d.converged,
        d.runs,
        opt(d.min),
        opt(d.q1),
        opt(d.median),
        opt(d.q3),
        opt(d.max)
    )
}

fn frac(p: f64) -> &'static str {
    if (p - 64.0 / 255.0).abs() < 1e-12 {
        "64/255"
    } else {
        "200/255"
    }
}

/// The text report.
pub fn text(s: &Study) -> String {
    let c = &s.config;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "Addie study (seed 002, Figures 2 and 3): 8-bit Addie from 128 (50 %), reading = counter / 255.\n\
         Convergence: the first sample from which the reading stays within ±{:.0} % of full scale\n\
         (absolute) of the exact probability for {} samples. Inputs: Bernoulli streams from SimRng(seed).",
        100.0 * c.criterion.tol,
        c.criterion.hold
    );
    for (i, (p, rows)) in s.figures.iter().enumerate() {
        let _ = writeln!(
            o,
            "\n(a) Figure {}: p = {} = {} %, seed {}, means over {}-sample windows (reading: at the window's end)",
            i + 2,
            frac(*p),
            pct(*p),
            c.first_seed,
            c.window
        );
        let _ = writeln!(
            o,
            "{:>8} {:>8} | {:>10} {:>10} | {:>10} {:>10}",
            "samples", "input %", "indep out", "reading", "corr out", "reading"
        );
        for w in rows {
            let _ = writeln!(
                o,
                "{:>8} {:>8} | {:>10} {:>10} | {:>10} {:>10}",
                w.end,
                pct(w.input),
                pct(w.output[0]),
                pct(w.reading[0]),
                pct(w.output[1]),
                pct(w.reading[1])
            );
        }
    }
    let _ = writeln!(
        o,
        "\n(b) Samples to converge, 8 bits, seeds {}..={}, runs of {} samples (seed 002: \"about 500 samples\")",
        c.first_seed,
        c.first_seed + c.seeds - 1,
        c.samples
    );
    let _ = writeln!(
        o,
        "{:<8} {:<12} {:<20} {:>9} {:>6} {:>6} {:>7} {:>6} {:>6} {:>9} {:>9}",
        "p",
        "random",
        "measure",
        "converged",
        "min",
        "q1",
        "median",
        "q3",
        "max",
        "tail MAE%",
        "tail in%"
    );
    for cv in &s.convergence {
        for (name, d) in [
            ("stays ±3% 500", &cv.settle),
            ("first within ±3%", &cv.first_entry),
            ("250-avg stays", &cv.settle_smoothed),
        ] {
            let _ = writeln!(
                o,
                "{:<8} {:<12} {:<20} {} {:>9} {:>9}",
                frac(cv.p),
                cv.mode.name(),
                name,
                dist_cells(d),
                pct(cv.tail_mae),
                pct(cv.tail_within)
            );
        }
    }
    let _ = writeln!(
        o,
        "\n(c) By width, seeds {}..={}: median samples to converge, and the reading over the second half of each run\n    (mean, mean absolute error, share within the tolerance) beside the exact probability and the expected reading p*2^n/(2^n-1)",
        c.first_seed,
        c.first_seed + c.width_seeds - 1
    );
    let _ = writeln!(
        o,
        "{:>5} {:<12} {:<8} {:>9} {:>9} {:>10} {:>11} {:>8} {:>10} {:>10} {:>9} {:>9}",
        "bits",
        "random",
        "p",
        "samples",
        "converged",
        "median",
        "first in",
        "exact %",
        "expected %",
        "tail mean%",
        "tail MAE%",
        "tail in%"
    );
    for r in &s.widths {
        let _ = writeln!(
            o,
            "{:>5} {:<12} {:<8} {:>9} {:>4}/{:<4} {:>10} {:>11} {:>8} {:>10} {:>10} {:>9} {:>9}",
            r.width,
            r.mode.name(),
            frac(r.p),
            r.samples,
            r.settle.converged,
            r.settle.runs,
            opt(r.settle.median),
            opt(r.first_entry.median),
            pct(r.p),
            pct(r.expected_reading),
            pct(r.tail_mean),
            pct(r.tail_mae),
            pct(r.tail_within)
        );
    }
    o
}

/// Figures 2 and 3 as plots: the input and the Addie's output stream (window means) and the
/// readings in both random modes, with the exact probability; ids `addie-fig2`, `addie-fig3`.
pub fn plots(s: &Study) -> Vec<Plot> {
    s.figures
        .iter()
        .enumerate()
        .map(|(i, (p, rows))| figure(i + 2, *p, rows, s.config.window))
        .collect()
}

fn figure(fig: usize, p: f64, rows: &[Window], window: u64) -> Plot {
    let pts = |f: &dyn Fn(&Window) -> f64| -> Vec<(f64, f64)> {
        rows.iter().map(|w| (w.end as f64, 100.0 * f(w))).collect()
    };
    let from_half = |mut v: Vec<(f64, f64)>| {
        v.insert(0, (0.0, 50.0));
        v
    };
    let end = rows.last().map_or(0.0, |w| w.end as f64);
    let series = vec![
        Series {
            name: "input (window mean)".into(),
            points: pts(&|w| w.input),
        },
        Series {
            name: "Addie output, independent (window mean)".into(),
            points: pts(&|w| w.output[0]),
        },
        Series {
            name: "Addie reading, independent".into(),
            points: from_half(pts(&|w| w.reading[0])),
        },
        Series {
            name: "Addie reading, correlated".into(),
            points: from_half(pts(&|w| w.reading[1])),
        },
        Series {
            name: "exact".into(),
            points: vec![(0.0, 100.0 * p), (end, 100.0 * p)],
        },
    ];
    Plot {
        id: format!("addie-fig{fig}"),
        title: format!(
            "Figure {fig}: 8-bit Addie on a {} % ({}) stream, {window}-sample windows",
            pct(p),
            frac(p)
        ),
        x: Axis::new("samples", Unit::Count),
        y: Axis::new("probability", Unit::Percent),
        data: PlotData::Series { series },
    }
}

/// The attached Addies' readings, per controller and input: the final reading beside the exact
/// ratio over the whole run, and the tracking error over the readings (|Addie - exact ratio of
/// the same window|, mean and largest), in percent.
pub fn attached_table(p: &AddieProbe) -> report::Table {
    use report::{Cell, Column, Table};
    let mut t = Table::new(
        "addie_readings",
        &format!(
            "Addie readings per memory controller ({}-sample windows)",
            p.window
        ),
        vec![
            Column::label("node"),
            Column::label("input"),
            Column::count("samples"),
            Column::count("readings"),
            Column::estimate("last reading", Unit::Percent, 2),
            Column::percent("run ratio"),
            Column::percent("mean |err|"),
            Column::percent("max |err|"),
        ],
    );
    for (n, chs) in p.nodes.iter().enumerate() {
        for c in chs {
            let (mean, max) = c.tracking_error().unwrap_or((f64::NAN, f64::NAN));
            let opt = |x: f64| {
                if x.is_nan() {
                    Cell::Empty
                } else {
                    Cell::Float(100.0 * x)
                }
            };
            t.row(vec![
                Cell::text(n.to_string()),
                Cell::text(c.input.to_string()),
                Cell::Int(c.samples()),
                Cell::Int(c.readings.len() as u64),
                match c.readings.last() {
                    Some(r) => Cell::estimate(100.0 * r.addie, 100.0 * r.exact_window),
                    None => Cell::Empty,
                },
                c.exact().map_or(Cell::Empty, |e| Cell::Float(100.0 * e)),
                opt(mean),
                opt(max),
            ]);
        }
    }
    t.set_note(
        "last reading: the counter over full scale (read through the debug port, no cost) at the end of the last full window, beside the exact ratio over that window's samples; run ratio: exact over every sample; |err|: the same difference at every reading",
    );
    t
}

/// The attached Addies' typed section: the readings table and, when node 0's Addies took
/// readings, their plot over time.
pub fn attached_section(
    p: &AddieProbe,
    cpu_period: u64,
    width: u32,
    mode: RandomMode,
) -> report::Section {
    let mut s = report::Section::new(&format!(
        "Addie ({width}-bit, {} random numbers, two per memory controller)",
        mode.name()
    ));
    s.table(attached_table(p));
    if p.register_reads > 0 {
        s.text(format!(
            "Register reads by the programs: {} uncached loads at {} processor cycles each (window at {:#x}); the readings above come from the debug port, free to the programs.",
            p.register_reads,
            p.register_cycles,
            super::attached::REGISTER_BASE
        ));
    }
    let plot = attached_plot(p, cpu_period);
    if matches!(&plot.data, PlotData::Series { series } if series.iter().any(|x| !x.points.is_empty()))
    {
        s.plot(plot);
    }
    s
}

/// `monitors.addie` of `--json`: settings, per channel the totals and every reading (time in
/// processor cycles).
pub fn attached_json(
    p: &AddieProbe,
    cpu_period: u64,
    width: u32,
    mode: RandomMode,
) -> serde_json::Value {
    let nodes: Vec<serde_json::Value> = p
        .nodes
        .iter()
        .enumerate()
        .map(|(n, chs)| {
            serde_json::json!({
                "node": n,
                "addies": chs.iter().map(|c| {
                    let (mean, max) = c.tracking_error().map_or((None, None), |(a, b)| (Some(a), Some(b)));
                    serde_json::json!({
                        "input": c.input.to_string(),
                        "samples": c.samples(),
                        "final_reading": c.unit.estimate(),
                        "counter": c.unit.value(),
                        "exact": c.exact(),
                        "tracking_error_mean": mean,
                        "tracking_error_max": max,
                        "readings": c.readings.iter().map(|r| serde_json::json!({
                            "cycle": r.t / cpu_period.max(1), "samples": r.samples,
                            "addie": r.addie, "exact_window": r.exact_window,
                        })).collect::<Vec<_>>(),
                    })
                }).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::json!({
        "width": width,
        "random": mode.name(),
        "window": p.window,
        "registers": {
            "base": super::attached::REGISTER_BASE,
            "bytes_each": super::attached::REGISTER_BYTES,
            "cycles": p.register_cycles,
            "reads": p.register_reads,
        },
        "controllers": nodes,
    })
}

/// Readings over time of node 0's two Addies beside the exact window ratios.
pub fn attached_plot(p: &AddieProbe, cpu_period: u64) -> Plot {
    let mut series = Vec::new();
    if let Some(chs) = p.nodes.first() {
        for c in chs {
            let pts = |f: &dyn Fn(&super::attached::Reading) -> f64| -> Vec<(f64, f64)> {
                c.readings
                    .iter()
                    .map(|r| ((r.t / cpu_period.max(1)) as f64, 100.0 * f(r)))
                    .collect()
            };
            series.push(Series {
                name: format!("{} Addie reading", c.input),
                points: pts(&|r| r.addie),
            });
            series.push(Series {
                name: format!("{} exact (window)", c.input),
                points: pts(&|r| r.exact_window),
            });
        }
    }
    Plot {
        id: "addie-run".into(),
        title: format!(
            "Addies of memory controller 0: readings every {} samples beside the exact window ratio",
            p.window
        ),
        x: Axis::new(
            "time",
            Unit::Cycles {
                clock: report::Clock::Processor,
            },
        ),
        y: Axis::new("probability", Unit::Percent),
        data: PlotData::Series { series },
    }
}
