//! Handlers: the increment rules. What each observation does to the counters, the SRAM, the
//! latency timer, the estimators and the response/miss-type registers once the triggers allow
//! it (seed 000, Tables 4.5-4.7): pulses and intervals of the Table 4.5 events, SRAM addresses
//! of Table 4.7, overflow interrupts; the register accesses a program makes (`read_word`,
//! `write_word`); and what a card with both master enables off keeps (`idle`).

use super::*;

impl Card {
    #[inline(always)]
    pub(super) fn bump(&mut self, i: usize, n: u64, sig: &mut Signals) {
        if self.gpc[i].counter.add(n) > 0 {
            self.gpc_overflow(i, sig);
        }
    }

    #[cold]
    #[inline(never)]
    pub(super) fn gpc_overflow(&mut self, i: usize, sig: &mut Signals) {
        self.isr |= 1 << i;
        if self.gpc[i].mode.interrupt {
            self.raise_irq(sig);
            self.interrupts_raised += 1;
            sig.raise(self.proc, VECTOR_BASE + i as u32);
        }
    }

    /// The interrupt request line rises (GPC event 3's low-to-high transition).
    pub(super) fn raise_irq(&mut self, sig: &mut Signals) {
        if !self.irq_level {
            self.irq_level = true;
            self.pulse(EV_INTERRUPT, 1, 0, sig);
        }
    }

    pub(super) fn sram_add(&mut self, a: u16, n: u32, sig: &mut Signals) {
        if self.sram.add(a, n) {
            self.isr |= 1 << 4;
            if self.smode.interrupt {
                self.raise_irq(sig);
                self.interrupts_raised += 1;
                sig.raise(self.proc, VECTOR_BASE + 4);
            }
        }
    }

    pub(super) fn inputs(&self, latency: u16) -> AddrInputs {
        AddrInputs {
            pr: self.latch.pr,
            ar: self.latch.ar,
            rsr: self.rsr,
            mtr: self.mtr,
            latency,
            l2_index: 0,
            ifetch: false,
        }
    }

    /// Integrates the interval since the last observation up to `t`.
    #[inline(always)]
    pub(super) fn advance(&mut self, t: Tick, p: &Params, sig: &mut Signals) {
        if t <= self.last_t {
            return;
        }
        if !self.cycles_on {
            self.last_t = t;
            return;
        }
        self.integrate(t, p, sig)
    }

    /// `advance` when some counter counts cycles high.
    #[inline(never)]
    pub(super) fn integrate(&mut self, t: Tick, p: &Params, sig: &mut Signals) {
        let prev = self.last_t;
        let e = p.sysdiv.div(t) - p.sysdiv.div(prev);
        self.last_t = t;
        if e == 0 {
            return;
        }
        // Event 3's line may rise inside this interval, at the edge where a counter counting
        // cycles wraps: it is high for the edges after that one (the counter's value past the
        // wrap), not for the whole interval. So event 3 is counted after the other counters.
        let irq_was = self.irq_level;
        let mut irq_edges = 0;
        let mut irq_counters = 0u8;
        for i in 0..4 {
            if !self.gpc_on[i] || self.gpc[i].mode.edges || self.lazy_always & (1 << i) != 0 {
                continue;
            }
            let ev = self.gpc[i].mode.event;
            if ev == EV_INTERRUPT {
                irq_counters |= 1 << i;
                continue;
            }
            if ev == EV_BUS_REQUEST {
                // The request line falls at the grant, between observations.
                let (a, b) = (prev.max(self.breq_from), t.min(self.breq_until));
                if b > a {
                    self.bump(i, p.sysdiv.div(b) - p.sysdiv.div(a), sig);
                }
                continue;
            }
            if self.level(ev) {
                if matches!(ev, EV_OWNERSHIP | EV_OWNERSHIP_CANCELLED) {
                    self.gpc[i].tentative += e;
                } else {
                    self.bump(i, e, sig);
                    if !irq_was && self.irq_level && irq_edges == 0 {
                        // The counter wrapped `value` edges before `t` (value < e).
                        irq_edges = self.gpc[i].counter.get().min(e);
                    }
                }
            }
        }
        while irq_counters != 0 {
            let i = irq_counters.trailing_zeros() as usize;
            irq_counters &= irq_counters - 1;
            let n = if irq_was { e } else { irq_edges };
            if n > 0 {
                self.bump(i, n, sig);
            }
        }
        if self.sram_on && self.smode.event == sram::SEV_ALWAYS && !self.smode.edges {
            let a = sram::address(&self.smode, self.split_id, &self.inputs(0));
            self.sram_add(a, e.min(u32::MAX as u64) as u32, sig);
        }
    }

