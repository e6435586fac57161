//! The memory controllers' named events for `pmusim stat -e` and `/metrics`
//! ([`crate::counting`]; seed 002's interface buffer, docs/memory-buffer.md).
//!
//! Two kinds of event, each summed over the controllers:
//! - **request events**, counted by the monitor from the controllers' per-request reports
//!   (`Observation::MemRequest` and its buffer flags, what the seed's Addies sample): reads,
//!   writes, write-buffer hits (collapse or merge), collapses, writes that found the buffer
//!   full, read merges, read-buffer hits, read-ahead lines used. Exact: the buffer's own
//!   statistics (`BufferStats`), kept by the machine.
//! - **controller counters**, read from each controller's status (`ControllerReport`, as a
//!   program reads a controller's memory-mapped counters): DRAM line reads and block writes as
//!   the buffer issued them, drains by cause, read-ahead fetches. Exact for DRAM reads and
//!   writes: the DRAM banks' own counts (`DramStats`), a separate place in the model; drains
//!   and fetches have no second count.
//!
//! Counting attaches the request tally, not the closed loop of `adaptive` (which would tune
//! the buffer while it is measured): `stat` measures the controller as the preset sets it.
//! Nothing is programmed, so every request fits one group; `program` notes where the counts
//! stood.

use super::Plugin;
use crate::counting::{Counting, EventInfo, Request, Sample};
use crate::plugin::Error;
use machine::mem::buffer::flags;
use machine::mem::controller::ControllerReport;
use machine::probe::{kind, Observation, Probe, Signals};
use machine::state::State;
use std::cell::RefCell;
use std::rc::Rc;

/// Where an event's count comes from.
#[derive(Clone, Copy)]
enum Source {
    /// Requests whose flags have every bit of `all` (`WRITE` clear for a read: `read`).
    Requests { all: flags::Flags, read: bool },
    /// A controller status counter.
    Status(fn(&ControllerReport) -> u64),
}

struct Event {
    name: &'static str,
    description: &'static str,
    source: Source,
    exact: Option<fn(&ControllerReport) -> u64>,
}

const EVENTS: &[Event] = &[
    Event {
        name: "memctl.reads",
        description: "read requests at the controllers",
        source: Source::Requests { all: 0, read: true },
        exact: Some(|c| c.buffer.reads),
    },
    Event {
        name: "memctl.writes",
        description: "write requests at the controllers",
        source: Source::Requests {
            all: flags::WRITE,
            read: false,
        },
        exact: Some(|c| c.buffer.writes),
    },
    Event {
        name: "memctl.write-buffer-hits",
        description: "writes that collapsed or merged into a buffered entry (seed 002's write buffer hit)",
        source: Source::Requests {
            all: flags::WRITE | flags::WRITE_HIT,
            read: false,
        },
        exact: Some(|c| c.buffer.write_hits),
    },
    Event {
        name: "memctl.write-collapses",
        description: "writes whose every unit was already buffered",
        source: Source::Requests {
            all: flags::WRITE | flags::COLLAPSE,
            read: false,
        },
        exact: Some(|c| c.buffer.collapses),
    },
    Event {
        name: "memctl.write-buffer-full",
        description: "writes that found the write buffer full and stalled",
        source: Source::Requests {
            all: flags::WRITE | flags::FULL,
            read: false,
        },
        exact: Some(|c| c.buffer.full),
    },
    Event {
        name: "memctl.read-merges",
        description: "reads that took bytes from the write buffer",
        source: Source::Requests {
            all: flags::READ_MERGE,
            read: true,
        },
        exact: Some(|c| c.buffer.read_merges),
    },
    Event {
        name: "memctl.read-buffer-hits",
        description: "reads served from the read buffer (seed 002's read buffer hit)",
        source: Source::Requests {
            all: flags::READ_BUFFER_HIT,
            read: true,
        },
        exact: Some(|c| c.buffer.read_buffer_hits),
    },
    Event {
        name: "memctl.read-ahead-used",
        description: "read-buffer hits on a line read ahead and not used before",
        source: Source::Requests {
            all: flags::READ_AHEAD_USED,
            read: true,
        },
        exact: Some(|c| c.buffer.read_ahead_used),
    },
    Event {
        name: "memctl.dram-reads",
        description: "DRAM line reads the buffer issued (demand and read-ahead); exact: the DRAM banks' count",
        source: Source::Status(|c| c.buffer.dram_reads),
        exact: Some(|c| c.dram.reads),
    },
    Event {
        name: "memctl.dram-writes",
        description: "DRAM block writes the buffer issued (drains); exact: the DRAM banks' count",
        source: Source::Status(|c| c.buffer.dram_writes),
        exact: Some(|c| c.dram.writes),
    },
    Event {
        name: "memctl.read-ahead-fetches",
        description: "lines read ahead into the read buffer",
        source: Source::Status(|c| c.buffer.read_ahead_fetches),
        exact: None,
    },
    Event {
        name: "memctl.drains-full",
        description: "write-buffer drains forced by a full buffer",
        source: Source::Status(|c| c.buffer.drains_full),
        exact: None,
    },
    Event {
        name: "memctl.drains-watermark",
        description: "write-buffer drains at the watermark's priority",
        source: Source::Status(|c| c.buffer.drains_watermark),
        exact: None,
    },
    Event {
        name: "memctl.drains-idle",
        description: "write-buffer drains while the DRAM was idle",
        source: Source::Status(|c| c.buffer.drains_idle),
        exact: None,
    },
    Event {
        name: "memctl.drains-final",
        description: "write-buffer drains at the end of the run",
        source: Source::Status(|c| c.buffer.drains_final),
        exact: None,
    },
];

