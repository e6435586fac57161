//! The writer thread's work on its own, without QEMU (issue 19: `pmusim trace record` at
//! 100 M references per second): a recorded trace's first thread turned back into the raw
//! words the plugin's callbacks append (`tracefmt::words`), then fed to the writer's encoder
//! (`ThreadEnc::feed`) in buffers of `buffer::BUFFER_WORDS` words, as the writer thread gets
//! them, optionally through zstd (`tracefmt::Writer::write_counted` into `io::sink`).
//!
//! ```text
//! cargo run --release -p qemu-tracer --example enc_bench -- dump TRACE WORDS [MAX_RECORDS]
//! cargo run --release -p qemu-tracer --example enc_bench -- run WORDS [encode|compress] [ROUNDS] [ZSTD_LEVEL]
//! cargo run --release -p qemu-tracer --example enc_bench -- levels WORDS LEVEL...
//! cargo run --release -p qemu-tracer --example enc_bench -- zparams WORDS SPEC...   # l2,mml7,hlog14
//! ```
//!
//! `run` prints the time per round, ns per word, and a hash of the encoded chunk bytes (with
//! the records and accesses counted), so that two encoders can be compared byte for byte.

use qemu_tracer::words::{self, Encoded, ThreadEnc};
use std::hash::Hasher;
use std::io::{Read, Write};
use std::time::Instant;
use tracefmt::{AccessKind, Record};

fn dump(trace: &str, out: &str, max: u64) {
    let f = std::io::BufReader::new(std::fs::File::open(trace).unwrap());
    let mut r = tracefmt::Reader::new(f).unwrap();
    let mut ws: Vec<u64> = Vec::new();
    let mut first = None;
    let mut n = 0u64;
    while let Some((tid, rec)) = r.next_record().unwrap() {
        if *first.get_or_insert(tid) != tid {
            continue;
        }
        match rec {
            Record::Access {
                kind,
                addr,
                size,
                icount,
            } => {
                let store = kind != AccessKind::Load;
                let c = words::code(size.trailing_zeros(), store);
                let m = if kind == AccessKind::Modify {
                    words::MODIFY
                } else {
                    0
                };
                match words::access(c, addr, u64::from(icount)) {
                    Some(w) => ws.push(w | m),
                    None => {
                        let lc = c | if m != 0 { words::LONG_MODIFY } else { 0 };
                        words::push_long_access(&mut ws, lc, addr, u64::from(icount))
                    }
                }
            }
            Record::Code { addr, bytes, insns } => {
                let b = words::CodeBlock { addr, bytes, insns };
                match words::inline_code(&b) {
                    Some(w) => ws.push(w),
                    None => ws.extend_from_slice(&[
                        words::ESC | words::ESC_CODE_LONG,
                        addr,
                        u64::from(bytes) | (u64::from(insns) << 32),
                    ]),
                }
            }
            r => words::push_record(&mut ws, &r),
        }
        n += 1;
        if n >= max {
            break;
        }
    }
    let bytes: Vec<u8> = ws.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(out, bytes).unwrap();
    eprintln!("{n} records, {} words -> {out}", ws.len());
}

fn run(path: &str, compress: bool, rounds: usize, level: i32) {
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .unwrap()
        .read_to_end(&mut bytes)
        .unwrap();
    let ws: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    drop(bytes);
    let cuts = cuts(&ws);
    for round in 0..rounds {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        let (mut recs, mut accs, mut raw) = (0u64, 0u64, 0u64);
        let mut tw = tracefmt::Writer::new(
            std::io::sink(),
            tracefmt::Header::new("q", "p", &[], "x86_64"),
        )
        .unwrap();
        tw.set_zstd_level(level).unwrap();
        let mut enc = ThreadEnc::new(1);
        let t = Instant::now();
        let c0 = cpu_time();
        let mut emit = |e: Encoded<'_>| -> Result<(), String> {
            recs += e.records;
            accs += e.accesses;
            raw += e.raw.len() as u64;
            if compress {
                tw.write_counted(e.tid, e.first_seq, e.raw, e.records, e.accesses)
                    .map_err(|e| e.to_string())?;
            }
            if round == 0 {
                h.write(e.raw);
            }
            Ok(())
        };
        for c in cuts.windows(2) {
            // SAFETY: the words of `dump`, which has no `ESC_CODE` words.
            unsafe { enc.feed(&ws[c[0]..c[1]], 0, &mut emit) }.unwrap();
        }
        enc.emit(&mut emit).unwrap();
        let wall = t.elapsed().as_secs_f64();
        let dt = cpu_time() - c0;
        let file = tw.finish().unwrap().file_bytes;
        println!(
            "round {round}: {dt:.3} s CPU ({wall:.3} s wall), {:.2} ns/word of CPU, {recs} records, {accs} accesses, {raw} raw bytes, {file} file bytes, hash {:016x}",
            dt * 1e9 / ws.len() as f64,
            h.finish()
        );
        std::io::stdout().flush().unwrap();
    }
}

/// Buffers of about `BUFFER_WORDS`, as `ThreadBuf::flush` hands them over, cut before an
/// access or inline code word (a word of an escape's payload could look like one; a cut
/// there would fail the run, which it does not on the python trace).
fn cuts(ws: &[u64]) -> Vec<usize> {
    let mut cuts = vec![0];
    let mut at = 0;
    while at < ws.len() {
        let mut end = (at + 1 + qemu_tracer::buffer::BUFFER_WORDS).min(ws.len());
        while end < ws.len() && ws[end] & words::ESC != 0 && ws[end] & (1 << 62) == 0 {
            end += 1;
        }
        cuts.push(end);
        at = end;
    }
    cuts
}

