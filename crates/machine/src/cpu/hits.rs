//! A traced thread's runs of L1 hits, simulated with the core's counts in registers
//! ([`Ctx::traced_hits`]).
//!
//! A replayed trace is mostly references and code blocks that hit in the L1 caches. Taken one
//! by one ([`Ctx::traced_code`], [`Ctx::fetch_code`]), each hit loads and stores the core's
//! time and half a dozen counters through the core's pointer, and tests the run-ahead bound
//! twice; a fused python3 replay spent about two thirds of its instructions there. Here a run
//! of records is taken in a loop that keeps the time and the counts in locals and writes them
//! back once. A record enters the run only when it is known beforehand to go through without
//! anything but hits: its lines hit in direct-mapped L1s of one geometry (`numachine`'s and
//! `ideal`'s; a direct-mapped hit test changes nothing, so testing first is free), it stays on the last translation's page, it does not span two
//! lines, and it ends before the run-ahead bound (so that neither of `traced_code`'s two
//! checks would leave the thread). The first record that does not is left to the caller,
//! which takes it the one-by-one way: counts, timing and the points where the thread yields
//! are those of the one-by-one replay exactly. In [`Ctx::traced_run`]'s loop a data
//! reference that misses only the L1 D stays in the run when the miss is the quiet L2 hit
//! (`agent::l2_hit_in_run`), served there as the miss path serves it ([`hit_run_body`]).

use super::super::scan::Scan;
use super::Ctx;
use crate::addr::Addr;
use crate::cache::Cache;
use crate::cpu::{Class, Core};
use crate::state::State;
use engine::Tick;

/// One record of a traced thread, as [`Ctx::traced_hits`] reads it.
///
/// `repr(u8)`: an explicit tag. Without it the enum is 24 bytes with the variant encoded in
/// the niche of [`TracedRef::write`] (a tagged layout would take 32), and the bulk loop of a
/// fused replay, which builds a `Traced` from each word and matches it at once, compiled to
/// about 10 more instructions per record (7,185 M -> 7,481 M for the fused python3.11
/// `sum(range(300_000))`, BENCHMARKS.md) when `Data` became `Data(TracedRef)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Traced {
    /// A data reference.
    Data(TracedRef),
    /// A code block's instruction fetch: [`Ctx::fetch_code`]'s arguments.
    Code { addr: Addr, bytes: u64 },
    /// Anything else (left to the caller).
    Other,
}

/// A traced data reference: [`Ctx::traced_code`]'s arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TracedRef {
    pub write: bool,
    pub modify: bool,
    pub addr: Addr,
    pub size: u32,
    pub before: u64,
}

/// The addresses translated by the core's last data or instruction translation: `a` is in
/// it when `a - lo < len` (wrapping), which is `a >> tlb.shift == last` without the shift by
/// a variable count (and its register) per test. Empty after a refill forgot the entry.
#[derive(Clone, Copy)]
struct Region {
    lo: Addr,
    len: u64,
}

impl Region {
    #[inline(always)]
    fn new(shift: u32, last: u64) -> Region {
        match last.checked_shl(shift) {
            Some(lo) if lo >> shift == last => Region {
                lo,
                len: 1 << shift,
            },
            _ => Region { lo: 0, len: 0 },
        }
    }
    #[inline(always)]
    fn has(self, a: Addr) -> bool {
        a.wrapping_sub(self.lo) < self.len
    }
}

