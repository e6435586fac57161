//! `pmusim sweep collect DIR [-o FILE] [--format csv|json|text|parquet] [--svg DIR --x AXIS]`: one row
//! per planned run (its axis values and the metrics read from its result) as a typed table of
//! the report crate, rendered by its CSV, JSON or text renderer; the runs that are missing or
//! failed in a second table (and on standard error, with their logs); a plot of each metric
//! against one axis, one line per combination of the other axes.
//!
//! The table depends only on the manifest and the results, never on the order in which the
//! runs finished or how many ran at once.

use super::run::{failed_path, manifest, result_path, Planned};
use super::CollectArgs;
use crate::Failure;
use report::model::{
    Axis as PAxis, Cell, Clock, Column, Plot, PlotData, Report, Section, Series, Table, Unit,
};
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::path::Path;

/// A JSON pointer into a run's document, where a `*` segment sums the numbers found under
/// every element of an array (or every value of an object): `/ground_truth/processors/*/l2/misses`
/// is the machine's L2 misses.
pub fn lookup(doc: &Json, pointer: &str) -> Option<Json> {
    match pointer.split_once("/*") {
        None => doc.pointer(pointer).cloned(),
        Some((head, rest)) => {
            let parts: Vec<&Json> = match doc.pointer(head)? {
                Json::Array(a) => a.iter().collect(),
                Json::Object(o) => o.values().collect(),
                _ => return None,
            };
            let vals: Vec<Json> = parts.iter().filter_map(|p| lookup(p, rest)).collect();
            if vals.iter().all(|v| v.is_u64()) {
                Some(json!(vals.iter().map(|v| v.as_u64().unwrap()).sum::<u64>()))
            } else {
                let f: Option<f64> = vals.iter().map(|v| v.as_f64()).sum();
                f.map(|x| json!(x))
            }
        }
    }
}

/// A metric's column: its unit when the sweep file gave one.
fn metric_column(name: &str, unit: Option<&str>) -> Column {
    match unit {
        None => Column::label(name),
        Some("count") => Column::count(name),
        Some("bytes") => Column::bytes(name),
        Some("cycles") => Column::cycles(name, Clock::Processor, 0),
        Some("percent") => Column::percent(name),
        Some(per) => Column::ratio(name, per, 3),
    }
}

/// A JSON value as a table cell (numbers stay numbers).
fn cell(v: &Json) -> Cell {
    match v {
        Json::Null => Cell::Empty,
        Json::String(s) => Cell::Text(s.clone()),
        Json::Number(n) => match n.as_u64() {
            Some(u) => Cell::Int(u),
            None => n.as_f64().map_or(Cell::Empty, Cell::Float),
        },
        x => Cell::Text(x.to_string()),
    }
}

/// What a run left: its document, or why there is none.
enum Status {
    Ok(Json),
    Failed(String),
    Missing,
}

fn status(dir: &Path, e: &Planned) -> Status {
    let rp = result_path(dir, &e.hash);
    if let Some(d) = std::fs::read_to_string(&rp)
        .ok()
        .and_then(|t| serde_json::from_str::<Json>(&t).ok())
    {
        return Status::Ok(d);
    }
    let fp = failed_path(dir, &e.hash);
    match std::fs::read_to_string(&fp) {
        Ok(log) => Status::Failed(format!(
            "{} ({})",
            fp.display(),
            log.lines().next().unwrap_or("")
        )),
        Err(_) => Status::Missing,
    }
}

/// The collected tables: `sweep` (every run) and `not_ok` (missing and failed runs).
pub struct Collected {
    pub table: Table,
    pub not_ok: Table,
    /// Metrics a result lacks (a wrong pointer, usually).
    pub absent: Vec<String>,
    /// The given axes, the metrics (name, unit).
    pub axes: Vec<String>,
    pub metrics: Vec<(String, Option<String>)>,
}

