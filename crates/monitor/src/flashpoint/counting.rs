//! FlashPoint's named events for `pmusim stat -e` and `/metrics` ([`crate::counting`]): the
//! fields of its statistics records (seed 004, 3.1.3 and Table 3: read and write misses, local
//! and remote, their latency sums, cold misses, invalidations, invalidation misses), summed
//! over every (procedure, bin) record of every node, and the counts of FlashPoint's own
//! commands (`FpCounters`).
//!
//! FlashPoint has no counters to program: the protocol handlers add to records in memory, so
//! every request fits one group (no multiplexing) and `program` only notes where the records
//! stood (a count is the records' growth since). The records are read from the protocol's
//! state (`machine::flash::flashpoint`), as `view::FlashPointView` reads them for the report,
//! so a stat count at the end is the report's own figure.
//!
//! Exact counts are the ground truth's (`truth::MissStats`, as `pmusim study flashpoint`
//! compares them): misses by kind and place, cold misses as first touches anywhere
//! (`global_cold`, FlashPoint's warm bit is per line, not per processor), invalidation misses
//! as coherence misses, invalidations as those that removed a valid copy. Latency sums are
//! in 10 ns system cycles: the ground truth's (processor cycles, issue to fill) divided by
//! the clock ratio, which FlashPoint's counter, stopping one system cycle earlier at the
//! processor bus, undercounts by about one system cycle per miss. FlashPoint's command counts
//! have no ground truth.

use super::Plugin;
use crate::counting::{Counting, EventInfo, Request, Sample};
use crate::plugin::Error;
use machine::flash::flashpoint::{FpCounters, Record};
use machine::memsys::System;
use machine::state::State;
use machine::truth::MissStats;
use std::cell::RefCell;

/// One event: name, description, its value in a record (or in the command counts), its exact
/// count in the ground truth (latencies in processor cycles, divided by the clock ratio).
struct Event {
    name: &'static str,
    description: &'static str,
    record: fn(&Record, &FpCounters) -> u64,
    exact: Option<fn(&MissStats) -> u64>,
    /// The exact count is a latency in processor cycles (divided by the clock ratio).
    latency: bool,
}

