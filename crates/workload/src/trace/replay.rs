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
//! futex calls, `clone`s, thread starts and exits with one global sequence number. Each futex
//! wait is classified by its return value. A wait that returned 0 was woken: it is paired
//! with the call that woke it: the last wake-type futex call (wake, wake-op, requeue,
//! unlock-PI) of another thread on the same address between the wait's entry and its return
//! that woke someone (a wake returning 0 woke nobody); failing that, the last thread exit in
//! that interval (a join woken by the kernel's clear-tid wake); failing that, the last requeue
//! on another address (the wait was moved to the requeue's target, which the trace does not
//! record); failing that, the last exit of another thread before the wait's entry (the
//! kernel's clear-tid wake comes inside the exit call, after its record). A wait that returned EAGAIN (-11: the futex word had already changed) did not
//! block; one that timed out (-110) was not woken by anyone: it idles for its recorded
//! timeout. A thread is created by the `clone` whose return value is its id.
//!
//! In the replay every thread has a *progress word* (one line of the `(replay) thread
//! progress` region, k: the thread's index in creation order): a thread reaching a wake-type
//! futex call or its exit raises its own word to the call's sequence number (an atomic max);
//! a woken wait sleeps (idle cycles, no instructions) until its waker's word reaches the
//! waker's call. A thread does not exist before its `clone`: its processor is parked
//! (`Ctx::park`, no events, no cycles) until the parent, in simulated time, reaches the call;
//! a processor whose thread has exited takes the next thread created (threads beyond the
//! processors are placed on the processors freed by threads that ended: `--procs` bounds the
//! threads alive at once, not those ever created). Pairings point back in the traced order, so
//! the replay cannot deadlock. The system calls themselves cost no cycles.
//!
//! Why the waker raises its own word rather than the waiter's: every decision depends only
//! on records before it (a wait's waker on the records up to its return and the return
//! values of the wakes among them, a new thread on its `clone`'s return), so a replay fused
//! with the recording ([`fused`], `pmusim run --record`) makes the same decisions while the
//! program runs, taking the records as the recorder produces them, and gives the same
//! simulation as the replay of the finished file.

use super::cachegrind::{Profile, Profiler};
use super::symbols::{self, AddrClass, DataRegion, Layout};
use super::Error;
use crate::{Ctx, Verification, Workload};
use machine::sim::Setup;
use machine::{Addr, Place, RefKind, Traced, TracedRef};
use rustc_hash::FxHashMap;
use std::cell::{Cell, RefCell};
use std::path::Path;
use std::rc::Rc;
use tracefmt::{
    Access, AccessKind, Batch, BatchReader, Header, Reader, Record, StepSource, SyncPhase,
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
/// Wake-type records looked at before a woken wait's entry for the exit that woke it
/// ([`SyncState::pick`]).
const PRIOR_EXIT_SCAN: usize = 256;
/// Threads a replay takes (created over the run; those alive at once are at most the
/// processors).
pub const MAX_THREADS: usize = 4096;
/// Bytes between two threads' progress words: a line of every preset's caches.
const PROGRESS_STRIDE: u64 = 256;
const EAGAIN: i64 = -11;
const ETIMEDOUT: i64 = -110;

/// The synchronization dependencies of a trace.
#[derive(Default, Debug)]
pub struct Pairing {
    /// seq of a woken wait's return -> seq of the call that woke it.
    pub waits_for: FxHashMap<u64, u64>,
    /// seq of a woken wait's return -> index of the thread that made that call.
    pub waker_thread: FxHashMap<u64, usize>,
    /// seq of a `clone` entry -> the threads it created (by its return value, the new
    /// thread's id).
    pub children: FxHashMap<u64, Vec<usize>>,
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
    /// `ret`: the call's return value (the new thread's id), when it returned; `created`:
    /// whether it created a thread (known from a live recording's sync log; a trace file
    /// says so by holding a thread of that id).
    Clone {
        ret: Option<i64>,
        created: bool,
    },
    Start,
    Exit,
}

/// Turns one thread's synchronization records, in its program order, into [`SyncEv`]s: the
/// futex call or `clone` in progress (a wait's entry seq; for a wake or a clone the index
/// of its event, which the return value completes).
#[derive(Default, Clone)]
struct SyncScan {
    open_wait: Option<u64>,
    open_wake: Option<usize>,
    open_clone: Option<usize>,
}

impl SyncScan {
    /// `created`: a `clone` return that created a thread (live recordings).
    fn push(
        &mut self,
        r: &Record,
        t: usize,
        created: bool,
        events: &mut Vec<(u64, usize, SyncEv)>,
    ) {
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
                (SYS_CLONE | SYS_CLONE3, SyncPhase::Entry) => {
                    self.open_clone = Some(events.len());
                    events.push((
                        seq,
                        t,
                        SyncEv::Clone {
                            ret: None,
                            created: false,
                        },
                    ))
                }
                (SYS_CLONE | SYS_CLONE3, SyncPhase::Return) => {
                    if let Some(i) = self.open_clone.take() {
                        events[i].2 = SyncEv::Clone {
                            ret: Some(ret),
                            created,
                        };
                    }
                }
                _ => {}
            },
            Record::ThreadStart { seq, .. } => events.push((seq, t, SyncEv::Start)),
            Record::ThreadExit { seq } => events.push((seq, t, SyncEv::Exit)),
            _ => {}
        }
    }
}

