//! The supervisor code paths, run by a simulated thread on its processor (methods of `Ctx`):
//! each is real code of the thread's core (instructions retired, loads and stores through the
//! caches), executed in supervisor state (MSR[PR] = 0). What each does is in `os`'s module
//! documentation; the numbers are `[os]` preset fields.

use crate::cpu::context::{MSR_PM, MSR_PR};
use crate::cpu::ctx::Ctx;
use crate::cpu::{pipeline::Ps, Block, Class};
use crate::sched;

/// Which path ran (for the cycle totals of `OsStats`).
#[derive(Clone, Copy)]
enum Path {
    Switch,
    Timer,
    Syscall,
    Tlb,
}

/// `msr` with its process-mark bit set to `on`.
fn with_pm(msr: u32, on: bool) -> u32 {
    if on {
        msr | MSR_PM
    } else {
        msr & !MSR_PM
    }
}

impl Ctx {
    /// Enters supervisor state: the exception entry, then the MSR's PR bit cleared. Returns
    /// the core's local time at entry.
    fn kernel_enter(&mut self) -> u64 {
        let p = self.id;
        let st = self.state();
        let msr = st.cores[p].msr & !MSR_PR;
        sched::exec::mode_change(st, p, msr);
        let c = &mut st.cores[p];
        let t0 = c.now;
        let e = c.timing.exception;
        c.kill(Ps::KilledException, e, 1);
        t0
    }

    /// Returns to user state (the thread's MSR with PR set; PM as it is now), adding the
    /// path's elapsed cycles to its total.
    fn kernel_leave(&mut self, t0: u64, path: Path) {
        let p = self.id;
        let st = self.state();
        let msr = st.cores[p].msr | MSR_PR;
        sched::exec::mode_change(st, p, msr);
        let c = &mut st.cores[p];
        let cycles = (c.now - t0) / c.period;
        if let Some(os) = st.os.as_mut() {
            let s = &mut os.stats;
            match path {
                Path::Switch => s.switch_cycles += cycles,
                Path::Timer => s.timer_cycles += cycles,
                Path::Syscall => s.syscall_cycles += cycles,
                Path::Tlb => s.tlb_cycles += cycles,
            }
        }
    }

    /// The operating system's work when the thread (re)starts issuing: the context switch
    /// into it, then a due timer interrupt. Not while it is in supervisor state already (a
    /// path that blocked on a miss resumes where it was).
    pub(crate) fn os_resume(&mut self) {
        let p = self.id;
        let tid = self.gtid;
        if self.core().msr & MSR_PR == 0 {
            return;
        }
        // The thread may have resumed from a blocking access whose result it has not read
        // yet: the paths' own loads must not replace it.
        let result = self.core().result;
        let st = self.state();
        if std::mem::take(&mut st.sched.threads[tid].switch_pending) {
            let from = st.sched.threads[tid].switch_from.take();
            self.switch_path(from);
        }
        let c = &mut self.state().cores[p];
        if c.now >= c.next_timer {
            self.timer_path();
        }
        self.core().result = result;
    }

    /// The context switch into this thread: stores the outgoing thread's registers and MSR
    /// into its process-table entry, loads this thread's, plus the path's instructions.
    fn switch_path(&mut self, from: Option<usize>) {
        let t0 = self.kernel_enter();
        self.switch_command(from);
        let me = self.gtid;
        let (n, words, out_entry, in_entry) = {
            let os = self.state().os.as_ref().expect("an operating system");
            (
                os.cfg.switch_instructions,
                os.cfg.saved_registers + 1,
                from.map(|f| os.entry(f)),
                os.entry(me),
            )
        };
        self.core().retire_n(Class::Integer, n / 2);
        if let Some(out) = out_entry {
            for w in 0..words {
                self.handler_ref(out + 8 * w, true);
            }
        }
        self.core().retire_n(Class::Integer, n - n / 2);
        for w in 0..words {
            self.handler_ref(in_entry + 8 * w, false);
        }
        self.virtual_counters(out_entry, in_entry);
        self.state().os.as_mut().expect("os").stats.switches += 1;
        self.kernel_leave(t0, Path::Switch);
        self.check();
    }

