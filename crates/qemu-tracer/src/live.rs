//! The live channel between the plugin and a simulation that runs while the program does
//! (`pmusim run --record`): the guest threads' raw record words ([`crate::words`]) in shared
//! memory, handed over block by block, with no encoding, compression or decoding between the
//! recorder and the simulator.
//!
//! Why: in a fused run the `.pmt` format is pure overhead. Encoding and zstd on the plugin's
//! writer thread and decompression and decoding in the replay took about 3 s of the 6 s of
//! CPU of python3 `sum(range(3_000_000))` (BENCHMARKS.md); the words the memory callback
//! appends are already what the simulator needs.
//!
//! The channel is one file in `/dev/shm` (sparse: only the pages touched take memory) that
//! `pmusim` creates and both processes map:
//!
//! | area | what |
//! | --- | --- |
//! | control (4 KiB) | ring indices, futex words, flags ([`Control`]) |
//! | header (1 MiB) | the trace header as JSON, rewritten under a sequence lock |
//! | code (256 MiB) | the [`CodeBlock`] descriptions of translated blocks (a bump arena): a code word holds an offset into it |
//! | sync log | one entry per synchronization record, indexed by its sequence number ([`SyncEntry`]) |
//! | queue | published blocks in publication order: (tid, block, words, last) |
//! | free ring | blocks the consumer has finished with |
//! | blocks | [`HARD_BLOCKS`] blocks of [`BLOCK_WORDS`] words (+ slack) |
//!
//! A guest thread appends its words straight into a block of the pool; a full block (or the
//! thread's records at a synchronization call, or at its end) is published on the queue, and
//! the thread takes a free block. **Back-pressure**: at most [`SOFT_BLOCKS`] blocks are in
//! use (published and not yet released, or being filled); a guest thread that needs one more
//! waits for the consumer to release one. Beyond that bound only while the consumer says it is
//! *starving* (it waits for the records of one thread while the queue is empty: that thread's
//! records may come only after other threads run, and those must not wait for a consumer that
//! waits for them), up to [`HARD_BLOCKS`].
//!
//! **Waiting** on either side spins briefly ([`SPINS`]), then sleeps on a futex word in the
//! shared file (`FUTEX_WAIT` without the private flag works across processes) with a timeout,
//! so a peer that died is noticed. Never a `sched_yield` loop: on the 2-core hosts this runs
//! on, a side that yields stays runnable and takes a share of a core from the other side (and
//! from any third process), which made the fused run bimodal (BENCHMARKS.md). The wakes have
//! a **hysteresis**, so that the two sides hand over batches of blocks rather than single
//! ones and each sleep lasts several blocks' work: a sleeping producer is woken when the
//! blocks in use have fallen to [`PRODUCER_WAKE_AT`] (or the consumer starves), a sleeping
//! consumer when [`CONSUMER_WAKE_AT`] blocks are queued, a partial block is published (a
//! thread's records at a synchronization call or its end), the recording ends, or a producer
//! is about to sleep itself. Neither side makes a wake system call for a peer that is not
//! asleep. `PMUSIM_LIVE_STATS=1` prints how often each side waited ([`Consumer::wait_stats`]).

use crate::words::CodeBlock;
use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// Words per block: 128 KiB.
pub const BLOCK_WORDS: usize = 1 << 14;
/// Room past [`BLOCK_WORDS`] for the record that fills a block (at most 10 words, see
/// `buffer`).
pub const BLOCK_SLACK: usize = 32;
const BLOCK_STRIDE: usize = BLOCK_WORDS + BLOCK_SLACK;
/// Blocks published and not yet released by the simulation before a guest thread waits for
/// one (besides the one each live guest thread fills): 2 MiB,
/// which stay in the host's last-level cache (32 MiB of them, 256 blocks, did not: the words
/// then came from memory on both sides).
pub const SOFT_BLOCKS: u32 = 16;
/// Blocks the pool can ever hold (4 GiB); also the ring sizes.
pub const HARD_BLOCKS: u32 = 1 << 15;
const HEADER_BYTES: usize = 1 << 20;
const CODE_BYTES: usize = 256 << 20;
/// Synchronization records the sync log holds (sequence numbers 1 to this).
pub const SYNC_ENTRIES: usize = 1 << 24;
const MAGIC: u64 = 0x4556_494c_544d_5550; // "PUMTLIVE"
/// Spin iterations (`pause`) before a side sleeps: a few microseconds, enough for a block
/// that is about to come; longer waits are the other side's work on several blocks.
const SPINS: u32 = 256;
/// A producer sleeping for a free block is woken when this many blocks or fewer are in use:
/// it then fills the freed half of the pool in one run while the consumer works through
/// the other half.
pub const PRODUCER_WAKE_AT: u64 = SOFT_BLOCKS as u64 / 2;
/// A consumer sleeping for a block is woken when this many are queued (or sooner, see the
/// module doc).
pub const CONSUMER_WAKE_AT: u64 = 4;

