//! pmusim's 13-bit Command identifiers, the values the Command Register (CR) latches from
//! every packet passing the external agent (seed 000, 4.4.2).
//!
//! The seed says each NUMAchine packet carries a 13-bit Command telling "whether the packet is
//! a cache line read, a request or response, or whether it contains an address or data", but
//! does not list the encoding. pmusim defines one, chosen so that the seed's example works with
//! one CW/CF pair: "cache line read and read-exclusive responses can be counted together"
//! (CW = 0x032, CF = 0x03E: response, data, cache-line class; the exclusive bit filtered out).
//!
//! | bits | meaning |
//! | --- | --- |
//! | 3..0 | type: 0x2 read, 0x3 read-exclusive, 0x5 upgrade, 0x6 write-back, 0x8 uncached read, 0x9 uncached write, 0xC invalidate, 0xD exclusive intervention, 0xE shared intervention, 0xF NACK (bit 0 of a cache-line type = exclusive) |
//! | 4 | response (1) or request (0) |
//! | 5 | the packet carries data |
//! | 6 | the transaction ended cancelled (an upgrade that lost ownership) |
//! | 7 | the transaction ended in a bus error (time-out) |
//! | 12..8 | zero (room for a network's own use) |

use machine::probe::{Cmd, InboundKind, Outcome};

pub const READ: u16 = 0x2;
pub const READ_EX: u16 = 0x3;
pub const UPGRADE: u16 = 0x5;
pub const WRITEBACK: u16 = 0x6;
pub const UNCACHED_READ: u16 = 0x8;
pub const UNCACHED_WRITE: u16 = 0x9;
pub const INVALIDATE: u16 = 0xC;
pub const INTERVENTION_EX: u16 = 0xD;
pub const INTERVENTION_SH: u16 = 0xE;
pub const NACK: u16 = 0xF;
pub const RESPONSE: u16 = 1 << 4;
pub const DATA: u16 = 1 << 5;
pub const CANCELLED: u16 = 1 << 6;
pub const BUS_ERROR: u16 = 1 << 7;

/// Symbolic command names accepted in configuration files (a CW value each).
pub const NAMES: &[(&str, u16)] = &[
    ("read-request", READ),
    ("read-exclusive-request", READ_EX),
    ("upgrade-request", UPGRADE),
    ("writeback", WRITEBACK | DATA),
    ("uncached-read-request", UNCACHED_READ),
    ("uncached-write-request", UNCACHED_WRITE | DATA),
    ("read-response", READ | RESPONSE | DATA),
    ("read-exclusive-response", READ_EX | RESPONSE | DATA),
    ("upgrade-response", UPGRADE | RESPONSE),
    ("invalidate", INVALIDATE),
    ("intervention-exclusive", INTERVENTION_EX),
    ("intervention-shared", INTERVENTION_SH),
    ("nack", NACK | RESPONSE),
];

fn ty(c: Cmd) -> u16 {
    match c {
        Cmd::Read => READ,
        Cmd::ReadEx => READ_EX,
        Cmd::Upgrade => UPGRADE,
        Cmd::Writeback => WRITEBACK,
        Cmd::UncachedRead => UNCACHED_READ,
        Cmd::UncachedWrite => UNCACHED_WRITE,
    }
}

/// The command of a request packet.
pub fn request(c: Cmd) -> u16 {
    ty(c)
        | if matches!(c, Cmd::Writeback | Cmd::UncachedWrite) {
            DATA
        } else {
            0
        }
}

/// The command of a response packet.
pub fn response(c: Cmd, o: Outcome) -> u16 {
    let data = matches!(c, Cmd::Read | Cmd::ReadEx | Cmd::UncachedRead);
    ty(c)
        | RESPONSE
        | if data && o == Outcome::Done { DATA } else { 0 }
        | match o {
            Outcome::Done => 0,
            Outcome::Cancelled => CANCELLED,
            Outcome::BusError => BUS_ERROR,
        }
}

/// The command of an inbound coherence packet.
pub fn inbound(k: InboundKind) -> u16 {
    match k {
        InboundKind::Invalidate => INVALIDATE,
        InboundKind::InterventionExclusive => INTERVENTION_EX,
        InboundKind::InterventionShared => INTERVENTION_SH,
    }
}

/// A command (or filter) value in words.
pub fn describe(v: u16) -> String {
    let t = match v & 0xF {
        0 => "no type",
        READ => "read",
        READ_EX => "read-exclusive",
        UPGRADE => "upgrade",
        WRITEBACK => "write-back",
        UNCACHED_READ => "uncached read",
        UNCACHED_WRITE => "uncached write",
        INVALIDATE => "invalidate",
        INTERVENTION_EX => "exclusive intervention",
        INTERVENTION_SH => "shared intervention",
        NACK => "NACK",
        _ => "unused type",
    };
    let mut s = format!(
        "{t} {}",
        if v & RESPONSE != 0 {
            "response"
        } else {
            "request"
        }
    );
    for (b, n) in [
        (DATA, "with data"),
        (CANCELLED, "cancelled"),
        (BUS_ERROR, "bus error"),
    ] {
        if v & b != 0 {
            s.push_str(", ");
            s.push_str(n);
        }
    }
    if v >> 8 != 0 {
        s.push_str(&format!(", bits 12..8 = {:#x}", v >> 8));
    }
    format!("{s} (pmusim command encoding, as bit pattern)")
}
