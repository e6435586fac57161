//! Renderers of a typed [`Report`](crate::model::Report): text tables, CSV
//! files (`csv`), SVG plots (`plotters`) and the typed JSON (`serde_json`).

pub mod csv;
pub mod html;
pub mod json;
pub mod svg;
pub mod text;

use crate::model::{Column, Kind};

/// The flat columns a table's column becomes in text and CSV: an estimate column becomes
/// three (the monitored value, the exact value, the error); any other stays one.
pub(crate) fn is_estimate(c: &Column) -> bool {
    matches!(c.kind, Kind::Estimate(_))
}
