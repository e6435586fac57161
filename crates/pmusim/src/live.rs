//! What a long run shows while it runs: a progress bar on a terminal, `perf stat -I`-style
//! interval counts, and Ctrl-C, which ends the run with its partial report.

use crate::cli::RunArgs;
use crate::Failure;
use indicatif::{ProgressBar, ProgressStyle};
use machine::state::State;
use machine::{Machine, RunSummary, SimError, Ticker};
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Set by the first Ctrl-C; the run stops at its next tick.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Cycles between ticks when no interval is asked: often enough that Ctrl-C answers at once
/// and the bar moves, rarely enough to cost nothing (a closure call per 65,536 cycles).
const TICK_CYCLES: u64 = 1 << 16;

/// Why a run ended before its threads did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    CycleLimit,
    Interrupted,
}

impl Stop {
    pub fn reason(self) -> &'static str {
        match self {
            Stop::CycleLimit => "cycle limit",
            Stop::Interrupted => "interrupted",
        }
    }
    /// The exit code: 3 as for any run that could not finish; 130 (128 + SIGINT) for Ctrl-C,
    /// as shells report a process ended by it.
    pub fn exit_code(self) -> u8 {
        match self {
            Stop::CycleLimit => 3,
            Stop::Interrupted => 130,
        }
    }
}

/// The machine-wide counts an interval line shows (sums over the cores' exact counters).
const EVENTS: [&str; 5] = [
    "instructions",
    "references",
    "L1D-misses",
    "L2-misses",
    "NACKs",
];

fn counts(st: &State) -> [u64; 5] {
    let mut v = [0u64; 5];
    for c in &st.cores {
        let n = &c.cnt;
        for (a, b) in
            v.iter_mut()
                .zip([n.instructions(), n.refs, n.l1d_misses, n.l2_misses, n.nacks])
        {
            *a += b;
        }
    }
    v
}

/// The interval printer: perf's three formats.
struct Interval {
    csv: Option<String>,
    json: bool,
    last: [u64; 5],
    header: bool,
}

impl Interval {
    fn print(&mut self, cycle: u64, now: [u64; 5]) {
        let mut out = std::io::stderr().lock();
        if !self.header && self.csv.is_none() && !self.json {
            let _ = writeln!(out, "#{:>15} {:>18}  event", "proc. cycle", "counts");
            self.header = true;
        }
        for (i, ev) in EVENTS.iter().enumerate() {
            let d = now[i] - self.last[i];
            let _ = if let Some(sep) = &self.csv {
                writeln!(out, "{cycle}{sep}{d}{sep}{sep}{ev}")
            } else if self.json {
                writeln!(
                    out,
                    "{}",
                    serde_json::json!({"interval_cycles": cycle, "counter-value": d.to_string(), "unit": "", "event": ev})
                )
            } else {
                writeln!(
                    out,
                    "{cycle:>16} {:>18}  {ev}",
                    report::model::format::int(d)
                )
            };
        }
        self.last = now;
    }
}

/// Runs the machine with the live views `a` asks for; returns the summary and, for a run
/// that stopped early, why (its state is then the partial run's). A deadlock stays an error.
pub fn simulate(
    a: &RunArgs,
    m: &mut Machine,
    mons: &mut [Box<dyn monitor::plugin::Monitor>],
) -> Result<(RunSummary, Option<Stop>), Failure> {
    install_ctrl_c();
    let bar = (!a.quiet && a.interval.is_none() && std::io::stderr().is_terminal()).then(|| {
        let b = ProgressBar::new_spinner();
        b.set_style(
            ProgressStyle::with_template("{spinner} {elapsed} {msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        b.enable_steady_tick(Duration::from_millis(200));
        b
    });
    let mut interval = a.interval.map(|_| Interval {
        csv: a.field_separator.clone(),
        json: a.json_lines,
        last: [0; 5],
        header: false,
    });
    let endpoint = match &a.serve {
        Some(addr) => Some(crate::serve::Endpoint::start(
            addr,
            a.serve_interval,
            a.serve_linger,
        )?),
        None => None,
    };
    // The ticker's period divides every period asked for; each view checks its own.
    let every = [
        a.stat.as_ref().and_then(|s| s.borrow().tick_cycles()),
        a.interval,
        endpoint.as_ref().map(|e| e.interval),
    ]
    .into_iter()
    .flatten()
    .reduce(gcd)
    .unwrap_or(TICK_CYCLES);
    let start = Instant::now();
    let stat = a.stat.clone();
    let mut f = |st: &State, cycle: u64| {
        if let Some(s) = &stat {
            s.borrow_mut().tick(st, cycle);
        }
        if let (Some(iv), Some(n)) = (interval.as_mut(), a.interval) {
            if cycle.is_multiple_of(n) {
                iv.print(cycle, counts(st));
            }
        }
        if let Some(e) = &endpoint {
            if cycle.is_multiple_of(e.interval) {
                e.publish(st, cycle, mons);
            }
        }
        if let Some(b) = &bar {
            let refs: u64 = st.cores.iter().map(|c| c.cnt.refs).sum();
            let secs = start.elapsed().as_secs_f64().max(1e-9);
            b.set_message(format!(
                "cycle {}  references {}  ({:.1} M references/s)",
                report::model::format::int(cycle),
                report::model::format::int(refs),
                refs as f64 / secs / 1e6
            ));
        }
        !INTERRUPTED.load(Ordering::Relaxed)
    };
    let ticker = Ticker {
        every_cycles: every,
        f: &mut f,
    };
    let r = m.run_ticked(a.max_cycles, Some(ticker));
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let stop = match r {
        Ok(sum) => {
            if let Some(iv) = interval.as_mut() {
                // The last, shorter interval, as perf prints it.
                iv.print(sum.cycles, counts(m.state()));
            }
            if let Some(s) = &a.stat {
                s.borrow_mut().finish(m, sum.cycles);
            }
            if let Some(e) = &endpoint {
                e.finish(m.state(), sum.cycles, mons);
            }
            return Ok((sum, None));
        }
        Err(SimError::Limit(_)) => Stop::CycleLimit,
        Err(SimError::Interrupted(_)) => Stop::Interrupted,
        Err(e) => return Err(Failure::sim(e.to_string())),
    };
    let sum = m
        .stopped_summary()
        .expect("a stopped run keeps its summary");
    if let Some(iv) = interval.as_mut() {
        iv.print(sum.cycles, counts(m.state()));
    }
    if let Some(s) = &a.stat {
        s.borrow_mut().finish(m, sum.cycles);
    }
    if let Some(e) = &endpoint {
        e.finish(m.state(), sum.cycles, mons);
    }
    eprintln!(
        "pmusim: the run stopped at processor cycle {} ({}): the report below is partial",
        report::model::format::int(sum.cycles),
        stop.reason()
    );
    Ok((sum, Some(stop)))
}

/// Greatest common divisor (the ticker's period for several periods).
pub(crate) fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The first Ctrl-C stops the run at its next tick (with the partial report); a second one
/// ends the process at once with 130.
fn install_ctrl_c() {
    let _ = ctrlc::set_handler(|| {
        if INTERRUPTED.swap(true, Ordering::Relaxed) {
            std::process::exit(130);
        }
    });
}
