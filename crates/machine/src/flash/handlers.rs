//! The protocol handlers of FLASH's default dynamic-pointer-allocation (DP) protocol
//! (seed 004, 3.1.2; Figures 3 and 4 give NIRemotePut and NILocalGet).
//!
//! A handler is named by the interface its message came in on (PI: from this node's
//! processor; NI: from the network), by whether this node is the line's home (`Local`) or not
//! (`Remote`), and by the message. Each run decides everything at its first instruction (the
//! PP runs one handler at a time, so a handler is atomic), updates the directory header and the
//! node's tables, and lists the messages it sends; `magic` turns its cost into time.
//!
//! # Protocol choices (the seed is silent on these; FLASH's DP protocol is followed where known)
//! - **Invalidation acknowledgements are collected at the requester**, as FLASH does: the home
//!   sends the data (PutX) or the ownership (UpgradeAck) with the number of invalidations sent,
//!   and the requester's MAGIC holds the reply until that many NIInvalAcks have arrived (they
//!   may arrive before the reply). The processor gets write permission only then. The home
//!   records the requester as dirty owner at once; requests forwarded to it meanwhile reach its
//!   processor, which defers them until its own grant (see `cpu::agent`).
//! - **Dirty lines are fetched by forwarding** (3-hop): the home sets Pending and sends
//!   NIRemoteGetFwd/NIRemoteGetXFwd to the owner; the owner's MAGIC sends the data straight to
//!   the requester and a sharing write-back (SWB, with data) or an ownership transfer (OwnXfer)
//!   to the home, which clears Pending. When the requester is the home itself, only the SWB /
//!   OwnXfer (carrying the data) is sent.
//! - **Requests to a Pending line are NACKed**; the processor retries after a random back-off.
//! - **Upgrades from a node that lost its copy are converted** to a GetX with data (FLASH):
//!   the home answers with PutX (data) instead of UpgradeAck; counted in
//!   `FlashStats::converted_upgrades`.
//! - **Write-backs crossing a forwarded request**: a write-back (NILocalPut/PILocalPut) from the
//!   recorded owner is accepted even while Pending (memory updated, Dirty cleared, Pending kept);
//!   the owner's write-back buffer answers the forwarded request with the same data. If the
//!   buffer was already released (the write-back acknowledged), the owner answers FwdMiss and
//!   the home serves the requester from memory (NILocalFwdMiss). A write-back from a node that
//!   is no longer the owner (its SWB/OwnXfer, a reply, overtook it) is acknowledged and dropped:
//!   the data already came with the SWB/OwnXfer (`stale_writebacks`).
//! - FLASH does not acknowledge write-backs; the processor interface used here keeps a dirty
//!   victim in its write-back buffer until a `WbAck`, so the home sends one (NIRemotePutAck).
//! - Uncached accesses to MAGIC run PIUncached and are answered with 0, except FlashPoint's
//!   commands (seed 004, "Program Access to Performance State"), which run its added handlers
//!   `FPBinAssign` (bin assignment: an uncached store), `FPProcDelta` (procedure delta: an
//!   uncached load) and `FPRecordRead` (a statistics word read back by an uncached load). The
//!   seed adds four handlers without naming them; we have these three (its fourth is not
//!   identified: perhaps the cache flush it mentions for reading records back).

use crate::fault::Fault;
use crate::flash::dir::{
    self, set_flag, set_ptr, Directory, Header, DIRTY, HEAD_PTR, LOCAL, PENDING,
};
use crate::msg::{ProcMsg, SysMsg};
use crate::probe::RespState;

macro_rules! handlers {
    ($($name:ident),* $(,)?) => {
        /// Every protocol handler. `as u16` is the id in `Observation::Handler`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u16)]
        pub enum Handler { $($name),* }
        impl Handler {
            pub const ALL: &'static [Handler] = &[$(Handler::$name),*];
            pub fn name(self) -> &'static str {
                match self { $(Handler::$name => stringify!($name)),* }
            }
        }
    };
}

handlers!(
    PILocalGet,
    PILocalGetX,
    PILocalUpgrade,
    PIRemoteGet,
    PIRemoteGetX,
    PIRemoteUpgrade,
    PILocalPut,
    PIRemotePut,
    PIInvalAck,
    PILocalInterventionReply,
    PIRemoteInterventionReply,
    PIUncached,
    NILocalGet,
    NILocalGetX,
    NILocalUpgrade,
    NILocalPut,
    NILocalSWB,
    NILocalOwnXfer,
    NILocalFwdMiss,
    NIRemotePut,
    NIRemotePutX,
    NIRemoteUpgradeAck,
    NIRemotePutAck,
    NIInval,
    NIInvalAck,
    NINack,
    NIRemoteGetFwd,
    NIRemoteGetXFwd,
    FPBinAssign,
    FPProcDelta,
    FPRecordRead,
);

