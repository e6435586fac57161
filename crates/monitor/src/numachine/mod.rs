//! The NUMAchine processor-card performance monitor (seed 000, sections 4.3-4.5), one card per
//! processor, register for register.
//!
//! The monitor sits on the external agent bus (4.3): it sees every packet the external agent
//! sends or receives (`TxIssue`, `TxNack`, `TxDone`, `Inbound`), the secondary-cache probes
//! (`L2Access`: the 'secondary cache index' buffer of Figure 4.5, with the state bits read at the
//! index; the valid-to-invalid changes come with `Inbound` hits and `TxDone::evicted`), the pipeline
//! status outputs (`Pipeline`) and the PhaseID register (`Phase`). Programs read and write it
//! with uncached word/doubleword accesses to the monitor region (`regs` documents the map),
//! other processors with system writes, and all cards at once with a multicast write (4.4.6).
//!
//! # Time
//! The counters count on the 50 MHz monitor clock (the preset's `system` domain). Between two
//! observations of a processor nothing the count-enable circuits look at changes (PR, AR, CR,
//! the packet direction and the event levels only change at observations), so the monitor
//! integrates each interval at the next observation: a counter counting "cycles high" gains the
//! number of monitor-clock edges in the interval while its event is high and its enable holds;
//! a counter counting transitions gains one at each rising edge of its event if enabled then.
//! This is exact for the modelled circuit, and costs nothing between observations.
//!
//! # Interrupts
//! An overflow sets a bit in the interrupt status register and, if the counter's interrupt bit
//! is set, raises interrupt vector [`VECTOR_BASE`] + counter (4 for the SRAM) on the card's
//! processor through `Signals`. The interrupt request stays asserted (GPC event 3, "interrupt
//! request latency") until the program reads the status register (the acknowledge).
//!
//! # State, trigger, handler
//! - **State** ([`state`]): per card, the registers of Table 4.4 and the latched packet
//!   (PR, AR, CR, direction), four general-purpose counters, the 64K-word SRAM, the response
//!   state and miss type registers, the latency timer and the estimators' windows.
//! - **Trigger** ([`triggers`]): the count-enable circuits (4.4.2): master enables, each mode
//!   register's enable bits over the PhaseID/address/command comparators and the send/receive
//!   masks; their outputs are cached per card and recomputed when a register or latch changes.
//! - **Handler** ([`handlers`]): the increment rules of the Table 4.5 events and Table 4.7 SRAM
//!   modes for each observation (pulses, cycle intervals, latencies, SRAM addresses), overflow
//!   interrupts, and the program's register reads and writes.
//!
//! Beside them: [`config`] (TOML with symbolic names, compiled to register values; example files
//! in `docs/numachine/`), [`regs`] (the register map, also for `pmusim decode`), [`report`]
//! (the JSON section), [`section`] (the typed report section), and [`plugin`] (the registry's
//! entry).

pub mod command;
pub mod config;
pub mod counting;
pub mod decode;
pub mod enable;
pub mod estimators;
pub mod exact_latency;
pub mod gpc;
pub mod handlers;
pub mod miss_cycles;
pub mod phase_split;
pub mod plugin;
pub mod regs;
pub mod report;
pub mod section;
pub mod sram;
pub mod state;
pub mod triggers;

pub use plugin::{ENTRY, NAME};
pub use state::{resource_name, Card, PeriodDiv, QueueHist, Queues, Setup};
use state::{Out, Params};

use crate::latency;
use enable::{enabled, Compare, Dir, Latch};
use engine::Tick;
use estimators::{InvalHit, InvalMiss};
use gpc::*;
use machine::probe::{
    kind, Cmd, InboundKind, MissType, Observation, Outcome, Probe, Resource, Signals,
};
use machine::Preset;
use regs::{Reg, Regs};
use sram::{AddrInputs, Sram, SramMode};
use std::collections::BTreeMap;

/// Interrupt vectors: `VECTOR_BASE + i` for counter i, `VECTOR_BASE + 4` for the SRAM.
pub const VECTOR_BASE: u32 = 0x4E00;
/// Window of the invalidation-hit estimator, in processor cycles (4.4.4: "approximately
/// 34-cycle time window").
pub const INVAL_WINDOW_CYCLES: u64 = 34;
/// Size of the monitor region this probe answers for.
pub const REGION_BYTES: u64 = 0x80000;