    /// A pulse of event `ev`: `edges` transitions or `cycles` cycles high.
    #[inline(always)]
    pub(super) fn pulse(&mut self, ev: u8, edges: u64, cycles: u64, sig: &mut Signals) {
        let m = self.ev_counters[ev as usize & 15];
        if m == 0 {
            return;
        }
        if m & (m - 1) == 0 {
            // One counter (the usual case).
            let i = m.trailing_zeros() as usize;
            let n = if self.edge_counters & m != 0 {
                edges
            } else {
                cycles
            };
            if n != 0 {
                self.bump(i & 3, n, sig);
            }
        } else {
            self.count_pulse(m, edges, cycles, sig);
        }
    }

    /// Counts a pulse in the counters of bit set `m`.
    #[inline(never)]
    pub(super) fn count_pulse(&mut self, mut m: u8, edges: u64, cycles: u64, sig: &mut Signals) {
        while m != 0 {
            let i = m.trailing_zeros() as usize;
            m &= m - 1;
            let n = if self.edge_counters & (1 << i) != 0 {
                edges
            } else {
                cycles
            };
            self.bump(i, n, sig);
        }
    }

    pub(super) fn index(p: &Params, addr: u64) -> u32 {
        ((addr >> p.line_shift) & p.set_mask) as u32
    }

    /// The pipeline-status outputs up to now. Counted lazily: the selected events of an
    /// interval are added when the enables are about to change, before a read, at the end, or
    /// at once when a pipeline counter may interrupt (so the interrupt comes on time).
    #[inline]
    pub(super) fn pipeline(&mut self, cycles: &[u64; 16], restarts: u64, sig: &mut Signals) {
        self.cur_ps = ps_stream(cycles, restarts);
        if self.ps_eager {
            self.settle(sig);
        }
    }

    pub(super) fn settle(&mut self, sig: &mut Signals) {
        if self.lazy_always != 0 {
            let e = self.last_t / self.sys - self.always_since / self.sys;
            for i in 0..4 {
                if self.lazy_always & (1 << i) != 0 && e > 0 {
                    self.bump(i, e, sig);
                }
            }
        }
        self.always_since = self.last_t;
        if self.ev_mask & (1 << EV_PIPELINE) != 0 {
            for i in 0..4 {
                if self.gpc_on[i] && self.gpc[i].mode.event == EV_PIPELINE {
                    let mut m = self.gpc[i].mode.ps_mask;
                    let mut n = 0;
                    while m != 0 {
                        let k = m.trailing_zeros() as usize;
                        n += self.cur_ps[k] - self.last_ps[k];
                        m &= m - 1;
                    }
                    if self.gpc[i].pipeline(n) > 0 {
                        self.gpc_overflow(i, sig);
                    }
                }
            }
        }
        self.last_ps = self.cur_ps;
    }

    #[inline(never)]
    pub(super) fn on_l2_access(&mut self, o: &Observation, p: &Params, sig: &mut Signals) {
        if let Observation::L2Access {
            t,
            addr,
            index,
            write,
            ifetch,
            hit,
            index_invalid,
            ..
        } = *o
        {
            self.advance(t, p, sig);
            self.l2_access(addr, index, write, ifetch, hit, index_invalid, sig)
        }
    }

    #[inline(never)]
    pub(super) fn on_issue(&mut self, o: &Observation, p: &Params, sig: &mut Signals) {
        if let Observation::TxIssue {
            t, cmd, addr, home, ..
        } = *o
        {
            self.issue(t, cmd, NumachineMonitor::ar(addr, home), p, sig)
        }
    }

    #[inline(never)]
    pub(super) fn on_inbound(&mut self, o: &Observation, p: &Params, sig: &mut Signals) {
        if let Observation::Inbound {
            t, kind, addr, hit, ..
        } = *o
        {
            self.inbound(t, kind, addr, hit, p, sig)
        }
    }

