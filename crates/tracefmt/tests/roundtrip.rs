//! Whole-file tests: random round trips, truncation at every kind of boundary, corruption.

use tracefmt::{
    encode, AccessKind, Batch, BatchReader, EncState, Error, Header, Reader, Record, SyncPhase,
    ThreadStream, Writer,
};

/// A small seeded generator (xorshift64*), so that failures reproduce without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn random_record(rng: &mut Rng, prev_addr: &mut u64) -> Record {
    match rng.below(20) {
        0 => Record::Instructions(rng.next() >> rng.below(64)),
        1 => Record::ThreadStart {
            parent: rng.next() as u32,
            seq: (rng.next() >> rng.below(64)).max(1),
        },
        2 => Record::ThreadExit {
            seq: rng.next().max(1),
        },
        3 => Record::Sync {
            seq: (rng.next() >> 20).max(1),
            nr: rng.below(400),
            args: [rng.next(), rng.below(16), rng.next() >> 40],
            ret: rng.next() as i64,
            phase: if rng.below(2) == 0 {
                SyncPhase::Entry
            } else {
                SyncPhase::Return
            },
            timeout_ns: None,
        },
        _ => {
            // Mostly nearby addresses (as in real programs), sometimes anywhere.
            let addr = match rng.below(4) {
                0 => rng.next(),
                _ => prev_addr.wrapping_add((rng.below(512) as i64 - 256) as u64),
            };
            *prev_addr = addr;
            let size = match rng.below(10) {
                0 => rng.next() as u8,
                k => 1u8 << (k % 7),
            };
            Record::Access {
                kind: match rng.below(3) {
                    0 => AccessKind::Load,
                    1 => AccessKind::Store,
                    _ => AccessKind::Modify,
                },
                addr,
                size,
                icount: (rng.next() >> rng.below(64)) as u32,
            }
        }
    }
}

fn header() -> Header {
    let mut h = Header::new("lackey", "/bin/true", &["-x".to_string()], "x86_64");
    h.load_bias = Some(0x108000);
    h.load_bias_source = Some("test".into());
    h
}

/// Writes `n` random records spread over `threads` threads; returns the file and, per record
/// in push order, (tid, record).
fn random_trace(seed: u64, n: usize, threads: u32) -> (Vec<u8>, Vec<(u32, Record)>) {
    let mut rng = Rng(seed | 1);
    let mut prev = vec![0u64; threads as usize];
    let mut file = Vec::new();
    let mut pushed = Vec::new();
    let mut w = Writer::new(&mut file, header()).unwrap();
    let mut tid = 0u32;
    for _ in 0..n {
        if rng.below(1000) == 0 {
            tid = rng.below(threads as u64) as u32;
        }
        let r = random_record(&mut rng, &mut prev[tid as usize]);
        w.push(tid + 100, &r).unwrap();
        pushed.push((tid + 100, r));
    }
    let totals = w.finish().unwrap();
    assert_eq!(totals.records, n as u64);
    assert_eq!(totals.file_bytes, file.len() as u64);
    (file, pushed)
}

