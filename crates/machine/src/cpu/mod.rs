//! The processor: an in-order core that blocks on misses (R4400-like; with `[cpu.nonblocking]`
//! plain loads do not: `nonblocking`), its private L1 I/D and
//! (when the preset has one) inclusive L2 caches, and its external agent.
//!
//! The core's *last private level* (`Core::lpl`: the private L2, or the L1 D on a core without
//! one) is the array the external agent keeps coherent: its states answer the memory system's
//! invalidations and interventions and its slots hold the lines' data tokens (`values`).
//!
//! The core's state lives in `Core`; the simulated thread drives it through `Ctx` (the thread
//! API), which runs cache hits inline without leaving the thread's coroutine. Only L2 misses,
//! uncached accesses and waits leave the coroutine; the external agent (`agent.rs`) then turns
//! them into transactions and installs the responses.

pub mod agent;
pub mod context;
pub mod ctx;
#[cfg(test)]
mod index_state_tests;
#[cfg(test)]
mod informing_tests;
pub mod msr;
pub mod nonblocking;
#[cfg(test)]
mod nonblocking_tests;
pub mod op;
pub mod pipeline;
pub mod predictor;
pub mod reserve;
pub mod retire_sum;
pub mod scan;
pub mod tlb;
pub mod wide;

use crate::addr::Addr;
use crate::cache::Cache;
use crate::config::Preset;
use crate::probe::{Cmd, MissType, Origin};
use engine::Tick;
use pipeline::Ps;
pub use retire_sum::RetireSum;
use retire_sum::SIZED;
use std::collections::VecDeque;

pub use op::Class;

/// Exact per-processor counts kept on the fast path (no observation per L1 hit).
#[derive(Clone, Debug)]
pub struct Counters {
    /// Retired instructions by `Class`.
    pub instr: [u64; 6],
    /// Cycles by pipeline state (`Ps` code; index 0 unused).
    pub ps: [u64; 16],
    pub l1i_hits: u64,
    pub l1i_misses: u64,
    pub l1d_hits: u64,
    pub l1d_misses: u64,
    pub l2_hits: u64,
    pub l2_misses: u64,
    /// Data references (loads + stores, a modify counting two).
    pub refs: u64,
    pub nacks: u64,
    pub cancelled_upgrades: u64,
    pub bus_errors: u64,
    pub interrupts: u64,
    pub uncached: u64,
    /// TLB refills of data references and of instruction fetches (exact; PAPI_TLB_DM and
    /// PAPI_TLB_IM).
    pub dtlb_misses: u64,
    pub itlb_misses: u64,
    /// Branches the branch predictor (`[cpu.branch_predictor]`) got wrong (0 without one).
    pub branch_mispredicts: u64,
    /// Pipeline restarts counted where they happen (an exception, a misprediction, a spin
    /// iteration's branch): part of [`Counters::restarts`], all of it when
    /// `restart_per_taken` is 0 (a thread's or a sum's totals).
    pub restarts_counted: u64,
    /// Taken branches whose restart, if any, `restarts_counted` holds (a spin iteration's, a
    /// predicted branch's): left out of `restart_per_taken`'s count.
    pub taken_unflushed: u64,
    /// 1 on a core with the restart signal whose taken branches kill cycles
    /// (`branch_taken_killed_cycles > 0`), else 0: each of its other taken branches is one
    /// restart, which [`Counters::restarts`] works out from `instr` instead of the branch
    /// path counting it (the path stays the R4400's: BENCHMARKS.md, "restart signal").
    pub restart_per_taken: u64,
    /// Total miss cycles (seed 000 Table 4.10 item 18): over every L2 miss (data and
    /// instruction; not uncached accesses) on a single-thread core, the processor cycles from
    /// its request leaving the core (after the L2 tag check) to its data; a bus error ends
    /// one span and the re-issue starts another (`cpu::nonblocking`).
    pub miss_cycles: u64,
    /// Apparent miss cycles (item 19): the cycles of those spans the processor actually
    /// stalled (multiprocessing stalls). Equal to `miss_cycles` on a blocking core; smaller
    /// with `[cpu.nonblocking]`, by the cycles it ran under its misses.
    pub miss_stall_cycles: u64,
    /// Retired instructions by fine class (`op::Op`), other than each class's default op
    /// (whose count is the class's count less these: see [`Counters::ops`]).
    pub xops: [u64; op::Op::COUNT],
    /// Sized loads (`[0]`) and stores (`[1]`) by their size in bytes modulo 64 (`load_n`,
    /// `store_n`, `modify_n`, traced references), for `Counters::ops`'s `Load*`/`Store*`.
    pub by_size: [[u64; 64]; 2],
}