impl Ctx {
    /// Takes `items[from..]` as long as they are L1 hits that leave the thread running (see
    /// the module documentation), each as `traced_code` or `fetch_code` would, and returns
    /// the index of the first it did not take (`items.len()` when it took them all). The
    /// caller takes that one itself, the one-by-one way. Takes none on a core whose hits do
    /// more than count (an issue width above one, a load slip, a write-through L1 D) or
    /// whose L1s are set-associative or of two geometries. Only for a thread fetching from
    /// its trace's code records (`code_from_trace`).
    #[inline(always)]
    pub fn traced_hits<T>(
        &mut self,
        items: &[T],
        from: usize,
        decode: impl Fn(&T) -> Traced,
    ) -> usize {
        let c = self.core();
        debug_assert!(c.fetch_step == 0 && c.pc == 1);
        if !hits_only_count(c) || c.now >= c.run_until {
            // (The last: the next record's first check leaves the thread.)
            return from;
        }
        // The L1 lines of `numachine` (32 bytes) get their own copy of the loop, with shifts
        // by a constant (a shift by a variable count takes `cl`: a register and a move per
        // shift).
        match (paged(c), c.l1d.line_shift) {
            (false, 5) => hit_run::<T, false, 5>(c, items, from, decode),
            (false, _) => hit_run::<T, false, 0>(c, items, from, decode),
            (true, 5) => hit_run::<T, true, 5>(c, items, from, decode),
            (true, _) => hit_run::<T, true, 0>(c, items, from, decode),
        }
    }

    /// Takes `items[from..]` up to the first record that decodes to `Traced::Other` and
    /// returns its index (`items.len()` when there is none): each record exactly as
    /// [`Ctx::traced_one`] would take it, the runs of hits in registers as
    /// [`Ctx::traced_hits`] takes them. One call for what a replay loop did with
    /// `traced_hits` and `traced_one` in turn: a thread that yields about once per record
    /// (16 threads on `numachine`, whose run-ahead window is shorter than an L2 hit) paid
    /// the run's entry and exit and the caller's loop once per yield (issue 19,
    /// BENCHMARKS.md). The records taken, their order and the points where the thread
    /// yields are those of the one-by-one replay.
    #[inline(always)]
    pub fn traced_run<T>(
        &mut self,
        items: &[T],
        from: usize,
        decode: impl Fn(&T) -> Traced,
    ) -> usize {
        let c = self.core();
        debug_assert!(c.fetch_step == 0 && c.pc == 1);
        let runs =
            hits_only_count(c) && c.period != 0 && Cache::direct_pair(&c.l1d, &c.l1i).is_some();
        if !runs {
            return one_by_one(self, items, from, decode);
        }
        let mut from = from;
        loop {
            let c = self.core();
            let r = match (paged(c), c.l1d.line_shift) {
                (false, 5) => run_loop::<T, false, 5>(self, items, from, &decode),
                (false, _) => run_loop::<T, false, 0>(self, items, from, &decode),
                (true, 5) => run_loop::<T, true, 5>(self, items, from, &decode),
                (true, _) => run_loop::<T, true, 0>(self, items, from, &decode),
            };
            match r {
                Ok(j) => return j,
                Err(j) => from = j,
            }
        }
    }

    /// One record the way [`Ctx::traced_hits`] did not take it (a miss, a yield, a second
    /// line, a new page), out of line so that a replay's loop keeps its registers. False for
    /// `Traced::Other`, which is the caller's.
    #[inline(never)]
    pub fn traced_one(&mut self, t: Traced) -> bool {
        self.traced_one_inline(t)
    }

    /// [`Ctx::traced_one`] in line, for [`run_loop`]: a call took the record through
    /// memory and saved and restored six registers, about 40 instructions per record that
    /// ends a run (one per yield in a replay of 16 threads: issue 19, BENCHMARKS.md).
    #[inline(always)]
    fn traced_one_inline(&mut self, t: Traced) -> bool {
        match t {
            Traced::Data(r) => self.traced_code(r.write, r.modify, r.addr, r.size, r.before),
            Traced::Code { addr, bytes } => self.fetch_code(addr, bytes),
            Traced::Other => return false,
        }
        true
    }
}

/// Most records [`hit_run`] takes in one call: its counts of data references, stores and
/// modifies share one word, 21 bits each.
const MAX_RUN: usize = (1 << 21) - 1;

/// [`Ctx::traced_hits`]'s loop, out of line so that it has the registers to itself (they are
/// few: the counts share a word, the time is kept as the instructions left before the bound).
/// `PAGED`: test each address against the last translations' regions (else only that it is
/// below 2^63, as without a TLB). `LS`: the L1s' line shift when known at compile time (0:
/// read from the caches).
#[inline(never)]
fn hit_run<T, const PAGED: bool, const LS: u32>(
    c: &mut Core,
    items: &[T],
    from: usize,
    decode: impl Fn(&T) -> Traced,
) -> usize {
    hit_run_body::<T, PAGED, LS, false>(c, std::ptr::null_mut(), items, from, &decode).0
}

