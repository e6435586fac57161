//! The POWER2 Performance Monitor (seed 003; issue 15 items 3-7), one per processor.
//!
//! Five-counter groups in four units (FPU, FXU, ICU, SCU), a 4-bit group select per unit in the
//! Monitor Mode Control Register, two shared counters (cycles, instructions): 22 32-bit counters
//! (seed: "twenty-two 32-bit counters"; [`events`] says how 4 x 5 + 2 = 22). The MMCR's mode
//! bits and the thread's MSR[PR] (`Origin::supervisor`) and MSR[PM] (`Origin::marked`) decide
//! whether an event counts ([`regs`] has the layout). The FXU adds an Instruction Match Register
//! and the Software Programmable Event bit. Programs read and write everything by programmed I/O
//! to the processor card's monitor window (`regs::BASE`), each access costing the preset's
//! `cpu.uncached_cycles`.
//!
//! # State, trigger, handler
//! - **State** ([`Pmu`]): per processor the MMCR, IMR, SPE bit (and when it was set), overflow
//!   status, the 22 counters and their overflow counts, which counters select each signal
//!   (`hit`), and the latest pipeline status seen.
//! - **Trigger**: an observation of the processor yields signals (`events::Sig`) with counts;
//!   a signal counts if some counter selects it and `Mmcr::counts` passes for the thread that
//!   caused it (its supervisor state and mark) and the counters are not frozen.
//! - **Handler**: add the count to each counter selecting the signal (32-bit, wrapping); a
//!   carry out sets the counter's status bit, raises [`regs::VECTOR`] if PMIE and freezes if
//!   FOO. Program reads and writes of the registers ([`Probe::mmio`]).
//!
//! # Where the counts come from
//! Instructions and cycles: the pipeline-status stream (`Observation::Pipeline`: cycles per
//! pipeline state, instructions per class), as differences, attributed to the thread of the next
//! processor observation (exact while the supervisor state and mark do not change between two
//! observations; see docs/power2.md). L1 misses: `L2Access` (every L1 miss reaches the last
//! private level); TLB reloads: `TlbMiss`; transactions: `TxIssue`/`TxDone`.
//!
//! Beside it: [`config`] (TOML with symbolic names, examples in `docs/power2/`), [`report`]
//! (the typed section, every counter beside its exact count), [`plugin`] (the registry entry).

pub mod config;
pub mod counting;
pub mod events;
pub mod imr;
pub mod marking;
pub mod matrix;
pub mod plugin;
pub mod regs;
pub mod report;
pub mod restrict;
pub mod study;

pub use plugin::{ENTRY, NAME};

use engine::Tick;
use events::{Sig, COUNTERS};
use machine::cpu::op::Op;
use machine::cpu::Class;
use machine::probe::{kind, Cmd, Observation, Origin, Probe, Signals};
use machine::Preset;
use regs::{Imr, Mmcr};

/// The initial register values (the configuration, compiled).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Setup {
    pub mmcr: Mmcr,
    pub imr: Imr,
}

/// The thread's supervisor state (MSR[PR] = 0) and process mark (MSR[PM]) as an observation
/// names them.
#[inline]
pub fn msr_of(o: &Origin) -> (bool, bool) {
    (o.supervisor, o.marked)
}

/// The fine instruction classes an IMR value matches (the opcode of `op` is `op as u8`,
/// its index in `Op::ALL`).
pub fn imr_matches(i: Imr) -> Vec<&'static str> {
    Op::ALL
        .iter()
        .filter(|&&op| i.matches(op as u8))
        .map(|op| op.name())
        .collect()
}

