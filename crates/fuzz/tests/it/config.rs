//! Fuzzing the TOML configurations: machine presets (`--machine FILE`) and NUMAchine monitor
//! configurations (`--monitor-config FILE`, `decode --config FILE`), from the real files
//! mutated at the byte and token level and with random keys and values inserted.

use fuzz::{mutate, mutate_text, run, Outcome, Rng};
use machine::config::{Preset, BUILTIN};
use machine::sim::{Machine, Options};
use monitor::numachine::config;

const TOML_WORDS: &[&str] = &[
    "=",
    "true",
    "false",
    "\"\"",
    "\"x\"",
    "[]",
    "{}",
    "[caches]",
    "[[counter]]",
    "[sram]",
    "nan",
    "inf",
    "-0",
    "1e400",
    "0x10",
    "18446744073709551616",
    "\"ideal\"",
    "\"flash\"",
    "\"numachine\"",
    "\"exclusive\"",
];

/// A random `key = value` line with a plausible key (one from `text`, or made up).
fn random_assignment(rng: &mut Rng, text: &str) -> String {
    let keys: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k.trim()))
        .filter(|k| !k.is_empty() && !k.starts_with('#'))
        .collect();
    let key = if !keys.is_empty() && rng.chance(3, 4) {
        rng.pick(&keys).to_string()
    } else {
        rng.pick(&["bogus", "size_bytes", "procs", "event", "a.b.c", "\"\""])
            .to_string()
    };
    let value = match rng.below(5) {
        0 => rng.interesting().to_string(),
        1 => format!("-{}", rng.interesting()),
        2 => format!("{}.5", rng.below(100)),
        3 => rng.pick(TOML_WORDS).to_string(),
        _ => format!(
            "\"{}\"",
            rng.pick(&["", "x", "PAPI_TOT_CYC", "read-any", "list.0"])
        ),
    };
    format!("{key} = {value}")
}

/// One of `texts` mutated: token edits, inserted assignments, byte mutations.
fn mutated_toml(rng: &mut Rng, texts: &[&str]) -> String {
    let base = *rng.pick(texts);
    let mut t = match rng.below(3) {
        0 => base.to_string(),
        _ => mutate_text(rng, base, TOML_WORDS),
    };
    if rng.chance(1, 2) {
        let mut lines: Vec<String> = t.lines().map(str::to_string).collect();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(lines.len() as u64 + 1) as usize;
            lines.insert(at, random_assignment(rng, base));
        }
        t = lines.join("\n");
    }
    if rng.chance(1, 4) {
        let mut b = t.into_bytes();
        mutate(rng, &mut b);
        t = String::from_utf8_lossy(&b).into_owned();
    }
    t
}

#[test]
fn mutated_presets() {
    let texts: Vec<&str> = BUILTIN.iter().map(|(_, t)| *t).collect();
    run(
        "preset",
        |rng| mutated_toml(rng, &texts),
        |text| {
            let r = Preset::parse(text, "fuzz.toml");
            match &r {
                // An accepted preset builds a machine: validation is what stands between a
                // file and the simulator's allocations. Only up to 64 processors: a valid
                // 1000-processor machine takes seconds and hundreds of MB to build (its
                // bounds are machine::config's MAX_*_CACHE_LINES, tested there), which would
                // make the longer check a memory-bandwidth test (fuzz case preset 239327).
                Ok(p) if p.procs <= 64 => {
                    if let Err(e) = Machine::new(p.clone(), Options::default()) {
                        assert!(!e.0.is_empty());
                    }
                }
                Ok(_) => {}
                Err(e) => assert!(e.0.starts_with("fuzz.toml: "), "{e}"),
            }
            Outcome::from(&r)
        },
    );
}

const MONITOR_CONFIGS: &[&str] = &[
    include_str!("../../../../docs/numachine/cache-profile.toml"),
    include_str!("../../../../docs/numachine/counters-sram.toml"),
    include_str!("../../../../docs/numachine/disabled.toml"),
    include_str!("../../../../docs/numachine/locality.toml"),
    include_str!("../../../../docs/numachine/phase-timing.toml"),
];

#[test]
fn mutated_monitor_configurations() {
    let resolve = |name: &str| (name == "list.0").then_some((0x10_0000u64, 0x1000u64));
    run(
        "monitor-config",
        |rng| mutated_toml(rng, MONITOR_CONFIGS),
        |text| {
            let r = config::compile(text, "fuzz.toml", Some(&resolve));
            match &r {
                Ok(setup) => {
                    // Every register the configuration sets decodes (decode --config prints
                    // them all).
                    for (reg, v) in setup.regs.list() {
                        monitor::numachine::regs::describe(reg, v as u64).unwrap_or_else(|e| {
                            panic!("compiled {reg:?} = {v:#x} does not decode: {e}")
                        });
                    }
                }
                Err(e) => assert!(names_file_or_field(e), "{e}"),
            }
            Outcome::from(&r)
        },
    );
}

/// A monitor configuration error starts with the file (TOML syntax and unknown keys) or with
/// the field it is about (`counter[2].event: ...`, `sram.event: ...`). (The CLI prints the
/// second kind without the file name today; see the fuzz crate's README entry.)
fn names_file_or_field(e: &str) -> bool {
    if e.starts_with("fuzz.toml: ") {
        return true;
    }
    let Some((place, _)) = e.split_once(": ") else {
        return false;
    };
    !place.is_empty()
        && place
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.[]-".contains(c))
}
