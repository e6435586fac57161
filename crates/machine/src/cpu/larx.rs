//! The thread API's atomics as load-and-reserve / store-conditional loops, on a core with
//! `cpu.atomics = "larx-stcx"` (Blue Gene/Q's A2; the reservation rules are `cpu::reserve`).
//!
//! `Ctx::fetch_add(a, v)` is then what a compiler emits for the A2:
//!
//! ```text
//! retry: lwarx  r, a        # Larx: load, reserve the line        PEVT_LSU_LARX_FINISHED
//!        add    n, r, v     # IntAdd (swap: none; compare-and-swap, max: IntCompare + branch out)
//!        stwcx. n, a        # Stcx: store if still reserved        PEVT_LSU_COMMIT_STCX
//!        bne-   retry       # taken on failure                      PEVT_XU_STCX_FAIL
//! ```
//!
//! A compare-and-swap (or max) whose comparison fails leaves after the compare without a
//! store conditional (the usual `bne- exit`), so `PEVT_XU_STCX_FAIL` counts lost reservations
//! only. Each instruction retires as its fine class (`Larx`, `Stcx` in the driver's `XU_LSCX`
//! opcode group), issues on its own cycle, and so interleaves with the core's other hardware
//! threads: a sibling's atomic between this thread's `lwarx` and `stwcx.` makes it fail.

use super::Ctx;
use crate::addr::Addr;
use crate::cache::{MODIFIED, SHARED};
use crate::cpu::op::Op as Instr;
use crate::cpu::{Op, Rmw};
use crate::probe::CoreEvent;

impl Ctx {
    /// This thread's hardware context, machine-wide (`core * threads_per_core + context`).
    pub(super) fn hw_thread(&mut self) -> usize {
        let tpc = self.state().sched.threads_per_core;
        let c = self.core();
        c.id as usize * tpc + c.context as usize
    }

    /// The software thread's switches onto its context so far (a switch loses the
    /// reservation).
    fn switches(&mut self) -> u64 {
        let g = self.gtid;
        self.state().sched.threads.get(g).map_or(0, |t| t.switches)
    }

    /// Load and reserve (`lwarx`/`ldarx`): loads the data word of `a`'s line and reserves the
    /// line for this hardware thread. The reservation is set before the load performs, so a
    /// store that performs between the two loses it (the store conditional then fails and the
    /// loop retries with the new value): a larx never returns a value older than its
    /// reservation. Only on a `larx-stcx` core (others: a plain value load).
    pub fn larx(&mut self, a: Addr) -> u64 {
        if self.core().larx_stcx {
            let hw = self.hw_thread();
            let line = a >> self.core().lpl().line_shift;
            let (tid, sw, t) = (self.gtid, self.switches(), self.core().now);
            self.state().resv.set(hw, line, tid, sw, t);
        }
        let v = self.reserved_access(a, Op::Load, Instr::Larx);
        let c = self.core();
        let (t, who) = (c.now, c.origin());
        self.state().core_event(t, who, CoreEvent::LarxFinished, 1);
        self.check();
        v
    }

    /// Store conditional (`stwcx.`/`stdcx.`): stores `v` as the data word of `a`'s line if this
    /// hardware thread still holds its reservation on the line when the store performs;
    /// returns whether it stored. The reservation is used up either way. One whose
    /// reservation is already gone fails at once, without a transaction. On a core with
    /// one-step atomics there are no reservations: a store conditional always fails.
    pub fn stcx(&mut self, a: Addr, v: u64) -> bool {
        let hw = self.hw_thread();
        let line = a >> self.core().lpl().line_shift;
        let (tid, sw) = (self.gtid, self.switches());
        let held = self.core().larx_stcx && self.state().resv.holds(hw, line, tid, sw);
        let ok = if held {
            self.reserved_access(a, Op::Rmw(Rmw::StoreConditional, v, hw as u64), Instr::Stcx) != 0
        } else {
            self.state().resv.clear(hw);
            self.retire_op(Instr::Stcx, 1);
            self.core().cnt.refs += 1;
            self.fetch_one();
            false
        };
        if ok && self.core().write_through {
            self.post_write(a, true);
        }
        let c = self.core();
        let (t, who) = (c.now, c.origin());
        let st = self.state();
        st.core_event(t, who, CoreEvent::Stcx, 1);
        if !ok {
            st.core_event(t, who, CoreEvent::StcxFail, 1);
        }
        self.check();
        ok
    }

    /// `Ctx::swap`, `fetch_add`, `compare_swap`, `fetch_max` on a `larx-stcx` core: the loop
    /// in the module comment; returns the old value, as the one-step atomic does.
    pub(super) fn larx_stcx_rmw(&mut self, a: Addr, f: Rmw, x: u64, y: u64) -> u64 {
        loop {
            let old = self.larx(a);
            let new = f.apply(old, x, y);
            match f {
                Rmw::FetchAdd => self.op(Instr::IntAdd, 1),
                Rmw::CompareSwap | Rmw::Max => {
                    self.op(Instr::IntCompare, 1);
                    let skip = if f == Rmw::Max { new == old } else { old != x };
                    self.branch(skip);
                    if skip {
                        return old;
                    }
                }
                Rmw::Swap | Rmw::StoreConditional => {}
            }
            let ok = self.stcx(a, new);
            self.branch(!ok);
            if ok {
                return old;
            }
        }
    }

    /// One memory access of a larx or stcx: retires `instr`, then performs `op` on the line's
    /// data word, on an L1 D hit at once, otherwise through the agent (a read for a larx, a
    /// read-exclusive or upgrade for a stcx); returns what `agent::perform` returns.
    fn reserved_access(&mut self, a: Addr, op: Op, instr: Instr) -> u64 {
        self.translate_data(a);
        self.retire_op(instr, 1);
        self.core().cnt.refs += 1;
        self.fetch_one();
        let c = self.core();
        let line = a >> c.l1d.line_shift;
        let need = if op == Op::Load { SHARED } else { MODIFIED };
        if c.l1d.hit(line, need) {
            c.cnt.l1d_hits += 1;
            let lpl = c.lpl();
            let slot = lpl
                .find(a >> lpl.line_shift)
                .expect("inclusion: L1 line in the last private level");
            let t = c.now;
            let id = self.id;
            crate::cpu::agent::perform(self.state(), id, slot, op, a, t)
        } else {
            self.l1d_miss(a, op)
        }
    }
}
