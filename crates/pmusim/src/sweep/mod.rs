//! `pmusim sweep`: design-space studies as many independent, deterministic runs (issue 18).
//!
//! A sweep file (`file`) names axes; `plan` expands their product into a manifest of exact
//! `pmusim run` invocations, each under the hash of its configuration; `run` executes entries
//! (a local pool, or one entry per scheduler task) and writes each result atomically under its
//! hash, so a resumed sweep or a retried task does no harm; `collect` merges the results into
//! one table; `submit` writes the job-array script for Slurm.

pub mod collect;
pub mod file;
#[cfg(feature = "parquet")]
pub mod parquet;
pub mod plan;
pub mod run;
pub mod study;
pub mod submit;

use crate::Failure;
use clap::{Args, Subcommand};
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum SweepCmd {
    /// Expand a sweep file into DIR/manifest.jsonl (one exact `pmusim run` per line).
    Plan(PlanArgs),
    /// Run the manifest's entries that have no result yet (a local pool, or one `--index`).
    Run(RunArgs),
    /// Merge the results into one table (CSV, JSON or text), listing missing and failed runs.
    Collect(CollectArgs),
    /// Write (and submit) a Slurm job array or a Kubernetes Indexed Job, one entry per task.
    Submit(SubmitArgs),
}

#[derive(Args)]
pub struct PlanArgs {
    /// The sweep file (TOML; see docs/sweeps/example.toml).
    pub file: PathBuf,
    /// The sweep directory to write (manifest.jsonl, plan.json, presets/).
    #[arg(long, short = 'o')]
    pub out: PathBuf,
}

#[derive(Args)]
pub struct RunArgs {
    pub dir: PathBuf,
    /// Runs at the same time (default: the host's cores).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Run only this entry (0-based); defaults to SLURM_ARRAY_TASK_ID or JOB_COMPLETION_INDEX
    /// when one is set.
    #[arg(long)]
    pub index: Option<usize>,
    /// Run even though another pmusim build planned DIR (its results are then mixed with
    /// this build's: only when the simulator's results did not change).
    #[arg(long)]
    pub any_build: bool,
}

#[derive(Args)]
pub struct CollectArgs {
    pub dir: PathBuf,
    /// Write the table here (default: standard output).
    #[arg(long, short = 'o')]
    pub out: Option<PathBuf>,
    /// csv (the runs' table), json (the typed report: the table with its columns' units, and
    /// the missing and failed runs), text, or parquet (the runs' table; needs -o and a
    /// pmusim built with `--features parquet`).
    #[arg(long, default_value = "csv")]
    pub format: String,
    /// Write one SVG plot per metric into this directory (needs --x).
    #[arg(long, value_name = "DIR")]
    pub svg: Option<PathBuf>,
    /// The axis the plots put on x (numeric); one line per combination of the other axes.
    #[arg(long, value_name = "AXIS")]
    pub x: Option<String>,
}

#[derive(Args)]
pub struct SubmitArgs {
    pub dir: PathBuf,
    /// A Slurm job array: DIR/sweep.sbatch, submitted with sbatch.
    #[arg(long)]
    pub slurm: bool,
    /// A Kubernetes Indexed Job: DIR/sweep-job.yaml (written, not applied).
    #[arg(long)]
    pub kubernetes: bool,
    /// Slurm: wait until the whole array has ended (sbatch --wait), then count the results;
    /// exit 1 when some entries have none.
    #[arg(long)]
    pub wait: bool,
    /// The job's name.
    #[arg(long, default_value = "pmusim-sweep")]
    pub name: String,
    /// Kubernetes: the container image holding pmusim (at the path of this binary).
    #[arg(long)]
    pub image: Option<String>,
    /// Kubernetes: a persistent volume claim holding DIR, mounted at DIR's path.
    #[arg(long)]
    pub pvc: Option<String>,
    #[arg(long)]
    pub partition: Option<String>,
    /// Time limit per task (sbatch --time, e.g. 00:30:00).
    #[arg(long)]
    pub time: Option<String>,
    /// Memory per task (sbatch --mem, e.g. 2G).
    #[arg(long)]
    pub mem: Option<String>,
    /// Tasks running at once (Slurm: the array's %K; Kubernetes: parallelism, default 64).
    #[arg(long)]
    pub max_parallel: Option<usize>,
    /// Extra sbatch arguments, written into the script as `#SBATCH ARG` (repeatable).
    #[arg(long, value_name = "ARG", allow_hyphen_values = true)]
    pub sbatch_arg: Vec<String>,
    /// Only write the script (DIR/sweep.sbatch) or manifest and print it; do not submit.
    #[arg(long)]
    pub print: bool,
}

pub fn main(c: SweepCmd) -> Result<u8, Failure> {
    match c {
        SweepCmd::Plan(a) => plan::plan(&a.file, &a.out),
        SweepCmd::Run(a) => run::run(a),
        SweepCmd::Collect(a) => collect::collect(a),
        SweepCmd::Submit(a) => submit::submit(a),
    }
}
