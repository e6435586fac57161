//! Scenario and property tests of the interface buffer, modelled on memory-controller users'
//! bug reports: drains that deadlock (DRAMsim3 issues 2, 27, 43; Ramulator pull 72), writes
//! left in the queue at the end (gem5 issue 2493), stale reads around buffered writes.

use super::*;
use engine::SimRng;

const T: DramTiming = DramTiming {
    read: 12,
    write: 10,
    buffer_hit: 2,
};

fn words(watermark: usize, read_ahead: bool) -> BufferedMemory<SparseMemory> {
    let c = BufferConfig {
        watermark,
        read_ahead,
        ..BufferConfig::words()
    };
    BufferedMemory::new(c, T, SparseMemory::new()).unwrap()
}

#[test]
fn writes_post_with_zero_wait_until_full_then_stall() {
    // Watermark at capacity, no idle drain: 32 one-word writes to distinct blocks fill it.
    let mut m = words(32, false);
    for i in 0..32u64 {
        assert_eq!(m.write(100 + i, i * 16, &[i as u8; 4]).unwrap(), 100 + i);
    }
    assert_eq!(m.write_buffer().units(), 32);
    assert_eq!(m.stats().dram_writes, 0);
    // The 33rd, in the same cycle, finds it full: the oldest entry drains (10 cycles), then
    // it is accepted.
    assert_eq!(m.write(131, 0x1000, &[1; 4]).unwrap(), 141);
    let s = *m.stats();
    assert_eq!((s.full, s.full_stall_cycles, s.drains_full), (1, 10, 1));
    // A collapse into a buffered word needs no room: zero wait even when full.
    assert_eq!(m.write(141, 0x1000, &[2; 4]).unwrap(), 141);
    // Full is also the watermark (32): with the DRAM free, the buffer drains one entry in the
    // background before a write 20 cycles later, which then posts with zero wait.
    assert_eq!(m.write(161, 0x2000, &[3; 4]).unwrap(), 161);
    assert_eq!(m.stats().drains_watermark, 1);
    assert_eq!(m.stats().collapses, 1);
}

#[test]
fn watermark_gives_writes_priority_and_reads_pass_below_it() {
    // Watermark 4: three buffered words, a read goes straight to DRAM (read-around-write).
    let mut m = words(4, false);
    for i in 0..3u64 {
        m.write(i, 0x100 + 16 * i, &[1; 4]).unwrap();
    }
    let mut b = [0u8; 4];
    assert_eq!(m.read(10, 0x800, &mut b).unwrap(), 10 + 12);
    assert_eq!(m.stats().dram_writes, 0);
    // The fourth word reaches the watermark: from then on the buffer drains in the background
    // as soon as the DRAM is free (at 22), one entry, back below the watermark.
    m.write(20, 0x400, &[1; 4]).unwrap();
    assert_eq!(m.read(40, 0x900, &mut b).unwrap(), 40 + 12);
    assert_eq!(m.stats().drains_watermark, 1);
    assert_eq!(m.write_buffer().units(), 3);
    // At the watermark when the read arrives: the write goes first (10), then the read (12).
    m.write(60, 0x500, &[1; 4]).unwrap();
    assert_eq!(m.read(60, 0xA00, &mut b).unwrap(), 60 + 10 + 12);
    assert_eq!(m.stats().drains_watermark, 2);
}

#[test]
fn read_merge_returns_buffered_bytes_without_a_flush() {
    let mut m = words(32, false);
    // DRAM holds 0xAA everywhere in the line (written and drained first).
    m.write(0, 0x100, &[0xAA; 16]).unwrap();
    m.finish(0).unwrap();
    m.write(100, 0x102, &[1, 2]).unwrap();
    m.write(101, 0x108, &[3]).unwrap();
    let mut b = [0u8; 16];
    m.read(102, 0x100, &mut b).unwrap();
    let mut want = [0xAA; 16];
    want[2..4].copy_from_slice(&[1, 2]);
    want[8] = 3;
    assert_eq!(b, want);
    let s = *m.stats();
    assert_eq!((s.read_merges, s.dram_writes), (1, 1)); // only the first finish's drain
    assert_eq!(m.write_buffer().units(), 2);
    // Every byte buffered: no DRAM read at all.
    let mut w = [0u8; 2];
    let reads = m.stats().dram_reads;
    assert_eq!(m.read(110, 0x102, &mut w).unwrap(), 112);
    assert_eq!(w, [1, 2]);
    assert_eq!(m.stats().dram_reads, reads);
    assert_eq!(m.stats().reads_from_write_buffer, 1);
}

