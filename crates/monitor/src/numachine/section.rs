//! The NUMAchine monitor's report as a typed section (`report::model`): the counters beside
//! the ground truth (estimate columns), the invalidation estimators, the SRAM's latency
//! histograms (a plot and their statistics), its per-line profile, locality map or busiest
//! words, and the queue histograms. The renderers of the `report` crate turn it into text,
//! CSV files, SVG plots, the HTML page and the typed JSON; nothing here formats text.
//!
//! Clocks: the counters and the SRAM's latencies count on the monitor clock (the system clock,
//! 50 MHz on NUMAchine: 3 processor cycles each); a pipeline counter reads its events through
//! the every-fourth-event prescaler (seed 000, 4.4.3), so its value is the register x4.
//!
//! With `top == usize::MAX` (CSV files, the typed JSON) every row is kept and the raw tables
//! behind the others are added: every SRAM word of every card, the latency buckets, the queue
//! lengths and waits.

use super::regs::{SRAM_EVENTS, SRAM_MODES};
use super::report::{
    card_counters, filtered_exact, latency_hists, locality_map, machine_wide, miss_profile,
    rsr_words, sram_with_exact, CounterRow, Hists,
};
use super::NumachineMonitor;
use crate::latency;
use machine::state::State;
use report::model::{Axis, Bin, Cell, Clock, Column, Kind, Plot, PlotData, Section, Table, Unit};
use serde_json::Value;
use std::collections::BTreeMap;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

fn mon_cycles(name: &str, decimals: u8) -> Column {
    Column::cycles(name, Clock::Monitor, decimals)
}

/// An SRAM address or index as text, hexadecimal and decimal: "0x01a4 (420)".
fn addr(a: u64) -> Cell {
    Cell::text(format!("{a:#06x} ({a})"))
}

/// The section of a finished run; `top`: processor cards and ranked rows shown
/// (`usize::MAX`: every row and the raw tables). Built from the monitor's state, not from its
/// JSON section, so that a text report does not build the JSON (`Monitor::section_needs_json`).
pub fn build(st: &State, mon: &NumachineMonitor, top: usize) -> Section {
    let full = top == usize::MAX;
    let mut s = Section::new(&format!("NUMAchine monitor (config `{}`)", mon.setup.name));
    if !mon.woke && !full {
        // Both master enables were off for the whole run: every register reads its preload
        // and the SRAM nothing (the JSON and the CSV tables still list every card).
        s.text(format!(
            "both master enables off for the whole run (GPCE = SRAMCE = 0): the {} cards counted nothing (--json lists every register)",
            mon.cards.len()
        ));
        return s;
    }
    counters(&mut s, st, mon, top, full);
    virtualized(
        &mut s,
        &super::report::virtualized(st, mon).unwrap_or(Value::Null),
    );
    estimators(&mut s, mon, top);
    super::miss_cycles::table(&mut s, st, mon, top);
    super::phase_split::table(&mut s, st, mon, top);
    let hists = latency_hists(mon);
    latencies(&mut s, mon, hists.as_ref(), full);
    sram(&mut s, st, mon, hists.is_some(), top, full);
    queues(&mut s, mon, full);
    s
}

/// The clock sentence every counter table's note starts with.
fn clock_note(st: &State, mon: &NumachineMonitor) -> String {
    format!(
        "monitor clock {} MHz ({} processor cycles per monitor cycle)",
        st.clocks.tick_hz / mon.sys_period / 1_000_000,
        mon.sys_period / mon.cpu_period.max(1)
    )
}

