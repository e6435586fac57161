//! The `cmp` preset's memory system: a chip multiprocessor whose coherence point is a shared
//! L2 split into address-hashed slices on a crossbar, each slice keeping a directory of the
//! cores' copies of its lines, with memory controllers behind the slices (issue 13 item 5;
//! the shape of issue 14's Blue Gene/Q chip).
//!
//! # Structure
//! - **Crossbars** (`net::crossbar`): a request crossbar from the cores (inputs) to the
//!   slices (outputs) and a response crossbar back. A request or acknowledgement is one flit;
//!   a message carrying a line adds `line_bytes / crossbar_flit_bytes` flits.
//! - **Slices**: `[[caches.shared]]`'s level; line `l` (in the shared level's lines) lives in
//!   slice `hash(l)` (`SliceHash`). Each slice has a pipeline (a FIFO server occupied
//!   `occupancy_cycles` per message, `Resource::Slice`), a data array (`cache::Cache` of
//!   `size_bytes / slices`; state `MODIFIED` = dirty, `SHARED` = clean) and the directory
//!   entries of its coherence lines (owner, sharers, busy state, the line's data token).
//!   A message is decided when it reaches the slice; what it sends leaves when the pipeline
//!   is done (`hit_cycles` after it started).
//! - **Memory controllers** (`mem::MemoryModule`, `Resource::Memory(k)`): line `l` belongs
//!   to controller `(address / interleave_bytes) mod memory_controllers`, `memory_link_cycles`
//!   away from every slice each way. With an enabled `[memctl]` (issue 16) each is a
//!   `mem::controller::Controller` instead: seed 002's interface buffer in front of DRAM
//!   banks, its entries the shared level's lines (`Preset::memory_line_bytes`), the line
//!   a slice fills and writes back.
//!
//! # Protocol
//! The directory protocol of `ideal` (busy states with NACKs, invalidations acknowledged to
//! the slice, interventions to the owner, upgrade cancellation, write-backs crossing
//! interventions), at the slice of each line. The data array is not inclusive of the L1s: a
//! request that needs data (a read, a read-exclusive) while no core owns the line takes it
//! from the array, or on a miss marks the line busy (`Busy::Fetch`) and reads it from its
//! controller; an upgrade of a core that still shares the line needs no data. A dirty line
//! that reaches the slice (a write-back, an intervention's data) is written into the array
//! (allocated without a fetch: the rest of a longer L2 line is clean in memory); a dirty
//! victim of the array is written to its controller. The array's evictions leave the L1s'
//! copies alone: the directory, not the array, tracks them.
//!
//! # Invariants
//! - Deliveries to a core leave its response-crossbar output port in the order they were
//!   decided (the port is a FIFO and each slice sends in time order), and all messages about
//!   one line come from one slice: a core sees each line's messages in the slice's order.
//! - Every request is answered once (`memory_system` invariant 2); a busy line NACKs.
//! - Data tokens live in the directory entries: the array and memory hold timing, not values,
//!   so a line's value is the same wherever its data is.
//! - With memory controllers, memory holds values too, as a check of the buffer: a dirty
//!   victim writes each of its coherence lines' directory values (at the line's offset in the
//!   shared-level line), and every memory read compares what memory returns (write buffer
//!   merged over DRAM) with the directory's value of each coherence line no core owns. A read
//!   happens only when the array does not hold the line, so memory must be current for those
//!   lines: a lost or stale buffered write is a mismatch, reported by `memory_mismatches`
//!   (the protocol tester's violation), with the end-of-run comparison of DRAM.

pub mod config;
pub mod l1p;
pub mod prefetch;

use crate::addr::Addr;
use crate::cache::{Cache, INVALID, MODIFIED, SHARED};
use crate::config::{Preset, SharedLevelCfg, SliceHash};
use crate::dir::{self, Busy, Decision, Dir, Directory};
use crate::env::Env;
use crate::mem::buffer::config::MAX_BLOCK_BYTES;
use crate::mem::controller::Controller;
use crate::mem::MemoryModule;
use crate::memory_system::MemorySystem;
use crate::msg::{ProcMsg, SysMsg};
use crate::net::bus::Fifo;
use crate::net::crossbar::{Crossbar, CrossbarTiming};
use crate::probe::{L1pEvent, L2Event, Resource, RespState};
use crate::truth::{SliceAccess, SliceEvent};
pub use config::CmpCfg;
use engine::{Clocks, Tick};
use prefetch::{Prefetcher, Slot};
use rustc_hash::{FxHashMap, FxHashSet};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug)]
pub enum Ev {
    /// A core's message reaches the slice of its line (after the request crossbar).
    AtSlice { p: u16, m: ProcMsg },
    /// A slice's memory read returns: coherence line `line` for a demand miss, or shared-level
    /// line `line` for a prefetch.
    MemDone { line: u64, prefetch: bool },
    /// A write-through store of core `p` to coherence line `line` leaves its store queue
    /// for the request crossbar.
    StoreSend { p: u16, line: u64 },
    /// ... and reaches its slice.
    Store { p: u16, line: u64 },
    /// Core `p`'s L1P asks the slice of shared-level line `l2` for it.
    L1pFetch { p: u16, l2: u64 },
}

/// Where an array allocation's data comes from (`CmpSys::install`).
#[derive(Clone, Copy, Debug)]
struct Alloc {
    /// A whole line from memory (else a core's data, written without a fetch).
    fill: bool,
    /// A core's request allocated it (`L2Event::ReqMissAndEvict` on an eviction).
    request: bool,
}

