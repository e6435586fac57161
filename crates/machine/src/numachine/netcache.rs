//! The network cache (NC) of a station (seed 000, section 4.1): the station-level controller
//! for lines whose home is another station, and a cache of their data.
//!
//! States of an NC line (not-in, N, is the absence of an entry):
//! - GV: the NC holds a valid shared copy; other stations may share;
//! - GI: tag present, no valid copy (invalidated, or allocated for a request in progress);
//! - LV: the station holds the line exclusively and the NC's copy is the valid one (the home
//!   is GI naming this station); processors here may hold shared copies;
//! - LI: the station holds the line exclusively and processor `owner` has it dirty.
//!
//! `procs` is a processor mask that may over-approximate. The NC is not inclusive of the
//! processor caches: a GV/GI entry is dropped silently when its set is full, so processors
//! may hold copies the NC no longer tracks; a new entry therefore starts with every
//! processor in its mask, and an invalidation that misses the NC is broadcast on the bus.
//!
//! Choices the seed leaves open, made here:
//! - LI entries are never evicted (an LV entry is written back, kept in the NC's write-back
//!   buffer until the home acknowledges it). So the NC always knows which of its processors
//!   owns a line its station owns, and an intervention from the home never needs a bus
//!   broadcast (a broadcast intervention would meet processors that defer interventions
//!   while their own read-exclusive is outstanding). A request needing a new entry in a set
//!   whose every way is LI or locked is NACKed, and the least recently used LI line of the
//!   set is recalled from its owner (exclusive intervention) and written back home.
//! - A processor write-back that misses (or finds the line no longer owned by the writer) is
//!   stale by construction and is acknowledged and dropped; the NC never allocates on it.
//! - An upgrade whose NC line is GI, or whose requester is not in the mask, is cancelled at
//!   the NC (its copy was invalidated by a competing owner); one that misses the NC is sent
//!   to the home as a read-exclusive and answered with data.
//! - The home's ownership reply to this station always carries data; the NC answers an
//!   upgrading processor that still holds its copy with a grant.
//! - An intervention from the home to a locked NC line is NACKed to the home, which abandons
//!   its transaction and NACKs its own requester.