/// The request tally's kinds: the `Source::Requests` events in `EVENTS` order.
fn request_events() -> impl Iterator<Item = (usize, flags::Flags, bool)> {
    EVENTS
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e.source {
            Source::Requests { all, read } => Some((i, all, read)),
            Source::Status(_) => None,
        })
}

/// The probe: per controller, per event of `EVENTS`, the requests counted (status events
/// stay 0).
pub struct Tally {
    pub nodes: Vec<Vec<u64>>,
    kinds: Vec<(usize, flags::Flags, bool)>,
}

impl Tally {
    pub fn new(nodes: usize) -> Tally {
        Tally {
            nodes: vec![vec![0; EVENTS.len()]; nodes],
            kinds: request_events().collect(),
        }
    }
}

impl Probe for Tally {
    #[inline]
    fn observe(&mut self, o: &Observation, _sig: &mut Signals) {
        if let Observation::MemRequest { node, flags: f, .. } = *o {
            if let Some(n) = self.nodes.get_mut(node as usize) {
                let write = f & flags::WRITE != 0;
                for &(i, all, read) in &self.kinds {
                    if f & all == all && (!read || !write) {
                        n[i] += 1;
                    }
                }
            }
        }
    }
    fn interest(&self) -> u32 {
        kind::MEM_REQUEST
    }
    fn name(&self) -> &str {
        "memctl-stat"
    }
}

/// `stat`'s requests and, after `attach`, the tally.
#[derive(Default)]
pub struct Stat {
    events: Vec<usize>,
    base: Vec<u64>,
    last: RefCell<Vec<u64>>,
    pub tally: Option<Rc<RefCell<Tally>>>,
}

/// Event `e` on every controller: its value there.
fn per_node(e: usize, st: &State, tally: Option<&Tally>) -> Vec<u64> {
    let ctl = st.system.controller_reports();
    match EVENTS[e].source {
        Source::Status(f) => ctl.iter().map(f).collect(),
        Source::Requests { .. } => (0..ctl.len())
            .map(|n| tally.and_then(|t| t.nodes.get(n)).map_or(0, |v| v[e]))
            .collect(),
    }
}

