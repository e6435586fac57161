//! Cachegrind-compatible output of a trace replay (`pmusim run trace:FILE --cachegrind-out
//! OUT`): the simulated machine's instruction and data cache events per function, in the
//! `cachegrind.out` format that `cg_annotate` and KCachegrind read (issue 19, item 4).
//!
//! **Counting.** Cachegrind's events are `Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw`. The replay
//! reads the processor's exact counters around every code block and data reference
//! ([`Profiler`]): a block's instruction fetch gives `Ir` (its instructions), `I1mr` (L1
//! I-cache misses of its lines) and `ILmr` (those that also missed the last level); a load
//! gives `Dr` and its L1 and last-level misses, a store `Dw`, `D1mw`, `DLmw`; a modify (a load
//! and a store of one address by one instruction) counts as one read, as Cachegrind counts it.
//! Misses of the second line of an access that spans two count with the access. The counts
//! are the simulated machine's (its geometry, inclusion), except that a store to a line the
//! L1 D holds shared (an upgrade) is no miss, as in Cachegrind, which has no coherence
//! ([`Profiler::data`]); the report's own miss counts keep upgrades.
//!
//! **The last level** (`ILmr`, `DLmr`, `DLmw`: Cachegrind's LL) is the machine's last cache
//! level, read by `Ctx::last_level_misses`: the processor's private L2 when the preset has
//! one (`numachine`, `flash`: its misses, `Counters::l2_misses`); without one, the shared
//! level (`[[caches.shared]]` of a `cmp` machine, the `cachegrind` preset's LL): the misses of
//! this processor's requests in the slices' arrays, counted when the request is decided at
//! its slice, so the miss goes to the reference that waited for it. On a machine with no cache
//! beyond the L1s (`power2`), the L1 is the last level: `ILmr`/`DLmr`/`DLmw` are then the L1
//! misses that went to memory, equal to `I1mr`/`D1mr`/`D1mw`, as Cachegrind reports with an
//! LL no larger than its L1s. (Before issue 19's cg19 the file read the last *private*
//! level, so on a machine without a private L2 every L1 miss was an LL miss.)
//!
//! **Attribution.** Events go to the instruction that caused them, as Cachegrind attributes
//! them: a trace records executed blocks, not single instructions, so the block's
//! instructions are decoded from the program's ELF files ([`super::code_lines`]); every
//! execution of a block counts one `Ir` for each of its instructions; a data reference goes to
//! the instruction the trace's instruction counts place it on (the `icount` of each record:
//! instructions since the previous record, this one's included); an I-cache miss goes to the
//! instruction holding the first byte of the line that missed. Each instruction is then named
//! by the function whose ELF symbol holds it and, where the file has DWARF line information,
//! by its source file and line (`fl=` the source file, as Cachegrind writes it), so
//! `cg_annotate` annotates the source. Without line information an instruction's counts are
//! at line 0 of its function, in `fl=` the ELF file; a block that cannot be decoded (code
//! outside any file, generated at run time) counts at line 0 of its function as a whole. A
//! block outside any symbol is `???` of its file, as Cachegrind names it; outside any file,
//! `???` of its mapping (`[anon 4 KiB]`, ...) or of `???`.

use super::code_lines::ElfCode;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use tracefmt::{Access, AccessKind, Header};

/// Cachegrind's events, in its order.
pub const EVENTS: [&str; 9] = [
    "Ir", "I1mr", "ILmr", "Dr", "D1mr", "DLmr", "Dw", "D1mw", "DLmw",
];

/// Counts of one code block (indices as [`EVENTS`]).
pub type Counts = [u64; 9];

/// Data events of one instruction: `Dr D1mr DLmr Dw D1mw DLmw` (indices 3.. of [`EVENTS`]).
pub type DataCounts = [u64; 6];

/// The events of one code block (a start address and an instruction count), merged over
/// threads and executions.
#[derive(Clone, Debug, Default)]
pub struct Block {
    pub addr: u64,
    pub bytes: u64,
    pub insns: u32,
    /// Times the block started executing.
    pub execs: u64,
    /// The whole block's counts (indices as [`EVENTS`]).
    pub counts: Counts,
    /// Data events by the instruction's index in the block (empty until the first).
    pub data: Vec<DataCounts>,
    /// `[I1mr, ILmr]` by I-cache line of the block (0: the line holding its start).
    pub fetch: Vec<[u64; 2]>,
}

/// Events per executed code block (by start address and instruction count: QEMU may
/// translate one start into blocks of different lengths), merged over threads.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    index: FxHashMap<(u64, u32), usize>,
    /// In first-execution order.
    pub blocks: Vec<Block>,
    /// The I-cache line size the `fetch` counts are in.
    pub line_bytes: u64,
    /// Data references the instruction counts placed outside their block (counted at its
    /// first instruction); 0 for a consistent trace.
    pub unplaced: u64,
}

