//! Table 4.10 items 18 and 19 (seed 000, 4.5): total and apparent miss cycles, from the
//! counters that measure them, beside the core's exact `Counters::miss_cycles` and
//! `Counters::miss_stall_cycles` (`machine::cpu::nonblocking`).
//!
//! - *Total* (item 18) is the misses' latency: the latency events of Table 4.5 counted in
//!   cycles mode (the line request is high from leaving the external agent to its response):
//!   event 6 (reads + read-exclusives; or events 4 and 5 separately) plus event 7 (successful
//!   upgrades) and 8 (cancelled ones), in monitor cycles, x3 for processor cycles.
//! - *Apparent* (item 19) is what the pipeline stalled for them: the pipeline-status counter
//!   selecting the multiprocessing (memory-system) stall alone, the register x4 (prescaler).
//!
//! The seed marks item 19 n/a ("R4400 has a simple pipeline with no latency-hiding
//! mechanisms"): on the R4400 presets the two agree; with `[cpu.nonblocking]` the apparent is
//! smaller by the cycles the processor ran under its misses. The table appears when counters
//! measure both (as `docs/numachine/miss-cycles.toml` does).

use super::gpc::{
    EV_OWNERSHIP, EV_OWNERSHIP_CANCELLED, EV_PIPELINE, EV_READ, EV_READ_ANY, EV_READ_EX,
};
use super::{Card, NumachineMonitor};
use machine::cpu::pipeline::Ps;
use machine::state::State;
use report::model::{Cell, Clock, Column, Section, Table, Unit};

/// A card's monitored (total, apparent) miss cycles in processor cycles, each `None` when no
/// enabled, unfiltered counter measures it.
pub fn monitored(c: &Card, cpu_per_monitor: u64) -> (Option<u64>, Option<u64>) {
    let (mut total, mut apparent) = (None, None);
    let mut has = [false; 16];
    for g in &c.gpc {
        let m = &g.mode;
        if m.enable && m.enable_bits == 0 {
            has[m.event as usize & 15] = true;
        }
    }
    // Events 4 and 5 are the two halves of 6: a configuration counting 6 and 4 or 5 would
    // count reads twice.
    let reads_separately = !has[EV_READ_ANY as usize];
    for g in &c.gpc {
        let m = &g.mode;
        if !m.enable || m.enable_bits != 0 {
            continue;
        }
        let value = g.counter.get() + (g.counter.wraps << g.counter.width());
        match m.event {
            EV_READ_ANY | EV_OWNERSHIP | EV_OWNERSHIP_CANCELLED if !m.edges => {
                *total.get_or_insert(0) += value * cpu_per_monitor;
            }
            EV_READ | EV_READ_EX if !m.edges && reads_separately => {
                *total.get_or_insert(0) += value * cpu_per_monitor;
            }
            EV_PIPELINE if m.ps_mask == 1 << Ps::MultiprocessingStall as u16 => {
                *apparent.get_or_insert(0) += value * 4;
            }
            _ => {}
        }
    }
    (total, apparent)
}

/// The table "miss cycles (Table 4.10 items 18 and 19)" per card (the first `top`) and for all
/// cards, when counters measure both total and apparent miss cycles.
pub fn table(s: &mut Section, st: &State, mon: &NumachineMonitor, top: usize) {
    let scale = (mon.sys_period / st.cpu_period.max(1)).max(1);
    let rows: Vec<_> = mon
        .cards
        .iter()
        .map(|c| {
            let cnt = &st.cores[c.proc as usize].cnt;
            let (t, a) = monitored(c, scale);
            (c.proc, t, a, cnt.miss_cycles, cnt.miss_stall_cycles)
        })
        .collect();
    if !rows.iter().any(|r| r.1.is_some() && r.2.is_some()) {
        return;
    }
    let cycles = Unit::Cycles {
        clock: Clock::Processor,
    };
    let mut t = Table::new(
        "numachine_miss_cycles",
        "NUMAchine monitor: miss cycles (Table 4.10 items 18 and 19)",
        vec![
            Column::label("proc"),
            Column::estimate("total (item 18)", cycles.clone(), 0),
            Column::estimate("apparent (item 19)", cycles, 0),
            Column::cycles("hidden (exact)", Clock::Processor, 0),
            Column::label("hidden %"),
        ],
    );
    let cell = |m: Option<u64>, exact: u64| match m {
        Some(v) => Cell::estimate(v, exact),
        None => Cell::Int(exact),
    };
    let pct = |total: u64, apparent: u64| {
        if total == 0 {
            Cell::text("-")
        } else {
            Cell::text(format!(
                "{:.1}",
                100.0 * (total - apparent.min(total)) as f64 / total as f64
            ))
        }
    };
    let mut sum = (None::<u64>, None::<u64>, 0u64, 0u64);
    for (i, &(p, tm, am, te, ae)) in rows.iter().enumerate() {
        if let Some(v) = tm {
            *sum.0.get_or_insert(0) += v;
        }
        if let Some(v) = am {
            *sum.1.get_or_insert(0) += v;
        }
        sum.2 += te;
        sum.3 += ae;
        if i < top {
            t.row(vec![
                Cell::text(p.to_string()),
                cell(tm, te),
                cell(am, ae),
                Cell::Int(te.saturating_sub(ae)),
                pct(te, ae),
            ]);
        }
    }
    t.row(vec![
        Cell::text("all"),
        cell(sum.0, sum.2),
        cell(sum.1, sum.3),
        Cell::Int(sum.2.saturating_sub(sum.3)),
        pct(sum.2, sum.3),
    ]);
    t.set_note(
        "processor cycles; monitored: total = the latency counters (events 6 or 4+5, 7, 8 in cycles mode) x3, apparent = the multiprocessing-stall pipeline counter x4 (prescaled); exact: the core's Counters::miss_cycles (each L2 miss from its request leaving the core to its data) and miss_stall_cycles (the cycles the processor stalled for them); equal on a blocking core, apart by what ran under the misses with [cpu.nonblocking] (crates/machine/src/cpu/nonblocking.rs)",
    );
    s.table(t);
}
