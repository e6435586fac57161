//! Replaying a trace on the simulated machine (`pmusim run trace:FILE`).
//!
//! Each traced thread runs on one simulated processor: `--place pack` puts thread k on
//! processor k; `--place spread` (the default) deals threads over the nodes first (thread k on
//! node k mod nodes), as an OS spreading a parallel program would. Instruction counts between
//! references become integer instructions; loads, stores and modifies become accesses of their
//! size (an access spanning two lines touches both).
//!
//! **Instruction fetch.** A trace whose header says `code_records` (the QEMU tracer's, since
//! issue 19) holds a code record for every executed block: the replay probes the L1 I-cache
//! for each line of the block's real addresses ([`Ctx::fetch_code`]) when the block starts,
//! and the synthetic fetch of a `(code) main` region is off for its threads
//! ([`Ctx::code_from_trace`]). Other traces fetch from the synthetic region as before.
//!
//! **Synchronization.** A multi-threaded trace (from the QEMU tracer) carries the program's
//! futex calls, thread starts and exits with one global sequence number. Before the replay, each
//! futex wait is classified by its return value. A wait that returned 0 was woken: it is paired
//! with the call that woke it: the last wake-type futex call (wake, wake-op, requeue,
//! unlock-PI) of another thread on the same address between the wait's entry and its return
//! that woke someone (a wake returning 0 woke nobody); failing that, the last thread exit in
//! that interval (a join woken by the kernel's clear-tid wake); failing that, the last requeue
//! on another address (the wait was moved to the requeue's target, which the trace does not
//! record). A wait that returned EAGAIN (-11: the futex word had already changed) did not
//! block; one that timed out (-110) was not woken by anyone. Neither is paired: the replayed
//! thread carries on at once (the trace does not hold the timeout's length, and a timed-out
//! wait is not simulated as idle time). A thread's start is paired with its parent's last
//! `clone` before it. In the replay the waiting thread sleeps (idle cycles, no instructions) on
//! a per-thread flag line, `(replay) wake flag k` (k: the thread's index in creation order),
//! until the paired waker, in simulated time, reaches its call and raises the flag (an atomic
//! max of the waker's sequence number). Pairings always point back in the traced order, so the
//! replay cannot deadlock. The system calls themselves cost no cycles.

use super::cachegrind::{Profile, Profiler};
use super::symbols::{self, AddrClass, DataRegion, Layout};
use super::Error;
use crate::{Ctx, Verification, Workload};
use machine::sim::Setup;
use machine::{Addr, Place, RefKind};
use rustc_hash::FxHashMap;
use std::cell::{Cell, RefCell};
use std::path::Path;
use std::sync::Arc;
use tracefmt::{
    Access, AccessKind, Batch, BatchReader, Header, Reader, Record, SyncPhase, Tail, TailEnd,
    ThreadStream,
};

const SYS_FUTEX: u64 = 202;
const SYS_CLONE: u64 = 56;
const SYS_CLONE3: u64 = 435;
const FUTEX_CMD_MASK: u64 = 0x7f;

/// How traced threads are placed on processors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ThreadPlacement {
    /// Thread k on processor k.
    Pack,
    /// Thread k on node k mod nodes, filling each node's processors in turn.
    Spread,
}

impl ThreadPlacement {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "pack" => Ok(ThreadPlacement::Pack),
            "spread" => Ok(ThreadPlacement::Spread),
            _ => Err(format!("unknown placement `{s}`: use pack or spread")),
        }
    }
}

fn is_wait(op: u64) -> bool {
    matches!(op & FUTEX_CMD_MASK, 0 | 6 | 9 | 11 | 13)
}
fn is_wake(op: u64) -> bool {
    matches!(op & FUTEX_CMD_MASK, 1 | 3 | 4 | 5 | 7 | 10 | 12)
}
/// Wakes whose return value is the number of threads woken (or requeued).
fn counts_woken(op: u64) -> bool {
    matches!(op & FUTEX_CMD_MASK, 1 | 3 | 4 | 5 | 10 | 12)
}
/// Requeues: they move waiters to a second address, which the trace does not record.
fn is_requeue(op: u64) -> bool {
    matches!(op & FUTEX_CMD_MASK, 3 | 4 | 12)
}
const EAGAIN: i64 = -11;
const ETIMEDOUT: i64 = -110;

/// The synchronization dependencies of a trace.
#[derive(Default, Debug)]
pub struct Pairing {
    /// seq of a record that must wait -> seq of the record it waits for.
    pub waits_for: FxHashMap<u64, u64>,
    /// seq of a waker record -> indices of the threads to signal.
    pub signals: FxHashMap<u64, Vec<usize>>,
    /// Futex waits that returned (a wait still blocked at the trace's end has no return).
    pub futex_waits: u64,
    /// Waits that returned 0: woken.
    pub woken: u64,
    /// Woken waits paired with the call that woke them.
    pub paired: u64,
    /// Waits that timed out (-110): not paired; the thread sleeps for the wait's timeout
    /// when the trace records it ([`Pairing::sleeps`]), else carries on at once.
    pub timed_out: u64,
    /// seq of the return of a timed-out wait -> its timeout in nanoseconds.
    pub sleeps: FxHashMap<u64, u64>,
    /// Waits that returned EAGAIN (-11): they did not block.
    pub eagain: u64,
}

