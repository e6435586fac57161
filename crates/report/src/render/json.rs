//! The typed report as JSON, for programs that want columns with their kinds and units
//! (`serde_json` over the model's `Serialize`). Not the run's `--json` document
//! (`crate::json`), which stays as it is.

use crate::model::Report;

/// Pretty-printed JSON of the whole typed report.
pub fn render(r: &Report) -> String {
    serde_json::to_string_pretty(r).expect("the report model serializes")
}