/// The synchronization events of a trace in sequence order, taken in one record at a time
/// (all of a file's before its replay; a live recording's as the replay needs them), and
/// the pairing decisions that depend only on the events before the one decided.
#[derive(Default)]
struct SyncState {
    events: Vec<(u64, usize, SyncEv)>,
    /// Each thread's scan (by thread index).
    scans: Vec<SyncScan>,
    /// Indices in `events` of the wake-type calls and thread exits: the possible wakers.
    wakers: Vec<usize>,
    /// seq of a wait's entry -> index of its event.
    entries: FxHashMap<u64, usize>,
    /// seq of an event -> its index.
    index: FxHashMap<u64, usize>,
}

impl SyncState {
    /// Takes in thread `t`'s record `r` (records come in sequence order).
    fn push(&mut self, t: usize, r: &Record, created: bool) {
        if self.scans.len() <= t {
            self.scans.resize(t + 1, SyncScan::default());
        }
        let before = self.events.len();
        self.scans[t].push(r, t, created, &mut self.events);
        for i in before..self.events.len() {
            let (seq, _, ev) = self.events[i];
            self.index.insert(seq, i);
            match ev {
                SyncEv::Wake { .. } | SyncEv::Exit => self.wakers.push(i),
                SyncEv::WaitEntry { .. } => {
                    self.entries.insert(seq, i);
                }
                _ => {}
            }
        }
    }

    /// The call that woke the wait returning at `seq` (in thread `t`, entered at `entry`):
    /// the last wake-type call of another thread on the wait's address between its entry
    /// and its return that woke someone (a wake returning 0 woke nobody); failing that, the
    /// last thread exit in that interval; failing that, the last requeue on another address.
    /// `Err(())` while a wake in that interval has not returned yet (its return decides
    /// whether it woke anyone). Returns `(seq, thread)` of the waker.
    fn pick(&self, entry: u64, seq: u64, t: usize) -> Result<Option<(u64, usize)>, ()> {
        let Some(&ei) = self.entries.get(&entry) else {
            return Ok(None);
        };
        let SyncEv::WaitEntry { addr, .. } = self.events[ei].2 else {
            return Ok(None);
        };
        let seq_of = |i: &usize| self.events[*i].0;
        let lo = self.wakers.partition_point(|i| seq_of(i) <= entry);
        let hi = self.wakers.partition_point(|i| seq_of(i) < seq);
        let mut same = None;
        let mut exit = None;
        let mut requeue = None;
        for &i in self.wakers[lo..hi].iter().rev() {
            let (w, u, ev) = self.events[i];
            if u == t {
                continue;
            }
            match ev {
                SyncEv::Wake { addr: a, op, woke } => {
                    if counts_woken(op) {
                        match woke {
                            None => return Err(()),
                            Some(0) => continue,
                            _ => {}
                        }
                    }
                    if a == addr && same.is_none() {
                        same = Some((w, u));
                    }
                    if is_requeue(op) && requeue.is_none() {
                        requeue = Some((w, u));
                    }
                }
                SyncEv::Exit if exit.is_none() => exit = Some((w, u)),
                _ => {}
            }
        }
        // Failing all three, the last exit of another thread before the wait's entry: the
        // kernel's clear-tid wake comes inside the exit call, after the plugin recorded it,
        // so a join can enter its wait after the exit record and still be woken by it (one
        // join in a few runs of a program creating threads in rounds).
        let prior_exit = || {
            self.wakers[..lo]
                .iter()
                .rev()
                .take(PRIOR_EXIT_SCAN)
                .find_map(|&i| {
                    let (w, u, ev) = self.events[i];
                    (u != t && matches!(ev, SyncEv::Exit)).then_some((w, u))
                })
        };
        Ok(same.or(exit).or(requeue).or_else(prior_exit))
    }

    /// The pairing of a complete trace (`tids`: the threads in index order).
    fn pairing(&self, tids: &[u32]) -> Pairing {
        let mut p = Pairing::default();
        for &(seq, t, ev) in &self.events {
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
                        if let Some(SyncEv::WaitEntry {
                            timeout_ns: Some(ns),
                            ..
                        }) = self.entries.get(&entry).map(|&i| self.events[i].2)
                        {
                            p.sleeps.insert(seq, ns);
                        }
                    }
                    if ret != 0 {
                        continue;
                    }
                    // In a complete trace a wake without a return never returned: it counts
                    // as a wake that woke someone.
                    if let Some((w, u)) = self
                        .pick(entry, seq, t)
                        .unwrap_or_else(|()| self.pick_ignoring_open(entry, seq, t))
                    {
                        p.paired += 1;
                        p.waits_for.insert(seq, w);
                        p.waker_thread.insert(seq, u);
                    }
                }
                SyncEv::Clone { ret: Some(ret), .. } if ret > 0 => {
                    if let Some(k) = tids.iter().skip(1).position(|&x| x as i64 == ret) {
                        p.children.entry(seq).or_default().push(k + 1);
                    }
                }
                _ => {}
            }
        }
        p
    }

    /// [`SyncState::pick`] where a wake that never returned counts as having woken someone.
    fn pick_ignoring_open(&self, entry: u64, seq: u64, t: usize) -> Option<(u64, usize)> {
        let mut closed = SyncState {
            events: self.events.clone(),
            ..Default::default()
        };
        for e in closed.events.iter_mut() {
            if let SyncEv::Wake { woke, .. } = &mut e.2 {
                woke.get_or_insert(1);
            }
        }
        closed.wakers = self.wakers.clone();
        closed.entries = self.entries.clone();
        closed.pick(entry, seq, t).ok().flatten()
    }
}

