//! The external agent: everything a processor does beyond an L1 hit.
//!
//! - An L1 miss that hits the L2 is served inline (no event): the L1 is filled from the L2.
//! - An L2 miss (or a write to a shared line) becomes a pending transaction, issued as an event
//!   at the processor's local time; the thread blocks until the response is installed.
//! - Responses, NACKs (retry after a random back-off; a bus error after the time-out), upgrade
//!   cancellations (re-issued as read-exclusive), invalidations and interventions arriving from
//!   the memory system are handled here, with the observations monitors need.
//!
//! The victim of an L2 fill is chosen when the response arrives (the thread is blocked, so
//! nothing else uses the set meanwhile); a dirty victim goes to the write-back buffer and stays
//! there, answering interventions, until its home acknowledges it.

use super::{pipeline::Ps, Block, Core, Op, Pending, Rmw};
use crate::addr::Addr;
use crate::cache::{Cache, INVALID, MODIFIED, SHARED};
use crate::event::{Ev, PRIO_DELIVER, PRIO_SYS};
use crate::msg::{ProcMsg, SysMsg};
use crate::probe::{Cmd, CoreEvent, InboundKind, MissType, Observation, Outcome, RespState};
use crate::state::State;
use crate::uncached::Owner;
use engine::Tick;

fn line_addr(c: &Core, line: u64) -> Addr {
    line << c.lpl().line_shift
}

/// Performs `op` on the data word of L2 slot `slot` at time `t`; returns the value loaded (the
/// old value for stores and atomics).
pub fn perform(st: &mut State, p: usize, slot: usize, op: Op, a: Addr, t: Tick) -> u64 {
    // A store conditional stores only while its thread holds the reservation (`reserve`).
    let conditional = match op {
        Op::Rmw(Rmw::StoreConditional, _, hw) => Some(conditional(st, p, a, hw)),
        _ => None,
    };
    let c = &mut st.cores[p];
    let old = c.values[slot];
    let (new, store) = match op {
        Op::Load | Op::IFetch => (old, false),
        Op::Store(None) => (old, false),
        Op::Store(Some(v)) => (v, true),
        Op::Rmw(Rmw::StoreConditional, x, _) if conditional == Some(true) => (x, true),
        Op::Rmw(Rmw::StoreConditional, ..) => (old, false),
        Op::Rmw(f, x, y) => (f.apply(old, x, y), true),
    };
    c.values[slot] = new;
    if store && st.resv.on {
        let line = a >> c.lpl().line_shift;
        st.resv.store(line, t);
    }
    if store && c.multi {
        let line = a >> c.lpl().line_shift;
        crate::sched::exec::line_changed(st, p, line, t);
    }
    if st.value_probes {
        let proc = p as u16;
        if matches!(op, Op::Load | Op::Rmw(..)) {
            st.observe_now(Observation::LoadPerformed {
                proc,
                t,
                addr: a,
                value: old,
            });
        }
        if store {
            st.observe_now(Observation::StorePerformed {
                proc,
                t,
                addr: a,
                value: new,
            });
        }
    }
    conditional.map_or(old, u64::from)
}

/// A store conditional of hardware thread `hw` performs on core `p` (`cpu::reserve`):
/// whether it stores, i.e. `hw` still holds its reservation on `a`'s line. The reservation is
/// used up either way.
fn conditional(st: &mut State, p: usize, a: Addr, hw: u64) -> bool {
    let line = a >> st.cores[p].lpl().line_shift;
    let hw = hw as usize;
    let ok = st.resv.holds_line(hw, line);
    st.resv.clear(hw);
    ok
}

/// Installs the L1 line holding `a` (instruction or data) from the L2 line in `state`. On a
/// core without a private L2 a data line is already in place (the L1 D is the last private
/// level) and an instruction line is installed from the data received.
#[inline(always)]
fn fill_l1(c: &mut Core, a: Addr, ifetch: bool, l2_state: u64) {
    if !ifetch && !c.private_l2 {
        return;
    }
    let l1: &mut Cache = if ifetch { &mut c.l1i } else { &mut c.l1d };
    let line = a >> l1.line_shift;
    let st = if ifetch { SHARED } else { l2_state };
    l1.fill(line, st);
}

/// Removes the L1 copies of L2 line `line2` (inclusion), or makes them read-only. Without a
/// private L2 the state was set in the L1 D itself, and the L1 I's copy goes with it.
fn l1_sublines(c: &mut Core, line2: u64, to: u64) {
    let shift2 = c.lpl().line_shift;
    let private = c.private_l2;
    for (k, l1) in [&mut c.l1i, &mut c.l1d].into_iter().enumerate() {
        if k == 1 && !private {
            continue;
        }
        for sub in l1.sublines(line2, shift2) {
            if let Some(s) = l1.find(sub) {
                if l1.state(s) > to {
                    l1.set_state(s, to);
                }
            }
        }
    }
}

fn set_l2_state(st: &mut State, p: usize, slot: usize, new: u64, t: Tick) {
    let c = &mut st.cores[p];
    let old = c.lpl().state(slot);
    let line = c.lpl().line_at(slot).expect("slot holds a line");
    c.lpl_mut().set_state(slot, new);
    if new < old {
        l1_sublines(c, line, new);
    }
    if st.line_probes {
        let c = &st.cores[p];
        let o = Observation::LineState {
            proc: p as u16,
            t,
            line_addr: line_addr(c, line),
            old: old as u8,
            new: new as u8,
            value: c.values[slot],
        };
        st.observe_now(o);
    }
}

/// Fills in an `L2Access`'s `index_invalid` (as the probe read the set of `line`) when some
/// probe reads it.
#[inline(always)]
fn with_index_state(st: &State, p: usize, mut o: Observation, line: u64) -> Observation {
    if st.l2_index_probes {
        if let Observation::L2Access { index_invalid, .. } = &mut o {
            *index_invalid = st.cores[p].lpl().set_has_invalid(line);
        }
    }
    o
}

/// The attribution of an L1 miss of core `p` at `a` (`l1_misses::READ`, `WRITE`, `FETCH`):
/// a traced thread's procedure becomes its current code block (`code_blocks`), and the
/// ground truth counts the miss for the structure holding `a` and that procedure.
#[inline(always)]
pub(crate) fn attribute_l1_miss(st: &mut State, p: usize, a: Addr, kind: usize) {
    let c = &mut st.cores[p];
    if c.fetch_step == 0 {
        if c.code_proc.0 != c.code_at {
            c.code_proc = (
                c.code_at,
                st.code_blocks.procedure(c.code_at, &mut st.procedures),
            );
        }
        c.procedure = c.code_proc.1;
    }
    let procedure = c.procedure;
    if let Some(gt) = st.truth.as_mut() {
        gt.l1.miss(a, kind, procedure, &st.map);
    }
}

