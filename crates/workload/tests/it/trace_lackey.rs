//! End to end: compile a C program with gcc, record it under valgrind lackey, and check that
//! its global arrays are named from the ELF symbol table at the addresses the program itself
//! printed, and that the accesses of its loops fall inside them. Skipped (with a note) when
//! gcc or valgrind is not installed.

use std::path::{Path, PathBuf};
use std::process::Command;
use tracefmt::{AccessKind, Reader, Record};
use workload::trace::record::record;
use workload::trace::symbols::{elf_data, AddrClass, Layout};

const PROGRAM: &str = r#"
#include <stdio.h>
long big_table[4096];                 /* bss */
int small_array[100] = {1, 2, 3};     /* data */
int main(int argc, char **argv) {
    for (int i = 0; i < 4096; i++) big_table[i] = i;
    long s = 0;
    for (int i = 0; i < 100; i++) s += small_array[i];
    FILE *f = fopen(argv[1], "w");
    fprintf(f, "%lx %lx\n", (unsigned long)big_table, (unsigned long)small_array);
    fclose(f);
    printf("sum %ld\n", s);
    return 3;
}
"#;

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok()
}

fn scratch_dir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pmusim-trace-test-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn check(dir: &Path, pie: bool) {
    let src = dir.join("prog.c");
    let exe = dir.join("prog");
    std::fs::write(&src, PROGRAM).unwrap();
    let flag = if pie { "-pie" } else { "-no-pie" };
    let extra: &[&str] = if pie { &["-fPIE"] } else { &["-fno-pie"] };
    let st = Command::new("gcc")
        .args(["-O0", flag])
        .args(extra)
        .arg("-o")
        .arg(&exe)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success(), "gcc failed");
    let addr_file = dir.join("addresses.txt");
    let trace = dir.join("prog.pmt");
    let rec = record(
        exe.to_str().unwrap(),
        &[addr_file.display().to_string()],
        &trace,
    )
    .unwrap();
    assert_eq!(
        rec.status.code(),
        Some(3),
        "the exit status is passed through"
    );

    // What the program saw, under valgrind.
    let printed = std::fs::read_to_string(&addr_file).unwrap();
    let mut it = printed
        .split_whitespace()
        .map(|s| u64::from_str_radix(s, 16).unwrap());
    let (big_at, small_at) = (it.next().unwrap(), it.next().unwrap());

    let header = Reader::new(std::fs::File::open(&trace).unwrap())
        .unwrap()
        .header()
        .clone();
    if pie {
        assert_eq!(header.load_bias, Some(0x108000), "{header:?}");
        assert!(header
            .load_bias_source
            .as_deref()
            .unwrap()
            .contains("confirmed: the entry point"));
    } else {
        assert_eq!(header.load_bias, None);
    }
    let elf = elf_data(&exe, header.load_bias).unwrap();
    assert_eq!(elf.position_independent, pie);
    let big = elf
        .regions
        .iter()
        .find(|r| r.name == "big_table")
        .expect("big_table named");
    let small = elf
        .regions
        .iter()
        .find(|r| r.name == "small_array")
        .expect("small_array named");
    assert_eq!((big.start, big.len), (big_at, 4096 * 8));
    assert_eq!((small.start, small.len), (small_at, 400));

    // The loops' accesses fall in the symbols' ranges: every slot of big_table stored once,
    // every element of small_array loaded once.
    let layout = Layout::for_tracer(&header.tracer, &elf);
    let mut big_stores = vec![0u32; 4096];
    let mut small_loads = vec![0u32; 100];
    let mut stack_refs = 0;
    for item in Reader::new(std::fs::File::open(&trace).unwrap()).unwrap() {
        let (_, r) = item.unwrap();
        if let Record::Access {
            kind, addr, size, ..
        } = r
        {
            if big.contains(addr) && kind == AccessKind::Store {
                assert_eq!(size, 8);
                big_stores[((addr - big.start) / 8) as usize] += 1;
            }
            if small.contains(addr) && kind == AccessKind::Load {
                assert_eq!(size, 4);
                small_loads[((addr - small.start) / 4) as usize] += 1;
            }
            if layout.classify(addr) == AddrClass::Stack {
                stack_refs += 1;
            }
        }
    }
    assert!(
        big_stores.iter().all(|&n| n == 1),
        "big_table stores: {:?}",
        &big_stores[..8]
    );
    assert!(
        small_loads.iter().all(|&n| n == 1),
        "small_array loads: {small_loads:?}"
    );
    // -O0 keeps the loop counters on the stack.
    assert!(stack_refs > 8000, "stack references: {stack_refs}");
    assert_eq!(layout.classify(big.start), AddrClass::Image);
}

#[test]
fn recorded_c_program_has_named_arrays() {
    if !have("gcc") || !have("valgrind") {
        eprintln!("NOTE: skipping: gcc or valgrind is not installed");
        return;
    }
    for pie in [true, false] {
        let dir = scratch_dir(if pie { "pie" } else { "nopie" });
        check(&dir, pie);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn missing_program_is_a_clear_error() {
    if !have("valgrind") {
        eprintln!("NOTE: skipping: valgrind is not installed");
        return;
    }
    let dir = scratch_dir("missing");
    let e = record("/nonexistent/prog", &[], &dir.join("x.pmt")).unwrap_err();
    assert_eq!(e.to_string(), "program not found: /nonexistent/prog");
    std::fs::remove_dir_all(&dir).unwrap();
}
