//! The `numachine` preset's memory system (seed 000, section 4.1).
//!
//! What is modelled:
//! - Topology (`ring.rs`): stations of `procs_per_station` processors on a split-transaction
//!   bus with a memory module, a network cache (NC) and a ring interface; stations on slotted
//!   unidirectional local rings; with more than one local ring, an inter-ring interface per
//!   ring and a central ring. The preset's node is the station: memory homes are stations.
//! - Contended resources with latencies (`bus.rs`, `ring.rs`): the bus (FIFO arbitration,
//!   address packet, data cycles at `bus_bytes_per_cycle`, one transaction at a time), the
//!   memory module (one access at a time), the NC (lookup and data access), the ring
//!   interfaces, the ring links (per-link reservation) and the inter-ring interfaces. Each use
//!   of a bus, memory module, NC, ring interface or inter-ring interface is reported as an
//!   `Observation::Queue` (ring-link waits have no resource of their own and show up as a
//!   later start at the next interface).
//! - Two-level coherence (`memory.rs`, `netcache.rs`): station level MESI without E
//!   (processors hold S or M), network level LV/LI/GV/GI (+ not-in) at the home memory
//!   (processor mask for the home station, routing mask of remote stations) and at each NC
//!   for remote lines. Locked lines NACK requests; upgrades that lost to a competing owner
//!   are cancelled; every data response carries the Table 4.9 response state (for an NC hit
//!   the NC line's state, otherwise the home memory's state before the request).
//!
//! Paths: a processor's request crosses its station bus to the memory module (home station)
//! or to the NC (other homes). The NC sits on the ring interface: NC-to-home messages go NC,
//! ring, home bus, memory; home-to-NC messages go memory, home bus, ring, NC. Responses to a
//! processor cross its station bus. Uncached accesses (not to the monitor, which stays on the
//! processor card) cost a bus round trip and return 0.
//!
//! Invalidation completion is ensured by acknowledgements collected before ownership is
//! granted (at the home for stations and home-station processors, at the NC for the
//! station's processors); see `memory.rs` for why.
//!
//! Ordering: messages from the memory system to one processor, and from one home to one NC,
//! are delivered in the order they were sent (a message ready earlier waits behind an
//! earlier-sent one still waiting for the memory module). Without this a later invalidation
//! could overtake the data of a read the home had already served, be acknowledged, and let a
//! writer proceed while the reader still performs its load on the old data.
//!
//! Choices the seed leaves open (besides those in `memory.rs` and `netcache.rs`):
//! - the latencies (see `presets/numachine.toml` for the defaults and the miss latencies they
//!   give);
//! - the memory module serves one access at a time (no banks); a write-back occupies it
//!   like a read;
//! - NACKs and directory decisions take no memory-module time; data supplied by an
//!   intervention is forwarded without a memory access;
//! - a NACK back-off is uniform in 1..=`backoff_bus_cycles` bus cycles (the shared agent);
//! - `Observation::Directory` codes the home state as 0 LV, 1 GV, 2 LI, 3 GI.

pub mod bus;
pub mod config;
pub mod memory;
pub mod netcache;
pub mod ring;

use crate::config::{ConfigError, Preset};
use crate::env::Env;
use crate::memsys::SysEv;
use crate::msg::{ProcMsg, SysMsg};
use crate::probe::{Resource, RespState};
use bus::{Bus, BusTiming, Fifo};
use engine::{Clocks, Tick};
use memory::Homes;
use netcache::NetCache;
use ring::{RingTiming, Rings, Topology};

/// What a processor (through its NC) asks of a home.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReqKind {
    Read,
    ReadEx,
    Upgrade,
}

/// The home's answer to a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HomeReply {
    Data {
        value: u64,
        exclusive: bool,
        resp: RespState,
    },
    /// Ownership for an upgrader that kept its copy (home-station processors only).
    Grant {
        resp: RespState,
    },
    Nack,
    Cancel,
}

