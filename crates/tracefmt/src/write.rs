//! Writing a trace: header, per-thread chunks, end marker.

use crate::codec::{decode, encode, DecState, EncState};
use crate::{
    Error, Header, Record, CHUNK_RAW_BYTES, KIND_CHUNK, KIND_END, MAGIC, MAX_CHUNK_RAW_BYTES,
    VERSION, ZSTD_LEVEL,
};
use std::borrow::Borrow;
use std::io::Write;

/// What a finished trace holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub records: u64,
    /// Load, store and modify records.
    pub accesses: u64,
    pub chunks: u64,
    /// Encoded record bytes before compression.
    pub raw_bytes: u64,
    /// Bytes of the whole file, header and end marker included.
    pub file_bytes: u64,
}

struct ThreadBuf {
    tid: u32,
    raw: Vec<u8>,
    state: EncState,
    /// Sequence number of the first sync record in `raw`, or 0.
    first_seq: u64,
    records: u64,
    accesses: u64,
}

/// Writes a `.pmt` trace. Dropping a `Writer` without [`Writer::finish`] leaves a file without
/// end marker, which every reader rejects as truncated; that is the intended outcome of a
/// tracer that dies half way.
pub struct Writer<W: Write> {
    out: W,
    threads: Vec<ThreadBuf>,
    /// Index in `threads` of the thread of the last `push`: traces come in long runs of one
    /// thread, so this avoids a search per record.
    last: usize,
    compressor: zstd::bulk::Compressor<'static>,
    compressed: Vec<u8>,
    totals: Totals,
}

impl<W: Write> Writer<W> {
    /// Writes the header and returns a writer for the chunks.
    /// The header may be given by value or by reference.
    pub fn new(out: W, header: impl Borrow<Header>) -> Result<Writer<W>, Error> {
        Writer::with_header_room(out, header, 0)
    }

    /// Like [`Writer::new`], but pads the JSON header with `room` spaces so that
    /// [`crate::rewrite_header`] can later replace it with a longer one (a tracer learns
    /// some header facts, such as whether the load bias was confirmed, only at the end).
    pub fn with_header_room(
        mut out: W,
        header: impl Borrow<Header>,
        room: usize,
    ) -> Result<Writer<W>, Error> {
        let mut json = serde_json::to_vec(header.borrow()).map_err(|e| Error::BadHeader {
            offset: 14,
            what: e.to_string(),
        })?;
        json.resize(json.len() + room, b' ');
        out.write_all(MAGIC)?;
        out.write_all(&VERSION.to_le_bytes())?;
        out.write_all(&(json.len() as u32).to_le_bytes())?;
        out.write_all(&json)?;
        Ok(Writer {
            out,
            threads: Vec::new(),
            last: 0,
            compressor: zstd::bulk::Compressor::new(ZSTD_LEVEL)?,
            compressed: Vec::new(),
            totals: Totals {
                file_bytes: 14 + json.len() as u64,
                ..Totals::default()
            },
        })
    }

