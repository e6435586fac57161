//! Flags and subcommands (the conventions of `perf` and `likwid`: a verb, then options).

use crate::Failure;
use clap::{Args, Parser, Subcommand, ValueEnum};
use machine::config::{Preset, BUILTIN};

#[derive(Parser)]
#[command(
    name = "pmusim",
    version,
    about = "A simulated cache-coherent NUMA multiprocessor carrying programmable hardware performance monitors"
)]
pub struct Cli {
    #[command(subcommand)]
    pub cmd: Cmd,
}

#[derive(Subcommand)]
#[allow(clippy::large_enum_variant)] // RunArgs is large; parsed once.
pub enum Cmd {
    /// Run a workload on a machine and report what the ground truth (and monitors) saw.
    Run(RunArgs),
    /// List the built-in machines, workloads or monitors.
    List(ListArgs),
    /// Random loads and stores on contended lines, checking coherence invariants at every step.
    TestProtocol(TestArgs),
    /// Simulated references per second on fixed cases.
    Bench(BenchArgs),
    /// Decode a monitor register value, or compile a monitor configuration to register values.
    Decode(crate::monitors::DecodeArgs),
    /// Record or describe traces of real programs.
    #[command(subcommand)]
    Trace(TraceCmd),
    /// A monitor's study that reproduces its seed's tables (`pmusim list monitors` shows which
    /// monitors have one).
    Study(crate::monitors::StudyCliArgs),
    /// The FlashPoint view of a run on `flash`: data structures and procedures ranked by misses
    /// and latency (same as `run --protocol fp-proc --report data,proc`).
    Report(ReportArgs),
    /// Print a shell completion script: `pmusim completions bash > /etc/bash_completion.d/pmusim`
    /// (bash, zsh, fish, elvish, powershell).
    Completions { shell: clap_complete::Shell },
    /// Print the manual page (roff): `pmusim man > pmusim.1; man ./pmusim.1`.
    Man,
    /// Design-space sweeps: plan, run (a local pool or one scheduler task), collect, submit.
    #[command(subcommand)]
    Sweep(crate::sweep::SweepCmd),
    /// Count named events as `perf stat` does, each beside its exact count:
    /// `pmusim stat -e PAPI_TOT_INS,l1d-miss:u -- fft -m power2` (`-e list` lists the events).
    Stat(crate::stat::StatArgs),
}

/// `pmusim completions SHELL`: generated from these clap definitions, so it never goes stale.
pub fn completions(shell: clap_complete::Shell) -> Result<u8, Failure> {
    use clap::CommandFactory;
    clap_complete::generate(shell, &mut Cli::command(), "pmusim", &mut std::io::stdout());
    Ok(0)
}

/// `pmusim man`: the manual page, generated from these clap definitions.
pub fn man() -> Result<u8, Failure> {
    use clap::CommandFactory;
    clap_mangen::Man::new(Cli::command())
        .render(&mut std::io::stdout())
        .map_err(|e| Failure::input(format!("writing the manual page: {e}")))?;
    Ok(0)
}