/// The counters, per card (the first `top` cards) and machine-wide, in two tables by what
/// they count: events (the value is an event count; a pipeline counter's is the register x4)
/// and cycles (the value is the register, in monitor cycles; beside it in processor cycles).
/// Counters selecting no event are left out unless `full`.
/// A filtered counter's exact value comes from `report::filtered_exact` where the ground truth
/// can say what its filter passes (the JSON leaves it null).
fn counters(s: &mut Section, st: &State, mon: &NumachineMonitor, top: usize, full: bool) {
    let scale = mon.sys_period / mon.cpu_period.max(1);
    let mut ev = Table::new(
        "numachine_counters",
        "NUMAchine monitor: event counters (per processor card, then all cards)",
        vec![
            Column::label("proc"),
            Column::label("counter"),
            Column::label("name"),
            Column::label("event"),
            Column::count("register"),
            Column::count("wraps"),
            Column::estimate("events", Unit::Count, 0),
            Column::count("prescaler input"),
            Column::label("exact counts"),
        ],
    );
    let mut cy = Table::new(
        "numachine_cycle_counters",
        "NUMAchine monitor: cycle counters (per processor card, then all cards)",
        vec![
            Column::label("proc"),
            Column::label("counter"),
            Column::label("name"),
            Column::label("event"),
            Column::count("wraps"),
            Column::estimate(
                "cycles",
                Unit::Cycles {
                    clock: Clock::Monitor,
                },
                0,
            ),
            Column::cycles("value x3", Clock::Processor, 0),
            Column::label("exact counts"),
        ],
    );
    // The cards shown, and every card for the machine-wide row.
    let ncards = mon.cards.len();
    let shown = ncards.min(top.max(1));
    let rows: Vec<Vec<CounterRow>> = mon
        .cards
        .iter()
        .map(|c| card_counters(st, mon, c))
        .collect();
    // One row: `k` a counter of a card (or machine-wide, with card 0's mode: `mode`).
    let mut row = |proc: String,
                   k: &CounterRow,
                   mode: &CounterRow,
                   wraps: Cell,
                   exact: Option<(u64, String)>| {
        let event = mode.event;
        if event == "nothing" && !full {
            return;
        }
        let v = k.value;
        let (exact, what) = match exact {
            Some((x, what)) => (Some(x), what),
            None => (None, String::new()),
        };
        let estimate = |monitored: u64| match exact {
            Some(x) => Cell::estimate(monitored, x),
            None => Cell::Int(monitored),
        };
        let head = vec![
            Cell::text(proc),
            Cell::text(k.counter.to_string()),
            Cell::text(&k.label),
            Cell::text(event),
        ];
        if event == "pipeline" || mode.occurrences {
            let (value, prescaled) = if event == "pipeline" {
                (v * 4, Cell::Int(k.pipeline_exact.unwrap_or(0)))
            } else {
                (v, Cell::Empty)
            };
            let mut r = head;
            r.extend([
                Cell::Int(v),
                wraps,
                estimate(value),
                prescaled,
                Cell::text(what),
            ]);
            ev.row(r);
        } else {
            let mut r = head;
            r.extend([wraps, estimate(v), Cell::Int(v * scale), Cell::text(what)]);
            cy.row(r);
        }
    };
    let filtered = |p: usize, i: usize| filtered_exact(st, mon, &mon.cards[p], i);
    for (p, card) in rows.iter().enumerate().take(shown) {
        for (i, k) in card.iter().enumerate() {
            let exact = match k.exact {
                Some((x, what)) => Some((x, what.to_string())),
                None => filtered(p, i),
            };
            row(
                mon.cards[p].proc.to_string(),
                k,
                k,
                Cell::Int(k.wraps),
                exact,
            );
        }
    }
    for (i, (value, pipeline, exact)) in machine_wide(mon, &rows).into_iter().enumerate() {
        let mode = &rows[0][i];
        // The machine-wide exact value's description is card 0's.
        let exact = match (exact, mode.exact) {
            (Some(x), Some((_, w))) => Some((x, w.to_string())),
            (Some(x), None) => Some((x, String::new())),
            // Machine-wide, a filtered counter's exact value when every card has one.
            (None, _) => {
                let all: Option<Vec<_>> = (0..ncards).map(|p| filtered(p, i)).collect();
                all.and_then(|v| {
                    let what = v.first()?.1.clone();
                    Some((v.iter().map(|x| x.0).sum(), what))
                })
            }
        };
        let k = CounterRow {
            value,
            pipeline_exact: Some(pipeline),
            ..mode.clone()
        };
        row("all".into(), &k, mode, Cell::Empty, exact);
    }
    let hidden = if shown < ncards {
        format!(
            "; cards 0-{} of {} shown (--top; every card is in the `all` rows, the CSV files and --json)",
            shown - 1,
            ncards
        )
    } else {
        String::new()
    };
    ev.set_note(format!(
        "{}; pipeline counters are prescaled: the register reads events/4 and `events` is the register x4 (prescaler input: the exact events the prescaler saw){hidden}",
        clock_note(st, mon)
    ));
    cy.set_note(format!(
        "{}; `cycles` is the register, in monitor cycles; `value x3` the same in processor cycles{hidden}",
        clock_note(st, mon)
    ));
    if !ev.is_empty() {
        s.table(ev);
    }
    if !cy.is_empty() {
        s.table(cy);
    }
    if s.blocks.is_empty() {
        s.text("no counter selects an event (every counter counts `nothing`)");
    }
}

