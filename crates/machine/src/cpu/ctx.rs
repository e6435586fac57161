//! The thread API: what a simulated thread (ordinary Rust code) can do on its processor.
//!
//! A thread runs as a stackful coroutine. Loads, stores and instructions that hit in the
//! caches are simulated right here, inline, advancing the processor's local time; the thread
//! leaves its coroutine only when it must wait for the rest of the machine (an L2 miss, an
//! uncached access, a spin-wait) or when its local time reaches the bound up to which running
//! ahead of the event queue is exact (see ARCHITECTURE.md, "Time and interleaving").
//!
//! Data values: kernels keep their real data in host memory and tell the machine only which
//! simulated addresses they touch. The machine keeps one data word per cache line (its
//! "token"), which is the value of synchronization variables (each on its own line) and of the
//! protocol tester's lines; `load_value`/`store_value`/the atomics use it.

use super::op::Op as Instr;
use super::{pipeline::Ps, Block, Class, Core, Op, Rmw};
use crate::addr::{Addr, Place};
use crate::cache::{MODIFIED, SHARED};
use crate::event::Yield;
use crate::probe::{Cmd, CoreEvent};
use crate::state::State;
use corosensei::Yielder;

#[path = "larx.rs"]
mod larx;

#[path = "hits.rs"]
mod hits;
use hits::Peek;
pub use hits::{Traced, TracedRef};

/// A lock: one synchronization word on its own line.
#[derive(Clone, Copy, Debug)]
pub struct Lock(pub Addr);

/// A barrier for `n` threads: an arrival counter and a release flag, each on its own line.
#[derive(Clone, Copy, Debug)]
pub struct Barrier {
    pub count: Addr,
    pub flag: Addr,
    pub n: u64,
}

/// A procedure registered with `Setup::procedure` (for per-procedure statistics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Procedure(pub u32);

/// Instruction mix for `compute`.
#[derive(Clone, Copy, Debug, Default)]
pub struct Mix {
    pub int: u64,
    pub fp: u64,
    pub branch_taken: u64,
    pub branch_not_taken: u64,
}

/// Handler for monitor interrupts, installed by the workload.
pub type InterruptHandler = Box<dyn FnMut(&mut Ctx, u32)>;

/// Where an informing memory operation was served (the cache-outcome condition code of
/// Horowitz, Martonosi, Mowry and Smith, "Informing Memory Operations", ISCA 1996: seed
/// 000's Table 4.10 item 8, which the R4400 could not provide).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Served {
    /// Hit in the primary data cache.
    L1,
    /// Missed the L1, hit in the secondary cache.
    L2,
    /// Needed an external transaction (a read, read-exclusive or upgrade).
    Memory,
}

/// What the informing-miss trap tells its handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MissInfo {
    pub addr: Addr,
    pub write: bool,
    pub served: Served,
    /// Processor cycles from the miss to the data (the stall the reference caused).
    pub cycles: u64,
}

/// Handler of the informing-miss trap, installed by the workload (`Ctx::on_miss`).
pub type MissHandler = Box<dyn FnMut(&mut Ctx, MissInfo)>;

/// The kind of a data reference of a replayed trace (see [`Ctx::traced`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RefKind {
    Load,
    Store,
    /// A read-modify-write of one address: a load and a store, one instruction.
    Modify,
}

/// The processor context handed to a simulated thread.
pub struct Ctx {
    pub(crate) st: *mut State,
    pub(crate) core: *mut Core,
    pub(crate) yielder: *const Yielder<(), Yield>,
    /// The processor (core) the thread runs on.
    pub(crate) id: usize,
    /// The software thread, numbered within its process (`0..n`).
    pub(crate) tid: usize,
    /// The software thread's machine-wide id (`Machine::spawn`'s; equal to `tid` without
    /// processes).
    pub(crate) gtid: usize,
    /// Software threads in the run (in its process, with processes).
    pub(crate) n: usize,
    pub(crate) handler: Option<InterruptHandler>,
    /// The informing-miss trap's handler (the paper's MHAR), taken out while it runs.
    pub(crate) miss_handler: Option<MissHandler>,
    /// The records a traced thread is taking (`hits::run_loop`), for the scan of its
    /// horizon at a yield ("The thread's horizon"); `None` elsewhere.
    pub(crate) peek: Option<Peek>,
}

impl Ctx {
    #[inline(always)]
    pub(crate) fn core(&mut self) -> &mut Core {
        // SAFETY: the core lives in the machine's `State`, which outlives every thread; the
        // event loop touches a core only while its thread is suspended, and no reference
        // obtained here is held across a suspension.
        unsafe { &mut *self.core }
    }
    #[inline(always)]
    pub(crate) fn state(&mut self) -> &mut State {
        // SAFETY: as for `core`: the state is only used by one side at a time.
        unsafe { &mut *self.st }
    }

    /// This software thread's index, in `0..nthreads()`. Equal to `proc()` only when there
    /// is one thread per processor; index per-thread data by this, per-processor data by
    /// `proc()`.
    pub fn tid(&self) -> usize {
        self.tid
    }
    /// The processor (core) this thread runs on (see `sched` for the placement).
    pub fn proc(&self) -> usize {
        self.id
    }
    /// The hardware thread (context 0.. of its core) this thread runs on: what a per-thread
    /// counter's thread mask selects (BGPM's counter affinity, `monitor::upc::bgpm`).
    pub fn hw_context(&mut self) -> usize {
        self.core().context as usize
    }
    /// Number of software threads in the run (in this thread's process, when the machine
    /// runs several processes).
    pub fn nthreads(&self) -> usize {
        self.n
    }
    /// The memory node of this thread's processor.
    pub fn node(&mut self) -> usize {
        self.core().node as usize
    }
    /// This processor's exact event counts so far (a profiler reads them around a reference
    /// to attribute its misses, as Cachegrind does per instruction).
    pub fn counters(&mut self) -> &super::Counters {
        &self.core().cnt
    }
    /// This processor's misses so far in the machine's last cache level, what Cachegrind
    /// calls LL (a profiler reads them around a reference, as [`Ctx::counters`]): with a
    /// private L2, its misses (`Counters::l2_misses`); without one, on a machine with a shared
    /// level (`[[caches.shared]]`), that level's misses of this processor's requests
    /// (`MemorySystem::shared_misses`: reads, read-exclusives and upgrades the level did not
    /// hold); with neither, the L1 is the last level and these are its misses that went to
    /// memory (`Counters::l2_misses` again, which counts the last private level's misses).
    pub fn last_level_misses(&mut self) -> u64 {
        let id = self.id;
        if !self.core().private_l2 {
            if let Some(m) = self.state().system.shared_misses(id) {
                return m;
            }
        }
        self.core().cnt.l2_misses
    }
    /// Local time in processor cycles.
    pub fn cycles(&mut self) -> u64 {
        let c = self.core();
        c.now / c.period
    }

    // ---------------------------------------------------------------- memory references

    /// An 8-byte (or smaller) load that does not cross a line.
    #[inline(always)]
    pub fn load(&mut self, a: Addr) {
        self.plain(a, false);
    }
    /// An 8-byte (or smaller) store that does not cross a line.
    #[inline(always)]
    pub fn store(&mut self, a: Addr) {
        self.plain(a, true);
    }

    /// A load of `size` bytes; an access that spans two L1 lines touches both (one instruction).
    #[inline]
    pub fn load_n(&mut self, a: Addr, size: u32) {
        self.sized(a, size, false)
    }
    /// A store of `size` bytes; an access that spans two L1 lines touches both.
    #[inline]
    pub fn store_n(&mut self, a: Addr, size: u32) {
        self.sized(a, size, true)
    }

    /// A read-modify-write instruction (x86 `add [mem], r`, lackey's `M`): one instruction, a
    /// load and a store of `size` bytes at `a` (two references; the line is fetched for
    /// writing once).
    #[inline]
    pub fn modify_n(&mut self, a: Addr, size: u32) {
        self.core().cnt.refs += 1;
        self.sized(a, size, true)
    }

