//! The UPC monitor on real runs (issue 14 item 8): Mode 0 loses no count with every counter
//! enabled, the synchronous start, overflow interrupts at the 64-bit wrap, and counts lost
//! when the local counter is too narrow for the frame.

use machine::{Machine, Options, Preset};
use monitor::upc::config::{cycles_counter, Config};
use monitor::upc::events::a2;
use monitor::upc::probe::Upc;
use monitor::upc::regs::{self, CounterCfg};
use std::cell::RefCell;
use std::rc::Rc;
use workload::Size;

fn cmp(threads_per_core: u32) -> Machine {
    let mut p = Preset::builtin("cmp").unwrap();
    p.cpu.threads_per_core = threads_per_core;
    Machine::new(p, Options::default()).unwrap()
}

fn run_kernel(m: &mut Machine, name: &str, threads: usize) {
    let w = workload::install(workload::find(name, Size::Test).unwrap(), m, Some(threads)).unwrap();
    m.run(None).unwrap();
    assert!(w.verify().verified, "{name} verifies");
}

/// Every counter of every unit on (the built-in configuration), 8 cores x 4 threads, 32
/// software threads of FFT: every SRAM total equals the exact count, nothing is lost, and the
/// whole-core miss counters equal the machine's own counts.
#[test]
fn mode0_loses_no_count_with_every_counter_enabled() {
    let mut m = cmp(4);
    let upc = monitor::upc::attach(&mut m, &Config::default()).unwrap();
    run_kernel(&mut m, "fft", 32);
    let u = upc.borrow();
    let mut checked = 0;
    for unit in &u.units {
        for c in unit.counters.iter().filter(|c| c.cfg.enable) {
            assert_eq!(
                u.counted(c.sram),
                c.exact,
                "unit {} counter sram {}",
                unit.pos,
                c.sram
            );
            assert_eq!(c.lost, 0);
            checked += 1;
        }
    }
    assert_eq!(checked, 8 * 24 + 8 * 16);
    let st = m.state();
    for (k, core) in st.cores.iter().enumerate() {
        let sram = |ev: u8| {
            let c = u.units[k]
                .counters
                .iter()
                .find(|c| c.cfg.event == ev && c.cfg.threads == 0xf)
                .unwrap();
            u.counted(c.sram)
        };
        assert_eq!(
            sram(a2::IL1_MISS),
            core.cnt.l1i_misses,
            "core {k} L1 I misses"
        );
        assert_eq!(
            sram(a2::LD_MISS) + sram(a2::ST_MISS),
            core.cnt.l1d_misses,
            "core {k} L1 D misses"
        );
        assert_eq!(sram(a2::NACK), core.cnt.nacks, "core {k} NACKs");
        assert!(sram(a2::LD_MISS) > 1000);
    }
    // Every UPC_L2 counter equals the machine's count of its slice event.
    let truth = st.truth.as_ref().unwrap();
    for unit in u.units.iter().filter(|u| u.slice) {
        for c in &unit.counters {
            assert_eq!(
                u.counted(c.sram),
                truth.l2_events[unit.index][c.cfg.event as usize],
                "slice {} event {}",
                unit.index,
                c.cfg.event
            );
        }
    }
    assert!(truth.l2_events.iter().map(|s| s[7]).sum::<u64>() > 1000);
    // A one-thread counter equals the machine's count of its event on that hardware thread.
    let mut one_thread = 0;
    for unit in u.units.iter().filter(|u| !u.slice) {
        for c in unit
            .counters
            .iter()
            .filter(|c| c.cfg.threads.count_ones() == 1)
        {
            let ctx = c.cfg.threads.trailing_zeros() as usize;
            let want = truth.core_events[unit.index * 4 + ctx][c.cfg.event as usize];
            assert_eq!(u.counted(c.sram), want, "core {} thread {ctx}", unit.index);
            one_thread += (want > 0) as usize;
        }
    }
    assert!(one_thread > 40, "{one_thread}");
}

/// Every counter on the cycles event, start written at cycle 1000: every counter without sync
/// override counts its first cycle on the same x2 cycle, 8 + 8 = 16 units after the command's
/// next x2 cycle; a sync-override counter counts nothing until its unit's own run bit is set.
#[test]
fn synchronous_start_on_one_x2_cycle() {
    let mut m = cmp(1);
    let mut cfg = Config {
        start_cycle: 1001,
        p: vec![cycles_counter(); 24],
        ..Config::default()
    };
    cfg.p[23].sync_override = true;
    let upc = monitor::upc::attach(&mut m, &cfg).unwrap();
    run_kernel(&mut m, "fft", 8);
    let u = upc.borrow();
    let x2 = u.chain.x2;
    let start = u.c.commands[0].effective;
    assert_eq!(start / x2, 501 + 16);
    for unit in u.units.iter().filter(|u| !u.slice) {
        for c in &unit.counters[..23] {
            assert_eq!(c.first, Some(start), "unit {}", unit.pos);
            assert_eq!(u.counted(c.sram), c.exact);
        }
        assert_eq!(unit.counters[23].exact, 0);
    }
    // Every sync counter counted the same cycles: from the start to the end of the run.
    let end = u.end.unwrap();
    let want = end.div_ceil(u.cp) - start / u.cp;
    assert_eq!(u.units[3].counters[0].exact, want);
}