use super::fabric::{Ev, Fabric, HomeReply, NetMsg, ReqKind};
use crate::env::Env;
use crate::msg::{ProcMsg, SysMsg};
use crate::probe::RespState;
use engine::Tick;
use rustc_hash::FxHashMap;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NcState {
    LV,
    LI,
    GV,
    GI,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NcLock {
    /// A request for processor `p` is at the home.
    Home {
        p: u16,
        /// The processor upgrades and held a valid copy when the request left.
        upgrade: bool,
    },
    /// Invalidating this station's other copies before giving `p` ownership.
    LocalAcks {
        p: u16,
        left: u32,
        upgrade: bool,
        resp: RespState,
    },
    /// Waiting for local owner's data for local requester `p`.
    LocalIntervention {
        p: u16,
        exclusive: bool,
        resp: RespState,
    },
    /// Recalling the line from its local owner to make room in a full set; then it is
    /// written back home and dropped.
    Recall,
    /// Serving the home's intervention: waiting for the local owner's data
    /// (`from_owner`) or for `left` invalidation acknowledgements.
    HomeIntervention {
        exclusive: bool,
        from_owner: bool,
        left: u32,
    },
}

#[derive(Clone, Debug)]
pub struct NcLine {
    state: NcState,
    owner: u16,
    procs: u16,
    /// Processors this entry gave a copy to that no invalidation has reached since: the
    /// only ones whose upgrade can be granted (`procs` of a new entry is a guess).
    given: u16,
    value: u64,
    lock: Option<NcLock>,
    used: u64,
}

/// The network cache of one station.
pub struct NetCache {
    pub station: u16,
    sets: u64,
    assoc: usize,
    all_procs: u16,
    first_proc: u16,
    lines: FxHashMap<u64, NcLine>,
    /// Lines present, per set.
    ways: FxHashMap<u64, Vec<u64>>,
    /// Evicted LV lines on their way home, answering interventions until acknowledged.
    wb: FxHashMap<u64, u64>,
    /// Outstanding processor acknowledgements of invalidations done for the home, per line,
    /// and the message to send the home when they are all in.
    inval_left: FxHashMap<u64, (u32, NetMsg)>,
    clock: u64,
}

impl NetCache {
    /// The network cache has an entry for `line`.
    pub fn holds(&self, line: u64) -> bool {
        self.lines.contains_key(&line)
    }

    pub fn new(station: u16, sets: u64, assoc: usize, procs: std::ops::Range<usize>) -> NetCache {
        let n = procs.len();
        NetCache {
            station,
            sets,
            assoc,
            all_procs: ((1u32 << n) - 1) as u16,
            first_proc: procs.start as u16,
            lines: FxHashMap::default(),
            ways: FxHashMap::default(),
            wb: FxHashMap::default(),
            inval_left: FxHashMap::default(),
            clock: 0,
        }
    }

    pub fn describe(&self, line: u64) -> Option<String> {
        let e = self.lines.get(&line);
        let wb = self.wb.get(&line);
        (e.is_some() || wb.is_some()).then(|| format!("nc{} {:?} wb {:?}", self.station, e, wb))
    }

    fn bit(&self, p: u16) -> u16 {
        1 << (p - self.first_proc)
    }

    /// Sends `Invalidate { ack: true }` to each processor of `mask` (honouring the injected
    /// fault); returns how many were sent.
    fn invalidate<S: Copy + From<Ev>>(
        &self,
        fab: &mut Fabric,
        env: &mut Env<S>,
        t: Tick,
        line: u64,
        mask: u16,
    ) -> u32 {
        let mut sent = 0;
        for i in 0..16u16 {
            if mask & (1 << i) != 0 {
                if env.fault.drop_invalidation() {
                    continue;
                }
                sent += 1;
                let m = SysMsg::Invalidate { line, ack: true };
                fab.to_proc(env, t, self.first_proc + i, m);
            }
        }
        sent
    }

    /// Makes room for `line` (an LV victim is written back home). False if every way of the
    /// set is owned by a local processor (LI) or locked.
    fn allocate<S: Copy + From<Ev>>(
        &mut self,
        fab: &mut Fabric,
        env: &mut Env<S>,
        t: Tick,
        line: u64,
    ) -> bool {
        if self.lines.contains_key(&line) {
            return true;
        }
        let set = line % self.sets;
        let ways = self.ways.entry(set).or_default();
        if ways.len() >= self.assoc {
            let victim = ways
                .iter()
                .copied()
                .filter(|l| {
                    let e = &self.lines[l];
                    e.lock.is_none() && e.state != NcState::LI
                })
                .min_by_key(|l| self.lines[l].used);
            let Some(v) = victim else {
                self.recall(fab, env, t, set);
                return false;
            };
            ways.retain(|&l| l != v);
            let e = self.lines.remove(&v).unwrap();
            if e.state == NcState::LV {
                self.wb.insert(v, e.value);
                let h = env.home(v, self.station as usize) as u16;
                fab.nc_to_home(
                    env,
                    t,
                    self.station,
                    h,
                    v,
                    NetMsg::NcWriteback { value: e.value },
                );
            }
        }
        self.ways.entry(set).or_default().push(line);
        self.clock += 1;
        self.lines.insert(
            line,
            NcLine {
                state: NcState::GI,
                owner: 0,
                procs: self.all_procs,
                given: 0,
                value: 0,
                lock: None,
                used: self.clock,
            },
        );
        true
    }

    /// Every way of `set` is locked or owned by a local processor: take the least recently
    /// used owned line back from its owner (an exclusive intervention), so a later request
    /// finds room. Without this, owners blocked on misses to the same set would never free
    /// it.
    fn recall<S: Copy + From<Ev>>(
        &mut self,
        fab: &mut Fabric,
        env: &mut Env<S>,
        t: Tick,
        set: u64,
    ) {
        let lines = &self.lines;
        let victim = self.ways[&set]
            .iter()
            .copied()
            .filter(|l| lines[l].lock.is_none())
            .min_by_key(|l| lines[l].used);
        if let Some(v) = victim {
            let e = self.lines.get_mut(&v).unwrap();
            debug_assert_eq!(e.state, NcState::LI);
            e.lock = Some(NcLock::Recall);
            let o = e.owner;
            let m = SysMsg::Intervention {
                line: v,
                exclusive: true,
            };
            fab.to_proc(env, t, o, m);
        }
    }

    /// A message from processor `p` of this station about a line homed elsewhere.
    pub fn from_proc<S: Copy + From<Ev>>(
        &mut self,
        fab: &mut Fabric,
        env: &mut Env<S>,
        t: Tick,
        p: u16,
        m: ProcMsg,
    ) {
        let line = m.line().expect("cached messages only");
        match m {
            ProcMsg::Read { .. } => self.request(fab, env, t, p, line, ReqKind::Read),
            ProcMsg::ReadEx { .. } => self.request(fab, env, t, p, line, ReqKind::ReadEx),
            ProcMsg::Upgrade { .. } => self.request(fab, env, t, p, line, ReqKind::Upgrade),
            ProcMsg::Writeback { value, .. } => {
                if let Some(e) = self.lines.get_mut(&line) {
                    if e.state == NcState::LI && e.owner == p {
                        e.value = value;
                        e.state = NcState::LV;
                    }
                }
                fab.nc_access(env, t, self.station, fab.nc_data);
                fab.to_proc(env, t, p, SysMsg::WbAck { line });
            }
            ProcMsg::InvalAck { .. } => self.local_ack(fab, env, t, line),
            ProcMsg::InterventionReply { .. } => self.owner_replied(fab, env, t, p, m),
            ProcMsg::Uncached { .. } => unreachable!(),
        }
    }

    fn request<S: Copy + From<Ev>>(
        &mut self,
        fab: &mut Fabric,
        env: &mut Env<S>,
        t: Tick,
        p: u16,
        line: u64,
        kind: ReqKind,
    ) {
        let s = self.station;
        let t = fab.nc_access(env, t, s, fab.nc_lookup) + fab.nc_lookup;
        let pb = self.bit(p);
        self.clock += 1;
        let clock = self.clock;
        let hit_resp = |st: NcState| RespState {
            nc_hit: true,
            global: matches!(st, NcState::GV | NcState::GI),
            valid: matches!(st, NcState::GV | NcState::LV),
            remote: true,
        };
        if let Some(e) = self.lines.get_mut(&line) {
            e.used = clock;
            if e.lock.is_some() {
                fab.to_proc(env, t, p, SysMsg::Nack { line });
                return;
            }
            let resp = hit_resp(e.state);
            match (kind, e.state) {
                (ReqKind::Read, NcState::GV | NcState::LV) => {
                    e.procs |= pb;
                    e.given |= pb;
                    let m = SysMsg::Data {
                        line,
                        exclusive: false,
                        value: e.value,
                        resp,
                    };
                    let at = fab.nc_access(env, t, s, fab.nc_data) + fab.nc_data;
                    fab.to_proc(env, at, p, m);
                    return;
                }
                (_, NcState::LI) if e.owner == p => {
                    // The requester's own write-back is still on its way here.
                    fab.to_proc(env, t, p, SysMsg::Nack { line });
                    return;
                }
                (ReqKind::Upgrade, NcState::LI | NcState::GI) => {
                    fab.to_proc(env, t, p, SysMsg::Cancel { line });
                    return;
                }
                (ReqKind::Upgrade, NcState::GV | NcState::LV) if e.given & pb == 0 => {
                    fab.to_proc(env, t, p, SysMsg::Cancel { line });
                    return;
                }
                (_, NcState::LI) => {
                    let exclusive = kind != ReqKind::Read;
                    e.lock = Some(NcLock::LocalIntervention { p, exclusive, resp });
                    let o = e.owner;
                    fab.to_proc(env, t, o, SysMsg::Intervention { line, exclusive });
                    return;
                }
                (_, NcState::LV) => {
                    // The station owns the line: invalidate the other local copies.
                    let others = e.procs & !pb;
                    e.given &= pb;
                    let upgrade = kind == ReqKind::Upgrade;
                    let sent = self.invalidate(fab, env, t, line, others);
                    let e = self.lines.get_mut(&line).unwrap();
                    if sent == 0 {
                        let m = Self::finish_exclusive(line, e, p, pb, upgrade, resp);
                        fab.to_proc(env, t, p, m);
                    } else {
                        e.lock = Some(NcLock::LocalAcks {
                            p,
                            left: sent,
                            upgrade,
                            resp,
                        });
                    }
                    return;
                }
                _ => {}
            }
        }
        // Miss (or no permission): go to the home.
        if !self.allocate(fab, env, t, line) {
            fab.to_proc(env, t, p, SysMsg::Nack { line });
            return;
        }
        let e = self.lines.get_mut(&line).unwrap();
        let upgrade = kind == ReqKind::Upgrade && e.state == NcState::GV && e.given & pb != 0;
        let sent_kind = match kind {
            ReqKind::Upgrade if !upgrade => ReqKind::ReadEx,
            k => k,
        };
        e.lock = Some(NcLock::Home { p, upgrade });
        let h = env.home(line, s as usize) as u16;
        fab.nc_to_home(env, t, s, h, line, NetMsg::Request { p, kind: sent_kind });
    }

    /// Gives `p` (bit `pb` of the station) ownership once the other local copies are gone:
    /// LI with `p` the owner. Returns the answer to send `p` (a grant if its upgrade kept
    /// its copy, else the data).
    fn finish_exclusive(
        line: u64,
        e: &mut NcLine,
        p: u16,
        pb: u16,
        upgrade: bool,
        resp: RespState,
    ) -> SysMsg {
        let holds = e.given & pb != 0;
        e.lock = None;
        e.state = NcState::LI;
        e.owner = p;
        e.procs = pb;
        e.given = pb;
        if upgrade && holds {
            SysMsg::Grant { line, resp }
        } else {
            SysMsg::Data {
                line,
                exclusive: true,
                value: e.value,
                resp,
            }
        }
    }

    fn local_ack<S: Copy + From<Ev>>(
        &mut self,
        fab: &mut Fabric,
        env: &mut Env<S>,
        t: Tick,
        line: u64,
    ) {
        if let Some((n, reply)) = self.inval_left.get_mut(&line) {
            *n -= 1;
            if *n == 0 {
                let reply = *reply;
                self.inval_left.remove(&line);
                let h = env.home(line, self.station as usize) as u16;
                fab.nc_to_home(env, t, self.station, h, line, reply);
            }
            return;
        }
        let first = self.first_proc;
        let Some(e) = self.lines.get_mut(&line) else {
            return;
        };
        match e.lock {
            Some(NcLock::LocalAcks {
                p,
                left,
                upgrade,
                resp,
            }) => {
                if left > 1 {
                    e.lock = Some(NcLock::LocalAcks {
                        p,
                        left: left - 1,
                        upgrade,
                        resp,
                    });
                } else {
                    let pb = 1 << (p - first);
                    let m = Self::finish_exclusive(line, e, p, pb, upgrade, resp);
                    fab.to_proc(env, t, p, m);
                }
            }
            Some(NcLock::HomeIntervention {
                exclusive,
                from_owner: false,
                left,
            }) => {
                if left > 1 {
                    e.lock = Some(NcLock::HomeIntervention {
                        exclusive,
                        from_owner: false,
                        left: left - 1,
                    });
                } else {
                    e.lock = None;
                    e.state = NcState::GI;
                    e.procs = 0;
                    e.given = 0;
                    let value = e.value;
                    let h = env.home(line, self.station as usize) as u16;
                    let m = NetMsg::NcInterventionReply { value: Some(value) };
                    fab.nc_to_home(env, t, self.station, h, line, m);
                }
            }
            _ => {}
        }
    }

    /// Processor `o`'s answer `m` (an `InterventionReply`) to an intervention for a local
    /// requester, a recall or the home.
    fn owner_replied<S: Copy + From<Ev>>(
        &mut self,
        fab: &mut Fabric,
        env: &mut Env<S>,
        t: Tick,
        o: u16,
        m: ProcMsg,
    ) {
        let ProcMsg::InterventionReply {
            line,
            value,
            from_wb,
        } = m
        else {
            unreachable!("an intervention reply: {m:?}")
        };
        let ob = self.bit(o);
        let s = self.station;
        let Some(e) = self.lines.get_mut(&line) else {
            return;
        };
        // `None`: the owner's write-back already reached the NC, whose copy is current.
        if let Some(v) = value {
            e.value = v;
        }
        let kept = value.is_some() && !from_wb;
        match e.lock {
            Some(NcLock::LocalIntervention { p, exclusive, resp }) => {
                e.lock = None;
                let pb = 1 << (p - self.first_proc);
                if exclusive {
                    e.state = NcState::LI;
                    e.owner = p;
                    e.procs = pb;
                    e.given = pb;
                } else {
                    e.state = NcState::LV;
                    e.procs = pb | if kept { ob } else { 0 };
                    e.given = e.procs;
                }
                let m = SysMsg::Data {
                    line,
                    exclusive,
                    value: e.value,
                    resp,
                };
                fab.to_proc(env, t, p, m);
            }
            Some(NcLock::Recall) => {
                let value = e.value;
                self.lines.remove(&line);
                let set = line % self.sets;
                if let Some(w) = self.ways.get_mut(&set) {
                    w.retain(|&l| l != line);
                }
                self.wb.insert(line, value);
                let h = env.home(line, s as usize) as u16;
                fab.nc_to_home(env, t, s, h, line, NetMsg::NcWriteback { value });
            }
            Some(NcLock::HomeIntervention {
                exclusive,
                from_owner: true,
                ..
            }) => {
                e.lock = None;
                if exclusive {
                    e.state = NcState::GI;
                    e.procs = 0;
                    e.given = 0;
                } else {
                    e.state = NcState::GV;
                    e.procs = if kept { ob } else { 0 };
                    e.given = e.procs;
                }
                let m = NetMsg::NcInterventionReply {
                    value: Some(e.value),
                };
                let h = env.home(line, s as usize) as u16;
                fab.nc_to_home(env, t, s, h, line, m);
            }
            _ => {}
        }
    }

    /// A message from the line's home.
    pub fn from_home<S: Copy + From<Ev>>(
        &mut self,
        fab: &mut Fabric,
        env: &mut Env<S>,
        t: Tick,
        h: u16,
        line: u64,
        m: NetMsg,
    ) {
        let s = self.station;
        match m {
            NetMsg::Reply { p, reply } => self.home_replied(fab, env, t, p, line, reply),
            NetMsg::Invalidate => self.invalidate_then(fab, env, t, h, line, NetMsg::NcInvalAck),
            NetMsg::Intervention { exclusive } => {
                let reply =
                    |fab: &mut Fabric, env: &mut Env<S>, m| fab.nc_to_home(env, t, s, h, line, m);
                // Not owned here (any more): the data is in the write-back buffer or already
                // at the home. Shared copies may remain on this station (an evicted LV line's
                // sharers are untracked), so an exclusive intervention invalidates them first.
                let unowned = |this: &mut Self, fab: &mut Fabric, env: &mut Env<S>, value| {
                    let m = NetMsg::NcInterventionReply { value };
                    if exclusive {
                        this.invalidate_then(fab, env, t, h, line, m);
                    } else {
                        fab.nc_to_home(env, t, s, h, line, m);
                    }
                };
                if let Some(&v) = self.wb.get(&line) {
                    unowned(self, fab, env, Some(v));
                    return;
                }
                let Some(e) = self.lines.get_mut(&line) else {
                    unowned(self, fab, env, None);
                    return;
                };
                if e.lock.is_some() {
                    reply(fab, env, NetMsg::NcInterventionNack);
                    return;
                }
                match e.state {
                    NcState::LV if !exclusive => {
                        e.state = NcState::GV;
                        let at = fab.nc_access(env, t, s, fab.nc_data) + fab.nc_data;
                        let m = NetMsg::NcInterventionReply {
                            value: Some(e.value),
                        };
                        fab.nc_to_home(env, at, s, h, line, m);
                    }
                    NcState::LV => {
                        let mask = e.procs;
                        let value = e.value;
                        let sent = self.invalidate(fab, env, t, line, mask);
                        let e = self.lines.get_mut(&line).unwrap();
                        if sent == 0 {
                            e.state = NcState::GI;
                            e.procs = 0;
                            e.given = 0;
                            reply(fab, env, NetMsg::NcInterventionReply { value: Some(value) });
                        } else {
                            e.lock = Some(NcLock::HomeIntervention {
                                exclusive,
                                from_owner: false,
                                left: sent,
                            });
                        }
                    }
                    NcState::LI => {
                        e.lock = Some(NcLock::HomeIntervention {
                            exclusive,
                            from_owner: true,
                            left: 0,
                        });
                        let o = e.owner;
                        fab.to_proc(env, t, o, SysMsg::Intervention { line, exclusive });
                    }
                    // Our write-back has reached the home already: memory is current.
                    NcState::GV | NcState::GI => unowned(self, fab, env, None),
                }
            }
            NetMsg::NcWbAck => {
                self.wb.remove(&line);
            }
            _ => unreachable!("network cache got a message meant for a home: {m:?}"),
        }
    }

    /// Invalidates this station's copies of `line` for the home (those the entry may have, or
    /// every processor if the line is not in the NC), then sends the home `reply`.
    fn invalidate_then<S: Copy + From<Ev>>(
        &mut self,
        fab: &mut Fabric,
        env: &mut Env<S>,
        t: Tick,
        h: u16,
        line: u64,
        reply: NetMsg,
    ) {
        let s = self.station;
        let mask = match self.lines.get_mut(&line) {
            Some(e) => {
                debug_assert!(
                    matches!(e.state, NcState::GV | NcState::GI),
                    "home invalidated an owned NC line: {e:?}"
                );
                if e.state == NcState::GV {
                    e.state = NcState::GI;
                }
                // Messages from a home to an NC arrive in order: if a request of
                // ours is at the home, this invalidation is older than its reply.
                e.given = 0;
                std::mem::take(&mut e.procs)
            }
            // Not in the NC: processors may hold untracked copies; broadcast.
            None => self.all_procs,
        };
        let sent = self.invalidate(fab, env, t, line, mask);
        if sent == 0 {
            fab.nc_to_home(env, t, s, h, line, reply);
        } else {
            let old = self.inval_left.insert(line, (sent, reply));
            debug_assert!(old.is_none(), "two home invalidations of one line at once");
        }
    }

    fn home_replied<S: Copy + From<Ev>>(
        &mut self,
        fab: &mut Fabric,
        env: &mut Env<S>,
        t: Tick,
        p: u16,
        line: u64,
        r: HomeReply,
    ) {
        let pb = self.bit(p);
        let s = self.station;
        let Some(e) = self.lines.get_mut(&line) else {
            unreachable!("home reply for a line not in NC {s}")
        };
        let Some(NcLock::Home { p: lp, upgrade }) = e.lock else {
            unreachable!("home reply for an NC line not waiting: {e:?}")
        };
        debug_assert_eq!(lp, p);
        match r {
            HomeReply::Nack => {
                e.lock = None;
                fab.to_proc(env, t, p, SysMsg::Nack { line });
            }
            HomeReply::Cancel => {
                e.lock = None;
                fab.to_proc(env, t, p, SysMsg::Cancel { line });
            }
            HomeReply::Grant { .. } => unreachable!("the home grants a station with data"),
            HomeReply::Data {
                value,
                exclusive: false,
                resp,
            } => {
                e.lock = None;
                e.state = NcState::GV;
                e.value = value;
                e.procs |= pb;
                e.given |= pb;
                let at = fab.nc_access(env, t, s, fab.nc_data) + fab.nc_data;
                let m = SysMsg::Data {
                    line,
                    exclusive: false,
                    value,
                    resp,
                };
                fab.to_proc(env, at, p, m);
            }
            HomeReply::Data {
                value,
                exclusive: true,
                resp,
            } => {
                e.value = value;
                e.state = NcState::LV;
                let others = e.procs & !pb;
                e.given &= pb;
                let sent = self.invalidate(fab, env, t, line, others);
                let e = self.lines.get_mut(&line).unwrap();
                if sent == 0 {
                    let m = Self::finish_exclusive(line, e, p, pb, upgrade, resp);
                    fab.to_proc(env, t, p, m);
                } else {
                    e.lock = Some(NcLock::LocalAcks {
                        p,
                        left: sent,
                        upgrade,
                        resp,
                    });
                }
            }
        }
    }
}
