//! The A2's branch-mispredict event (`PEVT_XU_BR_MISPRED_COMMIT`, the machine's
//! `CoreEvent::BrMispredict`) on a `bgq` core given a branch predictor, and the PAPI presets
//! made of it (`PAPI_BR_MSP`, `PAPI_BR_PRC`; docs/upc.md, "PAPI presets").

use super::with_upc;
use machine::config::BranchPredictorCfg;
use machine::probe::CoreEvent;
use monitor::upc::config::Config;
use monitor::upc::events::{a2, op, Group};
use monitor::upc::papi;
use monitor::upc::regs::CounterCfg;

fn counter(group: Group, event: u8, threads: u8) -> CounterCfg {
    CounterCfg {
        event,
        group: group as u8,
        threads,
        enable: true,
        ..Default::default()
    }
}

/// 8 threads on 2 `bgq` cores x 4 with a 1,024-entry bimodal predictor: each retires 3,000
/// taken-every-third conditional branches (which the predictor gets wrong about once in
/// three) and 3,000 always-taken ones. Counters 0..3 of each core count the mispredicts of
/// one hardware thread each, counter 4 of all four, counter 5 the conditional branches: each
/// per-thread count equals the machine's ground truth for that hardware thread, the sum
/// equals the core's `branch_mispredicts`, and `PAPI_BR_MSP` / `PAPI_BR_PRC` computed as PAPI
/// does from UPC_C's counts equal the machine's mispredicts and correctly predicted
/// conditional branches.
#[test]
fn mispredicts_counted_per_thread_and_presets_exact() {
    let mut preset = machine::Preset::builtin("bgq")
        .unwrap()
        .with_procs(2)
        .unwrap();
    preset.cpu.branch_predictor = Some(BranchPredictorCfg {
        entries: 1024,
        mispredict_cycles: 5,
    });
    let mut p: Vec<CounterCfg> = (0..4)
        .map(|k| counter(Group::A2, a2::BR_MISPRED, 1 << k))
        .collect();
    p.push(counter(Group::A2, a2::BR_MISPRED, 0xf));
    p.push(counter(Group::Opcode, op::BRC, 0xf));
    p.resize(24, CounterCfg::default());
    let cfg = Config {
        p,
        l2: vec![Default::default(); 16],
        ..Config::default()
    };
    let (mut m, upc) = with_upc(preset, &cfg);
    for t in 0..8 {
        m.spawn(t, move |ctx| {
            // Past the chain's start (33 x2 cycles after cycle 0).
            ctx.idle(1_000);
            for i in 0..3_000u64 {
                ctx.int(3);
                ctx.branch((i + t as u64).is_multiple_of(3));
                ctx.int(2);
                ctx.branch(true);
            }
        });
    }
    m.run(None).unwrap();
    let u = upc.borrow();
    let st = m.state();
    let truth = st.truth.as_ref().unwrap();
    let msp = papi::preset("PAPI_BR_MSP").unwrap();
    let prc = papi::preset("PAPI_BR_PRC").unwrap();
    for core in 0..2 {
        let unit = &u.units[core];
        let n = |i: usize| u.counted(unit.counters[i].sram);
        let mut sum = 0;
        for k in 0..4 {
            let want = truth.core_events[core * 4 + k][CoreEvent::BrMispredict as usize];
            assert_eq!(n(k), want, "core {core} thread {k}");
            assert_eq!(n(k), unit.counters[k].exact);
            assert!(want > 500, "core {core} thread {k}: {want}");
            sum += want;
        }
        let cnt = &st.cores[core].cnt;
        assert_eq!(n(4), sum);
        assert_eq!(sum, cnt.branch_mispredicts);
        assert_eq!(msp.value(&[n(4) as i64]), cnt.branch_mispredicts as i64);
        // Every branch here is conditional: BRC less the mispredicts are the right ones.
        let brc = n(5);
        assert_eq!(brc, 4 * 6_000);
        assert_eq!(
            prc.value(&[brc as i64, n(4) as i64]),
            (brc - cnt.branch_mispredicts) as i64
        );
        println!(
            "core {core}: mispredicts {sum} of {brc} conditional branches (per thread {:?})",
            (0..4).map(n).collect::<Vec<_>>()
        );
    }
}
