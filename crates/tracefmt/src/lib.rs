//! The native compressed trace format (`.pmt`), shared by the tracers and the reader.
//!
//! One file holds the memory references of every thread of one traced program. The layout is
//! specified in `docs/trace-format.md`; this crate is its only writer and reader, so the lackey
//! converter, the QEMU plugin and the simulator agree by construction.
//!
//! * [`Writer`] buffers records per thread and writes one zstd chunk per thread when its buffer
//!   reaches [`CHUNK_RAW_BYTES`]. Producers that encode records in their own per-thread buffers
//!   (the QEMU plugin, which must not take a lock per reference) use [`encode`] with an
//!   [`EncState`] and hand finished buffers to [`Writer::write_chunk`].
//! * [`Reader`] yields `(tid, Record)` in file order, or splits the file into per-thread
//!   streams with [`Reader::per_thread`]. A truncated or corrupted file is always an error that
//!   names the byte offset and chunk; it is never read as a silently shorter trace.
//!
//! The crate is linked into a QEMU plugin `cdylib`, so its dependencies are kept to zstd and
//! serde_json (for the header).

mod ahead;
mod codec;
mod error;
mod read;
mod tail;
pub mod words;
mod write;

pub use ahead::{prefetch_lines, Batch, BatchReader, StepSource, BATCH_ACCESSES};
pub use codec::{decode, decode_accesses, encode, Access, DecState, EncState};
pub use error::Error;
pub use read::{Reader, Step, ThreadStream, ThreadStreams};
pub use tail::{Tail, TailEnd};
pub use write::{max_zstd_level, min_zstd_level, rewrite_header, Totals, Writer};

use serde::{Deserialize, Serialize};

/// The 8 bytes every `.pmt` file starts with.
pub const MAGIC: &[u8; 8] = b"PMUTRACE";
/// The format version this crate writes and reads.
pub const VERSION: u16 = 1;
/// Raw (uncompressed) size at which the [`Writer`] emits a thread's chunk. Big enough for
/// zstd to find the repetition in a program's access pattern, small enough that a writer with
/// hundreds of threads stays within a few hundred MiB.
pub const CHUNK_RAW_BYTES: usize = 1 << 20;
/// Largest raw chunk a reader accepts. Guards the allocation against a corrupted length field.
pub const MAX_CHUNK_RAW_BYTES: u32 = 64 << 20;
/// zstd level of the chunks a [`Writer`] writes unless told otherwise
/// ([`Writer::set_zstd_level`]; the QEMU plugin's `level=N`). A reader decodes every level
/// alike, so files written at another level (3 before issue 19's recording rate) read as
/// before.
///
/// Why 2 (issue 19: compression is on the recording's critical path, the QEMU plugin's writer
/// thread): on the 1 MiB chunks of python3 `sum(range(3_000_000))` (286.6 M records, 1,343 MB
/// encoded), zstd takes 0.45 s of CPU at level 3 (13.84 MB), **0.27 s at level 2 (14.48 MB,
/// +4.7 %)**, 0.27 s at level 1 (15.52 MB), 0.26 s at -1 (17.99 MB, +30 %) and 0.24 s at -3
/// (21.78 MB); on `xz -3 -c` of 500 kB (83.2 M records, where zstd costs more than the
/// encoding) 0.67 s at 3 (47.8 MB), 0.52 s at 2 (52.2 MB, +9 %), 0.46 s at 1 (55.2 MB), 0.41 s
/// at -1 (63.1 MB, +32 %). Level 2 (zstd's "fast" strategy with larger tables than level
/// 1's) is as fast as level 1 on the python trace and nearly as small as level 3;
/// the negative levels save little more time for a much larger file. Measured by
/// `qemu-tracer/examples/enc_bench.rs levels` (each level on the same encoded chunks, best of
/// 3, thread CPU time, load 6.4-6.6; `docs/qemu-tracer.md`, "zstd level").
pub const ZSTD_LEVEL: i32 = 2;

/// Header key (in [`Header::extra`]) of the number of threads with records in the file, set
/// by a writer that counted them when it finished (the QEMU plugin's), with
/// [`TOTAL_REFERENCES`].
pub const TOTAL_THREADS: &str = "total_threads";
/// Header key of the file's data references: load, store and modify records (a modify once).
pub const TOTAL_REFERENCES: &str = "total_references";

/// Chunk kind byte of the end marker.
pub(crate) const KIND_END: u8 = 0;
/// Chunk kind byte of a record chunk.
pub(crate) const KIND_CHUNK: u8 = 1;

/// What kind of data reference an access record is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessKind {
    Load = 0,
    Store = 1,
    /// A read-modify-write of one address (lackey `M`): the simulator issues a load and then
    /// a store to the same address.
    Modify = 2,
    /// Not a data reference: the instruction fetch of an executed code block
    /// ([`Record::Code`]), as batch readers ([`decode_accesses`]) hand it out among the
    /// accesses so that a replay keeps fetches and data references in program order.
    Code = 3,
}

/// Whether a [`Record::Sync`] marks the entry to or the return from the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SyncPhase {
    Entry = 0,
    Return = 1,
}

