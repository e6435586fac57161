//! Tests of the FLASH memory system against its configuration and the protocol tester.

use super::handlers::Handler;
use crate::addr::Place;
use crate::config::Preset;
use crate::fault::Fault;
use crate::probe::{Cmd, Observation, Probe, Signals};
use crate::sim::{Machine, Options};
use crate::tester::{run, TesterConfig, TesterReport};
use std::cell::RefCell;
use std::rc::Rc;

fn preset(procs: usize) -> Preset {
    Preset::builtin("flash").unwrap().with_procs(procs).unwrap()
}

fn tester(procs: usize, seed: u64, ops: u64, lines: usize, fault: Fault) -> TesterReport {
    run(
        preset(procs),
        &TesterConfig {
            ops,
            seed,
            lines,
            fault,
        },
    )
    .unwrap()
}

fn assert_clean(r: &TesterReport) {
    assert_eq!(
        r.violations,
        0,
        "{:?}\n{}",
        r.first_violation,
        r.history.join("\n")
    );
    assert!(r.nacks > 0, "no NACKs: {r:?}");
    assert!(
        r.protocol_count("converted_upgrades") > 0,
        "no converted upgrades: {r:?}"
    );
    assert!(r.invalidations > 0 && r.interventions > 0, "{r:?}");
    // The agent does not report write-backs as transactions; the protocol counts them.
    assert!(r.protocol_count("writebacks") > 0, "{r:?}");
}

/// Also checks, on every header write, that the DP protocol never changes FlashPoint's spare
/// bits (test builds start every header with a spare-bit pattern: see `dir::initial_header`).
#[test]
fn tester_16_nodes_several_seeds() {
    for seed in [1, 2, 3] {
        let r = tester(16, seed, 30_000, 4, Fault::None);
        assert_clean(&r);
    }
}

/// Two hot lines at 16 nodes: seeds 2 and 3 livelocked when a write-back's PutAck could
/// overtake a forwarded request at the old owner (see `Kind::is_reply`). A regression shows as
/// a run that hits its cycle limit (slowly).
#[test]
fn tester_two_hot_lines_writeback_crossing_forward() {
    // The race needs particular timing: count the seeds that reach it (2 and 3 did with the
    // configured handler costs; the measured ones move it).
    let mut raced = 0;
    for seed in 1..=6 {
        let r = tester(16, seed, 30_000, 2, Fault::None);
        assert_clean(&r);
        raced += (r.protocol_count("stale_writebacks") > 0) as u32;
    }
    assert!(raced > 0, "no seed crossed a write-back with a forward");
}

#[test]
fn tester_64_nodes() {
    for seed in [7, 8] {
        let r = tester(64, seed, 40_000, 6, Fault::None);
        assert_clean(&r);
    }
}

#[test]
fn tester_odd_node_count() {
    let r = tester(12, 4, 20_000, 3, Fault::None);
    assert_clean(&r);
}

#[test]
fn tester_catches_a_dropped_invalidation() {
    let r = tester(
        16,
        5,
        30_000,
        2,
        Fault::DropInvalidation { n: 30, count: 0 },
    );
    assert!(r.protocol_count("dropped_invalidations") > 0, "{r:?}");
    assert!(r.violations > 0, "broken protocol passed: {r:?}");
}

#[test]
fn same_seed_same_run() {
    let a = tester(16, 11, 10_000, 3, Fault::None);
    let b = tester(16, 11, 10_000, 3, Fault::None);
    assert_eq!(
        (
            a.cycles,
            a.nacks,
            a.invalidations,
            a.interventions,
            &a.protocol
        ),
        (
            b.cycles,
            b.nacks,
            b.invalidations,
            b.interventions,
            &b.protocol
        )
    );
}

#[derive(Default)]
struct Log {
    done: Vec<(u64, u64, u64, Cmd)>,
    /// (node, handler, latency, occupancy, start, queued)
    handlers: Vec<(u16, u16, u64, u64, u64, u64)>,
}
struct LogProbe(Rc<RefCell<Log>>);
impl Probe for LogProbe {
    fn observe(&mut self, o: &Observation, _s: &mut Signals) {
        let mut l = self.0.borrow_mut();
        match *o {
            Observation::TxDone {
                t,
                issued,
                addr,
                cmd,
                ..
            } => l.done.push((addr, issued, t, cmd)),
            Observation::Handler {
                node,
                handler,
                latency,
                occupancy,
                start,
                queued,
                ..
            } => l
                .handlers
                .push((node, handler, latency, occupancy, start, queued)),
            _ => {}
        }
    }
    fn name(&self) -> &str {
        "log"
    }
}

