//! The whole simulated machine's state (everything but the threads' coroutines), and the
//! operations processors, memory systems and monitors share on it.

use crate::addr::{Addr, MemoryMap, StructId};
use crate::config::Preset;
use crate::cpu::{Core, Irq};
use crate::env::{dispatch, Env, Fault, Inbound, Observers};
use crate::event::{Ev, PRIO_WAKE};
use crate::memsys::{SysEv, System};
use crate::msg::{ProcMsg, SysMsg};
use crate::origin::Aux;
use crate::probe::{
    kind, Acted, Action, CoreEvent, Interests, Observation, Origin, Probe, Signals,
};
use crate::sched::{Run, Sched};
use crate::truth::GroundTruth;
use crate::uncached::Windows;
use engine::{Clocks, EventQueue, SimRng, Tick};
use std::collections::BTreeMap;

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
    /// Deliveries on their way into each processor's caches.
    pub inbound: Inbound,
    pub system: System,
    /// Uncached address windows and their owners (the agent routes uncached accesses by them).
    pub uncached: Windows,
    pub truth: Option<GroundTruth>,
    /// Attached with `Machine::attach`, which asks them their `interests`: a probe pushed here
    /// directly receives nothing.
    pub probes: Vec<Box<dyn Probe>>,
    pub sig: Signals,
    /// The one `kind::RETIRE` probe's sink (`retire_sink`), if it offers one: reports ending
    /// before a core's horizon are summed there instead of dispatched.
    pub retire_sink: Option<crate::retire_sink::Shared>,
    /// The sink says a counter is armed (`RetireSink::armed`), as of the last probe wake-up,
    /// register access, attach or unsummed retirement report (where the probe arms
    /// counters): the run-ahead bound and the spin checks look at the sink only then.
    pub armed_any: bool,
    /// Threads scan their next records for the horizon before which they send nothing
    /// (`sim`, "The thread's horizon"; `cpu::hits::horizon`), set when a run starts.
    pub horizons: bool,
    pub procedures: Vec<String>,
    /// Procedure ids of traced code blocks (`code_blocks`; empty unless a thread's fetches
    /// come from a trace).
    pub code_blocks: crate::code_blocks::CodeBlocks,
    /// A transaction waiting this long raises a bus error (NUMAchine: 4096 bus cycles),
    /// counted on the clock of period `timeout_clock` (`cpu::agent::arm_timer`).
    pub timeout: Option<Tick>,
    pub timeout_clock: Tick,
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
    /// Some probe takes responses (`TxDone`): fill in the L2 index state they carry
    /// (`index_invalid`), which the ground truth does not need.
    pub index_probes: bool,
    /// Some probe takes L2 accesses: fill in theirs. Apart from `index_probes` because a
    /// probe of responses alone (the NUMAchine monitor without its estimators or an SRAM
    /// counting L2 accesses) would otherwise pay a set scan on every L2 access it never
    /// receives (issue 20: 0.2 M instructions of producer-consumer's 58 M).
    pub l2_index_probes: bool,
    /// Core performance events are wanted (`core_event`): some probe asks for
    /// `kind::CORE_EVENT`, or the ground truth counts them (on the `cmp` system, Blue
    /// Gene/Q's). Otherwise a miss pays this one test for them.
    pub core_events_on: bool,
    /// What the probes want (`probe::Interests`).
    pub interests: Interests,
    /// Cycles of each processor at its last pipeline-status report.
    pub pipeline_seen: Vec<u64>,
    pub cpu_period: Tick,
    pub sys_period: Tick,
    pub fault: Fault,
    /// Software threads on hardware contexts (`sched`).
    pub sched: Sched,
    /// Settings probes may change (`settings`, registered by their owners), the latest
    /// request per line and whether some observer wants the origin of memory-system work
    /// (`aux.on`: a probe's `wants_origins`, or the ground truth's split by phase once a thread
    /// set a PhaseID).
    pub aux: Aux,
    /// Per attached probe: its wake-up clock period in ticks and next cycle (`Probe::wakes`).
    pub wakes: Vec<Option<(Tick, u64)>>,
    /// Wake-ups and delayed actions in the queue: events that keep no thread alive.
    pub passive_events: usize,
    /// Delayed actions (setting changes, page migrations) by (time, order asked).
    pub delayed: BTreeMap<(Tick, u64), Action>,
    pub delayed_seq: u64,
    /// What the probes' actions did.
    pub acted: Acted,
    /// The operating system (`[os]`), if the preset has one.
    pub os: Option<crate::os::Os>,
    /// Load-and-reserve reservations per hardware thread (`cpu::reserve`; inert unless
    /// `cpu.atomics = "larx-stcx"`).
    pub resv: crate::cpu::reserve::Reservations,
}

