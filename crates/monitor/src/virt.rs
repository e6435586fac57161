//! Counter virtualization at context switch (issue 15 item 2): a monitor restricted to one
//! process, the way `perf_event_open` counts one task. The hardware counters run free; at
//! every context switch the operating system reads them, adds the outgoing thread's delta
//! (now - its start value) to that thread's total and takes the value as the incoming
//! thread's start (Linux `perf_event` read/`sched_out`/`sched_in`: `count += now - prev`,
//! `prev = now`). A process's count is the sum of its threads' totals (`perf stat -p PID`
//! sums the per-thread events). This module is that bookkeeping, for any monitor: the
//! monitor brings its counters up to date at each `Observation::Switch` and hands their
//! values (`switch`) and, at the end, once more (`finish`).
//!
//! The cost is the operating system's (`[os] virtual_counters = N`: the switch path's N
//! uncached register reads and its loads and stores of the totals in the process table),
//! reported as `ground_truth.os.virtualization`. What the monitor counts for the process is
//! exact when every event the counters count is attributed to the thread holding the core
//! when the monitor sees it: then the deltas split the free-running counts by thread
//! exactly (what the tests check against the per-process ground truth).

use crate::plugin::Error;
use machine::Machine;

/// Cycles per context switch for a restricted monitor's cost table (0 without a switch).
pub fn per_switch(cycles: u64, switches: u64) -> f64 {
    if switches == 0 {
        0.0
    } else {
        cycles as f64 / switches as f64
    }
}

/// The holder of a context without a software thread (`per_context`).
pub const NO_THREAD: u32 = u32::MAX;

/// Per-software-thread counter totals, and which threads are the monitored process's.
#[derive(Clone, Debug)]
pub struct Virtualizer {
    /// The monitored process's name and number.
    pub name: String,
    pub process: u16,
    /// Per software thread (machine-wide id): it belongs to the monitored process.
    mine: Vec<bool>,
    /// Counter values per core (the monitor's choice; a value never decreases except by
    /// wrapping, which the 64-bit differences absorb).
    width: usize,
    /// Per core: the thread whose interval is open.
    holder: Vec<u32>,
    /// Per core: counter values at the start of the open interval (`width` each).
    start: Vec<u64>,
    /// Per software thread: its totals (`width` each).
    totals: Vec<u64>,
    /// Context switches seen (`switch` calls that changed the holder).
    pub switches: u64,
}

impl Virtualizer {
    /// A virtualizer for process `name` of machine `m` (whose threads exist), with `width`
    /// counter values per core. Every core's interval opens with counter values 0 (call
    /// `open` if the counters start elsewhere, e.g. preloaded).
    pub fn new(m: &Machine, name: &str, width: usize) -> Result<Virtualizer, Error> {
        Virtualizer::named(m, name, width, "--virtualize")
    }

    /// As `new`, naming `flag` (the command-line flag that asked) in its errors.
    pub fn named(m: &Machine, name: &str, width: usize, flag: &str) -> Result<Virtualizer, Error> {
        let st = m.state();
        let Some(os) = &st.os else {
            return Err(Error::input(format!(
                "{flag} {name}: counter virtualization needs processes (a multiprogrammed run a+b, or --os)"
            )));
        };
        let Some(pid) = os.processes.iter().position(|p| p.name == name) else {
            let names: Vec<&str> = os.processes.iter().map(|p| p.name.as_str()).collect();
            return Err(Error::input(format!(
                "{flag} {name}: no such process (processes: {})",
                names.join(", ")
            )));
        };
        let threads = st.sched.threads.len();
        let mine = st
            .sched
            .threads
            .iter()
            .map(|t| t.present && t.process as usize == pid)
            .collect();
        let holder: Vec<u32> = st.cores.iter().map(|c| c.thread).collect();
        Ok(Virtualizer {
            name: name.to_string(),
            process: pid as u16,
            mine,
            width,
            start: vec![0; holder.len() * width],
            holder,
            totals: vec![0; threads.max(1) * width],
            switches: 0,
        })
    }

