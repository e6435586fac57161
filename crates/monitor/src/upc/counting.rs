//! The UPC's named events for `pmusim stat -e` ([`crate::counting`]): the PAPI presets as a
//! BG/Q user meets them (`papi::PRESETS`, computed as PAPI derives them; a preset of two
//! `PEVT_*` events takes two counters, as on the chip) and every UPC_P event pmusim produces (`PEVT_*`,
//! `events::P_EVENTS`), counted on every core's UPC_P over its four hardware threads and summed.
//!
//! A group is one programming of the 24 UPC_P counters of every core (Mode 0, synchronized to
//! UPC_C's start, as the monitor's built-in configuration is); requests are placed in the order
//! asked, further groups multiplexed by `stat`. A rotation brings each counter up to the queue's
//! time (its due chain transfers, level cycles and deferred retirements), configures it and
//! writes zero to its local register and SRAM counter, without simulated cost. A count is the
//! 64-bit value BGPM reads: SRAM counter + local register.
//!
//! The UPC_P filters by hardware thread, not by privilege (the A2's user/supervisor state is
//! not an input of the counter configuration), so `:u` and `:k` are refused. The UPC_L2 slice
//! events follow the UPC_P ones (`counting_l2.rs`): an event index past `events()` is one.
//!
//! Exact counts come from the machine's own counters where it keeps the same quantity:
//! cycles, instructions (all, by opcode group and the A2 commit events through `op_mask`), L1 I and D misses,
//! translation misses, interrupts, NACKs. The counters start when UPC_C's start command takes
//! effect (the chain's start latency, docs/upc.md), so counts begin a few cycles after the
//! machine's.

use super::counting_l2::{self, l2_events, L2Ev};
use super::events::{a2, flops_in, op, op_mask, Group, PEvent, P_EVENTS};
use super::papi::{Preset, PRESETS};
use super::probe::P_COUNTERS;
use super::regs::{CounterCfg, FpWeights};
use super::Plugin;
use crate::counting::{Counting, EventInfo, Request, Sample};
use crate::plugin::Error;
use machine::cpu::op::Op;
use machine::cpu::Counters;
use machine::probe::{CoreEvent, L1pEvent};
use machine::state::State;

/// One countable event: the `PEVT_*` events it is computed from, one counter each, and for a
/// PAPI preset how (PAPI's derivation; a native event is its one counter).
#[derive(Clone, Debug)]
pub struct Event {
    pub name: &'static str,
    pub kind: &'static str,
    pub parts: Vec<&'static PEvent>,
    pub preset: Option<&'static Preset>,
}

impl Event {
    /// The event from its parts' counts, as PAPI computes it (signed, wrapping; a negative
    /// value reads as its two's complement).
    pub fn value(&self, n: &[u64]) -> u64 {
        match self.preset {
            Some(p) => p.value(&n.iter().map(|&x| x as i64).collect::<Vec<_>>()) as u64,
            None => n.iter().fold(0u64, |s, &x| s.wrapping_add(x)),
        }
    }
}

/// Every event: the PAPI presets, then the UPC_P events.
pub fn events() -> Vec<Event> {
    let mut v: Vec<Event> = PRESETS
        .iter()
        .map(|p| Event {
            name: p.name,
            kind: "PAPI preset",
            parts: p.parts(),
            preset: Some(p),
        })
        .collect();
    v.extend(P_EVENTS.iter().map(|e| Event {
        name: e.name,
        kind: "native",
        parts: vec![e],
        preset: None,
    }));
    v
}

/// The exact count of UPC_P event `e` in a core's counters, where the machine keeps it.
pub(super) fn exact_of(e: &PEvent, c: &Counters) -> Option<u64> {
    if (e.group, e.sub) == (Group::Opcode, op::FPGRP1) {
        // Flops, under the weights every UPC_P starts with (`pmusim stat` keeps them).
        let w = FpWeights::default();
        return Some(flops_in(&c.ops(), w.div, w.sqrt));
    }
    let mask = op_mask(e.group, e.sub);
    if mask != 0 {
        return Some(ops_in(mask, &c.ops()));
    }
    match e.group {
        Group::Opcode => Some(0),
        Group::A2 => match e.sub {
            a2::CYCLES => Some(c.cycles()),
            a2::IL1_MISS => Some(c.l1i_misses),
            a2::IERAT_MISS => Some(c.itlb_misses),
            a2::DERAT_MISS => Some(c.dtlb_misses),
            12 => Some(c.interrupts),
            a2::NACK => Some(c.nacks),
            _ => None,
        },
        Group::L1p => None,
    }
}

