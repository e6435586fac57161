//! Memory traces of real programs: recording with valgrind lackey, conversion to the native
//! `.pmt` format (crate `tracefmt`), naming of data from ELF symbols or range files, and a
//! summary of a trace for `pmusim trace info`.
//!
//! These modules do not use the `machine` crate: they turn programs and files into records
//! and named address ranges, which the trace workload then replays on a machine.

pub mod cachegrind;
pub mod code_lines;
pub mod lackey;
pub mod record;
pub mod replay;
pub mod symbols;
pub mod synthetic;

use rustc_hash::FxHashSet;
use std::fmt;
use std::fs::File;
use std::io::BufReader;
use std::path::Path;
use tracefmt::{AccessKind, Reader, Record};

/// Everything that can go wrong with traces, each naming the file (and line) concerned.
#[derive(Debug)]
pub enum Error {
    Io {
        path: String,
        err: std::io::Error,
    },
    /// A malformed line of a text input (lackey output, range file).
    Parse {
        source: String,
        line: u64,
        what: String,
    },
    /// The trace file itself.
    Format {
        path: String,
        err: tracefmt::Error,
    },
    /// An ELF file that cannot be read.
    Elf {
        path: String,
        what: String,
    },
    /// valgrind is not installed.
    ValgrindMissing,
    /// The traced program or valgrind failed.
    Record(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { path, err } => write!(f, "{path}: {err}"),
            Error::Parse { source, line, what } => write!(f, "{source}:{line}: {what}"),
            Error::Format { path, err } => write!(f, "{path}: {err}"),
            Error::Elf { path, what } => write!(f, "{path}: {what}"),
            Error::ValgrindMissing => {
                write!(
                    f,
                    "valgrind not found: install it with apt-get install valgrind"
                )
            }
            Error::Record(what) => write!(f, "{what}"),
        }
    }
}

impl std::error::Error for Error {}

impl Error {
    pub(crate) fn io(path: impl AsRef<Path>, err: std::io::Error) -> Error {
        Error::Io {
            path: path.as_ref().display().to_string(),
            err,
        }
    }
}

/// Per-thread figures of a trace.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ThreadInfo {
    pub tid: u32,
    pub records: u64,
    pub loads: u64,
    pub stores: u64,
    pub modifies: u64,
    pub instructions: u64,
    /// Code records: executed blocks, and the instructions they hold (which should equal
    /// `instructions` up to the blocks a thread left early).
    pub code_blocks: u64,
    pub code_instructions: u64,
}

/// A description of a trace file, as `pmusim trace info` prints it.
#[derive(Clone, Debug, Default)]
pub struct TraceInfo {
    pub path: String,
    pub header: tracefmt::Header,
    pub file_bytes: u64,
    pub threads: Vec<ThreadInfo>,
    /// Distinct 64-byte lines touched by any access (an access spanning two lines counts both).
    pub distinct_lines: u64,
}

impl TraceInfo {
    pub fn references(&self) -> u64 {
        self.threads
            .iter()
            .map(|t| t.loads + t.stores + t.modifies)
            .sum()
    }

    pub fn instructions(&self) -> u64 {
        self.threads.iter().map(|t| t.instructions).sum()
    }

    /// File bytes per data reference (a modify counts once).
    pub fn bytes_per_reference(&self) -> f64 {
        self.file_bytes as f64 / self.references().max(1) as f64
    }
}