    /// One data reference of a replayed trace: `before` integer instructions (none when 0),
    /// then a load, store or modify of `size` bytes at `a`. Exactly `int(before)` (if
    /// `before > 0`) followed by `load_n`, `store_n` or `modify_n`, as one inlined call for
    /// replay loops that issue millions of them.
    #[inline(always)]
    pub fn traced(&mut self, kind: RefKind, a: Addr, size: u32, before: u64) {
        if before > 0 {
            self.int(before);
        }
        match kind {
            RefKind::Load => self.sized(a, size, false),
            RefKind::Store => self.sized(a, size, true),
            RefKind::Modify => {
                self.core().cnt.refs += 1;
                self.sized(a, size, true)
            }
        }
    }

    /// Lines of the access `[a, a + size)` (one, or two when it spans a line boundary) that
    /// the L1 D cache does not hold in any state: what a cache without coherence (Cachegrind)
    /// counts as misses. Reads the tags only: no replacement state changes.
    pub fn l1d_absent_lines(&mut self, a: Addr, size: u32) -> u64 {
        let c = self.core();
        let shift = c.l1d.line_shift;
        let (first, last) = (a >> shift, (a + size.max(1) as u64 - 1) >> shift);
        let absent = |l: u64| (c.l1d.state_of(l) == crate::cache::INVALID) as u64;
        absent(first) + if last != first { absent(last) } else { 0 }
    }

    /// [`Ctx::traced`] for a thread whose instruction fetch comes from the trace's code
    /// records ([`Ctx::code_from_trace`] was called): the access word's bits say `write` (a
    /// store or a modify) and `modify`. The same counts and timing as `traced`; it leaves out
    /// the synthetic sequential fetch's per-instruction step, which after `code_from_trace`
    /// never probes (fetch step 0, offset 1: see there) but cost a fused replay of python3
    /// about 12 instructions per reference.
    #[inline(always)]
    pub fn traced_code(&mut self, write: bool, modify: bool, a: Addr, size: u32, before: u64) {
        debug_assert!(self.core().fetch_step == 0 && self.core().pc == 1);
        if before > 0 {
            self.retire_int(before);
            self.check();
        }
        self.core().cnt.refs += u64::from(modify);
        self.sized_fetch::<false>(a, size, write);
    }

    #[inline(always)]
    fn sized(&mut self, a: Addr, size: u32, write: bool) {
        self.sized_fetch::<true>(a, size, write)
    }

    /// `sized`; `FETCH`: with the synthetic instruction fetch (false only for
    /// [`Ctx::traced_code`]).
    #[inline(always)]
    fn sized_fetch<const FETCH: bool>(&mut self, a: Addr, size: u32, write: bool) {
        let shift = self.core().l1d.line_shift;
        let last = a + size.max(1) as u64 - 1;
        self.plain_sized::<FETCH>(a, write, Some(size));
        if last >> shift != a >> shift {
            self.second_line(last, write);
        }
    }

    /// The second line of an access that spans two: no extra instruction (but its own
    /// translation when it lies on the next page).
    #[cold]
    #[inline(never)]
    fn second_line(&mut self, last: Addr, write: bool) {
        self.translate_data(last);
        let c = self.core();
        c.cnt.refs += 1;
        let line = last >> c.l1d.line_shift;
        let need = if write { MODIFIED } else { SHARED };
        if c.l1d.hit(line, need) {
            c.cnt.l1d_hits += 1;
        } else if write {
            self.store_miss(last);
        } else {
            self.load_miss(last);
        }
        self.check();
    }

    #[inline(always)]
    fn plain(&mut self, a: Addr, write: bool) {
        self.plain_sized::<true>(a, write, None)
    }

    /// `plain`, counting the access by its size (`Some`: `load_n`, `store_n`) in the same
    /// step as the retirement, before a miss can return to the event loop: a `Retire` report
    /// made there (`State::flush_retired`) must see the class count and the size count
    /// together, or the class's default op (`Load8`, `Store8`) would count the access first
    /// and give it back later. `None` (the plain 8-byte access) compiles to `plain` as before.
    #[inline(always)]
    fn plain_sized<const FETCH: bool>(&mut self, a: Addr, write: bool, size: Option<u32>) {
        self.translate_data(a);
        let c = self.core();
        c.retire(if write { Class::Store } else { Class::Load });
        if let Some(size) = size {
            // Counted by size, branch-free; `Counters::ops` turns sizes into `Load*`/`Store*`.
            c.cnt.by_size[write as usize][(size & 63) as usize] += 1;
        }
        if !write && c.timing.load_slip > 0 {
            let s = c.timing.load_slip;
            c.charge(Ps::IntegerSlip, s);
        }
        c.cnt.refs += 1;
        if FETCH {
            self.fetch_one();
        }
        let c = self.core();
        let line = a >> c.l1d.line_shift;
        let need = if write { MODIFIED } else { SHARED };
        if c.l1d.hit(line, need) {
            c.cnt.l1d_hits += 1;
        } else if write {
            self.store_miss(a);
        } else {
            self.load_miss(a);
        }
        if write && self.core().write_through {
            self.post_write(a, false);
        }
        self.check();
    }

    /// A write-through store (`caches.l1d_write_through`): the aligned 4-byte word at `a`
    /// (`whole_token`: the line's 8-byte value, for value stores) goes to the memory
    /// controller, posted with zero wait unless its buffer is full; a full buffer stalls the
    /// processor until the write is accepted (charged as other stall).
    #[cold]
    #[inline(never)]
    fn post_write(&mut self, a: Addr, whole_token: bool) {
        let id = self.id;
        let c = self.core();
        let lpl = c.lpl();
        let token = lpl.find(a >> lpl.line_shift).map_or(0, |s| c.values[s]);
        let t = c.now;
        if c.larx_stcx {
            // The core's other hardware threads share this L1 D: no invalidation reaches
            // their reservations (`cpu::reserve`).
            let line = a >> lpl.line_shift;
            let hw = self.hw_thread();
            self.state().resv.on_core(id, line, Some(hw));
        }
        let accepted = self.state().write_through(id, t, a, token, whole_token);
        if accepted > t {
            let c = self.core();
            let cycles = (accepted - t).div_ceil(c.period);
            c.charge(Ps::OtherStall, cycles);
        }
    }

    /// Loads the data word (token) of the line holding `a`.
    pub fn load_value(&mut self, a: Addr) -> u64 {
        self.value_op(a, Op::Load)
    }
    /// Stores `v` as the data word of the line holding `a`.
    pub fn store_value(&mut self, a: Addr, v: u64) {
        self.value_op(a, Op::Store(Some(v)));
    }
    /// Atomic swap; returns the old value.
    pub fn swap(&mut self, a: Addr, v: u64) -> u64 {
        self.value_op(a, Op::Rmw(Rmw::Swap, v, 0))
    }
    /// Atomic fetch-and-add; returns the old value.
    pub fn fetch_add(&mut self, a: Addr, v: u64) -> u64 {
        self.value_op(a, Op::Rmw(Rmw::FetchAdd, v, 0))
    }
    /// Atomic compare-and-swap; returns the old value (the swap happened if it equals `old`).
    pub fn compare_swap(&mut self, a: Addr, old: u64, new: u64) -> u64 {
        self.value_op(a, Op::Rmw(Rmw::CompareSwap, old, new))
    }

    fn value_op(&mut self, a: Addr, op: Op) -> u64 {
        // The program reads or orders values here: outstanding loads complete first.
        self.use_loads();
        if let Op::Rmw(f, x, y) = op {
            if self.core().larx_stcx {
                return self.larx_stcx_rmw(a, f, x, y);
            }
        }
        self.translate_data(a);
        let write = !matches!(op, Op::Load);
        let c = self.core();
        c.retire(if write { Class::Store } else { Class::Load });
        c.cnt.refs += 1;
        self.fetch_one();
        let c = self.core();
        let line = a >> c.l1d.line_shift;
        let need = if write { MODIFIED } else { SHARED };
        let v = if c.l1d.hit(line, need) {
            c.cnt.l1d_hits += 1;
            let lpl = c.lpl();
            let slot = lpl
                .find(a >> lpl.line_shift)
                .expect("inclusion: L1 line in the last private level");
            let t = c.now;
            let id = self.id;
            super::agent::perform(self.state(), id, slot, op, a, t)
        } else {
            self.l1d_miss(a, op)
        };
        if write && self.core().write_through {
            self.post_write(a, true);
        }
        if let Op::Rmw(f, x, _) = op {
            // An atomic is a lwarx/stwcx. pair on the A2 (issue 14's core events).
            let c = self.core();
            let (t, who) = (c.now, c.origin());
            let st = self.state();
            st.core_event(t, who, CoreEvent::LarxFinished, 1);
            st.core_event(t, who, CoreEvent::Stcx, 1);
            if f == Rmw::CompareSwap && v != x {
                st.core_event(t, who, CoreEvent::StcxFail, 1);
            }
        }
        self.check();
        v
    }

