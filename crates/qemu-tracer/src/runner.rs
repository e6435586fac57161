//! Runs a program under `qemu-x86_64` with the plugin: the library side of
//! `pmusim trace record --tracer qemu`.
//!
//! The plugin `.so` is looked for, in order: `$PMUSIM_QEMU_PLUGIN`; next to the running
//! executable (where an installed `pmusim` ships it); in the executable's parent directory
//! (`target/<profile>/` when the executable is a test in `target/<profile>/deps/`); in
//! `target/release/` and `target/debug/` of the current directory.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

pub const PLUGIN_FILE: &str = "libqemu_tracer.so";
pub const QEMU: &str = "qemu-x86_64";

#[derive(Debug)]
pub enum Error {
    QemuMissing,
    PluginMissing(Vec<PathBuf>),
    ProgramMissing(String),
    NotX86_64 {
        program: PathBuf,
        what: String,
    },
    Io(PathBuf, std::io::Error),
    /// `PMUSIM_RECORDER_NICE` is not a niceness from 0 to 19.
    BadNice(String),
    /// QEMU ended without a complete trace (plugin failed to load, or the trace is corrupt).
    NoTrace {
        status: std::process::ExitStatus,
        why: String,
    },
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::QemuMissing => write!(
                f,
                "{QEMU} not found: install Debian's qemu-user, or use --tracer lackey"
            ),
            Error::PluginMissing(tried) => {
                write!(
                f,
                "{PLUGIN_FILE} not found (tried {}): build it with `cargo build -p qemu-tracer \
                 --release` or set PMUSIM_QEMU_PLUGIN",
                tried.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
            )
            }
            Error::ProgramMissing(p) => write!(f, "{p}: program not found"),
            Error::NotX86_64 { program, what } => write!(
                f,
                "{}: {what}; the QEMU tracer runs x86_64 ELF executables only",
                program.display()
            ),
            Error::Io(p, e) => write!(f, "{}: {e}", p.display()),
            Error::BadNice(v) => write!(
                f,
                "PMUSIM_RECORDER_NICE={v}: not a niceness from 0 to 19; unset it for the \
                 default ({RECORDER_NICE}), or set 0 to run the recorder at pmusim's priority"
            ),
            Error::NoTrace { status, why } => {
                write!(f, "{QEMU} ended ({status}) without a complete trace: {why}")?;
                if why.contains("No such file") {
                    write!(
                        f,
                        " (the plugin never ran: this QEMU may lack plugin support, as \
                         qemu-user-static and builds without --enable-plugins do; install \
                         Debian's qemu-user, or use --tracer lackey)"
                    )?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for Error {}

/// The outcome of a recording.
#[derive(Debug, Clone)]
pub struct Summary {
    /// The program's exit code (128 + signal if a signal killed it, as a shell reports it).
    pub exit_code: i32,
    pub wall: Duration,
    pub trace_bytes: u64,
    /// How the trace ended: "exit", "execve", or "incomplete: ..." when QEMU died of the
    /// program's fatal signal without telling the plugin (the trace holds the records written
    /// before, and is valid).
    pub ended_by: String,
}

impl Summary {
    /// Whether the traced program failed (non-zero exit); the trace is complete all the same.
    pub fn program_failed(&self) -> bool {
        self.exit_code != 0
    }
}

fn in_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

pub fn find_qemu() -> Result<PathBuf, Error> {
    in_path(QEMU).ok_or(Error::QemuMissing)
}

pub fn find_plugin() -> Result<PathBuf, Error> {
    let mut tried = Vec::new();
    if let Some(p) = std::env::var_os("PMUSIM_QEMU_PLUGIN") {
        tried.push(PathBuf::from(p));
    }
    if let Ok(exe) = std::env::current_exe() {
        if let Some(dir) = exe.parent() {
            tried.push(dir.join(PLUGIN_FILE));
            if let Some(up) = dir.parent() {
                tried.push(up.join(PLUGIN_FILE));
            }
        }
    }
    tried.push(PathBuf::from("target/release").join(PLUGIN_FILE));
    tried.push(PathBuf::from("target/debug").join(PLUGIN_FILE));
    match tried.iter().find(|p| p.is_file()) {
        Some(p) => Ok(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())),
        None => Err(Error::PluginMissing(tried)),
    }
}

/// Resolves `program` like a shell (PATH when it has no `/`) and checks it is an x86_64 ELF.
pub fn check_program(program: &str) -> Result<PathBuf, Error> {
    let path = if program.contains('/') {
        PathBuf::from(program)
    } else {
        in_path(program).ok_or_else(|| Error::ProgramMissing(program.into()))?
    };
    let mut head = [0u8; 20];
    let n = {
        use std::io::Read;
        let mut f = std::fs::File::open(&path).map_err(|e| Error::Io(path.clone(), e))?;
        f.read(&mut head).map_err(|e| Error::Io(path.clone(), e))?
    };
    let bad = |what: &str| {
        Err(Error::NotX86_64 {
            program: path.clone(),
            what: what.into(),
        })
    };
    if n < 20 || &head[..4] != b"\x7fELF" {
        return if head.starts_with(b"#!") {
            bad("a script, not an ELF executable (trace its interpreter with the script as argument)")
        } else {
            bad("not an ELF executable")
        };
    }
    if head[4] != 2 {
        return bad("a 32-bit ELF");
    }
    let machine = u16::from_le_bytes([head[18], head[19]]);
    if machine != 62 {
        return bad(&format!("an ELF for machine {machine}, not x86_64 (62)"));
    }
    Ok(path)
}

/// Records `program args` into `out`; the program's stdin, stdout and stderr are inherited.
pub fn record_with_qemu(program: &str, args: &[String], out: &Path) -> Result<Summary, Error> {
    spawn_with_qemu(program, args, out)?.wait()
}

/// A recording under way: QEMU runs the program while the plugin writes the trace, which a
/// reader may follow as it grows (`tracefmt::Tail`; fused `pmusim run --record`).
pub struct Recording {
    child: std::process::Child,
    qemu: PathBuf,
    out: PathBuf,
    start: Instant,
}

/// Starts recording `program args` into `out` (removed first) and returns at once; the
/// program's stdin, stdout and stderr are inherited.
pub fn spawn_with_qemu(program: &str, args: &[String], out: &Path) -> Result<Recording, Error> {
    let out_s = plugin_path_arg(out, "output path")?;
    spawn_plugin(program, args, &format!("out={out_s}"), out, true, 0)
}

/// Starts `qemu-x86_64` with the plugin writing to the live channel `channel`
/// (`live::Consumer::create`) instead of a trace file, for a simulation that runs at the
/// same time (`pmusim run --record`). Wait for it with [`Recording::wait_status`].
///
/// QEMU runs [`RECORDER_NICE`] steps below pmusim's priority ([`recorder_nice`]): in a
/// fused run the simulation's one thread is the critical path whenever it is the slower side
/// (the recorder then waits for free blocks, `live`), and a traced program's many guest
/// threads, each a QEMU thread, would otherwise take turns on the simulation's core. The
/// step is a compromise measured both ways (BENCHMARKS.md, "The recorder's priority"): on a
/// quiet 2-core host the OpenMP and pthread programs of issue 19 fused 7-10 % faster, while
/// with a third busy process the recorder, now behind it too, made the OpenMP program 5 %
/// slower (10 steps: 8-14 % faster quiet, 17 % slower loaded). When the recorder is the
/// slower side (one thread, python3) the simulation sleeps on the channel and leaves the
/// core to it.
pub fn spawn_live(program: &str, args: &[String], channel: &Path) -> Result<Recording, Error> {
    let chan = plugin_path_arg(channel, "channel path")?;
    let nice = recorder_nice(std::env::var("PMUSIM_RECORDER_NICE").ok().as_deref())?;
    spawn_plugin(program, args, &format!("live={chan}"), channel, false, nice)
}

/// How far below pmusim's priority a fused run's recorder runs, unless
/// `PMUSIM_RECORDER_NICE` says otherwise ([`spawn_live`]).
pub const RECORDER_NICE: i32 = 5;

/// The recorder's niceness increment from `PMUSIM_RECORDER_NICE` (`None`: unset), 0 to 19.
pub fn recorder_nice(var: Option<&str>) -> Result<i32, Error> {
    match var {
        None => Ok(RECORDER_NICE),
        Some(v) => match v.trim().parse::<i32>() {
            Ok(n) if (0..=19).contains(&n) => Ok(n),
            _ => Err(Error::BadNice(v.to_string())),
        },
    }
}

/// Makes `cmd`'s process run `nice` steps below the caller's priority (nothing for 0).
fn lower_priority(cmd: &mut std::process::Command, nice: i32) {
    if nice == 0 {
        return;
    }
    // SAFETY: `nice` is async-signal-safe, as the code between fork and exec must be. Its
    // result is not checked: -1 is also a valid niceness, and a recorder at the caller's
    // priority only runs slower fused, not wrongly.
    unsafe {
        std::os::unix::process::CommandExt::pre_exec(cmd, move || {
            libc::nice(nice);
            Ok(())
        });
    }
}

/// A path as one of the plugin's options: QEMU's `-plugin` argument separates options by
/// `,`, so the path must be UTF-8 without one.
fn plugin_path_arg<'p>(path: &'p Path, what: &str) -> Result<&'p str, Error> {
    path.to_str().filter(|s| !s.contains(',')).ok_or_else(|| {
        Error::Io(
            path.into(),
            std::io::Error::other(format!("{what} must be UTF-8 without ','")),
        )
    })
}

