//! The UPC's registers: their fields (bit 0 = least significant; docs/upc.md, "Registers"),
//! encode and decode, the MMIO address map inside the processor card's monitor window, and
//! `pmusim decode` text.
//!
//! The layouts are pmusim's own, with the driver's fields (`hwi/include/bqc/upc_p_hw.h`:
//! `UPC_P__COUNTER_CFG` sync override, thread mask, event group and sub-selection, interrupt
//! enable; `UPC_P__COUNTER` count, armed, big overflow) in an order that reads plainly.

use super::events::{self, Group};
use crate::plugin::Error;

/// Byte offset of the UPC_P registers in the monitor window (`machine::state::MONITOR_BASE`):
/// each processor reaches its own core's UPC_P there (the driver's per-core L1P MMIO page).
pub const UPC_P_BASE: u64 = 0x10_0000;
/// Byte offset of the UPC_C registers (one unit per chip: every core reaches the same one).
pub const UPC_C_BASE: u64 = 0x20_0000;
/// UPC_P: counter data `i` at `+ 8 i`, configuration `i` at `CFG + 8 i`, control, interrupt
/// status (offsets from [`UPC_P_BASE`]).
pub const P_DATA: u64 = 0x000;
pub const P_CFG: u64 = 0x100;
pub const P_CONTROL: u64 = 0x200;
pub const P_INT_STATUS: u64 = 0x208;
/// UPC_P: bit k, hardware thread k of the core takes UPC_C's interrupts (the UPC_L2
/// counters' overflow). pmusim's register for the driver's per-thread
/// `UPC_P__INT_STATUS__UPC_C_THREAD_INT_bit`, which BGPM's L2 unit enables on `Apply` for a
/// thread whose set has an overflow threshold (`bgpm/src/ES_L2unit.cc`).
pub const P_CINT_ENABLE: u64 = 0x210;
/// UPC_P: the counters' run bits, bit i counter i (the driver's `UPC_P__CONTROL__RUN_bit(i)`
/// in `control_w1s` and `control_w1c`, `hwi/include/bqc/upc_p_hw.h`, here at bit i rather than
/// 63 - (32 + i)). A write to `P_RUN_W1S` sets the run bits written as 1, to `P_RUN_W1C` clears
/// them; the others keep theirs. Either reads the run bits. A sync-override counter counts
/// while its run bit is on ("If sync override is disabled (0), then run bits are ignored").
pub const P_RUN_W1S: u64 = 0x218;
pub const P_RUN_W1C: u64 = 0x220;
/// The 24 counters' run bits.
pub const RUN_MASK: u64 = 0xff_ffff;
/// UPC_P: the flop weights of microcoded divides (bits 0..1) and square roots (bits 2..3),
/// log2 of the flops one scalar instruction counts in a flop-counting counter
/// (`PEVT_INST_QFPU_FPGRP1`): the driver's `UPC_P__CONFIG__DIV_WEIGHT` and `SQRT_WEIGHT`
/// (`hwi/include/bqc/upc_p_hw.h`: 0..3, 1 to 8 flops), which `Bgpm_SetFpDivScale` and
/// `Bgpm_SetFpSqrScale` set, one value per core. Reads back as written; its initial value is
/// the one the driver writes to every UPC_P (3 and 3: 8 flops, `Upci_Punit_Cfg_Init`).
pub const P_FP_WEIGHTS: u64 = 0x228;

/// The UPC_P flop-weights register (`P_FP_WEIGHTS`): divide and square-root weights, log2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FpWeights {
    pub div: u8,
    pub sqrt: u8,
}

impl Default for FpWeights {
    fn default() -> Self {
        let d = machine::bgq::inst::DEFAULT_FP_SCALE;
        FpWeights { div: d, sqrt: d }
    }
}

