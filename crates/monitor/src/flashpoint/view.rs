//! FlashPoint's view (seed 004, 3.1.3 and Table 3): the per-processor statistics records the
//! protocol kept, indexed by (procedure, bin), turned into familiar names — data structures
//! from the memory map (a bin is a structure, `flashpoint::bin_of`), procedures from
//! `State::procedures` — and ranked by misses and latency.
//!
//! The records are read from the protocol's state at the end of the run (the same values a
//! program gets with uncached loads of the record region; `machine::flash::flashpoint`).
//! Latencies are in 10 ns system cycles, as the seed's Tables 2 and 4.

use machine::flash::flashpoint::{FlashProtocol, FpCounters, Record};
use machine::memsys::System;
use machine::state::State;
use report::model::format;
use report::model::{Axis, Cell, Clock, Column, Kind, Plot, PlotData, Section, Table, Unit};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// One ranked category (a data structure, a procedure, or a pair).
#[derive(Clone, Debug)]
pub struct Row {
    pub name: String,
    pub rec: Record,
}

impl Row {
    pub fn misses(&self) -> u64 {
        self.rec.reads() + self.rec.writes()
    }
    pub fn latency(&self) -> u64 {
        let r = &self.rec;
        r.rd_lat_local + r.rd_lat_remote + r.wr_lat_local + r.wr_lat_remote
    }
}

/// What FlashPoint reports for a run.
#[derive(Clone, Debug)]
pub struct FlashPointView {
    pub protocol: FlashProtocol,
    /// Per data structure (bin), ranked by misses.
    pub by_data: Vec<Row>,
    /// Per procedure, ranked by misses (one row, "(all)", under FP-NoProc).
    pub by_proc: Vec<Row>,
    /// Per (procedure, data structure), ranked by misses.
    pub by_proc_data: Vec<(String, String, Record)>,
    pub total: Record,
    pub counters: FpCounters,
    /// Processors of the run (one per FLASH node).
    pub procs: usize,
    /// The workload and its problem size, when the caller knows them (`pmusim report`).
    pub workload: Option<String>,
    /// The process the view is restricted to (`--monitor-process NAME`: the records of its
    /// array only, `restrict.rs`).
    pub process: Option<String>,
}

fn avg(sum: u64, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        sum as f64 / n as f64
    }
}

impl FlashPointView {
    /// The view of a finished run on a FlashPoint machine (None under DP or another preset).
    pub fn from_state(st: &State) -> Option<FlashPointView> {
        Self::of(st, None)
    }

    /// The view of process `pid`'s record array alone (records kept by process,
    /// `Machine::flashpoint_by_process`; None otherwise, or under DP).
    pub fn of_process(st: &State, pid: u16) -> Option<FlashPointView> {
        let mut v = Self::of(st, Some(pid))?;
        v.process = st
            .os
            .as_ref()
            .and_then(|os| os.processes.get(pid as usize))
            .map(|p| p.name.clone());
        Some(v)
    }

