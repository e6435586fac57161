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
    let truth = m.state().truth.as_ref().expect("ground truth on");
    let mut structs: Vec<_> = truth.per_struct.iter().collect();
    structs.sort_by_key(|(_, s)| std::cmp::Reverse(s.misses()));
    for (id, s) in structs.iter().take(8) {
        println!(
            "  structure {:<14} reads {:>9} (remote {:>8})  writes {:>9} (remote {:>8})",
            m.state().map.name_of(**id),
            s.reads(),
            s.read_remote,
            s.writes(),
            s.write_remote
        );
    }
    let mut procs: Vec<_> = truth.per_procedure.iter().collect();
    procs.sort_by_key(|(_, s)| std::cmp::Reverse(s.misses()));
    for (id, s) in procs.iter().take(8) {
        println!(
            "  procedure {:<14} reads {:>9} (remote {:>8})  writes {:>9} (remote {:>8})",
            m.state().procedures[**id as usize],
            s.reads(),
            s.read_remote,
            s.writes(),
            s.write_remote
        );
    }
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