/// An L1 miss at the processor's local time. Returns true if the L2 served it inline; false if
/// the thread must block (a transaction is pending). In line at its callers (the core's
/// out-of-line miss paths, `Ctx::load_miss` and `Ctx::store_miss` the most frequent): the
/// quiet L2 hit then costs no call of its own (its entry and exit, with six registers saved
/// and restored, were about 16 of its instructions, BENCHMARKS.md).
///
/// `core` is processor `p`'s core, `&mut st.cores[p]` (the thread's `Ctx::core`): the quiet
/// L2 hit works on it without indexing the cores (a bounds test and a multiply by the
/// core's size, about 8 instructions per L1 miss; task omp19).
#[inline(always)]
pub fn l1_miss(st: &mut State, core: *mut Core, p: usize, a: Addr, op: Op) -> bool {
    debug_assert!(std::ptr::eq(core, &st.cores[p]));
    if !st.core_events_on && !st.value_probes && l2_hit_quiet::<false>(st, core, a, op, 0) {
        return true;
    }
    l1_miss_full(st, p, a, op)
}

/// An L1 D miss of a plain load (`write` false) or store inside a run of hits
/// (`cpu::hits::run_loop`), served by the quiet L2 hit when the thread's miss path
/// (`Ctx::load_miss_check`, `Ctx::store_miss_check`) would come to it without doing anything
/// else first: a blocking miss (`Ctx::nonblocking_miss`, `Ctx::store_miss_inline`: no
/// non-blocking loads or stores, no write-through store), no sibling's transaction to wait
/// for (`Ctx::wait_agent`), no core events or value probes (`l1_miss`). The caller has
/// checked that no informing-miss handler is installed (`Ctx::l1d_miss_inline`). Returns
/// true when it served the miss exactly as that path does (counts, attribution, the L2
/// hit's stall charged to the core, the L1 fill); false, having changed nothing, when the
/// miss is the miss path's to take (`l2_hit_quiet`'s contract).
///
/// *Why* (issue 19, task perf19): in a replay of 16 threads on `numachine` about 70 % of
/// omp16's references miss the L1 D and hit the L2 (4.74 M misses in the run loop), and
/// after about 3 of 5 such misses the thread is still inside its run-ahead bound: each
/// went back through the run's write-back, the miss call (`Ctx::load_miss_check`) and the
/// run's set-up again, which the run now keeps going without. In line in the run: as a
/// call of its own (its frame, six registers) the cut was 1.0 % of the simulation's
/// instructions on `omp16.pmt`, in line 2.7 %, the hit path's unchanged (BENCHMARKS.md,
/// "Issue 19: the L2 hit inside the run").
///
/// `line` is `a`'s line in the L1 D. The core's own conditions, fixed at its making, are
/// the caller's to test once ([`in_run_core`]); with them the L2 and the L1 D are
/// direct-mapped and looked up and filled without the way and bounds tests, and the L2 is
/// the last private level (`Core::lpl`) without its test (about 20 instructions per miss,
/// 3 % of the simulation's on `omp16.pmt`; BENCHMARKS.md, "Issue 19: the L2 hit inside the
/// run").
#[inline(always)]
pub(crate) fn l2_hit_in_run(
    st: &mut State,
    core: *mut Core,
    a: Addr,
    line: u64,
    write: bool,
) -> bool {
    // SAFETY: `core` is one of `st.cores` (the caller's thread's core), as in `l1_miss`.
    let c = unsafe { &*core };
    debug_assert!(in_run_core(c) && line == a >> c.l1d.line_shift);
    if c.pend.is_some() || st.core_events_on || st.value_probes {
        return false;
    }
    let op = if write { Op::Store(None) } else { Op::Load };
    l2_hit_quiet::<true>(st, core, a, op, line)
}

/// Whether core `c`'s L1 D misses may be served inside a run of hits ([`l2_hit_in_run`])
/// as far as the core itself goes: blocking loads and stores (`Ctx::nonblocking_miss`,
/// `Ctx::store_miss_inline`), no write-through store (`Ctx::l1d_miss_quiet`), a private
/// direct-mapped L2 (the L1 D's geometry is the run's own test). All fixed at the core's
/// making, so tested once per run loop.
#[inline(always)]
pub(crate) fn in_run_core(c: &Core) -> bool {
    !c.nonblocking && !c.nonblocking_stores && !c.store_through && c.private_l2 && c.l2.ways() == 1
}

/// Whether an L2 line in `state` serves an L1 miss without a request: any valid state for a
/// read or a fetch, modified for a write ([`l2_hit_quiet`]; the horizon scan,
/// `hits::horizon`, tests the same).
#[inline(always)]
pub(crate) fn l2_state_serves(state: u64, write: bool) -> bool {
    // One test for a write's, two for a read's (the scan's loop took 6 % more
    // instructions with a branch on `write` first).
    state == MODIFIED || (!write && state != INVALID)
}

