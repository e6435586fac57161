//! One self-contained HTML page of a run (`pmusim run … --html FILE`): the typed report's
//! sections with sortable tables, its plots as inline SVG, a heat map, and preformatted blocks
//! for sections that are not typed yet. No network: the style sheet and the few lines of
//! script that sort a table are in the page, so it opens offline and can be mailed as one file.

use crate::model::{Block, Cell, Kind, Num, Report, Table};
use crate::render::{svg, text};

/// A page under construction: blocks are appended in order, `finish` closes it.
pub struct Page {
    body: String,
    toc: Vec<(String, String)>,
    title: String,
}

/// A matrix shown as coloured cells (for example misses by data structure and processor):
/// the darker the cell, the larger its value relative to the largest.
pub struct HeatMap {
    pub title: String,
    /// What a cell counts, with its unit ("misses", "cycles").
    pub what: String,
    pub rows: Vec<String>,
    pub cols: Vec<String>,
    /// `values[row][col]`.
    pub values: Vec<Vec<u64>>,
}

impl Page {
    pub fn new(title: &str) -> Page {
        Page {
            body: String::new(),
            toc: Vec::new(),
            title: title.into(),
        }
    }

    /// Every section of `r`: text lines, tables (sortable), plots (inline SVG).
    pub fn report(&mut self, r: &Report) {
        for s in &r.sections {
            self.heading(&s.title);
            for b in &s.blocks {
                match b {
                    Block::Text(line) => {
                        self.body.push_str(&format!("<p>{}</p>\n", esc(line)));
                    }
                    Block::Table(t) if !t.is_empty() => self.table(t),
                    Block::Table(_) => {}
                    Block::Plot(p) => self.svg(&p.title, &svg::plot(p)),
                }
            }
        }
    }

    /// A section heading, listed in the page's contents.
    pub fn heading(&mut self, title: &str) {
        let id = format!("s{}", self.toc.len());
        self.body
            .push_str(&format!("<h2 id=\"{id}\">{}</h2>\n", esc(title)));
        self.toc.push((id, title.to_string()));
    }

    /// A block of preformatted text (a section not yet in the typed model).
    pub fn preformatted(&mut self, text: &str) {
        self.body
            .push_str(&format!("<pre>{}</pre>\n", esc(text.trim_end())));
    }

    /// An SVG document, inlined (its XML declaration dropped).
    pub fn svg(&mut self, title: &str, svg: &str) {
        let start = svg.find("<svg").unwrap_or(0);
        self.body.push_str(&format!(
            "<figure><figcaption>{}</figcaption>{}</figure>\n",
            esc(title),
            &svg[start..]
        ));
    }

    /// One table: a header with units, right-aligned numbers, estimate columns as monitored,
    /// exact and error; clicking a header sorts by it (numbers by value, not by text).
    pub fn table(&mut self, t: &Table) {
        let b = &mut self.body;
        b.push_str(&format!(
            "<table class=\"sortable\" id=\"t-{}\">\n<caption>{}</caption>\n<thead><tr>",
            esc(&t.id),
            esc(&t.title)
        ));
        for c in &t.columns {
            for (h, _) in text::header(c) {
                let class = if matches!(c.kind, Kind::Label) {
                    ""
                } else {
                    " class=\"num\""
                };
                let h = esc(&h).replace('\n', "<br>");
                b.push_str(&format!("<th{class}>{h}</th>"));
            }
        }
        b.push_str("</tr></thead>\n<tbody>\n");
        for r in &t.rows {
            b.push_str(&row(r, t));
        }
        b.push_str("</tbody>\n");
        if let Some(total) = &t.total {
            b.push_str(&format!("<tfoot>{}</tfoot>\n", row(total, t)));
        }
        b.push_str("</table>\n");
        if let Some(n) = &t.note {
            b.push_str(&format!("<p class=\"note\">{}</p>\n", esc(n)));
        }
    }

    /// A heat map as a table of coloured cells, each with its value.
    pub fn heatmap(&mut self, h: &HeatMap) {
        let max = h.values.iter().flatten().copied().max().unwrap_or(0).max(1);
        let b = &mut self.body;
        b.push_str(&format!(
            "<table class=\"heat\">\n<caption>{} ({})</caption>\n<thead><tr><th></th>",
            esc(&h.title),
            esc(&h.what)
        ));
        for c in &h.cols {
            b.push_str(&format!("<th class=\"num\">{}</th>", esc(c)));
        }
        b.push_str("</tr></thead>\n<tbody>\n");
        for (name, vals) in h.rows.iter().zip(&h.values) {
            b.push_str(&format!("<tr><th>{}</th>", esc(name)));
            for &v in vals {
                // White to dark blue by share of the largest cell; text turns white when dark.
                let share = v as f64 / max as f64;
                let light = 100.0 - 70.0 * share;
                let fg = if share > 0.55 { "#fff" } else { "#000" };
                b.push_str(&format!(
                    "<td class=\"num\" data-v=\"{v}\" style=\"background:hsl(215,70%,{light:.0}%);color:{fg}\">{}</td>",
                    crate::model::format::int(v)
                ));
            }
            b.push_str("</tr>\n");
        }
        b.push_str("</tbody></table>\n");
    }

    /// The whole document.
    pub fn finish(self) -> String {
        let mut toc = String::from("<nav><ol>");
        for (id, t) in &self.toc {
            toc.push_str(&format!("<li><a href=\"#{id}\">{}</a></li>", esc(t)));
        }
        toc.push_str("</ol></nav>\n");
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{title}</h1>\n{toc}{body}<script>{SCRIPT}</script>\n</body>\n</html>\n",
            title = esc(&self.title),
            body = self.body,
        )
    }
}

