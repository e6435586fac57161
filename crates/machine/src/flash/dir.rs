//! The dynamic-pointer-allocation (DP) directory (seed 004, 3.1.2; Simoni's DPA [Sim92]).
//!
//! Every 128-byte line has an 8-byte **directory header** at its home. The header holds the
//! line's state flags, the first sharer (or the dirty owner) in `Ptr`, and `Link`, the head of
//! a linked list of further sharers kept in the node's **pointer/link store**: entries of
//! (pointer, next) allocated dynamically from a free list and returned to it when the sharers
//! are invalidated.
//!
//! # Header layout (bit 0 = least significant)
//!
//! | bits  | field     | meaning |
//! |-------|-----------|---------|
//! | 0     | Pending   | a transaction for this line is in progress at the home (forwarded to the dirty owner); requests are NACKed |
//! | 1     | Dirty     | one cache holds the line modified; memory is stale |
//! | 2     | HeadPtr   | `Ptr` holds a valid (remote) node: the first sharer, or the owner when Dirty |
//! | 3     | Local     | the home node's own processor caches the line (shared, or modified when Dirty) |
//! | 4–13  | Ptr       | node number (10 bits: up to 1024 nodes) |
//! | 14–15 | reserved  | unused by DP and by FlashPoint |
//! | 16    | FPWarm    | **FlashPoint spare**: the line was referenced since monitoring began |
//! | 17–26 | FPBin     | **FlashPoint spare**: 10-bit data-structure bin number |
//! | 27–31 | reserved  | unused |
//! | 32–63 | Link      | index of the next sharer in the pointer/link store (0 = end of list) |
//!
//! The eleven bits 16–26 are the "previously unused bits" FlashPoint takes for its warm bit and
//! ten-bit bin (seed 004, "Performance Data Structures"). The DP protocol here never writes
//! them: every header update goes through the setters below, which touch only their own field.
//!
//! # Choices the seed leaves open
//! - The home's own processor is tracked by the `Local` bit, not by a list entry, so local
//!   sharing never allocates pointer-store entries (FLASH does the same).
//! - New sharers are pushed at the head (the header's `Ptr`); the old head moves to a store
//!   entry. Shared lines are replaced silently by processors, so a re-reading sharer may already
//!   be listed: the list is searched before adding (the search is charged per sharer).
//! - If a node's store runs out of entries it grows, and the overflow is counted
//!   (`FlashStats::store_overflows`); FLASH would reclaim entries by invalidating sharers, which
//!   is not modelled.

use rustc_hash::FxHashMap;

pub const PENDING: u64 = 1 << 0;
pub const DIRTY: u64 = 1 << 1;
pub const HEAD_PTR: u64 = 1 << 2;
pub const LOCAL: u64 = 1 << 3;
pub const PTR_SHIFT: u32 = 4;
pub const PTR_BITS: u32 = 10;
pub const PTR_MASK: u64 = ((1 << PTR_BITS) - 1) << PTR_SHIFT;
/// FlashPoint's warm bit (spare in DP).
pub const FP_WARM: u64 = 1 << 16;
pub const FP_BIN_SHIFT: u32 = 17;
pub const FP_BIN_BITS: u32 = 10;
pub const FP_BIN_MASK: u64 = ((1 << FP_BIN_BITS) - 1) << FP_BIN_SHIFT;
/// All eleven FlashPoint spare bits (16..=26).
pub const FP_SPARE_MASK: u64 = FP_WARM | FP_BIN_MASK;
pub const LINK_SHIFT: u32 = 32;
pub const LINK_MASK: u64 = 0xFFFF_FFFF << LINK_SHIFT;
/// Most nodes a `Ptr` field can name.
pub const MAX_NODES: usize = 1 << PTR_BITS;

/// Accessors for a directory header value.
pub trait Header {
    fn flag(self, f: u64) -> bool;
    fn ptr(self) -> u16;
    fn link(self) -> u32;
    fn fp_bin(self) -> u16;
}

