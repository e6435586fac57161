//! How numbers look in text: thousands separators, decimals per column, and the error of an
//! estimate. CSV and JSON do not use this (they write plain numbers).

use super::{Cell, Column, Num};

use std::fmt::Write;

/// Thousands-separated integer: 1234567 -> "1,234,567".
pub fn int(v: u64) -> String {
    let mut s = String::new();
    push_int(&mut s, v);
    s
}

/// [`int`], appended to `out`. Written digit by digit: a report formats a thousand numbers,
/// and the text renderer writes them all into one string (issue 20).
pub fn push_int(out: &mut String, v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let mut v = v;
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    push_grouped(out, &buf[i..]);
}

/// A fractional number with `decimals` decimals and a separated integer part:
/// 1234.56 -> "1,234.6" with one decimal. Not-a-number and infinities print as "-"
/// (they only arise from a division that a builder should have made [`Cell::Empty`]).
pub fn float(v: f64, decimals: u8) -> String {
    let mut s = String::new();
    push_float(&mut s, v, decimals);
    s
}

/// [`float`], appended to `out`.
pub fn push_float(out: &mut String, v: f64, decimals: u8) {
    if !v.is_finite() {
        return out.push('-');
    }
    let start = out.len();
    write!(out, "{:.*}", decimals as usize, v).expect("a String takes any text");
    let sign = start + out[start..].starts_with('-') as usize;
    let int_end = out[start..].find('.').map_or(out.len(), |i| start + i);
    if int_end - sign > 3 {
        // Separators to insert: the rare large value is written again.
        let tail = out.split_off(sign);
        push_grouped(out, &tail.as_bytes()[..int_end - sign]);
        out.push_str(&tail[int_end - sign..]);
    }
}

/// Appends ASCII `digits` with a comma before every group of three from the right.
fn push_grouped(out: &mut String, digits: &[u8]) {
    for (i, &d) in digits.iter().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(d as char);
    }
}

/// A number in a column: integers as integers, fractions with the column's decimals.
pub fn num(v: Num, decimals: u8) -> String {
    let mut s = String::new();
    push_num(&mut s, v, decimals);
    s
}

/// [`num`], appended to `out`.
pub fn push_num(out: &mut String, v: Num, decimals: u8) {
    match v {
        Num::Int(i) => push_int(out, i),
        Num::Float(f) => push_float(out, f, decimals),
    }
}

/// The error of an estimate, in the form the text shows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum EstimateError {
    /// (monitored - exact) / exact, as a fraction.
    Relative(f64),
    /// monitored - exact, in the column's unit: used when the exact value is too small for a
    /// relative error to mean anything (see [`estimate_error`]).
    Absolute(f64),
}

/// The error of `monitored` against `exact`.
///
/// A relative error is shown when |exact| is at least 100 units of the column's last shown
/// digit (100 counts or cycles for an integer column, 1.00 for a two-decimal ratio): below
/// that, one event more or less swings a relative error by a percent or more, and at 0 it is
/// infinite (the "+1638500.00%" and "inf" of issue 17). Then the absolute difference is shown
/// instead, marked "abs".
pub fn estimate_error(monitored: Num, exact: Num, decimals: u8) -> EstimateError {
    let (m, e) = (monitored.as_f64(), exact.as_f64());
    let threshold = 100.0 / 10f64.powi(decimals as i32);
    if e.abs() >= threshold {
        EstimateError::Relative((m - e) / e)
    } else {
        EstimateError::Absolute(m - e)
    }
}

/// The error as text: "+0.52%" (relative, two decimals) or "+16 abs" (absolute, in the
/// column's decimals).
pub fn error_text(err: EstimateError, decimals: u8) -> String {
    let mut s = String::new();
    push_error_text(&mut s, err, decimals);
    s
}

/// [`error_text`], appended to `out`.
pub fn push_error_text(out: &mut String, err: EstimateError, decimals: u8) {
    match err {
        EstimateError::Relative(r) => {
            write!(out, "{:+.2}%", 100.0 * r).expect("a String takes any text")
        }
        EstimateError::Absolute(d) => {
            out.push(if d < 0.0 { '-' } else { '+' });
            push_float(out, d.abs(), decimals);
            out.push_str(" abs");
        }
    }
}

