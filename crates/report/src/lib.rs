//! Reports: the run's JSON document and its text tables.
//!
//! Only this crate and the command line serialize; the machine hands over plain structs.

pub mod json;
pub mod table;
pub mod text;

pub use json::run_document;
