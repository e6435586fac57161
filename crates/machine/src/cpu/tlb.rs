//! The processor's TLB: fully associative, refilled by software, as on the MIPS R4000/R4400
//! (seed 000, Table 4.10 item 5: "TLB faults ... can be monitored in software").
//!
//! Each entry maps `pages_per_entry` consecutive pages (MIPS: an even/odd pair, one virtual
//! page number "VPN2" per entry). A reference whose VPN2 is in no entry takes a TLB refill
//! exception: the pipeline is flushed (`cpu.exception_cycles`, killed by exception), the
//! refill handler runs its instructions, loads the page-table entries of the pair through
//! the caches (so page-table traffic competes with the program's data, as on the real
//! machine), writes an entry chosen by the `Random` register (`tlbwr`), and, when
//! `count_in_software` is set, adds one to a per-processor fault counter in memory.
//!
//! Choices the seeds leave open (documented in docs/numachine-monitor.md):
//! - the page table is a linear table of 16-byte PTE pairs at [`PAGE_TABLE_BASE`], indexed
//!   by VPN2 modulo its 64 GiB (below NUMAchine's 40-bit physical addresses); its accesses
//!   are unmapped, so a refill never nests;
//! - the `Random` register decrements once per processor cycle from `entries - 1` down to
//!   `wired`, so the victim is `entries - 1 - cycle mod (entries - wired)`;
//! - the handler's instructions are retired and timed but not fetched through the L1
//!   instruction cache (its few lines are assumed resident);
//! - one shared address space: all threads use one page table (SPLASH threads, a traced
//!   process);
//! - uncached accesses (monitor registers) are not translated.
//!
//! The hit path costs one shift and one compare: the core remembers the VPN2 of its last
//! data and last instruction translation, and calls in only when a reference leaves that
//! region. Without a TLB the shift is 63, so every address is in "region 0" and the call
//! never happens.

use crate::addr::Addr;
use crate::config::TlbCfg;

/// Base of the page table (PTE pairs of 16 bytes, indexed by VPN2).
pub const PAGE_TABLE_BASE: Addr = 0xE0_0000_0000;
/// Size of the page table's address range.
pub const PAGE_TABLE_BYTES: Addr = 1 << 36;
/// Base of the per-processor software TLB-fault counters (one page apart, first touch, so
/// each is local to its processor).
pub const FAULT_COUNTERS_BASE: Addr = 0xF0_0000_0000;

// The table ends below the fault counters, and 1024 counters of 64 KiB pages end below
// NUMAchine's 40-bit physical addresses.
const _: () = assert!(PAGE_TABLE_BASE + PAGE_TABLE_BYTES <= FAULT_COUNTERS_BASE);
const _: () = assert!(FAULT_COUNTERS_BASE + 1024 * 65536 <= 1 << 40);

/// No VPN2 (never equal to `addr >> shift` with `shift` ≥ 12).
const NONE: u64 = u64::MAX;

#[derive(Clone, Debug)]
pub struct Tlb {
    /// log2 of the bytes one entry maps; 63 without a TLB.
    pub shift: u32,
    /// VPN2 of the last data / instruction translation (the host's shortcut, not a
    /// hardware micro-TLB: a hit in any entry costs nothing extra).
    pub last_data: u64,
    pub last_instr: u64,
    tags: Vec<u64>,
    wired: u64,
    pub refill_instructions: u64,
    pub count_in_software: bool,
}

impl Tlb {
    pub fn new(cfg: &TlbCfg, page_bytes: u64) -> Tlb {
        if !cfg.enabled {
            return Tlb {
                shift: 63,
                last_data: 0,
                last_instr: 0,
                tags: Vec::new(),
                wired: 0,
                refill_instructions: 0,
                count_in_software: false,
            };
        }
        Tlb {
            shift: (page_bytes * cfg.pages_per_entry as u64).trailing_zeros(),
            last_data: NONE,
            last_instr: NONE,
            tags: vec![NONE; cfg.entries as usize],
            wired: cfg.wired as u64,
            refill_instructions: cfg.refill_instructions as u64,
            count_in_software: cfg.count_in_software,
        }
    }

