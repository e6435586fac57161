//! The run's JSON document: `machine`, `workload`, `ground_truth`, `monitors`, `run`.

use machine::addr::UNNAMED;
use machine::cpu::pipeline::Ps;
use machine::cpu::{Class, Counters};
use machine::l1_misses::{self, Row as L1Row};
use machine::sched;
use machine::sim::RunSummary;
use machine::state::State;
use machine::truth::{GroundTruth, Histogram, MissStats, RESOURCE_KINDS};
use serde_json::{json, Map, Value};

pub fn miss_stats(s: &MissStats) -> Value {
    json!({
        "read_misses": s.reads(), "read_local": s.read_local, "read_remote": s.read_remote,
        "write_misses": s.writes(), "write_local": s.write_local, "write_remote": s.write_remote,
        "upgrades": s.upgrades,
        "read_latency_local_cycles": s.read_lat_local, "read_latency_remote_cycles": s.read_lat_remote,
        "write_latency_local_cycles": s.write_lat_local, "write_latency_remote_cycles": s.write_lat_remote,
        "cold": s.cold, "global_cold": s.global_cold, "coherence": s.coherence, "capacity_conflict": s.capacity,
        "invalidations": s.invalidations, "nacks": s.nacks, "cancelled_upgrades": s.cancelled, "bus_errors": s.bus_errors,
    })
}

/// Rows of the data-structure or procedure table, most L2 misses first, then most L1 misses,
/// then by name: each its L2 miss statistics (`miss_stats`) and its L1 misses.
fn ranked_with_l1(rows: std::collections::BTreeMap<String, (MissStats, L1Row)>) -> Vec<Value> {
    let mut rows: Vec<_> = rows.into_iter().collect();
    let l1 = |r: &L1Row| r.iter().sum::<u64>();
    rows.sort_by(|a, b| {
        (b.1 .0.misses(), l1(&b.1 .1))
            .cmp(&(a.1 .0.misses(), l1(&a.1 .1)))
            .then(a.0.cmp(&b.0))
    });
    rows.into_iter()
        .map(|(name, (s, r))| {
            let mut v = miss_stats(&s);
            v["name"] = json!(name);
            v["l1d_read_misses"] = json!(r[l1_misses::READ]);
            v["l1d_write_misses"] = json!(r[l1_misses::WRITE]);
            v["l1i_misses"] = json!(r[l1_misses::FETCH]);
            v
        })
        .collect()
}

pub fn histogram(h: &Histogram) -> Value {
    json!({
        "count": h.n, "mean": h.mean(), "variance": h.variance(),
        "p50": h.percentile(0.5), "p90": h.percentile(0.9), "p99": h.percentile(0.99), "max": h.max(),
    })
}

/// Instructions by fine class (`machine::cpu::op::Op`), the classes with a count only.
fn ops_map(ops: &[u64]) -> Value {
    let mut m = Map::new();
    for o in machine::cpu::op::Op::ALL {
        if ops[o as usize] > 0 {
            m.insert(o.name().to_string(), json!(ops[o as usize]));
        }
    }
    Value::Object(m)
}

