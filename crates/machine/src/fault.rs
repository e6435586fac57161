//! Protocol faults injected on purpose, so tests can show the protocol tester catches them. A
//! leaf module: protocol handlers and the processors' agent consult it without importing the
//! machine's environment.

/// Faults a protocol can be told to commit, so tests can show the tester catches them
/// (issue 17, item 2). `DropInvalidation` is committed by the homes (each protocol's
/// invalidation code); the other three by the processors' external agents, which all three
/// protocols share, so every fault can be injected on every preset. Each fault strikes every
/// `n`th time its occasion comes (`count` counts the occasions). `Fault::None` costs one
/// comparison where an occasion arises.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Fault {
    #[default]
    None,
    /// Every `n`th invalidation is not sent (and counted as acknowledged): a safety fault
    /// (a stale sharer).
    DropInvalidation { n: u32, count: u32 },
    /// Every `n`th invalidation acknowledgement a processor owes is lost on its way: the
    /// invalidation is applied, but whoever collects the acknowledgements waits forever (a
    /// liveness fault).
    DropAck { n: u32, count: u32 },
    /// Every `n`th acknowledged invalidation reaches the processor only `delay` processor
    /// cycles after its acknowledgement was sent: the reply that the acknowledgement releases
    /// (the requester's data or ownership) overtakes the forwarded invalidation, so for a while
    /// a modified copy and a shared one coexist (a safety fault).
    ReorderReply { n: u32, count: u32, delay: u32 },
    /// Every `n`th NACKed request is never retried (its back-off timer is lost): the processor
    /// waits forever (a liveness fault).
    LoseNackRetry { n: u32, count: u32 },
}

impl Fault {
    /// Counts one occasion of `self`'s kind; true when this one is to be faulted.
    fn strike(n: u32, count: &mut u32) -> bool {
        *count += 1;
        if *count >= n {
            *count = 0;
            return true;
        }
        false
    }

    /// True when the protocol should drop this invalidation.
    pub fn drop_invalidation(&mut self) -> bool {
        match self {
            Fault::DropInvalidation { n, count } => Fault::strike(*n, count),
            _ => false,
        }
    }

    /// True when this invalidation acknowledgement is to be lost.
    #[inline]
    pub fn drop_ack(&mut self) -> bool {
        match self {
            Fault::DropAck { n, count } => Fault::strike(*n, count),
            _ => false,
        }
    }

    /// `Some(delay)` in processor cycles when this acknowledged invalidation is to take
    /// effect after its acknowledgement's reply.
    #[inline]
    pub fn reorder_reply(&mut self) -> Option<u32> {
        match self {
            Fault::ReorderReply { n, count, delay } => {
                let d = *delay;
                Fault::strike(*n, count).then_some(d)
            }
            _ => None,
        }
    }

    /// True when this NACK's retry is to be lost.
    #[inline]
    pub fn lose_nack_retry(&mut self) -> bool {
        match self {
            Fault::LoseNackRetry { n, count } => Fault::strike(*n, count),
            _ => false,
        }
    }

    /// The fault's name on the command line (`--inject-fault NAME`).
    pub fn name(&self) -> &'static str {
        match self {
            Fault::None => "none",
            Fault::DropInvalidation { .. } => "drop-invalidation",
            Fault::DropAck { .. } => "drop-ack",
            Fault::ReorderReply { .. } => "reorder-reply",
            Fault::LoseNackRetry { .. } => "lose-nack-retry",
        }
    }

    /// The fault `name` with the rates `pmusim test-protocol --inject-fault` uses: frequent
    /// enough that a run of a few thousand operations meets it on every preset.
    pub fn by_name(name: &str) -> Option<Fault> {
        Some(match name {
            "none" => Fault::None,
            "drop-invalidation" => Fault::DropInvalidation { n: 50, count: 0 },
            "drop-ack" => Fault::DropAck { n: 50, count: 0 },
            "reorder-reply" => Fault::ReorderReply {
                n: 20,
                count: 0,
                delay: 2000,
            },
            "lose-nack-retry" => Fault::LoseNackRetry { n: 20, count: 0 },
            _ => return None,
        })
    }
}
