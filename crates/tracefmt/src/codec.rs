//! The record encoding inside a decompressed chunk (see `docs/trace-format.md`, "Records").
//!
//! Every record starts with a tag byte: the record type in bits 0..2 and, for accesses, a size
//! code in bits 3..5 (`log2(size)+1`, or 0 when an explicit size byte follows the tag, for the
//! odd sizes such as x87's 10-byte loads). Bits 6..7 are reserved and must be 0; a reader treats
//! anything else as corruption. Addresses are deltas from the previous access of the same
//! thread *in the same chunk*: the state starts afresh at each chunk, so every chunk decodes on
//! its own and a producer's bug cannot leak from one chunk into the next. Code records
//! (instruction fetch of an executed block) keep their own delta base, the end of the
//! previous code block, so that a block that falls through to the next costs a zero delta.

use crate::{AccessKind, Record, SyncPhase};
use std::fmt;

pub(crate) const TAG_LOAD: u8 = 0;
pub(crate) const TAG_STORE: u8 = 1;
pub(crate) const TAG_MODIFY: u8 = 2;
pub(crate) const TAG_INSTRUCTIONS: u8 = 3;
pub(crate) const TAG_THREAD_START: u8 = 4;
pub(crate) const TAG_THREAD_EXIT: u8 = 5;
pub(crate) const TAG_SYNC: u8 = 6;
pub(crate) const TAG_CODE: u8 = 7;

/// Encoder state of one chunk of one thread. Start every chunk with `EncState::default()`.
#[derive(Clone, Copy, Debug, Default)]
pub struct EncState {
    prev_addr: u64,
    /// End of the previous code block (the delta base of code records).
    prev_code_end: u64,
}

/// Decoder state of one chunk of one thread; mirrors [`EncState`].
#[derive(Clone, Copy, Debug, Default)]
pub struct DecState {
    prev_addr: u64,
    prev_code_end: u64,
}

/// What is wrong with the bytes of a chunk, and where (offset inside the decompressed chunk).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordError {
    pub offset: usize,
    pub what: String,
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at record byte {}: {}", self.offset, self.what)
    }
}

#[inline]
fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

#[inline]
fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// The size code of the tag for an access of `size` bytes: `log2(size)+1` for powers of two up
/// to 64, 0 for any other size (then a size byte follows the tag).
#[inline]
pub fn size_code(size: u8) -> u8 {
    if size.is_power_of_two() && size <= 64 {
        size.trailing_zeros() as u8 + 1
    } else {
        0
    }
}

/// Appends the encoding of `rec` to `buf`. Lock-free by design: a producer keeps one buffer
/// and one `EncState` per thread and hands full buffers to [`crate::Writer::write_chunk`].
#[inline]
pub fn encode(buf: &mut Vec<u8>, rec: &Record, st: &mut EncState) {
    match *rec {
        Record::Access {
            kind,
            addr,
            size,
            icount,
        } => {
            debug_assert!(kind != AccessKind::Code, "a code block is a Record::Code");
            let code = size_code(size);
            buf.push(kind as u8 | (code << 3));
            if code == 0 {
                buf.push(size);
            }
            put_varint(buf, zigzag(addr.wrapping_sub(st.prev_addr) as i64));
            put_varint(buf, icount as u64);
            st.prev_addr = addr;
        }
        Record::Instructions(n) => {
            buf.push(TAG_INSTRUCTIONS);
            put_varint(buf, n);
        }
        Record::Code { addr, bytes, insns } => {
            buf.push(TAG_CODE);
            put_varint(buf, zigzag(addr.wrapping_sub(st.prev_code_end) as i64));
            put_varint(buf, bytes as u64);
            put_varint(buf, insns as u64);
            st.prev_code_end = addr.wrapping_add(bytes as u64);
        }
        Record::ThreadStart { parent, seq } => {
            buf.push(TAG_THREAD_START);
            put_varint(buf, parent as u64);
            put_varint(buf, seq);
        }
        Record::ThreadExit { seq } => {
            buf.push(TAG_THREAD_EXIT);
            put_varint(buf, seq);
        }
        Record::Sync {
            seq,
            nr,
            args,
            ret,
            phase,
            timeout_ns,
        } => {
            buf.push(TAG_SYNC);
            put_varint(buf, seq);
            put_varint(buf, nr);
            for a in args {
                put_varint(buf, a);
            }
            put_varint(buf, zigzag(ret));
            match (phase, timeout_ns) {
                // Phase 2: an entry with a timeout, which follows.
                (SyncPhase::Entry, Some(t)) => {
                    buf.push(2);
                    put_varint(buf, t);
                }
                _ => buf.push(phase as u8),
            }
        }
    }
}

