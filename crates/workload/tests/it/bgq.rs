//! Issue 14 item 1 on the real kernels: FFT, LU, OCEAN and RADIX at test size on the `bgq`
//! preset with 64 software threads on 16 cores x 4 hardware threads. Each run verifies, and
//! the UPC's event sources agree with the ground truth and with the machine's independent
//! statistics: per slice (`L2Slice` observations = `GroundTruth::l2_events` = the slice
//! statistics), per core (`L1p`), per hardware thread (`CoreEvent`, and the opcode groups
//! from `Retire` = `InstGroup::counts(Counters::ops)`), and the system's 17th core counts
//! nothing.

use machine::bgq::events::{CoreEvent, L1pEvent, L2Event};
use machine::bgq::inst::{Decoder, InstGroup, AXU_ALL, XU_ALL};
use machine::config::Preset;
use machine::probe::{kind, Observation, Probe, Signals};
use machine::sim::{Machine, Options};
use std::cell::RefCell;
use std::rc::Rc;
use workload::{install, Size};

const SLICES: usize = 16;
const CORES: usize = 17;
const CONTEXTS: usize = CORES * 4;

/// Everything the UPC would count, summed from the observations.
struct Seen {
    l2: Vec<[u64; L2Event::COUNT]>,
    l1p: Vec<[u64; L1pEvent::COUNT]>,
    core: Vec<[u64; CoreEvent::COUNT]>,
    groups: Vec<[u64; InstGroup::COUNT]>,
}

struct Count(Rc<RefCell<Seen>>);

impl Probe for Count {
    fn observe(&mut self, o: &Observation, _sig: &mut Signals) {
        let mut s = self.0.borrow_mut();
        match *o {
            Observation::L2Slice { slice, event, .. } => s.l2[slice as usize][event as usize] += 1,
            Observation::L1p { who, event, .. } => s.l1p[who.core as usize][event as usize] += 1,
            Observation::CoreEvent { who, event, n, .. } => {
                s.core[who.core as usize * 4 + who.context as usize][event as usize] += n as u64
            }
            Observation::Retire {
                proc, op, n, who, ..
            } => {
                assert_eq!(proc, who.core);
                s.groups[who.core as usize * 4 + who.context as usize]
                    [InstGroup::of(op) as usize] += n
            }
            _ => {}
        }
    }
    fn interest(&self) -> u32 {
        kind::L2_SLICE | kind::L1P | kind::CORE_EVENT | kind::RETIRE
    }
    fn name(&self) -> &str {
        "upc-sources"
    }
}

