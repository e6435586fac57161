//! Addie stochastic estimators (seed 002, "Monitoring Your Micro"; issue 16 items 3 and 4).
//!
//! - [`lfsr`]: the 31-stage maximal-length shift register (feedback from stages 3 and 31)
//!   that supplies the random numbers, with its stage-numbering convention;
//! - [`unit`]: one Addie: n-bit saturating counter, comparator, XOR, independent or
//!   correlated random numbers;
//! - [`input`]: the input multiplexer's selections (write-buffer hit, read merge, ...);
//! - [`study`]: synthetic-stream experiments behind `pmusim study addie` (Figures 2 and 3);
//!   [`report`]: their text tables and plots; [`plugin`]: the registry line.
//!
//! docs/addie.md has the measured figures and every choice the seed leaves open.

pub mod attached;
pub mod counting;
pub mod input;
pub mod lfsr;
pub mod plugin;
pub mod report;
pub mod study;
pub mod unit;

pub use input::AddieInput;
pub use lfsr::Lfsr31;
pub use plugin::ENTRY;
pub use unit::{Addie, AddieConfig, RandomMode};
