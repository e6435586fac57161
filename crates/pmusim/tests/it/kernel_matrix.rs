//! The four SPLASH-2 kernels verify on the machine presets (numachine and flash at 1, 16 and 64
//! processors; cmp at its 8 cores with 1, 2 and 4 contexts each; bgq with 64 threads on 16
//! cores x 4), run
//! through the built binary as a user runs them (`pmusim run K -m M -p P -s S --json`): the
//! exit status is 0 and the JSON says `verified: true`.
//!
//! `--size test` runs by default (about half a minute in all, most of it OCEAN on 64
//! processors); `--size small` is ignored by default (a minute or two with an optimized build):
//!
//! ```sh
//! cargo test --release -p pmusim --test it kernel_matrix -- --ignored --nocapture
//! ```
//!
//! `--size paper` is `paper_matrix.rs`.

use crate::common;

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

/// Every built-in workload (`pmusim list workloads`).
const WORKLOADS: [&str; 12] = [
    "fft",
    "lu",
    "radix",
    "ocean",
    "false-sharing",
    "producer-consumer",
    "lock",
    "migratory",
    "stream",
    "pointer-chase",
    "informing",
    "hits",
];

/// Runs `workload` at test size on numachine with `procs` processors of `tpc` hardware
/// contexts and `threads` software threads. Returns `None` when the workload refuses the
/// count (exit 2, the message naming `--threads`), else checks that it verified and that the
/// ground truth's levels agree: the software threads' instructions and cycles sum to each
/// processor's, and so do the hardware contexts'. Returns a failure description.
fn run_threads(workload: &str, procs: usize, tpc: usize, threads: usize) -> Option<String> {
    let (p, t, n) = (procs.to_string(), tpc.to_string(), threads.to_string());
    let args = [
        "run",
        workload,
        "-s",
        "test",
        "-p",
        &p,
        "--threads-per-core",
        &t,
        "--threads",
        &n,
        "--json",
    ];
    let tag = format!("{workload} -p {procs} --threads-per-core {tpc} --threads {threads}");
    let (c, o, e) = common::pmusim(&args);
    if c == 2 {
        return (!e.contains(&format!("--threads {threads}")))
            .then(|| format!("{tag}: refused without naming --threads: {e}"));
    }
    if c != 0 {
        return Some(format!("{tag}: exit {c}: {e}"));
    }
    let v: serde_json::Value = serde_json::from_str(&o).expect("JSON document");
    if v["workload"]["verified"] != true {
        return Some(format!("{tag}: not verified: {}", v["workload"]["detail"]));
    }
    let gt = &v["ground_truth"];
    let shown = threads > procs || tpc > 1;
    if !shown {
        return gt
            .get("software_threads")
            .map(|_| format!("{tag}: per-thread sections with one thread per processor"));
    }
    let procs_v = gt["processors"].as_array().unwrap();
    for key in ["instructions", "cycles", "references"] {
        for level in ["software_threads", "hardware_contexts"] {
            let mut sums = vec![0u64; procs];
            for x in gt[level].as_array().unwrap() {
                sums[x["proc"].as_u64().unwrap() as usize] += x[key].as_u64().unwrap();
            }
            for (q, s) in sums.iter().enumerate() {
                if *s != procs_v[q][key].as_u64().unwrap() {
                    return Some(format!(
                        "{tag}: {level}' {key} on processor {q} sum to {s}, the processor has {}",
                        procs_v[q][key]
                    ));
                }
            }
        }
    }
    let listed = gt["software_threads"].as_array().unwrap().len();
    (listed != threads).then(|| format!("{tag}: {listed} software threads listed"))
}