    /// A PhaseID write.
    #[inline(never)]
    pub(super) fn phase(&mut self, t: Tick, phase: u16, p: &Params, sig: &mut Signals) {
        self.advance(t, p, sig);
        self.set_reg(Reg::Pr, phase as u32);
    }

    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn l2_access(
        &mut self,
        addr: u64,
        index: u32,
        write: bool,
        ifetch: bool,
        hit: bool,
        index_invalid: bool,
        sig: &mut Signals,
    ) {
        if self.estimating {
            self.inval_hit.access(index);
            if !hit {
                self.inval_miss.l2_miss(index, index_invalid);
            }
        }
        let ev = self.smode.event;
        if !self.regs.sramce || !(sram::SEV_L2_ACCESS..=sram::SEV_L2_MISS).contains(&ev) {
            return;
        }
        self.l2_sram_count(addr, index, write, ifetch, hit, sig)
    }

    /// The SRAM part of an L2 access (SRAM events 2-5).
    #[inline(never)]
    pub(super) fn l2_sram(&mut self, o: &Observation, sig: &mut Signals) {
        if let Observation::L2Access {
            addr,
            index,
            write,
            ifetch,
            hit,
            ..
        } = *o
        {
            self.l2_sram_count(addr, index, write, ifetch, hit, sig)
        }
    }

    #[inline(always)]
    pub(super) fn l2_sram_count(
        &mut self,
        addr: u64,
        index: u32,
        write: bool,
        ifetch: bool,
        hit: bool,
        sig: &mut Signals,
    ) {
        let counted = match self.smode.event {
            sram::SEV_L2_ACCESS => true,
            sram::SEV_L2_READ => !write,
            sram::SEV_L2_WRITE => write,
            _ => !hit,
        };
        if !counted {
            return;
        }
        let x = AddrInputs {
            l2_index: index,
            ifetch,
            ..self.inputs(0)
        };
        let a = sram::address(&self.smode, self.split_id, &x);
        self.exact_sram(a);
        // The secondary-cache index buffer presents the probe's address to the AW comparator.
        let l = Latch {
            ar: addr & 0xFF_FFFF_FFFF,
            ..self.latch
        };
        if enabled(self.smode.enable_bits, &Compare::new(&self.regs, &l)) {
            self.sram_add(a, 1, sig);
        }
    }

    /// One event into the SRAM's exact shadow (`Card::sram_exact`) at address `a`.
    #[inline(always)]
    pub(super) fn exact_sram(&mut self, a: u16) {
        if self.sram_exact.is_empty() {
            self.sram_exact = vec![0; 1 << 16];
        }
        self.sram_exact[a as usize] += 1;
    }

    #[inline(always)]
    pub(super) fn issue(&mut self, t: Tick, cmd: Cmd, ar: u64, p: &Params, sig: &mut Signals) {
        self.advance(t, p, sig);
        self.latch_packet(ar, command::request(cmd), Dir::Sending);
        let index = Self::index(p, ar & 0xF_FFFF_FFFF);
        let inv_miss = match cmd {
            _ if !self.estimating => false,
            Cmd::Read | Cmd::ReadEx => self.inval_miss.read(index),
            Cmd::UncachedRead => {
                self.inval_miss.uncached_read();
                false
            }
            _ => false,
        };
        self.out = Some(Out {
            cmd,
            nacked: false,
            inv_miss,
        });
        if !self.active() {
            return;
        }
        if self.latency_hooks {
            for i in 0..4 {
                let ev = self.gpc[i].mode.event;
                if ev == EV_LAST_LATENCY {
                    self.gpc[i].counter.preload(0); // reset at every request (4.4.4)
                }
                if matches!(ev, EV_OWNERSHIP | EV_OWNERSHIP_CANCELLED) {
                    self.gpc[i].tentative =
                        (cmd == Cmd::Upgrade && self.gpc_on[i] && self.gpc[i].mode.edges) as u64;
                }
            }
        }
        // Only the request's events some counter counts (one mask test for the rest).
        const REQ: u16 = 1 << EV_READ | 1 << EV_READ_EX | 1 << EV_READ_ANY | 1 << EV_INVAL_MISSES;
        if self.ev_mask & REQ != 0 {
            let (r, x) = (cmd == Cmd::Read, cmd == Cmd::ReadEx);
            self.pulse(EV_READ, r as u64, 0, sig);
            self.pulse(EV_READ_EX, x as u64, 0, sig);
            self.pulse(EV_READ_ANY, (r || x) as u64, 0, sig);
            self.pulse(EV_INVAL_MISSES, inv_miss as u64, 0, sig);
        }
        if self.ev_mask & 1 << EV_BUS_ACTIVITY != 0 {
            // A write-back carries the dirty line (line/8 doublewords); an uncached write
            // one word.
            let data = match cmd {
                Cmd::Writeback => p.data_cycles,
                Cmd::UncachedWrite => 1,
                _ => 0,
            };
            self.pulse(EV_BUS_ACTIVITY, 1, 1 + data, sig);
        }
        // SRAM with the masks enabled counts when the enable holds at the request too (and
        // then with the timer at 0 and the previous RSR/MTR: the seed's warning, 4.4.5).
        if self.sram_on
            && self.smode.event == sram::SEV_LINE_REQUESTS
            && self.smode.enable_bits & 0x200 != 0
            && matches!(cmd, Cmd::Read | Cmd::ReadEx | Cmd::Upgrade)
        {
            let a = sram::address(&self.smode, self.split_id, &self.inputs(0));
            self.sram_add(a, 1, sig);
        }
    }

