//! L1 misses per data structure and per procedure (issue 19, item 3: "per data structure
//! and per procedure, report L1 data and instruction misses as well as L2").
//!
//! The rest of the ground truth (`truth`) attributes transactions, i.e. misses of the last
//! private level. The L1 misses a Cachegrind user reads per function (`D1mr`, `D1mw`,
//! `I1mr`) are counted here, at the one place the core counts them
//! (`cpu::agent::l1_miss`, and the write-through store miss of `Ctx::store_through`), so the
//! per-structure sums equal the processors' `l1d.misses` and `l1i.misses` exactly.
//!
//! *Why dense arrays*: a structure id is an index into the memory map's regions and a
//! procedure an index into the machine's procedure names, so each miss is two array
//! increments, no hash lookup; the structure comes from a direct-mapped table of ranges by
//! line (the named range, or the gap between two, that held the last miss on a line with
//! that index) before the memory map's binary search (a traced program's map has thousands
//! of ranges: the search was about 150 instructions a miss), and behind it a second,
//! smaller table of ranges by 64 KiB block for the lines whose entry another range holds
//! (see [`BLOCKS`]). Named ranges are only added and never overlap, so a kept named range
//! stays right; a kept gap is dropped (from both tables) when the map gains a range. An L1
//! hit pays nothing.

use crate::addr::{Addr, MemoryMap, StructId, UNNAMED};

/// Index of L1 D read misses in a row (loads; a trace's modify counts as a write).
pub const READ: usize = 0;
/// Index of L1 D write misses (stores that found the line absent or not writable: a store to
/// a line the L1 D holds shared is a miss here, as in the core's counters).
pub const WRITE: usize = 1;
/// Index of L1 I misses (instruction fetch).
pub const FETCH: usize = 2;

/// `[L1 D read, L1 D write, L1 I]` misses.
pub type Row = [u64; 3];

/// The L1 misses of a run by structure and by procedure.
#[derive(Clone, Debug, Default)]
pub struct L1Misses {
    /// By structure id (`addr::StructId`, the region; reports merge regions by name).
    by_struct: Vec<Row>,
    /// Misses outside every named range.
    unnamed: Row,
    /// By procedure id (`State::procedures`).
    by_procedure: Vec<Row>,
    /// By line number mod `RANGES`: the range (named, or a gap) of the last miss on a line
    /// of that index, `(base, end, structure)`.
    ranges: Vec<(Addr, Addr, StructId)>,
    /// By 64 KiB block mod `BLOCKS`: the range of the last miss that the line table did not
    /// hold, `(base, end, structure)`.
    blocks: Vec<(Addr, Addr, StructId)>,
    /// The memory map's number of regions when `ranges` was last checked.
    regions: usize,
}

/// Entries of the range table (a power of two).
const RANGES: usize = 4096;

/// Entries of the block table (a power of two).
///
/// *Why a second table*: two large structures whose lines take the same entries of the
/// line table in turn refill them one from the other. The fold in [`slot`] keeps two arrays
/// a multiple of 256 KiB apart off each other's entries at the same offsets, but not at
/// every offset: in `OMP_NUM_THREADS=16 pmusim run trace:omp16-100.pmt -p 16` (`a` and `b`,
/// 512 KiB each, adjacent; each thread reads `a[i-1..=i+1]` and writes `b[i]`, then the
/// reverse) a line of `a` still shared its entry with a line of `b` a few lines away, and
/// 4.68 M of the 28.0 M L1 misses searched the map (566 M of 21,310 M instructions, issue
/// 19, BENCHMARKS.md). A structure of more than a block covers whole blocks, so keyed by
/// block the two arrays no longer meet; a structure of less than a block keeps its lines'
/// entries in the line table, as before.
const BLOCKS: usize = 256;

/// The block table's entry for `addr`: its 64 KiB block mod `BLOCKS`, with the bits above
/// the 16 MiB the table spans folded in.
#[inline(always)]
fn block_slot(addr: Addr) -> usize {
    ((addr >> 16) ^ (addr >> 24)) as usize & (BLOCKS - 1)
}

/// The range table's entry for `addr`: its line number mod `RANGES`, with the bits above
/// the 256 KiB the table spans folded in, so that two arrays a multiple of 256 KiB apart
/// (omp16's `a` and `b`, 512 KiB each, read and written in turn) do not share their entries:
/// with the line number alone nearly every L1 miss of `OMP_NUM_THREADS=16 pmusim run
/// --record -p 16 -- omp16` refilled its entry by the map's binary search (570 M of 6,072 M
/// instructions: issue 19, BENCHMARKS.md). Within an aligned 256 KiB the lines keep
/// distinct entries, as before.
#[inline(always)]
fn slot(addr: Addr) -> usize {
    ((addr >> 6) ^ (addr >> 18)) as usize & (RANGES - 1)
}

impl L1Misses {
    pub fn new() -> L1Misses {
        L1Misses {
            ranges: vec![(0, 0, UNNAMED); RANGES],
            blocks: vec![(0, 0, UNNAMED); BLOCKS],
            ..L1Misses::default()
        }
    }

