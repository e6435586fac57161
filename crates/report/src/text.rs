//! The text report of a run, built from the JSON document (one source of truth).

use crate::table::{num, pct, Table};
use serde_json::Value;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// Renders the run document as text tables.
pub fn render(doc: &Value, top: usize) -> String {
    let mut out = String::new();
    let m = &doc["machine"];
    let w = &doc["workload"];
    let r = &doc["run"];
    out.push_str(&format!(
        "machine {} ({} processors, {} nodes)   workload {} [{}]   verified: {}\n",
        m["name"].as_str().unwrap_or("?"),
        m["procs"],
        m["nodes"],
        w["name"].as_str().unwrap_or("?"),
        w["size"].as_str().unwrap_or("-"),
        w["verified"]
    ));
    if let Some(d) = w["detail"].as_str() {
        out.push_str(&format!("  check: {d}\n"));
    }
    out.push_str(&format!(
        "simulated {} cycles, {} references in {:.2} s ({:.1} M references/s)\n\n",
        num(u(&r["simulated_cycles"])),
        num(u(&r["references"])),
        r["wall_seconds"].as_f64().unwrap_or(0.0),
        r["references_per_second"].as_f64().unwrap_or(0.0) / 1e6
    ));
    let gt = &doc["ground_truth"];
    if gt.is_null() {
        return out;
    }
    // Per processor.
    let mut t = Table::new(&[
        "proc", "instr", "cycles", "CPI", "refs", "L1I miss", "L1D miss", "L2 miss", "rd miss",
        "wr miss", "remote",
    ]);
    let procs = gt["processors"].as_array().cloned().unwrap_or_default();
    let mut tot = [0u64; 10];
    for p in &procs {
        let ms = &p["misses"];
        let vals = [
            u(&p["instructions"]),
            u(&p["cycles"]),
            u(&p["references"]),
            u(&p["l1i"]["misses"]),
            u(&p["l1i"]["hits"]) + u(&p["l1i"]["misses"]),
            u(&p["l1d"]["misses"]),
            u(&p["l1d"]["hits"]) + u(&p["l1d"]["misses"]),
            u(&p["l2"]["misses"]),
            u(&p["l2"]["hits"]) + u(&p["l2"]["misses"]),
            u(&ms["read_remote"]) + u(&ms["write_remote"]),
        ];
        for (a, b) in tot.iter_mut().zip(vals) {
            *a += b;
        }
        if procs.len() <= 16 {
            t.row(row(
                p["proc"].to_string(),
                &vals,
                u(&ms["read_misses"]),
                u(&ms["write_misses"]),
            ));
        }
    }
    let totals = &gt["totals"];
    t.row(row(
        "all".into(),
        &tot,
        u(&totals["read_misses"]),
        u(&totals["write_misses"]),
    ));
    out.push_str("Processors (misses are L2 misses that became transactions)\n");
    out.push_str(&t.render());
    // Misses.
    let lat = &gt["latency_cycles"];
    let mut t = Table::new(&["miss", "count", "mean cyc", "p50", "p90", "p99", "max"]);
    for (name, key) in [
        ("read local", "read_local"),
        ("read remote", "read_remote"),
        ("write local", "write_local"),
        ("write remote", "write_remote"),
    ] {
        let h = &lat[key];
        t.row(vec![
            name.into(),
            num(u(&h["count"])),
            format!("{:.1}", h["mean"].as_f64().unwrap_or(0.0)),
            num(u(&h["p50"])),
            num(u(&h["p90"])),
            num(u(&h["p99"])),
            num(u(&h["max"])),
        ]);
    }
    out.push_str("\nMiss latencies (processor cycles, request to response)\n");
    out.push_str(&t.render());
    out.push_str(&format!(
        "classes: cold {}  coherence {}  capacity/conflict {}  upgrades {}  invalidations {}  NACKs {}  cancelled upgrades {}  bus errors {}\n",
        num(u(&totals["cold"])),
        num(u(&totals["coherence"])),
        num(u(&totals["capacity_conflict"])),
        num(u(&totals["upgrades"])),
        num(u(&totals["invalidations"])),
        num(u(&totals["nacks"])),
        num(u(&totals["cancelled_upgrades"])),
        num(u(&totals["bus_errors"])),
    ));
    let tlb = &gt["tlb"];
    if !tlb.is_null() {
        out.push_str(&format!(
            "\nTLB ({} entries of {} bytes, software refill): {} data misses (PAPI_TLB_DM), {} instruction misses (PAPI_TLB_IM)\n",
            u(&tlb["entries"]),
            num(u(&tlb["page_bytes_per_entry"])),
            num(u(&tlb["data_misses"])),
            num(u(&tlb["instruction_misses"])),
        ));
        let mut t = Table::new(&["structure", "data misses", "instr misses"]);
        for s in tlb["by_structure"]
            .as_array()
            .into_iter()
            .flatten()
            .take(top)
        {
            t.row(vec![
                s["name"].as_str().unwrap_or("?").into(),
                num(u(&s["data_misses"])),
                num(u(&s["instruction_misses"])),
            ]);
        }
        out.push_str(&t.render());
    }
    // Data structures and procedures.
    for (title, key) in [
        ("Data structures", "data_structures"),
        ("Procedures", "procedures"),
    ] {
        let mut t = Table::new(&[
            "name",
            "read miss",
            "rd remote",
            "write miss",
            "wr remote",
            "avg rd lat",
            "cold",
            "coherence",
            "invalidations",
        ]);
        for s in gt[key].as_array().into_iter().flatten().take(top) {
            let reads = u(&s["read_misses"]);
            let lat = u(&s["read_latency_local_cycles"]) + u(&s["read_latency_remote_cycles"]);
            t.row(vec![
                s["name"].as_str().unwrap_or("?").to_string(),
                num(reads),
                num(u(&s["read_remote"])),
                num(u(&s["write_misses"])),
                num(u(&s["write_remote"])),
                if reads > 0 {
                    format!("{:.1}", lat as f64 / reads as f64)
                } else {
                    "-".into()
                },
                num(u(&s["cold"])),
                num(u(&s["coherence"])),
                num(u(&s["invalidations"])),
            ]);
        }
        if !t.is_empty() {
            out.push_str(&format!("\n{title} (top {top} by misses)\n"));
            out.push_str(&t.render());
        }
    }
    // The top structures by processor (who misses where).
    let top_names: Vec<String> = gt["data_structures"]
        .as_array()
        .into_iter()
        .flatten()
        .take(3)
        .filter_map(|s| s["name"].as_str().map(String::from))
        .collect();
    let mut t = Table::new(&[
        "structure",
        "proc",
        "read miss",
        "write miss",
        "coherence",
        "invalidations",
    ]);
    for name in &top_names {
        for s in gt["structure_x_processor"].as_array().into_iter().flatten() {
            if s["structure"].as_str() == Some(name)
                && u(&s["read_misses"]) + u(&s["write_misses"]) + u(&s["invalidations"]) > 0
            {
                t.row(vec![
                    name.clone(),
                    s["processor"].to_string(),
                    num(u(&s["read_misses"])),
                    num(u(&s["write_misses"])),
                    num(u(&s["coherence"])),
                    num(u(&s["invalidations"])),
                ]);
            }
        }
    }
    if !t.is_empty() && procs.len() > 1 {
        out.push_str("\nTop data structures by processor\n");
        out.push_str(&t.render());
    }
    // Cycle classification (machine-wide).
    let mut cyc = std::collections::BTreeMap::<String, u64>::new();
    for p in &procs {
        if let Some(o) = p["cycles_by_pipeline_state"].as_object() {
            for (k, v) in o {
                *cyc.entry(k.clone()).or_default() += u(v);
            }
        }
    }
    let total: u64 = cyc.values().sum();
    let mut t = Table::new(&["pipeline state", "cycles", "share"]);
    let mut v: Vec<_> = cyc.into_iter().filter(|(_, c)| *c > 0).collect();
    v.sort_by_key(|e| std::cmp::Reverse(e.1));
    for (k, c) in v {
        t.row(vec![k, num(c), pct(c, total)]);
    }
    out.push_str("\nCycles by pipeline state (all processors)\n");
    out.push_str(&t.render());
    software_threads(&mut out, gt);
    out
}

