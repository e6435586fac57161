//! The POWER2 monitor restricted to one process on `pmusim run` (`--monitor-process NAME
//! --restrict-by marking|virtualization|both`; issue 15 item 2): each way's 22 counts for the
//! process beside its exact counts from the ground truth, and what each way costs per context
//! switch, measured in the run.
//!
//! - *Marking*: the counts of the monitor whose MMCR has MARKED, summed over the processors;
//!   exact: the process's threads' counts while their MSR[PM] was set (`SwThread::marked`,
//!   split at every change of the mark), in the MMCR's mode.
//! - *Virtualization*: the process's threads' totals kept by `virt::Virtualizer` at every
//!   switch; exact: the process's threads' counts in the MMCR's mode (`marking::process_exact`).
//!
//! Cost: the switch path's processor cycles per switch (`os.stats`), and the part inside it
//! that reads and saves the counters (`[os] virtual_counters`); marking adds nothing to a
//! switch (the MSR is saved and restored with the thread's state anyway).

use super::events::{counter_of, Sig, COUNTERS};
use super::marking::{process_exact, Part};
use super::regs::{Imr, Mode};
use super::Power2Monitor;
use machine::state::State;
use report::model::{Cell, Clock, Column, Section, Table, Unit as RUnit};
use serde_json::{json, Value};

/// One counter: its event, unit and number, and per way (count, exact).
pub struct Row {
    pub sig: Sig,
    pub unit: String,
    pub marked: Option<(u64, Option<u64>)>,
    pub virtualized: Option<(u64, Option<u64>)>,
}

/// The process's counts each way, and the switch costs of the run.
pub struct Restricted {
    pub name: String,
    pub rows: Vec<Row>,
    pub switches: u64,
    pub switch_cycles: u64,
    pub virt_cycles: u64,
    pub virtual_counters: u64,
}

fn part(mode: Mode) -> Option<Part> {
    match mode {
        Mode::All => Some(Part::All),
        Mode::User => Some(Part::User),
        Mode::Supervisor => Some(Part::Supervisor),
        Mode::Nothing => None,
    }
}

/// The exact count of `sig` for process `pid` in `part`, counting only the intervals its
/// threads were marked in (MSR[PM] set).
pub fn marked_exact(st: &State, pid: u16, sig: Sig, imr: Imr, part: Part) -> Option<u64> {
    let of = |c: &machine::cpu::Counters| sig.exact_with_imr(imr, c);
    let mut sum = 0;
    for th in st
        .sched
        .threads
        .iter()
        .filter(|t| t.present && t.process == pid)
    {
        sum += match part {
            Part::All => of(&th.marked[0])? + of(&th.marked[1])?,
            Part::User => of(&th.marked[0])?,
            Part::Supervisor => of(&th.marked[1])?,
        };
    }
    Some(sum)
}

/// Counts process `name` each way given: `marked` (the monitor with MARKED) and `virt` (the
/// monitor with the virtualizer). `None` without an operating system or such a process.
pub fn measure(
    st: &State,
    name: &str,
    marked: Option<&Power2Monitor>,
    virt: Option<&Power2Monitor>,
) -> Option<Restricted> {
    let os = st.os.as_ref()?;
    let pid = os.processes.iter().position(|p| p.name == name)? as u16;
    let any = marked.or(virt)?;
    let sigs = any.setup.mmcr.signals();
    let exactable = |mon: &Power2Monitor| mon.pmus.iter().all(|p| !p.reprogrammed);
    let rows = (0..COUNTERS)
        .map(|i| {
            let unit = match counter_of(i) {
                None => "shared".to_string(),
                Some((u, n)) => format!("{} {n}", u.name()),
            };
            let m = marked.map(|mon| {
                let v = mon.pmus.iter().map(|p| p.value(i)).sum();
                let e = part(mon.setup.mmcr.mode())
                    .filter(|_| exactable(mon))
                    .and_then(|pt| marked_exact(st, pid, sigs[i], mon.setup.imr, pt));
                (v, e)
            });
            let v = virt.and_then(|mon| {
                let vt = mon.virt.as_ref()?.process_totals();
                let e = part(mon.setup.mmcr.mode())
                    .filter(|_| exactable(mon))
                    .and_then(|pt| process_exact(st, pid, sigs[i], mon.setup.imr, pt));
                Some((vt[i], e))
            });
            Row {
                sig: sigs[i],
                unit,
                marked: m,
                virtualized: v,
            }
        })
        .collect();
    let s = &os.stats;
    Some(Restricted {
        name: name.to_string(),
        rows,
        switches: s.switches,
        switch_cycles: s.switch_cycles,
        virt_cycles: s.virt_cycles,
        virtual_counters: os.cfg.virtual_counters,
    })
}

