//! The UPC restricted to one process (`pmusim run A+B --monitor upc --monitor-process NAME`;
//! issue 15 item 2; docs/os.md): counter virtualization at context switch, the way
//! `perf_event_open` counts one task and BGPM's per-thread event sets read it on CNK.
//!
//! *No marking.* The UPC_P's counter configuration selects an event and a hardware-thread
//! mask (seed 001: "thread combine"; `regs::CounterCfg::threads`); nothing in it or in the
//! A2 core's event bus names a process or a privilege, so there is no mark to count by (POWER2's
//! MSR[PM] has no counterpart). A thread mask restricts a counter to a hardware thread, which is
//! one process only while that process owns the context; `--restrict-by marking` is refused.
//!
//! *Virtualization.* The counters run free; at every context switch of a hardware context the
//! operating system reads the counters that count that context alone (the 64-bit value BGPM
//! reads: SRAM counter + local register, `Upc::count_at`), adds the outgoing thread's delta to
//! its totals and takes the value as the incoming thread's start (`virt::Virtualizer`, keyed by
//! hardware context). A counter counts one context alone when it is enabled and either the
//! core has one context, or its event is per thread and its mask selects exactly that context
//! (BGPM's per-thread mode gives each of the four threads its own counters). Counters over
//! several contexts (the default configuration's 17 A2 counters on a 4-way core) or of
//! core-wide events cannot be split by a context's switches and are left out ("-"), as are the
//! UPC_L2 slice counters (shared by every core: `perf` does not restrict uncore events to a
//! task either). The cost is the operating system's: `[os] virtual_counters` grows by the
//! counters one context owns (its switch path's uncached reads and its loads and stores of
//! the totals), measured in the run (`ground_truth.os.virtualization`).

use super::config::Config;
use super::events::{self, Group, PEvent};
use super::probe::{Upc, P_COUNTERS};
use crate::plugin::{Error, Restrict};
use crate::virt::Virtualizer;
use engine::Tick;
use machine::probe::{kind, Observation, Probe, Signals};
use machine::state::State;
use machine::Machine;
use report::model::{Cell, Clock, Column, Section, Table, Unit as RUnit};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::rc::Rc;

/// The way asked for: counter virtualization (the default and the only one).
pub fn way(by: Option<Restrict>) -> Result<Restrict, Error> {
    match by.unwrap_or(Restrict::Virtualization) {
        Restrict::Virtualization => Ok(Restrict::Virtualization),
        by => Err(Error::input(format!(
            "--restrict-by {}: monitor `upc` has no process mark (a UPC_P counter selects an event and a hardware-thread mask, nothing that names a process); use --restrict-by virtualization",
            by.name()
        ))),
    }
}

/// The UPC_P event counter `c` selects.
fn event_of(c: &super::regs::CounterCfg) -> Option<&'static PEvent> {
    Group::from_code(c.group as u64).and_then(|g| events::p_event(g, c.event))
}

/// Per hardware context `k` of a core with `tpc` contexts, which UPC_P counters count it
/// alone (see the module documentation).
pub fn owned(cfg: &Config, tpc: usize) -> Vec<[bool; P_COUNTERS]> {
    let all = ((1u16 << tpc) - 1) as u8;
    (0..tpc)
        .map(|k| {
            let mut v = [false; P_COUNTERS];
            for (i, c) in cfg.p.iter().enumerate().take(P_COUNTERS) {
                // A per-thread event counts the contexts of its mask; a core-wide one all.
                let alone = match event_of(c) {
                    Some(e) if e.per_thread => c.threads & all == 1 << k,
                    Some(_) => tpc == 1,
                    None => false,
                };
                v[i] = c.enable && alone;
            }
            v
        })
        .collect()
}

/// The counters the switch path reads: the most any one context owns.
pub fn counters_read(cfg: &Config, tpc: usize) -> u64 {
    owned(cfg, tpc)
        .iter()
        .map(|o| o.iter().filter(|&&b| b).count() as u64)
        .max()
        .unwrap_or(0)
}

/// The virtualizer and what it reads: shared by the switch probe and the report.
pub struct Restriction {
    upc: Rc<RefCell<Upc>>,
    pub virt: Virtualizer,
    tpc: usize,
    pub owned: Vec<[bool; P_COUNTERS]>,
}

