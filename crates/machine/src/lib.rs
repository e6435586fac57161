//! The simulated multiprocessor: processors with private caches, the memory systems of the
//! presets (message-level coherence over contended interconnects), probe points, and the
//! ground-truth collector.
//!
//! Invariants: the machine does no I/O and reads no clock; it serializes nothing (the outer
//! crates do); same preset, seed and threads give the same run. See ARCHITECTURE.md.

#[cfg(test)]
mod act_tests;
pub mod addr;
pub mod bgq;
pub mod cache;
pub mod cmp;
pub mod code_blocks;
pub mod config;
pub mod cpu;
pub mod dir;
pub mod env;
pub mod error;
pub mod event;
pub mod fault;
pub mod flash;
#[cfg(test)]
mod hits_tests;
pub mod ideal;
pub mod l1_misses;
pub mod mem;
pub mod memory_system;
pub mod memsys;
#[cfg(test)]
mod module_graph;
pub mod msg;
pub mod net;
pub mod numachine;
#[cfg(test)]
mod op_tests;
pub mod origin;
pub mod os;
pub mod probe;
pub mod retire_sink;
#[cfg(test)]
mod run_ahead_tests;
pub mod sched;
#[cfg(test)]
mod sched_tests;
pub mod settings;
pub mod sim;
mod spin_check;
pub mod state;
#[cfg(test)]
mod test_probes;
pub mod tester;
pub mod truth;
pub mod uncached;

pub use addr::{Addr, MemoryMap, Place};
/// The Blue Gene/Q modules' former paths (`machine::bgq_events`, `machine::bgq_inst`), kept.
pub use bgq::{events as bgq_events, inst as bgq_inst};
pub use config::Preset;
pub use cpu::ctx::{
    Barrier, Ctx, Lock, MissInfo, Mix, Procedure, RefKind, Served, Traced, TracedRef,
};
pub use sim::{Machine, Options, RunSummary, SimError, Ticker};
