//! SPLASH-2 kernels (FFT, LU, OCEAN, RADIX) at the FlashPoint study's problem sizes (seed 004,
//! section 3.2.1), each computing and checking a real result.

mod common;
pub mod fft;
pub mod lu;
pub mod ocean;
pub mod radix;

use crate::registry::{Size, WorkloadInfo};

pub use fft::Fft;
pub use lu::Lu;
pub use ocean::Ocean;
pub use radix::Radix;

/// The kernels' entries for the registry.
pub fn infos() -> Vec<WorkloadInfo> {
    vec![
        WorkloadInfo {
            name: "fft",
            kind: "splash2",
            what: "complex 1-D FFT, radix-√n six-step, blocked transposes; forward then inverse",
            sizes: ["4K points", "64K points", "256K points"],
            structures: &["x", "trans", "umain", "umain2", "upriv"],
            make: |s| {
                Box::new(Fft::new(match s {
                    Size::Test => 12,
                    Size::Small => 16,
                    Size::Paper => 18,
                }))
            },
        },
        WorkloadInfo {
            name: "lu",
            kind: "splash2",
            what: "blocked LU without pivoting, contiguous 16x16 blocks on a 2-D processor grid",
            sizes: ["64x64", "256x256", "512x512"],
            structures: &["a"],
            make: |s| {
                Box::new(Lu::new(match s {
                    Size::Test => 64,
                    Size::Small => 256,
                    Size::Paper => 512,
                }))
            },
        },
        WorkloadInfo {
            name: "radix",
            kind: "splash2",
            what: "integer radix sort, radix 256, keys < 2^20, tree prefix, scattered permutation",
            sizes: ["16K keys", "256K keys", "1M keys"],
            structures: &["key0", "key1", "rank_me", "prefix_tree"],
            make: |s| {
                Box::new(Radix::new(match s {
                    Size::Test => 16 << 10,
                    Size::Small => 256 << 10,
                    Size::Paper => 1 << 20,
                }))
            },
        },
        WorkloadInfo {
            name: "ocean",
            kind: "splash2",
            what: "two-layer ocean model, contiguous subgrids, red-black multigrid (simplified)",
            sizes: ["34x34, 2 steps", "130x130, 3 steps", "258x258, 3 steps"],
            structures: &[
                "psi",
                "psim",
                "work1",
                "work2",
                "work3",
                "tauz",
                "q_multi",
                "rhs_multi",
                "multi",
            ],
            make: |s| {
                Box::new(match s {
                    Size::Test => Ocean::new(32, 2),
                    Size::Small => Ocean::new(128, 3),
                    Size::Paper => Ocean::new(256, 3),
                })
            },
        },
    ]
}
