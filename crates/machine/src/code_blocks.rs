//! Procedures of traced programs, by code block (issue 19: per procedure, L1 and L2 misses).
//!
//! A kernel names its procedures (`Ctx::enter`); a traced program's code arrives as executed
//! blocks (`Ctx::fetch_code`), and which function holds a block is known only to the trace's
//! reader (the ELF files of the program and its libraries, whose mappings a fused recording
//! learns as the program loads them). So while a traced thread runs, the core keeps the start
//! of its current block (`Core::code_at`, one store per block), and a miss (`agent::l1_miss`,
//! the one place every L1 miss and so every transaction starts) makes the block its
//! procedure, here: each block start gets a procedure id the first time it misses, named
//! by its address until the replay names it by its function after the run
//! (`TraceReplay::name_procedures`); reports then merge procedures by name. The hit path
//! does nothing more; a miss pays a look in a direct-mapped table of blocks, and a hash
//! lookup when the block is not there.
//!
//! Procedure observations (`Observation::Procedure`) are not made for these changes: the
//! procedure of a traced program is what the misses and transactions carry.

use crate::addr::Addr;
use rustc_hash::FxHashMap;

/// Procedure ids of the code blocks that missed.
#[derive(Clone, Debug, Default)]
pub struct CodeBlocks {
    ids: FxHashMap<Addr, u32>,
    /// (block, procedure id) of recent lookups, by a hash of the block.
    recent: Vec<(Addr, u32)>,
}

/// Entries of the table of recent blocks (a power of two).
const RECENT: usize = 4096;

impl CodeBlocks {
    pub fn new() -> CodeBlocks {
        CodeBlocks {
            ids: FxHashMap::default(),
            recent: vec![(Addr::MAX, 0); RECENT],
        }
    }

    /// The procedure of the block starting at `addr`, adding its provisional name (the
    /// address) to `names` the first time.
    #[inline(always)]
    pub fn procedure(&mut self, addr: Addr, names: &mut Vec<String>) -> u32 {
        let i = ((addr >> 4) ^ (addr >> 16)) as usize & (RECENT - 1);
        let last = self.recent[i];
        if last.0 == addr {
            return last.1;
        }
        self.procedure_slow(i, addr, names)
    }

    /// [`CodeBlocks::procedure`] of a block not in the table of recent blocks (out of line,
    /// so that the table's hits, on every L1 miss of a traced thread, stay small).
    #[cold]
    #[inline(never)]
    fn procedure_slow(&mut self, i: usize, addr: Addr, names: &mut Vec<String>) -> u32 {
        let next = names.len() as u32;
        let id = *self.ids.entry(addr).or_insert_with(|| {
            names.push(format!("{addr:#x}"));
            next
        });
        self.recent[i] = (addr, id);
        id
    }

    /// Every block that missed, with its procedure id, in id order.
    pub fn blocks(&self) -> Vec<(Addr, u32)> {
        let mut v: Vec<(Addr, u32)> = self.ids.iter().map(|(&a, &i)| (a, i)).collect();
        v.sort_by_key(|&(_, i)| i);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_block_gets_one_id_after_the_names_so_far() {
        let mut names = vec!["main".to_string()];
        let mut b = CodeBlocks::new();
        assert_eq!(b.procedure(0x400, &mut names), 1);
        assert_eq!(b.procedure(0x500, &mut names), 2);
        assert_eq!(b.procedure(0x400, &mut names), 1);
        // Same slot of the recent table, another block: found in the map.
        assert_eq!(b.procedure(0x1000_0400, &mut names), 3);
        assert_eq!(b.procedure(0x400, &mut names), 1);
        assert_eq!(names, ["main", "0x400", "0x500", "0x10000400"]);
        assert_eq!(b.blocks(), vec![(0x400, 1), (0x500, 2), (0x1000_0400, 3)]);
    }
}
