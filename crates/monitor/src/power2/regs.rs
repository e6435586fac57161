//! The POWER2 monitor's registers: the Monitor Mode Control Register (MMCR) layout, the
//! programmed-I/O map of the MMCR, IMR, SPE bit, status and the 22 counters, and their decoding
//! in words (`pmusim decode MMCR 0x...`).
//!
//! # MMCR (32 bits, bit 0 = least significant, as PAPI's `stuff_mmcr` shifts them)
//!
//! | bits  | field | meaning |
//! | ----- | ----- | ------- |
//! | 0-3   | FPUSEL | FPU group (0-15) |
//! | 4-7   | FXUSEL | FXU group |
//! | 8-11  | ICUSEL | ICU group |
//! | 12-15 | SCUSEL | SCU group (15: the FXU's companion group, the special exception) |
//! | 16    | PMIE  | interrupt (vector [`VECTOR`]) when a counter overflows |
//! | 17    | FOO   | freeze all counters when a counter overflows (sets FREEZE) |
//! | 18-27 | -     | reserved, read as written |
//! | 28    | MARKED | count only while MSR[PM] = 1 (the process is marked) |
//! | 29    | NOPROB | do not count in problem state (MSR[PR] = 1, user): supervisor only |
//! | 30    | NOSUP | do not count in supervisor state: user only |
//! | 31    | FREEZE | counters frozen |
//!
//! Bits 29 and 30 are where PAPI's `set_mmcr_domain` puts its domains (`PAPI_DOM_KERNEL` leaves
//! 0x2000_0000, `PAPI_DOM_USER` 0x4000_0000, `PAPI_DOM_ALL` neither) and bit 31 is clear after
//! each of them (a running monitor). Both 29 and 30 set count nothing.

use super::events::{counter_of, Sig, Unit, COUNTERS, TABLE};
use crate::plugin::Error;

/// Byte offset of the POWER2 monitor's registers in the processor card's monitor window
/// (`uncached::MONITOR_BASE`), above the NUMAchine card's 512 KiB so that both can be attached.
pub const BASE: u64 = 0x10_0000;
/// Bytes of the register region.
pub const REGION: u64 = 0x200;
/// MMCR (word).
pub const MMCR: u64 = 0x00;
/// Instruction Match Register (word): opcode bits 0-7, mask bits 8-15.
pub const IMR: u64 = 0x08;
/// Software Programmable Event bit (bit 0 of the word).
pub const SPE: u64 = 0x10;
/// Overflow status (bit i: counter i overflowed); a read returns it and clears it.
pub const STATUS: u64 = 0x18;
/// Counter i (word) at `COUNTER0 + 4 i`.
pub const COUNTER0: u64 = 0x100;
/// The interrupt vector raised on overflow when PMIE is set.
pub const VECTOR: u32 = 0x0F00;

pub const PMIE: u32 = 1 << 16;
pub const FOO: u32 = 1 << 17;
pub const MARKED: u32 = 1 << 28;
pub const NOPROB: u32 = 1 << 29;
pub const NOSUP: u32 = 1 << 30;
pub const FREEZE: u32 = 1 << 31;

/// The counting mode the MMCR's bits 28-30 give.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    All,
    User,
    Supervisor,
    /// Bits 29 and 30 both set.
    Nothing,
}

/// The MMCR's fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Mmcr(pub u32);

impl Mmcr {
    pub fn group(self, u: Unit) -> u8 {
        ((self.0 >> u.shift()) & 0xF) as u8
    }
    pub fn with_group(self, u: Unit, g: u8) -> Mmcr {
        Mmcr(self.0 & !(0xF << u.shift()) | ((g as u32 & 0xF) << u.shift()))
    }
    pub fn mode(self) -> Mode {
        match (self.0 & NOPROB != 0, self.0 & NOSUP != 0) {
            (false, false) => Mode::All,
            (false, true) => Mode::User,
            (true, false) => Mode::Supervisor,
            (true, true) => Mode::Nothing,
        }
    }
    pub fn marked_only(self) -> bool {
        self.0 & MARKED != 0
    }
    pub fn frozen(self) -> bool {
        self.0 & FREEZE != 0
    }
    /// Whether an event of a thread in this state counts.
    #[inline]
    pub fn counts(self, supervisor: bool, marked: bool) -> bool {
        if self.0 & FREEZE != 0 || (self.0 & MARKED != 0 && !marked) {
            return false;
        }
        let off = if supervisor { NOSUP } else { NOPROB };
        self.0 & off == 0
    }

