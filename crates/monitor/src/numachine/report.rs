//! The NUMAchine monitor's JSON section (`monitors.numachine`) and the data behind its typed
//! section (`section`): latency histograms, the per-line profile, the locality map.
//!
//! Monitored values are reported beside exact ground truth wherever the machine has it, with
//! PAPI-style names for the common events (the counter's label).

use super::gpc::*;
use super::regs::{ps_exact, GPC_EVENTS, SRAM_EVENTS, SRAM_MODES};
use super::{Card, NumachineMonitor};
use crate::latency;
use machine::state::State;
use serde_json::{json, Map, Value};

/// The exact (ground-truth) value of counter `i` of card `c`, when the counter is unfiltered and
/// its event has one: (value, unit/source).
fn exact(st: &State, mon: &NumachineMonitor, c: &Card, i: usize) -> Option<(u64, &'static str)> {
    if c.gpc[i].mode.enable_bits != 0 {
        return None;
    }
    event_exact(st, mon, c, i)
}

/// `exact` of counter `i` as if it were unfiltered.
fn event_exact(
    st: &State,
    mon: &NumachineMonitor,
    c: &Card,
    i: usize,
) -> Option<(u64, &'static str)> {
    let m = &c.gpc[i].mode;
    if !m.enable {
        return None;
    }
    let p = c.proc as usize;
    let gt = st.truth.as_ref()?;
    let ms = &gt.per_proc[p];
    let cnt = &st.cores[p].cnt;
    let occ = m.edges;
    Some(match (m.event, occ) {
        (EV_ALWAYS, false) => (mon.end / mon.sys_period, "run length, monitor cycles"),
        (EV_PIPELINE, _) => (
            ps_exact(m.ps as u32, cnt),
            "pipeline events (exact; counter is /4)",
        ),
        (EV_READ, true) => (ms.reads() + ms.bus_errors, "reads"),
        (EV_READ_EX, true) => (ms.writes() - ms.upgrades, "read-exclusives"),
        (EV_READ_ANY, true) => (
            ms.reads() + ms.writes() - ms.upgrades,
            "reads + read-exclusives",
        ),
        (EV_OWNERSHIP, true) => (ms.upgrades, "successful upgrades"),
        (EV_OWNERSHIP_CANCELLED, true) => (ms.cancelled, "cancelled upgrades"),
        (EV_NACK_RETRIES, _) => (ms.nacks, "NACKs"),
        (EV_INVAL_HITS, _) => (c.inval_hit.exact, "invalidations that hit"),
        (EV_INVAL_MISSES, true) => (c.inval_miss.exact, "invalidation misses"),
        (EV_INTERRUPT, true) => (cnt.interrupts, "interrupts taken"),
        _ => return None,
    })
}