    /// The card asked for its bus at `t`; the grant comes at `grant` (GPC event D). The
    /// request line is high from the request to the grant; a request made while it is high
    /// (the agent has more to send) extends it, so an occurrence is a request made while the
    /// line is low. A request granted at once (presets without bus arbitration) is a pulse
    /// shorter than a monitor cycle: one occurrence, no cycles.
    #[inline(never)]
    pub(super) fn bus_request(&mut self, t: Tick, grant: Tick, p: &Params, sig: &mut Signals) {
        self.advance(t, p, sig);
        let low = t >= self.breq_until;
        let mut cycles = 0;
        if grant > t {
            // Newly high time before the last integration point (a request reported after
            // the card's other observations moved past it) is counted now; the rest when the
            // card integrates up to later observations.
            let lo = t.max(self.breq_until);
            let hi = grant.min(self.last_t);
            if hi > lo {
                cycles = p.sysdiv.div(hi) - p.sysdiv.div(lo);
            }
            if low {
                self.breq_from = t;
            }
            self.breq_until = self.breq_until.max(grant);
        }
        self.pulse(EV_BUS_REQUEST, low as u64, cycles, sig);
    }

    #[inline(never)]
    pub(super) fn nack(&mut self, t: Tick, p: &Params, sig: &mut Signals) {
        self.advance(t, p, sig);
        let ar = self.latch.ar;
        self.latch_packet(ar, command::NACK | command::RESPONSE, Dir::Receiving);
        let first = match self.out.as_mut() {
            Some(o) if !o.nacked => {
                o.nacked = true;
                true
            }
            _ => false,
        };
        if !self.active() {
            return;
        }
        self.pulse(EV_NACK_CYCLES, first as u64, 0, sig);
        self.pulse(EV_NACK_RETRIES, 1, 1, sig);
        self.pulse(EV_BUS_ACTIVITY, 0, 1, sig);
    }

    /// A `TxDone` (passed whole: its many fields are read where needed).
    #[inline(never)]
    pub(super) fn done(&mut self, o: &Observation, p: &Params, sig: &mut Signals) {
        let Observation::TxDone {
            t,
            cmd,
            addr,
            issued,
            outcome,
            miss_type: mt,
            resp,
            home,
            ..
        } = *o
        else {
            return;
        };
        let ar = NumachineMonitor::ar(addr, home);
        if self.estimating {
            self.done_estimators(o, p, sig);
        }
        self.advance(t, p, sig);
        let cr = command::response(cmd, outcome);
        self.latch_packet(ar, cr, Dir::Receiving);
        self.out = None;
        let line = matches!(cmd, Cmd::Read | Cmd::ReadEx | Cmd::Upgrade);
        let rsr = resp.rsr(cmd != Cmd::Read);
        if line {
            self.rsr = rsr;
            self.mtr = mt as u8;
        }
        if !self.active() {
            return;
        }
        if self.latency_hooks {
            self.done_tentative(cmd, outcome, sig);
        }
        if self.ev_mask & 1 << EV_BUS_ACTIVITY != 0 {
            let data = cr & command::DATA != 0;
            self.pulse(
                EV_BUS_ACTIVITY,
                0,
                1 + if data { p.data_cycles } else { 0 },
                sig,
            );
        }
        if line {
            let cycles = p.sysdiv.div(t) - p.sysdiv.div(issued);
            let l = latency::latency12(cycles);
            if l.timed_out {
                self.latency_timeouts += 1;
            }
            self.exact_latency.add(rsr, cycles);
            if self.regs.sramce && self.smode.event == sram::SEV_LINE_REQUESTS {
                let a = sram::address(&self.smode, self.split_id, &self.inputs(l.value));
                self.exact_sram(a);
                if self.sram_on {
                    self.sram_add(a, 1, sig);
                }
            }
        }
        if self.sram_on && self.smode.event == sram::SEV_ALWAYS && self.smode.edges {
            let a = sram::address(&self.smode, self.split_id, &self.inputs(0));
            self.sram_add(a, 1, sig);
        }
    }

