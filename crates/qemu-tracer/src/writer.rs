//! The writer thread: encodes the guest threads' fixed-size records ([`crate::words`]) into
//! `.pmt` record bytes, compresses whole chunks of one thread's records with zstd and appends
//! them to the file.
//!
//! Why a thread: encoding, compression and the kernel's write path would otherwise run on the
//! guest threads. Guest threads hand over buffers through a bounded channel, so memory stays
//! bounded: a guest thread blocks when the writer falls behind. Emptied buffers come back
//! through a second channel so the steady state allocates nothing.
//!
//! Names that survive: the writer rewrites the header with the process's current mappings and
//! load bias when the guest program is loaded ([`Writer::refresh_header`], from the first
//! translated block) and again whenever the mappings changed, checked at most every
//! [`REFRESH_EVERY`] while chunks arrive. A program killed by a signal (SIGPIPE from `| head`,
//! SIGSEGV, abort), for which QEMU calls no plugin callback, keeps the names of everything mapped
//! up to shortly before it died.
//!
//! Crash safety: QEMU 7.2 calls no plugin callback when the guest dies of a signal (it kills
//! itself with the signal), so after every chunk the writer also writes an end marker with the
//! records so far just past the chunk (the next chunk overwrites it). A program that crashes
//! leaves a valid trace up to its last written chunk, whose header says `ended_by: incomplete`.
//!
//! Which side is the critical path: with `PMUSIM_QEMU_STATS` set in its environment, the plugin
//! prints at the end (stderr, one line) the CPU time of the guest thread that ended the program
//! and of the writer thread, how long guest threads were blocked waiting for the writer (a full
//! queue: the writer is behind), how long the writer waited for chunks (idle: the guest is
//! behind), and how long the end waited for the writer to drain ([`Stats`]).

use crate::words::{Encoded, ThreadEnc};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tracefmt::Header;

/// Room left after the install-time header (at least this, or three times its length) so that
/// the exit-time header, with the final mappings, can be written over it without moving the
/// chunks (`tracefmt::Writer::with_header_room`, `tracefmt::rewrite_header`).
pub const HEADER_RESERVE: usize = 64 * 1024;
/// Buffers in flight between the guest threads and the writer.
pub const QUEUE_DEPTH: usize = 8;
/// How often, at most, the writer compares the mappings with those of the header.
pub const REFRESH_EVERY: Duration = Duration::from_millis(100);

/// One thread's records ([`crate::words`]), in that thread's program order.
pub struct Chunk {
    pub tid: u32,
    /// The thread ended: write its records out now.
    pub last: bool,
    pub words: Vec<u64>,
}

/// What the writer thread does with the records: everything (the default), or, to measure
/// the cost of each step, stop after encoding or after compressing (`mode=` of the plugin).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stages {
    Encode,
    Compress,
    Write,
}

/// The trace file as `tracefmt::Writer` sees it: bytes are collected in memory and written by
/// [`Shared::commit`] together with a provisional end marker in one `pwrite`, so that a process
/// killed at any moment leaves the file ending either before or after the whole chunk, with a
/// valid end marker (a fatal signal does not cut a write to a regular file in two).
struct Counted(Arc<Mutex<Shared>>);

struct Shared {
    file: File,
    /// Bytes of the file before its end marker.
    len: u64,
    pending: Vec<u8>,
    /// Records in the committed chunks.
    records: u64,
    /// Measurement mode [`Stages::Compress`]: chunks are dropped instead of written.
    discard: bool,
}

impl Shared {
    /// Writes the pending bytes and an end marker counting `records` more records.
    fn commit(&mut self, records: u64) -> std::io::Result<()> {
        if self.discard {
            self.pending.clear();
            return Ok(());
        }
        self.records += records;
        let body = self.pending.len() as u64;
        self.pending.push(0);
        self.pending.extend_from_slice(&self.records.to_le_bytes());
        self.file.write_all_at(&self.pending, self.len)?;
        self.len += body;
        self.pending.clear();
        Ok(())
    }
}

