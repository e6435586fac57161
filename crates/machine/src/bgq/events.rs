//! The event sources of Blue Gene/Q's universal performance counters (issue 14; seed 001, IBM
//! patent 8,595,389): what an L2 slice, a core's L1 prefetcher (L1P) and the A2 core itself
//! report, one enum each, with IBM's driver names for them (`jedbrown/bgq-driver`,
//! `spi/include/upci/events.h` and `spi/src/upci/upc_evttbl.c`: the `PEVT_*` identifiers).
//!
//! The machine emits these as `probe::Observation::L2Slice`, `L1p` and `CoreEvent`, each only
//! when a probe asks for its kind (`probe::kind::L2_SLICE`, `L1P`, `CORE_EVENT`); the ground
//! truth counts them exactly either way (`truth::GroundTruth::l2_events`, `l1p_events`,
//! `core_events`). Events about hardware pmusim does not model (thread-level speculation and
//! transactional memory in the L2, the L1P's list prefetcher, the A2's ERATs beyond the
//! software TLB, ...) are in the enums when a counter unit can select them, marked
//! `modelled() == false`, and never emitted. docs/bgq.md has the whole list.

/// The events of one L2 slice (UPC_L2). The first 16 are the driver's 16 L2 event selections
/// (`UPC_ES_L2` selection values 0 to 15, in its order); the driver names each twice, summed
/// over the slices (`PEVT_L2_HITS`) and per slice (`PEVT_L2_HITS_SLICE`), which makes its 32
/// `PEVT_L2_*` names. The patent's Mode 1 counts "32 different types of events" of one slice
/// (seed 001, the UPC_L2 paragraph after Table 1-6); the driver names no more than 16, so the
/// other 16 here (from `Read` on) are pmusim's: the slice's protocol traffic by kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum L2Event {
    /// A core's request (read, read-exclusive, upgrade, write-back, write-through store) found
    /// its line in the slice's array.
    Hits = 0,
    /// A core's request did not find its line in the array.
    Misses,
    /// The slice's own prefetcher read a line from memory ("L2 prefetch ahead of L1P
    /// prefetch"; the shared level's prefetcher slot).
    Prefetch,
    /// A 128-byte line read from memory (demand misses, the slice's and the L1Ps' prefetches).
    FetchLine,
    /// A dirty victim written to memory as a whole line (it was read from memory or fully
    /// written since).
    StoreLine,
    /// A dirty victim written to memory as a partial line: allocated by a write-back or a
    /// write-through store without a fetch, so only the bytes written are valid.
    StorePartialLine,
    /// A request rejected (NACKed: its line was busy with another request).
    ReqReject,
    /// A request accepted and served (not rejected): `Hits + Misses`.
    ReqRetire,
    /// A request's miss allocated a line whose victim was valid.
    ReqMissAndEvict,
    /// Speculative request's miss with eviction: not modelled (no speculation).
    ReqMissAndEvictSpec,
    /// Any allocation in the array (requests, memory fills, prefetches) that evicted a valid
    /// line.
    MissAndEvict,
    /// Not modelled (no speculation).
    MissAndEvictSpec,
    /// Not modelled (no speculation).
    ReqSpecAddrCleanup,
    /// Not modelled (no speculation).
    SpecAddrCleanup,
    /// Not modelled (no speculation).
    SpecSetCleanup,
    /// Not modelled (no speculation).
    SpecRetry,
    /// A read request served.
    Read,
    /// A read-exclusive request served.
    ReadEx,
    /// An upgrade request served (granted or cancelled).
    Upgrade,
    /// A write-back received.
    Writeback,
    /// A write-through store received (a core whose L1 D is write-through).
    StoreThrough,
    /// A read that missed the array.
    ReadMiss,
    /// A read-exclusive or upgrade that missed the array.
    WriteMiss,
    /// A write-back that missed the array.
    WritebackMiss,
    /// A write-through store that missed the array.
    StoreThroughMiss,
    /// An invalidation sent to a core's L1 (a back-invalidate).
    InvalidateSent,
    /// An intervention sent to the core owning the line.
    InterventionSent,
    /// An invalidation acknowledgement received.
    InvalAck,
    /// An intervention reply received.
    InterventionReply,
    /// An upgrade cancelled (the requester's copy was invalidated first).
    UpgradeCancel,
    /// A line's data sent to a core.
    DataSent,
    /// A clean victim dropped from the array (`MissAndEvict` = this + `StoreLine` +
    /// `StorePartialLine`).
    EvictClean,
}

