//! The closed loop's report: per controller, what the loop read and decided beside the
//! controller's exact counts, and a plot of each controller's watermark over time.

use super::adaptive::{inputs, Adaptive, Loop};
use machine::Machine;
use report::{Axis, Cell, Clock, Column, Plot, PlotData, Section, Series, Table, Unit};
use serde_json::{json, Value};

/// Mean of the Addie readings and the requests-weighted exact ratio over the decisions that
/// saw requests of the input's kind; `None` when none did.
fn averages(l: &Loop, i: usize) -> Option<(f64, f64)> {
    let pick = |d: &super::adaptive::Decision| d.exact[i].map(|e| (d.reading[i], e));
    let v: Vec<(f64, f64)> = l.decisions.iter().filter_map(pick).collect();
    (!v.is_empty()).then(|| {
        let n = v.len() as f64;
        (
            v.iter().map(|x| x.0).sum::<f64>() / n,
            v.iter().map(|x| x.1).sum::<f64>() / n,
        )
    })
}

/// Fraction of the decisions (each one period long) that left read-ahead on.
fn read_ahead_share(l: &Loop) -> Option<f64> {
    let n = l.decisions.len();
    (n > 0).then(|| l.decisions.iter().filter(|d| d.read_ahead).count() as f64 / n as f64)
}

/// The section.
pub fn section(a: &Adaptive, m: &Machine) -> Section {
    let mut s = Section::new("memctl: closed-loop buffer tuning (two Addies per controller)");
    let r = &a.rules;
    s.text(r.describe(m.state().preset.memctl_enabled()));
    let names = inputs(r.rule);
    let ctl = m.state().system.controller_reports();
    let mut t = Table::new(
        "memctl_loop",
        "Per controller: the loop's readings and decisions beside the controller's exact counts",
        vec![
            Column::label("node"),
            Column::count("decisions"),
            Column::count("changes"),
            Column::count("final watermark"),
            Column::label("final read-ahead"),
            Column::percent("read-ahead on"),
            Column::estimate(&format!("{} (Addie 0)", names[0]), Unit::Percent, 2),
            Column::estimate(&format!("{} (Addie 1)", names[1]), Unit::Percent, 2),
            Column::count("writes"),
            Column::count("write hits"),
            Column::count("DRAM writes"),
            Column::count("DRAM reads"),
            Column::count("read-ahead used"),
            Column::count("read-ahead unused"),
        ],
    );
    for (n, l) in a.loops.iter().enumerate() {
        let est = |i: usize| match averages(l, i) {
            Some((addie, exact)) => Cell::estimate(100.0 * addie, 100.0 * exact),
            None => Cell::Empty,
        };
        let c = ctl.get(n);
        let g = |f: fn(&machine::mem::controller::ControllerReport) -> u64| {
            c.map(f).map(Cell::Int).unwrap_or(Cell::Empty)
        };
        t.row(vec![
            Cell::text(n.to_string()),
            Cell::Int(l.decisions.len() as u64),
            Cell::Int(l.changes),
            Cell::Int(c.map(|c| c.watermark as u64).unwrap_or(l.watermark)),
            Cell::text(if c.map(|c| c.read_ahead).unwrap_or(l.read_ahead) {
                "on"
            } else {
                "off"
            }),
            read_ahead_share(l)
                .map(|x| Cell::Float(100.0 * x))
                .unwrap_or(Cell::Empty),
            est(0),
            est(1),
            g(|c| c.buffer.writes),
            g(|c| c.buffer.write_hits),
            g(|c| c.dram.writes),
            g(|c| c.dram.reads),
            g(|c| c.buffer.read_ahead_used),
            g(|c| c.buffer.read_ahead_unused),
        ]);
    }
    t.set_note("Addie columns: the mean of the readings the loop decided on, beside the mean exact ratio over the same periods (periods without a request of the input's kind left out); the controller's counts are its ground truth over the whole run");
    s.table(t);
    let cpu = m.state().cpu_period.max(1) as f64;
    let series = a
        .loops
        .iter()
        .enumerate()
        .map(|(n, l)| Series {
            name: format!("node {n}"),
            points: l
                .decisions
                .iter()
                .map(|d| (d.t as f64 / cpu, d.watermark as f64))
                .collect(),
        })
        .collect();
    s.plot(Plot {
        id: "memctl_watermark".into(),
        title: "Watermark chosen by the loop at each decision".into(),
        x: Axis::new(
            "time",
            Unit::Cycles {
                clock: Clock::Processor,
            },
        ),
        y: Axis::new("watermark", Unit::Count),
        data: PlotData::Series { series },
    });
    s
}

/// `monitors.memctl` in the JSON document.
pub fn json(a: &Adaptive, m: &Machine) -> Value {
    let cpu = m.state().cpu_period.max(1);
    let ctl = m.state().system.controller_reports();
    let loops: Vec<Value> = a
        .loops
        .iter()
        .enumerate()
        .map(|(n, l)| {
            let avg = |i: usize| {
                averages(l, i).map(|(addie, exact)| json!({"addie": addie, "exact": exact}))
            };
            json!({
                "node": n,
                "changes": l.changes,
                "final": ctl.get(n).map(|c| json!({"watermark": c.watermark, "read_ahead": c.read_ahead})),
                "averages": [avg(0), avg(1)],
                "pollution": json!({
                    "reading": l.pollution.estimate(),
                    "hits_gained": l.hits_gained,
                    "hits_lost": l.hits_lost,
                    "shadow_reads": l.shadow_demand.reads,
                    "shadow_hits": l.shadow_demand.hits,
                }),
                "decisions": l.decisions.iter().map(|d| json!({
                    "cycle": d.t / cpu,
                    "reading": d.reading, "exact": d.exact,
                    "watermark": d.watermark, "read_ahead": d.read_ahead,
                })).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "rules": a.rules,
        "inputs": inputs(a.rules.rule),
        "read_ahead_break_even": a.break_even,
        "controllers": loops,
    })
}
