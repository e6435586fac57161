//! Fuzzing `pmusim decode`: every register with random values, and random register names and
//! value strings.

use fuzz::{run, Outcome, Rng};
use monitor::numachine::regs::{describe, parse_u64, Reg};

#[test]
fn every_register_random_values() {
    run(
        "decode-values",
        |rng| {
            let reg = *rng.pick(&Reg::ALL);
            // Defined bits only half of the time, so that values pass the reserved-bit check.
            let v = match rng.below(3) {
                0 => rng.interesting(),
                1 => rng.u64() & 0xffff_ffff,
                _ => (rng.u64() as u32 & reg.defined_mask()) as u64,
            };
            (reg, v)
        },
        |&(reg, v)| {
            let r = describe(reg, v);
            match &r {
                Ok(fields) => {
                    assert!(v <= u32::MAX as u64);
                    // Each field named is one of the register's (the CLI looks them up), and
                    // the fields put back together give the value.
                    let mut back = 0u32;
                    for (name, x, words) in fields {
                        let f = reg
                            .fields()
                            .iter()
                            .find(|f| f.name == name)
                            .unwrap_or_else(|| panic!("{reg:?}: unknown field {name}"));
                        back = f.put(back, *x);
                        assert!(!words.is_empty(), "{reg:?}.{name}: no description");
                    }
                    assert_eq!(back as u64, v, "{reg:?}");
                }
                Err(e) => assert!(e.to_string().contains(reg.acronym()), "{e}"),
            }
            Outcome::from(&r)
        },
    );
}

fn random_word(rng: &mut Rng) -> String {
    let n = rng.below(12) as usize;
    let alphabet = b"0123456789abcdefxXbB_ -+PRWCFGMSAEhilo\xc3\xa9";
    let bytes: Vec<u8> = (0..n).map(|_| *rng.pick(alphabet)).collect();
    let s = String::from_utf8_lossy(&bytes).into_owned();
    match rng.below(4) {
        0 => rng.pick(&Reg::ALL).acronym().to_string(),
        1 => format!("{:#x}", rng.interesting()),
        _ => s,
    }
}

#[test]
fn random_register_names_and_values() {
    run(
        "decode-args",
        |rng| (random_word(rng), random_word(rng)),
        |(r, v)| {
            let reg = Reg::parse(r);
            let val = parse_u64(v);
            if let Err(e) = &reg {
                assert!(!e.to_string().is_empty());
            }
            if let Err(e) = &val {
                assert!(e.contains(v.as_str()), "{e}");
            }
            let res = match (reg, val) {
                (Ok(reg), Ok(v)) => describe(reg, v).map(|_| ()).map_err(|e| e.to_string()),
                _ => Err(String::new()),
            };
            Outcome::from(&res)
        },
    );
}
