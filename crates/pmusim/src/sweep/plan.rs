//! `pmusim sweep plan FILE -o DIR`: the product of the axes as a manifest of exact `pmusim run`
//! invocations, every value checked before anything runs.
//!
//! DIR/manifest.jsonl holds one run per line: its index, the hash of its configuration, its
//! axis values and the `pmusim run` arguments (run from DIR). A preset with overrides (or a
//! preset file) is written as DIR/presets/HASH.toml, so the directory is self-contained and
//! the run's arguments name its whole configuration. The same file gives the same manifest,
//! byte for byte; results are kept under the run's hash, so re-planning an extended sweep
//! reuses every result it already has.

use super::file::{at, Axis, SweepFile};
use crate::Failure;
use machine::config::{Preset, BUILTIN};
use serde_json::{json, Value as Json};
use std::path::{Path, PathBuf};
use toml::Value;

/// One planned run.
pub struct Entry {
    pub hash: String,
    /// (axis, value) for the axes the file lists.
    pub axes: Vec<(String, Json)>,
    pub args: Vec<String>,
}

/// FNV-1a, 64 bits: stable across builds and hosts (std's hasher is not), enough to tell a
/// sweep's runs apart.
pub fn hash(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{h:016x}")
}

pub fn to_json(v: &Value) -> Json {
    serde_json::to_value(v).unwrap_or(Json::Null)
}

/// A preset's TOML text: a built-in's, or a file's (relative to the sweep file's folder).
fn preset_text(name: &str, base: &Path) -> Result<Option<String>, String> {
    if name.ends_with(".toml") || name.contains('/') {
        let p = base.join(name);
        return std::fs::read_to_string(&p)
            .map(Some)
            .map_err(|e| format!("cannot read preset file {}: {e}", p.display()));
    }
    match BUILTIN.iter().find(|(n, _)| *n == name) {
        Some((_, t)) => Ok(Some(t.to_string())),
        None => Preset::builtin(name).map(|_| None).map_err(|e| e.0),
    }
}

/// Sets a dotted key of a preset's TOML; the parent tables must exist (a typo in a section
/// name should not silently make a new one), the leaf is checked by the preset's parser.
fn set(table: &mut toml::Table, key: &str, v: &Value) -> Result<(), String> {
    let parts: Vec<&str> = key.split('.').collect();
    let mut t = table;
    for (i, p) in parts[..parts.len() - 1].iter().enumerate() {
        t = match t.get_mut(*p) {
            Some(Value::Table(x)) => x,
            _ => {
                return Err(format!(
                    "the preset has no table `{}`",
                    parts[..=i].join(".")
                ))
            }
        };
    }
    t.insert(parts[parts.len() - 1].to_string(), v.clone());
    Ok(())
}

/// The machine of one run: its `--machine` argument and, when a file must be written, its text.
struct Machine {
    arg: String,
    file: Option<String>,
}

/// Builds (and checks) the machine for one choice of machine, protocol and preset values.
fn machine(
    f: &SweepFile,
    base: &Path,
    name: &str,
    overrides: &[(&Axis, &Value)],
    procs: &[Option<usize>],
) -> Result<Machine, Failure> {
    let o = &f.origin;
    let text = preset_text(name, base).map_err(|e| at(o, f.machine.line, "axes.machine", e))?;
    let Some(text) = text else {
        unreachable!("an unknown built-in is an error above")
    };
    let is_file = name.ends_with(".toml") || name.contains('/');
    let text = if overrides.is_empty() {
        text
    } else {
        let mut t: toml::Table = text
            .parse()
            .map_err(|e| at(o, f.machine.line, "axes.machine", format!("{name}: {e}")))?;
        for (a, v) in overrides {
            let key = if a.name == "protocol" {
                "axes.protocol".to_string()
            } else {
                format!("axes.preset.{}", a.name)
            };
            set(&mut t, &a.name, v)
                .map_err(|e| at(o, a.line, &key, format!("machine `{name}`: {e}")))?;
        }
        toml::to_string(&t).expect("a TOML table serializes")
    };
    let p = Preset::parse(&text, name).map_err(|e| {
        // Blame the one override when there is one, else the machine.
        match overrides {
            [(a, v)] => at(
                o,
                a.line,
                &if a.name == "protocol" {
                    "axes.protocol".to_string()
                } else {
                    format!("axes.preset.{}", a.name)
                },
                format!("{v} does not fit machine `{name}`: {}", last_line(&e.0)),
            ),
            _ => at(o, f.machine.line, "axes.machine", e.0),
        }
    })?;
    for n in procs.iter().flatten() {
        let line = f.procs.as_ref().map_or(0, |a| a.line);
        p.clone().with_procs(*n).map_err(|e| {
            at(
                o,
                line,
                "axes.procs",
                format!("{n} does not fit machine `{name}`: {}", e.0),
            )
        })?;
    }
    Ok(if overrides.is_empty() && !is_file {
        Machine {
            arg: name.to_string(),
            file: None,
        }
    } else {
        let text = format!("# machine `{name}` with the sweep's preset values\n{text}");
        Machine {
            arg: format!("presets/{}.toml", hash(text.as_bytes())),
            file: Some(text),
        }
    })
}

