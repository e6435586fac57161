//! The read buffer (seed 002: "storage for eight words ... divided into four word blocks known
//! as cache lines", with optional read-ahead of the following line): a few whole lines read
//! from DRAM, replaced least recently used. It caches DRAM, not the write buffer: a drain
//! updates any line it overlaps, and reads merge the write buffer over it, so it never serves
//! stale data.
//!
//! A line is in the buffer from the moment its DRAM read is issued, with the time its data
//! arrives (`ready`): a request that finds a line still in flight (a read-ahead issued behind
//! the demand read it followed, or another requester's demand read) waits for the data, as an
//! MSHR merges a request into an outstanding miss. Serving it earlier would credit read-ahead
//! with data the DRAM has not delivered yet.

use super::mask::ByteMask;
use crate::addr::Addr;

/// One buffered line.
#[derive(Clone, Debug)]
pub struct Line {
    pub line: Addr,
    pub data: Vec<u8>,
    /// Fetched by read-ahead, not by a request.
    pub prefetched: bool,
    /// A request has hit it (for read-ahead lines: the read-ahead was used).
    pub used: bool,
    /// When the line's data is back from DRAM (cycles of the buffer's clock).
    pub ready: u64,
    stamp: u64,
}

/// The read buffer's lines.
#[derive(Clone, Debug)]
pub struct ReadBuffer {
    line_bytes: u32,
    cap: usize,
    lines: Vec<Line>,
    clock: u64,
}

impl ReadBuffer {
    pub fn new(cap: usize, line_bytes: u32) -> ReadBuffer {
        ReadBuffer {
            line_bytes,
            cap,
            lines: Vec::with_capacity(cap),
            clock: 0,
        }
    }
    pub fn line_of(&self, a: Addr) -> Addr {
        a & !(self.line_bytes as Addr - 1)
    }
    pub fn contains(&self, line: Addr) -> bool {
        self.lines.iter().any(|l| l.line == line)
    }
    /// A request hits `line`: copies `out.len()` bytes from `a` and returns the line's state
    /// before the hit (`Some((prefetched, used, ready))`), or `None` on a miss.
    pub fn hit(&mut self, a: Addr, out: &mut [u8]) -> Option<(bool, bool, u64)> {
        let line = self.line_of(a);
        self.clock += 1;
        let l = self.lines.iter_mut().find(|l| l.line == line)?;
        let off = (a - line) as usize;
        out.copy_from_slice(&l.data[off..off + out.len()]);
        let before = (l.prefetched, l.used, l.ready);
        l.used = true;
        l.stamp = self.clock;
        Some(before)
    }
    /// Fills a line (demand or read-ahead) whose data is back at `ready`, evicting the least
    /// recently used; returns the evicted line.
    pub fn fill(
        &mut self,
        line: Addr,
        data: Vec<u8>,
        prefetched: bool,
        ready: u64,
    ) -> Option<Line> {
        debug_assert!(!self.contains(line));
        self.clock += 1;
        let new = Line {
            line,
            data,
            prefetched,
            used: !prefetched,
            ready,
            stamp: self.clock,
        };
        if self.lines.len() < self.cap {
            self.lines.push(new);
            return None;
        }
        let v = (0..self.lines.len()).min_by_key(|&i| self.lines[i].stamp)?;
        Some(std::mem::replace(&mut self.lines[v], new))
    }
    /// A drain wrote `data` (valid bytes `valid`) at `block`: keep the copies equal to DRAM.
    pub fn update(&mut self, block: Addr, data: &[u8], valid: ByteMask) {
        for l in &mut self.lines {
            let lo = block.max(l.line);
            let hi = (block + data.len() as Addr).min(l.line + self.line_bytes as Addr);
            for x in lo..hi {
                if valid.get(x - block) {
                    l.data[(x - l.line) as usize] = data[(x - block) as usize];
                }
            }
        }
    }
    /// Read-ahead lines still resident and never used; their flags are cleared so they are
    /// reported once.
    pub fn take_unused_prefetches(&mut self) -> u64 {
        let mut n = 0;
        for l in &mut self.lines {
            if l.prefetched && !l.used {
                n += 1;
                l.used = true;
            }
        }
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn lru_hits_and_updates() {
        let mut r = ReadBuffer::new(2, 16);
        assert!(r.fill(0x100, vec![1; 16], false, 5).is_none());
        assert!(r.fill(0x110, vec![2; 16], true, 9).is_none());
        let mut b = [0u8; 4];
        assert_eq!(r.hit(0x114, &mut b), Some((true, false, 9)));
        assert_eq!(b, [2; 4]);
        assert_eq!(r.hit(0x118, &mut b), Some((true, true, 9)));
        // 0x100 is now least recently used.
        let ev = r.fill(0x200, vec![3; 16], true, 12).unwrap();
        assert_eq!(ev.line, 0x100);
        assert_eq!(r.hit(0x100, &mut b), None);
        r.update(0x110, &[9; 16], ByteMask::range(1, 1));
        assert_eq!(r.hit(0x110, &mut b), Some((true, true, 9)));
        assert_eq!(b, [2, 9, 2, 2]);
        assert_eq!(r.take_unused_prefetches(), 1); // 0x200
        assert_eq!(r.take_unused_prefetches(), 0);
    }
}