impl Handler {
    pub fn from_name(s: &str) -> Option<Handler> {
        Handler::ALL.iter().copied().find(|h| h.name() == s)
    }
    pub fn from_id(id: u16) -> Option<Handler> {
        Handler::ALL.get(id as usize).copied()
    }
}

/// Network message types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Get,
    GetX,
    Upgrade,
    /// Shared data reply.
    Put,
    /// Exclusive data reply; `acks` invalidations to wait for.
    PutX,
    /// Ownership for an upgrade; `acks` invalidations to wait for.
    UpgradeAck,
    /// Acknowledges a write-back.
    PutAck,
    /// Write-back of a dirty line to its home.
    WB,
    Inval,
    InvalAck,
    Nack,
    FwdGet,
    FwdGetX,
    /// Sharing write-back (owner to home, with data); `flag`: the owner kept a shared copy.
    SWB,
    /// Ownership transfer (owner to home); carries the data when the requester is the home.
    OwnXfer,
    /// The forwarded request found no copy at the owner; `flag`: it was a GetX.
    FwdMiss,
}

impl Kind {
    /// Replies complete transactions: they go to the NI reply queue, served first.
    ///
    /// PutAck is the exception: it stays in the request queue, behind any forwarded request
    /// the home sent the owner before it processed the write-back. Otherwise the processor
    /// could free its write-back buffer before that forward reaches it and then, with a new
    /// request for the line outstanding, defer the forward for ever (the home NACKs the new
    /// request while it waits for the forward's answer): a livelock the tester found.
    pub fn is_reply(self) -> bool {
        !matches!(
            self,
            Kind::Get
                | Kind::GetX
                | Kind::Upgrade
                | Kind::WB
                | Kind::PutAck
                | Kind::Inval
                | Kind::FwdGet
                | Kind::FwdGetX
        )
    }
}

/// A message between MAGICs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NetMsg {
    pub kind: Kind,
    pub line: u64,
    pub home: u16,
    /// The node whose processor requested (the transaction's requester).
    pub req: u16,
    pub from: u16,
    pub value: u64,
    pub acks: u32,
    pub flag: bool,
    /// Carries a line of data (costs line_bytes/flit_bytes more flits).
    pub data: bool,
}

/// What a MAGIC receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    Pi(ProcMsg),
    Ni(NetMsg),
}

/// Where a handler sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Out {
    /// To this node's processor (through the PI).
    Proc(SysMsg),
    /// To a node's MAGIC (through the NI and the mesh).
    Net(u16, NetMsg),
}

/// One send of a handler; `after_memory`: it carries data read from memory, so it leaves no
/// earlier than the speculative memory read completes.
#[derive(Clone, Copy, Debug)]
pub struct Send {
    pub out: Out,
    pub after_memory: bool,
}

/// Protocol events counted by the memory system.
#[derive(Clone, Debug, Default)]
pub struct FlashStats {
    pub nacks: u64,
    pub converted_upgrades: u64,
    pub invalidations: u64,
    pub dropped_invalidations: u64,
    pub forwards: u64,
    pub stale_writebacks: u64,
    pub fwd_misses: u64,
    pub acks_waited: u64,
    /// Write-backs of dirty lines by processors.
    pub writebacks: u64,
}

/// A forwarded request waiting for this node's processor's intervention reply.
#[derive(Clone, Copy, Debug)]
struct Fwd {
    line: u64,
    req: u16,
    exclusive: bool,
    home: u16,
}

/// An exclusive reply held at the requester until all invalidation acks are in.
#[derive(Clone, Copy, Debug)]
struct Wait {
    line: u64,
    need: Option<u32>,
    got: u32,
    reply: Option<SysMsg>,
}

/// Per-node protocol tables kept in MAGIC memory.
#[derive(Clone, Debug, Default)]
struct NodeTables {
    forwards: Vec<Fwd>,
    /// Invalidations delivered to this processor: line -> requester to acknowledge.
    invals: Vec<(u64, u16)>,
    /// The processor's exclusive requests collecting invalidation acknowledgements, one per
    /// line (several with `[cpu.nonblocking] mshrs` > 1, `cpu::nonblocking`).
    wait: Waits,
}

