//! Triggers: the count-enable circuits (seed 000, 4.4.2, Fig. 4.6) and what they decide. A
//! counter or the SRAM counts an event only while its enable holds: the master enables (GPCE,
//! SRAMCE), the mode register's enable bits over the PhaseID/address/command comparators and
//! the send/receive masks. Their outputs are cached on the card and recomputed here when a
//! register or a latched packet changes, so a handler reads one flag per event.

use super::*;

impl Card {
    #[inline(never)]
    pub(super) fn refresh_for_packet(&mut self) {
        self.refresh()
    }

    /// Re-evaluates the shared comparators and every count-enable circuit.
    pub(super) fn refresh(&mut self) {
        // Close the pipeline interval under the enables that held during it. Pipeline
        // counters that may interrupt are settled eagerly, so no interrupt is raised here.
        self.settle(&mut Signals::default());
        self.latency_hooks = self.gpc.iter().any(|g| {
            matches!(
                g.mode.event,
                EV_LAST_LATENCY | EV_OWNERSHIP | EV_OWNERSHIP_CANCELLED
            )
        });
        self.edge_counters = 0;
        for (i, g) in self.gpc.iter().enumerate() {
            self.edge_counters |= (g.mode.edges as u8) << i;
        }
        self.ev_counters = [0; 16];
        self.estimating = self.estimators_cfg
            || self
                .gpc
                .iter()
                .any(|g| matches!(g.mode.event, EV_INVAL_HITS | EV_INVAL_MISSES));
        self.estimated |= self.estimating && self.active();
        if !self.regs.gpce && !self.regs.sramce {
            // Both master enables off (4.4.6): nothing counts; skip the comparators.
            self.gpc_on = [false; 4];
            self.sram_on = false;
            self.sram_dir_only = false;
            self.ev_mask = 0;
            self.cycles_on = false;
            self.ps_eager = false;
            self.lazy_always = 0;
            self.gpc_sens = 0;
            self.sram_sens = false;
            return;
        }
        // Bits 9..2 minus the PW pair: AW, CW and the masks depend on the latched packet.
        let sens = |bits: u32| bits & 0b11_0011_1100 != 0;
        self.gpc_sens = 0;
        for (i, g) in self.gpc.iter().enumerate() {
            if self.regs.gpce && g.mode.enable && sens(g.mode.enable_bits) {
                self.gpc_sens |= 1 << i;
            }
        }
        self.sram_sens = self.regs.sramce && sens(self.smode.enable_bits);
        self.cmp = Compare::new(&self.regs, &self.latch);
        for i in 0..4 {
            let m = &self.gpc[i].mode;
            self.gpc_on[i] = self.regs.gpce && m.enable && enabled(m.enable_bits, &self.cmp);
        }
        self.sram_on = self.regs.sramce && enabled(self.smode.enable_bits, &self.cmp);
        // Without the AW and CW terms the SRAM's enable depends on the packet's direction
        // only (PW changes only through `set_reg`, which refreshes).
        let sb = self.smode.enable_bits;
        self.sram_dir_only = sb & (1 << 5 | 1 << 3) == 0;
        if self.sram_dir_only {
            for (d, dir) in [Dir::None, Dir::Sending, Dir::Receiving]
                .into_iter()
                .enumerate()
            {
                let c = Compare {
                    sending: dir == Dir::Sending,
                    receiving: dir == Dir::Receiving,
                    ..self.cmp
                };
                self.sram_dir_on[d] = self.regs.sramce && enabled(sb, &c);
            }
        }
        self.ev_mask = 0;
        self.cycles_on = false;
        self.lazy_always = 0;
        for i in 0..4 {
            let m = &self.gpc[i].mode;
            if self.gpc_on[i] {
                self.ev_mask |= 1 << m.event;
                self.ev_counters[m.event as usize] |= 1 << i;
                if m.event == EV_ALWAYS && !m.edges && !m.interrupt {
                    self.lazy_always |= 1 << i;
                } else if m.event != EV_PIPELINE {
                    // (pipeline events are counted by `settle`, not per interval)
                    self.cycles_on |= !m.edges;
                }
            }
        }
        self.gpc_cycles_on = self.cycles_on;
        self.cycles_on |= self.sram_extends();
        if self.sram_dir_only {
            // What `latch_packet` sets `cycles_on` to after a packet in each direction.
            let ext = self.sram_on_extends();
            for d in 0..3 {
                self.sram_dir_cycles[d] = self.gpc_cycles_on || (self.sram_dir_on[d] && ext);
            }
        }
        self.ps_eager = (0..4).any(|i| {
            self.gpc_on[i] && self.gpc[i].mode.event == EV_PIPELINE && self.gpc[i].mode.interrupt
        });
    }

