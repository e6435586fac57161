//! The guest threads' raw record words (their format: `tracefmt::words`): how the callbacks
//! append them, and their encoding into `.pmt` record bytes ([`ThreadEnc`]) on the writer
//! thread (or on `pmusim`'s saving thread in a fused run, `live::Saver`).

pub use tracefmt::words::ADDR_MASK;
use tracefmt::words::{access_word, Item};
pub use tracefmt::words::{
    code, completes_modify, inline_code, CodeBlock, ADDR_BITS, CODE_PTR_LIMIT, CODE_SHIFT, ESC,
    ESC_ACCESS, ESC_BYTES, ESC_CODE, ESC_CODE_LONG, ICOUNT_MAX, MODIFY,
};
use tracefmt::{encode, AccessKind, EncState, Record};

/// Bit 62 of an escape word: an inline code word.
const INLINE_CODE_BIT: u64 = tracefmt::words::INLINE_CODE;

/// Where words are appended: a thread's buffer (`buffer::Words`), or a `Vec` in tests.
pub trait Sink {
    fn push(&mut self, w: u64);
    fn extend_from_slice(&mut self, ws: &[u64]) {
        for &w in ws {
            self.push(w);
        }
    }
}

impl Sink for Vec<u64> {
    #[inline(always)]
    fn push(&mut self, w: u64) {
        Vec::push(self, w)
    }
}

/// Appends the word(s) of an execution of `b` when it has no inline code word: its address
/// less `code_base` (0, or the start of the live channel's code arena, see `live`).
#[inline(always)]
pub fn push_code(words: &mut impl Sink, b: &'static CodeBlock, code_base: u64) {
    let p = (std::ptr::from_ref(b) as u64).wrapping_sub(code_base);
    if p < CODE_PTR_LIMIT {
        words.push(ESC | ESC_CODE | (p << 8));
    } else {
        push_code_long(words, b);
    }
}

#[cold]
#[inline(never)]
fn push_code_long(words: &mut impl Sink, b: &CodeBlock) {
    words.extend_from_slice(&[
        ESC | ESC_CODE_LONG,
        b.addr,
        u64::from(b.bytes) | (u64::from(b.insns) << 32),
    ]);
}

/// The one-word form of an access, when it fits.
#[inline(always)]
pub fn access(code: u64, addr: u64, icount: u64) -> Option<u64> {
    access_word(code, addr, icount)
}

#[cold]
#[inline(never)]
pub fn push_long_access(words: &mut impl Sink, code: u64, addr: u64, icount: u64) {
    words.extend_from_slice(&[ESC | ESC_ACCESS | (code << 8), addr, icount]);
}

/// The long form's code with the modify flag (bit 4 of the escape's code field).
pub const LONG_MODIFY: u64 = 0x10;

/// Appends a record that is not an access.
pub fn push_record(words: &mut impl Sink, rec: &Record) {
    let mut bytes = Vec::with_capacity(64);
    encode(&mut bytes, rec, &mut EncState::default());
    let seq = rec.seq();
    words.push(ESC | ESC_BYTES | ((bytes.len() as u64) << 8) | (u64::from(seq.is_some()) << 32));
    if let Some(s) = seq {
        words.push(s);
    }
    for c in bytes.chunks(8) {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        words.push(u64::from_le_bytes(w));
    }
}

/// Whether the CPU has BMI2 and LZCNT, for [`ThreadEnc::fast`] (checked once).
static HAS_BMI2: std::sync::LazyLock<bool> = std::sync::LazyLock::new(|| {
    std::arch::is_x86_feature_detected!("bmi2") && std::arch::is_x86_feature_detected!("lzcnt")
});

/// Room past the end of `ThreadEnc::raw` that [`ThreadEnc::access`] and [`ThreadEnc::code`]
/// may store into: a code record is at most 1 + 10 + 5 + 5 bytes, and [`varint_at`] stores 8
/// bytes even for a shorter varint.
const SLACK: usize = 48;

