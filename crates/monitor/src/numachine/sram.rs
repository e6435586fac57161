//! The 64K x 32-bit SRAM counters, the Count & Increment device and the SRAM address
//! generation (seed 000, 4.3.4, 4.3.5, 4.4.5, Tables 4.6-4.9, Figure 4.9).
//!
//! C&Inc functions: *increment* (fetch, add one, write back: SCM bit 10 set, one count per
//! event occurrence), *extended count* (SCM bit 10 clear with event 1, "count always": the word
//! at the current address is incremented every monitor cycle while the count enable holds, e.g.
//! cycles per PhaseID / basic block) and *accumulate* (the mode the original left unimplemented,
//! Table 4.10 item 23: a word written by the processor to the accumulate register is added to
//! the addressed word; pmusim selects it with SCM event 7, reserved in the seed).
//!
//! Address generation. Figure 4.9 is not in the seed; pmusim builds the 16-bit address as:
//! - mode 0 (secondary cache): the L2 set index of the access (low 16 bits); with the split I/D
//!   option (the R4400's configuration, not an MCC register) instruction fetches set bit 15;
//! - mode 1 (latency timer): `PR[3..0] << 12 | latency12` when muxPRlo is set, else
//!   `latency12` alone;
//! - mode 2 (MCC): start from the Address-Mode value `A = AR[39..32] << 8 | AR[26..19]`, split
//!   as hi5 = bits 15..11, mid7 = bits 10..4, lo4 = bits 3..0; muxPRhi/muxPRmid/muxPRlo replace
//!   their slice with PR[15..11]/PR[10..4]/PR[3..0]; muxRSR replaces hi5 with the 5-bit RSR;
//!   muxMISS replaces lo4[1..0] with the 2-bit MTR. All mux bits zero is the seed's 'Address
//!   Mode' (AR[39..32,26..19]); all three PR muxes give the full 16-bit PhaseID (basic-block
//!   counting, item 22);
//! - mode 3 (compact latency): bits 6..0 = the compact latency code, bits 10..7 = PR[3..0] if
//!   muxPRlo (with MTR in bits 8..7 if muxMISS), bits 15..11 = RSR if muxRSR, else PR[15..11]
//!   if muxPRhi, else 0.
//!
//! Note: AR[26..19] selects 512 KiB blocks although the seed says the Address Mode counts
//! "secondary-cache sized blocks (1 MB)"; pmusim follows the bit numbers.

use super::regs::{Field, SRAM_WORDS};
use crate::latency;

const F_IRQ: Field = Field::new("interrupt", 22, 22, "");
const F_MODE: Field = Field::new("mode", 21, 20, "");
const F_EVENT: Field = Field::new("event", 14, 11, "");

pub const SEV_NOTHING: u8 = 0;
pub const SEV_ALWAYS: u8 = 1;
pub const SEV_L2_ACCESS: u8 = 2;
pub const SEV_L2_READ: u8 = 3;
pub const SEV_L2_WRITE: u8 = 4;
pub const SEV_L2_MISS: u8 = 5;
pub const SEV_LINE_REQUESTS: u8 = 6;
pub const SEV_ACCUMULATE: u8 = 7;

/// An SCM value, decoded once per register write.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SramMode {
    pub interrupt: bool,
    pub mode: u8,
    pub mux_miss: bool,
    pub mux_rsr: bool,
    pub mux_pr_hi: bool,
    pub mux_pr_mid: bool,
    pub mux_pr_lo: bool,
    pub event: u8,
    pub edges: bool,
    pub enable_bits: u32,
}

impl SramMode {
    pub fn decode(v: u32) -> SramMode {
        SramMode {
            interrupt: F_IRQ.get(v) != 0,
            mode: F_MODE.get(v) as u8,
            mux_miss: v & 1 << 19 != 0,
            mux_rsr: v & 1 << 18 != 0,
            mux_pr_hi: v & 1 << 17 != 0,
            mux_pr_mid: v & 1 << 16 != 0,
            mux_pr_lo: v & 1 << 15 != 0,
            event: F_EVENT.get(v) as u8,
            edges: v & 1 << 10 != 0,
            enable_bits: v & 0x3FF,
        }
    }
}

