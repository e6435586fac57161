//! One cache: flat arrays of tags, states and replacement stamps, indexed by set.
//!
//! Each entry is one `u64` holding `line << 2 | state`, so a hit test is one load and one
//! compare. A line whose state is `INVALID` keeps its tag: the R4400 (and the NUMAchine
//! monitor's Miss Type Register) distinguish a miss on an invalidated line (tag match, state
//! invalid) from any other miss. `EMPTY` marks a way never filled.

use crate::config::{CacheCfg, Replacement};

pub const INVALID: u64 = 0;
/// Readable (clean, possibly shared).
pub const SHARED: u64 = 1;
/// Writable (dirty or about to be: MESI without E goes straight to dirty).
pub const MODIFIED: u64 = 2;
/// An entry never filled.
pub const EMPTY: u64 = u64::MAX;

#[derive(Clone, Debug)]
pub struct Cache {
    pub line_shift: u32,
    set_mask: u64,
    ways: usize,
    entries: Vec<u64>,
    stamps: Vec<u64>,
    clock: u64,
    repl: Replacement,
    pub hit_cycles: u32,
}

impl Cache {
    pub fn new(c: &CacheCfg) -> Cache {
        let sets = c.sets();
        let n = (sets * c.assoc as u64) as usize;
        Cache {
            line_shift: c.line_bytes.trailing_zeros(),
            set_mask: sets - 1,
            ways: c.assoc as usize,
            entries: vec![EMPTY; n],
            stamps: vec![0; n],
            clock: 1,
            repl: c.replacement,
            hit_cycles: c.hit_cycles,
        }
    }

    #[inline]
    pub fn line_of(&self, addr: u64) -> u64 {
        addr >> self.line_shift
    }
    #[inline]
    pub fn set_of(&self, line: u64) -> usize {
        (line & self.set_mask) as usize
    }
    pub fn sets(&self) -> usize {
        self.set_mask as usize + 1
    }
    pub fn ways(&self) -> usize {
        self.ways
    }

    /// The slot holding `line` (any state, including invalid-with-tag).
    #[inline]
    pub fn find(&self, line: u64) -> Option<usize> {
        if self.ways == 1 {
            // Direct-mapped (the L2 of `numachine` and `ideal`, looked up on every L1 miss):
            // the set is the slot, no multiply and no iterator (issue 19, BENCHMARKS.md).
            let set = self.set_of(line);
            let e = self.entries[set];
            return (e != EMPTY && e >> 2 == line).then_some(set);
        }
        let base = self.set_of(line) * self.ways;
        (base..base + self.ways).find(|&i| {
            let e = self.entries[i];
            e != EMPTY && e >> 2 == line
        })
    }

    /// The tags of two direct-mapped caches of the same geometry (a core's L1 D and L1 I),
    /// for a loop of hit tests that changes nothing (`None` otherwise: a set-associative
    /// cache's hits move replacement stamps).
    #[inline(always)]
    pub fn direct_pair<'a>(d: &'a Cache, i: &'a Cache) -> Option<DirectPair<'a>> {
        debug_assert!(d.ways != 1 || d.entries.len() as u64 == d.set_mask + 1);
        (d.ways == 1 && i.ways == 1 && d.set_mask == i.set_mask && d.line_shift == i.line_shift)
            .then(|| Cache::pair_of(d, i))
    }

    /// [`Cache::direct_pair`] for a caller that has seen it return `Some` for the same two
    /// caches (their geometry never changes): the pair without the four tests.
    #[inline(always)]
    pub fn direct_pair_known<'a>(d: &'a Cache, i: &'a Cache) -> DirectPair<'a> {
        debug_assert!(Cache::direct_pair(d, i).is_some());
        Cache::pair_of(d, i)
    }

    /// The pair's fields, for [`Cache::direct_pair`] and [`Cache::direct_pair_known`].
    #[inline(always)]
    fn pair_of<'a>(d: &'a Cache, i: &'a Cache) -> DirectPair<'a> {
        DirectPair {
            d: &d.entries,
            i: &i.entries,
            set_mask: d.set_mask,
            line_shift: d.line_shift,
        }
    }

