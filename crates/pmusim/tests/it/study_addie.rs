//! `pmusim study addie` end to end: the JSON document is deterministic and carries the
//! figures, the SVG plots are written, bad flags exit 2 with the flag's quantity named, and
//! `run --monitor addie` says the run-time side is not there yet.

use std::process::Command;

fn pmusim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pmusim"))
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

const SMALL: [&str; 6] = ["study", "addie", "--seeds", "2", "--samples", "4000"];

#[test]
fn json_is_deterministic_and_holds_the_figures() {
    let mut args = SMALL.to_vec();
    args.push("--json");
    let (code, a, err) = pmusim(&args);
    assert_eq!(code, 0, "{err}");
    let (_, b, _) = pmusim(&args);
    assert_eq!(a, b, "same seeds, same output");
    let v: serde_json::Value = serde_json::from_str(&a).unwrap();
    let figs = v["figures"].as_array().unwrap();
    assert_eq!(figs.len(), 2);
    assert!((figs[0][0].as_f64().unwrap() - 64.0 / 255.0).abs() < 1e-12);
    assert!((figs[1][0].as_f64().unwrap() - 200.0 / 255.0).abs() < 1e-12);
    // 4000 samples / 250.
    assert_eq!(figs[0][1].as_array().unwrap().len(), 16);
    // Independent and correlated at each probability; 13 widths times modes times p.
    assert_eq!(v["convergence"].as_array().unwrap().len(), 4);
    assert_eq!(v["widths"].as_array().unwrap().len(), 52);
    assert_eq!(v["convergence"][0]["settle"]["runs"], 2);
    // --seed moves the seeds: another document.
    let mut other = args.clone();
    other.extend(["--seed", "3"]);
    let (_, c, _) = pmusim(&other);
    assert_ne!(a, c);
    assert_eq!(v["seed_reference"]["convergence"], "about 500 samples");
}

#[test]
fn text_and_svg() {
    let dir = std::env::temp_dir().join(format!("pmusim-addie-{}", std::process::id()));
    let mut args = SMALL.to_vec();
    let d = dir.to_string_lossy().into_owned();
    args.extend(["--svg", &d]);
    let (code, out, err) = pmusim(&args);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("(a) Figure 2: p = 64/255 = 25.10 %"));
    assert!(out.contains("(a) Figure 3: p = 200/255 = 78.43 %"));
    assert!(out.contains("first within ±3%"));
    for f in ["addie-fig2.svg", "addie-fig3.svg"] {
        let svg = std::fs::read_to_string(dir.join(f)).unwrap();
        assert!(svg.starts_with("<svg") && svg.contains("polyline"), "{f}");
        assert!(svg.contains("Addie reading, correlated"));
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn bad_flags_exit_2() {
    for (flags, want) in [
        (vec!["--samples", "100"], "samples 100"),
        (vec!["--seeds", "0"], "seeds must be at least 1"),
        (vec!["--procs", "4"], "--procs and --kernels do not apply"),
    ] {
        let mut args = vec!["study", "addie"];
        args.extend(flags);
        let (code, _, err) = pmusim(&args);
        assert_eq!(code, 2, "{args:?}");
        assert!(err.contains(want), "{args:?}: {err}");
    }
}

/// `--monitor addie` on a run: the preset gets a memory controller, the report has the Addie
/// readings beside the exact ratios, and the JSON section's sample counts are the controller's
/// ground truth (writes for wb-hit, reads for rb-hit). Bad flags exit 2 naming the flag.
#[test]
fn addie_on_runs_reads_the_controllers() {
    let (code, out, err) = pmusim(&[
        "run",
        "radix",
        "-s",
        "test",
        "-p",
        "4",
        "-m",
        "ideal",
        "--monitor",
        "addie",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let d: serde_json::Value = serde_json::from_str(&out).unwrap();
    let ctl = d["ground_truth"]["memory_controllers"].as_array().unwrap();
    let a = &d["monitors"]["addie"]["controllers"];
    assert_eq!(a.as_array().unwrap().len(), ctl.len());
    for (n, c) in ctl.iter().enumerate() {
        assert_eq!(a[n]["addies"][0]["input"], "wb-hit");
        assert_eq!(a[n]["addies"][0]["samples"], c["buffer"]["writes"]);
        assert_eq!(a[n]["addies"][1]["samples"], c["buffer"]["reads"]);
    }
    let (code, out, _) = pmusim(&[
        "run",
        "radix",
        "-s",
        "test",
        "-p",
        "4",
        "-m",
        "ideal",
        "--monitor",
        "addie",
    ]);
    assert_eq!(code, 0);
    assert!(
        out.contains("Addie readings per memory controller"),
        "{out}"
    );
    for (flag, value, want) in [
        ("--addie-width", "3", "--addie-width 3"),
        ("--addie-inputs", "wb-hit", "two inputs"),
        ("--addie-inputs", "wb-hit,probe:l1", "probe:l1 is not wired"),
        ("--addie-window", "0", "--addie-window 0"),
    ] {
        let (code, _, err) = pmusim(&[
            "run",
            "stream",
            "-s",
            "test",
            "-p",
            "2",
            "--monitor",
            "addie",
            flag,
            value,
        ]);
        assert_eq!(code, 2, "{flag} {value}");
        assert!(err.contains(want), "{flag} {value}: {err}");
    }
}
