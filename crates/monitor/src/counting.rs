//! Counting named events, as `perf stat -e` does (`pmusim stat`): what a monitor offers the
//! command line so that `stat` names no monitor.
//!
//! A monitor that can count named events returns itself as a [`Counting`] from
//! `plugin::Monitor::counting`: it lists its events (PAPI presets and its native events), plans
//! which requests can be counted at once (a *group*: one programming of its counters; more
//! groups than one means multiplexing), programs a group (before the run, and during it when
//! `stat` rotates the groups on a simulated-time period, as perf rotates event groups on a
//! timer), reads what the programmed counters counted since they were programmed, and gives the
//! exact count of a request from the ground truth.
//!
//! The rotation itself, the scaling of a multiplexed count (perf's `value x enabled /
//! running`) and the output formats live in the command line (`crates/pmusim/src/stat.rs`).

use crate::plugin::Error;
use machine::state::State;

/// perf's privilege modifiers: `:u` user (problem state, MSR[PR] = 1) only, `:k` supervisor
/// only, none both.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Privilege {
    All,
    User,
    Supervisor,
}

impl Privilege {
    /// The modifier as written after the event's name (`""`, `":u"`, `":k"`).
    pub fn suffix(self) -> &'static str {
        match self {
            Privilege::All => "",
            Privilege::User => ":u",
            Privilege::Supervisor => ":k",
        }
    }
}

/// One event a monitor can count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventInfo {
    pub name: String,
    /// What it counts, in words.
    pub description: String,
    /// `"PAPI preset"` or `"native"`.
    pub kind: &'static str,
    /// The ground truth has its exact count.
    pub exact: bool,
}

/// One requested event: an index into [`Counting::events`] and its privilege filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Request {
    pub event: usize,
    pub privilege: Privilege,
}

/// One hardware counter of a monitor as it stands, for `--serve`'s `/metrics`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Sample {
    /// The event it counts (its programmed event's name).
    pub event: String,
    /// The processor it counts on, or `None` for a unit of its own (`unit`).
    pub cpu: Option<u16>,
    /// A unit that is no processor (a UPC_L2 slice), else empty.
    pub unit: String,
    /// Its counter number in its unit.
    pub counter: u16,
    pub value: u64,
}

/// A monitor that counts named events for `pmusim stat`.
///
/// Order of calls: [`Counting::plan`], [`Counting::program`] of group 0 (before `attach`: it
/// becomes the configuration the monitor attaches with), the monitor's `attach`, then during
/// the run [`Counting::read`] and [`Counting::program`] at each rotation, and after it
/// [`Counting::read`] once more and [`Counting::exact`].
pub trait Counting {
    /// Every event the monitor can count, PAPI presets first.
    fn events(&self) -> Vec<EventInfo>;
    /// Whether the monitor can restrict counting to user or supervisor state (`:u`, `:k`).
    fn privileges(&self) -> bool;
    /// Why the monitor refuses the event called `name` although its hardware has it (a PAPI
    /// preset of the chip whose native events it does not produce), if it does.
    fn refusal(&self, _name: &str) -> Option<String> {
        None
    }
    /// Splits `reqs` into groups the counters can count at once (indices into `reqs`, each
    /// request in exactly one group, groups in the order they are to be counted), and keeps
    /// the plan. An error names a request that cannot be counted at all.
    fn plan(&mut self, reqs: &[Request]) -> Result<Vec<Vec<usize>>, Error>;
    /// Programs the counters for group `g` of the plan and clears them; before `attach`
    /// (`st` is `None`) this only sets the configuration the monitor attaches with. During the
    /// run, `st` is the machine's state: what its processors have done so far (their own
    /// counters, which may have run a little ahead of the event queue) counts under the old
    /// programming, so that a group's counting window on each processor is exactly the
    /// processor's cycles between two programmings (`stat`'s time running).
    fn program(&mut self, g: usize, st: Option<&State>);
    /// What the programmed counters counted since [`Counting::program`], summed over the
    /// processors, in the order of the group's requests; with `st`, brought up to the
    /// processors' own counters first (as [`Counting::program`] does).
    fn read(&self, st: Option<&State>) -> Vec<u64>;
    /// The exact count of `req` so far from the ground truth, summed over the processors;
    /// `end` says the run is over (the split of a thread's counts by privilege is complete
    /// only then, so a `:u` or `:k` request may answer `None` before it). `None`: the ground
    /// truth has no such count.
    fn exact(&self, st: &State, req: &Request, end: bool) -> Option<u64>;
    /// Every enabled counter of every unit as it stands now, without bringing it up to the
    /// present (a live view must not disturb the run; after the run the values are final),
    /// for `--serve`'s `/metrics`. Empty before `attach`.
    fn samples(&self) -> Vec<Sample> {
        Vec::new()
    }
    /// [`Counting::read`] once the run is over, with the machine's final state. A monitor
    /// whose counts live in the machine's state rather than in its own probe (FlashPoint's
    /// records, the memory controllers' status counters) reads them there; the default is
    /// `read(None)` (the probe's `finish` brought its counters up to the end).
    fn read_end(&self, _st: &State) -> Vec<u64> {
        self.read(None)
    }
    /// [`Counting::samples`] given the machine's state, for `/metrics`: the default is
    /// `samples()`; a monitor whose counters live in the machine's state overrides it.
    fn samples_in(&self, _st: &State) -> Vec<Sample> {
        self.samples()
    }
}

