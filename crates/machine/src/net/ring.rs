//! The ring hierarchy: stations on slotted unidirectional local rings, and (with more than one
//! local ring) an inter-ring interface per local ring joining it to the central ring.
//!
//! Timing model. A message of `k` packets (one address/command packet, plus one packet per
//! `ring_bytes_per_slot` bytes of data) leaves through the sending station's ring interface
//! (`ring_interface_cycles`), crosses each link of its path, occupying it for `k` ring cycles
//! (the slotted ring is modelled as per-link reservation: a message reserves every link on
//! its path when it enters the ring, taking on each link the first free gap at or after its
//! head's arrival there; a message's packets stay contiguous),
//! and enters the destination station through its ring interface. Its head moves one station
//! per `ring_hop_cycles`; it has arrived when its last packet has. A message to another local
//! ring goes round its own ring to the inter-ring interface (`inter_ring_cycles`), along the
//! central ring (`central_hop_cycles` a hop), through the destination ring's inter-ring
//! interface and round the destination ring. The ring clock is the bus clock.
//!
//! Station numbering: station `s` is at position `s % stations_per_ring` of local ring
//! `s / stations_per_ring`; the inter-ring interface sits after the last station of its ring.

use super::bus::Fifo;
use crate::env::Env;
use crate::probe::Resource;
use engine::Tick;
use std::collections::VecDeque;

/// A NUMAchine routing mask (seed 000, Table 4.1: DST routing mask): one bit per local ring
/// and one bit per station position within a ring. A multicast goes to every station of the
/// cross product, so it can reach stations that hold no copy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RoutingMask {
    pub rings: u8,
    pub stations: u8,
}

impl RoutingMask {
    pub fn is_empty(&self) -> bool {
        self.rings == 0
    }
    pub fn of(topo: &Topology, s: u16) -> RoutingMask {
        let (r, i) = topo.position(s);
        RoutingMask {
            rings: 1 << r,
            stations: 1 << i,
        }
    }
    pub fn add(&mut self, topo: &Topology, s: u16) {
        let m = RoutingMask::of(topo, s);
        self.rings |= m.rings;
        self.stations |= m.stations;
    }
    /// True if a multicast to this mask reaches station `s`.
    pub fn reaches(&self, topo: &Topology, s: u16) -> bool {
        let (r, i) = topo.position(s);
        self.rings & (1 << r) != 0 && self.stations & (1 << i) != 0
    }
    /// Every station a multicast to this mask reaches, in station order.
    pub fn stations(&self, topo: &Topology) -> Vec<u16> {
        (0..topo.stations as u16)
            .filter(|&s| self.reaches(topo, s))
            .collect()
    }
}

/// A ring link's reservations: disjoint busy intervals in time order. A message takes the
/// first gap long enough for its packets at or after the time its head reaches the link, so
/// a message reserving ahead does not hold up one that passes earlier through a free slot.
#[derive(Clone, Debug, Default)]
struct Link {
    busy: VecDeque<(Tick, Tick)>,
}

impl Link {
    /// Reserves `len` from `t` or the first gap after it; `now` is the simulated time (no
    /// later request can start before it). Returns the start.
    fn reserve(&mut self, now: Tick, t: Tick, len: Tick) -> Tick {
        while self.busy.front().is_some_and(|&(_, e)| e <= now) {
            self.busy.pop_front();
        }
        let mut start = t;
        let mut at = self.busy.len();
        for (i, &(s, e)) in self.busy.iter().enumerate() {
            if e <= start {
                continue;
            }
            if s >= start + len {
                at = i;
                break;
            }
            start = e;
        }
        self.busy.insert(at, (start, start + len));
        start
    }
}

/// Shape of the machine.
#[derive(Clone, Debug)]
pub struct Topology {
    pub procs_per_station: usize,
    pub stations_per_ring: usize,
    pub stations: usize,
    pub rings: usize,
}

impl Topology {
    pub fn new(procs: usize, procs_per_station: usize, stations_per_ring: usize) -> Topology {
        let stations = procs.div_ceil(procs_per_station);
        Topology {
            procs_per_station,
            stations_per_ring,
            stations,
            rings: stations.div_ceil(stations_per_ring),
        }
    }
    pub fn station_of(&self, p: usize) -> u16 {
        (p / self.procs_per_station) as u16
    }
    /// (local ring, position on it) of station `s`.
    pub fn position(&self, s: u16) -> (usize, usize) {
        let s = s as usize;
        (s / self.stations_per_ring, s % self.stations_per_ring)
    }
    /// Nodes on local ring `r`: its stations, plus the inter-ring interface if there are
    /// several rings.
    fn ring_nodes(&self, r: usize) -> usize {
        if self.rings == 1 {
            self.stations - r * self.stations_per_ring
        } else {
            self.stations_per_ring + 1
        }
    }
    /// Processors of station `s`.
    pub fn procs_of(&self, s: u16) -> std::ops::Range<usize> {
        let a = s as usize * self.procs_per_station;
        a..a + self.procs_per_station
    }
}

