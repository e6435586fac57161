//! The machine: state, the event loop, and the threads (coroutines) running on processors.
//!
//! # Time and interleaving
//! Events are processed in `(time, priority, source, sequence)` order. A processor's thread
//! runs inline (cache hits cost no events) ahead of the event queue, up to a bound: the
//! earliest of (a) the next pending delivery to this processor and (b) the time of the next
//! event of any kind plus the inbound delay `cpu.inbound_cycles`. Every action that changes a
//! processor's caches from outside is a delivery scheduled at least the inbound delay after
//! the event that caused it, so nothing the thread does while running ahead can be affected
//! by an event not yet processed: the interleaving is exactly the one of a cycle-by-cycle
//! simulation. Misses, uncached accesses and waits are issued as events at the thread's local
//! time.
//!
//! *Exactness: the order of one tick's events.* A thread schedules its events (a miss's
//! `Issue`, its next `Resume`) while it runs, in stretches the bound cuts, so the order in
//! which the event loop ran two threads' stretches is not a simulated-time order. Events of
//! one tick and priority are therefore taken by *source* (`engine::EventQueue::set_source`):
//! a thread's events are source `p` (its processor), ordered among themselves in the order
//! the thread scheduled them (its program order), and the handlers' events are one source
//! after every thread's (`SRC_HANDLERS`), in the order the handlers ran (which is the
//! queue's order, so again independent of the stretches). Two more things a thread running
//! ahead does to shared state are decided in simulated-time order: the first-touch home of
//! a page (in `agent::issue`, when the request leaves) and `cpu::reserve`'s reservations (by
//! each reservation's time and each line's latest store time; task order19,
//! `run_ahead_tests`). With these a run does not depend on where its stretches were cut:
//! `pmusim/tests/it/window.rs` runs every preset's kernels and micro workloads, other
//! placements and options, and the 16-thread traced programs with no run-ahead at all
//! (`PMUSIM_WINDOW=min`: a thread yields as soon as its time passes the next event's) and
//! with this window, and requires the same `--json` report. Why threads first: with the
//! handlers' events first (task win19) the property held too, but tests that compare
//! monitors with the ground truth failed (numachine's
//! `cycle_forms_of_latency_nack_and_bus_events_exact`, UPC
//! `mode1_counts_116_events_of_one_core_exactly`); with the threads' first they hold. The
//! order changed every multi-processor run's results once (task order19b: `pmusim run`'s
//! default 9,879,231 -> 9,865,874 cycles; the golden cases and three monitor snapshots
//! re-recorded in one commit).
//!
//! *The longer window* (task order19b). Under this order bound (b) takes a queued
//! resumption later than its time: it is the earliest of (b1) the next event that is not a
//! thread's resumption, plus the inbound delay `I`, and (b2) the next resumption plus
//! `L` plus `I` (`inbound.resume_extra` holds `L`, and since the memory system's lookahead
//! below `L + D - I`). `L` is one L2 hit (`Machine::resume_extra`) on a
//! machine where a resumed thread can do nothing that reaches another processor before its
//! L2 lookup, and 0 elsewhere (the bound above).
//!
//! Proof. Each delivery to a processor is scheduled by a handler at least `I` after the
//! handler's event (`env::Env::deliver`), and handlers schedule events only at or after
//! their own time, so it suffices that a thread resumed at `e` (its time then `e` or later,
//! `run_thread`) schedules no event other than resumptions before `e + L`, and changes
//! nothing before then that another processor's thread or a handler reads other than
//! through a delivery to it. Then when processor `p`'s bound is computed, every delivery to
//! `p` not yet queued comes from a chain that starts at a queued event of another kind
//! (at `tn` or later: the delivery at `tn + I` or later) or at a resumption (at `tr` or
//! later: its first event at `tr + L` or later, the delivery at `tr + L + I` or later):
//! `p` runs no further than its next delivery, as with the short window, and the order
//! of one tick's events does not depend on where the stretches were cut (above). What a
//! resumed thread does, case by case (`cpu::ctx`, `cpu::agent`, `cpu::hits`):
//! - cache hits change its own L1 and private L2 only, which handlers and other processors
//!   read only through deliveries to it (interventions, invalidations), and its own bound
//!   stops it before its next delivery (a);
//! - an L1 miss the L2 cannot serve (a read, a read-exclusive, the upgrade of a shared
//!   line, an instruction fetch, a miss under misses with several MSHRs, a non-blocking
//!   store) is charged the L2 hit (`agent::l1_miss_full`) before its request is made at the
//!   thread's time, and its `Issue` is at that time, `e + L` or later; the page's first
//!   touch is decided at the `Issue`; an L2 victim's write-back is sent when the fill lands
//!   (`agent::evict`, a delivery's handler); NACK retries and bus-error re-issues are
//!   scheduled by handlers;
//! - a yield schedules its own resumption; a spin wait its resumption or nothing; parking
//!   nothing; unparking another processor's parked thread (`Ctx::unpark`) that thread's
//!   resumption at this thread's time or later: resumptions, for which the claim holds
//!   again from their own time, and the unparking thread, whose bound was computed before
//!   that resumption was queued, has it lowered to the bound it would have with it queued
//!   (without this a 16-thread OpenMP replay's thread ran past the edge a woken thread's
//!   intervention could reach: `Inbound::granted`'s check below found it; the results were
//!   the same with and without run-ahead, both cut at the old bound);
//! - the rest can reach other processors at once, and `Machine::resume_extra` is 0 where
//!   they can happen: uncached accesses (issued with no lookup, `agent::start_uncached`;
//!   made by monitors' software, the operating system's switch path and FlashPoint's
//!   commands, each excluded, and `Ctx::uncached` asserts the window is off), probes
//!   (observations a monitor turns into interrupts and delayed actions at once, armed
//!   counters, spin checks), write-through L1s (the store goes to the memory system at the
//!   thread's time, `State::write_through`), load-and-reserve reservations (shared state a
//!   store hit changes, `cpu::reserve`), several threads on a core (`multi`: the
//!   scheduler's shared state, contexts sharing the L1), and machines without a private L2
//!   (`cmp`, `bgq`: another thread's *hit* changes the shared cache; their L2 hit time is 0
//!   anyway).
//!
//! *The memory system's lookahead* (task look19). The proof above uses only that a
//! delivery comes `I` after the handler event that sends it. But what a resumed thread
//! first sends is a request (its `Issue`), and a request reaches no processor's caches
//! after only `I`: it crosses an interconnect and is decided at a controller before
//! anything comes back. Each memory system states `D >= I`, the least time from a
//! request's issue to any delivery its handling can cause (`MemorySystem::
//! min_issue_to_delivery`, default `I`: no extension where it is not proved), and (b2)
//! becomes the next resumption plus `L + D`, under the same conditions as `L`
//! (`resume_extra = L + D - I`). Proof: in the proof above, a chain that starts at a
//! resumption at `tr` makes its first event other than resumptions, an `Issue` of a
//! `Read`, `ReadEx` or `Upgrade` (the only kinds left where `resume_extra` is not 0), at
//! `tr + L` or later; every delivery made by the events that follow from it by
//! scheduling is at the issue plus `D` or later, so at `tr + L + D` or later. "Follow by
//! scheduling" is what the bound needs whatever those events work on: a chain that starts
//! at a queued event of another kind gives its deliveries at that event plus `I` or later
//! whatever state the request left (b1), and the processors' own events the issue
//! schedules (the bus-error timer, `agent::arm_timer`, thousands of cycles later) make a
//! request again (`agent::time_out`), so `D` again. The requester itself is covered twice:
//! its thread stops at the miss (a non-blocking load yields too, `agent::blocked`), and
//! while its request is in flight some event of the request's chain is queued (b1).
//!
//! `numachine` (`D = I + 2 (bus_arbitration_cycles + bus_address_cycles)`, 18 processor
//! cycles on the preset; `NumaSys::min_issue_to_delivery`), case by case:
//! - every delivery is made at the end of a station-bus transaction to a processor
//!   (`BusDest::Proc` in `NumaSys::handle`), which takes at least arbitration plus address
//!   from the time its `Ev::Bus` is due (`Bus::transfer`: a FIFO reservation starting at
//!   that time or later); such an event is scheduled only by `Fabric::to_proc` (from a
//!   station controller's handler: the home memory, `memory.rs`, or the network cache,
//!   `netcache.rs`, at the handler's time or later) or by `from_proc` for an uncached
//!   access (at arbitration plus address after it, so `D` too; excluded anyway);
//! - a request's `from_proc` schedules only its own `Ev::Bus` to its station controller
//!   at its time; that handler reserves the bus and schedules only `AtController` at the
//!   transaction's end, arbitration plus address or later. So every controller action
//!   that follows from the request, and every `to_proc`, is at the issue plus one bus
//!   transaction or later, and every delivery one more transaction plus `I` later;
//! - the shortest paths meet this: the home memory decides at once (NACKs of a locked line
//!   or of an owner's own write-back in flight, a cancelled upgrade, invalidations of the
//!   home station's sharers, an intervention to a local owner: `to_proc` at the
//!   `AtController` time; a read's data waits for the memory module, `memory_cycles`
//!   more); the network cache's decisions likewise (its NACKs, cancels and interventions
//!   to a local owner at the `AtController` time, the rest after its lookup); the rings,
//!   the remote home's bus, the memory module, a
//!   memory controller (`--memctl`, `Fabric::memory_read`/`memory_write`: it returns a
//!   later time, and delivers nothing itself) and the NACK back-off of retries only add
//!   time; write-backs and intervention replies are sent by the processors from a
//!   delivery's handler (chains that start at that delivery, b1); a retry after a NACK is
//!   scheduled by the NACK's handler, so it too starts a chain of its own.
//!
//! `ideal`, `flash` and `cmp` keep `D = I` (not proved; `cmp` has no window anyway).
//!
//! *The thread's horizon* (issue 19, BENCHMARKS.md "the thread's horizon"). (b2) takes a
//! queued resumption at `tr` to send its first request at `tr + L` at the earliest. A
//! traced thread knows its next records, so when it yields it reads on in them
//! (`cpu::hits::horizon`): while each line they touch hits its L1 or is the quiet hit of
//! its private direct-mapped L2 (any valid state to read, modified to write; the L1s as
//! the scan itself would fill them), the thread sends nothing, and their instructions and
//! L2 hits take a known least time. The scan stops at the first record that does not hit
//! so, at a record of another kind (a synchronization, an exit: whatever may act on
//! another thread), at a page the last translations do not cover, at the end of the
//! records at hand, and where a later horizon could not lower anyone's bound now (the
//! next heavy event's), but not before 4 windows ahead (`hits::MIN_LEAD`: the heavy event
//! is soon gone). Its time there is the thread's *horizon* `H`: if nothing is delivered
//! to its caches first, the thread's first request is at `H` or later, and a thread it
//! wakes resumes at `H` or later. (b2) becomes, per queued resumption, the later of
//! `tr + L + D` and `H + D` (`Inbound::note_resume`, through `State::queue_resume` at
//! every resumption; the resumptions' least such bound is kept with a stale flag,
//! `env::ResumeBounds`). Proof: the chain argument above
//! needs, for a chain that starts at a resumed thread, only that its first request (or a
//! wake-up, whose thread then needs `L` more) is no earlier than the bound's term for it.
//! If nothing is delivered to that thread before `H`, the scan is what it will do. If
//! something is delivered first, at `td`, the delivery comes from a chain that starts at
//! a queued event of another kind (`td >= tn + I`, b1) or at another resumption's first
//! request (`td >= H' + D` for that thread's term, by induction on the chains' lengths),
//! and the thread's first request is then at `td` or later, so its deliveries at
//! `td + D` or later: past both terms. Why `H` holds for the thread's caches: the thread
//! alone changes them between deliveries (its hits and its quiet L2 hits' L1 fills, which
//! the scan repeats in the same order), so a scan saved at one yield is read on at the next
//! (`cpu::hits::Scan`) until something is delivered to the core (`agent::receive` drops it)
//! or the thread takes other records (`hits::run_loop` drops it on entry). Only where the
//! longer window holds and no test overrides it (`PMUSIM_HORIZON=off` turns it off for
//! comparison); other threads (the built-in kernels) keep `tr + L + D`.
//!
//! *A check in debug builds.* After each stretch of a thread on a single-thread core the
//! loop records the time before which the thread may have acted (`Inbound::granted`: its
//! bound, or its time when it stopped earlier on a miss or a wait), and `Env::deliver`
//! asserts that no delivery to that processor made later is for an earlier time. The proof
//! above says none is (a delivery for the thread's own request comes after its time); so
//! every test run in a debug build checks the bound, on every preset and workload.
//!
//! The queue gives the two times apart cheaply: resumptions are its light events
//! (`EventQueue::set_light(PRIO_RESUME)`), kept in a sorted lane of their own, so the
//! calendar holds only the other kinds and `first_heavy(x, x + resume_extra)` is the
//! calendar's earliest time (task ev19). Tests: `pmusim/tests/it/window.rs` (every preset, no
//! run-ahead against this window),
//! `run_ahead_tests::a_delivery_just_inside_the_longer_window_is_seen` (an invalidation one
//! tick past the window's edge: 2 ticks wider changes the run) and
//! `run_ahead_tests::numachine_invalidation_at_the_lookahead_edge_is_seen` (the same on
//! `numachine` with `D`). Before the lookahead, on `numachine` (`L` = 10
//! cycles, `I` = 6) the replay of `omp16-20.pmt` takes 4.91 M events instead of
//! 6.95 M (BENCHMARKS.md, "Issue 19: the longer window"); with `D` (18 cycles, `L + D`
//! = 28 past a queued resumption instead of 16) the replay of issue 19's `omp16.pmt` takes
//! 3.65 M events instead of 4.87 M (BENCHMARKS.md, "Issue 19: the memory system's
//! lookahead").
//!
//! *Interrupts at the crossing instruction* (tasks order19, irq19; docs/upc.md). An
//! opcode-group interrupt is raised when the span of retirements that crossed its threshold
//! is reported (`State::flush_retired`), at the span's end. The armed bound
//! (`State::armed_bound`) stops a thread only at its next run-ahead check, and a workload's
//! block of instructions (`Ctx::ops`, 6 in FFT's bit reversal) used to be retired with one
//! check, so the interrupt came as late as the block's end: with `docs/upc-overflow.toml`'s
//! counter 2 at thresholds 20,001 to 20,005 instead of 20,000, up to 17, 15, 12, 9 and 6
//! cycles after the crossing on `bgq`, under either order of same-tick events. So the
//! mechanism is not an event's priority but retiring a block in two parts when an armed
//! counter's need falls inside it (`Ctx::retire_armed`): `Ctx::ops`, `op`, `int`, `fp`,
//! `compute` and a trace record's instructions retire up to and including the instruction
//! that may cross, report that span from inside the thread and take the interrupt there,
//! then the rest of the block, without returning to the event loop (so no slice end falls
//! inside a block on a multi-context core) and in the same total cycles. At every threshold
//! from 20,000 to 20,005 the latency is now at most 4 cycles, each 4 a spin iteration
//! (`spin_check`'s granularity); interrupts in blocks come 0 cycles after the crossing
//! (`upc_opcode_irq::opcode_interrupts_on_bgq_come_within_4_cycles_at_every_threshold`,
//! `every_block_kind_interrupts_at_the_crossing_instruction`).

