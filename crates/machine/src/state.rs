//! The whole simulated machine's state (everything but the threads' coroutines), and the
//! operations processors, memory systems and monitors share on it.

use crate::addr::{Addr, MemoryMap, StructId};
use crate::config::Preset;
use crate::cpu::Core;
use crate::env::{dispatch, Env, Fault, Observers};
use crate::event::Ev;
use crate::memsys::{SysEv, System};
use crate::msg::{ProcMsg, SysMsg};
use crate::probe::{kind, Interests, Observation, Probe, Signals};
use crate::sched::Sched;
use crate::truth::GroundTruth;
use crate::uncached::Windows;
use engine::{Clocks, EventQueue, SimRng, Tick};
use std::collections::VecDeque;

/// The monitor regions' addresses (registered as uncached windows by the processor card).
pub use crate::uncached::{MONITOR_BASE, MONITOR_REMOTE_BASE};

/// The whole simulated machine's state (everything but the threads' coroutines).
pub struct State {
    pub preset: Preset,
    pub clocks: Clocks,
    pub q: EventQueue<Ev<SysEv>>,
    pub rng: SimRng,
    pub map: MemoryMap,
    pub cores: Vec<Core>,
    pub inbound: Vec<VecDeque<Tick>>,
    pub inbound_ticks: Tick,
    pub system: System,
    /// Uncached address windows and their owners (the agent routes uncached accesses by them).
    pub uncached: Windows,
    pub truth: Option<GroundTruth>,
    /// Attached with `Machine::attach`, which asks them their `interests`: a probe pushed here
    /// directly receives nothing.
    pub probes: Vec<Box<dyn Probe>>,
    pub sig: Signals,
    pub procedures: Vec<String>,
    /// NACKed requests older than this raise a bus error (NUMAchine: 4096 bus cycles).
    pub timeout: Option<Tick>,
    /// NACK back-off: uniform in 1..=backoff_max ticks.
    pub backoff_max: Tick,
    /// Emit LoadPerformed/StorePerformed (the protocol tester).
    pub value_probes: bool,
    /// Emit LineState on every L2 state change.
    pub line_probes: bool,
    /// Any observer attached (ground truth or probes).
    pub any_probe: bool,
    /// Some probe wants the pipeline-status stream.
    pub pipeline_probes: bool,
    /// Some probe takes L2 accesses or responses: fill in the L2 index states they carry
    /// (`index_invalid`), which the ground truth does not need.
    pub index_probes: bool,
    /// What the probes want (`probe::Interests`).
    pub interests: Interests,
    /// Cycles of each processor at its last pipeline-status report.
    pub pipeline_seen: Vec<u64>,
    pub cpu_period: Tick,
    pub sys_period: Tick,
    pub fault: Fault,
    /// Software threads on hardware contexts (`sched`).
    pub sched: Sched,
}

/// Cost of a protocol command issued on procedure change.
pub struct ProcedureCost {
    pub addr: Addr,
    /// Processor cycles of the memory fence before the command (FlashPoint, seed 3.2.4).
    pub fence_cycles: u64,
}

impl State {
    pub(crate) fn env(&mut self) -> (&mut System, Env<'_, SysEv>) {
        let line_shift = self.cores[0].l2.line_shift;
        (
            &mut self.system,
            Env {
                q: &mut self.q,
                rng: &mut self.rng,
                map: &mut self.map,
                inbound: &mut self.inbound,
                inbound_ticks: self.inbound_ticks,
                obs: Observers {
                    truth: &mut self.truth,
                    probes: &mut self.probes,
                    interests: &self.interests,
                    sig: &mut self.sig,
                    map: None,
                },
                line_shift,
                fault: &mut self.fault,
            },
        )
    }

    /// A write-through store of processor `p` at `t` (`caches.l1d_write_through`): returns
    /// when the memory controller accepted it.
    pub fn write_through(&mut self, p: usize, t: Tick, a: Addr, token: u64, whole: bool) -> Tick {
        let (sys, mut env) = self.env();
        sys.write_through(&mut env, t, p, a, token, whole)
    }

    /// Sends a message from processor p's external agent to the memory system at time t.
    pub fn send(&mut self, p: usize, t: Tick, m: ProcMsg) {
        let (sys, mut env) = self.env();
        sys.from_proc(&mut env, t, p, m);
        self.take_signals();
    }

