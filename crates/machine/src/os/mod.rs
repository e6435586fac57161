//! The operating-system model (issue 15 item 1): processes, their page tables and process
//! table in simulated memory, and the supervisor code paths (context switch, timer
//! interrupt, system calls, TLB-miss and page-fault handlers) that run on the simulated
//! processors in supervisor state.
//!
//! # Model
//! - **Processes** (`Process`): a name, its software threads, its entry in the *process
//!   table* (a region of simulated memory: `saved_registers + 1` words per thread, the MSR
//!   last, then `2 x virtual_counters` words of counter virtualization; `OsCfg::entry_words`),
//!   and its *page table* (`page_table_bytes` of simulated memory, 16 bytes per page
//!   pair). Each process's data structures are its own allocations (named `process/name`);
//!   the allocator never gives two processes the same frame, and a process's virtual pages
//!   are numbered as the physical frames the placement gave them (`addr::Place`: the
//!   workload's own, or the preset's default), so translation costs nothing on the hit path
//!   and two processes never alias (as with a TLB tagged by address-space id).
//! - **Supervisor paths** (`kernel`, methods of `Ctx` run by the thread itself): each enters
//!   supervisor state (MSR[PR] = 0) with the exception entry (`cpu.exception_cycles`), runs
//!   its named instruction count and its loads and stores of the tables (real references:
//!   they take cycles, miss and evict user lines), and returns to the thread's user MSR.
//!   The context switch is run by the incoming thread when it first issues after the switch:
//!   it stores the outgoing thread's registers and MSR into that thread's process-table entry
//!   and loads its own from its entry (replacing `[sched] switch_cycles`).
//! - **Scheduling** (`sched`): the quantum is `os.quantum_cycles`, ended at a timer interrupt
//!   (`os.timer_period_cycles` on each busy core); a thread blocked in a system call
//!   (`Ctx::io_wait`) gives its context to another ready thread, or leaves it idle.
//!
//! Without an `[os]` section none of this exists (`State::os` is `None`): every thread is in
//! user state, process 0, and runs are exactly as before.

pub mod boot;
pub mod config;
pub mod kernel;
#[cfg(test)]
mod tests;

use crate::addr::Addr;

/// Counts of the supervisor paths (the ground truth's `os` section).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OsStats {
    pub switches: u64,
    /// Processor cycles from the start of each switch path to its end (its own stalls
    /// included), summed.
    pub switch_cycles: u64,
    pub timer_interrupts: u64,
    pub timer_cycles: u64,
    pub syscalls: u64,
    pub syscall_cycles: u64,
    pub tlb_misses: u64,
    pub tlb_cycles: u64,
    pub page_faults: u64,
    /// Counter virtualization's part of the switch paths: the save and restore of
    /// `virtual_counters` registers, in processor cycles.
    pub virt_cycles: u64,
    /// The memory system's commands in the switch paths (FlashPoint's procedure delta,
    /// `MemorySystem::switch_command`) and their processor cycles (fence and uncached load).
    pub switch_commands: u64,
    pub switch_command_cycles: u64,
    /// The timer's monitor daemon (`[os.daemon]`): runs and processor cycles (its part of
    /// the timer paths, from its first reference to its last).
    pub daemon_runs: u64,
    pub daemon_cycles: u64,
    pub io_waits: u64,
    /// Processor cycles threads asked to wait for I/O, summed.
    pub io_cycles: u64,
}

/// A process.
#[derive(Clone, Debug)]
pub struct Process {
    pub name: String,
    /// Marked (MSR[PM] set in its threads' MSR from the start: `--mark`).
    pub marked: bool,
    /// Its software threads (global ids), in their order within the process.
    pub threads: Vec<usize>,
    /// Base of its page table in simulated memory.
    pub page_table: Addr,
    /// Pages (page numbers) it has touched: a first touch is a page fault.
    pub touched: std::collections::HashSet<u64>,
}

/// The operating system's state.
#[derive(Clone, Debug)]
pub struct Os {
    pub cfg: config::OsCfg,
    pub processes: Vec<Process>,
    /// Base of the process table: an entry of `entry_bytes()` per software thread.
    pub process_table: Addr,
    /// The run-queue word the timer handler reads and writes.
    pub run_queue: Addr,
    /// The monitor daemon's state word (with `[os.daemon]`; else 0), and the index of the
    /// value it writes next.
    pub daemon_word: Addr,
    pub daemon_next: usize,
    pub stats: OsStats,
}

/// Most software threads the process table holds.
pub const MAX_THREADS: u64 = 4096;

impl Os {
    /// Bytes of one thread's process-table entry.
    pub fn entry_bytes(&self) -> u64 {
        self.cfg.entry_words() * 8
    }
    /// Address of software thread `tid`'s process-table entry.
    pub fn entry(&self, tid: usize) -> Addr {
        self.process_table + tid as u64 * self.entry_bytes()
    }
    /// Address of the page-table entry of page pair `vpn2` in process `pid`'s page table.
    pub fn pte(&self, pid: u16, vpn2: u64) -> Addr {
        let pt = self.processes.get(pid as usize).map_or(0, |p| p.page_table);
        pt + ((vpn2 << 4) & (self.cfg.page_table_bytes - 1))
    }
}
