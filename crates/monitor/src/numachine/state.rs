//! The card's state: the registers and latches of Table 4.4, the counters and the SRAM, and the
//! caches of the count-enable circuits' outputs that keep the hot path short (`triggers`
//! recomputes them when a register or latch changes).

use super::*;

/// A compiled monitor configuration: the register values written at start-up, plus what the
/// registers do not hold (labels, preloads, the R4400's split-cache option).
#[derive(Clone, Debug, Default)]
pub struct Setup {
    pub name: String,
    pub regs: Regs,
    /// Counter labels (PAPI-style where one fits).
    pub labels: [String; 4],
    /// Counter preloads (a negative threshold written as two's complement).
    pub gpc_preload: [Option<u32>; 4],
    /// Preload every SRAM word with -threshold (cache-profile watch-points).
    pub sram_threshold: Option<u32>,
    /// The R4400's split secondary cache (instructions in the upper half of the index).
    pub split_id: bool,
    /// Queue-performance histograms (Table 4.10 item 15, beyond the original).
    pub queues: bool,
    /// Run the invalidation estimators of Fig. 4.8 even when no counter counts their events
    /// (E, F), to report them beside the exact counts (the built-in configuration does). The
    /// hardware exposes them only through those events, so without this they run only while
    /// some counter selects E or F.
    pub estimators: bool,
    /// Ask the machine for the pipeline-status stream even if no counter selects it now
    /// (a program may program one later; the stream costs a little time).
    pub pipeline: bool,
}