/// A node's [`Wait`]s, one per line at most, in no order: the first in line, the others
/// (only with several MSHRs, `[cpu.nonblocking] mshrs` > 1) in `more`, which is non-empty
/// only while `first` is taken. With one MSHR a request finds, replaces or removes its
/// wait with one compare and no vector operation (the cost of several MSHRs when off,
/// BENCHMARKS.md, issue 20).
#[derive(Clone, Default)]
struct Waits {
    first: Option<Wait>,
    more: Vec<Wait>,
}

/// A list, as diagnostics showed it when the waits were one vector.
impl std::fmt::Debug for Waits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.first.iter().chain(&self.more))
            .finish()
    }
}

impl Waits {
    /// The wait for `line`, if any.
    #[inline]
    fn get(&mut self, line: u64) -> Option<&mut Wait> {
        match self.first {
            Some(ref mut w) if w.line == line => Some(w),
            _ if self.more.is_empty() => None,
            _ => self.more.iter_mut().find(|w| w.line == line),
        }
    }

    /// Removes and returns the wait for `line`, if any.
    #[inline]
    fn take(&mut self, line: u64) -> Option<Wait> {
        match self.first {
            Some(w) if w.line == line => {
                self.first = self.more.pop();
                Some(w)
            }
            _ if self.more.is_empty() => None,
            _ => self.take_more(line),
        }
    }

    #[cold]
    #[inline(never)]
    fn take_more(&mut self, line: u64) -> Option<Wait> {
        let i = self.more.iter().position(|w| w.line == line)?;
        Some(self.more.swap_remove(i))
    }

    /// Adds `w` (no wait for its line is held).
    #[inline]
    fn push(&mut self, w: Wait) {
        match self.first {
            None => self.first = Some(w),
            Some(_) => self.push_more(w),
        }
    }

    #[cold]
    #[inline(never)]
    fn push_more(&mut self, w: Wait) {
        self.more.push(w);
    }
}

/// The result of one handler run.
pub struct Run {
    pub handler: Handler,
    /// Sharer-list entries walked (per-sharer costs).
    pub walked: u32,
    pub line: u64,
}

/// A line's data on its way from its home to a requester (`Protocol::data_reply`).
#[derive(Clone, Copy, Debug)]
struct DataReply {
    line: u64,
    exclusive: bool,
    value: u64,
    resp: RespState,
}

/// The protocol state of the whole machine (directory + per-node tables).
pub struct Protocol {
    pub dir: Directory,
    nodes: Vec<NodeTables>,
    pub stats: FlashStats,
}

fn net(kind: Kind, line: u64, home: u16, req: u16, from: u16) -> NetMsg {
    NetMsg {
        kind,
        line,
        home,
        req,
        from,
        value: 0,
        acks: 0,
        flag: false,
        data: false,
    }
}

impl Protocol {
    pub fn new(nodes: usize, store_entries: u32) -> Protocol {
        Protocol {
            dir: Directory::new(nodes, store_entries),
            nodes: vec![NodeTables::default(); nodes],
            stats: FlashStats::default(),
        }
    }

    /// Per-node outstanding state, for diagnostics.
    pub fn describe_node(&self, node: usize) -> String {
        let n = &self.nodes[node];
        format!(
            "forwards {:?} invals {:?} wait {:?}",
            n.forwards, n.invals, n.wait
        )
    }

    /// Runs the handler for `input` at node `me`; `home` is the home of its line. Sends are
    /// appended to `out`.
    pub fn run(
        &mut self,
        me: u16,
        home: u16,
        input: Input,
        fault: &mut Fault,
        out: &mut Vec<Send>,
    ) -> Run {
        let local = me == home;
        match input {
            Input::Pi(m) => self.on_pi(me, home, local, m, fault, out),
            Input::Ni(m) => self.on_ni(me, local, m, fault, out),
        }
    }