impl Pairing {
    /// The pairing in words, for the report: how many woken waits were paired, and why the
    /// others were not.
    pub fn summary(&self) -> String {
        let p = self;
        if p.futex_waits == 0 {
            return "0 of 0 futex waits paired with their wakes".into();
        }
        let other = p.futex_waits - p.woken - p.timed_out - p.eagain;
        let timed = if p.sleeps.is_empty() {
            "neither blocks in the replay".to_string()
        } else {
            format!(
                "{} timed-out waits sleep their timeout in the replay, the others do not block",
                p.sleeps.len()
            )
        };
        format!(
            "{} of {} woken futex waits paired with their wakes; of {} waits, {} timed out and \
             {} returned EAGAIN ({timed}){}",
            p.paired,
            p.woken,
            p.futex_waits,
            p.timed_out,
            p.eagain,
            if other > 0 {
                format!(", {other} returned another error")
            } else {
                String::new()
            }
        )
    }
}

#[derive(Clone, Copy, Debug)]
enum SyncEv {
    WaitEntry {
        addr: u64,
        /// The wait's timeout, when the trace records it.
        timeout_ns: Option<u64>,
    },
    WaitReturn {
        entry: u64,
        ret: i64,
    },
    /// `woke`: the call's return value, when it returned.
    Wake {
        addr: u64,
        op: u64,
        woke: Option<i64>,
    },
    Clone,
    Start {
        parent: u32,
    },
    Exit,
}

/// Turns one thread's synchronization records, in its program order, into [`SyncEv`]s: the
/// futex call in progress (its entry's seq and, for a wake, the index of its event, which the
/// return value completes).
#[derive(Default)]
struct SyncScan {
    open_wait: Option<u64>,
    open_wake: Option<usize>,
}

impl SyncScan {
    fn push(&mut self, r: &Record, t: usize, events: &mut Vec<(u64, usize, SyncEv)>) {
        match *r {
            Record::Sync {
                seq,
                nr,
                args,
                ret,
                phase,
                timeout_ns,
            } => match (nr, phase) {
                (SYS_FUTEX, SyncPhase::Entry) if is_wait(args[1]) => {
                    self.open_wait = Some(seq);
                    self.open_wake = None;
                    events.push((
                        seq,
                        t,
                        SyncEv::WaitEntry {
                            addr: args[0],
                            timeout_ns,
                        },
                    ));
                }
                (SYS_FUTEX, SyncPhase::Return) => {
                    if let Some(e) = self.open_wait.take() {
                        events.push((seq, t, SyncEv::WaitReturn { entry: e, ret }));
                    }
                    if let Some(i) = self.open_wake.take() {
                        if let SyncEv::Wake { woke, .. } = &mut events[i].2 {
                            *woke = Some(ret);
                        }
                    }
                }
                (SYS_FUTEX, SyncPhase::Entry) if is_wake(args[1]) => {
                    self.open_wait = None;
                    self.open_wake = Some(events.len());
                    events.push((
                        seq,
                        t,
                        SyncEv::Wake {
                            addr: args[0],
                            op: args[1],
                            woke: None,
                        },
                    ))
                }
                (SYS_CLONE | SYS_CLONE3, SyncPhase::Entry) => events.push((seq, t, SyncEv::Clone)),
                _ => {}
            },
            Record::ThreadStart { parent, seq } => events.push((seq, t, SyncEv::Start { parent })),
            Record::ThreadExit { seq } => events.push((seq, t, SyncEv::Exit)),
            _ => {}
        }
    }
}

/// Pairs waits with wakes and starts with clones (see the module doc).
fn pair(events: &[(u64, usize, SyncEv)], tids: &[u32]) -> Pairing {
    let mut p = Pairing::default();
    // seq, thread, address (None: a thread exit), a requeue
    let mut wakers: Vec<(u64, usize, Option<u64>, bool)> = Vec::new();
    let mut clones: FxHashMap<usize, Vec<u64>> = FxHashMap::default();
    let mut entries: FxHashMap<u64, (usize, u64, Option<u64>)> = FxHashMap::default();
    for &(seq, t, ev) in events {
        match ev {
            // A wake that woke nobody ended no wait.
            SyncEv::Wake { op, woke, .. } if counts_woken(op) && woke == Some(0) => {}
            SyncEv::Wake { addr, op, .. } => wakers.push((seq, t, Some(addr), is_requeue(op))),
            SyncEv::Exit => wakers.push((seq, t, None, false)),
            SyncEv::Clone => clones.entry(t).or_default().push(seq),
            SyncEv::WaitEntry { addr, timeout_ns } => {
                entries.insert(seq, (t, addr, timeout_ns));
            }
            _ => {}
        }
    }
    wakers.sort_unstable_by_key(|w| w.0);
    let add = |p: &mut Pairing, waiter_seq: u64, waiter: usize, waker_seq: u64| {
        p.waits_for.insert(waiter_seq, waker_seq);
        let v = p.signals.entry(waker_seq).or_default();
        if !v.contains(&waiter) {
            v.push(waiter);
        }
    };
    for &(seq, t, ev) in events {
        match ev {
            SyncEv::WaitReturn { entry, ret } => {
                p.futex_waits += 1;
                match ret {
                    0 => p.woken += 1,
                    ETIMEDOUT => p.timed_out += 1,
                    EAGAIN => p.eagain += 1,
                    _ => {}
                }
                if ret == ETIMEDOUT {
                    if let Some(&(_, _, Some(ns))) = entries.get(&entry) {
                        p.sleeps.insert(seq, ns);
                    }
                }
                if ret != 0 {
                    continue;
                }
                let Some(&(_, addr, _)) = entries.get(&entry) else {
                    continue;
                };
                let lo = wakers.partition_point(|w| w.0 <= entry);
                let hi = wakers.partition_point(|w| w.0 < seq);
                let window = &wakers[lo..hi];
                let others = || window.iter().rev().filter(|w| w.1 != t);
                let pick = others()
                    .find(|w| w.2 == Some(addr))
                    .or_else(|| others().find(|w| w.2.is_none()))
                    .or_else(|| others().find(|w| w.3));
                if let Some(w) = pick {
                    p.paired += 1;
                    add(&mut p, seq, t, w.0);
                }
            }
            SyncEv::Start { parent } => {
                if let Some(pt) = tids.iter().position(|&x| x == parent) {
                    if let Some(c) = clones
                        .get(&pt)
                        .and_then(|v| v.iter().rev().find(|&&c| c < seq))
                    {
                        add(&mut p, seq, t, *c);
                    }
                }
            }
            _ => {}
        }
    }
    p
}