/// The retirements of the `Op`s in `mask` (bit `op as usize`) among `ops` (by `Op`).
pub fn ops_in(mask: u64, ops: &[u64; Op::COUNT]) -> u64 {
    (0..Op::COUNT)
        .filter(|&o| mask >> o & 1 != 0)
        .map(|o| ops[o])
        .sum()
}

/// The machine's exact per-core event counts beyond its `Counters`: the ground truth's
/// `CoreEvent`s (summed over the core's hardware contexts; A2 sub-selections 0..13) and
/// `L1pEvent`s, and the x1 clock's cycles (`PEVT_CYCLES`, asserted on every core).
#[derive(Clone, Copy, Default)]
struct Truth {
    core: Option<[u64; CoreEvent::COUNT]>,
    l1p: Option<[u64; L1pEvent::COUNT]>,
    clock: Option<u64>,
}

impl Truth {
    /// Core `k`'s, from the machine's ground truth, with `clock` cycles.
    fn of(st: &State, k: usize, clock: u64) -> Truth {
        let gt = st.truth.as_ref();
        let tpc = gt.map_or(0, |g| g.threads_per_core as usize);
        let core = gt
            .filter(|g| g.core_events.len() >= (k + 1) * tpc && tpc > 0)
            .map(|g| {
                let mut v = [0u64; CoreEvent::COUNT];
                for c in &g.core_events[k * tpc..(k + 1) * tpc] {
                    for (x, y) in v.iter_mut().zip(c) {
                        *x += y;
                    }
                }
                v
            });
        let l1p = gt.and_then(|g| g.l1p_events.get(k).copied());
        Truth {
            core,
            l1p,
            clock: Some(clock),
        }
    }
}

/// The exact count of one part on one core, where the machine keeps it.
fn exact_part(p: &PEvent, c: &Counters, t: &Truth) -> Option<u64> {
    match p.group {
        Group::A2 if p.sub == a2::CYCLES && t.clock.is_some() => t.clock,
        Group::A2 if a2::core_of(p.sub).is_some() && t.core.is_some() => {
            t.core.zip(a2::core_of(p.sub)).map(|(v, e)| v[e])
        }
        Group::L1p => t.l1p.and_then(|v| v.get(p.sub as usize).copied()),
        _ => exact_of(p, c),
    }
}

/// The exact counts of `e`'s parts on one core (`None` if some part has none; without the
/// ground truth's core events, the L1 D's load and store misses only together, as
/// `l1d_misses`, given to the first of the two).
fn exact_parts(e: &Event, c: &Counters, t: &Truth) -> Option<Vec<u64>> {
    let subs: Vec<u8> = e
        .parts
        .iter()
        .filter(|p| p.group == Group::A2)
        .map(|p| p.sub)
        .collect();
    if t.core.is_none() && subs == [a2::LD_MISS, a2::ST_MISS] && e.parts.len() == 2 {
        return Some(vec![c.l1d_misses, 0]);
    }
    e.parts.iter().map(|p| exact_part(p, c, t)).collect()
}

/// The exact count of `e` on one core from its `Counters` alone.
#[cfg(test)]
fn exact_event(e: &Event, c: &Counters) -> Option<u64> {
    exact_parts(e, c, &Truth::default()).map(|n| e.value(&n))
}

/// The UPC_L2 event of event index `i` (past the UPC_P events), if it is one.
fn l2_of(i: usize, p_events: usize) -> Option<L2Ev> {
    i.checked_sub(p_events)
        .and_then(|k| l2_events().get(k).cloned())
}

/// The ground truth keeps `e`'s count (its core and L1P events, the clock included).
fn has_exact(e: &Event) -> bool {
    let t = Truth {
        core: Some([0; CoreEvent::COUNT]),
        l1p: Some([0; L1pEvent::COUNT]),
        clock: Some(0),
    };
    exact_parts(e, &Counters::default(), &t).is_some()
}

/// The UPC_P configuration of one counter counting `e`: every hardware thread, synchronized
/// to UPC_C's start (no sync override).
fn cfg(e: &PEvent) -> CounterCfg {
    CounterCfg {
        event: e.sub,
        group: e.group as u8,
        threads: 0xf,
        enable: true,
        ..Default::default()
    }
}