    // ---------------------------------------------------------------- instructions

    /// Retires `n` integer instructions.
    #[inline(always)]
    pub fn int(&mut self, n: u64) {
        self.retire_int(n);
        self.fetch(n);
        self.check();
    }

    /// `n` integer instructions' retirement (no fetch, no check): `Core::retire_alu`, whose
    /// wide-core test is `Core::alu_cold` here, which also sends them to the split where an
    /// armed counter can cross while one may be (`retire_armed`).
    #[inline(always)]
    fn retire_int(&mut self, n: u64) {
        let c = self.core();
        if c.alu_cold {
            self.retire_int_cold(n);
        } else {
            c.retire_n(Class::Integer, n);
        }
    }

    #[cold]
    #[inline(never)]
    fn retire_int_cold(&mut self, n: u64) {
        if self.core().armed {
            self.retire_armed(1, |_| n, |x, _, k| x.core().retire_alu(Class::Integer, k));
        } else {
            self.core().retire_alu(Class::Integer, n);
        }
    }

    /// Retires `n` floating-point instructions (each with its slips).
    #[inline(always)]
    pub fn fp(&mut self, n: u64) {
        let c = self.core();
        if c.alu_cold {
            self.fp_cold(n);
        } else {
            c.retire_n(Class::Fp, n);
            let s = c.timing.fp_slip * n;
            if s > 0 {
                c.charge(Ps::FpSlip, s);
            }
        }
        self.fetch(n);
        self.check();
    }

    /// [`Ctx::fp`]'s retirement on a wide core or while a counter may be armed.
    #[cold]
    #[inline(never)]
    fn fp_cold(&mut self, n: u64) {
        let part = |x: &mut Ctx, _: usize, k: u64| {
            let c = x.core();
            c.retire_alu(Class::Fp, k);
            let s = c.timing.fp_slip * k;
            if s > 0 {
                c.charge(Ps::FpSlip, s);
            }
        };
        if self.core().armed {
            self.retire_armed(1, |_| n, part);
        } else {
            part(self, 0, n);
        }
    }
    /// Retires one branch. Without a branch predictor (the R4400) a taken branch kills
    /// `branch_taken_killed_cycles`; with one (`[cpu.branch_predictor]`), the predictor
    /// indexed by this call site decides: a mispredicted branch kills `mispredict_cycles`, a
    /// predicted one nothing.
    #[inline(always)]
    #[track_caller]
    pub fn branch(&mut self, taken: bool) {
        let c = self.core();
        if c.bp.is_some() {
            return self.branch_predicted(std::panic::Location::caller(), taken);
        }
        if taken {
            // Its restart is counted from the taken branches (`Counters::restarts`).
            c.retire(Class::BranchTaken);
            let k = c.timing.branch_killed;
            c.charge(Ps::KilledBranch, k);
        } else {
            c.retire(Class::BranchNotTaken);
        }
        self.fetch(1);
        self.check();
    }
    /// `branch` on a core with a branch predictor.
    #[cold]
    #[inline(never)]
    fn branch_predicted(&mut self, site: &'static std::panic::Location<'static>, taken: bool) {
        let c = self.core();
        c.retire(if taken {
            Class::BranchTaken
        } else {
            Class::BranchNotTaken
        });
        // A predicted taken branch kills nothing; a misprediction's restart is counted here.
        c.cnt.taken_unflushed += taken as u64;
        let bp = c.bp.as_mut().expect("a predictor");
        if bp.resolve_at(site, taken) {
            let k = bp.penalty;
            c.cnt.branch_mispredicts += 1;
            let (t, who) = (c.now, c.origin());
            c.kill(Ps::KilledBranch, k, 1);
            // Issue 14's A2 event (`PEVT_XU_BR_MISPRED_COMMIT`), per hardware thread.
            self.state().core_event(t, who, CoreEvent::BrMispredict, 1);
        }
        self.fetch(1);
        self.check();
    }

    /// Retires a mix of instructions.
    pub fn compute(&mut self, m: Mix) {
        let c = self.core();
        if c.alu_cold {
            self.compute_cold(m);
        } else {
            c.retire_n(Class::Integer, m.int);
            c.retire_n(Class::Fp, m.fp);
            c.retire_n(Class::BranchTaken, m.branch_taken);
            c.retire_n(Class::BranchNotTaken, m.branch_not_taken);
        }
        let c = self.core();
        let s = c.timing.fp_slip * m.fp;
        let k = c.timing.branch_killed * m.branch_taken;
        c.charge(Ps::FpSlip, s);
        c.charge(Ps::KilledBranch, k);
        self.fetch(m.int + m.fp + m.branch_taken + m.branch_not_taken);
        self.check();
    }

    /// [`Ctx::compute`]'s retirement on a wide core or while a counter may be armed.
    #[cold]
    #[inline(never)]
    fn compute_cold(&mut self, m: Mix) {
        let lens = [m.int, m.fp, m.branch_taken, m.branch_not_taken];
        let part = |x: &mut Ctx, i: usize, k: u64| {
            let c = x.core();
            match i {
                0 => c.retire_alu(Class::Integer, k),
                1 => c.retire_alu(Class::Fp, k),
                2 => c.retire_n(Class::BranchTaken, k),
                _ => c.retire_n(Class::BranchNotTaken, k),
            }
        };
        if self.core().armed {
            self.retire_armed(4, |i| lens[i], part);
        } else {
            for (i, &n) in lens.iter().enumerate() {
                part(self, i, n);
            }
        }
    }

    /// Retires `n` instructions of fine class `op` (`cpu::op`) with the timing of its
    /// pipeline class (an FP op's slips, a taken branch's killed cycles, a load's slips; no
    /// memory access: `load_n`/`store_n` retire `Load*`/`Store*` by size with their access)
    /// plus the preset's extra cycles for `op` (`[cpu.op_extra_cycles]`). Counted exactly by
    /// fine class (`Counters::ops`).
    pub fn op(&mut self, op: Instr, n: u64) {
        if n == 0 {
            return;
        }
        if self.core().armed {
            self.retire_armed(1, |_| n, |x, _, k| x.retire_op(op, k));
        } else {
            self.retire_op(op, n);
        }
        self.fetch(n);
        self.check();
    }

    /// Retires several fine classes as one straight-line block: each `(op, n)` as
    /// [`Ctx::op`] would, with one instruction fetch and one run-ahead check for the whole
    /// block. So `ops(&[(Op::IntCompare, 1), (Op::IntAdd, 2)])` has exactly the timing of
    /// `int(3)` (and of `op` on each part only when no fetch line boundary falls inside): a
    /// kernel declares the fine classes of a block it used to retire with one `int`/`fp`
    /// call without moving its instruction fetches or yields.
    pub fn ops(&mut self, ops: &[(Instr, u64)]) {
        if self.core().armed {
            return self.ops_armed(ops);
        }
        let mut total = 0;
        for &(op, n) in ops {
            if n > 0 {
                self.retire_op(op, n);
                total += n;
            }
        }
        if total == 0 {
            return;
        }
        self.fetch(total);
        self.check();
    }

    /// [`Ctx::ops`] while a counter may be armed (`Core::armed`): the block in parts split
    /// where an armed counter can cross (`retire_armed`), then its one fetch and check.
    #[cold]
    #[inline(never)]
    fn ops_armed(&mut self, ops: &[(Instr, u64)]) {
        let total: u64 = ops.iter().map(|&(_, n)| n).sum();
        if total == 0 {
            return;
        }
        self.retire_armed(ops.len(), |i| ops[i].1, |x, i, k| x.retire_op(ops[i].0, k));
        self.fetch(total);
        self.check();
    }