    fn on_pi(
        &mut self,
        me: u16,
        home: u16,
        local: bool,
        m: ProcMsg,
        fault: &mut Fault,
        out: &mut Vec<Send>,
    ) -> Run {
        use Handler::*;
        let line = m.line().unwrap_or(0);
        let send = |out: &mut Vec<Send>, o: Out| {
            out.push(Send {
                out: o,
                after_memory: false,
            })
        };
        let (handler, walked) = match m {
            ProcMsg::Read { .. } | ProcMsg::ReadEx { .. } | ProcMsg::Upgrade { .. } => {
                let kind = match m {
                    ProcMsg::Read { .. } => Kind::Get,
                    ProcMsg::ReadEx { .. } => Kind::GetX,
                    _ => Kind::Upgrade,
                };
                if kind != Kind::Get {
                    let w = &mut self.nodes[me as usize].wait;
                    w.take(line);
                    w.push(Wait {
                        line,
                        need: None,
                        got: 0,
                        reply: None,
                    });
                }
                if local {
                    let w = self.home_request(me, me, line, kind, fault, out);
                    let h = match kind {
                        Kind::Get => PILocalGet,
                        Kind::GetX => PILocalGetX,
                        _ => PILocalUpgrade,
                    };
                    (h, w)
                } else {
                    send(out, Out::Net(home, net(kind, line, home, me, me)));
                    let h = match kind {
                        Kind::Get => PIRemoteGet,
                        Kind::GetX => PIRemoteGetX,
                        _ => PIRemoteUpgrade,
                    };
                    (h, 0)
                }
            }
            ProcMsg::Writeback { value, .. } => {
                self.stats.writebacks += 1;
                if local {
                    let mut h = self.dir.header(line);
                    if h.flag(DIRTY) && h.flag(LOCAL) {
                        self.dir.memory.insert(line, value);
                        set_flag(&mut h, DIRTY, false);
                        set_flag(&mut h, LOCAL, false);
                        self.dir.set_header(me, line, h);
                    } else {
                        self.stats.stale_writebacks += 1;
                    }
                    send(out, Out::Proc(SysMsg::WbAck { line }));
                    (PILocalPut, 0)
                } else {
                    let mut n = net(Kind::WB, line, home, me, me);
                    n.value = value;
                    n.data = true;
                    send(out, Out::Net(home, n));
                    (PIRemotePut, 0)
                }
            }
            ProcMsg::InvalAck { .. } => {
                let t = &mut self.nodes[me as usize];
                let i = t
                    .invals
                    .iter()
                    .position(|&(l, _)| l == line)
                    .expect("processor acknowledged an invalidation MAGIC did not send");
                let (_, req) = t.invals.swap_remove(i);
                send(out, Out::Net(req, net(Kind::InvalAck, line, home, req, me)));
                (PIInvalAck, 0)
            }
            ProcMsg::InterventionReply { value, from_wb, .. } => {
                let t = &mut self.nodes[me as usize];
                let i = t
                    .forwards
                    .iter()
                    .position(|f| f.line == line)
                    .expect("intervention reply without a forwarded request");
                let f = t.forwards.swap_remove(i);
                if f.home == me {
                    let w = self.local_owner_reply(me, f, value, from_wb, out);
                    (PILocalInterventionReply, w)
                } else {
                    self.remote_owner_reply(me, f, value, from_wb, out);
                    (PIRemoteInterventionReply, 0)
                }
            }
            ProcMsg::Uncached { .. } => {
                send(out, Out::Proc(SysMsg::UncachedReply { value: 0 }));
                (PIUncached, 0)
            }
        };
        Run {
            handler,
            walked,
            line,
        }
    }

