//! What the buffer reads from and drains into: DRAM's contents.

use super::mask::ByteMask;
use crate::addr::Addr;
use rustc_hash::FxHashMap;

/// A byte-addressed memory behind the buffer.
pub trait Backing {
    fn read(&mut self, a: Addr, out: &mut [u8]);
    /// Writes the bytes of `data` whose bit is set in `valid` (bit i = byte i).
    fn write(&mut self, a: Addr, data: &[u8], valid: ByteMask);
}

const PAGE: u64 = 4096;

/// A sparse zero-initialized memory (the DRAM contents of the standalone model and the
/// reference of the tests).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SparseMemory {
    pages: FxHashMap<u64, Box<[u8]>>,
}

impl SparseMemory {
    pub fn new() -> SparseMemory {
        SparseMemory::default()
    }
    pub fn get(&self, a: Addr) -> u8 {
        self.pages
            .get(&(a / PAGE))
            .map_or(0, |p| p[(a % PAGE) as usize])
    }
    pub fn set(&mut self, a: Addr, v: u8) {
        self.pages
            .entry(a / PAGE)
            .or_insert_with(|| vec![0; PAGE as usize].into_boxed_slice())[(a % PAGE) as usize] = v;
    }
}

impl Backing for SparseMemory {
    fn read(&mut self, a: Addr, out: &mut [u8]) {
        for (i, b) in out.iter_mut().enumerate() {
            *b = self.get(a + i as Addr);
        }
    }
    fn write(&mut self, a: Addr, data: &[u8], valid: ByteMask) {
        for (i, &b) in data.iter().enumerate() {
            if valid.get(i as u64) {
                self.set(a + i as Addr, b);
            }
        }
    }
}
