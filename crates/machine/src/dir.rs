//! A directory of cache copies: the shared component of the directory protocols (`ideal`'s
//! homes, `cmp`'s L2 slices), as `net/` is of interconnects and `mem/` of memory modules.
//!
//! A [`Dir`] entry per coherence line holds the owner (a dirty exclusive copy), the sharers,
//! the transient (busy) state of the transaction in progress and the line's data token. What
//! the entry decides is here, once: how a request is answered given the entry
//! ([`Dir::decide`]), how invalidation acknowledgements and intervention replies move it
//! ([`Dir::ack`], [`Dir::intervention_done`]), what a write-back or a served read does to it.
//! What the answers cost, where data comes from (memory, an array) and which events a system
//! reports stay with the system that owns the directory.
//!
//! Invariants (checked by the protocol tester on every system that uses it):
//! - an entry has an owner or sharers, never both;
//! - a busy entry answers every new request with a NACK ([`Decision::Nack`]);
//! - an exclusive grant leaves the requester the only copy ([`Dir::make_owner`]).

use crate::env::Env;
use crate::probe::Observation;
use engine::Tick;
use rustc_hash::FxHashMap;

/// The transaction a busy entry waits on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Busy {
    /// Waiting for `acks` invalidation acknowledgements before answering `req`.
    Acks { req: u16, acks: u32, upgrade: bool },
    /// Waiting for the owner's intervention reply.
    Intervention {
        req: u16,
        exclusive: bool,
        owner: u16,
    },
    /// Reading the line from memory for `req` (a read, or a read-exclusive when `exclusive`);
    /// only a system whose directory sits beside a data array that can miss (`cmp`) uses it.
    Fetch { req: u16, exclusive: bool },
}

/// The directory entry of one coherence line. (Named `Dir` for the diagnostics that print
/// it, e.g. a deadlock report's `describe`.)
#[derive(Clone, Debug, Default)]
pub struct Dir {
    pub owner: Option<u16>,
    pub sharers: Vec<u16>,
    pub busy: Option<Busy>,
    /// The line's data token (what a load of it returns).
    pub value: u64,
}

/// How a request (read, read-exclusive, upgrade) of processor `p` is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The line is busy: NACK, the requester retries.
    Nack,
    /// An upgrade from a processor that lost its copy: cancel it (it retries as a
    /// read-exclusive).
    Cancel,
    /// An upgrade of a sharer: invalidate the others, then grant.
    Upgrade,
    /// Another processor owns the line: the entry is now busy on an intervention to it.
    Intervene { owner: u16 },
    /// Served from the line's data (memory or an array): a shared copy, or an exclusive one
    /// once the other sharers are invalidated.
    Serve,
}

impl Dir {
    /// The state code of [`Observation::Directory`]: 0 uncached, 1 shared, 2 exclusive.
    pub fn state(&self) -> u8 {
        match (self.owner, self.sharers.is_empty()) {
            (Some(_), _) => 2,
            (None, false) => 1,
            (None, true) => 0,
        }
    }

    /// Decides a request of `p`; marks the entry busy when it sends an intervention.
    #[inline]
    pub fn decide(&mut self, p: u16, exclusive: bool, upgrade: bool) -> Decision {
        if self.busy.is_some() {
            Decision::Nack
        } else if upgrade {
            if self.sharers.contains(&p) {
                Decision::Upgrade
            } else {
                Decision::Cancel
            }
        } else if let Some(owner) = self.owner.filter(|&o| o != p) {
            self.busy = Some(Busy::Intervention {
                req: p,
                exclusive,
                owner,
            });
            Decision::Intervene { owner }
        } else {
            Decision::Serve
        }
    }

    /// The sharers other than `p`, to invalidate before `p` gets the line exclusive.
    pub fn others(&self, p: u16) -> Vec<u16> {
        self.sharers.iter().copied().filter(|&s| s != p).collect()
    }

    /// Waits for `sent` acknowledgements before granting `req` (an `upgrade` or not).
    pub fn wait_acks(&mut self, req: u16, sent: u32, upgrade: bool) {
        self.busy = Some(Busy::Acks {
            req,
            acks: sent,
            upgrade,
        });
    }

    /// An invalidation acknowledgement: the requester and whether it upgrades, once the last
    /// one is in (the entry is then no longer busy).
    pub fn ack(&mut self) -> Option<(u16, bool)> {
        let Some(Busy::Acks { req, acks, upgrade }) = self.busy else {
            return None;
        };
        if acks > 1 {
            self.busy = Some(Busy::Acks {
                req,
                acks: acks - 1,
                upgrade,
            });
            None
        } else {
            self.busy = None;
            Some((req, upgrade))
        }
    }

    /// `p` becomes the only copy, as owner. Returns whether it still shared the line (an
    /// upgrade then needs no data).
    pub fn make_owner(&mut self, p: u16) -> bool {
        let still_sharer = self.sharers.contains(&p);
        self.sharers.clear();
        self.owner = Some(p);
        still_sharer
    }

    /// A read of `p` served: `p` shares the line, nobody owns it.
    pub fn add_sharer(&mut self, p: u16) {
        if !self.sharers.contains(&p) {
            self.sharers.push(p);
        }
        self.owner = None;
    }

