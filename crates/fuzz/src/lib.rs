//! A small seeded fuzzing harness for pmusim's parsers (issue 17, item 2).
//!
//! Every parser that reads user input (the native trace reader, lackey text, range files,
//! presets, monitor configurations, register values for `decode`) gets a test in `tests/` that
//! feeds it random and mutated inputs through [`run`]. The properties checked for each case:
//!
//! * **no panic**: the parser returns `Ok` or `Err`; a panic fails the test and prints the case
//!   (its index, the seed that regenerates it, and the input);
//! * **no hang**: a watchdog thread aborts the process, naming the case, when one case takes
//!   longer than [`CASE_LIMIT`];
//! * **no unbounded memory**: with [`CountingAlloc`] as the test binary's global allocator,
//!   a case that asks for one block larger than [`ALLOC_LIMIT`] fails (an input claiming a huge
//!   size must be refused, not allocated);
//! * what each test adds (errors name the place: file, line, byte offset, field).
//!
//! Case counts: [`cases`] returns the default (10^4) or `PMUSIM_FUZZ_CASES` when set (the
//! longer check uses 10^6). `PMUSIM_FUZZ_SEED` changes the base seed; `PMUSIM_FUZZ_CASE=N`
//! runs only case N (to replay a failure); `PMUSIM_FUZZ_SHARD=k/n` runs every nth case from k. No fuzzing framework is used: generators are a few
//! lines each, cases replay exactly from (seed, index), and it all runs on stable Rust in the
//! ordinary test harness.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::fmt::Debug;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Cases per target in the default test run.
pub const DEFAULT_CASES: u64 = 10_000;
/// Longest time one case may take before the watchdog aborts the run (generous: the machine
/// running the tests may be loaded).
pub const CASE_LIMIT: Duration = Duration::from_secs(20);
/// Largest single allocation a case may make. Parsers read inputs of at most a few KiB here;
/// anything this large means a size field from the input was believed.
pub const ALLOC_LIMIT: usize = 256 << 20;

/// A seeded generator (splitmix64): tiny, fast, and the same on every platform.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// A value in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.u64() as u128 * n as u128) >> 64) as u64
    }
    /// A uniformly chosen element.
    pub fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len() as u64) as usize]
    }
    pub fn chance(&mut self, num: u64, den: u64) -> bool {
        self.below(den) < num
    }
    /// A number that is often a boundary value: 0, 1, powers of two and their neighbours,
    /// the extremes of each integer width, or random.
    pub fn interesting(&mut self) -> u64 {
        match self.below(8) {
            0 => *self.pick(&[0, 1, 2, 3, 7, 8, 16, 63, 64, 255, 256, 1000]),
            1 => {
                let b = self.below(64);
                (1u64 << b).wrapping_add(self.below(3)).wrapping_sub(1)
            }
            2 => *self.pick(&[
                u8::MAX as u64,
                u16::MAX as u64,
                u32::MAX as u64,
                i32::MAX as u64,
                i64::MAX as u64,
                u64::MAX,
                1 << 31,
                1 << 32,
                1 << 63,
            ]),
            3 => self.u64(),
            _ => self.below(100),
        }
    }
}

/// Number of cases per target: `PMUSIM_FUZZ_CASES` or [`DEFAULT_CASES`].
pub fn cases() -> u64 {
    std::env::var("PMUSIM_FUZZ_CASES")
        .ok()
        .and_then(|s| s.replace('_', "").parse().ok())
        .unwrap_or(DEFAULT_CASES)
}