/// One processor's monitor.
#[derive(Clone, Debug)]
pub struct Pmu {
    pub mmcr: Mmcr,
    pub imr: Imr,
    pub spe: bool,
    spe_since: Tick,
    pub status: u32,
    pub ctr: [u32; COUNTERS],
    /// Carries out of each counter (the report extends the counters to 64 bits with them, as
    /// AIX pmapi's accumulation does).
    pub wraps: [u64; COUNTERS],
    /// Per signal, the counters selecting it (bit i: counter i).
    hit: [u32; Sig::COUNT],
    /// The latest pipeline status and the part already counted.
    cur_cycles: [u64; 16],
    cur_instr: [u64; 6],
    done_cycles: [u64; 16],
    done_instr: [u64; 6],
    /// FXU and FPU instructions dispatched so far (the pipe of the next is the parity).
    fxu_seen: u64,
    fpu_seen: u64,
    /// The thread of the latest observation, and its (supervisor, marked) state.
    holder: Option<u32>,
    state: (bool, bool),
    pub interrupts: u64,
    /// The program wrote the MMCR or a counter (exact counts no longer apply to the counters).
    pub reprogrammed: bool,
}

impl Pmu {
    fn new(s: Setup) -> Pmu {
        let mut p = Pmu {
            mmcr: s.mmcr,
            imr: s.imr,
            spe: false,
            spe_since: 0,
            status: 0,
            ctr: [0; COUNTERS],
            wraps: [0; COUNTERS],
            hit: [0; Sig::COUNT],
            cur_cycles: [0; 16],
            cur_instr: [0; 6],
            done_cycles: [0; 16],
            done_instr: [0; 6],
            fxu_seen: 0,
            fpu_seen: 0,
            holder: None,
            state: (false, false),
            interrupts: 0,
            reprogrammed: false,
        };
        p.select();
        p
    }

    /// Recomputes which counters select each signal (after an MMCR write).
    fn select(&mut self) {
        self.hit = [0; Sig::COUNT];
        for (i, s) in self.mmcr.signals().iter().enumerate() {
            self.hit[s.0 as usize] |= 1 << i;
        }
    }

    /// The counters selecting `s`.
    pub fn selecting(&self, s: Sig) -> u32 {
        self.hit[s.0 as usize]
    }

    /// Counter i as a 64-bit count (its carries included).
    pub fn value(&self, i: usize) -> u64 {
        (self.wraps[i] << 32) | self.ctr[i] as u64
    }

    /// Adds `n` to every counter selecting `s`, if the current thread's state counts.
    #[inline]
    fn add(&mut self, s: Sig, n: u64, proc: u16, sig: &mut Signals) {
        let mut m = self.hit[s.0 as usize];
        if m == 0 || n == 0 || !self.mmcr.counts(self.state.0, self.state.1) {
            return;
        }
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            let v = self.ctr[i] as u64 + n;
            self.ctr[i] = v as u32;
            if v >> 32 != 0 {
                self.wraps[i] += v >> 32;
                self.status |= 1 << i;
                if self.mmcr.0 & regs::PMIE != 0 {
                    self.interrupts += 1;
                    sig.raise(proc, regs::VECTOR);
                }
                if self.mmcr.0 & regs::FOO != 0 {
                    self.mmcr.0 |= regs::FREEZE;
                }
            }
        }
    }

    /// Counts the pipeline status not yet counted, for the current thread.
    fn flush(&mut self, proc: u16, sig: &mut Signals) {
        let dc: [u64; 16] = std::array::from_fn(|k| self.cur_cycles[k] - self.done_cycles[k]);
        let di: [u64; 6] = std::array::from_fn(|k| self.cur_instr[k] - self.done_instr[k]);
        self.done_cycles = self.cur_cycles;
        self.done_instr = self.cur_instr;
        let cycles: u64 = dc.iter().sum();
        let instr: u64 = di.iter().sum();
        if cycles == 0 && instr == 0 {
            return;
        }
        self.add(Sig::CYCLES, cycles, proc, sig);
        let mut running = 0;
        for code in 1..16u8 {
            let n = dc[code as usize];
            if n > 0 {
                self.add(Sig::ps(code), n, proc, sig);
                if code <= 6 {
                    running += n;
                }
            }
        }
        self.add(Sig::IDLE_CYCLES, cycles - running, proc, sig);
        let dmiss = events::DMISS_STATES.iter().map(|&k| dc[k as usize]).sum();
        self.add(Sig::DMISS_CYCLES, dmiss, proc, sig);
        self.add(Sig::INSTR, instr, proc, sig);
        for (c, &n) in di.iter().enumerate() {
            if n > 0 {
                self.add(Sig(2 + c as u16), n, proc, sig);
            }
        }
        let (ld, st) = (di[Class::Load as usize], di[Class::Store as usize]);
        let fxu = di[Class::Integer as usize] + ld + st;
        let fp = di[Class::Fp as usize];
        self.add(Sig::FXU_INSTR, fxu, proc, sig);
        self.add(Sig::MEM_INSTR, ld + st, proc, sig);
        let br = di[Class::BranchTaken as usize] + di[Class::BranchNotTaken as usize];
        self.add(Sig::BRANCHES, br, proc, sig);
        // Dispatch alternates pipes: instruction k of a unit goes to pipe k mod 2.
        let even = |seen: u64, n: u64| (seen + n).div_ceil(2) - seen.div_ceil(2);
        let f0 = even(self.fxu_seen, fxu);
        self.add(Sig::FXU0, f0, proc, sig);
        self.add(Sig::FXU1, fxu - f0, proc, sig);
        self.fxu_seen += fxu;
        let p0 = even(self.fpu_seen, fp);
        self.add(Sig::FPU0, p0, proc, sig);
        self.add(Sig::FPU1, fp - p0, proc, sig);
        self.fpu_seen += fp;
    }

    /// Counts the cycles the SPE bit has been set since it was set or last counted.
    fn accrue_spe(&mut self, t: Tick, period: Tick, proc: u16, sig: &mut Signals) {
        if self.spe {
            let n = t / period - self.spe_since / period;
            self.add(Sig::SPE_CYCLES, n, proc, sig);
        }
        self.spe_since = t;
    }
}