impl L2Event {
    pub const COUNT: usize = 32;
    pub const ALL: [L2Event; 32] = {
        use L2Event::*;
        [
            Hits,
            Misses,
            Prefetch,
            FetchLine,
            StoreLine,
            StorePartialLine,
            ReqReject,
            ReqRetire,
            ReqMissAndEvict,
            ReqMissAndEvictSpec,
            MissAndEvict,
            MissAndEvictSpec,
            ReqSpecAddrCleanup,
            SpecAddrCleanup,
            SpecSetCleanup,
            SpecRetry,
            Read,
            ReadEx,
            Upgrade,
            Writeback,
            StoreThrough,
            ReadMiss,
            WriteMiss,
            WritebackMiss,
            StoreThroughMiss,
            InvalidateSent,
            InterventionSent,
            InvalAck,
            InterventionReply,
            UpgradeCancel,
            DataSent,
            EvictClean,
        ]
    };

    /// The driver's name for the event summed over all slices, where it has one.
    pub const fn pevt(self) -> Option<&'static str> {
        use L2Event::*;
        Some(match self {
            Hits => "PEVT_L2_HITS",
            Misses => "PEVT_L2_MISSES",
            Prefetch => "PEVT_L2_PREFETCH",
            FetchLine => "PEVT_L2_FETCH_LINE",
            StoreLine => "PEVT_L2_STORE_LINE",
            StorePartialLine => "PEVT_L2_STORE_PARTIAL_LINE",
            ReqReject => "PEVT_L2_REQ_REJECT",
            ReqRetire => "PEVT_L2_REQ_RETIRE",
            ReqMissAndEvict => "PEVT_L2_REQ_MISS_AND_EVICT",
            ReqMissAndEvictSpec => "PEVT_L2_REQ_MISS_AND_EVICT_SPEC",
            MissAndEvict => "PEVT_L2_MISS_AND_EVICT",
            MissAndEvictSpec => "PEVT_L2_MISS_AND_EVICT_SPEC",
            ReqSpecAddrCleanup => "PEVT_L2_REQ_SPEC_ADDR_CLEANUP",
            SpecAddrCleanup => "PEVT_L2_SPEC_ADDR_CLEANUP",
            SpecSetCleanup => "PEVT_L2_SPEC_SET_CLEANUP",
            SpecRetry => "PEVT_L2_SPEC_RETRY",
            _ => return None,
        })
    }

    /// The driver's per-slice name (`..._SLICE`), where it has one.
    pub const fn pevt_slice(self) -> Option<&'static str> {
        use L2Event::*;
        Some(match self {
            Hits => "PEVT_L2_HITS_SLICE",
            Misses => "PEVT_L2_MISSES_SLICE",
            Prefetch => "PEVT_L2_PREFETCH_SLICE",
            FetchLine => "PEVT_L2_FETCH_LINE_SLICE",
            StoreLine => "PEVT_L2_STORE_LINE_SLICE",
            StorePartialLine => "PEVT_L2_STORE_PARTIAL_LINE_SLICE",
            ReqReject => "PEVT_L2_REQ_REJECT_SLICE",
            ReqRetire => "PEVT_L2_REQ_RETIRE_SLICE",
            ReqMissAndEvict => "PEVT_L2_REQ_MISS_AND_EVICT_SLICE",
            ReqMissAndEvictSpec => "PEVT_L2_REQ_MISS_AND_EVICT_SPEC_SLICE",
            MissAndEvict => "PEVT_L2_MISS_AND_EVICT_SLICE",
            MissAndEvictSpec => "PEVT_L2_MISS_AND_EVICT_SPEC_SLICE",
            ReqSpecAddrCleanup => "PEVT_L2_REQ_SPEC_ADDR_CLEANUP_SLICE",
            SpecAddrCleanup => "PEVT_L2_SPEC_ADDR_CLEANUP_SLICE",
            SpecSetCleanup => "PEVT_L2_SPEC_SET_CLEANUP_SLICE",
            SpecRetry => "PEVT_L2_SPEC_RETRY_SLICE",
            _ => return None,
        })
    }

    /// pmusim's name (kebab-case), for every event.
    pub const fn name(self) -> &'static str {
        use L2Event::*;
        match self {
            Hits => "hits",
            Misses => "misses",
            Prefetch => "prefetch",
            FetchLine => "fetch-line",
            StoreLine => "store-line",
            StorePartialLine => "store-partial-line",
            ReqReject => "req-reject",
            ReqRetire => "req-retire",
            ReqMissAndEvict => "req-miss-and-evict",
            ReqMissAndEvictSpec => "req-miss-and-evict-spec",
            MissAndEvict => "miss-and-evict",
            MissAndEvictSpec => "miss-and-evict-spec",
            ReqSpecAddrCleanup => "req-spec-addr-cleanup",
            SpecAddrCleanup => "spec-addr-cleanup",
            SpecSetCleanup => "spec-set-cleanup",
            SpecRetry => "spec-retry",
            Read => "read",
            ReadEx => "read-exclusive",
            Upgrade => "upgrade",
            Writeback => "writeback",
            StoreThrough => "store-through",
            ReadMiss => "read-miss",
            WriteMiss => "write-miss",
            WritebackMiss => "writeback-miss",
            StoreThroughMiss => "store-through-miss",
            InvalidateSent => "invalidate-sent",
            InterventionSent => "intervention-sent",
            InvalAck => "inval-ack",
            InterventionReply => "intervention-reply",
            UpgradeCancel => "upgrade-cancel",
            DataSent => "data-sent",
            EvictClean => "evict-clean",
        }
    }

    /// False for the events of hardware pmusim does not model (never emitted, always 0).
    pub const fn modelled(self) -> bool {
        use L2Event::*;
        !matches!(
            self,
            ReqMissAndEvictSpec
                | MissAndEvictSpec
                | ReqSpecAddrCleanup
                | SpecAddrCleanup
                | SpecSetCleanup
                | SpecRetry
        )
    }

    /// Most events of this kind one slice can produce per x2 (half-rate) cycle: a slice's
    /// pipeline takes one request per `occupancy_cycles` processor cycles, and each request
    /// produces each event at most once, except that one write-through store or exclusive
    /// request invalidates up to every other core (`InvalidateSent`), and a fill and a request
    /// may decide in the same cycle. pmusim's bound, for the counters' width arithmetic.
    pub const fn max_per_x2_cycle(self, cores: u32) -> u32 {
        match self {
            L2Event::InvalidateSent => cores,
            _ => 2,
        }
    }
}