/// The monitor of every processor card of the machine.
pub struct NumachineMonitor {
    pub setup: Setup,
    pub cards: Vec<Card>,
    pub queues: Queues,
    p: Params,
    pub sys_period: Tick,
    pub cpu_period: Tick,
    pub end: Tick,
    /// The monitor wants the pipeline-status stream (`Setup::uses_pipeline`, decided at
    /// construction).
    pipeline: bool,
    /// Every card has both master enables off: observations are not looked at (except PhaseID
    /// writes and the latest pipeline status, which a card that wakes up needs).
    asleep: bool,
    /// Some card had a master enable on at some time (at the start or after a program's
    /// write): the report shows the counters; otherwise it says that nothing counted.
    pub woke: bool,
    /// Restricted to one process by counter virtualization (`--virtualize`).
    pub virt: Option<crate::virt::Virtualizer>,
    /// Observations `pmusim stat` needs beside the present programming's: every group's it
    /// rotates through (`counting::Plan::interest`), since the machine asks once.
    pub stat_interest: u32,
}

impl NumachineMonitor {
    pub fn new(preset: &Preset, setup: Setup) -> Result<NumachineMonitor, String> {
        let clocks = preset.clocks_built().map_err(|e| e.0)?;
        let sys = clocks.get("system").ok_or("no system clock")?.period;
        let cpu = clocks.get("cpu").ok_or("no cpu clock")?.period;
        let l2 = preset.caches.last_private();
        let sets = l2.sets() as usize;
        let p = Params {
            sysdiv: PeriodDiv::new(sys),
            window: INVAL_WINDOW_CYCLES * cpu,
            line_shift: l2.line_bytes.trailing_zeros(),
            set_mask: sets as u64 - 1,
            data_cycles: l2.line_bytes / 8,
        };
        let cards = (0..preset.procs)
            .map(|i| Card::new(i as u16, preset.node_of_proc(i) as u16, &setup, sys))
            .collect();
        let asleep = !(setup.regs.gpce || setup.regs.sramce);
        Ok(NumachineMonitor {
            asleep,
            woke: !asleep,
            virt: None,
            stat_interest: 0,
            pipeline: setup.uses_pipeline(),
            setup,
            cards,
            queues: Queues::default(),
            p,
            sys_period: sys,
            cpu_period: cpu,
            end: 0,
        })
    }

    /// AR as the monitor latches it: Table 4.1's station address (the home node) in bits
    /// 39..36 above the physical address.
    fn ar(addr: u64, home: u16) -> u64 {
        ((home as u64 & 0xF) << 36) | (addr & 0xF_FFFF_FFFF)
    }
}

impl NumachineMonitor {
    /// Every observation but the queues, once the monitor is awake: a card whose master
    /// enables are both off keeps only what a later enable needs (`Card::idle`).
    #[inline(always)]
    fn observe_card(&mut self, o: &Observation, sig: &mut Signals) {
        // Each arm ends in one call (compiled as a jump), so this dispatcher saves no
        // registers; the per-kind work is out of line.
        let p = &self.p;
        let Some(proc) = o.proc() else { return };
        let c = &mut self.cards[proc as usize];
        if !c.active() {
            return c.idle(o);
        }
        match *o {
            Observation::L2Access {
                t,
                index,
                hit,
                index_invalid,
                ..
            } => {
                // Inline when it is only the estimators' bookkeeping (no register saves).
                if t > c.last_t {
                    if c.cycles_on {
                        return c.on_l2_access(o, p, sig);
                    }
                    c.last_t = t;
                }
                if c.estimating {
                    c.inval_hit.access(index);
                    if !hit {
                        c.inval_miss.l2_miss(index, index_invalid);
                    }
                }
                if c.regs.sramce
                    && (sram::SEV_L2_ACCESS..=sram::SEV_L2_MISS).contains(&c.smode.event)
                {
                    c.l2_sram(o, sig)
                }
            }
            // (TxIssue, TxDone and Inbound: `packet`)
            Observation::TxNack { t, .. } => c.nack(t, p, sig),
            Observation::BusRequest { t, grant, .. } => c.bus_request(t, grant, p, sig),
            Observation::Pipeline {
                ref cycles,
                restarts,
                ..
            } => c.pipeline(cycles, restarts, sig),
            Observation::Phase { t, phase, .. } => c.phase(t, phase, p, sig),
            _ => {}
        }
    }

