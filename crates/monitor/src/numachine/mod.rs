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

pub mod command;
pub mod config;
pub mod csv;
pub mod decode;
pub mod enable;
pub mod estimators;
pub mod gpc;
pub mod plugin;
pub mod regs;
pub mod report;
pub mod sram;
pub mod svg;

pub use plugin::{ENTRY, NAME};

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

/// A compiled monitor configuration: the register values written at start-up, plus what the
/// registers do not hold (labels, preloads, the R4400's split-cache option).
#[derive(Clone, Debug, Default)]
pub struct Setup {
    pub name: String,
    pub regs: Regs,
    /// Counter labels (PAPI-style where one fits).
    pub labels: [String; 4],
    /// Counter preloads (a negative threshold written as two's complement).
    pub gpc_preload: [Option<u32>; 4],
    /// Preload every SRAM word with -threshold (cache-profile watch-points).
    pub sram_threshold: Option<u32>,
    /// The R4400's split secondary cache (instructions in the upper half of the index).
    pub split_id: bool,
    /// Queue-performance histograms (Table 4.10 item 15, beyond the original).
    pub queues: bool,
    /// Run the invalidation estimators of Fig. 4.8 even when no counter counts their events
    /// (E, F), to report them beside the exact counts (the built-in configuration does). The
    /// hardware exposes them only through those events, so without this they run only while
    /// some counter selects E or F.
    pub estimators: bool,
    /// Ask the machine for the pipeline-status stream even if no counter selects it now
    /// (a program may program one later; the stream costs a little time).
    pub pipeline: bool,
}

impl Setup {
    /// True when the machine must produce the pipeline-status stream: some counter selects
    /// pipeline-status events and the general-purpose counters start enabled, or the
    /// configuration asks for it (`pipeline = true`: needed by a program that enables pipeline
    /// counters later, since the machine decides once, when the monitor is attached). A monitor
    /// configured but disabled thus costs no pipeline-status stream.
    pub fn uses_pipeline(&self) -> bool {
        self.pipeline
            || (self.regs.gpce
                && self
                    .regs
                    .gpcm
                    .iter()
                    .any(|g| Mode::decode(*g).event == EV_PIPELINE))
    }
}

#[derive(Clone, Copy, Debug)]
struct Out {
    cmd: Cmd,
    nacked: bool,
    inv_miss: bool,
}

/// Division by a period fixed for the run, by a multiply: `x / d` for `x <= u64::MAX / d`
/// (every time a run reaches), a division otherwise.
#[derive(Clone, Copy, Debug)]
pub struct PeriodDiv {
    d: u64,
    magic: u64,
    limit: u64,
}