fn ground_truth(st: &State, gt: &GroundTruth) -> Value {
    let mut procs = Vec::new();
    for (i, c) in st.cores.iter().enumerate() {
        let mut instr = Map::new();
        for (k, n) in Class::NAMES.iter().enumerate() {
            instr.insert(n.to_string(), json!(c.cnt.instr[k]));
        }
        let mut cycles = Map::new();
        for ps in Ps::ALL {
            cycles.insert(ps.name().to_string(), json!(c.cnt.ps[ps as usize]));
        }
        let mut proc = json!({
            "proc": i,
            "node": c.node,
            "instructions": c.cnt.instructions(),
            "cycles": c.cnt.cycles(),
            "instructions_by_class": instr,
            "cycles_by_pipeline_state": cycles,
            "references": c.cnt.refs,
            "l1i": {"hits": c.cnt.l1i_hits, "misses": c.cnt.l1i_misses},
            "l1d": {"hits": c.cnt.l1d_hits, "misses": c.cnt.l1d_misses},
            "l2": {"hits": c.cnt.l2_hits, "misses": c.cnt.l2_misses},
            "uncached": c.cnt.uncached,
            "interrupts": c.cnt.interrupts,
            "misses": miss_stats(&gt.per_proc[i]),
        });
        if c.cnt.has_fine_ops() {
            proc["instructions_by_op"] = ops_map(&c.cnt.ops());
        }
        if c.timing.restart > 0 {
            // `[cpu] restart_signal` (Table 4.10 item 4): the exact restarts after flushes.
            proc["pipeline_restarts"] = json!(c.cnt.restarts());
        }
        if c.tlb.enabled() {
            proc["tlb"] = json!({
                "data_misses": c.cnt.dtlb_misses,
                "instruction_misses": c.cnt.itlb_misses,
            });
        }
        procs.push(proc);
    }
    // Regions with one name (a library's segments, a mapping split around symbols) are one
    // structure in reports. Each carries its L2 misses (transactions, `MissStats`) and its
    // L1 misses (`machine::l1_misses`); a structure with L1 misses only is listed too.
    let struct_name = |id| {
        if id == UNNAMED {
            "(unnamed)".to_string()
        } else {
            st.map.name_of(id).to_string()
        }
    };
    let mut merged: std::collections::BTreeMap<String, (MissStats, L1Row)> = Default::default();
    for (id, s) in &gt.per_struct {
        merged.entry(struct_name(*id)).or_default().0.add(s);
    }
    for (id, r) in gt.l1.structs() {
        l1_misses::add(&mut merged.entry(struct_name(id)).or_default().1, &r);
    }
    let per_struct = ranked_with_l1(merged);
    let proc_name = |p: u32| {
        st.procedures
            .get(p as usize)
            .cloned()
            .unwrap_or_else(|| format!("#{p}"))
    };
    let mut by_procedure: std::collections::BTreeMap<String, (MissStats, L1Row)> =
        Default::default();
    for (p, s) in &gt.per_procedure {
        by_procedure.entry(proc_name(*p)).or_default().0.add(s);
    }
    for (p, r) in gt.l1.procedures() {
        l1_misses::add(&mut by_procedure.entry(proc_name(p)).or_default().1, &r);
    }
    let per_procedure = ranked_with_l1(by_procedure);
    // By names, as above (a traced program's procedures are its code blocks, named by
    // function after the run: `machine::code_blocks`).
    let mut pairs: std::collections::BTreeMap<(String, String), MissStats> = Default::default();
    for ((p, s), m) in &gt.per_proc_struct {
        pairs
            .entry((proc_name(*p), struct_name(*s)))
            .or_default()
            .add(m);
    }
    let mut by_pair: Vec<Value> = pairs
        .iter()
        .map(|((p, s), m)| {
            let mut v = miss_stats(m);
            v["procedure"] = json!(p);
            v["structure"] = json!(s);
            v
        })
        .collect();
    by_pair.sort_by(|a, b| {
        let k = |v: &Value| {
            v["read_misses"].as_u64().unwrap_or(0) + v["write_misses"].as_u64().unwrap_or(0)
        };
        k(b).cmp(&k(a))
            .then_with(|| a["procedure"].as_str().cmp(&b["procedure"].as_str()))
            .then_with(|| a["structure"].as_str().cmp(&b["structure"].as_str()))
    });
    let mut cpu_merged: std::collections::BTreeMap<(String, u16), MissStats> = Default::default();
    for ((p, sid), m) in &gt.per_cpu_struct {
        let name = if *sid == UNNAMED {
            "(unnamed)"
        } else {
            st.map.name_of(*sid)
        };
        cpu_merged.entry((name.to_string(), *p)).or_default().add(m);
    }
    let mut by_cpu: Vec<Value> = cpu_merged
        .iter()
        .map(|((name, p), m)| {
            let mut v = miss_stats(m);
            v["processor"] = json!(p);
            v["structure"] = json!(name);
            v
        })
        .collect();
    by_cpu.sort_by(|a, b| {
        a["structure"]
            .as_str()
            .cmp(&b["structure"].as_str())
            .then(a["processor"].as_u64().cmp(&b["processor"].as_u64()))
    });
    let mut queues: Vec<Value> = gt
        .queues
        .iter()
        .map(|(r, q)| {
            json!({"resource": format!("{r:?}"), "uses": q.uses, "wait_ticks": q.wait_sum, "busy_ticks": q.busy_sum, "max_queue": q.max_queue, "wait": histogram(&q.waits)})
        })
        .collect();
    queues.sort_by(|a, b| a["resource"].as_str().cmp(&b["resource"].as_str()));
    let mut tx: Vec<(String, u64)> = gt
        .transactions
        .iter()
        .map(|(c, n)| (c.name().to_string(), *n))
        .collect();
    tx.sort();
    let mut inbound: Vec<(String, u64)> = gt
        .inbound
        .iter()
        .map(|(c, n)| (c.to_string(), *n))
        .collect();
    inbound.sort();
    let mut doc = json!({
        "totals": miss_stats(&gt.total()),
        "latency_cycles": {
            "read_local": histogram(&gt.latency[0]), "read_remote": histogram(&gt.latency[1]),
            "write_local": histogram(&gt.latency[2]), "write_remote": histogram(&gt.latency[3]),
        },
        "l2_accesses": gt.l2_accesses,
        "transactions": tx.into_iter().map(|(k, v)| (k, json!(v))).collect::<Map<_, _>>(),
        "inbound": inbound.into_iter().map(|(k, v)| (k, json!(v))).collect::<Map<_, _>>(),
        "processors": procs,
        "data_structures": per_struct,
        "procedures": per_procedure,
        "procedure_x_structure": by_pair,
        "structure_x_processor": by_cpu,
        "queues": queues,
        "handlers": gt.handlers.iter().map(|(h, s)| (h.to_string(), json!({"runs": s.runs, "latency_sum": s.latency_sum, "occupancy_sum": s.occupancy_sum, "queued_sum": s.queued_sum}))).collect::<std::collections::BTreeMap<_, _>>(),
    });
    if st.cores.first().is_some_and(|c| c.tlb.enabled()) {
        doc["tlb"] = tlb(st, gt);
    }
    if !gt.slices.is_empty() {
        doc["shared_slices"] = shared_slices(st, gt);
    }
    if gt.by_phase() {
        doc["by_phase"] = by_phase(gt);
    }
    if st.acted.shown() {
        doc["probe_actions"] = probe_actions(st);
    }
    if threads_shown(st) {
        let (threads, contexts) = threads(st);
        doc["software_threads"] = threads;
        doc["hardware_contexts"] = contexts;
    }
    if let Some(os) = &st.os {
        doc["processes"] = processes(st, os);
        doc["os"] = os_paths(os);
    }
    let ctl = st.system.controller_reports();
    if !ctl.is_empty() {
        doc["memory_controllers"] = serde_json::to_value(&ctl).unwrap_or(Value::Null);
    }
    doc
}