/// A trace replayed as a workload.
pub struct TraceReplay {
    path: String,
    pub header: Header,
    streams: RefCell<Vec<Option<ThreadStream>>>,
    tids: Vec<u32>,
    /// Known before the replay for a file; for a fused replay, built as the records pass
    /// (the timed-out waits' sleeps) and completed at the end ([`TraceReplay::finish_live`]).
    pairing: RefCell<Pairing>,
    /// Named regions (ELF symbols, range file) before the class fill-ins.
    regions: Vec<DataRegion>,
    layout: Option<Layout>,
    placement: ThreadPlacement,
    /// Processor of each traced thread (decided in `setup`).
    proc_of: RefCell<Vec<usize>>,
    thread_of_proc: RefCell<FxHashMap<usize, usize>>,
    flags: RefCell<Vec<Addr>>,
    error: RefCell<Option<String>>,
    replayed: Cell<u64>,
    /// The end marker's record total (for a fused replay, known at the end).
    records: Cell<u64>,
    /// What happened when, for tests and reports: (thread, event, seq, processor cycle).
    pub log: RefCell<Vec<(usize, ReplayEvent, u64, u64)>>,
    /// Address range whose first access by each thread is logged.
    pub watch: Option<(u64, u64)>,
    /// What the user should know before trusting the names (the traced ELF not found, or a
    /// different one): `pmusim run` prints them.
    pub warnings: Vec<String>,
    /// Whether each thread's records are decompressed and decoded ahead on a helper host
    /// thread ([`BatchReader`]); by default when the host has two cores or more.
    decode_ahead: Cell<bool>,
    /// The traced program's ELF as found for its symbols (see `symbols::locate_program`).
    pub program: Option<std::path::PathBuf>,
    /// Cachegrind-style events per code block, merged over threads, when asked for
    /// ([`TraceReplay::set_profile`]).
    profile: RefCell<Option<Profile>>,
    /// The processors' clock (from the machine, in `setup`): timeouts to cycles.
    cpu_hz: Cell<u64>,
    /// A fused replay: what the tail of the growing trace learned by its end.
    live: Option<Arc<TailEnd>>,
    /// A fused replay stopped at a second thread (see [`live`]).
    gave_up: Cell<bool>,
    /// A fused replay's synchronization events, for the pairing's summary at the end.
    live_events: RefCell<Vec<(u64, usize, SyncEv)>>,
    /// A fused replay's header as the recorder left it.
    final_header: RefCell<Option<Header>>,
}

/// A fused replay's view of the synchronization records as its one thread passes them:
/// what the file replay's pre-scan finds, built incrementally. With one thread nothing is
/// paired; a wait that timed out sleeps its timeout, which its own entry record holds.
#[derive(Default)]
struct LiveSync {
    scan: SyncScan,
    events: Vec<(u64, usize, SyncEv)>,
}

impl LiveSync {
    /// Takes in a record before it is replayed; `false` at the main thread's `clone`, where
    /// a second thread may start (the fused replay then gives up).
    fn pass(&mut self, r: &Record, pairing: &RefCell<Pairing>) -> bool {
        if r.seq().is_none() {
            return true;
        }
        let before = self.events.len();
        self.scan.push(r, 0, &mut self.events);
        match self.events[before..].first() {
            Some((_, _, SyncEv::Clone)) => return false,
            Some(&(seq, _, SyncEv::WaitReturn { entry, ret })) if ret == ETIMEDOUT => {
                let timeout = self.events.iter().rev().find_map(|e| match e {
                    (s, _, SyncEv::WaitEntry { timeout_ns, .. }) if *s == entry => *timeout_ns,
                    _ => None,
                });
                if let Some(ns) = timeout {
                    pairing.borrow_mut().sleeps.insert(seq, ns);
                }
            }
            _ => {}
        }
        true
    }
}

/// Events of the replay log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReplayEvent {
    /// The thread reached a waker record and raised its dependents' flags.
    Signal,
    /// The thread resumed after waiting for the waker record `seq`.
    Resumed,
    /// The thread's first access to the watched range.
    FirstWatched,
    /// The thread resumed after sleeping for its timed-out wait's timeout (the log's `seq`
    /// field holds the timeout in nanoseconds).
    TimedOut,
}