/// A program programs its core's UPC_P through the register window: counter 0 on L1 D load
/// misses with sync override, run bit set by the program, an overflow threshold of 300 (the
/// driver's preload: upper bits in SRAM, low bits local, armed), and a handler. The interrupt
/// comes on the 300th miss exactly, and the handler runs in the program.
#[test]
fn program_sets_an_overflow_threshold_and_takes_the_interrupt() {
    let mut m = cmp(1);
    let cfg = Config {
        p: vec![CounterCfg::default(); 24],
        l2: vec![CounterCfg::default(); 16],
        ..Config::default()
    };
    let upc: Rc<RefCell<Upc>> = monitor::upc::attach(&mut m, &cfg).unwrap();
    let taken = Rc::new(RefCell::new(Vec::new()));
    let a = m.setup().alloc("data", 1 << 20, machine::Place::FirstTouch);
    let seen = taken.clone();
    m.spawn(0, move |ctx| {
        let seen = seen.clone();
        ctx.on_interrupt(Box::new(move |_c, v| seen.borrow_mut().push(v)));
        let p = regs::UPC_P_BASE;
        let half = 1u64 << 13;
        let total = 300u64.wrapping_neg();
        // SRAM counter 0 of core 0 (UPC_C) gets the upper bits, the local counter the low.
        ctx.monitor_write(regs::UPC_C_BASE + regs::C_SRAM, 8, total & !(half - 1));
        ctx.monitor_write(p + regs::P_DATA, 8, total & (half - 1) | 1 << 14);
        let cfg = CounterCfg {
            event: a2::LD_MISS,
            threads: 1,
            sync_override: true,
            int_enable: true,
            enable: true,
            ..Default::default()
        };
        ctx.monitor_write(p + regs::P_CFG, 8, cfg.encode());
        ctx.monitor_write(p + regs::P_CONTROL, 8, regs::P_RUN);
        for i in 0..(1u64 << 20) / 64 {
            ctx.load(a + i * 64);
        }
    });
    m.run(None).unwrap();
    let u = upc.borrow();
    assert_eq!(u.irqs.len(), 1, "{:?}", u.irqs);
    let q = u.irqs[0];
    assert_eq!(q.crossed, Some(q.raised));
    assert_eq!(u.units[0].counters[0].exact, (1 << 20) / 64);
    assert_eq!(*taken.borrow(), vec![monitor::upc::probe::VECTOR]);
    assert_eq!(u.mmio_writes, 4);
}

/// A 6-bit local counter (top bit 32 counts) drained every 400 x2 cycles cannot keep up with the
/// cycles event's 800 counts a frame: counts are lost, and SRAM plus lost equals the exact count.
#[test]
fn narrow_counters_lose_counts_as_the_arithmetic_says() {
    let mut m = cmp(1);
    let cfg = Config {
        p_width: 6,
        p: vec![cycles_counter(); 24],
        ..Config::default()
    };
    let upc = monitor::upc::attach(&mut m, &cfg).unwrap();
    run_kernel(&mut m, "fft", 8);
    let u = upc.borrow();
    let c = &u.units[0].counters[0];
    assert!(c.lost > 0);
    assert_eq!(u.counted(c.sram) + c.lost, c.exact);
}

/// A program measures a loop with the BGPM-style interface: load misses on its own thread and
/// cycles, started and stopped around the loop, read as 64-bit counts; the load misses are
/// exactly the lines touched, the cycles the shadow count of the same counter.
#[test]
fn bgpm_event_set_measures_a_loop() {
    use monitor::upc::bgpm::{papi_preset, EventSet};
    let mut m = cmp(1);
    let cfg = Config {
        p: vec![CounterCfg::default(); 24],
        l2: vec![CounterCfg::default(); 16],
        ..Config::default()
    };
    let upc = monitor::upc::attach(&mut m, &cfg).unwrap();
    let a = m.setup().alloc("data", 1 << 18, machine::Place::FirstTouch);
    let got = Rc::new(RefCell::new((0, 0)));
    let out = got.clone();
    m.spawn(0, move |ctx| {
        let mut set = EventSet::new();
        assert_eq!(
            papi_preset("PAPI_L1_LDM"),
            Some(&["PEVT_IU_IL1_MISS", "PEVT_LSU_COMMIT_LD_MISSES"][..])
        );
        let ld = set.add("PEVT_LSU_COMMIT_LD_MISSES", 1).unwrap();
        let cy = set.add("PEVT_CYCLES", 0xf).unwrap();
        assert!(set.add("PEVT_NOPE", 1).is_err());
        set.apply(ctx);
        set.start(ctx);
        for i in 0..(1u64 << 18) / 64 {
            ctx.load(a + i * 64);
        }
        set.stop(ctx);
        *out.borrow_mut() = (set.read(ctx, ld), set.read(ctx, cy));
    });
    m.run(None).unwrap();
    let (ld, cy) = *got.borrow();
    let u = upc.borrow();
    assert_eq!(ld, (1 << 18) / 64);
    assert_eq!(cy, u.units[0].counters[1].exact);
    assert!(cy > 4096 * 10, "{cy}");
}

