//! The scheduler's operations on the machine state: what the event loop (`sim`) and the
//! external agent (`cpu::agent`) call on a core with several software threads. The policy
//! they apply is `Sched::balance` and `Sched::pick` (the parent module); this file moves
//! threads on and off the core and charges the time.

use super::{Run, Wake};
use crate::cache::INVALID;
use crate::cpu::context;
use crate::cpu::{pipeline::Ps, Block};
use crate::event::{Ev, Yield};
use crate::probe::{kind, Observation, Origin};
use crate::state::State;
use engine::Tick;

/// Makes `tid` the thread whose state the core holds (accounting the outgoing one's counts).
fn switch_to(st: &mut State, p: usize, tid: usize) {
    let old = st.cores[p].thread as usize;
    if old == tid {
        return;
    }
    // The outgoing thread's retirements are reported as its own (before the switch's
    // observation; without one, `flush_mode` below reports them).
    if st.interests.any & kind::SWITCH != 0 {
        st.flush_retired(p);
        let o = Observation::Switch {
            core: p as u16,
            context: (st.sched.threads[tid].context % st.sched.threads_per_core) as u8,
            t: st.cores[p].now,
            from: Some(old as u32),
            to: Some(tid as u32),
        };
        st.observe_now(o);
    }
    // With or without an operating system: a program may mark itself (`Ctx::mark_process`),
    // and the marked part of each thread's counts is split at every switch.
    flush_mode(st, p);
    let c = &mut st.cores[p];
    let s = &mut st.sched;
    let cs = &mut s.cores[p];
    context::account(&mut s.threads[old].cnt, &c.cnt, &cs.base);
    cs.base.clone_from(&c.cnt);
    let mut inc = std::mem::take(&mut s.threads[tid].regs);
    context::swap(c, &mut s.threads[old].regs, &mut inc);
    s.threads[tid].regs = inc;
    c.thread = tid as u32;
    c.context = (s.threads[tid].context % s.threads_per_core) as u8;
}

/// A `Resume` of core `p` at `t`: schedules, then returns the thread to resume (none: the
/// core is idle until a thread is woken).
pub fn dispatch(st: &mut State, p: usize, t: Tick) -> Option<usize> {
    if st.cores[p].now < t {
        // The core idled until `t`: nothing retired in between, so the next span of
        // retirements starts here, not at the last report. A probe that dates a span's
        // instructions by spreading them over it (the UPC's opcode counters) would otherwise
        // put some of them in the idle time.
        if st.cores[p].watch_retire {
            st.flush_retired(p);
            st.cores[p].retired_mark.t = t;
        }
        st.cores[p].now = t;
    }
    let now = st.cores[p].now;
    let s = &mut st.sched;
    s.cores[p].busy = false;
    let n = s.threads_per_core;
    for k in 0..n {
        s.balance(p * n + k, now);
    }
    let tid = s.pick(p, now)?;
    s.cores[p].busy = true;
    s.threads[tid].run = Run::Running;
    switch_to(st, p, tid);
    let owed = std::mem::take(&mut st.sched.threads[tid].owed);
    if owed > 0 {
        st.cores[p].charge(Ps::OtherStall, owed);
    }
    Some(tid)
}

/// The run-ahead bound of thread `tid` on core `p`: `bound`, cut at the slice end when other
/// contexts of the core hold threads and at the quantum end when other threads wait for its
/// context (see the module's exactness argument).
pub fn run_until(st: &State, p: usize, tid: usize, bound: Tick) -> Tick {
    let s = &st.sched;
    let n = s.threads_per_core;
    let ctx = s.threads[tid].context;
    let mut b = bound;
    let live = |t: usize| s.threads[t].run != Run::Done;
    if (0..n).any(|k| p * n + k != ctx && s.contexts[p * n + k].loaded.is_some_and(live)) {
        b = b.min(s.cores[p].slice_end);
    }
    let hc = &s.contexts[ctx];
    if hc.queue.iter().any(|&t| live(t)) {
        b = b.min(hc.quantum_end);
    }
    b
}

