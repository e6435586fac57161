//! The POWER2 monitor as a plug-in: `--monitor power2` (group 0 of every unit, all states) or
//! `--monitor FILE.toml` (`monitor = "power2"`, examples in `docs/power2/`).

use super::{config, regs, report, Power2Monitor, Setup};
use crate::plugin::{Entry, Error, Monitor, Shared, StudyArgs};
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
}

impl Plugin {
    fn setup(&self) -> Setup {
        self.setup.unwrap_or_else(config::default_setup)
    }
}

impl Monitor for Plugin {
    fn name(&self) -> &'static str {
        NAME
    }

    fn configure_toml(&mut self, text: &str, source: &str) -> Result<(), Error> {
        self.setup = Some(config::compile(text, source).map_err(Error::input)?);
        Ok(())
    }

    fn attach(&mut self, m: &mut Machine) -> Result<(), Error> {
        let mon = Power2Monitor::new(&m.state().preset, self.setup()).map_err(Error::input)?;
        let (probe, handle) = Shared::new(mon);
        m.attach(Box::new(probe));
        self.mon = Some(handle);
        Ok(())
    }

    fn json(&self, m: &Machine) -> Option<Value> {
        let mon = self.mon.as_ref()?;
        Some(report::json(m.state(), &mon.borrow()))
    }

    /// The typed section rendered as text (until the command line renders sections itself).
    fn text(&self, m: &Machine, _section: &Value, _top: usize) -> String {
        let Some(mon) = &self.mon else {
            return String::new();
        };
        let r = ::report::model::Report {
            sections: vec![report::section(m.state(), &mon.borrow())],
        };
        ::report::render::text::render(&r)
    }

    fn csv(&self, m: &Machine, _section: &Value) -> Vec<(String, String)> {
        let Some(mon) = &self.mon else {
            return Vec::new();
        };
        report::section(m.state(), &mon.borrow())
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