/// Ring timing, in ticks.
#[derive(Clone, Copy, Debug)]
pub struct RingTiming {
    pub slot: Tick,
    pub interface: Tick,
    pub hop: Tick,
    pub inter_ring: Tick,
    pub central_hop: Tick,
}

/// The rings and their interfaces, as contended resources.
#[derive(Debug)]
pub struct Rings {
    pub topo: Topology,
    timing: RingTiming,
    interfaces: Vec<Fifo>,
    inter_ring: Vec<Fifo>,
    /// `local[r][i]`: link from node i to node i+1 of local ring r.
    local: Vec<Vec<Link>>,
    central: Vec<Link>,
}

impl Rings {
    pub fn new(topo: Topology, timing: RingTiming) -> Rings {
        let local = (0..topo.rings)
            .map(|r| vec![Link::default(); topo.ring_nodes(r)])
            .collect();
        Rings {
            interfaces: vec![Fifo::default(); topo.stations],
            inter_ring: vec![Fifo::default(); topo.rings],
            central: vec![Link::default(); topo.rings],
            local,
            timing,
            topo,
        }
    }

    /// Goes round local ring `r` from node `from` to node `to`; returns the head's time there.
    fn travel_local(
        &mut self,
        now: Tick,
        r: usize,
        from: usize,
        to: usize,
        mut head: Tick,
        k: Tick,
    ) -> Tick {
        let n = self.local[r].len();
        let mut i = from;
        while i != to {
            let busy = k * self.timing.slot;
            head = self.local[r][i].reserve(now, head, busy) + self.timing.hop;
            i = (i + 1) % n;
        }
        head
    }

    /// Sends a message of `packets` packets from station `from` (ready at `t`) to station
    /// `to`; returns when its last packet has entered `to` through its ring interface.
    pub fn send<S: Copy>(
        &mut self,
        env: &mut Env<S>,
        t: Tick,
        from: u16,
        to: u16,
        packets: u32,
    ) -> Tick {
        debug_assert_ne!(from, to);
        let k = packets as Tick;
        let tm = self.timing;
        let occupy = k * tm.slot;
        let now = env.q.now();
        let start =
            self.interfaces[from as usize].acquire(env, Resource::RingInterface(from), t, occupy);
        let mut head = start + tm.interface;
        let (ra, ia) = self.topo.position(from);
        let (rb, ib) = self.topo.position(to);
        if ra == rb {
            head = self.travel_local(now, ra, ia, ib, head, k);
        } else {
            let iri = self.topo.stations_per_ring;
            head = self.travel_local(now, ra, ia, iri, head, k);
            head = self.inter_ring[ra].acquire(env, Resource::InterRing(ra as u16), head, occupy)
                + tm.inter_ring;
            let n = self.central.len();
            let mut c = ra;
            while c != rb {
                head = self.central[c].reserve(now, head, occupy) + tm.central_hop;
                c = (c + 1) % n;
            }
            head = self.inter_ring[rb].acquire(env, Resource::InterRing(rb as u16), head, occupy)
                + tm.inter_ring;
            head = self.travel_local(now, rb, iri, ib, head, k);
        }
        let s =
            self.interfaces[to as usize].acquire(env, Resource::RingInterface(to), head, occupy);
        s + tm.interface + (k - 1) * tm.slot
    }

    /// Latency of an uncontended message (for tests and documentation).
    pub fn idle_latency(&self, from: u16, to: u16, packets: u32) -> Tick {
        let tm = self.timing;
        let k = packets as Tick;
        let (ra, ia) = self.topo.position(from);
        let (rb, ib) = self.topo.position(to);
        let hops = |r: usize, a: usize, b: usize| {
            let n = self.local[r].len();
            ((b + n - a) % n) as Tick
        };
        let mut lat = 2 * tm.interface + (k - 1) * tm.slot;
        if ra == rb {
            lat += hops(ra, ia, ib) * tm.hop;
        } else {
            let iri = self.topo.stations_per_ring;
            let n = self.central.len();
            lat += (hops(ra, ia, iri) + hops(rb, iri, ib)) * tm.hop
                + 2 * tm.inter_ring
                + ((rb + n - ra) % n) as Tick * tm.central_hop;
        }
        lat
    }
}