impl Restriction {
    /// Context `k` of core `core`'s owned counters now (at `t`, or after the final frame).
    fn values(&self, core: usize, k: usize, t: Option<Tick>) -> [u64; P_COUNTERS] {
        let mut v = [0; P_COUNTERS];
        let mut u = self.upc.borrow_mut();
        for (i, x) in v.iter_mut().enumerate() {
            if self.owned[k][i] {
                *x = u.count_at(core, i, t);
                if let Some(t) = t {
                    *x = x.wrapping_sub(u.cycles_after(core, i, t));
                }
            }
        }
        v
    }
}

/// Restricts `upc` (attached to `m` under `cfg`, Mode 0) to process `name` and attaches the
/// probe that follows the context switches.
pub fn attach(
    m: &mut Machine,
    upc: &Rc<RefCell<Upc>>,
    cfg: &Config,
    name: &str,
) -> Result<Rc<RefCell<Restriction>>, Error> {
    if cfg.mode != 0 {
        return Err(Error::input(format!(
            "--monitor-process {name}: the UPC is restricted in Mode 0 only (in Mode 1 one unit's events fill UPC_C, not per-core counters a switch path reads)"
        )));
    }
    let st = m.state();
    let tpc = st.sched.threads_per_core;
    let holders = st
        .sched
        .contexts
        .iter()
        .map(|c| c.loaded.map_or(crate::virt::NO_THREAD, |t| t as u32))
        .collect();
    let virt = Virtualizer::named(m, name, P_COUNTERS, "--monitor-process")?.per_context(holders);
    let r = Rc::new(RefCell::new(Restriction {
        upc: upc.clone(),
        virt,
        tpc,
        owned: owned(cfg, tpc),
    }));
    // Every context's interval opens at its counters' values now (zero, or preloaded).
    {
        let mut rr = r.borrow_mut();
        for key in 0..st.sched.contexts.len() {
            let now = rr.values(key / tpc, key % tpc, Some(0));
            rr.virt.open(key, &now);
        }
    }
    m.attach(Box::new(SwitchProbe(r.clone())));
    Ok(r)
}

/// The operating system's reads at a context switch.
struct SwitchProbe(Rc<RefCell<Restriction>>);

impl Probe for SwitchProbe {
    fn observe(&mut self, o: &Observation, _sig: &mut Signals) {
        let Observation::Switch {
            core,
            context,
            t,
            to: Some(to),
            ..
        } = *o
        else {
            return;
        };
        let mut r = self.0.borrow_mut();
        let (core, k) = (core as usize, context as usize);
        let key = core * r.tpc + k;
        // A switch between a core's hardware contexts is the pipeline's interleaving, not a
        // context switch: the context's own thread has not changed.
        if r.virt.holder(key) == to {
            return;
        }
        let now = r.values(core, k, Some(t));
        r.virt.switch(key, Some(to), &now);
    }
    fn interest(&self) -> u32 {
        kind::SWITCH
    }
    /// After the UPC's final frame (it was attached first): every interval closes.
    fn finish(&mut self, _t: Tick) {
        let mut r = self.0.borrow_mut();
        let tpc = r.tpc;
        for key in 0..r.virt.keys() {
            let now = r.values(key / tpc, key % tpc, None);
            r.virt.finish(key, &now);
        }
    }
    fn name(&self) -> &str {
        "upc-restrict"
    }
}

/// One counter of the restricted report: (counter, event, mask, virtualized count, exact).
pub struct Row {
    pub counter: usize,
    pub event: &'static str,
    pub threads: u8,
    pub value: Option<u64>,
    pub exact: Option<u64>,
}

/// The process's counts and the run's switch costs.
pub struct Restricted {
    pub name: String,
    pub rows: Vec<Row>,
    pub switches: u64,
    pub switch_cycles: u64,
    pub virt_cycles: u64,
    pub virtual_counters: u64,
}