/// The events of a core's L1 prefetcher (L1P), as pmusim models it: a stream prefetcher
/// between the L1 D and the crossbar (`cmp::prefetch::Stream`). Driver names `PEVT_L1P_*`;
/// the list prefetcher, the write-combining store path and the switch's internal events are
/// not modelled (docs/bgq.md lists them as absent).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum L1pEvent {
    /// A demand miss to a line the L1P had prefetched and received.
    Hit = 0,
    /// A demand miss to a line whose prefetch was still in flight (prefetch converted to a
    /// demand fetch).
    Pf2dfc,
    /// A demand miss the L1P did not hold.
    Miss,
    /// A demand load miss reaching the L1P.
    Load,
    /// A store passing through the L1P to its slice (write-through).
    Store,
    /// A line the L1P asked for (a prefetch issued).
    StreamLineEstablished,
    /// A new stream detected.
    StreamEstablished,
    /// A prefetched line dropped from the L1P without a demand for it.
    EvictUnused,
    /// A store by the core to a line the L1P holds (the line is dropped).
    WriteInvalidate,
    /// An invalidation from a slice matching a line the L1P holds (the line is dropped).
    RemoteInvalidateMatch,
}

impl L1pEvent {
    pub const COUNT: usize = 10;
    pub const ALL: [L1pEvent; 10] = {
        use L1pEvent::*;
        [
            Hit,
            Pf2dfc,
            Miss,
            Load,
            Store,
            StreamLineEstablished,
            StreamEstablished,
            EvictUnused,
            WriteInvalidate,
            RemoteInvalidateMatch,
        ]
    };

