//! What a memory system may touch while it handles a message or an event: the queue, randomness,
//! the memory map, the observers (ground truth and probes), and the processors' inbound paths.

use crate::addr::MemoryMap;
use crate::event::{Ev, PRIO_DELIVER, PRIO_SYS};
pub use crate::fault::Fault;
use crate::msg::SysMsg;
use crate::origin::Aux;
use crate::probe::{
    kind, Interests, L1pEvent, L2Event, Observation, Origin, Probe, Resource, Signals,
};
use crate::settings::Settings;
use crate::truth::GroundTruth;
use engine::{EventQueue, SimRng, Tick};
use std::collections::VecDeque;

/// What a memory system may use: the queue, randomness, the memory map, observation, and the
/// processors' interfaces (through `deliver`).
///
/// `S` is the event type of the machine's queue for memory-system events; a memory system is
/// generic over it and needs only `S: From<its own event>` (static dispatch: one
/// instantiation per machine, `memsys::SysEv`).
pub struct Env<'a, S> {
    pub q: &'a mut EventQueue<Ev<S>>,
    pub rng: &'a mut SimRng,
    pub map: &'a mut MemoryMap,
    pub inbound: &'a mut Inbound,
    pub obs: Observers<'a>,
    pub line_shift: u32,
    /// A deliberately injected protocol fault (for testing the protocol tester).
    pub fault: &'a mut Fault,
    /// Settings and the attribution of work to requests (`origin::Aux`).
    pub aux: &'a Aux,
}

/// Hands `o` (of kind `k`, which some probe wants) to the probes that want it.
#[inline(always)]
pub(crate) fn dispatch(
    probes: &mut [Box<dyn Probe>],
    each: &[u32],
    k: u32,
    o: &Observation,
    sig: &mut Signals,
) {
    if let [p] = probes {
        // One probe (the usual case): it is the one that wants `k`.
        p.observe(o, sig);
        return;
    }
    for (p, &m) in probes.iter_mut().zip(each) {
        if m & k != 0 {
            p.observe(o, sig);
        }
    }
}

/// The observers, borrowed.
pub struct Observers<'a> {
    pub truth: &'a mut Option<GroundTruth>,
    pub probes: &'a mut Vec<Box<dyn Probe>>,
    pub interests: &'a Interests,
    pub sig: &'a mut Signals,
}

/// The deliveries on their way into each processor's caches (their times, in order), and how
/// long a delivery takes to take effect. One value, borrowed by [`Env`] as one pointer: the
/// environment is built for every memory-system event (14 M times in `numa16-share`), so each
/// word it copies costs (BENCHMARKS.md, "Issue 13's figure, last cuts").
pub struct Inbound {
    /// Per processor, the times of the deliveries scheduled for it, earliest first.
    pub queues: Vec<VecDeque<Tick>>,
    /// A delivery takes effect this long after it is sent (`cpu.inbound_cycles`).
    pub ticks: Tick,
    /// How far past the next event a thread runs ahead (`sim`'s module documentation):
    /// `ticks`, or 1 with `PMUSIM_WINDOW=min` (a test's knob: no run-ahead, the thread
    /// yields as soon as its time passes the next event's).
    pub run_ahead: Tick,
    /// How much later than the next event of another kind the next thread resumption may
    /// be taken for the bound (`sim`'s module documentation, "The longer window" and "The
    /// memory system's lookahead"): the L2 hit time `L` plus what the memory system's
    /// requests take beyond the inbound delay to reach a processor (`D - I`,
    /// `MemorySystem::min_issue_to_delivery`) on machines where a resumed thread can send
    /// nothing before its L2 lookup, else 0. Set by the event loop when a run starts
    /// (`Machine::resume_extra`).
    pub resume_extra: Tick,
    /// A test's knob: `resume_extra` taken as this instead of the machine's
    /// (`run_ahead_tests`: a window one tick longer than the exact one changes a run). Also
    /// turns off the check of `granted` (a wider window is meant to break it).
    pub resume_extra_override: Option<Tick>,
    /// What the memory system's requests take beyond the inbound delay to reach a
    /// processor (`D - I`, "The memory system's lookahead") where a thread's scanned
    /// horizon may lengthen the window ("The thread's horizon"); 0 where it may not.
    pub issue_extra: Tick,
    /// Per processor, the bound its queued resumptions set for every other thread, less
    /// the inbound delay, and how many are queued (`Tick::MAX` with none): each
    /// resumption's `at + resume_extra`, or later when the thread's scan of its next
    /// records showed that it sends nothing before its horizon (`horizon + issue_extra`).
    pub resume_lb: ResumeBounds,
    /// A test's knob: ticks added to every thread's scanned horizon (`run_ahead_tests`: a
    /// horizon two ticks longer than the exact one changes a run). 0 otherwise; any other
    /// value turns off the check of `granted` (a longer horizon is meant to break it).
    pub horizon_slack: Tick,
    /// Some thread has given a horizon in this run (`Machine::bound_of` reads the queued
    /// resumptions' bounds only then).
    pub horizon_seen: bool,
    /// Debug builds: per processor, the time before which its thread may have acted in its
    /// last stretch of run-ahead (its bound, or its time when it stopped earlier: a miss or
    /// a wait). A delivery made later for an earlier time would have been missed by the
    /// thread, so `Env::deliver` asserts none is: the workspace's tests thereby check the
    /// bound's proof, and a memory system's `min_issue_to_delivery` that is too large (`sim`,
    /// "The memory system's lookahead"). 0 on cores with several threads (not checked).
    #[cfg(debug_assertions)]
    pub granted: Vec<Tick>,
}

