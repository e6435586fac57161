//! The closed loop of issue 16 item 6: a tuning controller beside every memory controller that
//! reads two Addies on a period and sets the buffer's watermark and read-ahead enable.
//!
//! Two rule sets (`Rules::rule`):
//!
//! - **`Rule::Seed`**, the rules seed 002 gives in prose ("Write buffer 'hit' monitoring" and
//!   "Read buffer 'hit' monitoring"), on the seed's own measures: a write-buffer hit average
//!   below `hit_low` halves the watermark, one above `hit_high` doubles it; a read-buffer hit
//!   average below `rb_low` turns read-ahead off ("a low read buffer hit average would imply
//!   that the read prefetched data is not being used"). Kept for comparison: measured, these
//!   measures describe the buffer (accuracy, merging) but not what its settings cost in time
//!   (docs/memory-buffer.md, "The closed loop").
//! - **`Rule::Cost`** (the default): the same two Addies fed binary streams that measure what
//!   each setting costs and saves, with every constant derived from the preset's DRAM timings
//!   or from the Addie's own convergence:
//!   - *read-ahead*: Addie 1 samples every read a read-ahead affected: 1 when it was served by
//!     a line read ahead (a DRAM read saved), 0 when it had to wait for a read-ahead still
//!     occupying the DRAM. A used read-ahead saves a row-hit DRAM read less a buffer hit,
//!     `S = tCAS + tBURST - tBUFFER`; a read that arrives while a read-ahead's data is on the
//!     bus waits half a burst on average, `W = tBURST / 2`. Read-ahead pays while the used
//!     share `p` satisfies `p S > (1 - p) W`, so it is turned off when the reading is below
//!     the break-even `W / (W + S)` (2/7 on `elan`, 1/4 with the default controller).
//!   - *watermark*: Addie 0 samples every request: 1 when the watermark cost it something,
//!     0 otherwise. A request costs in two ways, the two the seed names: it was kept waiting by
//!     the write buffer (a read behind drains, a write on a full buffer: "writes from the
//!     write buffer delaying read accesses", "write buffer full"), or it was a write that
//!     missed the buffer although a buffer holding writes up to its capacity would still have
//!     had its block (a *lost hit*: one more DRAM write, the merging and collapsing a higher
//!     watermark would have allowed). Lost hits are found with shadow tags beside the buffer,
//!     as a cache's utility monitor finds the hits a larger size would have (auxiliary tag
//!     directories, Qureshi and Patt, MICRO 2006): the blocks of the last writes, up to the
//!     buffer's capacity in units, in write order, without data or timing.
//!     The loop searches the watermark that minimizes the reading by perturb and observe: it
//!     moves the watermark one step, keeps the move if the reading fell by more than the
//!     Addie's noise (the standard deviation of the difference of two readings,
//!     `sqrt(2 p (1 - p) / 2^n)`, docs/addie.md "Noise"), and otherwise returns and probes the
//!     other side next. Steps are first one entry (the units of one block: 4 words on `elan`,
//!     1 line in line mode), then, when neither side of a coarse step is better, one unit
//!     (stores that fill a block's words one by one make the drains' phase against the reads
//!     depend on the watermark's parity). After failed probes on both sides at one unit it
//!     waits 1, 3, 7, then 15 decisions before probing again with coarse steps, so a flat
//!     landscape is mostly left alone.
//!   - A decision on an Addie is taken only once it has sampled `2 * 2^n` requests since the
//!     setting it judges last changed: its time constant is 2^n samples (docs/addie.md), so
//!     after two it reflects the new setting to within e^-2 of the change (an 8-bit Addie
//!     first reaches ±3 % after a median of about 500 samples, the seed's "about 500").
//!     A read-ahead stream too sparse to give them within `retry` decisions of read-ahead
//!     going on is judged then on the share of its own samples since the change
//!     ([`Rules::share_since`]: the reading less what is left of its value at the change),
//!     once that share is farther from the break-even than its noise; before, such a stream
//!     kept read-ahead on for the rest of the run whatever its samples said.
//!
//! Read-ahead off cannot be measured by its own stream (no read-aheads, no samples); both rule
//! sets turn it on again after `retry` decisions to measure it afresh. While it is off, the
//! cost rules feed Addie 1 from shadow read lines instead ([`ShadowReads`]: 1 for a read the
//! next-line read-ahead would have served), a lower bound of the on-stream's share, and turn
//! it on at once when that reading reaches the break-even (or, before 512 samples, when the
//! share of the shadow samples since it went off is above the break-even by more than its
//! noise): a new phase that wants it does not wait for the timed retry. The cost rules, whose
//! judgement takes `2 * 2^n` affected reads, double that wait each time a retry confirms that
//! read-ahead does not pay (up to 16 times `retry`), so re-measuring a setting that keeps
//! failing takes a shrinking share of the run.
//!
//! Read-ahead can also cost hits it never shows in Addie 1: its lines evict the read buffer's
//! demand lines. The cost rules keep a third Addie ([`Loop::pollution`]) on the reads where the
//! real read buffer and the read lines a buffer without read-ahead would hold
//! ([`ShadowDemand`]) disagree: 1 for a hit read-ahead gained, 0 for one it destroyed. When
//! the gained share is below 1/2 (gained and lost hits equal) by more than that Addie's noise,
//! read-ahead goes off, and only the timed retry turns it on again (docs/memory-buffer.md,
//! "Read-ahead's pollution of the read buffer").
//!
//! Each decision is made on Addie readings only (what the hardware would have), never on the
//! exact counts; the exact ratios over the same period are recorded beside them for the report.
//!
//! - *State*: per controller, the two Addies, the setting ids, the current watermark and
//!   read-ahead, the samples since each setting changed, the search state, the decisions.
//! - *Trigger*: every `Observation::MemRequest` is a sample for the Addies whose stream it
//!   belongs to; a wake-up every `period` processor cycles is a decision.
//! - *Handler*: a decision reads both Addies (the debug port, no cost to the program) and asks
//!   for `Action::Set` on a changed setting; the machine applies it one controller cycle later
//!   and counts it in the ground truth's `probe_actions.settings`.

use crate::addie::{Addie, AddieConfig, RandomMode};
use machine::mem::buffer::flags::{self, Flags};
use machine::mem::config::MemCtlCfg;
use machine::probe::{kind, Action, Observation, Probe, ProbeClock, Signals};
use machine::settings::{SettingId, Settings};
use serde::Serialize;

/// Which rules the loop applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// Seed 002's rules on the write-buffer hit and read-buffer hit averages.
    Seed,
    /// The costs each setting trades (module docs).
    Cost,
}

/// The loop's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Rules {
    pub rule: Rule,
    /// Processor cycles between two decisions.
    pub period: u64,
    /// `Rule::Seed`: write-buffer hit average below which the watermark is halved.
    pub hit_low: f64,
    /// `Rule::Seed`: write-buffer hit average above which the watermark is doubled.
    pub hit_high: f64,
    /// `Rule::Seed`: read-buffer hit average below which read-ahead is turned off.
    pub rb_low: f64,
    /// Decisions read-ahead stays off before it is tried again.
    pub retry: u32,
    /// Addie width in bits (4..=16).
    pub width: u32,
    /// `Rule::Cost`: the watermark search's coarse step in buffer units (0: one block's
    /// units, the default).
    pub step: u32,
}

impl Default for Rules {
    fn default() -> Rules {
        Rules {
            rule: Rule::Cost,
            period: 10_000,
            hit_low: 0.25,
            hit_high: 0.5,
            rb_low: 0.25,
            retry: 8,
            width: 8,
            step: 0,
        }
    }
}