/// The plan of the requests `stat` made.
#[derive(Default)]
pub struct Plan {
    /// Per group, (request index, event index) in counter order; each request takes as many
    /// consecutive counters as its event has parts.
    groups: Vec<Vec<(usize, usize)>>,
    active: usize,
}

impl Plan {
    /// Group `g`'s 24 UPC_P counter configurations (the unused ones disabled).
    pub fn p_counters(&self, g: usize) -> Vec<CounterCfg> {
        let ev = events();
        let mut v: Vec<CounterCfg> = self.groups[g]
            .iter()
            .filter(|x| x.1 < ev.len())
            .flat_map(|&(_, e)| ev[e].parts.iter().map(|p| cfg(p)))
            .collect();
        v.resize(P_COUNTERS, CounterCfg::default());
        v
    }

    /// Group `g`'s 16 UPC_L2 counter configurations (empty when no group counts on the
    /// UPC_L2: its counters then stay off).
    pub fn l2_counters(&self, g: usize) -> Vec<CounterCfg> {
        let n = events().len();
        let of = |grp: &Vec<(usize, usize)>| -> Vec<CounterCfg> {
            grp.iter()
                .filter_map(|x| l2_of(x.1, n))
                .map(|e| counting_l2::cfg(e.event))
                .collect()
        };
        if self.groups.iter().all(|grp| of(grp).is_empty()) {
            return Vec::new();
        }
        let mut v = of(&self.groups[g]);
        v.resize(super::probe::L2_COUNTERS, CounterCfg::default());
        v
    }

    /// The monitor's configuration for group `g` (the UPC_L2's counters off unless some group
    /// counts on them).
    pub fn config(&self, base: &super::config::Config, g: usize) -> super::config::Config {
        super::config::Config {
            p: self.p_counters(g),
            l2: self.l2_counters(g),
            overflow: Vec::new(),
            ..base.clone()
        }
    }

    pub fn groups(&self) -> usize {
        self.groups.len()
    }
}

impl Counting for Plugin {
    fn events(&self) -> Vec<EventInfo> {
        let l2 = l2_events().into_iter().map(|e| EventInfo {
            description: counting_l2::describe(&e),
            name: e.name,
            kind: "native",
            exact: true,
        });
        events()
            .into_iter()
            .map(|e| EventInfo {
                exact: has_exact(&e),
                description: match e.preset {
                    Some(p) => format!(
                        "{} ({}{}{}{})",
                        p.formula(),
                        p.papi_kind(),
                        if p.note.is_empty() { "" } else { "; " },
                        p.note,
                        p.means
                            .map(|f| format!("; the name's meaning is {f} over the same events"))
                            .unwrap_or_default()
                    ),
                    None => format!("{} ({})", e.parts[0].name, e.parts[0].source),
                },
                name: e.name.to_string(),
                kind: e.kind,
            })
            .chain(l2)
            .collect()
    }

    fn privileges(&self) -> bool {
        false
    }

    fn refusal(&self, name: &str) -> Option<String> {
        super::papi::absent_reason(name)
    }

