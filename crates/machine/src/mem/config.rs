//! The `[memctl]` section of a preset: a memory controller at every home (issue 16 item 1):
//! the interface buffer of seed 002 in front of DRAM banks with open-row timing.
//!
//! Off unless the preset has the section with `enabled = true` (or the run says `--memctl`):
//! without it every memory system keeps its fixed memory timing, so the golden runs stay
//! identical. The timings are named after the DRAM datasheet parameters gem5's `MemCtrl.py`
//! and DRAMsim3 use (tRCD, tCAS, tRP, tBURST, tWR), in cycles of the clock `clock` names.

use crate::error::ConfigError;
use crate::mem::buffer::BufferConfig;
use serde::{Deserialize, Serialize};

/// What a write-buffer entry holds.
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum BufferMode {
    /// Whole cache lines: the multiprocessor presets' line write-backs and fills.
    Lines,
    /// The seed's 4-byte words in 16-byte blocks (stores reaching the controller word by word).
    Words,
}

fn yes() -> bool {
    true
}
fn system() -> String {
    "system".into()
}

/// A memory controller per home: buffer settings and DRAM timing.
#[derive(Deserialize, Serialize, Clone, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MemCtlCfg {
    /// The controller is in the memory path (false: the system's fixed memory timing).
    #[serde(default)]
    pub enabled: bool,
    /// Clock of the timings below (`cpu` or `system`).
    #[serde(default = "system")]
    pub clock: String,
    /// The interface buffer is in the path (false: the same DRAM without it, every request a
    /// DRAM transaction; the baseline the buffer's effect is measured against).
    #[serde(default = "yes")]
    pub buffer: bool,
    /// Entry size of the write buffer.
    pub mode: BufferMode,
    /// Write-buffer capacity in units (lines, or words in `words` mode; the seed's 32 words).
    pub entries: usize,
    /// Buffered units at which the write buffer gets priority for DRAM (1..=entries).
    pub watermark: usize,
    /// Read-buffer lines (the seed's two).
    #[serde(default = "two")]
    pub read_lines: usize,
    /// Fetch the next line into the read buffer on every read.
    #[serde(default = "yes")]
    pub read_ahead: bool,
    /// Keep read-ahead lines (true). False: the control experiment of
    /// `BufferConfig::read_ahead_keeps` (the fetch is timed, its line dropped). Not written
    /// out when true, so configurations print as before.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub read_ahead_keeps: bool,
    /// Below the watermark, drain writes when the DRAM is otherwise idle (gem5, Ramulator);
    /// off: the buffer only accumulates below it (the seed).
    #[serde(default)]
    pub drain_when_idle: bool,
    /// DRAM banks (a power of two); consecutive rows of `row_bytes` go to consecutive banks.
    pub banks: u32,
    /// Bytes per DRAM row (a power of two).
    pub row_bytes: u64,
    /// Activate to column command (row miss: bank closed).
    pub t_rcd: u32,
    /// Column command to data.
    pub t_cas: u32,
    /// Precharge (row conflict: another row open; adds to tRCD).
    pub t_rp: u32,
    /// Data transfer of one line (or one block in `words` mode) on the data bus.
    pub t_burst: u32,
    /// Write recovery: the bank stays busy this long after a write's data.
    pub t_wr: u32,
    /// A read served from the read buffer or entirely from the write buffer.
    pub t_buffer: u32,
}

fn is_true(b: &bool) -> bool {
    *b
}

fn two() -> usize {
    2
}

fn err<T>(field: &str, msg: impl std::fmt::Display) -> Result<T, ConfigError> {
    Err(ConfigError(format!("memctl.{field}: {msg}")))
}