impl Rules {
    /// Checks the parameters; the message names the flag.
    pub fn validate(&self) -> Result<(), String> {
        if self.period == 0 {
            return Err("--memctl-period: must be at least 1 processor cycle".into());
        }
        let unit = |x: f64| (0.0..=1.0).contains(&x);
        if !unit(self.hit_low) || !unit(self.hit_high) || self.hit_low > self.hit_high {
            return Err(format!(
                "--memctl-hit LOW,HIGH: need 0 <= LOW <= HIGH <= 1 (got {},{})",
                self.hit_low, self.hit_high
            ));
        }
        if !unit(self.rb_low) {
            return Err(format!(
                "--memctl-rb-low: need a ratio in 0..=1 (got {})",
                self.rb_low
            ));
        }
        if !(4..=16).contains(&self.width) {
            return Err(format!(
                "--memctl-width: {} is not a width in 4..=16 bits",
                self.width
            ));
        }
        Ok(())
    }

    /// `Rule::Seed`: the next watermark for a write-buffer hit average `h`.
    pub fn watermark(&self, h: f64, w: u64, max: u64) -> u64 {
        if h < self.hit_low {
            (w / 2).max(1)
        } else if h > self.hit_high {
            (w * 2).min(max)
        } else {
            w
        }
    }

    /// Samples an Addie takes after a change before a decision on it: two time constants.
    pub fn settle(&self) -> u64 {
        2 << self.width
    }

    /// The noise of the difference of two readings of an n-bit Addie near `p`: one standard
    /// deviation, `sqrt(2 p (1 - p) / 2^n)` (docs/addie.md, "Noise"), at least one count.
    pub fn band(&self, p: f64) -> f64 {
        let n = (1u64 << self.width) as f64;
        (2.0 * p * (1.0 - p) / n).sqrt().max(1.0 / (n - 1.0))
    }

    /// The share of a stream's samples since a change, from the reading `r` of an Addie that
    /// read `r0` at the change and has taken `k` samples since: it relaxes toward the share by
    /// `1 - 2^-n` per sample (docs/addie.md), so `r = p + (r0 - p) (1 - 2^-n)^k`. Returns the
    /// estimate of `p` and its standard deviation were `p` equal to `at` (the reading's noise,
    /// `sqrt(p (1 - p) / 2^n)` settled, builds up as `1 - (1 - 2^-n)^2k`, and the estimate
    /// divides it by the weight `1 - (1 - 2^-n)^k` of the new samples); `None` without samples.
    pub fn share_since(&self, r: f64, r0: f64, k: u64, at: f64) -> Option<(f64, f64)> {
        let n = (1u64 << self.width) as f64;
        let old = (1.0 - 1.0 / n).powf(k as f64);
        let new = 1.0 - old;
        if k == 0 || new <= 0.0 {
            return None;
        }
        let sd = (at * (1.0 - at) / n * (1.0 - old * old)).sqrt() / new;
        Some(((r - r0 * old) / new, sd))
    }

    /// One line describing the rules (the study's and the report's header).
    pub fn describe(&self, cfg: Option<&MemCtlCfg>) -> String {
        match self.rule {
            Rule::Seed => format!(
                "seed 002's rules every {} processor cycles: write-buffer hit average < {} halves the watermark, > {} doubles it; read-buffer hit average < {} turns read-ahead off, retried after {} decisions; {}-bit Addies",
                self.period, self.hit_low, self.hit_high, self.rb_low, self.retry, self.width
            ),
            Rule::Cost => format!(
                "cost rules every {} processor cycles, each after {} samples since its setting changed: read-ahead off while the share of affected reads it served is below the break-even {} (W = tBURST/2 against S = tCAS + tBURST - tBUFFER), retried after {} decisions; watermark searched (perturb and observe, steps of {} then 1 unit(s), Addie-noise dead band) for the fewest requests kept waiting by the write buffer or losing a hit a full-depth buffer would have had; {}-bit Addies",
                self.period,
                self.settle(),
                cfg.map(|c| format!("{:.3}", break_even(c)))
                    .unwrap_or_else(|| "W/(W+S)".into()),
                self.retry,
                if self.step == 0 {
                    "one block".to_string()
                } else {
                    self.step.to_string()
                },
                self.width
            ),
        }
    }
}

/// The read-ahead break-even share of `Rule::Cost` from the controller's timings (module docs).
pub fn break_even(cfg: &MemCtlCfg) -> f64 {
    let w = cfg.t_burst as f64 / 2.0;
    let s = (cfg.t_cas + cfg.t_burst) as f64 - cfg.t_buffer as f64;
    w / (w + s.max(0.0))
}

/// The bit each Addie takes from a request under `rule`, or `None` when the request is not in
/// its stream; `lost`: the request is a write whose hit only a full-depth buffer would have had.
#[inline]
pub fn streams(rule: Rule, f: Flags, lost: bool) -> [Option<bool>; 2] {
    let write = f & flags::WRITE != 0;
    match rule {
        Rule::Seed => [
            write.then_some(f & flags::WRITE_HIT != 0),
            (!write).then_some(f & flags::READ_BUFFER_HIT != 0),
        ],
        Rule::Cost => [
            Some(f & flags::WRITE_DELAY != 0 || lost),
            if f & flags::READ_AHEAD_USED != 0 {
                Some(true)
            } else if f & flags::READ_AHEAD_DELAY != 0 {
                Some(false)
            } else {
                None
            },
        ],
    }
}

/// What each Addie measures, for the report.
pub fn inputs(rule: Rule) -> [&'static str; 2] {
    match rule {
        Rule::Seed => ["write-buffer hit", "read-buffer hit"],
        Rule::Cost => [
            "kept waiting by writes or lost hit",
            "read-ahead used (of affected reads)",
        ],
    }
}

/// One decision of one controller.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Decision {
    /// Tick of the wake-up.
    pub t: u64,
    /// The two Addie readings (`inputs(rule)` order).
    pub reading: [f64; 2],
    /// Exact ratios of the same streams over the requests since the previous decision
    /// (`None`: no sample).
    pub exact: [Option<f64>; 2],
    /// Settings asked for (they take effect one controller cycle later).
    pub watermark: u64,
    pub read_ahead: bool,
}

/// Shadow tags (`Rule::Cost`): the blocks of the last writes, oldest first, with the units
/// written in each, holding at most `capacity` units: the blocks a buffer draining only when
/// full would still hold. A write whose block is here is a hit at full depth.
///
/// Every written word asks whether its block is here; most blocks of a store stream are not
/// (a new block every few words), so a per-bucket count of the held blocks (`held`, by the
/// block's low bits) answers most misses without searching: a search runs only when a block
/// of the same bucket is held. The answer is the search's (test
/// `shadow_tags_with_buckets_answer_as_a_plain_search`).
#[derive(Clone, Debug)]
pub struct Shadow {
    block_shift: u32,
    unit_shift: u32,
    capacity: u32,
    units: u32,
    tags: std::collections::VecDeque<(u64, u32)>,
    /// Held blocks per bucket `block % SHADOW_BUCKETS`.
    held: [u32; SHADOW_BUCKETS],
}

/// Buckets of [`Shadow::held`]: consecutive blocks fall in distinct buckets.
const SHADOW_BUCKETS: usize = 64;

