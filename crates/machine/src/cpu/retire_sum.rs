//! Retirements summed in the parts `Counters::ops` is computed from, for a probe's sink
//! (`retire_sink`): adding a report's differences (`Counters::add_since`) costs less than
//! splitting each report into ops (`Counters::ops_since`); the sum is split once, when the
//! probe takes it. Its own file so that the sink (and `probe`, which names it) need not import
//! the core (`cpu`), which imports `probe`.

use super::op::{Class, Op};

/// Where `ops_since` finds the sized accesses that have ops of their own: (loads 0 /
/// stores 1, size in bytes, op).
pub const SIZED: [(usize, usize, Op); 10] = {
    let mut t = [(0, 0, Op::Load8); 10];
    let sizes = [1u32, 2, 4, 16, 32];
    let mut j = 0;
    while j < 10 {
        let (w, size) = (j / 5, sizes[j % 5]);
        t[j] = (w, size as usize, Op::sized(size, w == 1));
        j += 1;
    }
    t
};

/// Retirements summed in the parts `Counters::ops` is computed from (`Counters::add_since`):
/// what a probe's sink keeps per hardware context between its reports (`retire_sink`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetireSum {
    pub instr: [u64; 6],
    pub xops: [u64; Op::COUNT],
    /// The `xops` that may be non-zero (bit `op as usize`).
    pub xdirty: u64,
    /// The sized accesses with ops of their own, in `SIZED` order.
    pub sized: [u64; 10],
}

impl Default for RetireSum {
    fn default() -> RetireSum {
        RetireSum {
            instr: [0; 6],
            xops: [0; Op::COUNT],
            xdirty: 0,
            sized: [0; 10],
        }
    }
}

impl RetireSum {
    /// Adds `n` instructions of `o` (a probe summing a span it was reported).
    pub fn add_op(&mut self, o: Op, n: u64) {
        self.instr[o.class() as usize] += n;
        if o.is_default() {
            return;
        }
        match SIZED.iter().position(|&(_, _, s)| s == o) {
            Some(j) => self.sized[j] += n,
            None => {
                self.xops[o as usize] += n;
                self.xdirty |= 1 << o as usize;
            }
        }
    }

    /// The sum by op (as `Counters::ops` splits classes): writes each moved op's count in
    /// `out` (other entries are stale) and returns the mask of the moved ops (bit
    /// `op as usize`); the sum is then empty.
    pub fn take_ops(&mut self, out: &mut [u64; Op::COUNT]) -> u64 {
        let mut moved = 0u64;
        let mut other = [0u64; 6];
        let put = |d: &mut [u64; Op::COUNT], moved: &mut u64, o: usize, x: u64| {
            if *moved >> o & 1 == 0 {
                d[o] = x;
                *moved |= 1 << o;
            } else {
                d[o] += x;
            }
        };
        let mut b = std::mem::take(&mut self.xdirty);
        while b != 0 {
            let i = b.trailing_zeros() as usize;
            b &= b - 1;
            let x = std::mem::take(&mut self.xops[i]);
            if x != 0 {
                put(out, &mut moved, i, x);
                other[Op::ALL[i].class() as usize] += x;
            }
        }
        for (j, &(_, _, o)) in SIZED.iter().enumerate() {
            let x = std::mem::take(&mut self.sized[j]);
            if x != 0 {
                put(out, &mut moved, o as usize, x);
                other[o.class() as usize] += x;
            }
        }
        for (k, c) in Class::ALL.into_iter().enumerate() {
            let x = std::mem::take(&mut self.instr[k]) - other[k];
            if x != 0 {
                put(out, &mut moved, Op::default_of(c) as usize, x);
            }
        }
        moved
    }
}