pub fn tables(dir: &Path) -> Result<Collected, Failure> {
    let entries = manifest(dir)?;
    let pp = dir.join("plan.json");
    let plan: Json = std::fs::read_to_string(&pp)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or_else(|| Failure::input(format!("cannot read {}", pp.display())))?;
    let axes: Vec<String> = plan["axes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    let metrics: Vec<(String, String, Option<String>)> = plan["metrics"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| {
            Some((
                m["name"].as_str()?.to_string(),
                m["path"].as_str()?.to_string(),
                m["unit"].as_str().map(str::to_string),
            ))
        })
        .collect();
    let mut cols = vec![Column::label("index"), Column::label("hash")];
    cols.extend(axes.iter().map(|a| Column::label(a)));
    cols.push(Column::label("status"));
    cols.extend(
        metrics
            .iter()
            .map(|(n, _, u)| metric_column(n, u.as_deref())),
    );
    let mut t = Table::new("sweep", "Sweep: one row per planned run", cols);
    let mut not_ok = Table::new(
        "not_ok",
        "Runs without a result",
        vec![
            Column::label("index"),
            Column::label("hash"),
            Column::label("status"),
            Column::label("log"),
        ],
    );
    let mut absent = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let st = status(dir, e);
        let mut row: Vec<Cell> = vec![Cell::Int(i as u64), e.hash.as_str().into()];
        row.extend(
            axes.iter()
                .map(|a| cell(e.axes.get(a).unwrap_or(&Json::Null))),
        );
        row.push(
            match &st {
                Status::Ok(_) => "ok",
                Status::Failed(_) => "failed",
                Status::Missing => "missing",
            }
            .into(),
        );
        for (n, p, _) in &metrics {
            row.push(match &st {
                Status::Ok(d) => lookup(d, p).map_or_else(
                    || {
                        absent.push(format!("entry {i}: metric `{n}`: {p} is not in the result"));
                        Cell::Empty
                    },
                    |v| cell(&v),
                ),
                _ => Cell::Empty,
            });
        }
        t.row(row);
        match st {
            Status::Ok(_) => {}
            Status::Failed(log) => not_ok.row(vec![
                Cell::Int(i as u64),
                e.hash.as_str().into(),
                "failed".into(),
                log.into(),
            ]),
            Status::Missing => not_ok.row(vec![
                Cell::Int(i as u64),
                e.hash.as_str().into(),
                "missing".into(),
                Cell::Empty,
            ]),
        }
    }
    let ok = entries.len() - not_ok.rows.len();
    t.set_note(format!(
        "{} runs: {ok} ok, {} missing or failed",
        entries.len(),
        not_ok.rows.len()
    ));
    Ok(Collected {
        table: t,
        not_ok,
        absent,
        axes,
        metrics: metrics.into_iter().map(|(n, _, u)| (n, u)).collect(),
    })
}

/// One plot per metric against the numeric axis `x`: a line per combination of the other axes
/// (runs without the metric left out).
pub fn plots(c: &Collected, x: &str) -> Result<Vec<Plot>, Failure> {
    let xi = c.axes.iter().position(|a| a == x).ok_or_else(|| {
        Failure::input(format!(
            "--x {x}: not an axis of this sweep (its axes: {})",
            c.axes.join(", ")
        ))
    })?;
    let col = |k: usize| 2 + k; // index, hash, then the axes
    let num = |cell: &Cell| match cell {
        Cell::Int(v) => Some(*v as f64),
        Cell::Float(v) => Some(*v),
        _ => None,
    };
    if c.table.rows.iter().any(|r| num(&r[col(xi)]).is_none()) {
        return Err(Failure::input(format!(
            "--x {x}: the axis has values that are not numbers: plot against a numeric axis"
        )));
    }
    let mut out = Vec::new();
    for (m, (name, unit)) in c.metrics.iter().enumerate() {
        let mc = col(c.axes.len()) + 1 + m;
        let mut lines: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for r in &c.table.rows {
            let Some(y) = num(&r[mc]) else { continue };
            let label: Vec<String> = (0..c.axes.len())
                .filter(|&k| k != xi)
                .map(|k| format!("{}={}", c.axes[k], text(&r[col(k)])))
                .collect();
            let label = if label.is_empty() {
                name.clone()
            } else {
                label.join(", ")
            };
            lines
                .entry(label)
                .or_default()
                .push((num(&r[col(xi)]).unwrap(), y));
        }
        let series = lines
            .into_iter()
            .map(|(name, mut points)| {
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                Series { name, points }
            })
            .collect();
        let y_unit = match metric_column(name, unit.as_deref()).unit() {
            Some(u) => u.clone(),
            None => Unit::Count,
        };
        out.push(Plot {
            id: name.clone(),
            title: format!("{name} against {x}"),
            x: PAxis::new(x, Unit::Count),
            y: PAxis::new(name, y_unit),
            data: PlotData::Series { series },
        });
    }
    Ok(out)
}

