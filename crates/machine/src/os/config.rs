//! The `[os]` preset section: every number of the operating-system model (see `os`).
//! Absent, there is no operating system: runs are exactly as without this module.

use crate::error::ConfigError;
use serde::{Deserialize, Serialize};

/// The operating-system model's numbers, in processor cycles or instructions.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct OsCfg {
    /// Time slice: a software thread that has held its hardware context this many processor
    /// cycles is preempted (at the timer interrupt that ends it) when another thread waits
    /// for the context. A multiple of `timer_period_cycles`. Replaces `[sched]
    /// quantum_cycles`.
    #[serde(default = "d_quantum")]
    pub quantum_cycles: u64,
    /// The timer interrupt's period on every busy core (an idle core takes none: tickless).
    #[serde(default = "d_timer")]
    pub timer_period_cycles: u64,
    /// Integer instructions of the timer interrupt handler (beyond the exception entry and
    /// its load and store of the run-queue word in the process table).
    #[serde(default = "d_timer_instr")]
    pub timer_instructions: u64,
    /// Integer instructions of the context-switch path (choosing the next thread, switching
    /// the address space), beyond its loads and stores. Replaces `[sched] switch_cycles`:
    /// the switch's cost is what this code takes to run.
    #[serde(default = "d_switch_instr")]
    pub switch_instructions: u64,
    /// Registers (8-byte words) the switch stores into the outgoing thread's process-table
    /// entry and loads from the incoming one's; the MSR is one more word each way.
    #[serde(default = "d_saved")]
    pub saved_registers: u64,
    /// Integer instructions of a system call's path (entry to return; `Ctx::syscall`,
    /// `Ctx::mark_process`, `Ctx::io_wait`), beyond the exception entry and its load and
    /// store of the process's table entry.
    #[serde(default = "d_syscall")]
    pub syscall_instructions: u64,
    /// Integer instructions of the TLB-miss handler (with `[cpu.tlb]`; it replaces
    /// `cpu.tlb.refill_instructions`), beyond its two loads of page-table entries from the
    /// process's page table.
    #[serde(default = "d_tlb")]
    pub tlb_miss_instructions: u64,
    /// Integer instructions of the page-fault handler: a process's first reference to a page
    /// (found at its TLB miss, so only with `[cpu.tlb]`): allocating the frame and writing
    /// its page-table entry (one more store).
    #[serde(default = "d_fault")]
    pub page_fault_instructions: u64,
    /// Bytes of each process's page table in simulated memory (a power of two; entries of 16
    /// bytes per TLB entry's page pair, indexed by virtual page modulo the table).
    #[serde(default = "d_pt_bytes")]
    pub page_table_bytes: u64,
    /// Where the process table and page tables live: `node0` (every page on node 0, as a
    /// kernel's static data) or `round-robin` (pages dealt to nodes).
    #[serde(default = "d_place")]
    pub table_place: String,
    /// Counter virtualization (a monitor restricted to one process by counting per software
    /// thread, as `perf_event_open` counts one task): counter registers the switch path
    /// reads, each an uncached load of `cpu.uncached_cycles`. One read of each is both the
    /// end of the outgoing thread's interval and the start of the incoming one's (Linux's
    /// `event->count += now - prev_count` at sched-out, `prev_count = now` at sched-in); the
    /// outgoing thread's 64-bit totals are loaded, added to and stored back in its
    /// process-table entry and the incoming one's start values stored in its entry (real
    /// references, which extend each entry by `2 x virtual_counters` words). 0: none (a
    /// monitor asked to virtualize sets it to its counter count).
    #[serde(default)]
    pub virtual_counters: u64,
    /// A monitor daemon run by the timer interrupt (`[os.daemon]`; absent: none): supervisor
    /// code that reprograms a monitor register on the timer's period, as the IMR sampler of
    /// `pmusim study imr` does (issue 15 item 5). It costs what its code takes and appears
    /// in the ground truth as supervisor work (`ground_truth.os.daemon`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon: Option<DaemonCfg>,
}

