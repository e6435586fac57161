//! The `[numachine]` section of a preset (seed 000, section 4.1).

use crate::error::ConfigError;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct NumachineCfg {
    /// Processors on one station bus (NUMAchine: 4).
    pub procs_per_station: usize,
    /// Stations on one local ring (NUMAchine: 4).
    pub stations_per_ring: usize,
    /// Bus cycles of arbitration before a transaction's first packet.
    pub bus_arbitration_cycles: u32,
    /// Bus cycles of a command/address packet.
    pub bus_address_cycles: u32,
    /// Bytes moved per bus cycle (64-bit bus: 8).
    pub bus_bytes_per_cycle: u32,
    /// Memory module access time (bus cycles) before data can go on the bus.
    pub memory_cycles: u32,
    /// Network cache tag/state lookup time (bus cycles).
    pub nc_lookup_cycles: u32,
    /// Network cache data access time (bus cycles).
    pub nc_data_cycles: u32,
    /// Network cache size, associativity (lines of the L2's line size).
    pub nc_size_bytes: u64,
    pub nc_assoc: u32,
    /// Ring interface latency from bus to ring and back (bus cycles each way).
    pub ring_interface_cycles: u32,
    /// Ring cycles per hop between adjacent stations (ring clock = bus clock).
    pub ring_hop_cycles: u32,
    /// Bytes carried per ring slot (a packet).
    pub ring_bytes_per_slot: u32,
    /// Inter-ring interface latency (bus cycles each way through it).
    pub inter_ring_cycles: u32,
    /// Cycles per hop on the central ring.
    pub central_hop_cycles: u32,
    /// A request NACKed for this many bus cycles raises a bus error (seed: 4096).
    pub timeout_bus_cycles: u32,
    /// Maximum NACK back-off before a retry (bus cycles).
    pub backoff_bus_cycles: u32,
}

impl NumachineCfg {
    pub fn validate(&self, procs: usize) -> Result<(), ConfigError> {
        let e = |f: &str, m: &str| Err(ConfigError(format!("numachine.{f}: {m}")));
        if self.procs_per_station == 0 || self.procs_per_station > 8 {
            return e("procs_per_station", "must be 1 to 8");
        }
        if self.stations_per_ring == 0 || self.stations_per_ring > 8 {
            return e("stations_per_ring", "must be 1 to 8");
        }
        let stations = procs.div_ceil(self.procs_per_station);
        let rings = stations.div_ceil(self.stations_per_ring);
        if rings > 8 {
            return Err(ConfigError(format!(
                "procs: {procs} processors need {rings} local rings of {} stations of {}; the routing mask has room for 8 rings",
                self.stations_per_ring, self.procs_per_station
            )));
        }
        if procs > self.procs_per_station && !procs.is_multiple_of(self.procs_per_station) {
            return Err(ConfigError(format!(
                "procs: {procs} is not a multiple of numachine.procs_per_station ({})",
                self.procs_per_station
            )));
        }
        if stations > self.stations_per_ring && !stations.is_multiple_of(self.stations_per_ring) {
            return Err(ConfigError(format!(
                "procs: {stations} stations do not fill whole rings of {} (numachine.stations_per_ring); use a multiple of {} processors",
                self.stations_per_ring,
                self.stations_per_ring * self.procs_per_station
            )));
        }
        // Each zero is reported under its own field (issue 17: `ring_bytes_per_slot = 0` used
        // to be blamed on `bus_bytes_per_cycle`).
        for (f, v) in [
            ("bus_bytes_per_cycle", self.bus_bytes_per_cycle),
            ("ring_bytes_per_slot", self.ring_bytes_per_slot),
            ("timeout_bus_cycles", self.timeout_bus_cycles),
            ("backoff_bus_cycles", self.backoff_bus_cycles),
        ] {
            if v == 0 {
                return e(f, "must be positive");
            }
        }
        if !self.nc_size_bytes.is_power_of_two() {
            return e("nc_size_bytes", "must be a power of two");
        }
        if self.nc_assoc == 0 {
            return e("nc_assoc", "must be at least 1");
        }
        Ok(())
    }
}