/// One table row; numeric cells carry their value in `data-v` for sorting.
fn row(r: &[Cell], t: &Table) -> String {
    let mut s = String::from("<tr>");
    for (c, col) in r.iter().zip(&t.columns) {
        let texts = text::cells_of(c, col);
        let values: Vec<Option<f64>> = match c {
            Cell::Int(v) => vec![Some(*v as f64)],
            Cell::Float(v) => vec![Some(*v)],
            Cell::Estimate { monitored, exact } => vec![
                Some(monitored.as_f64()),
                Some(exact.as_f64()),
                error_value(*monitored, *exact),
            ],
            _ => vec![None; texts.len()],
        };
        let numeric = !matches!(col.kind, Kind::Label);
        for (i, txt) in texts.iter().enumerate() {
            let class = if numeric { " class=\"num\"" } else { "" };
            match values.get(i).copied().flatten() {
                Some(v) if v.is_finite() => {
                    s.push_str(&format!("<td{class} data-v=\"{v}\">{}</td>", esc(txt)))
                }
                _ => s.push_str(&format!("<td{class}>{}</td>", esc(txt))),
            }
        }
    }
    s.push_str("</tr>\n");
    s
}

/// The relative error for sorting (the text shows it as the text renderer does).
fn error_value(monitored: Num, exact: Num) -> Option<f64> {
    let (m, e) = (monitored.as_f64(), exact.as_f64());
    (e != 0.0).then(|| 100.0 * (m - e) / e)
}

/// HTML-escapes text.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

const STYLE: &str = "
body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#111}
h1{font-size:1.4em}h2{font-size:1.15em;border-bottom:1px solid #ccc;margin-top:2em}
nav ol{columns:2;font-size:.9em}
table{border-collapse:collapse;margin:1em 0;font-size:.85em}
caption{text-align:left;font-weight:600;padding:.3em 0}
th,td{padding:.2em .6em;border-bottom:1px solid #e4e4e4;white-space:nowrap}
th{background:#f4f4f4;vertical-align:bottom}
table.sortable th{cursor:pointer}table.sortable th:hover{background:#e8eef8}
.num{text-align:right;font-variant-numeric:tabular-nums}
tfoot td{font-weight:600;border-top:2px solid #999}
pre{background:#f8f8f8;padding:.8em;overflow-x:auto;font-size:.8em}
figure{margin:1em 0}figcaption{font-weight:600;font-size:.9em}
p.note{font-size:.85em;color:#555}
";

/// Sorting: a click on a header sorts the body rows by that column (numbers by `data-v`),
/// a second click reverses; the totals row stays in the footer.
const SCRIPT: &str = "
document.querySelectorAll('table.sortable').forEach(function(t){
  t.querySelectorAll('thead th').forEach(function(th,i){
    th.addEventListener('click',function(){
      var body=t.tBodies[0],rows=Array.from(body.rows),asc=th.dataset.asc!=='1';
      t.querySelectorAll('thead th').forEach(function(o){delete o.dataset.asc});
      th.dataset.asc=asc?'1':'0';
      rows.sort(function(a,b){
        var x=a.cells[i],y=b.cells[i];
        var u=x.dataset.v,v=y.dataset.v,r;
        if(u!==undefined&&v!==undefined){r=parseFloat(u)-parseFloat(v)}
        else{r=x.textContent.localeCompare(y.textContent)}
        return asc?r:-r});
      rows.forEach(function(r){body.appendChild(r)});
    });
  });
});
";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Column, Section, Unit};

    #[test]
    fn tables_escape_and_carry_sort_values() {
        let mut t = Table::new(
            "t",
            "A <table>",
            vec![
                Column::label("name"),
                Column::count("misses"),
                Column::estimate("value", Unit::Count, 0),
            ],
        );
        t.row(vec![
            "x&y".into(),
            1234u64.into(),
            Cell::estimate(110u64, 100u64),
        ]);
        t.set_total(vec!["all".into(), 1234u64.into(), Cell::Empty]);
        let mut s = Section::new("Run");
        s.table(t);
        let mut p = Page::new("run <1>");
        p.report(&Report { sections: vec![s] });
        let html = p.finish();
        assert!(html.contains("<title>run &lt;1&gt;</title>"));
        assert!(html.contains("<caption>A &lt;table&gt;</caption>"));
        assert!(html.contains("<td>x&amp;y</td>"));
        assert!(html.contains("<td class=\"num\" data-v=\"1234\">1,234</td>"));
        assert!(html.contains("<td class=\"num\" data-v=\"110\">110</td>"));
        assert!(html.contains("<td class=\"num\" data-v=\"100\">100</td>"));
        assert!(html.contains("data-v=\"10\">+10.00%</td>"), "{html}");
        assert!(html.contains("<tfoot><tr><td>all</td>"));
        assert!(!html.contains("http://") && !html.contains("https://"));
    }

    #[test]
    fn heat_map_shades_by_share_of_the_largest() {
        let mut p = Page::new("h");
        p.heatmap(&HeatMap {
            title: "misses".into(),
            what: "count".into(),
            rows: vec!["x".into()],
            cols: vec!["0".into(), "1".into()],
            values: vec![vec![0, 10]],
        });
        let html = p.finish();
        assert!(html.contains("data-v=\"0\" style=\"background:hsl(215,70%,100%);color:#000\""));
        assert!(html.contains("data-v=\"10\" style=\"background:hsl(215,70%,30%);color:#fff\""));
    }
}
