//! `pmusim trace record|info`.

use crate::cli::{ConvertArgs, InfoArgs, RecordArgs, TraceCmd, Tracer};
use crate::Failure;
use std::path::Path;

pub fn run(t: TraceCmd) -> Result<u8, Failure> {
    match t {
        TraceCmd::Record(a) => record(a),
        TraceCmd::Info(a) => info(a),
        TraceCmd::Convert(a) => convert(a),
    }
}

fn have_qemu() -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("qemu-x86_64").is_file()))
}

fn record(a: RecordArgs) -> Result<u8, Failure> {
    let tracer = a.tracer.unwrap_or(if have_qemu() {
        Tracer::Qemu
    } else {
        Tracer::Lackey
    });
    let (program, args) = a.command.split_first().expect("clap requires the command");
    writable_output(&a.output)?;
    let start = std::time::Instant::now();
    let (code, what) = match tracer {
        Tracer::Qemu => {
            let s = qemu_tracer::runner::record_with_qemu(program, args, &a.output)
                .map_err(|e| Failure::input(e.to_string()))?;
            (s.exit_code, format!("qemu; ended by {}", s.ended_by))
        }
        Tracer::Lackey => {
            let r = workload::trace::record::record(program, args, &a.output)
                .map_err(|e| Failure::input(e.to_string()))?;
            use std::os::unix::process::ExitStatusExt as _;
            // A signal as a shell reports it: 128 + its number (`status.code()` has none).
            let code = r
                .status
                .code()
                .unwrap_or_else(|| 128 + r.status.signal().unwrap_or(0));
            (code, "lackey".to_string())
        }
    };
    let (threads, refs) =
        workload::trace::recorded_totals(&a.output).map_err(|e| Failure::input(e.to_string()))?;
    let file_bytes = std::fs::metadata(&a.output).map_or(0, |m| m.len());
    eprintln!(
        "pmusim: recorded {refs} references of {threads} thread(s) in {:.1} s with {what} -> {}{}",
        start.elapsed().as_secs_f64(),
        a.output.display(),
        if refs == 0 {
            String::new()
        } else {
            format!(" ({:.2} bytes/reference)", file_bytes as f64 / refs as f64)
        }
    );
    if refs == 0 {
        eprintln!(
            "pmusim: warning: the trace holds no memory references: there is nothing to simulate"
        );
    }
    if code != 0 {
        let how = match signal_name(code) {
            Some(sig) => format!("was killed by {sig} (status {code})"),
            None => format!("exited with status {code}"),
        };
        eprintln!("pmusim: the traced program {how}; the trace holds what it did");
    }
    // The program's own status, as `valgrind` and `perf record` pass it on (issue 17), so a
    // script can tell a program that failed from a recording that did.
    Ok(code.clamp(0, 255) as u8)
}

/// The signal a shell-style status above 128 stands for, by name (`None`: not a signal).
fn signal_name(code: i32) -> Option<String> {
    const NAMES: [(i32, &str); 12] = [
        (1, "SIGHUP"),
        (2, "SIGINT"),
        (3, "SIGQUIT"),
        (4, "SIGILL"),
        (6, "SIGABRT"),
        (7, "SIGBUS"),
        (8, "SIGFPE"),
        (9, "SIGKILL"),
        (11, "SIGSEGV"),
        (13, "SIGPIPE"),
        (14, "SIGALRM"),
        (15, "SIGTERM"),
    ];
    let n = code.checked_sub(128).filter(|n| (1..=64).contains(n))?;
    Some(match NAMES.iter().find(|(k, _)| *k == n) {
        Some((_, name)) => format!("{name} (signal {n})"),
        None => format!("signal {n}"),
    })
}

/// Refuses an output path whose directory does not exist (or is not a directory), naming
/// the path, before any tracer starts (issue 17: `-o missing/x.pmt` was blamed on QEMU).
fn writable_output(out: &Path) -> Result<(), Failure> {
    let dir = match out.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    if !dir.is_dir() {
        return Err(Failure::input(format!(
            "-o {}: directory `{}` does not exist",
            out.display(),
            dir.display()
        )));
    }
    if out.is_dir() {
        return Err(Failure::input(format!(
            "-o {}: is a directory; give a file name",
            out.display()
        )));
    }
    Ok(())
}

/// True when `a` and `b` name the same existing file (through symbolic or hard links, or
/// another spelling of the path).
pub(crate) fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if let (Ok(x), Ok(y)) = (std::fs::metadata(a), std::fs::metadata(b)) {
            return x.dev() == y.dev() && x.ino() == y.ino();
        }
    }
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

fn convert(a: ConvertArgs) -> Result<u8, Failure> {
    // Writing the output truncates it: converting a file onto itself would destroy it.
    if same_file(&a.input, &a.output) {
        return Err(Failure::input(format!(
            "-o {}: is the input file; converting it onto itself would destroy it (give another output path)",
            a.output.display()
        )));
    }
    writable_output(&a.output)?;
    let header = tracefmt::Header::new("lackey", "", &[], std::env::consts::ARCH);
    let start = std::time::Instant::now();
    let (stats, totals) = workload::trace::record::convert_file(&a.input, &a.output, &header)
        .map_err(|e| Failure::input(e.to_string()))?;
    let secs = start.elapsed().as_secs_f64();
    let refs = stats.references();
    if refs == 0 {
        eprintln!(
            "pmusim: warning: `{}` holds no memory references ({} lines, {} instructions): is it the output of valgrind --tool=lackey --trace-mem=yes? {} holds an empty trace",
            a.input.display(),
            stats.lines,
            stats.instructions,
            a.output.display()
        );
        return Ok(0);
    }
    eprintln!(
        "pmusim: converted {} lines, {refs} references, {} instructions in {secs:.2} s ({:.1} M references/s) -> {} ({:.2} bytes/reference)",
        stats.lines,
        stats.instructions,
        refs as f64 / secs / 1e6,
        a.output.display(),
        totals.file_bytes as f64 / refs.max(1) as f64
    );
    Ok(0)
}

fn info(a: InfoArgs) -> Result<u8, Failure> {
    let i = workload::trace::info(&a.file).map_err(|e| Failure::input(e.to_string()))?;
    if a.json {
        let threads: Vec<serde_json::Value> = i
            .threads
            .iter()
            .map(|t| {
                serde_json::json!({
                    "tid": t.tid, "records": t.records, "loads": t.loads, "stores": t.stores,
                    "modifies": t.modifies, "instructions": t.instructions,
                })
            })
            .collect();
        let doc = serde_json::json!({
            "schema": crate::cli::schema("trace-info"),
            "path": i.path,
            "header": i.header,
            "file_bytes": i.file_bytes,
            "references": i.references(),
            "instructions": i.instructions(),
            "bytes_per_reference": i.bytes_per_reference(),
            "distinct_lines_64b": i.distinct_lines,
            "threads": threads,
        });
        println!("{}", serde_json::to_string_pretty(&doc).unwrap());
        return Ok(0);
    }
    print!("{i}");
    Ok(0)
}