const CONTROL_OFF: usize = 0;
const HEADER_OFF: usize = 4096;
const CODE_OFF: usize = HEADER_OFF + HEADER_BYTES;
const SYNC_OFF: usize = CODE_OFF + CODE_BYTES;
const QUEUE_OFF: usize = SYNC_OFF + SYNC_ENTRIES * std::mem::size_of::<SyncEntry>();
const FREE_OFF: usize = QUEUE_OFF + HARD_BLOCKS as usize * 16;
const BLOCKS_OFF: usize = (FREE_OFF + HARD_BLOCKS as usize * 4).next_multiple_of(4096);
/// The size of the shared file.
pub const TOTAL_BYTES: usize = BLOCKS_OFF + HARD_BLOCKS as usize * BLOCK_STRIDE * 8;

/// A cache line of its own, so that the two sides' indices do not share one.
#[repr(C, align(64))]
#[derive(Default)]
struct Line<T>(T);

/// The control area at the start of the file.
#[repr(C)]
#[derive(Default)]
pub struct Control {
    magic: AtomicU64,
    /// Set by the plugin when it has mapped the file.
    attached: Line<AtomicU32>,
    /// Set by the plugin when the recording is finished: every block is published and the
    /// final header is written. 1: the program ended (exit or execve).
    done: AtomicU32,
    /// Published blocks (producer side).
    q_head: Line<AtomicU64>,
    /// Incremented with each publication; the consumer sleeps on it.
    q_futex: AtomicU32,
    consumer_sleeps: AtomicU32,
    /// Blocks taken off the queue (consumer side).
    q_tail: Line<AtomicU64>,
    /// Released blocks (consumer side).
    free_head: Line<AtomicU64>,
    /// Incremented with each release (and when starving changes); producers sleep on it.
    free_futex: AtomicU32,
    producer_sleeps: AtomicU32,
    /// Released blocks taken again (producer side).
    free_tail: Line<AtomicU64>,
    /// Blocks ever handed out from the untouched part of the pool.
    allocated: AtomicU32,
    /// The consumer waits for one thread's records and the queue is empty.
    starving: Line<AtomicU32>,
    /// Sequence lock of the header area: odd while the plugin writes it.
    header_seq: Line<AtomicU64>,
    header_len: AtomicU64,
    /// The largest sequence number in the sync log.
    max_seq: Line<AtomicU64>,
    /// How the two sides waited ([`Stat`]), for `PMUSIM_LIVE_STATS`: per wait, not per
    /// record.
    stats: Line<[AtomicU64; 8]>,
}

/// The counters of [`Control::stats`].
#[derive(Clone, Copy)]
enum Stat {
    /// Waits that ended while spinning.
    ProducerSpun = 0,
    /// Waits that went to sleep.
    ProducerSlept = 1,
    /// `FUTEX_WAIT` calls (a sleep may take several: timeouts, spurious returns).
    ProducerFutexWaits = 2,
    ConsumerSpun = 3,
    ConsumerSlept = 4,
    ConsumerFutexWaits = 5,
    /// `FUTEX_WAKE` calls made for a sleeping consumer.
    ConsumerWakes = 6,
    /// `FUTEX_WAKE` calls made for sleeping producers.
    ProducerWakes = 7,
}

impl Control {
    fn count(&self, s: Stat) {
        self.stats.0[s as usize].fetch_add(1, Ordering::Relaxed);
    }
}

/// One side's futex word, count of sleepers and counters.
struct Side<'a> {
    futex: &'a AtomicU32,
    sleeps: &'a AtomicU32,
    spun: Stat,
    slept: Stat,
    futex_waits: Stat,
}

/// One synchronization record in the sync log, at the index of its sequence number: what a
/// replay pairing futex waits with their wakes needs, available as soon as the record is made
/// (a thread's words reach the consumer only when its block is published).
#[repr(C)]
#[derive(Default)]
pub struct SyncEntry {
    /// 0 until the entry is written; then 1 + [`SyncKind`].
    pub ready: AtomicU32,
    pub tid: u32,
    /// The system call number, or the parent tid of a thread start.
    pub nr: u64,
    pub args: [u64; 3],
    pub ret: i64,
    /// A futex wait's timeout in nanoseconds, `u64::MAX` when none.
    pub timeout_ns: u64,
    /// 1: the return of a `clone` that created a thread (QEMU created its vCPU during the
    /// call); 0 otherwise.
    pub created: u64,
}

/// What a [`SyncEntry`] records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncKind {
    Start = 0,
    Exit = 1,
    Entry = 2,
    Return = 3,
}

/// A published block: whose words, where, how many, and whether the thread ended with them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub tid: u32,
    pub block: u32,
    pub words: u32,
    pub last: bool,
}

/// The mapped file.
struct Map {
    base: *mut u8,
}

// SAFETY: the mapping is shared memory accessed through atomics and the protocol above.
unsafe impl Send for Map {}
// SAFETY: as above.
unsafe impl Sync for Map {}

