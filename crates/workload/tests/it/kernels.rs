//! The SPLASH-2 kernels at test size on the `ideal` machine: results verify at 1, 4 and 16
//! processors, a corrupted result fails verification, impossible processor counts are
//! rejected, and reference counts scale with the problem as the algorithms say.

use machine::config::Preset;
use machine::sim::{Machine, Options};
use std::rc::Rc;
use workload::kernels::{Fft, Lu, Ocean, Radix};
use workload::{install, Size, Workload};

fn machine(procs: usize) -> Machine {
    let preset = Preset::builtin("ideal").unwrap().with_procs(procs).unwrap();
    Machine::new(preset, Options::default()).unwrap()
}

/// Runs a registered workload on `ideal` with `procs` processors.
fn run(w: Box<dyn Workload>, procs: usize) -> Rc<dyn Workload> {
    let mut m = machine(procs);
    let w = install(w, &mut m, None).unwrap();
    m.run(None).unwrap();
    w
}

/// Runs a concrete kernel (kept concrete so a test can corrupt its result); returns it and the
/// number of memory references.
fn run_concrete<W: Workload + 'static>(mut w: W, procs: usize) -> (Rc<W>, u64) {
    let mut m = machine(procs);
    w.check(procs).unwrap();
    w.setup(&mut m.setup(), procs);
    let w = Rc::new(w);
    for p in 0..procs {
        let w = w.clone();
        m.spawn(p, move |ctx| w.thread(ctx));
    }
    let sum = m.run(None).unwrap();
    (w, sum.references)
}

fn verifies(name: &str) {
    for p in [1, 4, 16] {
        let w = run(workload::find(name, Size::Test).unwrap(), p);
        let v = w.verify();
        assert!(v.verified, "{name} on {p} processors: {}", v.detail);
    }
}

#[test]
fn fft_verifies() {
    verifies("fft");
}
#[test]
fn lu_verifies() {
    verifies("lu");
}
#[test]
fn radix_verifies() {
    verifies("radix");
}
#[test]
fn ocean_verifies() {
    verifies("ocean");
}

#[test]
fn corrupted_results_fail() {
    let (w, _) = run_concrete(Fft::new(10), 4);
    assert!(w.verify().verified);
    w.corrupt();
    assert!(!w.verify().verified, "FFT: {}", w.verify().detail);

    let (w, _) = run_concrete(Lu::new(64), 4);
    assert!(w.verify().verified);
    w.corrupt();
    assert!(!w.verify().verified, "LU: {}", w.verify().detail);

    let (w, _) = run_concrete(Radix::new(16 << 10), 4);
    assert!(w.verify().verified);
    w.corrupt();
    assert!(!w.verify().verified, "RADIX: {}", w.verify().detail);

    let (w, _) = run_concrete(Ocean::new(32, 1), 4);
    assert!(w.verify().verified);
    w.corrupt();
    assert!(!w.verify().verified, "OCEAN: {}", w.verify().detail);
}

#[test]
fn impossible_processor_counts_are_rejected() {
    assert!(Fft::new(10).check(3).is_err(), "P must be a power of two");
    assert!(Fft::new(10).check(64).is_err(), "P must divide √n = 32");
    assert!(Fft::new(11).check(1).is_err(), "odd exponent");
    assert!(Lu::new(60).check(4).is_err(), "n not a multiple of 16");
    assert!(Radix::new(1000).check(3).is_err(), "P not a power of two");
    assert!(
        Ocean::new(32, 1).check(3).is_err(),
        "3 x 1 does not divide 32"
    );
    assert!(Ocean::new(30, 1).check(1).is_err(), "n not a power of two");
    // `install` reports the kernel's reason.
    let mut m = machine(4);
    let e = install(Box::new(Fft::new(10)), &mut m, Some(3))
        .err()
        .unwrap();
    assert!(e.contains("power of two"), "{e}");
    assert!(install(Box::new(Fft::new(10)), &mut m, Some(5)).is_err());
}