/// What the address generator sees.
#[derive(Clone, Copy, Debug, Default)]
pub struct AddrInputs {
    pub pr: u16,
    pub ar: u64,
    pub rsr: u8,
    pub mtr: u8,
    /// Latency-timer value (monitor cycles, 12 bits).
    pub latency: u16,
    pub l2_index: u32,
    pub ifetch: bool,
}

/// The 'Address Mode' value AR[39..32,26..19].
pub fn address_mode(ar: u64) -> u16 {
    (((ar >> 32) & 0xFF) << 8 | ((ar >> 19) & 0xFF)) as u16
}

/// The SRAM address for the current mode (see the module documentation).
#[inline]
pub fn address(m: &SramMode, split_id: bool, x: &AddrInputs) -> u16 {
    let pr = x.pr;
    match m.mode {
        0 => {
            let a = (x.l2_index & 0xFFFF) as u16;
            if split_id && x.ifetch {
                a | 0x8000
            } else {
                a
            }
        }
        1 => {
            let lo = if m.mux_pr_lo { pr & 0xF } else { 0 };
            lo << 12 | (x.latency & 0xFFF)
        }
        2 => {
            let a = address_mode(x.ar);
            let mut hi5 = a >> 11;
            let mut mid7 = (a >> 4) & 0x7F;
            let mut lo4 = a & 0xF;
            if m.mux_pr_hi {
                hi5 = pr >> 11;
            }
            if m.mux_pr_mid {
                mid7 = (pr >> 4) & 0x7F;
            }
            if m.mux_pr_lo {
                lo4 = pr & 0xF;
            }
            if m.mux_rsr {
                hi5 = (x.rsr & 0x1F) as u16;
            }
            if m.mux_miss {
                lo4 = (lo4 & 0xC) | (x.mtr & 3) as u16;
            }
            hi5 << 11 | mid7 << 4 | lo4
        }
        _ => {
            let hi5 = if m.mux_rsr {
                (x.rsr & 0x1F) as u16
            } else if m.mux_pr_hi {
                pr >> 11
            } else {
                0
            };
            let mut mid4 = if m.mux_pr_lo { pr & 0xF } else { 0 };
            if m.mux_miss {
                mid4 = (mid4 & 0xC) | (x.mtr & 3) as u16;
            }
            hi5 << 11 | mid4 << 7 | latency::compact(x.latency) as u16
        }
    }
}

/// The SRAM array with its overflow bookkeeping.
#[derive(Clone, Debug)]
pub struct Sram {
    pub words: Vec<u32>,
    /// Word wraps (each one an overflow; interrupts if SCM bit 22).
    pub overflows: u64,
    pub last_overflow: u16,
    /// The value every word was preloaded with (0, or -threshold), so reports can show counts.
    pub preload: u32,
    /// One bit per block of 64 words that may differ from the preload (set by every count
    /// and program write): the reports read only those blocks, not 64K words per card (a
    /// monitor that never counted in its SRAM costs its report nothing).
    touched: [u64; SRAM_WORDS / 64 / 64],
}

impl Default for Sram {
    fn default() -> Self {
        Sram {
            words: vec![0; SRAM_WORDS],
            overflows: 0,
            last_overflow: 0,
            preload: 0,
            touched: [0; SRAM_WORDS / 64 / 64],
        }
    }
}

