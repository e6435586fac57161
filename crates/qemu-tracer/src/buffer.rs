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
///
/// Instruction positions are kept relative to the end of the block being executed, so that
/// the memory callback's common path ([`Self::try_access`]) needs one field and one
/// subtraction: a memory callback's user data is its instruction's position from the end of
/// its block, `idx + 1 - n` (wrapping; 0 for the block's last instruction), and [`Self::e`] is
/// the previous record's position on the same scale. Then the instruction count of an access
/// is `u - e`, and a block of `n` instructions subtracts `n` from `e` (see [`rel`]).
#[repr(C)]
pub struct ThreadBuf {
    /// Where [`Self::try_access`] stops taking accesses: [`Words::end`], or null before the
    /// thread's first access (which takes the general path for its stack hint).
    mem_end: *mut u64,
    /// The previous record's instruction position less the instructions retired by this
    /// thread to the end of the block being executed (as `i64`: 0 or negative, except after
    /// a record at a position beyond the block's end).
    e: u64,
    /// The words. These first three fields (the cursor and the end first) are all that the
    /// callbacks' common path touches: the first 40 bytes of the slot's cache line.
    pub words: Words,
    pub tid: u32,
    /// Subtracted from a [`words::CodeBlock`]'s address in a code word: 0 (the word holds
    /// the address) or, writing to the live channel, the start of its code arena.
    code_base: u64,
    /// Instructions of the block last started by [`Self::block`] (the general path; tests
    /// turn an instruction index into a position with it, [`Self::access_idx`]).
    tb_len: u64,
    /// Arguments of the pending synchronization call, repeated in its return record.
    pub pending: (u64, [u64; 3]),
    /// Whether this thread made an access yet (its first one is on its stack, see
    /// [`STACK_HINTS`]).
    seen_access: bool,
}

/// The memory callback's user data for instruction `idx` (from 0) of a block of `n`
/// instructions: its position from the block's end, `idx + 1 - n` (wrapping).
#[inline(always)]
pub fn rel(idx: u64, n: u64) -> u64 {
    (idx + 1).wrapping_sub(n)
}

/// A buffer with the lock that the system-call and at-exit paths take (never the memory path).
/// The buffer first, on a cache line of its own: the callbacks' fields at offsets 0 to 40.
#[repr(C, align(64))]
pub struct Slot {
    buf: UnsafeCell<ThreadBuf>,
    pub lock: Mutex<()>,
    pub alive: AtomicBool,
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
/// later reuses the index starts a new slot. The functions that read it are `pub(crate)`:
/// a `pub` inline function would let other crates inline it, so the static would be exported
/// and read through the global offset table, one load more per callback (issue 19).
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
    CREATED.set(true);
}

thread_local! {
    /// Set when this thread created a vCPU (QEMU does so for a new thread during `clone`,
    /// before the call returns): the `clone` created a thread, not a process.
    pub static CREATED: Cell<bool> = const { Cell::new(false) };
}

/// This thread's slot, created (with its thread-start record) on the first call.
#[inline(always)]
pub(crate) fn current(vcpu: u32) -> &'static Slot {
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

/// The slot of the thread running on `vcpu` when it has one in [`SLOTS`] (`None`: take
/// [`current`]).
#[inline(always)]
pub(crate) fn known(vcpu: u32) -> Option<&'static Slot> {
    let p = SLOTS.get(vcpu as usize)?.load(Ordering::Acquire);
    // SAFETY: non-null `SLOTS` values are leaked `Slot`s, never freed.
    (!p.is_null()).then(|| unsafe { &*p.cast_const() })
}

/// In a forked child: forgets every slot. The child's threads start fresh slots (whose records
/// are dropped), so none can wait on a slot lock held by a thread that did not survive the fork.
pub(crate) fn forget_all() {
    for s in &SLOTS {
        s.store(std::ptr::null_mut(), Ordering::Release);
    }
}