/// The monitor of every processor.
pub struct Power2Monitor {
    pub pmus: Vec<Pmu>,
    pub cpu_period: Tick,
    pub setup: Setup,
    /// Per software thread, its (supervisor, marked) state when last observed (what a
    /// context switch restores).
    threads: Vec<Option<(bool, bool)>>,
    /// Restricted to one process by counter virtualization (`virtualize`): the 22 counters'
    /// 64-bit values split by software thread at every context switch.
    pub virt: Option<crate::virt::Virtualizer>,
}

impl Power2Monitor {
    pub fn new(preset: &Preset, setup: Setup) -> Result<Power2Monitor, String> {
        let clocks = preset.clocks_built().map_err(|e| e.0)?;
        let cpu = clocks.get("cpu").ok_or("no cpu clock")?.period;
        Ok(Power2Monitor {
            pmus: vec![Pmu::new(setup); preset.procs],
            cpu_period: cpu,
            setup,
            threads: Vec::new(),
            virt: None,
        })
    }

    /// Restricts the monitor to one process by counter virtualization as well (the way
    /// `perf_event_open` counts one task): `v` has `COUNTERS` values per core, and the
    /// operating system's switch path reads that many registers (`[os] virtual_counters`,
    /// set by whoever builds the machine).
    pub fn virtualize(&mut self, v: crate::virt::Virtualizer) {
        self.virt = Some(v);
    }

    /// The 22 counters of processor `p` as 64-bit counts (what the virtualizer splits).
    pub fn values(&self, p: usize) -> [u64; COUNTERS] {
        std::array::from_fn(|i| self.pmus[p].value(i))
    }

    /// A processor observation's thread becomes the current one (after counting the pipeline
    /// status up to it for the previous state... see the module doc: the status reported just
    /// before an observation is the observing thread's).
    #[inline]
    fn enter(&mut self, proc: u16, who: &Origin, sig: &mut Signals) {
        let p = &mut self.pmus[proc as usize];
        p.state = msr_of(who);
        p.holder = Some(who.thread);
        p.flush(proc, sig);
        let t = who.thread as usize;
        if self.threads.len() <= t {
            self.threads.resize(t + 1, None);
        }
        self.threads[t] = Some(p.state);
    }

