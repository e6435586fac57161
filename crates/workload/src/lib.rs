//! Workloads: the thread API, SPLASH-2 kernels, micro-kernels, trace readers
pub mod trace;