    /// A packet (`TxIssue`, `TxDone` or `Inbound`) of card `proc`, the monitor awake, to its
    /// handler `h`.
    #[inline(always)]
    fn packet(
        &mut self,
        proc: u16,
        o: &Observation,
        sig: &mut Signals,
        h: impl FnOnce(&mut Card, &Observation, &Params, &mut Signals),
    ) {
        let p = &self.p;
        let c = &mut self.cards[proc as usize];
        if !c.active() {
            return c.idle(o);
        }
        h(c, o, p, sig)
    }

    /// Every card's master enables are off: only PhaseID writes (and the pipeline status
    /// before a monitor access) arrive.
    #[inline(never)]
    fn observe_asleep(&mut self, o: &Observation) {
        match *o {
            Observation::Pipeline {
                proc,
                ref cycles,
                restarts,
                ..
            } => {
                let c = &mut self.cards[proc as usize];
                c.last_ps = gpc::ps_stream(cycles, restarts);
                c.cur_ps = c.last_ps;
            }
            Observation::Phase { proc, phase, .. } => {
                let c = &mut self.cards[proc as usize];
                c.regs.pr = phase;
                c.latch.pr = phase;
            }
            _ => {}
        }
    }

    /// A use of a queued resource (the machine hands these only if `queues` is on).
    #[inline(never)]
    fn queue_use(&mut self, res: Resource, wait: Tick, busy: Tick, queue: u32) {
        let sys = self.p.sysdiv;
        let q = self.queues.get(res);
        q.uses += 1;
        q.length[(queue as usize).min(63)] += 1;
        let w = sys.div(wait);
        q.wait_sum += w;
        q.busy_sum += sys.div(busy);
        if w >= latency::TIMEOUT {
            q.wait_overflow += 1;
        } else {
            q.wait[latency::compact(w as u16) as usize] += 1;
        }
    }
}

/// Values per card the virtualizer keeps (`virt`): the four counters' registers (with their
/// wraps, so a delta is what a 64-bit virtual counter gains), then their exact full-rate
/// pipeline events (`Gpc::ps_exact`, what a counter without the /4 prescaler would read).
pub const VIRT_VALUES: usize = 8;

impl NumachineMonitor {
    /// Restricts the monitor to `v`'s process by counter virtualization: from now on each
    /// context switch splits the cards' counts by software thread.
    pub fn virtualize(&mut self, mut v: crate::virt::Virtualizer) {
        for (i, c) in self.cards.iter().enumerate() {
            v.open(i, &c.virt_values());
        }
        self.virt = Some(v);
    }

    /// A context switch on a processor (asked for only when virtualizing): the card's
    /// counters brought up to the switch (as for a register read), then read by the
    /// virtualizer.
    #[cold]
    #[inline(never)]
    fn switch(&mut self, o: &Observation, sig: &mut Signals) {
        let Observation::Switch { core, t, to, .. } = *o else {
            return;
        };
        let p = self.p;
        let c = &mut self.cards[core as usize];
        c.advance(t, &p, sig);
        c.settle(sig);
        let mut now = c.virt_values();
        // A processor that was idle switches at its local time when it went idle, which
        // the card may have passed already (packets arrive at global time): count-always
        // counters read as of the switch, the rest of their count going to the incoming
        // thread (to which the machine charges the idle wait).
        if t < c.last_t {
            let back = p.sysdiv.div(c.last_t) - p.sysdiv.div(t);
            for (i, g) in c.gpc.iter().enumerate() {
                if c.gpc_on[i] && g.mode.event == gpc::EV_ALWAYS && !g.mode.edges {
                    now[i] = now[i].wrapping_sub(back);
                }
            }
        }
        if let Some(v) = self.virt.as_mut() {
            v.switch(core as usize, to, &now);
        }
    }
}

impl Card {
    /// The card's values for the virtualizer (`VIRT_VALUES`).
    pub fn virt_values(&self) -> [u64; VIRT_VALUES] {
        let mut v = [0; VIRT_VALUES];
        for (i, g) in self.gpc.iter().enumerate() {
            let c = &g.counter;
            v[i] = c.get().wrapping_add(c.wraps << c.width().min(63));
            v[4 + i] = g.ps_exact;
        }
        v
    }
}