    /// Sets the zstd level of the chunks written from now on (the default is [`ZSTD_LEVEL`]).
    /// Any level zstd knows is accepted, from [`min_zstd_level`] (negative levels are its
    /// "fast" ones) to [`max_zstd_level`]; a reader decodes every level alike.
    pub fn set_zstd_level(&mut self, level: i32) -> Result<(), Error> {
        if !(min_zstd_level()..=max_zstd_level()).contains(&level) {
            return Err(Error::Io(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "zstd level {level} is outside {}..={}",
                    min_zstd_level(),
                    max_zstd_level()
                ),
            )));
        }
        self.compressor.set_compression_level(level)?;
        Ok(())
    }

    /// The buffer of thread `tid`: the last one used (nearly always) without a call.
    #[inline(always)]
    fn thread_index(&mut self, tid: u32) -> usize {
        if self.threads.get(self.last).is_some_and(|t| t.tid == tid) {
            return self.last;
        }
        self.thread_index_slow(tid)
    }

    #[cold]
    #[inline(never)]
    fn thread_index_slow(&mut self, tid: u32) -> usize {
        let i = match self.threads.iter().position(|t| t.tid == tid) {
            Some(i) => i,
            None => {
                self.threads.push(ThreadBuf {
                    tid,
                    raw: Vec::with_capacity(CHUNK_RAW_BYTES + 64),
                    state: EncState::default(),
                    first_seq: 0,
                    records: 0,
                    accesses: 0,
                });
                self.threads.len() - 1
            }
        };
        self.last = i;
        i
    }

    /// Appends one record to thread `tid`'s stream; writes the thread's chunk when its buffer
    /// is full. Synchronization records must have sequence numbers from 1 up.
    #[inline]
    pub fn push(&mut self, tid: u32, rec: &Record) -> Result<(), Error> {
        if rec.seq() == Some(0) {
            return Err(Error::BadInput {
                tid,
                what: "synchronization record with sequence number 0 (they start at 1)".into(),
            });
        }
        let i = self.thread_index(tid);
        let t = &mut self.threads[i];
        if t.first_seq == 0 {
            if let Some(seq) = rec.seq() {
                t.first_seq = seq;
            }
        }
        encode(&mut t.raw, rec, &mut t.state);
        t.records += 1;
        t.accesses += matches!(rec, Record::Access { .. }) as u64;
        if t.raw.len() >= CHUNK_RAW_BYTES {
            self.flush_thread(i)?;
        }
        Ok(())
    }

    fn flush_thread(&mut self, i: usize) -> Result<(), Error> {
        let t = &mut self.threads[i];
        if t.raw.is_empty() {
            return Ok(());
        }
        let raw = std::mem::take(&mut t.raw);
        let (tid, first_seq, records, accesses) = (t.tid, t.first_seq, t.records, t.accesses);
        t.state = EncState::default();
        t.first_seq = 0;
        t.records = 0;
        t.accesses = 0;
        let r = self.emit(tid, first_seq, &raw, records, accesses);
        let mut raw = raw;
        raw.clear();
        self.threads[i].raw = raw;
        r
    }

    fn emit(
        &mut self,
        tid: u32,
        first_seq: u64,
        raw: &[u8],
        records: u64,
        accesses: u64,
    ) -> Result<(), Error> {
        self.compressed.clear();
        self.compressed
            .reserve(zstd::zstd_safe::compress_bound(raw.len()));
        self.compressor
            .compress_to_buffer(raw, &mut self.compressed)?;
        let mut head = [0u8; 21];
        head[0] = KIND_CHUNK;
        head[1..5].copy_from_slice(&tid.to_le_bytes());
        head[5..9].copy_from_slice(&(self.compressed.len() as u32).to_le_bytes());
        head[9..13].copy_from_slice(&(raw.len() as u32).to_le_bytes());
        head[13..21].copy_from_slice(&first_seq.to_le_bytes());
        self.out.write_all(&head)?;
        self.out.write_all(&self.compressed)?;
        self.totals.records += records;
        self.totals.accesses += accesses;
        self.totals.chunks += 1;
        self.totals.raw_bytes += raw.len() as u64;
        self.totals.file_bytes += head.len() as u64 + self.compressed.len() as u64;
        Ok(())
    }

    /// Writes one chunk of records that the caller encoded with [`encode`], starting from
    /// `EncState::default()`. `first_seq` is the sequence number of the chunk's first sync
    /// record, or 0 when it holds none (sequence numbers start at 1). The bytes are decoded
    /// once here to count the records and to catch a producer's encoding bug, or a wrong
    /// `first_seq`, at the source rather than in a later reader.
    pub fn write_chunk(&mut self, tid: u32, first_seq: u64, raw: &[u8]) -> Result<(), Error> {
        if raw.is_empty() {
            return Ok(());
        }
        if raw.len() > MAX_CHUNK_RAW_BYTES as usize {
            return Err(Error::BadInput {
                tid,
                what: format!(
                    "{} bytes exceed the chunk limit of {MAX_CHUNK_RAW_BYTES}",
                    raw.len()
                ),
            });
        }
        let mut st = DecState::default();
        let mut pos = 0;
        let (mut records, mut accesses) = (0u64, 0u64);
        let mut seen_seq = None;
        let bad = |what: String| Error::BadInput { tid, what };
        while pos < raw.len() {
            let at = pos;
            let rec = decode(raw, &mut pos, &mut st).map_err(|e| bad(e.to_string()))?;
            records += 1;
            accesses += matches!(rec, Record::Access { .. }) as u64;
            if let Some(seq) = rec.seq() {
                if seq == 0 {
                    return Err(bad(format!(
                        "at record byte {at}: synchronization record with sequence number 0 (they start at 1)"
                    )));
                }
                seen_seq.get_or_insert(seq);
            }
        }
        if seen_seq.unwrap_or(0) != first_seq {
            return Err(bad(format!(
                "first_seq is {first_seq} but the chunk's first synchronization record has {}",
                seen_seq.map_or("none".to_string(), |s| s.to_string())
            )));
        }
        self.emit(tid, first_seq, raw, records, accesses)
    }

    /// Like [`Writer::write_chunk`], for a producer that counted its records itself and whose
    /// encoder is tested against this crate's decoder (the QEMU plugin's writer thread, where
    /// the check decode of every chunk cost a third of the thread's time). The chunk is not
    /// decoded here; `records` (all records) and `accesses` (load, store and modify records)
    /// go into the totals and the end marker, so a wrong count makes the file unreadable.
    pub fn write_counted(
        &mut self,
        tid: u32,
        first_seq: u64,
        raw: &[u8],
        records: u64,
        accesses: u64,
    ) -> Result<(), Error> {
        if raw.is_empty() {
            return Ok(());
        }
        if raw.len() > MAX_CHUNK_RAW_BYTES as usize {
            return Err(Error::BadInput {
                tid,
                what: format!(
                    "{} bytes exceed the chunk limit of {MAX_CHUNK_RAW_BYTES}",
                    raw.len()
                ),
            });
        }
        self.emit(tid, first_seq, raw, records, accesses)
    }

    /// Writes the buffered chunks (in thread id order) and the end marker, flushes, and
    /// returns what the file holds.
    pub fn finish(mut self) -> Result<Totals, Error> {
        self.threads.sort_by_key(|t| t.tid);
        for i in 0..self.threads.len() {
            self.flush_thread(i)?;
        }
        let mut end = [0u8; 9];
        end[0] = KIND_END;
        end[1..9].copy_from_slice(&self.totals.records.to_le_bytes());
        self.out.write_all(&end)?;
        self.out.flush()?;
        self.totals.file_bytes += end.len() as u64;
        Ok(self.totals)
    }
}