/// The split by PhaseID (present once a thread set a PhaseID other than 0): per phase, miss
/// latencies in processor cycles and queue waits in ticks per resource kind (seed 000,
/// Table 4.10 items 9 and 21–23).
fn by_phase(gt: &GroundTruth) -> Value {
    gt.phases
        .iter()
        .map(|(ph, s)| {
            let queues: Map<String, Value> = RESOURCE_KINDS
                .iter()
                .zip(&s.queues)
                .filter(|(_, q)| q.uses > 0)
                .map(|(k, q)| {
                    (
                        k.to_string(),
                        json!({"uses": q.uses, "wait_ticks": q.wait_sum, "busy_ticks": q.busy_sum, "max_queue": q.max_queue, "wait": histogram(&q.waits)}),
                    )
                })
                .collect();
            json!({
                "phase": ph,
                "latency_cycles": {
                    "read_local": histogram(&s.latency[0]), "read_remote": histogram(&s.latency[1]),
                    "write_local": histogram(&s.latency[2]), "write_remote": histogram(&s.latency[3]),
                },
                "queues": queues,
            })
        })
        .collect()
}

/// What the probes' wake-ups and actions did and cost (present when a probe woke or acted
/// beyond raising plain interrupts).
fn probe_actions(st: &State) -> Value {
    let a = &st.acted;
    let settings: Map<String, Value> = st
        .aux
        .settings
        .list()
        .iter()
        .enumerate()
        .map(|(i, s)| {
            (
                s.name.clone(),
                json!({"changes": a.settings_applied.get(i).copied().unwrap_or(0), "value": s.value}),
            )
        })
        .collect();
    json!({
        "wakes": a.wakes,
        "interrupts": {"raised": a.interrupts, "dropped": a.interrupts_dropped, "taken": a.interrupts_taken, "cycles": a.interrupt_cycles, "handler_cycles": a.handler_cycles},
        "settings": settings,
        "settings_refused": a.settings_refused,
        "page_migrations": {"done": a.migrations, "cycles": a.migration_cycles, "refused": a.migrations_refused},
    })
}

