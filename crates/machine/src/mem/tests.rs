//! The memory controller in every memory system (issue 16 item 1): data stays right with the
//! buffer on at every watermark, with read-ahead on and off; no writes are left at the end; no
//! drain deadlocks; and without `[memctl]` nothing changes.

use crate::config::Preset;
use crate::mem::config::MemCtlCfg;
use crate::tester::{self, TesterConfig};

/// The protocol tester's operations per run here (`PMUSIM_MEMCTL_OPS` for the long check:
/// README, "Longer checks").
fn ops() -> u64 {
    std::env::var("PMUSIM_MEMCTL_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000)
}

/// Every preset with a memory system (all of them: `power2` is `ideal` with 256-byte lines,
/// `cmp` and `bgq` the shared-L2 chip with 128-byte memory lines).
const PRESETS: [&str; 7] = [
    "ideal",
    "numachine",
    "flash",
    "elan",
    "power2",
    "cmp",
    "bgq",
];

/// `name` with `procs` processors (`elan`: its one) and its controller (the preset's, or the
/// default) changed by `spec`.
fn with_ctl(name: &str, procs: usize, spec: &str) -> Preset {
    let mut p = Preset::builtin(name).unwrap();
    if name != "elan" {
        p = p.with_procs(procs).unwrap();
    }
    if let Some(level) = p.caches.shared.first_mut() {
        // `cmp`, `bgq`: a shared L2 of two lines per slice, so that dirty lines reach memory
        // all the time (the tester's hot lines would never leave a 4 MiB or 32 MiB L2).
        level.cache.size_bytes = level.slices as u64 * level.cache.line_bytes * 2;
        level.cache.assoc = 2;
    }
    let line = p.memory_line_bytes();
    p.memctl = Some(MemCtlCfg::apply_spec(p.memctl.take(), spec, line).unwrap());
    p
}

/// 0 violations (data value, single writer, liveness, nothing left buffered, DRAM equal to
/// the homes' values after the drain) on every preset at watermarks 1, 8, 16 and 32 of a
/// 32-line buffer, read-ahead on and off; and the buffer really was exercised: write hits,
/// read merges and (with read-ahead) read-buffer hits happened, and every entry opened was
/// written to DRAM exactly once.
#[test]
fn tester_finds_no_violation_at_any_watermark_on_every_preset() {
    let ops = ops();
    for name in PRESETS {
        for wm in [1, 8, 16, 32] {
            for ra in [true, false] {
                let spec = format!(
                    "entries=32,watermark={wm},read_ahead={}",
                    if ra { "on" } else { "off" }
                );
                let cfg = TesterConfig {
                    ops,
                    seed: 7,
                    lines: 16,
                    fault: crate::fault::Fault::None,
                };
                let r = tester::run(with_ctl(name, 8, &spec), &cfg).unwrap();
                let what = format!("{name} {spec}");
                assert_eq!(r.violations, 0, "{what}: {:?}", r.first_violation);
                assert!(!r.controllers.is_empty(), "{what}");
                let sum = |f: fn(&crate::mem::controller::ControllerReport) -> u64| -> u64 {
                    r.controllers.iter().map(f).sum()
                };
                let b = |f: fn(&crate::mem::buffer::BufferStats) -> u64| -> u64 {
                    r.controllers.iter().map(|c| f(&c.buffer)).sum()
                };
                assert!(
                    r.controllers.iter().all(|c| c.buffered_units == 0),
                    "{what}"
                );
                assert_eq!(b(|s| s.new_entries), b(|s| s.dram_writes), "{what}");
                assert_eq!(sum(|c| c.dram.writes), b(|s| s.dram_writes), "{what}");
                assert_eq!(sum(|c| c.dram.reads), b(|s| s.dram_reads), "{what}");
                assert!(b(|s| s.writes) > 100, "{what}: writes reached memory");
                if wm > 1 {
                    assert!(b(|s| s.write_hits) > 0, "{what}: collapses happened");
                    assert!(
                        b(|s| s.read_merges) > 0,
                        "{what}: reads merged buffered data"
                    );
                }
                if ra {
                    assert!(b(|s| s.read_ahead_fetches) > 0, "{what}");
                    assert_eq!(
                        b(|s| s.read_ahead_fetches),
                        b(|s| s.read_ahead_used) + b(|s| s.read_ahead_unused),
                        "{what}: every read-ahead line is used or dropped"
                    );
                } else {
                    assert_eq!(b(|s| s.read_ahead_fetches), 0, "{what}");
                }
            }
        }
    }
}

/// A buffer that loses data is caught: the tester reports a data-value violation when the
/// controller's read merge is bypassed (reads return DRAM only). This is the test of the test.
#[test]
fn a_buffer_that_drops_its_merge_is_caught() {
    crate::mem::buffer::timed::BREAK_READ_MERGE.with(|b| b.set(true));
    let cfg = TesterConfig {
        ops: 5_000,
        seed: 7,
        lines: 16,
        fault: crate::fault::Fault::None,
    };
    let runs: Vec<_> = ["ideal", "power2", "cmp", "bgq"]
        .into_iter()
        .map(|name| {
            let p = with_ctl(name, 4, "entries=32,watermark=32");
            (name, tester::run(p, &cfg).unwrap())
        })
        .collect();
    crate::mem::buffer::timed::BREAK_READ_MERGE.with(|b| b.set(false));
    for (name, r) in runs {
        assert!(r.violations > 0, "{name}");
        let v = r.first_violation.unwrap();
        assert!(
            v.contains("value") || v.contains("memory controller"),
            "{name}: {v}"
        );
    }
}

/// Without `[memctl]` (or with `enabled = false`) no controller exists and a run's cycles are
/// those of the fixed timing; with it, the memory path changes the run.
#[test]
fn off_unless_enabled() {
    let cfg = TesterConfig {
        ops: 3_000,
        seed: 3,
        lines: 8,
        fault: crate::fault::Fault::None,
    };
    for name in ["ideal", "numachine", "flash", "power2", "cmp", "bgq"] {
        let mut plain = with_ctl(name, 4, "on");
        plain.memctl = None;
        // One controller per home; on `cmp` and `bgq` one per memory controller of the chip.
        let homes = plain
            .cmp
            .as_ref()
            .map_or(plain.nodes(), |c| c.memory_controllers as usize);
        let base = tester::run(plain, &cfg).unwrap();
        assert!(base.controllers.is_empty());
        let mut off = with_ctl(name, 4, "on");
        off.memctl.as_mut().unwrap().enabled = false;
        let r = tester::run(off, &cfg).unwrap();
        assert!(r.controllers.is_empty());
        assert_eq!(
            r.cycles, base.cycles,
            "{name}: disabled section changes nothing"
        );
        let on = tester::run(with_ctl(name, 4, "on"), &cfg).unwrap();
        assert_eq!(on.controllers.len(), homes, "{name}");
        assert_ne!(
            on.cycles, base.cycles,
            "{name}: the controller times memory"
        );
    }
}
