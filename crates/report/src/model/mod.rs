//! The typed report model: a [`Report`] is [`Section`]s of [`Table`]s, [`Plot`]s and text lines.
//!
//! Every column says what its numbers are ([`Kind`]: a label, a quantity in a [`Unit`], or an
//! estimate beside its exact value), so the renderers (`crate::render`) can put the unit in the
//! header, align and separate numbers, never mix a ratio into a column of counts, and write
//! plain numbers to CSV and JSON. A monitor builds one [`Section`] (its counters as estimate
//! columns, its histograms as plots); the base run report is built in `crate::base`.
//! Column kinds, units and clocks: `docs/reports.md`.
//!
//! ```
//! use report::model::{Cell, Column, Report, Section, Table, Unit};
//! let mut t = Table::new(
//!     "counters",
//!     "NUMAchine monitor: counters",
//!     vec![Column::label("counter"), Column::estimate("value", Unit::Count, 0)],
//! );
//! t.row(vec!["PAPI_L2_LDM".into(), Cell::estimate(797u64, 797u64)]);
//! t.row(vec!["invalidation misses".into(), Cell::estimate(13_170u64, 4_162u64)]);
//! let mut s = Section::new("NUMAchine monitor");
//! s.table(t);
//! let text = report::render::text::render(&Report { sections: vec![s] });
//! assert!(text.contains("+216.43%"));
//! ```

pub mod format;

use serde::Serialize;

/// The clock a cycle count is in. pmusim has several (seed 005 §4: the R4400 runs at 150 MHz,
/// the station bus and the monitor at 50 MHz, the pipeline-status circuit at 75 MHz; FLASH's
/// MAGIC at 100 MHz), so a bare "cycles" is ambiguous.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Clock {
    /// The processor clock (`clocks.cpu_hz`).
    Processor,
    /// The system clock (`clocks.system_hz`): station bus on NUMAchine, MAGIC on FLASH.
    System,
    /// A monitor's own clock (the NUMAchine monitor: the system clock).
    Monitor,
    /// The pipeline-status circuit (`clocks.pipeline_status_hz`).
    PipelineStatus,
    /// The engine's tick (the least common multiple of every clock).
    Tick,
    /// Any other clock, by name (for example "processor x2").
    Named(String),
}

impl Clock {
    /// The name used in headers and axis labels ("processor cycles", ...).
    pub fn cycles_label(&self) -> String {
        match self {
            Clock::Processor => "proc. cycles".into(),
            Clock::System => "system cycles".into(),
            Clock::Monitor => "monitor cycles".into(),
            Clock::PipelineStatus => "pipeline-status cycles".into(),
            Clock::Tick => "ticks".into(),
            Clock::Named(n) => format!("{n} cycles"),
        }
    }
}

/// What a number measures.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "unit")]
pub enum Unit {
    /// Events (misses, references, instructions).
    Count,
    /// Cycles of one clock.
    Cycles { clock: Clock },
    /// Bytes.
    Bytes,
    /// A quotient that is not a share, named by what it divides (`per`: "cycles / instruction").
    Ratio { per: String },
    /// A share in percent (the cell holds 2.71 for 2.71 %).
    Percent,
}

impl Unit {
    /// The unit as a header or axis shows it.
    pub fn label(&self) -> String {
        match self {
            Unit::Count => "count".into(),
            Unit::Cycles { clock } => clock.cycles_label(),
            Unit::Bytes => "bytes".into(),
            Unit::Ratio { per } => per.clone(),
            Unit::Percent => "%".into(),
        }
    }
}

/// What a column holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// Text: a name, an index, a description (left-aligned, no unit).
    Label,
    /// A measured or derived quantity in a unit.
    Quantity(Unit),
    /// A monitored value beside the exact one (ground truth), in a unit; renderers add the
    /// exact value and the error (see [`format::estimate_error`]).
    Estimate(Unit),
}

/// One column: its name, kind and how many decimals its numbers show in text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Column {
    pub name: String,
    pub kind: Kind,
    /// Decimals shown in text for fractional values (CSV and JSON keep full precision).
    pub decimals: u8,
}

