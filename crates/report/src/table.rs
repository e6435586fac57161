//! A minimal aligned text table of strings (first column left-aligned, the rest right-aligned).
//! Kept for the monitors' reports until they move to the typed model (`crate::model`).

pub struct Table {
    head: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(head: &[&str]) -> Table {
        Table {
            head: head.iter().map(|s| s.to_string()).collect(),
            rows: Vec::new(),
        }
    }
    pub fn row(&mut self, r: Vec<String>) {
        self.rows.push(r);
    }
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
    pub fn render(&self) -> String {
        let n = self.head.len();
        let mut w = vec![0; n];
        for r in std::iter::once(&self.head).chain(self.rows.iter()) {
            for (i, c) in r.iter().enumerate().take(n) {
                w[i] = w[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        for (k, r) in std::iter::once(&self.head)
            .chain(self.rows.iter())
            .enumerate()
        {
            let mut line = String::new();
            for (i, wi) in w.iter().enumerate() {
                let c = r.get(i).map(String::as_str).unwrap_or("");
                let pad = wi - c.chars().count();
                if i == 0 {
                    line.push_str(c);
                    line.push_str(&" ".repeat(pad));
                } else {
                    line.push_str("  ");
                    line.push_str(&" ".repeat(pad));
                    line.push_str(c);
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
            if k == 0 {
                out.push_str(&"-".repeat(w.iter().sum::<usize>() + 2 * (n - 1)));
                out.push('\n');
            }
        }
        out
    }
    /// CSV rendering by the `csv` crate (RFC 4180: a field is quoted when it holds a comma,
    /// a quote or a line break).
    pub fn csv(&self) -> String {
        let mut w = csv::WriterBuilder::new()
            .terminator(csv::Terminator::Any(b'\n'))
            .flexible(true)
            .from_writer(Vec::new());
        for r in std::iter::once(&self.head).chain(self.rows.iter()) {
            // Writing to a Vec cannot fail.
            w.write_record(r).expect("CSV into memory");
        }
        String::from_utf8(w.into_inner().expect("CSV into memory")).expect("CSV of UTF-8 text")
    }
}

/// Thousands-separated integer.
pub fn num(v: u64) -> String {
    let s = v.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

pub fn pct(a: u64, b: u64) -> String {
    if b == 0 {
        "-".into()
    } else {
        format!("{:.2}%", 100.0 * a as f64 / b as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn renders_aligned_and_csv() {
        let mut t = Table::new(&["name", "value"]);
        t.row(vec!["a".into(), num(1234567)]);
        t.row(vec!["bb, c".into(), "7".into()]);
        let r = t.render();
        assert!(r.contains("a      1,234,567"), "{r}");
        assert_eq!(t.csv(), "name,value\na,\"1,234,567\"\n\"bb, c\",7\n");
        assert_eq!(pct(1, 4), "25.00%");
        // Line breaks are quoted too (the hand-written quoting missed them).
        let mut t = Table::new(&["what"]);
        t.row(vec!["two\nlines".into()]);
        assert_eq!(t.csv(), "what\n\"two\nlines\"\n");
    }
}
