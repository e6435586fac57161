//! The machine: state, the event loop, and the threads (coroutines) running on processors.
//!
//! # Time and interleaving
//! Events are processed in `(time, priority, sequence)` order. A processor's thread runs inline
//! (cache hits cost no events) ahead of the event queue, up to a bound: the earliest of (a) the
//! next pending delivery to this processor and (b) the time of the next event of any kind plus
//! the inbound delay `cpu.inbound_cycles`. Every action that changes a processor's caches from
//! outside is a delivery scheduled at least the inbound delay after the event that caused it,
//! so nothing the thread does while running ahead can be affected by an event not yet
//! processed: the interleaving is exactly the one of a cycle-by-cycle simulation.
//! Misses, uncached accesses and waits are issued as events at the thread's local time.

use crate::addr::{Addr, MemoryMap, Place, StructId};
use crate::config::{ConfigError, Preset, ProtocolKind};
use crate::cpu::ctx::{Barrier, Ctx, Lock, Procedure};
use crate::cpu::{agent, Block, Core};
use crate::msg::{ProcMsg, SysMsg};
use crate::probe::{kind, Interests, Observation, Probe, Resource, Signals};
use crate::truth::GroundTruth;
use crate::{flash, ideal, numachine};
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use engine::{Clocks, EventQueue, SimRng, Tick};
use std::collections::VecDeque;

/// Base of each processor's monitor register region (uncached, on the processor card).
pub const MONITOR_BASE: Addr = 0xF0_0000_0000;
/// System writes to other processors' monitors: `+ ((proc + 1) << 24)` for one card, `+ 0`
/// for all (multicast).
pub const MONITOR_REMOTE_BASE: Addr = 0xF8_0000_0000;
/// Uncached commands to the node controller (FlashPoint bin assignment, procedure deltas).
pub const MAGIC_BASE: Addr = 0xE0_0000_0000;

pub const PRIO_SYS: u8 = 0;
pub const PRIO_DELIVER: u8 = 1;
pub const PRIO_RESUME: u8 = 2;

/// Why a thread returns to the event loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Yield {
    Quantum,
    Blocked,
}

/// Events of the machine.
#[derive(Clone, Copy, Debug)]
pub enum Ev {
    /// Continue running processor p's thread.
    Resume(u16),
    /// Processor p's pending transaction leaves its external agent.
    Issue(u16),
    /// Processor p re-issues after a NACK back-off.
    Retry(u16),
    /// A message reaches processor p's caches.
    ToProc(u16, SysMsg),
    /// Memory-system events of the preset's protocol.
    Sys(SysEv),
}

#[derive(Clone, Copy, Debug)]
pub enum SysEv {
    Ideal(ideal::Ev),
    Numachine(numachine::Ev),
    Flash(flash::Ev),
}

/// The memory system of the preset (interconnect plus home-side protocol).
pub enum System {
    Ideal(ideal::IdealSys),
    Numachine(Box<numachine::NumaSys>),
    Flash(Box<flash::FlashSys>),
}

/// What a memory system may use: the queue, randomness, the memory map, observation, and the
/// processors' interfaces (through `deliver`).
pub struct Env<'a> {
    pub q: &'a mut EventQueue<Ev>,
    pub rng: &'a mut SimRng,
    pub map: &'a mut MemoryMap,
    pub inbound: &'a mut [VecDeque<Tick>],
    pub inbound_ticks: Tick,
    pub obs: Observers<'a>,
    pub line_shift: u32,
    /// A deliberately injected protocol fault (for testing the protocol tester).
    pub fault: &'a mut Fault,
}

/// Faults a protocol can be told to commit, so tests can show the tester catches them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Fault {
    #[default]
    None,
    /// Every `n`th invalidation is not sent (and counted as acknowledged).
    DropInvalidation { n: u32, count: u32 },
}

impl Fault {
    /// True when the protocol should drop this invalidation.
    pub fn drop_invalidation(&mut self) -> bool {
        if let Fault::DropInvalidation { n, count } = self {
            *count += 1;
            if *count >= *n {
                *count = 0;
                return true;
            }
        }
        false
    }
}