    fn on_ni(
        &mut self,
        me: u16,
        local: bool,
        m: NetMsg,
        fault: &mut Fault,
        out: &mut Vec<Send>,
    ) -> Run {
        use Handler::*;
        let line = m.line;
        let proc_ = |out: &mut Vec<Send>, s: SysMsg| {
            out.push(Send {
                out: Out::Proc(s),
                after_memory: false,
            })
        };
        let resp = RespState {
            remote: !local,
            global: true,
            valid: true,
            nc_hit: false,
        };
        let (handler, walked) = match m.kind {
            Kind::Get | Kind::GetX | Kind::Upgrade => {
                debug_assert!(local, "request at a node that is not the home");
                let w = self.home_request(me, m.req, line, m.kind, fault, out);
                let h = match m.kind {
                    Kind::Get => NILocalGet,
                    Kind::GetX => NILocalGetX,
                    _ => NILocalUpgrade,
                };
                (h, w)
            }
            Kind::WB => {
                let mut h = self.dir.header(line);
                if h.flag(DIRTY) && !h.flag(LOCAL) && h.flag(HEAD_PTR) && h.ptr() == m.from {
                    self.dir.memory.insert(line, m.value);
                    set_flag(&mut h, DIRTY, false);
                    set_flag(&mut h, HEAD_PTR, false);
                    set_ptr(&mut h, 0);
                    self.dir.set_header(me, line, h);
                } else {
                    self.stats.stale_writebacks += 1;
                }
                out.push(Send {
                    out: Out::Net(m.from, net(Kind::PutAck, line, me, m.from, me)),
                    after_memory: false,
                });
                (NILocalPut, 0)
            }
            Kind::SWB => {
                self.dir.memory.insert(line, m.value);
                let mut h = self.dir.header(line);
                self.dir.clear_sharers(me as usize, &mut h);
                set_flag(&mut h, PENDING, false);
                set_flag(&mut h, DIRTY, false);
                set_flag(&mut h, LOCAL, false);
                let mut w = 0;
                if m.flag {
                    w += self.dir.add_sharer(me as usize, &mut h, m.from);
                }
                if m.req == me {
                    set_flag(&mut h, LOCAL, true);
                    proc_(
                        out,
                        SysMsg::Data {
                            line,
                            exclusive: false,
                            value: m.value,
                            resp: RespState {
                                remote: false,
                                valid: false,
                                ..resp
                            },
                        },
                    );
                } else {
                    w += self.dir.add_sharer(me as usize, &mut h, m.req);
                }
                self.dir.set_header(me, line, h);
                (NILocalSWB, w)
            }
            Kind::OwnXfer => {
                let mut h = self.dir.header(line);
                self.dir.clear_sharers(me as usize, &mut h);
                set_flag(&mut h, PENDING, false);
                set_flag(&mut h, DIRTY, true);
                if m.req == me {
                    set_flag(&mut h, LOCAL, true);
                    self.reply_exclusive(
                        me,
                        line,
                        0,
                        SysMsg::Data {
                            line,
                            exclusive: true,
                            value: m.value,
                            resp: RespState {
                                remote: false,
                                valid: false,
                                ..resp
                            },
                        },
                        false,
                        out,
                    );
                } else {
                    set_flag(&mut h, LOCAL, false);
                    set_flag(&mut h, HEAD_PTR, true);
                    set_ptr(&mut h, m.req);
                }
                self.dir.set_header(me, line, h);
                (NILocalOwnXfer, 0)
            }
            Kind::FwdMiss => {
                self.stats.fwd_misses += 1;
                let mut h = self.dir.header(line);
                set_flag(&mut h, PENDING, false);
                self.dir.set_header(me, line, h);
                let w = self.serve_from_memory(me, m.req, line, m.flag, out);
                (NILocalFwdMiss, w)
            }
            Kind::Put => {
                proc_(
                    out,
                    SysMsg::Data {
                        line,
                        exclusive: false,
                        value: m.value,
                        resp,
                    },
                );
                (NIRemotePut, 0)
            }
            Kind::PutX | Kind::UpgradeAck => {
                let reply = if m.kind == Kind::PutX {
                    SysMsg::Data {
                        line,
                        exclusive: true,
                        value: m.value,
                        resp,
                    }
                } else {
                    SysMsg::Grant { line, resp }
                };
                self.reply_exclusive(me, line, m.acks, reply, false, out);
                let h = if m.kind == Kind::PutX {
                    NIRemotePutX
                } else {
                    NIRemoteUpgradeAck
                };
                (h, 0)
            }
            Kind::PutAck => {
                proc_(out, SysMsg::WbAck { line });
                (NIRemotePutAck, 0)
            }
            Kind::Inval => {
                self.nodes[me as usize].invals.push((line, m.req));
                proc_(out, SysMsg::Invalidate { line, ack: true });
                (NIInval, 0)
            }
            Kind::InvalAck => {
                let t = &mut self.nodes[me as usize].wait;
                if t.get(line).is_none() {
                    t.push(Wait {
                        line,
                        need: None,
                        got: 0,
                        reply: None,
                    });
                }
                let w = t.get(line).expect("just pushed");
                w.got += 1;
                if w.need == Some(w.got) {
                    let r = w.reply.expect("reply held with its count");
                    t.take(line);
                    proc_(out, r);
                }
                (NIInvalAck, 0)
            }
            Kind::Nack => {
                proc_(out, SysMsg::Nack { line });
                (NINack, 0)
            }
            Kind::FwdGet | Kind::FwdGetX => {
                let exclusive = m.kind == Kind::FwdGetX;
                self.nodes[me as usize].forwards.push(Fwd {
                    line,
                    req: m.req,
                    exclusive,
                    home: m.home,
                });
                proc_(out, SysMsg::Intervention { line, exclusive });
                let h = if exclusive {
                    NIRemoteGetXFwd
                } else {
                    NIRemoteGetFwd
                };
                (h, 0)
            }
        };
        Run {
            handler,
            walked,
            line,
        }
    }

