//! BGPM's L2 unit for simulated programs (issue 14 item 6): an event set of `PEVT_L2_*`
//! events, counted node-wide by every slice's UPC_L2 and read from UPC_C, as the driver's L2
//! unit does (`jedbrown/bgq-driver`: `bgpm/src/ES_L2unit.cc`, `ES_Factory.cc`,
//! `spi/include/upci/upc_l2.h`, `bgpm/docs/DocUnits.h` "L2 Unit").
//!
//! - **Static counters.** "The events in the L2 counters are static": L2 event `e` (0..15,
//!   the driver's order) is always counter `e` of every slice, so the set configures counter
//!   `e` of all 16 slices for each of its events.
//! - **Combined or per slice, node-wide.** The node's first L2 event fixes its L2 mode
//!   (`ES_Factory.cc`: the combined names `PEVT_L2_*` turn on UPC_C's L2 combine, every
//!   slice's counter `e` summed in one SRAM counter; the `PEVT_L2_*_SLICE` names keep a
//!   counter per slice); an event of the other kind is then `BGPM_ECONF_L2_COMBINE`. An L2
//!   event in a Punit set, or a Punit event in an L2 set, is `BGPM_ECONF_UNIT`.
//! - **Start and stop** are UPC_C's synchronous start and stop (`UPC_L2_Start` is
//!   `UPC_C_Start_Sync_Counting_Delay`: the driver assumes every Punit and I/O counter has
//!   sync override, so the chain's start moves the L2 counters alone), followed by the
//!   driver's delays (800 cycles after a start, 1,600 after a stop, "to insure all counts are
//!   updated"; none in the hardware-distributed mode, as the driver's HW perspective).
//! - **Reads.** `Bgpm_ReadEvent` is the sum over the slices (one SRAM counter when
//!   combined); `Bgpm_L2_ReadEvent(slice)` one slice's (`BGPM_EINV_L2_SLICE` outside 0..15).
//!   Each is the SRAM counter plus the slice counters' low bits not yet handed over
//!   (`UPC_L2_DATA`): pmusim's counters hand over their top bit only (docs/upc.md,
//!   "Local-to-central protocol"), where the driver reads UPC_C alone.
//!
//! - **Overflow** (`Bgpm_SetOverflow` on an L2 event, [`L2Events::set_overflow`]), as the
//!   driver's L2 unit (`ES_L2unit.cc`, `SharedControlL2.h`, `funcs2.cc`): the period becomes
//!   the threshold 2^64 - period (`UPCI_PERIOD2THRES`; below 2^63 `BGPM_EINV_OVF`), one per
//!   counter for the node (another set's different one `BGPM_ETHRES_MISMATCH`), on the
//!   combined events only ("we don't support overflow when using separate slice events": the
//!   driver enables interrupts on UPC_C's L2 combined group alone; `BGPM_EUNSUP_OVERFLOW`
//!   here), in every BGPM mode (the L2 unit has no mode check). The threshold is preloaded
//!   in the combined SRAM counter; the slices hand over their whole counts and UPC_C
//!   interrupts on the transfer that wraps it (the driver's `ccg_int_en` on the L2 combined
//!   group; `unit::transfer_central`; at most a frame, 800 processor cycles, after the
//!   crossing: `DocSwFeatures.h`, "Slow Overflow"), to every hardware thread whose set
//!   applied an overflow (UPC_P
//!   `P_CINT_ENABLE`: "the L2 unit and I/O unit overflows are broadcast to the all cores and
//!   hardware threads", `bgpm/docs/DocGlossary.h`). The program's handler calls
//!   [`L2Events::on_interrupt`] (the driver's signal handler): one thread at a time (the
//!   driver's leader latch) finds the counters whose combined count wrapped (below 2^63,
//!   `ResetAndGetIntMask`), adds what they counted to the node's accumulated value and
//!   re-arms them, and every thread's set gets each overflow once (the driver's shared
//!   queue). The re-arm adds `threshold - count` to the SRAM counter with UPC_C's
//!   accumulate command (group 63, unused by Mode 0 and Mode 1, as B), which UPC_C applies
//!   at once, so events counted meanwhile are kept (the driver rewrites the threshold).
//!   `read` is the accumulated value plus the count since the threshold, as the driver's.
//!
//! The I/O unit (Message Unit, PCIe, DevBus events), the network and CNK units have no
//! source in pmusim's machines: their events are refused by name ([`other_unit`]).

