//! The POWER2 monitor's configuration file (`--monitor FILE.toml`, examples in `docs/power2/`),
//! with symbolic names, compiled to the MMCR and IMR values a program would write.
//!
//! ```toml
//! monitor = "power2"
//! mode = "user"              # all | user | supervisor | none (MMCR bits 29-30)
//! marked = true              # count only marked processes (bit 28)
//! interrupt = false          # PMIE (bit 16)
//! freeze_on_overflow = false # FOO (bit 17)
//! frozen = false             # FREEZE (bit 31) at start
//! [groups]                   # per unit: a group number, a PAPI preset name, or event names
//! FPU = 0
//! FXU = ["l1d-miss", "dtlb-miss"]   # the lowest group counting all of them
//! ICU = "PAPI_BR_TKN"
//! SCU = 15                   # the special exception: the FXU's companion group
//! [imr]
//! opcode = "fp"              # an instruction class name or a number
//! mask = 0xff
//! ```

use super::events::{Sig, Unit, PAPI, TABLE};
use super::regs::{self, Imr, Mmcr};
use super::Setup;
use machine::cpu::op::Op;
use toml::Value;

/// The built-in configuration (`--monitor power2`): group 0 of every unit (the PAPI P2SC
/// presets' group), counting user and supervisor state, every process.
pub fn default_setup() -> Setup {
    Setup::default()
}

/// Compiles a configuration file's text; errors name the file and key.
pub fn compile(text: &str, src: &str) -> Result<Setup, String> {
    let v: toml::Table = toml::from_str(text).map_err(|e| format!("{src}: {e}"))?;
    compile_table(&v, src)
}

/// Compiles a configuration file's parsed table (see [`compile`]).
pub fn compile_table(v: &toml::Table, src: &str) -> Result<Setup, String> {
    let mut m = Mmcr(0);
    let mut imr = Imr::default();
    for (k, val) in v {
        let at = |what: &str| format!("{src}: {k}: {what}");
        match k.as_str() {
            "monitor" => {}
            "mode" => {
                let bits = match val.as_str() {
                    Some("all") => 0,
                    Some("user") => regs::NOSUP,
                    Some("supervisor") => regs::NOPROB,
                    Some("none") => regs::NOPROB | regs::NOSUP,
                    _ => {
                        return Err(at(&format!(
                            "expected \"all\", \"user\", \"supervisor\" or \"none\", found {val}"
                        )))
                    }
                };
                m.0 |= bits;
            }
            "marked" | "interrupt" | "freeze_on_overflow" | "frozen" => {
                let b = val
                    .as_bool()
                    .ok_or_else(|| at(&format!("expected true or false, found {val}")))?;
                let bit = match k.as_str() {
                    "marked" => regs::MARKED,
                    "interrupt" => regs::PMIE,
                    "freeze_on_overflow" => regs::FOO,
                    _ => regs::FREEZE,
                };
                if b {
                    m.0 |= bit;
                }
            }
            "groups" => {
                let t = val
                    .as_table()
                    .ok_or_else(|| at("expected a table of units"))?;
                for (u, g) in t {
                    let unit = Unit::parse(u).ok_or_else(|| {
                        format!("{src}: groups.{u}: not a unit (FPU, FXU, ICU, SCU)")
                    })?;
                    let group = group_of(unit, g)
                        .map_err(|e| format!("{src}: groups.{}: {e}", unit.name()))?;
                    m = m.with_group(unit, group);
                }
            }
            "imr" => {
                let t = val
                    .as_table()
                    .ok_or_else(|| at("expected a table with opcode and mask"))?;
                for (f, x) in t {
                    match f.as_str() {
                        "opcode" => {
                            imr.opcode = match x {
                                Value::Integer(n) if (0..256).contains(n) => *n as u8,
                                Value::String(s) => opcode_of(s).ok_or_else(|| {
                                    format!(
                                        "{src}: imr.opcode: `{s}` is not an instruction class ({})",
                                        Op::ALL.map(Op::name).join(", ")
                                    )
                                })?,
                                _ => {
                                    return Err(format!(
                                        "{src}: imr.opcode: expected a class name or 0-255, found {x}"
                                    ))
                                }
                            }
                        }
                        "mask" => {
                            imr.mask = x
                                .as_integer()
                                .filter(|n| (0..256).contains(n))
                                .ok_or_else(|| {
                                    format!("{src}: imr.mask: expected 0-255, found {x}")
                                })? as u8
                        }
                        _ => return Err(format!("{src}: imr.{f}: unknown key (opcode, mask)")),
                    }
                }
            }
            _ => {
                return Err(at(
                    "unknown key (monitor, mode, marked, interrupt, freeze_on_overflow, frozen, groups, imr)",
                ))
            }
        }
    }
    Ok(Setup { mmcr: m, imr })
}

