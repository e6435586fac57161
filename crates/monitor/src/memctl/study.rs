//! `pmusim study memctl`: the interface buffer's measured effect (issue 16 item 2).
//!
//! For each machine and workload, two runs on the same DRAM (the machine's `[memctl]`, or the
//! default controller): with the buffer (`buffer = true`, the machine's watermark and
//! read-ahead) and without it (`buffer = false`: every write and read a DRAM transaction).
//! Reported: execution time (simulated processor cycles), DRAM writes and reads, and the
//! buffer's write hits (collapses and merges) that saved DRAM writes. Every run must verify.

use crate::plugin::{Error, StudyArgs};
use machine::config::Preset;
use machine::mem::config::MemCtlCfg;
use machine::sim::{Machine, Options};
use report::{Cell, Column, Report, Section, Table};
use serde::Serialize;
use workload::Size;

/// One run's figures.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    pub cycles: u64,
    pub dram_writes: u64,
    pub dram_reads: u64,
    pub writes: u64,
    pub write_hits: u64,
    pub reads: u64,
    pub read_buffer_hits: u64,
}

/// One (machine, workload) pair: without and with the buffer.
#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub machine: String,
    pub procs: usize,
    pub workload: String,
    pub without: Run,
    pub with: Run,
}

const DEFAULT_WORKLOADS: &[&str] = &["fft", "lu", "radix", "ocean", "stream", "migratory"];

/// The machines of the study: (preset, processors).
fn machines(procs: &[usize]) -> Vec<(&'static str, usize)> {
    let np = procs.first().copied().unwrap_or(16);
    vec![("elan", 1), ("numachine", np)]
}

/// One run of `workload` on `preset` with `buffer` on or off.
pub fn one(preset: &Preset, workload: &str, size: Size, buffer: bool) -> Result<Run, String> {
    let mut p = preset.clone();
    let line = p.line_bytes();
    let mut m = p
        .memctl_enabled()
        .cloned()
        .unwrap_or_else(|| MemCtlCfg::default_for(line));
    m.enabled = true;
    m.buffer = buffer;
    p.memctl = Some(m);
    let mut mach = Machine::new(p, Options::default()).map_err(|e| e.0)?;
    let w = workload::install(workload::find(workload, size)?, &mut mach, None)?;
    let sum = mach.run(None).map_err(|e| format!("{workload}: {e}"))?;
    let v = w.verify();
    if !v.verified {
        return Err(format!("{workload} did not verify: {}", v.detail));
    }
    let c = mach.state().system.controller_reports();
    let s = |f: fn(&machine::mem::controller::ControllerReport) -> u64| c.iter().map(f).sum();
    Ok(Run {
        cycles: sum.cycles,
        dram_writes: s(|r| r.dram.writes),
        dram_reads: s(|r| r.dram.reads),
        writes: s(|r| r.buffer.writes),
        write_hits: s(|r| r.buffer.write_hits),
        reads: s(|r| r.buffer.reads),
        read_buffer_hits: s(|r| r.buffer.read_buffer_hits),
    })
}

/// Every (machine, workload) pair, on `jobs` host threads.
pub fn rows(
    workloads: &[String],
    procs: &[usize],
    size: Size,
    jobs: usize,
) -> Result<Vec<Row>, String> {
    let mut todo = Vec::new();
    for (m, np) in machines(procs) {
        for w in workloads {
            todo.push((m, np, w.clone()));
        }
    }
    let next = std::sync::Mutex::new(0usize);
    let out = std::sync::Mutex::new(vec![None; todo.len()]);
    std::thread::scope(|sc| {
        for _ in 0..jobs.max(1) {
            sc.spawn(|| loop {
                let i = {
                    let mut n = next.lock().unwrap();
                    let i = *n;
                    *n += 1;
                    i
                };
                let Some((m, np, w)) = todo.get(i) else {
                    return;
                };
                let r = Preset::builtin(m)
                    .and_then(|p| p.with_procs(*np))
                    .map_err(|e| e.0)
                    .and_then(|p| {
                        Ok(Row {
                            machine: m.to_string(),
                            procs: *np,
                            workload: w.clone(),
                            without: one(&p, w, size, false)?,
                            with: one(&p, w, size, true)?,
                        })
                    })
                    .map_err(|e| format!("{m} {w}: {e}"));
                out.lock().unwrap()[i] = Some(r);
            });
        }
    });
    out.into_inner()
        .unwrap()
        .into_iter()
        .map(|r| r.expect("every job ran"))
        .collect()
}

