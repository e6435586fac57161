//! The NUMAchine monitor's named events for `pmusim stat -e` ([`crate::counting`]): the
//! PAPI-style presets of its configuration files (`config::PAPI`) and the native events of
//! Table 4.5 (seed 000, 4.4.4), each as occurrences (the count-enable's low-to-high
//! transitions, GPCMx bit 10) or as cycles high where the seed counts both (a latency event's
//! `{occurrences}` in braces), and the 15 pipeline states of Table 4.3 one by one (PS single
//! mode). The counts are the four general-purpose counters of every processor card, summed.
//!
//! A group is one programming of the four counters (GPCM0..3, no filter, no mask): up to four
//! requests, in the order asked; more make further groups, which `stat` multiplexes. A
//! rotation brings every card up to the present (as a register read does), writes the four
//! GPCM registers and clears the counters, without simulated cost (as POWER2's does).
//!
//! The card cannot tell user from supervisor state (it sees the external agent bus and the
//! pipeline status, not the MSR), so `:u` and `:k` are refused.
//!
//! Pipeline counts go through the /4 prescaler (4.3.2): the monitored value is the counter x 4,
//! below the exact count by up to 3 per card and programming.

use super::gpc::*;
use super::plugin::Plugin;
use super::regs::{Reg, GPC_EVENTS};
use super::{config, Card, NumachineMonitor, Setup};
use crate::counting::{Counting, EventInfo, Request, Sample};
use crate::plugin::Error;
use machine::cpu::pipeline::Ps;
use machine::probe::Signals;
use machine::state::State;

/// One counter's programming: Table 4.5 event, PS[6..0], count transitions (bit 10) rather
/// than cycles high.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Part {
    pub event: u8,
    pub ps: u8,
    pub edges: bool,
}

impl Part {
    /// The GPCMx value: enabled, no interrupt, no filter or mask (bits 9..0 zero).
    pub fn gpcm(&self) -> u32 {
        1 << 23 | (self.ps as u32) << 16 | (self.event as u32) << 11 | (self.edges as u32) << 10
    }
}

/// One countable event: the counters it takes (more than one for a derived event, whose
/// count is their sum, as PAPI's `DERIVED_ADD` presets are).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub name: String,
    pub description: String,
    pub kind: &'static str,
    pub parts: Vec<Part>,
}

/// PAPI's L2 store and total misses: a store that misses for ownership of a line it holds
/// shared (an upgrade) is a store miss to PAPI, but the card counts upgrades under their own
/// event (7), so these presets take two counters each (issue 17: the configuration files'
/// one-counter `PAPI_L2_STM` counts read-exclusives only).
const DERIVED: &[(&str, &[u8], &str)] = &[
    (
        "PAPI_L2_STM",
        &[EV_READ_EX, EV_OWNERSHIP],
        "L2 write misses: cache line read-exclusives + successful ownership (upgrade) misses; two counters",
    ),
    (
        "PAPI_L2_TCM",
        &[EV_READ_ANY, EV_OWNERSHIP],
        "L2 misses: cache line reads + read-exclusives + successful ownership (upgrade) misses; two counters",
    ),
];

/// Table 4.5 events as native names: (name, event, count transitions). A latency event
/// (`{occurrences}` in the seed) gives its occurrences under its name and its cycles under
/// `NAME-cycles`.
const NATIVE: &[(&str, u8, bool)] = &[
    ("always", EV_ALWAYS, false),
    ("interrupt", EV_INTERRUPT, true),
    ("interrupt-cycles", EV_INTERRUPT, false),
    ("read", EV_READ, true),
    ("read-cycles", EV_READ, false),
    ("read-exclusive", EV_READ_EX, true),
    ("read-exclusive-cycles", EV_READ_EX, false),
    ("read-any", EV_READ_ANY, true),
    ("read-any-cycles", EV_READ_ANY, false),
    ("ownership", EV_OWNERSHIP, true),
    ("ownership-cycles", EV_OWNERSHIP, false),
    ("ownership-cancelled", EV_OWNERSHIP_CANCELLED, true),
    ("ownership-cancelled-cycles", EV_OWNERSHIP_CANCELLED, false),
    ("nack-retries", EV_NACK_RETRIES, true),
    ("nack-transactions", EV_NACK_CYCLES, true),
    ("nack-cycles", EV_NACK_CYCLES, false),
    ("last-latency", EV_LAST_LATENCY, false),
    ("bus-activity", EV_BUS_ACTIVITY, false),
    ("bus-request", EV_BUS_REQUEST, true),
    ("bus-request-cycles", EV_BUS_REQUEST, false),
    ("inval-hits", EV_INVAL_HITS, true),
    ("inval-misses", EV_INVAL_MISSES, true),
    ("inval-misses-cycles", EV_INVAL_MISSES, false),
];