    /// Delivers a message to processor p (after the inbound delay).
    pub fn deliver(&mut self, p: usize, t: Tick, m: SysMsg) {
        let (_, mut env) = self.env();
        env.deliver(p, t, m);
    }

    /// Hands an observation to the ground truth and every probe (inlined, so that the
    /// ground truth's dispatch on the observation's kind folds away at each call site).
    #[inline(always)]
    pub fn observe_now(&mut self, o: Observation) {
        let k = o.kind();
        if self.interests.pipeline_before & k != 0 {
            if let Some(p) = o.proc() {
                self.emit_pipeline(p as usize, o.time());
            }
        }
        if let Some(gt) = self.truth.as_mut() {
            gt.observe(&o, Some(&self.map));
        }
        if self.interests.any & k != 0 {
            dispatch(&mut self.probes, &self.interests.each, k, &o, &mut self.sig);
        }
        self.take_signals();
    }

    /// Asks the probes again what they want (after one was attached or reprogrammed).
    pub(crate) fn refresh_interests(&mut self) {
        self.interests.refresh(&self.probes);
        self.pipeline_probes = self.interests.pipeline();
        self.line_probes = self.interests.line_state();
        self.index_probes = self.interests.any & (kind::L2_ACCESS | kind::TX_DONE) != 0;
    }

    /// Emits processor p's accumulated pipeline status to the probes that want it.
    pub fn emit_pipeline(&mut self, p: usize, t: Tick) {
        // Nothing retired or stalled since the last report: nothing to tell.
        let cycles: u64 = self.cores[p].cnt.ps.iter().sum();
        if self.pipeline_seen[p] == cycles {
            return;
        }
        self.pipeline_seen[p] = cycles;
        let c = &self.cores[p];
        let o = Observation::Pipeline {
            proc: p as u16,
            t,
            cycles: c.cnt.ps,
            instr: c.cnt.instr,
        };
        for (pr, &m) in self.probes.iter_mut().zip(&self.interests.each) {
            if m & kind::PIPELINE != 0 {
                pr.observe(&o, &mut self.sig);
            }
        }
    }

    /// Uncached access to processor p's monitor region.
    pub fn mmio(&mut self, p: usize, t: Tick, off: u64, size: u8, w: Option<u64>) -> u64 {
        if self.pipeline_probes {
            self.emit_pipeline(p, t);
        }
        let mut v = None;
        for pr in self.probes.iter_mut() {
            if let Some(x) = pr.mmio(p as u16, t, off, size, w, &mut self.sig) {
                v = Some(x);
            }
        }
        self.refresh_interests();
        self.take_signals();
        v.unwrap_or(0)
    }

    #[inline]
    pub(crate) fn take_signals(&mut self) {
        if !self.sig.interrupts.is_empty() {
            self.deliver_interrupts();
        }
    }

    #[cold]
    fn deliver_interrupts(&mut self) {
        for (p, v) in std::mem::take(&mut self.sig.interrupts) {
            if let Some(c) = self.cores.get_mut(p as usize) {
                c.irq.push_back(v);
                c.run_until = 0;
            }
        }
    }

    /// Random NACK back-off before the `nacks`-th retry: uniform in 1..=window, the window
    /// doubling with each NACK of the same request up to 16 times the preset's back-off (so a
    /// hot line does not turn into a retry storm; the bus-error time-out still applies).
    pub fn backoff(&mut self, nacks: u32) -> Tick {
        let window = self.backoff_max.max(1) << nacks.saturating_sub(1).min(4);
        1 + self.rng.below(window)
    }

    pub(crate) fn procedure_hook(
        &mut self,
        p: usize,
        prev: u32,
        cur: u32,
    ) -> Option<ProcedureCost> {
        self.system
            .procedure_command(p, prev, cur)
            .map(|(addr, fence_cycles)| ProcedureCost { addr, fence_cycles })
    }

    pub(crate) fn alloc_hook(&mut self, a: Addr, bytes: u64, id: StructId) -> Vec<(Addr, u64)> {
        self.system.alloc_commands(a, bytes, id)
    }

    /// Simulated time in processor cycles.
    pub fn cycles(&self, t: Tick) -> u64 {
        t / self.cpu_period
    }
}