/// A cell as text in its column (an estimate shows its monitored value only; the renderer
/// adds the exact value and the error in their own columns).
pub fn cell(c: &Cell, col: &Column) -> String {
    let mut s = String::new();
    push_cell(&mut s, c, col);
    s
}

/// [`cell`], appended to `out`.
pub fn push_cell(out: &mut String, c: &Cell, col: &Column) {
    match c {
        Cell::Empty => out.push('-'),
        Cell::Int(v) => push_int(out, *v),
        Cell::Float(v) => push_float(out, *v, col.decimals),
        Cell::Text(s) => out.push_str(s),
        Cell::Estimate { monitored, .. } => push_num(out, *monitored, col.decimals),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn separates_thousands() {
        assert_eq!(int(0), "0");
        assert_eq!(int(999), "999");
        assert_eq!(int(1000), "1,000");
        assert_eq!(int(9_284_834), "9,284,834");
        assert_eq!(int(u64::MAX), "18,446,744,073,709,551,615");
        assert_eq!(float(143.125, 1), "143.1");
        assert_eq!(float(1234.56, 1), "1,234.6");
        assert_eq!(float(-1234567.0, 0), "-1,234,567");
        assert_eq!(float(0.004, 2), "0.00");
        assert_eq!(float(f64::NAN, 2), "-");
        assert_eq!(float(f64::INFINITY, 2), "-");
    }

    #[test]
    fn formats_cells_by_column() {
        let pct = Column::percent("share");
        assert_eq!(cell(&Cell::percent(1, 4), &pct), "25.00");
        assert_eq!(cell(&Cell::percent(1, 0), &pct), "-");
        let cpi = Column::ratio("CPI", "cycles / instruction", 2);
        assert_eq!(cell(&Cell::ratio(580_287, 149_598), &cpi), "3.88");
        let n = Column::count("refs");
        assert_eq!(cell(&Cell::Int(47_660), &n), "47,660");
        assert_eq!(cell(&Cell::text("x, y"), &n), "x, y");
    }

    #[test]
    fn relative_error_for_large_exact_values() {
        // The built-in monitor's PAPI_TOT_INS on processor 0 of fft test: x4 = 149,596,
        // exact 149,598.
        let e = estimate_error(Num::Int(149_596), Num::Int(149_598), 0);
        assert_eq!(error_text(e, 0), "-0.00%");
        let e = estimate_error(Num::Int(13_170), Num::Int(4_162), 0);
        assert_eq!(error_text(e, 0), "+216.43%");
        assert_eq!(
            estimate_error(Num::Int(110), Num::Int(100), 0),
            EstimateError::Relative(0.1)
        );
    }

    #[test]
    fn absolute_error_near_zero() {
        // Exact 2, monitored 32,772: a relative error would read "+1638500.00%".
        let e = estimate_error(Num::Int(32_772), Num::Int(2), 0);
        assert_eq!(e, EstimateError::Absolute(32_770.0));
        assert_eq!(error_text(e, 0), "+32,770 abs");
        // Exact 0: never "inf".
        assert_eq!(
            error_text(estimate_error(Num::Int(5), Num::Int(0), 0), 0),
            "+5 abs"
        );
        assert_eq!(
            error_text(estimate_error(Num::Int(0), Num::Int(0), 0), 0),
            "+0 abs"
        );
        assert_eq!(
            error_text(estimate_error(Num::Int(3), Num::Int(99), 0), 0),
            "-96 abs"
        );
        // A two-decimal ratio: relative from 1.00 up.
        assert_eq!(
            error_text(estimate_error(Num::Float(0.05), Num::Float(0.07), 2), 2),
            "-0.02 abs"
        );
        assert_eq!(
            error_text(estimate_error(Num::Float(1.1), Num::Float(1.0), 2), 2),
            "+10.00%"
        );
    }
}
