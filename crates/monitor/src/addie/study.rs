//! The computations behind `pmusim study addie` (issue 16 item 4; seed 002, Figures 2 and 3):
//! Addies fed synthetic Bernoulli streams, their trajectories over 250-sample windows, the
//! samples they take to converge, and their steady-state error by width and random mode.
//!
//! Input streams come from the simulator's seeded generator ([`engine::SimRng`]), independent
//! of the Addie's LFSR; the LFSR's reset state is drawn from a second generator seeded from
//! the same seed (a free-running hardware LFSR is at an arbitrary phase when sampling starts).
//! Everything is a function of the seeds: the same configuration gives the same result.

use super::lfsr::PERIOD;
use super::unit::{Addie, AddieConfig, RandomMode};
use engine::SimRng;
use serde::Serialize;

/// The seed's two figure probabilities, 64/255 ("25 %", Figure 2) and 200/255 ("78 %",
/// Figure 3), as (numerator, denominator).
pub const FIGURE_PROBS: [(u32, u32); 2] = [(64, 255), (200, 255)];

/// The convergence criterion: the reading must stay within `tol` (absolute, of full scale) of
/// the exact probability for `hold` consecutive samples.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Criterion {
    pub tol: f64,
    pub hold: u64,
}

/// The criterion: ±3 % of full scale for 500 samples.
pub const CRITERION: Criterion = Criterion {
    tol: 0.03,
    hold: 500,
};

/// The study's settings.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StudyConfig {
    /// The first seed: the figures use it, the distributions seeds first..first+seeds.
    pub first_seed: u64,
    /// Seeds of the convergence distributions.
    pub seeds: u64,
    /// Samples per run for Figures 2/3 and the 8-bit distributions.
    pub samples: u64,
    /// Averaging window of the trajectories (the seed's 250 samples).
    pub window: u64,
    /// Samples of the trajectory table and plot.
    pub plot_samples: u64,
    /// Widths of the width table.
    pub widths: Vec<u32>,
    /// Seeds of the width table (the first `width_seeds`; wide Addies need runs of
    /// 24 * 2^n samples).
    pub width_seeds: u64,
    pub criterion: Criterion,
}

impl Default for StudyConfig {
    fn default() -> StudyConfig {
        StudyConfig {
            first_seed: 1,
            seeds: 100,
            samples: 20_000,
            window: 250,
            plot_samples: 5_000,
            widths: (4..=16).collect(),
            width_seeds: 20,
            criterion: CRITERION,
        }
    }
}

impl StudyConfig {
    /// Checks the settings; the message names the flag's quantity.
    pub fn validate(&self) -> Result<(), String> {
        if self.seeds == 0 || self.width_seeds == 0 {
            return Err("seeds must be at least 1".into());
        }
        if self.window == 0 || self.plot_samples < self.window {
            return Err(format!(
                "the trajectory needs at least one {}-sample window (plot samples {})",
                self.window, self.plot_samples
            ));
        }
        if self.samples < self.criterion.hold {
            return Err(format!(
                "samples {} is shorter than the {}-sample hold of the convergence criterion",
                self.samples, self.criterion.hold
            ));
        }
        if let Some(w) = self
            .widths
            .iter()
            .find(|w| !super::unit::WIDTHS.contains(w))
        {
            return Err(format!("Addie width {w} is not in 4..=16 bits"));
        }
        Ok(())
    }
}

/// The LFSR reset state of a seed's run: uniform over the 2^31 - 1 non-zero states, from a
/// generator separate from the input stream's.
pub fn lfsr_start(seed: u64) -> u32 {
    let mut g = SimRng::new(seed ^ 0xADD1_E000_0000_0001);
    1 + g.below(PERIOD) as u32
}

/// An Addie of `width` bits at half scale for `seed`.
pub fn addie_for(width: u32, mode: RandomMode, seed: u64) -> Addie {
    Addie::new(AddieConfig::new(width, mode, lfsr_start(seed))).expect("widths are validated")
}

/// One 250-sample window of a trajectory (Figures 2 and 3).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Window {
    /// Samples taken at the end of the window.
    pub end: u64,
    /// The input stream's mean over the window.
    pub input: f64,
    /// Per random mode (independent, correlated): the comparator stream's mean over the
    /// window (the "Addie datastream" the seed averages) and the counter reading at the end.
    pub output: [f64; 2],
    pub reading: [f64; 2],
}