/// The opcode group counts `Observation::Retire` by instruction class (docs/upc.md, "Opcode
/// group"): a program measures a block of known instructions with a BGPM event set; every
/// group counts exactly its instructions (the stop's own uncached store among them), and the
/// driver's opcode groups pmusim has no instruction of are refused by name.
#[test]
fn opcode_groups_count_retired_instructions_exactly() {
    use machine::cpu::op::Op;
    use monitor::upc::bgpm::{papi_preset, EventSet};
    let mut m = cmp(1);
    let cfg = Config {
        p: vec![CounterCfg::default(); 24],
        l2: vec![CounterCfg::default(); 16],
        ..Config::default()
    };
    let upc = monitor::upc::attach(&mut m, &cfg).unwrap();
    let got = Rc::new(RefCell::new(Vec::new()));
    let out = got.clone();
    m.spawn(0, move |ctx| {
        let mut set = EventSet::new();
        assert_eq!(papi_preset("PAPI_TOT_INS"), Some(&["PEVT_INST_ALL"][..]));
        let names = [
            "PEVT_INST_ALL",
            "PEVT_INST_XU_ALL",
            "PEVT_INST_QFPU_ALL",
            "PEVT_INST_QFPU_FMA",
            "PEVT_INST_QFPU_QADD",
            "PEVT_INST_XU_IADD",
            "PEVT_INST_XU_ST",
            "PEVT_INST_XU_BRC",
            "PEVT_INST_QFPU_FDIV",
        ];
        let idx: Vec<usize> = names.iter().map(|n| set.add(n, 1).unwrap()).collect();
        let e = set.add("PEVT_INST_XU_FLD", 1).unwrap_err();
        assert!(format!("{e:?}").contains("no instruction class"), "{e:?}");
        set.apply(ctx);
        set.start(ctx);
        ctx.op(Op::FpFma, 1000);
        ctx.op(Op::QpAdd, 500);
        ctx.int(300);
        for i in 0..40 {
            ctx.branch(i % 3 == 0);
        }
        ctx.op(Op::FpDiv, 7);
        set.stop(ctx);
        let v: Vec<u64> = idx.iter().map(|&i| set.read(ctx, i)).collect();
        *out.borrow_mut() = v;
    });
    m.run(None).unwrap();
    let v = got.borrow().clone();
    // The stop is an uncached store retired before it reaches the UPC: counted.
    let want = [
        1000 + 500 + 300 + 40 + 7 + 1,
        300 + 40 + 1,
        1507,
        1000,
        500,
        300,
        1,
        40,
        7,
    ];
    assert_eq!(v, want);
    let u = upc.borrow();
    assert_eq!(u.units[0].counters[0].lost, 0);
}

/// Every UPC_P counter on the opcode group (docs/upc-opcodes.toml), 8 cores x 4 threads of
/// FFT: no count lost, every SRAM total equal to its exact count, and each core's
/// `PEVT_INST_ALL` (four threads combined, and the four one-thread counters summed) equal to the
/// instructions the machine retired on it; the per-group counters equal `Counters::ops`.
#[test]
fn mode0_opcode_groups_equal_the_machines_retired_instructions() {
    use machine::cpu::op::Op;
    use monitor::upc::events::op;
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/upc-opcodes.toml"
    ))
    .unwrap();
    let cfg = Config::from_toml(&text, "docs/upc-opcodes.toml").unwrap();
    let mut m = cmp(4);
    let upc = monitor::upc::attach(&mut m, &cfg).unwrap();
    run_kernel(&mut m, "fft", 32);
    let u = upc.borrow();
    let st = m.state();
    for (k, core) in st.cores.iter().enumerate() {
        let unit = &u.units[k];
        for c in unit.counters.iter() {
            assert_eq!(c.lost, 0);
            assert_eq!(u.counted(c.sram), c.exact);
        }
        let count = |sub: u8| {
            let c = unit
                .counters
                .iter()
                .find(|c| c.cfg.event == sub && c.cfg.threads == 0xf)
                .unwrap();
            u.counted(c.sram)
        };
        let ops = core.cnt.ops();
        let all: u64 = ops.iter().sum();
        assert_eq!(count(op::ALL), all, "core {k}");
        let one: u64 = unit.counters[16..20]
            .iter()
            .map(|c| u.counted(c.sram))
            .sum();
        assert_eq!(one, all);
        let loads: u64 = [Op::Load1, Op::Load2, Op::Load4, Op::Load8, Op::Load16]
            .iter()
            .map(|&o| ops[o as usize])
            .sum();
        assert_eq!(count(op::LD), loads);
        assert_eq!(count(op::FOTH), ops[Op::Fp as usize]);
        assert_eq!(count(op::IADD), ops[Op::IntAdd as usize]);
        assert!(count(op::ALL) > 100_000);
    }
}

/// Thresholds from a configuration file (docs/upc-overflow.toml) survive the start's reset on
/// enable: each core's load-miss counter (threshold 500) interrupts once, on its 500th miss,
/// an L2 slice counter (threshold 1000) on its 1000th hit, and the cycles counter (threshold
/// 50,000) within 2 cycles of its 50,000th cycle.
#[test]
fn configured_thresholds_interrupt_on_their_event() {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/upc-overflow.toml"
    ))
    .unwrap();
    let cfg = Config::from_toml(&text, "docs/upc-overflow.toml").unwrap();
    let mut m = cmp(4);
    let upc = monitor::upc::attach(&mut m, &cfg).unwrap();
    run_kernel(&mut m, "fft", 32);
    let u = upc.borrow();
    for k in 0..8 {
        let ld: Vec<_> = u
            .irqs
            .iter()
            .filter(|q| q.pos == k && q.counter == 1)
            .collect();
        assert_eq!(ld.len(), 1, "core {k}");
        // Raised on the event itself.
        assert_eq!(ld[0].crossed, Some(ld[0].raised));
        let c = &u.units[k].counters[1];
        // The 64-bit count (SRAM + local) passed 2^64 by exactly the misses after the 500th.
        assert_eq!(
            u.c.sram[c.sram].wrapping_add(c.value),
            c.exact.wrapping_sub(500),
            "core {k}"
        );
        assert!(c.exact > 500);
    }
    let l2 = u.irqs.iter().filter(|q| u.units[q.pos].slice).count();
    assert_eq!(l2, 8);
    // The cycles counter (a level, threshold 50,000): its 64-bit count wraps on the 50,000th
    // cycle after the start took effect, and the wake-up at that crossing raises the interrupt
    // on the next x2 cycle: 1 or 2 processor cycles later (the driver: about 4).
    let start = u.c.commands[0].effective;
    for k in 0..8 {
        let q: Vec<_> = u
            .irqs
            .iter()
            .filter(|q| q.pos == k && q.counter == 0)
            .collect();
        assert_eq!(q.len(), 1, "core {k}");
        let crossed = q[0].crossed.unwrap();
        assert_eq!(crossed, start + 49_999 * u.cp, "core {k}");
        let lat = (q[0].raised - crossed) / u.cp;
        assert!((1..=2).contains(&lat), "core {k}: {lat} cycles");
        assert_eq!(q[0].raised % u.chain.x2, 0);
    }
}