impl Header for u64 {
    fn flag(self, f: u64) -> bool {
        self & f != 0
    }
    fn ptr(self) -> u16 {
        ((self & PTR_MASK) >> PTR_SHIFT) as u16
    }
    fn link(self) -> u32 {
        (self >> LINK_SHIFT) as u32
    }
    fn fp_bin(self) -> u16 {
        ((self & FP_BIN_MASK) >> FP_BIN_SHIFT) as u16
    }
}

pub fn set_flag(h: &mut u64, f: u64, on: bool) {
    if on {
        *h |= f;
    } else {
        *h &= !f;
    }
}
pub fn set_ptr(h: &mut u64, node: u16) {
    debug_assert!((node as usize) < MAX_NODES);
    *h = (*h & !PTR_MASK) | ((node as u64) << PTR_SHIFT & PTR_MASK);
}
pub fn set_link(h: &mut u64, link: u32) {
    *h = (*h & !LINK_MASK) | ((link as u64) << LINK_SHIFT);
}
/// FlashPoint's bin field (the DP protocol never calls this).
pub fn set_fp_bin(h: &mut u64, bin: u16) {
    *h = (*h & !FP_BIN_MASK) | ((bin as u64) << FP_BIN_SHIFT & FP_BIN_MASK);
}

/// A header in words, e.g. `Dirty HeadPtr Ptr=5 Link=0 FPWarm=0 FPBin=0`.
pub fn describe_header(h: u64) -> String {
    let mut s = Vec::new();
    for (f, n) in [
        (PENDING, "Pending"),
        (DIRTY, "Dirty"),
        (HEAD_PTR, "HeadPtr"),
        (LOCAL, "Local"),
    ] {
        if h.flag(f) {
            s.push(n.to_string());
        }
    }
    if s.is_empty() {
        s.push("Clean-uncached".into());
    }
    s.push(format!("Ptr={}", h.ptr()));
    s.push(format!("Link={}", h.link()));
    s.push(format!("FPWarm={}", h.flag(FP_WARM) as u8));
    s.push(format!("FPBin={}", h.fp_bin()));
    let reserved = h & !(PENDING | DIRTY | HEAD_PTR | LOCAL | PTR_MASK | FP_SPARE_MASK | LINK_MASK);
    if reserved != 0 {
        s.push(format!("reserved={reserved:#x}"));
    }
    s.join(" ")
}

/// The header of a line never requested: all zero. In test builds the FlashPoint spare bits
/// start with a pattern instead, and `Directory::set_header` asserts that no protocol action
/// changes them, so every protocol test (the random tester included) checks that DP leaves
/// FlashPoint's bits alone.
fn initial_header(line: u64) -> u64 {
    if cfg!(test) {
        (line.wrapping_mul(0x9E37_79B9) << FP_BIN_SHIFT.saturating_sub(1)) & FP_SPARE_MASK
    } else {
        0
    }
}

/// One node's pointer/link store: entry 0 is the null link.
#[derive(Clone, Debug)]
pub struct PointerStore {
    ptr: Vec<u16>,
    next: Vec<u32>,
    free: u32,
    /// Entries in use.
    pub used: u32,
    /// Times the store was exhausted and grew.
    pub overflows: u64,
}

impl PointerStore {
    pub fn new(entries: u32) -> PointerStore {
        let n = entries as usize + 1;
        // Free list threads 1 -> 2 -> ... -> entries -> 0.
        let next = (0..n as u32)
            .map(|i| {
                if i == 0 || i as usize + 1 == n {
                    0
                } else {
                    i + 1
                }
            })
            .collect();
        PointerStore {
            ptr: vec![0; n],
            next,
            free: if entries > 0 { 1 } else { 0 },
            used: 0,
            overflows: 0,
        }
    }
    fn alloc(&mut self, p: u16, next: u32) -> u32 {
        if self.free == 0 {
            self.overflows += 1;
            self.ptr.push(0);
            self.next.push(0);
            self.free = (self.ptr.len() - 1) as u32;
        }
        let i = self.free;
        self.free = self.next[i as usize];
        self.ptr[i as usize] = p;
        self.next[i as usize] = next;
        self.used += 1;
        i
    }
}

