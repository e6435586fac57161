//! FlashPoint's records kept by process (issue 15, `Machine::flashpoint_by_process`): three
//! processes time-sliced on two FLASH nodes under the operating system; each process's
//! record array holds exactly its misses as the ground truth charges them
//! (`GroundTruth::per_process`), and the switch path's procedure delta is what it costs.

use crate::addr::Place;
use crate::config::Preset;
use crate::flash::flashpoint::{FlashPoint, FlashProtocol, Record};
use crate::memsys::System;
use crate::os::config::OsCfg;
use crate::sim::{Machine, Options};

fn preset(proto: FlashProtocol) -> Preset {
    let mut p = Preset::builtin("flash").unwrap().with_procs(2).unwrap();
    p.flash.as_mut().unwrap().protocol = proto;
    p.os = Some(OsCfg {
        quantum_cycles: 20_000,
        timer_period_cycles: 10_000,
        ..OsCfg::default()
    });
    p.validate().unwrap();
    p
}

/// Processes `a`, `b`, `c` of two threads each on two processors (so every processor
/// switches among three threads of different processes): each thread reads a shared
/// array of its process in procedure `scan` and writes its own part in `fill`, so misses
/// are local and remote, reads and writes, cold and coherence.
fn three_processes(proto: FlashProtocol, by_process: bool) -> Machine {
    let mut m = Machine::new(preset(proto), Options::default()).unwrap();
    for name in ["a", "b", "c"] {
        let pid = m.new_process(name, false).unwrap();
        let (data, scan, fill) = {
            let mut s = m.setup_process(pid);
            (
                s.alloc("data", 64 * 1024, Place::RoundRobin),
                s.procedure("scan"),
                s.procedure("fill"),
            )
        };
        for t in 0..2 {
            m.spawn_in(pid, t, 2, move |ctx| {
                let mine = data + ctx.tid() as u64 * 32 * 1024;
                for rep in 0..3u64 {
                    ctx.enter(scan);
                    for k in (0..64 * 1024).step_by(128) {
                        ctx.load(data + k);
                        ctx.int(3 + rep);
                    }
                    ctx.leave();
                    ctx.enter(fill);
                    for k in (0..32 * 1024).step_by(128) {
                        ctx.store(mine + k);
                    }
                    ctx.leave();
                }
            });
        }
    }
    if by_process {
        // main and scan, fill of each: 7 procedures, 8 slots per process.
        assert_eq!(m.flashpoint_by_process(), Ok(8));
    }
    m.run(Some(2_000_000_000)).unwrap();
    m
}

fn fp(m: &Machine) -> &FlashPoint {
    match &m.state().system {
        System::Flash(s) => s.flashpoint().unwrap(),
        _ => panic!("flash"),
    }
}

/// Per process: its array's records summed.
fn per_process(fp: &FlashPoint, n: usize) -> Vec<Record> {
    let mut v = vec![Record::default(); n];
    for node in 0..fp.nodes() {
        for (&(slot, _), r) in fp.records(node) {
            let pid = fp.split_slot(slot).0.expect("kept by process") as usize;
            v[pid].add(r);
        }
    }
    v
}

#[test]
fn each_process_array_holds_exactly_its_misses() {
    for proto in [FlashProtocol::FpNoProc, FlashProtocol::FpProc] {
        let m = three_processes(proto, true);
        let st = m.state();
        let gt = st.truth.as_ref().unwrap();
        let recs = per_process(fp(&m), 3);
        let os = st.os.as_ref().unwrap();
        assert!(os.stats.switches >= 6, "{proto:?}: {}", os.stats.switches);
        for (pid, r) in recs.iter().enumerate() {
            let e = &gt.per_process[pid];
            assert_eq!(
                [
                    r.rd_miss_local,
                    r.rd_miss_remote,
                    r.wr_miss_local,
                    r.wr_miss_remote,
                ],
                [e.read_local, e.read_remote, e.write_local, e.write_remote],
                "{proto:?}: process {pid}"
            );
            assert!(r.rd_miss_remote > 0 && r.wr_miss_local > 0);
            // Cold misses are compared on `pmusim run` (`multiprog` tests): in test builds
            // the spare bits of a line never binned (code, the OS's tables) start with a
            // pattern (`dir::initial_header`), so its warm bit may start set.
        }
        // Every switch between processes moves the register: one delta each (FP-NoProc:
        // only those; FP-Proc: also a switch within a process whose threads stand in
        // different procedures), each the fence plus an uncached load.
        let s = &os.stats;
        assert!(s.switch_commands > 0 && s.switch_commands <= s.switches);
        let fence = fp(&m).cfg.fence_cycles as u64;
        let per = s.switch_command_cycles / s.switch_commands;
        assert!((fence + 10..fence + 80).contains(&per), "{per}");
        // FP-Proc: a process's records are in its own procedures (and `main`).
        if proto == FlashProtocol::FpProc {
            for node in 0..fp(&m).nodes() {
                for &(slot, _) in fp(&m).records(node).keys() {
                    let (pid, p) = fp(&m).split_slot(slot);
                    let name = &st.procedures[p as usize];
                    let own = &os.processes[pid.unwrap() as usize].name;
                    assert!(
                        name == "main" || name.starts_with(&format!("{own}/")),
                        "{name} in {own}'s array"
                    );
                }
            }
        }
    }
}

