//! The one integration-test binary of `workload` (one binary per crate: one link, not one per
//! file). The workloads on real machines: kernels against reference computations, micro-kernels on
//! every preset, lackey trace recording.
//! Run one part with a filter, e.g. `cargo test -p workload --test it kernels::`.

mod bgq;
mod kernels;
mod micro;
mod trace_lackey;
