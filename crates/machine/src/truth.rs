//! The ground-truth collector: exact statistics of everything, without touching timing.
//!
//! It observes the same probe points as the monitors and keeps, per processor, per data
//! structure and per procedure: read and write misses (local/remote), their latencies, cold,
//! coherence (invalidation) and capacity/conflict misses, invalidations received, NACKs,
//! cancelled upgrades and bus errors, latency distributions, and queueing at every resource.
//! Every monitor estimate is reported beside these numbers.
//!
//! Miss classes (for reads and read-exclusives, decided when the request is issued):
//! - *cold*: the processor never held the line before;
//! - *coherence*: its copy was last removed by an invalidation or exclusive intervention;
//! - *capacity/conflict*: its copy was last removed by its own replacement.
//!
//! `global_cold` counts misses to lines no processor had referenced (FlashPoint's warm bit).

use crate::addr::{MemoryMap, StructId, UNNAMED};
use crate::config::Preset;
use crate::probe::{Cmd, InboundKind, Observation, Outcome, Resource};
use engine::Tick;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// Exact histogram (value -> count): a dense array for values below `DENSE`, a tree above.
#[derive(Clone, Debug, Default)]
pub struct Histogram {
    dense: Vec<u64>,
    sparse: BTreeMap<u64, u64>,
    pub n: u64,
    pub sum: u128,
    pub sum_sq: u128,
}

const DENSE: u64 = 8192;

impl Histogram {
    /// (value, count) pairs in increasing value order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.dense
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(v, c)| (v as u64, *c))
            .chain(self.sparse.iter().map(|(v, c)| (*v, *c)))
    }

    pub fn add(&mut self, v: u64) {
        if v < DENSE {
            if self.dense.len() <= v as usize {
                self.dense.resize((v as usize + 1).next_power_of_two(), 0);
            }
            self.dense[v as usize] += 1;
        } else {
            *self.sparse.entry(v).or_default() += 1;
        }
        self.n += 1;
        self.sum += v as u128;
        self.sum_sq += (v as u128) * (v as u128);
    }
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum as f64 / self.n as f64
        }
    }
    pub fn variance(&self) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        let m = self.mean();
        self.sum_sq as f64 / self.n as f64 - m * m
    }
    /// The smallest value v with at least q of the samples <= v.
    pub fn percentile(&self, q: f64) -> u64 {
        let target = ((self.n as f64) * q).ceil().max(1.0) as u64;
        let mut acc = 0;
        for (v, c) in self.iter() {
            acc += c;
            if acc >= target {
                return v;
            }
        }
        0
    }
    pub fn max(&self) -> u64 {
        self.iter().last().map(|(v, _)| v).unwrap_or(0)
    }
}

/// Miss statistics of one category (a processor, a data structure, a procedure...).
#[derive(Clone, Debug, Default)]
pub struct MissStats {
    pub read_local: u64,
    pub read_remote: u64,
    pub write_local: u64,
    pub write_remote: u64,
    /// Of the write misses, those that were upgrades (ownership only).
    pub upgrades: u64,
    /// Latency sums in processor cycles.
    pub read_lat_local: u64,
    pub read_lat_remote: u64,
    pub write_lat_local: u64,
    pub write_lat_remote: u64,
    pub cold: u64,
    pub global_cold: u64,
    pub coherence: u64,
    pub capacity: u64,
    /// Invalidations (and exclusive interventions) that removed a valid copy.
    pub invalidations: u64,
    pub nacks: u64,
    pub cancelled: u64,
    pub bus_errors: u64,
}

impl MissStats {
    /// Adds `b` into `self`.
    pub fn add(&mut self, b: &MissStats) {
        self.read_local += b.read_local;
        self.read_remote += b.read_remote;
        self.write_local += b.write_local;
        self.write_remote += b.write_remote;
        self.upgrades += b.upgrades;
        self.read_lat_local += b.read_lat_local;
        self.read_lat_remote += b.read_lat_remote;
        self.write_lat_local += b.write_lat_local;
        self.write_lat_remote += b.write_lat_remote;
        self.cold += b.cold;
        self.global_cold += b.global_cold;
        self.coherence += b.coherence;
        self.capacity += b.capacity;
        self.invalidations += b.invalidations;
        self.nacks += b.nacks;
        self.cancelled += b.cancelled;
        self.bus_errors += b.bus_errors;
    }

    pub fn reads(&self) -> u64 {
        self.read_local + self.read_remote
    }
    pub fn writes(&self) -> u64 {
        self.write_local + self.write_remote
    }
    pub fn misses(&self) -> u64 {
        self.reads() + self.writes()
    }
}

/// Occupancy of one resource.
#[derive(Clone, Debug, Default)]
pub struct QueueStats {
    pub uses: u64,
    pub wait_sum: u64,
    pub busy_sum: u64,
    pub max_queue: u32,
    pub waits: Histogram,
}

