//! `pmusim run a+b+...`: several built-in workloads at once, each a process of its own under
//! the operating-system model (`machine::os`), each with `--threads` threads (default: one per
//! processor), each verified against its own reference.

use crate::cli::RunArgs;
use crate::Failure;
use machine::config::Preset;
use monitor::Monitor;
use serde_json::json;
use std::time::Instant;
use workload::Size;

/// The processes' names: the workloads', a repeated one numbered (`fft`, `fft.2`).
fn names(spec: &str) -> Result<Vec<(String, String)>, Failure> {
    let mut out: Vec<(String, String)> = Vec::new();
    for w in spec.split('+') {
        if w.is_empty() {
            return Err(Failure::input(format!(
                "workload `{spec}`: an empty name between `+` signs"
            )));
        }
        if w.starts_with("trace:") {
            return Err(Failure::input(format!(
                "workload `{w}` in `{spec}`: traces cannot run as processes of a multiprogrammed run yet"
            )));
        }
        let k = out.iter().filter(|(wl, _)| wl == w).count();
        let name = if k == 0 {
            w.to_string()
        } else {
            format!("{w}.{}", k + 1)
        };
        out.push((w.to_string(), name));
    }
    Ok(out)
}

pub fn run(
    a: &RunArgs,
    mut preset: Preset,
    mut mons: Vec<Box<dyn Monitor>>,
    size: Size,
) -> Result<u8, Failure> {
    let procs = names(&a.workload)?;
    let mut found = Vec::new();
    for (w, _) in &procs {
        let wl = workload::find(w, size)
            .map_err(|e| Failure::input(format!("workload `{w}` in `{}`: {e}", a.workload)))?;
        found.push(wl);
    }
    for m in &a.mark {
        if !procs.iter().any(|(_, n)| n == m) {
            let flag = if a.monitor_process.as_ref() == Some(m) {
                "--monitor-process"
            } else {
                "--mark"
            };
            return Err(Failure::input(format!(
                "{flag} {m}: no such process in `{}` (processes: {})",
                a.workload,
                procs
                    .iter()
                    .map(|(_, n)| n.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    if preset.os.is_none() {
        preset.os = Some(machine::os::config::OsCfg::default());
    }
    let mut m = crate::run::new_machine(preset, a)?;
    let n = a.threads.unwrap_or(m.state().cores.len());
    let max = m.state().preset.contexts() * workload::MAX_THREADS_PER_CONTEXT;
    if n == 0 || n * procs.len() > max {
        return Err(Failure::input(format!(
            "--threads {n}: each of the {} processes gets that many threads; 1 to {} in all",
            procs.len(),
            max
        )));
    }
    let start = Instant::now();
    let mut installed = Vec::new();
    for ((_, name), wl) in procs.iter().zip(found) {
        let pid = m
            .new_process(name, a.mark.contains(name))
            .map_err(Failure::input)?;
        let w = workload::install_process(wl, &mut m, pid, n)
            .map_err(|e| Failure::input(format!("process `{name}`: {e}")))?;
        installed.push(w);
    }
    for mon in &mut mons {
        mon.attach(&mut m)?;
    }
    let (sum, stop) = crate::live::simulate(a, &mut m, &mut mons)?;
    let wall = start.elapsed().as_secs_f64();
    let mut all = true;
    let mut details = Vec::new();
    let mut each = Vec::new();
    for ((_, name), w) in procs.iter().zip(&installed) {
        let v = crate::run::verify_unless_stopped(|| w.verify(), stop, &sum);
        all &= v.verified;
        details.push(format!("{name}: {}", v.detail));
        each.push(json!({
            "name": name,
            "threads": n,
            "verified": v.verified,
            "detail": v.detail,
        }));
    }
    let detail = details.join("; ");
    let wl = json!({
        "name": a.workload,
        "size": size.name(),
        "threads": n * procs.len(),
        "verified": all,
        "detail": detail,
        "processes": each,
    });
    crate::run::finish(a, &m, &mons, &sum, stop, wl, wall, all, &detail)
}