/// The exact value of a *filtered* counter `i` of card `c`, where the ground truth can say what
/// the filter passes (the report's exact column; the JSON keeps `exact: null` for these):
///
/// - the send/receive masks alone, on events whose occurrence is a packet of known direction:
///   a line request's edge (events 4-8) is its request, sent; a NACK (event 9) is received. The
///   mask passes all of them or none (test `filters_count_what_the_ground_truth_counts`).
/// - the address watch alone (AW/AF), on line-request occurrences (events 4-8), when the window
///   AF leaves open is one aligned block, it does not constrain the station bits, and every data
///   structure it touches lies wholly inside it: the ground truth's misses of those structures
///   by this processor (`per_cpu_struct`). Misses to unnamed memory inside the window are not
///   in it.
///
/// - the PW compare alone, on count-always cycles: the time in (or outside) phase PW, from the
///   cores' PhaseID writes (`phase_split::phase_filtered_exact`).
///
/// Other filters (PhaseID on other events, command, combinations) have no per-processor ground
/// truth: `None`.
pub(crate) fn filtered_exact(
    st: &State,
    mon: &NumachineMonitor,
    c: &Card,
    i: usize,
) -> Option<(u64, String)> {
    let m = &c.gpc[i].mode;
    let bits = m.enable_bits;
    if !m.enable || bits == 0 {
        return None;
    }
    let request_edge = m.edges
        && matches!(
            m.event,
            EV_READ | EV_READ_EX | EV_READ_ANY | EV_OWNERSHIP | EV_OWNERSHIP_CANCELLED
        );
    if bits & 0xFF == 0 && bits & 0x200 != 0 {
        let sent = if request_edge {
            true
        } else if m.event == EV_NACK_RETRIES {
            false
        } else {
            return None;
        };
        let on = ((bits & 2 != 0 && sent) || (bits & 1 != 0 && !sent)) ^ (bits & 0x100 != 0);
        let (v, what) = event_exact(st, mon, c, i)?;
        let dir = if sent { "sent" } else { "received" };
        return Some(if on {
            (v, format!("{what} (packets {dir}: the mask passes all)"))
        } else {
            (0, format!("{what} (packets {dir}: the mask passes none)"))
        });
    }
    if bits & !0xC0 == 0 {
        // The PW compare alone, on count-always cycles: the time in (or outside) a phase.
        return super::phase_split::phase_filtered_exact(st, mon, c, i);
    }
    if bits & !0x30 != 0 || bits & 0x10 != 0 || !request_edge {
        return None;
    }
    const LOW36: u64 = 0xF_FFFF_FFFF;
    let (aw, af) = (c.regs.aw(), c.regs.af());
    let mask = af & LOW36;
    let size = (!mask & LOW36) + 1;
    if af >> 36 != 0 || !size.is_power_of_two() || (mask | (size - 1)) != LOW36 {
        return None;
    }
    let (lo, hi) = (aw & mask, (aw & mask) + size);
    let gt = st.truth.as_ref()?;
    let mut sum = machine::truth::MissStats::default();
    let mut names = Vec::new();
    for (sid, r) in st.map.regions().iter().enumerate() {
        let (b, e) = (r.base, r.base + r.bytes.max(1));
        if e <= lo || b >= hi {
            continue;
        }
        if b < lo || e > hi {
            return None; // partly inside: the truth cannot split it
        }
        if let Some(ms) = gt.per_cpu_struct.get(&(c.proc, sid as u32)) {
            sum.add(ms);
        }
        names.push(r.name.clone());
    }
    let v = match m.event {
        EV_READ => sum.reads() + sum.bus_errors,
        EV_READ_EX => sum.writes() - sum.upgrades,
        EV_READ_ANY => sum.reads() + sum.writes() - sum.upgrades,
        EV_OWNERSHIP => sum.upgrades,
        _ => sum.cancelled,
    };
    Some((v, format!("misses to {} (the AW window)", names.join(", "))))
}

fn label(mon: &NumachineMonitor, i: usize) -> String {
    let l = &mon.setup.labels[i];
    if l.is_empty() {
        GPC_EVENTS[mon.cards[0].gpc[i].mode.event as usize]
            .0
            .to_string()
    } else {
        l.clone()
    }
}

/// A histogram of (value -> count) with its statistics. `width` maps a value to its bucket's
/// [lo, hi]; the mean uses bucket midpoints.
#[derive(Default, Clone)]
pub(crate) struct Hist {
    /// (lo, hi, count): `count` values in `[lo, hi]`.
    pub counts: Vec<(u64, u64, u64)>,
}