    fn of(st: &State, only: Option<u16>) -> Option<FlashPointView> {
        let System::Flash(s) = &st.system else {
            return None;
        };
        let fp = s.flashpoint()?;
        if only.is_some() && fp.process_span().is_none() {
            return None;
        }
        let bin_name = |b: u16| fp.record_name(b, &st.map);
        let with_proc = fp.protocol == FlashProtocol::FpProc;
        let process_name = |pid: u16| {
            st.os
                .as_ref()
                .and_then(|os| os.processes.get(pid as usize))
                .map_or_else(|| format!("(process {pid})"), |p| p.name.clone())
        };
        // By process, a slot is (process, procedure): a procedure keeps its name when it is
        // the process's own (`fft/Transpose`), else gets the process as a prefix
        // (`radix/main`, `radix/(all)`).
        let proc_name = |slot: u32| {
            let (pid, p) = fp.split_slot(slot);
            let name = if with_proc {
                st.procedures
                    .get(p as usize)
                    .cloned()
                    .unwrap_or_else(|| format!("(procedure {p})"))
            } else {
                "(all)".to_string()
            };
            match pid.map(process_name) {
                Some(pr) if !name.starts_with(&format!("{pr}/")) => format!("{pr}/{name}"),
                _ => name,
            }
        };
        let mut data: BTreeMap<String, Record> = BTreeMap::new();
        let mut procs: BTreeMap<String, Record> = BTreeMap::new();
        let mut pairs: BTreeMap<(String, String), Record> = BTreeMap::new();
        let mut total = Record::default();
        for n in 0..fp.nodes() {
            for (&(p, b), r) in fp.records(n) {
                if only.is_some() && fp.split_slot(p).0 != only {
                    continue;
                }
                // Same-named regions (e.g. per-processor pieces) merge, as in the reports.
                data.entry(bin_name(b)).or_default().add(r);
                procs.entry(proc_name(p)).or_default().add(r);
                pairs.entry((proc_name(p), bin_name(b))).or_default().add(r);
                total.add(r);
            }
        }
        let rank = |m: BTreeMap<String, Record>| {
            let mut v: Vec<Row> = m.into_iter().map(|(name, rec)| Row { name, rec }).collect();
            v.sort_by(|a, b| {
                b.misses()
                    .cmp(&a.misses())
                    .then(b.latency().cmp(&a.latency()))
                    .then(a.name.cmp(&b.name))
            });
            v
        };
        let mut pv: Vec<(String, String, Record)> =
            pairs.into_iter().map(|((p, d), r)| (p, d, r)).collect();
        pv.sort_by(|a, b| {
            (b.2.reads() + b.2.writes())
                .cmp(&(a.2.reads() + a.2.writes()))
                .then((&a.0, &a.1).cmp(&(&b.0, &b.1)))
        });
        Some(FlashPointView {
            protocol: fp.protocol,
            by_data: rank(data),
            by_proc: rank(procs),
            by_proc_data: pv,
            total,
            counters: fp.counters.clone(),
            procs: fp.nodes(),
            workload: None,
            process: None,
        })
    }

    /// The ranking columns: name, misses and their share, misses by kind, mean and summed
    /// latencies (system cycles), cold misses, invalidations, invalidation misses.
    fn columns(first: &str) -> Vec<Column> {
        let sys = |name: &str, decimals| Column::cycles(name, Clock::System, decimals);
        vec![
            Column::label(first),
            Column::count("misses"),
            Column::new("share", Kind::Quantity(Unit::Percent), 1),
            Column::count("rd local"),
            Column::count("rd remote"),
            Column::count("wr local"),
            Column::count("wr remote"),
            sys("rd lat", 1),
            sys("wr lat", 1),
            sys("lat sum", 0),
            Column::count("cold"),
            Column::count("invals"),
            Column::count("inval misses"),
        ]
    }

    fn row_cells(name: &str, r: &Record, total: &Record) -> Vec<Cell> {
        let m = r.reads() + r.writes();
        let lat = r.rd_lat_local + r.rd_lat_remote + r.wr_lat_local + r.wr_lat_remote;
        vec![
            Cell::text(name),
            Cell::Int(m),
            Cell::Float(100.0 * avg(m, total.reads() + total.writes())),
            Cell::Int(r.rd_miss_local),
            Cell::Int(r.rd_miss_remote),
            Cell::Int(r.wr_miss_local),
            Cell::Int(r.wr_miss_remote),
            Cell::Float(avg(r.rd_lat_local + r.rd_lat_remote, r.reads())),
            Cell::Float(avg(r.wr_lat_local + r.wr_lat_remote, r.writes())),
            Cell::Int(lat),
            Cell::Int(r.cold),
            Cell::Int(r.invalidations),
            Cell::Int(r.inval_misses),
        ]
    }

