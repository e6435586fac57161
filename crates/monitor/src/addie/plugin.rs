//! The Addie's line in the monitor registry. Today it has a study only (`pmusim study addie`,
//! seed 002 Figures 2 and 3); Addies on runs, fed by the memory controller's probe streams,
//! are issue 16 item 5 and attach nothing yet.

use super::{report, study};
use crate::plugin::{Entry, Error, Monitor, StudyArgs};
use machine::Machine;

pub const NAME: &str = "addie";

pub const ENTRY: Entry = Entry {
    name: NAME,
    description: "Addie stochastic estimators: n-bit saturating counters against a 31-stage LFSR (study on synthetic streams; not yet on runs)",
    seed: "seed 002, Figures 1-4",
    flags: &[],
    study: true,
    new: || Box::new(Plugin),
};

pub struct Plugin;

/// Seeds of the width table at most: its 16-bit runs are 1.6 M samples each.
const WIDTH_SEEDS: u64 = 20;
/// Samples of the Figure 2/3 trajectories at most.
const PLOT_SAMPLES: u64 = 5_000;

impl Monitor for Plugin {
    fn name(&self) -> &'static str {
        NAME
    }
    fn attach(&mut self, _m: &mut Machine) -> Result<(), Error> {
        Err(Error::input(
            "monitor `addie`: Addies on runs are not wired to probe streams yet (issue 16 item 5); `pmusim study addie` runs the synthetic-stream study",
        ))
    }
    fn study(&mut self, a: &StudyArgs) -> Option<Result<(String, u8), Error>> {
        Some(run(a))
    }
}

/// `pmusim study addie [--json] [--svg DIR] [--seeds N] [--samples N] [--seed FIRST]`.
pub fn run(a: &StudyArgs) -> Result<(String, u8), Error> {
    if !a.procs.is_empty() || !a.kernels.is_empty() {
        return Err(Error::input(
            "study addie: --procs and --kernels do not apply (the study feeds synthetic streams)",
        ));
    }
    let seeds = a.seeds.unwrap_or(100);
    let samples = a.samples.unwrap_or(20_000);
    let cfg = study::StudyConfig {
        first_seed: a.seed,
        seeds,
        samples,
        plot_samples: samples.min(PLOT_SAMPLES),
        width_seeds: seeds.min(WIDTH_SEEDS),
        ..study::StudyConfig::default()
    };
    let s = study::run(&cfg).map_err(|e| Error::input(format!("study addie: {e}")))?;
    if let Some(dir) = &a.svg {
        let place =
            |e: &dyn std::fmt::Display| Error::input(format!("--svg {}: {e}", dir.display()));
        std::fs::create_dir_all(dir).map_err(|e| place(&e))?;
        for p in report::plots(&s) {
            let f = dir.join(format!("{}.svg", p.id));
            std::fs::write(&f, ::report::render::svg::plot(&p)).map_err(|e| place(&e))?;
        }
    }
    let out = if a.json {
        let mut v = serde_json::to_value(&s).map_err(|e| Error::sim(e.to_string()))?;
        v["seed_reference"] = serde_json::json!({
            "figures": "Figure 2: 64/255 (25 %), Figure 3: 200/255 (78 %), 8 bits, start 128",
            "convergence": "about 500 samples",
        });
        serde_json::to_string_pretty(&v).expect("plain data") + "\n"
    } else {
        report::text(&s)
    };
    Ok((out, 0))
}
