//! `pmusim sweep collect DIR [-o FILE] [--json]`: one row per planned run, its axis values and
//! the metrics read from its result, plus the runs that are missing or failed.

use super::run::{failed_path, manifest, result_path};
use super::CollectArgs;
use crate::Failure;
use serde_json::{json, Value as Json};

/// A JSON pointer into a run's document, where a `*` segment sums the numbers found under
/// every element of an array (or every value of an object): `/ground_truth/processors/*/l2/misses`
/// is the machine's L2 misses.
pub fn lookup(doc: &Json, pointer: &str) -> Option<Json> {
    match pointer.split_once("/*") {
        None => doc.pointer(pointer).cloned(),
        Some((head, rest)) => {
            let parts: Vec<&Json> = match doc.pointer(head)? {
                Json::Array(a) => a.iter().collect(),
                Json::Object(o) => o.values().collect(),
                _ => return None,
            };
            let vals: Vec<Json> = parts.iter().filter_map(|p| lookup(p, rest)).collect();
            if vals.iter().all(|v| v.is_u64()) {
                Some(json!(vals.iter().map(|v| v.as_u64().unwrap()).sum::<u64>()))
            } else {
                let f: Option<f64> = vals.iter().map(|v| v.as_f64()).sum();
                f.map(|x| json!(x))
            }
        }
    }
}

fn cell(v: &Json) -> String {
    match v {
        Json::Null => String::new(),
        Json::String(s) => s.clone(),
        x => x.to_string(),
    }
}

pub fn collect(a: CollectArgs) -> Result<u8, Failure> {
    let dir = &a.dir;
    let entries = manifest(dir)?;
    let pp = dir.join("plan.json");
    let plan: Json = std::fs::read_to_string(&pp)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .ok_or_else(|| Failure::input(format!("cannot read {}", pp.display())))?;
    let axes: Vec<String> = plan["axes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    let metrics: Vec<(String, String)> = plan["metrics"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| Some((m[0].as_str()?.to_string(), m[1].as_str()?.to_string())))
        .collect();
    let mut header = vec!["index".to_string(), "hash".into()];
    header.extend(axes.iter().cloned());
    header.push("status".into());
    header.extend(metrics.iter().map(|(n, _)| n.clone()));
    let (mut rows, mut missing, mut failed) = (Vec::new(), Vec::new(), Vec::new());
    let mut absent = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let mut row = serde_json::Map::new();
        row.insert("index".into(), json!(i));
        row.insert("hash".into(), json!(e.hash));
        for ax in &axes {
            row.insert(ax.clone(), e.axes.get(ax).cloned().unwrap_or(Json::Null));
        }
        let rp = result_path(dir, &e.hash);
        let doc = std::fs::read_to_string(&rp)
            .ok()
            .and_then(|t| serde_json::from_str::<Json>(&t).ok());
        let status = match &doc {
            Some(_) => "ok",
            None if failed_path(dir, &e.hash).exists() => {
                failed.push(json!({"index": i, "hash": e.hash, "log": failed_path(dir, &e.hash).display().to_string()}));
                "failed"
            }
            None => {
                missing.push(json!({"index": i, "hash": e.hash}));
                "missing"
            }
        };
        row.insert("status".into(), json!(status));
        for (n, p) in &metrics {
            let v = doc.as_ref().map_or(Json::Null, |d| {
                lookup(d, p).unwrap_or_else(|| {
                    absent.push(format!("entry {i}: metric `{n}`: {p} is not in the result"));
                    Json::Null
                })
            });
            row.insert(n.clone(), v);
        }
        rows.push(row);
    }
    let out = if a.json {
        let doc = json!({"columns": header, "rows": rows, "missing": missing, "failed": failed});
        serde_json::to_string_pretty(&doc).unwrap() + "\n"
    } else {
        let mut w = csv::Writer::from_writer(Vec::new());
        w.write_record(&header).unwrap();
        for r in &rows {
            w.write_record(header.iter().map(|h| cell(&r[h]))).unwrap();
        }
        String::from_utf8(w.into_inner().unwrap()).unwrap()
    };
    match &a.out {
        Some(p) => super::plan::write_atomic(p, out.as_bytes())
            .map_err(|e| Failure::input(format!("cannot write {}: {e}", p.display())))?,
        None => print!("{out}"),
    }
    for m in absent.iter().take(10) {
        eprintln!("pmusim: warning: {m}");
    }
    eprintln!(
        "sweep collect: {} runs: {} ok, {} missing, {} failed",
        entries.len(),
        entries.len() - missing.len() - failed.len(),
        missing.len(),
        failed.len()
    );
    for f in &failed {
        eprintln!(
            "  failed: entry {} ({})",
            f["index"],
            f["log"].as_str().unwrap()
        );
    }
    for m in &missing {
        eprintln!(
            "  missing: entry {} ({})",
            m["index"],
            m["hash"].as_str().unwrap()
        );
    }
    Ok(0)
}