/// The counters of the one process the monitor is restricted to by counter virtualization
/// (`--virtualize NAME`, `monitors.numachine.virtualized`): its threads' summed intervals
/// beside the exact per-process counts. A pipeline counter's value is the register x4 (the
/// prescaler), its exact value the events the prescaler saw in the process's intervals.
fn virtualized(s: &mut Section, v: &Value) {
    if v.is_null() {
        return;
    }
    let name = v["name"].as_str().unwrap_or("?");
    let mut t = Table::new(
        "numachine_virtualized",
        &format!("NUMAchine monitor: counter virtualization, process `{name}` alone"),
        vec![
            Column::label("process"),
            Column::label("counter"),
            Column::label("name"),
            Column::label("event"),
            Column::label("counts"),
            Column::estimate("value", Unit::Count, 0),
            Column::label("exact counts"),
        ],
    );
    for k in v["counters"].as_array().into_iter().flatten() {
        let event = k["event"].as_str().unwrap_or("");
        if event == "nothing" {
            continue;
        }
        let raw = u(&k["value"]);
        let value = if event == "pipeline" { raw * 4 } else { raw };
        let (cell, what) = match k["exact"].as_object() {
            Some(o) => (
                Cell::estimate(value, u(&o["value"])),
                o["what"].as_str().unwrap_or("").to_string(),
            ),
            None => (Cell::Int(value), String::new()),
        };
        t.row(vec![
            Cell::text(name),
            Cell::text(k["counter"].to_string()),
            Cell::text(k["label"].as_str().unwrap_or("")),
            Cell::text(event),
            Cell::text(if event == "pipeline" {
                "events"
            } else {
                k["counts"].as_str().unwrap_or("")
            }),
            cell,
            Cell::text(what),
        ]);
    }
    let threads: Vec<String> = v["threads"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| t["thread"].to_string())
        .collect();
    let pipeline: Vec<String> = v["counters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|k| {
            k["pipeline_exact"].as_u64().map(|pe| {
                format!(
                    "{}: {pe} full-rate pipeline events in the process's intervals",
                    k["label"].as_str().unwrap_or("")
                )
            })
        })
        .collect();
    t.set_note(format!(
        "the process's threads {} summed; {} context switches seen; the operating system reads {} counters at each switch; cycle counters in monitor cycles, pipeline counters the register x4 (the /4 prescaler's accumulator carries up to 3 events across switches){}",
        threads.join(", "),
        u(&v["switches_seen"]),
        u(&v["os_virtual_counters"]),
        if pipeline.is_empty() { String::new() } else { format!("; {}", pipeline.join("; ")) }
    ));
    s.table(t);
}

/// The invalidation estimators of Fig. 4.8 beside the exact counts, per card and for all.
fn estimators(s: &mut Section, mon: &NumachineMonitor, top: usize) {
    if !mon.cards.iter().any(|c| c.estimated) {
        s.text("estimators (Fig. 4.8): not run (no counter counts event E or F; `estimators = true` in the configuration runs them beside the exact counts)");
        return;
    }
    let mut t = Table::new(
        "numachine_estimators",
        "NUMAchine monitor: invalidation estimators (Fig. 4.8, index match only)",
        vec![
            Column::label("proc"),
            Column::estimate("external invalidation hits", Unit::Count, 0),
            Column::estimate("invalidation misses", Unit::Count, 0),
        ],
    );
    let (mut eh, mut xh, mut em, mut xm) = (0, 0, 0, 0);
    for c in mon.cards.iter().filter(|c| c.estimated) {
        eh += c.inval_hit.estimate;
        xh += c.inval_hit.exact;
        em += c.inval_miss.estimate;
        xm += c.inval_miss.exact;
        if t.rows.len() < top {
            t.row(vec![
                Cell::text(c.proc.to_string()),
                Cell::estimate(c.inval_hit.estimate, c.inval_hit.exact),
                Cell::estimate(c.inval_miss.estimate, c.inval_miss.exact),
            ]);
        }
    }
    t.set_total(vec![
        "all".into(),
        Cell::estimate(eh, xh),
        Cell::estimate(em, xm),
    ]);
    s.table(t);
}