/// Software threads (when they are not the processors one to one): where each ran and what
/// the core did while it held it.
fn software_threads(out: &mut String, gt: &Value) {
    let Some(threads) = gt["software_threads"].as_array() else {
        return;
    };
    let mut t = Table::new(&[
        "thread", "proc", "ctx", "instr", "cycles", "CPI", "refs", "L1D miss", "L2 miss",
        "switches",
    ]);
    const SHOWN: usize = 64;
    for th in threads.iter().take(SHOWN) {
        let (i, c) = (u(&th["instructions"]), u(&th["cycles"]));
        t.row(vec![
            th["thread"].to_string(),
            th["proc"].to_string(),
            th["context"].to_string(),
            num(i),
            num(c),
            if i > 0 {
                format!("{:.2}", c as f64 / i as f64)
            } else {
                "-".into()
            },
            num(u(&th["references"])),
            pct(
                u(&th["l1d"]["misses"]),
                u(&th["l1d"]["hits"]) + u(&th["l1d"]["misses"]),
            ),
            pct(
                u(&th["l2"]["misses"]),
                u(&th["l2"]["hits"]) + u(&th["l2"]["misses"]),
            ),
            num(u(&th["context_switches"])),
        ]);
    }
    out.push_str(&format!(
        "\nSoftware threads ({} on {} hardware contexts{})\n",
        threads.len(),
        gt["hardware_contexts"].as_array().map_or(0, |v| v.len()),
        if threads.len() > SHOWN {
            format!("; the first {SHOWN} shown, all in --json")
        } else {
            String::new()
        }
    ));
    out.push_str(&t.render());
}

fn row(name: String, v: &[u64; 10], rd: u64, wr: u64) -> Vec<String> {
    vec![
        name,
        num(v[0]),
        num(v[1]),
        if v[0] > 0 {
            format!("{:.2}", v[1] as f64 / v[0] as f64)
        } else {
            "-".into()
        },
        num(v[2]),
        pct(v[3], v[4]),
        pct(v[5], v[6]),
        pct(v[7], v[8]),
        num(rd),
        num(wr),
        num(v[9]),
    ]
}
