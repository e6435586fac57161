//! Every injectable protocol fault (issue 17, item 2) is caught by the protocol tester on
//! every preset, and the same runs without the fault are clean.

use machine::config::Preset;
use machine::env::Fault;
use machine::tester::{run, TesterConfig, TesterReport};

const PRESETS: [(&str, usize); 4] = [("ideal", 4), ("numachine", 8), ("flash", 4), ("cmp", 8)];

fn tester(preset: &str, procs: usize, fault: Fault) -> TesterReport {
    let p = Preset::builtin(preset).unwrap().with_procs(procs).unwrap();
    run(
        p,
        &TesterConfig {
            ops: 4_000,
            seed: 11,
            lines: 2,
            fault,
        },
    )
    .unwrap()
}

/// Runs `fault` on every preset; each run must report a violation whose first message
/// starts with one of `kinds`.
fn caught_everywhere(name: &str, kinds: &[&str]) {
    let fault = Fault::by_name(name).unwrap();
    assert_eq!(fault.name(), name);
    for (preset, procs) in PRESETS {
        let clean = tester(preset, procs, Fault::None);
        assert_eq!(
            clean.violations, 0,
            "{preset} without a fault: {:?}",
            clean.first_violation
        );
        let r = tester(preset, procs, fault);
        assert!(r.violations > 0, "{name} on {preset} was not caught: {r:?}");
        let first = r.first_violation.as_deref().unwrap();
        assert!(
            kinds.iter().any(|k| first.starts_with(k)),
            "{name} on {preset}: unexpected first violation {first}"
        );
        assert!(!r.history.is_empty(), "{name} on {preset}: no history");
    }
}

#[test]
fn dropped_invalidation_is_caught_on_every_preset() {
    caught_everywhere(
        "drop-invalidation",
        &[
            "single-writer/multiple-reader violated",
            "data value violated",
        ],
    );
}

#[test]
fn dropped_acknowledgement_is_caught_on_every_preset() {
    caught_everywhere("drop-ack", &["liveness violated"]);
}

#[test]
fn reply_overtaking_a_forward_is_caught_on_every_preset() {
    caught_everywhere(
        "reorder-reply",
        &[
            "single-writer/multiple-reader violated",
            "data value violated",
        ],
    );
}

#[test]
fn lost_nack_retry_is_caught_on_every_preset() {
    caught_everywhere("lose-nack-retry", &["liveness violated"]);
}

#[test]
fn fault_names_round_trip() {
    for n in [
        "none",
        "drop-invalidation",
        "drop-ack",
        "reorder-reply",
        "lose-nack-retry",
    ] {
        assert_eq!(Fault::by_name(n).unwrap().name(), n);
    }
    assert!(Fault::by_name("bogus").is_none());
}
