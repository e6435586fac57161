//! Synthetic traces, for the `trace-hit` case of `pmusim bench` and for tests: a native trace
//! made in memory, so that the replay's speed can be measured without a tracer.

use tracefmt::{AccessKind, Header, Record, Writer};

/// Base of the three arrays of [`hit_loop`] (like a small program's static data).
pub const HIT_LOOP_BASE: u64 = 0x40_4000;
/// Elements of each array (8 bytes each).
pub const HIT_LOOP_ELEMS: u64 = 256;
/// The loop's stack slot (at an L1 and L2 offset that no array element shares in the presets).
pub const HIT_LOOP_STACK: u64 = 0x7ffd_ffe0_3f10;

/// The records of one thread running `c[i] = a[i] + b[i]` over three arrays of 256 8-byte
/// elements (2 KiB each, one after the other from [`HIT_LOOP_BASE`]), again and again, with a
/// 4-byte read-modify-write of a stack slot every fourth element: loads, stores and modifies
/// of two sizes and address deltas of one to five bytes. Each reference's instruction count
/// is fixed by its place in the loop (2, 1, 2, and 3 for the modify), plus, one time in eight
/// (drawn from a fixed-seed generator), 1 to 4 instructions of a data-dependent branch: the
/// stream is as regular as a real loop's, not more (it compresses to about the bytes per
/// reference of real traces, and its decoder's branches are not perfectly predictable). The
/// 6 KiB and the slot fit the L1 data cache of every preset without conflicts, so every
/// reference after the first pass hits. Exactly `references` data references (a modify
/// counts once), then 3 instructions without a reference.
pub fn hit_loop_records(references: u64) -> Vec<Record> {
    let mut out = Vec::with_capacity(references as usize + 1);
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut extra = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        if x % 8 == 0 {
            1 + (x >> 62) as u32
        } else {
            0
        }
    };
    let (a, b, c) = (
        HIT_LOOP_BASE,
        HIT_LOOP_BASE + 8 * HIT_LOOP_ELEMS,
        HIT_LOOP_BASE + 16 * HIT_LOOP_ELEMS,
    );
    let mut i = 0u64;
    'outer: loop {
        let mut iteration = vec![
            (AccessKind::Load, a + 8 * i, 8, 2),
            (AccessKind::Load, b + 8 * i, 8, 1),
            (AccessKind::Store, c + 8 * i, 8, 2),
        ];
        if i % 4 == 3 {
            iteration.push((AccessKind::Modify, HIT_LOOP_STACK, 4, 3));
        }
        for (kind, addr, size, icount) in iteration {
            if out.len() as u64 == references {
                break 'outer;
            }
            out.push(Record::Access {
                kind,
                addr,
                size,
                icount: icount + extra(),
            });
        }
        i = (i + 1) % HIT_LOOP_ELEMS;
    }
    out.push(Record::Instructions(3));
    out
}

/// [`hit_loop_records`] as the bytes of a `.pmt` file (thread id 1, tracer "synthetic").
pub fn hit_loop(references: u64) -> Vec<u8> {
    let header = Header::new("synthetic", "", &[], "x86_64");
    let mut bytes = Vec::new();
    let mut w = Writer::new(&mut bytes, header).expect("writing to memory");
    for r in hit_loop_records(references) {
        w.push(1, &r).expect("writing to memory");
    }
    w.finish().expect("writing to memory");
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loop_has_the_promised_references() {
        let recs = hit_loop_records(10_000);
        assert_eq!(recs.len(), 10_001);
        let mut kinds = [0u64; 3];
        for r in &recs[..10_000] {
            let Record::Access {
                kind,
                addr,
                size,
                icount,
            } = *r
            else {
                panic!("{r:?}")
            };
            kinds[kind as usize] += 1;
            assert!((1..=7).contains(&icount));
            let in_arrays = (HIT_LOOP_BASE..HIT_LOOP_BASE + 24 * HIT_LOOP_ELEMS).contains(&addr);
            assert!(in_arrays && size == 8 || addr == HIT_LOOP_STACK && size == 4);
        }
        // 13 references per 4 elements: (2 loads, 1 store) x 4 + 1 modify.
        assert_eq!(kinds[AccessKind::Modify as usize], 10_000 / 13);
        assert_eq!(recs[10_000], Record::Instructions(3));
        let bytes = hit_loop(10_000);
        let back: Vec<Record> = tracefmt::Reader::new(&bytes[..])
            .unwrap()
            .map(|r| r.unwrap().1)
            .collect();
        assert_eq!(back, recs);
        // As compressible as real traces (a QEMU trace of python3: 0.39 bytes/reference).
        let per_ref = hit_loop(1_000_000).len() as f64 / 1e6;
        assert!((0.2..0.6).contains(&per_ref), "{per_ref} bytes/reference");
    }
}