/// Opens `path` (`.pmt`, or `.lackey` text converted in memory) for replay, naming data from
/// the traced program's ELF symbols and the optional range file.
pub fn open(
    path: &Path,
    bins: Option<&Path>,
    placement: ThreadPlacement,
) -> Result<TraceReplay, Error> {
    let name = path.display().to_string();
    let bytes: Vec<u8> = if path.extension().is_some_and(|e| e == "lackey") {
        let tmp = std::env::temp_dir().join(format!(
            "pmusim-replay-{}-{}.pmt",
            std::process::id(),
            path.file_name().unwrap().to_string_lossy()
        ));
        let header = Header::new("lackey", &name, &[], "x86_64");
        super::record::convert_file(path, &tmp, &header)?;
        let b = std::fs::read(&tmp).map_err(|e| Error::io(&tmp, e))?;
        let _ = std::fs::remove_file(&tmp);
        b
    } else {
        std::fs::read(path).map_err(|e| Error::io(path, e))?
    };
    from_bytes(&name, &bytes, bins, placement)
}

/// Like [`open`], for the bytes of a `.pmt` trace already in memory; `name` names it in
/// errors and in the report.
pub fn from_bytes(
    name: &str,
    bytes: &[u8],
    bins: Option<&Path>,
    placement: ThreadPlacement,
) -> Result<TraceReplay, Error> {
    let fmt = |err| Error::Format {
        path: name.to_string(),
        err,
    };
    // The per-thread streams, decompressed lazily during the replay.
    let streams = Reader::new(bytes).map_err(fmt)?.per_thread().map_err(fmt)?;
    let header = streams.header.clone();
    // The record total of the end marker; the replay checks that it reads that many.
    let records = streams.total_records;
    // Threads in the order a reader in file order first meets them.
    let mut first: Vec<(u64, u32)> = streams
        .threads
        .iter()
        .map(|t| (t.first_chunk(), t.tid()))
        .collect();
    first.sort_unstable();
    let tids: Vec<u32> = first.iter().map(|&(_, tid)| tid).collect();
    // Pass 1: the synchronization records of every thread, in global order. Only the chunks
    // whose header announces a synchronization record are decoded (the reader checks the
    // announcement against the records when the replay decodes the others).
    let mut events: Vec<(u64, usize, SyncEv)> = Vec::new();
    for s in &streams.threads {
        let tid = s.tid();
        let t = tids
            .iter()
            .position(|&x| x == tid)
            .expect("a thread of the file");
        let mut scan = SyncScan::default();
        for r in s.sync_records().map_err(fmt)? {
            scan.push(&r, t, &mut events);
        }
    }
    // Threads in creation order: the main thread (no start record) first, then by start.
    let mut start_seq: FxHashMap<usize, u64> = FxHashMap::default();
    for &(seq, t, ev) in &events {
        if let SyncEv::Start { .. } = ev {
            start_seq.entry(t).or_insert(seq);
        }
    }
    let mut order: Vec<usize> = (0..tids.len()).collect();
    order.sort_by_key(|&t| (start_seq.get(&t).copied().unwrap_or(0), t));
    let renumber: FxHashMap<usize, usize> = order
        .iter()
        .enumerate()
        .map(|(new, &old)| (old, new))
        .collect();
    let tids: Vec<u32> = order.iter().map(|&t| tids[t]).collect();
    for e in events.iter_mut() {
        e.1 = renumber[&e.1];
    }
    events.sort_by_key(|e| e.0);
    let pairing = pair(&events, &tids);
    let mut by_tid: FxHashMap<u32, ThreadStream> =
        streams.threads.into_iter().map(|s| (s.tid(), s)).collect();
    let ordered: Vec<Option<ThreadStream>> = tids.iter().map(|t| by_tid.remove(t)).collect();
    build(
        name, header, ordered, tids, pairing, records, bins, placement, None,
    )
}

/// Opens a trace that the QEMU tracer is still writing, for a replay fused with the
/// recording (`pmusim run --record`): the records of the traced program's main thread `tid`
/// are simulated as the recorder writes them ([`Tail::into_stream`]). Only a single-threaded
/// program is replayed this way: at the first `clone` of the main thread, or at the first
/// chunk of another thread, the replay stops ([`TraceReplay::fused_gave_up`]) and the caller
/// replays the finished file instead. The data is named from `header` (the one the recorder
/// had written when the simulation started: see `docs/qemu-tracer.md`).
pub fn live(
    tail: Tail,
    header: Header,
    tid: u32,
    bins: Option<&Path>,
    placement: ThreadPlacement,
) -> Result<TraceReplay, Error> {
    let name = tail.path().display().to_string();
    let (stream, end) = tail.into_stream(tid);
    build(
        &name,
        header,
        vec![Some(stream)],
        vec![tid],
        Pairing::default(),
        0,
        bins,
        placement,
        Some(end),
    )
}

