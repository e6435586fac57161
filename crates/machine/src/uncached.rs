//! Uncached address windows, registered by whoever owns them.
//!
//! An uncached load or store goes to whoever owns its address: the processor card's monitor
//! registers (answered on the card by the probes), other cards' monitors (a system write that
//! crosses to them), or the memory system (a node controller's commands, such as FlashPoint's
//! MAGIC commands; later a memory controller's settings, issue 16). Each owner registers its
//! window here with a name and the cost of one access, and the external agent routes an
//! uncached access by looking its address up instead of testing constants. Addresses in no
//! window go to the memory system, which answers them with its default uncached behaviour.
//!
//! There are a handful of windows and lookups happen only on the uncached path, so the
//! registry is a list scanned in order.

use crate::addr::Addr;
use engine::{Clocks, Tick};

/// Base of each processor's monitor register region (uncached, on the processor card).
pub const MONITOR_BASE: Addr = 0xF0_0000_0000;
/// System writes to other processors' monitors: `+ ((proc + 1) << 24)` for one card, `+ 0`
/// for all (multicast).
pub const MONITOR_REMOTE_BASE: Addr = 0xF8_0000_0000;

/// Who answers an access to a window, which decides the route the agent gives it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// The processor card's own monitor registers: the probes' `mmio` answers, the access
    /// never leaves the card, and it is not a memory transaction (no `TxDone`).
    CardMonitor,
    /// Writes to other cards' monitors (`MONITOR_REMOTE_BASE` addressing): delivered to each
    /// target card as a `MonitorWrite`.
    RemoteMonitor,
    /// The memory system: the access leaves as `ProcMsg::Uncached` and the system's owner of
    /// the window decodes it.
    MemorySystem,
    /// A device a monitor models outside the processor card (the Addies at a memory
    /// controller, issue 16 item 3): the probes' `mmio` answers, as for the card, at the
    /// window's own cost, with offsets from the window's `offset` up (beyond every offset the
    /// card's window can produce, [`DEVICE_OFFSETS`]), so no card address reaches it.
    Device,
}

/// Offsets the probes' `mmio` sees from a [`Owner::Device`] window start at this value or
/// above: the card's window spans fewer bytes, so its offsets are all below.
pub const DEVICE_OFFSETS: u64 = MONITOR_REMOTE_BASE - MONITOR_BASE;

/// Where monitors place their devices' windows (below the card's region); each device names
/// its own base within it (docs/addie.md for the Addies).
pub const DEVICE_BASE: Addr = 0xE0_0000_0000;

/// The cost of one access to a window, in cycles of a named clock (`"cpu"`, `"system"`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cost {
    pub cycles: u64,
    pub clock: &'static str,
}

/// One registered window `[base, base + len)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    pub base: Addr,
    pub len: u64,
    pub owner: Owner,
    /// What the window is, for listings and error messages (`"monitor"`, `"flashpoint.bin"`).
    pub name: &'static str,
    /// Cost of one access as the owner states it. The processor card's windows are charged
    /// exactly this by the agent; a memory system's owner applies its own (possibly
    /// per-command) timing and states here its fixed part.
    pub cost: Cost,
    /// `cost` in ticks, resolved against the machine's clocks at registration.
    pub cost_ticks: Tick,
    /// The offset the probes' `mmio` sees for the window's first byte: 0 for the card's
    /// windows, at least [`DEVICE_OFFSETS`] for a device's.
    pub offset: u64,
}

impl Window {
    #[inline]
    pub fn contains(&self, a: Addr) -> bool {
        a.wrapping_sub(self.base) < self.len
    }
}

/// The machine's registered windows.
#[derive(Clone, Debug, Default)]
pub struct Windows {
    list: Vec<Window>,
}

impl Windows {
    /// Registers `[base, base + len)`; an empty window, an unknown clock or an overlap with a
    /// registered window is an error naming both.
    pub fn register(
        &mut self,
        clocks: &Clocks,
        base: Addr,
        len: u64,
        owner: Owner,
        name: &'static str,
        cost: Cost,
    ) -> Result<(), String> {
        if len == 0 || base.checked_add(len - 1).is_none() {
            return Err(format!(
                "uncached window {name}: {len:#x} bytes at {base:#x} do not fit the address space"
            ));
        }
        let period = clocks
            .get(cost.clock)
            .ok_or_else(|| format!("uncached window {name}: no clock named {}", cost.clock))?
            .period;
        let last = base + (len - 1);
        if let Some(o) = self
            .list
            .iter()
            .find(|w| w.contains(base) || w.contains(last) || (base..=last).contains(&w.base))
        {
            return Err(format!(
                "uncached window {name} ({base:#x}, {len:#x} bytes) overlaps {} ({:#x}, {:#x} bytes)",
                o.name, o.base, o.len
            ));
        }
        self.list.push(Window {
            base,
            len,
            owner,
            name,
            cost,
            cost_ticks: cost.cycles * period,
            offset: 0,
        });
        Ok(())
    }

    /// Registers a device's window (`Owner::Device`): accesses to `[base, base + len)` reach
    /// the probes' `mmio` at offsets `offset..offset + len`, each costing `cost`.
    pub fn register_device(
        &mut self,
        clocks: &Clocks,
        base: Addr,
        len: u64,
        name: &'static str,
        cost: Cost,
        offset: u64,
    ) -> Result<(), String> {
        if offset < DEVICE_OFFSETS {
            return Err(format!(
                "uncached window {name}: device offsets start at {DEVICE_OFFSETS:#x} (card offsets are below), not {offset:#x}"
            ));
        }
        self.register(clocks, base, len, Owner::Device, name, cost)?;
        self.list.last_mut().expect("registered above").offset = offset;
        Ok(())
    }

