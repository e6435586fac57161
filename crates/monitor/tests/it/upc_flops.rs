//! `PEVT_INST_QFPU_FPGRP1` and PAPI's `PAPI_FP_OPS` (docs/upc.md, "Flop counting"): the
//! UPC_P counts the floating-point operations of the FP groups but the moves, each retired
//! instruction weighted as the chip weights it (the driver's `FPScale`: scalar 1, fmadd 2,
//! quad 4, quad fma 8, divide and square root by the UPC_P's weights, 8 by default).

use machine::cpu::op::Op;
use machine::{Machine, Options, Preset};
use monitor::upc::bgpm::EventSet;
use monitor::upc::config::Config;
use monitor::upc::events::{flops_in, op};
use monitor::upc::regs::{self, CounterCfg, FpWeights};
use std::cell::RefCell;
use std::rc::Rc;

/// A program measures a block of known FP instructions with BGPM: `PAPI_FP_OPS` gives the
/// flops worked out by hand, `PAPI_FP_INS` the instructions; a second set with
/// `Bgpm_SetFpDivScale(0)` and `Bgpm_SetFpSqrScale(1)` counts 1 flop per divide and 2 per
/// square root, and the weights read back from `P_FP_WEIGHTS`.
#[test]
fn fp_ops_of_a_known_block_are_its_flops() {
    let cfg = Config {
        p: vec![CounterCfg::default(); 24],
        l2: vec![CounterCfg::default(); 16],
        ..Config::default()
    };
    let (mut m, _upc) = crate::bgq2_with_upc(&cfg);
    let got = Rc::new(RefCell::new(Vec::new()));
    let out = got.clone();
    m.spawn(0, move |ctx| {
        let block = |ctx: &mut machine::Ctx| {
            ctx.op(Op::FpFma, 1000); // 2 each
            ctx.op(Op::QpAdd, 500); // 4 each
            ctx.op(Op::QpFma, 100); // 8 each
            ctx.op(Op::FpDiv, 7); // the divide weight
            ctx.op(Op::FpSqrt, 3); // the square-root weight
            ctx.op(Op::FpConvert, 10); // 1 each
            ctx.fp(3); // 1 each
            ctx.int(300); // none
        };
        let mut set = EventSet::new();
        let ops = set.add_preset("PAPI_FP_OPS", 1).unwrap();
        let ins = set.add_preset("PAPI_FP_INS", 1).unwrap();
        set.apply(ctx);
        set.start(ctx);
        block(ctx);
        set.stop(ctx);
        let a = (set.read_preset(ctx, &ops), set.read_preset(ctx, &ins));
        let mut set = EventSet::new();
        let ops = set.add_preset("PAPI_FP_OPS", 1).unwrap();
        assert!(set.set_fp_scale(true, 4).is_err());
        set.set_fp_scale(true, 0).unwrap();
        set.set_fp_scale(false, 1).unwrap();
        set.apply(ctx);
        let w = ctx.monitor_read(regs::UPC_P_BASE + regs::P_FP_WEIGHTS, 8);
        set.start(ctx);
        block(ctx);
        set.stop(ctx);
        *out.borrow_mut() = vec![a.0, a.1, set.read_preset(ctx, &ops), w as i64];
    });
    m.run(None).unwrap();
    let v = got.borrow().clone();
    let base = 1000 * 2 + 500 * 4 + 100 * 8 + 10 + 3;
    assert_eq!(v[0], base + 7 * 8 + 3 * 8);
    assert_eq!(v[1], 1000 + 500 + 100 + 7 + 3 + 10 + 3);
    assert_eq!(v[2], base + 7 + 3 * 2);
    assert_eq!(
        FpWeights::decode(v[3] as u64),
        FpWeights { div: 0, sqrt: 1 }
    );
}

