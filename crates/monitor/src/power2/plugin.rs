//! The POWER2 monitor as a plug-in: `--monitor power2` (group 0 of every unit, all states) or
//! `--monitor FILE.toml` (`monitor = "power2"`, examples in `docs/power2/`).

use super::events::COUNTERS;
use super::{config, regs, report, Power2Monitor, Setup};
use crate::plugin::{Entry, Error, Monitor, Restrict, Shared, StudyArgs};
use machine::Machine;
use serde_json::Value;
use std::cell::RefCell;
use std::rc::Rc;

/// The monitor's registry name (also the JSON section's key).
pub const NAME: &str = "power2";

pub const ENTRY: Entry = Entry {
    name: NAME,
    description: "POWER2 Performance Monitor: MMCR group selects for FPU/FXU/ICU/SCU, 22 32-bit counters, user/supervisor/marked modes, IMR, SPE bit",
    seed: "seed 003 (POWER2 monitor), issue 15",
    flags: &[],
    study: true,
    new: || Box::new(Plugin::default()),
};

#[derive(Default)]
pub struct Plugin {
    pub(super) setup: Option<Setup>,
    pub(super) mon: Option<Rc<RefCell<Power2Monitor>>>,
    /// `pmusim stat`'s plan (`counting.rs`).
    pub(super) stat: super::counting::Plan,
    /// `--monitor-process NAME --restrict-by WAY`.
    pub(super) restrict: Option<(String, Restrict)>,
    /// With `--restrict-by both`: a second monitor, the configuration without MARKED, its
    /// counters running free and virtualized (`mon` counts the marked process).
    pub(super) vmon: Option<Rc<RefCell<Power2Monitor>>>,
}

impl Plugin {
    fn setup(&self) -> Setup {
        self.setup.unwrap_or_else(config::default_setup)
    }

    /// The process the monitor is restricted to, counted each way asked (after the run).
    fn restricted(&self, m: &Machine) -> Option<super::restrict::Restricted> {
        let (name, by) = self.restrict.as_ref()?;
        let mon = self.mon.as_ref()?.borrow();
        let vmon = self.vmon.as_ref().map(|v| v.borrow());
        let (marked, virt) = match by {
            Restrict::Marking => (Some(&*mon), None),
            Restrict::Virtualization => (None, Some(&*mon)),
            Restrict::Both => (Some(&*mon), vmon.as_deref()),
        };
        super::restrict::measure(m.state(), name, marked, virt)
    }

    /// The monitor's section, with the restricted process's table when there is one.
    fn full_section(&self, m: &Machine, mon: &Power2Monitor) -> ::report::model::Section {
        let mut s = report::section(m.state(), mon);
        if let Some(r) = self.restricted(m) {
            super::restrict::tables(&mut s, &r);
        }
        s
    }
}

