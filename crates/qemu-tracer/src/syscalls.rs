//! Synchronization system calls: recorded at entry and return with their first three arguments
//! and a global sequence number, so that a replay can pair a `futex` wait with the wake that
//! ended it and order thread creation and exit across threads.
//!
//! Not recorded: the return of `clone` in the new thread (QEMU reports the return only in the
//! parent; the child's first record is its thread-start record), and anything after `execve`
//! (QEMU does not follow it: the new program runs without the plugin and no at-exit callback
//! comes, so the trace is ended at the `execve` entry; should the call fail, the rest of the
//! program is not recorded).

use crate::buffer::{self, Slot};
use crate::ffi::PluginId;
use std::ffi::c_uint;
use std::sync::atomic::{AtomicU64, Ordering};
use tracefmt::{Record, SyncPhase};

pub const SYS_NANOSLEEP: i64 = 35;
pub const SYS_SCHED_YIELD: i64 = 24;
pub const SYS_PAUSE: i64 = 34;
pub const SYS_CLONE: i64 = 56;
pub const SYS_FORK: i64 = 57;
pub const SYS_VFORK: i64 = 58;
pub const SYS_EXIT: i64 = 60;
pub const SYS_WAIT4: i64 = 61;
pub const SYS_FUTEX: i64 = 202;
pub const SYS_CLOCK_NANOSLEEP: i64 = 230;
pub const SYS_EXIT_GROUP: i64 = 231;
pub const SYS_WAITID: i64 = 247;
pub const SYS_CLONE3: i64 = 435;
pub const SYS_EXECVE: i64 = 59;
pub const SYS_EXECVEAT: i64 = 322;
pub const SYS_FUTEX_WAITV: i64 = 449;
pub const SYS_BRK: i64 = 12;

/// The guest's first and latest `brk` results: where its brk heap starts and ends.
static BRK_START: AtomicU64 = AtomicU64::new(0);
static BRK_END: AtomicU64 = AtomicU64::new(0);

/// The guest's brk heap, once the guest asked for it (glibc's `malloc` calls `brk(0)`).
pub fn brk_range() -> Option<(u64, u64)> {
    match BRK_START.load(Ordering::Relaxed) {
        0 => None,
        lo => Some((lo, BRK_END.load(Ordering::Relaxed))),
    }
}

fn note_brk(ret: i64) {
    if ret > 0 {
        let _ = BRK_START.compare_exchange(0, ret as u64, Ordering::Relaxed, Ordering::Relaxed);
        BRK_END.store(ret as u64, Ordering::Relaxed);
    }
}

/// x86_64 system calls that create or end threads, or block until another thread acts, and
/// `execve`, which ends the traced program image.
pub fn is_sync(nr: i64) -> bool {
    matches!(
        nr,
        SYS_NANOSLEEP
            | SYS_SCHED_YIELD
            | SYS_PAUSE
            | SYS_CLONE
            | SYS_FORK
            | SYS_VFORK
            | SYS_EXIT
            | SYS_WAIT4
            | SYS_FUTEX
            | SYS_CLOCK_NANOSLEEP
            | SYS_EXIT_GROUP
            | SYS_WAITID
            | SYS_CLONE3
            | SYS_FUTEX_WAITV
            | SYS_EXECVE
            | SYS_EXECVEAT
    )
}

/// Ends a thread's recording: remaining instructions, the thread-exit record, the last chunk.
/// `_held` is the guard of `slot.lock`, as proof that the caller holds it.
pub fn finish_thread(slot: &Slot, _held: &std::sync::MutexGuard<'_, ()>) {
    // SAFETY: the caller holds `slot.lock` (see `_held`).
    let b = unsafe { slot.buf() };
    b.catch_up();
    let seq = crate::next_seq();
    to_sync_log(
        seq,
        crate::live::SyncKind::Exit,
        b.tid,
        0,
        [0; 3],
        0,
        None,
        false,
    );
    b.record(&Record::ThreadExit { seq });
    b.flush(true);
    slot.alive
        .store(false, std::sync::atomic::Ordering::Release);
}

/// The timeout of a futex wait in nanoseconds from now, read from the guest's `timespec` at
/// `ts` (in user mode guest addresses are the process's own): relative for `FUTEX_WAIT`,
/// an absolute deadline for `FUTEX_WAIT_BITSET`, `FUTEX_WAIT_REQUEUE_PI` and
/// `FUTEX_LOCK_PI2` (on `CLOCK_REALTIME` with `FUTEX_CLOCK_REALTIME`, else
/// `CLOCK_MONOTONIC`) and `FUTEX_LOCK_PI` (always `CLOCK_REALTIME`), converted against the
/// clock now (a deadline already past is 0). `None` without a timeout (a null pointer, or
/// an operation that takes none), or when the pointer cannot be read (the kernel then fails
/// the call with EFAULT): the read goes through `process_vm_readv`, which reports a bad
/// address instead of faulting.
pub fn futex_timeout(op: u64, ts: u64) -> Option<u64> {
    const FUTEX_CLOCK_REALTIME: u64 = 256;
    let cmd = op & 0x7f;
    let absolute = match cmd {
        0 => false,
        6 | 9 | 11 | 13 => true,
        _ => return None,
    };
    if ts == 0 {
        return None;
    }
    let mut spec = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let local = libc::iovec {
        iov_base: std::ptr::from_mut(&mut spec).cast(),
        iov_len: std::mem::size_of::<libc::timespec>(),
    };
    let remote = libc::iovec {
        iov_base: ts as *mut libc::c_void,
        iov_len: std::mem::size_of::<libc::timespec>(),
    };
    // SAFETY: one local iovec over `spec`, one remote iovec read in this process; the kernel
    // checks the remote range.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    if n != local.iov_len as isize || spec.tv_sec < 0 {
        return None;
    }
    let ns = |t: &libc::timespec| t.tv_sec as u128 * 1_000_000_000 + t.tv_nsec as u128;
    let t = ns(&spec);
    if !absolute {
        return Some(t.min(u64::MAX as u128) as u64);
    }
    let clock = if cmd == 6 || op & FUTEX_CLOCK_REALTIME != 0 {
        libc::CLOCK_REALTIME
    } else {
        libc::CLOCK_MONOTONIC
    };
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid timespec to fill.
    unsafe { libc::clock_gettime(clock, &mut now) };
    Some(t.saturating_sub(ns(&now)).min(u64::MAX as u128) as u64)
}

