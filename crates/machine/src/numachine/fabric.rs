//! The NUMAchine interconnect as the coherence controllers see it (`Fabric`: station buses,
//! memory modules, NC servers and rings) and the messages and events that cross it. Separate
//! from `mod.rs` so that the home memory (`memory.rs`) and the network caches (`netcache.rs`)
//! use it without importing the system that owns them.

use crate::env::Env;
use crate::mem::controller::Controller;
use crate::mem::MemoryModule;
use crate::msg::{ProcMsg, SysMsg};
use crate::net::bus::{Bus, BusTiming, Fifo};
use crate::net::ring::{Rings, Topology};
use crate::probe::{Resource, RespState};
use engine::Tick;

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
    pub(super) fn carries_line(&self) -> bool {
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
    pub(super) buses: Vec<Bus>,
    pub(super) memories: Vec<MemoryModule>,
    /// A memory controller per station when the preset enables `[memctl]` (issue 16); then
    /// the home's memory reads and writes go through it instead of `memories`.
    pub(super) ctl: Option<Vec<Controller>>,
    pub(super) nc_servers: Vec<Fifo>,
    pub(super) rings: Rings,
    pub(super) bus: BusTiming,
    pub(super) nc_lookup: Tick,
    pub(super) nc_data: Tick,
    /// Ring packets of a message carrying a cache line (header included).
    pub(super) line_packets: u32,
    /// Latest time a message to each processor was queued for its bus.
    pub(super) last_to_proc: Vec<Tick>,
    /// Latest time a message from home h to station s's NC was queued (`h * stations + s`).
    pub(super) last_to_nc: Vec<Tick>,
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
    #[inline]
    pub fn to_proc<S: Copy + From<Ev>>(&mut self, env: &mut Env<S>, t: Tick, p: u16, m: SysMsg) {
        let t = t.max(self.last_to_proc[p as usize]);
        self.last_to_proc[p as usize] = t;
        let station = self.topo().station_of(p as usize);
        let data = matches!(m, SysMsg::Data { .. });
        let dest = BusDest::Proc(p, m);
        env.schedule(
            t,
            Ev::Bus {
                station,
                data,
                dest,
            },
        );
    }
    /// Home `h` sends `msg` to station `s`'s NC: home bus, then ring. Messages from one home
    /// to one NC arrive in the order sent (as for `to_proc`; bus and ring are FIFO after).
    pub fn home_to_nc<S: Copy + From<Ev>>(
        &mut self,
        env: &mut Env<S>,
        t: Tick,
        h: u16,
        s: u16,
        line: u64,
        msg: NetMsg,
    ) {
        let k = h as usize * self.topo().stations + s as usize;
        let t = t.max(self.last_to_nc[k]);
        self.last_to_nc[k] = t;
        let dest = BusDest::Ring { to: s, line, msg };
        let data = msg.carries_line();
        env.schedule(
            t,
            Ev::Bus {
                station: h,
                data,
                dest,
            },
        );
    }
    /// Station `s`'s NC sends `msg` to home `h`: ring, then home bus.
    pub fn nc_to_home<S: Copy + From<Ev>>(
        &mut self,
        env: &mut Env<S>,
        t: Tick,
        s: u16,
        h: u16,
        line: u64,
        msg: NetMsg,
    ) {
        let data = msg.carries_line();
        let at = self.rings.send(env, t, s, h, self.packets(data));
        let dest = BusDest::Memory { from: s, line, msg };
        env.schedule(
            at,
            Ev::Bus {
                station: h,
                data,
                dest,
            },
        );
    }
    pub(super) fn packets(&self, data: bool) -> u32 {
        if data {
            self.line_packets
        } else {
            1
        }
    }
    /// Occupies home `h`'s memory module for one access from `t`; returns when it is done.
    pub fn memory_access<S: Copy + From<Ev>>(&mut self, env: &mut Env<S>, t: Tick, h: u16) -> Tick {
        self.memories[h as usize].access(env, t)
    }
    /// Home `h` reads `line` from memory from `t`: when the data is ready and its value
    /// (`value`, the directory's, without a controller).
    pub fn memory_read<S: Copy + From<Ev>>(
        &mut self,
        env: &mut Env<S>,
        t: Tick,
        h: u16,
        line: u64,
        value: u64,
    ) -> (Tick, u64) {
        match self.ctl.as_mut() {
            None => (self.memories[h as usize].access(env, t), value),
            Some(c) => c[h as usize].read(env, t, line),
        }
    }
    /// Line data reaches home `h`'s memory at `t`: returns when memory accepted it. Without
    /// a controller the module is occupied for one access and the home goes on at once.
    pub fn memory_write<S: Copy + From<Ev>>(
        &mut self,
        env: &mut Env<S>,
        t: Tick,
        h: u16,
        line: u64,
        value: u64,
    ) -> Tick {
        match self.ctl.as_mut() {
            None => {
                self.memories[h as usize].access(env, t);
                t
            }
            Some(c) => c[h as usize].write(env, t, line, value),
        }
    }
    /// Occupies station `s`'s NC for `busy` from `t`; returns the start.
    pub fn nc_access<S: Copy + From<Ev>>(
        &mut self,
        env: &mut Env<S>,
        t: Tick,
        s: u16,
        busy: Tick,
    ) -> Tick {
        self.nc_servers[s as usize].acquire(env, Resource::NetworkCache(s), t, busy)
    }
}

impl Ev {
    #[inline(always)]
    pub(super) fn at_after<S: Copy + From<Ev>>(self, env: &mut Env<S>, t: Tick) {
        env.schedule(t, self);
    }
}
