//! Retirements the machine sums for a probe instead of reporting them one class at a time
//! (issue 14's cost figure; BENCHMARKS.md, "The Blue Gene/Q UPC").
//!
//! Why: a probe asking for `kind::RETIRE` gets one `Observation::Retire` per moved fine class
//! at every report (every time a thread returns to the event loop: about once per resume).
//! Building and dispatching those observations cost about 450 instructions per report on the
//! Blue Gene/Q UPC's opcode group, where the UPC then only summed them per hardware context
//! and `Op` until its next chain transfer. A probe that does that summing can hand the machine
//! a [`RetireSink`] (`Probe::retire_sink`): while it is the only probe that asks for
//! `kind::RETIRE` (and no probe wants a pipeline status before retirements), a report whose
//! span (from, t] is not empty and ends before the core's [`RetireBatch::horizon`] is added
//! here, per hardware context, and nothing is dispatched. Every other report goes out
//! as observations, as without a sink. The probe takes the sums when it needs them
//! (`RetireBatch::any`, then `RetireSum::take_ops` of each busy context).
//!
//! What a batch keeps: per hardware context the sum of the class and fine-class counts
//! (`cpu::RetireSum`, split into ops only when the probe takes it: cheaper than splitting
//! every report) and the end of its first span, and the last span's end. It forgets the rest
//! of the reports' `Origin` (software thread, phase, process, MSR bits) and when within the
//! batch each op first retired: a probe that needs those must not offer a sink.

use crate::cpu::op::Op;
use crate::cpu::retire_sum::RetireSum;
use engine::Tick;
use std::cell::RefCell;
use std::rc::Rc;

/// Hardware contexts a batch keeps apart; a report from a higher context goes out as
/// observations.
pub const CONTEXTS: usize = 4;

/// What one iteration of a spin-wait retires (`Ctx::spin_until`, charged when the wait ends:
/// a load and a taken branch).
pub const SPIN_OPS: [Op; 2] = [Op::Load8, Op::BrCondTaken];

/// One core's summed retirements.
#[derive(Clone, Debug, Default)]
pub struct RetireBatch {
    /// Spans ending before this tick may be summed (written by the probe; 0, the default:
    /// report every span).
    pub horizon: Tick,
    /// Per context, the sum (`RetireSum::take_ops` splits it into ops).
    pub sum: [RetireSum; CONTEXTS],
    /// Per context, the end of the first span in its sum.
    pub t0: [Tick; CONTEXTS],
    /// Bit `ctx`: the context's sum is not empty.
    pub busy: u8,
    /// The last summed span's end.
    pub last: Tick,
    /// Reports summed here (spans), over the run.
    pub spans: u64,
    /// Per context, how many more instructions it may retire before an armed counter of
    /// the probe can cross its threshold (0: nothing armed). The machine returns a thread
    /// that runs to the event loop by then (a core retires at most one instruction per
    /// cycle), so the span that crosses ends within a few cycles of the crossing
    /// instruction and the probe's overflow interrupt reaches the thread there.
    pub need: [u64; CONTEXTS],
    /// Per context, how many spin-wait iterations ([`SPIN_OPS`]) it may retire before an
    /// armed counter can cross (0: none counts them). The machine ends the spin-wait of an
    /// idle core's thread by then (`spin_check`), as a wake-up that finds the line
    /// unchanged: the thread charges the iterations so far, re-checks and spins again.
    pub spin: [u64; CONTEXTS],
}

impl RetireBatch {
    /// Something is summed.
    #[inline]
    pub fn any(&self) -> bool {
        self.busy != 0
    }
    /// The sum of context `ctx` for a span ending at `t`, marked busy.
    #[inline]
    pub fn open(&mut self, ctx: usize, t: Tick) -> &mut RetireSum {
        if self.busy >> ctx & 1 == 0 {
            self.busy |= 1 << ctx;
            self.t0[ctx] = t;
        }
        self.last = t;
        &mut self.sum[ctx]
    }
}

/// The batches of every core (index = core), shared by the probe and the machine.
#[derive(Clone, Debug, Default)]
pub struct RetireSink {
    pub cores: Vec<RetireBatch>,
    /// A `need` or `spin` changed since the machine last looked (after a probe's wake-up,
    /// where the probe arms counters; `spin_check::recheck`).
    pub changed: bool,
    /// Some core's `need` or `spin` is not 0 (kept by the probe): while none is, the machine
    /// looks at neither (`State::armed_any`).
    pub armed: bool,
}

impl RetireSink {
    /// A sink for `cores` cores, every horizon 0 (nothing summed until the probe says so).
    pub fn new(cores: usize) -> Shared {
        Rc::new(RefCell::new(RetireSink {
            cores: vec![RetireBatch::default(); cores],
            changed: false,
            armed: false,
        }))
    }
}

/// How the probe and the machine hold the sink.
pub type Shared = Rc<RefCell<RetireSink>>;
