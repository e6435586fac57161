//! Text tables: the unit under each column's name, labels left-aligned, numbers
//! right-aligned with thousands separators, an estimate shown as three columns (monitored,
//! exact, error).
//!
//! The layout is the one `comfy-table` draws with no borders and only the header rule
//! (columns as wide as their widest line, one space of padding and one blank vertical line
//! between them, the header underlined with dashes), written out directly: `comfy-table`
//! cost about 20,000 instructions per row (a `String` per cell line, styles looked up per
//! line), which made a monitor's end-of-run tables cost more than a short run's simulation
//! (issue 20). The test `same_layout_as_comfy_table` keeps the two identical.

use crate::model::format;
use crate::model::{Block, Cell, Column, Kind, Report, Section, Table};
use unicode_width::UnicodeWidthStr;

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

/// How a column's lines are aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Align {
    Left,
    Right,
}

/// Lays out a grid of cells (`head` first; a cell may hold several lines, split at `\n`):
/// each column as wide as its widest line (at least 1), each cell padded to it by `align`
/// and followed by one space, columns joined by one space, the header underlined with dashes
/// as wide as the columns and their joints; every line without trailing blanks. Rows shorter
/// than the header are filled with blanks.
pub(crate) fn grid<H: AsRef<str>, C: AsRef<str>>(
    head: &[H],
    align: &[Align],
    rows: &[Vec<C>],
) -> Vec<String> {
    // Row 0 is the header. Cells are read in place (split at `\n` only when they hold several
    // lines), and each single-line cell's width is measured once: a report's tables are a
    // thousand cells, and a vector of lines per cell was a fifth of a short monitored run's
    // report (issue 20).
    let row_len = |i: usize| {
        if i == 0 {
            head.len()
        } else {
            rows[i - 1].len()
        }
    };
    let cell = |i: usize, j: usize| -> Option<&str> {
        if i == 0 {
            head.get(j).map(|c| c.as_ref())
        } else {
            rows[i - 1].get(j).map(|c| c.as_ref())
        }
    };
    let ncol = head.len();
    let nrow = rows.len() + 1;
    let mut width = vec![1usize; ncol];
    // Per row its height; per cell of a one-line row its width.
    let mut height = Vec::with_capacity(nrow);
    let mut one_line = Vec::new();
    for i in 0..nrow {
        let n = row_len(i).min(ncol);
        let mut h = 1;
        for (j, w) in width.iter_mut().enumerate().take(n) {
            let c = cell(i, j).expect("j < row_len");
            let mut lines = 0;
            for l in c.split('\n') {
                let lw = text_width(l);
                *w = (*w).max(lw);
                lines += 1;
                if lines == 1 {
                    one_line.push(lw);
                }
            }
            h = h.max(lines);
        }
        height.push(h);
    }
    let line_len = width.iter().map(|w| w + 2).sum::<usize>();
    let mut out = Vec::with_capacity(nrow + 2);
    let mut next = 0; // index in `one_line` of row i's first cell
    for (i, &h) in height.iter().enumerate() {
        let n = row_len(i).min(ncol);
        for k in 0..h {
            let mut line = String::with_capacity(line_len);
            for (j, &w) in width.iter().enumerate() {
                if j > 0 {
                    line.push(' ');
                }
                let (text, tw) = match cell(i, j) {
                    Some(c) if j < n && h == 1 => (c, one_line[next + j]),
                    Some(c) if j < n => {
                        let l = c.split('\n').nth(k).unwrap_or("");
                        (l, text_width(l))
                    }
                    _ => ("", 0),
                };
                let pad = w.saturating_sub(tw);
                if align.get(j) == Some(&Align::Right) {
                    spaces(&mut line, pad);
                    line.push_str(text);
                } else {
                    line.push_str(text);
                    spaces(&mut line, pad);
                }
                line.push(' ');
            }
            line.truncate(line.trim_end().len());
            out.push(line);
        }
        next += n;
        if i == 0 {
            // As wide as the columns with their padding and the joints between them.
            let rule = width.iter().map(|w| w + 1).sum::<usize>() + ncol.saturating_sub(1);
            out.push("-".repeat(rule));
        }
    }
    out
}

/// The display width of one line: its length when it is printable ASCII, else its Unicode
/// width (what `comfy-table` measured).
fn text_width(l: &str) -> usize {
    if l.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        l.len()
    } else {
        l.width()
    }
}

/// Appends `n` spaces.
fn spaces(s: &mut String, n: usize) {
    const SPACES: &str = "                                                                ";
    let mut n = n;
    while n > 0 {
        let k = n.min(SPACES.len());
        s.push_str(&SPACES[..k]);
        n -= k;
    }
}