    /// Fast path: is `line` present with at least `need` (SHARED for reads, MODIFIED for
    /// writes)? Updates the replacement stamp on a hit.
    #[inline(always)]
    pub fn hit(&mut self, line: u64, need: u64) -> bool {
        if self.ways == 1 {
            // Direct-mapped (the L1s of most presets): the set is the slot, no multiply.
            let e = self.entries[self.set_of(line)];
            return e >> 2 == line && e != EMPTY && (e & 3) >= need;
        }
        let base = self.set_of(line) * self.ways;
        for i in base..base + self.ways {
            let e = self.entries[i];
            if e >> 2 == line && e != EMPTY {
                if (e & 3) >= need {
                    if self.repl == Replacement::Lru {
                        self.stamps[i] = self.clock;
                        self.clock += 1;
                    }
                    return true;
                }
                return false;
            }
        }
        false
    }

    /// [`Cache::find`] and [`Cache::state`] of the slot found, in one look: a direct-mapped
    /// cache reads its entry once (an L2 lookup of `agent::l2_hit_quiet`, on every L1 miss of
    /// `numachine`, read and bounds-tested it twice; task omp19).
    #[inline(always)]
    pub fn find_state(&self, line: u64) -> Option<(usize, u64)> {
        if self.ways == 1 {
            let set = self.set_of(line);
            let e = self.entries[set];
            return (e != EMPTY && e >> 2 == line).then_some((set, e & 3));
        }
        let slot = self.find(line)?;
        Some((slot, self.state(slot)))
    }

    /// [`Cache::find_state`] of a cache known to be direct-mapped (`ways() == 1`), without
    /// the way test and the bounds test: the L2 lookup of an L1 miss served inside a run of
    /// hits (`agent::l2_hit_in_run`, whose caller has seen the L2 direct-mapped; task perf19).
    #[inline(always)]
    pub fn find_state_direct(&self, line: u64) -> Option<(usize, u64)> {
        debug_assert_eq!(self.ways, 1);
        let set = self.set_of(line);
        // SAFETY: one way per set, so `entries` has `set_mask + 1` entries (`Cache::new`;
        // never resized), and `set` is below that.
        let e = unsafe { *self.entries.get_unchecked(set) };
        (e != EMPTY && e >> 2 == line).then_some((set, e & 3))
    }

    /// [`Cache::fill`] of a cache known to be direct-mapped, without the way test and the
    /// bounds test: the L1 D fill of an L1 miss served inside a run of hits, whose caller
    /// has seen the L1 pair direct-mapped (`Cache::direct_pair`; task perf19).
    #[inline(always)]
    pub fn fill_direct(&mut self, line: u64, state: u64) {
        debug_assert!(self.ways == 1 && state <= MODIFIED);
        let set = self.set_of(line);
        // SAFETY: as in `find_state_direct`.
        unsafe { *self.entries.get_unchecked_mut(set) = line << 2 | state };
    }

    /// Installs `line` in `state` in the slot [`Cache::victim`] chooses with a draw that
    /// yields 0 (`victim(line, || 0)`, then `install`). A direct-mapped cache writes its
    /// one entry without the victim's look at it and the install's second bounds test and
    /// way test (on every L1 fill; task omp19).
    #[inline(always)]
    pub fn fill(&mut self, line: u64, state: u64) {
        if self.ways == 1 {
            debug_assert!(state <= MODIFIED);
            let set = self.set_of(line);
            self.entries[set] = line << 2 | state;
            return;
        }
        let slot = self.victim(line, || 0);
        self.install(slot, line, state);
    }

    #[inline]
    pub fn state(&self, slot: usize) -> u64 {
        let e = self.entries[slot];
        if e == EMPTY {
            INVALID
        } else {
            e & 3
        }
    }
    #[inline]
    pub fn line_at(&self, slot: usize) -> Option<u64> {
        let e = self.entries[slot];
        (e != EMPTY).then_some(e >> 2)
    }
    /// State of `line`, INVALID when absent.
    pub fn state_of(&self, line: u64) -> u64 {
        self.find(line).map(|s| self.state(s)).unwrap_or(INVALID)
    }

    #[inline]
    pub fn set_state(&mut self, slot: usize, state: u64) {
        debug_assert!(self.entries[slot] != EMPTY && state <= MODIFIED);
        self.entries[slot] = (self.entries[slot] & !3) | state;
    }

