//! `--serve ADDR` (issue 17 item 7): the metrics endpoint is scraped during a run, follows
//! Prometheus's text conventions, and its last scrape equals the run's JSON document.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};

fn scrape(addr: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
        .ok()?;
    let mut r = String::new();
    s.read_to_string(&mut r).ok()?;
    let (head, body) = r.split_once("\r\n\r\n")?;
    head.starts_with("HTTP/1.").then_some(())?;
    head.contains(" 200 ").then(|| body.to_string())
}

/// `name{labels} value` lines as a map.
fn samples(body: &str) -> BTreeMap<String, f64> {
    body.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| {
            let (k, v) = l.rsplit_once(' ').unwrap();
            (k.to_string(), v.parse().unwrap())
        })
        .collect()
}

#[test]
fn last_scrape_equals_the_json_document() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let out = std::env::temp_dir().join(format!("pmusim-serve-{}.json", std::process::id()));
    let mut child = Command::new(env!("CARGO_BIN_EXE_pmusim"))
        .args([
            "run",
            "fft",
            "-s",
            "small",
            "--procs",
            "4",
            "--json",
            "--serve",
            &addr,
            "--serve-interval",
            "20000",
            "--serve-linger",
            "30",
        ])
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut scrapes = Vec::new();
    let t0 = std::time::Instant::now();
    loop {
        match scrape(&addr) {
            Some(b) => scrapes.push(b),
            None if child.try_wait().unwrap().is_some() => break,
            None => {}
        }
        assert!(t0.elapsed().as_secs() < 300, "the run did not end");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(child.wait().unwrap().success());
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    std::fs::remove_file(&out).unwrap();
    let last = samples(scrapes.last().expect("scraped at least once"));
    let cycles = doc["run"]["simulated_cycles"].as_u64().unwrap() as f64;
    assert_eq!(last["pmusim_simulated_processor_cycles_total"], cycles);
    assert_eq!(
        last["pmusim_references_total"],
        doc["run"]["references"].as_u64().unwrap() as f64
    );
    // Scrapes during the run saw it progress (published values, then the final ones).
    let seen: Vec<f64> = scrapes
        .iter()
        .filter(|b| !b.is_empty())
        .map(|b| samples(b)["pmusim_simulated_processor_cycles_total"])
        .collect();
    assert!(seen.windows(2).all(|w| w[0] <= w[1]));
    assert!(seen.iter().any(|&c| c < cycles), "a scrape during the run");
    let gt = &doc["ground_truth"];
    for p in gt["processors"].as_array().unwrap() {
        let i = p["proc"].as_u64().unwrap();
        for (metric, v) in [
            ("instructions", &p["instructions"]),
            ("processor_cycles", &p["cycles"]),
            ("references", &p["references"]),
            ("l1d_misses", &p["l1d"]["misses"]),
            ("l2_misses", &p["l2"]["misses"]),
        ] {
            let k = format!("pmusim_processor_{metric}_total{{processor=\"{i}\"}}");
            assert_eq!(last[&k], v.as_u64().unwrap() as f64, "{k}");
        }
    }
    for kind in ["read_local", "read_remote", "write_local", "write_remote"] {
        let n = gt["latency_cycles"][kind]["count"].as_u64().unwrap() as f64;
        let h = "pmusim_miss_latency_processor_cycles";
        assert_eq!(last[&format!("{h}_count{{kind=\"{kind}\"}}")], n, "{kind}");
        assert_eq!(
            last[&format!("{h}_bucket{{kind=\"{kind}\",le=\"+Inf\"}}")],
            n,
            "{kind}"
        );
        let mean = gt["latency_cycles"][kind]["mean"].as_f64().unwrap();
        let sum = last[&format!("{h}_sum{{kind=\"{kind}\"}}")];
        assert!((sum - mean * n).abs() <= 1e-6 * sum.max(1.0), "{kind}");
        // Cumulative buckets.
        let b: Vec<f64> = last
            .iter()
            .filter(|(k, _)| k.starts_with(&format!("{h}_bucket{{kind=\"{kind}\"")))
            .map(|(_, v)| *v)
            .collect();
        assert!(b.iter().all(|&x| x <= n));
    }
    // Conventions: counters end in _total and have TYPE lines; no address label.
    let body = scrapes.last().unwrap();
    for l in body.lines().filter(|l| l.starts_with("# TYPE")) {
        let f: Vec<&str> = l.split(' ').collect();
        if f[3] == "counter" {
            assert!(f[2].ends_with("_total"), "{l}");
        }
    }
    assert!(!body.contains("addr"), "no per-address labels");
}