    /// Gives `reply` (exclusive data or a grant) to this node's processor once `acks`
    /// invalidation acknowledgements have arrived (some may be in already). In line: out of
    /// line (as it went when the waits became a vector) it cost radix on `flash` 0.1 %.
    #[inline(always)]
    fn reply_exclusive(
        &mut self,
        me: u16,
        line: u64,
        acks: u32,
        reply: SysMsg,
        after_memory: bool,
        out: &mut Vec<Send>,
    ) {
        let t = &mut self.nodes[me as usize];
        let got = t.wait.take(line).map_or(0, |w| w.got);
        if got >= acks {
            debug_assert_eq!(got, acks, "more acks than invalidations");
            out.push(Send {
                out: Out::Proc(reply),
                after_memory,
            });
        } else {
            self.stats.acks_waited += 1;
            t.wait.push(Wait {
                line,
                need: Some(acks),
                got,
                reply: Some(reply),
            });
        }
    }

    /// Sends the data `d` to requester `r` from the home `me`: to the local processor or over
    /// the net (with the count of invalidation acknowledgements `acks` it must collect).
    fn data_reply(&mut self, me: u16, r: u16, d: DataReply, acks: u32, out: &mut Vec<Send>) {
        let DataReply {
            line,
            exclusive,
            value,
            resp,
        } = d;
        if r == me {
            let d = SysMsg::Data {
                line,
                exclusive,
                value,
                resp,
            };
            if exclusive {
                self.reply_exclusive(me, line, acks, d, true, out);
            } else {
                out.push(Send {
                    out: Out::Proc(d),
                    after_memory: true,
                });
            }
        } else {
            let mut n = net(
                if exclusive { Kind::PutX } else { Kind::Put },
                line,
                me,
                r,
                me,
            );
            n.value = value;
            n.acks = acks;
            n.data = true;
            out.push(Send {
                out: Out::Net(r, n),
                after_memory: true,
            });
        }
    }

