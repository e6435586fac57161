//! The UPC as one probe: every UPC_P and UPC_L2 of the chip, the chain and UPC_C.
//!
//! - *State*: per unit its local counters ([`unit::Local`]) and own run bit; UPC_C's SRAM,
//!   control registers and the chain's start/stop signal as each unit acts on it.
//! - *Trigger*: an observation routed to the counters that select its event (a table per unit
//!   from event to counters), of a hardware thread in the counter's thread mask, while the
//!   counter runs (chain start/stop, or its own run bit with sync override) and is enabled and
//!   not frozen.
//! - *Handler*: the counter adds the events ([`unit::add`]); before that, every transfer the
//!   chain made to it since its last event is done ([`Upc::catch_up`]), so a count belongs to
//!   the frame its time falls in however far ahead a processor ran. The wake-ups at each
//!   unit's packet ([`Upc::wake`]) do the transfers of counters that saw no event.

use super::chain::Chain;
use super::events::{self, a2, Group};
use super::mode1;
use super::regs::{self, CControl, CounterCfg};
use super::unit::{self, Gate, Local, Outcome};
use engine::Tick;
use machine::cpu::op::Op;
use machine::probe::{kind, Action, Observation, Probe, ProbeClock, Signals};
use machine::retire_sink::{self, RetireSink};
use serde::Serialize;

/// UPC_P counters per core, UPC_L2 counters per slice.
pub const P_COUNTERS: usize = 24;
pub const L2_COUNTERS: usize = 16;
/// SRAM counters (256 rows of four).
pub const SRAM: usize = 1024;
/// First SRAM counter of the slices' groups (after 17 cores' two groups of 16 each).
pub const SRAM_L2: usize = 32 * 17;
/// Most cores and slices the Mode 0 mapping holds.
pub const MAX_CORES: usize = 17;
pub const MAX_SLICES: usize = 16;

/// One local unit on the chain.
#[derive(Clone, Debug)]
pub struct Unit {
    /// A UPC_L2 (else a UPC_P), of slice or core `index`, at chain position `pos`.
    pub slice: bool,
    pub index: usize,
    pub pos: usize,
    pub counters: Vec<Local>,
    /// UPC_C's Mode 1 counters (`mode1.rs`), counting the events of the owner (`slice`,
    /// `index`); not on the chain.
    pub central: bool,
    /// Per event key, the counters that select it (bit i: counter i).
    route: Vec<u32>,
    /// The same for the 96 Mode 1 counters of the central unit (empty elsewhere).
    wide: Vec<u128>,
    /// The observation kinds its enabled counters count (`Probe::interest`), kept with `route`.
    kinds: u32,
    /// Per hardware context and `Op`, the enabled counters that count it (an opcode group or
    /// an A2 commit event whose `Local::ops` has it, the context in the thread mask of a
    /// per-thread counter), kept with `route`: what `Upc::fold` adds a summed op to.
    by_op: Box<[[u32; Op::COUNT]; retire_sink::CONTEXTS]>,
    /// The enabled retirement-fed counters with interrupts enabled (bit i: counter i), kept
    /// with `route`: those whose crossing bounds how far the core's threads run
    /// (`Upc::publish_need`).
    irq_op: u32,
    /// The `Op`s some enabled A2 commit-event counter counts (bit `op`), kept with `route`:
    /// 0 (no work on the retirement path) unless a counter selects one of them.
    a2_ops: u64,
    /// Some enabled counter has its interrupt enabled, kept with `route`.
    irq: bool,
    /// The enabled counters of a level event (bit i: counter i), kept with `route`: what a
    /// wake-up still catches up when no counter can interrupt (`Upc::lazy_drain`).
    levels_on: u128,
    pub int_status: u32,
    /// The flop weights (UPC_P `P_FP_WEIGHTS`) and, from them, the flops each retired `Op`
    /// counts in a flop-counting counter (`events::flops`; 0 outside FPGRP1).
    fp: regs::FpWeights,
    flops: [u8; Op::COUNT],
    /// The heaviest op's flops in `flops` (at least 1): the most events one retired
    /// instruction adds to a flop-counting counter, for the horizons' bounds.
    most_flops: u64,
    /// The enabled flop-counting counters (`PEVT_INST_QFPU_FPGRP1`, bit i: counter i), kept
    /// with `route`: what the retirement path weights by `flops`.
    weighted: u32,
}

const KEYS: usize = 3 * 64;
/// The route key of `PEVT_INST_QFPU_FPGRP1`, the flop-counting opcode event.
const FLOPS_KEY: usize = Group::Opcode as usize * 64 + events::op::FPGRP1 as usize;

/// Per hardware context, the events and spin iterations before an armed counter can cross
/// (`machine::retire_sink::RetireBatch::need`, `spin`; 0: none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Need {
    need: [u64; retire_sink::CONTEXTS],
    spin: [u64; retire_sink::CONTEXTS],
}

/// [`events::flops_table`] under the UPC_P's initial weights (`regs::FpWeights::default`).
fn default_flops() -> [u8; Op::COUNT] {
    let w = regs::FpWeights::default();
    events::flops_table(w.div, w.sqrt)
}

/// The heaviest op's weight in a flops table, at least 1.
fn heaviest(flops: &[u8; Op::COUNT]) -> u64 {
    flops.iter().copied().max().unwrap_or(1).max(1) as u64
}

fn key(g: Group, sub: u8) -> usize {
    g as usize * 64 + sub as usize
}

/// The observation kind that drives event `key` of a UPC_P (or any event of a UPC_L2).
fn kind_of(slice: bool, key: usize) -> u32 {
    if slice {
        return kind::L2_SLICE;
    }
    let (g, sub) = (key / 64, (key % 64) as u8);
    if g == Group::L1p as usize {
        kind::L1P
    } else if g == Group::Opcode as usize {
        kind::RETIRE
    } else if sub == a2::MISS_PENDING {
        kind::TX_ISSUE | kind::TX_DONE
    } else if sub == a2::NACK {
        kind::TX_NACK
    } else if sub == a2::BR_MISPRED {
        kind::CORE_EVENT
    } else if sub >= a2::RETIRED {
        kind::RETIRE
    } else if sub < a2::CYCLES {
        kind::CORE_EVENT
    } else {
        0
    }
}

impl Unit {
    /// Rebuilt at every counter's configuration (664 times at the attach of a full
    /// configuration on `bgq`): reuses its tables and finds the kinds from the counters.
    fn rebuild_routes(&mut self) {
        self.route.clear();
        self.route.resize(KEYS, 0);
        self.wide.clear();
        if self.central {
            self.wide.resize(KEYS, 0);
        }
        self.kinds = 0;
        self.irq = false;
        self.levels_on = 0;
        for (i, c) in self.counters.iter().enumerate() {
            if !c.cfg.enable {
                continue;
            }
            self.irq |= c.cfg.int_enable;
            if c.level {
                self.levels_on |= 1 << i;
            }
            let k = if self.slice {
                c.cfg.event as usize
            } else {
                c.cfg.group as usize * 64 + c.cfg.event as usize
            };
            if k < KEYS {
                self.kinds |= kind_of(self.slice, k);
                if self.central {
                    self.wide[k] |= 1 << i;
                } else {
                    self.route[k] |= 1 << i;
                }
            }
        }
        *self.by_op = [[0; Op::COUNT]; retire_sink::CONTEXTS];
        self.irq_op = 0;
        self.a2_ops = 0;
        self.weighted = 0;
        if !self.slice && !self.central {
            for (i, c) in self.counters.iter().enumerate() {
                if !c.cfg.enable || c.ops == 0 {
                    continue;
                }
                if c.cfg.int_enable {
                    self.irq_op |= 1 << i;
                }
                if c.cfg.group == Group::A2 as u8 {
                    self.a2_ops |= c.ops;
                }
                if c.cfg.group == Group::Opcode as u8 && c.cfg.event == events::op::FPGRP1 {
                    self.weighted |= 1 << i;
                }
                let mut ops = c.ops;
                while ops != 0 {
                    let o = ops.trailing_zeros() as usize;
                    ops &= ops - 1;
                    for ctx in 0..retire_sink::CONTEXTS {
                        if !c.per_thread || c.cfg.threads >> ctx & 1 != 0 {
                            self.by_op[ctx][o] |= 1 << i;
                        }
                    }
                }
            }
        }
    }
    /// Does a counter of this unit select event `key`?
    fn selects(&self, key: usize) -> bool {
        self.route[key] != 0 || self.wide.get(key).is_some_and(|&m| m != 0)
    }
}

/// One overflow interrupt: which counter, when its 64-bit count wrapped, when it was raised.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Irq {
    pub pos: usize,
    pub counter: usize,
    pub crossed: Option<Tick>,
    pub raised: Tick,
    pub core: u16,
    pub context: u8,
}

/// A start or stop UPC_C sent: when written, and when every unit acted on it.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Command {
    pub written: Tick,
    pub effective: Tick,
    pub run: bool,
}

/// UPC_C.
#[derive(Clone, Debug)]
pub struct Central {
    pub sram: Vec<u64>,
    /// Each SRAM counter's value when software (or the configuration) last wrote it.
    pub base: Vec<u64>,
    pub control: CControl,
    /// The chain's start/stop as the units act on it.
    pub run: Gate,
    pub accum_mask: u16,
    pub accums: u64,
    /// Where a UPC_L2 counter's interrupt goes (core, hardware thread) when no hardware
    /// thread enabled UPC_C's interrupts (`cint`).
    pub l2_target: (u16, u8),
    /// Per core, the hardware threads that take UPC_C's interrupts (UPC_P register
    /// `P_CINT_ENABLE`, after the driver's `UPC_P__INT_STATUS__UPC_C_THREAD_INT_bit`, which
    /// BGPM's L2 unit sets for each thread whose set has an overflow: "the L2 unit and I/O
    /// unit overflows are broadcast to the all cores and hardware threads",
    /// `bgpm/docs/DocGlossary.h`). A UPC_L2 interrupt goes to each of them.
    pub cint: Vec<u8>,
    pub commands: Vec<Command>,
}

