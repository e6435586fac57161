//! SPLASH-2 kernels (FFT, LU, OCEAN, RADIX) at the FlashPoint study's problem sizes.

use crate::registry::WorkloadInfo;

/// The kernels' entries for the registry (filled in as kernels are added).
pub fn infos() -> Vec<WorkloadInfo> {
    Vec::new()
}
