//! The base run report (what a plain `pmusim run` prints): the ground truth as typed tables,
//! built from the run's JSON document so that text, CSV and JSON never disagree.
//!
//! Every cycle here is a processor cycle (the ground truth counts on the processor clock).

use crate::model::format::int;
use crate::model::{Axis, Bin, Cell, Clock, Column, Plot, PlotData, Report, Section, Table, Unit};
use machine::state::State;
use serde_json::Value;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

fn proc_cycles(name: &str, decimals: u8) -> Column {
    Column::cycles(name, Clock::Processor, decimals)
}

/// At most this many processors get a row of their own in the processors table.
pub const MAX_PROC_ROWS: usize = 16;

/// The base report of a run document; `top` rows for the ranked tables.
pub fn build(doc: &Value, top: usize) -> Report {
    let mut s = Section::new("Run");
    let m = &doc["machine"];
    let w = &doc["workload"];
    let r = &doc["run"];
    s.text(format!(
        "machine {} ({} processors, {} nodes)   workload {} [{}]   verified: {}",
        m["name"].as_str().unwrap_or("?"),
        m["procs"],
        m["nodes"],
        w["name"].as_str().unwrap_or("?"),
        w["size"].as_str().unwrap_or("-"),
        w["verified"]
    ));
    if let Some(d) = w["detail"].as_str() {
        s.text(format!("  check: {d}"));
    }
    if r["partial"] == true {
        s.text(format!(
            "PARTIAL REPORT: the run stopped early ({}); every count below is up to that cycle",
            r["stop_reason"].as_str().unwrap_or("?")
        ));
    }
    s.text(format!(
        "simulated {} processor cycles, {} references in {:.2} s ({:.1} M references/s)",
        int(u(&r["simulated_cycles"])),
        int(u(&r["references"])),
        r["wall_seconds"].as_f64().unwrap_or(0.0),
        r["references_per_second"].as_f64().unwrap_or(0.0) / 1e6
    ));
    let gt = &doc["ground_truth"];
    if !gt.is_null() {
        // Without a private L2 the processors' "L2" counts are their last private level's
        // transactions to the shared level.
        let no_private_l2 = !m["preset"].is_null() && m["preset"]["caches"]["l2"].is_null();
        ground_truth(&mut s, gt, top, no_private_l2);
    }
    Report { sections: vec![s] }
}

fn ground_truth(s: &mut Section, gt: &Value, top: usize, no_private_l2: bool) {
    let procs = gt["processors"].as_array().cloned().unwrap_or_default();
    let mut t = processors(gt, &procs);
    if no_private_l2 {
        let note = "no private L2: the L2 column counts the L1 misses that went to the shared level, each a transaction (the slices' hits and misses are in the shared slices table)";
        if procs.len() > MAX_PROC_ROWS {
            t.set_note(format!(
                "{} processors: only their totals are shown (rows for at most {MAX_PROC_ROWS}; every processor is in --json); {note}",
                procs.len()
            ));
        } else {
            t.set_note(note);
        }
    }
    s.table(t);
    s.table(latencies(gt));
    s.table(classes(gt));
    if !gt["tlb"].is_null() {
        s.table(tlb(&gt["tlb"], top));
    }
    if let Some(c) = gt["memory_controllers"].as_array() {
        s.table(memory_controllers(c));
    }
    for (id, title, key) in [
        ("data_structures", "Data structures", "data_structures"),
        ("procedures", "Procedures", "procedures"),
    ] {
        s.table(ranked(
            id,
            &format!("{title} (top {top} by misses)"),
            &gt[key],
            top,
        ));
    }
    if procs.len() > 1 {
        s.table(structure_by_processor(gt));
    }
    let (t, p) = pipeline_states(&procs);
    s.table(t);
    s.plot(p);
    if let Some(threads) = gt["software_threads"].as_array() {
        s.table(software_threads(gt, threads));
    }
    if let Some(procs) = gt["processes"].as_array() {
        s.table(processes(procs));
        s.table(os_paths(&gt["os"]));
    }
    if !gt["shared_slices"].is_null() {
        s.table(shared_slices(&gt["shared_slices"]));
    }
    if let Some(phases) = gt["by_phase"].as_array() {
        s.table(phase_latencies(phases));
        s.table(phase_queues(phases));
    }
    if !gt["probe_actions"].is_null() {
        s.table(probe_actions(&gt["probe_actions"]));
    }
}

