//! FlashPoint: performance monitoring inside the FLASH coherence protocol (seed 004, 3.1.3 to
//! 3.2.4). The protocol is a superset of DP: the same handlers with FlashPoint's added PP
//! instructions on their paths (`flash::pp`: their cost is measured, not configured), plus
//! three command handlers (`FPBinAssign`, `FPProcDelta`, `FPRecordRead`).
//!
//! # State (seed 004, "Performance Data Structures")
//! - **Header spare bits**: bit 16 = warm bit, bits 17–26 = 10-bit bin (`dir::FP_WARM`,
//!   `dir::FP_BIN_MASK`), written only through `Directory::set_spare`.
//! - **Per-processor statistics records** indexed by (procedure, bin), [`Record`], at simulated
//!   addresses: node `n`'s record of (procedure `p`, bin `b`), field `f`, is at
//!   `MAGIC_BASE + FP_STATS_OFF + (n << 24) + (p * bins + b) * record_bytes + 8 * f` and an
//!   uncached load there returns it (run by the record-read handler, charged PP time), which is
//!   how a program reads its statistics back; the monitor crate reads the same values from
//!   [`FlashPoint::records`]. With 16 procedures of 128 bins of 128 bytes the region is
//!   256 KB per node, the seed's "approximately 256 KB".
//!
//! # Commands (seed 004, "Program Access to Performance State")
//! - **Bin assignment**: an uncached store to `MAGIC_BASE + FP_BIN_CMD_OFF + 8 * bin` whose
//!   data is `start_line << 24 | length_in_lines`. The PP answers at once and then walks the
//!   headers, setting the bin and clearing the warm bit: `bin_cmd_latency` PP cycles, plus
//!   `bin_cmd_per_line` occupancy per header. Choice: the issuing node's PP walks every line of
//!   the range (FLASH would send the remote part to the other homes). Ranges of 2^24 lines or
//!   more are split into several commands.
//! - **Procedure delta**: an uncached load from `MAGIC_BASE + FP_PROC_CMD_OFF + (delta & 0xFFF)`
//!   (the page offset carries the delta, 12-bit two's complement; larger deltas are split). The
//!   PP adds the delta to its current-procedure register (footnote 2: a shift and an add). With
//!   `fence` (the seed's default, 3.2.4) the processor first stalls `fence_cycles` processor
//!   cycles for the memory fence; `fence = false` is the seed's proposed cheaper variant.
//!   Only in FP-Proc; FP-NoProc keeps everything in procedure 0.
//! - **By process** (issue 15; [`FlashPoint::by_process`]): under an operating system the
//!   register is also switched with the thread. Each process gets its own record array
//!   (procedure slots `pid * span ..`), and the switch path issues the same procedure-delta
//!   command from the outgoing thread's slot to the incoming one's (in FP-Proc the slot
//!   follows the thread's procedure at every switch even without it). A miss is recorded
//!   after its reply, while the requesting thread still holds the processor (a blocking
//!   processor switches only between misses), so every record belongs to the process the
//!   ground truth charges it to (`GroundTruth::per_process`).
//! - Allocations made before the threads start (`Setup::alloc`, where the SPLASH kernels
//!   allocate, as G_MALLOC in SPLASH's initialization) are binned by the home PPs at time 0
//!   without cost ([`FlashPoint::setup_assign`]): the seed measures the parallel section only
//!   ("initialization is not included", 3.2.3). The lines so binned are counted
//!   (`FpCounters::setup_lines`). Allocations during the run (`Ctx::alloc`) issue real
//!   commands and pay for them.
//!
//! # What is counted, and where (augmented handlers)
//! - The **home** handler that serves a Get/GetX/Upgrade (PILocal*, NILocal*) copies the bin and
//!   warm bit of the header into the transaction (`hdr.bin = h.FPBin; hdr.warm = h.FPWarm`,
//!   Figure 4) and sets the warm bit. Choice: these two fields travel with every message of the
//!   transaction (reply, forward to a dirty owner, the owner's reply); the simulator keeps them
//!   in a per-transaction slot instead of widening the message (`Tx`: per requester and
//!   line, which names the transaction: a processor has one outstanding miss per line, up
//!   to `[cpu.nonblocking] mshrs` in all). A NACKed request carries nothing and leaves the bit.
//!   The home also counts the invalidations it sends on the requester's behalf.
//! - The handler that **sends the reply to the processor** (PILocal* at the home, NIRemotePut /
//!   NIRemotePutX / NIRemoteUpgradeAck at a remote requester, NIInvalAck when it releases a
//!   held exclusive reply, NILocalSWB/OwnXfer/FwdMiss for a home requester served through the
//!   owner) updates the requester's record of (current procedure, bin) after the send
//!   (Figure 3): read or write miss, local or remote (the line's home is the requester's node
//!   or not), latency, cold (warm bit was 0), invalidations, invalidation misses.
//! - **Latency** comes from the counter at the processor interface (3.1.4): it starts when the
//!   request arrives from the processor bus (kept across NACK retries; restarted after an
//!   upgrade is cancelled) and stops when the reply is handed to the processor bus; the PP
//!   reads it after the send. In system cycles. The ground truth measures from the processor's
//!   issue to the fill, one MAGIC cycle (`cpu.inbound_cycles`) longer.
//! - **Invalidation misses**: NIInval (and an exclusive intervention) records the line in the
//!   node's table of invalidated lines; a later data reply for it is an invalidation miss.
//!   Unlike the ground truth's `coherence` class, an invalidation that finds the copy already
//!   replaced still marks the line.
//! - Write-backs, NACKs, forwards and uncached accesses are not counted (the seed's records
//!   hold misses).
use crate::addr::{Addr, StructId, UNNAMED};
use crate::flash::dir::{self, Directory, Header, FP_BIN_MASK, FP_BIN_SHIFT, FP_WARM};
use crate::flash::handlers::{Handler, Input, Kind, Out, Run, Send};
use crate::msg::{ProcMsg, SysMsg};
use crate::uncached::{Cost, Owner, Windows};
use engine::{Clocks, Tick};
use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Which coherence protocol the `flash` preset runs (`[flash] protocol`, `--protocol`).
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FlashProtocol {
    /// FLASH's default dynamic pointer allocation protocol, unmonitored.
    #[default]
    #[serde(rename = "dp")]
    Dp,
    /// FlashPoint with per-data-structure statistics only.
    #[serde(rename = "fp-noproc")]
    FpNoProc,
    /// FlashPoint with per-data-structure and per-procedure statistics.
    #[serde(rename = "fp-proc")]
    FpProc,
}

