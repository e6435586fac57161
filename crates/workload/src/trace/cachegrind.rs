//! Cachegrind-compatible output of a trace replay (`pmusim run trace:FILE --cachegrind-out
//! OUT`): the simulated machine's instruction and data cache events per function, in the
//! `cachegrind.out` format that `cg_annotate` and KCachegrind read (issue 19, item 4).
//!
//! **Counting.** Cachegrind's events are `Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw`. The replay
//! reads the processor's exact counters around every code block and data reference
//! ([`Profiler`]): a block's instruction fetch gives `Ir` (its instructions), `I1mr` (L1
//! I-cache misses of its lines) and `ILmr` (those that also missed the L2); a load gives `Dr`
//! and its L1 and L2 misses, a store `Dw`, `D1mw`, `DLmw`; a modify (a load and a store of
//! one address by one instruction) counts as one read, as Cachegrind counts it. Misses of the
//! second line of an access that spans two count with the access. The counts are the
//! simulated machine's (its geometry, inclusion), except that a store to a line the L1 D
//! holds shared (an upgrade) is no miss, as in Cachegrind, which has no coherence
//! ([`Profiler::data`]); the report's own miss counts keep upgrades.
//!
//! **Attribution.** Events go to the code block that was executing (a trace records blocks,
//! not single instructions), and a block to the function whose ELF symbol holds its start:
//! the main program's and the shared libraries' symbol tables (the dynamic one when a file is
//! stripped), located through the trace's mappings. A block outside any symbol is `???` of
//! its file, as Cachegrind names it; outside any file, `???` of its mapping (`[anon 4 KiB]`,
//! ...) or of `???`. Lines: every count is given at
//! line 0 of its function (`cg_annotate` shows the per-function table; per-line annotation
//! needs the DWARF line table, which this does not read yet).

use object::{Object, ObjectKind, ObjectSymbol, SymbolKind};
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

/// Events per executed code block (by start address), merged over threads.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    index: FxHashMap<u64, usize>,
    /// (block start, counts), in first-execution order.
    pub blocks: Vec<(u64, Counts)>,
}

impl Profile {
    fn slot(&mut self, addr: u64) -> usize {
        let n = self.blocks.len();
        *self.index.entry(addr).or_insert_with(|| {
            self.blocks.push((addr, [0; 9]));
            n
        })
    }

    /// Adds another profile's counts (another thread's).
    pub fn merge(&mut self, other: &Profile) {
        for &(addr, c) in &other.blocks {
            let i = self.slot(addr);
            for (a, b) in self.blocks[i].1.iter_mut().zip(c) {
                *a += b;
            }
        }
    }

    /// Totals over every block.
    pub fn totals(&self) -> Counts {
        let mut t = [0; 9];
        for (_, c) in &self.blocks {
            for (a, b) in t.iter_mut().zip(c) {
                *a += b;
            }
        }
        t
    }
}

/// One replayed thread's profiler: replays accesses and code blocks as the plain replay does,
/// reading the counters around each.
pub struct Profiler {
    pub profile: Profile,
    /// The block executing (its slot in `profile`).
    cur: usize,
}

impl Default for Profiler {
    fn default() -> Profiler {
        let mut profile = Profile::default();
        // Accesses before the thread's first code block (none in QEMU traces) go to 0.
        let cur = profile.slot(0);
        Profiler { profile, cur }
    }
}

fn misses(ctx: &mut crate::Ctx) -> (u64, u64, u64) {
    let c = ctx.counters();
    (c.l1i_misses, c.l1d_misses, c.l2_misses)
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

    /// A code block of `bytes` bytes and `insns` instructions at `addr` starts executing.
    pub fn code(&mut self, ctx: &mut crate::Ctx, addr: u64, bytes: u64, insns: u32) {
        self.cur = self.profile.slot(addr);
        let (i0, _, l0) = misses(ctx);
        ctx.fetch_code(addr, bytes);
        let (i1, _, l1) = misses(ctx);
        let c = &mut self.profile.blocks[self.cur].1;
        c[0] += insns as u64;
        c[1] += i1 - i0;
        c[2] += l1 - l0;
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
        let absent = ctx.l1d_absent_lines(a.addr, a.size as u32);
        let (_, _, l0) = misses(ctx);
        super::replay::access(ctx, a);
        let (_, _, l1) = misses(ctx);
        let c = &mut self.profile.blocks[self.cur].1;
        let base = if a.kind == AccessKind::Store { 6 } else { 3 };
        c[base] += 1;
        c[base + 1] += absent;
        c[base + 2] += if absent > 0 { l1 - l0 } else { 0 };
    }
}

