//! Real multi-threaded programs traced with the QEMU plugin and replayed on the machine:
//! synchronization honoured in simulated time, false sharing reported under the symbol.

use machine::{Machine, Options, Preset};
use std::path::{Path, PathBuf};
use std::process::Command;
use workload::trace::replay::{self, ReplayEvent, ThreadPlacement};

fn have(cmd: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {cmd}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Builds the plugin (release, as `pmusim trace record` expects it) and returns its path.
pub(crate) fn plugin() -> PathBuf {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let st = Command::new(env!("CARGO"))
        .args(["build", "-q", "-p", "qemu-tracer", "--release"])
        .current_dir(&root)
        .status()
        .expect("cargo build");
    assert!(st.success());
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or(root.join("target"));
    target.join("release/libqemu_tracer.so")
}

fn build_and_record(dir: &Path, name: &str, src: &str) -> PathBuf {
    build_and_record_logged(dir, name, src).0
}

/// [`build_and_record`], also returning what `pmusim trace record` printed on stderr.
fn build_and_record_logged(dir: &Path, name: &str, src: &str) -> (PathBuf, String) {
    let c = dir.join(format!("{name}.c"));
    std::fs::write(&c, src).unwrap();
    let exe = dir.join(name);
    let st = Command::new("gcc")
        .args(["-O1", "-pthread", "-o"])
        .arg(&exe)
        .arg(&c)
        .status()
        .unwrap();
    assert!(st.success());
    let out = dir.join(format!("{name}.pmt"));
    let err = record_exe(&out, &exe, &[]);
    (out, err)
}

/// `pmusim trace record --tracer qemu -o OUT -- EXE` with the environment `env` added, which
/// must succeed: what it printed on stderr.
pub(crate) fn record_exe(out: &Path, exe: &Path, env: &[(&str, &str)]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_pmusim"))
        .env("PMUSIM_QEMU_PLUGIN", plugin())
        .envs(env.iter().copied())
        .args(["trace", "record", "--tracer", "qemu", "-o"])
        .arg(out)
        .arg("--")
        .arg(exe)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "trace record failed: {err}");
    err
}

