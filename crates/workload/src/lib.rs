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

/// Most software threads per hardware context `install` accepts (each is a coroutine with its
/// own stack; the issue asks for 4x the contexts to work).
pub const MAX_THREADS_PER_CONTEXT: usize = 64;

/// Sets up `w` on `m` with one thread per processor (or `threads` if given: any count from 1 to
/// `MAX_THREADS_PER_CONTEXT` times the hardware contexts, placed and time-sliced by the
/// machine's scheduler, `machine::sched`) and spawns them. Returns the shared workload so the
/// caller can verify it after `m.run`, or why the workload cannot run with that many threads.
pub fn install(
    mut w: Box<dyn Workload>,
    m: &mut machine::Machine,
    threads: Option<usize>,
) -> Result<Rc<dyn Workload>, String> {
    // The program's cores: a preset may leave some to the system (`cpu.system_cores`).
    let procs = m.state().preset.program_procs();
    let contexts = procs * m.state().preset.cpu.threads_per_core as usize;
    let n = threads.unwrap_or(procs);
    let max = contexts * MAX_THREADS_PER_CONTEXT;
    if n == 0 || n > max {
        return Err(format!(
            "--threads {n}: must be 1 to {max} ({MAX_THREADS_PER_CONTEXT} per hardware context; the machine has {procs} processors x {} contexts)",
            m.state().preset.cpu.threads_per_core
        ));
    }
    w.check(n)?;
    w.setup(&mut m.setup(), n);
    let w: Rc<dyn Workload> = Rc::from(w);
    for t in 0..n {
        let w = w.clone();
        m.spawn(t, move |ctx| w.thread(ctx));
    }
    Ok(w)
}

/// Sets up `w` as process `pid` of a multiprogrammed machine (`Machine::new_process`) with
/// `n` threads of its own (`ctx.tid()` in `0..n` within the process) and spawns them as the
/// machine's next software threads. Its data structures are named `process/name`.
pub fn install_process(
    mut w: Box<dyn Workload>,
    m: &mut machine::Machine,
    pid: u16,
    n: usize,
) -> Result<Rc<dyn Workload>, String> {
    w.check(n)?;
    w.setup(&mut m.setup_process(pid), n);
    let w: Rc<dyn Workload> = Rc::from(w);
    for t in 0..n {
        let w = w.clone();
        m.spawn_in(pid, t, n, move |ctx| w.thread(ctx));
    }
    Ok(w)
}