/// Without the restriction, FP-NoProc's switch path issues nothing (the run is the one
/// before by-process existed); FP-Proc's moves the procedure register with the thread, so
/// no record lands in a procedure slot no thread was in.
#[test]
fn the_register_follows_the_thread_without_restriction() {
    let m = three_processes(FlashProtocol::FpNoProc, false);
    assert_eq!(m.state().os.as_ref().unwrap().stats.switch_commands, 0);
    assert!(fp(&m).process_span().is_none());
    let m = three_processes(FlashProtocol::FpProc, false);
    let procedures = m.state().procedures.len() as u32;
    assert!(m.state().os.as_ref().unwrap().stats.switch_commands > 0);
    for node in 0..fp(&m).nodes() {
        for &(slot, _) in fp(&m).records(node).keys() {
            assert!(slot < procedures, "slot {slot} of {procedures}");
        }
    }
}

#[test]
fn refused_where_it_cannot_be_exact() {
    // Several hardware contexts per core share a node's one register.
    let mut p = preset(FlashProtocol::FpProc);
    p.cpu.threads_per_core = 2;
    let mut m = Machine::new(p, Options::default()).unwrap();
    let e = m.flashpoint_by_process().unwrap_err();
    assert!(e.contains("hardware contexts per core"), "{e}");
    // No operating system, or no FlashPoint.
    let mut p = preset(FlashProtocol::FpProc);
    p.os = None;
    let mut m = Machine::new(p, Options::default()).unwrap();
    assert!(m.flashpoint_by_process().unwrap_err().contains("processes"));
    let mut m = Machine::new(preset(FlashProtocol::Dp), Options::default()).unwrap();
    assert!(m.flashpoint_by_process().unwrap_err().contains("fp-noproc"));
    // More processes than the record region holds: 16 MB / (1024 bins x 128 B) = 128 slots.
    let mut p = preset(FlashProtocol::FpProc);
    p.flash.as_mut().unwrap().flashpoint.bins = 1024;
    let mut m = Machine::new(p, Options::default()).unwrap();
    for i in 0..200 {
        m.new_process(&format!("p{i}"), false).unwrap();
    }
    let e = m.flashpoint_by_process().unwrap_err();
    assert!(e.contains("200 processes"), "{e}");
}

/// Without an operating system, a core time-slicing several threads (`--threads` above
/// the processors) moves the register at each switch too (`Ctx::sched_resume`): under
/// FP-Proc the records per procedure equal the ground truth's, miss for miss (before, the
/// register kept the outgoing thread's procedure and drifted).
#[test]
fn time_slicing_without_an_os_keeps_procedures_exact() {
    let mut p = Preset::builtin("flash").unwrap().with_procs(2).unwrap();
    p.flash.as_mut().unwrap().protocol = FlashProtocol::FpProc;
    p.sched.quantum_cycles = 20_000;
    let mut m = Machine::new(p, Options::default()).unwrap();
    let (data, scan, fill) = {
        let mut s = m.setup();
        (
            s.alloc("data", 64 * 1024, Place::RoundRobin),
            s.procedure("scan"),
            s.procedure("fill"),
        )
    };
    for t in 0..4usize {
        m.spawn(t, move |ctx| {
            let mine = data + t as u64 * 16 * 1024;
            for rep in 0..3u64 {
                ctx.enter(if t % 2 == 0 { scan } else { fill });
                for k in (0..64 * 1024).step_by(128) {
                    ctx.load(data + k);
                    ctx.int(3 + rep);
                }
                ctx.leave();
                ctx.enter(fill);
                for k in (0..16 * 1024).step_by(128) {
                    ctx.store(mine + k);
                }
                ctx.leave();
            }
        });
    }
    m.run(Some(2_000_000_000)).unwrap();
    let fp = fp(&m);
    let gt = m.state().truth.as_ref().unwrap();
    let mut per: std::collections::BTreeMap<u32, Record> = Default::default();
    for node in 0..fp.nodes() {
        for (&(p, _), r) in fp.records(node) {
            per.entry(p).or_default().add(r);
        }
    }
    assert!(fp.counters.proc_cmds > 0);
    let procs = m.state().procedures.len() as u32;
    for (p, r) in &per {
        assert!(*p < procs, "slot {p}");
        let e = &gt.per_procedure[p];
        assert_eq!(
            [
                r.rd_miss_local,
                r.rd_miss_remote,
                r.wr_miss_local,
                r.wr_miss_remote
            ],
            [e.read_local, e.read_remote, e.write_local, e.write_remote],
            "procedure {}",
            m.state().procedures[*p as usize]
        );
    }
    assert_eq!(per.len(), 2, "scan and fill: {per:?}");
}
