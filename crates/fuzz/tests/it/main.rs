//! The one integration-test binary of `fuzz` (one binary per crate: one link, not one per
//! file). Seeded random and mutation tests of every parser (see ARCHITECTURE.md, "crates/fuzz").
//! Run one part with a filter, e.g. `cargo test -p fuzz --test it config::`.

/// Every fuzz target checks the largest allocation a case asks for (`fuzz::ALLOC_LIMIT`).
#[global_allocator]
static A: fuzz::CountingAlloc = fuzz::CountingAlloc;

mod config;
mod decode;
mod text;
mod tracefmt;