/// Forgets this thread's slot (it exited); a later callback would start a new one.
pub(crate) fn drop_current(vcpu: u32) {
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
    let live = crate::tracer()
        .and_then(|t| t.live.as_ref())
        .filter(|_| !FORKED.load(Ordering::Relaxed));
    let mut buf = match live {
        Some(l) => ThreadBuf::with(tid, Words::block(l.take_block()), l.code_base()),
        None => ThreadBuf::new(tid),
    };
    let seq = crate::next_seq();
    if let Some(l) = live {
        l.sync(
            seq,
            crate::live::SyncKind::Start,
            tid,
            u64::from(parent),
            [0; 3],
            0,
            None,
            false,
        );
    }
    buf.record(&Record::ThreadStart { parent, seq });
    let slot: &'static Slot = Box::leak(Box::new(Slot {
        buf: UnsafeCell::new(buf),
        lock: Mutex::new(()),
        alive: AtomicBool::new(true),
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
    /// A buffer on the heap (a trace file, or a forked child whose records are dropped).
    pub fn new(tid: u32) -> ThreadBuf {
        ThreadBuf::with(
            tid,
            Words::heap(Vec::with_capacity(BUFFER_WORDS + SLACK)),
            0,
        )
    }

    /// A heap buffer of `words` words that counts as full only when it is (tests that
    /// collect many records).
    pub fn with_capacity(tid: u32, words: usize) -> ThreadBuf {
        let mut v = Vec::with_capacity(words + SLACK);
        let (ptr, cap) = (v.as_mut_ptr(), v.capacity());
        // SAFETY: `v`'s allocation holds `cap >= words` words.
        let w = unsafe { Words::raw(ptr, words, cap, Store::Heap(v)) };
        ThreadBuf::with(tid, w, 0)
    }

    fn with(tid: u32, words: Words, code_base: u64) -> ThreadBuf {
        ThreadBuf {
            mem_end: std::ptr::null_mut(),
            e: 0,
            words,
            tid,
            code_base,
            tb_len: 0,
            pending: (0, [0; 3]),
            seen_access: false,
        }
    }

    /// Sets [`Self::mem_end`] after the words or [`Self::seen_access`] changed.
    fn set_mem_end(&mut self) {
        self.mem_end = if self.seen_access {
            self.words.end
        } else {
            std::ptr::null_mut()
        };
    }

    /// A block of `n` instructions starts executing.
    #[inline(always)]
    pub fn block(&mut self, n: u64) {
        self.tb_len = n;
        self.e = self.e.wrapping_sub(n);
    }

    /// A block of code starts executing: its instructions are counted as by [`Self::block`]
    /// and its execution recorded (one word, [`words::push_code`]), before its accesses.
    #[inline(always)]
    pub fn code(&mut self, b: &'static words::CodeBlock) {
        self.block(u64::from(b.insns));
        words::push_code(&mut self.words, b, self.code_base);
    }

    /// [`Self::code`] of a block with an inline code word (`tracefmt::words`).
    #[inline(always)]
    pub fn code_word(&mut self, w: u64) {
        self.block((w >> 55) & 0x7f);
        self.words.push(w);
    }

    /// A load or store (`code`: [`words::code`]) by the instruction at position `u` of the
    /// executing block ([`rel`]): one word appended, two or three for the rare access that
    /// does not fit one ([`words::access`]).
    #[inline(always)]
    pub fn access(&mut self, code: u64, addr: u64, u: u64) {
        // The instructions since the previous record, its own included (0: the same
        // instruction; never negative).
        let icount = (u.wrapping_sub(self.e) as i64).max(0) as u64;
        self.e = u;
        if !self.seen_access {
            self.seen_access = true;
            self.set_mem_end();
            note_stack(self.tid, addr);
        }
        match words::access(code, addr, icount) {
            Some(w) => {
                // A store by the instruction that just loaded the address: the load becomes
                // a modify (one record, as lackey's `M`).
                if let Some(prev) = self.words.last_mut() {
                    if words::completes_modify(*prev, w) {
                        *prev |= words::MODIFY | (8 << words::CODE_SHIFT);
                        return;
                    }
                }
                self.words.push(w)
            }
            None => words::push_long_access(&mut self.words, code, addr, icount),
        }
    }

    /// [`Self::access`] by instruction `idx` (from 0) of the block last started by
    /// [`Self::block`] or [`Self::code`] (tests; the callbacks pass [`rel`] positions).
    pub fn access_idx(&mut self, code: u64, addr: u64, idx: u64) {
        self.access(code, addr, rel(idx, self.tb_len));
    }

    /// [`Self::access`] when it is a one-word access to a thread that made one before and
    /// the buffer has room (nearly every call), returning `false` without touching anything
    /// otherwise (`None`): then the caller takes [`Self::access`]. `code_bits` is the access
    /// code shifted in place (`code << CODE_SHIFT`). `Some(full)`: done, and the buffer is to
    /// be handed over ([`flush_full`]) if `full`, by the caller (a tail call: then its common
    /// path makes no call).
    ///
    /// Why a second version (issue 19: the guest thread is the recording's critical path):
    /// the memory callback's common path then calls nothing, so it needs no callee-saved
    /// register and its slow paths are tail calls. Its checks are three compares: the
    /// instruction count as an unsigned difference (a position before the previous record's
    /// wraps to a large count and takes the general path, which counts it 0), the address,
    /// and the write cursor against [`Self::mem_end`] (null until the thread's first access,
    /// which the general path takes for its stack hint); a modify is looked for only when
    /// the count is 0.
    #[inline(always)]
    pub fn try_access(&mut self, code_bits: u64, addr: u64, u: u64) -> Option<bool> {
        let icount = u.wrapping_sub(self.e);
        let cur = self.words.cur;
        if icount > words::ICOUNT_MAX || addr > words::ADDR_MASK || cur >= self.mem_end {
            return None;
        }
        self.e = u;
        let w = addr | (icount << words::ADDR_BITS) | code_bits;
        if icount == 0 && cur > self.words.ptr {
            // SAFETY: the word before `cur` is written.
            let prev = unsafe { &mut *cur.sub(1) };
            if words::completes_modify(*prev, w) {
                *prev |= words::MODIFY | (8 << words::CODE_SHIFT);
                return Some(false);
            }
        }
        // SAFETY: `cur < mem_end <= end`, within the storage.
        unsafe {
            cur.write(w);
            let next = cur.add(1);
            self.words.cur = next;
            Some(next >= self.mem_end)
        }
    }

    /// [`Self::code_word`] when the buffer has room, as [`Self::try_access`], except that a
    /// buffer that became full is left to the caller: `Some(true)` (hand it over with
    /// [`flush_full`], a tail call: the block callback then saves no register for a call),
    /// `Some(false)` done, `None` declined.
    #[inline(always)]
    pub fn try_code_word(&mut self, w: u64) -> Option<bool> {
        let cur = self.words.cur;
        if cur >= self.words.end {
            return None;
        }
        self.e = self.e.wrapping_sub((w >> 55) & 0x7f);
        // SAFETY: `cur < end`, within the storage.
        unsafe {
            cur.write(w);
            let next = cur.add(1);
            self.words.cur = next;
            Some(next >= self.words.end)
        }
    }

    #[inline(always)]
    pub fn full(&self) -> bool {
        self.words.cur >= self.words.end
    }

    /// Records the instructions retired since the previous record (before a sync record, so
    /// that a replay knows the work done before a wait, and at thread exit).
    pub fn catch_up(&mut self) {
        let n = (self.e as i64).saturating_neg();
        if n > 0 {
            words::push_record(&mut self.words, &Record::Instructions(n as u64));
            self.e = 0;
        }
    }

    /// Appends a non-access record.
    pub fn record(&mut self, rec: &Record) {
        words::push_record(&mut self.words, rec);
    }

    /// Hands the records collected so far to the writer or, in a live recording, publishes
    /// them to the simulation (or drops them in a forked child or after the final flush).
    /// `last`: the thread ends, the writer writes its records out now rather than waiting
    /// for a full chunk.
    pub fn flush(&mut self, last: bool) {
        self.hand_over(last);
        self.set_mem_end();
    }

    /// [`Self::flush`] but for [`Self::mem_end`].
    fn hand_over(&mut self, last: bool) {
        if self.words.is_empty() && !(last && matches!(self.words.store, Store::Block(_))) {
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
        if let (Store::Block(block), Some(live)) = (&self.words.store, t.live.as_ref()) {
            live.publish(crate::live::Entry {
                tid: self.tid,
                block: *block,
                words: self.words.len() as u32,
                last,
            });
            crate::refresh_live_header(false);
            self.words = if last {
                Words::empty()
            } else {
                Words::block(live.take_block())
            };
            return;
        }
        let Some(writer) = t.writer.as_ref() else {
            self.words.clear();
            return;
        };
        let mut next = writer.recycled(BUFFER_WORDS + SLACK);
        next.clear();
        next.reserve(BUFFER_WORDS + SLACK);
        let words = std::mem::replace(&mut self.words, Words::heap(next)).into_vec();
        writer.send(Chunk {
            tid: self.tid,
            last,
            words,
        });
    }
}

/// Where a thread's words are stored.
enum Store {
    /// A heap buffer (`Vec` of length 0 whose capacity holds the words).
    Heap(Vec<u64>),
    /// A block of the live channel.
    Block(u32),
    /// No storage (a thread that ended in a live recording).
    None,
}

/// A thread's words: a raw cursor over a heap buffer or a block of the live channel, of
/// [`BUFFER_WORDS`] (or [`crate::live::BLOCK_WORDS`]) words plus slack. Why not a `Vec`: the
/// words of a live recording are written straight into shared memory, and `push` need not
/// check the capacity: every path that appends flushes once [`ThreadBuf::full`], and no
/// record is longer than the slack. Why a cursor rather than a length: the callbacks' common
/// path stores at it and compares it with [`Self::end`] without computing an address.
#[repr(C)]
pub struct Words {
    /// Where the next word goes.
    cur: *mut u64,
    /// Where the buffer counts as full.
    end: *mut u64,
    /// The first word.
    ptr: *mut u64,
    /// The end of the storage.
    cap_end: *mut u64,
    store: Store,
}

impl Words {
    fn heap(mut v: Vec<u64>) -> Words {
        v.clear();
        let ptr = v.as_mut_ptr();
        let cap = v.capacity();
        let limit = BUFFER_WORDS.min(cap.saturating_sub(SLACK));
        // SAFETY: `limit <= cap`: both within (or one past) the allocation.
        unsafe { Words::raw(ptr, limit, cap, Store::Heap(v)) }
    }

    fn block((block, ptr): (u32, *mut u64)) -> Words {
        let (limit, cap) = (
            crate::live::BLOCK_WORDS,
            crate::live::BLOCK_WORDS + crate::live::BLOCK_SLACK,
        );
        // SAFETY: a block of the channel holds `cap` words.
        unsafe { Words::raw(ptr, limit, cap, Store::Block(block)) }
    }

    /// # Safety
    /// `ptr` is valid for `cap` words, and `limit <= cap`.
    unsafe fn raw(ptr: *mut u64, limit: usize, cap: usize, store: Store) -> Words {
        // SAFETY: guaranteed by the caller.
        let (end, cap_end) = unsafe { (ptr.add(limit), ptr.add(cap)) };
        Words {
            cur: ptr,
            end,
            ptr,
            cap_end,
            store,
        }
    }

    /// A small heap buffer for what a thread that ended might still append (dropped: the
    /// trace is finished, or the thread's slot is forgotten).
    fn empty() -> Words {
        Words::heap(Vec::with_capacity(2 * SLACK))
    }

    /// A heap buffer for the words of one thread (tests, and the words of a forked child).
    pub fn new() -> Words {
        Words::heap(Vec::with_capacity(BUFFER_WORDS + SLACK))
    }

    #[inline(always)]
    pub fn push(&mut self, w: u64) {
        if self.cur >= self.cap_end {
            overflow();
        }
        // SAFETY: `cur < cap_end`, within the storage.
        unsafe {
            self.cur.write(w);
            self.cur = self.cur.add(1);
        }
    }

    pub fn extend_from_slice(&mut self, ws: &[u64]) {
        for &w in ws {
            self.push(w);
        }
    }

    pub fn len(&self) -> usize {
        // SAFETY: `cur` lies within the storage that starts at `ptr`.
        unsafe { self.cur.offset_from(self.ptr) as usize }
    }

    /// The last word, if any.
    #[inline(always)]
    pub fn last_mut(&mut self) -> Option<&mut u64> {
        // SAFETY: the word before `cur` is written.
        (self.cur > self.ptr).then(|| unsafe { &mut *self.cur.sub(1) })
    }

    pub fn is_empty(&self) -> bool {
        self.cur == self.ptr
    }

    pub fn as_slice(&self) -> &[u64] {
        if self.is_empty() {
            return &[];
        }
        // SAFETY: the words from `ptr` to `cur` are written.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len()) }
    }

    pub fn clear(&mut self) {
        self.cur = self.ptr;
    }

    /// The words as a `Vec` (a heap buffer's own allocation).
    fn into_vec(mut self) -> Vec<u64> {
        let len = self.len();
        match std::mem::replace(&mut self.store, Store::None) {
            Store::Heap(mut v) => {
                // SAFETY: the first `len` words of `v`'s allocation are written.
                unsafe { v.set_len(len) };
                v
            }
            _ => self.as_slice().to_vec(),
        }
    }
}

impl Default for Words {
    fn default() -> Words {
        Words::new()
    }
}

impl words::Sink for Words {
    #[inline(always)]
    fn push(&mut self, w: u64) {
        Words::push(self, w)
    }
}

/// Hands a full buffer over (out of line: the callbacks' common path calls nothing else).
/// `extern "C"`, so that it does not unwind (it aborts on a panic, as the callbacks that call
/// it would): the callbacks can then call it as a tail call, and save no register for it.
#[cold]
#[inline(never)]
pub(crate) extern "C" fn flush_full(b: &mut ThreadBuf) {
    b.flush(false);
}

#[cold]
#[inline(never)]
fn overflow() -> ! {
    panic!("qemu-tracer: a record overflowed its thread's buffer (a flush was missed)");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::words::{CodeBlock, MODIFY};

    /// The words as the callbacks appended them before positions were kept relative to the
    /// block's end: absolute instruction positions (the block's start plus the instruction's
    /// index), counts saturating at 0, modifies merged, escapes for what does not fit a word.
    #[derive(Default)]
    struct Absolute {
        tb_start: u64,
        retired: u64,
        last_insn: u64,
        words: Vec<u64>,
    }

    impl Absolute {
        fn block(&mut self, n: u64) {
            self.tb_start = self.retired;
            self.retired += n;
        }
        fn code_word(&mut self, w: u64) {
            self.block((w >> 55) & 0x7f);
            self.words.push(w);
        }
        fn access(&mut self, code: u64, addr: u64, idx: u64) {
            let pos = self.tb_start + idx + 1;
            let icount = pos.saturating_sub(self.last_insn);
            self.last_insn = pos;
            match words::access(code, addr, icount) {
                Some(w) => match self.words.last_mut() {
                    Some(prev) if words::completes_modify(*prev, w) => {
                        *prev |= MODIFY | (8 << words::CODE_SHIFT)
                    }
                    _ => self.words.push(w),
                },
                None => words::push_long_access(&mut self.words, code, addr, icount),
            }
        }
        fn catch_up(&mut self) {
            let n = self.retired.saturating_sub(self.last_insn);
            if n > 0 {
                words::push_record(&mut self.words, &Record::Instructions(n));
                self.last_insn = self.retired;
            }
        }
    }

    /// The callbacks' common path ([`ThreadBuf::try_access`], [`ThreadBuf::try_code_word`],
    /// falling back to [`ThreadBuf::access`] and [`ThreadBuf::code_word`] when they decline)
    /// appends the words the general path appends, and both append the words of absolute
    /// positions ([`Absolute`], the callbacks before positions from the block's end):
    /// modifies merged, the first access's stack hint, escapes for high addresses and long
    /// gaps, instruction counts (an instruction before the previous record's counts 0), and
    /// the instructions caught up before a synchronization record.
    #[test]
    fn the_common_path_appends_the_words_of_the_general_path() {
        let mut general = ThreadBuf::with_capacity(7, 40_000);
        let mut common = ThreadBuf::with_capacity(7, 40_000);
        let mut absolute = Absolute::default();
        let mut n = 0;
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut declined = 0;
        for k in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if k % 5 == 0 {
                let b = CodeBlock {
                    addr: 0x40_1000 + (x >> 50),
                    bytes: (x >> 8) as u32 % 256,
                    // Blocks of up to 127 instructions, and now and then a long gap.
                    insns: (x >> 20) as u32 % 128,
                };
                let w = words::inline_code(&b).unwrap();
                n = u64::from(b.insns);
                general.code_word(w);
                absolute.code_word(w);
                if common.try_code_word(w).is_none() {
                    declined += 1;
                    common.code_word(w);
                }
                if k % 1000 == 0 {
                    n = 5000;
                    general.block(n);
                    common.block(n);
                    absolute.block(n);
                }
                if k % 777 == 0 {
                    general.catch_up();
                    common.catch_up();
                    absolute.catch_up();
                }
                continue;
            }
            let addr = match x % 50 {
                0 => 0xffff_ffff_ff60_0000,
                1..=10 => 0x1000, // a load and a store of it: merged when by one instruction
                _ => (x >> 16) & 0xffff_ffff,
            };
            let code = words::code((x >> 4) as u32 % 4, (x >> 6) & 1 == 1);
            // Instructions 0 to 2 of the block, in any order (also past a short block's end).
            let idx = (x >> 8) % 3;
            let u = rel(idx, n);
            general.access(code, addr, u);
            absolute.access(code, addr, idx);
            if common
                .try_access(code << words::CODE_SHIFT, addr, u)
                .is_none()
            {
                declined += 1;
                common.access(code, addr, u);
            }
        }
        assert_eq!(general.words.as_slice(), common.words.as_slice());
        assert_eq!(general.words.as_slice(), &absolute.words[..]);
        assert_eq!(general.e, common.e);
        assert_eq!(
            general.e,
            absolute.last_insn.wrapping_sub(absolute.retired),
            "the previous record's position from the block's end"
        );
        let w = general.words.as_slice();
        assert!(w.iter().any(|&w| w & MODIFY != 0));
        assert!(w
            .iter()
            .any(|&w| w & words::ESC != 0 && w & 0xff == words::ESC_BYTES));
        // The first access, the high addresses, the long gaps and the instructions before
        // the previous record's: a few thousand.
        assert!((100..5000).contains(&declined), "{declined} declined");
    }
}