impl FlashProtocol {
    pub const ALL: [FlashProtocol; 3] = [
        FlashProtocol::Dp,
        FlashProtocol::FpNoProc,
        FlashProtocol::FpProc,
    ];
    pub fn parse(s: &str) -> Result<FlashProtocol, String> {
        match s {
            "dp" => Ok(FlashProtocol::Dp),
            "fp-noproc" => Ok(FlashProtocol::FpNoProc),
            "fp-proc" => Ok(FlashProtocol::FpProc),
            _ => Err(format!(
                "unknown protocol `{s}`: use dp, fp-noproc or fp-proc"
            )),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            FlashProtocol::Dp => "dp",
            FlashProtocol::FpNoProc => "fp-noproc",
            FlashProtocol::FpProc => "fp-proc",
        }
    }
    /// The seed's label (Tables 1–5).
    pub fn label(self) -> &'static str {
        match self {
            FlashProtocol::Dp => "DP",
            FlashProtocol::FpNoProc => "FP-NoProc",
            FlashProtocol::FpProc => "FP-Proc",
        }
    }
}

/// FlashPoint's added PP cycles on one handler (added to its `extra_*` slots).
#[derive(Deserialize, Serialize, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Extra {
    /// Instructions before the send (copying bin and warm bit into the reply header).
    #[serde(default)]
    pub latency: u32,
    /// Instructions in all (after the send: the statistics update).
    #[serde(default)]
    pub occupancy: u32,
}

