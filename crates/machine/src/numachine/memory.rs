//! The home memory module of each station and its directory (seed 000, section 4.1).
//!
//! Network-level state of a line at its home (derived from the fields of `MemLine`):
//! - LV (local valid): memory valid, copies only on the home station (`procs`);
//! - GV (global valid): memory valid, remote stations in the routing mask may hold copies;
//! - LI (local invalid): a processor of the home station holds the line dirty;
//! - GI (global invalid): a remote station holds the line exclusively (its network cache is
//!   LV or LI), the routing mask names that station.
//!
//! The memory module is also the station-level controller for its own station's processors
//! (`procs`, a processor mask that may over-approximate: processors drop shared lines
//! silently). A line is locked from the first action of a transaction until it completes;
//! requests to a locked line are NACKed (the processor, or the requesting network cache on a
//! processor's behalf, retries). Write-backs are never NACKed.
//!
//! Invalidation completion: the home collects an acknowledgement from every processor and
//! network cache it invalidated before granting ownership. NUMAchine itself relies on the
//! ordering of its ring hierarchy; acknowledgements make the model correct independently of
//! message timing (our rings are modelled as per-link reservations, not as the exact slot
//! order), at the cost of one extra message per invalidated station.

use super::fabric::{Ev, Fabric, HomeReply, NetMsg, ReqKind};
use crate::addr::MemoryMap;
use crate::env::Env;
use crate::mem::controller::Controller;
use crate::msg::{ProcMsg, SysMsg};
use crate::net::ring::RoutingMask;
use crate::probe::{Observation, RespState};
use engine::Tick;
use rustc_hash::FxHashMap;

/// Who holds a line dirty, as the home sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Owner {
    /// Memory is valid (LV or GV).
    #[default]
    None,
    /// A processor of the home station (LI).
    Local(u16),
    /// A remote station (GI).
    Remote(u16),
}

/// The requester of a transaction at the home.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requester {
    /// A processor of the home station.
    Local(u16),
    /// Processor `p` through the network cache of station `s`.
    Remote { s: u16, p: u16 },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Lock {
    /// Waiting for `left` invalidation acknowledgements before granting ownership.
    Acks {
        req: Requester,
        left: u32,
        upgrade: bool,
        resp: RespState,
    },
    /// Waiting for the dirty owner's data.
    Intervention {
        req: Requester,
        exclusive: bool,
        target: Owner,
        resp: RespState,
    },
}

#[derive(Clone, Debug, Default)]
pub struct MemLine {
    value: u64,
    owner: Owner,
    /// Home-station processors that may hold a copy (bit = index within the station).
    procs: u16,
    /// Remote stations that may hold a copy.
    routing: RoutingMask,
    lock: Option<Lock>,
}

impl MemLine {
    /// Directory state code for observations: 0 LV, 1 GV, 2 LI, 3 GI.
    fn code(&self) -> u8 {
        match self.owner {
            Owner::None if self.routing.is_empty() => 0,
            Owner::None => 1,
            Owner::Local(_) => 2,
            Owner::Remote(_) => 3,
        }
    }
    /// Table 4.9 bits for a response from memory: the home's state before the request.
    fn resp(&self, remote: bool) -> RespState {
        RespState {
            nc_hit: false,
            global: matches!(self.owner, Owner::Remote(_))
                || (self.owner == Owner::None && !self.routing.is_empty()),
            valid: self.owner == Owner::None,
            remote,
        }
    }
}

/// The memory modules of all stations (each line lives at exactly one home).
#[derive(Default)]
pub struct Homes {
    lines: FxHashMap<u64, MemLine>,
}

impl Homes {
    /// No copy of `line` is recorded away from memory and no transaction holds it.
    pub fn idle(&self, line: u64) -> bool {
        self.lines.get(&line).is_none_or(|d| {
            d.owner == Owner::None && d.procs == 0 && d.routing.is_empty() && d.lock.is_none()
        })
    }
}

