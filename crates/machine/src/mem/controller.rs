//! A memory controller (issue 16 item 1): seed 002's interface buffer in front of DRAM banks
//! with open-row timing, one per home node, in whichever memory system the preset has.
//!
//! The memory systems call it where they used their fixed memory timing:
//! - [`Controller::read`] where the home reads a line from memory to answer a request; it
//!   returns when the data is ready **and the line's value** (the token the machine keeps per
//!   line, see ARCHITECTURE.md "Data values"), merged from the write buffer over DRAM. In
//!   `ideal` and `numachine` the home replies with that value, so a buffer that lost a write or
//!   served stale bytes shows up as a data-value violation in the protocol tester;
//! - [`Controller::write`] where line data reaches memory (a write-back, a sharing
//!   write-back, an intervention's data passing the home); it returns when the buffer accepted
//!   the write (at once unless full), which is when the home acknowledges it.
//!
//! A line's value is stored as its first 8 bytes (the rest of the line is never read), so a
//! line-mode entry is one unit and a collapse is a rewrite of a buffered line.
//!
//! Requests arrive in time order within a system's event loop. While a write stalls on a
//! full buffer the controller takes no other request, so one arriving meanwhile is taken when
//! the stall ends (counted in `reordered`, with any request stamped before its predecessor).
//!
//! Every request is reported to the probes as `Observation::MemRequest` with its buffer events;
//! the counts are the controller's ground truth (`BufferStats`, `DramStats`). `finish` drains
//! what is left at the end of the run, so no run ends with writes in the buffer.

use crate::addr::Addr;
use crate::env::Env;
use crate::mem::buffer::{BufferStats, BufferedMemory, SparseMemory};
use crate::mem::config::MemCtlCfg;
use crate::mem::dram::{Banks, DramStats, DramTicks};
use engine::Tick;

/// One node's memory controller.
#[derive(Clone, Debug)]
pub struct Controller {
    node: u16,
    buf: BufferedMemory<SparseMemory, Banks>,
    /// No buffer: every request goes straight to DRAM (`memctl.buffer = false`).
    direct: bool,
    reordered: u64,
    /// The clock its timings and setting changes count in (`cpu` or `system`).
    clock: &'static str,
}

/// What a controller reports (ground truth per controller).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ControllerReport {
    pub node: u16,
    pub buffer: BufferStats,
    pub dram: DramStats,
    /// Requests taken later than stamped: stamped before the previous request, or arriving
    /// while a write stalled on a full buffer held the input.
    pub reordered: u64,
    /// Units in the write buffer now (0 after `finish`).
    pub buffered_units: usize,
    pub watermark: usize,
    pub read_ahead: bool,
}

impl Controller {
    /// Node `node`'s controller; `period` is the tick period of `cfg.clock`.
    pub fn new(
        node: u16,
        cfg: &MemCtlCfg,
        line_bytes: u64,
        period: Tick,
    ) -> Result<Controller, String> {
        let c = |x: u32| x as Tick * period;
        let t = DramTicks {
            t_rcd: c(cfg.t_rcd),
            t_cas: c(cfg.t_cas),
            t_rp: c(cfg.t_rp),
            t_burst: c(cfg.t_burst),
            t_wr: c(cfg.t_wr),
            t_buffer: c(cfg.t_buffer),
        };
        let dram = Banks::new(cfg.banks, cfg.row_bytes, t);
        Ok(Controller {
            node,
            buf: BufferedMemory::with_dram(cfg.buffer(line_bytes), dram, SparseMemory::new())?,
            direct: !cfg.buffer,
            reordered: 0,
            clock: if cfg.clock == "cpu" { "cpu" } else { "system" },
        })
    }