/// Count, mean, variance and percentiles of one histogram (JSON `monitor_cycles`).
fn stats_cells(h: &super::report::Hist) -> Vec<Cell> {
    vec![
        Cell::Int(h.n()),
        Cell::Float(h.mean()),
        Cell::Float(h.variance()),
        Cell::Int(h.percentile(0.5)),
        Cell::Int(h.percentile(0.9)),
        Cell::Int(h.percentile(0.99)),
    ]
}

fn stats_columns(first: &str) -> Vec<Column> {
    vec![
        Column::label(first),
        Column::label("response state"),
        Column::count("count"),
        mon_cycles("mean", 1),
        Column::new(
            "variance",
            Kind::Quantity(Unit::Ratio {
                per: "monitor cycles²".into(),
            }),
            1,
        ),
        mon_cycles("p50", 0),
        mon_cycles("p90", 0),
        mon_cycles("p99", 0),
    ]
}

/// The SRAM's latency histograms (monitor cycles): the machine-wide plot, the statistics per
/// selector beside the exact ones per response state, and (full) every bucket.
fn latencies(s: &mut Section, mon: &NumachineMonitor, hists: Option<&Hists>, full: bool) {
    let Some((hs, exact)) = hists else {
        return;
    };
    let sm = mon.cards[0].smode;
    // The response state a selector stands for (compact mode with muxRSR).
    let rsr = |k: u16| {
        if sm.mode == 3 && sm.mux_rsr {
            Cell::text(rsr_words((k >> 4) as u8))
        } else {
            Cell::Empty
        }
    };
    {
        // The machine-wide plot: every selector's buckets.
        let mut sum: BTreeMap<(u64, u64), u64> = BTreeMap::new();
        for (_, h) in hs {
            for &(lo, hi, n) in &h.counts {
                *sum.entry((lo, hi)).or_default() += n;
            }
        }
        if !sum.is_empty() {
            s.plot(Plot {
                id: "numachine_latency".into(),
                title:
                    "NUMAchine monitor: cache-line request latency from the SRAM (all selectors)"
                        .into(),
                x: Axis::new(
                    "latency",
                    Unit::Cycles {
                        clock: Clock::Monitor,
                    },
                ),
                y: Axis::new("requests", Unit::Count),
                data: PlotData::Histogram {
                    bins: sum
                        .into_iter()
                        .map(|((lo, hi), count)| Bin {
                            lo: lo as f64,
                            hi: (hi + 1) as f64,
                            count,
                        })
                        .collect(),
                },
            });
        }
    }
    let mut t = Table::new(
        "numachine_latency",
        "NUMAchine monitor: latency histograms from the SRAM, by selector",
        stats_columns("selector"),
    );
    for (k, h) in hs {
        let mut r = vec![Cell::text(k.to_string()), rsr(*k)];
        r.extend(stats_cells(h));
        t.row(r);
    }
    t.set_note("compact buckets count at their midpoints in the mean and variance; percentiles are bucket upper bounds");
    s.table(t);
    let mut t = Table::new(
        "numachine_latency_exact",
        "NUMAchine monitor: exact latencies (ground truth), by response state",
        stats_columns("RSR"),
    );
    for (r, h) in exact {
        let mut row = vec![
            Cell::text(format!("{r:#07b} ({r})")),
            Cell::text(rsr_words(*r)),
        ];
        row.extend(stats_cells(h));
        t.row(row);
    }
    s.table(t);
    if full {
        let mut b = Table::new(
            "numachine_latency_buckets",
            "NUMAchine monitor: latency buckets from the SRAM",
            vec![
                Column::label("selector"),
                Column::label("response state"),
                mon_cycles("low", 0),
                mon_cycles("high", 0),
                Column::count("count"),
            ],
        );
        for (k, h) in hs {
            for &(lo, hi, n) in &h.counts {
                b.row(vec![
                    Cell::text(k.to_string()),
                    rsr(*k),
                    Cell::Int(lo),
                    Cell::Int(hi),
                    Cell::Int(n),
                ]);
            }
        }
        s.table(b);
    }
}

