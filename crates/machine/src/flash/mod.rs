//! The `flash` preset's memory system: the Stanford FLASH multiprocessor as seed 004 (section
//! 3.1) describes it, running FLASH's default dynamic-pointer-allocation (DP) protocol.
//!
//! One R10000-class processor per node; each node's **MAGIC** node controller (`magic`) queues
//! messages from the processor interface (PI) and the network interface (NI) for its
//! **protocol processor** (PP), which runs one named **handler** (`handlers`) per message; its
//! latency (to its send) and occupancy (to the next switch) are measured from the instructions
//! of the path the run takes on a model of the dual-issue PP (`pp`), in 10 ns system cycles
//! (MAGIC runs at 100 MHz). The **directory** (`dir`) keeps an 8-byte header per
//! 128-byte line with Pending, Dirty, HeadPtr, Local, a pointer, a link into the node's
//! pointer/link store, and the eleven spare bits FlashPoint uses. Nodes talk over a
//! **2-D mesh** (`mesh`) with dimension-order routing and contended links.
//!
//! The processor side (caches, NACK retry with back-off, the write-back buffer, deferred
//! interventions) is the shared `cpu::agent`; this module is the memory side of the
//! `msg::ProcMsg`/`SysMsg` interface, structured like the reference `ideal` protocol.
//!
//! # Where the choices are documented
//! - timing of MAGIC (interfaces, dispatch, speculative memory, PP, priorities): `magic`;
//! - protocol (acks at the requester, forwarding, NACKs, converted upgrades, write-back races):
//!   `handlers`;
//! - header layout and sharer list: `dir`; mesh shape, routing and ordering: `mesh`;
//! - the numbers, with the seed's where it gives them: `presets/flash.toml`.
//!
//! # Uncontended latencies with the preset (system cycles; `examples/flash_latency.rs`)
//! Local clean read 23 (seed Table 2, DP: 22–24); clean remote read `65 + 16 * hops`: 81 at 1
//! hop, 161 across a 4x4 mesh, 289 across 8x8 (the memory's 15 cycles cover the home handler's
//! measured latency); remote read dirty at a third node 184 (16 nodes, 6 hops to the owner). Both formulas are checked by tests against the configuration.
//!
//! # Not modelled
//! Finite queues and back-pressure (MAGIC's queues and the mesh are unbounded, so FLASH's
//! deadlock-avoidance lanes are not needed); the I/O interface; PP instruction/data cache
//! misses (the seed calls them negligible); pointer-store reclamation (the store grows and
//! counts overflows); MAGIC's data-buffer limits.
//!
//! FlashPoint (seed 004, 3.1.3) is `flashpoint`, selected by `[flash] protocol = "fp-noproc"`
//! or `"fp-proc"`: it uses the spare header bits (`dir::FP_WARM`, `dir::FP_BIN_MASK`), the
//! added instructions on the handlers' paths (`pp`), uncached commands to `MAGIC_BASE`, and
//! `alloc_commands`/`setup_alloc`/`procedure_command`. Under `"dp"` (the default) none of it
//! runs and the machine is the unmodified DP protocol (a test checks cycles and ground truth
//! of a fixed run against numbers recorded before FlashPoint was added).
pub mod config;
pub mod dir;
pub mod flashpoint;
pub mod handlers;
pub mod magic;
pub mod pp;

use crate::addr::{Addr, StructId};
use crate::config::{ConfigError, Preset};
use crate::env::Env;
use crate::mem::controller::Controller;
use crate::memory_system::MemorySystem;
use crate::msg::ProcMsg;
use crate::net::mesh::{LinkUse, Mesh};
use crate::probe::{Observation, Resource};
use crate::uncached::Windows;
use config::{FlashCfg, HandlerCost};
use engine::{Clocks, Tick};
use handlers::{Handler, Input, Out, Protocol, Send};
use magic::{Magic, MemoryUse, Queued};

