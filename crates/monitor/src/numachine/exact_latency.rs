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
    /// Per (RSR, chunk): 1 + its index in `pool`, or 0 if never counted. Empty until the
    /// first count.
    slot: Vec<u32>,
    pool: Vec<[u64; CHUNK]>,
}

impl ExactLatency {
    /// Counts one request of response state `rsr` answered after `cycles` monitor cycles
    /// (4096 and above share the last value).
    #[inline]
    pub fn add(&mut self, rsr: u8, cycles: u64) {
        self.add_n(rsr, cycles, 1)
    }

    #[inline(always)]
    fn add_n(&mut self, rsr: u8, cycles: u64, n: u64) {
        let v = cycles.min(crate::latency::TIMEOUT) as usize;
        let k = (rsr as usize & (RSRS - 1)) * CHUNKS + v / CHUNK;
        self.chunk(k)[v % CHUNK] += n;
    }

    /// Chunk `k` (RSR x CHUNKS + latency / CHUNK), allocated at its first use.
    #[inline(always)]
    fn chunk(&mut self, k: usize) -> &mut [u64; CHUNK] {
        match self.slot.get(k) {
            Some(&s) if s != 0 => &mut self.pool[s as usize - 1],
            _ => self.new_chunk(k),
        }
    }

    #[cold]
    #[inline(never)]
    fn new_chunk(&mut self, k: usize) -> &mut [u64; CHUNK] {
        if self.slot.is_empty() {
            self.slot = vec![0; RSRS * CHUNKS];
        }
        self.pool.push([0; CHUNK]);
        self.slot[k] = self.pool.len() as u32;
        self.pool.last_mut().expect("pushed")
    }

    /// Adds every count of `other`, chunk by chunk.
    pub fn merge(&mut self, other: &ExactLatency) {
        for (k, &s) in other.slot.iter().enumerate() {
            if s != 0 {
                let from = &other.pool[s as usize - 1];
                for (a, b) in self.chunk(k).iter_mut().zip(from) {
                    *a += b;
                }
            }
        }
    }

    /// Every nonzero count as (RSR, latency in monitor cycles, count), by RSR then latency.
    pub fn iter(&self) -> impl Iterator<Item = (u8, u64, u64)> + '_ {
        self.slot
            .iter()
            .enumerate()
            .filter(|(_, s)| **s != 0)
            .flat_map(move |(k, &s)| {
                let (rsr, chunk) = ((k / CHUNKS) as u8, k % CHUNKS);
                self.pool[s as usize - 1]
                    .iter()
                    .enumerate()
                    .filter(|(_, n)| **n != 0)
                    .map(move |(i, &n)| (rsr, (chunk * CHUNK + i) as u64, n))
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
