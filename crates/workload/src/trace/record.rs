//! Recording a program with valgrind lackey into a `.pmt` trace, and converting saved lackey
//! output.
//!
//! `record` runs `valgrind --tool=lackey --trace-mem=yes --log-fd=N program args` with `N` the
//! write end of a pipe whose read end this process converts as the text arrives: lackey's
//! output (600 MB for `python3 -c pass`) never touches the disk, and the conversion runs on a
//! second core while valgrind runs on the first. The program keeps the user's stdin, stdout
//! and stderr.
//!
//! Load bias: lackey prints no mappings, but valgrind loads a position-independent main
//! executable at a fixed base (0x108000 on amd64, valgrind 3.x; checked with a `gcc -pie`
//! program that printed `&array` = 0x10d060 for `nm` value 0x5060). The recorder does not
//! take that on trust: it watches the trace for the executable's entry point at
//! `entry + 0x108000` and writes into the header whether it was seen.

use super::lackey::{self, LackeyStats};
use super::symbols;
use super::Error;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use tracefmt::{Header, Totals, Writer};

/// Where valgrind (3.x, amd64) maps a position-independent main executable.
pub const VALGRIND_AMD64_PIE_BASE: u64 = 0x108000;

/// Header bytes reserved so that the load-bias note can be completed after the run.
const HEADER_ROOM: usize = 512;

/// Converts a saved lackey text file into a trace.
pub fn convert_file(
    lackey_path: &Path,
    out_path: &Path,
    header: &Header,
) -> Result<(LackeyStats, Totals), Error> {
    let input = File::open(lackey_path).map_err(|e| Error::io(lackey_path, e))?;
    convert_stream(input, &lackey_path.display().to_string(), out_path, header)
}

/// Converts lackey text arriving on `input` (a file or a pipe) into a trace at `out_path`.
pub fn convert_stream<R: std::io::Read>(
    input: R,
    source: &str,
    out_path: &Path,
    header: &Header,
) -> Result<(LackeyStats, Totals), Error> {
    let out = File::create(out_path).map_err(|e| Error::io(out_path, e))?;
    let name = out_path.display().to_string();
    let fmt_err = |err| Error::Format {
        path: name.clone(),
        err,
    };
    let mut writer =
        Writer::new(BufWriter::with_capacity(1 << 20, out), header).map_err(fmt_err)?;
    let stats = lackey::convert(input, source, None, |tid, rec| {
        writer.push(tid, rec).map_err(fmt_err)
    })?;
    let totals = writer.finish().map_err(fmt_err)?;
    Ok((stats, totals))
}

/// The outcome of [`record`].
#[derive(Debug)]
pub struct Recording {
    pub header: Header,
    pub stats: LackeyStats,
    pub totals: Totals,
    /// The program's exit status (valgrind passes it through). A program that exits with a
    /// failure status still leaves a complete trace of what it did; the caller decides.
    pub status: ExitStatus,
}

/// The version line of the installed valgrind, or [`Error::ValgrindMissing`].
pub fn valgrind_version() -> Result<String, Error> {
    version_of("valgrind")
}