/// `ops_since`'s dirty bit for the sized loads and stores (`Counters::by_size`), always passed
/// by the report (no reference sets it); bits 0..42 of `Core::retire_dirty` are the ops of
/// `Counters::xops`.
pub const SIZED_DIRTY: u64 = 1 << 63;

/// The parts of `Counters` that `Counters::ops` is computed from, at time `t`: the class
/// counts, the fine-class counts and the sized accesses that have ops of their own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetireMark {
    pub instr: [u64; 6],
    pub t: Tick,
    pub xops: [u64; op::Op::COUNT],
    pub sized: [u64; 10],
    /// Per row of `sized` (loads, stores), its sum: `Counters::add_since` compares it with
    /// the counters' to skip the row when no such access retired.
    pub sized_sum: [u64; 2],
    /// The last `Counters::ops_since`'s counts of the ops it said moved.
    pub delta: [u64; op::Op::COUNT],
}

impl Default for Counters {
    fn default() -> Counters {
        Counters {
            instr: [0; 6],
            ps: [0; 16],
            l1i_hits: 0,
            l1i_misses: 0,
            l1d_hits: 0,
            l1d_misses: 0,
            l2_hits: 0,
            l2_misses: 0,
            refs: 0,
            nacks: 0,
            cancelled_upgrades: 0,
            bus_errors: 0,
            interrupts: 0,
            uncached: 0,
            dtlb_misses: 0,
            itlb_misses: 0,
            branch_mispredicts: 0,
            restarts_counted: 0,
            taken_unflushed: 0,
            restart_per_taken: 0,
            miss_cycles: 0,
            miss_stall_cycles: 0,
            xops: [0; op::Op::COUNT],
            by_size: [[0; 64]; 2],
        }
    }
}

impl Counters {
    /// Pipeline restarts: flushes (an exception, a taken or mispredicted branch, a spin
    /// iteration's branch) that killed at least one cycle, each ending in one restart
    /// (Table 4.10 item 4). Counted only on a core with the restart signal
    /// (`[cpu] restart_signal`); 0 on the R4400, which has none.
    #[inline]
    pub fn restarts(&self) -> u64 {
        let taken = self.instr[Class::BranchTaken as usize] - self.taken_unflushed;
        self.restarts_counted + self.restart_per_taken * taken
    }

    pub fn instructions(&self) -> u64 {
        self.instr.iter().sum()
    }
    pub fn cycles(&self) -> u64 {
        self.ps.iter().sum()
    }
    /// Exact retired instructions by fine class, indexed by `op::Op`: the counted ops, and for
    /// each class's default op the class's count less the class's other ops.
    pub fn ops(&self) -> [u64; op::Op::COUNT] {
        let mut v = self.xops;
        // Only these sizes have ops of their own (every other size is the class's default,
        // `Op::sized`): 10 entries, not 128 (this runs at every yield under a Retire probe).
        for (w, sizes) in self.by_size.iter().enumerate() {
            for size in [1u32, 2, 4, 16, 32] {
                let o = op::Op::sized(size, w == 1);
                debug_assert!(!o.is_default());
                v[o as usize] += sizes[size as usize];
            }
        }
        let mut other = [0u64; 6];
        for o in op::Op::ALL {
            if !o.is_default() {
                other[o.class() as usize] += v[o as usize];
            }
        }
        for (k, &n) in self.instr.iter().enumerate() {
            let c = Class::ALL[k];
            v[op::Op::default_of(c) as usize] = n - other[k];
        }
        v
    }
    /// A mark of what has been retired so far, at `t` (for [`Counters::ops_since`]).
    pub fn retire_mark(&self, t: Tick) -> RetireMark {
        let mut m = RetireMark {
            instr: self.instr,
            t,
            xops: self.xops,
            sized: [0; 10],
            sized_sum: [self.sized_sum(0), self.sized_sum(1)],
            delta: [0; op::Op::COUNT],
        };
        for (j, &(w, size, _)) in SIZED.iter().enumerate() {
            m.sized[j] = self.by_size[w][size];
        }
        m
    }

    /// The sum of the sized loads (`w` 0) or stores (1) that have ops of their own.
    #[inline(always)]
    fn sized_sum(&self, w: usize) -> u64 {
        let r = &self.by_size[w];
        r[1] + r[2] + r[4] + r[16] + r[32]
    }