/// Network-level messages between a station's NC and a line's home memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetMsg {
    // NC to home.
    Request {
        p: u16,
        kind: ReqKind,
    },
    NcWriteback {
        value: u64,
    },
    /// `None`: the station no longer has the line (its write-back reached memory first).
    NcInterventionReply {
        value: Option<u64>,
    },
    NcInterventionNack,
    NcInvalAck,
    // Home to NC.
    Reply {
        p: u16,
        reply: HomeReply,
    },
    Invalidate,
    Intervention {
        exclusive: bool,
    },
    NcWbAck,
}

impl NetMsg {
    fn carries_line(&self) -> bool {
        matches!(
            self,
            NetMsg::NcWriteback { .. }
                | NetMsg::NcInterventionReply { value: Some(_) }
                | NetMsg::Reply {
                    reply: HomeReply::Data { .. },
                    ..
                }
        )
    }
}

/// Where a bus transaction goes when it completes.
#[derive(Clone, Copy, Debug)]
pub enum BusDest {
    /// To a processor's external agent.
    Proc(u16, SysMsg),
    /// From a processor to its station controller: the memory module (`to_memory`) or NC.
    Controller { p: u16, m: ProcMsg, to_memory: bool },
    /// From the ring interface to the home memory module.
    Memory { from: u16, line: u64, msg: NetMsg },
    /// From the home memory module to the ring interface, bound for station `to`'s NC.
    Ring { to: u16, line: u64, msg: NetMsg },
}

#[derive(Clone, Copy, Debug)]
pub enum Ev {
    /// A bus transaction is ready on `station`'s bus.
    Bus {
        station: u16,
        data: bool,
        dest: BusDest,
    },
    /// A processor's message reaches its station controller.
    AtController { p: u16, m: ProcMsg, to_memory: bool },
    /// A network message reaches the home memory module `home` from station `from`.
    AtMemory {
        home: u16,
        from: u16,
        line: u64,
        msg: NetMsg,
    },
    /// A network message from home `from` reaches station `station`'s NC.
    AtNc {
        station: u16,
        from: u16,
        line: u64,
        msg: NetMsg,
    },
}

/// The interconnect: buses, memory modules, NCs as servers, and the rings.
pub struct Fabric {
    buses: Vec<Bus>,
    memories: Vec<Fifo>,
    nc_servers: Vec<Fifo>,
    rings: Rings,
    bus: BusTiming,
    memory: Tick,
    nc_lookup: Tick,
    nc_data: Tick,
    /// Ring packets of a message carrying a cache line (header included).
    line_packets: u32,
    /// Latest time a message to each processor was queued for its bus.
    last_to_proc: Vec<Tick>,
    /// Latest time a message from home h to station s's NC was queued (`h * stations + s`).
    last_to_nc: Vec<Tick>,
}

impl Fabric {
    pub fn topo(&self) -> &Topology {
        &self.rings.topo
    }
    /// Sends `m` over `p`'s station bus to `p`, ready at `t`.
    ///
    /// Messages from the memory system to one processor are delivered in the order they are
    /// sent, even when an earlier one waits for the memory module or NC data array (a later
    /// invalidation must not overtake the data of a read the home served before it: the
    /// processor would acknowledge it and then perform its load on stale data).
    pub fn to_proc(&mut self, env: &mut Env, t: Tick, p: u16, m: SysMsg) {
        let t = t.max(self.last_to_proc[p as usize]);
        self.last_to_proc[p as usize] = t;
        let station = self.topo().station_of(p as usize);
        let data = matches!(m, SysMsg::Data { .. });
        let dest = BusDest::Proc(p, m);
        env.schedule(
            t,
            SysEv::Numachine(Ev::Bus {
                station,
                data,
                dest,
            }),
        );
    }
    /// Home `h` sends `msg` to station `s`'s NC: home bus, then ring. Messages from one home
    /// to one NC arrive in the order sent (as for `to_proc`; bus and ring are FIFO after).
    pub fn home_to_nc(&mut self, env: &mut Env, t: Tick, h: u16, s: u16, line: u64, msg: NetMsg) {
        let k = h as usize * self.topo().stations + s as usize;
        let t = t.max(self.last_to_nc[k]);
        self.last_to_nc[k] = t;
        let dest = BusDest::Ring { to: s, line, msg };
        let data = msg.carries_line();
        env.schedule(
            t,
            SysEv::Numachine(Ev::Bus {
                station: h,
                data,
                dest,
            }),
        );
    }
    /// Station `s`'s NC sends `msg` to home `h`: ring, then home bus.
    pub fn nc_to_home(&mut self, env: &mut Env, t: Tick, s: u16, h: u16, line: u64, msg: NetMsg) {
        let data = msg.carries_line();
        let at = self.rings.send(env, t, s, h, self.packets(data));
        let dest = BusDest::Memory { from: s, line, msg };
        env.schedule(
            at,
            SysEv::Numachine(Ev::Bus {
                station: h,
                data,
                dest,
            }),
        );
    }
    fn packets(&self, data: bool) -> u32 {
        if data {
            self.line_packets
        } else {
            1
        }
    }
    /// Occupies home `h`'s memory module for one access from `t`; returns when it is done.
    pub fn memory_access(&mut self, env: &mut Env, t: Tick, h: u16) -> Tick {
        self.memories[h as usize].acquire(env, Resource::Memory(h), t, self.memory) + self.memory
    }
    /// Occupies station `s`'s NC for `busy` from `t`; returns the start.
    pub fn nc_access(&mut self, env: &mut Env, t: Tick, s: u16, busy: Tick) -> Tick {
        self.nc_servers[s as usize].acquire(env, Resource::NetworkCache(s), t, busy)
    }
}