impl fmt::Display for TraceInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let h = &self.header;
        writeln!(f, "trace:        {}", self.path)?;
        writeln!(f, "tracer:       {}", h.tracer)?;
        writeln!(f, "program:      {} {}", h.program, h.args.join(" "))?;
        writeln!(f, "arch:         {}", h.arch)?;
        match h.load_bias {
            Some(b) => writeln!(
                f,
                "load bias:    {b:#x} ({})",
                h.load_bias_source
                    .as_deref()
                    .unwrap_or("source not recorded")
            )?,
            None => writeln!(f, "load bias:    none")?,
        }
        writeln!(f, "file bytes:   {}", self.file_bytes)?;
        writeln!(f, "threads:      {}", self.threads.len())?;
        let (mut l, mut s, mut m) = (0, 0, 0);
        for t in &self.threads {
            l += t.loads;
            s += t.stores;
            m += t.modifies;
        }
        writeln!(f, "instructions: {}", self.instructions())?;
        writeln!(
            f,
            "references:   {} (loads {l}, stores {s}, modifies {m})",
            self.references()
        )?;
        writeln!(f, "bytes/ref:    {:.3}", self.bytes_per_reference())?;
        let blocks: u64 = self.threads.iter().map(|t| t.code_blocks).sum();
        if blocks > 0 || h.code_records {
            let insns: u64 = self.threads.iter().map(|t| t.code_instructions).sum();
            writeln!(
                f,
                "code blocks:  {blocks} executed, holding {insns} instructions (instruction \
                 fetch recorded)"
            )?;
        }
        writeln!(f, "64 B lines:   {} distinct", self.distinct_lines)?;
        writeln!(
            f,
            "{:>10} {:>12} {:>12} {:>12} {:>12} {:>14}",
            "tid", "records", "loads", "stores", "modifies", "instructions"
        )?;
        for t in &self.threads {
            writeln!(
                f,
                "{:>10} {:>12} {:>12} {:>12} {:>12} {:>14}",
                t.tid, t.records, t.loads, t.stores, t.modifies, t.instructions
            )?;
        }
        Ok(())
    }
}

/// The threads and data references of a trace just recorded, for the line `pmusim trace
/// record` prints: the totals its writer put in the header when it finished (the QEMU
/// plugin: [`tracefmt::Header::totals`]), else [`count_references`], which decodes the file.
pub fn recorded_totals(path: &Path) -> Result<(usize, u64), Error> {
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let reader = Reader::new(BufReader::new(file)).map_err(|err| Error::Format {
        path: path.display().to_string(),
        err,
    })?;
    match reader.header().totals() {
        Some(t) => Ok(t),
        None => count_references(path),
    }
}

/// The threads and data references (a modify counts once) of a whole trace, for the line
/// `pmusim trace record` prints: the records are decoded in batches and nothing else is
/// gathered, about a tenth of [`info`]'s work (python3 `sum(range(3_000_000))`, 190 M
/// references: 7 s of CPU with `info`, most of it the set of distinct lines). Any defect of
/// the file is an error, as in [`info`].
pub fn count_references(path: &Path) -> Result<(usize, u64), Error> {
    let name = path.display().to_string();
    let fmt_err = |err| Error::Format {
        path: name.clone(),
        err,
    };
    let bytes = std::fs::read(path).map_err(|e| Error::io(path, e))?;
    let streams = Reader::new(&bytes[..])
        .map_err(fmt_err)?
        .per_thread()
        .map_err(fmt_err)?;
    let threads = streams.threads.len();
    let mut refs = 0u64;
    let mut buf = vec![tracefmt::Access::default(); tracefmt::BATCH_ACCESSES];
    for mut s in streams.threads {
        while let Some(step) = s.next_batch(&mut buf) {
            match step.map_err(fmt_err)? {
                tracefmt::Step::Accesses(n) => {
                    refs += buf[..n]
                        .iter()
                        .filter(|a| a.kind != AccessKind::Code)
                        .count() as u64
                }
                tracefmt::Step::Other(Record::Access { .. }) => refs += 1,
                tracefmt::Step::Other(_) => {}
            }
        }
    }
    Ok((threads, refs))
}