/// The opcode of an instruction class name.
pub fn opcode_of(name: &str) -> Option<u8> {
    Op::ALL.iter().find(|o| o.name() == name).map(|&o| o as u8)
}

/// A unit's group from a number, a PAPI preset name or a list of event names.
fn group_of(u: Unit, v: &Value) -> Result<u8, String> {
    match v {
        Value::Integer(n) if (0..16).contains(n) => Ok(*n as u8),
        Value::Integer(n) => Err(format!("group {n} is not in 0-15")),
        Value::String(s) if s.starts_with("PAPI_") => {
            let p = PAPI.iter().find(|p| p.name == s).ok_or_else(|| {
                format!(
                    "`{s}` is not one of the P2SC presets ({})",
                    PAPI.iter().map(|p| p.name).collect::<Vec<_>>().join(", ")
                )
            })?;
            match (p.unit, p.group) {
                (Some(pu), Some(g)) if pu == u => Ok(g),
                (Some(pu), _) => Err(format!("{s} is counted by the {}", pu.name())),
                _ => Err(format!("{s} is a shared counter, in every group")),
            }
        }
        Value::String(s) => events_group(u, &[s.as_str()]),
        Value::Array(a) => {
            let names: Vec<&str> = a.iter().filter_map(|x| x.as_str()).collect();
            if names.len() != a.len() || names.is_empty() {
                return Err("expected event names".into());
            }
            events_group(u, &names)
        }
        x => Err(format!(
            "expected a group number, a PAPI preset or event names, found {x}"
        )),
    }
}

/// The lowest group of `u` counting every named event.
fn events_group(u: Unit, names: &[&str]) -> Result<u8, String> {
    let mut sigs = Vec::new();
    for n in names {
        sigs.push(
            Sig::parse(n).ok_or_else(|| format!("`{n}` is not an event (see docs/power2.md)"))?,
        );
    }
    (0..16u8)
        .find(|&g| {
            sigs.iter().all(|s| {
                *s == Sig::CYCLES || *s == Sig::INSTR || TABLE[u as usize][g as usize].contains(s)
            })
        })
        .ok_or_else(|| format!("no {} group counts all of {}", u.name(), names.join(", ")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbolic_names_compile_to_the_documented_bits() {
        let s = compile(
            "monitor = \"power2\"\nmode = \"user\"\nmarked = true\ninterrupt = true\n[groups]\nFPU = 2\nFXU = [\"load\", \"store\"]\nICU = \"PAPI_BR_TKN\"\nSCU = 15\n[imr]\nopcode = \"fp-fma\"\nmask = 0xff\n",
            "t.toml",
        )
        .unwrap();
        assert_eq!(
            s.mmcr.0,
            regs::NOSUP | regs::MARKED | regs::PMIE | 0xF000 | 0x300 | (2 << 4) | 2
        );
        assert_eq!(
            s.imr,
            Imr {
                opcode: machine::cpu::op::Op::FpFma as u8,
                mask: 0xff
            }
        );
        for (text, want) in [
            ("mode = \"x\"", "t.toml: mode: expected"),
            ("[groups]\nXYZ = 1", "groups.XYZ: not a unit"),
            ("[groups]\nFXU = 16", "groups.FXU: group 16 is not in 0-15"),
            (
                "[groups]\nFXU = \"PAPI_BR_TKN\"",
                "PAPI_BR_TKN is counted by the ICU",
            ),
            ("[groups]\nFXU = [\"nope\"]", "`nope` is not an event"),
            (
                "[groups]\nFPU = [\"tx-upgrade\", \"branch-taken\"]",
                "no FPU group counts all",
            ),
            ("bogus = 1", "t.toml: bogus: unknown key"),
            (
                "[imr]\nopcode = \"load\"",
                "imr.opcode: `load` is not an instruction class (int-add,",
            ),
        ] {
            let e = compile(text, "t.toml").unwrap_err();
            assert!(e.contains(want), "{text}: {e}");
        }
    }
}