#[derive(Subcommand)]
pub enum TraceCmd {
    /// Run a program under a tracer and write a native trace (.pmt).
    Record(RecordArgs),
    /// Describe a trace: tracer, program, threads, references.
    Info(InfoArgs),
    /// Convert saved valgrind lackey text (`--trace-mem=yes` output) into a native trace
    /// (without the program's symbols: `trace record` names global data).
    Convert(ConvertArgs),
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Tracer {
    /// QEMU user mode with pmusim's plugin: fast, sees every thread.
    Qemu,
    /// valgrind lackey: slow, one thread of references.
    Lackey,
}

#[derive(Args)]
pub struct RecordArgs {
    /// Output trace file.
    #[arg(long, short = 'o')]
    pub output: std::path::PathBuf,
    /// Tracer (default: qemu when qemu-x86_64 is installed, lackey otherwise).
    #[arg(long)]
    pub tracer: Option<Tracer>,
    /// The program and its arguments (after `--`).
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub command: Vec<String>,
}

#[derive(Args)]
pub struct InfoArgs {
    pub file: std::path::PathBuf,
    /// Print as JSON (schema `pmusim.trace-info/1`, docs/json.md).
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct ConvertArgs {
    /// Lackey text: the output of `valgrind --tool=lackey --trace-mem=yes --log-file=FILE`.
    pub input: std::path::PathBuf,
    /// Output trace file.
    #[arg(long, short = 'o')]
    pub output: std::path::PathBuf,
}

#[derive(Args, Clone)]
pub struct MachineArgs {
    /// Machine preset: a built-in name (see `pmusim list machines`) or a TOML file.
    #[arg(long, short = 'm', default_value = "numachine")]
    pub machine: String,
    /// Number of processors (overrides the preset).
    #[arg(long, short = 'p')]
    pub procs: Option<usize>,
    /// Seed of the run's random generator.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Model the processors' TLB and its software refill handler (the preset's `[cpu.tlb]`,
    /// R4400 values unless the preset sets others): TLB misses per processor and per data
    /// structure in the report.
    #[arg(long)]
    pub tlb: bool,
    /// Hardware contexts per core (overrides the preset's `[cpu] threads_per_core`): they
    /// share the core's pipeline, L1s and L2 (see `machine::sched` for the issue policy).
    #[arg(long, value_name = "N")]
    pub threads_per_core: Option<u32>,
    /// A memory controller at every home (issue 16; docs/memory-buffer.md): `on`, or
    /// `KEY=VALUE,...` over the preset's `[memctl]` keys (watermark=8,read_ahead=off,...).
    #[arg(long, value_name = "SPEC")]
    pub memctl: Option<String>,
    /// Run under the operating-system model with the default `[os]` numbers when the preset
    /// has no `[os]` section (processes, timer interrupts, context switches, system calls as
    /// supervisor code; ARCHITECTURE.md "Processes and the operating system"). A
    /// multiprogrammed run (`a+b`) turns it on by itself.
    #[arg(long)]
    pub os: bool,
}

impl MachineArgs {
    pub fn preset(&self) -> Result<Preset, Failure> {
        let mut p = load_preset(&self.machine).map_err(|e| Failure::input(e.0))?;
        p.cpu.tlb.enabled |= self.tlb;
        if self.os && p.os.is_none() {
            p.os = Some(machine::os::config::OsCfg::default());
        }
        if let Some(n) = self.threads_per_core {
            p.cpu.threads_per_core = n;
            p.validate()
                .map_err(|e| Failure::input(format!("--threads-per-core {n}: {}", e.0)))?;
        }
        if let Some(spec) = &self.memctl {
            let line = p.memory_line_bytes();
            p.memctl = Some(
                machine::mem::config::MemCtlCfg::apply_spec(p.memctl.take(), spec, line)
                    .map_err(Failure::input)?,
            );
        }
        match self.procs {
            Some(n) => p.with_procs(n).map_err(|e| {
                Failure::input(format!(
                    "--procs {n} does not fit machine `{}`: {}",
                    self.machine, e.0
                ))
            }),
            None => Ok(p),
        }
    }
}

/// A built-in preset name, or a path to a TOML file (`Preset::load`).
pub fn load_preset(name: &str) -> Result<Preset, machine::config::ConfigError> {
    Preset::load(name)
}

#[derive(Args)]
pub struct RunArgs {
    /// Workload: a built-in name (see `pmusim list workloads`), or trace:FILE.pmt /
    /// trace:FILE.lackey to replay a trace of a real program; `a+b+...` runs several
    /// built-in workloads at once, each as a process of its own under the operating-system
    /// model (`--threads` threads each).
    #[arg(default_value = "fft")]
    pub workload: String,
    /// Mark process NAME (a workload of `a+b`, or `main` for a single one under --os): its
    /// threads run with MSR[PM] set, for monitors that count marked processes only.
    #[arg(long, value_name = "NAME")]
    pub mark: Vec<String>,
    /// Restrict the monitors of --monitor to process NAME (a workload of `a+b`, or `main`
    /// under --os): their counts for that process alone beside its exact per-process counts,
    /// and the cost per context switch (docs/os.md).
    #[arg(long, value_name = "NAME")]
    pub monitor_process: Option<String>,
    /// How --monitor-process restricts: marking (the process's MSR[PM] and the monitor's
    /// marked-only mode: POWER2), virtualization (the OS reads the counters at every context
    /// switch and keeps per-thread totals, as perf_event_open counts one task: every monitor
    /// that can be restricted), or both side by side (POWER2). Default: marking where the
    /// monitor has it, else virtualization.
    #[arg(long, value_name = "WAY", requires = "monitor_process")]
    pub restrict_by: Option<String>,
    #[command(flatten)]
    pub machine: MachineArgs,
    /// Problem size: test, small or paper.
    #[arg(long, short = 's', default_value = "small")]
    pub size: String,
    /// Software threads (default: one per processor). Any count the workload accepts, more or
    /// fewer than the hardware contexts: the machine's scheduler places them and time-slices
    /// a context's threads ([cpu] threads_per_core, [sched] in the preset). In a
    /// multiprogrammed run (`a+b`), the threads of each process (each gets N).
    #[arg(long, short = 't')]
    pub threads: Option<usize>,
    /// Print the run as one JSON document.
    #[arg(long)]
    pub json: bool,
    /// Rows per table in the text report.
    #[arg(long, default_value_t = 10)]
    pub top: usize,
    /// Turn the ground-truth collector off (for speed comparisons).
    #[arg(long)]
    pub no_ground_truth: bool,
    /// Ground truth: split miss latencies and memory/network queue waits by the PhaseID of
    /// the request (seed 000 Table 4.10 items 9, 21-23).
    #[arg(long)]
    pub by_phase: bool,
    /// Stop after this many simulated processor cycles, with the partial report (marked
    /// partial; exit 3).
    #[arg(long)]
    pub max_cycles: Option<u64>,
    /// Print machine-wide counts every CYCLES processor cycles on standard error, as
    /// `perf stat -I` does (text; CSV with -x SEP; JSON lines with -j).
    #[arg(short = 'I', long, value_name = "CYCLES", value_parser = clap::value_parser!(u64).range(1..))]
    pub interval: Option<u64>,
    /// With --interval: CSV lines with this field separator (perf's -x).
    #[arg(
        short = 'x',
        long = "field-separator",
        value_name = "SEP",
        requires = "interval"
    )]
    pub field_separator: Option<String>,
    /// With --interval: one JSON object per line (perf's -j).
    #[arg(
        short = 'j',
        long = "json-lines",
        requires = "interval",
        conflicts_with = "field_separator"
    )]
    pub json_lines: bool,
    /// No progress bar (it is shown only when standard error is a terminal anyway).
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Traces: a range file naming address regions (lines `start length name`).
    #[arg(long)]
    pub bins: Option<std::path::PathBuf>,
    /// Traces: placement of traced threads on processors, `spread` over nodes or `pack`.
    #[arg(long, default_value = "spread")]
    pub place: String,
    /// Traces: decompress and decode on the simulation's host thread instead of a helper
    /// thread per traced thread (the default on hosts with two cores or more).
    #[arg(long)]
    pub no_decode_thread: bool,
    /// Traces with instruction fetch (QEMU): write the simulated I1, D1 and L2 events per
    /// function, and per source line where the program has DWARF line information, to this
    /// file in Cachegrind's format, for cg_annotate or KCachegrind.
    #[arg(long, value_name = "FILE")]
    pub cachegrind_out: Option<std::path::PathBuf>,
    /// Record PROGRAM (given after `--`) with the QEMU tracer and simulate it while it runs:
    /// one command, as `valgrind --tool=cachegrind PROGRAM` is. The result is that of
    /// `pmusim run trace:FILE` on the saved trace, apart from the names of mapped data (a
    /// multi-threaded program is replayed from the finished trace; docs/qemu-tracer.md).
    #[arg(long)]
    pub record: bool,
    /// With --record: keep the trace in this file (by default it is a temporary file, removed
    /// after the run).
    #[arg(long, value_name = "FILE", requires = "record")]
    pub save: Option<std::path::PathBuf>,
    /// With --record: the program to record and its arguments.
    #[arg(last = true, value_name = "PROGRAM")]
    pub program: Vec<String>,
    /// Attach monitors: NAME[,NAME...] with their built-in configurations (see `pmusim list
    /// monitors`), or a configuration FILE.toml (its `monitor = "NAME"` says which, default
    /// the NUMAchine monitor).
    #[arg(long, value_name = "NAME[,NAME]|FILE.toml")]
    pub monitor: Option<String>,
    /// Write every plot of the report (the run's and each monitor's) as SVG files into this
    /// directory (`DIR/<plot id>.svg`); a FILE ending in `.svg` gets the first attached
    /// monitor's plot (the NUMAchine monitor's latency histogram).
    #[arg(long, value_name = "DIR|FILE.svg")]
    pub svg: Option<String>,
    /// Write every table of the report (the run's and each monitor's) as CSV files, one per
    /// table with every row, into this directory (`DIR/<table id>.csv`).
    #[arg(long, value_name = "DIR")]
    pub csv: Option<String>,
    /// Write the typed report (sections of tables with each column's kind and unit, plots) as
    /// JSON to this file, every row of every table (docs/reports.md). Not the `--json` run
    /// document.
    #[arg(long, value_name = "FILE")]
    pub typed_json: Option<std::path::PathBuf>,
    /// Write the whole report as one self-contained HTML page (sortable tables, inline SVG
    /// plots, a data structure x processor heat map, each monitor's section) to this file.
    #[arg(long, value_name = "FILE")]
    pub html: Option<std::path::PathBuf>,
    /// The monitors' own flags (from the registry).
    #[command(flatten)]
    pub monitor_flags: crate::monitors::MonitorFlags,
    /// Serve the run's counters in the Prometheus/OpenMetrics text format at
    /// http://ADDR/metrics while it runs (e.g. 127.0.0.1:9464; docs/metrics.md).
    #[arg(long, value_name = "ADDR")]
    pub serve: Option<String>,
    /// With --serve: publish new values every CYCLES processor cycles of simulated time.
    #[arg(long, value_name = "CYCLES", default_value_t = 100_000, requires = "serve", value_parser = clap::value_parser!(u64).range(1..))]
    pub serve_interval: u64,
    /// With --serve: after the run, keep answering until the final values have been scraped
    /// once, or for at most SECONDS.
    #[arg(long, value_name = "SECONDS", default_value_t = 0, requires = "serve")]
    pub serve_linger: u64,
    /// `pmusim stat`'s session, when the run is one (not a flag).
    #[arg(skip)]
    pub stat: Option<crate::stat::Handle>,
}