fn check(name: &str) {
    let p = Preset::builtin("bgq").unwrap();
    let mut m = Machine::new(p, Options::default()).unwrap();
    let seen = Rc::new(RefCell::new(Seen {
        l2: vec![[0; L2Event::COUNT]; SLICES],
        l1p: vec![[0; L1pEvent::COUNT]; CORES],
        core: vec![[0; CoreEvent::COUNT]; CONTEXTS],
        groups: vec![[0; InstGroup::COUNT]; CONTEXTS],
    }));
    m.attach(Box::new(Count(seen.clone())));
    let w = install(workload::find(name, Size::Test).unwrap(), &mut m, Some(64)).unwrap();
    m.run(None).unwrap();
    let v = w.verify();
    assert!(v.verified, "{name}: {}", v.detail);
    let st = m.state();
    let gt = st.truth.as_ref().unwrap();
    let s = seen.borrow();
    // Observations = ground truth, per slice, per core, per hardware thread.
    assert_eq!(s.l2, gt.l2_events, "{name}");
    assert_eq!(s.l1p, gt.l1p_events, "{name}");
    assert_eq!(s.core, gt.core_events, "{name}");
    // Per slice: the UPC_L2 events against the slice's own statistics.
    use L2Event as E;
    let mut through = 0;
    for (k, (e, sl)) in gt.l2_events.iter().zip(&gt.slices).enumerate() {
        let tag = format!("{name} slice {k}");
        assert_eq!(e[E::Read as usize], sl.reads, "{tag}");
        assert_eq!(e[E::ReadMiss as usize], sl.read_misses, "{tag}");
        assert_eq!(
            e[E::ReadEx as usize] + e[E::Upgrade as usize],
            sl.writes,
            "{tag}"
        );
        assert_eq!(e[E::WriteMiss as usize], sl.write_misses, "{tag}");
        assert_eq!(e[E::Writeback as usize], sl.writebacks, "{tag}");
        assert_eq!(
            e[E::FetchLine as usize],
            sl.memory_reads + sl.prefetches,
            "{tag}"
        );
        assert_eq!(
            e[E::StoreLine as usize] + e[E::StorePartialLine as usize],
            sl.memory_writes,
            "{tag}"
        );
        let requests = sl.accesses() + e[E::StoreThrough as usize];
        assert_eq!(
            e[E::Hits as usize] + e[E::Misses as usize],
            requests,
            "{tag}"
        );
        assert_eq!(e[E::ReqRetire as usize], requests, "{tag}");
        for ev in L2Event::ALL.iter().filter(|ev| !ev.modelled()) {
            assert_eq!(e[*ev as usize], 0, "{tag}: {ev:?}");
        }
        assert!(sl.accesses() > 0, "{tag}: the hash left a slice unused");
        through += e[E::StoreThrough as usize];
    }
    // Every write-through store passed its core's L1P.
    let l1p_stores: u64 = gt
        .l1p_events
        .iter()
        .map(|e| e[L1pEvent::Store as usize])
        .sum();
    assert_eq!(through, l1p_stores, "{name}");
    assert!(through > 0, "{name}: no store went through");
    // Every read and read-exclusive a slice accepted passed its core's L1P once (a retry
    // after a rejection is the same demand): PEVT_L1P_BAS_LD = the slices' reads, and hits
    // + conversions + misses = reads + read-exclusives.
    let l1p = |e: L1pEvent| gt.l1p_events.iter().map(|x| x[e as usize]).sum::<u64>();
    let l2 = |e: L2Event| gt.l2_events.iter().map(|x| x[e as usize]).sum::<u64>();
    assert_eq!(l1p(L1pEvent::Load), l2(E::Read), "{name}");
    assert_eq!(
        l1p(L1pEvent::Hit) + l1p(L1pEvent::Pf2dfc) + l1p(L1pEvent::Miss),
        l2(E::Read) + l2(E::ReadEx),
        "{name}"
    );
    // Per core: L1 misses as core events; the opcode groups from Retire.
    for (c, core) in st.cores.iter().enumerate() {
        let tag = format!("{name} core {c}");
        let ctx = &gt.core_events[c * 4..c * 4 + 4];
        let sum = |e: CoreEvent| ctx.iter().map(|x| x[e as usize]).sum::<u64>();
        assert_eq!(
            sum(CoreEvent::LoadMiss) + sum(CoreEvent::StoreMiss),
            core.cnt.l1d_misses,
            "{tag}"
        );
        assert_eq!(sum(CoreEvent::Il1Miss), core.cnt.l1i_misses, "{tag}");
        let mut groups = [0u64; InstGroup::COUNT];
        for g in &s.groups[c * 4..c * 4 + 4] {
            for (a, b) in groups.iter_mut().zip(g) {
                *a += b;
            }
        }
        assert_eq!(groups, InstGroup::counts(&core.cnt.ops()), "{tag}");
        let all = InstGroup::masked(&groups, Decoder::Xu, XU_ALL)
            + InstGroup::masked(&groups, Decoder::Axu, AXU_ALL);
        assert_eq!(all, core.cnt.instructions(), "{tag}: PEVT_INST_ALL");
        if c == 16 {
            assert_eq!(all, 0, "{tag}: the system's core ran");
            assert!(gt.l1p_events[c].iter().all(|&n| n == 0), "{tag}");
            assert!(ctx.iter().flatten().all(|&n| n == 0), "{tag}");
        } else {
            // Four threads a core, each retired instructions, attributed to its hardware
            // thread exactly.
            for (k, g) in s.groups[c * 4..c * 4 + 4].iter().enumerate() {
                assert!(g.iter().sum::<u64>() > 0, "{tag} context {k} idle");
                let exact = machine::sched::context_counts(&st.sched, c * 4 + k).ops();
                assert_eq!(*g, InstGroup::counts(&exact), "{tag} context {k}");
            }
        }
    }
}

#[test]
fn fft_upc_sources_on_bgq_64_threads() {
    check("fft");
}
#[test]
fn lu_upc_sources_on_bgq_64_threads() {
    check("lu");
}
#[test]
fn ocean_upc_sources_on_bgq_64_threads() {
    check("ocean");
}
#[test]
fn radix_upc_sources_on_bgq_64_threads() {
    check("radix");
}