/// 64 threads of LU and of FFT on `bgq` (16 cores x 4 threads), every core's UPC_P counting
/// `PEVT_INST_QFPU_FPGRP1` over its four threads beside `PEVT_INST_QFPU_ALL` and the divides:
/// each core's UPC_C total equals the flops of the instructions the machine retired on it
/// (the weight of each op's group times its count, `Counters::ops`), nothing is lost, and on
/// LU (whose divides count 8, its other FP ops 1) the flops exceed the FP instructions by 7 per
/// divide; on FFT (adds and multiplies) they equal them.
#[test]
fn fpgrp1_on_lu_and_fft_equals_the_flops_of_the_retired_instructions() {
    let text = "[[counter]]\nindex = 0\nevent = \"PEVT_INST_QFPU_FPGRP1\"\n[[counter]]\nindex = 1\nevent = \"PEVT_INST_QFPU_ALL\"\n[[counter]]\nindex = 2\nevent = \"PEVT_INST_QFPU_FDIV\"\n";
    let cfg = Config::from_toml(text, "flops.toml").unwrap();
    for kernel in ["lu", "fft"] {
        let mut m = Machine::new(Preset::builtin("bgq").unwrap(), Options::default()).unwrap();
        let upc = monitor::upc::attach(&mut m, &cfg).unwrap();
        let w = workload::install(
            workload::find(kernel, workload::Size::Test).unwrap(),
            &mut m,
            Some(64),
        )
        .unwrap();
        m.run(None).unwrap();
        assert!(w.verify().verified, "{kernel} verifies");
        let u = upc.borrow();
        let st = m.state();
        let d = FpWeights::default();
        let (mut flops, mut fp) = (0, 0);
        for (k, core) in st.cores.iter().enumerate() {
            let unit = &u.units[k];
            let c = &unit.counters[0];
            assert_eq!(c.cfg.event, op::FPGRP1);
            assert_eq!(c.lost, 0, "{kernel} core {k}");
            let want = flops_in(&core.cnt.ops(), d.div, d.sqrt);
            assert_eq!(u.counted(c.sram), want, "{kernel} core {k}");
            assert_eq!(c.exact, want, "{kernel} core {k}");
            flops += want;
            let ins = u.counted(unit.counters[1].sram);
            let div = u.counted(unit.counters[2].sram);
            assert!(want >= ins + 7 * div, "{kernel} core {k}");
            fp += ins;
        }
        assert!(fp > 0, "{kernel}");
        let divs: u64 = st
            .cores
            .iter()
            .map(|c| c.cnt.ops()[Op::FpDiv as usize])
            .sum();
        if kernel == "lu" {
            assert!(divs > 0);
            assert_eq!(
                flops,
                fp + 7 * divs,
                "{kernel}: {flops} flops, {fp} instructions"
            );
        } else {
            // FFT retires fp-add and fp-mul only: one flop each.
            assert_eq!((flops, divs), (fp, 0), "{kernel}");
        }
    }
}

/// A flop-counting counter with an overflow threshold (hardware thread 0 of each core, 1,000
/// flops; 64 threads of LU on `bgq`): its interrupt comes within a few cycles of the crossing,
/// as an instruction counter's does (the machine's run-ahead bound counts a divide as 8
/// events: `Upc::publish_need`), and its count passes 2^64 by exactly the flops after the
/// 1,000th.
#[test]
fn fpgrp1_overflow_interrupts_at_the_crossing() {
    let cfg = Config::from_toml(
        "[[counter]]\nindex = 0\nevent = \"PEVT_INST_QFPU_FPGRP1\"\nthreads = [0]\noverflow = 1000\n",
        "ovf.toml",
    )
    .unwrap();
    let mut m = Machine::new(Preset::builtin("bgq").unwrap(), Options::default()).unwrap();
    let upc = monitor::upc::attach(&mut m, &cfg).unwrap();
    let w = workload::install(
        workload::find("lu", workload::Size::Test).unwrap(),
        &mut m,
        Some(64),
    )
    .unwrap();
    m.run(None).unwrap();
    assert!(w.verify().verified);
    let u = upc.borrow();
    let lat: Vec<u64> = u
        .irqs
        .iter()
        .filter(|q| q.counter == 0 && !u.units[q.pos].slice)
        .map(|q| (q.raised - q.crossed.expect("a crossing")) / u.cp)
        .collect();
    println!("FPGRP1 interrupt latencies (cycles): {lat:?}");
    let mut crossed = 0;
    for k in 0..16 {
        let c = &u.units[k].counters[0];
        if c.exact >= 1000 {
            crossed += 1;
            assert_eq!(
                u.c.sram[c.sram].wrapping_add(c.value),
                c.exact.wrapping_sub(1000),
                "core {k}"
            );
        }
    }
    assert!(crossed > 0);
    assert_eq!(lat.len(), crossed);
    assert!(lat.iter().all(|&l| l <= 4), "{lat:?}");
}
