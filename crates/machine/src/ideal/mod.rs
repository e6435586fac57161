//! The `ideal` preset's memory system: a home-based directory with fixed latencies and no
//! contention.
//!
//! It is the reference protocol: message-level, with transient (busy) states, NACKs for
//! requests to a busy line, invalidations acknowledged to the home, interventions for dirty
//! lines, upgrade cancellation when the requester lost its copy, and write-backs that cross
//! interventions. Messages between a processor and a home take `local_cycles` or
//! `remote_cycles` (processor cycles) each way; a memory read adds `memory_cycles`. Latencies
//! are fixed, so messages between one processor and one home arrive in the order sent.

pub mod config;

use crate::addr::MemoryMap;
use crate::config::Preset;
use crate::dir::{self, Decision, Dir, Directory};
use crate::env::Env;
use crate::error::ConfigError;
use crate::mem::controller::Controller;
use crate::memory_system::MemorySystem;
use crate::msg::{ProcMsg, SysMsg};
use crate::probe::RespState;
pub use config::IdealCfg;
use engine::{Clocks, Tick};

#[derive(Clone, Copy, Debug)]
pub enum Ev {
    /// A processor's message reaches the home of its line.
    AtHome { p: u16, m: ProcMsg },
}

/// The request a home is serving: its time, requester and line.
#[derive(Clone, Copy, Debug)]
struct Served {
    t: Tick,
    p: u16,
    line: u64,
}

pub struct IdealSys {
    cfg: IdealCfg,
    period: Tick,
    node_of: Vec<usize>,
    dirs: Directory,
    /// One memory controller per node when the preset enables `[memctl]` (issue 16): memory
    /// reads and writes go through it instead of the fixed `memory_cycles`.
    ctl: Option<Vec<Controller>>,
    /// Latest delivery time to each processor (used with a controller only).
    last_to_proc: Vec<Tick>,
}

impl IdealSys {
    pub fn new(p: &Preset, clocks: &Clocks) -> Result<IdealSys, ConfigError> {
        let cfg = p.ideal.clone().expect("validated");
        let ctl = Controller::for_nodes(p.memctl.as_ref(), p.nodes(), p.line_bytes(), clocks)
            .map_err(ConfigError)?;
        Ok(IdealSys {
            node_of: (0..p.procs).map(|i| p.node_of_proc(i)).collect(),
            cfg,
            period: clocks.get("cpu").unwrap().period,
            dirs: Directory::default(),
            ctl,
            last_to_proc: vec![0; p.procs],
        })
    }

    /// Memory's copy of `line` read from `t`: when it is ready and its value (`value`, the
    /// directory's, after `memory_cycles` without a controller).
    fn mem_read<S: Copy + From<Ev>>(
        &mut self,
        env: &mut Env<S>,
        t: Tick,
        line: u64,
        value: u64,
    ) -> (Tick, u64) {
        match self.ctl.as_mut() {
            None => (t + self.cfg.memory_cycles as Tick * self.period, value),
            Some(c) => {
                let h = env.home(line, 0);
                c[h].read(env, t, line)
            }
        }
    }

    /// Line data reaches memory at `t`: returns when memory accepted it (at once without a
    /// controller, whose writes the fixed timing does not charge).
    fn mem_write<S: Copy + From<Ev>>(
        &mut self,
        env: &mut Env<S>,
        t: Tick,
        line: u64,
        value: u64,
    ) -> Tick {
        match self.ctl.as_mut() {
            None => t,
            Some(c) => {
                let h = env.home(line, 0);
                c[h].write(env, t, line, value)
            }
        }
    }

    fn hop<S: Copy + From<Ev>>(&self, env: &mut Env<S>, p: usize, line: u64) -> (Tick, bool) {
        let home = env.home(line, self.node_of[p]);
        let remote = home != self.node_of[p];
        let c = if remote {
            self.cfg.remote_cycles
        } else {
            self.cfg.local_cycles
        };
        (c as Tick * self.period, remote)
    }

    fn reply<S: Copy + From<Ev>>(
        &mut self,
        env: &mut Env<S>,
        t: Tick,
        p: u16,
        line: u64,
        m: SysMsg,
    ) {
        let (d, _) = self.hop(env, p as usize, line);
        let mut at = t + d;
        if self.ctl.is_some() {
            // A controller's read latency varies (a read may wait for the write buffer's
            // drains), so a later invalidation could overtake the data of a read served
            // before it; deliveries to one processor leave in the order they are sent
            // (MemorySystem invariant 3, as NUMAchine's `Fabric::to_proc`). The fixed memory
            // time keeps data ahead of any invalidation that can be seen without it.
            let last = &mut self.last_to_proc[p as usize];
            at = at.max(*last);
            *last = at;
        }
        env.deliver(p as usize, at, m);
    }