    /// The estimators' part of a `TxDone` (Fig. 4.8), before the response is latched.
    #[inline(never)]
    fn done_estimators(&mut self, o: &Observation, p: &Params, sig: &mut Signals) {
        let Observation::TxDone {
            t,
            cmd,
            addr,
            outcome,
            miss_type,
            evicted,
            index_invalid,
            ..
        } = *o
        else {
            return;
        };
        if evicted {
            // The fill's victim became invalid at the same index just before (4.8a's pattern).
            self.line_dropped(t, Self::index(p, addr), p, sig);
        }
        if outcome == Outcome::Cancelled {
            // The R4400 retries the store after a cancelled upgrade: its probe reads the line
            // (invalidated by the competing owner) invalid, then the read-exclusive follows.
            // pmusim's agent re-issues without a new probe, so the probe is supplied here.
            self.inval_miss
                .l2_miss(Self::index(p, addr & 0xF_FFFF_FFFF), index_invalid);
        }
        if matches!(cmd, Cmd::Read | Cmd::ReadEx | Cmd::Upgrade)
            && miss_type == MissType::Invalidation
            && outcome == Outcome::Done
        {
            self.inval_miss.exact_miss();
        }
    }

    /// Events 7 and 8 at a response: the tentative ownership cycles count if the upgrade
    /// succeeded (7) or was cancelled (8).
    #[inline(never)]
    fn done_tentative(&mut self, cmd: Cmd, outcome: Outcome, sig: &mut Signals) {
        for i in 0..4 {
            let ev = self.gpc[i].mode.event;
            if matches!(ev, EV_OWNERSHIP | EV_OWNERSHIP_CANCELLED) {
                let n = std::mem::take(&mut self.gpc[i].tentative);
                let ok = cmd == Cmd::Upgrade
                    && match ev {
                        EV_OWNERSHIP => outcome == Outcome::Done,
                        _ => outcome == Outcome::Cancelled,
                    };
                if ok && n > 0 {
                    self.bump(i, n, sig);
                }
            }
        }
    }

    #[inline(always)]
    pub(super) fn inbound(
        &mut self,
        t: Tick,
        kind: InboundKind,
        addr: u64,
        hit: bool,
        p: &Params,
        sig: &mut Signals,
    ) {
        let estimated = self.estimating && kind != InboundKind::InterventionShared;
        if hit && estimated {
            // The invalidation or exclusive intervention made the valid line invalid, just
            // before the packet is seen here (pmusim's order; 4.8a's pattern).
            self.line_dropped(t, Self::index(p, addr), p, sig);
        }
        self.advance(t, p, sig);
        // Inbound packets carry no home station for the monitor: AR[39..32] = 0.
        self.latch_packet(addr & 0xF_FFFF_FFFF, command::inbound(kind), Dir::Receiving);
        let counted = estimated && self.inval_hit.inbound(t, Self::index(p, addr), hit);
        if !self.active() {
            return;
        }
        if self.ev_mask & 1 << EV_BUS_ACTIVITY != 0 {
            let data = if kind == InboundKind::Invalidate {
                0
            } else {
                p.data_cycles
            };
            self.pulse(EV_BUS_ACTIVITY, 0, 1 + data, sig);
        }
        if counted {
            self.pulse(EV_INVAL_HITS, 1, 1, sig);
        }
    }

