//! A BGPM-style interface for simulated programs (issue 14 item 6, in part): an event set on
//! the calling core's UPC_P, programmed through its registers with uncached accesses (each
//! costing the window's cycles, no system call), as IBM's BGPM does in its software-distributed
//! mode: counters with sync override, started and stopped by the unit's run bit, read as 64-bit
//! values (the counter's SRAM part plus its local part), overflow thresholds preloaded as the
//! driver does, the handler through `Ctx::on_interrupt`.
//!
//! Multiplexing ([`MuxSet`], BGPM's `Bgpm_SetMultiplex`): more events than the 24 counters, in
//! groups of at most 24 that take turns on the counters, switched when a period of processor
//! cycles has passed; each event's count is scaled by the cycles its group was on.
//!
//! Modes ([`Bgpm`], BGPM's `Bgpm_Init(mode)`): every software thread of the node initializes
//! BGPM in one mode before it creates an event set; the set then behaves as the mode says
//! (`bgpm_mode::BgpmMode`; driver `bgpm/src/bgpm_init.cc`, `ES_Factory.cc`): low-latency
//! distributed (its UPC_P off the chain, `UPC_CM_DISCON`: reads are the 14-bit local counters
//! with their wrap bit, no overflow or multiplexing), software-distributed (what
//! [`EventSet::new`] gives: 64-bit reads, thresholds, multiplexing, each thread starting its own
//! counters) and hardware-distributed (counters wait for UPC_C's synchronous start, which one
//! thread's start sends down the chain for every unit; no overflow or multiplexing).
//!
//! The groups switch when the program polls ([`MuxSet::poll`], BGPM's `Bgpm_SwitchMux`) or,
//! as BGPM does with a period, on the overflow interrupt of a cycle counter in each group
//! ([`MuxSet::on_overflow`]).
//!
//! An event set whose first event is a `PEVT_L2_*` event is an L2 unit set (`bgpm_l2`:
//! node-wide, combined or per slice, started by UPC_C's synchronous start). The I/O unit's
//! events have no source in pmusim and are refused by name.

use super::bgpm_ctrs::{self, CoreBlocks};
use super::bgpm_l2::{self, L2Events};
use super::bgpm_mode::BgpmMode;
use super::events::{self, PEvent};
use super::probe::{sram_index, P_COUNTERS};
use super::regs::{self, CounterCfg};
use crate::plugin::Error;
use machine::Ctx;
use std::cell::RefCell;
use std::rc::Rc;

/// BGPM's node-wide state for simulated programs (`Bgpm_Init`): the mode the first thread
/// chose and the software threads that initialized. Cloned into each thread's closure.
#[derive(Clone, Debug, Default)]
pub struct Bgpm(Rc<RefCell<Node>>);

#[derive(Debug, Default)]
struct Node {
    mode: Option<(BgpmMode, usize)>,
    inited: Vec<usize>,
    /// The node's L2 mode (combined or per slice), fixed by its first L2 event.
    l2_combine: Option<bool>,
    /// Per core, the hardware threads holding its counter blocks (`bgpm_ctrs`).
    blocks: Vec<CoreBlocks>,
    /// The node's L2 overflow thresholds and accumulated values (`bgpm_l2::L2Ovf`).
    l2_ovf: Rc<RefCell<bgpm_l2::L2Ovf>>,
}