    /// Retires a block of instructions (one fetch and one run-ahead check, the caller's)
    /// while a counter of the retire sink may be armed (`Core::armed`, task irq19): part `i`
    /// has `len(i)` instructions and `part(self, i, k)` retires `k` of them, as the caller
    /// would retire the whole part (every caller's part is linear in `k`: counts, cycles and
    /// slips of `k` then `n - k` are those of `n`). Where an armed counter's remaining need
    /// (`armed_room`) falls inside the block, the instructions up to and including the one
    /// that may cross are retired, their span is reported (`armed_cross`: the counter
    /// crosses at the span's end, where the probe raises its interrupt) and the interrupts
    /// it raised for this hardware context are taken there, then the rest, split again if
    /// the report left a counter whose need falls inside it. Nothing else changes: the
    /// thread does not return to the event loop in the block (on a multi-context core no
    /// slice ends inside it), and without an interrupt the block's cycles are the same.
    /// Before, the span was reported at the block's end and the interrupt came up to the
    /// rest of the block later (17 cycles in FFT's 18-instruction blocks on `bgq`).
    fn retire_armed(
        &mut self,
        parts: usize,
        len: impl Fn(usize) -> u64,
        mut part: impl FnMut(&mut Ctx, usize, u64),
    ) {
        let mut left: u64 = (0..parts).map(&len).sum();
        let (mut i, mut done) = (0, 0);
        let mut split = true;
        while left > 0 {
            let room = if split { self.armed_room() } else { u64::MAX };
            // Up to and including the instruction that may cross, or the rest of the block.
            let m = room.min(left);
            let mut r = m;
            while r > 0 {
                while len(i) == done {
                    i += 1;
                    done = 0;
                }
                let k = (len(i) - done).min(r);
                part(self, i, k);
                done += k;
                r -= k;
            }
            left -= m;
            if left > 0 {
                // Nothing reported (no time went by: a wide core's packed slots): no newer
                // need either, so the rest goes in one part.
                split = self.armed_cross();
            }
        }
    }

    /// Instructions this thread may retire from now before an armed counter of its hardware
    /// context can cross: the counter's need (`State::armed_need`, counted from the last
    /// report) less what it retired since that report (each instruction is at most one
    /// event of such a counter); `u64::MAX` with none armed there.
    fn armed_room(&mut self) -> u64 {
        let p = self.id;
        let st = self.state();
        let need = st.armed_need(p);
        if need == 0 {
            return u64::MAX;
        }
        let c = &st.cores[p];
        let since: u64 = c.retired_mark.instr.iter().sum();
        need.saturating_sub(c.cnt.instructions() - since)
    }

    /// Reports this thread's retirements so far (`State::flush_retired`) and takes the
    /// interrupts waiting for its hardware context (a counter that crossed in the span raised
    /// one for the span's end, now). False if there was nothing to report.
    fn armed_cross(&mut self) -> bool {
        let p = self.id;
        let st = self.state();
        let c = &st.cores[p];
        let any = c.now != c.retired_mark.t && c.retired_any();
        st.flush_retired(p);
        self.take_irqs();
        any
    }

    /// `n` instructions of `op`: counts, slips, killed cycles and extra cycles (no fetch),
    /// from the core's table (`op::OpCost`: no option tested here; a taken branch's restart is
    /// counted from the taken branches, `Counters::restarts`).
    #[inline]
    fn retire_op(&mut self, op: Instr, n: u64) {
        let class = op.class();
        let c = self.core();
        c.retire_n(class, n);
        if !op.is_default() {
            c.cnt.xops[op as usize] += n;
            c.retire_dirty |= 1 << op as u64;
        }
        let cost = c.timing.op_cost[op as usize];
        if cost.per > 0 {
            c.charge(cost.ps, cost.per * n);
        }
        if cost.cold {
            self.retire_op_cold(op, n);
        }
    }

    /// The rest of `retire_op` on a wide core's ALU op (`Core::retire_alu` after its
    /// `retire_n`) or a taken branch with extra cycles.
    #[cold]
    #[inline(never)]
    fn retire_op_cold(&mut self, op: Instr, n: u64) {
        let class = op.class();
        let c = self.core();
        if c.issue_width != 1 && matches!(class, Class::Integer | Class::Fp) {
            c.retire_wide(class, n);
        }
        if class == Class::BranchTaken {
            let extra = c.timing.op_extra[op as usize] * n;
            c.charge(op.extra_state(), extra);
        }
    }

    /// Instruction fetch of one instruction: probes the L1 I-cache when the fetch enters a new
    /// line (the R4400 fetches sequentially; hits inside a line are not separate accesses).
    #[inline(always)]
    fn fetch_one(&mut self) {
        let c = self.core();
        c.pc = (c.pc + c.fetch_step) & (c.code_bytes - 1);
        if c.pc & ((1 << c.l1i.line_shift) - 1) == 0 {
            let a = c.pc_addr();
            self.probe_icache(a);
        }
    }

    /// Instruction fetch of `n` sequential instructions: one probe per line entered (at most
    /// one per line of the procedure's code). Code sizes and lines are powers of two.
    #[inline]
    fn fetch(&mut self, n: u64) {
        let c = self.core();
        let shift = c.l1i.line_shift;
        let start = c.pc;
        let end = start + c.fetch_step * n;
        let crossed = (end >> shift) - (start >> shift);
        c.pc = end & (c.code_bytes - 1);
        if crossed == 0 {
            return;
        }
        if crossed == 1 {
            // The common case of a few instructions entering the next line (what
            // `fetch_lines` does for one line, inline).
            let off = (((start >> shift) + 1) << shift) & (c.code_bytes - 1);
            let a = c.pc_addr() - c.pc + off;
            self.probe_icache(a);
            return;
        }
        self.fetch_lines(start, crossed);
    }

    #[cold]
    fn fetch_lines(&mut self, start: u64, crossed: u64) {
        let c = self.core();
        let shift = c.l1i.line_shift;
        let mask = c.code_bytes - 1;
        let crossed = crossed.min(c.code_bytes >> shift);
        let base = c.pc_addr() - c.pc;
        for k in 1..=crossed {
            let off = (((start >> shift) + k) << shift) & mask;
            self.probe_icache(base + off);
        }
    }

    /// Makes this thread's instruction fetches those of a trace's code records
    /// ([`Ctx::fetch_code`]) instead of the synthetic sequential fetch of the current
    /// procedure's code region: instructions retired from now on fetch nothing by themselves.
    /// How: the fetch step becomes 0 and the offset in the code region 1, which is never the
    /// start of a line, so the synthetic fetch never probes the I-cache (no test on the
    /// per-instruction path).
    pub fn code_from_trace(&mut self) {
        let c = self.core();
        c.fetch_step = 0;
        c.pc = 1;
    }

    /// The instruction fetch of `bytes` bytes of code at `a` (a block of a traced program
    /// that starts executing): one L1 I-cache probe per line the block touches, in address
    /// order, each translated through the TLB as an instruction fetch. Retires nothing: the
    /// instructions are retired by the trace's other records.
    #[inline(always)]
    pub fn fetch_code(&mut self, a: Addr, bytes: u64) {
        self.fetch_code_each(a, bytes, |_, _| {});
    }

    /// [`Ctx::fetch_code`], calling `after(k, ctx)` once the block's `k`-th I-cache line
    /// (from 0) has been fetched: how a profiler tells which line of a block missed
    /// (`--cachegrind-out`'s per-instruction I1 and LL misses, read with [`Ctx::counters`]
    /// and [`Ctx::last_level_misses`]) without changing the fetch.
    #[inline(always)]
    pub fn fetch_code_each(&mut self, a: Addr, bytes: u64, mut after: impl FnMut(u64, &mut Ctx)) {
        self.core().code_at = a;
        let shift = self.core().l1i.line_shift;
        let first = a >> shift;
        let last = (a + bytes.max(1) - 1) >> shift;
        // The first line, then the others (a plain loop: `first..=last` cost a fused python3
        // replay about 5 instructions per block).
        self.probe_icache_inline(a);
        after(0, self);
        let mut line = first + 1;
        while line <= last {
            self.probe_icache_inline(line << shift);
            after(line - first, self);
            line += 1;
        }
        self.check();
    }

    /// The L1 I-cache line size in bytes (what [`Ctx::fetch_code_each`] counts in).
    pub fn l1i_line_bytes(&mut self) -> u64 {
        1 << self.core().l1i.line_shift
    }

