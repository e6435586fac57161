//! The raw record words of the QEMU tracer: what its memory and block callbacks append to a
//! guest thread's buffer, one 8-byte word per reference or executed block. Its writer thread
//! encodes them into `.pmt` records (`qemu_tracer::words::ThreadEnc`); a simulation fused
//! with the recording reads them as they are (`qemu_tracer::live`), here.
//!
//! Why a second encoding: the memory callback runs once per guest reference (about 190 M
//! times for python3 `sum(range(3_000_000))`) on the guest's own thread. There it does no
//! more than store one word; the variable-length encoding of `docs/trace-format.md` and zstd
//! run elsewhere, or not at all.
//!
//! An access word (bit 63 clear):
//!
//! | bits | field |
//! | --- | --- |
//! | 0..48 | virtual address |
//! | 48..58 | instructions retired since the thread's previous record, this one included (0..1023) |
//! | 58 | modify: a load and a store of the address by one instruction (lackey's `M`) |
//! | 59..62 | log2 of the access size |
//! | 62 | store (set for a modify too) |
//!
//! The callback turns the previous word, a load, into a modify when the same instruction
//! stores to the same address with the same size (a word in another buffer is left alone:
//! at a buffer's start the two stay a load and a store).
//!
//! An executed block of code (instruction fetch, `docs/trace-format.md`'s code record) that
//! starts below 2^47 and has under 256 bytes and 128 instructions is one *inline code word*:
//! bit 63 and bit 62 set, the start in bits 0..47, the length in bits 47..55, the instruction
//! count in bits 55..62. The plugin makes it when QEMU translates the block and hands it to
//! the block callback as its user data.
//!
//! Anything else is an escape word (bit 63 set, bit 62 clear) whose bits 0..8 give its kind:
//! [`ESC_ACCESS`] (an access that does not fit: an address at or above 2^48, or a longer
//! instruction gap; the code in bits 8..12, [`MODIFY`] >> 58 in bit 12, then the address
//! and the instruction count as whole words); [`ESC_CODE`] (a block that does not fit a
//! word: bits 8..62 hold the address of its [`CodeBlock`] less the reader's code base);
//! [`ESC_CODE_LONG`] (the same, followed by the start and `bytes | insns << 32`); and
//! [`ESC_BYTES`] (every other record: thread start and exit, system calls, instructions
//! only: the record's byte length in bits 8..32 and, in bit 32, whether a sequence-number
//! word follows; then the record's [`crate::encode`] bytes, padded to whole words).

use crate::{Access, AccessKind, Record, Step};

pub const ADDR_BITS: u32 = 48;
pub const ADDR_MASK: u64 = (1 << ADDR_BITS) - 1;
pub const ICOUNT_BITS: u32 = 10;
pub const ICOUNT_MAX: u64 = (1 << ICOUNT_BITS) - 1;
pub const MODIFY: u64 = 1 << 58;
pub const CODE_SHIFT: u32 = 59;
pub const ESC: u64 = 1 << 63;
/// With [`ESC`]: an inline code word.
pub const INLINE_CODE: u64 = 1 << 62;
/// Escape kinds (bits 0..8 of an escape word).
pub const ESC_ACCESS: u64 = 1;
pub const ESC_BYTES: u64 = 2;
pub const ESC_CODE: u64 = 3;
pub const ESC_CODE_LONG: u64 = 4;
/// Largest [`ESC_CODE`] payload (bit 62 must stay clear).
pub const CODE_PTR_LIMIT: u64 = 1 << 54;
const INLINE_ADDR_BITS: u32 = 47;

/// A translated block: where its code is and how many instructions it holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C)]
pub struct CodeBlock {
    pub addr: u64,
    pub bytes: u32,
    pub insns: u32,
}

/// The 4-bit access code: log2 of the size in bits 0..3, store in bit 3.
#[inline(always)]
pub fn code(size_log2: u32, store: bool) -> u64 {
    u64::from(size_log2 & 7) | (u64::from(store) << 3)
}