/// The SRAM's other uses: the per-line profile (mode 0), the locality map (mode 2 without
/// multiplexing) or the busiest words; with `full`, every word of every card.
fn sram(
    s: &mut Section,
    st: &State,
    mon: &NumachineMonitor,
    latency_shown: bool,
    top: usize,
    full: bool,
) {
    let sm = mon.cards[0].smode;
    let event = SRAM_EVENTS
        .get(sm.event as usize)
        .map(|e| e.0)
        .unwrap_or("reserved");
    let profile = miss_profile(st, mon);
    let locality = locality_map(mon);
    if let Some(v) = &profile {
        let mut t = Table::new(
            "numachine_miss_profile",
            &format!("NUMAchine monitor: per-cache-line profile, SRAM event `{event}` by secondary-cache index"),
            vec![
                Column::label("L2 index"),
                Column::estimate("count", Unit::Count, 0),
                Column::label("data structures mapping to the index"),
            ],
        );
        for (a, (n, x), names) in v.iter().take(top) {
            t.row(vec![
                addr(*a as u64),
                Cell::estimate(*n, *x),
                Cell::text(names.join(", ")),
            ]);
        }
        t.set_note(format!(
            "the hottest {} of {} indices, all cards together; exact: every such L2 event at the index while the SRAM was enabled, unfiltered, 64-bit and without the threshold preload",
            t.rows.len(),
            v.len()
        ));
        s.table(t);
    }
    if let Some(rows) = &locality {
        let local: u64 = rows.iter().filter(|r| r.local).map(|r| r.count).sum();
        let remote: u64 = rows.iter().filter(|r| !r.local).map(|r| r.count).sum();
        // The ground truth's completed misses by home (cancelled upgrades and bus errors are
        // line requests too, but the truth does not split them by home).
        let (gl, gr) = st.truth.as_ref().map_or((0, 0), |gt| {
            gt.per_proc.iter().fold((0, 0), |(l, r), m| {
                (
                    l + m.read_local + m.write_local,
                    r + m.read_remote + m.write_remote,
                )
            })
        });
        let unsplit: u64 = st.truth.as_ref().map_or(0, |gt| {
            gt.per_proc.iter().map(|m| m.cancelled + m.bus_errors).sum()
        });
        let mut t = Table::new(
            "numachine_locality",
            "NUMAchine monitor: Address-Mode locality map (AR[39..32,26..19])",
            vec![
                Column::label("proc"),
                Column::label("station"),
                Column::label("512 KiB block"),
                Column::estimate("count", Unit::Count, 0),
                Column::label("local/remote"),
            ],
        );
        for r in rows.iter().take(top) {
            t.row(vec![
                Cell::text(r.proc.to_string()),
                Cell::text(r.station.to_string()),
                Cell::text(format!("{:#x} ({})", r.block_base, r.block_base)),
                Cell::estimate(r.count, r.exact),
                Cell::text(if r.local { "local" } else { "remote" }),
            ]);
        }
        let mut sum = Table::new(
            "numachine_locality_summary",
            "NUMAchine monitor: locality map, all words",
            vec![
                Column::estimate("local", Unit::Count, 0),
                Column::estimate("remote", Unit::Count, 0),
                Column::percent("remote share"),
                Column::count("not split by the truth"),
            ],
        );
        sum.row(vec![
            Cell::estimate(local, gl),
            Cell::estimate(remote, gr),
            Cell::percent(remote, local + remote),
            Cell::Int(unsplit),
        ]);
        sum.set_note(
            "exact: the ground truth, every processor's completed misses by the line's home (read and write, local and remote); cancelled upgrades and bus errors are line requests the truth does not split by home (last column)"
                .to_string(),
        );
        t.set_note(format!(
            "the busiest {} of {} words; exact: the line requests the word would hold, unfiltered",
            t.rows.len(),
            rows.len()
        ));
        s.table(sum);
        s.table(t);
    }
    let shown = profile.is_some() || locality.is_some() || latency_shown;
    if !shown && mon.setup.regs.sramce {
        let by = sram_with_exact(mon);
        let shadowed = mon.cards.iter().any(|c| !c.sram_exact.is_empty());
        let mut v: Vec<_> = by.into_iter().collect();
        v.sort_by_key(|x| std::cmp::Reverse(x.1 .0));
        let mut t = Table::new(
            "numachine_sram_words",
            &format!(
                "NUMAchine monitor: SRAM words (mode `{}`, event `{event}`)",
                SRAM_MODES[sm.mode as usize].0
            ),
            vec![
                Column::label("SRAM address"),
                Column::estimate("count (all cards)", Unit::Count, 0),
            ],
        );
        for (a, (n, x)) in v.iter().take(top) {
            let count = if shadowed {
                Cell::estimate(*n, *x)
            } else {
                Cell::Int(*n)
            };
            t.row(vec![addr(*a as u64), count]);
        }
        t.set_note(format!(
            "the busiest {} of {} words; with full-PhaseID addressing the address is the PhaseID; exact (SRAM events 2-6 only): every event the address circuit maps to the word, unfiltered",
            t.rows.len(),
            v.len()
        ));
        s.table(t);
    }
    if full {
        let mut t = Table::new(
            "numachine_sram",
            "NUMAchine monitor: every nonzero SRAM word of every card",
            vec![
                Column::label("proc"),
                Column::label("SRAM address"),
                Column::count("count"),
                Column::count("exact"),
            ],
        );
        for c in &mon.cards {
            for (a, w) in c.sram.nonzero() {
                t.row(vec![
                    Cell::text(c.proc.to_string()),
                    addr(a as u64),
                    Cell::Int(w as u64),
                    c.sram_exact
                        .get(a as usize)
                        .map_or(Cell::Empty, |&x| Cell::Int(x)),
                ]);
            }
        }
        s.table(t);
    }
}