/// One record of one thread's stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Record {
    /// A data reference. `icount` is the number of instructions retired by this thread since
    /// its previous record (of any kind), including the instruction that makes this reference.
    Access {
        kind: AccessKind,
        addr: u64,
        size: u8,
        icount: u32,
    },
    /// Instructions retired with no data reference (a long run of register-only code, or the
    /// tail of a thread after its last reference).
    Instructions(u64),
    /// The thread started executing a block of code: it fetched the `bytes` bytes at `addr`,
    /// which hold `insns` instructions. Retires nothing and does not reset the instruction
    /// count of the next record: the instructions are counted by the records around it as in
    /// a trace without code records (see `docs/trace-format.md`, "Code records").
    Code { addr: u64, bytes: u32, insns: u32 },
    /// The thread came to life, created by `parent`; `seq` orders it among all sync records.
    ThreadStart { parent: u32, seq: u64 },
    /// The thread ended; `seq` orders it among all sync records.
    ThreadExit { seq: u64 },
    /// A synchronizing system call (futex and friends), at its entry or its return, so that a
    /// multi-thread replay can respect the program's real ordering.
    Sync {
        seq: u64,
        nr: u64,
        /// arg0 (address), arg1 (operation), arg2 (value).
        args: [u64; 3],
        ret: i64,
        phase: SyncPhase,
        /// At the entry of a wait with a timeout (a futex wait), the timeout in nanoseconds,
        /// relative to the call (an absolute deadline is converted when the call is made):
        /// a replay resumes a wait that timed out after this long. `None` for no timeout, for
        /// other calls, at the return, and in traces of older tracers.
        timeout_ns: Option<u64>,
    },
}

impl Record {
    /// The global sequence number of a synchronization record, `None` for the others.
    pub fn seq(&self) -> Option<u64> {
        match *self {
            Record::ThreadStart { seq, .. }
            | Record::ThreadExit { seq }
            | Record::Sync { seq, .. } => Some(seq),
            Record::Access { .. } | Record::Instructions(_) | Record::Code { .. } => None,
        }
    }

    /// Instructions this record accounts for.
    pub fn instructions(&self) -> u64 {
        match *self {
            Record::Access { icount, .. } => icount as u64,
            Record::Instructions(n) => n,
            _ => 0,
        }
    }
}

/// One memory mapping of the traced process, for naming data.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub name: String,
}

/// The JSON header of a trace: what was traced and how, so that addresses can be named later.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// "lackey" or "qemu".
    pub tracer: String,
    /// Path of the traced program as given to the tracer.
    pub program: String,
    #[serde(default)]
    pub args: Vec<String>,
    /// Guest architecture, e.g. "x86_64".
    pub arch: String,
    /// Where a position-independent main executable was loaded (add to its symbol values);
    /// `None` when unknown or when the executable is not position independent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_bias: Option<u64>,
    /// How `load_bias` was determined, in words (it is a claim a user may want to check).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_bias_source: Option<String>,
    /// The guest's memory mappings, when the tracer sees them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub maps: Vec<Mapping>,
    /// The traced program's absolute path (with symbolic links resolved), so that a replay
    /// from another directory finds it. Absent in traces of older tracers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program_path: Option<String>,
    /// [`program_hash`] of the traced program, so that a replay can tell whether the ELF it
    /// reads symbols from is the one that ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program_hash: Option<String>,
    /// The trace holds a [`Record::Code`] for every executed block of code, so a replay
    /// fetches the program's real instruction addresses instead of a synthetic code region.
    /// Absent (false) in traces of older tracers and of lackey.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub code_records: bool,
    /// Fields this version does not know, kept so that a rewrite does not lose them.
    #[serde(flatten)]
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// A content hash of a file: `fnv1a64:` and 16 hex digits (FNV-1a, 64 bits), then `:` and
/// the size in bytes. Identifies the traced ELF (it is not meant to resist forgery). Why FNV:
/// it needs no dependency in the plugin, and a 6 MB python3 hashes in a few milliseconds.
pub fn program_hash(path: &std::path::Path) -> std::io::Result<String> {
    let bytes = std::fs::read(path)?;
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in &bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    Ok(format!("fnv1a64:{h:016x}:{}", bytes.len()))
}

impl Header {
    /// The threads and data references the writer counted ([`TOTAL_THREADS`],
    /// [`TOTAL_REFERENCES`]), if it wrote them.
    pub fn totals(&self) -> Option<(usize, u64)> {
        let threads = self.extra.get(TOTAL_THREADS)?.as_u64()?;
        let refs = self.extra.get(TOTAL_REFERENCES)?.as_u64()?;
        Some((usize::try_from(threads).ok()?, refs))
    }

    /// Records the program's absolute path and content hash (when the file can be read).
    pub fn identify_program(&mut self, path: &std::path::Path) {
        if let Ok(abs) = std::fs::canonicalize(path) {
            self.program_hash = program_hash(&abs).ok();
            self.program_path = Some(abs.display().to_string());
        }
    }

    /// A header with the fields every tracer must fill.
    pub fn new(tracer: &str, program: &str, args: &[String], arch: &str) -> Header {
        Header {
            tracer: tracer.to_string(),
            program: program.to_string(),
            args: args.to_vec(),
            arch: arch.to_string(),
            ..Header::default()
        }
    }
}