/// Thread `tid` left core `p`'s pipeline: `Some(Quantum)` at a bound, `Some(Blocked)` to
/// wait (the reason in `Core::block`), `None` finished.
pub fn after_yield(st: &mut State, p: usize, tid: usize, y: Option<Yield>) {
    let now = st.cores[p].now;
    match y {
        Some(Yield::Quantum) => st.sched.threads[tid].run = Run::Ready,
        Some(Yield::Blocked) => {
            let c = &mut st.cores[p];
            let b = std::mem::replace(&mut c.block, Block::None);
            // Still worth waiting: the line is valid and holds the value the thread saw (a
            // sibling may have stored to it since the load, which invalidates nothing).
            let still_valid = match b {
                Block::Spin { line, .. } => c
                    .lpl()
                    .find(line)
                    .is_some_and(|s| c.lpl().state(s) != INVALID && c.values[s] == c.spin_seen),
                _ => true,
            };
            let th = &mut st.sched.threads[tid];
            th.block = b;
            th.run = Run::Blocked;
            match b {
                Block::Miss => {
                    st.sched.cores[p].agent_owner = tid;
                    st.q.schedule(now, 0, Ev::Issue(p as u16));
                }
                Block::Spin { .. } => {
                    if !still_valid {
                        th.run = Run::Ready;
                        th.block = Block::None;
                    }
                }
                Block::Agent => st.sched.cores[p].agent_waiters.push(tid),
                Block::Io { until } => st.q.schedule(until, 0, Ev::IoDone(p as u16, tid as u32)),
                Block::Parked => unreachable!("a parked thread on a time-sliced core"),
                Block::None | Block::Done => unreachable!("blocked without a reason"),
            }
        }
        None => {
            let th = &mut st.sched.threads[tid];
            th.run = Run::Done;
            th.block = Block::Done;
        }
    }
    st.sched.cores[p].busy = true;
    st.queue_resume(p, now);
}

/// Thread `tid` of core `p` can go on from `t`. If the core was idle, the wait is charged to
/// it (as `how` says) and the core resumes; otherwise it takes its turn at the next slice
/// boundary or quantum.
pub fn wake(st: &mut State, p: usize, tid: usize, t: Tick, how: Wake) {
    let th = &mut st.sched.threads[tid];
    th.run = Run::Ready;
    th.block = Block::None;
    if st.sched.cores[p].busy {
        return;
    }
    switch_to(st, p, tid);
    let c = &mut st.cores[p];
    match how {
        Wake::Stall(ps) => c.stall_until(ps, t),
        Wake::Spin { sleep: true, .. } => c.stall_until(Ps::OtherStall, t),
        Wake::Spin {
            since,
            sleep: false,
        } => {
            let from = since.max(c.now);
            c.charge_spin(from, t);
            // The spin loop's loads and branches as one span of retirements.
            st.flush_retired(p);
        }
    }
    let now = st.cores[p].now;
    st.sched.cores[p].busy = true;
    st.queue_resume(p, now);
}

/// The I/O thread `tid` of core `p` waited for is done at `t`: it is ready (its wait, if the
/// core was idle, charged as other stall, as a sleep's).
pub fn io_done(st: &mut State, p: usize, tid: usize, t: Tick) {
    wake(
        st,
        p,
        tid,
        t,
        Wake::Spin {
            since: t,
            sleep: true,
        },
    );
}

/// Adds the core's counts since the last change of mode (or switch) to the thread holding
/// core `p`, under its current MSR[PR] (user or supervisor), and under `marked` too while its
/// MSR[PM] is set: called at every change of either bit and at every switch, so a thread's
/// user and supervisor counts sum to its counts and its marked counts are those of the
/// intervals it was marked in.
pub fn flush_mode(st: &mut State, p: usize) {
    // Retirements so far carry the state they ran in (`Observation::Retire`'s `who`).
    st.flush_retired(p);
    split_mode(st, p);
}