/// The whole UPC of a chip.
#[derive(Debug)]
pub struct Upc {
    pub chain: Chain,
    /// Ticks per processor cycle.
    pub cp: Tick,
    pub p_width: u32,
    pub l2_width: u32,
    /// Units in chain order: the cores' UPC_Ps, then the slices' UPC_L2s.
    pub units: Vec<Unit>,
    pub c: Central,
    /// Per core, a read, read-exclusive or upgrade outstanding (the miss-pending level).
    pub pending: Vec<bool>,
    pub irqs: Vec<Irq>,
    /// Interrupts of level counters found while accounting, raised when the probe returns.
    pending_irqs: Vec<(usize, usize, Tick)>,
    /// Wake-ups: (offset in the frame, unit) sorted, and the next one's index.
    plan: Vec<(u64, usize)>,
    pub wakes: u64,
    /// Per core, when its last register access reached the UPC: the thread that made it was
    /// blocked until then, so the span of a `Retire` reported after it starts there.
    last_mmio: Vec<Tick>,
    pub mmio_reads: u64,
    pub mmio_writes: u64,
    pub end: Option<Tick>,
    /// Per core, retirements not yet added to its opcode counters, summed by the machine
    /// (`machine::retire_sink`) or by `observe` (see [`Upc::horizon`]).
    sink: retire_sink::Shared,
    /// Per core, what `publish_need` last told the machine (`RetireBatch::need`, `spin`).
    published: Vec<Need>,
    /// Per core, its horizon as last computed (`None`: to be recomputed at the next `Retire`);
    /// the sink's copy is 0 while it is `None`.
    hz: Vec<Option<Tick>>,
    /// Retire spans `observe` summed into the sink itself (the machine counts its own in the
    /// sink), and spans counted at once (split or armed).
    pub retire_deferred: u64,
    pub retire_direct: u64,
    /// Mode 1: the chain position of the unit that owns the chain; its events also go to the
    /// central unit (`units[chain.units()]`).
    pub m1_owner: Option<usize>,
    /// Enabled level counters with interrupts enabled (unit, counter): the wake-ups look for
    /// their crossings.
    levels: Vec<(usize, usize)>,
    /// Observations `pmusim stat` needs beside the present programming's: every group's it
    /// rotates through (`counting::Plan`), since the machine asks once.
    pub stat_interest: u32,
    /// The kinds every unit's enabled counters count (`Unit::kinds` of each), kept with
    /// them: the machine asks for `Probe::interest` after every wake-up.
    kinds: u32,
    /// Some enabled counter has its interrupt enabled (`Unit::irq` of any unit), kept with
    /// them. While none has (and in Mode 0), a wake-up handles every unit packet of the frame
    /// so far (`Upc::lazy_drain`: most transfers are left to the counters' own catch-up),
    /// and the chain wakes the machine once per frame instead of once per packet:
    /// the transfers are dated at their own x2 cycles (`Upc::catch_up`), every event catches
    /// its counter up first, so only an interrupt's timing (a transfer that arms a counter,
    /// `Upc::publish_need`) needs the wake-up on the packet's own cycle. On LU (`bgq`) the
    /// 18,169 wake-ups cost about 480 instructions each besides the transfers
    /// (BENCHMARKS.md, "The Blue Gene/Q UPC").
    irq_any: bool,
}

impl Upc {
    /// A UPC for `cores` cores and `slices` slices, every counter disabled, stopped.
    pub fn new(chain: Chain, cp: Tick, p_width: u32, l2_width: u32) -> Upc {
        let mut units = Vec::new();
        for pos in 0..chain.units() {
            let slice = pos >= chain.cores;
            let index = if slice { pos - chain.cores } else { pos };
            let n = if slice { L2_COUNTERS } else { P_COUNTERS };
            let counters = (0..n)
                .map(|i| Local {
                    sram: sram_index(slice, index, i, false),
                    next_xfer: chain.next_xfer(pos, i, 0),
                    ..Default::default()
                })
                .collect();
            let mut u = Unit {
                slice,
                index,
                pos,
                counters,
                central: false,
                route: Vec::new(),
                wide: Vec::new(),
                kinds: 0,
                by_op: Box::new([[0; Op::COUNT]; retire_sink::CONTEXTS]),
                irq_op: 0,
                a2_ops: 0,
                irq: false,
                levels_on: 0,
                int_status: 0,
                fp: regs::FpWeights::default(),
                flops: default_flops(),
                most_flops: heaviest(&default_flops()),
                weighted: 0,
            };
            u.rebuild_routes();
            units.push(u);
        }
        let mut plan: Vec<(u64, usize)> = (0..chain.units())
            .map(|pos| {
                let last = if pos < chain.cores {
                    P_COUNTERS
                } else {
                    L2_COUNTERS
                } - 1;
                (chain.offset(pos, last) % chain.period, pos)
            })
            .collect();
        plan.sort();
        Upc {
            sink: RetireSink::new(chain.cores),
            hz: vec![None; chain.cores],
            published: vec![Need::default(); chain.cores],
            pending: vec![false; chain.cores],
            last_mmio: vec![0; chain.cores],
            c: Central {
                sram: vec![0; SRAM],
                base: vec![0; SRAM],
                control: CControl::default(),
                run: Gate::default(),
                accum_mask: 0xffff,
                accums: 0,
                l2_target: (0, 0),
                cint: vec![0; chain.cores],
                commands: Vec::new(),
            },
            chain,
            cp,
            p_width,
            l2_width,
            units,
            irqs: Vec::new(),
            pending_irqs: Vec::new(),
            plan,
            wakes: 0,
            mmio_reads: 0,
            mmio_writes: 0,
            end: None,
            retire_deferred: 0,
            retire_direct: 0,
            m1_owner: None,
            levels: Vec::new(),
            stat_interest: 0,
            kinds: 0,
            irq_any: false,
        }
    }

    /// Recomputes [`Upc::kinds`] and [`Upc::irq_any`] after a unit's tables changed.
    fn refresh_kinds(&mut self) {
        self.kinds = self.units.iter().fold(0, |k, u| k | u.kinds);
        self.irq_any = self.units.iter().any(|u| u.irq);
    }

    fn width(&self, pos: usize) -> u32 {
        if pos >= self.chain.units() {
            mode1::WIDTH
        } else if pos < self.chain.cores {
            self.p_width
        } else {
            self.l2_width
        }
    }
    fn period_ticks(&self) -> Tick {
        self.chain.period * self.chain.x2
    }

    /// Sets counter `i` of the unit at `pos` (its counts so far stay).
    pub fn configure(&mut self, pos: usize, i: usize, cfg: CounterCfg, t: Tick) {
        self.set_counter(pos, i, cfg, t);
        self.counters_changed(pos);
    }

    /// Sets the unit at `pos`'s first `list.len()` counters at `t`, as [`Upc::configure`] of
    /// each would, its tables rebuilt once (the attach: 664 counters on `bgq`, where one
    /// rebuild per counter cost about 4,800 instructions each, BENCHMARKS.md).
    pub fn configure_unit(&mut self, pos: usize, list: &[CounterCfg], t: Tick) {
        for (i, c) in list.iter().enumerate() {
            self.set_counter(pos, i, *c, t);
        }
        self.counters_changed(pos);
    }

    /// [`Upc::configure`] without the unit's tables: [`Upc::counters_changed`] follows.
    fn set_counter(&mut self, pos: usize, i: usize, cfg: CounterCfg, t: Tick) {
        self.settle(pos, i, t);
        let u = &mut self.units[pos];
        let c = &mut u.counters[i];
        c.cfg = cfg;
        let e = if u.slice {
            None
        } else {
            Group::from_code(cfg.group as u64).and_then(|g| events::p_event(g, cfg.event))
        };
        c.level = e.is_some_and(|e| e.level);
        c.per_thread = e.is_some_and(|e| e.per_thread);
        c.ops = e.map_or(0, |e| events::op_mask(e.group, e.sub));
        c.acct = t;
        let watch = c.level && cfg.enable && cfg.int_enable && !cfg.edge;
        self.levels.retain(|&x| x != (pos, i));
        if watch {
            self.levels.push((pos, i));
        }
    }

    /// The unit at `pos`'s tables, published bound and miss-pending level after its
    /// counters' configuration changed.
    fn counters_changed(&mut self, pos: usize) {
        self.units[pos].rebuild_routes();
        self.refresh_kinds();
        self.publish_need(pos);
        let u = &mut self.units[pos];
        // With no counter on miss pending the probe stops asking for the transactions that
        // drive it (`interest`), so the level is unknown until the next one: assume none
        // outstanding (a counter enabled during a miss starts counting at the next one).
        if !u.slice {
            let k = u.index;
            let mp = key(Group::A2, a2::MISS_PENDING);
            let central = self.central_of(k);
            if !self.units[k].selects(mp) && !central.is_some_and(|c| self.units[c].selects(mp)) {
                self.pending[k] = false;
            }
        }
    }

    /// The central unit's position if the unit at `pos` owns the chain (Mode 1).
    #[inline]
    fn central_of(&self, pos: usize) -> Option<usize> {
        (self.m1_owner == Some(pos)).then(|| self.chain.units())
    }

    /// UPC_C's mode (0 distributed, 1 detailed) and Mode 1 owner (a chain position), set at
    /// `t`: Mode 1 adds the central unit of 96 Mode 1 counters, counting the owner's raw
    /// events (`mode1.rs`) from `t` on; leaving it hands their counts to SRAM.
    pub fn set_mode(&mut self, mode: u8, owner: usize, t: Tick) {
        self.settle_all(t);
        let units = self.chain.units();
        if self.units.len() > units {
            let w = mode1::WIDTH;
            let u = self.units.pop().expect("the central unit");
            for mut c in u.counters {
                let n = c.sram;
                unit::transfer(&mut c, &mut self.c.sram[n], t, w, 0, true);
            }
            self.plan.retain(|&(_, p)| p != units);
            self.levels.retain(|&(p, _)| p != units);
            self.refresh_kinds();
        }
        self.m1_owner = None;
        self.c.control.mode = mode;
        self.c.control.owner = owner as u8;
        if mode != 1 || owner >= units {
            return;
        }
        let slice = owner >= self.chain.cores;
        let table = if slice {
            mode1::slice_table()
        } else {
            mode1::core_table()
        };
        let x2 = self.chain.x2;
        let p = self.period_ticks();
        let counters = (0..mode1::COUNTERS)
            .map(|m| {
                let off = mode1::offset(m, self.chain.period) * x2;
                Local {
                    sram: mode1::SRAM_M1 + m,
                    next_xfer: if t <= off {
                        off
                    } else {
                        off + (t - off).div_ceil(p) * p
                    },
                    acct: t,
                    ..Default::default()
                }
            })
            .collect();
        let mut u = Unit {
            slice,
            index: if slice {
                owner - self.chain.cores
            } else {
                owner
            },
            pos: units,
            counters,
            central: true,
            route: Vec::new(),
            wide: Vec::new(),
            kinds: 0,
            by_op: Box::new([[0; Op::COUNT]; retire_sink::CONTEXTS]),
            irq_op: 0,
            a2_ops: 0,
            irq: false,
            levels_on: 0,
            int_status: 0,
            // Unused: Mode 1 weights the owner's retirements by the owner's UPC_P weights.
            fp: regs::FpWeights::default(),
            flops: [0; Op::COUNT],
            most_flops: 1,
            weighted: 0,
        };
        u.rebuild_routes();
        self.units.push(u);
        self.m1_owner = Some(owner);
        for (m, cfg) in table.into_iter().enumerate() {
            self.configure(units, m, cfg, t);
        }
        let last = mode1::offset(mode1::RAW - 1, self.chain.period);
        self.plan.push((last, units));
        self.plan.sort();
    }

    /// Writes a local counter's register (the driver's threshold preload: low bits here,
    /// upper bits in SRAM) and its armed bit. The written bits reach the SRAM counter with the
    /// next transfer, so they are software's, not events: they join the SRAM counter's base,
    /// and `counted` gives the events alone (a counter preloaded to 2^64 - threshold counts
    /// from 0, as BGPM reads it).
    pub fn write_local(&mut self, pos: usize, i: usize, value: u64, armed: bool, t: Tick) {
        self.settle(pos, i, t);
        let w = self.width(pos);
        let c = &mut self.units[pos].counters[i];
        c.value = value & ((1 << w) - 1);
        self.c.base[c.sram] = self.c.base[c.sram].wrapping_add(c.value);
        c.armed = armed;
        c.big_ovf = false;
        c.frozen = false;
        c.crossed = None;
        self.publish_need(pos);
    }

    /// Writes SRAM counter `n`.
    pub fn write_sram(&mut self, n: usize, v: u64, t: Tick) {
        self.settle_sram(n, t);
        self.c.sram[n] = v;
        self.c.base[n] = v;
        self.disarm_if_far(n);
    }

