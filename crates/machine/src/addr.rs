//! Simulated addresses, the memory map of named data structures, and page placement.
//!
//! Simulated addresses are physical: the caches are indexed by them and transactions carry
//! them. Every page has a home node, fixed by the placement of the allocation it belongs to
//! (round-robin pages, first touch, or a given node) or by the preset's default placement.
//! Data structures are named ranges; misses are attributed to them by binary search, which is
//! only done on the miss path.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

/// A simulated physical byte address.
pub type Addr = u64;

/// Where the pages of an allocation live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// The preset's default placement.
    Default,
    /// Page i of the machine's address space on node i mod nodes.
    RoundRobin,
    /// On the node of the first processor that misses on the page.
    FirstTouch,
    /// All pages on one node.
    Node(usize),
}

/// The preset's default page placement (`memory.placement`; `config` re-exports it).
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Placement {
    /// Pages dealt to nodes in turn (page i to node i mod nodes).
    RoundRobin,
    /// A page's home is the node of the first processor that misses on it.
    FirstTouch,
}

/// Index of a named data structure in the memory map (also its FlashPoint bin candidate).
pub type StructId = u32;
/// Attribution of addresses that belong to no named structure.
pub const UNNAMED: StructId = u32::MAX;

#[derive(Clone, Debug)]
pub struct Region {
    pub name: String,
    pub base: Addr,
    pub bytes: u64,
    pub place: Place,
}

/// The memory map: named regions and page homes.
#[derive(Clone, Debug)]
pub struct MemoryMap {
    page_shift: u32,
    line_bytes: u64,
    nodes: usize,
    default: Placement,
    /// Regions sorted by base; ids are indices into `order`-independent `regions`.
    regions: Vec<Region>,
    sorted: Vec<(Addr, Addr, StructId)>,
    next: Addr,
    syncs: u64,
    homes: FxHashMap<u64, u16>,
    /// The first region of each name: same-named regions (per-processor pieces of one array)
    /// are one data structure (`MemoryMap::data_structure`).
    first_of_name: FxHashMap<String, StructId>,
}

/// Where the bump allocator starts (page-aligned, away from address 0).
pub const HEAP_BASE: Addr = 0x1000_0000;
/// Where synchronization variables (locks, barriers) are allocated, one line each: away from
/// the heap and from traced programs' addresses (see `cpu::CODE_BASE`), at 896 KiB modulo 1 MiB.
pub const SYNC_BASE: Addr = 0xD1_000E_0000;

impl MemoryMap {
    pub fn new(page_bytes: u64, line_bytes: u64, nodes: usize, default: Placement) -> MemoryMap {
        MemoryMap {
            page_shift: page_bytes.trailing_zeros(),
            line_bytes,
            nodes: nodes.max(1),
            default,
            regions: Vec::new(),
            sorted: Vec::new(),
            next: HEAP_BASE,
            syncs: 0,
            homes: FxHashMap::default(),
            first_of_name: FxHashMap::default(),
        }
    }

    pub fn nodes(&self) -> usize {
        self.nodes
    }
    pub fn page_bytes(&self) -> u64 {
        1 << self.page_shift
    }
    /// The coherence unit: the L2 line size of the preset.
    pub fn line_bytes(&self) -> u64 {
        self.line_bytes
    }

    /// Allocates `bytes` (page-aligned) named `name`, returning its base address.
    pub fn alloc(&mut self, name: &str, bytes: u64, place: Place) -> Addr {
        let base = self.next;
        let pages = bytes.max(1).div_ceil(self.page_bytes());
        self.next += pages * self.page_bytes();
        self.add_region(name, base, bytes.max(1), place);
        base
    }

    /// Names an existing address range (trace symbols, range files). Later names shadow
    /// nothing: overlapping ranges are rejected.
    pub fn name_range(
        &mut self,
        name: &str,
        base: Addr,
        bytes: u64,
        place: Place,
    ) -> Result<StructId, String> {
        let end = base
            .checked_add(bytes)
            .ok_or("range wraps the address space")?;
        let i = self.sorted.partition_point(|r| r.1 <= base);
        if let Some(r) = self.sorted.get(i) {
            if r.0 < end {
                return Err(format!(
                    "range {name} [{base:#x}, {end:#x}) overlaps `{}` [{:#x}, {:#x})",
                    self.regions[r.2 as usize].name, r.0, r.1
                ));
            }
        }
        Ok(self.add_region(name, base, bytes, place))
    }

    fn add_region(&mut self, name: &str, base: Addr, bytes: u64, place: Place) -> StructId {
        let id = self.regions.len() as StructId;
        self.first_of_name.entry(name.to_string()).or_insert(id);
        self.regions.push(Region {
            name: name.to_string(),
            base,
            bytes,
            place,
        });
        let i = self.sorted.partition_point(|r| r.0 < base);
        self.sorted.insert(i, (base, base + bytes, id));
        // Fix homes now for explicit placements so they do not depend on access order.
        let first = base >> self.page_shift;
        let last = (base + bytes - 1) >> self.page_shift;
        match place {
            Place::Node(n) => {
                let n = (n % self.nodes) as u16;
                for p in first..=last {
                    self.homes.insert(p, n);
                }
            }
            Place::RoundRobin => {
                for p in first..=last {
                    self.homes.insert(p, (p % self.nodes as u64) as u16);
                }
            }
            Place::Default | Place::FirstTouch => {}
        }
        id
    }