/// Every event, PAPI presets first, then Table 4.5, then `pipeline.STATE` (Table 4.3).
pub fn events() -> Vec<Event> {
    let mut v: Vec<Event> = config::PAPI
        .iter()
        .map(
            |&(name, event, ps, edges, what)| match DERIVED.iter().find(|d| d.0 == name) {
                Some(&(_, evs, what)) => Event {
                    name: name.to_string(),
                    description: what.to_string(),
                    kind: "PAPI preset",
                    parts: evs
                        .iter()
                        .map(|&event| Part {
                            event,
                            ps: 0,
                            edges: true,
                        })
                        .collect(),
                },
                None => Event {
                    name: name.to_string(),
                    description: what.to_string(),
                    kind: "PAPI preset",
                    parts: vec![Part { event, ps, edges }],
                },
            },
        )
        .collect();
    v.extend(NATIVE.iter().map(|&(name, event, edges)| Event {
        name: name.to_string(),
        description: format!(
            "{} ({}; Table 4.5 event {event:X})",
            GPC_EVENTS[event as usize].1,
            if edges {
                "occurrences"
            } else {
                "monitor cycles high"
            }
        ),
        kind: "native",
        parts: vec![Part {
            event,
            ps: 0,
            edges,
        }],
    }));
    v.extend(Ps::ALL.iter().map(|p| Event {
        name: format!("pipeline.{}", p.name()),
        description: format!(
            "pipeline status `{}` (Table 4.3, single mode; prescaled x4)",
            p.name()
        ),
        kind: "native",
        parts: vec![Part {
            event: EV_PIPELINE,
            ps: p.code(),
            edges: false,
        }],
    }));
    v
}

/// The exact count of `e` on card `c` (processor `p`) so far, from the ground truth; `now`
/// is the time the cards have been brought up to. The rules are the report's
/// (`report::exact`), by event.
fn exact_card(st: &State, e: &Part, c: Option<&Card>, p: usize, sys: u64, now: u64) -> Option<u64> {
    let cnt = &st.cores[p].cnt;
    if e.event == EV_PIPELINE {
        return Some(super::regs::ps_exact(e.ps as u32, cnt));
    }
    let ms = &st.truth.as_ref()?.per_proc[p];
    Some(match (e.event, e.edges) {
        (EV_ALWAYS, false) => now / sys,
        (EV_READ, true) => ms.reads() + ms.bus_errors,
        (EV_READ_EX, true) => ms.writes() - ms.upgrades,
        (EV_READ_ANY, true) => ms.reads() + ms.writes() - ms.upgrades,
        (EV_OWNERSHIP, true) => ms.upgrades,
        (EV_OWNERSHIP_CANCELLED, true) => ms.cancelled,
        (EV_NACK_RETRIES, _) => ms.nacks,
        (EV_INTERRUPT, true) => cnt.interrupts,
        (EV_INVAL_HITS, _) => c?.inval_hit.exact,
        (EV_INVAL_MISSES, true) => c?.inval_miss.exact,
        _ => return None,
    })
}

/// Whether the ground truth has an exact count of `e` (`exact_card` answers `Some`).
fn has_exact(e: &Part) -> bool {
    e.event == EV_PIPELINE
        || matches!(
            (e.event, e.edges),
            (EV_ALWAYS, false)
                | (EV_READ, true)
                | (EV_READ_EX, true)
                | (EV_READ_ANY, true)
                | (EV_OWNERSHIP, true)
                | (EV_OWNERSHIP_CANCELLED, true)
                | (EV_NACK_RETRIES, _)
                | (EV_INTERRUPT, true)
                | (EV_INVAL_HITS, _)
                | (EV_INVAL_MISSES, true)
        )
}

/// The four counters' mode registers.
const GPCM: [Reg; 4] = [Reg::Gpcm0, Reg::Gpcm1, Reg::Gpcm2, Reg::Gpcm3];