/// What the home works with while it handles one message: the interconnect, the machine,
/// the time `t`, the home station `h` and the line. One argument instead of five, so that the
/// directory's steps (request, invalidate, grant, intervention) read as what they decide.
pub struct HomeCx<'c, 'e, S> {
    pub fab: &'c mut Fabric,
    pub env: &'c mut Env<'e, S>,
    pub t: Tick,
    pub h: u16,
    pub line: u64,
}

impl<S: Copy + From<Ev>> HomeCx<'_, '_, S> {
    /// Sends a reply to the requester: over the bus to a local processor, over the ring to
    /// the requesting network cache.
    fn reply(&mut self, t: Tick, req: Requester, r: HomeReply) {
        let (h, line) = (self.h, self.line);
        match req {
            Requester::Local(p) => {
                let m = match r {
                    HomeReply::Data {
                        value,
                        exclusive,
                        resp,
                    } => SysMsg::Data {
                        line,
                        exclusive,
                        value,
                        resp,
                    },
                    HomeReply::Grant { resp } => SysMsg::Grant { line, resp },
                    HomeReply::Nack => SysMsg::Nack { line },
                    HomeReply::Cancel => SysMsg::Cancel { line },
                };
                self.fab.to_proc(self.env, t, p, m);
            }
            Requester::Remote { s, p } => {
                self.fab
                    .home_to_nc(self.env, t, h, s, line, NetMsg::Reply { p, reply: r });
            }
        }
    }

    /// Reads the line from the home's memory from `t`: when the data is ready and its value
    /// (`value`, the directory's, unless a memory controller holds the data).
    fn memory_read(&mut self, value: u64) -> (Tick, u64) {
        self.fab
            .memory_read(self.env, self.t, self.h, self.line, value)
    }

    /// A write-back the directory discards (its line has moved on): the fixed-timing module
    /// is still occupied for it (as before controllers existed); a controller drops it.
    fn memory_stale_write(&mut self) -> Tick {
        if self.fab.ctl.is_none() {
            self.fab.memory_access(self.env, self.t, self.h);
        }
        self.t
    }

    /// Line data `value` reaches the home's memory at `t`: returns when it is accepted.
    fn memory_write(&mut self, value: u64) -> Tick {
        self.fab
            .memory_write(self.env, self.t, self.h, self.line, value)
    }
}

impl Homes {
    pub fn describe(&self, line: u64) -> String {
        format!("home {:?}", self.lines.get(&line))
    }

    /// Lines no cache owns whose DRAM copy at their home's controller differs from the
    /// directory's value: (line, DRAM, directory).
    pub fn memory_mismatches(
        &self,
        ctl: &[Controller],
        map: &MemoryMap,
        line_shift: u32,
    ) -> Vec<(u64, u64, u64)> {
        let mut v: Vec<(u64, u64, u64)> = self
            .lines
            .iter()
            .filter(|(_, d)| d.owner == Owner::None)
            .filter_map(|(&line, d)| {
                let h = map.known_home(line << line_shift)?;
                let m = ctl[h].dram_value(line, line_shift);
                (m != d.value).then_some((line, m, d.value))
            })
            .collect();
        v.sort_unstable();
        v
    }

    fn bit(fab: &Fabric, h: u16, p: u16) -> u16 {
        1 << (p as usize - fab.topo().procs_of(h).start)
    }

