//! A QEMU user-mode TCG plugin that records the memory references of a real, multi-threaded
//! x86_64 program into a `.pmt` trace (`docs/trace-format.md`), and a runner for it.
//!
//! Built as a `cdylib` (the plugin: `qemu-x86_64 -plugin libqemu_tracer.so,out=FILE prog`) and
//! an `rlib` (the runner [`runner::record_with_qemu`] and the statistics reader [`stats`], for
//! the CLI and the tests).
//!
//! What is recorded, per guest thread (tagged with its guest tid): every load and store with its
//! virtual address and size (a load and a store of the same address by one instruction become
//! one modify record), the instructions retired between references (counted per executed
//! translated block and attributed by the instruction's position in the block), thread start and
//! exit, and synchronization system calls at entry and return ([`syscalls`]), each with a global
//! sequence number.
//!
//! `fork`: the child process is not traced; its inherited buffers are dropped (the writer thread
//! does not exist in the child) and nothing is written for it; the parent's trace shows the
//! `clone`/`fork` call and its return value. `execve` is not followed (QEMU runs the new program
//! without the plugin).

pub mod buffer;
pub mod ffi;
pub mod live;
pub mod runner;
pub mod stats;
pub mod syscalls;
pub mod words;
pub mod writer;

use ffi::{Api, PluginId, QemuInfo, Tb, CB_NO_REGS, MEM_RW};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use writer::{Stages, Writer};

/// How much of the recording runs (`mode=` of the plugin): all of it (`write`, the default),
/// or, to measure what each step costs, only the callbacks (`callbacks`: they return at once),
/// the callbacks filling the buffers (`buffer`: full buffers are emptied on the guest thread),
/// those plus the writer thread's encoding (`encode`) or encoding and compression (`compress`).
/// Only `write` leaves a trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Callbacks,
    Buffer,
    Encode,
    Compress,
    Write,
}

/// The plugin's global state, set once in `qemu_plugin_install`.
pub struct Tracer {
    pub api: Api,
    /// The trace file's writer (`None` in a live recording without a file).
    pub writer: Option<Writer>,
    /// The live channel to a simulation running at the same time (`live=PATH`).
    pub live: Option<live::Producer>,
    pub mode: Mode,
    /// Record instruction fetch: a code record per executed block (`ifetch=yes`, the
    /// default; `ifetch=no` records data references only, as before issue 19).
    pub ifetch: bool,
    /// The install-time header (later headers add the mappings).
    header: tracefmt::Header,
}

static TRACER: OnceLock<Tracer> = OnceLock::new();

/// The global sequence number of synchronization records; 0 means "none".
static SEQ: AtomicU64 = AtomicU64::new(1);

pub fn tracer() -> Option<&'static Tracer> {
    TRACER.get()
}

pub fn next_seq() -> u64 {
    SEQ.fetch_add(1, Ordering::Relaxed)
}

/// The API version QEMU checks before calling `qemu_plugin_install`.
#[no_mangle]
pub static qemu_plugin_version: c_int = ffi::PLUGIN_VERSION;

/// # Safety
/// Called by QEMU with its `qemu_info_t` and `argc` NUL-terminated `key=value` strings.
#[no_mangle]
pub unsafe extern "C" fn qemu_plugin_install(
    id: PluginId,
    info: *const QemuInfo,
    argc: c_int,
    argv: *const *const c_char,
) -> c_int {
    // SAFETY: forwarded from QEMU's call.
    match unsafe { install(id, info, argc, argv) } {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("{e}");
            -1
        }
    }
}

