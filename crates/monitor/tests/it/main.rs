//! The monitor crate's integration tests, one binary (see crates/pmusim/tests/it/layout.rs).

mod addie;
mod numachine;
mod power2;
mod upc;
mod upc_bgpm_init;
mod upc_commit;
mod upc_larx;
mod upc_level_irq;
mod upc_modes;
mod upc_opcode_irq;
mod upc_papi;