/// A configuration file's L2 threshold under L2 combine (`PEVT_L2_HITS`, threshold 1,000) is
/// the combined SRAM counter's: UPC_C raises one interrupt, on the transfer that wraps the
/// count of every slice's hits, at most one frame (800 processor cycles) after the 1,000th hit
/// after the start; the 64-bit count then stands at the hits past the 1,000th. (Before,
/// every slice's local counter was preloaded with the threshold's low bits, all summed into
/// the one combined counter, so the interrupt came about 2,500 cycles early.)
#[test]
fn configured_l2_threshold_under_combine_interrupts_on_the_combined_count() {
    let text =
        "monitor = \"upc\"\n[[l2counter]]\nindex = 0\nevent = \"PEVT_L2_HITS\"\noverflow = 1000\n";
    let cfg = Config::from_toml(text, "l2-combined-overflow.toml").unwrap();
    assert!(cfg.l2_combine);
    let mut m = cmp(4);
    let upc = monitor::upc::attach(&mut m, &cfg).unwrap();
    let log = super::Record::attach(&mut m, machine::probe::kind::L2_SLICE);
    run_kernel(&mut m, "fft", 32);
    let u = upc.borrow();
    let start = u.c.commands[0].effective;
    let hits: Vec<u64> = log
        .borrow()
        .iter()
        .filter_map(|o| match *o {
            machine::probe::Observation::L2Slice { t, event, .. }
                if event as usize == 0 && t >= start =>
            {
                Some(t)
            }
            _ => None,
        })
        .collect();
    assert!(hits.len() > 1000, "{} hits", hits.len());
    let l2: Vec<_> = u.irqs.iter().filter(|q| u.units[q.pos].slice).collect();
    assert_eq!(l2.len(), 1, "{l2:?}");
    let q = l2[0];
    assert_eq!(q.counter, 0);
    // Dated on the hit that wrapped the combined count: the 1,000th.
    assert_eq!(q.crossed, Some(hits[999]), "{q:?}");
    let late = (q.raised - hits[999]) / u.cp;
    println!(
        "1,000th hit at {}, interrupt {late} cycles later",
        hits[999]
    );
    assert!(late <= 800, "{late} cycles");
    let n = monitor::upc::probe::sram_index(true, 0, 0, true);
    let local: u64 = u
        .units
        .iter()
        .filter(|x| x.slice)
        .map(|x| x.counters[0].value)
        .sum();
    assert_eq!(u.c.sram[n].wrapping_add(local), hits.len() as u64 - 1000);
}

/// The opcode group's 50 sub-selections are the driver's `PEVT_INST_*` in its order
/// (`spi/include/upci/events.h`, 214..277 without the match and mask selectors), each either
/// counted (an event of `P_EVENTS`) or refused by name, never both; and every fine instruction
/// class counts in the group the chip's one table (`machine::bgq::inst::InstGroup::of`) gives.
#[test]
fn opcode_sub_selections_are_the_drivers_in_order() {
    use machine::bgq::inst::InstGroup;
    use machine::cpu::op::Op;
    use monitor::upc::events::{absent_opcode, op, op_groups, p_event, Group, OP_GROUPS};
    const DRIVER: [&str; 50] = [
        "XU_FLD",
        "XU_FST",
        "XU_QLD",
        "XU_QST",
        "XU_BITS",
        "XU_BRC",
        "XU_BRU",
        "XU_CINV",
        "XU_CSTO",
        "XU_CTCH",
        "XU_IADD",
        "XU_ICMP",
        "XU_ICSW",
        "XU_IDIV",
        "XU_ILOG",
        "XU_IMOV",
        "XU_IMUL",
        "XU_INT",
        "XU_LD",
        "XU_LSCX",
        "XU_ST",
        "XU_SYNC",
        "XU_TLB",
        "XU_TLBI",
        "XU_WCH",
        "XU_ALL",
        "QFPU_FOTH",
        "QFPU_FRES",
        "QFPU_FADD",
        "QFPU_FCVT",
        "QFPU_FCMP",
        "QFPU_FDIV",
        "QFPU_FMOV",
        "QFPU_FMA",
        "QFPU_FMUL",
        "QFPU_FRND",
        "QFPU_FSQE",
        "QFPU_FSQ",
        "QFPU_QMOV",
        "QFPU_QOTH",
        "QFPU_QADD",
        "QFPU_QMUL",
        "QFPU_QRES",
        "QFPU_QMA",
        "QFPU_QRND",
        "QFPU_QCVT",
        "QFPU_QCMP",
        "QFPU_UCODE",
        "QFPU_ALL",
        "ALL",
    ];
    assert_eq!(DRIVER.len(), op::COUNT);
    let mut counted = 0;
    for (sub, d) in DRIVER.iter().enumerate() {
        let name = format!("PEVT_INST_{d}");
        let ev = p_event(Group::Opcode, sub as u8);
        let absent = absent_opcode(&name);
        match (ev, absent) {
            (Some(e), None) => {
                assert_eq!(e.name, name, "sub {sub}");
                counted += 1;
            }
            (None, Some(n)) => assert_eq!(n, name, "sub {sub}"),
            _ => panic!("sub {sub} ({name}): counted {ev:?}, refused {absent:?}"),
        }
    }
    // 28 decoder groups with an Op, the three sums.
    assert_eq!(counted, 31);
    for o in Op::ALL {
        let g = op_groups(o);
        assert_eq!(OP_GROUPS[o as usize], g);
        let own = p_event(Group::Opcode, g[0]).unwrap().name;
        assert_eq!(own, InstGroup::of(o).pevt(), "{}", o.name());
        let sum = if o.class() == machine::cpu::Class::Fp {
            op::QFPU_ALL
        } else {
            op::XU_ALL
        };
        assert_eq!(g[1..], [sum, op::ALL], "{}", o.name());
    }
}

