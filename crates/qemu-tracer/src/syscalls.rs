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
    b.record(&Record::ThreadExit {
        seq: crate::next_seq(),
    });
    b.flush(true);
    slot.alive
        .store(false, std::sync::atomic::Ordering::Release);
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
    _a3: u64,
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
    b.record(&Record::Sync {
        seq: crate::next_seq(),
        nr: nr as u64,
        args: [a0, a1, a2],
        ret: 0,
        phase: SyncPhase::Entry,
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
            if b.full() {
                b.flush(false);
            }
        }
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
    b.record(&Record::Sync {
        seq: crate::next_seq(),
        nr: nr as u64,
        args,
        ret,
        phase: SyncPhase::Return,
    });
    if b.full() {
        b.flush(false);
    }
}