impl Setup {
    /// True when the machine must produce the pipeline-status stream: some counter selects
    /// pipeline-status events and the general-purpose counters start enabled, or the
    /// configuration asks for it (`pipeline = true`: needed by a program that enables pipeline
    /// counters later, since the machine decides once, when the monitor is attached). A monitor
    /// configured but disabled thus costs no pipeline-status stream.
    pub fn uses_pipeline(&self) -> bool {
        self.pipeline
            || (self.regs.gpce
                && self
                    .regs
                    .gpcm
                    .iter()
                    .any(|g| Mode::decode(*g).event == EV_PIPELINE))
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Out {
    pub(super) cmd: Cmd,
    pub(super) nacked: bool,
    pub(super) inv_miss: bool,
}

/// Division by a period fixed for the run, by a multiply: `x / d` for `x <= u64::MAX / d`
/// (every time a run reaches), a division otherwise.
#[derive(Clone, Copy, Debug)]
pub struct PeriodDiv {
    d: u64,
    magic: u64,
    limit: u64,
}

impl PeriodDiv {
    pub fn new(d: u64) -> PeriodDiv {
        assert!(d > 0, "period 0");
        // magic = floor(2^64 / d) + 1 (2^64 / d for a power of two): for x <= (2^64 - 1) / d
        // the error x * (magic * d - 2^64) / (d * 2^64) stays below 1/d, so the high word
        // of x * magic is floor(x / d).
        let (magic, limit) = if d == 1 {
            (0, 0)
        } else {
            (u64::MAX / d + 1, u64::MAX / d)
        };
        PeriodDiv { d, magic, limit }
    }
    #[inline(always)]
    pub fn div(&self, x: u64) -> u64 {
        if x <= self.limit {
            ((x as u128 * self.magic as u128) >> 64) as u64
        } else {
            x / self.d
        }
    }
}

#[derive(Clone, Copy, Debug)]
pub(super) struct Params {
    /// Division by `sys`.
    pub(super) sysdiv: PeriodDiv,
    pub(super) window: Tick,
    pub(super) line_shift: u32,
    pub(super) set_mask: u64,
    pub(super) data_cycles: u64,
}

/// One processor card's monitor.
#[derive(Clone, Debug)]
pub struct Card {
    pub proc: u16,
    pub node: u16,
    pub regs: Regs,
    pub latch: Latch,
    pub(super) cmp: Compare,
    pub(super) gpc_on: [bool; 4],
    /// Events (bit per Table 4.5 code) some enabled counter counts.
    pub(super) ev_mask: u16,
    /// Per event, the enabled counters counting it (bit per counter): a pulse of an event no
    /// counter counts costs one load and test.
    pub(super) ev_counters: [u8; 16],
    /// Counters counting transitions (bit 10), bit per counter.
    pub(super) edge_counters: u8,
    /// Some counter selects event B (reset at every request) or 7/8 (tentative counts): the
    /// request and response must visit the counters.
    pub(super) latency_hooks: bool,
    /// The SRAM's count-enable circuit looks at no per-packet comparator but the direction:
    /// its value for each direction (`Dir` as index), valid until the next `refresh`.
    pub(super) sram_dir_only: bool,
    pub(super) sram_dir_on: [bool; 3],
    /// `cycles_on` after a packet in each direction (with `sram_dir_only`).
    pub(super) sram_dir_cycles: [bool; 3],
    /// Some enabled counter counts cycles (or the SRAM extends a count): intervals need work.
    pub(super) cycles_on: bool,
    /// Counters whose enable looks at AR, CR or the direction (bit per counter), and the
    /// SRAM's: packets must re-evaluate them.
    pub(super) gpc_sens: u8,
    pub(super) sram_sens: bool,
    pub(super) gpc_cycles_on: bool,
    /// Count-always counters without an interrupt (bit per counter): counted when the enables
    /// change, before reads and at the end, instead of at every observation.
    pub(super) lazy_always: u8,
    pub(super) always_since: Tick,
    pub(super) sys: Tick,
    pub(super) sram_on: bool,
    pub gpc: [Gpc; 4],
    pub smode: SramMode,
    pub sram: Sram,
    pub split_id: bool,
    /// Interrupt status: bit i = counter i overflowed, bit 4 = SRAM.
    pub isr: u8,
    pub(super) irq_level: bool,
    /// The bus request line (GPC event D): high over [breq_from, breq_until).
    pub(super) breq_from: Tick,
    pub(super) breq_until: Tick,
    pub(super) out: Option<Out>,
    pub(super) last_t: Tick,
    pub(super) last_ps: [u64; 16],
    pub(super) cur_ps: [u64; 16],
    /// A pipeline counter may interrupt: count its events at every report.
    pub(super) ps_eager: bool,
    /// Response State Register (Table 4.9) and Miss Type Register (Table 4.8).
    pub rsr: u8,
    pub mtr: u8,
    /// The configuration asks for the estimators (`Setup::estimators`).
    pub(super) estimators_cfg: bool,
    /// The estimators run: asked for, or some counter selects event E or F (their state
    /// lives only for a few cycles, so they can start at any time).
    pub(super) estimating: bool,
    /// The estimators ran at some time (their tallies are reported).
    pub estimated: bool,
    pub inval_hit: InvalHit,
    pub inval_miss: InvalMiss,
    pub interrupts_raised: u64,
    /// Responses whose latency reached the 4096-cycle time-out (the 12-bit timer wrapped).
    pub latency_timeouts: u64,
    /// Exact latencies of every line request seen, for the report: per RSR value, counts by
    /// latency in monitor cycles (4096 = 4096 or more), allocated in chunks as counted.
    pub exact_latency: super::exact_latency::ExactLatency,
    /// The SRAM's exact shadow for the report: per SRAM address, every L2 event (SRAM events
    /// 2-5) and every line request (event 6, once, at its response) the SRAM's address
    /// circuit maps there while the SRAM master enable is on, whatever the count-enable
    /// filters, 64-bit (no wrap) and without the threshold preload. 64K words, allocated on
    /// first use.
    pub sram_exact: Vec<u64>,
}

impl Card {
    pub(super) fn new(proc: u16, node: u16, s: &Setup, sys: Tick) -> Card {
        let mut c = Card {
            proc,
            node,
            regs: Regs::default(),
            latch: Latch::default(),
            cmp: Compare::new(&Regs::default(), &Latch::default()),
            gpc_on: [false; 4],
            ev_mask: 0,
            ev_counters: [0; 16],
            edge_counters: 0,
            latency_hooks: false,
            sram_dir_only: false,
            sram_dir_on: [false; 3],
            sram_dir_cycles: [false; 3],
            cycles_on: false,
            gpc_sens: 0,
            sram_sens: false,
            gpc_cycles_on: false,
            lazy_always: 0,
            always_since: 0,
            sys,
            sram_on: false,
            gpc: Default::default(),
            smode: SramMode::default(),
            sram: Sram::default(),
            split_id: s.split_id,
            isr: 0,
            irq_level: false,
            breq_from: 0,
            breq_until: 0,
            out: None,
            last_t: 0,
            last_ps: [0; 16],
            cur_ps: [0; 16],
            ps_eager: false,
            rsr: 0,
            mtr: 0,
            estimators_cfg: s.estimators,
            estimating: false,
            estimated: false,
            inval_hit: InvalHit::default(),
            inval_miss: InvalMiss::default(),
            interrupts_raised: 0,
            latency_timeouts: 0,
            exact_latency: Default::default(),
            sram_exact: Vec::new(),
        };
        // The registers as the start-up writes leave them, the enable circuits evaluated
        // once at the end (not after each write).
        for (r, v) in s.regs.list() {
            c.apply_reg(r, v);
        }
        c.refresh();
        for i in 0..4 {
            if let Some(v) = s.gpc_preload[i] {
                c.gpc[i].counter.preload(v as u64);
            }
        }
        if let Some(t) = s.sram_threshold {
            c.sram.preload_threshold(t);
        }
        c
    }

    pub(super) fn set_reg(&mut self, r: Reg, v: u32) {
        self.apply_reg(r, v);
        self.refresh();
    }

    /// Writes register `r` and what decodes it, without re-evaluating the enables.
    fn apply_reg(&mut self, r: Reg, v: u32) {
        self.regs.set(r, v);
        match r {
            Reg::Pr => self.latch.pr = self.regs.pr,
            Reg::Gpcm0 | Reg::Gpcm1 | Reg::Gpcm2 | Reg::Gpcm3 => {
                let i = r as usize - Reg::Gpcm0 as usize;
                self.gpc[i].mode = Mode::decode(self.regs.gpcm[i]);
            }
            Reg::Scm => self.smode = SramMode::decode(self.regs.scm),
            _ => {}
        }
    }
}

/// Queue-length and waiting-time histograms of one resource (Table 4.10 item 15, "beyond the
/// original": the seed left memory and network queue monitoring for the future).
#[derive(Clone, Debug)]
pub struct QueueHist {
    /// Messages already queued when one arrived: 0..=63, the last bucket "63 or more".
    pub length: [u64; 64],
    /// Waiting time in monitor cycles, compact latency format (128 buckets).
    pub wait: [u64; 128],
    /// Waits of 4096 monitor cycles or more (beyond the 12-bit timer).
    pub wait_overflow: u64,
    pub uses: u64,
    pub wait_sum: u64,
    pub busy_sum: u64,
}

impl Default for QueueHist {
    fn default() -> Self {
        QueueHist {
            length: [0; 64],
            wait: [0; 128],
            wait_overflow: 0,
            uses: 0,
            wait_sum: 0,
            busy_sum: 0,
        }
    }
}

/// Queue histograms by resource kind and number (`Resource::slot`), so that a `Queue`
/// observation costs an index, not a name.
#[derive(Clone, Debug, Default)]
pub struct Queues {
    kinds: [Vec<QueueHist>; Resource::KINDS],
}

pub(super) fn slot_resource(kind: usize, i: usize) -> Resource {
    let n = i as u16;
    match kind {
        0 => Resource::Bus(n),
        1 => Resource::Memory(n),
        2 => Resource::NetworkCache(n),
        3 => Resource::RingInterface(n),
        4 => Resource::InterRing(n),
        5 => Resource::ProtocolProcessor(n),
        6 => Resource::MeshLink((i / 4) as u16, (i % 4) as u8),
        7 => Resource::CrossbarPort((i / 4) as u16, (i % 4) as u8),
        _ => Resource::Slice(n),
    }
}

impl Queues {
    #[inline]
    pub(super) fn get(&mut self, r: Resource) -> &mut QueueHist {
        let (k, i) = r.slot();
        let v = &mut self.kinds[k];
        if v.len() <= i {
            v.resize_with(i + 1, QueueHist::default);
        }
        &mut v[i]
    }
    /// The resources that reported a use, by name (`resource_name`), in name order.
    pub fn by_name(&self) -> BTreeMap<String, &QueueHist> {
        self.kinds
            .iter()
            .enumerate()
            .flat_map(|(k, v)| {
                v.iter()
                    .enumerate()
                    .filter(|(_, q)| q.uses > 0)
                    .map(move |(i, q)| (resource_name(slot_resource(k, i)), q))
            })
            .collect()
    }
    pub fn is_empty(&self) -> bool {
        self.kinds.iter().all(|v| v.iter().all(|q| q.uses == 0))
    }
}

pub fn resource_name(r: Resource) -> String {
    match r {
        Resource::Bus(s) => format!("bus {s}"),
        Resource::Memory(n) => format!("memory {n}"),
        Resource::NetworkCache(s) => format!("network-cache {s}"),
        Resource::RingInterface(s) => format!("ring-interface {s}"),
        Resource::InterRing(r) => format!("inter-ring {r}"),
        Resource::ProtocolProcessor(n) => format!("protocol-processor {n}"),
        Resource::MeshLink(n, d) => format!("mesh-link {n}.{d}"),
        Resource::CrossbarPort(n, d) => format!("crossbar-port {n}.{d}"),
        Resource::Slice(n) => format!("slice {n}"),
    }
}
