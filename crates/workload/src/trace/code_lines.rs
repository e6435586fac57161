//! What a traced program's ELF files say about its code, for `--cachegrind-out`: the function
//! symbol holding an address, the instructions of an executed block (their addresses, from the
//! file's own bytes), and the source line of each instruction (the DWARF line table).
//!
//! A trace records executed blocks (start, length, instruction count), not single
//! instructions, so per-instruction counts need the block's instruction boundaries: they are
//! decoded from the file's executable sections with `iced-x86` (x86-64, the guest QEMU's
//! tracer records). Lines come from `addr2line` over the file's DWARF (its own sections or a
//! `.gnu_debuglink`/build-id debug file, as `addr2line` finds them). Where either is missing
//! (no file, no debug information, code generated at run time), the caller falls back to one
//! entry per function at line 0, as before.

use object::{Object, ObjectKind, ObjectSection, ObjectSymbol, SectionKind, SymbolKind};
use std::path::Path;

/// One ELF file's code: symbols, executable bytes and line table, in file addresses.
pub struct ElfCode {
    /// True for a position-independent file (a shared library, a PIE): runtime addresses are
    /// file addresses plus the load bias.
    pub position_independent: bool,
    /// Function symbols: (start, end, name) sorted by start.
    syms: Vec<(u64, u64, String)>,
    /// Executable sections: (file address, bytes).
    text: Vec<(u64, Vec<u8>)>,
    /// The file holding the DWARF line table (the file or its debug file), if any.
    lines_from: Option<std::path::PathBuf>,
    /// Its line table, loaded at the first `line_of` (loading decompresses and parses the
    /// DWARF: 440 M instructions for python3.11's, where naming functions needs none of it).
    lines: std::cell::OnceCell<Option<addr2line::Loader>>,
}

/// A source position of an instruction: file and line (line 0: unknown).
pub type SourceLine = (String, u32);

/// A file's function symbols: (start, end, name), from its full and dynamic tables.
fn function_symbols(file: &object::File) -> Vec<(u64, u64, String)> {
    file.symbols()
        .chain(file.dynamic_symbols())
        .filter(|s| s.kind() == SymbolKind::Text && s.address() != 0)
        .filter_map(|s| {
            let name = s.name().ok()?;
            Some((s.address(), s.address() + s.size().max(1), name.to_string()))
        })
        .collect()
}

/// The separate debug file of `file` by its build id, where Debian installs it
/// (`/usr/lib/debug/.build-id/XX/REST.debug`), if present. (`addr2line`'s loader follows
/// `.gnu_debuglink` only next to the file and under `/usr/lib/debug/DIR`, not by build id.)
fn debug_file(file: &object::File) -> Option<std::path::PathBuf> {
    let id = file.build_id().ok()??;
    if id.len() < 2 {
        return None;
    }
    let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
    let p = Path::new("/usr/lib/debug/.build-id")
        .join(&hex[..2])
        .join(format!("{}.debug", &hex[2..]));
    p.is_file().then_some(p)
}

/// `path`'s bytes, mapped read-only. Mapped, not read: the naming after a traced run reads
/// libc and its 4 MiB debug file among others (and the replay's start the program's data
/// symbols, `symbols::elf_data`), and `std::fs::read` spent most of its time
/// faulting in and zeroing a fresh buffer and copying into it (BENCHMARKS.md, "Naming a
/// trace's code"); a mapping shares the page cache's pages and touches only what the symbol
/// tables and the executable sections need.
pub(crate) fn map_file(path: &Path) -> std::io::Result<memmap2::Mmap> {
    let file = std::fs::File::open(path)?;
    // SAFETY: the mapping is read-only and lives only while this module parses the file
    // (the symbols and executable bytes are copied out). A file truncated by another process
    // meanwhile could fault the read; the files mapped are a finished program's ELF files
    // and their installed debug files, as a debugger or addr2line's loader maps them.
    unsafe { memmap2::Mmap::map(&file) }
}