pub struct NumaSys {
    fab: Fabric,
    homes: Homes,
    ncs: Vec<NetCache>,
    bus_period: Tick,
    timeout_bus_cycles: u32,
    backoff_bus_cycles: u32,
}

impl NumaSys {
    pub fn new(p: &Preset, clocks: &Clocks) -> Result<NumaSys, ConfigError> {
        let cfg = p
            .numachine
            .clone()
            .ok_or_else(|| ConfigError("numachine: section [numachine] missing".into()))?;
        cfg.validate(p.procs)?;
        let bus_period = clocks
            .get("system")
            .ok_or_else(|| ConfigError("clocks.system_hz: the bus clock is missing".into()))?
            .period;
        let cyc = |c: u32| c as Tick * bus_period;
        let line = p.line_bytes();
        let topo = Topology::new(p.procs, cfg.procs_per_station, cfg.stations_per_ring);
        let nc_lines = cfg.nc_size_bytes / line;
        if nc_lines < cfg.nc_assoc as u64 || !nc_lines.is_multiple_of(cfg.nc_assoc as u64) {
            return Err(ConfigError(format!(
                "numachine.nc_size_bytes: {} bytes hold {nc_lines} lines of {line} bytes, not a multiple of numachine.nc_assoc ({})",
                cfg.nc_size_bytes, cfg.nc_assoc
            )));
        }
        let sets = nc_lines / cfg.nc_assoc as u64;
        let ncs = (0..topo.stations as u16)
            .map(|s| NetCache::new(s, sets, cfg.nc_assoc as usize, topo.procs_of(s)))
            .collect();
        let ring_timing = RingTiming {
            slot: bus_period,
            interface: cyc(cfg.ring_interface_cycles),
            hop: cyc(cfg.ring_hop_cycles),
            inter_ring: cyc(cfg.inter_ring_cycles),
            central_hop: cyc(cfg.central_hop_cycles),
        };
        let n = topo.stations;
        Ok(NumaSys {
            fab: Fabric {
                buses: vec![Bus::default(); n],
                memories: vec![Fifo::default(); n],
                nc_servers: vec![Fifo::default(); n],
                bus: BusTiming {
                    arbitration: cyc(cfg.bus_arbitration_cycles),
                    address: cyc(cfg.bus_address_cycles),
                    line_data: cyc(line.div_ceil(cfg.bus_bytes_per_cycle as u64) as u32),
                },
                memory: cyc(cfg.memory_cycles),
                nc_lookup: cyc(cfg.nc_lookup_cycles),
                nc_data: cyc(cfg.nc_data_cycles),
                line_packets: 1 + line.div_ceil(cfg.ring_bytes_per_slot as u64) as u32,
                last_to_proc: vec![0; p.procs],
                last_to_nc: vec![0; n * n],
                rings: Rings::new(topo, ring_timing),
            },
            homes: Homes::default(),
            ncs,
            bus_period,
            timeout_bus_cycles: cfg.timeout_bus_cycles,
            backoff_bus_cycles: cfg.backoff_bus_cycles,
        })
    }

