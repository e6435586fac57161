//! The cache-line sharing view (`--monitor c2c`, issue 17 item 5): verdicts on the sharing
//! micro-kernels, coherence misses equal to the ground truth by data structure and procedure,
//! HITM equal to the interventions that found the line, the same numbers in text and CSV.

use serde_json::Value;
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

fn run(workload: &str) -> Value {
    let (c, out, e) = pmusim(&["run", workload, "-s", "test", "--monitor", "c2c", "--json"]);
    assert_eq!(c, 0, "{e}");
    serde_json::from_str(&out).unwrap()
}

/// (structure, verdict) of every listed line.
fn verdicts(d: &Value) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = d["monitors"]["c2c"]["lines"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["structure"].as_str().unwrap().to_string(),
                l["verdict"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

/// The view's coherence misses equal the ground truth's, structure by structure and
/// procedure by procedure; its HITM equal the interventions (every one found its line here).
fn check_counts(w: &str, d: &Value) {
    let c = &d["monitors"]["c2c"];
    let gt = &d["ground_truth"];
    let pairs = |a: &Value, key: &str| -> Vec<(String, u64)> {
        let mut v: Vec<(String, u64)> = a
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                (
                    s["name"].as_str().unwrap().to_string(),
                    s[key].as_u64().unwrap(),
                )
            })
            .filter(|x| x.1 > 0)
            .collect();
        v.sort();
        v
    };
    for (t, g) in [
        ("structures", "data_structures"),
        ("procedures", "procedures"),
    ] {
        assert_eq!(
            pairs(&c[t], "coherence_misses"),
            pairs(&gt[g], "coherence"),
            "{w}: coherence misses by {t}"
        );
    }
    let tot = &c["totals"];
    assert_eq!(
        tot["coherence_read"].as_u64().unwrap() + tot["coherence_write"].as_u64().unwrap(),
        gt["totals"]["coherence"].as_u64().unwrap(),
        "{w}"
    );
    let inb = &gt["inbound"];
    assert_eq!(tot["hitm_read"], inb["intervention-shared"], "{w}");
    assert_eq!(
        tot["hitm_write"].as_u64().unwrap(),
        inb["intervention-exclusive"].as_u64().unwrap_or(0),
        "{w}"
    );
}

#[test]
fn false_sharing_is_found_where_threads_touch_their_own_words() {
    let d = run("false-sharing");
    check_counts("false-sharing", &d);
    let v = verdicts(&d);
    assert!(
        v.contains(&("counters".into(), "false sharing".into())),
        "{v:?}"
    );
    assert!(
        !v.contains(&("counters".into(), "true sharing".into())),
        "{v:?}"
    );
    // Each processor wrote only its own counter: word p mod 8 of its line.
    let lines = d["monitors"]["c2c"]["lines"].as_array().unwrap();
    for l in lines.iter().filter(|l| l["structure"] == "counters") {
        for p in l["processors"].as_array().unwrap() {
            let w = p["proc"].as_u64().unwrap() % 8;
            assert_eq!(p["write_words"], serde_json::json!([w]), "{l}");
        }
    }
}

#[test]
fn producer_consumer_and_migratory_data_are_true_sharing() {
    for (w, structs) in [
        ("producer-consumer", ["buffer", "flags"]),
        ("migratory", ["record", "lock"]),
    ] {
        let d = run(w);
        check_counts(w, &d);
        let v = verdicts(&d);
        for s in structs {
            assert!(v.contains(&(s.into(), "true sharing".into())), "{w}: {v:?}");
            assert!(
                !v.contains(&(s.into(), "false sharing".into())),
                "{w}: {v:?}"
            );
        }
        let t = &d["monitors"]["c2c"]["totals"];
        assert_eq!(t["false_sharing_lines"], 0, "{w}");
        assert!(
            t["hitm_read"].as_u64().unwrap() > 0,
            "{w}: dirty data moves"
        );
    }
}

/// Text and CSV show the JSON's rows: the top line's counts and verdict.
#[test]
fn text_and_csv_hold_the_json_numbers() {
    let d = run("false-sharing");
    let top = &d["monitors"]["c2c"]["lines"][0];
    let (c, text, e) = pmusim(&["run", "false-sharing", "-s", "test", "--monitor", "c2c"]);
    assert_eq!(c, 0, "{e}");
    let fmt = |v: &Value| report::model::format::int(v.as_u64().unwrap());
    let row = text
        .lines()
        .find(|l| l.starts_with(top["address"].as_str().unwrap()))
        .unwrap();
    for k in [
        "coherence_read",
        "coherence_write",
        "hitm_read",
        "hitm_write",
    ] {
        assert!(row.contains(&fmt(&top[k])), "{k}: {row}");
    }
    assert!(row.contains("false sharing"), "{row}");
    let dir = std::env::temp_dir().join(format!("pmusim-c2c-{}", std::process::id()));
    let (c, _, e) = pmusim(&[
        "run",
        "false-sharing",
        "-s",
        "test",
        "--monitor",
        "c2c",
        "--csv",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(c, 0, "{e}");
    let csv = std::fs::read_to_string(dir.join("c2c_lines.csv")).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    let first = csv.lines().nth(1).unwrap();
    let want = format!(
        "{},counters,{},{},{},{}",
        top["address"].as_str().unwrap(),
        top["coherence_read"],
        top["coherence_write"],
        top["hitm_read"],
        top["hitm_write"]
    );
    assert!(first.starts_with(&want), "{first} / {want}");
}
