//! `pmusim sweep run DIR [--jobs N] [--index I]`: runs the manifest's entries that have no
//! result yet, each as a child process of this same binary (a crash or a runaway run cannot
//! take the others down, and the result is exactly what `pmusim run ... --json` prints).
//!
//! A result is written to a temporary file and renamed to DIR/results/HASH.json, so it exists
//! whole or not at all: an interrupted sweep resumes where it stopped, and a scheduler's retry
//! of a finished task does nothing. A failed run leaves DIR/failed/HASH.log (exit code, the
//! command, its standard error) and is tried again by the next `sweep run`.

use super::plan::write_atomic;
use super::RunArgs;
use crate::Failure;
use indicatif::{ProgressBar, ProgressStyle};
use serde_json::Value as Json;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// One line of the manifest.
pub struct Planned {
    pub hash: String,
    pub axes: serde_json::Map<String, Json>,
    pub args: Vec<String>,
}

pub fn manifest(dir: &Path) -> Result<Vec<Planned>, Failure> {
    let p = dir.join("manifest.jsonl");
    let text = std::fs::read_to_string(&p).map_err(|e| {
        Failure::input(format!(
            "cannot read {}: {e} (write it with `pmusim sweep plan FILE -o {}`)",
            p.display(),
            dir.display()
        ))
    })?;
    text.lines()
        .enumerate()
        .map(|(i, l)| {
            let bad = |w: &str| Failure::input(format!("{}:{}: {w}", p.display(), i + 1));
            let v: Json = serde_json::from_str(l).map_err(|e| bad(&e.to_string()))?;
            Ok(Planned {
                hash: v["hash"]
                    .as_str()
                    .ok_or_else(|| bad("no `hash`"))?
                    .to_string(),
                axes: v["axes"].as_object().cloned().unwrap_or_default(),
                args: v["args"]
                    .as_array()
                    .ok_or_else(|| bad("no `args`"))?
                    .iter()
                    .map(|a| {
                        a.as_str()
                            .map(str::to_string)
                            .ok_or_else(|| bad("an argument is not a string"))
                    })
                    .collect::<Result<_, _>>()?,
            })
        })
        .collect()
}

pub fn result_path(dir: &Path, hash: &str) -> PathBuf {
    dir.join("results").join(format!("{hash}.json"))
}

pub fn failed_path(dir: &Path, hash: &str) -> PathBuf {
    dir.join("failed").join(format!("{hash}.log"))
}

/// The entry a scheduler task runs: `--index`, else the array index the scheduler sets
/// (Slurm job arrays; Kubernetes Indexed Jobs).
fn task_index(a: &RunArgs, env: bool) -> Result<Option<usize>, Failure> {
    if let Some(i) = a.index {
        return Ok(Some(i));
    }
    if !env {
        return Ok(None);
    }
    for var in ["SLURM_ARRAY_TASK_ID", "JOB_COMPLETION_INDEX"] {
        if let Ok(v) = std::env::var(var) {
            return v
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| Failure::input(format!("{var}={v}: not an entry index")));
        }
    }
    Ok(None)
}

enum Outcome {
    Done,
    Ran,
    Failed,
}