#[inline]
fn get_varint(buf: &[u8], pos: &mut usize, field: &str) -> Result<u64, RecordError> {
    let start = *pos;
    let mut v: u64 = 0;
    let mut shift = 0u32;
    loop {
        let Some(&b) = buf.get(*pos) else {
            return Err(RecordError {
                offset: start,
                what: format!("{field} runs past the end of the chunk"),
            });
        };
        *pos += 1;
        if shift == 63 && b > 1 {
            return Err(RecordError {
                offset: start,
                what: format!("{field} does not fit in 64 bits"),
            });
        }
        v |= ((b & 0x7f) as u64) << shift;
        if b < 0x80 {
            return Ok(v);
        }
        shift += 7;
    }
}

#[inline]
fn get_u8(buf: &[u8], pos: &mut usize, field: &str) -> Result<u8, RecordError> {
    let Some(&b) = buf.get(*pos) else {
        return Err(RecordError {
            offset: *pos,
            what: format!("{field} runs past the end of the chunk"),
        });
    };
    *pos += 1;
    Ok(b)
}

/// Decodes the record at `*pos` of a decompressed chunk and advances `*pos` past it.
#[inline]
pub fn decode(buf: &[u8], pos: &mut usize, st: &mut DecState) -> Result<Record, RecordError> {
    let start = *pos;
    let tag = get_u8(buf, pos, "tag")?;
    let kind = tag & 7;
    let bad = |what: String| RecordError {
        offset: start,
        what,
    };
    if kind <= TAG_MODIFY {
        if tag & 0xc0 != 0 {
            return Err(bad(format!(
                "access tag 0x{tag:02x} has reserved bits 6..7 set"
            )));
        }
        let code = (tag >> 3) & 7;
        let size = if code == 0 {
            get_u8(buf, pos, "explicit access size")?
        } else {
            1u8 << (code - 1)
        };
        let delta = unzigzag(get_varint(buf, pos, "address delta")?);
        let icount = get_varint(buf, pos, "instruction count")?;
        let icount = u32::try_from(icount).map_err(|_| {
            bad(format!(
                "instruction count {icount} of an access exceeds 32 bits"
            ))
        })?;
        let addr = st.prev_addr.wrapping_add(delta as u64);
        st.prev_addr = addr;
        let kind = match kind {
            TAG_LOAD => AccessKind::Load,
            TAG_STORE => AccessKind::Store,
            _ => AccessKind::Modify,
        };
        return Ok(Record::Access {
            kind,
            addr,
            size,
            icount,
        });
    }
    if tag >> 3 != 0 {
        return Err(bad(format!(
            "tag 0x{tag:02x}: only access records may use bits 3..7"
        )));
    }
    match kind {
        TAG_INSTRUCTIONS => Ok(Record::Instructions(get_varint(
            buf,
            pos,
            "instruction count",
        )?)),
        TAG_THREAD_START => {
            let parent = get_varint(buf, pos, "parent tid")?;
            let parent = u32::try_from(parent)
                .map_err(|_| bad(format!("parent tid {parent} exceeds 32 bits")))?;
            let seq = get_varint(buf, pos, "sequence number")?;
            Ok(Record::ThreadStart { parent, seq })
        }
        TAG_CODE => {
            let delta = unzigzag(get_varint(buf, pos, "code address delta")?);
            let bytes = get_varint(buf, pos, "code block length")?;
            let bytes = u32::try_from(bytes)
                .map_err(|_| bad(format!("code block length {bytes} exceeds 32 bits")))?;
            let insns = get_varint(buf, pos, "code block instruction count")?;
            let insns = u32::try_from(insns).map_err(|_| {
                bad(format!(
                    "code block instruction count {insns} exceeds 32 bits"
                ))
            })?;
            let addr = st.prev_code_end.wrapping_add(delta as u64);
            st.prev_code_end = addr.wrapping_add(bytes as u64);
            Ok(Record::Code { addr, bytes, insns })
        }
        TAG_THREAD_EXIT => Ok(Record::ThreadExit {
            seq: get_varint(buf, pos, "sequence number")?,
        }),
        TAG_SYNC => {
            let seq = get_varint(buf, pos, "sequence number")?;
            let nr = get_varint(buf, pos, "syscall number")?;
            let mut args = [0u64; 3];
            for a in &mut args {
                *a = get_varint(buf, pos, "syscall argument")?;
            }
            let ret = unzigzag(get_varint(buf, pos, "return value")?);
            let (phase, timeout_ns) = match get_u8(buf, pos, "phase")? {
                0 => (SyncPhase::Entry, None),
                1 => (SyncPhase::Return, None),
                2 => (SyncPhase::Entry, Some(get_varint(buf, pos, "timeout")?)),
                p => {
                    return Err(bad(format!(
                        "sync phase {p} is neither 0 (entry), 1 (return) nor 2 (entry with a \
                         timeout)"
                    )))
                }
            };
            Ok(Record::Sync {
                seq,
                nr,
                args,
                ret,
                phase,
                timeout_ns,
            })
        }
        _ => Err(bad(format!("unknown record tag 0x{tag:02x}"))),
    }
}