/// What core `core` did before the UPC's start took effect (`t0`), which no counter counts:
/// instructions per `Op` (a span across the start split as the UPC spreads a span's
/// instructions over it), core events per hardware thread, L1P events and NACKs.
#[derive(Default)]
struct EarlyCounts {
    ops: Vec<u64>,
    core: [[u64; 14]; 4],
    l1p: [u64; 10],
    nacks: u64,
}

struct Early {
    core: u16,
    t0: engine::Tick,
    n: Rc<RefCell<EarlyCounts>>,
}

impl machine::probe::Probe for Early {
    fn observe(&mut self, o: &machine::probe::Observation, _: &mut machine::probe::Signals) {
        use machine::probe::Observation as O;
        let mut e = self.n.borrow_mut();
        match *o {
            O::Retire {
                proc,
                t,
                from,
                op,
                n,
                ..
            } if proc == self.core => {
                let mut g = monitor::upc::unit::Gate::default();
                g.set(self.t0, true);
                e.ops[op as usize] += n - monitor::upc::probe::events_on(&g, from, t, n);
            }
            O::CoreEvent { who, t, event, n } if who.core == self.core && t < self.t0 => {
                e.core[who.context as usize][event as usize] += n as u64;
            }
            O::L1p { who, t, event } if who.core == self.core && t < self.t0 => {
                e.l1p[event as usize] += 1;
            }
            O::TxNack { proc, t, .. } if proc == self.core && t < self.t0 => e.nacks += 1,
            _ => {}
        }
    }
    fn interest(&self) -> u32 {
        use machine::probe::kind;
        kind::RETIRE | kind::CORE_EVENT | kind::L1P | kind::TX_NACK
    }
    fn name(&self) -> &str {
        "early"
    }
}

/// The exact count of a UPC_P event from the machine's ground truth (`None` for pmusim's
/// miss-pending level, which only the shadow count follows): core events per hardware thread
/// in the mask, L1P events per core, opcode groups from the core's retired `Op`s over all four
/// threads (per-thread opcode counters are checked by their sum), cycles from start to end.
fn truth_of(
    m: &Machine,
    u: &Upc,
    core: usize,
    cfg: &CounterCfg,
    early: &RefCell<EarlyCounts>,
) -> Option<u64> {
    use monitor::upc::events::{Group, OP_GROUPS};
    let st = m.state();
    let truth = st.truth.as_ref().unwrap();
    let tpc = truth.threads_per_core as usize;
    let threads = |f: &dyn Fn(usize) -> u64| -> u64 {
        (0..tpc).filter(|&k| cfg.threads >> k & 1 != 0).map(f).sum()
    };
    match Group::from_code(cfg.group as u64).unwrap() {
        Group::A2 => match cfg.event {
            a2::CYCLES => {
                let start = u.c.commands[0].effective;
                Some(u.end.unwrap().div_ceil(u.cp) - start / u.cp)
            }
            a2::MISS_PENDING => None,
            a2::NACK if cfg.threads == 0xf => Some(st.cores[core].cnt.nacks - early.borrow().nacks),
            a2::NACK => None,
            e => Some(threads(&|k| {
                truth.core_events[core * tpc + k][e as usize] - early.borrow().core[k][e as usize]
            })),
        },
        Group::L1p => Some(
            truth.l1p_events[core][cfg.event as usize] - early.borrow().l1p[cfg.event as usize],
        ),
        Group::Opcode if cfg.threads == 0xf => {
            let ops = st.cores[core].cnt.ops();
            let early = &early.borrow().ops;
            Some(
                (0..ops.len())
                    .filter(|&o| OP_GROUPS[o].contains(&cfg.event))
                    .map(|o| ops[o] - early[o])
                    .sum(),
            )
        }
        Group::Opcode => None,
    }
}