#[derive(Clone, Copy, Debug)]
pub enum Ev {
    /// A message enters a node's inbound queue (PI or NI); `home` is its line's home.
    Arrive { node: u16, home: u16, input: Input },
    /// A node's PP may be able to start a handler.
    Wake { node: u16 },
}

pub struct FlashSys {
    cfg: FlashCfg,
    /// Ticks per system (MAGIC) cycle.
    period: Tick,
    /// Fixed costs (`[flash.handlers]` overrides) and FlashPoint's configured extras.
    costs: Vec<(Option<HandlerCost>, (u32, u32))>,
    /// Measured (latency, occupancy) per (handler, path key): a path's schedule is computed
    /// once (`pp::cost`).
    measured: rustc_hash::FxHashMap<(u16, u64), (u32, u32)>,
    proto: Protocol,
    magic: Vec<Magic>,
    mesh: Mesh,
    data_flits: u32,
    sends: Vec<Send>,
    links: Vec<LinkUse>,
    line_shift: u32,
    /// FlashPoint's state (None in the DP protocol: nothing below runs).
    fp: Option<Box<flashpoint::FlashPoint>>,
    /// A memory controller per node when the preset enables `[memctl]` (issue 16): MAGIC's
    /// speculative reads and its write-backs are timed by it instead of `memory_cycles` and
    /// `memory_busy_cycles`. Timing only: the handlers keep the line values in the directory
    /// (a handler may discard a write-back the controller already took at the inbox).
    ctl: Option<Vec<Controller>>,
}

impl FlashSys {
    pub fn new(p: &Preset, clocks: &Clocks) -> Result<FlashSys, ConfigError> {
        let cfg = p
            .flash
            .clone()
            .ok_or_else(|| ConfigError("flash: section [flash] missing".into()))?;
        cfg.validate(p.procs)?;
        let period = clocks
            .get("system")
            .ok_or_else(|| ConfigError("clocks: no system clock".into()))?
            .period;
        let nodes = p.nodes();
        let line = p.line_bytes();
        Ok(FlashSys {
            costs: cfg.cost_table(),
            measured: rustc_hash::FxHashMap::default(),
            proto: Protocol::new(nodes, cfg.pointer_store_entries),
            magic: vec![Magic::default(); nodes],
            mesh: Mesh::new(
                nodes,
                cfg.router_cycles as Tick * period,
                cfg.flit_cycles as Tick * period,
            ),
            data_flits: (line as u32).div_ceil(cfg.flit_bytes),
            period,
            line_shift: line.trailing_zeros(),
            fp: (cfg.protocol != flashpoint::FlashProtocol::Dp).then(|| {
                Box::new(flashpoint::FlashPoint::new(
                    cfg.flashpoint.clone(),
                    cfg.protocol,
                    nodes,
                    period,
                ))
            }),
            ctl: Controller::for_nodes(p.memctl.as_ref(), nodes, line, clocks)
                .map_err(ConfigError)?,
            cfg,
            sends: Vec::new(),
            links: Vec::new(),
        })
    }

    pub fn config(&self) -> &FlashCfg {
        &self.cfg
    }
    pub fn mesh(&self) -> &Mesh {
        &self.mesh
    }
    pub fn stats(&self) -> &handlers::FlashStats {
        &self.proto.stats
    }
    /// Flits of a message (a header flit, plus the line when it carries data).
    pub fn flits(&self, data: bool) -> u32 {
        1 + if data { self.data_flits } else { 0 }
    }

