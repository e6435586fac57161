//! BGPM's operating modes as a choice (`bgpm = "..."` in a UPC configuration file,
//! `--bgpm-mode`): what each mode lets a user count and how its counters start.
//!
//! Sources: seed 001's two UPC modes ("distributed count mode" Mode 0 and "detailed count
//! mode" Mode 1; BGPM's three modes all run the UPC in Mode 0) and the driver's BGPM mode list
//! (`jedbrown/bgq-driver`, `bgpm/include/types.h`, `Bgpm_Modes`; `bgpm/docs/DocSwFeatures.h`):
//!
//! | mode | driver | counters | start / stop | overflow, multiplexing | read |
//! | --- | --- | --- | --- | --- | --- |
//! | `ll-distrib` | `BGPM_MODE_LLDISTRIB` | 6 per hardware thread, each thread its own | the UPC_P's run bit (sync override) | refused | the 14-bit local counter |
//! | `sw-distrib` | `BGPM_MODE_SWDISTRIB` (the driver's default) | 6 per hardware thread | the UPC_P's run bit (sync override) | allowed | 64 bits (UPC_C SRAM + local) |
//! | `hw-distrib` | `BGPM_MODE_HWDISTRIB` | 6 per hardware thread | UPC_C's synchronous start down the chain (seed: "globally synchronize counter starting stopping") | refused ("does not support multiplexing, or any overflow support") | 64 bits |
//!
//! "Each Punit provides 6 x 64 bit counters for each HW Thread": UPC_P counter i serves
//! hardware thread i % 4 (the driver's initial affinity, `bgpm/docs/DocCounterRules.h`:
//! thread k holds counters k, k+4, .., k+20, the same as a program's event sets get), so a
//! per-thread event on counter i counts thread i % 4 only (no thread combine); core-wide
//! events (cycles, miss pending, back-invalidates, L1P) may sit on any counter. The driver's
//! hand-over of an idle sibling's counters (12 or 24 for one thread) is a program's event
//! set's (`bgpm_ctrs`), not a configuration file's.
//! Without `bgpm`, the file configures the UPC's registers directly (no such constraints): the
//! hardware allows any thread mask on any counter. A BGPM mode with UPC Mode 1 is refused
//! (`BGPM_MODE_HWDETAIL` is "deferred" in the driver), and UPC Mode 2 (the driver's trace
//! mode, `UPC_TRACE_MODE`, "cancelled" in BGPM) is not modelled.

use super::config::Config;
use super::events::{self, a2, Group};
use super::probe::P_COUNTERS;
use super::regs::CounterCfg;
use crate::plugin::Error;

/// Counters a BGPM mode gives each hardware thread of a core.
pub const PER_THREAD: usize = 6;

/// Hardware threads of a core, over which the counters are interleaved.
const THREADS: usize = 4;

/// A BGPM operating mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BgpmMode {
    LlDistrib,
    SwDistrib,
    HwDistrib,
}

impl BgpmMode {
    pub const ALL: [BgpmMode; 3] = [
        BgpmMode::LlDistrib,
        BgpmMode::SwDistrib,
        BgpmMode::HwDistrib,
    ];

    /// The mode called `name` (`ll-distrib`, `sw-distrib`, `hw-distrib`, or the driver's
    /// `BGPM_MODE_*` name); `what` names the place in errors.
    pub fn parse(name: &str, what: &str) -> Result<BgpmMode, Error> {
        BgpmMode::ALL
            .into_iter()
            .find(|m| name == m.name() || name.eq_ignore_ascii_case(m.driver()))
            .ok_or_else(|| {
                Error::input(format!(
                    "{what}: `{name}` is not a BGPM mode (ll-distrib, sw-distrib, hw-distrib)"
                ))
            })
    }

