//! Tests of the NUMAchine memory system: the random protocol tester (races must happen and
//! break nothing), fault detection, latencies computed from the configuration, network-cache
//! hits, bus errors and determinism.

use crate::addr::Place;
use crate::config::Preset;
use crate::fault::Fault;
use crate::probe::{Observation, Probe, RespState, Signals};
use crate::sim::{Machine, Options};
use crate::tester::{run, TesterConfig, TesterReport};
use engine::Tick;
use std::cell::RefCell;
use std::rc::Rc;

fn preset(procs: usize) -> Preset {
    Preset::builtin("numachine")
        .unwrap()
        .with_procs(procs)
        .unwrap()
}

fn tester(p: Preset, ops: u64, seed: u64, lines: usize, fault: Fault) -> TesterReport {
    run(
        p,
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
}

#[test]
fn tester_16_processors_several_seeds_no_violations_and_races_happen() {
    for seed in [1, 2, 3, 4] {
        let r = tester(preset(16), 30_000, seed, 4, Fault::None);
        assert_clean(&r);
        assert!(r.nacks > 0, "no NACKs: {r:?}");
        assert!(r.cancelled_upgrades > 0, "no cancelled upgrades: {r:?}");
        assert!(r.interventions > 0 && r.invalidations > 0, "{r:?}");
    }
}

#[test]
fn tester_64_processors_no_violations_and_races_happen() {
    for seed in [7, 8] {
        let r = tester(preset(64), 40_000, seed, 8, Fault::None);
        assert_clean(&r);
        assert!(r.nacks > 0, "no NACKs: {r:?}");
        assert!(r.cancelled_upgrades > 0, "no cancelled upgrades: {r:?}");
    }
}

#[test]
fn tester_other_topologies() {
    // One station; two stations on one ring; two rings of two stations of two.
    for (procs, pps, spr) in [(4, 4, 4), (8, 4, 4), (8, 2, 2)] {
        eprintln!("topology: {procs} processors, {pps} per station, {spr} stations per ring");
        let mut p = Preset::builtin("numachine").unwrap();
        let c = p.numachine.as_mut().unwrap();
        c.procs_per_station = pps;
        c.stations_per_ring = spr;
        let p = p.with_procs(procs).unwrap();
        let r = tester(p, 20_000, 11, 3, Fault::None);
        assert_clean(&r);
    }
}

#[test]
fn tester_catches_a_dropped_invalidation() {
    let r = tester(
        preset(16),
        30_000,
        5,
        2,
        Fault::DropInvalidation { n: 40, count: 0 },
    );
    assert!(r.violations > 0, "broken protocol passed: {r:?}");
    assert!(r.first_violation.is_some() && !r.history.is_empty());
}

#[test]
fn tiny_network_cache_still_coherent() {
    // One set of two ways: evictions (silent, and write-backs of LV lines) all the time.
    let mut p = preset(16);
    let line = p.line_bytes();
    let c = p.numachine.as_mut().unwrap();
    c.nc_size_bytes = 2 * line;
    c.nc_assoc = 2;
    let r = tester(p, 30_000, 9, 4, Fault::None);
    assert_clean(&r);
}

#[test]
fn bus_errors_under_contention_with_a_short_timeout() {
    let mut p = preset(16);
    p.numachine.as_mut().unwrap().timeout_bus_cycles = 6;
    let r = tester(p, 20_000, 3, 1, Fault::None);
    assert_clean(&r);
    assert!(r.bus_errors > 0, "no bus errors: {r:?}");
}

#[test]
fn same_seed_same_run() {
    let a = tester(preset(16), 20_000, 21, 4, Fault::None);
    let b = tester(preset(16), 20_000, 21, 4, Fault::None);
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
    let c = tester(preset(16), 20_000, 22, 4, Fault::None);
    assert_ne!(a.cycles, c.cycles, "the seed should matter");
}

/// Records each completed transaction's latency and response state.
#[derive(Default)]
struct Lat(Rc<RefCell<Vec<(u16, Tick, RespState)>>>, u64);

impl Probe for Lat {
    fn observe(&mut self, o: &Observation, _sig: &mut Signals) {
        if let Observation::TxDone {
            proc,
            t,
            issued,
            resp,
            cmd: crate::probe::Cmd::Read,
            addr,
            ..
        } = *o
        {
            if addr != self.1 {
                return;
            }
            self.0.borrow_mut().push((proc, t - issued, resp));
        }
    }
    fn name(&self) -> &str {
        "latency"
    }
}

/// Runs reads of one line homed on station `home` by `readers` (in order, far apart in
/// time); returns (processor, latency, response state) of each miss.
fn reads(home: usize, readers: &[usize]) -> (Preset, Vec<(u16, Tick, RespState)>) {
    let p = preset(16);
    let mut m = Machine::new(p.clone(), Options::default()).unwrap();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let a = m.setup().alloc("x", 4096, Place::Node(home));
    m.attach(Box::new(Lat(seen.clone(), a)));
    for (i, &r) in readers.iter().enumerate() {
        m.spawn(r, move |ctx| {
            ctx.int(5_000 * i as u64 + 1);
            ctx.load_value(a);
        });
    }
    m.run(Some(1_000_000)).unwrap();
    let v = seen.borrow().clone();
    (p, v)
}

struct Times {
    cpu: Tick,
    bus: Tick,
}

fn times(p: &Preset) -> Times {
    let c = p.clocks_built().unwrap();
    Times {
        cpu: c.get("cpu").unwrap().period,
        bus: c.get("system").unwrap().period,
    }
}

#[test]
fn uncontended_local_read_miss_latency() {
    let (p, v) = reads(0, &[1]);
    let c = p.numachine.as_ref().unwrap();
    let tm = times(&p);
    let data = p.line_bytes() / c.bus_bytes_per_cycle as u64;
    let request = (c.bus_arbitration_cycles + c.bus_address_cycles) as u64;
    let bus_cycles = request + c.memory_cycles as u64 + request + data;
    let want = bus_cycles * tm.bus + p.cpu.inbound_cycles as u64 * tm.cpu;
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].1, want, "local read miss");
    let cpu_cycles = want / tm.cpu;
    assert!((30..=60).contains(&cpu_cycles), "{cpu_cycles} cycles");
    assert_eq!(
        v[0].2,
        RespState {
            nc_hit: false,
            global: false,
            valid: true,
            remote: false
        }
    );
}