impl Inbound {
    /// `procs` empty queues; deliveries take `ticks` to take effect.
    pub fn new(procs: usize, ticks: Tick) -> Inbound {
        let min = std::env::var_os("PMUSIM_WINDOW").is_some_and(|v| v == "min");
        Inbound {
            queues: vec![VecDeque::new(); procs],
            ticks,
            run_ahead: if min { 1 } else { ticks },
            resume_extra: 0,
            resume_extra_override: None,
            issue_extra: 0,
            resume_lb: ResumeBounds::new(procs),
            horizon_slack: 0,
            horizon_seen: false,
            #[cfg(debug_assertions)]
            granted: vec![0; procs],
        }
    }

    /// The run-ahead bound that a thread resumption queued at `at` sets for every other
    /// thread (`sim`'s module documentation, "The longer window"). `Machine::bound_of` takes
    /// the earlier of this for the queue's next resumption and the next heavy event's bound;
    /// `Ctx::unpark` lowers its own thread's bound to this for the resumption it queues.
    #[inline(always)]
    pub fn resumption_bound(&self, at: Tick) -> Tick {
        at + self.resume_extra + self.run_ahead
    }

    /// A resumption of processor `p`'s thread queued at `at`, whose thread sends nothing
    /// before `horizon` (0: nothing known beyond its time) ("The thread's horizon").
    #[inline(always)]
    pub fn note_resume(&mut self, p: usize, at: Tick, horizon: Tick) {
        let h = if horizon == 0 {
            0
        } else {
            self.horizon_seen = true;
            horizon + self.horizon_slack
        };
        let v = (at + self.resume_extra).max(h.saturating_add(self.issue_extra));
        self.resume_lb.queued(p, v);
    }

    /// Processor `p`'s resumption popped: with none left queued, it bounds nobody.
    #[inline(always)]
    pub fn popped_resume(&mut self, p: usize) {
        self.resume_lb.popped(p);
    }

    /// The earliest bound (less the inbound delay) that the queued resumptions set.
    #[inline(always)]
    pub fn resume_bound(&self) -> Tick {
        self.resume_lb.min()
    }
}

impl std::ops::Index<usize> for Inbound {
    type Output = VecDeque<Tick>;
    #[inline(always)]
    fn index(&self, p: usize) -> &VecDeque<Tick> {
        &self.queues[p]
    }
}

impl std::ops::IndexMut<usize> for Inbound {
    #[inline(always)]
    fn index_mut(&mut self, p: usize) -> &mut VecDeque<Tick> {
        &mut self.queues[p]
    }
}