/// The plan of the requests `stat` made.
#[derive(Default)]
pub struct Plan {
    /// Per group, (request index, event index) in counter order: each request takes as many
    /// consecutive counters as its event has parts.
    groups: Vec<Vec<(usize, usize)>>,
    active: usize,
}

impl Plan {
    /// Group `g`'s counter programmings, in counter order.
    fn parts(&self, g: usize, ev: &[Event]) -> Vec<Part> {
        self.groups[g]
            .iter()
            .flat_map(|&(_, e)| ev[e].parts.iter().copied())
            .collect()
    }

    /// The configuration group `g` attaches with; `pipeline` and `estimators` are on when any
    /// group needs them, since the machine decides at attach which observations to build.
    pub fn setup(&self, g: usize) -> Setup {
        let ev = events();
        let all: Vec<Part> = (0..self.groups.len())
            .flat_map(|g| self.parts(g, &ev))
            .collect();
        let mut s = Setup {
            name: "stat".to_string(),
            queues: false,
            pipeline: all.iter().any(|e| e.event == EV_PIPELINE),
            estimators: all
                .iter()
                .any(|e| matches!(e.event, EV_INVAL_HITS | EV_INVAL_MISSES)),
            ..Setup::default()
        };
        s.regs.gpce = true;
        for (i, p) in self.parts(g, &ev).iter().enumerate() {
            s.regs.gpcm[i] = p.gpcm();
        }
        let mut i = 0;
        for &(_, e) in &self.groups[g] {
            for _ in &ev[e].parts {
                s.labels[i] = ev[e].name.clone();
                i += 1;
            }
        }
        s
    }

    /// The union of every group's interests (the machine asks once, at attach).
    pub fn interest(&self, preset: &machine::Preset) -> u32 {
        (0..self.groups.len())
            .filter_map(|g| NumachineMonitor::new(preset, self.setup(g)).ok())
            .fold(0, |k, m| k | machine::probe::Probe::interest(&m))
    }
}

/// Brings every card up to the present (`st`): the time of the event queue and each core's
/// pipeline status (which may have run ahead of the queue), as a register read does.
fn catch_up(mon: &mut NumachineMonitor, st: Option<&State>) {
    let Some(st) = st else { return };
    let now = st.q.now();
    let p = mon.p;
    let mut sig = Signals::default();
    for (c, core) in mon.cards.iter_mut().zip(&st.cores) {
        c.advance(now, &p, &mut sig);
        c.cur_ps = ps_stream(&core.cnt.ps, core.cnt.restarts());
        c.settle(&mut sig);
    }
}

/// Counter `i` of card `c` as a 64-bit count (with its wraps), x4 for the prescaled pipeline.
fn value(c: &Card, i: usize) -> u64 {
    let g = &c.gpc[i];
    let v = g.counter.get() + (g.counter.wraps << g.counter.width().min(63));
    if g.mode.event == EV_PIPELINE {
        v * 4
    } else {
        v
    }
}

impl Counting for Plugin {
    fn events(&self) -> Vec<EventInfo> {
        events()
            .into_iter()
            .map(|e| EventInfo {
                exact: e.parts.iter().all(has_exact),
                name: e.name,
                description: e.description,
                kind: e.kind,
            })
            .collect()
    }

    fn privileges(&self) -> bool {
        false
    }

    /// Requests in the order asked, each on the next free counters; a request that does not
    /// fit the group's remaining counters starts the next group.
    fn plan(&mut self, reqs: &[Request]) -> Result<Vec<Vec<usize>>, Error> {
        let ev = events();
        let groups = crate::counting::pack_groups(reqs, 4, |i| {
            ev.get(i)
                .map(|e| e.parts.len())
                .ok_or_else(|| Error::input(format!("numachine: no event number {i}")))
        })?;
        let out = crate::counting::request_indices(&groups);
        self.stat = Some(Plan { groups, active: 0 });
        Ok(out)
    }

    fn program(&mut self, g: usize, st: Option<&State>) {
        let Some(plan) = self.stat.as_mut() else {
            return;
        };
        plan.active = g;
        let Some(mon) = &self.mon else {
            return;
        };
        let setup = plan.setup(g);
        let mut mon = mon.borrow_mut();
        catch_up(&mut mon, st);
        for c in mon.cards.iter_mut() {
            for (i, &r) in GPCM.iter().enumerate() {
                c.gpc[i] = Gpc::default();
                c.set_reg(r, setup.regs.gpcm[i]);
            }
        }
    }