impl Map {
    fn open(file: &File) -> std::io::Result<Map> {
        // SAFETY: a shared mapping of the whole file; the file has TOTAL_BYTES bytes.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                TOTAL_BYTES,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_NORESERVE,
                std::os::fd::AsRawFd::as_raw_fd(file),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Map { base: p.cast() })
    }
    fn control(&self) -> &Control {
        // SAFETY: the control area is at offset 0, zero-initialized (all atomics valid).
        unsafe { &*self.base.add(CONTROL_OFF).cast::<Control>() }
    }
    fn queue(&self, i: u64) -> *mut u64 {
        // SAFETY: the index is reduced modulo the ring size.
        unsafe {
            self.base
                .add(QUEUE_OFF + (i % u64::from(HARD_BLOCKS)) as usize * 16)
                .cast()
        }
    }
    fn free(&self, i: u64) -> *mut u32 {
        // SAFETY: the index is reduced modulo the ring size.
        unsafe {
            self.base
                .add(FREE_OFF + (i % u64::from(HARD_BLOCKS)) as usize * 4)
                .cast()
        }
    }
    fn block(&self, b: u32) -> *mut u64 {
        assert!(b < HARD_BLOCKS);
        // SAFETY: within the blocks area.
        unsafe {
            self.base
                .add(BLOCKS_OFF + b as usize * BLOCK_STRIDE * 8)
                .cast()
        }
    }
    fn code_base(&self) -> u64 {
        self.base as u64 + CODE_OFF as u64
    }
    fn sync(&self, seq: u64) -> Option<&SyncEntry> {
        let i = usize::try_from(seq)
            .ok()
            .filter(|&i| i > 0 && i <= SYNC_ENTRIES)?;
        // SAFETY: within the sync area; entries are zero-initialized.
        Some(unsafe {
            &*self
                .base
                .add(SYNC_OFF + (i - 1) * std::mem::size_of::<SyncEntry>())
                .cast::<SyncEntry>()
        })
    }
}

impl Drop for Map {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `open`.
        unsafe { libc::munmap(self.base.cast(), TOTAL_BYTES) };
    }
}

fn futex_wait(word: &AtomicU32, seen: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: a futex wait on a word of the shared mapping (not private: the peer is another
    // process); it returns at a wake, a change of the word, a signal or the timeout.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            seen,
            &ts as *const libc::timespec,
        )
    };
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: wakes every waiter on the word.
    unsafe { libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX) };
}

/// Waits until `ready()` or `give_up()`: spins [`SPINS`] times, then calls `before_sleep`
/// and sleeps on the side's futex (counted in its `sleeps`, which the waker reads to skip
/// the wake system call when nobody sleeps) with a 10 ms timeout between checks. Returns
/// `ready()`.
fn wait_for(
    c: &Control,
    side: Side<'_>,
    mut ready: impl FnMut() -> bool,
    mut give_up: impl FnMut() -> bool,
    before_sleep: impl FnOnce(),
) -> bool {
    for _ in 0..SPINS {
        if ready() {
            c.count(side.spun);
            return true;
        }
        std::hint::spin_loop();
    }
    c.count(side.slept);
    before_sleep();
    loop {
        let seen = side.futex.load(Ordering::Acquire);
        side.sleeps.fetch_add(1, Ordering::SeqCst);
        // A waker changes the state, then the futex word, then reads `sleeps`: either it
        // sees this sleeper, or the state change is visible below, or the word differs
        // from `seen` and the wait returns at once.
        if ready() || give_up() {
            side.sleeps.fetch_sub(1, Ordering::Relaxed);
            return ready();
        }
        c.count(side.futex_waits);
        futex_wait(side.futex, seen, Duration::from_millis(10));
        side.sleeps.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Control {
    fn producer_side(&self) -> Side<'_> {
        Side {
            futex: &self.free_futex,
            sleeps: &self.producer_sleeps,
            spun: Stat::ProducerSpun,
            slept: Stat::ProducerSlept,
            futex_waits: Stat::ProducerFutexWaits,
        }
    }
    fn consumer_side(&self) -> Side<'_> {
        Side {
            futex: &self.q_futex,
            sleeps: &self.consumer_sleeps,
            spun: Stat::ConsumerSpun,
            slept: Stat::ConsumerSlept,
            futex_waits: Stat::ConsumerFutexWaits,
        }
    }
    /// Wakes a sleeping consumer (after a change of the queue or of `done`).
    fn wake_consumer(&self) {
        self.q_futex.fetch_add(1, Ordering::Release);
        if self.consumer_sleeps.load(Ordering::SeqCst) != 0 {
            self.count(Stat::ConsumerWakes);
            futex_wake(&self.q_futex);
        }
    }
    /// Wakes sleeping producers (after a release or a change of `starving`).
    fn wake_producers(&self) {
        self.free_futex.fetch_add(1, Ordering::Release);
        if self.producer_sleeps.load(Ordering::SeqCst) != 0 {
            self.count(Stat::ProducerWakes);
            futex_wake(&self.free_futex);
        }
    }
}

/// The plugin's side.
pub struct Producer {
    map: Map,
    /// Serializes the guest threads' publications and block takes.
    lock: Mutex<()>,
    /// The next free byte of the code arena.
    code_next: AtomicU64,
}