/// The functions of one ELF file: (start, end, name) sorted by start, in file addresses.
struct Functions {
    position_independent: bool,
    syms: Vec<(u64, u64, String)>,
}

fn functions(path: &Path) -> Option<Functions> {
    let bytes = std::fs::read(path).ok()?;
    let file = object::File::parse(&*bytes).ok()?;
    let mut syms: Vec<(u64, u64, String)> = file
        .symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
        .filter_map(|s| {
            let name = s.name().ok()?;
            Some((s.address(), s.address() + s.size().max(1), name.to_string()))
        })
        .collect();
    // One name per start (the full table's first), the longest extent.
    syms.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    syms.dedup_by_key(|s| s.0);
    Some(Functions {
        position_independent: file.kind() == ObjectKind::Dynamic,
        syms,
    })
}

impl Functions {
    fn name_of(&self, addr: u64) -> Option<&str> {
        let i = self.syms.partition_point(|s| s.0 <= addr);
        let s = self.syms.get(i.checked_sub(1)?)?;
        (addr < s.1).then_some(s.2.as_str())
    }
}

/// Names code addresses: (file, function) from the trace's mappings and the ELF files' symbols.
pub struct Namer {
    /// Mapping ranges with their file (or mapping) name and the file's load bias.
    maps: Vec<(u64, u64, String, u64)>,
    files: FxHashMap<String, Option<Functions>>,
    /// The traced program as the replay found it (symbols), in place of its recorded path.
    program: Option<(String, std::path::PathBuf)>,
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

    /// (file, function) of a code address.
    pub fn name(&mut self, addr: u64) -> (String, String) {
        let Some((_, _, file, bias)) = self
            .maps
            .iter()
            .find(|m| m.0 <= addr && addr < m.1)
            .cloned()
        else {
            return ("???".into(), "???".into());
        };
        if !file.starts_with('/') {
            return (file, "???".into());
        }
        let program = self.program.clone();
        let f = self.files.entry(file.clone()).or_insert_with(|| {
            let path = match &program {
                Some((rec, found)) if *rec == file => found.clone(),
                _ => std::path::PathBuf::from(&file),
            };
            functions(&path)
        });
        let local = match f {
            Some(f) if f.position_independent => addr - bias,
            _ => addr,
        };
        let name = f.as_ref().and_then(|f| f.name_of(local));
        // Cachegrind's name for code outside any symbol (a stripped binary's static
        // functions): `???`, one entry per file.
        (file.clone(), name.unwrap_or("???").to_string())
    }
}

/// The `cachegrind.out` text of `profile`: a header naming the simulated caches and the
/// command, then per file and function the counts at line 0, then the summary.
pub fn render(
    profile: &Profile,
    namer: &mut Namer,
    caches: [(&str, &machine::config::CacheCfg); 3],
    cmd: &str,
) -> String {
    let mut by_fn: BTreeMap<(String, String), Counts> = BTreeMap::new();
    for &(addr, c) in &profile.blocks {
        if c.iter().all(|&x| x == 0) {
            continue;
        }
        let key = if addr == 0 {
            (
                "???".to_string(),
                "(before the first code block)".to_string(),
            )
        } else {
            namer.name(addr)
        };
        let e = by_fn.entry(key).or_insert([0; 9]);
        for (a, b) in e.iter_mut().zip(c) {
            *a += b;
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
    for ((file, func), c) in &by_fn {
        if last_file != Some(file) {
            let _ = writeln!(out, "fl={file}");
            last_file = Some(file);
        }
        let _ = writeln!(out, "fn={func}");
        let counts: Vec<String> = c.iter().map(|x| x.to_string()).collect();
        let _ = writeln!(out, "0 {}", counts.join(" "));
    }
    let t: Vec<String> = profile.totals().iter().map(|x| x.to_string()).collect();
    let _ = writeln!(out, "summary: {}", t.join(" "));
    out
}