impl<S: Copy> Env<'_, S> {
    /// Delivers `m` to processor `p`'s caches: it takes effect `inbound.ticks` after `t`.
    #[inline]
    pub fn deliver(&mut self, p: usize, t: Tick, m: SysMsg) {
        let at = t + self.inbound.ticks;
        #[cfg(debug_assertions)]
        if self.inbound.resume_extra_override.is_none() && self.inbound.horizon_slack == 0 {
            let g = self.inbound.granted[p];
            assert!(
                at >= g,
                "a delivery to processor {p} at tick {at} ({m:?}), sent at {t}, is earlier than \
                 its thread may have run ahead to ({g}): the run-ahead bound is wrong (sim.rs, \
                 \"The memory system's lookahead\")"
            );
        }
        let v = &mut self.inbound[p];
        if v.back().is_none_or(|&b| b <= at) {
            v.push_back(at);
        } else {
            let i = v.partition_point(|&x| x <= at);
            v.insert(i, at);
        }
        self.q.schedule(at, PRIO_DELIVER, Ev::ToProc(p as u16, m));
    }
    /// Schedules one of the memory system's own events at `t` (always inlined: out of line
    /// it cost a call per memory-system event, 143 M instructions of `numa16-share`).
    #[inline(always)]
    pub fn schedule(&mut self, t: Tick, e: impl Into<S>) {
        self.q.schedule(t, PRIO_SYS, Ev::Sys(e.into()));
    }
    /// A use of a queued resource (an `Observation::Queue`), without building the
    /// observation when no probe asks for queues. `slot` belongs to the resource: the
    /// ground truth remembers there where it keeps the resource's statistics.
    #[inline(always)]
    pub fn observe_queue(
        &mut self,
        slot: &mut u32,
        res: Resource,
        t: Tick,
        wait: Tick,
        busy: Tick,
        queue: u32,
    ) {
        if let Some(gt) = self.obs.truth.as_mut() {
            gt.queue_use(slot, res, wait, busy, queue, &self.aux.current);
        }
        if self.obs.interests.any & kind::QUEUE != 0 {
            let o = Observation::Queue {
                res,
                t,
                wait,
                busy,
                queue,
                who: self.origin(),
            };
            dispatch(
                self.obs.probes,
                &self.obs.interests.each,
                kind::QUEUE,
                &o,
                self.obs.sig,
            );
        }
    }

    #[inline(always)]
    pub fn observe(&mut self, o: Observation) {
        if let Some(gt) = self.obs.truth.as_mut() {
            gt.observe(&o, Some(&*self.map));
        }
        self.notify_probes(&o);
    }

    /// Hands `o` to the probes that asked for its kind.
    #[inline(always)]
    fn notify_probes(&mut self, o: &Observation) {
        let k = o.kind();
        if self.obs.interests.any & k != 0 {
            dispatch(
                self.obs.probes,
                &self.obs.interests.each,
                k,
                o,
                self.obs.sig,
            );
        }
    }

    /// Processor `p`'s external agent asked for its bus at `t` and is granted it at `grant`
    /// (`Observation::BusRequest`; the ground truth does not use it). Built only when a probe
    /// asks for it.
    #[inline(always)]
    pub fn observe_bus_request(&mut self, p: usize, t: Tick, grant: Tick) {
        if self.obs.interests.any & kind::BUS_REQUEST != 0 {
            self.notify_probes(&Observation::BusRequest {
                proc: p as u16,
                t,
                grant,
                who: self.origin(),
            });
        }
    }
    /// An event at a slice of a shared cache level, for the ground truth's per-slice counts.
    #[inline]
    pub fn slice_event(&mut self, slice: u16, e: crate::truth::SliceEvent) {
        if let Some(gt) = self.obs.truth.as_mut() {
            gt.slice_event(slice, e);
        }
    }
    /// An event of Blue Gene/Q's UPC_L2 at slice `slice` at `t` (`Observation::L2Slice`): the
    /// ground truth counts it; the observation is built only when a probe asks for
    /// `kind::L2_SLICE` (one flag test otherwise).
    #[inline]
    pub fn l2_event(&mut self, slice: u16, t: Tick, event: L2Event) {
        if let Some(gt) = self.obs.truth.as_mut() {
            gt.l2_event(slice, event);
        }
        if self.obs.interests.any & kind::L2_SLICE != 0 {
            self.notify_probes(&Observation::L2Slice {
                slice,
                t,
                who: self.origin(),
                event,
            });
        }
    }
    /// An event of core `core`'s L1 prefetcher at `t` (`Observation::L1p`), as `l2_event`.
    #[inline]
    pub fn l1p_event(&mut self, core: u16, t: Tick, event: L1pEvent) {
        if let Some(gt) = self.obs.truth.as_mut() {
            gt.l1p_event(core, event);
        }
        if self.obs.interests.any & kind::L1P != 0 {
            let who = Origin {
                core,
                ..Origin::default()
            };
            self.notify_probes(&Observation::L1p { who, t, event });
        }
    }
    /// The system starts work on `line` (a protocol processor picks a queued message): later
    /// observations belong to the latest request for it.
    #[inline]
    pub fn work_on(&mut self, line: u64) {
        if self.aux.on {
            self.aux.current.set(self.aux.lines.of(line));
        }
    }
    /// Whose request the system is working for now (set by the machine from the event's
    /// line, see `origin`; `Origin::default()` unless some observer wants origins).
    #[inline]
    pub fn origin(&self) -> Origin {
        self.aux.current.get()
    }
    /// Registered settings (owners read theirs here).
    #[inline]
    pub fn settings(&self) -> &Settings {
        &self.aux.settings
    }
    /// A request for `addr` at node `node`'s memory controller with its buffer events
    /// (`flags`). Built only when a probe asks for it.
    #[inline(always)]
    pub fn observe_mem_request(&mut self, node: u16, t: Tick, addr: u64, flags: u16) {
        if self.obs.interests.any & kind::MEM_REQUEST != 0 {
            self.notify_probes(&Observation::MemRequest {
                node,
                t,
                addr,
                flags,
            });
        }
    }
    pub fn any_probe(&self) -> bool {
        self.obs.truth.is_some() || !self.obs.probes.is_empty()
    }
    /// Home node of a line (deciding first-touch homes for `toucher`'s node).
    pub fn home(&mut self, line: u64, toucher_node: usize) -> usize {
        self.map.home_of(line << self.line_shift, toucher_node)
    }
}