    /// Instructions by fine class retired since mark `m` (`ops()` now less `ops()` at the
    /// mark): returns the mask of the ops that moved (bit `op as usize`), whose counts are then
    /// in `m.delta` (the other entries are stale), and moves `m` to now (`t`). `dirty` names the parts that may have moved since the mark (`Core::retire_dirty`:
    /// bit `op` for `xops[op]`, [`SIZED_DIRTY`] for the sized accesses); more bits than moved
    /// only cost time. This runs at every yield of every core while a probe watches `Retire`
    /// (BENCHMARKS.md, the UPC's opcode group), where computing `ops()` twice and walking
    /// every op cost about 850 instructions a call.
    pub fn ops_since(&self, m: &mut RetireMark, dirty: u64, t: Tick) -> u64 {
        let mut moved = 0u64;
        let mut other = [0u64; 6];
        // `m.delta[o]` is written when `o` first moves (its bit in `moved`), added to after.
        let put = |d: &mut [u64; op::Op::COUNT], moved: &mut u64, o: usize, x: u64| {
            if *moved >> o & 1 == 0 {
                d[o] = x;
                *moved |= 1 << o;
            } else {
                d[o] += x;
            }
        };
        let mut b = dirty & ((1u64 << op::Op::COUNT) - 1);
        while b != 0 {
            let i = b.trailing_zeros() as usize;
            b &= b - 1;
            let x = self.xops[i] - m.xops[i];
            if x != 0 {
                m.xops[i] = self.xops[i];
                put(&mut m.delta, &mut moved, i, x);
                other[op::Op::ALL[i].class() as usize] += x;
            }
        }
        if dirty & SIZED_DIRTY != 0 {
            for (j, &(w, size, o)) in SIZED.iter().enumerate() {
                let now = self.by_size[w][size];
                let x = now - m.sized[j];
                if x != 0 {
                    put(&mut m.delta, &mut moved, o as usize, x);
                    other[o.class() as usize] += x;
                    m.sized[j] = now;
                    m.sized_sum[w] += x;
                }
            }
        }
        for (k, c) in Class::ALL.into_iter().enumerate() {
            let x = self.instr[k] - m.instr[k] - other[k];
            if x != 0 {
                put(&mut m.delta, &mut moved, op::Op::default_of(c) as usize, x);
            }
        }
        m.instr = self.instr;
        m.t = t;
        moved
    }

    /// Adds what was retired since mark `m` to `s` (class counts, the fine-class counts `dirty`
    /// names, the sized accesses that have ops of their own) and moves `m` to now (`t`):
    /// [`Counters::ops_since`]'s differences without splitting classes into ops, which
    /// [`RetireSum::take_ops`] does once for many reports (`retire_sink`).
    #[inline]
    pub fn add_since(&self, m: &mut RetireMark, dirty: u64, t: Tick, s: &mut RetireSum) {
        // A row of sized accesses moves only with its class (loads, stores), and its sum
        // tells whether it moved: most reports skip the ten entries.
        let rows = [
            self.instr[0] != m.instr[0] && self.sized_sum(0) != m.sized_sum[0],
            self.instr[1] != m.instr[1] && self.sized_sum(1) != m.sized_sum[1],
        ];
        for k in 0..6 {
            s.instr[k] += self.instr[k] - m.instr[k];
        }
        m.instr = self.instr;
        let mut b = dirty & ((1u64 << op::Op::COUNT) - 1);
        s.xdirty |= b;
        while b != 0 {
            let i = b.trailing_zeros() as usize;
            b &= b - 1;
            s.xops[i] += self.xops[i] - m.xops[i];
            m.xops[i] = self.xops[i];
        }
        if dirty & SIZED_DIRTY != 0 {
            for (w, &moved) in rows.iter().enumerate() {
                if !moved {
                    continue;
                }
                m.sized_sum[w] = self.sized_sum(w);
                for (j, &(_, size, _)) in SIZED.iter().enumerate().skip(5 * w).take(5) {
                    let now = self.by_size[w][size];
                    s.sized[j] += now - m.sized[j];
                    m.sized[j] = now;
                }
            }
        }
        m.t = t;
    }

    /// True when some instruction other than a class's default op was retired.
    pub fn has_fine_ops(&self) -> bool {
        let ops = self.ops();
        op::Op::ALL
            .iter()
            .any(|&o| !o.is_default() && ops[o as usize] > 0)
    }
}

