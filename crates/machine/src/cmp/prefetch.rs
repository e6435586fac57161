//! The prefetcher slot of a cache level (issue 13 item 5): what a level fetches beyond the
//! line a miss asked for.
//!
//! A prefetcher sees the level's demand misses and names lines to fetch as well; the level
//! fetches them without delaying the demand (a prefetch never makes a request wait, and a line
//! it brings is an ordinary clean line of the level). Dispatch is static: the level holds a
//! `Slot`, an enum whose `match` calls the chosen implementation (no `dyn` on the miss path).
//! A stream prefetcher (issue 14's L1P) is one more implementation and one more variant.

use crate::config::PrefetchKind;

/// A prefetcher: told each demand miss (by line number of its level), it names a line to fetch.
pub trait Prefetcher {
    fn on_miss(&mut self, line: u64) -> Option<u64>;
}

/// No prefetching (the default slot).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoPrefetch;

impl Prefetcher for NoPrefetch {
    #[inline]
    fn on_miss(&mut self, _line: u64) -> Option<u64> {
        None
    }
}

/// Next-line prefetching: a miss on line `n` fetches line `n + 1` too.
#[derive(Clone, Copy, Debug, Default)]
pub struct NextLine;

impl Prefetcher for NextLine {
    #[inline]
    fn on_miss(&mut self, line: u64) -> Option<u64> {
        line.checked_add(1)
    }
}

/// The slot: whichever prefetcher the preset put there.
#[derive(Clone, Copy, Debug)]
pub enum Slot {
    None(NoPrefetch),
    NextLine(NextLine),
}

impl Slot {
    pub fn new(k: PrefetchKind) -> Slot {
        match k {
            // The stream prefetcher is the L1 D's (`cmp::l1p`), never a shared level's
            // (refused by validation).
            PrefetchKind::None | PrefetchKind::Stream => Slot::None(NoPrefetch),
            PrefetchKind::NextLine => Slot::NextLine(NextLine),
        }
    }
}

impl Prefetcher for Slot {
    #[inline]
    fn on_miss(&mut self, line: u64) -> Option<u64> {
        match self {
            Slot::None(p) => p.on_miss(line),
            Slot::NextLine(p) => p.on_miss(line),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_name_what_their_prefetcher_does() {
        assert_eq!(Slot::new(PrefetchKind::None).on_miss(41), None);
        assert_eq!(Slot::new(PrefetchKind::NextLine).on_miss(41), Some(42));
        assert_eq!(NextLine.on_miss(u64::MAX), None);
    }
}
