//! The sweep file: axes whose product is the set of runs, filters, and the metrics to collect.
//!
//! ```toml
//! [axes]
//! machine = ["numachine", "ideal"]     # built-in presets or preset files (relative to this file)
//! workload = ["fft", "migratory"]      # built-in workloads or trace:FILE (relative to this file)
//! size = ["test"]
//! procs = [2, 4]
//! seed = [1, 2]
//! monitor = ["none", "numachine"]      # `--monitor` values: names, NAME,NAME, or FILE.toml
//! protocol = ["dp", "fp-proc"]         # `--protocol` (FlashPoint's protocols on `flash`)
//! [axes.preset]                        # preset fields by dotted key, set before the preset is parsed
//! "caches.l2.size_bytes" = [262144, 1048576]
//! [axes.flags]                         # other `pmusim run` flags: true/false for a switch
//! tlb = [false, true]
//! [[exclude]]                          # drop every run whose axes have all these values
//! machine = "ideal"
//! procs = 2
//! [metrics]                            # name = JSON pointer into the run's --json document
//! cycles = { path = "/run/simulated_cycles", unit = "cycles" }
//! l2_misses = "/ground_truth/processors/*/l2/misses"   # `*` sums over an array's elements
//! ```
//!
//! Every error names the file, the line and the key, and comes before anything runs (issue 18,
//! item 1).

use crate::Failure;
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::{Spanned, Value};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    axes: RawAxes,
    #[serde(default)]
    exclude: Vec<Spanned<toml::Table>>,
    #[serde(default)]
    metrics: BTreeMap<String, Spanned<Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAxes {
    machine: Option<Spanned<Value>>,
    protocol: Option<Spanned<Value>>,
    workload: Option<Spanned<Value>>,
    size: Option<Spanned<Value>>,
    procs: Option<Spanned<Value>>,
    seed: Option<Spanned<Value>>,
    monitor: Option<Spanned<Value>>,
    /// Without spans: toml cannot give spans inside bare dotted keys; `key_line` finds them.
    #[serde(default)]
    preset: BTreeMap<String, Value>,
    #[serde(default)]
    flags: BTreeMap<String, Spanned<Value>>,
}

/// What an axis sets in a run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Role {
    Machine,
    /// A preset field (the axis name is its dotted key).
    Preset,
    Workload,
    Size,
    Procs,
    Seed,
    Monitor,
    Protocol,
    /// A `pmusim run` flag (the axis name without its `--`); `true`/`false` for a switch.
    Flag,
}

/// One axis: its name as a column (`machine`, `caches.l2.size_bytes`...), its values, and the
/// line of the file that gave it (for errors found later, when the values are checked).
#[derive(Clone, Debug)]
pub struct Axis {
    pub name: String,
    pub role: Role,
    pub values: Vec<Value>,
    pub line: usize,
    /// Listed in the file (a column of the table), or a default that every run shares.
    pub given: bool,
}

impl Axis {
    /// The key as the file writes it, for messages.
    pub fn key(&self) -> String {
        match self.role {
            Role::Preset => format!("axes.preset.{}", self.name),
            Role::Flag => format!("axes.flags.{}", self.name),
            _ => format!("axes.{}", self.name),
        }
    }
}

/// One `[[exclude]]` table: (axis index, value) pairs that together drop a run.
pub struct Exclude {
    pub line: usize,
    pub when: Vec<(usize, Value)>,
}

/// A parsed sweep file.
pub struct SweepFile {
    pub origin: String,
    /// In the order of the product (the last varies fastest): machine, preset fields, workload,
    /// size, procs, seed, monitor, protocol, flags.
    pub axes: Vec<Axis>,
    pub exclude: Vec<Exclude>,
    pub metrics: Vec<Metric>,
}

/// The metrics collected when the file names none.
pub const DEFAULT_METRICS: [(&str, &str, &str); 3] = [
    ("simulated_cycles", "/run/simulated_cycles", "cycles"),
    ("references", "/run/references", "count"),
    ("l2_misses", "/ground_truth/processors/*/l2/misses", "count"),
];

/// A column of the collected table read from each run's document.
pub struct Metric {
    pub name: String,
    /// A JSON pointer; a `*` segment sums over an array's elements (`collect::lookup`).
    pub pointer: String,
    /// count, bytes, cycles (processor), percent, or a free text (a ratio's "per").
    pub unit: Option<String>,
    pub line: usize,
}