use super::bgpm_mode::BgpmMode;
use super::events::{self, L2Event};
use super::probe::{sram_index, MAX_SLICES};
use super::regs::{self, CounterCfg};
use crate::plugin::Error;
use machine::Ctx;
use std::cell::RefCell;
use std::rc::Rc;

/// The driver's `UPC_SYNC_START_DELAY`: cycles it waits after a synchronous start (twice
/// that after a stop) for every unit to act on it.
pub const SYNC_DELAY: u64 = 800;

/// Width of the UPC_L2 counters the program assumes (the chip's 10).
const WIDTH: u32 = 10;

/// The L2 event a `PEVT_L2_*` name selects and whether it is a combined one; `None` for a
/// name that is not the driver's L2 event, an error for one pmusim does not produce.
pub fn l2_named(name: &str, what: &str) -> Option<Result<(L2Event, bool), Error>> {
    let (e, comb) = events::l2_event_named(name)?;
    let comb = comb?;
    if !e.modelled() {
        return Some(Err(Error::input(format!(
            "{what}: {name} is about speculation, which pmusim does not model (docs/bgq.md)"
        ))));
    }
    Some(Ok((e, comb)))
}

/// The BGPM unit of an event name that no source of pmusim's machines feeds (the driver's
/// I/O, network and CNK units: `spi/include/upci/events.h` after `PEVT_L2UNIT_LAST_EVENT`).
pub fn other_unit(name: &str) -> Option<&'static str> {
    const UNITS: [(&str, &str); 5] = [
        ("PEVT_MU_", "the I/O unit (Message Unit)"),
        ("PEVT_PCIE_", "the I/O unit (PCIe)"),
        ("PEVT_DB_", "the I/O unit (DevBus)"),
        ("PEVT_NW_", "the network unit"),
        ("PEVT_CNK_", "the CNK unit"),
    ];
    let up = name.to_ascii_uppercase();
    UNITS
        .iter()
        .find(|(p, _)| up.starts_with(p))
        .map(|&(_, u)| u)
}

/// The driver's `BGPM_THRESHOLD_MIN`: a threshold (2^64 - period) must be at least this,
/// and a combined count below it has wrapped (`globals.h`, `SharedControlL2.h`).
pub const THRESHOLD_MIN: u64 = 1 << 63;

/// UPC_C group that holds the re-arm's addend for the accumulate command (pmusim's choice:
/// Mode 0 uses groups 0..49, Mode 1 50..55).
const SCRATCH_GROUP: u64 = 63;

/// The node's L2 overflow state (the driver's `SharedControlL2`, in the node's shared
/// memory): per L2 counter the threshold reserved, the count accumulated by its overflows,
/// how many overflows it had, the count each re-arm found past the threshold; and the latch
/// one handler holds while it re-arms.
#[derive(Debug, Default)]
pub struct L2Ovf {
    thresholds: [Option<u64>; 16],
    accum: [u64; 16],
    overflows: [u64; 16],
    overshoots: [Vec<u64>; 16],
    busy: bool,
}

/// The L2 part of an event set: its events (each the L2 event number, which is also its
/// counter) and whether the slices are combined.
#[derive(Clone, Debug)]
pub struct L2Events {
    events: Vec<u8>,
    combined: bool,
    /// Per event, its overflow threshold (2^64 - period).
    ovf: Vec<Option<u64>>,
    /// The node's overflow state, shared by its sets.
    shared: Rc<RefCell<L2Ovf>>,
    /// Per counter, the node's overflows this set has handed to its program.
    seen: [u64; 16],
}