/// `[flash.flashpoint]`: every cost FlashPoint adds, by name (DESIGN "explicit
/// intrusiveness"). Used only when `protocol` is fp-noproc or fp-proc.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct FpCfg {
    /// Added PP cycles per handler name, on top of the measured cost (none by default:
    /// FlashPoint's added instructions are part of the handlers' paths, `flash::pp`).
    pub extra: BTreeMap<String, Extra>,
    /// Bin assignment: PP cycles to the acknowledgement of the uncached store.
    pub bin_cmd_latency: u32,
    /// Bin assignment: PP occupancy per directory header walked.
    pub bin_cmd_per_line: u32,
    /// Procedure delta: PP latency and occupancy (a shift and an add, footnote 2).
    pub proc_cmd_latency: u32,
    pub proc_cmd_occupancy: u32,
    /// Reading a statistics word back: PP latency and occupancy.
    pub read_cmd_latency: u32,
    pub read_cmd_occupancy: u32,
    /// Issue a memory fence before each procedure-delta command (seed 3.2.4: FlashPoint does).
    pub fence: bool,
    /// Processor cycles the fence stalls (drains the R10000's load/store queue). Estimate.
    pub fence_cycles: u32,
    /// Bins per procedure in the record array (a power of two: the procedure adjustment is a
    /// shift and an add). Bins `bins - 1` and above share the last record (the PP clamps the
    /// record index, so a bin never indexes into the next procedure's array).
    pub bins: u32,
    /// Bytes per record (11 counters used of 16 slots).
    pub record_bytes: u32,
}

impl Default for FpCfg {
    fn default() -> Self {
        FpCfg {
            extra: BTreeMap::new(),
            bin_cmd_latency: 4,
            bin_cmd_per_line: 2,
            proc_cmd_latency: 2,
            proc_cmd_occupancy: 3,
            read_cmd_latency: 4,
            read_cmd_occupancy: 6,
            fence: true,
            fence_cycles: 20,
            bins: 128,
            record_bytes: 128,
        }
    }
}

impl FpCfg {
    pub fn validate(&self) -> Result<(), String> {
        for n in self.extra.keys() {
            if Handler::from_name(n).is_none() {
                return Err(format!("flash.flashpoint.extra.{n}: no such handler"));
            }
        }
        if !self.bins.is_power_of_two() || self.bins > 1024 {
            return Err("flash.flashpoint.bins: a power of two, at most 1024".into());
        }
        if self.record_bytes < 8 * Record::FIELDS.len() as u32 {
            return Err(format!(
                "flash.flashpoint.record_bytes: at least {}",
                8 * Record::FIELDS.len()
            ));
        }
        Ok(())
    }
}

/// Uncached commands to the node controller (FlashPoint bin assignment, procedure deltas).
pub const MAGIC_BASE: Addr = 0xE0_0000_0000;
/// Offsets of FlashPoint's command and record regions from `MAGIC_BASE`.
pub const FP_BIN_CMD_OFF: u64 = 0x1000_0000;
pub const FP_PROC_CMD_OFF: u64 = 0x2000_0000;
pub const FP_STATS_OFF: u64 = 0x1_0000_0000;
const FP_STATS_END: u64 = 0x2_0000_0000;

/// The bin of a data structure: its memory-map id + 1 (bin 0 = never assigned), capped at
/// 1023 (the 10-bit field; structure 1022 and later share bin 1023).
pub fn bin_of(id: StructId) -> u16 {
    if id == UNNAMED {
        0
    } else {
        (id as u64 + 1).min(1023) as u16
    }
}
/// The structure of a bin (`None` for bin 0).
pub fn struct_of(bin: u16) -> Option<StructId> {
    (bin > 0).then(|| bin as StructId - 1)
}

/// One statistics record (seed 004: "read misses, write misses, local vs. remote misses, and
/// so on"); latencies in system cycles.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Record {
    pub rd_miss_local: u64,
    pub rd_lat_local: u64,
    pub rd_miss_remote: u64,
    pub rd_lat_remote: u64,
    pub wr_miss_local: u64,
    pub wr_lat_local: u64,
    pub wr_miss_remote: u64,
    pub wr_lat_remote: u64,
    pub cold: u64,
    pub invalidations: u64,
    pub inval_misses: u64,
}