#[allow(clippy::too_many_arguments)]
fn build(
    name: &str,
    header: Header,
    ordered: Vec<Option<ThreadStream>>,
    tids: Vec<u32>,
    pairing: Pairing,
    records: u64,
    bins: Option<&Path>,
    placement: ThreadPlacement,
    live: Option<Arc<TailEnd>>,
) -> Result<TraceReplay, Error> {
    // Names: ELF data symbols of the program (when it can be read), then the range file.
    let mut regions = Vec::new();
    let mut layout = None;
    let (program, warning) = symbols::locate_program(&header);
    if let Some(program) = &program {
        if let Ok(elf) = symbols::elf_data(program, header.load_bias) {
            layout = Some(Layout::for_tracer(&header.tracer, &elf));
            regions.extend(elf.regions);
        }
    }
    if let Some(b) = bins {
        regions.extend(symbols::read_ranges(b)?);
    }
    Ok(TraceReplay {
        path: name.to_string(),
        header,
        streams: RefCell::new(ordered),
        tids,
        pairing: RefCell::new(pairing),
        regions,
        layout,
        placement,
        proc_of: RefCell::new(Vec::new()),
        thread_of_proc: RefCell::new(FxHashMap::default()),
        flags: RefCell::new(Vec::new()),
        error: RefCell::new(None),
        replayed: Cell::new(0),
        records: Cell::new(records),
        log: RefCell::new(Vec::new()),
        watch: None,
        warnings: warning.into_iter().collect(),
        decode_ahead: Cell::new(std::thread::available_parallelism().is_ok_and(|n| n.get() >= 2)),
        program,
        profile: RefCell::new(None),
        cpu_hz: Cell::new(0),
        live,
        gave_up: Cell::new(false),
        live_events: RefCell::new(Vec::new()),
        final_header: RefCell::new(None),
    })
}

impl TraceReplay {
    /// Decode each thread's records ahead on a helper host thread (`true`, the default on a
    /// host with two cores or more) or on the simulation's thread. The simulated results are
    /// the same either way.
    pub fn set_decode_ahead(&self, ahead: bool) {
        self.decode_ahead.set(ahead);
    }
    pub fn threads(&self) -> usize {
        self.tids.len()
    }
    /// Count Cachegrind's events per code block during the replay (for `--cachegrind-out`;
    /// see [`super::cachegrind`]). The simulation is the same; the replay reads the
    /// processor's counters around every reference, which costs some speed.
    pub fn set_profile(&self, on: bool) {
        *self.profile.borrow_mut() = on.then(Profile::default);
    }
    /// The events counted (after the run), when profiling was on.
    pub fn profile(&self) -> Option<Profile> {
        self.profile.borrow().clone()
    }
    pub fn pairing(&self) -> std::cell::Ref<'_, Pairing> {
        self.pairing.borrow()
    }
    /// After a fused replay: the record total of the trace's end marker, and the pairing
    /// summary from the synchronization events that passed (as the file replay's pre-scan
    /// computes them). `false` when the trace did not reach its end marker.
    pub fn finish_live(&self) -> bool {
        let Some(end) = &self.live else {
            return true;
        };
        let Some(total) = end.total_records() else {
            return false;
        };
        self.records.set(total);
        if let Ok(r) = std::fs::File::open(&self.path)
            .map_err(tracefmt::Error::Io)
            .and_then(Reader::new)
        {
            *self.final_header.borrow_mut() = Some(r.header().clone());
        }
        let mut events = self.live_events.take();
        events.sort_by_key(|e| e.0);
        *self.pairing.borrow_mut() = pair(&events, &self.tids);
        true
    }
    /// The trace's header at its end: for a fused replay (after [`TraceReplay::finish_live`])
    /// the one the recorder wrote last, else the header the replay opened.
    pub fn final_header(&self) -> Header {
        self.final_header
            .borrow()
            .clone()
            .unwrap_or_else(|| self.header.clone())
    }
    /// A fused replay met a second thread (or the main thread's `clone`) and stopped: its
    /// simulation is incomplete and the finished file must be replayed instead.
    pub fn fused_gave_up(&self) -> bool {
        self.gave_up.get()
    }
    /// The error that stopped a thread's stream during the replay (a corrupt chunk or
    /// record: the open checks only the file's structure and the synchronization chunks).
    pub fn read_error(&self) -> Option<String> {
        self.error.borrow().clone()
    }
    /// The processor each traced thread runs on (after `setup`).
    pub fn processors(&self) -> Vec<usize> {
        self.proc_of.borrow().clone()
    }
    /// Guest thread ids in the order of their processors list.
    pub fn tids(&self) -> &[u32] {
        &self.tids
    }

    /// Names the traced address space in the machine's memory map: symbols and ranges first,
    /// then the gaps of the mapped areas by class (heap, stack, image) or mapping name.
    fn name_regions(&self, s: &mut Setup) {
        let map = s.map();
        let mut named: Vec<(u64, u64)> = Vec::new();
        let mut sorted = self.regions.clone();
        sorted.sort_by_key(|r| (r.start, std::cmp::Reverse(r.len)));
        for r in &sorted {
            if r.len == 0 {
                continue;
            }
            if map
                .name_range(&r.name, r.start, r.len, Place::Default)
                .is_ok()
            {
                named.push((r.start, r.start + r.len));
            }
        }
        named.sort_unstable();
        let mut areas: Vec<(String, u64, u64)> = Vec::new();
        if !self.header.maps.is_empty() {
            for m in &self.header.maps {
                // Libraries by file name; [heap], [stack:TID] and the like as they are.
                let n = if m.name.is_empty() {
                    "(anonymous)".to_string()
                } else {
                    m.name.rsplit('/').next().unwrap_or(&m.name).to_string()
                };
                areas.push((n, m.start, m.end));
            }
        } else if let Some(l) = &self.layout {
            areas.push(("(image)".into(), l.image_start, l.image_end));
            areas.push(("(heap)".into(), l.image_end, l.stack_low));
            areas.push(("(stack)".into(), l.stack_low, l.stack_high));
        }
        for (name, lo, hi) in areas {
            let mut cur = lo;
            let i = named.partition_point(|r| r.1 <= lo);
            for &(a, b) in &named[i..] {
                if a >= hi {
                    break;
                }
                if a > cur {
                    let _ = map.name_range(&name, cur, a - cur, Place::Default);
                }
                cur = cur.max(b);
            }
            if cur < hi {
                let _ = map.name_range(&name, cur, hi - cur, Place::Default);
            }
        }
    }

    /// The data regions named from the program's symbols and range file.
    pub fn regions(&self) -> &[DataRegion] {
        &self.regions
    }

    /// The class of an address no region names (for reports).
    pub fn classify(&self, a: u64) -> Option<AddrClass> {
        self.layout.map(|l| l.classify(a))
    }

    fn signal(&self, ctx: &mut Ctx, me: usize, seq: u64) {
        let pairing = self.pairing.borrow();
        if let Some(ts) = pairing.signals.get(&seq) {
            let flags = self.flags.borrow().clone();
            for &t in ts {
                ctx.fetch_max(flags[t], seq);
            }
            let c = ctx.cycles();
            self.log
                .borrow_mut()
                .push((me, ReplayEvent::Signal, seq, c));
        }
    }
    /// An access while the first access to the watched range is still to be logged.
    fn watched_access(&self, ctx: &mut Ctx, me: usize, a: &Access, watch: &mut Option<(u64, u64)>) {
        if a.kind == AccessKind::Code {
            ctx.fetch_code(a.addr, a.bytes as u64);
            return;
        }
        if a.icount > 1 {
            ctx.int(a.icount as u64 - 1);
        }
        if let Some((lo, hi)) = *watch {
            if a.addr >= lo && a.addr < hi {
                *watch = None;
                let c = ctx.cycles();
                self.log
                    .borrow_mut()
                    .push((me, ReplayEvent::FirstWatched, 0, c));
            }
        }
        access(ctx, a);
    }

    fn wait(&self, ctx: &mut Ctx, me: usize, seq: u64) {
        let (sleep, waker) = {
            let p = self.pairing.borrow();
            (p.sleeps.get(&seq).copied(), p.waits_for.get(&seq).copied())
        };
        if let Some(ns) = sleep {
            // A wait that timed out: idle for its timeout, in simulated time.
            let cycles = (ns as u128 * self.cpu_hz.get() as u128 / 1_000_000_000) as u64;
            ctx.idle(cycles);
            let c = ctx.cycles();
            self.log
                .borrow_mut()
                .push((me, ReplayEvent::TimedOut, ns, c));
            return;
        }
        if let Some(w) = waker {
            let flag = self.flags.borrow()[me];
            ctx.sleep_until(flag, |v| v >= w);
            let c = ctx.cycles();
            self.log.borrow_mut().push((me, ReplayEvent::Resumed, w, c));
        }
    }
}