    /// UPC_C's near-overflow check on SRAM counter `n` after software changed it: if it is
    /// no longer near overflow, the local counters that feed it are disarmed (the packet's
    /// bit for them is off), so a re-armed threshold (BGPM's L2 overflow) does not interrupt
    /// on a count the old one armed. A counter armed and fed by a counter near overflow
    /// stays armed, as before.
    fn disarm_if_far(&mut self, n: usize) {
        let sram = self.c.sram[n];
        for pos in 0..self.units.len() {
            let half = 1u64 << (self.width(pos) - 1);
            if sram.checked_add(half).is_none() {
                continue;
            }
            for c in self.units[pos].counters.iter_mut().filter(|c| c.sram == n) {
                c.armed = false;
                c.arm_at = None;
            }
        }
    }

    /// UPC_C's start or stop command written at `t`: every unit acts on it `units` x2 cycles
    /// after the next x2 cycle begins.
    pub fn command(&mut self, t: Tick, run: bool) {
        let x2 = self.chain.x2;
        let eff = (t.div_ceil(x2) + self.chain.start_latency()) * x2;
        self.settle_all(t);
        if run && self.c.control.reset_on_enable {
            for u in &mut self.units {
                for c in &mut u.counters {
                    if !c.cfg.sync_override {
                        c.value = 0;
                        c.big_ovf = false;
                    }
                }
            }
        }
        self.c.run.set(eff, run);
        self.c.control.run = run;
        self.c.commands.push(Command {
            written: t,
            effective: eff,
            run,
        });
        self.publish_all();
    }

    /// Sets the L2 combine bit: every slice's counter i then accumulates into one SRAM counter.
    pub fn set_l2_combine(&mut self, on: bool, t: Tick) {
        self.settle_all(t);
        self.c.control.l2_combine = on;
        for u in self.units.iter_mut().filter(|u| u.slice && !u.central) {
            for (i, c) in u.counters.iter_mut().enumerate() {
                c.sram = sram_index(true, u.index, i, on);
            }
        }
    }

    /// Does every transfer of counter `i` of unit `pos` due at or before `t`, and accounts its
    /// level cycles up to `t`.
    fn settle(&mut self, pos: usize, i: usize, t: Tick) {
        // Whatever follows may change the unit's routes, gates or armed bits.
        if pos < self.hz.len() {
            self.invalidate(pos);
        }
        self.catch_up(pos, i, t);
        self.account(pos, i, t);
    }
    fn settle_all(&mut self, t: Tick) {
        for pos in 0..self.units.len() {
            for i in 0..self.units[pos].counters.len() {
                self.settle(pos, i, t);
            }
        }
    }
    fn settle_sram(&mut self, n: usize, t: Tick) {
        for pos in 0..self.units.len() {
            for i in 0..self.units[pos].counters.len() {
                if self.units[pos].counters[i].sram == n {
                    self.settle(pos, i, t);
                }
            }
        }
    }

