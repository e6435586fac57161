//! Host-side data of kernels, shared by the simulated threads, and the simulated addresses of
//! arrays.

use machine::Addr;
use std::cell::Cell;

/// A host array shared by all simulated threads (they run one at a time on one host thread).
pub struct Shared<T: Copy> {
    cells: Vec<Cell<T>>,
}

impl<T: Copy> Shared<T> {
    pub fn new(n: usize, v: T) -> Shared<T> {
        Shared {
            cells: (0..n).map(|_| Cell::new(v)).collect(),
        }
    }
    pub fn from_vec(v: Vec<T>) -> Shared<T> {
        Shared {
            cells: v.into_iter().map(Cell::new).collect(),
        }
    }
    #[inline]
    pub fn get(&self, i: usize) -> T {
        self.cells[i].get()
    }
    #[inline]
    pub fn set(&self, i: usize, v: T) {
        self.cells[i].set(v)
    }
    pub fn len(&self) -> usize {
        self.cells.len()
    }
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }
    pub fn to_vec(&self) -> Vec<T> {
        self.cells.iter().map(|c| c.get()).collect()
    }
}

/// The simulated address range of an array of `elem` byte elements.
#[derive(Clone, Copy, Debug)]
pub struct Array {
    pub base: Addr,
    pub elem: u64,
}

impl Array {
    #[inline]
    pub fn at(&self, i: usize) -> Addr {
        self.base + i as u64 * self.elem
    }
}