/// Flags a sweep may not set: an axis of its own sets them, or they replace the run's JSON
/// document (which the sweep keeps as the result) or write files beside it.
const RESERVED_FLAGS: [&str; 12] = [
    "machine", "procs", "seed", "size", "monitor", "protocol", "json", "report", "format", "out",
    "svg", "csv",
];

/// The 1-based line of a byte offset.
pub fn line_of(text: &str, at: usize) -> usize {
    text[..at.min(text.len())].matches('\n').count() + 1
}

/// An input error at a line of the sweep file.
pub fn at(origin: &str, line: usize, key: &str, msg: impl std::fmt::Display) -> Failure {
    Failure::input(format!("{origin}:{line}: {key}: {msg}"))
}

impl SweepFile {
    pub fn parse(text: &str, origin: &str) -> Result<SweepFile, Failure> {
        let raw: Raw = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(0, |s| line_of(text, s.start));
            Failure::input(format!("{origin}:{line}: {}", e.message().trim_end()))
        })?;
        let a = raw.axes;
        let ax =
            |name: &str, role, v, default, kind| axis(text, origin, name, role, v, default, kind);
        let mut axes = Vec::new();
        axes.extend(ax(
            "machine",
            Role::Machine,
            a.machine,
            Some("numachine".into()),
            Kind::Str,
        )?);
        for (k, v) in a.preset {
            flatten(text, origin, &k, v, &mut axes)?;
        }
        axes.extend(ax(
            "workload",
            Role::Workload,
            a.workload,
            Some("fft".into()),
            Kind::Str,
        )?);
        axes.extend(ax(
            "size",
            Role::Size,
            a.size,
            Some("small".into()),
            Kind::Str,
        )?);
        axes.extend(ax("procs", Role::Procs, a.procs, None, Kind::Count)?);
        axes.extend(ax(
            "seed",
            Role::Seed,
            a.seed,
            Some(Value::Integer(1)),
            Kind::Int,
        )?);
        axes.extend(ax("monitor", Role::Monitor, a.monitor, None, Kind::Str)?);
        axes.extend(ax("protocol", Role::Protocol, a.protocol, None, Kind::Str)?);
        for (k, v) in a.flags {
            let line = line_of(text, v.span().start);
            let name = k.trim_start_matches('-').to_string();
            if RESERVED_FLAGS.contains(&name.as_str()) {
                return Err(at(
                    origin,
                    line,
                    &format!("axes.flags.{k}"),
                    format!(
                        "--{name} is not a flag a sweep may vary here: {}",
                        reserved_why(&name)
                    ),
                ));
            }
            axes.extend(axis(
                text,
                origin,
                &name,
                Role::Flag,
                Some(v),
                None,
                Kind::Any,
            )?);
        }
        // Preset fields and flags in the file's order (toml's tables are sorted by key).
        axes.sort_by_key(|a| {
            (
                role_rank(a.role),
                if matches!(a.role, Role::Preset | Role::Flag) {
                    a.line
                } else {
                    0
                },
            )
        });
        for (i, x) in axes.iter().enumerate() {
            if let Some(y) = axes[..i].iter().find(|y| y.name == x.name) {
                return Err(at(
                    origin,
                    x.line,
                    &x.key(),
                    format!("the same column as {} (line {})", y.key(), y.line),
                ));
            }
        }
        let exclude = raw
            .exclude
            .into_iter()
            .map(|t| exclusion(text, origin, &axes, t))
            .collect::<Result<_, _>>()?;
        let mut metrics = Vec::new();
        for (name, v) in raw.metrics {
            let line = line_of(text, v.span().start);
            let key = format!("metrics.{name}");
            let (p, unit) = match v.into_inner() {
                Value::String(p) => (p, None),
                Value::Table(t) => {
                    let field = |k: &str| t.get(k).and_then(|x| x.as_str()).map(str::to_string);
                    let extra: Vec<&String> =
                        t.keys().filter(|k| !["path", "unit"].contains(&k.as_str())).collect();
                    match (field("path"), extra.first()) {
                        (Some(p), None) => (p, field("unit")),
                        _ => {
                            return Err(at(
                                origin,
                                line,
                                &key,
                                "a table takes `path` (a JSON pointer) and optionally `unit` (count, bytes, cycles, percent or a free text)",
                            ))
                        }
                    }
                }
                _ => {
                    return Err(at(
                        origin,
                        line,
                        &key,
                        "a JSON pointer string, like \"/run/references\", or { path = \"...\", unit = \"count\" }",
                    ))
                }
            };
            if !p.starts_with('/') {
                return Err(at(
                    origin,
                    line,
                    &key,
                    format!(
                        "`{p}` is not a JSON pointer: it starts with `/`, like \"/run/references\""
                    ),
                ));
            }
            if axes.iter().any(|a| a.given && a.name == name)
                || ["index", "hash", "status"].contains(&name.as_str())
            {
                return Err(at(
                    origin,
                    line,
                    &key,
                    "a column of that name exists already (an axis, index, hash or status)",
                ));
            }
            metrics.push(Metric {
                name,
                pointer: p,
                unit,
                line,
            });
        }
        metrics.sort_by_key(|m| m.line);
        if metrics.is_empty() {
            metrics = DEFAULT_METRICS
                .iter()
                .map(|(n, p, u)| Metric {
                    name: n.to_string(),
                    pointer: p.to_string(),
                    unit: Some(u.to_string()),
                    line: 0,
                })
                .collect();
        }
        Ok(SweepFile {
            origin: origin.to_string(),
            axes,
            exclude,
            metrics,
        })
    }
}

