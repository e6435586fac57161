//! Errors of reading and writing traces. Each one says where (byte offset in the file, chunk
//! number counted from 0) and what is wrong, so that a user can tell a truncated copy from a
//! corrupted one or from a file that is not a trace at all.

use std::fmt;
use std::io;

#[derive(Debug)]
pub enum Error {
    /// An I/O error other than an unexpected end of file.
    Io(io::Error),
    /// The file does not start with `PMUTRACE`.
    BadMagic { found: [u8; 8] },
    /// A version this reader does not know.
    UnsupportedVersion { found: u16 },
    /// The JSON header could not be parsed (or written).
    BadHeader { offset: u64, what: String },
    /// The file ends inside a structure; `what` names the structure.
    Truncated {
        offset: u64,
        chunk: u64,
        what: String,
    },
    /// The byte where a chunk or the end marker should start holds something else.
    UnknownChunkKind { offset: u64, chunk: u64, kind: u8 },
    /// A chunk's header or compressed data is inconsistent.
    BadChunk {
        offset: u64,
        chunk: u64,
        tid: u32,
        what: String,
    },
    /// A record inside a decompressed chunk is malformed.
    BadRecord {
        offset: u64,
        chunk: u64,
        tid: u32,
        record_offset: usize,
        what: String,
    },
    /// The file ended where a chunk or the end marker should start: it was cut short.
    MissingEnd { offset: u64, chunks: u64 },
    /// The end marker's record total disagrees with the records in the chunks.
    CountMismatch {
        offset: u64,
        marker: u64,
        counted: u64,
    },
    /// Bytes follow the end marker.
    TrailingBytes { offset: u64 },
    /// A producer handed [`crate::Writer::write_chunk`] malformed records.
    BadInput { tid: u32, what: String },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "I/O error: {e}"),
            Error::BadMagic { found } => write!(
                f,
                "not a pmusim trace: the file starts with {:?}, not \"PMUTRACE\"",
                String::from_utf8_lossy(found)
            ),
            Error::UnsupportedVersion { found } => {
                write!(f, "trace format version {found} is not supported (this build reads version {})", crate::VERSION)
            }
            Error::BadHeader { offset, what } => write!(f, "byte {offset}: bad header: {what}"),
            Error::Truncated {
                offset,
                chunk,
                what,
            } => write!(
                f,
                "byte {offset}, chunk {chunk}: the file is truncated inside {what}"
            ),
            Error::UnknownChunkKind {
                offset,
                chunk,
                kind,
            } => write!(
                f,
                "byte {offset}, chunk {chunk}: unknown chunk kind {kind} (expected 1 = records or 0 = end marker)"
            ),
            Error::BadChunk {
                offset,
                chunk,
                tid,
                what,
            } => write!(f, "byte {offset}, chunk {chunk} (thread {tid}): {what}"),
            Error::BadRecord {
                offset,
                chunk,
                tid,
                record_offset,
                what,
            } => write!(
                f,
                "chunk {chunk} at byte {offset} (thread {tid}), record byte {record_offset}: {what}"
            ),
            Error::MissingEnd { offset, chunks } => write!(
                f,
                "byte {offset}: the file ends after {chunks} chunks without the end marker: it is truncated"
            ),
            Error::CountMismatch {
                offset,
                marker,
                counted,
            } => write!(
                f,
                "byte {offset}: the end marker says {marker} records but the chunks hold {counted}"
            ),
            Error::TrailingBytes { offset } => {
                write!(f, "byte {offset}: data follows the end marker")
            }
            Error::BadInput { tid, what } => {
                write!(f, "malformed chunk handed to the writer for thread {tid}: {what}")
            }
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<io::Error> for Error {
    fn from(e: io::Error) -> Error {
        Error::Io(e)
    }
}