#[test]
fn read_buffer_scores_each_request_once_and_reads_ahead() {
    let mut m = words(16, true);
    let mut w = [0u8; 4];
    // Miss on line 0x100: demand fetch plus read-ahead of 0x110.
    assert_eq!(m.read(0, 0x100, &mut w).unwrap(), 12);
    // Three more single-word requests to the line: three hits, one per request.
    for i in 1..4 {
        assert_eq!(m.read(30 + i, 0x100 + 4 * i, &mut w).unwrap(), 32 + i);
    }
    // A whole-line request is one request, one hit.
    let mut line = [0u8; 16];
    m.read(40, 0x100, &mut line).unwrap();
    let s = *m.stats();
    assert_eq!((s.reads, s.read_buffer_hits), (5, 4));
    // Line 0x110 came by read-ahead: its first hit is a read-ahead used (and brings 0x120).
    m.read(50, 0x110, &mut w).unwrap();
    m.read(51, 0x114, &mut w).unwrap();
    let s = *m.stats();
    assert_eq!((s.read_buffer_hits, s.read_ahead_used), (6, 1));
    assert_eq!((s.read_ahead_fetches, s.dram_reads), (2, 3));
    // Far away: the prefetched 0x120 is evicted unused (2 lines) ...
    m.read(100, 0x4000, &mut w).unwrap();
    assert_eq!(m.stats().read_ahead_unused, 1);
    // ... and the one fetched for 0x4000 is still unused at the end.
    m.finish(200).unwrap();
    let s = *m.stats();
    assert_eq!(s.read_ahead_unused, 2);
    assert_eq!(
        s.read_ahead_fetches,
        s.read_ahead_used + s.read_ahead_unused
    );
}

/// A request for a line whose read-ahead is still in flight waits for its data: the
/// read-ahead of 0x110 is issued behind the demand read of 0x100 (DRAM busy until 12) and is
/// back at 24; a request for it at 13 is served at 24, not at 13 + the buffer's 2 cycles.
/// After the data is back a hit costs the buffer time only.
#[test]
fn a_read_ahead_in_flight_serves_its_line_when_the_data_is_back() {
    let mut m = words(16, true);
    let mut w = [0u8; 4];
    assert_eq!(m.read(0, 0x100, &mut w).unwrap(), 12);
    assert_eq!(m.busy_until(), 24, "the read-ahead follows the demand read");
    assert_eq!(m.read(13, 0x110, &mut w).unwrap(), 24);
    assert_eq!(m.stats().read_ahead_used, 1);
    // Its own read-ahead (0x120) is issued at 13 behind the first one: back at 36.
    assert_eq!(m.read(30, 0x120, &mut w).unwrap(), 36);
    assert_eq!(m.read(40, 0x124, &mut w).unwrap(), 42);
}

#[test]
fn finish_leaves_no_writes_behind() {
    // gem5 issue 2493: a run that ends with writes in the queue loses them.
    let mut m = words(32, false);
    for i in 0..20u64 {
        m.write(i, 0x100 + 4 * i, &[i as u8; 4]).unwrap();
    }
    assert_eq!(m.stats().dram_writes, 0); // below the watermark, nothing drained
    let done = m.finish(50).unwrap();
    assert!(m.write_buffer().is_empty());
    // 20 words in 5 blocks: 5 DRAM writes, the last ending at 50 + 5 * 10.
    assert_eq!((m.stats().drains_final, done), (5, 100));
    for i in 0..20u64 {
        for k in 0..4 {
            assert_eq!(m.dram().get(0x100 + 4 * i + k), i as u8);
        }
    }
}

