//! The memory controller's studies (issue 16 items 2 and 6): `pmusim study memctl` measures the
//! seed 002 interface buffer's effect, per workload, as DRAM transactions and execution time
//! with and without it, on `elan` (stores word by word through a write-through L1) and on
//! `numachine` (line write-backs and fills through line-sized entries).
//!
//! The machine side is `machine::mem` (docs/memory-buffer.md). This folder has no probe yet:
//! the closed loop that reads the Addies and sets the watermark (item 6) is not built, so
//! `--monitor memctl` is refused with that reason.
//!
//! - *State*: none on a run; the study keeps one row per (machine, workload, setting).
//! - *Trigger*, *handler*: none (the counts are the controllers' ground truth).

pub mod study;

use crate::plugin::{Entry, Error, Monitor, StudyArgs};
use machine::Machine;

pub const NAME: &str = "memctl";

pub const ENTRY: Entry = Entry {
    name: NAME,
    description: "Memory controller studies: the interface buffer's effect on DRAM traffic and execution time (study only; the closed loop is not built)",
    seed: "seed 002, Figure 5 and 'Performance-enhancing features'",
    flags: &[],
    study: true,
    new: || Box::new(Plugin),
};

pub struct Plugin;

impl Monitor for Plugin {
    fn name(&self) -> &'static str {
        NAME
    }
    fn attach(&mut self, _m: &mut Machine) -> Result<(), Error> {
        Err(Error::input(
            "monitor `memctl`: the closed-loop controller (issue 16 item 6) is not built; `pmusim study memctl` measures the buffer, `--memctl` configures it, `--monitor addie` reads it",
        ))
    }
    fn study(&mut self, a: &StudyArgs) -> Option<Result<(String, u8), Error>> {
        Some(study::run(a))
    }
}
