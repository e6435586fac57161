//! Reading a trace: in file order, or split into per-thread streams.

use crate::codec::{decode, decode_accesses, skip_accesses, Access, DecState};
use crate::{Error, Header, Record, KIND_CHUNK, KIND_END, MAGIC, MAX_CHUNK_RAW_BYTES, VERSION};
use std::io::{self, Read};

/// Size of the fixed part of a chunk header after the kind byte.
pub(crate) const CHUNK_HEAD: usize = 20;

/// One chunk as stored in the file, not yet decompressed.
#[derive(Clone, Debug)]
pub(crate) struct StoredChunk {
    pub(crate) index: u64,
    pub(crate) offset: u64,
    pub(crate) tid: u32,
    pub(crate) first_seq: u64,
    pub(crate) raw_len: u32,
    pub(crate) data: Vec<u8>,
}

/// Where a stream's chunks come from after those it holds: a recorder still writing the
/// trace ([`crate::Tail::into_stream`]). `None` ends the stream.
pub(crate) type Feed = Box<dyn FnMut() -> Option<Result<StoredChunk, Error>> + Send>;

/// What [`ThreadStream::next_batch`] produced.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Step {
    /// This many access records, at the front of the caller's buffer, in program order.
    Accesses(usize),
    /// The next record, one that did not go into the buffer (a record of another type).
    Other(Record),
}

/// Decompresses a chunk and decodes its records one by one or in batches of accesses.
///
/// It also checks the chunk's `first_seq` against the records: sequence numbers start at 1,
/// and `first_seq` is the sequence number of the chunk's first synchronization record, 0 when
/// it holds none. Readers rely on that to skip chunks without synchronization records when
/// they look for them, so a chunk that breaks it is an error, not a silently different trace.
struct ChunkCursor {
    decompressor: zstd::bulk::Decompressor<'static>,
    raw: Vec<u8>,
    pos: usize,
    state: DecState,
    index: u64,
    offset: u64,
    tid: u32,
    first_seq: u64,
    /// A synchronization record of this chunk has been decoded.
    seen_sync: bool,
    /// The end-of-chunk check has run.
    ended: bool,
}

impl ChunkCursor {
    fn new() -> Result<ChunkCursor, Error> {
        Ok(ChunkCursor {
            decompressor: zstd::bulk::Decompressor::new()?,
            raw: Vec::new(),
            pos: 0,
            state: DecState::default(),
            index: 0,
            offset: 0,
            tid: 0,
            first_seq: 0,
            seen_sync: false,
            ended: false,
        })
    }

    fn load(&mut self, c: &StoredChunk) -> Result<(), Error> {
        self.raw.clear();
        self.raw.reserve(c.raw_len as usize);
        let bad = |what: String| Error::BadChunk {
            offset: c.offset,
            chunk: c.index,
            tid: c.tid,
            what,
        };
        let n = self
            .decompressor
            .decompress_to_buffer(&c.data[..], &mut self.raw)
            .map_err(|e| bad(format!("zstd data is corrupt: {e}")))?;
        if n != c.raw_len as usize {
            return Err(bad(format!(
                "decompresses to {n} bytes, the header says {}",
                c.raw_len
            )));
        }
        self.pos = 0;
        self.state = DecState::default();
        self.index = c.index;
        self.offset = c.offset;
        self.tid = c.tid;
        self.first_seq = c.first_seq;
        self.seen_sync = false;
        self.ended = false;
        Ok(())
    }

    fn bad_record(&self, record_offset: usize, what: String) -> Error {
        Error::BadRecord {
            offset: self.offset,
            chunk: self.index,
            tid: self.tid,
            record_offset,
            what,
        }
    }

    /// Checks a synchronization record's sequence number against the chunk header.
    #[cold]
    fn check_seq(&mut self, seq: u64, at: usize) -> Result<(), Error> {
        if seq == 0 {
            return Err(self.bad_record(
                at,
                "synchronization record with sequence number 0 (they start at 1)".into(),
            ));
        }
        if !self.seen_sync && seq != self.first_seq {
            return Err(self.bad_record(
                at,
                if self.first_seq == 0 {
                    format!("synchronization record (sequence number {seq}) in a chunk whose header says it holds none")
                } else {
                    format!(
                        "the chunk header gives {} as its first sequence number, but its first synchronization record has {seq}",
                        self.first_seq
                    )
                },
            ));
        }
        self.seen_sync = true;
        Ok(())
    }