    /// One L1 miss at `addr`, of kind `kind` (`READ`, `WRITE`, `FETCH`), while procedure
    /// `procedure` runs.
    #[inline(always)]
    pub fn miss(&mut self, addr: Addr, kind: usize, procedure: u32, map: &MemoryMap) {
        if map.regions().len() != self.regions {
            self.regions = map.regions().len();
            for r in self.ranges.iter_mut().chain(self.blocks.iter_mut()) {
                if r.2 == UNNAMED {
                    *r = (0, 0, UNNAMED);
                }
            }
        }
        let e = &mut self.ranges[slot(addr)];
        let sid = if e.0 <= addr && addr < e.1 {
            e.2
        } else {
            refill(e, &mut self.blocks, addr, map)
        };
        let row = if sid == UNNAMED {
            &mut self.unnamed
        } else {
            grow(&mut self.by_struct, sid as usize)
        };
        row[kind] += 1;
        grow(&mut self.by_procedure, procedure as usize)[kind] += 1;
    }

    /// `map.structure_of(addr)`, from the range table when it holds `addr` (a named range;
    /// a gap only while the map has not gained a range since the table was checked), else
    /// by the map's binary search. A transaction's address had its L1 miss just before, so
    /// the ground truth's `tx_done` finds it here (issue 19, BENCHMARKS.md).
    #[inline]
    pub fn structure_of(&self, addr: Addr, map: &MemoryMap) -> StructId {
        match self.ranges.get(slot(addr)) {
            Some(&(lo, hi, sid))
                if lo <= addr
                    && addr < hi
                    && (sid != UNNAMED || map.regions().len() == self.regions) =>
            {
                sid
            }
            _ => map.structure_of(addr),
        }
    }

    /// The misses of structure `sid` (`UNNAMED`: outside every named range).
    pub fn of_struct(&self, sid: StructId) -> Row {
        if sid == UNNAMED {
            self.unnamed
        } else {
            self.by_struct
                .get(sid as usize)
                .copied()
                .unwrap_or_default()
        }
    }

    /// Structures with a miss, with their rows (`UNNAMED` last).
    pub fn structs(&self) -> impl Iterator<Item = (StructId, Row)> + '_ {
        let named = self.by_struct.iter().enumerate();
        named
            .map(|(i, r)| (i as StructId, *r))
            .chain(std::iter::once((UNNAMED, self.unnamed)))
            .filter(|(_, r)| r.iter().any(|&n| n > 0))
    }

    /// Procedures with a miss, with their rows.
    pub fn procedures(&self) -> impl Iterator<Item = (u32, Row)> + '_ {
        self.by_procedure
            .iter()
            .enumerate()
            .map(|(i, r)| (i as u32, *r))
            .filter(|(_, r)| r.iter().any(|&n| n > 0))
    }

    /// Sums over every structure (equal to the processors' L1 misses).
    pub fn total(&self) -> Row {
        let mut t = self.unnamed;
        for r in &self.by_struct {
            add(&mut t, r);
        }
        t
    }
}

/// Adds `b` into `a`.
pub fn add(a: &mut Row, b: &Row) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}

/// The range table's entry `e` after a miss outside it: the range around `addr`, from the
/// block table when it holds `addr`, else by the map's search (and then kept in the block
/// table too). Out of line, so that the table's hits keep their registers.
#[cold]
#[inline(never)]
fn refill(
    e: &mut (Addr, Addr, StructId),
    blocks: &mut [(Addr, Addr, StructId)],
    addr: Addr,
    map: &MemoryMap,
) -> StructId {
    let b = &mut blocks[block_slot(addr)];
    if !(b.0 <= addr && addr < b.1) {
        *b = map.range_around(addr);
    }
    *e = *b;
    e.2
}

/// Row `i` of `v`, growing it with zero rows as needed (ids are small and dense). The
/// common case (the row exists) with one bounds test: indexing after a growth the compiler
/// cannot see into tested the length twice.
#[inline(always)]
fn grow(v: &mut Vec<Row>, i: usize) -> &mut Row {
    if i < v.len() {
        &mut v[i]
    } else {
        grow_to(v, i)
    }
}