/// A data reference as the batch decoder ([`decode_accesses`]) returns it: the fields of
/// [`Record::Access`] in 16 bytes, so that a batch of them stays in the host's L1 cache.
///
/// A code record ([`Record::Code`]) of at most 65535 bytes comes in the same batch as
/// `kind` [`AccessKind::Code`], `addr` the block's start, `icount` its instruction count and
/// `bytes` its length (`size` 0); for data references `bytes` is 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    pub addr: u64,
    /// Instructions retired since the previous record, this access's instruction included
    /// (a code block: its instructions, which the records around it retire).
    pub icount: u32,
    pub kind: AccessKind,
    pub size: u8,
    /// A code block's length in bytes; 0 for a data reference.
    pub bytes: u16,
}

impl Default for Access {
    fn default() -> Access {
        Access {
            addr: 0,
            icount: 0,
            kind: AccessKind::Load,
            size: 0,
            bytes: 0,
        }
    }
}

impl From<Access> for Record {
    fn from(a: Access) -> Record {
        if a.kind == AccessKind::Code {
            return Record::Code {
                addr: a.addr,
                bytes: a.bytes as u32,
                insns: a.icount,
            };
        }
        Record::Access {
            kind: a.kind,
            addr: a.addr,
            size: a.size,
            icount: a.icount,
        }
    }
}

/// Bytes the fast path of [`decode_accesses`] reads from a record's tag on: the tag, an
/// 8-byte word holding the address delta, and after a delta of 8 bytes the one-byte
/// instruction count (an access) or a length of up to two bytes and a one-byte instruction
/// count (a code block).
const FAST_WINDOW: usize = 1 + 8 + 2 + 1;

/// For each tag byte: 0 when the fast path does not decode it (not an access, reserved bits
/// set, or an explicit size byte follows), else `0x100 | kind << 8+1 | size`.
static FAST_TAG: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut tag = 0;
    while tag < 256 {
        let kind = tag & 7;
        let code = (tag >> 3) & 7;
        if kind <= TAG_MODIFY as usize && tag & 0xc0 == 0 && code != 0 {
            t[tag] = 0x100 | ((kind as u16) << 9) | (1u16 << (code - 1));
        }
        tag += 1;
    }
    t
};

/// The value of the varint at the start of `w` (8 bytes, little-endian) whose stop bits
/// (`!w & 0x80..80`, not 0) are `stops`. No branch on the length: the bytes up to the first
/// stop bit are kept, and their 7-bit groups packed with three mask-and-shift steps.
#[inline(always)]
fn varint8(w: u64, stops: u64) -> u64 {
    // Bytes 0..len, without their continuation bits.
    let x = w & (stops ^ (stops - 1)) & 0x7f7f_7f7f_7f7f_7f7f;
    let x = (x & 0x007f_007f_007f_007f) | ((x & 0x7f00_7f00_7f00_7f00) >> 1);
    let x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x3fff_0000_3fff_0000) >> 2);
    (x & 0x0000_0000_0fff_ffff) | ((x & 0x0fff_ffff_0000_0000) >> 4)
}

