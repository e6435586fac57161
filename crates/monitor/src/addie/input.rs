//! What an Addie's input multiplexer can select (seed 002, "Performance-enhancing features"
//! onward). Each source is a stream of one bit per opportunity. On runs the four buffer inputs
//! are wired to the controller's `Observation::MemRequest` flags (`attached::Channel`, decided
//! once at attach); `Probe` streams are not wired on runs (`--addie-inputs` refuses them).

use std::fmt;

/// The multiplexer's input selection.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AddieInput {
    /// One bit per write request: 1 when the write collapsed into or merged with a buffered
    /// entry ("write buffer hit monitoring").
    WriteBufferHit,
    /// One bit per read request: 1 when at least one byte came from the write buffer.
    ReadMerge,
    /// One bit per write request: 1 when the write found the buffer full (and stalled).
    WriteBufferFull,
    /// One bit per read request (not per word): 1 when the read buffer served it.
    ReadBufferHit,
    /// Any other binary probe stream, by name (an L1 hit, a remote miss, ...).
    Probe(String),
}

impl AddieInput {
    /// Parses `wb-hit`, `read-merge`, `wb-full`, `rb-hit` or `probe:NAME`.
    pub fn parse(s: &str) -> Result<AddieInput, String> {
        Ok(match s {
            "wb-hit" => AddieInput::WriteBufferHit,
            "read-merge" => AddieInput::ReadMerge,
            "wb-full" => AddieInput::WriteBufferFull,
            "rb-hit" => AddieInput::ReadBufferHit,
            _ => match s.strip_prefix("probe:") {
                Some(n) if !n.is_empty() => AddieInput::Probe(n.to_string()),
                _ => {
                    return Err(format!(
                    "Addie input `{s}`: expected wb-hit, read-merge, wb-full, rb-hit or probe:NAME"
                ))
                }
            },
        })
    }
}

impl fmt::Display for AddieInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AddieInput::WriteBufferHit => f.write_str("wb-hit"),
            AddieInput::ReadMerge => f.write_str("read-merge"),
            AddieInput::WriteBufferFull => f.write_str("wb-full"),
            AddieInput::ReadBufferHit => f.write_str("rb-hit"),
            AddieInput::Probe(n) => write!(f, "probe:{n}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn parse_round_trips() {
        for s in ["wb-hit", "read-merge", "wb-full", "rb-hit", "probe:l1-hit"] {
            assert_eq!(AddieInput::parse(s).unwrap().to_string(), s);
        }
        assert!(AddieInput::parse("probe:")
            .unwrap_err()
            .contains("probe:NAME"));
        assert!(AddieInput::parse("l1").is_err());
    }
}