impl Record {
    pub const FIELDS: [&'static str; 11] = [
        "rd_miss_local",
        "rd_lat_local",
        "rd_miss_remote",
        "rd_lat_remote",
        "wr_miss_local",
        "wr_lat_local",
        "wr_miss_remote",
        "wr_lat_remote",
        "cold",
        "invalidations",
        "inval_misses",
    ];
    pub fn get(&self, f: usize) -> u64 {
        [
            self.rd_miss_local,
            self.rd_lat_local,
            self.rd_miss_remote,
            self.rd_lat_remote,
            self.wr_miss_local,
            self.wr_lat_local,
            self.wr_miss_remote,
            self.wr_lat_remote,
            self.cold,
            self.invalidations,
            self.inval_misses,
        ]
        .get(f)
        .copied()
        .unwrap_or(0)
    }
    pub fn add(&mut self, o: &Record) {
        self.rd_miss_local += o.rd_miss_local;
        self.rd_lat_local += o.rd_lat_local;
        self.rd_miss_remote += o.rd_miss_remote;
        self.rd_lat_remote += o.rd_lat_remote;
        self.wr_miss_local += o.wr_miss_local;
        self.wr_lat_local += o.wr_lat_local;
        self.wr_miss_remote += o.wr_miss_remote;
        self.wr_lat_remote += o.wr_lat_remote;
        self.cold += o.cold;
        self.invalidations += o.invalidations;
        self.inval_misses += o.inval_misses;
    }
    pub fn reads(&self) -> u64 {
        self.rd_miss_local + self.rd_miss_remote
    }
    pub fn writes(&self) -> u64 {
        self.wr_miss_local + self.wr_miss_remote
    }
}

/// What the home put in the transaction for requester `req`.
#[derive(Clone, Copy, Debug, Default)]
struct Carried {
    bin: u16,
    warm: bool,
    invals: u32,
}

/// One outstanding miss of a node's processor as FlashPoint follows it, matched by line
/// (a processor with several MSHRs has several, `[cpu.nonblocking] mshrs`; one line has
/// one at most): the processor-interface latency counter's start and what the home put
/// in the transaction.
#[derive(Clone, Copy, Debug)]
struct Tx {
    line: u64,
    pi_start: Option<Tick>,
    carried: Option<Carried>,
}

/// Node `n`'s transaction for `line`, made if it has none.
fn tx_for(txs: &mut Vec<Tx>, line: u64) -> &mut Tx {
    match txs.iter().position(|x| x.line == line) {
        Some(i) => &mut txs[i],
        None => {
            txs.push(Tx {
                line,
                pi_start: None,
                carried: None,
            });
            txs.last_mut().unwrap()
        }
    }
}

/// Counts of FlashPoint's own activity.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FpCounters {
    pub bin_cmds: u64,
    pub lines_binned: u64,
    /// Lines binned at time 0 for allocations made before the threads started (no cost).
    pub setup_lines: u64,
    pub proc_cmds: u64,
    pub record_reads: u64,
    /// Replies with no transaction state from the home (should stay 0; the header's bin is
    /// used instead).
    pub unmatched_replies: u64,
}

/// FlashPoint's protocol-side state.
pub struct FlashPoint {
    pub cfg: FpCfg,
    pub protocol: FlashProtocol,
    period: Tick,
    /// Per node: its processor's outstanding misses (`Tx`).
    txs: Vec<Vec<Tx>>,
    /// The current-procedure register of each node's PP (index into the record array).
    cur_proc: Vec<i64>,
    /// Procedure slots of one process's record array when the records are kept by process
    /// ([`FlashPoint::by_process`]; 0: one array for every process, as the seed has it).
    span: u32,
    invalidated: Vec<FxHashSet<u64>>,
    /// Per node: (procedure, bin) -> record.
    records: Vec<FxHashMap<(u32, u16), Record>>,
    /// Whether some miss of a bin above `bins - 1` went to the shared last record.
    pub shared_last_record: bool,
    pub counters: FpCounters,
}