    /// At the end of the chunk: `None`, or the error of a header that promised a
    /// synchronization record the chunk does not hold.
    #[cold]
    fn at_end(&mut self) -> Option<Result<Record, Error>> {
        if self.ended || self.first_seq == 0 || self.seen_sync {
            return None;
        }
        self.ended = true;
        Some(Err(self.bad_record(
            self.raw.len(),
            format!(
                "the chunk header gives {} as its first sequence number, but the chunk holds no synchronization record",
                self.first_seq
            ),
        )))
    }

    #[inline]
    fn next(&mut self) -> Option<Result<Record, Error>> {
        if self.pos >= self.raw.len() {
            return self.at_end();
        }
        let at = self.pos;
        Some(match decode(&self.raw, &mut self.pos, &mut self.state) {
            Ok(r) => match r.seq() {
                None => Ok(r),
                Some(seq) => self.check_seq(seq, at).map(|()| r),
            },
            Err(e) => Err(self.bad_record(e.offset, e.what)),
        })
    }

    /// The next record that is neither an access nor a code block (the runs of those are
    /// skipped undecoded: [`skip_accesses`]), or the error `next` would meet first.
    fn next_other(&mut self) -> Option<Result<Record, Error>> {
        skip_accesses(&self.raw, &mut self.pos);
        self.next()
    }

    /// The next run of access records into `out`, or the next record of another type.
    #[inline]
    fn next_batch(&mut self, out: &mut [Access]) -> Option<Result<Step, Error>> {
        let n = decode_accesses(&self.raw, &mut self.pos, &mut self.state, out);
        if n > 0 {
            return Some(Ok(Step::Accesses(n)));
        }
        self.next().map(|r| r.map(Step::Other))
    }
}

/// Reads exactly `buf.len()` bytes; an early end of file becomes [`Error::Truncated`].
fn read_exact_at<R: Read>(
    r: &mut R,
    buf: &mut [u8],
    offset: u64,
    chunk: u64,
    what: &str,
) -> Result<(), Error> {
    r.read_exact(buf).map_err(|e| {
        if e.kind() == io::ErrorKind::UnexpectedEof {
            Error::Truncated {
                offset,
                chunk,
                what: what.to_string(),
            }
        } else {
            Error::Io(e)
        }
    })
}

/// Reads a `.pmt` trace. Iterating yields `(tid, Record)` in file order; the iteration ends
/// with `Ok` only after the end marker has been read and its record total checked.
pub struct Reader<R: Read> {
    input: R,
    header: Header,
    /// Byte offset of the next unread byte.
    offset: u64,
    /// Chunks read so far.
    chunks: u64,
    records: u64,
    cursor: ChunkCursor,
    in_chunk: bool,
    done: bool,
    /// Record total of the end marker, once read.
    marker_total: Option<u64>,
}

