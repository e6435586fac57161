//! Installs the operating system on a machine being built (`Machine::new`, when the preset
//! has `[os]`): its tables in simulated memory, the timer on every core, and the scheduler's
//! quantum and switch path.

use super::{config::OsCfg, Os, OsStats, MAX_THREADS};
use crate::state::State;

pub fn install(st: &mut State, cfg: OsCfg) {
    let entry = cfg.entry_words() * 8;
    let place = cfg.place();
    let process_table = st
        .map
        .alloc("(os) process table", MAX_THREADS * entry, place);
    let run_queue = st.map.alloc_sync("(os) run queue");
    // Only with a daemon: the memory map of every other run stays as it was.
    let daemon_word = if cfg.daemon.is_some() {
        st.map.alloc_sync("(os) monitor daemon")
    } else {
        0
    };
    let period = st.cpu_period;
    for c in &mut st.cores {
        c.os = true;
        c.next_timer = cfg.timer_period_cycles * period;
    }
    st.sched.os = true;
    st.sched.quantum = cfg.quantum_cycles * period;
    st.os = Some(Os {
        cfg,
        processes: Vec::new(),
        process_table,
        run_queue,
        daemon_word,
        daemon_next: 0,
        stats: OsStats::default(),
    });
}
