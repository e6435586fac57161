//! Multiple issue of instructions without memory operands (`cpu.issue_width`), for an
//! R10000-like core (`flash-r10k`).
//!
//! The MIPS R10000 fetches and decodes four instructions per cycle and issues them out of
//! order to two integer ALUs, two floating-point units (adder and multiplier, both pipelined
//! with a repeat rate of one) and one load/store unit (MIPS R10000 Microprocessor User's
//! Manual 2.0, chapter 1 "Superscalar pipeline"; K. Yeager, "The MIPS R10000 superscalar
//! microprocessor", IEEE Micro 16(2), 1996). pmusim's programs say how many instructions of
//! each class they run, not which registers they read, so the model is a throughput one:
//!
//! - integer and FP instructions retire `issue_width` per cycle: a core keeps the slots left
//!   in its current cycle (`Core::issue_slots`), so `int(1)` four times at width 4 takes one
//!   cycle, as `int(4)` does;
//! - loads, stores and branches take a cycle each as on the R4400 (one load/store unit; a
//!   branch ends a fetch group) and leave the slots as they are, so ALU work following a load
//!   fills the slots beside it (the load/store unit and the ALUs work in the same cycle);
//! - dependences between ALU instructions are not modelled (the reorder window hides them in
//!   the throughput bound); memory dependences are `cpu::nonblocking`'s use points.
//!
//! At `issue_width = 1` (every preset but `flash-r10k`) the counts and the timing are the
//! R4400's, unchanged: `Core::retire_alu` goes straight to `retire_n`.

use super::{Class, Core};

impl Core {
    /// Retires `n` instructions of class `c` (integer or FP; other classes retire one per
    /// cycle) under the core's issue width.
    #[inline(always)]
    pub fn retire_alu(&mut self, c: Class, n: u64) {
        // One cycle per instruction first (the R4400's), then, on a wide core only, the
        // cycles its extra slots save are given back: the common path stays `retire_n` and
        // one predictable test (BENCHMARKS.md, "An R10000-like core option").
        self.retire_n(c, n);
        if self.issue_width != 1 && matches!(c, Class::Integer | Class::Fp) {
            self.retire_wide(c, n);
        }
    }

    /// `retire_alu` at `issue_width > 1`, after `retire_n` charged `n` cycles: the free slots
    /// of the current cycle first, then whole cycles of `issue_width` instructions; the last
    /// cycle's unused slots are kept; the `n - cycles` cycles not needed are given back.
    #[cold]
    #[inline(never)]
    pub(super) fn retire_wide(&mut self, c: Class, n: u64) {
        let w = self.issue_width;
        let used = self.issue_slots.min(n);
        let rest = n - used;
        let cycles = rest.div_ceil(w);
        self.issue_slots = self.issue_slots - used + cycles * w - rest;
        self.cnt.ps[c.ps() as usize] -= n - cycles;
        self.now -= (n - cycles) * self.period;
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Preset;
    use crate::cpu::{Class, Core};

    fn core(width: u32) -> Core {
        let mut p = Preset::builtin("flash").unwrap();
        p.cpu.issue_width = width;
        p.validate().unwrap();
        Core::new(0, 0, &p, 5, 10)
    }

    #[test]
    fn width_one_is_one_instruction_per_cycle() {
        let mut c = core(1);
        c.retire_alu(Class::Integer, 7);
        c.retire_alu(Class::Fp, 3);
        assert_eq!(c.cnt.cycles(), 10);
        assert_eq!(c.now, 50);
    }

    #[test]
    fn width_four_packs_alu_work_across_calls() {
        let mut c = core(4);
        // 1 + 1 + 1 + 1: one cycle (the first opens it, three fill its slots).
        for _ in 0..4 {
            c.retire_alu(Class::Integer, 1);
        }
        assert_eq!(c.cnt.cycles(), 1);
        // 10 more: 3 cycles (12 slots), 2 left over ...
        c.retire_alu(Class::Fp, 10);
        assert_eq!(c.cnt.cycles(), 4);
        assert_eq!(c.issue_slots, 2);
        // ... which a load does not take (one load/store unit, beside the ALUs) ...
        c.retire_alu(Class::Load, 1);
        assert_eq!(c.cnt.cycles(), 5);
        // ... and two integer instructions fill.
        c.retire_alu(Class::Integer, 2);
        assert_eq!(c.cnt.cycles(), 5);
        assert_eq!(c.cnt.instr[Class::Integer as usize], 6);
        assert_eq!(c.cnt.instr[Class::Fp as usize], 10);
        assert_eq!(c.now, 25);
    }
}