/// Runs `program args` under `qemu-x86_64 -plugin PLUGIN,OPTION` (the plugin's destination:
/// `out=FILE` or `live=CHANNEL`, named `dest` in the recording). QEMU, the plugin and the
/// program are checked before `dest` is removed (`remove_dest`: a trace file to rewrite).
/// QEMU runs `nice` steps below the caller's priority ([`spawn_live`]).
fn spawn_plugin(
    program: &str,
    args: &[String],
    option: &str,
    dest: &Path,
    remove_dest: bool,
    nice: i32,
) -> Result<Recording, Error> {
    let qemu = find_qemu()?;
    let plugin = find_plugin()?;
    let prog = check_program(program)?;
    if remove_dest {
        let _ = std::fs::remove_file(dest);
    }
    let start = Instant::now();
    let mut cmd = std::process::Command::new(&qemu);
    cmd.arg("-plugin")
        .arg(format!("{},{option}", plugin.display()))
        .arg(&prog)
        .args(args);
    lower_priority(&mut cmd, nice);
    let child = cmd.spawn().map_err(|e| Error::Io(qemu.clone(), e))?;
    Ok(Recording {
        child,
        qemu,
        out: dest.into(),
        start,
    })
}

impl Recording {
    /// The process id of QEMU (and of the traced program: the trace header's `pid`).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for QEMU to exit: its exit status, the program's exit code (128 + the signal
    /// that killed it) and the wall time.
    pub fn wait_status(&mut self) -> Result<(std::process::ExitStatus, i32, Duration), Error> {
        let status = self
            .child
            .wait()
            .map_err(|e| Error::Io(self.qemu.clone(), e))?;
        let wall = self.start.elapsed();
        let exit_code = match (
            status.code(),
            std::os::unix::process::ExitStatusExt::signal(&status),
        ) {
            (Some(c), _) => c,
            (None, Some(s)) => 128 + s,
            _ => -1,
        };
        Ok((status, exit_code, wall))
    }