impl Column {
    pub fn new(name: &str, kind: Kind, decimals: u8) -> Column {
        Column {
            name: name.into(),
            kind,
            decimals,
        }
    }
    /// A text column.
    pub fn label(name: &str) -> Column {
        Column::new(name, Kind::Label, 0)
    }
    /// Events.
    pub fn count(name: &str) -> Column {
        Column::new(name, Kind::Quantity(Unit::Count), 0)
    }
    /// Cycles of `clock`, shown with `decimals` (0 for totals, 1 for means).
    pub fn cycles(name: &str, clock: Clock, decimals: u8) -> Column {
        Column::new(name, Kind::Quantity(Unit::Cycles { clock }), decimals)
    }
    pub fn bytes(name: &str) -> Column {
        Column::new(name, Kind::Quantity(Unit::Bytes), 0)
    }
    /// A quotient named by what it divides ("cycles / instruction").
    pub fn ratio(name: &str, per: &str, decimals: u8) -> Column {
        Column::new(
            name,
            Kind::Quantity(Unit::Ratio { per: per.into() }),
            decimals,
        )
    }
    /// A share in percent, two decimals.
    pub fn percent(name: &str) -> Column {
        Column::new(name, Kind::Quantity(Unit::Percent), 2)
    }
    /// A monitored value in `unit` beside its exact value.
    pub fn estimate(name: &str, unit: Unit, decimals: u8) -> Column {
        Column::new(name, Kind::Estimate(unit), decimals)
    }
    /// The column's unit, if it has one.
    pub fn unit(&self) -> Option<&Unit> {
        match &self.kind {
            Kind::Label => None,
            Kind::Quantity(u) | Kind::Estimate(u) => Some(u),
        }
    }
}

/// A number that keeps integers integral (counts stay exact in JSON and CSV).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Num {
    Int(u64),
    Float(f64),
}

impl Num {
    pub fn as_f64(self) -> f64 {
        match self {
            Num::Int(v) => v as f64,
            Num::Float(v) => v,
        }
    }
}

impl From<u64> for Num {
    fn from(v: u64) -> Num {
        Num::Int(v)
    }
}

impl From<f64> for Num {
    fn from(v: f64) -> Num {
        Num::Float(v)
    }
}

/// One cell. Numbers stay numbers until a renderer formats them.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Cell {
    /// No value (a ratio over zero, a column that does not apply): "-" in text, empty in CSV,
    /// null in JSON.
    Empty,
    Int(u64),
    Float(f64),
    Text(String),
    /// A monitored value and the exact one it estimates.
    Estimate {
        monitored: Num,
        exact: Num,
    },
}

impl Cell {
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }
    /// `a / b`, or empty when `b` is 0.
    pub fn ratio(a: u64, b: u64) -> Cell {
        if b == 0 {
            Cell::Empty
        } else {
            Cell::Float(a as f64 / b as f64)
        }
    }
    /// `100 a / b` (a percentage), or empty when `b` is 0.
    pub fn percent(a: u64, b: u64) -> Cell {
        if b == 0 {
            Cell::Empty
        } else {
            Cell::Float(100.0 * a as f64 / b as f64)
        }
    }
    pub fn estimate(monitored: impl Into<Num>, exact: impl Into<Num>) -> Cell {
        Cell::Estimate {
            monitored: monitored.into(),
            exact: exact.into(),
        }
    }
}

impl From<u64> for Cell {
    fn from(v: u64) -> Cell {
        Cell::Int(v)
    }
}

impl From<f64> for Cell {
    fn from(v: f64) -> Cell {
        Cell::Float(v)
    }
}

impl From<&str> for Cell {
    fn from(v: &str) -> Cell {
        Cell::Text(v.into())
    }
}

impl From<String> for Cell {
    fn from(v: String) -> Cell {
        Cell::Text(v)
    }
}

