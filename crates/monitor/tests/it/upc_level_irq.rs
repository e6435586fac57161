//! Overflow interrupts of the miss-pending level (`PEVT_LSU_MISS_PENDING_CYC`) come at the
//! crossing, however the level turned on between the UPC's wake-ups (docs/upc.md, "Overflow
//! interrupt latency").

use machine::{Machine, Options, Preset};
use monitor::upc::config::Config;

/// 8 `cmp` cores, each thread alternating a cache miss (the level on while it is outstanding)
/// with an idle gap of 40..400 cycles (the level off), so the level turns on between
/// wake-ups. Each core's 24 counters follow the level with thresholds 3,000 + 137 i cycles:
/// 192 interrupts, each raised within 2 processor cycles (the x2 cycle after the crossing) of
/// the cycle that wrapped its 64-bit count.
#[test]
fn miss_pending_level_interrupts_at_its_crossing() {
    let mut text = String::new();
    for i in 0..24 {
        text += &format!(
            "[[counter]]\nindex = {i}\nevent = \"PEVT_LSU_MISS_PENDING_CYC\"\noverflow = {}\n",
            3000 + 137 * i
        );
    }
    let cfg = Config::from_toml(&text, "level.toml").unwrap();
    let mut m = Machine::new(Preset::builtin("cmp").unwrap(), Options::default()).unwrap();
    let upc = monitor::upc::attach(&mut m, &cfg).unwrap();
    let data = m.setup().alloc("data", 8 << 20, machine::Place::FirstTouch);
    for t in 0..8u64 {
        m.spawn(t as usize, move |ctx| {
            let mut x = 0x9e37_79b9u64 ^ t;
            for i in 0..300u64 {
                ctx.load(data + (t << 20) + i * 4096 + (x & 0xfc0));
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ctx.idle(40 + (x >> 33) % 360);
            }
        });
    }
    m.run(None).unwrap();
    let u = upc.borrow();
    let lat: Vec<u64> = u
        .irqs
        .iter()
        .map(|q| (q.raised - q.crossed.expect("a crossing")) / u.cp)
        .collect();
    let max = lat.iter().copied().max().unwrap();
    let x2s = u.end.unwrap() / u.chain.x2;
    println!(
        "{} interrupts, latency min {} max {} cycles; {} wake-ups in {x2s} x2 cycles ({} packets a frame of {})",
        lat.len(),
        lat.iter().min().unwrap(),
        max,
        u.wakes,
        u.chain.units(),
        u.chain.period
    );
    assert_eq!(lat.len(), 8 * 24);
    assert!(max <= 2, "latencies {lat:?}");
    for q in &u.irqs {
        // Dated on the crossing: the counter's exact count passed its threshold there.
        let c = &u.units[q.pos].counters[q.counter];
        assert!(c.exact >= 3000 + 137 * q.counter as u64);
    }
}