/// Mode 1 with core 3 owning the chain (bgq, 64 threads of FFT on 16 cores x 4 threads): the
/// 92 raw event bits counted in UPC_C's Mode 1 counters and the 24 local counters are 116
/// distinct events of that core, and every one of them equals its exact count: the shadow
/// count, and the machine's ground truth wherever it keeps the event (per-thread opcode and
/// NACK counters by their sum over the four threads).
#[test]
fn mode1_counts_116_events_of_one_core_exactly() {
    use monitor::upc::events::Group;
    use monitor::upc::mode1;
    let cfg = Config::from_toml("mode = 1\nowner = \"core:3\"\n", "t.toml").unwrap();
    let mut m = Machine::new(Preset::builtin("bgq").unwrap(), Options::default()).unwrap();
    let upc = monitor::upc::attach(&mut m, &cfg).unwrap();
    let early = Rc::new(RefCell::new(EarlyCounts {
        ops: vec![0; machine::cpu::op::Op::COUNT],
        ..Default::default()
    }));
    let t0 = upc.borrow().c.commands[0].effective;
    m.attach(Box::new(Early {
        core: 3,
        t0,
        n: early.clone(),
    }));
    run_kernel(&mut m, "fft", 64);
    let u = upc.borrow();
    let cu = u.chain.units();
    assert_eq!(u.m1_owner, Some(3));
    let central = &u.units[cu];
    assert!(central.central && !central.slice && central.index == 3);
    // Only the owner's packet is on the chain.
    for unit in u.units.iter().filter(|x| x.pos != 3 && !x.central) {
        assert!(unit.counters.iter().all(|c| !c.cfg.enable));
    }
    let mut all = Vec::new();
    for (pos, range) in [(3, 0..24), (cu, 0..mode1::RAW)] {
        for i in range {
            let c = &u.units[pos].counters[i];
            assert!(c.cfg.enable, "unit {pos} counter {i}");
            assert_eq!(c.lost, 0);
            assert_eq!(u.counted(c.sram), c.exact, "unit {pos} counter {i}");
            if let Some(want) = truth_of(&m, &u, 3, &c.cfg, &early) {
                assert_eq!(c.exact, want, "unit {pos} counter {i} {:?}", c.cfg);
            }
            all.push((c.cfg.group, c.cfg.event, c.cfg.threads, c.cfg.edge, c.exact));
        }
    }
    assert!(central.counters[mode1::RAW..].iter().all(|c| !c.cfg.enable));
    let mut keys: Vec<_> = all.iter().map(|a| (a.0, a.1, a.2, a.3)).collect();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 116);
    // Per-thread counters sum to the core's: NACKs, and each instruction sum.
    let st = m.state();
    let sum = |g: Group, e: u8| -> u64 {
        all.iter()
            .filter(|a| a.0 == g as u8 && a.1 == e && a.2.count_ones() == 1)
            .map(|a| a.4)
            .sum()
    };
    let e = early.borrow();
    assert_eq!(sum(Group::A2, a2::NACK), st.cores[3].cnt.nacks - e.nacks);
    let ops: u64 = st.cores[3].cnt.ops().iter().sum::<u64>() - e.ops.iter().sum::<u64>();
    use monitor::upc::events::op;
    assert_eq!(sum(Group::Opcode, op::ALL), ops);
    assert!(ops > 10_000);
    // The counts are real: misses, L1P loads, a miss-pending level, thread 2's loads.
    let get = |g: Group, e: u8, th: u8| {
        all.iter()
            .find(|a| a.0 == g as u8 && a.1 == e && a.2 == th && !a.3)
            .unwrap()
            .4
    };
    assert!(get(Group::A2, a2::LD_MISS, 1 << 2) > 10);
    assert!(get(Group::L1p, 3, 0xf) > 100);
    assert!(get(Group::A2, a2::MISS_PENDING, 0xf) > 100);
}

/// Mode 1 with slice 2 owning the chain: its 32 events in Mode 1 counters and its 16 local
/// counters all equal the machine's count of the slice's events.
#[test]
fn mode1_counts_all_32_events_of_one_slice_exactly() {
    use monitor::upc::mode1;
    let cfg = Config::from_toml("mode = 1\nowner = \"slice:2\"\n", "t.toml").unwrap();
    let mut m = Machine::new(Preset::builtin("bgq").unwrap(), Options::default()).unwrap();
    let upc = monitor::upc::attach(&mut m, &cfg).unwrap();
    run_kernel(&mut m, "fft", 64);
    let u = upc.borrow();
    let pos = u.chain.pos(true, 2);
    let cu = u.chain.units();
    assert_eq!(u.m1_owner, Some(pos));
    let truth = m.state().truth.as_ref().unwrap().l2_events[2];
    let central = &u.units[cu];
    for (e, &want) in truth.iter().enumerate() {
        let c = &central.counters[mode1::counter_of(e / 8, e % 8)];
        assert_eq!(c.cfg.event as usize, e);
        assert_eq!(u.counted(c.sram), want, "event {e}");
        assert_eq!(c.exact, want);
    }
    assert!(central.counters[32..].iter().all(|c| !c.cfg.enable));
    for c in &u.units[pos].counters {
        assert_eq!(u.counted(c.sram), truth[c.cfg.event as usize]);
    }
    assert!(truth[7] > 1000, "{truth:?}");
}

