//! The statistics lockstep decides with, in one place: the median of a
//! sample, a bootstrap confidence interval of the ratio of two medians, the
//! Mann-Whitney U test, and the verdict on two samples of timings
//! ([`compare`]): a regression (or improvement) only when the whole
//! confidence interval of `median(new) / median(base)` lies outside the
//! noise band `1 ± threshold`, never on a threshold crossed by a single
//! median. Machines here are noisy; one slow sample must not make a
//! regression, and a real 10% slowdown must not hide in the noise.
//!
//! Two runs of the same build differ by more than the samples within one
//! run do (the machine's load, its frequency, where memory landed), so:
//! samples grouped by run are compared with a two-level bootstrap
//! ([`compare_runs`]: runs resampled, then their samples), and when a side
//! has a single run, the spread of the ratios across kernels estimates
//! that noise ([`run_noise`]) and widens each kernel's interval
//! ([`widen`]).
//!
//! Pure functions over `f64` samples: no I/O, no clock. Resampling is
//! seeded, so the same samples always give the same interval and verdict.
//! Samples that are not finite, or fewer than [`MIN_SAMPLES`] on a side,
//! give [`Change::NotEnoughSamples`] rather than a made-up answer.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::Serialize;

/// The fewest samples per side a verdict is given on.
pub const MIN_SAMPLES: usize = 3;

/// The most samples per side used (the rest are ignored): bounds the
/// bootstrap's work whatever the input.
pub const MAX_SAMPLES: usize = 10_000;

/// The median of `xs` (finite values only), or `None` for an empty sample
/// or one holding a NaN or an infinity.
pub fn median(xs: &[f64]) -> Option<f64> {
    if xs.is_empty() || xs.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// The median of finite `xs`, reordering them (no allocation: the
/// bootstrap takes thousands).
fn median_in_place(xs: &mut [f64]) -> f64 {
    let n = xs.len();
    let (_, hi, _) = xs.select_nth_unstable_by(n / 2, f64::total_cmp);
    let hi = *hi;
    if n % 2 == 1 {
        return hi;
    }
    let lo = xs[..n / 2]
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    (lo + hi) / 2.0
}

/// The Mann-Whitney U test of two samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct MannWhitney {
    /// U of the first sample.
    pub u: f64,
    /// Two-sided p-value (normal approximation with tie and continuity
    /// correction).
    pub p: f64,
}

/// Mann-Whitney U of `a` against `b`; `None` when either side is empty or
/// holds a value that is not finite.
pub fn mann_whitney(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    if a.is_empty() || b.is_empty() || a.iter().chain(b).any(|x| !x.is_finite()) {
        return None;
    }
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    let mut all: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    all.sort_by(|x, y| x.0.total_cmp(&y.0));
    // Average ranks for ties, and the tie correction term.
    let mut rank_sum_a = 0.0;
    let mut ties = 0.0;
    let mut i = 0;
    while i < all.len() {
        let mut j = i;
        while j + 1 < all.len() && all[j + 1].0 == all[i].0 {
            j += 1;
        }
        let rank = (i + j) as f64 / 2.0 + 1.0;
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        rank_sum_a += all[i..=j].iter().filter(|(_, from_a)| *from_a).count() as f64 * rank;
        i = j + 1;
    }
    let u = rank_sum_a - n1 * (n1 + 1.0) / 2.0;
    let n = n1 + n2;
    let mean = n1 * n2 / 2.0;
    let var = n1 * n2 / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)).max(1.0));
    if var <= 0.0 {
        // Every value equal: no evidence of a difference.
        return Some(MannWhitney { u, p: 1.0 });
    }
    let z = ((u - mean).abs() - 0.5).max(0.0) / var.sqrt();
    Some(MannWhitney {
        u,
        p: (2.0 * normal_sf(z)).min(1.0),
    })
}

