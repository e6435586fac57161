//! FlashPoint restricted to one process (`pmusim run A+B -m flash --monitor flashpoint
//! --monitor-process NAME`; issue 15 item 2).
//!
//! FlashPoint has no counters to save and restore: its statistics are records in protocol
//! memory (seed 004, 3.1.3, "Performance Data Structures"), about 256 KB per node, updated by
//! the handler that sends a miss's reply at the record the PP's current-procedure register
//! points to. Copying them at a switch, as `perf` copies counters, would move a quarter
//! megabyte per switch. The seed's own command restricts them instead: each process gets its
//! own record array, and the operating system's switch path sends the procedure delta ("an
//! uncached load where the page offset bits contain the procedure delta", 3.1.3, "Program
//! Access to Performance State") from the outgoing thread's slot to the incoming one's
//! (`Machine::flashpoint_by_process`, `machine::flash::flashpoint`). This is virtualization by
//! the monitor's own pointer; there is no mark (the directory header's spare bits hold the
//! warm bit and the bin), so `--restrict-by marking` and `both` are refused.
//!
//! Exactness: a miss is recorded after its reply, while the requesting thread still holds the
//! processor (a blocking processor switches only between misses), and the switch path sends
//! the delta before its own references, so each record is in the array of the process the
//! ground truth charges the miss to (`GroundTruth::per_process`, by the request's
//! `Origin::process`). Read and write misses, local and remote, and cold misses (the warm bit
//! is per line, as the truth's `global_cold`) are equal; the latency sums differ by the one
//! system cycle per miss the processor-interface counter does not see (docs/flashpoint.md).
//!
//! Cost, measured in the run: per switch, the fence (`fence_cycles`) and one uncached load in
//! the switch path (`os.stats.switch_command_cycles`), and the command handler's PP
//! occupancy (`proc_cmd_occupancy` system cycles).

use super::view::FlashPointView;
use machine::flash::flashpoint::{FlashPoint, Record};
use machine::memsys::System;
use machine::state::State;
use machine::truth::MissStats;
use report::model::{Cell, Clock, Column, Section, Table, Unit};
use serde_json::{json, Value};

/// One compared quantity: its name, FlashPoint's value, the exact one.
pub struct Line {
    pub name: &'static str,
    pub flashpoint: u64,
    pub exact: u64,
    /// Equal by construction (a count), or an estimate (a latency sum).
    pub count: bool,
}

/// What the restricted run measured.
pub struct Restricted {
    pub name: String,
    pub pid: u16,
    /// Procedure slots per process's record array.
    pub span: u32,
    pub lines: Vec<Line>,
    /// Every process: name, FlashPoint's misses in its array, its exact misses.
    pub processes: Vec<(String, u64, u64)>,
    /// The process's own data structures (`NAME/...`): name, FlashPoint's misses, exact.
    pub structures: Vec<(String, u64, u64)>,
    pub switches: u64,
    pub switch_cycles: u64,
    /// The switch paths' FlashPoint commands and their processor cycles (fence, load).
    pub commands: u64,
    pub command_cycles: u64,
    /// The command handler's PP occupancy, system cycles per command.
    pub pp_occupancy: u32,
    pub fence_cycles: u32,
}

fn flashpoint(st: &State) -> Option<&FlashPoint> {
    match &st.system {
        System::Flash(s) => s.flashpoint(),
        _ => None,
    }
}

/// The records of process `pid`'s array, summed over nodes, procedures and bins.
fn total(fp: &FlashPoint, pid: u16) -> Record {
    let mut t = Record::default();
    for n in 0..fp.nodes() {
        for (&(slot, _), r) in fp.records(n) {
            if fp.split_slot(slot).0 == Some(pid) {
                t.add(r);
            }
        }
    }
    t
}

fn misses(s: &MissStats) -> u64 {
    s.read_local + s.read_remote + s.write_local + s.write_remote
}

/// Measures process `name` (None without records by process or such a process).
pub fn measure(st: &State, name: &str) -> Option<Restricted> {
    let fp = flashpoint(st)?;
    let span = fp.process_span()?;
    let os = st.os.as_ref()?;
    let pid = os.processes.iter().position(|p| p.name == name)? as u16;
    let gt = st.truth.as_ref()?;
    let none = MissStats::default();
    let exact_of = |p: u16| gt.per_process.get(p as usize).unwrap_or(&none);
    let (r, e) = (total(fp, pid), exact_of(pid));
    // The ground truth's latencies are in processor cycles, FlashPoint's in system cycles.
    let ratio = (st.sys_period / st.cpu_period.max(1)).max(1);
    let sys = |v: u64| (v as f64 / ratio as f64).round() as u64;
    let line = |name, flashpoint, exact, count| Line {
        name,
        flashpoint,
        exact,
        count,
    };
    let lines = vec![
        line("read misses, local", r.rd_miss_local, e.read_local, true),
        line("read misses, remote", r.rd_miss_remote, e.read_remote, true),
        line("write misses, local", r.wr_miss_local, e.write_local, true),
        line(
            "write misses, remote",
            r.wr_miss_remote,
            e.write_remote,
            true,
        ),
        line("misses", r.reads() + r.writes(), misses(e), true),
        line("cold misses (line's first)", r.cold, e.global_cold, true),
        line(
            "read latency sum (system cycles)",
            r.rd_lat_local + r.rd_lat_remote,
            sys(e.read_lat_local + e.read_lat_remote),
            false,
        ),
        line(
            "write latency sum (system cycles)",
            r.wr_lat_local + r.wr_lat_remote,
            sys(e.write_lat_local + e.write_lat_remote),
            false,
        ),
    ];
    let processes = os
        .processes
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let r = total(fp, i as u16);
            (
                p.name.clone(),
                r.reads() + r.writes(),
                misses(exact_of(i as u16)),
            )
        })
        .collect();
    // The process's own structures: only its threads touch them.
    let prefix = format!("{name}/");
    let mut structures: Vec<(String, u64, u64)> = Vec::new();
    if let Some(v) = FlashPointView::of_process(st, pid) {
        for row in v.by_data.iter().filter(|r| r.name.starts_with(&prefix)) {
            let exact: u64 = gt
                .per_struct
                .iter()
                .filter(|(&sid, _)| {
                    (sid as usize) < st.map.regions().len() && st.map.name_of(sid) == row.name
                })
                .map(|(_, s)| misses(s))
                .sum();
            structures.push((row.name.clone(), row.misses(), exact));
        }
    }
    let s = &os.stats;
    Some(Restricted {
        name: name.to_string(),
        pid,
        span,
        lines,
        processes,
        structures,
        switches: s.switches,
        switch_cycles: s.switch_cycles,
        commands: s.switch_commands,
        command_cycles: s.switch_command_cycles,
        pp_occupancy: fp.cfg.proc_cmd_occupancy,
        fence_cycles: if fp.cfg.fence { fp.cfg.fence_cycles } else { 0 },
    })
}