/// Stores the LEB128 bytes of `v` at `p` and returns their number. A value below 2^56 (at
/// most 8 bytes: every instruction count and length, and nearly every address delta) is
/// built in a `u64` and stored with one unaligned 8-byte write, so up to 8 bytes at `p` are
/// written; a larger one byte by byte (up to 10). Issue 19: building the whole record in a
/// `u128` cost a variable 128-bit shift per varint byte, the writer thread's largest cost
/// (callgrind: 1.9 G of its 8.2 G Ir on python3 `sum(range(300_000))`). Values of one and
/// two bytes (most address deltas) are taken first without the loop's counters: 5 Ir less per
/// record (`examples/enc_bench.rs` under callgrind, 5 M records of that trace: 403.2 M ->
/// 378.1 M Ir).
///
/// # Safety
/// `p` is valid for writes of 10 bytes.
#[inline(always)]
unsafe fn varint_at<const BMI2: bool>(p: *mut u8, mut v: u64) -> usize {
    // One and two bytes first (most address deltas), without the loop's counters.
    if v < 0x80 {
        // SAFETY: guaranteed by the caller.
        unsafe { std::ptr::write_unaligned(p.cast::<u64>(), v.to_le()) };
        return 1;
    }
    if v < 0x4000 {
        let w = (v & 0x7f) | 0x80 | ((v >> 7) << 8);
        // SAFETY: guaranteed by the caller.
        unsafe { std::ptr::write_unaligned(p.cast::<u64>(), w.to_le()) };
        return 2;
    }
    if BMI2 && v < 1 << 56 {
        // SAFETY: guaranteed by the caller.
        return unsafe { varint_pdep(p, v) };
    }
    if v < 1 << 56 {
        let mut w = 0u64;
        let mut k = 0u32;
        while v >= 0x80 {
            w |= u64::from(v as u8 | 0x80) << k;
            v >>= 7;
            k += 8;
        }
        // `k <= 56` and `v < 0x80`: the last byte fits.
        w |= v << k;
        // SAFETY: guaranteed by the caller.
        unsafe { std::ptr::write_unaligned(p.cast::<u64>(), w.to_le()) };
        (k / 8 + 1) as usize
    } else {
        let mut i = 0;
        while v >= 0x80 {
            // SAFETY: at most 10 bytes, guaranteed by the caller.
            unsafe { *p.add(i) = v as u8 | 0x80 };
            v >>= 7;
            i += 1;
        }
        // SAFETY: as above.
        unsafe { *p.add(i) = v as u8 };
        i + 1
    }
}

/// [`varint_at`] of a value from 2^14 to 2^56 (3 to 8 bytes) without a loop: the 7-bit
/// groups spread to bytes by one `pdep`, the length from the leading zeros, the continuation
/// bits from a shifted constant.
///
/// # Safety
/// `p` is valid for writes of 8 bytes; the CPU has BMI2 (the caller is compiled for it).
#[inline(always)]
unsafe fn varint_pdep(p: *mut u8, v: u64) -> usize {
    // Bytes of a value of `b` bits: (b + 6) / 7, for b from 15 to 56.
    let bits = 64 - v.leading_zeros() as usize;
    let n = ((bits + 6) * 37) >> 8;
    // SAFETY: BMI2 is guaranteed by the caller.
    let spread = unsafe { std::arch::x86_64::_pdep_u64(v, 0x7f7f_7f7f_7f7f_7f7f) };
    let cont = 0x0080_8080_8080_8080u64 >> (64 - 8 * n);
    // SAFETY: guaranteed by the caller.
    unsafe { std::ptr::write_unaligned(p.cast::<u64>(), (spread | cont).to_le()) };
    n
}

/// Stores the LEB128 bytes of `v`, which is below 2^14, at `p` (2 bytes written) and
/// returns their number (1 or 2), without a loop: an access word's instruction count or an
/// inline code word's length.
///
/// # Safety
/// `p` is valid for writes of 2 bytes.
#[inline(always)]
unsafe fn short_varint_at(p: *mut u8, v: u64) -> usize {
    let long = usize::from(v >= 0x80);
    let w = if long == 1 {
        (v & 0x7f) | 0x80 | ((v >> 7) << 8)
    } else {
        v
    };
    // SAFETY: guaranteed by the caller.
    unsafe { std::ptr::write_unaligned(p.cast::<u16>(), (w as u16).to_le()) };
    1 + long
}

/// The tag byte of an access word's record (`docs/trace-format.md`: kind, and the size code
/// `log2(size) + 1` in bits 3..6), indexed by the word's bits 58..63: modify (bit 58), log2 of
/// the size (59..62), store (62).
const ACCESS_TAG: [u8; 32] = {
    let mut t = [0u8; 32];
    let mut k = 0;
    while k < 32 {
        let modify = k & 1 == 1;
        let store = k >> 4 == 1;
        let kind = if modify {
            AccessKind::Modify as u8
        } else if store {
            AccessKind::Store as u8
        } else {
            AccessKind::Load as u8
        };
        t[k] = kind | ((((k >> 1) & 7) as u8 + 1) << 3);
        k += 1;
    }
    t
};

/// A finished chunk of one thread, encoded as `docs/trace-format.md` says.
pub struct Encoded<'a> {
    pub tid: u32,
    pub first_seq: u64,
    pub records: u64,
    pub accesses: u64,
    pub raw: &'a [u8],
}