/// The one-word form of an access, when it fits.
#[inline(always)]
pub fn access_word(code: u64, addr: u64, icount: u64) -> Option<u64> {
    if addr <= ADDR_MASK && icount <= ICOUNT_MAX {
        Some(addr | (icount << ADDR_BITS) | (code << CODE_SHIFT))
    } else {
        None
    }
}

/// Whether `store` (an access word) is the store completing `prev` (an access word, a load
/// of the same address and size) into a modify: then `prev | MODIFY | store bit` replaces
/// both.
#[inline(always)]
pub fn completes_modify(prev: u64, store: u64) -> bool {
    // Same address and size, `prev` a plain load (not an escape, not a modify, not a store),
    // `store` a store by the same instruction (no instruction in between).
    const KEY: u64 = ADDR_MASK | (0x7 << CODE_SHIFT);
    prev & (ESC | MODIFY | (8 << CODE_SHIFT)) == 0
        && store & (ICOUNT_MAX << ADDR_BITS) == 0
        && (prev ^ store) & KEY == 0
}

/// The store bit of an access word (set for a modify too).
pub const STORE: u64 = 8 << CODE_SHIFT;

/// The start and length of an inline code word's block (`None` for any other word): what a
/// replay's fetch needs, decoded in place (the instruction count comes with the accesses).
#[inline(always)]
pub fn inline_code_of(w: u64) -> Option<(u64, u64)> {
    (w & (ESC | INLINE_CODE) == ESC | INLINE_CODE).then_some((
        w & ((1 << INLINE_ADDR_BITS) - 1),
        (w >> INLINE_ADDR_BITS) & 0xff,
    ))
}

/// The inline code word of a block, when it fits one.
pub fn inline_code(b: &CodeBlock) -> Option<u64> {
    (b.addr < 1 << INLINE_ADDR_BITS && b.bytes < 256 && b.insns < 128).then(|| {
        ESC | INLINE_CODE
            | b.addr
            | (u64::from(b.bytes) << INLINE_ADDR_BITS)
            | (u64::from(b.insns) << (INLINE_ADDR_BITS + 8))
    })
}

/// One record of a word stream.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Item {
    /// A data reference (`icount`: instructions since the previous record, its own
    /// included; it may exceed `u32::MAX`, which a `.pmt` record does not hold).
    Access {
        addr: u64,
        icount: u64,
        kind: AccessKind,
        size: u8,
    },
    Code {
        addr: u64,
        bytes: u32,
        insns: u32,
    },
    Other(Record),
}

/// The kind of an access word's code bits (bits 3 and 58: store, modify).
#[inline(always)]
pub fn kind_of(w: u64) -> AccessKind {
    const KINDS: [AccessKind; 4] = [
        AccessKind::Load,
        AccessKind::Store,
        AccessKind::Load,
        AccessKind::Modify,
    ];
    KINDS[(((w >> (CODE_SHIFT + 3)) & 1) | ((w >> 57) & 2)) as usize]
}

/// The record at `words[*i]`, advancing `*i` past its words.
///
/// # Safety
/// `words` are whole records of a guest thread's words whose [`ESC_CODE`] words hold the
/// address of a live [`CodeBlock`] less `code_base`.
#[inline(always)]
pub unsafe fn next(words: &[u64], i: &mut usize, code_base: u64) -> Item {
    let w = words[*i];
    *i += 1;
    if w & ESC == 0 {
        return Item::Access {
            addr: w & ADDR_MASK,
            icount: (w >> ADDR_BITS) & ICOUNT_MAX,
            kind: kind_of(w),
            size: 1 << ((w >> CODE_SHIFT) & 7),
        };
    }
    if let Some((addr, bytes)) = inline_code_of(w) {
        return Item::Code {
            addr,
            bytes: bytes as u32,
            insns: ((w >> (INLINE_ADDR_BITS + 8)) & 0x7f) as u32,
        };
    }
    // SAFETY: forwarded.
    unsafe { escape(words, i, w, code_base) }
}

