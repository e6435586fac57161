//! The POWER2 monitor restricted to one process, both ways (issue 15 item 2): by hardware
//! marking (the process's MSR[PM], saved and restored by the operating system with its
//! state, and the MMCR's MARKED bit) and by counter virtualization at context switch (the
//! operating system reads the 22 counters at every switch and keeps per-thread totals, the
//! way `perf_event_open` counts one task, `monitor::virt`). Each beside the process's exact
//! counts from the ground truth, and each one's cost per context switch, measured.
//!
//! `pmusim study marking` runs the same multiprogrammed workload three times on the
//! `power2` preset with the operating system on (`[os]` defaults, the TLB on): unrestricted,
//! marked, and virtualized, so the switch paths' cycles can be compared run against run;
//! and a fourth time with the marked process alone, for the interference it suffers
//! multiprogrammed (issue 15's figure: its cache misses, TLB misses and cycles both ways).
//! Marking costs nothing at a switch: the MSR is one of the words every switch saves and
//! restores anyway. Virtualization adds the switch path's `[os] virtual_counters` = 22
//! uncached reads and the per-thread totals' loads and stores.
//!
//! The library part ([`Spec`], [`run`], [`process_exact`]) also serves the marked-process
//! matrix (`matrix`) and the interference report.

use super::events::{counter_of, Sig, COUNTERS};
use super::regs::{Mmcr, MARKED, NOPROB, NOSUP};
use super::{Power2Monitor, Setup};
use crate::plugin::{Error, Shared, StudyArgs};
use machine::state::State;
use machine::{Machine, Options, Preset};
use report::model::{Cell, Clock, Column, Report, Section, Table, Unit as RUnit};
use std::cell::RefCell;
use std::rc::Rc;

/// Counting restricted by MSR[PR]: what a mode's exact count sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Part {
    All,
    User,
    Supervisor,
}

impl Part {
    pub const ALL: [Part; 3] = [Part::All, Part::User, Part::Supervisor];
    pub fn name(self) -> &'static str {
        match self {
            Part::All => "all",
            Part::User => "user",
            Part::Supervisor => "supervisor",
        }
    }
    /// The MMCR's mode bits for this part (PAPI's `set_mmcr_domain` positions).
    pub fn bits(self) -> u32 {
        match self {
            Part::All => 0,
            Part::User => NOSUP,
            Part::Supervisor => NOPROB,
        }
    }
}

/// The MMCR selecting group `g` in every unit, counting `part`, only the marked process if
/// `marked`.
pub fn mmcr(g: u8, part: Part, marked: bool) -> Mmcr {
    let sel = (g as u32 & 0xF) * 0x1111;
    Mmcr(sel | part.bits() | if marked { MARKED } else { 0 })
}

/// A multiprogrammed run of the `power2` preset under the operating system.
#[derive(Clone, Debug)]
pub struct Spec {
    /// One process per entry (a repeated kernel's process is numbered: `fft.2`).
    pub kernels: Vec<String>,
    pub size: workload::Size,
    /// Processors.
    pub procs: usize,
    /// Threads per process.
    pub threads: usize,
    /// The process marked from the start (`--mark`), by name.
    pub mark: Option<String>,
    /// The process the monitors are also restricted to by counter virtualization.
    pub virtualize: Option<String>,
    /// One POWER2 monitor per setup (they only observe, so any number share one run).
    pub setups: Vec<Setup>,
    pub tlb: bool,
}

/// The processes' names: the kernels', a repeated one numbered (`fft`, `fft.2`), as
/// `pmusim run a+b` names them.
pub fn names(kernels: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, k) in kernels.iter().enumerate() {
        let n = kernels[..i].iter().filter(|x| *x == k).count();
        out.push(if n == 0 {
            k.clone()
        } else {
            format!("{k}.{}", n + 1)
        });
    }
    out
}

/// A finished run: the machine (its ground truth) and its monitors.
pub struct Done {
    pub m: Machine,
    pub mons: Vec<Rc<RefCell<Power2Monitor>>>,
    pub names: Vec<String>,
    /// Processor cycles of the run.
    pub cycles: u64,
}

impl Done {
    pub fn state(&self) -> &State {
        self.m.state()
    }
    /// Process number of `name`.
    pub fn pid(&self, name: &str) -> Option<u16> {
        self.names.iter().position(|n| n == name).map(|p| p as u16)
    }
    /// Monitor `k`'s counter `i` summed over the processors.
    pub fn total(&self, k: usize, i: usize) -> u64 {
        let mon = self.mons[k].borrow();
        mon.pmus.iter().map(|p| p.value(i)).sum()
    }
    /// Context switches and the switch paths' processor cycles, with the virtualization
    /// part's.
    pub fn switch_cost(&self) -> (u64, u64, u64) {
        let s = &self.state().os.as_ref().expect("an operating system").stats;
        (s.switches, s.switch_cycles, s.virt_cycles)
    }
}

