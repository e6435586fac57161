//! A local counter unit (UPC_P of a core, UPC_L2 of a slice) and its counters: the state the
//! hardware holds, how an event is counted, and what a transfer on the chain does.
//!
//! The local-to-central protocol is the driver's (`UPC_P__COUNTER`: "1st bit (msb) is reset
//! each UPC_C scan cycle", "counter bits which are stable"): at its slot a counter whose top
//! bit is set hands that bit (2^(w-1) counts) to its SRAM counter and clears it; the low w-1
//! bits stay local. So the 64-bit count is always SRAM + local, a counter drained every
//! `period` x2 cycles loses nothing while it counts at most 2^(w-1) events per period, and an
//! SRAM counter within 2^(w-1) of wrapping is *near overflow*: UPC_C arms the counter, and
//! its top bit turning on is then exactly the 64-bit overflow (the interrupt). The stop
//! command's final frame hands over the whole local value (docs/upc.md, "Choices").

use super::regs::CounterCfg;
use engine::Tick;

/// On and off times of a start/stop signal, in ticks at which they take effect.
#[derive(Clone, Debug, Default)]
pub struct Gate {
    changes: Vec<(Tick, bool)>,
}

impl Gate {
    /// The signal becomes `on` at `t` (at or after every earlier change).
    pub fn set(&mut self, t: Tick, on: bool) {
        while self.changes.last().is_some_and(|&(u, _)| u > t) {
            self.changes.pop();
        }
        if self.at(t) != on {
            self.changes.push((t, on));
        }
    }
    /// The signal at `t`.
    #[inline]
    pub fn at(&self, t: Tick) -> bool {
        self.changes
            .iter()
            .rev()
            .find(|&&(u, _)| u <= t)
            .is_some_and(|&(_, on)| on)
    }
    /// Processor cycles of `[a, b)` during which the signal is on (`cp` ticks per cycle; a
    /// cycle counts if it starts in an on interval).
    pub fn cycles(&self, a: Tick, b: Tick, cp: Tick) -> u64 {
        if b <= a {
            return 0;
        }
        let mut n = 0;
        let mut on = false;
        let mut from = a;
        for &(u, v) in &self.changes {
            if u >= b {
                break;
            }
            if u > a && on {
                n += u.div_ceil(cp) - from.div_ceil(cp);
            }
            if u > a {
                from = u;
            }
            on = v;
        }
        if on {
            n += b.div_ceil(cp) - from.max(a).div_ceil(cp);
        }
        n
    }
    /// The tick at which the `k`-th (from 1) processor cycle counted from `from` on starts: the
    /// cycles [`Gate::cycles`] counts, those starting while the signal is on (`cp` ticks per
    /// cycle). `None` if the signal turns off for good first.
    pub fn nth_on(&self, from: Tick, k: u64, cp: Tick) -> Option<Tick> {
        if k == 0 {
            return Some(from);
        }
        let mut left = k;
        let mut lo = from;
        loop {
            let hi = self.next_change(lo);
            if self.at(lo) {
                let first = lo.div_ceil(cp);
                let n = hi.map_or(u64::MAX, |h| h.div_ceil(cp) - first);
                if left <= n {
                    return Some((first + left - 1) * cp);
                }
                left -= n;
            }
            lo = hi?;
        }
    }
    /// The first change strictly after `t`.
    pub fn next_change(&self, t: Tick) -> Option<Tick> {
        self.changes.iter().find(|&&(u, _)| u > t).map(|&(u, _)| u)
    }
    /// The first tick at or after `t` at which the signal is on, before `end`.
    pub fn first_on(&self, t: Tick, end: Tick) -> Option<Tick> {
        if self.at(t) {
            return Some(t);
        }
        self.changes
            .iter()
            .find(|&&(u, on)| u > t && u < end && on)
            .map(|&(u, _)| u)
    }
}

