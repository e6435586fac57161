//! End-to-end: compile small C programs with gcc, record them under qemu-x86_64 with the plugin
//! (through the runner), and check the trace against what the programs are known to do.
//! Skipped, with the reason printed, only when qemu-x86_64 is not installed.

use qemu_tracer::runner::{self, record_with_qemu, Error};
use qemu_tracer::stats;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use tracefmt::{AccessKind, Record};

const SYS_FUTEX: u64 = 202;
const SYS_CLONE: u64 = 56;
const SYS_CLONE3: u64 = 435;

fn qemu_or_skip(test: &str) -> bool {
    if runner::find_qemu().is_ok() {
        return true;
    }
    println!("SKIPPED {test}: qemu-x86_64 not found (apt-get install qemu-user)");
    false
}

fn scratch(test: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("qemu-tracer-{test}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// Builds the plugin from the current source (`cargo build -p qemu-tracer --release`, quick
/// when up to date) and points the runner at it: `cargo test` builds the library but does not
/// refresh `target/*/libqemu_tracer.so`, so a stale plugin could be tested otherwise.
fn plugin() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let ok = Command::new(cargo)
            .args(["build", "-p", "qemu-tracer", "--release"])
            .status()
            .expect("run cargo")
            .success();
        assert!(ok, "building the plugin failed");
        let so = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../target/release")
            .join(runner::PLUGIN_FILE);
        assert!(so.is_file(), "{} after the build", so.display());
        std::env::set_var("PMUSIM_QEMU_PLUGIN", so);
    });
}

fn gcc(src: &str, out: &Path, extra: &[&str]) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/c")
        .join(src);
    let st = Command::new("gcc")
        .arg("-O1")
        .arg("-o")
        .arg(out)
        .arg(&src)
        .args(extra)
        .status()
        .expect("gcc not found: the integration tests compile C programs");
    assert!(st.success(), "gcc failed on {}", src.display());
}

fn range(file: &Path) -> (u64, u64) {
    let text = std::fs::read_to_string(file).unwrap();
    let mut f = text
        .split_whitespace()
        .map(|x| u64::from_str_radix(x, 16).unwrap());
    (f.next().unwrap(), f.next().unwrap())
}