    pub fn name(self) -> &'static str {
        match self {
            BgpmMode::LlDistrib => "ll-distrib",
            BgpmMode::SwDistrib => "sw-distrib",
            BgpmMode::HwDistrib => "hw-distrib",
        }
    }

    /// The driver's name (`Bgpm_Modes`).
    pub fn driver(self) -> &'static str {
        match self {
            BgpmMode::LlDistrib => "BGPM_MODE_LLDISTRIB",
            BgpmMode::SwDistrib => "BGPM_MODE_SWDISTRIB",
            BgpmMode::HwDistrib => "BGPM_MODE_HWDISTRIB",
        }
    }

    /// Overflow thresholds (and so multiplexing driven by them) are supported.
    pub fn overflow(self) -> bool {
        self == BgpmMode::SwDistrib
    }

    /// The counters follow their UPC_P's run bit (sync override) rather than UPC_C's
    /// synchronous start.
    pub fn sync_override(self) -> bool {
        self != BgpmMode::HwDistrib
    }

    /// A read gives the 64-bit count (else the 14-bit local counter).
    pub fn wide_reads(self) -> bool {
        self != BgpmMode::LlDistrib
    }

    /// The hardware thread UPC_P counter `i` serves: the driver's initial affinity, thread
    /// k's counters k, k+4, .., k+20 ("Punit Simultaneous Event Rules").
    pub fn thread_of(i: usize) -> usize {
        i % THREADS
    }

    /// The counters of hardware thread `k`, `k, k+4, .., k+20`, as text for a message.
    fn counters_of(k: usize) -> String {
        let v: Vec<String> = (0..PER_THREAD)
            .map(|j| (k + THREADS * j).to_string())
            .collect();
        v.join(", ")
    }

    /// Checks UPC_P counter `i`'s configuration against the mode; `what` names it.
    pub fn check_counter(self, i: usize, c: &CounterCfg, what: &str) -> Result<(), Error> {
        if !c.enable {
            return Ok(());
        }
        let e = c.check_p(what)?;
        let k = BgpmMode::thread_of(i);
        if e.per_thread && c.threads != 1 << k {
            return Err(Error::input(format!(
                "{what}: {} counts hardware thread {k} only in {} (counters {} are thread {k}'s, {PER_THREAD} per thread); threads {:#x} asked",
                e.name,
                self.driver(),
                BgpmMode::counters_of(k),
                c.threads
            )));
        }
        if c.sync_override != self.sync_override() {
            return Err(Error::input(format!(
                "{what}: sync_override = {} contradicts {}, whose counters {}",
                c.sync_override,
                self.driver(),
                if self.sync_override() {
                    "each thread starts itself (sync override on)"
                } else {
                    "start together on UPC_C's command (sync override off)"
                }
            )));
        }
        Ok(())
    }

    /// Checks a whole configuration (UPC Mode 0, every UPC_P counter, thresholds).
    pub fn check(self, c: &Config, source: &str) -> Result<(), Error> {
        if c.mode != 0 {
            return Err(Error::input(format!(
                "{source}: bgpm = \"{}\" runs the UPC in Mode 0 (distributed); Mode {} is not a BGPM mode (the driver's BGPM_MODE_HWDETAIL is deferred)",
                self.name(),
                c.mode
            )));
        }
        for (i, p) in c.p.iter().enumerate() {
            self.check_counter(i, p, &format!("{source}: counter {i}"))?;
        }
        if !self.overflow() {
            if let Some(&(l2, i, _)) = c.overflow.first() {
                return Err(Error::input(format!(
                    "{source}: {} {i}: overflow: {} supports no overflow thresholds (nor multiplexing)",
                    if l2 { "l2counter" } else { "counter" },
                    self.driver()
                )));
            }
        }
        Ok(())
    }

    /// The mode's own default event set, when a user gives the mode but no counters: on each
    /// hardware thread's 6 counters, `PEVT_INST_ALL`, load and store misses, L1 I misses, larx
    /// and stcx of that thread (the same for every mode, so the modes compare).
    pub fn default_counters(self) -> Vec<CounterCfg> {
        let evs = [
            (Group::Opcode, events::op::ALL),
            (Group::A2, a2::LD_MISS),
            (Group::A2, a2::ST_MISS),
            (Group::A2, a2::IL1_MISS),
            (Group::A2, a2::LARX),
            (Group::A2, a2::STCX),
        ];
        (0..P_COUNTERS)
            .map(|i| {
                let (g, sub) = evs[i / THREADS];
                let e = events::p_event(g, sub).expect("a modelled event");
                CounterCfg {
                    event: e.sub,
                    group: e.group as u8,
                    threads: 1 << BgpmMode::thread_of(i),
                    sync_override: self.sync_override(),
                    enable: true,
                    ..Default::default()
                }
            })
            .collect()
    }

    /// Applies the mode to `c`: the mode's default event set when `c` has the built-in one;
    /// otherwise sync override turned on for every counter in the modes whose threads start
    /// their own counters (a file cannot write `sync_override = false` for them: false is the
    /// key's default), and left as written for `hw-distrib` (where `true` is refused); then
    /// the checks.
    pub fn apply(self, c: &mut Config, source: &str) -> Result<(), Error> {
        if c.p == Config::default().p {
            c.p = self.default_counters();
        } else if self.sync_override() {
            for p in c.p.iter_mut().filter(|p| p.enable) {
                p.sync_override = true;
            }
        }
        c.bgpm = Some(self);
        self.check(c, source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_defaults_satisfy_each_mode() {
        for m in BgpmMode::ALL {
            assert_eq!(BgpmMode::parse(m.name(), "t").unwrap(), m);
            assert_eq!(BgpmMode::parse(m.driver(), "t").unwrap(), m);
            let mut c = Config::default();
            m.apply(&mut c, "t").unwrap();
            assert_eq!(c.p.len(), 24);
            for (i, p) in c.p.iter().enumerate() {
                // The driver's affinity: thread k holds counters k, k+4, .., k+20.
                assert_eq!(p.threads, 1 << (i % 4));
                assert_eq!(p.sync_override, m != BgpmMode::HwDistrib);
            }
        }
        let e = BgpmMode::parse("detailed", "--bgpm-mode").unwrap_err();
        assert!(format!("{e:?}").contains("--bgpm-mode: `detailed` is not a BGPM mode"));
    }
}