impl PeriodDiv {
    pub fn new(d: u64) -> PeriodDiv {
        assert!(d > 0, "period 0");
        // magic = floor(2^64 / d) + 1 (2^64 / d for a power of two): for x <= (2^64 - 1) / d
        // the error x * (magic * d - 2^64) / (d * 2^64) stays below 1/d, so the high word
        // of x * magic is floor(x / d).
        let (magic, limit) = if d == 1 {
            (0, 0)
        } else {
            (u64::MAX / d + 1, u64::MAX / d)
        };
        PeriodDiv { d, magic, limit }
    }
    #[inline(always)]
    pub fn div(&self, x: u64) -> u64 {
        if x <= self.limit {
            ((x as u128 * self.magic as u128) >> 64) as u64
        } else {
            x / self.d
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct Params {
    /// Division by `sys`.
    sysdiv: PeriodDiv,
    window: Tick,
    line_shift: u32,
    set_mask: u64,
    data_cycles: u64,
}

/// One processor card's monitor.
#[derive(Clone, Debug)]
pub struct Card {
    pub proc: u16,
    pub node: u16,
    pub regs: Regs,
    pub latch: Latch,
    cmp: Compare,
    gpc_on: [bool; 4],
    /// Events (bit per Table 4.5 code) some enabled counter counts.
    ev_mask: u16,
    /// Per event, the enabled counters counting it (bit per counter): a pulse of an event no
    /// counter counts costs one load and test.
    ev_counters: [u8; 16],
    /// Counters counting transitions (bit 10), bit per counter.
    edge_counters: u8,
    /// Some counter selects event B (reset at every request) or 7/8 (tentative counts): the
    /// request and response must visit the counters.
    latency_hooks: bool,
    /// The SRAM's count-enable circuit looks at no per-packet comparator but the direction:
    /// its value for each direction (`Dir` as index), valid until the next `refresh`.
    sram_dir_only: bool,
    sram_dir_on: [bool; 3],
    /// Some enabled counter counts cycles (or the SRAM extends a count): intervals need work.
    cycles_on: bool,
    /// Counters whose enable looks at AR, CR or the direction (bit per counter), and the
    /// SRAM's: packets must re-evaluate them.
    gpc_sens: u8,
    sram_sens: bool,
    gpc_cycles_on: bool,
    /// Count-always counters without an interrupt (bit per counter): counted when the enables
    /// change, before reads and at the end, instead of at every observation.
    lazy_always: u8,
    always_since: Tick,
    sys: Tick,
    sram_on: bool,
    pub gpc: [Gpc; 4],
    pub smode: SramMode,
    pub sram: Sram,
    pub split_id: bool,
    /// Interrupt status: bit i = counter i overflowed, bit 4 = SRAM.
    pub isr: u8,
    irq_level: bool,
    /// The bus request line (GPC event D): high over [breq_from, breq_until).
    breq_from: Tick,
    breq_until: Tick,
    out: Option<Out>,
    last_t: Tick,
    last_ps: [u64; 16],
    cur_ps: [u64; 16],
    /// A pipeline counter may interrupt: count its events at every report.
    ps_eager: bool,
    /// Response State Register (Table 4.9) and Miss Type Register (Table 4.8).
    pub rsr: u8,
    pub mtr: u8,
    /// The configuration asks for the estimators (`Setup::estimators`).
    estimators_cfg: bool,
    /// The estimators run: asked for, or some counter selects event E or F (their state
    /// lives only for a few cycles, so they can start at any time).
    estimating: bool,
    /// The estimators ran at some time (their tallies are reported).
    pub estimated: bool,
    pub inval_hit: InvalHit,
    pub inval_miss: InvalMiss,
    pub interrupts_raised: u64,
    /// Responses whose latency reached the 4096-cycle time-out (the 12-bit timer wrapped).
    pub latency_timeouts: u64,
    /// Exact latencies of every line request seen, for the report: per RSR value, counts by
    /// latency in monitor cycles (index 4096 = 4096 or more). Allocated per RSR on first use.
    pub exact_latency: Vec<Vec<u32>>,
}

impl Card {
    fn new(proc: u16, node: u16, s: &Setup, sys: Tick) -> Card {
        let mut c = Card {
            proc,
            node,
            regs: Regs::default(),
            latch: Latch::default(),
            cmp: Compare::new(&Regs::default(), &Latch::default()),
            gpc_on: [false; 4],
            ev_mask: 0,
            ev_counters: [0; 16],
            edge_counters: 0,
            latency_hooks: false,
            sram_dir_only: false,
            sram_dir_on: [false; 3],
            cycles_on: false,
            gpc_sens: 0,
            sram_sens: false,
            gpc_cycles_on: false,
            lazy_always: 0,
            always_since: 0,
            sys,
            sram_on: false,
            gpc: Default::default(),
            smode: SramMode::default(),
            sram: Sram::default(),
            split_id: s.split_id,
            isr: 0,
            irq_level: false,
            breq_from: 0,
            breq_until: 0,
            out: None,
            last_t: 0,
            last_ps: [0; 16],
            cur_ps: [0; 16],
            ps_eager: false,
            rsr: 0,
            mtr: 0,
            estimators_cfg: s.estimators,
            estimating: false,
            estimated: false,
            inval_hit: InvalHit::default(),
            inval_miss: InvalMiss::default(),
            interrupts_raised: 0,
            latency_timeouts: 0,
            exact_latency: vec![Vec::new(); 32],
        };
        for (r, v) in s.regs.list() {
            c.set_reg(r, v);
        }
        for i in 0..4 {
            if let Some(v) = s.gpc_preload[i] {
                c.gpc[i].counter.preload(v as u64);
            }
        }
        if let Some(t) = s.sram_threshold {
            c.sram.preload_threshold(t);
        }
        c
    }

    fn set_reg(&mut self, r: Reg, v: u32) {
        self.regs.set(r, v);
        match r {
            Reg::Pr => self.latch.pr = self.regs.pr,
            Reg::Gpcm0 | Reg::Gpcm1 | Reg::Gpcm2 | Reg::Gpcm3 => {
                let i = r as usize - Reg::Gpcm0 as usize;
                self.gpc[i].mode = Mode::decode(self.regs.gpcm[i]);
            }
            Reg::Scm => self.smode = SramMode::decode(self.regs.scm),
            _ => {}
        }
        self.refresh();
    }

    #[inline(never)]
    fn refresh_for_packet(&mut self) {
        self.refresh()
    }

    /// Re-evaluates the shared comparators and every count-enable circuit.
    fn refresh(&mut self) {
        // Close the pipeline interval under the enables that held during it. Pipeline
        // counters that may interrupt are settled eagerly, so no interrupt is raised here.
        self.settle(&mut Signals::default());
        self.latency_hooks = self.gpc.iter().any(|g| {
            matches!(
                g.mode.event,
                EV_LAST_LATENCY | EV_OWNERSHIP | EV_OWNERSHIP_CANCELLED
            )
        });
        self.edge_counters = 0;
        for (i, g) in self.gpc.iter().enumerate() {
            self.edge_counters |= (g.mode.edges as u8) << i;
        }
        self.ev_counters = [0; 16];
        self.estimating = self.estimators_cfg
            || self
                .gpc
                .iter()
                .any(|g| matches!(g.mode.event, EV_INVAL_HITS | EV_INVAL_MISSES));
        self.estimated |= self.estimating && self.active();
        if !self.regs.gpce && !self.regs.sramce {
            // Both master enables off (4.4.6): nothing counts; skip the comparators.
            self.gpc_on = [false; 4];
            self.sram_on = false;
            self.sram_dir_only = false;
            self.ev_mask = 0;
            self.cycles_on = false;
            self.ps_eager = false;
            self.lazy_always = 0;
            self.gpc_sens = 0;
            self.sram_sens = false;
            return;
        }
        // Bits 9..2 minus the PW pair: AW, CW and the masks depend on the latched packet.
        let sens = |bits: u32| bits & 0b11_0011_1100 != 0;
        self.gpc_sens = 0;
        for (i, g) in self.gpc.iter().enumerate() {
            if self.regs.gpce && g.mode.enable && sens(g.mode.enable_bits) {
                self.gpc_sens |= 1 << i;
            }
        }
        self.sram_sens = self.regs.sramce && sens(self.smode.enable_bits);
        self.cmp = Compare::new(&self.regs, &self.latch);
        for i in 0..4 {
            let m = &self.gpc[i].mode;
            self.gpc_on[i] = self.regs.gpce && m.enable && enabled(m.enable_bits, &self.cmp);
        }
        self.sram_on = self.regs.sramce && enabled(self.smode.enable_bits, &self.cmp);
        // Without the AW and CW terms the SRAM's enable depends on the packet's direction
        // only (PW changes only through `set_reg`, which refreshes).
        let sb = self.smode.enable_bits;
        self.sram_dir_only = sb & (1 << 5 | 1 << 3) == 0;
        if self.sram_dir_only {
            for (d, dir) in [Dir::None, Dir::Sending, Dir::Receiving]
                .into_iter()
                .enumerate()
            {
                let c = Compare {
                    sending: dir == Dir::Sending,
                    receiving: dir == Dir::Receiving,
                    ..self.cmp
                };
                self.sram_dir_on[d] = self.regs.sramce && enabled(sb, &c);
            }
        }
        self.ev_mask = 0;
        self.cycles_on = false;
        self.lazy_always = 0;
        for i in 0..4 {
            let m = &self.gpc[i].mode;
            if self.gpc_on[i] {
                self.ev_mask |= 1 << m.event;
                self.ev_counters[m.event as usize] |= 1 << i;
                if m.event == EV_ALWAYS && !m.edges && !m.interrupt {
                    self.lazy_always |= 1 << i;
                } else if m.event != EV_PIPELINE {
                    // (pipeline events are counted by `settle`, not per interval)
                    self.cycles_on |= !m.edges;
                }
            }
        }
        self.gpc_cycles_on = self.cycles_on;
        self.cycles_on |= self.sram_extends();
        self.ps_eager = (0..4).any(|i| {
            self.gpc_on[i] && self.gpc[i].mode.event == EV_PIPELINE && self.gpc[i].mode.interrupt
        });
    }

    /// See `NumachineMonitor::pipeline_before`: depends on the registers only.
    fn pipeline_before(&self) -> u32 {
        if !self.regs.gpce {
            return 0;
        }
        let mut k = 0;
        for g in &self.gpc {
            let m = &g.mode;
            if !m.enable || m.event != EV_PIPELINE {
                continue;
            }
            if m.interrupt {
                return kind::ALL;
            }
            if m.enable_bits & 0b11_0011_1100 != 0 {
                k |= kind::PACKETS;
            }
            if m.enable_bits & 0b00_1000_0000 != 0 {
                k |= kind::PHASE;
            }
        }
        k
    }

    /// The SRAM extends a count every cycle (event 1 counting cycles).
    fn sram_extends(&self) -> bool {
        self.sram_on && self.smode.event == sram::SEV_ALWAYS && !self.smode.edges
    }

    fn active(&self) -> bool {
        self.regs.gpce || self.regs.sramce
    }

    /// The card needs every L2 access (depends on the registers only, like `interest`): for
    /// the estimators, the SRAM's L2 events, or to integrate counters counting cycles high
    /// (which may interrupt) at each access rather than at the next packet.
    fn needs_l2_accesses(&self) -> bool {
        if !self.active() {
            return false;
        }
        let sram_l2 = self.regs.sramce
            && (sram::SEV_L2_ACCESS..=sram::SEV_L2_MISS).contains(&self.smode.event);
        let sram_cycles =
            self.regs.sramce && self.smode.event == sram::SEV_ALWAYS && !self.smode.edges;
        let gpc_cycles = self.regs.gpce
            && self.gpc.iter().any(|g| {
                let m = &g.mode;
                // (count-always without an interrupt is counted lazily)
                let lazy = m.event == EV_ALWAYS && !m.interrupt;
                m.enable && !m.edges && m.event != EV_PIPELINE && !lazy
            });
        self.estimating || sram_l2 || sram_cycles || gpc_cycles
    }

    #[inline(always)]
    fn bump(&mut self, i: usize, n: u64, sig: &mut Signals) {
        if self.gpc[i].counter.add(n) > 0 {
            self.gpc_overflow(i, sig);
        }
    }

    #[cold]
    #[inline(never)]
    fn gpc_overflow(&mut self, i: usize, sig: &mut Signals) {
        self.isr |= 1 << i;
        if self.gpc[i].mode.interrupt {
            self.raise_irq(sig);
            self.interrupts_raised += 1;
            sig.raise(self.proc, VECTOR_BASE + i as u32);
        }
    }

    /// The interrupt request line rises (GPC event 3's low-to-high transition).
    fn raise_irq(&mut self, sig: &mut Signals) {
        if !self.irq_level {
            self.irq_level = true;
            self.pulse(EV_INTERRUPT, 1, 0, sig);
        }
    }

    fn sram_add(&mut self, a: u16, n: u32, sig: &mut Signals) {
        if self.sram.add(a, n) {
            self.isr |= 1 << 4;
            if self.smode.interrupt {
                self.raise_irq(sig);
                self.interrupts_raised += 1;
                sig.raise(self.proc, VECTOR_BASE + 4);
            }
        }
    }

    fn inputs(&self, latency: u16) -> AddrInputs {
        AddrInputs {
            pr: self.latch.pr,
            ar: self.latch.ar,
            rsr: self.rsr,
            mtr: self.mtr,
            latency,
            l2_index: 0,
            ifetch: false,
        }
    }

    /// Is event `ev` high now (for counters counting cycles)?
    fn level(&self, ev: u8) -> bool {
        let o = self.out;
        match ev {
            EV_ALWAYS => true,
            EV_INTERRUPT => self.irq_level,
            EV_READ => o.is_some_and(|o| o.cmd == Cmd::Read),
            EV_READ_EX => o.is_some_and(|o| o.cmd == Cmd::ReadEx),
            EV_READ_ANY => o.is_some_and(|o| matches!(o.cmd, Cmd::Read | Cmd::ReadEx)),
            EV_OWNERSHIP | EV_OWNERSHIP_CANCELLED => o.is_some_and(|o| o.cmd == Cmd::Upgrade),
            EV_NACK_CYCLES => o.is_some_and(|o| o.nacked),
            EV_LAST_LATENCY => o.is_some(),
            EV_INVAL_MISSES => o.is_some_and(|o| o.inv_miss),
            _ => false,
        }
    }

    /// Integrates the interval since the last observation up to `t`.
    #[inline(always)]
    fn advance(&mut self, t: Tick, p: &Params, sig: &mut Signals) {
        if t <= self.last_t {
            return;
        }
        if !self.cycles_on {
            self.last_t = t;
            return;
        }
        self.integrate(t, p, sig)
    }

    /// `advance` when some counter counts cycles high.
    #[inline(never)]
    fn integrate(&mut self, t: Tick, p: &Params, sig: &mut Signals) {
        let prev = self.last_t;
        let e = p.sysdiv.div(t) - p.sysdiv.div(prev);
        self.last_t = t;
        if e == 0 {
            return;
        }
        for i in 0..4 {
            if !self.gpc_on[i] || self.gpc[i].mode.edges || self.lazy_always & (1 << i) != 0 {
                continue;
            }
            let ev = self.gpc[i].mode.event;
            if ev == EV_BUS_REQUEST {
                // The request line falls at the grant, between observations.
                let (a, b) = (prev.max(self.breq_from), t.min(self.breq_until));
                if b > a {
                    self.bump(i, p.sysdiv.div(b) - p.sysdiv.div(a), sig);
                }
                continue;
            }
            if self.level(ev) {
                if matches!(ev, EV_OWNERSHIP | EV_OWNERSHIP_CANCELLED) {
                    self.gpc[i].tentative += e;
                } else {
                    self.bump(i, e, sig);
                }
            }
        }
        if self.sram_on && self.smode.event == sram::SEV_ALWAYS && !self.smode.edges {
            let a = sram::address(&self.smode, self.split_id, &self.inputs(0));
            self.sram_add(a, e.min(u32::MAX as u64) as u32, sig);
        }
    }

    /// A pulse of event `ev`: `edges` transitions or `cycles` cycles high.
    #[inline(always)]
    fn pulse(&mut self, ev: u8, edges: u64, cycles: u64, sig: &mut Signals) {
        let m = self.ev_counters[ev as usize & 15];
        if m == 0 {
            return;
        }
        if m & (m - 1) == 0 {
            // One counter (the usual case).
            let i = m.trailing_zeros() as usize;
            let n = if self.edge_counters & m != 0 {
                edges
            } else {
                cycles
            };
            if n != 0 {
                self.bump(i & 3, n, sig);
            }
        } else {
            self.count_pulse(m, edges, cycles, sig);
        }
    }

    /// Counts a pulse in the counters of bit set `m`.
    #[inline(never)]
    fn count_pulse(&mut self, mut m: u8, edges: u64, cycles: u64, sig: &mut Signals) {
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            let n = if self.edge_counters & (1 << i) != 0 {
                edges
            } else {
                cycles
            };
            self.bump(i, n, sig);
        }
    }

    #[inline(always)]
    fn latch_packet(&mut self, ar: u64, cr: u16, dir: Dir) {
        self.latch.ar = ar;
        self.latch.cr = cr;
        self.latch.dir = dir;
        if self.gpc_sens != 0 {
            self.refresh_for_packet();
        } else if self.sram_sens {
            // Only the SRAM's circuit depends on the packet: re-evaluate it alone.
            if self.sram_dir_only {
                self.sram_on = self.sram_dir_on[dir as usize];
            } else {
                self.cmp = Compare::new(&self.regs, &self.latch);
                self.sram_on = self.regs.sramce && enabled(self.smode.enable_bits, &self.cmp);
            }
            self.cycles_on = self.gpc_cycles_on || self.sram_extends();
        }
    }

    fn index(p: &Params, addr: u64) -> u32 {
        ((addr >> p.line_shift) & p.set_mask) as u32
    }

    /// The pipeline-status outputs up to now. Counted lazily: the selected events of an
    /// interval are added when the enables are about to change, before a read, at the end, or
    /// at once when a pipeline counter may interrupt (so the interrupt comes on time).
    #[inline]
    fn pipeline(&mut self, cycles: &[u64; 16], sig: &mut Signals) {
        self.cur_ps = *cycles;
        if self.ps_eager {
            self.settle(sig);
        }
    }

    fn settle(&mut self, sig: &mut Signals) {
        if self.lazy_always != 0 {
            let e = self.last_t / self.sys - self.always_since / self.sys;
            for i in 0..4 {
                if self.lazy_always & (1 << i) != 0 && e > 0 {
                    self.bump(i, e, sig);
                }
            }
        }
        self.always_since = self.last_t;
        if self.ev_mask & (1 << EV_PIPELINE) != 0 {
            for i in 0..4 {
                if self.gpc_on[i] && self.gpc[i].mode.event == EV_PIPELINE {
                    let mut m = self.gpc[i].mode.ps_mask;
                    let mut n = 0;
                    while m != 0 {
                        let k = m.trailing_zeros() as usize;
                        n += self.cur_ps[k] - self.last_ps[k];
                        m &= m - 1;
                    }
                    if self.gpc[i].pipeline(n) > 0 {
                        self.gpc_overflow(i, sig);
                    }
                }
            }
        }
        self.last_ps = self.cur_ps;
    }

    #[inline(never)]
    fn on_l2_access(&mut self, o: &Observation, p: &Params, sig: &mut Signals) {
        if let Observation::L2Access {
            t,
            addr,
            index,
            write,
            ifetch,
            hit,
            index_invalid,
            ..
        } = *o
        {
            self.advance(t, p, sig);
            self.l2_access(addr, index, write, ifetch, hit, index_invalid, sig)
        }
    }

    #[inline(never)]
    fn on_issue(&mut self, o: &Observation, p: &Params, sig: &mut Signals) {
        if let Observation::TxIssue {
            t, cmd, addr, home, ..
        } = *o
        {
            self.issue(t, cmd, NumachineMonitor::ar(addr, home), p, sig)
        }
    }

    #[inline(never)]
    fn on_inbound(&mut self, o: &Observation, p: &Params, sig: &mut Signals) {
        if let Observation::Inbound {
            t, kind, addr, hit, ..
        } = *o
        {
            self.inbound(t, kind, addr, hit, p, sig)
        }
    }

    /// A PhaseID write.
    #[inline(never)]
    fn phase(&mut self, t: Tick, phase: u16, p: &Params, sig: &mut Signals) {
        self.advance(t, p, sig);
        self.set_reg(Reg::Pr, phase as u32);
    }

    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn l2_access(
        &mut self,
        addr: u64,
        index: u32,
        write: bool,
        ifetch: bool,
        hit: bool,
        index_invalid: bool,
        sig: &mut Signals,
    ) {
        if self.estimating {
            self.inval_hit.access(index);
            if !hit {
                self.inval_miss.l2_miss(index, index_invalid);
            }
        }
        let ev = self.smode.event;
        if !self.regs.sramce || !(sram::SEV_L2_ACCESS..=sram::SEV_L2_MISS).contains(&ev) {
            return;
        }
        self.l2_sram_count(addr, index, write, ifetch, hit, sig)
    }

    /// The SRAM part of an L2 access (SRAM events 2-5).
    #[inline(never)]
    fn l2_sram(&mut self, o: &Observation, sig: &mut Signals) {
        if let Observation::L2Access {
            addr,
            index,
            write,
            ifetch,
            hit,
            ..
        } = *o
        {
            self.l2_sram_count(addr, index, write, ifetch, hit, sig)
        }
    }

    #[inline(always)]
    fn l2_sram_count(
        &mut self,
        addr: u64,
        index: u32,
        write: bool,
        ifetch: bool,
        hit: bool,
        sig: &mut Signals,
    ) {
        let counted = match self.smode.event {
            sram::SEV_L2_ACCESS => true,
            sram::SEV_L2_READ => !write,
            sram::SEV_L2_WRITE => write,
            _ => !hit,
        };
        if !counted {
            return;
        }
        // The secondary-cache index buffer presents the probe's address to the AW comparator.
        let l = Latch {
            ar: addr & 0xFF_FFFF_FFFF,
            ..self.latch
        };
        if enabled(self.smode.enable_bits, &Compare::new(&self.regs, &l)) {
            let x = AddrInputs {
                l2_index: index,
                ifetch,
                ..self.inputs(0)
            };
            let a = sram::address(&self.smode, self.split_id, &x);
            self.sram_add(a, 1, sig);
        }
    }

    #[inline(always)]
    fn issue(&mut self, t: Tick, cmd: Cmd, ar: u64, p: &Params, sig: &mut Signals) {
        self.advance(t, p, sig);
        self.latch_packet(ar, command::request(cmd), Dir::Sending);
        let index = Self::index(p, ar & 0xF_FFFF_FFFF);
        let inv_miss = match cmd {
            _ if !self.estimating => false,
            Cmd::Read | Cmd::ReadEx => self.inval_miss.read(index),
            Cmd::UncachedRead => {
                self.inval_miss.uncached_read();
                false
            }
            _ => false,
        };
        self.out = Some(Out {
            cmd,
            nacked: false,
            inv_miss,
        });
        if !self.active() {
            return;
        }
        if self.latency_hooks {
            for i in 0..4 {
                let ev = self.gpc[i].mode.event;
                if ev == EV_LAST_LATENCY {
                    self.gpc[i].counter.preload(0); // reset at every request (4.4.4)
                }
                if matches!(ev, EV_OWNERSHIP | EV_OWNERSHIP_CANCELLED) {
                    self.gpc[i].tentative =
                        (cmd == Cmd::Upgrade && self.gpc_on[i] && self.gpc[i].mode.edges) as u64;
                }
            }
        }
        let (r, x) = (cmd == Cmd::Read, cmd == Cmd::ReadEx);
        self.pulse(EV_READ, r as u64, 0, sig);
        self.pulse(EV_READ_EX, x as u64, 0, sig);
        self.pulse(EV_READ_ANY, (r || x) as u64, 0, sig);
        self.pulse(EV_INVAL_MISSES, inv_miss as u64, 0, sig);
        let data = if cmd == Cmd::UncachedWrite { 1 } else { 0 };
        self.pulse(EV_BUS_ACTIVITY, 1, 1 + data, sig);
        // SRAM with the masks enabled counts when the enable holds at the request too (and
        // then with the timer at 0 and the previous RSR/MTR: the seed's warning, 4.4.5).
        if self.sram_on
            && self.smode.event == sram::SEV_LINE_REQUESTS
            && self.smode.enable_bits & 0x200 != 0
            && matches!(cmd, Cmd::Read | Cmd::ReadEx | Cmd::Upgrade)
        {
            let a = sram::address(&self.smode, self.split_id, &self.inputs(0));
            self.sram_add(a, 1, sig);
        }
    }

    /// The card asked for its bus at `t`; the grant comes at `grant` (GPC event D). The
    /// request line is high from the request to the grant; a request made while it is high
    /// (the agent has more to send) extends it, so an occurrence is a request made while the
    /// line is low. A request granted at once (presets without bus arbitration) is a pulse
    /// shorter than a monitor cycle: one occurrence, no cycles.
    #[inline(never)]
    fn bus_request(&mut self, t: Tick, grant: Tick, p: &Params, sig: &mut Signals) {
        self.advance(t, p, sig);
        let low = t >= self.breq_until;
        let mut cycles = 0;
        if grant > t {
            // Newly high time before the last integration point (a request reported after
            // the card's other observations moved past it) is counted now; the rest when the
            // card integrates up to later observations.
            let lo = t.max(self.breq_until);
            let hi = grant.min(self.last_t);
            if hi > lo {
                cycles = p.sysdiv.div(hi) - p.sysdiv.div(lo);
            }
            if low {
                self.breq_from = t;
            }
            self.breq_until = self.breq_until.max(grant);
        }
        self.pulse(EV_BUS_REQUEST, low as u64, cycles, sig);
    }

    /// Some counter of this card counts event D now.
    fn counts_bus_requests(&self) -> bool {
        self.regs.gpce
            && self
                .gpc
                .iter()
                .any(|g| g.mode.enable && g.mode.event == EV_BUS_REQUEST)
    }

    #[inline(never)]
    fn nack(&mut self, t: Tick, p: &Params, sig: &mut Signals) {
        self.advance(t, p, sig);
        let ar = self.latch.ar;
        self.latch_packet(ar, command::NACK | command::RESPONSE, Dir::Receiving);
        let first = match self.out.as_mut() {
            Some(o) if !o.nacked => {
                o.nacked = true;
                true
            }
            _ => false,
        };
        if !self.active() {
            return;
        }
        self.pulse(EV_NACK_CYCLES, first as u64, 0, sig);
        self.pulse(EV_NACK_RETRIES, 1, 1, sig);
        self.pulse(EV_BUS_ACTIVITY, 0, 1, sig);
    }

    /// A `TxDone` (passed whole: its many fields are read where needed).
    #[inline(never)]
    fn done(&mut self, o: &Observation, p: &Params, sig: &mut Signals) {
        let Observation::TxDone {
            t,
            cmd,
            addr,
            issued,
            outcome,
            miss_type: mt,
            resp,
            home,
            evicted,
            index_invalid,
            ..
        } = *o
        else {
            return;
        };
        let rsr = resp.rsr(cmd != Cmd::Read);
        let ar = NumachineMonitor::ar(addr, home);
        if evicted && self.estimating {
            // The fill's victim became invalid at the same index just before (4.8a's pattern).
            self.line_dropped(t, Self::index(p, addr), p, sig);
        }
        self.advance(t, p, sig);
        let cr = command::response(cmd, outcome);
        self.latch_packet(ar, cr, Dir::Receiving);
        self.out = None;
        if outcome == Outcome::Cancelled && self.estimating {
            // The R4400 retries the store after a cancelled upgrade: its probe reads the line
            // (invalidated by the competing owner) invalid, then the read-exclusive follows.
            // pmusim's agent re-issues without a new probe, so the probe is supplied here.
            self.inval_miss
                .l2_miss(Self::index(p, ar & 0xF_FFFF_FFFF), index_invalid);
        }
        let line = matches!(cmd, Cmd::Read | Cmd::ReadEx | Cmd::Upgrade);
        if line {
            self.rsr = rsr;
            self.mtr = mt as u8;
            if mt == MissType::Invalidation && outcome == Outcome::Done && self.estimating {
                self.inval_miss.exact_miss();
            }
        }
        if !self.active() {
            return;
        }
        for i in 0..4 {
            if !self.latency_hooks {
                break;
            }
            let ev = self.gpc[i].mode.event;
            if matches!(ev, EV_OWNERSHIP | EV_OWNERSHIP_CANCELLED) {
                let n = std::mem::take(&mut self.gpc[i].tentative);
                let ok = cmd == Cmd::Upgrade
                    && match ev {
                        EV_OWNERSHIP => outcome == Outcome::Done,
                        _ => outcome == Outcome::Cancelled,
                    };
                if ok && n > 0 {
                    self.bump(i, n, sig);
                }
            }
        }
        let data = cr & command::DATA != 0;
        self.pulse(
            EV_BUS_ACTIVITY,
            0,
            1 + if data { p.data_cycles } else { 0 },
            sig,
        );
        if line {
            let cycles = p.sysdiv.div(t) - p.sysdiv.div(issued);
            let l = latency::latency12(cycles);
            if l.timed_out {
                self.latency_timeouts += 1;
            }
            let h = &mut self.exact_latency[(rsr & 0x1F) as usize];
            if h.is_empty() {
                h.resize(latency::TIMEOUT as usize + 1, 0);
            }
            h[cycles.min(latency::TIMEOUT) as usize] += 1;
            if self.sram_on && self.smode.event == sram::SEV_LINE_REQUESTS {
                let a = sram::address(&self.smode, self.split_id, &self.inputs(l.value));
                self.sram_add(a, 1, sig);
            }
        }
        if self.sram_on && self.smode.event == sram::SEV_ALWAYS && self.smode.edges {
            let a = sram::address(&self.smode, self.split_id, &self.inputs(0));
            self.sram_add(a, 1, sig);
        }
    }

    #[inline(always)]
    fn inbound(
        &mut self,
        t: Tick,
        kind: InboundKind,
        addr: u64,
        hit: bool,
        p: &Params,
        sig: &mut Signals,
    ) {
        let estimated = self.estimating && kind != InboundKind::InterventionShared;
        if hit && estimated {
            // The invalidation or exclusive intervention made the valid line invalid, just
            // before the packet is seen here (pmusim's order; 4.8a's pattern).
            self.line_dropped(t, Self::index(p, addr), p, sig);
        }
        self.advance(t, p, sig);
        // Inbound packets carry no home station for the monitor: AR[39..32] = 0.
        self.latch_packet(addr & 0xF_FFFF_FFFF, command::inbound(kind), Dir::Receiving);
        let counted = estimated && self.inval_hit.inbound(t, Self::index(p, addr), hit);
        if !self.active() {
            return;
        }
        let data = if kind == InboundKind::Invalidate {
            0
        } else {
            p.data_cycles
        };
        self.pulse(EV_BUS_ACTIVITY, 0, 1 + data, sig);
        self.pulse(EV_INVAL_HITS, counted as u64, counted as u64, sig);
    }

    /// A line at `index` became invalid (the invalidation-hit estimator's pattern).
    #[inline(never)]
    fn line_dropped(&mut self, t: Tick, index: u32, p: &Params, sig: &mut Signals) {
        if self.inval_hit.dropped(t, index, p.window) && self.active() {
            self.advance(t, p, sig);
            self.pulse(EV_INVAL_HITS, 1, 1, sig);
        }
    }

    fn read_word(&mut self, off: u64) -> u32 {
        match off {
            0..=0x3F => Reg::from_word(off / 4)
                .map(|r| self.regs.get(r))
                .unwrap_or(0),
            regs::GPC_BASE..=0x11F => self.gpc[((off - regs::GPC_BASE) / 4) as usize % 4]
                .counter
                .get() as u32,
            regs::GPC_RESET_BASE..=0x13F => self.gpc
                [((off - regs::GPC_RESET_BASE) / 4) as usize % 4]
                .counter
                .read_reset() as u32,
            regs::ISR => {
                self.irq_level = false;
                std::mem::take(&mut self.isr) as u32
            }
            regs::SRAM_OVF_ADDR => self.sram.last_overflow as u32,
            regs::SRAM_BASE..=0x7FFFF => self.sram.words[((off - regs::SRAM_BASE) / 4) as usize],
            _ => 0,
        }
    }

    fn write_word(&mut self, off: u64, v: u32, sig: &mut Signals) {
        match off {
            0..=0x3F => {
                if let Ok(r) = Reg::from_word(off / 4) {
                    self.set_reg(r, v);
                }
            }
            regs::GPC_BASE..=0x13F => {
                let i = ((off - regs::GPC_BASE) / 4) as usize % 4;
                self.gpc[i].counter.preload(v as u64);
            }
            regs::ISR => {
                self.isr &= !(v as u8);
                if self.isr == 0 {
                    self.irq_level = false;
                }
            }
            regs::ACCUMULATE if self.sram_on && self.smode.event == sram::SEV_ACCUMULATE => {
                let a = sram::address(&self.smode, self.split_id, &self.inputs(0));
                self.sram_add(a, v, sig);
            }
            regs::SRAM_BASE..=0x7FFFF => {
                self.sram.words[((off - regs::SRAM_BASE) / 4) as usize] = v;
            }
            _ => {}
        }
    }
}

/// Queue-length and waiting-time histograms of one resource (Table 4.10 item 15, "beyond the
/// original": the seed left memory and network queue monitoring for the future).
#[derive(Clone, Debug)]
pub struct QueueHist {
    /// Messages already queued when one arrived: 0..=63, the last bucket "63 or more".
    pub length: [u64; 64],
    /// Waiting time in monitor cycles, compact latency format (128 buckets).
    pub wait: [u64; 128],
    /// Waits of 4096 monitor cycles or more (beyond the 12-bit timer).
    pub wait_overflow: u64,
    pub uses: u64,
    pub wait_sum: u64,
    pub busy_sum: u64,
}

impl Default for QueueHist {
    fn default() -> Self {
        QueueHist {
            length: [0; 64],
            wait: [0; 128],
            wait_overflow: 0,
            uses: 0,
            wait_sum: 0,
            busy_sum: 0,
        }
    }
}

/// Queue histograms by resource kind and number (`Resource::slot`), so that a `Queue`
/// observation costs an index, not a name.
#[derive(Clone, Debug, Default)]
pub struct Queues {
    kinds: [Vec<QueueHist>; Resource::KINDS],
}

fn slot_resource(kind: usize, i: usize) -> Resource {
    let n = i as u16;
    match kind {
        0 => Resource::Bus(n),
        1 => Resource::Memory(n),
        2 => Resource::NetworkCache(n),
        3 => Resource::RingInterface(n),
        4 => Resource::InterRing(n),
        5 => Resource::ProtocolProcessor(n),
        _ => Resource::MeshLink((i / 4) as u16, (i % 4) as u8),
    }
}

impl Queues {
    #[inline]
    fn get(&mut self, r: Resource) -> &mut QueueHist {
        let (k, i) = r.slot();
        let v = &mut self.kinds[k];
        if v.len() <= i {
            v.resize_with(i + 1, QueueHist::default);
        }
        &mut v[i]
    }
    /// The resources that reported a use, by name (`resource_name`), in name order.
    pub fn by_name(&self) -> BTreeMap<String, &QueueHist> {
        self.kinds
            .iter()
            .enumerate()
            .flat_map(|(k, v)| {
                v.iter()
                    .enumerate()
                    .filter(|(_, q)| q.uses > 0)
                    .map(move |(i, q)| (resource_name(slot_resource(k, i)), q))
            })
            .collect()
    }
    pub fn is_empty(&self) -> bool {
        self.kinds.iter().all(|v| v.iter().all(|q| q.uses == 0))
    }
}

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
}

pub fn resource_name(r: Resource) -> String {
    match r {
        Resource::Bus(s) => format!("bus {s}"),
        Resource::Memory(n) => format!("memory {n}"),
        Resource::NetworkCache(s) => format!("network-cache {s}"),
        Resource::RingInterface(s) => format!("ring-interface {s}"),
        Resource::InterRing(r) => format!("inter-ring {r}"),
        Resource::ProtocolProcessor(n) => format!("protocol-processor {n}"),
        Resource::MeshLink(n, d) => format!("mesh-link {n}.{d}"),
    }
}

impl NumachineMonitor {
    pub fn new(preset: &Preset, setup: Setup) -> Result<NumachineMonitor, String> {
        let clocks = preset.clocks_built().map_err(|e| e.0)?;
        let sys = clocks.get("system").ok_or("no system clock")?.period;
        let cpu = clocks.get("cpu").ok_or("no cpu clock")?.period;
        let l2 = &preset.caches.l2;
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

impl Card {
    /// Both master enables off: only the state a later enable needs is kept (the latched
    /// packet, the outstanding request, RSR/MTR, PR). The estimators' tallies, like the
    /// counters, cover the time a master enable is on; the L2 index states they read come
    /// with each observation, so nothing about them is kept here.
    #[cold]
    #[inline(never)]
    fn idle(&mut self, o: &Observation) {
        match *o {
            Observation::Pipeline { ref cycles, .. } => {
                self.last_ps = *cycles;
                self.cur_ps = *cycles;
            }
            Observation::TxIssue {
                cmd, addr, home, ..
            } => {
                self.latch.ar = NumachineMonitor::ar(addr, home);
                self.latch.cr = command::request(cmd);
                self.latch.dir = Dir::Sending;
                self.out = Some(Out {
                    cmd,
                    nacked: false,
                    inv_miss: false,
                });
            }
            Observation::TxNack { .. } => {
                self.latch.cr = command::NACK | command::RESPONSE;
                self.latch.dir = Dir::Receiving;
                if let Some(o) = self.out.as_mut() {
                    o.nacked = true;
                }
            }
            Observation::TxDone {
                cmd,
                addr,
                home,
                outcome,
                miss_type,
                resp,
                ..
            } => {
                self.latch.ar = NumachineMonitor::ar(addr, home);
                self.latch.cr = command::response(cmd, outcome);
                self.latch.dir = Dir::Receiving;
                self.out = None;
                if matches!(cmd, Cmd::Read | Cmd::ReadEx | Cmd::Upgrade) {
                    self.rsr = resp.rsr(cmd != Cmd::Read);
                    self.mtr = miss_type as u8;
                }
            }
            Observation::Inbound { kind, addr, .. } => {
                self.latch.ar = addr & 0xF_FFFF_FFFF;
                self.latch.cr = command::inbound(kind);
                self.latch.dir = Dir::Receiving;
            }
            Observation::Phase { phase, .. } => {
                self.regs.pr = phase;
                self.latch.pr = phase;
            }
            _ => {}
        }
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
            Observation::TxIssue { .. } => c.on_issue(o, p, sig),
            Observation::TxDone { .. } => c.done(o, p, sig),
            Observation::Inbound { .. } => c.on_inbound(o, p, sig),
            Observation::TxNack { t, .. } => c.nack(t, p, sig),
            Observation::BusRequest { t, grant, .. } => c.bus_request(t, grant, p, sig),
            Observation::Pipeline { ref cycles, .. } => c.pipeline(cycles, sig),
            Observation::Phase { t, phase, .. } => c.phase(t, phase, p, sig),
            _ => {}
        }
    }

    /// Every card's master enables are off: only PhaseID writes (and the pipeline status
    /// before a monitor access) arrive.
    #[inline(never)]
    fn observe_asleep(&mut self, o: &Observation) {
        match *o {
            Observation::Pipeline {
                proc, ref cycles, ..
            } => {
                let c = &mut self.cards[proc as usize];
                c.last_ps = *cycles;
                c.cur_ps = *cycles;
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

impl Probe for NumachineMonitor {
    #[inline]
    fn observe(&mut self, o: &Observation, sig: &mut Signals) {
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
        }
        Some(v)
    }

    fn wants_pipeline(&self) -> bool {
        self.pipeline
    }

    /// Asleep: only PhaseID writes. Awake: every observation of a processor card, the bus
    /// requests if a counter counts event D, and the queues if configured.
    fn interest(&self) -> u32 {
        if self.asleep {
            return kind::PHASE;
        }
        let mut k = kind::PACKETS | kind::PHASE;
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
        self.cards.iter().fold(0, |k, c| k | c.pipeline_before())
    }

    fn finish(&mut self, t: Tick) {
        let p = self.p;
        let mut sig = Signals::default();
        for c in &mut self.cards {
            c.advance(t, &p, &mut sig);
            c.settle(&mut sig);
        }
        self.end = t;
    }

    fn name(&self) -> &str {
        "numachine"
    }

    fn as_any(&self) -> &dyn std::any::Any {
        self
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
