//! Memory modules: the home memory's timing, as a component a memory system composes.
//!
//! `MemoryModule` is the module NUMAchine's stations have (seed 000 4.1): one access at a
//! time, first come first served, each occupying the module for its access time; every use is
//! reported as a `Queue` observation of `Resource::Memory(node)` through
//! `Env::observe_queue`. FLASH's memory is still timed inside MAGIC (`flash::magic`, which
//! splits access latency from occupancy) and moves here when it is generalised.
//!
//! # Where a memory controller's buffer goes (issue 16)
//! Addie's controller puts a write buffer and a read buffer in front of the module: a request
//! enters the controller, is held or reordered in a buffer under the controller's settings
//! (written through an uncached window the controller registers, see `uncached`), and is then
//! issued to the module. That stage belongs between the caller and `MemoryModule::access`:
//! a `Controller` type here wrapping a `MemoryModule`, with the same `access` signature, so
//! a system switches by constructing one or the other. The module's timing below stays
//! unchanged.

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