    /// Starts the next handler on `node`'s PP if it is free.
    fn run_pp<S: Copy + From<Ev>>(&mut self, env: &mut Env<S>, t: Tick, node: u16) {
        let m = &mut self.magic[node as usize];
        if m.pp_free > t {
            return;
        }
        let Some(q) = m.next(t) else { return };
        let waiting = m.queued() as u32;
        let mut sends = std::mem::take(&mut self.sends);
        sends.clear();
        let line = match q.input {
            Input::Pi(m) => m.line().unwrap_or(0),
            Input::Ni(m) => m.line,
        };
        env.work_on(line);
        let before = self.proto.dir.header(line);
        let (run, (lat, occ)) = match (self.fp.as_mut(), q.input) {
            (Some(fp), Input::Pi(ProcMsg::Uncached { addr, write, .. }))
                if flashpoint::FlashPoint::is_command(addr) =>
            {
                // One of FlashPoint's added handlers.
                let c = fp.command(&mut self.proto.dir, node as usize, addr, write);
                sends.push(Send {
                    out: Out::Proc(crate::msg::SysMsg::UncachedReply { value: c.value }),
                    after_memory: false,
                });
                let run = handlers::Run {
                    handler: c.handler,
                    walked: 0,
                    line: 0,
                };
                (run, (c.latency, c.occupancy.max(c.latency)))
            }
            _ => {
                let run = self.proto.run(node, q.home, q.input, env.fault, &mut sends);
                if let Some(fp) = self.fp.as_mut() {
                    fp.after_handler(&mut self.proto.dir, node, &q.input, &run, before, &sends);
                }
                let c = self.handler_cost(&run, before, &sends);
                (run, c)
            }
        };
        let (lat, occ) = (lat as Tick * self.period, occ as Tick * self.period);
        let sent = t + lat;
        self.magic[node as usize].pp_free = t + occ;
        env.schedule(t + occ, Ev::Wake { node });
        for s in sends.iter() {
            let at = if s.after_memory {
                sent.max(q.mem_ready)
            } else {
                sent
            };
            let done = self.send(env, node, at, s.out);
            if let (Some(fp), Out::Proc(m)) = (self.fp.as_mut(), s.out) {
                fp.reply(&self.proto.dir, node, q.home, done, &m);
            }
        }
        self.sends = sends;
        if env.any_probe() {
            let after = self.proto.dir.header(run.line);
            let (old, new) = (dir_state(before), dir_state(after));
            if old != new {
                env.observe(Observation::Directory {
                    node: q.home,
                    t,
                    line_addr: run.line << env.line_shift,
                    old,
                    new,
                    who: env.origin(),
                });
            }
            env.observe(Observation::Handler {
                node,
                handler: run.handler as u16,
                start: t,
                queued: q.arrived,
                latency: lat,
                occupancy: occ,
                addr: run.line << env.line_shift,
                header: after,
                who: env.origin(),
            });
            env.observe(Observation::Queue {
                res: Resource::ProtocolProcessor(node),
                t: q.ready,
                wait: t - q.ready,
                busy: occ,
                queue: waiting,
                who: env.origin(),
            });
        }
    }

    /// One send of a handler on `node`, leaving the PP at `at`. Returns when a message to the
    /// processor reaches the processor bus (for FlashPoint's latency counter; 0 otherwise).
    fn send<S: Copy + From<Ev>>(
        &mut self,
        env: &mut Env<S>,
        node: u16,
        at: Tick,
        out: Out,
    ) -> Tick {
        let p = self.period;
        match out {
            Out::Proc(m) => {
                let t = self.magic[node as usize].pi_out(at);
                let done = t + self.cfg.pi_out_cycles as Tick * p;
                env.deliver(node as usize, done, m);
                done
            }
            Out::Net(dest, m) => {
                let arrive = if dest == node {
                    at // MAGIC's loopback: no NI, no mesh
                } else {
                    let flits = self.flits(m.data);
                    let busy = flits as Tick * self.cfg.flit_cycles as Tick * p;
                    let t = self.magic[node as usize].ni_out(at, busy);
                    let head = t + self.cfg.ni_out_cycles as Tick * p;
                    self.links.clear();
                    let tail =
                        self.mesh
                            .send(node as usize, dest as usize, head, flits, &mut self.links);
                    if env.any_probe() {
                        for u in self.links.iter() {
                            if u.wait > 0 {
                                env.observe(Observation::Queue {
                                    res: u.res,
                                    t: u.t,
                                    wait: u.wait,
                                    busy: u.busy,
                                    queue: 1,
                                    who: env.origin(),
                                });
                            }
                        }
                    }
                    tail + self.cfg.ni_in_cycles as Tick * p
                };
                env.schedule(
                    arrive,
                    Ev::Arrive {
                        node: dest,
                        home: m.home,
                        input: Input::Ni(m),
                    },
                );
                0
            }
        }
    }

