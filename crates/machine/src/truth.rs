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
use crate::bgq::events::{CoreEvent, L1pEvent, L2Event};
use crate::config::Preset;
use crate::l1_misses::L1Misses;
use crate::probe::{Cmd, InboundKind, Observation, Origin, Outcome, Resource};
use engine::Tick;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// Exact histogram (value -> count): a dense array for values below `DENSE`, a tree above.
///
/// `add` only bumps a count (it runs for every queue use and every miss); sums and moments are
/// computed from the counts when asked for, so they are exact and cost nothing while running.
#[derive(Clone, Debug, Default)]
pub struct Histogram {
    dense: Vec<u64>,
    sparse: BTreeMap<u64, u64>,
    pub n: u64,
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

    #[inline]
    pub fn add(&mut self, v: u64) {
        self.n += 1;
        match self.dense.get_mut(v as usize) {
            Some(c) => *c += 1,
            None => self.add_outside(v),
        }
    }

    #[cold]
    fn add_outside(&mut self, v: u64) {
        if v < DENSE {
            self.dense.resize((v as usize + 1).next_power_of_two(), 0);
            self.dense[v as usize] += 1;
        } else {
            *self.sparse.entry(v).or_default() += 1;
        }
    }

    /// Sum of the samples.
    pub fn sum(&self) -> u128 {
        self.iter().map(|(v, c)| v as u128 * c as u128).sum()
    }
    /// Sum of the squared samples.
    pub fn sum_sq(&self) -> u128 {
        self.iter()
            .map(|(v, c)| v as u128 * v as u128 * c as u128)
            .sum()
    }
    pub fn mean(&self) -> f64 {
        if self.n == 0 {
            0.0
        } else {
            self.sum() as f64 / self.n as f64
        }
    }
    pub fn variance(&self) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        let m = self.mean();
        self.sum_sq() as f64 / self.n as f64 - m * m
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
    /// Adds every sample of `b`.
    pub fn merge(&mut self, b: &Histogram) {
        for (v, c) in b.iter() {
            self.n += c;
            if v >= DENSE {
                *self.sparse.entry(v).or_default() += c;
                continue;
            }
            if self.dense.len() <= v as usize {
                self.dense.resize((v as usize + 1).next_power_of_two(), 0);
            }
            self.dense[v as usize] += c;
        }
    }
}

/// Names of the resource kinds (`Resource::slot().0`), for the split by phase.
pub const RESOURCE_KINDS: [&str; Resource::KINDS] = [
    "bus",
    "memory",
    "network-cache",
    "ring-interface",
    "inter-ring",
    "protocol-processor",
    "mesh-link",
    "crossbar-port",
    "shared-slice",
];

/// One phase's share of the run (the ground truth's split by PhaseID: seed 000, Table 4.10
/// items 9 and 21–23): miss latencies and queue waits at each kind of resource, for the
/// requests made while a thread's PhaseID held this value.
#[derive(Clone, Debug, Default)]
pub struct PhaseSplit {
    /// Miss latency in processor cycles: [read local, read remote, write local, write remote].
    pub latency: [Histogram; 4],
    /// Queue uses per resource kind (`RESOURCE_KINDS`), waits in ticks; `uses` and
    /// `wait_sum` are filled in by `finish`.
    pub queues: [QueueStats; Resource::KINDS],
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

/// Occupancy of one resource. While running only `busy_sum`, `max_queue` and `waits` are
/// updated; `uses` and `wait_sum` follow from `waits` and are filled in by `finish`.
#[derive(Clone, Debug, Default)]
pub struct QueueStats {
    pub uses: u64,
    pub wait_sum: u64,
    pub busy_sum: u64,
    pub max_queue: u32,
    pub waits: Histogram,
}

/// What happened at a slice of a shared cache level (`cmp`), counted by the ground truth.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceEvent {
    /// A core's request reached the slice and was served (not NACKed): a read, a write
    /// (read-exclusive or upgrade) or a write-back of a dirty line; `hit` when the slice's
    /// data array held the line (whether or not the request needed its data).
    Access { kind: SliceAccess, hit: bool },
    /// The slice read a line from its memory controller (a demand miss that needed data).
    MemoryRead,
    /// The slice wrote a dirty victim to its memory controller.
    MemoryWrite,
    /// The slice's prefetcher read a line from memory.
    Prefetch,
}