/// The message of a TOML error without its excerpt (which quotes the generated preset, not the
/// sweep file).
fn last_line(msg: &str) -> &str {
    if msg.contains("TOML parse error") {
        msg.lines().last().unwrap_or(msg).trim()
    } else {
        msg
    }
}

/// The product of value lists, the last varying fastest.
fn product(lens: &[usize]) -> Vec<Vec<usize>> {
    let mut out = vec![vec![]];
    for &n in lens {
        out = out
            .into_iter()
            .flat_map(|p| {
                (0..n).map(move |i| {
                    let mut q = p.clone();
                    q.push(i);
                    q
                })
            })
            .collect();
    }
    out
}

/// Preset files to write: (path relative to the sweep directory, TOML text).
type PresetFiles = Vec<(String, String)>;

/// Expands and checks a sweep file. Returns the entries and the preset files to write.
pub fn expand(f: &SweepFile, base: &Path) -> Result<(Vec<Entry>, PresetFiles), Failure> {
    let o = &f.origin;
    let procs: Vec<Option<usize>> = match &f.procs {
        Some(a) => a
            .values
            .iter()
            .map(|v| v.as_integer().map(|n| n as usize))
            .collect(),
        None => vec![None],
    };
    // Each override alone on each machine first, so an error names the one key at fault.
    let mut over: Vec<&Axis> = f.protocol.iter().collect();
    over.extend(&f.preset);
    for m in &f.machine.values {
        let m = m.as_str().unwrap();
        machine(f, base, m, &[], &[])?;
        for a in &over {
            for v in &a.values {
                machine(f, base, m, &[(a, v)], &[])?;
            }
        }
    }
    let size_line = f.size.line;
    for s in &f.size.values {
        workload::Size::parse(s.as_str().unwrap()).map_err(|e| at(o, size_line, "axes.size", e))?;
    }
    for w in &f.workload.values {
        let w = w.as_str().unwrap();
        if let Some(p) = w.strip_prefix("trace:") {
            if !base.join(p).exists() {
                return Err(at(
                    o,
                    f.workload.line,
                    "axes.workload",
                    format!("trace file {} does not exist", base.join(p).display()),
                ));
            }
            continue;
        }
        for s in &f.size.values {
            let size = workload::Size::parse(s.as_str().unwrap()).unwrap();
            workload::find(w, size).map_err(|e| at(o, f.workload.line, "axes.workload", e))?;
        }
    }
    if let Some(a) = &f.monitor {
        for m in &a.values {
            let m = m.as_str().unwrap();
            if m != "none" {
                crate::monitors::select(Some(m), &Default::default())
                    .map_err(|e| at(o, a.line, "axes.monitor", e.msg))?;
            }
        }
    }
    // The machines: one per (machine, overrides) choice, checked with every processor count.
    let mut presets: Vec<(String, String)> = Vec::new();
    let axes = f.axes();
    let mut entries = Vec::new();
    let mut built: std::collections::BTreeMap<Vec<usize>, String> = Default::default();
    for choice in product(&axes.iter().map(|a| a.values.len()).collect::<Vec<_>>()) {
        let value = |name: &str| -> Option<&Value> {
            axes.iter()
                .position(|a| a.name == name)
                .map(|i| &axes[i].values[choice[i]])
        };
        // Axes 0..=over.len() pick the machine.
        let mkey = choice[..=over.len()].to_vec();
        let marg = match built.get(&mkey) {
            Some(a) => a.clone(),
            None => {
                let m = value("machine").unwrap().as_str().unwrap();
                let ov: Vec<(&Axis, &Value)> = over
                    .iter()
                    .enumerate()
                    .map(|(i, a)| (*a, &a.values[choice[i + 1]]))
                    .collect();
                let mm = machine(f, base, m, &ov, &procs)?;
                if let Some(t) = mm.file {
                    if !presets.iter().any(|(p, _)| *p == mm.arg) {
                        presets.push((mm.arg.clone(), t));
                    }
                }
                built.insert(mkey, mm.arg.clone());
                mm.arg
            }
        };
        let w = value("workload").unwrap().as_str().unwrap();
        let w = match w.strip_prefix("trace:") {
            Some(p) => format!("trace:{}", absolute(&base.join(p)).display()),
            None => w.to_string(),
        };
        let mut args = vec!["run".to_string(), w, "--machine".into(), marg];
        args.extend([
            "--size".into(),
            value("size").unwrap().as_str().unwrap().to_string(),
        ]);
        if let Some(p) = value("procs") {
            args.extend(["--procs".into(), p.to_string()]);
        }
        args.extend(["--seed".into(), value("seed").unwrap().to_string()]);
        if let Some(m) = value("monitor")
            .and_then(|m| m.as_str())
            .filter(|m| *m != "none")
        {
            args.extend(["--monitor".into(), m.to_string()]);
        }
        args.push("--json".into());
        let cfg = serde_json::to_string(&args).unwrap();
        entries.push(Entry {
            hash: hash(cfg.as_bytes()),
            axes: axes
                .iter()
                .zip(&choice)
                .filter(|(a, _)| a.given)
                .map(|(a, &i)| (a.name.clone(), to_json(&a.values[i])))
                .collect(),
            args,
        });
    }
    Ok((entries, presets))
}