impl Alloc {
    const DEMAND: Alloc = Alloc {
        fill: true,
        request: true,
    };
    const PREFETCH: Alloc = Alloc {
        fill: true,
        request: false,
    };
    const WRITE: Alloc = Alloc {
        fill: false,
        request: true,
    };
}

/// One slice of the shared level.
struct Slice {
    pipe: Fifo,
    array: Cache,
    prefetcher: Slot,
}

/// The request a slice is serving: when its answers leave, the requester, the line.
#[derive(Clone, Copy, Debug)]
struct Served {
    t: Tick,
    p: u16,
    line: u64,
}

pub struct CmpSys {
    cfg: CmpCfg,
    cpu_period: Tick,
    /// Coherence line to shared-level line: `line >> sub_shift`.
    sub_shift: u32,
    /// log2 of the shared level's line bytes.
    l2_shift: u32,
    slice_bits: u32,
    hash: SliceHash,
    slices: Vec<Slice>,
    occupancy: Tick,
    hit: Tick,
    link: Tick,
    /// Flits of a message carrying a line.
    data_flits: u32,
    req: Crossbar,
    resp: Crossbar,
    mcs: Vec<MemoryModule>,
    /// The memory controllers with their buffers, when the preset enables `[memctl]` (then
    /// `mcs` is not used).
    ctl: Option<Vec<Controller>>,
    /// log2 of the coherence line's bytes.
    coh_shift: u32,
    /// Memory reads whose value differed from the directory's (line, memory, directory): a
    /// buffer that lost a write (the first few).
    mismatches: Vec<(u64, u64, u64)>,
    dirs: Directory,
    /// Shared-level lines a prefetch is reading.
    prefetching: FxHashSet<u64>,
    /// Demand misses (coherence lines) waiting for a prefetch in flight, by shared-level line.
    joined: FxHashMap<u64, Vec<u64>>,
    /// Per core, its L1P (`caches.l1d.prefetch = "stream"`), if it has one.
    l1p: Vec<Option<l1p::Stream>>,
    /// Requests (core, coherence line) a slice rejected from a core with an L1P: the
    /// retry is the same demand, which the L1P saw already (it retries inside, as the chip's
    /// L1P does), so it is not counted or used for stream detection again.
    l1p_retry: FxHashSet<(u16, u64)>,
    /// Per core, when each store in its store queue leaves it (the queue drains one store
    /// per `store_flits` crossbar flit times; see `write_through`).
    store_q: Vec<VecDeque<Tick>>,
    /// Ticks a store occupies a crossbar port.
    store_busy: Tick,
    /// Shared-level lines allocated without a fetch (by a write-back, an intervention's data
    /// or a write-through store) and not fetched since: a dirty one is written to memory as a
    /// partial line (`L2Event::StorePartialLine`).
    partial: FxHashSet<u64>,
    /// Coherence lines whose read-only copies a write-through store invalidated without
    /// acknowledgements (posted), with the time the last of those invalidations reaches its
    /// core. The slice took those cores off the line's sharers when it sent them, so a grant of
    /// the line to a new owner must not reach its core before them: an exclusive copy would
    /// then exist beside a read-only one (the protocol tester's single-writer violation on
    /// `bgq`). `grant` holds such a reply back to that time. Entries in the past are dropped
    /// when the map has doubled since the last sweep (`posted_sweep`).
    posted: FxHashMap<u64, Tick>,
    /// The map's size after its last sweep of entries in the past.
    posted_sweep: usize,
    nacks: u64,
    memory_reads: u64,
    memory_writes: u64,
    prefetches: u64,
    /// Per core, its requests (reads, read-exclusives, upgrades; not NACKed) whose line the
    /// array did not hold: the shared level's misses by the core that caused them, which a
    /// profiler reads around each reference (`MemorySystem::shared_misses`).
    shared_misses: Vec<u64>,
    /// Round trip of an uncached access (to no device of this system).
    uncached_ticks: Tick,
}

