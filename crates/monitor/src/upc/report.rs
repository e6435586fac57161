//! The UPC's report as a typed section (CONTRACTS §3): every UPC_C counter beside its exact
//! count, totals by event, the chain's slot map and start delays, and the overflow interrupts'
//! latencies beside the driver's figures; and its JSON section (`monitors.upc`).

use super::config::Config;
use super::events::{self, Group};
use super::probe::Upc;
use report::model::{Cell, Clock, Column, Section, Table, Unit};
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn x2() -> Clock {
    Clock::Named("x2".into())
}

/// The event name of counter `i` of unit `pos`.
pub fn event_name(u: &Upc, pos: usize, i: usize) -> &'static str {
    let unit = &u.units[pos];
    let c = &unit.counters[i].cfg;
    if unit.slice {
        events::l2_name(c.event, u.c.control.l2_combine && !unit.central)
    } else {
        Group::from_code(c.group as u64)
            .and_then(|g| events::p_event(g, c.event))
            .map_or("?", |e| e.name)
    }
}

fn unit_name(u: &Upc, pos: usize) -> String {
    let unit = &u.units[pos];
    if unit.central {
        let owner = if unit.slice { "slice" } else { "core" };
        format!("UPC_C Mode 1 ({owner} {})", unit.index)
    } else if unit.slice {
        format!("UPC_L2 {}", unit.index)
    } else {
        format!("UPC_P {}", unit.index)
    }
}

/// What a counter counted, as UPC_C holds it: its SRAM counter since software last wrote it
/// (under L2 combine every slice's counter i shares one, shown on slice 0's row).
fn counted(u: &Upc, pos: usize, i: usize) -> Option<(u64, u64)> {
    let unit = &u.units[pos];
    let c = &unit.counters[i];
    if !c.cfg.enable {
        return None;
    }
    if unit.slice && !unit.central && u.c.control.l2_combine {
        if unit.index != 0 {
            return None;
        }
        let exact = u
            .units
            .iter()
            .filter(|x| x.slice && !x.central)
            .map(|x| x.counters[i].exact)
            .sum();
        return Some((u.counted(c.sram), exact));
    }
    Some((u.counted(c.sram), c.exact))
}

/// One configured preset's figures.
struct PresetValue {
    first: usize,
    p: &'static super::papi::Preset,
    /// PAPI's formula over the UPC_C counts, and over the exact counts.
    value: i64,
    exact: i64,
    /// What the name means, over the exact counts, where PAPI's formula differs (`means`).
    meaning: Option<i64>,
}

/// Each configured preset's figures.
fn preset_values(u: &Upc, cfg: &Config) -> Vec<PresetValue> {
    let cores: Vec<usize> = (0..u.units.len())
        .filter(|&p| !u.units[p].slice && !u.units[p].central)
        .collect();
    cfg.presets
        .iter()
        .map(|&(first, name)| {
            let p = super::papi::preset(name).expect("a configured preset");
            let (mut got, mut exact) = (Vec::new(), Vec::new());
            for i in first..first + p.events.len() {
                let (g, e) = cores
                    .iter()
                    .filter_map(|&pos| counted(u, pos, i))
                    .fold((0u64, 0u64), |a, x| {
                        (a.0.wrapping_add(x.0), a.1.wrapping_add(x.1))
                    });
                got.push(g as i64);
                exact.push(e as i64);
            }
            PresetValue {
                first,
                p,
                value: p.value(&got),
                exact: p.value(&exact),
                meaning: p.meaning(&exact),
            }
        })
        .collect()
}

/// The PAPI presets the configuration asked for, each computed as PAPI does from its counters'
/// UPC_C counts summed over the cores, beside the same formula over their exact counts.
fn presets(u: &Upc, cfg: &Config) -> Table {
    let mut t = Table::new(
        "upc_papi",
        "PAPI presets (as PAPI derives them on BG/Q) over every core",
        vec![
            Column::label("preset"),
            Column::count("first counter"),
            Column::label("derivation"),
            Column::estimate("value", Unit::Count, 0),
        ],
    );
    for pv in preset_values(u, cfg) {
        let (v, x) = (pv.value, pv.exact);
        let mut derivation = format!("{} ({})", pv.p.formula(), pv.p.papi_kind());
        if let (Some(f), Some(m)) = (pv.p.means, pv.meaning) {
            derivation += &format!("; the name's meaning, {f}: exact {m}");
        }
        t.row(vec![
            Cell::text(pv.p.name),
            Cell::Int(pv.first as u64),
            Cell::text(derivation),
            if v < 0 || x < 0 {
                Cell::text(format!("{v} (exact {x})"))
            } else {
                Cell::estimate(v as u64, x as u64)
            },
        ]);
    }
    t.set_note("value: PAPI's formula over the counters' UPC_C counts summed over the cores; exact: the same formula over their exact counts (the same observations without width or chain). Where PAPI's formula does not give what the preset's name means (PAPI_BR_NTK, PAPI_LD_INS), the derivation also gives the formula that does and its exact value.");
    t
}

