//! The writer thread: compresses whole chunks of one thread's records with zstd and appends them
//! to the `.pmt` file.
//!
//! Why a thread: compression and the kernel's write path would otherwise run on the guest
//! threads. Guest threads hand over chunks through a bounded channel, so memory stays bounded:
//! a guest thread blocks when the writer falls behind. Emptied buffers come back through a
//! second channel so the steady state allocates nothing.

use std::fs::File;
use std::io::{BufWriter, Seek, SeekFrom, Write};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Mutex;
use std::thread::JoinHandle;

/// Magic at the start of a `.pmt` file.
pub const MAGIC: &[u8; 8] = b"PMUTRACE";
pub const FORMAT_VERSION: u16 = 1;
/// Bytes reserved for the header JSON so that the exit-time header (with the final mappings)
/// can be written over the install-time one without moving the chunks; JSON allows the
/// trailing spaces that pad it.
pub const HEADER_RESERVE: usize = 256 * 1024;
/// zstd level 1: the fastest level, about 3x on these records; the writer must keep up with
/// guest threads producing tens of millions of references per second.
pub const ZSTD_LEVEL: i32 = 1;
/// Chunks in flight between the guest threads and the writer.
pub const QUEUE_DEPTH: usize = 8;

/// One thread's records, in that thread's program order.
pub struct Chunk {
    pub tid: u32,
    pub first_seq: u64,
    pub records: u64,
    pub raw: Vec<u8>,
}

enum Msg {
    Chunk(Chunk),
    /// Write the end record and the final header, then stop.
    Finish(String),
}

pub struct Writer {
    tx: SyncSender<Msg>,
    free: Mutex<Receiver<Vec<u8>>>,
    thread: Mutex<Option<JoinHandle<std::io::Result<u64>>>>,
}

/// Writes the fixed part of the header plus `json` padded to [`HEADER_RESERVE`] bytes.
pub fn write_header(f: &mut impl Write, json: &str) -> std::io::Result<()> {
    let mut h = Vec::with_capacity(14 + HEADER_RESERVE);
    h.extend_from_slice(MAGIC);
    h.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    h.extend_from_slice(&(HEADER_RESERVE as u32).to_le_bytes());
    h.extend_from_slice(json.as_bytes());
    h.resize(14 + HEADER_RESERVE, b' ');
    f.write_all(&h)
}

impl Writer {
    /// Creates the file, writes the install-time header and starts the writer thread.
    pub fn start(path: &str, header_json: &str) -> std::io::Result<Writer> {
        if header_json.len() > HEADER_RESERVE {
            return Err(std::io::Error::other("trace header larger than the reserved space"));
        }
        let mut file = File::create(path)?;
        write_header(&mut file, header_json)?;
        let (tx, rx) = sync_channel::<Msg>(QUEUE_DEPTH);
        let (free_tx, free) = sync_channel::<Vec<u8>>(QUEUE_DEPTH * 2);
        let thread = std::thread::Builder::new()
            .name("pmt-writer".into())
            .spawn(move || run(file, rx, free_tx))?;
        Ok(Writer { tx, free: Mutex::new(free), thread: Mutex::new(Some(thread)) })
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

    /// Writes the end record and `final_header`, waits for the thread; returns the records.
    pub fn finish(&self, final_header: String) -> std::io::Result<u64> {
        let _ = self.tx.send(Msg::Finish(final_header));
        let thread = self.thread.lock().ok().and_then(|mut t| t.take());
        match thread {
            Some(t) => t.join().unwrap_or_else(|_| Err(std::io::Error::other("writer panicked"))),
            None => Ok(0),
        }
    }
}

fn run(file: File, rx: Receiver<Msg>, free: SyncSender<Vec<u8>>) -> std::io::Result<u64> {
    let result = write_all(file, &rx, &free);
    if let Err(e) = &result {
        eprintln!("qemu-tracer: writing the trace failed: {e}");
    }
    result
}

fn write_all(file: File, rx: &Receiver<Msg>, free: &SyncSender<Vec<u8>>) -> std::io::Result<u64> {
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let mut zstd = zstd::bulk::Compressor::new(ZSTD_LEVEL)?;
    let mut packed = Vec::new();
    let mut total = 0u64;
    while let Ok(msg) = rx.recv() {
        match msg {
            Msg::Chunk(mut c) => {
                if c.raw.is_empty() {
                    continue;
                }
                packed.clear();
                packed.reserve(zstd::zstd_safe::compress_bound(c.raw.len()));
                zstd.compress_to_buffer(&c.raw, &mut packed)?;
                let mut head = [0u8; 21];
                head[0] = 1;
                head[1..5].copy_from_slice(&c.tid.to_le_bytes());
                head[5..9].copy_from_slice(&(packed.len() as u32).to_le_bytes());
                head[9..13].copy_from_slice(&(c.raw.len() as u32).to_le_bytes());
                head[13..21].copy_from_slice(&c.first_seq.to_le_bytes());
                out.write_all(&head)?;
                out.write_all(&packed)?;
                total += c.records;
                c.raw.clear();
                let _ = free.try_send(c.raw);
            }
            Msg::Finish(header) => {
                out.write_all(&[0])?;
                out.write_all(&total.to_le_bytes())?;
                let mut f = out.into_inner().map_err(|e| e.into_error())?;
                if header.len() <= HEADER_RESERVE {
                    f.seek(SeekFrom::Start(0))?;
                    write_header(&mut f, &header)?;
                }
                f.flush()?;
                return Ok(total);
            }
        }
    }
    Err(std::io::Error::other("trace writer stopped before the end record"))
}