/// One local counter.
#[derive(Clone, Debug, Default)]
pub struct Local {
    pub cfg: CounterCfg,
    /// The selected event is a level signal, and per hardware thread (else core-wide).
    pub level: bool,
    pub per_thread: bool,
    /// The `Op`s whose retirements it counts (`events::op_mask`: an opcode group or an A2
    /// commit event; 0 for every other event): such a counter is fed by the retirement path.
    pub ops: u64,
    /// Its UPC_P is off the chain (UPC_P control `P_DISCON`: the driver's `UPC_CM_DISCON`,
    /// `JOIN_RING` clear, BGPM's low-latency mode): its slots hand nothing to UPC_C, so the
    /// register counts alone and wraps at 2^width.
    pub discon: bool,
    /// Its run bit in the UPC_P control register (the driver's `UPC_P__CONTROL__RUN_bit(i)`,
    /// set through `control_w1s` and cleared through `control_w1c`): what a sync-override
    /// counter follows instead of the chain's start and stop. One per counter, so a thread's
    /// BGPM set starts and stops its own counters only (`Upci_Punit_Start_Indep`).
    pub run: Gate,
    /// The hardware register (`width` bits).
    pub value: u64,
    pub armed: bool,
    /// When the near-overflow packet reaches the unit.
    pub arm_at: Option<Tick>,
    pub big_ovf: bool,
    pub frozen: bool,
    /// Its SRAM counter (Mode 0 mapping).
    pub sram: usize,
    /// Tick of its next transfer on the chain.
    pub next_xfer: Tick,
    /// A level event's cycles are counted up to here.
    pub acct: Tick,
    /// Exact count of the events it was configured to count while running (the shadow
    /// count: the same observations, no width, no chain).
    pub exact: u64,
    /// Counts lost to local wrap-around (a counter not drained in time).
    pub lost: u64,
    pub transfers: u64,
    /// When the 64-bit count (SRAM + local) last wrapped, not yet answered by an interrupt.
    pub crossed: Option<Tick>,
    /// Tick of its first counted event.
    pub first: Option<Tick>,
}

impl Local {
    pub fn counting(&self) -> bool {
        self.cfg.enable && !self.frozen
    }
}

/// What counting or a transfer asks of the monitor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Nothing,
    /// An armed counter's top bit turned on with interrupts enabled: raise it.
    Interrupt,
}

/// Adds `n` events at `t` to counter `c` whose 64-bit count's central part is `sram`: the
/// local register with its wrap, the shadow count, the overflow interrupt (an armed counter's
/// top bit turning on) and freeze.
pub fn add(c: &mut Local, sram: u64, n: u64, t: Tick, width: u32) -> Outcome {
    if n == 0 {
        return Outcome::Nothing;
    }
    let half = 1u64 << (width - 1);
    let full = 1u64 << width;
    if c.arm_at.is_some_and(|a| a <= t) {
        c.armed = true;
        c.arm_at = None;
    }
    c.first.get_or_insert(t);
    let total = sram.wrapping_add(c.value);
    if total.checked_add(n).is_none() {
        c.crossed = Some(t);
    }
    let old = c.value;
    let mut n = n;
    let mut out = Outcome::Nothing;
    if c.armed && old < half && old + n >= half {
        if c.cfg.int_enable {
            out = Outcome::Interrupt;
        }
        c.armed = false;
        if c.cfg.freeze {
            n = half - old;
            c.frozen = true;
        }
    }
    c.exact += n;
    let new = old + n;
    if new >= full {
        c.lost += new / full * full;
        c.big_ovf = true;
    }
    c.value = new % full;
    out
}

/// The transfer at `t`: the top bit goes to the SRAM counter (`sram`), and UPC_C's near-overflow
/// check on the updated counter arms the local counter `arm_delay` ticks later. With `whole`
/// (the stop's final frame) every local count goes.
pub fn transfer(c: &mut Local, sram: &mut u64, t: Tick, width: u32, arm_delay: Tick, whole: bool) {
    let half = 1u64 << (width - 1);
    if c.discon {
        return;
    }
    c.transfers += 1;
    if whole {
        *sram = sram.wrapping_add(c.value);
        c.value = 0;
    } else if c.value >= half {
        *sram = sram.wrapping_add(half);
        c.value -= half;
    }
    if sram.checked_add(half).is_none() && !c.armed && c.arm_at.is_none() {
        c.arm_at = Some(t + arm_delay);
    }
}

