//! The random protocol tester (`pmusim test-protocol`).
//!
//! Threads issue random loads, stores (each writing a unique value) and atomic adds on a few
//! contended lines, plus lines that conflict in the L2 so that dirty lines are written back
//! while others want them. A checker observes every L2 state change and every performed access
//! and verifies, at every step:
//! - single writer / multiple readers: a line is never modified in one cache while valid in
//!   another;
//! - data value: every load returns the value of the last store to its line.
//!
//! The first violation is reported with the seed that replays it and the events leading to it.

use crate::config::Preset;
use crate::fault::Fault;
use crate::probe::{Observation, Probe, Signals};
use crate::sim::{Machine, Options};
use engine::{SimRng, Tick};
use rustc_hash::FxHashMap;
use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

#[derive(Clone, Debug)]
pub struct TesterConfig {
    pub ops: u64,
    pub seed: u64,
    /// Contended lines (the hot set).
    pub lines: usize,
    pub fault: Fault,
}

/// Most operations one tester run may do: with the cycle limit of 20,000 cycles per
/// operation this stays far from overflow, and at about a million operations per second it is
/// already a quarter of an hour.
pub const MAX_OPS: u64 = 1_000_000_000;
/// Cycle budget per operation before a run counts as stuck (a liveness violation).
pub const CYCLES_PER_OP: u64 = 1_000;
/// Most contended lines: the tester is about races on a hot set, and each line takes a page
/// and `assoc` conflict partners in every thread's tables.
pub const MAX_LINES: usize = 4096;

impl TesterConfig {
    /// Refuses operation and line counts the tester cannot honour, naming the flag (issue 17:
    /// `--ops 0` ended in a false deadlock, a huge `--ops` wrapped the cycle limit, and
    /// `--lines 100000000` took gigabytes before failing).
    pub fn validate(&self) -> Result<(), String> {
        if self.ops == 0 {
            return Err("--ops must be at least 1".into());
        }
        if self.ops > MAX_OPS {
            return Err(format!(
                "--ops {} is more than the tester runs ({MAX_OPS} at most; a million take about a second)",
                self.ops
            ));
        }
        if self.lines == 0 || self.lines > MAX_LINES {
            return Err(format!(
                "--lines {} is outside 1..={MAX_LINES} (the contended set is meant to be small)",
                self.lines
            ));
        }
        Ok(())
    }
}

#[derive(Clone, Debug, Default)]
pub struct TesterReport {
    pub operations: u64,
    pub loads: u64,
    pub stores: u64,
    pub atomics: u64,
    pub violations: u64,
    pub first_violation: Option<String>,
    pub history: Vec<String>,
    pub nacks: u64,
    pub cancelled_upgrades: u64,
    pub bus_errors: u64,
    pub invalidations: u64,
    pub interventions: u64,
    pub writebacks: u64,
    /// L2 misses issued while another of the same processor's was outstanding
    /// (`Core::under_misses`; 0 with one MSHR).
    pub misses_under_misses: u64,
    pub cycles: u64,
    /// The memory system's own event counts (`System::counters`), e.g. converted upgrades.
    pub protocol: Vec<(&'static str, u64)>,
    /// Each memory controller's counts after the final drain (empty without `[memctl]`).
    pub controllers: Vec<crate::mem::controller::ControllerReport>,
}

impl TesterReport {
    /// A memory-system counter by name (0 if the protocol does not count it).
    pub fn protocol_count(&self, name: &str) -> u64 {
        self.protocol
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |c| c.1)
    }
}

#[derive(Default)]
struct Checker {
    line_shift: u32,
    /// (proc, line) -> L2 state.
    states: FxHashMap<(u16, u64), u8>,
    /// line -> (modified holders, shared holders).
    holders: FxHashMap<u64, (u32, u32)>,
    last: FxHashMap<u64, u64>,
    violations: u64,
    first: Option<String>,
    history: VecDeque<String>,
    frozen: Vec<String>,
}