use crate::addr::{Addr, MemoryMap, Place};
use crate::config::{ConfigError, Preset, ProtocolKind};
use crate::cpu::ctx::{Barrier, Ctx, Lock, Procedure};
use crate::cpu::{agent, Block, Core};
use crate::env::Inbound;
use crate::event::{Ev, Yield, PRIO_RESUME, PRIO_WAKE};
use crate::fault::Fault;
use crate::memsys::System;
use crate::origin::Aux;
use crate::probe::{kind, Acted, Interests, Probe, Signals};
use crate::settings::Settings;
use crate::state::State;
use crate::truth::GroundTruth;
use crate::uncached::Windows;
use crate::{cmp, flash, ideal, numachine, sched};
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use engine::{EventQueue, SimRng, Tick};

/// Errors of a run.
#[derive(Debug)]
pub enum SimError {
    /// Every event is processed but some threads never finished.
    Deadlock(String),
    /// The run exceeded its cycle limit.
    Limit(u64),
    /// A [`Ticker`] asked to stop at this processor cycle (the user pressed Ctrl-C).
    Interrupted(u64),
}

impl std::fmt::Display for SimError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SimError::Deadlock(s) => write!(f, "deadlock: {s}"),
            SimError::Limit(c) => write!(
                f,
                "the run exceeded its limit of {c} processor cycles (raise it with --max-cycles)"
            ),
            SimError::Interrupted(c) => write!(f, "interrupted at processor cycle {c}"),
        }
    }
}
impl std::error::Error for SimError {}

