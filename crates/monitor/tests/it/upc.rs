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
            Some(&["PEVT_LSU_COMMIT_LD_MISSES"][..])
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
/// and an L2 slice counter (threshold 1000) on its 1000th hit.
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