    /// FlashPoint's state (None under DP).
    pub fn flashpoint(&self) -> Option<&flashpoint::FlashPoint> {
        self.fp.as_deref()
    }
    pub fn flashpoint_mut(&mut self) -> Option<&mut flashpoint::FlashPoint> {
        self.fp.as_deref_mut()
    }
    /// The protocol running.
    pub fn protocol(&self) -> flashpoint::FlashProtocol {
        self.cfg.protocol
    }
    /// The directory (headers with FlashPoint's spare bits), for tests and diagnostics.
    pub fn directory(&self) -> &dir::Directory {
        &self.proto.dir
    }
    /// (latency, occupancy) in PP cycles of the handler run `run` (header `before`, sends
    /// `sends`): a `[flash.handlers]` override if the preset has one, else the schedule of the
    /// path the run took (`pp`), plus FlashPoint's configured extras.
    fn handler_cost(&mut self, run: &handlers::Run, before: u64, sends: &[Send]) -> (u32, u32) {
        let (fixed, (el, eo)) = self.costs[run.handler as usize];
        let (l, o) = match fixed {
            Some(c) => c.cycles(run.walked),
            None => {
                let path = path_of(run, before, sends, self.fp.is_some());
                *self
                    .measured
                    .entry((run.handler as u16, path.key()))
                    .or_insert_with(|| pp::cost(run.handler, &path))
            }
        };
        (l + el, (o + eo).max(l + el))
    }
}

impl MemorySystem for FlashSys {
    type Ev = Ev;

    // Kept out of line: the event loop stays small enough for the queue to inline into it.
    #[inline(never)]
    fn from_proc<S: Copy + From<Ev>>(&mut self, env: &mut Env<S>, t: Tick, p: usize, m: ProcMsg) {
        // The processor's bus to MAGIC's processor interface has no arbitration modelled:
        // granted at once.
        env.observe_bus_request(p, t, t);
        let node = p as u16;
        let home = match m.line() {
            Some(l) => env.home(l, p) as u16,
            None => node,
        };
        if let Some(fp) = self.fp.as_mut() {
            fp.pi_request(p, t, &m);
        }
        let at = t + self.cfg.pi_in_cycles as Tick * self.period;
        env.schedule(
            at,
            Ev::Arrive {
                node,
                home,
                input: Input::Pi(m),
            },
        );
    }