    fn plan(&mut self, reqs: &[Request]) -> Result<Vec<Vec<usize>>, Error> {
        let ev = events();
        let groups = counting_l2::pack(reqs, |i| match (ev.get(i), l2_of(i, ev.len())) {
            (Some(e), _) => Ok((e.parts.len(), false)),
            (None, Some(_)) => Ok((1, true)),
            _ => Err(Error::input(format!("upc: no event number {i}"))),
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
        let Some(upc) = &self.upc else {
            return;
        };
        let Some(st) = st else { return };
        let t = st.q.now();
        let p = plan.p_counters(g);
        let l2 = plan.l2_counters(g);
        let mut u = upc.borrow_mut();
        for pos in 0..u.units.len() {
            if u.units[pos].central {
                continue;
            }
            let list = if u.units[pos].slice { &l2 } else { &p };
            for (i, c) in list.iter().enumerate() {
                u.configure(pos, i, *c, t);
                u.write_local(pos, i, 0, false, t);
                let n = u.units[pos].counters[i].sram;
                u.write_sram(n, 0, t);
            }
        }
    }

    fn read(&self, st: Option<&State>) -> Vec<u64> {
        let (Some(plan), Some(upc)) = (&self.stat, &self.upc) else {
            return Vec::new();
        };
        let ev = events();
        let t = st.map(|s| s.q.now());
        let mut u = upc.borrow_mut();
        let unit = |slice: bool| -> Vec<usize> {
            (0..u.units.len())
                .filter(|&p| u.units[p].slice == slice && !u.units[p].central)
                .collect()
        };
        let (cores, slices) = (unit(false), unit(true));
        // The next UPC_P and UPC_L2 counter of the group.
        let (mut i, mut j) = (0, 0);
        plan.groups[plan.active]
            .iter()
            .map(|&(_, e)| {
                let (n, units, at) = match ev.get(e) {
                    Some(x) => (x.parts.len(), &cores, &mut i),
                    None => (1, &slices, &mut j),
                };
                // Each part summed over the units, then combined (a preset as PAPI does).
                let parts: Vec<u64> = (*at..*at + n)
                    .map(|k| {
                        units
                            .iter()
                            .fold(0u64, |v, &pos| v.wrapping_add(u.count_at(pos, k, t)))
                    })
                    .collect();
                *at += n;
                match ev.get(e) {
                    Some(x) => x.value(&parts),
                    None => parts[0],
                }
            })
            .collect()
    }

    /// Every enabled counter of every UPC_P (by core) and UPC_L2 (unit `l2-slice-N`), as
    /// SRAM + local.
    fn samples(&self) -> Vec<Sample> {
        let Some(u) = &self.upc else {
            return Vec::new();
        };
        let mut u = u.borrow_mut();
        let mut v = Vec::new();
        for pos in 0..u.units.len() {
            for i in 0..u.units[pos].counters.len() {
                if !u.units[pos].counters[i].cfg.enable {
                    continue;
                }
                let (slice, index) = (u.units[pos].slice, u.units[pos].index);
                v.push(Sample {
                    event: super::report::event_name(&u, pos, i).to_string(),
                    cpu: (!slice).then_some(index as u16),
                    unit: if slice {
                        format!("l2-slice-{index}")
                    } else {
                        String::new()
                    },
                    counter: i as u16,
                    value: u.count_at(pos, i, None),
                });
            }
        }
        v
    }

    /// `PEVT_CYCLES` is the x1 clock, asserted every cycle whether or not the core has a
    /// thread: its exact count is the run's cycles on every core (the cores' own cycle
    /// counters stop when their threads end).
    fn exact(&self, st: &State, req: &Request, end: bool) -> Option<u64> {
        let ev = events();
        if let Some(l2) = l2_of(req.event, ev.len()) {
            return counting_l2::exact(st, l2.event);
        }
        let e = &ev[req.event];
        let t = match (&self.upc, end) {
            (Some(u), true) => u.borrow().end.unwrap_or_else(|| st.q.now()),
            _ => st.q.now(),
        };
        let clock = t / st.cpu_period.max(1);
        // Each part summed over the cores, then combined as `read` combines the counts.
        let mut sums = vec![0u64; e.parts.len()];
        for (k, c) in st.cores.iter().enumerate() {
            let n = exact_parts(e, &c.cnt, &Truth::of(st, k, clock))?;
            for (s, x) in sums.iter_mut().zip(n) {
                *s = s.wrapping_add(x);
            }
        }
        Some(e.value(&sums))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Presets resolve to UPC_P events; a two-event preset takes two counters, so 24 counters
    /// hold 12 `PAPI_L1_DCM` but not a 13th.
    #[test]
    fn presets_and_planning() {
        let ev = events();
        let dcm = ev.iter().position(|e| e.name == "PAPI_L1_DCM").unwrap();
        assert_eq!(ev[dcm].parts.len(), 2);
        assert!(has_exact(&ev[dcm]));
        let reqs: Vec<Request> = (0..13)
            .map(|_| Request {
                event: dcm,
                privilege: crate::counting::Privilege::All,
            })
            .collect();
        let mut p = Plugin::default();
        let g = p.plan(&reqs).unwrap();
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].len(), 12);
        let cfgs = p.stat.as_ref().unwrap().p_counters(1);
        assert!(cfgs[0].enable && cfgs[1].enable && !cfgs[2].enable);
        assert_eq!(cfgs[1].event, a2::ST_MISS);
        // Every PEVT name is an event, exact where the machine keeps its count.
        let inst = ev.iter().find(|e| e.name == "PEVT_INST_ALL").unwrap();
        let mut c = Counters::default();
        c.instr[0] = 7;
        assert_eq!(exact_event(inst, &c), Some(c.instructions()));
        // L1P events from the ground truth's per-core counts; the miss-pending level has none.
        assert!(has_exact(
            ev.iter().find(|e| e.name == "PEVT_L1P_BAS_HIT").unwrap()
        ));
        assert!(!has_exact(
            ev.iter()
                .find(|e| e.name == "PEVT_LSU_MISS_PENDING_CYC")
                .unwrap()
        ));
        // PAPI's BG/Q presets: every event they name is one pmusim produces (`events()`
        // resolves them), and the opcode-group ones are exact: PAPI_INT_INS sums the seven
        // integer groups, PAPI_FP_INS is every fp and qp op.
        assert_eq!(PRESETS.len(), 35);
        let int = ev.iter().find(|e| e.name == "PAPI_INT_INS").unwrap();
        assert_eq!(int.parts.len(), 7);
        let mut c = Counters::default();
        c.instr[machine::cpu::Class::Integer as usize] = 11;
        c.instr[machine::cpu::Class::Fp as usize] = 5;
        c.xops[Op::IntShift as usize] = 4;
        assert_eq!(exact_event(int, &c), Some(11));
        let fp = ev.iter().find(|e| e.name == "PAPI_FP_INS").unwrap();
        assert_eq!(exact_event(fp, &c), Some(5));
        // PAPI_FP_OPS counts flops (PEVT_INST_QFPU_FPGRP1): of the 5 fp instructions, one
        // fmadd (2), one quad fma (8), one divide (8 under the driver's default weight) and
        // two of unspecified kind (1 each): 20, where PAPI_FP_INS stays 5.
        c.xops[Op::FpFma as usize] = 1;
        c.xops[Op::QpFma as usize] = 1;
        c.xops[Op::FpDiv as usize] = 1;
        let ops = ev.iter().find(|e| e.name == "PAPI_FP_OPS").unwrap();
        assert_eq!(exact_event(ops, &c), Some(20));
        assert_eq!(exact_event(fp, &c), Some(5));
        // The commit events from the core's fine-class counts: 9 taken branches, 3 of them
        // unconditional (PAPI_BR_TKN: 6 conditional), 2 not taken; 7 loads (2 of them
        // lwarx) and 4 stores.
        c.instr[machine::cpu::Class::BranchTaken as usize] = 9;
        c.instr[machine::cpu::Class::BranchNotTaken as usize] = 2;
        c.xops[Op::BrUncond as usize] = 3;
        c.instr[machine::cpu::Class::Load as usize] = 5;
        c.instr[machine::cpu::Class::Integer as usize] += 2;
        c.xops[Op::Larx as usize] = 2;
        c.instr[machine::cpu::Class::Store as usize] = 4;
        let by = |n: &str| ev.iter().find(|e| e.name == n).unwrap();
        assert_eq!(exact_event(by("PAPI_BR_TKN"), &c), Some(6));
        assert_eq!(exact_event(by("PAPI_BR_INS"), &c), Some(11));
        assert_eq!(exact_event(by("PAPI_L1_DCR"), &c), Some(7));
        assert_eq!(exact_event(by("PAPI_SR_INS"), &c), Some(4));
        // PAPI's BR_NTK: 8 conditional - 9 taken - 3 unconditional.
        assert_eq!(exact_event(by("PAPI_BR_NTK"), &c), Some((-4i64) as u64));
        assert!(has_exact(by("PAPI_LD_INS")));
        c = Counters::default();
        c.instr[machine::cpu::Class::Integer as usize] = 11;
        c.instr[machine::cpu::Class::Fp as usize] = 5;
        c.xops[Op::IntShift as usize] = 4;
        // A derived preset: cycles less instructions, from the ground truth's clock and the
        // core's counters (16 = 11 integer + 5 fp).
        let ccy = ev.iter().find(|e| e.name == "PAPI_STL_CCY").unwrap();
        let t = Truth {
            clock: Some(100),
            ..Truth::default()
        };
        let n = exact_parts(ccy, &c, &t).unwrap();
        assert_eq!(ccy.value(&n), 100 - 16);
        // A core event's exact count comes from the ground truth's core events when kept.
        let suc = ev.iter().find(|e| e.name == "PAPI_CSR_SUC").unwrap();
        assert!(has_exact(suc));
        let mut core = [0u64; CoreEvent::COUNT];
        core[a2::STCX as usize] = 50;
        core[a2::STCX_FAIL as usize] = 8;
        let t = Truth {
            core: Some(core),
            ..Truth::default()
        };
        assert_eq!(exact_parts(suc, &c, &t).map(|n| suc.value(&n)), Some(42));
    }
}