    pub fn enabled(&self) -> bool {
        !self.tags.is_empty()
    }

    /// True if an entry maps `vpn2`.
    pub fn lookup(&self, vpn2: u64) -> bool {
        self.tags.contains(&vpn2)
    }

    /// Writes `vpn2` into the entry the `Random` register selects at processor cycle
    /// `cycle` (`tlbwr`); forgets the shortcuts into the entry it replaces. Returns the index.
    pub fn refill(&mut self, vpn2: u64, cycle: u64) -> usize {
        let n = self.tags.len() as u64;
        let i = (n - 1 - cycle % (n - self.wired)) as usize;
        let old = self.tags[i];
        if old == self.last_data {
            self.last_data = NONE;
        }
        if old == self.last_instr {
            self.last_instr = NONE;
        }
        self.tags[i] = vpn2;
        i
    }

    /// Address of the PTE pair of `vpn2` in the page table.
    pub fn pte_addr(vpn2: u64) -> Addr {
        PAGE_TABLE_BASE + ((vpn2 << 4) & (PAGE_TABLE_BYTES - 1))
    }

    /// Address of processor `proc`'s software fault counter.
    pub fn fault_counter_addr(proc: usize, page_bytes: u64) -> Addr {
        FAULT_COUNTERS_BASE + proc as u64 * page_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(entries: u32, wired: u32) -> TlbCfg {
        TlbCfg {
            enabled: true,
            entries,
            wired,
            ..TlbCfg::default()
        }
    }

    #[test]
    fn an_entry_maps_an_even_odd_page_pair() {
        let t = Tlb::new(&cfg(48, 0), 4096);
        assert_eq!(t.shift, 13);
        assert_eq!(0x2000u64 >> t.shift, 0x3fffu64 >> t.shift);
        assert_ne!(0x1fffu64 >> t.shift, 0x2000u64 >> t.shift);
    }

    #[test]
    fn random_replacement_counts_down_above_the_wired_entries() {
        let mut t = Tlb::new(&cfg(8, 3), 4096);
        // Random runs 7, 6, 5, 4, 3, 7, ... as the cycle count advances.
        let picks: Vec<usize> = (0..6).map(|c| t.refill(100 + c, c)).collect();
        assert_eq!(picks, [7, 6, 5, 4, 3, 7]);
        assert!(!t.lookup(100), "entry 7 was rewritten with 105");
        assert!(t.lookup(105) && t.lookup(101) && t.lookup(104));
    }

    #[test]
    fn replacing_the_last_used_entry_forgets_the_shortcut() {
        let mut t = Tlb::new(&cfg(2, 0), 4096);
        t.refill(5, 0); // entry 1
        t.last_data = 5;
        t.last_instr = 5;
        t.refill(6, 1); // entry 0
        assert_eq!(t.last_data, 5);
        t.refill(7, 0); // entry 1 again: 5 is gone
        assert_eq!((t.last_data, t.last_instr), (NONE, NONE));
    }

    #[test]
    fn without_a_tlb_every_address_is_in_the_remembered_region() {
        let t = Tlb::new(&TlbCfg::default(), 4096);
        assert!(!t.enabled());
        for a in [0u64, 0x1000_0000, CODE_ADDR, (1 << 63) - 1] {
            assert_eq!(a >> t.shift, t.last_data);
            assert_eq!(a >> t.shift, t.last_instr);
        }
    }
    const CODE_ADDR: u64 = crate::cpu::CODE_BASE;

    #[test]
    fn page_table_entries_stay_inside_the_table() {
        for vpn2 in [0u64, 1, 1 << 30, u64::MAX >> 13] {
            let a = Tlb::pte_addr(vpn2);
            assert!((PAGE_TABLE_BASE..PAGE_TABLE_BASE + PAGE_TABLE_BYTES).contains(&a));
            assert_eq!(a % 16, 0);
        }
    }
}

/// The TLB inside a running machine: exact counts, their costs, and the ground truth.
#[cfg(test)]
mod machine_tests {
    use crate::addr::Place;
    use crate::config::Preset;
    use crate::cpu::pipeline::Ps;
    use crate::sim::{Machine, Options};