/// The events, record fields first, then sums, then FlashPoint's own commands.
const EVENTS: &[Event] = &[
    Event {
        name: "fp.read-misses-local",
        description: "read misses served by the local node's memory (records: rd_miss_local)",
        record: |r, _| r.rd_miss_local,
        exact: Some(|s| s.read_local),
        latency: false,
    },
    Event {
        name: "fp.read-misses-remote",
        description: "read misses served by a remote node (records: rd_miss_remote)",
        record: |r, _| r.rd_miss_remote,
        exact: Some(|s| s.read_remote),
        latency: false,
    },
    Event {
        name: "fp.write-misses-local",
        description: "write misses (GetX and upgrades) served locally (records: wr_miss_local)",
        record: |r, _| r.wr_miss_local,
        exact: Some(|s| s.write_local),
        latency: false,
    },
    Event {
        name: "fp.write-misses-remote",
        description: "write misses (GetX and upgrades) served remotely (records: wr_miss_remote)",
        record: |r, _| r.wr_miss_remote,
        exact: Some(|s| s.write_remote),
        latency: false,
    },
    Event {
        name: "fp.read-misses",
        description: "read misses, local + remote",
        record: |r, _| r.reads(),
        exact: Some(|s| s.read_local + s.read_remote),
        latency: false,
    },
    Event {
        name: "fp.write-misses",
        description: "write misses, local + remote",
        record: |r, _| r.writes(),
        exact: Some(|s| s.write_local + s.write_remote),
        latency: false,
    },
    Event {
        name: "fp.misses",
        description: "read + write misses (the report's `misses`)",
        record: |r, _| r.reads() + r.writes(),
        exact: Some(|s| s.read_local + s.read_remote + s.write_local + s.write_remote),
        latency: false,
    },
    Event {
        name: "fp.read-latency-local",
        description: "latency summed over local read misses, 10 ns system cycles (rd_lat_local)",
        record: |r, _| r.rd_lat_local,
        exact: Some(|s| s.read_lat_local),
        latency: true,
    },
    Event {
        name: "fp.read-latency-remote",
        description: "latency summed over remote read misses, system cycles (rd_lat_remote)",
        record: |r, _| r.rd_lat_remote,
        exact: Some(|s| s.read_lat_remote),
        latency: true,
    },
    Event {
        name: "fp.write-latency-local",
        description: "latency summed over local write misses, system cycles (wr_lat_local)",
        record: |r, _| r.wr_lat_local,
        exact: Some(|s| s.write_lat_local),
        latency: true,
    },
    Event {
        name: "fp.write-latency-remote",
        description: "latency summed over remote write misses, system cycles (wr_lat_remote)",
        record: |r, _| r.wr_lat_remote,
        exact: Some(|s| s.write_lat_remote),
        latency: true,
    },
    Event {
        name: "fp.latency",
        description: "latency summed over every miss, system cycles (the report's `lat sum`)",
        record: |r, _| r.rd_lat_local + r.rd_lat_remote + r.wr_lat_local + r.wr_lat_remote,
        exact: Some(|s| {
            s.read_lat_local + s.read_lat_remote + s.write_lat_local + s.write_lat_remote
        }),
        latency: true,
    },
    Event {
        name: "fp.cold-misses",
        description: "misses to a line no processor had touched (the header's warm bit clear)",
        record: |r, _| r.cold,
        exact: Some(|s| s.global_cold),
        latency: false,
    },
    Event {
        name: "fp.invalidations",
        description: "invalidations the misses caused (records: invalidations)",
        record: |r, _| r.invalidations,
        exact: Some(|s| s.invalidations),
        latency: false,
    },
    Event {
        name: "fp.inval-misses",
        description: "misses to a line this processor lost to an invalidation (coherence misses)",
        record: |r, _| r.inval_misses,
        exact: Some(|s| s.coherence),
        latency: false,
    },
    Event {
        name: "fp.bin-commands",
        description: "FP-Bin commands the programs issued (FlashPoint's own work)",
        record: |_, c| c.bin_cmds,
        exact: None,
        latency: false,
    },
    Event {
        name: "fp.lines-binned",
        description: "lines the bin commands and the setup assigned to a bin",
        record: |_, c| c.lines_binned,
        exact: None,
        latency: false,
    },
    Event {
        name: "fp.proc-commands",
        description: "FP-Proc procedure-delta commands issued",
        record: |_, c| c.proc_cmds,
        exact: None,
        latency: false,
    },
    Event {
        name: "fp.record-reads",
        description: "uncached reads of the record region by the programs",
        record: |_, c| c.record_reads,
        exact: None,
        latency: false,
    },
];

/// The event names, in order (for tests and docs).
pub fn names() -> Vec<&'static str> {
    EVENTS.iter().map(|e| e.name).collect()
}

/// What `stat` asked: the events of its requests, and each one's value when the records were
/// last programmed (`program`) and last read with a state (`read(None)` answers that).
#[derive(Default)]
pub struct Stat {
    events: Vec<usize>,
    base: Vec<u64>,
    last: RefCell<Vec<u64>>,
}

/// Node `node`'s records summed (every node's with `None`), and the command counts (whole
/// machine) — `None` when the run has no FlashPoint (a DP protocol or another machine).
fn totals(st: &State, node: Option<usize>) -> Option<(Record, FpCounters)> {
    let System::Flash(s) = &st.system else {
        return None;
    };
    let fp = s.flashpoint()?;
    let mut t = Record::default();
    for n in 0..fp.nodes() {
        if node.is_none_or(|k| k == n) {
            for r in fp.records(n).values() {
                t.add(r);
            }
        }
    }
    Some((t, fp.counters.clone()))
}

fn values(st: &State, events: &[usize]) -> Vec<u64> {
    match totals(st, None) {
        Some((r, c)) => events.iter().map(|&e| (EVENTS[e].record)(&r, &c)).collect(),
        None => vec![0; events.len()],
    }
}

impl Plugin {
    fn read_now(&self, st: &State) -> Vec<u64> {
        let Some(s) = &self.stat else {
            return Vec::new();
        };
        let v: Vec<u64> = values(st, &s.events)
            .iter()
            .zip(&s.base)
            .map(|(v, b)| v - b)
            .collect();
        *s.last.borrow_mut() = v.clone();
        v
    }
}

impl Counting for Plugin {
    fn events(&self) -> Vec<EventInfo> {
        EVENTS
            .iter()
            .map(|e| EventInfo {
                name: e.name.to_string(),
                description: e.description.to_string(),
                kind: "native",
                exact: e.exact.is_some(),
            })
            .collect()
    }