    /// The home `me` serves a Get/GetX/Upgrade from requester `r`. Returns sharers walked.
    fn home_request(
        &mut self,
        me: u16,
        r: u16,
        line: u64,
        kind: Kind,
        fault: &mut Fault,
        out: &mut Vec<Send>,
    ) -> u32 {
        let mut h = self.dir.header(line);
        let remote_req = r != me;
        if h.flag(PENDING) {
            self.stats.nacks += 1;
            let o = if remote_req {
                Out::Net(r, net(Kind::Nack, line, me, r, me))
            } else {
                Out::Proc(SysMsg::Nack { line })
            };
            out.push(Send {
                out: o,
                after_memory: false,
            });
            return 0;
        }
        let exclusive = kind != Kind::Get;
        if h.flag(DIRTY) {
            let owner = if h.flag(LOCAL) { me } else { h.ptr() };
            if owner != r {
                if kind == Kind::Upgrade {
                    self.stats.converted_upgrades += 1;
                }
                self.stats.forwards += 1;
                set_flag(&mut h, PENDING, true);
                self.dir.set_header(me, line, h);
                if owner == me {
                    self.nodes[me as usize].forwards.push(Fwd {
                        line,
                        req: r,
                        exclusive,
                        home: me,
                    });
                    out.push(Send {
                        out: Out::Proc(SysMsg::Intervention { line, exclusive }),
                        after_memory: false,
                    });
                } else {
                    let k = if exclusive {
                        Kind::FwdGetX
                    } else {
                        Kind::FwdGet
                    };
                    out.push(Send {
                        out: Out::Net(owner, net(k, line, me, r, me)),
                        after_memory: false,
                    });
                }
                return 0;
            }
            // The owner asks again: its write-back is ahead of this request in the same
            // queue, so this cannot happen; serve from memory defensively.
            debug_assert!(false, "request from the recorded owner of line {line:#x}");
            set_flag(&mut h, DIRTY, false);
            set_flag(&mut h, LOCAL, false);
            self.dir.clear_sharers(me as usize, &mut h);
        }
        let sharers = self.dir.sharers(me as usize, h);
        let walked = sharers.len() as u32;
        let value = self.dir.memory.get(&line).copied().unwrap_or(0);
        let has_copy = if remote_req {
            sharers.contains(&r)
        } else {
            h.flag(LOCAL)
        };
        let global = remote_req || sharers.iter().any(|&s| s != r);
        let resp = RespState {
            nc_hit: false,
            global,
            valid: true,
            remote: remote_req,
        };
        if !exclusive {
            if remote_req {
                let mut h2 = h;
                let w = self.dir.add_sharer(me as usize, &mut h2, r);
                self.dir.set_header(me, line, h2);
                self.data_reply(
                    me,
                    r,
                    DataReply {
                        line,
                        exclusive: false,
                        value,
                        resp,
                    },
                    0,
                    out,
                );
                return w;
            }
            set_flag(&mut h, LOCAL, true);
            self.dir.set_header(me, line, h);
            self.data_reply(
                me,
                r,
                DataReply {
                    line,
                    exclusive: false,
                    value,
                    resp,
                },
                0,
                out,
            );
            return walked;
        }
        let upgrade = kind == Kind::Upgrade && has_copy;
        if kind == Kind::Upgrade && !has_copy {
            self.stats.converted_upgrades += 1;
        }
        // Invalidate every other copy; acks go to the requester.
        let mut targets: Vec<u16> = sharers.into_iter().filter(|&s| s != r).collect();
        if h.flag(LOCAL) && remote_req {
            targets.push(me);
        }
        let mut sent = 0;
        for s in targets {
            if fault.drop_invalidation() {
                self.stats.dropped_invalidations += 1;
                continue;
            }
            sent += 1;
            self.stats.invalidations += 1;
            if s == me {
                self.nodes[me as usize].invals.push((line, r));
                out.push(Send {
                    out: Out::Proc(SysMsg::Invalidate { line, ack: true }),
                    after_memory: false,
                });
            } else {
                out.push(Send {
                    out: Out::Net(s, net(Kind::Inval, line, me, r, me)),
                    after_memory: false,
                });
            }
        }
        self.dir.clear_sharers(me as usize, &mut h);
        set_flag(&mut h, DIRTY, true);
        if remote_req {
            set_flag(&mut h, LOCAL, false);
            set_flag(&mut h, HEAD_PTR, true);
            set_ptr(&mut h, r);
        } else {
            set_flag(&mut h, LOCAL, true);
        }
        self.dir.set_header(me, line, h);
        if upgrade {
            if remote_req {
                let mut n = net(Kind::UpgradeAck, line, me, r, me);
                n.acks = sent;
                out.push(Send {
                    out: Out::Net(r, n),
                    after_memory: false,
                });
            } else {
                self.reply_exclusive(me, line, sent, SysMsg::Grant { line, resp }, false, out);
            }
        } else {
            self.data_reply(
                me,
                r,
                DataReply {
                    line,
                    exclusive: true,
                    value,
                    resp,
                },
                sent,
                out,
            );
        }
        walked
    }

    /// The home serves `r` from memory after a forwarded request found no copy (the owner's
    /// write-back reached memory first). No other copies exist.
    fn serve_from_memory(
        &mut self,
        me: u16,
        r: u16,
        line: u64,
        exclusive: bool,
        out: &mut Vec<Send>,
    ) -> u32 {
        let mut h = self.dir.header(line);
        debug_assert!(!h.flag(DIRTY), "FwdMiss on a dirty line");
        self.dir.clear_sharers(me as usize, &mut h);
        set_flag(&mut h, LOCAL, false);
        set_flag(&mut h, DIRTY, exclusive);
        if r == me {
            set_flag(&mut h, LOCAL, true);
        } else {
            let _ = self.dir.add_sharer(me as usize, &mut h, r);
        }
        self.dir.set_header(me, line, h);
        let value = self.dir.memory.get(&line).copied().unwrap_or(0);
        let resp = RespState {
            nc_hit: false,
            global: r != me,
            valid: true,
            remote: r != me,
        };
        self.data_reply(
            me,
            r,
            DataReply {
                line,
                exclusive,
                value,
                resp,
            },
            0,
            out,
        );
        0
    }