    /// Waits for QEMU to exit and checks the trace it left.
    pub fn wait(mut self) -> Result<Summary, Error> {
        let (status, exit_code, wall) = self.wait_status()?;
        let out = &self.out;
        let trace_bytes = match std::fs::metadata(out) {
            Ok(m) => m.len(),
            Err(e) => {
                return Err(Error::NoTrace {
                    status,
                    why: e.to_string(),
                })
            }
        };
        if !has_end_record(out) {
            return Err(Error::NoTrace {
                status,
                why: "the trace has no end record".into(),
            });
        }
        let header = std::fs::File::open(out)
            .map_err(|e| e.to_string())
            .and_then(|f| tracefmt::Reader::new(f).map_err(|e| e.to_string()))
            .map(|r| r.header().clone())
            .map_err(|why| Error::NoTrace { status, why })?;
        let ended_by = header
            .extra
            .get("ended_by")
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .into();
        Ok(Summary {
            exit_code,
            wall,
            trace_bytes,
            ended_by,
        })
    }
}

/// A cheap completeness check: the file ends with a plausible end record.
fn has_end_record(out: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(out) else {
        return false;
    };
    let mut tail = [0u8; 9];
    f.seek(SeekFrom::End(-9)).is_ok() && f.read_exact(&mut tail).is_ok() && tail[0] == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A niceness from a `/proc/PID/stat` line: field 19, the 17th after the command's
    /// closing parenthesis.
    fn niceness(stat: &str) -> i32 {
        let rest = &stat[stat.rfind(')').unwrap() + 2..];
        rest.split(' ').nth(16).unwrap().trim().parse().unwrap()
    }

    /// The niceness of a process started through `lower_priority(nice)`, as it reads its own
    /// `/proc/PID/stat`.
    fn started_niceness(nice: i32) -> i32 {
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", "cat /proc/$$/stat"]);
        lower_priority(&mut cmd, nice);
        niceness(&String::from_utf8(cmd.output().unwrap().stdout).unwrap())
    }

    #[test]
    fn the_recorder_runs_below_the_simulation_s_priority() {
        let own = niceness(&std::fs::read_to_string("/proc/self/stat").unwrap());
        // No niceness is above 19.
        assert_eq!(
            started_niceness(RECORDER_NICE),
            (own + RECORDER_NICE).min(19)
        );
        assert_eq!(started_niceness(0), own);
    }

    #[test]
    fn the_recorder_s_niceness_is_read_from_the_environment() {
        assert_eq!(recorder_nice(None).unwrap(), RECORDER_NICE);
        assert_eq!(recorder_nice(Some("0")).unwrap(), 0);
        assert_eq!(recorder_nice(Some(" 19 ")).unwrap(), 19);
        for bad in ["20", "-1", "ten", ""] {
            let e = recorder_nice(Some(bad)).unwrap_err().to_string();
            assert!(
                e.starts_with(&format!(
                    "PMUSIM_RECORDER_NICE={bad}: not a niceness from 0 to 19"
                )),
                "{e}"
            );
        }
    }
}