/// The shared level's slices (`cmp`): requests each slice served and its data array's misses,
/// by kind, and the slice's memory traffic (exact, from the ground truth).
fn shared_slices(v: &Value) -> Table {
    let level = v["level"].as_str().unwrap_or("shared");
    let mut t = Table::new(
        "shared_slices",
        &format!(
            "Shared {} slices (a miss: the slice's array lacked the line; memory reads: misses that needed its data)",
            level.to_uppercase()
        ),
        vec![
            Column::label("slice"),
            Column::count("accesses"),
            Column::count("misses"),
            Column::percent("miss"),
            Column::count("reads"),
            Column::count("rd miss"),
            Column::count("writes"),
            Column::count("wr miss"),
            Column::count("write-backs"),
            Column::count("wb miss"),
            Column::count("mem reads"),
            Column::count("mem writes"),
            Column::count("prefetches"),
        ],
    );
    const KEYS: [&str; 11] = [
        "accesses",
        "misses",
        "reads",
        "read_misses",
        "writes",
        "write_misses",
        "writebacks",
        "writeback_misses",
        "memory_reads",
        "memory_writes",
        "prefetches",
    ];
    let row = |name: String, n: &[u64; 11]| -> Vec<Cell> {
        let mut r: Vec<Cell> = vec![
            name.into(),
            n[0].into(),
            n[1].into(),
            Cell::percent(n[1], n[0]),
        ];
        r.extend(n[2..].iter().map(|&x| Cell::from(x)));
        r
    };
    let mut tot = [0u64; 11];
    for sl in v["slices"].as_array().into_iter().flatten() {
        let mut n = [0u64; 11];
        for (k, key) in KEYS.iter().enumerate() {
            n[k] = u(&sl[*key]);
            tot[k] += n[k];
        }
        t.row(row(sl["slice"].to_string(), &n));
    }
    t.set_total(row("all".into(), &tot));
    t
}

/// Miss latencies by PhaseID (the phase of the request's thread when it missed).
fn phase_latencies(phases: &[Value]) -> Table {
    let mut t = Table::new(
        "phase_latencies",
        "Miss latencies by phase (request to response)",
        vec![
            Column::label("phase"),
            Column::label("miss"),
            Column::count("count"),
            proc_cycles("mean", 1),
            proc_cycles("p50", 0),
            proc_cycles("p90", 0),
            proc_cycles("max", 0),
        ],
    );
    for ph in phases {
        for (name, key) in [
            ("read local", "read_local"),
            ("read remote", "read_remote"),
            ("write local", "write_local"),
            ("write remote", "write_remote"),
        ] {
            let h = &ph["latency_cycles"][key];
            if u(&h["count"]) == 0 {
                continue;
            }
            t.row(vec![
                u(&ph["phase"]).to_string().into(),
                name.into(),
                u(&h["count"]).into(),
                h["mean"].as_f64().unwrap_or(0.0).into(),
                u(&h["p50"]).into(),
                u(&h["p90"]).into(),
                u(&h["max"]).into(),
            ]);
        }
    }
    t
}

/// Queue waits at memory and network resources by the phase of the request they served.
fn phase_queues(phases: &[Value]) -> Table {
    let ticks = |n: &str, d: u8| Column::cycles(n, Clock::Tick, d);
    let mut t = Table::new(
        "phase_queues",
        "Queue waits by phase (memory and network resources)",
        vec![
            Column::label("phase"),
            Column::label("resource"),
            Column::count("uses"),
            ticks("wait", 0),
            ticks("mean wait", 1),
            ticks("p90 wait", 0),
            ticks("busy", 0),
            Column::count("max queue"),
        ],
    );
    for ph in phases {
        if let Some(q) = ph["queues"].as_object() {
            for (k, v) in q {
                t.row(vec![
                    u(&ph["phase"]).to_string().into(),
                    k.as_str().into(),
                    u(&v["uses"]).into(),
                    u(&v["wait_ticks"]).into(),
                    v["wait"]["mean"].as_f64().unwrap_or(0.0).into(),
                    u(&v["wait"]["p90"]).into(),
                    u(&v["busy_ticks"]).into(),
                    u(&v["max_queue"]).into(),
                ]);
            }
        }
    }
    t
}

