//! `pmusim run --record [--save FILE] -- PROGRAM ARGS`: record and simulate at once.
//!
//! QEMU runs the program with the plugin, which writes the guest threads' raw record words
//! into a shared-memory channel (`qemu_tracer::live`) instead of a trace file: no encoding,
//! compression, decompression or decoding between the recorder and the simulation, which
//! runs on this thread and reads each thread's words as the plugin publishes them (blocks of
//! 16 k words; a thread's records before a synchronization call are published at the call).
//! The channel is bounded (16 blocks of 128 KiB in use, then the guest threads wait for the
//! simulation), except while the simulation waits for one thread's records and holds other
//! threads' blocks: then the recorder may run ahead (see `qemu_tracer::live`).
//!
//! Multi-threaded programs are simulated the same way (`workload::trace::replay::fused`):
//! every processor has a simulated thread, parked until the program's `clone` that creates
//! its thread; a futex wait's waker is decided from the synchronization records before the
//! wait's return, which the plugin also writes into the channel's sync log at once. The
//! simulation waits (on the host) for what it needs and the recorder has not produced yet:
//! a thread's next block, a sync-log entry, a wake's return value, a new thread's start.
//!
//! `--save FILE`: a thread of this process encodes and compresses the same blocks into
//! FILE (what `trace record` writes), whose replay (`pmusim run trace:FILE`) gives the same
//! report but for the names of mapped data (see `docs/qemu-tracer.md`).

use crate::cli::RunArgs;
use crate::run::{replay_trace, Monitors};
use crate::Failure;
use qemu_tracer::live::{self, Consumer, Feed, ThreadFeed};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The recording as the fused replay sees it.
struct Recording {
    feed: Rc<Feed>,
    consumer: Arc<Consumer>,
}

impl workload::trace::replay::LiveRecording for Recording {
    fn sync(&self, seq: u64) -> Option<(u32, tracefmt::Record, bool)> {
        self.consumer
            .sync(seq)
            .map(|r| (r.tid, r.record(seq), r.created))
    }
    fn last_seq(&self) -> Option<u64> {
        self.consumer.last_seq()
    }
    fn thread(&self, tid: u32) -> Box<dyn tracefmt::words::WordSource> {
        Box::new(ThreadFeed::new(self.feed.clone(), tid))
    }
}

pub fn record_and_run(a: &RunArgs, preset: machine::Preset, mons: Monitors) -> Result<u8, Failure> {
    let Some((program, args)) = a.program.split_first() else {
        return Err(Failure::input(
            "--record needs the program to record after `--`: pmusim run --record -- PROGRAM ARGS",
        ));
    };
    let place =
        workload::trace::replay::ThreadPlacement::parse(&a.place).map_err(Failure::input)?;
    let exited = Arc::new(AtomicBool::new(false));
    let chan = live::channel_path();
    let consumer = Arc::new(
        Consumer::create(&chan, exited.clone())
            .map_err(|e| Failure::input(format!("cannot create {}: {e}", chan.display())))?,
    );
    let mut rec = qemu_tracer::runner::spawn_live(program, args, &chan)
        .map_err(|e| Failure::input(e.to_string()))?;
    let qemu_pid = rec.pid();
    let waiter = {
        let exited = exited.clone();
        std::thread::spawn(move || {
            let s = rec.wait_status();
            exited.store(true, Ordering::Release);
            s
        })
    };
    let recorded = move |ended_by: &str| -> Result<(), Failure> {
        let (status, code, wall) = waiter
            .join()
            .map_err(|_| Failure::input("the recorder's waiting thread panicked"))?
            .map_err(|e| Failure::input(e.to_string()))?;
        eprintln!(
            "pmusim: recorded `{}` in {:.2} s (ended by {ended_by}){}",
            a.program.join(" "),
            wall.as_secs_f64(),
            if code != 0 {
                format!("; the program exited with status {code} ({status})")
            } else {
                String::new()
            }
        );
        Ok(())
    };
    // The header once the plugin has written it with the guest's mappings (at its first
    // translated block, before the guest runs).
    let header = consumer
        .wait_header(|h| h.extra.get("maps_taken_at").and_then(|v| v.as_str()) != Some("install"));
    let Some(header) = header else {
        recorded("nothing")?;
        return Err(Failure::input(format!(
            "`{}`: the QEMU plugin never attached to the recording (see its messages above)",
            a.program.join(" ")
        )));
    };
    let saver = match &a.save {
        Some(p) => {
            Some(live::Saver::start(p, &header, consumer.code_base()).map_err(Failure::input)?)
        }
        None => None,
    };
    let feed = Rc::new(Feed::new(consumer.clone(), saver));
    // The main thread's id is the process id (`pid` in the header; QEMU's pid otherwise).
    let main = header
        .extra
        .get("pid")
        .and_then(|v| v.as_u64())
        .map_or(qemu_pid, |p| p as u32);
    let name = match &a.save {
        Some(p) => p.display().to_string(),
        None => format!("record:{}", a.program.join(" ")),
    };
    let recording = Rc::new(Recording {
        feed: feed.clone(),
        consumer: consumer.clone(),
    });
    let r =
        workload::trace::replay::fused(&name, header, main, recording, a.bins.as_deref(), place)
            .map_err(|e| Failure::input(e.to_string()))?;
    let mut feed_end = Some(feed);
    let mut ended_by = String::from("?");
    let result = replay_trace(a, preset, &name, r, mons, &mut |r| {
        let Some(feed) = feed_end.take() else {
            return Ok(());
        };
        // What the simulation did not need (a program that ended early in simulated time
        // leaves nothing; a run stopped by a cycle limit leaves the rest).
        feed.pull_all();
        let complete = feed.complete();
        let final_header = consumer.header();
        if let Some(h) = &final_header {
            ended_by = h
                .extra
                .get("ended_by")
                .and_then(|v| v.as_str())
                .unwrap_or("?")
                .to_string();
            r.set_final_header(h.clone());
        }
        r.finish_live(r.replayed());
        if let Some(h) = &final_header {
            if let Some(saved) = feed.finish_saving(h) {
                let totals = saved.map_err(|e| Failure::input(format!("--save: {e}")))?;
                if complete && totals.records != r.replayed() {
                    // Only a run stopped early (a cycle limit, Ctrl-C) takes fewer.
                    eprintln!(
                        "pmusim: --save: the file holds {} records, the simulation took {}",
                        totals.records,
                        r.replayed()
                    );
                }
            }
        }
        if !complete {
            return Err(Failure::input(format!(
                "`{}`: the recording ended without finishing (the QEMU process died of a \
                 signal?): its last records are lost",
                a.program.join(" ")
            )));
        }
        Ok(())
    });
    let rec_result = recorded(&ended_by);
    if std::env::var_os("PMUSIM_LIVE_STATS").is_some() {
        eprintln!("pmusim: {}", consumer.wait_stats());
    }
    result.and_then(|code| rec_result.map(|_| code.expect("a fused replay runs to its end")))
}