    fn resp<S: Copy + From<Ev>>(&self, env: &mut Env<S>, p: u16, line: u64, d: &Dir) -> RespState {
        let (_, remote) = self.hop(env, p as usize, line);
        RespState {
            nc_hit: false,
            global: remote
                || d.sharers
                    .iter()
                    .any(|&s| self.node_of[s as usize] != self.node_of[p as usize]),
            valid: d.owner.is_none(),
            remote,
        }
    }

    /// Invalidates other sharers (collecting acks) then grants `p` exclusive access.
    fn start_exclusive<S: Copy + From<Ev>>(
        &mut self,
        env: &mut Env<S>,
        r: Served,
        d: &mut Dir,
        upgrade: bool,
        from_memory: bool,
    ) {
        let Served { t, p, line } = r;
        let others = d.others(p);
        if others.is_empty() {
            self.grant(env, Served { t, p, line }, d, upgrade, from_memory);
            return;
        }
        let mut sent = 0;
        for s in others {
            if env.fault.drop_invalidation() {
                continue;
            }
            sent += 1;
            self.reply(env, t, s, line, SysMsg::Invalidate { line, ack: true });
        }
        if sent == 0 {
            self.grant(env, Served { t, p, line }, d, upgrade, from_memory);
            return;
        }
        d.wait_acks(p, sent, upgrade);
    }

    fn grant<S: Copy + From<Ev>>(
        &mut self,
        env: &mut Env<S>,
        r: Served,
        d: &mut Dir,
        upgrade: bool,
        from_memory: bool,
    ) {
        let Served { t, p, line } = r;
        let resp = self.resp(env, p, line, d);
        let still_sharer = d.make_owner(p);
        if upgrade && still_sharer {
            self.reply(env, t, p, line, SysMsg::Grant { line, resp });
        } else {
            let (at, value) = if from_memory {
                self.mem_read(env, t, line, d.value)
            } else {
                (t, d.value)
            };
            self.reply(
                env,
                at,
                p,
                line,
                SysMsg::Data {
                    line,
                    exclusive: true,
                    value,
                    resp,
                },
            );
        }
    }
}

impl MemorySystem for IdealSys {
    fn event_line(e: &Ev) -> Option<u64> {
        match e {
            Ev::AtHome { m, .. } => m.line(),
        }
    }

    /// The directory is one map by line and the home only sets the hop latency: a page may
    /// move when no cache holds a line of it and no request for one is in progress (so no
    /// message in flight was timed with the old home).
    fn page_movable(&self, mut lines: std::ops::Range<u64>) -> bool {
        lines.all(|l| {
            self.dirs
                .get(l)
                .is_none_or(|d| d.owner.is_none() && d.sharers.is_empty() && d.busy.is_none())
        })
    }

    type Ev = Ev;

    // Kept out of line: the event loop stays small enough for the queue to inline into it.
    #[inline(never)]
    fn from_proc<S: Copy + From<Ev>>(&mut self, env: &mut Env<S>, t: Tick, p: usize, m: ProcMsg) {
        // No processor-bus arbitration is modelled: the bus is granted at once.
        env.observe_bus_request(p, t, t);
        match m {
            ProcMsg::Uncached { .. } => {
                let d = self.cfg.local_cycles as Tick * self.period;
                env.deliver(p, t + 2 * d, SysMsg::UncachedReply { value: 0 });
            }
            _ => {
                let line = m.line().unwrap();
                let (d, _) = self.hop(env, p, line);
                env.schedule(t + d, Ev::AtHome { p: p as u16, m });
            }
        }
    }

