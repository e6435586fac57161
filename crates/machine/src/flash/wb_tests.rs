//! Blocking loads over a write buffer (`[cpu.nonblocking] loads = false`, `cpu::nonblocking`,
//! "Blocking loads over a write buffer"), on the experiment's machine
//! `docs/flashpoint/flash-wb.toml` (issue 20, docs/flashpoint.md).

use crate::addr::Place;
use crate::config::Preset;
use crate::sim::{Machine, Options};
use std::cell::Cell;
use std::rc::Rc;

const FLASH_WB: &str = include_str!("../../../../docs/flashpoint/flash-wb.toml");

/// `docs/flashpoint/flash-wb.toml` on two processors (two nodes), with `mshrs` entries and
/// `loads` as given.
fn flash_wb(mshrs: u32, loads: bool) -> Preset {
    let mut p = Preset::parse(FLASH_WB, "flash-wb.toml")
        .unwrap()
        .with_procs(2)
        .unwrap();
    let nb = p.cpu.nonblocking.as_mut().unwrap();
    (nb.mshrs, nb.loads) = (mshrs, loads);
    p.validate().unwrap();
    p
}

/// What processor 0 measured (processor cycles): a local load miss alone; a remote store
/// miss alone, to its drain; then two remote store misses followed by a local load miss:
/// the cycles from the load to the next instruction, whether a miss was still outstanding
/// then, and the cycles from the load to the drain of everything.
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    local: u64,
    remote: u64,
    load: u64,
    stores_left: bool,
    drain: u64,
}

fn stores_then_load(p: Preset) -> Seen {
    let mut m = Machine::new(p, Options::default()).unwrap();
    // Lines 128 bytes apart: each in its own L2 set, so only the buffer orders them.
    let remote = m.setup().alloc("remote", 1 << 16, Place::Node(1));
    let local = m.setup().alloc("local", 1 << 16, Place::Node(0));
    let out = Rc::new(Cell::new(Seen::default()));
    let o = out.clone();
    m.spawn(0, move |ctx| {
        let mut s = Seen::default();
        ctx.int(4096);
        // The pages' TLB entries (another line of each page), so that only misses are timed.
        ctx.store(remote + 2048);
        ctx.load(local + 2048);
        ctx.use_loads();
        let t = ctx.counters().cycles();
        ctx.load(local);
        s.local = ctx.counters().cycles() - t;
        ctx.use_loads();
        ctx.int(100);
        let t = ctx.counters().cycles();
        ctx.store(remote);
        ctx.use_loads();
        s.remote = ctx.counters().cycles() - t;
        ctx.int(100);
        ctx.store(remote + 128);
        ctx.store(remote + 256);
        let t = ctx.counters().cycles();
        ctx.load(local + 128);
        s.load = ctx.counters().cycles() - t;
        s.stores_left = ctx.core().under_miss;
        ctx.use_loads();
        s.drain = ctx.counters().cycles() - t;
        o.set(s);
    });
    m.run(Some(100_000_000)).unwrap();
    out.get()
}

/// A load behind buffered stores to a slower home (`loads = false`, four entries) takes
/// its own (local) latency and completes before them; with one entry (the control) it
/// waits for the stores first; with non-blocking loads (`loads = true`) it does not wait
/// at all. Fails before `loads` existed (the key is unknown).
#[test]
fn a_load_bypasses_buffered_stores_to_a_slower_home() {
    let wb = stores_then_load(flash_wb(4, false));
    eprintln!("{wb:?}");
    // The machine's latencies: a remote ownership miss costs several local read misses.
    assert!(wb.local > 20 && wb.remote > 3 * wb.local, "{wb:?}");
    // The load's own latency, give or take the two stores' requests ahead of it at the
    // node's protocol processor (a few system cycles each) ...
    assert!(wb.load >= wb.local && wb.load <= wb.local + 20, "{wb:?}");
    // ... done while the stores are still out; they drain about a remote latency after
    // they left (the load issued 2 cycles after them).
    assert!(wb.stores_left, "{wb:?}");
    assert!(
        wb.drain + 10 >= wb.remote && wb.drain <= wb.remote + 20,
        "{wb:?}"
    );
    // One entry: the second store waited for the first before the load, and the load
    // waits for the second store (a remote latency, less the store's own cycles before the
    // load: its L2 tag check, about 12) and then takes its own.
    let one = stores_then_load(flash_wb(1, false));
    eprintln!("{one:?}");
    assert_eq!((one.local, one.remote), (wb.local, wb.remote));
    assert!(!one.stores_left);
    assert!(
        one.load + 20 >= wb.remote + wb.local && one.load <= wb.remote + wb.local + 20,
        "{one:?} {wb:?}"
    );
    // Non-blocking loads: the load does not wait for its data here (its L1 miss and L2 tag
    // check only, as the local load alone).
    let nb = stores_then_load(flash_wb(4, true));
    eprintln!("{nb:?}");
    assert!(
        nb.load == nb.local && nb.load < wb.local / 2,
        "{nb:?} {wb:?}"
    );
    assert!(nb.stores_left);
}

/// `loads = false` is a write buffer's model: it needs `stores = true`, and takes up to 16
/// entries (the R10000's limit of 4 applies to non-blocking loads).
#[test]
fn loads_false_needs_stores_and_takes_sixteen_entries() {
    let mut p = flash_wb(16, false);
    p.cpu.nonblocking.as_mut().unwrap().stores = false;
    let e = p.validate().unwrap_err().to_string();
    assert!(e.contains("cpu.nonblocking.loads"), "{e}");
    let mut p = flash_wb(16, false);
    p.cpu.nonblocking.as_mut().unwrap().mshrs = 17;
    let e = p.validate().unwrap_err().to_string();
    assert!(e.contains("cpu.nonblocking.mshrs"), "{e}");
    let mut p = flash_wb(4, true);
    p.cpu.nonblocking.as_mut().unwrap().mshrs = 8;
    let e = p.validate().unwrap_err().to_string();
    assert!(e.contains("1..=4"), "{e}");
}

/// The protocol tester on `flash-wb` (its plain loads now block while its plain stores stay
/// outstanding), under DP and FP-Proc, with 4 and 16 entries: no violation, the races
/// happen, and loads are issued under buffered stores.
#[test]
fn tester_on_flash_wb_finds_no_violation() {
    use crate::flash::flashpoint::FlashProtocol;
    for (proto, seed, mshrs) in [
        (FlashProtocol::Dp, 1, 4),
        (FlashProtocol::FpProc, 2, 4),
        (FlashProtocol::Dp, 3, 16),
    ] {
        let mut p = Preset::parse(FLASH_WB, "flash-wb.toml").unwrap();
        p.cpu.nonblocking.as_mut().unwrap().mshrs = mshrs;
        super::r10k_tests::tester_finds_no_violation(p, proto, seed);
    }
}
