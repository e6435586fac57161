//! Machine presets: the TOML files under `presets/` and their validation.
//!
//! A preset describes one whole machine: clocks, processor timing, every cache's geometry and
//! policy, memory placement, and the protocol/interconnect section of its kind. Users copy a
//! preset, edit it and pass the file with `--machine FILE.toml`. Unknown keys are errors, and
//! every validation error names the field (`caches.l2.line_bytes: ...`).

use serde::{Deserialize, Serialize};
use std::fmt;

pub use crate::addr::Placement;
pub use crate::cmp::config::CmpCfg;
pub use crate::error::ConfigError;
pub use crate::flash::config::FlashCfg;
pub use crate::ideal::config::IdealCfg;
pub use crate::numachine::config::NumachineCfg;

/// The built-in presets, embedded at build time.
pub const BUILTIN: &[(&str, &str)] = &[
    ("numachine", include_str!("../../../presets/numachine.toml")),
    ("flash", include_str!("../../../presets/flash.toml")),
    (
        "flash-r10k",
        include_str!("../../../presets/flash-r10k.toml"),
    ),
    ("ideal", include_str!("../../../presets/ideal.toml")),
    ("cmp", include_str!("../../../presets/cmp.toml")),
    ("elan", include_str!("../../../presets/elan.toml")),
    ("bgq", include_str!("../../../presets/bgq.toml")),
    ("power2", include_str!("../../../presets/power2.toml")),
    ("power2-os", include_str!("../../../presets/power2-os.toml")),
    (
        "cachegrind",
        include_str!("../../../presets/cachegrind.toml"),
    ),
];

fn err<T>(field: &str, msg: impl fmt::Display) -> Result<T, ConfigError> {
    Err(ConfigError(format!("{field}: {msg}")))
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum ProtocolKind {
    /// Fixed-latency memory with instantly-resolved directory coherence: a baseline.
    Ideal,
    /// NUMAchine: stations on buses, network caches, slotted rings (seed 000, section 4.1).
    Numachine,
    /// FLASH: MAGIC node controllers running protocol handlers, DPA directory, 2-D mesh (seed 004, 3.1).
    Flash,
    /// A chip multiprocessor: private L1s, a shared L2 in address-hashed slices on a crossbar
    /// as the coherence point (a directory of the cores' sharers), memory controllers
    /// (`cmp`; issue 13 item 5, the shape of issue 14's Blue Gene/Q).
    Cmp,
}

#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct Preset {
    pub name: String,
    #[serde(default)]
    pub description: String,
    pub protocol: ProtocolKind,
    /// Number of processors.
    pub procs: usize,
    pub clocks: ClockCfg,
    pub cpu: CpuCfg,
    pub caches: CachesCfg,
    pub memory: MemoryCfg,
    #[serde(default)]
    pub ideal: Option<IdealCfg>,
    #[serde(default)]
    pub numachine: Option<NumachineCfg>,
    #[serde(default)]
    pub flash: Option<FlashCfg>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cmp: Option<CmpCfg>,
    #[serde(default, skip_serializing_if = "SchedCfg::is_default")]
    pub sched: SchedCfg,
    /// A memory controller at every home (issue 16); absent or `enabled = false`: off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memctl: Option<crate::mem::config::MemCtlCfg>,
    /// The operating-system model (`os`, issue 15); absent: no operating system.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<crate::os::config::OsCfg>,
}

#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct ClockCfg {
    /// Processor clock (NUMAchine R4400: 150 MHz).
    pub cpu_hz: u64,
    /// System clock: the station bus and monitor on NUMAchine (50 MHz), MAGIC on FLASH (100 MHz).
    pub system_hz: u64,
    /// Pipeline-status circuit clock (NUMAchine: 75 MHz, half the processor clock).
    #[serde(default)]
    pub pipeline_status_hz: Option<u64>,
}

