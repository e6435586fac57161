//! Monitor primitives and the seed monitors.
//!
//! - [`counter`]: counters with a width, wrap and overflow flag, preload and reset-on-read;
//! - [`latency`]: the NUMAchine latency-timer formats (12-bit and the compact 7-bit format);
//! - [`numachine`]: the NUMAchine processor-card monitor (seed 000, sections 4.3-4.5),
//!   register for register.

pub mod counter;
pub mod latency;
pub mod numachine;
