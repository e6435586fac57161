//! PAPI's BG/Q presets on the UPC (docs/upc.md, "PAPI presets"): the derived ones
//! (`DERIVED_SUB`, `DERIVED_POSTFIX`) from a configuration file and from a simulated program's
//! event set, computed as PAPI computes them and checked against what the program did.

use machine::Machine;
use monitor::upc::bgpm::EventSet;
use monitor::upc::config::Config;
use std::cell::RefCell;
use std::rc::Rc;

/// 8 threads on 2 `bgq` cores x 4 hardware threads each `fetch_add` 1 to one shared word `k`
/// times (lwarx/stwcx. loops, contended), after `idle` cycles; `f` runs on thread 0 around
/// its loop (before, after).
fn contended(
    cfg: &Config,
    k: u64,
    around: impl FnMut(&mut machine::Ctx, bool) + 'static,
) -> (Machine, Rc<RefCell<Upc>>) {
    let (mut m, upc) = crate::bgq2_with_upc(cfg);
    let word = m.setup().alloc("counter", 128, machine::Place::FirstTouch);
    let mut f0 = Some(around);
    for t in 0..8 {
        let mut f = if t == 0 { f0.take() } else { None };
        m.spawn(t, move |ctx| {
            ctx.idle(1000);
            if let Some(f) = f.as_mut() {
                f(ctx, false);
            }
            for i in 0..k {
                ctx.fetch_add(word, 1);
                ctx.int(1 + (i + t as u64) % 5);
            }
            if let Some(f) = f.as_mut() {
                f(ctx, true);
            }
        });
    }
    m.run(None).unwrap();
    (m, upc)
}

use monitor::upc::probe::Upc;

/// A configuration file asks for `PAPI_CSR_SUC` (stcx - stcx failures, `DERIVED_SUB`),
/// `PAPI_STL_CCY` (cycles - instructions) and `PAPI_TLB_TL` (`DERIVED_POSTFIX`) by name: each
/// takes one counter per event, and the report's value equals PAPI's formula over the exact
/// counts. Every increment is one successful stwcx., so `PAPI_CSR_SUC` is exactly 8 x 300;
/// the instructions are the cores' retired instructions.
#[test]
fn derived_presets_from_a_configuration_file() {
    const K: u64 = 300;
    let cfg = Config::from_toml(
        "[[counter]]\nindex = 0\nevent = \"PAPI_CSR_SUC\"\n[[counter]]\nindex = 2\nevent = \"papi_stl_ccy\"\n[[counter]]\nindex = 4\nevent = \"PAPI_TLB_TL\"\n[[counter]]\nindex = 6\nevent = \"PEVT_XU_STCX_FAIL\"\n",
        "p.toml",
    )
    .unwrap();
    assert_eq!(
        cfg.presets,
        vec![(0, "PAPI_CSR_SUC"), (2, "PAPI_STL_CCY"), (4, "PAPI_TLB_TL")]
    );
    let (m, upc) = contended(&cfg, K, |_, _| {});
    let u = upc.borrow();
    let j = monitor::upc::report::json(&u, &cfg, 0);
    let papi = j["papi"].as_array().unwrap();
    assert_eq!(papi.len(), 3);
    for p in papi {
        assert_eq!(p["value"], p["exact"], "{p}");
    }
    assert_eq!(papi[0]["value"], 8 * K);
    assert_eq!(
        papi[0]["derivation"],
        "PEVT_LSU_COMMIT_STCX - PEVT_XU_STCX_FAIL"
    );
    // The stcx failures (counter 6) are the ones subtracted: stcx = 2,400 + failures.
    // Over every UPC_P: the two program cores and the system core (which retires nothing,
    // but whose PEVT_CYCLES counts the clock).
    let cores = u.units.iter().filter(|x| !x.slice && !x.central).count();
    assert_eq!(cores, 3);
    let sum = |i: usize| -> u64 {
        (0..cores)
            .map(|k| u.counted(u.units[k].counters[i].sram))
            .sum()
    };
    assert!(sum(6) > 0, "contended: some stwcx. fail");
    assert_eq!(sum(0), 8 * K + sum(6));
    assert_eq!(sum(1), sum(6));
    // cycles - instructions: the instructions are every instruction the cores retired (the
    // counters started before any: the threads idle 1,000 cycles first), the cycles each
    // core's from the start taking effect (x2 cycle 2 x (3 + 16) = 38) to the end.
    let st = m.state();
    let end = u.end.expect("the run ended") / st.cpu_period;
    assert_eq!(sum(2), 3 * (end - 38));
    let inst: u64 = st
        .cores
        .iter()
        .map(|c| c.cnt.ops().iter().sum::<u64>())
        .sum();
    assert_eq!(sum(3), inst);
    assert_eq!(
        papi[1]["value"].as_i64().unwrap(),
        sum(2) as i64 - inst as i64
    );
    // Presets whose native events pmusim does not produce are refused by name.
    for (text, want) in [
        (
            "[[counter]]\nindex = 0\nevent = \"PAPI_STL_ICY\"\n",
            "p.toml: counter 0: event: PAPI_STL_ICY is not available on pmusim's Blue Gene/Q: PAPI computes it from DERIVED_SUB PEVT_CYCLES - PEVT_IU_TOT_ISSUE_COUNT",
        ),
        (
            "[[counter]]\nindex = 23\nevent = \"PAPI_CSR_SUC\"\n",
            "takes 2 counters",
        ),
        (
            "[[counter]]\nindex = 1\nevent = \"PEVT_CYCLES\"\n[[counter]]\nindex = 0\nevent = \"PAPI_STL_CCY\"\n",
            "takes counters 0..1, and counter 1 is configured too",
        ),
        (
            "[[counter]]\nindex = 0\nevent = \"PAPI_STL_CCY\"\noverflow = 10\n",
            "overflow, edge and invert apply to one event",
        ),
    ] {
        let e = Config::from_toml(text, "p.toml").unwrap_err();
        assert!(format!("{e:?}").contains(want), "{e:?}");
    }
}