/// `qemu_plugin_vcpu_syscall_cb_t`.
///
/// # Safety
/// Called by QEMU on the guest thread that makes the call.
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn on_syscall(
    _id: PluginId,
    vcpu: c_uint,
    nr: i64,
    a0: u64,
    a1: u64,
    a2: u64,
    a3: u64,
    _a4: u64,
    _a5: u64,
    _a6: u64,
    _a7: u64,
) {
    if !is_sync(nr) {
        return;
    }
    let slot = buffer::current(vcpu);
    let guard = slot.lock.lock().unwrap_or_else(|e| e.into_inner());
    if !slot.alive.load(std::sync::atomic::Ordering::Acquire) {
        return;
    }
    // SAFETY: we hold the slot's lock.
    let b = unsafe { slot.buf() };
    b.catch_up();
    b.pending = (nr as u64, [a0, a1, a2]);
    let seq = crate::next_seq();
    let timeout_ns = if nr == SYS_FUTEX {
        futex_timeout(a1, a3)
    } else {
        None
    };
    let entry = crate::live::SyncKind::Entry;
    if matches!(nr, SYS_CLONE | SYS_CLONE3) {
        buffer::CREATED.set(false);
    }
    to_sync_log(
        seq,
        entry,
        b.tid,
        nr as u64,
        [a0, a1, a2],
        0,
        timeout_ns,
        false,
    );
    b.record(&Record::Sync {
        seq,
        nr: nr as u64,
        args: [a0, a1, a2],
        ret: 0,
        phase: SyncPhase::Entry,
        timeout_ns,
    });
    match nr {
        SYS_EXIT => {
            // This thread ends here (the last thread's exit also runs the at-exit callback,
            // which then finds this slot dead).
            finish_thread(slot, &guard);
            let mut reg = buffer::REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
            reg.retain(|s| !std::ptr::eq(*s, slot));
            drop(reg);
            buffer::drop_current(vcpu);
        }
        SYS_EXIT_GROUP => {} // the at-exit callback flushes every thread
        SYS_EXECVE | SYS_EXECVEAT => {
            drop(guard);
            crate::finish_trace("execve", Some(slot));
        }
        _ => {
            // In a live recording the records before a call that may block go to the
            // simulation now, not when the block is full: the simulation may need them
            // before this thread runs again.
            if b.full() || live() {
                b.flush(false);
            }
        }
    }
}

fn live() -> bool {
    crate::tracer().is_some_and(|t| t.live.is_some())
}

/// In a live recording, the synchronization record `seq` goes into the channel's sync log
/// too (see `live`).
#[allow(clippy::too_many_arguments)]
fn to_sync_log(
    seq: u64,
    kind: crate::live::SyncKind,
    tid: u32,
    nr: u64,
    args: [u64; 3],
    ret: i64,
    timeout_ns: Option<u64>,
    created: bool,
) {
    if buffer::FORKED.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    if let Some(l) = crate::tracer().and_then(|t| t.live.as_ref()) {
        l.sync(seq, kind, tid, nr, args, ret, timeout_ns, created);
    }
}

/// `qemu_plugin_vcpu_syscall_ret_cb_t`.
///
/// # Safety
/// Called by QEMU on the guest thread that made the call.
pub unsafe extern "C" fn on_syscall_ret(_id: PluginId, vcpu: c_uint, nr: i64, ret: i64) {
    if nr == SYS_BRK {
        note_brk(ret);
        return;
    }
    if !is_sync(nr) {
        return;
    }
    let slot = buffer::current(vcpu);
    let _g = slot.lock.lock().unwrap_or_else(|e| e.into_inner());
    if !slot.alive.load(std::sync::atomic::Ordering::Acquire) {
        return;
    }
    // SAFETY: we hold the slot's lock.
    let b = unsafe { slot.buf() };
    let (pnr, args) = b.pending;
    let args = if pnr == nr as u64 { args } else { [0; 3] };
    let seq = crate::next_seq();
    let created = matches!(nr, SYS_CLONE | SYS_CLONE3) && buffer::CREATED.get();
    let ret_kind = crate::live::SyncKind::Return;
    to_sync_log(seq, ret_kind, b.tid, nr as u64, args, ret, None, created);
    b.record(&Record::Sync {
        seq,
        nr: nr as u64,
        args,
        ret,
        phase: SyncPhase::Return,
        timeout_ns: None,
    });
    if b.full() {
        b.flush(false);
    }
}