    // Kept out of line: the event loop stays small enough for the queue to inline into it.
    #[inline(never)]
    fn handle<S: Copy + From<Ev>>(&mut self, env: &mut Env<S>, t: Tick, e: Ev) {
        match e {
            Ev::Arrive { node, home, input } => {
                let c = &self.cfg;
                let p = self.period;
                let mem = MemoryUse::of(&input, node, home);
                let m = &mut self.magic[node as usize];
                let busy = c.memory_busy_cycles as Tick * p;
                let (mem_ready, wait) = match self.ctl.as_mut() {
                    None => m.memory(mem, t, c.memory_cycles as Tick * p, busy),
                    Some(ctl) => {
                        let (line, value) = match input {
                            Input::Pi(pm) => (
                                pm.line().unwrap_or(0),
                                match pm {
                                    ProcMsg::Writeback { value, .. } => value,
                                    _ => 0,
                                },
                            ),
                            Input::Ni(n) => (n.line, n.value),
                        };
                        let c = &mut ctl[node as usize];
                        match mem {
                            MemoryUse::None => (t, 0),
                            MemoryUse::Read => (c.read(env, t, line).0, 0),
                            MemoryUse::Write => (c.write(env, t, line, value), 0),
                        }
                    }
                };
                let ready = t + c.dispatch_cycles as Tick * p;
                m.enqueue(Queued {
                    arrived: t,
                    ready,
                    mem_ready,
                    home,
                    input,
                });
                env.schedule(ready, Ev::Wake { node });
                if mem != MemoryUse::None && env.any_probe() {
                    env.observe(Observation::Queue {
                        res: Resource::Memory(node),
                        t,
                        wait,
                        busy,
                        queue: 0,
                        who: env.origin(),
                    });
                }
            }
            Ev::Wake { node } => self.run_pp(env, t, node),
        }
    }

    fn event_line(e: &Ev) -> Option<u64> {
        match e {
            Ev::Arrive {
                input: Input::Pi(m),
                ..
            } => m.line(),
            Ev::Arrive {
                input: Input::Ni(m),
                ..
            } => Some(m.line),
            // The protocol processor's wake-up picks a message: `run_pp` says whose.
            Ev::Wake { .. } => None,
        }
    }

    /// A page whose lines have no directory header yet (never requested): the header records
    /// the home, and the pointer stores are per home, so a page in use does not move.
    fn page_movable(&self, mut lines: std::ops::Range<u64>) -> bool {
        lines.all(|l| self.proto.dir.home(l).is_none())
    }

    fn controllers(&self) -> &[Controller] {
        self.ctl.as_deref().unwrap_or(&[])
    }

    fn controllers_mut(&mut self) -> &mut [Controller] {
        self.ctl.as_deref_mut().unwrap_or(&mut [])
    }

    /// The directory state of `line` in words, for diagnostics.
    fn describe(&self, line: u64) -> String {
        let mut s = handlers::describe(&self.proto, line);
        if let Some(h) = self.proto.dir.home(line) {
            s += &format!("; home MAGIC: {}", self.proto.describe_node(h));
        }
        s
    }

    /// Protocol event counts (for the protocol tester's report).
    fn counters(&self) -> Vec<(&'static str, u64)> {
        let s = &self.proto.stats;
        let overflows = (0..self.magic.len())
            .map(|n| self.proto.dir.store(n).overflows)
            .sum();
        vec![
            ("nacks", s.nacks),
            ("converted_upgrades", s.converted_upgrades),
            ("invalidations", s.invalidations),
            ("dropped_invalidations", s.dropped_invalidations),
            ("forwards", s.forwards),
            ("stale_writebacks", s.stale_writebacks),
            ("fwd_misses", s.fwd_misses),
            ("acks_waited", s.acks_waited),
            ("writebacks", s.writebacks),
            ("pointer_store_overflows", overflows),
        ]
    }

    fn backoff_ticks(&self) -> Tick {
        self.cfg.backoff_cycles as Tick * self.period
    }

    /// FlashPoint's bin-assignment commands for an allocation during the run (none in DP).
    fn register_windows(&self, w: &mut Windows, clocks: &Clocks) -> Result<(), String> {
        match &self.fp {
            Some(fp) => fp.register_windows(w, clocks),
            None => Ok(()),
        }
    }

    fn alloc_commands(&mut self, a: Addr, bytes: u64, id: StructId) -> Vec<(Addr, u64)> {
        match self.fp {
            Some(_) => flashpoint::FlashPoint::bin_commands(a, bytes, id, self.line_shift),
            None => Vec::new(),
        }
    }