impl<R: Read> Reader<R> {
    /// Reads and checks the magic, version and header.
    pub fn new(mut input: R) -> Result<Reader<R>, Error> {
        let mut head = [0u8; 14];
        read_exact_at(&mut input, &mut head, 0, 0, "the file header")?;
        let mut magic = [0u8; 8];
        magic.copy_from_slice(&head[..8]);
        if &magic != MAGIC {
            return Err(Error::BadMagic { found: magic });
        }
        let version = u16::from_le_bytes([head[8], head[9]]);
        if version != VERSION {
            return Err(Error::UnsupportedVersion { found: version });
        }
        let len = u32::from_le_bytes(head[10..14].try_into().unwrap());
        if len > 16 << 20 {
            return Err(Error::BadHeader {
                offset: 10,
                what: format!("header length {len} is implausible (over 16 MiB)"),
            });
        }
        let mut json = vec![0u8; len as usize];
        read_exact_at(&mut input, &mut json, 14, 0, "the JSON header")?;
        let header: Header = serde_json::from_slice(&json).map_err(|e| Error::BadHeader {
            offset: 14,
            what: e.to_string(),
        })?;
        Ok(Reader {
            input,
            header,
            offset: 14 + len as u64,
            chunks: 0,
            records: 0,
            cursor: ChunkCursor::new()?,
            in_chunk: false,
            done: false,
            marker_total: None,
        })
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    /// Reads the next chunk, or `None` after a valid end marker (and checks that nothing
    /// follows it).
    fn next_stored_chunk(&mut self) -> Result<Option<StoredChunk>, Error> {
        let start = self.offset;
        let mut kind = [0u8; 1];
        loop {
            match self.input.read(&mut kind) {
                Ok(0) => {
                    return Err(Error::MissingEnd {
                        offset: start,
                        chunks: self.chunks,
                    })
                }
                Ok(_) => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::Io(e)),
            }
        }
        match kind[0] {
            KIND_END => {
                let mut total = [0u8; 8];
                read_exact_at(
                    &mut self.input,
                    &mut total,
                    start,
                    self.chunks,
                    "the end marker",
                )?;
                let marker = u64::from_le_bytes(total);
                self.offset = start + 9;
                let mut extra = [0u8; 1];
                let trailing = loop {
                    match self.input.read(&mut extra) {
                        Ok(n) => break n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(Error::Io(e)),
                    }
                };
                if trailing != 0 {
                    return Err(Error::TrailingBytes {
                        offset: self.offset,
                    });
                }
                self.marker_total = Some(marker);
                Ok(None)
            }
            KIND_CHUNK => {
                let mut head = [0u8; CHUNK_HEAD];
                read_exact_at(
                    &mut self.input,
                    &mut head,
                    start,
                    self.chunks,
                    "a chunk header",
                )?;
                let tid = u32::from_le_bytes(head[0..4].try_into().unwrap());
                let clen = u32::from_le_bytes(head[4..8].try_into().unwrap());
                let raw_len = u32::from_le_bytes(head[8..12].try_into().unwrap());
                let first_seq = u64::from_le_bytes(head[12..20].try_into().unwrap());
                let bad = |what: String| Error::BadChunk {
                    offset: start,
                    chunk: self.chunks,
                    tid,
                    what,
                };
                if raw_len > MAX_CHUNK_RAW_BYTES || raw_len == 0 {
                    return Err(bad(format!(
                        "raw length {raw_len} is outside 1..={MAX_CHUNK_RAW_BYTES}"
                    )));
                }
                if clen as usize > zstd::zstd_safe::compress_bound(raw_len as usize) {
                    return Err(bad(format!(
                        "compressed length {clen} is larger than zstd could produce from {raw_len} bytes"
                    )));
                }
                let mut data = vec![0u8; clen as usize];
                read_exact_at(
                    &mut self.input,
                    &mut data,
                    start,
                    self.chunks,
                    "a chunk's compressed data",
                )?;
                let c = StoredChunk {
                    index: self.chunks,
                    offset: start,
                    tid,
                    first_seq,
                    raw_len,
                    data,
                };
                self.chunks += 1;
                self.offset = start + 1 + CHUNK_HEAD as u64 + clen as u64;
                Ok(Some(c))
            }
            k => Err(Error::UnknownChunkKind {
                offset: start,
                chunk: self.chunks,
                kind: k,
            }),
        }
    }

    /// The next record in file order, `Ok(None)` at a valid end of the trace.
    pub fn next_record(&mut self) -> Result<Option<(u32, Record)>, Error> {
        loop {
            if self.done {
                return Ok(None);
            }
            if self.in_chunk {
                match self.cursor.next() {
                    Some(Ok(r)) => {
                        self.records += 1;
                        return Ok(Some((self.cursor.tid, r)));
                    }
                    Some(Err(e)) => {
                        self.done = true;
                        return Err(e);
                    }
                    None => self.in_chunk = false,
                }
            }
            let next = self.next_stored_chunk();
            match next {
                Ok(Some(c)) => {
                    if let Err(e) = self.cursor.load(&c) {
                        self.done = true;
                        return Err(e);
                    }
                    self.in_chunk = true;
                }
                Ok(None) => {
                    self.done = true;
                    let marker = self.marker_total.unwrap_or(0);
                    if marker != self.records {
                        return Err(Error::CountMismatch {
                            offset: self.offset - 9,
                            marker,
                            counted: self.records,
                        });
                    }
                    return Ok(None);
                }
                Err(e) => {
                    self.done = true;
                    return Err(e);
                }
            }
        }
    }

    /// Splits the trace into one stream per thread, in thread id order. The compressed chunks
    /// are held in memory (a trace's file size) and decompressed one at a time as each stream
    /// is iterated. The whole file is read here, so a missing end marker is reported now;
    /// a corrupted chunk is reported when its stream reaches it.
    pub fn per_thread(mut self) -> Result<ThreadStreams, Error> {
        let mut threads: Vec<ThreadStream> = Vec::new();
        while let Some(c) = self.next_stored_chunk()? {
            let i = match threads.iter().position(|t| t.tid == c.tid) {
                Some(i) => i,
                None => {
                    threads.push(ThreadStream::new(c.tid)?);
                    threads.len() - 1
                }
            };
            threads[i].chunks.push(c);
        }
        threads.sort_by_key(|t| t.tid);
        Ok(ThreadStreams {
            header: self.header,
            total_records: self.marker_total.unwrap_or(0),
            threads,
        })
    }
}

impl<R: Read> Iterator for Reader<R> {
    type Item = Result<(u32, Record), Error>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_record().transpose()
    }
}