    /// [`Ctx::probe_icache`] with its common case inlined: the fetch stays on the page of
    /// the last instruction translation and hits the L1 I. Anything else takes the whole
    /// probe out of line, which repeats the hit test: a failed `Cache::hit` changes nothing,
    /// so the counts and replacement state are those of one probe. A traced program's blocks
    /// (`fetch_code`, about one per two data references in a python3 replay) paid a call and
    /// 36 instructions per probe.
    #[inline(always)]
    fn probe_icache_inline(&mut self, a: Addr) {
        let c = self.core();
        if a >> c.tlb.shift == c.tlb.last_instr && c.l1i.hit(a >> c.l1i.line_shift, SHARED) {
            c.cnt.l1i_hits += 1;
        } else {
            self.probe_icache_cold(a);
        }
    }

    #[cold]
    #[inline(never)]
    fn probe_icache_cold(&mut self, a: Addr) {
        self.probe_icache(a);
    }

    #[inline]
    fn probe_icache(&mut self, a: Addr) {
        let c = self.core();
        if a >> c.tlb.shift != c.tlb.last_instr {
            self.translate_slow(a, true);
        }
        let c = self.core();
        let line = a >> c.l1i.line_shift;
        if c.l1i.hit(line, SHARED) {
            c.cnt.l1i_hits += 1;
        } else {
            self.l1i_miss(a);
        }
    }

    // ---------------------------------------------------------------- translation

    /// Translates a data address: free while the reference stays in the region of the last
    /// translation (always, without a TLB); see `cpu::tlb`.
    #[inline(always)]
    fn translate_data(&mut self, a: Addr) {
        let c = self.core();
        if a >> c.tlb.shift != c.tlb.last_data {
            self.translate_slow(a, false);
        }
    }

    /// Looks `a` up in the TLB and runs the refill handler when no entry maps it.
    #[cold]
    #[inline(never)]
    fn translate_slow(&mut self, a: Addr, ifetch: bool) {
        let c = self.core();
        let vpn2 = a >> c.tlb.shift;
        if !c.tlb.lookup(vpn2) {
            self.tlb_refill(a, vpn2, ifetch);
        }
        let t = &mut self.core().tlb;
        if ifetch {
            t.last_instr = vpn2;
        } else {
            t.last_data = vpn2;
        }
    }

    /// The TLB refill exception and its software handler (see `cpu::tlb` for the model).
    fn tlb_refill(&mut self, a: Addr, vpn2: u64, ifetch: bool) {
        let id = self.id;
        let c = self.core();
        if ifetch {
            c.cnt.itlb_misses += 1;
        } else {
            c.cnt.dtlb_misses += 1;
        }
        let t = c.now;
        let who = c.origin();
        let e = if ifetch {
            CoreEvent::IeratMiss
        } else {
            CoreEvent::DeratMiss
        };
        self.state().core_event(t, who, e, 1);
        let c = self.core();
        let cycle = c.now / c.period;
        let e = c.timing.exception;
        let os = c.os;
        if !os {
            c.kill(Ps::KilledException, e, 1);
        }
        // The entry is written now (the handler's `tlbwr` comes last, but writing it first
        // keeps an interrupt taken while the handler waits for its loads from refilling
        // the same pair twice); Random is sampled at the exception.
        c.tlb.refill(vpn2, cycle);
        let who = self.core().origin();
        self.state()
            .observe_now(crate::probe::Observation::TlbMiss {
                proc: id as u16,
                t,
                addr: a,
                ifetch,
                who,
            });
        if os {
            self.os_tlb_handler(a, vpn2);
            return self.check();
        }
        // mfc0 Context; ld PTE even; ld PTE odd; mtc0 EntryLo0/1; tlbwr; eret (+ nops).
        let pte = super::tlb::Tlb::pte_addr(vpn2);
        self.handler_ref(pte, false);
        self.handler_ref(pte + 8, false);
        let n = self.core().tlb.refill_instructions;
        self.core().retire_n(Class::Integer, n);
        if self.core().tlb.count_in_software {
            let page = self.state().map.page_bytes();
            let counter = super::tlb::Tlb::fault_counter_addr(id, page);
            self.handler_ref(counter, false);
            self.core().retire_n(Class::Integer, 1);
            self.handler_ref(counter, true);
        }
        self.check();
    }

    /// A load or store by an exception handler: unmapped, no instruction fetch, no
    /// informing trap.
    pub(crate) fn handler_ref(&mut self, a: Addr, write: bool) {
        let c = self.core();
        c.retire(if write { Class::Store } else { Class::Load });
        c.cnt.refs += 1;
        let line = a >> c.l1d.line_shift;
        if c.l1d.hit(line, if write { MODIFIED } else { SHARED }) {
            c.cnt.l1d_hits += 1;
        } else {
            self.l1d_miss_quiet(a, if write { Op::Store(None) } else { Op::Load });
        }
    }

    // ---------------------------------------------------------------- informing operations

    /// An informing load (8 bytes or less, within a line): a load that also reports where
    /// it was served, as the cache-outcome condition code of informing memory operations
    /// (no trap: the program branches on the result itself).
    pub fn load_informing(&mut self, a: Addr) -> Served {
        let before = self.core().cnt.l1d_misses;
        let l2_before = self.core().cnt.l2_misses;
        let h = self.miss_handler.take();
        self.plain(a, false);
        // The program branches on where the load was served at once: on a core with
        // non-blocking loads, the data must be in (`cpu::nonblocking`).
        self.use_loads();
        self.miss_handler = h;
        let c = self.core();
        if c.cnt.l1d_misses == before {
            Served::L1
        } else if c.cnt.l2_misses == l2_before {
            Served::L2
        } else {
            Served::Memory
        }
    }

    /// Installs (or with `None` removes) the informing-miss trap: from now on every data
    /// reference of this thread that misses the L1 runs `h` after its data arrives, at the
    /// cost of a branch-and-link and a return plus whatever `h` does. References made by
    /// `h` itself do not trap.
    pub fn on_miss(&mut self, h: Option<MissHandler>) {
        self.miss_handler = h;
    }

    #[cold]
    #[inline(never)]
    fn l1i_miss(&mut self, a: Addr) {
        self.wait_agent(a, Some(Op::IFetch));
        let hit = self.agent_l1_miss(a, Op::IFetch);
        if !hit {
            self.block();
        }
    }

    #[cold]
    #[inline(never)]
    fn l1d_miss(&mut self, a: Addr, op: Op) -> u64 {
        self.l1d_miss_inline(a, op)
    }

    /// [`Ctx::l1d_miss`] in line, for `load_miss` and `store_miss` (already out of line):
    /// the call and its register saves cost a fused 16-thread replay, whose records miss the
    /// L1 D more often than they hit, about 15 instructions per miss (issue 19,
    /// BENCHMARKS.md).
    #[inline(always)]
    fn l1d_miss_inline(&mut self, a: Addr, op: Op) -> u64 {
        let start = self.core().now;
        let served = self.l1d_miss_quiet(a, op);
        let v = self.core().result;
        if self.miss_handler.is_some() {
            let c = self.core();
            let cycles = (c.now - start) / c.period;
            let write = !matches!(op, Op::Load);
            self.informing_trap(MissInfo {
                addr: a,
                write,
                served,
                cycles,
            });
        }
        v
    }

    /// An L1 miss of a plain load (whose value the program does not read): on a core with
    /// non-blocking loads it need not wait for its data (`cpu::nonblocking`).
    #[cold]
    #[inline(never)]
    fn load_miss(&mut self, a: Addr) {
        self.nonblocking_miss(a, Op::Load);
    }

