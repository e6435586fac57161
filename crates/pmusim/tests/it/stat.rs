//! `pmusim stat` (issue 17 item 4): named events counted beside the ground truth, perf's CSV
//! and JSON-lines formats, multiplexing scaled as perf scales it, bad events refused.

use std::process::Command;

fn pmusim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pmusim"))
        .args(args)
        .output()
        .expect("run pmusim");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn json_lines(out: &str) -> Vec<serde_json::Value> {
    out.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The run's ground truth summed over the processors.
fn truth(args: &[&str]) -> (u64, u64, u64) {
    let mut a = vec!["run"];
    a.extend_from_slice(args);
    a.push("--json");
    let (c, out, e) = pmusim(&a);
    assert_eq!(c, 0, "{e}");
    let d: serde_json::Value = serde_json::from_str(&out).unwrap();
    let p = d["ground_truth"]["processors"].as_array().unwrap();
    let sum = |f: &dyn Fn(&serde_json::Value) -> u64| p.iter().map(f).sum::<u64>();
    (
        sum(&|x| x["instructions"].as_u64().unwrap()),
        sum(&|x| x["cycles"].as_u64().unwrap()),
        sum(&|x| x["l1d"]["misses"].as_u64().unwrap()),
    )
}

/// Five PAPI presets fit the POWER2 counters at once: every count equals its exact count,
/// and the exact counts are the run's ground truth; perf's JSON keys, in perf's order.
#[test]
fn counts_equal_the_ground_truth() {
    let run = ["fft", "-m", "power2", "-s", "test"];
    let mut a = vec![
        "stat",
        "-j",
        "-e",
        "PAPI_TOT_INS,PAPI_TOT_CYC,PAPI_L1_DCM,PAPI_FP_INS,PAPI_BR_INS",
        "--",
    ];
    a.extend_from_slice(&run);
    let (c, out, e) = pmusim(&a);
    assert_eq!(c, 0, "{e}");
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 5, "{out}");
    let first = out.lines().next().unwrap();
    let order = [
        "counter-value",
        "unit",
        "event",
        "event-runtime",
        "pcnt-running",
        "metric-value",
        "metric-unit",
        "exact",
    ];
    let at: Vec<usize> = order.iter().map(|k| first.find(k).unwrap()).collect();
    assert!(
        at.windows(2).all(|w| w[0] < w[1]),
        "perf's key order: {first}"
    );
    let (ins, cyc, dcm) = truth(&run);
    for l in &lines {
        let v: f64 = l["counter-value"].as_str().unwrap().parse().unwrap();
        let exact = l["exact"].as_u64().unwrap();
        assert_eq!(v, exact as f64, "{l}");
        assert_eq!(l["metric-value"], exact.to_string());
        assert_eq!(l["pcnt-running"], 100.0);
        assert_eq!(l["event-runtime"], cyc);
        let want = match l["event"].as_str().unwrap() {
            "PAPI_TOT_INS" => Some(ins),
            "PAPI_TOT_CYC" => Some(cyc),
            "PAPI_L1_DCM" => Some(dcm),
            _ => None,
        };
        if let Some(w) = want {
            assert_eq!(exact, w, "{l}");
        }
    }
}