impl FpWeights {
    pub fn encode(&self) -> u64 {
        (self.div as u64 & 3) | (self.sqrt as u64 & 3) << 2
    }
    pub fn decode(v: u64) -> FpWeights {
        FpWeights {
            div: (v & 3) as u8,
            sqrt: (v >> 2 & 3) as u8,
        }
    }
}
/// UPC_C: SRAM counter `n` (0..1024) at `+ 8 n`; then the control registers.
pub const C_SRAM: u64 = 0x0000;
pub const C_CONTROL: u64 = 0x2000;
pub const C_ACCUM: u64 = 0x2010;
pub const C_ACCUM_MASK: u64 = 0x2018;
pub const C_FRAME: u64 = 0x2028;
pub const C_L2_CFG: u64 = 0x3000;
/// UPC_L2 counter data `i` of slice `j` at `C_L2_DATA + 8 (16 j + i)` (as `UPC_P_DATA`: the
/// 10-bit count, armed, big overflow): the low bits a slice's counter has not yet handed to
/// UPC_C, which a BGPM L2 read adds to the SRAM counter (pmusim's: the driver reads UPC_C
/// alone, after the stop's drain, `spi/include/upci/upc_l2.h`).
pub const C_L2_DATA: u64 = 0x3800;

/// A UPC_P (or UPC_L2) counter's configuration register.
///
/// | bits | field |
/// | --- | --- |
/// | 0..5 | event: sub-selection within the group (UPC_L2: event 0..31) |
/// | 8..9 | group: 0 A2 core, 1 opcode, 2 L1P (UPC_L2: unused) |
/// | 12..15 | thread mask: bit k counts hardware thread k (several bits: thread combine) |
/// | 16 | edge: count rising edges of a level event |
/// | 17 | invert: count cycles a level event is not asserted (polarity) |
/// | 18 | sync override: follow the unit's own run bit, not the chain's start/stop |
/// | 19 | interrupt enable: raise an interrupt on an armed counter's overflow |
/// | 20 | freeze: an armed counter's overflow stops it |
/// | 21 | enable |
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CounterCfg {
    pub event: u8,
    pub group: u8,
    pub threads: u8,
    pub edge: bool,
    pub invert: bool,
    pub sync_override: bool,
    pub int_enable: bool,
    pub freeze: bool,
    pub enable: bool,
}

impl CounterCfg {
    pub fn encode(&self) -> u64 {
        (self.event as u64 & 0x3f)
            | (self.group as u64 & 3) << 8
            | (self.threads as u64 & 0xf) << 12
            | (self.edge as u64) << 16
            | (self.invert as u64) << 17
            | (self.sync_override as u64) << 18
            | (self.int_enable as u64) << 19
            | (self.freeze as u64) << 20
            | (self.enable as u64) << 21
    }
    pub fn decode(v: u64) -> CounterCfg {
        CounterCfg {
            event: (v & 0x3f) as u8,
            group: (v >> 8 & 3) as u8,
            threads: (v >> 12 & 0xf) as u8,
            edge: v >> 16 & 1 != 0,
            invert: v >> 17 & 1 != 0,
            sync_override: v >> 18 & 1 != 0,
            int_enable: v >> 19 & 1 != 0,
            freeze: v >> 20 & 1 != 0,
            enable: v >> 21 & 1 != 0,
        }
    }
    /// Bits no field uses (a write setting them is refused by `pmusim decode`, kept as zero
    /// by the hardware).
    pub const RESERVED: u64 = !0x3f_f33f;

    /// Checks the configuration against a UPC_P's events: the event exists, and edge and
    /// polarity are asked only of level events. `what` names the counter in the error.
    pub fn check_p(&self, what: &str) -> Result<&'static events::PEvent, Error> {
        let g = Group::from_code(self.group as u64).ok_or_else(|| {
            Error::input(format!(
                "{what}: event group {} does not exist (0 A2, 1 opcode, 2 L1P)",
                self.group
            ))
        })?;
        let e = events::p_event(g, self.event).ok_or_else(|| {
            Error::input(format!(
                "{what}: group {} has no event {} in pmusim (see docs/upc.md, Events)",
                g.name(),
                self.event
            ))
        })?;
        if (self.edge || self.invert) && !e.level {
            return Err(Error::input(format!(
                "{what}: edge and invert apply to level events; {} is a pulse",
                e.name
            )));
        }
        Ok(e)
    }
}