    /// An allocation before the threads start: FlashPoint bins it at time 0, without cost
    /// (see `flashpoint`'s docs). Nothing in DP.
    fn setup_alloc(&mut self, a: Addr, bytes: u64, id: StructId) {
        if let Some(fp) = self.fp.as_mut() {
            fp.setup_assign(&mut self.proto.dir, a, bytes, id, self.line_shift);
        }
    }

    /// FlashPoint's procedure-delta command and the fence before it, in processor cycles
    /// (FP-Proc only).
    fn procedure_command(&mut self, _p: usize, prev: u32, cur: u32) -> Option<(Addr, u64)> {
        let fp = self.fp.as_ref()?;
        let fence = if fp.cfg.fence {
            fp.cfg.fence_cycles as u64
        } else {
            0
        };
        fp.proc_command(prev, cur).map(|a| (a, fence))
    }

    /// FlashPoint's procedure delta at a context switch (the register follows the thread:
    /// its procedure in FP-Proc, its process's record array by process), with the fence.
    fn switch_command(
        &mut self,
        _p: usize,
        from: (u16, u32),
        to: (u16, u32),
    ) -> Option<(Addr, u64)> {
        let fp = self.fp.as_ref()?;
        debug_assert_eq!(
            fp.register(_p),
            fp.slot_of(from.0, from.1) as i64,
            "processor {_p}: the PP's register holds the outgoing thread's slot"
        );
        let fence = if fp.cfg.fence {
            fp.cfg.fence_cycles as u64
        } else {
            0
        };
        fp.switch_command(from, to).map(|a| (a, fence))
    }
}

/// The path a handler run took, from the header before it and what it sent (`pp::Path`).
fn path_of(run: &handlers::Run, before: u64, sends: &[Send], fp: bool) -> pp::Path {
    use crate::msg::SysMsg;
    use dir::Header;
    use handlers::Kind;
    use Handler::*;
    let home_request = matches!(
        run.handler,
        PILocalGet | PILocalGetX | PILocalUpgrade | NILocalGet | NILocalGetX | NILocalUpgrade
    );
    let mut p = pp::Path {
        walked: run.walked,
        ..pp::Path::default()
    };
    let mut mark = false;
    for s in sends {
        match s.out {
            Out::Net(_, m) => {
                p.net_sends += 1;
                match m.kind {
                    Kind::Nack => p.nack = true,
                    Kind::FwdGet | Kind::FwdGetX => p.forward = true,
                    Kind::Inval => p.invals += 1,
                    _ => {}
                }
            }
            Out::Proc(m) => match m {
                SysMsg::Data { .. } | SysMsg::Grant { .. } => p.to_proc = true,
                SysMsg::Nack { .. } => p.nack = true,
                SysMsg::Intervention { exclusive, .. } => {
                    p.forward |= home_request;
                    mark |= exclusive;
                }
                SysMsg::Invalidate { .. } => {
                    p.invals += 1;
                    mark = true;
                }
                _ => p.to_proc = true,
            },
        }
    }
    p.nack &= home_request;
    p.had_sharers = before.flag(dir::HEAD_PTR) || before.flag(dir::LOCAL);
    if fp {
        p.fp_home = home_request && !p.nack;
        p.fp_record = sends.iter().any(|s| {
            matches!(
                s.out,
                Out::Proc(SysMsg::Data { .. }) | Out::Proc(SysMsg::Grant { .. })
            )
        });
        p.fp_mark = mark;
    }
    p
}

/// Directory state for `Observation::Directory`: 0 uncached, 1 shared, 2 dirty.
fn dir_state(h: u64) -> u8 {
    use dir::Header;
    if h.flag(dir::DIRTY) {
        2
    } else if h.flag(dir::HEAD_PTR) || h.flag(dir::LOCAL) {
        1
    } else {
        0
    }
}

#[cfg(test)]
mod fp_process_tests;
#[cfg(test)]
mod fp_tests;
#[cfg(test)]
mod r10k_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod wb_tests;