    /// The signal of every counter: 0 cycles, 1 instructions, then each unit's group. The
    /// special exception: SCU group 15 counts the FXU's companion group (the FXU's group with
    /// its lowest bit flipped), so one run can see ten FXU events.
    pub fn signals(self) -> [Sig; COUNTERS] {
        let mut s = [Sig::CYCLES; COUNTERS];
        s[1] = Sig::INSTR;
        for (i, slot) in s.iter_mut().enumerate().skip(2) {
            let (u, num) = counter_of(i).expect("counter >= 2");
            *slot = self.source(u).map_or_else(
                || TABLE[u as usize][self.group(u) as usize][num - 2],
                |(su, g)| TABLE[su as usize][g as usize][num - 2],
            );
        }
        s
    }

    /// Where a unit's counters take their events from when not from its own group: the SCU at
    /// group 15 takes the FXU's companion group.
    pub fn source(self, u: Unit) -> Option<(Unit, u8)> {
        (u == Unit::Scu && self.group(Unit::Scu) == 15)
            .then(|| (Unit::Fxu, self.group(Unit::Fxu) ^ 1))
    }

    /// The MMCR in words, field by field.
    pub fn describe(self) -> String {
        let mut s = format!("MMCR = {:#010x}\n", self.0);
        for u in Unit::ALL {
            let g = self.group(u);
            let from = match self.source(u) {
                Some((su, sg)) => format!(
                    " (the special exception: counts {} group {sg}, the FXU's companion group)",
                    su.name()
                ),
                None => String::new(),
            };
            let (su, sg) = self.source(u).unwrap_or((u, g));
            let ev: Vec<&str> = TABLE[su as usize][sg as usize]
                .iter()
                .map(|s| s.name())
                .collect();
            s += &format!(
                "  bits {:>2}-{:<2} {}SEL  = {g:>2}{from}: counters 2-6 = {}\n",
                u.shift(),
                u.shift() + 3,
                u.name(),
                ev.join(", ")
            );
        }
        let flag = |b: u32| if self.0 & b != 0 { 1 } else { 0 };
        s += &format!(
            "  bit  16    PMIE   = {}  interrupt on counter overflow\n",
            flag(PMIE)
        );
        s += &format!(
            "  bit  17    FOO    = {}  freeze the counters on overflow\n",
            flag(FOO)
        );
        if self.0 & 0x0FFC_0000 != 0 {
            s += &format!(
                "  bits 18-27 reserved = {:#x} (kept, no effect)\n",
                (self.0 >> 18) & 0x3FF
            );
        }
        s += &format!(
            "  bit  28    MARKED = {}  count only while MSR[PM] = 1 (marked process)\n",
            flag(MARKED)
        );
        s += &format!(
            "  bit  29    NOPROB = {}  do not count in problem (user) state\n",
            flag(NOPROB)
        );
        s += &format!(
            "  bit  30    NOSUP  = {}  do not count in supervisor state\n",
            flag(NOSUP)
        );
        s += &format!("  bit  31    FREEZE = {}  counters frozen\n", flag(FREEZE));
        let mode = match self.mode() {
            Mode::All => "user and supervisor",
            Mode::User => "user (problem state) only",
            Mode::Supervisor => "supervisor only",
            Mode::Nothing => "nothing (both states excluded)",
        };
        s += &format!(
            "  counting: {mode}{}{}\n",
            if self.marked_only() {
                ", marked processes only"
            } else {
                ""
            },
            if self.frozen() { " (frozen now)" } else { "" }
        );
        s
    }
}

/// The Instruction Match Register: an instruction whose opcode `op` has `(op ^ opcode) & mask
/// == 0` matches (mask 0 matches every instruction).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Imr {
    pub opcode: u8,
    pub mask: u8,
}

impl Imr {
    pub fn from_word(v: u32) -> Imr {
        Imr {
            opcode: v as u8,
            mask: (v >> 8) as u8,
        }
    }
    pub fn word(self) -> u32 {
        self.opcode as u32 | (self.mask as u32) << 8
    }
    #[inline]
    pub fn matches(self, op: u8) -> bool {
        (op ^ self.opcode) & self.mask == 0
    }
}

/// Parses a register value (decimal, 0x hex, 0b binary; `_` separators).
pub fn parse_value(v: &str) -> Result<u64, Error> {
    let t = v.trim().replace('_', "");
    let r = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16)
    } else if let Some(b) = t.strip_prefix("0b") {
        u64::from_str_radix(b, 2)
    } else {
        t.parse()
    };
    r.map_err(|_| {
        Error::input(format!(
            "`{v}`: not a number (decimal, 0x hex or 0b binary)"
        ))
    })
}

