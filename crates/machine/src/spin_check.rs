//! Spin-waits cut short for an armed counter (issue 14: the Blue Gene/Q UPC's overflow
//! interrupts on the opcode group; docs/upc.md, "Overflow interrupt latency").
//!
//! Why: a thread spinning on a valid line costs the simulation nothing; its iterations (a
//! load and a taken branch each, `retire_sink::SPIN_OPS`) are charged when the line changes,
//! as one span of retirements (`Core::charge_spin`). A counter of those instructions that is
//! armed (its next overflow interrupts) crosses somewhere inside that span, and the
//! interrupt, raised when the span is reported, came up to 13,509 cycles after the crossing
//! (barriers of FFT on `bgq` with 64 threads). The hardware's UPC_P signals it within a few
//! cycles and the spinning thread takes it.
//!
//! So when a probe's sink says how many spin iterations a context may still retire before
//! an armed counter can cross (`RetireBatch::spin`), an idle core whose thread of that
//! context spins gets an `Ev::SpinCheck` at the time it will have retired them: the thread's
//! wait ends there as if the line had changed (the iterations so far are charged and
//! reported, the thread resumes, reloads the unchanged word and spins again). Only cores
//! with an armed counter pay, a few wake-ups per crossing (each at most halves what is still
//! needed). A check keeps nothing alive (it is passive, as a probe's wake-up): threads that
//! spin forever still end the run as a deadlock.

use crate::cpu::Block;
use crate::event::{Ev, PRIO_WAKE};
use crate::sched::{Run, Wake};
use crate::state::State;
use engine::Tick;

/// The spinning thread of idle core `p` whose spin an armed counter needs counted first,
/// and when: `(thread, since, at)`; `None` if none.
fn due(st: &State, p: usize) -> Option<(usize, Tick, Tick)> {
    let sink = st.retire_sink.as_ref()?.borrow();
    let b = sink.cores.get(p)?;
    let c = &st.cores[p];
    let iter = c.timing.spin_iter.max(1) * c.period;
    let at = |ctx: usize, since: Tick| -> Option<Tick> {
        let k = *b.spin.get(ctx)?;
        (k > 0).then(|| since.max(c.now).saturating_add(k.saturating_mul(iter)))
    };
    if !c.multi {
        return match c.block {
            Block::Spin {
                since,
                sleep: false,
                ..
            } => at(c.context as usize, since).map(|a| (p, since, a)),
            _ => None,
        };
    }
    let s = &st.sched;
    if s.cores[p].busy {
        return None;
    }
    let mut best: Option<(usize, Tick, Tick)> = None;
    for &tid in &s.cores[p].threads {
        let th = &s.threads[tid];
        if let (
            Run::Blocked,
            Block::Spin {
                since,
                sleep: false,
                ..
            },
        ) = (th.run, th.block)
        {
            if let Some(a) = at(th.context % s.threads_per_core, since) {
                if best.is_none_or(|(_, _, b)| a < b) {
                    best = Some((tid, since, a));
                }
            }
        }
    }
    best
}

/// Core `p` became idle, or its counters' needs changed: schedules the check of the spin an
/// armed counter needs counted first (a later check replaces an earlier one).
pub(crate) fn arm(st: &mut State, p: usize) {
    let Some((_, _, at)) = due(st, p) else {
        st.sched.cores[p].spin_check = None;
        return;
    };
    if st.sched.cores[p].spin_check == Some(at) {
        return;
    }
    let at = at.max(st.q.now());
    st.sched.cores[p].spin_check = Some(at);
    st.passive_events += 1;
    st.q.schedule(at, PRIO_WAKE, Ev::SpinCheck(p as u16));
}

/// A check of core `p` at `t`: if it is still the core's latest and the core still idles
/// in that spin, the spin ends here.
pub(crate) fn fire(st: &mut State, p: usize, t: Tick) {
    st.passive_events -= 1;
    if st.sched.cores[p].spin_check != Some(t) {
        return;
    }
    st.sched.cores[p].spin_check = None;
    let Some((tid, since, _)) = due(st, p) else {
        return;
    };
    if st.cores[p].multi {
        crate::sched::exec::wake(
            st,
            p,
            tid,
            t,
            Wake::Spin {
                since,
                sleep: false,
            },
        );
    } else {
        end_spin(st, p, since, t);
    }
}

/// After a probe's wake-up (where the UPC arms counters): the idle cores look again if a
/// need changed.
pub(crate) fn recheck(st: &mut State) {
    let changed = match &st.retire_sink {
        Some(s) => std::mem::take(&mut s.borrow_mut().changed),
        None => false,
    };
    if changed {
        for p in 0..st.cores.len() {
            arm(st, p);
        }
    }
}

/// Processor p (one thread) ends its spin-wait begun at `since` at `t`: the iterations are
/// charged and reported as one span of retirements, and the thread resumes to re-check the
/// line (the line changed, or an armed counter needs the iterations counted: `spin_check`).
pub(crate) fn end_spin(st: &mut State, p: usize, since: Tick, t: Tick) {
    st.cores[p].charge_spin(since, t);
    st.flush_retired(p);
    let c = &mut st.cores[p];
    c.block = Block::None;
    let now = c.now;
    st.queue_resume(p, now);
}