    /// The controllers of `nodes` homes, or none when the preset has no enabled `[memctl]`.
    pub fn for_nodes(
        cfg: Option<&MemCtlCfg>,
        nodes: usize,
        line_bytes: u64,
        clocks: &engine::Clocks,
    ) -> Result<Option<Vec<Controller>>, String> {
        let Some(cfg) = cfg.filter(|c| c.enabled) else {
            return Ok(None);
        };
        let period = clocks
            .get(&cfg.clock)
            .ok_or_else(|| format!("memctl.clock: no clock named {}", cfg.clock))?
            .period;
        (0..nodes)
            .map(|n| Controller::new(n as u16, cfg, line_bytes, period))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    /// The time a request stamped `t` is taken: `t`, or later if an earlier-stamped request
    /// or a write stalled on a full buffer still holds the controller's input.
    fn at(&mut self, t: Tick) -> Tick {
        let free = self.buf.next_request();
        if t < free {
            self.reordered += 1;
        }
        t.max(free)
    }

    /// Reads `out.len()` bytes at `a` (within one read-buffer line) from `t`: returns when the
    /// data is ready, with the buffered bytes merged over DRAM's in `out`.
    pub fn read_at<S: Copy>(&mut self, env: &mut Env<S>, t: Tick, a: Addr, out: &mut [u8]) -> Tick {
        let now = self.at(t);
        let done = if self.direct {
            self.buf.read_direct(now, a, out)
        } else {
            self.buf.read(now, a, out)
        }
        .expect("a read within one read-buffer line");
        env.observe_mem_request(self.node, now, a, self.buf.last_flags());
        done
    }

    /// Writes `data` at `a` (within one block) from `t`: returns when the buffer accepted it.
    pub fn write_at<S: Copy>(&mut self, env: &mut Env<S>, t: Tick, a: Addr, data: &[u8]) -> Tick {
        let now = self.at(t);
        let done = if self.direct {
            self.buf.write_direct(now, a, data)
        } else {
            self.buf.write(now, a, data)
        }
        .expect("a write within one block");
        env.observe_mem_request(self.node, now, a, self.buf.last_flags());
        done
    }

    /// Reads line `line` (a line number) from `t`: returns when the data is ready and the
    /// line's value.
    pub fn read<S: Copy>(&mut self, env: &mut Env<S>, t: Tick, line: u64) -> (Tick, u64) {
        let mut b = [0u8; 8];
        let done = self.read_at(env, t, line << env.line_shift, &mut b);
        (done, u64::from_le_bytes(b))
    }

    /// Writes `value` to line `line` from `t`: returns when the buffer accepted it.
    pub fn write<S: Copy>(&mut self, env: &mut Env<S>, t: Tick, line: u64, value: u64) -> Tick {
        self.write_at(env, t, line << env.line_shift, &value.to_le_bytes())
    }

    /// A write-through store from `t`: the aligned 4-byte word holding `a` (its bytes are the
    /// line value's where they overlap its first 8 bytes, else zero), or with `whole` the
    /// line's 8-byte value; returns when the buffer accepted it.
    pub fn write_word<S: Copy>(
        &mut self,
        env: &mut Env<S>,
        t: Tick,
        a: u64,
        token: u64,
        whole: bool,
    ) -> Tick {
        let line_start = (a >> env.line_shift) << env.line_shift;
        let tb = token.to_le_bytes();
        // On the stack: every store of a write-through L1 comes here.
        let mut word = [0u8; 8];
        let (w, len) = if whole {
            word = tb;
            (line_start, 8)
        } else {
            let w = a & !3;
            let off = (w - line_start) as usize;
            for (i, x) in word.iter_mut().take(4).enumerate() {
                *x = tb.get(off + i).copied().unwrap_or(0);
            }
            (w, 4)
        };
        self.write_at(env, t, w, &word[..len])
    }

    /// The end-of-run drain: every buffered write goes to DRAM (no run ends with writes in the
    /// buffer, gem5 issue 2493).
    pub fn finish(&mut self, t: Tick) {
        let now = self.at(t);
        self.buf
            .finish(now)
            .expect("the finish is stamped at or after the last request");
    }

    /// The value DRAM holds for `line`, write buffer not included (for the end-of-run check
    /// that every write reached DRAM).
    pub fn dram_value(&self, line: u64, line_shift: u32) -> u64 {
        let a = line << line_shift;
        let mut b = [0u8; 8];
        for (i, x) in b.iter_mut().enumerate() {
            *x = self.buf.dram().get(a + i as u64);
        }
        u64::from_le_bytes(b)
    }

    /// Sets the watermark (a setting the controller's register window writes).
    pub fn set_watermark(&mut self, w: usize) -> Result<(), String> {
        self.buf.set_watermark(w)
    }
    /// Turns read-ahead on or off.
    pub fn set_read_ahead(&mut self, on: bool) {
        self.buf.set_read_ahead(on)
    }

    /// Registers this controller's two settings for probes that act (`probe::Action::Set`,
    /// issue 16 item 6): `memctl.N.watermark` (1..=capacity units) and `memctl.N.read_ahead`
    /// (0 or 1). A change takes one cycle of the controller's clock: the tuning logic sits
    /// beside the buffer and writes its configuration register, as the seed's Figure 5
    /// buffer is configured. A controller without a buffer has nothing to tune and registers
    /// none. `State` applies a change through [`Controller::apply_setting`].
    pub fn register_settings(
        &self,
        n: usize,
        set: &mut crate::settings::Settings,
        clocks: &engine::Clocks,
    ) -> Result<(), String> {
        use crate::settings::Declare;
        if self.direct {
            return Ok(());
        }
        let cfg = self.buf.config();
        set.register(
            clocks,
            Declare {
                name: &format!("memctl.{n}.watermark"),
                doc: "write-buffer units at which writes get priority for DRAM (seed 002)",
                value: cfg.watermark as u64,
                min: 1,
                max: cfg.capacity as u64,
                latency_cycles: 1,
                clock: self.clock,
            },
        )?;
        set.register(
            clocks,
            Declare {
                name: &format!("memctl.{n}.read_ahead"),
                doc: "read buffer fetches the next line on every read (1) or not (0)",
                value: cfg.read_ahead as u64,
                min: 0,
                max: 1,
                latency_cycles: 1,
                clock: self.clock,
            },
        )?;
        Ok(())
    }

    /// Applies setting `name` (`watermark` or `read_ahead`, the part after `memctl.N.`); the
    /// value was checked against the registered range. Returns whether the name was one of
    /// this controller's.
    pub fn apply_setting(&mut self, name: &str, value: u64) -> bool {
        match name {
            "watermark" => self.set_watermark(value as usize).is_ok(),
            "read_ahead" => {
                self.set_read_ahead(value != 0);
                true
            }
            _ => false,
        }
    }

    pub fn report(&self) -> ControllerReport {
        ControllerReport {
            node: self.node,
            buffer: *self.buf.stats(),
            dram: *self.buf.dram_model().stats(),
            reordered: self.reordered,
            buffered_units: self.buf.write_buffer().units(),
            watermark: self.buf.config().watermark,
            read_ahead: self.buf.config().read_ahead,
        }
    }
}
