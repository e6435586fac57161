//! Contended resources: a FIFO-reserved server (used for the station buses, memory modules,
//! network caches, ring interfaces, inter-ring interfaces and ring links) and the station bus.
//!
//! Every use of a resource is a reservation made at the simulated time the user is ready
//! (callers reserve from an event handler running at that time), so requests are served in
//! the order they become ready: FIFO arbitration. Exceptions: an NC data access that follows
//! its lookup, and the interfaces a ring message passes after entering the ring, are
//! reserved when the message is sent, for the time they will be needed; ring links are
//! reserved gap by gap (see `ring.rs`).

use crate::env::Env;
use crate::probe::Resource;
use engine::Tick;
/// A server that does one job at a time, first come first served.
#[derive(Clone, Debug)]
pub struct Fifo {
    /// End times of the reservations not yet finished, in order: a ring buffer whose
    /// capacity is a power of two (`ends.len()`), holding `len` entries from `head`.
    /// Hand-rolled rather than a `VecDeque` because every bus, memory, network-cache and
    /// ring use passes here (several times per miss).
    ends: Box<[Tick]>,
    head: u32,
    len: u32,
    /// Where the ground truth keeps this server's statistics (see `Env::observe_queue`).
    truth_slot: u32,
}

impl Default for Fifo {
    fn default() -> Fifo {
        Fifo {
            ends: vec![0; 8].into_boxed_slice(),
            head: 0,
            len: 0,
            truth_slot: 0,
        }
    }
}

impl Fifo {
    /// Reserves the server for `busy` ticks from `t` or when it frees, whichever is later.
    /// Returns the start time; reports the use as a `Queue` observation under `res`.
    #[inline]
    pub fn acquire<S: Copy>(
        &mut self,
        env: &mut Env<S>,
        res: Resource,
        t: Tick,
        busy: Tick,
    ) -> Tick {
        let mask = self.ends.len() as u32 - 1;
        while self.len > 0 && self.ends[(self.head & mask) as usize] <= t {
            self.head = self.head.wrapping_add(1);
            self.len -= 1;
        }
        let queue = self.len;
        let start = if self.len == 0 {
            t
        } else {
            let last = self.ends[(self.head.wrapping_add(self.len - 1) & mask) as usize];
            last.max(t)
        };
        if self.len as usize == self.ends.len() {
            self.grow();
        }
        let mask = self.ends.len() as u32 - 1;
        self.ends[(self.head.wrapping_add(self.len) & mask) as usize] = start + busy;
        self.len += 1;
        if env.any_probe() && busy > 0 {
            env.observe_queue(&mut self.truth_slot, res, t, start - t, busy, queue);
        }
        start
    }

    /// Doubles the ring, unwrapping it so the entries start at index 0.
    #[cold]
    fn grow(&mut self) {
        let cap = self.ends.len();
        let mut v = Vec::with_capacity(cap * 2);
        for k in 0..self.len {
            v.push(self.ends[(self.head.wrapping_add(k) as usize) & (cap - 1)]);
        }
        v.resize(cap * 2, 0);
        self.ends = v.into_boxed_slice();
        self.head = 0;
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
    /// A transaction ready at `t` (with a cache line of data when `data`); returns when the
    /// bus is granted to it (the end of its arbitration cycles) and when it has been delivered
    /// to its receiver. Arbitration is counted as part of the occupancy.
    pub fn transfer<S: Copy>(
        &mut self,
        env: &mut Env<S>,
        station: u16,
        timing: &BusTiming,
        t: Tick,
        data: bool,
    ) -> (Tick, Tick) {
        let busy = timing.arbitration + timing.address + if data { timing.line_data } else { 0 };
        let start = self.server.acquire(env, Resource::Bus(station), t, busy);
        (start + timing.arbitration, start + busy)
    }
}