    /// The records do not tell user from supervisor work.
    fn privileges(&self) -> bool {
        false
    }

    /// One group: the records are memory, not counters. Counting needs the records, so the
    /// run gets FP-Proc as `--monitor flashpoint` does (on the `flash` machine).
    fn plan(&mut self, reqs: &[Request]) -> Result<Vec<Vec<usize>>, Error> {
        if let Some(r) = reqs.iter().find(|r| r.event >= EVENTS.len()) {
            return Err(Error::input(format!(
                "flashpoint: no event number {}",
                r.event
            )));
        }
        self.named = true;
        self.stat = Some(Stat {
            events: reqs.iter().map(|r| r.event).collect(),
            base: vec![0; reqs.len()],
            last: RefCell::new(vec![0; reqs.len()]),
        });
        Ok(vec![(0..reqs.len()).collect()])
    }

    fn program(&mut self, _g: usize, st: Option<&State>) {
        if let (Some(s), Some(st)) = (self.stat.as_mut(), st) {
            s.base = values(st, &s.events);
        }
    }

    fn read(&self, st: Option<&State>) -> Vec<u64> {
        match (st, &self.stat) {
            (Some(st), _) => self.read_now(st),
            (None, Some(s)) => s.last.borrow().clone(),
            (None, None) => Vec::new(),
        }
    }

    fn read_end(&self, st: &State) -> Vec<u64> {
        self.read_now(st)
    }

    /// Every event on every node (`cpu`: the node's processor, whose misses its records
    /// hold); the command counts once, on no processor (unit `flashpoint`).
    fn samples_in(&self, st: &State) -> Vec<Sample> {
        let System::Flash(s) = &st.system else {
            return Vec::new();
        };
        let Some(fp) = s.flashpoint() else {
            return Vec::new();
        };
        let mut v = Vec::new();
        for n in 0..fp.nodes() {
            let Some((r, c)) = totals(st, Some(n)) else {
                continue;
            };
            for (i, e) in EVENTS.iter().enumerate() {
                if e.exact.is_some() {
                    v.push(Sample {
                        event: e.name.to_string(),
                        cpu: Some(n as u16),
                        unit: String::new(),
                        counter: i as u16,
                        value: (e.record)(&r, &c),
                    });
                }
            }
        }
        for (i, e) in EVENTS.iter().enumerate() {
            if e.exact.is_none() {
                v.push(Sample {
                    event: e.name.to_string(),
                    cpu: None,
                    unit: "flashpoint".to_string(),
                    counter: i as u16,
                    value: (e.record)(&Record::default(), &fp.counters),
                });
            }
        }
        v
    }

    fn exact(&self, st: &State, req: &Request, _end: bool) -> Option<u64> {
        let e = EVENTS.get(req.event)?;
        let gt = st.truth.as_ref()?;
        let v = (e.exact?)(&gt.total());
        Some(if e.latency {
            let ratio = (st.sys_period / st.cpu_period.max(1)).max(1);
            (v as f64 / ratio as f64).round() as u64
        } else {
            v
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_planned_in_one_group() {
        let mut n = names();
        n.sort();
        n.dedup();
        assert_eq!(n.len(), EVENTS.len());
        let mut p = Plugin::default();
        let reqs: Vec<Request> = (0..EVENTS.len())
            .map(|event| Request {
                event,
                privilege: crate::counting::Privilege::All,
            })
            .collect();
        assert_eq!(
            p.plan(&reqs).unwrap(),
            vec![(0..EVENTS.len()).collect::<Vec<_>>()]
        );
        assert!(
            p.named,
            "counting selects FP-Proc as --monitor flashpoint does"
        );
        let r = Record {
            rd_miss_local: 1,
            rd_miss_remote: 2,
            wr_miss_local: 4,
            wr_miss_remote: 8,
            rd_lat_local: 16,
            wr_lat_remote: 32,
            ..Record::default()
        };
        let c = FpCounters::default();
        let at = |n: &str| EVENTS.iter().find(|e| e.name == n).unwrap();
        assert_eq!((at("fp.misses").record)(&r, &c), 15);
        assert_eq!((at("fp.latency").record)(&r, &c), 48);
    }
}