/// A periodic callback of [`Machine::run_ticked`]: `f(state, cycle)` is called each time the
/// run passes a multiple of `every_cycles` processor cycles; returning `false` stops the run
/// with [`SimError::Interrupted`] (the state is kept, so a partial report can be made).
pub struct Ticker<'a> {
    pub every_cycles: u64,
    pub f: &'a mut dyn FnMut(&State, u64) -> bool,
}

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
    /// The ground truth splits miss latencies and queue waits by PhaseID (`truth::PhaseSplit`;
    /// costs the origin bookkeeping of every memory-system event once a phase is set).
    pub phase_split: bool,
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
            phase_split: false,
            stack_bytes: 256 * 1024,
            fault: Fault::None,
        }
    }
}

/// The event source of the event loop's handlers (a processor's thread is source `p`): a
/// thread's events come before the handlers' of the same tick and priority.
const SRC_HANDLERS: u32 = engine::queue::MAX_SOURCE;

type Thread = Coroutine<(), Yield, (), DefaultStack>;

/// A simulated machine with its threads.
pub struct Machine {
    st: Box<State>,
    threads: Vec<Option<Thread>>,
    stack_bytes: usize,
    finished: usize,
    spawned: usize,
    /// Set when the run stopped early ([`Machine::stopped_summary`]).
    stopped: Option<RunSummary>,
}

/// Summary of a run.
#[derive(Clone, Copy, Debug)]
pub struct RunSummary {
    pub ticks: Tick,
    pub cycles: u64,
    pub references: u64,
    pub events: u64,
}

/// Allocation and synchronization objects, before the threads start.
pub struct Setup<'a> {
    st: &'a mut State,
    /// The process whose data this sets up (`Machine::setup_process`): names get its name
    /// as a prefix (`fft/x`), so every process's structures are its own.
    prefix: Option<String>,
}