    /// A line at `index` became invalid (the invalidation-hit estimator's pattern).
    #[inline(never)]
    pub(super) fn line_dropped(&mut self, t: Tick, index: u32, p: &Params, sig: &mut Signals) {
        if self.inval_hit.dropped(t, index, p.window) && self.active() {
            self.advance(t, p, sig);
            self.pulse(EV_INVAL_HITS, 1, 1, sig);
        }
    }

    pub(super) fn read_word(&mut self, off: u64) -> u32 {
        match off {
            0..=0x3F => Reg::from_word(off / 4)
                .map(|r| self.regs.get(r))
                .unwrap_or(0),
            regs::GPC_BASE..=0x11F => self.gpc[((off - regs::GPC_BASE) / 4) as usize % 4]
                .counter
                .get() as u32,
            regs::GPC_RESET_BASE..=0x13F => self.gpc
                [((off - regs::GPC_RESET_BASE) / 4) as usize % 4]
                .counter
                .read_reset() as u32,
            regs::ISR => {
                self.irq_level = false;
                std::mem::take(&mut self.isr) as u32
            }
            regs::SRAM_OVF_ADDR => self.sram.last_overflow as u32,
            regs::SRAM_BASE..=0x7FFFF => self.sram.words[((off - regs::SRAM_BASE) / 4) as usize],
            _ => 0,
        }
    }

    pub(super) fn write_word(&mut self, off: u64, v: u32, sig: &mut Signals) {
        match off {
            0..=0x3F => {
                if let Ok(r) = Reg::from_word(off / 4) {
                    self.set_reg(r, v);
                }
            }
            regs::GPC_BASE..=0x13F => {
                let i = ((off - regs::GPC_BASE) / 4) as usize % 4;
                self.gpc[i].counter.preload(v as u64);
            }
            regs::ISR => {
                self.isr &= !(v as u8);
                if self.isr == 0 {
                    self.irq_level = false;
                }
            }
            regs::ACCUMULATE if self.sram_on && self.smode.event == sram::SEV_ACCUMULATE => {
                let a = sram::address(&self.smode, self.split_id, &self.inputs(0));
                self.sram_add(a, v, sig);
            }
            regs::SRAM_BASE..=0x7FFFF => {
                self.sram.write(((off - regs::SRAM_BASE) / 4) as u16, v);
            }
            _ => {}
        }
    }

    /// Both master enables off: only the state a later enable needs is kept (the latched
    /// packet, the outstanding request, RSR/MTR, PR). The estimators' tallies, like the
    /// counters, cover the time a master enable is on; the L2 index states they read come
    /// with each observation, so nothing about them is kept here.
    #[cold]
    #[inline(never)]
    pub(super) fn idle(&mut self, o: &Observation) {
        match *o {
            Observation::Pipeline {
                ref cycles,
                restarts,
                ..
            } => {
                self.last_ps = ps_stream(cycles, restarts);
                self.cur_ps = self.last_ps;
            }
            Observation::TxIssue {
                cmd, addr, home, ..
            } => {
                self.latch.ar = NumachineMonitor::ar(addr, home);
                self.latch.cr = command::request(cmd);
                self.latch.dir = Dir::Sending;
                self.out = Some(Out {
                    cmd,
                    nacked: false,
                    inv_miss: false,
                });
            }
            Observation::TxNack { .. } => {
                self.latch.cr = command::NACK | command::RESPONSE;
                self.latch.dir = Dir::Receiving;
                if let Some(o) = self.out.as_mut() {
                    o.nacked = true;
                }
            }
            Observation::TxDone {
                cmd,
                addr,
                home,
                outcome,
                miss_type,
                resp,
                ..
            } => {
                self.latch.ar = NumachineMonitor::ar(addr, home);
                self.latch.cr = command::response(cmd, outcome);
                self.latch.dir = Dir::Receiving;
                self.out = None;
                if matches!(cmd, Cmd::Read | Cmd::ReadEx | Cmd::Upgrade) {
                    self.rsr = resp.rsr(cmd != Cmd::Read);
                    self.mtr = miss_type as u8;
                }
            }
            Observation::Inbound { kind, addr, .. } => {
                self.latch.ar = addr & 0xF_FFFF_FFFF;
                self.latch.cr = command::inbound(kind);
                self.latch.dir = Dir::Receiving;
            }
            Observation::Phase { phase, .. } => {
                self.regs.pr = phase;
                self.latch.pr = phase;
            }
            _ => {}
        }
    }
}