/// What a FlashPoint command costs and answers.
pub struct CmdRun {
    /// Which of FlashPoint's added handlers ran.
    pub handler: Handler,
    pub value: u64,
    pub latency: u32,
    pub occupancy: u32,
}

impl FlashPoint {
    pub fn new(cfg: FpCfg, protocol: FlashProtocol, nodes: usize, period: Tick) -> FlashPoint {
        FlashPoint {
            cfg,
            protocol,
            period,
            txs: vec![Vec::new(); nodes],
            cur_proc: vec![0; nodes],
            span: 0,
            invalidated: vec![FxHashSet::default(); nodes],
            records: vec![FxHashMap::default(); nodes],
            shared_last_record: false,
            counters: FpCounters::default(),
        }
    }

    /// The record index of `bin` in a procedure's array: the bin, or the last record for bins
    /// beyond the array (`FpCfg::bins`).
    pub fn record_of(&self, bin: u16) -> u16 {
        bin.min(self.cfg.bins as u16 - 1)
    }

    /// The name of record index `rec`: its data structure, `(unbinned)` for bin 0, or, for the
    /// last record when bins beyond the array shared it, the range of bins it holds.
    pub fn record_name(&self, rec: u16, map: &crate::addr::MemoryMap) -> String {
        let last = self.cfg.bins as u16 - 1;
        if rec == last && self.shared_last_record {
            return format!("(bins {last}-1023, one shared record)");
        }
        match struct_of(rec) {
            None => "(unbinned)".to_string(),
            Some(id) if (id as usize) < map.regions().len() => map.name_of(id).to_string(),
            Some(id) => format!("(bin {})", id + 1),
        }
    }

    /// Node `n`'s records: (procedure, record index) -> record. The record index is the bin
    /// (`record_of`), so a record below `bins - 1` holds exactly one bin.
    pub fn records(&self, n: usize) -> &FxHashMap<(u32, u16), Record> {
        &self.records[n]
    }
    pub fn nodes(&self) -> usize {
        self.records.len()
    }

    /// The uncached commands that assign bin `bin_of(id)` to `[a, a + bytes)`.
    pub fn bin_commands(a: Addr, bytes: u64, id: StructId, line_shift: u32) -> Vec<(Addr, u64)> {
        let first = a >> line_shift;
        let last = (a + bytes.max(1) - 1) >> line_shift;
        let mut v = Vec::new();
        let mut l = first;
        while l <= last {
            let len = (last - l + 1).min((1 << 24) - 1);
            v.push((
                MAGIC_BASE + FP_BIN_CMD_OFF + 8 * bin_of(id) as u64,
                l << 24 | len,
            ));
            l += len;
        }
        v
    }

    /// The procedure-delta command address for a change from `prev` to `cur` (FP-Proc only).
    /// Deltas beyond the 12-bit field are not split: they saturate (documented; procedure
    /// numbers here are small).
    pub fn proc_command(&self, prev: u32, cur: u32) -> Option<Addr> {
        if self.protocol != FlashProtocol::FpProc {
            return None;
        }
        let d = (cur as i64 - prev as i64).clamp(-2048, 2047);
        Some(MAGIC_BASE + FP_PROC_CMD_OFF + (d as u64 & 0xFFF))
    }

    /// Procedure slots the record region of a node holds: its 16 MB (the node's field of a
    /// record address, `n << 24`) over one procedure's array of `bins` records.
    pub fn slots(&self) -> u64 {
        (1u64 << 24) / (self.cfg.bins as u64 * self.cfg.record_bytes as u64)
    }