unsafe fn install(
    id: PluginId,
    info: *const QemuInfo,
    argc: c_int,
    argv: *const *const c_char,
) -> Result<(), String> {
    // SAFETY: `info` comes from QEMU.
    let api = unsafe { Api::load(info)? };
    let mut out = String::from("trace.pmt");
    let mut live_path = None;
    let mut mode = Mode::Write;
    let mut ifetch = true;
    let mut zstd_level = tracefmt::ZSTD_LEVEL;
    for i in 0..argc.max(0) as usize {
        // SAFETY: QEMU passes `argc` valid C strings.
        let arg = unsafe { CStr::from_ptr(*argv.add(i)) }.to_string_lossy();
        match arg.split_once('=') {
            Some(("out", v)) => out = v.to_string(),
            Some(("live", v)) => live_path = Some(v.to_string()),
            Some(("ifetch", v)) => {
                ifetch = match v {
                    "yes" | "on" => true,
                    "no" | "off" => false,
                    _ => {
                        return Err(format!(
                            "qemu-tracer: ifetch={v:?}: use ifetch=yes or ifetch=no"
                        ))
                    }
                }
            }
            Some(("level", v)) => {
                let (lo, hi) = (tracefmt::min_zstd_level(), tracefmt::max_zstd_level());
                zstd_level = match v.parse::<i32>() {
                    Ok(l) if (lo..=hi).contains(&l) => l,
                    _ => {
                        return Err(format!(
                            "qemu-tracer: level={v:?}: the zstd level is a number from {lo} \
                             to {hi} (default {}; negative levels are the fastest)",
                            tracefmt::ZSTD_LEVEL
                        ))
                    }
                }
            }
            Some(("mode", v)) => {
                mode = match v {
                    "callbacks" => Mode::Callbacks,
                    "buffer" => Mode::Buffer,
                    "encode" => Mode::Encode,
                    "compress" => Mode::Compress,
                    "write" => Mode::Write,
                    _ => {
                        return Err(format!(
                            "qemu-tracer: unknown mode {v:?} (callbacks, buffer, encode, \
                             compress or write)"
                        ))
                    }
                }
            }
            _ => {
                return Err(format!(
                    "qemu-tracer: unknown option {arg:?} (known: out=FILE, live=CHANNEL, \
                     mode=MODE, ifetch=yes|no, level=N)"
                ))
            }
        }
    }
    let mut header = initial_header();
    header.code_records = ifetch;
    let stages = match mode {
        Mode::Encode => Stages::Encode,
        Mode::Compress => Stages::Compress,
        _ => Stages::Write,
    };
    let live = match &live_path {
        Some(p) => Some(live::Producer::attach(p).map_err(|e| format!("qemu-tracer: {e}"))?),
        None => None,
    };
    let writer = match &live {
        Some(l) => {
            l.write_header(&serde_json::to_vec(&with_maps(&header, "install")).unwrap_or_default());
            None
        }
        None => Some(
            Writer::start(
                &out,
                with_maps(&header, "install"),
                stages,
                zstd_level,
                || match tracer() {
                    Some(t) => with_maps(&t.header, "running"),
                    None => tracefmt::Header::default(),
                },
            )
            .map_err(|e| format!("qemu-tracer: {e}"))?,
        ),
    };
    let tracer = Tracer {
        api,
        writer,
        live,
        mode,
        ifetch,
        header,
    };
    if TRACER.set(tracer).is_err() {
        return Err("qemu-tracer: installed twice".into());
    }
    let api = &TRACER.get().expect("just set").api;
    // SAFETY: registering callbacks with the id QEMU gave us; the callbacks have the C
    // signatures of the API (see `ffi`). `in_forked_child` only stores atomics, which is
    // async-signal-safe as a child-side fork handler must be.
    unsafe {
        (api.register_vcpu_init_cb)(id, on_vcpu_init);
        (api.register_vcpu_tb_trans_cb)(id, on_tb_trans);
        (api.register_vcpu_syscall_cb)(id, syscalls::on_syscall);
        (api.register_vcpu_syscall_ret_cb)(id, syscalls::on_syscall_ret);
        (api.register_atexit_cb)(id, on_exit, std::ptr::null_mut());
        libc::pthread_atfork(None, None, Some(in_forked_child));
    }
    Ok(())
}

extern "C" fn in_forked_child() {
    buffer::FORKED.store(true, Ordering::Relaxed);
    buffer::forget_all();
}

