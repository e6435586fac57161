//! The POWER2 monitor's named events for `pmusim stat -e` ([`crate::counting`]): the 15 PAPI
//! presets of PAPI's P2SC port and the 46 signals of the event table, each countable in user
//! state only (`:u`, MMCR NOSUP), supervisor state only (`:k`, NOPROB) or both.
//!
//! Planning places each request on a counter: cycles and instructions on the shared counters
//! 0 and 1 when free, anything else on a unit counter whose group (one 4-bit select per unit)
//! holds the signal. Requests that do not fit one MMCR (a unit would need two groups, a
//! counter is taken, or the privileges differ: the mode bits are the MMCR's, not a counter's)
//! go to a further group, which `stat` multiplexes. The SCU's group 15 (the FXU's companion
//! group) is never chosen. A rotation writes every processor's MMCR and clears its counters,
//! as the kernel would by programmed I/O, but without simulated cost (perf's rotation runs in
//! the kernel's timer interrupt; pmusim's happens between events of the simulation).

use super::events::{counter_index, Sig, Unit, COUNTERS, PAPI, TABLE};
use super::plugin::Plugin;
use super::regs::{Mmcr, NOPROB, NOSUP};
use super::Setup;
use crate::counting::{exact_by_privilege, Counting, EventInfo, Privilege, Request, Sample};
use crate::plugin::Error;
use machine::probe::Signals;
use machine::state::State;

/// The plan of the requests `stat` made: per group the MMCR and each request's counter.
#[derive(Default)]
pub struct Plan {
    groups: Vec<Layout>,
    /// The group programmed now.
    active: usize,
}

#[derive(Clone, Default)]
struct Layout {
    mmcr: Mmcr,
    /// (index of the request, counter 0..22).
    counters: Vec<(usize, usize)>,
}

/// The signal of event `i` of [`events`]: the PAPI presets first, then the signals.
fn signal_of(i: usize) -> Sig {
    match PAPI.get(i) {
        Some(p) => match (p.unit, p.group) {
            (Some(u), Some(g)) => TABLE[u as usize][g as usize][p.num - 2],
            _ if p.num == 0 => Sig::CYCLES,
            _ => Sig::INSTR,
        },
        None => Sig((i - PAPI.len()) as u16),
    }
}

fn events() -> Vec<EventInfo> {
    let c = machine::cpu::Counters::default();
    let exact = |s: Sig| s.exact(&c).is_some() || s == Sig::IMR_MATCH;
    let mut v: Vec<EventInfo> = PAPI
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let s = signal_of(i);
            EventInfo {
                name: p.name.to_string(),
                description: format!("{} (POWER2 signal `{}`)", s.doc(), s.name()),
                kind: "PAPI preset",
                exact: exact(s),
            }
        })
        .collect();
    v.extend((0..Sig::COUNT).map(|i| {
        let s = Sig(i as u16);
        EventInfo {
            name: s.name().to_string(),
            description: s.doc().to_string(),
            kind: "native",
            exact: exact(s),
        }
    }));
    v
}

/// A group being filled: its privilege, each unit's group select, the counters taken.
struct Filling {
    privilege: Privilege,
    select: [Option<u8>; 4],
    used: u32,
    layout: Layout,
}

impl Filling {
    /// Places signal `s` of request `r` if it fits.
    fn place(&mut self, r: usize, s: Sig) -> bool {
        let shared = match s {
            Sig::CYCLES => Some(0),
            Sig::INSTR => Some(1),
            _ => None,
        };
        if let Some(i) = shared.filter(|i| self.used & 1 << i == 0) {
            return self.take(r, i);
        }
        // A unit already on a group holding the signal at a free counter, else the lowest
        // group of a unit not yet selected.
        for pass in 0..2 {
            for u in Unit::ALL {
                let groups: Vec<u8> = match (pass, self.select[u as usize]) {
                    (0, Some(g)) => vec![g],
                    (1, None) => (0..16u8)
                        .filter(|&g| !(u == Unit::Scu && g == 15))
                        .collect(),
                    _ => continue,
                };
                for g in groups {
                    for (k, &x) in TABLE[u as usize][g as usize].iter().enumerate() {
                        let i = counter_index(u, k + 2);
                        if x == s && self.used & 1 << i == 0 {
                            self.select[u as usize] = Some(g);
                            return self.take(r, i);
                        }
                    }
                }
            }
        }
        false
    }

    fn take(&mut self, r: usize, i: usize) -> bool {
        self.used |= 1 << i;
        self.layout.counters.push((r, i));
        true
    }

    fn finish(mut self) -> Layout {
        let mut m = Mmcr(match self.privilege {
            Privilege::All => 0,
            Privilege::User => NOSUP,
            Privilege::Supervisor => NOPROB,
        });
        for u in Unit::ALL {
            m = m.with_group(u, self.select[u as usize].unwrap_or(0));
        }
        self.layout.mmcr = m;
        self.layout
    }
}

/// Counts what each processor's pipeline did up to its own counters now (`st`), under the
/// current programming: the status a `Pipeline` observation would report, taken from the
/// core's counters, which it reports from too, for the MSR state of the thread on the core
/// now (as the monitor counts the status reported before an observation for the observing
/// thread).
fn catch_up(mon: &mut super::Power2Monitor, st: Option<&State>) {
    let Some(st) = st else { return };
    let mut sig = Signals::default();
    use machine::cpu::context::{MSR_PM, MSR_PR};
    for (i, (p, c)) in mon.pmus.iter_mut().zip(&st.cores).enumerate() {
        // As at an observation, the status counts for the thread on the core now.
        p.state = (c.msr & MSR_PR == 0, c.msr & MSR_PM != 0);
        p.cur_cycles = c.cnt.ps;
        p.cur_instr = c.cnt.instr;
        p.flush(i as u16, &mut sig);
    }
}