/// Ratio of the references of `big` to those of `small`, both on 4 processors.
fn ratio<W: Workload + 'static>(small: W, big: W) -> f64 {
    let (_, a) = run_concrete(small, 4);
    let (_, b) = run_concrete(big, 4);
    b as f64 / a as f64
}

#[test]
fn references_scale_with_the_problem() {
    // FFT: n log n (2^10 -> 2^12: 4 x 12/10 = 4.8).
    let r = ratio(Fft::new(10), Fft::new(12));
    assert!((4.3..5.3).contains(&r), "FFT ratio {r}");
    // LU: n³ (64 -> 128: 8, less the lower-order terms).
    let r = ratio(Lu::new(64), Lu::new(128));
    assert!((6.5..8.5).contains(&r), "LU ratio {r}");
    // RADIX: linear in the keys (plus a per-pass cost per processor).
    let r = ratio(Radix::new(16 << 10), Radix::new(64 << 10));
    assert!((3.5..4.1).contains(&r), "RADIX ratio {r}");
    // OCEAN: the points (32² -> 64²: 4) times V-cycles per solve (about constant).
    let r = ratio(Ocean::new(32, 1), Ocean::new(64, 1));
    assert!((3.0..5.0).contains(&r), "OCEAN ratio {r}");
}

#[test]
fn the_four_kernels_are_registered() {
    let all = workload::list();
    for name in ["fft", "lu", "ocean", "radix"] {
        let w = all.iter().find(|w| w.name == name).unwrap();
        assert_eq!(w.kind, "splash2");
        assert!(!w.structures.is_empty());
    }
}

/// OCEAN's grids, each allocated as one piece per processor (the structures of `pmusim list
/// workloads` but `multi`, the shared error reduction).
const OCEAN_GRIDS: [&str; 8] = [
    "psi",
    "psim",
    "work1",
    "work2",
    "work3",
    "tauz",
    "q_multi",
    "rhs_multi",
];

/// OCEAN lays each processor's grids out back to back (SPLASH's per-processor allocations), so
/// at paper size on 64 processors a processor's `q_multi` and `rhs_multi` pieces, which `relax`
/// reads together, fall on different lines of a direct-mapped 1 MiB cache. (Laid out grid by
/// grid they were exactly 2 MiB apart: 57 M read misses on `numachine` instead of 4.3 M.)
#[test]
fn ocean_keeps_each_processors_grids_together() {
    let procs = 64;
    let mut m = machine(procs);
    let mut w = Ocean::new(256, 3);
    w.setup(&mut m.setup(), procs);
    let regions: Vec<_> = m
        .setup()
        .map()
        .regions()
        .iter()
        .filter(|r| OCEAN_GRIDS.contains(&r.name.as_str()))
        .cloned()
        .collect();
    assert_eq!(regions.len(), OCEAN_GRIDS.len() * procs);
    let page = 4096;
    for (p, piece) in regions.chunks(OCEAN_GRIDS.len()).enumerate() {
        for (k, r) in piece.iter().enumerate() {
            assert_eq!(r.name, OCEAN_GRIDS[k], "processor {p}");
            assert_eq!(
                r.bytes % page,
                0,
                "{} of processor {p}: whole pages",
                r.name
            );
            if k > 0 {
                let prev = &piece[k - 1];
                assert_eq!(
                    r.base,
                    prev.base + prev.bytes,
                    "{} of processor {p}",
                    r.name
                );
            }
        }
        // psi, psim, work1..3: two 34x34 layers of 3 pages; tauz one; the six multigrid
        // levels 3 + 5 x 1 pages each: 49 pages in all.
        let last = &piece[OCEAN_GRIDS.len() - 1];
        assert_eq!(last.base + last.bytes - piece[0].base, 49 * page);
        let cache = 1 << 20;
        let (q, rhs) = (&piece[6], &piece[7]);
        let (qs, rs) = (q.base % cache, rhs.base % cache);
        let apart = qs.abs_diff(rs).min(cache - qs.abs_diff(rs));
        assert!(
            apart >= q.bytes,
            "processor {p}: q_multi and rhs_multi {apart} bytes apart modulo 1 MiB"
        );
    }
}