unsafe extern "C" fn on_vcpu_init(_id: PluginId, vcpu: c_uint) {
    buffer::note_parent(vcpu);
}

/// Set when the first block is translated: the guest program is loaded by then.
static LOADED: AtomicBool = AtomicBool::new(false);

/// Instruments a translated block: one block-execution callback (instruction count and, with
/// `ifetch`, the block's code record: its user data is the block's leaked [`words::CodeBlock`])
/// and one memory callback per instruction, whose user data is the instruction's position
/// from the end of the block ([`buffer::rel`]).
unsafe extern "C" fn on_tb_trans(_id: PluginId, tb: *mut Tb) {
    let Some(t) = tracer() else { return };
    if !LOADED.swap(true, Ordering::Relaxed) {
        // The program and its interpreter are mapped: put their names in the file now (on
        // this thread, before the guest runs), so that they survive a fatal signal (QEMU calls
        // no plugin callback then). The writer thread updates them as mappings change.
        match &t.writer {
            Some(w) => w.refresh_header_now(),
            None => refresh_live_header(true),
        }
    }
    let (exec, mem): (ffi::VcpuUdataCb, ffi::VcpuMemCb) = match (t.mode, t.ifetch) {
        (Mode::Callbacks, _) => (on_tb_exec_nothing, on_mem_nothing),
        (_, true) => (on_tb_exec_code, on_mem),
        (_, false) => (on_tb_exec, on_mem),
    };
    // SAFETY: `tb` is the block QEMU is translating; the indices are within `n`.
    unsafe {
        let n = (t.api.tb_n_insns)(tb);
        let udata = if t.ifetch && n > 0 {
            let start = (t.api.tb_vaddr)(tb);
            let last = (t.api.tb_get_insn)(tb, n - 1);
            let end = (t.api.insn_vaddr)(last) + (t.api.insn_size)(last) as u64;
            let desc = words::CodeBlock {
                addr: start,
                bytes: end.saturating_sub(start) as u32,
                insns: n as u32,
            };
            // Most blocks fit one word, which is then the callback's user data.
            if let (Some(w), Mode::Write | Mode::Encode | Mode::Compress | Mode::Buffer) =
                (words::inline_code(&desc), t.mode)
            {
                (t.api.register_vcpu_tb_exec_cb)(
                    tb,
                    on_tb_exec_inline,
                    CB_NO_REGS,
                    w as *mut c_void,
                );
                register_mem_cbs(t, tb, n, mem);
                return;
            }
            // In a live recording the description goes into the channel's code arena, where
            // the simulation reads it (not in a forked child, whose records are dropped).
            let block: &'static words::CodeBlock = match t
                .live
                .as_ref()
                .filter(|_| !buffer::FORKED.load(Ordering::Relaxed))
            {
                Some(l) => match l.code_block(desc) {
                    Some(b) => b,
                    None => Box::leak(Box::new(desc)),
                },
                None => Box::leak(Box::new(desc)),
            };
            std::ptr::from_ref(block).cast_mut().cast::<c_void>()
        } else {
            n as *mut c_void
        };
        let exec = if t.ifetch && n == 0 { on_tb_exec } else { exec };
        (t.api.register_vcpu_tb_exec_cb)(tb, exec, CB_NO_REGS, udata);
        register_mem_cbs(t, tb, n, mem);
    }
}

/// Registers `mem` on each of the `n` instructions of `tb`, with the instruction's position
/// from the end of the block as user data ([`buffer::rel`]).
///
/// # Safety
/// `tb` is the block QEMU is translating, of `n` instructions.
unsafe fn register_mem_cbs(t: &Tracer, tb: *mut Tb, n: usize, mem: ffi::VcpuMemCb) {
    for i in 0..n {
        // SAFETY: guaranteed by the caller.
        unsafe {
            let insn = (t.api.tb_get_insn)(tb, i);
            let u = buffer::rel(i as u64, n as u64);
            (t.api.register_vcpu_mem_cb)(insn, mem, CB_NO_REGS, MEM_RW, u as *mut c_void);
        }
    }
}