impl MemCtlCfg {
    /// A controller for a machine with `line_bytes` lines: line mode, 8 line entries,
    /// watermark 4, two read lines with read-ahead, 4 banks of 2 KiB rows, and SDRAM-like
    /// timings in system cycles (tRCD = tCAS = tRP = 2, tBURST = 2, tWR = 2, buffer hit 1).
    pub fn default_for(line_bytes: u64) -> MemCtlCfg {
        let _ = line_bytes;
        MemCtlCfg {
            enabled: true,
            buffer: true,
            clock: system(),
            mode: BufferMode::Lines,
            entries: 8,
            watermark: 4,
            read_lines: 2,
            read_ahead: true,
            read_ahead_keeps: true,
            drain_when_idle: false,
            banks: 4,
            row_bytes: 2048,
            t_rcd: 2,
            t_cas: 2,
            t_rp: 2,
            t_burst: 2,
            t_wr: 2,
            t_buffer: 1,
        }
    }

    /// The buffer's configuration for a machine whose coherence unit is `line_bytes`.
    pub fn buffer(&self, line_bytes: u64) -> BufferConfig {
        match self.mode {
            BufferMode::Lines => BufferConfig {
                capacity: self.entries,
                watermark: self.watermark,
                read_lines: self.read_lines,
                read_ahead: self.read_ahead,
                read_ahead_keeps: self.read_ahead_keeps,
                drain_when_idle: self.drain_when_idle,
                ..BufferConfig::lines(line_bytes as u32, self.entries)
            },
            BufferMode::Words => BufferConfig {
                capacity: self.entries,
                watermark: self.watermark,
                read_lines: self.read_lines,
                read_ahead: self.read_ahead,
                read_ahead_keeps: self.read_ahead_keeps,
                drain_when_idle: self.drain_when_idle,
                ..BufferConfig::words()
            },
        }
    }

    /// Checks every field against the machine's line size; errors name the field.
    pub fn validate(&self, line_bytes: u64) -> Result<(), ConfigError> {
        if self.clock != "cpu" && self.clock != "system" {
            return err(
                "clock",
                format!("`{}` is not `cpu` or `system`", self.clock),
            );
        }
        if self.banks == 0 || !self.banks.is_power_of_two() || self.banks > 64 {
            return err(
                "banks",
                format!("{} is not a power of two in 1..=64", self.banks),
            );
        }
        if !self.row_bytes.is_power_of_two() || self.row_bytes < line_bytes {
            return err(
                "row_bytes",
                format!(
                    "{} is not a power of two of at least one line ({line_bytes} bytes)",
                    self.row_bytes
                ),
            );
        }
        if self.entries > 4096 {
            return err("entries", format!("{} is more than 4096", self.entries));
        }
        // The read buffer is a handful of lines (seed 002: two); a bound keeps a typo from
        // asking for more memory than the host has (found by the preset fuzzer).
        if self.read_lines > 4096 {
            return err(
                "read_lines",
                format!("{} is more than 4096", self.read_lines),
            );
        }
        for (f, v) in [
            ("t_rcd", self.t_rcd),
            ("t_cas", self.t_cas),
            ("t_rp", self.t_rp),
            ("t_burst", self.t_burst),
            ("t_wr", self.t_wr),
            ("t_buffer", self.t_buffer),
        ] {
            if v > 100_000 {
                return err(
                    f,
                    format!("{v} cycles is implausibly long (at most 100000)"),
                );
            }
        }
        if self.t_burst == 0 {
            return err("t_burst", "must be at least 1 cycle");
        }
        if self.mode == BufferMode::Lines
            && line_bytes > crate::mem::buffer::config::MAX_BLOCK_BYTES as u64
        {
            return err(
                "mode",
                format!(
                    "line entries of {line_bytes} bytes are above the buffer's {}-byte limit",
                    crate::mem::buffer::config::MAX_BLOCK_BYTES
                ),
            );
        }
        self.buffer(line_bytes).validate().map_err(|e| {
            ConfigError(
                e.replace("memory buffer: capacity", "memctl.entries: capacity")
                    .replace("memory buffer: ", "memctl: "),
            )
        })
    }