fn base_seed() -> u64 {
    std::env::var("PMUSIM_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_2026)
}

/// The seed of case `i` of target `name`: cases are independent, so any one replays alone.
pub fn case_seed(name: &str, i: u64) -> u64 {
    let mut h: u64 = base_seed() ^ 0xCBF2_9CE4_8422_2325;
    for b in name.bytes() {
        h = (h ^ b as u64).wrapping_mul(0x100_0000_01B3);
    }
    let mut r = Rng::new(h ^ i.wrapping_mul(0xD6E8_FEB8_6659_FD93));
    r.u64()
}

thread_local! {
    /// The largest single allocation this thread asked for since the last reset.
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}
static COUNTING: AtomicBool = AtomicBool::new(false);

/// The system allocator, remembering per thread the largest block asked for. Install it in a
/// fuzz test binary with `#[global_allocator] static A: fuzz::CountingAlloc = fuzz::CountingAlloc;`
/// so that [`run`] can check [`ALLOC_LIMIT`].
pub struct CountingAlloc;

impl CountingAlloc {
    fn note(size: usize) {
        COUNTING.store(true, Ordering::Relaxed);
        let _ = LARGEST.try_with(|l| {
            if size > l.get() {
                l.set(size)
            }
        });
    }
}

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        CountingAlloc::note(layout.size());
        System.alloc(layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        CountingAlloc::note(layout.size());
        System.alloc_zeroed(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        CountingAlloc::note(new_size);
        System.realloc(ptr, layout, new_size)
    }
}

/// What a target run measured (also printed on standard error).
#[derive(Clone, Debug)]
pub struct Summary {
    pub cases: u64,
    pub ok: u64,
    pub err: u64,
    pub seconds: f64,
    pub slowest: Duration,
}

/// What one case's check returned: whether the parser accepted the input.
pub enum Outcome {
    Accepted,
    Refused,
}

impl<T, E> From<&Result<T, E>> for Outcome {
    fn from(r: &Result<T, E>) -> Outcome {
        if r.is_ok() {
            Outcome::Accepted
        } else {
            Outcome::Refused
        }
    }
}

/// Runs [`cases`] cases of target `name`: `gen` builds an input from the case's generator,
/// `check` feeds it to the parser, asserts the target's own properties and says whether the
/// input was accepted. Panics (failing the test) with the case's index, seed and input when a
/// case panics or allocates beyond [`ALLOC_LIMIT`]; aborts naming the case when one hangs.
pub fn run<I: Debug>(
    name: &str,
    mut gen: impl FnMut(&mut Rng) -> I,
    mut check: impl FnMut(&I) -> Outcome,
) -> Summary {
    let n = cases();
    let only: Option<u64> = std::env::var("PMUSIM_FUZZ_CASE")
        .ok()
        .and_then(|s| s.parse().ok());
    let current = Arc::new(AtomicU64::new(u64::MAX));
    let started = Arc::new(Mutex::new(Instant::now()));
    let done = Arc::new(AtomicBool::new(false));
    let watchdog = {
        let (current, started, done, name) = (
            current.clone(),
            started.clone(),
            done.clone(),
            name.to_string(),
        );
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                let i = current.load(Ordering::Relaxed);
                if i != u64::MAX && started.lock().unwrap().elapsed() > CASE_LIMIT {
                    eprintln!(
                        "fuzz {name}: case {i} (seed {:#x}) ran longer than {CASE_LIMIT:?}: a hang. Replay: PMUSIM_FUZZ_CASE={i}",
                        case_seed(&name, i)
                    );
                    std::process::abort();
                }
            }
        })
    };
    let t0 = Instant::now();
    let (mut ok, mut err) = (0u64, 0u64);
    let mut slowest = Duration::ZERO;
    let range = match only {
        Some(i) => i..i + 1,
        None => 0..n,
    };
    // `PMUSIM_FUZZ_SHARD=k/n`: only the cases i with i mod n = k, so that a longer check can
    // be spread over processes (the shards together run exactly the cases of one run).
    let (shard, shards) = std::env::var("PMUSIM_FUZZ_SHARD")
        .ok()
        .and_then(|s| {
            let (k, n) = s.split_once('/')?;
            Some((k.parse().ok()?, n.parse().ok()?))
        })
        .filter(|&(k, n): &(u64, u64)| k < n)
        .unwrap_or((0, 1));
    let range = range.filter(|i| i % shards == shard);
    let mut count = 0;
    for i in range {
        count += 1;
        let seed = case_seed(name, i);
        let input = gen(&mut Rng::new(seed));
        if only.is_some() {
            // Replaying one case: show it first, in case it hangs.
            eprintln!("fuzz {name}: case {i} (seed {seed:#x}) input: {input:?}");
        }
        let _ = LARGEST.try_with(|l| l.set(0));
        *started.lock().unwrap() = Instant::now();
        current.store(i, Ordering::Relaxed);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(&input)));
        current.store(u64::MAX, Ordering::Relaxed);
        let took = started.lock().unwrap().elapsed();
        slowest = slowest.max(took);
        let largest = LARGEST.try_with(|l| l.get()).unwrap_or(0);
        let shown = || {
            let s = format!("{input:?}");
            if s.len() > 4000 {
                format!("{}... ({} characters)", &s[..4000], s.len())
            } else {
                s
            }
        };
        match r {
            Err(_) => {
                done.store(true, Ordering::Relaxed);
                panic!(
                    "fuzz {name}: case {i} (seed {seed:#x}) panicked (message above). Replay: PMUSIM_FUZZ_CASE={i}\ninput: {}",
                    shown()
                );
            }
            Ok(o) => match o {
                Outcome::Accepted => ok += 1,
                Outcome::Refused => err += 1,
            },
        }
        if COUNTING.load(Ordering::Relaxed) && largest > ALLOC_LIMIT {
            done.store(true, Ordering::Relaxed);
            panic!(
                "fuzz {name}: case {i} (seed {seed:#x}) allocated one block of {largest} bytes (limit {ALLOC_LIMIT}). Replay: PMUSIM_FUZZ_CASE={i}\ninput: {}",
                shown()
            );
        }
    }
    done.store(true, Ordering::Relaxed);
    let _ = watchdog.join();
    let s = Summary {
        cases: count,
        ok,
        err,
        seconds: t0.elapsed().as_secs_f64(),
        slowest,
    };
    eprintln!(
        "fuzz {name}: {} cases ({} accepted, {} refused) in {:.2} s, slowest case {:.1} ms",
        s.cases,
        s.ok,
        s.err,
        s.seconds,
        s.slowest.as_secs_f64() * 1e3
    );
    s
}

