//! `pmusim study NAME` for a study made of independent runs (issue 18, item 5): the monitor
//! hands its sweep file and its table step ([`monitor::plugin::SweepStudy`]); this plans the
//! sweep into a directory, runs the entries without a result on the local pool (the same
//! pool as `pmusim sweep run`), and hands every result to the table step.
//!
//! With `--sweep-dir DIR` the directory stays, and `--plan-only` stops after planning, so a
//! study runs on a cluster unchanged: plan, `pmusim sweep submit DIR --slurm --wait`, then the
//! same `pmusim study ... --sweep-dir DIR`, which finds every result and only tabulates
//! (docs/sweeps/README.md, "A study on Slurm").

use super::run::{failed_path, manifest, pool, result_path};
use super::RunArgs;
use crate::Failure;
use monitor::plugin::{StudyRun, SweepStudy};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Where a study's sweep lives: the directory, and whether this command made it (and so
/// removes it at the end).
struct Dir {
    path: PathBuf,
    ours: bool,
}

impl Drop for Dir {
    fn drop(&mut self) {
        if self.ours {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Runs the study `name` as a sweep; returns its (standard output, exit code).
pub fn run(
    name: &str,
    s: SweepStudy,
    jobs: usize,
    dir: Option<&Path>,
    plan_only: bool,
) -> Result<(String, u8), Failure> {
    let d = match dir {
        Some(p) => Dir {
            path: p.to_path_buf(),
            ours: false,
        },
        None => {
            if plan_only {
                return Err(Failure::input(
                    "--plan-only needs --sweep-dir DIR (the directory a scheduler runs)",
                ));
            }
            let p = std::env::temp_dir().join(format!(
                "pmusim-study-{name}-{}-{}",
                std::process::id(),
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |t| t.as_nanos())
            ));
            Dir {
                path: p,
                ours: true,
            }
        }
    };
    let io =
        |p: &Path, e: std::io::Error| Failure::input(format!("cannot write {}: {e}", p.display()));
    std::fs::create_dir_all(&d.path).map_err(|e| io(&d.path, e))?;
    // The sweep file beside its plan, under the study's name (the plan copies it to
    // sweep.toml; it names no relative paths).
    let file = d.path.join(format!("study-{name}.toml"));
    std::fs::write(&file, &s.sweep).map_err(|e| io(&file, e))?;
    let (runs, _) =
        super::plan::plan_text(&s.sweep, &file.display().to_string(), &d.path, &d.path)?;
    if plan_only {
        return Ok((
            format!(
                "planned {runs} runs of study {name} in {0}\nrun them: pmusim sweep run {0}  (or: pmusim sweep submit {0} --slurm --wait)\nthen the tables: the same `pmusim study` command without --plan-only\n",
                d.path.display()
            ),
            0,
        ));
    }
    eprintln!(
        "study {name}: {runs} simulations on {jobs} host threads (sweep in {})",
        d.path.display()
    );
    let started = Instant::now();
    let sum = pool(
        &RunArgs {
            dir: d.path.clone(),
            jobs: Some(jobs),
            index: None,
            any_build: false,
        },
        false,
    )?;
    let wall = started.elapsed().as_secs_f64();
    if sum.done > 0 {
        eprintln!(
            "study {name}: {} of {runs} results were already in {}",
            sum.done,
            d.path.display()
        );
    }
    let entries = manifest(&d.path)?;
    let mut results = Vec::with_capacity(entries.len());
    let mut missing = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let p = result_path(&d.path, &e.hash);
        match std::fs::read_to_string(&p) {
            Ok(t) => results.push(StudyRun {
                axes: e.axes.clone(),
                doc: serde_json::from_str(&t)
                    .map_err(|err| Failure::sim(format!("{}: {err}", p.display())))?,
            }),
            Err(_) => {
                let log = std::fs::read_to_string(failed_path(&d.path, &e.hash))
                    .map(|l| format!(":\n{}", l.trim_end()))
                    .unwrap_or_default();
                missing.push(format!(
                    "entry {i} ({}){log}",
                    serde_json::Value::Object(e.axes.clone())
                ));
            }
        }
    }
    if !missing.is_empty() {
        return Err(Failure::sim(format!(
            "study {name}: {} of {runs} runs have no result:\n{}",
            missing.len(),
            missing.join("\n")
        )));
    }
    Ok((s.tables)(&results, wall, jobs)?)
}
