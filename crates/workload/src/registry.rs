//! The built-in workloads by name, with their sizes and data structures (`pmusim list workloads`).

use crate::{micro, Workload};

/// Problem sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Size {
    /// Seconds of simulation; for tests.
    Test,
    /// A minute or less on one host core.
    Small,
    /// The problem sizes of the FlashPoint study (seed 004, section 3.2.1).
    Paper,
}

impl Size {
    pub fn parse(s: &str) -> Result<Size, String> {
        match s {
            "test" => Ok(Size::Test),
            "small" => Ok(Size::Small),
            "paper" => Ok(Size::Paper),
            _ => Err(format!("unknown size `{s}`: use test, small or paper")),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Size::Test => "test",
            Size::Small => "small",
            Size::Paper => "paper",
        }
    }
}

/// What `pmusim list workloads` shows.
pub struct WorkloadInfo {
    pub name: &'static str,
    pub kind: &'static str,
    pub what: &'static str,
    /// Problem size at test / small / paper.
    pub sizes: [&'static str; 3],
    pub structures: &'static [&'static str],
    pub make: fn(Size) -> Box<dyn Workload>,
}

/// All built-in workloads.
pub fn list() -> Vec<WorkloadInfo> {
    let mut v = micro::infos();
    v.extend(crate::kernels::infos());
    v
}

/// A workload by name.
pub fn find(name: &str, size: Size) -> Result<Box<dyn Workload>, String> {
    let all = list();
    match all.iter().find(|w| w.name == name) {
        Some(w) => Ok((w.make)(size)),
        None => Err(format!(
            "unknown workload `{name}`: the built-in workloads are {}; or run a trace with trace:FILE (see `pmusim list workloads`)",
            all.iter().map(|w| w.name).collect::<Vec<_>>().join(", ")
        )),
    }
}