    /// A plain load's L1 miss with `[cpu.nonblocking] loads = false` (`cpu::nonblocking`,
    /// "Blocking loads over a write buffer"): the load waits for its own data, but not for
    /// the stores outstanding before it. It waits first, as a miss under misses does
    /// (`wait_mshr`), only for a free MSHR (a full write buffer) or a transaction of a line
    /// of its L2 set (its own line included: a store's ownership being fetched), then its
    /// request leaves beside the stores and the thread waits until that request's
    /// transaction has completed.
    #[cold]
    #[inline(never)]
    fn load_miss_over_stores(&mut self, a: Addr) {
        let handler = self.miss_handler.is_some();
        let c = self.core();
        if c.multi || handler || c.pend.is_none() {
            // Nothing outstanding (or a core that drains anyway): the blocking core's miss.
            self.l1d_miss_inline(a, Op::Load);
            return;
        }
        debug_assert!(
            c.under_miss,
            "a transaction outstanding while the thread runs"
        );
        if c.mshrs == 1 {
            self.wait_agent_slow(a, Some(Op::Load));
        } else {
            self.wait_mshr(a, Op::Load);
        }
        let c = self.core();
        let line = a >> c.l1d.line_shift;
        if c.l1d.hit(line, SHARED) {
            // Its line arrived with the transaction it waited for: the hit it is on a
            // blocking core.
            c.cnt.l1d_hits += 1;
            return;
        }
        if c.pend.is_none() {
            // The buffer drained while it waited.
            self.l1d_miss_inline(a, Op::Load);
            return;
        }
        if self.agent_l1_miss(a, Op::Load) {
            return;
        }
        // The request leaves (`agent::blocked` issues it and, the thread being under the
        // stores' misses, resumes it at once); the thread then waits for this line's
        // transaction only. Each completion resumes it (`agent::resume_at`), which checks.
        let c = self.core();
        if c.window != (0, 0) {
            let seq = retired_seq(c);
            c.pend.as_mut().expect("the miss just issued").seq = seq;
        }
        self.block();
        loop {
            let c = self.core();
            let lpl = c.lpl();
            let line = a >> lpl.line_shift;
            if !c
                .pend
                .iter()
                .chain(c.others.iter())
                .any(|pd| pd.line == line)
            {
                return;
            }
            c.block = Block::Agent;
            self.block();
        }
    }

    /// An L1 miss of a plain store (no value): on a core with non-blocking stores
    /// (`[cpu.nonblocking] stores`) it need not wait for its ownership (`cpu::nonblocking`).
    #[cold]
    #[inline(never)]
    fn store_miss(&mut self, a: Addr) {
        self.store_miss_inline(a);
    }

    #[inline(always)]
    fn store_miss_inline(&mut self, a: Addr) {
        if !self.core().nonblocking_stores || self.core().store_through {
            self.l1d_miss_inline(a, Op::Store(None));
            return;
        }
        self.nonblocking_miss(a, Op::Store(None));
    }

    /// `load_miss` then `check`, in one call: for the runs of hits (`hits::run_loop`), whose
    /// L1 D misses, in a replay of 16 threads on `numachine`, are nearly all followed by the
    /// yield (an L2 hit takes longer than the run-ahead window). The miss's frame, which
    /// saves the registers anyway, holds the switch to the event loop, and `slow`'s own
    /// frame (its call, five registers saved and restored) is not paid per miss (task
    /// omp19).
    #[inline(never)]
    pub(crate) fn load_miss_check(&mut self, a: Addr) {
        self.nonblocking_miss(a, Op::Load);
        self.check_inline();
    }

    /// `store_miss` then `check`, in one call (see `load_miss_check`).
    #[inline(never)]
    pub(crate) fn store_miss_check(&mut self, a: Addr) {
        self.store_miss_inline(a);
        self.check_inline();
    }

    /// `load_miss` and `store_miss` (`op` is `Load` or `Store(None)`); in line in both, so a
    /// blocking core's miss goes to `l1d_miss` after one test.
    #[inline(always)]
    fn nonblocking_miss(&mut self, a: Addr, op: Op) {
        let c = self.core();
        if !c.nonblocking || c.multi || self.miss_handler.is_some() {
            self.l1d_miss_inline(a, op);
            return;
        }
        if op == Op::Load && !self.core().nonblocking_loads {
            // `[cpu.nonblocking] loads = false`: after the blocking core's test, so that it
            // pays nothing for it.
            self.load_miss_over_stores(a);
            return;
        }
        let need = if op == Op::Load { SHARED } else { MODIFIED };
        // One MSHR: a miss while another is outstanding waits for it (the value is used).
        // Several: it waits only for a free MSHR or a conflicting fill (`wait_mshr`).
        if self.core().pend.is_some() {
            if self.core().mshrs == 1 {
                self.wait_agent_slow(a, Some(op));
            } else if self.merges(a, op) {
                // It waits for that refill beside it and the thread goes on: counted as
                // the L1 hit it is on a blocking core.
                self.core().cnt.l1d_hits += 1;
                return;
            } else {
                self.wait_mshr(a, op);
            }
            let c = self.core();
            if c.l1d.hit(a >> c.l1d.line_shift, need) {
                // An access to the line that was being filled uses the fill it waited
                // for: the hit it is on a blocking core (the same L1 misses either way).
                c.cnt.l1d_hits += 1;
                return;
            }
        }
        if !self.agent_l1_miss(a, op) {
            // The request leaves (`agent::blocked` issues it) and the thread goes on.
            let c = self.core();
            c.under_miss = true;
            if c.window != (0, 0) {
                let seq = retired_seq(c);
                c.pend.as_mut().expect("the miss just issued").seq = seq;
            }
            self.block();
        }
    }

    /// With several MSHRs: whether a plain `op` at `a` joins the outstanding transaction for
    /// its line (a load joins any fill of the line, a store one that brings ownership). The
    /// R10000 keeps such an access in its address queue until the refill it waits for
    /// completes, without stalling issue; neither has a value the program reads before its
    /// use point, which drains every outstanding miss.
    fn merges(&mut self, a: Addr, op: Op) -> bool {
        let c = self.core();
        let line = a >> c.lpl().line_shift;
        c.pend.iter().chain(c.others.iter()).any(|pd| {
            pd.line == line
                && matches!(
                    (op, pd.cmd),
                    (Op::Load, Cmd::Read) | (_, Cmd::ReadEx | Cmd::Upgrade)
                )
        })
    }

    /// A miss under misses (`[cpu.nonblocking] mshrs` > 1, `cpu::nonblocking`): waits while
    /// `op` at `a` needs the external agent and either every MSHR is busy (a fifth miss on
    /// the R10000) or a transaction for a line of the same L2 set is outstanding (the same
    /// line: the access waits for that fill and then uses it; another line: the fill's
    /// victim could be that line, e.g. one whose upgrade is outstanding), or the oldest
    /// outstanding miss has the active list or the address queue full behind it
    /// (`window_full`). Each completion resumes the thread, which checks again.
    #[cold]
    #[inline(never)]
    fn wait_mshr(&mut self, a: Addr, op: Op) {
        loop {
            let c = self.core();
            if c.pend.is_none() || !super::agent::needs_agent(c, a, op) {
                return;
            }
            let lpl = c.lpl();
            let set = lpl.set_of(a >> lpl.line_shift);
            let full = c.others.len() + 1 >= c.mshrs;
            let conflict = c
                .pend
                .iter()
                .chain(c.others.iter())
                .any(|pd| lpl.set_of(pd.line) == set);
            if !full && !conflict && !window_full(c) {
                return;
            }
            self.core().block = Block::Agent;
            self.block();
        }
    }

    /// The program uses the values of its outstanding non-blocking loads here (a register
    /// loaded earlier is read): it stalls until their data has arrived. Free, and nothing
    /// happens, when no load is outstanding (always on a core without `[cpu.nonblocking]`).
    /// Value operations, uncached accesses and further misses call it themselves.
    #[inline(always)]
    pub fn use_loads(&mut self) {
        if self.core().under_miss {
            self.use_loads_slow();
        }
    }

    #[cold]
    #[inline(never)]
    fn use_loads_slow(&mut self) {
        while self.core().under_miss {
            self.core().block = Block::Agent;
            self.block();
        }
    }

    /// A plain store on a write-through L1 D (`Core::store_through`) that did not find its
    /// line writable: a hit if the line is there read-only (updated in place), else a miss
    /// that allocates nothing. No transaction either way: the store itself goes to the
    /// line's slice (`post_write`, after this).
    #[cold]
    #[inline(never)]
    fn store_through(&mut self, a: Addr) -> Served {
        let c = self.core();
        let line = a >> c.l1d.line_shift;
        if c.l1d.hit(line, SHARED) {
            c.cnt.l1d_hits += 1;
            return Served::L1;
        }
        c.cnt.l1d_misses += 1;
        let id = self.id;
        super::agent::attribute_l1_miss(self.state(), id, a, crate::l1_misses::WRITE);
        let c = self.core();
        let (t, who) = (c.now, c.origin());
        self.state().core_event(t, who, CoreEvent::StoreMiss, 1);
        Served::L2
    }

