//! One node's MAGIC chip (seed 004, 3.1.1 and Figure 2): the inbound queues of the processor
//! interface (PI) and network interface (NI), the protocol processor (PP) that runs one handler
//! at a time, the outbound PI and NI, and the memory controller.
//!
//! # Timing model (all in system cycles, configured in `[flash]`)
//! - A message enters its inbound queue `pi_in_cycles` after the processor sends it, or
//!   `ni_in_cycles` after its tail leaves the mesh. The inbox's jump-table dispatch takes
//!   `dispatch_cycles` (pipelined: it overlaps a busy PP).
//! - **Speculative memory read**: a request for a line homed here (Get/GetX/Upgrade from either
//!   interface, and FwdMiss) starts a memory read when it enters the inbox, in parallel with
//!   the handler (FLASH starts it before the PP decides). Data is ready `memory_cycles` after
//!   the read starts; the memory is busy `memory_busy_cycles` per access (write-backs too), so
//!   reads queue behind each other. A handler's data-carrying send leaves at
//!   `max(start + latency, data ready)`.
//! - **The PP** takes the next message when it is free; the handler's first instruction is at
//!   `start`, its sends leave at `start + latency`, and the PP is busy until
//!   `start + occupancy` (the next "switch"). Per-sharer costs are added for handlers that walk
//!   the sharer list.
//! - **Priorities** (FLASH serves replies ahead of requests so transactions in progress finish
//!   and requests cannot starve them): NI replies (Put, PutX, UpgradeAck, InvalAck, Nack, SWB,
//!   OwnXfer, FwdMiss) first, then the PI queue, then NI requests (Get, GetX, Upgrade,
//!   write-backs and their PutAck, Inval, forwarded requests). Each queue is FIFO. The PI cannot
//!   flood the PP: its processor has one transaction outstanding plus write-backs and acks.
//!   Priorities reorder messages from one sender; the protocol tolerates each such reordering
//!   (see `handlers`), and PutAck is kept in the request queue for that reason.
//! - **Outbound**: sends leave each interface in the order the handlers made them (FIFO), so a
//!   send waiting for memory holds later sends on that interface (head-of-line). The PI delivers
//!   `pi_out_cycles` later (the critical word at the processor); the NI injects into the mesh
//!   `ni_out_cycles` later and serializes its flits.

use crate::flash::handlers::{Input, Kind};
use crate::msg::ProcMsg;
use engine::Tick;
use std::collections::VecDeque;

/// A message waiting for the PP.
#[derive(Clone, Copy, Debug)]
pub struct Queued {
    /// When it entered the inbound queue.
    pub arrived: Tick,
    /// When the inbox has dispatched it (it can run from then on).
    pub ready: Tick,
    /// When the speculative memory read's data is ready (`arrived` if none).
    pub mem_ready: Tick,
    pub home: u16,
    pub input: Input,
}

/// What an incoming message asks of the memory controller when it enters the inbox.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemoryUse {
    None,
    /// A speculative line read.
    Read,
    /// A line write (a write-back or sharing write-back reaching memory).
    Write,
}

impl MemoryUse {
    pub fn of(input: &Input, node: u16, home: u16) -> MemoryUse {
        if node != home {
            return MemoryUse::None;
        }
        match input {
            Input::Pi(ProcMsg::Read { .. } | ProcMsg::ReadEx { .. } | ProcMsg::Upgrade { .. }) => {
                MemoryUse::Read
            }
            Input::Pi(ProcMsg::Writeback { .. }) => MemoryUse::Write,
            Input::Ni(m) => match m.kind {
                Kind::Get | Kind::GetX | Kind::Upgrade | Kind::FwdMiss => MemoryUse::Read,
                Kind::WB | Kind::SWB => MemoryUse::Write,
                _ => MemoryUse::None,
            },
            Input::Pi(_) => MemoryUse::None,
        }
    }
}

