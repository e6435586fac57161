//! Per-thread record buffers.
//!
//! Guest threads run in parallel on host threads. A buffer belongs to one guest thread (tagged
//! with its `gettid()`; `vcpu_index` is reused by threads created one after another) and is
//! found through the vCPU index of the callback while the thread lives ([`current`]): the
//! memory callback takes no lock and makes no system call. A buffer goes to the writer as a
//! whole chunk when it is full.
//!
//! Each buffer is also listed in a registry so that the at-exit callback can flush the buffers
//! of threads that `exit_group` stopped. Concurrency argument (QEMU 7.2 `qemu_plugin_user_exit`):
//! the at-exit callback runs after an exclusive section that unregistered every other callback
//! and flushed the translated blocks, so no memory or block callback runs concurrently with it;
//! the system-call callbacks run outside that section, so they and the at-exit callback take the
//! buffer's `lock`.

use crate::words;
use crate::writer::Chunk;
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};
use std::sync::Mutex;
use tracefmt::Record;

/// Words (8 bytes each) collected before a buffer is handed to the writer thread: 512 KiB,
/// about 64 k references, small enough to stay in the host's caches.
pub const BUFFER_WORDS: usize = 1 << 16;
/// Room past [`BUFFER_WORDS`] so a record never reallocates a buffer (largest record: a
/// synchronization record, 10 words).
const SLACK: usize = 32;

/// The recording state of one guest thread: fixed-size records ([`words`]) in program order,
/// and the instruction position that gives each access its instruction count.
pub struct ThreadBuf {
    pub tid: u32,
    pub words: Vec<u64>,
    /// Instructions retired by this thread before the block being executed.
    tb_start: u64,
    /// Instructions retired by this thread to the end of the block being executed.
    retired: u64,
    /// Instruction position of the previous record (delta base of the instruction counts).
    last_insn: u64,
    /// Arguments of the pending synchronization call, repeated in its return record.
    pub pending: (u64, [u64; 3]),
    /// Whether this thread made an access yet (its first one is on its stack, see
    /// [`STACK_HINTS`]).
    seen_access: bool,
}

/// A buffer with the lock that the system-call and at-exit paths take (never the memory path).
pub struct Slot {
    pub lock: Mutex<()>,
    pub alive: AtomicBool,
    buf: UnsafeCell<ThreadBuf>,
}

// SAFETY: `buf` is touched without the lock only by its own thread in memory/block callbacks,
// which never run concurrently with another thread's access (see the module doc); other
// accesses hold `lock`.
unsafe impl Sync for Slot {}

impl Slot {
    /// # Safety
    /// The caller is the owning thread in a memory or block callback, or holds `lock`.
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn buf(&self) -> &mut ThreadBuf {
        // SAFETY: exclusive access is guaranteed by the caller.
        unsafe { &mut *self.buf.get() }
    }
}

/// The slot of the thread running on each vCPU index. Why not a thread-local: in a
/// `dlopen`ed library every thread-local access calls `__tls_get_addr` (5 % of the run time
/// on python3). A vCPU index belongs to one live guest thread at a time; QEMU frees it only
/// after the thread's `exit` call, where [`drop_current`] clears the entry, so a thread that
/// later reuses the index starts a new slot.
static SLOTS: [AtomicPtr<Slot>; 1024] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 1024];

thread_local! {
    /// The slot of a thread whose vCPU index is beyond [`SLOTS`].
    static CUR: Cell<*const Slot> = const { Cell::new(std::ptr::null()) };
}

/// Every live slot, for the at-exit flush. Slots are leaked: a few hundred bytes per thread.
pub static REGISTRY: Mutex<Vec<&'static Slot>> = Mutex::new(Vec::new());
/// Parent tid per vCPU index, written by the vCPU-init callback (which runs on the creating
/// thread) and read by the new thread's first callback.
static PARENTS: [AtomicU32; 1024] = [const { AtomicU32::new(0) }; 1024];
/// Set in a forked child: the writer thread does not exist there, records are dropped.
pub static FORKED: AtomicBool = AtomicBool::new(false);
/// Set by the first caller of `finish_trace`, so that the trace is ended once.
pub static ENDING: AtomicBool = AtomicBool::new(false);
/// Set once the final flush is done: later records are dropped.
pub static FINISHED: AtomicBool = AtomicBool::new(false);

/// (tid, address of the thread's first access), in thread creation order. In user mode QEMU
/// gives guest stacks anonymous mappings (the `[stack]` in `/proc/self/maps` is QEMU's own), and
/// a thread's first access is on its stack: the main thread's starts with ld.so's `_start`
/// (`call`), a new thread's with glibc's clone child path (`pop`). The exit-time header names
/// those mappings.
pub static STACK_HINTS: Mutex<Vec<(u32, u64)>> = Mutex::new(Vec::new());

#[cold]
fn note_stack(tid: u32, addr: u64) {
    if !FORKED.load(Ordering::Relaxed) {
        STACK_HINTS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((tid, addr));
    }
}

pub fn gettid() -> u32 {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as u32 }
}

pub fn note_parent(vcpu: u32) {
    PARENTS[vcpu as usize % PARENTS.len()].store(gettid(), Ordering::Relaxed);
}