impl CmpSys {
    pub fn new(p: &Preset, clocks: &Clocks) -> Result<CmpSys, crate::error::ConfigError> {
        let cfg = p.cmp.clone().expect("validated");
        let level: &SharedLevelCfg = &p.caches.shared[0];
        let cpu_period = clocks.get("cpu").unwrap().period;
        let sys = clocks.get("system").unwrap().period;
        let n = level.slices as usize;
        let coh_shift = p.line_bytes().trailing_zeros();
        let l2_shift = level.cache.line_bytes.trailing_zeros();
        let timing = CrossbarTiming {
            traversal: cfg.crossbar_traversal_cycles as Tick * sys,
            flit_ticks: sys,
        };
        let ports =
            |count: usize, d: u8| (0..count).map(move |i| Resource::CrossbarPort(i as u16, d));
        let slice_cfg = level.slice();
        let ctl = Controller::for_nodes(
            p.memctl.as_ref(),
            cfg.memory_controllers as usize,
            level.cache.line_bytes,
            clocks,
        )
        .map_err(crate::error::ConfigError)?;
        Ok(CmpSys {
            cpu_period,
            sub_shift: l2_shift - coh_shift,
            l2_shift,
            slice_bits: n.trailing_zeros(),
            hash: level.hash,
            slices: (0..n)
                .map(|_| Slice {
                    pipe: Fifo::default(),
                    array: Cache::new(&slice_cfg),
                    prefetcher: Slot::new(level.cache.prefetch),
                })
                .collect(),
            occupancy: level.occupancy_cycles as Tick * cpu_period,
            hit: level.cache.hit_cycles as Tick * cpu_period,
            link: cfg.memory_link_cycles as Tick * sys,
            data_flits: 1 + (p.line_bytes() / cfg.crossbar_flit_bytes as u64).max(1) as u32,
            req: Crossbar::new(ports(p.procs, 0).collect(), ports(n, 1).collect(), timing),
            resp: Crossbar::new(ports(n, 2).collect(), ports(p.procs, 3).collect(), timing),
            mcs: (0..cfg.memory_controllers)
                .map(|k| MemoryModule::new(k as u16, cfg.memory_cycles as Tick * sys))
                .collect(),
            ctl,
            coh_shift,
            mismatches: Vec::new(),
            dirs: Directory::default(),
            prefetching: FxHashSet::default(),
            joined: FxHashMap::default(),
            l1p: (0..p.procs)
                .map(|_| {
                    (p.caches.l1d.prefetch == crate::config::PrefetchKind::Stream)
                        .then(|| l1p::Stream::new(cfg.l1p_depth, cfg.l1p_lines, cfg.l1p_streams))
                })
                .collect(),
            l1p_retry: FxHashSet::default(),
            store_q: vec![VecDeque::new(); p.procs],
            store_busy: cfg.store_flits as Tick * sys,
            partial: FxHashSet::default(),
            posted: FxHashMap::default(),
            posted_sweep: 0,
            nacks: 0,
            memory_reads: 0,
            memory_writes: 0,
            prefetches: 0,
            shared_misses: vec![0; p.procs],
            uncached_ticks: 2 * (timing.traversal + timing.flit_ticks),
            cfg,
        })
    }

    /// The slice of shared-level line `l2`.
    fn slice_of_l2(&self, l2: u64) -> usize {
        let mask = (1u64 << self.slice_bits) - 1;
        match self.hash {
            SliceHash::LowBits => (l2 & mask) as usize,
            SliceHash::Xor => {
                if self.slice_bits == 0 {
                    return 0;
                }
                let (mut x, mut h) = (l2, 0);
                while x != 0 {
                    h ^= x & mask;
                    x >>= self.slice_bits;
                }
                h as usize
            }
        }
    }

    /// The slice of coherence line `line`.
    fn slice_of(&self, line: u64) -> usize {
        self.slice_of_l2(line >> self.sub_shift)
    }

    /// The key of shared-level line `l2` in its slice's array: unique within the slice,
    /// since the slice and the bits above the slice's determine the line under both hashes.
    fn key(&self, l2: u64) -> u64 {
        l2 >> self.slice_bits
    }

    fn mc_of(&self, l2: u64) -> usize {
        (((l2 << self.l2_shift) / self.cfg.interleave_bytes) % self.mcs.len() as u64) as usize
    }

    /// Sends `m` from slice `s` to core `p`, leaving the slice at `t`; returns when it takes
    /// effect at the core.
    fn reply<S: Copy + From<Ev>>(
        &mut self,
        env: &mut Env<S>,
        t: Tick,
        s: usize,
        p: u16,
        m: SysMsg,
    ) -> Tick {
        self.reply_not_before(env, t, s, p, m, 0)
    }

    /// `reply`, taking effect no earlier than `not_before` (a grant waiting for posted
    /// invalidations, `posted`).
    fn reply_not_before<S: Copy + From<Ev>>(
        &mut self,
        env: &mut Env<S>,
        t: Tick,
        s: usize,
        p: u16,
        m: SysMsg,
        not_before: Tick,
    ) -> Tick {
        let flits = match m {
            SysMsg::Data { .. } => {
                env.l2_event(s as u16, t, L2Event::DataSent);
                self.data_flits
            }
            SysMsg::Invalidate { line, .. } | SysMsg::PostedInvalidate { line } => {
                env.l2_event(s as u16, t, L2Event::InvalidateSent);
                let l2 = line >> self.sub_shift;
                if let Some(l1p) = self.l1p[p as usize].as_mut() {
                    if l1p.drop_line(l2) {
                        env.l1p_event(p, t, L1pEvent::RemoteInvalidateMatch);
                    }
                }
                1
            }
            SysMsg::Intervention { .. } => {
                env.l2_event(s as u16, t, L2Event::InterventionSent);
                1
            }
            SysMsg::Nack { .. } => {
                env.l2_event(s as u16, t, L2Event::ReqReject);
                1
            }
            SysMsg::Cancel { .. } => {
                env.l2_event(s as u16, t, L2Event::UpgradeCancel);
                1
            }
            _ => 1,
        };
        let at = self.resp.send(env, t, s, p as usize, flits).max(not_before);
        env.deliver(p as usize, at, m);
        at
    }

    fn resp() -> RespState {
        // One chip, one memory: nothing is remote or global.
        RespState::default()
    }

    /// Whether the slice of coherence line `line` holds its shared-level line (stamping it
    /// used).
    fn present(&mut self, line: u64) -> bool {
        let l2 = line >> self.sub_shift;
        let (s, key) = (self.slice_of_l2(l2), self.key(l2));
        self.slices[s].array.hit(key, SHARED)
    }