    /// Tells the machine how far core `pos`'s threads may run before an armed opcode-group
    /// counter with interrupts enabled can turn its top bit on (`RetireBatch::need` and
    /// `spin`), so that the span of retirements that crosses is reported, and the interrupt
    /// raised, within a few cycles of the crossing instruction instead of wherever the
    /// thread next returned to the event loop (up to 13,509 cycles later on `bgq`, in
    /// spin-waits: docs/upc.md, "Overflow interrupt latency"). Per hardware context: the
    /// fewest events such a counter of that context still needs (each instruction counts at
    /// most once in a counter), and the spin-loop iterations in which as many of the
    /// instructions it counts retire. A counter armed later (`arm_at`) counts as armed: a
    /// bound too early only costs a return. Called wherever a counter's value, arming or
    /// configuration changes (a `Retire` counted, a wake-up's transfers, a register write).
    fn publish_need(&mut self, pos: usize) {
        if pos >= self.chain.cores {
            return;
        }
        let u = &self.units[pos];
        let mut n = Need::default();
        let half = 1u64 << (self.width(pos) - 1);
        let mut m = u.irq_op;
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            let c = &u.counters[i];
            if !(c.armed || c.arm_at.is_some()) || !c.counting() {
                continue;
            }
            let need = half.saturating_sub(c.value);
            if need == 0 {
                // Its top bit is on: nothing crosses before its next transfer.
                continue;
            }
            // A flop-counting counter takes up to its heaviest op's weight per instruction.
            let weighted = u.weighted >> i & 1 != 0;
            let most = if weighted { u.most_flops } else { 1 };
            for ctx in 0..retire_sink::CONTEXTS {
                if c.per_thread && c.cfg.threads >> ctx & 1 == 0 {
                    continue;
                }
                let least = |a: u64, b: u64| if a == 0 { b } else { a.min(b) };
                n.need[ctx] = least(n.need[ctx], need.div_ceil(most));
                let k = retire_sink::SPIN_OPS
                    .iter()
                    .filter(|&&o| u.by_op[ctx][o as usize] >> i & 1 != 0)
                    .map(|&o| {
                        if weighted {
                            u.flops[o as usize] as u64
                        } else {
                            1
                        }
                    })
                    .sum::<u64>();
                if k > 0 {
                    n.spin[ctx] = least(n.spin[ctx], need.div_ceil(k));
                }
            }
        }
        if n != self.published[pos] {
            self.published[pos] = n;
            let mut s = self.sink.borrow_mut();
            s.cores[pos].need = n.need;
            s.cores[pos].spin = n.spin;
            s.changed = true;
            s.armed = self.published.iter().any(|n| *n != Need::default());
        }
    }

    /// [`Upc::publish_need`] for every core (after a register write or a command).
    fn publish_all(&mut self) {
        for pos in 0..self.chain.cores {
            self.publish_need(pos);
        }
    }

    /// The chain's transfers at or before `t` of every counter of unit `pos` ([`Upc::catch_up`]
    /// of each): a unit's packet, once per frame per unit. The core's summed retirements go
    /// in first, once for the unit, if an opcode counter's transfer is at or after its horizon
    /// (as `catch_up` would do for that counter: the sums change only opcode counters). Then
    /// a counter whose due transfers are all empty ([`Upc::empty_transfers`], most of them)
    /// only counts them here; the others are caught up one transfer at a time. Done inline
    /// rather than through `catch_up` per counter: its per-counter horizon test and fold
    /// cost about 120 instructions per counter per wake-up (BENCHMARKS.md).
    fn drain(&mut self, pos: usize, t: Tick) {
        if pos < self.hz.len()
            && self.hz[pos].is_some_and(|h| t >= h)
            && self.units[pos]
                .counters
                .iter()
                .any(|c| c.next_xfer <= t && c.cfg.group == Group::Opcode as u8)
        {
            self.invalidate(pos);
        }
        self.transfers_due(pos, t, false);
    }

    /// A unit's packet while no counter can interrupt (Mode 0, [`Upc::irq_any`] false): only
    /// its enabled level counters (their cycles, `account`, which `cycles_after` reads) and,
    /// under L2 combine, a slice's counters (its SRAM counter is shared, so the order of the
    /// slices' transfers decides which one sees it near overflow) are caught up here
    /// ([`Upc::drain`]). Every other counter's transfers are left to [`Upc::catch_up`], which
    /// every event, fold of summed retirements, register access and the end of the run does
    /// first: a transfer changes nothing but that counter and its own SRAM counter, dated at
    /// its x2 cycle, so doing it then gives the same register, SRAM counter, transfer count
    /// and arming; with no interrupt enabled nothing else (`publish_need`) looks at them.
    /// Draining every counter at each frame was 29,800 instructions per wake-up on OCEAN
    /// (`bgq`, 64 threads, `docs/upc-opcodes.toml`), and it moved the retirement-fed
    /// counters past the spans still open on idle cores, so 118,763 of those spans could
    /// not be summed and went out one by one (BENCHMARKS.md, "OCEAN's UPC cost").
    fn lazy_drain(&mut self, pos: usize, t: Tick) {
        if self.units[pos].slice && self.c.control.l2_combine {
            self.drain(pos, t);
            return;
        }
        let mut m = self.units[pos].levels_on;
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            self.catch_up(pos, i, t);
        }
    }

    /// The due transfers at or before `t` of the unit at `pos`'s counters (only the
    /// retirement-fed ones, `Local::ops`, if `fed`), its horizon already dealt with: the
    /// empty ones in one pass over the counters, the others after it through
    /// [`Upc::catch_up`] (each touches only its own counter and SRAM counter, so the order
    /// does not matter).
    fn transfers_due(&mut self, pos: usize, t: Tick, fed: bool) {
        let p = self.period_ticks();
        let half = 1u64 << (self.width(pos) - 1);
        let sram = &self.c.sram;
        let central = self.central_irq(pos);
        let mut slow = 0u128;
        for (i, c) in self.units[pos].counters.iter_mut().enumerate() {
            if c.next_xfer > t || fed && c.ops == 0 {
                continue;
            }
            if !Self::empty(c, sram, half) || central && c.cfg.int_enable && c.value != 0 {
                slow |= 1 << i;
                continue;
            }
            Self::skip_transfers(c, t, p);
        }
        while slow != 0 {
            let i = slow.trailing_zeros() as usize;
            slow &= slow - 1;
            self.catch_up(pos, i, t);
        }
    }

    /// Every transfer of `c` due is empty: its top bit is off and stays off (nothing is counted
    /// in between: its events catch it up first), and its SRAM counter, which they leave as
    /// it is, is not near overflow (nothing to arm). Most transfers are: a counter takes
    /// 2^(w-1) events to turn its top bit on. A level counter's cycles are counted at each.
    #[inline]
    fn empty_transfers(&self, c: &Local, half: u64) -> bool {
        Self::empty(c, &self.c.sram, half)
    }

    /// [`Upc::empty_transfers`] over UPC_C's SRAM `sram`.
    #[inline(always)]
    fn empty(c: &Local, sram: &[u64], half: u64) -> bool {
        !c.level && c.value < half && sram[c.sram].checked_add(half).is_some()
    }

    /// Counts the empty transfers of `c` due by `t` (period `p` ticks), doing nothing else. A
    /// disconnected counter (BGPM's low-latency mode) makes none, as in [`unit::transfer`].
    #[inline]
    fn skip_transfers(c: &mut Local, t: Tick, p: Tick) {
        let k = if t - c.next_xfer < p {
            1
        } else {
            (t - c.next_xfer) / p + 1
        };
        c.transfers += k * u64::from(!c.discon);
        c.next_xfer += k * p;
    }

    /// The chain's transfers of counter `i` of unit `pos` at or before `t`.
    #[inline]
    pub fn catch_up(&mut self, pos: usize, i: usize, t: Tick) {
        if self.units[pos].counters[i].next_xfer > t {
            return;
        }
        // An opcode counter's transfer at or after its core's horizon: the summed
        // retirements (all before the horizon) go first, and the horizon moves. Its
        // transfers before the horizon hand nothing over whether or not the sums are in
        // (`horizon`), and the other groups do not count retirements.
        // With no horizon nothing is summed (`invalidate` emptied the sums, and the machine
        // sums nothing while the sink's horizon is 0): nothing to do (a span counted at once
        // caught its counters up about 2.8 M times on OCEAN, each an empty fold).
        if pos < self.hz.len()
            && self.units[pos].counters[i].ops != 0
            && self.hz[pos].is_some_and(|h| t >= h)
        {
            self.invalidate(pos);
        }
        let w = self.width(pos);
        let p = self.period_ticks();
        let central = self.central_irq(pos) && self.units[pos].counters[i].cfg.int_enable;
        if self.empty_transfers(&self.units[pos].counters[i], 1u64 << (w - 1))
            && !(central && self.units[pos].counters[i].value != 0)
        {
            Self::skip_transfers(&mut self.units[pos].counters[i], t, p);
            return;
        }
        while self.units[pos].counters[i].next_xfer <= t {
            let x = self.units[pos].counters[i].next_xfer;
            self.account(pos, i, x);
            // A Mode 1 counter is UPC_C's own: armed on the next x2 cycle.
            let arm = if pos < self.chain.units() {
                self.chain.arm_delay()
            } else {
                1
            } * self.chain.x2;
            let c = &mut self.units[pos].counters[i];
            if central {
                if unit::transfer_central(c, &mut self.c.sram[c.sram]) {
                    // UPC_C's interrupt, raised on the transfer that wrapped the SRAM counter.
                    self.pending_irqs.push((pos, i, x));
                }
            } else {
                unit::transfer(c, &mut self.c.sram[c.sram], x, w, arm, false);
            }
            c.next_xfer += p;
        }
    }

    /// The unit at `pos` is a UPC_L2 whose counters feed UPC_C's L2 combined group (L2
    /// combine): with interrupts enabled they hand over their whole count and UPC_C detects
    /// the wrap itself ([`unit::transfer_central`]).
    #[inline]
    fn central_irq(&self, pos: usize) -> bool {
        self.c.control.l2_combine && self.units.get(pos).is_some_and(|u| u.slice)
    }

    /// The first tick at which a `Retire` span of core `pos` starting at `from` (`raw`: as
    /// the machine reported it, before the last register access moved it) can no longer be
    /// added whole to its opcode counters; `0` (never defer) while one is armed or being
    /// armed. Spans ending before it are summed and added later (`fold`), so it must keep
    /// every opcode counter's transfers before it from handing anything over, whenever the
    /// sums are added: for each enabled opcode counter the later of its next transfer and
    /// the last tick its register is sure to stay below its top bit (the core retires at
    /// most one instruction per processor cycle, so from `raw` on it counts at most one
    /// event per cycle on top of its register and what is summed); no later than the next
    /// change of its start/stop gate; and its next transfer if that may arm it (its SRAM
    /// counter near overflow).
    fn horizon(&self, pos: usize, from: Tick, raw: Tick) -> Tick {
        let u = &self.units[pos];
        if self.m1_owner == Some(pos) {
            // Mode 1 counts the owner's every span centrally, at its end (`observe`).
            return 0;
        }
        let half = 1u64 << (self.width(pos) - 1);
        let summed: u64 = {
            let s = self.sink.borrow();
            let b = &s.cores[pos];
            (0..retire_sink::CONTEXTS)
                .filter(|&ctx| b.busy >> ctx & 1 != 0)
                .map(|ctx| b.sum[ctx].instr.iter().sum::<u64>())
                .sum()
        };
        // The chain gate's next change, once (a sync-override counter follows its own run bit).
        let chain_change = self.c.run.next_change(from).unwrap_or(Tick::MAX);
        let p = self.period_ticks();
        let mut h = Tick::MAX;
        // A sum is dated on its context's first span (`fold`): exact for the unit's first
        // count (the report's synchronous start) once one of its counters has counted, as
        // later sums come after it; until then, while one runs, spans are counted one by one.
        let (mut first, mut fresh) = (false, false);
        for (i, c) in u.counters.iter().enumerate() {
            if !c.cfg.enable || c.ops == 0 {
                continue;
            }
            // Events per instruction at most: a flop-counting counter's heaviest op.
            let most = if u.weighted >> i & 1 != 0 {
                u.most_flops
            } else {
                1
            };
            if c.armed || c.arm_at.is_some() {
                return 0;
            }
            if c.next_xfer.saturating_sub(p) > from {
                // The chain transferred it after the span began: counted at once, past
                // transfers first (`redo_transfers`).
                return 0;
            }
            if !c.cfg.sync_override {
                first |= c.first.is_some();
                fresh |= c.first.is_none();
            }
            let room = (half - 1).saturating_sub(c.value.saturating_add(summed * most));
            let near = self.c.sram[c.sram].checked_add(half).is_none();
            let safe = if near {
                0
            } else {
                raw.saturating_add((room / most).saturating_mul(self.cp))
            };
            h = h.min(c.next_xfer.max(safe)).min(if c.cfg.sync_override {
                c.run.next_change(from).unwrap_or(Tick::MAX)
            } else {
                chain_change
            });
        }
        // A counter that has not counted yet and whose chain gate is on.
        if fresh && !first && self.c.run.at(from + 1) {
            return 0;
        }
        h
    }

    /// The due transfers of core `pos`'s retirement-fed counters (`Local::ops`) at or before
    /// `from`, the start of a span of its retirements: every event they count before it has
    /// been reported (a core reports its spans in order), so doing them now counts nothing
    /// differently, and the horizon that follows starts from their next transfers.
    /// Called with no horizon (nothing summed), so the empty ones are only counted
    /// ([`Upc::transfers_due`]).
    fn catch_up_retired(&mut self, pos: usize, from: Tick) {
        debug_assert!(self.hz[pos].is_none() && !self.summed(pos));
        self.transfers_due(pos, from, true);
    }

    /// Adds core `pos`'s summed retirements (the machine's, `machine::retire_sink`, and those
    /// `observe` summed) to the counters that select them, and forgets the core's horizon
    /// (whatever called this may move it). Each sum is of spans that ended before the
    /// horizon: no transfer, arming or gate change fell among them, so each counter takes
    /// its share at once, under the gate they all saw, dated on the first span of its
    /// context's sum; adding a sum or its parts gives the same register, lost count and
    /// shadow count, so the counts are those of counting each span at once. A counter's
    /// share is summed over contexts and ops first (`Unit::by_op`), so it is added once.
    fn fold(&mut self, pos: usize) {
        let mut s = self.sink.borrow_mut();
        let b = &mut s.cores[pos];
        if !b.any() {
            return;
        }
        let w = self.width(pos);
        let last = b.last;
        let mut share = [0u64; P_COUNTERS];
        let mut at = [Tick::MAX; P_COUNTERS];
        let mut took = 0u32;
        let mut n = [0u64; Op::COUNT];
        let u = &self.units[pos];
        for ctx in 0..retire_sink::CONTEXTS {
            if b.busy >> ctx & 1 == 0 {
                continue;
            }
            let t0 = b.t0[ctx];
            let mut ops = b.sum[ctx].take_ops(&mut n);
            while ops != 0 {
                let o = ops.trailing_zeros() as usize;
                ops &= ops - 1;
                let mut m = u.by_op[ctx][o];
                took |= m;
                while m != 0 {
                    let i = m.trailing_zeros() as usize;
                    m &= m - 1;
                    share[i] += n[o];
                    at[i] = at[i].min(t0);
                }
                // A flop-counting counter takes each instruction's weight, not 1.
                let mut m = u.by_op[ctx][o] & u.weighted;
                while m != 0 {
                    let i = m.trailing_zeros() as usize;
                    m &= m - 1;
                    share[i] += n[o] * (u.flops[o] as u64 - 1);
                }
            }
        }
        b.busy = 0;
        while took != 0 {
            let i = took.trailing_zeros() as usize;
            took &= took - 1;
            let u = &self.units[pos];
            let c = &u.counters[i];
            if !c.counting() || !Self::gate(c, &self.c.run).at(last) {
                continue;
            }
            let c = &mut self.units[pos].counters[i];
            let sram = self.c.sram[c.sram];
            let out = unit::add(c, sram, share[i], at[i], w);
            debug_assert_eq!(out, Outcome::Nothing, "a deferred span armed");
        }
    }

    /// Adds core `pos`'s sums and forgets its horizon: the next `Retire` computes another,
    /// and until then the machine sums nothing (so sums never straddle two horizons).
    fn invalidate(&mut self, pos: usize) {
        self.fold(pos);
        self.hz[pos] = None;
        self.sink.borrow_mut().cores[pos].horizon = 0;
    }

    /// Something summed for core `pos` waits to be added.
    #[inline]
    fn summed(&self, pos: usize) -> bool {
        self.sink.borrow().cores[pos].any()
    }

    /// Is counter `c` of unit `u` running at `t` (start/stop)?
    fn gate<'a>(c: &'a Local, chain: &'a Gate) -> &'a Gate {
        if c.cfg.sync_override {
            &c.run
        } else {
            chain
        }
    }

    /// Counts a level counter's cycles from its last account to `to`. An overflow among them
    /// is dated on the cycle that wrapped the 64-bit count, and the interrupt raised at `to`
    /// (the wake-up at the crossing, [`Upc::level_crossing`], makes that the next x2 cycle).
    fn account(&mut self, pos: usize, i: usize, to: Tick) {
        let u = &self.units[pos];
        let c = &u.counters[i];
        if !c.level || to <= c.acct {
            return;
        }
        // The counter is armed from `arm_at` on: the cycles before it count unarmed.
        if let Some(a) = c.arm_at.filter(|&a| a > c.acct && a < to) {
            self.account(pos, i, a);
        }
        let u = &self.units[pos];
        let c = &u.counters[i];
        let from = c.acct;
        let n = if c.counting() && !c.cfg.edge {
            let asserted = match c.cfg.event {
                a2::CYCLES => true,
                a2::MISS_PENDING => self.pending[u.index],
                _ => false,
            };
            if asserted != c.cfg.invert {
                Self::gate(c, &self.c.run).cycles(from, to, self.cp)
            } else {
                0
            }
        } else {
            0
        };
        let first = Self::gate(c, &self.c.run)
            .first_on(from, to)
            .unwrap_or(from);
        let w = self.width(pos);
        let cp = self.cp;
        let c = &mut self.units[pos].counters[i];
        c.acct = to;
        let sram = self.c.sram[c.sram];
        // The k-th of these cycles wraps the 64-bit count.
        let wrap = (u64::MAX - sram.wrapping_add(c.value)).wrapping_add(1);
        let out = unit::add(c, sram, n, first, w);
        if c.crossed.is_some() && (1..=n).contains(&wrap) {
            let u = &self.units[pos];
            let g = Self::gate(&u.counters[i], &self.c.run);
            let at = g.nth_on(from, wrap, cp).unwrap_or(first);
            self.units[pos].counters[i].crossed = Some(at);
        }
        if out == Outcome::Interrupt {
            self.pending_irqs.push((pos, i, to));
        }
    }

    /// The tick at which armed level counter `i` of unit `pos` (accounted up to now) turns
    /// its top bit on if its signal stays as it is: the wake-up that raises its interrupt.
    /// `None` if it is not armed, not counting, or its signal never counts. For the
    /// miss-pending level while it does not count, the earliest tick it could cross (its
    /// remaining cycles from now, as if it turned on at once), so that a level turning on
    /// before the next wake-up still interrupts at its crossing: the UPC_P checks its
    /// counters every cycle (seed: "the next local overflow raises the interrupt"), and the
    /// probe, which cannot ask for a wake-up from an observation, looks again by then.
    fn level_crossing(&self, pos: usize, i: usize) -> Option<Tick> {
        let u = &self.units[pos];
        let c = &u.counters[i];
        if !c.level || c.cfg.edge || !c.counting() || !c.cfg.int_enable {
            return None;
        }
        if let Some(a) = c.arm_at {
            // Not armed yet: look again when it is.
            return Some(a);
        }
        if !c.armed {
            return None;
        }
        let asserted = match c.cfg.event {
            a2::CYCLES => true,
            a2::MISS_PENDING => self.pending[u.index],
            _ => false,
        };
        let half = 1u64 << (self.width(pos) - 1);
        let need = half.checked_sub(c.value).filter(|&n| n > 0)?;
        let g = Self::gate(c, &self.c.run);
        if asserted == c.cfg.invert {
            return if c.cfg.event == a2::MISS_PENDING {
                // Looked at again no later than the earliest crossing (`wake`).
                g.nth_on(c.acct, need, self.cp)
            } else {
                None
            };
        }
        g.nth_on(c.acct, need, self.cp)
    }
}

