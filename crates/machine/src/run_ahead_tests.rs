//! What a thread running ahead of the event loop (`sim`'s module documentation) does to state
//! shared with other processors follows simulated time, not the order in which the event loop
//! ran the threads (issue 19): the first-touch home of a page (`agent::issue`) and the
//! load-and-reserve reservations a store loses (`cpu::reserve`). Each test pins a case where
//! the thread that is later in simulated time runs first, and sweeps its neighbours.

use crate::addr::Place;
use crate::probe::Observation;
use crate::sim::{Machine, Options};
use crate::test_probes::Record;
use crate::Preset;
use std::cell::RefCell;
use std::rc::Rc;

/// Two processors, each on its own node: processor q retires `d[q]` integer instructions,
/// then loads one word of a first-touch page. Returns the page's home and the requests for
/// the page as they left (`TxIssue`: processor, tick).
fn first_touch(preset: &str, d: [u64; 2]) -> (usize, Vec<(u16, u64)>) {
    let p = Preset::builtin(preset).unwrap().with_procs(2).unwrap();
    assert_ne!(p.node_of_proc(0), p.node_of_proc(1), "{preset}");
    let mut m = Machine::new(p, Options::default()).unwrap();
    let seen = Rc::new(RefCell::new(Vec::new()));
    m.attach(Box::new(Record(seen.clone())));
    let page = m.setup().alloc("page", 4096, Place::FirstTouch);
    for (q, n) in d.into_iter().enumerate() {
        m.spawn(q, move |ctx| {
            ctx.int(n);
            ctx.load(page);
        });
    }
    m.run(Some(10_000_000)).unwrap();
    let home = m.state().map.known_home(page).expect("placed");
    let issues = seen
        .borrow()
        .iter()
        .filter_map(|o| match *o {
            Observation::TxIssue { proc, t, addr, .. } if addr >> 12 == page >> 12 => {
                Some((proc, t))
            }
            _ => None,
        })
        .collect();
    (home, issues)
}

/// On `ideal` with 2 processors, processor 0 retires 2 instructions before its load and
/// processor 1 none: 1's request leaves first (tick 11, 0's at 13), but the event loop runs
/// processor 0's thread first (both resume at 0, 0's first), up to the inbound delay ahead,
/// so 0 misses first in simulation order. The page's home is processor 1's node, the first
/// toucher in simulated time. (Deciding it when the thread missed gave node 0.)
#[test]
fn first_touch_home_is_the_node_of_the_earlier_request_not_of_the_thread_run_first() {
    let (home, issues) = first_touch("ideal", [2, 0]);
    assert_eq!(issues, vec![(1, 11), (0, 13)]);
    assert_eq!(home, 1);
    // Neighbouring cases on three presets: the home is always the node of the request that
    // left first (a tie at one tick is left to the event order). Deciding it when the thread
    // missed gave the other node in 39, 13 and 28 of 3,600 cases of 0..60 instructions.
    for preset in ["ideal", "flash", "flash-r10k"] {
        let p = Preset::builtin(preset).unwrap().with_procs(2).unwrap();
        let mut checked = 0;
        for d0 in 0..16 {
            for d1 in 0..16 {
                let (home, issues) = first_touch(preset, [d0, d1]);
                let first = *issues.iter().min_by_key(|x| x.1).unwrap();
                if issues.iter().filter(|x| x.1 == first.1).count() > 1 {
                    continue;
                }
                checked += 1;
                assert_eq!(
                    home,
                    p.node_of_proc(first.0 as usize),
                    "{preset}, {d0} and {d1} instructions: requests {issues:?}"
                );
            }
        }
        assert!(checked > 200, "{preset}: {checked} cases without a tie");
    }
}

/// Blue Gene/Q, 2 cores: core 1 stores to a line (a miss; it then holds it modified), idles
/// `d1` cycles and stores again (a hit, at `tb`); core 0 idles `d0` cycles, then load-and-
/// reserves the line (at `ta`: a miss, served by core 1) and store-conditionals it (at `ts`).
/// Returns `(ta, tb, tb_after, ts, stcx succeeded)` in cycles.
fn reserve_case(d0: u64, d1: u64) -> (u64, u64, u64, u64, bool) {
    let p = Preset::builtin("bgq").unwrap().with_procs(2).unwrap();
    let mut m = Machine::new(p, Options::default()).unwrap();
    let x = m.setup().alloc("x", 4096, Place::RoundRobin);
    let out = Rc::new(RefCell::new((0, 0, 0, 0, false)));
    let (o0, o1) = (out.clone(), out.clone());
    m.spawn(0, move |ctx| {
        ctx.idle(d0);
        let ta = ctx.cycles();
        ctx.larx(x);
        let ts = ctx.cycles();
        let ok = ctx.stcx(x, 5);
        let mut o = o0.borrow_mut();
        (o.0, o.3, o.4) = (ta, ts, ok);
    });
    m.spawn(1, move |ctx| {
        ctx.store_value(x, 1);
        ctx.idle(d1);
        let tb = ctx.cycles();
        ctx.store_value(x, 2);
        let after = ctx.cycles();
        let mut o = o1.borrow_mut();
        (o.1, o.2) = (tb, after);
    });
    m.run(Some(10_000_000)).unwrap();
    let r = *out.borrow();
    r
}

/// Core 0 reserves the line at cycle 352; core 1's store hits it at 353, between the
/// reservation and the store conditional (519), so the store conditional fails. The event
/// loop runs core 1's thread first up to 353 (it is within the inbound delay ahead), so
/// the store performed before the reservation was made in simulation order, and a
/// reservation kept no time of its own: the store conditional succeeded on a line stored
/// to after its reservation.
#[test]
fn a_store_after_the_reservation_in_simulated_time_loses_it_though_simulated_first() {
    assert_eq!(reserve_case(352, 2), (352, 353, 354, 519, false));
    // Neighbours: a store that hits the line (one cycle) strictly between the reservation
    // and the store conditional always makes it fail (3 cases of these succeeded before),
    // and one before the reservation never does.
    let (mut between, mut before) = (0, 0);
    for d0 in 340..372 {
        for d1 in 0..6 {
            let (ta, tb, after, ts, ok) = reserve_case(d0, d1);
            if after != tb + 1 {
                continue;
            }
            if ta < tb && after <= ts {
                between += 1;
                assert!(
                    !ok,
                    "d0 {d0}, d1 {d1}: reserved {ta}, stored {tb}, stcx {ts}"
                );
            } else if after < ta {
                before += 1;
                assert!(
                    ok,
                    "d0 {d0}, d1 {d1}: stored {tb}, reserved {ta}, stcx {ts}"
                );
            }
        }
    }
    assert!(
        between >= 3 && before > 10,
        "{between} between, {before} before"
    );
}
