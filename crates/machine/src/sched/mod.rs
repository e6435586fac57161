//! The scheduler: software threads on hardware contexts, hardware contexts on a core's pipeline.
//!
//! # Model
//! Each core has `cpu.threads_per_core` hardware contexts sharing its pipeline, L1s, L2, TLB,
//! write-back buffer and external agent (which, as the R4400's, carries one transaction at a
//! time: a context that misses while a sibling's miss is outstanding waits for the agent;
//! cache hits of the other contexts go on underneath). Software threads (`Machine::spawn`) are
//! placed on contexts once, when spawned, and never migrate:
//!
//! - **Placement** ("spread"): thread `t` goes to core `t mod procs`, context
//!   `(t div procs) mod threads_per_core`. Threads fill every core's first context before any
//!   second one, and a run with as many threads as processors places thread p on processor p.
//! - **Issue policy** (hardware): round robin among the core's *ready* contexts in slices of
//!   `cpu.issue_slice_cycles` (1 = cycle-by-cycle interleaving); a context that blocks (a miss,
//!   an uncached access, a spin-wait, waiting for the agent) gives the pipeline up at once, and
//!   one that becomes ready takes its turn at the next slice boundary. A context waiting in a
//!   spin loop issues nothing (as with a pause instruction or a thread-priority hint): its wait
//!   costs the core nothing while a sibling runs, and is charged as spin iterations only while
//!   the core has nothing else to do.
//! - **Time slicing** (software, the seam the operating-system model fills in): a context with
//!   more than one software thread runs one at a time, round robin; the loaded thread gives the
//!   context to the next ready one when it has held it `sched.quantum_cycles` cycles, or at
//!   once when it waits in a spin-wait or sleep (barriers, locks, flags) — never on a cache
//!   miss. Each switch costs `sched.switch_cycles`, charged to the incoming thread as "other
//!   stall" before it issues.
//!
//! The interface is four functions of `exec` (the scheduler's operations on the machine
//! state) that the event loop and the external agent call: `exec::dispatch` (pick the thread
//! that issues next on a core), `exec::after_yield` (a thread left the pipeline: time bound,
//! blocked, or finished), `exec::wake` (a blocked thread can go on) and `exec::line_changed`
//! (a line some thread spins on changed). The policy itself is here, in `Sched::balance`
//! (software) and `Sched::pick` (hardware), which see only the scheduler's own state.
//!
//! # Why the interleaving stays exact
//! A core still has one local time (`Core::now`): only one context issues at a time, so the
//! run-ahead argument of ARCHITECTURE.md ("Time and interleaving") applies to the core as
//! before. The scheduler's decisions are taken only at points that argument already makes
//! exact: a running thread returns to the event loop at the earliest of its run-ahead bound,
//! its slice end (whenever another context of the core holds a thread) and its quantum end
//! (whenever other threads wait for its context), and the decision is taken by the `Resume`
//! event at that time, after every delivery to the core at or before it has been processed
//! (deliveries sort before resumptions at equal times, and any delivery not yet scheduled lies
//! beyond the run-ahead bound). A context made ready by a delivery or by a sibling's store
//! (a local store changes a spun-on line without an invalidation, so the store itself wakes
//! the spinners) is therefore seen at the first slice boundary after it became ready, exactly
//! as a cycle-by-cycle model with the same slice would see it.
//!
//! With one software thread per core none of this runs: `Core::multi` is false and the event
//! loop and the agent take their single-thread paths, event for event the same as before.

pub mod exec;

use crate::config::SchedCfg;
use crate::cpu::context::{self, ThreadRegs};
use crate::cpu::{pipeline::Ps, Block, Counters};
use engine::Tick;
use std::collections::VecDeque;

/// What a software thread is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Run {
    /// Can issue (loaded on its context, or waiting in the context's queue).
    Ready,
    /// Holds its core's pipeline.
    Running,
    /// Waiting (`SwThread::block` says for what).
    Blocked,
    Done,
}

