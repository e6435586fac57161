//! `--serve ADDR`: the run's counters in the Prometheus/OpenMetrics text format at
//! `http://ADDR/metrics` while it runs (issue 17 item 7), updated every `--serve-interval`
//! processor cycles of simulated time by the run's ticker (`live.rs`).
//!
//! Conventions (Prometheus's naming rules): the unit in the name (`_processor_cycles`),
//! counters end in `_total`, one label per dimension (`processor`; the latency histogram's
//! `kind`), no per-address label, histograms as cumulative `_bucket{le=...}` series with
//! `_sum` and `_count`. The metrics come from the machine's own exact counters and the ground
//! truth's latency histograms, so the last scrape (the text published once the run is over)
//! equals the run's JSON document.
//!
//! The HTTP side is `tiny_http` on a thread of its own that only copies out the latest text:
//! the simulation publishes a new text at each interval, and does nothing else for it. Without
//! `--serve` nothing here runs and the ticker keeps its period.

use crate::Failure;
use machine::state::State;
use monitor::plugin::Monitor;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the server thread serves.
#[derive(Default)]
struct Shared {
    text: String,
    /// The run is over and `text` is its final state.
    last: bool,
    /// A response with the final state was written out (not only taken: the process may
    /// end as soon as this is set, and a response cut there reached a scraper truncated).
    last_served: bool,
}

/// The endpoint of a run.
pub struct Endpoint {
    shared: Arc<Mutex<Shared>>,
    pub interval: u64,
    linger: Duration,
}

/// Latency histogram buckets (processor cycles): 16, 32, ..., 65,536, then +Inf.
const BUCKETS: std::ops::RangeInclusive<u32> = 4..=16;

impl Endpoint {
    /// Listens on `addr` (refused with exit 2, before any simulation, if it cannot).
    pub fn start(addr: &str, interval: u64, linger_secs: u64) -> Result<Endpoint, Failure> {
        let server = tiny_http::Server::http(addr)
            .map_err(|e| Failure::input(format!("--serve {addr}: cannot listen there: {e}")))?;
        let shared = Arc::new(Mutex::new(Shared::default()));
        let s = shared.clone();
        std::thread::spawn(move || {
            for req in server.incoming_requests() {
                let (body, status, last) = if req.url() == "/metrics" {
                    let g = s.lock().unwrap();
                    (g.text.clone(), 200, g.last)
                } else {
                    (
                        "pmusim: the metrics are at /metrics\n".to_string(),
                        404,
                        false,
                    )
                };
                let ct = tiny_http::Header::from_bytes(
                    &b"Content-Type"[..],
                    &b"text/plain; version=0.0.4; charset=utf-8"[..],
                )
                .expect("a valid header");
                let _ = req.respond(
                    tiny_http::Response::from_string(body)
                        .with_status_code(status)
                        .with_header(ct),
                );
                // Only now may `finish` let the process end.
                s.lock().unwrap().last_served |= last;
            }
        });
        eprintln!("pmusim: metrics at http://{addr}/metrics");
        Ok(Endpoint {
            shared,
            interval,
            linger: Duration::from_secs(linger_secs),
        })
    }

    /// Publishes the state at `cycle`.
    pub fn publish(&self, st: &State, cycle: u64, mons: &mut [Box<dyn Monitor>]) {
        let text = render(st, cycle, mons);
        self.shared.lock().unwrap().text = text;
    }