unsafe extern "C" fn on_tb_exec(vcpu: c_uint, n: *mut c_void) {
    let slot = buffer::current(vcpu);
    // SAFETY: this thread's own slot, in a block callback.
    unsafe { slot.buf() }.block(n as u64);
}

/// The block callback with instruction fetch: counts the block's instructions and records its
/// execution (one word).
unsafe extern "C" fn on_tb_exec_code(vcpu: c_uint, block: *mut c_void) {
    let slot = buffer::current(vcpu);
    // SAFETY: this thread's own slot, in a block callback; `block` is the leaked
    // `CodeBlock` that `on_tb_trans` registered with this callback.
    let b = unsafe { slot.buf() };
    b.code(unsafe { &*block.cast_const().cast::<words::CodeBlock>() });
    if b.full() {
        b.flush(false);
    }
}

/// The block callback of a block with an inline code word (its user data). The common case
/// (a known thread, room in its buffer) calls nothing; the others are tail calls, as in
/// [`on_mem`].
unsafe extern "C" fn on_tb_exec_inline(vcpu: c_uint, word: *mut c_void) {
    if let Some(slot) = buffer::known(vcpu) {
        // SAFETY: this thread's own slot, in a block callback.
        let b = unsafe { slot.buf() };
        match b.try_code_word(word as u64) {
            Some(false) => return,
            Some(true) => return buffer::flush_full(b),
            None => {}
        }
    }
    // SAFETY: forwarded.
    unsafe { on_tb_exec_inline_slow(vcpu, word) }
}

#[cold]
#[inline(never)]
unsafe extern "C" fn on_tb_exec_inline_slow(vcpu: c_uint, word: *mut c_void) {
    let slot = buffer::current(vcpu);
    // SAFETY: this thread's own slot, in a block callback.
    let b = unsafe { slot.buf() };
    b.code_word(word as u64);
    if b.full() {
        b.flush(false);
    }
}

/// The memory callback: one word appended to the thread's buffer ([`words`]).
///
/// The common case (a known access code and thread, a one-word access, room in the buffer:
/// [`buffer::ThreadBuf::try_access`]) calls nothing, so it saves no callee-saved registers;
/// everything else goes to [`on_mem_slow`] by a tail call, before anything was changed.
/// Issue 19: the guest thread, 183.5 M of these calls for python3 `sum(range(3_000_000))`,
/// is the recording's critical path since the writer's encoding was cut.
/// `u`, the user data, is the instruction's position from the end of its block
/// ([`buffer::rel`]).
unsafe extern "C" fn on_mem(vcpu: c_uint, info: ffi::MemInfo, vaddr: u64, u: *mut c_void) {
    if let (Some(bits), Some(slot)) = (info_code_bits(info), buffer::known(vcpu)) {
        // SAFETY: this thread's own slot, in a memory callback.
        let b = unsafe { slot.buf() };
        match b.try_access(bits, vaddr, u as u64) {
            Some(false) => return,
            Some(true) => return buffer::flush_full(b),
            None => {}
        }
    }
    // SAFETY: forwarded.
    unsafe { on_mem_slow(vcpu, info, vaddr, u) }
}

#[cold]
#[inline(never)]
unsafe extern "C" fn on_mem_slow(vcpu: c_uint, info: ffi::MemInfo, vaddr: u64, u: *mut c_void) {
    let code = info_code(info);
    let slot = buffer::current(vcpu);
    // SAFETY: this thread's own slot, in a memory callback.
    let b = unsafe { slot.buf() };
    b.access(code, vaddr, u as u64);
    if b.full() {
        b.flush(false);
    }
}

/// `mode=callbacks`: the cost of QEMU calling the plugin, nothing else.
unsafe extern "C" fn on_tb_exec_nothing(_vcpu: c_uint, _n: *mut c_void) {}
unsafe extern "C" fn on_mem_nothing(_: c_uint, _: ffi::MemInfo, _: u64, _: *mut c_void) {}