/// A software thread.
#[derive(Clone, Debug)]
pub struct SwThread {
    /// Spawned (thread ids may have gaps).
    pub present: bool,
    pub core: usize,
    /// Global index of its hardware context (`core * threads_per_core + k`).
    pub context: usize,
    pub run: Run,
    pub block: Block,
    /// Its processor state while another thread holds the core.
    pub regs: ThreadRegs,
    /// Cycles to charge (other stall) when it next issues: software switches into it.
    pub owed: u64,
    /// Exact counts of the core while this thread held it.
    pub cnt: Counters,
    /// Software context switches into this thread.
    pub switches: u64,
    /// Its process (`os`; 0 without an operating system).
    pub process: u16,
    /// Counts split by the MSR's problem-state bit: `[user, supervisor]` (kept with an
    /// operating system only; they sum to `cnt`).
    pub mode: [Counters; 2],
    /// The part of `mode` counted while the thread's MSR[PM] was set (a marked process),
    /// `[user, supervisor]`: split at every change of the mark as of PR, so a monitor's
    /// marked-only count is exact when a process marks and unmarks itself mid-run (issue 15).
    pub marked: [Counters; 2],
    /// In supervisor state (MSR[PR] = 0): inside an operating-system path, which the
    /// scheduler does not preempt (a path that blocks on a miss or programmed I/O at the end
    /// of a quantum finishes before the switch, as a kernel's interrupt handlers do).
    pub supervisor: bool,
    /// A software switch into this thread happened: it runs the operating system's switch
    /// path when it next issues (from `switch_from`, the thread the context held before), or
    /// without one the memory system's switch command (`Ctx::sched_resume`).
    pub switch_pending: bool,
    pub switch_from: Option<usize>,
}

impl SwThread {
    fn absent() -> SwThread {
        SwThread {
            present: false,
            core: 0,
            context: 0,
            run: Run::Done,
            block: Block::None,
            regs: ThreadRegs::default(),
            owed: 0,
            cnt: Counters::default(),
            switches: 0,
            process: 0,
            mode: Default::default(),
            marked: Default::default(),
            supervisor: false,
            switch_pending: false,
            switch_from: None,
        }
    }
}

/// A hardware context: the software thread loaded on it and those waiting for it.
#[derive(Clone, Debug, Default)]
pub struct HwContext {
    pub loaded: Option<usize>,
    pub queue: VecDeque<usize>,
    pub quantum_end: Tick,
}

/// Scheduling state of one core.
#[derive(Clone, Debug, Default)]
pub struct CoreSched {
    /// Software threads placed on this core, in spawn order.
    pub threads: Vec<usize>,
    /// Local index of the context that issues (or issued last).
    pub cur: usize,
    /// A thread holds the pipeline or a `Resume` of this core is scheduled.
    pub busy: bool,
    pub slice_end: Tick,
    /// The core's counters when its current thread was switched in.
    pub base: Counters,
    /// The core's counters at the current thread's last change of MSR[PR] or switch (with
    /// an operating system).
    pub mode_base: Counters,
    /// The thread whose transaction the external agent carries.
    pub agent_owner: usize,
    /// Threads waiting for the agent.
    pub agent_waiters: Vec<usize>,
    /// The time of the core's latest `Ev::SpinCheck` (`spin_check`): an earlier one is stale.
    pub spin_check: Option<Tick>,
}

/// The scheduler's state.
#[derive(Clone, Debug)]
pub struct Sched {
    pub threads_per_core: usize,
    pub quantum: Tick,
    pub switch_cycles: u64,
    pub slice: Tick,
    pub threads: Vec<SwThread>,
    pub contexts: Vec<HwContext>,
    pub cores: Vec<CoreSched>,
    /// Software threads spawned.
    pub spawned: usize,
    /// Cores program threads are placed on (`0..program`): the cores beyond are the
    /// system's (`cpu.system_cores`).
    pub program: usize,
    /// An operating system runs the switches (`os`): a switch runs its path in the incoming
    /// thread instead of costing `switch_cycles`.
    pub os: bool,
}

/// How a woken thread's wait is charged when the core was idle during it.
#[derive(Clone, Copy, Debug)]
pub enum Wake {
    /// A stall of this pipeline state (a miss, an uncached access).
    Stall(Ps),
    /// A spin-wait (spin iterations) or a sleep (other stall) since `since`.
    Spin { since: Tick, sleep: bool },
}

impl Sched {
    pub fn new(
        procs: usize,
        threads_per_core: usize,
        cfg: &SchedCfg,
        slice_cycles: u64,
        period: Tick,
    ) -> Sched {
        Sched {
            threads_per_core,
            quantum: cfg.quantum_cycles * period,
            switch_cycles: cfg.switch_cycles,
            slice: slice_cycles * period,
            threads: Vec::new(),
            contexts: vec![HwContext::default(); procs * threads_per_core],
            cores: vec![CoreSched::default(); procs],
            spawned: 0,
            program: procs,
            os: false,
        }
    }

