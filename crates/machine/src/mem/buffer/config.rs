//! The interface buffer's settings (seed 002, "DRAM memory interface buffer" and
//! "Performance-enhancing features"; issue 16 item 1).

/// Largest entry (and read-buffer line): POWER2's 256-byte line, the largest of the presets;
/// a write-buffer entry's byte-valid mask ([`super::ByteMask`]) has one bit per byte.
pub const MAX_BLOCK_BYTES: u32 = 256;

/// Sizes and policies of one memory-interface buffer.
///
/// Capacity and watermark count **units** of `unit_bytes`: 4-byte words in the seed's word mode
/// (32 words), whole lines in line mode (multiprocessor presets, where line write-backs go
/// through the buffer). An entry covers one aligned `block_bytes` block with a byte-valid mask,
/// so a write to another word of a buffered block merges into that entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BufferConfig {
    /// The unit of capacity and watermark: 4 (a word) in word mode, the line size in line mode.
    pub unit_bytes: u32,
    /// Capacity in units (the seed's 32 words).
    pub capacity: usize,
    /// Bytes per write-buffer entry (one DRAM write transaction): the seed's four-word block
    /// (16) in word mode, a line in line mode. A multiple of `unit_bytes`.
    pub block_bytes: u32,
    /// Buffered units at which the write buffer gets priority for DRAM (1..=capacity).
    pub watermark: usize,
    /// Read-buffer lines (the seed's two).
    pub read_lines: usize,
    /// Read-buffer line size (the seed's four words, 16 bytes).
    pub line_bytes: u32,
    /// Fetch the line after each requested line into the read buffer (the seed's read-ahead).
    pub read_ahead: bool,
    /// Read-ahead lines are kept in the read buffer (true, the seed). False is a control
    /// experiment, not a design: the read-ahead's DRAM read is still issued and timed, but its
    /// line is dropped at once, so it occupies the DRAM and serves no request. Comparing the
    /// two separates what read-ahead's data saves from what its DRAM occupancy does to the
    /// timing of everything else (docs/memory-buffer.md, "What read-ahead gains on
    /// `numachine`").
    pub read_ahead_keeps: bool,
    /// Below the watermark, drain writes when the DRAM is otherwise idle (gem5's and
    /// Ramulator's behaviour); off, the buffer only accumulates below the watermark (the
    /// seed's reading: "accumulates ... until the watermark limit is reached").
    pub drain_when_idle: bool,
}

impl BufferConfig {
    /// The seed's buffer: 32 words of 4 bytes, four-word blocks, two 16-byte read lines,
    /// watermark 16, read-ahead on.
    pub fn words() -> BufferConfig {
        BufferConfig {
            unit_bytes: 4,
            capacity: 32,
            block_bytes: 16,
            watermark: 16,
            read_lines: 2,
            line_bytes: 16,
            read_ahead: true,
            read_ahead_keeps: true,
            drain_when_idle: false,
        }
    }
    /// Line-sized entries for the multiprocessor presets: `entries` lines of `line_bytes`,
    /// watermark at half, two read lines of the same size.
    pub fn lines(line_bytes: u32, entries: usize) -> BufferConfig {
        BufferConfig {
            unit_bytes: line_bytes,
            capacity: entries,
            block_bytes: line_bytes,
            watermark: entries.div_ceil(2).max(1),
            read_lines: 2,
            line_bytes,
            read_ahead: true,
            read_ahead_keeps: true,
            drain_when_idle: false,
        }
    }
    /// Checks every constraint; the message names the setting.
    pub fn validate(&self) -> Result<(), String> {
        let pow2 = |name: &str, v: u32| -> Result<(), String> {
            if v == 0 || !v.is_power_of_two() {
                Err(format!(
                    "memory buffer: {name} = {v} must be a power of two"
                ))
            } else {
                Ok(())
            }
        };
        pow2("unit_bytes", self.unit_bytes)?;
        pow2("block_bytes", self.block_bytes)?;
        pow2("line_bytes", self.line_bytes)?;
        if self.block_bytes < self.unit_bytes {
            return Err(format!(
                "memory buffer: block_bytes = {} is smaller than unit_bytes = {}",
                self.block_bytes, self.unit_bytes
            ));
        }
        if self.block_bytes > MAX_BLOCK_BYTES {
            return Err(format!(
                "memory buffer: block_bytes = {} is above the {MAX_BLOCK_BYTES}-byte limit of an entry",
                self.block_bytes
            ));
        }
        if self.capacity == 0 {
            return Err("memory buffer: capacity must be at least 1 unit".into());
        }
        let per_block = (self.block_bytes / self.unit_bytes) as usize;
        if self.capacity < per_block {
            return Err(format!(
                "memory buffer: capacity = {} units cannot hold one {}-byte block",
                self.capacity, self.block_bytes
            ));
        }
        if self.watermark == 0 || self.watermark > self.capacity {
            return Err(format!(
                "memory buffer: watermark = {} is not in 1..={} (the capacity)",
                self.watermark, self.capacity
            ));
        }
        if self.read_lines == 0 {
            return Err("memory buffer: read_lines must be at least 1".into());
        }
        if self.read_ahead && self.read_lines < 2 {
            return Err(
                "memory buffer: read_ahead needs read_lines >= 2 (the fetched line would evict the requested one)"
                    .into(),
            );
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn presets_are_valid_and_bad_settings_are_named() {
        BufferConfig::words().validate().unwrap();
        BufferConfig::lines(128, 8).validate().unwrap();
        BufferConfig::lines(256, 4).validate().unwrap();
        assert_eq!(BufferConfig::lines(64, 32).watermark, 16);
        let w = BufferConfig::words();
        for (c, want) in [
            (BufferConfig { watermark: 0, ..w }, "watermark = 0"),
            (BufferConfig { watermark: 33, ..w }, "watermark = 33"),
            (BufferConfig { unit_bytes: 3, ..w }, "unit_bytes = 3"),
            (
                BufferConfig {
                    block_bytes: 2,
                    ..w
                },
                "block_bytes = 2",
            ),
            (
                BufferConfig {
                    capacity: 2,
                    watermark: 1,
                    ..w
                },
                "capacity = 2",
            ),
            (BufferConfig { read_lines: 0, ..w }, "read_lines"),
            (BufferConfig { read_lines: 1, ..w }, "read_ahead needs"),
            (BufferConfig::lines(512, 4), "block_bytes = 512"),
        ] {
            let e = c.validate().unwrap_err();
            assert!(e.contains(want), "{e}");
        }
    }
}