/// Per processor, the bound its queued resumptions set ([`Inbound::note_resume`]) and how
/// many are queued, with their least kept as of the last change that could lower it: a
/// resumption's queueing lowers it at once; popping the one that held it marks it stale, and
/// the next read takes the least again over the processors (popping takes the earliest
/// resumption, so without horizons that is once per resumption, about 2 instructions per
/// processor; a tournament tree cost about 48 per change, two per resumption).
pub struct ResumeBounds {
    /// Per processor, the least bound of its queued resumptions (`Tick::MAX` with none) and
    /// how many are queued.
    leaves: Vec<(Tick, u32)>,
    least: std::cell::Cell<Tick>,
    stale: std::cell::Cell<bool>,
}

impl ResumeBounds {
    fn new(procs: usize) -> ResumeBounds {
        ResumeBounds {
            leaves: vec![(Tick::MAX, 0); procs],
            least: std::cell::Cell::new(Tick::MAX),
            stale: std::cell::Cell::new(false),
        }
    }

    /// A resumption of `p` queued that bounds the others at `v`.
    #[inline(always)]
    fn queued(&mut self, p: usize, v: Tick) {
        let e = self.entry(p);
        let v = if e.1 == 0 { v } else { e.0.min(v) };
        *e = (v, e.1 + 1);
        if v < self.least.get() {
            self.least.set(v);
        }
    }

    /// Processor `p`'s leaf and count, without the bounds tests (twice per resumption on
    /// every run: about 40 M instructions of `pmusim run`'s 5.7 G, BENCHMARKS.md).
    #[inline(always)]
    fn entry(&mut self, p: usize) -> &mut (Tick, u32) {
        assert!(p < self.leaves.len());
        // SAFETY: just tested (the compiler keeps the one test, not one per field).
        unsafe { self.leaves.get_unchecked_mut(p) }
    }

    /// A resumption of `p` popped: with none left, `p` bounds nobody (with some left, the
    /// leaf keeps the least of all it was given: no later than theirs).
    #[inline(always)]
    fn popped(&mut self, p: usize) {
        let least = self.least.get();
        let e = self.entry(p);
        debug_assert!(e.1 > 0, "a resumption queued without `note_resume`");
        e.1 = e.1.saturating_sub(1);
        if e.1 == 0 {
            let stale = e.0 == least;
            e.0 = Tick::MAX;
            if stale {
                self.stale.set(true);
            }
        }
    }

    /// The least bound set by any queued resumption (`Tick::MAX` with none).
    #[inline(always)]
    pub fn min(&self) -> Tick {
        if self.stale.get() {
            self.stale.set(false);
            self.least
                .set(self.leaves.iter().fold(Tick::MAX, |m, e| m.min(e.0)));
        }
        self.least.get()
    }

    /// Moves every queued resumption's bound from the window `old` to `new` (a run starts:
    /// the threads' first resumptions were queued before the window was known, with 0).
    pub fn rewindow(&mut self, old: Tick, new: Tick) {
        for e in &mut self.leaves {
            if e.1 != 0 {
                e.0 = e.0.saturating_sub(old).saturating_add(new);
            }
        }
        self.stale.set(true);
    }
}
