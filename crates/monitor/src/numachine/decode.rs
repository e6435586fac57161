//! `pmusim decode` for the NUMAchine monitor: a register value in words, field by field (seed
//! 000, Table 4.4), or a configuration compiled to its register values.

use super::regs::{describe, parse_u64, Reg};
use super::Setup;
use crate::plugin::Error;
use std::fmt::Write;

fn fields(out: &mut String, reg: Reg, v: u64) -> Result<(), Error> {
    let fields = describe(reg, v).map_err(|e| Error::input(e.to_string()))?;
    writeln!(out, "{} ({}) = {v:#010x}", reg.acronym(), reg.title()).unwrap();
    for (name, x, words) in fields {
        let f = reg.fields().iter().find(|f| f.name == name).unwrap();
        writeln!(
            out,
            "  {:>6}  {:<16} {:>#10x}  {}",
            f.bits(),
            name,
            x,
            words
        )
        .unwrap();
    }
    Ok(())
}

/// Register `r` (acronym or word address 0-F) holding `v` (decimal, 0x hex or 0b binary).
pub fn register(r: &str, v: &str) -> Result<String, Error> {
    let reg = Reg::parse(r).map_err(|e| Error::input(e.to_string()))?;
    let v = parse_u64(v).map_err(Error::input)?;
    let mut out = String::new();
    fields(&mut out, reg, v)?;
    Ok(out)
}

/// Every register a configuration sets, with its counters' labels and the SRAM preload.
pub fn config(setup: &Setup) -> Result<String, Error> {
    let mut out = String::new();
    writeln!(out, "configuration `{}`", setup.name).unwrap();
    for (i, l) in setup.labels.iter().enumerate() {
        if !l.is_empty() {
            writeln!(out, "  counter {i}: {l}").unwrap();
        }
    }
    if let Some(t) = setup.sram_threshold {
        writeln!(out, "  SRAM words preloaded with -{t}").unwrap();
    }
    writeln!(out).unwrap();
    for (reg, v) in setup.regs.list() {
        fields(&mut out, reg, v as u64)?;
    }
    Ok(out)
}