#[cold]
#[inline(never)]
fn grow_to(v: &mut Vec<Row>, i: usize) -> &mut Row {
    v.resize(i + 1, [0; 3]);
    &mut v[i]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::Placement;

    /// Whether the range table holds `addr` (a miss there would not search the map).
    fn cached(l1: &L1Misses, addr: Addr) -> bool {
        let (lo, hi, _) = l1.ranges[slot(addr)];
        lo <= addr && addr < hi
    }

    /// Two arrays 512 KiB apart, missed in turn at the same offsets (omp16's `a` and `b`):
    /// each keeps its table entries, so the misses after the first of each line do not
    /// search the map; the counts are the map's.
    #[test]
    fn arrays_a_power_of_two_apart_keep_their_entries() {
        let mut map = MemoryMap::new(4096, 64, 1, Placement::RoundRobin);
        let a = map.alloc("a", 512 << 10, crate::Place::Default);
        let b = map.alloc("b", 512 << 10, crate::Place::Default);
        assert_eq!(b - a, 512 << 10);
        let mut l1 = L1Misses::new();
        for round in 0..2 {
            for off in (0..512 << 10).step_by(4096) {
                l1.miss(a + off, READ, 0, &map);
                l1.miss(b + off, WRITE, 0, &map);
                assert!(cached(&l1, a + off), "round {round}, a + {off:#x}");
                assert!(cached(&l1, b + off), "round {round}, b + {off:#x}");
            }
        }
        assert_eq!(l1.of_struct(map.structure_of(a)), [256, 0, 0]);
        assert_eq!(l1.of_struct(map.structure_of(b)), [0, 256, 0]);
    }

    /// Lines of two large arrays that share a line-table entry (here `a + x` and `b + y`,
    /// `y` a few lines from `x`, as in omp16's sweeps) take it from each other in turn; the
    /// block table then answers without searching the map, and the counts are the map's.
    #[test]
    fn lines_sharing_an_entry_are_found_by_their_block() {
        let mut map = MemoryMap::new(4096, 64, 1, Placement::RoundRobin);
        let a = map.alloc("a", 512 << 10, crate::Place::Default);
        let b = map.alloc("b", 512 << 10, crate::Place::Default);
        // Pairs of lines of `a` and `b` within 16 lines of each other with one entry.
        let mut pairs = Vec::new();
        for x in (0..512 << 10).step_by(64) {
            for d in 0..16u64 {
                let y = (x + d * 64) % (512 << 10);
                if slot(a + x) == slot(b + y) {
                    pairs.push((a + x, b + y));
                }
            }
        }
        assert!(pairs.len() >= 8, "{} pairs", pairs.len());
        let mut l1 = L1Misses::new();
        for round in 0..3 {
            for &(x, y) in &pairs {
                l1.miss(x, READ, 0, &map);
                l1.miss(y, WRITE, 0, &map);
                // The line table holds the last; the block table holds both from round 1.
                assert!(cached(&l1, y) && !cached(&l1, x));
                let block = |addr: Addr| {
                    let (lo, hi, _) = l1.blocks[block_slot(addr)];
                    lo <= addr && addr < hi
                };
                assert!(block(y), "round {round}, {y:#x}");
                if round > 0 {
                    assert!(block(x), "round {round}, {x:#x}");
                }
            }
        }
        let n = 3 * pairs.len() as u64;
        assert_eq!(l1.of_struct(map.structure_of(a)), [n, 0, 0]);
        assert_eq!(l1.of_struct(map.structure_of(b)), [0, n, 0]);
    }

    #[test]
    fn misses_go_to_their_range_and_procedure() {
        let mut map = MemoryMap::new(4096, 64, 1, Placement::RoundRobin);
        let a = map.alloc("a", 4096, crate::Place::Default);
        let b = map.alloc("b", 4096, crate::Place::Default);
        let mut l1 = L1Misses::new();
        l1.miss(a + 8, READ, 0, &map);
        l1.miss(a + 4000, WRITE, 1, &map);
        l1.miss(b, FETCH, 1, &map);
        l1.miss(b + 64, READ, 0, &map);
        l1.miss(1 << 60, READ, 3, &map);
        // A gap kept in the table is dropped when the map gains a range there.
        let c = map
            .name_range("c", 1 << 60, 64, crate::Place::Default)
            .unwrap();
        l1.miss((1 << 60) + 8, READ, 3, &map);
        assert_eq!(l1.of_struct(c), [1, 0, 0]);
        let (sa, sb) = (map.structure_of(a), map.structure_of(b));
        assert_eq!(l1.of_struct(sa), [1, 1, 0]);
        assert_eq!(l1.of_struct(sb), [1, 0, 1]);
        assert_eq!(l1.of_struct(UNNAMED), [1, 0, 0]);
        assert_eq!(l1.total(), [4, 1, 1]);
        let procs: Vec<_> = l1.procedures().collect();
        assert_eq!(procs, vec![(0, [2, 0, 0]), (1, [0, 1, 1]), (3, [2, 0, 0])]);
        assert_eq!(l1.structs().count(), 4);
        // The table's answers are the map's: named, a gap, and a gap the map has since
        // named (not trusted: the map's search answers).
        let d = map
            .name_range("d", 1 << 50, 64, crate::Place::Default)
            .unwrap();
        for a in [
            a,
            a + 4000,
            b + 64,
            (1 << 60) + 8,
            1 << 50,
            (1 << 50) + 8,
            77,
        ] {
            assert_eq!(l1.structure_of(a, &map), map.structure_of(a), "{a:#x}");
        }
        l1.miss(1 << 40, READ, 0, &map);
        let e = map
            .name_range("e", 1 << 40, 64, crate::Place::Default)
            .unwrap();
        assert_eq!(l1.structure_of(1 << 40, &map), e);
        assert_eq!(map.structure_of(1 << 50), d);
    }
}