#[test]
fn bad_requests_are_refused_with_the_place_named() {
    let mut m = words(8, true);
    assert!(m.write(0, 0x10E, &[0; 4]).unwrap_err().contains("0x10e"));
    let mut b = [0u8; 8];
    assert!(m
        .read(0, 0x10C, &mut b)
        .unwrap_err()
        .contains("16-byte line"));
    m.write(10, 0x100, &[1]).unwrap();
    assert!(m.write(5, 0x100, &[1]).unwrap_err().contains("cycle 5"));
    assert!(m.set_watermark(33).unwrap_err().contains("watermark = 33"));
    assert!(BufferedMemory::new(
        BufferConfig {
            watermark: 0,
            ..BufferConfig::words()
        },
        T,
        SparseMemory::new()
    )
    .is_err());
}

/// A random stream of reads and writes on a small region (so that collapses, merges, read
/// merges and read-buffer hits all happen), checked against a reference memory at every read,
/// and the buffer's invariants after every request. Returns the stats.
fn random_stream(c: BufferConfig, seed: u64, ops: usize) -> BufferStats {
    let mut m = BufferedMemory::new(c, T, SparseMemory::new()).unwrap();
    let mut reference = SparseMemory::new();
    let mut g = SimRng::new(seed);
    let region = 16 * c.block_bytes.max(c.line_bytes) as u64;
    let mut now = 0u64;
    let unit = c.unit_bytes.min(8) as u64;
    for _ in 0..ops {
        now += g.below(12);
        if g.chance(0.6) {
            // Sizes 1, 2, 4 (and whole blocks in line mode), naturally aligned.
            let len = if c.block_bytes > 16 && g.chance(0.5) {
                c.block_bytes as u64
            } else {
                [1u64, 2, 4][g.below(3) as usize].min(unit.max(4))
            };
            let a = g.below(region / len) * len;
            let data: Vec<u8> = (0..len).map(|_| g.below(256) as u8).collect();
            // No deadlock: a stall lasts at most the DRAM's backlog plus one drain per
            // buffered entry.
            let bound =
                m.busy_until().saturating_sub(now) + m.write_buffer().entries() as u64 * T.write;
            let accepted = m.write(now, a, &data).unwrap();
            assert!(
                accepted - now <= bound,
                "stall {} > {bound}",
                accepted - now
            );
            reference.write(a, &data, super::mask::ByteMask::range(0, len as u32));
            now = accepted;
        } else {
            let len = [1u64, 2, 4, c.line_bytes as u64][g.below(4) as usize];
            let a = g.below(region / len) * len;
            let mut out = vec![0u8; len as usize];
            let done = m.read(now, a, &mut out).unwrap();
            assert!(done >= now);
            now = done; // the requester waits for its data
            for (i, &b) in out.iter().enumerate() {
                assert_eq!(b, reference.get(a + i as u64), "byte {:#x}", a + i as u64);
            }
        }
        assert!(m.write_buffer().units() <= c.capacity);
    }
    m.finish(now).unwrap();
    assert!(m.write_buffer().is_empty(), "writes left in the buffer");
    assert_eq!(m.write_buffer().units(), 0);
    // DRAM equals the reference everywhere in the region.
    for x in 0..region {
        assert_eq!(m.dram().get(x), reference.get(x), "DRAM byte {x:#x}");
    }
    let s = *m.stats();
    // Every entry created is written to DRAM exactly once.
    assert_eq!(s.dram_writes, s.new_entries);
    assert_eq!(s.write_hits, s.collapses + s.merges);
    assert_eq!(s.writes, s.write_hits + s.new_entries);
    assert!(s.new_entries < s.writes);
    assert_eq!(
        s.dram_writes,
        s.drains_full + s.drains_watermark + s.drains_idle + s.drains_final
    );
    assert_eq!(
        s.read_ahead_fetches,
        s.read_ahead_used + s.read_ahead_unused
    );
    assert!(s.read_buffer_hits + s.reads_from_write_buffer <= s.reads);
    s
}

