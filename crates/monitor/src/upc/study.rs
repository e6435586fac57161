//! `pmusim study upc`: where local counts start to be lost as the local counter narrows and the
//! frame lengthens, in the simulation beside the arithmetic.

use crate::plugin::{Error, StudyArgs};

/// Runs the study.
pub fn run(_a: &StudyArgs) -> Result<(String, u8), Error> {
    Err(Error::input("study upc: not built yet"))
}
