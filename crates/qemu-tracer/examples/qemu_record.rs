//! `qemu_record OUT PROGRAM [ARGS...]`: records a program with the plugin and prints the
//! figures (wall time, references, references per second, bytes per reference, threads).
//! `qemu_record --stats FILE` prints the figures of an existing trace; `qemu_record --sync FILE`
//! lists its thread and synchronization records in global sequence order.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: qemu_record OUT PROGRAM [ARGS...] | qemu_record --stats FILE");
        std::process::exit(2);
    }
    if args[0] == "--sync" {
        return print_sync(std::path::Path::new(&args[1]));
    }
    let out = std::path::PathBuf::from(if args[0] == "--stats" {
        &args[1]
    } else {
        &args[0]
    });
    let mut code = 0;
    let mut wall = None;
    if args[0] != "--stats" {
        match qemu_tracer::runner::record_with_qemu(&args[1], &args[2..], &out) {
            Ok(s) => {
                code = s.exit_code;
                wall = Some(s.wall);
                if s.ended_by != "exit" {
                    eprintln!("qemu_record: trace ended by {}", s.ended_by);
                }
                if s.program_failed() {
                    eprintln!(
                        "qemu_record: the program failed with exit code {}",
                        s.exit_code
                    );
                }
            }
            Err(e) => {
                eprintln!("qemu_record: {e}");
                std::process::exit(1);
            }
        }
    }
    let st = match qemu_tracer::stats::stats(&out) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("qemu_record: {e}");
            std::process::exit(1);
        }
    };
    let bytes = std::fs::metadata(&out).map(|m| m.len()).unwrap_or(0);
    let refs = st.references();
    println!("trace            {}", out.display());
    if let Some(w) = wall {
        println!("wall             {:.3} s", w.as_secs_f64());
        println!(
            "refs/s           {:.1} M",
            refs as f64 / w.as_secs_f64() / 1e6
        );
    }
    println!("references       {refs}");
    println!("records          {}", st.records);
    println!("bytes            {bytes}");
    println!("bytes/reference  {:.3}", bytes as f64 / refs.max(1) as f64);
    println!("pieces           {} (8-byte accesses at +8 by the same instruction: vector accesses split by QEMU)", pieces(&out));
    let blocks: u64 = st.threads.values().map(|t| t.code_blocks).sum();
    if blocks > 0 {
        let insns: u64 = st.threads.values().map(|t| t.code_insns).sum();
        let code: u64 = st.threads.values().map(|t| t.code_bytes).sum();
        println!(
            "code blocks      {blocks} executed ({insns} instructions, {:.2} per block, {:.2} bytes per instruction)",
            insns as f64 / blocks as f64,
            code as f64 / insns.max(1) as f64
        );
    }
    for (tid, t) in &st.threads {
        println!(
            "thread {tid:>7} parent {:>7} loads {:>11} stores {:>11} (modify {:>9}) insns {:>12} sync {:>5}{}",
            t.parent.unwrap_or(0),
            t.loads,
            t.stores,
            t.modifies,
            t.insns,
            t.sync_records,
            if t.exited { "" } else { " (no exit record)" }
        );
    }
    std::process::exit(code);
}

fn print_sync(path: &std::path::Path) {
    use tracefmt::Record;
    let mut recs = Vec::new();
    let r = qemu_tracer::stats::visit(path, |tid, rec| {
        if let Some(seq) = rec.seq() {
            recs.push((seq, tid, *rec));
        }
    });
    if let Err(e) = r {
        eprintln!("qemu_record: {e}");
        std::process::exit(1);
    }
    recs.sort_by_key(|r| r.0);
    for (seq, tid, rec) in recs {
        let what = match rec {
            Record::ThreadStart { parent, .. } => format!("thread start (parent {parent})"),
            Record::ThreadExit { .. } => "thread exit".to_string(),
            Record::Sync {
                nr,
                args,
                ret,
                phase,
                ..
            } => {
                let name = match nr {
                    24 => "sched_yield",
                    35 => "nanosleep",
                    56 => "clone",
                    57 => "fork",
                    59 => "execve",
                    60 => "exit",
                    61 => "wait4",
                    202 => "futex",
                    230 => "clock_nanosleep",
                    231 => "exit_group",
                    435 => "clone3",
                    _ => "",
                };
                match phase {
                    tracefmt::SyncPhase::Entry => {
                        format!("{name}({nr}) entry {:#x} {} {}", args[0], args[1], args[2])
                    }
                    tracefmt::SyncPhase::Return => format!("{name}({nr}) return {ret}"),
                }
            }
            _ => continue,
        };
        println!("{seq:>6} {tid:>7} {what}");
    }
}

/// Accesses that continue the previous one by the same instruction (icount 0, same kind,
/// 8 bytes at +8): the second halves of 16-byte vector accesses that QEMU splits.
fn pieces(path: &std::path::Path) -> u64 {
    let mut prev: std::collections::HashMap<u32, (u64, tracefmt::AccessKind)> = Default::default();
    let mut n = 0;
    let _ = qemu_tracer::stats::visit(path, |tid, rec| {
        if let tracefmt::Record::Access {
            kind,
            addr,
            size,
            icount,
        } = *rec
        {
            if let Some(&(a, k)) = prev.get(&tid) {
                if icount == 0 && size == 8 && k == kind && addr == a.wrapping_add(8) {
                    n += 1;
                }
            }
            prev.insert(tid, (addr, kind));
        }
    });
    n
}