/// OCEAN's multigrid stops where every processor keeps one point per side, so its coarsest
/// level grows with the processor grid (2x2 on 1 processor, 8x8 on 64); the coarsest level
/// gets enough sweeps to be solved as well whatever its size, so 64 processors need no more
/// V-cycles than 1. (With a fixed 8 sweeps: 48 V-cycles against 28 at this size, 72 against
/// 42 at paper size, and 1.8 times the references.)
#[test]
fn ocean_v_cycles_do_not_grow_with_the_processor_grid() {
    use workload::kernels::ocean::{physics::Params, reference};
    let p = Params::new(32, 2);
    let total = |px: usize, py: usize| -> usize {
        reference::run(&p, &p.levels(px, py)).cycles.iter().sum()
    };
    let (one, sixteen, sixty_four) = (total(1, 1), total(4, 4), total(8, 8));
    assert_eq!(p.levels(8, 8), vec![32, 16, 8]);
    assert!(
        sixty_four <= one && sixteen <= one,
        "V-cycles: 1 processor {one}, 16 {sixteen}, 64 {sixty_four}"
    );
}

/// Records every PhaseID write: (processor, phase) in simulated-time order per processor.
struct PhaseLog(Rc<std::cell::RefCell<Vec<(u16, u16)>>>);

impl machine::probe::Probe for PhaseLog {
    fn observe(&mut self, o: &machine::probe::Observation, _: &mut machine::probe::Signals) {
        if let machine::probe::Observation::Phase { proc, phase, .. } = *o {
            self.0.borrow_mut().push((proc, phase));
        }
    }
    fn interest(&self) -> u32 {
        machine::probe::kind::PHASE
    }
    fn name(&self) -> &str {
        "phase-log"
    }
}

/// The phases each processor of a kernel enters, in order, with repeats of one phase folded
/// (KERNELS.md, "Phases").
fn phase_sequence(name: &str, procs: usize) -> Vec<Vec<u16>> {
    let mut m = machine(procs);
    let log = Rc::new(std::cell::RefCell::new(Vec::new()));
    m.attach(Box::new(PhaseLog(log.clone())));
    let w = install(workload::find(name, Size::Test).unwrap(), &mut m, None).unwrap();
    m.run(None).unwrap();
    assert!(
        w.verify().verified,
        "{name} verifies with its phases marked"
    );
    let mut per = vec![Vec::new(); procs];
    for &(p, ph) in log.borrow().iter() {
        per[p as usize].push(ph);
    }
    per
}