impl L2Events {
    pub fn new(combined: bool) -> L2Events {
        L2Events::on_node(combined, Rc::default())
    }
    /// A set on a node whose L2 overflow state is `shared`.
    pub fn on_node(combined: bool, shared: Rc<RefCell<L2Ovf>>) -> L2Events {
        L2Events {
            events: Vec::new(),
            combined,
            ovf: Vec::new(),
            shared,
            seen: [0; 16],
        }
    }
    pub fn combined(&self) -> bool {
        self.combined
    }
    pub fn len(&self) -> usize {
        self.events.len()
    }
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }
    /// Adds event `e` (combined or not, as its name said); `BGPM_ECONF_L2_COMBINE` if the
    /// set's L2 mode is the other.
    pub fn add(&mut self, name: &str, e: L2Event, comb: bool) -> Result<usize, Error> {
        if comb != self.combined {
            return Err(econf_l2_combine(name, self.combined));
        }
        self.events.push(e as u8);
        self.ovf.push(None);
        Ok(self.events.len() - 1)
    }
    /// `Bgpm_SetOverflow(set, i, period)` on L2 event `i` (before `apply`): the driver's
    /// checks, in its order, then the node-wide reservation of the threshold.
    pub fn set_overflow(&mut self, i: usize, period: u64) -> Result<(), Error> {
        let what = format!("Bgpm_SetOverflow(event {i}, period {period})");
        let thr = period.wrapping_neg();
        if thr < THRESHOLD_MIN {
            return Err(Error::input(format!(
                "{what}: BGPM_EINV_OVF: invalid overflow period (1 to 2^63 events)"
            )));
        }
        let Some(&e) = self.events.get(i) else {
            return Err(Error::input(format!(
                "{what}: BGPM_EINV_EVT_IDX: the set has {} events",
                self.events.len()
            )));
        };
        if !self.combined {
            return Err(Error::input(format!(
                "{what}: BGPM_EUNSUP_OVERFLOW: overflow is not supported for the per-slice L2 events (the driver interrupts on UPC_C's L2 combined group only: use the combined PEVT_L2_* events)"
            )));
        }
        let mut sh = self.shared.borrow_mut();
        match sh.thresholds[e as usize] {
            Some(t) if t != thr => {
                return Err(Error::input(format!(
                    "{what}: BGPM_ETHRES_MISMATCH: a different node wide overflow threshold (period {}) has already been reserved for L2 counter {e} (every set of the node must use that period)",
                    t.wrapping_neg()
                )))
            }
            _ => sh.thresholds[e as usize] = Some(thr),
        }
        self.ovf[i] = Some(thr);
        Ok(())
    }
    /// Whether an event of the set has an overflow threshold.
    pub fn has_overflow(&self) -> bool {
        self.ovf.iter().any(Option::is_some)
    }
    fn sram(&self, slice: usize, e: u8) -> u64 {
        let n = sram_index(true, slice, e as usize, self.combined) as u64;
        regs::UPC_C_BASE + regs::C_SRAM + 8 * n
    }
    fn data(slice: usize, e: u8) -> u64 {
        regs::UPC_C_BASE + regs::C_L2_DATA + 8 * (16 * slice as u64 + e as u64)
    }
    /// Stops UPC_C's chain (waiting for the stop to reach every unit), sets L2 combine as
    /// the set asks, configures counter `e` of every slice for each event and zeroes them.
    pub fn apply(&self, ctx: &mut Ctx) {
        let c = regs::UPC_C_BASE + regs::C_CONTROL;
        let v = ctx.monitor_read(c, 8);
        let combine = (self.combined as u64) << 2;
        ctx.monitor_write(c, 8, (v & !0b101) | combine);
        if v & 1 != 0 {
            ctx.idle(2 * SYNC_DELAY);
        }
        let thr = self.shared.borrow().thresholds;
        let cfg = |e: u8| CounterCfg {
            event: e,
            enable: true,
            int_enable: thr[e as usize].is_some(),
            ..Default::default()
        };
        for (k, &e) in self.events.iter().enumerate() {
            if self.events[..k].contains(&e) {
                continue;
            }
            for j in 0..MAX_SLICES {
                let off = regs::UPC_C_BASE + regs::C_L2_CFG + 8 * (16 * j as u64 + e as u64);
                ctx.monitor_write(off, 8, cfg(e).encode());
            }
        }
        self.reset(ctx);
        if self.has_overflow() {
            // The driver's Kernel_Upci_ResetInts(UPC_C_THREAD_INT_bit(thread)).
            let r = regs::UPC_P_BASE + regs::P_CINT_ENABLE;
            let v = ctx.monitor_read(r, 8);
            let k = ctx.hw_context();
            ctx.monitor_write(r, 8, v | 1 << k);
        }
    }
    /// Zeroes every slice's counter of each event and its SRAM counter(s); an event with an
    /// overflow threshold starts from it (the driver's `ResetThreshold`), its accumulated
    /// value zeroed (a per-slice counter armed if its start is already near overflow).
    pub fn reset(&self, ctx: &mut Ctx) {
        let half = 1u64 << (WIDTH - 1);
        for (k, &e) in self.events.iter().enumerate() {
            let thr = self.ovf[k];
            if thr.is_some() {
                self.shared.borrow_mut().accum[e as usize] = 0;
            }
            let start = thr.unwrap_or(0);
            // Under L2 combine (the only mode with overflow) UPC_C detects the wrap of the
            // combined count itself (`ccg_int_en`, `unit::transfer_central`): no slice armed.
            let armed = (!self.combined && start.checked_add(half).is_none()) as u64;
            for j in 0..MAX_SLICES {
                ctx.monitor_write(L2Events::data(j, e), 8, armed << WIDTH);
                if j == 0 || !self.combined {
                    ctx.monitor_write(self.sram(j, e), 8, start);
                }
            }
        }
    }
    /// The L2 part of the driver's overflow signal handler, for the program's handler to call
    /// with the interrupt's vector: unless another thread holds the latch, the counters with
    /// a threshold whose combined count wrapped have their count added to the node's
    /// accumulated value and are re-armed (UPC_C's accumulate adds `threshold - count`). Returns
    /// the overflow vector of this set (bit `i`: event `i`'s counter overflowed since the set
    /// last answered; `Bgpm_GetOverflowEventIndices`).
    pub fn on_interrupt(&mut self, ctx: &mut Ctx, vector: u32) -> u64 {
        if vector >> 16 != super::probe::VECTOR >> 16 || !self.has_overflow() {
            return 0;
        }
        let free = !std::mem::replace(&mut self.shared.borrow_mut().busy, true);
        if free {
            let thr = self.shared.borrow().thresholds;
            for (e, t) in thr.iter().enumerate() {
                let Some(t) = *t else { continue };
                let e = e as u8;
                // The combined SRAM counter alone, as the driver reads UPC_C: the slices hand
                // over their whole counts every frame, so a read of their registers beside it
                // may count a hand-over twice (it moves while the 32 reads go on), and the
                // re-arm, in place, keeps whatever the slices hold for the next frame.
                let v = ctx.monitor_read(self.sram(0, e), 8);
                if v >= THRESHOLD_MIN {
                    continue;
                }
                let scratch = regs::UPC_C_BASE + regs::C_SRAM + 8 * (16 * SCRATCH_GROUP + e as u64);
                ctx.monitor_write(scratch, 8, t.wrapping_sub(v));
                ctx.monitor_write(regs::UPC_C_BASE + regs::C_ACCUM_MASK, 8, 1 << e);
                let l2 = (sram_index(true, 0, 0, true) / 16) as u8;
                let a = regs::Accum {
                    a: l2,
                    b: SCRATCH_GROUP as u8,
                    c: l2,
                    subtract: false,
                    go: true,
                };
                ctx.monitor_write(regs::UPC_C_BASE + regs::C_ACCUM, 8, a.encode());
                let mut sh = self.shared.borrow_mut();
                sh.accum[e as usize] = sh.accum[e as usize].wrapping_add(v.wrapping_sub(t));
                sh.overflows[e as usize] += 1;
                sh.overshoots[e as usize].push(v);
            }
            self.shared.borrow_mut().busy = false;
        }
        let sh = self.shared.borrow();
        let mut mask = 0;
        for (i, &e) in self.events.iter().enumerate() {
            let e = e as usize;
            if self.ovf[i].is_some() && sh.overflows[e] > self.seen[e] {
                mask |= 1 << i;
            }
        }
        for (i, &e) in self.events.iter().enumerate() {
            if self.ovf[i].is_some() {
                self.seen[e as usize] = sh.overflows[e as usize];
            }
        }
        mask
    }
    /// The node's overflows of event `i`'s counter so far.
    pub fn overflows(&self, i: usize) -> u64 {
        self.shared.borrow().overflows[self.events[i] as usize]
    }
    /// The count past the threshold that each of the node's re-arms of event `i`'s counter
    /// found (what `read` gained beyond the period). The next overflow comes a period after
    /// the re-arm, so `period + v` events after the last crossing rather than at the next
    /// multiple of the period: the driver's `ResetAndGetIntMask` re-arms the same way
    /// (`AccumThreshold(count)`, then `ResetThreshold` stores the threshold, which also drops
    /// the events counted between its read and its store; pmusim's accumulate keeps those).
    pub fn overshoots(&self, i: usize) -> Vec<u64> {
        self.shared.borrow().overshoots[self.events[i] as usize].clone()
    }
    /// Counter `e`'s combined 64-bit count: the SRAM counter plus every slice's low bits.
    fn combined_count(&self, ctx: &mut Ctx, e: u8) -> u64 {
        let data: Vec<u64> = (0..MAX_SLICES).map(|j| L2Events::data(j, e)).collect();
        split_read(ctx, &data, self.sram(0, e), WIDTH)
    }
    /// UPC_C's synchronous start (`on`) or stop, then the driver's delay for it to reach
    /// every unit (none in the hardware-distributed mode).
    pub fn run(&self, ctx: &mut Ctx, on: bool, mode: BgpmMode) {
        let c = regs::UPC_C_BASE + regs::C_CONTROL;
        let v = ctx.monitor_read(c, 8);
        ctx.monitor_write(c, 8, (v & !1) | on as u64);
        if mode != BgpmMode::HwDistrib {
            ctx.idle(if on { SYNC_DELAY } else { 2 * SYNC_DELAY });
        }
    }
    /// Event `i`'s count summed over the slices (`Bgpm_ReadEvent`).
    pub fn read(&self, ctx: &mut Ctx, i: usize) -> u64 {
        let e = self.events[i];
        if self.combined {
            let v = self.combined_count(ctx, e);
            return match self.ovf[i] {
                // The accumulated value plus the count since the threshold (wrapped or not:
                // the driver's `ReadEvent`).
                Some(t) => self.shared.borrow().accum[e as usize].wrapping_add(v.wrapping_sub(t)),
                None => v,
            };
        }
        (0..MAX_SLICES)
            .map(|j| split_read(ctx, &[L2Events::data(j, e)], self.sram(j, e), WIDTH))
            .sum()
    }
    /// Event `i`'s count on one slice (`Bgpm_L2_ReadEvent`).
    pub fn read_slice(&self, ctx: &mut Ctx, slice: usize, i: usize) -> Result<u64, Error> {
        let what = format!("Bgpm_L2_ReadEvent(slice {slice}, event {i})");
        if slice >= MAX_SLICES {
            return Err(Error::input(format!(
                "{what}: BGPM_EINV_L2_SLICE: invalid L2 slice number (0..{})",
                MAX_SLICES - 1
            )));
        }
        if self.combined {
            return Err(Error::input(format!(
                "{what}: BGPM_EINV_OP: the set's events are combined (one SRAM counter for every slice); use the PEVT_L2_*_SLICE events to read a slice"
            )));
        }
        let e = self.events[i];
        Ok(split_read(
            ctx,
            &[L2Events::data(slice, e)],
            self.sram(slice, e),
            WIDTH,
        ))
    }
}

