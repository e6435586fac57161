//! The buffer in front of a DRAM with fixed transaction times: the arbitration of seed 002
//! ("Write buffer hit monitoring", "Write buffer full monitoring") as a timed model.
//!
//! - Writes are **posted with zero wait** while they find room; a write that does not fit
//!   stalls while the oldest entries drain, one DRAM write each, until it does.
//! - **Watermark**: below it the buffer accumulates (and, with `drain_when_idle`, uses DRAM
//!   time no request wants); at or above it the buffer has **priority**: it drains before any
//!   DRAM read until it is below the watermark again.
//! - **Read-around-write**: below the watermark a read goes to DRAM ahead of the queued writes.
//! - **Read merge**: a read takes DRAM (or read-buffer) data with the buffered bytes merged
//!   over it, never a flush; a read whose every byte is buffered needs no DRAM at all.
//! - **Read buffer**: a request that finds its line there is served from it and scored once,
//!   whatever its length; a demand fetch (and, with read-ahead, every request) brings the next
//!   line in when it is absent.
//! - [`BufferedMemory::finish`] drains every remaining write: no run ends with writes left in
//!   the buffer (gem5 issue 2493).
//!
//! Requests come in time order (`now` never decreases). The DRAM serves one transaction at a
//! time; `busy_until` is when it is free. Drains the watermark calls for between two requests
//! start when the DRAM is free after the request that raised the level, so they are applied
//! lazily at the next request. Open-row timing and banks are the memory controller's (issue 16
//! item 1) and not modelled here.

use super::backing::Backing;
use super::config::BufferConfig;
use super::read_buffer::ReadBuffer;
use super::stats::BufferStats;
use super::write_buffer::{WriteBuffer, WriteKind};
use crate::addr::Addr;

/// Fixed transaction times, in cycles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DramTiming {
    /// One line read.
    pub read: u64,
    /// One block write (a drained entry).
    pub write: u64,
    /// A read served from the read buffer or the write buffer.
    pub buffer_hit: u64,
}