    /// Places software thread `tid` (see the module's placement policy). Returns its core and
    /// whether it is the core's first thread.
    pub fn place(&mut self, tid: usize) -> (usize, bool) {
        let procs = self.program;
        let core = tid % procs;
        let k = (tid / procs) % self.threads_per_core;
        let ctx = core * self.threads_per_core + k;
        if self.threads.len() <= tid {
            self.threads.resize_with(tid + 1, SwThread::absent);
        }
        assert!(!self.threads[tid].present, "thread {tid} spawned twice");
        self.threads[tid] = SwThread {
            present: true,
            core,
            context: ctx,
            run: Run::Ready,
            ..SwThread::absent()
        };
        let cs = &mut self.cores[core];
        let first = cs.threads.is_empty();
        if first {
            cs.cur = k;
            cs.busy = true;
            cs.slice_end = self.slice;
        }
        cs.threads.push(tid);
        let hc = &mut self.contexts[ctx];
        if hc.loaded.is_none() {
            hc.loaded = Some(tid);
            hc.quantum_end = self.quantum;
        } else {
            hc.queue.push_back(tid);
        }
        self.spawned += 1;
        (core, first)
    }

    /// The core runs more than one software thread (and so takes the scheduler's paths).
    pub fn multi(&self, p: usize) -> bool {
        self.cores[p].threads.len() > 1
    }

    /// Software scheduling on context `ctx` at `now`: replaces its loaded thread by the first
    /// ready one of its queue when the loaded one finished, waits in a spin-wait or sleep, or
    /// used up its quantum.
    pub(crate) fn balance(&mut self, ctx: usize, now: Tick) {
        let threads = &mut self.threads;
        let hc = &mut self.contexts[ctx];
        let Some(pos) = hc.queue.iter().position(|&t| threads[t].run == Run::Ready) else {
            if now >= hc.quantum_end {
                hc.quantum_end = now + self.quantum;
            }
            return;
        };
        let replace = match hc.loaded {
            None => true,
            Some(l) => match threads[l].run {
                Run::Done => true,
                Run::Blocked => matches!(threads[l].block, Block::Spin { .. } | Block::Io { .. }),
                Run::Ready | Run::Running => now >= hc.quantum_end && !threads[l].supervisor,
            },
        };
        if !replace {
            return;
        }
        let inc = hc.queue.remove(pos).expect("position in queue");
        // The incoming thread runs the switch's code when it next issues: the operating
        // system's switch path, or without one the memory system's switch command alone
        // (FlashPoint's procedure delta; `Ctx::sched_resume`) beside `switch_cycles`.
        threads[inc].switch_pending = true;
        threads[inc].switch_from = hc.loaded;
        if !self.os {
            threads[inc].owed += self.switch_cycles;
        }
        if let Some(l) = hc.loaded {
            if threads[l].run != Run::Done {
                hc.queue.push_back(l);
            }
        }
        hc.loaded = Some(inc);
        hc.quantum_end = now + self.quantum;
        threads[inc].switches += 1;
    }

    fn loaded_ready(&self, p: usize, k: usize) -> Option<usize> {
        self.contexts[p * self.threads_per_core + k]
            .loaded
            .filter(|&t| matches!(self.threads[t].run, Run::Ready | Run::Running))
    }

    /// Hardware issue policy: the context that issues next on core `p` at `now`.
    pub(crate) fn pick(&mut self, p: usize, now: Tick) -> Option<usize> {
        let n = self.threads_per_core;
        let cur = self.cores[p].cur;
        if now < self.cores[p].slice_end {
            if let Some(t) = self.loaded_ready(p, cur) {
                return Some(t);
            }
        }
        for i in 1..=n {
            let k = (cur + i) % n;
            if let Some(t) = self.loaded_ready(p, k) {
                let cs = &mut self.cores[p];
                if k != cur || now >= cs.slice_end {
                    cs.slice_end = now + self.slice;
                }
                cs.cur = k;
                return Some(t);
            }
        }
        None
    }
}

/// Counts of hardware context `ctx`: the sum of its software threads'.
pub fn context_counts(s: &Sched, ctx: usize) -> Counters {
    let mut c = Counters::default();
    for t in s.threads.iter().filter(|t| t.present && t.context == ctx) {
        context::add(&mut c, &t.cnt);
    }
    c
}