impl Workload for TraceReplay {
    fn setup(&mut self, s: &mut Setup, _n: usize) {
        self.name_regions(s);
        self.cpu_hz.set(s.cpu_hz());
        let procs = s.procs();
        let nodes = s.nodes().max(1);
        let per_node = procs.div_ceil(nodes);
        let mut proc_of = Vec::new();
        for k in 0..self.tids.len() {
            let p = match self.placement {
                ThreadPlacement::Pack => k,
                ThreadPlacement::Spread => {
                    let node = k % nodes;
                    let slot = k / nodes;
                    if slot < per_node {
                        node * per_node + slot
                    } else {
                        k
                    }
                }
            };
            proc_of.push(p.min(procs.saturating_sub(1)));
        }
        let flags = (0..self.tids.len())
            .map(|k| s.lock(&format!("(replay) wake flag {k}")).0)
            .collect();
        *self.flags.borrow_mut() = flags;
        *self.thread_of_proc.borrow_mut() =
            proc_of.iter().enumerate().map(|(k, &p)| (p, k)).collect();
        *self.proc_of.borrow_mut() = proc_of;
    }

    fn thread(&self, ctx: &mut Ctx) {
        let Some(&me) = self.thread_of_proc.borrow().get(&ctx.tid()) else {
            return;
        };
        let Some(stream) = self.streams.borrow_mut()[me].take() else {
            return;
        };
        let code_records = self.header.code_records;
        if code_records {
            ctx.code_from_trace();
        }
        let mut n = 0u64;
        let mut watch = self.watch;
        let mut prof = self.profile.borrow().is_some().then(Profiler::default);
        let mut reader = BatchReader::new(stream, self.decode_ahead.get());
        // A fused replay gathers the synchronization events as they pass.
        let mut live = self.live.as_ref().map(|_| LiveSync::default());
        loop {
            let step = match reader.next_batch() {
                None => break,
                Some(Ok(s)) => s,
                Some(Err(_))
                    if self
                        .live
                        .as_ref()
                        .is_some_and(|e| e.other_thread().is_some()) =>
                {
                    self.gave_up.set(true);
                    break;
                }
                Some(Err(e)) => {
                    *self.error.borrow_mut() = Some(format!("{}: {e}", self.path));
                    break;
                }
            };
            if let (Some(l), Batch::Other(r)) = (live.as_mut(), &step) {
                if !l.pass(r, &self.pairing) {
                    self.gave_up.set(true);
                    break;
                }
            }
            match step {
                Batch::Accesses(batch) => {
                    n += batch.len() as u64;
                    if let Some(p) = prof.as_mut() {
                        for a in batch {
                            p.replay(ctx, a);
                        }
                    } else if watch.is_none() && code_records {
                        for a in batch {
                            replay_access(ctx, a);
                        }
                    } else if watch.is_none() {
                        for a in batch {
                            replay_data_access(ctx, a);
                        }
                    } else {
                        for a in batch {
                            self.watched_access(ctx, me, a, &mut watch);
                        }
                    }
                }
                Batch::Other(r) => {
                    n += 1;
                    match r {
                        Record::Access {
                            kind,
                            addr,
                            size,
                            icount,
                        } => {
                            let a = Access {
                                addr,
                                icount,
                                kind,
                                size,
                                bytes: 0,
                            };
                            match prof.as_mut() {
                                Some(p) => p.replay(ctx, &a),
                                None => self.watched_access(ctx, me, &a, &mut watch),
                            }
                        }
                        Record::Instructions(k) => {
                            if let Some(p) = prof.as_mut() {
                                p.instructions(k);
                            }
                            ctx.int(k)
                        }
                        Record::Code { addr, bytes, insns } => match prof.as_mut() {
                            Some(p) => p.code(ctx, addr, bytes as u64, insns),
                            None => ctx.fetch_code(addr, bytes as u64),
                        },
                        Record::ThreadStart { seq, .. } => self.wait(ctx, me, seq),
                        Record::ThreadExit { seq } => self.signal(ctx, me, seq),
                        Record::Sync { seq, phase, .. } => match phase {
                            SyncPhase::Entry => self.signal(ctx, me, seq),
                            SyncPhase::Return => self.wait(ctx, me, seq),
                        },
                    }
                }
            }
        }
        self.replayed.set(self.replayed.get() + n);
        if let (Some(p), Some(all)) = (prof, self.profile.borrow_mut().as_mut()) {
            all.merge(&p.profile);
        }
        if let Some(l) = live {
            *self.live_events.borrow_mut() = l.events;
        }
    }