/// `-x SEP`: perf's CSV field order (value, unit, event, run time, percentage running,
/// metric value, metric unit), the exact count as the metric; `-I` lines start with the
/// interval's end, and their counts sum to the totals.
#[test]
fn csv_fields_and_intervals_as_perf() {
    let (c, out, e) = pmusim(&[
        "stat",
        "-x",
        ";",
        "-I",
        "500000",
        "-e",
        "PAPI_TOT_INS,l1d-miss",
        "--",
        "fft",
        "-m",
        "power2",
        "-s",
        "test",
    ]);
    assert_eq!(c, 0, "{e}");
    let rows: Vec<Vec<&str>> = out.lines().map(|l| l.split(';').collect()).collect();
    let (intervals, totals): (Vec<_>, Vec<_>) = rows.iter().partition(|r| r.len() == 8);
    assert_eq!(totals.len(), 2, "{out}");
    assert!(intervals.len() >= 6, "{out}");
    for ev in ["PAPI_TOT_INS", "l1d-miss"] {
        let total = totals.iter().find(|r| r[2] == ev).unwrap();
        assert_eq!(total[1], "", "unit");
        assert_eq!(total[4], "100.00");
        assert_eq!(total[0], total[5], "monitored = exact: {total:?}");
        assert_eq!(total[6], "exact");
        let sum: u64 = intervals
            .iter()
            .filter(|r| r[3] == ev)
            .map(|r| r[1].parse::<u64>().unwrap())
            .sum();
        assert_eq!(
            sum.to_string(),
            total[0],
            "{ev}: intervals sum to the total"
        );
        let times: Vec<u64> = intervals
            .iter()
            .filter(|r| r[3] == ev)
            .map(|r| r[0].parse().unwrap())
            .collect();
        assert!(times.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(times[0], 500_000);
    }
}

/// More requests than one MMCR holds (a `:u` request needs other mode bits): two groups
/// rotated every 10,000 cycles, their times running summing to the time enabled, each count
/// scaled by enabled / running. Cycles counted only while programmed, scaled, give back the
/// exact cycles: the scaling is perf's and the windows are exact.
#[test]
fn multiplexing_scales_as_perf_and_reports_time_running() {
    let (c, out, e) = pmusim(&[
        "stat",
        "-j",
        "--mux-period",
        "10000",
        "-e",
        "PAPI_TOT_INS,PAPI_L1_DCM,PAPI_TOT_CYC:u",
        "--",
        "fft",
        "-m",
        "power2",
        "-s",
        "test",
    ]);
    assert_eq!(c, 0, "{e}");
    let l = json_lines(&out);
    let (ins, cyc, _) = truth(&["fft", "-m", "power2", "-s", "test"]);
    let run = |i: usize| l[i]["event-runtime"].as_u64().unwrap();
    let pct = |i: usize| l[i]["pcnt-running"].as_f64().unwrap();
    let value = |i: usize| -> f64 { l[i]["counter-value"].as_str().unwrap().parse().unwrap() };
    assert_eq!(run(0), run(1), "one group");
    assert_eq!(
        run(0) + run(2),
        cyc,
        "the groups' times running sum to the time enabled"
    );
    assert!(pct(0) < 100.0 && pct(2) < 100.0);
    assert!((pct(0) + pct(2) - 100.0).abs() <= 0.011);
    // Without an operating system every cycle is a user cycle: counted while running,
    // scaled by enabled / running, they are the run's cycles.
    assert_eq!(value(2), cyc as f64);
    assert_eq!(l[2]["exact"], cyc);
    // A scaled estimate, near the exact count on a steady kernel.
    let err = (value(0) - ins as f64).abs() / ins as f64;
    assert!(err < 0.05, "PAPI_TOT_INS scaled {} against {ins}", value(0));
    assert_eq!(l[0]["exact"], ins);
}

/// Bad event names, modifiers, monitors and run arguments are refused before any
/// simulation, exit 2, naming the culprit.
#[test]
fn bad_events_are_refused_before_the_run() {
    for (args, want) in [
        (
            vec!["stat", "-e", "PAPI_NOPE", "--", "fft"],
            "no event `PAPI_NOPE` (`pmusim stat -e list` lists them)",
        ),
        (
            vec!["stat", "-e", "PAPI_TOT_INS:x", "--", "fft"],
            "unknown modifier `x`",
        ),
        (
            vec!["stat", "-e", "PAPI_TOT_INS,", "--", "fft"],
            "an empty event name",
        ),
        (
            vec![
                "stat",
                "-e",
                "PAPI_TOT_INS",
                "--",
                "fft",
                "--monitor",
                "c2c",
            ],
            "monitor `c2c` counts no named events",
        ),
        (
            vec![
                "stat",
                "-e",
                "PAPI_TOT_INS",
                "--",
                "fft",
                "--monitor",
                "nosuch",
            ],
            "unknown monitor `nosuch`",
        ),
        (
            vec!["stat", "-e", "PAPI_TOT_INS", "--", "fft", "--json"],
            "--json (stat's JSON is -j",
        ),
        (
            vec!["stat", "-e", "PAPI_TOT_INS", "--", "fft", "--bogus"],
            "the run arguments after `--`",
        ),
        (vec!["stat", "-e", "PAPI_TOT_INS", "--", "nosuch"], "nosuch"),
    ] {
        let (c, out, e) = pmusim(&args);
        assert_eq!(c, 2, "{args:?}: {e}");
        assert!(e.contains(want), "{args:?}: {e}");
        assert!(out.is_empty(), "{args:?}: nothing printed: {out}");
    }
}

/// `pmusim stat -e list` and `pmusim list events --json` name the PAPI presets and the
/// native events, with the modifiers each monitor allows.
#[test]
fn events_are_listed() {
    let (c, out, e) = pmusim(&["stat", "-e", "list"]);
    assert_eq!(c, 0, "{e}");
    assert!(out.contains("PAPI_TOT_INS"), "{out}");
    assert!(out.contains("l1d-miss"), "{out}");
    let (c, out, e) = pmusim(&["list", "events", "--json"]);
    assert_eq!(c, 0, "{e}");
    let d: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(d["schema"], "pmusim.list-events/1");
    let ev = d["events"].as_array().unwrap();
    let tot = ev
        .iter()
        .find(|e| e["name"] == "PAPI_TOT_INS" && e["monitor"] == "power2")
        .unwrap();
    assert_eq!(tot["kind"], "PAPI preset");
    assert_eq!(tot["modifiers"], serde_json::json!(["u", "k"]));
    assert_eq!(tot["exact"], true);
    let native = |m: &str| {
        ev.iter()
            .filter(|e| e["kind"] == "native" && e["monitor"] == m)
            .count()
    };
    assert_eq!(native("power2"), 46);
    // NUMAchine: Table 4.5's events as occurrences and cycles (23 names), the 15 pipeline
    // states of Table 4.3; no modifiers (the card does not see MSR[PR]).
    assert_eq!(native("numachine"), 23 + 15);
    let stm = ev
        .iter()
        .find(|e| e["name"] == "PAPI_L2_STM" && e["monitor"] == "numachine")
        .unwrap();
    assert_eq!(stm["modifiers"], serde_json::json!([]));
}

/// Per-processor ground truth of a NUMAchine run: (instructions, L2 read misses + bus
/// errors, L2 write misses, upgrades, NACKs, pipeline loads).
fn numachine_truth(run: &[&str]) -> [u64; 6] {
    let mut a = vec!["run"];
    a.extend_from_slice(run);
    a.push("--json");
    let (c, out, e) = pmusim(&a);
    assert_eq!(c, 0, "{e}");
    let d: serde_json::Value = serde_json::from_str(&out).unwrap();
    let p = d["ground_truth"]["processors"].as_array().unwrap();
    let sum = |f: &dyn Fn(&serde_json::Value) -> u64| p.iter().map(f).sum::<u64>();
    let m = |x: &serde_json::Value, k: &str| x["misses"][k].as_u64().unwrap();
    [
        sum(&|x| x["instructions"].as_u64().unwrap()),
        sum(&|x| m(x, "read_misses") + m(x, "bus_errors")),
        sum(&|x| m(x, "write_misses")),
        sum(&|x| m(x, "upgrades")),
        sum(&|x| m(x, "nacks")),
        sum(&|x| x["cycles_by_pipeline_state"]["load"].as_u64().unwrap()),
    ]
}

/// The NUMAchine card's events through `stat` (no `--monitor`: the numachine machine's own
/// monitor): every count equals the run's ground truth, the prescaled pipeline counts within
/// 3 per card; PAPI_L2_STM counts every write miss (read-exclusives and upgrades, two
/// counters), not only read-exclusives as the configuration file's one-counter preset does.
#[test]
fn numachine_counts_equal_the_ground_truth() {
    let run = ["fft", "-s", "test", "--procs", "4"];
    let t = numachine_truth(&run);
    for (events, want) in [
        (
            "PAPI_TOT_INS,PAPI_L2_LDM,PAPI_L2_STM",
            vec![t[0], t[1], t[2]],
        ),
        (
            "ownership,nack-retries,pipeline.load,read-exclusive",
            vec![t[3], t[4], t[5], t[2] - t[3]],
        ),
    ] {
        let mut a = vec!["stat", "-j", "-e", events, "--"];
        a.extend_from_slice(&run);
        let (c, out, e) = pmusim(&a);
        assert_eq!(c, 0, "{e}");
        let l = json_lines(&out);
        assert_eq!(l.len(), want.len(), "{out}");
        for (l, w) in l.iter().zip(want) {
            let v: f64 = l["counter-value"].as_str().unwrap().parse().unwrap();
            assert_eq!(l["exact"], w, "{l}");
            assert_eq!(l["pcnt-running"], 100.0, "{l}");
            let ev = l["event"].as_str().unwrap();
            if ev == "PAPI_TOT_INS" || ev.starts_with("pipeline.") {
                assert!(v <= w as f64 && v > w as f64 - 4.0 * 4.0, "{l}");
            } else {
                assert_eq!(v, w as f64, "{l}");
            }
        }
    }
}

/// Five requests on four counters: two groups multiplexed; the cycle counter counted while
/// programmed and scaled comes back near the run's monitor cycles, and a modifier is refused
/// by the card, exit 2 before any simulation (not silently counted on another monitor).
#[test]
fn numachine_multiplexes_and_refuses_modifiers() {
    let (c, out, e) = pmusim(&[
        "stat",
        "-j",
        "--mux-period",
        "10000",
        "-e",
        "PAPI_TOT_CYC,read,read-exclusive,ownership,always",
        "--",
        "fft",
        "-s",
        "test",
        "--procs",
        "4",
    ]);
    assert_eq!(c, 0, "{e}");
    let l = json_lines(&out);
    let pct = |i: usize| l[i]["pcnt-running"].as_f64().unwrap();
    assert!((pct(0) + pct(4) - 100.0).abs() <= 0.011, "{out}");
    for i in [0, 4] {
        let v: f64 = l[i]["counter-value"].as_str().unwrap().parse().unwrap();
        let x = l[i]["exact"].as_f64().unwrap();
        assert!((v - x).abs() / x < 0.01, "{}", l[i]);
    }
    let (c, out, e) = pmusim(&["stat", "-e", "PAPI_TOT_INS:u", "--", "fft", "-s", "test"]);
    assert_eq!(c, 2, "{e}");
    assert!(out.is_empty());
    assert!(
        e.contains("monitor `numachine` cannot restrict counting to user or supervisor state")
            && e.contains("power2"),
        "{e}"
    );
}

/// The UPC on Blue Gene/Q (no `--monitor`: the bgq machine's own): PAPI presets and `PEVT_*`
/// events summed over the 17 cores' UPC_P, against the ground truth of the same run with the
/// monitor attached. The counters start when UPC_C's start command takes effect (the chain's
/// start latency): counts may miss what the cores did before, at most 100 cycles' worth a core.
#[test]
fn upc_counts_equal_the_ground_truth() {
    let run = ["fft", "-m", "bgq", "-s", "test"];
    let (c, out, e) = pmusim(&[
        "stat",
        "-j",
        "-e",
        "PAPI_TOT_CYC,PAPI_TOT_INS,PAPI_L1_ICM,PEVT_LSU_MISS_NACKED,PEVT_INST_QFPU_ALL,PAPI_L1_DCM",
        "--",
        "fft",
        "-m",
        "bgq",
        "-s",
        "test",
    ]);
    assert_eq!(c, 0, "{e}");
    let l = json_lines(&out);
    let mut a = vec!["run"];
    a.extend_from_slice(&run);
    a.extend_from_slice(&["--monitor", "upc", "--json"]);
    let (c, out, e) = pmusim(&a);
    assert_eq!(c, 0, "{e}");
    let d: serde_json::Value = serde_json::from_str(&out).unwrap();
    let p = d["ground_truth"]["processors"].as_array().unwrap();
    let cores = p.len() as u64;
    assert_eq!(cores, 17);
    let sum = |f: &dyn Fn(&serde_json::Value) -> u64| p.iter().map(f).sum::<u64>();
    let fp: u64 = sum(&|x| {
        x["instructions_by_op"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| k.starts_with("fp") || k.starts_with("qp"))
                    .map(|(_, v)| v.as_u64().unwrap())
                    .sum()
            })
            .unwrap_or(0)
    });
    let want = [
        cores * d["run"]["simulated_cycles"].as_u64().unwrap(),
        sum(&|x| x["instructions"].as_u64().unwrap()),
        sum(&|x| x["l1i"]["misses"].as_u64().unwrap()),
        sum(&|x| x["misses"]["nacks"].as_u64().unwrap()),
        fp,
        sum(&|x| x["l1d"]["misses"].as_u64().unwrap()),
    ];
    assert_eq!(l.len(), want.len(), "{l:?}");
    for (l, w) in l.iter().zip(want) {
        let v: f64 = l["counter-value"].as_str().unwrap().parse().unwrap();
        assert_eq!(l["exact"], w, "{l}");
        assert!(v <= w as f64 && w as f64 - v <= (100 * cores) as f64, "{l}");
    }
    // Exact where nothing happens before the start: L1 I misses, NACKs, FP.
    for i in [2, 3, 4] {
        assert_eq!(
            l[i]["counter-value"],
            format!("{}.000000", want[i]),
            "{}",
            l[i]
        );
    }
    let (c, out, e) = pmusim(&["stat", "-e", "PEVT_INST_ALL:k", "--", "fft", "-m", "bgq"]);
    assert_eq!(c, 2, "{e}");
    assert!(out.is_empty());
    assert!(e.contains("monitor `upc` cannot restrict"), "{e}");
}