    fn read(&self, st: Option<&State>) -> Vec<u64> {
        let (Some(plan), Some(mon)) = (&self.stat, &self.mon) else {
            return Vec::new();
        };
        let ev = events();
        let mut mon = mon.borrow_mut();
        catch_up(&mut mon, st);
        let mut i = 0;
        plan.groups[plan.active]
            .iter()
            .map(|&(_, e)| {
                let n = ev[e].parts.len();
                let v = (i..i + n)
                    .map(|k| mon.cards.iter().map(|c| value(c, k)).sum::<u64>())
                    .sum();
                i += n;
                v
            })
            .collect()
    }

    /// Each card's enabled counters, named by their label (the configuration's preset name,
    /// else the Table 4.5 event), pipeline counts x4 as in `read`.
    fn samples(&self) -> Vec<Sample> {
        let Some(mon) = &self.mon else {
            return Vec::new();
        };
        let mon = mon.borrow();
        let mut v = Vec::new();
        for c in &mon.cards {
            for i in 0..4 {
                let m = &c.gpc[i].mode;
                if !m.enable {
                    continue;
                }
                let l = &mon.setup.labels[i];
                v.push(Sample {
                    event: if l.is_empty() {
                        GPC_EVENTS[m.event as usize].0.to_string()
                    } else {
                        l.clone()
                    },
                    cpu: Some(c.proc),
                    unit: String::new(),
                    counter: i as u16,
                    value: value(c, i),
                });
            }
        }
        v
    }

    fn exact(&self, st: &State, req: &Request, end: bool) -> Option<u64> {
        let e = &events()[req.event];
        let mon = self.mon.as_ref().map(|m| m.borrow());
        let sys = st.sys_period.max(1);
        let now = match &mon {
            Some(m) if end => m.end,
            _ => st.q.now(),
        };
        let mut sum = 0;
        for part in &e.parts {
            for p in 0..st.cores.len() {
                sum += exact_card(st, part, mon.as_ref().map(|m| &m.cards[p]), p, sys, now)?;
            }
        }
        Some(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every preset and native event programs a GPCM value that decodes back to its fields,
    /// unfiltered (the exact counts assume no filter), and names are unique.
    #[test]
    fn events_program_what_they_name() {
        let ev = events();
        let mut names: Vec<&str> = ev.iter().map(|e| e.name.as_str()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ev.len());
        assert_eq!(ev.len(), config::PAPI.len() + NATIVE.len() + 15);
        for e in &ev {
            for p in &e.parts {
                let m = Mode::decode(p.gpcm());
                assert!(m.enable && !m.interrupt, "{}", e.name);
                assert_eq!(
                    (m.event, m.edges, m.ps, m.enable_bits),
                    (p.event, p.edges, p.ps, 0)
                );
            }
        }
        let l2 = ev.iter().find(|e| e.name == "pipeline.load").unwrap();
        assert_eq!(
            super::super::regs::ps_states(l2.parts[0].ps as u32),
            vec![Ps::Load]
        );
        let stm = ev.iter().find(|e| e.name == "PAPI_L2_STM").unwrap();
        assert_eq!(stm.parts.len(), 2);
    }

    #[test]
    fn plans_four_counters_per_group() {
        let mut p = Plugin::default();
        let ev = events();
        let at = |n: &str| ev.iter().position(|e| e.name == n).unwrap();
        let names = [
            "PAPI_TOT_INS",
            "PAPI_TOT_CYC",
            "PAPI_L2_LDM",
            "PAPI_L2_STM",
            "read",
            "always",
        ];
        let reqs: Vec<Request> = names
            .iter()
            .map(|n| Request {
                event: at(n),
                privilege: crate::counting::Privilege::All,
            })
            .collect();
        let g = p.plan(&reqs).unwrap();
        // PAPI_L2_STM takes two counters: it does not fit beside three others.
        assert_eq!(g, vec![vec![0, 1, 2], vec![3, 4, 5]]);
        let s = p.stat.as_ref().unwrap().setup(1);
        assert_eq!(s.regs.gpcm[0], ev[at("PAPI_L2_STM")].parts[0].gpcm());
        assert_eq!(s.regs.gpcm[1], ev[at("PAPI_L2_STM")].parts[1].gpcm());
        assert_eq!(s.regs.gpcm[3], ev[at("always")].parts[0].gpcm());
        assert_eq!(p.stat.as_ref().unwrap().setup(0).regs.gpcm[3], 0);
    }
}