/// A trace split by thread.
pub struct ThreadStreams {
    pub header: Header,
    /// Record total of the end marker.
    pub total_records: u64,
    /// One stream per thread, in thread id order.
    pub threads: Vec<ThreadStream>,
}

/// The records of one thread in program order.
pub struct ThreadStream {
    tid: u32,
    chunks: Vec<StoredChunk>,
    /// More chunks, asked for when those above are used up (a live trace); a fed stream
    /// drops each chunk once loaded.
    feed: Option<Feed>,
    next_chunk: usize,
    cursor: ChunkCursor,
    in_chunk: bool,
    failed: bool,
}

impl ThreadStream {
    fn new(tid: u32) -> Result<ThreadStream, Error> {
        Ok(ThreadStream {
            tid,
            chunks: Vec::new(),
            feed: None,
            next_chunk: 0,
            cursor: ChunkCursor::new()?,
            in_chunk: false,
            failed: false,
        })
    }

    /// A stream whose chunks come from `feed` as they are asked for.
    pub(crate) fn fed(tid: u32, feed: Feed) -> ThreadStream {
        let mut s = ThreadStream::new(tid).expect("a zstd decompressor");
        s.feed = Some(feed);
        s
    }

    pub fn tid(&self) -> u32 {
        self.tid
    }

    /// The `first_seq` of each of the thread's chunks, in order (0 for chunks without sync
    /// records).
    pub fn chunk_first_seqs(&self) -> Vec<u64> {
        self.chunks.iter().map(|c| c.first_seq).collect()
    }

    /// Compressed bytes this thread's chunks take in the file.
    pub fn compressed_bytes(&self) -> u64 {
        self.chunks.iter().map(|c| c.data.len() as u64).sum()
    }

    /// Position in the file (chunk number) of the thread's first chunk: the order in which
    /// threads first appear when the file is read in order.
    pub fn first_chunk(&self) -> u64 {
        self.chunks.first().map_or(u64::MAX, |c| c.index)
    }

    /// The thread's synchronization records (thread start, exit, sync calls) in program
    /// order, without moving the stream. Only the chunks whose header gives a first sequence
    /// number are decompressed, and their runs of accesses and code blocks are skipped
    /// without decoding them (`skip_accesses`), so this costs a fraction of reading the
    /// stream. The same records, and the same errors, as taking those chunks' batches.
    pub fn sync_records(&self) -> Result<Vec<Record>, Error> {
        let mut out = Vec::new();
        let mut cursor = ChunkCursor::new()?;
        for c in self.chunks.iter().filter(|c| c.first_seq != 0) {
            cursor.load(c)?;
            while let Some(r) = cursor.next_other() {
                let r = r?;
                if r.seq().is_some() {
                    out.push(r);
                }
            }
        }
        Ok(out)
    }

    /// The next records in program order, in batches: a run of access records decoded into
    /// `out` (`Step::Accesses(n)`: `out[..n]`), or one record of another type. Gives the same
    /// records, and the same error, as iterating; `None` at the end of the stream. Replaying
    /// from batches avoids a `Record` and a decoder call per reference.
    pub fn next_batch(&mut self, out: &mut [Access]) -> Option<Result<Step, Error>> {
        self.walk(|cursor| cursor.next_batch(out))
    }

    /// Steps through the stream chunk by chunk: `step` takes the next item of the loaded
    /// chunk; at its end the next chunk is loaded. The first error ends the stream.
    #[inline]
    fn walk<T>(
        &mut self,
        mut step: impl FnMut(&mut ChunkCursor) -> Option<Result<T, Error>>,
    ) -> Option<Result<T, Error>> {
        loop {
            if self.failed {
                return None;
            }
            if self.in_chunk {
                match step(&mut self.cursor) {
                    Some(Ok(s)) => return Some(Ok(s)),
                    Some(Err(e)) => {
                        self.failed = true;
                        return Some(Err(e));
                    }
                    None => self.in_chunk = false,
                }
            }
            if let Some(feed) = self.feed.as_mut() {
                match feed() {
                    None => return None,
                    Some(Err(e)) => {
                        self.failed = true;
                        return Some(Err(e));
                    }
                    Some(Ok(c)) => {
                        self.chunks.clear();
                        self.chunks.push(c);
                        self.next_chunk = 0;
                    }
                }
            }
            let c = self.chunks.get(self.next_chunk)?;
            self.next_chunk += 1;
            if let Err(e) = self.cursor.load(c) {
                self.failed = true;
                return Some(Err(e));
            }
            self.in_chunk = true;
        }
    }
}

impl Iterator for ThreadStream {
    type Item = Result<Record, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        self.walk(|cursor| cursor.next())
    }
}