    /// Writes shared-level line `l2` into its slice's array (dirty when `dirty`), writing a
    /// dirty victim to memory at `t`. `how` says where the data comes from: a memory fill
    /// (the whole line), or a core's data without a fetch (`Alloc::Partial`), and whether a
    /// request's miss allocated it (for `L2Event::ReqMissAndEvict`).
    fn install<S: Copy + From<Ev>>(
        &mut self,
        env: &mut Env<S>,
        t: Tick,
        l2: u64,
        dirty: bool,
        how: Alloc,
    ) {
        let (s, key) = (self.slice_of_l2(l2), self.key(l2));
        let array = &self.slices[s].array;
        let slot = match array.find(key).filter(|&i| array.state(i) != INVALID) {
            Some(i) => {
                if how.fill {
                    self.partial.remove(&l2);
                }
                i
            }
            None => {
                let rng = &mut *env.rng;
                let i = array.victim(key, || rng.next_u64());
                let was = array.state(i);
                if was != INVALID {
                    let victim = self.unkey(s, array.line_at(i).unwrap());
                    let partial = self.partial.remove(&victim);
                    let e = if was == MODIFIED {
                        self.memory_write(env, t, victim);
                        self.memory_writes += 1;
                        env.slice_event(s as u16, SliceEvent::MemoryWrite);
                        if partial {
                            L2Event::StorePartialLine
                        } else {
                            L2Event::StoreLine
                        }
                    } else {
                        L2Event::EvictClean
                    };
                    env.l2_event(s as u16, t, e);
                    env.l2_event(s as u16, t, L2Event::MissAndEvict);
                    if how.request {
                        env.l2_event(s as u16, t, L2Event::ReqMissAndEvict);
                    }
                }
                if !how.fill && self.sub_shift > 0 {
                    self.partial.insert(l2);
                }
                self.slices[s].array.install(i, key, SHARED);
                i
            }
        };
        if dirty {
            self.slices[s].array.set_state(slot, MODIFIED);
        }
    }

    /// The shared-level line whose key in slice `s` is `key` (the inverse of `slice_of_l2`
    /// and `key`).
    fn unkey(&self, s: usize, key: u64) -> u64 {
        match self.hash {
            SliceHash::LowBits => key << self.slice_bits | s as u64,
            // slice = low field ^ (XOR of the key's fields), so low = slice ^ that.
            SliceHash::Xor if self.slice_bits > 0 => {
                let mask = (1u64 << self.slice_bits) - 1;
                let (mut x, mut h) = (key, 0);
                while x != 0 {
                    h ^= x & mask;
                    x >>= self.slice_bits;
                }
                key << self.slice_bits | ((s as u64 ^ h) & mask)
            }
            SliceHash::Xor => key,
        }
    }

    /// Reads shared-level line `l2` from memory, leaving its slice at `t`; returns when the
    /// data is back at the slice. `current`: the line and value of the directory entry the
    /// caller holds taken out (a demand miss), for the check of what memory returns.
    fn memory_read<S: Copy + From<Ev>>(
        &mut self,
        env: &mut Env<S>,
        t: Tick,
        l2: u64,
        current: Option<(u64, u64)>,
    ) -> Tick {
        let mc = self.mc_of(l2);
        let Some(ctl) = self.ctl.as_mut() else {
            return self.mcs[mc].access(env, t + self.link) + self.link;
        };
        let mut data = [0u8; MAX_BLOCK_BYTES as usize];
        let data = &mut data[..1 << self.l2_shift];
        let done = ctl[mc].read_at(env, t + self.link, l2 << self.l2_shift, data);
        for (line, off) in self.coherence_lines(l2) {
            let want = match current {
                Some((c, v)) if c == line => Some(v),
                _ => match self.dirs.get(line) {
                    None => Some(0),
                    Some(d) => d.owner.is_none().then_some(d.value),
                },
            };
            let got = u64::from_le_bytes(data[off..off + 8].try_into().unwrap());
            if want.is_some_and(|w| w != got) && self.mismatches.len() < 16 {
                self.mismatches.push((line, got, want.unwrap()));
            }
        }
        done + self.link
    }

    /// Writes shared-level line `l2`, a dirty victim, to memory, leaving its slice at `t`:
    /// timing only without a controller; with one, the line carries each coherence line's
    /// directory value at its offset (the check of `memory_read`).
    fn memory_write<S: Copy + From<Ev>>(&mut self, env: &mut Env<S>, t: Tick, l2: u64) {
        let mc = self.mc_of(l2);
        if self.ctl.is_none() {
            self.mcs[mc].access(env, t + self.link);
            return;
        }
        let mut data = [0u8; MAX_BLOCK_BYTES as usize];
        for (line, off) in self.coherence_lines(l2) {
            let v = self.dirs.get(line).map_or(0, |d| d.value);
            data[off..off + 8].copy_from_slice(&v.to_le_bytes());
        }
        let a = l2 << self.l2_shift;
        let ctl = self.ctl.as_mut().expect("checked above");
        ctl[mc].write_at(env, t + self.link, a, &data[..1 << self.l2_shift]);
    }

    /// The coherence lines of shared-level line `l2`, each with its byte offset in it.
    fn coherence_lines(&self, l2: u64) -> impl Iterator<Item = (u64, usize)> {
        let (sub, coh) = (self.sub_shift, self.coh_shift);
        (0..1u64 << sub).map(move |k| ((l2 << sub) | k, (k << coh) as usize))
    }

