//! The card's exact line-request latencies, kept for the report beside the SRAM's histogram:
//! counts by Response State Register (Table 4.9, 32 values) and latency in monitor cycles
//! (0..=4095, and 4096 for "4096 or more", the time-out).
//!
//! Why chunks: a flat 32 x 4097 array per card is 512 KiB, and even one row per RSR used
//! (4097 words zeroed at its first request) made a short run's monitor cost more than its
//! simulation. Here the cycles are split in 65 chunks of 64, a chunk allocated at its first
//! count; a request costs an index and a test, and the memory and the report's reading are
//! proportional to the (RSR, chunk) pairs a run touched.

/// Latency values per chunk.
const CHUNK: usize = 64;
/// Chunks per RSR: 4097 values (0..=4096) in chunks of 64.
const CHUNKS: usize = (crate::latency::TIMEOUT as usize) / CHUNK + 1;
/// Response-state values (5-bit RSR).
pub const RSRS: usize = 32;

/// Exact latencies of one card (or of all cards, `merge`d).
#[derive(Clone, Debug, Default)]
pub struct ExactLatency {
    /// Per RSR: 1 + its row in `rows`, or 0 if no request of that state was counted. Rows
    /// per RSR used, not one table of every (RSR, chunk): zeroing 2,080 slots per card at
    /// its first count was 0.15 M instructions of a short run (issue 20).
    row_of: [u16; RSRS],
    /// Per RSR counted, per chunk: 1 + the chunk's index in `pool`, or 0 if never counted.
    rows: Vec<[u16; CHUNKS]>,
    pool: Vec<[u64; CHUNK]>,
    /// The (RSR, chunk) of each chunk in `pool`: a merge reads the chunks a card touched.
    keys: Vec<(u8, u8)>,
}

impl ExactLatency {
    /// Counts one request of response state `rsr` answered after `cycles` monitor cycles
    /// (4096 and above share the last value).
    #[inline]
    pub fn add(&mut self, rsr: u8, cycles: u64) {
        let v = cycles.min(crate::latency::TIMEOUT) as usize;
        self.chunk(rsr as usize & (RSRS - 1), v / CHUNK)[v % CHUNK] += 1;
    }

    /// The chunk of RSR `r` holding latencies `c * CHUNK ..`, allocated at its first use.
    #[inline(always)]
    fn chunk(&mut self, r: usize, c: usize) -> &mut [u64; CHUNK] {
        let row = self.row_of[r];
        if row != 0 {
            let s = self.rows[row as usize - 1][c];
            if s != 0 {
                return &mut self.pool[s as usize - 1];
            }
        }
        self.new_chunk(r, c)
    }

    #[cold]
    #[inline(never)]
    fn new_chunk(&mut self, r: usize, c: usize) -> &mut [u64; CHUNK] {
        if self.row_of[r] == 0 {
            self.rows.push([0; CHUNKS]);
            self.row_of[r] = self.rows.len() as u16;
        }
        self.pool.push([0; CHUNK]);
        self.keys.push((r as u8, c as u8));
        self.rows[self.row_of[r] as usize - 1][c] = self.pool.len() as u16;
        self.pool.last_mut().expect("pushed")
    }

    /// Adds every count of `other`, chunk by chunk.
    pub fn merge(&mut self, other: &ExactLatency) {
        for (&(r, c), from) in other.keys.iter().zip(&other.pool) {
            for (a, b) in self.chunk(r as usize, c as usize).iter_mut().zip(from) {
                *a += b;
            }
        }
    }

    /// Every nonzero count as (RSR, latency in monitor cycles, count), by RSR then latency.
    pub fn iter(&self) -> impl Iterator<Item = (u8, u64, u64)> + '_ {
        (0..RSRS)
            .filter(|&r| self.row_of[r] != 0)
            .flat_map(move |r| {
                let row = &self.rows[self.row_of[r] as usize - 1];
                row.iter()
                    .enumerate()
                    .filter(|(_, s)| **s != 0)
                    .flat_map(move |(c, &s)| {
                        self.pool[s as usize - 1]
                            .iter()
                            .enumerate()
                            .filter(|(_, n)| **n != 0)
                            .map(move |(i, &n)| (r as u8, (c * CHUNK + i) as u64, n))
                    })
            })
    }

    /// True when nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.pool.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Counts come back by RSR then latency, the time-out's bucket holding everything from
    /// 4096 up, and a merge adds them.
    #[test]
    fn counts_by_rsr_and_latency() {
        let mut a = ExactLatency::default();
        assert!(a.is_empty() && a.iter().next().is_none());
        for (r, c) in [
            (5u8, 100u64),
            (0, 7),
            (5, 100),
            (5, 63),
            (5, 64),
            (31, 4095),
        ] {
            a.add(r, c);
        }
        a.add(31, 4096);
        a.add(31, 90_000);
        let v: Vec<_> = a.iter().collect();
        assert_eq!(
            v,
            [
                (0, 7, 1),
                (5, 63, 1),
                (5, 64, 1),
                (5, 100, 2),
                (31, 4095, 1),
                (31, 4096, 2)
            ]
        );
        let mut b = ExactLatency::default();
        b.add(5, 100);
        b.merge(&a);
        assert_eq!(b.iter().find(|x| x.0 == 5 && x.1 == 100), Some((5, 100, 3)));
        assert_eq!(b.iter().map(|x| x.2).sum::<u64>(), 9);
    }
}
