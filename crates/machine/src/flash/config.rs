//! The `[flash]` section of a preset (seed 004, section 3.1): MAGIC interface delays, memory,
//! mesh, pointer store.
//!
//! All times are in **system cycles** (MAGIC at 100 MHz, so 10 ns each, the unit of the seed's
//! Tables 2 and 4). Handler latencies and occupancies are measured from the instructions of the
//! path each run takes (`flash::pp`); `[flash.handlers]` may override a handler with a fixed
//! cost (for experiments; empty in the built-in preset). Unknown names are errors naming the
//! handler.

use crate::error::ConfigError;
use crate::flash::flashpoint::{FlashProtocol, FpCfg};
use crate::flash::handlers::Handler;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Cost of one protocol handler on the protocol processor (PP).
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct HandlerCost {
    /// PP cycles from the handler's first instruction to its (last) send.
    pub latency: u32,
    /// PP cycles from the first instruction to the next "switch" (the PP is busy this long).
    pub occupancy: u32,
    /// Added to the latency for every sharer the handler walks (invalidation handlers).
    #[serde(default)]
    pub per_sharer_latency: u32,
    /// Added to the occupancy for every sharer the handler walks.
    #[serde(default)]
    pub per_sharer_occupancy: u32,
    /// Extra latency slot for instrumented protocols (FlashPoint's added instructions before
    /// the send). 0 in the default DP protocol.
    #[serde(default)]
    pub extra_latency: u32,
    /// Extra occupancy slot for instrumented protocols (FlashPoint's added instructions after
    /// the send). 0 in the default DP protocol.
    #[serde(default)]
    pub extra_occupancy: u32,
}

impl HandlerCost {
    /// (latency, occupancy) in PP cycles for a run that walks `sharers` list entries.
    pub fn cycles(&self, sharers: u32) -> (u32, u32) {
        let lat = self.latency + self.extra_latency + self.per_sharer_latency * sharers;
        let occ = self.occupancy + self.extra_occupancy + self.per_sharer_occupancy * sharers;
        (lat, occ.max(lat))
    }
}

#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct FlashCfg {
    /// Maximum NACK back-off (system cycles); the processor retries after 1..=this.
    pub backoff_cycles: u32,
    /// Processor bus to the PI inbound queue (system cycles).
    pub pi_in_cycles: u32,
    /// PI outbound queue to the processor's first (critical) word.
    pub pi_out_cycles: u32,
    /// NI inbound: network to the NI inbound queue.
    pub ni_in_cycles: u32,
    /// NI outbound: the send to the first router.
    pub ni_out_cycles: u32,
    /// Inbox: from a message at the head of its queue to the handler's first instruction
    /// (jump-table lookup, directory header load).
    pub dispatch_cycles: u32,
    /// Memory access time: from the speculative read's start to data in the data buffer.
    pub memory_cycles: u32,
    /// Cycles the memory is busy per line access (bandwidth; reads and write-backs).
    pub memory_busy_cycles: u32,
    /// Router fall-through per hop.
    pub router_cycles: u32,
    /// Cycles a link is busy per flit.
    pub flit_cycles: u32,
    /// Bytes per flit: a header is one flit, a line adds line_bytes / flit_bytes.
    pub flit_bytes: u32,
    /// Pointer/link store entries per node (sharer list cells beyond the header's own pointer).
    pub pointer_store_entries: u32,
    /// Fixed handler costs by name, replacing the measured ones (none by default).
    #[serde(default)]
    pub handlers: BTreeMap<String, HandlerCost>,
    /// The protocol: "dp" (default), "fp-noproc" or "fp-proc" (FlashPoint, seed 004 3.1.3).
    #[serde(default)]
    pub protocol: FlashProtocol,
    /// FlashPoint's added costs (used by fp-noproc and fp-proc only).
    #[serde(default)]
    pub flashpoint: FpCfg,
}

impl FlashCfg {
    pub fn validate(&self, procs: usize) -> Result<(), ConfigError> {
        let e = |f: &str, m: &str| Err(ConfigError(format!("flash.{f}: {m}")));
        if self.backoff_cycles == 0 {
            return e("backoff_cycles", "must be at least 1");
        }
        if self.flit_bytes == 0 {
            return e("flit_bytes", "must be at least 1");
        }
        if self.flit_cycles == 0 {
            return e("flit_cycles", "must be at least 1");
        }
        if self.pointer_store_entries == 0 {
            return e("pointer_store_entries", "must be at least 1");
        }
        // Every node allocates its store up front (6 bytes an entry): bound the total so a
        // preset cannot ask for gigabytes (the built-in 65,536 at 1024 nodes is the bound).
        let total = self.pointer_store_entries as u64 * procs as u64;
        if total > 1 << 26 {
            return Err(ConfigError(format!(
                "flash.pointer_store_entries: {} entries on each of {procs} nodes is {total} in all; at most {} (67108864 / nodes)",
                self.pointer_store_entries,
                (1u64 << 26) / procs.max(1) as u64
            )));
        }
        if procs > crate::flash::dir::MAX_NODES {
            return Err(ConfigError(format!(
                "procs: FLASH's pointer field holds {} nodes at most, not {procs}",
                crate::flash::dir::MAX_NODES
            )));
        }
        self.flashpoint.validate().map_err(ConfigError)?;
        for name in self.handlers.keys() {
            if Handler::from_name(name).is_none() {
                return e(
                    &format!("handlers.{name}"),
                    "no such handler (see flash::handlers::Handler for the names)",
                );
            }
        }
        for (name, c) in &self.handlers {
            if c.occupancy < c.latency {
                return e(
                    &format!("handlers.{name}"),
                    "occupancy is shorter than latency (the send is part of the occupancy)",
                );
            }
        }
        Ok(())
    }

    /// The fixed handler costs (`None`: measured from the handler's path) indexed by
    /// `Handler as usize`, and FlashPoint's configured extra cycles per handler
    /// (`[flash.flashpoint.extra]`, added to the measured or fixed cost; none by default).
    pub fn cost_table(&self) -> Vec<(Option<HandlerCost>, (u32, u32))> {
        Handler::ALL
            .iter()
            .map(|h| {
                let extra = match self.flashpoint.extra.get(h.name()) {
                    Some(e) if self.protocol != FlashProtocol::Dp => (e.latency, e.occupancy),
                    _ => (0, 0),
                };
                (self.handlers.get(h.name()).copied(), extra)
            })
            .collect()
    }
}