/// [`Ctx::traced_run`]'s loop: runs of hits ([`hit_run_body`], in line) and the record
/// that ends each run ([`Ctx::traced_one`] in line: a yield, a second line, a new page;
/// a reference that only misses the L1 D goes from the run straight to its miss) in turn,
/// until the first `Traced::Other` or the end. The run's state is
/// written back to the core before `traced_one` (the thread may yield there and the event
/// loop reads the core) and read again after it, as `traced_hits` and its caller did.
/// `PAGED` and `LS` as for [`hit_run`]. The lines' size is the cache's; `PAGED` false
/// (`traced_run` found no TLB and no translation made) holds only while no reference
/// above 2^63 has been translated: after one (in `traced_one`) the loop returns
/// `Err(next)` for `traced_run` to choose again, as `traced_hits` chose per call. `Ok`:
/// the index of the first `Traced::Other`, or `items.len()`.
#[inline(never)]
fn run_loop<T, const PAGED: bool, const LS: u32>(
    ctx: &mut Ctx,
    items: &[T],
    from: usize,
    decode: &impl Fn(&T) -> Traced,
) -> Result<usize, usize> {
    // The L2 hits inside the run (`agent::l2_hit_in_run`) take the state; none while an
    // informing-miss handler is installed (`Ctx::l1d_miss_inline` traps after the miss).
    // So is a core whose misses are not blocking or not served by a private direct-mapped L2
    // (`agent::in_run_core`: fixed at its making).
    let st = if ctx.miss_handler.is_none() && crate::cpu::agent::in_run_core(ctx.core()) {
        ctx.st
    } else {
        std::ptr::null_mut()
    };
    // The records, for the scan of the thread's horizon at its yields (`Ctx::peek`), on
    // such a core in a run whose window takes horizons.
    // SAFETY: `st` is the thread's state.
    if !st.is_null() && unsafe { (*st).horizons } {
        ctx.peek = Some(Peek::new(items, decode, from));
        ctx.core().scan.valid = false;
    }
    let r = run_loop_body::<T, PAGED, LS>(ctx, st, items, from, decode);
    ctx.peek = None;
    r
}

/// [`run_loop`]'s loop.
#[inline(always)]
fn run_loop_body<T, const PAGED: bool, const LS: u32>(
    ctx: &mut Ctx,
    st: *mut State,
    items: &[T],
    mut from: usize,
    decode: &impl Fn(&T) -> Traced,
) -> Result<usize, usize> {
    loop {
        let c = ctx.core();
        let (j, missed) = if c.now < c.run_until {
            // `traced_run` found the L1 pair direct-mapped and the period above 0, which
            // stay so (a cache's geometry and a core's period are fixed at its making).
            hit_run_body::<T, PAGED, LS, true>(c, st, items, from, decode)
        } else {
            // The next record's first check leaves the thread (`traced_hits`' test).
            (from, End::Hits)
        };
        if let Some(pk) = ctx.peek.as_mut() {
            pk.from = j;
        }
        if let End::Served = missed {
            // The run ended at an L1 D miss it served from the L2 (`agent::l2_hit_in_run`)
            // whose stall reached the bound: the miss path's check after the miss.
            ctx.check();
            from = j;
        } else if let End::Miss(a, write) = missed {
            // The run ended at a data reference that misses the L1 D and nothing else
            // (`hit_run_body` took its instructions, retirement and counts): what
            // `traced_code` does after its L1 D test, the miss and the check (one call).
            if write {
                ctx.store_miss_check(a);
            } else {
                ctx.load_miss_check(a);
            }
            from = j;
        } else {
            let Some(item) = items.get(j) else {
                return Ok(j);
            };
            if !ctx.traced_one_inline(decode(item)) {
                return Ok(j);
            }
            from = j + 1;
        }
        if !PAGED {
            let t = &ctx.core().tlb;
            if t.last_data != 0 || t.last_instr != 0 {
                return Err(from);
            }
        }
    }
}