impl Probe for NumachineMonitor {
    #[inline]
    fn observe(&mut self, o: &Observation, sig: &mut Signals) {
        // The three packets of every line request first, each in one match arm (no separate
        // look-ups of the kind and the processor): they are most of what a card sees.
        if !self.asleep {
            match *o {
                Observation::TxIssue { proc, .. } => {
                    return self.packet(proc, o, sig, Card::on_issue)
                }
                Observation::TxDone { proc, .. } => return self.packet(proc, o, sig, Card::done),
                Observation::Inbound { proc, .. } => {
                    return self.packet(proc, o, sig, Card::on_inbound)
                }
                _ => {}
            }
        }
        if let Observation::Switch { .. } = o {
            return self.switch(o, sig);
        }
        if self.asleep {
            return self.observe_asleep(o);
        }
        if let Observation::Queue {
            res,
            wait,
            busy,
            queue,
            ..
        } = *o
        {
            if self.setup.queues {
                self.queue_use(res, wait, busy, queue);
            }
            return;
        }
        self.observe_card(o, sig)
    }

    fn mmio(
        &mut self,
        proc: u16,
        t: Tick,
        offset: u64,
        size: u8,
        write: Option<u64>,
        sig: &mut Signals,
    ) -> Option<u64> {
        if offset >= REGION_BYTES {
            return None;
        }
        let p = self.p;
        let c = self.cards.get_mut(proc as usize)?;
        c.advance(t, &p, sig);
        c.settle(sig);
        let words: &[(u64, u32)] = if size == 8 {
            let base = offset & !7;
            &[(base, 32), (base + 4, 0)]
        } else {
            &[(offset & !3, 0)]
        };
        let was = c.active();
        let mut v = 0u64;
        for &(off, shift) in words {
            match write {
                Some(w) => c.write_word(off, (w >> shift) as u32, sig),
                None => v |= (c.read_word(off) as u64) << shift,
            }
        }
        if write.is_some() && was != c.active() {
            self.asleep = self.cards.iter().all(|c| !c.active());
            self.woke |= !self.asleep;
        }
        Some(v)
    }

    fn wants_pipeline(&self) -> bool {
        self.pipeline
    }

    /// Asleep: only PhaseID writes. Awake: every observation of a processor card, the bus
    /// requests if a counter counts event D, and the queues if configured.
    fn interest(&self) -> u32 {
        let sw = if self.virt.is_some() { kind::SWITCH } else { 0 };
        if self.asleep {
            return kind::PHASE | sw;
        }
        let mut k = kind::PACKETS | kind::PHASE | sw | self.stat_interest;
        if self.cards.iter().any(|c| c.needs_l2_accesses()) {
            k |= kind::L2_ACCESS;
        }
        if self.setup.queues {
            k |= kind::QUEUE;
        }
        if self.cards.iter().any(|c| c.counts_bus_requests()) {
            k |= kind::BUS_REQUEST;
        }
        k
    }

    /// Pipeline counts are settled lazily (`Card::settle`): the status must be fresh only where
    /// a pipeline counter's enable may change (the packets it filters on, PhaseID writes with a
    /// PW compare) and at every observation when it may interrupt.
    fn pipeline_before(&self) -> u32 {
        if self.asleep {
            return 0;
        }
        let k = self.cards.iter().fold(0, |k, c| k | c.pipeline_before());
        // Virtualizing: the pipeline counts must be current at every switch.
        if self.virt.is_some() {
            k | kind::SWITCH
        } else {
            k
        }
    }

    fn finish(&mut self, t: Tick) {
        let p = self.p;
        let mut sig = Signals::default();
        for (i, c) in self.cards.iter_mut().enumerate() {
            c.advance(t, &p, &mut sig);
            c.settle(&mut sig);
            if let Some(v) = self.virt.as_mut() {
                v.finish(i, &c.virt_values());
            }
        }
        self.end = t;
    }

    fn name(&self) -> &str {
        "numachine"
    }
}

#[cfg(test)]
mod tests {
    use super::PeriodDiv;

    #[test]
    fn period_division_by_multiply_is_exact() {
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for d in [
            1u64,
            2,
            3,
            5,
            6,
            7,
            10,
            12,
            1000,
            3 << 20,
            u64::MAX / 3,
            u64::MAX,
        ] {
            let div = PeriodDiv::new(d);
            let lim = u64::MAX / d;
            for edge in [
                0,
                1,
                d - 1,
                d,
                d.saturating_add(1),
                lim,
                lim.saturating_add(1),
                u64::MAX,
            ] {
                assert_eq!(div.div(edge), edge / d, "{edge} / {d}");
            }
            for _ in 0..20_000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                for v in [x, x >> 20, x >> 40, x % 100_000] {
                    assert_eq!(div.div(v), v / d, "{v} / {d}");
                }
            }
        }
    }
}