/// A table: typed columns, rows of cells, an optional totals row and a note line.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Table {
    /// A short stable name, unique in its report: the CSV file name (`<id>.csv`).
    pub id: String,
    pub title: String,
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Cell>>,
    /// The totals row (shown last; its first cell is usually the label "all").
    pub total: Option<Vec<Cell>>,
    /// One line under the table (what the rows omit, how a column is scaled).
    pub note: Option<String>,
}

impl Table {
    pub fn new(id: &str, title: &str, columns: Vec<Column>) -> Table {
        Table {
            id: id.into(),
            title: title.into(),
            columns,
            rows: Vec::new(),
            total: None,
            note: None,
        }
    }
    /// Adds a row. Panics when the row's width differs from the columns' (a programming
    /// error in the report's builder, caught by its tests).
    pub fn row(&mut self, cells: Vec<Cell>) {
        assert_eq!(
            cells.len(),
            self.columns.len(),
            "table `{}`: row width",
            self.id
        );
        self.rows.push(cells);
    }
    pub fn set_total(&mut self, cells: Vec<Cell>) {
        assert_eq!(
            cells.len(),
            self.columns.len(),
            "table `{}`: totals width",
            self.id
        );
        self.total = Some(cells);
    }
    pub fn set_note(&mut self, note: impl Into<String>) {
        self.note = Some(note.into());
    }
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty() && self.total.is_none()
    }
    /// The rows followed by the totals row.
    pub fn all_rows(&self) -> impl Iterator<Item = &Vec<Cell>> {
        self.rows.iter().chain(self.total.iter())
    }
}

/// A plot axis: what it shows and in which unit (linear scale).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Axis {
    pub name: String,
    pub unit: Unit,
}

impl Axis {
    pub fn new(name: &str, unit: Unit) -> Axis {
        Axis {
            name: name.into(),
            unit,
        }
    }
    /// "name (unit)".
    pub fn label(&self) -> String {
        format!("{} ({})", self.name, self.unit.label())
    }
}

/// One bin of a histogram: values in `[lo, hi)` seen `count` times.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Bin {
    pub lo: f64,
    pub hi: f64,
    pub count: u64,
}

/// One named line of a series plot.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// What a plot draws.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum PlotData {
    /// Bins on the x axis, counts on the y axis.
    Histogram { bins: Vec<Bin> },
    /// One bar per label.
    Bars { bars: Vec<(String, f64)> },
    /// Lines through (x, y) points.
    Series { series: Vec<Series> },
}

/// A plot: rendered to SVG (text and CSV renderers list the data as tables instead).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Plot {
    /// A short stable name, unique in its report: the SVG file name (`<id>.svg`).
    pub id: String,
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub data: PlotData,
}

/// One block of a section, in order.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Block {
    /// A line of prose (a run summary, a check's detail).
    Text(String),
    Table(Table),
    Plot(Plot),
}

/// A part of a report: the base run, one monitor.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Section {
    pub title: String,
    pub blocks: Vec<Block>,
}

impl Section {
    pub fn new(title: &str) -> Section {
        Section {
            title: title.into(),
            blocks: Vec::new(),
        }
    }
    pub fn text(&mut self, line: impl Into<String>) {
        self.blocks.push(Block::Text(line.into()));
    }
    pub fn table(&mut self, t: Table) {
        self.blocks.push(Block::Table(t));
    }
    pub fn plot(&mut self, p: Plot) {
        self.blocks.push(Block::Plot(p));
    }
    pub fn tables(&self) -> impl Iterator<Item = &Table> {
        self.blocks.iter().filter_map(|b| match b {
            Block::Table(t) => Some(t),
            _ => None,
        })
    }
    pub fn plots(&self) -> impl Iterator<Item = &Plot> {
        self.blocks.iter().filter_map(|b| match b {
            Block::Plot(p) => Some(p),
            _ => None,
        })
    }
}

/// A whole report: the base run's section, then one per monitor.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Report {
    pub sections: Vec<Section>,
}

impl Report {
    pub fn tables(&self) -> impl Iterator<Item = &Table> {
        self.sections.iter().flat_map(|s| s.tables())
    }
    pub fn plots(&self) -> impl Iterator<Item = &Plot> {
        self.sections.iter().flat_map(|s| s.plots())
    }
}
