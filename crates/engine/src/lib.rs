//! The simulation engine: integer simulated time, clock domains, a deterministic event queue
//! and the single seeded random generator.
//!
//! Invariants: nothing here reads the host clock or does I/O; the same sequence of calls gives
//! the same sequence of results on any host. Events that fall on the same tick are ordered by
//! `(priority, source, sequence)`, where the source is the scheduler's (`EventQueue::set_source`)
//! and the sequence number is the order in which they were scheduled.

pub mod queue;
pub mod rng;
pub mod time;

pub use queue::EventQueue;
pub use rng::SimRng;
pub use time::{ClockDomain, Clocks, Tick};
