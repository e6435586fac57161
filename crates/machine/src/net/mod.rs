//! Interconnect components a memory system composes: each models one kind of contended
//! network part with its timing, and reports every use of a contended resource through
//! `Env::observe_queue` (or returns its link uses for the owner to report), under the
//! `probe::Resource` names its owner gives.
//!
//! - `bus`: a FIFO-reserved server (`Fifo`, also used for memory modules and controllers) and a
//!   split-transaction bus (arbitration, address packet, data cycles; NUMAchine's station bus).
//! - `ring`: slotted unidirectional rings in a two-level hierarchy with inter-ring interfaces
//!   (NUMAchine's local and central rings, seed 000 4.1).
//! - `mesh`: a 2-D mesh with dimension-order routing and per-link reservation (FLASH, seed 004
//!   3.1).
//! - `crossbar`: N input ports to M output ports with per-port serialization and a fixed
//!   traversal latency (the shared-L2 crossbar of issue 14's chip).
//!
//! None of them imports a memory system; a system instantiates them with its own timing.

pub mod bus;
pub mod crossbar;
pub mod mesh;
pub mod ring;