/// The access code ([`words::code`]) of each `qemu_plugin_meminfo_t` value seen, in place in
/// an access word (shifted by [`words::CODE_SHIFT`]), plus one (0: not yet known). QEMU 7.2
/// packs the memory operation and the direction into the low 18 bits; other values are
/// decoded on every call. Why a table: the two API calls that decode it cost an indirect call
/// each per reference, and a program uses a handful of values. Why shifted in place: two
/// instructions less in the memory callback (2 MiB of zeros, of which the few lines used are
/// touched).
static CODES: [AtomicU64; 1 << 18] = [const { AtomicU64::new(0) }; 1 << 18];

#[inline(always)]
fn info_code(info: ffi::MemInfo) -> u64 {
    info_code_known(info).unwrap_or_else(|| info_code_slow(info))
}

/// [`info_code`] when the value was seen before.
#[inline(always)]
fn info_code_known(info: ffi::MemInfo) -> Option<u64> {
    info_code_bits(info).map(|c| c >> words::CODE_SHIFT)
}

/// [`info_code_known`] shifted in place in an access word.
#[inline(always)]
fn info_code_bits(info: ffi::MemInfo) -> Option<u64> {
    match CODES.get(info as usize).map(|c| c.load(Ordering::Relaxed)) {
        Some(c) if c != 0 => Some(c - 1),
        _ => None,
    }
}

#[cold]
#[inline(never)]
fn info_code_slow(info: ffi::MemInfo) -> u64 {
    let Some(t) = tracer() else { return 0 };
    // SAFETY: `info` is a value QEMU passed to a memory callback; the functions only decode it.
    let (shift, store) = unsafe { ((t.api.mem_size_shift)(info), (t.api.mem_is_store)(info)) };
    let code = words::code(shift, store);
    if let Some(c) = CODES.get(info as usize) {
        c.store((code << words::CODE_SHIFT) + 1, Ordering::Relaxed);
    }
    code
}

/// Runs once, after QEMU stopped every other callback (see `buffer`): flushes every live
/// thread's records, then writes the end record and the final header.
unsafe extern "C" fn on_exit(_id: PluginId, _u: *mut c_void) {
    finish_trace("exit", None);
}

/// Ends the trace once: flushes the records of every live thread (or, with `only`, of that
/// thread alone), writes the end record and the final header; later records are dropped.
///
/// `only` serves `execve`, which ends the traced process image without an at-exit callback
/// while other threads may still be running: their buffers cannot be touched safely, so their
/// records since their last chunk are lost (the header says `ended_by: execve`).
pub fn finish_trace(reason: &str, only: Option<&'static buffer::Slot>) {
    if buffer::FORKED.load(Ordering::Relaxed) || buffer::ENDING.swap(true, Ordering::AcqRel) {
        return;
    }
    let Some(t) = tracer() else { return };
    let slots: Vec<_> = match only {
        Some(s) => vec![s],
        None => buffer::REGISTRY
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone(),
    };
    for slot in slots {
        let guard = slot.lock.lock().unwrap_or_else(|e| e.into_inner());
        if slot.alive.load(Ordering::Acquire) {
            syscalls::finish_thread(slot, &guard);
        }
    }
    buffer::FINISHED.store(true, Ordering::Relaxed);
    let mut header = with_maps(&t.header, reason);
    header.extra.insert("ended_by".into(), reason.into());
    if let Some(l) = &t.live {
        l.write_header(&serde_json::to_vec(&header).unwrap_or_default());
        l.finish();
    }
    if let Some(w) = &t.writer {
        if let Err(e) = w.finish(header) {
            eprintln!("qemu-tracer: trace incomplete: {e}");
        }
    }
}