impl Checker {
    fn violate(&mut self, msg: String) {
        self.violations += 1;
        if self.first.is_none() {
            self.first = Some(msg);
            self.frozen = self.history.iter().cloned().collect();
        }
    }
    fn log(&mut self, s: String) {
        if self.history.len() == 24 {
            self.history.pop_front();
        }
        self.history.push_back(s);
    }
}

struct CheckerProbe(Rc<RefCell<Checker>>);

impl Probe for CheckerProbe {
    fn observe(&mut self, o: &Observation, _sig: &mut Signals) {
        let mut c = self.0.borrow_mut();
        match *o {
            Observation::LineState {
                proc,
                t,
                line_addr,
                old,
                new,
                ..
            } => {
                let line = line_addr >> c.line_shift;
                c.log(format!(
                    "t={t} p{proc} line {line_addr:#x}: {} -> {}",
                    st(old),
                    st(new)
                ));
                let prev = c.states.insert((proc, line), new).unwrap_or(0);
                let h = c.holders.entry(line).or_default();
                match prev {
                    2 => h.0 -= 1,
                    1 => h.1 -= 1,
                    _ => {}
                }
                match new {
                    2 => h.0 += 1,
                    1 => h.1 += 1,
                    _ => {}
                }
                let (m, s) = *h;
                if m > 1 || (m == 1 && s > 0) {
                    // The holders, processor by processor: whose copy is the one too many.
                    let mut who: Vec<(u16, u8)> = c
                        .states
                        .iter()
                        .filter(|&(&(_, l), &s)| l == line && s != 0)
                        .map(|(&(q, _), &s)| (q, s))
                        .collect();
                    who.sort_unstable();
                    let who = who
                        .iter()
                        .map(|&(q, s)| format!("p{q} {}", st(s)))
                        .collect::<Vec<_>>()
                        .join(", ");
                    c.violate(format!(
                        "single-writer/multiple-reader violated at t={t}: line {line_addr:#x} is modified in {m} cache(s) and shared in {s} ({who}) after p{proc} went {} -> {}",
                        st(old),
                        st(new)
                    ));
                }
            }
            Observation::StorePerformed {
                proc,
                t,
                addr,
                value,
                ..
            } => {
                let line = addr >> c.line_shift;
                c.log(format!("t={t} p{proc} store {addr:#x} = {value:#x}"));
                c.last.insert(line, value);
            }
            Observation::LoadPerformed {
                proc,
                t,
                addr,
                value,
                ..
            } => {
                let line = addr >> c.line_shift;
                c.log(format!("t={t} p{proc} load {addr:#x} -> {value:#x}"));
                let want = c.last.get(&line).copied().unwrap_or(0);
                if want != value {
                    c.violate(format!(
                        "data value violated at t={t}: p{proc} loaded {value:#x} from {addr:#x} but the last store wrote {want:#x}"
                    ));
                }
            }
            _ => {}
        }
    }
    fn name(&self) -> &str {
        "protocol-checker"
    }
}

fn st(s: u8) -> &'static str {
    match s {
        0 => "I",
        1 => "S",
        _ => "M",
    }
}

