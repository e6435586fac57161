//! CSV with the `csv` crate: one file per table, RFC 4180 quoting (commas, quotes and line
//! breaks), plain numbers (no separators, full precision), the unit in each header.

use super::is_estimate;
use crate::model::{Cell, Column, Kind, Num, Report, Table};
use std::path::{Path, PathBuf};

/// The header fields of one column: "name (unit)"; an estimate adds its exact value, the
/// absolute error (same unit) and the relative error (a fraction, empty when exact is 0).
fn header(c: &Column) -> Vec<String> {
    match &c.kind {
        Kind::Label => vec![c.name.clone()],
        Kind::Quantity(u) => vec![format!("{} ({})", c.name, u.label())],
        Kind::Estimate(u) => vec![
            format!("{} ({})", c.name, u.label()),
            format!("{} exact ({})", c.name, u.label()),
            format!("{} error ({})", c.name, u.label()),
            format!("{} relative error (fraction)", c.name),
        ],
    }
}

fn plain(v: Num) -> String {
    match v {
        Num::Int(i) => i.to_string(),
        Num::Float(f) if f.is_finite() => f.to_string(),
        Num::Float(_) => String::new(),
    }
}

fn fields(c: &Cell, col: &Column) -> Vec<String> {
    let one = match c {
        Cell::Empty => String::new(),
        Cell::Int(v) => v.to_string(),
        Cell::Float(v) => plain(Num::Float(*v)),
        Cell::Text(s) => s.clone(),
        Cell::Estimate { monitored, exact } if is_estimate(col) => {
            let (m, e) = (monitored.as_f64(), exact.as_f64());
            let abs = match (monitored, exact) {
                (Num::Int(a), Num::Int(b)) => (*a as i128 - *b as i128).to_string(),
                _ => plain(Num::Float(m - e)),
            };
            let rel = if e == 0.0 {
                String::new()
            } else {
                plain(Num::Float((m - e) / e))
            };
            return vec![plain(*monitored), plain(*exact), abs, rel];
        }
        Cell::Estimate { monitored, .. } => plain(*monitored),
    };
    if is_estimate(col) {
        vec![one, String::new(), String::new(), String::new()]
    } else {
        vec![one]
    }
}

/// One table as CSV text (header, rows, then the totals row).
pub fn table(t: &Table) -> String {
    let mut w = csv::WriterBuilder::new()
        .terminator(csv::Terminator::Any(b'\n'))
        .from_writer(Vec::new());
    let head: Vec<String> = t.columns.iter().flat_map(header).collect();
    // Writing to a Vec cannot fail.
    w.write_record(&head).expect("CSV into memory");
    for r in t.all_rows() {
        let rec: Vec<String> = r
            .iter()
            .zip(&t.columns)
            .flat_map(|(c, col)| fields(c, col))
            .collect();
        w.write_record(&rec).expect("CSV into memory");
    }
    String::from_utf8(w.into_inner().expect("CSV into memory")).expect("CSV of UTF-8 text")
}

/// Writes every non-empty table of the report to `dir/<id>.csv` (the directory must exist);
/// returns the files written, in report order.
pub fn write_dir(r: &Report, dir: &Path) -> Result<Vec<PathBuf>, String> {
    if !dir.is_dir() {
        return Err(format!("{}: not a directory", dir.display()));
    }
    let mut files = Vec::new();
    for t in r.tables().filter(|t| !t.is_empty()) {
        let p = dir.join(format!("{}.csv", t.id));
        std::fs::write(&p, table(t)).map_err(|e| format!("{}: {e}", p.display()))?;
        files.push(p);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Clock, Unit};

    fn one(cols: Vec<Column>, row: Vec<Cell>) -> String {
        let mut t = Table::new("t", "T", cols);
        t.row(row);
        table(&t)
    }

    #[test]
    fn quotes_commas_quotes_and_line_breaks() {
        let s = one(
            vec![Column::label("name"), Column::label("what")],
            vec!["a, b".into(), "say \"hi\"".into()],
        );
        assert_eq!(s, "name,what\n\"a, b\",\"say \"\"hi\"\"\"\n");
        let s = one(vec![Column::label("name")], vec!["two\nlines".into()]);
        assert_eq!(s, "name\n\"two\nlines\"\n");
        let s = one(vec![Column::label("name")], vec!["cr\rlf".into()]);
        assert_eq!(s, "name\n\"cr\rlf\"\n");
        // And it reads back as the same fields.
        let mut rd = csv::Reader::from_reader(s.as_bytes());
        let rec = rd.records().next().unwrap().unwrap();
        assert_eq!(&rec[0], "cr\rlf");
    }

    #[test]
    fn plain_numbers_with_units_in_header() {
        let s = one(
            vec![
                Column::label("proc"),
                Column::count("refs"),
                Column::cycles("mean", Clock::Processor, 1),
                Column::percent("share"),
                Column::ratio("CPI", "cycles / instruction", 2),
            ],
            vec![
                "0".into(),
                1_234_567u64.into(),
                143.125.into(),
                Cell::percent(1, 8),
                Cell::ratio(1, 0),
            ],
        );
        assert_eq!(
            s,
            "proc,refs (count),mean (proc. cycles),share (%),CPI (cycles / instruction)\n\
             0,1234567,143.125,12.5,\n"
        );
    }

    #[test]
    fn estimates_carry_exact_and_both_errors() {
        let s = one(
            vec![Column::estimate("count", Unit::Count, 0)],
            vec![Cell::estimate(90u64, 100u64)],
        );
        assert_eq!(
            s,
            "count (count),count exact (count),count error (count),count relative error (fraction)\n\
             90,100,-10,-0.1\n"
        );
        let s = one(
            vec![Column::estimate("count", Unit::Count, 0)],
            vec![Cell::estimate(5u64, 0u64)],
        );
        assert!(s.ends_with("\n5,0,5,\n"), "{s}");
    }
}