#[test]
fn uncontended_remote_read_miss_latency_and_network_cache_hit() {
    // Processor 0 (station 0) reads a line of station 1, then processor 1 (station 0) reads it.
    let (p, v) = reads(1, &[0, 1]);
    let c = p.numachine.as_ref().unwrap();
    let tm = times(&p);
    let line = p.line_bytes();
    let request = (c.bus_arbitration_cycles + c.bus_address_cycles) as u64;
    let bus_data = line / c.bus_bytes_per_cycle as u64;
    let packets = 1 + line / c.ring_bytes_per_slot as u64;
    let ri = c.ring_interface_cycles as u64;
    let hop = c.ring_hop_cycles as u64;
    // Station 0 to 1 is one hop forward; 1 back to 0 is three (ring of four stations).
    let to_home = 2 * ri + hop;
    let back = 2 * ri + 3 * hop + (packets - 1);
    let bus_cycles = request                        // processor to NC
        + c.nc_lookup_cycles as u64
        + to_home
        + request                                   // ring interface to memory
        + c.memory_cycles as u64
        + request + bus_data                        // memory to ring interface
        + back
        + c.nc_data_cycles as u64
        + request + bus_data; // NC to processor
    let inbound = p.cpu.inbound_cycles as u64 * tm.cpu;
    assert_eq!(v.len(), 2, "{v:?}");
    assert_eq!(v[0].0, 0);
    assert_eq!(v[0].1, bus_cycles * tm.bus + inbound, "remote read miss");
    let cpu_cycles = v[0].1 / tm.cpu;
    assert!((100..=300).contains(&cpu_cycles), "{cpu_cycles} cycles");
    assert_eq!(
        v[0].2,
        RespState {
            nc_hit: false,
            global: false,
            valid: true,
            remote: true
        }
    );
    // The second read hits the network cache, whose line is GV after the first read.
    let hit_cycles =
        request + c.nc_lookup_cycles as u64 + c.nc_data_cycles as u64 + request + bus_data;
    assert_eq!(v[1].0, 1);
    assert_eq!(v[1].1, hit_cycles * tm.bus + inbound, "NC hit");
    assert_eq!(
        v[1].2,
        RespState {
            nc_hit: true,
            global: true,
            valid: true,
            remote: true
        }
    );
}

/// 10 million tester operations (run with `--release --ignored`; prints wall time).
#[test]
#[ignore]
fn tester_ten_million_operations() {
    for procs in [16, 64] {
        let t0 = std::time::Instant::now();
        let r = tester(preset(procs), 10_000_000, 1, procs / 2, Fault::None);
        let wall = t0.elapsed();
        println!(
            "numachine {procs} procs: {} ops in {:.1} s wall; {} simulated cycles; violations {}; nacks {}; cancelled upgrades {}; bus errors {}; invalidations {}; interventions {}; write-backs {}",
            r.operations,
            wall.as_secs_f64(),
            r.cycles,
            r.violations,
            r.nacks,
            r.cancelled_upgrades,
            r.bus_errors,
            r.invalidations,
            r.interventions,
            r.writebacks
        );
        assert_clean(&r);
    }
}