/// Pairs waits with wakes and clones with the threads they created (see the module doc),
/// from every event of a trace.
fn pair(events: &[(u64, usize, SyncEv)], tids: &[u32]) -> Pairing {
    let mut st = SyncState::default();
    for (i, &(seq, _, ev)) in events.iter().enumerate() {
        st.events.push(events[i]);
        st.index.insert(seq, i);
        match ev {
            SyncEv::Wake { .. } | SyncEv::Exit => st.wakers.push(i),
            SyncEv::WaitEntry { .. } => {
                st.entries.insert(seq, i);
            }
            _ => {}
        }
    }
    st.pairing(tids)
}

/// Where a replayed thread's records come from.
pub enum Source {
    /// A `.pmt` file's stream (decoded ahead on a helper thread, or here).
    File(ThreadStream),
    /// Anything else, read on the simulation's thread.
    Live(Box<dyn StepSource>),
    /// A live recording's raw words (`tracefmt::words`), read on the simulation's thread.
    Words(Box<dyn tracefmt::words::WordSource>),
}

/// A recording still going on, replayed while it is made (`pmusim run --record`, fused):
/// what the replay needs from it besides each thread's records.
pub trait LiveRecording {
    /// The synchronization record with sequence number `seq`, its thread's id and, for the
    /// return of a `clone`, whether the call created a thread; waits for it while the
    /// recording goes on; `None` if the recording ended without it.
    fn sync(&self, seq: u64) -> Option<(u32, Record, bool)>;
    /// The largest sequence number, once the recording has ended (`None` before).
    fn last_seq(&self) -> Option<u64>;
    /// Thread `tid`'s records, as raw words.
    fn thread(&self, tid: u32) -> Box<dyn tracefmt::words::WordSource>;
}

/// A fused replay's view of the recording's synchronization records: taken in, in sequence
/// order, as far as the replay's decisions need (a wait's waker is decided from the records
/// before its return, and the return values of the wakes among them; a `clone`'s thread
/// from its return value and the new thread's start). See the module doc.
struct LiveSync {
    rec: Rc<dyn LiveRecording>,
    state: SyncState,
    /// The last sequence number taken in.
    taken: u64,
    /// The recording ended and every record is taken in.
    ended: bool,
    /// Thread index of each thread id seen (the main thread's first).
    index: FxHashMap<u32, usize>,
}

impl LiveSync {
    /// Takes in the next record; `false` at the end of the recording.
    fn advance(&mut self) -> bool {
        loop {
            if self.ended {
                return false;
            }
            let seq = self.taken + 1;
            match self.rec.sync(seq) {
                Some((tid, r, created)) => {
                    self.taken = seq;
                    if let Record::ThreadStart { .. } = r {
                        let n = self.index.len();
                        self.index.entry(tid).or_insert(n);
                    }
                    let t = *self.index.entry(tid).or_insert(usize::MAX);
                    if t != usize::MAX {
                        self.state.push(t, &r, created);
                    }
                    return true;
                }
                None => match self.rec.last_seq() {
                    // A number taken but never written (a thread stopped by `exit_group`).
                    Some(last) if seq <= last => self.taken = seq,
                    _ => self.ended = true,
                },
            }
        }
    }

    fn advance_to(&mut self, seq: u64) {
        while self.taken < seq && self.advance() {}
    }

    /// The waker of the woken wait returning at `seq` (thread `t`, entered at `entry`).
    fn waker(&mut self, entry: u64, seq: u64, t: usize) -> Option<(u64, usize)> {
        self.advance_to(seq);
        loop {
            match self.state.pick(entry, seq, t) {
                Ok(w) => return w,
                Err(()) if self.advance() => {}
                Err(()) => return self.state.pick_ignoring_open(entry, seq, t),
            }
        }
    }

    /// The thread index created by the `clone` entered at `seq`, once known.
    fn child(&mut self, seq: u64) -> Option<usize> {
        self.advance_to(seq);
        let i = *self.state.index.get(&seq)?;
        loop {
            let ev = self.state.events[i].2;
            match ev {
                SyncEv::Clone { ret: None, .. } if self.advance() => {}
                SyncEv::Clone {
                    ret: Some(ret),
                    created: true,
                } if ret > 0 => {
                    let tid = ret as u32;
                    while !self.index.contains_key(&tid) && self.advance() {}
                    return self.index.get(&tid).copied();
                }
                _ => return None,
            }
        }
    }
}

