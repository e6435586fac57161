//! Each monitor's typed section (`Monitor::section`) on one fixed small run, rendered to text
//! and pinned by an `insta` snapshot, so a change to a monitor's report is visible in review;
//! and the section's cells checked against the monitor's JSON section.
//!
//! Accept an intended change with `INSTA_UPDATE=always cargo test -p monitor --test numachine
//! sections` and review the diff.

use machine::{Machine, Options, Preset};
use monitor::plugin::{self, Monitor};
use report::model::{Cell, Num, Report, Section};
use serde_json::Value;

/// Runs `workload` at test size on `machine` with `procs` processors and the monitors of
/// `spec` (with `flags`); returns the machine, the monitors and their JSON sections.
fn run(
    machine: &str,
    procs: usize,
    workload: &str,
    spec: &str,
    flags: &[(&str, &str)],
) -> (Machine, Vec<Box<dyn Monitor>>, Vec<Value>) {
    let flags: Vec<(String, Option<String>)> = flags
        .iter()
        .map(|(f, v)| (f.to_string(), Some(v.to_string())))
        .collect();
    let mut mons = plugin::select(Some(spec), &flags).unwrap();
    let mut p = Preset::builtin(machine).unwrap().with_procs(procs).unwrap();
    for m in &mut mons {
        m.adjust_preset(&mut p).unwrap();
    }
    let mut m = Machine::new(p, Options::default()).unwrap();
    let w = workload::find(workload, workload::Size::Test).unwrap();
    let w = workload::install(w, &mut m, None).unwrap();
    for mon in &mut mons {
        mon.attach(&mut m).unwrap();
    }
    m.run(None).unwrap();
    assert!(w.verify().verified);
    let json = mons
        .iter()
        .map(|mon| mon.json(&m).unwrap_or(Value::Null))
        .collect();
    (m, mons, json)
}

fn text(s: &Section) -> String {
    report::render::text::render(&Report {
        sections: vec![s.clone()],
    })
}

fn estimate(c: &Cell) -> (u64, u64) {
    match c {
        Cell::Estimate {
            monitored: Num::Int(m),
            exact: Num::Int(x),
        } => (*m, *x),
        c => panic!("not an integer estimate: {c:?}"),
    }
}

