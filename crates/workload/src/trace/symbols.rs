//! Naming the data of a traced program: its ELF data symbols, a user's range file, and a
//! coarse classifier (stack, heap) for addresses that neither names.
//!
//! A FlashPoint-style report attributes misses to data structures. For a trace the structures
//! are the program's global objects (`STT_OBJECT` symbols with a size, in data, read-only data
//! and bss sections), moved by the load bias when the executable is position independent, plus
//! whatever the user names in a range file (heap arrays, for instance, whose addresses the
//! program printed).

use super::Error;
use object::{
    Object, ObjectKind, ObjectSection, ObjectSegment, ObjectSymbol, SectionKind, SymbolKind,
    SymbolSection,
};
use std::path::{Path, PathBuf};

/// A named address range `[start, start+len)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataRegion {
    pub name: String,
    pub start: u64,
    pub len: u64,
}

impl DataRegion {
    pub fn contains(&self, addr: u64) -> bool {
        addr.wrapping_sub(self.start) < self.len
    }
}

/// What the ELF file of a traced program tells about its data.
#[derive(Clone, Debug, Default)]
pub struct ElfData {
    /// ET_DYN: a position-independent executable, whose symbols move by the load bias.
    pub position_independent: bool,
    /// Entry point as in the file (not moved by the bias).
    pub entry: u64,
    /// Data symbols, already moved by the bias, sorted by start address.
    pub regions: Vec<DataRegion>,
    /// End of the highest loadable segment (moved by the bias): where the program's image ends
    /// and, natively, where the brk heap begins.
    pub image_end: u64,
    /// Start of the lowest loadable segment (moved by the bias).
    pub image_start: u64,
}

/// Reads the data symbols of an ELF executable. `load_bias` is added to every address when the
/// file is position independent (ET_DYN) and ignored otherwise: a fixed-address executable is
/// loaded where its headers say. The full symbol table is used when present, the dynamic one
/// of a stripped executable otherwise.
pub fn elf_data(path: &Path, load_bias: Option<u64>) -> Result<ElfData, Error> {
    let name = path.display().to_string();
    let bytes = super::code_lines::map_file(path).map_err(|e| Error::io(path, e))?;
    let elf_err = |what: String| Error::Elf {
        path: name.clone(),
        what,
    };
    let file = object::File::parse(&*bytes)
        .map_err(|e| elf_err(format!("not a readable ELF file: {e}")))?;
    let position_independent = file.kind() == ObjectKind::Dynamic;
    let bias = if position_independent {
        load_bias.unwrap_or(0)
    } else {
        0
    };
    let mut regions = Vec::new();
    let symbols: Vec<_> = if file.symbols().next().is_some() {
        file.symbols().collect()
    } else {
        file.dynamic_symbols().collect()
    };
    for sym in symbols {
        if sym.kind() != SymbolKind::Data || sym.size() == 0 {
            continue;
        }
        let SymbolSection::Section(index) = sym.section() else {
            continue;
        };
        let Ok(section) = file.section_by_index(index) else {
            continue;
        };
        let is_data = matches!(
            section.kind(),
            SectionKind::Data
                | SectionKind::UninitializedData
                | SectionKind::ReadOnlyData
                | SectionKind::ReadOnlyDataWithRel
                | SectionKind::ReadOnlyString
        );
        if !is_data {
            continue;
        }
        let Ok(sym_name) = sym.name() else { continue };
        regions.push(DataRegion {
            name: sym_name.to_string(),
            start: sym.address().wrapping_add(bias),
            len: sym.size(),
        });
    }
    regions.sort_by(|a, b| (a.start, a.len, &a.name).cmp(&(b.start, b.len, &b.name)));
    // Aliases (two names for one object) keep the first name in sorted order.
    regions.dedup_by(|b, a| a.start == b.start && a.len == b.len);
    let mut image_start = u64::MAX;
    let mut image_end = 0u64;
    for seg in file.segments() {
        image_start = image_start.min(seg.address());
        image_end = image_end.max(seg.address() + seg.size());
    }
    if image_start == u64::MAX {
        image_start = 0;
    }
    Ok(ElfData {
        position_independent,
        entry: file.entry(),
        regions,
        image_end: image_end.wrapping_add(bias),
        image_start: image_start.wrapping_add(bias),
    })
}

fn parse_number(s: &str) -> Option<u64> {
    let s = s.replace('_', "");
    match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    }
}