/// All directory headers and pointer stores, plus the memory's data tokens.
pub struct Directory {
    /// line -> (header, home node).
    headers: FxHashMap<u64, (u64, u16)>,
    /// FlashPoint spare bits written (by a bin assignment) before the line's first request,
    /// when it has no header entry yet. Empty in the DP protocol.
    spare: FxHashMap<u64, u64>,
    stores: Vec<PointerStore>,
    /// Memory contents (the data token of each line) at its home.
    pub memory: FxHashMap<u64, u64>,
}

impl Directory {
    pub fn new(nodes: usize, entries: u32) -> Directory {
        Directory {
            headers: FxHashMap::default(),
            spare: FxHashMap::default(),
            stores: (0..nodes).map(|_| PointerStore::new(entries)).collect(),
            memory: FxHashMap::default(),
        }
    }
    pub fn header(&self, line: u64) -> u64 {
        self.headers.get(&line).map_or_else(
            || match self.spare.get(&line) {
                Some(s) => (initial_header(line) & !FP_SPARE_MASK) | s,
                None => initial_header(line),
            },
            |e| e.0,
        )
    }
    /// FlashPoint (seed 004, 3.1.3): writes the eleven spare bits (warm bit and bin) of
    /// `line`'s header, leaving every DP field alone. FlashPoint's handlers are the only
    /// writers of these bits; `set_header` still asserts that DP code never changes them.
    pub fn set_spare(&mut self, line: u64, bits: u64) {
        let bits = bits & FP_SPARE_MASK;
        match self.headers.get_mut(&line) {
            Some(e) => e.0 = (e.0 & !FP_SPARE_MASK) | bits,
            None => {
                self.spare.insert(line, bits);
            }
        }
    }
    /// The home recorded with the line's header (None before its first request).
    pub fn home(&self, line: u64) -> Option<usize> {
        self.headers.get(&line).map(|e| e.1 as usize)
    }
    pub fn set_header(&mut self, home: u16, line: u64, h: u64) {
        debug_assert_eq!(
            h & FP_SPARE_MASK,
            self.header(line) & FP_SPARE_MASK,
            "the DP protocol changed FlashPoint's spare bits of line {line:#x}"
        );
        self.headers.insert(line, (h, home));
    }
    pub fn store(&self, node: usize) -> &PointerStore {
        &self.stores[node]
    }

    /// The remote sharers listed in header `h` (head first).
    pub fn sharers(&self, home: usize, h: u64) -> Vec<u16> {
        let mut v = Vec::new();
        if !h.flag(HEAD_PTR) || h.flag(DIRTY) {
            return v;
        }
        v.push(h.ptr());
        let st = &self.stores[home];
        let mut l = h.link();
        while l != 0 {
            v.push(st.ptr[l as usize]);
            l = st.next[l as usize];
        }
        v
    }

    /// Adds remote sharer `s` (if not listed). Returns the list entries walked.
    pub fn add_sharer(&mut self, home: usize, h: &mut u64, s: u16) -> u32 {
        if !h.flag(HEAD_PTR) {
            set_ptr(h, s);
            set_flag(h, HEAD_PTR, true);
            set_link(h, 0);
            return 0;
        }
        let list = self.sharers(home, *h);
        if list.contains(&s) {
            return list.len() as u32;
        }
        let e = self.stores[home].alloc(h.ptr(), h.link());
        set_link(h, e);
        set_ptr(h, s);
        list.len() as u32
    }

