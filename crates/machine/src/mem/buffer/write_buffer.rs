//! The write buffer (seed 002, "Performance-enhancing features" and Figure 5): entries of one
//! aligned block each, with a byte-valid mask. Every write snoops the buffer:
//!
//! - **collapse**: every unit (word) the write touches is already buffered; the bytes are
//!   overwritten in place and the buffer holds no more than before;
//! - **merge**: the write's block is buffered but at least one of its units is not; the units
//!   join that entry (no new DRAM transaction);
//! - **new**: no entry for the block; a new entry is appended.
//!
//! There is at most one entry per block, so the drain order between entries cannot reorder two
//! writes to the same byte: the buffer is always "DRAM with every entry applied", and a read
//! merges the buffered bytes over DRAM data (read merge) instead of flushing.

use super::config::{BufferConfig, MAX_BLOCK_BYTES};
use super::mask::ByteMask;
use crate::addr::Addr;
use std::collections::VecDeque;

/// How a write went into the buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteKind {
    New,
    Merge,
    Collapse,
}

/// One buffered block: its address, data and which bytes are valid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub block: Addr,
    pub data: Vec<u8>,
    pub valid: ByteMask,
}

/// The write buffer's contents.
#[derive(Clone, Debug)]
pub struct WriteBuffer {
    block_bytes: u32,
    unit_bytes: u32,
    capacity: usize,
    entries: VecDeque<Entry>,
    units: usize,
}

fn range_mask(off: u32, len: u32) -> ByteMask {
    ByteMask::range(off, len)
}

