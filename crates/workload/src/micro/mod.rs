//! Micro-kernels, each provoking one memory-system behaviour, with results checked.
//!
//! | name | behaviour | where it shows in the ground truth |
//! | --- | --- | --- |
//! | `false-sharing` | per-thread counters packed in one line | coherence misses and invalidations on `counters` |
//! | `producer-consumer` | true sharing: a block written by one thread, read by its partner | coherence read misses on `buffer`, handshakes on `flags` |
//! | `lock` | one contended lock around a shared counter | misses and NACKs on the lock's line |
//! | `migratory` | a record read-modified-written by each thread in turn | read misses followed by upgrades on `record` |
//! | `stream` | each thread sweeps an array larger than its L2 | capacity misses on `stream` |
//! | `pointer-chase` | dependent loads through a list homed on another node | remote read misses and their latency on `list` |
//! | `hits` | a loop over an array that fits in the L1 | L1 hits (the `uni-hit` benchmark) |
//! | `informing` | a program profiling its own misses with informing memory operations | its self-measured L1 misses equal the ground truth's `l1d` misses |

mod chase;
mod informing;
mod sharing;
mod stream;

use crate::registry::{Size, WorkloadInfo};

pub use chase::PointerChase;
pub use informing::Informing;
pub use sharing::{FalseSharing, LockCounter, Migratory, ProducerConsumer};
pub use stream::{Hits, Stream};

fn scale(s: Size, test: u64, small: u64, paper: u64) -> u64 {
    match s {
        Size::Test => test,
        Size::Small => small,
        Size::Paper => paper,
    }
}

pub fn infos() -> Vec<WorkloadInfo> {
    vec![
        WorkloadInfo {
            name: "false-sharing",
            kind: "micro",
            what: "each thread increments its own counter; all counters share one line",
            sizes: ["2000 increments", "50000", "500000"],
            structures: &["counters"],
            make: |s| Box::new(FalseSharing::new(scale(s, 2_000, 50_000, 500_000))),
        },
        WorkloadInfo {
            name: "producer-consumer",
            kind: "micro",
            what: "pairs of threads: one writes a 1 KiB block, its partner reads it, in rounds",
            sizes: ["20 rounds", "500", "5000"],
            structures: &["buffer", "flags"],
            make: |s| Box::new(ProducerConsumer::new(scale(s, 20, 500, 5_000), 128)),
        },
        WorkloadInfo {
            name: "lock",
            kind: "micro",
            what: "all threads increment one counter under one test-and-test-and-set lock",
            sizes: ["200 per thread", "2000", "20000"],
            structures: &["lock", "counter"],
            make: |s| Box::new(LockCounter::new(scale(s, 200, 2_000, 20_000))),
        },
        WorkloadInfo {
            name: "migratory",
            kind: "micro",
            what: "a 4-line record read and updated by each thread in turn, under a lock",
            sizes: ["100 per thread", "1000", "10000"],
            structures: &["record", "lock"],
            make: |s| Box::new(Migratory::new(scale(s, 100, 1_000, 10_000))),
        },
        WorkloadInfo {
            name: "stream",
            kind: "micro",
            what: "each thread sums and scales its own array, twice the L2 size, several passes",
            sizes: ["2 MiB x 2 passes", "4 MiB x 3", "16 MiB x 4"],
            structures: &["stream"],
            make: |s| match s {
                Size::Test => Box::new(Stream::new(2 << 20, 2)),
                Size::Small => Box::new(Stream::new(4 << 20, 3)),
                Size::Paper => Box::new(Stream::new(16 << 20, 4)),
            },
        },
        WorkloadInfo {
            name: "pointer-chase",
            kind: "micro",
            what: "dependent loads through a random cyclic list homed on the next node",
            sizes: ["2000 hops", "50000", "500000"],
            structures: &["list"],
            make: |s| Box::new(PointerChase::new(scale(s, 2_000, 50_000, 500_000))),
        },
        WorkloadInfo {
            name: "informing",
            kind: "micro",
            what: "each thread profiles its own misses: a miss trap, then informing loads",
            sizes: ["64 KiB x 2 passes", "256 KiB x 3", "1 MiB x 4"],
            structures: &["array"],
            make: |s| match s {
                Size::Test => Box::new(Informing::new(64 << 10, 2)),
                Size::Small => Box::new(Informing::new(256 << 10, 3)),
                Size::Paper => Box::new(Informing::new(1 << 20, 4)),
            },
        },
        WorkloadInfo {
            name: "hits",
            kind: "micro",
            what: "each thread loops over its own 8 KiB array (L1-resident after the first pass)",
            sizes: ["100k refs per thread", "10M", "100M"],
            structures: &["hits"],
            make: |s| Box::new(Hits::new(scale(s, 100_000, 10_000_000, 100_000_000))),
        },
    ]
}
