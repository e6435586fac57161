//! The one integration-test binary of `pmusim` (one binary per crate: one link, not one per
//! file). Tests of the `pmusim` binary as users run it: CLI behaviour, bad input, kernel and paper
//! matrices, protocol faults, sweeps, trace replay, and the golden runs.
//! Run one part with a filter, e.g. `cargo test -p pmusim --test it bad_input::`.

mod bad_input;
mod bgpm_cli;
mod c2c;
mod cli;
mod common;
mod kernel_matrix;
mod layout;
mod multiprog;
mod paper_matrix;
mod protocol_faults;
mod serve;
mod stat;
mod study_addie;
mod sweep;
mod trace_replay;
mod window;