/// Processor timing. The processor is in-order and blocks on every miss (R4400-like); each
/// retired instruction takes one cycle, plus the extra cycles below, each charged to its
/// pipeline-status class (see `cpu::pipeline`).
#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct CpuCfg {
    /// Extra cycles per floating-point instruction (FP pipeline slips).
    #[serde(default)]
    pub fp_slip_cycles: u32,
    /// Extra cycles per load (load-use integer slips, on average).
    #[serde(default)]
    pub load_slip_cycles: u32,
    /// Cycles killed by a taken branch (instructions squashed after the delay slot).
    #[serde(default)]
    pub branch_taken_killed_cycles: u32,
    /// Cycles to enter and leave an exception handler (killed by exception).
    #[serde(default = "default_exception_cycles")]
    pub exception_cycles: u32,
    /// Processor cycles for an uncached load or store (monitor registers, FlashPoint commands),
    /// on top of the round trip through the external agent.
    #[serde(default = "default_uncached_cycles")]
    pub uncached_cycles: u32,
    /// Cycles between a message reaching the processor's interface and its effect on the caches
    /// (an external invalidation, an intervention). Also the processors' run-ahead bound: see
    /// ARCHITECTURE.md, "Time and interleaving".
    pub inbound_cycles: u32,
    /// Bytes of code per procedure, fetched through the L1 instruction cache as instructions
    /// retire (the workloads have no real code addresses).
    #[serde(default = "default_code_bytes")]
    pub code_bytes_per_procedure: u64,
    /// Cycles of one spin-loop iteration (load, compare, branch) while waiting on a lock/flag.
    #[serde(default = "default_spin_cycles")]
    pub spin_iteration_cycles: u32,
    /// The translation lookaside buffer and its software refill (see `cpu::tlb`). Left out
    /// of serialized presets while it has its default values.
    #[serde(default, skip_serializing_if = "TlbCfg::is_default")]
    pub tlb: TlbCfg,
    /// Hardware contexts (hardware threads) per core, sharing its pipeline, L1s and L2
    /// (`cpu::context`; 1 = today's single-threaded R4400). Left out of serialized presets
    /// while 1.
    #[serde(default = "default_one", skip_serializing_if = "is_one")]
    pub threads_per_core: u32,
    /// With several contexts loaded, the core issues from one ready context for this many
    /// cycles, then from the next ready one, round robin (1 = cycle-by-cycle interleaving);
    /// a context that blocks gives the pipeline up at once. See `sched` for why the
    /// interleaving stays exact. Left out of serialized presets while at its default.
    #[serde(
        default = "default_issue_slice",
        skip_serializing_if = "is_default_issue_slice"
    )]
    pub issue_slice_cycles: u32,
    /// Instructions without memory operands (`Ctx::int`, `fp`, `compute`, `ops`' integer and
    /// FP classes) issued per cycle (`cpu::wide`). 1 (the R4400, every existing preset; left
    /// out of serialized presets) retires one instruction per cycle; the R10000 decodes and
    /// issues up to 4 per cycle (`flash-r10k`). Loads, stores and branches still take a cycle
    /// each (the R10000 has one load/store unit).
    #[serde(default = "default_one", skip_serializing_if = "is_one")]
    pub issue_width: u32,
    /// Extra cycles per instruction of a fine class (`cpu::op::Op` by name, e.g. `fp-div =
    /// 16`), on top of its pipeline class's timing; charged as FP slips for FP ops and integer
    /// slips for the others. Empty (and left out of serialized presets) by default.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub op_extra_cycles: std::collections::BTreeMap<String, u32>,
    /// A dynamic branch predictor (`[cpu.branch_predictor]`; seed 000 Table 4.10 item 6). The
    /// R4400 predicts nothing (its presets leave this out): a taken branch kills
    /// `branch_taken_killed_cycles`. With a predictor, a correctly predicted branch kills
    /// nothing and a mispredicted one `mispredict_cycles`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch_predictor: Option<BranchPredictorCfg>,
    /// Non-blocking loads with hit-under-miss (`[cpu.nonblocking]`; seed 000 Table 4.10 item
    /// 19, "apparent miss cycles": n/a on the R4400, "a simple pipeline with no
    /// latency-hiding mechanisms", so its presets leave this out and every miss blocks).
    /// See `cpu::nonblocking`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonblocking: Option<NonBlockingCfg>,
    /// The pipeline tells the processor card when it restarts after a flush (seed 000 Table
    /// 4.10 item 4, "processor support required for counting restarts": the R4400 gives no
    /// such signal, so its presets leave this false and out of serialized presets). With it,
    /// every flush that killed at least one cycle (an exception, a taken or mispredicted
    /// branch, a spin iteration's branch) ends in one restart, counted exactly in
    /// `Counters::restarts` and put on the pipeline-status stream (`cpu::pipeline`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub restart_signal: bool,
    /// Cores at the end of the machine (`procs - system_cores ..`) left to the system: they
    /// exist (caches, crossbar ports, counter units) but the scheduler places no program
    /// thread on them (Blue Gene/Q's 17th core runs the compute node kernel's services, seed
    /// 001: "17 cores"). `--procs N` gives the program N cores and keeps these: the machine
    /// then has N + system_cores. Left out of serialized presets while 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub system_cores: u32,
    /// How the thread API's atomics (`Ctx::swap`, `fetch_add`, `compare_swap`, `fetch_max`)
    /// are performed: `"atomic"` (default, left out of serialized presets) in one step on
    /// the line held exclusively; `"larx-stcx"` as a load-and-reserve / store-conditional
    /// loop with one reservation per hardware thread (`cpu::reserve`, Blue Gene/Q's A2),
    /// whose store conditional fails and retries when the reservation was lost.
    #[serde(default, skip_serializing_if = "Atomics::is_default")]
    pub atomics: Atomics,
}

/// `cpu.atomics`: see `CpuCfg::atomics`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Atomics {
    #[default]
    Atomic,
    LarxStcx,
}

impl Atomics {
    fn is_default(&self) -> bool {
        *self == Atomics::Atomic
    }
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

fn is_true(v: &bool) -> bool {
    *v
}

/// A bimodal branch predictor: `entries` 2-bit saturating counters (a power of two), indexed by
/// the branch's address. pmusim's programs have no instruction addresses for their branches, so
/// a branch's address is its call site in the program (`Ctx::branch` is `#[track_caller]`):
/// one static branch per source location, as a compiled loop has.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BranchPredictorCfg {
    pub entries: u32,
    /// Cycles killed by a mispredicted branch (charged to the killed-by-branch state).
    pub mispredict_cycles: u32,
}

/// Non-blocking loads (`cpu::nonblocking`): a plain load that misses the L2 does not stall the
/// pipeline until its value is used; hits (L1, and L1 misses the L2 serves) proceed under it.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct NonBlockingCfg {
    /// Miss status holding registers: misses outstanding at once, 1..=4 (1..=16 with
    /// `loads = false`, where they are a write buffer's entries). 1 (hit-under-miss):
    /// a second miss waits for the first. More (miss-under-miss, FLASH only; the R10000's 4):
    /// the external agent keeps a small table of transactions matched by line
    /// (`cpu::nonblocking`).
    pub mshrs: u32,
    /// Plain loads do not block on a miss (true, the default, left out of serialized
    /// presets). False: a load that misses waits for its own data, but not for the stores
    /// outstanding before it (a write buffer with reads bypassing it, release consistency:
    /// `cpu::nonblocking`, "Blocking loads over a write buffer"); needs `stores = true`.
    #[serde(default = "default_true", skip_serializing_if = "is_true")]
    pub loads: bool,
    /// Plain stores do not block on a miss either (a write buffer in front of the one MSHR,
    /// `cpu::nonblocking`): the store's read-exclusive or upgrade leaves and the thread goes
    /// on. False (left out of serialized presets): only loads, as before.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stores: bool,
    /// The R10000's in-order graduation (`cpu::nonblocking`, "The active list"): a miss is
    /// not issued while the oldest outstanding miss has `active_list` or more instructions
    /// decoded after it (the 32-entry active list is full behind it; User's Manual 2.0,
    /// ch. 1). 0 (left out of serialized presets): no limit. No effect with one MSHR (a
    /// further miss waits for the outstanding one anyway).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub active_list: u32,
    /// The same for loads and stores: the 16-entry address queue holds every load and store
    /// until it graduates (User's Manual 2.0, 1.4 "Address Queue"). 0: no limit.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub address_queue: u32,
}

fn default_one() -> u32 {
    1
}
fn is_one(v: &u32) -> bool {
    *v == 1
}
fn default_issue_slice() -> u32 {
    DEFAULT_ISSUE_SLICE
}
fn is_default_issue_slice(v: &u32) -> bool {
    *v == DEFAULT_ISSUE_SLICE
}
/// Default `cpu.issue_slice_cycles`.
pub const DEFAULT_ISSUE_SLICE: u32 = 1;