/// A local counter's data register as read: the count (`width` bits), the armed bit at
/// `width` and the big-overflow bit at `width + 1` (the driver: count in the low 14 bits,
/// armed and big overflow above it).
pub fn data_word(count: u64, armed: bool, big_ovf: bool, width: u32) -> u64 {
    count | (armed as u64) << width | (big_ovf as u64) << (width + 1)
}

/// UPC_P control register: bit 0 run (write 1: every counter's run bit set, the whole unit's
/// start; read: some counter's run bit is on), bit 1 reset (write 1: every local counter to 0,
/// flags cleared), bit 2 disconnected (below), bit 3 stop (write 1: every run bit cleared; with
/// run, stop wins). A write of 0 to run or stop leaves the run bits as they are, so setting
/// `P_DISCON` does not start or stop anyone's counters; [`P_RUN_W1S`] and [`P_RUN_W1C`] reach
/// single counters.
pub const P_RUN: u64 = 1;
pub const P_RESET: u64 = 2;
pub const P_STOP: u64 = 8;
/// pmusim's: the UPC_P leaves the chain (the driver's `UPC_P__CONFIG__JOIN_RING` clear, its
/// counter mode `UPC_CM_DISCON`, which BGPM's low-latency mode uses): its counters' slots hand
/// nothing to UPC_C, so each 14-bit register counts alone, its big-overflow bit set on a wrap.
pub const P_DISCON: u64 = 4;

/// UPC_C control register.
///
/// | bits | field |
/// | --- | --- |
/// | 0 | run: writing it sends the synchronous start (1) or stop (0) down the chain |
/// | 1 | reset on enable: units clear their local counters when the start reaches them |
/// | 2 | L2 combine: every slice's counter `i` accumulates into the same SRAM counter |
/// | 4..5 | mode: 0 distributed, 1 detailed |
/// | 8..13 | Mode 1 owner: the chain position of the unit that owns the chain |
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CControl {
    pub run: bool,
    pub reset_on_enable: bool,
    pub l2_combine: bool,
    pub mode: u8,
    pub owner: u8,
}

impl CControl {
    pub fn encode(&self) -> u64 {
        self.run as u64
            | (self.reset_on_enable as u64) << 1
            | (self.l2_combine as u64) << 2
            | (self.mode as u64 & 3) << 4
            | (self.owner as u64 & 0x3f) << 8
    }
    pub fn decode(v: u64) -> CControl {
        CControl {
            run: v & 1 != 0,
            reset_on_enable: v >> 1 & 1 != 0,
            l2_combine: v >> 2 & 1 != 0,
            mode: (v >> 4 & 3) as u8,
            owner: (v >> 8 & 0x3f) as u8,
        }
    }
}

/// UPC_C accumulate control register (patent: "add counter groups to each other and place
/// the result in a third counter group"): group A (bits 0..5) + group B (8..13) into group C
/// (16..21), counters selected by the 16-bit mask of `C_ACCUM_MASK`; writing it with bit 31
/// set performs the addition, and B may be subtracted instead with bit 30 (the patent's
/// example: taking speculative counts out).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Accum {
    pub a: u8,
    pub b: u8,
    pub c: u8,
    pub subtract: bool,
    pub go: bool,
}

impl Accum {
    pub fn encode(&self) -> u64 {
        (self.a as u64 & 0x3f)
            | (self.b as u64 & 0x3f) << 8
            | (self.c as u64 & 0x3f) << 16
            | (self.subtract as u64) << 30
            | (self.go as u64) << 31
    }
    pub fn decode(v: u64) -> Accum {
        Accum {
            a: (v & 0x3f) as u8,
            b: (v >> 8 & 0x3f) as u8,
            c: (v >> 16 & 0x3f) as u8,
            subtract: v >> 30 & 1 != 0,
            go: v >> 31 & 1 != 0,
        }
    }
}