#[test]
fn kernels_mark_their_phases_in_the_documented_order() {
    use workload::kernels::{fft, lu, ocean, radix};
    // FFT: touch, then per six-step FFT (forward and inverse) transpose, row FFTs, transpose,
    // row FFTs, transpose, copy.
    let six = [
        fft::PHASE_TRANSPOSE,
        fft::PHASE_ROW_FFTS,
        fft::PHASE_TRANSPOSE,
        fft::PHASE_ROW_FFTS,
        fft::PHASE_TRANSPOSE,
        fft::PHASE_COPY,
    ];
    let mut want = vec![fft::PHASE_INIT];
    want.extend(six);
    want.extend(six);
    for seq in phase_sequence("fft", 4) {
        assert_eq!(seq, want);
    }
    // RADIX: init, then histogram, prefix, permute per digit (20-bit keys, 8-bit digits: 3).
    let mut want = vec![radix::PHASE_INIT];
    for _ in 0..3 {
        want.extend([
            radix::PHASE_HISTOGRAM,
            radix::PHASE_PREFIX,
            radix::PHASE_PERMUTE,
        ]);
    }
    for seq in phase_sequence("radix", 4) {
        assert_eq!(seq, want);
    }
    // LU: init, then diagonal, perimeter, interior for each diagonal block.
    let per = phase_sequence("lu", 4);
    for seq in &per {
        assert_eq!(seq[0], lu::PHASE_INIT);
        let steps = &seq[1..];
        assert_eq!(steps.len() % 3, 0, "{seq:?}");
        for s in steps.chunks(3) {
            assert_eq!(
                s,
                [lu::PHASE_DIAGONAL, lu::PHASE_PERIMETER, lu::PHASE_INTERIOR]
            );
        }
    }
    // OCEAN: init, then per time step the step's grid work and the multigrid levels, always
    // entering level 0 first, each deeper level only from the one above it.
    for seq in phase_sequence("ocean", 4) {
        assert_eq!(seq[..2], [ocean::PHASE_INIT, ocean::PHASE_STEP]);
        let deepest = *seq.iter().max().unwrap();
        assert!(
            deepest > ocean::PHASE_LEVEL0 + 1,
            "the V-cycle goes down: {seq:?}"
        );
        for w in seq[1..].windows(2) {
            match (w[0], w[1]) {
                (a, b) if b == ocean::PHASE_STEP => assert!(a >= ocean::PHASE_LEVEL0),
                (a, b) if b == ocean::PHASE_LEVEL0 => assert!(a >= ocean::PHASE_STEP),
                (a, b) => assert!(b + 1 == a || b == a + 1, "{a} -> {b} in {seq:?}"),
            }
        }
    }
}

/// Issue 16: with a memory controller at every home (the interface buffer in front of banked
/// DRAM) every kernel still verifies on every preset (8 processors; `cmp` and `bgq` with a
/// small shared L2), at the lowest and highest watermark and
/// with read-ahead on and off; locks, barriers and flags are values that go through the
/// buffer, so a lost or stale write would hang or break the run. After the run no write is left
/// in a buffer and DRAM holds every line's memory value.
#[test]
fn every_kernel_verifies_with_the_memory_controller_on() {
    use machine::mem::config::MemCtlCfg;
    for preset in ["ideal", "numachine", "flash", "power2", "cmp", "bgq"] {
        for spec in [
            "entries=32,watermark=1,read_ahead=on",
            "entries=32,watermark=32,read_ahead=off",
        ] {
            for name in ["fft", "lu", "radix", "ocean"] {
                let mut p = Preset::builtin(preset).unwrap().with_procs(8).unwrap();
                if let Some(level) = p.caches.shared.first_mut() {
                    // `cmp`, `bgq`: a 16 KiB 4-way shared L2, so that the kernels' dirty
                    // lines reach memory at test size (a 4 or 32 MiB L2 holds all their data).
                    level.cache.size_bytes = 16 * 1024;
                    level.cache.assoc = 4;
                }
                let homes = p
                    .cmp
                    .as_ref()
                    .map_or(p.nodes(), |c| c.memory_controllers as usize);
                p.memctl = Some(MemCtlCfg::apply_spec(None, spec, p.memory_line_bytes()).unwrap());
                let mut m = Machine::new(p, Options::default()).unwrap();
                let w = install(workload::find(name, Size::Test).unwrap(), &mut m, None).unwrap();
                m.run(None).unwrap();
                let v = w.verify();
                let what = format!("{name} on {preset} with {spec}");
                assert!(v.verified, "{what}: {}", v.detail);
                let st = m.state();
                let c = st.system.controller_reports();
                assert_eq!(c.len(), homes, "{what}");
                assert!(c.iter().all(|r| r.buffered_units == 0), "{what}");
                assert!(c.iter().map(|r| r.buffer.writes).sum::<u64>() > 0, "{what}");
                let shift = st.preset.line_bytes().trailing_zeros();
                let bad = st.system.memory_mismatches(&st.map, shift);
                assert!(bad.is_empty(), "{what}: {bad:x?}");
            }
        }
    }
}