impl Shadow {
    pub fn new(cfg: &machine::mem::buffer::BufferConfig) -> Shadow {
        Shadow {
            block_shift: cfg.block_bytes.trailing_zeros(),
            unit_shift: cfg.unit_bytes.trailing_zeros(),
            capacity: cfg.capacity as u32,
            units: 0,
            tags: std::collections::VecDeque::with_capacity(cfg.capacity + 1),
            held: [0; SHADOW_BUCKETS],
        }
    }
    /// A write of one unit at `addr`: whether a full-depth buffer would have had its block.
    #[inline]
    pub fn write(&mut self, addr: u64) -> bool {
        let block = addr >> self.block_shift;
        let unit =
            1u32 << ((addr >> self.unit_shift) & ((1 << (self.block_shift - self.unit_shift)) - 1));
        let bucket = block as usize % SHADOW_BUCKETS;
        // Newest first: a store stream writes the block it wrote last (one entry per block,
        // so the order of the search does not change the answer; callgrind: `run lu -m elan
        // -s test --monitor memctl`, BENCHMARKS.md).
        let found = match self.held[bucket] {
            0 => None,
            // The newest block (a stream's next word) without the double-ended iterator.
            _ => match self.tags.back_mut() {
                Some(e) if e.0 == block => Some(e),
                _ => self.tags.iter_mut().rev().skip(1).find(|e| e.0 == block),
            },
        };
        let hit = match found {
            Some(e) => {
                if e.1 & unit == 0 {
                    e.1 |= unit;
                    self.units += 1;
                }
                true
            }
            None => {
                self.tags.push_back((block, unit));
                self.held[bucket] += 1;
                self.units += 1;
                false
            }
        };
        // Over capacity: the oldest blocks drain, as they would from a full buffer.
        while self.units > self.capacity {
            let (b, m) = self.tags.pop_front().expect("units counted in tags");
            self.held[b as usize % SHADOW_BUCKETS] -= 1;
            self.units -= m.count_ones();
        }
        hit
    }
}

/// Moves `line` to the most recent end of `lines` (least recent first, at most `capacity`
/// entries), evicting the least recent when it was not there and they are full; the tag it
/// had, if it was there. The LRU lines of the shadow read buffers ([`ShadowReads`],
/// [`ShadowDemand`]).
fn touch_lru<T>(lines: &mut Vec<(u64, T)>, capacity: usize, line: u64, tag: T) -> Option<T> {
    let old = match lines.iter().position(|e| e.0 == line) {
        Some(i) => Some(lines.remove(i).1),
        None => {
            if lines.len() == capacity {
                lines.remove(0);
            }
            None
        }
    };
    lines.push((line, tag));
    old
}

/// Shadow read buffer (`Rule::Cost`, while read-ahead is off): the controller's read lines,
/// LRU, as they would be with read-ahead on (each read brings in its line and the next one,
/// no data or timing), so the loop keeps measuring what read-ahead would serve while it is
/// off, as the shadow tags measure what a deeper write buffer would merge. Before it, a
/// read-ahead turned off stayed off until a timed retry, whose wait doubles after each failed
/// retry: on `elan` FFT that kept it off into the row transforms that follow each copy phase
/// (docs/memctl-phases.md, "Read-ahead's way back").
#[derive(Clone, Debug)]
pub struct ShadowReads {
    line_shift: u32,
    capacity: usize,
    /// (line, fetched ahead and not yet read), least recently used first.
    lines: Vec<(u64, bool)>,
}

impl ShadowReads {
    pub fn new(cfg: &machine::mem::buffer::BufferConfig) -> ShadowReads {
        ShadowReads {
            line_shift: cfg.line_bytes.trailing_zeros(),
            capacity: cfg.read_lines.max(1),
            lines: Vec::with_capacity(cfg.read_lines.max(1) + 1),
        }
    }

    /// Moves `line` to the most recent place (inserting it, evicting the oldest when full);
    /// returns its entry's previous state.
    fn touch(&mut self, line: u64, ahead: bool) -> Option<bool> {
        touch_lru(&mut self.lines, self.capacity, line, ahead)
    }

    /// A read of `addr`: `Some(true)` when a line read ahead would have served it (a DRAM
    /// read saved), `Some(false)` when it would have gone to DRAM, `None` when the read lines
    /// hold it anyway (read before: read-ahead makes no difference). The bit is a lower bound
    /// of the read-ahead stream's share with read-ahead on, whose zeros are only the reads a
    /// read-ahead delayed, a subset of these.
    pub fn read(&mut self, addr: u64) -> Option<bool> {
        let line = addr >> self.line_shift;
        let bit = match self.touch(line, false) {
            Some(ahead) => ahead.then_some(true),
            None => Some(false),
        };
        // The read-ahead of the next line, if the lines do not hold it.
        let next = line.wrapping_add(1);
        if !self.lines.iter().any(|e| e.0 == next) {
            self.touch(next, true);
            // Keep the demand line the more recent, as the read buffer fills it first.
            let n = self.lines.len();
            if n >= 2 {
                self.lines.swap(n - 1, n - 2);
            }
        }
        bit
    }
}

/// Shadow read buffer without read-ahead (`Rule::Cost`, while read-ahead is on): the tags the
/// controller's read lines would hold were every line fetched on demand only (LRU, the read
/// buffer's capacity, no data or timing), the mirror of [`ShadowReads`]. A read-ahead line
/// takes a read line, so with few lines it can push out a demand-fetched line the next read
/// wants: a hit read-ahead destroys, which neither the used nor the delayed bit of the
/// read-ahead stream sees (`elan` lock at `-s small`: 125 reads served by read-ahead lines
/// against 208 read-buffer hits with read-ahead off; docs/memory-buffer.md, "Read-ahead's
/// pollution of the read buffer"). Compared with the real buffer's hit bit it gives the
/// pollution stream ([`Loop::pollution`]): 1 for a read the real buffer served and these
/// lines would not have (a hit read-ahead gained), 0 for one these lines would have served and
/// the real buffer missed (a hit read-ahead lost). Seed 002 tunes read-ahead on the read-buffer
/// hit average ("Read buffer 'hit' monitoring"); this compares that hit with the hit the same
/// buffer would have without read-ahead, the method of a utility monitor's auxiliary tags
/// (Qureshi and Patt, MICRO 2006), as the write side's shadow tags do.
#[derive(Clone, Debug)]
pub struct ShadowDemand {
    line_shift: u32,
    capacity: usize,
    /// Lines, least recently used first.
    lines: Vec<(u64, ())>,
    /// Reads looked up, and those these lines held (exact counts, for the report and tests).
    pub reads: u64,
    pub hits: u64,
}

impl ShadowDemand {
    pub fn new(cfg: &machine::mem::buffer::BufferConfig) -> ShadowDemand {
        let capacity = cfg.read_lines.max(1);
        ShadowDemand {
            line_shift: cfg.line_bytes.trailing_zeros(),
            capacity,
            lines: Vec::with_capacity(capacity),
            reads: 0,
            hits: 0,
        }
    }

    /// A read of `addr` that reached the read buffer: whether these lines held its line (the
    /// line becomes the most recent, fetched on a miss, evicting the least recently used).
    #[inline]
    pub fn read(&mut self, addr: u64) -> bool {
        let line = addr >> self.line_shift;
        self.reads += 1;
        let hit = touch_lru(&mut self.lines, self.capacity, line, ()).is_some();
        self.hits += hit as u64;
        hit
    }
}

/// `Rule::Cost`'s watermark search.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Search {
    /// Measuring the current watermark (after `wait` more decisions, probe).
    Measure { wait: u32 },
    /// Probing: moved from `from`, whose reading was `cost`.
    Probe { from: u64, cost: f64 },
}