    /// Asks slice `s`'s prefetcher about a demand miss on `l2`, and starts its prefetch.
    fn prefetch<S: Copy + From<Ev>>(&mut self, env: &mut Env<S>, t: Tick, s: usize, l2: u64) {
        let Some(pl) = self.slices[s].prefetcher.on_miss(l2) else {
            return;
        };
        let (ps, key) = (self.slice_of_l2(pl), self.key(pl));
        let array = &self.slices[ps].array;
        if array.find(key).is_some_and(|i| array.state(i) != INVALID)
            || !self.prefetching.insert(pl)
        {
            return;
        }
        self.prefetches += 1;
        env.slice_event(ps as u16, SliceEvent::Prefetch);
        env.l2_event(ps as u16, t, L2Event::Prefetch);
        env.l2_event(ps as u16, t, L2Event::FetchLine);
        let done = self.memory_read(env, t, pl, None);
        env.schedule(
            done,
            Ev::MemDone {
                line: pl,
                prefetch: true,
            },
        );
    }

    /// The UPC_L2 events of a request slice `s` accepted at `t`: retired, a hit or a miss, its
    /// kind `what`, and `missed` (its kind's miss event) when the array did not hold it.
    fn request_events<S: Copy + From<Ev>>(
        &mut self,
        env: &mut Env<S>,
        t: Tick,
        s: usize,
        what: L2Event,
        missed: Option<L2Event>,
    ) {
        let s = s as u16;
        env.l2_event(s, t, L2Event::ReqRetire);
        env.l2_event(s, t, what);
        match missed {
            Some(m) => {
                env.l2_event(s, t, L2Event::Misses);
                env.l2_event(s, t, m);
            }
            None => env.l2_event(s, t, L2Event::Hits),
        }
    }