/// The 8 bytes after the tag, little-endian.
#[inline(always)]
fn word(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[1..9]);
    u64::from_le_bytes(w)
}

/// A record the fast path takes, read from the window at its start: an access whose delta
/// fits 8 bytes and whose instruction count fits one, or a code block whose length fits two
/// bytes and whose count fits one (anything else goes by [`decode`]).
struct FastRecord {
    /// The window's first 8 bytes after the tag, and their stop bits (the delta's varint).
    w: u64,
    stops: u64,
    /// [`FAST_TAG`]'s entry for the tag (0: a code block).
    info: u16,
    /// The code block's length in bytes (0 for an access).
    bytes: u16,
    /// The instruction count.
    count: u8,
    /// The record's length in bytes.
    len: usize,
}

/// The fast path's reading of the record at the start of `b`, shared by [`decode_accesses`]
/// and [`skip_accesses`] so that the two take the same records.
#[inline(always)]
fn fast_record(b: &[u8; FAST_WINDOW]) -> Option<FastRecord> {
    let info = FAST_TAG[b[0] as usize];
    let w = word(b);
    let stops = !w & 0x8080_8080_8080_8080;
    if stops == 0 {
        return None;
    }
    let dlen = (stops.trailing_zeros() as usize + 1) >> 3;
    if info == 0 {
        if b[0] != TAG_CODE {
            return None;
        }
        // A code block: delta, length (one or two bytes), instruction count.
        let l0 = b[1 + dlen];
        let (bytes, llen) = if l0 < 0x80 {
            (l0 as u16, 1)
        } else if b[2 + dlen] < 0x80 {
            ((l0 & 0x7f) as u16 | (b[2 + dlen] as u16) << 7, 2)
        } else {
            return None;
        };
        let count = b[1 + dlen + llen];
        if count >= 0x80 {
            return None;
        }
        return Some(FastRecord {
            w,
            stops,
            info,
            bytes,
            count,
            len: 2 + dlen + llen,
        });
    }
    // The instruction count: one byte in all but rare records (over 127 instructions since
    // the previous record), which take the careful path.
    let count = b[1 + dlen];
    if count >= 0x80 {
        return None;
    }
    Some(FastRecord {
        w,
        stops,
        info,
        bytes: 0,
        count,
        len: 2 + dlen,
    })
}

/// Decodes the run of access records at `*pos` into `out`, the batch form of [`decode`] for
/// readers that replay millions of references: it stops before the first record of another
/// type, at the end of `buf`, when `out` is full, or before a malformed record, and returns how
/// many it decoded. Calling [`decode`] at the returned position then yields that next record
/// or the error that describes it, so a caller that alternates the two sees exactly the
/// records, and the error, that repeated [`decode`] calls give.
///
/// Code records ([`Record::Code`]) of at most 65535 bytes are part of the run, as
/// [`AccessKind::Code`] entries (see [`Access`]), so that a replay sees instruction fetches
/// and data references in program order without leaving the batch.
///
/// Records with a size code, an address delta of at most 8 bytes and an instruction count of
/// one byte (all that real traces hold but for rare far jumps and long runs without a
/// reference), and code records with such a delta, a length below 16384 and fewer than 128
/// instructions, are decoded inline without branching on the delta's length; the others,
/// and the last bytes of the buffer, go through [`decode`] itself.
pub fn decode_accesses(
    buf: &[u8],
    pos: &mut usize,
    st: &mut DecState,
    out: &mut [Access],
) -> usize {
    const KINDS: [AccessKind; 4] = [
        AccessKind::Load,
        AccessKind::Store,
        AccessKind::Modify,
        AccessKind::Modify,
    ];
    let mut n = 0;
    let mut p = *pos;
    let mut prev = st.prev_addr;
    let mut prev_code = st.prev_code_end;
    loop {
        // Fast path.
        while n < out.len() {
            let Some(b) = buf.get(p..p + FAST_WINDOW) else {
                break;
            };
            let b: &[u8; FAST_WINDOW] = b.try_into().expect("window length");
            let Some(r) = fast_record(b) else {
                break;
            };
            if r.info != 0 {
                prev = prev.wrapping_add(unzigzag(varint8(r.w, r.stops)) as u64);
                out[n] = Access {
                    addr: prev,
                    icount: r.count as u32,
                    kind: KINDS[(r.info >> 9) as usize & 3],
                    size: r.info as u8,
                    bytes: 0,
                };
            } else {
                let addr = prev_code.wrapping_add(unzigzag(varint8(r.w, r.stops)) as u64);
                out[n] = Access {
                    addr,
                    icount: r.count as u32,
                    kind: AccessKind::Code,
                    size: 0,
                    bytes: r.bytes,
                };
                prev_code = addr.wrapping_add(r.bytes as u64);
            }
            n += 1;
            p += r.len;
        }
        if n == out.len() {
            break;
        }
        // One record the fast path does not take, or the end of the run.
        let s = DecState {
            prev_addr: prev,
            prev_code_end: prev_code,
        };
        match careful_access(buf, p, s) {
            Some((a, next, s)) => {
                out[n] = a;
                n += 1;
                p = next;
                prev = s.prev_addr;
                prev_code = s.prev_code_end;
            }
            None => break,
        }
    }
    *pos = p;
    st.prev_addr = prev;
    st.prev_code_end = prev_code;
    n
}