impl Counting for Plugin {
    fn events(&self) -> Vec<EventInfo> {
        events()
    }

    fn privileges(&self) -> bool {
        true
    }

    fn plan(&mut self, reqs: &[Request]) -> Result<Vec<Vec<usize>>, Error> {
        let n = PAPI.len() + Sig::COUNT;
        let mut open: Vec<Filling> = Vec::new();
        for (r, q) in reqs.iter().enumerate() {
            if q.event >= n {
                return Err(Error::input(format!("power2: no event number {}", q.event)));
            }
            let s = signal_of(q.event);
            let fits = open
                .iter_mut()
                .filter(|f| f.privilege == q.privilege)
                .any(|f| f.place(r, s));
            if !fits {
                let mut f = Filling {
                    privilege: q.privilege,
                    select: [None; 4],
                    used: 0,
                    layout: Layout::default(),
                };
                // Every signal is somewhere in the table, so an empty group takes it.
                assert!(f.place(r, s), "signal {} is in no group", s.name());
                open.push(f);
            }
        }
        let groups: Vec<Layout> = open.into_iter().map(Filling::finish).collect();
        let out = groups
            .iter()
            .map(|l| l.counters.iter().map(|c| c.0).collect())
            .collect();
        self.stat = Plan { groups, active: 0 };
        Ok(out)
    }

    fn program(&mut self, g: usize, st: Option<&State>) {
        let mmcr = self.stat.groups[g].mmcr;
        self.stat.active = g;
        let Some(mon) = &self.mon else {
            let imr = self.setup.map(|s| s.imr).unwrap_or_default();
            self.setup = Some(Setup { mmcr, imr });
            return;
        };
        let mut mon = mon.borrow_mut();
        catch_up(&mut mon, st);
        for p in mon.pmus.iter_mut() {
            p.mmcr = mmcr;
            p.select();
            p.ctr = [0; COUNTERS];
            p.wraps = [0; COUNTERS];
            p.reprogrammed = true;
        }
    }

    fn read(&self, st: Option<&State>) -> Vec<u64> {
        let Some(mon) = &self.mon else {
            return Vec::new();
        };
        let mut mon = mon.borrow_mut();
        catch_up(&mut mon, st);
        self.stat.groups[self.stat.active]
            .counters
            .iter()
            .map(|&(_, i)| mon.pmus.iter().map(|p| p.value(i)).sum())
            .collect()
    }

    /// Each processor's 22 counters, named by the signal their MMCR selects.
    fn samples(&self) -> Vec<Sample> {
        let Some(mon) = &self.mon else {
            return Vec::new();
        };
        let mon = mon.borrow();
        let mut v = Vec::new();
        for (p, pmu) in mon.pmus.iter().enumerate() {
            for (i, s) in pmu.mmcr.signals().iter().enumerate() {
                v.push(Sample {
                    event: s.name().to_string(),
                    cpu: Some(p as u16),
                    unit: String::new(),
                    counter: i as u16,
                    value: pmu.value(i),
                });
            }
        }
        v
    }

    fn exact(&self, st: &State, req: &Request, end: bool) -> Option<u64> {
        let s = signal_of(req.event);
        let imr = self.setup.map(|s| s.imr).unwrap_or_default();
        exact_by_privilege(st, req.privilege, end, |c| s.exact_with_imr(imr, c))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(name: &str, privilege: Privilege) -> Request {
        let event = events().iter().position(|e| e.name == name).unwrap();
        Request { event, privilege }
    }

    /// Events of one group of each unit fit one MMCR; a unit asked for events of two groups,
    /// or two privileges, make two groups.
    #[test]
    fn planning_groups_by_unit_select_and_privilege() {
        let mut p = Plugin::default();
        let all = Privilege::All;
        let g = p
            .plan(&[
                req("PAPI_TOT_INS", all),
                req("PAPI_TOT_CYC", all),
                req("PAPI_L1_DCM", all),
                req("PAPI_FP_INS", all),
                req("PAPI_BR_INS", all),
            ])
            .unwrap();
        assert_eq!(g, vec![vec![0, 1, 2, 3, 4]]);
        // FXU group 0 (PAPI_INT_INS) and group 6 (PAPI_LD_INS's only FXU group besides
        // others holding loads: the FPU holds loads in group 1): still one group.
        let g = p
            .plan(&[
                req("PAPI_TOT_INS", all),
                req("PAPI_TOT_INS", Privilege::User),
            ])
            .unwrap();
        assert_eq!(g.len(), 2);
        // Six distinct signals that only the SCU and FXU hold in different groups.
        let names = [
            "tx-read",
            "tx-read-exclusive",
            "tx-upgrade",
            "tx-writeback",
            "miss-latency-cycles",
            "l1i-miss",
            "l1d-miss",
            "dtlb-miss",
            "itlb-miss",
            "mem-transaction",
            "cyc-memory-stall",
            "cyc-secondary-stall",
        ];
        let reqs: Vec<Request> = names.iter().map(|n| req(n, all)).collect();
        let g = p.plan(&reqs).unwrap();
        assert!(g.len() >= 2, "{g:?}");
        let mut seen: Vec<usize> = g.concat();
        seen.sort();
        assert_eq!(seen, (0..names.len()).collect::<Vec<_>>());
        // Each group's counters are distinct and hold the signals asked.
        for l in &p.stat.groups {
            let sigs = l.mmcr.signals();
            let mut used = 0u32;
            for &(r, i) in &l.counters {
                assert_eq!(used & 1 << i, 0);
                used |= 1 << i;
                assert_eq!(sigs[i], signal_of(reqs[r].event));
            }
        }
    }
}
