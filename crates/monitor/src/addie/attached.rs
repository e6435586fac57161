//! Addies attached to a run (issue 16 item 5): two Addies per memory controller, each fed by
//! the controller's per-request stream its multiplexer selects, read every `window` samples
//! beside the exact ratio over the same window (the tracking error).
//!
//! - *State*: per controller, two [`Addie`] units (their LFSRs seeded apart), and per unit the
//!   exact count of ones and samples in the current window and since the start, and the
//!   readings taken so far.
//! - *Trigger*: an `Observation::MemRequest` whose kind (read or write) the input samples: a
//!   write for write-buffer hit and full, a read for read merge and read-buffer hit. One sample
//!   per request (the seed scores a read-buffer hit once per request, not per word).
//! - *Handler*: the Addie samples the selected bit; every `window` samples the reading (the
//!   counter over full scale, what the debug port reads at no cost) is recorded with the exact
//!   window ratio, and the window restarts.
//! - *Registers* (issue 16 item 3): besides the debug port (the readings above, free to the
//!   program), every Addie's counter is an 8-byte read-only register in an uncached window the
//!   monitor registers as a device (`machine::uncached::Owner::Device`): controller `n`'s
//!   Addie `i` at [`REGISTER_BASE`]` + (2n + i) * 8`. A program's uncached load of it returns
//!   the counter's value at that moment (the raw n-bit count; the estimate is
//!   `count / (2^n - 1)`) and costs the window's cycles (`--addie-register-cycles`, default the
//!   preset's `cpu.uncached_cycles`); a store to it changes nothing.

use super::{Addie, AddieConfig, AddieInput, RandomMode};
use machine::addr::Addr;
use machine::mem::buffer::flags;
use machine::probe::{kind, Observation, Probe, Signals};
use serde::Serialize;

/// The bit an input takes from a request's buffer flags, or `None` if the request is not of
/// the kind the input samples.
pub fn select(input: &AddieInput, f: flags::Flags) -> Option<bool> {
    let (kind, bit) = wiring(input);
    (f & flags::WRITE == kind).then_some(f & bit != 0)
}

/// How an input is wired to a request's flags, decided once when the channel is built so that a
/// request costs one comparison per Addie, not a match on the input: (the request kind it
/// samples, `flags::WRITE` or 0 for a read; the flag that is its bit). An input not wired on
/// runs (`Probe`) gets a kind no request has (`flags & WRITE` is never all ones).
fn wiring(input: &AddieInput) -> (flags::Flags, flags::Flags) {
    match input {
        AddieInput::WriteBufferHit => (flags::WRITE, flags::WRITE_HIT),
        AddieInput::WriteBufferFull => (flags::WRITE, flags::FULL),
        AddieInput::ReadMerge => (0, flags::READ_MERGE),
        AddieInput::ReadBufferHit => (0, flags::READ_BUFFER_HIT),
        AddieInput::Probe(_) => (flags::Flags::MAX, 0),
    }
}

/// One reading: at `t` (ticks), after `samples` samples, the Addie's estimate and the exact
/// ratio over the window that ended there.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Reading {
    pub t: u64,
    pub samples: u64,
    pub addie: f64,
    pub exact_window: f64,
}

/// One Addie with its exact reference.
///
/// The window is kept as counts, not per-sample state: the unit counts its samples since reset
/// (`Addie::samples`), the window closes when that count reaches `close`, and the samples of the
/// open window are `unit.samples() - n`. A sample costs the unit's step, one add and one
/// comparison.
#[derive(Clone, Debug)]
pub struct Channel {
    pub input: AddieInput,
    /// [`wiring`] of `input`: the request kind sampled and the flag that is the bit.
    kind: flags::Flags,
    bit: flags::Flags,
    pub unit: Addie,
    /// Ones in the open window.
    win_ones: u64,
    /// The unit's sample count at which the open window closes.
    close: u64,
    /// Ones and samples of the closed windows.
    pub ones: u64,
    pub n: u64,
    pub readings: Vec<Reading>,
}