/// [`l1_miss`]'s most common case, the L2 hit of a plain load, store or instruction fetch
/// while no probe looks at L2 accesses or core events and none wants values: the same
/// counts, attribution, charge, L1 fill and result as [`l1_miss_full`] takes for it, in the
/// same order where the order matters (the attribution reads the core's code block before
/// anything else changes the core). Returns false, having changed nothing, for anything
/// else (the L2 lookup before it is only a read), which `l1_miss_full` then takes.
///
/// *Why*: `l1_miss_full` indexes the cores again after each step that borrows the whole
/// state (the attribution, the counters, the probe test), with a bounds check and the
/// core's address each time, and builds the general path's values (the op's kind, the
/// observation's fields) before it knows the access hits; a 16-thread replay on
/// `numachine`, whose L1 misses are nearly all L2 hits (5.93 M of 5.97 M for pthreads16),
/// spent about 258 instructions per L1 miss there (issue 19, BENCHMARKS.md). Here the
/// state's fields are borrowed apart once and the core indexed once.
///
/// `IN_RUN`: for [`l2_hit_in_run`] (a load or store, the core [`in_run_core`], the L1 D
/// direct-mapped, `l1_line` the miss's L1 D line); else `l1_line` is unused.
#[inline(always)]
fn l2_hit_quiet<const IN_RUN: bool>(
    st: &mut State,
    core: *mut Core,
    a: Addr,
    op: Op,
    l1_line: u64,
) -> bool {
    use crate::l1_misses::{FETCH, READ, WRITE};
    let (ifetch, write, kind) = match op {
        Op::Load => (false, false, READ),
        Op::Store(None) => (false, true, WRITE),
        Op::IFetch => (true, false, FETCH),
        _ => return false,
    };
    let k = crate::probe::kind::L2_ACCESS;
    if (st.interests.any | st.interests.pipeline_before) & k != 0 || !st.sig.actions.is_empty() {
        return false;
    }
    let State {
        truth,
        map,
        code_blocks,
        procedures,
        any_probe,
        ..
    } = st;
    // SAFETY: `core` is one of `st.cores` (`l1_miss`), which this function reaches only
    // through it; as for `Ctx::core`, the cores live as long as the state.
    let c = unsafe { &mut *core };
    // Without a private L2 an instruction line is never in the last private level.
    if ifetch && !c.private_l2 {
        return false;
    }
    let lpl = if IN_RUN { &c.l2 } else { c.lpl() };
    let line = a >> lpl.line_shift;
    let found = if IN_RUN {
        lpl.find_state_direct(line)
    } else {
        lpl.find_state(line)
    };
    let Some((slot, state)) = found else {
        return false;
    };
    if !l2_state_serves(state, write) {
        return false;
    }
    // `attribute_l1_miss`.
    if c.fetch_step == 0 {
        if c.code_proc.0 != c.code_at {
            c.code_proc = (c.code_at, code_blocks.procedure(c.code_at, procedures));
        }
        c.procedure = c.code_proc.1;
    }
    if let Some(gt) = truth.as_mut() {
        gt.l1.miss(a, kind, c.procedure, map);
    }
    if ifetch {
        c.cnt.l1i_misses += 1;
    } else {
        c.cnt.l1d_misses += 1;
    }
    c.cnt.l2_hits += 1;
    let l2_hit = c.timing.l2_hit;
    charge_l1_miss(c, ifetch, l2_hit);
    if IN_RUN {
        // `fill_l1` of a data line with a private L2, into a direct-mapped L1 D.
        c.l1d.fill_direct(l1_line, state);
    } else {
        fill_l1(c, a, ifetch, state);
    }
    // `State::observe_l2_access` with nothing looking.
    if *any_probe {
        if let Some(gt) = truth.as_mut() {
            gt.l2_accesses += 1;
        }
    }
    // What `perform` does for these ops when no probe wants values.
    c.result = c.values[slot];
    true
}

/// Charges an L1 miss's stall cycles to the pipeline state of its cache (instruction or
/// data); shared by the quiet L2 hit and the full path so that both charge alike.
#[inline(always)]
fn charge_l1_miss(c: &mut Core, ifetch: bool, cycles: u64) {
    c.charge(
        if ifetch {
            Ps::PrimaryICacheStall
        } else {
            Ps::PrimaryDCacheStall
        },
        cycles,
    );
}

/// [`l1_miss`] in full: every op, L2 hits and misses, with probes and core events.
#[inline(never)]
fn l1_miss_full(st: &mut State, p: usize, a: Addr, op: Op) -> bool {
    let ifetch = op == Op::IFetch;
    let write = matches!(op, Op::Store(_) | Op::Rmw(..));
    use crate::l1_misses::{FETCH, READ, WRITE};
    let kind = match (ifetch, write) {
        (true, _) => FETCH,
        (false, true) => WRITE,
        (false, false) => READ,
    };
    attribute_l1_miss(st, p, a, kind);
    let c = &mut st.cores[p];
    if ifetch {
        c.cnt.l1i_misses += 1;
    } else {
        c.cnt.l1d_misses += 1;
    }
    if st.core_events_on {
        let (t, who) = (c.now, c.origin());
        let e = match (ifetch, write) {
            (true, _) => CoreEvent::Il1Miss,
            (false, false) => CoreEvent::LoadMiss,
            (false, true) => CoreEvent::StoreMiss,
        };
        st.core_event(t, who, e, 1);
    }
    let c = &mut st.cores[p];
    let lpl = c.lpl();
    let line = a >> lpl.line_shift;
    let index = lpl.set_of(line) as u32;
    // Without a private L2 an instruction line is never in the last private level (the L1 D).
    let slot = if ifetch && !c.private_l2 {
        None
    } else {
        lpl.find(line)
    };
    let state = slot.map(|s| lpl.state(s)).unwrap_or(INVALID);
    let hit = if write {
        state == MODIFIED
    } else {
        state != INVALID
    };
    let l2_hit = c.timing.l2_hit;
    let t = c.now;
    // Made only when some probe looks (`st.any_probe`): most runs have none, and building it
    // on every L1 miss cost a fused python3 replay about 16 instructions per miss. The
    // origin (`who`) too is read only where it is used: building it on every miss cost a
    // fused replay of 16 threads about 40 instructions per L2-served miss (BENCHMARKS.md).
    let obs = move |who| Observation::L2Access {
        proc: p as u16,
        t,
        addr: a,
        index,
        write,
        ifetch,
        hit,
        index_invalid: false,
        who,
    };
    if hit {
        c.cnt.l2_hits += 1;
        charge_l1_miss(c, ifetch, l2_hit);
        fill_l1(c, a, ifetch, state);
        if st.core_events_on {
            let e = if ifetch {
                CoreEvent::Il1MissCycles
            } else {
                CoreEvent::DataMissCycles
            };
            let who = st.cores[p].origin();
            st.core_event(t, who, e, l2_hit);
        }
        if st.any_probe {
            st.observe_l2_access(|st| with_index_state(st, p, obs(st.cores[p].origin()), line));
        }
        let slot = slot.unwrap();
        st.cores[p].result =
            if !st.value_probes && matches!(op, Op::Load | Op::IFetch | Op::Store(None)) {
                // What `perform` does for these (the most common L2 hits) when no probe wants
                // the values: the slot's value, unchanged (about 50 instructions per L2 hit).
                st.cores[p].values[slot]
            } else {
                let t = st.cores[p].now;
                perform(st, p, slot, op, a, t)
            };
        return true;
    }
    c.cnt.l2_misses += 1;
    c.charge(Ps::SecondaryCacheStall, l2_hit);
    let cmd = if write && state == SHARED {
        Cmd::Upgrade
    } else if write {
        Cmd::ReadEx
    } else {
        Cmd::Read
    };
    let miss_type = match (cmd, state, slot.is_some()) {
        (Cmd::Upgrade, _, _) => MissType::SuccessfulOwnership,
        (_, INVALID, true) => MissType::Invalidation,
        _ => MissType::Other,
    };
    let now = c.now;
    let who = c.origin();
    if c.pend.is_some() {
        push_older(c);
    }
    c.pend = Some(Pending {
        op,
        addr: a,
        line,
        cmd,
        issued: now,
        first_nack: 0,
        nacks: 0,
        inval_seen: false,
        miss_type,
        // Decided when the request leaves (`issue`), in the event loop's order: a first
        // touch decided here, by a thread running ahead, would depend on which thread the
        // loop ran first (the `sim` module's documentation).
        home: u16::MAX,
        attempt: now,
        deadline: 0,
        in_flight: false,
        retry_at: 0,
        reissue_at: None,
        size: 8,
        wdata: None,
        stall_from: now,
        phase: c.phase,
        procedure: c.procedure,
        who,
        seq: (0, 0),
    });
    c.block = Block::Miss;
    if st.any_probe {
        st.observe_l2_access(|st| with_index_state(st, p, obs(who), line));
    }
    false
}

