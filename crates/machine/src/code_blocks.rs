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
//! does nothing more; a miss pays a compare with the core's last block, and a hash lookup
//! when the block changed.
//!
//! Procedure observations (`Observation::Procedure`) are not made for these changes: the
//! procedure of a traced program is what the misses and transactions carry.

use crate::addr::Addr;
use rustc_hash::FxHashMap;

/// Procedure ids of the code blocks that missed.
#[derive(Clone, Debug, Default)]
pub struct CodeBlocks {
    ids: FxHashMap<Addr, u32>,
    /// Per core: (block, procedure id) of its last lookup.
    last: Vec<(Addr, u32)>,
}

impl CodeBlocks {
    pub fn new(cores: usize) -> CodeBlocks {
        CodeBlocks {
            ids: FxHashMap::default(),
            last: vec![(Addr::MAX, 0); cores],
        }
    }

    /// The procedure of the block starting at `addr` (core `core`'s current block), adding
    /// its provisional name (the address) to `names` the first time.
    #[inline]
    pub fn procedure(&mut self, core: usize, addr: Addr, names: &mut Vec<String>) -> u32 {
        let last = &mut self.last[core];
        if last.0 == addr {
            return last.1;
        }
        let next = names.len() as u32;
        let id = *self.ids.entry(addr).or_insert_with(|| {
            names.push(format!("{addr:#x}"));
            next
        });
        *last = (addr, id);
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
        let mut b = CodeBlocks::new(2);
        assert_eq!(b.procedure(0, 0x400, &mut names), 1);
        assert_eq!(b.procedure(1, 0x500, &mut names), 2);
        assert_eq!(b.procedure(0, 0x400, &mut names), 1);
        assert_eq!(b.procedure(0, 0x500, &mut names), 2);
        assert_eq!(b.procedure(1, 0x400, &mut names), 1);
        assert_eq!(names, ["main", "0x400", "0x500"]);
        assert_eq!(b.blocks(), vec![(0x400, 1), (0x500, 2)]);
    }
}