    // Kept out of line: the event loop stays small enough for the queue to inline into it.
    #[inline(never)]
    fn handle<S: Copy + From<Ev>>(&mut self, env: &mut Env<S>, t: Tick, e: Ev) {
        let Ev::AtHome { p, m } = e;
        let line = m.line().unwrap();
        let (mut d, before) = self.dirs.take(line);
        match m {
            ProcMsg::Read { .. } | ProcMsg::ReadEx { .. } | ProcMsg::Upgrade { .. } => {
                let exclusive = !matches!(m, ProcMsg::Read { .. });
                let upgrade = matches!(m, ProcMsg::Upgrade { .. });
                match d.decide(p, exclusive, upgrade) {
                    Decision::Nack => self.reply(env, t, p, line, SysMsg::Nack { line }),
                    Decision::Cancel => self.reply(env, t, p, line, SysMsg::Cancel { line }),
                    Decision::Upgrade => {
                        self.start_exclusive(env, Served { t, p, line }, &mut d, true, true)
                    }
                    Decision::Intervene { owner } => self.reply(
                        env,
                        t,
                        owner,
                        line,
                        SysMsg::Intervention { line, exclusive },
                    ),
                    Decision::Serve if exclusive => {
                        self.start_exclusive(env, Served { t, p, line }, &mut d, false, true)
                    }
                    Decision::Serve => {
                        let r = self.resp(env, p, line, &d);
                        d.add_sharer(p);
                        let (at, value) = self.mem_read(env, t, line, d.value);
                        self.reply(
                            env,
                            at,
                            p,
                            line,
                            SysMsg::Data {
                                line,
                                exclusive: false,
                                value,
                                resp: r,
                            },
                        );
                    }
                }
            }
            ProcMsg::Writeback { value, .. } => {
                let mut at = t;
                if d.writeback(p, value) {
                    at = self.mem_write(env, t, line, value);
                }
                self.reply(env, at, p, line, SysMsg::WbAck { line });
            }
            ProcMsg::InvalAck { .. } => {
                if let Some((req, upgrade)) = d.ack() {
                    self.grant(env, Served { t, p: req, line }, &mut d, upgrade, true);
                }
            }
            ProcMsg::InterventionReply { value, from_wb, .. } => {
                if let Some((req, exclusive)) = d.intervention_done(p, value, from_wb) {
                    if let Some(v) = value {
                        // The owner's data passes the home: memory takes it too.
                        self.mem_write(env, t, line, v);
                    }
                    if exclusive {
                        self.grant(env, Served { t, p: req, line }, &mut d, false, false);
                    } else {
                        let r = self.resp(env, req, line, &d);
                        d.sharers.push(req);
                        self.reply(
                            env,
                            t,
                            req,
                            line,
                            SysMsg::Data {
                                line,
                                exclusive: false,
                                value: d.value,
                                resp: RespState { valid: false, ..r },
                            },
                        );
                    }
                }
            }
            ProcMsg::Uncached { .. } => unreachable!(),
        }
        dir::observe_change(env, |env| env.home(line, 0) as u16, t, line, before, &d);
        self.dirs.put(line, d);
    }

    /// The directory entry of `line`, for diagnostics.
    fn describe(&self, line: u64) -> String {
        format!("{:?}", self.dirs.get(line))
    }

    fn backoff_ticks(&self) -> Tick {
        self.cfg.backoff_cycles as Tick * self.period
    }

    /// A write-through store (the `elan` preset): to the line's home controller; the
    /// directory's value follows the line's, so the end-of-run check compares like with like.
    fn write_through<S: Copy + From<Ev>>(
        &mut self,
        env: &mut Env<S>,
        t: Tick,
        p: usize,
        a: u64,
        token: u64,
        whole: bool,
    ) -> Tick {
        let line = a >> env.line_shift;
        let h = env.home(line, self.node_of[p]);
        if let Some(d) = self.dirs.get_mut(line) {
            d.value = token;
        }
        match self.ctl.as_mut() {
            Some(c) => c[h].write_word(env, t, a, token, whole),
            None => t,
        }
    }

    fn controllers(&self) -> &[Controller] {
        self.ctl.as_deref().unwrap_or(&[])
    }

    fn controllers_mut(&mut self) -> &mut [Controller] {
        self.ctl.as_deref_mut().unwrap_or(&mut [])
    }

    fn memory_mismatches(&self, map: &MemoryMap, line_shift: u32) -> Vec<(u64, u64, u64)> {
        let Some(c) = self.ctl.as_ref() else {
            return Vec::new();
        };
        let mut v: Vec<(u64, u64, u64)> = self
            .dirs
            .iter()
            .filter(|(_, d)| d.owner.is_none())
            .filter_map(|(&line, d)| {
                let h = map.known_home(line << line_shift)?;
                let m = c[h].dram_value(line, line_shift);
                (m != d.value).then_some((line, m, d.value))
            })
            .collect();
        v.sort_unstable();
        v
    }
}