/// Issue 14's figure "no count lost in Mode 0", at full size: 16 cores x 4 threads of `bgq`
/// run a micro-kernel for at least 10^8 processor cycles (`UPC_LONG_CYCLES` overrides), every
/// UPC_P counter of the 17 cores and every UPC_L2 counter of the 16 slices enabled; every one
/// of the 24 x 17 + 16 x 16 UPC_C totals must equal its exact count, with nothing lost, and
/// each slice's counters the machine's own counts. The kernel drives the fastest sources at
/// their maximum (cycles: 2 per x2 cycle; instructions over the four threads, which the core
/// retires back to back) and every other counted event: L1 D load and store misses and L2 hits
/// (a private 256 KiB stride), the L1P stream, atomics on shared lines (larx, stcx, stcx
/// failures, back-invalidates, NACKs), FP and branches. Long: `cargo test --release -p
/// monitor --test it mode0_no_count_lost_in_1e8_cycles -- --ignored --nocapture`
/// (docs/upc.md, "No count lost").
#[test]
#[ignore]
fn mode0_no_count_lost_in_1e8_cycles() {
    use monitor::upc::events::{op, Group};
    let target: u64 = std::env::var("UPC_LONG_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000_000);
    let p = |group: Group, event: u8, threads: u8| CounterCfg {
        group: group as u8,
        event,
        threads,
        enable: true,
        ..Default::default()
    };
    let p = vec![
        p(Group::A2, a2::CYCLES, 0xf),
        p(Group::Opcode, op::ALL, 0xf),
        p(Group::Opcode, op::XU_ALL, 0xf),
        p(Group::Opcode, op::IADD, 0xf),
        p(Group::Opcode, op::FOTH, 0xf),
        p(Group::Opcode, op::LD, 0xf),
        p(Group::Opcode, op::ST, 0xf),
        p(Group::Opcode, op::BRC, 0xf),
        p(Group::Opcode, op::ALL, 1),
        p(Group::Opcode, op::ALL, 2),
        p(Group::Opcode, op::ALL, 4),
        p(Group::Opcode, op::ALL, 8),
        p(Group::A2, a2::LD_MISS, 0xf),
        p(Group::A2, a2::ST_MISS, 0xf),
        p(Group::A2, a2::IL1_MISS, 0xf),
        p(Group::A2, a2::LARX, 0xf),
        p(Group::A2, a2::STCX, 0xf),
        p(Group::A2, a2::STCX_FAIL, 0xf),
        p(Group::A2, a2::BACK_INVAL, 0xf),
        p(Group::A2, a2::BACK_INVAL_HIT, 0xf),
        p(Group::A2, a2::MISS_PENDING, 0xf),
        p(Group::A2, a2::NACK, 0xf),
        p(Group::L1p, 3, 0xf),
        p(Group::L1p, 0, 0xf),
    ];
    let cfg = Config {
        p,
        ..Config::default()
    };
    let mut m = Machine::new(Preset::builtin("bgq").unwrap(), Options::default()).unwrap();
    let upc = monitor::upc::attach(&mut m, &cfg).unwrap();
    let region = 256 * 1024;
    let base = m
        .setup()
        .alloc("private", 64 * region, machine::Place::Default);
    let shared = m.setup().alloc("shared", 16 * 128, machine::Place::Default);
    let early = Rc::new(RefCell::new(vec![[0u64; 32]; 16]));
    m.attach(Box::new(EarlyL2 {
        t0: upc.borrow().c.commands[0].effective,
        n: early.clone(),
    }));
    let wall = std::time::Instant::now();
    for t in 0..64u64 {
        m.spawn(t as usize, move |ctx| {
            let mine = base + t * region;
            let mut off = 0;
            let mut k = 0u64;
            // Hardware threads 0 and 1 of each core (software threads 0..31: thread t runs on
            // core t mod 16, context t div 16) retire instructions back to back (the opcode
            // counters' fastest source, as fast as the core issues); threads 2 and 3 miss.
            if t / 16 < 2 {
                while ctx.cycles() < target {
                    ctx.int(24);
                    ctx.fp(4);
                    ctx.branch(true);
                }
                return;
            }
            while ctx.cycles() < target {
                for _ in 0..8 {
                    ctx.int(24);
                    ctx.fp(4);
                    ctx.branch(true);
                    ctx.load(mine + off);
                    ctx.store(mine + off + 8);
                    off = (off + 128) % region;
                }
                k += 1;
                // Shared lines: read into the L1, then written by other cores (back-invalidates)
                // and updated atomically (larx / stcx, failures under contention).
                ctx.load(shared + 128 * ((t + 3 * k) % 16));
                ctx.store(shared + 128 * ((t + 5 * k) % 16) + 64);
                ctx.fetch_add(shared + 128 * ((t + k) % 16), 1);
            }
        });
    }
    m.run(None).unwrap();
    let secs = wall.elapsed().as_secs_f64();
    let u = upc.borrow();
    let cycles = u.end.unwrap() / u.cp;
    assert!(cycles >= target, "{cycles} cycles");
    let mut checked = 0;
    for unit in u.units.iter() {
        for (i, c) in unit.counters.iter().enumerate() {
            assert!(c.cfg.enable);
            assert_eq!(c.lost, 0, "unit {} counter {i}", unit.pos);
            assert_eq!(u.counted(c.sram), c.exact, "unit {} counter {i}", unit.pos);
            checked += 1;
        }
    }
    assert_eq!(checked, 24 * 17 + 16 * 16);
    let st = m.state();
    let truth = st.truth.as_ref().unwrap();
    for unit in u.units.iter().filter(|u| u.slice) {
        for c in &unit.counters {
            let e = c.cfg.event as usize;
            assert_eq!(
                u.counted(c.sram),
                truth.l2_events[unit.index][e] - early.borrow()[unit.index][e]
            );
        }
    }
    let inst: u64 = (0..16)
        .map(|k| u.counted(u.units[k].counters[1].sram))
        .sum();
    println!(
        "{cycles} cycles on 16 cores x 4 threads, {inst} instructions, {checked} UPC_C totals equal their exact counts, {} transfers, nothing lost; {secs:.1} s",
        u.units.iter().flat_map(|x| x.counters.iter()).map(|c| c.transfers).sum::<u64>()
    );
    for (i, c) in u.units[5].counters.iter().enumerate() {
        println!(
            "core 5 counter {i:2}: {} {}",
            super_name(&u, 5, i),
            u.counted(c.sram)
        );
    }
    // Every program core counted every event (the 17th, the system's, only its cycles).
    for k in 0..16 {
        for (i, c) in u.units[k].counters.iter().enumerate() {
            if ![14, 17, 19, 21, 23].contains(&i) {
                assert!(u.counted(c.sram) > 0, "core {k} counter {i}");
            }
        }
    }
}

/// Counts each slice's events before the UPC's start took effect (`t0`), which no counter
/// counts.
struct EarlyL2 {
    t0: engine::Tick,
    n: Rc<RefCell<Vec<[u64; 32]>>>,
}

impl machine::probe::Probe for EarlyL2 {
    fn observe(&mut self, o: &machine::probe::Observation, _: &mut machine::probe::Signals) {
        if let machine::probe::Observation::L2Slice {
            slice, t, event, ..
        } = *o
        {
            if t < self.t0 {
                self.n.borrow_mut()[slice as usize][event as usize] += 1;
            }
        }
    }
    fn interest(&self) -> u32 {
        machine::probe::kind::L2_SLICE
    }
    fn name(&self) -> &str {
        "early-l2"
    }
}

fn super_name(u: &Upc, pos: usize, i: usize) -> &'static str {
    monitor::upc::report::event_name(u, pos, i)
}