impl Upc {
    /// Whether counter `i` of the unit at `pos` counts an event of hardware thread `ctx` at
    /// `t` (brought up to `t` first): enabled, selecting that thread, and its run gate open.
    #[inline]
    fn takes(&mut self, pos: usize, i: usize, ctx: u8, t: Tick) -> bool {
        self.catch_up(pos, i, t);
        let u = &self.units[pos];
        let c = &u.counters[i];
        c.counting()
            && (!c.per_thread || c.cfg.threads >> ctx & 1 != 0)
            && Self::gate(c, &self.c.run).at(t)
    }

    /// Counts `n` events of `key` at `t` by hardware thread `ctx` in the unit at `pos`.
    #[inline]
    fn count(&mut self, pos: usize, key: usize, ctx: u8, t: Tick, n: u64, sig: &mut Signals) {
        let mut m = self.units[pos].route[key];
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            if !self.takes(pos, i, ctx, t) {
                continue;
            }
            let w = self.width(pos);
            let mut sram = self.c.sram[self.units[pos].counters[i].sram];
            if self.units[pos].slice
                && self.c.control.l2_combine
                && self.units[pos].counters[i].cfg.int_enable
            {
                sram = sram.wrapping_add(self.other_slices(pos, i));
            }
            let c = &mut self.units[pos].counters[i];
            if unit::add(c, sram, n, t, w) == Outcome::Interrupt {
                self.raise(pos, i, ctx, t, sig);
            }
        }
        self.flush_irqs(sig);
    }

    /// Under L2 combine, the low bits the slices other than `pos` hold for counter `i`: with
    /// the SRAM counter, what the 64-bit combined count adds to slice `pos`'s own, so that
    /// its crossing is dated on the event that wraps the sum (a transfer moves counts
    /// between a slice and the SRAM counter, keeping the sum).
    fn other_slices(&self, pos: usize, i: usize) -> u64 {
        self.units[self.chain.cores..self.chain.units()]
            .iter()
            .filter(|u| u.pos != pos)
            .map(|u| u.counters[i].value)
            .sum()
    }

    /// Counts a pulse of `n` processor cycles of `key` reported at `t` (a miss's wait,
    /// reported when it is served: `CoreEvent::cycles`). The hardware counts such an event one
    /// per cycle over (t - n, t], so the transfers of the counter that the chain made inside
    /// that window would have handed its top bit over as the cycles came; added at once at
    /// `t`, a wait longer than a frame (misses of 10,000 cycles under contention on `bgq`)
    /// wrapped the 14-bit counter and lost counts that the hardware keeps (FFT, RADIX, OCEAN
    /// on `bgq` with 64 threads: `PEVT_LSU_DATA_MISS_CYC` -1.5 to -4.2 %). So for each of
    /// those past transfers, after the core's last register access and oldest first, the
    /// cycles up to it are added and its hand-over is made again (not counted as another
    /// transfer); the rest is added at `t`. The 64-bit count is the same; the split between
    /// SRAM and local counter follows the counter's current value rather than its value at
    /// each past transfer (not kept). An armed counter, or one whose SRAM counter is near
    /// overflow, takes the pulse whole at `t` as before (its interrupt is dated there).
    fn count_cycles(
        &mut self,
        pos: usize,
        key: usize,
        ctx: u8,
        t: Tick,
        n: u64,
        sig: &mut Signals,
    ) {
        let from = t.saturating_sub(n.saturating_mul(self.cp));
        let from = if pos < self.last_mmio.len() {
            from.max(self.last_mmio[pos])
        } else {
            from
        };
        let w = self.width(pos);
        let mut m = self.units[pos].route[key];
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            if !self.takes(pos, i, ctx, t) {
                continue;
            }
            let c = &self.units[pos].counters[i];
            let sram = self.c.sram[c.sram];
            if c.armed || c.arm_at.is_some() || sram >= 1 << 63 {
                let c = &mut self.units[pos].counters[i];
                if unit::add(c, sram, n, t, w) == Outcome::Interrupt {
                    self.raise(pos, i, ctx, t, sig);
                }
                continue;
            }
            // Cycles at or before x: those of (from, x].
            let cp = self.cp;
            let (_, done) = self.redo_transfers(pos, i, from, t, |x| ((x - from) / cp).min(n));
            let c = &mut self.units[pos].counters[i];
            unit::add(c, self.c.sram[c.sram], n - done, t, w);
        }
        self.flush_irqs(sig);
    }

    /// Counter `i` of unit `pos` takes the events of a report over (from, t] that came after
    /// the chain's transfers inside it (a thread that ran or spun past them before it
    /// returned to the event loop; a miss's wait reported when served): for each transfer
    /// already made in (from, t], oldest first, the events at or before it (`upto(x)`) are
    /// added at it and its hand-over of the top bit is made again (not counted as another
    /// transfer), as the hardware counted them as they came; added at once, more than 2^(w-1)
    /// of them wrapped the local counter and lost counts the hardware keeps. The 64-bit count
    /// is exact; the split between SRAM and local counter follows the counter's present
    /// value, not its value at each past transfer (not kept). Returns the tick after the
    /// last such transfer (`from + 1` if none) and the events added; the caller adds the
    /// rest. Not for an armed counter or one whose SRAM counter is near overflow (the
    /// callers add theirs at the report's time, where the interrupt is dated).
    fn redo_transfers(
        &mut self,
        pos: usize,
        i: usize,
        from: Tick,
        t: Tick,
        upto: impl Fn(Tick) -> u64,
    ) -> (Tick, u64) {
        let p = self.period_ticks();
        let w = self.width(pos);
        let half = 1u64 << (w - 1);
        let c = &mut self.units[pos].counters[i];
        let (mut lo, mut done) = (from + 1, 0u64);
        if p == 0 {
            return (lo, done);
        }
        // The oldest transfer inside (from, t] that the chain already made.
        let mut x = c.next_xfer;
        while x > from.saturating_add(p) {
            x -= p;
        }
        let mut sram = self.c.sram[c.sram];
        while x < c.next_xfer && x <= t {
            let k = upto(x);
            if k > done {
                unit::add(c, sram, k - done, x, w);
                done = k;
            }
            if c.value >= half && !c.discon {
                sram = sram.wrapping_add(half);
                c.value -= half;
            }
            lo = x + 1;
            x += p;
        }
        self.c.sram[c.sram] = sram;
        (lo, done)
    }

    /// Mode 1: counts `n` events of `key` at `t` by hardware thread `ctx` of the owner at
    /// `pos` in UPC_C's Mode 1 counters that select it (a `Retire` span at its end).
    #[inline]
    fn count_central(
        &mut self,
        pos: usize,
        key: usize,
        ctx: u8,
        t: Tick,
        n: u64,
        sig: &mut Signals,
    ) {
        let Some(cu) = self.central_of(pos) else {
            return;
        };
        let mut m = self.units[cu].wide[key];
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            self.catch_up(cu, i, t);
            let u = &self.units[cu];
            let c = &u.counters[i];
            if !c.counting() || (c.per_thread && c.cfg.threads >> ctx & 1 == 0) || !self.c.run.at(t)
            {
                continue;
            }
            let c = &mut self.units[cu].counters[i];
            let sram = self.c.sram[c.sram];
            if unit::add(c, sram, n, t, mode1::WIDTH) == Outcome::Interrupt {
                self.raise(cu, i, ctx, t, sig);
            }
        }
        self.flush_irqs(sig);
    }

    /// The flops of `n` retirements of `op` by hardware thread `ctx` of core `pos` over the
    /// span (from, t], for its flop-counting counters (`PEVT_INST_QFPU_FPGRP1`, routed on
    /// [`FLOPS_KEY`]): `n` times the op's weight under the unit's `P_FP_WEIGHTS`
    /// (`events::flops`; nothing for an op outside FPGRP1), spread over the span as
    /// [`Upc::count_span`] spreads events (an instruction's flops are counted at once on the
    /// chip: a crossing may be dated up to one instruction's time apart).
    fn count_flops(
        &mut self,
        pos: usize,
        op: Op,
        ctx: u8,
        span: (Tick, Tick),
        n: u64,
        sig: &mut Signals,
    ) {
        let w = self.units[pos].flops[op as usize] as u64;
        if w != 0 {
            self.count_span(pos, FLOPS_KEY, ctx, span, n * w, sig);
        }
    }

    /// [`Upc::count_flops`] for UPC_C's Mode 1 counters of owner `pos` (`on` of the
    /// retirements while the chain runs), weighted by the owner's UPC_P weights.
    fn count_flops_central(
        &mut self,
        pos: usize,
        op: Op,
        ctx: u8,
        t: Tick,
        on: u64,
        sig: &mut Signals,
    ) {
        let w = self
            .units
            .get(pos)
            .map_or(0, |u| u.flops[op as usize] as u64);
        if w != 0 {
            self.count_central(pos, FLOPS_KEY, ctx, t, on * w, sig);
        }
    }

    /// Counts `n` events of `key` by hardware thread `ctx` of core `pos` spread uniformly over
    /// the span (from, t] (an `Observation::Retire`: the j-th of the n at `from + ceil(j (t -
    /// from) / n)`), so that each counter's transfers and its gate's changes inside the span
    /// split the events as they would fall, and an armed overflow is dated on its own event.
    /// Interrupts are raised at `t`, when the machine reports the span.
    fn count_span(
        &mut self,
        pos: usize,
        key: usize,
        ctx: u8,
        (from, t): (Tick, Tick),
        n: u64,
        sig: &mut Signals,
    ) {
        if self.summed(pos) {
            self.fold(pos);
        }
        if t <= from || n == 0 {
            return self.count(pos, key, ctx, t, n, sig);
        }
        let d = t - from;
        // Events before tick x, and the time of the j-th event (in 64 bits when the product
        // fits, as it does but for spans of more than 2^32 ticks and events: a 128-bit
        // division is a call of about 10 instructions more, 7.7 M of them on OCEAN).
        let before = |x: Tick| -> u64 {
            if x <= from + 1 {
                0
            } else {
                let a = x - from - 1;
                match a.checked_mul(n) {
                    Some(m) => m / d,
                    None => (a as u128 * n as u128 / d as u128) as u64,
                }
                .min(n)
            }
        };
        let at = |j: u64| {
            from + match j.checked_mul(d) {
                Some(m) => m.div_ceil(n),
                None => (j as u128 * d as u128).div_ceil(n as u128) as Tick,
            }
        };
        let w = self.width(pos);
        let half = 1u64 << (w - 1);
        let p = self.period_ticks();
        let arm = self.chain.arm_delay() * self.chain.x2;
        let mut m = self.units[pos].route[key];
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            let c = &self.units[pos].counters[i];
            if !c.counting() || (c.per_thread && c.cfg.threads >> ctx & 1 == 0) {
                continue;
            }
            self.catch_up(pos, i, from);
            let u = &self.units[pos];
            let c = &u.counters[i];
            let g = Self::gate(c, &self.c.run);
            let steady = g.next_change(from).is_none_or(|u| u > t);
            let plain = !c.armed && c.arm_at.is_none();
            let on = g.at(from + 1);
            let simple = plain && steady && on && self.c.sram[c.sram] < 1 << 63;
            // A span longer than the chain's period (a spin-wait charged when it ends) came
            // after transfers the wake-ups already made: its events before each go in first.
            let mut lo = from + 1;
            if simple && c.next_xfer.saturating_sub(p) > from {
                lo = self.redo_transfers(pos, i, from, t, |x| before(x + 1)).0;
            }
            let c = &mut self.units[pos].counters[i];
            if simple && self.c.sram[c.sram] < 1 << 63 {
                // Nothing armed or arming (its SRAM counter is far from overflow, and stays
                // so: a transfer adds 2^(w-1)), one gate state over the span: the rest of the
                // span's events split at each transfer inside it, each transfer made after the
                // events before its tick, as the general loop below does through `catch_up`
                // (no level cycles, no horizon: the caller folded the sums and moves the
                // horizon after the span), without its gate look-ups and per-piece calls.
                // Dated as it dates them (a date only sets a first count).
                let sram = &mut self.c.sram[c.sram];
                let mut done = before(lo);
                while c.next_xfer <= t {
                    let x = c.next_xfer;
                    let j = before(x);
                    if j > done {
                        let date = if c.first.is_none() { at(j) } else { x };
                        unit::add(c, *sram, j - done, date, w);
                        done = j;
                    }
                    unit::transfer(c, sram, x, w, arm, false);
                    debug_assert!(c.arm_at.is_none(), "a far SRAM counter armed");
                    c.next_xfer += p;
                }
                unit::add(c, *sram, n - done, t, w);
                continue;
            }
            // One piece (no transfer, no start or stop inside the rest), nothing armed: the
            // rest of the span's events go in at once.
            if self.units[pos].counters[i].next_xfer > t && plain && steady {
                if on {
                    let c = &mut self.units[pos].counters[i];
                    let sram = self.c.sram[c.sram];
                    unit::add(c, sram, n - before(lo), t, w);
                }
                continue;
            }
            while lo <= t {
                let u = &self.units[pos];
                let c = &u.counters[i];
                let g = Self::gate(c, &self.c.run);
                let hi = (t + 1)
                    .min(c.next_xfer)
                    .min(g.next_change(lo).unwrap_or(Tick::MAX));
                let (j0, j1) = (before(lo), before(hi));
                if j1 > j0 && g.at(lo) && c.counting() {
                    let mut k = j1 - j0;
                    let c = &mut self.units[pos].counters[i];
                    // An armed counter's top bit turns on at its (half - value)-th event.
                    let armed = c.armed || c.arm_at.is_some_and(|a| a <= at(j0 + 1));
                    if armed && c.value < half && c.value + k >= half {
                        let first = half - c.value;
                        let sram = self.c.sram[c.sram];
                        if unit::add(c, sram, first, at(j0 + first), w) == Outcome::Interrupt {
                            self.raise(pos, i, ctx, t, sig);
                        }
                        k -= first;
                    }
                    let c = &mut self.units[pos].counters[i];
                    if k > 0 && c.counting() {
                        let sram = self.c.sram[c.sram];
                        if unit::add(c, sram, k, at(j1), w) == Outcome::Interrupt {
                            self.raise(pos, i, ctx, t, sig);
                        }
                    }
                }
                if hi <= t {
                    self.catch_up(pos, i, hi);
                }
                lo = hi;
            }
        }
        self.flush_irqs(sig);
    }

    /// The miss-pending level signal of core `k` changes to `on` at `t`.
    fn level_change(&mut self, k: usize, on: bool, t: Tick, sig: &mut Signals) {
        if self.pending[k] == on {
            return;
        }
        let mp = key(Group::A2, a2::MISS_PENDING);
        let mut list: Vec<(usize, usize)> = Vec::new();
        let mut m = self.units[k].route[mp];
        while m != 0 {
            list.push((k, m.trailing_zeros() as usize));
            m &= m - 1;
        }
        if let Some(cu) = self.central_of(k) {
            let mut m = self.units[cu].wide[mp];
            while m != 0 {
                list.push((cu, m.trailing_zeros() as usize));
                m &= m - 1;
            }
        }
        for (k, i) in list {
            self.settle(k, i, t);
            let u = &self.units[k];
            let c = &u.counters[i];
            // An edge counter counts rising edges, or falling ones when inverted.
            if c.cfg.edge && c.counting() && on != c.cfg.invert && Self::gate(c, &self.c.run).at(t)
            {
                let w = self.width(k);
                let c = &mut self.units[k].counters[i];
                let sram = self.c.sram[c.sram];
                if unit::add(c, sram, 1, t, w) == Outcome::Interrupt {
                    self.pending_irqs.push((k, i, t));
                }
            }
        }
        self.pending[k] = on;
        self.flush_irqs(sig);
    }

    fn flush_irqs(&mut self, sig: &mut Signals) {
        if self.pending_irqs.is_empty() {
            return;
        }
        for (pos, i, t) in std::mem::take(&mut self.pending_irqs) {
            let ctx = self.units[pos].counters[i]
                .cfg
                .threads
                .trailing_zeros()
                .min(3) as u8;
            self.raise(pos, i, ctx, t, sig);
        }
    }

    /// The overflow interrupt of counter `i` of unit `pos`, to hardware thread `ctx` of its
    /// core (a UPC_L2's goes to UPC_C's L2 target).
    fn raise(&mut self, pos: usize, i: usize, ctx: u8, t: Tick, sig: &mut Signals) {
        let u = &mut self.units[pos];
        u.int_status |= 1 << i;
        let slice = u.slice;
        let mut crossed = u.counters[i].crossed.take();
        if slice && self.c.control.l2_combine {
            // Combined: the crossing is the sum's, dated on whichever slice's event made it.
            for u in self.units.iter_mut().filter(|u| u.slice && !u.central) {
                crossed = crossed.or(u.counters[i].crossed.take());
            }
        }
        let targets: Vec<(u16, u8)> = if !slice {
            vec![(pos as u16, ctx)]
        } else if self.c.cint.iter().all(|&m| m == 0) {
            vec![self.c.l2_target]
        } else {
            let cint = &self.c.cint;
            (0..cint.len())
                .flat_map(|k| {
                    (0..4u8)
                        .filter(move |b| cint[k] >> b & 1 != 0)
                        .map(move |b| (k as u16, b))
                })
                .collect()
        };
        for (core, context) in targets {
            self.irqs.push(Irq {
                pos,
                counter: i,
                crossed,
                raised: t,
                core,
                context,
            });
            sig.act(Action::Interrupt {
                core,
                context,
                vector: VECTOR | (pos as u32) << 8 | i as u32,
                handler_cycles: 0,
            });
        }
    }

    /// The end of the run at `t`: the stop command's final frame hands every local count to
    /// its SRAM counter.
    pub fn finish_at(&mut self, t: Tick) {
        if self.end.is_some() {
            return;
        }
        self.settle_all(t);
        for pos in 0..self.units.len() {
            let w = self.width(pos);
            for i in 0..self.units[pos].counters.len() {
                let c = &mut self.units[pos].counters[i];
                unit::transfer(c, &mut self.c.sram[c.sram], t, w, 0, true);
            }
        }
        self.end = Some(t);
    }

    /// Counter `i` of unit `pos` as a 64-bit count: its SRAM counter since software last
    /// wrote it plus its local register, brought up to `t` first (its due transfers, its level
    /// cycles, deferred retirements); `None` as it stands (after the run's final frame).
    pub fn count_at(&mut self, pos: usize, i: usize, t: Option<Tick>) -> u64 {
        if let Some(t) = t {
            self.settle(pos, i, t);
        }
        let c = &self.units[pos].counters[i];
        self.counted(c.sram).wrapping_add(c.value)
    }

    /// The clock cycles (`a2::CYCLES`) counter `i` of unit `pos` has counted after `t`, when
    /// its accounting ran past `t` (a chain transfer at global time while the core, idle,
    /// was behind); 0 for every other event. A context switch read at `t` gives these to the
    /// incoming thread, as the machine charges it the idle wait (`restrict.rs`).
    pub fn cycles_after(&self, pos: usize, i: usize, t: Tick) -> u64 {
        let u = &self.units[pos];
        let c = &u.counters[i];
        if !c.level || c.acct <= t || c.cfg.event != a2::CYCLES {
            return 0;
        }
        if !c.counting() || c.cfg.edge || c.cfg.invert {
            return 0;
        }
        Self::gate(c, &self.c.run).cycles(t, c.acct, self.cp)
    }

    /// SRAM counter `n` less its base (what it counted since software last wrote it).
    pub fn counted(&self, n: usize) -> u64 {
        self.c.sram[n].wrapping_sub(self.c.base[n])
    }

    /// Sets (`on`) or clears the run bits of the counters in `mask` (bit i: counter i) of
    /// UPC_P `k`, taking effect on the next x2 cycle; the counters are settled first, so what
    /// they counted before the change is counted under the old bits.
    fn set_run(&mut self, k: usize, mask: u64, on: bool, t: Tick) {
        let x2 = self.chain.x2;
        let at = t.div_ceil(x2) * x2;
        for i in (0..P_COUNTERS).filter(|&i| mask >> i & 1 != 0) {
            self.settle(k, i, t);
            self.units[k].counters[i].run.set(at, on);
        }
    }

    /// UPC_P `u`'s run bits at `t` (bit i: counter i).
    fn run_mask(u: &Unit, t: Tick) -> u64 {
        u.counters
            .iter()
            .enumerate()
            .filter(|(_, c)| c.run.at(t))
            .fold(0, |m, (i, _)| m | 1 << i)
    }

    fn mmio_p(&mut self, k: usize, off: u64, write: Option<u64>, t: Tick) -> u64 {
        if off < regs::P_DATA + 8 * P_COUNTERS as u64 {
            self.data_reg(k, (off / 8) as usize, write, t)
        } else if (regs::P_CFG..regs::P_CFG + 8 * P_COUNTERS as u64).contains(&off) {
            let i = ((off - regs::P_CFG) / 8) as usize;
            match write {
                Some(v) => {
                    self.configure(k, i, CounterCfg::decode(v), t);
                    0
                }
                None => self.units[k].counters[i].cfg.encode(),
            }
        } else if off == regs::P_CONTROL {
            match write {
                Some(v) => {
                    for i in 0..P_COUNTERS {
                        self.settle(k, i, t);
                    }
                    if v & regs::P_RESET != 0 {
                        for c in &mut self.units[k].counters {
                            c.value = 0;
                            c.armed = false;
                            c.big_ovf = false;
                            c.frozen = false;
                        }
                    }
                    for c in &mut self.units[k].counters {
                        c.discon = v & regs::P_DISCON != 0;
                    }
                    if v & regs::P_RUN != 0 {
                        self.set_run(k, regs::RUN_MASK, true, t);
                    }
                    if v & regs::P_STOP != 0 {
                        self.set_run(k, regs::RUN_MASK, false, t);
                    }
                    0
                }
                None => {
                    let u = &self.units[k];
                    let discon = u.counters.first().is_some_and(|c| c.discon);
                    (Self::run_mask(u, t) != 0) as u64 | (discon as u64) << 2
                }
            }
        } else if off == regs::P_RUN_W1S || off == regs::P_RUN_W1C {
            match write {
                Some(v) => {
                    self.set_run(k, v & regs::RUN_MASK, off == regs::P_RUN_W1S, t);
                    0
                }
                None => Self::run_mask(&self.units[k], t),
            }
        } else if off == regs::P_FP_WEIGHTS {
            match write {
                Some(v) => {
                    // What was retired before counts under the old weights.
                    for i in 0..P_COUNTERS {
                        self.settle(k, i, t);
                    }
                    let w = regs::FpWeights::decode(v);
                    let u = &mut self.units[k];
                    u.fp = w;
                    u.flops = events::flops_table(w.div, w.sqrt);
                    u.most_flops = heaviest(&u.flops);
                    self.counters_changed(k);
                    0
                }
                None => self.units[k].fp.encode(),
            }
        } else if off == regs::P_CINT_ENABLE {
            match write {
                Some(v) => {
                    self.c.cint[k] = (v & 0xf) as u8;
                    0
                }
                None => self.c.cint[k] as u64,
            }
        } else if off == regs::P_INT_STATUS {
            match write {
                Some(v) => {
                    self.units[k].int_status &= !(v as u32);
                    0
                }
                None => self.units[k].int_status as u64,
            }
        } else {
            0
        }
    }

    /// A local counter's data register (UPC_P_DATA, UPC_L2_DATA): read, the count with its
    /// armed and big-overflow bits; written, the count and the armed bit (`write_local`).
    fn data_reg(&mut self, pos: usize, i: usize, write: Option<u64>, t: Tick) -> u64 {
        let w = self.width(pos);
        match write {
            Some(v) => {
                self.write_local(pos, i, v, v >> w & 1 != 0, t);
                0
            }
            None => {
                self.settle(pos, i, t);
                let c = &self.units[pos].counters[i];
                regs::data_word(c.value, c.armed, c.big_ovf, w)
            }
        }
    }

    fn mmio_c(&mut self, off: u64, write: Option<u64>, t: Tick) -> u64 {
        if off < 8 * SRAM as u64 {
            let n = (off / 8) as usize;
            match write {
                Some(v) => {
                    self.write_sram(n, v, t);
                    0
                }
                None => {
                    self.settle_sram(n, t);
                    self.c.sram[n]
                }
            }
        } else if off == regs::C_CONTROL {
            match write {
                Some(v) => {
                    let new = CControl::decode(v);
                    self.c.control.reset_on_enable = new.reset_on_enable;
                    if (new.mode, new.owner) != (self.c.control.mode, self.c.control.owner) {
                        self.set_mode(new.mode, new.owner as usize, t);
                    }
                    if new.l2_combine != self.c.control.l2_combine {
                        self.set_l2_combine(new.l2_combine, t);
                    }
                    if new.run != self.c.control.run {
                        self.command(t, new.run);
                    }
                    0
                }
                None => self.c.control.encode(),
            }
        } else if off == regs::C_ACCUM {
            match write {
                Some(v) => {
                    let a = regs::Accum::decode(v);
                    if a.go {
                        self.settle_all(t);
                        self.accumulate(a);
                    }
                    0
                }
                None => 0,
            }
        } else if off == regs::C_ACCUM_MASK {
            match write {
                Some(v) => {
                    self.c.accum_mask = v as u16;
                    0
                }
                None => self.c.accum_mask as u64,
            }
        } else if off == regs::C_FRAME {
            t / self.chain.x2 % self.chain.period
        } else if (regs::C_L2_CFG..regs::C_L2_CFG + 8 * (MAX_SLICES * L2_COUNTERS) as u64)
            .contains(&off)
        {
            let n = ((off - regs::C_L2_CFG) / 8) as usize;
            let (j, i) = (n / L2_COUNTERS, n % L2_COUNTERS);
            let pos = self.chain.cores + j;
            if j >= self.chain.slices {
                return 0;
            }
            match write {
                Some(v) => {
                    self.configure(pos, i, CounterCfg::decode(v), t);
                    0
                }
                None => self.units[pos].counters[i].cfg.encode(),
            }
        } else if (regs::C_L2_DATA..regs::C_L2_DATA + 8 * (MAX_SLICES * L2_COUNTERS) as u64)
            .contains(&off)
        {
            let n = ((off - regs::C_L2_DATA) / 8) as usize;
            let (j, i) = (n / L2_COUNTERS, n % L2_COUNTERS);
            if j >= self.chain.slices {
                return 0;
            }
            self.data_reg(self.chain.cores + j, i, write, t)
        } else {
            0
        }
    }

    /// The accumulate command: group A plus (or minus) group B into group C, masked.
    pub fn accumulate(&mut self, a: regs::Accum) {
        for k in 0..16 {
            if self.c.accum_mask >> k & 1 == 0 {
                continue;
            }
            let x = self.c.sram[a.a as usize * 16 + k];
            let y = self.c.sram[a.b as usize * 16 + k];
            let n = a.c as usize * 16 + k;
            self.c.sram[n] = if a.subtract {
                x.wrapping_sub(y)
            } else {
                x.wrapping_add(y)
            };
            if a.c == a.a && a.b != a.a {
                // In place: group B's value is software's (BGPM's L2 overflow re-arm), not
                // events, so it joins the base as a written value does.
                self.c.base[n] = self.c.base[n].wrapping_add(self.c.sram[n].wrapping_sub(x));
                self.disarm_if_far(n);
            }
        }
        self.c.accums += 1;
    }
}