/// What the probes' wake-ups and actions did and what they cost.
fn probe_actions(a: &Value) -> Table {
    let mut t = Table::new(
        "probe_actions",
        "Probe wake-ups and actions",
        vec![
            Column::label("action"),
            Column::count("done"),
            Column::count("refused"),
            proc_cycles("cost", 0),
        ],
    );
    t.row(vec![
        "wake-up".into(),
        u(&a["wakes"]).into(),
        0u64.into(),
        0u64.into(),
    ]);
    let i = &a["interrupts"];
    t.row(vec![
        "interrupt (taken; cost: entry + handler)".into(),
        u(&i["taken"]).into(),
        u(&i["dropped"]).into(),
        u(&i["cycles"]).into(),
    ]);
    if let Some(set) = a["settings"].as_object() {
        for (name, v) in set {
            t.row(vec![
                format!("set {name} (now {})", u(&v["value"])).into(),
                u(&v["changes"]).into(),
                Cell::Empty,
                0u64.into(),
            ]);
        }
    }
    t.row(vec![
        "settings refused".into(),
        0u64.into(),
        u(&a["settings_refused"]).into(),
        0u64.into(),
    ]);
    let m = &a["page_migrations"];
    t.row(vec![
        "page migration".into(),
        u(&m["done"]).into(),
        u(&m["refused"]).into(),
        u(&m["cycles"]).into(),
    ]);
    t
}

/// At most this many software threads get a row in the text table (all are in --json).
pub const MAX_THREAD_ROWS: usize = 64;

/// Software threads (present when a core has several contexts or runs several threads):
/// where each ran and what its core did while it held it.
fn software_threads(gt: &Value, threads: &[Value]) -> Table {
    let contexts = gt["hardware_contexts"].as_array().map_or(0, |v| v.len());
    // Under the operating-system model: each thread's process and its supervisor-state
    // share (user = all - supervisor).
    let os = threads.first().is_some_and(|t| !t["supervisor"].is_null());
    let mut cols = vec![
        Column::label("thread"),
        Column::label("proc"),
        Column::label("ctx"),
        Column::count("instr"),
        proc_cycles("cycles", 0),
        Column::ratio("CPI", "cycles / instr", 2),
        Column::count("refs"),
        Column::percent("L1D miss"),
        Column::percent("L2 miss"),
        Column::count("switches"),
    ];
    if os {
        cols.insert(1, Column::label("process"));
        cols.push(proc_cycles("sup cycles", 0));
        cols.push(Column::count("sup instr"));
    }
    let mut t = Table::new(
        "software_threads",
        &format!(
            "Software threads ({} on {contexts} hardware contexts)",
            threads.len()
        ),
        cols,
    );
    let names: Vec<String> = gt["processes"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|p| p["name"].as_str().unwrap_or("?").to_string())
                .collect()
        })
        .unwrap_or_default();
    for th in threads.iter().take(MAX_THREAD_ROWS) {
        let (i, c) = (u(&th["instructions"]), u(&th["cycles"]));
        let l1d = &th["l1d"];
        let l2 = &th["l2"];
        let mut row: Vec<Cell> = vec![
            th["thread"].to_string().into(),
            th["proc"].to_string().into(),
            th["context"].to_string().into(),
            i.into(),
            c.into(),
            Cell::ratio(c, i),
            u(&th["references"]).into(),
            Cell::percent(u(&l1d["misses"]), u(&l1d["hits"]) + u(&l1d["misses"])),
            Cell::percent(u(&l2["misses"]), u(&l2["hits"]) + u(&l2["misses"])),
            u(&th["context_switches"]).into(),
        ];
        if os {
            let pid = u(&th["process"]) as usize;
            let name = names.get(pid).cloned().unwrap_or_else(|| pid.to_string());
            row.insert(1, name.into());
            row.push(u(&th["supervisor"]["cycles"]).into());
            row.push(u(&th["supervisor"]["instructions"]).into());
        }
        t.row(row);
    }
    if threads.len() > MAX_THREAD_ROWS {
        t.set_note(format!(
            "{} threads: the first {MAX_THREAD_ROWS} are shown (every thread is in --json)",
            threads.len()
        ));
    }
    t
}