/// Runs one entry unless its result exists.
fn run_one(dir: &Path, exe: &Path, e: &Planned) -> Result<Outcome, String> {
    let res = result_path(dir, &e.hash);
    if res.exists() {
        return Ok(Outcome::Done);
    }
    let out = std::process::Command::new(exe)
        .args(&e.args)
        .current_dir(dir)
        .output()
        .map_err(|err| format!("cannot start {}: {err}", exe.display()))?;
    let code = out.status.code();
    let doc_ok = serde_json::from_slice::<Json>(&out.stdout).is_ok();
    if code == Some(0) && doc_ok {
        write_atomic(&res, &out.stdout).map_err(|err| format!("{}: {err}", res.display()))?;
        let _ = std::fs::remove_file(failed_path(dir, &e.hash));
        return Ok(Outcome::Ran);
    }
    let log = format!(
        "exit code: {}\ncommand: pmusim {}\n(run in {})\n--- stderr ---\n{}",
        code.map_or("none (killed by a signal)".to_string(), |c| c.to_string()),
        e.args.join(" "),
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let lp = failed_path(dir, &e.hash);
    write_atomic(&lp, log.as_bytes()).map_err(|err| format!("{}: {err}", lp.display()))?;
    Ok(Outcome::Failed)
}

/// A run's expected cost from its plan, as a sort key: the problem size, then the processor
/// count (both grow the simulated work; the workload's own cost is not known before it runs).
fn expected_cost(e: &Planned) -> (u8, usize) {
    let value = |flag: &str| {
        e.args
            .iter()
            .position(|a| a == flag)
            .and_then(|i| e.args.get(i + 1))
    };
    let size = match value("--size").map(String::as_str) {
        Some("test") => 0,
        Some("paper") => 2,
        _ => 1, // `small`, also `pmusim run`'s default
    };
    let procs = value("--procs").and_then(|p| p.parse().ok()).unwrap_or(0);
    (size, procs)
}

/// The pool's order: the longest expected runs first (manifest order among equals), so that
/// the last runs, which one thread runs while the others have nothing left, are short ones
/// (the longest-processing-time-first rule). The results do not depend on the order.
fn longest_first(entries: &[Planned]) -> Vec<usize> {
    let mut v: Vec<usize> = (0..entries.len()).collect();
    v.sort_by_key(|&i| std::cmp::Reverse(expected_cost(&entries[i])));
    v
}

/// Refuses to add this build's results to a directory another build planned (see
/// `plan::build_id`), unless told the simulator did not change.
fn check_build(dir: &Path, any: bool) -> Result<(), Failure> {
    let p = dir.join("plan.json");
    let plan: Json = std::fs::read_to_string(&p)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or_else(|| Failure::input(format!("cannot read {}", p.display())))?;
    let theirs = plan["build"].as_str().unwrap_or("unknown");
    let ours = super::plan::build_id()?;
    if theirs != ours && !any {
        return Err(Failure::input(format!(
            "{} was planned by another pmusim build ({theirs}; this one is {ours}): its results would mix two simulators. Plan again into a new directory, or pass --any-build if the simulator's results did not change",
            dir.display()
        )));
    }
    Ok(())
}

/// What a pool did: entries already done, run, failed; seconds; host threads.
pub struct PoolSummary {
    pub entries: usize,
    pub done: usize,
    pub ran: usize,
    pub failed: usize,
    pub seconds: f64,
    pub jobs: usize,
}

pub fn run(a: RunArgs) -> Result<u8, Failure> {
    let s = pool(&a, true)?;
    println!(
        "sweep run: {} entries: ran {}, already done {}, failed {} ({:.1} s, {} jobs)",
        s.entries, s.ran, s.done, s.failed, s.seconds, s.jobs
    );
    if s.failed > 0 {
        eprintln!(
            "pmusim: {} runs failed: their logs are in {}",
            s.failed,
            a.dir.join("failed").display()
        );
    }
    Ok(u8::from(s.failed > 0))
}

/// Runs the entries of `a.dir` without a result (all, or `--index`'s, or with `task_env` the
/// scheduler task's one), each as a child process, on `a.jobs` host threads, printing a line
/// per finished run on standard error.
pub fn pool(a: &RunArgs, task_env: bool) -> Result<PoolSummary, Failure> {
    let dir = a.dir.clone();
    let entries = manifest(&dir)?;
    for sub in ["results", "failed"] {
        std::fs::create_dir_all(dir.join(sub)).map_err(|e| {
            Failure::input(format!("cannot create {}: {e}", dir.join(sub).display()))
        })?;
    }
    let exe = std::env::current_exe()
        .map_err(|e| Failure::input(format!("cannot find this program's path: {e}")))?;
    check_build(&dir, a.any_build)?;
    let todo: Vec<usize> = match task_index(a, task_env)? {
        Some(i) if i >= entries.len() => {
            return Err(Failure::input(format!(
                "entry {i} does not exist: the sweep has {} entries (0 to {})",
                entries.len(),
                entries.len().saturating_sub(1)
            )))
        }
        Some(i) => vec![i],
        None => longest_first(&entries),
    };
    if a.jobs == Some(0) {
        return Err(Failure::input(
            "--jobs 0: give at least 1 (the default is the host's cores)",
        ));
    }
    let jobs = a
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
        .clamp(1, todo.len().max(1));
    let next = AtomicUsize::new(0);
    let counts = Mutex::new([0usize; 3]);
    let errors = Mutex::new(Vec::new());
    let start = Instant::now();
    // On a terminal, a bar (finished runs of all, the time left); each finished run's line is
    // printed above it, as without a terminal (log files, schedulers' outputs).
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = ProgressBar::new(todo.len() as u64);
        b.set_style(
            ProgressStyle::with_template(
                "{bar:40} {pos}/{len} runs, {elapsed} elapsed, about {eta} left",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        b
    });
    let say = |line: String| match &bar {
        Some(b) => b.println(line),
        None => eprintln!("{line}"),
    };
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(&i) = todo.get(k) else { break };
                let e = &entries[i];
                let t = Instant::now();
                match run_one(&dir, &exe, e) {
                    Ok(o) => {
                        let mut c = counts.lock().unwrap();
                        let (slot, what) = match o {
                            Outcome::Done => (0, None),
                            Outcome::Ran => (1, Some("ok")),
                            Outcome::Failed => (2, Some("FAILED")),
                        };
                        c[slot] += 1;
                        if let Some(b) = &bar {
                            b.inc(1);
                        }
                        if let Some(w) = what {
                            // Progress: finished/all, and the time left at the pace so far.
                            let k = c.iter().sum::<usize>();
                            let ran = c[1] + c[2];
                            let left = start.elapsed().as_secs_f64() / ran as f64
                                * (todo.len() - k) as f64;
                            say(format!(
                                "[{k}/{}] entry {i} {} {w} ({:.1} s; about {left:.0} s left)",
                                todo.len(),
                                e.hash,
                                t.elapsed().as_secs_f64()
                            ));
                        }
                    }
                    Err(msg) => errors.lock().unwrap().push(format!("entry {i}: {msg}")),
                }
            });
        }
    });
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let [done, ran, failed] = *counts.lock().unwrap();
    let errors = errors.into_inner().unwrap();
    if !errors.is_empty() {
        return Err(Failure::input(errors.join("\n")));
    }
    Ok(PoolSummary {
        entries: todo.len(),
        done,
        ran,
        failed,
        seconds: start.elapsed().as_secs_f64(),
        jobs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn planned(args: &str) -> Planned {
        Planned {
            hash: String::new(),
            axes: Default::default(),
            args: args.split(' ').map(str::to_string).collect(),
        }
    }

    /// Paper before small (and the default size) before test; more processors first; the
    /// manifest's order among runs of the same expected cost.
    #[test]
    fn the_pool_runs_the_longest_expected_first() {
        let e = [
            planned("run --size test --procs 16"),
            planned("run --size test --procs 64"),
            planned("run --procs 4"),
            planned("run --size test --procs 16 --protocol dp"),
            planned("run --size paper --procs 2"),
            planned("run --size small --procs 8"),
        ];
        assert_eq!(longest_first(&e), vec![4, 5, 2, 1, 0, 3]);
    }
}
