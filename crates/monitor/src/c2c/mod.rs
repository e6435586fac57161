//! A cache-line sharing view like `perf c2c` (issue 17 item 5): for the lines with the most
//! coherence misses, which processors read and wrote which words, the misses served from a
//! dirty copy in another processor's cache (perf's HITM), and a verdict, true or false
//! sharing; totals by data structure and procedure.
//!
//! Not a hardware monitor: an exact analysis from the machine's observations, attached as a
//! monitor so that it reports through the same JSON section and typed report (text, CSV,
//! HTML). `pmusim run false-sharing --monitor c2c`.
//!
//! # State, trigger, handler
//! - **State** ([`C2c`]): per line its coherence misses and HITM by read/write, and per
//!   processor that touched it the L1 misses and the words (8-byte) they read and wrote; the
//!   ground truth's miss classification state (per processor and line: held, lost) and the
//!   interventions waiting for their requester's reply.
//! - **Trigger**: `L2Access` (an L1 miss: processor, address, read or write), `TxIssue`,
//!   `TxDone` and `Inbound` (invalidations, interventions).
//! - **Handler**: a read or read-exclusive is a *coherence* miss exactly when the ground
//!   truth says so (`machine::truth`: the processor held the line and last lost it to an
//!   invalidation or exclusive intervention), counted when it completes, so the sums over
//!   lines equal the ground truth's per structure and procedure. A miss is *HITM* when an
//!   intervention found the line in another processor's cache (it supplied the dirty data)
//!   before the requester's reply arrived.
//!
//! Words are those of accesses that missed the L1: hits never leave the processor (the
//! machine reports none), so a word a processor only ever hit on is not listed. The verdict:
//! **true sharing** when a word one processor wrote was accessed by another; **false
//! sharing** when two or more processors touched the line, one wrote, and no written word
//! was touched by another; **read-only** when no miss wrote; **private** for one processor.

pub mod view;

use machine::probe::{kind, Cmd, InboundKind, Observation, Outcome, Probe, Signals};
use std::collections::HashMap;

/// The registry name (also the JSON section's key).
pub const NAME: &str = "c2c";

/// Bytes per word in the offsets.
pub const WORD: u64 = 8;

/// One processor's use of a line.
#[derive(Clone, Debug, Default)]
pub struct User {
    pub proc: u16,
    /// L1 misses that reached the L2 (reads, writes).
    pub misses: [u64; 2],
    /// Words read / written by those misses (bit i: word i of the line).
    pub words: [u64; 2],
    /// Coherence misses (read, read-exclusive) and HITM misses of this processor.
    pub coherence: u64,
    pub hitm: u64,
}

/// One line's record.
#[derive(Clone, Debug, Default)]
pub struct Line {
    /// Coherence misses: [reads, read-exclusives].
    pub coherence: [u64; 2],
    /// Misses served by another cache's dirty copy: [reads, read-exclusives and upgrades].
    pub hitm: [u64; 2],
    pub users: Vec<User>,
}

/// The sharing verdict of a line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    TrueSharing,
    FalseSharing,
    ReadOnly,
    Private,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::TrueSharing => "true sharing",
            Verdict::FalseSharing => "false sharing",
            Verdict::ReadOnly => "read-only",
            Verdict::Private => "private",
        }
    }
}

impl Line {
    fn user(&mut self, proc: u16) -> &mut User {
        let i = match self.users.iter().position(|u| u.proc == proc) {
            Some(i) => i,
            None => {
                self.users.push(User {
                    proc,
                    ..User::default()
                });
                self.users.len() - 1
            }
        };
        &mut self.users[i]
    }

    pub fn coherence_misses(&self) -> u64 {
        self.coherence[0] + self.coherence[1]
    }

    pub fn verdict(&self) -> Verdict {
        if self.users.len() < 2 {
            return Verdict::Private;
        }
        if self
            .users
            .iter()
            .all(|u| u.words[1] == 0 && u.misses[1] == 0)
        {
            return Verdict::ReadOnly;
        }
        for a in &self.users {
            for b in &self.users {
                if a.proc != b.proc && a.words[1] & (b.words[0] | b.words[1]) != 0 {
                    return Verdict::TrueSharing;
                }
            }
        }
        Verdict::FalseSharing
    }
}