/// Reads a whole trace and describes it. Any defect of the file (truncation, corruption) is
/// an error: a partial description would look like a valid shorter trace.
pub fn info(path: &Path) -> Result<TraceInfo, Error> {
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| Error::io(path, e))?;
    let file_bytes = file.metadata().map_err(|e| Error::io(path, e))?.len();
    let fmt_err = |err| Error::Format {
        path: name.clone(),
        err,
    };
    let mut reader = Reader::new(BufReader::with_capacity(1 << 20, file)).map_err(fmt_err)?;
    let header = reader.header().clone();
    let mut threads: Vec<ThreadInfo> = Vec::new();
    let mut lines: FxHashSet<u64> = FxHashSet::default();
    let mut cur = usize::MAX;
    while let Some((tid, rec)) = reader.next_record().map_err(fmt_err)? {
        if threads.get(cur).map(|t| t.tid) != Some(tid) {
            cur = match threads.iter().position(|t| t.tid == tid) {
                Some(i) => i,
                None => {
                    threads.push(ThreadInfo {
                        tid,
                        ..ThreadInfo::default()
                    });
                    threads.len() - 1
                }
            };
        }
        let t = &mut threads[cur];
        t.records += 1;
        t.instructions += rec.instructions();
        if let Record::Code { insns, .. } = rec {
            t.code_blocks += 1;
            t.code_instructions += insns as u64;
        }
        if let Record::Access {
            kind, addr, size, ..
        } = rec
        {
            match kind {
                AccessKind::Load => t.loads += 1,
                AccessKind::Store => t.stores += 1,
                AccessKind::Modify => t.modifies += 1,
                AccessKind::Code => unreachable!("a code block is a Record::Code"),
            }
            let first = addr >> 6;
            let last = addr.wrapping_add(size.max(1) as u64 - 1) >> 6;
            lines.insert(first);
            if last != first {
                lines.insert(last);
            }
        }
    }
    threads.sort_by_key(|t| t.tid);
    Ok(TraceInfo {
        path: name,
        header,
        file_bytes,
        threads,
        distinct_lines: lines.len() as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracefmt::{Header, Writer};

    #[test]
    fn info_counts_threads_kinds_and_lines() {
        let path =
            std::env::temp_dir().join(format!("pmusim-info-test-{}.pmt", std::process::id()));
        let file = File::create(&path).unwrap();
        let mut w = Writer::new(file, Header::new("qemu", "/bin/x", &[], "x86_64")).unwrap();
        let acc = |kind, addr, size| Record::Access {
            kind,
            addr,
            size,
            icount: 2,
        };
        w.push(7, &acc(AccessKind::Load, 0x1000, 8)).unwrap();
        w.push(7, &acc(AccessKind::Store, 0x1008, 8)).unwrap(); // same line
        w.push(9, &acc(AccessKind::Modify, 0x203c, 8)).unwrap(); // spans two lines
        w.push(9, &Record::Instructions(10)).unwrap();
        w.push(
            9,
            &Record::Code {
                addr: 0x400000,
                bytes: 12,
                insns: 3,
            },
        )
        .unwrap();
        w.finish().unwrap();
        let i = info(&path).unwrap();
        // The record line's count: the same threads and references, code blocks not
        // counted as references.
        assert_eq!(count_references(&path).unwrap(), (2, 3));
        std::fs::remove_file(&path).unwrap();
        assert_eq!(i.threads.len(), 2);
        assert_eq!(
            (i.threads[0].tid, i.threads[0].loads, i.threads[0].stores),
            (7, 1, 1)
        );
        assert_eq!(
            (
                i.threads[1].tid,
                i.threads[1].modifies,
                i.threads[1].records
            ),
            (9, 1, 3)
        );
        assert_eq!(i.instructions(), 2 + 2 + 2 + 10);
        assert_eq!(i.references(), 3);
        assert_eq!(i.distinct_lines, 3);
        let text = i.to_string();
        assert!(
            text.contains("references:   3 (loads 1, stores 1, modifies 1)"),
            "{text}"
        );
    }

    #[test]
    fn info_of_a_truncated_file_is_an_error_naming_it() {
        let path =
            std::env::temp_dir().join(format!("pmusim-info-trunc-{}.pmt", std::process::id()));
        let mut bytes = Vec::new();
        let mut w = Writer::new(&mut bytes, Header::new("qemu", "/bin/x", &[], "x86_64")).unwrap();
        w.push(1, &Record::Instructions(3)).unwrap();
        w.finish().unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 9]).unwrap();
        let e = info(&path).unwrap_err().to_string();
        std::fs::remove_file(&path).unwrap();
        assert!(
            e.contains("pmusim-info-trunc") && e.contains("truncated"),
            "{e}"
        );
    }
}