#[test]
fn every_contended_resource_reports_queueing() {
    let p = preset(64);
    let mut m = Machine::new(p, Options::default()).unwrap();
    let a = m.setup().alloc("x", 64 * 4096, Place::RoundRobin);
    for q in 0..64 {
        m.spawn(q, move |ctx| {
            for i in 0..64u64 {
                ctx.load_value(a + ((i * 7 + q as u64) % 64) * 4096);
            }
            ctx.store_value(a + (q as u64 % 8) * 4096, 1);
        });
    }
    m.run(Some(10_000_000)).unwrap();
    let gt = m.state().truth.as_ref().unwrap();
    use crate::probe::Resource as R;
    let kinds = |f: fn(&R) -> bool| gt.queues.keys().filter(|r| f(r)).count();
    assert_eq!(kinds(|r| matches!(r, R::Bus(_))), 16);
    assert_eq!(kinds(|r| matches!(r, R::Memory(_))), 16);
    assert_eq!(kinds(|r| matches!(r, R::NetworkCache(_))), 16);
    assert_eq!(kinds(|r| matches!(r, R::RingInterface(_))), 16);
    assert_eq!(kinds(|r| matches!(r, R::InterRing(_))), 4);
    let waited: u64 = gt.queues.values().map(|q| q.wait_sum).sum();
    assert!(waited > 0, "64 processors missing at once never waited");
}

#[test]
fn remote_read_miss_across_the_central_ring() {
    // Processor 0 (station 0, ring 0) reads a line of station 5 (ring 1, position 1).
    let p = preset(64);
    let mut m = Machine::new(p.clone(), Options::default()).unwrap();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let a = m.setup().alloc("x", 4096, Place::Node(5));
    m.attach(Box::new(Lat(seen.clone(), a)));
    m.spawn(0, move |ctx| {
        ctx.load_value(a);
    });
    m.run(Some(1_000_000)).unwrap();
    let c = p.numachine.as_ref().unwrap();
    let tm = times(&p);
    let line = p.line_bytes();
    let request = (c.bus_arbitration_cycles + c.bus_address_cycles) as u64;
    let bus_data = line / c.bus_bytes_per_cycle as u64;
    let packets = 1 + line / c.ring_bytes_per_slot as u64;
    let (ri, hop, iri, chop) = (
        c.ring_interface_cycles as u64,
        c.ring_hop_cycles as u64,
        c.inter_ring_cycles as u64,
        c.central_hop_cycles as u64,
    );
    // Local rings have 4 stations and the inter-ring interface (5 nodes); the central ring
    // has 4 nodes. Out: station 0 -> IRI 4 hops, central ring 0 -> 1 one hop, IRI -> position
    // 1: 2 hops. Back: position 1 -> IRI 3 hops, central 1 -> 0 three hops, IRI -> 0 one hop.
    let to_home = 2 * ri + 2 * iri + (4 + 2) * hop + chop;
    let back = 2 * ri + 2 * iri + (3 + 1) * hop + 3 * chop + (packets - 1);
    let bus_cycles = request
        + c.nc_lookup_cycles as u64
        + to_home
        + request
        + c.memory_cycles as u64
        + request
        + bus_data
        + back
        + c.nc_data_cycles as u64
        + request
        + bus_data;
    let want = bus_cycles * tm.bus + p.cpu.inbound_cycles as u64 * tm.cpu;
    let v = seen.borrow();
    assert_eq!(v.len(), 1, "{v:?}");
    assert_eq!(v[0].1, want);
    assert!((100..=300).contains(&(want / tm.cpu)), "{}", want / tm.cpu);
}

/// Records which processors received an invalidation for one address.
struct Invals(Rc<RefCell<Vec<u16>>>, u64);

impl Probe for Invals {
    fn observe(&mut self, o: &Observation, _sig: &mut Signals) {
        if let Observation::Inbound {
            proc,
            kind: crate::probe::InboundKind::Invalidate,
            addr,
            ..
        } = *o
        {
            if addr == self.1 {
                self.0.borrow_mut().push(proc);
            }
        }
    }
    fn name(&self) -> &str {
        "invalidations"
    }
}

#[test]
fn invalidation_multicast_reaches_the_routing_mask_cross_product() {
    // Line homed on station 2 (ring 0). Readers on station 1 (ring 0, position 1) and station
    // 4 (ring 1, position 0): the mask is rings {0, 1} x positions {0, 1}, which also names
    // stations 0 and 5. A write by a processor of the home station invalidates all four; the
    // network caches of 0 and 5 miss and broadcast on their buses.
    let p = preset(64);
    let mut m = Machine::new(p, Options::default()).unwrap();
    let seen = Rc::new(RefCell::new(Vec::new()));
    let a = m.setup().alloc("x", 4096, Place::Node(2));
    m.attach(Box::new(Invals(seen.clone(), a)));
    for reader in [4, 16] {
        m.spawn(reader, move |ctx| {
            ctx.load_value(a);
        });
    }
    m.spawn(8, move |ctx| {
        ctx.int(20_000);
        ctx.store_value(a, 1);
    });
    m.run(Some(1_000_000)).unwrap();
    let mut got = seen.borrow().clone();
    got.sort();
    let want: Vec<u16> = (0..8).chain(16..24).collect();
    assert_eq!(got, want, "stations 0 and 1 (ring 0), 4 and 5 (ring 1)");
}
