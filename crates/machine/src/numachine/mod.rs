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

pub mod config;
pub mod fabric;
pub mod memory;
pub mod netcache;

use crate::addr::MemoryMap;
use crate::config::{ConfigError, Preset};
use crate::env::Env;
use crate::mem::controller::Controller;
use crate::mem::MemoryModule;
use crate::memory_system::MemorySystem;
use crate::msg::{ProcMsg, SysMsg};

use crate::net::bus::{Bus, BusTiming, Fifo};
use crate::net::ring::{RingTiming, Rings, Topology};
use engine::{Clocks, Tick};
pub use fabric::{BusDest, Ev, Fabric, HomeReply, NetMsg, ReqKind};
use memory::{HomeCx, Homes};
use netcache::NetCache;

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
                memories: (0..n as u16)
                    .map(|h| MemoryModule::new(h, cyc(cfg.memory_cycles)))
                    .collect(),
                ctl: Controller::for_nodes(p.memctl.as_ref(), n, line, clocks)
                    .map_err(ConfigError)?,
                nc_servers: vec![Fifo::default(); n],
                bus: BusTiming {
                    arbitration: cyc(cfg.bus_arbitration_cycles),
                    address: cyc(cfg.bus_address_cycles),
                    line_data: cyc(line.div_ceil(cfg.bus_bytes_per_cycle as u64) as u32),
                },
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
}

impl MemorySystem for NumaSys {
    fn event_line(e: &Ev) -> Option<u64> {
        match *e {
            Ev::Bus { dest, .. } => match dest {
                BusDest::Proc(_, m) => m.line(),
                BusDest::Controller { m, .. } => m.line(),
                BusDest::Memory { line, .. } | BusDest::Ring { line, .. } => Some(line),
            },
            Ev::AtController { m, .. } => m.line(),
            Ev::AtMemory { line, .. } | Ev::AtNc { line, .. } => Some(line),
        }
    }

    /// Memory keeps one record per line whatever its home, but a network cache holds only
    /// lines of other stations' homes: a page may move when no line of it is cached
    /// anywhere (no copy in memory's record, no network-cache entry) and none is locked.
    fn page_movable(&self, mut lines: std::ops::Range<u64>) -> bool {
        lines.all(|l| self.homes.idle(l) && self.ncs.iter().all(|nc| !nc.holds(l)))
    }

    type Ev = Ev;

    // Kept out of line: the event loop stays small enough for the queue to inline into it.
    #[inline(never)]
    fn from_proc<S: Copy + From<Ev>>(&mut self, env: &mut Env<S>, t: Tick, p: usize, m: ProcMsg) {
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
        env.schedule(t, ev);
    }

    // Kept out of line: the event loop stays small enough for the queue to inline into it.
    #[inline(never)]
    fn handle<S: Copy + From<Ev>>(&mut self, env: &mut Env<S>, t: Tick, e: Ev) {
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
            } => {
                let cx = &mut HomeCx {
                    fab: &mut self.fab,
                    env,
                    t,
                    h: home,
                    line,
                };
                self.homes.from_nc(cx, from, msg)
            }
            Ev::AtNc {
                station,
                from,
                line,
                msg,
            } => self.ncs[station as usize].from_home(&mut self.fab, env, t, from, line, msg),
        }
    }

    /// Home directory entry and NC entries of `line`, for diagnostics.
    fn describe(&self, line: u64) -> String {
        let mut s = self.homes.describe(line);
        for nc in &self.ncs {
            if let Some(d) = nc.describe(line) {
                s.push_str("; ");
                s.push_str(&d);
            }
        }
        s
    }

    /// `D = I + 2 (arbitration + address)`: a request's own bus transaction, then at least
    /// one more before anything reaches a processor (the case-by-case proof is in `sim`'s
    /// module documentation, "The memory system's lookahead"). Every delivery of this
    /// system is made at the end of a bus transaction to a processor (`BusDest::Proc`, in
    /// `handle`), which lasts at least `arbitration + address` from the time its `Ev::Bus`
    /// is due (`Bus::transfer`), and such an event is scheduled only by `Fabric::to_proc`
    /// from a station controller's handler (memory, network cache), or by `from_proc` for
    /// an uncached access. A request's `from_proc` schedules only its own `Ev::Bus` to its
    /// station controller at `t`, whose handler schedules only its `AtController` at the
    /// transaction's end, `t + arbitration + address` or later; the controllers act from
    /// there. On the preset: 2 bus cycles each way, 6 + 12 = 18 processor cycles.
    fn min_issue_to_delivery(&self, inbound: Tick) -> Tick {
        let b = self.fab.bus;
        inbound + 2 * (b.arbitration + b.address)
    }

    /// A transaction waiting `timeout_bus_cycles` bus cycles raises a bus error (seed 000
    /// 4.4.2: the BUS_ERROR after 4096 cycles).
    fn timeout_ticks(&self) -> Option<Tick> {
        Some(self.timeout_bus_cycles as Tick * self.bus_period)
    }

    fn timeout_clock_ticks(&self) -> Tick {
        self.bus_period
    }

    /// Maximum NACK back-off.
    fn backoff_ticks(&self) -> Tick {
        self.backoff_bus_cycles as Tick * self.bus_period
    }

    fn controllers(&self) -> &[Controller] {
        self.fab.ctl.as_deref().unwrap_or(&[])
    }

    fn controllers_mut(&mut self) -> &mut [Controller] {
        self.fab.ctl.as_deref_mut().unwrap_or(&mut [])
    }

    fn memory_mismatches(&self, map: &MemoryMap, line_shift: u32) -> Vec<(u64, u64, u64)> {
        match self.fab.ctl.as_ref() {
            None => Vec::new(),
            Some(c) => self.homes.memory_mismatches(c, map, line_shift),
        }
    }
}

#[cfg(test)]
mod tests;