/// Processor timing in processor cycles, from the preset's `[cpu]` and cache sections.
#[derive(Clone, Debug)]
pub struct Timing {
    pub fp_slip: u64,
    pub load_slip: u64,
    pub branch_killed: u64,
    pub exception: u64,
    pub uncached: u64,
    pub l1_hit: u64,
    pub l2_hit: u64,
    pub spin_iter: u64,
    /// 1 when the core has the restart signal (`[cpu] restart_signal`), else 0: the factor
    /// of every flush `Core::kill` and `Core::charge_spin` count (`Counters::restarts`).
    pub restart: u64,
    pub inbound_ticks: Tick,
    /// Extra cycles per fine instruction class (`[cpu.op_extra_cycles]`), by `op::Op`.
    pub op_extra: [u64; op::Op::COUNT],
    /// What `Ctx::retire_op` charges per instruction of each op (`op::OpCost`).
    pub op_cost: [op::OpCost; op::Op::COUNT],
}

/// What a blocked thread asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Load,
    Store(Option<u64>),
    /// Atomic read-modify-write: the function and its operands.
    Rmw(Rmw, u64, u64),
    IFetch,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rmw {
    Swap,
    FetchAdd,
    CompareSwap,
    /// Store the larger of the old value and the operand.
    Max,
    /// A store conditional (`cpu::reserve`): `Op::Rmw(StoreConditional, value, hw)` stores
    /// `value` if hardware thread `hw` still holds its reservation on the line when the store
    /// performs; `agent::perform` then returns 1 (stored) or 0 (failed, nothing written).
    StoreConditional,
}

impl Rmw {
    /// New value and whether to write, given the old value and operands.
    pub fn apply(self, old: u64, a: u64, b: u64) -> u64 {
        match self {
            Rmw::Swap | Rmw::StoreConditional => a,
            Rmw::FetchAdd => old.wrapping_add(a),
            Rmw::Max => old.max(a),
            Rmw::CompareSwap => {
                if old == a {
                    b
                } else {
                    old
                }
            }
        }
    }
}

/// An outstanding external transaction of the agent (the processor blocks on it).
#[derive(Clone, Copy, Debug)]
pub struct Pending {
    pub op: Op,
    pub addr: Addr,
    pub line: u64,
    pub cmd: Cmd,
    /// First issue of this miss (the latency timer's start).
    pub issued: Tick,
    pub first_nack: Tick,
    pub nacks: u32,
    /// An invalidation for the line arrived while the fill was outstanding: the access
    /// completes with the data received and the line is then dropped.
    pub inval_seen: bool,
    pub miss_type: MissType,
    pub home: u16,
    /// Time of the current attempt.
    pub attempt: Tick,
    /// When the bus-error timer expires (0: not armed): the time-out's count of timer-clock
    /// edges after `issued` (`agent::arm_timer`).
    pub deadline: Tick,
    /// A request message is in the memory system and its response has not arrived.
    pub in_flight: bool,
    /// When the NACK back-off's retry is due (0: none; a bus error abandons it).
    pub retry_at: Tick,
    /// A bus error was taken and the access is re-issued at this time, after the exception
    /// handler; a response arriving before then waits for the re-issue.
    pub reissue_at: Option<Tick>,
    /// For uncached accesses: size and data to write.
    pub size: u8,
    pub wdata: Option<u64>,
    /// Cycles when the request left the core (L2 tag check done).
    pub stall_from: Tick,
    /// PhaseID and procedure of the thread that made the request (another thread of the
    /// core may hold the pipeline when it issues or completes).
    pub phase: u16,
    pub procedure: u32,
    /// The thread that made the request (`probe::Origin`).
    pub who: Origin,
    /// Instructions, and loads and stores, the thread had retired when this miss was issued
    /// (set only under an active-list or address-queue limit, `cpu::nonblocking`; else 0).
    pub seq: (u64, u64),
}

/// A pending interrupt (`probe::Action::Interrupt`), for the thread on hardware context
/// `context` of the core.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Irq {
    pub context: u8,
    pub vector: u32,
    /// The handler's own cost, beyond the exception entry.
    pub handler_cycles: u64,
}

/// What the thread is waiting for while blocked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    None,
    /// An external transaction (see `Core::pend`).
    Miss,
    /// A spin-wait on a line: resumes when the line is invalidated or changed.
    Spin {
        line: u64,
        since: Tick,
        /// Sleeping (a blocked system call) rather than spinning: the time is idle ("other
        /// stall") instead of spin-loop instructions.
        sleep: bool,
    },
    /// Waiting for the external agent, busy with a sibling context's transaction (cores
    /// with several software threads only).
    Agent,
    /// In a blocking system call (`Ctx::io_wait`) until `until` (with an operating system).
    Io {
        until: Tick,
    },
    /// A thread that does not exist yet (a replayed program's thread before its parent
    /// creates it, `Ctx::park`): no events, no cycles; resumed by `Ctx::unpark`, or left
    /// at the end of the run as if it had never been spawned.
    Parked,
    /// Finished.
    Done,
}