/// The scheduler of software threads on hardware contexts (`sched`): the seam the operating
/// system model fills in. It matters only when a hardware context has more than one software
/// thread (more `--threads` than contexts). Left out of serialized presets while default.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SchedCfg {
    /// Time slice: a thread that has held its context this many processor cycles gives it to
    /// the next ready thread waiting for that context (round robin).
    #[serde(default = "default_quantum")]
    pub quantum_cycles: u64,
    /// Processor cycles of a software context switch (saving and restoring a thread's state:
    /// charged to the incoming thread as "other stall" before it issues).
    #[serde(default = "default_switch")]
    pub switch_cycles: u64,
}

fn default_quantum() -> u64 {
    1_000_000
}
fn default_switch() -> u64 {
    2_000
}

impl Default for SchedCfg {
    fn default() -> SchedCfg {
        SchedCfg {
            quantum_cycles: default_quantum(),
            switch_cycles: default_switch(),
        }
    }
}

impl SchedCfg {
    fn is_default(&self) -> bool {
        *self == SchedCfg::default()
    }
}

/// A fully associative, software-refilled TLB (MIPS R4000/R4400: 48 entries, each mapping
/// an even/odd pair of pages; random replacement above the wired entries). Off unless
/// `enabled` (or `pmusim run --tlb`): the recorded figures of the built-in presets were
/// measured without a TLB.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TlbCfg {
    #[serde(default)]
    pub enabled: bool,
    /// Entries (R4400: 48; R10000: 64).
    #[serde(default = "default_tlb_entries")]
    pub entries: u32,
    /// Pages mapped by one entry (a power of two; MIPS: 2, the even/odd pair).
    #[serde(default = "default_tlb_pages_per_entry")]
    pub pages_per_entry: u32,
    /// Entries at the bottom never chosen by random replacement (the R4400 `Wired` register).
    #[serde(default)]
    pub wired: u32,
    /// Instructions of the refill handler besides its two page-table loads (R4400 UTLB
    /// refill: `mfc0 Context`, two `ld` of the PTE pair, two `mtc0 EntryLo`, `tlbwr`,
    /// `eret`, plus hazard `nop`s).
    #[serde(default = "default_tlb_refill_instructions")]
    pub refill_instructions: u32,
    /// The handler also counts each refill in a per-processor memory word (a load and a
    /// store): Table 4.10 item 5, "TLB faults can be monitored in software".
    #[serde(default = "default_true")]
    pub count_in_software: bool,
}

impl TlbCfg {
    fn is_default(&self) -> bool {
        *self == TlbCfg::default()
    }
}

impl Default for TlbCfg {
    fn default() -> TlbCfg {
        TlbCfg {
            enabled: false,
            entries: default_tlb_entries(),
            pages_per_entry: default_tlb_pages_per_entry(),
            wired: 0,
            refill_instructions: default_tlb_refill_instructions(),
            count_in_software: true,
        }
    }
}

fn default_tlb_entries() -> u32 {
    48
}
fn default_tlb_pages_per_entry() -> u32 {
    2
}
fn default_tlb_refill_instructions() -> u32 {
    8
}
fn default_true() -> bool {
    true
}
fn default_exception_cycles() -> u32 {
    10
}
fn default_uncached_cycles() -> u32 {
    4
}
fn default_code_bytes() -> u64 {
    2048
}
fn default_spin_cycles() -> u32 {
    4
}

/// Upper bound of `cpu.threads_per_core` (POWER8 has 8, Blue Gene/Q 4).
pub const MAX_THREADS_PER_CORE: u32 = 16;

#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Replacement {
    Lru,
    Fifo,
    Random,
}

#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct CacheCfg {
    pub size_bytes: u64,
    pub assoc: u32,
    pub line_bytes: u64,
    #[serde(default = "default_replacement")]
    pub replacement: Replacement,
    /// Processor cycles for a hit at this level (added to the access that reached it).
    pub hit_cycles: u32,
    /// What a store that hits this level does (left out of serialized presets while
    /// write-back). See `WritePolicy` for what is modelled where.
    #[serde(default, skip_serializing_if = "WritePolicy::is_default")]
    pub write: WritePolicy,
    /// The prefetcher in this level's slot (left out of serialized presets while none).
    #[serde(default, skip_serializing_if = "PrefetchKind::is_none")]
    pub prefetch: PrefetchKind,
}
fn default_replacement() -> Replacement {
    Replacement::Lru
}

/// Write policy of a cache level.
///
/// Modelled: write-back everywhere (a dirty line leaves the level when it is evicted or
/// supplied), and write-through for an L1 D that is the core's last private level above the
/// `cmp` system's shared level (issue 14's Blue Gene/Q L1 D: every store goes to its L2 slice
/// through a store queue; a store miss allocates nothing; see `cmp` and docs/bgq.md). Other
/// levels refuse write-through, naming the field.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum WritePolicy {
    #[default]
    WriteBack,
    WriteThrough,
}

impl WritePolicy {
    fn is_default(&self) -> bool {
        *self == WritePolicy::WriteBack
    }
}

/// The prefetcher in a level's slot (`cmp::prefetch`): none (the default), next-line (a
/// miss that goes to memory also fetches the following line into its slice; the shared
/// level only), or stream (Blue Gene/Q's L1P, `cmp::l1p`: the L1 D's slot, on a core
/// without a private L2 above the `cmp` shared level).
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum PrefetchKind {
    #[default]
    None,
    NextLine,
    Stream,
}

impl PrefetchKind {
    fn is_none(&self) -> bool {
        *self == PrefetchKind::None
    }
}

#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Inclusion {
    /// L2 contains every L1 line: an L2 eviction or invalidation removes the L1 copies (R4400).
    Inclusive,
    /// The level holds lines independently of the levels above it: its evictions leave their
    /// copies alone (the shared L2 of `cmp`, whose directory tracks the L1s' copies itself).
    NonInclusive,
}

