//! The command line's side of the monitor registry (`monitor::plugin`): the monitors' own
//! flags, `--monitor`, `list monitors`, `decode` and `study`. Nothing here knows a monitor by
//! name; everything goes through the registry.

use crate::Failure;
use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use monitor::plugin::{self, Error, Monitor, StudyArgs};
use serde_json::json;

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure {
            code: e.code,
            msg: e.msg,
        }
    }
}

/// The flags the registered monitors declare (`Entry::flags`), as given: (long, value). `STUDY`:
/// only those their studies take (`Flag::study`), for `pmusim study`.
#[derive(Clone, Default)]
pub struct MonitorFlags<const STUDY: bool = false>(pub Vec<(String, Option<String>)>);

impl<const STUDY: bool> MonitorFlags<STUDY> {
    pub fn of(v: Vec<(&str, Option<String>)>) -> Self {
        MonitorFlags(v.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }
    fn declared() -> impl Iterator<Item = (&'static plugin::Entry, &'static plugin::Flag)> {
        plugin::registry()
            .iter()
            .flat_map(|e| e.flags.iter().map(move |f| (e, f)))
            .filter(|(_, f)| !STUDY || f.study)
    }
}

impl<const STUDY: bool> FromArgMatches for MonitorFlags<STUDY> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        let mut v = Vec::new();
        for (_, f) in Self::declared() {
            {
                if f.value.is_some() {
                    if let Some(x) = m.get_one::<String>(f.long) {
                        v.push((f.long.to_string(), Some(x.clone())));
                    }
                } else if m.get_flag(f.long) {
                    v.push((f.long.to_string(), None));
                }
            }
        }
        Ok(MonitorFlags(v))
    }
    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl<const STUDY: bool> Args for MonitorFlags<STUDY> {
    fn augment_args(mut cmd: Command) -> Command {
        for (e, f) in Self::declared() {
            {
                let a = Arg::new(f.long)
                    .long(f.long)
                    .help(f.help)
                    // Built once per process: leaking the heading is the simplest `'static` str.
                    .help_heading(&*Box::leak(
                        format!("Monitor `{}`", e.name).into_boxed_str(),
                    ));
                cmd = cmd.arg(match f.value {
                    Some(v) => a.value_name(v).action(ArgAction::Set),
                    None => a.action(ArgAction::SetTrue),
                });
            }
        }
        cmd
    }
    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

/// The monitors a run attaches (`--monitor` and the monitors' own flags).
pub fn select(spec: Option<&str>, flags: &MonitorFlags) -> Result<Vec<Box<dyn Monitor>>, Failure> {
    Ok(plugin::select(spec, &flags.0)?)
}

/// `pmusim list monitors [--json]`.
pub fn list(as_json: bool) -> Result<u8, Failure> {
    if as_json {
        let v: Vec<_> = plugin::registry()
            .iter()
            .map(|e| {
                json!({
                    "name": e.name,
                    "description": e.description,
                    "seed": e.seed,
                    "flags": e.flags.iter().map(|f| format!("--{}", f.long)).collect::<Vec<_>>(),
                    "study": e.study,
                    "studies": (e.new)().studies(),
                    "home_presets": (e.new)().home_presets(),
                })
            })
            .collect();
        crate::cli::print_json("list-monitors", "monitors", v);
        return Ok(0);
    }
    for e in plugin::registry() {
        println!("{:<12} {}", e.name, e.description);
        println!("{:<12} {}", "", e.seed);
        if !e.flags.is_empty() {
            let f: Vec<String> = e.flags.iter().map(|f| format!("--{}", f.long)).collect();
            println!("{:<12} flags: {}", "", f.join(" "));
        }
        let studies = (e.new)().studies();
        if e.study || !studies.is_empty() {
            let names: Vec<&str> = e
                .study
                .then_some(e.name)
                .into_iter()
                .chain(studies.iter().copied())
                .collect();
            println!("{:<12} study: pmusim study {}", "", names.join(" | "));
        }
    }
    println!("\nAttach with --monitor NAME[,NAME...] or --monitor FILE.toml (monitor = \"NAME\" in the file).");
    Ok(0)
}

#[derive(Args)]
pub struct DecodeArgs {
    /// Register: acronym or word address (for the NUMAchine monitor: PR, PW, CW, CF, AWhi,
    /// AWlo, AFhi, AFlo, GPCM0-3, SCM, GPCE, SRAMCE or 0-F).
    pub register: Option<String>,
    /// Value (decimal, 0x hex or 0b binary).
    pub value: Option<String>,
    /// Compile a monitor configuration (a TOML file, or a monitor's name for its built-in
    /// configuration) and print every register it sets.
    #[arg(long)]
    pub config: Option<String>,
    /// The monitor whose register map decodes the value (default: the first that has one).
    #[arg(long)]
    pub monitor: Option<String>,
    /// Print one JSON document (`pmusim.decode/1`, docs/json.md) instead of text.
    #[arg(long)]
    pub json: bool,
}

/// `pmusim decode`.
pub fn decode(a: DecodeArgs) -> Result<u8, Failure> {
    if let Some(spec) = &a.config {
        // `default` is the NUMAchine built-in's old alias: the first monitor with registers.
        let m = if spec.ends_with(".toml") || spec.contains('/') {
            let file = plugin::ConfigFile::read(spec, "")?;
            let mut m = (plugin::find(file.monitor()?)?.new)();
            m.configure_toml(file)?;
            m
        } else if spec == "default" {
            with_registers(None)?
        } else {
            (plugin::find(spec)?.new)()
        };
        let name = m.name();
        let none = || {
            Failure::input(format!(
                "--config {spec}: monitor `{name}` has no registers"
            ))
        };
        if a.json {
            let text_only = || {
                Failure::input(format!(
                    "decode --json: monitor `{name}` describes its configuration only as text"
                ))
            };
            let body = match m.describe_config_json() {
                Some(body) => body?,
                None if m.describe_config().is_some() => return Err(text_only()),
                None => return Err(none()),
            };
            print_decode_json(name, body);
        } else {
            print!("{}", m.describe_config().ok_or_else(none)??);
        }
        return Ok(0);
    }
    let (Some(r), Some(v)) = (&a.register, &a.value) else {
        return Err(Failure::input(
            "usage: pmusim decode <register> <value>, or pmusim decode --config FILE.toml",
        ));
    };
    let m = if a.monitor.is_some() {
        with_registers(a.monitor.as_deref())?
    } else {
        // Without --monitor: the first monitor whose register map has the register
        // (NUMAchine's GPCM0, POWER2's MMCR); if none has it, the first one's error.
        let mut first = None;
        let mut found = None;
        for e in plugin::registry() {
            let m = (e.new)();
            match m.decode_register(r, v) {
                Some(Ok(_)) => {
                    found = Some(m);
                    break;
                }
                Some(Err(err)) => {
                    first.get_or_insert(err);
                }
                None => {}
            }
        }
        match found {
            Some(m) => m,
            None => {
                return Err(first
                    .ok_or_else(|| Failure::input("decode: no monitor has registers"))?
                    .into())
            }
        }
    };
    if a.json {
        let body = m.decode_register_json(r, v).ok_or_else(|| {
            Failure::input(format!(
                "decode --json: monitor `{}` decodes its registers only to text",
                m.name()
            ))
        })??;
        print_decode_json(m.name(), body);
    } else {
        print!("{}", m.decode_register(r, v).unwrap()?);
    }
    Ok(0)
}

/// `pmusim decode --json`: the monitor's body with the document's `schema` and `monitor`
/// first.
fn print_decode_json(monitor: &str, body: serde_json::Value) {
    let mut doc = serde_json::json!({ "schema": "pmusim.decode/1", "monitor": monitor });
    if let (Some(d), serde_json::Value::Object(b)) = (doc.as_object_mut(), body) {
        d.extend(b);
    }
    println!("{}", serde_json::to_string_pretty(&doc).unwrap());
}

/// The monitor `name`, or the first registered one with a register map.
fn with_registers(name: Option<&str>) -> Result<Box<dyn Monitor>, Failure> {
    let candidates: Vec<_> = match name {
        Some(n) => vec![plugin::find(n)?],
        None => plugin::registry().iter().collect(),
    };
    candidates
        .into_iter()
        .map(|e| (e.new)())
        .find(|m| m.describe_config().is_some())
        .ok_or_else(|| Failure::input("decode: no such monitor has registers"))
}

#[derive(Args)]
pub struct StudyCliArgs {
    /// The monitor whose study to run (`pmusim list monitors`).
    pub monitor: String,
    /// Processor counts (default: the study's).
    #[arg(long, value_delimiter = ',')]
    pub procs: Vec<usize>,
    /// Problem size: test, small or paper.
    #[arg(long, short = 's', default_value = "small")]
    pub size: String,
    /// Kernels, comma-separated (default: the study's).
    #[arg(long, value_delimiter = ',')]
    pub kernels: Vec<String>,
    /// Host threads.
    #[arg(long, default_value_t = 2)]
    pub jobs: usize,
    /// Print everything as one JSON document.
    #[arg(long)]
    pub json: bool,
    /// The (first) seed.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Seeds, for a study that sweeps them (`study addie`: 100).
    #[arg(long)]
    pub seeds: Option<u64>,
    /// Samples per run, for a sampling study (`study addie`: 20000).
    #[arg(long)]
    pub samples: Option<u64>,
    /// Write the study's plots as SVG files into this directory.
    #[arg(long, value_name = "DIR")]
    pub svg: Option<std::path::PathBuf>,
    /// A study made of independent runs (flashpoint): keep its sweep in DIR (its results are
    /// reused when the command runs again; a scheduler can run it: docs/sweeps/README.md).
    #[arg(long, value_name = "DIR")]
    pub sweep_dir: Option<std::path::PathBuf>,
    /// With --sweep-dir: only plan the study's sweep (for `pmusim sweep submit DIR --slurm`).
    #[arg(long)]
    pub plan_only: bool,
    #[command(flatten)]
    pub monitor_flags: MonitorFlags<true>,
}

/// `pmusim study <monitor>` (or a study's own name, which its monitor lists:
/// `Monitor::studies`).
pub fn study(a: StudyCliArgs) -> Result<u8, Failure> {
    let e = plugin::study_owner(&a.monitor)?;
    if let Some(d) = &a.svg {
        crate::run::check_output_dir("--svg", d)?;
    }
    let mut m = (e.new)();
    let args = StudyArgs {
        procs: a.procs,
        size: a.size,
        kernels: a.kernels,
        jobs: a.jobs,
        json: a.json,
        seed: a.seed,
        seeds: a.seeds,
        samples: a.samples,
        svg: a.svg,
        flags: a.monitor_flags.0,
        study: a.monitor.clone(),
    };
    if let Some(sw) = m.study_sweep(&args) {
        let (out, code) = crate::sweep::study::run(
            &a.monitor,
            sw?,
            args.jobs,
            a.sweep_dir.as_deref(),
            a.plan_only,
        )?;
        print!("{out}");
        return Ok(code);
    }
    if a.sweep_dir.is_some() || a.plan_only {
        return Err(Failure::input(format!(
            "--sweep-dir, --plan-only: study {} is not a sweep (study flashpoint is)",
            a.monitor
        )));
    }
    let (out, code) = m.study(&args).ok_or_else(|| {
        let with = plugin::study_names();
        Failure::input(format!(
            "study {}: monitor `{}` has no study (studies: {})",
            a.monitor,
            e.name,
            with.join(", ")
        ))
    })??;
    print!("{out}");
    Ok(code)
}