impl ElfCode {
    /// Reads `path`; `None` if it is not a readable ELF file.
    pub fn read(path: &Path) -> Option<ElfCode> {
        let bytes = map_file(path).ok()?;
        let file = object::File::parse(&*bytes).ok()?;
        let mut syms = function_symbols(&file);
        // A stripped file's full symbol table and DWARF are in its separate debug file
        // (Debian's -dbg packages), which Cachegrind reads too.
        let debug = debug_file(&file);
        if let Some(d) = &debug {
            if let Ok(b) = map_file(d) {
                if let Ok(f) = object::File::parse(&*b) {
                    syms.extend(function_symbols(&f));
                }
            }
        }
        // One name per start (the full table's first), the longest extent.
        syms.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        syms.dedup_by_key(|s| s.0);
        let text = file
            .sections()
            .filter(|s| s.kind() == SectionKind::Text)
            .filter_map(|s| Some((s.address(), s.data().ok()?.to_vec())))
            .collect();
        let lines_from = match debug {
            Some(d) => Some(d),
            None if file.section_by_name(".debug_line").is_some()
                || file.section_by_name(".gnu_debuglink").is_some() =>
            {
                Some(path.to_path_buf())
            }
            None => None,
        };
        Some(ElfCode {
            position_independent: file.kind() == ObjectKind::Dynamic,
            syms,
            text,
            lines_from,
            lines: std::cell::OnceCell::new(),
        })
    }

    /// The function symbol holding file address `addr`.
    pub fn function_of(&self, addr: u64) -> Option<&str> {
        let i = self.syms.partition_point(|s| s.0 <= addr);
        let s = self.syms.get(i.checked_sub(1)?)?;
        (addr < s.1).then_some(s.2.as_str())
    }

    /// The file addresses of the `insns` instructions of the block at file address `addr`
    /// (with their lengths), decoded from the file's bytes; `None` when the block is not in
    /// an executable section or does not decode into that many instructions.
    pub fn instructions(&self, addr: u64, insns: u32) -> Option<Vec<(u64, u32)>> {
        let (base, bytes) = self
            .text
            .iter()
            .find(|(a, b)| *a <= addr && addr < *a + b.len() as u64)?;
        let code = &bytes[(addr - base) as usize..];
        let mut dec = iced_x86::Decoder::with_ip(64, code, addr, iced_x86::DecoderOptions::NONE);
        let mut out = Vec::with_capacity(insns as usize);
        while out.len() < insns as usize {
            if !dec.can_decode() {
                return None;
            }
            let i = dec.decode();
            if i.is_invalid() {
                return None;
            }
            out.push((i.ip(), i.len() as u32));
        }
        Some(out)
    }

    /// The source line of the instruction at file address `addr`, if the line table has it.
    pub fn line_of(&self, addr: u64) -> Option<SourceLine> {
        let lines = self.lines.get_or_init(|| {
            let from = self.lines_from.as_ref()?;
            addr2line::Loader::new(from).ok()
        });
        let loc = lines.as_ref()?.find_location(addr).ok()??;
        Some((loc.file?.to_string(), loc.line.unwrap_or(0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test binary itself is an x86-64 ELF with symbols and (in test builds) DWARF:
    /// a function's first instruction decodes and has a line in this file.
    #[test]
    #[cfg(target_arch = "x86_64")]
    // Kept out of line: in a release test build the harness would inline it and its symbol,
    // which the test looks up by name, would be gone.
    #[inline(never)]
    fn this_test_binary_decodes_and_has_lines() {
        let exe = std::env::current_exe().unwrap();
        let code = ElfCode::read(&exe).expect("readable ELF");
        let f = this_test_binary_decodes_and_has_lines as *const () as u64;
        // The runtime address less the load bias: find the symbol by name instead.
        let (start, _, _) = code
            .syms
            .iter()
            .find(|s| s.2.contains("this_test_binary_decodes_and_has_lines"))
            .expect("symbol")
            .clone();
        assert_ne!(f, 0);
        let insns = code.instructions(start, 4).expect("decodes");
        assert_eq!(insns.len(), 4);
        assert_eq!(insns[0].0, start);
        for w in insns.windows(2) {
            assert_eq!(w[0].0 + w[0].1 as u64, w[1].0, "contiguous");
        }
        assert_eq!(
            code.function_of(start)
                .map(|n| n.contains("decodes_and_has")),
            Some(true)
        );
        // Test builds carry DWARF (`[profile.test]` inherits `debug = true`).
        let (file, line) = code
            .line_of(start)
            .expect("a line for the function's start");
        assert!(file.ends_with("code_lines.rs"), "{file}");
        assert!(line > 100, "line {line}");
    }
}