/// [`Ctx::traced_run`] on a core whose hits do more than count: every record one by one.
#[inline(never)]
fn one_by_one<T>(ctx: &mut Ctx, items: &[T], from: usize, decode: impl Fn(&T) -> Traced) -> usize {
    for (k, item) in items.iter().enumerate().skip(from) {
        if !ctx.traced_one(decode(item)) {
            return k;
        }
    }
    items.len()
}

/// [`hit_run`]'s body, in line in it and in [`run_loop`]. `IN_LOOP` (the caller is
/// `run_loop`) means two things. First, the caller has seen the L1 pair direct-mapped and
/// the period above 0 (after `traced_run`'s test), so they are not tested again: in a replay
/// of 16 threads the body is entered once per resumption, 28 M times for omp16's 39.9 M
/// records, and the four tests of the L1 pair and the period's were about 11 of its
/// instructions each time (issue 19, BENCHMARKS.md).
///
/// Second, the run may end at an L1 D miss. The body returns the index of the first record
/// not taken and, with `IN_LOOP`, the address and direction of the data reference that ended the run when the only reason was its L1 D
/// miss (within the budget, on the page, on one line): that record is then taken as far
/// as `traced_code` takes it before its miss (its instructions, its retirement, its
/// counts by size and as a reference, everything but the hit), the returned index is the
/// one after it, and the caller makes the miss and the check (`Ctx::load_miss_check`,
/// `Ctx::store_miss_check`). Before that, the body serves the miss itself when the miss
/// path would be the quiet L2 hit and nothing else (`agent::l2_hit_in_run`, given the
/// state `st`, null where it may not: no informing-miss handler): the same counts,
/// attribution, stall and fill, in the same order, and the run goes on when the stall
/// leaves the core's time before its bound (the miss path's check would not yield), or ends
/// there (`End::Served`: the caller's check yields, at the time the miss path yields). The
/// budget takes the stall as it takes instructions; `stalled` keeps the core's time and
/// instruction counts apart (the stall is charged to the core at once, by `Core::charge`).
/// Task perf19: 2.7 % of the simulation's instructions on `omp16.pmt`, results identical
/// (BENCHMARKS.md, "Issue 19: the L2 hit inside the run"). Without it the one-by-one path decoded the record again and repeated
/// its tests and counts, about 60 instructions per L1 miss, which in a replay of 16
/// threads on `numachine` ends nearly every run (omp16: 5.6 M of 8.1 M references miss;
/// issue 19, task omp19, BENCHMARKS.md).
#[inline(always)]
fn hit_run_body<T, const PAGED: bool, const LS: u32, const IN_LOOP: bool>(
    c: &mut Core,
    st: *mut State,
    items: &[T],
    from: usize,
    decode: &impl Fn(&T) -> Traced,
) -> (usize, End) {
    let l1 = if IN_LOOP {
        Cache::direct_pair_known(&c.l1d, &c.l1i)
    } else {
        let Some(l1) = Cache::direct_pair(&c.l1d, &c.l1i) else {
            return (from, End::Hits);
        };
        l1
    };
    let run = &items[from..items.len().min(from + MAX_RUN)];
    let data_page = Region::new(c.tlb.shift, c.tlb.last_data);
    let code_page = Region::new(c.tlb.shift, c.tlb.last_instr);
    let on = |page: Region, a: Addr| if PAGED { page.has(a) } else { (a as i64) >= 0 };
    let period = c.period;
    debug_assert!(!IN_LOOP || period != 0);
    if !IN_LOOP && period == 0 {
        return (from, End::Hits);
    }
    // The run-ahead test `n * period < left` (`left`: ticks from the core's time to the bound,
    // above 0 by `traced_hits`) as `n <= budget`, with `budget = (left - 1) / period` the
    // instructions the run may still retire: subtracting `n` from it is subtracting
    // `n * period` from `left`, so no multiply per record and no count of instructions.
    // With a period of one tick (`numachine`'s and `ideal`'s clocks: the tick is the
    // processor cycle) without the division: in a replay of 16 threads the body is entered
    // once per resumption, and a 64-bit division, one instruction for callgrind, takes tens
    // of cycles on the host (BENCHMARKS.md, "Issue 19: the cost of a resumption").
    let left = c.run_until - c.now - 1;
    let budget0 = if period == 1 { left } else { left / period };
    let mut budget = budget0;
    let shift = if LS == 0 { l1.line_shift } else { LS };
    debug_assert_eq!(shift, l1.line_shift);
    let line_bytes = 1u64 << shift;
    // Data references, stores (<< 21) and modifies (<< 42), by `write | modify << 1`.
    const ADD: [u64; 4] = [1, 1 + (1 << 21), 1 + (1 << 42), 1 + (1 << 21) + (1 << 42)];
    let mut counts = 0u64;
    // The records not yet taken (a pointer and a length, not an index besides).
    let mut rest = run;
    // `IN_LOOP`: the reference that ended the run by its L1 D miss alone, or the L2 hit
    // served in the run whose stall reached the bound.
    let mut missed = End::Hits;
    // `IN_LOOP`: the L1 D misses served in the run (`agent::l2_hit_in_run`), and the stall
    // cycles of those the run went on after, which the core's time has already
    // (`Core::charge`) and the budget too (`budget0 - budget - stalled` are instructions).
    let (mut served, mut stalled) = (0u64, 0u64);
    // (Read again after each of them: the L1 fill writes the tags it reads.)
    let mut l1 = l1;
    // A code block's counts go to the core at once (`l1i_hits`, `code_at`: one store each,
    // no register kept for them across the loop).
    while let Some((item, tail)) = rest.split_first() {
        match decode(item) {
            Traced::Data(TracedRef {
                write,
                modify,
                addr,
                size,
                before,
            }) => {
                let n = before + 1;
                let w = u64::from(write);
                // On one line: its first and last byte differ only in the offset bits.
                let last = addr + u64::from(size.max(1)) - 1;
                if n > budget || !on(data_page, addr) || (addr ^ last) >= line_bytes {
                    break;
                }
                let line = addr >> shift;
                let hit = l1.hit_d(line, w);
                if !hit && !IN_LOOP {
                    break;
                }
                budget -= n;
                counts += ADD[(w | u64::from(modify) << 1) as usize];
                c.cnt.by_size[w as usize][(size & 63) as usize] += 1;
                if !hit {
                    rest = tail;
                    // SAFETY: `st` is the thread's state, `c` its core, one of `st.cores`,
                    // and `l2_hit_in_run` reaches the cores only through the pointer (as
                    // `agent::l1_miss`); `l1` is read again before its next use.
                    let core: *mut Core = c;
                    if st.is_null()
                        || !crate::cpu::agent::l2_hit_in_run(
                            unsafe { &mut *st },
                            core,
                            addr,
                            line,
                            write,
                        )
                    {
                        missed = End::Miss(addr, write);
                        break;
                    }
                    l1 = Cache::direct_pair_known(&c.l1d, &c.l1i);
                    served += 1;
                    // The L2 hit's stall (`agent::l2_hit_quiet`'s charge): a run that reaches
                    // the bound with it ends here, as the miss path's check does.
                    let stall = c.timing.l2_hit;
                    if stall > budget {
                        missed = End::Served;
                        break;
                    }
                    budget -= stall;
                    stalled += stall;
                    continue;
                }
            }
            Traced::Code { addr, bytes } => {
                // Every line on the page of the last instruction translation (the first and
                // the last are, so those between are) and a hit.
                let end = addr + bytes.max(1) - 1;
                if !on(code_page, addr) || !on(code_page, end) {
                    break;
                }
                let (first, last) = (addr >> shift, end >> shift);
                let mut line = first;
                while line <= last && l1.hit_i(line) {
                    line += 1;
                }
                if line <= last {
                    break;
                }
                c.cnt.l1i_hits += last - first + 1;
                c.code_at = addr;
            }
            Traced::Other => break,
        }
        rest = tail;
    }
    let taken = run.len() - rest.len();
    if taken == 0 {
        return (from, End::Hits);
    }
    // What the records' `retire_n`, `retire` and counter increments added one by one.
    const FIELD: u64 = (1 << 21) - 1;
    let (data, writes, modifies) = (counts & FIELD, counts >> 21 & FIELD, counts >> 42);
    let insns = budget0 - budget - stalled;
    c.now += insns * period;
    let cnt = &mut c.cnt;
    for (class, n) in [
        (Class::Integer, insns - data),
        (Class::Load, data - writes),
        (Class::Store, writes),
    ] {
        cnt.instr[class as usize] += n;
        cnt.ps[class.ps() as usize] += n;
    }
    cnt.refs += data + modifies;
    cnt.l1d_hits += data - served - u64::from(matches!(missed, End::Miss(..)));
    (from + taken, missed)
}