pub struct Core {
    pub id: u16,
    pub node: u16,
    /// The software thread whose state the core holds (see `context`, `sched`).
    pub thread: u32,
    /// Its hardware context on this core (`0..threads_per_core`).
    pub context: u8,
    /// More than one software thread runs on this core: the event loop and the agent take
    /// the scheduler's paths (`sched`). False keeps the single-thread paths, unchanged.
    pub multi: bool,
    /// The value a spin-wait saw last (a sibling thread may change it, without an
    /// invalidation, between the load and the wait: `sched::exec::after_yield` compares).
    pub spin_seen: u64,
    /// Local time (ticks). Runs ahead of the event queue by less than `inbound_ticks`.
    pub now: Tick,
    pub period: Tick,
    /// The thread must return to the event loop when `now` reaches this (0 forces it: used to
    /// deliver interrupts without a test on the fast path).
    pub run_until: Tick,
    /// Set at a yield by the scan of the thread's next records (`hits::horizon`): the
    /// thread sends nothing before this (0: not scanned).
    pub send_horizon: Tick,
    /// The scan's view of the L1s it would fill (`hits::horizon`).
    pub scan: scan::Scan,
    pub l1i: Cache,
    pub l1d: Cache,
    /// The private L2 (inclusive of the L1s), when `private_l2`; otherwise an unused
    /// one-line placeholder, so that the fields' layout (and the hit path) stay the same.
    pub l2: Cache,
    /// The core has a private L2 (today's presets). Without one the L1 D is the last private
    /// level and instruction lines are fetched from the memory system as whole coherence
    /// lines (`cpu::agent`).
    pub private_l2: bool,
    pub tlb: tlb::Tlb,
    /// The branch predictor (`[cpu.branch_predictor]`), `None` on the R4400 presets.
    pub bp: Option<Box<predictor::Bimodal>>,
    /// Loads do not block on a miss (`[cpu.nonblocking]`, `cpu::nonblocking`); false on the
    /// R4400 presets.
    pub nonblocking: bool,
    /// The pending transaction (`pend`) is a plain load whose value the thread has not used
    /// yet: the thread runs under it (`cpu::nonblocking`).
    pub under_miss: bool,
    /// Plain stores do not block on a miss (`[cpu.nonblocking] stores`).
    pub nonblocking_stores: bool,
    /// Plain loads do not block on a miss (`[cpu.nonblocking] loads`, true by default); with
    /// it false a load waits for its own data only (`cpu::nonblocking`, "Blocking loads over
    /// a write buffer").
    pub nonblocking_loads: bool,
    /// Integer/FP instructions issued per cycle (`cpu.issue_width`, `cpu::wide`) and the
    /// slots left in the current cycle.
    pub issue_width: u64,
    pub issue_slots: u64,
    /// Data token of each slot of the last private level (one word per line: the value of synchronization variables
    /// and of the protocol tester's lines).
    pub values: Vec<u64>,
    pub timing: Timing,
    pub cnt: Counters,
    pub phase: u16,
    /// Every write of the PhaseID register by the program (`Ctx::phase`): (time, value), the
    /// ground truth of the time spent in each phase (seed 000 4.3; Table 4.10 items 9 and
    /// 21-23). The register holds 0 before the first write.
    pub phase_log: Vec<(Tick, u16)>,
    pub procedure: u32,
    pub stack: Vec<u32>,
    /// The machine state register of the thread holding the core (`msr::MSR_PR`,
    /// `msr::MSR_PM`), swapped with its state.
    pub msr: u32,
    /// The process of the thread holding the core (0 without an operating-system model).
    pub process: u16,
    /// Byte offset of the next instruction inside the current procedure's code.
    pub pc: u64,
    pub code_base: Addr,
    pub code_bytes: u64,
    /// Bytes the synthetic fetch advances per instruction: 4 (the R4400's fixed-size
    /// instructions), or 0 when the thread's instruction fetches come from a trace's code
    /// records (`Ctx::code_from_trace`), so that no synthetic fetch is made.
    pub fetch_step: u64,
    /// The start of the code block the thread executes, when its fetches come from a trace
    /// (`Ctx::fetch_code`): what its misses take as their procedure (`code_blocks`).
    pub code_at: Addr,
    /// The last code block whose procedure a miss looked up, with that procedure
    /// (`agent::attribute_l1_miss`): a block's procedure never changes, and the misses of a
    /// replay mostly come in runs from one block (issue 19, BENCHMARKS.md).
    pub code_proc: (Addr, u32),
    pub pend: Option<Pending>,
    /// Further outstanding transactions of a core with several MSHRs (`[cpu.nonblocking]
    /// mshrs` > 1, `cpu::nonblocking`): `pend` is the newest, these the older ones, matched
    /// by line. Empty whenever `pend` is `None`, and always with one MSHR.
    pub others: Vec<Pending>,
    /// Misses outstanding at once (`[cpu.nonblocking] mshrs`; 1 without it).
    pub mshrs: usize,
    /// `[cpu.nonblocking] active_list` and `address_queue` (0: no limit): how far the thread
    /// may run past its oldest outstanding miss before a further miss waits for it.
    pub window: (u64, u64),
    /// L2 misses issued while another of this core's was outstanding (0 with one MSHR).
    pub under_misses: u64,
    /// Write-back buffer: dirty lines evicted and not yet acknowledged by their home.
    pub wb: Vec<(u64, u64)>,
    pub block: Block,
    /// Result of the last blocking access.
    pub result: u64,
    /// Pending interrupts, each for one hardware context of the core.
    pub irq: VecDeque<Irq>,
    pub in_handler: bool,
    /// An intervention that arrived while this processor's own request for the line was
    /// still outstanding (the home granted ownership, then forwarded a later request before
    /// the grant arrived): handled right after the fill performs.
    /// One per outstanding transaction at most; handled at that transaction's fill.
    pub deferred: Vec<(u64, bool)>,
    /// When this core's queued bus-error timer event fires (0: none queued).
    pub bus_timer: Tick,
    /// Every store is posted beyond the core (`Ctx::post_write`): to the memory controller
    /// (`caches.l1d_write_through`, `elan`) or to the line's slice (`store_through`).
    pub write_through: bool,
    /// Some probe wants `Observation::Retire` (set with the machine's interests).
    pub watch_retire: bool,
    /// `State::armed_any`, mirrored on every core when it changes (`State::note_armed`): a
    /// counter of the retire sink may be armed, so a block of several instructions is
    /// retired in parts split where an armed counter can cross (`Ctx::retire_armed`). The one
    /// flag those blocks test.
    pub armed: bool,
    /// `issue_width != 1 || armed`: integer and FP instructions (`Ctx::int`, `fp`,
    /// `compute`, a trace record's instructions before its reference) take their
    /// out-of-line path. One test where the width alone was tested (`Core::retire_alu`), so
    /// that the split costs a run with nothing armed nothing (task irq19; `op` and `ops` test
    /// `armed` once per block).
    pub alu_cold: bool,
    /// What was retired when retirements were last reported (`State::flush_retired`), and
    /// the core's time then.
    pub retired_mark: RetireMark,
    /// Which parts of `cnt` behind `Counters::ops` moved since `retired_mark` (see
    /// `Counters::ops_since`): one OR where they are counted.
    pub retire_dirty: u64,
    /// The L1 D is write-through to the `cmp` system's slices (`caches.l1d.write =
    /// "write-through"`, Blue Gene/Q): a plain store that finds its line in the L1 D (in any
    /// valid state) updates it, one that does not allocates nothing, and neither needs
    /// ownership or a transaction; the slice takes the store and invalidates the other
    /// copies. Value stores and atomics still take the line exclusively (they are the
    /// synchronization the protocol orders), and an owned line is still written back.
    pub store_through: bool,
    /// The machine has an operating system (`[os]`): threads run its paths when they resume.
    pub os: bool,
    /// The core's next timer interrupt (`Tick::MAX` without an operating system).
    pub next_timer: Tick,
    /// Atomics are load-and-reserve / store-conditional loops (`cpu.atomics = "larx-stcx"`,
    /// `cpu::reserve`); false keeps the one-step atomics.
    pub larx_stcx: bool,
}