/// P(Z > z) for a standard normal Z (Abramowitz-Stegun 7.1.26 via erfc,
/// absolute error under 1.5e-7).
fn normal_sf(z: f64) -> f64 {
    let x = z / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erfc = poly * (-x * x).exp();
    let erfc = if x >= 0.0 { erfc } else { 2.0 - erfc };
    erfc / 2.0
}

/// A bootstrap percentile interval of `median(new) / median(base)` at
/// `confidence` (e.g. 0.95) from `resamples` resamplings seeded with
/// `seed`; `None` when a side is empty, not finite, or has a median of 0.
pub fn ratio_interval(
    base: &[f64],
    new: &[f64],
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Option<(f64, f64)> {
    let base = &base[..base.len().min(MAX_SAMPLES)];
    let new = &new[..new.len().min(MAX_SAMPLES)];
    median(new)?;
    if median(base)? == 0.0 || !(0.5..1.0).contains(&confidence) {
        return None;
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let resamples = resamples.clamp(100, 20_000);
    let mut ratios = Vec::with_capacity(resamples);
    let mut scratch_b = vec![0.0; base.len()];
    let mut scratch_n = vec![0.0; new.len()];
    for _ in 0..resamples {
        for s in scratch_b.iter_mut() {
            *s = base[rng.gen_range(0..base.len())];
        }
        for s in scratch_n.iter_mut() {
            *s = new[rng.gen_range(0..new.len())];
        }
        let (b, n) = (
            median_in_place(&mut scratch_b),
            median_in_place(&mut scratch_n),
        );
        if b != 0.0 {
            ratios.push(n / b);
        }
    }
    percentile_interval(ratios, confidence)
}

/// What two samples of timings say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Change {
    /// The whole interval is above `1 + threshold`: slower.
    Regression,
    /// The whole interval is below `1 - threshold`: faster.
    Improvement,
    /// The ratio is inside the noise band `1 ± threshold` (and so is part
    /// of its interval).
    Unchanged,
    /// The ratio is outside the noise band, but its interval reaches into
    /// it: the samples cannot tell a change from noise (a 2x ratio over
    /// samples that spread that far is not "unchanged").
    Inconclusive,
    /// Fewer than [`MIN_SAMPLES`] usable samples on a side.
    NotEnoughSamples,
    /// The noise between runs is not known (one run on a side, and too few
    /// kernels to see it: [`judge`]), and the ratio is outside the noise
    /// band: no verdict until there are more runs.
    NotEnoughRuns,
}

impl Change {
    /// The verdict in words, as every report and page says it.
    pub fn word(self) -> &'static str {
        match self {
            Change::Regression => "regression",
            Change::Improvement => "improvement",
            Change::Unchanged => "unchanged",
            Change::Inconclusive => "inconclusive",
            Change::NotEnoughSamples => "not enough samples",
            Change::NotEnoughRuns => "not enough runs",
        }
    }
}

/// The comparison of a base and a new sample of timings.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Comparison {
    pub base_median: Option<f64>,
    pub new_median: Option<f64>,
    /// `median(new) / median(base)`.
    pub ratio: Option<f64>,
    /// Its bootstrap confidence interval.
    pub interval: Option<(f64, f64)>,
    /// Mann-Whitney's two-sided p-value.
    pub p: Option<f64>,
    pub verdict: Change,
}

/// How [`compare`] decides.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    /// The noise band: `0.05` for ±5%.
    pub threshold: f64,
    /// Of the interval: `0.95`.
    pub confidence: f64,
    pub resamples: usize,
    pub seed: u64,
}

impl Default for Rule {
    fn default() -> Self {
        Rule {
            threshold: 0.05,
            confidence: 0.95,
            resamples: 2000,
            seed: 0x6c6f636b73746570,
        }
    }
}

/// Compares `new` against `base` under `rule`.
pub fn compare(base: &[f64], new: &[f64], rule: &Rule) -> Comparison {
    compare_with(base, new, rule, || {
        ratio_interval(base, new, rule.confidence, rule.resamples, rule.seed)
    })
}