/// How a run of hits ([`hit_run_body`]) ended.
#[derive(Clone, Copy)]
enum End {
    /// At a record it does not take (or the end of the records).
    Hits,
    /// `IN_LOOP`: at a data reference that misses the L1 D and nothing else, taken but for
    /// its miss (the caller's `Ctx::load_miss_check` or `store_miss_check`).
    Miss(Addr, bool),
    /// `IN_LOOP`: at an L1 D miss it served from the L2 (`agent::l2_hit_in_run`) whose stall
    /// brought the core's time to its bound (the caller's check yields).
    Served,
}

/// Whether a hit on core `c` does no more than count and take its cycle, so that runs of
/// hits can be taken in registers ([`Ctx::traced_hits`], [`Ctx::traced_run`]): an issue
/// width of one, no load slip, no write-through L1 D.
#[inline(always)]
fn hits_only_count(c: &Core) -> bool {
    c.issue_width == 1 && !c.write_through && c.timing.load_slip == 0
}

/// Whether core `c` translates addresses: without a TLB every address below 2^63 is in the
/// translated region, and the hit loops skip the page check.
#[inline(always)]
fn paged(c: &Core) -> bool {
    let t = &c.tlb;
    t.enabled() || t.last_data != 0 || t.last_instr != 0
}