fn sweep(cases: &[(usize, usize, Vec<usize>)], workloads: &[&str]) {
    let mut failures = Vec::new();
    let mut ran = 0;
    for w in workloads {
        for (procs, tpc, counts) in cases {
            for &n in counts {
                ran += 1;
                if let Some(f) = run_threads(w, *procs, *tpc, n) {
                    failures.push(f);
                }
            }
        }
    }
    println!("{ran} runs, {} failures", failures.len());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Issue 13's figure "threads_per_core = 2 and 4 on numachine: all four kernels verify at
/// test size", with as many software threads as hardware contexts (every context busy), on
/// 2 processors (16 in the ignored full sweep below).
#[test]
fn kernels_verify_with_2_and_4_hardware_contexts_per_core() {
    sweep(&[(2, 2, vec![4]), (2, 4, vec![8])], &KERNELS);
}

/// `--threads` on every workload over a representative set of counts around the 4 hardware
/// contexts of 2 two-context processors: 1, fewer than, more than the contexts,
/// and 4x (verified, or refused with exit 2 naming --threads).
#[test]
fn threads_sweep_representative_counts_on_every_workload() {
    sweep(&[(2, 2, vec![1, 3, 5, 16])], &WORKLOADS);
}

/// The full sweep of issue 13's figure: every workload, every `--threads` from 1 to 4x the
/// hardware contexts, on numachine at 16 processors of 1 context and at 4 processors of 4,
/// and the four kernels with 2 and 4 contexts on all 16 processors (about 1,600 runs; use
/// --release).
#[test]
#[ignore]
fn threads_sweep_every_count_up_to_4x_the_contexts() {
    sweep(&[(16, 2, vec![32]), (16, 4, vec![64])], &KERNELS);
    sweep(
        &[(16, 1, (1..=64).collect()), (4, 4, (1..=64).collect())],
        &WORKLOADS,
    );
}

/// Issue 13 item 5's figure: every workload (the four kernels and the micro-kernels) verifies
/// at test size on `cmp` (8 cores, a shared L2 in 8 slices on a crossbar), with 1, 2 and 4
/// hardware contexts per core (as many software threads as contexts); and the ground truth's
/// per-slice counts account for every transaction: the slices' reads and writes are the
/// read, read-exclusive and upgrade transactions (each served once, NACKed attempts aside),
/// their write-backs the write-backs.
#[test]
fn every_workload_verifies_on_cmp_with_1_2_4_contexts_per_core() {
    let mut failures = Vec::new();
    for tpc in ["1", "2", "4"] {
        for w in WORKLOADS {
            if tpc != "1" && !KERNELS.contains(&w) {
                continue;
            }
            let tag = format!("{w} -m cmp --threads-per-core {tpc}");
            let args = [
                "run",
                w,
                "-m",
                "cmp",
                "-s",
                "test",
                "--threads-per-core",
                tpc,
            ];
            let (c, o, e) = common::pmusim(&[&args[..], &["--json"]].concat());
            if c != 0 {
                failures.push(format!("{tag}: exit {c}: {e}"));
                continue;
            }
            let v: serde_json::Value = serde_json::from_str(&o).expect("JSON document");
            if v["workload"]["verified"] != true {
                failures.push(format!("{tag}: not verified: {}", v["workload"]["detail"]));
            }
            let gt = &v["ground_truth"];
            let slices = gt["shared_slices"]["slices"].as_array().unwrap();
            assert_eq!(slices.len(), 8, "{tag}");
            let sum = |k: &str| slices.iter().map(|s| s[k].as_u64().unwrap()).sum::<u64>();
            let tx = |k: &str| gt["transactions"][k].as_u64().unwrap_or(0);
            let requests = tx("read") + tx("read-exclusive") + tx("upgrade");
            if sum("reads") + sum("writes") != requests || sum("writebacks") != tx("writeback") {
                failures.push(format!(
                    "{tag}: slices saw {} reads + {} writes, {} write-backs; transactions {:?}",
                    sum("reads"),
                    sum("writes"),
                    sum("writebacks"),
                    gt["transactions"]
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Issue 14's figure: the four kernels verify on `bgq` with 64 software threads on its 16
/// program cores x 4 hardware threads (`-p 16 --threads 64`: 17 cores, the last one the
/// system's, left idle); the 16 slices' ground truth accounts for every transaction as on
/// `cmp` (reads and writes = read, read-exclusive and upgrade transactions; write-backs =
/// write-backs); and the write-through L1 D issues read-exclusives and upgrades only for value
/// stores and atomics, fewer than its reads. About a minute with a debug build (OCEAN's
/// barriers with four threads a core).
#[test]
fn kernels_verify_on_bgq_with_64_threads_on_16_cores_x_4() {
    let mut failures = Vec::new();
    for w in KERNELS {
        let tag = format!("{w} -m bgq -p 16 --threads 64");
        let args = [
            "run",
            w,
            "-m",
            "bgq",
            "-p",
            "16",
            "--threads",
            "64",
            "-s",
            "test",
            "--json",
        ];
        let (c, o, e) = common::pmusim(&args);
        if c != 0 {
            failures.push(format!("{tag}: exit {c}: {e}"));
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(&o).expect("JSON document");
        if v["workload"]["verified"] != true {
            failures.push(format!("{tag}: not verified: {}", v["workload"]["detail"]));
        }
        assert_eq!(v["machine"]["procs"], 17, "{tag}");
        let gt = &v["ground_truth"];
        let procs = gt["processors"].as_array().unwrap();
        assert_eq!(procs[16]["instructions"], 0, "{tag}: the system's core ran");
        assert!(
            procs[..16]
                .iter()
                .all(|p| p["instructions"].as_u64().unwrap() > 0),
            "{tag}"
        );
        let slices = gt["shared_slices"]["slices"].as_array().unwrap();
        assert_eq!(slices.len(), 16, "{tag}");
        let sum = |k: &str| slices.iter().map(|s| s[k].as_u64().unwrap()).sum::<u64>();
        let tx = |k: &str| gt["transactions"][k].as_u64().unwrap_or(0);
        let requests = tx("read") + tx("read-exclusive") + tx("upgrade");
        if sum("reads") + sum("writes") != requests || sum("writebacks") != tx("writeback") {
            failures.push(format!(
                "{tag}: slices saw {} reads + {} writes, {} write-backs; transactions {:?}",
                sum("reads"),
                sum("writes"),
                sum("writebacks"),
                gt["transactions"]
            ));
        }
        if tx("read-exclusive") + tx("upgrade") >= tx("read") {
            failures.push(format!(
                "{tag}: a write-through L1 D took lines for writing as often as it read them: {:?}",
                gt["transactions"]
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
