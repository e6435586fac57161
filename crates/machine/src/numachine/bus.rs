//! Contended resources: a FIFO-reserved server (used for the station buses, memory modules,
//! network caches, ring interfaces, inter-ring interfaces and ring links) and the station bus.
//!
//! Every use of a resource is a reservation made at the simulated time the user is ready
//! (callers reserve from an event handler running at that time), so requests are served in
//! the order they become ready: FIFO arbitration. Exceptions: an NC data access that follows
//! its lookup, and the interfaces a ring message passes after entering the ring, are
//! reserved when the message is sent, for the time they will be needed; ring links are
//! reserved gap by gap (see `ring.rs`).

use crate::probe::Resource;
use crate::sim::Env;
use engine::Tick;
use std::collections::VecDeque;

/// A server that does one job at a time, first come first served.
#[derive(Clone, Debug, Default)]
pub struct Fifo {
    /// End times of the reservations not yet finished, in order.
    ends: VecDeque<Tick>,
    /// Where the ground truth keeps this server's statistics (see `Env::observe_queue`).
    truth_slot: u32,
}

impl Fifo {
    /// Reserves the server for `busy` ticks from `t` or when it frees, whichever is later.
    /// Returns the start time; reports the use as a `Queue` observation under `res`.
    pub fn acquire(&mut self, env: &mut Env, res: Resource, t: Tick, busy: Tick) -> Tick {
        while self.ends.front().is_some_and(|&e| e <= t) {
            self.ends.pop_front();
        }
        let queue = self.ends.len() as u32;
        let start = self.ends.back().map_or(t, |&e| e.max(t));
        self.ends.push_back(start + busy);
        if env.any_probe() && busy > 0 {
            env.observe_queue(&mut self.truth_slot, res, t, start - t, busy, queue);
        }
        start
    }
}

/// Bus timing of one transaction, in ticks.
#[derive(Clone, Copy, Debug)]
pub struct BusTiming {
    pub arbitration: Tick,
    pub address: Tick,
    /// Data cycles of one cache line.
    pub line_data: Tick,
}

/// A station's split-transaction bus: one transaction (arbitration, address packet, data
/// cycles) at a time. A request and its response are separate transactions.
#[derive(Clone, Debug, Default)]
pub struct Bus {
    server: Fifo,
}

impl Bus {
    /// A transaction ready at `t` (with a cache line of data when `data`); returns when it
    /// has been delivered to its receiver. Arbitration is counted as part of the occupancy.
    pub fn transfer(
        &mut self,
        env: &mut Env,
        station: u16,
        timing: &BusTiming,
        t: Tick,
        data: bool,
    ) -> Tick {
        let busy = timing.arbitration + timing.address + if data { timing.line_data } else { 0 };
        self.server.acquire(env, Resource::Bus(station), t, busy) + busy
    }
}