/// Runs `spec`; every process's result must verify.
pub fn run(spec: &Spec) -> Result<Done, Error> {
    let mut preset = Preset::builtin("power2")
        .and_then(|p| p.with_procs(spec.procs))
        .map_err(|e| Error::input(e.0))?;
    preset.cpu.tlb.enabled |= spec.tlb;
    let mut os = preset.os.clone().unwrap_or_default();
    if spec.virtualize.is_some() {
        os.virtual_counters = COUNTERS as u64;
    }
    preset.os = Some(os);
    let cycle = preset
        .clocks_built()
        .map_err(|e| Error::input(e.0))?
        .get("cpu")
        .ok_or_else(|| Error::input("power2: no cpu clock"))?
        .period;
    let mut m = Machine::new(preset, Options::default()).map_err(|e| Error::input(e.0))?;
    let names = names(&spec.kernels);
    for n in spec.mark.iter().chain(&spec.virtualize) {
        if !names.contains(n) {
            return Err(Error::input(format!(
                "process `{n}`: no such process (processes: {})",
                names.join(", ")
            )));
        }
    }
    let mut installed = Vec::new();
    for (k, name) in spec.kernels.iter().zip(&names) {
        let w = workload::find(k, spec.size).map_err(Error::input)?;
        let pid = m
            .new_process(name, spec.mark.as_deref() == Some(name.as_str()))
            .map_err(Error::input)?;
        let w = workload::install_process(w, &mut m, pid, spec.threads)
            .map_err(|e| Error::input(format!("process `{name}`: {e}")))?;
        installed.push(w);
    }
    let mut mons = Vec::new();
    for s in &spec.setups {
        let mut mon = Power2Monitor::new(&m.state().preset, *s).map_err(Error::input)?;
        if let Some(v) = &spec.virtualize {
            mon.virtualize(crate::virt::Virtualizer::new(&m, v, COUNTERS)?);
        }
        let (probe, handle) = Shared::new(mon);
        m.attach(Box::new(probe));
        mons.push(handle);
    }
    let r = m.run(None).map_err(|e| Error::sim(e.to_string()))?;
    for (w, name) in installed.iter().zip(&names) {
        let v = w.verify();
        if !v.verified {
            return Err(Error::sim(format!(
                "process `{name}`: wrong result on power2: {}",
                v.detail
            )));
        }
    }
    Ok(Done {
        m,
        mons,
        names,
        cycles: r.ticks / cycle,
    })
}

/// The exact count of `sig` for process `pid` in `part` (its threads' counts, split by
/// MSR[PR] at every change), if the ground truth has one. `imr`: the IMR, for `imr-match`.
pub fn process_exact(
    st: &State,
    pid: u16,
    sig: Sig,
    imr: super::regs::Imr,
    part: Part,
) -> Option<u64> {
    let of = |c: &machine::cpu::Counters| sig.exact_with_imr(imr, c);
    let mut sum = 0;
    for th in st.sched.threads.iter().filter(|t| t.present) {
        if th.process != pid {
            continue;
        }
        sum += match part {
            Part::All => of(&th.cnt)?,
            Part::User => of(&th.mode[0])?,
            Part::Supervisor => of(&th.mode[1])?,
        };
    }
    Some(sum)
}

/// One counter both ways: (event, unit and number, marked count, virtualized count, exact
/// in the marked run, exact in the virtualized run).
pub type Row = (Sig, String, u64, u64, Option<u64>, Option<u64>);