    /// The window holding `a`, if any.
    #[inline]
    pub fn lookup(&self, a: Addr) -> Option<&Window> {
        self.list.iter().find(|w| w.contains(a))
    }

    /// Every window, in registration order.
    pub fn all(&self) -> &[Window] {
        &self.list
    }
}

/// The processor card's two windows: its own monitor registers, and the system-write window to
/// other cards' monitors (every address from `MONITOR_REMOTE_BASE` up). Each access costs
/// `uncached_cycles` processor cycles (`cpu.uncached_cycles`).
pub fn register_card(w: &mut Windows, clocks: &Clocks, uncached_cycles: u64) -> Result<(), String> {
    let cost = Cost {
        cycles: uncached_cycles,
        clock: "cpu",
    };
    w.register(
        clocks,
        MONITOR_BASE,
        MONITOR_REMOTE_BASE - MONITOR_BASE,
        Owner::CardMonitor,
        "monitor",
        cost,
    )?;
    w.register(
        clocks,
        MONITOR_REMOTE_BASE,
        MONITOR_REMOTE_BASE.wrapping_neg(),
        Owner::RemoteMonitor,
        "monitor.remote",
        cost,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::Clocks;

    fn clocks() -> Clocks {
        Clocks::new(&[("cpu", 150_000_000), ("system", 50_000_000)]).unwrap()
    }

    /// The card's windows route exactly as the old constants did: below `MONITOR_BASE` to the
    /// memory system, `[MONITOR_BASE, MONITOR_REMOTE_BASE)` to the card, everything from
    /// `MONITOR_REMOTE_BASE` to the last address to other cards.
    #[test]
    fn card_windows_split_the_space_like_the_constants() {
        let c = clocks();
        let mut w = Windows::default();
        register_card(&mut w, &c, 10).unwrap();
        let owner = |a: Addr| w.lookup(a).map(|w| w.owner);
        assert_eq!(owner(MONITOR_BASE - 1), None);
        assert_eq!(owner(0), None);
        assert_eq!(owner(MONITOR_BASE), Some(Owner::CardMonitor));
        assert_eq!(owner(MONITOR_REMOTE_BASE - 1), Some(Owner::CardMonitor));
        assert_eq!(owner(MONITOR_REMOTE_BASE), Some(Owner::RemoteMonitor));
        assert_eq!(owner(u64::MAX), Some(Owner::RemoteMonitor));
        // 10 processor cycles at 150 MHz.
        let period = c.get("cpu").unwrap().period;
        assert!(w.all().iter().all(|x| x.cost_ticks == 10 * period));
    }

    /// A device's window answers at its own offsets, beyond every offset of the card's
    /// window; an offset the card could reach is refused.
    #[test]
    fn device_windows_take_offsets_beyond_the_card() {
        let c = clocks();
        let mut w = Windows::default();
        register_card(&mut w, &c, 10).unwrap();
        let cost = Cost {
            cycles: 40,
            clock: "cpu",
        };
        let e = w
            .register_device(&c, DEVICE_BASE, 16, "dev", cost, DEVICE_OFFSETS - 16)
            .unwrap_err();
        assert!(e.contains("dev") && e.contains("device offsets"), "{e}");
        w.register_device(&c, DEVICE_BASE, 16, "dev", cost, DEVICE_OFFSETS + 0x100)
            .unwrap();
        let d = w.lookup(DEVICE_BASE + 8).unwrap();
        assert_eq!(
            (d.owner, d.offset, d.name),
            (Owner::Device, DEVICE_OFFSETS + 0x100, "dev")
        );
        assert_eq!(d.cost_ticks, 40 * c.get("cpu").unwrap().period);
        // The card's largest offset stays below every device offset.
        let card = w.lookup(MONITOR_BASE).unwrap();
        assert!(card.offset + card.len <= DEVICE_OFFSETS);
    }

    #[test]
    fn overlaps_and_unknown_clocks_are_refused_by_name() {
        let c = clocks();
        let mut w = Windows::default();
        let cost = Cost {
            cycles: 4,
            clock: "system",
        };
        w.register(&c, 0x1000, 0x100, Owner::MemorySystem, "a", cost)
            .unwrap();
        let e = w
            .register(&c, 0x10F0, 0x100, Owner::MemorySystem, "b", cost)
            .unwrap_err();
        assert!(e.contains("b") && e.contains("overlaps a"), "{e}");
        let e = w
            .register(&c, 0x0F00, 0x1000, Owner::MemorySystem, "c", cost)
            .unwrap_err();
        assert!(e.contains("overlaps a"), "{e}");
        let e = w
            .register(
                &c,
                0x9000,
                8,
                Owner::MemorySystem,
                "d",
                Cost {
                    cycles: 1,
                    clock: "bus",
                },
            )
            .unwrap_err();
        assert!(e.contains("no clock named bus"), "{e}");
        w.register(&c, 0x1100, 0x100, Owner::MemorySystem, "e", cost)
            .unwrap();
        assert_eq!(w.lookup(0x10FF).map(|x| x.name), Some("a"));
        assert_eq!(w.lookup(0x1100).map(|x| x.name), Some("e"));
        assert_eq!(w.lookup(0x1200), None);
    }
}