    /// Keeps the records by process (`--monitor flashpoint --monitor-process NAME`, issue 15):
    /// process `pid`'s record array starts at procedure slot `pid * span`, and the operating
    /// system's switch path moves each PP's current-procedure register from the outgoing
    /// thread's slot to the incoming one's with a procedure-delta command
    /// ([`FlashPoint::switch_command`]), so every miss is recorded in the array of the process
    /// running on the requesting processor. `boot[n]` is the (process, procedure) of the
    /// thread node `n`'s processor holds at boot: the register starts on its slot, without
    /// cost, as the machine loads that thread's MSR. `span` procedure slots times the processes must fit the node's record region, and
    /// at most 2,048 slots, so that every switch is one command (the delta's 12-bit field).
    pub fn by_process(
        &mut self,
        span: u32,
        processes: u32,
        boot: &[(u16, u32)],
    ) -> Result<(), String> {
        let need = span as u64 * processes as u64;
        let room = self.slots().min(2048);
        if span == 0 || need > room {
            return Err(format!(
                "FlashPoint by process: {processes} processes x {span} procedure slots need {need} record arrays; a node's 16 MB record region holds {} of {} bytes (flash.flashpoint.bins x record_bytes), and a switch's 12-bit procedure delta reaches 2,048: run fewer processes",
                self.slots(),
                self.cfg.bins as u64 * self.cfg.record_bytes as u64
            ));
        }
        self.span = span;
        let slots: Vec<i64> = boot
            .iter()
            .map(|&(pid, p)| self.slot_of(pid, p) as i64)
            .collect();
        for (c, s) in self.cur_proc.iter_mut().zip(slots) {
            *c = s;
        }
        Ok(())
    }

    /// Procedure slots per process when the records are kept by process, else `None`.
    pub fn process_span(&self) -> Option<u32> {
        (self.span > 0).then_some(self.span)
    }

    /// The current-procedure register's value for a thread of process `pid` in procedure
    /// `procedure`: the process's array (by process only) plus the procedure (FP-Proc only).
    pub fn slot_of(&self, pid: u16, procedure: u32) -> u32 {
        let base = pid as u32 * self.span;
        match self.protocol {
            FlashProtocol::FpProc => base + procedure,
            _ => base,
        }
    }

    /// The process (by process only) and procedure of a record's procedure slot.
    pub fn split_slot(&self, slot: u32) -> (Option<u16>, u32) {
        match self.span {
            0 => (None, slot),
            s => (Some((slot / s) as u16), slot % s),
        }
    }

    /// The procedure-delta command the operating system's switch path issues on a processor
    /// switched from a thread of process `from.0` in procedure `from.1` to one of `to`: the
    /// register must follow the thread (FP-Proc: its procedure; by process: its process's
    /// array). `None` when the register stays (FP-NoProc not by process, or equal slots).
    pub fn switch_command(&self, from: (u16, u32), to: (u16, u32)) -> Option<Addr> {
        let (a, b) = (self.slot_of(from.0, from.1), self.slot_of(to.0, to.1));
        (a != b).then(|| {
            let d = (b as i64 - a as i64).clamp(-2048, 2047);
            MAGIC_BASE + FP_PROC_CMD_OFF + (d as u64 & 0xFFF)
        })
    }

    /// The current-procedure register of node `n`'s PP.
    pub fn register(&self, n: usize) -> i64 {
        self.cur_proc[n]
    }

    /// Bins `[a, a + bytes)` directly (allocations before the threads start; no cost).
    pub fn setup_assign(
        &mut self,
        d: &mut Directory,
        a: Addr,
        bytes: u64,
        id: StructId,
        shift: u32,
    ) {
        for (_, v) in Self::bin_commands(a, bytes, id, shift) {
            let n = assign(d, v, bin_of(id));
            self.counters.setup_lines += n;
        }
    }

    /// Whether `addr` is one of FlashPoint's command or record addresses.
    /// Registers FlashPoint's three MAGIC windows (bin assignment, procedure deltas, record
    /// reads) with their command latencies in MAGIC (system) cycles; a bin assignment also
    /// occupies the PP `bin_cmd_per_line` per line it bins (seed 004, 3.2.3).
    pub fn register_windows(&self, w: &mut Windows, clocks: &Clocks) -> Result<(), String> {
        let c = &self.cfg;
        let cost = |cycles: u32| Cost {
            cycles: cycles as u64,
            clock: "system",
        };
        let regions = [
            (
                FP_BIN_CMD_OFF,
                FP_PROC_CMD_OFF,
                "flashpoint.bin",
                c.bin_cmd_latency,
            ),
            (
                FP_PROC_CMD_OFF,
                FP_STATS_OFF,
                "flashpoint.procedure",
                c.proc_cmd_latency,
            ),
            (
                FP_STATS_OFF,
                FP_STATS_END,
                "flashpoint.records",
                c.read_cmd_latency,
            ),
        ];
        for (from, to, name, cycles) in regions {
            w.register(
                clocks,
                MAGIC_BASE + from,
                to - from,
                Owner::MemorySystem,
                name,
                cost(cycles),
            )?;
        }
        Ok(())
    }