/// Base of the synthetic code addresses: procedure k's code is at CODE_BASE + k * code_bytes.
/// It lies far above the kernels' heap and below 2^40 (NUMAchine's address width), away from
/// where traced programs live (images near 4 MiB, valgrind/QEMU mappings near 2^36 and 2^38,
/// native stacks near 2^47), at 960 KiB modulo 1 MiB so that it does not alias the first heap
/// lines in a direct-mapped 1 MiB L2.
pub const CODE_BASE: Addr = 0xD0_000F_0000;

/// The placeholder of an absent private L2 (one line; never used).
const PLACEHOLDER_L2: crate::config::CacheCfg = crate::config::CacheCfg {
    size_bytes: 64,
    assoc: 1,
    line_bytes: 64,
    replacement: crate::config::Replacement::Lru,
    hit_cycles: 0,
    write: crate::config::WritePolicy::WriteBack,
    prefetch: crate::config::PrefetchKind::None,
};

impl Core {
    pub fn new(id: usize, node: usize, p: &Preset, period: Tick, inbound_ticks: Tick) -> Core {
        let c = &p.caches;
        let private_l2 = c.l2.is_some();
        let l2 = Cache::new(c.l2.as_ref().unwrap_or(&PLACEHOLDER_L2));
        let l1d = Cache::new(&c.l1d);
        let lpl = if private_l2 { &l2 } else { &l1d };
        let slots = lpl.sets() * lpl.ways();
        let mshrs = p
            .cpu
            .nonblocking
            .as_ref()
            .map_or(1, |n| n.mshrs.max(1) as usize);
        let op_extra = op::extra_cycles(&p.cpu.op_extra_cycles);
        Core {
            id: id as u16,
            node: node as u16,
            thread: id as u32,
            context: 0,
            multi: false,
            spin_seen: 0,
            now: 0,
            period,
            run_until: 0,
            send_horizon: 0,
            scan: scan::Scan::default(),
            l1i: Cache::new(&c.l1i),
            l1d,
            l2,
            private_l2,
            tlb: tlb::Tlb::new(&p.cpu.tlb, p.memory.page_bytes),
            bp: p
                .cpu
                .branch_predictor
                .as_ref()
                .map(|b| Box::new(predictor::Bimodal::new(b))),
            nonblocking: p.cpu.nonblocking.is_some(),
            under_miss: false,
            nonblocking_stores: p.cpu.nonblocking.as_ref().is_some_and(|n| n.stores),
            nonblocking_loads: p.cpu.nonblocking.as_ref().is_some_and(|n| n.loads),
            issue_width: p.cpu.issue_width as u64,
            issue_slots: 0,
            values: vec![0; slots],
            watch_retire: false,
            armed: false,
            alu_cold: p.cpu.issue_width != 1,
            retired_mark: Counters::default().retire_mark(0),
            retire_dirty: 0,
            write_through: c.l1d_write_through
                || c.l1d.write == crate::config::WritePolicy::WriteThrough,
            store_through: c.l1d.write == crate::config::WritePolicy::WriteThrough,
            timing: Timing {
                fp_slip: p.cpu.fp_slip_cycles as u64,
                load_slip: p.cpu.load_slip_cycles as u64,
                branch_killed: p.cpu.branch_taken_killed_cycles as u64,
                exception: p.cpu.exception_cycles as u64,
                uncached: p.cpu.uncached_cycles as u64,
                l1_hit: c.l1d.hit_cycles as u64,
                l2_hit: c.l2.as_ref().map_or(0, |l2| l2.hit_cycles as u64),
                spin_iter: p.cpu.spin_iteration_cycles as u64,
                restart: p.cpu.restart_signal as u64,
                inbound_ticks,
                op_extra,
                op_cost: op::costs(
                    p.cpu.fp_slip_cycles as u64,
                    p.cpu.load_slip_cycles as u64,
                    p.cpu.branch_taken_killed_cycles as u64,
                    p.cpu.issue_width != 1,
                    &op_extra,
                ),
            },
            cnt: Counters {
                restart_per_taken: (p.cpu.restart_signal && p.cpu.branch_taken_killed_cycles > 0)
                    as u64,
                ..Counters::default()
            },
            phase: 0,
            phase_log: Vec::new(),
            procedure: 0,
            stack: Vec::new(),
            msr: msr::MSR_USER,
            process: 0,
            pc: 0,
            code_base: CODE_BASE,
            code_bytes: p.cpu.code_bytes_per_procedure,
            fetch_step: 4,
            code_at: 0,
            code_proc: (Addr::MAX, 0),
            pend: None,
            others: Vec::with_capacity(mshrs - 1),
            mshrs,
            window: p
                .cpu
                .nonblocking
                .as_ref()
                .map_or((0, 0), |n| (n.active_list as u64, n.address_queue as u64)),
            under_misses: 0,
            wb: Vec::new(),
            block: Block::None,
            result: 0,
            irq: VecDeque::new(),
            in_handler: false,
            deferred: Vec::with_capacity(mshrs),
            bus_timer: 0,
            os: false,
            next_timer: Tick::MAX,
            larx_stcx: p.cpu.atomics == crate::config::Atomics::LarxStcx,
        }
    }