impl Channel {
    fn new(input: AddieInput, unit: Addie, window: u64) -> Channel {
        let (kind, bit) = wiring(&input);
        Channel {
            input,
            kind,
            bit,
            unit,
            win_ones: 0,
            close: window,
            ones: 0,
            n: 0,
            readings: Vec::new(),
        }
    }
    /// One request: sampled if it is of this channel's kind.
    #[inline(always)]
    fn request(&mut self, f: flags::Flags, t: u64, window: u64) {
        if f & flags::WRITE == self.kind {
            self.sample(f & self.bit != 0, t, window);
        }
    }
    #[inline(always)]
    fn sample(&mut self, bit: bool, t: u64, window: u64) {
        self.unit.sample(bit);
        self.win_ones += bit as u64;
        if self.unit.samples() == self.close {
            self.close_window(t, window);
        }
    }
    /// Records the reading at the end of a window and opens the next (once per `window`
    /// samples, out of line).
    #[cold]
    #[inline(never)]
    fn close_window(&mut self, t: u64, window: u64) {
        self.ones += self.win_ones;
        self.n += window;
        self.readings.push(Reading {
            t,
            samples: self.n,
            addie: self.unit.estimate(),
            exact_window: self.win_ones as f64 / window as f64,
        });
        self.win_ones = 0;
        self.close += window;
    }
    /// Exact ratio over every sample (the partial last window included).
    pub fn exact(&self) -> Option<f64> {
        let n = self.samples();
        (n > 0).then(|| (self.ones + self.win_ones) as f64 / n as f64)
    }
    pub fn samples(&self) -> u64 {
        self.unit.samples()
    }
    /// Mean and largest |Addie - exact window ratio| over the readings.
    pub fn tracking_error(&self) -> Option<(f64, f64)> {
        if self.readings.is_empty() {
            return None;
        }
        let e: Vec<f64> = self
            .readings
            .iter()
            .map(|r| (r.addie - r.exact_window).abs())
            .collect();
        Some((
            e.iter().sum::<f64>() / e.len() as f64,
            e.iter().cloned().fold(0.0, f64::max),
        ))
    }
}

/// Address of the first Addie register (controller 0, Addie 0).
pub const REGISTER_BASE: Addr = machine::uncached::DEVICE_BASE + 0xADD1_0000;
/// The offset the probes' `mmio` sees for [`REGISTER_BASE`] (a device's, beyond the card's).
pub const REGISTER_OFFSET: u64 = machine::uncached::DEVICE_OFFSETS + 0xADD1_0000;
/// Bytes per Addie register.
pub const REGISTER_BYTES: u64 = 8;

/// The probe: two channels per controller.
pub struct AddieProbe {
    pub window: u64,
    pub nodes: Vec<[Channel; 2]>,
    /// Uncached loads of the Addie registers the programs made.
    pub register_reads: u64,
    /// Processor cycles each of them cost (set when the window is registered).
    pub register_cycles: u64,
}

impl AddieProbe {
    /// `nodes` controllers, Addies of `width` bits on `inputs`.
    pub fn new(
        nodes: usize,
        inputs: &[AddieInput; 2],
        width: u32,
        mode: RandomMode,
        window: u64,
    ) -> Result<AddieProbe, String> {
        let ch = |n: usize, i: usize| -> Result<Channel, String> {
            // Distinct non-zero LFSR seeds per unit (the seed's units run off separate LFSRs).
            let state = (0x1234_5678u32 ^ ((n * 2 + i) as u32).wrapping_mul(0x9E37_79B9)) | 1;
            let unit = Addie::new(AddieConfig::new(width, mode, state & 0x7FFF_FFFF))?;
            Ok(Channel::new(inputs[i].clone(), unit, window))
        };
        let nodes = (0..nodes)
            .map(|n| Ok([ch(n, 0)?, ch(n, 1)?]))
            .collect::<Result<Vec<_>, String>>()?;
        Ok(AddieProbe {
            window,
            nodes,
            register_reads: 0,
            register_cycles: 0,
        })
    }
}

impl AddieProbe {
    /// Sets every controller's two inputs to `inputs` and restarts its Addies (half scale, a
    /// fresh window, no readings): `pmusim stat`'s rotation of the multiplexers.
    pub fn restart(&mut self, inputs: &[AddieInput; 2]) -> Result<(), String> {
        let u = &self.nodes.first().map(|c| &c[0].unit);
        let Some(u) = u else { return Ok(()) };
        let fresh = AddieProbe::new(self.nodes.len(), inputs, u.width(), u.mode(), self.window)?;
        self.nodes = fresh.nodes;
        Ok(())
    }
}