/// `monitors.flashpoint.process`.
pub fn json(r: &Restricted) -> Value {
    let lines: Vec<Value> = r
        .lines
        .iter()
        .map(|l| json!({"name": l.name, "flashpoint": l.flashpoint, "exact": l.exact, "count": l.count}))
        .collect();
    let tri = |v: &[(String, u64, u64)]| -> Vec<Value> {
        v.iter()
            .map(|(n, f, e)| json!({"name": n, "flashpoint": f, "exact": e}))
            .collect()
    };
    json!({
        "name": r.name,
        "pid": r.pid,
        "procedure_slots_per_process": r.span,
        "compared": lines,
        "processes": tri(&r.processes),
        "structures": tri(&r.structures),
        "switches": r.switches,
        "switch_cycles_per_switch": crate::virt::per_switch(r.switch_cycles, r.switches),
        "commands": r.commands,
        "command_cycles_per_switch": crate::virt::per_switch(r.command_cycles, r.switches),
        "pp_occupancy_per_command": r.pp_occupancy,
        "fence_cycles": r.fence_cycles,
    })
}

/// The process's records beside its exact counts, every process's misses, its own
/// structures, and the cost per switch.
pub fn tables(s: &mut Section, r: &Restricted) {
    let mut t = Table::new(
        "flashpoint_process",
        &format!("FlashPoint: process {} alone (its record array)", r.name),
        vec![
            Column::label("quantity"),
            Column::estimate("FlashPoint", Unit::Count, 0),
        ],
    );
    for l in &r.lines {
        t.row(vec![
            Cell::text(l.name),
            Cell::estimate(l.flashpoint, l.exact),
        ]);
    }
    t.set_note(format!(
        "the records of process {}'s array (procedure slots {}..{} of each node), summed; exact: the ground truth's per-process counts (the requests' Origin::process). Counts are equal; a latency sum is short of the truth's by about one system cycle per miss (the processor-interface counter stops at the processor bus)",
        r.name,
        r.pid as u64 * r.span as u64,
        (r.pid as u64 + 1) * r.span as u64
    ));
    s.table(t);
    let mut t = Table::new(
        "flashpoint_processes",
        "FlashPoint: misses in each process's record array",
        vec![
            Column::label("process"),
            Column::estimate("misses", Unit::Count, 0),
        ],
    );
    for (n, f, e) in &r.processes {
        t.row(vec![Cell::text(n.clone()), Cell::estimate(*f, *e)]);
    }
    s.table(t);
    if !r.structures.is_empty() {
        let mut t = Table::new(
            "flashpoint_process_structures",
            &format!("FlashPoint: process {}'s own data structures", r.name),
            vec![
                Column::label("data structure"),
                Column::estimate("misses", Unit::Count, 0),
            ],
        );
        for (n, f, e) in &r.structures {
            t.row(vec![Cell::text(n.clone()), Cell::estimate(*f, *e)]);
        }
        s.table(t);
    }
    let mut c = Table::new(
        "flashpoint_process_cost",
        "Cost per context switch",
        vec![
            Column::count("switches"),
            Column::cycles("switch path / switch", Clock::Processor, 1),
            Column::count("FlashPoint deltas"),
            Column::cycles("of which the delta", Clock::Processor, 1),
            Column::cycles("fence", Clock::Processor, 0),
            Column::cycles("PP occupancy / delta", Clock::System, 0),
        ],
    );
    c.row(vec![
        Cell::Int(r.switches),
        Cell::ratio(r.switch_cycles, r.switches),
        Cell::Int(r.commands),
        Cell::ratio(r.command_cycles, r.switches),
        Cell::Int(r.fence_cycles as u64),
        Cell::Int(r.pp_occupancy as u64),
    ]);
    c.set_note(
        "the switch path from exception entry to return, its stalls included; of which the procedure-delta command moving the PP's register to the incoming process's array (the fence, then one uncached load to MAGIC, its round trip included); the command handler occupies the PP for its occupancy. Nothing is copied at a switch"
            .to_string(),
    );
    s.table(c);
}