/// Protocol handler activity (FLASH).
#[derive(Clone, Debug, Default)]
pub struct HandlerStats {
    pub runs: u64,
    pub latency_sum: u64,
    pub occupancy_sum: u64,
    pub queued_sum: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Cold,
    Coherence,
    Capacity,
}

pub struct GroundTruth {
    line_shift: u32,
    node_of: Vec<u16>,
    period: Tick,
    /// Lines a processor has held (bit per line, pages of 64 lines).
    touched: FxHashMap<(u16, u64), u64>,
    /// Lines whose last copy at a processor was removed by another processor.
    lost_to_coherence: FxHashMap<(u16, u64), u64>,
    /// Lines some processor has missed on.
    warm: FxHashMap<u64, u64>,
    pending: Vec<(Class, bool)>,
    pub per_proc: Vec<MissStats>,
    pub per_struct: FxHashMap<StructId, MissStats>,
    pub per_proc_struct: FxHashMap<(u32, StructId), MissStats>,
    pub per_procedure: FxHashMap<u32, MissStats>,
    /// Per (processor, data structure): the "by thread" view of a structure.
    pub per_cpu_struct: FxHashMap<(u16, StructId), MissStats>,
    /// The structure of the last miss of each (processor, line), in a direct-mapped table per
    /// processor with twice as many entries as the L2 has lines (so a line still cached is
    /// almost always found): line-level events (invalidations) are charged to it, because a
    /// line can hold parts of two structures. A line not found falls back to the structure
    /// holding the line's first byte.
    last_struct: Vec<(u64, StructId)>,
    last_mask: u64,
    /// Latency distributions: [read local, read remote, write local, write remote].
    pub latency: [Histogram; 4],
    pub queues: FxHashMap<Resource, QueueStats>,
    pub handlers: FxHashMap<u16, HandlerStats>,
    pub l2_accesses: u64,
    pub transactions: FxHashMap<Cmd, u64>,
    pub inbound: FxHashMap<&'static str, u64>,
    pub directory_changes: u64,
}

fn last_entries(p: &Preset) -> usize {
    (2 * p.caches.l2.size_bytes / p.caches.l2.line_bytes).next_power_of_two() as usize
}

fn bit(map: &FxHashMap<(u16, u64), u64>, p: u16, line: u64) -> bool {
    map.get(&(p, line >> 6))
        .is_some_and(|w| w & (1 << (line & 63)) != 0)
}
fn set(map: &mut FxHashMap<(u16, u64), u64>, p: u16, line: u64, v: bool) {
    let w = map.entry((p, line >> 6)).or_default();
    if v {
        *w |= 1 << (line & 63);
    } else {
        *w &= !(1 << (line & 63));
    }
}

impl GroundTruth {
    pub fn new(p: &Preset, period: Tick) -> GroundTruth {
        GroundTruth {
            line_shift: p.line_bytes().trailing_zeros(),
            node_of: (0..p.procs).map(|i| p.node_of_proc(i) as u16).collect(),
            period,
            touched: FxHashMap::default(),
            lost_to_coherence: FxHashMap::default(),
            warm: FxHashMap::default(),
            pending: vec![(Class::Cold, false); p.procs],
            per_proc: vec![MissStats::default(); p.procs],
            per_struct: FxHashMap::default(),
            per_proc_struct: FxHashMap::default(),
            per_procedure: FxHashMap::default(),
            per_cpu_struct: FxHashMap::default(),
            last_struct: vec![(u64::MAX, UNNAMED); p.procs * last_entries(p)],
            last_mask: last_entries(p) as u64 - 1,
            latency: Default::default(),
            queues: FxHashMap::default(),
            handlers: FxHashMap::default(),
            l2_accesses: 0,
            transactions: FxHashMap::default(),
            inbound: FxHashMap::default(),
            directory_changes: 0,
        }
    }