fn absolute(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Writes a file atomically: a temporary file in the same folder, then a rename, so a reader
/// (or a concurrent writer of the same bytes) never sees half a file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.{}.{:?}.tmp",
        path.file_name().unwrap().to_string_lossy(),
        std::process::id(),
        std::thread::current().id()
    ));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

pub fn plan(file: &Path, out: &Path) -> Result<u8, Failure> {
    let origin = file.display().to_string();
    let text = std::fs::read_to_string(file)
        .map_err(|e| Failure::input(format!("cannot read sweep file {origin}: {e}")))?;
    let f = SweepFile::parse(&text, &origin)?;
    let base = file.parent().unwrap_or(Path::new("."));
    let (entries, presets) = expand(&f, base)?;
    let io =
        |p: &Path, e: std::io::Error| Failure::input(format!("cannot write {}: {e}", p.display()));
    std::fs::create_dir_all(out.join("presets")).map_err(|e| io(out, e))?;
    for (rel, t) in &presets {
        let p = out.join(rel);
        write_atomic(&p, t.as_bytes()).map_err(|e| io(&p, e))?;
    }
    let mut manifest = String::new();
    for (i, e) in entries.iter().enumerate() {
        let axes: serde_json::Map<String, Json> = e.axes.iter().cloned().collect();
        let line = json!({"index": i, "hash": e.hash, "axes": axes, "args": e.args});
        manifest.push_str(&serde_json::to_string(&line).unwrap());
        manifest.push('\n');
    }
    let p = out.join("manifest.jsonl");
    write_atomic(&p, manifest.as_bytes()).map_err(|e| io(&p, e))?;
    let info = json!({
        "sweep_file": origin,
        "runs": entries.len(),
        "axes": f.axes().iter().filter(|a| a.given).map(|a| a.name.clone()).collect::<Vec<_>>(),
        "metrics": f.metrics.iter().map(|(n, p, _)| json!([n, p])).collect::<Vec<_>>(),
    });
    let p = out.join("plan.json");
    write_atomic(&p, serde_json::to_string_pretty(&info).unwrap().as_bytes())
        .map_err(|e| io(&p, e))?;
    let p = out.join("sweep.toml");
    write_atomic(&p, text.as_bytes()).map_err(|e| io(&p, e))?;
    println!(
        "planned {} runs ({} preset files) in {}",
        entries.len(),
        presets.len(),
        out.display()
    );
    Ok(0)
}
