//! Mode 1, the detailed count (seed 001: "a given UPC P or UPC L2 is selected for ownership
//! of the daisy chain"): the owner sends 92 raw event bits to UPC_C every x2 cycle, counted by
//! UPC_C's own Mode 1 counters, plus one bit that carries its local counters to SRAM as in
//! Mode 0, plus 3 control bits (96 in all). The 92 bits form 12 event groups, 0..7 of 8 events
//! and 8..11 of 7 (seed: "divide the 96 bit bus into 12 Event groups"); UPC_C counts them in
//! 8 central counter groups. So 116 events of one core (92 raw + 24 local) or every one of the
//! 32 events of one L2 slice (32 raw + 16 local) are counted at once (docs/upc.md, "Mode 1").
//!
//! The driver (`upc_c_dcr.h`, `MODE1_COUNT`) has 96 Mode 1 counters of 14 bits and an
//! overflow bit; pmusim numbers them as the 12 event groups' bits in order (8 g + b for groups
//! 0..7, 64 + 7 (g - 8) + b for 8..11; counters 92..95 have no bit), eight central counter
//! groups of 12, and keeps counter m's 64-bit count in SRAM counter `SRAM_M1 + m`. A Mode 1
//! counter hands its top bit to SRAM as a UPC_P counter does (seed: "the UPC C module manages
//! the low order bits of the count data similar to the way that the UPC P module manages its
//! local counts"), on frame count `4 m + 2`.
//!
//! Which event each bit carries is pmusim's table (`core_table`, `slice_table`): the driver's
//! one-bit multiplexer per event group (`UPC_P__CONFIG__MODE1_EVENT_GROUPn_SEL`, A2 events of
//! two threads or L1P events of one) is not modelled; every event pmusim produces for a core has
//! a bit or, for the opcode groups (seed: "the UPC P local counters may be used to collect opcode
//! information"), a local counter.

use super::events::{a2, op, Group};
use super::regs::CounterCfg;

/// Raw event bits on the chain, event groups, and UPC_C's Mode 1 counters (the driver's 96).
pub const RAW: usize = 92;
pub const EVENT_GROUPS: usize = 12;
pub const COUNTERS: usize = 96;
/// Central counter groups (seed: "organized into 8 counter central counter groups").
pub const CENTRAL_GROUPS: usize = 8;
/// Width of a Mode 1 counter (driver: `UPC_C_DCR__MODE1_COUNT__DATA_width` 14).
pub const WIDTH: u32 = 14;
/// SRAM counter of Mode 1 counter 0: group 50, the first Mode 0 leaves free.
pub const SRAM_M1: usize = 800;

/// Bits in event group `g` (8 for 0..7, 7 for 8..11).
pub const fn group_bits(g: usize) -> usize {
    if g < 8 {
        8
    } else {
        7
    }
}

/// The Mode 1 counter of bit `b` of event group `g`.
pub const fn counter_of(g: usize, b: usize) -> usize {
    if g < 8 {
        8 * g + b
    } else {
        64 + 7 * (g - 8) + b
    }
}

/// The event group and bit of Mode 1 counter `m` (`None` for 92..95).
pub const fn bit_of(m: usize) -> Option<(usize, usize)> {
    if m < 64 {
        Some((m / 8, m % 8))
    } else if m < RAW {
        Some((8 + (m - 64) / 7, (m - 64) % 7))
    } else {
        None
    }
}

/// The frame count on which Mode 1 counter `m` merges its top bit into SRAM.
pub fn offset(m: usize, period: u64) -> u64 {
    (4 * m as u64 + 2) % period
}

fn ev(group: Group, event: u8, threads: u8) -> CounterCfg {
    CounterCfg {
        group: group as u8,
        event,
        threads,
        enable: true,
        ..Default::default()
    }
}