/// `flush_mode`'s accounting alone: the core's counts since the last split go to its
/// thread's user or supervisor part, and to its marked part while MSR[PM] is set.
fn split_mode(st: &mut State, p: usize) {
    let c = &st.cores[p];
    let s = &mut st.sched;
    let sup = (c.msr & context::MSR_PR == 0) as usize;
    let cs = &mut s.cores[p];
    let th = &mut s.threads[c.thread as usize];
    context::account(&mut th.mode[sup], &c.cnt, &cs.mode_base);
    if c.msr & context::MSR_PM != 0 {
        context::account(&mut th.marked[sup], &c.cnt, &cs.mode_base);
    }
    cs.mode_base.clone_from(&c.cnt);
}

/// The thread holding core `p` is about to change its MSR state (PR or PM): reports
/// `Observation::Mode` with the state until now (if a probe asks), then splits its counts as
/// `flush_mode` does, and sets the MSR to `msr`. Called by the operating system's paths at
/// their entry and return and by the marking system call.
pub fn mode_change(st: &mut State, p: usize, msr: u32) {
    if st.interests.any & kind::MODE != 0 {
        // Retirements so far carry the state they ran in, before the probe sees the change.
        st.flush_retired(p);
        let c = &st.cores[p];
        let who = c.origin();
        let to = Origin {
            supervisor: msr & context::MSR_PR == 0,
            marked: msr & context::MSR_PM != 0,
            ..who
        };
        let o = Observation::Mode {
            proc: p as u16,
            t: c.now,
            who,
            to,
        };
        st.observe_now(o);
    }
    flush_mode(st, p);
    let t = st.cores[p].thread as usize;
    st.sched.threads[t].supervisor = msr & context::MSR_PR == 0;
    st.cores[p].msr = msr;
}

/// Line `line` of core `p` changed at `t` (invalidated, taken exclusive, evicted, or stored
/// to by a sibling thread): the threads spinning or sleeping on it re-check it.
pub fn line_changed(st: &mut State, p: usize, line: u64, t: Tick) {
    let n = st.sched.cores[p].threads.len();
    for i in 0..n {
        let tid = st.sched.cores[p].threads[i];
        if let Block::Spin {
            line: l,
            since,
            sleep,
        } = st.sched.threads[tid].block
        {
            if l == line {
                wake(st, p, tid, t, Wake::Spin { since, sleep });
            }
        }
    }
}

/// The external agent finished core `p`'s transaction at `t`: its owner goes on (the result
/// of the access goes to it), and the threads waiting for the agent try again.
pub fn agent_done(st: &mut State, p: usize, t: Tick, ps: Ps) {
    let owner = st.sched.cores[p].agent_owner;
    if st.cores[p].thread as usize != owner {
        st.sched.threads[owner].regs.result = st.cores[p].result;
    }
    wake(st, p, owner, t, Wake::Stall(ps));
    let waiters = std::mem::take(&mut st.sched.cores[p].agent_waiters);
    for w in waiters {
        wake(st, p, w, t, Wake::Stall(Ps::OtherStall));
    }
}

/// A bus error on core `p`'s transaction: the owner will run the exception handler when it
/// next issues (the core may be running another thread now).
pub fn owe_exception(st: &mut State, p: usize) {
    let owner = st.sched.cores[p].agent_owner;
    let e = st.cores[p].timing.exception;
    st.sched.threads[owner].owed += e;
}

/// At the end of the run: the last thread of each core gets its counts; a core with one
/// thread (which the scheduler does not follow while it runs) gives it all of its own, and
/// its state.
pub fn finish(st: &mut State) {
    for p in 0..st.cores.len() {
        if st.sched.os && !st.sched.cores[p].threads.is_empty() {
            flush_mode(st, p);
        } else if !st.sched.cores[p].threads.is_empty() {
            // Without an operating system the probes have finished: the split only.
            split_mode(st, p);
        }
        let s = &mut st.sched;
        let c = &st.cores[p];
        match s.cores[p].threads.as_slice() {
            [] => {}
            [t] => {
                let th = &mut s.threads[*t];
                th.cnt.clone_from(&c.cnt);
                if c.block == Block::Done {
                    th.run = Run::Done;
                    th.block = Block::Done;
                }
            }
            _ => {
                let cs = &mut s.cores[p];
                let cur = c.thread as usize;
                context::account(&mut s.threads[cur].cnt, &c.cnt, &cs.base);
                cs.base.clone_from(&c.cnt);
            }
        }
    }
}
