//! The NUMAchine latency timer (seed 000, section 4.3.6).
//!
//! The timer is reset when the first part of a request is written into the outgoing FIFO and
//! increments every monitor (bus, 50 MHz) cycle until the response or a BUS_ERROR returns. The
//! bus error comes after a time-out of 2^12 = 4096 cycles, which fixes the timer at 12 bits: a
//! timed-out request leaves the timer wrapped (see [`Latency12`]).
//!
//! The compact format packs a 12-bit latency into 7 bits: a 3-bit exponent (high bits) and a
//! 4-bit mantissa (low bits), with an implied leading one unless the exponent is zero
//! (denormal), exactly the seed's pseudocode:
//!
//! ```text
//! if( exponent == 0 ) time = 0.mantissa * 2^5;
//! else if( exponent > 0 ) time = 1.mantissa * 2^5 * 2^(exponent-1);
//! ```
//!
//! so code (e, m) stands for the bucket starting at that time and as wide as one mantissa step:
//! 2 cycles for e = 0 and 1, then 2^e. Code 127 covers 3968-4095.

/// Cycles before the time-out (a bus error) and the 12-bit timer's modulus.
pub const TIMEOUT: u64 = 4096;

/// A latency as the 12-bit timer holds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Latency12 {
    /// The timer's value (0..=4095).
    pub value: u16,
    /// The timer reached 4096: the request timed out (a bus error) and the value wrapped.
    pub timed_out: bool,
}

/// The 12-bit timer after `cycles` monitor cycles.
pub fn latency12(cycles: u64) -> Latency12 {
    Latency12 {
        value: (cycles % TIMEOUT) as u16,
        timed_out: cycles >= TIMEOUT,
    }
}

/// Encodes a 12-bit latency (values above 4095 are taken modulo 4096, as the timer does)
/// into the 7-bit compact code.
pub fn compact(latency: u16) -> u8 {
    let t = (latency as u32) & 0xFFF;
    if t < 32 {
        return (t >> 1) as u8; // exponent 0, denormal: 0.m * 2^5 = 2m
    }
    let msb = 31 - t.leading_zeros(); // 5..=11
    let e = msb - 4; // 1..=7
    let m = (t >> e) & 0xF;
    ((e << 4) | m) as u8
}

/// The exponent and mantissa of a compact code.
pub fn split(code: u8) -> (u8, u8) {
    ((code >> 4) & 7, code & 0xF)
}

/// The time a compact code stands for: the seed's pseudocode, in integers.
pub fn decode(code: u8) -> u16 {
    let (e, m) = split(code);
    if e == 0 {
        (m as u16) << 1 // 0.mantissa * 2^5
    } else {
        ((16 + m as u16) << 1) << (e - 1) // 1.mantissa * 2^5 * 2^(e-1)
    }
}

/// The bucket `[lo, hi]` (inclusive) of 12-bit latencies that encode to `code`.
pub fn bucket(code: u8) -> (u16, u16) {
    let (e, _) = split(code);
    let lo = decode(code);
    let width = 1u16 << e.max(1);
    (lo, lo + width - 1)
}

/// The midpoint of a code's bucket, for averages over a compact histogram.
pub fn midpoint(code: u8) -> f64 {
    let (lo, hi) = bucket(code);
    (lo as f64 + hi as f64) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_latency_encodes_into_its_bucket() {
        for t in 0..4096u16 {
            let c = compact(t);
            assert!(c < 128);
            let (lo, hi) = bucket(c);
            assert!(
                lo <= t && t <= hi,
                "latency {t} -> code {c} bucket {lo}-{hi}"
            );
        }
    }

    #[test]
    fn every_code_decodes_to_a_bucket_that_encodes_back() {
        let mut next = 0u16;
        for c in 0..128u8 {
            let (lo, hi) = bucket(c);
            assert_eq!(lo, next, "buckets tile 0..4095 without gaps (code {c})");
            assert_eq!(compact(lo), c);
            assert_eq!(compact(hi), c);
            next = hi + 1;
        }
        assert_eq!(next, 4096);
    }

    /// The seed's bucket list (4.4.5), line by line. The seed prints "137-143" for the second
    /// bucket of the 128-255 line: a misprint for 136-143 (the buckets are 8 wide there and
    /// tile the range). Its last line stops at 3968-4095, the 12-bit timer's end.
    #[test]
    fn seed_bucket_list() {
        let lines: [&[(u16, u16)]; 7] = [
            &[(0, 1), (2, 3), (62, 63)],
            &[(64, 67), (68, 71), (124, 127)],
            &[(128, 135), (136, 143), (248, 255)],
            &[(256, 271), (272, 287), (496, 511)],
            &[(512, 543), (544, 575), (992, 1023)],
            &[(1024, 1087), (1088, 1151), (1984, 2047)],
            &[(2048, 2175), (2176, 2303), (3968, 4095)],
        ];
        let all: Vec<(u16, u16)> = (0..128).map(bucket).collect();
        for line in lines {
            for b in line {
                assert!(all.contains(b), "bucket {b:?} of the seed's list");
            }
        }
        // The seed's "494-511" (fourth line's last bucket) is also a misprint: 16-wide buckets
        // from 256 end with 496-511.
        assert!(!all.contains(&(494, 511)));
        assert!(!all.contains(&(137, 143)));
        assert_eq!(bucket(127), (3968, 4095));
    }

    #[test]
    fn timer_wraps_at_timeout() {
        assert_eq!(
            latency12(4095),
            Latency12 {
                value: 4095,
                timed_out: false
            }
        );
        assert_eq!(
            latency12(4096),
            Latency12 {
                value: 0,
                timed_out: true
            }
        );
        assert_eq!(decode(0x7F), 3968);
        assert_eq!(compact(33), 0x10);
    }
}