/// Processes (the operating-system model): each one's threads' counts summed, and its
/// cycles and instructions split by the MSR's problem-state bit.
fn processes(procs: &[Value]) -> Table {
    let mut t = Table::new(
        "processes",
        &format!(
            "Processes ({}; user = problem state, sup = supervisor state; marked: MSR[PM])",
            procs.len()
        ),
        vec![
            Column::label("process"),
            Column::label("marked"),
            Column::count("threads"),
            Column::count("instr"),
            proc_cycles("cycles", 0),
            proc_cycles("user cycles", 0),
            proc_cycles("sup cycles", 0),
            Column::count("sup instr"),
            Column::count("refs"),
            Column::percent("L1D miss"),
            Column::count("L2 misses"),
            Column::count("switches"),
            Column::count("page faults"),
        ],
    );
    for p in procs {
        let l1d = &p["l1d"];
        t.row(vec![
            p["name"].as_str().unwrap_or("").to_string().into(),
            (if p["marked"].as_bool() == Some(true) {
                "yes"
            } else {
                "no"
            })
            .to_string()
            .into(),
            (p["threads"].as_array().map_or(0, |a| a.len()) as u64).into(),
            u(&p["instructions"]).into(),
            u(&p["cycles"]).into(),
            u(&p["user"]["cycles"]).into(),
            u(&p["supervisor"]["cycles"]).into(),
            u(&p["supervisor"]["instructions"]).into(),
            u(&p["references"]).into(),
            Cell::percent(u(&l1d["misses"]), u(&l1d["hits"]) + u(&l1d["misses"])),
            u(&p["l2"]["misses"]).into(),
            u(&p["context_switches"]).into(),
            u(&p["page_faults"]).into(),
        ]);
    }
    t
}

/// The operating system's supervisor paths: runs, cycles (entry to return, stalls
/// included), cycles per run.
fn os_paths(os: &Value) -> Table {
    let mut t = Table::new(
        "os_paths",
        "Operating-system paths (supervisor code run on the processors)",
        vec![
            Column::label("path"),
            Column::count("runs"),
            proc_cycles("cycles", 0),
            Column::ratio("cycles/run", "cycles / runs", 1),
        ],
    );
    for (key, name) in [
        ("context_switches", "context switch"),
        ("timer_interrupts", "timer interrupt"),
        ("system_calls", "system call"),
        ("tlb_misses", "TLB miss (page faults included)"),
    ] {
        let (n, c) = (u(&os[key]["count"]), u(&os[key]["cycles"]));
        t.row(vec![
            name.to_string().into(),
            n.into(),
            c.into(),
            Cell::ratio(c, n),
        ]);
    }
    if os["switch_commands"].is_object() {
        // Inside the context switches above (FlashPoint's procedure delta).
        let c = &os["switch_commands"];
        let (n, cy) = (u(&c["count"]), u(&c["cycles"]));
        t.row(vec![
            "FlashPoint delta (in the context switch)"
                .to_string()
                .into(),
            n.into(),
            cy.into(),
            Cell::ratio(cy, n),
        ]);
    }
    if os["daemon"].is_object() {
        // Inside the timer interrupts above (its cycles are part of theirs).
        let (n, c) = (u(&os["daemon"]["count"]), u(&os["daemon"]["cycles"]));
        t.row(vec![
            "monitor daemon (in the timer interrupt)".to_string().into(),
            n.into(),
            c.into(),
            Cell::ratio(c, n),
        ]);
    }
    t.set_note(format!(
        "page faults: {}; I/O waits: {} ({} cycles asked)",
        u(&os["page_faults"]),
        u(&os["io_waits"]["count"]),
        u(&os["io_waits"]["cycles"])
    ));
    t
}