impl Producer {
    /// Maps the channel file `pmusim` created.
    pub fn attach(path: &str) -> Result<Producer, String> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| format!("cannot open the live channel {path}: {e}"))?;
        let map = Map::open(&file).map_err(|e| format!("cannot map {path}: {e}"))?;
        if map.control().magic.load(Ordering::Acquire) != MAGIC {
            return Err(format!("{path} is not a pmusim live channel"));
        }
        map.control().attached.0.store(1, Ordering::Release);
        Ok(Producer {
            map,
            lock: Mutex::new(()),
            code_next: AtomicU64::new(0),
        })
    }

    /// Where code words' offsets start (the code arena in this process).
    pub fn code_base(&self) -> u64 {
        self.map.code_base()
    }

    /// A description of a translated block in the code arena (`None` when it is full: the
    /// caller then leaks one on the heap and records it in the long form).
    pub fn code_block(&self, b: CodeBlock) -> Option<&'static CodeBlock> {
        let size = std::mem::size_of::<CodeBlock>() as u64;
        let off = self.code_next.fetch_add(size, Ordering::Relaxed);
        if off + size > CODE_BYTES as u64 {
            return None;
        }
        let p = (self.code_base() + off) as *mut CodeBlock;
        // SAFETY: a fresh slot of the arena, written once before any word points to it; the
        // mapping lives as long as the process.
        unsafe {
            p.write(b);
            Some(&*p)
        }
    }

    /// A block to fill: a released one, or a new one while fewer than [`SOFT_BLOCKS`] are in
    /// use (up to [`HARD_BLOCKS`] while the consumer starves); waits otherwise.
    pub fn take_block(&self) -> (u32, *mut u64) {
        let c = self.map.control();
        let try_take = || -> Option<u32> {
            let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            let tail = c.free_tail.0.load(Ordering::Relaxed);
            if tail < c.free_head.0.load(Ordering::Acquire) {
                // SAFETY: an entry the consumer wrote before advancing `free_head`.
                let b = unsafe { self.map.free(tail).read_volatile() };
                c.free_tail.0.store(tail + 1, Ordering::Release);
                return Some(b);
            }
            // Blocks published and not yet released (those the guest threads are filling do
            // not count: each live thread has one).
            let n = c.allocated.load(Ordering::Relaxed);
            let outstanding = c.q_head.0.load(Ordering::Relaxed)
                - c.free_head
                    .0
                    .load(Ordering::Acquire)
                    .min(c.q_head.0.load(Ordering::Relaxed));
            let starving = c.starving.0.load(Ordering::Acquire) != 0;
            if n < HARD_BLOCKS && (outstanding < u64::from(SOFT_BLOCKS) || starving) {
                c.allocated.store(n + 1, Ordering::Relaxed);
                return Some(n);
            }
            None
        };
        let mut got = None;
        wait_for(
            c,
            c.producer_side(),
            || {
                got = got.or_else(try_take);
                got.is_some()
            },
            || false,
            // The consumer may sleep waiting for a batch this thread will not add to now.
            || {
                if c.q_head.0.load(Ordering::Acquire) > c.q_tail.0.load(Ordering::Acquire) {
                    c.wake_consumer();
                }
            },
        );
        let b = got.expect("waited for a block");
        (b, self.map.block(b))
    }

    /// Hands block `e.block` (filled with `e.words` words of thread `e.tid`) to the consumer.
    pub fn publish(&self, e: Entry) {
        let c = self.map.control();
        let queued = {
            let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
            let h = c.q_head.0.load(Ordering::Relaxed);
            let q = self.map.queue(h);
            // SAFETY: a queue slot the consumer has passed (at most HARD_BLOCKS blocks exist,
            // so the ring never holds more entries than slots).
            unsafe {
                q.write_volatile(u64::from(e.tid) | (u64::from(e.block) << 32));
                q.add(1)
                    .write_volatile(u64::from(e.words) | (u64::from(e.last) << 32));
            }
            c.q_head.0.store(h + 1, Ordering::Release);
            h + 1 - c.q_tail.0.load(Ordering::Acquire).min(h + 1)
        };
        // The hysteresis (module doc): a full block alone does not wake a sleeping consumer.
        if e.last
            || (e.words as usize) < BLOCK_WORDS
            || queued >= CONSUMER_WAKE_AT
            || c.starving.0.load(Ordering::Acquire) != 0
        {
            c.wake_consumer();
        }
    }

    /// Writes a synchronization record into the sync log (at its sequence number), before the
    /// thread's words carry it.
    #[allow(clippy::too_many_arguments)]
    pub fn sync(
        &self,
        seq: u64,
        kind: SyncKind,
        tid: u32,
        nr: u64,
        args: [u64; 3],
        ret: i64,
        timeout_ns: Option<u64>,
        created: bool,
    ) {
        let Some(e) = self.map.sync(seq) else { return };
        let p = std::ptr::from_ref(e).cast_mut();
        // SAFETY: each sequence number is written once, by the thread that took it, before
        // `ready` is set; readers read the fields only after seeing `ready`.
        unsafe {
            (*p).tid = tid;
            (*p).nr = nr;
            (*p).args = args;
            (*p).ret = ret;
            (*p).timeout_ns = timeout_ns.unwrap_or(u64::MAX);
            (*p).created = u64::from(created);
        }
        e.ready.store(1 + kind as u32, Ordering::Release);
        self.map
            .control()
            .max_seq
            .0
            .fetch_max(seq, Ordering::AcqRel);
    }

    /// Writes the header (JSON) under the sequence lock.
    pub fn write_header(&self, json: &[u8]) {
        if json.len() > HEADER_BYTES {
            return;
        }
        let c = self.map.control();
        let _g = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        let s = c.header_seq.0.load(Ordering::Relaxed);
        c.header_seq.0.store(s + 1, Ordering::Release);
        std::sync::atomic::fence(Ordering::Release);
        // SAFETY: the header area holds HEADER_BYTES bytes.
        unsafe {
            std::ptr::copy_nonoverlapping(json.as_ptr(), self.map.base.add(HEADER_OFF), json.len())
        };
        c.header_len.store(json.len() as u64, Ordering::Relaxed);
        c.header_seq.0.store(s + 2, Ordering::Release);
    }

    /// Every block is published and the final header written.
    pub fn finish(&self) {
        let c = self.map.control();
        c.done.store(1, Ordering::Release);
        c.wake_consumer();
    }
}