    /// The typed section: a summary line, one ranked table per category in `by` ("data",
    /// "proc", "proc-data"; `top` rows each) with a bar plot of its misses, and the command
    /// counts; with `top == usize::MAX` also every record (`flashpoint_records`).
    pub fn section(&self, by: &[&str], top: usize) -> Section {
        let mut s = Section::new(&format!("FlashPoint ({})", self.protocol.label()));
        s.text(format!(
            "FlashPoint ({}) on {}: {} misses recorded; latencies in 10 ns system cycles (seed 004, Table 3 style)",
            self.protocol.label(),
            self.run_label(),
            format::int(self.total.reads() + self.total.writes())
        ));
        for b in by {
            let (id, title, first, rows): (&str, &str, &str, Vec<(String, &Record)>) = match *b {
                "data" => (
                    "flashpoint_data",
                    "FlashPoint: misses by data structure",
                    "data structure",
                    self.by_data
                        .iter()
                        .map(|r| (r.name.clone(), &r.rec))
                        .collect(),
                ),
                "proc" => (
                    "flashpoint_proc",
                    "FlashPoint: misses by procedure",
                    "procedure",
                    self.by_proc
                        .iter()
                        .map(|r| (r.name.clone(), &r.rec))
                        .collect(),
                ),
                _ => (
                    "flashpoint_proc_data",
                    "FlashPoint: misses by procedure and data structure",
                    "procedure / data structure",
                    self.by_proc_data
                        .iter()
                        .map(|(p, d, r)| (format!("{p} / {d}"), r))
                        .collect(),
                ),
            };
            let mut t = Table::new(id, title, Self::columns(first));
            for (name, r) in rows.iter().take(top) {
                t.row(Self::row_cells(name, r, &self.total));
            }
            if t.rows.len() < rows.len() {
                t.set_note(format!(
                    "the first {} of {} (--top)",
                    t.rows.len(),
                    rows.len()
                ));
            }
            s.plot(Plot {
                id: id.into(),
                title: title.into(),
                x: Axis::new("misses", Unit::Count),
                y: Axis::new(first, Unit::Count),
                data: PlotData::Bars {
                    bars: rows
                        .iter()
                        .take(top.min(20))
                        .map(|(n, r)| (n.clone(), (r.reads() + r.writes()) as f64))
                        .collect(),
                },
            });
            // The latency the same rows spent in misses (the seed's Table 3 ranks by both).
            s.plot(Plot {
                id: format!("{id}_latency"),
                title: title.replace("misses", "miss latency"),
                x: Axis::new("summed miss latency (system cycles)", Unit::Count),
                y: Axis::new(first, Unit::Count),
                data: PlotData::Bars {
                    bars: rows
                        .iter()
                        .take(top.min(20))
                        .map(|(n, r)| {
                            let l =
                                r.rd_lat_local + r.rd_lat_remote + r.wr_lat_local + r.wr_lat_remote;
                            (n.clone(), l as f64)
                        })
                        .collect(),
                },
            });
            s.table(t);
        }
        let c = &self.counters;
        let mut t = Table::new(
            "flashpoint_commands",
            "FlashPoint: commands",
            vec![
                Column::count("bin assignments"),
                Column::count("lines assigned"),
                Column::count("lines binned at setup"),
                Column::count("procedure deltas"),
                Column::count("record reads"),
            ],
        );
        t.row(vec![
            Cell::Int(c.bin_cmds),
            Cell::Int(c.lines_binned),
            Cell::Int(c.setup_lines),
            Cell::Int(c.proc_cmds),
            Cell::Int(c.record_reads),
        ]);
        t.set_note("lines binned at setup are not charged");
        s.table(t);
        if top == usize::MAX {
            s.table(self.records(by));
        }
        s
    }

    /// "16 processors" or "16 processors, fft (test size)".
    pub fn run_label(&self) -> String {
        let p = format!(
            "{} processor{}",
            self.procs,
            if self.procs == 1 { "" } else { "s" }
        );
        let p = match &self.workload {
            Some(w) => format!("{p}, {w}"),
            None => p,
        };
        match &self.process {
            Some(name) => format!("{p}, process {name} alone"),
            None => p,
        }
    }