fn text(c: &Cell) -> String {
    match c {
        Cell::Text(s) => s.clone(),
        Cell::Int(v) => v.to_string(),
        Cell::Float(v) => v.to_string(),
        _ => String::new(),
    }
}

/// The table as Parquet (`--format parquet`), which needs `-o FILE` (a binary file, not a
/// terminal's text) and a build with the `parquet` feature.
fn parquet_bytes(t: &report::model::Table, to_file: bool) -> Result<Vec<u8>, Failure> {
    if !to_file {
        return Err(Failure::input(
            "--format parquet writes a binary file: add -o FILE.parquet",
        ));
    }
    #[cfg(feature = "parquet")]
    {
        super::parquet::table(t).map_err(|e| Failure::input(format!("parquet: {e}")))
    }
    #[cfg(not(feature = "parquet"))]
    {
        let _ = t;
        Err(Failure::input(
            "--format parquet: this pmusim was built without Parquet; build it with \
             `cargo build --release --features parquet` (or use --format csv)",
        ))
    }
}

pub fn collect(a: CollectArgs) -> Result<u8, Failure> {
    let dir = &a.dir;
    let c = tables(dir)?;
    let out: Vec<u8> = match a.format.as_str() {
        "parquet" => parquet_bytes(&c.table, a.out.is_some())?,
        "csv" => report::render::csv::table(&c.table).into_bytes(),
        "json" | "text" => {
            let mut s = Section::new("Sweep");
            s.table(c.table.clone());
            if !c.not_ok.rows.is_empty() {
                s.table(c.not_ok.clone());
            }
            let r = Report { sections: vec![s] };
            if a.format == "json" {
                // The typed report (report::render::json's document) under its schema name.
                let mut v = serde_json::to_value(&r).expect("the report model serializes");
                let mut doc = serde_json::Map::new();
                doc.insert("schema".into(), json!(crate::cli::schema("sweep-table")));
                doc.append(v.as_object_mut().expect("a report is an object"));
                (serde_json::to_string_pretty(&doc).unwrap() + "\n").into_bytes()
            } else {
                report::render::text::render(&r).into_bytes()
            }
        }
        f => {
            return Err(Failure::input(format!(
                "--format {f}: give csv, json, text or parquet"
            )))
        }
    };
    let plots = match (&a.svg, &a.x) {
        (Some(_), Some(x)) => plots(&c, x)?,
        (Some(_), None) => {
            return Err(Failure::input(
                "--svg DIR plots each metric against an axis: add --x AXIS",
            ))
        }
        (None, Some(_)) => return Err(Failure::input("--x AXIS needs --svg DIR")),
        (None, None) => Vec::new(),
    };
    match &a.out {
        Some(p) => super::plan::write_atomic(p, &out)
            .map_err(|e| Failure::input(format!("cannot write {}: {e}", p.display())))?,
        None => {
            use std::io::Write as _;
            let _ = std::io::stdout().write_all(&out);
        }
    }
    if let Some(d) = &a.svg {
        std::fs::create_dir_all(d)
            .map_err(|e| Failure::input(format!("--svg {}: {e}", d.display())))?;
        for p in &plots {
            let f = d.join(format!("{}.svg", p.id));
            std::fs::write(&f, report::render::svg::plot(p))
                .map_err(|e| Failure::input(format!("cannot write {}: {e}", f.display())))?;
        }
        eprintln!("pmusim: wrote {} plots to {}", plots.len(), d.display());
    }
    for m in c.absent.iter().take(10) {
        eprintln!("pmusim: warning: {m}");
    }
    let n = c.table.rows.len();
    let failed = c
        .not_ok
        .rows
        .iter()
        .filter(|r| r[2] == "failed".into())
        .count();
    eprintln!(
        "sweep collect: {n} runs: {} ok, {} missing, {failed} failed",
        n - c.not_ok.rows.len(),
        c.not_ok.rows.len() - failed,
    );
    for r in &c.not_ok.rows {
        match &r[3] {
            Cell::Text(log) => eprintln!("  failed: entry {} ({log})", text(&r[0])),
            _ => eprintln!("  missing: entry {} ({})", text(&r[0]), text(&r[1])),
        }
    }
    Ok(0)
}