/// Whether the report has the per-thread sections: only when cores have several hardware
/// contexts or some core runs several software threads. Otherwise thread t ran alone on
/// processor t and the processors' section is the threads' (a processor without a thread
/// shows zeros), and the document keeps its layout.
pub fn threads_shown(st: &State) -> bool {
    st.preset.cpu.threads_per_core > 1 || st.cores.iter().any(|c| c.multi)
}

/// The counts every level (core, hardware context, software thread) has.
fn counts(c: &Counters) -> Value {
    json!({
        "instructions": c.instructions(),
        "cycles": c.cycles(),
        "references": c.refs,
        "l1i": {"hits": c.l1i_hits, "misses": c.l1i_misses},
        "l1d": {"hits": c.l1d_hits, "misses": c.l1d_misses},
        "l2": {"hits": c.l2_hits, "misses": c.l2_misses},
        "uncached": c.uncached,
        "nacks": c.nacks,
    })
}

/// Ground truth per software thread (the core's counts while the thread held it: they sum to
/// the core's) and per hardware context (the sum of its threads').
fn threads(st: &State) -> (Value, Value) {
    let s = &st.sched;
    let n = s.threads_per_core;
    let threads: Vec<Value> = s
        .threads
        .iter()
        .enumerate()
        .filter(|(_, t)| t.present)
        .map(|(i, t)| {
            let mut v = counts(&t.cnt);
            v["thread"] = json!(i);
            v["proc"] = json!(t.core);
            v["context"] = json!(t.context % n);
            v["context_switches"] = json!(t.switches);
            if st.os.is_some() {
                v["process"] = json!(t.process);
                v["user"] = counts(&t.mode[0]);
                v["supervisor"] = counts(&t.mode[1]);
            }
            v
        })
        .collect();
    let contexts: Vec<Value> = (0..s.contexts.len())
        .map(|ctx| {
            let mut v = counts(&sched::context_counts(s, ctx));
            v["proc"] = json!(ctx / n);
            v["context"] = json!(ctx % n);
            v["threads"] = json!(s
                .threads
                .iter()
                .enumerate()
                .filter(|(_, t)| t.present && t.context == ctx)
                .map(|(i, _)| i)
                .collect::<Vec<_>>());
            v
        })
        .collect();
    (json!(threads), json!(contexts))
}

/// Ground truth per process (the operating-system model): the sums of its threads' counts,
/// all and split by the MSR's problem-state bit (user, supervisor).
fn processes(st: &State, os: &machine::os::Os) -> Value {
    let s = &st.sched;
    let procs: Vec<Value> = os
        .processes
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let (mut all, mut user, mut sup) = Default::default();
            let mut switches = 0;
            for &t in &p.threads {
                let th = &s.threads[t];
                machine::cpu::context::add(&mut all, &th.cnt);
                machine::cpu::context::add(&mut user, &th.mode[0]);
                machine::cpu::context::add(&mut sup, &th.mode[1]);
                switches += th.switches;
            }
            let mut v = counts(&all);
            v["process"] = json!(i);
            v["name"] = json!(p.name);
            v["marked"] = json!(p.marked);
            v["threads"] = json!(p.threads);
            v["context_switches"] = json!(switches);
            v["page_faults"] = json!(p.touched.len());
            v["user"] = counts(&user);
            v["supervisor"] = counts(&sup);
            v
        })
        .collect();
    json!(procs)
}

/// The operating system's paths: how often each ran and the processor cycles it took
/// (from its entry to its return, its own stalls included), and per run.
fn os_paths(os: &machine::os::Os) -> Value {
    let s = &os.stats;
    let per = |c: u64, n: u64| {
        if n == 0 {
            Value::Null
        } else {
            json!(c as f64 / n as f64)
        }
    };
    let mut v = json!({
        "config": os.cfg,
        "context_switches": {"count": s.switches, "cycles": s.switch_cycles, "cycles_per": per(s.switch_cycles, s.switches)},
        "timer_interrupts": {"count": s.timer_interrupts, "cycles": s.timer_cycles, "cycles_per": per(s.timer_cycles, s.timer_interrupts)},
        "system_calls": {"count": s.syscalls, "cycles": s.syscall_cycles, "cycles_per": per(s.syscall_cycles, s.syscalls)},
        "tlb_misses": {"count": s.tlb_misses, "cycles": s.tlb_cycles, "cycles_per": per(s.tlb_cycles, s.tlb_misses)},
        "page_faults": s.page_faults,
        "virtualization": {"counters": os.cfg.virtual_counters, "cycles": s.virt_cycles, "cycles_per_switch": per(s.virt_cycles, s.switches)},
        "io_waits": {"count": s.io_waits, "cycles": s.io_cycles},
    });
    if s.switch_commands > 0 {
        // The memory system's command in the switch path (FlashPoint's procedure delta).
        v["switch_commands"] = json!({"count": s.switch_commands, "cycles": s.switch_command_cycles, "cycles_per_switch": per(s.switch_command_cycles, s.switches)});
    }
    if os.cfg.daemon.is_some() {
        v["daemon"] = json!({"count": s.daemon_runs, "cycles": s.daemon_cycles, "cycles_per": per(s.daemon_cycles, s.daemon_runs)});
    }
    v
}

