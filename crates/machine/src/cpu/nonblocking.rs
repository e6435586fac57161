//! Non-blocking loads with hit-under-miss (`[cpu.nonblocking]`), and the total and apparent
//! miss cycles of seed 000's Table 4.10 items 18 and 19.
//!
//! The R4400 "has a simple pipeline with no latency-hiding mechanisms" (Table 4.10, item 19:
//! n/a), so on its presets every L2 miss stalls the pipeline until the data arrives and the
//! apparent miss cycles (the stall cycles the processor sees) are the total miss cycles (the
//! misses' latency). A core with `[cpu.nonblocking] mshrs = 1` hides part of the latency:
//!
//! - a *plain* load (`Ctx::load`, `load_n`, traced loads) that misses the L2 sends its request
//!   and the thread goes on (`Core::under_miss`); the line is filled when the data arrives;
//! - hits proceed under the miss: L1 hits, and L1 misses the L2 serves;
//! - the loaded value is *used*, and the thread stalls until the data arrives, at the first of:
//!   an access that needs the external agent (a second miss, including one to the line being
//!   filled, an uncached access, an instruction-cache miss the L2 cannot serve: one MSHR, so
//!   the agent is busy); a value operation (`load_value`, stores of values, atomics, spin and
//!   sleep waits, and so locks and barriers, which read the values they synchronize on); an
//!   explicit `Ctx::use_loads` (a program says where a register loaded earlier is read); the
//!   end of the thread.
//! - Instructions without memory operands (`int`, `fp`, `compute`, branches) do not wait:
//!   pmusim's programs do not say which register an instruction reads, so every computation is
//!   taken to be independent of the outstanding load. This is the optimistic bound of what the
//!   mechanism can hide; a program that computes on the loaded value at once calls
//!   `Ctx::use_loads` there.
//! - A load to the line being filled waits for the fill and then reads the line: the hit it
//!   is on a blocking core, so both count the same L1 misses.
//! - With `stores = true` (`flash-r10k`) a plain store (`Ctx::store`, `store_n`) that misses
//!   the L2, or finds its line read-only, goes the same way: its read-exclusive or upgrade
//!   leaves and the thread goes on (the store waits in a write buffer for its ownership; the
//!   store has no value, so nothing reads it). The same use points end it; a second access to
//!   the line waits for the fill and then hits the line, now writable.
//! - A memory fence (FlashPoint's before a procedure command, `Ctx::procedure_command`) is a
//!   use point: it drains the outstanding miss, then stalls its fixed cycles (the R10000's
//!   SYNC graduates once every earlier load and store has completed).
//! - Loads that return a value (synchronization), informing loads (the program branches on
//!   where the load was served), exception handlers' references (the TLB refill reads its
//!   PTEs at once) and loads under an informing-miss handler (which runs after the data
//!   arrives) block as before. Cores with several hardware contexts or software
//!   threads keep blocking loads (they switch to another thread on a miss instead).
//!
//! - **Several MSHRs** (`mshrs` 2..=4, FLASH only; `flash-r10k` has the R10000's 4): a miss
//!   under misses. The external agent keeps `Core::pend` (the newest transaction) and
//!   `Core::others` (the older ones); a response, NACK or cancellation names its line and is
//!   handled with its transaction made the front (`agent::with_front`), a back-off's retry
//!   finds its transaction by its due time, invalidations and interventions look at every
//!   transaction (`agent::pending_for`), and an intervention deferred for a line runs after
//!   that line's fill. A plain load to a line with a fill outstanding, or a plain store to a
//!   line whose ownership is outstanding, joins that transaction and the thread goes on (the
//!   R10000's address queue holds it until the refill). The thread waits (`Ctx::wait_mshr`)
//!   for a free MSHR (a fifth miss), for the outstanding transaction of a line in the same
//!   L2 set (the same line: a store to a line being read; another line: the fill's victim
//!   could be a line whose upgrade is outstanding: our choice, no R10000 source), and, as
//!   with one
//!   MSHR, for every outstanding miss at a use point (a value operation, an uncached access
//!   such as FlashPoint's commands, a fence, an instruction-cache miss the L2 cannot serve,
//!   `Ctx::use_loads`, the thread's end). Off (`mshrs = 1`) these paths are not entered and
//!   every run is what it was (golden runs identical). Machines with a bus-error time-out
//!   (NUMAchine) keep one MSHR: the timer, the held response and the re-issue are per core.
//! - **The active list** (`active_list`, `address_queue`; 0 = no limit; inert with one MSHR):
//!   the R10000 graduates in order from a 32-entry active list, and keeps every load and
//!   store in its 16-entry address queue until it graduates; a load or store that misses
//!   "waits until [its refill] has completed" (User's Manual 2.0, 1.4 "Address Queue"). So
//!   the oldest outstanding miss holds graduation, and once 32 instructions (16 loads and
//!   stores) have been decoded after it nothing later issues. Here each miss records where
//!   it stands in the thread's retired instructions (`Pending::seq`), and a further miss
//!   waits (`Ctx::wait_mshr`) while the oldest one has the window full behind it. Checked
//!   where a miss would leave (what the protocol processors see), not at every
//!   instruction: ALU work and hits past the window still run under the miss (optimistic,
//!   as the dependence rule above). Applies to loads and stores alike (both wait in the
//!   address queue for their refill).
//! - **Blocking loads over a write buffer** (`loads = false`, with `stores = true`; `mshrs`
//!   1..=16 are then the buffer's entries, a load taking one while it waits; FLASH only
//!   above 1; the experiment `docs/flashpoint/flash-wb.toml`, issue 20): the processor model
//!   of the Stanford simulators of seed 004's time as the lead to test (the seed does not
//!   describe Tango-Lite's): reads block, writes retire into a write buffer and are
//!   pipelined, a read bypasses the buffered writes (release consistency). A plain load
//!   that misses waits (`Ctx::wait_mshr`) only for a free entry or a transaction of a line
//!   of its L2 set (its own line: a buffered store's ownership, after which it hits), then
//!   its request leaves beside the stores and the thread waits for *that* transaction's
//!   data (`Ctx::load_miss_over_stores`), the stores staying outstanding. With nothing
//!   outstanding it is the blocking core's miss. Stores go as above; the use points (value
//!   operations, so locks and barriers, uncached accesses, fences, the thread's end) drain
//!   every outstanding store as before. `loads = true` (the default, not serialized):
//!   every run is what it was (golden runs identical).
//!
//! The accounting (`Counters::miss_cycles`, `Counters::miss_stall_cycles`) is per L2-miss
//! transaction on a single-thread core: its *span* runs from the request leaving the core
//! (`Pending::issued`, after the L2 tag check) to its data, or to a bus error, after which the
//! re-issue starts a new span. The total adds each span; the apparent adds the
//! multiprocessing-stall cycles the thread was charged while it waited for the span's end. On
//! a blocking core the thread waits from the span's start, so the two are equal by
//! construction; under a non-blocking load it waits only from the use point, if the data has
//! not arrived by then.

use super::{Core, Pending};
use crate::cpu::pipeline::Ps;
use engine::Tick;

/// The span of `pd` ends at `t` (its data, or a bus error): counts the total miss cycles.
#[inline(always)]
pub fn end_span(c: &mut Core, pd: &Pending, t: Tick) {
    c.cnt.miss_cycles += t.saturating_sub(pd.issued).div_ceil(c.period);
}

/// The thread waits for the end of a span at `t` (it blocked on the miss, or used the loaded
/// value before the data arrived): the multiprocessing stall it sees, counted as apparent
/// miss cycles.
#[inline(always)]
pub fn wait_until(c: &mut Core, t: Tick) {
    if t > c.now {
        // `Core::stall_until`, with the stall counted as apparent miss cycles too.
        let cycles = (t - c.now).div_ceil(c.period);
        c.charge(Ps::MultiprocessingStall, cycles);
        c.cnt.miss_stall_cycles += cycles;
    }
}