/// Figures 2/3 for one probability: both random modes fed the same input stream.
pub fn trajectory(p: f64, seed: u64, samples: u64, window: u64) -> Vec<Window> {
    let mut input = SimRng::new(seed);
    let mut units = RandomMode::ALL.map(|m| addie_for(8, m, seed));
    let mut rows = Vec::new();
    let (mut ones, mut outs) = (0u64, [0u64; 2]);
    for k in 1..=samples {
        let bit = input.chance(p);
        ones += bit as u64;
        for (u, o) in units.iter_mut().zip(outs.iter_mut()) {
            *o += u.sample(bit) as u64;
        }
        if k % window == 0 {
            let w = window as f64;
            rows.push(Window {
                end: k,
                input: ones as f64 / w,
                output: outs.map(|o| o as f64 / w),
                reading: [units[0].estimate(), units[1].estimate()],
            });
            (ones, outs) = (0, [0; 2]);
        }
    }
    rows
}

/// What one run says about convergence and steady-state error.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RunStats {
    /// The measure: the first sample k such that readings k..k+hold-1 all lie within
    /// the tolerance (`None`: not within the run).
    pub settle: Option<u64>,
    /// The first sample whose reading lies within the tolerance.
    pub first_entry: Option<u64>,
    /// `settle` applied to the reading averaged over the trailing window (what a reader
    /// averaging its debug-port reads over 250 samples sees).
    pub settle_smoothed: Option<u64>,
    /// Mean absolute error of the reading over the second half of the run.
    pub tail_mae: f64,
    /// Mean reading over the second half of the run.
    pub tail_mean: f64,
    /// Fraction of the second half's readings within the tolerance.
    pub tail_within: f64,
}

/// Tracks "within tolerance for `hold` consecutive samples".
struct Settle {
    last_bad: u64,
    done: Option<u64>,
}
impl Settle {
    fn new() -> Settle {
        Settle {
            last_bad: 0,
            done: None,
        }
    }
    #[inline]
    fn see(&mut self, k: u64, good: bool, hold: u64) {
        if self.done.is_some() {
            return;
        }
        if !good {
            self.last_bad = k;
        } else if k - self.last_bad >= hold {
            self.done = Some(self.last_bad + 1);
        }
    }
}

/// Runs one Addie on a Bernoulli(p) stream for `samples` samples.
pub fn run_stats(
    width: u32,
    mode: RandomMode,
    p: f64,
    seed: u64,
    samples: u64,
    window: u64,
    c: Criterion,
) -> RunStats {
    let mut input = SimRng::new(seed);
    let mut a = addie_for(width, mode, seed);
    let max = a.full_scale() as f64;
    // Tolerance in counter units, compared exactly on integers where possible.
    let (mut settle, mut smooth) = (Settle::new(), Settle::new());
    let mut first_entry = None;
    let mut ring = vec![0u32; window as usize];
    let mut ring_sum = 0u64;
    let half = samples / 2;
    let (mut err_sum, mut val_sum, mut within) = (0.0f64, 0u64, 0u64);
    for k in 1..=samples {
        a.sample(input.chance(p));
        let v = a.value();
        let e = v as f64 / max;
        let good = (e - p).abs() <= c.tol;
        settle.see(k, good, c.hold);
        if good && first_entry.is_none() {
            first_entry = Some(k);
        }
        let slot = ((k - 1) % window) as usize;
        ring_sum = ring_sum - ring[slot] as u64 + v as u64;
        ring[slot] = v;
        let m = ring_sum as f64 / k.min(window) as f64 / max;
        smooth.see(k, (m - p).abs() <= c.tol, c.hold);
        if k > half {
            err_sum += (e - p).abs();
            val_sum += v as u64;
            within += good as u64;
        }
    }
    let n = (samples - half) as f64;
    RunStats {
        settle: settle.done,
        first_entry,
        settle_smoothed: smooth.done,
        tail_mae: err_sum / n,
        tail_mean: val_sum as f64 / max / n,
        tail_within: within as f64 / n,
    }
}

/// A distribution of sample counts over seeds; runs that never met the criterion count as
/// larger than every finite value, and a quantile that falls on one is `None`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Dist {
    pub runs: u64,
    pub converged: u64,
    pub min: Option<f64>,
    pub q1: Option<f64>,
    pub median: Option<f64>,
    pub q3: Option<f64>,
    pub max: Option<f64>,
}

