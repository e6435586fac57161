//! A BGPM-style interface for simulated programs (issue 14 item 6, in part): an event set on
//! the calling core's UPC_P, programmed through its registers with uncached accesses (each
//! costing the window's cycles, no system call), as IBM's BGPM does in its software-distributed
//! mode: counters with sync override, started and stopped by the unit's run bit, read as 64-bit
//! values (the counter's SRAM part plus its local part), overflow thresholds preloaded as the
//! driver does, the handler through `Ctx::on_interrupt`.
//!
//! Not built: the hardware-distributed mode's UPC_C start from a program, multiplexing, L2 and
//! I/O event sets.

use super::events::{self, PEvent};
use super::probe::{sram_index, P_COUNTERS};
use super::regs::{self, CounterCfg};
use crate::plugin::Error;
use machine::Ctx;

/// Width of the UPC_P counters the program assumes (the chip's 14).
const WIDTH: u32 = 14;

/// An event set of the calling core's UPC_P: event i on counter i.
#[derive(Clone, Debug, Default)]
pub struct EventSet {
    events: Vec<(&'static PEvent, u8)>,
    overflow: Vec<Option<u64>>,
}

impl EventSet {
    pub fn new() -> EventSet {
        EventSet::default()
    }
    /// Adds the event called `name` (`PEVT_*`), counted on hardware threads `threads` (a mask;
    /// several bits: thread combine). Returns its index in the set.
    pub fn add(&mut self, name: &str, threads: u8) -> Result<usize, Error> {
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
        if self.events.len() == P_COUNTERS {
            return Err(Error::input(format!(
                "Bgpm_AddEvent: {name}: the set holds {P_COUNTERS} events, one per UPC_P counter"
            )));
        }
        if threads & 0xf == 0 || threads > 0xf {
            return Err(Error::input(format!(
                "Bgpm_AddEvent: {name}: thread mask {threads:#x} names no hardware thread 0..3"
            )));
        }
        self.events.push((e, threads));
        self.overflow.push(None);
        Ok(self.events.len() - 1)
    }
    /// Asks for an interrupt after `threshold` events of event `i` (before `apply`).
    pub fn set_overflow(&mut self, i: usize, threshold: u64) -> Result<(), Error> {
        if i >= self.events.len() || threshold == 0 {
            return Err(Error::input(format!(
                "Bgpm_SetOverflow: no event {i}, or a threshold of 0"
            )));
        }
        self.overflow[i] = Some(threshold);
        Ok(())
    }
    /// Writes the set to the UPC_P: configurations, thresholds (SRAM and local parts), stopped.
    pub fn apply(&self, ctx: &mut Ctx) {
        let k = ctx.proc();
        for (i, (e, threads)) in self.events.iter().enumerate() {
            let of = self.overflow[i];
            self.preload(ctx, k, i, of.map_or(0, |n| n.wrapping_neg()));
            let cfg = CounterCfg {
                event: e.sub,
                group: e.group as u8,
                threads: *threads,
                sync_override: true,
                int_enable: of.is_some(),
                enable: true,
                ..Default::default()
            };
            ctx.monitor_write(
                regs::UPC_P_BASE + regs::P_CFG + 8 * i as u64,
                8,
                cfg.encode(),
            );
        }
    }
    fn preload(&self, ctx: &mut Ctx, k: usize, i: usize, total: u64) {
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
    pub fn start(&self, ctx: &mut Ctx) {
        ctx.monitor_write(regs::UPC_P_BASE + regs::P_CONTROL, 8, regs::P_RUN);
    }
    pub fn stop(&self, ctx: &mut Ctx) {
        ctx.monitor_write(regs::UPC_P_BASE + regs::P_CONTROL, 8, 0);
    }
    /// Event `i`'s 64-bit count (for an event with a threshold, counted from 2^64 - threshold):
    /// the local part, the SRAM part, and the local part again, the SRAM re-read if a transfer
    /// moved counts between the two.
    pub fn read(&self, ctx: &mut Ctx, i: usize) -> u64 {
        let n = sram_index(false, ctx.proc(), i, false) as u64;
        let local = |ctx: &mut Ctx| {
            ctx.monitor_read(regs::UPC_P_BASE + regs::P_DATA + 8 * i as u64, 8) & ((1 << WIDTH) - 1)
        };
        let sram = |ctx: &mut Ctx| ctx.monitor_read(regs::UPC_C_BASE + regs::C_SRAM + 8 * n, 8);
        let a = local(ctx);
        let mut s = sram(ctx);
        let b = local(ctx);
        if b < a {
            s = sram(ctx);
        }
        s.wrapping_add(b)
    }
    /// Sets every event's count back to zero (thresholds re-armed).
    pub fn reset(&self, ctx: &mut Ctx) {
        let k = ctx.proc();
        for i in 0..self.events.len() {
            self.preload(ctx, k, i, self.overflow[i].map_or(0, |n| n.wrapping_neg()));
        }
    }
}

/// PAPI presets as a BG/Q user meets them, to the UPC_P events pmusim produces (PAPI's
/// `papi_events.csv` maps them to the same `PEVT_*` sources).
pub const PAPI_PRESETS: &[(&str, &[&str])] = &[
    ("PAPI_TOT_CYC", &["PEVT_CYCLES"]),
    ("PAPI_TOT_INS", &["PEVT_INST_ALL"]),
    (
        "PAPI_L1_DCM",
        &["PEVT_LSU_COMMIT_LD_MISSES", "PEVT_LSU_COMMIT_ST_MISSES"],
    ),
    ("PAPI_L1_LDM", &["PEVT_LSU_COMMIT_LD_MISSES"]),
    ("PAPI_L1_STM", &["PEVT_LSU_COMMIT_ST_MISSES"]),
    ("PAPI_L1_ICM", &["PEVT_IU_IL1_MISS"]),
    ("PAPI_TLB_DM", &["PEVT_MMU_DERAT_MISS"]),
    ("PAPI_TLB_IM", &["PEVT_MMU_IERAT_MISS"]),
    ("PAPI_HW_INT", &["PEVT_XU_INTS_TAKEN"]),
    ("PAPI_CSR_FAL", &["PEVT_XU_STCX_FAIL"]),
    ("PAPI_CSR_TOT", &["PEVT_LSU_COMMIT_STCX"]),
];

/// The `PEVT_*` events a PAPI preset sums.
pub fn papi_preset(name: &str) -> Option<&'static [&'static str]> {
    PAPI_PRESETS
        .iter()
        .find(|(p, _)| p.eq_ignore_ascii_case(name))
        .map(|(_, e)| *e)
}