/// The place of an axis in the product (the last varies fastest).
fn role_rank(r: Role) -> u8 {
    match r {
        Role::Machine => 0,
        Role::Preset => 1,
        Role::Workload => 2,
        Role::Size => 3,
        Role::Procs => 4,
        Role::Seed => 5,
        Role::Monitor => 6,
        Role::Protocol => 7,
        Role::Flag => 8,
    }
}

fn reserved_why(name: &str) -> &'static str {
    match name {
        "json" | "report" | "format" | "out" | "svg" | "csv" => {
            "the sweep keeps each run's --json document as its result"
        }
        _ => "it has its own axis under [axes]",
    }
}

/// An `[[exclude]]` table: every key an axis the file lists, every value one of its values.
fn exclusion(
    text: &str,
    origin: &str,
    axes: &[Axis],
    t: Spanned<toml::Table>,
) -> Result<Exclude, Failure> {
    let line = line_of(text, t.span().start);
    let mut when = Vec::new();
    for (k, v) in t.into_inner() {
        let key = format!("exclude.{k}");
        let Some(i) = axes
            .iter()
            .position(|a| a.given && a.name == k.trim_start_matches('-'))
        else {
            let names: Vec<&str> = axes
                .iter()
                .filter(|a| a.given)
                .map(|a| a.name.as_str())
                .collect();
            return Err(at(
                origin,
                line,
                &key,
                format!("not an axis of this sweep (its axes: {})", names.join(", ")),
            ));
        };
        if !axes[i].values.contains(&v) {
            return Err(at(
                origin,
                line,
                &key,
                format!(
                    "{v} is not one of the axis's values (line {})",
                    axes[i].line
                ),
            ));
        }
        when.push((i, v));
    }
    if when.is_empty() {
        return Err(at(
            origin,
            line,
            "exclude",
            "an empty table would drop every run",
        ));
    }
    Ok(Exclude { line, when })
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Str,
    /// A positive integer.
    Count,
    /// A non-negative integer.
    Int,
    /// Any TOML value but a table (preset fields: the preset's own parser checks the type).
    Any,
}

fn axis(
    text: &str,
    origin: &str,
    name: &str,
    role: Role,
    v: Option<Spanned<Value>>,
    default: Option<Value>,
    kind: Kind,
) -> Result<Option<Axis>, Failure> {
    let Some(v) = v else {
        return Ok(default.map(|d| Axis {
            name: name.to_string(),
            role,
            values: vec![d],
            line: 0,
            given: false,
        }));
    };
    let line = line_of(text, v.span().start);
    let mut a = Axis {
        name: name.to_string(),
        role,
        values: Vec::new(),
        line,
        given: true,
    };
    let key = a.key();
    a.values = match v.into_inner() {
        Value::Array(a) => a,
        one => vec![one],
    };
    if a.values.is_empty() {
        return Err(at(
            origin,
            line,
            &key,
            "an empty list: give at least one value",
        ));
    }
    for (i, x) in a.values.iter().enumerate() {
        let ok = match kind {
            Kind::Str => x.is_str(),
            Kind::Count => x.as_integer().is_some_and(|n| n > 0),
            Kind::Int => x.as_integer().is_some_and(|n| n >= 0),
            Kind::Any => !x.is_table() && !x.is_array(),
        };
        if !ok {
            let want = match kind {
                Kind::Str => "a string",
                Kind::Count => "a positive integer",
                Kind::Int => "a non-negative integer",
                Kind::Any => "a single value (not a table or a list)",
            };
            return Err(at(origin, line, &key, format!("value {x} is not {want}")));
        }
        if a.values[..i].contains(x) {
            return Err(at(origin, line, &key, format!("value {x} is listed twice")));
        }
    }
    Ok(Some(a))
}

