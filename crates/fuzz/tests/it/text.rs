//! Fuzzing the text parsers: lackey output (`trace convert`, `.lackey` replays) and range
//! files (`--bins`). Inputs are valid texts mutated byte- and token-wise, and random lines.

use fuzz::{mutate, mutate_text, run, Outcome, Rng};
use workload::trace::{lackey, symbols, Error};

fn lackey_line(rng: &mut Rng) -> String {
    let addr = if rng.chance(1, 3) {
        rng.interesting()
    } else {
        0x4000 + rng.below(0x1000)
    };
    let size = *rng.pick(&[1u64, 2, 4, 8, 16]);
    match rng.below(8) {
        0 => format!("I  {addr:08x},{size}"),
        1 => format!(" L {addr:08x},{size}"),
        2 => format!(" S {addr:08x},{size}"),
        3 => format!(" M {addr:08x},{size}"),
        4 => format!("=={}== Command: ./a.out", rng.below(100_000)),
        5 => format!("=={}== ", rng.interesting()),
        6 => String::new(),
        _ => format!("I  {addr:x},{}", rng.interesting()),
    }
}

fn lackey_text(rng: &mut Rng) -> Vec<u8> {
    let mut s = String::new();
    for _ in 0..rng.below(40) {
        s.push_str(&lackey_line(rng));
        s.push('\n');
    }
    let mut b = if rng.chance(1, 2) {
        mutate_text(rng, &s, &["I", "L", "S", "M", "==1==", ",", "0x10", ""]).into_bytes()
    } else {
        s.into_bytes()
    };
    if rng.chance(1, 2) {
        mutate(rng, &mut b);
    }
    b
}

#[test]
fn mutated_lackey_text() {
    run("lackey", lackey_text, |text| {
        let mut records = 0u64;
        let r = lackey::convert(&text[..], "fuzz.lackey", Some(0x4010), |_, _| {
            records += 1;
            Ok(())
        });
        match &r {
            Ok(st) => {
                // Every data reference became one record, plus at most one trailing
                // instructions record.
                let refs = st.references();
                assert!(
                    records == refs || records == refs + 1,
                    "{st:?}, {records} records"
                );
                assert!(st.lines <= text.len() as u64 + 1);
            }
            Err(e) => {
                let Error::Parse { source, line, .. } = e else {
                    panic!("not a parse error: {e}");
                };
                assert_eq!(source, "fuzz.lackey");
                let lines = text.iter().filter(|&&b| b == b'\n').count() as u64 + 1;
                assert!(*line >= 1 && *line <= lines, "line {line} of {lines}: {e}");
                assert!(
                    e.to_string().starts_with(&format!("fuzz.lackey:{line}")),
                    "{e}"
                );
            }
        }
        Outcome::from(&r)
    });
}

fn ranges_text(rng: &mut Rng) -> String {
    let mut s = String::new();
    for _ in 0..rng.below(12) {
        match rng.below(5) {
            0 => s.push_str("# a comment\n"),
            1 => s.push('\n'),
            _ => s.push_str(&format!(
                "{:#x} {} {}\n",
                rng.interesting(),
                rng.interesting(),
                rng.pick(&["grid", "a b", "x#y", "é", ""])
            )),
        }
    }
    let words = ["0x", "-1", "0x_", "_", "#", "18446744073709551615", "0XFF"];
    let t = mutate_text(rng, &s, &words);
    if rng.chance(1, 3) {
        let mut b = t.into_bytes();
        mutate(rng, &mut b);
        String::from_utf8_lossy(&b).into_owned()
    } else {
        t
    }
}

#[test]
fn mutated_range_files() {
    run("ranges", ranges_text, |text| {
        let r = symbols::parse_ranges(text, "fuzz.ranges");
        match &r {
            Ok(regions) => {
                for g in regions {
                    assert!(g.len > 0 && g.start.checked_add(g.len).is_some(), "{g:?}");
                    assert!(!g.name.is_empty());
                }
            }
            Err(e) => {
                let Error::Parse { source, line, .. } = e else {
                    panic!("not a parse error: {e}");
                };
                assert_eq!(source, "fuzz.ranges");
                assert!(*line >= 1 && *line <= text.lines().count() as u64, "{e}");
            }
        }
        Outcome::from(&r)
    });
}
