//! The `[flash]` section of a preset (seed 004, section 3.1).

use crate::config::ConfigError;
use serde::{Deserialize, Serialize};

#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct FlashCfg {
    /// Maximum NACK back-off (system cycles).
    pub backoff_cycles: u32,
}

impl FlashCfg {
    pub fn validate(&self, _procs: usize) -> Result<(), ConfigError> {
        Ok(())
    }
}