    /// Invalidates other sharers (collecting acks) then grants `p` exclusive access.
    fn start_exclusive<S: Copy + From<Ev>>(
        &mut self,
        env: &mut Env<S>,
        r: Served,
        d: &mut Dir,
        upgrade: bool,
    ) {
        let Served { t, p, line } = r;
        let s = self.slice_of(line);
        let others = d.others(p);
        let mut sent = 0;
        for q in others {
            if env.fault.drop_invalidation() {
                continue;
            }
            sent += 1;
            self.reply(env, t, s, q, SysMsg::Invalidate { line, ack: true });
        }
        if sent == 0 {
            self.grant(env, r, d, upgrade);
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
    ) {
        let Served { t, p, line } = r;
        let s = self.slice_of(line);
        let still_sharer = d.make_owner(p);
        let resp = Self::resp();
        let m = if upgrade && still_sharer {
            SysMsg::Grant { line, resp }
        } else {
            SysMsg::Data {
                line,
                exclusive: true,
                value: d.value,
                resp,
            }
        };
        // Not before the copies a write-through store invalidated without acknowledgements
        // are gone (`posted`).
        let not_before = if self.posted.is_empty() {
            0
        } else {
            match self.posted.remove(&line) {
                Some(at) if at > t => at,
                _ => 0,
            }
        };
        self.reply_not_before(env, t, s, p, m, not_before);
    }

    /// Serves a read (or read-exclusive) of `p` whose data is at the slice.
    fn serve<S: Copy + From<Ev>>(
        &mut self,
        env: &mut Env<S>,
        r: Served,
        d: &mut Dir,
        exclusive: bool,
    ) {
        if exclusive {
            self.start_exclusive(env, r, d, false);
        } else {
            let Served { t, p, line } = r;
            d.add_sharer(p);
            let s = self.slice_of(line);
            let m = SysMsg::Data {
                line,
                exclusive: false,
                value: d.value,
                resp: Self::resp(),
            };
            self.reply(env, t, s, p, m);
        }
    }

    /// A message of core `p` at its line's slice at `t`.
    fn at_slice<S: Copy + From<Ev>>(&mut self, env: &mut Env<S>, t: Tick, p: u16, m: ProcMsg) {
        let line = m.line().unwrap();
        let s = self.slice_of(line);
        let start = self.slices[s]
            .pipe
            .acquire(env, Resource::Slice(s as u16), t, self.occupancy);
        let out = start + self.hit;
        let (mut d, before) = self.dirs.take(line);
        let r = Served { t: out, p, line };
        match m {
            ProcMsg::Read { .. } | ProcMsg::ReadEx { .. } | ProcMsg::Upgrade { .. } => {
                let exclusive = !matches!(m, ProcMsg::Read { .. });
                let upgrade = matches!(m, ProcMsg::Upgrade { .. });
                let decision = d.decide(p, exclusive, upgrade);
                if decision == Decision::Nack {
                    self.nacks += 1;
                    if !matches!(m, ProcMsg::Upgrade { .. }) && self.l1p[p as usize].is_some() {
                        self.l1p_retry.insert((p, line));
                    }
                    self.reply(env, out, s, p, SysMsg::Nack { line });
                } else {
                    let hit = self.present(line);
                    if !hit {
                        self.shared_misses[p as usize] += 1;
                    }
                    let kind = if exclusive {
                        SliceAccess::Write
                    } else {
                        SliceAccess::Read
                    };
                    env.slice_event(s as u16, SliceEvent::Access { kind, hit });
                    let (what, missed) = match m {
                        ProcMsg::Read { .. } => (L2Event::Read, L2Event::ReadMiss),
                        ProcMsg::ReadEx { .. } => (L2Event::ReadEx, L2Event::WriteMiss),
                        _ => (L2Event::Upgrade, L2Event::WriteMiss),
                    };
                    self.request_events(env, start, s, what, (!hit).then_some(missed));
                    match decision {
                        Decision::Nack => unreachable!("answered above"),
                        Decision::Cancel => {
                            self.reply(env, out, s, p, SysMsg::Cancel { line });
                        }
                        Decision::Upgrade => self.start_exclusive(env, r, &mut d, true),
                        Decision::Intervene { owner } => {
                            let m = SysMsg::Intervention { line, exclusive };
                            self.reply(env, out, s, owner, m);
                        }
                        Decision::Serve if hit => self.serve(env, r, &mut d, exclusive),
                        Decision::Serve => {
                            d.busy = Some(Busy::Fetch { req: p, exclusive });
                            let l2 = line >> self.sub_shift;
                            if self.prefetching.contains(&l2) {
                                // A prefetch is reading the line: the request waits for it.
                                self.joined.entry(l2).or_default().push(line);
                            } else {
                                self.memory_reads += 1;
                                env.slice_event(s as u16, SliceEvent::MemoryRead);
                                env.l2_event(s as u16, start, L2Event::FetchLine);
                                let done = self.memory_read(env, out, l2, Some((line, d.value)));
                                env.schedule(
                                    done,
                                    Ev::MemDone {
                                        line,
                                        prefetch: false,
                                    },
                                );
                                self.prefetch(env, out, s, l2);
                            }
                        }
                    }
                }
            }
            ProcMsg::Writeback { value, .. } => {
                let hit = self.present(line);
                env.slice_event(
                    s as u16,
                    SliceEvent::Access {
                        kind: SliceAccess::Writeback,
                        hit,
                    },
                );
                let missed = (!hit).then_some(L2Event::WritebackMiss);
                self.request_events(env, start, s, L2Event::Writeback, missed);
                if d.writeback(p, value) {
                    self.install(env, out, line >> self.sub_shift, true, Alloc::WRITE);
                }
                self.reply(env, out, s, p, SysMsg::WbAck { line });
            }
            ProcMsg::InvalAck { .. } => {
                env.l2_event(s as u16, start, L2Event::InvalAck);
                if let Some((req, upgrade)) = d.ack() {
                    self.grant(env, Served { p: req, ..r }, &mut d, upgrade);
                }
            }
            ProcMsg::InterventionReply { value, from_wb, .. } => {
                env.l2_event(s as u16, start, L2Event::InterventionReply);
                if let Some((req, exclusive)) = d.intervention_done(p, value, from_wb) {
                    if value.is_some() {
                        self.install(env, out, line >> self.sub_shift, true, Alloc::WRITE);
                    }
                    self.serve(env, Served { p: req, ..r }, &mut d, exclusive);
                }
            }
            ProcMsg::Uncached { .. } => unreachable!(),
        }
        self.finish(env, t, line, before, d);
    }

    /// Memory data for coherence line `line` (fetched for a demand miss, or brought by a
    /// prefetch the miss joined) is in the array at `t`: the waiting request is served when
    /// the fill gets the slice's pipeline.
    fn fetched<S: Copy + From<Ev>>(&mut self, env: &mut Env<S>, t: Tick, line: u64) {
        let s = self.slice_of(line);
        let start = self.slices[s]
            .pipe
            .acquire(env, Resource::Slice(s as u16), t, self.occupancy);
        let (mut d, before) = self.dirs.take_existing(line);
        let Some(Busy::Fetch { req, exclusive }) = d.busy else {
            unreachable!("memory data for line {line:#x} not fetched: {d:?}")
        };
        d.busy = None;
        self.serve(
            env,
            Served {
                t: start,
                p: req,
                line,
            },
            &mut d,
            exclusive,
        );
        self.finish(env, t, line, before, d);
    }

    /// Core `p`'s demand miss on coherence line `line` passes its L1P at `t` (`read`: a read,
    /// else a read-exclusive): its L1P events, and the prefetches it starts.
    fn l1p_demand<S: Copy + From<Ev>>(
        &mut self,
        env: &mut Env<S>,
        t: Tick,
        p: usize,
        line: u64,
        read: bool,
    ) {
        let Some(l1p) = self.l1p[p].as_mut() else {
            return;
        };
        let d = l1p.demand(line >> self.sub_shift, t);
        let core = p as u16;
        if read {
            env.l1p_event(core, t, L1pEvent::Load);
        }
        env.l1p_event(core, t, d.outcome);
        if d.established {
            env.l1p_event(core, t, L1pEvent::StreamEstablished);
        }
        for _ in 0..d.evicted_unused {
            env.l1p_event(core, t, L1pEvent::EvictUnused);
        }
        for l2 in d.first..d.first + d.count {
            env.l1p_event(core, t, L1pEvent::StreamLineEstablished);
            let s = self.slice_of_l2(l2);
            let at = self.req.send(env, t, p, s, 1);
            env.schedule(at, Ev::L1pFetch { p: core, l2 });
        }
    }

    /// Core `p`'s L1P asks for shared-level line `l2` at its slice at `t`: a line the array
    /// holds (or a prefetch already reads) is ready then (or when that read returns);
    /// otherwise the slice reads it from memory into the array, as its own prefetches.
    fn l1p_fetch<S: Copy + From<Ev>>(&mut self, env: &mut Env<S>, t: Tick, p: u16, l2: u64) {
        let s = self.slice_of_l2(l2);
        let start = self.slices[s]
            .pipe
            .acquire(env, Resource::Slice(s as u16), t, self.occupancy);
        let key = self.key(l2);
        let array = &self.slices[s].array;
        let ready = if array.find(key).is_some_and(|i| array.state(i) != INVALID)
            || self.prefetching.contains(&l2)
        {
            start + self.hit
        } else {
            self.prefetching.insert(l2);
            self.prefetches += 1;
            env.slice_event(s as u16, SliceEvent::Prefetch);
            env.l2_event(s as u16, start, L2Event::FetchLine);
            let done = self.memory_read(env, start + self.hit, l2, None);
            env.schedule(
                done,
                Ev::MemDone {
                    line: l2,
                    prefetch: true,
                },
            );
            done
        };
        if let Some(l1p) = self.l1p[p as usize].as_mut() {
            l1p.ready(l2, ready);
        }
    }

    /// Core `p`'s write-through store leaves its store queue at `t`: it passes the core's
    /// L1P (which drops a line it holds) and crosses to its line's slice.
    fn store_send<S: Copy + From<Ev>>(&mut self, env: &mut Env<S>, t: Tick, p: usize, line: u64) {
        if let Some(l1p) = self.l1p[p].as_mut() {
            let hit = l1p.drop_line(line >> self.sub_shift);
            env.l1p_event(p as u16, t, L1pEvent::Store);
            if hit {
                env.l1p_event(p as u16, t, L1pEvent::WriteInvalidate);
            }
        }
        let s = self.slice_of(line);
        let at = self.req.send(env, t, p, s, self.cfg.store_flits);
        env.schedule(at, Ev::Store { p: p as u16, line });
    }

    /// A write-through store of core `p` reaches the slice of coherence line `line` at `t`:
    /// the slice takes the data into its array (allocating the line without a fetch when it
    /// is missing: a partial line) and invalidates the other cores' read-only copies. The
    /// directory is left alone while the line is busy (the transaction in progress decides
    /// the copies) and when another core owns it (a synchronization line taken by a value
    /// store: plain stores carry no value, so the owner's data stays the line's).
    fn store_at_slice<S: Copy + From<Ev>>(&mut self, env: &mut Env<S>, t: Tick, p: u16, line: u64) {
        let s = self.slice_of(line);
        let start = self.slices[s]
            .pipe
            .acquire(env, Resource::Slice(s as u16), t, self.occupancy);
        let out = start + self.hit;
        let hit = self.present(line);
        let missed = (!hit).then_some(L2Event::StoreThroughMiss);
        self.request_events(env, start, s, L2Event::StoreThrough, missed);
        self.install(env, out, line >> self.sub_shift, true, Alloc::WRITE);
        let (mut d, before) = self.dirs.take(line);
        if d.busy.is_none() && d.owner.is_none() {
            let others = d.others(p);
            let mut last = 0;
            for q in others {
                last = last.max(self.reply(env, out, s, q, SysMsg::PostedInvalidate { line }));
            }
            d.sharers.retain(|&q| q == p);
            if last > 0 {
                self.note_posted(t, line, last);
            }
        }
        self.finish(env, t, line, before, d);
    }

    /// Posted invalidations of `line` reach their cores by `at` (`posted`).
    fn note_posted(&mut self, t: Tick, line: u64, at: Tick) {
        let e = self.posted.entry(line).or_insert(0);
        *e = (*e).max(at);
        if self.posted.len() >= 2 * self.posted_sweep.max(64) {
            self.posted.retain(|_, &mut at| at > t);
            self.posted_sweep = self.posted.len();
        }
    }

    /// Stores `d` back and reports a change of the line's directory state.
    fn finish<S: Copy + From<Ev>>(
        &mut self,
        env: &mut Env<S>,
        t: Tick,
        line: u64,
        before: u8,
        d: Dir,
    ) {
        let node = |_: &mut Env<S>| self.slice_of(line) as u16;
        dir::observe_change(env, node, t, line, before, &d);
        self.dirs.put(line, d);
    }
}

impl MemorySystem for CmpSys {
    type Ev = Ev;