fn parse_value(value: &str) -> Result<u64, Error> {
    let v = value.trim().replace('_', "");
    let r = if let Some(h) = v.strip_prefix("0x").or_else(|| v.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else {
        v.parse()
    };
    r.map_err(|_| {
        Error::input(format!(
            "decode: `{value}` is not a number (decimal or 0x hex)"
        ))
    })
}

/// The register names `pmusim decode` knows.
pub const NAMES: &[&str] = &[
    "UPC_P_CFG",
    "UPC_P_DATA",
    "UPC_P_CONTROL",
    "UPC_P_INT_STATUS",
    "UPC_P_CINT_ENABLE",
    "UPC_P_RUN_W1S",
    "UPC_P_RUN_W1C",
    "UPC_P_FP_WEIGHTS",
    "UPC_L2_CFG",
    "UPC_L2_DATA",
    "UPC_C_CONTROL",
    "UPC_C_ACCUM",
    "UPC_C_ACCUM_MASK",
    "UPC_C_SRAM",
    "UPC_C_FRAME",
];

/// The bits each register other than the counter configurations defines (the rest are
/// reserved: `decode` refuses a value with any of them set).
fn defined_bits(reg: &str) -> u64 {
    match reg {
        "UPC_P_DATA" => 0xffff,
        "UPC_L2_DATA" => 0xfff,
        "UPC_P_CONTROL" => P_RUN | P_RESET | P_DISCON | P_STOP,
        "UPC_P_INT_STATUS" => 0xff_ffff,
        "UPC_P_CINT_ENABLE" => 0xf,
        "UPC_P_RUN_W1S" | "UPC_P_RUN_W1C" => RUN_MASK,
        "UPC_P_FP_WEIGHTS" => 0xf,
        "UPC_C_CONTROL" => 0b111 | 0b11 << 4 | 0x3f << 8,
        "UPC_C_ACCUM" => 0x3f | 0x3f << 8 | 0x3f << 16 | 1 << 30 | 1 << 31,
        "UPC_C_ACCUM_MASK" => 0xffff,
        "UPC_C_FRAME" => 0xffff,
        _ => !0,
    }
}

/// `pmusim decode REG VALUE` for the UPC's registers (names with an optional counter number:
/// `UPC_P_CFG`, `UPC_P_CFG5`).
pub fn decode(reg: &str, value: &str) -> Option<Result<String, Error>> {
    let up = reg.to_ascii_uppercase();
    let base = up.trim_end_matches(|c: char| c.is_ascii_digit());
    if !NAMES.contains(&base) {
        return None;
    }
    Some(parse_value(value).and_then(|v| decode_value(base, v)))
}

fn decode_value(reg: &str, v: u64) -> Result<String, Error> {
    let reserved = v & !defined_bits(reg);
    if reserved != 0 {
        return Err(Error::input(format!(
            "decode: {reg} = {v:#x} sets reserved bits {reserved:#x} (docs/upc.md, Registers)"
        )));
    }
    let mut out = format!("{reg} = {v:#x}\n");
    let mut line = |s: String| {
        out.push_str("  ");
        out.push_str(&s);
        out.push('\n');
    };
    match reg {
        "UPC_P_CFG" | "UPC_L2_CFG" => {
            let c = CounterCfg::decode(v);
            line(format!("enable          {}", c.enable as u8));
            if reg == "UPC_P_CFG" {
                let g = Group::from_code(c.group as u64);
                let ev = g.and_then(|g| events::p_event(g, c.event));
                line(format!(
                    "group           {} ({})",
                    c.group,
                    g.map(|g| g.name()).unwrap_or("reserved")
                ));
                line(format!(
                    "event           {} ({})",
                    c.event,
                    ev.map(|e| e.name).unwrap_or("not produced by pmusim")
                ));
                line(format!(
                    "thread mask     {:04b} (threads {})",
                    c.threads,
                    (0..4)
                        .filter(|k| c.threads >> k & 1 != 0)
                        .map(|k| k.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                ));
                line(format!("edge            {}", c.edge as u8));
                line(format!("invert          {}", c.invert as u8));
            } else {
                line(format!(
                    "event           {} ({})",
                    c.event,
                    events::l2_name(c.event, false)
                ));
            }
            line(format!("sync override   {}", c.sync_override as u8));
            line(format!("interrupt       {}", c.int_enable as u8));
            line(format!("freeze          {}", c.freeze as u8));
            if v & CounterCfg::RESERVED != 0 {
                return Err(Error::input(format!(
                    "decode {reg}: reserved bits set ({:#x})",
                    v & CounterCfg::RESERVED
                )));
            }
        }
        "UPC_P_DATA" | "UPC_L2_DATA" => {
            let w = if reg == "UPC_P_DATA" { 14 } else { 10 };
            line(format!("count           {} ({w} bits)", v & ((1 << w) - 1)));
            line(format!("armed           {}", v >> w & 1));
            line(format!("big overflow    {}", v >> (w + 1) & 1));
        }
        "UPC_P_CONTROL" => {
            line(format!("run             {}", v & P_RUN));
            line(format!("reset           {}", (v & P_RESET) >> 1));
            line(format!("disconnected    {}", (v & P_DISCON) >> 2));
            line(format!("stop            {}", (v & P_STOP) >> 3));
        }
        "UPC_P_INT_STATUS" => {
            let bits: Vec<String> = (0..24)
                .filter(|k| v >> k & 1 != 0)
                .map(|k| k.to_string())
                .collect();
            line(format!("overflowed      counters [{}]", bits.join(",")));
        }
        "UPC_P_RUN_W1S" | "UPC_P_RUN_W1C" => {
            let bits: Vec<String> = (0..24)
                .filter(|k| v >> k & 1 != 0)
                .map(|k| k.to_string())
                .collect();
            let verb = if reg == "UPC_P_RUN_W1S" {
                "starts"
            } else {
                "stops"
            };
            line(format!("{verb} counters  [{}]", bits.join(",")));
        }
        "UPC_P_FP_WEIGHTS" => {
            let w = FpWeights::decode(v);
            line(format!(
                "divide weight   {} ({} flops per divide)",
                w.div,
                1 << w.div
            ));
            line(format!(
                "sqrt weight     {} ({} flops per square root)",
                w.sqrt,
                1 << w.sqrt
            ));
        }
        "UPC_P_CINT_ENABLE" => {
            let bits: Vec<String> = (0..4)
                .filter(|k| v >> k & 1 != 0)
                .map(|k| k.to_string())
                .collect();
            line(format!("UPC_C interrupts to threads [{}]", bits.join(",")));
        }
        "UPC_C_CONTROL" => {
            let c = CControl::decode(v);
            line(format!("run             {}", c.run as u8));
            line(format!("reset on enable {}", c.reset_on_enable as u8));
            line(format!("L2 combine      {}", c.l2_combine as u8));
            line(format!("mode            {}", c.mode));
            line(format!("mode 1 owner    chain position {}", c.owner));
        }
        "UPC_C_ACCUM" => {
            let a = Accum::decode(v);
            line(format!(
                "group {} {} group {} -> group {}",
                a.a,
                if a.subtract { "-" } else { "+" },
                a.b,
                a.c
            ));
            line(format!("go              {}", a.go as u8));
        }
        "UPC_C_ACCUM_MASK" => {
            line(format!(
                "counters        {:016b} (bit i: counter i of each group)",
                v & 0xffff
            ));
        }
        "UPC_C_SRAM" => {
            line(format!("count           {v} (64 bits)"));
        }
        "UPC_C_FRAME" => {
            line(format!(
                "frame count     {v} (x2 cycles into the chain's frame, 0..period-1)"
            ));
        }
        _ => unreachable!(),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every field of the counter configuration round-trips at its documented position.
    #[test]
    fn counter_cfg_round_trips_at_documented_bits() {
        let c = CounterCfg {
            event: 0x2a,
            group: 2,
            threads: 0b1010,
            edge: true,
            invert: false,
            sync_override: true,
            int_enable: false,
            freeze: true,
            enable: true,
        };
        let v = c.encode();
        assert_eq!(
            v,
            0x2a | 2 << 8 | 0b1010 << 12 | 1 << 16 | 1 << 18 | 1 << 20 | 1 << 21
        );
        assert_eq!(CounterCfg::decode(v), c);
        assert_eq!(v & CounterCfg::RESERVED, 0);
        for bit in 0..22 {
            let one = CounterCfg::decode(1 << bit);
            assert_eq!(
                one.encode() == 1 << bit,
                CounterCfg::RESERVED >> bit & 1 == 0,
                "bit {bit}"
            );
        }
        let cc = CControl {
            run: true,
            reset_on_enable: false,
            l2_combine: true,
            mode: 1,
            owner: 20,
        };
        assert_eq!(cc.encode(), 1 | 4 | 1 << 4 | 20 << 8);
        assert_eq!(CControl::decode(cc.encode()), cc);
        let a = Accum {
            a: 3,
            b: 40,
            c: 63,
            subtract: true,
            go: true,
        };
        assert_eq!(a.encode(), 3 | 40 << 8 | 63 << 16 | 1 << 30 | 1 << 31);
        assert_eq!(Accum::decode(a.encode()), a);
        assert_eq!(data_word(0x1234, true, false, 14), 0x1234 | 1 << 14);
    }

    #[test]
    fn decode_names_fields_and_refuses_reserved_bits() {
        let v = CounterCfg {
            event: events::a2::LD_MISS,
            group: 0,
            threads: 0b0011,
            enable: true,
            ..Default::default()
        }
        .encode();
        let s = decode("upc_p_cfg3", &format!("{v:#x}")).unwrap().unwrap();
        assert!(s.contains("PEVT_LSU_COMMIT_LD_MISSES"), "{s}");
        assert!(s.contains("threads 0,1"), "{s}");
        let e = decode("UPC_P_CFG", "0x80000000").unwrap().unwrap_err();
        assert!(e.msg.contains("reserved bits"), "{}", e.msg);
        assert!(decode("GPCM0", "1").is_none());
        let e = decode("UPC_C_CONTROL", "zz").unwrap().unwrap_err();
        assert_eq!(e.code, 2);
    }

    /// Every register `pmusim decode` names decodes its fields, and refuses reserved bits.
    #[test]
    fn decode_every_register() {
        let op = CounterCfg {
            event: events::op::ALL,
            group: 1,
            threads: 0xf,
            enable: true,
            ..Default::default()
        }
        .encode();
        let cases: &[(&str, u64, &str, u64)] = &[
            ("UPC_P_CFG", op, "PEVT_INST_ALL", 1 << 40),
            ("UPC_P_DATA", 0x1234 | 1 << 14, "armed           1", 1 << 16),
            (
                "UPC_P_CONTROL",
                13,
                "disconnected    1\n  stop            1",
                16,
            ),
            ("UPC_P_INT_STATUS", 0b101, "counters [0,2]", 1 << 24),
            ("UPC_P_CINT_ENABLE", 0b1001, "threads [0,3]", 1 << 4),
            (
                "UPC_P_RUN_W1S",
                1 << 4 | 1 << 23,
                "starts counters  [4,23]",
                1 << 24,
            ),
            ("UPC_P_RUN_W1C", 0b11, "stops counters  [0,1]", 1 << 32),
            (
                "UPC_P_FP_WEIGHTS",
                0b0111,
                "sqrt weight     1 (2 flops",
                1 << 4,
            ),
            ("UPC_L2_CFG", 0x20_0001, "enable          1", 1 << 40),
            ("UPC_L2_DATA", 0x3ff | 1 << 11, "big overflow    1", 1 << 12),
            (
                "UPC_C_CONTROL",
                1 | 1 << 4 | 5 << 8,
                "chain position 5",
                1 << 3,
            ),
            (
                "UPC_C_ACCUM",
                3 | 40 << 8 | 63 << 16 | 1 << 30,
                "group 3 - group 40 -> group 63",
                1 << 7,
            ),
            ("UPC_C_ACCUM_MASK", 0x8001, "1000000000000001", 1 << 16),
            ("UPC_C_SRAM", u64::MAX, "18446744073709551615", 0),
            ("UPC_C_FRAME", 399, "frame count     399", 1 << 16),
        ];
        assert_eq!(cases.len(), NAMES.len());
        for &(reg, v, want, bad) in cases {
            let s = decode(reg, &format!("{v:#x}")).unwrap().unwrap();
            assert!(s.contains(want), "{reg}: {s}");
            if bad != 0 {
                let e = decode(reg, &format!("{:#x}", v | bad))
                    .unwrap()
                    .unwrap_err();
                assert!(e.msg.contains("reserved bits"), "{reg}: {}", e.msg);
            }
        }
    }
}
