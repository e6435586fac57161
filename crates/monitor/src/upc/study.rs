//! `pmusim study upc` (issue 14, "Figures to reach"): where local counts start to be lost as
//! the UPC_P counter narrows (6 to 14 bits) and the frame lengthens (100 to 2000 x2 cycles), in
//! the simulation beside the arithmetic.
//!
//! The simulation: one core of `cmp` running a loop of integer instructions with its counter 0
//! on the x1 cycles event (2 counts every x2 cycle, the highest rate any pmusim event has: one
//! instruction issues per processor cycle), 400,000 processor cycles; lost counts are those
//! the local counter wrapped away (`unit::add`). The arithmetic: with the driver's protocol a
//! counter hands 2^(w-1) counts to UPC_C per slot, so it keeps up with `e` events per x2 cycle
//! over a period `P` iff `e P <= 2^(w-1)`; above that the local value grows by
//! `e P - 2^(w-1)` every frame until it wraps (within two frames at every point of the
//! table). On the chip (seed: "14 bit ... at least every 1024 cycles") the fastest source
//! is an opcode counter combining 4 threads of two opcodes per x2 cycle, `e = 8`, and
//! 2^13 / 8 = 1024.

use super::config::{cycles_counter, Config};
use super::probe::P_COUNTERS;
use super::regs::CounterCfg;
use crate::plugin::{Error, StudyArgs};
use machine::{Machine, Options, Preset};
use report::model::{Cell, Column, Report, Section, Table};
use serde_json::json;

/// Events per x2 cycle of the fastest source in pmusim, and on the chip.
pub const E_SIM: u64 = 2;
pub const E_CHIP: u64 = 8;
/// Processor cycles each simulated point runs.
pub const RUN_CYCLES: u64 = 400_000;

pub const WIDTHS: [u32; 9] = [6, 7, 8, 9, 10, 11, 12, 13, 14];
pub const PERIODS: [u64; 7] = [100, 200, 400, 800, 1024, 1600, 2000];

/// The arithmetic: a `w`-bit counter drained every `period` x2 cycles loses counts of a source
/// of `e` events per x2 cycle.
pub fn must_lose(w: u32, period: u64, e: u64) -> bool {
    e * period > 1 << (w - 1)
}

/// The longest period a `w`-bit counter keeps up with at `e` events per x2 cycle.
pub fn longest_safe(w: u32, e: u64) -> u64 {
    (1u64 << (w - 1)) / e
}

/// One simulated point: (counts lost, exact count) of a cycles counter.
pub fn simulate(w: u32, period: u64) -> Result<(u64, u64), String> {
    let mut p = Preset::builtin("cmp").map_err(|e| e.to_string())?;
    p.procs = 1;
    let mut m = Machine::new(p, Options::default()).map_err(|e| e.0)?;
    let mut cfg = Config {
        period,
        p_width: w,
        ..Config::default()
    };
    cfg.p = vec![CounterCfg::default(); P_COUNTERS];
    cfg.p[0] = cycles_counter();
    cfg.l2 = vec![CounterCfg::default(); 16];
    let upc = super::attach(&mut m, &cfg).map_err(|e| e.msg)?;
    m.spawn(0, |ctx| ctx.int(RUN_CYCLES));
    m.run(None).map_err(|e| e.to_string())?;
    let u = upc.borrow();
    let c = &u.units[0].counters[0];
    if u.counted(c.sram) + c.lost != c.exact {
        return Err(format!(
            "{w} bits, period {period}: SRAM {} + lost {} != exact {}",
            u.counted(c.sram),
            c.lost,
            c.exact
        ));
    }
    Ok((c.lost, c.exact))
}

fn mark(lost: bool) -> &'static str {
    if lost {
        "lost"
    } else {
        "-"
    }
}

/// Runs the study (the flags `--upc-width` and `--upc-period` pick one row or column).
pub fn run(a: &StudyArgs) -> Result<(String, u8), Error> {
    let mut widths = WIDTHS.to_vec();
    let mut periods = PERIODS.to_vec();
    for (f, v) in &a.flags {
        let v = v.as_deref().unwrap_or("");
        let n: u64 = v
            .parse()
            .map_err(|_| Error::input(format!("--{f}: `{v}` is not a whole number")))?;
        match f.as_str() {
            "upc-width" if (2..=32).contains(&n) => widths = vec![n as u32],
            "upc-period" if (16..=100_000).contains(&n) => periods = vec![n],
            _ => {
                return Err(Error::input(format!(
                    "--{f}: {n} is out of range for study upc"
                )))
            }
        }
    }
    let mut cols = vec![Column::count("width (bits)")];
    for p in &periods {
        cols.push(Column::label(&format!("P={p} sim/arith")));
    }
    cols.push(Column::count("longest safe P (e=2)"));
    cols.push(Column::count("longest safe P (chip, e=8)"));
    let mut t = Table::new(
        "upc_study",
        "Where counts start to be lost: simulation / arithmetic, per local width and frame period (x2 cycles)",
        cols,
    );
    let mut disagree = 0;
    let mut points = Vec::new();
    for &w in &widths {
        let mut row = vec![Cell::Int(w as u64)];
        for &p in &periods {
            let (lost, exact) = simulate(w, p).map_err(Error::sim)?;
            let arith = must_lose(w, p, E_SIM);
            if (lost > 0) != arith {
                disagree += 1;
            }
            row.push(Cell::text(format!("{}/{}", mark(lost > 0), mark(arith))));
            points.push(json!({"width": w, "period": p, "lost": lost, "exact": exact, "arithmetic_loses": arith}));
        }
        row.push(Cell::Int(longest_safe(w, E_SIM)));
        row.push(Cell::Int(longest_safe(w, E_CHIP)));
        t.row(row);
    }
    t.set_note(format!(
        "sim: a cycles counter (2 counts per x2 cycle) on one core for {RUN_CYCLES} processor cycles lost counts; arith: 2 P > 2^(w-1). {} of {} points disagree. The seed's case: 14 bits drained every 400 x2 cycles loses nothing (e P = 800 <= 8192), and on the chip (e = 8) must drain within 8192 / 8 = 1024.",
        disagree,
        widths.len() * periods.len()
    ));
    let mut s = Section::new("study upc: local counter width and chain period");
    s.table(t);
    let out = if a.json {
        serde_json::to_string_pretty(&json!({
            "schema": "pmusim.study-upc/1",
            "points": points,
            "disagree": disagree,
            "seed_case": {"width": 14, "period": 400, "must_drain_within": longest_safe(14, E_CHIP)},
        }))
        .expect("JSON of plain values")
            + "\n"
    } else {
        report::render::text::render(&Report { sections: vec![s] })
    };
    Ok((out, if disagree == 0 { 0 } else { 1 }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arithmetic_of_the_seed_case() {
        assert_eq!(longest_safe(14, E_CHIP), 1024);
        assert!(!must_lose(14, 400, E_CHIP));
        assert!(must_lose(14, 1025, E_CHIP));
        assert!(!must_lose(12, 1024, E_SIM));
        assert!(must_lose(11, 1024, E_SIM));
    }

    /// Both sides of the boundary at 10 bits (512 counts a slot): 256 keeps up, 400 loses.
    #[test]
    fn simulation_agrees_at_the_boundary() {
        assert_eq!(simulate(10, 256).unwrap().0, 0);
        assert!(simulate(10, 400).unwrap().0 > 0);
    }
}