/// The kind of a request at a slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceAccess {
    Read,
    Write,
    Writeback,
}

/// Exact counts of one slice of a shared level.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SliceStats {
    pub reads: u64,
    pub read_misses: u64,
    pub writes: u64,
    pub write_misses: u64,
    pub writebacks: u64,
    pub writeback_misses: u64,
    pub memory_reads: u64,
    pub memory_writes: u64,
    pub prefetches: u64,
}

impl SliceStats {
    pub fn accesses(&self) -> u64 {
        self.reads + self.writes + self.writebacks
    }
    pub fn misses(&self) -> u64 {
        self.read_misses + self.write_misses + self.writeback_misses
    }
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

/// The procedure key of cells that only hold invalidations (which belong to a processor and a
/// structure, not to the procedure that happens to run when they arrive).
const NO_PROCEDURE: u32 = u32::MAX;

/// Number of `Cmd` values (the per-command transaction counts are an array).
const CMDS: usize = 6;
const CMD_ALL: [Cmd; CMDS] = [
    Cmd::Read,
    Cmd::ReadEx,
    Cmd::Upgrade,
    Cmd::Writeback,
    Cmd::UncachedRead,
    Cmd::UncachedWrite,
];
const INBOUND_NAMES: [&str; 3] = [
    "invalidate",
    "intervention-shared",
    "intervention-exclusive",
];
// The arrays above are indexed by discriminant: keep them in declaration order.
const _: () = {
    assert!(Cmd::UncachedWrite as usize == CMDS - 1 && Cmd::Upgrade as usize == 2);
    assert!(InboundKind::InterventionExclusive as usize == 2);
};

/// A processor's newest read or read-exclusive miss as `tx_issue` classified it.
#[derive(Clone, Copy, Debug)]
struct Pending {
    line: u64,
    class: Class,
    gcold: bool,
}

/// The ground-truth collector.
///
/// While the machine runs, misses are accumulated in one cell per (processor, data structure,
/// procedure), found through a per-processor one-entry cache before a hash lookup, and queue
/// uses in a dense table per resource kind: one observation costs a few array operations.
/// The views below (per structure, per procedure, ...) are sums over the cells, built by
/// [`GroundTruth::finish`], which `Machine::run` calls before it returns; only `per_proc`,
/// `latency`, `l2_accesses` and `directory_changes` are kept up to date while running.
pub struct GroundTruth {
    line_shift: u32,
    node_of: Vec<u16>,
    period: Tick,
    /// Per (processor, page of 64 lines), one bit per line: [0] the processor has held the
    /// line; [1] its last copy was removed by another processor. Key: `proc << 48 | page`.
    lines: PageBits<2>,
    /// Lines some processor has missed on (bit per line, pages of 64 lines).
    warm: PageBits<1>,
    /// Per processor: its newest read or read-exclusive miss's classification (class,
    /// globally cold) and line (`u64::MAX` once its `TxDone` took it), one entry so that
    /// one MSHR costs one bounds check per miss.
    pending: Vec<Pending>,
    /// Classifications of older misses still outstanding on a core with several MSHRs
    /// (`[cpu.nonblocking] mshrs`): (processor, line, class, globally cold). Empty with one.
    pending_older: Vec<(u16, u64, Class, bool)>,
    /// Miss statistics per (processor, structure, procedure).
    cells: Vec<((u16, StructId, u32), MissStats)>,
    cell_index: FxHashMap<(u16, StructId, u32), u32>,
    /// Per processor: (structure, procedure, cell) of its last miss, and of its last
    /// invalidation (kept apart so that alternating misses and invalidations both hit).
    last_cell: Vec<[(StructId, u32, u32); 2]>,
    /// The structure of the last miss of each (processor, line), in a direct-mapped table per
    /// processor with twice as many entries as the L2 has lines (so a line still cached is
    /// almost always found): line-level events (invalidations) are charged to it, because a
    /// line can hold parts of two structures. A line not found falls back to the structure
    /// holding the line's first byte.
    last_struct: Vec<(u64, StructId)>,
    last_mask: u64,
    /// Per resource kind, resource number -> index in `queue_stats` (u32::MAX: none yet).
    queue_slots: [Vec<u32>; Resource::KINDS],
    queue_stats: Vec<(Resource, QueueStats)>,
    /// Handler number -> statistics.
    handler_stats: Vec<HandlerStats>,
    tx_counts: [u64; CMDS],
    inbound_counts: [u64; 3],
    pub per_proc: Vec<MissStats>,
    /// Per process (`Origin::process` of the request; all in process 0 without an operating
    /// system): the exact per-process counts a monitor restricted to one process is checked
    /// against. Kept up to date while running under an operating system; without one every
    /// request is process 0's, whose counts `finish` sums from `per_proc` (one update per
    /// transaction saved on the hot path).
    pub per_process: Vec<MissStats>,
    /// An operating system runs processes (`[os]`): keep `per_process` while running.
    per_process_on: bool,
    /// Latency distributions: [read local, read remote, write local, write remote].
    pub latency: [Histogram; 4],
    pub l2_accesses: u64,
    pub directory_changes: u64,
    /// Per slice of the shared level (`cmp`; empty on the other systems).
    pub slices: Vec<SliceStats>,
    /// Blue Gene/Q's UPC event sources, exact (issue 14; `bgq::events`): per slice of the
    /// shared level, the count of each `L2Event` (index = the event); per core, each
    /// `L1pEvent`; per hardware context (index `core * threads_per_core + context`), each
    /// `CoreEvent` (occurrences, or cycles for the cycle events; kept on the `cmp` system
    /// only, empty elsewhere). Not in the JSON document (the UPC monitor reports them beside
    /// its counters).
    pub l2_events: Vec<[u64; L2Event::COUNT]>,
    pub l1p_events: Vec<[u64; L1pEvent::COUNT]>,
    pub core_events: Vec<[u64; CoreEvent::COUNT]>,
    /// Hardware contexts per core (the index of `core_events`).
    pub threads_per_core: u32,
    /// TLB refills per data structure of the faulting address: [data, instruction fetch].
    pub tlb_per_struct: BTreeMap<StructId, [u64; 2]>,
    /// L1 D and L1 I misses per data structure and per procedure (kept while running).
    pub l1: L1Misses,
    // Views built by `finish`.
    pub per_struct: FxHashMap<StructId, MissStats>,
    pub per_proc_struct: FxHashMap<(u32, StructId), MissStats>,
    pub per_procedure: FxHashMap<u32, MissStats>,
    /// Per (processor, data structure): the "by thread" view of a structure.
    pub per_cpu_struct: FxHashMap<(u16, StructId), MissStats>,
    pub queues: FxHashMap<Resource, QueueStats>,
    pub handlers: FxHashMap<u16, HandlerStats>,
    pub transactions: FxHashMap<Cmd, u64>,
    pub inbound: FxHashMap<&'static str, u64>,
    /// The split by PhaseID, kept from the first time a thread sets a PhaseID other than 0
    /// (before that every request is phase 0, so phase 0 starts with the totals so far).
    pub phases: BTreeMap<u16, PhaseSplit>,
    by_phase: bool,
    /// The split was asked for (`Options::phase_split`).
    phase_split: bool,
}

fn last_entries(p: &Preset) -> usize {
    (2 * p.caches.last_private().size_bytes / p.caches.last_private().line_bytes)
        .next_power_of_two() as usize
}

/// `W` words of bits per page of 64 lines, in a slab found through a hash map, with a
/// one-entry cache per user (a processor touches the same few pages miss after miss).
struct PageBits<const W: usize> {
    index: FxHashMap<u64, u32>,
    slab: Vec<[u64; W]>,
    /// Per user: (key, slab index) of its last page.
    last: Vec<(u64, u32)>,
}

impl<const W: usize> PageBits<W> {
    fn new(users: usize) -> PageBits<W> {
        PageBits {
            index: FxHashMap::default(),
            slab: Vec::new(),
            last: vec![(u64::MAX, 0); users],
        }
    }

