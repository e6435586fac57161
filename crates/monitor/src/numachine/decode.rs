//! `pmusim decode` for the NUMAchine monitor: a register value in words, field by field (seed
//! 000, Table 4.4), or a configuration compiled to its register values; as text or, for
//! `--json`, as the body of a `pmusim.decode/1` document (docs/json.md). Both come from one
//! [`Decoded`] per register, so they cannot disagree.

use super::regs::{describe, parse_u64, Field, Reg};
use super::Setup;
use crate::plugin::Error;
use serde_json::{json, Value};
use std::fmt::Write;

/// One register decoded: its value and, per defined field, the field's value in words.
struct Decoded {
    reg: Reg,
    value: u64,
    fields: Vec<(&'static Field, u32, String)>,
}

impl Decoded {
    fn new(reg: Reg, value: u64) -> Result<Decoded, Error> {
        let fields = describe(reg, value)
            .map_err(|e| Error::input(e.to_string()))?
            .into_iter()
            .map(|(name, x, words)| {
                let f = reg.fields().iter().find(|f| f.name == name).unwrap();
                (f, x, words)
            })
            .collect();
        Ok(Decoded { reg, value, fields })
    }

    fn text(&self, out: &mut String) {
        let reg = self.reg;
        writeln!(
            out,
            "{} ({}) = {:#010x}",
            reg.acronym(),
            reg.title(),
            self.value
        )
        .unwrap();
        for (f, x, words) in &self.fields {
            writeln!(
                out,
                "  {:>6}  {:<16} {:>#10x}  {}",
                f.bits(),
                f.name,
                x,
                words
            )
            .unwrap();
        }
    }

    /// `{"register", "title", "value", "fields": [{"name", "hi", "lo", "value", "meaning"}]}`.
    fn json(&self) -> Value {
        json!({
            "register": self.reg.acronym(),
            "title": self.reg.title(),
            "value": self.value,
            "fields": self.fields.iter().map(|(f, x, words)| json!({
                "name": f.name,
                "hi": f.hi,
                "lo": f.lo,
                "value": x,
                "meaning": words,
            })).collect::<Vec<_>>(),
        })
    }
}

fn one(r: &str, v: &str) -> Result<Decoded, Error> {
    let reg = Reg::parse(r).map_err(|e| Error::input(e.to_string()))?;
    let v = parse_u64(v).map_err(Error::input)?;
    Decoded::new(reg, v)
}

/// Register `r` (acronym or word address 0-F) holding `v` (decimal, 0x hex or 0b binary).
pub fn register(r: &str, v: &str) -> Result<String, Error> {
    let mut out = String::new();
    one(r, v)?.text(&mut out);
    Ok(out)
}

/// [`register`] as JSON: `{"registers": [one register]}`.
pub fn register_json(r: &str, v: &str) -> Result<Value, Error> {
    Ok(json!({ "registers": [one(r, v)?.json()] }))
}

fn every(setup: &Setup) -> Result<Vec<Decoded>, Error> {
    setup
        .regs
        .list()
        .into_iter()
        .map(|(reg, v)| Decoded::new(reg, v as u64))
        .collect()
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
    for d in every(setup)? {
        d.text(&mut out);
    }
    Ok(out)
}

/// [`config`] as JSON: `{"config", "counter_labels", "sram_preload_threshold", "registers"}`
/// (a label `""` for a counter without one, the threshold `null` without a preload).
pub fn config_json(setup: &Setup) -> Result<Value, Error> {
    Ok(json!({
        "config": setup.name,
        "counter_labels": setup.labels,
        "sram_preload_threshold": setup.sram_threshold,
        "registers": every(setup)?.iter().map(Decoded::json).collect::<Vec<_>>(),
    }))
}
