//! The simulated multiprocessor.
pub mod addr;
pub mod cache;
pub mod config;
pub mod probe;