#[test]
fn random_records_roundtrip_per_thread_and_in_order() {
    for seed in 1..=4u64 {
        // Enough records to make several chunks per thread.
        let (file, pushed) = random_trace(seed, 400_000, 3);
        let mut reader = Reader::new(&file[..]).unwrap();
        assert_eq!(reader.header(), &header());
        let mut per_thread_expected: std::collections::BTreeMap<u32, Vec<Record>> =
            Default::default();
        for (t, r) in &pushed {
            per_thread_expected.entry(*t).or_default().push(*r);
        }
        // File order: each thread's records in order (chunks interleave between threads).
        let mut per_thread_read: std::collections::BTreeMap<u32, Vec<Record>> = Default::default();
        for item in &mut reader {
            let (t, r) = item.unwrap();
            per_thread_read.entry(t).or_default().push(r);
        }
        assert_eq!(per_thread_read, per_thread_expected);

        let streams = Reader::new(&file[..]).unwrap().per_thread().unwrap();
        assert_eq!(streams.total_records, pushed.len() as u64);
        assert_eq!(streams.threads.len(), per_thread_expected.len());
        for s in streams.threads {
            let tid = s.tid();
            assert!(
                s.chunk_first_seqs().len() >= 2,
                "thread {tid} should span chunks"
            );
            // The pairing pass's view (runs of accesses skipped undecoded): the thread's
            // synchronization records, in order.
            let sync: Vec<Record> = per_thread_expected[&tid]
                .iter()
                .filter(|r| r.seq().is_some())
                .copied()
                .collect();
            assert!(
                sync.len() > 1000,
                "thread {tid}: {} sync records",
                sync.len()
            );
            assert_eq!(s.sync_records().unwrap(), sync, "thread {tid}");
            let got: Vec<Record> = s.map(|r| r.unwrap()).collect();
            assert_eq!(&got, &per_thread_expected[&tid], "thread {tid}");
        }
    }
}

#[test]
fn empty_trace_roundtrips() {
    let mut file = Vec::new();
    let w = Writer::new(&mut file, header()).unwrap();
    let t = w.finish().unwrap();
    assert_eq!(t.records, 0);
    let mut r = Reader::new(&file[..]).unwrap();
    assert!(r.next_record().unwrap().is_none());
}

fn read_all(file: &[u8]) -> Result<u64, Error> {
    let mut n = 0;
    for item in Reader::new(file)? {
        item?;
        n += 1;
    }
    Ok(n)
}

#[test]
fn every_truncation_is_an_error() {
    let (file, _) = random_trace(7, 5_000, 2);
    assert_eq!(read_all(&file).unwrap(), 5_000);
    // Cutting the file anywhere, including exactly at a chunk boundary, must be an error.
    let step = (file.len() / 997).max(1);
    let mut cuts: Vec<usize> = (0..file.len()).step_by(step).collect();
    cuts.extend([file.len() - 1, file.len() - 9, 13, 14, 0]);
    for cut in cuts {
        let e = read_all(&file[..cut]).expect_err(&format!("cut at {cut} read as valid"));
        let msg = e.to_string();
        assert!(
            msg.contains("truncated") || msg.contains("end marker"),
            "cut at {cut}: {msg}"
        );
    }
    // The same through per_thread.
    let e = Reader::new(&file[..file.len() - 9])
        .unwrap()
        .per_thread()
        .err()
        .unwrap();
    assert!(matches!(e, Error::MissingEnd { .. }), "{e}");
}

#[test]
fn corruption_is_reported_with_its_place() {
    let (file, _) = random_trace(9, 50_000, 1);
    // Not a trace.
    let mut bad = file.clone();
    bad[0] = b'X';
    assert!(matches!(
        Reader::new(&bad[..]).err().unwrap(),
        Error::BadMagic { .. }
    ));
    // Unknown chunk kind where the first chunk starts.
    let hlen = u32::from_le_bytes(file[10..14].try_into().unwrap()) as usize;
    let mut bad = file.clone();
    bad[14 + hlen] = 7;
    let e = read_all(&bad).unwrap_err();
    assert!(
        matches!(e, Error::UnknownChunkKind { offset, chunk: 0, kind: 7 } if offset == (14 + hlen) as u64),
        "{e}"
    );
    // A flipped byte inside the compressed data: zstd's checks or ours must catch it, or
    // the records decode differently; it must never panic. (zstd frames carry no checksum
    // by default, so only a structural error is guaranteed for some flips.)
    for k in [40usize, 100, 500] {
        let mut bad = file.clone();
        bad[14 + hlen + 21 + k] ^= 0x5a;
        let _ = read_all(&bad);
    }
    // Trailing garbage after the end marker.
    let mut bad = file.clone();
    bad.push(0);
    assert!(matches!(
        read_all(&bad).unwrap_err(),
        Error::TrailingBytes { .. }
    ));
    // A wrong total in the end marker.
    let mut bad = file.clone();
    let n = bad.len();
    bad[n - 8] ^= 1;
    assert!(matches!(
        read_all(&bad).unwrap_err(),
        Error::CountMismatch { .. }
    ));
}

