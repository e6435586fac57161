//! The NUMAchine monitor's SVG plot: the machine-wide latency histogram (`--svg FILE`).

use serde_json::Value;

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

/// An SVG bar chart of the machine-wide latency histogram (all selectors summed).
pub fn svg(doc: &Value) -> Option<String> {
    let hs = doc["latency_histograms"].as_array()?;
    let mut buckets: std::collections::BTreeMap<(u64, u64), u64> = Default::default();
    for h in hs {
        for b in h["buckets"].as_array()? {
            *buckets.entry((u(&b[0]), u(&b[1]))).or_default() += u(&b[2]);
        }
    }
    if buckets.is_empty() {
        return None;
    }
    let (w, h, ml, mb) = (800.0, 360.0, 60.0, 50.0);
    let maxc = *buckets.values().max().unwrap() as f64;
    let maxx = buckets.keys().map(|k| k.1).max().unwrap() as f64 + 1.0;
    // Log2 x axis (compact buckets double in width): x(v) = log2(v + 1).
    let lx = |v: f64| ml + (v + 1.0).log2() / (maxx + 1.0).log2() * (w - ml - 20.0);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"11\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n<text x=\"{}\" y=\"16\" text-anchor=\"middle\" font-size=\"13\">NUMAchine monitor: cache-line request latency (monitor cycles)</text>\n",
        w / 2.0
    );
    let y0 = h - mb;
    for (&(lo, hi), &c) in &buckets {
        let x1 = lx(lo as f64);
        let x2 = lx(hi as f64 + 1.0);
        let bh = c as f64 / maxc * (y0 - 30.0);
        s.push_str(&format!(
            "<rect x=\"{x1:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bh:.1}\" fill=\"#4a7ab5\"><title>{lo}-{hi}: {c}</title></rect>\n",
            y0 - bh,
            (x2 - x1).max(1.0)
        ));
    }
    s.push_str(&format!(
        "<line x1=\"{ml}\" y1=\"{y0}\" x2=\"{}\" y2=\"{y0}\" stroke=\"black\"/>\n",
        w - 20.0
    ));
    let mut tick = 1.0;
    while tick <= maxx {
        s.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{tick}</text>\n",
            lx(tick),
            y0 + 15.0
        ));
        tick *= 4.0;
    }
    s.push_str(&format!(
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">latency (log scale)</text>\n<text x=\"14\" y=\"{}\" transform=\"rotate(-90 14 {})\" text-anchor=\"middle\">requests (max {})</text>\n</svg>\n",
        w / 2.0, h - 10.0, h / 2.0, h / 2.0, maxc as u64
    ));
    Some(s)
}
