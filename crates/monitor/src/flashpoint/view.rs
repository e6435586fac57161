//! FlashPoint's view (seed 004, 3.1.3 and Table 3): the per-processor statistics records the
//! protocol kept, indexed by (procedure, bin), turned into familiar names — data structures
//! from the memory map (a bin is a structure, `flashpoint::bin_of`), procedures from
//! `State::procedures` — and ranked by misses and latency.
//!
//! The records are read from the protocol's state at the end of the run (the same values a
//! program gets with uncached loads of the record region; `machine::flash::flashpoint`).
//! Latencies are in 10 ns system cycles, as the seed's Tables 2 and 4.

use machine::flash::flashpoint::{struct_of, FlashProtocol, FpCounters, Record};
use machine::memsys::System;
use machine::state::State;
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
        let System::Flash(s) = &st.system else {
            return None;
        };
        let fp = s.flashpoint()?;
        let bin_name = |b: u16| match struct_of(b) {
            None => "(unbinned)".to_string(),
            Some(id) if (id as usize) < st.map.regions().len() => st.map.name_of(id).to_string(),
            Some(id) => format!("(bin {})", id + 1),
        };
        let with_proc = fp.protocol == FlashProtocol::FpProc;
        let proc_name = |p: u32| {
            if with_proc {
                st.procedures
                    .get(p as usize)
                    .cloned()
                    .unwrap_or_else(|| format!("(procedure {p})"))
            } else {
                "(all)".to_string()
            }
        };
        let mut data: BTreeMap<String, Record> = BTreeMap::new();
        let mut procs: BTreeMap<String, Record> = BTreeMap::new();
        let mut pairs: BTreeMap<(String, String), Record> = BTreeMap::new();
        let mut total = Record::default();
        for n in 0..fp.nodes() {
            for (&(p, b), r) in fp.records(n) {
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
        })
    }

    fn row_cells(name: &str, r: &Record, total: &Record) -> Vec<String> {
        let m = r.reads() + r.writes();
        let tm = total.reads() + total.writes();
        let lat = r.rd_lat_local + r.rd_lat_remote + r.wr_lat_local + r.wr_lat_remote;
        vec![
            name.to_string(),
            m.to_string(),
            format!("{:.1}%", 100.0 * avg(m, tm)),
            r.rd_miss_local.to_string(),
            r.rd_miss_remote.to_string(),
            r.wr_miss_local.to_string(),
            r.wr_miss_remote.to_string(),
            format!("{:.1}", avg(r.rd_lat_local + r.rd_lat_remote, r.reads())),
            format!("{:.1}", avg(r.wr_lat_local + r.wr_lat_remote, r.writes())),
            lat.to_string(),
            r.cold.to_string(),
            r.invalidations.to_string(),
            r.inval_misses.to_string(),
        ]
    }
    const HEAD: [&'static str; 13] = [
        "name",
        "misses",
        "share",
        "rd local",
        "rd remote",
        "wr local",
        "wr remote",
        "rd lat",
        "wr lat",
        "lat sum",
        "cold",
        "invals",
        "inval misses",
    ];

    /// Tables of the categories in `by` ("data", "proc", "proc-data"), `top` rows each.
    pub fn text(&self, by: &[&str], top: usize) -> String {
        let mut out = format!(
            "FlashPoint ({}): {} misses recorded; latencies in 10 ns system cycles (seed 004, Table 3 style)\n",
            self.protocol.label(),
            self.total.reads() + self.total.writes()
        );
        for b in by {
            let (title, rows): (&str, Vec<Vec<String>>) = match *b {
                "data" => (
                    "by data structure",
                    self.by_data
                        .iter()
                        .take(top)
                        .map(|r| Self::row_cells(&r.name, &r.rec, &self.total))
                        .collect(),
                ),
                "proc" => (
                    "by procedure",
                    self.by_proc
                        .iter()
                        .take(top)
                        .map(|r| Self::row_cells(&r.name, &r.rec, &self.total))
                        .collect(),
                ),
                _ => (
                    "by procedure and data structure",
                    self.by_proc_data
                        .iter()
                        .take(top)
                        .map(|(p, d, r)| Self::row_cells(&format!("{p} / {d}"), r, &self.total))
                        .collect(),
                ),
            };
            out += &format!("\n{title}\n");
            out += &render_table(&Self::HEAD, &rows);
        }
        let c = &self.counters;
        out += &format!(
            "\ncommands: {} bin assignments ({} lines), {} lines binned at setup (not charged), {} procedure deltas, {} record reads\n",
            c.bin_cmds, c.lines_binned, c.setup_lines, c.proc_cmds, c.record_reads
        );
        out
    }

    fn rec_json(r: &Record) -> Value {
        serde_json::to_value(r).unwrap_or(Value::Null)
    }

    pub fn json(&self) -> Value {
        let rows = |v: &[Row]| -> Vec<Value> {
            v.iter()
                .map(|r| json!({"name": r.name, "misses": r.misses(), "latency_sum": r.latency(), "record": Self::rec_json(&r.rec)}))
                .collect()
        };
        json!({
            "protocol": self.protocol.name(),
            "latency_unit": "system cycles (10 ns)",
            "total": Self::rec_json(&self.total),
            "by_data": rows(&self.by_data),
            "by_proc": rows(&self.by_proc),
            "by_proc_data": self.by_proc_data.iter().map(|(p, d, r)| json!({"procedure": p, "data": d, "record": Self::rec_json(r)})).collect::<Vec<_>>(),
            "counters": serde_json::to_value(&self.counters).unwrap_or(Value::Null),
        })
    }

    /// CSV: one line per (category kind, name) with every record field.
    pub fn csv(&self) -> String {
        let mut s = String::from("kind,procedure,data");
        for f in Record::FIELDS {
            s += ",";
            s += f;
        }
        s.push('\n');
        let q = |x: &str| {
            if x.contains(',') || x.contains('"') {
                format!("\"{}\"", x.replace('"', "\"\""))
            } else {
                x.to_string()
            }
        };
        let mut line = |kind: &str, p: &str, d: &str, r: &Record| {
            s += &format!("{kind},{},{}", q(p), q(d));
            for f in 0..Record::FIELDS.len() {
                s += &format!(",{}", r.get(f));
            }
            s.push('\n');
        };
        for r in &self.by_data {
            line("data", "", &r.name, &r.rec);
        }
        for r in &self.by_proc {
            line("proc", &r.name, "", &r.rec);
        }
        for (p, d, r) in &self.by_proc_data {
            line("proc-data", p, d, r);
        }
        s
    }

    /// An SVG bar chart: misses (read local/remote, write local/remote stacked) of the top
    /// `top` data structures and procedures.
    pub fn svg(&self, top: usize) -> String {
        let sections: Vec<(&str, &[Row])> = vec![
            (
                "Misses by data structure",
                &self.by_data[..self.by_data.len().min(top)],
            ),
            (
                "Misses by procedure",
                &self.by_proc[..self.by_proc.len().min(top)],
            ),
        ];
        let bar_h = 18.0;
        let width = 760.0;
        let label_w = 220.0;
        let n_rows: usize = sections.iter().map(|s| s.1.len() + 2).sum();
        let height = 40.0 + n_rows as f64 * (bar_h + 4.0);
        let max = self
            .by_data
            .iter()
            .chain(self.by_proc.iter())
            .map(|r| r.misses())
            .max()
            .unwrap_or(1)
            .max(1) as f64;
        let colors = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759"];
        let mut s = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{width}\" height=\"{height}\" font-family=\"sans-serif\" font-size=\"12\">\n<text x=\"10\" y=\"20\" font-size=\"14\">FlashPoint ({}): misses — read local, read remote, write local, write remote</text>\n",
            self.protocol.label()
        );
        let mut y = 40.0;
        let esc = |t: &str| {
            t.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
        };
        for (title, rows) in sections {
            s += &format!(
                "<text x=\"10\" y=\"{}\" font-weight=\"bold\">{}</text>\n",
                y + 12.0,
                esc(title)
            );
            y += bar_h + 4.0;
            for r in rows {
                s += &format!(
                    "<text x=\"10\" y=\"{}\">{}</text>\n",
                    y + 13.0,
                    esc(&r.name)
                );
                let mut x = label_w;
                let parts = [
                    r.rec.rd_miss_local,
                    r.rec.rd_miss_remote,
                    r.rec.wr_miss_local,
                    r.rec.wr_miss_remote,
                ];
                for (i, v) in parts.iter().enumerate() {
                    let w = *v as f64 / max * (width - label_w - 90.0);
                    if w > 0.0 {
                        s += &format!(
                            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{bar_h}\" fill=\"{}\"><title>{} {}</title></rect>\n",
                            colors[i],
                            ["read local", "read remote", "write local", "write remote"][i],
                            v
                        );
                    }
                    x += w;
                }
                s += &format!(
                    "<text x=\"{:.1}\" y=\"{}\">{}</text>\n",
                    x + 4.0,
                    y + 13.0,
                    r.misses()
                );
                y += bar_h + 4.0;
            }
            y += bar_h + 4.0;
        }
        s += "</svg>\n";
        s
    }
}

/// A plain aligned table (first column left, the rest right).
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
        let t = v.text(&["data", "proc"], 5);
        assert!(t.contains("by data structure") && t.contains("big"), "{t}");
        assert!(v.csv().lines().count() > 3);
        assert!(v.svg(5).starts_with("<svg"));
        assert_eq!(v.json()["by_data"][0]["name"], "big");
    }
}