/// Of `n` events spread uniformly over the span (from, t] (the j-th at `from + ceil(j (t -
/// from) / n)`, as [`Upc::count_span`] places them), those at a time `gate` is on.
pub fn events_on(gate: &Gate, from: Tick, t: Tick, n: u64) -> u64 {
    if t <= from || n == 0 {
        return if gate.at(t) { n } else { 0 };
    }
    let d = (t - from) as u128;
    let before = |x: Tick| -> u64 {
        if x <= from + 1 {
            0
        } else {
            (((x - from - 1) as u128 * n as u128 / d) as u64).min(n)
        }
    };
    let mut on = 0;
    let mut lo = from + 1;
    while lo <= t {
        let hi = (t + 1).min(gate.next_change(lo).unwrap_or(Tick::MAX));
        if gate.at(lo) {
            on += before(hi) - before(lo);
        }
        lo = hi;
    }
    on
}

/// Interrupt vectors of the UPC: `VECTOR | pos << 8 | counter`.
pub const VECTOR: u32 = 0x5550_0000;

/// SRAM counter of counter `i` of core or slice `index` in Mode 0 (docs/upc.md, "Mode 0
/// mapping"): core k's counters in groups 2k and 2k+1 (counters 32k..32k+23), slice j's in
/// group 34 + j, or all slices in group 34 under L2 combine.
pub fn sram_index(slice: bool, index: usize, i: usize, combine: bool) -> usize {
    if !slice {
        32 * index + i
    } else if combine {
        SRAM_L2 + i
    } else {
        SRAM_L2 + 16 * index + i
    }
}