/// One table: its title line, the table, its note line.
pub fn table(t: &Table) -> String {
    let mut head = Vec::new();
    let mut align = Vec::new();
    for c in &t.columns {
        for (h, a) in header(c) {
            head.push(h);
            align.push(a);
        }
    }
    // Every cell's text in one string (`ends` marks where each ends, `row_ends` where each
    // row's cells end in `ends`): one allocation per table instead of one per cell.
    let mut buf = String::new();
    let mut ends = Vec::new();
    let mut row_ends = Vec::with_capacity(t.rows.len() + 1);
    for r in t.all_rows() {
        for (c, col) in r.iter().zip(&t.columns) {
            push_cells(&mut buf, &mut ends, c, col);
        }
        row_ends.push(ends.len());
    }
    let (mut start, mut first) = (0, 0);
    let rows: Vec<Vec<&str>> = row_ends
        .iter()
        .map(|&last| {
            let row = ends[first..last]
                .iter()
                .map(|&e| {
                    let c = &buf[start..e];
                    start = e;
                    c
                })
                .collect();
            first = last;
            row
        })
        .collect();
    let mut lines = grid(&head, &align, &rows);
    // The totals row gets a rule of its own, as the header.
    if t.total.is_some() && !t.rows.is_empty() {
        let rule = lines
            .iter()
            .find(|l| l.starts_with('-'))
            .cloned()
            .expect("the header rule");
        let last = lines.len() - 1;
        lines.insert(last, rule);
    }
    let mut out = format!("{}\n", t.title);
    for l in lines {
        out.push_str(&l);
        out.push('\n');
    }
    if let Some(n) = &t.note {
        out.push_str(n);
        out.push('\n');
    }
    out
}

/// The header cells of one column: the name, and under it the unit.
pub(crate) fn header(c: &Column) -> Vec<(String, Align)> {
    match &c.kind {
        Kind::Label => vec![(c.name.clone(), Align::Left)],
        Kind::Quantity(u) => vec![(format!("{}\n{}", c.name, u.label()), Align::Right)],
        Kind::Estimate(u) => vec![
            (format!("{}\n{}", c.name, u.label()), Align::Right),
            (format!("exact\n{}", u.label()), Align::Right),
            ("error\n% or abs".into(), Align::Right),
        ],
    }
}

pub(crate) fn cells_of(c: &Cell, col: &Column) -> Vec<String> {
    let (mut buf, mut ends) = (String::new(), Vec::with_capacity(3));
    push_cells(&mut buf, &mut ends, c, col);
    let mut start = 0;
    ends.iter()
        .map(|&e| {
            let s = buf[start..e].to_string();
            start = e;
            s
        })
        .collect()
}

/// `cells_of`, appended to `buf`, the end of each cell's text pushed to `ends`.
fn push_cells(buf: &mut String, ends: &mut Vec<usize>, c: &Cell, col: &Column) {
    if !matches!(col.kind, Kind::Estimate(_)) {
        format::push_cell(buf, c, col);
        return ends.push(buf.len());
    }
    match c {
        Cell::Estimate { monitored, exact } => {
            format::push_num(buf, *monitored, col.decimals);
            ends.push(buf.len());
            format::push_num(buf, *exact, col.decimals);
            ends.push(buf.len());
            let err = format::estimate_error(*monitored, *exact, col.decimals);
            format::push_error_text(buf, err, col.decimals);
            ends.push(buf.len());
        }
        other => {
            format::push_cell(buf, other, col);
            ends.extend([buf.len(); 3]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Clock, Unit};

    /// The layout `comfy-table` drew before `grid` replaced it (no borders, only the header
    /// rule, one space of padding, lines trimmed).
    fn comfy(head: &[String], align: &[Align], rows: &[Vec<String>]) -> Vec<String> {
        use comfy_table::{Cell as TCell, CellAlignment, ContentArrangement};
        let mut ct = comfy_table::Table::new();
        ct.load_preset("     --            ")
            .set_content_arrangement(ContentArrangement::Disabled);
        ct.set_header(head.iter().map(TCell::new).collect::<Vec<_>>());
        for r in rows {
            ct.add_row(r.iter().map(TCell::new).collect::<Vec<_>>());
        }
        for (i, a) in align.iter().enumerate() {
            if let Some(col) = ct.column_mut(i) {
                col.set_cell_alignment(match a {
                    Align::Left => CellAlignment::Left,
                    Align::Right => CellAlignment::Right,
                });
                col.set_padding((0, 1));
            }
        }
        ct.to_string()
            .lines()
            .map(|l| l.trim_end().to_string())
            .collect()
    }

    /// `grid` lays out what `comfy-table` did, on random grids: cells of several lines, empty
    /// cells, wide and zero-width characters, short rows, no rows.
    #[test]
    fn same_layout_as_comfy_table() {
        let words = [
            "",
            "0",
            "-12",
            "1,234,567",
            "proc",
            "a b",
            "cycles²",
            "μs",
            "日本",
            "e\u{301}",
            "x\ny",
            "name\nunit\n3",
            "  lead",
            "trail  ",
            "-",
            "----",
        ];
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        let mut next = |n: usize| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x % n as u64) as usize
        };
        for case in 0..400 {
            let ncol = 1 + next(6);
            let head: Vec<String> = (0..ncol).map(|_| words[next(words.len())].into()).collect();
            let align: Vec<Align> = (0..ncol)
                .map(|_| {
                    if next(2) == 0 {
                        Align::Left
                    } else {
                        Align::Right
                    }
                })
                .collect();
            let nrow = next(5);
            let rows: Vec<Vec<String>> = (0..nrow)
                .map(|_| {
                    let len = if next(4) == 0 { next(ncol + 1) } else { ncol };
                    (0..len).map(|_| words[next(words.len())].into()).collect()
                })
                .collect();
            assert_eq!(
                grid(&head, &align, &rows),
                comfy(&head, &align, &rows),
                "case {case}: {head:?} {align:?} {rows:?}"
            );
        }
    }

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
