//! Runs one SPLASH-2 kernel on a preset and prints references, misses (ground truth), simulated
//! cycles and wall time, then the kernel's own verification.
//!
//! `cargo run --release -p workload --example kernels -- KERNEL [SIZE] [PROCS] [PRESET]`
//! (defaults: size `small`, 16 processors, preset `ideal`).

use machine::config::Preset;
use machine::sim::{Machine, Options};
use std::time::Instant;
use workload::{install, Size};

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args.first().map(String::as_str).unwrap_or("fft");
    let size = Size::parse(args.get(1).map(String::as_str).unwrap_or("small"))?;
    let procs: usize = args
        .get(2)
        .map(|s| s.parse().map_err(|e| format!("processors: {e}")))
        .transpose()?
        .unwrap_or(16);
    let preset_name = args.get(3).map(String::as_str).unwrap_or("ideal");
    let preset = Preset::builtin(preset_name)
        .and_then(|p| p.with_procs(procs))
        .map_err(|e| e.to_string())?;
    let mut m = Machine::new(preset, Options::default()).map_err(|e| e.to_string())?;
    let w = install(workload::find(name, size)?, &mut m, None)?;
    let t0 = Instant::now();
    let sum = m.run(None).map_err(|e| e.to_string())?;
    let wall = t0.elapsed().as_secs_f64();
    let v = w.verify();
    let tot = m.state().truth.as_ref().expect("ground truth on").total();
    println!(
        "{name} size={} procs={procs} preset={preset_name}",
        size.name()
    );
    println!("references       {}", sum.references);
    println!(
        "read misses      {} (local {}, remote {})",
        tot.reads(),
        tot.read_local,
        tot.read_remote
    );
    println!(
        "write misses     {} (local {}, remote {}; upgrades {})",
        tot.writes(),
        tot.write_local,
        tot.write_remote,
        tot.upgrades
    );
    println!(
        "miss classes     cold {} coherence {} capacity {}",
        tot.cold, tot.coherence, tot.capacity
    );
    println!("simulated cycles {}", sum.cycles);
    println!(
        "wall time        {wall:.2} s ({:.1} M refs/s)",
        sum.references as f64 / wall / 1e6
    );
    println!(
        "verified         {} — {}",
        if v.verified { "yes" } else { "NO" },
        v.detail
    );
    if v.verified {
        Ok(())
    } else {
        Err("verification failed".into())
    }
}