impl Probe for AddieProbe {
    #[inline]
    fn observe(&mut self, o: &Observation, _sig: &mut Signals) {
        if let Observation::MemRequest { node, t, flags, .. } = *o {
            let w = self.window;
            if let Some([a, b]) = self.nodes.get_mut(node as usize) {
                a.request(flags, t, w);
                b.request(flags, t, w);
            }
        }
    }
    fn interest(&self) -> u32 {
        kind::MEM_REQUEST
    }
    /// A register read: the addressed Addie's counter now (see the module's *Registers*).
    fn mmio(
        &mut self,
        _proc: u16,
        _t: engine::Tick,
        offset: u64,
        _size: u8,
        write: Option<u64>,
        _sig: &mut Signals,
    ) -> Option<u64> {
        let i = offset.checked_sub(REGISTER_OFFSET)? / REGISTER_BYTES;
        let unit = &self.nodes.get((i / 2) as usize)?[(i % 2) as usize].unit;
        if write.is_some() {
            return Some(0);
        }
        let v = unit.value() as u64;
        self.register_reads += 1;
        Some(v)
    }
    fn name(&self) -> &str {
        "addie"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each input takes its bit from the right kind of request only.
    #[test]
    fn inputs_select_their_bit_from_their_requests() {
        let w = flags::WRITE;
        assert_eq!(
            select(&AddieInput::WriteBufferHit, w | flags::WRITE_HIT),
            Some(true)
        );
        assert_eq!(select(&AddieInput::WriteBufferHit, w), Some(false));
        assert_eq!(select(&AddieInput::WriteBufferHit, flags::READ_MERGE), None);
        assert_eq!(
            select(&AddieInput::WriteBufferFull, w | flags::FULL),
            Some(true)
        );
        assert_eq!(
            select(&AddieInput::ReadMerge, flags::READ_MERGE),
            Some(true)
        );
        assert_eq!(select(&AddieInput::ReadMerge, w | flags::WRITE_HIT), None);
        assert_eq!(
            select(&AddieInput::ReadBufferHit, flags::READ_BUFFER_HIT),
            Some(true)
        );
        assert_eq!(select(&AddieInput::ReadBufferHit, 0), Some(false));
    }

    /// Readings every `window` samples with the exact window ratio; the exact totals count
    /// every sample.
    #[test]
    fn readings_pair_the_addie_with_the_exact_window() {
        let inputs = [AddieInput::WriteBufferHit, AddieInput::ReadBufferHit];
        let mut p = AddieProbe::new(1, &inputs, 8, RandomMode::Independent, 4).unwrap();
        let mut sig = Signals::default();
        for (i, f) in [
            flags::WRITE | flags::WRITE_HIT,
            flags::WRITE,
            0,
            flags::WRITE | flags::WRITE_HIT,
            flags::WRITE | flags::WRITE_HIT,
        ]
        .into_iter()
        .enumerate()
        {
            p.observe(
                &Observation::MemRequest {
                    node: 0,
                    t: i as u64,
                    addr: 0,
                    flags: f,
                },
                &mut sig,
            );
        }
        let [wb, rb] = &p.nodes[0];
        assert_eq!(wb.readings.len(), 1);
        assert_eq!(wb.readings[0].exact_window, 0.75);
        assert_eq!(wb.readings[0].t, 4);
        assert_eq!(wb.samples(), 4);
        assert_eq!(wb.exact(), Some(0.75));
        assert_eq!((rb.samples(), rb.exact()), (1, Some(0.0)));
        assert!(rb.readings.is_empty());
    }

    /// On a real run (radix on numachine with a controller), the Addies' exact references are
    /// the controller's ground truth: as many samples as requests of the input's kind, as many
    /// ones as the buffer counted events; and every reading stays within the counter's range.
    #[test]
    fn attached_addies_count_what_the_controller_counts() {
        use crate::plugin::Monitor;
        let mut plugin = super::super::plugin::Plugin::default();
        plugin
            .flag("addie-inputs", Some("wb-hit,read-merge"))
            .unwrap();
        plugin.flag("addie-window", Some("64")).unwrap();
        let mut preset = machine::config::Preset::builtin("numachine")
            .unwrap()
            .with_procs(8)
            .unwrap();
        plugin.adjust_preset(&mut preset).unwrap();
        assert!(preset.memctl_enabled().is_some());
        let mut m = machine::Machine::new(preset, machine::sim::Options::default()).unwrap();
        let w = workload::install(
            workload::find("radix", workload::Size::Test).unwrap(),
            &mut m,
            None,
        )
        .unwrap();
        plugin.attach(&mut m).unwrap();
        m.run(None).unwrap();
        assert!(w.verify().verified);
        let j = plugin.json(&m).unwrap();
        let ctl = m.state().system.controller_reports();
        assert_eq!(j["controllers"].as_array().unwrap().len(), ctl.len());
        for (n, c) in ctl.iter().enumerate() {
            let a = &j["controllers"][n]["addies"];
            assert_eq!(a[0]["samples"], c.buffer.writes, "node {n}");
            assert_eq!(a[1]["samples"], c.buffer.reads, "node {n}");
            let ratio = |x: u64, y: u64| x as f64 / y as f64;
            assert_eq!(a[0]["exact"], ratio(c.buffer.write_hits, c.buffer.writes));
            assert_eq!(a[1]["exact"], ratio(c.buffer.read_merges, c.buffer.reads));
            let readings = a[0]["readings"].as_array().unwrap();
            assert_eq!(readings.len() as u64, c.buffer.writes / 64);
            assert!(readings
                .iter()
                .all(|r| (0.0..=1.0).contains(&r["addie"].as_f64().unwrap())));
        }
    }
}