    /// Places `line` in `slot` with `state`, stamping it most recently used. Always in line:
    /// the L1 fill of `agent::l1_miss`'s quiet L2 hit called it (about 17 instructions per
    /// L1 miss with the call, BENCHMARKS.md).
    ///
    /// A direct-mapped cache is not stamped: only the choice of a victim among several ways
    /// reads the stamps (`victim_assoc`), and the clock is read only for stamps, so nothing
    /// changes; the stamp, its bounds test and the clock's increment were about 7
    /// instructions of every L1 fill (on `numachine`, whose L1s are direct-mapped, every L1
    /// miss: 28 M in the omp16 replay of issue 19, BENCHMARKS.md).
    #[inline(always)]
    pub fn install(&mut self, slot: usize, line: u64, state: u64) {
        debug_assert!(state <= MODIFIED);
        self.entries[slot] = line << 2 | state;
        if self.ways != 1 {
            self.stamps[slot] = self.clock;
            self.clock += 1;
        }
    }

    /// Some way of `line`'s set holds no valid line (never filled, or invalid with its tag):
    /// the state bits a probe of the set's index reads (for a set-associative cache, "any way
    /// invalid" — the NUMAchine monitor's invalidation-miss estimator, Fig. 4.8b, sees only
    /// the index).
    #[inline]
    pub fn set_has_invalid(&self, line: u64) -> bool {
        let base = self.set_of(line) * self.ways;
        if self.ways == 1 {
            let e = self.entries[base];
            return e == EMPTY || e & 3 == INVALID;
        }
        self.entries[base..base + self.ways]
            .iter()
            .any(|&e| e == EMPTY || e & 3 == INVALID)
    }

    /// Chooses the way to replace for `line`: a way already holding its tag, else an empty or
    /// invalid way, else by the policy. `random` supplies a random number when needed.
    #[inline(always)]
    pub fn victim(&self, line: u64, mut random: impl FnMut() -> u64) -> usize {
        if self.ways == 1 {
            // Direct-mapped (the L1s of most presets, filled on every L1 miss): the one way,
            // with `random` drawn exactly when the general path below would draw it. In line
            // (the call cost a fused 16-thread replay about 20 instructions per L1 miss).
            let base = self.set_of(line);
            let e = self.entries[base];
            let chosen = e == EMPTY || e >> 2 == line || e & 3 == INVALID;
            if !chosen && self.repl == Replacement::Random {
                random();
            }
            return base;
        }
        self.victim_assoc(line, random)
    }

    /// [`Cache::victim`] of a set-associative cache.
    #[inline(never)]
    fn victim_assoc(&self, line: u64, mut random: impl FnMut() -> u64) -> usize {
        let base = self.set_of(line) * self.ways;
        if let Some(s) = self.find(line) {
            return s;
        }
        if let Some(i) = (base..base + self.ways).find(|&i| self.entries[i] == EMPTY) {
            return i;
        }
        if let Some(i) = (base..base + self.ways).find(|&i| self.entries[i] & 3 == INVALID) {
            return i;
        }
        match self.repl {
            Replacement::Lru | Replacement::Fifo => (base..base + self.ways)
                .min_by_key(|&i| self.stamps[i])
                .unwrap(),
            Replacement::Random => base + (random() % self.ways as u64) as usize,
        }
    }

    /// Invalidates `line` if present (keeping its tag). Returns its previous state.
    pub fn invalidate(&mut self, line: u64) -> u64 {
        match self.find(line) {
            Some(s) => {
                let st = self.state(s);
                self.set_state(s, INVALID);
                st
            }
            None => INVALID,
        }
    }

    /// Lines of this cache that lie inside the larger line `big` of `big_shift` bits.
    pub fn sublines(&self, big: u64, big_shift: u32) -> std::ops::Range<u64> {
        let k = big_shift - self.line_shift;
        (big << k)..((big + 1) << k)
    }

    /// Number of valid lines (for tests and reports).
    pub fn valid_lines(&self) -> usize {
        self.entries
            .iter()
            .filter(|&&e| e != EMPTY && e & 3 != INVALID)
            .count()
    }
}

/// Two direct-mapped caches' tags, read only ([`Cache::direct_pair`]): the same test as
/// [`Cache::hit`], which changes nothing in a direct-mapped cache. One geometry for both, so
/// that a loop over both keeps one shift and one mask in registers.
#[derive(Clone, Copy)]
pub struct DirectPair<'a> {
    d: &'a [u64],
    i: &'a [u64],
    set_mask: u64,
    pub line_shift: u32,
}

