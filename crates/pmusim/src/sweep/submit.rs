//! `pmusim sweep submit DIR --slurm`: a Slurm job array with one task per manifest entry,
//! each running `pmusim sweep run DIR --index $SLURM_ARRAY_TASK_ID` (results are atomic and
//! skipped when present, so a requeued task is harmless).

use super::run::manifest;
use super::SubmitArgs;
use crate::Failure;
use std::fmt::Write;

/// A single-quoted shell word.
fn sh(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

pub fn script(a: &SubmitArgs, n: usize, exe: &str, dir: &str) -> String {
    let mut s = String::from("#!/bin/bash\n");
    let _ = writeln!(s, "#SBATCH --job-name=pmusim-sweep");
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

pub fn submit(a: SubmitArgs) -> Result<u8, Failure> {
    let n = manifest(&a.dir)?.len();
    if n == 0 {
        return Err(Failure::input(
            "the manifest has no entries: nothing to submit",
        ));
    }
    if a.max_parallel == Some(0) {
        return Err(Failure::input("--max-parallel 0: give at least 1"));
    }
    let dir = std::fs::canonicalize(&a.dir)
        .map_err(|e| Failure::input(format!("{}: {e}", a.dir.display())))?;
    let exe = std::env::current_exe()
        .map_err(|e| Failure::input(format!("cannot find this program's path: {e}")))?;
    let text = script(
        &a,
        n,
        &exe.display().to_string(),
        &dir.display().to_string(),
    );
    let _ = std::fs::create_dir_all(dir.join("slurm"));
    let path = dir.join("sweep.sbatch");
    super::plan::write_atomic(&path, text.as_bytes())
        .map_err(|e| Failure::input(format!("cannot write {}: {e}", path.display())))?;
    if a.print {
        print!("{text}");
        eprintln!("pmusim: wrote {}", path.display());
        return Ok(0);
    }
    let st = std::process::Command::new("sbatch").arg(&path).status();
    match st {
        Ok(s) if s.success() => Ok(0),
        Ok(s) => Err(Failure::sim(format!(
            "sbatch {} failed ({s})",
            path.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Failure::input(format!(
            "sbatch is not installed here (not on PATH): the script is written at {}; submit it on the cluster's login node, or use --print",
            path.display()
        ))),
        Err(e) => Err(Failure::input(format!("cannot run sbatch: {e}"))),
    }
}