/// `stat -j` lines as (event, value, exact).
fn stat_values(out: &str) -> Vec<(String, f64, Option<u64>)> {
    json_lines(out)
        .iter()
        .map(|l| {
            (
                l["event"].as_str().unwrap().to_string(),
                l["counter-value"].as_str().unwrap().parse().unwrap(),
                l["exact"].as_u64(),
            )
        })
        .collect()
}

/// FlashPoint's events are its records' fields, summed: each equals the FlashPoint report's
/// own total (`--monitor flashpoint --json`, the same FP-Proc run) and, for misses, cold and
/// invalidation misses, the ground truth exactly; the latency sum is in system cycles, the
/// exact one the ground truth's processor cycles over the clock ratio, and FlashPoint's
/// counter, stopping one system cycle earlier, is below it by about a cycle per miss.
#[test]
fn flashpoint_counts_equal_its_report_and_the_ground_truth() {
    let run = ["fft", "-m", "flash", "-s", "test"];
    let events = [
        ("fp.read-misses-local", "rd_miss_local"),
        ("fp.read-misses-remote", "rd_miss_remote"),
        ("fp.write-misses-local", "wr_miss_local"),
        ("fp.write-misses-remote", "wr_miss_remote"),
        ("fp.cold-misses", "cold"),
        ("fp.inval-misses", "inval_misses"),
        ("fp.invalidations", "invalidations"),
    ];
    let mut names: Vec<&str> = events.iter().map(|e| e.0).collect();
    names.extend(["fp.misses", "fp.latency", "fp.bin-commands"]);
    let list = names.join(",");
    let mut a = vec!["stat", "-j", "-e", &list, "--"];
    a.extend_from_slice(&run);
    let (c, out, e) = pmusim(&a);
    assert_eq!(c, 0, "{e}");
    let v = stat_values(&out);
    let mut r = vec!["run"];
    r.extend_from_slice(&run);
    r.extend_from_slice(&["--monitor", "flashpoint", "--json"]);
    let (c, doc, e) = pmusim(&r);
    assert_eq!(c, 0, "{e}");
    let d: serde_json::Value = serde_json::from_str(&doc).unwrap();
    let total = &d["monitors"]["flashpoint"]["total"];
    let p = d["ground_truth"]["processors"].as_array().unwrap();
    let gt = |k: &str| {
        p.iter()
            .map(|x| x["misses"][k].as_u64().unwrap())
            .sum::<u64>()
    };
    for (i, (ev, field)) in events.iter().enumerate() {
        assert_eq!(v[i].0, *ev);
        assert_eq!(v[i].1, total[field].as_u64().unwrap() as f64, "{ev}");
    }
    let truth = [
        gt("read_local"),
        gt("read_remote"),
        gt("write_local"),
        gt("write_remote"),
        gt("global_cold"),
        gt("coherence"),
    ];
    for (i, t) in truth.iter().enumerate() {
        assert_eq!(v[i].2, Some(*t), "{:?}", v[i]);
        assert_eq!(v[i].1, *t as f64, "{:?}", v[i]);
    }
    assert_eq!(v[6].2, Some(gt("invalidations")));
    let misses = truth[..4].iter().sum::<u64>();
    assert_eq!((v[7].1, v[7].2), (misses as f64, Some(misses)));
    let lat: u64 = [
        "read_latency_local_cycles",
        "read_latency_remote_cycles",
        "write_latency_local_cycles",
        "write_latency_remote_cycles",
    ]
    .iter()
    .map(|k| gt(k))
    .sum();
    let lat_fp: u64 = [
        "rd_lat_local",
        "rd_lat_remote",
        "wr_lat_local",
        "wr_lat_remote",
    ]
    .iter()
    .map(|k| total[k].as_u64().unwrap())
    .sum();
    assert_eq!(v[8].1, lat_fp as f64);
    // flash: 10 ns system cycles, 5 ns processor cycles.
    let exact = v[8].2.unwrap();
    assert_eq!(exact, (lat as f64 / 2.0).round() as u64);
    let below = exact as f64 - v[8].1;
    assert!(
        below > 0.5 * misses as f64 && below < 1.5 * misses as f64,
        "{below} for {misses} misses"
    );
    assert_eq!((v[9].1, v[9].2), (0.0, None), "FFT bins nothing by command");
}

