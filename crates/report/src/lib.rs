//! Reports: the run's JSON document, the typed report model and its renderers.
//!
//! Only this crate and the command line serialize; the machine hands over plain structs.
//! `model` is the typed report (sections of tables and plots, every column with its unit);
//! `render` turns it into text, CSV, SVG and typed JSON; `base` builds the base run report.
//! `table` is the old string table, kept until the monitors move to the model.

pub mod base;
pub mod json;
pub mod model;
pub mod render;
pub mod table;
pub mod text;

pub use json::run_document;
pub use model::{
    Axis, Bin, Block, Cell, Clock, Column, Kind, Num, Plot, PlotData, Report, Section, Series,
    Table, Unit,
};
