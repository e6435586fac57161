//! The `[cmp]` section of a preset: the crossbar between the cores and the shared level's
//! slices, and the memory controllers behind the slices. The shared level itself (size,
//! slices, hash, latency, occupancy, prefetcher) is `[[caches.shared]]`.

use crate::error::ConfigError;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct CmpCfg {
    /// System-clock cycles from a crossbar input port to an output port.
    pub crossbar_traversal_cycles: u32,
    /// Bytes a crossbar port moves per system cycle (a message occupies each port it uses
    /// one cycle per flit: a request or acknowledgement is one flit, a line adds
    /// `line_bytes / flit_bytes`).
    pub crossbar_flit_bytes: u32,
    /// Memory controllers, each a `mem::MemoryModule` (one access at a time).
    pub memory_controllers: u32,
    /// Addresses interleave over the controllers in blocks of this many bytes.
    pub interleave_bytes: u64,
    /// System-clock cycles of one memory access (the controller's occupancy and latency).
    pub memory_cycles: u32,
    /// System-clock cycles between a slice and a memory controller, each way.
    pub memory_link_cycles: u32,
    /// Largest NACK back-off, in processor cycles.
    pub backoff_cycles: u32,
}

impl CmpCfg {
    pub fn validate(&self, _procs: usize) -> Result<(), ConfigError> {
        let e = |f: &str, m: String| Err(ConfigError(format!("cmp.{f}: {m}")));
        if !(1..=64).contains(&self.memory_controllers) {
            return e(
                "memory_controllers",
                format!("{} is not in 1..=64", self.memory_controllers),
            );
        }
        if self.crossbar_flit_bytes < 8 || !self.crossbar_flit_bytes.is_power_of_two() {
            return e(
                "crossbar_flit_bytes",
                format!(
                    "{} is not a power of two of at least 8",
                    self.crossbar_flit_bytes
                ),
            );
        }
        if self.interleave_bytes == 0 || !self.interleave_bytes.is_power_of_two() {
            return e(
                "interleave_bytes",
                format!("{} is not a power of two", self.interleave_bytes),
            );
        }
        if self.memory_cycles == 0 {
            return e("memory_cycles", "must be at least 1".into());
        }
        if self.backoff_cycles == 0 {
            return e("backoff_cycles", "must be at least 1".into());
        }
        Ok(())
    }
}
