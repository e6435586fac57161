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

/// `bgq` cut to 2 cores x 4 hardware threads with the UPC attached by `cfg`: the machine the
/// BGPM, PAPI, commit-event and larx tests run their 8-thread programs on.
fn bgq2_with_upc(
    cfg: &monitor::upc::config::Config,
) -> (
    machine::Machine,
    std::rc::Rc<std::cell::RefCell<monitor::upc::probe::Upc>>,
) {
    let preset = machine::Preset::builtin("bgq")
        .unwrap()
        .with_procs(2)
        .unwrap();
    let mut m = machine::Machine::new(preset, machine::Options::default()).unwrap();
    let upc = monitor::upc::attach(&mut m, cfg).unwrap();
    (m, upc)
}