#[test]
fn single_thread_stores_to_a_global_array() {
    if !qemu_or_skip("single_thread_stores_to_a_global_array") {
        return;
    }
    plugin();
    let dir = scratch("stores");
    let exe = dir.join("stores");
    gcc("stores.c", &exe, &[]);
    let (out, addrs) = (dir.join("stores.pmt"), dir.join("stores.addr"));
    let s = record_with_qemu(
        exe.to_str().unwrap(),
        &[addrs.to_str().unwrap().into()],
        &out,
    )
    .expect("record");
    assert_eq!(
        s.exit_code, 3,
        "the program's exit status is passed through"
    );
    assert!(s.program_failed());
    let (lo, hi) = range(&addrs);
    let (mut stores, mut loads, mut tids) = (0u64, 0u64, BTreeMap::new());
    let (header, _) = stats::visit(&out, |tid, r| {
        *tids.entry(tid).or_insert(0u64) += 1;
        if let Record::Access {
            kind, addr, size, ..
        } = *r
        {
            if addr >= lo && addr < hi {
                assert_eq!(size, 8, "8-byte stores to the array");
                match kind {
                    AccessKind::Store => stores += 1,
                    _ => loads += 1,
                }
            }
        }
    })
    .expect("read trace");
    // 25 passes over 4096 elements; QEMU reports them exactly, allow 0.5%.
    let want = 4096 * 25;
    assert!(
        stores.abs_diff(want) <= want / 200,
        "stores to the array: {stores}, want {want}"
    );
    assert_eq!(loads, 0, "the program never reads the array");
    assert_eq!(tids.len(), 1);
    assert_eq!(header.tracer, "qemu");
    assert!(
        header.program.ends_with("stores"),
        "program {:?}",
        header.program
    );
    assert_eq!(header.args, [addrs.to_str().unwrap()]);
    let bias = header.load_bias.expect("load bias of a PIE");
    assert!(lo > bias && header.maps.iter().any(|m| m.start <= lo && lo < m.end));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn four_threads_false_sharing() {
    if !qemu_or_skip("four_threads_false_sharing") {
        return;
    }
    plugin();
    let dir = scratch("fs");
    let exe = dir.join("fs");
    gcc("false_sharing.c", &exe, &["-pthread"]);
    let (out, addrs) = (dir.join("fs.pmt"), dir.join("fs.addr"));
    let s = record_with_qemu(
        exe.to_str().unwrap(),
        &[addrs.to_str().unwrap().into()],
        &out,
    )
    .expect("record");
    assert_eq!(s.exit_code, 0, "the program checks its own total");
    let (lo, _) = range(&addrs);
    let st = stats::stats(&out).expect("stats");
    assert_eq!(
        st.threads.len(),
        5,
        "main and 4 workers: {:?}",
        st.threads.keys()
    );
    let main = *st
        .threads
        .iter()
        .find(|(_, t)| t.parent == Some(0))
        .expect("main thread")
        .0;
    // Per thread: accesses to each counter, seq numbers in order, sync calls.
    let mut counter_of: BTreeMap<u32, BTreeMap<u64, (u64, u64)>> = BTreeMap::new();
    let mut last_seq: BTreeMap<u32, u64> = BTreeMap::new();
    let mut all_seqs = Vec::new();
    let (mut futex, mut clone_ret) = (0u64, Vec::new());
    stats::visit(&out, |tid, r| {
        if let Some(seq) = r.seq() {
            let last = last_seq.entry(tid).or_insert(0);
            assert!(seq > *last, "thread {tid}: seq {seq} after {last}");
            *last = seq;
            all_seqs.push(seq);
        }
        match *r {
            Record::Access { kind, addr, .. } if (lo..lo + 32).contains(&addr) => {
                let e = counter_of
                    .entry(tid)
                    .or_default()
                    .entry((addr - lo) / 8)
                    .or_default();
                if kind != AccessKind::Store {
                    e.0 += 1;
                }
                if kind != AccessKind::Load {
                    e.1 += 1;
                }
            }
            Record::Sync { nr: SYS_FUTEX, .. } => futex += 1,
            // QEMU 7.2 answers clone3 with ENOSYS; glibc then falls back to clone.
            Record::Sync {
                nr: SYS_CLONE | SYS_CLONE3,
                ret,
                phase,
                ..
            } if phase == tracefmt::SyncPhase::Return && ret > 0 => {
                assert_eq!(tid, main);
                clone_ret.push(ret as u32);
            }
            _ => {}
        }
    })
    .unwrap();
    all_seqs.sort_unstable();
    let n = all_seqs.len();
    all_seqs.dedup();
    assert_eq!(all_seqs.len(), n, "sequence numbers are unique");
    assert!(
        futex >= 2,
        "futex waits/wakes of the barrier and joins: {futex}"
    );
    clone_ret.sort_unstable();
    let mut workers: Vec<u32> = st.threads.keys().copied().filter(|&t| t != main).collect();
    workers.sort_unstable();
    assert_eq!(clone_ret, workers, "clone returns name the worker threads");
    let mut seen = Vec::new();
    for w in &workers {
        let t = &st.threads[w];
        assert_eq!(t.parent, Some(u64::from(main)));
        assert!(t.exited, "thread {w} has an exit record");
        let c = &counter_of[w];
        assert_eq!(c.len(), 1, "thread {w} touches only its own counter: {c:?}");
        let (&idx, &(loads, stores)) = c.iter().next().unwrap();
        // 100000 increments (load+store) plus the read into the total.
        assert!(
            (100_000..=100_002).contains(&loads),
            "thread {w}: {loads} loads"
        );
        assert_eq!(stores, 100_000, "thread {w}");
        seen.push(idx);
    }
    seen.sort_unstable();
    assert_eq!(seen, [0, 1, 2, 3]);
    // Guest stacks are named in the exit-time header; QEMU's own stack is renamed.
    let names: Vec<&str> = st.header.maps.iter().map(|m| m.name.as_str()).collect();
    assert!(
        names.contains(&"[stack]") && names.contains(&"[qemu host stack]"),
        "{names:?}"
    );
    for w in &workers {
        assert!(
            names.contains(&format!("[stack:{w}]").as_str()),
            "{w}: {names:?}"
        );
    }
    assert_eq!(st.header.extra["maps_taken_at"], "exit");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn runner_rejects_what_qemu_x86_64_cannot_run() {
    let dir = scratch("runner");
    let script = dir.join("script.sh");
    std::fs::write(&script, "#!/bin/sh\ntrue\n").unwrap();
    let out = dir.join("x.pmt");
    match runner::check_program(script.to_str().unwrap()) {
        Err(e @ Error::NotX86_64 { .. }) => assert!(e.to_string().contains("script")),
        r => panic!("{r:?}"),
    }
    let arm = dir.join("arm.elf");
    let mut elf = b"\x7fELF\x02\x01\x01".to_vec();
    elf.resize(18, 0);
    elf.extend_from_slice(&183u16.to_le_bytes()); // EM_AARCH64
    std::fs::write(&arm, &elf).unwrap();
    match runner::check_program(arm.to_str().unwrap()) {
        Err(e @ Error::NotX86_64 { .. }) => assert!(e.to_string().contains("183")),
        r => panic!("{r:?}"),
    }
    assert!(matches!(
        record_with_qemu("no-such-program-pmusim", &[], &out),
        Err(Error::ProgramMissing(_) | Error::QemuMissing | Error::PluginMissing(_))
    ));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn execve_ends_the_trace_complete() {
    if !qemu_or_skip("execve_ends_the_trace_complete") {
        return;
    }
    plugin();
    let dir = scratch("exec");
    let exe = dir.join("exec");
    gcc("exec.c", &exe, &[]);
    let out = dir.join("exec.pmt");
    let s = record_with_qemu(exe.to_str().unwrap(), &[], &out).expect("record");
    assert_eq!(s.exit_code, 0, "/bin/true ran");
    let st = stats::stats(&out).expect("a complete trace");
    assert_eq!(st.header.extra["ended_by"], "execve");
    let t = st.threads.values().next().unwrap();
    assert!(t.stores >= 1000 && t.exited, "{t:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_crashing_program_leaves_a_valid_trace() {
    if !qemu_or_skip("a_crashing_program_leaves_a_valid_trace") {
        return;
    }
    plugin();
    let dir = scratch("crash");
    let exe = dir.join("crash");
    gcc("crash.c", &exe, &[]);
    let out = dir.join("crash.pmt");
    let s = record_with_qemu(exe.to_str().unwrap(), &[], &out).expect("record");
    assert_eq!(s.exit_code, 128 + 6, "died of SIGABRT");
    assert!(s.ended_by.starts_with("incomplete"), "{}", s.ended_by);
    let st = stats::stats(&out).expect("a valid trace");
    let t = st.threads.values().next().unwrap();
    // All but the last chunk's worth (about 350 k stores) of the 3 M stores.
    assert!(t.stores > 2_000_000 && t.stores <= 3_000_000, "{t:?}");
    // The program died before the writer finished: no totals in the header, so the counts
    // `pmusim trace record` prints come from decoding the file.
    let header = tracefmt::Reader::new(std::fs::File::open(&out).unwrap())
        .unwrap()
        .header()
        .clone();
    assert_eq!(header.totals(), None);
    let decoded = workload::trace::count_references(&out).unwrap();
    assert_eq!(decoded.0, 1);
    assert_eq!(workload::trace::recorded_totals(&out).unwrap(), decoded);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn sequential_threads_and_threads_stopped_by_exit_group() {
    if !qemu_or_skip("sequential_threads_and_threads_stopped_by_exit_group") {
        return;
    }
    plugin();
    let dir = scratch("threads");
    let exe = dir.join("threads");
    gcc("threads.c", &exe, &["-pthread"]);
    let out = dir.join("threads.pmt");
    let s = record_with_qemu(exe.to_str().unwrap(), &[], &out).expect("record");
    assert_eq!(s.exit_code, 0);
    assert_eq!(s.ended_by, "exit");
    let st = stats::stats(&out).expect("stats");
    assert_eq!(st.threads.len(), 24, "main + 20 + 3");
    let main = *st
        .threads
        .iter()
        .find(|(_, t)| t.parent == Some(0))
        .unwrap()
        .0;
    let mut spinners = 0;
    for (tid, t) in &st.threads {
        assert!(t.exited, "thread {tid} has an exit record");
        if *tid != main {
            assert_eq!(t.parent, Some(u64::from(main)), "thread {tid}");
            // Short-lived: 1000 load+store of sink[i]; spinners: loads of `flag`.
            assert!(t.loads >= 1, "thread {tid}: {t:?}");
            spinners += usize::from(t.stores < 100);
        }
    }
    assert_eq!(spinners, 3, "three spinners, flushed at exit");
    // The writer's totals in the exit-time header (what `pmusim trace record` prints without
    // decoding the file again) equal the decoded file's threads and data references.
    let header = tracefmt::Reader::new(std::fs::File::open(&out).unwrap())
        .unwrap()
        .header()
        .clone();
    let decoded = workload::trace::count_references(&out).unwrap();
    assert_eq!(decoded.0, 24);
    assert_eq!(header.totals(), Some(decoded));
    assert_eq!(workload::trace::recorded_totals(&out).unwrap(), decoded);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_forked_child_is_not_traced() {
    if !qemu_or_skip("a_forked_child_is_not_traced") {
        return;
    }
    plugin();
    let dir = scratch("fork");
    let exe = dir.join("fork");
    gcc("fork.c", &exe, &[]);
    let out = dir.join("fork.pmt");
    let s = record_with_qemu(exe.to_str().unwrap(), &[], &out).expect("record");
    assert_eq!(s.exit_code, 0, "the child ran and exited with 5");
    assert_eq!(s.ended_by, "exit");
    let st = stats::stats(&out).expect("stats");
    assert_eq!(
        st.threads.len(),
        1,
        "the parent alone: {:?}",
        st.threads.keys()
    );
    let mut child = None;
    stats::visit(&out, |_, r| {
        if let Record::Sync {
            nr: SYS_CLONE | 57,
            ret,
            phase: tracefmt::SyncPhase::Return,
            ..
        } = *r
        {
            child = Some(ret);
        }
    })
    .unwrap();
    assert!(
        child.is_some_and(|pid| pid > 0),
        "fork's return value: {child:?}"
    );
    assert!(
        st.threads.values().next().unwrap().stores < 100_000,
        "no child stores"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 19, item 6: only woken futex waits are paired, timed-out and EAGAIN ones are not
/// (they were paired with any wake in their interval: here the helper thread's wakes on another
/// address, which woke nobody), and the report's count is the true one.
#[test]
fn only_woken_futex_waits_are_paired_in_the_replay() {
    if !qemu_or_skip("only_woken_futex_waits_are_paired_in_the_replay") {
        return;
    }
    plugin();
    let dir = scratch("futex");
    let exe = dir.join("futex_waits");
    gcc("futex_waits.c", &exe, &["-pthread"]);
    let (out, addrs) = (dir.join("fw.pmt"), dir.join("fw.addr"));
    let s = record_with_qemu(
        exe.to_str().unwrap(),
        &[addrs.to_str().unwrap().into()],
        &out,
    )
    .expect("record");
    assert_eq!(s.exit_code, 0, "every wait ended as the program expects");
    let text = std::fs::read_to_string(&addrs).unwrap();
    let a: Vec<u64> = text
        .split_whitespace()
        .map(|x| u64::from_str_radix(x, 16).unwrap())
        .collect();
    let (word, cond) = (a[0], a[1]..a[2]);
    // Each thread's futex waits: (entry address, return seq, return value).
    let mut open: BTreeMap<u32, u64> = BTreeMap::new();
    let mut waits: Vec<(u64, u64, i64)> = Vec::new();
    let mut wake_addr: BTreeMap<u64, u64> = BTreeMap::new();
    stats::visit(&out, |tid, r| {
        if let Record::Sync {
            nr: SYS_FUTEX,
            seq,
            args,
            ret,
            phase,
            ..
        } = *r
        {
            let op = args[1] & 0x7f;
            match phase {
                tracefmt::SyncPhase::Entry if matches!(op, 0 | 9) => {
                    open.insert(tid, args[0]);
                }
                tracefmt::SyncPhase::Entry => {
                    open.remove(&tid);
                    wake_addr.insert(seq, args[0]);
                }
                tracefmt::SyncPhase::Return => {
                    if let Some(addr) = open.remove(&tid) {
                        waits.push((addr, seq, ret));
                    }
                }
            }
        }
    })
    .unwrap();
    let on_word: Vec<i64> = waits.iter().filter(|w| w.0 == word).map(|w| w.2).collect();
    assert_eq!(on_word, [-110, -110, -11, -11], "the raw waits on `word`");
    let on_cond: Vec<&(u64, u64, i64)> = waits.iter().filter(|w| cond.contains(&w.0)).collect();
    assert!(
        on_cond.iter().any(|w| w.2 == -110) && on_cond.iter().any(|w| w.2 == 0),
        "a timed-out and a woken condition wait: {on_cond:?}"
    );
    let r =
        workload::trace::replay::open(&out, None, workload::trace::replay::ThreadPlacement::Pack)
            .expect("replay opens the trace");
    let p = r.pairing();
    for &(addr, seq, ret) in &waits {
        match (ret, p.waits_for.get(&seq)) {
            (0, _) => {}
            (_, None) => {}
            (_, Some(w)) => panic!("the wait on {addr:#x} returned {ret} but waits for {w}"),
        }
        if ret == 0 && cond.contains(&addr) {
            let w = p
                .waits_for
                .get(&seq)
                .expect("the woken condition wait is paired");
            assert!(
                wake_addr.get(w).is_some_and(|a| cond.contains(a)),
                "paired with a wake on the condition variable, not {:?}",
                wake_addr.get(w)
            );
        }
    }
    let count = |ret: i64| waits.iter().filter(|w| w.2 == ret).count() as u64;
    assert_eq!(p.futex_waits, waits.len() as u64);
    assert_eq!(
        (p.timed_out, p.eagain, p.woken),
        (count(-110), count(-11), count(0))
    );
    assert!(p.timed_out >= 3 && p.eagain >= 2, "{p:?}");
    assert_eq!(
        p.paired,
        p.waits_for
            .keys()
            .filter(|s| waits.iter().any(|w| w.1 == **s))
            .count() as u64,
        "the report counts the pairings made"
    );
    assert!(p.paired <= p.woken);
    let _ = std::fs::remove_dir_all(&dir);
}

fn replay_open(trace: &Path) -> workload::trace::replay::TraceReplay {
    workload::trace::replay::open(trace, None, workload::trace::replay::ThreadPlacement::Pack)
        .expect("replay opens the trace")
}

/// Issue 19, item 5: a program killed by a signal kept no data names (the header with the
/// load bias and mappings was written at install time, before the program was loaded, and
/// replaced only at exit or execve). Now the names are in the file from the first block on.
#[test]
fn names_survive_a_fatal_signal() {
    if !qemu_or_skip("names_survive_a_fatal_signal") {
        return;
    }
    plugin();
    let dir = scratch("dies");
    let exe = dir.join("dies");
    gcc("dies.c", &exe, &[]);
    for (how, signal) in [("abort", 6), ("segv", 11), ("pipe", 13)] {
        let (out, addrs) = (
            dir.join(format!("{how}.pmt")),
            dir.join(format!("{how}.addr")),
        );
        let s = record_with_qemu(
            exe.to_str().unwrap(),
            &[addrs.to_str().unwrap().into(), how.into()],
            &out,
        )
        .expect("record");
        assert_eq!(s.exit_code, 128 + signal, "{how}: died of signal {signal}");
        assert!(
            s.ended_by.starts_with("incomplete"),
            "{how}: {}",
            s.ended_by
        );
        let (lo, hi) = range(&addrs);
        let r = replay_open(&out);
        let h = &r.header;
        assert!(h.load_bias.is_some_and(|b| b > 0), "{how}: {h:?}");
        let path = std::fs::canonicalize(&exe).unwrap().display().to_string();
        assert!(h.maps.iter().any(|m| m.name == path), "{how}: {:?}", h.maps);
        assert!(
            h.maps
                .iter()
                .any(|m| m.name == "dies (bss)" && m.start <= lo + 4096 && hi <= m.end),
            "{how}: the array's mapping is in the header: {:?}",
            h.maps
        );
        let array = r
            .regions()
            .iter()
            .find(|g| g.name == "array")
            .unwrap_or_else(|| panic!("{how}: `array` named"));
        assert_eq!(
            (array.start, array.start + array.len),
            (lo, hi),
            "{how}: `array` where the program put it"
        );
        assert!(r.warnings.is_empty(), "{how}: {:?}", r.warnings);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 19, item 5: replaying from another directory silently lost the symbols (the header
/// kept `./prog` as typed); a different program at that path would name the wrong data.
#[test]
fn replay_finds_the_traced_program_and_checks_it_is_the_same() {
    if !qemu_or_skip("replay_finds_the_traced_program_and_checks_it_is_the_same") {
        return;
    }
    plugin();
    let dir = scratch("where");
    let exe = dir.join("stores");
    gcc("stores.c", &exe, &[]);
    let out = dir.join("stores.pmt");
    // Recorded as `./stores` from its own directory.
    let so = std::env::var("PMUSIM_QEMU_PLUGIN").unwrap();
    let st = Command::new("qemu-x86_64")
        .arg("-plugin")
        .arg(format!("{so},out={}", out.display()))
        .args(["./stores", "stores.addr"])
        .current_dir(&dir)
        .status()
        .unwrap();
    assert_eq!(st.code(), Some(3));
    let (lo, _) = range(&dir.join("stores.addr"));
    // Replayed from this test's directory, where `./stores` does not exist.
    assert!(!Path::new("./stores").exists());
    let r = replay_open(&out);
    assert_eq!(r.header.program, "./stores");
    let array = r.regions().iter().find(|g| g.name == "array");
    assert_eq!(
        array.map(|a| a.start),
        Some(lo),
        "found by its absolute path"
    );
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    // Another program at that path: not used, and the user is told.
    gcc("heap.c", &exe, &[]);
    let r = replay_open(&out);
    assert!(r.regions().iter().all(|g| g.name != "array"));
    assert_eq!(r.warnings.len(), 1);
    let w = &r.warnings[0];
    assert!(
        w.contains("is not the program that was traced") && w.contains("PMUSIM_TRACE_PROGRAM"),
        "{w}"
    );
    // No program at all.
    std::fs::remove_file(&exe).unwrap();
    let r = replay_open(&out);
    assert!(
        r.warnings[0].contains("is not found") && r.warnings[0].contains("PMUSIM_TRACE_PROGRAM"),
        "{:?}",
        r.warnings
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 19, item 5: under QEMU the brk heap and mmap'd memory were all unnamed
/// (`(anonymous)` in reports), and QEMU's own heap was called `[heap]`.
#[test]
fn the_heap_and_anonymous_mappings_are_named_by_origin_and_size() {
    if !qemu_or_skip("the_heap_and_anonymous_mappings_are_named_by_origin_and_size") {
        return;
    }
    plugin();
    let dir = scratch("heap");
    let exe = dir.join("heap");
    gcc("heap.c", &exe, &[]);
    let (out, addrs) = (dir.join("heap.pmt"), dir.join("heap.addr"));
    let s = record_with_qemu(
        exe.to_str().unwrap(),
        &[addrs.to_str().unwrap().into()],
        &out,
    )
    .expect("record");
    assert_eq!(s.exit_code, 0);
    let text = std::fs::read_to_string(&addrs).unwrap();
    let a: Vec<u64> = text
        .split_whitespace()
        .map(|x| u64::from_str_radix(x, 16).unwrap())
        .collect();
    let st = stats::stats(&out).unwrap();
    let name_of = |addr: u64| {
        st.header
            .maps
            .iter()
            .find(|m| m.start <= addr && addr < m.end)
            .map(|m| m.name.clone())
            .unwrap_or_default()
    };
    assert_eq!(name_of(a[0]), "[heap]", "a small malloc is in the brk heap");
    assert_eq!(
        name_of(a[2] + 50_000),
        "heap (bss)",
        "the bss past the file's pages"
    );
    assert!(
        name_of(a[1]).starts_with("[anon ") && name_of(a[1]).ends_with(" MiB]"),
        "the 3 MiB mmap: {}",
        name_of(a[1])
    );
    let names: Vec<&str> = st.header.maps.iter().map(|m| m.name.as_str()).collect();
    assert!(names.contains(&"[qemu host heap]"), "{names:?}");
    assert!(!names.contains(&""), "every mapping is named: {names:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Records `code_sweep N` and replays it on one processor of the default machine: the
/// trace's code records in the `sweep` function, and the L1 I-cache misses of the replay.
fn sweep_run(dir: &Path, exe: &Path, n: u64) -> (u64, u64, u64, u64) {
    let (out, addrs) = (dir.join(format!("cs{n}.pmt")), dir.join("cs.addr"));
    let s = record_with_qemu(
        exe.to_str().unwrap(),
        &[n.to_string(), addrs.to_str().unwrap().into()],
        &out,
    )
    .expect("record");
    assert_eq!(s.exit_code, 0);
    let (lo, hi) = range(&addrs);
    let (mut sweep_bytes, mut code_insns, mut insns) = (0u64, 0u64, 0u64);
    let (header, _) = stats::visit(&out, |_, r| {
        insns += r.instructions();
        if let Record::Code { addr, bytes, insns } = *r {
            code_insns += u64::from(insns);
            let (a, b) = (addr.max(lo), (addr + u64::from(bytes)).min(hi));
            sweep_bytes += b.saturating_sub(a);
        }
    })
    .expect("read trace");
    assert!(header.code_records, "the header announces the code records");
    let preset = machine::Preset::builtin("numachine")
        .unwrap()
        .with_procs(1)
        .unwrap();
    let mut m = machine::Machine::new(preset, machine::Options::default()).unwrap();
    let r = workload::trace::replay::install(replay_open(&out), &mut m).unwrap();
    m.run(None).expect("replay");
    assert!(workload::Workload::verify(&*r).verified);
    let misses = m.state().cores[0].cnt.l1i_misses;
    (sweep_bytes, code_insns, insns, misses)
}

/// Issue 19, item 3: instruction fetch was not simulated for traces (the L1 I-cache saw only
/// a synthetic 2 KiB code region: 32 misses on a python3 run where Cachegrind counts
/// 258,474). Now every executed block is recorded and fetched through the L1 I-cache.
#[test]
fn executed_code_is_recorded_and_fetched_through_the_icache() {
    if !qemu_or_skip("executed_code_is_recorded_and_fetched_through_the_icache") {
        return;
    }
    plugin();
    let dir = scratch("code");
    let exe = dir.join("code_sweep");
    gcc("code_sweep.c", &exe, &[]);
    let (bytes5, code5, insns5, miss5) = sweep_run(&dir, &exe, 5);
    let (bytes10, code10, insns10, miss10) = sweep_run(&dir, &exe, 10);
    // `sweep` is 32767 nops and a ret: 32768 bytes and instructions per call, all fetched.
    assert_eq!(bytes10 - bytes5, 5 * 32768, "sweep's bytes in code records");
    assert_eq!(bytes5, 5 * 32768);
    // The code records hold every instruction the program retired.
    assert_eq!((code5, code10), (insns5, insns10));
    // Sweep and main's 4-instruction loop; start-up differs a little between the runs, in
    // either direction (`atoi` parses one more digit, string routines see other argument
    // lengths and, with the environment, other alignments: 3 fewer in a checkout at another
    // path).
    let more = insns10 - insns5;
    assert!(
        (5 * (32768 + 4) - 200..5 * (32768 + 4) + 200).contains(&more),
        "instructions of 5 more calls: {more}"
    );
    // Each call misses all 1024 lines of sweep in the 16 KiB direct-mapped L1 I-cache, and
    // main's loop (one or two lines, evicted by the sweep) again; start-up differs by a few
    // misses between the runs.
    let extra = miss10 - miss5;
    assert!(
        (5 * 1024..=5 * 1024 + 40).contains(&extra),
        "L1 I-cache misses of 5 more calls: {extra}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 19, item 4: the replay's events per function in Cachegrind's format. `sweep` of
/// `code_sweep 3` retires 3 x 32768 instructions and misses each of its 1024 I-cache lines on
/// every call; it makes no data reference (the `ret` reads the stack: one load per call).
#[test]
fn cachegrind_output_counts_per_function() {
    if !qemu_or_skip("cachegrind_output_counts_per_function") {
        return;
    }
    plugin();
    let dir = scratch("cg");
    let exe = dir.join("code_sweep");
    gcc("code_sweep.c", &exe, &[]);
    let out = dir.join("cs.pmt");
    record_with_qemu(
        exe.to_str().unwrap(),
        &["3".into(), "/dev/null".into()],
        &out,
    )
    .expect("record");
    let (m, _, _, text) = profiled_replay(&out, "code_sweep 3 /dev/null");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines[..3],
        [
            "desc: I1 cache:         16384 B, 32 B, direct-mapped",
            "desc: D1 cache:         16384 B, 32 B, direct-mapped",
            "desc: LL cache:         1048576 B, 64 B, direct-mapped"
        ]
    );
    assert!(lines.contains(&"events: Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw"));
    let at = lines
        .iter()
        .position(|l| *l == "fn=sweep")
        .expect("fn=sweep");
    let c: Vec<u64> = lines[at + 1]
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!(c[0], 0, "line 0");
    assert_eq!(c[1..3], [3 * 32768, 3 * 1024], "Ir and I1mr of sweep");
    assert_eq!(
        c[4..],
        [3, 0, 0, 0, 0, 0],
        "one read per call (ret), no writes"
    );
    // The summary is the sum of every function's counts (at line 0, or per line where a
    // library's debug file gives lines) and of the machine's counters.
    let mut sum = vec![0u64; 9];
    for c in cachegrind_lines(&text).values() {
        for (s, x) in sum.iter_mut().zip(c) {
            *s += x;
        }
    }
    let summary: Vec<u64> = lines
        .last()
        .unwrap()
        .strip_prefix("summary: ")
        .unwrap()
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!(summary, sum);
    let cnt = &m.state().cores[0].cnt;
    assert_eq!(summary[1], cnt.l1i_misses);
    // Data misses as Cachegrind counts them: the machine's, less the stores to lines the L1 D
    // held shared (upgrades, misses of the coherent machine only; each is a store), and the
    // LL misses of those upgrades (`cachegrind_file_counts_upgrades_as_hits` pins the rule).
    let d1 = summary[4] + summary[7];
    assert!(d1 <= cnt.l1d_misses, "{d1} > {}", cnt.l1d_misses);
    assert!(
        cnt.l1d_misses - d1 <= summary[6],
        "more upgrades than stores"
    );
    assert!(summary[2] + summary[5] + summary[8] <= cnt.l2_misses);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Replays `trace` on one `numachine` processor with the Cachegrind profile on: the machine
/// after the run, its caches, the profile and the `cachegrind.out` text (command `cmd`).
fn profiled_replay(
    trace: &Path,
    cmd: &str,
) -> (
    machine::Machine,
    machine::config::CachesCfg,
    workload::trace::cachegrind::Profile,
    String,
) {
    let preset = machine::Preset::builtin("numachine")
        .unwrap()
        .with_procs(1)
        .unwrap();
    let caches = preset.caches.clone();
    let mut m = machine::Machine::new(preset, machine::Options::default()).unwrap();
    let r = replay_open(trace);
    r.set_profile(true);
    let r = workload::trace::replay::install(r, &mut m).unwrap();
    m.run(None).expect("replay");
    let profile = r.profile().expect("profiled");
    let mut namer = workload::trace::cachegrind::Namer::new(&r.header, r.program.as_deref());
    let text = workload::trace::cachegrind::render(
        &profile,
        &mut namer,
        [
            ("I1", &caches.l1i),
            ("D1", &caches.l1d),
            ("LL", caches.l2.as_ref().unwrap()),
        ],
        cmd,
    );
    (m, caches, profile, text)
}

/// A `cachegrind.out` file's counts by (file, function, line).
fn cachegrind_lines(text: &str) -> BTreeMap<(String, String, u32), Vec<u64>> {
    let (mut fl, mut func) = (String::new(), String::new());
    let mut out = BTreeMap::new();
    for l in text.lines() {
        if let Some(f) = l.strip_prefix("fl=") {
            fl = f.to_string();
        } else if let Some(f) = l.strip_prefix("fn=") {
            func = f.to_string();
        } else if l.starts_with(|c: char| c.is_ascii_digit()) {
            let mut it = l.split_whitespace().map(|x| x.parse::<u64>().unwrap());
            let line = it.next().unwrap() as u32;
            let c: Vec<u64> = it.collect();
            let e = out
                .entry((fl.clone(), func.clone(), line))
                .or_insert(vec![0; c.len()]);
            for (a, b) in e.iter_mut().zip(c) {
                *a += b;
            }
        }
    }
    out
}

/// Issue 19, item 4: with DWARF line information the Cachegrind file has per-line counts, at
/// the instruction that caused them. `lines.c` (built with -g) reads 1000 longs per call of
/// `sum`, 3 calls: its LINE_LOAD line has exactly 3000 reads. Every line of the program's own
/// source has the instruction and data-reference counts real Cachegrind gives it (they do not
/// depend on the caches), and the line's D1 read misses are within 2 % of Cachegrind's with the
/// simulated machine's geometry.
#[test]
fn cachegrind_output_counts_per_source_line() {
    if !qemu_or_skip("cachegrind_output_counts_per_source_line") {
        return;
    }
    plugin();
    let dir = scratch("cglines");
    let exe = dir.join("lines");
    gcc("lines.c", &exe, &["-g"]);
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/lines.c");
    let load_line = std::fs::read_to_string(&src)
        .unwrap()
        .lines()
        .position(|l| l.contains("LINE_LOAD */"))
        .unwrap() as u32
        + 1;
    let out = dir.join("lines.pmt");
    record_with_qemu(exe.to_str().unwrap(), &["3".into()], &out).expect("record");
    let (_, caches, profile, text) = profiled_replay(&out, "lines 3");
    assert_eq!(
        profile.unplaced, 0,
        "every data reference on its instruction"
    );
    let l2 = caches.l2.as_ref().unwrap();
    let ours = cachegrind_lines(&text);
    // The summary is still the sum of every line.
    let mut sum = vec![0u64; 9];
    for c in ours.values() {
        for (s, x) in sum.iter_mut().zip(c) {
            *s += x;
        }
    }
    let summary: Vec<u64> = text
        .lines()
        .last()
        .unwrap()
        .strip_prefix("summary: ")
        .unwrap()
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!(summary, sum);
    let file = src.to_str().unwrap().to_string();
    let key = (file.clone(), "sum".to_string(), load_line);
    let c = ours
        .get(&key)
        .unwrap_or_else(|| panic!("{key:?} in\n{text}"));
    assert_eq!(c[3], 3000, "reads of the LINE_LOAD line: {c:?}");
    assert_eq!(c[6], 0, "no writes on it");
    if Command::new("valgrind").arg("--version").output().is_err() {
        eprintln!("valgrind not installed: per-line comparison with Cachegrind skipped");
        return;
    }
    let geometry =
        |c: &machine::config::CacheCfg| format!("{},{},{}", c.size_bytes, c.assoc, c.line_bytes);
    let cg_out = dir.join("cachegrind.out");
    let st = Command::new("valgrind")
        .arg("--tool=cachegrind")
        .arg("--cache-sim=yes")
        .arg(format!("--I1={}", geometry(&caches.l1i)))
        .arg(format!("--D1={}", geometry(&caches.l1d)))
        .arg(format!("--LL={}", geometry(l2)))
        .arg(format!("--cachegrind-out-file={}", cg_out.display()))
        .arg(&exe)
        .arg("3")
        .output()
        .expect("valgrind");
    assert!(st.status.success());
    let theirs = cachegrind_lines(&std::fs::read_to_string(&cg_out).unwrap());
    let mine: Vec<_> = ours.iter().filter(|(k, _)| k.0 == file).collect();
    let cg: Vec<_> = theirs.iter().filter(|(k, _)| k.0 == file).collect();
    assert_eq!(
        mine.iter().map(|(k, _)| k).collect::<Vec<_>>(),
        cg.iter().map(|(k, _)| k).collect::<Vec<_>>(),
        "the same lines of lines.c"
    );
    for ((k, a), (_, b)) in mine.iter().zip(&cg) {
        for e in [0usize, 3, 6] {
            assert_eq!(
                a[e], b[e],
                "{k:?} event {e}: ours {a:?}, Cachegrind's {b:?}"
            );
        }
    }
    let (a, b) = (ours[&key][4], theirs[&key][4]);
    assert!(
        a.abs_diff(b) * 50 <= b.max(1),
        "D1mr of the LINE_LOAD line: ours {a}, Cachegrind's {b}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 19, item 6: a wait that timed out resumes at its timeout. `futex_waits` makes two
/// raw `FUTEX_WAIT`s with a relative timeout of 20 ms and a `pthread_cond_timedwait` with an
/// absolute deadline 20 ms ahead (`FUTEX_WAIT_BITSET` on `CLOCK_REALTIME`), all of which
/// time out; the trace records each timeout, and the replay idles that long in simulated time.
#[test]
fn timed_out_futex_waits_resume_at_their_timeout() {
    if !qemu_or_skip("timed_out_futex_waits_resume_at_their_timeout") {
        return;
    }
    plugin();
    let dir = scratch("timeouts");
    let exe = dir.join("futex_waits");
    gcc("futex_waits.c", &exe, &["-pthread"]);
    let (out, addrs) = (dir.join("fw.pmt"), dir.join("fw.addr"));
    let s = record_with_qemu(
        exe.to_str().unwrap(),
        &[addrs.to_str().unwrap().into()],
        &out,
    )
    .expect("record");
    assert_eq!(s.exit_code, 0);
    let word = range(&addrs).0;
    // (thread, entry address, timeout) of the waits, each thread's in its order.
    let mut waits: Vec<(u32, u64, Option<u64>)> = Vec::new();
    stats::visit(&out, |tid, r| {
        if let Record::Sync {
            nr: SYS_FUTEX,
            args,
            phase: tracefmt::SyncPhase::Entry,
            timeout_ns,
            ..
        } = *r
        {
            if matches!(args[1] & 0x7f, 0 | 9) {
                waits.push((tid, args[0], timeout_ns));
            }
        }
    })
    .unwrap();
    // The main thread's: it alone waits on `word`.
    let main = waits.iter().find(|w| w.1 == word).expect("waits on word").0;
    let timeouts: Vec<(u64, Option<u64>)> = waits
        .iter()
        .filter(|w| w.0 == main)
        .map(|w| (w.1, w.2))
        .collect();
    let ms20 = 20_000_000u64;
    assert_eq!(
        timeouts[..4],
        [
            (word, Some(ms20)),
            (word, Some(ms20)),
            (word, None),
            (word, None)
        ],
        "the raw waits: two with their relative timeout, two EAGAIN without one"
    );
    let cond = timeouts[4..]
        .iter()
        .find_map(|t| t.1)
        .expect("the condition wait's timeout");
    assert!(
        cond > ms20 / 2 && cond <= ms20,
        "the absolute deadline as a relative timeout: {cond} ns"
    );
    let preset = machine::Preset::builtin("numachine")
        .unwrap()
        .with_procs(4)
        .unwrap();
    let hz = preset.clocks.cpu_hz;
    let mut m = machine::Machine::new(preset, machine::Options::default()).unwrap();
    let r = workload::trace::replay::install(replay_open(&out), &mut m).unwrap();
    m.run(None).expect("replay");
    assert!(r
        .pairing()
        .summary()
        .contains("3 timed-out waits sleep their timeout"));
    let log = r.log.borrow();
    let slept: Vec<(u64, u64)> = log
        .iter()
        .filter(|e| e.0 == 0 && e.1 == workload::trace::replay::ReplayEvent::TimedOut)
        .map(|e| (e.2, e.3))
        .collect();
    assert_eq!(slept.len(), 3, "{slept:?}");
    assert_eq!((slept[0].0, slept[1].0, slept[2].0), (ms20, ms20, cond));
    // The main thread resumes each time at least its timeout after the previous one.
    for w in slept.windows(2) {
        let cycles = w[1].0 * hz / 1_000_000_000;
        assert!(
            w[1].1 - w[0].1 >= cycles,
            "resumed {} cycles after the previous timeout, the wait lasts {cycles}",
            w[1].1 - w[0].1
        );
    }
    assert!(slept[0].1 >= ms20 * hz / 1_000_000_000);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 19 (recording at 100 M references per second): the plugin's `level=N` sets the zstd
/// level of the trace's chunks (default `tracefmt::ZSTD_LEVEL`). The fastest level writes a
/// larger file than a high one, both read to the program's records, and a level zstd does not
/// have stops QEMU before the program runs, with the range in the message. With
/// `PMUSIM_QEMU_STATS` set, the plugin prints its threads' CPU and waiting times.
#[test]
fn the_zstd_level_is_a_plugin_option() {
    if !qemu_or_skip("the_zstd_level_is_a_plugin_option") {
        return;
    }
    plugin();
    let dir = scratch("level");
    let exe = dir.join("stores");
    gcc("stores.c", &exe, &[]);
    let qemu = runner::find_qemu().unwrap();
    let so = runner::find_plugin().unwrap();
    let run = |option: &str, out: &Path| {
        Command::new(&qemu)
            .env("PMUSIM_QEMU_STATS", "1")
            .arg("-plugin")
            .arg(format!("{},out={}{option}", so.display(), out.display()))
            .arg(&exe)
            .arg(dir.join("stores.addr"))
            .output()
            .unwrap()
    };
    let mut seen = Vec::new();
    for level in [tracefmt::min_zstd_level(), -1, 19] {
        let out = dir.join(format!("l{level}.pmt"));
        let o = run(&format!(",level={level}"), &out);
        assert_eq!(
            o.status.code(),
            Some(3),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let (lo, hi) = range(&dir.join("stores.addr"));
        let mut stores = 0u64;
        let (header, _) = stats::visit(&out, |_, r| {
            if let Record::Access { kind, addr, .. } = *r {
                stores += u64::from(kind == AccessKind::Store && (lo..hi).contains(&addr));
            }
        })
        .expect("read trace");
        assert_eq!(stores, 4096 * 25, "level {level}: stores to the array");
        assert_eq!(header.extra["ended_by"], "exit");
        // `PMUSIM_QEMU_STATS`: which thread is the critical path (`writer` module doc).
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("guest thread (the last) CPU") && err.contains("writer CPU"),
            "{err}"
        );
        seen.push(std::fs::metadata(&out).unwrap().len());
    }
    assert!(
        seen[0] > seen[1] && seen[1] > seen[2],
        "file bytes at levels min, -1, 19: {seen:?}"
    );
    for bad in ["23", "x", ""] {
        let out = dir.join("bad.pmt");
        let o = run(&format!(",level={bad}"), &out);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(!o.status.success(), "level={bad} was accepted");
        assert!(
            err.contains("zstd level is a number from"),
            "level={bad}: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
