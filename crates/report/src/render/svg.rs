//! SVG plots with `plotters` (SVG backend only: text is written as `<text>` elements and its
//! size estimated without loading a font, so the output does not depend on the system's
//! fonts). PNG is not offered: `plotters`' bitmap backend needs a TrueType font from the
//! system (`ttf`) or one bundled into the binary (`ab_glyph`), and CI machines may have none.

use crate::model::{format, Axis, Bin, Plot, PlotData, Report, Series};
use plotters::coord::ranged1d::SegmentValue;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use std::path::{Path, PathBuf};

const W: u32 = 720;
const H: u32 = 420;

/// One plot as an SVG document.
pub fn plot(p: &Plot) -> String {
    let mut s = String::new();
    {
        let height = match &p.data {
            PlotData::Bars { bars } => (80 + 22 * bars.len() as u32).max(H / 2),
            _ => H,
        };
        let root = SVGBackend::with_string(&mut s, (W, height)).into_drawing_area();
        // Drawing into a String cannot fail; a failure here is a bug in the ranges below.
        root.fill(&WHITE).expect("SVG fill");
        let r = match &p.data {
            PlotData::Histogram { bins } => histogram(&root, p, bins),
            PlotData::Bars { bars } => bars_plot(&root, p, bars),
            PlotData::Series { series } => series_plot(&root, p, series),
        };
        r.expect("SVG drawing");
        root.present().expect("SVG present");
    }
    s
}

type Area<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;
type Res = Result<(), Box<dyn std::error::Error>>;

fn span(lo: f64, hi: f64) -> (f64, f64) {
    if hi > lo {
        (lo, hi)
    } else {
        (lo, lo + 1.0)
    }
}

fn histogram(root: &Area, p: &Plot, bins: &[Bin]) -> Res {
    let lo = bins.iter().map(|b| b.lo).fold(f64::INFINITY, f64::min);
    let hi = bins.iter().map(|b| b.hi).fold(f64::NEG_INFINITY, f64::max);
    let (lo, hi) = if bins.is_empty() {
        (0.0, 1.0)
    } else {
        span(lo, hi)
    };
    let top = bins.iter().map(|b| b.count).max().unwrap_or(0).max(1) as f64 * 1.05;
    let mut chart = ChartBuilder::on(root)
        .caption(&p.title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(lo..hi, 0.0..top)?;
    mesh(&mut chart, &p.x, &p.y)?;
    chart.draw_series(bins.iter().map(|b| {
        Rectangle::new(
            [(b.lo, 0.0), (b.hi, b.count as f64)],
            BLUE.mix(0.6).filled(),
        )
    }))?;
    Ok(())
}

/// Tick labels as the text shows numbers: thousands separators, no decimals on an axis that
/// spans 10 or more, two decimals below that.
fn tick(v: f64, span: f64) -> String {
    format::float(v, if span >= 10.0 { 0 } else { 2 })
}

fn mesh<'a>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    x: &Axis,
    y: &Axis,
) -> Res {
    let xs = chart.x_range();
    let ys = chart.y_range();
    let (xspan, yspan) = (xs.end - xs.start, ys.end - ys.start);
    let fx = move |v: &f64| tick(*v, xspan);
    let fy = move |v: &f64| tick(*v, yspan);
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(WHITE)
        .x_label_formatter(&fx)
        .y_label_formatter(&fy)
        .x_desc(x.label())
        .y_desc(y.label())
        .draw()?;
    Ok(())
}

