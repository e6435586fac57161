//! `pmusim`: the command line.
//!
//! Exit codes: 0 success; 1 a workload's result failed its check (or the protocol tester found
//! a violation); 2 bad input (flags, presets, files); 3 the simulation could not finish
//! (deadlock, cycle limit: the latter after its partial report); 130 interrupted by Ctrl-C
//! (after the partial report). A closed standard output (`pmusim decode ... | head`) ends any
//! command quietly with 0, as `head` asked for no more.

mod bench;
mod cli;
mod fused;
mod live;
mod monitors;
mod multi;
mod run;
mod serve;
mod stat;
mod sweep;
mod testproto;
mod trace;

use clap::Parser;
use std::process::ExitCode;

/// An error with the exit code it deserves.
pub struct Failure {
    pub code: u8,
    pub msg: String,
}

impl Failure {
    pub fn input(msg: impl Into<String>) -> Failure {
        Failure {
            code: 2,
            msg: msg.into(),
        }
    }
    pub fn sim(msg: impl Into<String>) -> Failure {
        Failure {
            code: 3,
            msg: msg.into(),
        }
    }
}

/// Installs a panic hook that turns the panic of `print!` on a closed standard output
/// (EPIPE: the reader, e.g. `head`, has gone) into a quiet exit with 0, for every command.
/// Rust ignores SIGPIPE, so the write fails instead of killing the process; restoring SIGPIPE
/// would also kill the process on a socket write (a metrics endpoint), so the failure is
/// handled here instead.
fn quiet_on_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info.to_string();
        if msg.contains("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}

fn main() -> ExitCode {
    quiet_on_broken_pipe();
    let args = cli::Cli::parse();
    let r = match args.cmd {
        cli::Cmd::Run(a) => run::run(a),
        cli::Cmd::List(a) => cli::list(a),
        cli::Cmd::Completions { shell } => cli::completions(shell),
        cli::Cmd::Man => cli::man(),
        cli::Cmd::TestProtocol(a) => testproto::run(a),
        cli::Cmd::Bench(a) => bench::run(a),
        cli::Cmd::Trace(t) => trace::run(t),
        cli::Cmd::Decode(a) => monitors::decode(a),
        cli::Cmd::Study(s) => monitors::study(s),
        cli::Cmd::Report(a) => run::run(a.into_run()),
        cli::Cmd::Sweep(c) => sweep::main(c),
        cli::Cmd::Stat(a) => stat::run(a),
    };
    match r {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            eprintln!("pmusim: error: {}", f.msg);
            ExitCode::from(f.code)
        }
    }
}