    /// Every record of the categories in `by` ("data", "proc", "proc-data"): one row per
    /// (category kind, name) with every record field.
    pub fn records(&self, by: &[&str]) -> Table {
        let mut cols = vec![
            Column::label("kind"),
            Column::label("procedure"),
            Column::label("data"),
        ];
        for f in Record::FIELDS {
            cols.push(if f.contains("_lat_") {
                Column::cycles(f, Clock::System, 0)
            } else {
                Column::count(f)
            });
        }
        let mut t = Table::new("flashpoint_records", "FlashPoint: every record", cols);
        let mut line = |kind: &str, p: &str, d: &str, r: &Record| {
            let mut row = vec![Cell::text(kind), Cell::text(p), Cell::text(d)];
            row.extend((0..Record::FIELDS.len()).map(|f| Cell::Int(r.get(f))));
            t.row(row);
        };
        if by.contains(&"data") {
            for r in &self.by_data {
                line("data", "", &r.name, &r.rec);
            }
        }
        if by.contains(&"proc") {
            for r in &self.by_proc {
                line("proc", &r.name, "", &r.rec);
            }
        }
        if by.contains(&"proc-data") {
            for (p, d, r) in &self.by_proc_data {
                line("proc-data", p, d, r);
            }
        }
        t.set_note(format!("{}; latencies in system cycles", self.run_label()));
        t
    }

    fn rec_json(r: &Record) -> Value {
        serde_json::to_value(r).unwrap_or(Value::Null)
    }

    /// The whole view as JSON (every category).
    pub fn json(&self) -> Value {
        self.json_by(&["data", "proc", "proc-data"])
    }

    /// The view as JSON with the categories in `by` only (the others are absent).
    pub fn json_by(&self, by: &[&str]) -> Value {
        let rows = |v: &[Row]| -> Vec<Value> {
            v.iter()
                .map(|r| json!({"name": r.name, "misses": r.misses(), "latency_sum": r.latency(), "record": Self::rec_json(&r.rec)}))
                .collect()
        };
        let mut doc = json!({
            "protocol": self.protocol.name(),
            "procs": self.procs,
            "latency_unit": "system cycles (10 ns)",
            "total": Self::rec_json(&self.total),
            "counters": serde_json::to_value(&self.counters).unwrap_or(Value::Null),
        });
        if let Some(w) = &self.workload {
            doc["workload"] = w.as_str().into();
        }
        if let Some(p) = &self.process {
            doc["process"] = p.as_str().into();
        }
        if by.contains(&"data") {
            doc["by_data"] = rows(&self.by_data).into();
        }
        if by.contains(&"proc") {
            doc["by_proc"] = rows(&self.by_proc).into();
        }
        if by.contains(&"proc-data") {
            doc["by_proc_data"] = self
                .by_proc_data
                .iter()
                .map(|(p, d, r)| json!({"procedure": p, "data": d, "record": Self::rec_json(r)}))
                .collect::<Vec<_>>()
                .into();
        }
        doc
    }
}