    /// An L1 data miss without the informing trap (exception handlers' own references).
    #[inline(always)]
    fn l1d_miss_quiet(&mut self, a: Addr, op: Op) -> Served {
        if op == Op::Store(None) && self.core().store_through {
            return self.store_through(a);
        }
        self.wait_agent(a, Some(op));
        let hit = self.agent_l1_miss(a, op);
        if !hit {
            self.block();
            Served::Memory
        } else {
            Served::L2
        }
    }

    /// Waits while a sibling context's transaction occupies the core's external agent and
    /// this access needs it (an L1 miss of `op` that the L2 cannot serve; `None`: an
    /// uncached access, which always does). Never waits with one thread per core: a blocked
    /// thread's core runs nothing else.
    #[inline(always)]
    fn wait_agent(&mut self, a: Addr, op: Option<Op>) {
        if self.core().pend.is_some() {
            self.wait_agent_slow(a, op);
        }
    }

    #[cold]
    #[inline(never)]
    fn wait_agent_slow(&mut self, a: Addr, op: Option<Op>) {
        while self.core().pend.is_some()
            && op.is_none_or(|op| super::agent::needs_agent(self.core(), a, op))
        {
            self.core().block = Block::Agent;
            self.block();
        }
    }

    /// The informing-miss trap: a branch-and-link to the handler and its return (two taken
    /// branches), with further traps off while the handler runs.
    fn informing_trap(&mut self, info: MissInfo) {
        let Some(mut h) = self.miss_handler.take() else {
            return;
        };
        self.branch(true);
        h(self, info);
        self.branch(true);
        self.miss_handler = Some(h);
    }

    /// Returns to the event loop when the run-ahead bound is reached or an interrupt waits.
    #[inline(always)]
    pub(crate) fn check(&mut self) {
        let c = self.core();
        if c.now >= c.run_until {
            self.slow();
        }
    }

    /// [`agent::l1_miss`](super::agent::l1_miss) for this thread's processor, with its core
    /// pointer (the quiet L2 hit then indexes no core).
    #[inline(always)]
    fn agent_l1_miss(&mut self, a: Addr, op: Op) -> bool {
        let (core, id) = (self.core, self.id);
        super::agent::l1_miss(self.state(), core, id, a, op)
    }

    #[cold]
    #[inline(never)]
    fn slow(&mut self) {
        self.yield_quantum();
    }

    /// [`Ctx::check`] with the yield in line, for a caller whose frame saves the registers
    /// anyway (`load_miss_check`).
    #[inline(always)]
    fn check_inline(&mut self) {
        let c = self.core();
        if c.now >= c.run_until {
            self.yield_quantum();
        }
    }

    /// The run-ahead bound's yield and what follows the resumption (`slow`'s body).
    #[inline(always)]
    fn yield_quantum(&mut self) {
        if let Some(pk) = self.peek {
            // SAFETY: `run_loop` set it for the records it holds borrowed while it runs.
            let h = unsafe { pk.scan(self) };
            self.core().send_horizon = h;
        }
        // SAFETY: the yielder outlives the coroutine body that owns this context.
        unsafe { &*self.yielder }.suspend(Yield::Quantum);
        self.after_resume();
    }

    pub(crate) fn block(&mut self) {
        // SAFETY: as in `slow`.
        unsafe { &*self.yielder }.suspend(Yield::Blocked);
        self.after_resume();
    }

    /// Takes the interrupts waiting for this thread's hardware context: each costs the
    /// exception entry plus the handler cycles the raising monitor stated (killed-exception
    /// cycles), then runs the program's handler if it installed one. Its common case (one
    /// thread per core, no interrupt) in line in `slow` and `block`: the call cost a fused
    /// 16-thread replay, which yields about once per record, 25 instructions per yield
    /// (issue 19, BENCHMARKS.md).
    #[inline(always)]
    fn after_resume(&mut self) {
        let c = self.core();
        if c.os || c.multi || !c.irq.is_empty() {
            self.after_resume_slow();
        }
    }

    #[cold]
    #[inline(never)]
    fn after_resume_slow(&mut self) {
        if self.core().os {
            self.os_resume();
        } else if self.core().multi {
            self.sched_resume();
        }
        self.take_irqs();
    }

    /// Takes the interrupts waiting for this thread's hardware context (none while its
    /// handler runs): the part of `after_resume_slow` that `armed_cross` shares.
    fn take_irqs(&mut self) {
        if self.core().irq.is_empty() || self.core().in_handler {
            return;
        }
        loop {
            let c = self.core();
            let me = c.context;
            let Some(i) = c.irq.iter().position(|q| q.context == me) else {
                break;
            };
            let irq = c.irq.remove(i).expect("found");
            c.cnt.interrupts += 1;
            if c.larx_stcx {
                // An interrupt loses the hardware thread's reservation (`cpu::reserve`).
                let hw = self.hw_thread();
                self.state().resv.clear(hw);
            }
            let c = self.core();
            let (t, who) = (c.now, c.origin());
            self.state()
                .core_event(t, who, CoreEvent::InterruptTaken, 1);
            let c = self.core();
            let cost = c.timing.exception + irq.handler_cycles;
            c.kill(Ps::KilledException, cost, 1);
            let acted = &mut self.state().acted;
            acted.interrupts_taken += 1;
            acted.interrupt_cycles += cost;
            acted.handler_cycles += irq.handler_cycles;
            if let Some(mut h) = self.handler.take() {
                self.core().in_handler = true;
                h(self, irq.vector);
                self.core().in_handler = false;
                self.handler = Some(h);
            }
        }
    }

    /// Installs the handler that runs (on this thread, costing its cycles plus the exception
    /// entry) when a monitor raises an interrupt on this processor.
    pub fn on_interrupt(&mut self, h: InterruptHandler) {
        self.handler = Some(h);
    }

    // ---------------------------------------------------------------- synchronization

    /// Spins (load, compare, branch) until `pred` holds for the word at `a`; returns it.
    /// While the line stays valid in the cache the spin costs no simulation work: the thread
    /// sleeps until the line is invalidated, and the cycles are charged as spin iterations.
    pub fn spin_until(&mut self, a: Addr, pred: impl Fn(u64) -> bool) -> u64 {
        self.wait_on(a, pred, false)
    }

    /// Sleeps (as in a blocking system call: no instructions, idle cycles) until `pred` holds
    /// for the word at `a`; returns it.
    pub fn sleep_until(&mut self, a: Addr, pred: impl Fn(u64) -> bool) -> u64 {
        self.wait_on(a, pred, true)
    }

    fn wait_on(&mut self, a: Addr, pred: impl Fn(u64) -> bool, sleep: bool) -> u64 {
        loop {
            let v = self.load_value(a);
            if !sleep {
                self.branch(!pred(v));
            }
            if pred(v) {
                return v;
            }
            let c = self.core();
            let line = a >> c.lpl().line_shift;
            let now = c.now;
            c.spin_seen = v;
            c.block = Block::Spin {
                line,
                since: now,
                sleep,
            };
            self.block();
        }
    }

    /// Parks this thread until another one calls [`Ctx::unpark`] for its processor: a thread
    /// that does not exist yet (a replayed program's thread before its creation, whose
    /// processor must not touch memory before then). A thread parked at the end of the run
    /// ends with it, as if it had never been spawned (no cycles, no deadlock).
    ///
    /// # Panics
    /// On a processor that time-slices several software threads (not supported).
    pub fn park(&mut self) {
        assert!(
            !self.core().multi,
            "Ctx::park on processor {}, which time-slices software threads",
            self.id
        );
        self.core().block = Block::Parked;
        self.block();
    }

