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
    /// Entries of a core's store queue in front of its crossbar input port (write-through
    /// L1 D only): a store is posted at once while fewer than this many stores wait for the
    /// port, else the core waits for the oldest to leave (other stall). Default 16.
    #[serde(
        default = "default_store_queue",
        skip_serializing_if = "is_default_store_queue"
    )]
    pub store_queue: u32,
    /// Flits of a write-through store on the request crossbar (the request and up to
    /// `crossbar_flit_bytes` of data). Default 2.
    #[serde(
        default = "default_store_flits",
        skip_serializing_if = "is_default_store_flits"
    )]
    pub store_flits: u32,
    /// The L1P stream prefetcher (`caches.l1d.prefetch = "stream"`, `cmp::l1p`): lines it
    /// asks for ahead of a stream's miss, lines it remembers, streams it tracks. Defaults 2,
    /// 32, 8.
    #[serde(
        default = "default_l1p_depth",
        skip_serializing_if = "is_default_l1p_depth"
    )]
    pub l1p_depth: u32,
    #[serde(
        default = "default_l1p_lines",
        skip_serializing_if = "is_default_l1p_lines"
    )]
    pub l1p_lines: u32,
    #[serde(
        default = "default_l1p_streams",
        skip_serializing_if = "is_default_l1p_streams"
    )]
    pub l1p_streams: u32,
}

fn default_store_queue() -> u32 {
    16
}
fn is_default_store_queue(v: &u32) -> bool {
    *v == default_store_queue()
}
fn default_store_flits() -> u32 {
    2
}
fn is_default_store_flits(v: &u32) -> bool {
    *v == default_store_flits()
}
fn default_l1p_depth() -> u32 {
    2
}
fn is_default_l1p_depth(v: &u32) -> bool {
    *v == default_l1p_depth()
}
fn default_l1p_lines() -> u32 {
    32
}
fn is_default_l1p_lines(v: &u32) -> bool {
    *v == default_l1p_lines()
}
fn default_l1p_streams() -> u32 {
    8
}
fn is_default_l1p_streams(v: &u32) -> bool {
    *v == default_l1p_streams()
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
        for (f, v, max) in [
            ("store_queue", self.store_queue, 1024),
            ("store_flits", self.store_flits, 64),
            ("l1p_depth", self.l1p_depth, 64),
            ("l1p_lines", self.l1p_lines, 1024),
            ("l1p_streams", self.l1p_streams, 1024),
        ] {
            if !(1..=max).contains(&v) {
                return e(f, format!("{v} is not in 1..={max}"));
            }
        }
        Ok(())
    }
}