    /// Empties the remote sharer list, returning its entries to the free list.
    pub fn clear_sharers(&mut self, home: usize, h: &mut u64) {
        let st = &mut self.stores[home];
        let mut l = h.link();
        while l != 0 {
            let n = st.next[l as usize];
            st.next[l as usize] = st.free;
            st.free = l;
            st.used -= 1;
            l = n;
        }
        set_link(h, 0);
        set_ptr(h, 0);
        set_flag(h, HEAD_PTR, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_round_trip_and_touch_nothing_else() {
        for f in [PENDING, DIRTY, HEAD_PTR, LOCAL, FP_WARM] {
            let mut h = !0u64;
            set_flag(&mut h, f, false);
            assert_eq!(h, !f);
            set_flag(&mut h, f, true);
            assert_eq!(h, !0);
            let mut h = 0;
            set_flag(&mut h, f, true);
            assert!(h.flag(f));
            assert_eq!(h, f);
        }
    }

    #[test]
    fn ptr_round_trips_in_ten_bits() {
        for n in [0u16, 1, 5, 63, 1023] {
            let mut h = !0u64;
            set_ptr(&mut h, n);
            assert_eq!(h.ptr(), n);
            assert_eq!(h | PTR_MASK, !0, "other bits changed");
            let mut h = 0;
            set_ptr(&mut h, n);
            assert_eq!(h & !PTR_MASK, 0);
        }
    }

    #[test]
    fn link_round_trips_in_the_upper_word() {
        for l in [0u32, 1, 77, u32::MAX] {
            let mut h = 0x1234_5678u64;
            set_link(&mut h, l);
            assert_eq!(h.link(), l);
            assert_eq!(h & 0xFFFF_FFFF, 0x1234_5678);
        }
    }

    #[test]
    fn flashpoint_spare_bits_are_eleven_and_disjoint() {
        assert_eq!(FP_SPARE_MASK.count_ones(), 11);
        assert_eq!(FP_SPARE_MASK, 0x7FF << 16);
        let used = PENDING | DIRTY | HEAD_PTR | LOCAL | PTR_MASK | LINK_MASK;
        assert_eq!(used & FP_SPARE_MASK, 0);
        for b in [0u16, 1, 512, 1023] {
            let mut h = !0u64;
            set_fp_bin(&mut h, b);
            assert_eq!(h.fp_bin(), b);
            assert_eq!(h | FP_BIN_MASK, !0);
        }
    }

    #[test]
    fn sharer_list_operations_keep_spare_bits() {
        let mut d = Directory::new(2, 2);
        let mut h = FP_SPARE_MASK; // FlashPoint state that DP must not disturb
        for s in [3u16, 4, 5, 4, 6] {
            d.add_sharer(1, &mut h, s);
        }
        assert_eq!(d.sharers(1, h), vec![6, 5, 4, 3]);
        assert_eq!(d.store(1).overflows, 1, "2 entries, 3 needed");
        d.clear_sharers(1, &mut h);
        assert!(d.sharers(1, h).is_empty());
        assert_eq!(d.store(1).used, 0);
        assert_eq!(h, FP_SPARE_MASK);
        // Entries are reused from the free list.
        d.add_sharer(1, &mut h, 1);
        d.add_sharer(1, &mut h, 2);
        assert_eq!(d.store(1).overflows, 1);
    }

    #[test]
    fn test_builds_start_headers_with_spare_bits_set() {
        let d = Directory::new(1, 1);
        let set = (0..64u64).filter(|&l| d.header(l) != 0).count();
        assert!(set > 32, "the spare-bit check would be vacuous");
        assert!((0..64u64).all(|l| d.header(l) & !FP_SPARE_MASK == 0));
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "spare bits")]
    fn writing_spare_bits_is_caught() {
        let mut d = Directory::new(1, 1);
        let h = d.header(5) ^ FP_WARM;
        d.set_header(0, 5, h);
    }

    #[test]
    fn decoder_names_every_field() {
        let mut h = PENDING | DIRTY | HEAD_PTR | LOCAL | FP_WARM;
        set_ptr(&mut h, 9);
        set_link(&mut h, 3);
        set_fp_bin(&mut h, 17);
        assert_eq!(
            describe_header(h),
            "Pending Dirty HeadPtr Local Ptr=9 Link=3 FPWarm=1 FPBin=17"
        );
        assert_eq!(
            describe_header(1 << 14),
            "Clean-uncached Ptr=0 Link=0 FPWarm=0 FPBin=0 reserved=0x4000"
        );
    }
}