    /// A message from a processor of the home station `h`. Out of line, with `from_nc`:
    /// inlined, LLVM took `fabric::Ev::at_after` out of `NumaSys::handle` instead (+32 M
    /// instructions on `numa16-share`, BENCHMARKS.md).
    #[inline(never)]
    pub fn from_proc<S: Copy + From<Ev>>(
        &mut self,
        fab: &mut Fabric,
        env: &mut Env<S>,
        t: Tick,
        h: u16,
        p: u16,
        m: ProcMsg,
    ) {
        let line = m.line().expect("cached messages only");
        let cx = &mut HomeCx {
            fab,
            env,
            t,
            h,
            line,
        };
        let mut d = self.take(line);
        let before = d.code();
        match m {
            ProcMsg::Read { .. } => self.request(cx, &mut d, Requester::Local(p), ReqKind::Read),
            ProcMsg::ReadEx { .. } => {
                self.request(cx, &mut d, Requester::Local(p), ReqKind::ReadEx)
            }
            ProcMsg::Upgrade { .. } => {
                self.request(cx, &mut d, Requester::Local(p), ReqKind::Upgrade)
            }
            ProcMsg::Writeback { value, .. } => {
                let at = if d.owner == Owner::Local(p) {
                    d.value = value;
                    d.owner = Owner::None;
                    d.procs = 0;
                    cx.memory_write(value)
                } else {
                    cx.memory_stale_write()
                };
                cx.fab.to_proc(cx.env, at, p, SysMsg::WbAck { line });
            }
            ProcMsg::InvalAck { .. } => self.ack(cx, &mut d),
            ProcMsg::InterventionReply { value, from_wb, .. } => {
                let kept = value.is_some() && !from_wb;
                self.intervention_done(cx, &mut d, Owner::Local(p), value, kept);
            }
            ProcMsg::Uncached { .. } => unreachable!(),
        }
        self.put(cx, d, before);
    }

    /// A message from the network cache of station `s`.
    #[inline(never)]
    pub fn from_nc<S: Copy + From<Ev>>(&mut self, cx: &mut HomeCx<S>, s: u16, m: NetMsg) {
        let (t, h, line) = (cx.t, cx.h, cx.line);
        let mut d = self.take(line);
        let before = d.code();
        match m {
            NetMsg::Request { p, kind } => {
                self.request(cx, &mut d, Requester::Remote { s, p }, kind)
            }
            NetMsg::NcWriteback { value } => {
                let at = if d.owner == Owner::Remote(s) {
                    d.value = value;
                    d.owner = Owner::None;
                    // Processors of `s` may keep shared copies of the line the NC evicted.
                    d.routing = RoutingMask::of(cx.fab.topo(), s);
                    cx.memory_write(value)
                } else {
                    cx.memory_stale_write()
                };
                cx.fab.home_to_nc(cx.env, at, h, s, line, NetMsg::NcWbAck);
            }
            NetMsg::NcInvalAck => self.ack(cx, &mut d),
            NetMsg::NcInterventionReply { value } => {
                self.intervention_done(cx, &mut d, Owner::Remote(s), value, true)
            }
            NetMsg::NcInterventionNack => {
                // The owner's network cache is busy with the line: abandon this transaction
                // (the requester retries) rather than wait, so no cycle of waits can form.
                if let Some(Lock::Intervention { req, .. }) = d.lock {
                    d.lock = None;
                    cx.reply(t, req, HomeReply::Nack);
                }
            }
            _ => unreachable!("home got a message meant for a network cache: {m:?}"),
        }
        self.put(cx, d, before);
    }

    fn put<S: Copy + From<Ev>>(&mut self, cx: &mut HomeCx<S>, d: MemLine, before: u8) {
        let (t, h, line, env) = (cx.t, cx.h, cx.line, &mut *cx.env);
        let after = d.code();
        if after != before && env.any_probe() {
            env.observe(Observation::Directory {
                node: h,
                t,
                line_addr: line << env.line_shift,
                old: before,
                new: after,
                who: env.origin(),
            });
        }
        *self.lines.get_mut(&line).expect("taken by `take`") = d;
    }

    /// The entry of `line` (empty if new), taken out while a message is decided and put back
    /// by `put`: two lookups, no removal and re-insertion per transaction.
    #[inline]
    fn take(&mut self, line: u64) -> MemLine {
        std::mem::take(self.lines.entry(line).or_default())
    }