    /// The coherence line an event works on (for the origin of its observations); a
    /// prefetch's fill is the shared level's line and belongs to no request.
    fn event_line(e: &Ev) -> Option<u64> {
        match *e {
            Ev::AtSlice { m, .. } => m.line(),
            Ev::MemDone { line, prefetch } => (!prefetch).then_some(line),
            Ev::Store { line, .. } | Ev::StoreSend { line, .. } => Some(line),
            Ev::L1pFetch { .. } => None,
        }
    }

    #[inline(never)]
    fn from_proc<S: Copy + From<Ev>>(&mut self, env: &mut Env<S>, t: Tick, p: usize, m: ProcMsg) {
        // No arbitration before the crossbar's input port (its queueing is the port's).
        env.observe_bus_request(p, t, t);
        match m {
            ProcMsg::Uncached { .. } => {
                // No uncached window belongs to this system: answered as from an empty
                // device after an uncontended round trip through the crossbars.
                env.deliver(
                    p,
                    t + self.uncached_ticks,
                    SysMsg::UncachedReply { value: 0 },
                );
            }
            _ => {
                let line = m.line().unwrap();
                let carries_line = matches!(
                    m,
                    ProcMsg::Writeback { .. } | ProcMsg::InterventionReply { value: Some(_), .. }
                );
                let flits = if carries_line { self.data_flits } else { 1 };
                match m {
                    ProcMsg::Read { .. } | ProcMsg::ReadEx { .. }
                        if !self.l1p_retry.remove(&(p as u16, line)) =>
                    {
                        let read = matches!(m, ProcMsg::Read { .. });
                        self.l1p_demand(env, t, p, line, read)
                    }
                    _ => {}
                }
                let s = self.slice_of(line);
                let at = self.req.send(env, t, p, s, flits);
                env.schedule(at, Ev::AtSlice { p: p as u16, m });
            }
        }
    }