    pub const fn pevt(self) -> &'static str {
        use L1pEvent::*;
        match self {
            Hit => "PEVT_L1P_BAS_HIT",
            Pf2dfc => "PEVT_L1P_BAS_PF2DFC",
            Miss => "PEVT_L1P_BAS_MISS",
            Load => "PEVT_L1P_BAS_LD",
            Store => "PEVT_L1P_BAS_ST",
            StreamLineEstablished => "PEVT_L1P_BAS_STRM_LINE_ESTB",
            StreamEstablished => "PEVT_L1P_STRM_STRM_ESTB",
            EvictUnused => "PEVT_L1P_STRM_EVICT_UNUSED",
            WriteInvalidate => "PEVT_L1P_STRM_WRT_INVAL",
            RemoteInvalidateMatch => "PEVT_L1P_STRM_REMOTE_INVAL_MATCH",
        }
    }

    pub const fn name(self) -> &'static str {
        use L1pEvent::*;
        match self {
            Hit => "hit",
            Pf2dfc => "pf2dfc",
            Miss => "miss",
            Load => "load",
            Store => "store",
            StreamLineEstablished => "stream-line-established",
            StreamEstablished => "stream-established",
            EvictUnused => "evict-unused",
            WriteInvalidate => "write-invalidate",
            RemoteInvalidateMatch => "remote-invalidate-match",
        }
    }
}

/// The A2 core's performance events that pmusim's core model produces on its slow paths
/// (misses, translations, atomics, interrupts), selected on the real chip through the core's
/// event-select registers. Events that follow from retired instructions (committed loads,
/// stores, branches, FP operations: `PEVT_LSU_COMMIT_STS`, `PEVT_XU_BR_COMMIT`,
/// `PEVT_INST_*`, ...) come from `Observation::Retire` and its `Op` (docs/bgq.md has the
/// mapping), not from here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum CoreEvent {
    /// An instruction fetch missed the L1 I.
    Il1Miss = 0,
    /// Cycles the thread waited for an L1 I miss (`n` cycles, reported when it is served).
    Il1MissCycles,
    /// A load missed the L1 D.
    LoadMiss,
    /// A store missed the L1 D (write-through: not allocated).
    StoreMiss,
    /// A cache-inhibited (uncached) load.
    CacheInhibitedLoad,
    /// An atomic's load half (lwarx) finished.
    LarxFinished,
    /// An atomic's store half (stwcx.) committed.
    Stcx,
    /// An atomic's store half failed (a compare-and-swap that did not swap).
    StcxFail,
    /// A back-invalidate from a slice reached the L1 D.
    BackInvalidate,
    /// ... and found its line there.
    BackInvalidateHit,
    /// An instruction translation missed (the software TLB's refill; `--tlb`).
    IeratMiss,
    /// A data translation missed.
    DeratMiss,
    /// An interrupt was taken.
    InterruptTaken,
    /// Cycles the thread waited for an L1 D miss (`n` cycles, reported when it is served).
    DataMissCycles,
    /// A committed branch the core's branch predictor got wrong (`[cpu.branch_predictor]`;
    /// never on a core without one, as the `bgq` preset).
    BrMispredict,
}

