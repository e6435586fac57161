//! The writer thread: compresses whole chunks of one thread's records with zstd and appends them
//! to the `.pmt` file.
//!
//! Why a thread: compression and the kernel's write path would otherwise run on the guest
//! threads. Guest threads hand over chunks through a bounded channel, so memory stays bounded:
//! a guest thread blocks when the writer falls behind. Emptied buffers come back through a
//! second channel so the steady state allocates nothing.
//!
//! Crash safety: QEMU 7.2 calls no plugin callback when the guest dies of a signal (it kills
//! itself with the signal), so after every chunk the writer also writes an end marker with the
//! records so far just past the chunk (the next chunk overwrites it). A program that crashes
//! leaves a valid trace up to its last written chunk, whose header says `ended_by: incomplete`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::sync::Mutex;
use std::thread::JoinHandle;
use tracefmt::Header;

/// Room left after the install-time header (at least this, or three times its length) so that
/// the exit-time header, with the final mappings, can be written over it without moving the
/// chunks (`tracefmt::Writer::with_header_room`, `tracefmt::rewrite_header`).
pub const HEADER_RESERVE: usize = 64 * 1024;
/// Chunks in flight between the guest threads and the writer.
pub const QUEUE_DEPTH: usize = 8;

/// One thread's records (encoded with `tracefmt::encode`), in that thread's program order.
pub struct Chunk {
    pub tid: u32,
    pub first_seq: u64,
    /// Records in `raw`.
    pub records: u64,
    pub raw: Vec<u8>,
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
}

impl Shared {
    /// Writes the pending bytes and an end marker counting `records` more records.
    fn commit(&mut self, records: u64) -> std::io::Result<()> {
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

pub struct Writer {
    tx: SyncSender<Msg>,
    free: Mutex<Receiver<Vec<u8>>>,
    thread: Mutex<Option<JoinHandle<Result<tracefmt::Totals, String>>>>,
}

impl Writer {
    /// Creates the file, writes the install-time header and starts the writer thread.
    pub fn start(path: &str, header: Header) -> Result<Writer, String> {
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
        }));
        let tw = tracefmt::Writer::with_header_room(Counted(shared.clone()), &header, room)
            .map_err(|e| format!("{path}: {e}"))?;
        commit(&shared, 0).map_err(|e| format!("{path}: {e}"))?;
        let (tx, rx) = sync_channel::<Msg>(QUEUE_DEPTH);
        let (free_tx, free) = sync_channel::<Vec<u8>>(QUEUE_DEPTH * 2);
        let path = path.to_string();
        let thread = std::thread::Builder::new()
            .name("pmt-writer".into())
            .spawn(move || {
                let r = run(tw, &shared, &rx, &free_tx, &path);
                if let Err(e) = &r {
                    eprintln!("qemu-tracer: writing the trace failed: {e}");
                }
                r
            })
            .map_err(|e| e.to_string())?;
        Ok(Writer {
            tx,
            free: Mutex::new(free),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Hands a chunk to the writer, blocking while [`QUEUE_DEPTH`] chunks are pending.
    pub fn send(&self, chunk: Chunk) {
        // A closed channel means the writer failed; it reported the error.
        let _ = self.tx.send(Msg::Chunk(chunk));
    }

    /// An emptied buffer from the writer, or a new one.
    pub fn recycled(&self, capacity: usize) -> Vec<u8> {
        let recycled = self.free.lock().ok().and_then(|rx| rx.try_recv().ok());
        recycled.unwrap_or_else(|| Vec::with_capacity(capacity))
    }

    /// Writes the end record and `final_header`, waits for the thread.
    pub fn finish(&self, final_header: Header) -> Result<tracefmt::Totals, String> {
        let _ = self.tx.send(Msg::Finish(Box::new(final_header)));
        let thread = self.thread.lock().ok().and_then(|mut t| t.take());
        match thread {
            Some(t) => t.join().unwrap_or_else(|_| Err("writer panicked".into())),
            None => Err("finished twice".into()),
        }
    }
}

fn commit(shared: &Mutex<Shared>, records: u64) -> std::io::Result<()> {
    shared
        .lock()
        .map_err(|_| std::io::Error::other("poisoned"))?
        .commit(records)
}

fn run(
    mut tw: tracefmt::Writer<Counted>,
    shared: &Mutex<Shared>,
    rx: &Receiver<Msg>,
    free: &SyncSender<Vec<u8>>,
    path: &str,
) -> Result<tracefmt::Totals, String> {
    while let Ok(msg) = rx.recv() {
        match msg {
            Msg::Chunk(mut c) => {
                tw.write_chunk(c.tid, c.first_seq, &c.raw)
                    .map_err(|e| e.to_string())?;
                commit(shared, c.records).map_err(|e| e.to_string())?;
                c.raw.clear();
                let _ = free.try_send(c.raw);
            }
            Msg::Finish(header) => {
                let totals = tw.finish().map_err(|e| e.to_string())?;
                rewrite_header(path, &header).map_err(|e| format!("{path}: {e}"))?;
                return Ok(totals);
            }
        }
    }
    Err("trace writer stopped before the end record".into())
}

/// Writes `header` over the install-time one, or, if it does not fit, the install-time one
/// with the final `ended_by` (the mappings then are those of `maps_taken_at: install`).
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