/// Packs requests into multiplexing groups of `capacity` counters, in the order asked: each
/// on the next free counters; one that does not fit the group's remaining counters starts the
/// next group. `width(event)` is how many counters an event takes (an error for an unknown
/// one). Returns the groups as (request index, event) pairs.
pub fn pack_groups(
    reqs: &[Request],
    capacity: usize,
    width: impl Fn(usize) -> Result<usize, Error>,
) -> Result<Vec<Vec<(usize, usize)>>, Error> {
    let mut groups: Vec<Vec<(usize, usize)>> = Vec::new();
    let mut used = capacity;
    for (r, q) in reqs.iter().enumerate() {
        let n = width(q.event)?;
        if used + n > capacity {
            groups.push(Vec::new());
            used = 0;
        }
        groups.last_mut().expect("pushed").push((r, q.event));
        used += n;
    }
    Ok(groups)
}

/// The request indices of each group of [`pack_groups`] (what [`Counting::plan`] returns).
pub fn request_indices(groups: &[Vec<(usize, usize)>]) -> Vec<Vec<usize>> {
    groups
        .iter()
        .map(|g| g.iter().map(|x| x.0).collect())
        .collect()
}

/// Splits `NAME[:MODS]` into the name and its privilege; `MODS` is perf's `u` or `k` (`uk`
/// and `ku` are both, as in perf). An unknown modifier is an error naming it.
pub fn parse_modifiers(spec: &str) -> Result<(&str, Privilege), String> {
    let (name, mods) = match spec.rsplit_once(':') {
        Some((n, m)) if !n.is_empty() => (n, m),
        _ => return Ok((spec, Privilege::All)),
    };
    let (mut u, mut k) = (false, false);
    for c in mods.chars() {
        match c {
            'u' => u = true,
            'k' => k = true,
            _ => {
                return Err(format!(
                    "`{spec}`: unknown modifier `{c}` (pmusim knows :u, user state only, and :k, supervisor state only)"
                ))
            }
        }
    }
    let p = match (u, k) {
        (true, false) => Privilege::User,
        (false, true) => Privilege::Supervisor,
        _ => Privilege::All,
    };
    Ok((name, p))
}

/// The exact count, by privilege, of a per-thread quantity `of` (a function of a thread's or
/// core's counters): `All` sums the cores' live counters (exact at any time); `User` and
/// `Supervisor` sum each software thread's split by MSR[PR], complete only at the end of the
/// run (`end`); without an operating system every thread is in user state.
pub fn exact_by_privilege(
    st: &State,
    p: Privilege,
    end: bool,
    of: impl Fn(&machine::cpu::Counters) -> Option<u64>,
) -> Option<u64> {
    let all = || -> Option<u64> { st.cores.iter().map(|c| of(&c.cnt)).sum() };
    match p {
        Privilege::All => all(),
        _ if !st.sched.os => match p {
            Privilege::User => all(),
            _ => of(&Default::default()).map(|_| 0),
        },
        _ if !end => None,
        _ => {
            let k = (p == Privilege::Supervisor) as usize;
            st.sched.threads.iter().map(|th| of(&th.mode[k])).sum()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modifiers_parse_as_perf_does() {
        assert_eq!(
            parse_modifiers("PAPI_TOT_INS").unwrap(),
            ("PAPI_TOT_INS", Privilege::All)
        );
        assert_eq!(
            parse_modifiers("cycles:u").unwrap(),
            ("cycles", Privilege::User)
        );
        assert_eq!(
            parse_modifiers("cycles:k").unwrap(),
            ("cycles", Privilege::Supervisor)
        );
        assert_eq!(
            parse_modifiers("cycles:uk").unwrap(),
            ("cycles", Privilege::All)
        );
        let e = parse_modifiers("cycles:p").unwrap_err();
        assert!(e.contains("unknown modifier `p`"), "{e}");
    }
}