/// A miss under misses (`cpu::nonblocking`, several MSHRs): the newest transaction is
/// `pend` (its issue event is next), the older ones wait in `others`.
#[cold]
#[inline(never)]
fn push_older(c: &mut Core) {
    debug_assert!(c.others.len() + 1 < c.mshrs, "more misses than MSHRs");
    let older = c.pend.take().unwrap();
    c.others.push(older);
    c.under_misses += 1;
}

/// Whether an L1 miss of `op` at `a` needs an external transaction (the L2 cannot serve it).
pub fn needs_agent(c: &Core, a: Addr, op: Op) -> bool {
    if op == Op::IFetch && !c.private_l2 {
        return true;
    }
    let state = c.lpl().state_of(a >> c.lpl().line_shift);
    if matches!(op, Op::Store(_) | Op::Rmw(..)) {
        state != MODIFIED
    } else {
        state == INVALID
    }
}

/// Prepares an uncached access (the thread then blocks).
pub fn start_uncached(st: &mut State, p: usize, addr: Addr, size: u8, write: Option<u64>) {
    let c = &mut st.cores[p];
    let now = c.now;
    c.pend = Some(Pending {
        op: Op::Load,
        addr,
        line: 0,
        cmd: if write.is_some() {
            Cmd::UncachedWrite
        } else {
            Cmd::UncachedRead
        },
        issued: now,
        first_nack: 0,
        nacks: 0,
        inval_seen: false,
        miss_type: MissType::Other,
        home: c.node,
        attempt: now,
        deadline: 0,
        in_flight: false,
        retry_at: 0,
        reissue_at: None,
        size,
        wdata: write,
        stall_from: now,
        phase: c.phase,
        procedure: c.procedure,
        who: c.origin(),
        seq: (0, 0),
    });
    c.block = Block::Miss;
    if write.is_none() {
        let who = c.origin();
        st.core_event(now, who, CoreEvent::CacheInhibitedLoad, 1);
    }
}

/// The thread has blocked: schedule what it waits for.
pub fn blocked(st: &mut State, p: usize) {
    let c = &st.cores[p];
    let (now, under_miss) = (c.now, c.under_miss);
    match c.block {
        Block::Miss => {
            st.q.schedule(now, 0, Ev::Issue(p as u16));
            if under_miss {
                // A non-blocking load (`cpu::nonblocking`): the request leaves, the thread
                // goes on (after the issue, so its run-ahead bound counts the new event).
                st.cores[p].block = Block::None;
                st.queue_resume(p, now);
            }
        }
        // A single-thread core waiting to use a non-blocking load's value: the response
        // resumes it (`resume_at`).
        Block::Agent if !c.multi => {}
        Block::Spin { line, .. } => {
            if c.lpl().state_of(line) == INVALID {
                st.cores[p].block = Block::None;
                st.queue_resume(p, now);
            } else if st.armed_any {
                crate::spin_check::arm(st, p);
            }
        }
        // I/O waits exist only under an operating system, whose cores take the scheduler's
        // paths (`sched::exec::after_yield`).
        Block::Parked => {}
        Block::None | Block::Agent | Block::Io { .. } | Block::Done => {
            unreachable!("blocked without a reason")
        }
    }
}

fn request(pd: &Pending) -> ProcMsg {
    match pd.cmd {
        Cmd::Read => ProcMsg::Read { line: pd.line },
        Cmd::ReadEx => ProcMsg::ReadEx { line: pd.line },
        Cmd::Upgrade => ProcMsg::Upgrade { line: pd.line },
        Cmd::UncachedRead | Cmd::UncachedWrite => ProcMsg::Uncached {
            addr: pd.addr,
            size: pd.size,
            write: pd.wdata,
        },
        Cmd::Writeback => unreachable!("write-backs are not pending transactions"),
    }
}

/// The pending transaction leaves the external agent (first attempt).
pub fn issue(st: &mut State, p: usize, t: Tick) {
    let c = &mut st.cores[p];
    let node = c.node as usize;
    let Some(pd) = c.pend.as_mut() else { return };
    pd.attempt = t;
    if pd.home == u16::MAX {
        // The page's home (a first touch places it here), see `l1_miss_full`'s `Pending`.
        pd.home = st.map.home_of(pd.addr, node) as u16;
    }
    let pd = *pd;
    let phase = (pd.phase & 0xF) as u8;
    if matches!(pd.cmd, Cmd::UncachedRead | Cmd::UncachedWrite) {
        // Routed by the window the address is in (registered by its owner).
        if let Some(w) = st.uncached.lookup(pd.addr) {
            if w.owner != Owner::MemorySystem {
                let (owner, base, cost) = (w.owner, w.base, w.cost_ticks);
                // The probes see offsets from the window's `offset` (0 for the card's).
                let base = base.wrapping_sub(w.offset);
                monitor_access(st, p, t, pd, owner, base, cost);
                return;
            }
        }
    }
    if st.any_probe {
        st.observe_now(Observation::TxIssue {
            proc: p as u16,
            t,
            cmd: pd.cmd,
            addr: pd.addr,
            phase,
            home: pd.home,
            who: pd.who,
        });
    }
    let c = &mut st.cores[p];
    let pdm = c.pend.as_mut().unwrap();
    pdm.reissue_at = None;
    let orphan = pdm.in_flight;
    pdm.in_flight = true;
    arm_timer(st, p);
    if orphan {
        // Re-issued after a bus error while the first request is still in the memory system,
        // which cannot withdraw it: the external agent keeps that request outstanding and its
        // response answers the re-issued access (the latency timer restarts here).
        return;
    }
    st.send(p, t, request(&pd));
}