    /// A context switch on `core`: the status up to it (reported just before) is the
    /// outgoing thread's; then the incoming thread's state, as last seen, holds.
    fn switch(&mut self, core: u16, from: Option<u32>, to: Option<u32>, sig: &mut Signals) {
        let known =
            |t: Option<u32>| t.and_then(|t| self.threads.get(t as usize).copied().flatten());
        let (out, inc) = (known(from), known(to));
        let p = &mut self.pmus[core as usize];
        if p.holder != from {
            if let Some(s) = out {
                p.state = s;
            }
        }
        p.flush(core, sig);
        p.holder = to;
        p.state = inc.unwrap_or((false, false));
        if self.virt.is_some() {
            let now = self.values(core as usize);
            if let Some(v) = self.virt.as_mut() {
                v.switch(core as usize, to, &now);
            }
        }
    }
}

impl Probe for Power2Monitor {
    fn observe(&mut self, o: &Observation, sig: &mut Signals) {
        match *o {
            Observation::Pipeline {
                proc,
                cycles,
                instr,
                ..
            } => {
                let p = &mut self.pmus[proc as usize];
                p.cur_cycles = cycles;
                p.cur_instr = instr;
            }
            Observation::L2Access {
                proc,
                write,
                ifetch,
                hit,
                who,
                ..
            } => {
                self.enter(proc, &who, sig);
                let p = &mut self.pmus[proc as usize];
                if ifetch {
                    p.add(Sig::L1I_MISS, 1, proc, sig);
                } else {
                    p.add(Sig::L1D_MISS, 1, proc, sig);
                    let s = if write {
                        Sig::L1D_MISS_WRITE
                    } else {
                        Sig::L1D_MISS_READ
                    };
                    p.add(s, 1, proc, sig);
                }
                if !hit {
                    p.add(Sig::MEM_TX, 1, proc, sig);
                }
            }
            Observation::TlbMiss {
                proc, ifetch, who, ..
            } => {
                self.enter(proc, &who, sig);
                let s = if ifetch {
                    Sig::ITLB_MISS
                } else {
                    Sig::DTLB_MISS
                };
                self.pmus[proc as usize].add(s, 1, proc, sig);
            }
            Observation::TxIssue { proc, cmd, who, .. } => {
                let p = &mut self.pmus[proc as usize];
                let s = match cmd {
                    Cmd::Read => Sig::TX_READ,
                    Cmd::ReadEx => Sig::TX_READ_EX,
                    Cmd::Upgrade => Sig::TX_UPGRADE,
                    Cmd::Writeback => Sig::TX_WRITEBACK,
                    _ => return,
                };
                let keep = p.state;
                p.state = msr_of(&who);
                p.add(s, 1, proc, sig);
                p.state = keep;
            }
            Observation::Switch { core, from, to, .. } => self.switch(core, from, to, sig),
            // The thread changes its MSR (an operating-system path's entry or return, the
            // marking system call): its work so far counts under the state it had.
            Observation::Mode { proc, who, to, .. } => {
                self.enter(proc, &who, sig);
                let s = msr_of(&to);
                self.pmus[proc as usize].state = s;
                if let Some(th) = self.threads.get_mut(to.thread as usize) {
                    *th = Some(s);
                }
            }
            // The IMR compares each completing instruction's opcode (its fine class) with
            // the opcode under the mask. The machine reports what a thread retired, by fine
            // class, each time the thread returns to the event loop (so before any of its
            // programmed I/O reaches the monitor), with the thread's MSR state.
            Observation::Retire {
                proc, op, n, who, ..
            } => {
                let p = &mut self.pmus[proc as usize];
                if p.imr.matches(op as u8) {
                    let keep = p.state;
                    p.state = msr_of(&who);
                    p.add(Sig::IMR_MATCH, n, proc, sig);
                    p.state = keep;
                }
            }
            Observation::TxDone {
                proc,
                t,
                cmd,
                issued,
                who,
                ..
            } => {
                if !matches!(cmd, Cmd::Read | Cmd::ReadEx | Cmd::Upgrade) {
                    return;
                }
                let n = (t - issued) / self.cpu_period;
                let p = &mut self.pmus[proc as usize];
                let keep = p.state;
                p.state = msr_of(&who);
                p.add(Sig::MISS_CYCLES, n, proc, sig);
                p.state = keep;
            }
            _ => {}
        }
    }

