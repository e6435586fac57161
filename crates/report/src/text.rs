//! The text report of a run: the base report (`crate::base`) rendered by the text renderer.

use serde_json::Value;

/// Renders the run document's base report as text tables.
pub fn render(doc: &Value, top: usize) -> String {
    crate::render::text::render(&crate::base::build(doc, top))
}