    /// A NACKed request this old raises a bus error (`timeout_bus_cycles` bus cycles).
    pub fn timeout_ticks(&self) -> Tick {
        self.timeout_bus_cycles as Tick * self.bus_period
    }
    /// Maximum NACK back-off.
    pub fn backoff_ticks(&self) -> Tick {
        self.backoff_bus_cycles as Tick * self.bus_period
    }

    /// Home directory entry and NC entries of `line`, for diagnostics.
    pub fn describe(&self, line: u64) -> String {
        let mut s = self.homes.describe(line);
        for nc in &self.ncs {
            if let Some(d) = nc.describe(line) {
                s.push_str("; ");
                s.push_str(&d);
            }
        }
        s
    }

    pub fn from_proc(&mut self, env: &mut Env, t: Tick, p: usize, m: ProcMsg) {
        let station = self.fab.topo().station_of(p);
        let p = p as u16;
        let ev = match m {
            ProcMsg::Uncached { .. } => {
                let b = self.fab.bus;
                // The uncached request does not contend for the bus (only its reply does):
                // granted after the arbitration cycles.
                env.observe_bus_request(p as usize, t, t + b.arbitration);
                let reply = SysMsg::UncachedReply { value: 0 };
                Ev::Bus {
                    station,
                    data: false,
                    dest: BusDest::Proc(p, reply),
                }
                .at_after(env, t + b.arbitration + b.address);
                return;
            }
            _ => {
                let line = m.line().unwrap();
                let to_memory = env.home(line, station as usize) as u16 == station;
                let data = matches!(
                    m,
                    ProcMsg::Writeback { .. } | ProcMsg::InterventionReply { value: Some(_), .. }
                );
                Ev::Bus {
                    station,
                    data,
                    dest: BusDest::Controller { p, m, to_memory },
                }
            }
        };
        env.schedule(t, SysEv::Numachine(ev));
    }

    pub fn handle(&mut self, env: &mut Env, t: Tick, e: Ev) {
        match e {
            Ev::Bus {
                station,
                data,
                dest,
            } => {
                let bus = self.fab.bus;
                let (grant, end) =
                    self.fab.buses[station as usize].transfer(env, station, &bus, t, data);
                let next = match dest {
                    BusDest::Proc(p, m) => {
                        env.deliver(p as usize, end, m);
                        return;
                    }
                    BusDest::Controller { p, m, to_memory } => {
                        // The processor card asked for the bus at `t` (GPCM event D).
                        env.observe_bus_request(p as usize, t, grant);
                        Ev::AtController { p, m, to_memory }
                    }
                    BusDest::Memory { from, line, msg } => Ev::AtMemory {
                        home: station,
                        from,
                        line,
                        msg,
                    },
                    BusDest::Ring { to, line, msg } => {
                        let packets = self.fab.packets(data);
                        let at = self.fab.rings.send(env, end, station, to, packets);
                        Ev::AtNc {
                            station: to,
                            from: station,
                            line,
                            msg,
                        }
                        .at_after(env, at);
                        return;
                    }
                };
                next.at_after(env, end);
            }
            Ev::AtController { p, m, to_memory } => {
                let s = self.fab.topo().station_of(p as usize);
                if to_memory {
                    self.homes.from_proc(&mut self.fab, env, t, s, p, m);
                } else {
                    self.ncs[s as usize].from_proc(&mut self.fab, env, t, p, m);
                }
            }
            Ev::AtMemory {
                home,
                from,
                line,
                msg,
            } => self
                .homes
                .from_nc(&mut self.fab, env, t, home, from, line, msg),
            Ev::AtNc {
                station,
                from,
                line,
                msg,
            } => self.ncs[station as usize].from_home(&mut self.fab, env, t, from, line, msg),
        }
    }
}

impl Ev {
    fn at_after(self, env: &mut Env, t: Tick) {
        env.schedule(t, SysEv::Numachine(self));
    }
}

#[cfg(test)]
mod tests;