impl Setup<'_> {
    /// A named data structure of `bytes` bytes with `place`ment; returns its base address.
    pub fn alloc(&mut self, name: &str, bytes: u64, place: Place) -> Addr {
        let name = self.named(name);
        let a = self.st.map.alloc(&name, bytes, place);
        let id = self.st.map.data_structure(self.st.map.structure_of(a));
        self.st.system.setup_alloc(a, bytes, id);
        a
    }
    pub fn lock(&mut self, name: &str) -> Lock {
        let name = self.named(name);
        Lock(self.st.map.alloc_sync(&name))
    }
    /// `name`, prefixed with the process's name when setting up a process.
    fn named(&self, name: &str) -> String {
        match &self.prefix {
            Some(p) => format!("{p}/{name}"),
            None => name.to_string(),
        }
    }
    pub fn barrier(&mut self, name: &str, n: usize) -> Barrier {
        let name = self.named(name);
        Barrier {
            count: self.st.map.alloc_sync(&format!("{name}.count")),
            flag: self.st.map.alloc_sync(&format!("{name}.flag")),
            n: n as u64,
        }
    }
    /// Registers a procedure name (its code is fetched through the I-cache as a region).
    pub fn procedure(&mut self, name: &str) -> Procedure {
        let name = &self.named(name);
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
    /// The processors' clock rate (Hz).
    pub fn cpu_hz(&self) -> u64 {
        self.st.preset.clocks.cpu_hz
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
        let system = match preset.protocol {
            ProtocolKind::Ideal => System::Ideal(ideal::IdealSys::new(&preset, &clocks)?),
            ProtocolKind::Numachine => {
                System::Numachine(Box::new(numachine::NumaSys::new(&preset, &clocks)?))
            }
            ProtocolKind::Flash => System::Flash(Box::new(flash::FlashSys::new(&preset, &clocks)?)),
            ProtocolKind::Cmp => System::Cmp(Box::new(cmp::CmpSys::new(&preset, &clocks)?)),
        };
        let (timeout, backoff_max) = (system.timeout_ticks(), system.backoff_ticks());
        let timeout_clock = system.timeout_clock_ticks().max(1);
        let mut uncached = Windows::default();
        crate::uncached::register_card(&mut uncached, &clocks, preset.cpu.uncached_cycles as u64)
            .and_then(|()| system.register_windows(&mut uncached, &clocks))
            .map_err(ConfigError)?;
        let truth = opts
            .ground_truth
            .then(|| GroundTruth::new(&preset, cpu_period).with_phase_split(opts.phase_split));
        let any = truth.is_some();
        let cores_n = preset.procs;
        let mut sched = sched::Sched::new(
            cores_n,
            preset.cpu.threads_per_core as usize,
            &preset.sched,
            preset.cpu.issue_slice_cycles as u64,
            cpu_period,
        );
        sched.program = preset.program_procs();
        let (preset_atomics, threads_per_core) =
            (preset.cpu.atomics, preset.cpu.threads_per_core as usize);
        let mut st = Box::new(State {
            inbound: Inbound::new(preset.procs, inbound_ticks),
            preset,
            clocks,
            q: {
                let mut q = EventQueue::new();
                q.set_source(SRC_HANDLERS);
                // A thread's resumption is the one light event (the bound's `first_heavy`).
                q.set_light(PRIO_RESUME);
                q
            },
            rng: SimRng::new(opts.seed),
            map,
            cores,
            system,
            uncached,
            truth,
            probes: Vec::new(),
            sig: Signals::default(),
            retire_sink: None,
            armed_any: false,
            horizons: false,
            procedures: vec!["main".to_string()],
            code_blocks: crate::code_blocks::CodeBlocks::new(),
            timeout,
            timeout_clock,
            backoff_max,
            value_probes: opts.value_probes,
            line_probes: opts.line_probes,
            any_probe: any,
            pipeline_probes: false,
            index_probes: false,
            l2_index_probes: false,
            core_events_on: false,
            interests: Interests {
                always: if opts.line_probes {
                    kind::LINE_STATE
                } else {
                    0
                },
                ..Interests::default()
            },
            pipeline_seen: vec![u64::MAX; cores_n],
            sched,
            cpu_period,
            sys_period,
            fault: opts.fault,
            aux: Aux::default(),
            wakes: Vec::new(),
            passive_events: 0,
            delayed: Default::default(),
            delayed_seq: 0,
            acted: Acted::default(),
            os: None,
            resv: crate::cpu::reserve::Reservations::new(
                preset_atomics == crate::config::Atomics::LarxStcx,
                cores_n,
                threads_per_core,
            ),
        });
        st.core_events_on = st
            .truth
            .as_ref()
            .is_some_and(|gt| !gt.core_events.is_empty());
        if let Some(cfg) = st.preset.os.clone() {
            crate::os::boot::install(&mut st, cfg);
        }
        let mut settings = Settings::default();
        st.system
            .register_settings(&mut settings, &st.clocks)
            .map_err(ConfigError)?;
        st.aux.settings = settings;
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
            threads: Vec::new(),
            st,
            stack_bytes: opts.stack_bytes,
            finished: 0,
            stopped: None,
            spawned: 0,
        })
    }

    pub fn setup(&mut self) -> Setup<'_> {
        Setup {
            st: &mut self.st,
            prefix: None,
        }
    }

    /// A new process named `name` (`marked`: its threads start with MSR[PM] set, as
    /// `--mark` asks); needs an operating system (`[os]`). Returns its number.
    pub fn new_process(&mut self, name: &str, marked: bool) -> Result<u16, String> {
        let st = &mut *self.st;
        let Some(os) = st.os.as_mut() else {
            return Err(format!(
                "process `{name}`: several processes need an operating system (an [os] section in the preset, or --os)"
            ));
        };
        if os.processes.iter().any(|p| p.name == name) {
            return Err(format!("process `{name}` exists already"));
        }
        let pt = st.map.alloc(
            &format!("{name}/(page table)"),
            os.cfg.page_table_bytes,
            os.cfg.place(),
        );
        os.processes.push(crate::os::Process {
            name: name.to_string(),
            marked,
            threads: Vec::new(),
            page_table: pt,
            touched: Default::default(),
        });
        Ok((os.processes.len() - 1) as u16)
    }

    /// Keeps FlashPoint's statistics records by process (issue 15, `--monitor flashpoint
    /// --monitor-process NAME`; `flash::flashpoint::FlashPoint::by_process`): each process
    /// gets its own record array of a power of two of procedure slots at least the
    /// registered procedures, the operating system's switch path moves each PP's register
    /// between them with a procedure-delta command, and each processor's boot thread starts
    /// with the register on its process's array (without cost, as its MSR). Call after every
    /// process is set up and spawned, before [`Machine::run`]. Returns the slots per
    /// process. Refused without an operating system, without FlashPoint, and with several
    /// hardware contexts per core (their pipelines interleave with no switch path between
    /// them, and a node has one register).
    pub fn flashpoint_by_process(&mut self) -> Result<u32, String> {
        let st = &mut *self.st;
        let Some(os) = st.os.as_ref() else {
            return Err("FlashPoint by process needs processes (a multiprogrammed run a+b, --os, or an [os] preset section)".into());
        };
        if st.sched.threads_per_core > 1 {
            return Err(format!(
                "FlashPoint by process: {} hardware contexts per core interleave on one node's procedure register with no switch path between them; run with one (--threads-per-core 1)",
                st.sched.threads_per_core
            ));
        }
        let processes = os.processes.len().max(1) as u32;
        let span = (st.procedures.len() as u32).next_power_of_two();
        let nodes = st.preset.nodes();
        let mut boot = vec![(0u16, 0u32); nodes];
        for (p, c) in st.cores.iter().enumerate() {
            boot[st.preset.node_of_proc(p)] = (c.process, c.procedure);
        }
        let crate::memsys::System::Flash(f) = &mut st.system else {
            return Err("FlashPoint by process needs the flash machine (--machine flash)".into());
        };
        let Some(fp) = f.flashpoint_mut() else {
            return Err(
                "FlashPoint by process needs FlashPoint (--protocol fp-noproc or fp-proc)".into(),
            );
        };
        fp.by_process(span, processes, &boot)?;
        Ok(span)
    }

    /// Allocation for process `pid`: every name gets the process's name as a prefix.
    pub fn setup_process(&mut self, pid: u16) -> Setup<'_> {
        let prefix = self
            .st
            .os
            .as_ref()
            .and_then(|os| os.processes.get(pid as usize))
            .map(|p| p.name.clone());
        Setup {
            st: &mut self.st,
            prefix,
        }
    }

    pub fn state(&self) -> &State {
        &self.st
    }
    pub fn state_mut(&mut self) -> &mut State {
        &mut self.st
    }

    /// Attaches a monitor, and schedules its first wake-up if it asks for one
    /// (`Probe::wakes`).
    ///
    /// # Panics
    /// If the probe's clock period is not a whole number of ticks (a monitor's own
    /// definition, not user input).
    pub fn attach(&mut self, p: Box<dyn Probe>) {
        let wake = p.wakes().map(|(clock, first)| {
            let ticks = self.st.cpu_period * clock.num;
            assert!(
                clock.den > 0 && ticks.is_multiple_of(clock.den) && ticks > 0,
                "probe {}: clock {} ({}/{} processor cycles) is not a whole number of ticks",
                p.name(),
                clock.name,
                clock.num,
                clock.den
            );
            (ticks / clock.den, first)
        });
        let k = self.st.probes.len();
        self.st.probes.push(p);
        self.st.wakes.push(wake);
        if let Some((period, first)) = wake {
            self.st.passive_events += 1;
            let at = (first * period).max(self.st.q.now());
            self.st.q.schedule(at, PRIO_WAKE, Ev::Wake(k as u16));
        }
        self.st.any_probe = true;
        self.st.refresh_interests();
    }

    /// The settings probes may change (`Action::Set`), by name.
    pub fn settings(&self) -> &Settings {
        &self.st.aux.settings
    }

    /// Runs `body` as software thread `tid`, placed on a hardware context by the scheduler
    /// (`sched`: thread `t` on processor `t mod procs`; with as many threads as processors,
    /// thread p runs alone on processor p).
    pub fn spawn(&mut self, tid: usize, body: impl FnOnce(&mut Ctx) + 'static) {
        self.spawn_thread(tid, 0, tid, None, body, false);
    }

    /// Like [`Machine::spawn`], for a thread that starts parked (`Ctx::park`): it runs once
    /// another thread calls `Ctx::unpark` for its processor, and one never unparked leaves
    /// no trace (not even an event). Processor `tid` must run no other thread.
    pub fn spawn_parked(&mut self, tid: usize, body: impl FnOnce(&mut Ctx) + 'static) {
        self.spawn_thread(tid, 0, tid, None, body, true);
    }

    /// Spawns thread `local` of `n` of process `pid` (`new_process`) as the machine's next
    /// software thread; `ctx.tid()` is `local`, `ctx.nthreads()` is `n`. Returns its
    /// machine-wide id.
    pub fn spawn_in(
        &mut self,
        pid: u16,
        local: usize,
        n: usize,
        body: impl FnOnce(&mut Ctx) + 'static,
    ) -> usize {
        let tid = self.st.sched.threads.len();
        self.spawn_thread(tid, pid, local, Some(n), body, false);
        tid
    }

    fn spawn_thread(
        &mut self,
        tid: usize,
        pid: u16,
        local: usize,
        n: Option<usize>,
        body: impl FnOnce(&mut Ctx) + 'static,
        parked: bool,
    ) {
        let (p, first) = self.st.sched.place(tid);
        assert!(
            !parked || first,
            "a parked thread must be alone on processor {p}"
        );
        if let Some(os) = self.st.os.as_mut() {
            if os.processes.is_empty() {
                // A plain run under an operating system: one process.
                let _ = self.new_process("main", false);
            }
            let os = self.st.os.as_mut().expect("os");
            let proc_ = &mut os.processes[pid as usize];
            proc_.threads.push(tid);
            let regs = &mut self.st.sched.threads[tid].regs;
            regs.process = pid;
            if proc_.marked {
                regs.msr |= crate::cpu::context::MSR_PM;
            }
            self.st.sched.threads[tid].process = pid;
            self.st.cores[p].multi = true;
        }
        let st: *mut State = &mut *self.st;
        let core: *mut Core = &mut self.st.cores[p];
        let stack = DefaultStack::new(self.stack_bytes).expect("allocate a coroutine stack");
        let co = Coroutine::with_stack(stack, move |y: &Yielder<(), Yield>, ()| {
            let mut ctx = Ctx {
                st,
                core,
                yielder: y,
                id: p,
                tid: local,
                gtid: tid,
                // SAFETY: read when the thread first runs, after every spawn.
                n: n.unwrap_or_else(|| unsafe { (*st).sched.spawned }),
                handler: None,
                miss_handler: None,
                peek: None,
            };
            if ctx.core().os {
                ctx.os_resume();
            } else if ctx.core().multi {
                ctx.sched_resume();
            }
            body(&mut ctx);
            // A thread ends when its last loads have their data (`cpu::nonblocking`).
            ctx.use_loads();
        });
        if self.threads.len() <= tid {
            self.threads.resize_with(tid + 1, || None);
        }
        self.threads[tid] = Some(co);
        self.spawned += 1;
        if first {
            let regs = std::mem::take(&mut self.st.sched.threads[tid].regs);
            let c = &mut self.st.cores[p];
            c.msr = regs.msr;
            c.process = regs.process;
            self.st.sched.threads[tid].regs = regs;
            self.st.cores[p].thread = tid as u32;
            self.st.cores[p].context =
                (self.st.sched.threads[tid].context % self.st.sched.threads_per_core) as u8;
            if parked {
                self.st.cores[p].block = Block::Parked;
            } else {
                self.st.queue_resume(p, 0);
            }
        } else {
            self.st.cores[p].multi = true;
        }
    }

    /// The run-ahead bound of processor p's thread (see the module's documentation).
    #[inline(always)]
    fn bound(st: &State, p: usize) -> Tick {
        Self::bound_of(&st.q, &st.inbound, p)
    }

    /// [`Machine::bound`] from the two fields it reads, for a caller that holds a core.
    #[inline(always)]
    fn bound_of(q: &EventQueue<Ev<crate::memsys::SysEv>>, inbound: &Inbound, p: usize) -> Tick {
        let bound = match q.peek_time() {
            // The earliest of the next event of another kind than a resumption and the next
            // resumption plus `resume_extra` ("The longer window"); when the next event is
            // of another kind, that is its time. So the bound is the earlier of that event's
            // time + `run_ahead` and `Inbound::resumption_bound(x)`, in one sum.
            Some(x) if inbound.resume_extra != 0 => {
                // Until a thread has given a horizon, the queued resumptions' least bound is
                // the earliest one's, `x + resume_extra` when the next event is one (and no
                // later otherwise), without the walk over the processors that
                // `ResumeBounds::min` takes after each pop (-9 % on a kernel's run: `lu` on
                // `flash`, BENCHMARKS.md "Issue 19: the thread's horizon").
                let m = if inbound.horizon_seen {
                    inbound.resume_bound().max(x)
                } else {
                    x + inbound.resume_extra
                };
                q.first_heavy(x, m) + inbound.run_ahead
            }
            Some(x) => x + inbound.run_ahead,
            None => Tick::MAX,
        };
        inbound[p].front().map_or(bound, |&d| d.min(bound))
    }

    /// The memory system's lookahead: what its requests take beyond the inbound delay to
    /// reach any processor (`D - I`, "The memory system's lookahead").
    fn lookahead_beyond_inbound(&self) -> Tick {
        let inbound = self.st.inbound.ticks;
        let d = self.st.system.min_issue_to_delivery(inbound);
        assert!(
            d >= inbound,
            "a memory system's least issue-to-delivery time ({d}) is below the inbound delay ({inbound})"
        );
        d - inbound
    }

    /// The ticks a queued resumption's bound may be taken later than its time ("The longer
    /// window"): one L2 hit on a machine where a resumed thread can send nothing, and
    /// change nothing another processor or a handler reads, before its L2 lookup, plus what
    /// the memory system's requests take beyond the inbound delay to reach a processor
    /// (`D - I`, "The memory system's lookahead"); 0 elsewhere (and with
    /// `PMUSIM_WINDOW=min`). Each condition below is a case of the proof; see the module's
    /// documentation.
    fn resume_extra(&self) -> Tick {
        let st = &*self.st;
        // No run-ahead asked for; probes (monitors) observe, interrupt, arm counters and
        // read or write registers with uncached accesses; the operating system's switch
        // path issues uncached commands; so does FlashPoint's (`alloc_commands`,
        // `procedure_command`).
        let flashpoint = matches!(&st.system, System::Flash(s) if s.flashpoint().is_some());
        if st.inbound.run_ahead != st.inbound.ticks
            || !st.probes.is_empty()
            || st.retire_sink.is_some()
            || st.armed_any
            || st.os.is_some()
            || flashpoint
        {
            return 0;
        }
        let beyond = self.lookahead_beyond_inbound();
        let mut extra = Tick::MAX;
        for c in &st.cores {
            // Without a private L2 the L1 miss goes straight to a shared level (`cmp`,
            // `bgq`); write-through stores go to the memory system at the thread's time;
            // load-and-reserve reservations are shared state a store hit changes; several
            // threads on a core share it under the scheduler.
            if !c.private_l2 || c.write_through || c.store_through || c.larx_stcx || c.multi {
                return 0;
            }
            extra = extra.min(c.timing.l2_hit * c.period);
        }
        if extra == Tick::MAX {
            0
        } else {
            extra + beyond
        }
    }

    /// The run-ahead bound of processor `p`'s single thread (brought to `t` already) when
    /// some counter is armed: `bound` or the armed counters' bound, whichever is earlier.
    #[cold]
    #[inline(never)]
    fn run_until_armed(st: &mut State, p: usize, bound: Tick) {
        // The armed counters' bound is read from the core's time brought to `t`.
        let bound = bound.min(st.armed_bound(p));
        let c = &mut st.cores[p];
        c.run_until = if c.irq.is_empty() { bound } else { 0 };
    }

    /// Resumes the thread that holds processor `p` at `t`. One call site of the coroutine's
    /// `resume` for both kinds of core (a second one made LLVM stop inlining it: about 18
    /// instructions per resumption, BENCHMARKS.md "Hot-path pass").
    ///
    /// The core is indexed once (task omp19): on a core with one thread the armed counters'
    /// bound, which reads the whole state, is out of line behind its flag
    /// (`run_until_armed`), and the core is read after the resumption through the pointer
    /// taken before it, as the thread's `Ctx` does; each index of `cores`, with its bounds
    /// check and the core's address, cost about 5 instructions, three times per resumption.
    fn run_thread(&mut self, p: usize, t: Tick) {
        let st = &mut *self.st;
        let c = &mut st.cores[p];
        let multi = c.multi;
        let core: *mut Core = c;
        #[cfg(debug_assertions)]
        let mut granted = 0;
        let tid = if !multi {
            if c.now < t {
                c.now = t;
            }
            c.send_horizon = 0;
            let bound = Self::bound_of(&st.q, &st.inbound, p);
            #[cfg(debug_assertions)]
            {
                granted = bound;
            }
            let tid = c.thread as usize;
            if st.armed_any {
                Self::run_until_armed(st, p, bound);
            } else {
                c.run_until = if c.irq.is_empty() { bound } else { 0 };
            }
            tid
        } else {
            let Some(tid) = sched::exec::dispatch(&mut self.st, p, t) else {
                if self.st.armed_any {
                    crate::spin_check::arm(&mut self.st, p);
                }
                return;
            };
            let st = &mut *self.st;
            let bound = sched::exec::run_until(st, p, tid, Self::bound(st, p));
            let bound = bound.min(st.armed_bound(p));
            let c = &mut st.cores[p];
            c.run_until = if c.irq_waiting() {
                0
            } else {
                bound.min(c.next_timer)
            };
            tid
        };
        let r = self.threads[tid]
            .as_mut()
            .expect("thread exists")
            .resume(());
        if multi {
            self.after_multi(p, tid, r);
            return;
        }
        // SAFETY: the cores live in the machine's `State` and are never added or removed once
        // it is made (each thread's `Ctx` holds the same pointer); the thread is suspended
        // again, so nothing else refers to its core.
        let c = unsafe { &*core };
        // What the thread may have acted before: its bound, or its time if it stopped
        // earlier (`Inbound::granted`; the deliveries its own request causes come after).
        #[cfg(debug_assertions)]
        {
            self.st.inbound.granted[p] = granted.min(c.run_until).min(c.now);
        }
        if !c.watch_retire {
            // The common case (one thread per core, no `Retire` probe watching): nothing to
            // flush, and the quantum's yield is scheduled from the same look at the core.
            if let CoroutineResult::Yield(Yield::Quantum) = r {
                let (now, horizon) = (c.now, c.send_horizon);
                self.st.queue_resume_inline(p, now, horizon);
                return;
            }
        }
        self.after_single(p, tid, r);
    }

    /// A core with several software threads after its thread's resumption: the scheduler
    /// picks what runs next.
    #[inline(never)]
    fn after_multi(&mut self, p: usize, tid: usize, r: CoroutineResult<Yield, ()>) {
        self.st.flush_retired(p);
        let y = match r {
            CoroutineResult::Yield(y) => Some(y),
            CoroutineResult::Return(()) => {
                self.threads[tid] = None;
                self.finished += 1;
                None
            }
        };
        sched::exec::after_yield(&mut self.st, p, tid, y);
    }

    /// A single-thread core's thread after its resumption, other than the common case
    /// `run_thread` takes in line (a quantum's yield with no `Retire` probe watching).
    #[inline(never)]
    fn after_single(&mut self, p: usize, tid: usize, r: CoroutineResult<Yield, ()>) {
        let st = &mut *self.st;
        st.flush_retired(p);
        match r {
            CoroutineResult::Yield(Yield::Quantum) => {
                let (now, horizon) = (st.cores[p].now, st.cores[p].send_horizon);
                st.queue_resume_inline(p, now, horizon);
            }
            CoroutineResult::Yield(Yield::Blocked) => agent::blocked(st, p),
            CoroutineResult::Return(()) => {
                st.cores[p].block = Block::Done;
                self.threads[tid] = None;
                self.finished += 1;
            }
        }
    }

    /// The run's last tick: the latest core's local time or event that was not a wake-up or
    /// delayed action.
    fn end_time(&self, active_t: Tick) -> Tick {
        let end = self.st.cores.iter().map(|c| c.now).max().unwrap_or(0);
        end.max(active_t)
    }

    /// Makes the wake-ups and delayed actions due by the run's end `end` (a thread may have
    /// run ahead of them to its end), from `(t, ev)`, popped already. Returns how many.
    #[cold]
    #[inline(never)]
    /// A wake-up, a delayed action or a spin check due at `t`. After a probe's wake-up (where
    /// the UPC arms counters) the idle cores look again at what armed counters need
    /// (`spin_check::recheck`).
    fn passive(&mut self, t: Tick, ev: Ev<crate::memsys::SysEv>) {
        match ev {
            Ev::SpinCheck(p) => crate::spin_check::fire(&mut self.st, p as usize, t),
            Ev::Wake(_) => {
                self.st.passive(t, ev);
                if self.st.retire_sink.is_some() {
                    crate::spin_check::recheck(&mut self.st);
                }
            }
            _ => self.st.passive(t, ev),
        }
    }

    fn drain(&mut self, mut t: Tick, mut ev: Ev<crate::memsys::SysEv>, end: Tick) -> u64 {
        let mut n = 0;
        while t <= end {
            if let Ev::Timeout(p) = ev {
                // Stale at the end of a run (a live one would have a thread waiting).
                agent::timer_live(&mut self.st, p as usize, t);
            } else {
                n += 1;
                self.passive(t, ev);
            }
            match self.st.q.pop() {
                Some(next) => (t, ev) = next,
                None => break,
            }
        }
        n
    }

    /// Runs until every thread has finished (or `max_cycles` processor cycles pass), then
    /// builds the ground truth's views (also when the run fails, for diagnostics).
    pub fn run(&mut self, max_cycles: Option<u64>) -> Result<RunSummary, SimError> {
        self.run_ticked(max_cycles, None)
    }

    /// [`Machine::run`], calling `ticker` each time the event loop passes a multiple of its
    /// period (progress bars, interval counts, a Ctrl-C check). The state it sees is the
    /// machine's when the first event past that cycle is taken: a core that runs ahead
    /// between its memory events may have counted a little past it. Without a ticker the loop
    /// costs what it did (the tick shares the cycle limit's one comparison per event).
    pub fn run_ticked(
        &mut self,
        max_cycles: Option<u64>,
        ticker: Option<Ticker<'_>>,
    ) -> Result<RunSummary, SimError> {
        let r = self.run_events(max_cycles, ticker);
        sched::exec::finish(&mut self.st);
        if let Some(gt) = self.st.truth.as_mut() {
            gt.finish();
        }
        r
    }

    /// An event at `t` past the loop's `stop` (`run_events`): the cycle limit (stops the
    /// run) or the ticker's next multiples (each may stop it). Returns the next `stop`.
    #[cold]
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn past_stop(
        &mut self,
        t: Tick,
        limit: Tick,
        ticker: &mut Option<Ticker<'_>>,
        next_tick: &mut Tick,
        events: u64,
        active_t: Tick,
    ) -> Result<Tick, SimError> {
        let period = self.st.cpu_period;
        if t > limit {
            let end = self.end_time(active_t);
            self.stopped = Some(self.wind_up(events, end));
            return Err(SimError::Limit(limit / period));
        }
        if let Some(k) = ticker.as_mut() {
            let every = k.every_cycles.max(1).saturating_mul(period);
            while *next_tick < t {
                if !(k.f)(&self.st, *next_tick / period) {
                    let end = self.end_time(active_t);
                    self.stopped = Some(self.wind_up(events, end));
                    return Err(SimError::Interrupted(*next_tick / period));
                }
                *next_tick = next_tick.saturating_add(every);
            }
        }
        Ok(limit.min(*next_tick))
    }

    fn run_events(
        &mut self,
        max_cycles: Option<u64>,
        mut ticker: Option<Ticker<'_>>,
    ) -> Result<RunSummary, SimError> {
        let period = self.st.cpu_period;
        let limit = max_cycles.map_or(Tick::MAX, |c| c.saturating_mul(period));
        let every = ticker
            .as_ref()
            .map_or(Tick::MAX, |k| k.every_cycles.max(1).saturating_mul(period));
        let mut next_tick = every;
        let old_extra = self.st.inbound.resume_extra;
        self.st.inbound.resume_extra = match self.st.inbound.resume_extra_override {
            Some(x) => x,
            None => self.resume_extra(),
        };
        // The threads' horizons ("The thread's horizon") where the longer window holds,
        // not under a test's override of it.
        let horizons = self.st.inbound.resume_extra != 0
            && self.st.inbound.resume_extra_override.is_none()
            && std::env::var_os("PMUSIM_HORIZON").is_none_or(|v| v != "off");
        self.st.inbound.issue_extra = if horizons {
            self.lookahead_beyond_inbound()
        } else {
            0
        };
        self.st.horizons = horizons;
        // The resumptions queued before the window was known (the threads' first, with 0;
        // a machine run again keeps its window).
        let extra = self.st.inbound.resume_extra;
        self.st.inbound.resume_lb.rewindow(old_extra, extra);
        // One comparison per event: past `stop`, the cold path tells the limit from a tick.
        let mut stop = limit.min(next_tick);
        let mut events = 0u64;
        // The time of the last event that was not a wake-up or a delayed action (those keep
        // nothing alive: the run ends when only they are left).
        let mut active_t = 0;
        // The wake-up or delayed action popped when nothing else was left (the run is over).
        let mut passive_left = None;
        while let Some((t, node)) = self.st.q.pop_node() {
            // A thread's resumption, most events of a replay of many threads, is read in
            // place: the copy of a whole event (the size of the largest kind) cost about 20
            // instructions per event (issue 19, BENCHMARKS.md). The same steps as below.
            if let Ev::Resume(p) = *self.st.q.popped(node) {
                events += 1;
                self.st.inbound.popped_resume(p as usize);
                if t > stop {
                    stop =
                        self.past_stop(t, limit, &mut ticker, &mut next_tick, events, active_t)?;
                }
                active_t = t;
                // The thread's events are ordered among those of their tick by processor
                // (the module's documentation).
                self.st.q.set_source(p as u32);
                self.run_thread(p as usize, t);
                continue;
            }
            let ev = *self.st.q.popped(node);
            self.st.q.set_source(SRC_HANDLERS);
            if let Ev::Timeout(p) = ev {
                // A stale bus-error timer is not an event of the run.
                if !agent::timer_live(&mut self.st, p as usize, t) {
                    continue;
                }
            }
            events += 1;
            if t > stop {
                stop = self.past_stop(t, limit, &mut ticker, &mut next_tick, events, active_t)?;
            }
            let before = active_t;
            active_t = t;
            match ev {
                // Taken above (one call site of `run_thread`, BENCHMARKS.md).
                Ev::Resume(_) => unreachable!("a resumption is taken in place"),
                Ev::Issue(p) => agent::issue(&mut self.st, p as usize, t),
                Ev::Retry(p) => agent::retry(&mut self.st, p as usize, t),
                Ev::Timeout(p) => agent::time_out(&mut self.st, p as usize, t),
                Ev::ToProc(p, m) => {
                    let st = &mut *self.st;
                    // Deliveries pop in time order, so this one is the earliest listed.
                    let front = st.inbound[p as usize].pop_front();
                    debug_assert_eq!(front, Some(t), "deliveries listed in time order");
                    agent::receive(st, p as usize, t, m);
                }
                Ev::Sys(e) => {
                    let st = &mut *self.st;
                    if st.aux.on {
                        st.note_event_origin(&e);
                    }
                    let (sys, mut env) = st.env();
                    sys.handle(&mut env, t, e);
                    st.take_signals();
                }
                Ev::IoDone(p, tid) => {
                    sched::exec::io_done(&mut self.st, p as usize, tid as usize, t)
                }
                Ev::Wake(_) | Ev::Apply | Ev::SpinCheck(_) => {
                    active_t = before;
                    // Nothing but wake-ups and delayed actions left: they keep nothing alive.
                    if self.st.q.len() + 1 == self.st.passive_events {
                        passive_left = Some((t, ev));
                        break;
                    }
                    self.passive(t, ev);
                }
            }
        }
        // Threads parked to the end never existed (`Ctx::park`).
        let parked = self
            .st
            .cores
            .iter()
            .filter(|c| !c.multi && c.block == Block::Parked)
            .count();
        if self.finished + parked < self.spawned {
            let mut blocked = Vec::new();
            for (p, c) in self.st.cores.iter().enumerate() {
                for &tid in &self.st.sched.cores[p].threads {
                    if self.threads[tid].is_none() {
                        continue;
                    }
                    let why = if c.multi {
                        self.st.sched.threads[tid].block
                    } else {
                        c.block
                    };
                    blocked.push(if tid == p && !c.multi {
                        format!("processor {p}: {why:?}")
                    } else {
                        format!("thread {tid} on processor {p}: {why:?}")
                    });
                }
            }
            return Err(SimError::Deadlock(format!(
                "no events left but {} thread(s) have not finished ({})",
                self.spawned - self.finished,
                blocked.join("; ")
            )));
        }
        let end = self.end_time(active_t);
        if let Some((t, ev)) = passive_left {
            events += self.drain(t, ev, end);
        }
        Ok(self.wind_up(events, end))
    }

    /// The end of a run, finished or stopped: the last pipeline statuses, the probes'
    /// `finish`, and the summary.
    fn wind_up(&mut self, events: u64, end: Tick) -> RunSummary {
        if self.st.pipeline_probes {
            for p in 0..self.st.cores.len() {
                let t = self.st.cores[p].now;
                self.st.emit_pipeline(p, t);
            }
        }
        // The memory controllers drain what their write buffers still hold (after the last
        // thread finished: the run's time is not changed by it).
        self.st.system.finish(end);
        for p in self.st.probes.iter_mut() {
            p.finish(end);
        }
        RunSummary {
            ticks: end,
            cycles: end / self.st.cpu_period,
            references: self.st.cores.iter().map(|c| c.cnt.refs).sum(),
            events,
        }
    }

    /// The summary of a run stopped early (cycle limit or a ticker's stop): what was
    /// simulated until then, with the monitors finished at that time, for a partial report.
    pub fn stopped_summary(&self) -> Option<RunSummary> {
        self.stopped
    }
}
