//! `pmusim sweep plan FILE -o DIR`: the product of the axes as a manifest of exact `pmusim run`
//! invocations, every run checked before anything runs or is written.
//!
//! DIR/manifest.jsonl holds one run per line: its index, the hash of its configuration, its
//! axis values and the `pmusim run` arguments (run from DIR). A preset with overrides (or a
//! preset file) is written as DIR/presets/HASH.toml, so the run's arguments name its whole
//! machine; traces and monitor files are named by absolute path (on a cluster they must be on
//! a shared file system). The same file gives the same manifest, byte for byte; results are
//! kept under the run's hash, so re-planning an extended sweep into the same DIR reuses every
//! result it already has.
//!
//! Checks come in two rounds so an error names the key at fault: each value of each axis with
//! the other axes at their first values (blamed on that axis's line), then every run of the
//! product that no `[[exclude]]` drops (blamed on the run's axis values).

use super::file::{at, Axis, Role, SweepFile};
use crate::Failure;
use clap::Parser;
use machine::config::{Preset, BUILTIN};
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::path::Path;
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

/// A value as a command-line word (strings without their quotes).
fn word(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        x => x.to_string(),
    }
}

fn is_file(name: &str) -> bool {
    Preset::is_file_name(name)
}

/// A preset's TOML text: a built-in's, or a file's (relative to the sweep file's folder).
fn preset_text(name: &str, base: &Path) -> Result<String, String> {
    if is_file(name) {
        let p = base.join(name);
        return std::fs::read_to_string(&p)
            .map_err(|e| format!("cannot read preset file {}: {e}", p.display()));
    }
    match BUILTIN.iter().find(|(n, _)| *n == name) {
        Some((_, t)) => Ok(t.to_string()),
        None => Err(Preset::builtin(name)
            .err()
            .map_or_else(|| format!("no built-in preset `{name}`"), |e| e.0)),
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

/// The message of a TOML error without its excerpt (which quotes the generated preset, not the
/// sweep file).
fn last_line(msg: &str) -> &str {
    if msg.contains("TOML parse error") {
        msg.lines().last().unwrap_or(msg).trim()
    } else {
        msg
    }
}

/// One run's configuration, before it is checked.
struct Config {
    args: Vec<String>,
    /// The generated preset, when the run needs one: (path relative to DIR, text).
    preset: Option<(String, String)>,
    /// Check the workload (its axis is applied; the size's may not be yet: then `test`).
    workload: bool,
}

/// A run's `--machine` argument and the preset's text.
type MachineArg = (String, Option<String>);

/// Builds and checks runs; caches what many runs share.
struct Planner<'a> {
    f: &'a SweepFile,
    base: &'a Path,
    /// Machine text (with overrides) by (machine value, override choice).
    machines: BTreeMap<Vec<usize>, Result<MachineArg, String>>,
    /// Parsed presets by text.
    presets: BTreeMap<String, Result<Preset, String>>,
    workloads: BTreeMap<(String, String), Result<(), String>>,
}

impl Planner<'_> {
    /// The value of the axis that plays `role`, if that axis is applied (its index is below
    /// `upto`; the others are left out, to find which axis a failing run needs).
    fn value(&self, choice: &[usize], upto: usize, role: Role) -> Option<&Value> {
        let i = self.f.axes.iter().position(|a| a.role == role)?;
        (i < upto).then(|| &self.f.axes[i].values[choice[i]])
    }

    /// The applied axes with `role` and their values.
    fn applied(&self, choice: &[usize], upto: usize, role: Role) -> Vec<(&Axis, &Value)> {
        self.f
            .axes
            .iter()
            .zip(choice)
            .take(upto)
            .filter(|(a, _)| a.role == role)
            .map(|(a, &i)| (a, &a.values[i]))
            .collect()
    }

    /// The machine of a choice: (--machine argument, preset text), the text also when the
    /// argument is a built-in name (the check parses it).
    fn machine(&mut self, choice: &[usize], upto: usize) -> Result<MachineArg, String> {
        let key: Vec<usize> = self
            .f
            .axes
            .iter()
            .enumerate()
            .filter(|(_, a)| matches!(a.role, Role::Machine | Role::Preset))
            .map(|(k, _)| if k < upto { choice[k] } else { usize::MAX })
            .collect();
        if let Some(m) = self.machines.get(&key) {
            return m.clone();
        }
        let r = self.build_machine(choice, upto);
        self.machines.insert(key, r.clone());
        r
    }

    fn build_machine(&self, choice: &[usize], upto: usize) -> Result<MachineArg, String> {
        let name = self.f.axes[0].values[choice[0]]
            .as_str()
            .expect("machine names are strings");
        let text = preset_text(name, self.base)?;
        let overrides = self.applied(choice, upto, Role::Preset);
        if overrides.is_empty() && !is_file(name) {
            return Ok((name.to_string(), Some(text)));
        }
        let text = if overrides.is_empty() {
            text
        } else {
            let mut t: toml::Table = text.parse().map_err(|e| format!("{name}: {e}"))?;
            for (a, v) in &overrides {
                set(&mut t, &a.name, v).map_err(|e| format!("machine `{name}`: {e}"))?;
            }
            toml::to_string(&t).expect("a TOML table serializes")
        };
        let text = format!("# machine `{name}` with the sweep's preset values\n{text}");
        let path = format!("presets/{}.toml", hash(text.as_bytes()));
        Ok((path, Some(text)))
    }

    /// The run of a choice of values, with the axes from `upto` on left out (the workload
    /// then is `fft`, which the check skips, and the size `test`).
    fn config(&mut self, choice: &[usize], upto: usize) -> Result<Config, String> {
        let (marg, text) = self.machine(choice, upto)?;
        let preset = text
            .filter(|_| marg.starts_with("presets/"))
            .map(|t| (marg.clone(), t));
        let w = self
            .value(choice, upto, Role::Workload)
            .map_or("fft".to_string(), word);
        let w = match w.strip_prefix("trace:") {
            Some(p) => {
                let path = self.base.join(p);
                let abs = std::fs::canonicalize(&path)
                    .map_err(|e| format!("trace file {}: {e}", path.display()))?;
                format!("trace:{}", abs.display())
            }
            None => w,
        };
        let mut args = vec!["run".to_string(), w, "--machine".into(), marg];
        let size = self
            .value(choice, upto, Role::Size)
            .map_or("test".to_string(), word);
        args.extend(["--size".into(), size]);
        if let Some(p) = self.value(choice, upto, Role::Procs) {
            args.extend(["--procs".into(), word(p)]);
        }
        let seed = self
            .value(choice, upto, Role::Seed)
            .map_or("1".to_string(), word);
        args.extend(["--seed".into(), seed]);
        if let Some(m) = self.value(choice, upto, Role::Monitor).map(word) {
            if is_file(&m) {
                let path = self.base.join(&m);
                let abs = std::fs::canonicalize(&path)
                    .map_err(|e| format!("monitor file {}: {e}", path.display()))?;
                args.extend(["--monitor".into(), abs.display().to_string()]);
            } else if m != "none" {
                args.extend(["--monitor".into(), m]);
            }
        }
        if let Some(p) = self.value(choice, upto, Role::Protocol) {
            args.extend(["--protocol".into(), word(p)]);
        }
        for (a, v) in self.applied(choice, upto, Role::Flag) {
            match v {
                Value::Boolean(true) => args.push(format!("--{}", a.name)),
                Value::Boolean(false) => {}
                v => args.extend([format!("--{}", a.name), word(v)]),
            }
        }
        args.push("--json".into());
        let workload = self.value(choice, upto, Role::Workload).is_some();
        Ok(Config {
            args,
            preset,
            workload,
        })
    }

    /// Checks a run as `pmusim run` would before simulating: its flags, monitors, machine
    /// (with the monitors' adjustments and the processor count) and workload.
    fn check(&mut self, c: &Config) -> Result<(), String> {
        let argv = std::iter::once("pmusim".to_string()).chain(c.args.iter().cloned());
        let cli = crate::cli::Cli::try_parse_from(argv).map_err(|e| {
            let s = e.to_string();
            let first = s.lines().next().unwrap_or("").trim_start_matches("error: ");
            first.to_string()
        })?;
        let crate::cli::Cmd::Run(ra) = cli.cmd else {
            unreachable!("the arguments start with `run`")
        };
        let mut mons =
            crate::monitors::select(ra.monitor.as_deref(), &ra.monitor_flags).map_err(|e| e.msg)?;
        let mut p = match &c.preset {
            Some((_, text)) => self.preset(text)?,
            None => {
                let name = &ra.machine.machine;
                let text = preset_text(name, self.base)?;
                self.preset(&text)?
            }
        };
        p.cpu.tlb.enabled |= ra.machine.tlb;
        if let Some(n) = ra.machine.procs {
            p = p
                .with_procs(n)
                .map_err(|e| format!("--procs {n}: {}", e.0))?;
        }
        for m in &mut mons {
            m.adjust_preset(&mut p).map_err(|e| e.msg)?;
        }
        if c.workload && !ra.workload.starts_with("trace:") {
            let key = (ra.workload.clone(), ra.size.clone());
            if !self.workloads.contains_key(&key) {
                let r = workload::Size::parse(&ra.size)
                    .and_then(|s| workload::find(&ra.workload, s).map(|_| ()));
                self.workloads.insert(key.clone(), r);
            }
            self.workloads[&key].clone()?;
        }
        Ok(())
    }

    fn preset(&mut self, text: &str) -> Result<Preset, String> {
        if !self.presets.contains_key(text) {
            let r = Preset::parse(text, "preset").map_err(|e| last_line(&e.0).to_string());
            self.presets.insert(text.to_string(), r);
        }
        self.presets[text].clone()
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

/// The error of a failing run, blamed on the first axis whose value makes it fail: the
/// shortest prefix of the axes that fails when the later ones are left out. The message
/// names that axis's line, key and value, and the earlier axes' values it failed with.
fn blame(pl: &mut Planner, choice: &[usize], full: String) -> Failure {
    let f = pl.f;
    let (k, e) = (1..=f.axes.len())
        .find_map(|upto| {
            let r = pl.config(choice, upto).and_then(|c| pl.check(&c));
            r.err().map(|e| (upto - 1, e))
        })
        .unwrap_or((f.axes.len() - 1, full));
    let a = &f.axes[k];
    let with: Vec<String> = f.axes[..k]
        .iter()
        .zip(choice)
        .filter(|(x, _)| x.given)
        .map(|(x, &i)| format!("{} = {}", x.name, x.values[i]))
        .collect();
    let with = if with.is_empty() {
        String::new()
    } else {
        format!(" (with {})", with.join(", "))
    };
    let v = &a.values[choice[k]];
    if !a.given {
        return Failure::input(format!(
            "{}: {} (not in the file, so the default {v}){with}: {e}",
            f.origin,
            a.key()
        ));
    }
    at(&f.origin, a.line, &a.key(), format!("value {v}{with}: {e}"))
}

/// Preset files to write: (path relative to the sweep directory, TOML text).
type PresetFiles = Vec<(String, String)>;

/// Expands and checks a sweep file. Returns the entries and the preset files to write.
pub fn expand(f: &SweepFile, base: &Path) -> Result<(Vec<Entry>, PresetFiles), Failure> {
    let o = &f.origin;
    let mut pl = Planner {
        f,
        base,
        machines: BTreeMap::new(),
        presets: BTreeMap::new(),
        workloads: BTreeMap::new(),
    };
    let lens: Vec<usize> = f.axes.iter().map(|a| a.values.len()).collect();
    let n = f.axes.len();
    let (mut entries, mut presets) = (Vec::new(), PresetFiles::new());
    for choice in product(&lens) {
        let dropped = f.exclude.iter().any(|x| {
            x.when
                .iter()
                .all(|(i, v)| f.axes[*i].values[choice[*i]] == *v)
        });
        if dropped {
            continue;
        }
        let c = match pl.config(&choice, n).and_then(|c| pl.check(&c).map(|_| c)) {
            Ok(c) => c,
            Err(e) => return Err(blame(&mut pl, &choice, e)),
        };
        if let Some(p) = c.preset {
            if !presets.iter().any(|(q, _)| *q == p.0) {
                presets.push(p);
            }
        }
        let cfg = serde_json::to_string(&c.args).unwrap();
        entries.push(Entry {
            hash: hash(cfg.as_bytes()),
            axes: f
                .axes
                .iter()
                .zip(&choice)
                .filter(|(a, _)| a.given)
                .map(|(a, &i)| (a.name.clone(), to_json(&a.values[i])))
                .collect(),
            args: c.args,
        });
    }
    if entries.is_empty() {
        let line = f.exclude.first().map_or(0, |x| x.line);
        return Err(at(o, line, "exclude", "the filters drop every run"));
    }
    Ok((entries, presets))
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

/// This program's build: the hash of its executable's bytes. Results are keyed by the run's
/// configuration only, so a sweep directory is tied to the build that planned it (`sweep run`
/// refuses another): a rebuilt simulator must not silently mix its results with the old ones.
pub fn build_id() -> Result<String, Failure> {
    let exe = std::env::current_exe()
        .map_err(|e| Failure::input(format!("cannot find this program's path: {e}")))?;
    let bytes = std::fs::read(&exe)
        .map_err(|e| Failure::input(format!("cannot read {}: {e}", exe.display())))?;
    Ok(hash(&bytes))
}

pub fn plan(file: &Path, out: &Path) -> Result<u8, Failure> {
    let origin = file.display().to_string();
    let text = std::fs::read_to_string(file)
        .map_err(|e| Failure::input(format!("cannot read sweep file {origin}: {e}")))?;
    let base = file.parent().unwrap_or(Path::new("."));
    let (runs, presets) = plan_text(&text, &origin, base, out)?;
    println!(
        "planned {runs} runs ({presets} preset files) in {}",
        out.display()
    );
    Ok(0)
}

/// Plans the sweep file `text` (named `origin` in messages; relative paths from `base`) into
/// `out`: (runs, preset files).
pub fn plan_text(
    text: &str,
    origin: &str,
    base: &Path,
    out: &Path,
) -> Result<(usize, usize), Failure> {
    let f = SweepFile::parse(text, origin)?;
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
        "schema": crate::cli::schema("sweep-plan"),
        "sweep_file": origin,
        "build": build_id()?,
        "runs": entries.len(),
        "axes": f.axes.iter().filter(|a| a.given).map(|a| a.name.clone()).collect::<Vec<_>>(),
        "metrics": f.metrics.iter().map(|m| json!({"name": m.name, "path": m.pointer, "unit": m.unit})).collect::<Vec<_>>(),
    });
    let p = out.join("plan.json");
    write_atomic(&p, serde_json::to_string_pretty(&info).unwrap().as_bytes())
        .map_err(|e| io(&p, e))?;
    let p = out.join("sweep.toml");
    write_atomic(&p, text.as_bytes()).map_err(|e| io(&p, e))?;
    Ok((entries.len(), presets.len()))
}