    pub fn is_command(addr: Addr) -> bool {
        (MAGIC_BASE + FP_BIN_CMD_OFF..MAGIC_BASE + FP_STATS_END).contains(&addr)
    }

    /// Runs a FlashPoint command (one of the added handlers) at `node`.
    pub fn command(
        &mut self,
        d: &mut Directory,
        node: usize,
        addr: Addr,
        write: Option<u64>,
    ) -> CmdRun {
        let off = addr - MAGIC_BASE;
        let c = &self.cfg;
        if off >= FP_STATS_OFF {
            self.counters.record_reads += 1;
            let o = off - FP_STATS_OFF;
            let n = (o >> 24) as usize;
            let idx = (o & 0xFF_FFFF) / c.record_bytes as u64;
            let f = ((o & 0xFF_FFFF) % c.record_bytes as u64 / 8) as usize;
            let (p, b) = ((idx / c.bins as u64) as u32, (idx % c.bins as u64) as u16);
            let value = self
                .records
                .get(n)
                .and_then(|r| r.get(&(p, b)))
                .map_or(0, |r| r.get(f));
            CmdRun {
                handler: Handler::FPRecordRead,
                value,
                latency: c.read_cmd_latency,
                occupancy: c.read_cmd_occupancy,
            }
        } else if off >= FP_PROC_CMD_OFF {
            self.counters.proc_cmds += 1;
            let d12 = (off & 0xFFF) as i64;
            let delta = if d12 >= 2048 { d12 - 4096 } else { d12 };
            self.cur_proc[node] = (self.cur_proc[node] + delta).max(0);
            CmdRun {
                handler: Handler::FPProcDelta,
                value: 0,
                latency: c.proc_cmd_latency,
                occupancy: c.proc_cmd_occupancy,
            }
        } else {
            self.counters.bin_cmds += 1;
            let bin = ((off - FP_BIN_CMD_OFF) / 8).min(1023) as u16;
            let n = write.map_or(0, |v| assign(d, v, bin));
            self.counters.lines_binned += n;
            CmdRun {
                handler: Handler::FPBinAssign,
                value: 0,
                latency: c.bin_cmd_latency,
                occupancy: c.bin_cmd_latency + c.bin_cmd_per_line * n as u32,
            }
        }
    }

    /// A request from node `node`'s processor arrives on the processor bus at `t`: the latency
    /// counter starts (unless it runs for a NACKed earlier attempt).
    pub fn pi_request(&mut self, node: usize, t: Tick, m: &ProcMsg) {
        if let ProcMsg::Read { line } | ProcMsg::ReadEx { line } | ProcMsg::Upgrade { line } = *m {
            tx_for(&mut self.txs[node], line).pi_start.get_or_insert(t);
        }
    }

