//! The four SPLASH-2 kernels verify on both machine presets at 1, 16 and 64 processors, run
//! through the built binary as a user runs them (`pmusim run K -m M -p P -s S --json`): the
//! exit status is 0 and the JSON says `verified: true`.
//!
//! `--size test` runs by default (about half a minute in all, most of it OCEAN on 64
//! processors); `--size small` is ignored by default (a minute or two with an optimized build):
//!
//! ```sh
//! cargo test --release -p pmusim --test kernel_matrix -- --ignored --nocapture
//! ```
//!
//! `--size paper` is `tests/paper_matrix.rs`.

mod common;

use std::time::Instant;

const KERNELS: [&str; 4] = ["fft", "lu", "ocean", "radix"];
const PROCS: [usize; 3] = [1, 16, 64];

/// Runs every kernel on `machine` at 1, 16 and 64 processors; panics listing every run that
/// failed or did not verify.
fn verify_all(machine: &str, size: &str) {
    let mut failures = Vec::new();
    for procs in PROCS {
        for kernel in KERNELS {
            let t0 = Instant::now();
            let tag = format!("{kernel} on {machine}, {procs} processors, --size {size}");
            let v = match common::run_json(kernel, machine, procs, size) {
                Ok(v) => v,
                Err(e) => {
                    failures.push(format!("{tag}: {e}"));
                    continue;
                }
            };
            let verified = v["workload"]["verified"] == true;
            println!(
                "{tag}: verified {verified}, {} references, {} cycles, {:.1} s",
                v["run"]["references"],
                v["run"]["simulated_cycles"],
                t0.elapsed().as_secs_f64()
            );
            if !verified {
                failures.push(format!("{tag}: not verified: {}", v["workload"]["detail"]));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn kernels_verify_at_test_size_on_numachine_at_1_16_64_processors() {
    verify_all("numachine", "test");
}

#[test]
fn kernels_verify_at_test_size_on_flash_at_1_16_64_processors() {
    verify_all("flash", "test");
}

#[test]
#[ignore]
fn kernels_verify_at_small_size_on_both_machines_at_1_16_64_processors() {
    if cfg!(debug_assertions) {
        eprintln!("note: --size small is slow unoptimized; --release is advised");
    }
    verify_all("numachine", "small");
    verify_all("flash", "small");
}
