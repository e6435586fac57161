//! The `[ideal]` section of a preset.

use crate::error::ConfigError;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct IdealCfg {
    /// Number of memory nodes (processor p is on node p mod nodes).
    pub nodes: usize,
    /// One-way message latency between a processor and a home on its node (processor cycles).
    pub local_cycles: u32,
    /// One-way message latency between a processor and a remote home.
    pub remote_cycles: u32,
    /// Memory access time at the home.
    pub memory_cycles: u32,
    /// Maximum NACK back-off (processor cycles).
    pub backoff_cycles: u32,
}

impl IdealCfg {
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.nodes == 0 {
            return Err(ConfigError("ideal.nodes: must be at least 1".into()));
        }
        if self.backoff_cycles == 0 {
            return Err(ConfigError(
                "ideal.backoff_cycles: must be at least 1".into(),
            ));
        }
        Ok(())
    }
}
