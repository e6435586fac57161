//! `pmusim sweep` (issue 18): planning, running entries on a local pool and by index,
//! idempotence and resumption, atomic results, collection and the job-array script, all
//! without a scheduler. The real-Slurm check is `scripts/sweep-slurm-check.sh` (not run here).

use std::path::{Path, PathBuf};
use std::process::Command;

fn pmusim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pmusim"))
        .args(args)
        .env_remove("SLURM_ARRAY_TASK_ID")
        .env_remove("JOB_COMPLETION_INDEX")
        .output()
        .expect("run pmusim");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A run's document without the fields that measure the host, not the simulated machine.
fn without_wall_clock(mut v: serde_json::Value) -> serde_json::Value {
    let run = v["run"].as_object_mut().unwrap();
    run.remove("wall_seconds");
    run.remove("references_per_second");
    v
}
/// A fresh scratch folder for one test.
fn sweep_dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pmusim-sweep-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// 4 test-size runs: two L2 sizes (a preset override) x 1 and 2 processors.
const SWEEP: &str = r#"
[axes]
machine = ["ideal"]
workload = ["migratory"]
size = ["test"]
procs = [1, 2]

[axes.preset]
"caches.l2.size_bytes" = [65536, 1048576]
"#;

fn plan_sweep(name: &str) -> (PathBuf, PathBuf) {
    let d = sweep_dir(name);
    let f = d.join("sweep.toml");
    std::fs::write(&f, SWEEP).unwrap();
    let out = d.join("out");
    let (c, o, e) = pmusim(&[
        "sweep",
        "plan",
        f.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(c, 0, "{e}");
    assert!(o.contains("planned 4 runs (2 preset files)"), "{o}");
    (d, out)
}

fn manifest_lines(out: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join("manifest.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn sweep_run(out: &Path, extra: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pmusim"));
    cmd.args(["sweep", "run", out.to_str().unwrap()])
        .args(extra);
    cmd.env_remove("SLURM_ARRAY_TASK_ID")
        .env_remove("JOB_COMPLETION_INDEX");
    for (k, v) in env {
        cmd.env(k, v);
    }
    let o = cmd.output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

#[test]
fn sweep_plan_is_deterministic_and_names_its_runs() {
    let (d, a) = plan_sweep("plan-a");
    let (e, b) = plan_sweep("plan-b");
    let ma = std::fs::read(a.join("manifest.jsonl")).unwrap();
    assert_eq!(ma, std::fs::read(b.join("manifest.jsonl")).unwrap());
    let m = manifest_lines(&a);
    assert_eq!(m.len(), 4);
    let hashes: std::collections::BTreeSet<_> = m
        .iter()
        .map(|l| l["hash"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(hashes.len(), 4, "every run has its own hash");
    // The last axis varies fastest; the override lives in a preset file the run names.
    assert_eq!(m[0]["axes"]["caches.l2.size_bytes"], 65536);
    assert_eq!(m[0]["axes"]["procs"], 1);
    assert_eq!(m[1]["axes"]["procs"], 2);
    assert_eq!(m[2]["axes"]["caches.l2.size_bytes"], 1048576);
    let args: Vec<&str> = m[0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(args[..2], ["run", "migratory"]);
    assert!(args.ends_with(&["--size", "test", "--procs", "1", "--seed", "1", "--json"]));
    let preset = std::fs::read_to_string(a.join(args[3])).unwrap();
    assert!(preset.contains("size_bytes = 65536"), "{preset}");
    for x in [d, e] {
        std::fs::remove_dir_all(x).unwrap();
    }
}

#[test]
fn sweep_file_errors_name_the_line_and_key() {
    let d = sweep_dir("bad");
    let cases = [
        (
            "[axes]\nmachine = [\"ideal\"]\n\n[axes.preset]\n\"caches.l2.sise_bytes\" = [1024]\n",
            "sweep.toml:5: axes.preset.caches.l2.sise_bytes: value 1024 (with machine = \"ideal\"): unknown field `sise_bytes`",
        ),
        (
            "[axes]\nmachine = [\"ideal\"]\n[axes.preset]\ncaches.l3.size_bytes = [1]\n",
            "sweep.toml:4: axes.preset.caches.l3.size_bytes: value 1 (with machine = \"ideal\"): machine `ideal`: the preset has no table `caches.l3`",
        ),
        (
            "[axes]\nprocs = [2, 3000]\n",
            "sweep.toml:2: axes.procs: value 3000: --procs 3000: procs: at most 1024 processors",
        ),
        (
            "[axes]\n\nworkload = [\"fft\", \"nosuch\"]\n",
            "sweep.toml:3: axes.workload: value \"nosuch\": unknown workload `nosuch`",
        ),
        ("[axes]\nsizes = [\"test\"]\n", "sweep.toml:2: unknown field `sizes`"),
        (
            "[axes]\nseed = [1, 1]\n",
            "sweep.toml:2: axes.seed: value 1 is listed twice",
        ),
        // A combination that does not exist: FlashPoint's protocols on NUMAchine.
        (
            "[axes]\nmachine = [\"flash\", \"numachine\"]\nprotocol = [\"fp-proc\"]\n",
            "sweep.toml:3: axes.protocol: value \"fp-proc\" (with machine = \"numachine\"): --protocol fp-proc: machine `numachine` has no FLASH memory system",
        ),
        (
            "[axes]\nmachine = [\"flash\"]\n[axes.flags]\nbogus = [1]\n",
            "sweep.toml:4: axes.flags.bogus: value 1 (with machine = \"flash\"): unexpected argument '--bogus' found",
        ),
        (
            "[axes]\n[axes.flags]\nsvg = [\"x.svg\"]\n",
            "sweep.toml:3: axes.flags.svg: --svg is not a flag a sweep may vary here",
        ),
        (
            "[axes]\nmonitor = [\"numachine\", \"mine.toml\"]\n",
            "sweep.toml:2: axes.monitor: value \"mine.toml\": monitor file",
        ),
        (
            "[axes]\nprocs = [2, 4]\n[[exclude]]\nprocs = 8\n",
            "sweep.toml:3: exclude.procs: 8 is not one of the axis's values (line 2)",
        ),
        (
            "[axes]\nprocs = [2]\n[[exclude]]\nprocs = 2\n",
            "sweep.toml:3: exclude: the filters drop every run",
        ),
    ];
    for (text, want) in cases {
        let f = d.join("sweep.toml");
        std::fs::write(&f, text).unwrap();
        let out = d.join("out");
        let (c, _, e) = pmusim(&[
            "sweep",
            "plan",
            f.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(c, 2, "{text}: {e}");
        let msg = e.trim_start_matches("pmusim: error: ");
        let msg = msg.strip_prefix(d.to_str().unwrap()).unwrap_or(msg);
        assert!(msg.starts_with(&format!("/{want}")), "{text}:\n{e}");
        assert!(!out.exists(), "nothing is written before the file is valid");
    }
    std::fs::remove_dir_all(d).unwrap();
}

/// Protocols, flags and filters: the runs of FlashPoint's three protocols on `flash`, the fence
/// switch only where it applies (fp-proc), each run the exact command a user would type.
#[test]
fn sweep_protocols_flags_and_filters_plan_the_runs_asked_for() {
    let d = sweep_dir("filters");
    let f = d.join("sweep.toml");
    std::fs::write(
        &f,
        "[axes]\nmachine = [\"flash\"]\nworkload = [\"fft\", \"lu\"]\nsize = [\"test\"]\nprotocol = [\"dp\", \"fp-noproc\", \"fp-proc\"]\n\
         [axes.flags]\nno-fence = [false, true]\n\
         [[exclude]]\nprotocol = \"dp\"\nno-fence = true\n[[exclude]]\nprotocol = \"fp-noproc\"\nno-fence = true\n",
    )
    .unwrap();
    let out = d.join("out");
    let (c, o, e) = pmusim(&[
        "sweep",
        "plan",
        f.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(c, 0, "{e}");
    assert!(o.starts_with("planned 8 runs (0 preset files)"), "{o}");
    let m = manifest_lines(&out);
    let cmd = |i: usize| -> String {
        let a: Vec<&str> = m[i]["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        a.join(" ")
    };
    assert_eq!(
        cmd(0),
        "run fft --machine flash --size test --seed 1 --protocol dp --json"
    );
    assert_eq!(
        cmd(2),
        "run fft --machine flash --size test --seed 1 --protocol fp-proc --json"
    );
    assert_eq!(
        cmd(3),
        "run fft --machine flash --size test --seed 1 --protocol fp-proc --no-fence --json"
    );
    assert_eq!(m[3]["axes"]["no-fence"], true);
    assert_eq!(m[4]["axes"]["workload"], "lu");
    assert_eq!(m[7]["index"], 7);
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn sweep_run_matches_direct_runs_resumes_and_collects() {
    let (d, out) = plan_sweep("run");
    let m = manifest_lines(&out);
    let (c, o, e) = sweep_run(&out, &["--jobs", "2"], &[]);
    assert_eq!(c, 0, "{e}");
    assert!(o.contains("ran 4, already done 0, failed 0"), "{o}");
    // Atomic results: exactly one HASH.json per entry, no temporary file left behind.
    let mut files: Vec<String> = std::fs::read_dir(out.join("results"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    let mut want: Vec<String> = m
        .iter()
        .map(|l| format!("{}.json", l["hash"].as_str().unwrap()))
        .collect();
    want.sort();
    assert_eq!(files, want);
    // Each result is what `pmusim run ... --json` prints, apart from wall-clock fields.
    for l in &m {
        let args: Vec<&str> = l["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let direct = Command::new(env!("CARGO_BIN_EXE_pmusim"))
            .args(&args)
            .current_dir(&out)
            .output()
            .unwrap();
        assert!(direct.status.success());
        let hash = l["hash"].as_str().unwrap();
        let got: serde_json::Value = serde_json::from_slice(
            &std::fs::read(out.join(format!("results/{hash}.json"))).unwrap(),
        )
        .unwrap();
        let want: serde_json::Value = serde_json::from_slice(&direct.stdout).unwrap();
        assert_eq!(
            without_wall_clock(got),
            without_wall_clock(want),
            "{args:?}"
        );
    }
    // The L2 size reaches the machine: the smaller L2 misses more on the same run.
    let res = |i: usize| -> serde_json::Value {
        let h = m[i]["hash"].as_str().unwrap();
        serde_json::from_slice(&std::fs::read(out.join(format!("results/{h}.json"))).unwrap())
            .unwrap()
    };
    assert_eq!(
        res(0)["machine"]["preset"]["caches"]["l2"]["size_bytes"],
        65536
    );
    assert_eq!(
        res(2)["machine"]["preset"]["caches"]["l2"]["size_bytes"],
        1048576
    );
    // A second run runs nothing and leaves the results untouched.
    let mtimes = |out: &Path| -> Vec<std::time::SystemTime> {
        m.iter()
            .map(|l| {
                let h = l["hash"].as_str().unwrap();
                std::fs::metadata(out.join(format!("results/{h}.json")))
                    .unwrap()
                    .modified()
                    .unwrap()
            })
            .collect()
    };
    let before = mtimes(&out);
    let (c, o, _) = sweep_run(&out, &[], &[]);
    assert_eq!(c, 0);
    assert!(o.contains("ran 0, already done 4"), "{o}");
    assert_eq!(before, mtimes(&out));
    // Deleting one result and running again recreates only it, with the same content.
    let h1 = m[1]["hash"].as_str().unwrap();
    let p1 = out.join(format!("results/{h1}.json"));
    let old = res(1);
    std::fs::remove_file(&p1).unwrap();
    let (c, o, _) = sweep_run(&out, &[], &[]);
    assert_eq!(c, 0);
    assert!(o.contains("ran 1, already done 3"), "{o}");
    assert_eq!(without_wall_clock(old), without_wall_clock(res(1)));
    // A scheduler's task index picks one entry; a second task with the same index is a no-op.
    let h3 = m[3]["hash"].as_str().unwrap();
    std::fs::remove_file(out.join(format!("results/{h3}.json"))).unwrap();
    std::fs::remove_file(&p1).unwrap();
    let (c, o, e) = sweep_run(&out, &[], &[("SLURM_ARRAY_TASK_ID", "3")]);
    assert_eq!(c, 0, "{e}");
    assert!(o.contains("1 entries: ran 1"), "{o}");
    assert!(out.join(format!("results/{h3}.json")).exists());
    assert!(!p1.exists(), "only the task's entry ran");
    let (_, o, _) = sweep_run(&out, &[], &[("JOB_COMPLETION_INDEX", "3")]);
    assert!(o.contains("ran 0, already done 1"), "{o}");
    let (c, _, e) = sweep_run(&out, &["--index", "4"], &[]);
    assert_eq!(c, 2);
    assert!(
        e.contains("entry 4 does not exist: the sweep has 4 entries"),
        "{e}"
    );
    // Collect: one row per run, the missing one listed, metrics equal to the results' values.
    let (c, csv, e) = pmusim(&["sweep", "collect", out.to_str().unwrap()]);
    assert_eq!(c, 0, "{e}");
    assert!(
        e.contains("4 runs: 3 ok, 1 missing, 0 failed")
            && e.contains(&format!("missing: entry 1 ({h1})")),
        "{e}"
    );
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(
        lines[0],
        "index,hash,machine,caches.l2.size_bytes,workload,size,procs,status,simulated_cycles (proc. cycles),references (count),l2_misses (count)"
    );
    assert_eq!(lines.len(), 5);
    let r0 = res(0);
    let l2: u64 = r0["ground_truth"]["processors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["l2"]["misses"].as_u64().unwrap())
        .sum();
    assert_eq!(
        lines[1],
        format!(
            "0,{},ideal,65536,migratory,test,1,ok,{},{},{l2}",
            m[0]["hash"].as_str().unwrap(),
            r0["run"]["simulated_cycles"],
            r0["run"]["references"]
        )
    );
    assert_eq!(
        lines[2],
        format!("1,{h1},ideal,65536,migratory,test,2,missing,,,")
    );
    // JSON: the report crate's typed table (columns with units), then the runs without a result.
    let (_, j, _) = pmusim(&[
        "sweep",
        "collect",
        out.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let j: serde_json::Value = serde_json::from_str(&j).unwrap();
    assert_eq!(j["schema"], "pmusim.sweep-table/1");
    let t = &j["sections"][0]["blocks"][0]["table"];
    assert_eq!(t["rows"].as_array().unwrap().len(), 4);
    assert_eq!(t["columns"][8]["name"], "simulated_cycles");
    assert_eq!(t["columns"][8]["kind"]["quantity"]["unit"], "cycles");
    assert_eq!(t["rows"][3][8], res(3)["run"]["simulated_cycles"]);
    assert_eq!(t["rows"][1][8], serde_json::Value::Null);
    let missing = &j["sections"][0]["blocks"][1]["table"];
    assert_eq!(
        missing["rows"],
        serde_json::json!([[1, h1, "missing", null]])
    );
    // Parquet: a binary file, so -o is required; without the cargo feature, a named refusal.
    let (c, _, e) = pmusim(&[
        "sweep",
        "collect",
        out.to_str().unwrap(),
        "--format",
        "parquet",
    ]);
    assert_eq!(c, 2);
    assert!(e.contains("add -o FILE.parquet"), "{e}");
    let pq = d.join("t.parquet");
    let (c, _, e) = pmusim(&[
        "sweep",
        "collect",
        out.to_str().unwrap(),
        "--format",
        "parquet",
        "-o",
        pq.to_str().unwrap(),
    ]);
    #[cfg(not(feature = "parquet"))]
    {
        assert_eq!(c, 2);
        assert!(e.contains("--features parquet"), "{e}");
        assert!(!pq.exists());
    }
    #[cfg(feature = "parquet")]
    {
        use parquet::file::reader::{FileReader, SerializedFileReader};
        use parquet::record::Field;
        assert_eq!(c, 0, "{e}");
        let r = SerializedFileReader::new(std::fs::File::open(&pq).unwrap()).unwrap();
        let rows: Vec<Vec<(String, Field)>> = r
            .get_row_iter(None)
            .unwrap()
            .map(|row| {
                row.unwrap()
                    .get_column_iter()
                    .map(|(n, f)| (n.clone(), f.clone()))
                    .collect()
            })
            .collect();
        assert_eq!(rows.len(), 4);
        // The same values as the CSV, typed: integers as INT64, the missing run's metrics null.
        let cycles = res(3)["run"]["simulated_cycles"].as_u64().unwrap() as i64;
        assert_eq!(rows[3][8], ("simulated_cycles".into(), Field::Long(cycles)));
        assert_eq!(rows[1][7], ("status".into(), Field::Str("missing".into())));
        assert_eq!(rows[1][8].1, Field::Null);
        assert_eq!(
            rows[0][3],
            ("caches.l2.size_bytes".into(), Field::Long(65536))
        );
    }
    // Plots: one per metric against procs, a line per L2 size; the missing run left out.
    let svg = d.join("plots");
    let (c, _, e) = pmusim(&[
        "sweep",
        "collect",
        out.to_str().unwrap(),
        "-o",
        d.join("t.csv").to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
        "--x",
        "procs",
    ]);
    assert_eq!(c, 0, "{e}");
    assert_eq!(std::fs::read_to_string(d.join("t.csv")).unwrap(), csv);
    let s = std::fs::read_to_string(svg.join("l2_misses.svg")).unwrap();
    assert!(s.contains("caches.l2.size_bytes=65536") && s.contains("l2_misses against procs"));
    let (c, _, e) = pmusim(&[
        "sweep",
        "collect",
        out.to_str().unwrap(),
        "--svg",
        svg.to_str().unwrap(),
        "--x",
        "workload",
    ]);
    assert_eq!(c, 2);
    assert!(
        e.contains("--x workload: the axis has values that are not numbers"),
        "{e}"
    );
    std::fs::remove_dir_all(d).unwrap();
}

#[test]
fn sweep_failed_runs_are_logged_and_submit_writes_a_job_array() {
    let d = sweep_dir("fail");
    let f = d.join("sweep.toml");
    std::fs::write(&f, "[axes]\nmachine = [\"ideal\"]\nworkload = [\"migratory\"]\nsize = [\"test\"]\nprocs = [1, 2]\n").unwrap();
    let out = d.join("out");
    let (c, _, e) = pmusim(&[
        "sweep",
        "plan",
        f.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(c, 0, "{e}");
    // Make entry 0 fail: point it at a preset file that does not exist.
    let text = std::fs::read_to_string(out.join("manifest.jsonl")).unwrap();
    let broken = text.replacen("\"ideal\"", "\"presets/missing.toml\"", 1);
    std::fs::write(out.join("manifest.jsonl"), broken).unwrap();
    let m = manifest_lines(&out);
    let (c, o, _) = sweep_run(&out, &["-j", "1"], &[]);
    assert_eq!(c, 1);
    assert!(o.contains("ran 1, already done 0, failed 1"), "{o}");
    let log =
        std::fs::read_to_string(out.join(format!("failed/{}.log", m[0]["hash"].as_str().unwrap())))
            .unwrap();
    assert!(
        log.starts_with("exit code: 2\n") && log.contains("presets/missing.toml"),
        "{log}"
    );
    let (_, _, e) = pmusim(&["sweep", "collect", out.to_str().unwrap()]);
    assert!(e.contains("1 ok, 0 missing, 1 failed"), "{e}");
    let (c, s, e) = pmusim(&[
        "sweep",
        "submit",
        out.to_str().unwrap(),
        "--slurm",
        "--partition",
        "debug",
        "--time",
        "00:10:00",
        "--mem",
        "1G",
        "--max-parallel",
        "8",
        "--print",
    ]);
    assert_eq!(c, 0, "{e}");
    assert_eq!(
        s,
        std::fs::read_to_string(out.join("sweep.sbatch")).unwrap()
    );
    for l in [
        "#SBATCH --array=0-1%8",
        "#SBATCH --partition=debug",
        "#SBATCH --time=00:10:00",
        "#SBATCH --mem=1G",
    ] {
        assert!(s.lines().any(|x| x == l), "{l} in\n{s}");
    }
    assert!(
        s.contains("sweep run '") && s.ends_with("--index \"$SLURM_ARRAY_TASK_ID\"\n"),
        "{s}"
    );
    // Kubernetes: an Indexed Job of 2 tasks, 8 at once, the volume at the sweep's path.
    let (c, _, e) = pmusim(&["sweep", "submit", out.to_str().unwrap(), "--kubernetes"]);
    assert_eq!(c, 2);
    assert!(e.contains("--kubernetes needs --image IMAGE"), "{e}");
    let (c, y, e) = pmusim(&[
        "sweep",
        "submit",
        out.to_str().unwrap(),
        "--kubernetes",
        "--image",
        "registry.example/pmusim:1",
        "--pvc",
        "sweeps",
        "--max-parallel",
        "8",
        "--print",
    ]);
    assert_eq!(c, 0, "{e}");
    assert_eq!(
        y,
        std::fs::read_to_string(out.join("sweep-job.yaml")).unwrap()
    );
    let dir = std::fs::canonicalize(&out).unwrap();
    for l in [
        "  completionMode: Indexed".to_string(),
        "  completions: 2".into(),
        "  parallelism: 8".into(),
        "        image: \"registry.example/pmusim:1\"".into(),
        format!("          mountPath: \"{}\"", dir.display()),
        "          claimName: \"sweeps\"".into(),
    ] {
        assert!(y.lines().any(|x| x == l), "{l} in\n{y}");
    }
    let (c, _, e) = pmusim(&["sweep", "submit", out.to_str().unwrap()]);
    assert_eq!(c, 2);
    assert!(e.contains("give one of --slurm and --kubernetes"), "{e}");
    std::fs::remove_dir_all(d).unwrap();
}

/// The table does not depend on the pool: 1 job and 3 jobs give the same CSV, byte for byte;
/// a directory planned by another build is refused before anything runs.
#[test]
fn sweep_table_is_independent_of_the_pool_and_tied_to_its_build() {
    let (d1, a) = plan_sweep("pool-1");
    let (d2, b) = plan_sweep("pool-3");
    let (c, _, e) = sweep_run(&a, &["--jobs", "1"], &[]);
    assert_eq!(c, 0, "{e}");
    let (c, _, e) = sweep_run(&b, &["--jobs", "3"], &[]);
    assert_eq!(c, 0, "{e}");
    let (_, ta, _) = pmusim(&["sweep", "collect", a.to_str().unwrap()]);
    let (_, tb, _) = pmusim(&["sweep", "collect", b.to_str().unwrap()]);
    assert_eq!(ta, tb);
    assert_eq!(ta.lines().count(), 5);
    assert!(ta.lines().skip(1).all(|l| l.contains(",ok,")), "{ta}");
    // Another build planned it: refused (exit 2), nothing run; --any-build overrides.
    let p = b.join("plan.json");
    let plan = std::fs::read_to_string(&p).unwrap();
    let v: serde_json::Value = serde_json::from_str(&plan).unwrap();
    let build = v["build"].as_str().unwrap();
    assert_eq!(build.len(), 16);
    std::fs::write(&p, plan.replace(build, "0123456789abcdef")).unwrap();
    let (c, _, e) = sweep_run(&b, &[], &[]);
    assert_eq!(c, 2);
    assert!(
        e.contains("was planned by another pmusim build (0123456789abcdef;"),
        "{e}"
    );
    let (c, o, _) = sweep_run(&b, &["--any-build"], &[]);
    assert_eq!(c, 0);
    assert!(o.contains("ran 0, already done 4"), "{o}");
    for x in [d1, d2] {
        std::fs::remove_dir_all(x).unwrap();
    }
}

/// Traces and monitor files are named relative to the sweep file and run by absolute path, so
/// the sweep directory can live anywhere; the monitor's section is in each result.
#[test]
fn sweep_traces_and_monitor_files_are_found_beside_the_sweep_file() {
    let d = sweep_dir("files");
    std::fs::write(
        d.join("prog.lackey"),
        "==7== Command: ./a.out\nI  00401000,3\n L 00601040,8\nI  00401003,4\n S 00601048,4\n",
    )
    .unwrap();
    let mon = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/numachine/counters-sram.toml"
    );
    std::fs::copy(mon, d.join("mon.toml")).unwrap();
    std::fs::write(
        d.join("sweep.toml"),
        "[axes]\nmachine = \"numachine\"\nworkload = [\"trace:prog.lackey\", \"migratory\"]\nsize = \"test\"\nprocs = 4\nmonitor = [\"none\", \"mon.toml\"]\n\
         [metrics]\nreferences = { path = \"/run/references\", unit = \"count\" }\n",
    )
    .unwrap();
    let out = d.join("elsewhere/out");
    let (c, o, e) = pmusim(&[
        "sweep",
        "plan",
        d.join("sweep.toml").to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(c, 0, "{e}");
    assert!(o.starts_with("planned 4 runs"), "{o}");
    let m = manifest_lines(&out);
    let dir = std::fs::canonicalize(&d).unwrap();
    assert_eq!(
        m[0]["args"][1],
        format!("trace:{}", dir.join("prog.lackey").display())
    );
    assert_eq!(m[1]["args"][10], "--monitor");
    assert_eq!(m[1]["args"][11], dir.join("mon.toml").display().to_string());
    assert_eq!(m[1]["axes"]["monitor"], "mon.toml");
    let (c, o, e) = sweep_run(&out, &[], &[]);
    assert_eq!(c, 0, "{e}");
    assert!(o.contains("ran 4, already done 0, failed 0"), "{o}");
    let res = |i: usize| -> serde_json::Value {
        let h = m[i]["hash"].as_str().unwrap();
        serde_json::from_slice(&std::fs::read(out.join(format!("results/{h}.json"))).unwrap())
            .unwrap()
    };
    // The trace's 2 data references (and its 2 instructions' fetches are not data).
    assert_eq!(res(0)["run"]["references"], 2);
    assert!(res(0)["monitors"].as_object().unwrap().is_empty());
    assert!(
        res(1)["monitors"]["numachine"].is_object(),
        "{}",
        res(1)["monitors"]
    );
    assert_eq!(res(1)["run"]["references"], res(0)["run"]["references"]);
    std::fs::remove_dir_all(d).unwrap();
}

/// The JSON of `study flashpoint` without the host's wall-clock fields.
fn study_without_wall_clock(text: &str) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(text).unwrap();
    v.as_object_mut().unwrap().remove("wall_seconds");
    for r in v["runs"].as_array_mut().unwrap() {
        r.as_object_mut().unwrap().remove("wall_seconds");
    }
    v
}

/// `study flashpoint` is a sweep (issue 18, item 5): planned with `--plan-only`, its entries
/// run one by one as a scheduler's array tasks would (`sweep run --index I`), then the same
/// study command only tabulates, and gives the document the study gives on its own pool. The
/// table step's figures are the runs' own: the DP row's read misses are its result's ground
/// truth, its time the result's simulated ticks in system cycles.
#[test]
fn sweep_study_flashpoint_runs_by_index_and_tabulates_the_same() {
    let study = [
        "study",
        "flashpoint",
        "--size",
        "test",
        "--kernels",
        "fft",
        "--procs",
        "4",
        "--json",
    ];
    let (c, direct, e) = pmusim(&study);
    assert_eq!(c, 0, "{e}");
    let d = sweep_dir("study-fp");
    let dir = d.join("fp");
    let with_dir = |extra: &[&str]| {
        let mut a: Vec<&str> = study.to_vec();
        a.extend(["--sweep-dir", dir.to_str().unwrap()]);
        a.extend(extra);
        pmusim(&a)
    };
    let (c, out, e) = with_dir(&["--plan-only"]);
    assert_eq!(c, 0, "{e}");
    assert!(
        out.starts_with("planned 3 runs of study flashpoint"),
        "{out}"
    );
    let m = manifest_lines(&dir);
    assert_eq!(m.len(), 3);
    for i in 0..3 {
        let (c, _, e) = sweep_run(&dir, &["--index", &i.to_string()], &[]);
        assert_eq!(c, 0, "{e}");
    }
    let (c, tabulated, e) = with_dir(&[]);
    assert_eq!(c, 0, "{e}");
    assert!(
        e.contains("3 of 3 results were already in") && !e.contains(" ok ("),
        "{e}"
    );
    let (s, t) = (
        study_without_wall_clock(&direct),
        study_without_wall_clock(&tabulated),
    );
    assert_eq!(s, t);
    let dp = m.iter().find(|l| l["axes"]["protocol"] == "dp").unwrap();
    let res: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            dir.join("results")
                .join(format!("{}.json", dp["hash"].as_str().unwrap())),
        )
        .unwrap(),
    )
    .unwrap();
    let row = t["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["protocol"] == "dp")
        .unwrap();
    assert_eq!(
        row["truth_reads"][0].as_f64().unwrap(),
        res["ground_truth"]["totals"]["read_misses"]
            .as_f64()
            .unwrap()
    );
    let sd = &res["monitors"]["flashpoint"]["study"];
    assert_eq!(
        row["time_system_cycles"].as_f64().unwrap(),
        res["run"]["simulated_ticks"].as_f64().unwrap() / sd["sys_period"].as_f64().unwrap()
    );
    assert!(row["reads"][0].as_f64().unwrap() > 0.0);
    // Not a sweep: the flags are refused.
    let (c, _, e) = pmusim(&["study", "memctl", "--sweep-dir", "/tmp/x", "--size", "test"]);
    assert_eq!(c, 2, "{e}");
    assert!(e.contains("is not a sweep"), "{e}");
    std::fs::remove_dir_all(&d).unwrap();
}