/// SVG documents stacked top to bottom in one (`--format svg` shows a category's misses and
/// its latency): each becomes a nested `<svg>` at its offset.
pub fn stack_svg(parts: &[String]) -> String {
    let attr = |s: &str, name: &str| -> u32 {
        let head = &s[..s.find('>').unwrap_or(s.len())];
        head.split(&format!("{name}=\"")[..])
            .nth(1)
            .and_then(|r| r.split('"').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let width = parts.iter().map(|p| attr(p, "width")).max().unwrap_or(0);
    let mut y = 0;
    let mut body = String::new();
    for p in parts {
        body += &p.replacen("<svg ", &format!("<svg y=\"{y}\" "), 1);
        y += attr(p, "height");
    }
    format!(
        "<svg width=\"{width}\" height=\"{y}\" viewBox=\"0 0 {width} {y}\" xmlns=\"http://www.w3.org/2000/svg\">\n{body}</svg>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use machine::flash::flashpoint::FlashProtocol;
    use machine::{Machine, Options, Place, Preset};

    fn run(proto: FlashProtocol) -> Machine {
        let mut p = Preset::builtin("flash").unwrap().with_procs(4).unwrap();
        p.flash.as_mut().unwrap().protocol = proto;
        let mut m = Machine::new(p, Options::default()).unwrap();
        let (big, small, work) = {
            let mut s = m.setup();
            (
                s.alloc("big", 64 * 1024, Place::RoundRobin),
                s.alloc("small", 4096, Place::Node(2)),
                s.procedure("work"),
            )
        };
        for t in 0..4 {
            m.spawn(t, move |ctx| {
                ctx.enter(work);
                for i in (0..64 * 1024).step_by(128) {
                    ctx.load(big + i);
                }
                ctx.leave();
                for i in (0..4096).step_by(128) {
                    ctx.store(small + i);
                }
            });
        }
        m.run(Some(10_000_000)).unwrap();
        m
    }

    #[test]
    fn view_names_and_ranks_structures_and_procedures() {
        assert!(FlashPointView::from_state(run(FlashProtocol::Dp).state()).is_none());
        let m = run(FlashProtocol::FpProc);
        let v = FlashPointView::from_state(m.state()).unwrap();
        assert_eq!(v.by_data[0].name, "big");
        assert_eq!(v.by_data[0].rec.reads(), 4 * 512);
        let small = v.by_data.iter().find(|r| r.name == "small").unwrap();
        assert_eq!(small.rec.writes(), 4 * 32);
        assert_eq!(v.by_proc[0].name, "work");
        let gt = m.state().truth.as_ref().unwrap().total();
        assert_eq!(v.total.reads() + v.total.writes(), gt.misses());
        let s = v.section(&["data", "proc"], 5);
        let t = s.tables().next().unwrap();
        assert_eq!(t.id, "flashpoint_data");
        assert_eq!(t.rows[0][0], Cell::text("big"));
        assert_eq!(t.rows[0][1], Cell::Int(4 * 512));
        // Misses and latency for each of the two categories.
        assert_eq!(s.plots().count(), 4);
        assert_eq!(
            v.records(&["data", "proc", "proc-data"]).rows.len(),
            v.by_data.len() + v.by_proc.len() + v.by_proc_data.len()
        );
        assert_eq!(v.json()["by_data"][0]["name"], "big");
    }

    /// Issue 20's report defects: the report states the processor count (and the workload
    /// when known); CSV and JSON keep only the categories asked for; the plots show latency
    /// beside misses.
    #[test]
    fn report_states_the_run_and_follows_by() {
        let m = run(FlashProtocol::FpProc);
        let mut v = FlashPointView::from_state(m.state()).unwrap();
        assert_eq!(v.procs, 4);
        let s = v.section(&["data"], 5);
        let text = report::render::text::render(&report::Report {
            sections: vec![s.clone()],
        });
        let gt = m.state().truth.as_ref().unwrap().total().misses();
        assert_eq!(gt, 2248, "every miss is recorded");
        assert!(
            text.starts_with("FlashPoint (FP-Proc) on 4 processors: 2,248 misses"),
            "{text}"
        );
        v.workload = Some("fft (test size)".into());
        assert_eq!(v.run_label(), "4 processors, fft (test size)");
        // CSV (every record) and JSON follow --by.
        assert_eq!(v.records(&["proc"]).rows.len(), v.by_proc.len());
        assert_eq!(v.records(&["data"]).rows.len(), v.by_data.len());
        let j = v.json_by(&["data"]);
        assert_eq!(j["procs"], 4);
        assert_eq!(j["workload"], "fft (test size)");
        assert!(j.get("by_proc").is_none() && j.get("by_proc_data").is_none());
        assert_eq!(j["by_data"][0]["misses"], 4 * 512);
        // The second plot of a category is its summed miss latency, row by row.
        let plots: Vec<&Plot> = s.plots().collect();
        assert_eq!(plots[1].id, "flashpoint_data_latency");
        let PlotData::Bars { bars } = &plots[1].data else {
            panic!("bars")
        };
        let big = &v.by_data[0];
        assert_eq!(bars[0], ("big".to_string(), big.latency() as f64));
        // 2,048 remote clean reads on a 2x2 mesh: 65 + 16 * hops system cycles each plus
        // queueing (machine::flash docs); the mean is in that range.
        let mean = big.latency() as f64 / big.misses() as f64;
        assert!((81.0..400.0).contains(&mean), "{mean}");
        let both = stack_svg(&[
            "<svg width=\"720\" height=\"212\" a>x</svg>".into(),
            "<svg width=\"700\" height=\"300\" b>y</svg>".into(),
        ]);
        assert!(both.starts_with("<svg width=\"720\" height=\"512\""));
        assert!(
            both.contains("<svg y=\"0\" width=\"720\"")
                && both.contains("<svg y=\"212\" width=\"700\"")
        );
    }
}
