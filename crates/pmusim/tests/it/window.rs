//! The run-ahead window does not change a run (issue 19; `machine::sim`'s module
//! documentation, "Exactness"): the same run with no run-ahead (`PMUSIM_WINDOW=min`: a thread
//! yields as soon as its time passes the next event's) and with the longest exact window (the
//! default) prints the same `--json` document, apart from the wall-clock fields and the
//! number of events (the window's own measure: each yield is a thread's resumption).
//!
//! Before the order of same-tick events was made independent of the window (events of one
//! tick and priority taken by their source, the processor whose thread scheduled them, not
//! in the order the event loop happened to run the threads), and before first-touch homes and
//! store-conditional reservations were decided in simulated-time order, most multi-processor
//! runs here differed (`numachine`'s fft on 16 processors among them).

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// `pmusim ARGS` with the window knob set (`min`) or not: the JSON document, stripped of
/// wall-clock fields, and its `run.events`.
fn run(args: &[&str], min: bool) -> (Value, u64) {
    run_with(args, &[("PMUSIM_WINDOW", min.then_some("min"))])
}

/// `pmusim ARGS` with each variable of `env` set to its value or removed (`None`), as
/// [`run`] reads it.
fn run_with(args: &[&str], env: &[(&str, Option<&str>)]) -> (Value, u64) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pmusim"));
    c.args(args);
    for &(k, v) in env {
        match v {
            Some(v) => c.env(k, v),
            None => c.env_remove(k),
        };
    }
    let out = c.output().unwrap();
    assert!(
        out.status.success(),
        "pmusim {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let events = v["run"]["events"].as_u64().expect("run.events");
    strip(&mut v);
    (v, events)
}

fn strip(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|k, _| {
                !(k.ends_with("wall_seconds") || k == "references_per_second" || k == "events")
            });
            m.values_mut().for_each(strip);
        }
        Value::Array(a) => a.iter_mut().for_each(strip),
        _ => {}
    }
}

/// The first path where two documents differ (for the failure message).
fn first_difference(a: &Value, b: &Value, path: &str) -> Option<String> {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                let p = format!("{path}.{k}");
                match y.get(k) {
                    Some(vb) => {
                        if let Some(d) = first_difference(va, vb, &p) {
                            return Some(d);
                        }
                    }
                    None => return Some(format!("{p} missing")),
                }
            }
            (x.len() != y.len()).then(|| format!("{path}: other keys"))
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
            .iter()
            .zip(y)
            .enumerate()
            .find_map(|(i, (va, vb))| first_difference(va, vb, &format!("{path}[{i}]"))),
        _ => (a != b).then(|| format!("{path}: {a} (no run-ahead) against {b}")),
    }
}

/// Runs every case both ways; panics listing the cases that differ. Returns the events of
/// both ways, summed.
fn check(cases: &[Vec<String>]) -> (u64, u64) {
    let mut bad = Vec::new();
    let (mut ev_min, mut ev_max) = (0, 0);
    for args in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (a, ea) = run(&args, true);
        let (b, eb) = run(&args, false);
        ev_min += ea;
        ev_max += eb;
        if let Some(d) = first_difference(&a, &b, "") {
            bad.push(format!("pmusim {}: {d}", args.join(" ")));
        }
    }
    assert!(
        bad.is_empty(),
        "the window changed runs:\n{}",
        bad.join("\n")
    );
    (ev_min, ev_max)
}

fn case(s: &str) -> Vec<String> {
    s.split_whitespace().map(str::to_string).collect()
}

const WORKLOADS: [&str; 7] = [
    "fft",
    "lu",
    "radix",
    "ocean",
    "lock",
    "false-sharing",
    "producer-consumer",
];

/// The four kernels and three micro workloads at test size on one preset (its own processor
/// count); the run without run-ahead must take more events (the knob works).
fn preset(machine: &str) {
    let cases: Vec<_> = WORKLOADS
        .iter()
        .map(|w| case(&format!("run {w} -m {machine} -s test --json")))
        .collect();
    let (ev_min, ev_max) = check(&cases);
    assert!(
        ev_min > ev_max,
        "{machine}: {ev_min} events without run-ahead, {ev_max} with it: is PMUSIM_WINDOW read?"
    );
}

#[test]
fn numachine() {
    preset("numachine");
}

#[test]
fn flash() {
    preset("flash");
}