/// Skips the run of access and code records at `*pos` without decoding them, for readers
/// that want only the other records (`ThreadStream::sync_records`, the pairing pass before
/// a replay): it stops where [`decode`] would give a record of another type or an error,
/// or at the end of `buf`, and returns how many it skipped. Calling [`decode`] at the
/// returned position then yields the record or the error that [`decode_accesses`] and
/// [`decode`] in turn would give there. (Unlike [`decode_accesses`] it also skips a code
/// block longer than an [`Access`] holds, which such readers drop anyway.)
///
/// *Why*: a record's length and validity do not depend on the decoder's state (only the
/// addresses do), so the fast path reads the tag, the delta's stop bits and the one-byte
/// counts, and neither packs the delta's bits nor writes an [`Access`]. Decoding every
/// access of the chunks that hold a synchronization record (in a program of 16 threads,
/// nearly all of them) was 4,082 M of the 29,721 M instructions of `pmusim run
/// trace:omp16-100.pmt -p 16`, on the main thread before the simulation (issue 19,
/// BENCHMARKS.md).
pub fn skip_accesses(buf: &[u8], pos: &mut usize) -> usize {
    let mut n = 0;
    let mut p = *pos;
    // Only the records' lengths and errors matter, which no state changes.
    let mut scratch = DecState::default();
    loop {
        // Fast path: the records `decode_accesses` takes without `decode`.
        while let Some(b) = buf.get(p..p + FAST_WINDOW) {
            let b: &[u8; FAST_WINDOW] = b.try_into().expect("window length");
            let Some(r) = fast_record(b) else {
                break;
            };
            p += r.len;
            n += 1;
        }
        // One access or code record the fast path does not take, or the end of the run.
        match buf.get(p) {
            Some(&tag) if tag & 7 <= TAG_MODIFY || tag == TAG_CODE => {}
            _ => break,
        }
        let mut q = p;
        if decode(buf, &mut q, &mut scratch).is_err() {
            break;
        }
        p = q;
        n += 1;
    }
    *pos = p;
    n
}

