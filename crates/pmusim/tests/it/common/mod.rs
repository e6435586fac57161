//! Shared by the kernel matrices: one run of the built binary as a user runs it.

use std::process::Command;

/// Runs `pmusim run KERNEL -m MACHINE -p PROCS -s SIZE --json` and returns its JSON document,
/// or why it failed (exit status and standard error), for the matrix's list of failures.
pub fn run_json(
    kernel: &str,
    machine: &str,
    procs: usize,
    size: &str,
) -> Result<serde_json::Value, String> {
    let p = procs.to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_pmusim"))
        .args(["run", kernel, "-m", machine, "-p", &p, "-s", size, "--json"])
        .output()
        .expect("run pmusim");
    if !out.status.success() {
        return Err(format!(
            "exit {:?}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(serde_json::from_slice(&out.stdout).expect("JSON document"))
}

/// Runs `pmusim ARGS` and returns its exit code, standard output and standard error.
#[allow(dead_code)] // the kernel matrix's thread sweeps use it, the paper matrix does not
pub fn pmusim(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pmusim"))
        .args(args)
        .output()
        .expect("run pmusim");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
