//! Workloads: the programs that run on the simulated machine.
//!
//! A workload allocates its named data structures (`setup`), then runs one thread per
//! processor (`thread`) against the thread API (`machine::Ctx`), and finally checks its own
//! result (`verify`) against an independent reference. Kernels keep their real data in host
//! memory (`Shared<T>`, interior-mutable cells: all threads run on one host thread, one at a
//! time, so plain `Cell`s are enough) and tell the machine which simulated addresses they
//! touch, so results are real and timing comes from the simulated memory system.

pub mod kernels;
pub mod micro;
pub mod registry;
pub mod shared;
pub mod trace;

pub use machine::{Barrier, Ctx, Lock, Mix, Place, Procedure};
pub use registry::{find, list, Size, WorkloadInfo};
pub use shared::{Array, Shared};

use machine::sim::Setup;
use std::rc::Rc;

/// Outcome of a workload's self-check.
#[derive(Clone, Debug, PartialEq)]
pub struct Verification {
    pub verified: bool,
    /// What was compared, and the worst error, in words.
    pub detail: String,
}

impl Verification {
    pub fn ok(detail: impl Into<String>) -> Verification {
        Verification {
            verified: true,
            detail: detail.into(),
        }
    }
    pub fn failed(detail: impl Into<String>) -> Verification {
        Verification {
            verified: false,
            detail: detail.into(),
        }
    }
    /// Passes when `cond`, with `detail` either way.
    pub fn check(cond: bool, detail: impl Into<String>) -> Verification {
        Verification {
            verified: cond,
            detail: detail.into(),
        }
    }
}

/// A program for the simulated machine.
pub trait Workload {
    /// Rejects a thread count the program cannot run with (SPLASH-2 kernels have divisibility
    /// constraints), before anything is allocated.
    fn check(&self, _nthreads: usize) -> Result<(), String> {
        Ok(())
    }
    /// Allocates data structures, locks, barriers and procedures for `nthreads` threads and
    /// initializes the host data.
    fn setup(&mut self, s: &mut Setup, nthreads: usize);
    /// The body of thread `ctx.tid()`.
    fn thread(&self, ctx: &mut Ctx);
    /// Checks the result against an independent reference (after all threads finished).
    fn verify(&self) -> Verification;
}

/// Sets up `w` on `m` with one thread per processor (or `threads` if given) and spawns them.
/// Returns the shared workload so the caller can verify it after `m.run`, or why the workload
/// cannot run with that many threads.
pub fn install(
    mut w: Box<dyn Workload>,
    m: &mut machine::Machine,
    threads: Option<usize>,
) -> Result<Rc<dyn Workload>, String> {
    let n = threads.unwrap_or(m.state().cores.len());
    if n == 0 || n > m.state().cores.len() {
        return Err(format!(
            "{n} threads requested but the machine has {} processors",
            m.state().cores.len()
        ));
    }
    w.check(n)?;
    w.setup(&mut m.setup(), n);
    let w: Rc<dyn Workload> = Rc::from(w);
    for p in 0..n {
        let w = w.clone();
        m.spawn(p, move |ctx| w.thread(ctx));
    }
    Ok(w)
}