    /// See `NumachineMonitor::pipeline_before`: depends on the registers only.
    pub(super) fn pipeline_before(&self) -> u32 {
        if !self.regs.gpce {
            return 0;
        }
        let mut k = 0;
        for g in &self.gpc {
            let m = &g.mode;
            if !m.enable || m.event != EV_PIPELINE {
                continue;
            }
            if m.interrupt {
                return kind::ALL;
            }
            if m.enable_bits & 0b11_0011_1100 != 0 {
                k |= kind::PACKETS;
            }
            if m.enable_bits & 0b00_1000_0000 != 0 {
                k |= kind::PHASE;
            }
        }
        k
    }

    /// The SRAM extends a count every cycle (event 1 counting cycles).
    pub(super) fn sram_extends(&self) -> bool {
        self.sram_on && self.sram_on_extends()
    }

    /// The SRAM's mode extends a count every cycle while its enable holds.
    fn sram_on_extends(&self) -> bool {
        self.smode.event == sram::SEV_ALWAYS && !self.smode.edges
    }

    pub(super) fn active(&self) -> bool {
        self.regs.gpce || self.regs.sramce
    }

    /// The card needs every L2 access (depends on the registers only, like `interest`): for
    /// the estimators, the SRAM's L2 events, or to integrate counters counting cycles high
    /// (which may interrupt) at each access rather than at the next packet.
    pub(super) fn needs_l2_accesses(&self) -> bool {
        if !self.active() {
            return false;
        }
        let sram_l2 = self.regs.sramce
            && (sram::SEV_L2_ACCESS..=sram::SEV_L2_MISS).contains(&self.smode.event);
        let sram_cycles =
            self.regs.sramce && self.smode.event == sram::SEV_ALWAYS && !self.smode.edges;
        let gpc_cycles = self.regs.gpce
            && self.gpc.iter().any(|g| {
                let m = &g.mode;
                // (count-always without an interrupt is counted lazily)
                let lazy = m.event == EV_ALWAYS && !m.interrupt;
                m.enable && !m.edges && m.event != EV_PIPELINE && !lazy
            });
        self.estimating || sram_l2 || sram_cycles || gpc_cycles
    }

    /// Is event `ev` high now (for counters counting cycles)?
    pub(super) fn level(&self, ev: u8) -> bool {
        let o = self.out;
        match ev {
            EV_ALWAYS => true,
            EV_INTERRUPT => self.irq_level,
            EV_READ => o.is_some_and(|o| o.cmd == Cmd::Read),
            EV_READ_EX => o.is_some_and(|o| o.cmd == Cmd::ReadEx),
            EV_READ_ANY => o.is_some_and(|o| matches!(o.cmd, Cmd::Read | Cmd::ReadEx)),
            EV_OWNERSHIP | EV_OWNERSHIP_CANCELLED => o.is_some_and(|o| o.cmd == Cmd::Upgrade),
            EV_NACK_CYCLES => o.is_some_and(|o| o.nacked),
            EV_LAST_LATENCY => o.is_some(),
            EV_INVAL_MISSES => o.is_some_and(|o| o.inv_miss),
            _ => false,
        }
    }

    #[inline(always)]
    pub(super) fn latch_packet(&mut self, ar: u64, cr: u16, dir: Dir) {
        self.latch.ar = ar;
        self.latch.cr = cr;
        self.latch.dir = dir;
        if self.gpc_sens != 0 {
            self.refresh_for_packet();
        } else if self.sram_sens {
            // Only the SRAM's circuit depends on the packet: re-evaluate it alone.
            if self.sram_dir_only {
                self.sram_on = self.sram_dir_on[dir as usize];
                self.cycles_on = self.sram_dir_cycles[dir as usize];
            } else {
                self.cmp = Compare::new(&self.regs, &self.latch);
                self.sram_on = self.regs.sramce && enabled(self.smode.enable_bits, &self.cmp);
                self.cycles_on = self.gpc_cycles_on || self.sram_extends();
            }
        }
    }

    /// Some counter of this card counts event D now.
    pub(super) fn counts_bus_requests(&self) -> bool {
        self.regs.gpce
            && self
                .gpc
                .iter()
                .any(|g| g.mode.enable && g.mode.event == EV_BUS_REQUEST)
    }
}
