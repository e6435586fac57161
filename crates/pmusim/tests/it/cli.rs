//! The command line as a user sees it: outputs, determinism, errors and exit codes.

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

fn without_wall_clock(mut v: serde_json::Value) -> serde_json::Value {
    let run = v["run"].as_object_mut().unwrap();
    run.remove("wall_seconds");
    run.remove("references_per_second");
    v
}

#[test]
fn json_has_the_documented_keys_and_is_deterministic() {
    let args = [
        "run",
        "migratory",
        "--machine",
        "ideal",
        "--procs",
        "4",
        "--size",
        "test",
        "--json",
    ];
    let (c1, o1, e1) = pmusim(&args);
    assert_eq!(c1, 0, "{e1}");
    let (_, o2, _) = pmusim(&args);
    let a: serde_json::Value = serde_json::from_str(&o1).unwrap();
    let b: serde_json::Value = serde_json::from_str(&o2).unwrap();
    for k in ["machine", "workload", "ground_truth", "monitors", "run"] {
        assert!(a.get(k).is_some(), "missing key {k}");
    }
    for k in ["simulated_cycles", "references", "wall_seconds"] {
        assert!(a["run"].get(k).is_some(), "missing run.{k}");
    }
    assert_eq!(a["workload"]["verified"], true);
    assert!(a["run"]["references"].as_u64().unwrap() > 10_000);
    assert_eq!(without_wall_clock(a.clone()), without_wall_clock(b));
    // A different seed changes the run (back-off and replacement draw from the generator).
    let (_, o3, _) = pmusim(&[
        "run",
        "migratory",
        "--machine",
        "ideal",
        "--procs",
        "4",
        "--size",
        "test",
        "--json",
        "--seed",
        "9",
    ]);
    let c: serde_json::Value = serde_json::from_str(&o3).unwrap();
    assert_ne!(a["run"]["simulated_cycles"], c["run"]["simulated_cycles"]);
}

#[test]
fn bad_flags_and_presets_get_clear_errors() {
    let (c, _, e) = pmusim(&["run", "no-such-kernel", "--machine", "ideal"]);
    assert_eq!(c, 2);
    assert!(
        e.contains("unknown workload `no-such-kernel`") && e.contains("false-sharing"),
        "{e}"
    );
    let (c, _, e) = pmusim(&["run", "lock", "--machine", "nosuch"]);
    assert_eq!(c, 2);
    assert!(e.contains("unknown machine `nosuch`"), "{e}");
    let (c, _, e) = pmusim(&["run", "lock", "--machine", "ideal", "--size", "huge"]);
    assert_eq!(c, 2);
    assert!(e.contains("unknown size `huge`"), "{e}");
    let (c, _, e) = pmusim(&["run", "lock", "--machine", "ideal", "--procs", "0"]);
    assert_eq!(c, 2);
    assert!(
        e.contains("--procs 0") && e.contains("procs: must be at least 1"),
        "{e}"
    );
    let (c, _, _) = pmusim(&["run", "--bogus-flag"]);
    assert_eq!(c, 2, "clap rejects unknown flags with exit code 2");

    let dir = std::env::temp_dir().join(format!("pmusim-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../presets/ideal.toml"
    ))
    .unwrap();
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        text.replace("size_bytes = 1048576", "size_bytes = 1000000"),
    )
    .unwrap();
    let (c, _, e) = pmusim(&["run", "lock", "--machine", bad.to_str().unwrap()]);
    assert_eq!(c, 2);
    assert!(
        e.contains("caches.l2.size_bytes") && e.contains("power of two"),
        "{e}"
    );
    let typo = dir.join("typo.toml");
    std::fs::write(&typo, text.replace("[cpu]", "[cpu]\nfp_slip = 3")).unwrap();
    let (c, _, e) = pmusim(&["run", "lock", "--machine", typo.to_str().unwrap()]);
    assert_eq!(c, 2);
    assert!(e.contains("fp_slip") && e.contains("typo.toml"), "{e}");
    let (c, _, e) = pmusim(&["run", "lock", "--machine", "/nonexistent/x.toml"]);
    assert_eq!(c, 2);
    assert!(e.contains("cannot read machine preset"), "{e}");
}

#[test]
fn test_protocol_reports_races_and_catches_a_broken_protocol() {
    let (c, o, e) = pmusim(&[
        "test-protocol",
        "--machine",
        "ideal",
        "--procs",
        "8",
        "--ops",
        "20000",
        "--lines",
        "4",
    ]);
    assert_eq!(c, 0, "{o}{e}");
    assert!(o.contains("0 violations"), "{o}");
    assert!(
        o.contains("20000 operations") || o.contains("20008 operations"),
        "{o}"
    );
    let (c, o, _) = pmusim(&[
        "test-protocol",
        "--machine",
        "ideal",
        "--procs",
        "4",
        "--ops",
        "20000",
        "--lines",
        "2",
        "--inject-fault",
        "drop-invalidation",
    ]);
    assert_eq!(c, 1, "{o}");
    assert!(
        o.contains("violated") && o.contains("replay: pmusim test-protocol"),
        "{o}"
    );
}