/// One processor reads one line homed at `home`, alone in the machine. Returns the miss
/// latency in system cycles and the log.
fn lone_read(procs: usize, reader: usize, home: usize) -> (u64, Rc<RefCell<Log>>) {
    let p = preset(procs);
    let mut m = Machine::new(p, Options::default()).unwrap();
    let log = Rc::new(RefCell::new(Log::default()));
    m.attach(Box::new(LogProbe(log.clone())));
    let a = m.setup().alloc("x", 4096, Place::Node(home));
    m.spawn(reader, move |ctx| {
        ctx.load_value(a);
    });
    m.run(Some(1_000_000)).unwrap();
    let sys = m.state().sys_period;
    let (_, issued, done, _) = *log
        .borrow()
        .done
        .iter()
        .find(|d| d.0 == a)
        .expect("the read missed");
    ((done - issued) / sys, log)
}

/// The measured cost of `h` on the path of an uncontended clean read (no sharers).
fn cost(h: Handler) -> (u64, u64) {
    use crate::flash::pp::{self, Path};
    let path = match h {
        Handler::PILocalGet | Handler::NIRemotePut => Path {
            to_proc: true,
            ..Path::default()
        },
        _ => Path {
            net_sends: 1,
            ..Path::default()
        },
    };
    let (l, o) = pp::cost(h, &path);
    (l as u64, o as u64)
}

#[test]
fn uncontended_local_read_matches_the_configuration() {
    let p = preset(16);
    let c = p.flash.clone().unwrap();
    let inbound = p.cpu.inbound_cycles as u64 * p.clocks.system_hz / p.clocks.cpu_hz;
    let (pilg, _) = cost(Handler::PILocalGet);
    let want = c.pi_in_cycles as u64
        + (c.dispatch_cycles as u64 + pilg).max(c.memory_cycles as u64)
        + c.pi_out_cycles as u64
        + inbound;
    let (got, log) = lone_read(16, 3, 3);
    assert_eq!(got, want, "local read latency");
    assert!(
        (20..=26).contains(&got),
        "seed 004 Table 2: DP local reads 22-24"
    );
    let l = log.borrow();
    let h = l
        .handlers
        .iter()
        .find(|h| h.1 == Handler::PILocalGet as u16)
        .unwrap();
    let sys = 2; // 200 MHz ticks per 100 MHz cycle
    assert_eq!((h.2 / sys, h.3 / sys), cost(Handler::PILocalGet));
}

#[test]
fn uncontended_remote_read_matches_the_configuration() {
    let p = preset(16);
    let c = p.flash.clone().unwrap();
    let inbound = p.cpu.inbound_cycles as u64 * p.clocks.system_hz / p.clocks.cpu_hz;
    let data_flits = 1 + p.line_bytes() / c.flit_bytes as u64;
    for (reader, home) in [(0usize, 1usize), (0, 15), (5, 10)] {
        let hops = crate::net::mesh::Mesh::new(16, 1, 1).hops(reader, home) as u64;
        let (prg, _) = cost(Handler::PIRemoteGet);
        let (nilg, _) = cost(Handler::NILocalGet);
        let (nirp, _) = cost(Handler::NIRemotePut);
        let net = |flits: u64| {
            c.ni_out_cycles as u64
                + hops * c.router_cycles as u64
                + flits * c.flit_cycles as u64
                + c.ni_in_cycles as u64
        };
        let d = c.dispatch_cycles as u64;
        let want = c.pi_in_cycles as u64
            + d
            + prg
            + net(1)
            + (d + nilg).max(c.memory_cycles as u64)
            + net(data_flits)
            + d
            + nirp
            + c.pi_out_cycles as u64
            + inbound;
        let (got, log) = lone_read(16, reader, home);
        assert_eq!(got, want, "remote read {reader} -> {home} ({hops} hops)");
        let l = log.borrow();
        let sys = 2;
        for h in [
            Handler::PIRemoteGet,
            Handler::NILocalGet,
            Handler::NIRemotePut,
        ] {
            let r = l
                .handlers
                .iter()
                .find(|x| x.1 == h as u16)
                .unwrap_or_else(|| panic!("{} did not run", h.name()));
            assert_eq!((r.2 / sys, r.3 / sys), cost(h), "{}", h.name());
        }
        let home_run = l
            .handlers
            .iter()
            .find(|x| x.1 == Handler::NILocalGet as u16)
            .unwrap();
        assert_eq!(home_run.0 as usize, home, "NILocalGet runs at the home");
    }
}

#[test]
fn remote_reads_land_in_the_expected_range() {
    // Average over all (reader, home) pairs of a 4x4 mesh.
    let mut sum = 0;
    let mut n = 0;
    for home in [0usize, 5, 15] {
        for reader in 0..16 {
            if reader != home {
                sum += lone_read(16, reader, home).0;
                n += 1;
            }
        }
    }
    let avg = sum / n;
    assert!(
        (90..=160).contains(&avg),
        "average clean remote read {avg} cycles"
    );
}

