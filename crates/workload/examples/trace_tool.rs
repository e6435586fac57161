//! A stand-in for `pmusim trace ...` until the CLI grows those commands, and the way the
//! figures in docs/trace-format.md are measured:
//!
//! ```text
//! cargo run --release -p workload --example trace_tool -- convert x.lackey x.pmt
//! cargo run --release -p workload --example trace_tool -- record out.pmt /usr/bin/python3 -c pass
//! cargo run --release -p workload --example trace_tool -- info out.pmt
//! cargo run --release -p workload --example trace_tool -- synthetic 10000000 hit.pmt
//! ```
//!
//! `synthetic N FILE` writes the trace of `pmusim bench`'s `trace-hit` case with N references
//! (`workload::trace::synthetic::hit_loop`), to time or profile its replay as a file.

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;
use workload::trace::{self, record};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("convert") if args.len() == 3 => {
            let header = tracefmt::Header::new(
                "lackey",
                "unknown (converted from a saved file)",
                &[],
                std::env::consts::ARCH,
            );
            let start = Instant::now();
            record::convert_file(Path::new(&args[1]), Path::new(&args[2]), &header).map(|(stats, totals)| {
                let secs = start.elapsed().as_secs_f64();
                let refs = stats.references();
                println!(
                    "{} lines, {refs} references, {} instructions in {secs:.3} s: {:.2} M references/s, {:.3} bytes/reference",
                    stats.lines,
                    stats.instructions,
                    refs as f64 / secs / 1e6,
                    totals.file_bytes as f64 / refs.max(1) as f64
                );
            })
        }
        Some("record") if args.len() >= 3 => {
            let start = Instant::now();
            record::record(&args[2], &args[3..], Path::new(&args[1])).map(|rec| {
                eprintln!(
                    "recorded {} references in {:.2} s ({:.3} bytes/reference); the program ended with {}",
                    rec.stats.references(),
                    start.elapsed().as_secs_f64(),
                    rec.totals.file_bytes as f64 / rec.stats.references().max(1) as f64,
                    rec.status
                );
            })
        }
        Some("synthetic") if args.len() == 3 => match args[1].parse::<u64>() {
            Ok(n) => std::fs::write(&args[2], trace::synthetic::hit_loop(n)).map_err(|err| {
                trace::Error::Io {
                    path: args[2].clone(),
                    err,
                }
            }),
            Err(e) => {
                eprintln!(
                    "synthetic: {:?} is not a number of references: {e}",
                    args[1]
                );
                return ExitCode::from(2);
            }
        },
        Some("info") if args.len() == 2 => trace::info(Path::new(&args[1])).map(|i| print!("{i}")),
        _ => {
            eprintln!("usage: trace_tool convert LACKEY_TEXT OUT.pmt | record OUT.pmt PROGRAM [ARGS...] | info FILE.pmt | synthetic N OUT.pmt");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