/// zstd alone at each of `levels`: the words are encoded once into chunks, then each level
/// compresses all of them (`tracefmt::Writer::write_counted` into `io::sink`), best thread
/// CPU time of 3 rounds, and the file's bytes.
fn levels(path: &str, levels: &[i32]) {
    let ws: Vec<u64> = std::fs::read(path)
        .unwrap()
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let mut chunks: Vec<(Vec<u8>, u64, u64)> = Vec::new();
    let mut enc = ThreadEnc::new(1);
    let mut keep = |e: Encoded<'_>| -> Result<(), String> {
        chunks.push((e.raw.to_vec(), e.records, e.accesses));
        Ok(())
    };
    for c in cuts(&ws).windows(2) {
        // SAFETY: the words of `dump`, which has no `ESC_CODE` words.
        unsafe { enc.feed(&ws[c[0]..c[1]], 0, &mut keep) }.unwrap();
    }
    enc.emit(&mut keep).unwrap();
    for &level in levels {
        let (mut best, mut bytes) = (f64::MAX, 0);
        for _ in 0..3 {
            let mut tw = tracefmt::Writer::new(
                std::io::sink(),
                tracefmt::Header::new("q", "p", &[], "x86_64"),
            )
            .unwrap();
            tw.set_zstd_level(level).unwrap();
            let c0 = cpu_time();
            for (raw, records, accesses) in &chunks {
                tw.write_counted(1, 0, raw, *records, *accesses).unwrap();
            }
            best = best.min(cpu_time() - c0);
            bytes = tw.finish().unwrap().file_bytes;
        }
        println!(
            "level {level:3}: zstd {best:.3} s CPU, {:.2} ns/word, {bytes} file bytes",
            best * 1e9 / ws.len() as f64
        );
    }
}

/// zstd alone with other parameters: the words are encoded once into chunks, then each spec
/// (`l2`, `l2,mml7`, `l2,hlog14`, `l2,wlog17`, `l2,tlen4`: level, then minimum match, hash
/// log, window log, target length) compresses all of
/// them with a `zstd::bulk::Compressor`; best thread CPU time of 3 rounds, compressed bytes.
fn zparams(path: &str, specs: &[String]) {
    use zstd::zstd_safe::CParameter;
    let ws: Vec<u64> = std::fs::read(path)
        .unwrap()
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let mut chunks: Vec<Vec<u8>> = Vec::new();
    let mut enc = ThreadEnc::new(1);
    let mut keep = |e: Encoded<'_>| -> Result<(), String> {
        chunks.push(e.raw.to_vec());
        Ok(())
    };
    for c in cuts(&ws).windows(2) {
        // SAFETY: the words of `dump`, which has no `ESC_CODE` words.
        unsafe { enc.feed(&ws[c[0]..c[1]], 0, &mut keep) }.unwrap();
    }
    enc.emit(&mut keep).unwrap();
    let raw: usize = chunks.iter().map(Vec::len).sum();
    println!("{} chunks, {raw} raw bytes", chunks.len());
    for spec in specs {
        let mut level = tracefmt::ZSTD_LEVEL;
        let mut params = Vec::new();
        for p in spec.split(',') {
            let num = |k: &str| p[k.len()..].parse::<u32>().unwrap();
            if let Some(l) = p.strip_prefix('l') {
                level = l.parse().unwrap();
            } else if p.starts_with("mml") {
                params.push(CParameter::MinMatch(num("mml")));
            } else if p.starts_with("hlog") {
                params.push(CParameter::HashLog(num("hlog")));
            } else if p.starts_with("wlog") {
                params.push(CParameter::WindowLog(num("wlog")));
            } else if p.starts_with("tlen") {
                params.push(CParameter::TargetLength(num("tlen")));
            } else {
                panic!("unknown parameter {p}");
            }
        }
        let (mut best, mut bytes) = (f64::MAX, 0);
        for _ in 0..3 {
            let mut c = zstd::bulk::Compressor::new(level).unwrap();
            for p in &params {
                c.set_parameter(*p).unwrap();
            }
            let mut out = Vec::with_capacity(4 << 20);
            let c0 = cpu_time();
            bytes = 0;
            for raw in &chunks {
                out.clear();
                c.compress_to_buffer(raw, &mut out).unwrap();
                bytes += out.len();
            }
            best = best.min(cpu_time() - c0);
        }
        println!(
            "{spec:>16}: zstd {best:.3} s CPU, {:.2} ns/word, {bytes} bytes",
            best * 1e9 / ws.len() as f64
        );
    }
}

/// This thread's CPU time: what the encoder costs, whatever the machine's load.
fn cpu_time() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out pointer.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    match a.get(1).map(String::as_str) {
        Some("dump") => dump(
            &a[2],
            &a[3],
            a.get(4).map_or(u64::MAX, |s| s.parse().unwrap()),
        ),
        Some("run") => run(
            &a[2],
            a.get(3).is_some_and(|s| s == "compress"),
            a.get(4).map_or(3, |s| s.parse().unwrap()),
            a.get(5)
                .map_or(tracefmt::ZSTD_LEVEL, |s| s.parse().unwrap()),
        ),
        Some("levels") => levels(
            &a[2],
            &a[3..]
                .iter()
                .map(|s| s.parse().unwrap())
                .collect::<Vec<_>>(),
        ),
        Some("zparams") => zparams(&a[2], &a[3..]),
        _ => eprintln!(
            "usage: enc_bench dump TRACE WORDS [MAX] | run WORDS [encode|compress] [ROUNDS] \
             [LEVEL] | levels WORDS LEVEL..."
        ),
    }
}