#[cold]
#[inline(never)]
unsafe fn escape(words: &[u64], i: &mut usize, w: u64, code_base: u64) -> Item {
    match w & 0xff {
        ESC_ACCESS => {
            let (addr, icount) = (words[*i], words[*i + 1]);
            *i += 2;
            let c = (w >> 8) & 0x1f;
            Item::Access {
                addr,
                icount,
                kind: kind_of((c & 0xf) << CODE_SHIFT | ((c >> 4) << 58)),
                size: 1 << (c & 7),
            }
        }
        ESC_CODE => {
            // SAFETY: guaranteed by the caller.
            let b = unsafe { &*(((w & !ESC) >> 8).wrapping_add(code_base) as *const CodeBlock) };
            Item::Code {
                addr: b.addr,
                bytes: b.bytes,
                insns: b.insns,
            }
        }
        ESC_CODE_LONG => {
            let (addr, x) = (words[*i], words[*i + 1]);
            *i += 2;
            Item::Code {
                addr,
                bytes: x as u32,
                insns: (x >> 32) as u32,
            }
        }
        _ => {
            let len = ((w >> 8) & 0xff_ffff) as usize;
            *i += ((w >> 32) & 1) as usize;
            let n = len.div_ceil(8);
            let mut bytes = Vec::with_capacity(n * 8);
            for &b in &words[*i..*i + n] {
                bytes.extend_from_slice(&b.to_le_bytes());
            }
            bytes.truncate(len);
            *i += n;
            let mut at = 0;
            Item::Other(
                crate::decode(&bytes, &mut at, &mut crate::DecState::default())
                    .unwrap_or(Record::Instructions(0)),
            )
        }
    }
}

/// A guest thread's words turned into the steps a replay reads from a `.pmt` file (runs of
/// accesses and single other records, [`Step`]): **the same records that encoding the words
/// and decoding them give** — an access after more than 2^32 - 1 instructions is preceded
/// by an instructions-only record; code blocks of at most 65535 bytes come in the runs of
/// accesses (as [`AccessKind::Code`]), longer ones as records.
#[derive(Default)]
pub struct RawSteps {
    /// The access after an instructions-only record, first in the next run.
    pending: Option<Access>,
    /// Records given so far (a modify counts one).
    pub records: u64,
}

/// What [`RawSteps::next`] gives.
#[derive(Debug, PartialEq)]
pub enum RawStep {
    Step(Step),
    /// The words given are used up.
    NeedWords,
}

impl RawSteps {
    /// The next step from `words[*pos..]`, advancing `*pos`; `out` must hold at least one
    /// access.
    ///
    /// # Safety
    /// As for [`next`].
    pub unsafe fn next(
        &mut self,
        words: &[u64],
        pos: &mut usize,
        code_base: u64,
        out: &mut [Access],
    ) -> RawStep {
        let mut n = 0;
        if let Some(a) = self.pending.take() {
            out[0] = a;
            n = 1;
        }
        while *pos < words.len() && n < out.len() {
            let at = *pos;
            // SAFETY: forwarded.
            match unsafe { next(words, pos, code_base) } {
                Item::Access {
                    addr,
                    icount,
                    kind,
                    size,
                } => {
                    let a = Access {
                        addr,
                        icount: icount.min(u64::from(u32::MAX)) as u32,
                        kind,
                        size,
                        bytes: 0,
                    };
                    if icount > u64::from(u32::MAX) {
                        if n > 0 {
                            *pos = at;
                            break;
                        }
                        self.records += 1;
                        self.pending = Some(Access { icount: 1, ..a });
                        return RawStep::Step(Step::Other(Record::Instructions(icount - 1)));
                    }
                    out[n] = a;
                    n += 1;
                }
                Item::Code { addr, bytes, insns } => match u16::try_from(bytes) {
                    Ok(b) => {
                        out[n] = Access {
                            addr,
                            icount: insns,
                            kind: AccessKind::Code,
                            size: 0,
                            bytes: b,
                        };
                        n += 1;
                    }
                    Err(_) if n > 0 => {
                        *pos = at;
                        break;
                    }
                    Err(_) => {
                        self.records += 1;
                        return RawStep::Step(Step::Other(Record::Code { addr, bytes, insns }));
                    }
                },
                Item::Other(r) => {
                    if n > 0 {
                        *pos = at;
                        break;
                    }
                    self.records += 1;
                    return RawStep::Step(Step::Other(r));
                }
            }
        }
        self.records += n as u64;
        if n > 0 {
            RawStep::Step(Step::Accesses(n))
        } else {
            RawStep::NeedWords
        }
    }
}