/// [`compare`] with the interval from `interval`, run only when both
/// sides are usable (the bootstrap is the expensive part).
fn compare_with(
    base: &[f64],
    new: &[f64],
    rule: &Rule,
    interval: impl FnOnce() -> Option<(f64, f64)>,
) -> Comparison {
    let usable = |xs: &[f64]| xs.len() >= MIN_SAMPLES && xs.iter().all(|x| x.is_finite());
    let base_median = median(base);
    let new_median = median(new);
    let ratio = match (base_median, new_median) {
        (Some(b), Some(n)) if b != 0.0 => Some(n / b),
        _ => None,
    };
    let mut out = Comparison {
        base_median,
        new_median,
        ratio,
        interval: None,
        p: mann_whitney(base, new).map(|m| m.p),
        verdict: Change::NotEnoughSamples,
    };
    if !usable(base) || !usable(new) || ratio.is_none() {
        return out;
    }
    out.interval = interval();
    out.verdict = match out.interval {
        Some(interval) => verdict_of(interval, out.ratio, rule),
        None => Change::NotEnoughSamples,
    };
    out
}

/// The fewest kernels whose ratios give an estimate of run-to-run noise
/// ([`run_noise`]).
pub const MIN_KERNELS_FOR_NOISE: usize = 5;

/// How far kernels move from one run to the next, as the ratios of one
/// pair of runs show it ([`run_noise`]).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct RunNoise {
    /// The robust standard deviation of `ln(ratio)` across kernels.
    pub log_sd: f64,
    /// How many kernels it was seen on (and how many verdicts share it).
    pub kernels: usize,
}

/// How far the ratios of one pair of runs spread, kernel to kernel: the
/// robust standard deviation (1.4826 × the median absolute deviation) of
/// `ln(ratio)` around its median, or `None` for fewer than
/// [`MIN_KERNELS_FOR_NOISE`] usable ratios.
///
/// Why: samples within one run are taken close together, so a bootstrap
/// over them sees only within-run noise. Two runs of the same build on a
/// busy machine differ by more than that (the load, the frequency, where
/// the allocator put things), and differently for each kernel. With one
/// run per side this spread is the only view of that noise there is.
/// Being robust, a few kernels that really changed do not widen it; a
/// change of every kernel alike (the median) is not counted as noise.
pub fn run_noise(ratios: &[f64]) -> Option<RunNoise> {
    let logs: Vec<f64> = ratios
        .iter()
        .filter(|r| r.is_finite() && **r > 0.0)
        .map(|r| r.ln())
        .collect();
    if logs.len() < MIN_KERNELS_FOR_NOISE {
        return None;
    }
    let center = median(&logs)?;
    let deviations: Vec<f64> = logs.iter().map(|l| (l - center).abs()).collect();
    Some(RunNoise {
        log_sd: 1.4826 * median(&deviations)?,
        kernels: logs.len(),
    })
}