/// Each memory controller's interface-buffer events and DRAM transactions (issue 16; present
/// only with an enabled `[memctl]`).
fn memory_controllers(c: &[Value]) -> Table {
    let mut t = Table::new(
        "memory_controllers",
        "Memory controllers (interface buffer and DRAM, per home)",
        vec![
            Column::label("node"),
            Column::count("writes"),
            Column::count("wr hits"),
            Column::count("full"),
            Column::count("reads"),
            Column::count("rd merge"),
            Column::count("rb hits"),
            Column::count("RA used"),
            Column::count("RA unused"),
            Column::count("DRAM rd"),
            Column::count("DRAM wr"),
            Column::count("row hits"),
            Column::count("row conf"),
        ],
    );
    let cols = |v: &Value| -> Vec<u64> {
        let (b, d) = (&v["buffer"], &v["dram"]);
        [
            &b["writes"],
            &b["write_hits"],
            &b["full"],
            &b["reads"],
            &b["read_merges"],
            &b["read_buffer_hits"],
            &b["read_ahead_used"],
            &b["read_ahead_unused"],
            &d["reads"],
            &d["writes"],
            &d["row_hits"],
            &d["row_conflicts"],
        ]
        .into_iter()
        .map(u)
        .collect()
    };
    let mut tot = vec![0u64; 12];
    for v in c {
        let x = cols(v);
        for (a, b) in tot.iter_mut().zip(&x) {
            *a += b;
        }
        let mut row = vec![Cell::text(v["node"].to_string())];
        row.extend(x.into_iter().map(Cell::Int));
        t.row(row);
    }
    let mut row = vec![Cell::text("all")];
    row.extend(tot.into_iter().map(Cell::Int));
    t.set_total(row);
    if let Some(v) = c.first() {
        t.set_note(format!(
            "watermark {}, read-ahead {}; writes left buffered at the end: {}",
            v["watermark"],
            if v["read_ahead"].as_bool() == Some(true) {
                "on"
            } else {
                "off"
            },
            c.iter().map(|v| u(&v["buffered_units"])).sum::<u64>()
        ));
    }
    t
}

fn processors(gt: &Value, procs: &[Value]) -> Table {
    let mut t = Table::new(
        "processors",
        "Processors (misses are L2 misses that became transactions)",
        vec![
            Column::label("proc"),
            Column::count("instr"),
            proc_cycles("cycles", 0),
            Column::ratio("CPI", "cycles / instr", 2),
            Column::count("refs"),
            Column::percent("L1I miss"),
            Column::percent("L1D miss"),
            Column::percent("L2 miss"),
            Column::count("rd miss"),
            Column::count("wr miss"),
            Column::count("remote"),
        ],
    );
    let mut tot = [0u64; 10];
    for p in procs {
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
        if procs.len() <= MAX_PROC_ROWS {
            t.row(proc_row(
                p["proc"].to_string(),
                &vals,
                u(&ms["read_misses"]),
                u(&ms["write_misses"]),
            ));
        }
    }
    let totals = &gt["totals"];
    t.set_total(proc_row(
        "all".into(),
        &tot,
        u(&totals["read_misses"]),
        u(&totals["write_misses"]),
    ));
    if procs.len() > MAX_PROC_ROWS {
        t.set_note(format!(
            "{} processors: only their totals are shown (rows for at most {MAX_PROC_ROWS}; every processor is in --json)",
            procs.len()
        ));
    }
    t
}

fn proc_row(name: String, v: &[u64; 10], rd: u64, wr: u64) -> Vec<Cell> {
    vec![
        name.into(),
        v[0].into(),
        v[1].into(),
        Cell::ratio(v[1], v[0]),
        v[2].into(),
        Cell::percent(v[3], v[4]),
        Cell::percent(v[5], v[6]),
        Cell::percent(v[7], v[8]),
        rd.into(),
        wr.into(),
        v[9].into(),
    ]
}

fn latencies(gt: &Value) -> Table {
    let lat = &gt["latency_cycles"];
    let mut t = Table::new(
        "miss_latencies",
        "Miss latencies (request to response)",
        vec![
            Column::label("miss"),
            Column::count("count"),
            proc_cycles("mean", 1),
            proc_cycles("p50", 0),
            proc_cycles("p90", 0),
            proc_cycles("p99", 0),
            proc_cycles("max", 0),
        ],
    );
    for (name, key) in [
        ("read local", "read_local"),
        ("read remote", "read_remote"),
        ("write local", "write_local"),
        ("write remote", "write_remote"),
    ] {
        let h = &lat[key];
        t.row(vec![
            name.into(),
            u(&h["count"]).into(),
            h["mean"].as_f64().unwrap_or(0.0).into(),
            u(&h["p50"]).into(),
            u(&h["p90"]).into(),
            u(&h["p99"]).into(),
            u(&h["max"]).into(),
        ]);
    }
    t
}

fn classes(gt: &Value) -> Table {
    let totals = &gt["totals"];
    let cols = [
        ("cold", "cold"),
        ("coherence", "coherence"),
        ("capacity/conflict", "capacity_conflict"),
        ("upgrades", "upgrades"),
        ("invalidations", "invalidations"),
        ("NACKs", "nacks"),
        ("cancelled upgrades", "cancelled_upgrades"),
        ("bus errors", "bus_errors"),
    ];
    let mut t = Table::new(
        "miss_classes",
        "Miss classes and coherence events (all processors)",
        cols.iter().map(|(n, _)| Column::count(n)).collect(),
    );
    t.row(cols.iter().map(|(_, k)| u(&totals[*k]).into()).collect());
    t
}