impl Write for Counted {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let mut s = self
            .0
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?;
        s.pending.extend_from_slice(buf);
        Ok(buf.len())
    }
    /// Only `tracefmt::Writer::finish` flushes, after its end marker: write it as it is.
    fn flush(&mut self) -> std::io::Result<()> {
        let mut s = self
            .0
            .lock()
            .map_err(|_| std::io::Error::other("poisoned"))?;
        let Shared {
            file, len, pending, ..
        } = &mut *s;
        file.write_all_at(pending, *len)?;
        *len += pending.len() as u64;
        pending.clear();
        Ok(())
    }
}

enum Msg {
    Chunk(Chunk),
    /// Write the end record and the final header, then stop.
    Finish(Box<Header>),
}

/// What `PMUSIM_QEMU_STATS` reports (see the module doc), in nanoseconds.
#[derive(Default)]
pub struct Stats {
    /// Guest threads blocked in [`Writer::send`] on a full queue: time and count.
    pub blocked_ns: AtomicU64,
    pub blocked: AtomicU64,
    /// The writer thread waiting for a message, time and count of chunks.
    pub idle_ns: AtomicU64,
    pub chunks: AtomicU64,
    /// The writer thread's CPU time, set when it ends.
    pub writer_cpu_ns: AtomicU64,
}

/// This thread's CPU time in nanoseconds.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

pub struct Writer {
    path: String,
    stats: Arc<Stats>,
    started: Instant,
    stages: Stages,
    current_header: fn() -> Header,
    /// `/proc/self/maps` as of the last header written; its lock orders header rewrites.
    last_maps: Arc<Mutex<String>>,
    tx: SyncSender<Msg>,
    free: Mutex<Receiver<Vec<u64>>>,
    thread: Mutex<Option<JoinHandle<Result<tracefmt::Totals, String>>>>,
}