    /// The last private level: the array the external agent keeps coherent (the private L2,
    /// or the L1 D when there is none).
    #[inline(always)]
    pub fn lpl(&self) -> &Cache {
        if self.private_l2 {
            &self.l2
        } else {
            &self.l1d
        }
    }
    #[inline(always)]
    pub fn lpl_mut(&mut self) -> &mut Cache {
        if self.private_l2 {
            &mut self.l2
        } else {
            &mut self.l1d
        }
    }

    /// Charges `cycles` cycles of pipeline state `ps`.
    #[inline(always)]
    pub fn charge(&mut self, ps: Ps, cycles: u64) {
        self.cnt.ps[ps as usize] += cycles;
        self.now += cycles * self.period;
    }

    /// Charges `cycles` cycles killed (`ps`: by exception or by misprediction) over `flushes`
    /// pipeline flushes that each killed the same share of them: when any cycle was killed,
    /// each flush ends in a restart (`Counters::restarts`, with the restart signal). A taken
    /// branch's `branch_taken_killed_cycles` are a plain `charge`: its restart is worked out
    /// from the taken-branch count (`Counters::restart_per_taken`).
    #[inline(always)]
    pub fn kill(&mut self, ps: Ps, cycles: u64, flushes: u64) {
        self.charge(ps, cycles);
        self.cnt.restarts_counted += self.timing.restart * flushes * (cycles > 0) as u64;
    }