#[test]
fn unknown_tag_inside_chunk_names_chunk_and_offset() {
    // Hand-made chunk: one valid load, then tag 0x0f (a code record's type with reserved
    // bits set; every record type 0..7 is taken).
    let mut raw = Vec::new();
    let mut st = EncState::default();
    encode(
        &mut raw,
        &Record::Access {
            kind: AccessKind::Load,
            addr: 0x1234,
            size: 4,
            icount: 2,
        },
        &mut st,
    );
    let good_len = raw.len();
    // The writer validates producer chunks...
    let mut file = Vec::new();
    let mut w = Writer::new(&mut file, header()).unwrap();
    let mut bad_raw = raw.clone();
    bad_raw.push(0x0f);
    let e = w.write_chunk(5, 0, &bad_raw).unwrap_err();
    assert!(
        e.to_string().contains("tag 0x0f: only access records"),
        "{e}"
    );
    w.write_chunk(5, 0, &raw).unwrap();
    w.finish().unwrap();
    // ...so corrupt a valid file by hand: replace the chunk with one holding the bad tag.
    let hlen = u32::from_le_bytes(file[10..14].try_into().unwrap()) as usize;
    let comp = zstd::bulk::compress(&bad_raw, 3).unwrap();
    let mut bad = file[..14 + hlen].to_vec();
    bad.push(1);
    bad.extend(5u32.to_le_bytes());
    bad.extend((comp.len() as u32).to_le_bytes());
    bad.extend((bad_raw.len() as u32).to_le_bytes());
    bad.extend(0u64.to_le_bytes());
    bad.extend(&comp);
    bad.push(0);
    bad.extend(2u64.to_le_bytes());
    let e = read_all(&bad).unwrap_err();
    match &e {
        Error::BadRecord {
            chunk,
            tid,
            record_offset,
            ..
        } => {
            assert_eq!((*chunk, *tid, *record_offset), (0, 5, good_len));
        }
        _ => panic!("wrong error {e}"),
    }
    let msg = e.to_string();
    assert!(msg.contains("chunk 0") && msg.contains("thread 5"), "{msg}");
}

#[test]
fn producer_chunks_and_pushes_mix() {
    let recs: Vec<Record> = (0..1000u64)
        .map(|i| Record::Access {
            kind: AccessKind::Store,
            addr: 0x7fff_0000 + i * 8,
            size: 8,
            icount: 3,
        })
        .collect();
    let mut raw = Vec::new();
    let mut st = EncState::default();
    for r in &recs {
        encode(&mut raw, r, &mut st);
    }
    let mut file = Vec::new();
    let mut w = Writer::new(&mut file, header()).unwrap();
    w.write_chunk(1, 0, &raw).unwrap();
    w.push(2, &Record::ThreadExit { seq: 9 }).unwrap();
    w.write_chunk(1, 0, &raw).unwrap();
    let t = w.finish().unwrap();
    assert_eq!(t.records, 2001);
    assert_eq!(t.accesses, 2000);
    // Sequential stores 8 bytes apart: one tag, one delta byte, one icount byte, then zstd.
    assert!(t.file_bytes < 400, "{t:?}");
    let streams = Reader::new(&file[..]).unwrap().per_thread().unwrap();
    let t1: Vec<Record> = streams
        .threads
        .into_iter()
        .next()
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(t1.len(), 2000);
    assert_eq!(&t1[..1000], &recs[..]);
    assert_eq!(&t1[1000..], &recs[..]);
}