impl Dist {
    /// Quantiles by linear interpolation between order statistics (R's type 7, numpy's
    /// default).
    pub fn of(xs: &[Option<u64>]) -> Dist {
        let mut v: Vec<Option<u64>> = xs.to_vec();
        v.sort_by_key(|x| x.unwrap_or(u64::MAX));
        let q = |f: f64| -> Option<f64> {
            if v.is_empty() {
                return None;
            }
            let h = f * (v.len() - 1) as f64;
            let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
            let (a, b) = (v[lo]? as f64, v[hi]? as f64);
            Some(a + (h - lo as f64) * (b - a))
        };
        Dist {
            runs: v.len() as u64,
            converged: v.iter().filter(|x| x.is_some()).count() as u64,
            min: q(0.0),
            q1: q(0.25),
            median: q(0.5),
            q3: q(0.75),
            max: q(1.0),
        }
    }
}

/// Part (b): the 8-bit distributions at one probability and random mode.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Convergence {
    pub p: f64,
    pub mode: RandomMode,
    pub settle: Dist,
    pub first_entry: Dist,
    pub settle_smoothed: Dist,
    /// Mean over seeds of the tail's mean absolute error and of its fraction of readings
    /// within the tolerance.
    pub tail_mae: f64,
    pub tail_within: f64,
}

#[allow(clippy::too_many_arguments)] // one run's settings, named at the two call sites
fn convergence(
    width: u32,
    mode: RandomMode,
    p: f64,
    first_seed: u64,
    seeds: u64,
    samples: u64,
    window: u64,
    c: Criterion,
) -> (Convergence, Vec<RunStats>) {
    let runs: Vec<RunStats> = (first_seed..first_seed + seeds)
        .map(|s| run_stats(width, mode, p, s, samples, window, c))
        .collect();
    let pick = |f: fn(&RunStats) -> Option<u64>| Dist::of(&runs.iter().map(f).collect::<Vec<_>>());
    let conv = Convergence {
        p,
        mode,
        settle: pick(|r| r.settle),
        first_entry: pick(|r| r.first_entry),
        settle_smoothed: pick(|r| r.settle_smoothed),
        tail_mae: mean(&runs, |r| r.tail_mae),
        tail_within: mean(&runs, |r| r.tail_within),
    };
    (conv, runs)
}

fn mean(runs: &[RunStats], f: fn(&RunStats) -> f64) -> f64 {
    runs.iter().map(f).sum::<f64>() / runs.len() as f64
}

/// One row of part (c).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct WidthRow {
    pub width: u32,
    pub mode: RandomMode,
    pub p: f64,
    /// Samples per run: max(samples, 24 * 2^width), so that the second half, where the error
    /// is measured, starts at least 12 time constants (2^width samples each) after reset.
    pub samples: u64,
    pub settle: Dist,
    pub first_entry: Dist,
    /// The reading the counter settles around: p * 2^n / (2^n - 1) (docs/addie.md).
    pub expected_reading: f64,
    /// Mean over seeds of the tail's mean reading and mean absolute error.
    pub tail_mean: f64,
    pub tail_mae: f64,
    pub tail_within: f64,
}

/// Everything the study reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Study {
    pub config: StudyConfig,
    /// Figures 2 and 3: (p, windows) for the first seed.
    pub figures: Vec<(f64, Vec<Window>)>,
    /// Part (b), 8 bits: for each probability, independent then correlated.
    pub convergence: Vec<Convergence>,
    /// Part (c).
    pub widths: Vec<WidthRow>,
}