impl Monitor for Plugin {
    fn name(&self) -> &'static str {
        NAME
    }
    fn home_presets(&self) -> &'static [&'static str] {
        &["power2"]
    }
    fn studies(&self) -> &'static [&'static str] {
        &["imr", "marking", "marking-matrix"]
    }

    fn configure_toml(&mut self, file: crate::plugin::ConfigFile) -> Result<(), Error> {
        let source = file.source().to_string();
        let v: toml::Table = file
            .deserialize()
            .map_err(|e| Error::input(format!("{source}: {e}")))?;
        self.setup = Some(config::compile_table(&v, &source).map_err(Error::input)?);
        Ok(())
    }

    /// `--monitor-process NAME`: by marking (MSR[PM] and the MMCR's MARKED bit; the
    /// default), by counter virtualization (the 22 counters read by the switch path), or both
    /// side by side in the same run (a second, free-running monitor virtualized).
    fn restrict(&mut self, process: &str, by: Option<Restrict>) -> Result<Restrict, Error> {
        let by = by.unwrap_or(Restrict::Marking);
        self.restrict = Some((process.to_string(), by));
        Ok(by)
    }

    /// Virtualizing: the operating system's switch path reads the 22 counters.
    fn adjust_preset(&mut self, p: &mut machine::Preset) -> Result<(), Error> {
        if let Some((name, by)) = &self.restrict {
            match p.os.as_mut() {
                Some(os) if by.virtualizes() => os.virtual_counters += COUNTERS as u64,
                Some(_) => {}
                None => {
                    return Err(Error::input(format!(
                        "--monitor-process {name}: restricting a monitor to a process needs processes (a multiprogrammed run a+b, --os, or an [os] preset section)"
                    )))
                }
            }
        }
        Ok(())
    }

    fn attach(&mut self, m: &mut Machine) -> Result<(), Error> {
        let mut setup = self.setup();
        let restrict = self.restrict.clone();
        if let Some((_, by)) = &restrict {
            setup.mmcr.0 &= !regs::MARKED;
            if by.marks() {
                setup.mmcr.0 |= regs::MARKED;
            }
        }
        let mut mon = Power2Monitor::new(&m.state().preset, setup).map_err(Error::input)?;
        if let Some((name, by)) = &restrict {
            let v = crate::virt::Virtualizer::named(m, name, COUNTERS, "--monitor-process")?;
            if *by == Restrict::Virtualization {
                mon.virtualize(v);
            } else if *by == Restrict::Both {
                let free = Setup {
                    mmcr: regs::Mmcr(setup.mmcr.0 & !regs::MARKED),
                    ..setup
                };
                let mut vmon = Power2Monitor::new(&m.state().preset, free).map_err(Error::input)?;
                vmon.virtualize(v);
                let (probe, handle) = Shared::new(vmon);
                m.attach(Box::new(probe));
                self.vmon = Some(handle);
            }
        }
        let (probe, handle) = Shared::new(mon);
        m.attach(Box::new(probe));
        self.mon = Some(handle);
        Ok(())
    }

    fn json(&self, m: &Machine) -> Option<Value> {
        let mon = self.mon.as_ref()?;
        let mut v = report::json(m.state(), &mon.borrow());
        if let Some(r) = self.restricted(m) {
            v["process"] = super::restrict::json(&r);
        }
        Some(v)
    }

    /// The typed section rendered as text (until the command line renders sections itself).
    fn text(&self, m: &Machine, _section: &Value, _top: usize) -> String {
        let Some(mon) = &self.mon else {
            return String::new();
        };
        let r = ::report::model::Report {
            sections: vec![self.full_section(m, &mon.borrow())],
        };
        ::report::render::text::render(&r)
    }

    fn csv(&self, m: &Machine, _section: &Value) -> Vec<(String, String)> {
        let Some(mon) = &self.mon else {
            return Vec::new();
        };
        self.full_section(m, &mon.borrow())
            .tables()
            .map(|t| (format!("{}.csv", t.id), ::report::render::csv::table(t)))
            .collect()
    }

    fn decode_register(&self, reg: &str, value: &str) -> Option<Result<String, Error>> {
        Some(regs::decode(reg, value))
    }

    /// `pmusim study power2` (alias `pmusim study imr`): the instruction mix sampled by
    /// cycling the IMR (issue 15 item 5); `pmusim study marking`: the monitor restricted to
    /// one process by marking and by counter virtualization, with their costs (item 2).
    fn study(&mut self, a: &StudyArgs) -> Option<Result<(String, u8), Error>> {
        Some(match a.study.as_str() {
            "marking" => super::marking::study(a),
            "marking-matrix" => super::matrix::study(a),
            _ => super::study::run(a, super::study::PERIOD),
        })
    }

    fn counting(&mut self) -> Option<&mut dyn crate::counting::Counting> {
        Some(self)
    }

    fn describe_config(&self) -> Option<Result<String, Error>> {
        let s = self.setup();
        Some(Ok(format!(
            "{}IMR = {:#06x} (opcode {:#04x}, mask {:#04x})\n",
            s.mmcr.describe(),
            s.imr.word(),
            s.imr.opcode,
            s.imr.mask
        )))
    }
}
