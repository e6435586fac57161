//! Reading a thread's stream in batches, decoded here or ahead on a helper thread.

use crate::codec::Access;
use crate::read::{Step, ThreadStream};
use crate::{Error, Record};
use std::sync::mpsc::{self, Receiver, SyncSender};

/// Accesses per batch. Handed from the helper thread in batches of this many (64 KiB), so
/// that the hand-over (and the wake-up of a helper waiting for room) is rare against the
/// work of replaying a batch.
pub const BATCH_ACCESSES: usize = 4096;

/// Batches the helper may decode ahead of the reader (1 MiB).
const DEPTH: usize = 16;

/// What [`BatchReader::next_batch`] yields.
#[derive(Debug, PartialEq)]
pub enum Batch<'a> {
    /// A run of access records in program order.
    Accesses(&'a [Access]),
    /// The next record, one of another type than an access.
    Other(Record),
}

enum Msg {
    Accesses(Vec<Access>),
    Other(Record),
    Err(Error),
}

/// Records of one thread from elsewhere than a `.pmt` file (the raw words of a live
/// recording, `qemu_tracer::live`), in the steps a [`ThreadStream`] gives: runs of accesses
/// into `out` and single other records; `None` at the end.
pub trait StepSource {
    fn next_batch(&mut self, out: &mut [Access]) -> Option<Result<Step, Error>>;
}

enum Inner {
    /// Read by the caller's thread from a source.
    Source {
        src: Box<dyn StepSource>,
        buf: Vec<Access>,
    },
    /// Decompressed and decoded by the caller's thread.
    Here {
        stream: ThreadStream,
        buf: Vec<Access>,
    },
    /// Decompressed and decoded ahead by a helper thread.
    Ahead {
        rx: Receiver<Msg>,
        /// Buffers handed back for reuse.
        recycle: SyncSender<Vec<Access>>,
        current: Vec<Access>,
        done: bool,
    },
}

/// The records of one thread in program order, as runs of accesses and single other
/// records: the same records, and the same error at the same place, as iterating the
/// [`ThreadStream`]. With `ahead`, a helper thread decompresses and decodes the stream while
/// the caller consumes it (a replay then runs on two host cores: about twice as fast when the
/// simulation and the decoding cost about the same); it stops when the reader is dropped.
pub struct BatchReader {
    inner: Inner,
}

impl BatchReader {
    pub fn new(stream: ThreadStream, ahead: bool) -> BatchReader {
        if !ahead {
            return BatchReader {
                inner: Inner::Here {
                    stream,
                    buf: vec![Access::default(); BATCH_ACCESSES],
                },
            };
        }
        let (tx, mut rx) = mpsc::sync_channel(DEPTH);
        let (recycle, returned) = mpsc::sync_channel(DEPTH + 2);
        let spawned = std::thread::Builder::new()
            .name(format!("trace-decode-{}", stream.tid()))
            .spawn(move || decode_ahead(stream, tx, returned));
        if let Err(e) = spawned {
            // No thread to be had: the error comes where the stream's first record would.
            let (tx, failed) = mpsc::sync_channel(1);
            let _ = tx.send(Msg::Err(Error::Io(e)));
            rx = failed;
        }
        BatchReader {
            inner: Inner::Ahead {
                rx,
                recycle,
                current: Vec::new(),
                done: false,
            },
        }
    }

    /// Reads `src` on the caller's thread.
    pub fn from_source(src: Box<dyn StepSource>) -> BatchReader {
        BatchReader {
            inner: Inner::Source {
                src,
                buf: vec![Access::default(); BATCH_ACCESSES],
            },
        }
    }

    /// The next run of accesses or the next other record; `None` at the end of the stream
    /// (and after an error).
    #[inline]
    pub fn next_batch(&mut self) -> Option<Result<Batch<'_>, Error>> {
        match &mut self.inner {
            Inner::Source { src, buf } => match src.next_batch(buf)? {
                Ok(Step::Accesses(n)) => Some(Ok(Batch::Accesses(&buf[..n]))),
                Ok(Step::Other(r)) => Some(Ok(Batch::Other(r))),
                Err(e) => Some(Err(e)),
            },
            Inner::Here { stream, buf } => match stream.next_batch(buf)? {
                Ok(Step::Accesses(n)) => Some(Ok(Batch::Accesses(&buf[..n]))),
                Ok(Step::Other(r)) => Some(Ok(Batch::Other(r))),
                Err(e) => Some(Err(e)),
            },
            Inner::Ahead {
                rx,
                recycle,
                current,
                done,
            } => {
                if *done {
                    return None;
                }
                if current.capacity() > 0 {
                    let _ = recycle.try_send(std::mem::take(current));
                }
                match rx.recv() {
                    Ok(Msg::Accesses(v)) => {
                        *current = v;
                        prefetch_lines(current);
                        Some(Ok(Batch::Accesses(current)))
                    }
                    Ok(Msg::Other(r)) => Some(Ok(Batch::Other(r))),
                    Ok(Msg::Err(e)) => {
                        *done = true;
                        Some(Err(e))
                    }
                    Err(_) => {
                        *done = true;
                        None
                    }
                }
            }
        }
    }
}

/// Asks the core to bring `data`, which another host thread has just written (so it sits in
/// the other core's cache), into this one's, one request per 64-byte line, so that the lines
/// travel while the replay works on the first ones instead of one at a time as the replay
/// reaches them. A hint: nothing changes but the time.
#[inline]
pub fn prefetch_lines<T>(data: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let base = data.as_ptr() as *const i8;
        let bytes = std::mem::size_of_val(data);
        let mut off = 0;
        while off < bytes {
            // SAFETY: a prefetch is a hint; the address is inside `data`.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(base.add(off)) };
            off += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = data;
}

/// The helper thread: decodes `stream` into batches until its end, an error, or the reader's
/// departure.
fn decode_ahead(mut stream: ThreadStream, tx: SyncSender<Msg>, returned: Receiver<Vec<Access>>) {
    let mut buf = vec![Access::default(); BATCH_ACCESSES];
    let mut filled = 0;
    // Sends the accesses gathered so far; false when the reader has gone.
    let flush = |buf: &mut Vec<Access>, filled: &mut usize| -> bool {
        if *filled == 0 {
            return true;
        }
        let mut next = returned
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BATCH_ACCESSES));
        next.resize(BATCH_ACCESSES, Access::default());
        let mut full = std::mem::replace(buf, next);
        full.truncate(*filled);
        *filled = 0;
        tx.send(Msg::Accesses(full)).is_ok()
    };
    loop {
        match stream.next_batch(&mut buf[filled..]) {
            Some(Ok(Step::Accesses(n))) => {
                filled += n;
                if filled == buf.len() && !flush(&mut buf, &mut filled) {
                    return;
                }
            }
            Some(Ok(Step::Other(r))) => {
                if !flush(&mut buf, &mut filled) || tx.send(Msg::Other(r)).is_err() {
                    return;
                }
            }
            Some(Err(e)) => {
                if flush(&mut buf, &mut filled) {
                    let _ = tx.send(Msg::Err(e));
                }
                return;
            }
            None => {
                flush(&mut buf, &mut filled);
                return;
            }
        }
    }
}