/// `pmusim decode REG VALUE` for this monitor's registers.
pub fn decode(reg: &str, value: &str) -> Result<String, Error> {
    let v = parse_value(value)?;
    let word = |v: u64| -> Result<u32, Error> {
        u32::try_from(v)
            .map_err(|_| Error::input(format!("{reg}: {value} does not fit the 32-bit register")))
    };
    match reg.to_ascii_uppercase().as_str() {
        "MMCR" => Ok(Mmcr(word(v)?).describe()),
        "IMR" => {
            let i = Imr::from_word(word(v)?);
            Ok(format!(
                "IMR = {:#06x}\n  bits 0-7  opcode = {:#04x}\n  bits 8-15 mask   = {:#04x}\n  matches the instruction classes: {}\n",
                i.word(),
                i.opcode,
                i.mask,
                super::imr_matches(i).join(", ")
            ))
        }
        "STATUS" => {
            let w = word(v)?;
            let over: Vec<String> = (0..COUNTERS)
                .filter(|i| w >> i & 1 != 0)
                .map(|i| format!("PMC{i}"))
                .collect();
            Ok(format!(
                "STATUS = {w:#010x}\n  overflowed: {}\n",
                if over.is_empty() {
                    "none".to_string()
                } else {
                    over.join(", ")
                }
            ))
        }
        r => Err(Error::input(format!(
            "unknown POWER2 register `{r}`: the registers are MMCR, IMR, STATUS (and the counters PMC0-PMC21, plain 32-bit values)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The documented table, field by field, and PAPI's domain encodings.
    #[test]
    fn mmcr_fields_round_trip_the_documented_table() {
        for u in Unit::ALL {
            for g in 0..16u8 {
                let m = Mmcr(0xFFFF_FFFF).with_group(u, g);
                assert_eq!(m.group(u), g);
                assert_eq!(m.0 >> u.shift() & 0xF, g as u32);
                for o in Unit::ALL.into_iter().filter(|o| *o != u) {
                    assert_eq!(m.group(o), 15);
                }
            }
        }
        // PAPI's set_mmcr_domain: USER leaves 0x4000_0000, KERNEL 0x2000_0000, ALL none.
        assert_eq!(Mmcr(0x4000_0000).mode(), Mode::User);
        assert_eq!(Mmcr(0x2000_0000).mode(), Mode::Supervisor);
        assert_eq!(Mmcr(0).mode(), Mode::All);
        assert!(Mmcr(0x4000_0000).counts(false, false));
        assert!(!Mmcr(0x4000_0000).counts(true, false));
        assert!(Mmcr(0x2000_0000).counts(true, false));
        assert!(!Mmcr(0x2000_0000).counts(false, false));
        assert!(!Mmcr(MARKED).counts(false, false));
        assert!(Mmcr(MARKED).counts(true, true));
        assert!(!Mmcr(FREEZE).counts(false, false));
        assert!(!Mmcr(NOPROB | NOSUP).counts(false, true));
        // Group selects land where PAPI's stuff_mmcr puts them.
        let m = Mmcr(0).with_group(Unit::Fxu, 6).with_group(Unit::Icu, 3);
        assert_eq!(m.0, 0x0000_0360);
    }

    /// The special exception: SCU group 15 takes the FXU's companion group.
    #[test]
    fn scu_group_15_follows_the_fxu() {
        let m = Mmcr(0).with_group(Unit::Fxu, 6).with_group(Unit::Scu, 15);
        let s = m.signals();
        for num in 2..=6 {
            let i = super::super::events::counter_index(Unit::Scu, num);
            assert_eq!(s[i], TABLE[Unit::Fxu as usize][7][num - 2]);
        }
        let d = decode("MMCR", "0xF360").unwrap();
        assert!(d.contains("counts FXU group 7"), "{d}");
        assert!(decode("MMCR", "0x1_0000_0000").is_err());
        assert!(decode("XYZ", "1")
            .unwrap_err()
            .msg
            .contains("unknown POWER2 register"));
    }

    #[test]
    fn imr_matches_under_its_mask() {
        let i = Imr {
            opcode: 0b1010,
            mask: 0b1110,
        };
        assert!(i.matches(0b1010) && i.matches(0b1011));
        assert!(!i.matches(0b1000));
        assert_eq!(Imr::from_word(i.word()), i);
        assert!(Imr::default().matches(37));
    }
}