fn tlb(tlb: &Value, top: usize) -> Table {
    let mut t = Table::new(
        "tlb",
        &format!(
            "TLB ({} entries of {} bytes, software refill): misses by data structure (top {top})",
            u(&tlb["entries"]),
            int(u(&tlb["page_bytes_per_entry"])),
        ),
        vec![
            Column::label("structure"),
            Column::count("data misses"),
            Column::count("instr misses"),
        ],
    );
    for s in tlb["by_structure"]
        .as_array()
        .into_iter()
        .flatten()
        .take(top)
    {
        t.row(vec![
            s["name"].as_str().unwrap_or("?").into(),
            u(&s["data_misses"]).into(),
            u(&s["instruction_misses"]).into(),
        ]);
    }
    t.set_total(vec![
        "all".into(),
        u(&tlb["data_misses"]).into(),
        u(&tlb["instruction_misses"]).into(),
    ]);
    t.set_note("data misses are PAPI_TLB_DM, instruction misses PAPI_TLB_IM");
    t
}

/// A data-structure or procedure table: its L1 D read and write and L1 I misses (each L1
/// miss where the core counted it, `machine::l1_misses`), then its L2 misses (transactions:
/// misses of the last private level, which leave the processor) with their locality,
/// latency and class.
fn ranked(id: &str, title: &str, rows: &Value, top: usize) -> Table {
    let mut t = Table::new(
        id,
        title,
        vec![
            Column::label("name"),
            Column::count("L1D rd miss"),
            Column::count("L1D wr miss"),
            Column::count("L1I miss"),
            Column::count("L2 rd miss"),
            Column::count("rd remote"),
            Column::count("L2 wr miss"),
            Column::count("wr remote"),
            proc_cycles("avg rd lat", 1),
            Column::count("cold"),
            Column::count("coherence"),
            Column::count("invalidations"),
        ],
    );
    for s in rows.as_array().into_iter().flatten().take(top) {
        let reads = u(&s["read_misses"]);
        let lat = u(&s["read_latency_local_cycles"]) + u(&s["read_latency_remote_cycles"]);
        t.row(vec![
            s["name"].as_str().unwrap_or("?").into(),
            u(&s["l1d_read_misses"]).into(),
            u(&s["l1d_write_misses"]).into(),
            u(&s["l1i_misses"]).into(),
            reads.into(),
            u(&s["read_remote"]).into(),
            u(&s["write_misses"]).into(),
            u(&s["write_remote"]).into(),
            Cell::ratio(lat, reads),
            u(&s["cold"]).into(),
            u(&s["coherence"]).into(),
            u(&s["invalidations"]).into(),
        ]);
    }
    t.set_note(
        "L1: misses of the L1 D (a store to a line it holds shared is a write miss) and L1 I; \
         L2: transactions (misses that left the processor), instruction fetches among the reads",
    );
    t
}

/// Who misses where: the top three data structures, one row per processor that touched them.
fn structure_by_processor(gt: &Value) -> Table {
    let top_names: Vec<&str> = gt["data_structures"]
        .as_array()
        .into_iter()
        .flatten()
        .take(3)
        .filter_map(|s| s["name"].as_str())
        .collect();
    let mut t = Table::new(
        "structure_x_processor",
        "Top data structures by processor",
        vec![
            Column::label("structure"),
            Column::label("proc"),
            Column::count("read miss"),
            Column::count("write miss"),
            Column::count("coherence"),
            Column::count("invalidations"),
        ],
    );
    for name in top_names {
        for s in gt["structure_x_processor"].as_array().into_iter().flatten() {
            if s["structure"].as_str() == Some(name)
                && u(&s["read_misses"]) + u(&s["write_misses"]) + u(&s["invalidations"]) > 0
            {
                t.row(vec![
                    name.into(),
                    s["processor"].to_string().into(),
                    u(&s["read_misses"]).into(),
                    u(&s["write_misses"]).into(),
                    u(&s["coherence"]).into(),
                    u(&s["invalidations"]).into(),
                ]);
            }
        }
    }
    t
}

