//! The c2c view as a plug-in: its JSON section (`monitors.c2c`) and its typed report section,
//! built from the JSON so that text, CSV and JSON hold the same numbers.

use super::{C2c, Line, Verdict, NAME, WORD};
use crate::plugin::{Entry, Error, Monitor, Restrict, Shared};
use machine::Machine;
use report::model::{Cell, Column, Section, Table};
use serde_json::{json, Value};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

pub const ENTRY: Entry = Entry {
    name: NAME,
    description: "cache-line sharing view like perf c2c: the lines with the most coherence misses, who read and wrote which words, HITM, true or false sharing, by data structure and procedure (exact, not a hardware monitor)",
    seed: "issue 17 item 5 (perf c2c)",
    flags: &[],
    study: false,
    new: || Box::new(Plugin::default()),
};

/// Lines listed in the JSON section (every line's misses are in the totals).
pub const JSON_LINES: usize = 100;

#[derive(Default)]
pub struct Plugin {
    probe: Option<Rc<RefCell<C2c>>>,
    /// `--monitor-process NAME`, and after `attach` its number.
    process: Option<(String, u16)>,
    restrict: Option<String>,
}

impl Monitor for Plugin {
    fn name(&self) -> &'static str {
        NAME
    }

    /// `--monitor-process NAME`: c2c is an exact analysis, not hardware, and every event
    /// it reads carries its request's process (`Origin::process`), so it keeps the
    /// process's events, as `perf c2c record -p PID` keeps the samples of the pid (they
    /// carry it too). Any `--restrict-by` gives the same counts (none costs anything).
    fn restrict(&mut self, process: &str, by: Option<Restrict>) -> Result<Restrict, Error> {
        self.restrict = Some(process.to_string());
        Ok(by.unwrap_or(Restrict::Virtualization))
    }

    fn adjust_preset(&mut self, p: &mut machine::Preset) -> Result<(), Error> {
        match &self.restrict {
            Some(name) if p.os.is_none() => Err(Error::input(format!(
                "--monitor-process {name}: restricting a monitor to a process needs processes (a multiprogrammed run a+b, --os, or an [os] preset section)"
            ))),
            _ => Ok(()),
        }
    }

    fn attach(&mut self, m: &mut Machine) -> Result<(), Error> {
        let mut p = C2c::new(m.state().preset.line_bytes(), m.state().cores.len());
        if let Some(name) = &self.restrict {
            let procs = m
                .state()
                .os
                .as_ref()
                .map(|os| &os.processes[..])
                .unwrap_or(&[]);
            let Some(pid) = procs.iter().position(|p| &p.name == name) else {
                return Err(Error::input(format!(
                    "--monitor-process {name}: no such process (the processes: {})",
                    procs
                        .iter()
                        .map(|p| p.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            };
            p.only = Some(pid as u16);
            self.process = Some((name.clone(), pid as u16));
        }
        let (probe, handle) = Shared::new(p);
        m.attach(Box::new(probe));
        self.probe = Some(handle);
        Ok(())
    }

    fn json(&self, m: &Machine) -> Option<Value> {
        let mut v = json_section(m, &self.probe.as_ref()?.borrow());
        if let Some((name, pid)) = &self.process {
            // The process's coherence misses beside the ground truth's (by the requests'
            // Origin::process).
            let exact = m
                .state()
                .truth
                .as_ref()
                .and_then(|gt| gt.per_process.get(*pid as usize))
                .map(|s| s.coherence);
            v["process"] = json!({
                "name": name,
                "coherence_misses": u(&v["totals"]["coherence_read"]) + u(&v["totals"]["coherence_write"]),
                "exact_coherence_misses": exact,
            });
        }
        Some(v)
    }

    fn section(&self, _m: &Machine, json: &Value, top: usize) -> Option<Section> {
        self.probe.as_ref()?;
        Some(section(json, top))
    }
}

/// Word indices of a mask, as runs: "0-3,6".
fn runs(mask: u64) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < 64 {
        if mask >> i & 1 == 1 {
            let s = i;
            while i + 1 < 64 && mask >> (i + 1) & 1 == 1 {
                i += 1;
            }
            out.push(if s == i {
                s.to_string()
            } else {
                format!("{s}-{i}")
            });
        }
        i += 1;
    }
    out.join(",")
}

fn words(mask: u64) -> Vec<u64> {
    (0..64).filter(|i| mask >> i & 1 == 1).collect()
}

/// The lines with coherence misses or HITM, most coherence misses first (then HITM, then
/// address).
fn ranked(c: &C2c) -> Vec<(u64, &Line)> {
    let mut v: Vec<(u64, &Line)> = c
        .lines
        .iter()
        .filter(|(_, l)| l.coherence_misses() + l.hitm[0] + l.hitm[1] > 0)
        .map(|(a, l)| (*a, l))
        .collect();
    v.sort_by(|a, b| {
        b.1.coherence_misses()
            .cmp(&a.1.coherence_misses())
            .then((b.1.hitm[0] + b.1.hitm[1]).cmp(&(a.1.hitm[0] + a.1.hitm[1])))
            .then(a.0.cmp(&b.0))
    });
    v
}

/// The JSON section: totals, the top lines, by data structure and by procedure.
pub fn json_section(m: &Machine, c: &C2c) -> Value {
    let st = m.state();
    let shift = c.line_shift;
    let name = |line: u64| {
        st.map
            .name_of(st.map.structure_of(line << shift))
            .to_string()
    };
    let lines = ranked(c);
    let mut structs: BTreeMap<String, [u64; 5]> = BTreeMap::new();
    let mut tot = [0u64; 7];
    for (a, l) in &lines {
        let v = l.verdict();
        let s = structs.entry(name(*a)).or_default();
        let add = [
            1,
            l.coherence_misses(),
            l.hitm[0] + l.hitm[1],
            (v == Verdict::TrueSharing) as u64,
            (v == Verdict::FalseSharing) as u64,
        ];
        for (x, y) in s.iter_mut().zip(add) {
            *x += y;
        }
        for (x, y) in tot.iter_mut().zip([
            l.coherence[0],
            l.coherence[1],
            l.hitm[0],
            l.hitm[1],
            1,
            add[3],
            add[4],
        ]) {
            *x += y;
        }
    }
    let line_json = |(a, l): &(u64, &Line)| {
        let mut users = l.users.clone();
        users.sort_by_key(|u| u.proc);
        json!({
            "address": format!("{:#x}", a << shift),
            "structure": name(*a),
            "verdict": l.verdict().name(),
            "coherence_read": l.coherence[0],
            "coherence_write": l.coherence[1],
            "hitm_read": l.hitm[0],
            "hitm_write": l.hitm[1],
            "processors": users.iter().map(|u| json!({
                "proc": u.proc,
                "l1_read_misses": u.misses[0],
                "l1_write_misses": u.misses[1],
                "read_words": words(u.words[0]),
                "write_words": words(u.words[1]),
                "coherence_misses": u.coherence,
                "hitm": u.hitm,
            })).collect::<Vec<_>>(),
        })
    };
    let mut by_struct: Vec<(&String, &[u64; 5])> = structs.iter().collect();
    by_struct.sort_by(|a, b| b.1[1].cmp(&a.1[1]).then(a.0.cmp(b.0)));
    let procs = procedure_rows(&st.procedures, &c.procedures);
    json!({
        "line_bytes": c.line_bytes(),
        "word_bytes": WORD,
        "totals": {
            "coherence_read": tot[0],
            "coherence_write": tot[1],
            "hitm_read": tot[2],
            "hitm_write": tot[3],
            "lines": tot[4],
            "true_sharing_lines": tot[5],
            "false_sharing_lines": tot[6],
        },
        "lines": lines.iter().take(JSON_LINES).map(line_json).collect::<Vec<_>>(),
        "structures": by_struct.iter().map(|(n, v)| json!({
            "name": n,
            "lines": v[0],
            "coherence_misses": v[1],
            "hitm": v[2],
            "true_sharing_lines": v[3],
            "false_sharing_lines": v[4],
        })).collect::<Vec<_>>(),
        "procedures": procs.iter().map(|(n, v)| json!({
            "name": n,
            "coherence_misses": v[0],
            "hitm": v[1],
        })).collect::<Vec<_>>(),
    })
}

/// The procedures' rows, most coherence misses first, then by name: the counts of ids of one
/// name merged (a traced run names its code blocks by function after the run,
/// `workload::trace::replay::name_procedures`, so several ids can carry one name; the base
/// report merges them too). Unmerged, two rows of one name and count came out in the order of
/// `C2c::procedures`, a `HashMap` whose order changes from process to process (task det19).
fn procedure_rows(names: &[String], counts: &HashMap<u32, [u64; 2]>) -> Vec<(String, [u64; 2])> {
    let mut by_name: BTreeMap<String, [u64; 2]> = BTreeMap::new();
    for (p, v) in counts {
        let name = names
            .get(*p as usize)
            .cloned()
            .unwrap_or_else(|| format!("#{p}"));
        let e = by_name.entry(name).or_default();
        e[0] += v[0];
        e[1] += v[1];
    }
    let mut procs: Vec<(String, [u64; 2])> = by_name.into_iter().collect();
    procs.sort_by(|a, b| b.1[0].cmp(&a.1[0]).then(a.0.cmp(&b.0)));
    procs
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

fn mask(v: &Value) -> u64 {
    v.as_array()
        .map(|a| a.iter().fold(0, |m, w| m | 1 << (u(w) & 63)))
        .unwrap_or(0)
}

/// The typed section: the top lines, who touched which words on them, by structure and by
/// procedure.
pub fn section(j: &Value, top: usize) -> Section {
    let mut s = Section::new("c2c: cache-line sharing (perf c2c's view, exact)");
    let t = &j["totals"];
    s.text(format!(
        "{} lines with coherence misses or HITM: {} true sharing, {} false sharing; coherence misses {} read + {} write, HITM {} read + {} write ({}-byte lines, {}-byte words)",
        u(&t["lines"]),
        u(&t["true_sharing_lines"]),
        u(&t["false_sharing_lines"]),
        u(&t["coherence_read"]),
        u(&t["coherence_write"]),
        u(&t["hitm_read"]),
        u(&t["hitm_write"]),
        u(&j["line_bytes"]),
        u(&j["word_bytes"]),
    ));
    let p = &j["process"];
    if p.is_object() {
        s.text(format!(
            "process {} alone (the events of its requests, Origin::process, as perf c2c -p): {} coherence misses, exact {}",
            p["name"].as_str().unwrap_or(""),
            u(&p["coherence_misses"]),
            u(&p["exact_coherence_misses"]),
        ));
    }
    let empty = Vec::new();
    let lines = j["lines"].as_array().unwrap_or(&empty);
    let mut lt = Table::new(
        "c2c_lines",
        "Lines with the most coherence misses",
        vec![
            Column::label("line"),
            Column::label("structure"),
            Column::count("coherence read"),
            Column::count("coherence write"),
            Column::count("HITM read"),
            Column::count("HITM write"),
            Column::label("readers"),
            Column::label("writers"),
            Column::label("verdict"),
        ],
    );
    let mut ot = Table::new(
        "c2c_offsets",
        "Who touched which words of those lines (L1 misses)",
        vec![
            Column::label("line"),
            Column::label("proc"),
            Column::count("read misses"),
            Column::count("write misses"),
            Column::label("words read"),
            Column::label("words written"),
            Column::count("coherence misses"),
            Column::count("HITM"),
        ],
    );
    for l in lines.iter().take(top) {
        let empty = Vec::new();
        let users = l["processors"].as_array().unwrap_or(&empty);
        let who = |k: &str| {
            users
                .iter()
                .filter(|p| u(&p[k]) > 0)
                .map(|p| u(&p["proc"]).to_string())
                .collect::<Vec<_>>()
                .join(",")
        };
        let addr = l["address"].as_str().unwrap_or("?").to_string();
        lt.row(vec![
            Cell::text(addr.clone()),
            Cell::text(l["structure"].as_str().unwrap_or("?")),
            Cell::Int(u(&l["coherence_read"])),
            Cell::Int(u(&l["coherence_write"])),
            Cell::Int(u(&l["hitm_read"])),
            Cell::Int(u(&l["hitm_write"])),
            Cell::text(who("l1_read_misses")),
            Cell::text(who("l1_write_misses")),
            Cell::text(l["verdict"].as_str().unwrap_or("?")),
        ]);
        for p in users {
            ot.row(vec![
                Cell::text(addr.clone()),
                Cell::text(u(&p["proc"]).to_string()),
                Cell::Int(u(&p["l1_read_misses"])),
                Cell::Int(u(&p["l1_write_misses"])),
                Cell::text(runs(mask(&p["read_words"]))),
                Cell::text(runs(mask(&p["write_words"]))),
                Cell::Int(u(&p["coherence_misses"])),
                Cell::Int(u(&p["hitm"])),
            ]);
        }
    }
    lt.set_note(
        "HITM: the miss was served by another processor's dirty copy (an intervention). Verdict: true sharing when a word one processor wrote was touched by another; false sharing when processors touched only disjoint words, one writing",
    );
    ot.set_note("words: 8-byte words of the line seen by accesses that missed the L1 (hits are not observed)");
    s.table(lt);
    s.table(ot);
    let mut st = Table::new(
        "c2c_structures",
        "Coherence misses by data structure",
        vec![
            Column::label("structure"),
            Column::count("lines"),
            Column::count("coherence misses"),
            Column::count("HITM"),
            Column::count("true-sharing lines"),
            Column::count("false-sharing lines"),
        ],
    );
    for x in j["structures"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .take(top)
    {
        st.row(vec![
            Cell::text(x["name"].as_str().unwrap_or("?")),
            Cell::Int(u(&x["lines"])),
            Cell::Int(u(&x["coherence_misses"])),
            Cell::Int(u(&x["hitm"])),
            Cell::Int(u(&x["true_sharing_lines"])),
            Cell::Int(u(&x["false_sharing_lines"])),
        ]);
    }
    s.table(st);
    let mut pt = Table::new(
        "c2c_procedures",
        "Coherence misses by procedure",
        vec![
            Column::label("procedure"),
            Column::count("coherence misses"),
            Column::count("HITM"),
        ],
    );
    for x in j["procedures"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .take(top)
    {
        pt.row(vec![
            Cell::text(x["name"].as_str().unwrap_or("?")),
            Cell::Int(u(&x["coherence_misses"])),
            Cell::Int(u(&x["hitm"])),
        ]);
    }
    s.table(pt);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ids of one name (a trace's code blocks of one function) make one row, whatever the
    /// order of the map they come from: built here with insertions in opposite orders (and
    /// two maps' own random hash seeds). Before task det19 the two `f` rows came out in the
    /// map's order.
    #[test]
    fn procedure_rows_merge_one_name_in_any_map_order() {
        let names: Vec<String> = ["f", "g", "f", "h"].map(String::from).to_vec();
        let counts = [
            (0u32, [5, 1]),
            (1, [7, 0]),
            (2, [5, 2]),
            (3, [10, 4]),
            (9, [1, 1]),
        ];
        let a: HashMap<u32, [u64; 2]> = counts.iter().copied().collect();
        let b: HashMap<u32, [u64; 2]> = counts.iter().rev().copied().collect();
        let want: Vec<(String, [u64; 2])> = vec![
            ("f".into(), [10, 3]),
            ("h".into(), [10, 4]),
            ("g".into(), [7, 0]),
            ("#9".into(), [1, 1]),
        ];
        assert_eq!(procedure_rows(&names, &a), want);
        assert_eq!(procedure_rows(&names, &b), want);
    }

    #[test]
    fn word_runs() {
        assert_eq!(runs(0), "");
        assert_eq!(runs(0b1011_0001), "0,4-5,7");
        assert_eq!(runs(u64::MAX), "0-63");
    }
}