    /// After a handler ran at `node` (before its sends leave): the home side of FlashPoint
    /// (copy bin and warm into the transaction, set the warm bit, count invalidations) and the
    /// invalidated-lines table. `run` is the handler that ran on `input` (its line's header
    /// was `before`), `sends` what it is about to send.
    pub fn after_handler(
        &mut self,
        d: &mut Directory,
        node: u16,
        input: &Input,
        run: &Run,
        before: u64,
        sends: &[Send],
    ) {
        let (handler, line) = (run.handler, run.line);
        use Handler::*;
        let req = match (handler, input) {
            (PILocalGet | PILocalGetX | PILocalUpgrade, _) => Some(node),
            (NILocalGet | NILocalGetX | NILocalUpgrade, Input::Ni(m)) => Some(m.req),
            _ => None,
        };
        let mut invals = 0;
        for s in sends {
            match s.out {
                Out::Net(_, m) if m.kind == Kind::Inval => invals += 1,
                Out::Proc(SysMsg::Invalidate { line, .. })
                | Out::Proc(SysMsg::Intervention {
                    line,
                    exclusive: true,
                }) => {
                    if req.is_some() {
                        invals += 1;
                    }
                    self.invalidated[node as usize].insert(line);
                }
                _ => {}
            }
        }
        if let Some(r) = req {
            let nacked = sends.iter().any(|s| {
                matches!(s.out, Out::Proc(SysMsg::Nack { .. }))
                    || matches!(s.out, Out::Net(_, m) if m.kind == Kind::Nack)
            });
            if !nacked {
                tx_for(&mut self.txs[r as usize], line).carried = Some(Carried {
                    bin: before.fp_bin(),
                    warm: before.flag(FP_WARM),
                    invals,
                });
                let h = d.header(line);
                d.set_spare(line, (h & dir::FP_SPARE_MASK) | FP_WARM);
            }
        }
    }

    /// A reply reaches node `node`'s processor bus at `t` (sent by a handler at `node`):
    /// records a miss if it completes one. `home` is the line's home.
    pub fn reply(&mut self, d: &Directory, node: u16, home: u16, t: Tick, m: &SysMsg) {
        let n = node as usize;
        let (line, write, data) = match *m {
            SysMsg::Data {
                line, exclusive, ..
            } => (line, exclusive, true),
            SysMsg::Grant { line, .. } => (line, true, false),
            SysMsg::Cancel { line } => {
                // Re-issued as a read-exclusive: its counter starts afresh.
                tx_for(&mut self.txs[n], line).pi_start = None;
                return;
            }
            _ => return,
        };
        let txs = &mut self.txs[n];
        let tx = txs
            .iter()
            .position(|x| x.line == line)
            .map(|i| txs.swap_remove(i));
        let lat = tx
            .and_then(|x| x.pi_start)
            .map_or(0, |s| t.saturating_sub(s) / self.period);
        let c = match tx.and_then(|x| x.carried) {
            Some(c) => c,
            None => {
                self.counters.unmatched_replies += 1;
                let h = d.header(line);
                Carried {
                    bin: h.fp_bin(),
                    warm: true,
                    invals: 0,
                }
            }
        };
        let proc_ = if self.protocol == FlashProtocol::FpProc || self.span > 0 {
            self.cur_proc[n] as u32
        } else {
            0
        };
        let inval_miss = self.invalidated[n].remove(&line) && data;
        let rec = self.record_of(c.bin);
        self.shared_last_record |= rec != c.bin;
        let r = self.records[n].entry((proc_, rec)).or_default();
        let remote = home != node;
        match (write, remote) {
            (false, false) => {
                r.rd_miss_local += 1;
                r.rd_lat_local += lat;
            }
            (false, true) => {
                r.rd_miss_remote += 1;
                r.rd_lat_remote += lat;
            }
            (true, false) => {
                r.wr_miss_local += 1;
                r.wr_lat_local += lat;
            }
            (true, true) => {
                r.wr_miss_remote += 1;
                r.wr_lat_remote += lat;
            }
        }
        if data && !c.warm {
            r.cold += 1;
        }
        r.invalidations += c.invals as u64;
        if inval_miss {
            r.inval_misses += 1;
        }
    }
}

/// Walks the headers of a bin command's range (`v = start_line << 24 | len`): sets the bin,
/// clears the warm bit. Returns the lines walked.
fn assign(d: &mut Directory, v: u64, bin: u16) -> u64 {
    let (start, len) = (v >> 24, v & 0xFF_FFFF);
    for l in start..start + len {
        let h = d.header(l);
        let mut s = h & dir::FP_SPARE_MASK;
        s &= !FP_WARM;
        s = (s & !FP_BIN_MASK) | ((bin as u64) << FP_BIN_SHIFT & FP_BIN_MASK);
        d.set_spare(l, s);
    }
    len
}