/// The writer thread's encoder for one guest thread: turns the thread's words into record
/// bytes, one chunk of about [`tracefmt::CHUNK_RAW_BYTES`] at a time.
pub struct ThreadEnc {
    pub tid: u32,
    raw: Vec<u8>,
    st: EncState,
    prev_addr: u64,
    /// End of the previous code block in this chunk (the delta base of code records).
    prev_code_end: u64,
    records: u64,
    accesses: u64,
    first_seq: u64,
}

impl ThreadEnc {
    pub fn new(tid: u32) -> ThreadEnc {
        ThreadEnc {
            tid,
            raw: Vec::with_capacity(tracefmt::CHUNK_RAW_BYTES + 256),
            st: EncState::default(),
            prev_addr: 0,
            prev_code_end: 0,
            records: 0,
            accesses: 0,
            first_seq: 0,
        }
    }

    /// Encodes `words`, calling `emit` with each chunk that reaches the chunk size.
    ///
    /// # Safety
    /// `words` are a guest thread's words as [`crate::buffer::ThreadBuf`] and the functions
    /// of this module append them: an [`ESC_CODE`] word holds the address of a live
    /// [`CodeBlock`] less `code_base`.
    pub unsafe fn feed<E>(
        &mut self,
        words: &[u64],
        code_base: u64,
        emit: &mut impl FnMut(Encoded<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let mut i = 0;
        while i < words.len() {
            // The one-word records (nearly all) in a loop of their own; it stops at any
            // other word, which the general path below takes.
            i = self.fast(words, i);
            if self.raw.len() >= tracefmt::CHUNK_RAW_BYTES {
                self.emit(emit)?;
                continue;
            }
            if i == words.len() {
                break;
            }
            let w = words[i];
            if w & (ESC | INLINE_CODE_BIT) == ESC && w & 0xff == ESC_BYTES {
                // Encoded bytes already: copied.
                i += 1;
                let len = ((w >> 8) & 0xff_ffff) as usize;
                if (w >> 32) & 1 == 1 {
                    if self.first_seq == 0 {
                        self.first_seq = words[i];
                    }
                    i += 1;
                }
                let n = len.div_ceil(8);
                let at = self.raw.len();
                for &b in &words[i..i + n] {
                    self.raw.extend_from_slice(&b.to_le_bytes());
                }
                self.raw.truncate(at + len);
                i += n;
                self.records += 1;
            } else {
                // SAFETY: forwarded.
                match unsafe { tracefmt::words::next(words, &mut i, code_base) } {
                    Item::Access {
                        addr,
                        icount,
                        kind,
                        size,
                    } => self.access(addr, icount, kind, size),
                    Item::Code { addr, bytes, insns } => {
                        self.code(addr, u64::from(bytes), u64::from(insns))
                    }
                    Item::Other(r) => {
                        encode(&mut self.raw, &r, &mut self.st);
                        self.records += 1;
                    }
                }
            }
            if self.raw.len() >= tracefmt::CHUNK_RAW_BYTES {
                self.emit(emit)?;
            }
        }
        Ok(())
    }

    /// Encodes the one-word records of `words` from `i` on (access words and inline code
    /// words: 286.5 M of the 286.6 M records of python3 `sum(range(3_000_000))`) and returns
    /// the index of the first word it did not take: another kind of word, the end, or the
    /// first word after the chunk reached [`tracefmt::CHUNK_RAW_BYTES`].
    ///
    /// Why a loop of its own (issue 19: the writer thread's encoding is the recording's
    /// critical path): the general path goes through [`tracefmt::words::next`]'s `Item`,
    /// reserves room, and updates the encoder's fields in memory for every record. Here the
    /// room for a whole batch is reserved once, the output position, the two delta bases
    /// and the counts live in registers, the access's tag comes from a table indexed by the
    /// word's top bits, and the fields known to be short are stored without a loop: an
    /// access word's instruction count (below 1024: 1 or 2 bytes) and an inline code word's
    /// length (below 256: 1 or 2 bytes) and instruction count (below 128: 1 byte). Only the
    /// address deltas take the varint loop. The bytes are those of `tracefmt::encode`.
    #[inline(always)]
    fn fast(&mut self, words: &[u64], i: usize) -> usize {
        if *HAS_BMI2 {
            // SAFETY: the CPU has BMI2 and LZCNT.
            unsafe { self.fast_bmi2(words, i) }
        } else {
            self.fast_loop::<false>(words, i)
        }
    }

    /// [`Self::fast_loop`] compiled for BMI2 and LZCNT ([`varint_pdep`]).
    ///
    /// # Safety
    /// The CPU has BMI2 and LZCNT.
    #[target_feature(enable = "bmi2,lzcnt")]
    unsafe fn fast_bmi2(&mut self, words: &[u64], i: usize) -> usize {
        self.fast_loop::<true>(words, i)
    }

    #[inline(always)]
    fn fast_loop<const BMI2: bool>(&mut self, words: &[u64], mut i: usize) -> usize {
        /// Words per batch: a record is at most 1 + 10 + 2 (+ 6 over-stored) bytes.
        const BATCH: usize = 4096;
        const MAX_REC: usize = 24;
        while i < words.len() {
            let end = (i + BATCH).min(words.len());
            self.raw.reserve((end - i) * MAX_REC + SLACK);
            let base = self.raw.as_mut_ptr();
            let mut len = self.raw.len();
            let mut prev_addr = self.prev_addr;
            let mut prev_code_end = self.prev_code_end;
            let mut accesses = 0u64;
            let start = i;
            let mut stop = false;
            while i < end {
                let w = words[i];
                // SAFETY: `reserve` made room for `MAX_REC` bytes per word of the batch (plus
                // `SLACK`), and each record below stores at most that many from `len`.
                unsafe {
                    let p = base.add(len);
                    if w & ESC == 0 {
                        let addr = w & ADDR_MASK;
                        let icount = (w >> ADDR_BITS) & ICOUNT_MAX;
                        *p = ACCESS_TAG[((w >> 58) & 0x1f) as usize];
                        let delta = addr.wrapping_sub(prev_addr) as i64;
                        let mut m =
                            1 + varint_at::<BMI2>(p.add(1), ((delta << 1) ^ (delta >> 63)) as u64);
                        m += short_varint_at(p.add(m), icount);
                        len += m;
                        prev_addr = addr;
                        accesses += 1;
                    } else if w & INLINE_CODE_BIT != 0 {
                        let addr = w & ((1 << 47) - 1);
                        let bytes = (w >> 47) & 0xff;
                        let insns = (w >> 55) & 0x7f;
                        *p = 7;
                        let delta = addr.wrapping_sub(prev_code_end) as i64;
                        let mut m =
                            1 + varint_at::<BMI2>(p.add(1), ((delta << 1) ^ (delta >> 63)) as u64);
                        m += short_varint_at(p.add(m), bytes);
                        *p.add(m) = insns as u8;
                        len += m + 1;
                        prev_code_end = addr + bytes;
                    } else {
                        stop = true;
                        break;
                    }
                }
                i += 1;
                if len >= tracefmt::CHUNK_RAW_BYTES {
                    stop = true;
                    break;
                }
            }
            // SAFETY: the bytes up to `len` were written above.
            unsafe { self.raw.set_len(len) };
            self.prev_addr = prev_addr;
            self.prev_code_end = prev_code_end;
            self.records += (i - start) as u64;
            self.accesses += accesses;
            if stop {
                break;
            }
        }
        i
    }

    #[inline(always)]
    fn access(&mut self, addr: u64, mut icount: u64, kind: AccessKind, size: u8) {
        let size_code = size.trailing_zeros() as u8 + 1;
        if icount > u64::from(u32::MAX) {
            // Over 4 G instructions without a reference: an instructions-only record first.
            encode(
                &mut self.raw,
                &Record::Instructions(icount - 1),
                &mut self.st,
            );
            self.records += 1;
            icount = 1;
        }
        // `tracefmt::encode` of the access: tag (1 byte), address delta (up to 10) and
        // instruction count (up to 5, it fits 32 bits here), stored straight into the chunk's
        // spare capacity ([`varint_at`]). Why not `extend_from_slice` of a stack buffer: its
        // `memmove`, then the stall of reading bytes just stored one by one, took most of the
        // writer thread's time.
        let delta = addr.wrapping_sub(self.prev_addr) as i64;
        self.raw.reserve(SLACK);
        let len = self.raw.len();
        // SAFETY: `reserve` made room for `SLACK` bytes past `len`, and the record with
        // `varint_at`'s over-stores needs at most 1 + 10 + 8; only the record's bytes are
        // counted in the length.
        unsafe {
            let p = self.raw.as_mut_ptr().add(len);
            *p = kind as u8 | (size_code << 3);
            let mut m = 1;
            m += varint_at::<false>(p.add(m), ((delta << 1) ^ (delta >> 63)) as u64);
            m += varint_at::<false>(p.add(m), icount);
            self.raw.set_len(len + m);
        }
        self.records += 1;
        self.accesses += 1;
        self.prev_addr = addr;
    }

    /// A code record (`docs/trace-format.md`): tag 7, the start as a zig-zag delta from the
    /// end of the previous block of the chunk, the length and the instruction count, stored
    /// as accesses are.
    #[inline(always)]
    fn code(&mut self, addr: u64, bytes: u64, insns: u64) {
        let delta = addr.wrapping_sub(self.prev_code_end) as i64;
        let zz = ((delta << 1) ^ (delta >> 63)) as u64;
        self.prev_code_end = addr.wrapping_add(bytes);
        self.records += 1;
        self.raw.reserve(SLACK);
        let len = self.raw.len();
        // SAFETY: as in `access`: `SLACK` bytes reserved; the record is at most 1 + 10 + 5 + 5
        // bytes (`bytes` and `insns` come from `u32`s) and the last over-store ends at most
        // 1 + 10 + 5 + 8 bytes past `len`.
        unsafe {
            let p = self.raw.as_mut_ptr().add(len);
            *p = 7;
            let mut m = 1;
            m += varint_at::<false>(p.add(m), zz);
            m += varint_at::<false>(p.add(m), bytes);
            m += varint_at::<false>(p.add(m), insns);
            self.raw.set_len(len + m);
        }
    }

    /// Hands the records encoded so far to `emit` as one chunk (nothing when there are none)
    /// and starts a new chunk: address deltas restart from 0.
    pub fn emit<E>(
        &mut self,
        emit: &mut impl FnMut(Encoded<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.raw.is_empty() {
            return Ok(());
        }
        let r = emit(Encoded {
            tid: self.tid,
            first_seq: self.first_seq,
            records: self.records,
            accesses: self.accesses,
            raw: &self.raw,
        });
        self.raw.clear();
        self.st = EncState::default();
        self.prev_addr = 0;
        self.prev_code_end = 0;
        self.records = 0;
        self.accesses = 0;
        self.first_seq = 0;
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer::ThreadBuf;

    /// LEB128 as `tracefmt` defines it, byte by byte: the reference for [`varint_at`].
    fn leb128(mut v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
        out
    }

    /// [`varint_at`] compiled for BMI2 (its `pdep` path), as [`ThreadEnc::fast_bmi2`] is.
    ///
    /// # Safety
    /// The CPU has BMI2 and LZCNT; `p` is valid for writes of 10 bytes.
    #[target_feature(enable = "bmi2,lzcnt")]
    unsafe fn varint_at_bmi2(p: *mut u8, v: u64) -> usize {
        // SAFETY: guaranteed by the caller.
        unsafe { varint_at::<true>(p, v) }
    }

    /// Both copies of the varint writer give LEB128's bytes at every length: the loop that
    /// CPUs without BMI2 take (not otherwise run on a host that has it) and the `pdep` one.
    /// Values: each length's first and last, and a pseudo-random spread.
    #[test]
    fn varint_at_is_leb128_with_and_without_bmi2() {
        let mut values = vec![0u64, u64::MAX];
        for k in 1..=9u32 {
            values.push((1u64 << (7 * k)) - 1);
            values.push(1u64 << (7 * k));
        }
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x >> (x % 64));
        }
        for &v in &values {
            let want = leb128(v);
            let mut buf = [0u8; 16];
            // SAFETY: 16 bytes.
            let n = unsafe { varint_at::<false>(buf.as_mut_ptr(), v) };
            assert_eq!(&buf[..n], &want[..], "loop, {v:#x}");
            if *HAS_BMI2 {
                let mut buf = [0u8; 16];
                // SAFETY: the CPU has BMI2 and LZCNT; 16 bytes.
                let n = unsafe { varint_at_bmi2(buf.as_mut_ptr(), v) };
                assert_eq!(&buf[..n], &want[..], "pdep, {v:#x}");
            }
        }
    }

    /// Feeds a thread's words and returns the chunk bytes.
    fn encoded(b: &ThreadBuf) -> (Vec<u8>, u64, u64) {
        let mut e = ThreadEnc::new(b.tid);
        let mut out = (Vec::new(), 0, 0);
        let mut emit = |c: Encoded<'_>| -> Result<(), ()> {
            out.0.extend_from_slice(c.raw);
            out.1 = c.records;
            out.2 = c.first_seq;
            Ok(())
        };
        // SAFETY: the words of a `ThreadBuf`.
        unsafe { e.feed(b.words.as_slice(), 0, &mut emit) }.unwrap();
        e.emit(&mut emit).unwrap();
        out
    }

