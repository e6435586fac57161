//! The memory-interface buffer of seed 002 ("DRAM memory interface buffer", Figure 5; issue 16
//! item 1) as a standalone component: a write buffer that snoops every write (collapse,
//! merge), posts writes with zero wait until full, accumulates to a watermark and then takes
//! priority for DRAM, lets reads pass queued writes and merges buffered bytes into them; and a
//! read buffer of whole lines with optional read-ahead. Every event is counted.
//!
//! The memory controller (`mem::controller`) puts it in front of a banked DRAM in every
//! memory system when the preset enables it.
//!
//! - [`config`]: sizes and policies, word mode (the seed's 32 words) or line mode;
//! - [`write_buffer`], [`read_buffer`]: the two buffers;
//! - [`timed`]: both in front of a DRAM with fixed transaction times (the arbitration);
//! - [`backing`]: the DRAM contents; [`stats`]: the event counts; [`mask`]: byte-valid masks.

pub mod backing;
pub mod config;
pub mod mask;
pub mod read_buffer;
pub mod stats;
#[cfg(test)]
mod tests;
pub mod timed;
pub mod write_buffer;

pub use backing::{Backing, SparseMemory};
pub use config::BufferConfig;
pub use mask::ByteMask;
pub use stats::BufferStats;
pub use timed::{flags, BufferedMemory, Dram, DramTiming, FixedDram};
pub use write_buffer::WriteKind;
