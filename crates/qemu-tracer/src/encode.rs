//! The record layout of `docs/trace-format.md`, byte for byte: an encoder used by the per-thread
//! buffers and a decoder used by the runner's statistics and the tests.
//!
//! Why a local copy: the `tracefmt` crate that owns the format is written in parallel; this
//! module keeps the plugin independent of it until it can switch over (see the crate docs).

/// Record tags (low 3 bits of the tag byte).
pub const TAG_LOAD: u8 = 0;
pub const TAG_STORE: u8 = 1;
pub const TAG_MODIFY: u8 = 2;
pub const TAG_INSNS: u8 = 3;
pub const TAG_THREAD_START: u8 = 4;
pub const TAG_THREAD_EXIT: u8 = 5;
pub const TAG_SYNC: u8 = 6;

/// Sync-call phases.
pub const PHASE_ENTRY: u8 = 0;
pub const PHASE_RETURN: u8 = 1;

#[inline(always)]
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(v as u8 | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline(always)]
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline(always)]
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[inline(always)]
pub fn put_svarint(out: &mut Vec<u8>, v: i64) {
    put_varint(out, zigzag(v))
}

/// An access record: `kind` is [`TAG_LOAD`], [`TAG_STORE`] or [`TAG_MODIFY`]; `size_log2` is
/// `log2(size)` (0..=6); bits 3..5 of the tag hold `size_log2 + 1`.
#[inline(always)]
pub fn access(out: &mut Vec<u8>, kind: u8, size_log2: u32, addr_delta: i64, insns: u64) {
    out.push(kind | (((size_log2 + 1) as u8) << 3));
    put_svarint(out, addr_delta);
    put_varint(out, insns);
}

pub fn insns(out: &mut Vec<u8>, n: u64) {
    out.push(TAG_INSNS);
    put_varint(out, n);
}

pub fn thread_start(out: &mut Vec<u8>, parent_tid: u64, seq: u64) {
    out.push(TAG_THREAD_START);
    put_varint(out, parent_tid);
    put_varint(out, seq);
}

pub fn thread_exit(out: &mut Vec<u8>, seq: u64) {
    out.push(TAG_THREAD_EXIT);
    put_varint(out, seq);
}

/// A synchronization system call at entry (`ret` 0) or return.
#[allow(clippy::too_many_arguments)]
pub fn sync(out: &mut Vec<u8>, seq: u64, nr: u64, a0: u64, a1: u64, a2: u64, ret: i64, phase: u8) {
    out.push(TAG_SYNC);
    for v in [seq, nr, a0, a1, a2] {
        put_varint(out, v);
    }
    put_svarint(out, ret);
    out.push(phase);
}

/// One decoded record; access addresses are absolute (the deltas resolved).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Record {
    Access { kind: u8, size: u32, addr: u64, insns: u64 },
    Insns(u64),
    ThreadStart { parent: u64, seq: u64 },
    ThreadExit { seq: u64 },
    Sync { seq: u64, nr: u64, args: [u64; 3], ret: i64, phase: u8 },
}

/// Decodes the records of consecutive chunks of one thread; `prev_addr` carries the address
/// delta base across chunks (deltas are per thread, not per chunk).
pub struct Decoder<'a> {
    data: &'a [u8],
    pos: usize,
    pub prev_addr: u64,
}

impl<'a> Decoder<'a> {
    pub fn new(data: &'a [u8], prev_addr: u64) -> Self {
        Decoder { data, pos: 0, prev_addr }
    }

