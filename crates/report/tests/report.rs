//! The base report of one fixed small run (`fft -s test -p 4` on numachine, built in-process):
//! every rendered format pinned by an `insta` snapshot (text, each CSV table, the SVG plot, the
//! typed JSON), and the typed tables checked against the run's own JSON document.
//!
//! A snapshot that changes on purpose is accepted with `INSTA_UPDATE=always cargo test -p
//! report --test report` (or `cargo insta review`), and the diff is reviewed in the commit.

use machine::{Machine, Options, Preset};
use report::model::{Cell, Kind, PlotData, Report, Unit};
use report::render;
use serde_json::{json, Value};

/// The machine after `pmusim run fft -s test -p 4` (seed 1) and its run document, wall-clock
/// time 0.
fn fft_run() -> (Machine, Value) {
    let preset = Preset::builtin("numachine")
        .and_then(|p| p.with_procs(4))
        .expect("numachine with 4 processors");
    let mut m = Machine::new(preset, Options::default()).expect("machine");
    let size = workload::Size::parse("test").unwrap();
    let w = workload::find("fft", size).unwrap();
    let w = workload::install(w, &mut m, None).unwrap();
    let sum = m.run(None).expect("fft runs to the end");
    let v = w.verify();
    assert!(v.verified, "{}", v.detail);
    let wl =
        json!({"name": "fft", "size": "test", "threads": 4, "verified": true, "detail": v.detail});
    let doc = report::run_document(m.state(), &sum, wl, json!({}), 0.0);
    (m, doc)
}

fn base() -> (Value, Report) {
    let (_, doc) = fft_run();
    let r = report::base::build(&doc, 10);
    (doc, r)
}

fn table<'a>(r: &'a Report, id: &str) -> &'a report::Table {
    r.tables()
        .find(|t| t.id == id)
        .unwrap_or_else(|| panic!("table {id}"))
}

fn int(c: &Cell) -> u64 {
    match c {
        Cell::Int(v) => *v,
        other => panic!("not an integer: {other:?}"),
    }
}

#[test]
fn snapshots_of_every_format() {
    let (_, r) = base();
    insta::assert_snapshot!("text", render::text::render(&r));
    for t in r.tables() {
        insta::assert_snapshot!(format!("csv_{}", t.id), render::csv::table(t));
    }
    let plots: Vec<_> = r.plots().collect();
    assert_eq!(plots.len(), 1);
    insta::assert_snapshot!("svg_pipeline_states", render::svg::plot(plots[0]));
    insta::assert_snapshot!("typed_json", render::json::render(&r));
}

#[test]
fn latency_histograms_hold_every_miss() {
    let (m, doc) = fft_run();
    let plots = report::base::latency_histograms(m.state());
    let ids: Vec<&str> = plots.iter().map(|p| p.id.as_str()).collect();
    // One node: no remote misses, so no remote histograms.
    assert_eq!(ids, ["latency_read_local", "latency_write_local"]);
    for (p, key) in plots.iter().zip(["read_local", "write_local"]) {
        let h = &doc["ground_truth"]["latency_cycles"][key];
        let PlotData::Histogram { bins } = &p.data else {
            panic!("{} is not a histogram", p.id)
        };
        assert_eq!(bins.len() as u64, report::base::LATENCY_BINS);
        let n: u64 = bins.iter().map(|b| b.count).sum();
        assert_eq!(n, h["count"].as_u64().unwrap(), "{}", p.id);
        let max = h["max"].as_f64().unwrap();
        let last = bins.iter().rev().find(|b| b.count > 0).unwrap();
        assert!(
            last.lo <= max && max < last.hi,
            "{}: max {max} in {last:?}",
            p.id
        );
        assert!(bins.windows(2).all(|w| w[0].hi == w[1].lo));
    }
    insta::assert_snapshot!("svg_latency_read_local", render::svg::plot(&plots[0]));
    let full = report::base::build_with_histograms(&doc, m.state(), 10);
    assert_eq!(full.plots().count(), 3);
    // The histograms are SVG only: the text is the same as without them.
    assert_eq!(
        render::text::render(&full),
        render::text::render(&report::base::build(&doc, 10))
    );
}

