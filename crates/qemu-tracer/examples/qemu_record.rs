//! `qemu_record OUT PROGRAM [ARGS...]`: records a program with the plugin and prints the
//! figures (wall time, references, references per second, bytes per reference, threads).
//! `qemu_record --stats FILE` prints the figures of an existing trace.

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        eprintln!("usage: qemu_record OUT PROGRAM [ARGS...] | qemu_record --stats FILE");
        std::process::exit(2);
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