    /// The bytes of `docs/trace-format.md` for what the plugin sees.
    #[test]
    fn records_follow_the_spec_bytes() {
        let mut b = ThreadBuf::new(42);
        b.record(&Record::ThreadStart {
            parent: 100,
            seq: 7,
        });
        b.block(5);
        // 8-byte store at 0x1000 by the 3rd instruction: tag 1 | (3+1)<<3 = 0x21,
        // delta +0x1000 zig-zag 0x2000 = [0x80, 0x40], 3 instructions.
        b.access_idx(code(3, true), 0x1000, 2);
        // 1-byte load 8 below by the 5th: tag 0x08, delta -8 -> 15, 2 instructions.
        b.access_idx(code(0, false), 0xff8, 4);
        // A 1-byte store to the same address by the same instruction: the load becomes a
        // modify (tag 2 | 1<<3 = 0x0a), nothing appended.
        b.access_idx(code(0, true), 0xff8, 4);
        // Next block: 200 instructions, a 4-byte load by its first one: 1 + 0 from the
        // previous block's tail (it ended with the 5th instruction).
        b.block(200);
        b.access_idx(code(2, false), 0xff8, 0);
        b.catch_up(); // the remaining 199 instructions
        b.record(&Record::Sync {
            seq: 10,
            nr: 202,
            args: [0x1000, 128, 1],
            ret: -11,
            phase: tracefmt::SyncPhase::Return,
            timeout_ns: None,
        });
        b.record(&Record::ThreadExit { seq: 11 });
        let (raw, records, first_seq) = encoded(&b);
        let want: Vec<u8> = [
            &[0x04, 0x64, 0x07][..],
            &[0x21, 0x80, 0x40, 0x03],
            &[0x0a, 0x0f, 0x02],
            &[0x18, 0x00, 0x01],
            &[0x03, 0xc7, 0x01],
            &[
                0x06, 0x0a, 0xca, 0x01, 0x80, 0x20, 0x80, 0x01, 0x01, 0x15, 0x01,
            ],
            &[0x05, 0x0b],
        ]
        .concat();
        assert_eq!(raw, want);
        assert_eq!((records, first_seq), (7, 7));
    }