/// Mutates `data` in place with 1 to 4 of: bit flips, byte overwrites with boundary values,
/// truncation, deletion, insertion, duplication of a slice, and overwriting 2/4/8 bytes with an
/// [`Rng::interesting`] little-endian integer (to hit length and count fields).
pub fn mutate(rng: &mut Rng, data: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(4) {
        let len = data.len() as u64;
        match rng.below(8) {
            0 if len > 0 => {
                let i = rng.below(len) as usize;
                data[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let i = rng.below(len) as usize;
                data[i] = *rng.pick(&[0, 1, 0x7f, 0x80, 0xff, b'\n', b' ', b'0', b'#', b'=']);
            }
            2 => data.truncate(rng.below(len + 1) as usize),
            3 if len > 0 => {
                let a = rng.below(len) as usize;
                let b = (a + 1 + rng.below(16) as usize).min(data.len());
                data.drain(a..b);
            }
            4 => {
                let i = rng.below(len + 1) as usize;
                let k = 1 + rng.below(8) as usize;
                let bytes: Vec<u8> = (0..k).map(|_| rng.u64() as u8).collect();
                data.splice(i..i, bytes);
            }
            5 if len > 0 => {
                let a = rng.below(len) as usize;
                let b = (a + 1 + rng.below(64) as usize).min(data.len());
                let at = rng.below(len + 1) as usize;
                let piece = data[a..b].to_vec();
                data.splice(at..at, piece);
            }
            _ if len > 0 => {
                let w = *rng.pick(&[2usize, 4, 8]);
                let i = rng.below(len) as usize;
                let v = rng.interesting().to_le_bytes();
                for (k, b) in v.iter().take(w).enumerate() {
                    if let Some(x) = data.get_mut(i + k) {
                        *x = *b;
                    }
                }
            }
            _ => data.push(rng.u64() as u8),
        }
    }
}

/// Mutates text at the token level (as well as bytes, through [`mutate`]): replaces a number
/// with a boundary value, duplicates or drops a line, or swaps a word for one from `words`.
/// The result may not be UTF-8 after a byte mutation; callers that need a `&str` use
/// `String::from_utf8_lossy`.
pub fn mutate_text(rng: &mut Rng, text: &str, words: &[&str]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    for _ in 0..1 + rng.below(3) {
        if lines.is_empty() {
            lines.push(String::new());
        }
        let i = rng.below(lines.len() as u64) as usize;
        match rng.below(6) {
            0 => {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
            1 => {
                lines.remove(i);
            }
            2 | 3 => {
                // Replace the k-th number of the line.
                let l = &lines[i];
                let spans = number_spans(l);
                if !spans.is_empty() {
                    let (a, b) = *rng.pick(&spans);
                    let v = rng.interesting();
                    let s = match rng.below(4) {
                        0 => format!("{v:#x}"),
                        1 => format!("-{v}"),
                        2 => format!("{}.5", v),
                        _ => v.to_string(),
                    };
                    lines[i] = format!("{}{}{}", &l[..a], s, &l[b..]);
                }
            }
            4 if !words.is_empty() => {
                let l = &lines[i];
                let w: Vec<&str> = l.split(' ').collect();
                let k = rng.below(w.len() as u64) as usize;
                let mut w2: Vec<String> = w.iter().map(|s| s.to_string()).collect();
                w2[k] = rng.pick(words).to_string();
                lines[i] = w2.join(" ");
            }
            _ => {
                let mut b = lines[i].clone().into_bytes();
                mutate(rng, &mut b);
                lines[i] = String::from_utf8_lossy(&b).into_owned();
            }
        }
    }
    let mut s = lines.join("\n");
    s.push('\n');
    s
}

/// Byte ranges of the runs of ASCII digits in `s`.
fn number_spans(s: &str) -> Vec<(usize, usize)> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let a = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
                i += 1;
            }
            out.push((a, i));
        } else {
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cases_replay_from_their_seed() {
        assert_eq!(case_seed("x", 7), case_seed("x", 7));
        assert_ne!(case_seed("x", 7), case_seed("x", 8));
        assert_ne!(case_seed("x", 7), case_seed("y", 7));
        let mut a = Rng::new(1);
        let mut b = Rng::new(1);
        let mut v1 = b"hello world 123".to_vec();
        let mut v2 = v1.clone();
        mutate(&mut a, &mut v1);
        mutate(&mut b, &mut v2);
        assert_eq!(v1, v2);
    }

    #[test]
    fn number_spans_find_digits() {
        assert_eq!(number_spans("a = 12, b = 3_0"), vec![(4, 6), (12, 15)]);
    }
}
