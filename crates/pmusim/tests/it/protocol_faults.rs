//! `pmusim test-protocol --inject-fault NAME`: every fault on every preset is reported as a
//! violation (exit 1) with a replay line that injects the same fault.

use std::process::Command;

#[test]
fn every_fault_is_reported_with_its_replay_line() {
    for fault in [
        "drop-invalidation",
        "drop-ack",
        "reorder-reply",
        "lose-nack-retry",
    ] {
        for (machine, procs) in [
            ("ideal", "4"),
            ("numachine", "8"),
            ("flash", "4"),
            ("cmp", "8"),
        ] {
            let out = Command::new(env!("CARGO_BIN_EXE_pmusim"))
                .args([
                    "test-protocol",
                    "--machine",
                    machine,
                    "--procs",
                    procs,
                    "--ops",
                    "4000",
                    "--lines",
                    "2",
                    "--seed",
                    "11",
                    "--inject-fault",
                    fault,
                ])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(out.status.code(), Some(1), "{fault} on {machine}: {text}");
            let kind = if fault.starts_with("drop-ack") || fault.starts_with("lose") {
                "liveness violated"
            } else {
                "violated at t="
            };
            assert!(text.contains(kind), "{fault} on {machine}: {text}");
            assert!(
                text.contains(&format!(
                    "replay: pmusim test-protocol --machine {machine} --procs {procs} --ops 4000 --lines 2 --seed 11 --inject-fault {fault}"
                )),
                "{fault} on {machine}: {text}"
            );
        }
    }
}