/// The table.
pub fn table(rows: &[Row]) -> Table {
    let mut t = Table::new(
        "memctl_buffer_effect",
        "The interface buffer's effect: DRAM transactions and execution time without and with it",
        vec![
            Column::label("machine"),
            Column::label("workload"),
            Column::count("cycles without"),
            Column::count("cycles with"),
            Column::percent("time saved"),
            Column::count("DRAM wr without"),
            Column::count("DRAM wr with"),
            Column::percent("wr saved"),
            Column::count("DRAM rd without"),
            Column::count("DRAM rd with"),
            Column::count("wr hits"),
            Column::count("rb hits"),
        ],
    );
    let saved = |a: u64, b: u64| {
        if a == 0 {
            Cell::Empty
        } else {
            Cell::Float(100.0 * (a as f64 - b as f64) / a as f64)
        }
    };
    for r in rows {
        t.row(vec![
            Cell::text(format!("{} ({}p)", r.machine, r.procs)),
            Cell::text(r.workload.clone()),
            Cell::Int(r.without.cycles),
            Cell::Int(r.with.cycles),
            saved(r.without.cycles, r.with.cycles),
            Cell::Int(r.without.dram_writes),
            Cell::Int(r.with.dram_writes),
            saved(r.without.dram_writes, r.with.dram_writes),
            Cell::Int(r.without.dram_reads),
            Cell::Int(r.with.dram_reads),
            Cell::Int(r.with.write_hits),
            Cell::Int(r.with.read_buffer_hits),
        ]);
    }
    t.set_note(
        "same DRAM banks and timings in both runs (the preset's [memctl], or the default controller); without: every request a DRAM transaction; with: the preset's buffer (elan: 32 words, watermark 16, read-ahead; numachine default: 8 lines, watermark 4, read-ahead); cycles: simulated processor cycles of the whole run; every run verified",
    );
    t
}

/// `pmusim study memctl [--kernels W,...] [--procs N] [--size test|small] [--jobs N] [--json]`.
pub fn run(a: &StudyArgs) -> Result<(String, u8), Error> {
    let workloads: Vec<String> = if a.kernels.is_empty() {
        DEFAULT_WORKLOADS.iter().map(|s| s.to_string()).collect()
    } else {
        a.kernels.clone()
    };
    for w in &workloads {
        workload::find(w, Size::Test).map_err(|e| Error::input(format!("study memctl: {e}")))?;
    }
    let size = match a.size.as_str() {
        "test" => Size::Test,
        "small" => Size::Small,
        "paper" => Size::Paper,
        s => {
            return Err(Error::input(format!(
                "study memctl: --size {s}: test, small or paper"
            )))
        }
    };
    let rows = rows(&workloads, &a.procs, size, a.jobs).map_err(Error::sim)?;
    let out = if a.json {
        let doc =
            serde_json::json!({"schema": "pmusim.study-memctl/1", "size": a.size, "rows": rows});
        serde_json::to_string_pretty(&doc).expect("plain data") + "\n"
    } else {
        let mut s = Section::new("study memctl");
        s.table(table(&rows));
        report::render::text::render(&Report { sections: vec![s] })
    };
    Ok((out, 0))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On `elan` the buffer saves exactly one DRAM write per write hit (every entry opened is
    /// one DRAM write) and the run gets faster; without it every write is a DRAM write.
    #[test]
    fn elan_buffer_saves_one_dram_write_per_hit() {
        let p = Preset::builtin("elan").unwrap();
        let without = one(&p, "stream", Size::Test, false).unwrap();
        let with = one(&p, "stream", Size::Test, true).unwrap();
        assert_eq!(without.dram_writes, without.writes);
        assert_eq!(without.write_hits, 0);
        assert_eq!(with.writes, without.writes, "same stores either way");
        assert_eq!(with.dram_writes, with.writes - with.write_hits);
        // Each 8-byte store is two words of one block: the second merges.
        assert!(with.write_hits * 2 >= with.writes - 2, "{with:?}");
        assert!(with.cycles < without.cycles, "{with:?} {without:?}");
    }
}