/// Arms the bus-error timer of core `p`'s pending transaction. Seed 000 4.4.2: the latency
/// timer is reset as the request is written into the outgoing FIFO and counts every cycle
/// until the response or a BUS_ERROR, which occurs after 4096 cycles: the deadline is that
/// many edges of the timer's clock after `issued`, so a response can never be timed at
/// 4096 cycles or more. One timer event is queued per core at most (`Core::bus_timer`); an
/// earlier one still queued re-arms itself for this deadline when it fires.
fn arm_timer(st: &mut State, p: usize) {
    let Some(to) = st.timeout else { return };
    let clk = st.timeout_clock;
    let c = &mut st.cores[p];
    let Some(pd) = c.pend.as_mut() else { return };
    let d = pd.issued - pd.issued % clk + to;
    pd.deadline = d;
    if c.bus_timer == 0 || c.bus_timer > d {
        c.bus_timer = d;
        st.passive_events += 1;
        st.q.schedule(d, PRIO_SYS, Ev::Timeout(p as u16));
    }
}

/// Core `p`'s timer event at `t` (popped): true if its pending transaction times out now
/// ([`time_out`] follows). A stale event (the transaction answered, or one issued later is
/// pending) is not an event of the run: it re-queues itself for the pending deadline, if
/// any, and returns false. Timer events count as passive (they keep nothing alive: a
/// transaction in flight always has memory-system events pending).
pub fn timer_live(st: &mut State, p: usize, t: Tick) -> bool {
    st.passive_events -= 1;
    let c = &mut st.cores[p];
    if c.bus_timer != t {
        return false;
    }
    c.bus_timer = 0;
    match c.pend.map(|pd| pd.deadline) {
        Some(d) if d == t => true,
        Some(d) if d > t => {
            c.bus_timer = d;
            st.passive_events += 1;
            st.q.schedule(d, PRIO_SYS, Ev::Timeout(p as u16));
            false
        }
        _ => false,
    }
}

/// Core `p`'s pending transaction has waited the whole time-out: a bus error (seed 000
/// 4.4.2, 4.4.5: "an unsuccessful miss is caused by a time-out, so a bus error exception is
/// taken"). The exception handler runs and the access is re-issued afresh; a NACK back-off
/// under way is abandoned.
pub fn time_out(st: &mut State, p: usize, t: Tick) {
    let Some(pdc) = st.cores[p].pend else { return };
    done_obs(
        st,
        p,
        t,
        &pdc,
        Outcome::BusError,
        RespState::default(),
        false,
    );
    let c = &mut st.cores[p];
    c.cnt.bus_errors += 1;
    let pd = c.pend.as_mut().unwrap();
    pd.deadline = 0;
    pd.retry_at = 0;
    pd.first_nack = 0;
    pd.nacks = 0;
    if c.multi {
        // Another thread may hold the pipeline: the owner pays the exception when it next
        // issues.
        pd.issued = t;
        pd.reissue_at = Some(t);
        crate::sched::exec::owe_exception(st, p);
        st.q.schedule(t, 0, Ev::Issue(p as u16));
        return;
    }
    super::nonblocking::end_span(c, &pdc, t);
    if c.block != Block::None {
        // Blocked on the miss (or waiting to use a non-blocking load's value): the wait
        // until the bus error is a stall; a thread running under the miss takes the
        // exception where it is.
        super::nonblocking::wait_until(c, t);
    }
    let e = c.timing.exception;
    c.kill(Ps::KilledException, e, 1);
    let now = c.now;
    let pd = c.pend.as_mut().unwrap();
    pd.issued = now;
    pd.reissue_at = Some(now);
    st.q.schedule(now, 0, Ev::Issue(p as u16));
}

/// A response to the pending transaction that arrives while the processor runs the
/// bus-error handler (before the re-issue) waits for the re-issue: it is delivered again
/// then. True if held.
#[inline]
fn hold_for_reissue(st: &mut State, p: usize, t: Tick, m: SysMsg) -> bool {
    let Some(r) = st.cores[p].pend.and_then(|pd| pd.reissue_at) else {
        return false;
    };
    if !matches!(
        m,
        SysMsg::Data { .. }
            | SysMsg::Grant { .. }
            | SysMsg::Nack { .. }
            | SysMsg::Cancel { .. }
            | SysMsg::UncachedReply { .. }
    ) {
        return false;
    }
    // The re-issue (priority 0) runs before a delivery (priority 1) of the same tick.
    let at = r.max(t);
    let v = &mut st.inbound[p];
    let i = v.partition_point(|&x| x <= at);
    v.insert(i, at);
    st.q.schedule(at, PRIO_DELIVER, Ev::ToProc(p as u16, m));
    true
}

/// Uncached accesses to monitor registers stay on the processor card, and those to a
/// monitor's device are answered by it: the probes answer. The window (`owner`, offsets
/// counted from `base`) says which card's registers or which device; each costs `lat` (the
/// window's registered cost).
fn monitor_access(
    st: &mut State,
    p: usize,
    t: Tick,
    pd: Pending,
    owner: Owner,
    base: Addr,
    lat: Tick,
) {
    let mut value = 0;
    if owner == Owner::RemoteMonitor {
        // A system write to other cards' monitors (one target, or all: multicast).
        let sel = (pd.addr - base) >> 24;
        let off = (pd.addr - base) & 0xFF_FFFF;
        let targets: Vec<usize> = if sel == 0 {
            (0..st.cores.len()).collect()
        } else {
            vec![(sel - 1) as usize]
        };
        for q in targets {
            if q < st.cores.len() {
                st.deliver(
                    q,
                    t + lat,
                    SysMsg::MonitorWrite {
                        offset: off,
                        size: pd.size,
                        value: pd.wdata.unwrap_or(0),
                    },
                );
            }
        }
    } else {
        value = st.mmio(p, t, pd.addr - base, pd.size, pd.wdata);
    }
    st.deliver(p, t + lat, SysMsg::UncachedReply { value });
}

/// Re-issues the pending transaction after a NACK back-off.
pub fn retry(st: &mut State, p: usize, t: Tick) {
    let c = &st.cores[p];
    if !c.others.is_empty() && c.pend.is_some_and(|pd| pd.retry_at != t) {
        // Several outstanding: the transaction whose back-off ends now.
        if let Some(i) = c.others.iter().position(|pd| pd.retry_at == t) {
            return with_front(st, p, i, |st| retry(st, p, t));
        }
    }
    let c = &mut st.cores[p];
    let Some(pd) = c.pend.as_mut() else { return };
    if pd.retry_at != t {
        // Abandoned by a bus error in the back-off.
        return;
    }
    pd.retry_at = 0;
    pd.in_flight = true;
    pd.attempt = t;
    let pd = *pd;
    st.send(p, t, request(&pd));
}