    /// Publishes the final state, then keeps answering until it has been scraped once or
    /// `--serve-linger` seconds have passed.
    pub fn finish(&self, st: &State, cycle: u64, mons: &mut [Box<dyn Monitor>]) {
        let text = render(st, cycle, mons);
        {
            let mut g = self.shared.lock().unwrap();
            g.text = text;
            g.last = true;
        }
        let end = Instant::now() + self.linger;
        while Instant::now() < end && !self.shared.lock().unwrap().last_served {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// The metrics text of the machine's state at `cycle`, with the attached monitors' counters.
pub fn render(st: &State, cycle: u64, mons: &mut [Box<dyn Monitor>]) -> String {
    let mut out = String::new();
    family(
        &mut out,
        "pmusim_simulated_processor_cycles_total",
        "counter",
        "Processor cycles simulated so far (the run's clock).",
    );
    let _ = writeln!(out, "pmusim_simulated_processor_cycles_total {cycle}");
    let refs: u64 = st.cores.iter().map(|c| c.cnt.refs).sum();
    family(
        &mut out,
        "pmusim_references_total",
        "counter",
        "Data references simulated so far, every processor.",
    );
    let _ = writeln!(out, "pmusim_references_total {refs}");
    type Get = fn(&machine::cpu::Counters) -> u64;
    let per: [(&str, &str, Get); 9] = [
        ("instructions", "Instructions retired.", |c| {
            c.instructions()
        }),
        ("processor_cycles", "The processor's own cycles.", |c| {
            c.cycles()
        }),
        ("references", "Data references (loads and stores).", |c| {
            c.refs
        }),
        ("l1d_misses", "L1 data cache misses.", |c| c.l1d_misses),
        ("l1i_misses", "L1 instruction cache misses.", |c| {
            c.l1i_misses
        }),
        ("l2_hits", "L2 hits.", |c| c.l2_hits),
        ("l2_misses", "L2 misses (memory transactions).", |c| {
            c.l2_misses
        }),
        ("nacks", "Negative acknowledgements received.", |c| c.nacks),
        ("interrupts", "Interrupts taken.", |c| c.interrupts),
    ];
    for (name, help, get) in per {
        let n = format!("pmusim_processor_{name}_total");
        family(&mut out, &n, "counter", &format!("{help} Per processor."));
        for (p, c) in st.cores.iter().enumerate() {
            let _ = writeln!(out, "{n}{{processor=\"{p}\"}} {}", get(&c.cnt));
        }
    }
    if let Some(gt) = &st.truth {
        let n = "pmusim_miss_latency_processor_cycles";
        family(
            &mut out,
            n,
            "histogram",
            "Latency of L2 misses from issue to data, processor cycles, by kind.",
        );
        let kinds = ["read_local", "read_remote", "write_local", "write_remote"];
        for (h, kind) in gt.latency.iter().zip(kinds) {
            let mut below = vec![0u64; (*BUCKETS.end() - *BUCKETS.start() + 1) as usize];
            for (v, c) in h.iter() {
                for (i, k) in BUCKETS.enumerate() {
                    if v <= 1 << k {
                        below[i] += c;
                    }
                }
            }
            for (i, k) in BUCKETS.enumerate() {
                let _ = writeln!(
                    out,
                    "{n}_bucket{{kind=\"{kind}\",le=\"{}\"}} {}",
                    1u64 << k,
                    below[i]
                );
            }
            let _ = writeln!(out, "{n}_bucket{{kind=\"{kind}\",le=\"+Inf\"}} {}", h.n);
            let _ = writeln!(out, "{n}_sum{{kind=\"{kind}\"}} {}", h.sum());
            let _ = writeln!(out, "{n}_count{{kind=\"{kind}\"}} {}", h.n);
        }
    }
    monitors(&mut out, st, mons);
    out.push_str("# EOF\n");
    out
}

/// Every attached monitor's hardware counters as they stand (`Counting::samples`): one series
/// per counter, labelled by monitor, event (what it is programmed to count), processor (`cpu`)
/// or unit, and counter number (one event may be on several counters, e.g. per thread).
fn monitors(out: &mut String, st: &State, mons: &mut [Box<dyn Monitor>]) {
    let n = "pmusim_monitor_events_total";
    let mut header = false;
    for m in mons.iter_mut() {
        let name = m.name();
        let Some(c) = m.counting() else { continue };
        for s in c.samples_in(st) {
            if !header {
                family(
                    out,
                    n,
                    "counter",
                    "A monitor's hardware counter as it stands (monitored, not exact): events counted since it was programmed.",
                );
                header = true;
            }
            let place = match s.cpu {
                Some(p) => format!("cpu=\"{p}\""),
                None => format!("unit=\"{}\"", escape(&s.unit)),
            };
            let _ = writeln!(
                out,
                "{n}{{monitor=\"{name}\",event=\"{}\",{place},counter=\"{}\"}} {}",
                escape(&s.event),
                s.counter,
                s.value
            );
        }
    }
}

/// A label value in the text format: backslash, double quote and newline escaped.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