/// A trace replayed as a workload.
pub struct TraceReplay {
    path: String,
    pub header: Header,
    /// Each thread's records, taken by its simulated thread (a fused replay's come from the
    /// recording, [`LiveRecording::thread`]).
    streams: RefCell<Vec<Option<Source>>>,
    /// Thread ids by thread index (creation order); a fused replay's grow as threads start.
    tids: RefCell<Vec<u32>>,
    /// Known before the replay for a file; a fused replay decides as it goes ([`LiveSync`])
    /// and computes the summary's counts at the end.
    pairing: RefCell<Pairing>,
    /// Named regions (ELF symbols, range file) before the class fill-ins.
    regions: Vec<DataRegion>,
    layout: Option<Layout>,
    placement: ThreadPlacement,
    /// The processors in the order threads are placed on them (`--place`): thread k goes
    /// to `order[k mod P]` if it is free, else to the next free one in this order.
    order: RefCell<Vec<usize>>,
    /// Processor of each thread index, as placed when the thread was created.
    proc_of: RefCell<Vec<usize>>,
    /// Whether each processor runs a thread (or has one assigned, about to start).
    busy: RefCell<Vec<bool>>,
    /// The thread assigned to a processor by its creator's `clone`, with the creator's cycle
    /// and the `clone`'s seq, until the processor takes it up.
    assigned: RefCell<FxHashMap<usize, (usize, u64, u64)>>,
    /// Threads created while every processor ran one, with their `clone`'s seq, in creation
    /// order: each starts on the next processor whose thread ends (an OS without
    /// preemption). In the traced run a thread may have ended before its joiner created the
    /// next one without the join ever waiting; simulated time can order them otherwise.
    pending: RefCell<std::collections::VecDeque<(usize, u64)>>,
    /// Each thread's progress word (see the module doc), by thread index.
    flags: RefCell<Vec<Addr>>,
    error: RefCell<Option<String>>,
    replayed: Cell<u64>,
    /// The end marker's record total (for a fused replay, set at the end).
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
    /// A fused replay: the recording's synchronization records.
    live: Option<RefCell<LiveSync>>,
    /// A fused replay's header as the recorder left it.
    final_header: RefCell<Option<Header>>,
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
    let mut sync = Vec::new();
    for s in &streams.threads {
        sync.push((s.tid(), s.sync_records().map_err(fmt)?));
    }
    let (tids, pairing) = order_and_pair(&tids, &sync);
    let mut by_tid: FxHashMap<u32, ThreadStream> =
        streams.threads.into_iter().map(|s| (s.tid(), s)).collect();
    let ordered: Vec<Option<Source>> = tids
        .iter()
        .map(|t| by_tid.remove(t).map(Source::File))
        .collect();
    build(
        name, header, ordered, tids, pairing, records, bins, placement, None,
    )
}

