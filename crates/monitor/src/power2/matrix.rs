//! The marked-process figure of issue 15: with 2, 4 and 8 processes on 1, 2 and 4
//! processors, the marked process's counts equal its exact per-process counts exactly, for
//! every event of groups 0 to 3 of every unit, and user-only plus supervisor-only equals all.
//! `pmusim study marking-matrix` prints the nine cells.
//!
//! One run per cell: the processes are the four kernels in turn (`fft`, `radix`, `lu`,
//! `ocean`, `fft.2`, ...; one thread each) under the operating system with the TLB on, the
//! second process marked (`--mark`). Twenty-four POWER2 monitors watch the same run (they
//! only observe, so they do not change it): for each group 0-3 (selected in all four units)
//! and each mode (all, user only, supervisor only), one with MARKED and one without. Every
//! counter of the marked monitors is compared with the marked process's exact count in that
//! mode (`marking::process_exact`: its threads' counts, split by MSR[PR] at every change),
//! and every counter of the unmarked ones is checked for user + supervisor = all.

use super::events::COUNTERS;
use super::marking::{mmcr, names, process_exact, run, Part, Spec};
use super::Setup;
use crate::plugin::{Error, StudyArgs};
use report::model::{Cell, Clock, Column, Section, Table};

/// Processes and processors of the figure's cells.
pub const PROCESSES: [usize; 3] = [2, 4, 8];
pub const PROCESSORS: [usize; 3] = [1, 2, 4];
/// Groups every unit is checked in.
pub const GROUPS: u8 = 4;
/// The kernels the processes run, in turn.
pub const KERNELS: [&str; 4] = ["fft", "radix", "lu", "ocean"];

/// One cell's outcome.
#[derive(Clone, Debug)]
pub struct Cell9 {
    pub processes: usize,
    pub processors: usize,
    pub marked: String,
    pub cycles: u64,
    pub switches: u64,
    /// The marked process's exact instructions.
    pub instructions: u64,
    /// Counters compared with the marked process's exact count (groups x modes x 22).
    pub compared: usize,
    /// Of those, equal.
    pub equal: usize,
    /// Counters checked for user + supervisor = all, and how many held.
    pub split: usize,
    pub split_ok: usize,
    /// The first mismatches, in words.
    pub wrong: Vec<String>,
}

impl Cell9 {
    pub fn ok(&self) -> bool {
        self.equal == self.compared && self.split_ok == self.split
    }
}

/// The 24 monitors' setups: for each group, each part, marked then unmarked.
fn setups() -> Vec<(u8, Part, bool)> {
    let mut v = Vec::new();
    for g in 0..GROUPS {
        for part in Part::ALL {
            for marked in [true, false] {
                v.push((g, part, marked));
            }
        }
    }
    v
}

/// Runs one cell.
pub fn cell(processes: usize, processors: usize, size: workload::Size) -> Result<Cell9, Error> {
    let kernels: Vec<String> = (0..processes)
        .map(|i| KERNELS[i % KERNELS.len()].to_string())
        .collect();
    let target = names(&kernels)[1].clone();
    let which = setups();
    let spec = Spec {
        kernels,
        size,
        procs: processors,
        threads: 1,
        mark: Some(target.clone()),
        virtualize: None,
        setups: which
            .iter()
            .map(|&(g, part, marked)| Setup {
                mmcr: mmcr(g, part, marked),
                ..Setup::default()
            })
            .collect(),
        tlb: true,
    };
    let d = run(&spec)?;
    let pid = d.pid(&target).expect("the marked process");
    let st = d.state();
    let mut out = Cell9 {
        processes,
        processors,
        marked: target,
        cycles: d.cycles,
        switches: d.switch_cost().0,
        instructions: process_exact(
            st,
            pid,
            super::events::Sig::INSTR,
            Default::default(),
            Part::All,
        )
        .unwrap_or(0),
        compared: 0,
        equal: 0,
        split: 0,
        split_ok: 0,
        wrong: Vec::new(),
    };
    let at = |g: u8, part: Part, marked: bool| {
        which
            .iter()
            .position(|&w| w == (g, part, marked))
            .expect("a monitor per setup")
    };
    for (k, &(g, part, marked)) in which.iter().enumerate() {
        let sigs = spec.setups[k].mmcr.signals();
        for (i, &s) in sigs.iter().enumerate() {
            let got = d.total(k, i);
            if marked {
                out.compared += 1;
                match process_exact(st, pid, s, spec.setups[k].imr, part) {
                    Some(e) if e == got => out.equal += 1,
                    e => {
                        if out.wrong.len() < 8 {
                            out.wrong.push(format!(
                                "group {g} {} PMC{i} {}: marked {got}, exact {e:?}",
                                part.name(),
                                s.name()
                            ));
                        }
                    }
                }
            } else if part == Part::All {
                out.split += 1;
                let u = d.total(at(g, Part::User, false), i);
                let v = d.total(at(g, Part::Supervisor, false), i);
                if u + v == got {
                    out.split_ok += 1;
                } else if out.wrong.len() < 8 {
                    out.wrong.push(format!(
                        "group {g} PMC{i} {}: user {u} + supervisor {v} != all {got}",
                        s.name()
                    ));
                }
            }
        }
    }
    debug_assert_eq!(out.compared, GROUPS as usize * 3 * COUNTERS);
    Ok(out)
}