    /// The memory system's command at a switch, first in the path so that the path's own
    /// misses are recorded as the incoming process's (as the ground truth charges them):
    /// FlashPoint's procedure delta moving the PP's current-procedure register from the
    /// outgoing thread's record to the incoming one's (FP-Proc: its procedure; by process:
    /// its process's array). The fence, then one uncached load (`os.stats.switch_command*`).
    fn switch_command(&mut self, from: Option<usize>) {
        let p = self.id;
        let st = self.state();
        let Some(f) = from else {
            return;
        };
        let out = &st.sched.threads[f].regs;
        let (from, to) = (
            (out.process, out.procedure),
            (st.cores[p].process, st.cores[p].procedure),
        );
        let Some(cost) = st.switch_hook(p, from, to) else {
            return;
        };
        let t0 = self.core().now;
        self.procedure_command(&cost);
        let c = self.core();
        let cycles = (c.now - t0) / c.period;
        if let Some(os) = self.state().os.as_mut() {
            os.stats.switch_commands += 1;
            os.stats.switch_command_cycles += cycles;
        }
    }

    /// Without an operating system, a thread the scheduler switched in (time-slicing a
    /// context, `[sched] switch_cycles`) issues the memory system's switch command when it
    /// next issues, so FlashPoint's procedure register follows it as under the OS's switch
    /// path (before, FP-Proc's records drifted to procedures no thread was in). Only with
    /// one context per core: several contexts interleave on a node's one register without
    /// a switch between them.
    pub(crate) fn sched_resume(&mut self) {
        let tid = self.gtid;
        let st = self.state();
        if st.sched.threads_per_core != 1
            || !std::mem::take(&mut st.sched.threads[tid].switch_pending)
        {
            return;
        }
        let from = st.sched.threads[tid].switch_from.take();
        let result = self.core().result;
        self.switch_command(from);
        self.core().result = result;
    }

    /// Counter virtualization's part of the switch (`[os] virtual_counters` = n; see
    /// `OsCfg::virtual_counters`): n uncached reads of the counter registers (a value each
    /// for the outgoing thread's end and the incoming one's start), then for the outgoing
    /// thread a load, add and store of each 64-bit total in its entry, and for the incoming
    /// one a store of each start value in its entry. The register values are the monitor's
    /// business (`monitor::virt`, which takes them at the `Switch` observation), so the
    /// reads are timed as uncached loads, not sent to the monitor.
    fn virtual_counters(&mut self, out_entry: Option<u64>, in_entry: u64) {
        let Some(os) = self.state().os.as_ref() else {
            return;
        };
        let n = os.cfg.virtual_counters;
        if n == 0 {
            return;
        }
        let regs = (os.cfg.saved_registers + 1) * 8;
        let t0 = self.core().now;
        let c = self.core();
        let each = c.timing.uncached;
        for _ in 0..n {
            c.retire(Class::Load);
            c.cnt.uncached += 1;
            c.charge(Ps::MultiprocessingStall, each);
        }
        if let Some(out) = out_entry {
            for w in 0..n {
                self.handler_ref(out + regs + 8 * w, false);
                self.core().retire(Class::Integer);
                self.handler_ref(out + regs + 8 * w, true);
            }
        }
        for w in 0..n {
            self.handler_ref(in_entry + regs + 8 * (n + w), true);
        }
        let c = self.core();
        let cycles = (c.now - t0) / c.period;
        self.state().os.as_mut().expect("os").stats.virt_cycles += cycles;
    }

    /// The timer interrupt: its handler reads and writes the run-queue word; the next one
    /// is a period later.
    fn timer_path(&mut self) {
        let t0 = self.kernel_enter();
        let (n, rq, period) = {
            let os = self.state().os.as_ref().expect("an operating system");
            (
                os.cfg.timer_instructions,
                os.run_queue,
                os.cfg.timer_period_cycles,
            )
        };
        {
            let c = self.core();
            let pt = period * c.period;
            c.next_timer = (c.now / pt + 1) * pt;
        }
        self.handler_ref(rq, false);
        self.core().retire_n(Class::Integer, n);
        self.handler_ref(rq, true);
        let os = self.state().os.as_mut().expect("os");
        os.stats.timer_interrupts += 1;
        if let Some(d) = &os.cfg.daemon {
            if os.stats.timer_interrupts.is_multiple_of(d.every) {
                self.daemon();
            }
        }
        self.kernel_leave(t0, Path::Timer);
    }

