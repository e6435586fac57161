//! Time by PhaseID (seed 000 4.3, 4.4.5; Table 4.10 items 9, 21-23): the SRAM in the MCC mode
//! addressed by the whole 16-bit PhaseID register, counting every monitor cycle ("count
//! always", cycles), holds the time each processor spent in each phase; a general-purpose
//! counter counting cycles with the PW compare counts the time in one phase (item 21, the
//! "local process counter"). The built-in kernels write the PhaseID at each phase
//! (crates/workload/KERNELS.md, "Phases"), so `docs/numachine/phase-timing.toml` splits them.
//!
//! The exact values come from the cores' own log of PhaseID writes (`Core::phase_log`): each
//! phase's intervals, from the write that entered it to the next write (or the end of the
//! run: the register keeps its last value), counted in monitor-clock edges as the circuit
//! counts them, and in processor cycles. Per card the phases add up to the run length.

use super::sram::SEV_ALWAYS;
use super::{Card, NumachineMonitor};
use engine::Tick;
use machine::state::State;
use report::model::{Cell, Clock, Column, Section, Table, Unit};
use std::collections::BTreeMap;

/// The intervals of processor `p`'s PhaseID register up to `end`: (from, to, phase).
fn intervals(st: &State, p: usize, end: Tick) -> Vec<(Tick, Tick, u16)> {
    let log = &st.cores[p].phase_log;
    let mut v = Vec::with_capacity(log.len() + 1);
    let (mut from, mut phase) = (0, 0u16);
    for &(t, id) in log {
        let t = t.min(end);
        v.push((from, t, phase));
        (from, phase) = (t, id);
    }
    v.push((from, end, phase));
    v
}

/// Exact time of processor `p` in the phases `keep` selects, up to `end`: (monitor-clock
/// edges, processor cycles).
pub fn exact_time(
    st: &State,
    mon: &NumachineMonitor,
    p: usize,
    keep: impl Fn(u16) -> bool,
) -> (u64, u64) {
    let (sys, cpu) = (mon.sys_period, st.cpu_period);
    let mut out = (0, 0);
    for (a, b, ph) in intervals(st, p, mon.end) {
        if keep(ph) {
            out.0 += b / sys - a / sys;
            out.1 += (b - a) / cpu;
        }
    }
    out
}

/// Per phase, the exact time of processor `p` (monitor-clock edges, processor cycles).
pub fn exact_by_phase(st: &State, mon: &NumachineMonitor, p: usize) -> BTreeMap<u16, (u64, u64)> {
    let (sys, cpu) = (mon.sys_period, st.cpu_period);
    let mut by: BTreeMap<u16, (u64, u64)> = BTreeMap::new();
    for (a, b, ph) in intervals(st, p, mon.end) {
        let e = by.entry(ph).or_default();
        e.0 += b / sys - a / sys;
        e.1 += (b - a) / cpu;
    }
    by
}

/// True when card `c`'s SRAM holds time by the whole PhaseID: MCC mode, PR on all three
/// multiplexers (and nothing else), count-always cycles, no count-enable filter, no preload.
pub fn sram_times_phases(c: &Card) -> bool {
    let m = &c.smode;
    m.mode == 2
        && m.mux_pr_hi
        && m.mux_pr_mid
        && m.mux_pr_lo
        && !m.mux_rsr
        && !m.mux_miss
        && m.event == SEV_ALWAYS
        && !m.edges
        && m.enable_bits == 0
        && c.sram.preload == 0
}

/// The exact value of a counter counting every cycle (event 1, cycles) filtered by the PW
/// compare alone (enable bits 7 and 6: the time in phase PW, or outside it when inverted).
pub fn phase_filtered_exact(
    st: &State,
    mon: &NumachineMonitor,
    c: &Card,
    i: usize,
) -> Option<(u64, String)> {
    let m = &c.gpc[i].mode;
    if m.event != super::gpc::EV_ALWAYS || m.edges || m.enable_bits & !0xC0 != 0 {
        return None;
    }
    if m.enable_bits & 0x80 == 0 {
        return None;
    }
    let (pw, inv) = (c.regs.pw, m.enable_bits & 0x40 != 0);
    let (edges, _) = exact_time(st, mon, c.proc as usize, |ph| (ph == pw) ^ inv);
    let rel = if inv { "outside" } else { "in" };
    Some((
        edges,
        format!("monitor cycles {rel} phase {pw} (the core's PhaseID writes)"),
    ))
}

/// The table "time by PhaseID" (machine-wide, and per card for the first `top` cards) when
/// every card's SRAM times the phases.
pub fn table(s: &mut Section, st: &State, mon: &NumachineMonitor, top: usize) {
    if mon.cards.is_empty() || !mon.cards.iter().all(sram_times_phases) {
        return;
    }
    let mon_cycles = Unit::Cycles {
        clock: Clock::Monitor,
    };
    let mut t = Table::new(
        "numachine_phase_times",
        "NUMAchine monitor: time by PhaseID (SRAM addressed by the PhaseID, Table 4.10 items 9, 21-23)",
        vec![
            Column::label("proc"),
            Column::label("phase"),
            Column::estimate("time", mon_cycles, 0),
            Column::cycles("exact", Clock::Processor, 0),
            Column::label("share %"),
        ],
    );
    let mut all: BTreeMap<u16, (u64, u64, u64)> = BTreeMap::new();
    let mut per_card = Vec::new();
    for c in &mon.cards {
        let ex = exact_by_phase(st, mon, c.proc as usize);
        let mut phases: BTreeMap<u16, (u64, u64, u64)> = BTreeMap::new();
        for (&ph, &(e, cyc)) in &ex {
            let w = phases.entry(ph).or_default();
            w.1 += e;
            w.2 += cyc;
        }
        for (a, w) in c.sram.nonzero() {
            phases.entry(a).or_default().0 += w as u64;
        }
        for (&ph, &(m, e, cyc)) in &phases {
            let a = all.entry(ph).or_default();
            a.0 += m;
            a.1 += e;
            a.2 += cyc;
        }
        per_card.push((c.proc, phases));
    }
    let mut rows = |who: String, phases: &BTreeMap<u16, (u64, u64, u64)>| {
        let total: u64 = phases.values().map(|x| x.1).sum();
        for (&ph, &(m, e, cyc)) in phases {
            let share = if total == 0 {
                0.0
            } else {
                100.0 * e as f64 / total as f64
            };
            t.row(vec![
                Cell::text(who.clone()),
                Cell::text(ph.to_string()),
                Cell::estimate(m, e),
                Cell::Int(cyc),
                Cell::text(format!("{share:.1}")),
            ]);
        }
        let (m, e, cyc) = phases
            .values()
            .fold((0, 0, 0), |s, x| (s.0 + x.0, s.1 + x.1, s.2 + x.2));
        t.row(vec![
            Cell::text(who),
            Cell::text("all"),
            Cell::estimate(m, e),
            Cell::Int(cyc),
            Cell::text("100.0"),
        ]);
    };
    for (p, phases) in per_card.iter().take(top) {
        rows(p.to_string(), phases);
    }
    rows("all".into(), &all);
    t.set_note(
        "time: the SRAM word at each PhaseID, in monitor cycles; exact: the intervals between the core's PhaseID writes (the last one to the end of the run), in monitor-clock edges (the estimate) and processor cycles; a card's phases add up to the run length (crates/workload/KERNELS.md lists each kernel's phases)",
    );
    s.table(t);
}