#[test]
fn no_deadlock_and_right_data_at_every_watermark() {
    let mut total = BufferStats::default();
    for wm in 1..=32 {
        for (ra, idle) in [(false, false), (true, false), (true, true)] {
            let c = BufferConfig {
                watermark: wm,
                read_ahead: ra,
                drain_when_idle: idle,
                ..BufferConfig::words()
            };
            let s = random_stream(c, wm as u64 * 7 + ra as u64, 3000);
            total.collapses += s.collapses;
            total.merges += s.merges;
            total.full += s.full;
            total.read_merges += s.read_merges;
            total.read_buffer_hits += s.read_buffer_hits;
            total.read_ahead_used += s.read_ahead_used;
            total.drains_idle += s.drains_idle;
            if wm == 32 && !idle {
                assert!(s.full > 0, "watermark 32 without idle drains must fill up");
            }
        }
    }
    // Every event happened somewhere in the sweep (the streams exercise every path).
    for (name, v) in [
        ("collapses", total.collapses),
        ("merges", total.merges),
        ("full", total.full),
        ("read merges", total.read_merges),
        ("read-buffer hits", total.read_buffer_hits),
        ("read-ahead used", total.read_ahead_used),
        ("idle drains", total.drains_idle),
    ] {
        assert!(v > 0, "{name} never happened");
    }
}

#[test]
fn line_sized_entries_for_multiprocessor_presets() {
    for (line, entries) in [(64, 8), (128, 4), (128, 32), (256, 4), (256, 16)] {
        for wm in [1, entries / 2, entries] {
            let c = BufferConfig {
                watermark: wm,
                ..BufferConfig::lines(line, entries)
            };
            let s = random_stream(c, line as u64 + wm as u64, 3000);
            assert!(s.collapses > 0);
        }
    }
    // A line write-back, then a second write-back of the same line: one entry, one DRAM write.
    let mut m = BufferedMemory::new(BufferConfig::lines(64, 8), T, SparseMemory::new()).unwrap();
    m.write(0, 0x1000, &[1; 64]).unwrap();
    m.write(5, 0x1000, &[2; 64]).unwrap();
    let mut b = [0u8; 64];
    m.read(6, 0x1000, &mut b).unwrap();
    assert_eq!(b, [2; 64]);
    m.finish(10).unwrap();
    assert_eq!((m.stats().collapses, m.stats().dram_writes), (1, 1));
}

#[test]
fn deterministic() {
    let c = BufferConfig::words();
    assert_eq!(random_stream(c, 3, 2000), random_stream(c, 3, 2000));
}

/// `read_ahead_keeps = false`, the control experiment: the read-ahead's DRAM read is issued
/// and occupies the DRAM as before (the next demand read waits behind it), but its line is
/// dropped, so the read of the next line misses and is counted as an unused read-ahead.
#[test]
fn a_dropped_read_ahead_occupies_the_dram_and_serves_nothing() {
    let mut m = BufferedMemory::new(
        BufferConfig {
            read_ahead_keeps: false,
            ..BufferConfig::words()
        },
        T,
        SparseMemory::new(),
    )
    .unwrap();
    let mut w = [0u8; 4];
    assert_eq!(m.read(0, 0x100, &mut w).unwrap(), 12);
    assert_eq!(m.busy_until(), 24, "the read-ahead is still issued");
    // 0x110 is not kept: a DRAM read behind the read-ahead (24 + 12), a read-ahead delay.
    assert_eq!(m.read(13, 0x110, &mut w).unwrap(), 36);
    let s = *m.stats();
    assert_eq!((s.read_buffer_hits, s.read_ahead_used), (0, 0));
    assert_eq!((s.read_ahead_fetches, s.read_ahead_unused), (2, 2));
    assert_eq!((s.dram_reads, s.read_ahead_delays), (4, 1));
    // Kept (the default), the same request is served from the line when it is back.
    let mut k = words(16, true);
    k.read(0, 0x100, &mut w).unwrap();
    assert_eq!(k.read(13, 0x110, &mut w).unwrap(), 24);
}
