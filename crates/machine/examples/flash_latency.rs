//! Uncontended miss latencies of the `flash` preset, in 10 ns system cycles, measured from the
//! transaction leaving the processor to its response taking effect in the caches.
//!
//! `cargo run --release -p machine --example flash_latency -- [procs]` (default 16).

use machine::probe::{Observation, Probe, Signals};
use machine::{Machine, Options, Place, Preset};
use std::cell::RefCell;
use std::rc::Rc;

struct Done(Rc<RefCell<Vec<(u64, u64, u64)>>>);
impl Probe for Done {
    fn observe(&mut self, o: &Observation, _s: &mut Signals) {
        if let Observation::TxDone {
            addr, issued, t, ..
        } = *o
        {
            self.0.borrow_mut().push((addr, issued, t));
        }
    }
    fn name(&self) -> &str {
        "done"
    }
}

/// Runs `setup` threads, then `probe_proc` accesses the line (a load or a store) after a long
/// delay; returns that access's latency in system cycles.
fn measure(procs: usize, home: usize, prior: &[(usize, bool)], who: usize, write: bool) -> u64 {
    let p = Preset::builtin("flash").unwrap().with_procs(procs).unwrap();
    let mut m = Machine::new(p, Options::default()).unwrap();
    let log = Rc::new(RefCell::new(Vec::new()));
    m.attach(Box::new(Done(log.clone())));
    let a = m.setup().alloc("x", 4096, Place::Node(home));
    for (i, &(q, w)) in prior.iter().enumerate() {
        m.spawn(q, move |ctx| {
            ctx.int(1 + 3000 * i as u64);
            if w {
                ctx.store_value(a, 1);
            } else {
                ctx.load_value(a);
            }
        });
    }
    m.spawn(who, move |ctx| {
        ctx.int(100_000);
        if write {
            ctx.store_value(a, 2);
        } else {
            ctx.load_value(a);
        }
    });
    m.run(Some(100_000_000)).unwrap();
    let sys = m.state().sys_period;
    let l = log.borrow();
    let (_, i, t) = *l.iter().rev().find(|d| d.0 == a).unwrap();
    (t - i) / sys
}

fn main() {
    let procs: usize = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(16);
    let last = procs - 1;
    println!("flash preset, {procs} nodes; latencies in 10 ns system cycles");
    println!(
        "local clean read            {}",
        measure(procs, 0, &[], 0, false)
    );
    for q in [1, 2, 3, last] {
        println!(
            "remote clean read 0 -> {q:<3}    {}",
            measure(procs, q, &[], 0, false)
        );
    }
    println!(
        "remote read, dirty at a 3rd node (home 1, owner {last}) {}",
        measure(procs, 1, &[(last, true)], 0, false)
    );
    println!(
        "local read, dirty remote (owner {last}) {}",
        measure(procs, 0, &[(last, true)], 0, false)
    );
    println!(
        "local write, uncached       {}",
        measure(procs, 0, &[], 0, true)
    );
    println!(
        "local write, 3 remote sharers {}",
        measure(procs, 0, &[(1, false), (2, false), (3, false)], 0, true)
    );
    println!(
        "remote write (home 1), 3 sharers {}",
        measure(procs, 1, &[(2, false), (3, false), (last, false)], 0, true)
    );
}