    /// The bits of page `key` (all clear if never set), for `user`.
    #[inline]
    fn get(&mut self, user: usize, key: u64) -> &mut [u64; W] {
        let last = &mut self.last[user];
        if last.0 != key {
            let next = self.slab.len() as u32;
            let i = *self.index.entry(key).or_insert(next);
            if i == next {
                self.slab.push([0; W]);
            }
            *last = (key, i);
        }
        &mut self.slab[last.1 as usize]
    }
}

/// Key of a (processor, line page) in `GroundTruth::lines`.
#[inline]
fn page_key(proc: u16, line: u64) -> u64 {
    (proc as u64) << 48 | line >> 6
}

impl GroundTruth {
    pub fn new(p: &Preset, period: Tick) -> GroundTruth {
        GroundTruth {
            line_shift: p.line_bytes().trailing_zeros(),
            node_of: (0..p.procs).map(|i| p.node_of_proc(i) as u16).collect(),
            period,
            lines: PageBits::new(p.procs),
            warm: PageBits::new(1),
            pending: vec![
                Pending {
                    line: u64::MAX,
                    class: Class::Cold,
                    gcold: false,
                };
                p.procs
            ],
            pending_older: Vec::new(),
            cells: Vec::new(),
            cell_index: FxHashMap::default(),
            last_cell: vec![[(UNNAMED, 0, u32::MAX); 2]; p.procs],
            last_struct: vec![(u64::MAX, UNNAMED); p.procs * last_entries(p)],
            last_mask: last_entries(p) as u64 - 1,
            queue_slots: Default::default(),
            queue_stats: Vec::new(),
            handler_stats: Vec::new(),
            tx_counts: [0; CMDS],
            inbound_counts: [0; 3],
            per_proc: vec![MissStats::default(); p.procs],
            per_process: vec![MissStats::default()],
            per_process_on: p.os.is_some(),
            tlb_per_struct: BTreeMap::new(),
            l1: L1Misses::new(),
            latency: Default::default(),
            l2_accesses: 0,
            directory_changes: 0,
            slices: vec![
                SliceStats::default();
                p.caches.shared.first().map_or(0, |s| s.slices as usize)
            ],
            l2_events: vec![
                [0; L2Event::COUNT];
                p.caches.shared.first().map_or(0, |s| s.slices as usize)
            ],
            l1p_events: vec![[0; L1pEvent::COUNT]; p.procs],
            // Counted on the `cmp` system only (Blue Gene/Q's UPC wants them), so that
            // the other presets' misses pay one test for them.
            core_events: if p.protocol == crate::config::ProtocolKind::Cmp {
                vec![[0; CoreEvent::COUNT]; p.contexts()]
            } else {
                Vec::new()
            },
            threads_per_core: p.cpu.threads_per_core,
            per_struct: FxHashMap::default(),
            per_proc_struct: FxHashMap::default(),
            per_procedure: FxHashMap::default(),
            per_cpu_struct: FxHashMap::default(),
            queues: FxHashMap::default(),
            handlers: FxHashMap::default(),
            transactions: FxHashMap::default(),
            inbound: FxHashMap::default(),
            phases: BTreeMap::new(),
            by_phase: false,
            phase_split: false,
        }
    }

