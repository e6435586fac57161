//! Text tables with `comfy-table`: the unit under each column's name, labels left-aligned,
//! numbers right-aligned with thousands separators, an estimate shown as three columns
//! (monitored, exact, error).

use crate::model::format;
use crate::model::{Block, Cell, Column, Kind, Report, Section, Table};
use comfy_table::{Cell as TCell, CellAlignment, ContentArrangement};

/// comfy-table's style string (see `comfy_table::presets`): only the header rule and its
/// intersections are drawn.
const HEADER_RULE_ONLY: &str = "     --            ";

/// The whole report: each section's text lines and tables in order, sections after the first
/// headed by their title, underlined (the first section is the run's, whose title is the
/// report's). Plots are left to the SVG renderer (their data are in the tables beside them).
pub fn render(r: &Report) -> String {
    let mut out = String::new();
    for (i, s) in r.sections.iter().enumerate() {
        if i > 0 {
            out.push('\n');
            out.push_str(&s.title);
            out.push('\n');
            out.push_str(&"=".repeat(s.title.chars().count()));
            out.push('\n');
        }
        section(&mut out, s);
    }
    out
}

fn section(out: &mut String, s: &Section) {
    let mut first = true;
    for b in &s.blocks {
        match b {
            Block::Text(line) => {
                out.push_str(line);
                out.push('\n');
            }
            Block::Table(t) => {
                if t.is_empty() {
                    continue;
                }
                if !first {
                    out.push('\n');
                }
                out.push_str(&table(t));
            }
            Block::Plot(_) => continue,
        }
        first = false;
    }
}

/// One table: its title line, the table, its note line.
pub fn table(t: &Table) -> String {
    let mut ct = comfy_table::Table::new();
    // No borders, the header underlined with dashes, two spaces between columns.
    ct.load_preset(HEADER_RULE_ONLY)
        .set_content_arrangement(ContentArrangement::Disabled);
    let mut head = Vec::new();
    let mut align = Vec::new();
    for c in &t.columns {
        for (h, a) in header(c) {
            head.push(TCell::new(h));
            align.push(a);
        }
    }
    ct.set_header(head);
    for r in t.all_rows() {
        let mut cells = Vec::new();
        for (c, col) in r.iter().zip(&t.columns) {
            cells.extend(cells_of(c, col));
        }
        ct.add_row(cells);
    }
    for (i, a) in align.into_iter().enumerate() {
        if let Some(col) = ct.column_mut(i) {
            col.set_cell_alignment(a);
            // With the (blank) vertical line, two spaces between columns.
            col.set_padding((0, 1));
        }
    }
    let body = ct.to_string();
    let mut lines: Vec<&str> = body.lines().map(str::trim_end).collect();
    // comfy-table draws one rule for all rows; the totals row gets its own, as the header.
    let rule = lines
        .iter()
        .find(|l| l.starts_with('-'))
        .map(|l| l.to_string());
    if let (Some(_), Some(rule), true) = (&t.total, &rule, !t.rows.is_empty()) {
        let last = lines.len() - 1;
        lines.insert(last, rule);
    }
    let mut out = format!("{}\n", t.title);
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    if let Some(n) = &t.note {
        out.push_str(n);
        out.push('\n');
    }
    out
}

/// The header cells of one column: the name, and under it the unit.
pub(crate) fn header(c: &Column) -> Vec<(String, CellAlignment)> {
    match &c.kind {
        Kind::Label => vec![(c.name.clone(), CellAlignment::Left)],
        Kind::Quantity(u) => vec![(format!("{}\n{}", c.name, u.label()), CellAlignment::Right)],
        Kind::Estimate(u) => vec![
            (format!("{}\n{}", c.name, u.label()), CellAlignment::Right),
            (format!("exact\n{}", u.label()), CellAlignment::Right),
            ("error\n% or abs".into(), CellAlignment::Right),
        ],
    }
}

pub(crate) fn cells_of(c: &Cell, col: &Column) -> Vec<String> {
    if !matches!(col.kind, Kind::Estimate(_)) {
        return vec![format::cell(c, col)];
    }
    match c {
        Cell::Estimate { monitored, exact } => vec![
            format::num(*monitored, col.decimals),
            format::num(*exact, col.decimals),
            format::error_text(
                format::estimate_error(*monitored, *exact, col.decimals),
                col.decimals,
            ),
        ],
        other => vec![format::cell(other, col), String::new(), String::new()],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Clock, Unit};

    #[test]
    fn units_in_headers_and_numbers_right_aligned() {
        let mut t = Table::new(
            "t",
            "Processors",
            vec![
                Column::label("proc"),
                Column::cycles("cycles", Clock::Processor, 0),
                Column::ratio("CPI", "cycles / instr", 2),
                Column::percent("L1D miss"),
            ],
        );
        t.row(vec![
            "0".into(),
            580_287u64.into(),
            Cell::ratio(580_287, 149_598),
            Cell::percent(1, 4),
        ]);
        t.set_total(vec![
            "all".into(),
            9_284_834u64.into(),
            Cell::Empty,
            Cell::Empty,
        ]);
        t.set_note("note line");
        let s = table(&t);
        let lines: Vec<&str> = s.lines().collect();
        assert_eq!(lines[0], "Processors");
        assert!(
            lines[1].starts_with("proc") && lines[1].contains("CPI"),
            "{s}"
        );
        assert!(lines[2].contains("proc. cycles") && lines[2].contains("cycles / instr"));
        assert!(lines[2].ends_with('%'), "{s}");
        // A rule under the header and one above the totals row.
        assert!(
            lines[3].starts_with("----") && lines[5].starts_with("----"),
            "{s}"
        );
        // Right-aligned numbers end at the same column.
        let row = lines.iter().find(|l| l.contains("580,287")).unwrap();
        let tot = lines.iter().find(|l| l.contains("9,284,834")).unwrap();
        assert_eq!(
            row.find("580,287").unwrap() + 7,
            tot.find("9,284,834").unwrap() + 9,
            "{s}"
        );
        assert!(row.contains("3.88") && row.contains("25.00"), "{s}");
        assert!(tot.contains(" - "), "{s}");
        assert_eq!(*lines.last().unwrap(), "note line");
    }

    #[test]
    fn estimate_expands_to_three_columns() {
        let mut t = Table::new(
            "c",
            "Counters",
            vec![
                Column::label("counter"),
                Column::estimate("count", Unit::Count, 0),
            ],
        );
        t.row(vec!["PAPI_L2_LDM".into(), Cell::estimate(797u64, 797u64)]);
        t.row(vec!["stores".into(), Cell::estimate(32_772u64, 2u64)]);
        let s = table(&t);
        assert!(s.contains("exact"), "{s}");
        let l = s.lines().find(|l| l.contains("PAPI_L2_LDM")).unwrap();
        assert!(l.contains("797") && l.contains("+0.00%"), "{s}");
        let l = s.lines().find(|l| l.contains("stores")).unwrap();
        assert!(l.contains("+32,770 abs") && !l.contains("inf"), "{s}");
    }
}
