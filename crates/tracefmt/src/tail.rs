//! Reading a trace while its recorder is still writing it (`pmusim run --record`, fused).
//!
//! The QEMU tracer writes each chunk together with a provisional end marker in one `pwrite`
//! at the end of the previous chunk (overwriting the previous provisional marker), and
//! rewrites the header in place. A [`Tail`] follows such a file: at an end marker it waits
//! for the next chunk until the recorder has ended (the caller says so with the shared
//! `finished` flag, set once the recorder's process has exited), and only then takes the
//! marker as the end. A chunk is taken once the file holds it and the end marker after it,
//! that is once the whole `pwrite` that carried it is in the file, and its header is read
//! again then, so a chunk is never read while it is being written.
//!
//! Waiting is polling with a short sleep (`POLL`): the tail is read on a helper host thread
//! (the simulation's decode-ahead thread), and a millisecond of latency is nothing against
//! the recorder's chunks, which arrive every few milliseconds.

use crate::read::{StoredChunk, ThreadStream, CHUNK_HEAD};
use crate::{Error, Header, KIND_CHUNK, KIND_END, MAGIC, MAX_CHUNK_RAW_BYTES, VERSION};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const POLL: Duration = Duration::from_millis(1);

/// What a [`Tail`] learned by the end: the record total of the final end marker, and the
/// first chunk of another thread than the one followed (a multi-threaded trace).
#[derive(Debug, Default)]
pub struct TailEnd {
    total: AtomicU64,
    ended: AtomicBool,
    other_thread: Mutex<Option<u32>>,
}

impl TailEnd {
    /// The end marker's record total, once the tail has read the final end marker.
    pub fn total_records(&self) -> Option<u64> {
        self.ended
            .load(Ordering::Acquire)
            .then(|| self.total.load(Ordering::Relaxed))
    }
    /// The thread id of the first chunk of another thread, if one was met.
    pub fn other_thread(&self) -> Option<u32> {
        *self.other_thread.lock().unwrap()
    }
}

/// A trace file that a recorder is still writing.
pub struct Tail {
    file: File,
    path: PathBuf,
    finished: Arc<AtomicBool>,
    pos: u64,
    chunks: u64,
    records_marker: Option<u64>,
}

