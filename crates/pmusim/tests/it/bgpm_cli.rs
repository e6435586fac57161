//! `--bgpm-mode` and a file's `bgpm` on the command line (issue 14; docs/upc.md, "BGPM
//! modes"): a mode runs, and every inconsistent choice exits 2 naming the flag or the file.

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

const RUN: &[&str] = &[
    "run",
    "lu",
    "-m",
    "bgq",
    "-p",
    "2",
    "--threads",
    "8",
    "-s",
    "test",
];

#[test]
fn bgpm_mode_runs_and_inconsistent_choices_exit_2() {
    let mut a = RUN.to_vec();
    a.extend(["--monitor", "upc", "--bgpm-mode", "hw-distrib"]);
    let (code, out, err) = pmusim(&a);
    assert_eq!(code, 0, "{err}");
    // The mode's own set: 4 threads x (INST_ALL, load, store and L1 I misses, larx, stcx).
    for e in [
        "PEVT_INST_ALL",
        "PEVT_LSU_COMMIT_LD_MISSES",
        "PEVT_LSU_COMMIT_STCX",
    ] {
        assert!(out.contains(e), "{e}: {out}");
    }
    for (extra, want) in [
        (
            vec!["--bgpm-mode", "island"],
            "--bgpm-mode: `island` is not a BGPM mode",
        ),
        (
            vec!["--upc-mode", "1", "--bgpm-mode", "sw-distrib"],
            "runs the UPC in Mode 0",
        ),
        (
            vec!["--upc-mode", "2"],
            "--upc-mode: 2 is not 0 (distributed) or 1",
        ),
    ] {
        let mut a = RUN.to_vec();
        a.extend(["--monitor", "upc"]);
        a.extend(extra.iter().copied());
        let (code, _, err) = pmusim(&a);
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(err.contains(want), "{extra:?}: {err}");
    }
    let dir = std::env::temp_dir().join(format!("pmusim-bgpm-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("hw.toml");
    std::fs::write(
        &f,
        "monitor = \"upc\"\nbgpm = \"hw-distrib\"\n[[counter]]\nindex = 0\nevent = \"PEVT_CYCLES\"\noverflow = 100\n",
    )
    .unwrap();
    let mut a = RUN.to_vec();
    a.extend(["--monitor", f.to_str().unwrap()]);
    let (code, _, err) = pmusim(&a);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("hw.toml: counter 0: overflow: BGPM_MODE_HWDISTRIB supports no overflow"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `pmusim stat` computes PAPI's derived BG/Q presets as PAPI does, beside the exact count,
/// and refuses one whose native events pmusim does not produce by name (exit 2), also when
/// no monitor is named (another chip's monitor does not count a BG/Q preset).
#[test]
fn stat_derived_papi_presets_and_refusals() {
    let run = ["lu", "-m", "bgq", "-p", "2", "--threads", "8", "-s", "test"];
    let mut a = vec![
        "stat",
        "-j",
        "-e",
        "PAPI_CSR_SUC,PAPI_CSR_TOT,PAPI_CSR_FAL",
        "--",
    ];
    a.extend(run);
    let (code, out, err) = pmusim(&a);
    assert_eq!(code, 0, "{err}");
    let rows: Vec<serde_json::Value> = out
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let v = |i: usize| -> (f64, u64) {
        let r = &rows[i];
        (
            r["counter-value"].as_str().unwrap().parse().unwrap(),
            r["exact"].as_u64().unwrap(),
        )
    };
    assert_eq!(rows.len(), 3, "{out}");
    let (suc, tot, fal) = (v(0), v(1), v(2));
    // Exact: stcx less failures, counted by the UPC as counted by the machine.
    assert_eq!(suc.0 as u64, suc.1);
    assert_eq!(suc.1, tot.1 - fal.1);
    assert!(fal.1 > 0 && suc.1 > 0, "{out}");
    for mon in [&["--monitor", "upc"][..], &[][..]] {
        let mut a = vec!["stat", "-e", "PAPI_TOT_CYC,PAPI_BTAC_M", "--"];
        a.extend(run);
        a.extend(mon);
        let (code, _, err) = pmusim(&a);
        assert_eq!(code, 2, "{mon:?}: {err}");
        assert!(
            err.contains("-e PAPI_BTAC_M: monitor `upc`: PAPI_BTAC_M is not available on pmusim's Blue Gene/Q")
                && err.contains("pmusim produces no PEVT_XU_BR_TARG_ADDR_MISPRED_COMMIT"),
            "{err}"
        );
    }
}
