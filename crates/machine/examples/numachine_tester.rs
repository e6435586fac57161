//! Runs the random protocol tester on the `numachine` preset and prints the races counted.
//!
//! `cargo run --release -p machine --example numachine_tester -- [procs] [ops] [seed] [hot-lines]`
//! (defaults: 16 processors, 1,000,000 operations, seed 1, procs/2 hot lines).

use machine::env::Fault;
use machine::tester::{run, TesterConfig};
use machine::Preset;

fn main() {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("arguments are numbers"))
        .collect();
    let procs = args.first().copied().unwrap_or(16) as usize;
    let ops = args.get(1).copied().unwrap_or(1_000_000);
    let seed = args.get(2).copied().unwrap_or(1);
    let lines = args.get(3).copied().unwrap_or(procs as u64 / 2).max(1) as usize;
    let preset = Preset::builtin("numachine")
        .and_then(|p| p.with_procs(procs))
        .unwrap_or_else(|e| {
            eprintln!("{e}");
            std::process::exit(2)
        });
    let t0 = std::time::Instant::now();
    let r = run(
        preset,
        &TesterConfig {
            ops,
            seed,
            lines,
            fault: Fault::None,
        },
    )
    .unwrap_or_else(|e| {
        eprintln!("{e}");
        std::process::exit(1)
    });
    println!(
        "numachine {procs} procs, {lines} hot lines, seed {seed}: {} ops in {:.1} s wall; {} simulated cycles ({:.0} per op per processor); violations {}; nacks {}; cancelled upgrades {}; bus errors {}; invalidations {}; interventions {}",
        r.operations,
        t0.elapsed().as_secs_f64(),
        r.cycles,
        r.cycles as f64 * procs as f64 / r.operations as f64,
        r.violations,
        r.nacks,
        r.cancelled_upgrades,
        r.bus_errors,
        r.invalidations,
        r.interventions,
    );
    if let Some(v) = r.first_violation {
        println!("first violation: {v}\n{}", r.history.join("\n"));
        std::process::exit(1);
    }
}
