//! `pmusim sweep submit DIR --slurm|--kubernetes`: a scheduler job array with one task per
//! manifest entry, each running `pmusim sweep run DIR --index I` (the index from
//! `SLURM_ARRAY_TASK_ID` or `JOB_COMPLETION_INDEX`). Results are atomic and skipped when
//! present, so a requeued or retried task is harmless.
//!
//! Slurm: DIR/sweep.sbatch, submitted with `sbatch` (`--wait` blocks until the whole array has
//! ended, then reports the results); `--print` only writes it. Kubernetes: DIR/sweep-job.yaml,
//! an Indexed Job, written (not applied: `kubectl apply -f` it). The sweep directory and the
//! binary must be at the same paths on every node (a shared file system; in Kubernetes, a
//! volume mounted at DIR and an image holding pmusim).

use super::run::{manifest, result_path};
use super::SubmitArgs;
use crate::Failure;
use std::fmt::Write;
use std::path::Path;

/// A single-quoted shell word.
fn sh(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// A double-quoted YAML string.
fn yq(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

pub fn script(a: &SubmitArgs, n: usize, exe: &str, dir: &str) -> String {
    let mut s = String::from("#!/bin/bash\n");
    let _ = writeln!(s, "#SBATCH --job-name={}", a.name);
    let pct = a.max_parallel.map_or(String::new(), |k| format!("%{k}"));
    let _ = writeln!(s, "#SBATCH --array=0-{}{pct}", n - 1);
    let _ = writeln!(s, "#SBATCH --cpus-per-task=1");
    let _ = writeln!(s, "#SBATCH --output={dir}/slurm/%A_%a.out");
    for (flag, v) in [
        ("partition", &a.partition),
        ("time", &a.time),
        ("mem", &a.mem),
    ] {
        if let Some(v) = v {
            let _ = writeln!(s, "#SBATCH --{flag}={v}");
        }
    }
    for x in &a.sbatch_arg {
        let _ = writeln!(s, "#SBATCH {x}");
    }
    let _ = writeln!(
        s,
        "exec {} sweep run {} --index \"$SLURM_ARRAY_TASK_ID\"",
        sh(exe),
        sh(dir)
    );
    s
}

/// A Kubernetes Indexed Job: `completions` tasks, `parallelism` at once, each told its index
/// in JOB_COMPLETION_INDEX; the sweep directory comes from a persistent volume claim mounted
/// at the same path.
pub fn kubernetes(a: &SubmitArgs, n: usize, exe: &str, dir: &str) -> Result<String, Failure> {
    let image = a.image.as_deref().ok_or_else(|| {
        Failure::input("--kubernetes needs --image IMAGE (a container image holding pmusim)")
    })?;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: {}",
        a.name
    );
    let _ = writeln!(
        s,
        "spec:\n  completionMode: Indexed\n  completions: {n}\n  parallelism: {}\n  backoffLimitPerIndex: 2\n  maxFailedIndexes: {n}",
        a.max_parallel.unwrap_or(n.min(64))
    );
    let _ = writeln!(
        s,
        "  template:\n    spec:\n      restartPolicy: Never\n      containers:\n      - name: run\n        image: {}\n        command: [{}, \"sweep\", \"run\", {}]",
        yq(image),
        yq(exe),
        yq(dir)
    );
    let mut res = Vec::new();
    if let Some(m) = &a.mem {
        res.push(format!("memory: {}", yq(m)));
    }
    let _ = writeln!(
        s,
        "        resources:\n          requests:\n            cpu: \"1\"{}",
        res.iter()
            .map(|r| format!("\n            {r}"))
            .collect::<String>()
    );
    if let Some(pvc) = &a.pvc {
        let _ = writeln!(
            s,
            "        volumeMounts:\n        - name: sweep\n          mountPath: {}\n      volumes:\n      - name: sweep\n        persistentVolumeClaim:\n          claimName: {}",
            yq(dir),
            yq(pvc)
        );
    }
    Ok(s)
}

/// How many entries have a result (after `sbatch --wait`).
fn done(dir: &Path, hashes: &[String]) -> usize {
    hashes
        .iter()
        .filter(|h| result_path(dir, h).exists())
        .count()
}

pub fn submit(a: SubmitArgs) -> Result<u8, Failure> {
    let entries = manifest(&a.dir)?;
    let n = entries.len();
    if n == 0 {
        return Err(Failure::input(
            "the manifest has no entries: nothing to submit",
        ));
    }
    if a.max_parallel == Some(0) {
        return Err(Failure::input("--max-parallel 0: give at least 1"));
    }
    if a.slurm == a.kubernetes {
        return Err(Failure::input("give one of --slurm and --kubernetes"));
    }
    let dir = std::fs::canonicalize(&a.dir)
        .map_err(|e| Failure::input(format!("{}: {e}", a.dir.display())))?;
    let exe = std::env::current_exe()
        .map_err(|e| Failure::input(format!("cannot find this program's path: {e}")))?;
    let (exe_s, dir_s) = (exe.display().to_string(), dir.display().to_string());
    let io =
        |p: &Path, e: std::io::Error| Failure::input(format!("cannot write {}: {e}", p.display()));
    if a.kubernetes {
        let text = kubernetes(&a, n, &exe_s, &dir_s)?;
        let path = dir.join("sweep-job.yaml");
        super::plan::write_atomic(&path, text.as_bytes()).map_err(|e| io(&path, e))?;
        if a.print {
            print!("{text}");
        }
        eprintln!(
            "pmusim: wrote {} (an Indexed Job of {n} tasks): kubectl apply -f it",
            path.display()
        );
        return Ok(0);
    }
    let text = script(&a, n, &exe_s, &dir_s);
    std::fs::create_dir_all(dir.join("slurm")).map_err(|e| io(&dir.join("slurm"), e))?;
    let path = dir.join("sweep.sbatch");
    super::plan::write_atomic(&path, text.as_bytes()).map_err(|e| io(&path, e))?;
    if a.print {
        print!("{text}");
        eprintln!("pmusim: wrote {}", path.display());
        return Ok(0);
    }
    let mut cmd = std::process::Command::new("sbatch");
    if a.wait {
        cmd.arg("--wait");
    }
    let st = cmd.arg(&path).status();
    let hashes: Vec<String> = entries.into_iter().map(|e| e.hash).collect();
    match st {
        Ok(s) if s.success() || a.wait => {
            if !a.wait {
                return Ok(0);
            }
            // sbatch --wait exits non-zero when a task failed; the results say which.
            let k = done(&dir, &hashes);
            println!("sweep submit: the array has ended: {k} of {n} entries have a result (sbatch: {s})");
            if k < n {
                eprintln!(
                    "pmusim: `pmusim sweep collect {}` lists the others and their logs",
                    dir.display()
                );
            }
            Ok(u8::from(k < n))
        }
        Ok(s) => Err(Failure::sim(format!("sbatch {} failed ({s})", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Failure::input(format!(
            "sbatch is not installed here (not on PATH): the script is written at {}; submit it on the cluster's login node, or use --print",
            path.display()
        ))),
        Err(e) => Err(Failure::input(format!("cannot run sbatch: {e}"))),
    }
}
