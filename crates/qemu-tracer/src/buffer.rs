//! Per-thread record buffers.
//!
//! Guest threads run in parallel on host threads, and `vcpu_index` is reused by threads created
//! one after another, so buffers belong to the host thread (= the guest thread, tagged with its
//! `gettid()`), reached through a thread-local pointer: the memory callback takes no lock and
//! makes no system call. A buffer goes to the writer as a whole chunk when it is full.
//!
//! Each buffer is also listed in a registry so that the at-exit callback can flush the buffers
//! of threads that `exit_group` stopped. Concurrency argument (QEMU 7.2 `qemu_plugin_user_exit`):
//! the at-exit callback runs after an exclusive section that unregistered every other callback
//! and flushed the translated blocks, so no memory or block callback runs concurrently with it;
//! the system-call callbacks run outside that section, so they and the at-exit callback take the
//! buffer's `lock`.

use crate::encode::{self, TAG_LOAD, TAG_MODIFY, TAG_STORE};
use crate::writer::Chunk;
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Mutex;

/// Raw bytes of records collected before a chunk is handed to the writer.
pub const CHUNK_BYTES: usize = 1 << 20;
/// Room past [`CHUNK_BYTES`] so a record never reallocates a buffer (largest record: 63 bytes).
const SLACK: usize = 128;

/// The recording state of one guest thread.
pub struct ThreadBuf {
    pub tid: u32,
    raw: Vec<u8>,
    records: u64,
    first_seq: u64,
    prev_addr: u64,
    /// Instructions retired by this thread before the block being executed.
    tb_start: u64,
    /// Instructions retired by this thread to the end of the block being executed.
    retired: u64,
    /// Instruction position of the previous record (delta base of the `insns` fields).
    last_insn: u64,
    /// Offset of the previous record's tag if it was a load, for merging load+store into
    /// a modify (one instruction reading and writing the same address, lackey `M`).
    last_load: usize,
    /// Arguments of the pending synchronization call, repeated in its return record.
    pub pending: (u64, [u64; 3]),
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

thread_local! {
    /// This host thread's slot; null before its first callback (const-initialised, no
    /// destructor, so the access is a plain TLS load).
    static CUR: Cell<*const Slot> = const { Cell::new(std::ptr::null()) };
}

/// Every live slot, for the at-exit flush. Slots are leaked: a few hundred bytes per thread.
pub static REGISTRY: Mutex<Vec<&'static Slot>> = Mutex::new(Vec::new());
/// Parent tid per vCPU index, written by the vCPU-init callback (which runs on the creating
/// thread) and read by the new thread's first callback.
static PARENTS: [AtomicU32; 1024] = [const { AtomicU32::new(0) }; 1024];
/// Set in a forked child: the writer thread does not exist there, records are dropped.
pub static FORKED: AtomicBool = AtomicBool::new(false);
/// Set once the at-exit flush started: later records are dropped.
pub static FINISHED: AtomicBool = AtomicBool::new(false);

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
    let p = CUR.get();
    if p.is_null() {
        return new_slot(vcpu);
    }
    // SAFETY: non-null `CUR` values are leaked `Slot`s, never freed.
    unsafe { &*p }
}

/// Forgets this thread's slot (it exited); a later callback would start a new one.
pub fn drop_current() {
    CUR.set(std::ptr::null());
}

#[cold]
fn new_slot(vcpu: u32) -> &'static Slot {
    let tid = gettid();
    let parent = PARENTS[vcpu as usize % PARENTS.len()].load(Ordering::Relaxed);
    let parent = if parent == tid { 0 } else { parent };
    let mut buf = ThreadBuf {
        tid,
        raw: Vec::with_capacity(CHUNK_BYTES + SLACK),
        records: 0,
        first_seq: 0,
        prev_addr: 0,
        tb_start: 0,
        retired: 0,
        last_insn: 0,
        last_load: usize::MAX,
        pending: (0, [0; 3]),
    };
    let seq = crate::next_seq();
    buf.first_seq = seq;
    encode::thread_start(&mut buf.raw, u64::from(parent), seq);
    buf.records = 1;
    let slot: &'static Slot = Box::leak(Box::new(Slot {
        lock: Mutex::new(()),
        alive: AtomicBool::new(true),
        buf: UnsafeCell::new(buf),
    }));
    // In a forked child the registry lock may have been held by a thread that does not exist
    // there: do not touch it (the child's records are dropped anyway).
    if !FORKED.load(Ordering::Relaxed) {
        REGISTRY.lock().unwrap_or_else(|e| e.into_inner()).push(slot);
    }
    CUR.set(slot);
    slot
}

impl ThreadBuf {
    /// A block of `n` instructions starts executing.
    #[inline(always)]
    pub fn block(&mut self, n: u64) {
        self.tb_start = self.retired;
        self.retired += n;
    }

    /// A load or store by instruction `idx` of the executing block.
    #[inline(always)]
    pub fn access(&mut self, store: bool, size_log2: u32, addr: u64, idx: u64) {
        let pos = self.tb_start + idx + 1;
        if store
            && self.last_load != usize::MAX
            && pos == self.last_insn
            && addr == self.prev_addr
            && u32::from(self.raw[self.last_load] >> 3) == size_log2 + 1
        {
            // The same instruction loaded this address: the pair is one modify record.
            self.raw[self.last_load] = TAG_MODIFY | ((size_log2 as u8 + 1) << 3);
            self.last_load = usize::MAX;
            return;
        }
        let delta = addr.wrapping_sub(self.prev_addr) as i64;
        let at = self.raw.len();
        encode::access(
            &mut self.raw,
            if store { TAG_STORE } else { TAG_LOAD },
            size_log2,
            delta,
            pos.saturating_sub(self.last_insn),
        );
        self.last_load = if store { usize::MAX } else { at };
        self.prev_addr = addr;
        self.last_insn = pos;
        self.records += 1;
    }

    #[inline(always)]
    pub fn full(&self) -> bool {
        self.raw.len() >= CHUNK_BYTES
    }

    /// Records the instructions retired since the previous record (before a sync record, so
    /// that a replay knows the work done before a wait, and at thread exit).
    pub fn catch_up(&mut self) {
        let n = self.retired.saturating_sub(self.last_insn);
        if n > 0 {
            encode::insns(&mut self.raw, n);
            self.last_insn = self.retired;
            self.records += 1;
        }
        self.last_load = usize::MAX;
    }

    /// Appends a record that carries a global sequence number.
    pub fn sync_record(&mut self, seq: u64, f: impl FnOnce(&mut Vec<u8>)) {
        if self.first_seq == 0 {
            self.first_seq = seq;
        }
        f(&mut self.raw);
        self.records += 1;
        self.last_load = usize::MAX;
    }

    /// Hands the records collected so far to the writer (or drops them in a forked child
    /// or after the final flush).
    pub fn flush(&mut self) {
        self.last_load = usize::MAX;
        if self.raw.is_empty() {
            return;
        }
        let Some(t) = crate::tracer() else {
            self.raw.clear();
            return;
        };
        if FORKED.load(Ordering::Relaxed) || FINISHED.load(Ordering::Relaxed) {
            self.raw.clear();
            self.records = 0;
            self.first_seq = 0;
            return;
        }
        let mut next = t.writer.recycled(CHUNK_BYTES + SLACK);
        next.reserve(CHUNK_BYTES + SLACK);
        let raw = std::mem::replace(&mut self.raw, next);
        t.writer.send(Chunk { tid: self.tid, first_seq: self.first_seq, records: self.records, raw });
        self.records = 0;
        self.first_seq = 0;
    }
}