/// The threads in creation order (the main thread, which has no start record, first, then
/// by start; `tids` gives the order of threads without one) and the pairing of their
/// synchronization records (`sync`: each thread's, in its program order).
fn order_and_pair(tids: &[u32], sync: &[(u32, Vec<Record>)]) -> (Vec<u32>, Pairing) {
    let mut events: Vec<(u64, usize, SyncEv)> = Vec::new();
    for (tid, records) in sync {
        let t = tids
            .iter()
            .position(|x| x == tid)
            .expect("a thread of the trace");
        let mut scan = SyncScan::default();
        for r in records {
            scan.push(r, t, false, &mut events);
        }
    }
    // Threads in creation order: the main thread (no start record) first, then by start.
    let mut start_seq: FxHashMap<usize, u64> = FxHashMap::default();
    for &(seq, t, ev) in &events {
        if let SyncEv::Start = ev {
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
    (tids, pairing)
}

/// A replay fused with the recording (`pmusim run --record`): the program's threads are
/// simulated while it runs, their records taken from `rec` as the recorder produces them,
/// `main` (the process id) the main thread. The data is named from `header` (the one the
/// recorder had written when the simulation started: see `docs/qemu-tracer.md`). Every
/// processor gets a simulated thread; those of threads the program never creates stay
/// parked and leave no trace.
pub fn fused(
    name: &str,
    header: Header,
    main: u32,
    rec: Rc<dyn LiveRecording>,
    bins: Option<&Path>,
    placement: ThreadPlacement,
) -> Result<TraceReplay, Error> {
    let source = rec.thread(main);
    let live = LiveSync {
        rec,
        state: SyncState::default(),
        taken: 0,
        ended: false,
        index: [(main, 0)].into_iter().collect(),
    };
    build(
        name,
        header,
        vec![Some(Source::Words(source))],
        vec![main],
        Pairing::default(),
        0,
        bins,
        placement,
        Some(RefCell::new(live)),
    )
}

#[allow(clippy::too_many_arguments)]
fn build(
    name: &str,
    header: Header,
    ordered: Vec<Option<Source>>,
    tids: Vec<u32>,
    pairing: Pairing,
    records: u64,
    bins: Option<&Path>,
    placement: ThreadPlacement,
    live: Option<RefCell<LiveSync>>,
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
        tids: RefCell::new(tids),
        pairing: RefCell::new(pairing),
        regions,
        layout,
        placement,
        order: RefCell::new(Vec::new()),
        proc_of: RefCell::new(Vec::new()),
        busy: RefCell::new(Vec::new()),
        assigned: RefCell::new(FxHashMap::default()),
        pending: RefCell::new(std::collections::VecDeque::new()),
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
        self.tids.borrow().len()
    }
    /// When threads created never found a processor (every processor's thread waited for
    /// another, as a barrier of more threads than processors does), what to do about it.
    pub fn short_of_processors(&self) -> Option<String> {
        let waiting = self.pending.borrow().len();
        (waiting > 0).then(|| {
            let n = self.order.borrow().len();
            format!(
                "the program needs more than {n} threads running at once ({waiting} created \
                 thread(s) never found a processor while every processor's thread waited for \
                 another): use --procs {} or more",
                n + waiting
            )
        })
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
    /// After a fused replay: takes in the rest of the recording's synchronization records
    /// and computes the pairing summary from all of them (as the file replay's pre-scan
    /// does); `records` is the records the recording gave (the end marker's total of a file
    /// made of them).
    pub fn finish_live(&self, records: u64) {
        let Some(live) = &self.live else {
            return;
        };
        let mut l = live.borrow_mut();
        while l.advance() {}
        let mut tids = vec![0u32; l.index.len()];
        for (&tid, &k) in &l.index {
            if k < tids.len() {
                tids[k] = tid;
            }
        }
        let p = l.state.pairing(&tids);
        drop(l);
        *self.pairing.borrow_mut() = p;
        self.records.set(records);
    }
    /// A fused replay's header at the end of the recording (for the names of functions).
    pub fn set_final_header(&self, h: Header) {
        *self.final_header.borrow_mut() = Some(h);
    }
    /// The trace's header at its end: for a fused replay the one the recorder wrote last,
    /// else the header the replay opened.
    pub fn final_header(&self) -> Header {
        self.final_header
            .borrow()
            .clone()
            .unwrap_or_else(|| self.header.clone())
    }
    /// Names the procedures of the code blocks that missed (`machine::code_blocks`: a traced
    /// thread's misses take its current block as their procedure) by the functions holding
    /// them, as `--cachegrind-out` names them (ELF function symbols of the final header's
    /// mappings); a block outside every symbol is `??? (FILE)`. Call after the run, before
    /// the report, which merges procedures by name.
    pub fn name_procedures(&self, st: &mut machine::state::State) {
        let blocks = st.code_blocks.blocks();
        if blocks.is_empty() {
            return;
        }
        let header = self.final_header();
        let mut namer = super::cachegrind::Namer::new(&header, self.program.as_deref());
        for (addr, id) in blocks {
            let (file, func) = namer.name(addr);
            st.procedures[id as usize] = if func == "???" {
                let base = Path::new(&file).file_name().map(|f| f.to_string_lossy());
                format!("??? ({})", base.as_deref().unwrap_or(&file))
            } else {
                func
            };
        }
    }
    /// Records replayed (after the run).
    pub fn replayed(&self) -> u64 {
        self.replayed.get()
    }
    /// Whether this replay is fused with a recording.
    pub fn is_fused(&self) -> bool {
        self.live.is_some()
    }
    /// The error that stopped a thread's stream during the replay (a corrupt chunk or
    /// record: the open checks only the file's structure and the synchronization chunks).
    pub fn read_error(&self) -> Option<String> {
        self.error.borrow().clone()
    }
    /// The processor each traced thread runs on (after `setup`; of a fused replay, each
    /// thread the program created).
    pub fn processors(&self) -> Vec<usize> {
        let n = self.threads();
        self.proc_of.borrow().iter().take(n).copied().collect()
    }
    /// Guest thread ids in the order of their processors list.
    pub fn tids(&self) -> Vec<u32> {
        self.tids.borrow().clone()
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

    /// A call that may wake another thread (a wake-type futex call, a thread's exit)
    /// raises this thread's progress word to its sequence number: a waiter paired with it
    /// sleeps until the word reaches it (see the module doc).
    fn signal(&self, ctx: &mut Ctx, me: usize, seq: u64) {
        let flag = self.flags.borrow()[me];
        ctx.fetch_max(flag, seq);
        let c = ctx.cycles();
        self.log
            .borrow_mut()
            .push((me, ReplayEvent::Signal, seq, c));
    }

    /// A `clone` entered at `seq`: the threads it created start now.
    fn clone_call(&self, ctx: &mut Ctx, me: usize, seq: u64) {
        let children = match &self.live {
            None => self
                .pairing
                .borrow()
                .children
                .get(&seq)
                .cloned()
                .unwrap_or_default(),
            Some(l) => {
                let mut l = l.borrow_mut();
                let k = l.child(seq);
                let mut tids = self.tids.borrow_mut();
                for (&tid, &i) in &l.index {
                    if i >= tids.len() {
                        tids.resize(i + 1, 0);
                    }
                    tids[i] = tid;
                }
                k.into_iter().collect()
            }
        };
        if children.is_empty() {
            return;
        }
        let c = ctx.cycles();
        self.log
            .borrow_mut()
            .push((me, ReplayEvent::Signal, seq, c));
        for k in children {
            match self.place(k) {
                Some(p) => {
                    self.assigned.borrow_mut().insert(p, (k, c, seq));
                    ctx.unpark(p);
                }
                None if k < MAX_THREADS => self.pending.borrow_mut().push_back((k, seq)),
                None => {
                    let mut e = self.error.borrow_mut();
                    if e.is_none() {
                        *e = Some(format!(
                            "the program creates more than {MAX_THREADS} threads"
                        ));
                    }
                }
            }
        }
    }

    /// The processor for new thread `k`: `order[k mod P]`, else the next free one; `None`
    /// when none is free or threads created before wait for one (`pending`).
    fn place(&self, k: usize) -> Option<usize> {
        if k >= MAX_THREADS || !self.pending.borrow().is_empty() {
            return None;
        }
        let order = self.order.borrow();
        let mut busy = self.busy.borrow_mut();
        let n = order.len();
        let p = (0..n).map(|i| order[(k + i) % n]).find(|&p| !busy[p])?;
        busy[p] = true;
        let mut proc_of = self.proc_of.borrow_mut();
        if proc_of.len() <= k {
            proc_of.resize(k + 1, usize::MAX);
        }
        proc_of[k] = p;
        Some(p)
    }

    /// Processor `p` waits for a thread to be assigned to it (parked: the processor does
    /// nothing meanwhile); returns its index, `None` if none ever is.
    fn await_thread(&self, ctx: &mut Ctx, p: usize) -> Option<usize> {
        if !self.assigned.borrow().contains_key(&p) {
            ctx.park();
        } else {
            // Assigned before this processor first ran: idle until the creator's time.
            let at = self.assigned.borrow()[&p].1;
            let now = ctx.cycles();
            ctx.idle(at.saturating_sub(now));
        }
        let (k, _, seq) = self.assigned.borrow_mut().remove(&p)?;
        if seq != 0 {
            let c = ctx.cycles();
            self.log
                .borrow_mut()
                .push((k, ReplayEvent::Resumed, seq, c));
        }
        Some(k)
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

    /// The return of a futex wait entered at `entry` (its timeout), returning `ret` at `seq`:
    /// a wait that timed out idles for its timeout; a woken one sleeps until its waker's
    /// progress word reaches the waker's call.
    fn wait(&self, ctx: &mut Ctx, me: usize, seq: u64, entry: u64, timeout: Option<u64>, ret: i64) {
        let (sleep, waker) = match &self.live {
            None => {
                let p = self.pairing.borrow();
                (
                    p.sleeps.get(&seq).copied(),
                    p.waits_for.get(&seq).map(|&w| (w, p.waker_thread[&seq])),
                )
            }
            Some(l) => match ret {
                ETIMEDOUT => (timeout, None),
                0 => (None, l.borrow_mut().waker(entry, seq, me)),
                _ => (None, None),
            },
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
        if let Some((w, u)) = waker {
            let flag = self.flags.borrow()[u];
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
        // The placement order: thread k on processor order[k] while threads fit.
        let mut order = Vec::new();
        let mut taken = vec![false; procs];
        for k in 0..procs {
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
            let p = p.min(procs.saturating_sub(1));
            if !std::mem::replace(&mut taken[p], true) {
                order.push(p);
            }
        }
        order.extend((0..procs).filter(|&p| !taken[p]));
        // The threads' progress words, one per line of one region for as many threads as
        // a replay takes (a fused replay does not know how many will come, and both replays
        // allocate the same).
        let base = s.alloc(
            "(replay) thread progress",
            MAX_THREADS as u64 * PROGRESS_STRIDE,
            Place::Default,
        );
        *self.flags.borrow_mut() = (0..MAX_THREADS as u64)
            .map(|k| base + k * PROGRESS_STRIDE)
            .collect();
        *self.busy.borrow_mut() = vec![false; procs];
        *self.order.borrow_mut() = order;
        // The main thread, and in a file the threads no `clone` creates (a trace cut short),
        // start at once.
        for k in 0..self.threads() {
            if k == 0 || (self.live.is_none() && !self.created_by_clone(k)) {
                if let Some(p) = self.place(k) {
                    self.assigned.borrow_mut().insert(p, (k, 0, 0));
                }
            }
        }
    }

    fn thread(&self, ctx: &mut Ctx) {
        let p = ctx.tid();
        while let Some(me) = self.await_thread(ctx, p) {
            self.run_thread(ctx, me);
            // The thread has ended: its processor takes the first thread waiting for one,
            // else the next thread created.
            ctx.use_loads();
            let mut busy = self.busy.borrow_mut();
            busy[p] = false;
            if self.assigned.borrow().contains_key(&p) {
                busy[p] = true;
            } else if let Some((k, seq)) = self.pending.borrow_mut().pop_front() {
                busy[p] = true;
                let mut proc_of = self.proc_of.borrow_mut();
                if proc_of.len() <= k {
                    proc_of.resize(k + 1, usize::MAX);
                }
                proc_of[k] = p;
                self.assigned.borrow_mut().insert(p, (k, ctx.cycles(), seq));
            }
        }
    }

    fn verify(&self) -> Verification {
        if let Some(e) = self.error.borrow().as_ref() {
            return Verification::failed(format!("the trace could not be read to its end: {e}"));
        }
        if let Some(h) = self.short_of_processors() {
            return Verification::failed(h);
        }
        Verification::check(
            self.replayed.get() == self.records.get(),
            format!(
                "replayed {} of {} records of {} thread(s); {}",
                self.replayed.get(),
                self.records.get(),
                self.threads(),
                self.pairing.borrow().summary()
            ),
        )
    }
}

impl TraceReplay {
    /// Replays thread `me`'s records on this processor.
    fn run_thread(&self, ctx: &mut Ctx, me: usize) {
        let stream = self.streams.borrow_mut().get_mut(me).and_then(Option::take);
        let stream = match (stream, &self.live) {
            (Some(s), _) => s,
            (None, Some(l)) => {
                let Some(&tid) = self.tids.borrow().get(me) else {
                    return;
                };
                Source::Words(l.borrow().rec.thread(tid))
            }
            (None, None) => return,
        };
        let code_records = self.header.code_records;
        if code_records {
            ctx.code_from_trace();
        }
        let mut n = 0u64;
        let mut watch = self.watch;
        let mut prof = self.profile.borrow().is_some().then(Profiler::default);
        // The futex wait in progress: its entry's seq and timeout.
        let mut open_wait: Option<(u64, Option<u64>)> = None;
        let mut reader = match stream {
            Source::File(s) => BatchReader::new(s, self.decode_ahead.get()),
            Source::Live(s) => BatchReader::from_source(s),
            Source::Words(w) if prof.is_some() || watch.is_some() || !code_records => {
                BatchReader::from_source(Box::new(tracefmt::words::WordSteps::new(w)))
            }
            Source::Words(mut w) => {
                // The fast path of a fused replay: the words as they come, no batches
                // (fetches from the code records: `Ctx::traced_code`).
                let base = w.code_base();
                while let Some(words) = w.next_words() {
                    let mut i = 0;
                    while i < words.len() {
                        // The one-word records (runs of hits in registers, the records
                        // that end them one by one), up to the first other word.
                        let j = ctx.traced_run(words, i, |&x| word_traced(x));
                        n += (j - i) as u64;
                        i = j;
                        if i == words.len() {
                            break;
                        }
                        // SAFETY: a guest thread's words, code words relative to `base`.
                        match unsafe { tracefmt::words::next(words, &mut i, base) } {
                            tracefmt::words::Item::Code { addr, bytes, .. } => {
                                ctx.fetch_code(addr, bytes as u64);
                                n += 1;
                            }
                            tracefmt::words::Item::Access {
                                addr,
                                icount,
                                kind,
                                size,
                            } => {
                                // As the records of a file: an instructions-only record
                                // first after over 2^32 - 1 instructions.
                                n += 1 + u64::from(icount > u64::from(u32::MAX));
                                ctx.traced_code(
                                    kind != AccessKind::Load,
                                    kind == AccessKind::Modify,
                                    addr,
                                    size as u32,
                                    icount.saturating_sub(1),
                                );
                            }
                            tracefmt::words::Item::Other(r) => {
                                n += 1;
                                self.other(ctx, me, r, &mut open_wait);
                            }
                        }
                    }
                }
                self.replayed.set(self.replayed.get() + n);
                return;
            }
        };
        loop {
            let step = match reader.next_batch() {
                None => break,
                Some(Ok(s)) => s,
                Some(Err(e)) => {
                    *self.error.borrow_mut() = Some(format!("{}: {e}", self.path));
                    break;
                }
            };
            match step {
                Batch::Accesses(batch) => {
                    n += batch.len() as u64;
                    if let Some(p) = prof.as_mut() {
                        for a in batch {
                            p.replay(ctx, a);
                        }
                    } else if watch.is_none() && code_records {
                        // No record of a batch is `Traced::Other`.
                        let i = ctx.traced_run(batch, 0, access_traced);
                        debug_assert_eq!(i, batch.len());
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
                        r => self.other(ctx, me, r, &mut open_wait),
                    }
                }
            }
        }
        self.replayed.set(self.replayed.get() + n);
        if let (Some(p), Some(all)) = (prof, self.profile.borrow_mut().as_mut()) {
            all.merge(&p.profile);
        }
    }

    /// A record that is neither an access nor a code block: instructions only, thread start
    /// and exit, system calls (see the module doc).
    fn other(
        &self,
        ctx: &mut Ctx,
        me: usize,
        r: Record,
        open_wait: &mut Option<(u64, Option<u64>)>,
    ) {
        match r {
            Record::Instructions(k) => ctx.int(k),
            Record::ThreadExit { seq } => {
                // Its processor is free for a thread created from now on.
                self.busy.borrow_mut()[ctx.tid()] = false;
                self.signal(ctx, me, seq)
            }
            Record::Sync {
                seq,
                nr,
                args,
                ret,
                phase,
                timeout_ns,
            } => match (nr, phase) {
                (SYS_FUTEX, SyncPhase::Entry) if is_wait(args[1]) => {
                    *open_wait = Some((seq, timeout_ns));
                }
                (SYS_FUTEX, SyncPhase::Entry) if is_wake(args[1]) => {
                    *open_wait = None;
                    self.signal(ctx, me, seq);
                }
                (SYS_FUTEX, SyncPhase::Return) => {
                    if let Some((entry, timeout)) = open_wait.take() {
                        self.wait(ctx, me, seq, entry, timeout, ret);
                    }
                }
                (SYS_CLONE | SYS_CLONE3, SyncPhase::Entry) => self.clone_call(ctx, me, seq),
                _ => {}
            },
            Record::Access { .. } | Record::Code { .. } | Record::ThreadStart { .. } => {}
        }
    }

    /// Whether thread `me` waits for a `clone` to create it: in a fused replay every thread
    /// but the main one; in a file's, those a `clone`'s return value names (a thread without
    /// one, in a trace cut short, starts at once).
    fn created_by_clone(&self, me: usize) -> bool {
        self.live.is_some()
            || self
                .pairing
                .borrow()
                .children
                .values()
                .any(|c| c.contains(&me))
    }
}

/// A word of a fused replay as [`Ctx::traced_hits`] reads it: a data reference (its kind
/// from the word's store and modify bits, `words::kind_of`, without a table) or an inline
/// code word (most blocks, without `words::next`); anything else is `Other`.
#[inline(always)]
fn word_traced(x: u64) -> Traced {
    use tracefmt::words::{ADDR_BITS, ADDR_MASK, CODE_SHIFT, ESC, ICOUNT_MAX, MODIFY, STORE};
    if x & ESC == 0 {
        let write = x & STORE != 0;
        return Traced::Data(TracedRef {
            write,
            modify: write & (x & MODIFY != 0),
            addr: x & ADDR_MASK,
            size: 1 << ((x >> CODE_SHIFT) & 7),
            before: ((x >> ADDR_BITS) & ICOUNT_MAX).saturating_sub(1),
        });
    }
    match tracefmt::words::inline_code_of(x) {
        Some((addr, bytes)) => Traced::Code { addr, bytes },
        None => Traced::Other,
    }
}

/// A decoded record of a trace with code records: the instructions before the reference
/// (its record counts its own instruction too), then the access of its size (an access
/// spanning two lines touches both; a size of 0, which no tracer writes, counts as 1), or a
/// code block's fetch. The thread fetches from code records (`Ctx::traced_code`).
#[inline(always)]
fn access_traced(a: &Access) -> Traced {
    let (write, modify) = match a.kind {
        AccessKind::Load => (false, false),
        AccessKind::Store => (true, false),
        AccessKind::Modify => (true, true),
        AccessKind::Code => {
            return Traced::Code {
                addr: a.addr,
                bytes: a.bytes as u64,
            }
        }
    };
    Traced::Data(TracedRef {
        write,
        modify,
        addr: a.addr,
        size: a.size as u32,
        before: a.icount.saturating_sub(1) as u64,
    })
}

/// One reference of a trace whose header says it holds no code records (lackey's, the
/// synthetic ones, QEMU's without instruction fetch), with the synthetic sequential fetch: a
/// code record, should one come anyway, is fetched out of line, so the data references' loop
/// keeps the registers the inlined fetch takes (100 M of `bench --case trace-hit-1t`'s
/// instructions, 1.3 %).
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

/// Spawns the replay's threads on their processors (a fused replay's on every processor:
/// see [`fused`]). Returns the workload for verification.
pub fn install(
    mut r: TraceReplay,
    m: &mut machine::Machine,
) -> Result<std::rc::Rc<TraceReplay>, String> {
    let n = r.threads();
    r.setup(&mut m.setup(), n);
    let r = std::rc::Rc::new(r);
    // A processor without a thread at the start is parked until a `clone` gives it one: one
    // that never gets one leaves no trace (so a fused replay, which must have every processor
    // ready, runs the same events as the replay of its file).
    let slots = r.order.borrow().clone();
    for p in slots {
        let w = r.clone();
        if r.assigned.borrow().contains_key(&p) {
            m.spawn(p, move |ctx| w.thread(ctx));
        } else {
            m.spawn_parked(p, move |ctx| w.thread(ctx));
        }
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
            (
                1,
                0,
                SyncEv::Clone {
                    ret: Some(101),
                    created: false,
                },
            ),
            (2, 1, SyncEv::Start),
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
            p.children.get(&1),
            Some(&vec![1]),
            "the clone returning thread 101's id creates it"
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
        assert_eq!(p.waker_thread.get(&7), Some(&0));
        assert_eq!(p.waker_thread.get(&10), Some(&1));
        assert_eq!((p.futex_waits, p.woken, p.paired), (2, 2, 2));
        for (w, k) in &p.waits_for {
            assert!(k < w, "pairings point back in the trace");
        }
    }

    /// A join entered after the joined thread's exit record and woken by the clear-tid wake
    /// inside that exit: paired with the exit (it was unpaired and did not wait, so the
    /// next round's threads found the processors still busy).
    #[test]
    fn a_join_entered_after_the_exit_record_pairs_with_the_exit() {
        let ev = vec![
            (1, 1, SyncEv::Exit),
            (
                2,
                0,
                SyncEv::WaitEntry {
                    addr: 0x30,
                    timeout_ns: None,
                },
            ),
            (3, 0, SyncEv::WaitReturn { entry: 2, ret: 0 }),
        ];
        let p = pair(&ev, &[100, 101]);
        assert_eq!(p.waits_for.get(&3), Some(&1));
        assert_eq!(p.waker_thread.get(&3), Some(&1));
        assert_eq!((p.woken, p.paired), (1, 1));
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