/// `valgrind --version` of the given executable name (a parameter so that a test can ask
/// for one that does not exist).
fn version_of(valgrind: &str) -> Result<String, Error> {
    match Command::new(valgrind).arg("--version").output() {
        Ok(out) if out.status.success() => {
            Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
        }
        Ok(out) => Err(Error::Record(format!(
            "valgrind --version failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Error::ValgrindMissing),
        Err(e) => Err(Error::Record(format!("cannot run valgrind: {e}"))),
    }
}

/// Finds `program` the way valgrind (execvp) will: as a path if it holds a `/`, else in PATH.
pub fn resolve_program(program: &str) -> Result<PathBuf, Error> {
    let candidates: Vec<PathBuf> = if program.contains('/') {
        vec![PathBuf::from(program)]
    } else {
        std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).map(|d| d.join(program)).collect())
            .unwrap_or_default()
    };
    for c in &candidates {
        if c.is_file() {
            return Ok(c.clone());
        }
    }
    Err(Error::Record(format!(
        "program not found: {program}{}",
        if program.contains('/') {
            ""
        } else {
            " (searched PATH)"
        }
    )))
}

#[cfg(target_os = "linux")]
mod sys {
    //! The two system calls std does not offer: a pipe whose write end a child inherits at
    //! a chosen descriptor number. Declared here rather than through the libc crate; std links
    //! libc anyway.
    use std::os::raw::c_int;
    extern "C" {
        pub fn pipe2(fds: *mut c_int, flags: c_int) -> c_int;
        pub fn dup2(old: c_int, new: c_int) -> c_int;
        pub fn fcntl(fd: c_int, cmd: c_int, ...) -> c_int;
    }
    pub const O_CLOEXEC: c_int = 0o2000000;
    pub const F_SETPIPE_SZ: c_int = 1031;
}

/// The read end of valgrind's log pipe, read so as to wake the reader rarely.
///
/// valgrind writes its log with one `write` per line (44 M writes for `python3 -c pass`). A
/// reader blocked in `read` is woken for nearly every one of them, and the wake-ups and context
/// switches made recording take 4 times as long as lackey writing to /dev/null (70 s against
/// 18 s). After a short read this reader sleeps a little instead, letting the pipe fill: at
/// lackey's ~35 MB/s a 1 ms pause gathers ~35 KB, far from filling a 1 or 4 MiB pipe, so
/// valgrind does not block, and the number of wake-ups drops by three orders of magnitude.
/// What remains is the kernel's cost of a pipe write, ~110 ns more than a write to /dev/null
/// (measured with a C loop of 5 M 16-byte writes): ~5 s of system time over 44 M lines.
struct PatientPipe<R> {
    inner: R,
    last_was_short: bool,
}

impl<R> PatientPipe<R> {
    /// Reads shorter than this count as short.
    const SHORT: usize = 64 << 10;
    const PAUSE: std::time::Duration = std::time::Duration::from_millis(1);

    fn new(inner: R) -> Self {
        PatientPipe {
            inner,
            last_was_short: false,
        }
    }
}

impl<R: std::io::Read> std::io::Read for PatientPipe<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.last_was_short {
            std::thread::sleep(Self::PAUSE);
        }
        let n = self.inner.read(buf)?;
        self.last_was_short = n < Self::SHORT.min(buf.len());
        Ok(n)
    }
}