impl Sram {
    /// C&Inc: adds `n` to word `a`; returns true if it wrapped.
    #[inline]
    pub fn add(&mut self, a: u16, n: u32) -> bool {
        self.touch(a);
        let w = &mut self.words[a as usize];
        let (v, o) = w.overflowing_add(n);
        *w = v;
        if o {
            self.overflows += 1;
            self.last_overflow = a;
        }
        o
    }
    /// Preloads every word with `-threshold` (cache-profile watch-points, item 11).
    pub fn preload_threshold(&mut self, threshold: u32) {
        let v = threshold.wrapping_neg();
        self.preload = v;
        self.words.iter_mut().for_each(|w| *w = v);
    }
    /// Marks word `a`'s block as possibly changed.
    #[inline(always)]
    fn touch(&mut self, a: u16) {
        self.touched[(a >> 12) as usize] |= 1 << ((a >> 6) & 63);
    }
    /// The program writes word `a` (an uncached store to the SRAM window).
    pub fn write(&mut self, a: u16, v: u32) {
        self.touch(a);
        self.words[a as usize] = v;
    }
    /// Words that counted, as (address, count since the preload), for reports. A word that
    /// wrapped past its threshold shows the count modulo 2^32 (its overflow was signalled).
    pub fn nonzero(&self) -> Vec<(u16, u32)> {
        let p = self.preload;
        let mut out = Vec::new();
        for (i, &bits) in self.touched.iter().enumerate() {
            let mut b = bits;
            while b != 0 {
                let base = (i * 64 + b.trailing_zeros() as usize) * 64;
                b &= b - 1;
                for (k, &w) in self.words[base..base + 64].iter().enumerate() {
                    if w != p {
                        out.push(((base + k) as u16, w.wrapping_sub(p)));
                    }
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn address_modes() {
        let x = AddrInputs {
            #[allow(clippy::unusual_byte_groupings)] // grouped as the PR fields hi5, mid7, lo4
            pr: 0b10101_0110011_1001,
            ar: 0xA5_0000_0000 | (0x3C << 19),
            rsr: 0b10110,
            mtr: 2,
            latency: 100,
            l2_index: 0x1234,
            ifetch: true,
        };
        let m = |v: u32| SramMode::decode(v);
        assert_eq!(address(&m(0), false, &x), 0x1234);
        assert_eq!(address(&m(0), true, &x), 0x9234);
        assert_eq!(address(&m(1 << 20), false, &x), 100);
        assert_eq!(address(&m(1 << 20 | 1 << 15), false, &x), 0x9000 | 100);
        // All-zero MCC controls: the Address Mode.
        assert_eq!(address(&m(2 << 20), false, &x), 0xA53C);
        // Full PhaseID.
        assert_eq!(address(&m(2 << 20 | 7 << 15), false, &x), x.pr);
        // RSR replaces hi5, MTR the low two bits.
        let a = address(&m(2 << 20 | 1 << 18 | 1 << 19), false, &x);
        assert_eq!(a >> 11, 0b10110);
        assert_eq!(a & 3, 2);
        // Compact: RSR | PR lo | code.
        let a = address(&m(3 << 20 | 1 << 18 | 1 << 15), false, &x);
        assert_eq!(
            a,
            0b10110 << 11 | 0b1001 << 7 | crate::latency::compact(100) as u16
        );
    }
    /// The block bitmap finds every word that differs from the preload, in address order.
    #[test]
    fn nonzero_reads_every_counted_word() {
        let mut s = Sram::default();
        assert!(s.nonzero().is_empty());
        for a in [0u16, 63, 64, 4095, 4096, 40_000, 65_535] {
            s.add(a, a as u32 + 1);
        }
        s.write(777, 5);
        s.add(1000, 0);
        let scan: Vec<(u16, u32)> = s
            .words
            .iter()
            .enumerate()
            .filter(|(_, w)| **w != 0)
            .map(|(a, w)| (a as u16, *w))
            .collect();
        assert_eq!(s.nonzero(), scan);
        assert_eq!(scan.len(), 8);
    }
    #[test]
    fn wrap_and_threshold() {
        let mut s = Sram::default();
        s.preload_threshold(3);
        assert!(!s.add(7, 1));
        assert!(!s.add(7, 1));
        assert!(s.add(7, 1));
        assert_eq!((s.overflows, s.last_overflow, s.words[7]), (1, 7, 0));
    }
}