/// Cost of a protocol command issued on procedure change.
pub struct ProcedureCost {
    pub addr: Addr,
    /// Processor cycles of the memory fence before the command (FlashPoint, seed 3.2.4).
    pub fence_cycles: u64,
}

impl State {
    /// Queues processor `p`'s thread to resume at `at`, and notes the bound the resumption
    /// sets for the others (`Inbound::note_resume`), which every resumption must have
    /// ("The thread's horizon"); `horizon`: the thread's scanned horizon (0: none). In line
    /// at the quantum's yield (about once per record in a replay of 16 threads), called
    /// elsewhere.
    #[inline(always)]
    pub(crate) fn queue_resume_inline(&mut self, p: usize, at: Tick, horizon: Tick) {
        self.q
            .schedule_inline(at, crate::event::PRIO_RESUME, Ev::Resume(p as u16));
        self.inbound.note_resume(p, at, horizon);
    }

    /// [`State::queue_resume_inline`] without a horizon, where the compiler sees fit.
    #[inline]
    pub(crate) fn queue_resume(&mut self, p: usize, at: Tick) {
        self.q
            .schedule(at, crate::event::PRIO_RESUME, Ev::Resume(p as u16));
        self.inbound.note_resume(p, at, 0);
    }

    pub(crate) fn env(&mut self) -> (&mut System, Env<'_, SysEv>) {
        // The coherence line (the cores' last private level's), as the memory map has it.
        let line_shift = self.map.line_bytes().trailing_zeros();
        (
            &mut self.system,
            Env {
                q: &mut self.q,
                rng: &mut self.rng,
                map: &mut self.map,
                inbound: &mut self.inbound,
                obs: Observers {
                    truth: &mut self.truth,
                    probes: &mut self.probes,
                    interests: &self.interests,
                    sig: &mut self.sig,
                },
                line_shift,
                fault: &mut self.fault,
                aux: &self.aux,
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
        if self.aux.on {
            let who = self.origin_of_msg(p, &m);
            self.aux.current.set(who);
        }
        let (sys, mut env) = self.env();
        sys.from_proc(&mut env, t, p, m);
        self.take_signals();
    }

    /// Whose request a processor's message belongs to: a request or write-back is the
    /// processor's own (and becomes its line's latest request); an acknowledgement or an
    /// intervention reply belongs to the request that caused it.
    #[cold]
    fn origin_of_msg(&mut self, p: usize, m: &ProcMsg) -> Origin {
        let c = &self.cores[p];
        match *m {
            ProcMsg::Read { line } | ProcMsg::ReadEx { line } | ProcMsg::Upgrade { line } => {
                let who = c.pend.map_or_else(|| c.origin(), |pd| pd.who);
                self.aux.lines.note(line, who);
                who
            }
            ProcMsg::Writeback { line, .. } => {
                let who = c.origin();
                self.aux.lines.note(line, who);
                who
            }
            ProcMsg::Uncached { .. } => c.pend.map_or_else(|| c.origin(), |pd| pd.who),
            ProcMsg::InvalAck { line } | ProcMsg::InterventionReply { line, .. } => {
                self.aux.lines.of(line)
            }
        }
    }

    /// Whose request an invalidation or intervention at a processor serves.
    #[inline]
    pub(crate) fn inbound_origin(&self, line: u64) -> Origin {
        if self.aux.on {
            self.aux.lines.of(line)
        } else {
            Origin::default()
        }
    }

    /// Whose request memory-system event `e` serves (its line's latest request), for the
    /// observers that want origins. Out of line: in the event loop the lookup kept the event
    /// in memory for every event (about 60 M instructions of `numa16-share`, BENCHMARKS.md).
    #[cold]
    #[inline(never)]
    pub(crate) fn note_event_origin(&mut self, e: &SysEv) {
        let who = self.system.event_line(e).map(|l| self.aux.lines.of(l));
        self.aux.current.set(who.unwrap_or_default());
    }

    /// Asks again whether some observer wants origins of memory-system work.
    pub(crate) fn refresh_origins(&mut self) {
        self.aux.on = self.interests.origins || self.truth.as_ref().is_some_and(|gt| gt.by_phase());
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

    /// An `L2Access` observation (every L1 miss makes one), built by `make` only when
    /// something besides the ground truth's count of L2 accesses would look at it. When no
    /// probe wants the kind (nor the pipeline status before it) and no probe action waits,
    /// `observe_now` would do exactly `l2_accesses += 1`; building the observation and
    /// passing it through cost a fused 16-thread replay about 70 instructions per L1 miss
    /// (issue 19, BENCHMARKS.md).
    #[inline(always)]
    pub(crate) fn observe_l2_access(&mut self, make: impl FnOnce(&State) -> Observation) {
        let k = crate::probe::kind::L2_ACCESS;
        if (self.interests.any | self.interests.pipeline_before) & k == 0
            && self.sig.actions.is_empty()
        {
            if let Some(gt) = self.truth.as_mut() {
                gt.l2_accesses += 1;
            }
            return;
        }
        let o = make(self);
        self.observe_now(o);
    }

    /// The run-ahead bound an armed counter sets on core p's running thread: the time by
    /// which it may have retired as many instructions as the counter's probe still needs to
    /// cross (`RetireBatch::need`; a core retires at most one instruction per cycle), so the
    /// span that crosses is reported within a few cycles of its crossing instruction. One
    /// flag test while no counter is armed.
    #[inline(always)]
    pub(crate) fn armed_bound(&self, p: usize) -> Tick {
        if self.armed_any {
            self.armed_bound_sink(p)
        } else {
            Tick::MAX
        }
    }

    fn armed_bound_sink(&self, p: usize) -> Tick {
        let c = &self.cores[p];
        let need = self.armed_need(p);
        if need == 0 {
            Tick::MAX
        } else {
            c.now.saturating_add(need.saturating_mul(c.period))
        }
    }

    /// How many more instructions the thread holding core p may retire, counted from the
    /// last report of its retirements (`retired_mark`), before an armed counter of the retire
    /// sink can cross its threshold: `RetireBatch::need` of its hardware context (0: nothing
    /// armed there).
    pub(crate) fn armed_need(&self, p: usize) -> u64 {
        let c = &self.cores[p];
        self.retire_sink.as_ref().map_or(0, |s| {
            s.borrow()
                .cores
                .get(p)
                .and_then(|b| b.need.get(c.context as usize).copied())
                .unwrap_or(0)
        })
    }

    /// Reports what core p retired since the last report, one `Observation::Retire` per
    /// fine class with a count, spanning from the last report's time to the core's time now;
    /// nothing unless a probe watches retirements. Called when a thread returns to the event
    /// loop (every yield, block and end: so at least once per run-ahead window, whose bound
    /// is the next event of any kind, a probe's wake-up included) and around a spin loop's
    /// charge. So the hit path pays nothing, with or without a probe.
    #[inline(always)]
    pub(crate) fn flush_retired(&mut self, p: usize) {
        if self.cores[p].watch_retire {
            self.flush_watched(p);
        }
    }

    /// The test for nothing retired, apart from the report: a core switching hardware
    /// contexts flushes again just after the resume's flush (almost half of all calls on a
    /// 4-thread `cmp` run), where the report's own entry cost about 50 instructions. Time
    /// first: every retirement advances the core's time, and the mark is taken at it. Out of
    /// line, so that a run without a `Retire` probe keeps one flag test where it flushes.
    #[inline(never)]
    fn flush_watched(&mut self, p: usize) {
        let c = &self.cores[p];
        if c.now != c.retired_mark.t && c.retired_any() && !self.sum_retired(p) {
            self.report_retired(p);
        }
    }

    /// Adds the span of core p to the probe's sink (`retire_sink`) if the sink takes it: the
    /// common case while a sink is offered (547,086 of 553,482 reports of `hits` on `bgq`
    /// with the UPC's opcode group). Apart from [`State::report_retired`], whose frame (it
    /// builds observations) cost this path about 30 instructions per report.
    #[inline(always)]
    fn sum_retired(&mut self, p: usize) -> bool {
        let Some(sink) = &self.retire_sink else {
            return false;
        };
        let c = &mut self.cores[p];
        let (from, until) = (c.retired_mark.t, c.now);
        let ctx = c.context as usize;
        let mut s = sink.borrow_mut();
        let Some(b) = s.cores.get_mut(p) else {
            return false;
        };
        if !(from < until && until < b.horizon && ctx < crate::retire_sink::CONTEXTS) {
            return false;
        }
        // The sized loads and stores are always looked at (a dozen entries per report): a
        // dirty bit per reference would cost every run's hot path an extra store.
        let dirty = c.retire_dirty | crate::cpu::SIZED_DIRTY;
        c.retire_dirty = 0;
        b.spans += 1;
        let sum = b.open(ctx, until);
        c.cnt.add_since(&mut c.retired_mark, dirty, until, sum);
        true
    }

    /// Reports core p's span as observations (the sink, if any, did not take it).
    #[cold]
    #[inline(never)]
    fn report_retired(&mut self, p: usize) {
        use crate::cpu::op::Op;
        let c = &mut self.cores[p];
        let from = c.retired_mark.t;
        let until = c.now;
        let dirty = c.retire_dirty | crate::cpu::SIZED_DIRTY;
        c.retire_dirty = 0;
        let mut moved = c.cnt.ops_since(&mut c.retired_mark, dirty, until);
        let who = c.origin();
        // In `Op::ALL` order, as the mask's bits.
        while moved != 0 {
            let op = Op::ALL[moved.trailing_zeros() as usize];
            moved &= moved - 1;
            self.observe_now(Observation::Retire {
                proc: p as u16,
                t: until,
                from,
                op,
                n: self.cores[p].retired_mark.delta[op as usize],
                who,
            });
        }
        // Counting them may have armed a counter (a transfer inside the span).
        self.note_armed();
    }

    /// Reads `RetireSink::armed` into `armed_any`, and into every core's `Core::armed` when
    /// it changes.
    pub(crate) fn note_armed(&mut self) {
        let armed = self.retire_sink.as_ref().is_some_and(|s| s.borrow().armed);
        if armed != self.armed_any {
            for c in &mut self.cores {
                c.armed = armed;
                c.alu_cold = c.issue_width != 1 || armed;
            }
        }
        self.armed_any = armed;
    }

    /// `n` of core performance event `event` of thread `who` at `t` (`bgq::events::CoreEvent`,
    /// issue 14): counted by the ground truth; the observation is built only when a probe
    /// asks for `kind::CORE_EVENT` (one flag test otherwise). Called on slow paths only
    /// (misses, translations, atomics, interrupts).
    #[inline(always)]
    pub fn core_event(&mut self, t: Tick, who: Origin, event: CoreEvent, n: u64) {
        if self.core_events_on {
            self.core_event_on(t, who, event, n);
        }
    }

    #[cold]
    #[inline(never)]
    fn core_event_on(&mut self, t: Tick, who: Origin, event: CoreEvent, n: u64) {
        if let Some(gt) = self.truth.as_mut() {
            gt.core_event(who.core, who.context, event, n);
        }
        if self.interests.any & kind::CORE_EVENT != 0 {
            self.observe_now(Observation::CoreEvent {
                who,
                t,
                event,
                n: n.min(u32::MAX as u64) as u32,
            });
        }
    }

    /// Asks the probes again what they want (after one was attached or reprogrammed).
    pub(crate) fn refresh_interests(&mut self) {
        self.interests.refresh(&self.probes);
        // A sink only while one probe takes retirements and none wants the pipeline status
        // before them (each summed report would have brought one).
        let mut takers = self
            .interests
            .each
            .iter()
            .enumerate()
            .filter(|(_, &k)| k & kind::RETIRE != 0);
        self.retire_sink = match (takers.next(), takers.next()) {
            (Some((i, _)), None) if self.interests.pipeline_before & kind::RETIRE == 0 => {
                self.probes[i].retire_sink()
            }
            _ => None,
        };
        self.note_armed();
        let watch = self.interests.any & kind::RETIRE != 0;
        for c in &mut self.cores {
            if watch && !c.watch_retire {
                c.retired_mark = c.cnt.retire_mark(c.now);
                c.retire_dirty = 0;
            }
            c.watch_retire = watch;
        }
        let watch = self.interests.any & kind::RETIRE != 0;
        for c in &mut self.cores {
            c.watch_retire = watch;
        }
        self.pipeline_probes = self.interests.pipeline();
        self.line_probes = self.interests.line_state();
        self.index_probes = self.interests.any & kind::TX_DONE != 0;
        self.l2_index_probes = self.interests.any & kind::L2_ACCESS != 0;
        self.core_events_on = self.interests.any & kind::CORE_EVENT != 0
            || self
                .truth
                .as_ref()
                .is_some_and(|gt| !gt.core_events.is_empty());
        self.refresh_origins();
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
            restarts: c.cnt.restarts(),
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
        if !self.sig.actions.is_empty() {
            self.apply_actions();
        }
    }

    /// Applies the actions the probes asked for (see `probe::Action` and ARCHITECTURE.md's
    /// action table): interrupts at once, setting changes and page migrations through the
    /// event queue after their latencies, counted from the event being processed.
    #[cold]
    fn apply_actions(&mut self) {
        let now = self.q.now();
        for a in std::mem::take(&mut self.sig.actions) {
            match a {
                Action::Interrupt {
                    core,
                    context,
                    vector,
                    handler_cycles,
                } => self.interrupt(core as usize, context, vector, handler_cycles),
                Action::Set { setting, value } => match self.aux.settings.check(setting, value) {
                    Ok(lat) => self.delay(now + lat, a),
                    Err(_) => self.acted.settings_refused += 1,
                },
                Action::MigratePage { node, .. } => {
                    if (node as usize) < self.map.nodes() {
                        let cycles = self.preset.memory.page_migration_cycles;
                        self.delay(now + cycles * self.cpu_period, a);
                    } else {
                        self.acted.migrations_refused += 1;
                    }
                }
            }
        }
    }

    /// Raises an interrupt on hardware context `context` of core `p`: queued on the core for
    /// the software thread loaded on that context, which takes it at its next instruction
    /// boundary (`Ctx::after_resume`). Dropped if no live thread is loaded there.
    fn interrupt(&mut self, p: usize, context: u8, vector: u32, handler_cycles: u64) {
        self.acted.interrupts += 1;
        let n = self.sched.threads_per_core;
        let live = p < self.cores.len()
            && (context as usize) < n
            && self.sched.contexts[p * n + context as usize]
                .loaded
                .is_some_and(|t| self.sched.threads[t].run != Run::Done);
        if !live {
            self.acted.interrupts_dropped += 1;
            return;
        }
        let c = &mut self.cores[p];
        c.irq.push_back(Irq {
            context,
            vector,
            handler_cycles,
        });
        if c.context == context {
            c.run_until = 0;
        }
    }

    fn delay(&mut self, at: Tick, a: Action) {
        self.delayed.insert((at, self.delayed_seq), a);
        self.delayed_seq += 1;
        self.passive_events += 1;
        self.q.schedule(at, PRIO_WAKE, Ev::Apply);
    }

    /// The oldest delayed action takes effect (an `Ev::Apply` at `t`).
    pub(crate) fn apply_delayed(&mut self, t: Tick) {
        self.passive_events -= 1;
        let Some((_, a)) = self.delayed.pop_first() else {
            return;
        };
        match a {
            Action::Set { setting, value } => {
                self.aux.settings.apply(setting, value);
                if let Some(s) = self.aux.settings.setting(setting) {
                    self.system.setting_applied(&s.name, value);
                }
                let v = &mut self.acted.settings_applied;
                let i = setting.0 as usize;
                if v.len() <= i {
                    v.resize(i + 1, 0);
                }
                v[i] += 1;
            }
            Action::MigratePage { addr, node } => {
                let page = self.map.page_bytes();
                let shift = self.cores[0].l2.line_shift;
                let first = (addr & !(page - 1)) >> shift;
                let lines = first..first + (page >> shift);
                if self.system.page_movable(lines) {
                    self.map.set_home(addr, node as usize);
                    self.acted.migrations += 1;
                    self.acted.migration_cycles += self.preset.memory.page_migration_cycles;
                } else {
                    self.acted.migrations_refused += 1;
                }
            }
            Action::Interrupt { .. } => unreachable!("interrupts are not delayed"),
        }
        let _ = t;
    }

    /// A wake-up or a delayed action, due at `t`.
    pub(crate) fn passive(&mut self, t: Tick, ev: Ev<SysEv>) {
        match ev {
            Ev::Wake(k) => self.wake(k as usize, t),
            Ev::Apply => self.apply_delayed(t),
            _ => unreachable!("not a wake-up or a delayed action"),
        }
    }

    /// Probe `k` wakes at `t`: it is called, and rescheduled at the cycle it asks for next.
    pub(crate) fn wake(&mut self, k: usize, t: Tick) {
        self.passive_events -= 1;
        let Some((period, cycle)) = self.wakes[k] else {
            return;
        };
        self.acted.wakes += 1;
        let next = self.probes[k].wake(cycle, t, &mut self.sig);
        if self.interests.unchanged(k, &*self.probes[k]) {
            // The probe may have armed counters (`RetireSink::armed`).
            self.note_armed();
        } else {
            self.refresh_interests();
        }
        match next {
            Some(n) => {
                assert!(
                    n > cycle,
                    "probe {} asked to wake at cycle {n}, not after {cycle}",
                    self.probes[k].name()
                );
                self.wakes[k] = Some((period, n));
                self.passive_events += 1;
                self.q.schedule(n * period, PRIO_WAKE, Ev::Wake(k as u16));
            }
            None => self.wakes[k] = None,
        }
        self.take_signals();
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

    /// The memory system's command for a context switch on processor `p` (FlashPoint's
    /// procedure delta; see `MemorySystem::switch_command`).
    pub(crate) fn switch_hook(
        &mut self,
        p: usize,
        from: (u16, u32),
        to: (u16, u32),
    ) -> Option<ProcedureCost> {
        self.system
            .switch_command(p, from, to)
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