/// Machine-wide cycles by pipeline state, most first, as a table and a bar plot.
fn pipeline_states(procs: &[Value]) -> (Table, Plot) {
    let mut cyc = std::collections::BTreeMap::<String, u64>::new();
    for p in procs {
        if let Some(o) = p["cycles_by_pipeline_state"].as_object() {
            for (k, v) in o {
                *cyc.entry(k.clone()).or_default() += u(v);
            }
        }
    }
    let total: u64 = cyc.values().sum();
    let mut v: Vec<_> = cyc.into_iter().filter(|(_, c)| *c > 0).collect();
    v.sort_by_key(|e| std::cmp::Reverse(e.1));
    let mut t = Table::new(
        "pipeline_states",
        "Cycles by pipeline state (all processors)",
        vec![
            Column::label("pipeline state"),
            proc_cycles("cycles", 0),
            Column::percent("share"),
        ],
    );
    for (k, c) in &v {
        t.row(vec![
            k.as_str().into(),
            (*c).into(),
            Cell::percent(*c, total),
        ]);
    }
    let plot = Plot {
        id: "pipeline_states".into(),
        title: "Cycles by pipeline state (all processors)".into(),
        x: Axis::new(
            "cycles",
            Unit::Cycles {
                clock: Clock::Processor,
            },
        ),
        y: Axis::new("pipeline state", Unit::Count),
        data: PlotData::Bars {
            bars: v.into_iter().map(|(k, c)| (k, c as f64)).collect(),
        },
    };
    (t, plot)
}

/// Writes the base report's tables of a run document as CSV, one file per table
/// (`dir/<table id>.csv`: processors, miss_latencies, miss_classes, tlb, data_structures,
/// procedures, structure_x_processor, pipeline_states); returns the files written.
pub fn write_csv(
    doc: &Value,
    top: usize,
    dir: &std::path::Path,
) -> Result<Vec<std::path::PathBuf>, String> {
    crate::render::csv::write_dir(&build(doc, top), dir)
}

/// Writes the base report's plots as SVG (`dir/<plot id>.svg`): the pipeline-state bars and
/// the miss-latency histograms of `st`'s ground truth.
pub fn write_svg(
    doc: &Value,
    st: &State,
    top: usize,
    dir: &std::path::Path,
) -> Result<Vec<std::path::PathBuf>, String> {
    crate::render::svg::write_dir(&build_with_histograms(doc, st, top), dir)
}

/// How many equal-width bins a latency histogram gets.
pub const LATENCY_BINS: u64 = 32;

/// The ground truth's miss-latency histograms (request to response, processor cycles), one
/// plot per kind of miss that happened: `LATENCY_BINS` equal bins from 0 to the largest
/// latency. The run document only keeps their percentiles, so these come from the state.
pub fn latency_histograms(st: &State) -> Vec<Plot> {
    let Some(gt) = st.truth.as_ref() else {
        return Vec::new();
    };
    let kinds = [
        ("read_local", "read local"),
        ("read_remote", "read remote"),
        ("write_local", "write local"),
        ("write_remote", "write remote"),
    ];
    let mut plots = Vec::new();
    for ((id, name), h) in kinds.iter().zip(&gt.latency) {
        if h.n == 0 {
            continue;
        }
        let width = (h.max() + 1).div_ceil(LATENCY_BINS).max(1);
        let mut counts = vec![0u64; LATENCY_BINS as usize];
        for (v, c) in h.iter() {
            counts[((v / width) as usize).min(LATENCY_BINS as usize - 1)] += c;
        }
        let bins = counts
            .iter()
            .enumerate()
            .map(|(i, c)| Bin {
                lo: (i as u64 * width) as f64,
                hi: ((i as u64 + 1) * width) as f64,
                count: *c,
            })
            .collect();
        plots.push(Plot {
            id: format!("latency_{id}"),
            title: format!("Miss latency: {name} (request to response)"),
            x: Axis::new(
                "latency",
                Unit::Cycles {
                    clock: Clock::Processor,
                },
            ),
            y: Axis::new("misses", Unit::Count),
            data: PlotData::Histogram { bins },
        });
    }
    plots
}

/// [`build`] plus the miss-latency histograms of `st` (for the SVG files; text and CSV show
/// their summary in the miss-latency table).
pub fn build_with_histograms(doc: &Value, st: &State, top: usize) -> Report {
    let mut r = build(doc, top);
    for p in latency_histograms(st) {
        r.sections[0].plot(p);
    }
    r
}