#[derive(Args)]
pub struct ReportArgs {
    /// Workload (a built-in name or trace:FILE).
    #[arg(default_value = "fft")]
    pub workload: String,
    /// Categories: data, proc, proc-data (comma-separated).
    #[arg(long, default_value = "data,proc")]
    pub by: String,
    /// Machine preset (FlashPoint needs the `flash` memory system).
    #[arg(long, short = 'm', default_value = "flash")]
    pub machine: String,
    #[arg(long, short = 'p')]
    pub procs: Option<usize>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, short = 's', default_value = "small")]
    pub size: String,
    /// fp-proc (per data structure and procedure) or fp-noproc (per data structure).
    #[arg(long, default_value = "fp-proc")]
    pub protocol: String,
    /// text, json, csv or svg (a bar chart).
    #[arg(long, default_value = "text")]
    pub format: String,
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    #[arg(long, default_value_t = 10)]
    pub rows: usize,
    #[arg(long)]
    pub no_fence: bool,
}

impl ReportArgs {
    /// The equivalent `run` invocation.
    pub fn into_run(self) -> RunArgs {
        let monitor_flags = crate::monitors::MonitorFlags::of(self.monitor_flags());
        RunArgs {
            workload: self.workload,
            machine: MachineArgs {
                machine: self.machine,
                procs: self.procs,
                seed: self.seed,
                tlb: false,
                threads_per_core: None,
                memctl: None,
                os: false,
            },
            size: self.size,
            threads: None,
            json: false,
            top: self.rows,
            no_ground_truth: false,
            by_phase: false,
            max_cycles: None,
            interval: None,
            field_separator: None,
            json_lines: false,
            quiet: false,
            bins: None,
            place: "spread".into(),
            no_decode_thread: false,
            cachegrind_out: None,
            record: false,
            save: None,
            program: Vec::new(),
            monitor: None,
            svg: None,
            html: None,
            csv: None,
            mark: Vec::new(),
            monitor_process: None,
            restrict_by: None,
            typed_json: None,
            monitor_flags,
            serve: None,
            serve_interval: 100_000,
            serve_linger: 0,
            stat: None,
        }
    }