    fn request<S: Copy + From<Ev>>(
        &mut self,
        cx: &mut HomeCx<S>,
        d: &mut MemLine,
        req: Requester,
        kind: ReqKind,
    ) {
        let (t, h, line) = (cx.t, cx.h, cx.line);
        let requester_owns = match (req, d.owner) {
            (Requester::Local(p), Owner::Local(o)) => p == o,
            (Requester::Remote { s, .. }, Owner::Remote(r)) => s == r,
            _ => false,
        };
        // Locked, or the requester's own write-back is still on its way here.
        if d.lock.is_some() || requester_owns {
            cx.reply(t, req, HomeReply::Nack);
            return;
        }
        let resp = d.resp(matches!(req, Requester::Remote { .. }));
        if kind == ReqKind::Upgrade {
            let holds = d.owner == Owner::None
                && match req {
                    Requester::Local(p) => d.procs & Self::bit(cx.fab, h, p) != 0,
                    Requester::Remote { s, .. } => d.routing.reaches(cx.fab.topo(), s),
                };
            if !holds {
                // A competing processor won ownership first.
                cx.reply(t, req, HomeReply::Cancel);
                return;
            }
        }
        let exclusive = kind != ReqKind::Read;
        match d.owner {
            Owner::None if !exclusive => {
                match req {
                    Requester::Local(p) => d.procs |= Self::bit(cx.fab, h, p),
                    Requester::Remote { s, .. } => d.routing.add(cx.fab.topo(), s),
                }
                let (at, value) = cx.memory_read(d.value);
                let r = HomeReply::Data {
                    value,
                    exclusive: false,
                    resp,
                };
                cx.reply(at, req, r);
            }
            Owner::None => self.start_exclusive(cx, d, req, kind == ReqKind::Upgrade, resp),
            target => {
                d.lock = Some(Lock::Intervention {
                    req,
                    exclusive,
                    target,
                    resp,
                });
                match target {
                    Owner::Local(o) => {
                        cx.fab
                            .to_proc(cx.env, t, o, SysMsg::Intervention { line, exclusive })
                    }
                    Owner::Remote(r) => {
                        cx.fab
                            .home_to_nc(cx.env, t, h, r, line, NetMsg::Intervention { exclusive })
                    }
                    Owner::None => unreachable!(),
                }
            }
        }
    }

    /// Invalidates every other copy (home-station processors over the bus, remote stations by
    /// a multicast to the routing mask) and grants ownership once all have acknowledged.
    fn start_exclusive<S: Copy + From<Ev>>(
        &mut self,
        cx: &mut HomeCx<S>,
        d: &mut MemLine,
        req: Requester,
        upgrade: bool,
        resp: RespState,
    ) {
        let (t, h, line) = (cx.t, cx.h, cx.line);
        let (keep, req_station) = match req {
            Requester::Local(p) => (Self::bit(cx.fab, h, p), h),
            Requester::Remote { s, .. } => (0, s),
        };
        let mut sent = 0;
        let first = cx.fab.topo().procs_of(h).start;
        let locals = d.procs & !keep;
        for i in 0..16 {
            if locals & (1 << i) != 0 {
                if cx.env.fault.drop_invalidation() {
                    continue;
                }
                sent += 1;
                let m = SysMsg::Invalidate { line, ack: true };
                cx.fab.to_proc(cx.env, t, (first + i) as u16, m);
            }
        }
        d.procs &= keep;
        // The multicast may reach the home station itself (cross product of the mask); its
        // copies are tracked by `procs`, so it is not sent there.
        for s in d.routing.stations(cx.fab.topo()) {
            if s == h || s == req_station {
                continue;
            }
            if cx.env.fault.drop_invalidation() {
                continue;
            }
            sent += 1;
            cx.fab.home_to_nc(cx.env, t, h, s, line, NetMsg::Invalidate);
        }
        if sent == 0 {
            self.grant(cx, d, req, upgrade, resp, true);
        } else {
            d.lock = Some(Lock::Acks {
                req,
                left: sent,
                upgrade,
                resp,
            });
        }
    }