/// Hands `o` (of kind `k`, which some probe wants) to the probes that want it.
#[inline(always)]
fn dispatch(
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
    pub map: Option<&'a MemoryMap>,
}

impl Env<'_> {
    /// Delivers `m` to processor `p`'s caches: it takes effect `inbound_ticks` after `t`.
    pub fn deliver(&mut self, p: usize, t: Tick, m: SysMsg) {
        let at = t + self.inbound_ticks;
        let v = &mut self.inbound[p];
        if v.back().is_none_or(|&b| b <= at) {
            v.push_back(at);
        } else {
            let i = v.partition_point(|&x| x <= at);
            v.insert(i, at);
        }
        self.q.schedule(at, PRIO_DELIVER, Ev::ToProc(p as u16, m));
    }
    #[inline]
    pub fn schedule(&mut self, t: Tick, e: SysEv) {
        self.q.schedule(t, PRIO_SYS, Ev::Sys(e));
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
            gt.queue_use(slot, res, wait, busy, queue);
        }
        if self.obs.interests.any & kind::QUEUE != 0 {
            let o = Observation::Queue {
                res,
                t,
                wait,
                busy,
                queue,
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

impl System {
    /// Home-side state of a line, for diagnostics.
    pub fn describe(&self, line: u64) -> String {
        match self {
            System::Ideal(s) => s.describe(line),
            System::Flash(s) => s.describe(line),
            System::Numachine(s) => s.describe(line),
        }
    }
    /// Protocol event counts of the memory system (NACKs sent, converted upgrades, ...).
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        match self {
            System::Flash(s) => s.counters(),
            _ => Vec::new(),
        }
    }
    #[allow(clippy::wrong_self_convention)] // "a message from a processor", not a conversion
    fn from_proc(&mut self, env: &mut Env, t: Tick, p: usize, m: ProcMsg) {
        match self {
            System::Ideal(s) => s.from_proc(env, t, p, m),
            System::Numachine(s) => s.from_proc(env, t, p, m),
            System::Flash(s) => s.from_proc(env, t, p, m),
        }
    }
    fn handle(&mut self, env: &mut Env, t: Tick, e: SysEv) {
        match (self, e) {
            (System::Ideal(s), SysEv::Ideal(e)) => s.handle(env, t, e),
            (System::Numachine(s), SysEv::Numachine(e)) => s.handle(env, t, e),
            (System::Flash(s), SysEv::Flash(e)) => s.handle(env, t, e),
            _ => unreachable!("event of another protocol"),
        }
    }
    /// Uncached commands the system wants issued when a structure is allocated (FlashPoint
    /// bin assignment).
    fn alloc_commands(&mut self, a: Addr, bytes: u64, id: StructId) -> Vec<(Addr, u64)> {
        match self {
            System::Flash(s) => s.alloc_commands(a, bytes, id),
            _ => Vec::new(),
        }
    }
    fn procedure_command(&mut self, p: usize, prev: u32, cur: u32) -> Option<(Addr, u64)> {
        match self {
            System::Flash(s) => s.procedure_command(p, prev, cur),
            _ => None,
        }
    }
    /// An allocation made before the threads start (FlashPoint bins it at time 0).
    fn setup_alloc(&mut self, a: Addr, bytes: u64, id: StructId) {
        if let System::Flash(s) = self {
            s.setup_alloc(a, bytes, id);
        }
    }
}

/// The whole simulated machine's state (everything but the threads' coroutines).
pub struct State {
    pub preset: Preset,
    pub clocks: Clocks,
    pub q: EventQueue<Ev>,
    pub rng: SimRng,
    pub map: MemoryMap,
    pub cores: Vec<Core>,
    pub inbound: Vec<VecDeque<Tick>>,
    pub inbound_ticks: Tick,
    pub system: System,
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
}

/// Cost of a protocol command issued on procedure change.
pub struct ProcedureCost {
    pub addr: Addr,
    /// Processor cycles of the memory fence before the command (FlashPoint, seed 3.2.4).
    pub fence_cycles: u64,
}

impl State {
    fn env(&mut self) -> (&mut System, Env<'_>) {
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
    fn refresh_interests(&mut self) {
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
    fn take_signals(&mut self) {
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

/// Errors of a run.
#[derive(Debug)]
pub enum SimError {
    /// Every event is processed but some threads never finished.
    Deadlock(String),
    /// The run exceeded its cycle limit.
    Limit(u64),
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::Deadlock(s) => write!(f, "deadlock: {s}"),
            SimError::Limit(c) => write!(
                f,
                "the run exceeded its limit of {c} processor cycles (raise it with --max-cycles)"
            ),
        }
    }
}
impl std::error::Error for SimError {}

/// Options of a machine.
#[derive(Clone, Debug)]
pub struct Options {
    pub seed: u64,
    /// Keep exact statistics (costs a little time on misses only).
    pub ground_truth: bool,
    /// Emit per-access value observations (for the protocol tester).
    pub value_probes: bool,
    /// Emit LineState observations on every L2 state change.
    pub line_probes: bool,
    /// Stack size of each thread's coroutine.
    pub stack_bytes: usize,
    pub fault: Fault,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            seed: 1,
            ground_truth: true,
            value_probes: false,
            line_probes: false,
            stack_bytes: 256 * 1024,
            fault: Fault::None,
        }
    }
}

type Thread = Coroutine<(), Yield, (), DefaultStack>;

/// A simulated machine with its threads.
pub struct Machine {
    st: Box<State>,
    threads: Vec<Option<Thread>>,
    stack_bytes: usize,
    finished: usize,
    spawned: usize,
}

/// Summary of a run.
#[derive(Clone, Debug)]
pub struct RunSummary {
    pub ticks: Tick,
    pub cycles: u64,
    pub references: u64,
    pub events: u64,
}

/// Allocation and synchronization objects, before the threads start.
pub struct Setup<'a> {
    st: &'a mut State,
}