/// `BGPM_ECONF_L2_COMBINE` for event `name` when the L2 mode is `combined`.
pub fn econf_l2_combine(name: &str, combined: bool) -> Error {
    let (mode, other) = if combined {
        ("combined", "PEVT_L2_* (combined)")
    } else {
        ("slice", "PEVT_L2_*_SLICE (per slice)")
    };
    Error::input(format!(
        "Bgpm_AddEvent: {name}: BGPM_ECONF_L2_COMBINE: an L2 'slice' or 'combined' event was requested while the L2 mode is 'combined' or 'slice' respectively (the L2 mode is '{mode}', set by the first L2 event; UPC_C's L2 combine is one bit for every slice: use {other} events only)"
    ))
}

/// A 64-bit count kept as an SRAM counter (`sram`, an address) plus the low `width - 1` bits
/// of one or more local counters (`data`, their data registers' addresses) not yet handed
/// over: the locals, the SRAM counter, the locals again, and the SRAM counter again if a
/// transfer moved counts between the two meanwhile (a local value went down).
pub fn split_read(ctx: &mut Ctx, data: &[u64], sram: u64, width: u32) -> u64 {
    let mask = (1u64 << width) - 1;
    let mut moved = false;
    let before: Vec<u64> = data
        .iter()
        .map(|&a| ctx.monitor_read(a, 8) & mask)
        .collect();
    let mut s = ctx.monitor_read(sram, 8);
    let mut local = 0u64;
    for (&a, &b) in data.iter().zip(&before) {
        let v = ctx.monitor_read(a, 8) & mask;
        moved |= v < b;
        local += v;
    }
    if moved {
        s = ctx.monitor_read(sram, 8);
    }
    s.wrapping_add(local)
}
