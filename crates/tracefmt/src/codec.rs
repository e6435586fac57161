//! The record encoding inside a decompressed chunk (see `docs/trace-format.md`, "Records").
//!
//! Every record starts with a tag byte: the record type in bits 0..2 and, for accesses, a size
//! code in bits 3..5 (`log2(size)+1`, or 0 when an explicit size byte follows the tag, for the
//! odd sizes such as x87's 10-byte loads). Bits 6..7 are reserved and must be 0; a reader treats
//! anything else as corruption. Addresses are deltas from the previous access of the same
//! thread *in the same chunk*: the state starts afresh at each chunk, so every chunk decodes on
//! its own and a producer's bug cannot leak from one chunk into the next.

use crate::{AccessKind, Record, SyncPhase};
use std::fmt;

pub(crate) const TAG_LOAD: u8 = 0;
pub(crate) const TAG_STORE: u8 = 1;
pub(crate) const TAG_MODIFY: u8 = 2;
pub(crate) const TAG_INSTRUCTIONS: u8 = 3;
pub(crate) const TAG_THREAD_START: u8 = 4;
pub(crate) const TAG_THREAD_EXIT: u8 = 5;
pub(crate) const TAG_SYNC: u8 = 6;

/// Encoder state of one chunk of one thread. Start every chunk with `EncState::default()`.
#[derive(Clone, Copy, Debug, Default)]
pub struct EncState {
    prev_addr: u64,
}

/// Decoder state of one chunk of one thread; mirrors [`EncState`].
#[derive(Clone, Copy, Debug, Default)]
pub struct DecState {
    prev_addr: u64,
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
        } => {
            buf.push(TAG_SYNC);
            put_varint(buf, seq);
            put_varint(buf, nr);
            for a in args {
                put_varint(buf, a);
            }
            put_varint(buf, zigzag(ret));
            buf.push(phase as u8);
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
            let phase = match get_u8(buf, pos, "phase")? {
                0 => SyncPhase::Entry,
                1 => SyncPhase::Return,
                p => {
                    return Err(bad(format!(
                        "sync phase {p} is neither 0 (entry) nor 1 (return)"
                    )))
                }
            };
            Ok(Record::Sync {
                seq,
                nr,
                args,
                ret,
                phase,
            })
        }
        _ => Err(bad(format!("unknown record tag 0x{tag:02x}"))),
    }
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
        });
        roundtrip_one(Record::ThreadStart {
            parent: u32::MAX,
            seq: 0,
        });
    }

    #[test]
    fn corrupt_bytes_are_errors() {
        let mut pos = 0;
        let e = decode(&[7], &mut pos, &mut DecState::default()).unwrap_err();
        assert!(e.what.contains("unknown record tag 0x07"), "{e}");
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