/// The pending transaction `pd` has completed at `t`: the thread waiting for it resumes
/// (charged the stall until `t`), and its miss span ends (`cpu::nonblocking`).
fn resume_at(st: &mut State, p: usize, t: Tick, pd: &Pending) {
    if st.cores[p].multi {
        crate::sched::exec::agent_done(st, p, t, Ps::MultiprocessingStall);
        return;
    }
    let c = &mut st.cores[p];
    super::nonblocking::end_span(c, pd, t);
    if c.under_miss {
        // The thread runs under its misses until the last completes (`others` holds those
        // still outstanding; `pend` is already taken).
        c.under_miss = !c.others.is_empty();
        if matches!(c.block, Block::None | Block::Done) {
            // The thread ran under the miss and has not used the value yet: no stall.
            return;
        }
    }
    c.block = Block::None;
    super::nonblocking::wait_until(c, t);
    let now = c.now;
    st.queue_resume(p, now);
}

/// Reports the transaction's end; `evicted`: its fill replaced a valid L2 line.
fn done_obs(
    st: &mut State,
    p: usize,
    t: Tick,
    pd: &Pending,
    outcome: Outcome,
    resp: RespState,
    evicted: bool,
) {
    if st.core_events_on
        && outcome != Outcome::Cancelled
        && !matches!(pd.cmd, Cmd::UncachedRead | Cmd::UncachedWrite)
    {
        // From the request leaving the core (the L2 tag check done) to its data, plus the
        // tag check: the cycles the miss kept the thread waiting.
        let c = &st.cores[p];
        let n = (t.saturating_sub(pd.stall_from)).div_ceil(c.period) + c.timing.l2_hit;
        let e = if pd.op == Op::IFetch {
            CoreEvent::Il1MissCycles
        } else {
            CoreEvent::DataMissCycles
        };
        st.core_event(t, pd.who, e, n);
    }
    if !st.any_probe {
        return;
    }
    let c = &st.cores[p];
    let o = Observation::TxDone {
        proc: p as u16,
        t,
        cmd: pd.cmd,
        addr: pd.addr,
        issued: pd.issued,
        first_nack: pd.first_nack,
        nacks: pd.nacks,
        outcome,
        miss_type: if outcome == Outcome::Cancelled {
            MissType::CancelledOwnership
        } else {
            pd.miss_type
        },
        resp,
        home: pd.home,
        phase: (pd.phase & 0xF) as u8,
        procedure: pd.procedure,
        evicted,
        index_invalid: st.index_probes && c.lpl().set_has_invalid(pd.line),
        who: pd.who,
    };
    st.observe_now(o);
}

/// Evicts whatever L2 slot `slot` holds (for a fill of another line). Returns true if it
/// held a valid line.
fn evict(st: &mut State, p: usize, slot: usize, t: Tick) -> bool {
    let c = &mut st.cores[p];
    let Some(victim) = c.lpl().line_at(slot) else {
        return false;
    };
    let state = c.lpl().state(slot);
    if state == INVALID {
        return false;
    }
    let value = c.values[slot];
    // Lines are already in memory behind an `elan` write-through L1; a `cmp` write-through
    // L1 D's owned lines (value stores) still go back to clear the directory's owner.
    let write_through = c.write_through && !c.store_through;
    set_l2_state(st, p, slot, INVALID, t);
    if st.cores[p].multi {
        // A sibling's spin-wait on the victim would miss the invalidation it waits for.
        crate::sched::exec::line_changed(st, p, victim, t);
    }
    // A write-through cache's lines are already in memory: dropped without a write-back.
    if state == MODIFIED && !write_through {
        st.cores[p].wb.push((victim, value));
        if st.any_probe {
            let c = &st.cores[p];
            let o = Observation::TxIssue {
                proc: p as u16,
                t,
                cmd: Cmd::Writeback,
                addr: line_addr(c, victim),
                phase: (c.phase & 0xF) as u8,
                home: st.map.known_home(line_addr(c, victim)).unwrap_or(0) as u16,
                who: c.origin(),
            };
            st.observe_now(o);
        }
        st.send(
            p,
            t,
            ProcMsg::Writeback {
                line: victim,
                value,
            },
        );
    }
    true
}

/// An invalidation reaches processor `p` at `t`: its copy of `line` (and an instruction copy)
/// goes, a read in flight for the line learns of it, a reservation on it is lost, and the
/// home gets an acknowledgement when `ack` (a posted invalidation gets none).
fn drop_copy(st: &mut State, p: usize, t: Tick, line: u64, ack: bool) {
    let c = &mut st.cores[p];
    let slot = c.lpl().find(line);
    let was = slot.map(|s| c.lpl().state(s)).unwrap_or(INVALID);
    if let Some(s) = slot {
        if was != INVALID {
            set_l2_state(st, p, s, INVALID, t);
        }
    }
    if !st.cores[p].private_l2 {
        // An instruction copy of the line (tracked by the memory system as a sharer).
        st.cores[p].l1i.invalidate(line);
    }
    if let Some(pd) = pending_for(&mut st.cores[p], line) {
        if pd.cmd == Cmd::Read {
            pd.inval_seen = true;
        }
    }
    st.resv.on_core(p, line, None);
    let who = st.cores[p].origin();
    st.core_event(t, who, CoreEvent::BackInvalidate, 1);
    if was != INVALID {
        st.core_event(t, who, CoreEvent::BackInvalidateHit, 1);
    }
    if st.any_probe {
        let a = line_addr(&st.cores[p], line);
        st.observe_now(Observation::Inbound {
            proc: p as u16,
            t,
            kind: InboundKind::Invalidate,
            addr: a,
            hit: was != INVALID,
            who: st.inbound_origin(line),
        });
    }
    wake_spinner(st, p, line, t);
    if ack && !st.fault.drop_ack() {
        st.send(p, t, ProcMsg::InvalAck { line });
    }
}

/// A message from the memory system reaches the processor's caches.
#[inline(never)]
pub fn receive(st: &mut State, p: usize, t: Tick, m: SysMsg) {
    // What the thread's saved horizon scan read of its caches may change (`hits::Scan`).
    st.cores[p].scan.valid = false;
    if st.cores[p].others.is_empty() {
        receive_one(st, p, t, m);
    } else {
        receive_older(st, p, t, m);
    }
}

