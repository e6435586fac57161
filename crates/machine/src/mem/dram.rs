//! DRAM banks with open-row timing behind a memory controller (issue 16 item 1).
//!
//! Address mapping: consecutive rows of `row_bytes` go to consecutive banks (row-interleaved,
//! the mapping DRAMsim3 calls `rochrababgco` reduced to one channel and rank). Each bank keeps
//! its last row open (open-page policy, gem5's `page_policy = open`). A transaction to a bank:
//! - **row hit** (its row is open): column command, data after tCAS;
//! - **row miss** (the bank is closed, the first access): activate, tRCD + tCAS;
//! - **row conflict** (another row is open): precharge then activate, tRP + tRCD + tCAS.
//!
//! The data then crosses the shared data bus for tBURST, in the order the controller issued
//! the transactions; a bank is busy until its data is out, plus tWR after a write. Commands
//! are issued in order (first come first served: the buffer's arbitration decides the order,
//! the DRAM does not reorder), so banks overlap their row preparation but not their data.

use crate::addr::Addr;
use crate::mem::buffer::Dram;
use engine::Tick;

/// Timings in ticks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DramTicks {
    pub t_rcd: Tick,
    pub t_cas: Tick,
    pub t_rp: Tick,
    pub t_burst: Tick,
    pub t_wr: Tick,
    pub t_buffer: Tick,
}

/// Row-buffer outcomes and transactions.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct DramStats {
    pub reads: u64,
    pub writes: u64,
    pub row_hits: u64,
    pub row_misses: u64,
    pub row_conflicts: u64,
}

#[derive(Clone, Copy, Debug, Default)]
struct Bank {
    open: Option<u64>,
    free: Tick,
}

/// The banks of one controller.
#[derive(Clone, Debug)]
pub struct Banks {
    t: DramTicks,
    row_shift: u32,
    bank_mask: u64,
    bank_bits: u32,
    banks: Vec<Bank>,
    /// When the data bus is free (and the controller can issue its next transaction).
    bus_free: Tick,
    stats: DramStats,
}

impl Banks {
    /// `banks` banks (a power of two) of rows of `row_bytes` (a power of two).
    pub fn new(banks: u32, row_bytes: u64, t: DramTicks) -> Banks {
        Banks {
            t,
            row_shift: row_bytes.trailing_zeros(),
            bank_mask: banks as u64 - 1,
            bank_bits: banks.trailing_zeros(),
            banks: vec![Bank::default(); banks as usize],
            bus_free: 0,
            stats: DramStats::default(),
        }
    }
    pub fn stats(&self) -> &DramStats {
        &self.stats
    }
    /// (bank, row) of an address.
    pub fn locate(&self, a: Addr) -> (usize, u64) {
        let r = a >> self.row_shift;
        ((r & self.bank_mask) as usize, r >> self.bank_bits)
    }
    /// One transaction at `a` issued no earlier than `t`; returns when its data is done.
    fn access(&mut self, t: Tick, a: Addr, write: bool) -> Tick {
        let (b, row) = self.locate(a);
        let tm = self.t;
        let bank = &mut self.banks[b];
        // In-order issue: no transaction starts before the previous one's data began.
        let start = t
            .max(bank.free)
            .max(self.bus_free.saturating_sub(tm.t_burst));
        let prep = match bank.open {
            Some(r) if r == row => {
                self.stats.row_hits += 1;
                0
            }
            None => {
                self.stats.row_misses += 1;
                tm.t_rcd
            }
            Some(_) => {
                self.stats.row_conflicts += 1;
                tm.t_rp + tm.t_rcd
            }
        };
        let data = (start + prep + tm.t_cas).max(self.bus_free);
        let done = data + tm.t_burst;
        self.bus_free = done;
        bank.open = Some(row);
        bank.free = done + if write { tm.t_wr } else { 0 };
        if write {
            self.stats.writes += 1;
        } else {
            self.stats.reads += 1;
        }
        done
    }
}

impl Dram for Banks {
    fn read(&mut self, t: u64, line: Addr) -> u64 {
        self.access(t, line, false)
    }
    fn write(&mut self, t: u64, block: Addr) -> u64 {
        self.access(t, block, true)
    }
    fn free_at(&self) -> u64 {
        self.bus_free
    }
    fn buffer_hit(&self) -> u64 {
        self.t.t_buffer
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: DramTicks = DramTicks {
        t_rcd: 3,
        t_cas: 2,
        t_rp: 4,
        t_burst: 1,
        t_wr: 5,
        t_buffer: 1,
    };

    /// Hit, miss and conflict cost exactly their datasheet sums; the mapping interleaves rows.
    #[test]
    fn row_hit_miss_conflict_timings() {
        let mut d = Banks::new(4, 1024, T);
        assert_eq!(d.locate(0), (0, 0));
        assert_eq!(d.locate(1024), (1, 0));
        assert_eq!(d.locate(4096), (0, 1));
        // Closed bank: tRCD + tCAS + tBURST.
        assert_eq!(d.read(100, 0), 100 + 3 + 2 + 1);
        // Same row later: tCAS + tBURST.
        assert_eq!(d.read(200, 64), 200 + 2 + 1);
        // Other row of bank 0: tRP + tRCD + tCAS + tBURST.
        assert_eq!(d.read(300, 4096), 300 + 4 + 3 + 2 + 1);
        assert_eq!(
            *d.stats(),
            DramStats {
                reads: 3,
                row_hits: 1,
                row_misses: 1,
                row_conflicts: 1,
                writes: 0
            }
        );
        // A write keeps its bank busy tWR after the data: a read right after waits.
        let w = d.write(400, 4096);
        assert_eq!(w, 400 + 2 + 1);
        assert_eq!(d.read(w, 4096 + 64), w + 5 + 2 + 1);
    }

    /// Two banks overlap their activation; the data bus serializes the transfers.
    #[test]
    fn banks_overlap_but_data_serializes() {
        let mut d = Banks::new(4, 1024, T);
        let a = d.read(0, 0); // bank 0: 0 + 3 + 2 + 1 = 6
        let b = d.read(0, 1024); // bank 1 starts at 5 (bus free at 6 minus tBURST): 5 + 6 = 11
        assert_eq!(a, 6);
        assert_eq!(b, 11);
        // Versus one bank: a conflict after the first.
        let mut e = Banks::new(1, 1024, T);
        e.read(0, 0);
        assert_eq!(e.read(0, 1024), 6 + 4 + 3 + 2 + 1);
    }
}