impl Profile {
    fn slot(&mut self, addr: u64, bytes: u64, insns: u32) -> usize {
        let n = self.blocks.len();
        *self.index.entry((addr, insns)).or_insert_with(|| {
            self.blocks.push(Block {
                addr,
                bytes,
                insns,
                ..Block::default()
            });
            n
        })
    }

    /// Adds another profile's counts (another thread's).
    pub fn merge(&mut self, other: &Profile) {
        self.line_bytes = self.line_bytes.max(other.line_bytes);
        self.unplaced += other.unplaced;
        for b in &other.blocks {
            let i = self.slot(b.addr, b.bytes, b.insns);
            let mine = &mut self.blocks[i];
            mine.execs += b.execs;
            add(&mut mine.counts, &b.counts);
            add_rows(&mut mine.data, &b.data);
            add_rows(&mut mine.fetch, &b.fetch);
        }
    }

    /// Totals over every block.
    pub fn totals(&self) -> Counts {
        let mut t = [0; 9];
        for b in &self.blocks {
            add(&mut t, &b.counts);
        }
        t
    }
}

fn add<const N: usize>(a: &mut [u64; N], b: &[u64; N]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

fn add_rows<const N: usize>(a: &mut Vec<[u64; N]>, b: &[[u64; N]]) {
    if a.len() < b.len() {
        a.resize(b.len(), [0; N]);
    }
    for (x, y) in a.iter_mut().zip(b) {
        add(x, y);
    }
}

/// One replayed thread's profiler: replays accesses and code blocks as the plain replay does,
/// reading the counters around each.
pub struct Profiler {
    pub profile: Profile,
    /// The block executing (its slot in `profile`).
    cur: usize,
    /// Instructions of the blocks before the executing one (the tracer's `retired` at its
    /// start), and the position of the last record (instructions up to it, the tracer's
    /// `last_insn`): a data record at `pos` is instruction `pos - 1 - block_start` of its
    /// block.
    block_start: u64,
    blocks_total: u64,
    pos: u64,
}

impl Default for Profiler {
    fn default() -> Profiler {
        let mut profile = Profile::default();
        // Accesses before the thread's first code block (none in QEMU traces) go to 0.
        let cur = profile.slot(0, 0, 0);
        Profiler {
            profile,
            cur,
            block_start: 0,
            blocks_total: 0,
            pos: 0,
        }
    }
}

/// The processor's L1 I, L1 D and last-level misses so far (see the module's "Counting").
fn misses(ctx: &mut crate::Ctx) -> (u64, u64, u64) {
    let ll = ctx.last_level_misses();
    let c = ctx.counters();
    (c.l1i_misses, c.l1d_misses, ll)
}

impl Profiler {
    /// Replays one batch entry (a code block or a data reference, its instructions retired
    /// first) and counts its events.
    pub fn replay(&mut self, ctx: &mut crate::Ctx, a: &Access) {
        if a.kind == AccessKind::Code {
            self.code(ctx, a.addr, a.bytes as u64, a.icount);
            return;
        }
        if a.icount > 1 {
            ctx.int(a.icount as u64 - 1);
        }
        self.data(ctx, a);
    }

    /// An instructions-only record of `n` instructions (already retired by the caller).
    pub fn instructions(&mut self, n: u64) {
        self.pos += n;
    }

    /// A code block of `bytes` bytes and `insns` instructions at `addr` starts executing.
    pub fn code(&mut self, ctx: &mut crate::Ctx, addr: u64, bytes: u64, insns: u32) {
        self.cur = self.profile.slot(addr, bytes, insns);
        self.block_start = self.blocks_total;
        self.blocks_total += insns as u64;
        if self.profile.line_bytes == 0 {
            self.profile.line_bytes = ctx.l1i_line_bytes();
        }
        let b = &mut self.profile.blocks[self.cur];
        let (i0, _, l0) = misses(ctx);
        let mut prev = (i0, l0);
        ctx.fetch_code_each(addr, bytes, |k, ctx| {
            let (i, _, l) = misses(ctx);
            let now = (i, l);
            if now != prev {
                let k = k as usize;
                if b.fetch.len() <= k {
                    b.fetch.resize(k + 1, [0; 2]);
                }
                b.fetch[k][0] += now.0 - prev.0;
                b.fetch[k][1] += now.1 - prev.1;
                prev = now;
            }
        });
        b.execs += 1;
        b.counts[0] += insns as u64;
        b.counts[1] += prev.0 - i0;
        b.counts[2] += prev.1 - l0;
    }

    /// A data reference, its instructions already retired. Its D1 misses are its lines
    /// the L1 D did not hold (in any state) before it, as Cachegrind counts them: a store to
    /// a line held shared is an upgrade, a miss for the machine's counters (it goes to the
    /// bus, and to memory under `numachine`'s protocol, which grants no exclusive-clean
    /// copy) but a hit for a cache without coherence; its L2 misses are counted only when a
    /// line was absent from the L1 D, for the same reason. (`mm.c`, a 200x200 matrix
    /// product: D1mw 25,892 and DLmw 15,311 against Cachegrind's 20,747 and 10,332, of
    /// which 5,045 were upgrades; now 20,847 and 10,266.)
    pub fn data(&mut self, ctx: &mut crate::Ctx, a: &Access) {
        self.pos += a.icount as u64;
        let absent = ctx.l1d_absent_lines(a.addr, a.size as u32);
        let (_, _, l0) = misses(ctx);
        super::replay::access(ctx, a);
        let (_, _, l1) = misses(ctx);
        let insns = self.profile.blocks[self.cur].insns as u64;
        let idx = match self.pos.checked_sub(1 + self.block_start) {
            Some(i) if i < insns => i as usize,
            _ => {
                // (The place-holder block before the first code block has no instructions.)
                self.profile.unplaced += u64::from(insns > 0);
                0
            }
        };
        let b = &mut self.profile.blocks[self.cur];
        let base = if a.kind == AccessKind::Store { 3 } else { 0 };
        let events = [1, absent, if absent > 0 { l1 - l0 } else { 0 }];
        for (k, e) in events.into_iter().enumerate() {
            b.counts[3 + base + k] += e;
        }
        if b.data.len() <= idx {
            b.data.resize(idx + 1, [0; 6]);
        }
        for (k, e) in events.into_iter().enumerate() {
            b.data[idx][base + k] += e;
        }
    }
}

/// Names code addresses: (file, function, line) from the trace's mappings and the ELF files'
/// symbols and line tables.
pub struct Namer {
    /// Mapping ranges with their file (or mapping) name and the file's load bias.
    maps: Vec<(u64, u64, String, u64)>,
    files: FxHashMap<String, Option<ElfCode>>,
    /// The traced program as the replay found it (symbols), in place of its recorded path.
    program: Option<(String, std::path::PathBuf)>,
}

/// Where a code address is: the mapping's file (or name), and the ELF file's code with the
/// address in its file addresses, when the file could be read.
struct Located<'a> {
    file: String,
    code: Option<(&'a ElfCode, u64)>,
}

impl Namer {
    pub fn new(header: &Header, program: Option<&Path>) -> Namer {
        let mut bias: FxHashMap<&str, u64> = FxHashMap::default();
        for m in &header.maps {
            if m.name.starts_with('/') {
                let b = bias.entry(m.name.as_str()).or_insert(m.start);
                *b = (*b).min(m.start);
            }
        }
        let maps = header
            .maps
            .iter()
            .map(|m| {
                let b = bias.get(m.name.as_str()).copied().unwrap_or(0);
                (m.start, m.end, m.name.clone(), b)
            })
            .collect();
        let recorded = header
            .program_path
            .clone()
            .unwrap_or_else(|| header.program.clone());
        Namer {
            maps,
            files: FxHashMap::default(),
            program: program.map(|p| (recorded, p.to_path_buf())),
        }
    }

    fn locate(&mut self, addr: u64) -> Located<'_> {
        let Some((_, _, file, bias)) = self
            .maps
            .iter()
            .find(|m| m.0 <= addr && addr < m.1)
            .cloned()
        else {
            return Located {
                file: "???".into(),
                code: None,
            };
        };
        if !file.starts_with('/') {
            return Located { file, code: None };
        }
        let program = self.program.clone();
        let f = self.files.entry(file.clone()).or_insert_with(|| {
            let path = match &program {
                Some((rec, found)) if *rec == file => found.clone(),
                _ => std::path::PathBuf::from(&file),
            };
            ElfCode::read(&path)
        });
        let code = f.as_ref().map(|f| {
            let local = if f.position_independent {
                addr - bias
            } else {
                addr
            };
            (f, local)
        });
        Located { file, code }
    }

    /// (file, function) of a code address.
    pub fn name(&mut self, addr: u64) -> (String, String) {
        let at = self.locate(addr);
        let name = at.code.and_then(|(f, local)| f.function_of(local));
        // Cachegrind's name for code outside any symbol (a stripped binary's static
        // functions): `???`, one entry per file.
        (at.file.clone(), name.unwrap_or("???").to_string())
    }

    /// (file, function, line) of an instruction: the source file and line where the ELF
    /// file has line information, else the ELF file and line 0.
    pub fn place(&mut self, addr: u64) -> (String, String, u32) {
        let at = self.locate(addr);
        let func = at
            .code
            .and_then(|(f, local)| f.function_of(local))
            .unwrap_or("???")
            .to_string();
        match at.code.and_then(|(f, local)| f.line_of(local)) {
            Some((src, line)) => (src, func, line),
            None => (at.file, func, 0),
        }
    }

    /// The runtime addresses and lengths of the `insns` instructions of the block at `addr`,
    /// decoded from its ELF file; `None` outside a readable file.
    pub fn instructions(&mut self, addr: u64, insns: u32) -> Option<Vec<(u64, u32)>> {
        let (f, local) = self.locate(addr).code?;
        let v = f.instructions(local, insns)?;
        Some(v.into_iter().map(|(a, n)| (a - local + addr, n)).collect())
    }
}