    /// Keeps the split by phase (from the first PhaseID other than 0).
    pub fn with_phase_split(mut self, on: bool) -> GroundTruth {
        self.phase_split = on;
        self
    }

    /// The split by phase is kept (some thread set a PhaseID other than 0).
    pub fn by_phase(&self) -> bool {
        self.by_phase
    }

    /// Starts the split by phase: everything so far was phase 0.
    #[cold]
    fn start_phases(&mut self) {
        self.by_phase = true;
        let mut zero = PhaseSplit {
            latency: self.latency.clone(),
            ..PhaseSplit::default()
        };
        for (r, q) in &self.queue_stats {
            let z = &mut zero.queues[r.slot().0];
            z.busy_sum += q.busy_sum;
            z.max_queue = z.max_queue.max(q.max_queue);
            z.waits.merge(&q.waits);
        }
        self.phases.insert(0, zero);
    }

    #[cold]
    #[inline(never)]
    fn phase_queue(&mut self, res: Resource, who: Origin, wait: Tick, busy: Tick, queue: u32) {
        let q = &mut self.phases.entry(who.phase).or_default().queues[res.slot().0];
        q.busy_sum += busy;
        q.max_queue = q.max_queue.max(queue);
        q.waits.add(wait);
    }

    /// The cell of (proc, sid, procedure), created on first use.
    #[inline]
    fn cell(&mut self, proc: u16, sid: StructId, procedure: u32) -> &mut MissStats {
        let last = &mut self.last_cell[proc as usize][(procedure == NO_PROCEDURE) as usize];
        let i = if last.0 == sid && last.1 == procedure && last.2 != u32::MAX {
            last.2
        } else {
            let next = self.cells.len() as u32;
            let key = (proc, sid, procedure);
            let i = *self.cell_index.entry(key).or_insert(next);
            if i == next {
                self.cells.push((key, MissStats::default()));
            }
            *last = (sid, procedure, i);
            i
        };
        &mut self.cells[i as usize].1
    }