/// Parses a range file: one region per line, `start length name` (numbers in decimal or
/// `0x` hex, the name is the rest of the line), blank lines and `#` comments allowed.
/// `source` names the file in errors (`ranges.txt:7: length "0xZZ" is not a number`).
pub fn parse_ranges(text: &str, source: &str) -> Result<Vec<DataRegion>, Error> {
    let mut out = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i as u64 + 1;
        let bad = |what: String| Error::Parse {
            source: source.to_string(),
            line: line_no,
            what,
        };
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        // Two whitespace-separated numbers, then the name (which may hold spaces).
        let split = |s: &'_ str| -> (String, String) {
            match s.find(char::is_whitespace) {
                Some(i) => (s[..i].to_string(), s[i..].trim_start().to_string()),
                None => (s.to_string(), String::new()),
            }
        };
        let (start_s, rest) = split(line);
        let (len_s, name) = split(&rest);
        if len_s.is_empty() {
            return Err(bad(
                "expected `start length name`, found only one field".into()
            ));
        }
        let name = name.trim();
        if name.is_empty() {
            return Err(bad(
                "expected `start length name`, the name is missing".into()
            ));
        }
        let start = parse_number(&start_s)
            .ok_or_else(|| bad(format!("start {start_s:?} is not a number")))?;
        let len =
            parse_number(&len_s).ok_or_else(|| bad(format!("length {len_s:?} is not a number")))?;
        if len == 0 {
            return Err(bad(format!("region {name:?} has length 0")));
        }
        if start.checked_add(len).is_none() {
            return Err(bad(format!(
                "region {name:?} runs past the end of the address space"
            )));
        }
        out.push(DataRegion {
            name: name.to_string(),
            start,
            len,
        });
    }
    Ok(out)
}

/// Reads a range file (`--bins FILE`); see [`parse_ranges`].
pub fn read_ranges(path: &Path) -> Result<Vec<DataRegion>, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string());
    parse_ranges(&text, &name)
}

/// Coarse class of an address that no symbol or range names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddrClass {
    /// Inside the executable's loaded image (data without a symbol, e.g. static locals of
    /// stripped code, the GOT).
    Image,
    Stack,
    /// Above the image and below the stack: the brk heap and mmap areas. Under lackey this
    /// also holds the shared libraries and the dynamic loader, which lackey cannot tell apart
    /// (it prints no mappings).
    Heap,
    /// Below the image.
    Other,
}

/// Where the stack is, by the tracer that produced the addresses.
///
/// * valgrind 3.19 on amd64 puts the client's main stack just below `0x20_0000_0000`
///   (observed: locals at `0x1f_ff00_066c`, `0x1f_fefff_fd48`); the 256 MiB below that are
///   taken as stack. The brk heap starts after the dynamic loader (observed `0x403_52a0` for a
///   64-byte malloc, `0x4a2_a010` for a 1 MiB one, among the libraries).
/// * natively (QEMU user mode, which keeps the host layout) the stack is at the top of the
///   user half, within 16 GiB of `0x7fff_ffff_ffff` under ASLR; mmap areas (large mallocs,
///   libraries) start below it, e.g. `0x7f0f_23af_e010`. Addresses from `0x7ff0_0000_0000` up
///   are taken as stack; a trace whose header carries the mappings should use those instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub image_start: u64,
    pub image_end: u64,
    pub stack_low: u64,
    pub stack_high: u64,
}

/// Lowest address taken as stack under valgrind (amd64).
pub const VALGRIND_STACK_LOW: u64 = 0x1f_f000_0000;
/// One past the highest address of the valgrind (amd64) client stack.
pub const VALGRIND_STACK_HIGH: u64 = 0x20_0000_0000;
/// Lowest address taken as stack natively (x86-64 user space, 47-bit).
pub const NATIVE_STACK_LOW: u64 = 0x7ff0_0000_0000;
/// One past the top of x86-64 user space.
pub const NATIVE_STACK_HIGH: u64 = 0x8000_0000_0000;

impl Layout {
    /// The layout for a trace of `tracer` ("lackey" or another, taken as native).
    pub fn for_tracer(tracer: &str, elf: &ElfData) -> Layout {
        let (stack_low, stack_high) = if tracer == "lackey" {
            (VALGRIND_STACK_LOW, VALGRIND_STACK_HIGH)
        } else {
            (NATIVE_STACK_LOW, NATIVE_STACK_HIGH)
        };
        Layout {
            image_start: elf.image_start,
            image_end: elf.image_end,
            stack_low,
            stack_high,
        }
    }

    pub fn classify(&self, addr: u64) -> AddrClass {
        if addr >= self.stack_low && addr < self.stack_high {
            AddrClass::Stack
        } else if addr >= self.image_start && addr < self.image_end {
            AddrClass::Image
        } else if addr >= self.image_end && addr < self.stack_low {
            AddrClass::Heap
        } else {
            AddrClass::Other
        }
    }
}

/// The environment variable that points a replay at the traced program's ELF when it is not
/// where the trace says (another machine, a moved build).
pub const PROGRAM_ENV: &str = "PMUSIM_TRACE_PROGRAM";

