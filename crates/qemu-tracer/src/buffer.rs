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

use crate::writer::Chunk;
use std::cell::{Cell, UnsafeCell};
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU32, Ordering};
use std::sync::Mutex;
use tracefmt::{encode, AccessKind, EncState, Record};

/// Raw bytes of records collected before a chunk is handed to the writer.
pub const CHUNK_BYTES: usize = 1 << 20;
/// Room past [`CHUNK_BYTES`] so a record never reallocates a buffer (largest record: 63 bytes).
const SLACK: usize = 128;

/// The recording state of one guest thread.
pub struct ThreadBuf {
    pub tid: u32,
    pub raw: Vec<u8>,
    /// `tracefmt`'s encoder state: address deltas restart at each chunk.
    st: EncState,
    /// Records in `raw` (the writer keeps the file's end marker up to date with them).
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
            raw: Vec::with_capacity(CHUNK_BYTES + SLACK),
            st: EncState::default(),
            records: 0,
            first_seq: 0,
            prev_addr: 0,
            tb_start: 0,
            retired: 0,
            last_insn: 0,
            last_load: usize::MAX,
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

    /// A load or store of `1 << size_log2` bytes by instruction `idx` of the executing block.
    #[inline(always)]
    pub fn access(&mut self, store: bool, size_log2: u32, addr: u64, idx: u64) {
        let pos = self.tb_start + idx + 1;
        let code = size_log2 as u8 + 1;
        if !self.seen_access {
            self.seen_access = true;
            note_stack(self.tid, addr);
        }
        if store
            && self.last_load != usize::MAX
            && pos == self.last_insn
            && addr == self.prev_addr
            && self.raw[self.last_load] >> 3 == code
        {
            // The same instruction loaded this address: the pair is one modify record
            // (same layout, only the record type in the tag's low bits changes).
            self.raw[self.last_load] = AccessKind::Modify as u8 | (code << 3);
            self.last_load = usize::MAX;
            return;
        }
        let mut icount = pos.saturating_sub(self.last_insn);
        if icount > u64::from(u32::MAX) {
            // Over 4 G instructions without a reference: an instructions-only record first.
            encode(
                &mut self.raw,
                &Record::Instructions(icount - 1),
                &mut self.st,
            );
            icount = 1;
        }
        let at = self.raw.len();
        let kind = if store {
            AccessKind::Store
        } else {
            AccessKind::Load
        };
        let rec = Record::Access {
            kind,
            addr,
            size: 1 << size_log2,
            icount: icount as u32,
        };
        encode(&mut self.raw, &rec, &mut self.st);
        self.records += 1;
        self.last_load = if store { usize::MAX } else { at };
        self.prev_addr = addr;
        self.last_insn = pos;
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
            encode(&mut self.raw, &Record::Instructions(n), &mut self.st);
            self.records += 1;
            self.last_insn = self.retired;
        }
        self.last_load = usize::MAX;
    }

    /// Appends a non-access record, noting the chunk's first sequence number.
    pub fn record(&mut self, rec: &Record) {
        if let (0, Some(seq)) = (self.first_seq, rec.seq()) {
            self.first_seq = seq;
        }
        encode(&mut self.raw, rec, &mut self.st);
        self.records += 1;
        self.last_load = usize::MAX;
    }

    /// Hands the records collected so far to the writer (or drops them in a forked child
    /// or after the final flush).
    pub fn flush(&mut self) {
        self.last_load = usize::MAX;
        self.st = EncState::default();
        let first_seq = std::mem::take(&mut self.first_seq);
        let records = std::mem::take(&mut self.records);
        if self.raw.is_empty() {
            return;
        }
        let t = match crate::tracer() {
            Some(t) if !FORKED.load(Ordering::Relaxed) && !FINISHED.load(Ordering::Relaxed) => t,
            _ => {
                self.raw.clear();
                return;
            }
        };
        let mut next = t.writer.recycled(CHUNK_BYTES + SLACK);
        next.reserve(CHUNK_BYTES + SLACK);
        let raw = std::mem::replace(&mut self.raw, next);
        t.writer.send(Chunk {
            tid: self.tid,
            first_seq,
            records,
            raw,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes of `docs/trace-format.md` for what the plugin sees.
    #[test]
    fn records_follow_the_spec_bytes() {
        let mut b = ThreadBuf::new(42);
        b.record(&Record::ThreadStart {
            parent: 100,
            seq: 7,
        });
        assert_eq!(b.raw, [0x04, 0x64, 0x07]);
        b.raw.clear();
        b.block(5);
        // 8-byte store at 0x1000 by the 3rd instruction: tag 1 | (3+1)<<3 = 0x21,
        // delta +0x1000 zig-zag 0x2000 = [0x80, 0x40], 3 instructions.
        b.access(true, 3, 0x1000, 2);
        assert_eq!(b.raw, [0x21, 0x80, 0x40, 0x03]);
        b.raw.clear();
        // 1-byte load 8 below by the 5th: tag 0x08, delta -8 -> 15, 2 instructions.
        b.access(false, 0, 0xff8, 4);
        assert_eq!(b.raw, [0x08, 0x0f, 0x02]);
        // A 1-byte store to the same address by the same instruction: the load becomes a
        // modify (tag 2 | 1<<3 = 0x0a), nothing appended.
        b.access(true, 0, 0xff8, 4);
        assert_eq!(b.raw, [0x0a, 0x0f, 0x02]);
        b.raw.clear();
        // Next block: 200 instructions, a 4-byte load by its first one: 1 + 0 from the
        // previous block's tail (it ended with the 5th instruction).
        b.block(200);
        b.access(false, 2, 0xff8, 0);
        assert_eq!(b.raw, [0x18, 0x00, 0x01]);
        b.raw.clear();
        b.catch_up(); // the remaining 199 instructions
        assert_eq!(b.raw, [0x03, 0xc7, 0x01]);
        b.raw.clear();
        b.record(&Record::Sync {
            seq: 10,
            nr: 202,
            args: [0x1000, 128, 1],
            ret: -11,
            phase: tracefmt::SyncPhase::Return,
        });
        assert_eq!(
            b.raw,
            [0x06, 0x0a, 0xca, 0x01, 0x80, 0x20, 0x80, 0x01, 0x01, 0x15, 0x01]
        );
        b.raw.clear();
        b.record(&Record::ThreadExit { seq: 9 });
        assert_eq!(b.raw, [0x05, 0x09]);
        assert_eq!(b.first_seq, 7);
    }

    #[test]
    fn a_store_by_another_instruction_is_not_merged() {
        let mut b = ThreadBuf::new(1);
        b.block(2);
        b.access(false, 3, 0x40, 0);
        b.access(true, 3, 0x40, 1);
        assert_eq!(b.raw, [0x20, 0x80, 0x01, 0x01, 0x21, 0x00, 0x01]);
    }
}
