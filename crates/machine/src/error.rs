//! The error of a preset that cannot be built: a leaf module, so that every system's own
//! configuration section can return it without importing the preset (`config`) that embeds
//! those sections.

use std::fmt;

/// A preset field that is missing or out of range; the message names the field
/// (`caches.l2.line_bytes: ...`).
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigError(pub String);
impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for ConfigError {}