/// The cache hierarchy of a preset: per core, the private levels (L1 I and D, and an
/// optional private L2, inclusive of the L1s); then the shared levels, each split into
/// address-hashed slices on the memory system's interconnect.
///
/// The coherence point is the first level that is not private to a core: a core's *last
/// private level* (the private L2 when present, else the L1 D) is what its external agent
/// keeps coherent, in units of that level's line. Today's presets have a private L2 and no
/// shared level (their homes are the coherence point); `cmp` has no private L2 and one
/// shared L2 whose slices keep a directory of the cores' copies.
#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct CachesCfg {
    pub l1i: CacheCfg,
    pub l1d: CacheCfg,
    /// The private L2; absent: the L1s are the core's only private levels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2: Option<CacheCfg>,
    #[serde(default = "default_inclusion")]
    pub inclusion: Inclusion,
    /// The shared levels, nearest the cores first (`[[caches.shared]]`); only the `cmp`
    /// memory system has them, and it models one (the shared L2, its coherence point).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shared: Vec<SharedLevelCfg>,
    /// Every store writes its word through to the memory controller (seed 002's embedded
    /// processor, the `elan` preset); lines are never written back. One processor only, with
    /// an enabled `[memctl]` (see `Preset::validate`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub l1d_write_through: bool,
}
fn is_false(b: &bool) -> bool {
    !*b
}
fn default_inclusion() -> Inclusion {
    Inclusion::Inclusive
}

/// How a shared level spreads lines over its slices.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum SliceHash {
    /// The low bits of the line number above the slice's line.
    LowBits,
    /// The XOR of the line number's successive `log2(slices)`-bit fields: strided accesses
    /// spread over the slices (as the address hash of a sliced L2 does).
    Xor,
}

/// A shared cache level, split into `slices` address-hashed slices.
#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct SharedLevelCfg {
    /// The level's name in reports ("l2").
    pub name: String,
    /// Slices (a power of two); each holds `size_bytes / slices`.
    pub slices: u32,
    #[serde(default = "default_hash")]
    pub hash: SliceHash,
    /// Size, associativity and line of the whole level (each slice has `size_bytes /
    /// slices` of it, same associativity and line); `hit_cycles` is a slice's tag-and-data
    /// latency in processor cycles.
    pub cache: CacheCfg,
    /// Processor cycles a slice's pipeline is occupied by one access (its throughput).
    pub occupancy_cycles: u32,
    #[serde(default = "default_shared_inclusion")]
    pub inclusion: Inclusion,
}
fn default_hash() -> SliceHash {
    SliceHash::Xor
}
fn default_shared_inclusion() -> Inclusion {
    Inclusion::NonInclusive
}

impl SharedLevelCfg {
    /// One slice's geometry.
    pub fn slice(&self) -> CacheCfg {
        CacheCfg {
            size_bytes: self.cache.size_bytes / self.slices as u64,
            ..self.cache.clone()
        }
    }

    fn validate(&self, f: &str, coherence_line: u64) -> Result<(), ConfigError> {
        if self.slices == 0 || !self.slices.is_power_of_two() || self.slices > 1024 {
            return err(
                &format!("{f}.slices"),
                format!("{} is not a power of two in 1..=1024", self.slices),
            );
        }
        self.cache.validate(&format!("{f}.cache"))?;
        if self.cache.size_bytes / (self.slices as u64)
            < self.cache.line_bytes * self.cache.assoc as u64
        {
            return err(
                &format!("{f}.cache.size_bytes"),
                format!(
                    "{} bytes over {} slices leaves less than one set (assoc x line_bytes) per slice",
                    self.cache.size_bytes, self.slices
                ),
            );
        }
        if self.cache.line_bytes < coherence_line {
            return err(
                &format!("{f}.cache.line_bytes"),
                format!(
                    "{} is smaller than the cores' coherence line ({coherence_line}: the line of their last private level)",
                    self.cache.line_bytes
                ),
            );
        }
        if self.cache.write != WritePolicy::WriteBack {
            return err(
                &format!("{f}.cache.write"),
                "only write-back is modelled for a shared level",
            );
        }
        if self.inclusion != Inclusion::NonInclusive {
            return err(
                &format!("{f}.inclusion"),
                "only non-inclusive is modelled for a shared level (its directory tracks the cores' copies; an inclusive level would invalidate them on eviction)",
            );
        }
        if self.occupancy_cycles == 0 {
            return err(&format!("{f}.occupancy_cycles"), "must be at least 1");
        }
        Ok(())
    }
}

#[derive(Deserialize, Serialize, Clone, Debug)]
#[serde(deny_unknown_fields)]
pub struct MemoryCfg {
    pub page_bytes: u64,
    /// Placement of pages not placed explicitly by `alloc`.
    pub placement: Placement,
    /// Processor cycles a page migration asked by a probe takes (`probe::Action::MigratePage`:
    /// the copy; the page's home changes when it is done). Default 4,096: a 4 KiB page at
    /// one byte per cycle.
    #[serde(
        default = "default_page_migration_cycles",
        skip_serializing_if = "is_default_page_migration_cycles"
    )]
    pub page_migration_cycles: u64,
}

fn default_page_migration_cycles() -> u64 {
    4096
}
fn is_default_page_migration_cycles(v: &u64) -> bool {
    *v == default_page_migration_cycles()
}

/// Most lines one cache may hold: 4 Mi lines (256 MiB of 64-byte lines), far above any
/// machine modelled, and small enough that its state (about 24 bytes a line) is allocated in
/// moments. A preset asking for more is refused rather than allocated (issue 17: the fuzzer's
/// 16 GiB L2 took minutes and gigabytes before anything ran).
pub const MAX_CACHE_LINES: u64 = 1 << 22;
/// Most cache lines over all processors' caches together (768 MiB of cache state): the
/// built-in presets at 1024 processors need at most 18 Mi.
pub const MAX_TOTAL_CACHE_LINES: u64 = 1 << 25;

fn pow2(field: &str, v: u64) -> Result<(), ConfigError> {
    if v == 0 || !v.is_power_of_two() {
        return err(field, format!("{v} is not a power of two"));
    }
    Ok(())
}

impl CachesCfg {
    /// A core's last private level: the private L2 when present, else the L1 D. Its line is
    /// the coherence unit; its state is what the external agent keeps coherent.
    pub fn last_private(&self) -> &CacheCfg {
        self.l2.as_ref().unwrap_or(&self.l1d)
    }
}