impl DirectPair<'_> {
    /// `line` is in the first cache, writable if `write` (1) or readable (0).
    #[inline(always)]
    pub fn hit_d(&self, line: u64, write: u64) -> bool {
        Self::hit(self.d, self.set_mask, line, write)
    }

    /// `line` is in the second cache, readable.
    #[inline(always)]
    pub fn hit_i(&self, line: u64) -> bool {
        Self::hit(self.i, self.set_mask, line, 0)
    }

    /// The caches' sets (one entry each).
    #[inline(always)]
    pub fn sets(&self) -> usize {
        self.set_mask as usize + 1
    }

    /// The set `line` falls in.
    #[inline(always)]
    pub fn set(&self, line: u64) -> usize {
        (line & self.set_mask) as usize
    }

    /// Whether entry `e` (a line shifted left by 2 with its state) holds `line`, writable if
    /// `write` (1) or readable (0): [`DirectPair::hit_d`]'s test on an entry of one's own.
    #[inline(always)]
    pub fn entry_hits(e: u64, line: u64, write: u64) -> bool {
        (e ^ line << 2).wrapping_sub(SHARED + write) <= MODIFIED - SHARED - write
    }

    /// [`Cache::hit`]'s `e >> 2 == line && e != EMPTY && (e & 3) >= need` as one subtraction
    /// and compare. With the tag equal, `e ^ line << 2` is the state, which hits from
    /// `SHARED + write` up to `MODIFIED` (no state is above); any other tag, and `EMPTY` (a
    /// line is below 2^61: lines are at least 8 bytes), leaves it at 4 or above.
    #[inline(always)]
    fn hit(entries: &[u64], set_mask: u64, line: u64, write: u64) -> bool {
        debug_assert!(write <= 1 && line < 1 << 61);
        // SAFETY: one way per set, so `entries` has `set_mask + 1` entries (`Cache::new`).
        let e = unsafe { *entries.get_unchecked((line & set_mask) as usize) };
        Self::entry_hits(e, line, write)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(size: u64, assoc: u32, line: u64, repl: Replacement) -> CacheCfg {
        CacheCfg {
            size_bytes: size,
            assoc,
            line_bytes: line,
            replacement: repl,
            hit_cycles: 1,
            write: Default::default(),
            prefetch: Default::default(),
        }
    }

    #[test]
    fn lru_two_way() {
        let mut c = Cache::new(&cfg(256, 2, 64, Replacement::Lru)); // 2 sets
        let (a, b, d) = (0u64, 2, 4); // all map to set 0
        let s = c.victim(a, || 0);
        c.install(s, a, SHARED);
        let s = c.victim(b, || 0);
        c.install(s, b, SHARED);
        assert!(c.hit(a, SHARED)); // a becomes MRU
        let v = c.victim(d, || 0);
        assert_eq!(c.line_at(v), Some(b), "LRU victim is b");
        assert!(!c.hit(a, MODIFIED), "shared line does not satisfy a write");
        c.invalidate(a);
        assert_eq!(c.find(a).map(|s| c.state(s)), Some(INVALID), "tag kept");
        assert!(!c.hit(a, SHARED));
        assert_eq!(
            c.line_at(c.victim(d, || 0)),
            Some(a),
            "invalid way reused first"
        );
    }

    #[test]
    fn direct_mapped_conflict() {
        let mut c = Cache::new(&cfg(1024, 1, 32, Replacement::Lru)); // 32 sets
        c.install(c.victim(1, || 0), 1, MODIFIED);
        assert!(c.hit(1, MODIFIED));
        assert!(!c.hit(33, SHARED));
        assert_eq!(c.line_at(c.victim(33, || 0)), Some(1));
        assert_eq!(c.sublines(3, 7), 12..16);
    }

    /// `find_state_direct` and `fill_direct` (the L2 hit inside a run of hits, task
    /// perf19) find and fill as `find_state` and `fill` do on a direct-mapped cache: the
    /// same answers for present, absent, conflicting and invalid lines, and the same
    /// entries after the same fills.
    #[test]
    fn direct_lookups_and_fills_are_the_general_ones() {
        let mut a = Cache::new(&cfg(1024, 1, 32, Replacement::Lru)); // 32 sets
        let mut b = Cache::new(&cfg(1024, 1, 32, Replacement::Lru));
        let mut x = 12345u64;
        let mut found = 0;
        for i in 0..2000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let line = x % 200;
            let state = [INVALID, SHARED, MODIFIED][(x >> 20) as usize % 3];
            assert_eq!(a.find_state_direct(line), a.find_state(line), "line {line}");
            found += usize::from(a.find_state(line).is_some());
            if i % 3 != 0 {
                a.fill_direct(line, state);
                b.fill(line, state);
            }
            assert_eq!(a.entries, b.entries);
        }
        assert!(found > 100, "{found} lookups found their line");
    }
}