impl Setup<'_> {
    /// A named data structure of `bytes` bytes with `place`ment; returns its base address.
    pub fn alloc(&mut self, name: &str, bytes: u64, place: Place) -> Addr {
        let a = self.st.map.alloc(name, bytes, place);
        let id = self.st.map.structure_of(a);
        self.st.system.setup_alloc(a, bytes, id);
        a
    }
    pub fn lock(&mut self, name: &str) -> Lock {
        Lock(self.st.map.alloc_sync(name))
    }
    pub fn barrier(&mut self, name: &str, n: usize) -> Barrier {
        Barrier {
            count: self.st.map.alloc_sync(&format!("{name}.count")),
            flag: self.st.map.alloc_sync(&format!("{name}.flag")),
            n: n as u64,
        }
    }
    /// Registers a procedure name (its code is fetched through the I-cache as a region).
    pub fn procedure(&mut self, name: &str) -> Procedure {
        if let Some(i) = self.st.procedures.iter().position(|n| n == name) {
            return Procedure(i as u32);
        }
        let id = self.st.procedures.len() as u32;
        self.st.procedures.push(name.to_string());
        let bytes = self.st.preset.cpu.code_bytes_per_procedure;
        let base = crate::cpu::CODE_BASE + id as u64 * bytes;
        let _ = self
            .st
            .map
            .name_range(&format!("(code) {name}"), base, bytes, Place::Default);
        Procedure(id)
    }
    pub fn map(&mut self) -> &mut MemoryMap {
        &mut self.st.map
    }
    pub fn procs(&self) -> usize {
        self.st.cores.len()
    }
    pub fn nodes(&self) -> usize {
        self.st.map.nodes()
    }
}