/// The access (or code) record at `p` decoded by [`decode`], the position after it and the
/// decoder state after it, or `None` at the end of `buf`, before a record of another type
/// (or a code block longer than an [`Access`] holds), or before a malformed record. Takes
/// and returns values so that the fast path keeps its position and addresses in registers.
#[cold]
#[inline(never)]
fn careful_access(buf: &[u8], p: usize, mut s: DecState) -> Option<(Access, usize, DecState)> {
    if buf
        .get(p)
        .is_none_or(|&tag| tag & 7 > TAG_MODIFY && tag != TAG_CODE)
    {
        return None;
    }
    let mut q = p;
    let a = match decode(buf, &mut q, &mut s) {
        Ok(Record::Access {
            kind,
            addr,
            size,
            icount,
        }) => Access {
            addr,
            icount,
            kind,
            size,
            bytes: 0,
        },
        Ok(Record::Code { addr, bytes, insns }) => Access {
            addr,
            icount: insns,
            kind: AccessKind::Code,
            size: 0,
            bytes: u16::try_from(bytes).ok()?,
        },
        _ => return None,
    };
    Some((a, q, s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_codes() {
        assert_eq!(size_code(1), 1);
        assert_eq!(size_code(2), 2);
        assert_eq!(size_code(4), 3);
        assert_eq!(size_code(8), 4);
        assert_eq!(size_code(16), 5);
        assert_eq!(size_code(32), 6);
        assert_eq!(size_code(64), 7);
        for odd in [0u8, 3, 5, 6, 10, 12, 128, 255] {
            assert_eq!(size_code(odd), 0, "size {odd}");
        }
    }

    fn roundtrip_one(r: Record) -> Vec<u8> {
        let mut buf = Vec::new();
        encode(&mut buf, &r, &mut EncState::default());
        let mut pos = 0;
        let back = decode(&buf, &mut pos, &mut DecState::default()).unwrap();
        assert_eq!(back, r);
        assert_eq!(pos, buf.len());
        buf
    }

    #[test]
    fn every_size_roundtrips_and_odd_sizes_cost_one_byte() {
        for size in 0..=255u8 {
            let r = Record::Access {
                kind: AccessKind::Store,
                addr: 0x1000,
                size,
                icount: 1,
            };
            let buf = roundtrip_one(r);
            let expect = if size_code(size) == 0 {
                1 + 1 + 2 + 1
            } else {
                1 + 2 + 1
            };
            assert_eq!(buf.len(), expect, "size {size}");
        }
    }

    #[test]
    fn extremes_roundtrip() {
        roundtrip_one(Record::Instructions(u64::MAX));
        roundtrip_one(Record::Access {
            kind: AccessKind::Modify,
            addr: u64::MAX,
            size: 8,
            icount: u32::MAX,
        });
        roundtrip_one(Record::Sync {
            seq: u64::MAX,
            nr: 202,
            args: [u64::MAX, 0, 1],
            ret: i64::MIN,
            phase: SyncPhase::Return,
            timeout_ns: None,
        });
        roundtrip_one(Record::Sync {
            seq: 3,
            nr: 202,
            args: [0x1000, 0, 1],
            ret: 0,
            phase: SyncPhase::Entry,
            timeout_ns: Some(u64::MAX),
        });
        roundtrip_one(Record::ThreadStart {
            parent: u32::MAX,
            seq: 0,
        });
        roundtrip_one(Record::Code {
            addr: u64::MAX,
            bytes: u32::MAX,
            insns: u32::MAX,
        });
    }

    /// The bytes of `docs/trace-format.md`'s code record: the start is a delta from the end
    /// of the previous block, so a block that falls through costs one byte of delta.
    #[test]
    fn code_records_follow_the_spec_bytes() {
        let (mut buf, mut st) = (Vec::new(), EncState::default());
        let blocks = [
            (0x40_1000u64, 16u32, 5u32),
            (0x40_1010, 300, 90),
            (0x40_1000, 16, 5),
        ];
        for (addr, bytes, insns) in blocks {
            encode(&mut buf, &Record::Code { addr, bytes, insns }, &mut st);
        }
        // 0x401000 zig-zag = 0x802000: [0x80, 0xc0, 0x80, 0x04]; then a fall-through (delta
        // 0, length 300 = [0xac, 0x02]); then back to the first block: -(16 + 300) = -316,
        // zig-zag 631 = [0xf7, 0x04].
        assert_eq!(
            buf,
            [7, 0x80, 0xc0, 0x80, 0x04, 16, 5, 7, 0, 0xac, 0x02, 90, 7, 0xf7, 0x04, 16, 5]
        );
        // The data address delta is separate: an access after the blocks starts from 0.
        encode(
            &mut buf,
            &Record::Access {
                kind: AccessKind::Load,
                addr: 8,
                size: 8,
                icount: 1,
            },
            &mut st,
        );
        assert_eq!(buf[buf.len() - 3..], [0x20, 16, 1]);
    }

    /// Decodes all of `buf` with [`decode`] alone: the records up to the first error, and
    /// the error with its offset.
    fn reference_decode(buf: &[u8]) -> (Vec<Record>, Option<RecordError>) {
        let (mut pos, mut st, mut out) = (0, DecState::default(), Vec::new());
        while pos < buf.len() {
            match decode(buf, &mut pos, &mut st) {
                Ok(r) => out.push(r),
                Err(e) => return (out, Some(e)),
            }
        }
        (out, None)
    }

    /// Decodes all of `buf` as a batch reader does: runs of accesses with
    /// [`decode_accesses`] into a buffer of `batch` entries, other records with [`decode`].
    fn batch_decode(buf: &[u8], batch: usize) -> (Vec<Record>, Option<RecordError>) {
        let (mut pos, mut st, mut out) = (0, DecState::default(), Vec::new());
        let mut accesses = vec![Access::default(); batch];
        while pos < buf.len() {
            let n = decode_accesses(buf, &mut pos, &mut st, &mut accesses);
            out.extend(accesses[..n].iter().map(|&a| Record::from(a)));
            if n == 0 {
                match decode(buf, &mut pos, &mut st) {
                    Ok(r) => out.push(r),
                    Err(e) => return (out, Some(e)),
                }
            }
        }
        (out, None)
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        /// A value of about `bits` random bits, so that every varint length occurs.
        fn bits(&mut self) -> u64 {
            let b = self.next() % 65;
            if b == 0 {
                0
            } else {
                self.next() >> (64 - b)
            }
        }
    }

    fn random_chunk(rng: &mut Rng, n: usize) -> (Vec<u8>, Vec<Record>) {
        let (mut buf, mut st, mut recs) = (Vec::new(), EncState::default(), Vec::new());
        let mut addr = 0x4000_0000u64;
        for _ in 0..n {
            let r = match rng.next() % 16 {
                0 => Record::Instructions(rng.bits()),
                5 | 6 => Record::Code {
                    addr: match rng.next() % 4 {
                        0 => rng.next(),
                        _ => 0x40_0000 + rng.next() % 0x10_0000,
                    },
                    bytes: match rng.next() % 8 {
                        0 => rng.bits() as u32,
                        1 => 16384 + (rng.next() % 100_000) as u32,
                        _ => 1 + (rng.next() % 200) as u32,
                    },
                    insns: match rng.next() % 8 {
                        0 => rng.bits() as u32,
                        _ => (rng.next() % 140) as u32,
                    },
                },
                1 => Record::Sync {
                    seq: rng.bits().max(1),
                    nr: 202,
                    args: [rng.bits(), rng.next() % 16, rng.bits()],
                    ret: rng.bits() as i64,
                    phase: SyncPhase::Entry,
                    timeout_ns: rng.next().is_multiple_of(2).then(|| rng.bits()),
                },
                2 => Record::ThreadExit {
                    seq: rng.bits().max(1),
                },
                k => {
                    addr = match k {
                        3 => rng.next(),
                        4 => addr.wrapping_sub(rng.bits()),
                        _ => addr.wrapping_add((rng.next() % 4096).wrapping_sub(2048)),
                    };
                    Record::Access {
                        kind: [AccessKind::Load, AccessKind::Store, AccessKind::Modify]
                            [(rng.next() % 3) as usize],
                        addr,
                        size: match rng.next() % 8 {
                            0 => rng.next() as u8,
                            k => 1 << (k - 1),
                        },
                        icount: match rng.next() % 4 {
                            0 => rng.bits() as u32,
                            _ => (rng.next() % 5) as u32,
                        },
                    }
                }
            };
            encode(&mut buf, &r, &mut st);
            recs.push(r);
        }
        (buf, recs)
    }

    #[test]
    fn batches_decode_as_the_record_decoder_does() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for round in 0..200 {
            let (buf, recs) = random_chunk(&mut rng, 1 + round * 7);
            let (want, err) = reference_decode(&buf);
            assert_eq!(err, None);
            assert_eq!(want, recs);
            for batch in [1, 3, 64, 1024] {
                assert_eq!(
                    batch_decode(&buf, batch),
                    (want.clone(), None),
                    "batch {batch}"
                );
            }
        }
    }

    /// One seeded corruption of a chunk: a few byte flips, a truncation, or junk appended.
    fn corrupt(rng: &mut Rng, buf: &mut Vec<u8>) {
        match rng.next() % 3 {
            0 => {
                for _ in 0..1 + rng.next() % 4 {
                    let at = (rng.next() % buf.len() as u64) as usize;
                    buf[at] = rng.next() as u8;
                }
            }
            1 => {
                let keep = (rng.next() % buf.len() as u64) as usize;
                buf.truncate(keep);
            }
            _ => {
                for _ in 0..rng.next() % 40 {
                    buf.push(rng.next() as u8 | 0x80);
                }
            }
        }
    }

    #[test]
    fn batches_of_corrupt_bytes_fail_as_the_record_decoder_does() {
        // Seeded byte flips, truncations and junk: the batch reader must give the same
        // records and then the same error at the same offset, and never panic.
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..3000 {
            let (mut buf, _) = random_chunk(&mut rng, 1 + round % 50);
            corrupt(&mut rng, &mut buf);
            let want = reference_decode(&buf);
            for batch in [1, 5, 1024] {
                assert_eq!(
                    batch_decode(&buf, batch),
                    want,
                    "round {round} batch {batch}"
                );
            }
        }
    }

    /// The records other than accesses and code blocks, and the first error, as a reader
    /// that skips the runs of accesses ([`skip_accesses`]) sees them.
    fn skip_decode(buf: &[u8]) -> (Vec<Record>, Option<RecordError>) {
        let (mut pos, mut st, mut out) = (0, DecState::default(), Vec::new());
        while pos < buf.len() {
            if skip_accesses(buf, &mut pos) > 0 {
                continue;
            }
            match decode(buf, &mut pos, &mut st) {
                Ok(r) => out.push(r),
                Err(e) => return (out, Some(e)),
            }
        }
        (out, None)
    }

    fn others(r: &(Vec<Record>, Option<RecordError>)) -> (Vec<Record>, Option<RecordError>) {
        let keep = |r: &&Record| !matches!(r, Record::Access { .. } | Record::Code { .. });
        (r.0.iter().filter(keep).cloned().collect(), r.1.clone())
    }

    #[test]
    fn skipping_accesses_keeps_the_other_records_and_the_errors() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        for round in 0..200 {
            let (buf, _) = random_chunk(&mut rng, 1 + round * 7);
            assert_eq!(skip_decode(&buf), others(&reference_decode(&buf)));
        }
        // Corrupt chunks as in `batches_of_corrupt_bytes_fail_as_the_record_decoder_does`.
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut failed = 0;
        for round in 0..3000 {
            let (mut buf, _) = random_chunk(&mut rng, 1 + round % 50);
            corrupt(&mut rng, &mut buf);
            let want = others(&reference_decode(&buf));
            failed += usize::from(want.1.is_some());
            assert_eq!(skip_decode(&buf), want, "round {round}");
        }
        assert!(failed > 1000, "{failed} corrupt chunks failed");
    }

    #[test]
    fn corrupt_bytes_are_errors() {
        let mut pos = 0;
        let e = decode(&[0x0f, 0, 1, 1], &mut pos, &mut DecState::default()).unwrap_err();
        assert!(e.what.contains("tag 0x0f: only access records"), "{e}");
        let mut pos = 0;
        let e = decode(&[7, 0, 1], &mut pos, &mut DecState::default()).unwrap_err();
        assert!(
            e.what.contains("code block instruction count runs past"),
            "{e}"
        );
        let mut pos = 0;
        let e = decode(&[0x40 | 0x18, 0, 0], &mut pos, &mut DecState::default()).unwrap_err();
        assert!(e.what.contains("reserved"), "{e}");
        let mut pos = 0;
        let e = decode(&[0x18, 0x80], &mut pos, &mut DecState::default()).unwrap_err();
        assert!(e.what.contains("past the end"), "{e}");
        let mut pos = 0;
        let e = decode(
            &[TAG_SYNC, 1, 2, 3, 4, 5, 6, 7],
            &mut pos,
            &mut DecState::default(),
        )
        .unwrap_err();
        assert!(e.what.contains("phase"), "{e}");
        let mut pos = 0;
        let mut long = vec![TAG_INSTRUCTIONS];
        long.extend([0xff; 10]);
        long.push(1);
        let e = decode(&long, &mut pos, &mut DecState::default()).unwrap_err();
        assert!(e.what.contains("64 bits"), "{e}");
    }
}