    /// The flags of the monitor that ranks data structures and procedures, as given to `run`.
    fn monitor_flags(&self) -> Vec<(&'static str, Option<String>)> {
        let mut f = vec![
            ("protocol", Some(self.protocol.clone())),
            ("report", Some(self.by.clone())),
            ("format", Some(self.format.clone())),
            ("rows", Some(self.rows.to_string())),
        ];
        if let Some(o) = &self.out {
            f.push(("out", Some(o.display().to_string())));
        }
        if self.no_fence {
            f.push(("no-fence", None));
        }
        f
    }
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum ListWhat {
    Machines,
    Workloads,
    Monitors,
    /// The named events of the monitors that count them (`pmusim stat -e`).
    Events,
}

#[derive(Args)]
pub struct ListArgs {
    pub what: ListWhat,
    /// Print as JSON (a document with a `schema` key, see docs/json.md).
    #[arg(long)]
    pub json: bool,
    /// Print one built-in machine's preset file, to copy and edit (`list machines --show NAME`).
    #[arg(long, value_name = "NAME")]
    pub show: Option<String>,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum FaultArg {
    /// Drop every 50th invalidation (the tester must report a violation).
    DropInvalidation,
    /// Lose every 50th invalidation acknowledgement (the tester must report a liveness
    /// violation).
    DropAck,
    /// Every 20th acknowledged invalidation takes effect 2,000 cycles after its
    /// acknowledgement, so the reply it releases overtakes it.
    ReorderReply,
    /// Never retry every 20th NACKed request (a liveness violation).
    LoseNackRetry,
}

impl FaultArg {
    pub fn fault(self) -> machine::env::Fault {
        let name = match self {
            FaultArg::DropInvalidation => "drop-invalidation",
            FaultArg::DropAck => "drop-ack",
            FaultArg::ReorderReply => "reorder-reply",
            FaultArg::LoseNackRetry => "lose-nack-retry",
        };
        machine::env::Fault::by_name(name).expect("every fault argument names a fault")
    }
}

#[derive(Args)]
pub struct TestArgs {
    #[command(flatten)]
    pub machine: MachineArgs,
    /// Operations in total (spread over the processors).
    #[arg(long, default_value_t = 1_000_000)]
    pub ops: u64,
    /// Contended lines.
    #[arg(long, default_value_t = 8)]
    pub lines: usize,
    /// Break the protocol on purpose, to see the tester catch it.
    #[arg(long)]
    pub inject_fault: Option<FaultArg>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct BenchArgs {
    /// Run only the cases whose name contains this.
    #[arg(long)]
    pub case: Option<String>,
    /// Repetitions per case (the median is reported).
    #[arg(long, default_value_t = 3)]
    pub repeat: usize,
    /// Print as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn list(a: ListArgs) -> Result<u8, Failure> {
    if let Some(name) = &a.show {
        if a.what != ListWhat::Machines {
            return Err(Failure::input(
                "--show NAME: only with `list machines` (it prints a built-in preset)",
            ));
        }
        let Some((_, text)) = BUILTIN.iter().find(|(n, _)| n == name) else {
            let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
            return Err(Failure::input(format!(
                "list machines --show {name}: no built-in machine of that name (built-in: {})",
                names.join(", ")
            )));
        };
        print!("{text}");
        return Ok(0);
    }
    match a.what {
        ListWhat::Monitors => return crate::monitors::list(a.json),
        ListWhat::Events => return crate::stat::list_events(a.json),
        ListWhat::Machines => {
            let mut rows = Vec::new();
            for (name, _) in BUILTIN {
                let p = Preset::builtin(name).map_err(|e| Failure::input(e.0))?;
                // The private L2, or else the shared one (its size over all slices).
                let (l2, where_) = match (&p.caches.l2, p.caches.shared.first()) {
                    (Some(l2), _) => (l2, String::new()),
                    (None, Some(s)) => (&s.cache, format!(" shared/{}", s.slices)),
                    (None, None) => (&p.caches.l1d, " (no L2: L1D)".to_string()),
                };
                if a.json {
                    let mut l2v = serde_json::json!({"size_bytes": l2.size_bytes, "assoc": l2.assoc,
                               "line_bytes": l2.line_bytes});
                    if let (None, Some(s)) = (&p.caches.l2, p.caches.shared.first()) {
                        l2v["shared_slices"] = serde_json::json!(s.slices);
                    }
                    rows.push(serde_json::json!({
                        "name": name,
                        "procs": p.procs,
                        "nodes": p.nodes(),
                        "l2": l2v,
                        "description": p.description,
                    }));
                    continue;
                }
                println!(
                    "{name:<10} {:>4} procs  {:>3} nodes  L2 {} KiB {}-way {} B lines{where_}  {}",
                    p.procs,
                    p.nodes(),
                    l2.size_bytes >> 10,
                    l2.assoc,
                    l2.line_bytes,
                    p.description
                );
            }
            if a.json {
                print_json("list-machines", "machines", rows);
            } else {
                println!("\nCopy a preset to edit it: `pmusim list machines --show NAME > my.toml`; pass the file with --machine my.toml.");
            }
        }
        ListWhat::Workloads => {
            if a.json {
                let rows = workload::list()
                    .iter()
                    .map(|w| {
                        serde_json::json!({
                            "name": w.name,
                            "kind": w.kind,
                            "sizes": {"test": w.sizes[0], "small": w.sizes[1], "paper": w.sizes[2]},
                            "structures": w.structures,
                            "description": w.what,
                        })
                    })
                    .collect();
                print_json("list-workloads", "workloads", rows);
                return Ok(0);
            }
            println!(
                "{:<18} {:<7} {:<34} structures",
                "name", "kind", "sizes (test / small / paper)"
            );
            for w in workload::list() {
                println!(
                    "{:<18} {:<7} {:<34} {}\n{:<27}{}",
                    w.name,
                    w.kind,
                    w.sizes.join(" / "),
                    w.structures.join(", "),
                    "",
                    w.what
                );
            }
            println!(
                "\nTraces: trace:FILE.pmt (native) or trace:FILE.lackey (valgrind lackey text)."
            );
        }
    }
    Ok(0)
}

/// The schema name of each JSON document pmusim prints (docs/json.md): `pmusim.<kind>/<version>`.
/// The version changes when a key is removed or changes meaning, not when one is added.
pub fn schema(kind: &str) -> String {
    format!("pmusim.{kind}/1")
}

/// Prints `{"schema": …, key: rows}`.
pub fn print_json(kind: &str, key: &str, rows: Vec<serde_json::Value>) {
    let doc = serde_json::json!({"schema": schema(kind), key: rows});
    println!("{}", serde_json::to_string_pretty(&doc).unwrap());
}
