//! The POWER2 monitor's report: the JSON section (`monitors.power2`) and the typed
//! `report::model::Section` (CONTRACTS §3) with every counter beside its exact count.
//!
//! The exact count of a counter is the ground truth for its signal (`Sig::exact`) summed over
//! the software threads whose MSR state the MMCR's mode counts. With an operating system each
//! thread's counts are split by MSR[PR] and MSR[PM] at every change of either (a system call
//! that marks or unmarks the process, a supervisor path's entry and return), so the state is
//! the one of each moment; without one the machine splits them the same way (at each
//! `Ctx::mark_process` and each switch), so a program that marks itself without an operating
//! system is counted by its marked intervals, not by its mark at the end of the run. It is
//! left out when the program reprogrammed the monitor (the counts then cover only
//! part of the run) and for signals the core model keeps no exact count of (the SPE cycles, the
//! read/write split of misses, transactions by command, miss latencies).

use super::events::{counter_of, papi_name, COUNTERS};
use super::{Pmu, Power2Monitor};
use machine::state::State;
use report::model::{Cell, Column, Section, Table, Unit as RUnit};
use serde_json::{json, Value};

/// The exact count of counter `i` of processor `p`, if the ground truth has one: the sum over
/// the software threads that ran on the processor of their exact counts in the MSR states the
/// MMCR's mode counts (see the module documentation).
pub fn exact(st: &State, mon: &Power2Monitor, p: usize, i: usize) -> Option<u64> {
    let pmu = &mon.pmus[p];
    if pmu.reprogrammed || pmu.mmcr.0 != mon.setup.mmcr.0 {
        return None;
    }
    let m = pmu.mmcr;
    let s = m.signals()[i];
    let of = |c: &machine::cpu::Counters| s.exact_with_imr(pmu.imr, c);
    // A signal without an exact count has none for any thread.
    of(&st.cores[p].cnt)?;
    let mut sum = 0;
    for th in st
        .sched
        .threads
        .iter()
        .filter(|th| th.present && th.core == p)
    {
        // The machine splits every thread's counts by MSR[PR] and, within each, the part
        // counted while MSR[PM] was set, at every change of either bit and every switch,
        // with or without an operating system: the mark as it was at each moment (a
        // program may mark and unmark itself).
        for sup in [false, true] {
            let all = of(&th.mode[sup as usize])?;
            let marked = of(&th.marked[sup as usize])?;
            if m.counts(sup, true) {
                sum += marked;
            }
            if m.counts(sup, false) {
                sum += all - marked;
            }
        }
    }
    Some(sum)
}

fn unit_group(mon: &Power2Monitor, pmu: &Pmu, i: usize) -> (String, String, Option<&'static str>) {
    let _ = mon;
    match counter_of(i) {
        None => ("shared".into(), "all".into(), papi_name(None, None, i)),
        Some((u, num)) => {
            let (su, g) = pmu.mmcr.source(u).unwrap_or((u, pmu.mmcr.group(u)));
            let grp = if su == u {
                g.to_string()
            } else {
                format!("{} {g}", su.name())
            };
            (
                format!("{} {num}", u.name()),
                grp,
                papi_name(Some(su), Some(g), num),
            )
        }
    }
}

/// The JSON section.
pub fn json(st: &State, mon: &Power2Monitor) -> Value {
    let procs: Vec<Value> = mon
        .pmus
        .iter()
        .enumerate()
        .map(|(p, pmu)| {
            let sigs = pmu.mmcr.signals();
            let counters: Vec<Value> = (0..COUNTERS)
                .map(|i| {
                    let (unit, group, papi) = unit_group(mon, pmu, i);
                    json!({
                        "counter": i,
                        "unit": unit,
                        "group": group,
                        "event": sigs[i].name(),
                        "papi": papi,
                        "register": pmu.ctr[i],
                        "count": pmu.value(i),
                        "exact": exact(st, mon, p, i),
                    })
                })
                .collect();
            json!({
                "proc": p,
                "mmcr": format!("{:#010x}", pmu.mmcr.0),
                "imr": format!("{:#06x}", pmu.imr.word()),
                "status": format!("{:#08x}", pmu.status),
                "interrupts": pmu.interrupts,
                "reprogrammed": pmu.reprogrammed,
                "counters": counters,
            })
        })
        .collect();
    json!({
        "mmcr": format!("{:#010x}", mon.setup.mmcr.0),
        "imr": format!("{:#06x}", mon.setup.imr.word()),
        "procs": procs,
    })
}

/// The typed section: the configuration in words, then one table of the 22 counters per
/// processor, each beside its exact count.
pub fn section(st: &State, mon: &Power2Monitor) -> Section {
    let mut s = Section::new(&format!(
        "POWER2 monitor: MMCR {:#010x}, IMR {:#06x}",
        mon.setup.mmcr.0,
        mon.setup.imr.word()
    ));
    for line in mon.setup.mmcr.describe().lines() {
        s.text(line.to_string());
    }
    for (p, pmu) in mon.pmus.iter().enumerate() {
        let mut t = Table::new(
            &format!("power2_p{p}"),
            &format!("POWER2 counters, processor {p}"),
            vec![
                Column::label("counter"),
                Column::label("unit, number"),
                Column::label("group"),
                Column::label("event"),
                Column::label("PAPI"),
                Column::estimate("count", RUnit::Count, 0),
            ],
        );
        let sigs = pmu.mmcr.signals();
        for (i, sg) in sigs.iter().enumerate() {
            let (unit, group, papi) = unit_group(mon, pmu, i);
            let v = pmu.value(i);
            let cell = match exact(st, mon, p, i) {
                Some(e) => Cell::estimate(v, e),
                None => Cell::Int(v),
            };
            t.row(vec![
                Cell::text(format!("PMC{i}")),
                Cell::text(unit),
                Cell::text(group),
                Cell::text(sg.name()),
                Cell::text(papi.unwrap_or("")),
                cell,
            ]);
        }
        let mut note = format!(
            "status {:#08x}, {} overflow interrupts; counts are the 32-bit counters with their carries",
            pmu.status, pmu.interrupts
        );
        if pmu.reprogrammed {
            note += "; the program reprogrammed the monitor, so no exact counts are shown";
        }
        t.set_note(note);
        s.table(t);
    }
    s
}