/// Runs `args` with `--json --serve` on a free port, scraping until the run ends: the last
/// scrape's samples and the run's JSON document.
fn serve_run(args: &[&str]) -> (BTreeMap<String, f64>, serde_json::Value) {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let out = std::env::temp_dir().join(format!("pmusim-serve-{}-{port}.json", std::process::id()));
    let mut a = vec!["run"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["--json", "--serve", &addr, "--serve-linger", "30"]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_pmusim"))
        .args(&a)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut last = None;
    let t0 = std::time::Instant::now();
    loop {
        match scrape(&addr) {
            Some(b) if !b.is_empty() => last = Some(b),
            None if child.try_wait().unwrap().is_some() => break,
            _ => {}
        }
        assert!(t0.elapsed().as_secs() < 300, "the run did not end");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(child.wait().unwrap().success());
    let doc = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    std::fs::remove_file(&out).unwrap();
    (samples(&last.expect("scraped at least once")), doc)
}

/// The attached monitor's own counters are exported (monitor, event, cpu, counter labels),
/// and the last scrape equals the counters of the run's report: NUMAchine's four counters per
/// card (the 32-bit register with its wraps, the prescaled pipeline counter x4) and POWER2's
/// 22 per processor.
#[test]
fn monitor_counters_equal_the_report() {
    let (last, doc) = serve_run(&[
        "fft",
        "-s",
        "test",
        "--procs",
        "4",
        "--monitor",
        "numachine",
    ]);
    let cards = doc["monitors"]["numachine"]["cards"].as_array().unwrap();
    assert_eq!(cards.len(), 4);
    let mut n = 0;
    for c in cards {
        let p = c["proc"].as_u64().unwrap();
        for g in c["counters"].as_array().unwrap() {
            let v = g["value"].as_u64().unwrap() + (g["wraps"].as_u64().unwrap() << 32);
            let v = if g["event"] == "pipeline" { v * 4 } else { v };
            let k = format!(
                "pmusim_monitor_events_total{{monitor=\"numachine\",event=\"{}\",cpu=\"{p}\",counter=\"{}\"}}",
                g["label"].as_str().unwrap(),
                g["counter"]
            );
            assert_eq!(last.get(&k), Some(&(v as f64)), "{k}");
            n += 1;
        }
    }
    assert_eq!(n, 16);
    assert!(
        last.iter()
            .filter(|(k, _)| k.starts_with("pmusim_monitor_events_total{"))
            .count()
            == 16
    );

    let (last, doc) = serve_run(&["fft", "-m", "power2", "-s", "test", "--monitor", "power2"]);
    let procs = doc["monitors"]["power2"]["procs"].as_array().unwrap();
    let mut n = 0;
    for (p, x) in procs.iter().enumerate() {
        for c in x["counters"].as_array().unwrap() {
            let k = format!(
                "pmusim_monitor_events_total{{monitor=\"power2\",event=\"{}\",cpu=\"{p}\",counter=\"{}\"}}",
                c["event"].as_str().unwrap(),
                c["counter"]
            );
            assert_eq!(last.get(&k), Some(&c["count"].as_f64().unwrap()), "{k}");
            n += 1;
        }
    }
    assert_eq!(n, 22 * procs.len());
}

#[test]
fn a_bad_address_is_refused_before_the_run() {
    let out = Command::new(env!("CARGO_BIN_EXE_pmusim"))
        .args(["run", "fft", "-s", "test", "--serve", "256.0.0.1:1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let e = String::from_utf8_lossy(&out.stderr);
    assert!(
        e.contains("--serve 256.0.0.1:1: cannot listen there"),
        "{e}"
    );
    assert!(out.stdout.is_empty());
}

/// FlashPoint's records and the memory controllers' status counters are exported per
/// processor and per controller; the last scrape sums to the report's totals and the ground
/// truth's DRAM transactions.
#[test]
fn flashpoint_and_memctl_series_equal_the_json() {
    let (last, doc) = serve_run(&[
        "fft",
        "-m",
        "flash",
        "-s",
        "test",
        "--monitor",
        "flashpoint",
    ]);
    let sum = |m: &str, ev: &str| -> f64 {
        last.iter()
            .filter(|(k, _)| {
                k.starts_with(&format!(
                    "pmusim_monitor_events_total{{monitor=\"{m}\",event=\"{ev}\","
                ))
            })
            .map(|x| x.1)
            .sum()
    };
    let total = &doc["monitors"]["flashpoint"]["total"];
    let t = |k: &str| total[k].as_f64().unwrap();
    assert_eq!(
        sum("flashpoint", "fp.misses"),
        t("rd_miss_local") + t("rd_miss_remote") + t("wr_miss_local") + t("wr_miss_remote")
    );
    assert_eq!(sum("flashpoint", "fp.cold-misses"), t("cold"));
    assert!(last.contains_key(
        "pmusim_monitor_events_total{monitor=\"flashpoint\",event=\"fp.misses\",cpu=\"15\",counter=\"6\"}"
    ));
    let (last, doc) = serve_run(&["fft", "-m", "elan", "-s", "test", "--monitor", "memctl"]);
    let dram = &doc["ground_truth"]["memory_controllers"][0]["dram"];
    let k = |ev: &str| {
        format!(
            "pmusim_monitor_events_total{{monitor=\"memctl\",event=\"{ev}\",unit=\"controller-0\",counter=\"{}\"}}",
            if ev == "memctl.dram-reads" { 8 } else { 9 }
        )
    };
    assert_eq!(
        last.get(&k("memctl.dram-writes")),
        dram["writes"].as_f64().as_ref()
    );
    assert_eq!(
        last.get(&k("memctl.dram-reads")),
        dram["reads"].as_f64().as_ref()
    );
}
