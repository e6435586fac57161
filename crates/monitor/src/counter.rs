//! Counter primitives: a width, wrap-around with a sticky overflow flag, preload (the seed's
//! "preloading a negative number" to wait for a precise number of events, 4.3.3) and the
//! reset-on-read fetch-and-clear (4.3.3). Every counter in the NUMAchine monitor is one of these,
//! so "no silent loss" holds in one place: a wrap always sets `overflowed` and counts in `wraps`.

/// A `width`-bit up-counter (1..=64 bits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counter {
    value: u64,
    width: u32,
    /// Sticky: set on every wrap, cleared by `clear_overflow`.
    pub overflowed: bool,
    /// Wraps since creation (software would learn of them through the interrupt).
    pub wraps: u64,
}

impl Counter {
    pub fn new(width: u32) -> Counter {
        assert!((1..=64).contains(&width), "counter width 1..=64");
        Counter {
            value: 0,
            width,
            overflowed: false,
            wraps: 0,
        }
    }
    pub fn width(&self) -> u32 {
        self.width
    }
    #[inline(always)]
    fn mask(&self) -> u64 {
        if self.width == 64 {
            u64::MAX
        } else {
            (1u64 << self.width) - 1
        }
    }
    pub fn get(&self) -> u64 {
        self.value
    }
    /// Adds `n`; returns how many times the counter wrapped (0 almost always).
    #[inline(always)]
    pub fn add(&mut self, n: u64) -> u64 {
        let room = self.mask() - self.value; // increments before the value is all ones
        if n <= room {
            self.value += n;
            return 0;
        }
        self.wrap(n, room)
    }
    /// `add` past the all-ones value.
    #[cold]
    #[inline(never)]
    fn wrap(&mut self, n: u64, room: u64) -> u64 {
        let m = self.mask();
        // Wraps: the first at room+1 increments, then every 2^width increments.
        let over = n - room - 1;
        let span = if self.width == 64 { u64::MAX } else { m + 1 };
        let wraps = 1 + over / span;
        self.value = over % span;
        self.overflowed = true;
        self.wraps += wraps;
        wraps
    }
    /// Writes (preloads) the counter; a negative threshold is written as its two's complement
    /// in the counter's width.
    pub fn preload(&mut self, v: u64) {
        self.value = v & self.mask();
    }
    /// Preloads `-n`: the counter overflows after exactly `n` increments.
    pub fn preload_threshold(&mut self, n: u64) {
        self.value = n.wrapping_neg() & self.mask();
    }
    /// The reset-on-read address: returns the value and clears it atomically.
    pub fn read_reset(&mut self) -> u64 {
        std::mem::take(&mut self.value)
    }
    pub fn clear_overflow(&mut self) {
        self.overflowed = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn wraps_and_flags() {
        let mut c = Counter::new(32);
        c.preload(0xFFFF_FFFE);
        assert_eq!(c.add(1), 0);
        assert!(!c.overflowed);
        assert_eq!(c.add(1), 1);
        assert!(c.overflowed);
        assert_eq!(c.get(), 0);
        c.preload(5);
        assert_eq!(c.add(3 << 32), 3);
        assert_eq!(c.get(), 5);
        assert_eq!(c.wraps, 4);
    }
    #[test]
    fn threshold_and_read_reset() {
        let mut c = Counter::new(32);
        c.preload_threshold(10);
        assert_eq!(c.add(9), 0);
        assert_eq!(c.add(1), 1);
        assert_eq!(c.get(), 0);
        c.add(7);
        assert_eq!(c.read_reset(), 7);
        assert_eq!(c.get(), 0);
        let mut w = Counter::new(64);
        w.preload(u64::MAX);
        assert_eq!(w.add(2), 1);
        assert_eq!(w.get(), 1);
    }
    #[test]
    fn small_width() {
        let mut c = Counter::new(4);
        assert_eq!(c.add(35), 2);
        assert_eq!(c.get(), 3);
    }
}
