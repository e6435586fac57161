//! The daisy chain's arithmetic (patent: "Mode 0 ... each UPC P or UPC L2 places its data on
//! the daisy chain at a specific time"): where each unit sits, when it sees the framing count,
//! on which x2 cycle each of its counters is transferred, and how long it waits before
//! answering a start or stop.
//!
//! The chain runs from UPC_C through the UPC_Ps of cores 0..N-1, then the UPC_L2s of slices
//! 0..M-1, and back; one register per unit, so one x2 cycle per hop (patent: "implemented
//! using only registers in the UPC units without extra pipeline latches"). UPC_C puts the
//! frame count (0..period-1, 400 on the chip) on the upper bits; the unit at position p sees
//! count 0 of a frame `p + 1` x2 cycles after UPC_C sent it. UPC_P k sends on counts
//! 16k..16k+15, UPC_L2 j on the 8 counts after the cores' (16 N + 8 j ..), one data flit of
//! four counters on every other count (so counter i goes on count offset + 2 (i / 4)).

use engine::Tick;

/// Counts a UPC_P's packet spans, and a UPC_L2's.
pub const P_SLOT: u64 = 16;
pub const L2_SLOT: u64 = 8;
/// Counters per data flit.
pub const PER_FLIT: usize = 4;

/// The chain of one chip.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Chain {
    pub cores: usize,
    pub slices: usize,
    /// Frame length in x2 cycles (400 on the chip; `pmusim study upc` varies it).
    pub period: u64,
    /// Ticks per x2 cycle.
    pub x2: Tick,
}

impl Chain {
    /// Units on the chain (hops from UPC_C round to itself, less one).
    pub fn units(&self) -> usize {
        self.cores + self.slices
    }
    /// Chain position of core `k` (`slice = false`) or slice `k`.
    pub fn pos(&self, slice: bool, k: usize) -> usize {
        if slice {
            self.cores + k
        } else {
            k
        }
    }
    /// The frame count on which the unit at `pos` starts its packet (taken modulo a frame
    /// shorter than the slot map, which only the study asks for).
    pub fn slot(&self, pos: usize) -> u64 {
        let s = if pos < self.cores {
            P_SLOT * pos as u64
        } else {
            P_SLOT * self.cores as u64 + L2_SLOT * (pos - self.cores) as u64
        };
        s % self.period
    }
    /// The frame counts a full slot map needs (400 for 17 cores and 16 slices).
    pub fn slots_needed(&self) -> u64 {
        P_SLOT * self.cores as u64 + L2_SLOT * self.slices as u64
    }
    /// Offset in x2 cycles, within a frame as UPC_C sends it, at which the unit at `pos`
    /// transfers its counter `i`: the hop delay to it plus its slot plus the flit.
    pub fn offset(&self, pos: usize, i: usize) -> u64 {
        pos as u64 + 1 + self.slot(pos) + 2 * (i / PER_FLIT) as u64
    }
    /// The first tick at or after `t` at which counter `i` of the unit at `pos` transfers.
    pub fn next_xfer(&self, pos: usize, i: usize, t: Tick) -> Tick {
        let off = self.offset(pos, i) * self.x2;
        let p = self.period * self.x2;
        if t <= off {
            off
        } else {
            off + (t - off).div_ceil(p) * p
        }
    }
    /// x2 cycles from a unit's transfer until the near-overflow packet UPC_C sends after its
    /// SRAM update is back at that unit: to UPC_C (units - pos hops), then round to the unit
    /// (pos + 1 hops).
    pub fn arm_delay(&self) -> u64 {
        self.units() as u64 + 1
    }
    /// x2 cycles the unit at `pos` waits after seeing the start/stop bit, so that every unit
    /// acts on the same x2 cycle (the patent's position-dependent delay, "hard coded into each
    /// instantiation"): it sees the bit `pos + 1` after UPC_C sent it and acts `units` after.
    pub fn start_delay(&self, pos: usize) -> u64 {
        self.units() as u64 - pos as u64 - 1
    }
    /// x2 cycles from UPC_C sending a start or stop to every unit acting on it.
    pub fn start_latency(&self) -> u64 {
        self.units() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seed's slot map: 17 cores on counts 16k.., 16 slices on 272 + 8j.., 400 in all.
    #[test]
    fn slot_map_of_the_chip() {
        let c = Chain {
            cores: 17,
            slices: 16,
            period: 400,
            x2: 2,
        };
        assert_eq!(c.slots_needed(), 400);
        assert_eq!(c.slot(0), 0);
        assert_eq!(c.slot(16), 256);
        assert_eq!(c.slot(17), 272);
        assert_eq!(c.slot(32), 392);
        // Counter 23 of core 3: hop 4, slot 48, flit 5 -> offset 62.
        assert_eq!(c.offset(3, 23), 4 + 48 + 10);
        // Slice 15's last flit (counter 15): hop 33, slot 392, flit 3.
        assert_eq!(c.offset(32, 15), 33 + 392 + 6);
        assert_eq!(c.next_xfer(3, 23, 0), 62 * 2);
        assert_eq!(c.next_xfer(3, 23, 62 * 2 + 1), (62 + 400) * 2);
        assert_eq!(c.next_xfer(3, 23, (62 + 400) * 2), (62 + 400) * 2);
        // Every unit acts on a start 33 x2 cycles after UPC_C sent it.
        for pos in 0..33 {
            assert_eq!(pos as u64 + 1 + c.start_delay(pos), c.start_latency());
        }
    }
}