/// The NUMAchine monitor's built-in configuration on FFT: counters beside the exact values
/// (a pipeline counter's value is the register x4), the estimators, the latency histogram
/// plot and tables, the queues.
#[test]
fn numachine_section() {
    let (m, mons, json) = run("numachine", 4, "fft", "numachine", &[]);
    let s = mons[0].section(&m, &json[0], 10).unwrap();
    let n = &json[0];
    let ev = s.tables().find(|t| t.id == "numachine_counters").unwrap();
    for r in &ev.rows {
        let Cell::Text(proc) = &r[0] else { panic!() };
        let Cell::Text(i) = &r[1] else { panic!() };
        let i: usize = i.parse().unwrap();
        let k = if proc == "all" {
            n["machine_wide"][i].clone()
        } else {
            n["cards"][proc.parse::<usize>().unwrap()]["counters"][i].clone()
        };
        let (mon, exact) = estimate(&r[6]);
        let scale = if r[3] == Cell::text("pipeline") { 4 } else { 1 };
        assert_eq!(mon, k["value"].as_u64().unwrap() * scale);
        let x = k["exact"]["value"].as_u64().or(k["exact"].as_u64());
        assert_eq!(Some(exact), x);
    }
    let plot = s.plots().next().expect("the latency histogram");
    let report::PlotData::Histogram { bins } = &plot.data else {
        panic!()
    };
    let requests: u64 = bins.iter().map(|b| b.count).sum();
    let counted: u64 = n["latency_histograms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["monitor_cycles"]["count"].as_u64().unwrap())
        .sum();
    assert_eq!(requests, counted);
    assert_eq!(plot.x.label(), "latency (monitor cycles)");
    insta::assert_snapshot!("numachine_default_fft", text(&s));
    // Every row and the raw tables with `usize::MAX`.
    let full = mons[0].section(&m, &json[0], usize::MAX).unwrap();
    let ids: Vec<&str> = full.tables().map(|t| t.id.as_str()).collect();
    for id in [
        "numachine_sram",
        "numachine_latency_buckets",
        "numachine_queue_waits",
    ] {
        assert!(ids.contains(&id), "{ids:?}");
    }
}

/// `docs/numachine/locality.toml` on pointer-chase: the filtered counter (AW on `list.0`) has
/// its exact value from the ground truth's misses of `list.0`; the locality summary's exact
/// local and remote line requests are the ground truth's misses by home; every map row has its
/// exact count.
#[test]
fn numachine_locality_section_exact_columns() {
    let spec = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/numachine/locality.toml"
    );
    let (m, mons, json) = run("ideal", 4, "pointer-chase", spec, &[]);
    let s = mons[0].section(&m, &json[0], 10).unwrap();
    let st = m.state();
    let gt = st.truth.as_ref().unwrap();
    let sid = st
        .map
        .regions()
        .iter()
        .position(|r| r.name == "list.0")
        .unwrap() as u32;
    let ev = s.tables().find(|t| t.id == "numachine_counters").unwrap();
    let mut checked = 0;
    for r in &ev.rows {
        let Cell::Text(proc) = &r[0] else { panic!() };
        if r[1] != Cell::text("0") {
            continue;
        }
        let procs: Vec<u16> = if proc == "all" {
            (0..4).collect()
        } else {
            vec![proc.parse().unwrap()]
        };
        let truth: u64 = procs
            .iter()
            .filter_map(|&p| gt.per_cpu_struct.get(&(p, sid)))
            .map(|ms| ms.reads() + ms.writes() - ms.upgrades)
            .sum();
        let (mon, exact) = estimate(&r[6]);
        assert_eq!(exact, truth, "proc {proc}: exact = misses to list.0");
        assert_eq!(mon, exact, "proc {proc}: the AW window holds list.0 alone");
        checked += 1;
    }
    assert_eq!(checked, 5, "four cards and all");
    let sum = s
        .tables()
        .find(|t| t.id == "numachine_locality_summary")
        .unwrap();
    let (l, gl) = estimate(&sum.rows[0][0]);
    let (r, gr) = estimate(&sum.rows[0][1]);
    let local: u64 = gt
        .per_proc
        .iter()
        .map(|m| m.read_local + m.write_local)
        .sum();
    let remote: u64 = gt
        .per_proc
        .iter()
        .map(|m| m.read_remote + m.write_remote)
        .sum();
    assert_eq!((l, r, gl, gr), (local, remote, local, remote));
    let map = s.tables().find(|t| t.id == "numachine_locality").unwrap();
    for row in &map.rows {
        let (m, x) = estimate(&row[3]);
        assert_eq!(m, x, "unfiltered: every word exact");
    }
    insta::assert_snapshot!("numachine_locality_pointer_chase", text(&s));
}

/// FlashPoint on FFT (FP-Proc): the ranking by data structure and procedure.
#[test]
fn flashpoint_section() {
    let (m, mons, json) = run("flash", 4, "fft", "flashpoint", &[]);
    let s = mons[0].section(&m, &json[0], 10).unwrap();
    let t = s.tables().find(|t| t.id == "flashpoint_data").unwrap();
    let misses: u64 = t
        .rows
        .iter()
        .map(|r| match r[1] {
            Cell::Int(v) => v,
            _ => panic!(),
        })
        .sum();
    let total = &json[0]["total"];
    let recorded: u64 = [
        "rd_miss_local",
        "rd_miss_remote",
        "wr_miss_local",
        "wr_miss_remote",
    ]
    .iter()
    .map(|k| total[k].as_u64().unwrap())
    .sum();
    assert_eq!(misses, recorded, "every structure shown at this size");
    insta::assert_snapshot!("flashpoint_fft", text(&s));
}

/// Two Addies per memory controller on RADIX: samples and readings as in the JSON.
#[test]
fn addie_section() {
    let (m, mons, json) = run("numachine", 4, "radix", "addie", &[("addie-window", "64")]);
    let s = mons[0].section(&m, &json[0], 10).unwrap();
    let t = s.tables().next().unwrap();
    let a = &json[0]["controllers"][0]["addies"];
    assert_eq!(t.rows[0][2], Cell::Int(a[0]["samples"].as_u64().unwrap()));
    assert_eq!(
        t.rows[1][3],
        Cell::Int(a[1]["readings"].as_array().unwrap().len() as u64)
    );
    insta::assert_snapshot!("addie_radix", text(&s));
}