/// The lowest zstd level [`Writer::set_zstd_level`] accepts (zstd's fastest "fast" level).
pub fn min_zstd_level() -> i32 {
    zstd::zstd_safe::min_c_level()
}

/// The highest zstd level [`Writer::set_zstd_level`] accepts.
pub fn max_zstd_level() -> i32 {
    zstd::zstd_safe::max_c_level()
}

/// Replaces the header of a finished trace in place. The new JSON must fit in the space of the
/// old one (see [`Writer::with_header_room`]); it is padded with spaces, which JSON ignores.
pub fn rewrite_header<F: std::io::Read + Write + std::io::Seek>(
    file: &mut F,
    header: &Header,
) -> Result<(), Error> {
    use std::io::SeekFrom;
    file.seek(SeekFrom::Start(0))?;
    let mut head = [0u8; 14];
    file.read_exact(&mut head)?;
    if &head[..8] != MAGIC {
        let mut found = [0u8; 8];
        found.copy_from_slice(&head[..8]);
        return Err(Error::BadMagic { found });
    }
    let room = u32::from_le_bytes(head[10..14].try_into().unwrap()) as usize;
    let mut json = serde_json::to_vec(header).map_err(|e| Error::BadHeader {
        offset: 14,
        what: e.to_string(),
    })?;
    if json.len() > room {
        return Err(Error::BadHeader {
            offset: 14,
            what: format!(
                "the new header needs {} bytes, the file has room for {room}",
                json.len()
            ),
        });
    }
    json.resize(room, b' ');
    file.write_all(&json)?;
    file.flush()?;
    Ok(())
}