impl Machine {
    pub fn new(preset: Preset, opts: Options) -> Result<Machine, ConfigError> {
        preset.validate()?;
        let clocks = preset
            .clocks_built()
            .map_err(|e| ConfigError(format!("clocks: {e}")))?;
        let cpu_period = clocks.get("cpu").unwrap().period;
        let sys_period = clocks.get("system").unwrap().period;
        let inbound_ticks = preset.cpu.inbound_cycles as Tick * cpu_period;
        let nodes = preset.nodes();
        let map = MemoryMap::new(
            preset.memory.page_bytes,
            preset.line_bytes(),
            nodes,
            preset.memory.placement,
        );
        let cores = (0..preset.procs)
            .map(|p| {
                Core::new(
                    p,
                    preset.node_of_proc(p),
                    &preset,
                    cpu_period,
                    inbound_ticks,
                )
            })
            .collect();
        let (system, timeout, backoff_max) = match preset.protocol {
            ProtocolKind::Ideal => {
                let s = ideal::IdealSys::new(&preset, &clocks);
                let b = s.backoff_ticks();
                (System::Ideal(s), None, b)
            }
            ProtocolKind::Numachine => {
                let s = numachine::NumaSys::new(&preset, &clocks)?;
                let (to, b) = (s.timeout_ticks(), s.backoff_ticks());
                (System::Numachine(Box::new(s)), Some(to), b)
            }
            ProtocolKind::Flash => {
                let s = flash::FlashSys::new(&preset, &clocks)?;
                let b = s.backoff_ticks();
                (System::Flash(Box::new(s)), None, b)
            }
        };
        let truth = opts
            .ground_truth
            .then(|| GroundTruth::new(&preset, cpu_period));
        let any = truth.is_some();
        let cores_n = preset.procs;
        let mut st = Box::new(State {
            inbound: vec![VecDeque::new(); preset.procs],
            preset,
            clocks,
            q: EventQueue::new(),
            rng: SimRng::new(opts.seed),
            map,
            cores,
            inbound_ticks,
            system,
            truth,
            probes: Vec::new(),
            sig: Signals::default(),
            procedures: vec!["main".to_string()],
            timeout,
            backoff_max,
            value_probes: opts.value_probes,
            line_probes: opts.line_probes,
            any_probe: any,
            pipeline_probes: false,
            index_probes: false,
            interests: Interests {
                always: if opts.line_probes {
                    kind::LINE_STATE
                } else {
                    0
                },
                ..Interests::default()
            },
            pipeline_seen: vec![u64::MAX; cores_n],
            cpu_period,
            sys_period,
            fault: opts.fault,
        });
        let bytes = st.preset.cpu.code_bytes_per_procedure;
        let _ = st
            .map
            .name_range("(code) main", crate::cpu::CODE_BASE, bytes, Place::Default);
        if st.preset.cpu.tlb.enabled {
            use crate::cpu::tlb;
            let page = st.map.page_bytes();
            let _ = st.map.name_range(
                "(page table)",
                tlb::PAGE_TABLE_BASE,
                tlb::PAGE_TABLE_BYTES,
                Place::Default,
            );
            let _ = st.map.name_range(
                "(tlb fault counters)",
                tlb::FAULT_COUNTERS_BASE,
                cores_n as u64 * page,
                Place::FirstTouch,
            );
        }
        Ok(Machine {
            threads: (0..st.cores.len()).map(|_| None).collect(),
            st,
            stack_bytes: opts.stack_bytes,
            finished: 0,
            spawned: 0,
        })
    }