    /// The home's own processor (the dirty owner) answered a forwarded request from `f.req`.
    fn local_owner_reply(
        &mut self,
        me: u16,
        f: Fwd,
        value: Option<u64>,
        from_wb: bool,
        out: &mut Vec<Send>,
    ) -> u32 {
        let line = f.line;
        let mut h = self.dir.header(line);
        let v = match value {
            Some(v) => {
                self.dir.memory.insert(line, v);
                v
            }
            None => self.dir.memory.get(&line).copied().unwrap_or(0),
        };
        let kept = value.is_some() && !from_wb && !f.exclusive;
        self.dir.clear_sharers(me as usize, &mut h);
        set_flag(&mut h, PENDING, false);
        set_flag(&mut h, LOCAL, kept);
        set_flag(&mut h, DIRTY, f.exclusive);
        let w = self.dir.add_sharer(me as usize, &mut h, f.req);
        self.dir.set_header(me, line, h);
        let mut n = net(
            if f.exclusive { Kind::PutX } else { Kind::Put },
            line,
            me,
            f.req,
            me,
        );
        n.value = v;
        n.data = true;
        out.push(Send {
            out: Out::Net(f.req, n),
            after_memory: false,
        });
        w
    }

    /// A remote owner's processor answered a forwarded request.
    fn remote_owner_reply(
        &mut self,
        me: u16,
        f: Fwd,
        value: Option<u64>,
        from_wb: bool,
        out: &mut Vec<Send>,
    ) {
        let line = f.line;
        let mut push = |o: Out| {
            out.push(Send {
                out: o,
                after_memory: false,
            })
        };
        let Some(v) = value else {
            let mut n = net(Kind::FwdMiss, line, f.home, f.req, me);
            n.flag = f.exclusive;
            push(Out::Net(f.home, n));
            return;
        };
        let to_home_kind = if f.exclusive {
            Kind::OwnXfer
        } else {
            Kind::SWB
        };
        let mut to_home = net(to_home_kind, line, f.home, f.req, me);
        to_home.value = v;
        to_home.flag = !f.exclusive && !from_wb;
        // A sharing write-back always updates memory; an ownership transfer carries the data
        // only when the home is the requester.
        to_home.data = !f.exclusive || f.req == f.home;
        if f.req != f.home {
            let mut d = net(
                if f.exclusive { Kind::PutX } else { Kind::Put },
                line,
                f.home,
                f.req,
                me,
            );
            d.value = v;
            d.data = true;
            push(Out::Net(f.req, d));
        }
        push(Out::Net(f.home, to_home));
    }
}

/// The directory header of `line` in words (for `System::describe`).
pub fn describe(p: &Protocol, line: u64) -> String {
    let Some(home) = p.dir.home(line) else {
        return format!("line {line:#x}: no directory header yet (never requested)");
    };
    let h = p.dir.header(line);
    format!(
        "home {home}: header {:#018x} [{}] remote sharers {:?} memory {:#x}",
        h,
        dir::describe_header(h),
        p.dir.sharers(home, h),
        p.dir.memory.get(&line).copied().unwrap_or(0)
    )
}

#[cfg(test)]
mod waits_tests {
    use super::{Wait, Waits};

    fn w(line: u64, got: u32) -> Wait {
        Wait {
            line,
            need: None,
            got,
            reply: None,
        }
    }

    /// One wait (one MSHR) stays in `first`; several (several MSHRs) are found and removed by
    /// line whichever slot holds them, and `more` empties into `first`.
    #[test]
    fn waits_are_matched_by_line() {
        let mut ws = Waits::default();
        assert!(ws.get(7).is_none() && ws.take(7).is_none());
        ws.push(w(7, 1));
        assert!(ws.more.is_empty(), "one wait is kept in line");
        ws.get(7).unwrap().got += 1;
        assert_eq!(ws.take(7).map(|x| x.got), Some(2));
        assert!(ws.first.is_none() && ws.take(7).is_none());

        for (l, g) in [(1, 10), (2, 20), (3, 30)] {
            ws.push(w(l, g));
        }
        assert_eq!(format!("{ws:?}").matches("Wait").count(), 3);
        assert_eq!(ws.get(2).map(|x| x.got), Some(20));
        assert!(ws.get(4).is_none() && ws.take(4).is_none());
        assert_eq!(ws.take(1).map(|x| x.got), Some(10));
        assert!(ws.first.is_some(), "an older wait moves to the front");
        assert_eq!(ws.take(3).map(|x| x.got), Some(30));
        assert_eq!(ws.take(2).map(|x| x.got), Some(20));
        assert!(ws.first.is_none() && ws.more.is_empty());
    }
}