impl Probe for Upc {
    fn observe(&mut self, o: &Observation, sig: &mut Signals) {
        match *o {
            Observation::CoreEvent { who, t, event, n } => {
                let k = key(Group::A2, a2::of_core(event));
                let pos = who.core as usize;
                if event.cycles() && n > 1 {
                    self.count_cycles(pos, k, who.context, t, n as u64, sig);
                } else {
                    self.count(pos, k, who.context, t, n as u64, sig);
                }
                self.count_central(pos, k, who.context, t, n as u64, sig);
            }
            Observation::L1p { who, t, event } => {
                let k = key(Group::L1p, event as u8);
                let pos = who.core as usize;
                self.count(pos, k, who.context, t, 1, sig);
                self.count_central(pos, k, who.context, t, 1, sig);
            }
            Observation::L2Slice {
                slice, t, event, ..
            } => {
                let pos = self.chain.cores + slice as usize;
                if pos < self.chain.units() {
                    self.count(pos, event as usize, 0, t, 1, sig);
                    self.count_central(pos, event as usize, 0, t, 1, sig);
                }
            }
            Observation::Retire {
                proc,
                t,
                from,
                op,
                n,
                who,
            } => {
                let pos = proc as usize;
                if self.m1_owner == Some(pos) {
                    // The span's instructions while the chain runs (spread as `count_span`
                    // spreads them), added at its end.
                    let on = events_on(&self.c.run, from, t, n);
                    for sub in events::OP_GROUPS[op as usize] {
                        let k = key(Group::Opcode, sub);
                        self.count_central(pos, k, who.context, t, on, sig);
                    }
                    self.count_flops_central(pos, op, who.context, t, on, sig);
                }
                if pos < self.chain.cores {
                    // A span that began before this core's last register access began for
                    // its thread when the access was done (a small error for the core's
                    // other threads: their events move later within their span).
                    let raw = from;
                    let from = if self.last_mmio[pos] < t {
                        from.max(self.last_mmio[pos])
                    } else {
                        from
                    };
                    let h = match self.hz[pos] {
                        Some(h) => h,
                        None => {
                            // Transfers the wake-ups have not made yet (they drain once
                            // per frame, `irq_any`) would bound the horizon at once.
                            self.catch_up_retired(pos, from);
                            let h = self.horizon(pos, from, raw);
                            self.hz[pos] = Some(h);
                            // The machine sums the core's next spans that end before it.
                            self.sink.borrow_mut().cores[pos].horizon = h;
                            h
                        }
                    };
                    if from < t && t < h {
                        // Added whole later (`fold`), as the machine sums them.
                        let ctx = (who.context & 3) as usize;
                        let mut s = self.sink.borrow_mut();
                        s.cores[pos].open(ctx, t).add_op(op, n);
                        self.retire_deferred += 1;
                        return;
                    }
                    self.retire_direct += 1;
                    for sub in events::OP_GROUPS[op as usize] {
                        let k = key(Group::Opcode, sub);
                        if self.units[pos].route[k] != 0 {
                            self.count_span(pos, k, who.context, (from, t), n, sig);
                        }
                    }
                    if self.units[pos].route[FLOPS_KEY] != 0 {
                        self.count_flops(pos, op, who.context, (from, t), n, sig);
                    }
                    if self.units[pos].a2_ops >> op as u32 & 1 != 0 {
                        // An A2 commit event selects this op (never without such a counter).
                        for sub in a2::RETIRED..a2::COUNT as u8 {
                            let k = key(Group::A2, sub);
                            if events::a2_ops(sub) >> op as u32 & 1 != 0
                                && self.units[pos].route[k] != 0
                            {
                                self.count_span(pos, k, who.context, (from, t), n, sig);
                            }
                        }
                    }
                    if t >= h {
                        // Past the horizon: the next span computes another.
                        self.invalidate(pos);
                    }
                    self.publish_need(pos);
                }
            }
            Observation::TxNack { proc, t, who, .. } => {
                let k = key(Group::A2, a2::NACK);
                self.count(proc as usize, k, who.context, t, 1, sig);
                self.count_central(proc as usize, k, who.context, t, 1, sig);
            }
            Observation::TxIssue { proc, t, cmd, .. } if is_miss(cmd) => {
                self.level_change(proc as usize, true, t, sig);
            }
            Observation::TxDone { proc, t, cmd, .. } if is_miss(cmd) => {
                self.level_change(proc as usize, false, t, sig);
            }
            _ => {}
        }
    }