    /// The timer's monitor daemon (`[os.daemon]`), in supervisor state inside the timer
    /// path: loads its state word, reads its registers and writes the next value by
    /// programmed I/O (uncached, with the monitor's round trip), stores its state word.
    fn daemon(&mut self) {
        let (word, reads, n, reg, value) = {
            let os = self.state().os.as_mut().expect("os");
            let d = os.cfg.daemon.as_ref().expect("a daemon");
            let v = d.values[os.daemon_next % d.values.len()];
            os.daemon_next = (os.daemon_next + 1) % d.values.len();
            (
                os.daemon_word,
                d.reads.clone(),
                d.instructions,
                d.register,
                v,
            )
        };
        let t0 = self.core().now;
        self.handler_ref(word, false);
        for r in reads {
            self.monitor_read(r, 4);
        }
        self.core().retire_n(Class::Integer, n);
        self.monitor_write(reg, 4, value);
        self.handler_ref(word, true);
        let c = self.core();
        let cycles = (c.now - t0) / c.period;
        let s = &mut self.state().os.as_mut().expect("os").stats;
        s.daemon_runs += 1;
        s.daemon_cycles += cycles;
    }

    /// A system call's path: entry, a load and store of the thread's process-table entry,
    /// `os.syscall_instructions` plus `extra` instructions, return. `msr` changes the
    /// thread's MSR bits on the way out (`mark_process`).
    fn syscall_path(&mut self, extra: u64, set_pm: Option<bool>) {
        let t0 = self.kernel_enter();
        let me = self.gtid;
        let (n, entry) = {
            let os = self.state().os.as_ref().expect("an operating system");
            (os.cfg.syscall_instructions, os.entry(me))
        };
        self.handler_ref(entry, false);
        self.core().retire_n(Class::Integer, n + extra);
        if let Some(on) = set_pm {
            let p = self.id;
            let msr = with_pm(self.core().msr, on);
            sched::exec::mode_change(self.state(), p, msr);
        }
        self.handler_ref(entry, true);
        self.state().os.as_mut().expect("os").stats.syscalls += 1;
        self.kernel_leave(t0, Path::Syscall);
    }

    /// A system call of `extra` instructions beyond the path (`os.syscall_instructions`);
    /// without an operating system, `extra` integer instructions.
    pub fn syscall(&mut self, extra: u64) {
        if self.state().os.is_none() {
            return self.int(extra);
        }
        self.syscall_path(extra, None);
        self.check();
    }

    /// The program marks (or unmarks) its own process: a system call that sets MSR[PM] in
    /// the calling thread's MSR (seed 003, "Monitoring States"; the mark stays with the
    /// thread's state across switches). Without an operating system it sets the bit directly.
    pub fn mark_process(&mut self, on: bool) {
        if self.state().os.is_none() {
            // Retirements so far carry the old mark (`Observation::Retire`'s `who`), and
            // the monitors see the change (`Observation::Mode`).
            let p = self.id;
            self.state().flush_retired(p);
            let msr = with_pm(self.core().msr, on);
            sched::exec::mode_change(self.state(), p, msr);
            return;
        }
        self.syscall_path(0, Some(on));
        self.check();
    }

    /// A blocking system call: waits `cycles` processor cycles for I/O. With an operating
    /// system the thread gives its hardware context to another ready thread (or leaves it
    /// idle) and is woken when the I/O completes; without one it idles (`Ctx::idle`).
    pub fn io_wait(&mut self, cycles: u64) {
        if self.state().os.is_none() {
            return self.idle(cycles);
        }
        self.syscall_path(0, None);
        let c = self.core();
        let until = c.now + cycles * c.period;
        c.block = Block::Io { until };
        let s = &mut self.state().os.as_mut().expect("os").stats;
        s.io_waits += 1;
        s.io_cycles += cycles;
        self.block();
    }

    /// The TLB-miss handler under the operating system: supervisor state, the PTE loads from
    /// the process's page table, and on a process's first reference to the page the page
    /// fault (its instructions and the PTE's store).
    pub(crate) fn os_tlb_handler(&mut self, a: crate::addr::Addr, vpn2: u64) {
        let t0 = self.kernel_enter();
        let pid = self.core().process;
        let (n, pte, fault, fault_n) = {
            let page = self.state().map.page_bytes();
            let os = self.state().os.as_mut().expect("an operating system");
            let fault = os
                .processes
                .get_mut(pid as usize)
                .is_some_and(|p| p.touched.insert(a / page));
            (
                os.cfg.tlb_miss_instructions,
                os.pte(pid, vpn2),
                fault,
                os.cfg.page_fault_instructions,
            )
        };
        if fault {
            self.core().retire_n(Class::Integer, fault_n);
            self.handler_ref(pte, true);
            self.state().os.as_mut().expect("os").stats.page_faults += 1;
        }
        self.handler_ref(pte, false);
        self.handler_ref(pte + 8, false);
        self.core().retire_n(Class::Integer, n);
        self.state().os.as_mut().expect("os").stats.tlb_misses += 1;
        self.kernel_leave(t0, Path::Tlb);
    }
}