/// The section.
pub fn section(u: &Upc, cfg: &Config, uncached_cycles: u64) -> Section {
    let mode = match u.m1_owner {
        Some(o) => format!(
            "Mode 1 (detailed: {} owns the chain, 92 raw events counted in UPC_C)",
            unit_name(u, o)
        ),
        None => "Mode 0".to_string(),
    };
    let mut s = Section::new(&format!(
        "UPC (Blue Gene/Q distributed counters), {mode}: {} UPC_P x 24 counters of {} bits, {} UPC_L2 x 16 of {} bits, frame {} x2 cycles",
        u.chain.cores, u.p_width, u.chain.slices, u.l2_width, u.chain.period
    ));
    s.text(format!(
        "Chain: {} units, {} wake-ups (one per unit packet per frame, or one per frame while no counter can interrupt); register accesses {} reads, {} writes, each {} processor cycles (the card's uncached window); L2 combine {}; start written at processor cycle {}",
        u.chain.units(),
        u.wakes,
        u.mmio_reads,
        u.mmio_writes,
        uncached_cycles,
        u.c.control.l2_combine,
        cfg.start_cycle
    ));

    let mut t = Table::new(
        "upc_counters",
        "UPC_C counters: SRAM count beside the exact count of the same events",
        vec![
            Column::label("unit"),
            Column::count("counter"),
            Column::count("SRAM"),
            Column::label("event"),
            Column::label("threads"),
            Column::estimate("count", Unit::Count, 0),
            Column::count("lost"),
            Column::count("transfers"),
        ],
    );
    let mut by_event: BTreeMap<&str, (u64, u64, u64)> = BTreeMap::new();
    for pos in 0..u.units.len() {
        for i in 0..u.units[pos].counters.len() {
            let Some((got, exact)) = counted(u, pos, i) else {
                continue;
            };
            let c = &u.units[pos].counters[i];
            let name = event_name(u, pos, i);
            let e = by_event.entry(name).or_default();
            e.0 += got;
            e.1 += exact;
            e.2 += c.lost;
            t.row(vec![
                Cell::text(unit_name(u, pos)),
                Cell::Int(i as u64),
                Cell::Int(c.sram as u64),
                Cell::text(name),
                Cell::text(if u.units[pos].slice && !u.units[pos].central {
                    "-".to_string()
                } else {
                    format!("{:04b}", c.cfg.threads)
                }),
                Cell::estimate(got, exact),
                Cell::Int(c.lost),
                Cell::Int(c.transfers),
            ]);
        }
    }
    t.set_note("count: UPC_C's 64-bit SRAM counter after the stop's final frame; exact: the same observations counted without width or chain. lost: counts a local counter lost by wrapping before its slot.");
    s.table(t);

    let mut t = Table::new(
        "upc_events",
        "UPC events summed over units",
        vec![
            Column::label("event"),
            Column::estimate("count", Unit::Count, 0),
            Column::count("lost"),
        ],
    );
    for (name, (got, exact, lost)) in &by_event {
        t.row(vec![
            Cell::text(*name),
            Cell::estimate(*got, *exact),
            Cell::Int(*lost),
        ]);
    }
    s.table(t);

    if !cfg.presets.is_empty() {
        s.table(presets(u, cfg));
    }

    let lat = u.chain.start_latency();
    let mut t = Table::new(
        "upc_chain",
        "Daisy chain: slot map and synchronous start per unit",
        vec![
            Column::label("unit"),
            Column::count("position"),
            Column::count("slot"),
            Column::cycles("sees count 0 after", x2(), 0),
            Column::cycles("start delay", x2(), 0),
            Column::cycles("acts after command", x2(), 0),
            Column::cycles("first count (sync counters)", x2(), 0),
        ],
    );
    let start = u.c.commands.iter().find(|c| c.run).map(|c| c.effective);
    for pos in 0..u.chain.units() {
        let first = u.units[pos]
            .counters
            .iter()
            .filter(|c| c.cfg.enable && !c.cfg.sync_override)
            .filter_map(|c| c.first)
            .min();
        t.row(vec![
            Cell::text(unit_name(u, pos)),
            Cell::Int(pos as u64),
            Cell::Int(u.chain.slot(pos)),
            Cell::Int(pos as u64 + 1),
            Cell::Int(u.chain.start_delay(pos)),
            Cell::Int(lat),
            first.map_or(Cell::Empty, |f| Cell::Int(f / u.chain.x2)),
        ]);
    }
    t.set_note(format!(
        "A unit sees the frame count and the start bit `position + 1` x2 cycles after UPC_C sends them and waits its start delay, so every unit acts {lat} x2 cycles after the command{}. first count: the x2 cycle of the earliest event a counter without sync override counted.",
        start.map_or(String::new(), |e| format!(" (the start took effect at x2 cycle {})", e / u.chain.x2))
    ));
    s.table(t);

    let mut t = Table::new(
        "upc_interrupts",
        "Overflow interrupts: from the event that wrapped the 64-bit count to the interrupt",
        vec![
            Column::label("unit"),
            Column::count("counter"),
            Column::label("event"),
            Column::count("core"),
            Column::count("thread"),
            Column::cycles("raised at", x2(), 0),
            Column::cycles("latency", Clock::Processor, 0),
            Column::cycles("driver's figure", Clock::Processor, 0),
        ],
    );
    for q in &u.irqs {
        let slice = u.units[q.pos].slice;
        t.row(vec![
            Cell::text(unit_name(u, q.pos)),
            Cell::Int(q.counter as u64),
            Cell::text(event_name(u, q.pos, q.counter)),
            Cell::Int(q.core as u64),
            Cell::Int(q.context as u64),
            Cell::Int(q.raised / u.chain.x2),
            q.crossed
                .map_or(Cell::Empty, |c| Cell::Int((q.raised - c) / u.cp)),
            Cell::Int(if slice { 800 } else { 4 }),
        ]);
    }
    t.set_note("The driver documents about 4 cycles for a core's fast overflow and up to 800 for L2 units; an armed local counter interrupts on the event that wraps the 64-bit count (latency 0 before the thread takes it at its next instruction boundary), a level counter (no event to count) at the wake-up on the x2 cycle after its crossing.");
    s.table(t);

    // The distribution per unit kind and event group, beside the driver's figure.
    let mut groups: BTreeMap<(bool, String), Vec<u64>> = BTreeMap::new();
    for q in &u.irqs {
        let slice = u.units[q.pos].slice;
        let group = if slice {
            "L2".to_string()
        } else {
            let g = u.units[q.pos].counters[q.counter].cfg.group;
            Group::from_code(g as u64)
                .map_or("reserved", |g| g.name())
                .to_string()
        };
        if let Some(c) = q.crossed {
            groups
                .entry((slice, group))
                .or_default()
                .push((q.raised - c) / u.cp);
        }
    }
    let mut t = Table::new(
        "upc_interrupt_latency",
        "Overflow interrupt latency distribution (processor cycles), beside the driver's figure",
        vec![
            Column::label("unit"),
            Column::label("event group"),
            Column::count("interrupts"),
            Column::cycles("min", Clock::Processor, 0),
            Column::cycles("median", Clock::Processor, 0),
            Column::cycles("max", Clock::Processor, 0),
            Column::cycles("driver's figure", Clock::Processor, 0),
        ],
    );
    for ((slice, group), mut v) in groups {
        v.sort_unstable();
        t.row(vec![
            Cell::text(if slice { "UPC_L2" } else { "UPC_P" }),
            Cell::text(group),
            Cell::Int(v.len() as u64),
            Cell::Int(v[0]),
            Cell::Int(v[v.len() / 2]),
            Cell::Int(v[v.len() - 1]),
            Cell::Int(if slice { 800 } else { 4 }),
        ]);
    }
    t.set_note("Opcode-group interrupts are raised when the machine reports the span of retirements that crossed the threshold; an armed counter bounds its threads' run-ahead by the instructions it still needs, splits an instruction block at the instruction that crosses and ends a spin-wait at the iteration that crosses, so the latency is 0 or the rest of the spin iteration that crossed.");
    s.table(t);
    s
}

