//! Byte-valid masks of write-buffer entries: bit `i` says byte `i` of the entry is buffered.
//!
//! An entry is one block: a 16-byte block of words in the seed's word mode, a whole cache line
//! in line mode. The largest line of a preset is POWER2's 256 bytes (`presets/power2.toml`),
//! so a mask is 256 bits (four `u64`): copied by value, no allocation, on the path of every
//! buffered write and read.

use super::config::MAX_BLOCK_BYTES;

const WORDS: usize = MAX_BLOCK_BYTES as usize / 64;

/// Which bytes of a block (up to [`MAX_BLOCK_BYTES`]) are valid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ByteMask([u64; WORDS]);

impl ByteMask {
    /// No byte.
    pub const EMPTY: ByteMask = ByteMask([0; WORDS]);

    /// Bytes `off .. off + len` (clipped to the mask).
    #[inline]
    pub fn range(off: u32, len: u32) -> ByteMask {
        let (lo, hi) = (off.min(MAX_BLOCK_BYTES), (off + len).min(MAX_BLOCK_BYTES));
        let mut m = [0u64; WORDS];
        for (w, x) in m.iter_mut().enumerate() {
            let (a, b) = ((w as u32 * 64).max(lo), (w as u32 * 64 + 64).min(hi));
            if a < b {
                let n = b - a;
                let bits = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
                *x = bits << (a - w as u32 * 64);
            }
        }
        ByteMask(m)
    }

    /// Whether byte `i` is valid.
    #[inline]
    pub fn get(&self, i: u64) -> bool {
        (i as usize) < MAX_BLOCK_BYTES as usize && (self.0[i as usize / 64] >> (i % 64)) & 1 == 1
    }

    /// Whether any byte of `off .. off + len` is valid.
    #[inline]
    pub fn any_in(&self, off: u32, len: u32) -> bool {
        !(*self & ByteMask::range(off, len)).is_empty()
    }

    /// Each unit of `unit` bytes (a power of two) that holds a valid byte, as its lowest bit
    /// (the others clear): one OR-fold per word, no loop over the units.
    #[inline(always)]
    fn unit_heads(self, unit: u32) -> ByteMask {
        let mut m = self.0;
        if unit >= 64 {
            let per = (unit / 64) as usize;
            for g in m.chunks_mut(per) {
                let any = g.iter().any(|&x| x != 0);
                g.fill(0);
                g[0] = any as u64;
            }
            return ByteMask(m);
        }
        // Every unit's lowest bit: 0x...0101 for 8-bit units, and so on.
        let heads = u64::MAX / ((1u64 << unit) - 1);
        // Blocks of up to 64 bytes (the seed's 16-byte word blocks) use the first word only.
        for x in m.iter_mut().filter(|x| **x != 0) {
            let mut s = 1;
            while s < unit {
                *x |= *x >> s;
                s <<= 1;
            }
            *x &= heads;
        }
        ByteMask(m)
    }

    /// How many units of `unit` bytes (a power of two) hold at least one valid byte.
    #[inline]
    pub fn count_units(self, unit: u32) -> usize {
        self.unit_heads(unit)
            .0
            .iter()
            .map(|x| x.count_ones() as usize)
            .sum()
    }

    /// The units of `unit` bytes (a power of two) that hold at least one valid byte, whole.
    #[inline]
    pub fn whole_units(self, unit: u32) -> ByteMask {
        let mut m = self.unit_heads(unit).0;
        if unit >= 64 {
            let per = (unit / 64) as usize;
            for g in m.chunks_mut(per) {
                let v = if g[0] != 0 { u64::MAX } else { 0 };
                g.fill(v);
            }
        } else {
            // Units do not overlap, so the product spreads each head over its unit.
            let fill = (1u64 << unit) - 1;
            for x in m.iter_mut().filter(|x| **x != 0) {
                *x = x.wrapping_mul(fill);
            }
        }
        ByteMask(m)
    }

    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&x| x == 0)
    }

    /// The bytes of `self` not in `other`.
    #[inline]
    pub fn and_not(self, other: ByteMask) -> ByteMask {
        let mut m = self.0;
        for (x, y) in m.iter_mut().zip(other.0) {
            *x &= !y;
        }
        ByteMask(m)
    }
}

impl std::ops::BitOr for ByteMask {
    type Output = ByteMask;
    #[inline]
    fn bitor(self, o: ByteMask) -> ByteMask {
        let mut m = self.0;
        for (x, y) in m.iter_mut().zip(o.0) {
            *x |= y;
        }
        ByteMask(m)
    }
}

impl std::ops::BitOrAssign for ByteMask {
    #[inline]
    fn bitor_assign(&mut self, o: ByteMask) {
        *self = *self | o;
    }
}

impl std::ops::BitAnd for ByteMask {
    type Output = ByteMask;
    #[inline]
    fn bitand(self, o: ByteMask) -> ByteMask {
        let mut m = self.0;
        for (x, y) in m.iter_mut().zip(o.0) {
            *x &= y;
        }
        ByteMask(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ranges inside one word, across words and to the end are the bytes they name.
    #[test]
    fn ranges_name_their_bytes() {
        for (off, len) in [
            (0, 8),
            (60, 8),
            (0, 64),
            (64, 64),
            (5, 200),
            (0, 256),
            (250, 6),
        ] {
            let m = ByteMask::range(off, len);
            for i in 0..256u32 {
                assert_eq!(
                    m.get(i as u64),
                    (off..off + len).contains(&i),
                    "{off}+{len} @{i}"
                );
            }
            assert!(m.any_in(off, 1) && m.and_not(ByteMask::range(off, len)).is_empty());
        }
        assert!(ByteMask::range(0, 0).is_empty());
        assert!(!ByteMask::range(0, 4).any_in(4, 4));
        assert_eq!(
            ByteMask::range(0, 4) | ByteMask::range(4, 4),
            ByteMask::range(0, 8)
        );
        assert_eq!(
            ByteMask::range(0, 200).and_not(ByteMask::range(8, 192)),
            ByteMask::range(0, 8)
        );
        assert!(!ByteMask::range(0, 256).get(256));
    }

    /// Units counted and widened by the fold equal the unit-by-unit definition, for word
    /// units, line units and units spanning several words.
    #[test]
    fn units_fold_equals_the_definition() {
        let mut g = engine::SimRng::new(5);
        for unit in [1u32, 4, 8, 16, 32, 64, 128, 256] {
            for _ in 0..200 {
                let (off, len) = (g.below(256) as u32, 1 + g.below(64) as u32);
                let m = ByteMask::range(off, len) | ByteMask::range(g.below(256) as u32, 1);
                let by_def: Vec<u32> = (0..256 / unit)
                    .filter(|u| m.any_in(u * unit, unit))
                    .collect();
                assert_eq!(m.count_units(unit), by_def.len(), "{unit} {off}+{len}");
                let whole = by_def
                    .iter()
                    .fold(ByteMask::EMPTY, |w, u| w | ByteMask::range(u * unit, unit));
                assert_eq!(m.whole_units(unit), whole, "{unit} {off}+{len}");
            }
        }
    }
}