impl Bgpm {
    pub fn new() -> Bgpm {
        Bgpm::default()
    }
    /// `Bgpm_Init(mode)` by the calling software thread: the node's first call sets the mode;
    /// a thread's second call is `BGPM_EINITED`, and a mode other than the node's
    /// `BGPM_ECONF_MODE` (the driver's checks, `bgpm_init.cc`). Costs no simulated time (the
    /// driver's shared-memory set-up is not modelled).
    pub fn init(&self, ctx: &Ctx, mode: BgpmMode) -> Result<(), Error> {
        let mut n = self.0.borrow_mut();
        let what = format!("Bgpm_Init({}) on thread {}", mode.driver(), ctx.tid());
        if n.inited.contains(&ctx.tid()) {
            return Err(Error::input(format!(
                "{what}: BGPM_EINITED: bgpm is already initialized on this thread (call Bgpm_Init once per thread)"
            )));
        }
        if let Some((m, by)) = n.mode.filter(|&(m, _)| m != mode) {
            return Err(Error::input(format!(
                "{what}: BGPM_ECONF_MODE: init mode conflicts with another initialized thread mode on the node (thread {by} chose {}; every thread must ask for the same mode)",
                m.driver()
            )));
        }
        n.mode.get_or_insert((mode, ctx.tid()));
        n.inited.push(ctx.tid());
        Ok(())
    }
    /// The node's mode, once a thread initialized.
    pub fn mode(&self) -> Option<BgpmMode> {
        self.0.borrow().mode.map(|m| m.0)
    }
    /// The calling thread's mode, or `BGPM_ENOT_INIT` naming `what`.
    fn mode_of(&self, ctx: &Ctx, what: &str) -> Result<BgpmMode, Error> {
        let n = self.0.borrow();
        match n.mode {
            Some((m, _)) if n.inited.contains(&ctx.tid()) => Ok(m),
            _ => Err(Error::input(format!(
                "{what} on thread {}: BGPM_ENOT_INIT: not init yet (call Bgpm_Init first)",
                ctx.tid()
            ))),
        }
    }
    /// `Bgpm_CreateEventSet`: an empty event set in the thread's mode.
    pub fn create_event_set(&self, ctx: &mut Ctx) -> Result<EventSet, Error> {
        let mode = self.mode_of(ctx, "Bgpm_CreateEventSet")?;
        Ok(EventSet {
            mode,
            node: Some(self.clone()),
            hw: Some((ctx.proc(), ctx.hw_context())),
            ..EventSet::default()
        })
    }
    /// Reserves `n` counter blocks of core `core` for its hardware thread `k`.
    fn reserve(&self, core: usize, k: usize, n: usize, what: &str) -> Result<(), Error> {
        let blocks = &mut self.0.borrow_mut().blocks;
        if blocks.len() <= core {
            blocks.resize(core + 1, CoreBlocks::default());
        }
        blocks[core].reserve(k, n, what)
    }
    /// The node's L2 mode, set to `combined` by its first L2 event (`ES_Factory.cc`).
    fn l2_mode(&self, combined: bool) -> bool {
        *self.0.borrow_mut().l2_combine.get_or_insert(combined)
    }
    /// `Bgpm_SetMultiplex`: a multiplexed set, which only the software-distributed mode
    /// supports (`BGPM_EINV_OP` otherwise, as the driver's other Punit sets answer).
    pub fn create_mux(&self, ctx: &Ctx, period: u64) -> Result<MuxSet, Error> {
        let mode = self.mode_of(ctx, "Bgpm_SetMultiplex")?;
        if mode != BgpmMode::SwDistrib {
            return Err(Error::input(format!(
                "Bgpm_SetMultiplex: BGPM_EINV_OP: {} supports no multiplexing (use BGPM_MODE_SWDISTRIB)",
                mode.driver()
            )));
        }
        MuxSet::new(period)
    }
}

/// Width of the UPC_P counters the program assumes (the chip's 14).
const WIDTH: u32 = 14;

/// A PAPI preset in an [`EventSet`]: the preset and its first counter.
#[derive(Clone, Copy, Debug)]
pub struct PresetRef {
    pub preset: &'static super::papi::Preset,
    pub first: usize,
}