/// One controller's loop.
#[derive(Clone, Debug)]
pub struct Loop {
    pub addies: [Addie; 2],
    watermark_id: SettingId,
    read_ahead_id: SettingId,
    max_watermark: u64,
    pub watermark: u64,
    pub read_ahead: bool,
    off_for: u32,
    /// `Rule::Cost`: decisions read-ahead has been on since it last went on, and Addie 1's
    /// reading when read-ahead last changed (its starting value at the run's start).
    on_for: u32,
    ra_from: f64,
    /// `Rule::Cost`: decisions read-ahead stays off before the next retry, and whether it is
    /// on now by a retry not yet judged.
    retry_wait: u32,
    retried: bool,
    /// Samples per Addie since the setting it judges last changed.
    since: [u64; 2],
    search: Search,
    /// Direction of the next probe (+1 up, -1 down), failed probes in a row at this step,
    /// back-offs since the last success, and the step (coarse: `coarse`, or 1).
    dir: i64,
    failures: u32,
    backoffs: u32,
    step: u64,
    coarse: u64,
    pub shadow: Shadow,
    pub shadow_reads: ShadowReads,
    /// `Rule::Cost`: the read lines without read-ahead, and a third Addie on the pollution
    /// stream (1: a hit read-ahead gained, 0: one it lost; [`ShadowDemand`]), sampled while
    /// read-ahead is on; its samples and reading since read-ahead last went on; exact counts
    /// of gained and lost hits over the run; whether read-ahead was last turned off for
    /// pollution (then only the timed retry turns it on again: the shadow read lines, which
    /// model read-ahead's evictions too, count a polluted hit as a read read-ahead would not
    /// serve, not as one it destroys).
    pub shadow_demand: ShadowDemand,
    pub pollution: Addie,
    pollution_since: u64,
    pollution_from: f64,
    pub hits_gained: u64,
    pub hits_lost: u64,
    polluted_off: bool,
    /// Exact ones and samples since the last decision, per Addie.
    window: [(u64, u64); 2],
    pub decisions: Vec<Decision>,
    pub changes: u64,
}

/// The probe: one loop per controller.
pub struct Adaptive {
    pub rules: Rules,
    /// `Rule::Cost`'s read-ahead break-even share.
    pub break_even: f64,
    pub loops: Vec<Loop>,
}