    /// A line-aligned synchronization variable on its own line, homed round-robin.
    pub fn alloc_sync(&mut self, name: &str) -> Addr {
        let base = SYNC_BASE + self.syncs * self.line_bytes;
        self.syncs += 1;
        self.add_region(name, base, self.line_bytes, Place::Default);
        base
    }

    /// The named structure containing `addr`.
    #[inline]
    pub fn structure_of(&self, addr: Addr) -> StructId {
        self.range_of(addr).map_or(UNNAMED, |r| r.2)
    }

    /// The named range containing `addr`: `(base, end, structure)`.
    #[inline]
    pub fn range_of(&self, addr: Addr) -> Option<(Addr, Addr, StructId)> {
        let i = self.sorted.partition_point(|r| r.1 <= addr);
        match self.sorted.get(i) {
            Some(&r) if r.0 <= addr => Some(r),
            _ => None,
        }
    }

    /// The range around `addr`: the named one holding it, else the gap between the named
    /// ranges on either side, as `(base, end, UNNAMED)`. Named ranges are only ever added and
    /// never overlap, so a caller may keep a named answer and test it first next time (a gap
    /// only until the map gains a range).
    pub fn range_around(&self, addr: Addr) -> (Addr, Addr, StructId) {
        let i = self.sorted.partition_point(|r| r.1 <= addr);
        match self.sorted.get(i) {
            Some(&r) if r.0 <= addr => r,
            next => {
                let base = i.checked_sub(1).map_or(0, |j| self.sorted[j].1);
                (base, next.map_or(Addr::MAX, |r| r.0), UNNAMED)
            }
        }
    }

    pub fn region(&self, id: StructId) -> Option<&Region> {
        self.regions.get(id as usize)
    }
    pub fn regions(&self) -> &[Region] {
        &self.regions
    }
    /// The data structure region `id` belongs to: the first region of its name. Reports merge
    /// same-named regions (e.g. OCEAN's per-processor pieces of one grid); FlashPoint gives
    /// them one bin, as the seed's bins are per data structure (seed 004, 3.1.3).
    pub fn data_structure(&self, id: StructId) -> StructId {
        self.regions
            .get(id as usize)
            .and_then(|r| self.first_of_name.get(&r.name))
            .copied()
            .unwrap_or(id)
    }
    pub fn name_of(&self, id: StructId) -> &str {
        self.regions
            .get(id as usize)
            .map(|r| r.name.as_str())
            .unwrap_or("(unnamed)")
    }

    /// The home node of the page holding `addr`, deciding it now (first touch by a processor
    /// on node `toucher`, or the default placement) if it was not fixed before.
    #[inline]
    pub fn home_of(&mut self, addr: Addr, toucher: usize) -> usize {
        let page = addr >> self.page_shift;
        if let Some(h) = self.homes.get(&page) {
            return *h as usize;
        }
        self.place_page(addr, page, toucher)
    }

    /// Decides the home of `page` on its first use (out of line: once per page).
    #[cold]
    #[inline(never)]
    fn place_page(&mut self, addr: Addr, page: u64, toucher: usize) -> usize {
        let sid = self.structure_of(addr);
        let place = match self.region(sid).map(|r| r.place) {
            Some(Place::Default) | None => match self.default {
                Placement::RoundRobin => Place::RoundRobin,
                Placement::FirstTouch => Place::FirstTouch,
            },
            Some(p) => p,
        };
        let home = match place {
            Place::FirstTouch => toucher % self.nodes,
            Place::Node(n) => n % self.nodes,
            _ => (page % self.nodes as u64) as usize,
        };
        self.homes.insert(page, home as u16);
        home
    }

    /// Moves the page holding `addr` to node `node` (a page migration: `probe::Action`).
    pub fn set_home(&mut self, addr: Addr, node: usize) {
        self.homes
            .insert(addr >> self.page_shift, (node % self.nodes) as u16);
    }

    /// The home if already decided (no side effect).
    pub fn known_home(&self, addr: Addr) -> Option<usize> {
        self.homes
            .get(&(addr >> self.page_shift))
            .map(|h| *h as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_and_naming() {
        let mut m = MemoryMap::new(4096, 64, 4, Placement::RoundRobin);
        let a = m.alloc("a", 10_000, Place::Node(2));
        let b = m.alloc("b", 4096 * 8, Place::RoundRobin);
        let c = m.alloc("c", 4096 * 4, Place::FirstTouch);
        assert_eq!(m.name_of(m.structure_of(a + 9_999)), "a");
        assert_eq!(m.structure_of(a + 10_000), UNNAMED, "padding is unnamed");
        assert_eq!(m.name_of(m.structure_of(b)), "b");
        assert_eq!(m.home_of(a + 5000, 0), 2);
        let homes: Vec<usize> = (0..8).map(|i| m.home_of(b + i * 4096, 0)).collect();
        let mut sorted = homes.clone();
        sorted.sort();
        assert_eq!(
            sorted,
            vec![0, 0, 1, 1, 2, 2, 3, 3],
            "round robin covers all nodes"
        );
        assert_eq!(m.home_of(c + 4096, 3), 3, "first touch by node 3");
        assert_eq!(m.home_of(c + 4096, 1), 3, "home fixed after first touch");
        assert!(m.name_range("x", b + 10, 4, Place::Default).is_err());
        let s1 = m.alloc_sync("l1");
        let s2 = m.alloc_sync("l2");
        assert_eq!(s2 - s1, 64);
        assert_eq!(m.name_of(m.structure_of(s2)), "l2");
    }
}