impl Tail {
    /// Waits for `path` to hold a complete header that satisfies `ready` (or for the recorder
    /// to finish) and returns the tail positioned at the first chunk, with that header.
    /// `finished` must be set once the recorder has exited (after its last write).
    pub fn open(
        path: &Path,
        finished: Arc<AtomicBool>,
        ready: impl Fn(&Header) -> bool,
    ) -> Result<(Tail, Header), Error> {
        loop {
            let fin = finished.load(Ordering::Acquire);
            if let Ok(file) = File::open(path) {
                match read_header(&file) {
                    Ok(Some((h, pos))) if fin || ready(&h) => {
                        let t = Tail {
                            file,
                            path: path.to_path_buf(),
                            finished,
                            pos,
                            chunks: 0,
                            records_marker: None,
                        };
                        return Ok((t, h));
                    }
                    Ok(_) => {}
                    // A bad magic or version is not a header being written.
                    Err(e) if fin => return Err(e),
                    Err(e @ (Error::BadMagic { .. } | Error::UnsupportedVersion { .. })) => {
                        return Err(e)
                    }
                    Err(_) => {}
                }
            } else if fin {
                return Err(Error::Io(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    format!("{}: the recorder ended without writing it", path.display()),
                )));
            }
            std::thread::sleep(POLL);
        }
    }

    /// The header as the file holds it now (the recorder rewrites it as the guest maps
    /// memory; after the recorder has finished, the final one).
    pub fn header_now(&self) -> Result<Header, Error> {
        loop {
            if let Some((h, _)) = read_header(&self.file)? {
                return Ok(h);
            }
            std::thread::sleep(POLL);
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The next chunk in file order, waiting for the recorder to write it; `None` at the
    /// final end marker (after the recorder finished).
    pub(crate) fn next_chunk(&mut self) -> Result<Option<StoredChunk>, Error> {
        if self.records_marker.is_some() {
            return Ok(None);
        }
        let start = self.pos;
        loop {
            // Read `finished` before the file: what the recorder wrote before it exited is
            // then in what we read.
            let fin = self.finished.load(Ordering::Acquire);
            let size = self.file.metadata()?.len();
            let mut head = [0u8; 1 + CHUNK_HEAD];
            let have = size.saturating_sub(start).min(head.len() as u64) as usize;
            if have > 0 {
                self.file.read_exact_at(&mut head[..have], start)?;
                match head[0] {
                    KIND_END if have >= 9 && fin => {
                        if size > start + 9 {
                            return Err(Error::TrailingBytes { offset: start + 9 });
                        }
                        let total = u64::from_le_bytes(head[1..9].try_into().unwrap());
                        self.records_marker = Some(total);
                        return Ok(None);
                    }
                    KIND_CHUNK if have == head.len() => {
                        let clen = u32::from_le_bytes(head[5..9].try_into().unwrap()) as u64;
                        // The chunk and the end marker written with it.
                        let need = start + head.len() as u64 + clen + 9;
                        if size >= need {
                            if let Some(c) = self.take(start, &head, clen)? {
                                return Ok(Some(c));
                            }
                        } else if fin {
                            return Err(Error::Truncated {
                                offset: start,
                                chunk: self.chunks,
                                what: "a chunk's compressed data".into(),
                            });
                        }
                    }
                    KIND_END | KIND_CHUNK => {}
                    k if fin => {
                        return Err(Error::UnknownChunkKind {
                            offset: start,
                            chunk: self.chunks,
                            kind: k,
                        })
                    }
                    // Possibly a byte being overwritten: look again.
                    _ => {}
                }
            }
            if fin && have < 9 {
                return Err(Error::MissingEnd {
                    offset: start,
                    chunks: self.chunks,
                });
            }
            std::thread::sleep(POLL);
        }
    }

    /// Reads the chunk at `start` once its whole write is in the file; `None` when its
    /// header changed meanwhile (it was being written: look again).
    fn take(&mut self, start: u64, head: &[u8], clen: u64) -> Result<Option<StoredChunk>, Error> {
        let mut buf = vec![0u8; head.len() + clen as usize];
        self.file.read_exact_at(&mut buf, start)?;
        if buf[..head.len()] != *head {
            return Ok(None);
        }
        let tid = u32::from_le_bytes(head[1..5].try_into().unwrap());
        let raw_len = u32::from_le_bytes(head[9..13].try_into().unwrap());
        let first_seq = u64::from_le_bytes(head[13..21].try_into().unwrap());
        if raw_len > MAX_CHUNK_RAW_BYTES || raw_len == 0 {
            return Err(Error::BadChunk {
                offset: start,
                chunk: self.chunks,
                tid,
                what: format!("raw length {raw_len} is outside 1..={MAX_CHUNK_RAW_BYTES}"),
            });
        }
        let data = buf.split_off(head.len());
        let c = StoredChunk {
            index: self.chunks,
            offset: start,
            tid,
            first_seq,
            raw_len,
            data,
        };
        self.chunks += 1;
        self.pos = start + head.len() as u64 + clen;
        Ok(Some(c))
    }

    /// The records of thread `tid` as a stream that waits for the recorder (see the module
    /// doc). The stream ends at the trace's final end marker, or with an error at the first
    /// chunk of another thread (a multi-threaded trace, which a caller that follows one
    /// thread must replay from the finished file); `end` says which.
    pub fn into_stream(mut self, tid: u32) -> (ThreadStream, Arc<TailEnd>) {
        let end = Arc::new(TailEnd::default());
        let e = end.clone();
        let feed = move || -> Option<Result<StoredChunk, Error>> {
            match self.next_chunk() {
                Ok(Some(c)) if c.tid == tid => Some(Ok(c)),
                Ok(Some(c)) => {
                    *e.other_thread.lock().unwrap() = Some(c.tid);
                    Some(Err(Error::BadChunk {
                        offset: c.offset,
                        chunk: c.index,
                        tid: c.tid,
                        what: format!("a second thread (the stream follows thread {tid} only)"),
                    }))
                }
                Ok(None) => {
                    e.total
                        .store(self.records_marker.unwrap_or(0), Ordering::Relaxed);
                    e.ended.store(true, Ordering::Release);
                    None
                }
                Err(err) => Some(Err(err)),
            }
        };
        (ThreadStream::fed(tid, Box::new(feed)), end)
    }
}

/// The header and the offset of the first chunk, or `None` while it is incomplete (being
/// written or rewritten).
fn read_header(file: &File) -> Result<Option<(Header, u64)>, Error> {
    let mut head = [0u8; 14];
    if file.read_exact_at(&mut head, 0).is_err() {
        return Ok(None);
    }
    if &head[..8] != MAGIC {
        let mut found = [0u8; 8];
        found.copy_from_slice(&head[..8]);
        return Err(Error::BadMagic { found });
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
    if file.read_exact_at(&mut json, 14).is_err() {
        return Ok(None);
    }
    Ok(serde_json::from_slice::<Header>(&json)
        .ok()
        .map(|h| (h, 14 + len as u64)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Record, Writer};
    use std::io::Write;

    /// A writer that appends to a file as the QEMU tracer does: each chunk with an end
    /// marker, the next chunk over the previous marker.
    #[test]
    fn a_tail_reads_chunks_as_they_are_written_and_ends_when_the_recorder_has() {
        let path = std::env::temp_dir().join(format!("pmusim-tail-{}.pmt", std::process::id()));
        let mut whole = Vec::new();
        let mut w = Writer::new(&mut whole, Header::new("qemu", "/bin/x", &[], "x86_64")).unwrap();
        for i in 0..1_000_000u64 {
            w.push(
                7,
                &Record::Access {
                    kind: crate::AccessKind::Load,
                    addr: 0x1000 + 8 * (i % 977) * (i % 13),
                    size: 8,
                    icount: 3,
                },
            )
            .unwrap();
        }
        w.finish().unwrap();
        // Split the finished file into header, chunks and the end marker.
        let hlen = 14 + u32::from_le_bytes(whole[10..14].try_into().unwrap()) as usize;
        let mut pieces = Vec::new();
        let mut p = hlen;
        while whole[p] == KIND_CHUNK {
            let clen = u32::from_le_bytes(whole[p + 5..p + 9].try_into().unwrap()) as usize;
            pieces.push(p..p + 21 + clen);
            p += 21 + clen;
        }
        assert!(pieces.len() >= 2, "{} chunks", pieces.len());
        let marker = whole[p..].to_vec();
        let fin = Arc::new(AtomicBool::new(false));
        let writer = {
            let (path, fin, whole, marker) = (path.clone(), fin.clone(), whole.clone(), marker);
            std::thread::spawn(move || {
                let mut f = File::create(&path).unwrap();
                f.write_all(&whole[..hlen]).unwrap();
                f.write_all(&[0; 9]).unwrap(); // a provisional marker: no records yet
                let mut at = hlen as u64;
                for r in pieces {
                    std::thread::sleep(Duration::from_millis(20));
                    let mut b = whole[r.clone()].to_vec();
                    b.extend_from_slice(&marker);
                    f.write_all_at(&b, at).unwrap();
                    at += r.len() as u64;
                }
                std::thread::sleep(Duration::from_millis(20));
                fin.store(true, Ordering::Release);
            })
        };
        let (tail, h) = Tail::open(&path, fin, |_| true).unwrap();
        assert_eq!(h.program, "/bin/x");
        let (stream, end) = tail.into_stream(7);
        let got: Vec<Record> = stream.map(|r| r.unwrap()).collect();
        writer.join().unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(got.len(), 1_000_000);
        assert_eq!(end.total_records(), Some(1_000_000));
        assert_eq!(end.other_thread(), None);
        let want: Vec<Record> = crate::Reader::new(&whole[..])
            .unwrap()
            .map(|r| r.unwrap().1)
            .collect();
        assert_eq!(got, want, "the same records as reading the finished file");
    }
}
