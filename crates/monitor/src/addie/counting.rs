//! The attached Addies' named events for `pmusim stat -e` and `/metrics`
//! ([`crate::counting`]; seed 002, issue 16 item 5): each of the four inputs the multiplexer
//! can select on a run (write-buffer hit, write-buffer full, read merge, read-buffer hit) as an
//! estimated count beside the exact one.
//!
//! An Addie estimates a probability, not a count: its reading is the counter over full scale,
//! a running estimate weighted towards the recent samples. The event's monitored value
//! integrates the readings as a user polling the debug port would: every `--addie-window`
//! samples (256) the reading x the window's samples, plus the current reading x the samples
//! since the last window, summed over the controllers. (The last reading alone x every
//! sample would be the end of the run's ratio, far off for a program whose phases differ:
//! 0 read-buffer hits of FFT's 38,951 on `elan`.) The exact count is the buffer's own
//! (`BufferStats`), so the error shown is the estimator's tracking error, integrated.
//!
//! A group is one setting of the two Addies per controller (their input multiplexers): two
//! requests; more are multiplexed by `stat`, each rotation setting the inputs and restarting
//! the Addies at half scale (a multiplexed Addie needs its ~500 samples to converge again,
//! seed 002 Figure 2, which the counts show). Nothing here costs the program anything: the
//! readings are the debug port's.

use super::plugin::Plugin;
use super::AddieInput;
use crate::counting::{Counting, EventInfo, Request, Sample};
use crate::plugin::Error;
use machine::mem::controller::ControllerReport;
use machine::state::State;

/// The buffer's exact count of an input's ones.
type Exact = fn(&ControllerReport) -> u64;

/// The inputs as events: (name, input, description, exact count).
const EVENTS: &[(&str, AddieInput, &str, Exact)] = &[
    (
        "addie.wb-hit",
        AddieInput::WriteBufferHit,
        "write-buffer hits estimated by an Addie: its reading x the writes it sampled",
        |c| c.buffer.write_hits,
    ),
    (
        "addie.wb-full",
        AddieInput::WriteBufferFull,
        "writes that found the buffer full, estimated by an Addie (reading x writes sampled)",
        |c| c.buffer.full,
    ),
    (
        "addie.read-merge",
        AddieInput::ReadMerge,
        "reads merged from the write buffer, estimated by an Addie (reading x reads sampled)",
        |c| c.buffer.read_merges,
    ),
    (
        "addie.rb-hit",
        AddieInput::ReadBufferHit,
        "read-buffer hits estimated by an Addie: its reading x the reads it sampled",
        |c| c.buffer.read_buffer_hits,
    ),
];

/// The plan: per group, the event of each of the two Addies (request order).
#[derive(Default)]
pub struct Plan {
    groups: Vec<Vec<usize>>,
    active: usize,
}

impl Plan {
    /// The two inputs of group `g` (a lone request's input on both Addies).
    fn inputs(&self, g: usize) -> [AddieInput; 2] {
        let ev = &self.groups[g];
        let a = EVENTS[ev[0]].1.clone();
        let b = ev
            .get(1)
            .map_or_else(|| a.clone(), |&e| EVENTS[e].1.clone());
        [a, b]
    }
}

/// An Addie's estimated count: each window's reading (the debug port's, every `window`
/// samples) x the window's samples, plus the current reading x the samples since.
fn estimated(c: &super::attached::Channel, window: u64) -> f64 {
    let read: f64 = c.readings.iter().map(|r| r.addie * window as f64).sum();
    read + c.unit.estimate() * (c.samples() - c.n) as f64
}

impl Counting for Plugin {
    fn events(&self) -> Vec<EventInfo> {
        EVENTS
            .iter()
            .map(|e| EventInfo {
                name: e.0.to_string(),
                description: e.2.to_string(),
                kind: "native",
                exact: true,
            })
            .collect()
    }

    fn privileges(&self) -> bool {
        false
    }

    fn plan(&mut self, reqs: &[Request]) -> Result<Vec<Vec<usize>>, Error> {
        let groups = crate::counting::pack_groups(reqs, 2, |i| {
            (i < EVENTS.len())
                .then_some(1)
                .ok_or_else(|| Error::input(format!("addie: no event number {i}")))
        })?;
        self.stat = Some(Plan {
            groups: groups
                .iter()
                .map(|g| g.iter().map(|x| x.1).collect())
                .collect(),
            active: 0,
        });
        Ok(crate::counting::request_indices(&groups))
    }

    /// Sets both Addies' inputs on every controller (before `attach`: the inputs it attaches
    /// with) and restarts them.
    fn program(&mut self, g: usize, _st: Option<&State>) {
        let Some(plan) = self.stat.as_mut() else {
            return;
        };
        plan.active = g;
        let inputs = plan.inputs(g);
        self.inputs = inputs.clone();
        if let Some(p) = &self.probe {
            p.borrow_mut()
                .restart(&inputs)
                .expect("the width and mode were accepted at attach");
        }
    }

    fn read(&self, _st: Option<&State>) -> Vec<u64> {
        let (Some(plan), Some(p)) = (&self.stat, &self.probe) else {
            return Vec::new();
        };
        let p = p.borrow();
        (0..plan.groups[plan.active].len())
            .map(|k| {
                p.nodes
                    .iter()
                    .map(|chs| estimated(&chs[k], p.window))
                    .sum::<f64>()
                    .round() as u64
            })
            .collect()
    }

    /// Each controller's two Addies (unit `controller-N`, counter 0 or 1), as estimated
    /// counts since they were last set.
    fn samples(&self) -> Vec<Sample> {
        let Some(p) = &self.probe else {
            return Vec::new();
        };
        let p = p.borrow();
        let mut v = Vec::new();
        for (n, chs) in p.nodes.iter().enumerate() {
            for (k, c) in chs.iter().enumerate() {
                let name = EVENTS
                    .iter()
                    .find(|e| e.1 == c.input)
                    .map_or("addie", |e| e.0);
                v.push(Sample {
                    event: name.to_string(),
                    cpu: None,
                    unit: format!("controller-{n}"),
                    counter: k as u16,
                    value: estimated(c, p.window).round() as u64,
                });
            }
        }
        v
    }

    fn exact(&self, st: &State, req: &Request, _end: bool) -> Option<u64> {
        let f = EVENTS.get(req.event)?.3;
        Some(st.system.controller_reports().iter().map(f).sum())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two Addies per controller: four inputs make two groups; a lone request's input is on
    /// both Addies.
    #[test]
    fn two_addies_per_group() {
        let mut p = Plugin::default();
        let reqs: Vec<Request> = [0, 3, 2]
            .iter()
            .map(|&event| Request {
                event,
                privilege: crate::counting::Privilege::All,
            })
            .collect();
        assert_eq!(p.plan(&reqs).unwrap(), vec![vec![0, 1], vec![2]]);
        p.program(0, None);
        assert_eq!(
            p.inputs,
            [AddieInput::WriteBufferHit, AddieInput::ReadBufferHit]
        );
        p.program(1, None);
        assert_eq!(p.inputs, [AddieInput::ReadMerge, AddieInput::ReadMerge]);
    }
}