/// The shared level's slices (`cmp`): per slice, requests served and how many missed its data
/// array, by kind, and its memory traffic.
fn shared_slices(st: &State, gt: &GroundTruth) -> Value {
    let level = st.preset.caches.shared.first();
    json!({
        "level": level.map_or("", |l| l.name.as_str()),
        "slices": gt.slices.iter().enumerate().map(|(i, s)| json!({
            "slice": i,
            "accesses": s.accesses(),
            "misses": s.misses(),
            "reads": s.reads,
            "read_misses": s.read_misses,
            "writes": s.writes,
            "write_misses": s.write_misses,
            "writebacks": s.writebacks,
            "writeback_misses": s.writeback_misses,
            "memory_reads": s.memory_reads,
            "memory_writes": s.memory_writes,
            "prefetches": s.prefetches,
        })).collect::<Vec<_>>(),
    })
}

/// TLB refills: totals (PAPI_TLB_DM, PAPI_TLB_IM) and per data structure of the faulting
/// address, most first.
fn tlb(st: &State, gt: &GroundTruth) -> Value {
    let data: u64 = st.cores.iter().map(|c| c.cnt.dtlb_misses).sum();
    let instr: u64 = st.cores.iter().map(|c| c.cnt.itlb_misses).sum();
    let mut merged: std::collections::BTreeMap<&str, [u64; 2]> = Default::default();
    for (sid, n) in &gt.tlb_per_struct {
        let name = if *sid == UNNAMED {
            "(unnamed)"
        } else {
            st.map.name_of(*sid)
        };
        let m = merged.entry(name).or_default();
        m[0] += n[0];
        m[1] += n[1];
    }
    let mut rows: Vec<(&str, [u64; 2])> = merged.into_iter().collect();
    rows.sort_by(|a, b| (b.1[0] + b.1[1]).cmp(&(a.1[0] + a.1[1])).then(a.0.cmp(b.0)));
    let cfg = &st.preset.cpu.tlb;
    json!({
        "entries": cfg.entries,
        "page_bytes_per_entry": st.preset.memory.page_bytes * cfg.pages_per_entry as u64,
        "data_misses": data,
        "instruction_misses": instr,
        "by_structure": rows.iter().map(|(n, m)| json!({"name": n, "data_misses": m[0], "instruction_misses": m[1]})).collect::<Vec<_>>(),
    })
}

/// The run document's schema name and version (docs/json.md). The version changes when a key
/// is removed or changes meaning, not when one is added.
pub const RUN_SCHEMA: &str = "pmusim.run/1";

/// The whole document of a run. `monitors` is filled by the caller (one key per monitor).
pub fn run_document(
    st: &State,
    sum: &RunSummary,
    workload: Value,
    monitors: Value,
    wall_seconds: f64,
) -> Value {
    let gt = st
        .truth
        .as_ref()
        .map(|g| ground_truth(st, g))
        .unwrap_or(Value::Null);
    // The large parts are moved in after: `json!` would serialize each `Value` again.
    let mut doc = json!({
        "schema": RUN_SCHEMA,
        "machine": {
            "name": st.preset.name,
            "protocol": format!("{:?}", st.preset.protocol).to_lowercase(),
            "procs": st.cores.len(),
            "nodes": st.map.nodes(),
            "tick_hz": st.clocks.tick_hz,
        },
        "run": {
            "simulated_cycles": sum.cycles,
            "simulated_ticks": sum.ticks,
            "references": sum.references,
            "events": sum.events,
            "wall_seconds": wall_seconds,
            "references_per_second": if wall_seconds > 0.0 { sum.references as f64 / wall_seconds } else { 0.0 },
        },
    });
    doc["machine"]["preset"] = serde_json::to_value(&st.preset).unwrap_or(Value::Null);
    doc["workload"] = workload;
    doc["ground_truth"] = gt;
    doc["monitors"] = monitors;
    doc
}