/// The queue histograms (Table 4.10 item 15, beyond the original), in monitor cycles; with
/// `full`, every queue length and waiting-time bucket.
fn queues(s: &mut Section, mon: &NumachineMonitor, full: bool) {
    if mon.queues.is_empty() {
        return;
    }
    let mut q = Table::new(
        "numachine_queues",
        "NUMAchine monitor: queue histograms (item 15, beyond the original)",
        vec![
            Column::label("resource"),
            Column::count("uses"),
            mon_cycles("mean wait", 1),
            Column::count("max queue"),
            mon_cycles("wait sum", 0),
            mon_cycles("busy sum", 0),
            Column::count("waits over 4095"),
        ],
    );
    let mut l = Table::new(
        "numachine_queue_lengths",
        "NUMAchine monitor: queue lengths met on arrival",
        vec![
            Column::label("resource"),
            Column::count("queue length"),
            Column::count("arrivals"),
        ],
    );
    let mut w = Table::new(
        "numachine_queue_waits",
        "NUMAchine monitor: queue waits (compact buckets)",
        vec![
            Column::label("resource"),
            mon_cycles("low", 0),
            mon_cycles("high", 0),
            Column::count("count"),
        ],
    );
    for (k, h) in mon.queues.by_name() {
        let maxq = h.length.iter().rposition(|n| *n > 0).unwrap_or(0);
        q.row(vec![
            Cell::text(&k),
            Cell::Int(h.uses),
            Cell::ratio(h.wait_sum, h.uses),
            Cell::Int(maxq as u64),
            Cell::Int(h.wait_sum),
            Cell::Int(h.busy_sum),
            Cell::Int(h.wait_overflow),
        ]);
        for (len, &n) in h.length.iter().enumerate().filter(|x| *x.1 > 0) {
            l.row(vec![Cell::text(&k), Cell::Int(len as u64), Cell::Int(n)]);
        }
        for (code, &n) in h.wait.iter().enumerate().filter(|x| *x.1 > 0) {
            let (lo, hi) = latency::bucket(code as u8);
            w.row(vec![
                Cell::text(&k),
                Cell::Int(lo as u64),
                Cell::Int(hi as u64),
                Cell::Int(n),
            ]);
        }
    }
    q.set_note("a queue length of 63 counts 63 or more");
    s.table(q);
    if full {
        s.table(l);
        s.table(w);
    }
}