/// The transfer at `t` of a UPC_L2 counter under L2 combine with UPC_C's interrupt on the L2
/// combined group enabled (the driver's `ccg_int_en` bit `UPC_C_SRAM_BASE_L2_GROUP`, set by
/// `ES_L2unit::SetOverflow`): the whole local count goes to the SRAM counter (patent, Mode 0:
/// "Each UPC P or UPC L2 module places its local counter data on the daisy chain 4 counters
/// at a time", the UPC_L2's 16 counters in an 8-flit packet), and UPC_C's check of the
/// updated counter is its own interrupt: true when the add wrapped the 64-bit SRAM counter
/// (driver `DocSwFeatures.h`, "Slow Overflow": "The I/O and L2 units take up to 800 processor
/// cycles to accumulate an event and detect an overflow", one frame of 400 x2 cycles). No
/// arming: the local counter never raises this interrupt.
pub fn transfer_central(c: &mut Local, sram: &mut u64) -> bool {
    if c.discon {
        return false;
    }
    c.transfers += 1;
    let (s, wrapped) = sram.overflowing_add(c.value);
    *sram = s;
    c.value = 0;
    c.armed = false;
    c.arm_at = None;
    wrapped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gate_counts_cycles_on() {
        let mut g = Gate::default();
        assert_eq!(g.cycles(0, 100, 1), 0);
        g.set(10, true);
        g.set(30, false);
        g.set(50, true);
        assert!(!g.at(9) && g.at(10) && g.at(29) && !g.at(30) && g.at(1000));
        assert_eq!(g.cycles(0, 100, 1), 20 + 50);
        assert_eq!(g.cycles(20, 60, 1), 10 + 10);
        assert_eq!(g.cycles(0, 100, 5), 4 + 10);
        assert_eq!(g.first_on(30, 1000), Some(50));
        assert_eq!(g.first_on(30, 40), None);
        assert_eq!(g.nth_on(0, 1, 1), Some(10));
        assert_eq!(g.nth_on(0, 21, 1), Some(50));
        assert_eq!(g.nth_on(12, 3, 5), Some(25));
        // A later command replaces changes scheduled after it.
        g.set(40, false);
        assert!(!g.at(60));
    }

    /// Width 4 (half 8): the top bit goes at a transfer, the low bits stay; a near-overflow
    /// SRAM arms the counter, whose top bit turning on is the 64-bit wrap, interrupting.
    #[test]
    fn transfer_and_armed_overflow() {
        let mut c = Local {
            cfg: CounterCfg {
                enable: true,
                int_enable: true,
                ..Default::default()
            },
            ..Default::default()
        };
        let mut sram = 0u64;
        assert_eq!(add(&mut c, sram, 11, 5, 4), Outcome::Nothing);
        transfer(&mut c, &mut sram, 10, 4, 3, false);
        assert_eq!((sram, c.value), (8, 3));
        // SRAM preloaded to 2^64 - 8 (a near-overflow value), local at 3: the 64-bit count
        // wraps 5 events later.
        sram = u64::MAX - 7;
        transfer(&mut c, &mut sram, 20, 4, 3, false);
        assert_eq!(c.arm_at, Some(23));
        assert_eq!(add(&mut c, sram, 4, 24, 4), Outcome::Nothing);
        assert!(c.armed);
        // 7 + 1 = 8: the top bit turns on exactly when SRAM + local reaches 2^64.
        assert_eq!(add(&mut c, sram, 1, 25, 4), Outcome::Interrupt);
        assert_eq!(c.crossed, Some(25));
        assert_eq!(sram.wrapping_add(c.value), 0);
        // Wrap-around loses whole local ranges.
        let mut d = Local::default();
        add(&mut d, 0, 40, 1, 4);
        assert_eq!((d.value, d.lost, d.big_ovf, d.exact), (8, 32, true, 40));
    }
}