/// Non-blocking loads and stores with 4 MSHRs: first-touch homes decided when a request
/// leaves (on two processors, fft's first pages were placed by whichever thread the event
/// loop ran first).
#[test]
fn flash_r10k() {
    preset("flash-r10k");
    check(&[case("run fft -m flash-r10k -s test -p 2 --json")]);
}

#[test]
fn ideal() {
    preset("ideal");
}

#[test]
fn cmp() {
    preset("cmp");
}

/// Four hardware threads per core and load-and-reserve / store-conditional atomics: a
/// reservation is lost to the stores timed after it, whatever order the threads ran in
/// (`cpu::reserve`; ocean on 2 processors differed before).
#[test]
fn bgq() {
    preset("bgq");
    check(&[case("run ocean -m bgq -s test -p 2 --json")]);
}

/// Other ways of placing and running threads: hardware contexts, more software threads than
/// processors, the operating system, TLBs, memory controllers, 64 processors, another seed,
/// a multiprogrammed run.
#[test]
fn placements_and_options() {
    check(&[
        case("run radix -m cmp -s test --threads-per-core 2 --json"),
        case("run fft -s test -p 4 -t 8 --json"),
        case("run fft -s test -p 4 --tlb --json"),
        case("run lock -s test -p 4 -t 12 --os --json"),
        case("run lu -s test -p 4 --memctl on --json"),
        case("run fft -s test -p 64 --json"),
        case("run fft -s test -p 16 --seed 7 --json"),
        case("run fft+radix -s test -p 8 --json"),
        case("run migratory -m ideal -s test -p 8 --json"),
        case("run pointer-chase -m flash -s test -p 16 --json"),
        case("run stream -s test -p 4 --json"),
        case("run informing -s test -p 4 --json"),
    ]);
}

fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Records `tests/c/NAME.c` (built with `cc_flags`) with the QEMU plugin; `None` if a tool is
/// missing.
fn record(dir: &Path, name: &str, cc_flags: &[&str], env: &[(&str, &str)]) -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let exe = dir.join(name);
    let st = Command::new("gcc")
        .args(cc_flags)
        .arg("-o")
        .arg(&exe)
        .arg(root.join(format!("tests/c/{name}.c")))
        .status()
        .ok()?;
    if !st.success() {
        return None;
    }
    let out = dir.join(format!("{name}.pmt"));
    super::trace_replay::record_exe(&out, &exe, env);
    Some(out)
}

/// The 16-thread pthread and OpenMP programs of issue 19's figure, recorded here and
/// replayed on `numachine` with 16 processors. With `PMUSIM_WINDOW_TRACES=DIR`, every
/// `DIR/*.pmt` too (the saved traces the figures were measured on).
#[test]
fn traced_programs() {
    if !have("qemu-x86_64") || !have("gcc") {
        println!("qemu-x86_64 or gcc not installed: traced programs skipped");
        return;
    }
    let dir = std::env::temp_dir().join(format!("pmusim-window-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut traces = Vec::new();
    traces.extend(record(&dir, "pthreads16", &["-O1", "-pthread"], &[]));
    traces.extend(record(
        &dir,
        "omp16",
        &["-O1", "-fopenmp"],
        &[("OMP_NUM_THREADS", "16"), ("OMP_WAIT_POLICY", "passive")],
    ));
    if let Some(d) = std::env::var_os("PMUSIM_WINDOW_TRACES") {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.extension().is_some_and(|x| x == "pmt") {
                traces.push(p);
            }
        }
    }
    assert!(!traces.is_empty());
    let cases: Vec<_> = traces
        .iter()
        .map(|t| case(&format!("run trace:{} -p 16 --json", t.display())))
        .collect();
    let (ev_min, ev_max) = check(&cases);
    assert!(ev_min > ev_max);
    // The threads' horizons (`machine::sim`, "The thread's horizon") change the events, not
    // the run: without them (`PMUSIM_HORIZON=off`) the same document, and at least a third
    // more events (pthreads16 4.24 M against 1.71 M, omp16 3.65 M against 1.98 M).
    let (mut ev_off, mut ev_on) = (0, 0);
    for args in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (a, ea) = run_with(&args, &[("PMUSIM_HORIZON", Some("off"))]);
        let (b, eb) = run_with(&args, &[("PMUSIM_HORIZON", None)]);
        if let Some(d) = first_difference(&a, &b, "") {
            panic!(
                "pmusim {}: the horizons changed the run: {d}",
                args.join(" ")
            );
        }
        ev_off += ea;
        ev_on += eb;
    }
    assert!(
        ev_on * 3 < ev_off * 2,
        "horizons: {ev_on} events against {ev_off} without"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
