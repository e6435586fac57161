//! Minimal, hand-written declarations of the QEMU TCG plugin API (no GPL header is used).
//!
//! The plugin API is resolved at install time with `dlsym(RTLD_DEFAULT, ...)` into a table of
//! function pointers instead of being linked as undefined symbols. Why: the same crate is also
//! an `rlib` linked into the CLI and the tests, where `qemu_plugin_*` symbols do not exist; with
//! dynamic lookup no linker flag (`--unresolved-symbols=ignore-all`) is needed anywhere, and a
//! missing function gives a clear message instead of a loader error.
//!
//! Version switch: QEMU 7.2/8.x offer API version 1 (`{min 0, cur 1}`); QEMU 9+ require at least
//! version 2, which renamed only the inline-operation functions (not used here). The callback
//! registration functions used below have the same signatures in both, so supporting version 2
//! means raising [`PLUGIN_VERSION`] (QEMU accepts a plugin whose version lies in
//! `[info.version.min, info.version.cur]`, and so does [`Api::load`]).

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

/// The API version this plugin is written against; exported as `qemu_plugin_version`.
pub const PLUGIN_VERSION: c_int = 1;

pub type PluginId = u64;
/// `qemu_plugin_meminfo_t`: opaque bit-field, decoded only through the API functions.
pub type MemInfo = u32;

/// Opaque `struct qemu_plugin_tb`.
#[repr(C)]
pub struct Tb {
    _p: [u8; 0],
}
/// Opaque `struct qemu_plugin_insn`.
#[repr(C)]
pub struct Insn {
    _p: [u8; 0],
}

/// `qemu_info_t` (the same layout in versions 1 and 2).
#[repr(C)]
pub struct QemuInfo {
    pub target_name: *const c_char,
    pub version_min: c_int,
    pub version_cur: c_int,
    pub system_emulation: bool,
    pub smp_vcpus: c_int,
    pub max_vcpus: c_int,
}

/// `enum qemu_plugin_cb_flags`: the callbacks read no guest registers.
pub const CB_NO_REGS: c_int = 0;
/// `enum qemu_plugin_mem_rw`: loads and stores.
pub const MEM_RW: c_int = 3;

pub type TbTransCb = unsafe extern "C" fn(PluginId, *mut Tb);
pub type VcpuUdataCb = unsafe extern "C" fn(c_uint, *mut c_void);
pub type VcpuMemCb = unsafe extern "C" fn(c_uint, MemInfo, u64, *mut c_void);
pub type VcpuSimpleCb = unsafe extern "C" fn(PluginId, c_uint);
pub type UdataCb = unsafe extern "C" fn(PluginId, *mut c_void);
pub type SyscallCb =
    unsafe extern "C" fn(PluginId, c_uint, i64, u64, u64, u64, u64, u64, u64, u64, u64);
pub type SyscallRetCb = unsafe extern "C" fn(PluginId, c_uint, i64, i64);

/// The plugin API functions this plugin calls, resolved from the running QEMU.
pub struct Api {
    pub register_vcpu_tb_trans_cb: unsafe extern "C" fn(PluginId, TbTransCb),
    pub tb_n_insns: unsafe extern "C" fn(*const Tb) -> usize,
    pub tb_get_insn: unsafe extern "C" fn(*const Tb, usize) -> *mut Insn,
    pub insn_vaddr: unsafe extern "C" fn(*const Insn) -> u64,
    pub insn_size: unsafe extern "C" fn(*const Insn) -> usize,
    pub tb_vaddr: unsafe extern "C" fn(*const Tb) -> u64,
    pub register_vcpu_tb_exec_cb: unsafe extern "C" fn(*mut Tb, VcpuUdataCb, c_int, *mut c_void),
    pub register_vcpu_mem_cb: unsafe extern "C" fn(*mut Insn, VcpuMemCb, c_int, c_int, *mut c_void),
    pub mem_size_shift: unsafe extern "C" fn(MemInfo) -> c_uint,
    pub mem_is_store: unsafe extern "C" fn(MemInfo) -> bool,
    pub register_vcpu_init_cb: unsafe extern "C" fn(PluginId, VcpuSimpleCb),
    pub register_vcpu_syscall_cb: unsafe extern "C" fn(PluginId, SyscallCb),
    pub register_vcpu_syscall_ret_cb: unsafe extern "C" fn(PluginId, SyscallRetCb),
    pub register_atexit_cb: unsafe extern "C" fn(PluginId, UdataCb, *mut c_void),
}

fn sym(name: &CStr) -> Result<*mut c_void, String> {
    // SAFETY: `name` is NUL-terminated; RTLD_DEFAULT searches the qemu binary, which exports
    // the plugin API to the plugins it loads.
    let p = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
    if p.is_null() {
        Err(format!("qemu-tracer: QEMU does not export {name:?}"))
    } else {
        Ok(p)
    }
}

macro_rules! load {
    ($name:literal) => {{
        let p = sym($name)?;
        // SAFETY: the symbol is the QEMU function of that name, whose C signature is the
        // field's type (see the module doc for the versions checked).
        unsafe { std::mem::transmute::<*mut c_void, _>(p) }
    }};
}

impl Api {
    /// Checks the API version QEMU reports and resolves every function used.
    ///
    /// # Safety
    /// `info` must be the `qemu_info_t` pointer QEMU passed to `qemu_plugin_install`.
    // The transmutes' target types are the struct fields' types, written once there.
    #[allow(clippy::missing_transmute_annotations)]
    pub unsafe fn load(info: *const QemuInfo) -> Result<Api, String> {
        // SAFETY: guaranteed by the caller.
        let info = unsafe { &*info };
        if info.version_min > PLUGIN_VERSION || info.version_cur < PLUGIN_VERSION {
            return Err(format!(
                "qemu-tracer: QEMU plugin API version {} (minimum {}) is not supported; this \
                 plugin speaks version {PLUGIN_VERSION} (QEMU 7.2-8.x, e.g. Debian's qemu-user)",
                info.version_cur, info.version_min
            ));
        }
        if info.system_emulation {
            return Err("qemu-tracer: only user-mode emulation (qemu-x86_64) is supported".into());
        }
        Ok(Api {
            register_vcpu_tb_trans_cb: load!(c"qemu_plugin_register_vcpu_tb_trans_cb"),
            tb_n_insns: load!(c"qemu_plugin_tb_n_insns"),
            tb_get_insn: load!(c"qemu_plugin_tb_get_insn"),
            insn_vaddr: load!(c"qemu_plugin_insn_vaddr"),
            insn_size: load!(c"qemu_plugin_insn_size"),
            tb_vaddr: load!(c"qemu_plugin_tb_vaddr"),
            register_vcpu_tb_exec_cb: load!(c"qemu_plugin_register_vcpu_tb_exec_cb"),
            register_vcpu_mem_cb: load!(c"qemu_plugin_register_vcpu_mem_cb"),
            mem_size_shift: load!(c"qemu_plugin_mem_size_shift"),
            mem_is_store: load!(c"qemu_plugin_mem_is_store"),
            register_vcpu_init_cb: load!(c"qemu_plugin_register_vcpu_init_cb"),
            register_vcpu_syscall_cb: load!(c"qemu_plugin_register_vcpu_syscall_cb"),
            register_vcpu_syscall_ret_cb: load!(c"qemu_plugin_register_vcpu_syscall_ret_cb"),
            register_atexit_cb: load!(c"qemu_plugin_register_atexit_cb"),
        })
    }
}