/// The timer interrupt's monitor daemon: every `every` timer interrupts it loads its state
/// word (kernel data), reads `reads` (monitor-window offsets: programmed I/O, uncached),
/// runs `instructions` integer instructions, writes the next of `values` to `register` (a
/// monitor-window offset) and stores its state word.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct DaemonCfg {
    #[serde(default = "d_every")]
    pub every: u64,
    #[serde(default = "d_daemon_instr")]
    pub instructions: u64,
    #[serde(default)]
    pub reads: Vec<u64>,
    pub register: u64,
    /// Written in turn, round robin (at least one, at most 4096).
    pub values: Vec<u64>,
}

fn d_every() -> u64 {
    1
}
fn d_daemon_instr() -> u64 {
    60
}

fn d_quantum() -> u64 {
    1_000_000
}
fn d_timer() -> u64 {
    100_000
}
fn d_timer_instr() -> u64 {
    200
}
fn d_switch_instr() -> u64 {
    400
}
fn d_saved() -> u64 {
    32
}
fn d_syscall() -> u64 {
    150
}
fn d_tlb() -> u64 {
    20
}
fn d_fault() -> u64 {
    1_000
}
fn d_pt_bytes() -> u64 {
    64 * 1024
}
fn d_place() -> String {
    "node0".into()
}

impl Default for OsCfg {
    fn default() -> OsCfg {
        OsCfg {
            quantum_cycles: d_quantum(),
            timer_period_cycles: d_timer(),
            timer_instructions: d_timer_instr(),
            switch_instructions: d_switch_instr(),
            saved_registers: d_saved(),
            syscall_instructions: d_syscall(),
            tlb_miss_instructions: d_tlb(),
            page_fault_instructions: d_fault(),
            page_table_bytes: d_pt_bytes(),
            table_place: d_place(),
            virtual_counters: 0,
            daemon: None,
        }
    }
}

fn err<T>(field: &str, msg: impl std::fmt::Display) -> Result<T, ConfigError> {
    Err(ConfigError(format!("os.{field}: {msg}")))
}

impl OsCfg {
    /// 8-byte words of one thread's process-table entry: its saved registers, the MSR, and
    /// with counter virtualization its counter totals and start values.
    pub fn entry_words(&self) -> u64 {
        self.saved_registers + 1 + 2 * self.virtual_counters
    }
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.timer_period_cycles == 0 {
            return err("timer_period_cycles", "must be at least 1");
        }
        if self.quantum_cycles == 0 || !self.quantum_cycles.is_multiple_of(self.timer_period_cycles)
        {
            return err(
                "quantum_cycles",
                format!(
                    "{} is not a positive multiple of timer_period_cycles ({}): the quantum ends at a timer interrupt",
                    self.quantum_cycles, self.timer_period_cycles
                ),
            );
        }
        if self.virtual_counters > 64 {
            return err("virtual_counters", "at most 64 counter registers");
        }
        if let Some(d) = &self.daemon {
            if d.values.is_empty() || d.values.len() > 4096 {
                return err("daemon.values", "1 to 4096 values to write in turn");
            }
            if d.every == 0 {
                return err("daemon.every", "must be at least 1 (timer interrupts)");
            }
            if d.reads.len() > 64 {
                return err("daemon.reads", "at most 64 registers");
            }
        }
        if self.saved_registers > 1024 {
            return err("saved_registers", "at most 1024 words");
        }
        if !self.page_table_bytes.is_power_of_two() || self.page_table_bytes < 4096 {
            return err(
                "page_table_bytes",
                format!(
                    "{} is not a power of two of at least 4096",
                    self.page_table_bytes
                ),
            );
        }
        if self.table_place != "node0" && self.table_place != "round-robin" {
            return err(
                "table_place",
                format!("`{}` is not `node0` or `round-robin`", self.table_place),
            );
        }
        Ok(())
    }
    /// The process and page tables' placement.
    pub fn place(&self) -> crate::addr::Place {
        if self.table_place == "round-robin" {
            crate::addr::Place::RoundRobin
        } else {
            crate::addr::Place::Node(0)
        }
    }
}