    /// Keys the intervals by `holders.len()` hardware contexts instead of cores (their first
    /// threads given): for a monitor whose counters are restricted to one hardware thread
    /// each (the UPC's thread masks), so a core's contexts keep separate intervals.
    pub fn per_context(mut self, holders: Vec<u32>) -> Virtualizer {
        self.start = vec![0; holders.len() * self.width];
        self.holder = holders;
        self
    }

    /// The thread whose interval is open on `key` (a core, or a context: `per_context`).
    pub fn holder(&self, key: usize) -> u32 {
        self.holder[key]
    }

    /// The number of intervals kept open (cores, or contexts: `per_context`).
    pub fn keys(&self) -> usize {
        self.holder.len()
    }

    /// Software thread `tid` belongs to the monitored process.
    pub fn holds(&self, tid: u32) -> bool {
        self.mine.get(tid as usize).copied().unwrap_or(false)
    }

    /// Restarts core `core`'s open interval at counter values `now`.
    pub fn open(&mut self, core: usize, now: &[u64]) {
        let w = self.width;
        self.start[core * w..core * w + w].copy_from_slice(&now[..w]);
    }

    /// The thread holding core `core` becomes `to`; the counters read `now`. Closes the
    /// outgoing thread's interval and opens the incoming one's.
    pub fn switch(&mut self, core: usize, to: Option<u32>, now: &[u64]) {
        self.close(core, now);
        if let Some(t) = to {
            if t != self.holder[core] {
                self.switches += 1;
                self.holder[core] = t;
            }
        }
    }

    /// The end of the run (or a read of the totals): closes every open interval at `now` of
    /// its core and opens a new one there (so calling it twice adds nothing).
    pub fn finish(&mut self, core: usize, now: &[u64]) {
        self.close(core, now);
    }

    fn close(&mut self, core: usize, now: &[u64]) {
        let w = self.width;
        if self.holder[core] == NO_THREAD {
            // A context no thread was placed on yet: its counts belong to none.
            return self.open(core, now);
        }
        let h = self.holder[core] as usize;
        if self.totals.len() < (h + 1) * w {
            self.totals.resize((h + 1) * w, 0);
        }
        let start = &self.start[core * w..core * w + w];
        for ((t, n), s) in self.totals[h * w..h * w + w].iter_mut().zip(now).zip(start) {
            *t = t.wrapping_add(n.wrapping_sub(*s));
        }
        self.open(core, now);
    }

    /// Software thread `tid`'s totals.
    pub fn thread(&self, tid: usize) -> &[u64] {
        let w = self.width;
        self.totals.get(tid * w..tid * w + w).unwrap_or(&[])
    }

    /// The monitored process's threads (machine-wide ids).
    pub fn threads(&self) -> Vec<usize> {
        (0..self.mine.len()).filter(|&t| self.mine[t]).collect()
    }

    /// The monitored process's totals: the sum of its threads'.
    pub fn process_totals(&self) -> Vec<u64> {
        let mut v = vec![0u64; self.width];
        for t in self.threads() {
            for (a, b) in v.iter_mut().zip(self.thread(t)) {
                *a = a.wrapping_add(*b);
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two threads alternating on one core: each gets exactly the counts of its intervals.
    #[test]
    fn deltas_split_free_running_counts_by_thread() {
        let mut v = Virtualizer {
            name: "a".into(),
            process: 0,
            mine: vec![true, false],
            width: 2,
            holder: vec![0],
            start: vec![0; 2],
            totals: vec![0; 4],
            switches: 0,
        };
        // Thread 0 runs to (10, 100), thread 1 to (15, 130), thread 0 to (40, 131).
        v.switch(0, Some(1), &[10, 100]);
        v.switch(0, Some(0), &[15, 130]);
        v.finish(0, &[40, 131]);
        v.finish(0, &[40, 131]);
        assert_eq!(v.thread(0), &[35, 101]);
        assert_eq!(v.thread(1), &[5, 30]);
        assert_eq!(v.process_totals(), vec![35, 101]);
        assert_eq!(v.switches, 2);
        // A wrapped 64-bit value still gives the delta.
        v.open(0, &[u64::MAX - 1, 0]);
        v.finish(0, &[3, 0]);
        assert_eq!(v.thread(0), &[40, 101]);
    }
}