    fn verify(&self) -> Verification {
        if let Some(e) = self.error.borrow().as_ref() {
            return Verification::failed(format!("the trace could not be read to its end: {e}"));
        }
        Verification::check(
            self.replayed.get() == self.records.get(),
            format!(
                "replayed {} of {} records of {} thread(s); {}",
                self.replayed.get(),
                self.records.get(),
                self.tids.len(),
                self.pairing.borrow().summary()
            ),
        )
    }
}

/// One traced reference: the instructions before it (its record counts its own instruction
/// too), then the access of its size (an access spanning two lines touches both; a size of 0,
/// which no tracer writes, counts as 1).
#[inline(always)]
fn replay_access(ctx: &mut Ctx, a: &Access) {
    // One match on the kind (not a test for code blocks, then `ref_kind`'s match with its
    // unreachable arm): a few instructions per reference on the replay's hot loop.
    let kind = match a.kind {
        AccessKind::Load => RefKind::Load,
        AccessKind::Store => RefKind::Store,
        AccessKind::Modify => RefKind::Modify,
        AccessKind::Code => {
            ctx.fetch_code(a.addr, a.bytes as u64);
            return;
        }
    };
    ctx.traced(
        kind,
        a.addr,
        a.size as u32,
        a.icount.saturating_sub(1) as u64,
    );
}

/// [`replay_access`] for traces whose header says they hold no code records (lackey's, the
/// synthetic ones, QEMU's without instruction fetch): a code record, should one come anyway,
/// is fetched out of line, so the data references' loop keeps the registers the inlined
/// fetch takes (100 M of `bench --case trace-hit-1t`'s instructions, 1.3 %; a trace with code
/// records runs 2.3 % more instructions with the fetch out of line, so it keeps
/// [`replay_access`]).
#[inline(always)]
fn replay_data_access(ctx: &mut Ctx, a: &Access) {
    let kind = match a.kind {
        AccessKind::Load => RefKind::Load,
        AccessKind::Store => RefKind::Store,
        AccessKind::Modify => RefKind::Modify,
        AccessKind::Code => {
            fetch_block(ctx, a);
            return;
        }
    };
    ctx.traced(
        kind,
        a.addr,
        a.size as u32,
        a.icount.saturating_sub(1) as u64,
    );
}

/// A code record's instruction fetch, out of line (see [`replay_data_access`]).
#[cold]
#[inline(never)]
fn fetch_block(ctx: &mut Ctx, a: &Access) {
    ctx.fetch_code(a.addr, a.bytes as u64);
}

/// The access alone, its instructions retired already.
#[inline(always)]
pub(crate) fn access(ctx: &mut Ctx, a: &Access) {
    ctx.traced(ref_kind(a.kind), a.addr, a.size as u32, 0);
}

#[inline(always)]
fn ref_kind(k: AccessKind) -> RefKind {
    match k {
        AccessKind::Load => RefKind::Load,
        AccessKind::Store => RefKind::Store,
        AccessKind::Modify => RefKind::Modify,
        AccessKind::Code => unreachable!("code blocks are fetched, not accessed"),
    }
}