/// [`receive`] while older misses are outstanding too.
#[cold]
#[inline(never)]
fn receive_older(st: &mut State, p: usize, t: Tick, m: SysMsg) {
    let c = &st.cores[p];
    // Several misses outstanding (`cpu::nonblocking`; no time-out on these machines, so
    // no response is held for a re-issue): the response goes to its line's transaction.
    debug_assert!(st.timeout.is_none(), "several MSHRs with a bus-error timer");
    match older_for(c, &m) {
        Some(Some(i)) => with_front(st, p, i, |st| receive_one(st, p, t, m)),
        Some(None) => {
            receive_one(st, p, t, m);
            let c = &mut st.cores[p];
            if c.pend.is_none() {
                // The newest completed: an older one becomes the front.
                c.pend = c.others.pop();
            }
        }
        // Not a response (invalidations, interventions, ...): they look at every
        // outstanding transaction themselves (`pending_for`).
        None => receive_one(st, p, t, m),
    }
}

/// [`receive`] with the response's transaction (if any) in `pend`.
#[inline(always)]
fn receive_one(st: &mut State, p: usize, t: Tick, m: SysMsg) {
    if st.timeout.is_some() && hold_for_reissue(st, p, t, m) {
        return;
    }
    match m {
        SysMsg::Data {
            line,
            exclusive,
            value,
            resp,
        } => {
            let Some(pd) = st.cores[p].pend.filter(|pd| {
                pd.line == line && pd.cmd != Cmd::UncachedRead && pd.cmd != Cmd::UncachedWrite
            }) else {
                panic!("processor {p}: data for line {line:#x} that it did not request");
            };
            if pd.inval_seen && !exclusive {
                // Invalidated while the data was in flight: the load performs on the data
                // received (ordered before the write that invalidated it) and nothing is
                // installed, so no stale copy coexists with the new owner.
                let c = &mut st.cores[p];
                c.pend = None;
                c.result = value;
                if st.value_probes {
                    st.observe_now(Observation::LoadPerformed {
                        proc: p as u16,
                        t,
                        addr: pd.addr,
                        value,
                    });
                }
                done_obs(st, p, t, &pd, Outcome::Done, resp, false);
                resume_at(st, p, t, &pd);
                return;
            }
            if pd.op == Op::IFetch && !st.cores[p].private_l2 {
                // An instruction line on a core without a private L2: into the L1 I only.
                let c = &mut st.cores[p];
                fill_l1(c, pd.addr, true, SHARED);
                c.pend = None;
                c.result = value;
                done_obs(st, p, t, &pd, Outcome::Done, resp, false);
                resume_at(st, p, t, &pd);
                return;
            }
            let c = &mut st.cores[p];
            let (slot, evicted) = match c.lpl().find(line) {
                Some(s) => (s, false),
                None => {
                    let rng = &mut st.rng;
                    let s = c.lpl().victim(line, || rng.next_u64());
                    (s, evict(st, p, s, t))
                }
            };
            let c = &mut st.cores[p];
            let old = c.lpl().state(slot);
            let new = if exclusive { MODIFIED } else { SHARED };
            c.lpl_mut().install(slot, line, old);
            c.values[slot] = value;
            set_l2_state(st, p, slot, new, t);
            let c = &mut st.cores[p];
            fill_l1(c, pd.addr, pd.op == Op::IFetch, new);
            c.pend = None;
            let r = perform(st, p, slot, pd.op, pd.addr, t);
            st.cores[p].result = r;
            done_obs(st, p, t, &pd, Outcome::Done, resp, evicted);
            run_deferred(st, p, t, line);
            resume_at(st, p, t, &pd);
        }
        SysMsg::Grant { line, resp } => {
            let pd = st.cores[p].pend.expect("grant without a pending upgrade");
            assert_eq!(pd.line, line, "grant for another line");
            let c = &mut st.cores[p];
            let slot = c
                .lpl()
                .find(line)
                .filter(|&s| c.lpl().state(s) == SHARED)
                .unwrap_or_else(|| {
                    panic!("processor {p}: upgrade granted for line {line:#x} no longer shared here (the protocol should have cancelled it)")
                });
            set_l2_state(st, p, slot, MODIFIED, t);
            let c = &mut st.cores[p];
            fill_l1(c, pd.addr, false, MODIFIED);
            c.pend = None;
            let r = perform(st, p, slot, pd.op, pd.addr, t);
            st.cores[p].result = r;
            done_obs(st, p, t, &pd, Outcome::Done, resp, false);
            run_deferred(st, p, t, line);
            resume_at(st, p, t, &pd);
        }
        SysMsg::Nack { line } => {
            let nacks_so_far = st.cores[p].pend.map(|pd| pd.nacks + 1).unwrap_or(1);
            let backoff = st.backoff(nacks_so_far);
            let c = &mut st.cores[p];
            let Some(pd) = c.pend.as_mut() else { return };
            debug_assert!(pd.line == line || pd.line == 0);
            c.cnt.nacks += 1;
            pd.nacks += 1;
            if pd.first_nack == 0 {
                pd.first_nack = t;
            }
            let pdc = *pd;
            if st.any_probe {
                st.observe_now(Observation::TxNack {
                    proc: p as u16,
                    t,
                    cmd: pdc.cmd,
                    addr: pdc.addr,
                    who: pdc.who,
                });
            }
            let c = &mut st.cores[p];
            let pd = c.pend.as_mut().unwrap();
            pd.in_flight = false;
            if st.fault.lose_nack_retry() {
                // The injected fault: the agent forgets the request, its timer included.
                pd.deadline = 0;
            } else {
                pd.retry_at = t + backoff;
                st.q.schedule(t + backoff, 0, Ev::Retry(p as u16));
            }
        }
        SysMsg::Cancel { line } => {
            let c = &mut st.cores[p];
            let pd = c.pend.expect("cancel without pending upgrade");
            assert_eq!(pd.line, line);
            c.cnt.cancelled_upgrades += 1;
            done_obs(
                st,
                p,
                t,
                &pd,
                Outcome::Cancelled,
                RespState::default(),
                false,
            );
            let c = &mut st.cores[p];
            let pdm = c.pend.as_mut().unwrap();
            pdm.in_flight = false;
            pdm.cmd = Cmd::ReadEx;
            pdm.issued = t;
            pdm.first_nack = 0;
            pdm.nacks = 0;
            pdm.miss_type = MissType::Invalidation;
            issue(st, p, t);
        }
        SysMsg::Invalidate { line, ack } => {
            if ack {
                if let Some(delay) = st.fault.reorder_reply() {
                    // Injected fault (`Fault::ReorderReply`): acknowledge now, apply the
                    // invalidation later. Only this fault sends `ack: false`.
                    st.send(p, t, ProcMsg::InvalAck { line });
                    let at = t + delay as Tick * st.cpu_period;
                    let (_, mut env) = st.env();
                    let inbound = env.inbound.ticks;
                    env.deliver(p, at - inbound, SysMsg::Invalidate { line, ack: false });
                    return;
                }
            } else {
                // The late invalidation of `Fault::ReorderReply`: it removes the stale shared
                // copy, but leaves alone a line with a request of this processor in flight
                // (the processor's own consistency checks would stop the run before the
                // tester reports what it saw).
                let c = &mut st.cores[p];
                if pending_for(c, line).is_some() || c.lpl().state_of(line) != SHARED {
                    return;
                }
            }
            drop_copy(st, p, t, line, ack);
        }
        SysMsg::PostedInvalidate { line } => drop_copy(st, p, t, line, false),
        SysMsg::Intervention { line, exclusive } => {
            let c = &mut st.cores[p];
            let have = c.lpl().state_of(line) == MODIFIED || c.wb.iter().any(|(l, _)| *l == line);
            if !have
                && pending_for(c, line)
                    .is_some_and(|pd| matches!(pd.cmd, Cmd::ReadEx | Cmd::Upgrade))
            {
                // The home made us owner and forwarded a later request before our grant
                // arrived: answer once the grant is in.
                c.deferred.push((line, exclusive));
                return;
            }
            let slot = c.lpl().find(line).filter(|&s| c.lpl().state(s) == MODIFIED);
            let (value, from_wb) = if let Some(s) = slot {
                let v = c.values[s];
                set_l2_state(st, p, s, if exclusive { INVALID } else { SHARED }, t);
                (Some(v), false)
            } else if let Some(&(_, v)) = c.wb.iter().find(|(l, _)| *l == line) {
                (Some(v), true)
            } else {
                (None, false)
            };
            if st.any_probe {
                let a = line_addr(&st.cores[p], line);
                st.observe_now(Observation::Inbound {
                    proc: p as u16,
                    t,
                    kind: if exclusive {
                        InboundKind::InterventionExclusive
                    } else {
                        InboundKind::InterventionShared
                    },
                    addr: a,
                    hit: slot.is_some(),
                    who: st.inbound_origin(line),
                });
            }
            if exclusive {
                wake_spinner(st, p, line, t);
            }
            st.send(
                p,
                t,
                ProcMsg::InterventionReply {
                    line,
                    value,
                    from_wb,
                },
            );
        }
        SysMsg::WbAck { line } => {
            let c = &mut st.cores[p];
            if let Some(i) = c.wb.iter().position(|(l, _)| *l == line) {
                c.wb.swap_remove(i);
            }
        }
        SysMsg::UncachedReply { value } => {
            let c = &mut st.cores[p];
            let Some(pd) = c.pend.take() else {
                panic!("processor {p}: uncached reply without a request")
            };
            c.result = value;
            let multi = c.multi;
            if !multi {
                c.stall_until(Ps::OtherStall, t);
            }
            // Accesses answered on a processor card are not memory transactions.
            let on_card = st
                .uncached
                .lookup(pd.addr)
                .is_some_and(|w| w.owner != Owner::MemorySystem);
            if !on_card {
                done_obs(st, p, t, &pd, Outcome::Done, RespState::default(), false);
            }
            if multi {
                crate::sched::exec::agent_done(st, p, t, Ps::OtherStall);
                return;
            }
            let c = &mut st.cores[p];
            c.block = Block::None;
            let now = c.now;
            st.queue_resume(p, now);
        }
        SysMsg::MonitorWrite {
            offset,
            size,
            value,
        } => {
            st.mmio(p, t, offset, size, Some(value));
        }
    }
}