/// This thread's slot, created (with its thread-start record) on the first call.
#[inline(always)]
pub fn current(vcpu: u32) -> &'static Slot {
    let p = match SLOTS.get(vcpu as usize) {
        Some(s) => s.load(Ordering::Acquire).cast_const(),
        None => CUR.get(),
    };
    if p.is_null() {
        return new_slot(vcpu);
    }
    // SAFETY: non-null `SLOTS` and `CUR` values are leaked `Slot`s, never freed.
    unsafe { &*p }
}

/// In a forked child: forgets every slot. The child's threads start fresh slots (whose records
/// are dropped), so none can wait on a slot lock held by a thread that did not survive the fork.
pub fn forget_all() {
    for s in &SLOTS {
        s.store(std::ptr::null_mut(), Ordering::Release);
    }
}

/// Forgets this thread's slot (it exited); a later callback would start a new one.
pub fn drop_current(vcpu: u32) {
    match SLOTS.get(vcpu as usize) {
        Some(s) => s.store(std::ptr::null_mut(), Ordering::Release),
        None => CUR.set(std::ptr::null()),
    }
}

#[cold]
fn new_slot(vcpu: u32) -> &'static Slot {
    let tid = gettid();
    let parent = PARENTS[vcpu as usize % PARENTS.len()].load(Ordering::Relaxed);
    let parent = if parent == tid { 0 } else { parent };
    let mut buf = ThreadBuf::new(tid);
    let seq = crate::next_seq();
    buf.record(&Record::ThreadStart { parent, seq });
    let slot: &'static Slot = Box::leak(Box::new(Slot {
        lock: Mutex::new(()),
        alive: AtomicBool::new(true),
        buf: UnsafeCell::new(buf),
    }));
    // In a forked child the registry lock may have been held by a thread that does not exist
    // there: do not touch it (the child's records are dropped anyway).
    if !FORKED.load(Ordering::Relaxed) {
        REGISTRY
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(slot);
    }
    match SLOTS.get(vcpu as usize) {
        Some(s) => s.store(std::ptr::from_ref(slot).cast_mut(), Ordering::Release),
        None => CUR.set(slot),
    }
    slot
}

impl ThreadBuf {
    pub fn new(tid: u32) -> ThreadBuf {
        ThreadBuf {
            tid,
            words: Vec::with_capacity(BUFFER_WORDS + SLACK),
            tb_start: 0,
            retired: 0,
            last_insn: 0,
            pending: (0, [0; 3]),
            seen_access: false,
        }
    }

    /// A block of `n` instructions starts executing.
    #[inline(always)]
    pub fn block(&mut self, n: u64) {
        self.tb_start = self.retired;
        self.retired += n;
    }

    /// A block of code starts executing: its instructions are counted as by [`Self::block`]
    /// and its execution recorded (one word, [`words::push_code`]), before its accesses.
    #[inline(always)]
    pub fn code(&mut self, b: &'static words::CodeBlock) {
        self.block(u64::from(b.insns));
        words::push_code(&mut self.words, b);
    }

    /// A load or store (`code`: [`words::code`]) by instruction `idx` of the executing block:
    /// one word appended, two or three for the rare access that does not fit one
    /// ([`words::access`]).
    #[inline(always)]
    pub fn access(&mut self, code: u64, addr: u64, idx: u64) {
        let pos = self.tb_start + idx + 1;
        let icount = pos.saturating_sub(self.last_insn);
        self.last_insn = pos;
        if !self.seen_access {
            self.seen_access = true;
            note_stack(self.tid, addr);
        }
        match words::access(code, addr, icount) {
            Some(w) => self.words.push(w),
            None => words::push_long_access(&mut self.words, code, addr, icount),
        }
    }

    #[inline(always)]
    pub fn full(&self) -> bool {
        self.words.len() >= BUFFER_WORDS
    }

    /// Records the instructions retired since the previous record (before a sync record, so
    /// that a replay knows the work done before a wait, and at thread exit).
    pub fn catch_up(&mut self) {
        let n = self.retired.saturating_sub(self.last_insn);
        if n > 0 {
            words::push_record(&mut self.words, &Record::Instructions(n));
            self.last_insn = self.retired;
        }
    }

    /// Appends a non-access record.
    pub fn record(&mut self, rec: &Record) {
        words::push_record(&mut self.words, rec);
    }

    /// Hands the records collected so far to the writer (or drops them in a forked child
    /// or after the final flush). `last`: the thread ends, the writer writes its records out
    /// now rather than waiting for a full chunk.
    pub fn flush(&mut self, last: bool) {
        if self.words.is_empty() {
            return;
        }
        let t = match crate::tracer() {
            Some(t) if !FORKED.load(Ordering::Relaxed) && !FINISHED.load(Ordering::Relaxed) => t,
            _ => {
                self.words.clear();
                return;
            }
        };
        if t.mode == crate::Mode::Buffer {
            // Measurement mode: the records are dropped here.
            self.words.clear();
            return;
        }
        let mut next = t.writer.recycled(BUFFER_WORDS + SLACK);
        next.reserve(BUFFER_WORDS + SLACK);
        let words = std::mem::replace(&mut self.words, next);
        t.writer.send(Chunk {
            tid: self.tid,
            last,
            words,
        });
    }
}