impl Writer {
    /// Creates the file, writes the install-time header and starts the writer thread, which
    /// compresses chunks at zstd level `zstd_level` (the plugin's `level=N`, by default
    /// [`tracefmt::ZSTD_LEVEL`]) and takes the header's later versions from `current_header`
    /// ([`Writer::refresh_header`]).
    pub fn start(
        path: &str,
        header: Header,
        stages: Stages,
        zstd_level: i32,
        current_header: fn() -> Header,
    ) -> Result<Writer, String> {
        let file = File::create(path).map_err(|e| format!("cannot create trace {path}: {e}"))?;
        let hlen = serde_json::to_vec(&header)
            .map_err(|e| e.to_string())?
            .len();
        let room = HEADER_RESERVE.max(3 * hlen);
        let shared = Arc::new(Mutex::new(Shared {
            file,
            len: 0,
            pending: Vec::new(),
            records: 0,
            discard: false,
        }));
        let mut tw = tracefmt::Writer::with_header_room(Counted(shared.clone()), &header, room)
            .map_err(|e| format!("{path}: {e}"))?;
        tw.set_zstd_level(zstd_level)
            .map_err(|e| format!("{path}: {e}"))?;
        commit(&shared, 0).map_err(|e| format!("{path}: {e}"))?;
        if stages == Stages::Compress {
            shared.lock().map_err(|e| e.to_string())?.discard = true;
        }
        let (tx, rx) = sync_channel::<Msg>(QUEUE_DEPTH);
        let (free_tx, free) = sync_channel::<Vec<u64>>(QUEUE_DEPTH * 2);
        let last_maps = Arc::new(Mutex::new(String::new()));
        let lm = last_maps.clone();
        let path = path.to_string();
        let p = path.clone();
        let stats = Arc::new(Stats::default());
        let st = stats.clone();
        let thread = std::thread::Builder::new()
            .name("pmt-writer".into())
            .spawn(move || {
                let mut w = Run {
                    sink: Sink {
                        tw: Some(tw),
                        shared: &shared,
                        stages,
                    },
                    free: &free_tx,
                    path: &p,
                    last_maps: lm,
                    current_header,
                    threads: Vec::new(),
                    last_check: Instant::now() - REFRESH_EVERY,
                    stats: &st,
                };
                let r = w.run(&rx);
                st.writer_cpu_ns.store(thread_cpu_ns(), Ordering::Relaxed);
                if let Err(e) = &r {
                    eprintln!("qemu-tracer: writing the trace failed: {e}");
                }
                r
            })
            .map_err(|e| e.to_string())?;
        Ok(Writer {
            path,
            stats,
            started: Instant::now(),
            stages,
            current_header,
            last_maps,
            tx,
            free: Mutex::new(free),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Hands a chunk to the writer, blocking while [`QUEUE_DEPTH`] chunks are pending.
    pub fn send(&self, chunk: Chunk) {
        // A closed channel means the writer failed; it reported the error.
        if let Err(TrySendError::Full(m)) = self.tx.try_send(Msg::Chunk(chunk)) {
            let t = Instant::now();
            let _ = self.tx.send(m);
            self.stats
                .blocked_ns
                .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
            self.stats.blocked.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Rewrites the header with the current mappings, on the calling thread.
    pub fn refresh_header_now(&self) {
        if self.stages == Stages::Write {
            refresh(&self.path, &self.last_maps, self.current_header, true);
        }
    }

    /// An emptied buffer from the writer, or a new one.
    pub fn recycled(&self, capacity: usize) -> Vec<u64> {
        let recycled = self.free.lock().ok().and_then(|rx| rx.try_recv().ok());
        recycled.unwrap_or_else(|| Vec::with_capacity(capacity))
    }

    /// Writes the end record and `final_header`, waits for the thread.
    pub fn finish(&self, final_header: Header) -> Result<tracefmt::Totals, String> {
        let guest_cpu = thread_cpu_ns();
        let end = Instant::now();
        let _ = self.tx.send(Msg::Finish(Box::new(final_header)));
        let thread = self.thread.lock().ok().and_then(|mut t| t.take());
        let r = match thread {
            Some(t) => t.join().unwrap_or_else(|_| Err("writer panicked".into())),
            None => Err("finished twice".into()),
        };
        if std::env::var_os("PMUSIM_QEMU_STATS").is_some() {
            eprintln!("{}", self.stats_line(guest_cpu, end.elapsed()));
        }
        r
    }

    /// The `PMUSIM_QEMU_STATS` line (module doc); `guest_cpu` is the CPU time of the thread
    /// that ends the trace, `drain` the time it waited for the writer at the end.
    fn stats_line(&self, guest_cpu: u64, drain: Duration) -> String {
        let s = &self.stats;
        let secs = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64 * 1e-9;
        format!(
            "qemu-tracer: {:.3} s since the plugin started; guest thread (the last) CPU {:.3} s, \
             blocked on a full queue {:.3} s ({} times); writer CPU {:.3} s, idle {:.3} s, \
             {} chunks; the end waited {:.3} s for the writer",
            self.started.elapsed().as_secs_f64(),
            guest_cpu as f64 * 1e-9,
            secs(&s.blocked_ns),
            s.blocked.load(Ordering::Relaxed),
            secs(&s.writer_cpu_ns),
            secs(&s.idle_ns),
            s.chunks.load(Ordering::Relaxed),
            drain.as_secs_f64(),
        )
    }
}

/// The exit-time header's count of the threads and data references (load, store and modify
/// records: a modify once) the file holds, keys [`tracefmt::TOTAL_THREADS`] and
/// [`tracefmt::TOTAL_REFERENCES`]: what `pmusim trace record` prints, read from the header
/// instead of decoding the whole trace again after the program ended (python3
/// `sum(range(3_000_000))`: 1.3 s of the recording's 4.8 s of wall).
fn set_totals(header: &mut Header, threads: usize, totals: &tracefmt::Totals) {
    header
        .extra
        .insert(tracefmt::TOTAL_THREADS.into(), threads.into());
    header
        .extra
        .insert(tracefmt::TOTAL_REFERENCES.into(), totals.accesses.into());
}

fn commit(shared: &Mutex<Shared>, records: u64) -> std::io::Result<()> {
    shared
        .lock()
        .map_err(|_| std::io::Error::other("poisoned"))?
        .commit(records)
}

/// The writer thread's state.
struct Run<'a> {
    sink: Sink<'a>,
    free: &'a SyncSender<Vec<u64>>,
    path: &'a str,
    current_header: fn() -> Header,
    /// The encoder of each thread seen so far.
    threads: Vec<ThreadEnc>,
    last_maps: Arc<Mutex<String>>,
    last_check: Instant,
    stats: &'a Stats,
}

impl Run<'_> {
    fn run(&mut self, rx: &Receiver<Msg>) -> Result<tracefmt::Totals, String> {
        loop {
            let t = Instant::now();
            let Ok(msg) = rx.recv() else { break };
            self.stats
                .idle_ns
                .fetch_add(t.elapsed().as_nanos() as u64, Ordering::Relaxed);
            match msg {
                Msg::Chunk(mut c) => {
                    self.stats.chunks.fetch_add(1, Ordering::Relaxed);
                    self.chunk(&c)?;
                    c.words.clear();
                    let _ = self.free.try_send(c.words);
                    if self.last_check.elapsed() >= REFRESH_EVERY {
                        self.refresh(false)?;
                    }
                }
                Msg::Finish(mut header) => {
                    self.threads.sort_by_key(|t| t.tid);
                    for t in &mut self.threads {
                        t.emit(&mut |e| self.sink.write(e))?;
                    }
                    let tw = self.sink.tw.take().ok_or("finished twice")?;
                    let totals = tw.finish().map_err(|e| e.to_string())?;
                    set_totals(&mut header, self.threads.len(), &totals);
                    rewrite_header(self.path, &header)
                        .map_err(|e| format!("{}: {e}", self.path))?;
                    return Ok(totals);
                }
            }
        }
        Err("trace writer stopped before the end record".into())
    }

    fn chunk(&mut self, c: &Chunk) -> Result<(), String> {
        let i = match self.threads.iter().position(|t| t.tid == c.tid) {
            Some(i) => i,
            None => {
                self.threads.push(ThreadEnc::new(c.tid));
                self.threads.len() - 1
            }
        };
        let t = &mut self.threads[i];
        // SAFETY: chunks hold the words of `ThreadBuf`s (`ThreadBuf::flush` is the only
        // sender), whose code words point to leaked `CodeBlock`s.
        unsafe { t.feed(&c.words, 0, &mut |e| self.sink.write(e)) }?;
        if c.last {
            t.emit(&mut |e| self.sink.write(e))?;
        }
        Ok(())
    }

    fn refresh(&mut self, always: bool) -> Result<(), String> {
        self.last_check = Instant::now();
        if self.sink.stages == Stages::Write {
            refresh(self.path, &self.last_maps, self.current_header, always);
        }
        Ok(())
    }
}

/// Rewrites the header of the trace at `path` with `current_header()` if the mappings changed
/// since `last_maps` (or, with `always`, in any case). The header area lies before the chunks,
/// so this does not disturb the writer; a header too large for it keeps the last one that
/// fitted (the exit-time rewrite falls back the same way).
fn refresh(path: &str, last_maps: &Mutex<String>, current_header: fn() -> Header, always: bool) {
    let mut last = last_maps.lock().unwrap_or_else(|e| e.into_inner());
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    if !always && maps == *last {
        return;
    }
    *last = maps;
    let header = current_header();
    if let Ok(mut f) = OpenOptions::new().write(true).read(true).open(path) {
        let _ = tracefmt::rewrite_header(&mut f, &header);
    }
}

/// Where encoded chunks go.
struct Sink<'a> {
    /// `None` once finished.
    tw: Option<tracefmt::Writer<Counted>>,
    shared: &'a Mutex<Shared>,
    stages: Stages,
}

impl Sink<'_> {
    fn write(&mut self, e: Encoded<'_>) -> Result<(), String> {
        if self.stages == Stages::Encode {
            return Ok(());
        }
        self.tw
            .as_mut()
            .ok_or("finished twice")?
            .write_counted(e.tid, e.first_seq, e.raw, e.records, e.accesses)
            .map_err(|e| e.to_string())?;
        commit(self.shared, e.records).map_err(|e| e.to_string())
    }
}

/// Writes `header` over the last one, or, if it does not fit, the last one with the final
/// `ended_by` (the mappings then are those of its `maps_taken_at`).
fn rewrite_header(path: &str, header: &Header) -> Result<(), tracefmt::Error> {
    let mut f = OpenOptions::new().read(true).write(true).open(path)?;
    if tracefmt::rewrite_header(&mut f, header).is_ok() {
        return Ok(());
    }
    let mut old = tracefmt::Reader::new(File::open(path)?)?.header().clone();
    old.extra
        .insert("ended_by".into(), header.extra["ended_by"].clone());
    tracefmt::rewrite_header(&mut f, &old)
}