/// A thread's raw words, block by block: what a fused replay reads (`qemu_tracer::live`).
pub trait WordSource {
    /// The thread's next words (whole records), `None` at its end.
    fn next_words(&mut self) -> Option<&[u64]>;
    /// What [`ESC_CODE`] words' payloads are relative to in this process.
    fn code_base(&self) -> u64;
}

/// A [`WordSource`] read as a `.pmt` stream's steps ([`RawSteps`]), for replays that need
/// the batches (`--cachegrind-out`'s profile, a watched range).
pub struct WordSteps {
    src: Box<dyn WordSource>,
    /// The current words, copied (the source lends them only until its next call).
    words: Vec<u64>,
    pos: usize,
    steps: RawSteps,
}

impl WordSteps {
    pub fn new(src: Box<dyn WordSource>) -> WordSteps {
        WordSteps {
            src,
            words: Vec::new(),
            pos: 0,
            steps: RawSteps::default(),
        }
    }
}

impl crate::StepSource for WordSteps {
    fn next_batch(&mut self, out: &mut [Access]) -> Option<Result<Step, crate::Error>> {
        loop {
            let base = self.src.code_base();
            // SAFETY: the source's words, relative to its code base.
            match unsafe { self.steps.next(&self.words, &mut self.pos, base, out) } {
                RawStep::Step(s) => return Some(Ok(s)),
                RawStep::NeedWords => {
                    let w = self.src.next_words()?;
                    self.words.clear();
                    self.words.extend_from_slice(w);
                    self.pos = 0;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_decode_to_their_records() {
        let load = access_word(code(3, false), 0x1000, 3).unwrap();
        let store = access_word(code(3, true), 0x1000, 0).unwrap();
        assert!(completes_modify(load, store));
        assert!(!completes_modify(
            load,
            access_word(code(2, true), 0x1000, 0).unwrap()
        ));
        assert!(!completes_modify(
            load,
            access_word(code(3, true), 0x1000, 1).unwrap()
        ));
        assert!(!completes_modify(store, store));
        let modify = load | MODIFY | (8 << CODE_SHIFT);
        let block = CodeBlock {
            addr: 0x40_1000,
            bytes: 12,
            insns: 3,
        };
        let words = [
            modify,
            inline_code(&block).unwrap(),
            ESC | ESC_CODE_LONG,
            0x50_0000,
            300 | (200 << 32),
            ESC | ESC_ACCESS | ((code(2, true) | 0x10) << 8),
            0xffff_ffff_ff60_0000,
            5000,
        ];
        let mut i = 0;
        let mut got = Vec::new();
        while i < words.len() {
            // SAFETY: no ESC_CODE words.
            got.push(unsafe { next(&words, &mut i, 0) });
        }
        assert_eq!(
            got,
            [
                Item::Access {
                    addr: 0x1000,
                    icount: 3,
                    kind: AccessKind::Modify,
                    size: 8
                },
                Item::Code {
                    addr: 0x40_1000,
                    bytes: 12,
                    insns: 3
                },
                Item::Code {
                    addr: 0x50_0000,
                    bytes: 300,
                    insns: 200
                },
                Item::Access {
                    addr: 0xffff_ffff_ff60_0000,
                    icount: 5000,
                    kind: AccessKind::Modify,
                    size: 4
                },
            ]
        );
        assert_eq!(
            inline_code(&CodeBlock {
                bytes: 256,
                ..block
            }),
            None
        );
        assert_eq!(
            inline_code(&CodeBlock {
                insns: 128,
                ..block
            }),
            None
        );
    }
}