/// `pmusim run trace:TRACE ARGS --json`, which must succeed: its JSON document.
fn replay_json(trace: &Path, args: &[&str]) -> serde_json::Value {
    let out = Command::new(env!("CARGO_BIN_EXE_pmusim"))
        .arg("run")
        .arg(format!("trace:{}", trace.display()))
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn tmpdir(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pmusim-replay-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

const PRODUCER_CONSUMER: &str = r#"
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
long data[4096];
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static int ready;
static void *consumer(void *arg) {
    pthread_mutex_lock(&m);
    while (!ready) pthread_cond_wait(&c, &m);
    pthread_mutex_unlock(&m);
    long s = 0;
    for (int i = 0; i < 4096; i++) s += data[i];
    return (void *)s;
}
int main(void) {
    pthread_t t;
    pthread_create(&t, 0, consumer, 0);
    usleep(50000);
    for (int i = 0; i < 4096; i++) data[i] = i;
    pthread_mutex_lock(&m);
    ready = 1;
    pthread_cond_signal(&c);
    pthread_mutex_unlock(&m);
    void *r;
    pthread_join(t, &r);
    printf("%ld\n", (long)r);
    return (long)r == 4096L * 4095 / 2 ? 0 : 1;
}
"#;

#[test]
fn a_consumer_never_reads_before_the_producers_wake() {
    if !have("qemu-x86_64") || !have("gcc") {
        eprintln!("skipped: needs qemu-x86_64 (Debian qemu-user) and gcc");
        return;
    }
    let dir = tmpdir("pc");
    let trace = build_and_record(&dir, "pc", PRODUCER_CONSUMER);
    let mut r = replay::open(&trace, None, ThreadPlacement::Spread).unwrap();
    assert_eq!(r.threads(), 2);
    assert!(
        r.pairing().paired >= 1,
        "the consumer's futex wait is paired: {:?}",
        r.pairing()
    );
    let data = r
        .regions()
        .iter()
        .find(|g| g.name == "data")
        .expect("`data` named from the ELF symbols")
        .clone();
    r.watch = Some((data.start, data.start + data.len));
    let preset = Preset::builtin("numachine")
        .unwrap()
        .with_procs(16)
        .unwrap();
    let mut m = Machine::new(preset, Options::default()).unwrap();
    let r = replay::install(r, &mut m).unwrap();
    m.run(None).unwrap();
    assert!(workload::Workload::verify(&*r).verified);
    let log = r.log.borrow().clone();
    let signal_at = |seq: u64| {
        log.iter()
            .find(|e| e.1 == ReplayEvent::Signal && e.2 == seq)
            .map(|e| e.3)
            .unwrap_or_else(|| panic!("no signal for seq {seq}: {log:?}"))
    };
    let mut checked = 0;
    for &(t, ev, seq, cyc) in log.iter().filter(|e| e.1 == ReplayEvent::Resumed) {
        let s = signal_at(seq);
        assert!(
            cyc >= s,
            "thread {t} resumed at cycle {cyc} before its waker at {s} ({ev:?})"
        );
        checked += 1;
    }
    assert!(checked >= 2, "thread start and the condition wait: {log:?}");
    // The consumer (thread 1) reads `data` only after the wake that ended its wait.
    let wake = log
        .iter()
        .filter(|e| e.0 == 1 && e.1 == ReplayEvent::Resumed)
        .map(|e| signal_at(e.2))
        .max()
        .unwrap();
    let first = log
        .iter()
        .find(|e| e.0 == 1 && e.1 == ReplayEvent::FirstWatched)
        .expect("the consumer reads data")
        .3;
    assert!(
        first >= wake,
        "consumer read data at {first}, before the producer's wake at {wake}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

const FALSE_SHARING: &str = r#"
#include <pthread.h>
#include <stdio.h>
volatile long counters[4];
long table[8192];
static void *work(void *arg) {
    long i = (long)arg, s = 0;
    for (int k = 0; k < 20000; k++) counters[i]++;
    for (int k = 0; k < 8192; k++) s += table[k];
    return (void *)s;
}
int main(void) {
    pthread_t t[4];
    for (long i = 0; i < 4; i++) pthread_create(&t[i], 0, work, (void *)i);
    for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
    printf("%ld\n", counters[0] + counters[1] + counters[2] + counters[3]);
    return 0;
}
"#;

#[test]
fn false_sharing_shows_under_the_counters_symbol_by_thread() {
    if !have("qemu-x86_64") || !have("gcc") {
        eprintln!("skipped: needs qemu-x86_64 (Debian qemu-user) and gcc");
        return;
    }
    let dir = tmpdir("fs");
    let trace = build_and_record(&dir, "fs", FALSE_SHARING);
    let doc = replay_json(&trace, &["--machine", "numachine", "--procs", "16"]);
    assert_eq!(doc["workload"]["threads"], 5);
    let gt = &doc["ground_truth"];
    let top = &gt["data_structures"][0];
    assert_eq!(top["name"], "counters", "counters miss most: {top}");
    assert!(top["coherence"].as_u64().unwrap() > 4 * 1000, "{top}");
    assert!(top["invalidations"].as_u64().unwrap() > 4 * 1000, "{top}");
    let per_thread: Vec<&serde_json::Value> = gt["structure_x_processor"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["structure"] == "counters" && s["coherence"].as_u64().unwrap_or(0) > 1000)
        .collect();
    assert_eq!(
        per_thread.len(),
        4,
        "each of the 4 workers misses on the line: {per_thread:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 19: `trace record` prints the counts the plugin's writer kept (the exit-time
/// header's `total_references` and `total_threads`), not a read-back of the whole trace, and
/// they are the counts of the file: `count_references` and `trace info` agree with them.
#[test]
fn trace_record_reports_the_writers_counts_which_match_the_file() {
    if !have("qemu-x86_64") || !have("gcc") {
        eprintln!("skipped: needs qemu-x86_64 (Debian qemu-user) and gcc");
        return;
    }
    let dir = tmpdir("counts");
    let (trace, err) = build_and_record_logged(&dir, "fs", FALSE_SHARING);
    let (file_threads, file_refs) = workload::trace::count_references(&trace).unwrap();
    assert_eq!(file_threads, 5, "main and 4 workers");
    assert!(file_refs > 4 * 1000, "{file_refs}");
    assert!(
        err.contains(&format!(
            "recorded {file_refs} references of {file_threads} thread(s)"
        )),
        "{err}"
    );
    // The counts come from the writer, in the final header.
    let f = std::fs::File::open(&trace).unwrap();
    let header = tracefmt::Reader::new(f).unwrap().header().clone();
    assert_eq!(header.totals(), Some((file_threads, file_refs)));
    let info = Command::new(env!("CARGO_BIN_EXE_pmusim"))
        .args(["trace", "info"])
        .arg(&trace)
        .output()
        .unwrap();
    let info = String::from_utf8_lossy(&info.stdout);
    assert!(
        info.contains(&format!("references:   {file_refs} ")),
        "{info}"
    );
    assert!(
        info.contains(&format!("threads:      {file_threads}\n")),
        "{info}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_qemu_without_plugin_support_gets_a_clear_error() {
    let dir = tmpdir("noplugin");
    let fake = dir.join("qemu-x86_64");
    std::fs::write(&fake, "#!/bin/sh\necho 'qemu-x86_64: -plugin: plugin interface not enabled in this build' >&2\nexit 1\n").unwrap();
    Command::new("chmod").arg("+x").arg(&fake).status().unwrap();
    let path = format!(
        "{}:{}",
        dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new(env!("CARGO_BIN_EXE_pmusim"))
        .env("PATH", path)
        .env("PMUSIM_QEMU_PLUGIN", "/bin/true")
        .args(["trace", "record", "--tracer", "qemu", "-o"])
        .arg(dir.join("x.pmt"))
        .args(["--", "/bin/true"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("lack plugin support") && err.contains("qemu-user"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Drops the host-time fields (wall clock, rates) of a run document, which differ between
/// two runs of the same simulation.
fn without_host_time(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            m.retain(|k, _| !k.contains("wall") && !k.contains("per_second"));
            m.values_mut().for_each(without_host_time);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(without_host_time),
        _ => {}
    }
}

/// The three tables keyed by data structure: a fused run names data from the mappings the
/// recorder had written when the simulation started, a replay of the finished file from the
/// mappings at the end (docs/qemu-tracer.md). Returns their miss totals, which must agree.
fn without_mapping_names(v: &mut serde_json::Value) -> Vec<(u64, u64, u64)> {
    let gt = v["ground_truth"].as_object_mut().unwrap();
    [
        "data_structures",
        "structure_x_processor",
        "procedure_x_structure",
    ]
    .iter()
    .map(|t| {
        let rows = gt.remove(*t).unwrap();
        let sum = |k: &str| {
            rows.as_array()
                .unwrap()
                .iter()
                .map(|r| r[k].as_u64().unwrap())
                .sum::<u64>()
        };
        (sum("read_misses"), sum("write_misses"), sum("global_cold"))
    })
    .collect()
}

/// `pmusim run --record --save F -- PROGRAM` simulates while PROGRAM runs (fused, through the
/// shared-memory channel) and gives the report of `pmusim run trace:F` (the file it saved),
/// apart from the names of mapped data (the same misses, named from earlier mappings), and
/// the same Cachegrind file. The program sleeps in a futex wait that times out after 30 ms:
/// the fused replay idles for it as the file replay does. Multi-threaded programs are fused
/// too (issue 19: they were replayed from the finished file): a condition variable and a
/// join, and 15 threads created and joined in rounds of 3 on 4 processors (a processor freed
/// by an exited thread takes the next one; the file replay asked for `--procs 16`).
#[test]
fn run_record_is_fused_and_gives_the_replay_of_the_saved_trace() {
    if !have("qemu-x86_64") || !have("gcc") {
        println!("SKIPPED: needs qemu-x86_64 and gcc");
        return;
    }
    let dir = tmpdir("record");
    let c = dir.join("sum.c");
    std::fs::write(
        &c,
        "#define _GNU_SOURCE\n#include <stdlib.h>\n#include <linux/futex.h>\n\
         #include <sys/syscall.h>\n#include <time.h>\n#include <unistd.h>\nstatic int word;\n\
         int main(void) { long *a = calloc(1 << 16, 8); long s = 0;\n\
         for (int r = 0; r < 8; r++) for (int i = 0; i < 1 << 16; i++) s += a[i] + i;\n\
         struct timespec ts = {0, 30000000};\n\
         long w = syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, &ts, 0, 0);\n\
         for (int i = 0; i < 1 << 16; i++) s += a[i];\n\
         return (s == 42) + 2 * (w != -1); }\n",
    )
    .unwrap();
    let exe = dir.join("sum");
    assert!(Command::new("gcc")
        .args(["-O1", "-o"])
        .arg(&exe)
        .arg(&c)
        .status()
        .unwrap()
        .success());
    let saved = dir.join("saved.pmt");
    let (cg1, cg2) = (dir.join("a.cg"), dir.join("b.cg"));
    let pmusim = |args: &[&std::ffi::OsStr]| {
        let o = Command::new(env!("CARGO_BIN_EXE_pmusim"))
            .env("PMUSIM_QEMU_PLUGIN", plugin())
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        // The recorded program's own output (it shares stdout) comes before the JSON.
        let out = &o.stdout;
        let start = match out.first() {
            Some(b'{') => 0,
            _ => out.windows(2).position(|w| w == b"\n{").unwrap() + 1,
        };
        let mut v: serde_json::Value = serde_json::from_slice(&out[start..]).unwrap();
        without_host_time(&mut v);
        // And `run.events`, the event loop's steps: a traced thread's horizon scan
        // (`machine::sim`, "The thread's horizon") stops at the end of the records at hand,
        // the recorder's buffers in a fused run and the decoder's batches in a replay, so the
        // two take the same run in different steps.
        assert!(v["run"].as_object_mut().unwrap().remove("events").is_some());
        v
    };
    let os = |s: &str| std::ffi::OsString::from(s);
    let mut fused = pmusim(&[
        &os("run"),
        &os("--record"),
        &os("--save"),
        saved.as_os_str(),
        &os("-p"),
        &os("1"),
        &os("--json"),
        &os("--cachegrind-out"),
        cg1.as_os_str(),
        &os("--"),
        exe.as_os_str(),
    ]);
    let mut replayed = pmusim(&[
        &os("run"),
        &std::ffi::OsString::from(format!("trace:{}", saved.display())),
        &os("-p"),
        &os("1"),
        &os("--json"),
        &os("--cachegrind-out"),
        cg2.as_os_str(),
    ]);
    assert_eq!(
        without_mapping_names(&mut fused),
        without_mapping_names(&mut replayed)
    );
    assert_eq!(fused, replayed);
    // The timed-out wait idled 30 ms at the processor's 150 MHz.
    let idle =
        fused["ground_truth"]["processors"][0]["cycles_by_pipeline_state"]["other-stall"].as_u64();
    assert!(
        idle >= Some(4_500_000),
        "{:#}",
        fused["ground_truth"]["processors"][0]
    );
    assert!(fused["ground_truth"]["processors"][0]["l1i"]["misses"].as_u64() > Some(0));
    let (a, b) = (
        std::fs::read_to_string(&cg1).unwrap(),
        std::fs::read_to_string(&cg2).unwrap(),
    );
    assert_eq!(a, b);
    assert!(a.contains("fn=main\n"), "{a}");
    // Threads: fused, the same report as the replay of the saved file.
    let src = [
        (
            "pc",
            PRODUCER_CONSUMER.to_string(),
            2,
            "woken futex waits paired",
        ),
        (
            "rounds",
            "#include <pthread.h>\nlong d[3][1000];\n\
             void *f(void *a) { long *x = d[(long)a]; for (int i = 0; i < 1000; i++) \
             x[i] += i; return a; }\n\
             int main(void) { for (long r = 0; r < 5; r++) { pthread_t t[3];\n\
             for (long k = 0; k < 3; k++) pthread_create(&t[k], 0, f, (void *)k);\n\
             for (long k = 0; k < 3; k++) pthread_join(t[k], 0); } return 0; }\n"
                .to_string(),
            16,
            "of 16 thread(s)",
        ),
    ];
    for (name, code, threads, detail) in src {
        let t = dir.join(format!("{name}.c"));
        std::fs::write(&t, code).unwrap();
        let exe = dir.join(name);
        assert!(Command::new("gcc")
            .args(["-O1", "-pthread", "-o"])
            .arg(&exe)
            .arg(&t)
            .status()
            .unwrap()
            .success());
        let mut fused = pmusim(&[
            &os("run"),
            &os("--record"),
            &os("--save"),
            saved.as_os_str(),
            &os("-p"),
            &os("4"),
            &os("--json"),
            &os("--"),
            exe.as_os_str(),
        ]);
        let mut replayed = pmusim(&[
            &os("run"),
            &std::ffi::OsString::from(format!("trace:{}", saved.display())),
            &os("-p"),
            &os("4"),
            &os("--json"),
        ]);
        assert_eq!(fused["workload"]["threads"], threads, "{name}");
        let d = fused["workload"]["detail"].as_str().unwrap().to_string();
        assert!(d.contains(detail), "{name}: {d}");
        assert_eq!(fused["workload"]["verified"], true, "{name}: {d}");
        // Every woken wait is paired ("N of N woken futex waits paired").
        let words: Vec<&str> = d.split("; ").nth(1).unwrap().split(' ').collect();
        assert_eq!(words[0], words[2], "{name}: {d}");
        assert_eq!(
            without_mapping_names(&mut fused),
            without_mapping_names(&mut replayed),
            "{name}"
        );
        assert_eq!(fused, replayed, "{name}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 19, item 4: in the Cachegrind file, a store to a line the L1 D holds shared (an
/// upgrade under `numachine`'s protocol, a miss for the machine's counters) is a hit, as
/// Cachegrind counts it; a store to an absent line is a miss, and so is each line of a load
/// that spans two absent lines.
#[test]
fn cachegrind_file_counts_upgrades_as_hits() {
    use tracefmt::{AccessKind, Header, Record, Writer};
    let dir = tmpdir("cg-upgrade");
    let trace = dir.join("u.pmt");
    let mut h = Header::new("qemu", "/nonexistent/prog", &[], "x86_64");
    h.code_records = true;
    let mut w = Writer::new(std::fs::File::create(&trace).unwrap(), h).unwrap();
    let acc = |kind, addr, size| Record::Access {
        kind,
        addr,
        size,
        icount: 1,
    };
    w.push(
        1,
        &Record::Code {
            addr: 0x40_0000,
            bytes: 16,
            insns: 5,
        },
    )
    .unwrap();
    w.push(1, &acc(AccessKind::Load, 0x10_0000, 8)).unwrap(); // D1 read miss
    w.push(1, &acc(AccessKind::Store, 0x10_0008, 8)).unwrap(); // upgrade: a hit
    w.push(1, &acc(AccessKind::Store, 0x20_0000, 8)).unwrap(); // D1 write miss
    w.push(1, &acc(AccessKind::Load, 0x30_001c, 8)).unwrap(); // two absent lines
    w.push(1, &Record::Instructions(1)).unwrap();
    w.finish().unwrap();
    let cg = dir.join("u.cg");
    let o = Command::new(env!("CARGO_BIN_EXE_pmusim"))
        .arg("run")
        .arg(format!("trace:{}", trace.display()))
        .args(["-p", "1", "--json", "--cachegrind-out"])
        .arg(&cg)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    // The machine's own counts keep the upgrade as an L1 D miss: 1 + 1 + 1 + 2.
    assert_eq!(v["ground_truth"]["processors"][0]["l1d"]["misses"], 5);
    let text = std::fs::read_to_string(&cg).unwrap();
    let summary = text.lines().find(|l| l.starts_with("summary:")).unwrap();
    // Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
    let f = cachegrind_summary(&text);
    assert_eq!((f[0], f[3], f[4], f[6], f[7]), (5, 2, 3, 2, 1), "{summary}");
    // LL misses only where a line was absent from the L1 D; the two 32-byte L1 lines of the
    // spanning load share one 64-byte L2 line: one L2 miss.
    assert_eq!((f[5], f[8]), (2, 1), "{summary}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 19 (cg19): on a machine whose last level is the shared one (the `cachegrind` preset:
/// L1 I and D of 32 KiB 8-way, 64-byte lines, no private L2, an LL of 8 MiB 16-way), the
/// file's LL misses are that level's misses of each reference, not its L1 misses. A saved
/// trace (written here, no QEMU) reads a 64 KiB array twice and writes 4 KiB once: the reads
/// miss the L1 D on both passes (2 x 1024 lines; 64 KiB does not fit in 32 KiB) and the LL on
/// the first only (1024); the stores miss both (64 lines); the one code line misses both once.
/// The file's ILmr + DLmr + DLmw equals the ground truth's shared-level misses (its reads' and
/// writes'). Before cg19 the file read the last private level (the L1 D) and gave DLmr 2048.
#[test]
fn cachegrind_file_ll_is_the_shared_level_on_the_cachegrind_preset() {
    use tracefmt::{AccessKind, Header, Record, Writer};
    let dir = tmpdir("cg-shared-ll");
    let trace = dir.join("ll.pmt");
    let mut h = Header::new("qemu", "/nonexistent/prog", &[], "x86_64");
    h.code_records = true;
    let mut w = Writer::new(std::fs::File::create(&trace).unwrap(), h).unwrap();
    let mut push = |kind, addr| {
        // One block of one instruction (a 4-byte load or store) per reference.
        let code = Record::Code {
            addr: 0x40_0000,
            bytes: 4,
            insns: 1,
        };
        w.push(1, &code).unwrap();
        let a = Record::Access {
            kind,
            addr,
            size: 8,
            icount: 1,
        };
        w.push(1, &a).unwrap();
    };
    for _pass in 0..2 {
        for line in 0..1024u64 {
            push(AccessKind::Load, 0x100_0000 + line * 64);
        }
    }
    for line in 0..64u64 {
        push(AccessKind::Store, 0x200_0000 + line * 64);
    }
    w.finish().unwrap();
    let cg = dir.join("ll.cg");
    let o = Command::new(env!("CARGO_BIN_EXE_pmusim"))
        .arg("run")
        .arg(format!("trace:{}", trace.display()))
        .args(["-m", "cachegrind", "--json", "--cachegrind-out"])
        .arg(&cg)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let text = std::fs::read_to_string(&cg).unwrap();
    let summary = text.lines().find(|l| l.starts_with("summary:")).unwrap();
    // Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw
    let f = cachegrind_summary(&text);
    assert_eq!(f, [2112, 1, 1, 2048, 2048, 1024, 64, 64, 64], "{summary}");
    let slices = &v["ground_truth"]["shared_slices"];
    assert_eq!(slices["level"], "ll", "{slices}");
    let s = &slices["slices"][0];
    let (rm, wm) = (
        s["read_misses"].as_u64().unwrap(),
        s["write_misses"].as_u64().unwrap(),
    );
    assert_eq!((rm, wm), (1 + 1024, 64), "{slices}");
    assert_eq!(f[2] + f[5] + f[8], rm + wm);
    // The L1 misses the machine's own counts report (`l2.misses` without a private L2: the
    // L1 misses that went to the shared level) are what the file used to call LL.
    let p0 = &v["ground_truth"]["processors"][0];
    assert_eq!(p0["l1d"]["misses"], 2048 + 64, "{p0}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 19 (cg19), against real Cachegrind: `tests/c/mm.c` (`gcc -O1 -g`) recorded and
/// simulated on `-m cachegrind` and run under `valgrind --tool=cachegrind` with the preset's
/// geometry, the guest under QEMU given the environment valgrind gives its own guest
/// (`valgrind_guest_env`: its preload library and Debian's library path, which make the
/// dynamic loader work more before `main`; docs/qemu-tracer.md, "The same program").
/// Measured 2026-11-29: `main` D1 1,019,994 and LL 15,004 under both tools; the whole program
/// I1 -2.4 %, D1 +0.00 %, LL -0.2 % (without the environment I1 -8.7 %: the loader's extra
/// work under Cachegrind). On main 8d4da69 the file's LL was every L1 miss: 1,022,843.
#[test]
fn cachegrind_preset_matches_cachegrind_on_mm() {
    if !have("qemu-x86_64") || !have("gcc") || !have("valgrind") {
        println!("SKIPPED: needs qemu-x86_64, gcc and valgrind");
        return;
    }
    let dir = tmpdir("cg-mm");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/c/mm.c");
    let exe = dir.join("mm");
    let st = Command::new("gcc")
        .args(["-O1", "-g", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success());
    let ours = dir.join("pm.out");
    let o = Command::new(env!("CARGO_BIN_EXE_pmusim"))
        .env("PMUSIM_QEMU_PLUGIN", plugin())
        .env("QEMU_SET_ENV", valgrind_guest_env())
        .args(["run", "--record", "-m", "cachegrind", "--cachegrind-out"])
        .arg(&ours)
        .arg("--")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let theirs = dir.join("cg.out");
    let o = Command::new("valgrind")
        .args(["--tool=cachegrind", "--cache-sim=yes"])
        .args(["--I1=32768,8,64", "--D1=32768,8,64", "--LL=8388608,16,64"])
        .arg(format!("--cachegrind-out-file={}", theirs.display()))
        .arg(&exe)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (a, b) = (
        std::fs::read_to_string(&ours).unwrap(),
        std::fs::read_to_string(&theirs).unwrap(),
    );
    // Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw -> (Ir, D1, LL, I1)
    let three = |c: &[u64]| (c[0], c[4] + c[7], c[2] + c[5] + c[8], c[1]);
    let within = |x: u64, y: u64, pct: u64| x.abs_diff(y) * 100 <= y * pct;
    let (m, n) = (
        three(&cachegrind_function(&a, "main")),
        three(&cachegrind_function(&b, "main")),
    );
    assert_eq!(m.0, n.0, "main's Ir: {m:?} {n:?}");
    assert!(
        within(m.1, n.1, 1) && within(m.2, n.2, 1),
        "main: ours {m:?}, Cachegrind's {n:?}"
    );
    let (x, y) = (
        three(&cachegrind_summary(&a)),
        three(&cachegrind_summary(&b)),
    );
    assert!(within(x.1, y.1, 2), "D1: ours {x:?}, Cachegrind's {y:?}");
    assert!(within(x.2, y.2, 2), "LL: ours {x:?}, Cachegrind's {y:?}");
    // Issue 19's I1 figure over the whole program, start-up included (-8.7 % when QEMU's
    // guest does not get valgrind's environment).
    assert!(within(x.3, y.3, 5), "I1: ours {x:?}, Cachegrind's {y:?}");
    // The LL is not the L1 misses any more (what the file gave before).
    assert!(x.2 * 10 < x.1, "LL {x:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The variables valgrind sets in its guest's environment (`LD_PRELOAD` of its core preload
/// library; Debian's wrapper script adds `/usr/lib/debug` to `LD_LIBRARY_PATH`), as
/// `KEY=VALUE,KEY=VALUE` for QEMU's `QEMU_SET_ENV`: read from valgrind itself, so the test
/// follows whatever this machine's valgrind does.
fn valgrind_guest_env() -> String {
    let o = Command::new("valgrind")
        .args(["--tool=none", "/usr/bin/env"])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let vars: Vec<String> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter(|l| l.starts_with("LD_PRELOAD=") || l.starts_with("LD_LIBRARY_PATH="))
        .map(str::to_string)
        .collect();
    assert!(
        vars.iter().any(|v| v.starts_with("LD_PRELOAD=")),
        "valgrind's guest has no LD_PRELOAD: {vars:?}"
    );
    vars.join(",")
}

const WALK: &str = r#"
/* `walk` reads `arr` (128 KiB: 4096 lines of 32 bytes, 2048 of 64) front to back 4 times and
 * nothing else: on `numachine` (16 KiB direct-mapped L1 D of 32-byte lines, 1 MiB L2 of
 * 64-byte lines) every line of it misses the L1 D on every pass, the L2 on the first only. */
#include <stdio.h>
#define N 16384
long arr[N] __attribute__((aligned(64)));
__attribute__((noinline)) long walk(int passes) {
    long s = 0;
    for (int p = 0; p < passes; p++)
        for (int i = 0; i < N; i++)
            s += arr[i];
    return s;
}
int main(void) {
    printf("%ld\n", walk(4));
    return 0;
}
"#;

/// A `cachegrind.out` file's `fn=NAME` counts summed over its lines (Ir I1mr ILmr Dr D1mr
/// DLmr Dw D1mw DLmw).
fn cachegrind_function(text: &str, name: &str) -> Vec<u64> {
    let mut sum = vec![0u64; 9];
    let mut inside = false;
    for l in text.lines() {
        if let Some(f) = l.strip_prefix("fn=") {
            inside = f == name;
        } else if inside && l.starts_with(|c: char| c.is_ascii_digit()) {
            let c = l
                .split_whitespace()
                .skip(1)
                .map(|x| x.parse::<u64>().unwrap());
            for (s, x) in sum.iter_mut().zip(c) {
                *s += x;
            }
        }
    }
    sum
}

/// Issue 19: per data structure and per procedure, pmusim's own report has the L1 D and L1 I
/// misses beside the L2's. `arr` misses the L1 D 4 x 4096 times and the L2 2048 times (see
/// `WALK`); its procedure is `walk` (a traced program's procedures are the functions of its
/// code blocks), whose L1 and L2 misses equal those of real Cachegrind with the same geometry
/// (`fn=walk`'s D1mr, I1mr and DLmr), within 2 %.
#[test]
fn l1_misses_per_structure_and_procedure_of_a_traced_program() {
    if !have("qemu-x86_64") || !have("gcc") {
        println!("SKIPPED: needs qemu-x86_64 and gcc");
        return;
    }
    let dir = tmpdir("l1");
    let trace = build_and_record(&dir, "walk", WALK);
    let doc = replay_json(&trace, &["-p", "1"]);
    let gt = &doc["ground_truth"];
    let row = |table: &str, name: &str| -> serde_json::Value {
        gt[table]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == name)
            .unwrap_or_else(|| panic!("{name} in {table}: {}", gt[table]))
            .clone()
    };
    let n = |v: &serde_json::Value, k: &str| v[k].as_u64().unwrap();
    let arr = row("data_structures", "arr");
    assert_eq!(
        [
            n(&arr, "l1d_read_misses"),
            n(&arr, "l1d_write_misses"),
            n(&arr, "l1i_misses"),
            n(&arr, "read_misses"),
            n(&arr, "write_misses"),
        ],
        [4 * 4096, 0, 0, 2048, 0],
        "{arr}"
    );
    // The rows sum to the processor's L1 misses, by structure and by procedure.
    let p0 = &gt["processors"][0];
    for table in ["data_structures", "procedures"] {
        let sum = |k: &str| -> u64 { gt[table].as_array().unwrap().iter().map(|r| n(r, k)).sum() };
        assert_eq!(
            (
                sum("l1d_read_misses") + sum("l1d_write_misses"),
                sum("l1i_misses")
            ),
            (n(&p0["l1d"], "misses"), n(&p0["l1i"], "misses")),
            "{table}"
        );
    }
    let walk = row("procedures", "walk");
    assert_eq!(gt["procedures"][0]["name"], "walk", "walk misses most");
    let (d1, i1, l2) = (
        n(&walk, "l1d_read_misses"),
        n(&walk, "l1i_misses"),
        n(&walk, "read_misses"),
    );
    // The array's lines, and the return address the `ret` reads.
    assert!((4 * 4096..=4 * 4096 + 4).contains(&d1), "{walk}");
    assert_eq!(n(&walk, "l1d_write_misses"), 0, "{walk}");
    if !have("valgrind") {
        println!("valgrind not installed: comparison with Cachegrind skipped");
        return;
    }
    let cg = dir.join("cachegrind.out");
    let st = Command::new("valgrind")
        .args(["--tool=cachegrind", "--cache-sim=yes"])
        .args(["--I1=16384,1,32", "--D1=16384,1,32", "--LL=1048576,1,64"])
        .arg(format!("--cachegrind-out-file={}", cg.display()))
        .arg(dir.join("walk"))
        .output()
        .unwrap();
    assert!(st.status.success());
    let theirs = cachegrind_function(&std::fs::read_to_string(&cg).unwrap(), "walk");
    let near = |a: u64, b: u64| a.abs_diff(b) * 50 <= b.max(50);
    assert!(
        near(d1, theirs[4]),
        "D1mr of walk: ours {d1}, Cachegrind's {theirs:?}"
    );
    assert!(
        near(i1, theirs[1]),
        "I1mr of walk: ours {i1}, Cachegrind's {theirs:?}"
    );
    assert!(
        near(l2, theirs[5] + theirs[2]),
        "DLmr + ILmr of walk: ours {l2}, Cachegrind's {theirs:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// A `cachegrind.out` file's `summary:` line: its totals (Ir I1mr ILmr Dr D1mr DLmr Dw D1mw
/// DLmw).
fn cachegrind_summary(text: &str) -> Vec<u64> {
    let summary = text.lines().find(|l| l.starts_with("summary:")).unwrap();
    summary[8..]
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect()
}