    #[inline(never)]
    fn handle<S: Copy + From<Ev>>(&mut self, env: &mut Env<S>, t: Tick, e: Ev) {
        match e {
            Ev::AtSlice { p, m } => self.at_slice(env, t, p, m),
            Ev::MemDone {
                line,
                prefetch: true,
            } => {
                self.prefetching.remove(&line);
                self.install(env, t, line, false, Alloc::PREFETCH);
                for cl in self.joined.remove(&line).unwrap_or_default() {
                    self.fetched(env, t, cl);
                }
            }
            Ev::MemDone {
                line,
                prefetch: false,
            } => {
                self.install(env, t, line >> self.sub_shift, false, Alloc::DEMAND);
                self.fetched(env, t, line);
            }
            Ev::StoreSend { p, line } => self.store_send(env, t, p as usize, line),
            Ev::Store { p, line } => self.store_at_slice(env, t, p, line),
            Ev::L1pFetch { p, l2 } => self.l1p_fetch(env, t, p, l2),
        }
    }

    fn describe(&self, line: u64) -> String {
        let l2 = line >> self.sub_shift;
        let s = self.slice_of_l2(l2);
        let held = self.slices[s].array.state_of(self.key(l2));
        format!("slice {s} (array state {held}): {:?}", self.dirs.get(line))
    }

    fn backoff_ticks(&self) -> Tick {
        self.cfg.backoff_cycles as Tick * self.cpu_period
    }

    /// A write-through store of core `p` at its local time `t` (its L1 D is write-through,
    /// Blue Gene/Q). The core's store queue takes it at once while fewer than `store_queue`
    /// stores wait in it, else when the oldest leaves (the returned time: the core waits
    /// until then). The queue drains one store per `store_flits` flit times of the crossbar
    /// port; the store then goes out as an event at the time it leaves the queue, as a miss
    /// is issued at the processor's time (`store_send`), so the crossbar's ports are
    /// reserved in time order. The queue's drain rate is its own: reads and write-backs
    /// sharing the port delay a store's crossing (at the port) but not the queue's count.
    fn write_through<S: Copy + From<Ev>>(
        &mut self,
        env: &mut Env<S>,
        t: Tick,
        p: usize,
        a: Addr,
        _token: u64,
        _whole: bool,
    ) -> Tick {
        let line = a >> env.line_shift;
        let q = &mut self.store_q[p];
        while q.front().is_some_and(|&left| left <= t) {
            q.pop_front();
        }
        let depth = self.cfg.store_queue as usize;
        let accepted = if q.len() >= depth {
            q[q.len() - depth]
        } else {
            t
        };
        let leaves = q.back().map_or(accepted, |&b| b.max(accepted)) + self.store_busy;
        q.push_back(leaves);
        env.schedule(
            leaves - self.store_busy,
            Ev::StoreSend { p: p as u16, line },
        );
        accepted
    }

    fn controllers(&self) -> &[Controller] {
        self.ctl.as_deref().unwrap_or(&[])
    }

    fn controllers_mut(&mut self) -> &mut [Controller] {
        self.ctl.as_deref_mut().unwrap_or(&mut [])
    }

    /// The reads whose memory value differed from the directory's (`memory_read`), then, after
    /// the final drain, every line no core owns whose shared-level line the array does not
    /// hold dirty: DRAM must hold its directory value.
    fn memory_mismatches(
        &self,
        _map: &crate::addr::MemoryMap,
        _line_shift: u32,
    ) -> Vec<(u64, u64, u64)> {
        let Some(ctl) = self.ctl.as_ref() else {
            return Vec::new();
        };
        let mut v = self.mismatches.clone();
        v.extend(
            self.dirs
                .iter()
                .filter(|(_, d)| d.owner.is_none())
                .filter_map(|(&line, d)| {
                    let l2 = line >> self.sub_shift;
                    let (s, key) = (self.slice_of_l2(l2), self.key(l2));
                    if self.slices[s].array.state_of(key) == MODIFIED {
                        return None; // memory may be stale under a dirty array line
                    }
                    let m = ctl[self.mc_of(l2)].dram_value(line, self.coh_shift);
                    (m != d.value).then_some((line, m, d.value))
                }),
        );
        v.sort_unstable();
        v
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("nacks", self.nacks),
            ("memory_reads", self.memory_reads),
            ("memory_writes", self.memory_writes),
            ("prefetches", self.prefetches),
        ]
    }

    fn shared_misses(&self, p: usize) -> Option<u64> {
        self.shared_misses.get(p).copied()
    }
}

#[cfg(test)]
mod bgq_tests;
#[cfg(test)]
mod tests;
