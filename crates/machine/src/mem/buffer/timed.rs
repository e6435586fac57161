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
//!   whatever its length, no earlier than the line's data is back from DRAM; a demand fetch
//!   (and, with read-ahead, every request) brings the next line in when it is absent.
//! - [`BufferedMemory::finish`] drains every remaining write: no run ends with writes left in
//!   the buffer (gem5 issue 2493).
//!
//! Requests come in time order (`now` never decreases). The DRAM serves one transaction at a
//! time; `busy_until` is when it is free. Drains the watermark calls for between two requests
//! start when the DRAM is free after the request that raised the level, so they are applied
//! lazily at the next request. The DRAM's timing is a [`Dram`]: fixed times here
//! ([`FixedDram`]), banks with open rows in the memory controller (`mem::dram`).

use super::backing::Backing;
use super::config::BufferConfig;
use super::read_buffer::ReadBuffer;
use super::stats::BufferStats;
use super::write_buffer::{WriteBuffer, WriteKind};
use crate::addr::Addr;

/// The DRAM behind the buffer, as the arbitration sees it: one transaction at a time is
/// started, no earlier than asked; each call returns when its data transfer is done.
/// Implemented by [`FixedDram`] (fixed transaction times, the standalone model) and by the
/// memory controller's banked DRAM with open-row timing (`mem::dram`).
pub trait Dram {
    /// A line read starting no earlier than `t`; returns when the data is back.
    fn read(&mut self, t: u64, line: Addr) -> u64;
    /// A block write starting no earlier than `t`; returns when the write is done.
    fn write(&mut self, t: u64, block: Addr) -> u64;
    /// When the DRAM can start its next transaction (the drains the watermark calls for
    /// between two requests start from here).
    fn free_at(&self) -> u64;
    /// Time to serve a read from the read buffer or the write buffer.
    fn buffer_hit(&self) -> u64;
}

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

/// A DRAM serving one transaction at a time with fixed times.
#[derive(Clone, Copy, Debug, Default)]
pub struct FixedDram {
    pub timing: DramTiming,
    busy_until: u64,
}

impl FixedDram {
    pub fn new(timing: DramTiming) -> FixedDram {
        FixedDram {
            timing,
            busy_until: 0,
        }
    }
}

impl Dram for FixedDram {
    fn read(&mut self, t: u64, _line: Addr) -> u64 {
        self.busy_until = t.max(self.busy_until) + self.timing.read;
        self.busy_until
    }
    fn write(&mut self, t: u64, _block: Addr) -> u64 {
        self.busy_until = t.max(self.busy_until) + self.timing.write;
        self.busy_until
    }
    fn free_at(&self) -> u64 {
        self.busy_until
    }
    fn buffer_hit(&self) -> u64 {
        self.timing.buffer_hit
    }
}

