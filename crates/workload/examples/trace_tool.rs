//! Writes the trace of `pmusim bench`'s `trace-hit` case as a file, to time or profile its
//! replay (the figures in docs/trace-format.md):
//!
//! ```text
//! cargo run --release -p workload --example trace_tool -- synthetic 10000000 hit.pmt
//! ```
//!
//! `synthetic N FILE` writes N references of `workload::trace::synthetic::hit_loop`. Recording,
//! converting and describing traces are `pmusim trace record|convert|info`.

use std::process::ExitCode;
use workload::trace;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (n, path) = match args.as_slice() {
        [cmd, n, path] if cmd == "synthetic" => match n.parse::<u64>() {
            Ok(n) => (n, path),
            Err(e) => {
                eprintln!("synthetic: {n:?} is not a number of references: {e}");
                return ExitCode::from(2);
            }
        },
        _ => {
            eprintln!("usage: trace_tool synthetic N OUT.pmt (recording, converting and describing traces: pmusim trace record|convert|info)");
            return ExitCode::from(2);
        }
    };
    match std::fs::write(path, trace::synthetic::hit_loop(n)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {path}: {e}");
            ExitCode::FAILURE
        }
    }
}
