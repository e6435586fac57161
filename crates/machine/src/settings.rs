//! Settings that a probe may change (`probe::Action::Set`): a registry of named values that
//! their owners expose, with the range they accept and the latency of a change.
//!
//! An owner (a memory system, a memory controller's buffer: issue 16's watermark and
//! read-ahead enable) registers each setting once, when the machine is built
//! (`MemorySystem::register_settings`), keeps the returned `SettingId`, and reads the value
//! where it uses it (`Settings::get`, an array index: nothing on any path that does not use
//! a setting). A probe finds a setting by name (`Settings::id`) and asks for a new value; the
//! machine applies it the setting's latency later, through the event queue, so every change
//! takes effect at a simulated time that does not depend on the host. The ground truth counts
//! the writes per setting (`truth::Acted`).

use engine::{Clocks, Tick};

/// A registered setting's index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SettingId(pub u32);

/// One setting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    /// Dotted name, owner first (`"memctl.0.watermark"`).
    pub name: String,
    /// What it does, for listings.
    pub doc: &'static str,
    pub min: u64,
    pub max: u64,
    pub value: u64,
    /// Latency of a change, in cycles of the named clock, and in ticks.
    pub latency_cycles: u64,
    pub clock: &'static str,
    pub latency_ticks: Tick,
}

/// The machine's settings.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    list: Vec<Setting>,
}

/// How a setting is declared by its owner.
#[derive(Clone, Debug)]
pub struct Declare<'a> {
    pub name: &'a str,
    pub doc: &'static str,
    pub value: u64,
    pub min: u64,
    pub max: u64,
    pub latency_cycles: u64,
    pub clock: &'static str,
}

impl Settings {
    /// Registers a setting; a repeated name, an unknown clock or a value outside its range is
    /// an error naming the setting.
    pub fn register(&mut self, clocks: &Clocks, d: Declare) -> Result<SettingId, String> {
        if self.id(d.name).is_some() {
            return Err(format!("setting {}: registered twice", d.name));
        }
        let clock = clocks
            .get(d.clock)
            .ok_or_else(|| format!("setting {}: unknown clock {:?}", d.name, d.clock))?;
        if d.min > d.max || !(d.min..=d.max).contains(&d.value) {
            return Err(format!(
                "setting {}: value {} outside {}..={}",
                d.name, d.value, d.min, d.max
            ));
        }
        self.list.push(Setting {
            name: d.name.to_string(),
            doc: d.doc,
            min: d.min,
            max: d.max,
            value: d.value,
            latency_cycles: d.latency_cycles,
            clock: d.clock,
            latency_ticks: d.latency_cycles * clock.period,
        });
        Ok(SettingId(self.list.len() as u32 - 1))
    }
    /// The setting called `name`.
    pub fn id(&self, name: &str) -> Option<SettingId> {
        self.list
            .iter()
            .position(|s| s.name == name)
            .map(|i| SettingId(i as u32))
    }
    /// The current value (owners read it where they use it).
    #[inline]
    pub fn get(&self, id: SettingId) -> u64 {
        self.list[id.0 as usize].value
    }
    pub fn setting(&self, id: SettingId) -> Option<&Setting> {
        self.list.get(id.0 as usize)
    }
    pub fn list(&self) -> &[Setting] {
        &self.list
    }
    /// Checks a requested change: `Err` says why it is refused.
    pub fn check(&self, id: SettingId, value: u64) -> Result<Tick, String> {
        let s = self
            .setting(id)
            .ok_or_else(|| format!("no setting number {}", id.0))?;
        if !(s.min..=s.max).contains(&value) {
            return Err(format!(
                "setting {}: {value} outside {}..={}",
                s.name, s.min, s.max
            ));
        }
        Ok(s.latency_ticks)
    }
    /// Applies a change (at the time the machine decided).
    pub(crate) fn apply(&mut self, id: SettingId, value: u64) {
        self.list[id.0 as usize].value = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn register_find_check_apply() {
        let clocks = Clocks::new(&[("cpu", 150_000_000), ("system", 50_000_000)]).unwrap();
        let mut s = Settings::default();
        let d = Declare {
            name: "memctl.0.watermark",
            doc: "words buffered before writes get priority",
            value: 16,
            min: 1,
            max: 32,
            latency_cycles: 2,
            clock: "system",
        };
        let id = s.register(&clocks, d.clone()).unwrap();
        assert_eq!(s.id("memctl.0.watermark"), Some(id));
        assert_eq!(s.get(id), 16);
        let sys = clocks.get("system").unwrap().period;
        assert_eq!(s.check(id, 32), Ok(2 * sys));
        assert!(s.check(id, 33).unwrap_err().contains("outside 1..=32"));
        assert!(s
            .register(&clocks, d.clone())
            .unwrap_err()
            .contains("twice"));
        let bad = Declare {
            name: "x",
            clock: "nope",
            ..d
        };
        assert!(s
            .register(&clocks, bad)
            .unwrap_err()
            .contains("unknown clock"));
        s.apply(id, 8);
        assert_eq!(s.get(id), 8);
    }
}
