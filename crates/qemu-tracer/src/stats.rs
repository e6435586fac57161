//! Reads a `.pmt` file back: a visitor over every record and per-thread totals, for the
//! runner's summary and the tests (the workload crate's reader is the one the simulator uses).

use crate::encode::{Decoder, Record, TAG_LOAD, TAG_MODIFY, TAG_STORE};
use std::collections::BTreeMap;
use std::io::{BufReader, Read};

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
}

#[derive(Debug, Default, Clone)]
pub struct TraceStats {
    pub header: serde_json::Value,
    pub threads: BTreeMap<u32, ThreadStats>,
    pub records: u64,
    pub chunks: u64,
}

impl TraceStats {
    /// Loads plus stores (a modify counts as one of each, like Cachegrind's `Dr + Dw`).
    pub fn references(&self) -> u64 {
        self.threads.values().map(|t| t.loads + t.stores).sum()
    }
}

fn read_u32(r: &mut impl Read) -> std::io::Result<u32> {
    let mut b = [0; 4];
    r.read_exact(&mut b)?;
    Ok(u32::from_le_bytes(b))
}

fn read_u64(r: &mut impl Read) -> std::io::Result<u64> {
    let mut b = [0; 8];
    r.read_exact(&mut b)?;
    Ok(u64::from_le_bytes(b))
}

/// Calls `visit(tid, record)` for every record, in each thread's order; returns the header.
pub fn visit(
    path: &std::path::Path,
    mut visit: impl FnMut(u32, &Record),
) -> Result<(serde_json::Value, u64, u64), String> {
    let err = |e: std::io::Error| format!("{}: {e}", path.display());
    let mut r = BufReader::new(std::fs::File::open(path).map_err(err)?);
    let mut magic = [0u8; 10];
    r.read_exact(&mut magic).map_err(err)?;
    if &magic[..8] != crate::writer::MAGIC {
        return Err(format!("{}: not a .pmt trace (bad magic)", path.display()));
    }
    let hlen = read_u32(&mut r).map_err(err)? as usize;
    let mut hjson = vec![0; hlen];
    r.read_exact(&mut hjson).map_err(err)?;
    let header: serde_json::Value = serde_json::from_slice(&hjson)
        .map_err(|e| format!("{}: bad header JSON: {e}", path.display()))?;
    let mut prev_addr: BTreeMap<u32, u64> = BTreeMap::new();
    let (mut records, mut chunks) = (0u64, 0u64);
    loop {
        let mut kind = [0u8];
        r.read_exact(&mut kind).map_err(|e| format!("{}: no end record: {e}", path.display()))?;
        match kind[0] {
            0 => {
                let total = read_u64(&mut r).map_err(err)?;
                if total != records {
                    return Err(format!(
                        "{}: end record says {total} records, chunks hold {records}",
                        path.display()
                    ));
                }
                return Ok((header, records, chunks));
            }
            1 => {
                let tid = read_u32(&mut r).map_err(err)?;
                let clen = read_u32(&mut r).map_err(err)? as usize;
                let rlen = read_u32(&mut r).map_err(err)? as usize;
                let _first_seq = read_u64(&mut r).map_err(err)?;
                let mut packed = vec![0; clen];
                r.read_exact(&mut packed).map_err(err)?;
                let raw = zstd::bulk::decompress(&packed, rlen).map_err(err)?;
                let prev = prev_addr.entry(tid).or_insert(0);
                let mut d = Decoder::new(&raw, *prev);
                while let Some(rec) =
                    d.next_record().map_err(|e| format!("{}: chunk {chunks}: {e}", path.display()))?
                {
                    visit(tid, &rec);
                    records += 1;
                }
                *prev = d.prev_addr;
                chunks += 1;
            }
            k => return Err(format!("{}: unknown chunk kind {k}", path.display())),
        }
    }
}

/// Per-thread totals of a trace.
pub fn stats(path: &std::path::Path) -> Result<TraceStats, String> {
    let mut threads: BTreeMap<u32, ThreadStats> = BTreeMap::new();
    let (header, records, chunks) = visit(path, |tid, rec| {
        let t = threads.entry(tid).or_default();
        match *rec {
            Record::Access { kind, insns, .. } => {
                t.insns += insns;
                match kind {
                    TAG_LOAD => t.loads += 1,
                    TAG_STORE => t.stores += 1,
                    TAG_MODIFY => {
                        t.loads += 1;
                        t.stores += 1;
                        t.modifies += 1;
                    }
                    _ => {}
                }
            }
            Record::Insns(n) => t.insns += n,
            Record::ThreadStart { parent, .. } => t.parent = Some(parent),
            Record::ThreadExit { .. } => t.exited = true,
            Record::Sync { .. } => t.sync_records += 1,
        }
    })?;
    Ok(TraceStats { header, threads, records, chunks })
}
