//! The four general-purpose counters of the Counters & Interrupts circuit (seed 000, 4.3.3,
//! 4.4.4, Table 4.5) and the Pipeline Status prescaler (4.3.2, Tables 4.2 and 4.3).
//!
//! Each counter is 32 bits, counts on the 50 MHz monitor clock, can be preloaded (a negative
//! threshold makes it overflow after exactly that many events), has a reset-on-read address,
//! and raises a maskable interrupt on overflow (GPCMx bit 15).
//!
//! Pipeline status: the PS circuit delivers 0, 1 or 2 selected events per 75 MHz cycle into a
//! hidden 2-bit accumulator; each accumulator overflow increments the counter, so the counter
//! reads a quarter of the events (rounded down, with up to 3 events left in the accumulator).
//! pmusim keeps the exact number of selected events beside it (`ps_exact`), so every prescaled
//! count is reported with its error. Choice: the count-enable gates the events *before* the
//! accumulator (events while disabled are not accumulated).

use super::regs::{ps_restarts, ps_states, Field};
use crate::counter::Counter;

pub const EV_NOTHING: u8 = 0;
pub const EV_ALWAYS: u8 = 1;
pub const EV_PIPELINE: u8 = 2;
pub const EV_INTERRUPT: u8 = 3;
pub const EV_READ: u8 = 4;
pub const EV_READ_EX: u8 = 5;
pub const EV_READ_ANY: u8 = 6;
pub const EV_OWNERSHIP: u8 = 7;
pub const EV_OWNERSHIP_CANCELLED: u8 = 8;
pub const EV_NACK_RETRIES: u8 = 9;
pub const EV_NACK_CYCLES: u8 = 0xA;
pub const EV_LAST_LATENCY: u8 = 0xB;
pub const EV_BUS_ACTIVITY: u8 = 0xC;
pub const EV_BUS_REQUEST: u8 = 0xD;
pub const EV_INVAL_HITS: u8 = 0xE;
pub const EV_INVAL_MISSES: u8 = 0xF;

const F_ENABLE: Field = Field::new("enable", 23, 23, "");
const F_PS: Field = Field::new("ps", 22, 16, "");
const F_IRQ: Field = Field::new("interrupt", 15, 15, "");
const F_EVENT: Field = Field::new("event", 14, 11, "");

/// The slot of the card's pipeline-status stream (`Card::cur_ps`, indexed by `Ps` code) that
/// carries the restart signal (`regs::ps_restarts`): code 0 is no state, so a
/// `Mode::ps_mask` bit selects the restarts as it selects a state, at no cost.
pub const RESTART_SLOT: usize = 0;

/// The card's view of the pipeline-status stream: cycles by state, restarts in
/// `RESTART_SLOT` (`Observation::Pipeline`'s `cycles` and `restarts`).
#[inline(always)]
pub fn ps_stream(cycles: &[u64; 16], restarts: u64) -> [u64; 16] {
    let mut s = *cycles;
    s[RESTART_SLOT] = restarts;
    s
}

/// A GPCMx value, decoded once per register write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mode {
    pub enable: bool,
    pub ps: u8,
    /// Bit mask over `Ps` codes selected by PS[6..0].
    pub ps_mask: u16,
    pub interrupt: bool,
    pub event: u8,
    /// Bit 10: count low-to-high transitions instead of cycles high.
    pub edges: bool,
    /// Bits 9..0: the count-enable circuit.
    pub enable_bits: u32,
}

impl Mode {
    pub fn decode(v: u32) -> Mode {
        let ps = F_PS.get(v) as u8;
        Mode {
            enable: F_ENABLE.get(v) != 0,
            ps,
            ps_mask: ps_states(ps as u32)
                .iter()
                .fold(0, |m, s| m | 1 << s.code())
                | (ps_restarts(ps as u32) as u16) << RESTART_SLOT,
            interrupt: F_IRQ.get(v) != 0,
            event: F_EVENT.get(v) as u8,
            edges: v & (1 << 10) != 0,
            enable_bits: v & 0x3FF,
        }
    }
}

/// One general-purpose counter with its prescaler state.
#[derive(Clone, Debug)]
pub struct Gpc {
    pub mode: Mode,
    pub counter: Counter,
    /// The hidden 2-bit PS accumulator.
    pub acc: u8,
    /// Exact selected pipeline events while enabled (what a full-rate counter would read).
    pub ps_exact: u64,
    /// Events 7/8: counts while an upgrade is outstanding, committed when its outcome is known.
    pub tentative: u64,
}

impl Default for Gpc {
    fn default() -> Self {
        Gpc {
            mode: Mode::default(),
            counter: Counter::new(32),
            acc: 0,
            ps_exact: 0,
            tentative: 0,
        }
    }
}

impl Gpc {
    /// Feeds `n` selected pipeline events through the 2-bit accumulator; returns wraps.
    pub fn pipeline(&mut self, n: u64) -> u64 {
        self.ps_exact += n;
        let total = self.acc as u64 + n;
        self.acc = (total & 3) as u8;
        self.counter.add(total >> 2)
    }
    /// The prescaled count scaled back (x4), for reports.
    pub fn ps_scaled(&self) -> u64 {
        self.counter.get() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn prescaler_counts_every_fourth_event() {
        let mut g = Gpc::default();
        for n in [1u64, 2, 2, 1, 0, 2, 1, 1, 7, 2] {
            g.pipeline(n);
        }
        assert_eq!(g.ps_exact, 19);
        assert_eq!(g.counter.get(), 4);
        assert_eq!(g.acc, 3);
    }
    #[test]
    fn mode_fields() {
        let m = Mode::decode(1 << 23 | 0x47 << 16 | 1 << 15 | 2 << 11 | 1 << 10 | 0x3FF);
        assert!(m.enable && m.interrupt && m.edges);
        assert_eq!((m.ps, m.event, m.enable_bits), (0x47, 2, 0x3FF));
        assert_eq!(m.ps_mask.count_ones(), 6);
    }
}