/// The table of cells.
pub fn section(cells: &[Cell9], size: workload::Size) -> Section {
    let mut s = Section::new("POWER2 marked-process matrix");
    s.text(format!(
        "processes: the kernels {} in turn, one thread each, size {}, under the operating system (TLB on) on power2; the second process marked; \
         groups 0-{} of every unit x modes all, user, supervisor x 22 counters compared with the marked process's exact counts",
        KERNELS.join(", "),
        size.name(),
        GROUPS - 1
    ));
    let mut t = Table::new(
        "power2_marking_matrix",
        "Marked process's counts against its exact counts",
        vec![
            Column::count("processes"),
            Column::count("processors"),
            Column::label("marked"),
            Column::cycles("run", Clock::Processor, 0),
            Column::count("switches"),
            Column::count("marked's instructions"),
            Column::count("counters compared"),
            Column::count("equal"),
            Column::count("user+sup = all checked"),
            Column::count("held"),
        ],
    );
    for c in cells {
        t.row(vec![
            Cell::Int(c.processes as u64),
            Cell::Int(c.processors as u64),
            Cell::text(c.marked.clone()),
            Cell::Int(c.cycles),
            Cell::Int(c.switches),
            Cell::Int(c.instructions),
            Cell::Int(c.compared as u64),
            Cell::Int(c.equal as u64),
            Cell::Int(c.split as u64),
            Cell::Int(c.split_ok as u64),
        ]);
    }
    let bad: Vec<String> = cells.iter().flat_map(|c| c.wrong.clone()).collect();
    t.set_note(if bad.is_empty() {
        format!(
            "every cell exact: {} of {} cells",
            cells.iter().filter(|c| c.ok()).count(),
            cells.len()
        )
    } else {
        format!("MISMATCHES: {}", bad.join("; "))
    });
    s.table(t);
    s
}

/// `pmusim study marking-matrix [--size test|small] [--procs 1,2,4]`: exit status 1 when a
/// cell misses the figure.
pub fn study(a: &StudyArgs) -> Result<(String, u8), Error> {
    let size = workload::Size::parse(if a.size.is_empty() { "test" } else { &a.size })
        .map_err(Error::input)?;
    let processors: Vec<usize> = if a.procs.is_empty() {
        PROCESSORS.to_vec()
    } else {
        a.procs.clone()
    };
    if let Some(p) = processors.iter().find(|p| !(1..=64).contains(*p)) {
        return Err(Error::input(format!(
            "study marking-matrix: --procs {p}: 1 to 64 processors"
        )));
    }
    let mut cells = Vec::new();
    for &n in &PROCESSES {
        for &p in &processors {
            cells.push(cell(n, p, size)?);
        }
    }
    let ok = cells.iter().all(Cell9::ok);
    let (out, _) = super::marking::render(vec![section(&cells, size)], a.json)?;
    Ok((out, u8::from(!ok)))
}