/// `monitors.power2.process`.
pub fn json(r: &Restricted) -> Value {
    let way = |w: Option<(u64, Option<u64>)>| w.map(|(v, e)| json!({"count": v, "exact": e}));
    let counters: Vec<Value> = r
        .rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            json!({
                "counter": i,
                "unit": row.unit,
                "event": row.sig.name(),
                "marking": way(row.marked),
                "virtualization": way(row.virtualized),
            })
        })
        .collect();
    json!({
        "name": r.name,
        "counters": counters,
        "switches": r.switches,
        "switch_cycles_per_switch": crate::virt::per_switch(r.switch_cycles, r.switches),
        "virtualization_cycles_per_switch": crate::virt::per_switch(r.virt_cycles, r.switches),
        "virtual_counters": r.virtual_counters,
    })
}

fn cell(w: Option<(u64, Option<u64>)>) -> Cell {
    match w {
        Some((v, Some(e))) => Cell::estimate(v, e),
        Some((v, None)) => Cell::Int(v),
        None => Cell::text("-"),
    }
}

/// The process's table (each way beside its exact count) and the cost table.
pub fn tables(s: &mut Section, r: &Restricted) {
    let mut t = Table::new(
        "power2_process",
        &format!(
            "Process {} alone: marking and counter virtualization",
            r.name
        ),
        vec![
            Column::label("counter"),
            Column::label("unit, number"),
            Column::label("event"),
            Column::estimate("marked", RUnit::Count, 0),
            Column::estimate("virtualized", RUnit::Count, 0),
        ],
    );
    for (i, row) in r.rows.iter().enumerate() {
        t.row(vec![
            Cell::text(format!("PMC{i}")),
            Cell::text(row.unit.clone()),
            Cell::text(row.sig.name()),
            cell(row.marked),
            cell(row.virtualized),
        ]);
    }
    t.set_note(
        "marked: the MMCR's MARKED bit, the process's MSR[PM] saved and restored by the OS; exact: its counts while marked. virtualized: the counters run free, the switch path reads the 22 and keeps per-thread totals (perf_event_open); exact: its counts. Both in the MMCR's user/supervisor mode"
            .to_string(),
    );
    s.table(t);
    let mut c = Table::new(
        "power2_process_cost",
        "Cost per context switch",
        vec![
            Column::count("switches"),
            Column::cycles("switch path / switch", Clock::Processor, 1),
            Column::cycles("of which virtualization", Clock::Processor, 1),
            Column::count("counters read per switch"),
        ],
    );
    c.row(vec![
        Cell::Int(r.switches),
        Cell::ratio(r.switch_cycles, r.switches),
        Cell::ratio(r.virt_cycles, r.switches),
        Cell::Int(r.virtual_counters),
    ]);
    c.set_note(
        "the switch path from exception entry to return, its stalls included; marking costs no cycle at a switch (the MSR is one of the words every switch saves and restores); virtualization is the switch path's uncached counter reads and its loads and stores of the per-thread totals"
            .to_string(),
    );
    s.table(c);
}