    pub fn observe(&mut self, o: &Observation, map: Option<&MemoryMap>) {
        match *o {
            Observation::L2Access { .. } => self.l2_accesses += 1,
            Observation::TxIssue {
                proc, cmd, addr, ..
            } => {
                *self.transactions.entry(cmd).or_default() += 1;
                if matches!(cmd, Cmd::Read | Cmd::ReadEx) {
                    let line = addr >> self.line_shift;
                    let class = if !bit(&self.touched, proc, line) {
                        Class::Cold
                    } else if bit(&self.lost_to_coherence, proc, line) {
                        Class::Coherence
                    } else {
                        Class::Capacity
                    };
                    let w = self.warm.entry(line >> 6).or_default();
                    let gcold = *w & (1 << (line & 63)) == 0;
                    *w |= 1 << (line & 63);
                    self.pending[proc as usize] = (class, gcold);
                }
            }
            Observation::TxNack { proc, .. } => self.per_proc[proc as usize].nacks += 1,
            Observation::TxDone {
                proc,
                t,
                cmd,
                addr,
                issued,
                outcome,
                home,
                procedure,
                ..
            } => {
                let p = proc as usize;
                let sid = map.map(|m| m.structure_of(addr)).unwrap_or(UNNAMED);
                let remote = self.node_of[p] != home;
                let lat = (t - issued) / self.period;
                let (class, gcold) = self.pending[p];
                let upd = |s: &mut MissStats| match (outcome, cmd) {
                    (Outcome::Cancelled, _) => s.cancelled += 1,
                    (Outcome::BusError, _) => s.bus_errors += 1,
                    (Outcome::Done, Cmd::Read) => {
                        if remote {
                            s.read_remote += 1;
                            s.read_lat_remote += lat;
                        } else {
                            s.read_local += 1;
                            s.read_lat_local += lat;
                        }
                    }
                    (Outcome::Done, Cmd::ReadEx | Cmd::Upgrade) => {
                        if remote {
                            s.write_remote += 1;
                            s.write_lat_remote += lat;
                        } else {
                            s.write_local += 1;
                            s.write_lat_local += lat;
                        }
                        if cmd == Cmd::Upgrade {
                            s.upgrades += 1;
                        }
                    }
                    _ => {}
                };
                let classify = |s: &mut MissStats| {
                    if outcome == Outcome::Done && matches!(cmd, Cmd::Read | Cmd::ReadEx) {
                        match class {
                            Class::Cold => s.cold += 1,
                            Class::Coherence => s.coherence += 1,
                            Class::Capacity => s.capacity += 1,
                        }
                        if gcold {
                            s.global_cold += 1;
                        }
                    }
                };
                if matches!(cmd, Cmd::UncachedRead | Cmd::UncachedWrite | Cmd::Writeback) {
                    return;
                }
                let line = addr >> self.line_shift;
                let i = proc as usize * (self.last_mask as usize + 1)
                    + (line & self.last_mask) as usize;
                self.last_struct[i] = (line, sid);
                if outcome == Outcome::Done {
                    // The processor now holds the line (fills are observed through their
                    // transactions; `LineState` is not needed, so it is not requested).
                    let w = self.touched.entry((proc, line >> 6)).or_default();
                    *w |= 1 << (line & 63);
                    if let Some(w) = self.lost_to_coherence.get_mut(&(proc, line >> 6)) {
                        *w &= !(1 << (line & 63));
                    }
                }
                for s in [
                    self.per_cpu_struct.entry((proc, sid)).or_default(),
                    &mut self.per_proc[p],
                    self.per_struct.entry(sid).or_default(),
                    self.per_proc_struct.entry((procedure, sid)).or_default(),
                    self.per_procedure.entry(procedure).or_default(),
                ] {
                    upd(s);
                    classify(s);
                }
                if outcome == Outcome::Done {
                    let k = match cmd {
                        Cmd::Read => 0,
                        _ => 2,
                    } + remote as usize;
                    self.latency[k].add(lat);
                }
            }
            Observation::Inbound {
                proc,
                kind,
                addr,
                hit,
                ..
            } => {
                let name = match kind {
                    InboundKind::Invalidate => "invalidate",
                    InboundKind::InterventionShared => "intervention-shared",
                    InboundKind::InterventionExclusive => "intervention-exclusive",
                };
                *self.inbound.entry(name).or_default() += 1;
                if hit && kind != InboundKind::InterventionShared {
                    let line = addr >> self.line_shift;
                    set(&mut self.lost_to_coherence, proc, line, true);
                    let i = proc as usize * (self.last_mask as usize + 1)
                        + (line & self.last_mask) as usize;
                    let sid = match self.last_struct[i] {
                        (l, s) if l == line => s,
                        _ => map.map(|m| m.structure_of(addr)).unwrap_or(UNNAMED),
                    };
                    self.per_proc[proc as usize].invalidations += 1;
                    self.per_struct.entry(sid).or_default().invalidations += 1;
                    self.per_cpu_struct
                        .entry((proc, sid))
                        .or_default()
                        .invalidations += 1;
                }
            }
            Observation::Queue {
                res,
                wait,
                busy,
                queue,
                ..
            } => {
                let q = self.queues.entry(res).or_default();
                q.uses += 1;
                q.wait_sum += wait;
                q.busy_sum += busy;
                q.max_queue = q.max_queue.max(queue);
                q.waits.add(wait);
            }
            Observation::Handler {
                handler,
                start,
                queued,
                latency,
                occupancy,
                ..
            } => {
                let h = self.handlers.entry(handler).or_default();
                h.runs += 1;
                h.latency_sum += latency;
                h.occupancy_sum += occupancy;
                h.queued_sum += start - queued;
            }
            Observation::Directory { .. } => self.directory_changes += 1,
            Observation::StorePerformed { .. }
            | Observation::LoadPerformed { .. }
            | Observation::Phase { .. }
            | Observation::Procedure { .. }
            | Observation::LineState { .. }
            | Observation::Pipeline { .. } => {}
        }
    }

    /// Totals over processors.
    pub fn total(&self) -> MissStats {
        let mut t = MissStats::default();
        for s in &self.per_proc {
            t.add(s);
        }
        t
    }
}