/// Counts the restricted process: each owned counter's totals over the process's threads,
/// beside the process's exact count (its threads on the contexts the counter counts, where
/// the machine keeps the event: `counting::exact_of`).
pub fn measure(st: &State, cfg: &Config, r: &Restriction) -> Option<Restricted> {
    let os = st.os.as_ref()?;
    let v = &r.virt;
    let tot = v.process_totals();
    let rows = cfg
        .p
        .iter()
        .enumerate()
        .take(P_COUNTERS)
        .map(|(i, c)| {
            let ev = event_of(c);
            let counted = r.owned.iter().any(|o| o[i]);
            let exact = ev.filter(|_| counted).and_then(|e| {
                v.threads()
                    .into_iter()
                    .filter(|&t| r.owned[st.sched.threads[t].context % r.tpc][i])
                    .map(|t| super::counting::exact_of(e, &st.sched.threads[t].cnt))
                    .sum::<Option<u64>>()
            });
            Row {
                counter: i,
                event: ev.map_or("?", |e| e.name),
                threads: c.threads,
                value: counted.then_some(tot[i]),
                exact,
            }
        })
        .collect();
    let s = &os.stats;
    Some(Restricted {
        name: v.name.clone(),
        rows,
        switches: s.switches,
        switch_cycles: s.switch_cycles,
        virt_cycles: s.virt_cycles,
        virtual_counters: os.cfg.virtual_counters,
    })
}

/// `monitors.upc.process`.
pub fn json(r: &Restricted) -> Value {
    let counters: Vec<Value> = r
        .rows
        .iter()
        .map(|row| {
            json!({
                "counter": row.counter,
                "event": row.event,
                "threads": row.threads,
                "marking": Value::Null,
                "virtualization": row.value.map(|v| json!({"count": v, "exact": row.exact})),
            })
        })
        .collect();
    json!({
        "name": r.name,
        "counters": counters,
        "marking": "none: a UPC_P counter selects an event and a hardware-thread mask, nothing that names a process",
        "switches": r.switches,
        "switch_cycles_per_switch": crate::virt::per_switch(r.switch_cycles, r.switches),
        "virtualization_cycles_per_switch": crate::virt::per_switch(r.virt_cycles, r.switches),
        "virtual_counters": r.virtual_counters,
    })
}

/// The process's table and the cost table.
pub fn tables(s: &mut Section, r: &Restricted) {
    let mut t = Table::new(
        "upc_process",
        &format!(
            "Process {} alone: marking (none) and counter virtualization",
            r.name
        ),
        vec![
            Column::label("counter"),
            Column::label("event"),
            Column::label("threads"),
            Column::label("marked"),
            Column::estimate("virtualized", RUnit::Count, 0),
        ],
    );
    for row in &r.rows {
        t.row(vec![
            Cell::text(format!("UPC_P {}", row.counter)),
            Cell::text(row.event),
            Cell::text(format!("{:04b}", row.threads)),
            Cell::text("-"),
            match (row.value, row.exact) {
                (Some(v), Some(e)) => Cell::estimate(v, e),
                (Some(v), None) => Cell::Int(v),
                _ => Cell::text("-"),
            },
        ]);
    }
    t.set_note(
        "marked: the UPC has no process mark (a counter selects an event and a hardware-thread mask). virtualized: the counters run free, the switch path reads those counting the switched context alone and keeps per-thread totals (perf_event_open); exact: the process's counts on those contexts. -: a counter over several contexts or a core-wide event on a multithreaded core, or disabled"
            .to_string(),
    );
    s.table(t);
    let mut c = Table::new(
        "upc_process_cost",
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
        "the switch path from exception entry to return, its stalls included; virtualization is its uncached counter reads and its loads and stores of the per-thread totals; marking: none to cost"
            .to_string(),
    );
    s.table(c);
}

impl super::Plugin {
    /// The process's counts each way, when the monitor is restricted.
    pub(super) fn restricted(&self, m: &Machine) -> Option<Restricted> {
        let r = self.restriction.as_ref()?;
        measure(m.state(), &self.cfg, &r.borrow())
    }
    /// `s` with the restricted process's tables appended (if restricted).
    pub(super) fn with_process(&self, m: &Machine, mut s: Section) -> Section {
        if let Some(r) = self.restricted(m) {
            tables(&mut s, &r);
        }
        s
    }
}