/// In a live recording: writes the header with the current mappings into the channel, when
/// `now` or when the mappings changed (checked at most every `writer::REFRESH_EVERY`), as
/// the writer thread does for a trace file.
pub fn refresh_live_header(now: bool) {
    use std::sync::Mutex;
    use std::time::Instant;
    static LAST: Mutex<Option<(Instant, String)>> = Mutex::new(None);
    let Some(t) = tracer() else { return };
    let Some(l) = &t.live else { return };
    if buffer::FORKED.load(Ordering::Relaxed) || buffer::FINISHED.load(Ordering::Relaxed) {
        return;
    }
    let Ok(mut last) = LAST.try_lock() else {
        return;
    };
    if !now
        && last
            .as_ref()
            .is_some_and(|(at, _)| at.elapsed() < writer::REFRESH_EVERY)
    {
        return;
    }
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let changed = last.as_ref().is_none_or(|(_, m)| *m != maps);
    *last = Some((Instant::now(), maps));
    if now || changed {
        let h = with_maps(&t.header, "running");
        l.write_header(&serde_json::to_vec(&h).unwrap_or_default());
    }
}

/// The guest program and its arguments, from QEMU's own command line (the first argument
/// that is not a QEMU option).
fn guest_command() -> (String, Vec<String>) {
    let cmdline = std::fs::read("/proc/self/cmdline").unwrap_or_default();
    let mut args = cmdline
        .split(|&b| b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .skip(1);
    // QEMU user-mode options without a value; every other option takes one.
    const FLAGS: [&str; 7] = [
        "h",
        "help",
        "strace",
        "singlestep",
        "one-insn-per-tb",
        "version",
        "enable-fips",
    ];
    while let Some(a) = args.next() {
        match a.strip_prefix('-') {
            Some(opt) => {
                if !FLAGS.contains(&opt.trim_start_matches('-')) {
                    args.next();
                }
            }
            None => return (a, args.filter(|s| !s.is_empty()).collect()),
        }
    }
    (String::new(), Vec::new())
}

/// `/proc/self/maps` as `{start, end, name}`; guest addresses are host addresses in user mode
/// on a 64-bit host (guest_base 0).
fn read_maps() -> Vec<(u64, u64, u64, String)> {
    let text = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (s, e) = f.next()?.split_once('-')?;
            let _perms = f.next()?;
            let off = u64::from_str_radix(f.next()?, 16).ok()?;
            let name = f.nth(2).unwrap_or("").to_string();
            Some((
                u64::from_str_radix(s, 16).ok()?,
                u64::from_str_radix(e, 16).ok()?,
                off,
                name,
            ))
        })
        .collect()
}

/// The load bias of a position-independent main executable: where its offset-0 mapping starts
/// (its first segment has virtual address 0); 0 for a fixed-address executable.
fn load_bias(program: &str, maps: &[(u64, u64, u64, String)]) -> Option<u64> {
    let path = std::fs::canonicalize(program).ok()?;
    let mut head = [0u8; 18];
    use std::io::Read;
    std::fs::File::open(&path)
        .ok()?
        .read_exact(&mut head)
        .ok()?;
    if u16::from_le_bytes([head[16], head[17]]) != 3 {
        return Some(0); // ET_EXEC
    }
    let name = path.to_string_lossy();
    maps.iter().find(|m| m.3 == name && m.2 == 0).map(|m| m.0)
}

fn initial_header() -> tracefmt::Header {
    let (program, args) = guest_command();
    let mut h = tracefmt::Header::new("qemu", &program, &args, "x86_64");
    h.identify_program(std::path::Path::new(&program));
    h.extra.insert("pid".into(), std::process::id().into());
    // Replaced by "exit" or "execve" when the trace is finished (see `writer`).
    h.extra.insert(
        "ended_by".into(),
        "incomplete: the process died (of a signal) before the trace was finished; records \
         after the last chunk are lost"
            .into(),
    );
    h
}

