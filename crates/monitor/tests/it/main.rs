//! The monitor crate's integration tests, one binary (see crates/pmusim/tests/it/layout.rs).

mod addie;
mod numachine;
mod power2;
mod upc;
mod upc_bgpm_init;
mod upc_bgpm_l2;
mod upc_commit;
mod upc_flops;
mod upc_larx;
mod upc_level_irq;
mod upc_mispredict;
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
    with_upc(preset, cfg)
}

/// A machine of `preset` with the UPC attached by `cfg`.
fn with_upc(
    preset: machine::Preset,
    cfg: &monitor::upc::config::Config,
) -> (
    machine::Machine,
    std::rc::Rc<std::cell::RefCell<monitor::upc::probe::Upc>>,
) {
    let mut m = machine::Machine::new(preset, machine::Options::default()).unwrap();
    let upc = monitor::upc::attach(&mut m, cfg).unwrap();
    (m, upc)
}

/// Exact counts since `cycles0`/`ops0` of the multiplexing tests' loop events (`int(20)`,
/// `fp(4)`, a taken conditional branch per iteration): cycles, integer adds, FP operations,
/// conditional branches.
fn mux_loop_exact(
    ctx: &mut machine::Ctx,
    cycles0: u64,
    ops0: &[u64; machine::cpu::op::Op::COUNT],
) -> [u64; 4] {
    use machine::cpu::op::Op;
    let ops = ctx.counters().ops();
    let d = |o: Op| ops[o as usize] - ops0[o as usize];
    [
        ctx.cycles() - cycles0,
        d(Op::IntAdd),
        d(Op::Fp),
        d(Op::BrCondTaken) + d(Op::BrCondNotTaken),
    ]
}

/// A probe that keeps every observation of the kinds it is given (`machine::probe::kind`), in
/// order, for a test to count after the run.
struct Record {
    kinds: u32,
    log: std::rc::Rc<std::cell::RefCell<Vec<machine::probe::Observation>>>,
}

impl Record {
    /// Attaches a recorder of `kinds` to `m`; returns its log.
    fn attach(
        m: &mut machine::Machine,
        kinds: u32,
    ) -> std::rc::Rc<std::cell::RefCell<Vec<machine::probe::Observation>>> {
        let log = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        m.attach(Box::new(Record {
            kinds,
            log: log.clone(),
        }));
        log
    }
}

impl machine::probe::Probe for Record {
    fn observe(&mut self, o: &machine::probe::Observation, _: &mut machine::probe::Signals) {
        self.log.borrow_mut().push(*o);
    }
    fn interest(&self) -> u32 {
        self.kinds
    }
    fn name(&self) -> &str {
        "record"
    }
}

/// A fallible call's outcome as text: "ok" or the error's debug form.
fn err<T>(r: Result<T, monitor::plugin::Error>) -> String {
    match r {
        Ok(_) => "ok".into(),
        Err(e) => format!("{e:?}"),
    }
}

/// Each of `got` contains its `want` (as many of each).
fn contains_each(got: &[String], want: &[&str]) {
    assert_eq!(got.len(), want.len(), "{got:?}");
    for (g, w) in got.iter().zip(want) {
        assert!(g.contains(w), "{g} lacks {w}");
    }
}