/// The byte offset of a preset key's line: `"a.b.c" =` or `a.b.c =`, else the
/// `[axes.preset...]` header.
fn key_offset(text: &str, key: &str) -> usize {
    let quoted = format!("\"{key}\"");
    let mut off = 0;
    let mut header = None;
    for l in text.split_inclusive('\n') {
        let t = l.trim_start();
        if [key, quoted.as_str()].iter().any(|k| {
            t.strip_prefix(k)
                .is_some_and(|r| r.trim_start().starts_with('='))
        }) {
            return off;
        }
        if header.is_none() && t.starts_with("[axes.preset") {
            header = Some(off);
        }
        off += l.len();
    }
    header.unwrap_or(0)
}

/// `[axes.preset]` written with bare dotted keys (`caches.l2.size_bytes = [...]`) arrives as
/// nested tables: each leaf is one axis named by its full dotted key.
fn flatten(
    text: &str,
    origin: &str,
    key: &str,
    v: Value,
    out: &mut Vec<Axis>,
) -> Result<(), Failure> {
    match v {
        Value::Table(t) => {
            for (k, x) in t {
                flatten(text, origin, &format!("{key}.{k}"), x, out)?;
            }
            Ok(())
        }
        x => {
            let at = key_offset(text, key);
            let v = Spanned::new(at..at, x);
            out.extend(axis(
                text,
                origin,
                key,
                Role::Preset,
                Some(v),
                None,
                Kind::Any,
            )?);
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> String {
        match SweepFile::parse(text, "s.toml") {
            Ok(_) => panic!("accepted:\n{text}"),
            Err(e) => {
                assert_eq!(e.code, 2);
                e.msg
            }
        }
    }

    #[test]
    fn axes_in_product_order_with_defaults() {
        let f = SweepFile::parse(
            "[axes]\nprocs = [2, 4]\nworkload = \"lu\"\n[axes.preset]\ncaches.l2.size_bytes = [1, 2]\n[axes.flags]\n\"--tlb\" = [false, true]\n",
            "s.toml",
        )
        .unwrap_or_else(|e| panic!("{}", e.msg));
        let names: Vec<&str> = f.axes.iter().map(|a| a.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "machine",
                "caches.l2.size_bytes",
                "workload",
                "size",
                "procs",
                "seed",
                "tlb"
            ]
        );
        let given: Vec<bool> = f.axes.iter().map(|a| a.given).collect();
        assert_eq!(given, [false, true, true, false, true, false, true]);
        assert_eq!(f.axes[1].line, 5);
        assert_eq!(f.axes[2].values, [Value::from("lu")]);
        assert_eq!(f.metrics.len(), 3);
    }

    #[test]
    fn errors_name_the_line_and_the_key() {
        let e = err("[axes]\nprocs = [2]\n\n[axes.preset]\ncaches.l2.size_bytes = []\n");
        assert_eq!(
            e,
            "s.toml:5: axes.preset.caches.l2.size_bytes: an empty list: give at least one value"
        );
        let e = err("[axes]\n\"caches\" = 1\n");
        assert!(e.starts_with("s.toml:2: unknown field `caches`"), "{e}");
        let e = err("[axes]\nprocs = [0]\n");
        assert_eq!(e, "s.toml:2: axes.procs: value 0 is not a positive integer");
        let e = err("[axes]\n[axes.flags]\njson = [true]\n");
        assert!(
            e.starts_with("s.toml:3: axes.flags.json: --json is not a flag"),
            "{e}"
        );
        let e = err("[axes]\nprocs = [2, 4]\n[[exclude]]\nprocs = 8\n");
        assert_eq!(
            e,
            "s.toml:3: exclude.procs: 8 is not one of the axis's values (line 2)"
        );
        let e = err("[axes]\nprocs = [2, 4]\n[[exclude]]\nseed = 1\n");
        assert_eq!(
            e,
            "s.toml:3: exclude.seed: not an axis of this sweep (its axes: procs)"
        );
        let e = err("[axes]\n[metrics]\nx = \"run/references\"\n");
        assert!(
            e.starts_with("s.toml:3: metrics.x: `run/references` is not a JSON pointer"),
            "{e}"
        );
        let e = err("[axes]\nprocs = [2]\n[metrics]\nprocs = \"/run/references\"\n");
        assert!(
            e.starts_with("s.toml:4: metrics.procs: a column of that name"),
            "{e}"
        );
    }
}