impl Stat {
    fn values(&self, st: &State) -> Vec<u64> {
        let t = self.tally.as_ref().map(|t| t.borrow());
        self.events
            .iter()
            .map(|&e| per_node(e, st, t.as_deref()).iter().sum())
            .collect()
    }
    fn read_now(&self, st: &State) -> Vec<u64> {
        let v: Vec<u64> = self
            .values(st)
            .iter()
            .zip(&self.base)
            .map(|(v, b)| v - b)
            .collect();
        *self.last.borrow_mut() = v.clone();
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

    /// The controller sees memory requests, not the processor's privilege state.
    fn privileges(&self) -> bool {
        false
    }

    fn plan(&mut self, reqs: &[Request]) -> Result<Vec<Vec<usize>>, Error> {
        if let Some(r) = reqs.iter().find(|r| r.event >= EVENTS.len()) {
            return Err(Error::input(format!("memctl: no event number {}", r.event)));
        }
        self.stat = Some(Stat {
            events: reqs.iter().map(|r| r.event).collect(),
            base: vec![0; reqs.len()],
            last: RefCell::new(vec![0; reqs.len()]),
            tally: None,
        });
        Ok(vec![(0..reqs.len()).collect()])
    }

    fn program(&mut self, _g: usize, st: Option<&State>) {
        if let (Some(s), Some(st)) = (self.stat.as_mut(), st) {
            s.base = s.values(st);
        }
    }

    fn read(&self, st: Option<&State>) -> Vec<u64> {
        match (st, &self.stat) {
            (Some(st), Some(s)) => s.read_now(st),
            (None, Some(s)) => s.last.borrow().clone(),
            _ => Vec::new(),
        }
    }

    fn read_end(&self, st: &State) -> Vec<u64> {
        self.read(Some(st))
    }

    /// Every controller's status counters (unit `controller-N`), and its request counts when
    /// the tally is attached (a `stat` run).
    fn samples_in(&self, st: &State) -> Vec<Sample> {
        let tally = self.stat.as_ref().and_then(|s| s.tally.as_ref());
        let t = tally.map(|t| t.borrow());
        let mut v = Vec::new();
        for (e, ev) in EVENTS.iter().enumerate() {
            if matches!(ev.source, Source::Requests { .. }) && t.is_none() {
                continue;
            }
            for (n, value) in per_node(e, st, t.as_deref()).into_iter().enumerate() {
                v.push(Sample {
                    event: ev.name.to_string(),
                    cpu: None,
                    unit: format!("controller-{n}"),
                    counter: e as u16,
                    value,
                });
            }
        }
        v
    }

    fn exact(&self, st: &State, req: &Request, _end: bool) -> Option<u64> {
        let f = EVENTS.get(req.event)?.exact?;
        Some(st.system.controller_reports().iter().map(f).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tally sorts one request into every event whose bits it carries, reads and writes
    /// apart.
    #[test]
    fn tally_counts_by_flags() {
        let mut t = Tally::new(2);
        let mut sig = Signals::default();
        for f in [
            flags::WRITE | flags::WRITE_HIT | flags::COLLAPSE,
            flags::WRITE | flags::FULL,
            flags::READ_BUFFER_HIT | flags::READ_AHEAD_USED,
            0,
        ] {
            t.observe(
                &Observation::MemRequest {
                    node: 1,
                    t: 0,
                    addr: 0,
                    flags: f,
                },
                &mut sig,
            );
        }
        let at = |n: &str| EVENTS.iter().position(|e| e.name == n).unwrap();
        let n = &t.nodes[1];
        assert_eq!(n[at("memctl.writes")], 2);
        assert_eq!(n[at("memctl.reads")], 2);
        assert_eq!(n[at("memctl.write-buffer-hits")], 1);
        assert_eq!(n[at("memctl.write-collapses")], 1);
        assert_eq!(n[at("memctl.write-buffer-full")], 1);
        assert_eq!(n[at("memctl.read-buffer-hits")], 1);
        assert_eq!(n[at("memctl.read-ahead-used")], 1);
        assert_eq!(n[at("memctl.read-merges")], 0);
        assert_eq!(t.nodes[0].iter().sum::<u64>(), 0);
    }
}