    /// Resumes the thread parked on processor `p` at this thread's time, its processor idle
    /// ("other stall", as a sleep) since its own time; `false` if none is parked there.
    ///
    /// This thread's own run-ahead bound is lowered to what it would be with the new
    /// resumption queued (`sim`'s module documentation, "The longer window": a resumption at
    /// `at` bounds every other thread at `at + resume_extra + I`): the bound it runs under
    /// was computed before that resumption existed, and the woken thread's requests can reach
    /// this processor from `at + resume_extra + I` on (an intervention for a line this
    /// thread holds dirty, seen on a 16-thread OpenMP replay by `Inbound::granted`'s check).
    pub fn unpark(&mut self, p: usize) -> bool {
        let t = self.core().now;
        let st = self.state();
        let Some(c) = st.cores.get_mut(p) else {
            return false;
        };
        if c.block != Block::Parked {
            return false;
        }
        c.stall_until(Ps::OtherStall, t);
        c.block = Block::None;
        let at = c.now.max(st.q.now());
        st.queue_resume(p, at);
        let bound = st.inbound.resumption_bound(at);
        let me = self.core();
        me.run_until = me.run_until.min(bound);
        true
    }

    /// Idles for `cycles` processor cycles, as a thread asleep in a system call with a
    /// timeout (no instructions; the cycles are charged as other stalls, as a sleep's are).
    pub fn idle(&mut self, cycles: u64) {
        self.core().charge(Ps::OtherStall, cycles);
        self.check();
    }

    /// Atomically stores the larger of the word at `a` and `v`; returns the old value.
    pub fn fetch_max(&mut self, a: Addr, v: u64) -> u64 {
        self.value_op(a, Op::Rmw(Rmw::Max, v, 0))
    }

    /// Acquires a test-and-test-and-set lock.
    pub fn lock(&mut self, l: Lock) {
        loop {
            self.spin_until(l.0, |v| v == 0);
            if self.swap(l.0, 1) == 0 {
                return;
            }
        }
    }
    /// Releases a lock.
    pub fn unlock(&mut self, l: Lock) {
        self.store_value(l.0, 0);
    }

    /// Waits until all `b.n` threads arrive (counter with fetch-and-add, episode flag).
    pub fn barrier(&mut self, b: Barrier) {
        let episode = self.load_value(b.flag);
        let arrived = self.fetch_add(b.count, 1) + 1;
        if arrived == b.n {
            self.store_value(b.count, 0);
            self.store_value(b.flag, episode.wrapping_add(1));
        } else {
            self.spin_until(b.flag, |v| v != episode);
        }
    }

    // ---------------------------------------------------------------- phases, procedures, memory

    /// Writes the PhaseID register (its low 4 bits tag every transaction this processor
    /// issues). Costs an uncached register write.
    pub fn phase(&mut self, id: u16) {
        let c = self.core();
        c.phase = id;
        let u = c.timing.uncached;
        c.charge(Ps::OtherStall, u);
        let t = c.now;
        c.phase_log.push((t, id));
        let p = self.id as u16;
        self.state().observe_now(crate::probe::Observation::Phase {
            proc: p,
            t,
            phase: id,
        });
        if id != 0 && !self.state().aux.on {
            self.state().refresh_origins();
        }
        self.check();
    }

    /// The PhaseID register's value (the last `phase` written; 0 at start). Reading it is free:
    /// the program knows what it wrote.
    pub fn current_phase(&mut self) -> u16 {
        self.core().phase
    }

    /// Enters a procedure: later misses are attributed to it.
    pub fn enter(&mut self, p: Procedure) {
        let c = self.core();
        let prev = c.procedure;
        c.stack.push(prev);
        c.procedure = p.0;
        c.pc = u64::from(c.fetch_step == 0);
        self.procedure_changed(true, prev);
    }
    /// Leaves the current procedure.
    pub fn leave(&mut self) {
        let c = self.core();
        let prev = c.procedure;
        c.procedure = c.stack.pop().unwrap_or(0);
        c.pc = u64::from(c.fetch_step == 0);
        self.procedure_changed(false, prev);
    }

    fn procedure_changed(&mut self, entered: bool, prev: u32) {
        let c = self.core();
        let (t, cur) = (c.now, c.procedure);
        let p = self.id as u16;
        let st = self.state();
        st.observe_now(crate::probe::Observation::Procedure {
            proc: p,
            t,
            procedure: cur,
            entered,
        });
        if let Some(cost) = st.procedure_hook(p as usize, prev, cur) {
            self.procedure_command(&cost);
        }
        self.check();
    }

    /// The memory system's procedure command (FlashPoint's procedure delta, seed 3.2.4): the
    /// memory fence, then the uncached load. The fence first drains the misses the thread
    /// has outstanding (`cpu::nonblocking`; nothing on a blocking core, whose misses are
    /// never outstanding here) and then stalls its fixed `fence_cycles`.
    pub(crate) fn procedure_command(&mut self, cost: &crate::state::ProcedureCost) {
        if cost.fence_cycles > 0 {
            self.use_loads();
            self.core().charge(Ps::OtherStall, cost.fence_cycles);
        }
        self.uncached(cost.addr, 8, None);
    }

    /// Allocates a named data structure during the run.
    pub fn alloc(&mut self, name: &str, bytes: u64, place: Place) -> Addr {
        let st = self.state();
        let a = st.map.alloc(name, bytes, place);
        let cmds = st.alloc_hook(a, bytes, st.map.data_structure(st.map.structure_of(a)));
        for (addr, v) in cmds {
            self.uncached(addr, 8, Some(v));
        }
        a
    }

    // ---------------------------------------------------------------- uncached accesses

    /// An uncached load or store (`write` = Some(data)); blocks until it completes.
    pub fn uncached(&mut self, addr: Addr, size: u8, write: Option<u64>) -> u64 {
        let c = self.core();
        c.retire(if write.is_some() {
            Class::Store
        } else {
            Class::Load
        });
        c.cnt.uncached += 1;
        // An uncached access issues without an L2 lookup: the longer window is only where
        // none can be made (`Machine::resume_extra`).
        assert_eq!(
            self.state().inbound.resume_extra,
            0,
            "an uncached access on a machine run with the longer window (sim.rs, \"The longer window\")"
        );
        self.wait_agent(addr, None);
        let id = self.id;
        super::agent::start_uncached(self.state(), id, addr, size, write);
        self.block();
        let v = self.core().result;
        self.check();
        v
    }

    /// Reads a monitor register of this processor's monitor (uncached; `offset` in bytes from
    /// the monitor region's base; 4 = word, 8 = doubleword access).
    pub fn monitor_read(&mut self, offset: u64, size: u8) -> u64 {
        self.uncached(crate::state::MONITOR_BASE + offset, size, None)
    }
    /// Writes a monitor register of this processor's monitor.
    pub fn monitor_write(&mut self, offset: u64, size: u8, value: u64) {
        self.uncached(crate::state::MONITOR_BASE + offset, size, Some(value));
    }
    /// Writes the monitor of another processor (or, with `proc = None`, multicasts to all
    /// monitors: NUMAchine's system writes used to start and stop every card at once).
    pub fn monitor_write_remote(&mut self, proc: Option<usize>, offset: u64, size: u8, value: u64) {
        let target = match proc {
            Some(p) => crate::state::MONITOR_REMOTE_BASE + ((p as u64 + 1) << 24) + offset,
            None => crate::state::MONITOR_REMOTE_BASE + offset,
        };
        self.uncached(target, size, Some(value));
    }
}

/// Instructions, and loads and stores, the core's thread has retired so far: where a miss
/// issued now stands in its program order (`Pending::seq`).
fn retired_seq(c: &Core) -> (u64, u64) {
    let i = &c.cnt.instr;
    (
        c.cnt.instructions(),
        i[Class::Load as usize] + i[Class::Store as usize],
    )
}

/// The R10000's graduation in order (`[cpu.nonblocking] active_list`, `address_queue`;
/// `cpu::nonblocking`, "The active list"): whether the oldest outstanding miss has the
/// 32-entry active list (instructions) or the 16-entry address queue (loads and stores)
/// full behind it. It cannot graduate before its data arrives, so nothing decoded after
/// the window can issue, a further miss included. Checked where a further miss would be
/// issued: what the protocol processors see is when misses leave.
fn window_full(c: &Core) -> bool {
    if c.window == (0, 0) {
        return false;
    }
    let Some(oldest) = c
        .pend
        .iter()
        .chain(c.others.iter())
        .map(|pd| pd.seq)
        .min_by_key(|s| s.0)
    else {
        return false;
    };
    let (instr, mem) = retired_seq(c);
    let (list, queue) = c.window;
    (list != 0 && instr - oldest.0 >= list) || (queue != 0 && mem - oldest.1 >= queue)
}