/// The `elan` preset (one processor, write-through L1, word-mode interface buffer): every
/// kernel verifies with the buffer and without it, no write is left buffered, and DRAM holds
/// every line's value; a write-through cache on several processors or without a controller is
/// refused naming the key.
#[test]
fn every_kernel_verifies_on_elan() {
    use machine::mem::config::MemCtlCfg;
    for spec in ["on", "buffer=off", "watermark=1,read_ahead=off"] {
        for name in ["fft", "lu", "radix", "ocean"] {
            let mut p = Preset::builtin("elan").unwrap();
            p.memctl =
                Some(MemCtlCfg::apply_spec(p.memctl.take(), spec, p.memory_line_bytes()).unwrap());
            let mut m = Machine::new(p, Options::default()).unwrap();
            let w = install(workload::find(name, Size::Test).unwrap(), &mut m, None).unwrap();
            m.run(None).unwrap();
            let what = format!("{name} on elan with {spec}");
            assert!(w.verify().verified, "{what}");
            let st = m.state();
            let c = &st.system.controller_reports()[0];
            assert_eq!(c.buffered_units, 0, "{what}");
            assert!(
                c.buffer.writes > 1000,
                "{what}: stores reached the controller"
            );
            assert!(st.cores[0].cnt.l2_misses > 0, "{what}");
            let bad = st.system.memory_mismatches(&st.map, 4);
            assert!(bad.is_empty(), "{what}: {bad:x?}");
        }
    }
    let e = Preset::builtin("elan").unwrap().with_procs(2).unwrap_err();
    assert!(e.0.contains("caches.l1d_write_through"), "{e}");
    let mut p = Preset::builtin("elan").unwrap();
    p.memctl.as_mut().unwrap().enabled = false;
    let e = p.validate().unwrap_err();
    assert!(
        e.0.contains("caches.l1d_write_through") && e.0.contains("[memctl]"),
        "{e}"
    );
}

/// Issue 20 (FlashPoint, OCEAN's read split): SPLASH-2's contiguous-partition OCEAN allocates
/// each processor's subgrid of every grid (`G_MALLOC` per processor and grid in `main`, and
/// one per-processor piece of `q_multi`/`rhs_multi` holding all its levels) and its
/// `slave1.C` places them on that processor's node (`allocate(START, SIZE, I)`). Ours must
/// do the same: on `flash` (one processor per node) the k-th region of each grid's name is
/// processor k's piece and every page of it is homed on node k, after a run that verifies.
/// The data behind docs/flashpoint.md ("OCEAN's read split and write mix"): with its own data homed
/// locally, OCEAN's remote reads are the ghost pulls of neighbours' edges.
#[test]
fn ocean_places_each_processor_s_subgrids_on_its_node() {
    let procs = 16;
    let p = Preset::builtin("flash").unwrap().with_procs(procs).unwrap();
    let mut m = Machine::new(p, Options::default()).unwrap();
    let w = install(workload::find("ocean", Size::Test).unwrap(), &mut m, None).unwrap();
    m.run(None).unwrap();
    assert!(w.verify().verified, "{}", w.verify().detail);
    let st = m.state();
    let node_of = |p: usize| st.preset.node_of_proc(p);
    for g in OCEAN_GRIDS {
        let pieces: Vec<_> = st.map.regions().iter().filter(|r| r.name == g).collect();
        assert_eq!(pieces.len(), procs, "{g}: one piece per processor");
        for (k, r) in pieces.iter().enumerate() {
            assert_eq!(r.base % 4096, 0, "{g} piece {k} page-aligned");
            let mut pages = 0;
            for a in (r.base..r.base + r.bytes).step_by(4096) {
                let h = st.map.known_home(a);
                assert_eq!(
                    h,
                    Some(node_of(k)),
                    "{g}: page {a:#x} of processor {k}'s piece"
                );
                pages += 1;
            }
            assert!(pages >= 1, "{g} piece {k}");
        }
    }
}
