//! Checks of a command's arguments that must happen before any simulation starts, for the
//! commands whose own modules check them only when they get to them (issue 17: a bad kernel
//! name in `study --kernels fft,nosuch` was found after the FFT runs, and the results lost).

use crate::cli::Cmd;
use crate::study::StudyCmd;
use crate::Failure;

/// The kernels `study flashpoint` knows: those of seed 004's Tables 1-5.
const STUDY_KERNELS: [&str; 4] = ["fft", "lu", "ocean", "radix"];

pub fn check(cmd: &Cmd) -> Result<(), Failure> {
    if let Cmd::Study(StudyCmd::Flashpoint(a)) = cmd {
        for k in &a.kernels {
            if !STUDY_KERNELS.contains(&k.as_str()) {
                return Err(Failure::input(format!(
                    "--kernels: unknown kernel `{k}`; the study runs {}",
                    STUDY_KERNELS.join(", ")
                )));
            }
        }
    }
    Ok(())
}
