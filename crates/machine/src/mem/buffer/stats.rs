//! Event counts of one interface buffer (every event the seed's Addies can select, and the
//! DRAM traffic they save or cost).

/// Counts since reset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct BufferStats {
    /// Write requests.
    pub writes: u64,
    /// Writes that collapsed or merged (the seed's "write buffer hit"): collapse + merge.
    pub write_hits: u64,
    /// Writes whose every unit was already buffered (overwritten in place).
    pub collapses: u64,
    /// Writes into a buffered block with at least one new unit.
    pub merges: u64,
    /// Writes that opened a new entry (each becomes one DRAM write).
    pub new_entries: u64,
    /// Writes that found the buffer without room and stalled.
    pub full: u64,
    /// Cycles writes stalled on a full buffer (timed model).
    pub full_stall_cycles: u64,
    /// Read requests.
    pub reads: u64,
    /// Reads that took at least one byte from the write buffer.
    pub read_merges: u64,
    /// Reads whose every byte was in the write buffer (no DRAM or read-buffer access).
    pub reads_from_write_buffer: u64,
    /// Reads served from the read buffer, once per request.
    pub read_buffer_hits: u64,
    /// Read-ahead lines fetched, and of those: first used by a request, or dropped (evicted or
    /// still resident at the end) without use.
    pub read_ahead_fetches: u64,
    pub read_ahead_used: u64,
    pub read_ahead_unused: u64,
    /// Reads whose DRAM read found the DRAM still busy with a read-ahead fetch.
    pub read_ahead_delays: u64,
    /// Reads kept waiting by write drains (the watermark's priority, or a drain occupying the
    /// DRAM when they came); writes kept waiting are `full`.
    pub write_delays: u64,
    /// DRAM transactions: line reads (demand and read-ahead) and block writes.
    pub dram_reads: u64,
    pub dram_writes: u64,
    /// Drains forced by a full buffer, by the watermark's priority, by idle DRAM, and by the
    /// explicit end-of-run drain.
    pub drains_full: u64,
    pub drains_watermark: u64,
    pub drains_idle: u64,
    pub drains_final: u64,
}
