//! `pmusim test-protocol`.

use crate::cli::{FaultArg, TestArgs};
use crate::Failure;
use machine::env::Fault;
use machine::tester::{self, TesterConfig};
use serde_json::json;

pub fn run(a: TestArgs) -> Result<u8, Failure> {
    let preset = a.machine.preset()?;
    let cfg = TesterConfig {
        ops: a.ops,
        seed: a.machine.seed,
        lines: a.lines,
        fault: a.inject_fault.map_or(Fault::None, FaultArg::fault),
    };
    cfg.validate().map_err(Failure::input)?;
    let procs = preset.procs;
    let name = preset.name.clone();
    let start = std::time::Instant::now();
    let r = tester::run(preset, &cfg).map_err(Failure::sim)?;
    let wall = start.elapsed().as_secs_f64();
    if a.json {
        let mut doc = json!({
                "schema": crate::cli::schema("test-protocol"),
                "machine": name, "procs": procs, "seed": cfg.seed, "operations": r.operations,
                "violations": r.violations, "first_violation": r.first_violation, "history": r.history,
                "races": {"nacks": r.nacks, "cancelled_upgrades": r.cancelled_upgrades, "bus_errors": r.bus_errors,
                          "invalidations": r.invalidations, "interventions": r.interventions, "writebacks": r.writebacks,
                          "protocol": r.protocol.iter().map(|(k, v)| (k.to_string(), json!(v))).collect::<serde_json::Map<_, _>>()},
                "simulated_cycles": r.cycles, "wall_seconds": wall,
        });
        if !r.controllers.is_empty() {
            doc["memory_controllers"] = json!(r.controllers);
        }
        if r.misses_under_misses > 0 {
            doc["races"]["misses_under_misses"] = json!(r.misses_under_misses);
        }
        println!("{}", serde_json::to_string_pretty(&doc).unwrap());
    } else {
        println!(
            "protocol tester: machine {name}, {procs} processors, seed {}, {} lines",
            cfg.seed, cfg.lines
        );
        println!(
            "{} operations in {} simulated cycles ({:.1} s)",
            r.operations, r.cycles, wall
        );
        println!(
            "races seen: {} NACKs, {} cancelled upgrades, {} bus errors, {} invalidations, {} interventions, {} write-backs",
            r.nacks, r.cancelled_upgrades, r.bus_errors, r.invalidations, r.interventions, r.writebacks
        );
        if r.misses_under_misses > 0 {
            println!(
                "misses issued under other misses of the processor ([cpu.nonblocking] mshrs): {}",
                r.misses_under_misses
            );
        }
        if !r.protocol.is_empty() {
            println!(
                "protocol events: {}",
                r.protocol
                    .iter()
                    .map(|(k, v)| format!("{v} {k}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
        }
        if !r.controllers.is_empty() {
            let sum = |f: fn(&machine::mem::controller::ControllerReport) -> u64| -> u64 {
                r.controllers.iter().map(f).sum()
            };
            println!(
                "memory controllers: {} writes ({} write-buffer hits, {} full), {} reads ({} read merges, {} read-buffer hits), {} DRAM writes, {} DRAM reads, {} units left buffered",
                sum(|c| c.buffer.writes),
                sum(|c| c.buffer.write_hits),
                sum(|c| c.buffer.full),
                sum(|c| c.buffer.reads),
                sum(|c| c.buffer.read_merges),
                sum(|c| c.buffer.read_buffer_hits),
                sum(|c| c.dram.writes),
                sum(|c| c.dram.reads),
                sum(|c| c.buffered_units as u64),
            );
        }
        match &r.first_violation {
            None => println!("0 violations"),
            Some(v) => {
                println!("{} violations; first: {v}", r.violations);
                println!(
                    "replay: pmusim test-protocol --machine {} --procs {procs} --ops {} --lines {} --seed {}{}{}",
                    a.machine.machine,
                    a.ops,
                    a.lines,
                    cfg.seed,
                    if cfg.fault == Fault::None { String::new() } else { format!(" --inject-fault {}", cfg.fault.name()) },
                    a.machine.memctl.as_ref().map_or(String::new(), |m| format!(" --memctl {m}"))
                );
                println!("events before it:");
                for h in &r.history {
                    println!("  {h}");
                }
            }
        }
    }
    Ok(if r.violations == 0 { 0 } else { 1 })
}