/// Runs the whole study.
pub fn run(c: &StudyConfig) -> Result<Study, String> {
    c.validate()?;
    let probs: Vec<f64> = FIGURE_PROBS
        .iter()
        .map(|&(a, b)| a as f64 / b as f64)
        .collect();
    let figures = probs
        .iter()
        .map(|&p| (p, trajectory(p, c.first_seed, c.plot_samples, c.window)))
        .collect();
    let mut conv = Vec::new();
    for &p in &probs {
        for mode in RandomMode::ALL {
            conv.push(
                convergence(
                    8,
                    mode,
                    p,
                    c.first_seed,
                    c.seeds,
                    c.samples,
                    c.window,
                    c.criterion,
                )
                .0,
            );
        }
    }
    let mut widths = Vec::new();
    for &w in &c.widths {
        let samples = c.samples.max(24 << w);
        for mode in RandomMode::ALL {
            for &p in &probs {
                let (cv, runs) = convergence(
                    w,
                    mode,
                    p,
                    c.first_seed,
                    c.width_seeds,
                    samples,
                    c.window,
                    c.criterion,
                );
                let n = 1u64 << w;
                widths.push(WidthRow {
                    width: w,
                    mode,
                    p,
                    samples,
                    settle: cv.settle,
                    first_entry: cv.first_entry,
                    expected_reading: p * n as f64 / (n - 1) as f64,
                    tail_mean: mean(&runs, |r| r.tail_mean),
                    tail_mae: cv.tail_mae,
                    tail_within: cv.tail_within,
                });
            }
        }
    }
    Ok(Study {
        config: c.clone(),
        figures,
        convergence: conv,
        widths,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(i: usize) -> f64 {
        FIGURE_PROBS[i].0 as f64 / FIGURE_PROBS[i].1 as f64
    }

    fn eight_bit(mode: RandomMode, i: usize) -> Convergence {
        convergence(8, mode, p(i), 1, 100, 20_000, 250, CRITERION).0
    }

    /// Issue 16's figure: "median convergence of the 8-bit Addie at 25 % and 78 % within 400 to
    /// 700 samples, staying within ±3 % afterwards". Measured on 100 seeds, the seed's "about
    /// 500 samples" is the time to *reach* ±3 %: median 478 and 532 samples (independent
    /// random numbers), 502 and 534 (correlated), the 256-sample time constant times
    /// ln(deviation / tolerance) = 543 and 577 in the mean-field model.
    #[test]
    fn eight_bit_reaches_three_percent_in_about_500_samples() {
        for mode in RandomMode::ALL {
            for i in 0..2 {
                let c = eight_bit(mode, i);
                let m = c.first_entry.median.unwrap();
                assert!((400.0..=700.0).contains(&m), "{mode:?} p={}: {m}", p(i));
                assert_eq!(c.first_entry.converged, 100);
            }
        }
    }

    /// NOTE: the issue asks for the median of "stays within ±3 % for 500 samples" within
    /// 400..=700. The mechanism as specified does not give that, and no constant was tuned: at
    /// equilibrium the 8-bit counter's standard deviation is sqrt(2^n p (1-p)) = 6.9 counts
    /// (2.7 % of full scale) at 64/255, so ±3 % is about ±1.1 sigma and the reading leaves it
    /// about a quarter of the time (docs/addie.md). Measured medians: 2518 / 1916 samples
    /// (independent, 25 % / 78 %), 1396 / 1418 (correlated). This test asserts that measured
    /// behaviour: all 100 runs settle within 20,000 samples, the medians lie in 1,000..4,000,
    /// correlated random numbers settle sooner than independent ones, and the share of the
    /// steady state within ±3 % is the ~73-75 % (independent) and ~81 % (correlated) measured.
    #[test]
    fn eight_bit_staying_within_three_percent_takes_longer() {
        for i in 0..2 {
            let ind = eight_bit(RandomMode::Independent, i);
            let cor = eight_bit(RandomMode::Correlated, i);
            for c in [&ind, &cor] {
                assert_eq!(c.settle.converged, 100);
                let m = c.settle.median.unwrap();
                assert!((1000.0..=4000.0).contains(&m), "{:?}: {m}", c.mode);
            }
            assert!(cor.settle.median < ind.settle.median);
            assert!(
                (0.70..=0.78).contains(&ind.tail_within),
                "{}",
                ind.tail_within
            );
            assert!(
                (0.78..=0.85).contains(&cor.tail_within),
                "{}",
                cor.tail_within
            );
        }
    }

    /// The steady-state error against the mean-field model: the counter is an Ornstein-Uhlenbeck
    /// process with restoring rate 2^-n and step variance 2p(1-p), so its standard deviation is
    /// sqrt(2^n p (1-p)) counts and the mean absolute error sqrt(2/pi) times that.
    #[test]
    fn steady_state_error_matches_the_model() {
        for i in 0..2 {
            let c = eight_bit(RandomMode::Independent, i);
            let q = p(i);
            let sigma = (256.0 * q * (1.0 - q)).sqrt() / 255.0;
            let mae = sigma * (2.0 / std::f64::consts::PI).sqrt();
            assert!(
                (c.tail_mae / mae - 1.0).abs() < 0.06,
                "{} vs {mae}",
                c.tail_mae
            );
            // The correlated numbers cut the comparator's share of the noise.
            let k = eight_bit(RandomMode::Correlated, i);
            assert!(k.tail_mae < 0.9 * c.tail_mae);
        }
    }

    #[test]
    fn width_table_shape() {
        // Narrow counters cannot hold ±3 %: at 4 bits one step is 6.7 % of full scale.
        // From 9 bits on, the equilibrium spread is well inside it and settling takes about
        // 2^n ln(deviation / tolerance) samples.
        let c = StudyConfig {
            seeds: 4,
            widths: vec![4, 10, 12],
            width_seeds: 4,
            plot_samples: 250,
            ..StudyConfig::default()
        };
        let s = run(&c).unwrap();
        for r in &s.widths {
            let dev = (0.5 - r.p).abs();
            match r.width {
                4 => assert_eq!(r.settle.converged, 0),
                w => {
                    assert_eq!(r.settle.converged, 4);
                    let model = (1u64 << w) as f64 * (dev / 0.03).ln();
                    let m = r.settle.median.unwrap();
                    assert!((m / model - 1.0).abs() < 0.2, "w={w} {m} vs {model}");
                    // The tail mean against the fixed point, within 4 standard errors: about
                    // one independent reading per 2 * 2^n samples (the OU correlation time).
                    let n = (1u64 << w) as f64;
                    let sd = (n * r.p * (1.0 - r.p)).sqrt() / (n - 1.0);
                    let independent = r.samples as f64 / 2.0 / (2.0 * n) * 4.0;
                    let se = sd / independent.sqrt();
                    let off = (r.tail_mean - r.expected_reading).abs();
                    assert!(off < 4.0 * se, "w={w} off {off} se {se}");
                }
            }
        }
        // Error falls with width.
        let mae = |w| {
            s.widths
                .iter()
                .filter(|r| r.width == w)
                .map(|r| r.tail_mae)
                .sum::<f64>()
        };
        assert!(mae(4) > mae(10) && mae(10) > mae(12));
    }

    #[test]
    fn same_seeds_same_study() {
        let c = StudyConfig {
            seeds: 5,
            samples: 3000,
            widths: vec![6, 8],
            width_seeds: 3,
            ..StudyConfig::default()
        };
        let a = run(&c).unwrap();
        assert_eq!(a, run(&c).unwrap());
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            serde_json::to_string(&run(&c).unwrap()).unwrap()
        );
        // And the seeds matter: another stream, another trajectory.
        assert_ne!(
            trajectory(p(0), 1, 1000, 250),
            trajectory(p(0), 2, 1000, 250)
        );
        assert_ne!(lfsr_start(1), lfsr_start(2));
    }

    #[test]
    fn trajectory_windows_are_means() {
        let rows = trajectory(p(1), 3, 1000, 250);
        assert_eq!(rows.len(), 4);
        // The input mean is the Bernoulli stream's own mean over the window.
        let mut g = SimRng::new(3);
        let ones = (0..250).filter(|_| g.chance(p(1))).count();
        assert_eq!(rows[0].input, ones as f64 / 250.0);
        assert_eq!(rows[3].end, 1000);
    }

    #[test]
    fn dist_quantiles() {
        let d = Dist::of(&[Some(4), Some(1), Some(3), Some(2), Some(5)]);
        assert_eq!(
            (d.min, d.q1, d.median, d.q3, d.max),
            (Some(1.0), Some(2.0), Some(3.0), Some(4.0), Some(5.0))
        );
        let d = Dist::of(&[Some(1), Some(2), None, Some(3)]);
        assert_eq!((d.converged, d.median, d.max), (3, Some(2.5), None));
        assert!(StudyConfig {
            width_seeds: 0,
            ..StudyConfig::default()
        }
        .validate()
        .is_err());
        assert!(StudyConfig {
            widths: vec![17],
            ..StudyConfig::default()
        }
        .validate()
        .unwrap_err()
        .contains("17"));
    }
}