/// `base` with the mappings and load bias as they are now (`when`: "install", "running" or
/// "exit"), the mappings named by origin ([`name_stacks`], [`name_heap_and_anonymous`]).
fn with_maps(base: &tracefmt::Header, when: &str) -> tracefmt::Header {
    let maps = read_maps();
    let mut h = base.clone();
    let program = h.program_path.clone().unwrap_or_else(|| h.program.clone());
    if let Some(bias) = load_bias(&program, &maps) {
        h.load_bias = Some(bias);
        h.load_bias_source = Some(if bias == 0 {
            "ELF type EXEC: fixed addresses".into()
        } else {
            "start of the main executable's offset-0 mapping in /proc/self/maps".into()
        });
    }
    h.extra.insert("maps_taken_at".into(), when.into());
    h.maps = maps
        .into_iter()
        .map(|(start, end, _, name)| tracefmt::Mapping { start, end, name })
        .collect();
    name_stacks(&mut h.maps);
    let program = std::fs::canonicalize(&program)
        .map(|p| p.display().to_string())
        .unwrap_or(program);
    name_heap_and_anonymous(&mut h.maps, &program, syscalls::brk_range());
    h
}

/// Names what `/proc/self/maps` leaves unnamed, by origin and size, as the lackey path's
/// classes do: QEMU's own brk heap `[qemu host heap]`; the guest's brk heap `[heap]` (from the
/// guest's first `brk` result to its last, [`syscalls::brk_range`]); the anonymous mapping
/// right after the program's file mappings, below the brk heap, `PROGRAM (bss)` (the part of
/// the bss beyond the file's last page); every other anonymous mapping `[anon SIZE]` (the
/// kernel merges adjacent `mmap`s into one mapping).
fn name_heap_and_anonymous(
    maps: &mut Vec<tracefmt::Mapping>,
    program: &str,
    brk: Option<(u64, u64)>,
) {
    for m in maps.iter_mut().filter(|m| m.name == "[heap]") {
        m.name = "[qemu host heap]".into();
    }
    let file = program.rsplit('/').next().unwrap_or(program);
    let image_end = maps
        .iter()
        .filter(|m| m.name == program)
        .map(|m| m.end)
        .max();
    let mut named = Vec::with_capacity(maps.len() + 2);
    for m in maps.drain(..) {
        if !m.name.is_empty() {
            named.push(m);
            continue;
        }
        // Cut the mapping at the brk heap's bounds; name each piece by where it lies.
        let (lo, hi) = brk.unwrap_or((u64::MAX, u64::MAX));
        let mut cuts = vec![m.start];
        cuts.extend([lo, hi].into_iter().filter(|&c| m.start < c && c < m.end));
        cuts.push(m.end);
        for w in cuts.windows(2) {
            let (start, end) = (w[0], w[1]);
            let name = if brk.is_some() && lo <= start && end <= hi.max(lo) {
                "[heap]".to_string()
            } else if Some(m.start) == image_end && end <= lo {
                format!("{file} (bss)")
            } else {
                format!("[anon {}]", size_words(end - start))
            };
            named.push(tracefmt::Mapping { start, end, name });
        }
    }
    *maps = named;
}

/// `132 KiB`, `7.1 MiB`, `2.0 GiB`.
fn size_words(bytes: u64) -> String {
    const K: u64 = 1024;
    if bytes < K * K {
        format!("{} KiB", bytes.div_ceil(K))
    } else if bytes < K * K * K {
        format!("{:.1} MiB", bytes as f64 / (K * K) as f64)
    } else {
        format!("{:.1} GiB", bytes as f64 / (K * K * K) as f64)
    }
}

/// Renames QEMU's own `[stack]` and names the anonymous mappings that hold the guest threads'
/// stacks: `[stack]` for the main thread, `[stack:TID]` for the others (see
/// `buffer::STACK_HINTS`; adjacent thread stacks may share one merged mapping).
fn name_stacks(maps: &mut [tracefmt::Mapping]) {
    for m in maps.iter_mut().filter(|m| m.name == "[stack]") {
        m.name = "[qemu host stack]".into();
    }
    let hints = buffer::STACK_HINTS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    for (i, (tid, addr)) in hints.into_iter().enumerate() {
        if let Some(m) = maps.iter_mut().find(|m| m.start <= addr && addr < m.end) {
            if m.name.is_empty() {
                m.name = if i == 0 {
                    "[stack]".into()
                } else {
                    format!("[stack:{tid}]")
                };
            }
        }
    }
}