/// `pmusim`'s side: creates the channel, reads the queue, releases blocks.
pub struct Consumer {
    map: Map,
    path: PathBuf,
    /// Serializes releases (the simulation and a saving thread release blocks).
    free_lock: Mutex<()>,
    /// Set by the caller when the recorder's process has exited.
    exited: std::sync::Arc<AtomicBool>,
}

impl Consumer {
    /// Creates the channel file at `path` (removed again when the consumer is dropped).
    pub fn create(path: &Path, exited: std::sync::Arc<AtomicBool>) -> std::io::Result<Consumer> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)?;
        file.set_len(TOTAL_BYTES as u64)?;
        let map = Map::open(&file)?;
        map.control().magic.store(MAGIC, Ordering::Release);
        Ok(Consumer {
            map,
            path: path.to_path_buf(),
            free_lock: Mutex::new(()),
            exited,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where code words' offsets start in this process.
    pub fn code_base(&self) -> u64 {
        self.map.code_base()
    }

    /// Whether the plugin has finished the recording (every block published).
    pub fn done(&self) -> bool {
        self.map.control().done.load(Ordering::Acquire) != 0
    }

    fn gone(&self) -> bool {
        self.exited.load(Ordering::Acquire)
    }

    /// The next published block, waiting for one; `None` at the end: the recording finished
    /// and the queue is empty, or the recorder's process exited without finishing (a fatal
    /// signal: [`Consumer::done`] is then false).
    pub fn next(&self) -> Option<Entry> {
        let c = self.map.control();
        let tail = c.q_tail.0.load(Ordering::Relaxed);
        let ready = || c.q_head.0.load(Ordering::Acquire) > tail;
        let ok = ready()
            || wait_for(
                c,
                c.consumer_side(),
                ready,
                || self.done() || self.gone(),
                // Producers asleep for blocks this side holds (a saver's backlog) go on.
                || c.wake_producers(),
            );
        if !ok {
            return None;
        }
        let q = self.map.queue(tail);
        // SAFETY: an entry the producer wrote before advancing `q_head`.
        let (a, b) = unsafe { (q.read_volatile(), q.add(1).read_volatile()) };
        c.q_tail.0.store(tail + 1, Ordering::Release);
        Some(Entry {
            tid: a as u32,
            block: (a >> 32) as u32,
            words: b as u32,
            last: (b >> 32) & 1 == 1,
        })
    }

    /// The words of a published block.
    pub fn words(&self, e: &Entry) -> &[u64] {
        let n = (e.words as usize).min(BLOCK_STRIDE);
        // SAFETY: the block is published (its words written before `q_head` advanced) and
        // not released until the caller says so.
        unsafe { std::slice::from_raw_parts(self.map.block(e.block), n) }
    }

    /// Gives a block back to the producers.
    pub fn release(&self, block: u32) {
        let c = self.map.control();
        let in_use = {
            let _g = self.free_lock.lock().unwrap_or_else(|e| e.into_inner());
            let h = c.free_head.0.load(Ordering::Relaxed);
            // SAFETY: a ring slot the producers have passed (fewer blocks than slots).
            unsafe { self.map.free(h).write_volatile(block) };
            c.free_head.0.store(h + 1, Ordering::Release);
            c.q_head.0.load(Ordering::Acquire).saturating_sub(h + 1)
        };
        // The hysteresis (module doc): producers sleep until half the pool is free.
        if in_use <= PRODUCER_WAKE_AT || c.starving.0.load(Ordering::Acquire) != 0 {
            c.wake_producers();
        }
    }

    /// The consumer waits for one thread's records (`true`) or no longer (`false`): while it
    /// starves, producers may take blocks beyond the soft bound.
    pub fn set_starving(&self, on: bool) {
        let c = self.map.control();
        if c.starving.0.swap(u32::from(on), Ordering::AcqRel) != u32::from(on) && on {
            c.wake_producers();
        }
    }

    /// How the two sides waited so far, one line (`PMUSIM_LIVE_STATS`, see the module doc).
    pub fn wait_stats(&self) -> String {
        let s = |k: Stat| self.map.control().stats.0[k as usize].load(Ordering::Relaxed);
        format!(
            "live channel: producer waits {} spun, {} slept ({} futex waits, {} wakes); \
             consumer waits {} spun, {} slept ({} futex waits, {} wakes)",
            s(Stat::ProducerSpun),
            s(Stat::ProducerSlept),
            s(Stat::ProducerFutexWaits),
            s(Stat::ProducerWakes),
            s(Stat::ConsumerSpun),
            s(Stat::ConsumerSlept),
            s(Stat::ConsumerFutexWaits),
            s(Stat::ConsumerWakes),
        )
    }

    /// The header as the plugin wrote it last (`None` before it wrote one).
    pub fn header(&self) -> Option<tracefmt::Header> {
        let c = self.map.control();
        loop {
            let s = c.header_seq.0.load(Ordering::Acquire);
            if s == 0 {
                return None;
            }
            if s % 2 == 1 {
                std::hint::spin_loop();
                continue;
            }
            let len = (c.header_len.load(Ordering::Relaxed) as usize).min(HEADER_BYTES);
            let mut buf = vec![0u8; len];
            // SAFETY: within the header area; a torn copy is detected by the sequence lock.
            unsafe {
                std::ptr::copy_nonoverlapping(self.map.base.add(HEADER_OFF), buf.as_mut_ptr(), len)
            };
            std::sync::atomic::fence(Ordering::Acquire);
            if c.header_seq.0.load(Ordering::Acquire) == s {
                return serde_json::from_slice(&buf).ok();
            }
        }
    }

    /// Waits for a header that satisfies `ready` (or the recorder's end).
    pub fn wait_header(
        &self,
        ready: impl Fn(&tracefmt::Header) -> bool,
    ) -> Option<tracefmt::Header> {
        loop {
            let h = self.header();
            if let Some(h) = h.as_ref().filter(|h| ready(h)) {
                return Some(h.clone());
            }
            if self.done() || self.gone() {
                return h;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
    }

    /// The sync log's entry for `seq`, once written; waits for it while the recording goes
    /// on (`None` if it ends without it).
    pub fn sync(&self, seq: u64) -> Option<SyncRecord> {
        let e = self.map.sync(seq)?;
        let c = self.map.control();
        let ready = || e.ready.load(Ordering::Acquire) != 0;
        if !ready() {
            // The record comes from a guest thread that may need a block to get there: let
            // the producers past the soft bound while waiting (see the module doc).
            let mut spins = 0u32;
            let mut starving = false;
            while !ready() {
                if self.done() || self.gone() {
                    break;
                }
                spins += 1;
                if spins < 1000 {
                    std::hint::spin_loop();
                } else {
                    if !starving {
                        starving = c.starving.0.load(Ordering::Acquire) == 0;
                        if starving {
                            self.set_starving(true);
                        }
                    }
                    std::thread::sleep(Duration::from_micros(50));
                }
            }
            if starving {
                self.set_starving(false);
            }
            if !ready() {
                return None;
            }
        }
        let kind = match e.ready.load(Ordering::Acquire) - 1 {
            0 => SyncKind::Start,
            1 => SyncKind::Exit,
            2 => SyncKind::Entry,
            _ => SyncKind::Return,
        };
        Some(SyncRecord {
            kind,
            tid: e.tid,
            nr: e.nr,
            args: e.args,
            ret: e.ret,
            timeout_ns: (e.timeout_ns != u64::MAX).then_some(e.timeout_ns),
            created: e.created != 0,
        })
    }

    /// The largest sequence number of the sync log, once the recording has ended.
    pub fn last_seq(&self) -> Option<u64> {
        (self.done() || self.gone()).then(|| self.map.control().max_seq.0.load(Ordering::Acquire))
    }

    /// Whether the sync log holds `seq` now (no waiting).
    pub fn has_sync(&self, seq: u64) -> bool {
        self.map
            .sync(seq)
            .is_some_and(|e| e.ready.load(Ordering::Acquire) != 0)
    }
}

impl Drop for Consumer {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A sync log entry as read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncRecord {
    pub kind: SyncKind,
    pub tid: u32,
    pub nr: u64,
    pub args: [u64; 3],
    pub ret: i64,
    pub timeout_ns: Option<u64>,
    pub created: bool,
}

/// A fresh channel path: `/dev/shm/pmusim-live-PID-N` (the temporary directory when there is
/// no `/dev/shm`).
pub fn channel_path() -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = Path::new("/dev/shm");
    let dir = if dir.is_dir() {
        dir.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    dir.join(format!(
        "pmusim-live-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ))
}

/// A published block held by the simulation (and the saving thread): given back to the
/// producers when the last holder drops it.
pub struct Held {
    consumer: std::sync::Arc<Consumer>,
    pub entry: Entry,
}

impl Held {
    pub fn words(&self) -> &[u64] {
        self.consumer.words(&self.entry)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        self.consumer.release(self.entry.block);
    }
}

/// The simulation's side of a live recording: takes the published blocks in order, splits
/// them by thread, and gives each thread's records as a `tracefmt::StepSource`
/// ([`ThreadFeed`]). With a saver, every block also goes to a thread that writes the `.pmt`
/// file (`--save`), which then holds what a recording to a file holds.
pub struct Feed {
    consumer: std::sync::Arc<Consumer>,
    queues: std::cell::RefCell<
        std::collections::HashMap<u32, std::collections::VecDeque<std::sync::Arc<Held>>>,
    >,
    /// Threads in the order their first block came.
    seen: std::cell::RefCell<Vec<u32>>,
    ended: std::cell::Cell<bool>,
    saver: std::cell::RefCell<Option<Saver>>,
}

impl Feed {
    pub fn new(consumer: std::sync::Arc<Consumer>, saver: Option<Saver>) -> Feed {
        Feed {
            consumer,
            queues: Default::default(),
            seen: Default::default(),
            ended: std::cell::Cell::new(false),
            saver: std::cell::RefCell::new(saver),
        }
    }

    pub fn consumer(&self) -> &Consumer {
        &self.consumer
    }

    /// Threads whose blocks came so far, in that order.
    pub fn threads(&self) -> Vec<u32> {
        self.seen.borrow().clone()
    }

    /// Takes the next published block into its thread's queue; `false` at the end.
    pub fn pull(&self) -> bool {
        if self.ended.get() {
            return false;
        }
        let Some(e) = self.consumer.next() else {
            self.ended.set(true);
            return false;
        };
        let held = std::sync::Arc::new(Held {
            consumer: self.consumer.clone(),
            entry: e,
        });
        if let Some(s) = self.saver.borrow().as_ref() {
            s.send(held.clone());
        }
        let mut q = self.queues.borrow_mut();
        if !q.contains_key(&e.tid) {
            self.seen.borrow_mut().push(e.tid);
        }
        q.entry(e.tid).or_default().push_back(held);
        true
    }

    /// Takes every block until the end of the recording.
    pub fn pull_all(&self) {
        self.consumer.set_starving(true);
        while self.pull() {}
        self.consumer.set_starving(false);
    }

    /// The next block of thread `tid`, waiting for it; `None` at the end of the recording.
    fn next_for(&self, tid: u32) -> Option<std::sync::Arc<Held>> {
        loop {
            if let Some(h) = self
                .queues
                .borrow_mut()
                .get_mut(&tid)
                .and_then(|q| q.pop_front())
            {
                return Some(h);
            }
            // Other threads' blocks are held while this one's are awaited: let the producers
            // go past the soft bound (see the module doc).
            let others = self.queues.borrow().values().any(|q| !q.is_empty());
            self.consumer.set_starving(others);
            let more = self.pull();
            if others {
                self.consumer.set_starving(false);
            }
            if !more {
                return None;
            }
        }
    }

    /// Whether the recording ended with every block published (`false`: the recorder died).
    pub fn complete(&self) -> bool {
        self.consumer.done()
    }

    /// Waits for the saving thread and returns its result (the file's totals).
    pub fn finish_saving(
        &self,
        header: &tracefmt::Header,
    ) -> Option<Result<tracefmt::Totals, String>> {
        let saver = self.saver.borrow_mut().take();
        saver.map(|s| s.finish(header.clone()))
    }
}

/// The words of one thread of a [`Feed`], block by block.
pub struct ThreadFeed {
    feed: std::rc::Rc<Feed>,
    tid: u32,
    cur: Option<std::sync::Arc<Held>>,
    code_base: u64,
    done: bool,
}

impl ThreadFeed {
    pub fn new(feed: std::rc::Rc<Feed>, tid: u32) -> ThreadFeed {
        let code_base = feed.consumer.code_base();
        ThreadFeed {
            feed,
            tid,
            cur: None,
            code_base,
            done: false,
        }
    }
}

impl tracefmt::words::WordSource for ThreadFeed {
    fn next_words(&mut self) -> Option<&[u64]> {
        // The previous block goes back to the recorder (unless the saver still holds it).
        self.cur = None;
        if self.done {
            return None;
        }
        let h = self.feed.next_for(self.tid);
        self.done = h.as_ref().is_none_or(|h| h.entry.last);
        self.cur = h;
        let words = self.cur.as_ref().map(|h| h.words());
        if let Some(w) = words {
            // The recorder's guest thread wrote these words on the other core.
            tracefmt::prefetch_lines(w);
        }
        words
    }
    fn code_base(&self) -> u64 {
        self.code_base
    }
}

/// Writes the blocks of a live recording into a `.pmt` file on a thread of its own: the
/// plugin's writer-thread work (encoding, zstd), done here for `pmusim run --record --save`.
pub struct Saver {
    tx: std::sync::mpsc::Sender<std::sync::Arc<Held>>,
    thread:
        std::thread::JoinHandle<Result<(tracefmt::Writer<std::fs::File>, std::fs::File), String>>,
    path: PathBuf,
}

impl Saver {
    /// Creates `path` with `header` (and room for the final one) and starts the thread.
    pub fn start(path: &Path, header: &tracefmt::Header, code_base: u64) -> Result<Saver, String> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let again = file.try_clone().map_err(|e| e.to_string())?;
        let hlen = serde_json::to_vec(header).map_err(|e| e.to_string())?.len();
        let room = crate::writer::HEADER_RESERVE.max(3 * hlen);
        let mut tw = tracefmt::Writer::with_header_room(file, header, room)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let (tx, rx) = std::sync::mpsc::channel::<std::sync::Arc<Held>>();
        let thread = std::thread::Builder::new()
            .name("pmt-saver".into())
            .spawn(move || {
                let mut encs: Vec<crate::words::ThreadEnc> = Vec::new();
                let emit = |tw: &mut tracefmt::Writer<File>, e: crate::words::Encoded<'_>| {
                    tw.write_counted(e.tid, e.first_seq, e.raw, e.records, e.accesses)
                        .map_err(|e| e.to_string())
                };
                for h in rx {
                    let i = match encs.iter().position(|t| t.tid == h.entry.tid) {
                        Some(i) => i,
                        None => {
                            encs.push(crate::words::ThreadEnc::new(h.entry.tid));
                            encs.len() - 1
                        }
                    };
                    let t = &mut encs[i];
                    // SAFETY: a guest thread's words, code words relative to the arena.
                    unsafe { t.feed(h.words(), code_base, &mut |e| emit(&mut tw, e)) }?;
                    if h.entry.last {
                        t.emit(&mut |e| emit(&mut tw, e))?;
                    }
                }
                encs.sort_by_key(|t| t.tid);
                for t in &mut encs {
                    t.emit(&mut |e| emit(&mut tw, e))?;
                }
                Ok((tw, again))
            })
            .map_err(|e| e.to_string())?;
        Ok(Saver {
            tx,
            thread,
            path: path.to_path_buf(),
        })
    }

    fn send(&self, h: std::sync::Arc<Held>) {
        let _ = self.tx.send(h);
    }

    /// Ends the file: the remaining chunks, the end marker and `header` as the final header.
    pub fn finish(self, header: tracefmt::Header) -> Result<tracefmt::Totals, String> {
        drop(self.tx);
        let (tw, mut file) = self
            .thread
            .join()
            .map_err(|_| "the saving thread panicked".to_string())??;
        let totals = tw.finish().map_err(|e| e.to_string())?;
        tracefmt::rewrite_header(&mut file, &header)
            .map_err(|e| format!("{}: {e}", self.path.display()))?;
        Ok(totals)
    }
}

/// The synchronization records of a finished live recording, in sequence order, from its
/// sync log: `(tid, record)` as the thread's words hold them.
pub fn sync_records(c: &Consumer) -> Vec<(u32, tracefmt::Record)> {
    // A sequence number may be missing: a thread stopped by `exit_group` between taking one
    // and writing it.
    let last = c.map.control().max_seq.0.load(Ordering::Acquire);
    (1..=last)
        .filter(|&seq| c.has_sync(seq))
        .filter_map(|seq| c.sync(seq).map(|r| (r.tid, r.record(seq))))
        .collect()
}

impl SyncRecord {
    /// The trace record this entry stands for.
    pub fn record(&self, seq: u64) -> tracefmt::Record {
        use tracefmt::{Record, SyncPhase};
        match self.kind {
            SyncKind::Start => Record::ThreadStart {
                parent: self.nr as u32,
                seq,
            },
            SyncKind::Exit => Record::ThreadExit { seq },
            SyncKind::Entry | SyncKind::Return => Record::Sync {
                seq,
                nr: self.nr,
                args: self.args,
                ret: self.ret,
                phase: if self.kind == SyncKind::Entry {
                    SyncPhase::Entry
                } else {
                    SyncPhase::Return
                },
                timeout_ns: self.timeout_ns,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Blocks go through the queue in order and come back through the free ring; the
    /// producer waits at the soft bound until the consumer releases or starves.
    #[test]
    fn blocks_flow_through_the_queue_and_back() {
        let path = channel_path();
        let exited = Arc::new(AtomicBool::new(false));
        let c = Consumer::create(&path, exited).unwrap();
        let p = Producer::attach(path.to_str().unwrap()).unwrap();
        let mut taken = Vec::new();
        for i in 0..SOFT_BLOCKS {
            let (b, ptr) = p.take_block();
            // SAFETY: a block of BLOCK_STRIDE words.
            unsafe { ptr.write(u64::from(i) * 3) };
            taken.push(b);
        }
        assert_eq!(taken, (0..SOFT_BLOCKS).collect::<Vec<_>>());
        for (i, &b) in taken.iter().enumerate() {
            p.publish(Entry {
                tid: 7,
                block: b,
                words: 1,
                last: i + 1 == taken.len(),
            });
        }
        // The pool is at its soft bound: a producer waits until a block is released.
        let p = Arc::new(p);
        let p2 = p.clone();
        let waiter = std::thread::spawn(move || p2.take_block().0);
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished());
        let e = c.next().unwrap();
        assert_eq!((e.tid, e.block, c.words(&e)), (7, 0, &[0u64][..]));
        c.release(e.block);
        assert_eq!(waiter.join().unwrap(), 0, "the released block is reused");
        p.publish(Entry {
            tid: 8,
            block: 0,
            words: 0,
            last: true,
        });
        // At the bound again; starving lifts it.
        let p2 = p.clone();
        let waiter = std::thread::spawn(move || p2.take_block().0);
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished());
        c.set_starving(true);
        assert_eq!(waiter.join().unwrap(), SOFT_BLOCKS, "a new block");
        c.set_starving(false);
        for i in 1..SOFT_BLOCKS {
            let e = c.next().unwrap();
            assert_eq!(c.words(&e)[0], u64::from(i) * 3);
            assert_eq!(e.last, i + 1 == SOFT_BLOCKS);
        }
        assert_eq!(c.next().unwrap().tid, 8);
        p.finish();
        assert_eq!(c.next(), None);
        // The sync log and the header.
        p.sync(5, SyncKind::Entry, 9, 202, [1, 2, 3], 0, Some(40), false);
        assert!(c.has_sync(5) && !c.has_sync(4));
        let s = c.sync(5).unwrap();
        assert_eq!(
            (s.kind, s.tid, s.args, s.timeout_ns),
            (SyncKind::Entry, 9, [1, 2, 3], Some(40))
        );
        assert_eq!(c.sync(4), None, "the recording is done: no waiting");
        let h = tracefmt::Header::new("qemu", "prog", &[], "x86_64");
        p.write_header(&serde_json::to_vec(&h).unwrap());
        assert_eq!(c.header().unwrap().program, "prog");
        drop(c);
        assert!(!path.exists());
    }
}