/// The memory controller's events: the request tally the monitor keeps equals the buffer's
/// statistics, and the DRAM transactions the buffer issued equal the DRAM banks' counts, the
/// ground truth of a plain run (stat attaches no tuning loop, so the run is the same).
#[test]
fn memctl_counts_equal_the_ground_truth() {
    let ev = "memctl.dram-writes,memctl.dram-reads,memctl.writes,memctl.reads,memctl.write-buffer-hits,memctl.read-buffer-hits,memctl.read-merges";
    let (c, out, e) = pmusim(&[
        "stat", "-j", "-e", ev, "--", "fft", "-m", "elan", "-s", "test",
    ]);
    assert_eq!(c, 0, "{e}");
    let v = stat_values(&out);
    let (c, doc, e) = pmusim(&["run", "fft", "-m", "elan", "-s", "test", "--json"]);
    assert_eq!(c, 0, "{e}");
    let d: serde_json::Value = serde_json::from_str(&doc).unwrap();
    let ctl = d["ground_truth"]["memory_controllers"].as_array().unwrap();
    let sum = |a: &str, b: &str| ctl.iter().map(|c| c[a][b].as_u64().unwrap()).sum::<u64>();
    let want = [
        sum("dram", "writes"),
        sum("dram", "reads"),
        sum("buffer", "writes"),
        sum("buffer", "reads"),
        sum("buffer", "write_hits"),
        sum("buffer", "read_buffer_hits"),
        sum("buffer", "read_merges"),
    ];
    assert!(want[0] > 100_000, "{want:?}");
    for (x, w) in v.iter().zip(want) {
        assert_eq!((x.1, x.2), (w as f64, Some(w)), "{x:?}");
    }
}

