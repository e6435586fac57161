//! The `numachine` preset's memory system (seed 000, section 4.1). Under construction.
pub mod config;

use crate::config::{ConfigError, Preset};
use crate::msg::ProcMsg;
use crate::sim::Env;
use engine::{Clocks, Tick};

#[derive(Clone, Copy, Debug)]
pub enum Ev {}

pub struct NumaSys {}

impl NumaSys {
    pub fn new(_p: &Preset, _c: &Clocks) -> Result<NumaSys, ConfigError> {
        Err(ConfigError(
            "the numachine memory system is not built yet".into(),
        ))
    }
    pub fn timeout_ticks(&self) -> Tick {
        0
    }
    pub fn backoff_ticks(&self) -> Tick {
        1
    }
    pub fn from_proc(&mut self, _env: &mut Env, _t: Tick, _p: usize, _m: ProcMsg) {}
    pub fn handle(&mut self, _env: &mut Env, _t: Tick, e: Ev) {
        match e {}
    }
}
