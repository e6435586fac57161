//! `pmusim run --monitor numachine --csv DIR`: the NUMAchine monitor's report as CSV files, one per
//! table, with plain numbers (no thousands separators) and every row (no `--top` cut), for
//! spreadsheets and data frames. The same values as the text report and the JSON's
//! `monitors.numachine` (issue 4, item 10: "all as text, --json and --csv").

use super::report::{locality_map, miss_profile};
use super::NumachineMonitor;
use crate::latency;
use machine::state::State;
use report::table::Table;
use serde_json::Value;

fn u(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// The monitor's tables: (file name, table).
pub fn tables(st: &State, mon: &NumachineMonitor, doc: &Value) -> Vec<(&'static str, Table)> {
    let mut out = Vec::new();

    // Counters, per card and machine-wide, with the exact value beside.
    let mut t = Table::new(&[
        "proc",
        "counter",
        "label",
        "event",
        "counts",
        "value",
        "wraps",
        "pipeline_exact",
        "exact",
        "exact_what",
    ]);
    let cards = doc["cards"].as_array().cloned().unwrap_or_default();
    for c in &cards {
        for k in c["counters"].as_array().into_iter().flatten() {
            t.row(vec![
                u(&c["proc"]),
                u(&k["counter"]),
                u(&k["label"]),
                u(&k["event"]),
                u(&k["counts"]),
                u(&k["value"]),
                u(&k["wraps"]),
                u(&k["pipeline_exact"]),
                u(&k["exact"]["value"]),
                u(&k["exact"]["what"]),
            ]);
        }
    }
    for (i, k) in doc["machine_wide"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let c0 = &cards[0]["counters"][i];
        t.row(vec![
            "all".into(),
            u(&k["counter"]),
            u(&k["label"]),
            u(&c0["event"]),
            u(&c0["counts"]),
            u(&k["value"]),
            String::new(),
            if c0["event"] == "pipeline" {
                u(&k["pipeline_exact"])
            } else {
                String::new()
            },
            u(&k["exact"]),
            u(&c0["exact"]["what"]),
        ]);
    }
    out.push(("numachine_counters.csv", t));

    // Estimators, where they ran.
    let mut t = Table::new(&["proc", "estimator", "estimate", "exact"]);
    for c in mon.cards.iter().filter(|c| c.estimated) {
        for (name, e, x) in [
            ("invalidation_hits", c.inval_hit.estimate, c.inval_hit.exact),
            (
                "invalidation_misses",
                c.inval_miss.estimate,
                c.inval_miss.exact,
            ),
        ] {
            t.row(vec![
                c.proc.to_string(),
                name.into(),
                e.to_string(),
                x.to_string(),
            ]);
        }
    }
    out.push(("numachine_estimators.csv", t));

    // Every nonzero SRAM word of every card (the raw profile behind the other tables).
    let mut t = Table::new(&["proc", "sram_address", "count"]);
    for c in &mon.cards {
        for (a, w) in c.sram.nonzero() {
            t.row(vec![c.proc.to_string(), a.to_string(), w.to_string()]);
        }
    }
    out.push(("numachine_sram.csv", t));

    // Latency histograms: statistics and buckets (monitored), statistics (exact).
    if let Some(hs) = doc["latency_histograms"].as_array() {
        let stats = ["count", "mean", "variance", "p50", "p90", "p99"];
        let mut head = vec!["selector", "response_state"];
        head.extend(stats);
        let mut s = Table::new(&head);
        let mut b = Table::new(&["selector", "response_state", "low", "high", "count"]);
        for h in hs {
            let mut row = vec![u(&h["selector"]), u(&h["rsr"])];
            row.extend(stats.iter().map(|k| u(&h["monitor_cycles"][k])));
            s.row(row);
            for x in h["buckets"].as_array().into_iter().flatten() {
                b.row(vec![
                    u(&h["selector"]),
                    u(&h["rsr"]),
                    u(&x[0]),
                    u(&x[1]),
                    u(&x[2]),
                ]);
            }
        }
        out.push(("numachine_latency.csv", s));
        out.push(("numachine_latency_buckets.csv", b));
        let mut head = vec!["rsr", "response_state"];
        head.extend(stats);
        let mut e = Table::new(&head);
        for h in doc["exact_latency_by_rsr"].as_array().into_iter().flatten() {
            let mut row = vec![u(&h["rsr"]), u(&h["what"])];
            row.extend(stats.iter().map(|k| u(&h["monitor_cycles"][k])));
            e.row(row);
        }
        out.push(("numachine_latency_exact.csv", e));
    }

    if let Some(v) = miss_profile(st, mon) {
        let mut t = Table::new(&["sram_address", "count", "data_structures"]);
        for (a, n, names) in v {
            t.row(vec![a.to_string(), n.to_string(), names.join(" ")]);
        }
        out.push(("numachine_miss_profile.csv", t));
    }
    if let Some(rows) = locality_map(mon) {
        let mut t = Table::new(&["proc", "station", "block_base", "count", "local"]);
        for r in rows {
            t.row(vec![
                r.proc.to_string(),
                r.station.to_string(),
                r.block_base.to_string(),
                r.count.to_string(),
                r.local.to_string(),
            ]);
        }
        out.push(("numachine_locality.csv", t));
    }

    // Queue histograms (item 15): totals, lengths, waiting-time buckets.
    if !mon.queues.is_empty() {
        let mut q = Table::new(&[
            "resource",
            "uses",
            "wait_sum",
            "busy_sum",
            "max_queue",
            "wait_overflow",
        ]);
        let mut l = Table::new(&["resource", "queue_length", "count"]);
        let mut w = Table::new(&["resource", "low", "high", "count"]);
        for (k, h) in mon.queues.by_name() {
            let maxq = h.length.iter().rposition(|n| *n > 0).unwrap_or(0);
            q.row(vec![
                k.clone(),
                h.uses.to_string(),
                h.wait_sum.to_string(),
                h.busy_sum.to_string(),
                maxq.to_string(),
                h.wait_overflow.to_string(),
            ]);
            for (len, &n) in h.length.iter().enumerate().filter(|x| *x.1 > 0) {
                l.row(vec![k.clone(), len.to_string(), n.to_string()]);
            }
            for (code, &n) in h.wait.iter().enumerate().filter(|x| *x.1 > 0) {
                let (lo, hi) = latency::bucket(code as u8);
                w.row(vec![
                    k.clone(),
                    lo.to_string(),
                    hi.to_string(),
                    n.to_string(),
                ]);
            }
        }
        out.push(("numachine_queues.csv", q));
        out.push(("numachine_queue_lengths.csv", l));
        out.push(("numachine_queue_waits.csv", w));
    }
    out
}