/// The JSON section `monitors.upc`.
pub fn json(u: &Upc, cfg: &Config, uncached_cycles: u64) -> Value {
    let mut counters = Vec::new();
    for pos in 0..u.units.len() {
        for i in 0..u.units[pos].counters.len() {
            if let Some((got, exact)) = counted(u, pos, i) {
                let c = &u.units[pos].counters[i];
                counters.push(json!({
                    "unit": unit_name(u, pos),
                    "counter": i,
                    "sram": c.sram,
                    "event": event_name(u, pos, i),
                    "threads": c.cfg.threads,
                    "count": got,
                    "exact": exact,
                    "lost": c.lost,
                }));
            }
        }
    }
    let mut v = json!({
        "mode": u.c.control.mode,
        "mode1_owner": u.m1_owner.map(|o| unit_name(u, o)),
        "period_x2": u.chain.period,
        "p_width": u.p_width,
        "l2_width": u.l2_width,
        "cores": u.chain.cores,
        "slices": u.chain.slices,
        "start_cycle": cfg.start_cycle,
        "uncached_cycles": uncached_cycles,
        "wakes": u.wakes,
        "mmio_reads": u.mmio_reads,
        "mmio_writes": u.mmio_writes,
        "commands": u.c.commands,
        "interrupts": u.irqs,
        "counters": counters,
    });
    if !cfg.presets.is_empty() {
        v["papi"] = preset_values(u, cfg)
            .into_iter()
            .map(|pv| {
                let mut j = json!({"preset": pv.p.name, "first_counter": pv.first, "derivation": pv.p.formula(), "value": pv.value, "exact": pv.exact});
                if let (Some(f), Some(m)) = (pv.p.means, pv.meaning) {
                    j["meaning"] = json!({"formula": f, "exact": m});
                }
                j
            })
            .collect();
    }
    v
}