/// Most records one horizon scan reads beyond what the thread's last scan read ([`horizon`]).
const MAX_SCAN: usize = 256;

/// How many run-ahead windows (`Inbound::resume_extra`) a horizon scan reads ahead at
/// least, whatever the next heavy event ([`Peek::scan`]).
const MIN_LEAD: Tick = 4;

/// Most records a saved scan keeps ([`Scan`]); past that the next scan starts afresh.
const MAX_SAVED: usize = 4096;

/// The records [`run_loop`] is taking, type-erased for the scan at a yield
/// ([`Ctx::peek`]): they live in the caller's frame, borrowed while `run_loop` runs.
#[derive(Clone, Copy)]
pub(crate) struct Peek {
    items: *const (),
    len: usize,
    decode: *const (),
    /// The record the thread is at (taken in part at most: a yield may come between its
    /// instructions and its access, or after it).
    pub(crate) from: usize,
    f: unsafe fn(&Peek, &mut Core, Tick) -> Tick,
}

impl Peek {
    fn new<T, D: Fn(&T) -> Traced>(items: &[T], decode: &D, from: usize) -> Peek {
        Peek {
            items: items.as_ptr() as *const (),
            len: items.len(),
            decode: decode as *const D as *const (),
            from,
            f: scan_erased::<T, D>,
        }
    }