impl Hist {
    pub(crate) fn n(&self) -> u64 {
        self.counts.iter().map(|c| c.2).sum()
    }
    pub(crate) fn mean(&self) -> f64 {
        let n = self.n();
        if n == 0 {
            return 0.0;
        }
        self.counts
            .iter()
            .map(|&(l, h, c)| (l + h) as f64 / 2.0 * c as f64)
            .sum::<f64>()
            / n as f64
    }
    pub(crate) fn variance(&self) -> f64 {
        let n = self.n();
        if n == 0 {
            return 0.0;
        }
        let m = self.mean();
        self.counts
            .iter()
            .map(|&(l, h, c)| ((l + h) as f64 / 2.0 - m).powi(2) * c as f64)
            .sum::<f64>()
            / n as f64
    }
    /// The upper bound of the bucket holding the q-quantile.
    pub(crate) fn percentile(&self, q: f64) -> u64 {
        let target = ((self.n() as f64) * q).ceil().max(1.0) as u64;
        let mut v = self.counts.clone();
        v.sort();
        let mut acc = 0;
        for (_, h, c) in v {
            acc += c;
            if acc >= target {
                return h;
            }
        }
        0
    }
    fn json(&self) -> Value {
        json!({"count": self.n(), "mean": self.mean(), "variance": self.variance(),
               "p50": self.percentile(0.5), "p90": self.percentile(0.9), "p99": self.percentile(0.99)})
    }
}

pub(crate) fn rsr_words(r: u8) -> String {
    format!(
        "{}, {} {}, {} {}",
        if r & 16 != 0 { "NC hit" } else { "memory" },
        if r & 8 != 0 { "global" } else { "local" },
        if r & 4 != 0 { "valid" } else { "invalid" },
        if r & 2 != 0 { "remote" } else { "local" },
        if r & 1 != 0 {
            "read-ex/upgrade"
        } else {
            "read"
        },
    )
}

/// Latency histograms (monitor cycles) from the SRAM in a latency mode, keyed by the upper
/// address bits (RSR/PhaseID selector), machine-wide; and the exact ones.
/// Monitored histograms by selector, exact ones by RSR.
pub(crate) type Hists = (Vec<(u16, Hist)>, Vec<(u8, Hist)>);

pub(crate) fn latency_hists(mon: &NumachineMonitor) -> Option<Hists> {
    let sm = mon.cards[0].smode;
    if sm.event != super::sram::SEV_LINE_REQUESTS || !(sm.mode == 1 || sm.mode == 3) {
        return None;
    }
    // Per selector, counts by latency word (mode 1: the 12-bit value; mode 3: the compact
    // code): arrays, not maps, so the cost is the words the cards counted in.
    let width = if sm.mode == 1 { 1 << 12 } else { 1 << 7 };
    let mut by: std::collections::BTreeMap<u16, Vec<u64>> = Default::default();
    let mut ex = super::exact_latency::ExactLatency::default();
    for c in &mon.cards {
        for (a, w) in c.sram.nonzero() {
            let (key, v) = if sm.mode == 1 {
                (a >> 12, a & 0xFFF)
            } else {
                (a >> 7, a & 0x7F)
            };
            by.entry(key).or_insert_with(|| vec![0; width])[v as usize] += w as u64;
        }
        ex.merge(&c.exact_latency);
    }
    let mon_h = by
        .into_iter()
        .map(|(k, counts)| {
            let counts = counts
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(v, &n)| {
                    let (lo, hi) = if sm.mode == 1 {
                        (v as u64, v as u64)
                    } else {
                        let (lo, hi) = latency::bucket(v as u8);
                        (lo as u64, hi as u64)
                    };
                    (lo, hi, n)
                })
                .collect();
            (k, Hist { counts })
        })
        .collect();
    let mut ex_h: Vec<(u8, Hist)> = Vec::new();
    for (rsr, v, n) in ex.iter() {
        if ex_h.last().map(|h| h.0) != Some(rsr) {
            ex_h.push((rsr, Hist::default()));
        }
        ex_h.last_mut().expect("pushed").1.counts.push((v, v, n));
    }
    Some((mon_h, ex_h))
}