    fn mmio(
        &mut self,
        proc: u16,
        t: Tick,
        offset: u64,
        _size: u8,
        write: Option<u64>,
        sig: &mut Signals,
    ) -> Option<u64> {
        let off = offset
            .checked_sub(regs::BASE)
            .filter(|o| *o < regs::REGION)?;
        let period = self.cpu_period;
        let p = &mut self.pmus[proc as usize];
        p.flush(proc, sig);
        p.accrue_spe(t, period, proc, sig);
        let w = write.map(|v| v as u32);
        let r = match off {
            regs::MMCR => {
                if let Some(v) = w {
                    p.mmcr = Mmcr(v);
                    p.select();
                    p.reprogrammed = true;
                }
                p.mmcr.0
            }
            regs::IMR => {
                if let Some(v) = w {
                    p.imr = Imr::from_word(v);
                }
                p.imr.word()
            }
            regs::SPE => {
                if let Some(v) = w {
                    p.spe = v & 1 != 0;
                }
                p.spe as u32
            }
            regs::STATUS => {
                let s = p.status;
                if write.is_none() {
                    p.status = 0;
                }
                s
            }
            o if o >= regs::COUNTER0 && o < regs::COUNTER0 + 4 * COUNTERS as u64 => {
                let i = ((o - regs::COUNTER0) / 4) as usize;
                if let Some(v) = w {
                    p.ctr[i] = v;
                    p.wraps[i] = 0;
                    p.reprogrammed = true;
                }
                p.ctr[i]
            }
            _ => 0,
        };
        Some(r as u64)
    }

    fn finish(&mut self, t: Tick) {
        let mut sig = Signals::default();
        let period = self.cpu_period;
        for (i, p) in self.pmus.iter_mut().enumerate() {
            p.flush(i as u16, &mut sig);
            p.accrue_spe(t, period, i as u16, &mut sig);
        }
        if self.virt.is_some() {
            for i in 0..self.pmus.len() {
                let now = self.values(i);
                if let Some(v) = self.virt.as_mut() {
                    v.finish(i, &now);
                }
            }
        }
    }

    fn wants_pipeline(&self) -> bool {
        true
    }
    fn interest(&self) -> u32 {
        kind::L2_ACCESS
            | kind::TLB_MISS
            | kind::TX_ISSUE
            | kind::TX_DONE
            | kind::SWITCH
            | kind::RETIRE
            | kind::MODE
    }
    fn pipeline_before(&self) -> u32 {
        kind::L2_ACCESS | kind::TLB_MISS | kind::SWITCH | kind::MODE
    }
    fn name(&self) -> &str {
        NAME
    }
}

/// Programmed I/O from a simulated program: the byte offset of a register in the card's
/// monitor window (`Ctx::monitor_read`/`monitor_write`).
pub fn offset(reg: u64) -> u64 {
    regs::BASE + reg
}

/// Sets or clears the Software Programmable Event bit from a program (a PIO write).
pub fn set_spe(ctx: &mut machine::Ctx, on: bool) {
    ctx.monitor_write(offset(regs::SPE), 4, on as u64);
}

/// Reads counter `i` (0..22) from a program.
pub fn read_counter(ctx: &mut machine::Ctx, i: usize) -> u32 {
    ctx.monitor_read(offset(regs::COUNTER0 + 4 * i as u64), 4) as u32
}

/// Writes the MMCR from a program.
pub fn write_mmcr(ctx: &mut machine::Ctx, v: u32) {
    ctx.monitor_write(offset(regs::MMCR), 4, v as u64);
}
