//! Monitor primitives and the seed monitors.
//!
//! - [`counter`]: counters with a width, wrap and overflow flag, preload and reset-on-read;
//! - [`latency`]: the NUMAchine latency-timer formats (12-bit and the compact 7-bit format);
//! - [`numachine`]: the NUMAchine processor-card monitor (seed 000, sections 4.3-4.5),
//!   register for register;
//! - [`flashpoint`]: the FlashPoint view of the statistics records FlashPoint keeps in the
//!   FLASH protocol (seed 004, section 3.1.3).

pub mod counter;
pub mod flashpoint;
pub mod latency;
pub mod numachine;