/// The Addies' events are estimated counts (readings integrated over their windows) beside
/// the buffer's exact counts: within 2 % on FFT's steady streams (read-buffer hits +1.17 %
/// since FFT calls `BitReverse` per element, as SPLASH-2's `fft.C`; -0.84 % before); four
/// inputs on two Addies are multiplexed.
#[test]
fn addie_estimates_beside_the_exact_counts() {
    let run = ["--", "fft", "-m", "elan", "-s", "test"];
    let mut a = vec!["stat", "-j", "-e", "addie.wb-hit,addie.rb-hit"];
    a.extend_from_slice(&run);
    let (c, out, e) = pmusim(&a);
    assert_eq!(c, 0, "{e}");
    let v = stat_values(&out);
    let (c, doc, e) = pmusim(&["run", "fft", "-m", "elan", "-s", "test", "--json"]);
    assert_eq!(c, 0, "{e}");
    let d: serde_json::Value = serde_json::from_str(&doc).unwrap();
    let b = &d["ground_truth"]["memory_controllers"][0]["buffer"];
    for (x, k) in v.iter().zip(["write_hits", "read_buffer_hits"]) {
        let w = b[k].as_u64().unwrap();
        assert_eq!(x.2, Some(w));
        assert!(
            (x.1 - w as f64).abs() < 0.02 * w as f64,
            "{x:?} against {w}"
        );
    }
    let mut a = vec![
        "stat",
        "-j",
        "-e",
        "addie.wb-hit,addie.rb-hit,addie.read-merge,addie.wb-full",
    ];
    a.extend_from_slice(&run);
    let (c, out, e) = pmusim(&a);
    assert_eq!(c, 0, "{e}");
    let l = json_lines(&out);
    assert_eq!(l.len(), 4);
    assert!(
        l.iter().all(|x| x["pcnt-running"].as_f64().unwrap() < 60.0),
        "{out}"
    );
}

