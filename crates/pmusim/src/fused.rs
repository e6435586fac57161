//! `pmusim run --record [--save FILE] -- PROGRAM ARGS`: record and simulate at once.
//!
//! Three host threads (plus QEMU's own): QEMU runs the program with the plugin, whose writer
//! thread appends chunks to the trace file; the replay's decode-ahead thread follows the
//! growing file (`tracefmt::Tail`), decompresses and decodes each chunk as soon as its
//! `pwrite` is complete, and hands the records to the simulation through its bounded buffer
//! (16 batches of 4,096 accesses, `tracefmt::BatchReader`); the simulation runs on this
//! thread. When the simulation needs records the recorder has not written yet, the decode
//! thread polls the file every millisecond and the simulation waits for it on the buffer; the
//! recorder never waits for the simulation (the file between them is unbounded).
//!
//! A single-threaded program is simulated this way from start to end. At the main thread's
//! first `clone`, or at the first chunk of another thread, the fused replay stops: a
//! multi-threaded replay pairs each futex wait with the wake that ended it, which can be in
//! any thread's records, written later; those programs are replayed from the finished file
//! (the time is then the recording plus the replay, as before). See `docs/qemu-tracer.md`.

use crate::cli::RunArgs;
use crate::run::{replay_trace, Monitors};
use crate::Failure;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub fn record_and_run(a: &RunArgs, preset: machine::Preset, mons: Monitors) -> Result<u8, Failure> {
    let Some((program, args)) = a.program.split_first() else {
        return Err(Failure::input(
            "--record needs the program to record after `--`: pmusim run --record -- PROGRAM ARGS",
        ));
    };
    let (path, temporary) = match &a.save {
        Some(p) => (p.clone(), false),
        None => (
            std::env::temp_dir().join(format!("pmusim-record-{}.pmt", std::process::id())),
            true,
        ),
    };
    let p = path
        .to_str()
        .ok_or_else(|| Failure::input(format!("--save {}: not a UTF-8 path", path.display())))?
        .to_string();
    let rec = qemu_tracer::runner::spawn_with_qemu(program, args, &path)
        .map_err(|e| Failure::input(e.to_string()))?;
    let qemu_pid = rec.pid();
    let finished = Arc::new(AtomicBool::new(false));
    let waiter = {
        let finished = finished.clone();
        std::thread::spawn(move || {
            let s = rec.wait();
            finished.store(true, Ordering::Release);
            s
        })
    };
    let recorded = move || -> Result<qemu_tracer::runner::Summary, Failure> {
        let s = waiter
            .join()
            .map_err(|_| Failure::input("the recorder's waiting thread panicked"))?
            .map_err(|e| Failure::input(e.to_string()))?;
        eprintln!(
            "pmusim: recorded `{}` in {:.2} s ({} bytes, ended by {}){}",
            a.program.join(" "),
            s.wall.as_secs_f64(),
            s.trace_bytes,
            s.ended_by,
            if s.exit_code != 0 {
                format!("; the program exited with status {}", s.exit_code)
            } else {
                String::new()
            }
        );
        Ok(s)
    };
    let result = fused(a, preset.clone(), mons, &p, finished, qemu_pid);
    let result = match result {
        // The recording's own error (QEMU or the plugin failed) says more than the tail's.
        Err(e) => recorded().and(Err(e)),
        Ok(Some(code)) => recorded().map(|_| code),
        Ok(None) => {
            eprintln!(
                "pmusim: `{}` started a second thread: simulating it from the trace when the \
                 recording ends (a multi-threaded program is not simulated while it runs)",
                a.program.join(" ")
            );
            recorded().and_then(|_| {
                // Fresh monitors: the fused attempt's were attached to its machine.
                let mut mons = crate::monitors::select(a.monitor.as_deref(), &a.monitor_flags)?;
                let mut scratch = preset.clone();
                for mon in &mut mons {
                    mon.adjust_preset(&mut scratch)?;
                }
                crate::run::run_trace(a, preset, &p, mons)
            })
        }
    };
    if temporary {
        let _ = std::fs::remove_file(&path);
    }
    result
}

/// The fused replay; `None` when it gave up at a second thread.
fn fused(
    a: &RunArgs,
    preset: machine::Preset,
    mons: Monitors,
    path: &str,
    finished: Arc<AtomicBool>,
    qemu_pid: u32,
) -> Result<Option<u8>, Failure> {
    use workload::trace::replay;
    let place = replay::ThreadPlacement::parse(&a.place).map_err(Failure::input)?;
    // The header once the plugin has rewritten it with the guest's mappings (at its first
    // translated block, before the guest runs).
    let (tail, header) = tracefmt::Tail::open(std::path::Path::new(path), finished, |h| {
        h.extra.get("maps_taken_at").and_then(|v| v.as_str()) != Some("install")
    })
    .map_err(|e| Failure::input(format!("{path}: {e}")))?;
    // The main thread's id is the process id (`pid` in the header; QEMU's pid otherwise).
    let tid = header
        .extra
        .get("pid")
        .and_then(|v| v.as_u64())
        .map_or(qemu_pid, |p| p as u32);
    let r = replay::live(tail, header, tid, a.bins.as_deref(), place)
        .map_err(|e| Failure::input(e.to_string()))?;
    replay_trace(a, preset, path, r, mons)
}