impl WriteBuffer {
    pub fn new(c: &BufferConfig) -> WriteBuffer {
        assert!(c.block_bytes <= MAX_BLOCK_BYTES);
        WriteBuffer {
            block_bytes: c.block_bytes,
            unit_bytes: c.unit_bytes,
            capacity: c.capacity,
            entries: VecDeque::new(),
            units: 0,
        }
    }
    /// Buffered units (words, or lines in line mode).
    pub fn units(&self) -> usize {
        self.units
    }
    pub fn entries(&self) -> usize {
        self.entries.len()
    }
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
    pub fn capacity(&self) -> usize {
        self.capacity
    }
    fn block_of(&self, a: Addr) -> Addr {
        a & !(self.block_bytes as Addr - 1)
    }
    fn find(&self, block: Addr) -> Option<usize> {
        self.entries.iter().position(|e| e.block == block)
    }
    /// Units of a byte mask: unit-aligned groups with at least one valid byte.
    fn units_of(&self, mask: ByteMask) -> usize {
        mask.count_units(self.unit_bytes)
    }
    /// The units a write of `len` bytes at `a` touches, as a byte mask of whole units.
    fn unit_span(&self, a: Addr, len: u32) -> ByteMask {
        let off = (a - self.block_of(a)) as u32;
        let first = off / self.unit_bytes * self.unit_bytes;
        let end = (off + len).div_ceil(self.unit_bytes) * self.unit_bytes;
        range_mask(first, end - first)
    }
    /// Checks that `len` bytes at `a` lie in one block.
    pub fn check(&self, a: Addr, len: usize) -> Result<(), String> {
        if len == 0 || self.block_of(a) != self.block_of(a + len as Addr - 1) {
            return Err(format!(
                "memory buffer: a {len}-byte access at {a:#x} does not lie within one {}-byte block",
                self.block_bytes
            ));
        }
        Ok(())
    }
    /// What a write would be, and how many units it would add.
    pub fn classify(&self, a: Addr, len: usize) -> (WriteKind, usize) {
        let span = self.unit_span(a, len as u32);
        match self.find(self.block_of(a)) {
            None => (WriteKind::New, self.units_of(span)),
            Some(i) => {
                let have = self.entries[i].valid;
                // Units already holding at least one valid byte.
                let covered = have.whole_units(self.unit_bytes);
                let new = self.units_of(span.and_not(covered));
                (
                    if new == 0 {
                        WriteKind::Collapse
                    } else {
                        WriteKind::Merge
                    },
                    new,
                )
            }
        }
    }
    /// Whether the write finds room.
    pub fn fits(&self, a: Addr, len: usize) -> bool {
        self.units + self.classify(a, len).1 <= self.capacity
    }
    /// Snoops and inserts; the caller has checked `fits` (and `check`).
    pub fn insert(&mut self, a: Addr, data: &[u8]) -> WriteKind {
        let (kind, new) = self.classify(a, data.len());
        debug_assert!(self.units + new <= self.capacity, "insert without room");
        let block = self.block_of(a);
        let off = (a - block) as usize;
        let i = match self.find(block) {
            Some(i) => i,
            None => {
                self.entries.push_back(Entry {
                    block,
                    data: vec![0; self.block_bytes as usize],
                    valid: ByteMask::EMPTY,
                });
                self.entries.len() - 1
            }
        };
        let e = &mut self.entries[i];
        e.data[off..off + data.len()].copy_from_slice(data);
        e.valid |= range_mask(off as u32, data.len() as u32);
        self.units += new;
        kind
    }
    /// Copies the buffered bytes of `out`'s range (starting at `a`, within one block or
    /// spanning blocks) over `out`; returns how many bytes came from the buffer.
    pub fn overlay(&self, a: Addr, out: &mut [u8]) -> usize {
        let mut n = 0;
        for e in &self.entries {
            let (lo, hi) = (
                a.max(e.block),
                (a + out.len() as Addr).min(e.block + self.block_bytes as Addr),
            );
            for x in lo..hi {
                if e.valid.get(x - e.block) {
                    out[(x - a) as usize] = e.data[(x - e.block) as usize];
                    n += 1;
                }
            }
        }
        n
    }
    /// Removes the oldest entry (the next DRAM write).
    pub fn pop_oldest(&mut self) -> Option<Entry> {
        let e = self.entries.pop_front()?;
        self.units -= self.units_of(e.valid);
        Some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapse_merge_new_and_units() {
        let mut w = WriteBuffer::new(&BufferConfig::words());
        assert_eq!(w.insert(0x100, &[1, 2, 3, 4]), WriteKind::New);
        assert_eq!(w.units(), 1);
        assert_eq!(w.insert(0x100, &[5, 6, 7, 8]), WriteKind::Collapse);
        assert_eq!(w.insert(0x101, &[9]), WriteKind::Collapse); // a byte of a buffered word
        assert_eq!(w.units(), 1);
        assert_eq!(w.insert(0x104, &[1, 1]), WriteKind::Merge); // neighbouring word, same block
        assert_eq!((w.units(), w.entries()), (2, 1));
        assert_eq!(w.insert(0x106, &[2, 2]), WriteKind::Collapse); // same word, other half
        assert_eq!(w.insert(0x110, &[3; 4]), WriteKind::New); // next block
        assert_eq!((w.units(), w.entries()), (3, 2));
        let mut out = [0xEEu8; 16];
        assert_eq!(w.overlay(0x100, &mut out), 8);
        assert_eq!(&out[..8], &[5, 9, 7, 8, 1, 1, 2, 2]);
        assert_eq!(&out[8..], &[0xEE; 8]);
        let e = w.pop_oldest().unwrap();
        assert_eq!((e.block, e.valid), (0x100, ByteMask::range(0, 8)));
        assert_eq!(w.units(), 1);
    }

    #[test]
    fn accesses_must_stay_in_one_block() {
        let w = WriteBuffer::new(&BufferConfig::words());
        assert!(w.check(0x10C, 4).is_ok());
        assert!(w.check(0x10E, 4).unwrap_err().contains("0x10e"));
        assert!(w.check(0x100, 0).is_err());
    }

    #[test]
    fn fits_counts_only_new_units() {
        let c = BufferConfig {
            capacity: 4,
            watermark: 4,
            ..BufferConfig::words()
        };
        let mut w = WriteBuffer::new(&c);
        for i in 0..4 {
            w.insert(0x100 + 4 * i, &[i as u8; 4]);
        }
        assert_eq!(w.units(), 4);
        assert!(w.fits(0x104, 4)); // collapse needs no room
        assert!(!w.fits(0x110, 4)); // a new word does
        assert_eq!(w.classify(0x108, 8), (WriteKind::Collapse, 0));
    }

    #[test]
    fn line_entries() {
        let mut w = WriteBuffer::new(&BufferConfig::lines(128, 4));
        assert_eq!(w.insert(0x1000, &[7; 128]), WriteKind::New);
        assert_eq!(w.insert(0x1000, &[8; 128]), WriteKind::Collapse);
        assert_eq!(w.insert(0x1040, &[9; 8]), WriteKind::Collapse);
        assert_eq!((w.units(), w.entries()), (1, 1));
        let e = w.pop_oldest().unwrap();
        assert_eq!(e.valid, ByteMask::range(0, 128));
        assert_eq!(e.data[0x40], 9);
        assert_eq!(e.data[0x48], 8);
    }

    /// POWER2's 256-byte lines are one entry each; a write to the second half's first bytes
    /// collapses into it and an overlay reads them back.
    #[test]
    fn entries_of_256_bytes() {
        let mut w = WriteBuffer::new(&BufferConfig::lines(256, 4));
        assert_eq!(w.insert(0x1000, &[7; 8]), WriteKind::New);
        assert_eq!(w.insert(0x1080, &[9; 8]), WriteKind::Collapse);
        assert_eq!(w.insert(0x1100, &[1; 8]), WriteKind::New);
        assert_eq!((w.units(), w.entries()), (2, 2));
        let mut out = [0u8; 16];
        assert_eq!(w.overlay(0x107C, &mut out), 8);
        assert_eq!(out, [0, 0, 0, 0, 9, 9, 9, 9, 9, 9, 9, 9, 0, 0, 0, 0]);
        let e = w.pop_oldest().unwrap();
        assert_eq!(e.valid, ByteMask::range(0, 8) | ByteMask::range(0x80, 8));
        assert_eq!(w.units(), 1);
    }
}