    /// Applies a `--memctl` specification: `on`, or comma-separated `key=value` pairs over
    /// these fields (`watermark=8,read_ahead=off`); any key enables the controller.
    pub fn apply_spec(
        cur: Option<MemCtlCfg>,
        spec: &str,
        line_bytes: u64,
    ) -> Result<MemCtlCfg, String> {
        let mut c = cur.unwrap_or_else(|| MemCtlCfg::default_for(line_bytes));
        c.enabled = true;
        for kv in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            if kv == "on" {
                continue;
            }
            if kv == "off" {
                c.enabled = false;
                continue;
            }
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("--memctl: `{kv}` is not KEY=VALUE (or `on`, `off`)"))?;
            let num = |v: &str| -> Result<u64, String> {
                v.parse::<u64>()
                    .map_err(|_| format!("--memctl: {k} = `{v}` is not a whole number"))
            };
            let flag = |v: &str| -> Result<bool, String> {
                match v {
                    "on" | "true" | "1" => Ok(true),
                    "off" | "false" | "0" => Ok(false),
                    _ => Err(format!("--memctl: {k} = `{v}` is not on/off")),
                }
            };
            let small = |v: &str| -> Result<u32, String> {
                u32::try_from(num(v)?).map_err(|_| format!("--memctl: {k} = `{v}` is too large"))
            };
            match k {
                "mode" => {
                    c.mode = match v {
                        "lines" => BufferMode::Lines,
                        "words" => BufferMode::Words,
                        _ => return Err(format!("--memctl: mode = `{v}` is not lines or words")),
                    }
                }
                "clock" => c.clock = v.to_string(),
                "buffer" => c.buffer = flag(v)?,
                "entries" => c.entries = num(v)? as usize,
                "watermark" => c.watermark = num(v)? as usize,
                "read_lines" => c.read_lines = num(v)? as usize,
                "read_ahead" => c.read_ahead = flag(v)?,
                "read_ahead_keeps" => c.read_ahead_keeps = flag(v)?,
                "drain_when_idle" => c.drain_when_idle = flag(v)?,
                "banks" => c.banks = small(v)?,
                "row_bytes" => c.row_bytes = num(v)?,
                "t_rcd" => c.t_rcd = small(v)?,
                "t_cas" => c.t_cas = small(v)?,
                "t_rp" => c.t_rp = small(v)?,
                "t_burst" => c.t_burst = small(v)?,
                "t_wr" => c.t_wr = small(v)?,
                "t_buffer" => c.t_buffer = small(v)?,
                _ => {
                    return Err(format!(
                        "--memctl: unknown key `{k}` (known: buffer, mode, clock, entries, watermark, read_lines, read_ahead, read_ahead_keeps, drain_when_idle, banks, row_bytes, t_rcd, t_cas, t_rp, t_burst, t_wr, t_buffer)"
                    ))
                }
            }
        }
        c.validate(line_bytes)
            .map_err(|e| format!("--memctl: {}", e.0))?;
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_enable_override_and_name_bad_keys() {
        let c = MemCtlCfg::apply_spec(None, "on", 64).unwrap();
        assert_eq!(c, MemCtlCfg::default_for(64));
        let c = MemCtlCfg::apply_spec(None, "watermark=8,read_ahead=off,entries=16", 64).unwrap();
        assert_eq!((c.watermark, c.read_ahead, c.entries), (8, false, 16));
        assert!(c.read_ahead_keeps);
        let g = MemCtlCfg::apply_spec(None, "read_ahead_keeps=off", 64).unwrap();
        assert!(g.read_ahead && !g.read_ahead_keeps && !g.buffer(64).read_ahead_keeps);
        assert!(c.enabled);
        for (spec, want) in [
            ("watermark=9", "watermark = 9"),
            ("watermark", "not KEY=VALUE"),
            ("banks=3", "memctl.banks"),
            ("speed=2", "unknown key `speed`"),
            ("read_ahead=maybe", "not on/off"),
            ("row_bytes=32", "memctl.row_bytes"),
            ("clock=dram", "memctl.clock"),
        ] {
            let e = MemCtlCfg::apply_spec(None, spec, 64).unwrap_err();
            assert!(e.contains(want), "{spec}: {e}");
        }
        // POWER2's 256-byte lines are entries; a longer line is refused, naming the mode.
        MemCtlCfg::apply_spec(None, "on", 256).unwrap();
        let e = MemCtlCfg::apply_spec(None, "on", 512).unwrap_err();
        assert!(e.contains("memctl.mode"), "{e}");
    }
}
