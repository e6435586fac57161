//! The `flash` preset's memory system (seed 004, section 3.1). Under construction.
pub mod config;

use crate::addr::{Addr, StructId};
use crate::config::{ConfigError, Preset};
use crate::msg::ProcMsg;
use crate::sim::Env;
use engine::{Clocks, Tick};

#[derive(Clone, Copy, Debug)]
pub enum Ev {}

pub struct FlashSys {}

impl FlashSys {
    pub fn new(_p: &Preset, _c: &Clocks) -> Result<FlashSys, ConfigError> {
        Err(ConfigError(
            "the flash memory system is not built yet".into(),
        ))
    }
    pub fn backoff_ticks(&self) -> Tick {
        1
    }
    pub fn from_proc(&mut self, _env: &mut Env, _t: Tick, _p: usize, _m: ProcMsg) {}
    pub fn handle(&mut self, _env: &mut Env, _t: Tick, e: Ev) {
        match e {}
    }
    pub fn alloc_commands(&mut self, _a: Addr, _bytes: u64, _id: StructId) -> Vec<(Addr, u64)> {
        Vec::new()
    }
    pub fn procedure_command(&mut self, _p: usize, _prev: u32, _cur: u32) -> Option<Addr> {
        None
    }
}
