//! The paper-size verification matrix: FFT, LU, OCEAN and RADIX at `--size paper` on
//! `numachine` and `flash` at 1, 16 and 64 processors, through the built binary, one run at a
//! time. Each run must verify, and its references and L2 misses must stay near the figures
//! recorded in `crates/workload/KERNELS.md` ("Paper-size matrix").
//!
//! Long (about 5 minutes on a busy 2-core host), so ignored by default:
//!
//! ```sh
//! nice cargo test --release -p pmusim --test it paper_matrix -- --ignored --nocapture
//! ```
//!
//! `PAPER_MATRIX=ocean,flash-64` runs only some combinations: those matching one of the
//! comma-separated filters, a filter being `-`-separated parts of the tag
//! `kernel-machine-procs` (`ocean`: every OCEAN run; `flash-64`; `lu-numachine-1`).

use crate::common;

use std::time::Instant;

/// Recorded figures: kernel, machine, processors, references, L2 misses (read + write,
/// upgrades included), simulated cycles.
#[rustfmt::skip]
const RECORDED: [(&str, &str, usize, u64, u64, u64); 24] = [
    ("fft",    "numachine",  1,  64_489_516, 1_951_297,   430_339_876),
    ("lu",     "numachine",  1, 137_205_640, 1_080_771,   611_719_433),
    ("ocean",  "numachine",  1, 162_252_764, 5_654_351, 1_175_560_942),
    ("radix",  "numachine",  1,  24_121_143,   800_315,   151_520_457),
    ("fft",    "flash",      1,  64_489_516,   993_098,   331_558_380),
    ("lu",     "flash",      1, 137_205_640,   442_677,   506_037_618),
    ("ocean",  "flash",      1, 162_252_764, 1_324_399,   870_312_472),
    ("radix",  "flash",      1,  24_121_143,   390_303,   113_984_388),
    ("fft",    "numachine", 16,  64_520_896, 1_529_900,    40_287_053),
    ("lu",     "numachine", 16, 137_209_600,   449_867,    51_895_910),
    ("ocean",  "numachine", 16, 154_193_430, 1_860_777,    86_743_216),
    ("radix",  "numachine", 16,  24_238_816,   633_777,    17_172_215),
    ("fft",    "flash",     16,  64_520_896,   728_839,    25_178_561),
    ("lu",     "flash",     16, 137_209_600,    94_709,    40_142_011),
    ("ocean",  "flash",     16, 154_197_604, 1_419_098,    78_534_972),
    ("radix",  "flash",     16,  24_238_819,   277_323,     9_953_375),
    ("fft",    "numachine", 64,  64_621_312, 1_382_352,    24_839_226),
    ("lu",     "numachine", 64, 137_222_272,   599_233,    19_751_060),
    ("ocean",  "numachine", 64, 148_561_375, 4_454_342,   121_782_828),
    ("radix",  "numachine", 64,  24_659_617,   671_927,    14_408_955),
    ("fft",    "flash",     64,  64_621_312,   676_097,     8_848_320),
    ("lu",     "flash",     64, 137_222_272,   168_592,    13_745_825),
    ("ocean",  "flash",     64, 148_622_298, 3_929_950,   155_790_888),
    ("radix",  "flash",     64,  24_659_613,   308_918,     4_319_395),
];

/// References depend only on the program, apart from synchronization (spins, lock retries):
/// they must agree closely. Misses depend on the interleaving, which any timing change moves.
const REFERENCES_TOLERANCE: f64 = 0.01;
const MISSES_TOLERANCE: f64 = 0.15;

fn rel(got: u64, want: u64) -> f64 {
    (got as f64 - want as f64) / want as f64
}

#[test]
#[ignore]
fn paper_size_kernels_verify_on_both_machines_at_1_16_64_processors() {
    if cfg!(debug_assertions) {
        panic!("the paper-size matrix is far too slow unoptimized: run it with --release");
    }
    let only: Vec<String> = std::env::var("PAPER_MATRIX")
        .map(|s| s.split(',').map(str::to_string).collect())
        .unwrap_or_default();
    println!(
        "| kernel | machine | P | verified | references | sim. cycles | L2 misses (read / write) | wall s |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    let mut failures = Vec::new();
    let t_all = Instant::now();
    for (kernel, machine, procs, refs, misses, cycles) in RECORDED {
        let tag = format!("{kernel}-{machine}-{procs}");
        let parts: Vec<&str> = tag.split('-').collect();
        if !only.is_empty()
            && !only
                .iter()
                .any(|o| o.split('-').all(|x| parts.contains(&x)))
        {
            continue;
        }
        let t0 = Instant::now();
        let result = common::run_json(kernel, machine, procs, "paper");
        let wall = t0.elapsed().as_secs_f64();
        let v = match result {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!("{tag}: {e}"));
                continue;
            }
        };
        let t = &v["ground_truth"]["totals"];
        let (rd, wr) = (
            t["read_misses"].as_u64().unwrap(),
            t["write_misses"].as_u64().unwrap(),
        );
        let got_refs = v["run"]["references"].as_u64().unwrap();
        let got_cycles = v["run"]["simulated_cycles"].as_u64().unwrap();
        let verified = v["workload"]["verified"] == true;
        println!(
            "| {kernel} | {machine} | {procs} | {verified} | {got_refs} | {got_cycles} | {} ({rd} / {wr}) | {wall:.1} |",
            rd + wr
        );
        if !verified {
            failures.push(format!("{tag}: not verified: {}", v["workload"]["detail"]));
        }
        let dr = rel(got_refs, refs);
        if dr.abs() > REFERENCES_TOLERANCE {
            failures.push(format!(
                "{tag}: {got_refs} references, recorded {refs} ({:+.2}%)",
                100.0 * dr
            ));
        }
        let dm = rel(rd + wr, misses);
        if dm.abs() > MISSES_TOLERANCE {
            failures.push(format!(
                "{tag}: {} L2 misses, recorded {misses} ({:+.1}%)",
                rd + wr,
                100.0 * dm
            ));
        }
        let dc = rel(got_cycles, cycles);
        if dc.abs() > MISSES_TOLERANCE {
            // Reported, not asserted: timing is the simulator's to change.
            println!(
                "  note: {tag}: {got_cycles} cycles, recorded {cycles} ({:+.1}%)",
                100.0 * dc
            );
        }
    }
    println!("matrix wall time {:.0} s", t_all.elapsed().as_secs_f64());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