/// What `pmusim study marking` measured.
pub struct Outcome {
    pub spec: Spec,
    pub target: String,
    /// Per counter, both ways.
    pub rows: Vec<Row>,
    /// Per way (none, marking, virtualization): switches, switch cycles, virtualization
    /// cycles, run cycles, the target's exact cycles.
    pub cost: Vec<(&'static str, u64, u64, u64, u64, u64)>,
    /// Interference: per event of `INTERFERENCE` the configuration counts, the marked
    /// process run alone (marked count, exact) and in the multiprogrammed run (marked, exact).
    pub interference: Vec<(Sig, u64, u64, u64, u64)>,
}

/// The events of the interference table (issue 15: cache misses, TLB misses, cycles).
pub const INTERFERENCE: [Sig; 8] = [
    Sig::CYCLES,
    Sig::INSTR,
    Sig::L1D_MISS,
    Sig::L1I_MISS,
    Sig::MEM_TX,
    Sig::DTLB_MISS,
    Sig::ITLB_MISS,
    Sig::DMISS_CYCLES,
];

/// Runs the three runs of the study.
pub fn measure(spec: &Spec, target: &str) -> Result<Outcome, Error> {
    let setup = spec.setups[0];
    let plain = Spec {
        mark: None,
        virtualize: None,
        setups: vec![setup],
        ..spec.clone()
    };
    let marked = Spec {
        mark: Some(target.to_string()),
        virtualize: None,
        setups: vec![Setup {
            mmcr: Mmcr(setup.mmcr.0 | MARKED),
            ..setup
        }],
        ..spec.clone()
    };
    let virt = Spec {
        mark: None,
        virtualize: Some(target.to_string()),
        setups: vec![Setup {
            mmcr: Mmcr(setup.mmcr.0 & !MARKED),
            ..setup
        }],
        ..spec.clone()
    };
    let a = run(&plain)?;
    let b = run(&marked)?;
    let c = run(&virt)?;
    // The marked process alone: its kernel as the only process, marked the same way.
    let k = spec
        .kernels
        .iter()
        .zip(names(&spec.kernels))
        .find(|(_, n)| n == target)
        .map(|(k, _)| k.clone())
        .ok_or_else(|| Error::input(format!("no process `{target}`")))?;
    let alone = run(&Spec {
        kernels: vec![k.clone()],
        mark: Some(k.clone()),
        ..marked.clone()
    })?;
    let pid = b
        .pid(target)
        .ok_or_else(|| Error::input(format!("no process `{target}`")))?;
    let part = match setup.mmcr.mode() {
        super::regs::Mode::User => Part::User,
        super::regs::Mode::Supervisor => Part::Supervisor,
        _ => Part::All,
    };
    let sigs = setup.mmcr.signals();
    let vt = c.mons[0]
        .borrow()
        .virt
        .as_ref()
        .map(|v| v.process_totals())
        .unwrap_or_default();
    let mut rows = Vec::new();
    for (i, &s) in sigs.iter().enumerate() {
        let unit = match counter_of(i) {
            None => "shared".to_string(),
            Some((u, n)) => format!("{} {n}", u.name()),
        };
        rows.push((
            s,
            unit,
            b.total(0, i),
            vt.get(i).copied().unwrap_or(0),
            process_exact(b.state(), pid, s, setup.imr, part),
            process_exact(c.state(), pid, s, setup.imr, part),
        ));
    }
    let cost = [("none", &a), ("marking", &b), ("virtualization", &c)]
        .into_iter()
        .map(|(way, d)| {
            let (n, sw, v) = d.switch_cost();
            let tc = process_exact(d.state(), pid, Sig::CYCLES, setup.imr, Part::All).unwrap_or(0);
            (way, n, sw, v, d.cycles, tc)
        })
        .collect();
    let msigs = marked.setups[0].mmcr.signals();
    let interference = INTERFERENCE
        .iter()
        .filter_map(|&s| {
            let i = msigs.iter().position(|&x| x == s)?;
            Some((
                s,
                alone.total(0, i),
                process_exact(alone.state(), 0, s, setup.imr, part)?,
                b.total(0, i),
                process_exact(b.state(), pid, s, setup.imr, part)?,
            ))
        })
        .collect();
    Ok(Outcome {
        spec: spec.clone(),
        target: target.to_string(),
        rows,
        cost,
        interference,
    })
}

fn est(v: u64, e: Option<u64>) -> Cell {
    match e {
        Some(e) => Cell::estimate(v, e),
        None => Cell::Int(v),
    }
}

/// The report: the counts both ways beside the exact ones, and the costs.
pub fn section(o: &Outcome) -> Section {
    let mut s = Section::new(&format!(
        "POWER2 monitor restricted to process {}: marking and counter virtualization",
        o.target
    ));
    s.text(format!(
        "processes {} ({} thread(s) each, size {}) on {} power2 processor(s) under the operating system, TLB {}; MMCR groups as configured: {:#010x}",
        names(&o.spec.kernels).join(", "),
        o.spec.threads,
        o.spec.size.name(),
        o.spec.procs,
        if o.spec.tlb { "on" } else { "off" },
        o.spec.setups[0].mmcr.0 & !MARKED
    ));
    s.text(
        "marking: the process's MSR[PM] set (--mark), saved and restored by the OS with its state; the MMCR's MARKED bit. \
         virtualization: the counters run free; the OS's switch path reads all 22 and keeps per-thread totals (perf_event_open)."
            .to_string(),
    );
    let mut t = Table::new(
        "power2_marking",
        &format!(
            "Process {} alone, by marking and by virtualization",
            o.target
        ),
        vec![
            Column::label("counter"),
            Column::label("unit, number"),
            Column::label("event"),
            Column::estimate("marked", RUnit::Count, 0),
            Column::estimate("virtualized", RUnit::Count, 0),
        ],
    );
    for (i, (sg, unit, m, v, em, ev)) in o.rows.iter().enumerate() {
        t.row(vec![
            Cell::text(format!("PMC{i}")),
            Cell::text(unit.clone()),
            Cell::text(sg.name()),
            est(*m, *em),
            est(*v, *ev),
        ]);
    }
    t.set_note(
        "each count beside the process's exact count in the same run (the two runs differ: virtualization lengthens every switch)"
            .to_string(),
    );
    s.table(t);
    let mut c = Table::new(
        "power2_restriction_cost",
        "Cost of each way, per context switch",
        vec![
            Column::label("way"),
            Column::count("switches"),
            Column::cycles("cycles / switch", Clock::Processor, 1),
            Column::cycles("of which virtualization", Clock::Processor, 1),
            Column::cycles("run", Clock::Processor, 0),
            Column::cycles("target's cycles", Clock::Processor, 0),
        ],
    );
    for &(way, n, sw, v, cy, tc) in &o.cost {
        c.row(vec![
            Cell::text(way),
            Cell::Int(n),
            Cell::ratio(sw, n),
            Cell::ratio(v, n),
            Cell::Int(cy),
            Cell::Int(tc),
        ]);
    }
    c.set_note(
        "cycles / switch: the switch path from exception entry to return (its stalls included); the MSR is saved and restored by every switch, so marking adds nothing"
            .to_string(),
    );
    s.table(c);
    let mut f = Table::new(
        "power2_interference",
        &format!(
            "Interference: process {} alone and multiprogrammed, as its marked counters saw it",
            o.target
        ),
        vec![
            Column::label("event"),
            Column::estimate("alone", RUnit::Count, 0),
            Column::estimate("multiprogrammed", RUnit::Count, 0),
            Column::ratio("multiprogrammed / alone", "alone", 3),
        ],
    );
    for &(sg, a, ae, m, me) in &o.interference {
        f.row(vec![
            Cell::text(sg.name()),
            Cell::estimate(a, ae),
            Cell::estimate(m, me),
            Cell::ratio(m, a),
        ]);
    }
    f.set_note(
        "alone: the same kernel as the only process under the operating system on the same processors, marked; the difference is what the other processes and the switches between them cost it (cache and TLB contents lost, the switch path's own work)"
            .to_string(),
    );
    s.table(f);
    s
}

/// The study's spec from its arguments: `--kernels` (default fft,radix,lu), the first
/// `--procs` (default 1), `--size`; the target is the first process.
pub fn spec_of(a: &StudyArgs) -> Result<(Spec, String), Error> {
    let size = workload::Size::parse(if a.size.is_empty() { "test" } else { &a.size })
        .map_err(Error::input)?;
    let kernels: Vec<String> = if a.kernels.is_empty() {
        ["fft", "radix", "lu"].map(String::from).to_vec()
    } else {
        a.kernels.clone()
    };
    for k in &kernels {
        workload::find(k, size)
            .map_err(|e| Error::input(format!("study marking: --kernels: {e}")))?;
    }
    let procs = a.procs.first().copied().unwrap_or(1);
    if !(1..=64).contains(&procs) {
        return Err(Error::input(format!(
            "study marking: --procs {procs}: 1 to 64 processors"
        )));
    }
    let target = names(&kernels)[0].clone();
    Ok((
        Spec {
            kernels,
            size,
            procs,
            threads: 1,
            mark: None,
            virtualize: None,
            setups: vec![Setup::default()],
            tlb: true,
        },
        target,
    ))
}

/// `pmusim study marking`.
pub fn study(a: &StudyArgs) -> Result<(String, u8), Error> {
    let (spec, target) = spec_of(a)?;
    let o = measure(&spec, &target)?;
    render(vec![section(&o)], a.json)
}

/// Text, or the typed sections as JSON.
pub fn render(sections: Vec<Section>, json: bool) -> Result<(String, u8), Error> {
    let out = if json {
        serde_json::to_string_pretty(&sections).map_err(|e| Error::sim(e.to_string()))? + "\n"
    } else {
        report::render::text::render(&Report { sections })
    };
    Ok((out, 0))
}