impl CacheCfg {
    fn validate(&self, f: &str) -> Result<(), ConfigError> {
        pow2(&format!("{f}.size_bytes"), self.size_bytes)?;
        pow2(&format!("{f}.line_bytes"), self.line_bytes)?;
        if self.line_bytes < 8 {
            return err(&format!("{f}.line_bytes"), "must be at least 8");
        }
        if self.assoc == 0 || !(self.assoc as u64).is_power_of_two() {
            return err(
                &format!("{f}.assoc"),
                format!("{} is not a power of two", self.assoc),
            );
        }
        if self.line_bytes * self.assoc as u64 > self.size_bytes {
            return err(
                &format!("{f}.assoc"),
                "one set (assoc x line_bytes) is larger than the cache",
            );
        }
        if self.assoc > 64 {
            return err(&format!("{f}.assoc"), "at most 64 ways");
        }
        let shared = f.starts_with("caches.shared");
        if self.write != WritePolicy::WriteBack && !shared && f != "caches.l1d" {
            return err(
                &format!("{f}.write"),
                "write-through is modelled only for the L1 D (above a cmp shared level): use write-back",
            );
        }
        match (self.prefetch, shared) {
            (PrefetchKind::None, _) | (PrefetchKind::NextLine, true) => {}
            (PrefetchKind::Stream, false) if f == "caches.l1d" => {}
            (PrefetchKind::Stream, true) => {
                return err(
                    &format!("{f}.prefetch"),
                    "the stream prefetcher (Blue Gene/Q's L1P) sits in the L1 D's slot; a shared level takes \"none\" or \"next-line\"",
                )
            }
            _ => {
                return err(
                    &format!("{f}.prefetch"),
                    "a private level's slot takes \"none\", or \"stream\" in the L1 D's; next-line is modelled at the shared level",
                )
            }
        }
        if self.lines() > MAX_CACHE_LINES {
            return err(
                &format!("{f}.size_bytes"),
                format!(
                    "{} bytes is {} lines of {} bytes; a cache holds at most {MAX_CACHE_LINES} lines (the simulator keeps state for every line of every processor's caches)",
                    self.size_bytes,
                    self.lines(),
                    self.line_bytes
                ),
            );
        }
        Ok(())
    }
    /// Lines the cache holds.
    pub fn lines(&self) -> u64 {
        self.size_bytes / self.line_bytes
    }
    pub fn sets(&self) -> u64 {
        self.size_bytes / (self.line_bytes * self.assoc as u64)
    }
}

impl Preset {
    /// Parses and validates a preset. `origin` names the file in messages.
    pub fn parse(text: &str, origin: &str) -> Result<Preset, ConfigError> {
        let syntax = |e: toml::de::Error| {
            ConfigError(format!(
                "{origin}: {}",
                e.to_string().trim_end().replace('\n', "\n  ")
            ))
        };
        let table: toml::Table = toml::from_str(text).map_err(syntax)?;
        let p: Preset = match table.get("base") {
            None => toml::from_str(text).map_err(syntax)?,
            Some(base) => Self::derived(base, table.clone(), origin)?,
        };
        p.validate()
            .map_err(|e| ConfigError(format!("{origin}: {}", e.0)))?;
        Ok(p)
    }