/// The registry lists both monitors (text and JSON); `--monitor NAME,NAME` attaches both
/// where both fit the machine, each with the same section it has alone, and refuses unknown or
/// repeated names and misfits with exit 2 and a message naming the known monitors.
#[test]
fn monitors_are_listed_and_combined() {
    let (c, o, _) = pmusim(&["list", "monitors"]);
    assert_eq!(c, 0);
    assert!(o.lines().any(|l| l.starts_with("numachine ")), "{o}");
    assert!(o.lines().any(|l| l.starts_with("flashpoint ")), "{o}");
    let (c, o, _) = pmusim(&["list", "monitors", "--json"]);
    assert_eq!(c, 0);
    let doc: serde_json::Value = serde_json::from_str(&o).unwrap();
    assert_eq!(doc["schema"], "pmusim.list-monitors/1");
    let l = &doc["monitors"];
    let names: Vec<&str> = l
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "numachine",
            "flashpoint",
            "addie",
            "memctl",
            "power2",
            "upc",
            "c2c"
        ]
    );
    assert_eq!(l[2]["study"], true);
    assert_eq!(l[1]["study"], true);
    assert_eq!(l[4]["study"], true);
    assert!(l[1]["flags"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f == "--protocol"));

    // Both on flash: each section equals the one it has alone.
    let base = [
        "run", "fft", "-m", "flash", "-s", "test", "-p", "4", "--json",
    ];
    let run = |extra: &[&str]| {
        let (c, o, e) = pmusim(&[&base[..], extra].concat());
        assert_eq!(c, 0, "{extra:?}: {e}");
        serde_json::from_str::<serde_json::Value>(&o).unwrap()
    };
    let both = run(&["--monitor", "numachine,flashpoint"]);
    let mons = both["monitors"].as_object().unwrap();
    assert_eq!(mons.len(), 2);
    assert_eq!(mons["numachine"]["cards"].as_array().unwrap().len(), 4);
    let nm = run(&["--monitor", "numachine", "--protocol", "fp-proc"]);
    assert_eq!(mons["numachine"], nm["monitors"]["numachine"]);
    let fp = run(&["--monitor", "flashpoint"]);
    assert_eq!(mons["flashpoint"], fp["monitors"]["flashpoint"]);
    let (c, o, e) = pmusim(&["report", "fft", "-s", "test", "-p", "4", "--format", "json"]);
    assert_eq!(c, 0, "{e}");
    let rep: serde_json::Value = serde_json::from_str(&o).unwrap();
    // `report` keeps the categories of `--by` (default data,proc) and names the run.
    assert!(rep.get("by_proc").is_some() && rep.get("by_proc_data").is_none());
    assert_eq!(rep["workload"], "fft (test size)");
    assert_eq!(rep["procs"], 4);
    let (c, o, e) = pmusim(&[
        "report",
        "fft",
        "-s",
        "test",
        "-p",
        "4",
        "--format",
        "json",
        "--by",
        "data,proc,proc-data",
    ]);
    assert_eq!(c, 0, "{e}");
    let mut rep: serde_json::Value = serde_json::from_str(&o).unwrap();
    let schema = rep.as_object_mut().unwrap().remove("schema");
    assert_eq!(schema.unwrap(), "pmusim.flashpoint-report/1");
    rep.as_object_mut().unwrap().remove("workload");
    assert_eq!(
        mons["flashpoint"], rep,
        "the section is `report --format json --by data,proc,proc-data` without its schema and workload keys"
    );
    // Every recorded miss is in one data bin.
    let t = &rep["total"];
    let total: u64 = [
        "rd_miss_local",
        "rd_miss_remote",
        "wr_miss_local",
        "wr_miss_remote",
    ]
    .iter()
    .map(|k| t[k].as_u64().unwrap())
    .sum();
    let by_data: u64 = rep["by_data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["misses"].as_u64().unwrap())
        .sum();
    assert!(total > 0);
    assert_eq!(by_data, total, "{rep}");
    // Selected by its old flag only, FlashPoint adds no section (the documents stay as before).
    let old = run(&["--protocol", "fp-proc"]);
    assert_eq!(old["monitors"], serde_json::json!({}));

    let refused = |args: &[&str], want: &[&str]| {
        let (c, _, e) = pmusim(args);
        assert_eq!(c, 2, "{args:?}: {e}");
        for w in want {
            assert!(e.contains(w), "{args:?}: `{w}` not in {e}");
        }
    };
    let test = ["run", "fft", "-s", "test", "-p", "4"];
    refused(
        &[&test[..], &["--monitor", "numachine,flashpoint"]].concat(),
        &["flashpoint", "has no FLASH memory system"],
    );
    refused(
        &[&test[..], &["--monitor", "numachine,bogus"]].concat(),
        &["unknown monitor `bogus`", "numachine, flashpoint"],
    );
    refused(
        &[&test[..], &["--monitor", "numachine,numachine"]].concat(),
        &["named twice"],
    );
    refused(&["study", "numachine"], &["has no study", "flashpoint"]);
    refused(
        &["study", "bogus"],
        &["unknown study `bogus`", "imr, marking, marking-matrix"],
    );
    refused(
        &["study", "imr", "-s", "test", "--kernels", "radix,nosuch"],
        &["study imr: --kernels", "nosuch"],
    );

    // A configuration file names its monitor (default numachine).
    let dir = std::env::temp_dir().join(format!("pmusim-mon-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    };
    let bogus = file("bogus.toml", "monitor = \"bogus\"\n");
    refused(
        &[&test[..], &["--monitor", &bogus]].concat(),
        &["unknown monitor `bogus`", "numachine, flashpoint"],
    );
    let fpf = file("fp.toml", "monitor = \"flashpoint\"\n");
    refused(
        &[&test[..], &["--monitor", &fpf]].concat(),
        &["takes no configuration file"],
    );
    let nmf = file(
        "nm.toml",
        "monitor = \"numachine\"\nname = \"named\"\n[[counter]]\npapi = \"PAPI_L2_LDM\"\n",
    );
    let (c, o, e) = pmusim(&[&test[..], &["--monitor", &nmf, "--json"]].concat());
    assert_eq!(c, 0, "{e}");
    let j: serde_json::Value = serde_json::from_str(&o).unwrap();
    assert_eq!(j["monitors"]["numachine"]["config"], "named");
    // Counter 0 counts cache-line reads: the ground truth's reads of processor 0.
    assert_eq!(
        j["monitors"]["numachine"]["cards"][0]["counters"][0]["value"],
        j["monitors"]["numachine"]["cards"][0]["counters"][0]["exact"]["value"]
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn lists_show_machines_and_workloads() {
    let (c, o, _) = pmusim(&["list", "machines"]);
    assert_eq!(c, 0);
    for m in ["numachine", "flash", "ideal"] {
        assert!(o.contains(m), "{o}");
    }
    // Cachegrind's hierarchy (issue 19, cg19): its L1s and its non-inclusive LL, shared.
    let line = o.lines().find(|l| l.starts_with("cachegrind ")).expect(&o);
    assert!(
        line.contains("L2 8192 KiB 16-way 64 B lines shared/1"),
        "{line}"
    );
    let (c, o, _) = pmusim(&["list", "workloads"]);
    assert_eq!(c, 0);
    for w in [
        "false-sharing",
        "producer-consumer",
        "lock",
        "migratory",
        "stream",
        "pointer-chase",
    ] {
        assert!(o.contains(w), "{o}");
    }
}

#[test]
fn report_ranks_fft_data_structures_and_procedures() {
    let (c, o, e) = pmusim(&[
        "report",
        "fft",
        "--by",
        "data,proc",
        "-s",
        "test",
        "-p",
        "16",
    ]);
    assert_eq!(c, 0, "{e}");
    let data = o.split("by procedure").next().unwrap();
    let top: Vec<&str> = data
        .lines()
        .skip_while(|l| !l.starts_with("----"))
        .skip(1)
        .take(2)
        .map(|l| l.split_whitespace().next().unwrap_or(""))
        .collect();
    let mut sorted = top.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        vec!["trans", "x"],
        "FFT's two top bins, as in the paper's Table 3:\n{o}"
    );
    assert!(o.contains("Transpose"), "{o}");
}

#[test]
fn trace_convert_of_saved_lackey_text_and_its_errors() {
    let dir = std::env::temp_dir().join(format!("pmusim-cli-convert-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let text = dir.join("t.lackey");
    std::fs::write(
        &text,
        "==7== Lackey, an example Valgrind tool\nI  04001090,3\n S 1ffefffd48,8\nI  04001093,5\n M 00404020,2\nI  04001098,4\n",
    )
    .unwrap();
    let out = dir.join("t.pmt");
    let convert = || {
        pmusim(&[
            "trace",
            "convert",
            text.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ])
    };
    let (c, _, e) = convert();
    assert_eq!(c, 0, "{e}");
    assert!(e.contains("2 references"), "{e}");
    let (c, o, e) = pmusim(&["trace", "info", out.to_str().unwrap()]);
    assert_eq!(c, 0, "{e}");
    assert!(
        o.contains("references:   2 (loads 0, stores 1, modifies 1)"),
        "{o}"
    );
    let (c, o, e) = pmusim(&["trace", "info", out.to_str().unwrap(), "--json"]);
    assert_eq!(c, 0, "{e}");
    let v: serde_json::Value = serde_json::from_str(&o).unwrap();
    assert_eq!(v["schema"], "pmusim.trace-info/1");
    assert_eq!(v["references"], 2);
    assert_eq!(v["header"]["tracer"], "lackey");
    let t = &v["threads"][0];
    assert_eq!(
        (
            t["loads"].as_u64(),
            t["stores"].as_u64(),
            t["modifies"].as_u64()
        ),
        (Some(0), Some(1), Some(1))
    );
    // A malformed line: the error names the file and the line.
    std::fs::write(&text, "I  04001090,3\n S 1ffefffd48,8\n Q 10,4\n").unwrap();
    let (c, _, e) = convert();
    assert_eq!(c, 2);
    assert!(e.contains("t.lackey:3: unknown line"), "{e}");
    // A corrupt record inside a chunk (found during the replay): bad input, with its place.
    std::fs::write(&text, "I  04001090,3\n S 1ffefffd48,8\n").unwrap();
    let (c, _, e) = convert();
    assert_eq!(c, 0, "{e}");
    let mut f = std::fs::read(&out).unwrap();
    let hlen = u32::from_le_bytes(f[10..14].try_into().unwrap()) as usize;
    let chunk = 14 + hlen;
    let clen = u32::from_le_bytes(f[chunk + 5..chunk + 9].try_into().unwrap()) as usize;
    let rlen = u32::from_le_bytes(f[chunk + 9..chunk + 13].try_into().unwrap()) as usize;
    // A chunk this small is stored as a raw zstd block: its records are the frame's last bytes.
    let tag = chunk + 21 + clen - rlen;
    assert_eq!(f[tag], 1 | 4 << 3, "the store's tag");
    f[tag] = 0xc1;
    std::fs::write(&out, &f).unwrap();
    let target = format!("trace:{}", out.display());
    for extra in [None, Some("--no-decode-thread")] {
        let mut args = vec!["run", target.as_str(), "-m", "ideal", "-p", "1"];
        args.extend(extra);
        let (c, _, e) = pmusim(&args);
        assert_eq!(c, 2, "{e}");
        assert!(
            e.contains("chunk 0") && e.contains("record byte 0") && e.contains("reserved bits"),
            "{e}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Reads a CSV written by `--csv` into rows of fields (handles the quoted fields it writes).
fn read_csv(path: &std::path::Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .map(|l| {
            let mut fields = vec![String::new()];
            let mut quoted = false;
            let mut chars = l.chars().peekable();
            while let Some(c) = chars.next() {
                match c {
                    '"' if quoted && chars.peek() == Some(&'"') => {
                        fields.last_mut().unwrap().push('"');
                        chars.next();
                    }
                    '"' => quoted = !quoted,
                    ',' if !quoted => fields.push(String::new()),
                    c => fields.last_mut().unwrap().push(c),
                }
            }
            fields
        })
        .collect()
}

/// `--csv DIR` writes the monitor's tables with the same values as the JSON: every counter of
/// every card, every SRAM word, the latency statistics, the estimators and the queues.
#[test]
fn monitor_csv_tables_match_the_json() {
    let dir = std::env::temp_dir().join(format!("pmusim-csv-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let d = dir.to_str().unwrap();
    let (c, o, e) = pmusim(&[
        "run",
        "false-sharing",
        "-s",
        "test",
        "-p",
        "4",
        "--monitor",
        "numachine",
        "--json",
        "--csv",
        d,
    ]);
    assert_eq!(c, 0, "{e}");
    // The run's 7 tables and the monitor's 10.
    assert!(e.contains("wrote 17 CSV files"), "{e}");
    let j: serde_json::Value = serde_json::from_str(&o).unwrap();
    let n = &j["monitors"]["numachine"];

    // Counters in two files by what they count: events (the register, then the value) and
    // cycles (the value is the register); every counter of every card, then machine-wide.
    let events = read_csv(&dir.join("numachine_counters.csv"));
    let cycles = read_csv(&dir.join("numachine_cycle_counters.csv"));
    assert_eq!(events[0][4], "register (count)");
    assert_eq!(cycles[0][5], "cycles (monitor cycles)");
    let rows: Vec<(&Vec<String>, usize)> = events[1..]
        .iter()
        .map(|r| (r, 4))
        .chain(cycles[1..].iter().map(|r| (r, 5)))
        .collect();
    assert_eq!(rows.len(), 4 * 4 + 4, "4 cards x 4 counters + machine-wide");
    for (r, value) in rows {
        let i: usize = r[1].parse().unwrap();
        let exact = |k: &serde_json::Value| match &k["exact"] {
            serde_json::Value::Null => String::new(),
            serde_json::Value::Object(o) => o["value"].to_string(),
            x => x.to_string(),
        };
        let k = if r[0] == "all" {
            &n["machine_wide"][i]
        } else {
            &n["cards"][r[0].parse::<usize>().unwrap()]["counters"][i]
        };
        assert_eq!(r[value], k["value"].to_string(), "{r:?}");
        if r[3] != "nothing" {
            assert_eq!(r[value + if value == 4 { 3 } else { 1 }], exact(k), "{r:?}");
        }
    }

    let sram = read_csv(&dir.join("numachine_sram.csv"));
    let words: usize = n["cards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["sram"]["nonzero"].as_array().unwrap().len())
        .sum();
    assert_eq!(sram.len(), 1 + words);
    for r in &sram[1..] {
        let p: usize = r[0].parse().unwrap();
        // The address as "0x0016 (22)".
        let a = r[1].split(['(', ')']).nth(1).unwrap();
        let w = n["cards"][p]["sram"]["nonzero"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w[0].as_u64().map(|a| a.to_string()).as_deref() == Some(a))
            .unwrap_or_else(|| panic!("card {p} word {}", r[1]));
        assert_eq!(r[2], w[1].to_string());
    }

    let lat = read_csv(&dir.join("numachine_latency.csv"));
    let hs = n["latency_histograms"].as_array().unwrap();
    assert_eq!(lat.len(), 1 + hs.len());
    for (r, h) in lat[1..].iter().zip(hs) {
        assert_eq!(r[0], h["selector"].to_string());
        assert_eq!(r[1], h["rsr"].as_str().unwrap());
        assert_eq!(r[2], h["monitor_cycles"]["count"].to_string());
        assert_eq!(r[5], h["monitor_cycles"]["p50"].to_string());
    }
    let buckets = read_csv(&dir.join("numachine_latency_buckets.csv"));
    let total: u64 = buckets[1..]
        .iter()
        .map(|r| r[4].parse::<u64>().unwrap())
        .sum();
    let sram_total: u64 = sram[1..].iter().map(|r| r[2].parse::<u64>().unwrap()).sum();
    assert_eq!(total, sram_total, "every SRAM count in one latency bucket");

    // Per card: the estimate and the exact count of each estimator, then their totals.
    let est = read_csv(&dir.join("numachine_estimators.csv"));
    assert_eq!(est.len(), 1 + 4 + 1);
    for r in &est[1..5] {
        let p: usize = r[0].parse().unwrap();
        let x = &n["cards"][p]["estimators"];
        for (name, at) in [("invalidation_hits", 1), ("invalidation_misses", 5)] {
            assert_eq!(r[at], x[name]["estimate"].to_string(), "{p} {name}");
            assert_eq!(r[at + 1], x[name]["exact"].to_string(), "{p} {name}");
        }
    }
    let queues = read_csv(&dir.join("numachine_queues.csv"));
    let jq = n["queues"].as_object().unwrap();
    assert!(!jq.is_empty(), "numachine queues");
    assert_eq!(queues.len(), 1 + jq.len());
    for r in &queues[1..] {
        assert_eq!(r[1], jq[&r[0]]["uses"].to_string(), "{}", r[0]);
        assert_eq!(r[4], jq[&r[0]]["wait_sum_monitor_cycles"].to_string());
        assert_eq!(r[5], jq[&r[0]]["busy_sum_monitor_cycles"].to_string());
    }
    std::fs::remove_dir_all(&dir).unwrap();

    // Without a monitor the run's own tables are written, each with every row.
    let (c, o, e) = pmusim(&[
        "run",
        "false-sharing",
        "-s",
        "test",
        "-p",
        "4",
        "--json",
        "--csv",
        d,
    ]);
    assert_eq!(c, 0, "{e}");
    assert!(e.contains("wrote 7 CSV files"), "{e}");
    let j: serde_json::Value = serde_json::from_str(&o).unwrap();
    let procs = read_csv(&dir.join("processors.csv"));
    assert_eq!(procs.len(), 1 + 4 + 1, "header, 4 processors, totals");
    let structs = read_csv(&dir.join("data_structures.csv"));
    let n = j["ground_truth"]["data_structures"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(structs.len(), 1 + n, "every data structure");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The golden runs (`tests/golden/golden.py`): every stored output is reproduced byte for byte
/// by this build (wall-clock fields removed). Skipped with a note when python3 is missing.
#[test]
fn golden_runs_are_reproduced() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script = root.join("tests/golden/golden.py");
    let out = match Command::new("python3")
        .arg(&script)
        .env("PMUSIM", env!("CARGO_BIN_EXE_pmusim"))
        .output()
    {
        Ok(o) => o,
        Err(e) => {
            eprintln!("golden runs skipped: python3 not available ({e})");
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "golden runs differ (regenerate with `python3 tests/golden/golden.py --update` only if the change is intended and documented):\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("all cases identical"), "{stdout}");
}

/// Issue 17, rows 1 and 2: fewer software threads than processors used to panic (FFT) or
/// false-deadlock (producer/consumer with an odd thread out); both run and verify.
#[test]
fn threads_fewer_than_processors_run_and_verify() {
    for args in [
        &["run", "fft", "-s", "test", "--threads", "8", "--json"][..],
        &["run", "producer-consumer", "--threads", "3", "--json"][..],
    ] {
        let (c, o, e) = pmusim(args);
        assert_eq!(c, 0, "{args:?}: {e}");
        let v: serde_json::Value = serde_json::from_str(&o).unwrap();
        assert_eq!(v["workload"]["verified"], true, "{args:?}");
        let n: usize = args[args.len() - 2].parse().unwrap();
        assert_eq!(v["workload"]["threads"], n);
        // Thread t runs alone on processor t: the processors' section is the threads'
        // (no per-thread sections), and the processors without a thread did nothing.
        let gt = &v["ground_truth"];
        assert!(gt.get("software_threads").is_none());
        for (p, x) in gt["processors"].as_array().unwrap().iter().enumerate() {
            if p >= n {
                assert_eq!(x["instructions"], 0, "processor {p} without a thread");
            } else if p == 0 {
                assert!(x["instructions"].as_u64().unwrap() > 0);
            }
        }
    }
}

/// `--threads-per-core` and thread counts: bad values are refused naming the flag or field.
#[test]
fn thread_flags_are_checked() {
    let (c, _, e) = pmusim(&["run", "lock", "-m", "ideal", "--threads-per-core", "0"]);
    assert_eq!(c, 2);
    assert!(
        e.contains("--threads-per-core 0") && e.contains("cpu.threads_per_core"),
        "{e}"
    );
    let (c, _, e) = pmusim(&["run", "lock", "-m", "ideal", "-p", "2", "--threads", "0"]);
    assert_eq!(c, 2);
    assert!(e.contains("--threads 0"), "{e}");
    let (c, _, e) = pmusim(&["run", "lock", "-m", "ideal", "-p", "1", "--threads", "65"]);
    assert_eq!(c, 2);
    assert!(e.contains("--threads 65") && e.contains("1 to 64"), "{e}");
    let (c, _, e) = pmusim(&["run", "fft", "-s", "test", "--threads", "6"]);
    assert_eq!(c, 2);
    assert!(
        e.contains("--threads 6") && e.contains("power of two"),
        "{e}"
    );
}

/// docs/json.md lists every key of the run document's first two levels (below `machine`,
/// `workload`, `ground_truth` and `run`): a run with every optional section (`--tlb`, two
/// hardware contexts per core) has exactly those, so neither an undocumented key nor a stale
/// line in the docs survives. The other documents carry their schema names.
#[test]
fn run_document_keys_are_documented() {
    let docs = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/json.md"),
    )
    .unwrap();
    let run_part = &docs[docs.find("## Run document").unwrap()..];
    let mut documented = std::collections::BTreeSet::new();
    for piece in run_part.split('`').skip(1).step_by(2) {
        let parts: Vec<&str> = piece.split('.').collect();
        let top = [
            "schema",
            "machine",
            "workload",
            "ground_truth",
            "monitors",
            "run",
        ];
        if parts.len() <= 2
            && top.contains(&parts[0])
            && parts.iter().all(|p| {
                p.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            })
        {
            documented.insert(piece.to_string());
        }
    }
    // A run with every optional section of today's presets, and one on `cmp` (its shared
    // level's slices).
    let mut present = std::collections::BTreeSet::new();
    for args in [
        &[
            "run",
            "fft",
            "-s",
            "test",
            "-p",
            "4",
            "--tlb",
            "--threads-per-core",
            "2",
            "--by-phase",
            "--memctl",
            "on",
            "--json",
        ][..],
        &["run", "fft", "-m", "cmp", "-s", "test", "--json"][..],
    ] {
        let (c, o, e) = pmusim(args);
        assert_eq!(c, 0, "{e}");
        let v: serde_json::Value = serde_json::from_str(&o).unwrap();
        assert_eq!(v["schema"], "pmusim.run/1");
        for (k, sub) in v.as_object().unwrap() {
            present.insert(k.clone());
            if k == "monitors" {
                continue;
            }
            if let Some(o) = sub.as_object() {
                for k2 in o.keys() {
                    present.insert(format!("{k}.{k2}"));
                }
            }
        }
    }
    let undocumented: Vec<_> = present.difference(&documented).collect();
    let stale: Vec<_> = documented.difference(&present).collect();
    assert!(
        undocumented.is_empty(),
        "keys missing from docs/json.md: {undocumented:?}"
    );
    assert!(
        stale.is_empty(),
        "docs/json.md lists keys a run lacks: {stale:?}"
    );

    for (args, schema, key) in [
        (
            &["list", "machines", "--json"][..],
            "pmusim.list-machines/1",
            "machines",
        ),
        (
            &["list", "workloads", "--json"][..],
            "pmusim.list-workloads/1",
            "workloads",
        ),
        (
            &["bench", "--case", "uni-hit", "--repeat", "1", "--json"][..],
            "pmusim.bench/1",
            "cases",
        ),
    ] {
        let (c, o, e) = pmusim(args);
        assert_eq!(c, 0, "{args:?}: {e}");
        let v: serde_json::Value = serde_json::from_str(&o).unwrap();
        assert_eq!(v["schema"], schema, "{args:?}");
        assert!(!v[key].as_array().unwrap().is_empty(), "{args:?}");
    }
    let (c, o, _) = pmusim(&["list", "machines", "--show", "flash"]);
    assert_eq!(c, 0);
    assert_eq!(
        o,
        machine::config::BUILTIN[1].1,
        "--show prints the embedded preset"
    );
    let (c, _, e) = pmusim(&["list", "machines", "--show", "nosuch"]);
    assert_eq!(c, 2);
    assert!(
        e.contains("no built-in machine of that name (built-in: numachine, flash"),
        "{e}"
    );
}

/// Shell completions and the manual page come from the clap definitions: the bash script
/// parses (`bash -n`) and offers every subcommand, the manual page lists them.
#[test]
fn completions_and_manual_page_cover_every_subcommand() {
    let subcommands = [
        "run",
        "list",
        "test-protocol",
        "bench",
        "decode",
        "trace",
        "study",
        "report",
        "completions",
        "man",
    ];
    let (c, script, e) = pmusim(&["completions", "bash"]);
    assert_eq!(c, 0, "{e}");
    for s in subcommands {
        assert!(
            script.contains(&format!("pmusim__subcmd__{}", s.replace('-', "__subcmd__"))),
            "{s}"
        );
    }
    let path = std::env::temp_dir().join(format!("pmusim-completion-{}.bash", std::process::id()));
    std::fs::write(&path, &script).unwrap();
    let ok = Command::new("bash").arg("-n").arg(&path).status().unwrap();
    std::fs::remove_file(&path).unwrap();
    assert!(ok.success(), "the bash completion script parses");
    let (c, page, _) = pmusim(&["man"]);
    assert_eq!(c, 0);
    assert!(
        page.starts_with(".ie") && page.contains(".TH pmusim 1"),
        "{page}"
    );
    for s in subcommands {
        assert!(
            page.contains(&format!("pmusim\\-{}", s.replace('-', "\\-"))),
            "{s}"
        );
    }
    let (c, _, e) = pmusim(&["completions", "tcsh"]);
    assert_eq!(c, 2);
    assert!(e.contains("possible values: bash"), "{e}");
}

/// `--html FILE`: one self-contained page whose tables hold the JSON's numbers (the
/// processors table's rows and totals, the heat map's cells summing to the structures'
/// misses), with inline SVG and no external resource; a missing directory is refused before
/// any simulation.
#[test]
fn html_report_holds_the_json_numbers() {
    let dir = std::env::temp_dir().join(format!("pmusim-html-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let page = dir.join("r.html");
    let args = [
        "run",
        "fft",
        "-s",
        "test",
        "-p",
        "4",
        "--monitor",
        "numachine",
    ];
    let (c, o, e) = pmusim(&[&args[..], &["--json", "--html", page.to_str().unwrap()]].concat());
    assert_eq!(c, 0, "{e}");
    let doc: serde_json::Value = serde_json::from_str(&o).unwrap();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    // SVG namespaces are names, not resources.
    let fetched = html
        .replace("xmlns=\"http://www.w3.org/2000/svg\"", "")
        .replace("xmlns:xlink=\"http://www.w3.org/1999/xlink\"", "");
    for external in ["http://", "https://", "<link", "src="] {
        assert!(
            !fetched.contains(external),
            "no external resource: {external}"
        );
    }
    assert!(html.contains("<svg"), "plots are inline");
    // Processors table: one row per processor with its instructions, and the totals row.
    let procs = doc["ground_truth"]["processors"].as_array().unwrap();
    let t = &html[html.find("id=\"t-processors\"").unwrap()..];
    let t = &t[..t.find("</table>").unwrap()];
    assert_eq!(
        t.matches("<tr>").count(),
        1 + procs.len() + 1,
        "header, rows, total"
    );
    let mut total = 0;
    for p in procs {
        let i = p["instructions"].as_u64().unwrap();
        total += i;
        assert!(t.contains(&format!("data-v=\"{i}\"")), "instructions {i}");
    }
    assert!(t.contains(&format!("data-v=\"{total}\"")), "total {total}");
    // Heat map: every structure's row sums to its read + write misses in the JSON.
    let h = &html[html.find("class=\"heat\"").unwrap()..];
    let h = &h[..h.find("</table>").unwrap()];
    for s in doc["ground_truth"]["data_structures"]
        .as_array()
        .unwrap()
        .iter()
        .take(10)
    {
        let name = s["name"]
            .as_str()
            .unwrap()
            .replace('&', "&amp;")
            .replace('<', "&lt;");
        let want = s["read_misses"].as_u64().unwrap() + s["write_misses"].as_u64().unwrap();
        let row = &h[h.find(&format!("<tr><th>{name}</th>")).unwrap()..];
        let row = &row[..row.find("</tr>").unwrap()];
        let sum: u64 = row
            .split("data-v=\"")
            .skip(1)
            .map(|c| c[..c.find('"').unwrap()].parse::<u64>().unwrap())
            .sum();
        assert_eq!(sum, want, "{name}");
    }
    // The monitor's section as typed tables and an inline plot, not preformatted text.
    assert!(html.contains(">NUMAchine monitor (config `default`)</h2>"));
    assert!(html.contains("<table class=\"sortable\" id=\"t-numachine_counters\">"));
    assert!(
        html.contains("latency (monitor cycles)"),
        "the latency plot"
    );
    assert!(!html.contains("<pre>"));
    // A missing directory: refused before the simulation, exit 2, naming the directory.
    let bad = dir.join("missing").join("r.html");
    let (c, _, e) = pmusim(&[&args[..], &["--html", bad.to_str().unwrap()]].concat());
    assert_eq!(c, 2);
    assert!(e.contains("does not exist"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `-I CYCLES` prints perf-style interval counts whose sums are the run's exact totals (in
/// each of the three formats), and `--max-cycles` ends the run with a partial report marked
/// as such (exit 3).
#[test]
fn interval_counts_sum_to_the_totals_and_a_limit_gives_a_partial_report() {
    let base = ["run", "fft", "-s", "test", "-p", "4", "--json"];
    let (c, o, e) = pmusim(&[&base[..], &["-I", "50000", "-j"]].concat());
    assert_eq!(c, 0, "{e}");
    let doc: serde_json::Value = serde_json::from_str(&o).unwrap();
    assert_eq!(doc["run"]["partial"], false);
    assert_eq!(doc["run"]["stop_reason"], "finished");
    let procs = doc["ground_truth"]["processors"].as_array().unwrap();
    let exact = |k: &str| procs.iter().map(|p| p[k].as_u64().unwrap()).sum::<u64>();
    let lines: Vec<serde_json::Value> = e
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let sum = |ev: &str| -> u64 {
        lines
            .iter()
            .filter(|l| l["event"] == ev)
            .map(|l| l["counter-value"].as_str().unwrap().parse::<u64>().unwrap())
            .sum()
    };
    assert_eq!(sum("instructions"), exact("instructions"));
    assert_eq!(sum("references"), exact("references"));
    let intervals = lines
        .iter()
        .filter(|l| l["event"] == "instructions")
        .count() as u64;
    let cycles = doc["run"]["simulated_cycles"].as_u64().unwrap();
    assert_eq!(
        intervals,
        cycles.div_ceil(50_000),
        "one line per interval, the last shorter"
    );
    // CSV with perf's -x: cycle, count, unit, event.
    let (c, _, e) = pmusim(&[&base[..], &["-I", "50000", "-x", ";"]].concat());
    assert_eq!(c, 0);
    let refs: u64 = e
        .lines()
        .filter(|l| l.ends_with(";;references"))
        .map(|l| l.split(';').nth(1).unwrap().parse::<u64>().unwrap())
        .sum();
    assert_eq!(refs, exact("references"));
    // -x without -I is refused by the parser.
    let (c, _, _) = pmusim(&[&base[..], &["-x", ","]].concat());
    assert_eq!(c, 2);
    // A cycle limit: the partial report, marked, not verified, exit 3.
    let (c, o, e) = pmusim(&[&base[..], &["--max-cycles", "20000"]].concat());
    assert_eq!(c, 3, "{e}");
    assert!(e.contains("the report below is partial"), "{e}");
    let doc: serde_json::Value = serde_json::from_str(&o).unwrap();
    assert_eq!(doc["run"]["partial"], true);
    assert_eq!(doc["run"]["stop_reason"], "cycle limit");
    assert_eq!(doc["workload"]["verified"], false);
    let cyc = doc["run"]["simulated_cycles"].as_u64().unwrap();
    assert!((20_000..40_000).contains(&cyc), "{cyc}");
    let (c, o, _) = pmusim(&[
        "run",
        "fft",
        "-s",
        "test",
        "-p",
        "4",
        "--max-cycles",
        "20000",
    ]);
    assert_eq!(c, 3);
    assert!(
        o.contains("PARTIAL REPORT: the run stopped early (cycle limit)"),
        "{o}"
    );
}

/// Ctrl-C (SIGINT) ends a long run at its next tick with the partial report, exit 130.
#[test]
fn ctrl_c_ends_the_run_with_a_partial_report() {
    use std::io::{BufRead, Read};
    // Interval lines show that the simulation (and so the Ctrl-C handler) has started.
    let mut child = Command::new(env!("CARGO_BIN_EXE_pmusim"))
        .args([
            "run", "hits", "-s", "paper", "-p", "4", "--json", "-I", "100000", "-x", ",",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    assert!(first.ends_with(",,instructions\n"), "{first}");
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
    let mut stderr = String::new();
    err.read_to_string(&mut stderr).unwrap();
    let mut stdout = Vec::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_end(&mut stdout)
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(
        stderr.contains("(interrupted): the report below is partial"),
        "{stderr}"
    );
    let doc: serde_json::Value = serde_json::from_slice(&stdout).unwrap();
    assert_eq!(doc["run"]["partial"], true);
    assert_eq!(doc["run"]["stop_reason"], "interrupted");
    assert!(doc["run"]["references"].as_u64().unwrap() > 0);
}

/// A monitor's typed section (`Monitor::section`, here the Addies') goes through the one
/// renderer chosen with the run's report: its title and table in the text, its table among
/// the run's CSV files with the JSON's values, its plot among the SVG files, its table in the
/// HTML page and in the typed JSON.
#[test]
fn typed_monitor_section_reaches_every_renderer() {
    let dir = std::env::temp_dir().join(format!("pmusim-typed-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (csv, svg) = (dir.join("csv"), dir.join("svg"));
    let (html, model) = (dir.join("r.html"), dir.join("model.json"));
    std::fs::create_dir_all(&dir).unwrap();
    let run = [
        "run",
        "radix",
        "-s",
        "test",
        "-p",
        "4",
        "--monitor",
        "addie",
    ];
    let run = [&run[..], &["--addie-window", "64"]].concat();
    let (c, text, e) = pmusim(&run);
    assert_eq!(c, 0, "{e}");
    let title = "Addie (8-bit, independent random numbers, two per memory controller)";
    let underline = "=".repeat(title.len());
    assert!(
        text.contains(&format!("\n\n{title}\n{underline}\nAddie readings")),
        "{text}"
    );
    let (c, o, e) = pmusim(
        &[
            &run[..],
            &[
                "--json",
                "--csv",
                csv.to_str().unwrap(),
                "--svg",
                svg.to_str().unwrap(),
                "--html",
                html.to_str().unwrap(),
                "--typed-json",
                model.to_str().unwrap(),
            ],
        ]
        .concat(),
    );
    assert_eq!(c, 0, "{e}");
    let j: serde_json::Value = serde_json::from_str(&o).unwrap();
    let ctl = j["monitors"]["addie"]["controllers"].as_array().unwrap();
    let rows = read_csv(&csv.join("addie_readings.csv"));
    assert_eq!(rows.len(), 1 + 2 * ctl.len());
    assert_eq!(rows[0][2], "samples (count)");
    for (r, a) in rows[1..]
        .iter()
        .zip(ctl.iter().flat_map(|c| c["addies"].as_array().unwrap()))
    {
        assert_eq!(r[1], a["input"].as_str().unwrap());
        assert_eq!(r[2], a["samples"].to_string());
        assert_eq!(r[3], a["readings"].as_array().unwrap().len().to_string());
    }
    assert!(csv.join("processors.csv").exists(), "the run's tables too");
    let plot = std::fs::read_to_string(svg.join("addie-run.svg")).unwrap();
    assert!(plot.contains("time (proc. cycles)"), "{plot}");
    assert!(svg.join("pipeline_states.svg").exists());
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("id=\"t-addie_readings\""), "a sortable table");
    assert!(!page.contains("<pre>"), "no preformatted monitor text");
    let m: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&model).unwrap()).unwrap();
    assert_eq!(m["sections"][1]["title"], title);
    assert_eq!(
        m["sections"][1]["blocks"][0]["table"]["id"],
        "addie_readings"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// `pmusim decode --json`: the same decoding as the text, as a `pmusim.decode/1` document.
/// Each register's fields put back at their bits give its value, and each field's value and
/// words are the text's line; the built-in configuration's GPCM1 is PAPI_TOT_CYC's 0x800800
/// (docs/numachine-monitor.md).
#[test]
fn decode_json_is_the_text_decoding() {
    let fields_value = |r: &serde_json::Value| -> u64 {
        r["fields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["value"].as_u64().unwrap() << f["lo"].as_u64().unwrap())
            .sum()
    };
    let (c, o, e) = pmusim(&["decode", "--json", "GPCM0", "0x80a403"]);
    assert_eq!(c, 0, "{e}");
    let d: serde_json::Value = serde_json::from_str(&o).unwrap();
    assert_eq!(d["schema"], "pmusim.decode/1");
    assert_eq!(d["monitor"], "numachine");
    let r = &d["registers"][0];
    assert_eq!(
        (r["register"].as_str(), r["value"].as_u64()),
        (Some("GPCM0"), Some(0x80a403))
    );
    assert_eq!(fields_value(r), 0x80a403);
    let (c, text, _) = pmusim(&["decode", "GPCM0", "0x80a403"]);
    assert_eq!(c, 0);
    let lines: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(lines.len(), r["fields"].as_array().unwrap().len());
    for (line, f) in lines.iter().zip(r["fields"].as_array().unwrap()) {
        let want = format!(
            "{}  {:#x}  {}",
            f["name"].as_str().unwrap(),
            f["value"].as_u64().unwrap(),
            f["meaning"].as_str().unwrap()
        );
        let got = line
            .split_whitespace()
            .skip(1)
            .collect::<Vec<_>>()
            .join(" ");
        assert_eq!(got, want.split_whitespace().collect::<Vec<_>>().join(" "));
    }

    let (c, o, e) = pmusim(&["decode", "--json", "--config", "numachine"]);
    assert_eq!(c, 0, "{e}");
    let d: serde_json::Value = serde_json::from_str(&o).unwrap();
    assert_eq!(d["config"], "default");
    assert_eq!(d["counter_labels"][1], "PAPI_TOT_CYC");
    let regs = d["registers"].as_array().unwrap();
    assert_eq!(regs.len(), 15);
    for r in regs {
        assert_eq!(
            fields_value(r),
            r["value"].as_u64().unwrap(),
            "{}",
            r["register"]
        );
    }
    let gpcm1 = regs.iter().find(|r| r["register"] == "GPCM1").unwrap();
    assert_eq!(gpcm1["value"], 0x800800);

    // A bad value: exit 2 naming the register, as without --json.
    let (c, _, e) = pmusim(&["decode", "--json", "GPCM0", "0x1_0000_0000"]);
    assert_eq!(c, 2);
    assert!(e.contains("GPCM0"), "{e}");
}

/// `pmusim decode MMCR` reaches the POWER2 monitor's register map without `--monitor` (the
/// first monitor that has the register), field by field; an unknown register is refused.
#[test]
fn decode_finds_the_power2_mmcr() {
    let (c, out, e) = pmusim(&["decode", "MMCR", "0x4000F360"]);
    assert_eq!(c, 0, "{e}");
    assert!(out.contains("FXUSEL  =  6"), "{out}");
    assert!(out.contains("counts FXU group 7"), "{out}");
    assert!(out.contains("counting: user (problem state) only"), "{out}");
    let (c, out, _) = pmusim(&["decode", "GPCM0", "0x80a403"]);
    assert_eq!(c, 0);
    assert!(out.starts_with("GPCM0"), "{out}");
    let (c, _, e) = pmusim(&["decode", "NOPE", "1"]);
    assert_eq!(c, 2, "{e}");
}

/// `pmusim study imr` (the power2 monitor's study, by its own name): the exact column is the
/// run's ground truth (radix under the OS: its user-state instructions equal its instructions
/// run alone from `run --json`), every class it retired is listed, and the daemon's cost.
#[test]
fn study_imr_lists_the_exact_mix_of_the_run() {
    let (c, out, e) = pmusim(&["study", "imr", "-s", "test", "--kernels", "radix"]);
    assert_eq!(c, 0, "{e}");
    let (c, run, e) = pmusim(&["run", "radix", "-m", "power2", "-s", "test", "--json"]);
    assert_eq!(c, 0, "{e}");
    let doc: serde_json::Value = serde_json::from_str(&run).unwrap();
    let p = &doc["ground_truth"]["processors"][0];
    let total = p["instructions"].as_u64().unwrap();
    let fmt = |n: u64| {
        let s = n.to_string();
        let mut o = String::new();
        for (i, ch) in s.chars().enumerate() {
            if i > 0 && (s.len() - i).is_multiple_of(3) {
                o.push(',');
            }
            o.push(ch);
        }
        o
    };
    // The process's user-state instructions (the daemon's are supervisor work).
    assert!(
        out.contains(&format!("{} user-state instructions", fmt(total))),
        "{out}"
    );
    assert!(
        out.contains("the daemon (supervisor code in the timer interrupt"),
        "{out}"
    );
    for class in ["int-add", "load8", "store8", "br-cond-taken"] {
        assert!(out.contains(class), "{class} not in {out}");
    }
    assert!(
        out.contains("classes with at least 2% of the instructions"),
        "{out}"
    );
}