#[test]
fn first_seq_is_the_first_sync_record() {
    let mut file = Vec::new();
    let mut w = Writer::new(&mut file, header()).unwrap();
    w.push(1, &Record::Instructions(5)).unwrap();
    w.push(1, &Record::ThreadStart { parent: 0, seq: 42 })
        .unwrap();
    w.push(1, &Record::ThreadExit { seq: 50 }).unwrap();
    w.finish().unwrap();
    let s = Reader::new(&file[..]).unwrap().per_thread().unwrap();
    assert_eq!(s.threads[0].chunk_first_seqs(), vec![42]);
}

#[test]
fn header_can_be_rewritten_within_its_room() {
    let mut file = Vec::new();
    let mut w = Writer::with_header_room(&mut file, header(), 200).unwrap();
    w.push(1, &Record::Instructions(5)).unwrap();
    w.finish().unwrap();
    let mut h = header();
    h.load_bias_source = Some("confirmed: the entry point ran at 0x109060".into());
    let mut cur = std::io::Cursor::new(file);
    tracefmt::rewrite_header(&mut cur, &h).unwrap();
    let file = cur.into_inner();
    let r = Reader::new(&file[..]).unwrap();
    assert_eq!(r.header(), &h);
    assert_eq!(read_all(&file).unwrap(), 1);
    h.load_bias_source = Some("x".repeat(400));
    let mut cur = std::io::Cursor::new(file);
    let e = tracefmt::rewrite_header(&mut cur, &h).unwrap_err();
    assert!(e.to_string().contains("room"), "{e}");
}

/// A stream read through a [`BatchReader`]: its records, then the error that ended it.
fn read_batches(s: ThreadStream, ahead: bool) -> (Vec<Record>, Option<String>) {
    let mut r = BatchReader::new(s, ahead);
    let mut out = Vec::new();
    while let Some(b) = r.next_batch() {
        match b {
            Ok(Batch::Accesses(a)) => out.extend(a.iter().map(|&a| Record::from(a))),
            Ok(Batch::Other(rec)) => out.push(rec),
            Err(e) => return (out, Some(e.to_string())),
        }
    }
    (out, None)
}

/// A stream iterated record by record: its records, then the error that ended it.
fn read_records(s: ThreadStream) -> (Vec<Record>, Option<String>) {
    let mut out = Vec::new();
    for r in s {
        match r {
            Ok(rec) => out.push(rec),
            Err(e) => return (out, Some(e.to_string())),
        }
    }
    (out, None)
}

#[test]
fn batch_readers_here_and_ahead_give_the_records_and_errors_of_the_stream() {
    let (file, _) = random_trace(11, 300_000, 2);
    // Valid, and with one compressed byte flipped in a few places (whatever the flip does:
    // an error or different records, the three ways of reading must agree).
    let hlen = u32::from_le_bytes(file[10..14].try_into().unwrap()) as usize;
    let mut files = vec![file.clone()];
    for k in [30usize, 2000, 40_000] {
        let mut bad = file.clone();
        bad[14 + hlen + 21 + k] ^= 0x5a;
        files.push(bad);
    }
    let mut errors = 0;
    for f in &files {
        let split = || Reader::new(&f[..]).and_then(|r| r.per_thread());
        let Ok(streams) = split() else {
            continue;
        };
        let want: Vec<_> = streams.threads.into_iter().map(read_records).collect();
        for ahead in [false, true] {
            let got: Vec<_> = split()
                .unwrap()
                .threads
                .into_iter()
                .map(|s| read_batches(s, ahead))
                .collect();
            assert_eq!(got, want, "ahead {ahead}");
        }
        errors += want.iter().filter(|(_, e)| e.is_some()).count();
    }
    assert!(
        errors > 0,
        "no flip made an error: the error path went untested"
    );
}

