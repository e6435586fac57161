//! BGPM's modes as a choice (`bgpm = "..."`, `--bgpm-mode`; `monitor::upc::bgpm_mode`): each
//! mode's default event set (6 counters per hardware thread) counts exactly, and the
//! inconsistent choices are refused by name.

use machine::cpu::op::Op;
use machine::probe::CoreEvent;
use monitor::upc::bgpm_mode::BgpmMode;
use monitor::upc::config::Config;
use monitor::upc::events::{a2, Group};

/// The counted events of every mode's default set, in a small program on `bgq`'s 2 cores x 4
/// threads that starts after the UPC's start took effect: each thread loads and stores its own
/// 64 KiB (L1 D misses) and adds to a shared counter (larx/stcx). Every one of the 48 counters
/// equals the machine's ground truth for its one hardware thread (its core events; the
/// per-thread `PEVT_INST_ALL` counters summed per core against the core's retired
/// instructions), and UPC_C's total equals its exact count; in `hw-distrib` the counters wait
/// for UPC_C's synchronous start, in the others each thread's UPC_P run bit starts them.
#[test]
fn each_bgpm_mode_counts_its_six_events_per_thread_exactly() {
    for mode in BgpmMode::ALL {
        let text = format!("bgpm = \"{}\"\n", mode.name());
        let cfg = Config::from_toml(&text, "modes.toml").unwrap();
        assert_eq!(cfg.bgpm, Some(mode));
        let (mut m, upc) = crate::bgq2_with_upc(&cfg);
        let data = m.setup().alloc("data", 8 << 16, machine::Place::FirstTouch);
        let word = m.setup().alloc("word", 128, machine::Place::FirstTouch);
        for t in 0..8u64 {
            m.spawn(t as usize, move |ctx| {
                ctx.idle(1000);
                let base = data + (t << 16);
                for i in 0..(1u64 << 16) / 64 {
                    ctx.load(base + i * 64);
                    ctx.int(1 + t);
                    ctx.store(base + i * 64 + 8);
                    if i % 64 == 0 {
                        ctx.fetch_add(word, 1);
                    }
                }
            });
        }
        m.run(None).unwrap();
        let st = m.state();
        let truth = st.truth.as_ref().unwrap();
        let u = upc.borrow();
        let x2 = u.chain.x2;
        let started = u.c.commands[0].effective;
        if mode == BgpmMode::HwDistrib {
            // UPC_C's start reaches every unit `units` x2 cycles after it is written.
            assert_eq!(started, u.chain.units() as u64 * x2);
        }
        for core in 0..2 {
            let mut inst = 0;
            for (i, c) in u.units[core].counters.iter().enumerate() {
                // The driver's affinity: thread k holds counters k, k+4, .., k+20.
                let k = i % 4;
                let what = format!("{} core {core} counter {i}", mode.name());
                assert!(c.cfg.enable && c.cfg.threads == 1 << k, "{what}");
                assert_eq!(c.cfg.sync_override, mode != BgpmMode::HwDistrib, "{what}");
                assert_eq!(c.lost, 0, "{what}");
                assert_eq!(u.counted(c.sram), c.exact, "{what}");
                let ev = |e: CoreEvent| truth.core_events[core * 4 + k][e as usize];
                let want = match (c.cfg.group, c.cfg.event) {
                    (g, _) if g == Group::Opcode as u8 => {
                        inst += c.exact;
                        continue;
                    }
                    (_, a2::LD_MISS) => ev(CoreEvent::LoadMiss),
                    (_, a2::ST_MISS) => ev(CoreEvent::StoreMiss),
                    (_, a2::IL1_MISS) => ev(CoreEvent::Il1Miss),
                    (_, a2::LARX) => ev(CoreEvent::LarxFinished),
                    (_, a2::STCX) => ev(CoreEvent::Stcx),
                    e => panic!("{what}: unexpected event {e:?}"),
                };
                assert_eq!(c.exact, want, "{what}");
                if c.cfg.event == a2::LD_MISS {
                    assert!(want >= 1024, "{what}: {want}");
                }
            }
            let ops: u64 = st.cores[core].cnt.ops().iter().sum();
            assert_eq!(inst, ops, "{} core {core}: PEVT_INST_ALL", mode.name());
            assert!(st.cores[core].cnt.ops()[Op::Larx as usize] > 0);
        }
    }
}

/// Inconsistent choices are refused, naming the place and the rule.
#[test]
fn inconsistent_bgpm_choices_are_refused_by_name() {
    let err = |text: &str| format!("{:?}", Config::from_toml(text, "f.toml").unwrap_err());
    let e = err(
        "bgpm = \"hw-distrib\"\n[[counter]]\nindex = 0\nevent = \"PEVT_CYCLES\"\noverflow = 1000\n",
    );
    assert!(
        e.contains("f.toml: counter 0: overflow: BGPM_MODE_HWDISTRIB supports no overflow"),
        "{e}"
    );
    let e = err("bgpm = \"ll-distrib\"\n[[l2counter]]\nindex = 0\nevent = \"PEVT_L2_HITS_SLICE\"\noverflow = 10\n");
    assert!(
        e.contains("l2counter 0: overflow: BGPM_MODE_LLDISTRIB"),
        "{e}"
    );
    let e = err("bgpm = \"sw-distrib\"\n[[counter]]\nindex = 7\nevent = \"PEVT_LSU_COMMIT_LD_MISSES\"\nthreads = [0]\n");
    assert!(e.contains("f.toml: counter 7: PEVT_LSU_COMMIT_LD_MISSES counts hardware thread 3 only in BGPM_MODE_SWDISTRIB (counters 3, 7, 11, 15, 19, 23 are thread 3's"), "{e}");
    let e = err("bgpm = \"sw-distrib\"\n[[counter]]\nindex = 0\nevent = \"PEVT_INST_ALL\"\n");
    assert!(
        e.contains("counter 0: PEVT_INST_ALL counts hardware thread 0 only"),
        "{e}"
    );
    let e = err("bgpm = \"hw-distrib\"\n[[counter]]\nindex = 0\nevent = \"PEVT_CYCLES\"\nsync_override = true\n");
    assert!(
        e.contains("counter 0: sync_override = true contradicts BGPM_MODE_HWDISTRIB"),
        "{e}"
    );
    let e = err("bgpm = \"sw-distrib\"\nmode = 1\n");
    assert!(e.contains("runs the UPC in Mode 0"), "{e}");
    let e = err("mode = 2\n");
    assert!(e.contains("mode: 2 (the UPC's trace mode"), "{e}");
    let e = err("bgpm = \"island\"\n");
    assert!(
        e.contains("f.toml: bgpm: `island` is not a BGPM mode"),
        "{e}"
    );
    // Core-wide events sit on any counter; a thread's own events on its counters are fine.
    let ok = "bgpm = \"hw-distrib\"\n[[counter]]\nindex = 13\nevent = \"PEVT_CYCLES\"\n[[counter]]\nindex = 13\n";
    assert!(
        Config::from_toml(ok, "f.toml").is_err(),
        "a counter configured twice"
    );
    let ok = "bgpm = \"hw-distrib\"\n[[counter]]\nindex = 13\nevent = \"PEVT_CYCLES\"\n[[counter]]\nindex = 23\nevent = \"PEVT_IU_IL1_MISS\"\nthreads = [3]\n";
    let c = Config::from_toml(ok, "f.toml").unwrap();
    assert_eq!(c.p[23].threads, 8);
}
