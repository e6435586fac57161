//! Fuzzing the native trace reader (`.pmt`, `docs/trace-format.md`): mutated valid files
//! (truncation, bit flips, wrong length and count fields) read in file order and split per
//! thread, and mutated raw record bytes fed to the record decoder.

use fuzz::{mutate, run, Outcome, Rng};
use tracefmt::{
    decode, decode_accesses, encode, Access, AccessKind, DecState, EncState, Error, Header, Reader,
    Record, Step, SyncPhase, Writer,
};

fn random_record(rng: &mut Rng, seq: &mut u64) -> Record {
    match rng.below(12) {
        0 => Record::Instructions(rng.interesting()),
        1 => {
            *seq += 1;
            Record::ThreadStart {
                parent: rng.below(4) as u32,
                seq: *seq,
            }
        }
        2 => {
            *seq += 1;
            Record::ThreadExit { seq: *seq }
        }
        3 => {
            *seq += 1;
            Record::Sync {
                seq: *seq,
                nr: rng.below(400),
                args: [rng.interesting(), rng.below(16), rng.interesting()],
                ret: rng.interesting() as i64,
                phase: if rng.chance(1, 2) {
                    SyncPhase::Entry
                } else {
                    SyncPhase::Return
                },
                timeout_ns: None,
            }
        }
        _ => Record::Access {
            kind: *rng.pick(&[AccessKind::Load, AccessKind::Store, AccessKind::Modify]),
            addr: if rng.chance(1, 4) {
                rng.interesting()
            } else {
                0x1000 + rng.below(4096)
            },
            size: *rng.pick(&[1, 2, 4, 8, 16, 3]),
            icount: rng.interesting() as u32,
        },
    }
}

/// A small valid trace: up to 3 threads and 40 records, sometimes with extra chunks of one
/// thread (written with `write_chunk`).
fn valid_trace_bytes(rng: &mut Rng) -> Vec<u8> {
    let mut h = Header::new("lackey", "/bin/true", &[], "x86_64");
    if rng.chance(1, 3) {
        h.load_bias = Some(rng.interesting());
    }
    let mut buf = Vec::new();
    {
        let mut w = Writer::new(&mut buf, &h).unwrap();
        let mut seq = 0;
        let threads = 1 + rng.below(3) as u32;
        for _ in 0..rng.below(40) {
            let tid = rng.below(threads as u64) as u32;
            let r = random_record(rng, &mut seq);
            w.push(tid, &r).unwrap();
            if rng.chance(1, 20) {
                let mut raw = Vec::new();
                let mut st = EncState::default();
                encode(&mut raw, &random_record(rng, &mut 0), &mut st);
                // Chunks of records without sequence numbers only (first_seq 0 would be
                // wrong for a sync record).
                let mut ok = Vec::new();
                let mut p = 0;
                let mut d = DecState::default();
                if decode(&raw, &mut p, &mut d).is_ok_and(|r| r.seq().is_none()) {
                    ok = raw;
                }
                if !ok.is_empty() {
                    w.write_chunk(tid, 0, &ok).unwrap();
                }
            }
        }
        w.finish().unwrap();
    }
    buf
}

/// An error names where it is: a byte offset, or (for the first bytes) what the file is not.
fn names_the_place(e: &Error) -> bool {
    let s = e.to_string();
    match e {
        Error::BadMagic { .. } => s.contains("not a pmusim trace"),
        Error::UnsupportedVersion { .. } => s.contains("version"),
        Error::Io(_) | Error::BadInput { .. } => false,
        _ => s.contains("byte "),
    }
}

/// Reads `bytes` in file order and per thread (as the replay does); both must agree on
/// whether the file is good.
fn read_all(bytes: &[u8]) -> Result<(), Error> {
    let mut n = 0u64;
    for r in Reader::new(bytes)? {
        r?;
        n += 1;
    }
    let streams = Reader::new(bytes)?.per_thread()?;
    let mut m = 0u64;
    let mut out = vec![Access::default(); 64];
    for mut s in streams.threads {
        s.sync_records()?;
        while let Some(step) = s.next_batch(&mut out) {
            match step? {
                Step::Accesses(k) => m += k as u64,
                Step::Other(_) => m += 1,
            }
        }
    }
    assert_eq!(
        n, m,
        "file order and per-thread order read different record counts"
    );
    Ok(())
}

#[test]
fn mutated_trace_files() {
    let s = run(
        "tracefmt-file",
        |rng| {
            let mut b = valid_trace_bytes(rng);
            mutate(rng, &mut b);
            b
        },
        |b| {
            let r = read_all(b);
            if let Err(e) = &r {
                assert!(names_the_place(e), "error without a place: {e}");
            }
            Outcome::from(&r)
        },
    );
    assert!(s.err > s.cases / 2, "most mutations must be caught: {s:?}");
}

#[test]
fn valid_trace_files_read_back() {
    run("tracefmt-valid", valid_trace_bytes, |b| {
        read_all(b).unwrap();
        Outcome::Accepted
    });
}

#[test]
fn mutated_record_bytes() {
    run(
        "tracefmt-records",
        |rng| {
            let mut raw = Vec::new();
            let mut st = EncState::default();
            let mut seq = 0;
            for _ in 0..rng.below(24) {
                encode(&mut raw, &random_record(rng, &mut seq), &mut st);
            }
            mutate(rng, &mut raw);
            raw
        },
        |raw| {
            // Record by record: every successful decode moves forward, an error stops.
            let mut pos = 0;
            let mut st = DecState::default();
            let mut res = Ok(());
            while pos < raw.len() {
                let before = pos;
                match decode(raw, &mut pos, &mut st) {
                    Ok(_) => assert!(pos > before && pos <= raw.len()),
                    Err(e) => {
                        assert!(e.offset <= raw.len(), "{e:?}");
                        res = Err(e);
                        break;
                    }
                }
            }
            // In batches: never past the end, and the batch decoder stops at what it cannot
            // take rather than skipping it.
            let mut pos = 0;
            let mut st = DecState::default();
            let mut out = [Access::default(); 8];
            loop {
                let n = decode_accesses(raw, &mut pos, &mut st, &mut out);
                assert!(pos <= raw.len());
                if n == 0 {
                    break;
                }
            }
            Outcome::from(&res)
        },
    );
}

#[test]
fn mutated_traces_open_for_replay() {
    use workload::trace::replay::{from_bytes, ThreadPlacement};
    run(
        "trace-replay-open",
        |rng| {
            let mut b = valid_trace_bytes(rng);
            if rng.chance(3, 4) {
                mutate(rng, &mut b);
            }
            b
        },
        |b| {
            let r = from_bytes("fuzz.pmt", b, None, ThreadPlacement::Pack);
            if let Err(e) = &r {
                assert!(e.to_string().starts_with("fuzz.pmt"), "{e}");
            }
            Outcome::from(&r)
        },
    );
}