/// Spawns the replay's threads on their processors. Returns the workload for verification.
pub fn install(
    mut r: TraceReplay,
    m: &mut machine::Machine,
) -> Result<std::rc::Rc<TraceReplay>, String> {
    let procs = m.state().preset.program_procs();
    if r.threads() > procs {
        return Err(format!(
            "the trace has {} threads but the machine has {procs} processors: use --procs {} or more",
            r.threads(),
            r.threads()
        ));
    }
    let n = r.threads();
    r.setup(&mut m.setup(), n);
    let r = std::rc::Rc::new(r);
    for p in r.processors() {
        let w = r.clone();
        m.spawn(p, move |ctx| w.thread(ctx));
    }
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    const WAKE: u64 = 1;
    const REQUEUE: u64 = 4;

    fn wake(addr: u64, woke: i64) -> SyncEv {
        SyncEv::Wake {
            addr,
            op: WAKE,
            woke: Some(woke),
        }
    }

    #[test]
    fn waits_pair_with_the_last_wake_on_their_address() {
        let ev = vec![
            (1, 0, SyncEv::Clone),
            (2, 1, SyncEv::Start { parent: 100 }),
            (
                3,
                1,
                SyncEv::WaitEntry {
                    addr: 0x10,
                    timeout_ns: None,
                },
            ),
            (4, 0, wake(0x20, 1)),
            (5, 0, wake(0x10, 1)),
            (6, 0, wake(0x20, 1)),
            (7, 1, SyncEv::WaitReturn { entry: 3, ret: 0 }),
            (
                8,
                0,
                SyncEv::WaitEntry {
                    addr: 0x30,
                    timeout_ns: None,
                },
            ),
            (9, 1, SyncEv::Exit),
            (10, 0, SyncEv::WaitReturn { entry: 8, ret: 0 }),
        ];
        let p = pair(&ev, &[100, 101]);
        assert_eq!(
            p.waits_for.get(&2),
            Some(&1),
            "start after the parent's clone"
        );
        assert_eq!(
            p.waits_for.get(&7),
            Some(&5),
            "the wake on the same address"
        );
        assert_eq!(
            p.waits_for.get(&10),
            Some(&9),
            "a join is woken by the thread's exit"
        );
        assert_eq!(p.signals.get(&5), Some(&vec![1]));
        assert_eq!((p.futex_waits, p.woken, p.paired), (2, 2, 2));
        for (w, k) in &p.waits_for {
            assert!(k < w, "pairings point back in the trace");
        }
    }

    /// Issue 19: timed-out and EAGAIN waits were paired with any wake in their interval (on
    /// a Python threading trace, 188 of 223 timed-out waits, 87 with a wake on another
    /// address), and the report counted them as paired.
    #[test]
    fn only_woken_waits_are_paired() {
        let ev = vec![
            // Thread 1 times out on 0x10 while thread 0 wakes 0x10 (too late, or another
            // waiter) and 0x20.
            (
                1,
                1,
                SyncEv::WaitEntry {
                    addr: 0x10,
                    timeout_ns: None,
                },
            ),
            (2, 0, wake(0x10, 1)),
            (3, 0, wake(0x20, 1)),
            (
                4,
                1,
                SyncEv::WaitReturn {
                    entry: 1,
                    ret: ETIMEDOUT,
                },
            ),
            // EAGAIN: the word had changed, the wait did not block.
            (
                5,
                1,
                SyncEv::WaitEntry {
                    addr: 0x10,
                    timeout_ns: None,
                },
            ),
            (6, 0, wake(0x10, 1)),
            (
                7,
                1,
                SyncEv::WaitReturn {
                    entry: 5,
                    ret: EAGAIN,
                },
            ),
            // Woken, but the only wake on its address woke nobody, and the wake on another
            // address is not a requeue: unpaired.
            (
                8,
                1,
                SyncEv::WaitEntry {
                    addr: 0x10,
                    timeout_ns: None,
                },
            ),
            (9, 0, wake(0x10, 0)),
            (10, 0, wake(0x20, 1)),
            (11, 1, SyncEv::WaitReturn { entry: 8, ret: 0 }),
            // Woken after a requeue from another address: paired with the requeue.
            (
                12,
                1,
                SyncEv::WaitEntry {
                    addr: 0x10,
                    timeout_ns: None,
                },
            ),
            (
                13,
                0,
                SyncEv::Wake {
                    addr: 0x40,
                    op: REQUEUE | 128,
                    woke: Some(2),
                },
            ),
            (14, 1, SyncEv::WaitReturn { entry: 12, ret: 0 }),
            // Interrupted (EINTR): not paired.
            (
                15,
                1,
                SyncEv::WaitEntry {
                    addr: 0x10,
                    timeout_ns: None,
                },
            ),
            (16, 0, wake(0x10, 1)),
            (17, 1, SyncEv::WaitReturn { entry: 15, ret: -4 }),
        ];
        let p = pair(&ev, &[100, 101]);
        assert_eq!(p.waits_for.len(), 1, "{:?}", p.waits_for);
        assert_eq!(p.waits_for.get(&14), Some(&13));
        assert_eq!(
            (p.futex_waits, p.woken, p.paired, p.timed_out, p.eagain),
            (5, 2, 1, 1, 1)
        );
        assert_eq!(
            p.summary(),
            "1 of 2 woken futex waits paired with their wakes; of 5 waits, 1 timed out and 1 \
             returned EAGAIN (neither blocks in the replay), 1 returned another error"
        );
        assert_eq!(
            Pairing::default().summary(),
            "0 of 0 futex waits paired with their wakes",
            "the report of a trace without waits is unchanged"
        );
    }
}