#[cfg(test)]
thread_local! {
    /// A deliberate fault for the test of the tests: reads stop merging the write buffer.
    pub static BREAK_READ_MERGE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether reads merge the write buffer (always, outside the fault test).
#[inline(always)]
fn merging() -> bool {
    #[cfg(test)]
    {
        !BREAK_READ_MERGE.with(|b| b.get())
    }
    #[cfg(not(test))]
    {
        true
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Why {
    Full,
    Watermark,
    Idle,
    Final,
}

/// An interface buffer with its DRAM: `B` holds the contents, `D` times the transactions.
#[derive(Clone, Debug)]
pub struct BufferedMemory<B: Backing, D: Dram = FixedDram> {
    cfg: BufferConfig,
    dram: D,
    wb: WriteBuffer,
    rb: ReadBuffer,
    mem: B,
    /// Time of the last request (no request may come earlier).
    last: u64,
    /// The events of the last request ([`flags`]).
    last_flags: flags::Flags,
    /// When the DRAM finishes the last drain (a write) it was given, and the end of the DRAM's
    /// backlog that a read-ahead delayed: the read-ahead's own transaction and every one
    /// issued while that backlog lasted (queued behind it, so pushed later by its bus time). A
    /// request that needs the DRAM before then waits for that transaction
    /// ([`flags::WRITE_DELAY`], [`flags::READ_AHEAD_DELAY`]).
    write_until: u64,
    read_ahead_until: u64,
    stats: BufferStats,
}

/// The events of one request, one bit each (seed 002's monitorable events, and the two delays
/// the closed loop of issue 16 weighs: a request kept waiting by a write drain, the cost the
/// seed says a watermark trades, and a read kept waiting by a read-ahead, the cost of a
/// prefetch).
pub mod flags {
    /// The bits of one request.
    pub type Flags = u16;
    /// A write that collapsed or merged into a buffered entry (the seed's write-buffer hit).
    pub const WRITE_HIT: Flags = 1 << 0;
    /// A write that found the buffer full (and stalled).
    pub const FULL: Flags = 1 << 1;
    /// A read that took bytes from the write buffer.
    pub const READ_MERGE: Flags = 1 << 2;
    /// A read served from the read buffer.
    pub const READ_BUFFER_HIT: Flags = 1 << 3;
    /// A read-buffer hit on a line read ahead and not used before.
    pub const READ_AHEAD_USED: Flags = 1 << 4;
    /// A write that collapsed (every word already buffered).
    pub const COLLAPSE: Flags = 1 << 5;
    /// A request that needed the DRAM while a read-ahead fetch, or a transaction queued
    /// behind one, still occupied it, or a read kept waiting by drains after a read-ahead held
    /// the DRAM since the previous request (drains run only while the DRAM is free, so the
    /// read-ahead moved them in front of this read): the cost side of read-ahead. Also a
    /// write on a full buffer whose drain had to wait for a read-ahead.
    pub const READ_AHEAD_DELAY: Flags = 1 << 6;
    /// The request was a write.
    pub const WRITE: Flags = 1 << 7;
    /// A request kept waiting by write drains: a read whose DRAM read came after drains the
    /// watermark's priority started for it, or that found the DRAM busy with a drain; a write
    /// that found the buffer full ("writes from the write buffer delaying read accesses" and
    /// "write buffer full", seed 002).
    pub const WRITE_DELAY: Flags = 1 << 8;
    /// A read served from the write buffer alone (every byte buffered): it reached neither
    /// the read buffer nor the DRAM (the closed loop's shadow read lines skip it).
    pub const FROM_WRITE_BUFFER: Flags = 1 << 9;
}

impl<B: Backing> BufferedMemory<B, FixedDram> {
    /// The buffer in front of a DRAM with fixed transaction times.
    pub fn new(cfg: BufferConfig, timing: DramTiming, mem: B) -> Result<Self, String> {
        Self::with_dram(cfg, FixedDram::new(timing), mem)
    }
}

impl<B: Backing, D: Dram> BufferedMemory<B, D> {
    /// The buffer in front of `dram`.
    pub fn with_dram(cfg: BufferConfig, dram: D, mem: B) -> Result<Self, String> {
        cfg.validate()?;
        Ok(BufferedMemory {
            wb: WriteBuffer::new(&cfg),
            rb: ReadBuffer::new(cfg.read_lines, cfg.line_bytes),
            cfg,
            dram,
            mem,
            last: 0,
            last_flags: 0,
            write_until: 0,
            read_ahead_until: 0,
            stats: BufferStats::default(),
        })
    }
    /// The earliest time the next request may arrive (the last request's, or the end of its
    /// full stall: the buffer takes nothing while a write waits for room).
    pub fn next_request(&self) -> u64 {
        self.last
    }
    /// The DRAM model.
    pub fn dram_model(&self) -> &D {
        &self.dram
    }
    /// What the last request did, as [`flags`] bits (the per-request stream an Addie's
    /// multiplexer selects from).
    pub fn last_flags(&self) -> flags::Flags {
        self.last_flags
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
    /// When the DRAM can start its next transaction.
    pub fn busy_until(&self) -> u64 {
        self.dram.free_at()
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
        self.mem.write(e.block, &e.data, e.valid);
        self.rb.update(e.block, &e.data, e.valid);
        let done = self.dram.write(t, e.block);
        self.write_until = done;
        self.behind_read_ahead(t, done);
        self.stats.dram_writes += 1;
        match why {
            Why::Full => self.stats.drains_full += 1,
            Why::Watermark => self.stats.drains_watermark += 1,
            Why::Idle => self.stats.drains_idle += 1,
            Why::Final => self.stats.drains_final += 1,
        }
        done
    }

    /// A transaction issued at `t` and done at `done`: when a read-ahead's backlog still held
    /// the DRAM at `t`, this one waited behind it and the backlog now lasts until `done`.
    /// (A drain held back by a read-ahead holds back the read that waits for the drain: in
    /// FFT's copy phase on `elan` that indirect wait is most of read-ahead's cost; see
    /// docs/memctl-phases.md.)
    #[inline]
    fn behind_read_ahead(&mut self, t: u64, done: u64) {
        if t < self.read_ahead_until {
            self.read_ahead_until = self.read_ahead_until.max(done);
        }
    }

    /// The drains the arbiter starts before `now` (DRAM free, buffer at or above the
    /// watermark, or idle draining on).
    fn catch_up(&mut self, now: u64) {
        loop {
            let start = self.dram.free_at().max(self.last);
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
        self.last_flags = flags::WRITE;
        let mut t = now;
        if !self.wb.fits(a, data.len()) {
            self.stats.full += 1;
            self.last_flags |= flags::FULL | flags::WRITE_DELAY;
            if self.read_ahead_until > now {
                self.stats.read_ahead_delays += 1;
                self.last_flags |= flags::READ_AHEAD_DELAY;
            }
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
                self.last_flags |= flags::WRITE_HIT;
            }
            WriteKind::Collapse => {
                self.stats.collapses += 1;
                self.stats.write_hits += 1;
                self.last_flags |= flags::WRITE_HIT | flags::COLLAPSE;
            }
        }
        self.last = t;
        Ok(t)
    }

    /// Fetches `line` from DRAM into the read buffer no earlier than `t`; returns when done.
    fn fetch(&mut self, t: u64, line: Addr, prefetch: bool) -> u64 {
        let mut data = vec![0; self.cfg.line_bytes as usize];
        self.mem.read(line, &mut data);
        let done = self.dram.read(t, line);
        self.stats.dram_reads += 1;
        if prefetch {
            self.stats.read_ahead_fetches += 1;
            self.read_ahead_until = self.read_ahead_until.max(done);
        } else {
            self.behind_read_ahead(t, done);
        }
        if prefetch && !self.cfg.read_ahead_keeps {
            // The control experiment: the DRAM read happened, its line is dropped unused.
            self.stats.read_ahead_unused += 1;
            return done;
        }
        if let Some(ev) = self.rb.fill(line, data, prefetch, done) {
            if ev.prefetched && !ev.used {
                self.stats.read_ahead_unused += 1;
            }
        }
        done
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
        let prev = self.last;
        self.catch_up(now);
        self.last = now;
        self.stats.reads += 1;
        self.last_flags = 0;
        // Every byte buffered: served from the write buffer alone.
        let mut probe = vec![0u8; out.len()];
        if merging() && self.wb.overlay(a, &mut probe) == out.len() {
            out.copy_from_slice(&probe);
            self.stats.read_merges += 1;
            self.stats.reads_from_write_buffer += 1;
            self.last_flags = flags::READ_MERGE | flags::FROM_WRITE_BUFFER;
            return Ok(now + self.dram.buffer_hit());
        }
        let done = match self.rb.hit(a, out) {
            Some((prefetched, used, ready)) => {
                self.stats.read_buffer_hits += 1;
                self.last_flags |= flags::READ_BUFFER_HIT;
                if prefetched && !used {
                    self.stats.read_ahead_used += 1;
                    self.last_flags |= flags::READ_AHEAD_USED;
                }
                // A line still in flight serves the request when its data arrives.
                (now + self.dram.buffer_hit()).max(ready)
            }
            None => {
                // Kept waiting by a transaction the buffer gave the DRAM before it came.
                if self.write_until > now {
                    self.last_flags |= flags::WRITE_DELAY;
                }
                let mut ra_delay = self.read_ahead_until > now;
                // The write buffer's priority at the watermark, then the read around the rest.
                let mut t = now;
                while self.wb.units() >= self.cfg.watermark {
                    t = self.drain_one(t, Why::Watermark);
                    self.last_flags |= flags::WRITE_DELAY;
                }
                if self.last_flags & flags::WRITE_DELAY != 0 {
                    self.stats.write_delays += 1;
                    // Drains left for this read to wait on, after a read-ahead held the DRAM
                    // since the last request: the arbiter drains only while the DRAM is free,
                    // so the read-ahead's bus time is drain time moved in front of this read.
                    ra_delay |= self.read_ahead_until > prev;
                }
                if ra_delay {
                    self.stats.read_ahead_delays += 1;
                    self.last_flags |= flags::READ_AHEAD_DELAY;
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
        if merging() && self.wb.overlay(a, out) > 0 {
            self.stats.read_merges += 1;
            self.last_flags |= flags::READ_MERGE;
        }
        Ok(done)
    }

    /// The same DRAM without the buffer (the baseline the buffer is measured against): the
    /// write goes to DRAM at once and is done when DRAM is (nothing posted, merged or
    /// collapsed); returns that time.
    pub fn write_direct(&mut self, now: u64, a: Addr, data: &[u8]) -> Result<u64, String> {
        self.in_order(now)?;
        self.wb.check(a, data.len())?;
        self.last = now;
        self.stats.writes += 1;
        self.stats.new_entries += 1;
        self.last_flags = flags::WRITE;
        self.mem
            .write(a, data, super::mask::ByteMask::range(0, data.len() as u32));
        self.stats.dram_writes += 1;
        Ok(self.dram.write(now, a))
    }

    /// A read without the buffer: one DRAM read of the line; returns when the data is back.
    pub fn read_direct(&mut self, now: u64, a: Addr, out: &mut [u8]) -> Result<u64, String> {
        self.in_order(now)?;
        self.last = now;
        self.stats.reads += 1;
        self.last_flags = 0;
        self.mem.read(a, out);
        self.stats.dram_reads += 1;
        Ok(self.dram.read(now, self.rb.line_of(a)))
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
        Ok(t.max(self.dram.free_at()))
    }
}
