//! Memory modules: the home memory's timing, as a component a memory system composes.
//!
//! `MemoryModule` is the module NUMAchine's stations have (seed 000 4.1): one access at a
//! time, first come first served, each occupying the module for its access time; every use is
//! reported as a `Queue` observation of `Resource::Memory(node)` through
//! `Env::observe_queue`. FLASH's memory is still timed inside MAGIC (`flash::magic`, which
//! splits access latency from occupancy) and moves here when it is generalised.
//!
//! # The memory controller (issue 16)
//! With an enabled `[memctl]` section ([`config::MemCtlCfg`]) each home gets a
//! [`controller::Controller`] instead: seed 002's interface buffer ([`buffer`]: write buffer
//! with collapse, merge, watermark, read-around-write and read merge; read buffer with
//! read-ahead) in front of DRAM banks with open-row timing ([`dram`]). Every memory system
//! (`ideal`, `numachine`, `flash`, and `cmp` at its chip memory controllers) calls the
//! controller where it used its fixed memory timing;
//! without the section nothing changes.

pub mod buffer;
pub mod config;
pub mod controller;
pub mod dram;
#[cfg(test)]
mod tests;

use crate::env::Env;
use crate::net::bus::Fifo;
use crate::probe::Resource;
use engine::Tick;

/// A memory module serving one access at a time (no banks), each taking `access` ticks.
#[derive(Clone, Debug)]
pub struct MemoryModule {
    server: Fifo,
    access: Tick,
    res: Resource,
}

impl MemoryModule {
    /// The module of node `node`, whose accesses take `access` ticks.
    pub fn new(node: u16, access: Tick) -> MemoryModule {
        MemoryModule {
            server: Fifo::default(),
            access,
            res: Resource::Memory(node),
        }
    }

    /// One access ready at `t`: occupies the module from when it is free; returns when it is
    /// done (read data ready, write performed).
    #[inline]
    pub fn access<S: Copy>(&mut self, env: &mut Env<S>, t: Tick) -> Tick {
        self.server.acquire(env, self.res, t, self.access) + self.access
    }
}