/// Runs `program args` under lackey and writes the trace to `out_path`.
#[cfg(target_os = "linux")]
pub fn record(program: &str, args: &[String], out_path: &Path) -> Result<Recording, Error> {
    use std::os::fd::FromRawFd;
    use std::os::unix::process::CommandExt;

    let version = valgrind_version()?;
    let resolved = resolve_program(program)?;
    let elf = symbols::elf_data(&resolved, None).ok();
    let arch = std::env::consts::ARCH;

    let mut header = Header::new("lackey", &resolved.display().to_string(), args, arch);
    header.identify_program(&resolved);
    header
        .extra
        .insert("valgrind".into(), version.clone().into());
    let mut watch_pc = None;
    let mut bias_note = String::new();
    match &elf {
        Some(e) if e.position_independent && arch == "x86_64" => {
            header.load_bias = Some(VALGRIND_AMD64_PIE_BASE);
            watch_pc = Some(e.entry + VALGRIND_AMD64_PIE_BASE);
            bias_note = format!(
                "valgrind loads position-independent executables at {VALGRIND_AMD64_PIE_BASE:#x} on amd64 ({version})"
            );
            header.load_bias_source = Some(format!("{bias_note}; not yet confirmed"));
        }
        Some(e) if e.position_independent => {
            header.load_bias_source = Some(format!(
                "unknown: valgrind's load address of position-independent executables on {arch} is not known to pmusim"
            ));
        }
        Some(_) => {
            header.load_bias_source =
                Some("none: not position independent (ET_EXEC), symbols are absolute".into());
        }
        None => {
            header.load_bias_source =
                Some("unknown: the program is not an ELF file pmusim can read".into());
        }
    }

    // The pipe: read end here, write end dup'ed into the child at `log_fd`.
    let mut fds = [0; 2];
    // SAFETY: pipe2 writes two descriptors into the array we pass.
    if unsafe { sys::pipe2(fds.as_mut_ptr(), sys::O_CLOEXEC) } != 0 {
        return Err(Error::Record(format!(
            "cannot create a pipe: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    let (read_end, write_end) = unsafe { (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1])) };
    // A large pipe lets valgrind run ahead while the converter sleeps or is descheduled on a
    // busy machine: 4 MiB (allowed to root) or 1 MiB (the default pipe-max-size); failing
    // both only costs speed.
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        if sys::fcntl(fds[1], sys::F_SETPIPE_SZ, 4 << 20) < 0 {
            sys::fcntl(fds[1], sys::F_SETPIPE_SZ, 1 << 20);
        }
    }
    let write_fd = fds[1];
    let log_fd = if write_fd == 3 { 4 } else { 3 };

    let out = File::create(out_path).map_err(|e| Error::io(out_path, e))?;
    let out_name = out_path.display().to_string();
    let fmt_err = |err| Error::Format {
        path: out_name.clone(),
        err,
    };
    let mut writer =
        Writer::with_header_room(BufWriter::with_capacity(1 << 20, out), &header, HEADER_ROOM)
            .map_err(fmt_err)?;

    let mut cmd = Command::new("valgrind");
    cmd.arg("--tool=lackey")
        .arg("--trace-mem=yes")
        .arg(format!("--log-fd={log_fd}"))
        .arg(&resolved)
        .args(args);
    // SAFETY: dup2 is async-signal-safe; it runs in the child between fork and exec. The new
    // descriptor does not inherit O_CLOEXEC, so valgrind gets it; the originals close at exec.
    unsafe {
        cmd.pre_exec(move || {
            if sys::dup2(write_fd, log_fd) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let spawned = cmd.spawn();
    // Our copy of the write end must go, or the reader never sees the end of the output.
    drop(write_end);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Error::ValgrindMissing),
        Err(e) => return Err(Error::Record(format!("cannot start valgrind: {e}"))),
    };

    let converted = lackey::convert(
        PatientPipe::new(read_end),
        "lackey output",
        watch_pc,
        |tid, rec| writer.push(tid, rec).map_err(fmt_err),
    );
    let stats = match converted {
        Ok(s) => s,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            drop(writer);
            let _ = std::fs::remove_file(out_path);
            return Err(e);
        }
    };
    let status = child
        .wait()
        .map_err(|e| Error::Record(format!("waiting for valgrind: {e}")))?;
    if stats.pid.is_none() {
        drop(writer);
        let _ = std::fs::remove_file(out_path);
        return Err(Error::Record(format!(
            "valgrind did not run {program} ({status}); its message, if any, is above"
        )));
    }
    let totals = writer.finish().map_err(fmt_err)?;

    if let Some(pc) = watch_pc {
        let entry = pc - VALGRIND_AMD64_PIE_BASE;
        header.load_bias_source = Some(if stats.watch_seen {
            format!(
                "{bias_note}; confirmed: the entry point ({entry:#x} in the file) ran at {pc:#x}"
            )
        } else {
            header.load_bias = None;
            format!("{bias_note}; NOT confirmed: nothing ran at the entry point {entry:#x} + bias = {pc:#x}, so no bias is recorded")
        });
    }
    if let Some(pid) = stats.pid {
        header.extra.insert("pid".into(), pid.into());
    }
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(out_path)
        .map_err(|e| Error::io(out_path, e))?;
    tracefmt::rewrite_header(&mut f, &header).map_err(fmt_err)?;
    Ok(Recording {
        header,
        stats,
        totals,
        status,
    })
}

/// Recording needs Linux (valgrind, pipes handed to a child at a chosen descriptor).
#[cfg(not(target_os = "linux"))]
pub fn record(_program: &str, _args: &[String], _out_path: &Path) -> Result<Recording, Error> {
    Err(Error::Record(
        "recording with lackey is only supported on Linux".into(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_valgrind_says_how_to_install_it() {
        let e = version_of("pmusim-test-no-such-valgrind").unwrap_err();
        assert_eq!(
            e.to_string(),
            "valgrind not found: install it with apt-get install valgrind"
        );
    }

    #[test]
    fn programs_are_found_in_path() {
        assert!(resolve_program("sh").unwrap().is_absolute());
        let e = resolve_program("pmusim-test-no-such-program").unwrap_err();
        assert_eq!(
            e.to_string(),
            "program not found: pmusim-test-no-such-program (searched PATH)"
        );
    }
}