    /// An event at slice `slice` of the shared level.
    pub fn slice_event(&mut self, slice: u16, e: SliceEvent) {
        let s = &mut self.slices[slice as usize];
        match e {
            SliceEvent::Access { kind, hit } => {
                let (n, m) = match kind {
                    SliceAccess::Read => (&mut s.reads, &mut s.read_misses),
                    SliceAccess::Write => (&mut s.writes, &mut s.write_misses),
                    SliceAccess::Writeback => (&mut s.writebacks, &mut s.writeback_misses),
                };
                *n += 1;
                *m += !hit as u64;
            }
            SliceEvent::MemoryRead => s.memory_reads += 1,
            SliceEvent::MemoryWrite => s.memory_writes += 1,
            SliceEvent::Prefetch => s.prefetches += 1,
        }
    }

    /// An event at slice `slice` (`Observation::L2Slice`, counted whether or not it is built).
    #[inline]
    pub fn l2_event(&mut self, slice: u16, e: L2Event) {
        self.l2_events[slice as usize][e as usize] += 1;
    }
    /// An event of core `core`'s L1 prefetcher.
    #[inline]
    pub fn l1p_event(&mut self, core: u16, e: L1pEvent) {
        if let Some(c) = self.l1p_events.get_mut(core as usize) {
            c[e as usize] += 1;
        }
    }
    /// `n` of core event `e` on hardware context `context` of core `core`.
    #[inline]
    pub fn core_event(&mut self, core: u16, context: u8, e: CoreEvent, n: u64) {
        let i = core as usize * self.threads_per_core as usize + context as usize;
        if let Some(c) = self.core_events.get_mut(i) {
            c[e as usize] += n;
        }
    }