#[test]
fn a_reader_dropped_early_stops_its_helper() {
    let (file, _) = random_trace(12, 300_000, 1);
    let streams = Reader::new(&file[..]).unwrap().per_thread().unwrap();
    for s in streams.threads {
        let mut r = BatchReader::new(s, true);
        assert!(matches!(r.next_batch(), Some(Ok(_))));
        // The helper is blocked on a full queue or still decoding; dropping must not hang.
        drop(r);
    }
}

/// Issue 19: the default zstd level went from 3 to 2 (and the QEMU plugin takes `level=N`).
/// A file that the writer of 8d4da69 (level 3, before the change) wrote from
/// `random_trace(0x005e_ed19, 3000, 2)` still reads to the same records, and the writer set to
/// level 3 writes it byte for byte again: zstd frames decode at any level, and nothing else in
/// the file depends on it.
#[test]
fn a_file_written_at_the_old_zstd_level_reads_alike() {
    let old = include_bytes!("data/level3.pmt");
    let (_, pushed) = random_trace(0x005e_ed19, 3000, 2);
    let mut r = Reader::new(&old[..]).unwrap();
    let mut got = Vec::new();
    while let Some(x) = r.next_record().unwrap() {
        got.push(x);
    }
    // The reader gives each thread's records in order, threads one chunk at a time.
    let per_thread = |v: &[(u32, Record)], tid: u32| -> Vec<Record> {
        v.iter().filter(|x| x.0 == tid).map(|x| x.1).collect()
    };
    assert_eq!(got.len(), pushed.len());
    for tid in [100, 101] {
        assert_eq!(
            per_thread(&got, tid),
            per_thread(&pushed, tid),
            "thread {tid}"
        );
    }
    let mut again = Vec::new();
    let mut w = Writer::new(&mut again, header()).unwrap();
    w.set_zstd_level(3).unwrap();
    for (tid, rec) in &pushed {
        w.push(*tid, rec).unwrap();
    }
    w.finish().unwrap();
    assert!(again == old[..], "level 3 no longer writes the old bytes");
}

/// Every zstd level from the fastest negative one to the highest writes a file that reads to
/// the records pushed; the levels do differ in the bytes written; a level zstd does not have
/// is refused.
#[test]
fn every_zstd_level_roundtrips() {
    let (_, pushed) = random_trace(0x1e7e1, 20_000, 3);
    let mut sizes = Vec::new();
    for level in [
        tracefmt::min_zstd_level(),
        -5,
        -1,
        1,
        tracefmt::ZSTD_LEVEL,
        3,
        tracefmt::max_zstd_level(),
    ] {
        let mut file = Vec::new();
        let mut w = Writer::new(&mut file, header()).unwrap();
        w.set_zstd_level(level).unwrap();
        for (tid, rec) in &pushed {
            w.push(*tid, rec).unwrap();
        }
        let t = w.finish().unwrap();
        assert_eq!(t.file_bytes, file.len() as u64);
        let mut r = Reader::new(&file[..]).unwrap();
        let mut got = Vec::new();
        while let Some(x) = r.next_record().unwrap() {
            got.push(x);
        }
        for tid in [100, 101, 102] {
            let a: Vec<_> = got.iter().filter(|x| x.0 == tid).map(|x| x.1).collect();
            let b: Vec<_> = pushed.iter().filter(|x| x.0 == tid).map(|x| x.1).collect();
            assert_eq!(a, b, "level {level}, thread {tid}");
        }
        sizes.push((level, file.len()));
    }
    // The fastest level stores nearly everything raw; the highest compresses most.
    assert!(sizes[0].1 > sizes[6].1, "{sizes:?}");
    let mut w = Writer::new(Vec::new(), header()).unwrap();
    let e = w
        .set_zstd_level(tracefmt::max_zstd_level() + 1)
        .unwrap_err();
    let want = format!("zstd level {} is outside", tracefmt::max_zstd_level() + 1);
    assert!(e.to_string().contains(&want), "{e}");
    assert!(w.set_zstd_level(tracefmt::min_zstd_level() - 1).is_err());
}
