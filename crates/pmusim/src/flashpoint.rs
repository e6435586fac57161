//! `pmusim run ... --protocol dp|fp-noproc|fp-proc --report data,proc`: FlashPoint on the
//! `flash` preset (seed 004, 3.1.3) and its per-data-structure / per-procedure report.

use crate::Failure;
use clap::Args;
use machine::flash::flashpoint::FlashProtocol;
use machine::{Machine, Preset};
use monitor::flashpoint::FlashPointView;

#[derive(Args, Clone, Default)]
pub struct FpArgs {
    /// Coherence protocol of the `flash` preset: dp (default), fp-noproc or fp-proc
    /// (FlashPoint without / with per-procedure statistics).
    #[arg(long)]
    pub protocol: Option<String>,
    /// Print FlashPoint's report instead of the ground-truth report, by these categories:
    /// data, proc, proc-data (comma-separated), e.g. `--report data,proc`.
    #[arg(long)]
    pub report: Option<String>,
    /// Format of the FlashPoint report: text, json, csv or svg (a bar chart).
    #[arg(long, default_value = "text")]
    pub format: String,
    /// Write the FlashPoint report to this file instead of standard output.
    #[arg(long)]
    pub out: Option<std::path::PathBuf>,
    /// Rows per category in the FlashPoint report.
    #[arg(long, default_value_t = 10)]
    pub rows: usize,
    /// FP-Proc without the memory fence before procedure commands (seed 3.2.4's variant).
    #[arg(long)]
    pub no_fence: bool,
}

/// Sets the preset's `[flash] protocol` from `--protocol`.
pub fn apply_protocol(mut p: Preset, a: &FpArgs) -> Result<Preset, Failure> {
    if let Some(s) = &a.protocol {
        let proto =
            FlashProtocol::parse(s).map_err(|e| Failure::input(format!("--protocol: {e}")))?;
        let Some(f) = p.flash.as_mut() else {
            return Err(Failure::input(format!(
                "--protocol {s}: machine `{}` has no FLASH memory system (use --machine flash)",
                p.name
            )));
        };
        f.protocol = proto;
        if a.no_fence {
            f.flashpoint.fence = false;
        }
    } else if a.no_fence {
        return Err(Failure::input("--no-fence needs --protocol fp-proc"));
    }
    Ok(p)
}

pub fn report(a: &FpArgs, m: &Machine, verified: bool, detail: &str) -> Result<u8, Failure> {
    let by: Vec<&str> = a
        .report
        .as_deref()
        .unwrap_or("data,proc")
        .split(',')
        .map(str::trim)
        .collect();
    for b in &by {
        if !matches!(*b, "data" | "proc" | "proc-data") {
            return Err(Failure::input(format!(
                "--report: unknown category `{b}`: use data, proc, proc-data"
            )));
        }
    }
    let Some(v) = FlashPointView::from_state(m.state()) else {
        return Err(Failure::input(
            "--report needs FlashPoint: run on --machine flash with --protocol fp-noproc or fp-proc",
        ));
    };
    let text = match a.format.as_str() {
        "text" => v.text(&by, a.rows),
        "json" => serde_json::to_string_pretty(&v.json()).unwrap() + "\n",
        "csv" => v.csv(),
        "svg" => v.svg(a.rows),
        f => {
            return Err(Failure::input(format!(
                "--format {f}: use text, json, csv or svg"
            )))
        }
    };
    match &a.out {
        Some(p) => std::fs::write(p, text)
            .map_err(|e| Failure::input(format!("cannot write {}: {e}", p.display())))?,
        None => print!("{text}"),
    }
    if !verified {
        eprintln!("pmusim: the workload's result is wrong: {detail}");
        return Ok(1);
    }
    Ok(0)
}