/// Counts by (file, function), then by line.
type ByLine = BTreeMap<(String, String), BTreeMap<u32, Counts>>;

/// Spreads one block's counts over its instructions (see the module's "Attribution") and adds
/// them to `out` by file, function and line. A block that does not decode counts as a whole
/// at line 0 of its function.
fn attribute(b: &Block, line_bytes: u64, namer: &mut Namer, out: &mut ByLine) {
    let mut put = |key: (String, String), line: u32, c: &Counts| {
        let e = out.entry(key).or_default().entry(line).or_insert([0; 9]);
        add(e, c);
    };
    if b.addr == 0 {
        let key = ("???".into(), "(before the first code block)".into());
        put(key, 0, &b.counts);
        return;
    }
    let Some(ins) = namer.instructions(b.addr, b.insns) else {
        put(namer.name(b.addr), 0, &b.counts);
        return;
    };
    let mut per: Vec<Counts> = vec![[0; 9]; ins.len()];
    for c in &mut per {
        c[0] = b.execs;
    }
    for (c, d) in per.iter_mut().zip(&b.data) {
        for (k, x) in d.iter().enumerate() {
            c[3 + k] += x;
        }
    }
    let lb = line_bytes.max(1);
    for (k, f) in b.fetch.iter().enumerate() {
        // The instruction holding the line's first byte (the block's first, for line 0).
        let i = if k == 0 {
            0
        } else {
            let start = (b.addr / lb + k as u64) * lb;
            ins.partition_point(|x| x.0 <= start).saturating_sub(1)
        };
        per[i][1] += f[0];
        per[i][2] += f[1];
    }
    for (&(addr, _), c) in ins.iter().zip(&per) {
        if c.iter().any(|&x| x != 0) {
            let (file, func, line) = namer.place(addr);
            put((file, func), line, c);
        }
    }
}