/// BGPM multiplexing: 30 events in two groups (24 + 6) take turns on one core's UPC_P,
/// switched every 100,000 cycles by the program's polls; a steady loop's events, each counted
/// about half the time, scaled by the cycles of the measurement over its group's, are within
/// 3 % of the exact counts (the core's own counters between start and stop), where the raw sums
/// are about half of them. The estimate scales by elapsed cycles, so a switch's own cost (about
/// 1,000 cycles of register accesses, when no group counts) biases it up by that share: 1 %.
#[test]
fn bgpm_multiplexing_scales_to_the_exact_counts() {
    use machine::cpu::op::Op;
    use monitor::upc::bgpm::MuxSet;
    let mut m = cmp(1);
    let cfg = Config {
        p: vec![CounterCfg::default(); 24],
        l2: vec![CounterCfg::default(); 16],
        ..Config::default()
    };
    let _upc = monitor::upc::attach(&mut m, &cfg).unwrap();
    let a = m.setup().alloc("data", 1 << 20, machine::Place::FirstTouch);
    type Out = Vec<(u64, u64, u64)>;
    let got: Rc<RefCell<(Out, u64)>> = Rc::default();
    let out = got.clone();
    m.spawn(0, move |ctx| {
        let mut set = MuxSet::new(100_000).unwrap();
        assert!(MuxSet::new(0).is_err());
        // Group 0: 18 events that are not checked and 6 that are; group 1: the same 6 again.
        let checked = [
            "PEVT_CYCLES",
            "PEVT_INST_XU_IADD",
            "PEVT_INST_QFPU_FOTH",
            "PEVT_INST_XU_BRC",
            "PEVT_INST_XU_LD",
            "PEVT_LSU_COMMIT_LD_MISSES",
        ];
        let filler = [
            "PEVT_IU_IL1_MISS",
            "PEVT_LSU_COMMIT_ST_MISSES",
            "PEVT_LSU_LARX_FINISHED",
            "PEVT_LSU_COMMIT_STCX",
            "PEVT_XU_STCX_FAIL",
            "PEVT_MMU_DERAT_MISS",
            "PEVT_XU_INTS_TAKEN",
            "PEVT_INST_XU_IMUL",
            "PEVT_INST_XU_ICMP",
            "PEVT_INST_XU_ILOG",
            "PEVT_INST_XU_BITS",
            "PEVT_INST_XU_SYNC",
            "PEVT_INST_QFPU_FMA",
            "PEVT_INST_QFPU_FADD",
            "PEVT_INST_QFPU_FMUL",
            "PEVT_INST_XU_ST",
            "PEVT_INST_XU_BRU",
            "PEVT_LSU_MISS_NACKED",
        ];
        let mut idx = Vec::new();
        for n in checked {
            idx.push(set.add(n, 0xf).unwrap());
        }
        for n in filler {
            set.add(n, 0xf).unwrap();
        }
        for n in checked {
            idx.push(set.add(n, 0xf).unwrap());
        }
        assert_eq!(set.groups(), 2);
        let before = (
            ctx.cycles(),
            ctx.counters().ops(),
            ctx.counters().l1d_misses,
        );
        set.start(ctx);
        let mut i = 0u64;
        while ctx.cycles() - before.0 < 4_000_000 {
            ctx.int(20);
            ctx.fp(4);
            ctx.branch(true);
            ctx.load(a + (i * 64) % (1 << 20));
            i += 1;
            set.poll(ctx);
        }
        set.stop(ctx);
        let ops = ctx.counters().ops();
        let d = |o: Op| ops[o as usize] - before.1[o as usize];
        let [cycles, ints, fps, branches] = crate::mux_loop_exact(ctx, before.0, &before.1);
        let exact = [
            cycles,
            ints,
            fps,
            branches,
            [Op::Load1, Op::Load2, Op::Load4, Op::Load8, Op::Load16]
                .iter()
                .map(|&o| d(o))
                .sum(),
            ctx.counters().l1d_misses - before.2,
        ];
        let mut o = out.borrow_mut();
        for (k, &e) in idx.iter().enumerate() {
            o.0.push((set.estimate(e), set.raw(e).0, exact[k % 6]));
        }
        o.1 = set.switches;
    });
    m.run(None).unwrap();
    let (rows, switches) = &*got.borrow();
    assert!(*switches >= 30, "{switches}");
    for (k, &(est, raw, exact)) in rows.iter().enumerate() {
        let err = (est as f64 - exact as f64).abs() / exact as f64;
        assert!(err < 0.03, "event {k}: estimate {est}, exact {exact}");
        assert!(
            raw < exact * 6 / 10 && raw > exact * 4 / 10,
            "event {k}: {raw} of {exact}"
        );
    }
}