    /// Executed blocks become code records (`docs/trace-format.md`): the start as a delta
    /// from the end of the previous block, the length and the instruction count; the
    /// accesses' instruction counts are those of a trace without them.
    #[test]
    fn executed_blocks_become_code_records() {
        static A: CodeBlock = CodeBlock {
            addr: 0x40_1000,
            bytes: 12,
            insns: 3,
        };
        static B: CodeBlock = CodeBlock {
            addr: 0x40_100c,
            bytes: 20_000,
            insns: 20_000,
        };
        let mut b = ThreadBuf::new(1);
        b.code(&A);
        b.access_idx(code(3, false), 0x40, 1);
        b.code(&B);
        b.code(&A);
        b.access_idx(code(3, true), 0x48, 2);
        let mut long = Vec::new();
        push_code_long(&mut long, &A);
        b.words.extend_from_slice(&long);
        let (raw, records, _) = encoded(&b);
        let want: Vec<u8> = [
            // 0x401000: zig-zag 0x802000.
            &[7, 0x80, 0xc0, 0x80, 0x04, 12, 3][..],
            // Load by the 2nd instruction: delta 0x40 (zig-zag 0x80), 2 instructions.
            &[0x20, 0x80, 0x01, 2],
            // Falls through: delta 0; 20000 bytes and instructions (the slow path).
            &[7, 0, 0xa0, 0x9c, 0x01, 0xa0, 0x9c, 0x01],
            // Back to A: -(12 + 20000) zig-zag 40023.
            &[7, 0xd7, 0xb8, 0x02, 12, 3],
            // Store by A's 3rd instruction: 1 (rest of A) + 20000 (B) + 3 instructions since
            // the load.
            &[0x21, 0x10, 0xa4, 0x9c, 0x01],
            // The long form: the same block again, delta -12.
            &[7, 0x17, 12, 3],
        ]
        .concat();
        assert_eq!(raw, want);
        assert_eq!(records, 6);
    }