    /// One thread touches each of `pairs` page pairs once, then the first `hot` pairs
    /// `rounds` times. Returns the machine after the run.
    fn run(tlb: bool, pairs: u64, hot: u64, rounds: u64) -> Machine {
        let mut p = Preset::builtin("numachine").unwrap().with_procs(4).unwrap();
        p.cpu.tlb.enabled = tlb;
        let pair = 2 * p.memory.page_bytes;
        let mut m = Machine::new(p, Options::default()).unwrap();
        let a = m.setup().alloc("pages", pairs * pair, Place::RoundRobin);
        m.spawn(0, move |ctx| {
            for i in 0..pairs {
                ctx.load(a + i * pair + 64);
            }
            for _ in 0..rounds {
                for i in 0..hot {
                    ctx.load(a + i * pair + 128);
                }
            }
        });
        m.run(Some(1_000_000_000)).unwrap();
        m
    }

    #[test]
    fn each_new_page_pair_is_one_refill_with_its_exact_cost() {
        let pairs = 600;
        let with = run(true, pairs, 0, 0);
        let without = run(false, pairs, 0, 0);
        let (c, c0) = (&with.state().cores[0].cnt, &without.state().cores[0].cnt);
        // Every pair is new: exactly one data refill each (the stack and the handler's own
        // loads are not translated).
        assert_eq!(c.dtlb_misses, pairs);
        assert!(
            c.itlb_misses >= 1,
            "the code page pair is refilled at least once"
        );
        assert_eq!(c0.dtlb_misses + c0.itlb_misses, 0);
        let refills = c.dtlb_misses + c.itlb_misses;
        let e = with.state().preset.cpu.exception_cycles as u64;
        assert_eq!(
            c.ps[Ps::KilledException as usize] - c0.ps[Ps::KilledException as usize],
            refills * e
        );
        // Per refill: two PTE loads, the counter's load and store, 8 + 1 other instructions.
        assert_eq!(c.refs - c0.refs, refills * 4);
        assert_eq!(c.instructions() - c0.instructions(), refills * (4 + 8 + 1));
        let gt = with.state().truth.as_ref().unwrap();
        let by_struct: u64 = gt.tlb_per_struct.values().map(|n| n[0]).sum();
        assert_eq!(by_struct, c.dtlb_misses);
        let itlb: u64 = gt.tlb_per_struct.values().map(|n| n[1]).sum();
        assert_eq!(itlb, c.itlb_misses);
        let named = gt
            .tlb_per_struct
            .iter()
            .find(|(sid, _)| with.state().map.name_of(**sid) == "pages")
            .map(|(_, n)| n[0]);
        assert_eq!(named, Some(pairs));
    }

    #[test]
    fn a_working_set_within_the_reach_mostly_hits_and_runs_repeat() {
        let a = run(true, 8, 8, 500);
        let c = &a.state().cores[0].cnt;
        // 8 + 4000 data references; random replacement can evict a hot entry now and then.
        assert!(
            c.dtlb_misses >= 8 && c.dtlb_misses < 8 + 200,
            "{}",
            c.dtlb_misses
        );
        let b = run(true, 8, 8, 500);
        assert_eq!(c.dtlb_misses, b.state().cores[0].cnt.dtlb_misses);
        assert_eq!(a.state().cores[0].now, b.state().cores[0].now);
    }

    #[test]
    fn without_a_tlb_nothing_changes() {
        let a = run(false, 100, 8, 50);
        let st = a.state();
        assert!(st.map.regions().iter().all(|r| r.name != "(page table)"));
        assert_eq!(st.truth.as_ref().unwrap().tlb_per_struct.len(), 0);
    }
}