/// Runs the tester on `preset` (all its processors).
pub fn run(preset: Preset, cfg: &TesterConfig) -> Result<TesterReport, String> {
    cfg.validate()?;
    let procs = preset.procs;
    let line = preset.line_bytes();
    let l2_size = preset.caches.last_private().size_bytes;
    let assoc = preset.caches.last_private().assoc as u64;
    let page = preset.memory.page_bytes;
    let preset_nonblocking = preset.cpu.nonblocking.is_some();
    let mut m = Machine::new(
        preset,
        Options {
            seed: cfg.seed,
            ground_truth: true,
            value_probes: true,
            line_probes: true,
            fault: cfg.fault,
            ..Options::default()
        },
    )
    .map_err(|e| e.to_string())?;
    let checker = Rc::new(RefCell::new(Checker {
        line_shift: line.trailing_zeros(),
        ..Default::default()
    }));
    m.attach(Box::new(CheckerProbe(checker.clone())));
    // Hot lines spread over pages (so over homes), and for each a partner that maps to the
    // same L2 set (evicting it, so dirty lines get written back under contention).
    let base = m.setup().alloc(
        "tester.lines",
        (cfg.lines as u64 + 1) * page + l2_size * 2,
        crate::addr::Place::RoundRobin,
    );
    let hot: Vec<u64> = (0..cfg.lines as u64)
        .map(|i| base + i * page + (i % 4) * line)
        .collect();
    // One partner per way: with `assoc` partners in its set, a hot line is evicted (a direct-
    // mapped L2 has one partner, `hot + l2_size`).
    let way = l2_size / assoc;
    let conflict: Vec<Vec<u64>> = hot
        .iter()
        .map(|a| (1..=assoc).map(|k| a + k * way).collect())
        .collect();
    let per_thread = cfg.ops / procs as u64 + 1;
    // On a core with non-blocking loads (and stores), half the operations are plain ones
    // whose miss stays outstanding while the thread goes on (`cpu::nonblocking`), so that
    // invalidations and interventions meet lines in flight; other cores draw as before.
    let plain = preset_nonblocking;
    for p in 0..procs {
        let hot = hot.clone();
        let conflict = conflict.clone();
        let seed = cfg.seed;
        m.spawn(p, move |ctx| {
            let mut rng = SimRng::new(seed ^ (p as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            for k in 0..per_thread {
                let i = rng.below(hot.len() as u64) as usize;
                let a = if rng.chance(0.1) {
                    let c = &conflict[i];
                    // No extra draw for a direct-mapped L2 (keeps those runs as they were).
                    let k = if c.len() > 1 {
                        rng.below(c.len() as u64) as usize
                    } else {
                        0
                    };
                    c[k]
                } else {
                    hot[i]
                };
                if plain && rng.chance(0.5) {
                    // No value: the store's fill performs nothing the checker compares.
                    if rng.chance(0.5) {
                        ctx.load(a);
                    } else {
                        ctx.store(a);
                    }
                    continue;
                }
                match rng.below(10) {
                    0..=4 => {
                        ctx.load_value(a);
                    }
                    5..=8 => ctx.store_value(a, ((p as u64 + 1) << 40) | k),
                    _ => {
                        ctx.fetch_add(a, 1);
                    }
                }
                let think = rng.below(8);
                if think > 0 {
                    ctx.int(think);
                }
            }
        });
    }
    // A run that cannot finish is a liveness violation, reported like the others (with the
    // events before it and the seed that replays it): a lost acknowledgement or retry leaves
    // a processor waiting forever. `CYCLES_PER_OP` is far above what any preset needs (30-40
    // cycles per operation in the stored runs), so only a stuck run meets it.
    let limit = cfg
        .ops
        .saturating_mul(CYCLES_PER_OP)
        .saturating_add(1_000_000);
    let cycles = match m.run(Some(limit)) {
        Ok(sum) => sum.cycles,
        Err(e) => {
            let st = m.state();
            let stuck: Vec<String> = st
                .cores
                .iter()
                .enumerate()
                .filter_map(|(p, c)| {
                    c.pend.map(|pd| {
                        format!(
                            "p{p} waits for {:?} of line {:#x} ({} NACKs); directory: {}",
                            pd.cmd,
                            pd.line << line.trailing_zeros(),
                            pd.nacks,
                            st.system.describe(pd.line)
                        )
                    })
                })
                .collect();
            let what = match e {
                crate::sim::SimError::Limit(_) => format!(
                    "the operations did not complete within {limit} cycles ({CYCLES_PER_OP} per operation)"
                ),
                e => e.to_string(),
            };
            checker.borrow_mut().violate(format!(
                "liveness violated: {what}; {}",
                if stuck.is_empty() {
                    "no processor has a request outstanding".to_string()
                } else {
                    stuck.join("; ")
                }
            ));
            st.q.now() / st.cpu_period
        }
    };
    let st = m.state();
    // With memory controllers: after the final drain no write is left in a buffer, and DRAM
    // holds every line's memory value (a write the buffer lost or reordered shows here even
    // if no load read the line afterwards).
    let controllers = st.system.controller_reports();
    for r in controllers.iter().filter(|r| r.buffered_units > 0) {
        checker.borrow_mut().violate(format!(
            "memory controller {}: {} units still in the write buffer after the final drain",
            r.node, r.buffered_units
        ));
    }
    let shift = line.trailing_zeros();
    if let Some(&(l, dram, home)) = st.system.memory_mismatches(&st.map, shift).first() {
        checker.borrow_mut().violate(format!(
            "memory controller: line {:#x} holds {dram:#x} in DRAM after the final drain, the home's value is {home:#x}",
            l << shift
        ));
    }
    let gt = st.truth.as_ref().unwrap();
    let total = gt.total();
    let c = checker.borrow();
    let instr: [u64; 6] = st.cores.iter().fold([0; 6], |mut a, c| {
        for (x, y) in a.iter_mut().zip(c.cnt.instr) {
            *x += y;
        }
        a
    });
    let _ = instr;
    Ok(TesterReport {
        operations: per_thread * procs as u64,
        loads: 0,
        stores: 0,
        atomics: 0,
        violations: c.violations,
        first_violation: c.first.clone(),
        history: c.frozen.clone(),
        nacks: total.nacks,
        cancelled_upgrades: total.cancelled,
        bus_errors: total.bus_errors,
        invalidations: gt.inbound.get("invalidate").copied().unwrap_or(0),
        interventions: gt.inbound.get("intervention-shared").copied().unwrap_or(0)
            + gt.inbound
                .get("intervention-exclusive")
                .copied()
                .unwrap_or(0),
        writebacks: gt
            .transactions
            .get(&crate::probe::Cmd::Writeback)
            .copied()
            .unwrap_or(0),
        misses_under_misses: st.cores.iter().map(|c| c.under_misses).sum(),
        cycles,
        protocol: st.system.counters(),
        controllers,
    })
}

/// Ticks are not needed by callers; kept for symmetry with other runs.
pub type Time = Tick;

#[cfg(test)]
mod tests {
    use super::*;

    fn small(name: &str, procs: usize) -> Preset {
        Preset::builtin(name).unwrap().with_procs(procs).unwrap()
    }

    #[test]
    fn ideal_protocol_has_no_violations_and_races_happen() {
        let r = run(
            small("ideal", 8),
            &TesterConfig {
                ops: 40_000,
                seed: 3,
                lines: 4,
                fault: Fault::None,
            },
        )
        .unwrap();
        assert_eq!(
            r.violations,
            0,
            "{:?}\n{}",
            r.first_violation,
            r.history.join("\n")
        );
        assert!(r.nacks > 0, "no NACKs: {r:?}");
        assert!(r.cancelled_upgrades > 0, "no cancelled upgrades: {r:?}");
        assert!(r.interventions > 0 && r.invalidations > 0, "{r:?}");
    }

    #[test]
    fn bad_operation_and_line_counts_are_refused() {
        let cfg = |ops, lines| TesterConfig {
            ops,
            seed: 1,
            lines,
            fault: Fault::None,
        };
        let e = run(small("ideal", 2), &cfg(0, 4)).unwrap_err();
        assert_eq!(e, "--ops must be at least 1");
        let e = run(small("ideal", 2), &cfg(922_337_203_685_478, 4)).unwrap_err();
        assert!(e.starts_with("--ops 922337203685478 is more than"), "{e}");
        let e = run(small("ideal", 2), &cfg(10, 100_000_000)).unwrap_err();
        assert!(
            e.starts_with("--lines 100000000 is outside 1..=4096"),
            "{e}"
        );
        assert!(run(small("ideal", 2), &cfg(10, 0)).is_err());
        assert_eq!(
            run(small("ideal", 2), &cfg(10, 4096)).unwrap().violations,
            0
        );
    }

    #[test]
    fn tester_catches_a_dropped_invalidation() {
        let r = run(
            small("ideal", 4),
            &TesterConfig {
                ops: 20_000,
                seed: 5,
                lines: 2,
                fault: Fault::DropInvalidation { n: 50, count: 0 },
            },
        )
        .unwrap();
        assert!(r.violations > 0, "broken protocol passed: {r:?}");
        assert!(r.first_violation.is_some() && !r.history.is_empty());
    }
}