/// FlashPoint, memctl and Addie list their events; the UPC lists its L2 slice events.
#[test]
fn every_counting_monitor_lists_its_events() {
    let (c, out, e) = pmusim(&["list", "events", "--json"]);
    assert_eq!(c, 0, "{e}");
    let d: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ev = d["events"].as_array().unwrap();
    let of = |m: &str| ev.iter().filter(|e| e["monitor"] == m).count();
    assert_eq!(of("flashpoint"), 19);
    assert_eq!(of("memctl"), 15);
    assert_eq!(of("addie"), 4);
    let l2 = |n: &str| ev.iter().any(|e| e["monitor"] == "upc" && e["name"] == n);
    assert!(l2("PEVT_L2_HITS") && l2("l2.read") && !l2("PEVT_L2_SPEC_RETRY"));
    let (c, out, _) = pmusim(&["stat", "-e", "list"]);
    assert_eq!(c, 0);
    assert!(out.contains("fp.misses") && out.contains("memctl.dram-writes"));
    assert!(out.contains("addie.rb-hit"));
}

/// UPC_L2 slice events: one counter per slice, summed, equal to the sum of the UPC report's
/// per-slice counters and to the ground truth's L2 events (the hits of FFT all fall after
/// UPC_C's start); beside UPC_P events in one group (separate counters), and a 17th L2
/// event makes a second group.
#[test]
fn upc_l2_slice_events_sum_to_the_exact_count() {
    let (c, out, e) = pmusim(&[
        "stat",
        "-j",
        "-e",
        "PEVT_L2_HITS,l2.invalidate-sent,PAPI_TOT_INS",
        "--",
        "fft",
        "-m",
        "bgq",
        "-s",
        "test",
    ]);
    assert_eq!(c, 0, "{e}");
    let v = stat_values(&out);
    let (c, doc, e) = pmusim(&[
        "run",
        "fft",
        "-m",
        "bgq",
        "-s",
        "test",
        "--monitor",
        "upc",
        "--json",
    ]);
    assert_eq!(c, 0, "{e}");
    let d: serde_json::Value = serde_json::from_str(&doc).unwrap();
    let slices: Vec<&serde_json::Value> = d["monitors"]["upc"]["counters"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["event"] == "PEVT_L2_HITS_SLICE")
        .collect();
    assert_eq!(slices.len(), 16);
    let count: u64 = slices.iter().map(|x| x["count"].as_u64().unwrap()).sum();
    let exact: u64 = slices.iter().map(|x| x["exact"].as_u64().unwrap()).sum();
    assert!(count > 100_000, "{count}");
    assert_eq!((v[0].1, v[0].2), (count as f64, Some(exact)));
    assert_eq!(count, exact);
    assert_eq!(v[1].1 as u64, v[1].2.unwrap(), "{:?}", v[1]);
    assert!(v[1].1 > 1000.0);
    assert!(json_lines(&out).iter().all(|l| l["pcnt-running"] == 100.0));
    let many: Vec<String> = (0..17).map(|_| "PEVT_L2_HITS".to_string()).collect();
    let many = many.join(",");
    let (c, out, e) = pmusim(&["stat", "-e", &many, "--", "fft", "-m", "bgq", "-s", "test"]);
    assert_eq!(c, 0, "{e}");
    assert!(out.contains("2 groups multiplexed"), "{out}");
}
