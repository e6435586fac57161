//! Simulated time.
//!
//! Time is counted in integer *ticks*. The tick rate is the least common multiple of every clock
//! frequency in the machine, so every clock domain has an integer period (for NUMAchine, 150 MHz
//! processors and 50 MHz bus give a 150 MHz tick: processor period 1, bus period 3, pipeline
//! status circuit (75 MHz) period 2).

/// A point in simulated time, in ticks since the start of the run.
pub type Tick = u64;

/// One clock domain: a name, a frequency and its period in ticks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClockDomain {
    pub name: String,
    pub hz: u64,
    pub period: Tick,
}

impl ClockDomain {
    /// Cycles of this domain in `ticks` (rounded down).
    #[inline]
    pub fn cycles(&self, ticks: Tick) -> u64 {
        ticks / self.period
    }
    /// Ticks taken by `cycles` cycles of this domain.
    #[inline]
    pub fn ticks(&self, cycles: u64) -> Tick {
        cycles * self.period
    }
    /// The first edge of this clock at or after `t`.
    #[inline]
    pub fn next_edge(&self, t: Tick) -> Tick {
        t.div_ceil(self.period) * self.period
    }
}

/// The set of clock domains of a machine, with the common tick rate.
#[derive(Clone, Debug)]
pub struct Clocks {
    pub tick_hz: u64,
    pub domains: Vec<ClockDomain>,
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Error building clock domains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClockError(pub String);

impl std::fmt::Display for ClockError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for ClockError {}

impl Clocks {
    /// Builds clock domains from `(name, frequency in Hz)` pairs. The tick rate is the least
    /// common multiple of the frequencies; it must stay at or below 100 GHz so that a `u64`
    /// of ticks covers years of simulated time.
    pub fn new(freqs: &[(&str, u64)]) -> Result<Clocks, ClockError> {
        if freqs.is_empty() {
            return Err(ClockError("no clock domains given".into()));
        }
        let mut lcm: u64 = 1;
        for (name, hz) in freqs {
            if *hz == 0 {
                return Err(ClockError(format!("clock `{name}` has frequency 0")));
            }
            let g = gcd(lcm, *hz);
            lcm = (lcm / g)
                .checked_mul(*hz)
                .filter(|v| *v <= 100_000_000_000)
                .ok_or_else(|| {
                    ClockError(format!(
                        "clock frequencies have no common tick rate at or below 100 GHz \
                         (adding `{name}` at {hz} Hz); use frequencies with a larger common divisor"
                    ))
                })?;
        }
        let domains = freqs
            .iter()
            .map(|(name, hz)| ClockDomain {
                name: name.to_string(),
                hz: *hz,
                period: lcm / hz,
            })
            .collect();
        Ok(Clocks {
            tick_hz: lcm,
            domains,
        })
    }

    pub fn get(&self, name: &str) -> Option<&ClockDomain> {
        self.domains.iter().find(|d| d.name == name)
    }

    /// Nanoseconds in `ticks`, as a float (for reports only).
    pub fn ns(&self, ticks: Tick) -> f64 {
        ticks as f64 * 1e9 / self.tick_hz as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numachine_clocks_have_integer_periods() {
        let c = Clocks::new(&[
            ("cpu", 150_000_000),
            ("bus", 50_000_000),
            ("ps", 75_000_000),
        ])
        .unwrap();
        assert_eq!(c.tick_hz, 150_000_000);
        assert_eq!(c.get("cpu").unwrap().period, 1);
        assert_eq!(c.get("bus").unwrap().period, 3);
        assert_eq!(c.get("ps").unwrap().period, 2);
    }

    #[test]
    fn flash_clocks() {
        let c = Clocks::new(&[("cpu", 200_000_000), ("magic", 100_000_000)]).unwrap();
        assert_eq!(c.get("cpu").unwrap().period, 1);
        assert_eq!(c.get("magic").unwrap().period, 2);
        assert_eq!(c.get("magic").unwrap().next_edge(3), 4);
        assert_eq!(c.get("magic").unwrap().next_edge(4), 4);
        assert!((c.ns(2) - 10.0).abs() < 1e-9);
    }

    #[test]
    fn incommensurable_clocks_are_rejected() {
        let e = Clocks::new(&[("a", 99_999_989), ("b", 99_999_971)]).unwrap_err();
        assert!(e.0.contains("common tick rate"), "{e}");
        assert!(Clocks::new(&[("a", 0)]).is_err());
    }
}