    /// A write-back of `p` reaches the directory. Returns whether it takes the data (`p`
    /// still owned the line; otherwise an intervention crossed it and took the data first).
    pub fn writeback(&mut self, p: u16, value: u64) -> bool {
        if self.owner != Some(p) {
            return false;
        }
        self.value = value;
        self.owner = None;
        self.sharers.clear();
        true
    }

    /// The owner's intervention reply (from `p`, with its dirty data `value` if it still had
    /// it, `from_wb` when the data came from its write-back buffer): the requester and whether
    /// it asked for the line exclusive, if an intervention was pending. The entry is no
    /// longer busy; the old owner keeps a shared copy after a read's intervention.
    pub fn intervention_done(
        &mut self,
        p: u16,
        value: Option<u64>,
        from_wb: bool,
    ) -> Option<(u16, bool)> {
        let Some(Busy::Intervention {
            req,
            exclusive,
            owner,
        }) = self.busy
        else {
            return None;
        };
        debug_assert_eq!(owner, p);
        if let Some(v) = value {
            self.value = v;
        }
        self.busy = None;
        self.owner = None;
        self.sharers.clear();
        if !exclusive && value.is_some() && !from_wb {
            self.sharers.push(owner);
        }
        Some((req, exclusive))
    }
}

/// The entries of a directory, by coherence line. An entry is taken out while a message is
/// decided and put back after ([`Directory::take`], [`Directory::put`]), so the system can
/// borrow itself mutably meanwhile.
#[derive(Default)]
pub struct Directory {
    entries: FxHashMap<u64, Dir>,
}

impl Directory {
    /// The entry of `line` (made empty if new), taken out; with its state code before.
    #[inline]
    pub fn take(&mut self, line: u64) -> (Dir, u8) {
        let d = std::mem::take(self.entries.entry(line).or_default());
        let before = d.state();
        (d, before)
    }

    /// The entry of `line`, which must exist (a transaction in flight), taken out.
    pub fn take_existing(&mut self, line: u64) -> (Dir, u8) {
        let d = std::mem::take(self.entries.get_mut(&line).expect("line in the directory"));
        let before = d.state();
        (d, before)
    }

    /// Puts `d` back as `line`'s entry (taken out before).
    #[inline]
    pub fn put(&mut self, line: u64, d: Dir) {
        *self.entries.get_mut(&line).expect("entry taken above") = d;
    }

    pub fn get(&self, line: u64) -> Option<&Dir> {
        self.entries.get(&line)
    }

    pub fn get_mut(&mut self, line: u64) -> Option<&mut Dir> {
        self.entries.get_mut(&line)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&u64, &Dir)> {
        self.entries.iter()
    }
}

/// Reports a change of `line`'s directory state at `t`, from the code `before` to `d`'s, to
/// the probes (if any listen): the node is asked only then (`node`: the home or the slice;
/// a home lookup may place a page, so it is not made for nothing).
pub fn observe_change<S: Copy>(
    env: &mut Env<S>,
    node: impl FnOnce(&mut Env<S>) -> u16,
    t: Tick,
    line: u64,
    before: u8,
    d: &Dir,
) {
    if d.state() == before || !env.any_probe() {
        return;
    }
    let o = Observation::Directory {
        node: node(env),
        t,
        line_addr: line << env.line_shift,
        old: before,
        new: d.state(),
        who: env.origin(),
    };
    env.observe(o);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_decided_by_the_entry() {
        let mut d = Dir::default();
        assert_eq!(d.decide(1, false, false), Decision::Serve);
        d.add_sharer(1);
        d.add_sharer(2);
        assert_eq!(d.state(), 1);
        assert_eq!(d.decide(3, false, true), Decision::Cancel);
        assert_eq!(d.decide(2, true, true), Decision::Upgrade);
        assert_eq!(d.others(2), vec![1]);
        d.wait_acks(2, 1, true);
        assert_eq!(d.decide(3, false, false), Decision::Nack);
        assert_eq!(d.ack(), Some((2, true)));
        assert!(d.make_owner(2));
        assert_eq!((d.state(), d.sharers.len()), (2, 0));
        assert_eq!(d.decide(3, false, false), Decision::Intervene { owner: 2 });
        assert_eq!(d.decide(4, false, false), Decision::Nack);
        // A read's intervention: the old owner keeps a shared copy, the data passes.
        assert_eq!(d.intervention_done(2, Some(7), false), Some((3, false)));
        assert_eq!((d.value, d.sharers.clone(), d.busy), (7, vec![2], None));
    }

    #[test]
    fn acknowledgements_count_down_and_writebacks_need_the_owner() {
        let mut d = Dir::default();
        d.wait_acks(5, 3, false);
        assert_eq!(d.ack(), None);
        assert_eq!(d.ack(), None);
        assert_eq!(d.ack(), Some((5, false)));
        assert_eq!(d.ack(), None, "not busy any more");
        assert!(!d.make_owner(5));
        assert!(
            !d.writeback(4, 9),
            "not the owner: an intervention crossed it"
        );
        assert!(d.writeback(5, 9));
        assert_eq!((d.value, d.state()), (9, 0));
        // An exclusive intervention whose owner had written the line back: no copy stays.
        d.make_owner(1);
        d.decide(2, true, false);
        assert_eq!(d.intervention_done(1, None, true), Some((2, true)));
        assert!(d.sharers.is_empty() && d.owner.is_none());
    }
}