    #[test]
    fn a_store_by_another_instruction_is_not_merged() {
        let mut b = ThreadBuf::new(1);
        b.block(2);
        b.access_idx(code(3, false), 0x40, 0);
        b.access_idx(code(3, true), 0x40, 1);
        assert_eq!(encoded(&b).0, [0x20, 0x80, 0x01, 0x01, 0x21, 0x00, 0x01]);
    }

    /// High addresses (the vsyscall page) and long gaps take the escape form and decode to
    /// the same records as the one-word form would give.
    #[test]
    fn accesses_that_do_not_fit_a_word_are_escaped() {
        let mut b = ThreadBuf::new(1);
        b.block(5000);
        b.access_idx(code(3, false), 0xffff_ffff_ff60_0000, 4999);
        b.block(1);
        b.access_idx(code(2, true), 0x10, 0);
        assert_eq!(b.words.len(), 4, "3 words for the escape, 1 for the store");
        let (raw, records, _) = encoded(&b);
        let mut st = tracefmt::DecState::default();
        let mut pos = 0;
        let mut got = Vec::new();
        while pos < raw.len() {
            got.push(tracefmt::decode(&raw, &mut pos, &mut st).unwrap());
        }
        assert_eq!(
            got,
            [
                Record::Access {
                    kind: AccessKind::Load,
                    addr: 0xffff_ffff_ff60_0000,
                    size: 8,
                    icount: 5000
                },
                Record::Access {
                    kind: AccessKind::Store,
                    addr: 0x10,
                    size: 4,
                    icount: 1
                }
            ]
        );
        assert_eq!(records, 2);
    }