    /// A preset written as changes to a built-in one (`base = "flash"` and only the keys that
    /// differ, e.g. `presets/flash-r10k.toml`): the base's tables with the file's keys laid
    /// over them, table by table, so that a variant does not repeat its base.
    fn derived(
        base: &toml::Value,
        mut over: toml::Table,
        origin: &str,
    ) -> Result<Preset, ConfigError> {
        let name = base.as_str().ok_or_else(|| {
            ConfigError(format!(
                "{origin}: base: must be the name of a built-in preset"
            ))
        })?;
        let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name).ok_or_else(|| {
            ConfigError(format!(
                "{origin}: base: `{name}` is not a built-in preset ({})",
                BUILTIN
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        let mut merged: toml::Table = toml::from_str(text)
            .map_err(|e| ConfigError(format!("built-in preset `{name}`: {e}")))?;
        over.remove("base");
        fn lay(into: &mut toml::Table, over: toml::Table) {
            for (k, v) in over {
                match (into.get_mut(&k), v) {
                    (Some(toml::Value::Table(a)), toml::Value::Table(b)) => lay(a, b),
                    (_, v) => {
                        into.insert(k, v);
                    }
                }
            }
        }
        lay(&mut merged, over);
        toml::Value::Table(merged)
            .try_into()
            .map_err(|e: toml::de::Error| {
                ConfigError(format!(
                    "{origin}: over preset `{name}`: {}",
                    e.to_string().trim_end().replace('\n', "\n  ")
                ))
            })
    }

    /// A built-in preset name, or the path of a preset file (a name ending in `.toml` or
    /// containing `/`): what `-m` takes everywhere, so every command that names a machine
    /// reads the same two forms.
    pub fn load(name: &str) -> Result<Preset, ConfigError> {
        if Preset::is_file_name(name) {
            let text = std::fs::read_to_string(name)
                .map_err(|e| ConfigError(format!("cannot read machine preset `{name}`: {e}")))?;
            Preset::parse(&text, name)
        } else {
            Preset::builtin(name)
        }
    }

    /// Whether `-m NAME` names a file rather than a built-in preset.
    pub fn is_file_name(name: &str) -> bool {
        name.ends_with(".toml") || name.contains('/')
    }

    /// A built-in preset by name.
    pub fn builtin(name: &str) -> Result<Preset, ConfigError> {
        let (_, text) = BUILTIN.iter().find(|(n, _)| *n == name).ok_or_else(|| {
            ConfigError(format!(
                "unknown machine `{name}`: the built-in presets are {}; or give the path of a preset file (see `pmusim list machines`)",
                BUILTIN.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
            ))
        })?;
        Preset::parse(text, &format!("built-in preset `{name}`"))
    }

    /// Replaces the processor count (the `--procs` flag) and re-validates the topology.
    /// The preset with `procs` cores for the program (`--procs`); cores left to the system
    /// (`cpu.system_cores`) are kept beyond them.
    pub fn with_procs(mut self, procs: usize) -> Result<Preset, ConfigError> {
        self.procs = procs + self.cpu.system_cores as usize;
        self.validate()?;
        Ok(self)
    }

    /// The cores a program's threads run on: all but the system's (`cpu.system_cores`).
    pub fn program_procs(&self) -> usize {
        self.procs - self.cpu.system_cores as usize
    }

    /// Hardware contexts of the machine (`procs * threads_per_core`).
    pub fn contexts(&self) -> usize {
        self.procs * self.cpu.threads_per_core as usize
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.procs == 0 {
            return err("procs", "must be at least 1");
        }
        if self.procs > 1024 {
            return err("procs", "at most 1024 processors");
        }
        if self.clocks.cpu_hz == 0 {
            return err("clocks.cpu_hz", "must be positive");
        }
        if self.clocks.system_hz == 0 {
            return err("clocks.system_hz", "must be positive");
        }
        self.clocks_built()
            .map_err(|e| ConfigError(format!("clocks: {e}")))?;
        self.caches.l1i.validate("caches.l1i")?;
        self.caches.l1d.validate("caches.l1d")?;
        if let Some(l2) = &self.caches.l2 {
            l2.validate("caches.l2")?;
        }
        let shared_lines: u64 = self.caches.shared.iter().map(|s| s.cache.lines()).sum();
        let per_proc = self.caches.l1i.lines()
            + self.caches.l1d.lines()
            + self.caches.l2.as_ref().map_or(0, |c| c.lines());
        if per_proc * self.procs as u64 + shared_lines > MAX_TOTAL_CACHE_LINES {
            return err(
                "caches",
                format!(
                    "{} processors with {per_proc} cache lines each hold {} lines in all; at most {MAX_TOTAL_CACHE_LINES} (use smaller caches or fewer processors)",
                    self.procs,
                    per_proc * self.procs as u64 + shared_lines
                ),
            );
        }
        let line = self.line_bytes();
        match &self.caches.l2 {
            Some(l2) => {
                for (f, c) in [
                    ("caches.l1i", &self.caches.l1i),
                    ("caches.l1d", &self.caches.l1d),
                ] {
                    if c.line_bytes > line {
                        return err(
                            &format!("{f}.line_bytes"),
                            format!("{} is larger than the L2 line ({line}); inclusion needs L1 lines no larger than L2 lines", c.line_bytes),
                        );
                    }
                }
                // An inclusive L2 holds every line of both L1s, so it cannot be smaller than
                // they are together (issue 17: an 8 KiB L2 under 16 KiB L1s was accepted).
                if self.caches.inclusion != Inclusion::Inclusive {
                    return err(
                        "caches.inclusion",
                        "a private L2 is inclusive of the L1s (the external agent relies on it); non-inclusive is modelled for a shared level only",
                    );
                }
                let l1 = self.caches.l1i.size_bytes + self.caches.l1d.size_bytes;
                if l2.size_bytes < l1 {
                    return err(
                        "caches.l2.size_bytes",
                        format!(
                            "{} is smaller than the inclusive L1s it must contain (l1i {} + l1d {} = {l1} bytes); make the L2 at least {l1} bytes or the L1s smaller",
                            l2.size_bytes, self.caches.l1i.size_bytes, self.caches.l1d.size_bytes
                        ),
                    );
                }
            }
            None => {
                // Without a private L2 the L1 D is the coherence unit and instruction lines
                // are fetched as whole coherence lines.
                if self.caches.l1i.line_bytes != line {
                    return err(
                        "caches.l1i.line_bytes",
                        format!(
                            "{} differs from the L1 D line ({line}); without a private L2 both L1s fetch whole coherence lines",
                            self.caches.l1i.line_bytes
                        ),
                    );
                }
            }
        }
        for (i, s) in self.caches.shared.iter().enumerate() {
            s.validate(&format!("caches.shared[{i}]"), line)?;
        }
        match (self.protocol, self.caches.shared.len()) {
            (ProtocolKind::Cmp, 1) => {}
            (ProtocolKind::Cmp, n) => {
                return err(
                    "caches.shared",
                    format!("protocol \"cmp\" needs exactly one shared level (its sliced L2, the coherence point); {n} given"),
                )
            }
            (_, 0) => {}
            (k, _) => {
                return err(
                    "caches.shared",
                    format!(
                        "protocol \"{}\" has its own homes as the coherence point and no shared cache level; shared levels need protocol \"cmp\"",
                        format!("{k:?}").to_lowercase()
                    ),
                )
            }
        }
        pow2("memory.page_bytes", self.memory.page_bytes)?;
        if self.memory.page_bytes < line {
            return err("memory.page_bytes", "smaller than a cache line");
        }
        if self.cpu.inbound_cycles == 0 {
            return err("cpu.inbound_cycles", "must be at least 1");
        }
        pow2(
            "cpu.code_bytes_per_procedure",
            self.cpu.code_bytes_per_procedure,
        )?;
        if self.cpu.code_bytes_per_procedure < self.caches.l1i.line_bytes {
            return err(
                "cpu.code_bytes_per_procedure",
                "smaller than an L1 instruction line",
            );
        }
        if self.cpu.spin_iteration_cycles == 0 {
            return err("cpu.spin_iteration_cycles", "must be at least 1");
        }
        if !(1..=MAX_THREADS_PER_CORE).contains(&self.cpu.threads_per_core) {
            return err(
                "cpu.threads_per_core",
                format!(
                    "{} is not in 1..={MAX_THREADS_PER_CORE}",
                    self.cpu.threads_per_core
                ),
            );
        }
        if self.cpu.issue_slice_cycles == 0 {
            return err("cpu.issue_slice_cycles", "must be at least 1");
        }
        for name in self.cpu.op_extra_cycles.keys() {
            if crate::cpu::op::Op::by_name(name).is_none() {
                let known: Vec<&str> = crate::cpu::op::Op::ALL.iter().map(|o| o.name()).collect();
                return err(
                    "cpu.op_extra_cycles",
                    format!(
                        "unknown instruction class `{name}`; the classes are {}",
                        known.join(", ")
                    ),
                );
            }
        }
        if let Some(bp) = &self.cpu.branch_predictor {
            if !bp.entries.is_power_of_two() || bp.entries > 1 << 20 {
                return err(
                    "cpu.branch_predictor.entries",
                    format!("{} is not a power of two in 1..=1048576", bp.entries),
                );
            }
        }
        if self.cpu.issue_width == 0 || self.cpu.issue_width > 4 {
            return err(
                "cpu.issue_width",
                format!(
                    "{} is not in 1..=4 (the R10000 issues at most 4 instructions per cycle)",
                    self.cpu.issue_width
                ),
            );
        }
        if let Some(nb) = &self.cpu.nonblocking {
            if !nb.loads && (nb.mshrs == 0 || nb.mshrs > 16) {
                return err(
                    "cpu.nonblocking.mshrs",
                    format!(
                        "{} is not in 1..=16 (with loads = false: the write buffer's entries)",
                        nb.mshrs
                    ),
                );
            }
            if nb.loads && (nb.mshrs == 0 || nb.mshrs > 4) {
                return err(
                    "cpu.nonblocking.mshrs",
                    format!(
                        "{} is not in 1..=4 (1: hit-under-miss; the R10000 keeps at most 4 cache refills outstanding)",
                        nb.mshrs
                    ),
                );
            }
            if !nb.loads && !nb.stores {
                return err(
                    "cpu.nonblocking.loads",
                    "false needs stores = true (blocking loads over a write buffer; without it the core is the blocking one: leave [cpu.nonblocking] out)",
                );
            }
            if nb.mshrs > 1 && self.protocol != ProtocolKind::Flash {
                return err(
                    "cpu.nonblocking.mshrs",
                    format!(
                        "{} needs protocol = \"flash\": several outstanding misses per processor are built and checked with the protocol tester on FLASH only (set mshrs = 1 elsewhere)",
                        nb.mshrs
                    ),
                );
            }
            if self.cpu.threads_per_core != 1 {
                return err(
                    "cpu.nonblocking",
                    "needs threads_per_core = 1 (a core with several hardware contexts switches to another context on a miss instead)",
                );
            }
        }
        if self.sched.quantum_cycles == 0 {
            return err("sched.quantum_cycles", "must be at least 1");
        }
        let tlb = &self.cpu.tlb;
        if tlb.entries == 0 || tlb.entries > 4096 {
            return err(
                "cpu.tlb.entries",
                format!("{} is not in 1..=4096", tlb.entries),
            );
        }
        pow2("cpu.tlb.pages_per_entry", tlb.pages_per_entry as u64)?;
        if tlb.wired >= tlb.entries {
            return err(
                "cpu.tlb.wired",
                format!(
                    "{} leaves no entry for random replacement (entries = {})",
                    tlb.wired, tlb.entries
                ),
            );
        }
        match self.protocol {
            ProtocolKind::Ideal => {
                let c = self.ideal.as_ref().ok_or_else(|| {
                    ConfigError("ideal: section [ideal] missing for protocol \"ideal\"".into())
                })?;
                c.validate()?;
            }
            ProtocolKind::Numachine => {
                let c = self.numachine.as_ref().ok_or_else(|| {
                    ConfigError(
                        "numachine: section [numachine] missing for protocol \"numachine\"".into(),
                    )
                })?;
                c.validate(self.procs)?;
            }
            ProtocolKind::Flash => {
                let c = self.flash.as_ref().ok_or_else(|| {
                    ConfigError("flash: section [flash] missing for protocol \"flash\"".into())
                })?;
                c.validate(self.procs)?;
            }
            ProtocolKind::Cmp => {
                let c = self.cmp.as_ref().ok_or_else(|| {
                    ConfigError("cmp: section [cmp] missing for protocol \"cmp\"".into())
                })?;
                c.validate(self.procs)?;
            }
        }
        if let Some(o) = &self.os {
            o.validate()?;
        }
        if let Some(m) = &self.memctl {
            m.validate(self.memory_line_bytes())?;
        }
        if self.cpu.system_cores as usize >= self.procs {
            return err(
                "cpu.system_cores",
                format!(
                    "{} leaves no core of {} for the program",
                    self.cpu.system_cores, self.procs
                ),
            );
        }
        let under_cmp = self.caches.l2.is_none() && self.protocol == ProtocolKind::Cmp;
        if self.caches.l1d.write == WritePolicy::WriteThrough && !under_cmp {
            return err(
                "caches.l1d.write",
                "write-through is modelled for an L1 D that is the last private level (no caches.l2) on the `cmp` system, whose slices take the stores",
            );
        }
        if self.caches.l1d.prefetch == PrefetchKind::Stream && !under_cmp {
            return err(
                "caches.l1d.prefetch",
                "the stream prefetcher (L1P) is modelled in front of the `cmp` system's crossbar, for an L1 D without a private L2 below it",
            );
        }
        if self.caches.l1d_write_through {
            // Memory is kept current by the stores themselves, so a line is dropped without a
            // write-back; with one processor no other cache can want it. Several processors
            // would need write-through coherence states, which the protocols do not have.
            if self.procs != 1 || self.protocol != ProtocolKind::Ideal {
                return err(
                    "caches.l1d_write_through",
                    "needs one processor on the `ideal` protocol (procs = 1)",
                );
            }
            if self.memctl_enabled().is_none() {
                return err(
                    "caches.l1d_write_through",
                    "needs an enabled [memctl] memory controller to write through to",
                );
            }
        }
        Ok(())
    }

    /// The memory controller's settings when the preset enables one.
    pub fn memctl_enabled(&self) -> Option<&crate::mem::config::MemCtlCfg> {
        self.memctl.as_ref().filter(|m| m.enabled)
    }

    /// The machine's clock domains: `cpu`, `system`, and `ps` when given.
    pub fn clocks_built(&self) -> Result<engine::Clocks, engine::time::ClockError> {
        let mut v = vec![
            ("cpu", self.clocks.cpu_hz),
            ("system", self.clocks.system_hz),
        ];
        if let Some(ps) = self.clocks.pipeline_status_hz {
            v.push(("ps", ps));
        }
        engine::Clocks::new(&v)
    }

    /// Coherence unit in bytes: the line of the cores' last private level.
    pub fn line_bytes(&self) -> u64 {
        self.caches.last_private().line_bytes
    }

    /// Bytes of one memory transfer, the line of a memory controller's buffer entries: the
    /// shared level's line on the `cmp` system (its slices fill and write back their own
    /// lines), the coherence line elsewhere.
    pub fn memory_line_bytes(&self) -> u64 {
        match (self.protocol, self.caches.shared.first()) {
            (ProtocolKind::Cmp, Some(level)) => level.cache.line_bytes,
            _ => self.line_bytes(),
        }
    }

    /// Number of memory nodes (homes) in this machine.
    pub fn nodes(&self) -> usize {
        match self.protocol {
            ProtocolKind::Ideal => self.ideal.as_ref().map(|c| c.nodes).unwrap_or(1),
            ProtocolKind::Numachine => {
                let c = self.numachine.as_ref().unwrap();
                self.procs.div_ceil(c.procs_per_station)
            }
            ProtocolKind::Flash => self.procs,
            // One uniform memory behind the slices: the controllers interleave addresses.
            ProtocolKind::Cmp => 1,
        }
    }

    /// The node (memory home) that processor `p` belongs to.
    pub fn node_of_proc(&self, p: usize) -> usize {
        match self.protocol {
            ProtocolKind::Ideal => p % self.nodes(),
            ProtocolKind::Numachine => p / self.numachine.as_ref().unwrap().procs_per_station,
            ProtocolKind::Flash => p,
            ProtocolKind::Cmp => 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_presets_parse() {
        for (name, _) in BUILTIN {
            let p = Preset::builtin(name).unwrap();
            assert_eq!(&p.name, name);
        }
    }

    #[test]
    fn unknown_field_is_named() {
        let text = BUILTIN[0].1.replace("[cpu]", "[cpu]\nbogus_knob = 3");
        let e = Preset::parse(&text, "x.toml").unwrap_err();
        assert!(e.0.contains("bogus_knob"), "{e}");
        assert!(e.0.contains("x.toml"), "{e}");
    }

    #[test]
    fn bad_cache_geometry_names_the_field() {
        let mut p = Preset::builtin("numachine").unwrap();
        p.caches.l2.as_mut().unwrap().size_bytes = 1000;
        assert!(p
            .validate()
            .unwrap_err()
            .0
            .starts_with("caches.l2.size_bytes"));
        let mut p = Preset::builtin("numachine").unwrap();
        p.caches.l1d.line_bytes = 2 * p.line_bytes();
        assert!(p
            .validate()
            .unwrap_err()
            .0
            .starts_with("caches.l1d.line_bytes"));
    }

    #[test]
    fn l2_smaller_than_the_inclusive_l1s_is_refused() {
        // Issue 17: an 8 KiB L2 under two 16 KiB L1s.
        let text = Preset::builtin("numachine").unwrap();
        let mut p = text.clone();
        p.caches.l2.as_mut().unwrap().size_bytes = 8192;
        let e = p.validate().unwrap_err();
        assert!(
            e.0.starts_with("caches.l2.size_bytes: 8192 is smaller"),
            "{e}"
        );
        assert!(e.0.contains("16384 + l1d 16384 = 32768"), "{e}");
        // Exactly the two L1s together is accepted.
        let mut p = text;
        p.caches.l2.as_mut().unwrap().size_bytes = 32768;
        p.validate().unwrap();
    }

    #[test]
    fn huge_caches_and_pointer_stores_are_refused_not_allocated() {
        // Fuzz case preset 51466 (PMUSIM_FUZZ_CASES=1000000): a 16 GiB L2 on flash was
        // accepted and Machine::new allocated gigabytes for 20 s.
        let text = BUILTIN.iter().find(|b| b.0 == "flash").unwrap().1;
        let e = Preset::parse(
            &text.replace(
                "l2 = { size_bytes = 1048576",
                "l2 = { size_bytes = 17179869184",
            ),
            "f.toml",
        )
        .unwrap_err();
        assert!(
            e.0.starts_with("f.toml: caches.l2.size_bytes: 17179869184 bytes is 134217728 lines of 128 bytes; a cache holds at most 4194304 lines"),
            "{e}"
        );
        // Within the per-cache bound but too many over 1024 processors.
        let p = Preset::builtin("flash").unwrap();
        let mut q = p.clone();
        q.caches.l2.as_mut().unwrap().size_bytes = 64 << 20;
        let e = q.with_procs(1024).unwrap_err();
        assert!(
            e.0.starts_with(
                "caches: 1024 processors with 525824 cache lines each hold 538443776 lines in all"
            ),
            "{e}"
        );
        // The built-in presets at 1024 processors stay within the bounds.
        for (name, _) in BUILTIN {
            let p = Preset::builtin(name).unwrap();
            let per = p.caches.l1i.lines()
                + p.caches.l1d.lines()
                + p.caches.l2.as_ref().map_or(0, |c| c.lines());
            let shared: u64 = p.caches.shared.iter().map(|s| s.cache.lines()).sum();
            assert!(per * 1024 + shared <= MAX_TOTAL_CACHE_LINES, "{name}");
        }
        // FLASH's pointer stores: one per node.
        let mut q = p;
        q.flash.as_mut().unwrap().pointer_store_entries = u32::MAX;
        let e = q.validate().unwrap_err();
        assert!(e.0.starts_with("flash.pointer_store_entries: "), "{e}");
    }

    #[test]
    fn each_zero_numachine_width_names_its_field() {
        let text = BUILTIN.iter().find(|b| b.0 == "numachine").unwrap().1;
        for f in [
            "bus_bytes_per_cycle",
            "ring_bytes_per_slot",
            "timeout_bus_cycles",
            "backoff_bus_cycles",
            "nc_assoc",
        ] {
            let line = text
                .lines()
                .find(|l| l.split('=').next().unwrap().trim() == f)
                .unwrap_or_else(|| panic!("{f} not in the preset"));
            let e = Preset::parse(&text.replace(line, &format!("{f} = 0")), "n.toml").unwrap_err();
            assert!(
                e.0.starts_with(&format!("n.toml: numachine.{f}: ")),
                "{f}: {e}"
            );
        }
    }

    #[test]
    fn bad_tlb_settings_name_the_field() {
        let edit = |from: &str, to: &str| {
            let text = BUILTIN[0].1;
            assert!(text.contains(from));
            Preset::parse(&text.replace(from, to), "t.toml")
        };
        let e = edit("wired = 0", "wired = 48").unwrap_err();
        assert!(e.0.starts_with("t.toml: cpu.tlb.wired"), "{e}");
        let e = edit("pages_per_entry = 2", "pages_per_entry = 3").unwrap_err();
        assert!(e.0.starts_with("t.toml: cpu.tlb.pages_per_entry"), "{e}");
        let e = edit("entries = 48", "entries = 0").unwrap_err();
        assert!(e.0.starts_with("t.toml: cpu.tlb.entries"), "{e}");
        let e = edit("wired = 0", "wired = 0\nsize = 3").unwrap_err();
        assert!(e.0.contains("size"), "{e}");
        let p = edit("enabled = false", "enabled = true").unwrap();
        assert!(p.cpu.tlb.enabled && p.cpu.tlb.entries == 48);
        // A TLB section with the default values is not serialized (run documents unchanged).
        let v = toml::to_string(&Preset::builtin("numachine").unwrap()).unwrap();
        assert!(!v.contains("tlb"));
    }
}
