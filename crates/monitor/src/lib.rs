//! Monitor primitives, the seed monitors, and the registry the command line uses.
//!
//! - [`plugin`]: the [`Monitor`] trait every monitor implements and the [`registry`] that lists
//!   them (`pmusim list monitors`); a new monitor is a folder here and a line in the registry;
//! - [`c2c`]: a cache-line sharing view like `perf c2c` (exact; attached as a monitor);
//! - [`counting`]: named events a monitor counts for `pmusim stat -e` (perf-style);
//! - [`counter`]: counters with a width, wrap and overflow flag, preload and reset-on-read;
//! - [`latency`]: the NUMAchine latency-timer formats (12-bit and the compact 7-bit format);
//! - [`numachine`]: the NUMAchine processor-card monitor (seed 000, sections 4.3-4.5),
//!   register for register;
//! - [`flashpoint`]: FlashPoint, the statistics records the FLASH protocol keeps (seed 004,
//!   section 3.1.3), their report and the seed's study;
//! - [`power2`]: the POWER2 Performance Monitor (seed 003, issue 15): MMCR, 22 counters,
//!   user/supervisor/marked modes, the Instruction Match Register and the SPE bit.
//! - [`upc`]: Blue Gene/Q's distributed performance counters (seed 001): UPC_P, UPC_L2, UPC_C
//!   and the daisy chain, Mode 0.

pub mod addie;
pub mod c2c;
pub mod counter;
pub mod counting;
pub mod flashpoint;
pub mod latency;
pub mod memctl;
pub mod numachine;
pub mod plugin;
pub mod power2;
pub mod upc;
pub mod virt;

pub use plugin::{registry, Monitor};
