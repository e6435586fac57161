//! Blue Gene/Q's side of the machine (issue 14 item 1; docs/bgq.md): the events its UPC
//! counts, as the chip reports them. The chip itself is the `cmp` system with the `bgq`
//! preset (`cmp/`); this folder holds what only the Blue Gene/Q counters need.
//!
//! - `events`: the slice, L1P and core events (`L2Event`, `L1pEvent`, `CoreEvent`) the
//!   machine reports as observations and counts exactly in the ground truth;
//! - `inst`: the XU and AXU decoders' opcode groups (`InstGroup`), the one table from the
//!   core's fine instruction classes `Op` to the groups the UPC_P counts.

pub mod events;
pub mod inst;