#[test]
fn typed_tables_equal_the_json_document() {
    let (doc, r) = base();
    let gt = &doc["ground_truth"];
    // Processors: one row each, then totals equal to the sums over the document.
    let t = table(&r, "processors");
    assert_eq!(t.rows.len(), 4);
    let procs = gt["processors"].as_array().unwrap();
    for (row, p) in t.rows.iter().zip(procs) {
        assert_eq!(int(&row[1]), p["instructions"].as_u64().unwrap());
        assert_eq!(int(&row[2]), p["cycles"].as_u64().unwrap());
        // CPI is cycles / instructions, not a count.
        match row[3] {
            Cell::Float(cpi) => assert!(
                (cpi * p["instructions"].as_f64().unwrap() - p["cycles"].as_f64().unwrap()).abs()
                    < 1e-6
            ),
            ref c => panic!("CPI cell {c:?}"),
        }
    }
    let total = t.total.as_ref().unwrap();
    let sum = |k: &str| procs.iter().map(|p| p[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!(int(&total[1]), sum("instructions"));
    assert_eq!(int(&total[4]), sum("references"));
    assert_eq!(int(&total[4]), doc["run"]["references"].as_u64().unwrap());
    assert_eq!(
        int(&total[8]),
        gt["totals"]["read_misses"].as_u64().unwrap()
    );
    assert_eq!(
        int(&total[9]),
        gt["totals"]["write_misses"].as_u64().unwrap()
    );
    // No ratio in a count column, no count in a ratio column.
    for t in r.tables() {
        for row in t.all_rows() {
            for (c, col) in row.iter().zip(&t.columns) {
                match (&col.kind, c) {
                    (Kind::Quantity(Unit::Count), Cell::Float(_)) => {
                        panic!("{}: a fraction in count column {}", t.id, col.name)
                    }
                    (Kind::Quantity(Unit::Percent | Unit::Ratio { .. }), Cell::Int(_)) => {
                        panic!("{}: an integer in ratio column {}", t.id, col.name)
                    }
                    _ => {}
                }
            }
        }
    }
    // Pipeline-state shares add up to 100 % of all processors' cycles.
    let t = table(&r, "pipeline_states");
    let share: f64 = t
        .rows
        .iter()
        .map(|row| match row[2] {
            Cell::Float(v) => v,
            _ => 0.0,
        })
        .sum();
    assert!((share - 100.0).abs() < 1e-9, "{share}");
    let cycles: u64 = t.rows.iter().map(|row| int(&row[1])).sum();
    assert_eq!(cycles, sum("cycles"));
    // Miss classes: the document's totals.
    let t = table(&r, "miss_classes");
    assert_eq!(int(&t.rows[0][0]), gt["totals"]["cold"].as_u64().unwrap());
    assert_eq!(
        int(&t.rows[0][1]),
        gt["totals"]["coherence"].as_u64().unwrap()
    );
}

#[test]
fn csv_files_read_back_as_the_tables() {
    let (m, doc) = fft_run();
    let r = report::base::build(&doc, 10);
    let dir = std::env::temp_dir().join(format!("pmusim-report-csv-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let files = report::base::write_csv(&doc, 10, &dir).unwrap();
    let names: Vec<String> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "processors.csv",
            "miss_latencies.csv",
            "miss_classes.csv",
            "data_structures.csv",
            "procedures.csv",
            "structure_x_processor.csv",
            "pipeline_states.csv"
        ]
    );
    let mut rd = csv::Reader::from_path(dir.join("processors.csv")).unwrap();
    let head = rd.headers().unwrap().clone();
    assert_eq!(&head[2], "cycles (proc. cycles)");
    assert_eq!(&head[3], "CPI (cycles / instr)");
    let rows: Vec<csv::StringRecord> = rd.records().map(Result::unwrap).collect();
    assert_eq!(rows.len(), 5);
    assert_eq!(&rows[4][0], "all");
    // Plain numbers: no thousands separators, the exact total.
    let refs: u64 = rows[4][4].parse().unwrap();
    assert_eq!(refs, doc["run"]["references"].as_u64().unwrap());
    assert_eq!(
        rows.len(),
        table(&r, "processors").all_rows().count(),
        "one CSV line per row"
    );
    let svgs = report::base::write_svg(&doc, m.state(), 10, &dir).unwrap();
    assert_eq!(svgs.len(), 3);
    assert!(std::fs::read_to_string(&svgs[0])
        .unwrap()
        .starts_with("<svg"));
    assert!(report::base::write_csv(&doc, 10, &dir.join("missing")).is_err());
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Wakes every 5,000 processor cycles and raises an interrupt with a 300-cycle handler on
/// processor 1.
struct Interrupter;
impl machine::probe::Probe for Interrupter {
    fn observe(&mut self, _o: &machine::probe::Observation, _s: &mut machine::probe::Signals) {}
    fn interest(&self) -> u32 {
        0
    }
    fn wakes(&self) -> Option<(machine::probe::ProbeClock, u64)> {
        let clock = machine::probe::ProbeClock {
            name: "cpu",
            num: 1,
            den: 1,
        };
        Some((clock, 5_000))
    }
    fn wake(&mut self, cycle: u64, _t: u64, sig: &mut machine::probe::Signals) -> Option<u64> {
        sig.act(machine::probe::Action::Interrupt {
            core: 1,
            context: 0,
            vector: 0,
            handler_cycles: 300,
        });
        Some(cycle + 5_000)
    }
    fn name(&self) -> &str {
        "interrupter"
    }
}

/// `fft -s test -p 4 --by-phase` with a waking, interrupting probe: the phase tables and the
/// actions table hold the ground truth's numbers, and the phases' memory uses add up to the
/// run's.
#[test]
fn phase_and_action_tables_equal_the_ground_truth() {
    let preset = Preset::builtin("numachine")
        .and_then(|p| p.with_procs(4))
        .unwrap();
    let opts = Options {
        phase_split: true,
        ..Options::default()
    };
    let mut m = Machine::new(preset, opts).unwrap();
    let w = workload::find("fft", workload::Size::parse("test").unwrap()).unwrap();
    let w = workload::install(w, &mut m, None).unwrap();
    m.attach(Box::new(Interrupter));
    let sum = m.run(None).unwrap();
    assert!(w.verify().verified);
    let doc = report::run_document(m.state(), &sum, json!({"name": "fft"}), json!({}), 0.0);
    let r = report::base::build(&doc, 10);
    let gt = m.state().truth.as_ref().unwrap();
    assert!(gt.phases.len() >= 4, "fft marks its phases");
    let lat = table(&r, "phase_latencies");
    let kinds = ["read local", "read remote", "write local", "write remote"];
    let mut rows = 0;
    for (ph, s) in &gt.phases {
        for (k, h) in s.latency.iter().enumerate().filter(|(_, h)| h.n > 0) {
            let row = lat
                .rows
                .iter()
                .find(|row| row[0] == Cell::from(ph.to_string()) && row[1] == Cell::from(kinds[k]))
                .unwrap_or_else(|| panic!("phase {ph} {}", kinds[k]));
            assert_eq!(int(&row[2]), h.n);
            rows += 1;
        }
    }
    assert_eq!(lat.rows.len(), rows);
    let q = table(&r, "phase_queues");
    let mem: u64 = q
        .rows
        .iter()
        .filter(|row| row[1] == Cell::from("memory"))
        .map(|row| int(&row[2]))
        .sum();
    let total: u64 = doc["ground_truth"]["queues"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["resource"].as_str().unwrap().starts_with("Memory"))
        .map(|v| v["uses"].as_u64().unwrap())
        .sum();
    assert_eq!(mem, total);
    let a = &m.state().acted;
    assert!(a.interrupts_taken > 0);
    let t = table(&r, "probe_actions");
    assert_eq!(int(&t.rows[0][1]), a.wakes);
    assert_eq!(int(&t.rows[1][1]), a.interrupts_taken);
    assert_eq!(int(&t.rows[1][3]), a.interrupt_cycles);
    let exc = m.state().preset.cpu.exception_cycles as u64;
    assert_eq!(a.interrupt_cycles, a.interrupts_taken * (exc + 300));
}