    /// The thread's horizon ([`horizon`]) from its record `from` on.
    ///
    /// # Safety
    /// While the `run_loop` that made it runs (its records and decoder are borrowed).
    pub(crate) unsafe fn scan(&self, ctx: &mut Ctx) -> Tick {
        // A horizon past the next heavy event's bound lowers no other thread's bound now
        // (that event's is the lower), so the scan stops there, but reads at least
        // `MIN_LEAD` windows ahead: the heavy event will be gone when the others' bounds
        // are next taken, and a horizon at the thread's time would then be no better than
        // its resumption's own term.
        let now = ctx.core().now;
        let st = ctx.state();
        let lead = now + MIN_LEAD * st.inbound.resume_extra;
        let limit = match st.q.peek_time() {
            Some(x) => {
                st.q.first_heavy(x, Tick::MAX)
                    .saturating_sub(st.inbound.issue_extra)
            }
            None => Tick::MAX,
        };
        // SAFETY: the caller's.
        unsafe { (self.f)(self, ctx.core(), limit.max(lead)) }
    }
}

unsafe fn scan_erased<T, D: Fn(&T) -> Traced>(pk: &Peek, c: &mut Core, limit: Tick) -> Tick {
    // SAFETY: the caller's (`Peek::scan`).
    let items = unsafe { std::slice::from_raw_parts(pk.items as *const T, pk.len) };
    let decode = unsafe { &*(pk.decode as *const D) };
    if paged(c) {
        horizon::<T, true>(c, items, pk.from, decode, limit)
    } else {
        horizon::<T, false>(c, items, pk.from, decode, limit)
    }
}