    /// Makes `req` the owner. A local upgrader that still holds its copy gets a grant; every
    /// other requester gets the data (a remote network cache decides grant or data itself).
    fn grant<S: Copy + From<Ev>>(
        &mut self,
        cx: &mut HomeCx<S>,
        d: &mut MemLine,
        req: Requester,
        upgrade: bool,
        resp: RespState,
        from_memory: bool,
    ) {
        let (t, h) = (cx.t, cx.h);
        let r = match req {
            Requester::Local(p) => {
                let b = Self::bit(cx.fab, h, p);
                let holds = d.procs & b != 0;
                d.owner = Owner::Local(p);
                d.procs = b;
                d.routing = RoutingMask::default();
                if upgrade && holds {
                    cx.reply(t, req, HomeReply::Grant { resp });
                    return;
                }
                HomeReply::Data {
                    value: d.value,
                    exclusive: true,
                    resp,
                }
            }
            Requester::Remote { s, .. } => {
                d.owner = Owner::Remote(s);
                d.procs = 0;
                d.routing = RoutingMask::of(cx.fab.topo(), s);
                HomeReply::Data {
                    value: d.value,
                    exclusive: true,
                    resp,
                }
            }
        };
        let (at, r) = match r {
            HomeReply::Data {
                value,
                exclusive,
                resp,
            } if from_memory => {
                let (at, value) = cx.memory_read(value);
                let r = HomeReply::Data {
                    value,
                    exclusive,
                    resp,
                };
                (at, r)
            }
            r => (t, r),
        };
        cx.reply(at, req, r);
    }

    fn ack<S: Copy + From<Ev>>(&mut self, cx: &mut HomeCx<S>, d: &mut MemLine) {
        if let Some(Lock::Acks {
            req,
            left,
            upgrade,
            resp,
        }) = d.lock
        {
            if left > 1 {
                d.lock = Some(Lock::Acks {
                    req,
                    left: left - 1,
                    upgrade,
                    resp,
                });
            } else {
                d.lock = None;
                self.grant(cx, d, req, upgrade, resp, true);
            }
        }
    }

    /// The dirty owner answered an intervention (`value` None: it no longer had the line, its
    /// write-back has already reached memory). `kept`: the owner keeps a shared copy.
    fn intervention_done<S: Copy + From<Ev>>(
        &mut self,
        cx: &mut HomeCx<S>,
        d: &mut MemLine,
        from: Owner,
        value: Option<u64>,
        kept: bool,
    ) {
        let (t, h) = (cx.t, cx.h);
        let Some(Lock::Intervention {
            req,
            exclusive,
            target,
            resp,
        }) = d.lock
        else {
            return;
        };
        debug_assert_eq!(target, from);
        if let Some(v) = value {
            d.value = v;
            // The owner's data passes the home: memory takes it too (a controller only; the
            // fixed-timing module does not charge it).
            if cx.fab.ctl.is_some() {
                cx.memory_write(v);
            }
        }
        d.lock = None;
        d.owner = Owner::None;
        d.procs = 0;
        d.routing = RoutingMask::default();
        if exclusive {
            self.grant(cx, d, req, false, resp, false);
            return;
        }
        match from {
            Owner::Local(o) if kept => d.procs |= Self::bit(cx.fab, h, o),
            // The owner's network cache keeps a valid copy (GV).
            Owner::Remote(r) => d.routing.add(cx.fab.topo(), r),
            _ => {}
        }
        match req {
            Requester::Local(p) => d.procs |= Self::bit(cx.fab, h, p),
            Requester::Remote { s, .. } => d.routing.add(cx.fab.topo(), s),
        }
        let r = HomeReply::Data {
            value: d.value,
            exclusive: false,
            resp,
        };
        cx.reply(t, req, r);
    }
}
