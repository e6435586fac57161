//! Messages between a processor's external agent and the memory system.
//!
//! Every preset's memory system speaks this one vocabulary at the processor interface, so the
//! processor side (caches, external agent, NACK retry, upgrade cancellation, write-back buffer)
//! is shared and a new preset only adds its own interconnect and home-side protocol.
//! Lines are line numbers (address >> log2(line size)).

use crate::probe::RespState;

/// Processor (external agent) to memory system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcMsg {
    Read {
        line: u64,
    },
    ReadEx {
        line: u64,
    },
    Upgrade {
        line: u64,
    },
    /// A dirty line leaves the L2; the agent keeps it in its write-back buffer until `WbAck`.
    Writeback {
        line: u64,
        value: u64,
    },
    Uncached {
        addr: u64,
        size: u8,
        write: Option<u64>,
    },
    /// Acknowledges an `Invalidate { ack: true }`.
    InvalAck {
        line: u64,
    },
    /// Answers an `Intervention`: the dirty data, or `None` if the line is no longer here.
    /// `from_wb` says the data came from the write-back buffer (a write-back is in flight).
    InterventionReply {
        line: u64,
        value: Option<u64>,
        from_wb: bool,
    },
}

/// Memory system to processor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SysMsg {
    /// Data for a Read (`exclusive` false: install shared) or ReadEx/converted Upgrade.
    Data {
        line: u64,
        exclusive: bool,
        value: u64,
        resp: RespState,
    },
    /// Ownership granted for an Upgrade; the processor's shared copy becomes modified.
    Grant {
        line: u64,
        resp: RespState,
    },
    /// The request could not be served now (line locked): retry after a back-off.
    Nack {
        line: u64,
    },
    /// The Upgrade lost to a competing owner: re-issue as ReadEx.
    Cancel {
        line: u64,
    },
    /// Drop the line; `ack`: answer with `InvalAck` (the home counts the answers before it
    /// grants ownership). `ack: false` is only the late half of the injected fault
    /// `Fault::ReorderReply` (acknowledged early, applied later).
    Invalidate {
        line: u64,
        ack: bool,
    },
    /// Drop a read-only copy, unacknowledged: a write-through store's invalidation of the
    /// other cores' copies (`cmp` with a write-through L1 D). The home took the core off the
    /// line's sharers when it sent this, so the copy goes whatever the core has in flight for
    /// the line (as an acknowledged invalidation does).
    PostedInvalidate {
        line: u64,
    },
    /// Supply the dirty line; `exclusive` also invalidates it, else it becomes shared.
    Intervention {
        line: u64,
        exclusive: bool,
    },
    WbAck {
        line: u64,
    },
    UncachedReply {
        value: u64,
    },
    /// A write to this processor's monitor from another processor (or a multicast).
    MonitorWrite {
        offset: u64,
        size: u8,
        value: u64,
    },
}

impl ProcMsg {
    pub fn line(&self) -> Option<u64> {
        match *self {
            ProcMsg::Read { line }
            | ProcMsg::ReadEx { line }
            | ProcMsg::Upgrade { line }
            | ProcMsg::Writeback { line, .. }
            | ProcMsg::InvalAck { line }
            | ProcMsg::InterventionReply { line, .. } => Some(line),
            ProcMsg::Uncached { .. } => None,
        }
    }
}

impl SysMsg {
    /// The line the message is about (none for uncached replies and monitor writes).
    pub fn line(&self) -> Option<u64> {
        match *self {
            SysMsg::Data { line, .. }
            | SysMsg::Grant { line, .. }
            | SysMsg::Nack { line }
            | SysMsg::Cancel { line }
            | SysMsg::Invalidate { line, .. }
            | SysMsg::PostedInvalidate { line }
            | SysMsg::Intervention { line, .. }
            | SysMsg::WbAck { line } => Some(line),
            SysMsg::UncachedReply { .. } | SysMsg::MonitorWrite { .. } => None,
        }
    }
}
