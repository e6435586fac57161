//! Reads a `.pmt` file back: a visitor over every record and per-thread totals, for the
//! runner's summary and the tests (the workload crate's reader is the one the simulator uses).

use std::collections::BTreeMap;
use std::io::BufReader;
use tracefmt::{AccessKind, Record};

/// Totals of one thread.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ThreadStats {
    pub parent: Option<u64>,
    pub loads: u64,
    pub stores: u64,
    /// Modify records (each also counted in `loads` and `stores`).
    pub modifies: u64,
    pub insns: u64,
    pub sync_records: u64,
    pub exited: bool,
    /// Code records (executed blocks), the instructions and the code bytes they hold.
    pub code_blocks: u64,
    pub code_insns: u64,
    pub code_bytes: u64,
}

#[derive(Debug, Default, Clone)]
pub struct TraceStats {
    pub header: tracefmt::Header,
    pub threads: BTreeMap<u32, ThreadStats>,
    pub records: u64,
}

impl TraceStats {
    /// Loads plus stores (a modify counts as one of each, like Cachegrind's `Dr + Dw`).
    pub fn references(&self) -> u64 {
        self.threads.values().map(|t| t.loads + t.stores).sum()
    }
}

/// Calls `visit(tid, record)` for every record, in each thread's order; returns the header
/// and the number of records.
pub fn visit(
    path: &std::path::Path,
    mut visit: impl FnMut(u32, &Record),
) -> Result<(tracefmt::Header, u64), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", path.display());
    let file = std::fs::File::open(path).map_err(|e| err(&e))?;
    let mut r =
        tracefmt::Reader::new(BufReader::with_capacity(1 << 20, file)).map_err(|e| err(&e))?;
    let header = r.header().clone();
    let mut records = 0;
    while let Some((tid, rec)) = r.next_record().map_err(|e| err(&e))? {
        visit(tid, &rec);
        records += 1;
    }
    Ok((header, records))
}

/// Per-thread totals of a trace.
pub fn stats(path: &std::path::Path) -> Result<TraceStats, String> {
    let mut threads: BTreeMap<u32, ThreadStats> = BTreeMap::new();
    let (header, records) = visit(path, |tid, rec| {
        let t = threads.entry(tid).or_default();
        t.insns += rec.instructions();
        match *rec {
            Record::Access { kind, .. } => match kind {
                AccessKind::Load => t.loads += 1,
                AccessKind::Store => t.stores += 1,
                AccessKind::Modify => {
                    t.loads += 1;
                    t.stores += 1;
                    t.modifies += 1;
                }
                AccessKind::Code => unreachable!("a code block is a Record::Code"),
            },
            Record::Code { bytes, insns, .. } => {
                t.code_blocks += 1;
                t.code_insns += u64::from(insns);
                t.code_bytes += u64::from(bytes);
            }
            Record::Instructions(_) => {}
            Record::ThreadStart { parent, .. } => t.parent = Some(parent.into()),
            Record::ThreadExit { .. } => t.exited = true,
            Record::Sync { .. } => t.sync_records += 1,
        }
    })?;
    Ok(TraceStats {
        header,
        threads,
        records,
    })
}