/// One counter as the report shows it (the JSON section and the typed section are both made
/// from these, so neither reads the other).
#[derive(Clone, Debug)]
pub(crate) struct CounterRow {
    pub counter: usize,
    pub label: String,
    pub gpcm: u32,
    pub event: &'static str,
    /// Counts occurrences (transitions) rather than cycles high.
    pub occurrences: bool,
    pub value: u64,
    pub wraps: u64,
    /// A pipeline counter's full-rate events (what the /4 prescaler saw).
    pub pipeline_exact: Option<u64>,
    pub accumulator: u64,
    /// The ground truth of an unfiltered counter's event: (value, what).
    pub exact: Option<(u64, &'static str)>,
}

/// The four counters of card `c`.
pub(crate) fn card_counters(st: &State, mon: &NumachineMonitor, c: &Card) -> Vec<CounterRow> {
    (0..4)
        .map(|i| {
            let g = &c.gpc[i];
            CounterRow {
                counter: i,
                label: label(mon, i),
                gpcm: c.regs.gpcm[i],
                event: GPC_EVENTS[g.mode.event as usize].0,
                occurrences: g.mode.edges,
                value: g.counter.get(),
                wraps: g.counter.wraps,
                pipeline_exact: (g.mode.event == EV_PIPELINE).then_some(g.ps_exact),
                accumulator: g.acc as u64,
                exact: exact(st, mon, c, i),
            }
        })
        .collect()
}

/// The machine-wide sums of each counter: (register values, full-rate pipeline events, exact
/// value when every card has one).
pub(crate) fn machine_wide(
    mon: &NumachineMonitor,
    cards: &[Vec<CounterRow>],
) -> Vec<(u64, u64, Option<u64>)> {
    let mut wide: Vec<(u64, u64, Option<u64>)> = vec![(0, 0, Some(0)); 4];
    for (c, rows) in mon.cards.iter().zip(cards) {
        for (i, r) in rows.iter().enumerate() {
            let w = &mut wide[i];
            w.0 += r.value;
            w.1 += c.gpc[i].ps_exact;
            w.2 = match (w.2, r.exact) {
                (Some(a), Some((b, _))) => Some(a + b),
                _ => None,
            };
        }
    }
    wide
}

/// A JSON object from (key, value) pairs, the values moved in: `json!` serializes every
/// nested `Value` again (a deep copy per level), which made this section's cost grow with the
/// nesting rather than with its contents.
fn obj<const N: usize>(kv: [(&str, Value); N]) -> Value {
    Value::Object(kv.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
}

/// The `monitors.numachine` JSON section.
#[allow(clippy::needless_range_loop)]
pub fn json(st: &State, mon: &NumachineMonitor) -> Value {
    let rows: Vec<Vec<CounterRow>> = mon
        .cards
        .iter()
        .map(|c| card_counters(st, mon, c))
        .collect();
    let wide = machine_wide(mon, &rows);
    let mut cards = Vec::with_capacity(mon.cards.len());
    for (c, rows) in mon.cards.iter().zip(&rows) {
        let counters: Vec<Value> = rows
            .iter()
            .map(|r| {
                obj([
                    ("counter", r.counter.into()),
                    ("label", r.label.as_str().into()),
                    ("gpcm", format!("{:#08x}", r.gpcm).into()),
                    ("event", r.event.into()),
                    (
                        "counts",
                        if r.occurrences {
                            "occurrences"
                        } else {
                            "cycles"
                        }
                        .into(),
                    ),
                    ("value", r.value.into()),
                    ("wraps", r.wraps.into()),
                    ("pipeline_exact", r.pipeline_exact.into()),
                    ("pipeline_accumulator", r.accumulator.into()),
                    (
                        "exact",
                        r.exact.map_or(Value::Null, |e| {
                            obj([("value", e.0.into()), ("what", e.1.into())])
                        }),
                    ),
                ])
            })
            .collect();
        let sram: Vec<Value> = c
            .sram
            .nonzero()
            .iter()
            .map(|&(a, w)| Value::Array(vec![a.into(), w.into()]))
            .collect();
        let registers: Map<String, Value> = c
            .regs
            .list()
            .iter()
            .map(|(r, v)| (r.acronym().to_string(), format!("{v:#x}").into()))
            .collect();
        let pair = |e: u64, x: u64| obj([("estimate", e.into()), ("exact", x.into())]);
        cards.push(obj([
            ("proc", c.proc.into()),
            ("node", c.node.into()),
            ("registers", Value::Object(registers)),
            ("counters", Value::Array(counters)),
            ("interrupt_status", c.isr.into()),
            ("interrupts_raised", c.interrupts_raised.into()),
            // null when they did not run (no counter counted E/F, `estimators` off).
            (
                "estimators",
                if c.estimated {
                    obj([
                        (
                            "invalidation_hits",
                            pair(c.inval_hit.estimate, c.inval_hit.exact),
                        ),
                        (
                            "invalidation_misses",
                            pair(c.inval_miss.estimate, c.inval_miss.exact),
                        ),
                    ])
                } else {
                    Value::Null
                },
            ),
            (
                "sram",
                obj([
                    ("nonzero", Value::Array(sram)),
                    ("overflows", c.sram.overflows.into()),
                    ("latency_timeouts", c.latency_timeouts.into()),
                ]),
            ),
        ]));
    }
    let sm = mon.cards[0].smode;
    let machine_wide = (0..4)
        .map(|i| {
            obj([
                ("counter", i.into()),
                ("label", label(mon, i).into()),
                ("value", wide[i].0.into()),
                ("pipeline_exact", wide[i].1.into()),
                ("exact", wide[i].2.into()),
            ])
        })
        .collect();
    let pairs = |v: Vec<(Value, u64)>| {
        Value::Array(
            v.into_iter()
                .map(|(a, n)| Value::Array(vec![a, n.into()]))
                .collect(),
        )
    };
    let queues = mon
        .queues
        .by_name()
        .into_iter()
        .map(|(k, q)| {
            let lengths = q.length.iter().enumerate().filter(|x| *x.1 > 0);
            let waits = q.wait.iter().enumerate().filter(|x| *x.1 > 0);
            let v = obj([
                ("uses", q.uses.into()),
                ("wait_sum_monitor_cycles", q.wait_sum.into()),
                ("busy_sum_monitor_cycles", q.busy_sum.into()),
                (
                    "queue_length",
                    pairs(lengths.map(|(l, &n)| (l.into(), n)).collect()),
                ),
                (
                    "wait_compact",
                    pairs(
                        waits
                            .map(|(c, &n)| {
                                let (lo, hi) = latency::bucket(c as u8);
                                (Value::Array(vec![lo.into(), hi.into()]), n)
                            })
                            .collect(),
                    ),
                ),
                ("wait_overflow", q.wait_overflow.into()),
            ]);
            (k, v)
        })
        .collect::<Map<_, _>>();
    let mut doc = obj([
        ("config", mon.setup.name.as_str().into()),
        (
            "monitor_clock_hz",
            (st.clocks.tick_hz / mon.sys_period).into(),
        ),
        (
            "cpu_cycles_per_monitor_cycle",
            (mon.sys_period / mon.cpu_period.max(1)).into(),
        ),
        ("sram_mode", SRAM_MODES[sm.mode as usize].0.into()),
        (
            "sram_event",
            SRAM_EVENTS
                .get(sm.event as usize)
                .map(|e| e.0)
                .unwrap_or("reserved")
                .into(),
        ),
        ("cards", Value::Array(cards)),
        ("machine_wide", Value::Array(machine_wide)),
        ("queues", Value::Object(queues)),
    ]);
    if let Some((h, ex)) = latency_hists(mon) {
        doc["latency_histograms"] = Value::Array(
            h.iter()
                .map(|(k, h)| {
                    obj([
                        ("selector", (*k).into()),
                        (
                            "rsr",
                            if sm.mode == 3 && sm.mux_rsr {
                                rsr_words((k >> 4) as u8).into()
                            } else {
                                Value::Null
                            },
                        ),
                        ("monitor_cycles", h.json()),
                        (
                            "buckets",
                            Value::Array(
                                h.counts
                                    .iter()
                                    .map(|c| Value::Array(vec![c.0.into(), c.1.into(), c.2.into()]))
                                    .collect(),
                            ),
                        ),
                    ])
                })
                .collect(),
        );
        doc["exact_latency_by_rsr"] = Value::Array(
            ex.iter()
                .map(|(r, h)| {
                    obj([
                        ("rsr", (*r).into()),
                        ("what", rsr_words(*r).into()),
                        ("monitor_cycles", h.json()),
                    ])
                })
                .collect(),
        );
    }
    if let Some(v) = virtualized(st, mon) {
        doc["virtualized"] = v;
    }
    doc
}

/// The exact per-process value of counter `i` for the virtualized process (threads
/// `threads`, process `pid`), when every card counts the same unfiltered event and the
/// machine has it per process: (value, what).
fn process_exact(
    st: &State,
    mon: &NumachineMonitor,
    pid: u16,
    threads: &[usize],
    i: usize,
) -> Option<(u64, &'static str)> {
    let c0 = &mon.cards[0];
    let m = &c0.gpc[i].mode;
    if !m.enable || m.enable_bits != 0 || mon.cards.iter().any(|c| c.gpc[i].mode != *m) {
        return None;
    }
    let gt = st.truth.as_ref()?;
    let zero = machine::truth::MissStats::default();
    let ms = gt.per_process.get(pid as usize).unwrap_or(&zero);
    let sum = |f: &dyn Fn(&machine::cpu::Counters) -> u64| -> u64 {
        threads.iter().map(|&t| f(&st.sched.threads[t].cnt)).sum()
    };
    Some(match (m.event, m.edges) {
        (EV_ALWAYS, false) => (
            sum(&|c| c.cycles()) * mon.cpu_period / mon.sys_period.max(1),
            "the process's cycles (processor cycles / 3, rounded down)",
        ),
        (EV_PIPELINE, _) => (
            sum(&|c| ps_exact(m.ps as u32, c)),
            "the process's pipeline events",
        ),
        (EV_READ, true) => (ms.reads() + ms.bus_errors, "the process's reads"),
        (EV_READ_EX, true) => (ms.writes() - ms.upgrades, "the process's read-exclusives"),
        (EV_READ_ANY, true) => (
            ms.reads() + ms.writes() - ms.upgrades,
            "the process's reads + read-exclusives",
        ),
        (EV_OWNERSHIP, true) => (ms.upgrades, "the process's successful upgrades"),
        (EV_OWNERSHIP_CANCELLED, true) => (ms.cancelled, "the process's cancelled upgrades"),
        (EV_NACK_RETRIES, _) => (ms.nacks, "the process's NACKs"),
        (EV_INTERRUPT, true) => (sum(&|c| c.interrupts), "the process's interrupts"),
        _ => return None,
    })
}

/// `monitors.numachine.virtualized`: the counts of the process the monitor is restricted
/// to by counter virtualization (`--virtualize`), its threads' totals, and the exact
/// per-process values beside them.
pub(crate) fn virtualized(st: &State, mon: &NumachineMonitor) -> Option<Value> {
    let v = mon.virt.as_ref()?;
    let threads = v.threads();
    let tot = v.process_totals();
    let c0 = &mon.cards[0];
    let counters: Vec<Value> = (0..4)
        .map(|i| {
            let g = &c0.gpc[i];
            let ex = process_exact(st, mon, v.process, &threads, i);
            json!({
                "counter": i, "label": label(mon, i),
                "event": GPC_EVENTS[g.mode.event as usize].0,
                "counts": if g.mode.edges { "occurrences" } else { "cycles" },
                "value": tot[i],
                "pipeline_exact": if g.mode.event == EV_PIPELINE { json!(tot[4 + i]) } else { Value::Null },
                "exact": ex.map(|e| json!({"value": e.0, "what": e.1})).unwrap_or(Value::Null),
            })
        })
        .collect();
    let os = st.os.as_ref();
    Some(json!({
        "process": v.process,
        "name": v.name,
        "threads": threads.iter().map(|&t| json!({"thread": t, "values": &v.thread(t)[..4]})).collect::<Vec<_>>(),
        "switches_seen": v.switches,
        "counters": counters,
        "os_virtual_counters": os.map(|o| o.cfg.virtual_counters),
    }))
}

/// The per-cache-line profile (SRAM mode 0 counting an L2 event): (SRAM address, count over
/// all cards, data structures whose lines map to the index), hottest first; `None` in other
/// modes.
/// Every SRAM address some card counted at or whose exact shadow (`Card::sram_exact`) holds
/// events, all cards together: address -> (monitored, exact).
pub(crate) fn sram_with_exact(
    mon: &NumachineMonitor,
) -> std::collections::BTreeMap<u16, (u64, u64)> {
    let mut by: std::collections::BTreeMap<u16, (u64, u64)> = Default::default();
    for c in &mon.cards {
        for (a, w) in c.sram.nonzero() {
            by.entry(a).or_default().0 += w as u64;
        }
        for (a, &x) in c.sram_exact.iter().enumerate() {
            if x > 0 {
                by.entry(a as u16).or_default().1 += x;
            }
        }
    }
    by
}

/// One row of the per-line profile: SRAM address, (monitored, exact), the data structures
/// mapping to the index.
pub(crate) type ProfileRow = (u16, (u64, u64), Vec<String>);

/// The per-line profile, by monitored count.
pub(crate) fn miss_profile(st: &State, mon: &NumachineMonitor) -> Option<Vec<ProfileRow>> {
    let sm = mon.cards[0].smode;
    if !(sm.mode == 0 && (2..=5).contains(&sm.event)) {
        return None;
    }
    let by = sram_with_exact(mon);
    let mut v: Vec<_> = by.into_iter().collect();
    v.sort_by_key(|x| std::cmp::Reverse(x.1));
    let l2 = st.preset.caches.last_private();
    let sets = l2.sets();
    Some(
        v.into_iter()
            .map(|(a, n)| {
                let idx = (a & 0x7FFF) as u64;
                let names = st
                    .map
                    .regions()
                    .iter()
                    .filter(|r| {
                        let first = r.base / l2.line_bytes;
                        let last = (r.base + r.bytes.max(1) - 1) / l2.line_bytes;
                        last - first + 1 >= sets || (first..=last).any(|l| l % sets == idx)
                    })
                    .map(|r| r.name.clone())
                    .take(4)
                    .collect();
                (a, n, names)
            })
            .collect(),
    )
}

/// One word of the Address-Mode locality map.
pub(crate) struct LocalityRow {
    pub count: u64,
    /// The exact line requests the word would hold (`Card::sram_exact`).
    pub exact: u64,
    pub proc: u16,
    pub station: u16,
    /// First address of the 512 KiB block (AR[26..19]).
    pub block_base: u64,
    pub local: bool,
}

/// The Address-Mode locality map (SRAM mode 2 with every mux control off), busiest word
/// first; `None` in other modes.
pub(crate) fn locality_map(mon: &NumachineMonitor) -> Option<Vec<LocalityRow>> {
    let sm = mon.cards[0].smode;
    if !(sm.mode == 2
        && !(sm.mux_miss || sm.mux_rsr || sm.mux_pr_hi || sm.mux_pr_mid || sm.mux_pr_lo))
    {
        return None;
    }
    let mut rows = Vec::new();
    for c in &mon.cards {
        let mut words: std::collections::BTreeMap<u16, (u64, u64)> = Default::default();
        for (a, w) in c.sram.nonzero() {
            words.entry(a).or_default().0 = w as u64;
        }
        for (a, &x) in c.sram_exact.iter().enumerate() {
            if x > 0 {
                words.entry(a as u16).or_default().1 = x;
            }
        }
        for (a, (w, exact)) in words {
            let station = a >> 12;
            rows.push(LocalityRow {
                count: w,
                exact,
                proc: c.proc,
                station,
                block_base: ((a & 0xFF) as u64) << 19,
                local: station == c.node,
            });
        }
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.count));
    Some(rows)
}