impl Adaptive {
    /// A loop for each of `controllers` controllers whose settings are in `settings` and whose
    /// configuration is `cfg` on a machine of `line_bytes` lines.
    pub fn new(
        rules: Rules,
        controllers: usize,
        settings: &Settings,
        cfg: &MemCtlCfg,
        line_bytes: u64,
    ) -> Result<Adaptive, String> {
        rules.validate()?;
        let bcfg = cfg.buffer(line_bytes);
        let coarse = if rules.step == 0 {
            (bcfg.block_bytes / bcfg.unit_bytes).max(1) as u64
        } else {
            rules.step as u64
        };
        let loops = (0..controllers)
            .map(|n| {
                let id = |what: &str| {
                    settings.id(&format!("memctl.{n}.{what}")).ok_or_else(|| {
                        format!("monitor `memctl`: controller {n} has no buffer to tune (memctl.buffer = false)")
                    })
                };
                let (w, r) = (id("watermark")?, id("read_ahead")?);
                let ws = settings.setting(w).expect("just found");
                let unit = |i: usize| {
                    // Distinct LFSR seeds per unit, as the Addie monitor seeds its units.
                    // The pollution Addie (2) keyed apart from the other controllers' two.
                    let key = if i < 2 { n * 2 + i } else { 0x8000 + n };
                    let state = (0x2468_ACE1u32 ^ (key as u32).wrapping_mul(0x9E37_79B9)) | 1;
                    Addie::new(AddieConfig::new(
                        rules.width,
                        RandomMode::Independent,
                        state & 0x7FFF_FFFF,
                    ))
                };
                let addies = [unit(0)?, unit(1)?];
                let ra_from = addies[1].estimate();
                let pollution = unit(2)?;
                let pollution_from = pollution.estimate();
                Ok(Loop {
                    addies,
                    watermark_id: w,
                    read_ahead_id: r,
                    max_watermark: ws.max,
                    watermark: ws.value,
                    read_ahead: settings.get(r) != 0,
                    off_for: 0,
                    on_for: 0,
                    ra_from,
                    retry_wait: rules.retry,
                    retried: false,
                    since: [0; 2],
                    search: Search::Measure { wait: 0 },
                    dir: 1,
                    failures: 0,
                    backoffs: 0,
                    step: coarse,
                    coarse,
                    shadow: Shadow::new(&bcfg),
                    shadow_reads: ShadowReads::new(&bcfg),
                    shadow_demand: ShadowDemand::new(&bcfg),
                    pollution,
                    pollution_since: 0,
                    pollution_from,
                    hits_gained: 0,
                    hits_lost: 0,
                    polluted_off: false,
                    window: [(0, 0); 2],
                    decisions: Vec::new(),
                    changes: 0,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Adaptive {
            rules,
            break_even: break_even(cfg),
            loops,
        })
    }
}

impl Loop {
    /// `Rule::Cost`'s watermark step: perturb and observe on reading `c` (module docs).
    fn search_watermark(&mut self, rules: &Rules, c: f64) -> u64 {
        let w = self.watermark;
        let step = self.step as i64;
        let clamp = |x: i64| x.clamp(1, self.max_watermark as i64) as u64;
        match self.search {
            Search::Measure { wait } if wait > 0 => {
                self.search = Search::Measure { wait: wait - 1 };
                w
            }
            Search::Measure { .. } => {
                let mut to = clamp(w as i64 + self.dir * step);
                if to == w {
                    self.dir = -self.dir;
                    to = clamp(w as i64 + self.dir * step);
                }
                if to != w {
                    self.search = Search::Probe { from: w, cost: c };
                }
                to
            }
            Search::Probe { from, cost } => {
                if c + rules.band((c + cost) / 2.0) < cost {
                    // Better: stay, and probe on in the same direction at once.
                    self.failures = 0;
                    self.backoffs = 0;
                    let to = clamp(w as i64 + self.dir * step);
                    self.search = if to != w {
                        Search::Probe { from: w, cost: c }
                    } else {
                        Search::Measure { wait: 0 }
                    };
                    to
                } else {
                    // Not better: back, and probe the other side next; when both sides failed,
                    // refine the step, or at one unit back off and start again coarse.
                    self.dir = -self.dir;
                    self.failures += 1;
                    let mut wait = 0;
                    if self.failures >= 2 {
                        self.failures = 0;
                        if self.step > 1 {
                            self.step = 1;
                        } else {
                            self.backoffs = (self.backoffs + 1).min(4);
                            wait = (1u32 << self.backoffs) - 1;
                            self.step = self.coarse;
                        }
                    }
                    self.search = Search::Measure { wait };
                    from
                }
            }
        }
    }

    /// `Rule::Cost`, read-ahead on: whether the pollution Addie shows read-ahead losing more
    /// read-buffer hits than it gains: settled (`2 * 2^n` samples since read-ahead went on),
    /// its reading below one half; before, the share of its own samples since then
    /// ([`Rules::share_since`]) below one half by more than its standard deviation.
    fn polluted(&self, rules: &Rules) -> bool {
        let r = self.pollution.estimate();
        if self.pollution_since >= rules.settle() {
            r + rules.band(r) / 2.0 < 0.5
        } else {
            rules
                .share_since(r, self.pollution_from, self.pollution_since, 0.5)
                .is_some_and(|(p, sd)| 0.5 - p > sd)
        }
    }

    fn decide(&mut self, rules: &Rules, break_even: f64, t: u64, sig: &mut Signals) {
        let reading = [self.addies[0].estimate(), self.addies[1].estimate()];
        let exact = |(ones, n): (u64, u64)| (n > 0).then(|| ones as f64 / n as f64);
        let ex = [exact(self.window[0]), exact(self.window[1])];
        self.window = [(0, 0); 2];
        let settled = [0, 1].map(|i| self.since[i] >= rules.settle());
        let (w, ra) = match rules.rule {
            Rule::Seed => {
                let w = rules.watermark(reading[0], self.watermark, self.max_watermark);
                let ra = if self.read_ahead {
                    self.off_for = 0;
                    reading[1] >= rules.rb_low
                } else {
                    self.off_for += 1;
                    self.off_for > rules.retry
                };
                (w, ra)
            }
            Rule::Cost => {
                let w = if settled[0] {
                    self.search_watermark(rules, reading[0])
                } else {
                    self.watermark
                };
                let ra = if self.read_ahead {
                    self.off_for = 0;
                    self.on_for += 1;
                    // Judged on the reading once the stream settled (512 samples). A stream
                    // too sparse to settle within `retry` decisions is judged then on the
                    // share of its samples since read-ahead went on (the reading less what is
                    // left of its value at the change), once that share is farther from the
                    // break-even than its noise: waiting for 512 samples kept read-ahead on
                    // for the rest of the run whatever the samples said (numachine
                    // pointer-chase, about 7 affected reads per decision, none served;
                    // docs/memory-buffer.md, "The two misses, by experiment").
                    let share = if settled[1] {
                        Some(reading[1])
                    } else if self.on_for >= rules.retry {
                        rules
                            .share_since(reading[1], self.ra_from, self.since[1], break_even)
                            .filter(|&(p, sd)| (p - break_even).abs() > sd)
                            .map(|(p, _)| p)
                    } else {
                        None
                    };
                    // Pollution: read-ahead destroys more read-buffer hits than it brings
                    // (the pollution stream's share of gained hits below one half by more than
                    // its noise, or below one half once settled): off whatever the used share,
                    // since a lost hit costs what a used read-ahead saves (a DRAM read against a
                    // buffer hit, `S`) and the delays only add to the loss.
                    let polluted = self.polluted(rules);
                    let share = if polluted { Some(0.0) } else { share };
                    self.polluted_off = polluted;
                    let keep = share.is_none_or(|p| p >= break_even);
                    if share.is_some() {
                        // A retry that finds read-ahead still below the break-even doubles
                        // the next wait (up to 16 times `retry`); one that pays resets it.
                        self.retry_wait = if keep {
                            rules.retry
                        } else if self.retried {
                            (self.retry_wait * 2).min(rules.retry * 16)
                        } else {
                            rules.retry
                        };
                        self.retried = false;
                    }
                    keep
                } else {
                    // While off, Addie 1 samples the shadow read lines: a reading at or above
                    // the break-even is a lower bound that read-ahead pays now (a new phase),
                    // so it goes back on without waiting for the timed retry. A shadow stream
                    // too sparse to settle is judged, as a sparse retry is, on the share of its
                    // own samples since read-ahead went off, once that share is above the
                    // break-even by more than its noise: on `numachine` the stream gets tens
                    // of samples per decision and a phase that wants read-ahead (radix,
                    // shadow share 0.56-1.00 for four decisions) ended before 512 came
                    // (docs/memory-buffer.md, "Deciding sooner"). Only this direction is
                    // judged early: the share is a lower bound, so an early verdict for
                    // read-ahead errs on the safe side, while judging the on-stream early
                    // (against read-ahead) was measured to lose on three pairs.
                    self.off_for += 1;
                    let sparse = !settled[1]
                        && rules
                            .share_since(reading[1], self.ra_from, self.since[1], break_even)
                            .is_some_and(|(p, sd)| p - break_even > sd);
                    let on = self.off_for > self.retry_wait
                        || (!self.polluted_off
                            && ((settled[1] && reading[1] >= break_even) || sparse));
                    self.retried = on;
                    if on {
                        self.on_for = 0;
                    }
                    on
                };
                (w, ra)
            }
        };
        if w != self.watermark {
            sig.act(Action::Set {
                setting: self.watermark_id,
                value: w,
            });
            self.watermark = w;
            self.changes += 1;
            self.since[0] = 0;
        }
        if ra != self.read_ahead {
            sig.act(Action::Set {
                setting: self.read_ahead_id,
                value: ra as u64,
            });
            self.read_ahead = ra;
            self.changes += 1;
            self.since[1] = 0;
            self.ra_from = reading[1];
            if ra {
                self.pollution_since = 0;
                self.pollution_from = self.pollution.estimate();
            }
        }
        self.decisions.push(Decision {
            t,
            reading,
            exact: ex,
            watermark: w,
            read_ahead: ra,
        });
    }
}

impl Probe for Adaptive {
    #[inline]
    fn observe(&mut self, o: &Observation, _sig: &mut Signals) {
        if let Observation::MemRequest {
            node, flags, addr, ..
        } = *o
        {
            if let Some(l) = self.loops.get_mut(node as usize) {
                let lost = self.rules.rule == Rule::Cost
                    && flags & machine::mem::buffer::flags::WRITE != 0
                    && l.shadow.write(addr)
                    && flags & machine::mem::buffer::flags::WRITE_HIT == 0;
                let mut bits = streams(self.rules.rule, flags, lost);
                if self.rules.rule == Rule::Cost && flags & machine::mem::buffer::flags::WRITE == 0
                {
                    if !l.read_ahead {
                        bits[1] = l.shadow_reads.read(addr);
                    }
                    // A read served from the write buffer alone does not reach the read lines.
                    if flags & machine::mem::buffer::flags::FROM_WRITE_BUFFER == 0 {
                        let shadow = l.shadow_demand.read(addr);
                        let real = flags & machine::mem::buffer::flags::READ_BUFFER_HIT != 0;
                        if l.read_ahead && real != shadow {
                            l.pollution.sample(real);
                            l.pollution_since += 1;
                            if real {
                                l.hits_gained += 1;
                            } else {
                                l.hits_lost += 1;
                            }
                        }
                    }
                }
                for (i, bit) in bits.into_iter().enumerate() {
                    if let Some(bit) = bit {
                        l.addies[i].sample(bit);
                        l.window[i].0 += bit as u64;
                        l.window[i].1 += 1;
                        l.since[i] += 1;
                    }
                }
            }
        }
    }
    fn interest(&self) -> u32 {
        kind::MEM_REQUEST
    }
    fn wakes(&self) -> Option<(ProbeClock, u64)> {
        Some((
            ProbeClock {
                name: "cpu",
                num: 1,
                den: 1,
            },
            self.rules.period,
        ))
    }
    fn wake(&mut self, cycle: u64, t: u64, sig: &mut Signals) -> Option<u64> {
        let rules = self.rules;
        let be = self.break_even;
        for l in &mut self.loops {
            l.decide(&rules, be, t, sig);
        }
        Some(cycle + rules.period)
    }
    fn name(&self) -> &str {
        "memctl"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seed's watermark rule: halve below the low threshold, double above the high one,
    /// stay between; never below 1 or above the capacity.
    #[test]
    fn watermark_rule_follows_the_seed() {
        let r = Rules::default();
        assert_eq!(r.watermark(0.1, 16, 32), 8);
        assert_eq!(r.watermark(0.1, 1, 32), 1);
        assert_eq!(r.watermark(0.6, 16, 32), 32);
        assert_eq!(r.watermark(0.6, 32, 32), 32);
        assert_eq!(r.watermark(0.3, 16, 32), 16);
        assert_eq!(
            r.watermark(0.25, 16, 32),
            16,
            "the low threshold itself is middle"
        );
        assert!(Rules { hit_low: 0.6, ..r }
            .validate()
            .unwrap_err()
            .contains("--memctl-hit"));
        assert!(Rules { width: 3, ..r }.validate().is_err());
        assert!(Rules { period: 0, ..r }.validate().is_err());
    }

    /// The cost rules' constants come from the timings and the Addie: the break-even share
    /// W / (W + S) is 2/7 on `elan` (tBURST 4, tCAS 2, tBUFFER 1) and 1/4 on the default
    /// controller (tBURST 2); decisions wait two time constants (512 samples at 8 bits); the
    /// dead band is one standard deviation of the difference of two readings.
    #[test]
    fn cost_rule_constants_follow_from_timings_and_the_addie() {
        let elan = machine::config::Preset::builtin("elan").unwrap();
        let cfg = elan.memctl_enabled().unwrap();
        assert!((break_even(cfg) - 2.0 / 7.0).abs() < 1e-12);
        assert!((break_even(&MemCtlCfg::default_for(128)) - 0.25).abs() < 1e-12);
        let r = Rules::default();
        assert_eq!(r.settle(), 512);
        assert!((r.band(0.5) - (0.5f64 / 256.0).sqrt()).abs() < 1e-12);
        assert!((r.band(0.0) - 1.0 / 255.0).abs() < 1e-12);
    }

    /// The streams: under the cost rules every request samples the write-delay Addie, and only
    /// reads a read-ahead served (1) or delayed (0) sample the read-ahead Addie.
    #[test]
    fn streams_select_the_requests_they_measure() {
        use flags::*;
        let c = |f| streams(Rule::Cost, f, false);
        assert_eq!(c(WRITE), [Some(false), None]);
        assert_eq!(streams(Rule::Cost, WRITE, true), [Some(true), None]);
        assert_eq!(c(WRITE | FULL | WRITE_DELAY), [Some(true), None]);
        assert_eq!(
            c(READ_BUFFER_HIT | READ_AHEAD_USED),
            [Some(false), Some(true)]
        );
        assert_eq!(c(READ_AHEAD_DELAY | WRITE_DELAY), [Some(true), Some(false)]);
        assert_eq!(c(READ_BUFFER_HIT), [Some(false), None]);
        let s = |f| streams(Rule::Seed, f, false);
        assert_eq!(s(WRITE | WRITE_HIT), [Some(true), None]);
        assert_eq!(s(READ_BUFFER_HIT), [None, Some(true)]);
    }

    fn settings_16_of_32() -> Settings {
        let mut settings = Settings::default();
        let clocks = engine::Clocks::new(&[("cpu", 100_000_000)]).unwrap();
        for (name, value, max) in [("watermark", 16, 32), ("read_ahead", 1, 1)] {
            settings
                .register(
                    &clocks,
                    machine::settings::Declare {
                        name: &format!("memctl.0.{name}"),
                        doc: "",
                        value,
                        min: 0,
                        max,
                        latency_cycles: 1,
                        clock: "cpu",
                    },
                )
                .unwrap();
        }
        settings
    }

    /// Perturb and observe on `elan`'s word buffer: coarse steps of one block (4 words) first;
    /// a probe that lowers the reading by more than the dead band is kept and the search goes
    /// on in that direction; one that does not is undone and the other side probed; when both
    /// sides fail the step becomes one unit, and when both fail at one unit the search waits
    /// (1, 3, 7, 15 decisions) and starts again coarse.
    #[test]
    fn watermark_search_keeps_improvements_and_undoes_the_rest() {
        let rules = Rules::default();
        let elan = machine::config::Preset::builtin("elan").unwrap();
        let cfg = elan.memctl_enabled().unwrap();
        let a = Adaptive::new(rules, 1, &settings_16_of_32(), cfg, 16).unwrap();
        let mut l = a.loops[0].clone();
        let go = |l: &mut Loop, c: f64| {
            let w = l.search_watermark(&rules, c);
            l.watermark = w;
            w
        };
        assert_eq!(go(&mut l, 0.5), 20, "measured 16, probe one block up");
        assert_eq!(go(&mut l, 0.2), 24, "better: keep 20, probe on");
        assert_eq!(go(&mut l, 0.19), 20, "within the band: back");
        assert_eq!(go(&mut l, 0.2), 16, "the other side");
        assert_eq!(go(&mut l, 0.3), 20, "worse: back; both sides failed");
        assert_eq!(go(&mut l, 0.2), 21, "one unit now");
        assert_eq!(go(&mut l, 0.1), 22, "better: keep 21, probe on");
        assert_eq!(go(&mut l, 0.1), 21, "no better");
        assert_eq!(go(&mut l, 0.1), 20, "the other side");
        assert_eq!(go(&mut l, 0.1), 21, "both failed at one unit: back off");
        assert_eq!(go(&mut l, 0.1), 21, "waiting 1");
        assert_eq!(go(&mut l, 0.1), 25, "coarse again");
    }

    /// Shadow tags: a write to a block among the last writes holding up to the capacity in
    /// units is a hit at full depth; older blocks have been drained.
    #[test]
    fn shadow_tags_find_the_hits_of_a_full_depth_buffer() {
        let b = machine::mem::buffer::BufferConfig::words(); // 32 words, 16-byte blocks
        let mut sh = Shadow::new(&b);
        assert!(!sh.write(0x100));
        assert!(sh.write(0x104), "a neighbouring word merges");
        assert!(sh.write(0x100), "a rewritten word collapses");
        // 30 more words in 30 blocks: 32 units, 0x100's block still held.
        for i in 1..=30u64 {
            assert!(!sh.write(0x1000 + 16 * i));
        }
        // A third word for 0x100's block: a hit, and 33 units, so the oldest block (0x100's,
        // 3 words) drains.
        assert!(sh.write(0x108));
        assert!(!sh.write(0x100));
    }

    /// The bucket counts only skip searches that would fail: on a pseudo-random mix of
    /// streams, strides and rewrites (blocks 64 apart share a bucket), every answer equals a
    /// plain newest-first search of the same FIFO.
    #[test]
    fn shadow_tags_with_buckets_answer_as_a_plain_search() {
        let b = machine::mem::buffer::BufferConfig::words();
        let mut sh = Shadow::new(&b);
        let mut fifo: std::collections::VecDeque<(u64, u32)> = Default::default();
        let mut units = 0u32;
        let mut rng = engine::SimRng::new(3);
        let mut addr = 0u64;
        let mut hits = 0;
        for _ in 0..50_000 {
            addr = match rng.below(4) {
                0 => addr + 4,
                1 => addr + 64 * 16,
                2 => rng.below(1 << 14) * 4,
                _ => addr,
            };
            let (block, unit) = (addr >> 4, 1u32 << ((addr >> 2) & 3));
            let want = match fifo.iter_mut().rev().find(|e| e.0 == block) {
                Some(e) => {
                    units += (e.1 & unit == 0) as u32;
                    e.1 |= unit;
                    true
                }
                None => {
                    fifo.push_back((block, unit));
                    units += 1;
                    false
                }
            };
            while units > 32 {
                units -= fifo.pop_front().unwrap().1.count_ones();
            }
            assert_eq!(sh.write(addr), want, "address {addr:#x}");
            hits += want as u32;
        }
        assert!(
            hits > 10_000 && hits < 40_000,
            "a mix of hits and misses: {hits}"
        );
    }

    /// The shadow read lines: a read of the line after a recent read would have been served by
    /// its read-ahead; a read elsewhere would have gone to DRAM; a line read before is held
    /// anyway. Two lines, as the read buffer: a third stream evicts the oldest.
    #[test]
    fn shadow_reads_find_what_read_ahead_would_serve() {
        let b = machine::mem::buffer::BufferConfig::words(); // two 16-byte read lines
        let mut sh = ShadowReads::new(&b);
        assert_eq!(sh.read(0x100), Some(false), "first read: DRAM");
        assert_eq!(sh.read(0x110), Some(true), "the next line, read ahead");
        assert_eq!(sh.read(0x114), None, "the same line again: held anyway");
        assert_eq!(sh.read(0x120), Some(true), "and the next");
        assert_eq!(sh.read(0x400), Some(false), "a stride: DRAM");
        assert_eq!(
            sh.read(0x130),
            Some(false),
            "0x400 and its next line evicted 0x120's read-ahead"
        );
        assert_eq!(sh.read(0x140), Some(true));
    }

    /// Feeds `samples` bits `bit` to Addie 1 of `l` (the read-ahead stream, or the shadow
    /// stream while read-ahead is off), then takes one decision a period later; returns the
    /// read-ahead setting decided.
    fn sample_and_decide(l: &mut Loop, a: &Adaptive, t: &mut u64, samples: u32, bit: bool) -> bool {
        for _ in 0..samples {
            l.addies[1].sample(bit);
            l.since[1] += 1;
        }
        *t += a.rules.period;
        l.decide(&a.rules, a.break_even, *t, &mut Signals::default());
        l.read_ahead
    }

    /// A retry whose stream is too sparse to settle (fewer than 512 affected reads) is judged
    /// after `retry` decisions on the share of its own samples (the reading less what is left
    /// of its value at the change): all delayed, read-ahead goes off again and the next wait
    /// doubles; all served, it stays on although the reading, still mostly the value it had
    /// while off, is below the break-even. Before, a retry stayed on until 512 samples came,
    /// which on `numachine` pointer-chase (about 7 affected reads per decision) was the rest of
    /// the run.
    #[test]
    fn a_sparse_retry_is_judged_on_its_own_samples() {
        let rules = Rules::default();
        let cfg = MemCtlCfg::default_for(128);
        let a = Adaptive::new(rules, 1, &settings_16_of_32(), &cfg, 128).unwrap();
        let mut l = a.loops[0].clone();
        let mut t = 0;
        let mut decide =
            |l: &mut Loop, samples, bit| sample_and_decide(l, &a, &mut t, samples, bit);
        // On at the start: 600 affected reads, none served, settle it: off.
        assert!(!decide(&mut l, 600, false));
        // Off for `retry` decisions (nothing for the shadow lines to serve), then retried.
        for _ in 0..rules.retry {
            assert!(!decide(&mut l, 0, false));
        }
        assert!(decide(&mut l, 0, false), "the timed retry");
        // The retry sees 7 affected reads per decision, all delayed: unsettled.
        for i in 1..rules.retry {
            assert!(
                decide(&mut l, 7, false),
                "still measuring after {i} decisions"
            );
        }
        assert!(
            !decide(&mut l, 7, false),
            "judged after `retry` decisions: off"
        );
        assert_eq!(
            l.retry_wait,
            2 * rules.retry,
            "a failed retry doubles the wait"
        );
        // The next retry's 48 samples are all served: the reading is still below the
        // break-even, but the share of the samples since the retry is far above it.
        for _ in 0..2 * rules.retry {
            assert!(!decide(&mut l, 0, false));
        }
        assert!(decide(&mut l, 0, false), "the second retry");
        for _ in 1..=rules.retry {
            assert!(decide(&mut l, 6, true));
        }
        assert!(l.addies[1].estimate() < a.break_even);
        assert_eq!(
            l.retry_wait, rules.retry,
            "a retry that pays resets the wait"
        );
        assert!(!l.retried, "judged");
    }

    /// While read-ahead is off, a shadow stream too sparse to settle (20 samples per decision,
    /// 512 needed) is judged on its own samples: all would have been served, so read-ahead goes
    /// back on within two decisions, long before the timed retry; none served, it stays off
    /// until the retry. Before, the sparse shadow stream waited for 512 samples, which
    /// `numachine` radix's phases never gave.
    #[test]
    fn a_sparse_shadow_stream_brings_read_ahead_back() {
        let rules = Rules::default();
        let cfg = MemCtlCfg::default_for(128);
        let a = Adaptive::new(rules, 1, &settings_16_of_32(), &cfg, 128).unwrap();
        for served in [true, false] {
            let mut l = a.loops[0].clone();
            let mut t = 0;
            let mut decide =
                |l: &mut Loop, samples, bit| sample_and_decide(l, &a, &mut t, samples, bit);
            assert!(
                !decide(&mut l, 600, false),
                "settled below the break-even: off"
            );
            let back = (1..=rules.retry + 1)
                .find(|_| decide(&mut l, 20, served))
                .expect("on again by the timed retry at the latest");
            if served {
                assert!(back <= 2, "back on after {back} decisions");
                assert!(l.since[1] < rules.settle());
            } else {
                assert_eq!(back, rules.retry + 1, "only the timed retry");
            }
        }
    }

    /// The share since a change: an Addie that read 0.5 and took 256 samples of a stream of
    /// share 0.1 reads about 0.1 + 0.4 / e; the estimate recovers 0.1. No samples, no estimate.
    #[test]
    fn share_since_undoes_the_start_value() {
        let r = Rules::default();
        let old = (1.0 - 1.0 / 256.0f64).powi(256);
        let (p, sd) = r.share_since(0.1 + 0.4 * old, 0.5, 256, 0.25).unwrap();
        assert!((p - 0.1).abs() < 1e-9, "{p}");
        assert!(sd > 0.02 && sd < 0.05, "{sd}");
        assert!(r.share_since(0.3, 0.5, 0, 0.25).is_none());
    }

    fn run(
        preset: &str,
        procs: usize,
        workload: &str,
        rules: Rules,
    ) -> (
        machine::Machine,
        std::rc::Rc<std::cell::RefCell<Adaptive>>,
        u64,
    ) {
        run_at(preset, procs, workload, workload::Size::Test, None, rules)
    }

    /// `run` at `size`, the controllers starting at read-ahead `read_ahead` when given.
    fn run_at(
        preset: &str,
        procs: usize,
        workload: &str,
        size: workload::Size,
        read_ahead: Option<bool>,
        rules: Rules,
    ) -> (
        machine::Machine,
        std::rc::Rc<std::cell::RefCell<Adaptive>>,
        u64,
    ) {
        use crate::plugin::Monitor;
        let mut plugin = super::super::Plugin {
            rules,
            ..Default::default()
        };
        let mut p = machine::config::Preset::builtin(preset)
            .unwrap()
            .with_procs(procs)
            .unwrap();
        plugin.adjust_preset(&mut p).unwrap();
        if let (Some(ra), Some(c)) = (read_ahead, p.memctl.as_mut()) {
            c.read_ahead = ra;
        }
        let mut m = machine::Machine::new(p, machine::sim::Options::default()).unwrap();
        let w = workload::install(workload::find(workload, size).unwrap(), &mut m, None).unwrap();
        plugin.attach(&mut m).unwrap();
        let sum = m.run(None).unwrap();
        assert!(w.verify().verified, "{workload} on {preset}");
        let probe = plugin.probe.clone().unwrap();
        (m, probe, sum.cycles)
    }

    /// Every change the loop asked for was applied by the machine (counted per setting in the
    /// ground truth), except one asked within a controller cycle of the end; one decision per
    /// period.
    fn check_applied(m: &machine::Machine, a: &Adaptive, cycles: u64) {
        let ctl = m.state().system.controller_reports();
        let applied: u64 = m.state().acted.settings_applied.iter().sum();
        let asked: u64 = a.loops.iter().map(|l| l.changes).sum();
        assert!(
            applied <= asked && applied + 2 * ctl.len() as u64 >= asked,
            "{applied} {asked}"
        );
        for l in &a.loops {
            assert_eq!(l.decisions.len() as u64, cycles / a.rules.period);
        }
    }

    /// On `elan`'s radix sort the scattered stores merge and collapse more the longer they
    /// stay: the shadow tags see the hits a deeper buffer would have, so the cost rules raise
    /// the watermark from the preset's 16 to the top quarter of the 32 words, keep
    /// read-ahead on (most reads it affects are served by it), and the run is faster than at
    /// the preset's fixed setting.
    #[test]
    fn cost_rules_raise_the_watermark_where_deeper_buffers_merge_more() {
        let (m, probe, cycles) = run("elan", 1, "radix", Rules::default());
        let a = probe.borrow();
        check_applied(&m, &a, cycles);
        let ctl = m.state().system.controller_reports();
        assert!(
            ctl[0].watermark >= 24,
            "final watermark {}",
            ctl[0].watermark
        );
        assert!(ctl[0].read_ahead);
        let p = machine::config::Preset::builtin("elan").unwrap();
        let fixed = super::super::study::run_setting(
            &p,
            "radix",
            workload::Size::Test,
            super::super::study::Setting::Buffer(true),
            1,
        )
        .unwrap();
        assert!(cycles < fixed.cycles, "{cycles} vs {}", fixed.cycles);
    }

    /// On NUMAchine's streaming kernel the lines read ahead are almost never used before the
    /// other processors' requests evict them, and the reads that wait behind them are many:
    /// the read-ahead reading falls below the break-even and read-ahead is off except for
    /// its retries; the seed's rules, on the read-buffer hit average, turn it off too.
    #[test]
    fn cost_rules_turn_read_ahead_off_where_it_only_delays_reads() {
        let rules = Rules {
            period: 20_000,
            ..Rules::default()
        };
        for rules in [
            rules,
            Rules {
                rule: Rule::Seed,
                ..rules
            },
        ] {
            let (m, probe, cycles) = run("numachine", 4, "stream", rules);
            let a = probe.borrow();
            check_applied(&m, &a, cycles);
            for (n, l) in a.loops.iter().enumerate() {
                let on = l.decisions.iter().filter(|d| d.read_ahead).count();
                assert!(
                    on * 4 <= l.decisions.len(),
                    "{:?} node {n}: read-ahead on in {on} of {} decisions",
                    rules.rule,
                    l.decisions.len()
                );
            }
        }
    }

    /// On `elan` FFT the copy phases want read-ahead off and the row transforms after them want
    /// it on. While off, the loop measures read-ahead on the shadow read lines and turns it on
    /// again within a few decisions of a row phase's start (before, the timed retry, doubled
    /// after each failure, kept it off well into the row phase and the loop was slower than
    /// the preset's setting: 4,803,768 against 4,786,990 cycles): now the loop is faster than
    /// the preset's fixed setting.
    #[test]
    fn read_ahead_comes_back_on_when_the_shadow_reads_show_it_pays() {
        let (m, probe, cycles) = run("elan", 1, "fft", Rules::default());
        let a = probe.borrow();
        check_applied(&m, &a, cycles);
        let d = &a.loops[0].decisions;
        // An off stretch ended by the shadow's evidence, shorter than the first timed retry.
        let mut off = 0;
        let mut early = 0;
        for x in d {
            if x.read_ahead {
                if off > 0 && off <= a.rules.retry {
                    early += 1;
                }
                off = 0;
            } else {
                off += 1;
            }
        }
        // (Twice before the shadow's sparse judgement; with it the loop keeps read-ahead on
        // through one of those dips, and the run is 2,946 cycles faster.)
        assert!(early >= 1, "read-ahead turned on early {early} times");
        let p = machine::config::Preset::builtin("elan").unwrap();
        let fixed = super::super::study::run_setting(
            &p,
            "fft",
            workload::Size::Test,
            super::super::study::Setting::Buffer(true),
            1,
        )
        .unwrap();
        assert!(cycles < fixed.cycles, "{cycles} vs {}", fixed.cycles);
    }
    /// Read-ahead's pollution of the read buffer (`elan` lock at `-s small`): the read lines
    /// without read-ahead ([`ShadowDemand`]) hold exactly what the read buffer holds in a run
    /// with read-ahead off (its hits and the reads that reach it equal that run's ground truth,
    /// 208 of 339), and beside a buffer with read-ahead on the pollution stream counts exactly
    /// the difference of the two hit counts (gained less lost = real hits less shadow hits).
    /// With read-ahead on the buffer has 125 hits, all on lines read ahead: read-ahead loses
    /// more hits than it brings, though the read-ahead stream (used against delayed: 125 to 2)
    /// is far above the break-even. The loop turns read-ahead off on the pollution Addie and
    /// is faster than the preset's fixed setting (before: 59,531 cycles, the same as it).
    #[test]
    fn read_ahead_goes_off_where_it_pollutes_the_read_buffer() {
        let never = Rules {
            period: 1 << 40,
            ..Rules::default()
        };
        let small = workload::Size::Small;
        for ra in [false, true] {
            let (m, probe, _) = run_at("elan", 1, "lock", small, Some(ra), never);
            let a = probe.borrow();
            let l = &a.loops[0];
            let b = m.state().system.controller_reports()[0].buffer;
            assert_eq!(l.decisions.len(), 0);
            assert_eq!(l.shadow_demand.reads, b.reads - b.reads_from_write_buffer);
            assert_eq!(l.shadow_demand.reads, 339);
            // The address stream does not depend on read-ahead: the same shadow hits.
            assert_eq!(l.shadow_demand.hits, 208, "read-ahead {ra}");
            if ra {
                assert_eq!(b.read_buffer_hits, 125);
                assert_eq!(b.read_ahead_used, 125);
                assert_eq!(
                    l.hits_gained as i64 - l.hits_lost as i64,
                    b.read_buffer_hits as i64 - l.shadow_demand.hits as i64
                );
                assert!(
                    l.hits_lost > l.hits_gained,
                    "{} {}",
                    l.hits_lost,
                    l.hits_gained
                );
            } else {
                assert_eq!(b.read_buffer_hits, 208);
                assert_eq!((l.hits_gained, l.hits_lost), (0, 0));
            }
        }
        let (m, probe, cycles) = run_at("elan", 1, "lock", small, None, Rules::default());
        let a = probe.borrow();
        check_applied(&m, &a, cycles);
        let l = &a.loops[0];
        assert!(l.decisions[0].read_ahead);
        assert!(!l.decisions.last().unwrap().read_ahead);
        assert!(l.hits_lost > 0 && l.hits_gained > 0);
        let p = machine::config::Preset::builtin("elan").unwrap();
        let fixed = super::super::study::run_setting(
            &p,
            "lock",
            small,
            super::super::study::Setting::Buffer(true),
            1,
        )
        .unwrap();
        assert_eq!(fixed.cycles, 59_531);
        assert!(cycles < fixed.cycles, "{cycles} vs {}", fixed.cycles);
    }
}