/// The thread's horizon: a time before which the thread, resumed at its time, sends no
/// request and takes no record that could act on another processor, if nothing is
/// delivered to its caches before then (`sim`, "The thread's horizon"). Read from its next
/// records: the time their instructions and L1 misses take while each line they touch hits
/// its L1 or, quietly, its private direct-mapped L2 (`agent::l2_hit_in_run`'s hit: any
/// valid state to read, modified to write), up to the first that does not, a record of
/// another kind, a page the last translations do not cover, or `limit`. The L1s are read
/// through what the scan itself would fill ([`Scan`]), so each answer is what the thread
/// would meet. The record the thread is at may be taken in part: its time is not counted,
/// its lines are tested. A scan saved at an earlier yield is read on ([`Scan`]). `PAGED` as
/// for [`hit_run`].
#[inline(always)]
fn horizon<T, const PAGED: bool>(
    c: &mut Core,
    items: &[T],
    from: usize,
    decode: &impl Fn(&T) -> Traced,
    limit: Tick,
) -> Tick {
    let now = c.now;
    let data_page = Region::new(c.tlb.shift, c.tlb.last_data);
    let code_page = Region::new(c.tlb.shift, c.tlb.last_instr);
    let on = |page: Region, a: Addr| if PAGED { page.has(a) } else { (a as i64) >= 0 };
    let (period, stall) = (c.period, c.timing.l2_hit * c.period);
    let Core {
        l1d, l1i, l2, scan, ..
    } = c;
    let Some(l1) = Cache::direct_pair(l1d, l1i) else {
        return now;
    };
    if l2.ways() != 1 {
        return now;
    }
    let at = items.as_ptr() as usize;
    // Read on from the saved scan, or start afresh at the thread's record.
    let saved = scan.valid
        && scan.items == at
        && from >= scan.first
        && from < scan.first + scan.len
        && scan.len + MAX_SCAN <= MAX_SAVED;
    if saved {
        let base = scan.cum[from - scan.first];
        let h = now + (scan.cum[scan.len - 1] - base);
        if !scan.open || h >= limit {
            return h;
        }
    } else {
        if scan.d.len() != l1.sets() {
            scan.d = vec![(0, 0); l1.sets()];
            scan.i = vec![(0, 0); l1.sets()];
            scan.cum = vec![0; MAX_SAVED];
            scan.stamp = 0;
        }
        scan.stamp = scan.stamp.wrapping_add(1);
        if scan.stamp == 0 {
            scan.d.fill((0, 0));
            scan.i.fill((0, 0));
            scan.stamp = 1;
        }
        scan.valid = true;
        scan.items = at;
        scan.first = from;
        scan.len = 0;
    }
    let g = scan.stamp;
    let shift = l1.line_shift;
    let Scan {
        d,
        i,
        cum,
        len,
        first,
        open,
        ..
    } = scan;
    // One record's least ticks when it is taken (`first`: the record the thread is at,
    // whose ticks are not counted), and whether the scan stops at it.
    let mut step = |item: &T, first: bool| -> (Tick, bool) {
        match decode(item) {
            Traced::Data(r) => {
                let t = if first { 0 } else { (r.before + 1) * period };
                let last = r.addr + u64::from(r.size.max(1)) - 1;
                if (r.addr ^ last) >> shift != 0 || !on(data_page, r.addr) {
                    return (t, true);
                }
                let line = r.addr >> shift;
                let w = u64::from(r.write);
                let s = l1.set(line);
                // SAFETY: `set` is below the L1's sets, the length of `d` (above).
                let slot = unsafe { d.get_unchecked_mut(s) };
                let hit = if slot.0 == g {
                    crate::cache::DirectPair::entry_hits(slot.1, line, w)
                } else {
                    l1.hit_d(line, w)
                };
                if hit {
                    return (t, false);
                }
                // The L2's quiet hit (`agent::l2_hit_quiet`).
                match l2.find_state_direct(r.addr >> l2.line_shift) {
                    Some((_, state)) if crate::cpu::agent::l2_state_serves(state, r.write) => {
                        *slot = (g, line << 2 | state);
                        (if first { t } else { t + stall }, false)
                    }
                    // The request leaves after the L2 lookup (`agent::l1_miss_full`).
                    _ => (t + stall, true),
                }
            }
            Traced::Code { addr, bytes } => {
                let end = addr + bytes.max(1) - 1;
                if !on(code_page, addr) || !on(code_page, end) {
                    return (0, true);
                }
                let (mut line, last) = (addr >> shift, end >> shift);
                loop {
                    let s = l1.set(line);
                    // SAFETY: as for `d`.
                    let slot = unsafe { i.get_unchecked_mut(s) };
                    let hit = if slot.0 == g {
                        crate::cache::DirectPair::entry_hits(slot.1, line, 0)
                    } else {
                        l1.hit_i(line)
                    };
                    if !hit {
                        match l2.find_state_direct(line << shift >> l2.line_shift) {
                            Some((_, state))
                                if crate::cpu::agent::l2_state_serves(state, false) =>
                            {
                                *slot = (g, line << 2 | crate::cache::SHARED);
                            }
                            _ => return (stall, true),
                        }
                    }
                    if line == last {
                        break (0, false);
                    }
                    line += 1;
                }
            }
            Traced::Other => (0, true),
        }
    };
    // `t`: ticks from the end of the saved scan's first record; the horizon is `now` plus
    // `t` less what the thread has taken of them (`base`, the ticks through its record;
    // 0 for a fresh scan, whose first record is the thread's, pushed with 0).
    let mut k = *first + *len;
    let mut n = *len;
    let mut t = if n == 0 { 0 } else { cum[n - 1] };
    let base = if from - *first < n {
        cum[from - *first]
    } else {
        0
    };
    let limit_t = limit.saturating_sub(now).saturating_add(base);
    let end = items.len().min(k + MAX_SCAN);
    // `cum` is `MAX_SAVED` long and `n` stays below `len + MAX_SCAN`, at most `MAX_SAVED`
    // (a saved scan is read on only below that, above).
    debug_assert!(cum.len() == MAX_SAVED && n + (end - k) <= MAX_SAVED);
    let cum = cum.as_mut_ptr();
    let (mut stopped, mut at_limit) = (false, false);
    while k < end {
        if t >= limit_t {
            at_limit = true;
            break;
        }
        // SAFETY: `k < end <= items.len()`; `n < MAX_SAVED` (above). A fresh scan's first
        // record (`n == 0`) is the thread's own, its ticks not counted.
        let (dt, stops) = step(unsafe { items.get_unchecked(k) }, n == 0);
        t += dt;
        unsafe { *cum.add(n) = t };
        n += 1;
        k += 1;
        if stops {
            stopped = true;
            break;
        }
    }
    *len = n;
    // Open: the scan stopped at the limit or its length, not at a record that may send
    // (the records' end is not open: the next come in another call).
    *open = at_limit || (!stopped && end < items.len());
    now + (t - base)
}