    /// Only the kinds some enabled counter counts: the machine builds no other observation
    /// (asked again after every register access, which is where counters change).
    fn interest(&self) -> u32 {
        self.stat_interest | self.kinds
    }

    fn pipeline_before(&self) -> u32 {
        0
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
        if let Some(m) = self.last_mmio.get_mut(proc as usize) {
            *m = (*m).max(t);
        }
        let v = if (regs::UPC_P_BASE..regs::UPC_P_BASE + 0x1000).contains(&offset) {
            self.mmio_p(proc as usize, offset - regs::UPC_P_BASE, write, t)
        } else if (regs::UPC_C_BASE..regs::UPC_C_BASE + 0x4000).contains(&offset) {
            self.mmio_c(offset - regs::UPC_C_BASE, write, t)
        } else {
            return None;
        };
        if write.is_some() {
            self.mmio_writes += 1;
            self.publish_all();
        } else {
            self.mmio_reads += 1;
        }
        self.flush_irqs(sig);
        Some(v)
    }

    fn wakes(&self) -> Option<(ProbeClock, u64)> {
        Some((X2, self.plan[0].0))
    }

    /// The packet of the unit(s) whose last data flit is at `cycle`: their counters'
    /// transfers (those no event has done yet).
    fn wake(&mut self, cycle: u64, t: Tick, sig: &mut Signals) -> Option<u64> {
        self.wakes += 1;
        let off = cycle % self.chain.period;
        let frame = cycle - off;
        let mut next = if self.irq_any || self.m1_owner.is_some() {
            // The plan is sorted by offset: the units at `off`, then the next offset (or the
            // first of the next frame).
            let mut k = self.plan.partition_point(|&(o, _)| o < off);
            while let Some(&(o, pos)) = self.plan.get(k).filter(|&&(o, _)| o == off) {
                debug_assert_eq!(o, off);
                self.drain(pos, t);
                self.publish_need(pos);
                k += 1;
            }
            match self.plan.get(k) {
                Some(&(o, _)) => Some(frame + o),
                None => self
                    .plan
                    .first()
                    .map(|&(o, _)| frame + self.chain.period + o),
            }
        } else {
            // No counter can interrupt: the packets of the frame so far are left to the
            // counters' own catch-up (`Upc::lazy_drain`), and the next wake-up is at the
            // frame's last packet (`Upc::irq_any`).
            let mut last = None;
            for k in 0..self.plan.len() {
                let (o, pos) = self.plan[k];
                if o > off {
                    break;
                }
                self.lazy_drain(pos, t);
                last = Some(o);
            }
            let end = self.plan.last().map(|&(o, _)| o);
            match (last, end) {
                (_, Some(e)) if e > off => Some(frame + e),
                (_, Some(e)) => Some(frame + self.chain.period + e),
                _ => None,
            }
        };
        // Armed level counters: account them now (raising what crossed), and wake on the x2
        // cycle after the next crossing.
        let x2 = self.chain.x2;
        for k in 0..self.levels.len() {
            let (pos, i) = self.levels[k];
            let c = &self.units[pos].counters[i];
            if !(c.armed || c.arm_at.is_some()) {
                continue;
            }
            self.account(pos, i, t);
            if let Some(x) = self.level_crossing(pos, i) {
                let c = (x / x2 + 1).max(cycle + 1);
                next = Some(next.map_or(c, |n: u64| n.min(c)));
            }
        }
        self.flush_irqs(sig);
        next
    }

    /// The machine sums the spans that end before each core's horizon ([`Upc::fold`]).
    fn retire_sink(&self) -> Option<retire_sink::Shared> {
        Some(self.sink.clone())
    }

    fn finish(&mut self, t: Tick) {
        self.finish_at(t);
    }

    fn name(&self) -> &str {
        "upc"
    }
}

/// The counter units' clock: the x2 clock, half the processor's rate (seed: "2 events per
/// operating cycle of the performance counters").
pub const X2: ProbeClock = ProbeClock {
    name: "upc-x2",
    num: 2,
    den: 1,
};

fn is_miss(cmd: machine::probe::Cmd) -> bool {
    use machine::probe::Cmd;
    matches!(cmd, Cmd::Read | Cmd::ReadEx | Cmd::Upgrade)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(group: Group, event: u8) -> CounterCfg {
        CounterCfg {
            group: group as u8,
            event,
            threads: 0xf,
            enable: true,
            ..Default::default()
        }
    }

    /// The probe asks for exactly the observation kinds its enabled counters count, and the
    /// miss-pending level is forgotten when no counter follows it.
    #[test]
    fn interest_follows_enabled_counters() {
        let chain = Chain {
            cores: 2,
            slices: 1,
            period: 400,
            x2: 2,
        };
        let mut u = Upc::new(chain, 1, 14, 10);
        assert_eq!(u.interest(), 0);
        // Cycles are counted from the clock: no observation needed.
        u.configure(0, 0, cfg(Group::A2, a2::CYCLES), 0);
        assert_eq!(u.interest(), 0);
        u.configure(1, 3, cfg(Group::A2, a2::LD_MISS), 0);
        assert_eq!(u.interest(), kind::CORE_EVENT);
        u.configure(0, 1, cfg(Group::A2, a2::MISS_PENDING), 0);
        u.configure(0, 2, cfg(Group::A2, a2::NACK), 0);
        u.configure(1, 4, cfg(Group::L1p, 0), 0);
        u.configure(2, 0, cfg(Group::A2, 0), 0);
        assert_eq!(
            u.interest(),
            kind::CORE_EVENT
                | kind::TX_ISSUE
                | kind::TX_DONE
                | kind::TX_NACK
                | kind::L1P
                | kind::L2_SLICE
        );
        u.pending[0] = true;
        // Disabling the miss-pending counter drops its kinds and its stale level.
        u.configure(0, 1, CounterCfg::default(), 10);
        assert!(!u.pending[0]);
        assert_eq!(u.interest() & (kind::TX_ISSUE | kind::TX_DONE), 0);
    }

    /// While no counter can interrupt (Mode 0), a wake-up leaves an event counter's transfers
    /// to its own catch-up (`Upc::lazy_drain`) and still does a level counter's: after ten
    /// wake-ups (to tick 6,448) without a retirement, the opcode counter has made no transfer
    /// (main 5c6f164's wake-ups made 9) and the cycles counter its 9 (ticks 6 + 800 k, its
    /// 6,402 cycles from the start at tick 4). A 12,000-instruction span over (100, 20,100]
    /// is then split at the transfers inside it as the hardware counts (one hands 2^13 to
    /// the SRAM counter), the same with or without the wake-ups.
    #[test]
    fn wakeups_leave_event_counters_transfers_to_their_catch_up() {
        use machine::cpu::op::Op;
        use machine::probe::Origin;
        let chain = Chain {
            cores: 1,
            slices: 1,
            period: 400,
            x2: 2,
        };
        let span = Observation::Retire {
            proc: 0,
            t: 20_100,
            from: 100,
            op: Op::ALL[0],
            n: 12_000,
            who: Origin::default(),
        };
        let mut sig = Signals::default();
        let mut runs = Vec::new();
        for wakeups in [true, false] {
            let mut u = Upc::new(chain.clone(), 1, 14, 10);
            u.configure(0, 0, cfg(Group::Opcode, events::op::ALL), 0);
            u.configure(0, 4, cfg(Group::A2, a2::CYCLES), 0);
            u.command(0, true);
            assert!(!u.irq_any);
            if wakeups {
                // The plan's one wake-up per frame, at its last packet (x2 cycle 400 k + 35).
                let mut cycle = u.wakes().unwrap().1;
                for _ in 0..10 {
                    cycle = u.wake(cycle, cycle * 2, &mut sig).unwrap();
                }
                assert_eq!(u.wakes, 10);
                assert_eq!(u.units[0].counters[0].transfers, 0);
                assert_eq!(u.units[0].counters[4].transfers, 9);
                assert_eq!(u.units[0].counters[4].exact, 6_402);
            }
            u.observe(&span, &mut sig);
            let c = &u.units[0].counters[0];
            // Transfers at 2 + 800 k (offset 1 x2 cycle) up to 20,100: 26 of them. The j-th
            // event is at 100 + ceil(5 j / 3): 8,580 before the one at 14,402, which hands
            // 2^13 over; the first count is dated on the last event before 802 (the 420th,
            // at 800).
            assert_eq!(c.transfers, 26);
            assert_eq!(u.c.sram[c.sram], 1 << 13);
            assert_eq!(c.value, 12_000 - (1 << 13));
            assert_eq!((c.exact, c.lost, c.first), (12_000, 0, Some(800)));
            runs.push((c.value, u.c.sram[c.sram], c.transfers, c.first));
            u.finish_at(30_000);
            let c = &u.units[0].counters[0];
            assert_eq!(u.counted(c.sram), 12_000);
        }
        assert_eq!(runs[0], runs[1]);
    }

    /// A miss's wait, reported when it is served, is counted as the hardware counts it, one
    /// per cycle (`count_cycles`): 5 rounds of 4 threads each reporting a 20,000-cycle wait
    /// at the same tick (25 frames each) lose nothing in a 14-bit counter, where adding each
    /// wait at once wrapped it (20,000 > 2^14); the local counter holds no more than the
    /// hardware's would, and the 64-bit count is their sum. An 800-cycle wait, within one
    /// frame, is counted as it was.
    #[test]
    fn long_miss_waits_lose_no_count() {
        use machine::bgq::events::CoreEvent;
        use machine::probe::Origin;
        let chain = Chain {
            cores: 1,
            slices: 1,
            period: 400,
            x2: 2,
        };
        let mut u = Upc::new(chain, 1, 14, 10);
        u.configure(0, 0, cfg(Group::A2, a2::DATA_MISS_CYC), 0);
        u.command(0, true);
        let mut sig = Signals::default();
        let mut t = 0;
        for round in 1..=5u64 {
            t = round * 25_000;
            for ctx in 0..4 {
                let o = Observation::CoreEvent {
                    who: Origin {
                        context: ctx,
                        ..Default::default()
                    },
                    t,
                    event: CoreEvent::DataMissCycles,
                    n: 20_000,
                };
                u.observe(&o, &mut sig);
            }
            // What the hardware keeps at most: below the top bit after the last transfer,
            // plus 4 threads' cycles since (one frame: 800 cycles each).
            let c = &u.units[0].counters[0];
            assert_eq!(c.lost, 0, "round {round}");
            assert!(
                c.value < (1 << 13) + 4 * 800,
                "round {round}: local {}",
                c.value
            );
        }
        let o = Observation::CoreEvent {
            who: Origin::default(),
            t: t + 1_000,
            event: CoreEvent::DataMissCycles,
            n: 800,
        };
        u.observe(&o, &mut sig);
        u.finish_at(t + 2_000);
        let c = &u.units[0].counters[0];
        assert_eq!(c.lost, 0);
        assert_eq!(c.exact, 5 * 4 * 20_000 + 800);
        assert_eq!(u.counted(c.sram), c.exact);
    }
}
