//! The count-enable circuits (seed 000, 4.4.4 and Figure 4.7).
//!
//! Three comparators are shared by all counters: PR against PW, the filtered address
//! (AR & AF) against AW, the filtered command (CR & CF) against CW. Each counter (and the SRAM,
//! through SCM[10..0]) has its own count-enable circuit: per comparator an enable bit and an
//! invert bit, plus the sending/receiving masks. The circuit ANDs the enabled terms.
//!
//! Choices the seed leaves open (Figure 4.7 is not in the seed), documented here:
//! - a disabled term is true (it does not restrict), so a counter with bits 9..2 clear counts
//!   unconditionally;
//! - the invert bit XORs its own comparison only; "merging comparisons in an OR fashion" then
//!   follows from De Morgan on the inverted terms at the counter's use (not-A AND not-B);
//! - bits 9/8 ("enable masks below .. invert mask sense") gate the SM/RM term: the term is
//!   `(SM and the latched packet was sent) or (RM and it was received)`, XOR bit 8;
//! - the latched AR/CR/direction are those of the most recent packet through the external agent
//!   (4.4.2, 4.4.3); AR is 40 bits with Table 4.1's station address in bits 39..36.

use super::regs::Regs;

/// Direction of the most recent packet through the external agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Dir {
    #[default]
    None,
    Sending,
    Receiving,
}

/// The monitor's latched view of the external agent bus and the PhaseID register.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Latch {
    pub pr: u16,
    /// Address Register, 40 bits.
    pub ar: u64,
    /// Command Register, 13 bits.
    pub cr: u16,
    pub dir: Dir,
}

/// Outputs of the three shared comparators and the direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Compare {
    pub pw: bool,
    pub aw: bool,
    pub cw: bool,
    pub sending: bool,
    pub receiving: bool,
}

impl Compare {
    pub fn new(r: &Regs, l: &Latch) -> Compare {
        Compare {
            pw: l.pr == r.pw,
            aw: (l.ar & r.af()) == r.aw(),
            cw: (l.cr & r.cf) & 0x1FFF == r.cw,
            sending: l.dir == Dir::Sending,
            receiving: l.dir == Dir::Receiving,
        }
    }
}

/// One count-enable circuit: the low 10 bits of GPCMx or SCM.
#[inline]
pub fn enabled(bits: u32, c: &Compare) -> bool {
    let term =
        |en: u32, inv: u32, cond: bool| bits & (1 << en) == 0 || (cond ^ (bits & (1 << inv) != 0));
    let mask = (bits & 2 != 0 && c.sending) || (bits & 1 != 0 && c.receiving);
    term(7, 6, c.pw) && term(5, 4, c.aw) && term(3, 2, c.cw) && term(9, 8, mask)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn and_of_enabled_terms() {
        let mut r = Regs {
            pw: 3,
            cw: 0x32,
            cf: 0x3E,
            ..Regs::default()
        };
        r.af_lo = 0xFFFF_F000;
        r.aw_lo = 0x0001_0000;
        let l = Latch {
            pr: 3,
            ar: 0x1_0040,
            cr: 0x33,
            dir: Dir::Receiving,
        };
        let c = Compare::new(&r, &l);
        assert!(c.pw && c.aw && c.cw && c.receiving);
        assert!(enabled(0, &c));
        assert!(enabled(0b00_10_10_10_00, &c));
        assert!(!enabled(0b00_11_00_00_00, &c)); // inverted PW
        assert!(enabled(0b10_00_00_00_01, &c)); // RM
        assert!(!enabled(0b10_00_00_00_10, &c)); // SM only
        assert!(enabled(0b11_00_00_00_10, &c)); // SM inverted
        let l2 = Latch { pr: 4, ..l };
        let c2 = Compare::new(&r, &l2);
        assert!(!enabled(0b00_10_00_00_00, &c2));
        assert!(enabled(0b00_11_00_00_00, &c2));
    }
}