/// A simulated program adds presets to its event set (as `PAPI_add_named_event` over BGPM):
/// `PAPI_CSR_SUC` counting its own thread is exactly its 300 increments however many of its
/// stwcx. failed; `PAPI_STL_CCY` equals PAPI's formula over the two counters' exact counts;
/// an absent preset and one that does not fit are refused by name.
#[test]
fn derived_presets_in_a_program_event_set() {
    const K: u64 = 300;
    let cfg = Config {
        p: vec![Default::default(); 24],
        l2: vec![Default::default(); 16],
        ..Config::default()
    };
    let got = Rc::new(RefCell::new((0i64, 0i64, 0i64, 0i64)));
    let out = got.clone();
    let mut set = EventSet::new();
    let suc = set.add_preset("PAPI_CSR_SUC", 1).unwrap();
    let fal = set.add_preset("PAPI_CSR_FAL", 1).unwrap();
    let ccy = set.add_preset("PAPI_STL_CCY", 1).unwrap();
    assert_eq!((suc.first, fal.first, ccy.first), (0, 2, 3));
    let e = set.add_preset("PAPI_BTAC_M", 1).unwrap_err();
    assert!(
        format!("{e:?}").contains("pmusim produces no PEVT_XU_BR_TARG_ADDR_MISPRED_COMMIT"),
        "{e:?}"
    );
    let mut full = EventSet::new();
    full.add_preset("PAPI_INT_INS", 0xf).unwrap();
    full.add_preset("PAPI_INT_INS", 0xf).unwrap();
    full.add_preset("PAPI_INT_INS", 0xf).unwrap();
    full.add_preset("PAPI_L1_DCM", 0xf).unwrap();
    let e = full.add_preset("PAPI_STL_CCY", 0xf).unwrap_err();
    assert!(
        format!("{e:?}").contains("takes 2 counters, 1 of the 24 are left"),
        "{e:?}"
    );
    let (_m, upc) = contended(&cfg, K, move |ctx, end| {
        if !end {
            set.apply(ctx);
            set.start(ctx);
        } else {
            set.stop(ctx);
            *out.borrow_mut() = (
                set.read_preset(ctx, &suc),
                set.read_preset(ctx, &fal),
                set.read_preset(ctx, &ccy),
                0,
            );
        }
    });
    let (s, f, c, _) = *got.borrow();
    assert_eq!(s, K as i64);
    assert!(f > 0, "thread 0's stwcx. fail sometimes: {f}");
    let u = upc.borrow();
    let ex = |i: usize| u.units[0].counters[i].exact as i64;
    assert_eq!(ex(0) - ex(1), K as i64);
    assert_eq!(f, ex(2));
    assert_eq!(c, ex(3) - ex(4));
    assert!(c > 0);
}
