//! Runs the random protocol tester on the `flash` preset and prints what happened.
//!
//! `cargo run --release -p machine --example flash_tester -- [procs] [ops] [seed] [lines]`
//! (defaults: 16 processors, 10,000,000 operations, seed 1, 8 hot lines).

use machine::env::Fault;
use machine::tester::{run, TesterConfig};
use machine::Preset;
use std::time::Instant;

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| {
            a.replace('_', "").parse().unwrap_or_else(|_| {
                eprintln!("flash_tester: `{a}` is not a number");
                std::process::exit(2)
            })
        })
        .collect();
    let procs = args.first().copied().unwrap_or(16) as usize;
    let ops = args.get(1).copied().unwrap_or(10_000_000);
    let seed = args.get(2).copied().unwrap_or(1);
    let lines = args.get(3).copied().unwrap_or(8) as usize;
    let preset = match Preset::builtin("flash").and_then(|p| p.with_procs(procs)) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("flash_tester: {e}");
            std::process::exit(2)
        }
    };
    let cfg = TesterConfig {
        ops,
        seed,
        lines,
        fault: Fault::None,
    };
    let start = Instant::now();
    let r = match run(preset, &cfg) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("flash_tester: {e}");
            std::process::exit(1)
        }
    };
    let wall = start.elapsed().as_secs_f64();
    println!(
        "flash tester: {procs} nodes, {} operations, seed {seed}, {lines} hot lines",
        r.operations
    );
    println!(
        "wall time          {wall:.2} s ({:.0} ops/s)",
        r.operations as f64 / wall
    );
    println!("simulated cycles   {}", r.cycles);
    println!("violations         {}", r.violations);
    println!("NACKs received     {}", r.nacks);
    println!("invalidations      {}", r.invalidations);
    println!("interventions      {}", r.interventions);
    println!("cancelled upgrades {}", r.cancelled_upgrades);
    for (n, v) in &r.protocol {
        println!("protocol {n:<24} {v}");
    }
    if let Some(v) = &r.first_violation {
        println!("first violation: {v}");
        for h in &r.history {
            println!("  {h}");
        }
        std::process::exit(1);
    }
}
