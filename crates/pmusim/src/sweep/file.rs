//! The sweep file: axes whose product is the set of runs, and the metrics to collect.
//!
//! ```toml
//! [axes]
//! machine = ["numachine", "ideal"]     # built-in presets or preset files (relative to this file)
//! protocol = ["ideal"]                 # the preset's `protocol` field
//! workload = ["fft", "migratory"]
//! size = ["test"]
//! procs = [2, 4]
//! seed = [1, 2]
//! monitor = ["none", "numachine"]      # `--monitor` values; "none" attaches nothing
//! [axes.preset]                        # preset fields by dotted key, set before the preset is parsed
//! "caches.l2.size_bytes" = [262144, 1048576]
//! [metrics]                            # name = JSON pointer into the run's --json document
//! cycles = "/run/simulated_cycles"
//! l2_misses = "/ground_truth/processors/*/l2/misses"   # `*` sums over an array's elements
//! ```
//!
//! Every error names the file, the line and the key, and comes before anything runs.

use crate::Failure;
use serde::Deserialize;
use std::collections::BTreeMap;
use toml::{Spanned, Value};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    axes: RawAxes,
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
}

/// One axis: its name as a column (`machine`, `caches.l2.size_bytes`...), its values, and the
/// line of the file that gave it (for errors found later, when the values are checked).
#[derive(Clone, Debug)]
pub struct Axis {
    pub name: String,
    pub values: Vec<Value>,
    pub line: usize,
    /// Listed in the file (a column of the table), or a default that every run shares.
    pub given: bool,
}

/// A parsed sweep file.
pub struct SweepFile {
    pub origin: String,
    pub machine: Axis,
    pub protocol: Option<Axis>,
    /// Preset fields by dotted key, in key order.
    pub preset: Vec<Axis>,
    pub workload: Axis,
    pub size: Axis,
    pub procs: Option<Axis>,
    pub seed: Axis,
    pub monitor: Option<Axis>,
    /// (name, JSON pointer, line).
    pub metrics: Vec<(String, String, usize)>,
}

/// The metrics collected when the file names none.
pub const DEFAULT_METRICS: [(&str, &str); 3] = [
    ("simulated_cycles", "/run/simulated_cycles"),
    ("references", "/run/references"),
    ("l2_misses", "/ground_truth/processors/*/l2/misses"),
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
            Failure::input(format!(
                "{origin}: {}",
                e.to_string().trim_end().replace('\n', "\n  ")
            ))
        })?;
        let a = raw.axes;
        let axis = |name: &str, v: Option<Spanned<Value>>, default: Option<Value>, kind: Kind| {
            axis(text, origin, name, v, default, kind)
        };
        let mut preset = Vec::new();
        for (k, v) in a.preset {
            flatten(text, origin, &k, v, &mut preset)?;
        }
        let mut metrics = Vec::new();
        for (name, v) in raw.metrics {
            let line = line_of(text, v.span().start);
            let key = format!("metrics.{name}");
            let p = v.into_inner().as_str().map(str::to_string).ok_or_else(|| {
                at(
                    origin,
                    line,
                    &key,
                    "a JSON pointer string, like \"/run/references\"",
                )
            })?;
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
            metrics.push((name, p, line));
        }
        if metrics.is_empty() {
            metrics = DEFAULT_METRICS
                .iter()
                .map(|(n, p)| (n.to_string(), p.to_string(), 0))
                .collect();
        }
        Ok(SweepFile {
            origin: origin.to_string(),
            machine: axis("machine", a.machine, Some("numachine".into()), Kind::Str)?.unwrap(),
            protocol: axis("protocol", a.protocol, None, Kind::Str)?,
            preset,
            workload: axis("workload", a.workload, Some("fft".into()), Kind::Str)?.unwrap(),
            size: axis("size", a.size, Some("small".into()), Kind::Str)?.unwrap(),
            procs: axis("procs", a.procs, None, Kind::Count)?,
            seed: axis("seed", a.seed, Some(Value::Integer(1)), Kind::Int)?.unwrap(),
            monitor: axis("monitor", a.monitor, None, Kind::Str)?,
            metrics,
        })
    }

    /// The axes in the order of the product (the last varies fastest).
    pub fn axes(&self) -> Vec<&Axis> {
        let mut v = vec![&self.machine];
        v.extend(&self.protocol);
        v.extend(&self.preset);
        v.extend([&self.workload, &self.size]);
        v.extend(&self.procs);
        v.push(&self.seed);
        v.extend(&self.monitor);
        v
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Str,
    /// A positive integer.
    Count,
    /// A non-negative integer.
    Int,
    /// Any TOML value (preset fields; the preset's own parser checks the type).
    Any,
}

fn axis(
    text: &str,
    origin: &str,
    name: &str,
    v: Option<Spanned<Value>>,
    default: Option<Value>,
    kind: Kind,
) -> Result<Option<Axis>, Failure> {
    let Some(v) = v else {
        return Ok(default.map(|d| Axis {
            name: name.to_string(),
            values: vec![d],
            line: 0,
            given: false,
        }));
    };
    let line = line_of(text, v.span().start);
    let key = if kind == Kind::Any {
        format!("axes.preset.{name}")
    } else {
        format!("axes.{name}")
    };
    let values = match v.into_inner() {
        Value::Array(a) => a,
        one => vec![one],
    };
    if values.is_empty() {
        return Err(at(
            origin,
            line,
            &key,
            "an empty list: give at least one value",
        ));
    }
    for (i, x) in values.iter().enumerate() {
        let ok = match kind {
            Kind::Str => x.is_str(),
            Kind::Count => x.as_integer().is_some_and(|n| n > 0),
            Kind::Int => x.as_integer().is_some_and(|n| n >= 0),
            Kind::Any => !x.is_table(),
        };
        if !ok {
            let want = match kind {
                Kind::Str => "a string",
                Kind::Count => "a positive integer",
                Kind::Int => "a non-negative integer",
                Kind::Any => "a value (not a table)",
            };
            return Err(at(origin, line, &key, format!("value {x} is not {want}")));
        }
        if values[..i].contains(x) {
            return Err(at(origin, line, &key, format!("value {x} is listed twice")));
        }
    }
    Ok(Some(Axis {
        name: name.to_string(),
        values,
        line,
        given: true,
    }))
}

/// The line of a preset key: `"a.b.c" =` or `a.b.c =`, else the `[axes.preset...]` header.
fn key_line(text: &str, key: &str) -> usize {
    let quoted = format!("\"{key}\"");
    let found = text.lines().position(|l| {
        let l = l.trim_start();
        [key, quoted.as_str()].iter().any(|k| {
            l.strip_prefix(k)
                .is_some_and(|r| r.trim_start().starts_with('='))
        })
    });
    let found = found.or_else(|| {
        text.lines()
            .position(|l| l.trim_start().starts_with("[axes.preset"))
    });
    found.map_or(0, |i| i + 1)
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
            let a = axis(
                text,
                origin,
                key,
                Some(Spanned::new(0..0, x)),
                None,
                Kind::Any,
            )?;
            out.extend(a.map(|mut a| {
                a.line = key_line(text, key);
                a
            }));
            Ok(())
        }
    }
}
