//! `pmusim`: the command line.
//!
//! Exit codes: 0 success; 1 a workload's result failed its check (or the protocol tester found
//! a violation); 2 bad input (flags, presets, files); 3 the simulation could not finish
//! (deadlock, cycle limit).

mod bench;
mod cli;
mod monitors;
mod run;
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

fn main() -> ExitCode {
    let args = cli::Cli::parse();
    let r = match args.cmd {
        cli::Cmd::Run(a) => run::run(a),
        cli::Cmd::List(a) => cli::list(a),
        cli::Cmd::TestProtocol(a) => testproto::run(a),
        cli::Cmd::Bench(a) => bench::run(a),
        cli::Cmd::Trace(t) => trace::run(t),
        cli::Cmd::Decode(a) => monitors::decode(a),
        cli::Cmd::Study(s) => monitors::study(s),
        cli::Cmd::Report(a) => run::run(a.into_run()),
    };
    match r {
        Ok(code) => ExitCode::from(code),
        Err(f) => {
            eprintln!("pmusim: error: {}", f.msg);
            ExitCode::from(f.code)
        }
    }
}