    /// Every varint length, both signs of delta, decoded by `tracefmt` to what went in.
    #[test]
    fn deltas_and_counts_of_every_length_round_trip() {
        let mut b = ThreadBuf::new(1);
        let mut want = Vec::new();
        let mut addr = 0x4000_0000_0000u64;
        for shift in 0..47 {
            for (sign, icount) in [(1i64, 1u64), (-1, 2047), (1, 127), (-1, 128)] {
                for off in [0u64, 1] {
                    let d = ((1u64 << shift) - off) as i64 * sign;
                    addr = addr.wrapping_add(d as u64) & ((1 << 47) - 1);
                    b.block(icount);
                    b.access_idx(code(3, false), addr, icount - 1);
                    want.push((addr, icount as u32));
                }
            }
        }
        let (raw, _, _) = encoded(&b);
        let mut st = tracefmt::DecState::default();
        let mut pos = 0;
        let mut got = Vec::new();
        while pos < raw.len() {
            match tracefmt::decode(&raw, &mut pos, &mut st).unwrap() {
                Record::Access { addr, icount, .. } => got.push((addr, icount)),
                r => panic!("{r:?}"),
            }
        }
        assert_eq!(got, want);
    }

    /// A chunk ends at the chunk size; the next starts its address deltas afresh, and a load
    /// at the end of one chunk is never merged with a store at the start of the next.
    #[test]
    fn chunks_restart_the_delta_state() {
        let mut b = ThreadBuf::with_capacity(1, 700_000);
        let n = 600_000u64;
        for i in 0..n {
            b.block(1);
            b.access_idx(code(3, false), 0x7000_0000 + 64 * (i % 1000), 0);
        }
        let mut e = ThreadEnc::new(1);
        let mut chunks = Vec::new();
        let mut emit = |c: Encoded<'_>| -> Result<(), ()> {
            chunks.push((c.raw.to_vec(), c.records));
            Ok(())
        };
        // SAFETY: the words of a `ThreadBuf`.
        unsafe { e.feed(b.words.as_slice(), 0, &mut emit) }.unwrap();
        e.emit(&mut emit).unwrap();
        assert!(chunks.len() >= 2, "{} chunks", chunks.len());
        let mut total = 0;
        for (raw, records) in &chunks {
            let mut st = tracefmt::DecState::default();
            let mut pos = 0;
            let mut k = 0;
            while pos < raw.len() {
                let r = tracefmt::decode(raw, &mut pos, &mut st).unwrap();
                let Record::Access { addr, .. } = r else {
                    panic!("{r:?}")
                };
                assert_eq!(addr, 0x7000_0000 + 64 * ((total + k) % 1000));
                k += 1;
            }
            assert_eq!(k, *records);
            total += k;
        }
        assert_eq!(total, n);
    }

    /// The one-word fast path ([`ThreadEnc::fast`]) and the general path give the bytes of
    /// `tracefmt::encode` for the same records: a generated mixture of access words of every
    /// kind, size, instruction count (0..1023) and delta length, inline code words of every
    /// length and count, long code and access escapes and synchronization records between
    /// them, over several chunks, with buffers cut at every kind of word.
    #[test]
    fn fast_path_gives_the_bytes_of_tracefmt_encode() {
        static LONG: CodeBlock = CodeBlock {
            addr: 0x7fff_0000_1000,
            bytes: 3000,
            insns: 700,
        };
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut words: Vec<u64> = Vec::new();
        let mut want: Vec<Vec<u8>> = Vec::new();
        let mut st = EncState::default();
        let mut addr = 0x40_0000u64;
        let mut pc = 0x40_1000u64;
        // Whether a record starts at each word (a buffer holds whole records).
        let mut starts: Vec<bool> = Vec::new();
        for k in 0..400_000u64 {
            starts.resize(words.len(), false);
            starts.push(true);
            let r = rnd();
            let mut bytes = Vec::new();
            match r % 16 {
                0..=8 => {
                    // An access: delta of 0 to 47 bits either way.
                    let bits = (r >> 8) % 48;
                    let d = (rnd() & ((1u64 << bits) - 1)) as i64;
                    let d = if r & 1 << 20 != 0 { -d } else { d };
                    addr = addr.wrapping_add(d as u64) & ADDR_MASK;
                    let log2 = ((r >> 24) % 4) as u32;
                    let kind = [AccessKind::Load, AccessKind::Store, AccessKind::Modify]
                        [((r >> 28) % 3) as usize];
                    let icount = (r >> 32) % 1024;
                    let w = access(code(log2, kind != AccessKind::Load), addr, icount).unwrap();
                    words.push(if kind == AccessKind::Modify {
                        w | MODIFY
                    } else {
                        w
                    });
                    encode(
                        &mut bytes,
                        &Record::Access {
                            kind,
                            addr,
                            size: 1 << log2,
                            icount: icount as u32,
                        },
                        &mut st,
                    );
                }
                9..=13 => {
                    // An inline code word: fall-through or a jump of up to 2^40.
                    if r & 1 << 9 != 0 {
                        let d = (rnd() % (1 << ((r >> 10) % 40))) as i64;
                        let d = if r & 1 << 20 != 0 { -d } else { d };
                        pc = pc.wrapping_add(d as u64) & ((1 << 46) - 1);
                    }
                    let b = CodeBlock {
                        addr: pc,
                        bytes: ((r >> 24) % 256) as u32,
                        insns: ((r >> 32) % 128) as u32,
                    };
                    words.push(inline_code(&b).unwrap());
                    let rec = Record::Code {
                        addr: b.addr,
                        bytes: b.bytes,
                        insns: b.insns,
                    };
                    encode(&mut bytes, &rec, &mut st);
                    pc = b.addr + u64::from(b.bytes);
                }
                14 => {
                    // Escapes: a long code block, or an access above 2^48.
                    if r & 1 << 8 != 0 {
                        push_code(&mut words, &LONG, 0);
                        let rec = Record::Code {
                            addr: LONG.addr,
                            bytes: LONG.bytes,
                            insns: LONG.insns,
                        };
                        encode(&mut bytes, &rec, &mut st);
                        pc = LONG.addr + u64::from(LONG.bytes);
                    } else {
                        addr = 0xffff_ffff_ff60_0000 + (r >> 48);
                        push_long_access(&mut words, code(3, false), addr, 5000);
                        let rec = Record::Access {
                            kind: AccessKind::Load,
                            addr,
                            size: 8,
                            icount: 5000,
                        };
                        encode(&mut bytes, &rec, &mut st);
                    }
                }
                _ => {
                    let rec = Record::Sync {
                        seq: k + 1,
                        nr: 202,
                        args: [addr, 128, r >> 50],
                        ret: 0,
                        phase: tracefmt::SyncPhase::Return,
                        timeout_ns: None,
                    };
                    push_record(&mut words, &rec);
                    encode(&mut bytes, &rec, &mut st);
                }
            }
            want.push(bytes);
        }
        starts.resize(words.len(), false);
        // Buffers of 1000 to 9000 words, cut before any record.
        let mut e = ThreadEnc::new(1);
        let mut chunks: Vec<(Vec<u8>, u64, u64)> = Vec::new();
        let mut emit = |c: Encoded<'_>| -> Result<(), ()> {
            chunks.push((c.raw.to_vec(), c.records, c.accesses));
            Ok(())
        };
        let mut at = 0;
        while at < words.len() {
            let mut end = (at + 1000 + (rnd() % 8000) as usize).min(words.len());
            while end < words.len() && !starts[end] {
                end += 1;
            }
            // SAFETY: the words of this module's functions; `LONG` is static.
            unsafe { e.feed(&words[at..end], 0, &mut emit) }.unwrap();
            at = end;
        }
        e.emit(&mut emit).unwrap();
        assert!(chunks.len() >= 3, "{} chunks", chunks.len());
        // Each chunk restarts the delta bases: encode the records again chunk by chunk.
        let mut k = 0;
        for (raw, records, accesses) in &chunks {
            let mut st = tracefmt::DecState::default();
            let mut pos = 0;
            let mut recs = Vec::new();
            while pos < raw.len() {
                recs.push(tracefmt::decode(raw, &mut pos, &mut st).unwrap());
            }
            assert_eq!(recs.len() as u64, *records);
            let n_acc = recs
                .iter()
                .filter(|r| matches!(r, Record::Access { .. }))
                .count();
            assert_eq!(n_acc as u64, *accesses);
            let mut est = EncState::default();
            let mut again = Vec::new();
            for r in &recs {
                encode(&mut again, r, &mut est);
            }
            assert_eq!(&again, raw, "chunk bytes are tracefmt::encode's");
            k += recs.len();
        }
        assert_eq!(k, want.len());
        // And the records are the ones that went in (the first chunk byte for byte).
        let first: Vec<u8> = want
            .iter()
            .take(chunks[0].1 as usize)
            .flatten()
            .copied()
            .collect();
        assert_eq!(chunks[0].0, first);
    }
}