/// The two-sided standard normal quantile for `confidence` (1.96 for
/// 0.95), by bisection on [`normal_sf`].
fn z_of(confidence: f64) -> f64 {
    let tail = ((1.0 - confidence) / 2.0).clamp(1e-9, 0.5);
    let (mut lo, mut hi) = (0.0_f64, 10.0_f64);
    for _ in 0..80 {
        let mid = (lo + hi) / 2.0;
        if normal_sf(mid) > tail {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// `c` with the run-to-run `noise` (from [`run_noise`]) added to its
/// interval, in log space (each half widened to `sqrt(half² + (z·sd)²)`),
/// and its verdict taken again under `rule`.
///
/// `z` is the normal quantile of `rule.confidence` shared among the
/// `noise.kernels` verdicts (Bonferroni): every kernel of the pair is
/// judged against the same spread, and at 95% one kernel in 40 would lie
/// outside it by chance alone: in a comparison of 100 kernels, two or
/// three made-up regressions. The within-run part is counted twice (it is
/// in both): the verdict errs towards "unchanged".
pub fn widen(c: &Comparison, noise: RunNoise, rule: &Rule) -> Comparison {
    let (Some(ratio), Some((lo, hi))) = (c.ratio, c.interval) else {
        return *c;
    };
    let log_sd = noise.log_sd;
    if !(log_sd.is_finite() && log_sd > 0.0 && ratio > 0.0 && lo > 0.0 && hi > 0.0) {
        return *c;
    }
    let family = noise.kernels.max(1) as f64;
    let extra = z_of(1.0 - (1.0 - rule.confidence) / family) * log_sd;
    let grow = |half: f64| (half * half + extra * extra).sqrt();
    let lo = ratio * (-grow((ratio / lo).ln().max(0.0))).exp();
    let hi = ratio * grow((hi / ratio).ln().max(0.0)).exp();
    Comparison {
        interval: Some((lo, hi)),
        verdict: verdict_of((lo, hi), Some(ratio), rule),
        ..*c
    }
}

/// Compares samples grouped by the run (or repeat) that took them. With
/// at least two runs on each side the interval comes from a two-level
/// bootstrap (runs resampled, then the samples of each chosen run), so
/// that it holds the variation between runs and not only within them;
/// with one run on a side it is [`compare`] of the pooled samples.
pub fn compare_runs(base: &[Vec<f64>], new: &[Vec<f64>], rule: &Rule) -> Comparison {
    let flat = |runs: &[Vec<f64>]| -> Vec<f64> { runs.iter().flatten().copied().collect() };
    let (base_all, new_all) = (flat(base), flat(new));
    let (base_runs, new_runs) = (non_empty(base), non_empty(new));
    if base_runs.len() < 2 || new_runs.len() < 2 {
        return compare(&base_all, &new_all, rule);
    }
    compare_with(&base_all, &new_all, rule, || {
        runs_interval(&base_runs, &new_runs, rule)
    })
}

/// The runs that hold samples.
fn non_empty(runs: &[Vec<f64>]) -> Vec<&[f64]> {
    runs.iter()
        .filter(|r| !r.is_empty())
        .map(Vec::as_slice)
        .collect()
}

/// The two-level bootstrap interval of `median(new) / median(base)`
/// (finite samples, at least two runs a side: [`compare_runs`]).
fn runs_interval(base: &[&[f64]], new: &[&[f64]], rule: &Rule) -> Option<(f64, f64)> {
    let mut rng = StdRng::seed_from_u64(rule.seed);
    let resamples = rule.resamples.clamp(100, 20_000);
    // Bounds the work: at most MAX_SAMPLES samples per resampled side.
    let per_run = |runs: &[&[f64]]| (MAX_SAMPLES / runs.len()).max(1);
    let (cap_b, cap_n) = (per_run(base), per_run(new));
    let mut scratch_b = Vec::new();
    let mut scratch_n = Vec::new();
    let mut ratios = Vec::with_capacity(resamples);
    let draw = |runs: &[&[f64]], cap: usize, out: &mut Vec<f64>, rng: &mut StdRng| {
        out.clear();
        for _ in 0..runs.len() {
            let run = &runs[rng.gen_range(0..runs.len())];
            for _ in 0..run.len().min(cap) {
                out.push(run[rng.gen_range(0..run.len())]);
            }
        }
    };
    for _ in 0..resamples {
        draw(base, cap_b, &mut scratch_b, &mut rng);
        draw(new, cap_n, &mut scratch_n, &mut rng);
        let (b, n) = (
            median_in_place(&mut scratch_b),
            median_in_place(&mut scratch_n),
        );
        if b != 0.0 {
            ratios.push(n / b);
        }
    }
    percentile_interval(ratios, rule.confidence)
}

/// The central `confidence` interval of `ratios` (sorted here).
fn percentile_interval(mut ratios: Vec<f64>, confidence: f64) -> Option<(f64, f64)> {
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_by(f64::total_cmp);
    let tail = (1.0 - confidence) / 2.0;
    let at =
        |q: f64| ratios[((q * (ratios.len() - 1) as f64).round() as usize).min(ratios.len() - 1)];
    Some((at(tail), at(1.0 - tail)))
}

/// The verdict an interval (and the ratio it is around) gives under
/// `rule`'s noise band.
fn verdict_of((lo, hi): (f64, f64), ratio: Option<f64>, rule: &Rule) -> Change {
    let threshold = rule.threshold.clamp(0.0, 10.0);
    let in_band = |r: f64| (1.0 - threshold..=1.0 + threshold).contains(&r);
    if lo > 1.0 + threshold {
        Change::Regression
    } else if hi < 1.0 - threshold {
        Change::Improvement
    } else if ratio.is_some_and(|r| !in_band(r)) {
        Change::Inconclusive
    } else {
        Change::Unchanged
    }
}

/// The one rule every verdict on two sides of timings is taken by (`bench
/// compare`, the history's bench series, the site): `c` (from [`compare`]
/// or [`compare_runs`]) with the noise between runs accounted for.
///
/// - With the spread of the ratios across kernels (`noise`, from
///   [`run_noise`]): every interval widened by it ([`widen`]).
/// - Else with several runs on both sides (`several_runs`): `c` as it is,
///   its interval from the two-level bootstrap.
/// - Else nothing shows the noise between runs: a ratio outside the noise
///   band is [`Change::NotEnoughRuns`], never a regression or an
///   improvement: two runs of the same build on a busy machine differ by
///   more than the samples inside one run say.
pub fn judge(
    c: &Comparison,
    noise: Option<RunNoise>,
    several_runs: bool,
    rule: &Rule,
) -> Comparison {
    if let Some(noise) = noise {
        return widen(c, noise, rule);
    }
    if several_runs {
        return *c;
    }
    match c.verdict {
        Change::Regression | Change::Improvement | Change::Inconclusive => Comparison {
            verdict: Change::NotEnoughRuns,
            ..*c
        },
        _ => *c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Timings with multiplicative noise of about `noise` (deterministic).
    fn timings(rng: &mut StdRng, n: usize, center: f64, noise: f64) -> Vec<f64> {
        (0..n)
            .map(|_| {
                // A sum of uniforms: roughly normal, bounded.
                let z: f64 = (0..6).map(|_| rng.gen::<f64>()).sum::<f64>() - 3.0;
                // An occasional outlier, as a noisy machine gives.
                let outlier = if rng.gen::<f64>() < 0.05 { 1.5 } else { 1.0 };
                center * (1.0 + noise * z) * outlier
            })
            .collect()
    }

    #[test]
    fn the_in_place_median_is_the_median() {
        let mut rng = StdRng::seed_from_u64(3);
        for n in 1..30 {
            let xs: Vec<f64> = (0..n).map(|_| rng.gen::<f64>()).collect();
            assert_eq!(median_in_place(&mut xs.clone()), median(&xs).unwrap());
        }
    }

    #[test]
    fn medians_and_refusals() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN]), None);
        let c = compare(&[1.0, 1.0], &[2.0, 2.0, 2.0], &Rule::default());
        assert_eq!(c.verdict, Change::NotEnoughSamples);
        let c = compare(&[0.0; 5], &[1.0; 5], &Rule::default());
        assert_eq!(c.verdict, Change::NotEnoughSamples);
    }

    #[test]
    fn mann_whitney_matches_known_values() {
        // Completely separated samples of 5: U = 0, p well under 0.05.
        let m = mann_whitney(&[1.0, 2.0, 3.0, 4.0, 5.0], &[6.0, 7.0, 8.0, 9.0, 10.0]).unwrap();
        assert_eq!(m.u, 0.0);
        assert!(m.p < 0.02 && m.p > 0.005, "{m:?}");
        // Identical samples: no evidence.
        let m = mann_whitney(&[1.0; 4], &[1.0; 4]).unwrap();
        assert_eq!(m.p, 1.0);
    }

    /// The acceptance figures on synthetic timings: with 3% noise
    /// and occasional outliers, 20 samples a side, no change gives at most
    /// 1 false regression in 100 kernels, a 10% slowdown is found in at
    /// least 95 of 100.
    #[test]
    fn false_regressions_are_rare_and_a_ten_percent_slowdown_is_found() {
        let mut rng = StdRng::seed_from_u64(7);
        let rule = Rule::default();
        let mut false_alarms = 0;
        let mut found = 0;
        for _ in 0..100 {
            let base = timings(&mut rng, 20, 1.0, 0.03);
            let same = timings(&mut rng, 20, 1.0, 0.03);
            let slower = timings(&mut rng, 20, 1.10 * 1.0, 0.03);
            if compare(&base, &same, &rule).verdict == Change::Regression {
                false_alarms += 1;
            }
            if compare(&base, &slower, &rule).verdict == Change::Regression {
                found += 1;
            }
        }
        assert!(false_alarms <= 1, "{false_alarms} false regressions in 100");
        assert!(found >= 95, "a 10% slowdown found {found} times in 100");
    }

    /// Runs of one kernel: each run's level drifts by about `drift`
    /// (multiplicative), its samples by `noise` around that level.
    fn drifting_runs(rng: &mut StdRng, runs: usize, center: f64, drift: f64) -> Vec<Vec<f64>> {
        (0..runs)
            .map(|_| {
                let z: f64 = (0..6).map(|_| rng.gen::<f64>()).sum::<f64>() - 3.0;
                timings(rng, 20, center * (1.0 + drift * z), 0.03)
            })
            .collect()
    }

    #[test]
    fn run_noise_is_robust_and_needs_enough_kernels() {
        assert_eq!(run_noise(&[1.0, 1.1, 0.9, 1.0]), None);
        let steady = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0];
        let noise = run_noise(&steady).unwrap();
        assert_eq!(noise.kernels, 7);
        let sd = noise.log_sd;
        assert!(sd < 0.02, "{sd}");
        // One kernel that really changed does not make the others noisy.
        let mut one_slow = steady.to_vec();
        one_slow.push(1.5);
        assert!(run_noise(&one_slow).unwrap().log_sd < 0.03);
        // Every kernel 10% slower is a change, not noise.
        let all_slow: Vec<f64> = steady.iter().map(|r| r * 1.1).collect();
        assert!((run_noise(&all_slow).unwrap().log_sd - sd).abs() < 1e-9);
        assert_eq!(run_noise(&[f64::NAN, -1.0, 0.0, 1.0, 1.0]), None);
    }

    #[test]
    fn widening_turns_a_within_run_regression_into_noise() {
        let rule = Rule::default();
        let mut rng = StdRng::seed_from_u64(11);
        let base = timings(&mut rng, 50, 1.0, 0.01);
        let new = timings(&mut rng, 50, 1.15, 0.01);
        let c = compare(&base, &new, &rule);
        assert_eq!(c.verdict, Change::Regression);
        // Kernels that move ±20% from run to run: 15% is inside that.
        let noisy = RunNoise {
            log_sd: 0.2,
            kernels: 1,
        };
        let wide = widen(&c, noisy, &rule);
        // The ratio is still 1.15: not "unchanged", but not a regression.
        assert_eq!(wide.verdict, Change::Inconclusive);
        let (lo, hi) = wide.interval.unwrap();
        assert!(lo < c.interval.unwrap().0 && hi > c.interval.unwrap().1);
        // Run noise of 1% leaves a 15% slowdown a regression, also when
        // 100 kernels share the verdicts (a wider z).
        let quiet = RunNoise {
            log_sd: 0.01,
            kernels: 100,
        };
        assert_eq!(widen(&c, quiet, &rule).verdict, Change::Regression);
        let none = RunNoise {
            log_sd: 0.0,
            kernels: 100,
        };
        assert_eq!(widen(&c, none, &rule), c);
        // Shared among 100 verdicts, 95% asks for z = 3.48, not 1.96.
        assert!((z_of(1.0 - 0.05 / 100.0) - 3.48).abs() < 0.01);
        assert!((z_of(0.95) - 1.96).abs() < 0.01);
    }

    /// Runs whose level drifts about 10% from run to run: pooling their samples
    /// gives many false regressions; resampling the runs does not, and a
    /// 50% slowdown is still found.
    #[test]
    fn the_two_level_bootstrap_holds_the_drift_between_runs() {
        let mut rng = StdRng::seed_from_u64(5);
        let rule = Rule {
            resamples: 500,
            ..Rule::default()
        };
        let (mut pooled_false, mut runs_false, mut found) = (0, 0, 0);
        for _ in 0..100 {
            let base = drifting_runs(&mut rng, 5, 1.0, 0.15);
            let same = drifting_runs(&mut rng, 5, 1.0, 0.15);
            let slow = drifting_runs(&mut rng, 5, 1.5, 0.15);
            let flat = |r: &[Vec<f64>]| r.concat();
            if compare(&flat(&base), &flat(&same), &rule).verdict == Change::Regression {
                pooled_false += 1;
            }
            if compare_runs(&base, &same, &rule).verdict == Change::Regression {
                runs_false += 1;
            }
            if compare_runs(&base, &slow, &rule).verdict == Change::Regression {
                found += 1;
            }
        }
        eprintln!("pooled {pooled_false}, runs {runs_false}, found {found}");
        assert!(runs_false <= 3, "{runs_false} false regressions in 100");
        assert!(pooled_false > runs_false, "{pooled_false} vs {runs_false}");
        assert!(found >= 90, "a 50% slowdown found {found} times in 100");
        // One run a side: the pooled comparison, unchanged.
        let one = drifting_runs(&mut rng, 1, 1.0, 0.04);
        let other = drifting_runs(&mut rng, 1, 1.0, 0.04);
        assert_eq!(
            compare_runs(&one, &other, &rule),
            compare(&one[0], &other[0], &rule)
        );
    }

    #[test]
    fn one_rule_for_the_noise_between_runs() {
        let rule = Rule::default();
        let mut rng = StdRng::seed_from_u64(12);
        let base = timings(&mut rng, 50, 1.0, 0.01);
        let slow = timings(&mut rng, 50, 2.0, 0.01);
        let same = timings(&mut rng, 50, 1.01, 0.01);
        let c = compare(&base, &slow, &rule);
        assert_eq!(c.verdict, Change::Regression);
        // One run a side, noise between runs unknown: no verdict, the
        // ratio kept.
        let unknown = judge(&c, None, false, &rule);
        assert_eq!(unknown.verdict, Change::NotEnoughRuns);
        assert_eq!(unknown.ratio, c.ratio);
        // Several runs a side: the interval already holds it.
        assert_eq!(judge(&c, None, true, &rule), c);
        // The spread across kernels known: widened.
        let noise = RunNoise {
            log_sd: 0.01,
            kernels: 20,
        };
        assert_eq!(
            judge(&c, Some(noise), false, &rule),
            widen(&c, noise, &rule)
        );
        // A ratio inside the band stays unchanged with any noise model.
        let flat = compare(&base, &same, &rule);
        assert_eq!(flat.verdict, Change::Unchanged);
        assert_eq!(judge(&flat, None, false, &rule).verdict, Change::Unchanged);
        // Words, once.
        assert_eq!(Change::NotEnoughRuns.word(), "not enough runs");
        assert_eq!(Change::Inconclusive.word(), "inconclusive");
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        #[test]
        fn never_panics_and_the_interval_holds_the_ratio(
            base in proptest::collection::vec(-1e6f64..1e6, 0..40),
            new in proptest::collection::vec(-1e6f64..1e6, 0..40),
        ) {
            let c = compare(&base, &new, &Rule { resamples: 200, ..Rule::default() });
            if let Some((lo, hi)) = c.interval {
                proptest::prop_assert!(lo <= hi);
            }
            if let Some(p) = c.p {
                proptest::prop_assert!((0.0..=1.0).contains(&p));
            }
        }
    }
}