/// An event set of the calling core's UPC_P (event i on counter i), or of the L2 unit, in a
/// BGPM mode.
#[derive(Clone, Debug)]
pub struct EventSet {
    events: Vec<(&'static PEvent, u8)>,
    overflow: Vec<Option<u64>>,
    mode: BgpmMode,
    /// An L2 unit set: its events (the set's first event was a `PEVT_L2_*`).
    l2: Option<L2Events>,
    /// The node that created the set (its L2 mode), if made by `Bgpm::create_event_set`.
    node: Option<Bgpm>,
    /// The creating thread's core and hardware thread (`Bgpm::create_event_set`).
    hw: Option<(usize, usize)>,
    /// Each event's UPC_P counter: the driver's per-thread blocks (`bgpm_ctrs`) in a
    /// `Bgpm::create_event_set` set, event i on counter i in an `EventSet::new` one.
    ctrs: Vec<usize>,
    /// The flop weights `Bgpm_SetFpDivScale` and `Bgpm_SetFpSqrScale` chose (log2; `None`:
    /// the UPC_P's as they stand), written to the core's `P_FP_WEIGHTS` on `apply`.
    fp: (Option<u8>, Option<u8>),
}

impl Default for EventSet {
    fn default() -> EventSet {
        EventSet {
            events: Vec::new(),
            overflow: Vec::new(),
            mode: BgpmMode::SwDistrib,
            l2: None,
            node: None,
            hw: None,
            ctrs: Vec::new(),
            fp: (None, None),
        }
    }
}

/// `BGPM_ECONF_UNIT` for event `name` added to a set of `unit`.
fn econf_unit(name: &str, unit: &str) -> Error {
    Error::input(format!(
        "Bgpm_AddEvent: {name}: BGPM_ECONF_UNIT: event id conflicts with unit assigned to event set (the set counts {unit} events; create another event set for it)"
    ))
}

impl EventSet {
    /// A software-distributed set (BGPM's default mode), without `Bgpm_Init`.
    pub fn new() -> EventSet {
        EventSet::default()
    }
    /// The set's BGPM mode.
    pub fn mode(&self) -> BgpmMode {
        self.mode
    }
    /// Adds the event called `name` (`PEVT_*`), counted on hardware threads `threads` (a mask;
    /// several bits: thread combine). Returns its index in the set.
    ///
    /// A `PEVT_L2_*` event makes (or joins) an L2 unit set (`bgpm_l2`; `threads` unused: the
    /// L2 events are node-wide); mixing units is `BGPM_ECONF_UNIT`, mixing combined and
    /// per-slice L2 events `BGPM_ECONF_L2_COMBINE`.
    pub fn add(&mut self, name: &str, threads: u8) -> Result<usize, Error> {
        if let Some(unit) = bgpm_l2::other_unit(name) {
            return Err(Error::input(format!(
                "Bgpm_AddEvent: {name} is an event of {unit}, which pmusim's machines do not have (no source produces it)"
            )));
        }
        if let Some(r) = bgpm_l2::l2_named(name, "Bgpm_AddEvent") {
            let (e, comb) = r?;
            if !self.events.is_empty() {
                return Err(econf_unit(name, "Punit"));
            }
            let (combined, shared) = match (&self.l2, &self.node) {
                (Some(l2), _) => (l2.combined(), None),
                (None, Some(node)) => (node.l2_mode(comb), Some(node.0.borrow().l2_ovf.clone())),
                (None, None) => (comb, None),
            };
            return self
                .l2
                .get_or_insert_with(|| L2Events::on_node(combined, shared.unwrap_or_default()))
                .add(name, e, comb);
        }
        if self.l2.is_some() {
            return Err(econf_unit(name, "L2 unit"));
        }
        if let Some(n) = events::absent_opcode(name) {
            return Err(Error::input(format!(
                "Bgpm_AddEvent: {n} is an opcode group no instruction class of pmusim falls in"
            )));
        }
        let e = events::p_event_named(name).ok_or_else(|| {
            Error::input(format!(
                "Bgpm_AddEvent: `{name}` is not a UPC_P event pmusim produces"
            ))
        })?;
        if threads & 0xf == 0 || threads > 0xf {
            return Err(Error::input(format!(
                "Bgpm_AddEvent: {name}: thread mask {threads:#x} names no hardware thread 0..3"
            )));
        }
        if let (Some(node), Some((core, k))) = (&self.node, self.hw) {
            let mut evs: Vec<&PEvent> = self.events.iter().map(|x| x.0).collect();
            evs.push(e);
            let what = format!(
                "Bgpm_AddEvent: {name} (event {} of hardware thread {k}'s set on core {core})",
                evs.len()
            );
            let n = bgpm_ctrs::blocks_needed(&evs).map_err(|a2| {
                Error::input(if a2 {
                    format!("{what}: BGPM_ESIGRESERVED: A2 Signals Reserved (possibles for event are all used): at most 2 events of an A2 subunit per 6 counters a thread holds (8 in all), and 6 or 12 A2 events")
                } else {
                    format!("{what}: BGPM_ECTRRESERVED: Counter Reserved (possibles for event are all used): a core has {P_COUNTERS} counters")
                })
            })?;
            node.reserve(core, k, n, &what)?;
            self.ctrs = bgpm_ctrs::assign(&evs, k, n);
        } else if self.events.len() == P_COUNTERS {
            return Err(Error::input(format!(
                "Bgpm_AddEvent: {name}: the set holds {P_COUNTERS} events, one per UPC_P counter"
            )));
        } else {
            self.ctrs.push(self.events.len());
        }
        self.events.push((e, threads));
        self.overflow.push(None);
        Ok(self.events.len() - 1)
    }
    /// Adds PAPI preset `name` (`papi::PRESETS`, as PAPI maps it on BG/Q): its events on the
    /// next counters, each on `threads`. A preset of PAPI's table whose native events pmusim
    /// does not produce is refused by name with what it lacks; one that does not fit the
    /// counters left adds nothing.
    pub fn add_preset(&mut self, name: &str, threads: u8) -> Result<PresetRef, Error> {
        let what = format!("PAPI_add_named_event({name})");
        let p = match super::papi::lookup(name, &what) {
            Some(r) => r?,
            None => {
                return Err(Error::input(format!(
                    "{what}: `{name}` is not a PAPI preset of the Blue Gene/Q (docs/upc.md, PAPI presets)"
                )))
            }
        };
        if self.events.len() + p.events.len() > P_COUNTERS {
            return Err(Error::input(format!(
                "{what}: takes {} counters, {} of the {P_COUNTERS} are left",
                p.events.len(),
                P_COUNTERS - self.events.len()
            )));
        }
        let first = self.events.len();
        for e in p.events {
            self.add(e, threads)?;
        }
        Ok(PresetRef { preset: p, first })
    }
    /// A preset's value (`PAPI_read`): its events' 64-bit counts combined as PAPI derives it.
    pub fn read_preset(&self, ctx: &mut Ctx, r: &PresetRef) -> i64 {
        let n: Vec<i64> = (r.first..r.first + r.preset.events.len())
            .map(|i| self.read(ctx, i) as i64)
            .collect();
        r.preset.value(&n)
    }
    /// Asks for an interrupt after `threshold` events of event `i` (before `apply`). On an
    /// L2 set, `threshold` is the driver's period (`bgpm_l2::L2Events::set_overflow`).
    pub fn set_overflow(&mut self, i: usize, threshold: u64) -> Result<(), Error> {
        if let Some(l2) = &mut self.l2 {
            return l2.set_overflow(i, threshold);
        }
        if !self.mode.overflow() {
            return Err(Error::input(format!(
                "Bgpm_SetOverflow: BGPM_EINV_OP: {} supports no overflow (use BGPM_MODE_SWDISTRIB)",
                self.mode.driver()
            )));
        }
        if i >= self.events.len() || threshold == 0 {
            return Err(Error::input(format!(
                "Bgpm_SetOverflow: no event {i}, or a threshold of 0"
            )));
        }
        self.overflow[i] = Some(threshold);
        Ok(())
    }
    /// `Bgpm_SetFpDivScale` (`div`) or `Bgpm_SetFpSqrScale`: the flops one divide or square
    /// root counts in the set's flop-counting events (`PEVT_INST_QFPU_FPGRP1`), `scale` 0..3
    /// for 1, 2, 4 or 8 (`bgpm/include/funcs.h`); written to the core's UPC_P weights
    /// (`regs::P_FP_WEIGHTS`, one value per core) by `apply`. The driver refuses a set whose
    /// value differs from another set's on the core (`BGPM_ESQRT_SCALE_MISMATCH`); pmusim's
    /// last `apply` wins.
    pub fn set_fp_scale(&mut self, div: bool, scale: u8) -> Result<(), Error> {
        let f = if div {
            "Bgpm_SetFpDivScale"
        } else {
            "Bgpm_SetFpSqrScale"
        };
        if scale > 3 {
            return Err(Error::input(format!(
                "{f}: scale {scale}: BGPM_EINV_PARM (0..3: 1, 2, 4 or 8 flops per instruction)"
            )));
        }
        if div {
            self.fp.0 = Some(scale);
        } else {
            self.fp.1 = Some(scale);
        }
        Ok(())
    }
    /// Writes the set to the UPC_P: configurations, thresholds (SRAM and local parts), stopped.
    /// Low-latency: the UPC_P leaves the chain first; hardware-distributed: UPC_C's chain is
    /// stopped (every unit's synchronized counters), for one start to begin them all.
    pub fn apply(&self, ctx: &mut Ctx) {
        if let Some(l2) = &self.l2 {
            return l2.apply(ctx);
        }
        let k = ctx.proc();
        match self.mode {
            BgpmMode::LlDistrib => {
                // Off the chain (the driver's `UPC_P__CONFIG__JOIN_RING` clear), which leaves
                // every run bit as it is: a sibling thread's running set keeps counting.
                let p = regs::UPC_P_BASE + regs::P_CONTROL;
                ctx.monitor_write(p, 8, regs::P_DISCON);
                self.stop(ctx)
            }
            BgpmMode::HwDistrib => self.stop(ctx),
            BgpmMode::SwDistrib => {}
        }
        if self.fp != (None, None) {
            let r = regs::UPC_P_BASE + regs::P_FP_WEIGHTS;
            let mut w = regs::FpWeights::decode(ctx.monitor_read(r, 8));
            w.div = self.fp.0.unwrap_or(w.div);
            w.sqrt = self.fp.1.unwrap_or(w.sqrt);
            ctx.monitor_write(r, 8, w.encode());
        }
        for (i, (e, threads)) in self.events.iter().enumerate() {
            let of = self.overflow[i];
            let c = self.ctrs[i];
            self.preload(ctx, k, c, of.map_or(0, |n| n.wrapping_neg()));
            let cfg = CounterCfg {
                event: e.sub,
                group: e.group as u8,
                threads: *threads,
                sync_override: self.mode.sync_override(),
                int_enable: of.is_some(),
                enable: true,
                ..Default::default()
            };
            ctx.monitor_write(
                regs::UPC_P_BASE + regs::P_CFG + 8 * c as u64,
                8,
                cfg.encode(),
            );
        }
    }
    fn preload(&self, ctx: &mut Ctx, k: usize, i: usize, total: u64) {
        if self.mode == BgpmMode::LlDistrib {
            // Off the chain: the local counter is the whole count.
            ctx.monitor_write(regs::UPC_P_BASE + regs::P_DATA + 8 * i as u64, 8, 0);
            return;
        }
        let half = 1u64 << (WIDTH - 1);
        let hi = total & !(half - 1);
        let armed = hi.checked_add(half).is_none() as u64;
        let n = sram_index(false, k, i, false) as u64;
        ctx.monitor_write(regs::UPC_C_BASE + regs::C_SRAM + 8 * n, 8, hi);
        ctx.monitor_write(
            regs::UPC_P_BASE + regs::P_DATA + 8 * i as u64,
            8,
            total & (half - 1) | armed << WIDTH,
        );
    }
    /// Starts the counters: the run bits of the set's own counters, one store to the UPC_P's
    /// `control_w1s` (the driver's `Upci_Punit_Start_Indep`, `spi/include/upci/punit.h`), so
    /// the other threads' counters on the core keep their state (low-latency: off the chain);
    /// or, in the hardware-distributed mode, UPC_C's run bit, whose synchronous start reaches
    /// every unit `units` x2 cycles later (docs/upc.md, "The daisy chain").
    pub fn start(&self, ctx: &mut Ctx) {
        self.run(ctx, true);
    }
    pub fn stop(&self, ctx: &mut Ctx) {
        self.run(ctx, false);
    }
    fn run(&self, ctx: &mut Ctx, on: bool) {
        if let Some(l2) = &self.l2 {
            return l2.run(ctx, on, self.mode);
        }
        match self.mode {
            BgpmMode::SwDistrib | BgpmMode::LlDistrib => {
                let r = if on { regs::P_RUN_W1S } else { regs::P_RUN_W1C };
                let mask = self.ctrs.iter().fold(0, |m, &c| m | 1u64 << c);
                ctx.monitor_write(regs::UPC_P_BASE + r, 8, mask)
            }
            BgpmMode::HwDistrib => {
                let c = regs::UPC_C_BASE + regs::C_CONTROL;
                let v = ctx.monitor_read(c, 8);
                ctx.monitor_write(c, 8, (v & !1) | on as u64);
            }
        }
    }
    /// `Bgpm_ReadLLPunit`-style read of event `i` in the low-latency mode: the 14-bit local
    /// counter and whether it wrapped since the last reset (its big-overflow bit: the
    /// driver's `BGPM_LLCOUNT_OVERFLOW`). One uncached load.
    pub fn read_ll(&self, ctx: &mut Ctx, i: usize) -> (u64, bool) {
        let c = self.ctrs[i] as u64;
        let v = ctx.monitor_read(regs::UPC_P_BASE + regs::P_DATA + 8 * c, 8);
        (v & ((1 << WIDTH) - 1), v >> (WIDTH + 1) & 1 != 0)
    }
    /// Event `i`'s 64-bit count (for an event with a threshold, counted from 2^64 - threshold):
    /// the local part, the SRAM part, and the local part again, the SRAM re-read if a transfer
    /// moved counts between the two.
    /// An L2 set's event `i` is summed over the slices (`Bgpm_ReadEvent`).
    pub fn read(&self, ctx: &mut Ctx, i: usize) -> u64 {
        if let Some(l2) = &self.l2 {
            return l2.read(ctx, i);
        }
        if self.mode == BgpmMode::LlDistrib {
            return self.read_ll(ctx, i).0;
        }
        let c = self.ctrs[i];
        let n = sram_index(false, ctx.proc(), c, false) as u64;
        bgpm_l2::split_read(
            ctx,
            &[regs::UPC_P_BASE + regs::P_DATA + 8 * c as u64],
            regs::UPC_C_BASE + regs::C_SRAM + 8 * n,
            WIDTH,
        )
    }
    /// `Bgpm_L2_ReadEvent`: an L2 set's event `i` on one slice (`BGPM_EINV_L2_SLICE` outside
    /// 0..15; `BGPM_EINV_OP` for a combined set or a Punit set).
    pub fn read_slice(&self, ctx: &mut Ctx, slice: usize, i: usize) -> Result<u64, Error> {
        match &self.l2 {
            Some(l2) => l2.read_slice(ctx, slice, i),
            None => Err(Error::input(
                "Bgpm_L2_ReadEvent: BGPM_EINV_OP: the set is not an L2 unit set",
            )),
        }
    }
    /// An L2 set's part of the overflow handler (`bgpm_l2::L2Events::on_interrupt`): the
    /// set's overflow vector for the interrupt `vector` (0 for a Punit set).
    pub fn on_interrupt(&mut self, ctx: &mut Ctx, vector: u32) -> u64 {
        match &mut self.l2 {
            Some(l2) => l2.on_interrupt(ctx, vector),
            None => 0,
        }
    }
    /// An L2 set's node-wide overflows of event `i`'s counter so far (0 for a Punit set).
    pub fn overflows(&self, i: usize) -> u64 {
        self.l2.as_ref().map_or(0, |l2| l2.overflows(i))
    }
    /// An L2 set's count past the threshold at each of the node's re-arms of event `i`'s
    /// counter (`bgpm_l2::L2Events::overshoots`; empty for a Punit set).
    pub fn overshoots(&self, i: usize) -> Vec<u64> {
        self.l2.as_ref().map_or(Vec::new(), |l2| l2.overshoots(i))
    }
    /// Sets every event's count back to zero (thresholds re-armed).
    pub fn reset(&self, ctx: &mut Ctx) {
        if let Some(l2) = &self.l2 {
            return l2.reset(ctx);
        }
        let k = ctx.proc();
        for i in 0..self.events.len() {
            let of = self.overflow[i];
            self.preload(ctx, k, self.ctrs[i], of.map_or(0, |n| n.wrapping_neg()));
        }
    }
}

/// A multiplexed event set (BGPM's `Bgpm_SetMultiplex(set, period, normalize)`): events added
/// in order fill groups of 24 (one per UPC_P counter); one group at a time is applied and
/// counting. [`MuxSet::poll`], called by the program as often as it likes, switches to the next
/// group once `period` processor cycles have passed since the last switch: it stops the group,
/// reads its counts into 64-bit sums with the cycles the group was on, and applies and starts the
/// next. An event's estimate is its sum scaled by the cycles of the whole measurement over the
/// cycles its group was on (BGPM's normalized multiplexed value).
#[derive(Clone, Debug)]
pub struct MuxSet {
    names: Vec<(String, u8)>,
    groups: Vec<EventSet>,
    period: u64,
    cur: usize,
    /// Per event: its sum, and the cycles its group counted.
    sums: Vec<(u64, u64)>,
    /// When the current group started, and the measurement.
    since: u64,
    started: u64,
    total: u64,
    pub switches: u64,
    /// Between `start` and `stop`.
    running: bool,
    /// An `on_overflow` set's groups have their cycle counter (the last event of each).
    cycles_added: bool,
    /// Events per group: 24, or 23 when a cycle counter in each group drives the switch.
    cap: usize,
    /// Switched by the cycle counter's overflow interrupt (`on_overflow`): the thread mask
    /// its `PEVT_CYCLES` counter interrupts (the lowest thread in it).
    irq: Option<u8>,
}

impl MuxSet {
    /// A multiplexed set switching every `period` processor cycles.
    pub fn new(period: u64) -> Result<MuxSet, Error> {
        if period == 0 {
            return Err(Error::input(
                "Bgpm_SetMultiplex: a period of 0 cycles never lets a group count",
            ));
        }
        Ok(MuxSet {
            names: Vec::new(),
            groups: Vec::new(),
            period,
            cur: 0,
            sums: Vec::new(),
            since: 0,
            started: 0,
            total: 0,
            switches: 0,
            running: false,
            cycles_added: false,
            cap: P_COUNTERS,
            irq: None,
        })
    }
    /// A multiplexed set switched as BGPM switches it when given a period: each group gets a
    /// `PEVT_CYCLES` counter (so 23 events a group) with an overflow threshold of `period`
    /// cycles, whose interrupt, on hardware thread `threads.trailing_zeros()`, runs the switch
    /// ([`MuxSet::install`]); the program does not poll.
    pub fn on_overflow(period: u64, threads: u8) -> Result<MuxSet, Error> {
        let mut m = MuxSet::new(period)?;
        m.cap = P_COUNTERS - 1;
        m.irq = Some(threads);
        Ok(m)
    }
    /// Installs the switch as the thread's interrupt handler and starts the first group (an
    /// `on_overflow` set). An interrupt taken while the program itself is inside the set
    /// (starting, stopping) switches nothing.
    pub fn install(this: &Rc<RefCell<MuxSet>>, ctx: &mut Ctx) {
        let m = this.clone();
        ctx.on_interrupt(Box::new(move |ctx, _| {
            if let Ok(mut m) = m.try_borrow_mut() {
                if m.running {
                    m.switch(ctx);
                }
            }
        }));
        this.borrow_mut().start(ctx);
    }
    /// Adds an event (as [`EventSet::add`]); returns its index in the set.
    pub fn add(&mut self, name: &str, threads: u8) -> Result<usize, Error> {
        if bgpm_l2::l2_named(name, "").is_some() {
            return Err(Error::input(format!(
                "Bgpm_SetMultiplex: {name}: BGPM_EINV_OP: multiplexing is the Punit's; L2 events are counted by an L2 unit set of their own"
            )));
        }
        if self
            .groups
            .last()
            .is_none_or(|g| g.events.len() == self.cap)
        {
            self.groups.push(EventSet::new());
        }
        self.groups
            .last_mut()
            .expect("a group")
            .add(name, threads)?;
        self.names.push((name.to_string(), threads));
        self.sums.push((0, 0));
        Ok(self.names.len() - 1)
    }
    /// Groups the events fill.
    pub fn groups(&self) -> usize {
        self.groups.len()
    }
    /// Applies the first group and starts it (an `on_overflow` set: [`MuxSet::install`]).
    pub fn start(&mut self, ctx: &mut Ctx) {
        if let Some(threads) = self.irq.filter(|_| !self.cycles_added) {
            self.cycles_added = true;
            for g in &mut self.groups {
                let i = g.add("PEVT_CYCLES", threads).expect("a cycle counter");
                g.set_overflow(i, self.period).expect("a threshold");
            }
        }
        self.running = true;
        self.cur = 0;
        self.groups[0].apply(ctx);
        self.groups[0].reset(ctx);
        self.groups[0].start(ctx);
        self.since = ctx.cycles();
        self.started = self.since;
    }
    /// Switches to the next group if a period has passed (`Bgpm_SwitchMux`; an
    /// `on_overflow` set switches on its interrupt instead).
    pub fn poll(&mut self, ctx: &mut Ctx) {
        if self.irq.is_none() && ctx.cycles() - self.since >= self.period {
            self.switch(ctx);
        }
    }
    /// Stops the current group, adds its counts to the sums, applies and starts the next.
    fn switch(&mut self, ctx: &mut Ctx) {
        if self.groups.len() > 1 {
            self.collect(ctx);
            self.cur = (self.cur + 1) % self.groups.len();
            let g = &self.groups[self.cur];
            g.apply(ctx);
            g.reset(ctx);
            g.start(ctx);
            self.since = ctx.cycles();
            self.switches += 1;
        }
    }
    /// Stops the current group and adds its counts to the sums.
    fn collect(&mut self, ctx: &mut Ctx) {
        let g = &self.groups[self.cur];
        g.stop(ctx);
        let on = ctx.cycles() - self.since;
        let first = self.cur * self.cap;
        // The cycle counter an `on_overflow` set adds is the group's last event.
        let n = g.events.len() - self.cycles_added as usize;
        for i in 0..n {
            let n = g.read(ctx, i);
            let s = &mut self.sums[first + i];
            s.0 += n;
            s.1 += on;
        }
    }
    /// Stops counting: the last group's counts go to the sums.
    pub fn stop(&mut self, ctx: &mut Ctx) {
        self.running = false;
        self.collect(ctx);
        self.total = ctx.cycles() - self.started;
    }
    /// Event `i`'s raw sum and the cycles its group counted.
    pub fn raw(&self, i: usize) -> (u64, u64) {
        self.sums[i]
    }
    /// Event `i`'s estimate over the whole measurement: its sum times the measurement's cycles
    /// over its group's (after `stop`).
    pub fn estimate(&self, i: usize) -> u64 {
        let (n, on) = self.sums[i];
        if on == 0 {
            return 0;
        }
        (n as u128 * self.total as u128 / on as u128) as u64
    }
}

/// The `PEVT_*` events a PAPI preset pmusim computes is made of (`papi::preset`).
pub fn papi_preset(name: &str) -> Option<&'static [&'static str]> {
    super::papi::preset(name).map(|p| p.events)
}