impl Default for DramTiming {
    fn default() -> DramTiming {
        DramTiming {
            read: 12,
            write: 10,
            buffer_hit: 2,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Why {
    Full,
    Watermark,
    Idle,
    Final,
}

/// An interface buffer with its DRAM.
#[derive(Clone, Debug)]
pub struct BufferedMemory<B: Backing> {
    cfg: BufferConfig,
    timing: DramTiming,
    wb: WriteBuffer,
    rb: ReadBuffer,
    mem: B,
    busy_until: u64,
    /// Time of the last request (no request may come earlier).
    last: u64,
    stats: BufferStats,
}

impl<B: Backing> BufferedMemory<B> {
    pub fn new(cfg: BufferConfig, timing: DramTiming, mem: B) -> Result<Self, String> {
        cfg.validate()?;
        Ok(BufferedMemory {
            wb: WriteBuffer::new(&cfg),
            rb: ReadBuffer::new(cfg.read_lines, cfg.line_bytes),
            cfg,
            timing,
            mem,
            busy_until: 0,
            last: 0,
            stats: BufferStats::default(),
        })
    }
    pub fn stats(&self) -> &BufferStats {
        &self.stats
    }
    pub fn config(&self) -> &BufferConfig {
        &self.cfg
    }
    pub fn write_buffer(&self) -> &WriteBuffer {
        &self.wb
    }
    /// The DRAM contents (buffered writes not included).
    pub fn dram(&self) -> &B {
        &self.mem
    }
    /// When the DRAM finishes its last transaction.
    pub fn busy_until(&self) -> u64 {
        self.busy_until
    }
    /// Changes the watermark (the closed loop of issue 16 item 6 will call this).
    pub fn set_watermark(&mut self, w: usize) -> Result<(), String> {
        BufferConfig {
            watermark: w,
            ..self.cfg
        }
        .validate()?;
        self.cfg.watermark = w;
        Ok(())
    }
    /// Turns read-ahead on or off.
    pub fn set_read_ahead(&mut self, on: bool) {
        self.cfg.read_ahead = on;
    }

    fn in_order(&mut self, now: u64) -> Result<(), String> {
        if now < self.last {
            return Err(format!(
                "memory buffer: request at cycle {now} after one at cycle {}",
                self.last
            ));
        }
        Ok(())
    }

    /// Drains the oldest entry, starting no earlier than `t`; returns when the write is done.
    fn drain_one(&mut self, t: u64, why: Why) -> u64 {
        let e = self.wb.pop_oldest().expect("drain of an empty buffer");
        let start = t.max(self.busy_until);
        self.mem.write(e.block, &e.data, e.valid);
        self.rb.update(e.block, &e.data, e.valid);
        self.busy_until = start + self.timing.write;
        self.stats.dram_writes += 1;
        match why {
            Why::Full => self.stats.drains_full += 1,
            Why::Watermark => self.stats.drains_watermark += 1,
            Why::Idle => self.stats.drains_idle += 1,
            Why::Final => self.stats.drains_final += 1,
        }
        self.busy_until
    }

    /// The drains the arbiter starts before `now` (DRAM free, buffer at or above the
    /// watermark, or idle draining on).
    fn catch_up(&mut self, now: u64) {
        loop {
            let start = self.busy_until.max(self.last);
            if start >= now || self.wb.is_empty() {
                return;
            }
            let why = if self.wb.units() >= self.cfg.watermark {
                Why::Watermark
            } else if self.cfg.drain_when_idle {
                Why::Idle
            } else {
                return;
            };
            self.drain_one(start, why);
        }
    }

    /// A write request of `data` at `a` (within one block) arriving at `now`; returns the cycle
    /// the buffer accepted it (`now` unless it found the buffer full).
    pub fn write(&mut self, now: u64, a: Addr, data: &[u8]) -> Result<u64, String> {
        self.in_order(now)?;
        self.wb.check(a, data.len())?;
        self.catch_up(now);
        self.last = now;
        self.stats.writes += 1;
        let mut t = now;
        if !self.wb.fits(a, data.len()) {
            self.stats.full += 1;
            while !self.wb.fits(a, data.len()) {
                t = self.drain_one(t, Why::Full);
            }
            self.stats.full_stall_cycles += t - now;
        }
        match self.wb.insert(a, data) {
            WriteKind::New => self.stats.new_entries += 1,
            WriteKind::Merge => {
                self.stats.merges += 1;
                self.stats.write_hits += 1;
            }
            WriteKind::Collapse => {
                self.stats.collapses += 1;
                self.stats.write_hits += 1;
            }
        }
        self.last = t;
        Ok(t)
    }

    /// Fetches `line` from DRAM into the read buffer no earlier than `t`; returns when done.
    fn fetch(&mut self, t: u64, line: Addr, prefetch: bool) -> u64 {
        let mut data = vec![0; self.cfg.line_bytes as usize];
        self.mem.read(line, &mut data);
        let start = t.max(self.busy_until);
        self.busy_until = start + self.timing.read;
        self.stats.dram_reads += 1;
        if prefetch {
            self.stats.read_ahead_fetches += 1;
        }
        if let Some(ev) = self.rb.fill(line, data, prefetch) {
            if ev.prefetched && !ev.used {
                self.stats.read_ahead_unused += 1;
            }
        }
        self.busy_until
    }

    /// A read request of `out.len()` bytes at `a` (within one read-buffer line) arriving at
    /// `now`; fills `out` and returns the cycle the data is back.
    pub fn read(&mut self, now: u64, a: Addr, out: &mut [u8]) -> Result<u64, String> {
        self.in_order(now)?;
        let line = self.rb.line_of(a);
        if out.is_empty() || self.rb.line_of(a + out.len() as Addr - 1) != line {
            return Err(format!(
                "memory buffer: a {}-byte read at {a:#x} does not lie within one {}-byte line",
                out.len(),
                self.cfg.line_bytes
            ));
        }
        self.catch_up(now);
        self.last = now;
        self.stats.reads += 1;
        // Every byte buffered: served from the write buffer alone.
        let mut probe = vec![0u8; out.len()];
        if self.wb.overlay(a, &mut probe) == out.len() {
            out.copy_from_slice(&probe);
            self.stats.read_merges += 1;
            self.stats.reads_from_write_buffer += 1;
            return Ok(now + self.timing.buffer_hit);
        }
        let done = match self.rb.hit(a, out) {
            Some((prefetched, used)) => {
                self.stats.read_buffer_hits += 1;
                if prefetched && !used {
                    self.stats.read_ahead_used += 1;
                }
                now + self.timing.buffer_hit
            }
            None => {
                // The write buffer's priority at the watermark, then the read around the rest.
                let mut t = now;
                while self.wb.units() >= self.cfg.watermark {
                    t = self.drain_one(t, Why::Watermark);
                }
                let done = self.fetch(t, line, false);
                self.rb.hit(a, out).expect("the line was just filled");
                done
            }
        };
        let next = line + self.cfg.line_bytes as Addr;
        if self.cfg.read_ahead && !self.rb.contains(next) {
            self.fetch(now, next, true);
        }
        if self.wb.overlay(a, out) > 0 {
            self.stats.read_merges += 1;
        }
        Ok(done)
    }

    /// The explicit end-of-run drain: every buffered write goes to DRAM; read-ahead lines
    /// never used are counted. Returns when the DRAM is done.
    pub fn finish(&mut self, now: u64) -> Result<u64, String> {
        self.in_order(now)?;
        self.catch_up(now);
        self.last = now;
        let mut t = now;
        while !self.wb.is_empty() {
            t = self.drain_one(t, Why::Final);
        }
        self.stats.read_ahead_unused += self.rb.take_unused_prefetches();
        Ok(t.max(self.busy_until))
    }
}