    pub fn setup(&mut self) -> Setup<'_> {
        Setup { st: &mut self.st }
    }

    pub fn state(&self) -> &State {
        &self.st
    }
    pub fn state_mut(&mut self) -> &mut State {
        &mut self.st
    }

    /// Attaches a monitor.
    pub fn attach(&mut self, p: Box<dyn Probe>) {
        self.st.probes.push(p);
        self.st.any_probe = true;
        self.st.refresh_interests();
    }

    /// Runs `body` as the thread of processor `p`.
    pub fn spawn(&mut self, p: usize, body: impl FnOnce(&mut Ctx) + 'static) {
        assert!(p < self.st.cores.len(), "no processor {p}");
        assert!(
            self.threads[p].is_none(),
            "processor {p} already has a thread"
        );
        let st: *mut State = &mut *self.st;
        let core: *mut Core = &mut self.st.cores[p];
        let n = self.st.cores.len();
        let stack = DefaultStack::new(self.stack_bytes).expect("allocate a coroutine stack");
        let co = Coroutine::with_stack(stack, move |y: &Yielder<(), Yield>, ()| {
            let mut ctx = Ctx {
                st,
                core,
                yielder: y,
                id: p,
                n,
                handler: None,
                miss_handler: None,
            };
            body(&mut ctx);
        });
        self.threads[p] = Some(co);
        self.spawned += 1;
        self.st.q.schedule(0, PRIO_RESUME, Ev::Resume(p as u16));
    }

    fn run_thread(&mut self, p: usize, t: Tick) {
        {
            let st = &mut *self.st;
            let bound =
                st.q.peek_time()
                    .map(|x| x + st.inbound_ticks)
                    .unwrap_or(Tick::MAX);
            let bound = st.inbound[p].front().map_or(bound, |&d| d.min(bound));
            let c = &mut st.cores[p];
            if c.now < t {
                c.now = t;
            }
            c.run_until = if c.irq.is_empty() { bound } else { 0 };
        }
        let r = self.threads[p].as_mut().expect("thread exists").resume(());
        let st = &mut *self.st;
        match r {
            CoroutineResult::Yield(Yield::Quantum) => {
                let now = st.cores[p].now;
                st.q.schedule(now, PRIO_RESUME, Ev::Resume(p as u16));
            }
            CoroutineResult::Yield(Yield::Blocked) => agent::blocked(st, p),
            CoroutineResult::Return(()) => {
                st.cores[p].block = Block::Done;
                self.threads[p] = None;
                self.finished += 1;
            }
        }
    }

    /// Runs until every thread has finished (or `max_cycles` processor cycles pass), then
    /// builds the ground truth's views (also when the run fails, for diagnostics).
    pub fn run(&mut self, max_cycles: Option<u64>) -> Result<RunSummary, SimError> {
        let r = self.run_events(max_cycles);
        if let Some(gt) = self.st.truth.as_mut() {
            gt.finish();
        }
        r
    }

    fn run_events(&mut self, max_cycles: Option<u64>) -> Result<RunSummary, SimError> {
        let limit = max_cycles.map(|c| c * self.st.cpu_period);
        let mut events = 0u64;
        while let Some((t, ev)) = self.st.q.pop() {
            events += 1;
            if limit.is_some_and(|l| t > l) {
                return Err(SimError::Limit(max_cycles.unwrap()));
            }
            match ev {
                Ev::Resume(p) => self.run_thread(p as usize, t),
                Ev::Issue(p) => agent::issue(&mut self.st, p as usize, t),
                Ev::Retry(p) => agent::retry(&mut self.st, p as usize, t),
                Ev::ToProc(p, m) => {
                    let st = &mut *self.st;
                    // Deliveries pop in time order, so this one is the earliest listed.
                    let front = st.inbound[p as usize].pop_front();
                    debug_assert_eq!(front, Some(t), "deliveries listed in time order");
                    agent::receive(st, p as usize, t, m);
                }
                Ev::Sys(e) => {
                    let st = &mut *self.st;
                    let (sys, mut env) = st.env();
                    sys.handle(&mut env, t, e);
                    st.take_signals();
                }
            }
        }
        if self.finished < self.spawned {
            let blocked: Vec<String> = self
                .st
                .cores
                .iter()
                .enumerate()
                .filter(|(p, _)| self.threads[*p].is_some())
                .map(|(p, c)| format!("processor {p}: {:?}", c.block))
                .collect();
            return Err(SimError::Deadlock(format!(
                "no events left but {} thread(s) have not finished ({})",
                self.spawned - self.finished,
                blocked.join("; ")
            )));
        }
        let end = self.st.cores.iter().map(|c| c.now).max().unwrap_or(0);
        let end = end.max(self.st.q.now());
        if self.st.pipeline_probes {
            for p in 0..self.st.cores.len() {
                let t = self.st.cores[p].now;
                self.st.emit_pipeline(p, t);
            }
        }
        for p in self.st.probes.iter_mut() {
            p.finish(end);
        }
        Ok(RunSummary {
            ticks: end,
            cycles: end / self.st.cpu_period,
            references: self.st.cores.iter().map(|c| c.cnt.refs).sum(),
            events,
        })
    }
}