    fn byte(&mut self) -> Result<u8, String> {
        let b = *self
            .data
            .get(self.pos)
            .ok_or_else(|| format!("record truncated at byte {}", self.pos))?;
        self.pos += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                return Err(format!("varint overflow at byte {}", self.pos));
            }
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Ok(v);
            }
        }
        Err(format!("varint too long at byte {}", self.pos))
    }

    /// The next record, `Ok(None)` at the end of the data.
    pub fn next_record(&mut self) -> Result<Option<Record>, String> {
        if self.pos >= self.data.len() {
            return Ok(None);
        }
        let tag = self.byte()?;
        let r = match tag & 7 {
            TAG_LOAD | TAG_STORE | TAG_MODIFY => {
                let sz = (tag >> 3) & 7;
                if sz == 0 || tag >> 6 != 0 {
                    return Err(format!("bad access tag {tag:#x} at byte {}", self.pos - 1));
                }
                let delta = unzigzag(self.varint()?);
                self.prev_addr = self.prev_addr.wrapping_add(delta as u64);
                Record::Access {
                    kind: tag & 7,
                    size: 1 << (sz - 1),
                    addr: self.prev_addr,
                    insns: self.varint()?,
                }
            }
            TAG_INSNS => Record::Insns(self.varint()?),
            TAG_THREAD_START => Record::ThreadStart { parent: self.varint()?, seq: self.varint()? },
            TAG_THREAD_EXIT => Record::ThreadExit { seq: self.varint()? },
            TAG_SYNC => Record::Sync {
                seq: self.varint()?,
                nr: self.varint()?,
                args: [self.varint()?, self.varint()?, self.varint()?],
                ret: unzigzag(self.varint()?),
                phase: self.byte()?,
            },
            _ => return Err(format!("unknown record tag {tag:#x} at byte {}", self.pos - 1)),
        };
        Ok(Some(r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_follow_leb128() {
        let mut v = Vec::new();
        put_varint(&mut v, 0);
        put_varint(&mut v, 127);
        put_varint(&mut v, 128);
        put_varint(&mut v, 300);
        assert_eq!(v, [0x00, 0x7f, 0x80, 0x01, 0xac, 0x02]);
        assert_eq!([zigzag(0), zigzag(-1), zigzag(1), zigzag(-2)], [0, 1, 2, 3]);
        assert_eq!(zigzag(i64::MIN), u64::MAX);
        for x in [0, 1, -1, 63, -64, i64::MAX, i64::MIN] {
            assert_eq!(unzigzag(zigzag(x)), x);
        }
    }

    #[test]
    fn records_match_the_spec_bytes() {
        let mut v = Vec::new();
        // 8-byte store, delta -8, 3 instructions: tag 1 | (3+1)<<3 = 0x21.
        access(&mut v, TAG_STORE, 3, -8, 3);
        assert_eq!(v, [0x21, 0x0f, 0x03]);
        v.clear();
        // 1-byte load, delta +64, 200 instructions: tag 0 | 1<<3 = 0x08.
        access(&mut v, TAG_LOAD, 0, 64, 200);
        assert_eq!(v, [0x08, 0x80, 0x01, 0xc8, 0x01]);
        v.clear();
        // 4-byte modify: tag 2 | 3<<3 = 0x1a.
        access(&mut v, TAG_MODIFY, 2, 0, 0);
        assert_eq!(v, [0x1a, 0x00, 0x00]);
        v.clear();
        insns(&mut v, 5);
        thread_start(&mut v, 100, 7);
        thread_exit(&mut v, 9);
        sync(&mut v, 10, 202, 0x1000, 128, 1, -11, PHASE_RETURN);
        assert_eq!(
            v,
            [
                0x03, 0x05, // insns 5
                0x04, 0x64, 0x07, // thread start parent 100 seq 7
                0x05, 0x09, // thread exit seq 9
                0x06, 0x0a, 0xca, 0x01, 0x80, 0x20, 0x80, 0x01, 0x01, 0x15, 0x01, // sync
            ]
        );
    }

    #[test]
    fn decoder_round_trips() {
        let mut v = Vec::new();
        access(&mut v, TAG_LOAD, 3, 0x4000_0000, 1);
        access(&mut v, TAG_STORE, 2, -4, 0);
        sync(&mut v, 1, 202, 2, 3, 4, -5, PHASE_ENTRY);
        let mut d = Decoder::new(&v, 0);
        let mut out = Vec::new();
        while let Some(r) = d.next_record().unwrap() {
            out.push(r);
        }
        assert_eq!(
            out,
            [
                Record::Access { kind: TAG_LOAD, size: 8, addr: 0x4000_0000, insns: 1 },
                Record::Access { kind: TAG_STORE, size: 4, addr: 0x3fff_fffc, insns: 0 },
                Record::Sync { seq: 1, nr: 202, args: [2, 3, 4], ret: -5, phase: 0 },
            ]
        );
        assert!(Decoder::new(&[0x21, 0x80], 0).next_record().is_err());
        assert!(Decoder::new(&[0x07], 0).next_record().is_err());
    }
}