    /// One use of a queued resource, from a caller that remembers in `slot` where the
    /// resource's statistics are: 0 until the first use, then the index plus one (a resource
    /// belongs to one machine, hence to one collector).
    #[inline(always)]
    pub fn queue_use(
        &mut self,
        slot: &mut u32,
        res: Resource,
        wait: Tick,
        busy: Tick,
        queue: u32,
        who: &std::cell::Cell<Origin>,
    ) {
        if self.by_phase {
            self.phase_queue(res, who.get(), wait, busy, queue);
        }
        if *slot == 0 {
            let (kind, n) = res.slot();
            self.queue(res);
            *slot = self.queue_slots[kind][n] + 1;
        }
        let (r, q) = &mut self.queue_stats[*slot as usize - 1];
        debug_assert_eq!(*r, res);
        q.busy_sum += busy;
        q.max_queue = q.max_queue.max(queue);
        q.waits.add(wait);
    }

    #[inline(always)]
    fn queue(&mut self, res: Resource) -> &mut QueueStats {
        let (kind, n) = res.slot();
        let slots = &mut self.queue_slots[kind];
        if slots.len() <= n {
            slots.resize(n + 1, u32::MAX);
        }
        if slots[n] == u32::MAX {
            slots[n] = self.queue_stats.len() as u32;
            self.queue_stats.push((res, QueueStats::default()));
        }
        &mut self.queue_stats[slots[n] as usize].1
    }

    /// Takes one observation. The frequent, simple ones (queue uses, L2 accesses, NACKs,
    /// directory changes) are handled here, inlined into the machine's probe call; misses,
    /// inbound actions and handler runs go to out-of-line functions.
    #[inline(always)]
    pub fn observe(&mut self, o: &Observation, map: Option<&MemoryMap>) {
        match *o {
            Observation::L2Access { .. } => self.l2_accesses += 1,
            Observation::TxIssue {
                proc, cmd, addr, ..
            } => self.tx_issue(proc, cmd, addr),
            Observation::TxNack { proc, who, .. } => {
                self.per_proc[proc as usize].nacks += 1;
                if self.per_process_on {
                    self.process(who.process).nacks += 1;
                }
            }
            Observation::TxDone { .. } => self.tx_done(o, map),
            Observation::Inbound {
                proc,
                kind,
                addr,
                hit,
                ..
            } => self.inbound_action(proc, kind, addr, hit, map),
            Observation::Queue {
                res,
                wait,
                busy,
                queue,
                who,
                ..
            } => {
                if self.by_phase {
                    self.phase_queue(res, who, wait, busy, queue);
                }
                let q = self.queue(res);
                q.busy_sum += busy;
                q.max_queue = q.max_queue.max(queue);
                q.waits.add(wait);
            }
            Observation::Handler { .. } => self.handler(o),
            Observation::Directory { .. } => self.directory_changes += 1,
            Observation::TlbMiss { addr, ifetch, .. } => self.tlb_miss(addr, ifetch, map),
            Observation::Phase { phase, .. } => {
                if phase != 0 && self.phase_split && !self.by_phase {
                    self.start_phases();
                }
            }
            // Counted by the controller itself (its ground truth, `mem::controller`).
            Observation::MemRequest { .. }
            | Observation::Switch { .. }
            | Observation::Mode { .. } => {}
            // Counted exactly by the cores (`Counters::ops`).
            Observation::Retire { .. } => {}
            // Counted where they happen (`l2_event`, `l1p_event`, `core_event`), built or not.
            Observation::L2Slice { .. }
            | Observation::L1p { .. }
            | Observation::CoreEvent { .. } => {}
            Observation::StorePerformed { .. }
            | Observation::LoadPerformed { .. }
            | Observation::Procedure { .. }
            | Observation::LineState { .. }
            | Observation::BusRequest { .. }
            | Observation::Pipeline { .. } => {}
        }
    }

    /// A TLB refill, charged to the structure holding the faulting address.
    #[inline(never)]
    fn tlb_miss(&mut self, addr: u64, ifetch: bool, map: Option<&MemoryMap>) {
        let sid = map.map_or(UNNAMED, |m| m.structure_of(addr));
        self.tlb_per_struct.entry(sid).or_default()[ifetch as usize] += 1;
    }