impl CoreEvent {
    pub const COUNT: usize = 15;
    pub const ALL: [CoreEvent; 15] = {
        use CoreEvent::*;
        [
            Il1Miss,
            Il1MissCycles,
            LoadMiss,
            StoreMiss,
            CacheInhibitedLoad,
            LarxFinished,
            Stcx,
            StcxFail,
            BackInvalidate,
            BackInvalidateHit,
            IeratMiss,
            DeratMiss,
            InterruptTaken,
            DataMissCycles,
            BrMispredict,
        ]
    };

    /// The driver's name; `None` for pmusim's own (`DataMissCycles`: the A2 has no clean
    /// equivalent; its `PEVT_LSU_LD_LAT_MEM_SUBSYS_CYC` is documented as broken).
    pub const fn pevt(self) -> Option<&'static str> {
        use CoreEvent::*;
        Some(match self {
            Il1Miss => "PEVT_IU_IL1_MISS",
            Il1MissCycles => "PEVT_IU_IL1_MISS_CYC",
            LoadMiss => "PEVT_LSU_COMMIT_LD_MISSES",
            StoreMiss => "PEVT_LSU_COMMIT_ST_MISSES",
            CacheInhibitedLoad => "PEVT_LSU_COMMIT_CACHE_INHIB_LD_MISSES",
            LarxFinished => "PEVT_LSU_LARX_FINISHED",
            Stcx => "PEVT_LSU_COMMIT_STCX",
            StcxFail => "PEVT_XU_STCX_FAIL",
            BackInvalidate => "PEVT_LSU_L1_DCACHE_BACK_INVAL",
            BackInvalidateHit => "PEVT_LSU_L1_DCACHE_BACK_INVAL_HITS",
            IeratMiss => "PEVT_MMU_IERAT_MISS",
            DeratMiss => "PEVT_MMU_DERAT_MISS",
            InterruptTaken => "PEVT_XU_INTS_TAKEN",
            BrMispredict => "PEVT_XU_BR_MISPRED_COMMIT",
            DataMissCycles => return None,
        })
    }

    pub const fn name(self) -> &'static str {
        use CoreEvent::*;
        match self {
            Il1Miss => "il1-miss",
            Il1MissCycles => "il1-miss-cycles",
            LoadMiss => "load-miss",
            StoreMiss => "store-miss",
            CacheInhibitedLoad => "cache-inhibited-load",
            LarxFinished => "larx-finished",
            Stcx => "stcx",
            StcxFail => "stcx-fail",
            BackInvalidate => "back-invalidate",
            BackInvalidateHit => "back-invalidate-hit",
            IeratMiss => "ierat-miss",
            DeratMiss => "derat-miss",
            InterruptTaken => "interrupt-taken",
            DataMissCycles => "data-miss-cycles",
            BrMispredict => "br-mispredict",
        }
    }

    /// Counted in cycles (`n` is a number of processor cycles) rather than occurrences.
    pub const fn cycles(self) -> bool {
        matches!(self, CoreEvent::Il1MissCycles | CoreEvent::DataMissCycles)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_are_complete_and_in_order() {
        for (i, e) in L2Event::ALL.iter().enumerate() {
            assert_eq!(*e as usize, i);
        }
        for (i, e) in L1pEvent::ALL.iter().enumerate() {
            assert_eq!(*e as usize, i);
        }
        for (i, e) in CoreEvent::ALL.iter().enumerate() {
            assert_eq!(*e as usize, i);
        }
        // The driver's 16 L2 selections, each named twice (combined and per slice): 32 names.
        let named: Vec<_> = L2Event::ALL.iter().filter_map(|e| e.pevt()).collect();
        assert_eq!(named.len(), 16);
        assert_eq!(named[0], "PEVT_L2_HITS");
        assert_eq!(named[15], "PEVT_L2_SPEC_RETRY");
        assert_eq!(
            L2Event::ALL
                .iter()
                .filter(|e| e.pevt_slice().is_some())
                .count(),
            16
        );
        // Six speculation events are never emitted.
        assert_eq!(L2Event::ALL.iter().filter(|e| !e.modelled()).count(), 6);
    }
}