/// The 92 bits a UPC_P owner sends, by Mode 1 counter: groups 0..3 eight A2 events of hardware
/// thread g, groups 4..7 five more A2 events and the three instruction sums of thread g - 4,
/// group 8 the core-wide A2 events and L1P 0..2, group 9 L1P 3..9, groups 10 and 11 fourteen
/// opcode groups over all threads.
pub fn core_table() -> Vec<CounterCfg> {
    use Group::*;
    let mut t = Vec::with_capacity(RAW);
    for k in 0..4 {
        for e in [
            a2::IL1_MISS,
            a2::LD_MISS,
            a2::ST_MISS,
            a2::LARX,
            a2::STCX,
            a2::STCX_FAIL,
            a2::DERAT_MISS,
            a2::INTS,
        ] {
            t.push(ev(A2, e, 1 << k));
        }
    }
    for k in 0..4 {
        for e in [
            a2::IL1_MISS_CYC,
            a2::CI_LD,
            a2::IERAT_MISS,
            a2::DATA_MISS_CYC,
            a2::NACK,
        ] {
            t.push(ev(A2, e, 1 << k));
        }
        for s in [op::ALL, op::XU_ALL, op::QFPU_ALL] {
            t.push(ev(Opcode, s, 1 << k));
        }
    }
    for e in [
        a2::CYCLES,
        a2::MISS_PENDING,
        a2::BACK_INVAL,
        a2::BACK_INVAL_HIT,
    ] {
        t.push(ev(A2, e, 0xf));
    }
    for l in 0..10 {
        t.push(ev(L1p, l, 0xf));
    }
    for s in [
        op::LD,
        op::ST,
        op::BRC,
        op::BRU,
        op::IADD,
        op::ICMP,
        op::ILOG,
        op::IMUL,
        op::LSCX,
        op::SYNC,
        op::QLD,
        op::QST,
        op::FOTH,
        op::FMA,
    ] {
        t.push(ev(Opcode, s, 0xf));
    }
    debug_assert_eq!(t.len(), RAW);
    t
}

/// The local counters of a UPC_P owner by default: the 14 decoder groups without a raw bit and
/// the three instruction sums over all threads, then misses (rising edges of the miss-pending
/// level) and six A2 events over all threads.
pub fn core_locals() -> Vec<CounterCfg> {
    use Group::*;
    let mut t: Vec<CounterCfg> = [
        op::BITS,
        op::IDIV,
        op::IMOV,
        op::INT,
        op::FADD,
        op::FCVT,
        op::FCMP,
        op::FDIV,
        op::FMUL,
        op::FSQ,
        op::QOTH,
        op::QADD,
        op::QMUL,
        op::QMA,
        op::XU_ALL,
        op::QFPU_ALL,
        op::ALL,
    ]
    .iter()
    .map(|&s| ev(Opcode, s, 0xf))
    .collect();
    t.push(CounterCfg {
        edge: true,
        ..ev(A2, a2::MISS_PENDING, 0xf)
    });
    for e in [
        a2::LD_MISS,
        a2::ST_MISS,
        a2::IL1_MISS,
        a2::DERAT_MISS,
        a2::NACK,
        a2::LARX,
    ] {
        t.push(ev(A2, e, 0xf));
    }
    t
}

/// The bits a UPC_L2 owner sends: its 32 events on groups 0..3 (the six about speculation
/// count nothing: pmusim models none); the other 60 bits carry nothing.
pub fn slice_table() -> Vec<CounterCfg> {
    let mut t: Vec<CounterCfg> = (0..32u8)
        .map(|e| CounterCfg {
            event: e,
            enable: true,
            ..Default::default()
        })
        .collect();
    t.resize(RAW, CounterCfg::default());
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::upc::events::p_event;

    /// 12 event groups of 8, 8, .., 7 bits number the 92 raw counters once each; the core's
    /// 92 + 24 selections are 116 distinct events pmusim produces.
    #[test]
    fn the_packet_and_the_tables() {
        let mut seen = [false; RAW];
        for g in 0..EVENT_GROUPS {
            for b in 0..group_bits(g) {
                let m = counter_of(g, b);
                assert!(!std::mem::replace(&mut seen[m], true));
                assert_eq!(bit_of(m), Some((g, b)));
            }
        }
        assert!(seen.iter().all(|&s| s));
        assert_eq!(bit_of(92), None);
        assert_eq!((0..EVENT_GROUPS).map(group_bits).sum::<usize>(), RAW);
        assert_eq!(RAW + 1 + 3, 96);
        let mut all: Vec<CounterCfg> = core_table();
        all.extend(core_locals());
        assert_eq!(all.len(), 116);
        for (i, c) in all.iter().enumerate() {
            let e = p_event(Group::from_code(c.group as u64).unwrap(), c.event).unwrap();
            assert!(c.check_p("t").is_ok(), "{}", e.name);
            let key = (c.group, c.event, c.threads, c.edge);
            assert!(
                !all[..i]
                    .iter()
                    .any(|d| (d.group, d.event, d.threads, d.edge) == key),
                "{} twice",
                e.name
            );
        }
        assert_eq!(slice_table().iter().filter(|c| c.enable).count(), 32);
        // Every counter merges on its own frame count of a 400-cycle frame.
        let mut o: Vec<u64> = (0..RAW).map(|m| offset(m, 400)).collect();
        o.dedup();
        assert_eq!(o.len(), RAW);
    }
}