    /// A transaction leaves a processor: classify a read or read-exclusive miss now (cold,
    /// coherence or capacity; globally cold), for its `TxDone`.
    #[inline(never)]
    fn tx_issue(&mut self, proc: u16, cmd: Cmd, addr: u64) {
        self.tx_counts[cmd as usize] += 1;
        if matches!(cmd, Cmd::Read | Cmd::ReadEx) {
            let line = addr >> self.line_shift;
            let bit = 1u64 << (line & 63);
            let [held, lost] = *self.lines.get(proc as usize, page_key(proc, line));
            let class = if held & bit == 0 {
                Class::Cold
            } else if lost & bit != 0 {
                Class::Coherence
            } else {
                Class::Capacity
            };
            let w = &mut self.warm.get(0, line >> 6)[0];
            let gcold = *w & bit == 0;
            *w |= bit;
            let new = Pending { line, class, gcold };
            let e = &mut self.pending[proc as usize];
            let live = std::mem::replace(e, new);
            if live.line != u64::MAX && live.line != line {
                // Another miss of this processor is still outstanding (several MSHRs).
                self.pending_older
                    .push((proc, live.line, live.class, live.gcold));
            }
        }
    }

    #[inline(never)]
    fn tx_done(&mut self, o: &Observation, map: Option<&MemoryMap>) {
        let Observation::TxDone {
            proc,
            t,
            cmd,
            addr,
            issued,
            outcome,
            home,
            procedure,
            who,
            ..
        } = *o
        else {
            return;
        };
        if matches!(cmd, Cmd::UncachedRead | Cmd::UncachedWrite | Cmd::Writeback) {
            return;
        }
        let p = proc as usize;
        let sid = map.map_or(UNNAMED, |m| self.l1.structure_of(addr, m));
        let remote = self.node_of[p] != home;
        let lat = (t - issued) / self.period;
        let line = addr >> self.line_shift;
        let (class, gcold) = self.pending_of(proc, cmd, line);
        let i = p * (self.last_mask as usize + 1) + (line & self.last_mask) as usize;
        self.last_struct[i] = (line, sid);
        if outcome == Outcome::Done {
            // The processor now holds the line (fills are observed through their
            // transactions; `LineState` is not needed, so it is not requested).
            let bit = 1u64 << (line & 63);
            let w = self.lines.get(p, page_key(proc, line));
            w[0] |= bit;
            w[1] &= !bit;
            let k = match cmd {
                Cmd::Read => 0,
                _ => 2,
            } + remote as usize;
            self.latency[k].add(lat);
            if self.by_phase {
                self.phases.entry(who.phase).or_default().latency[k].add(lat);
            }
        }
        let update = |s: &mut MissStats| {
            match (outcome, cmd) {
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
            }
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
        update(&mut self.per_proc[p]);
        if self.per_process_on {
            update(self.process(who.process));
        }
        update(self.cell(proc, sid, procedure));
    }

    /// The classification `tx_issue` made for processor `proc`'s miss of `line` (ended by
    /// this `cmd`'s `TxDone`): the newest, or an older one still outstanding.
    #[inline]
    fn pending_of(&mut self, proc: u16, cmd: Cmd, line: u64) -> (Class, bool) {
        let e = &mut self.pending[proc as usize];
        let newest = (e.class, e.gcold);
        if !matches!(cmd, Cmd::Read | Cmd::ReadEx) {
            return newest;
        }
        if e.line == line || self.pending_older.is_empty() {
            e.line = u64::MAX;
            return newest;
        }
        self.older_of(proc, line).unwrap_or(newest)
    }

    /// An older outstanding miss's classification (several MSHRs only).
    #[cold]
    #[inline(never)]
    fn older_of(&mut self, proc: u16, line: u64) -> Option<(Class, bool)> {
        let i = self
            .pending_older
            .iter()
            .position(|&(q, l, ..)| q == proc && l == line)?;
        let (_, _, c, g) = self.pending_older.swap_remove(i);
        Some((c, g))
    }

    /// Process `pid`'s statistics (grown on first use).
    #[inline]
    fn process(&mut self, pid: u16) -> &mut MissStats {
        let i = pid as usize;
        if self.per_process.len() <= i {
            self.per_process.resize(i + 1, MissStats::default());
        }
        &mut self.per_process[i]
    }

    /// An invalidation or intervention reached a processor's caches.
    #[inline(never)]
    fn inbound_action(
        &mut self,
        proc: u16,
        kind: InboundKind,
        addr: u64,
        hit: bool,
        map: Option<&MemoryMap>,
    ) {
        self.inbound_counts[kind as usize] += 1;
        if hit && kind != InboundKind::InterventionShared {
            let line = addr >> self.line_shift;
            self.lines.get(proc as usize, page_key(proc, line))[1] |= 1 << (line & 63);
            let i =
                proc as usize * (self.last_mask as usize + 1) + (line & self.last_mask) as usize;
            let sid = match self.last_struct[i] {
                (l, s) if l == line => s,
                _ => map.map(|m| m.structure_of(addr)).unwrap_or(UNNAMED),
            };
            self.per_proc[proc as usize].invalidations += 1;
            self.cell(proc, sid, NO_PROCEDURE).invalidations += 1;
        }
    }

    #[inline(never)]
    fn handler(&mut self, o: &Observation) {
        let Observation::Handler {
            handler,
            start,
            queued,
            latency,
            occupancy,
            ..
        } = *o
        else {
            return;
        };
        let n = handler as usize;
        if self.handler_stats.len() <= n {
            self.handler_stats.resize(n + 1, HandlerStats::default());
        }
        let h = &mut self.handler_stats[n];
        h.runs += 1;
        h.latency_sum += latency;
        h.occupancy_sum += occupancy;
        h.queued_sum += start - queued;
    }

    /// Builds the views (per structure, per procedure, per (procedure, structure), per
    /// (processor, structure), queues, handlers, transactions, inbound actions) from the cells.
    /// Idempotent: each call rebuilds them from scratch.
    pub fn finish(&mut self) {
        if !self.per_process_on {
            let mut all = MissStats::default();
            for s in &self.per_proc {
                all.add(s);
            }
            // As while running: inbound invalidations have no requesting process.
            all.invalidations = 0;
            self.per_process = vec![all];
        }
        self.per_struct.clear();
        self.per_proc_struct.clear();
        self.per_procedure.clear();
        self.per_cpu_struct.clear();
        for &((proc, sid, procedure), ref s) in &self.cells {
            self.per_struct.entry(sid).or_default().add(s);
            self.per_cpu_struct.entry((proc, sid)).or_default().add(s);
            if procedure != NO_PROCEDURE {
                self.per_proc_struct
                    .entry((procedure, sid))
                    .or_default()
                    .add(s);
                self.per_procedure.entry(procedure).or_default().add(s);
            }
        }
        self.queues = self
            .queue_stats
            .iter()
            .map(|(r, q)| {
                let mut q = q.clone();
                q.uses = q.waits.n;
                q.wait_sum = q.waits.sum() as u64;
                (*r, q)
            })
            .collect();
        self.handlers = self
            .handler_stats
            .iter()
            .enumerate()
            .filter(|(_, h)| h.runs > 0)
            .map(|(i, h)| (i as u16, h.clone()))
            .collect();
        self.transactions = CMD_ALL
            .iter()
            .zip(self.tx_counts)
            .filter(|(_, n)| *n > 0)
            .map(|(c, n)| (*c, n))
            .collect();
        for ph in self.phases.values_mut() {
            for q in ph.queues.iter_mut() {
                q.uses = q.waits.n;
                q.wait_sum = q.waits.sum() as u64;
            }
        }
        self.inbound = INBOUND_NAMES
            .iter()
            .zip(self.inbound_counts)
            .filter(|(_, n)| *n > 0)
            .map(|(k, n)| (*k, n))
            .collect();
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

#[cfg(test)]
#[path = "truth_tests.rs"]
mod tests;