/// Finds the ELF of the traced program for its symbols: `$PMUSIM_TRACE_PROGRAM` when set, else
/// the absolute path the trace records (`program_path`), else the program as it was typed
/// (relative to the current directory). A candidate whose content hash differs from the
/// trace's `program_hash` is not the program that ran: its symbols would name the wrong data,
/// so it is skipped. Returns the ELF to use, if any, and a warning with the fix when none of
/// the candidates is the traced program.
pub fn locate_program(h: &tracefmt::Header) -> (Option<PathBuf>, Option<String>) {
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(p) = std::env::var_os(PROGRAM_ENV) {
        candidates.push(PathBuf::from(p));
    } else {
        candidates.extend(h.program_path.iter().map(PathBuf::from));
        if !h.program.is_empty() {
            candidates.push(PathBuf::from(&h.program));
        }
    }
    if candidates.is_empty() {
        return (None, None);
    }
    let mut differs = Vec::new();
    for c in &candidates {
        if !c.is_file() {
            continue;
        }
        match (&h.program_hash, tracefmt::program_hash(c)) {
            (Some(want), Ok(got)) if *want != got => differs.push(format!(
                "{} is not the program that was traced (content {got}, the trace has {want})",
                c.display()
            )),
            _ => return (Some(c.clone()), None),
        }
    }
    let traced = h.program_path.as_deref().unwrap_or(&h.program);
    let what = if differs.is_empty() {
        format!(
            "the traced program {traced} is not found{}",
            match std::env::var_os(PROGRAM_ENV) {
                Some(p) => format!(" ({PROGRAM_ENV}={} does not exist)", p.to_string_lossy()),
                None => String::new(),
            }
        )
    } else {
        differs.join("; ")
    };
    (
        None,
        Some(format!(
            "{what}: data is not named by the program's symbols. Fix: replay where {traced} \
             exists, or set {PROGRAM_ENV}=/path/to/the/same/binary"
        )),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A program file that is empty, not ELF, or missing is refused naming the file, as when
    /// it was read rather than mapped (`code_lines::map_file`), and the symbols of a real ELF
    /// file (this test's own executable) are read from the mapping.
    #[test]
    fn elf_data_refuses_what_is_not_elf_and_reads_what_is() {
        let dir = std::env::temp_dir().join(format!("pmusim-elf-data-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for (name, bytes) in [("empty", &b""[..]), ("text", &b"#!/bin/sh\necho hi\n"[..])] {
            let p = dir.join(name);
            std::fs::write(&p, bytes).unwrap();
            let Err(e) = elf_data(&p, None) else {
                panic!("{name} accepted")
            };
            let e = e.to_string();
            assert!(
                e.starts_with(&format!("{}: not a readable ELF file", p.display())),
                "{e}"
            );
        }
        let missing = dir.join("missing");
        let Err(e) = elf_data(&missing, None) else {
            panic!("a missing file accepted")
        };
        let e = e.to_string();
        assert!(e.contains(&missing.display().to_string()), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
        let exe = std::env::current_exe().unwrap();
        let d = elf_data(&exe, Some(0)).unwrap();
        assert!(
            d.image_end > d.image_start,
            "{:x} {:x}",
            d.image_start,
            d.image_end
        );
    }

    #[test]
    fn range_file_parses_and_reports_line_numbers() {
        let text = "# regions\n\n0x1000 0x100 grid\n4096  16   my table # trailing comment\n";
        let r = parse_ranges(text, "ranges.txt").unwrap();
        assert_eq!(
            r,
            vec![
                DataRegion {
                    name: "grid".into(),
                    start: 0x1000,
                    len: 0x100
                },
                DataRegion {
                    name: "my table".into(),
                    start: 4096,
                    len: 16
                },
            ]
        );
        assert!(r[0].contains(0x10ff) && !r[0].contains(0x1100) && !r[0].contains(0xfff));
        for (text, msg) in [
            (
                "0x10 0x10 a\n\n\n\n\n\n0x10 0xZZ b\n",
                "ranges.txt:7: length \"0xZZ\" is not a number",
            ),
            ("zz 10 a\n", "ranges.txt:1: start \"zz\" is not a number"),
            (
                "10\n",
                "ranges.txt:1: expected `start length name`, found only one field",
            ),
            (
                "10 20\n",
                "ranges.txt:1: expected `start length name`, the name is missing",
            ),
            ("10 0 a\n", "ranges.txt:1: region \"a\" has length 0"),
            (
                "0xffffffffffffffff 2 a\n",
                "ranges.txt:1: region \"a\" runs past the end of the address space",
            ),
        ] {
            assert_eq!(
                parse_ranges(text, "ranges.txt").unwrap_err().to_string(),
                msg
            );
        }
    }

    #[test]
    fn classify_valgrind_layout() {
        let elf = ElfData {
            image_start: 0x108000,
            image_end: 0x10e000,
            ..ElfData::default()
        };
        let l = Layout::for_tracer("lackey", &elf);
        assert_eq!(l.classify(0x1f_ff00_066c), AddrClass::Stack);
        assert_eq!(l.classify(0x403_52a0), AddrClass::Heap);
        assert_eq!(l.classify(0x10d060), AddrClass::Image);
        assert_eq!(l.classify(0x1000), AddrClass::Other);
        let n = Layout::for_tracer("qemu", &elf);
        assert_eq!(n.classify(0x7ffc_2fed_c28c), AddrClass::Stack);
        assert_eq!(n.classify(0x7f0f_23af_e010), AddrClass::Heap);
    }
}