/// One node's MAGIC.
#[derive(Clone, Debug, Default)]
pub struct Magic {
    replies: VecDeque<Queued>,
    pi: VecDeque<Queued>,
    requests: VecDeque<Queued>,
    /// When the PP reaches its next switch.
    pub pp_free: Tick,
    pi_out_free: Tick,
    ni_out_free: Tick,
    mem_free: Tick,
}

impl Magic {
    /// Messages waiting for the PP.
    pub fn queued(&self) -> usize {
        self.replies.len() + self.pi.len() + self.requests.len()
    }

    /// Starts the memory access `u` at `t`; returns when read data is ready and how long the
    /// access waited for the memory.
    pub fn memory(&mut self, u: MemoryUse, t: Tick, access: Tick, busy: Tick) -> (Tick, Tick) {
        if u == MemoryUse::None {
            return (t, 0);
        }
        let start = t.max(self.mem_free);
        self.mem_free = start + busy;
        (start + access, start - t)
    }

    /// Puts a message in its inbound queue.
    pub fn enqueue(&mut self, q: Queued) {
        match q.input {
            Input::Pi(_) => self.pi.push_back(q),
            Input::Ni(m) if m.kind.is_reply() => self.replies.push_back(q),
            Input::Ni(_) => self.requests.push_back(q),
        }
    }

    /// The next message for the PP at `t`, by priority (replies, PI, requests).
    pub fn next(&mut self, t: Tick) -> Option<Queued> {
        for q in [&mut self.replies, &mut self.pi, &mut self.requests] {
            if q.front().is_some_and(|m| m.ready <= t) {
                return q.pop_front();
            }
        }
        None
    }

    /// A send to the processor made at `t` leaves the PI at the returned time (FIFO).
    pub fn pi_out(&mut self, t: Tick) -> Tick {
        let t = t.max(self.pi_out_free);
        self.pi_out_free = t;
        t
    }

    /// A send to the network made at `t` of `busy` ticks of flits starts at the returned time.
    pub fn ni_out(&mut self, t: Tick, busy: Tick) -> Tick {
        let t = t.max(self.ni_out_free);
        self.ni_out_free = t + busy;
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flash::handlers::NetMsg;

    fn q(input: Input, ready: Tick) -> Queued {
        Queued {
            arrived: ready,
            ready,
            mem_ready: ready,
            home: 0,
            input,
        }
    }
    fn ni(kind: Kind) -> Input {
        Input::Ni(NetMsg {
            kind,
            line: 1,
            home: 0,
            req: 1,
            from: 1,
            value: 0,
            acks: 0,
            flag: false,
            data: false,
        })
    }

    #[test]
    fn replies_before_processor_before_requests() {
        let mut m = Magic::default();
        m.enqueue(q(ni(Kind::Get), 0));
        m.enqueue(q(Input::Pi(ProcMsg::Read { line: 1 }), 0));
        m.enqueue(q(ni(Kind::InvalAck), 0));
        m.enqueue(q(ni(Kind::Put), 5));
        assert!(matches!(m.next(1).unwrap().input, Input::Ni(n) if n.kind == Kind::InvalAck));
        assert!(
            matches!(m.next(1).unwrap().input, Input::Pi(_)),
            "Put not ready yet"
        );
        assert!(matches!(m.next(5).unwrap().input, Input::Ni(n) if n.kind == Kind::Put));
        assert!(matches!(m.next(5).unwrap().input, Input::Ni(n) if n.kind == Kind::Get));
        assert!(m.next(9).is_none());
    }

    #[test]
    fn memory_reads_queue_behind_each_other() {
        let mut m = Magic::default();
        assert_eq!(m.memory(MemoryUse::Read, 10, 15, 8), (25, 0));
        assert_eq!(m.memory(MemoryUse::Read, 10, 15, 8), (33, 8));
        assert_eq!(m.memory(MemoryUse::None, 10, 15, 8), (10, 0));
    }
}