/// The `cachegrind.out` text of `profile`: a header naming the simulated caches and the
/// command, then per file and function the counts by line, then the summary.
pub fn render(
    profile: &Profile,
    namer: &mut Namer,
    caches: [(&str, &machine::config::CacheCfg); 3],
    cmd: &str,
) -> String {
    let mut by_line = ByLine::new();
    for b in &profile.blocks {
        if b.counts.iter().any(|&x| x != 0) {
            attribute(b, profile.line_bytes, namer, &mut by_line);
        }
    }
    let mut out = String::new();
    for (label, c) in &caches {
        let assoc = if c.assoc == 1 {
            "direct-mapped".to_string()
        } else {
            format!("{}-way associative", c.assoc)
        };
        let _ = writeln!(
            out,
            "desc: {label} cache:         {} B, {} B, {assoc}",
            c.size_bytes, c.line_bytes
        );
    }
    let _ = writeln!(
        out,
        "desc: simulated by pmusim (timing and coherence included)"
    );
    let _ = writeln!(out, "cmd: {cmd}");
    let _ = writeln!(out, "events: {}", EVENTS.join(" "));
    let mut last_file = None;
    for ((file, func), lines) in &by_line {
        if last_file != Some(file) {
            let _ = writeln!(out, "fl={file}");
            last_file = Some(file);
        }
        let _ = writeln!(out, "fn={func}");
        for (line, c) in lines {
            let counts: Vec<String> = c.iter().map(|x| x.to_string()).collect();
            let _ = writeln!(out, "{line} {}", counts.join(" "));
        }
    }
    let t: Vec<String> = profile.totals().iter().map(|x| x.to_string()).collect();
    let _ = writeln!(out, "summary: {}", t.join(" "));
    out
}
