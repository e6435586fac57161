//! Probes shared by the machine's unit tests.

use crate::probe::{Observation, Probe, Signals};
use std::cell::RefCell;
use std::rc::Rc;

/// Records every observation (the default interest: all kinds, `LineState` included).
pub(crate) struct Record(pub Rc<RefCell<Vec<Observation>>>);

impl Probe for Record {
    fn observe(&mut self, o: &Observation, _sig: &mut Signals) {
        self.0.borrow_mut().push(*o);
    }
    fn name(&self) -> &str {
        "record"
    }
}