/// Miss classes as the ground truth decides them when a read or read-exclusive is issued.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    Other,
    Coherence,
}

/// The probe.
pub struct C2c {
    line_shift: u32,
    /// Per (processor, line): bit 0 held once, bit 1 last lost to another processor.
    seen: HashMap<(u16, u64), u8>,
    /// Per processor, the class of its outstanding read or read-exclusive.
    pending: Vec<Class>,
    /// Lines whose dirty data an intervention took from a cache: (the supplier).
    dirty: HashMap<u64, u16>,
    pub lines: HashMap<u64, Line>,
    /// Per procedure id: [coherence misses, HITM].
    pub procedures: HashMap<u32, [u64; 2]>,
    /// Restricted to one process (`--monitor-process`, as `perf c2c record -p` keeps the
    /// samples of one pid): only accesses and misses whose `Origin::process` is this one are
    /// counted; the classification state (held, lost, dirty) follows every event, so a miss
    /// of the process is classified as without the restriction.
    pub only: Option<u16>,
}

impl C2c {
    pub fn new(line_bytes: u64, procs: usize) -> C2c {
        C2c {
            line_shift: line_bytes.trailing_zeros(),
            seen: HashMap::new(),
            pending: vec![Class::Other; procs],
            dirty: HashMap::new(),
            lines: HashMap::new(),
            procedures: HashMap::new(),
            only: None,
        }
    }

    /// Whether an event of `who` is counted (every event without a restriction).
    fn counts(&self, who: &machine::probe::Origin) -> bool {
        self.only.is_none_or(|p| p == who.process)
    }

    pub fn line_bytes(&self) -> u64 {
        1 << self.line_shift
    }
}

impl Probe for C2c {
    fn observe(&mut self, o: &Observation, _sig: &mut Signals) {
        match *o {
            Observation::L2Access {
                proc,
                addr,
                write,
                ifetch: false,
                who,
                ..
            } => {
                if !self.counts(&who) {
                    return;
                }
                let line = addr >> self.line_shift;
                let word = (addr & ((1 << self.line_shift) - 1)) / WORD;
                let u = self.lines.entry(line).or_default().user(proc);
                u.misses[write as usize] += 1;
                u.words[write as usize] |= 1u64 << (word & 63);
            }
            Observation::TxIssue {
                proc,
                cmd: Cmd::Read | Cmd::ReadEx,
                addr,
                ..
            } => {
                let line = addr >> self.line_shift;
                let s = self.seen.get(&(proc, line)).copied().unwrap_or(0);
                self.pending[proc as usize] = if s == 3 {
                    Class::Coherence
                } else {
                    Class::Other
                };
            }
            Observation::Inbound {
                proc,
                kind,
                addr,
                hit: true,
                ..
            } => {
                let line = addr >> self.line_shift;
                if kind != InboundKind::InterventionShared {
                    *self.seen.entry((proc, line)).or_default() |= 2;
                }
                if kind != InboundKind::Invalidate {
                    self.dirty.insert(line, proc);
                }
            }
            Observation::TxDone {
                proc,
                cmd: cmd @ (Cmd::Read | Cmd::ReadEx | Cmd::Upgrade),
                addr,
                outcome: Outcome::Done,
                procedure,
                who,
                ..
            } => {
                let line = addr >> self.line_shift;
                self.seen.insert((proc, line), 1);
                let coherent =
                    cmd != Cmd::Upgrade && self.pending[proc as usize] == Class::Coherence;
                let hitm = self.dirty.remove(&line).is_some_and(|q| q != proc);
                if (!coherent && !hitm) || !self.counts(&who) {
                    return;
                }
                let w = (cmd != Cmd::Read) as usize;
                let l = self.lines.entry(line).or_default();
                let pr = self.procedures.entry(procedure).or_default();
                if coherent {
                    l.coherence[w] += 1;
                    pr[0] += 1;
                }
                if hitm {
                    l.hitm[w] += 1;
                    pr[1] += 1;
                }
                let u = l.user(proc);
                u.coherence += coherent as u64;
                u.hitm += hitm as u64;
            }
            _ => {}
        }
    }

    fn interest(&self) -> u32 {
        kind::L2_ACCESS | kind::TX_ISSUE | kind::TX_DONE | kind::INBOUND
    }

    fn name(&self) -> &str {
        NAME
    }
}

pub use view::ENTRY;