/// Horizontal bars, one per label, the first on top (labels stay readable however long they
/// are).
fn bars_plot(root: &Area, p: &Plot, bars: &[(String, f64)]) -> Res {
    let n = bars.len().max(1) as i32;
    let top = bars.iter().map(|b| b.1).fold(0.0, f64::max).max(1.0) * 1.05;
    let widest = bars.iter().map(|b| b.0.chars().count()).max().unwrap_or(4) as u32;
    let mut chart = ChartBuilder::on(root)
        .caption(&p.title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(20 + 7 * widest)
        .build_cartesian_2d(0.0..top, (0..n).into_segmented())?;
    // Bar i sits in segment n - 1 - i, so the first bar is drawn on top.
    let label = |v: &SegmentValue<i32>| match v {
        SegmentValue::CenterOf(i) => bars
            .get((n - 1 - *i) as usize)
            .map(|b| b.0.clone())
            .unwrap_or_default(),
        _ => String::new(),
    };
    let fx = |v: &f64| tick(*v, top);
    chart
        .configure_mesh()
        .disable_y_mesh()
        .light_line_style(WHITE)
        .x_labels(6)
        .y_labels(bars.len())
        .y_label_formatter(&label)
        .x_label_formatter(&fx)
        .x_desc(p.x.label())
        .y_desc(p.y.name.clone())
        .draw()?;
    chart.draw_series(bars.iter().enumerate().map(|(i, (_, v))| {
        let i = n - 1 - i as i32;
        let mut r = Rectangle::new(
            [
                (0.0, SegmentValue::Exact(i)),
                (*v, SegmentValue::Exact(i + 1)),
            ],
            BLUE.mix(0.6).filled(),
        );
        r.set_margin(2, 2, 0, 0);
        r
    }))?;
    Ok(())
}

fn series_plot(root: &Area, p: &Plot, series: &[Series]) -> Res {
    let pts = || series.iter().flat_map(|s| s.points.iter());
    let (x0, x1) = pts().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
        (a.min(p.0), b.max(p.0))
    });
    let (y0, y1) = pts().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), p| {
        (a.min(p.1), b.max(p.1))
    });
    let (x0, x1) = if x0.is_finite() {
        span(x0, x1)
    } else {
        (0.0, 1.0)
    };
    let (y0, y1) = if y0.is_finite() {
        span(y0.min(0.0), y1 * 1.05)
    } else {
        (0.0, 1.0)
    };
    let mut chart = ChartBuilder::on(root)
        .caption(&p.title, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    mesh(&mut chart, &p.x, &p.y)?;
    for (i, s) in series.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        chart
            .draw_series(LineSeries::new(
                s.points.iter().copied(),
                color.stroke_width(2),
            ))?
            .label(s.name.clone())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 16, y)], color));
    }
    if series.len() > 1 {
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
    }
    Ok(())
}

/// Writes every plot of the report to `dir/<id>.svg` (the directory must exist); returns the
/// files written, in report order.
pub fn write_dir(r: &Report, dir: &Path) -> Result<Vec<PathBuf>, String> {
    if !dir.is_dir() {
        return Err(format!("{}: not a directory", dir.display()));
    }
    let mut files = Vec::new();
    for p in r.plots() {
        let path = dir.join(format!("{}.svg", p.id));
        std::fs::write(&path, plot(p)).map_err(|e| format!("{}: {e}", path.display()))?;
        files.push(path);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Clock, Unit};

    #[test]
    fn draws_every_kind_of_plot() {
        let h = Plot {
            id: "h".into(),
            title: "Read latency".into(),
            x: Axis::new(
                "latency",
                Unit::Cycles {
                    clock: Clock::Processor,
                },
            ),
            y: Axis::new("misses", Unit::Count),
            data: PlotData::Histogram {
                bins: vec![
                    Bin {
                        lo: 0.0,
                        hi: 10.0,
                        count: 3,
                    },
                    Bin {
                        lo: 10.0,
                        hi: 20.0,
                        count: 7,
                    },
                ],
            },
        };
        let s = plot(&h);
        assert!(s.starts_with("<svg"), "{s}");
        assert!(s.contains("Read latency"));
        assert!(s.contains("latency (proc. cycles)"));
        assert!(s.contains("misses (count)"));
        // Two bins: two filled rectangles besides the background.
        assert_eq!(s.matches("<rect").count(), 3, "{s}");
        let b = Plot {
            id: "b".into(),
            title: "States".into(),
            x: Axis::new(
                "cycles",
                Unit::Cycles {
                    clock: Clock::Processor,
                },
            ),
            y: Axis::new("state", Unit::Count),
            data: PlotData::Bars {
                bars: vec![("load".into(), 5.0), ("store, \"x\" <y>".into(), 2.0)],
            },
        };
        let s = plot(&b);
        assert!(s.contains("\nload\n"), "{s}");
        assert!(s.contains("&lt;y&gt;"), "labels are escaped: {s}");
        let l = Plot {
            id: "l".into(),
            title: "Series".into(),
            x: Axis::new(
                "time",
                Unit::Cycles {
                    clock: Clock::System,
                },
            ),
            y: Axis::new("queue", Unit::Count),
            data: PlotData::Series {
                series: vec![
                    Series {
                        name: "a".into(),
                        points: vec![(0.0, 1.0), (1.0, 2.0)],
                    },
                    Series {
                        name: "b".into(),
                        points: vec![],
                    },
                ],
            },
        };
        let s = plot(&l);
        assert!(s.contains("<polyline") && s.contains("\na\n"), "{s}");
    }
}