#[test]
fn preset_rejects_an_unknown_handler_cost_and_a_fixed_cost_overrides() {
    let c = crate::flash::config::HandlerCost {
        latency: 15,
        occupancy: 29,
        ..Default::default()
    };
    let mut p = preset(16);
    p.flash
        .as_mut()
        .unwrap()
        .handlers
        .insert("NIBogus".into(), c);
    let e = p.validate().unwrap_err().0;
    assert!(e.contains("NIBogus"), "{e}");
    // A fixed cost replaces the measured one (the configured costs before issue 20).
    let mut p = preset(16);
    p.flash
        .as_mut()
        .unwrap()
        .handlers
        .insert("NILocalGet".into(), c);
    let mut m = Machine::new(p, Options::default()).unwrap();
    let log = Rc::new(RefCell::new(Log::default()));
    m.attach(Box::new(LogProbe(log.clone())));
    let a = m.setup().alloc("x", 4096, Place::Node(1));
    m.spawn(0, move |ctx| {
        ctx.load_value(a);
    });
    m.run(Some(1_000_000)).unwrap();
    let l = log.borrow();
    let r = l
        .handlers
        .iter()
        .find(|x| x.1 == Handler::NILocalGet as u16)
        .unwrap();
    assert_eq!((r.2 / 2, r.3 / 2), (15, 29));
}

#[test]
fn handler_names_round_trip() {
    for &h in Handler::ALL {
        assert_eq!(Handler::from_name(h.name()), Some(h));
        assert_eq!(Handler::from_id(h as u16), Some(h));
    }
}

#[test]
fn invalidating_handler_pays_per_sharer_and_acks_reach_the_requester() {
    let p = preset(16);
    let mut m = Machine::new(p, Options::default()).unwrap();
    let log = Rc::new(RefCell::new(Log::default()));
    m.attach(Box::new(LogProbe(log.clone())));
    let a = m.setup().alloc("x", 4096, Place::Node(0));
    for r in [1, 2, 3] {
        m.spawn(r, move |ctx| {
            ctx.load_value(a);
        });
    }
    m.spawn(4, move |ctx| {
        ctx.int(20_000); // long after the three reads
        ctx.store_value(a, 7);
    });
    m.run(Some(10_000_000)).unwrap();
    let l = log.borrow();
    let sys = 2;
    let c = crate::flash::pp::cost(
        Handler::NILocalGetX,
        &crate::flash::pp::Path {
            had_sharers: true,
            walked: 3,
            invals: 3,
            net_sends: 4,
            ..Default::default()
        },
    );
    let getx = l
        .handlers
        .iter()
        .find(|h| h.1 == Handler::NILocalGetX as u16)
        .expect("NILocalGetX ran");
    assert_eq!(getx.0, 0, "at the home");
    assert_eq!(
        (getx.2 / sys, getx.3 / sys),
        (c.0 as u64, c.1 as u64),
        "three sharers walked"
    );
    let count = |h: Handler, node: u16| {
        l.handlers
            .iter()
            .filter(|x| x.1 == h as u16 && x.0 == node)
            .count()
    };
    for s in [1, 2, 3] {
        assert_eq!(count(Handler::NIInval, s), 1, "NIInval at {s}");
        assert_eq!(count(Handler::PIInvalAck, s), 1, "PIInvalAck at {s}");
    }
    assert_eq!(
        count(Handler::NIInvalAck, 4),
        3,
        "acks collected at the requester"
    );
    assert_eq!(count(Handler::NIRemotePutX, 4), 1);
}

#[test]
fn a_busy_protocol_processor_queues_the_next_handler() {
    // Nodes 1 and 4 are both one hop from node 0: their reads of two lines homed at node 0
    // reach its MAGIC at the same time, and the second NILocalGet waits for the first's
    // occupancy.
    let p = preset(16);
    let mut m = Machine::new(p, Options::default()).unwrap();
    let log = Rc::new(RefCell::new(Log::default()));
    m.attach(Box::new(LogProbe(log.clone())));
    let a = m.setup().alloc("x", 8192, Place::Node(0));
    for (r, off) in [(1usize, 0u64), (4, 4096)] {
        m.spawn(r, move |ctx| {
            ctx.load_value(a + off);
        });
    }
    m.run(Some(10_000_000)).unwrap();
    let l = log.borrow();
    let runs: Vec<_> = l
        .handlers
        .iter()
        .filter(|h| h.1 == Handler::NILocalGet as u16 && h.0 == 0)
        .collect();
    assert_eq!(runs.len(), 2);
    let (first, second) = (runs[0], runs[1]);
    assert_eq!(first.5, second.5, "arrived together");
    assert_eq!(
        second.4,
        first.4 + first.3,
        "second starts at the first's switch"
    );
}
