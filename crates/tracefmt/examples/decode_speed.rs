//! Decoding speed of a trace, for tuning the reader: records per second of decompression
//! and decoding, one record at a time (the iterator) and in batches (`next_batch`). Reports
//! the fastest of several passes, which is the least disturbed by other load on the host.
//!
//! ```text
//! cargo run --release -p tracefmt --example decode_speed -- FILE.pmt [passes]
//! ```

use std::time::Instant;
use tracefmt::{Access, Reader, Step};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(path) = args.first() else {
        eprintln!("usage: decode_speed FILE.pmt [passes]");
        std::process::exit(2);
    };
    let passes: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(5);
    let bytes = std::fs::read(path).expect("read the trace");
    let mut best = [f64::MAX; 2];
    let mut records = 0u64;
    for _ in 0..passes {
        for (m, best) in best.iter_mut().enumerate() {
            let streams = Reader::new(&bytes[..]).unwrap().per_thread().unwrap();
            let start = Instant::now();
            let mut n = 0u64;
            let mut sum = 0u64;
            for mut s in streams.threads {
                if m == 0 {
                    for r in s.by_ref() {
                        let r = r.unwrap();
                        sum = sum.wrapping_add(r.instructions());
                        n += 1;
                    }
                } else {
                    let mut batch = vec![Access::default(); 1024];
                    while let Some(step) = s.next_batch(&mut batch) {
                        match step.unwrap() {
                            Step::Accesses(k) => {
                                n += k as u64;
                                for a in &batch[..k] {
                                    sum = sum.wrapping_add(a.icount as u64);
                                }
                            }
                            Step::Other(r) => {
                                n += 1;
                                sum = sum.wrapping_add(r.instructions());
                            }
                        }
                    }
                }
            }
            *best = best.min(start.elapsed().as_secs_f64());
            records = n;
            std::hint::black_box(sum);
        }
    }
    // Decompression alone, for comparison.
    let hlen = u32::from_le_bytes(bytes[10..14].try_into().unwrap()) as usize;
    let mut zbest = f64::MAX;
    for _ in 0..passes {
        let start = Instant::now();
        let mut p = 14 + hlen;
        let mut d = zstd::bulk::Decompressor::new().unwrap();
        let mut raw = Vec::new();
        while bytes[p] == 1 {
            let clen = u32::from_le_bytes(bytes[p + 5..p + 9].try_into().unwrap()) as usize;
            let rlen = u32::from_le_bytes(bytes[p + 9..p + 13].try_into().unwrap()) as usize;
            raw.clear();
            raw.reserve(rlen);
            d.decompress_to_buffer(&bytes[p + 21..p + 21 + clen], &mut raw)
                .unwrap();
            p += 21 + clen;
        }
        zbest = zbest.min(start.elapsed().as_secs_f64());
    }
    println!("decompression alone {zbest:.3} s");
    println!(
        "{records} records; one at a time {:.3} s ({:.1} M records/s); batches {:.3} s ({:.1} M records/s)",
        best[0],
        records as f64 / best[0] / 1e6,
        best[1],
        records as f64 / best[1] / 1e6
    );
}