    /// Retires one instruction of class `c` (one running cycle plus its slips).
    #[inline(always)]
    pub fn retire(&mut self, c: Class) {
        self.cnt.instr[c as usize] += 1;
        self.cnt.ps[c.ps() as usize] += 1;
        self.now += self.period;
    }

    /// Retires `n` instructions of class `c`.
    #[inline(always)]
    pub fn retire_n(&mut self, c: Class, n: u64) {
        self.cnt.instr[c as usize] += n;
        self.cnt.ps[c.ps() as usize] += n;
        self.now += n * self.period;
    }

    /// Charges a spin-wait (`Ctx::spin_until`) that lasted from `from` (its start, or the
    /// time the core became free to spin) to `t` as spin iterations: a load and a taken
    /// branch each, the rest of each iteration's cycles killed by the branch; the core's
    /// time moves to `t`. The wait ends when the line changes, or earlier when an armed
    /// counter needs the iterations counted (`spin_check`). Restarts: one per iteration
    /// whose branch killed cycles, and one for the unfinished iteration's killed cycles.
    pub fn charge_spin(&mut self, from: Tick, t: Tick) {
        let cycles = (t.max(from) - from).div_ceil(self.period);
        let iters = cycles / self.timing.spin_iter.max(1);
        self.retire_n(Class::Load, iters);
        self.retire_n(Class::BranchTaken, iters);
        let killed = cycles.saturating_sub(2 * iters);
        let per_iter = self.timing.spin_iter.saturating_sub(2);
        self.charge(Ps::KilledBranch, killed);
        self.cnt.taken_unflushed += iters;
        self.cnt.restarts_counted += self.timing.restart
            * (iters * (per_iter > 0) as u64 + (killed > iters * per_iter) as u64);
        if self.now < t {
            self.now = t;
        }
    }

    /// Charges the stall between `from` and `self.now`-to-be `to` to `ps` (ticks to cycles).
    pub fn stall_until(&mut self, ps: Ps, to: Tick) {
        if to > self.now {
            let cycles = (to - self.now).div_ceil(self.period);
            self.charge(ps, cycles);
        }
    }

    /// The thread holding the core, as observations name it.
    #[inline(always)]
    pub fn origin(&self) -> Origin {
        Origin {
            thread: self.thread,
            core: self.id,
            phase: self.phase,
            context: self.context,
            process: self.process,
            supervisor: self.msr & msr::MSR_PR == 0,
            marked: self.msr & msr::MSR_PM != 0,
        }
    }

    /// Something was retired since the last `Retire` report (`State::flush_retired`): the
    /// class counts differ from the mark's (branch-free; comparing the arrays called
    /// `memcmp`).
    #[inline(always)]
    pub fn retired_any(&self) -> bool {
        let (a, b) = (&self.cnt.instr, &self.retired_mark.instr);
        (a[0] ^ b[0])
            | (a[1] ^ b[1])
            | (a[2] ^ b[2])
            | (a[3] ^ b[3])
            | (a[4] ^ b[4])
            | (a[5] ^ b[5])
            != 0
    }

    /// An interrupt waits for the thread holding the core.
    #[inline]
    pub fn irq_waiting(&self) -> bool {
        !self.irq.is_empty() && self.irq.iter().any(|i| i.context == self.context)
    }

    /// Address of the current instruction.
    #[inline]
    pub fn pc_addr(&self) -> Addr {
        self.code_base + self.procedure as u64 * self.code_bytes + self.pc
    }
}