/// Handles an intervention deferred while the processor's own request for `line` was
/// outstanding (that request has just performed).
fn run_deferred(st: &mut State, p: usize, t: Tick, line: u64) {
    let c = &mut st.cores[p];
    if c.deferred.is_empty() {
        return;
    }
    if let Some(i) = c.deferred.iter().position(|&(l, _)| l == line) {
        let (_, exclusive) = c.deferred.swap_remove(i);
        receive(st, p, t, SysMsg::Intervention { line, exclusive });
    }
}

/// The outstanding transaction for L2 line `line`, if any (`pend` or, with several MSHRs,
/// one of `others`).
fn pending_for(c: &mut Core, line: u64) -> Option<&mut Pending> {
    if c.pend.is_some_and(|pd| pd.line == line) {
        return c.pend.as_mut();
    }
    c.others.iter_mut().find(|pd| pd.line == line)
}

/// Runs `f` (an agent step written for `pend`) on the older transaction `others[i]`: it is
/// made the front, and the newest goes back to the front afterwards (its issue event, if it
/// has not left yet, expects it there). If the step completed the transaction, the slot is
/// freed.
fn with_front(st: &mut State, p: usize, i: usize, f: impl FnOnce(&mut State)) {
    let c = &mut st.cores[p];
    let newest = c.pend.take();
    c.pend = Some(c.others[i]);
    c.others[i] = newest.expect("older misses without a newest");
    f(st);
    let c = &mut st.cores[p];
    match c.pend.take() {
        Some(pd) => c.pend = Some(std::mem::replace(&mut c.others[i], pd)),
        None => c.pend = Some(c.others.swap_remove(i)),
    }
}

/// Which transaction a message answers, with several outstanding: `None` if it is not a
/// response; `Some(Some(i))` if it answers the older `others[i]` (made the front for
/// [`receive_one`]); `Some(None)` if it answers the front.
fn older_for(c: &Core, m: &SysMsg) -> Option<Option<usize>> {
    let line = match *m {
        SysMsg::Data { line, .. }
        | SysMsg::Grant { line, .. }
        | SysMsg::Nack { line }
        | SysMsg::Cancel { line } => line,
        _ => return None,
    };
    if c.pend.is_some_and(|pd| pd.line == line) {
        return Some(None);
    }
    Some(c.others.iter().position(|pd| pd.line == line))
}

/// A processor spinning on `line` resumes: its copy changed. The spin cycles are charged as
/// iterations of (load, taken branch, killed cycles).
fn wake_spinner(st: &mut State, p: usize, line: u64, t: Tick) {
    if st.cores[p].multi {
        crate::sched::exec::line_changed(st, p, line, t);
        return;
    }
    let c = &mut st.cores[p];
    if let Block::Spin {
        line: l,
        since,
        sleep,
    } = c.block
    {
        if l == line && sleep {
            c.stall_until(Ps::OtherStall, t);
            c.block = Block::None;
            let now = c.now;
            st.queue_resume(p, now);
        } else if l == line {
            crate::spin_check::end_spin(st, p, since, t);
        }
    }
}
