//! `lockstep bench compare BASE NEW`: which kernels got slower, decided
//! with statistics rather than a threshold on two medians.
//!
//! Each side is a `bench --json` results file, a history run file, or a
//! selection of a history directory (`DIR@COMMIT`: every bench run of that
//! commit, `DIR@latest`: every run of the newest run's commit), whose
//! samples are pooled per kernel (a kernel is its MIOpenDriver arguments).
//! Per kernel, the ratio of medians new/base gets a seeded bootstrap
//! confidence interval and a Mann-Whitney U p-value (lockstep-stats); a
//! change is a regression only when the whole interval lies above the
//! noise band `1 + threshold`, so a noisy machine yields "unchanged" or
//! "not enough samples", never a made-up regression.
//!
//! The interval holds the noise between runs, not only within one: with
//! several runs on both sides, runs are resampled before their samples
//! (a two-level bootstrap); and with enough kernels, the spread of the
//! ratios across the kernels estimates how much a kernel moves from run
//! to run (or from one set of runs to another) and widens every interval
//! by it ([`NoiseModel`]). A few runs a side cannot hold that noise by
//! themselves: with three runs a side, all three of one side are slower
//! for one kernel in twenty by chance alone.

use std::collections::BTreeMap;
use std::path::Path;

use lockstep_core::Error;
use lockstep_history::views::{bench_kernels, KernelSamples};
use lockstep_history::{Kind, RunRecord};
use lockstep_stats::{Change, Rule};
use serde::Serialize;

/// The largest results file read: the bound of a history run, whether the
/// file is found in a directory or named (a run is a results file).
const MAX_RESULTS_BYTES: u64 = lockstep_history::store::MAX_RUN_BYTES;

/// What a side measured: bench kernels, or the benchmark steps of tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Measured {
    /// `lockstep bench` rows: every sample of each kernel.
    Kernels,
    /// `lockstep test` benchmark steps: one time per test per run (its
    /// `metrics.time_ms`, in µs here like kernels), so a verdict needs
    /// three runs a side.
    TestSteps,
}

/// One side of a comparison: where it came from and its kernels' samples.
#[derive(Debug, Clone)]
pub struct Side {
    /// What the user named, for the report.
    pub label: String,
    pub measured: Measured,
    /// The runs it pooled.
    pub runs: usize,
    /// Kernel name -> its samples (µs) per run, in first-seen order of
    /// names.
    pub kernels: Vec<(String, Vec<Vec<f64>>)>,
}

/// How the intervals account for the noise between runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NoiseModel {
    /// Both sides hold several runs (resampled, then their samples), and
    /// the intervals are widened by the spread of the ratios across
    /// kernels.
    RunsAndKernelSpread,
    /// Both sides hold several runs, too few kernels to see the spread.
    Runs,
    /// A side holds one run: intervals widened by the spread of the
    /// ratios across kernels.
    KernelSpread,
    /// A side holds one run and too few kernels to see that spread: the
    /// intervals hold within-run noise only.
    WithinRun,
}

/// What a kernel's comparison says: lockstep-stats' verdict (the one
/// rule, the one set of words), or that the kernel is on one side only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Judged(Change),
    /// The kernel is in BASE only.
    OnlyInBase,
    /// The kernel is in NEW only.
    OnlyInNew,
}

impl Serialize for Outcome {
    /// `regression` ... as lockstep-stats names them, `only_in_base`,
    /// `only_in_new` (docs/schemas/bench-compare.json).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Outcome::Judged(change) => change.serialize(serializer),
            Outcome::OnlyInBase => serializer.serialize_str("only_in_base"),
            Outcome::OnlyInNew => serializer.serialize_str("only_in_new"),
        }
    }
}

impl Outcome {
    /// In words: lockstep-stats' for a verdict (the site says the same).
    fn word(self) -> &'static str {
        match self {
            Outcome::Judged(change) => change.word(),
            Outcome::OnlyInBase => "only in BASE",
            Outcome::OnlyInNew => "only in NEW",
        }
    }
}

/// One kernel.
#[derive(Debug, Clone, Serialize)]
pub struct KernelComparison {
    pub kernel: String,
    pub base_samples: usize,
    pub new_samples: usize,
    pub base_median_us: Option<f64>,
    pub new_median_us: Option<f64>,
    pub ratio: Option<f64>,
    /// The bootstrap interval of the ratio.
    pub interval: Option<(f64, f64)>,
    /// Mann-Whitney U two-sided p-value.
    pub p: Option<f64>,
    pub outcome: Outcome,
}

/// The whole comparison (`--json`: docs/schemas/bench-compare.json).
#[derive(Debug, Clone, Serialize)]
pub struct CompareReport {
    pub base: String,
    pub new: String,
    pub base_runs: usize,
    pub new_runs: usize,
    /// What was compared (BASE's; [`check_comparable`] makes both agree).
    pub measured: Measured,
    pub threshold: f64,
    pub confidence: f64,
    /// How the noise between runs entered the intervals.
    pub noise_model: NoiseModel,
    /// The run-to-run noise added to each interval (`kernel_spread`): the
    /// robust standard deviation of ln(ratio) across kernels.
    pub run_noise: Option<f64>,
    pub kernels: Vec<KernelComparison>,
    pub regressions: usize,
    pub improvements: usize,
}

/// A kernel on both sides: its name, BASE's runs, NEW's runs, and their
/// comparison.
type Both<'a> = (
    &'a String,
    &'a Vec<Vec<f64>>,
    &'a Vec<Vec<f64>>,
    lockstep_stats::Comparison,
);

/// Compares every kernel of `new` with `base` under `rule`.
pub fn compare(base: &Side, new: &Side, rule: &Rule) -> CompareReport {
    let base_map: BTreeMap<&str, &Vec<Vec<f64>>> =
        base.kernels.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let new_map: BTreeMap<&str, &Vec<Vec<f64>>> =
        new.kernels.iter().map(|(k, v)| (k.as_str(), v)).collect();
    // Kernels on both sides, compared; then the run-to-run noise their
    // ratios show when a side has a single run.
    let both: Vec<Both<'_>> = base
        .kernels
        .iter()
        .filter_map(|(name, runs)| {
            let new_runs = *new_map.get(name.as_str())?;
            Some((
                name,
                runs,
                new_runs,
                lockstep_stats::compare_runs(runs, new_runs, rule),
            ))
        })
        .collect();
    let several_runs = base.runs >= 2 && new.runs >= 2;
    let ratios: Vec<f64> = both
        .iter()
        .filter(|(.., c)| c.verdict != Change::NotEnoughSamples)
        .filter_map(|(.., c)| c.ratio)
        .collect();
    let noise = lockstep_stats::run_noise(&ratios);
    let run_noise = noise.map(|n| n.log_sd);
    let noise_model = match (several_runs, run_noise) {
        (true, Some(_)) => NoiseModel::RunsAndKernelSpread,
        (true, None) => NoiseModel::Runs,
        (false, Some(_)) => NoiseModel::KernelSpread,
        (false, None) => NoiseModel::WithinRun,
    };
    let mut judged: BTreeMap<&str, KernelComparison> = both
        .into_iter()
        .map(|(name, base_runs, new_runs, c)| {
            let c = lockstep_stats::judge(&c, noise, several_runs, rule);
            (name.as_str(), compared(name, base_runs, new_runs, &c))
        })
        .collect();
    let mut kernels = Vec::new();
    for (name, runs) in &base.kernels {
        match judged.remove(name.as_str()) {
            Some(k) => kernels.push(k),
            None => kernels.push(one_sided(name, runs, &[], Outcome::OnlyInBase)),
        }
    }
    for (name, runs) in &new.kernels {
        if !base_map.contains_key(name.as_str()) {
            kernels.push(one_sided(name, &[], runs, Outcome::OnlyInNew));
        }
    }
    let count = |o: Outcome| kernels.iter().filter(|k| k.outcome == o).count();
    CompareReport {
        base: base.label.clone(),
        new: new.label.clone(),
        base_runs: base.runs,
        new_runs: new.runs,
        measured: base.measured,
        threshold: rule.threshold,
        confidence: rule.confidence,
        noise_model,
        run_noise,
        regressions: count(Outcome::Judged(Change::Regression)),
        improvements: count(Outcome::Judged(Change::Improvement)),
        kernels,
    }
}

fn samples(runs: &[Vec<f64>]) -> usize {
    runs.iter().map(Vec::len).sum()
}

fn compared(
    name: &str,
    base: &[Vec<f64>],
    new: &[Vec<f64>],
    c: &lockstep_stats::Comparison,
) -> KernelComparison {
    KernelComparison {
        kernel: name.to_string(),
        base_samples: samples(base),
        new_samples: samples(new),
        base_median_us: c.base_median,
        new_median_us: c.new_median,
        ratio: c.ratio,
        interval: c.interval,
        p: c.p,
        outcome: Outcome::Judged(c.verdict),
    }
}

fn one_sided(
    name: &str,
    base: &[Vec<f64>],
    new: &[Vec<f64>],
    outcome: Outcome,
) -> KernelComparison {
    KernelComparison {
        kernel: name.to_string(),
        base_samples: samples(base),
        new_samples: samples(new),
        base_median_us: lockstep_stats::median(&base.concat()),
        new_median_us: lockstep_stats::median(&new.concat()),
        ratio: None,
        interval: None,
        p: None,
        outcome,
    }
}

/// Reads one side: a results file, a history run file, or `DIR@COMMIT` /
/// `DIR@latest`. `flag` names the argument in errors (`BASE`, `NEW`).
/// `DIR@REV` when `DIR` is a directory (a history): the directory and REV.
pub fn history_selection<'s>(spec: &'s str, cwd: &Path) -> Option<(std::path::PathBuf, &'s str)> {
    let (dir, rev) = spec.rsplit_once('@')?;
    let path = cwd.join(dir);
    path.is_dir().then_some((path, rev))
}

pub fn load_side(
    flag: &str,
    spec: &str,
    cwd: &Path,
    warned: &mut Warned<'_>,
) -> Result<Side, Error> {
    if let Some((path, rev)) = history_selection(spec, cwd) {
        return history_side(flag, spec, &path, rev, warned);
    }
    let path = cwd.join(spec);
    if path.is_dir() {
        return Err(Error::usage(format!(
            "{flag} `{spec}` is a directory: name a selection of its runs"
        ))
        .hint(format!(
            "`{spec}@COMMIT` (every bench run of that commit) or `{spec}@latest`"
        )));
    }
    file_side(flag, spec, &path)
}

fn file_side(flag: &str, spec: &str, path: &Path) -> Result<Side, Error> {
    let text = lockstep_core::fs::read_input_text(flag, path, MAX_RESULTS_BYTES)?;
    let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        Error::usage(format!("{flag} {} is not JSON", path.display()))
            .cause(e.to_string())
            .hint("name a `lockstep bench --json` results file, a history run, or DIR@COMMIT")
    })?;
    let results = match value.get("kind").and_then(|k| k.as_str()) {
        Some("bench" | "test") => value.get("results").cloned().unwrap_or_default(),
        Some(other) => {
            return Err(Error::usage(format!(
                "{flag} {} is a history run of `lockstep {other}`, not of `lockstep bench` or `lockstep test`",
                path.display()
            )))
        }
        None => value,
    };
    let (measured, samples) = if results.get("rows").and_then(|r| r.as_array()).is_some() {
        (Measured::Kernels, bench_kernels(&results))
    } else if results.get("tests").and_then(|r| r.as_array()).is_some() {
        (Measured::TestSteps, test_steps(&results))
    } else {
        return Err(Error::usage(format!(
            "{flag} {} is not a bench or test result",
            path.display()
        ))
        .cause("it has no \"rows\" (docs/schemas/bench-results.json) and no \"tests\" (docs/schemas/test-results.json)")
        .hint("name a `lockstep bench --json` or `lockstep test --json` results file, a history run, or DIR@COMMIT"));
    };
    if measured == Measured::TestSteps && samples.is_empty() {
        return Err(Error::usage(format!(
            "{flag} {} has no timed benchmark step",
            path.display()
        ))
        .hint("only tests with a benchmark step record a time (docs/suite.md)"));
    }
    Ok(Side {
        label: spec.to_string(),
        measured,
        runs: 1,
        kernels: pooled(&[samples]),
    })
}

/// The benchmark steps of a test-results document as kernels named by
/// their test: one sample each, its `time_ms` in µs. Tests without a
/// timed benchmark step are left out.
fn test_steps(results: &serde_json::Value) -> Vec<KernelSamples> {
    lockstep_history::views::test_rows(results)
        .into_iter()
        .filter_map(|row| {
            let step = row.benchmark?;
            // A time is a positive duration; anything else is no timing.
            let time_ms = step.time_ms.filter(|t| *t > 0.0)?;
            Some(KernelSamples {
                name: row.id.to_string(),
                func_name: None,
                times_us: vec![time_ms * 1000.0],
                gflops: None,
                status: if step.passed { "ok" } else { "failed" }.into(),
            })
        })
        .collect()
}

/// Reads BASE and NEW ([`load_side`]) and checks they measure the same
/// things ([`check_comparable`]).
pub fn load_sides(
    base: &str,
    new: &str,
    cwd: &Path,
    sink: &dyn lockstep_core::events::Sink,
) -> Result<(Side, Side), Error> {
    let mut warned = Warned {
        sink,
        said: std::collections::BTreeSet::new(),
    };
    let base = load_side("BASE", base, cwd, &mut warned)?;
    let new = load_side("NEW", new, cwd, &mut warned)?;
    check_comparable(&base, &new)?;
    Ok((base, new))
}

/// BASE and NEW must measure the same things: kernels against kernels,
/// test steps against test steps.
pub fn check_comparable(base: &Side, new: &Side) -> Result<(), Error> {
    if base.measured == new.measured {
        return Ok(());
    }
    let what = |s: &Side| match s.measured {
        Measured::Kernels => "bench kernels",
        Measured::TestSteps => "test benchmark steps",
    };
    Err(Error::usage(format!(
        "BASE `{}` holds {} and NEW `{}` holds {}: nothing to compare",
        base.label,
        what(base),
        new.label,
        what(new)
    ))
    .hint("compare bench results with bench results, test results with test results"))
}

/// Warnings said once each (BASE and NEW may name one history).
pub struct Warned<'s> {
    sink: &'s dyn lockstep_core::events::Sink,
    said: std::collections::BTreeSet<String>,
}

impl Warned<'_> {
    fn warn(&mut self, message: String) {
        if self.said.insert(message.clone()) {
            self.sink.warn(message);
        }
    }
}

fn history_side(
    flag: &str,
    spec: &str,
    dir: &Path,
    rev: &str,
    warned: &mut Warned<'_>,
) -> Result<Side, Error> {
    let loaded = lockstep_history::load(dir)?;
    for skipped in &loaded.skipped {
        warned.warn(format!(
            "skipped {}: {}",
            skipped.path.to_string_lossy(),
            skipped.reason
        ));
    }
    let commit_of = |r: &RunRecord| r.source.commit.clone().unwrap_or_default();
    let prefix = match rev {
        "latest" => None,
        prefix => {
            let ok = prefix.len() >= 4
                && prefix.len() <= 40
                && prefix.chars().all(|c| c.is_ascii_hexdigit());
            if !ok {
                return Err(Error::usage(format!(
                    "{flag} `{spec}`: `{prefix}` is not a commit (4 to 40 hex digits) or `latest`"
                )));
            }
            Some(prefix.to_ascii_lowercase())
        }
    };
    // The commit's bench runs; a commit without any: its test runs (their
    // benchmark steps). `latest`: the newest run's commit of that kind.
    let pick = |kind: Kind| -> Vec<&RunRecord> {
        let runs: Vec<&RunRecord> = loaded.runs.iter().filter(|r| r.kind == kind).collect();
        let wanted = match &prefix {
            Some(p) => p.clone(),
            None => runs.last().map(|r| commit_of(r)).unwrap_or_default(),
        };
        runs.into_iter()
            .filter(|r| !wanted.is_empty() && commit_of(r).starts_with(&wanted))
            .collect()
    };
    let (measured, chosen) = match pick(Kind::Bench) {
        bench if !bench.is_empty() => (Measured::Kernels, bench),
        _ => (Measured::TestSteps, pick(Kind::Test)),
    };
    if chosen.is_empty() {
        return Err(Error::usage(format!(
            "{flag} `{spec}`: the history in {} has no bench or test run of {}",
            dir.display(),
            if rev == "latest" { "any commit" } else { rev }
        ))
        .hint("`lockstep history list DIR` shows its runs; record some with `lockstep bench --record DIR`"));
    }
    let per_run: Vec<Vec<KernelSamples>> = chosen
        .iter()
        .map(|r| match measured {
            Measured::Kernels => bench_kernels(&r.results),
            Measured::TestSteps => test_steps(&r.results),
        })
        .collect();
    Ok(Side {
        label: spec.to_string(),
        measured,
        runs: chosen.len(),
        kernels: pooled(&per_run),
    })
}

/// Every kernel's samples, one list per run that timed it (first-seen
/// order of kernels).
fn pooled(runs: &[Vec<KernelSamples>]) -> Vec<(String, Vec<Vec<f64>>)> {
    let mut order: Vec<String> = Vec::new();
    let mut samples: BTreeMap<String, Vec<Vec<f64>>> = BTreeMap::new();
    for run in runs {
        for kernel in run {
            if !samples.contains_key(&kernel.name) {
                order.push(kernel.name.clone());
            }
            samples
                .entry(kernel.name.clone())
                .or_default()
                .push(kernel.times_us.clone());
        }
    }
    order
        .into_iter()
        .map(|name| {
            let times = samples.remove(&name).unwrap_or_default();
            (name, times)
        })
        .collect()
}

/// `--threshold`: `5%` or `0.05`, above 0 and at most 100%.
pub fn parse_threshold(text: &str) -> Result<f64, Error> {
    let trimmed = text.trim();
    let value = match trimmed.strip_suffix('%') {
        Some(percent) => percent.trim().parse::<f64>().map(|p| p / 100.0),
        None => trimmed.parse::<f64>(),
    };
    match value {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 1.0 => Ok(v),
        _ => Err(
            Error::usage(format!("--threshold `{text}` is not a noise band")).hint(
                "give a percentage above 0 and at most 100, e.g. `5%` (or a fraction, `0.05`)",
            ),
        ),
    }
}

/// `bench compare`'s rule from its flags: `--threshold` (a noise band) and
/// `--confidence` (0.5 to 0.999), checked before anything is read.
pub fn rule(threshold: &str, confidence: f64) -> Result<lockstep_stats::Rule, Error> {
    let threshold = parse_threshold(threshold)?;
    if !(0.5..=0.999).contains(&confidence) {
        return Err(
            Error::usage(format!("--confidence {confidence} is out of range"))
                .hint("use a level from 0.5 to 0.999, e.g. 0.95"),
        );
    }
    Ok(lockstep_stats::Rule {
        threshold,
        confidence,
        ..lockstep_stats::Rule::default()
    })
}

/// The report as a table, one kernel per line (its name last and whole:
/// a kernel is its arguments, and a name cut inside one names another
/// kernel), then the counts.
pub fn render(report: &CompareReport) -> String {
    let mut out = String::new();
    let confidence = (report.confidence * 100.0).round();
    out.push_str(&format!(
        "{:>10}  {:>10}  {:>6}  {:>15}  {:>7}  {:<18}  kernel\n",
        "base µs",
        "new µs",
        "ratio",
        format!("{confidence}% interval"),
        "p",
        "verdict"
    ));
    let num = |x: Option<f64>, digits: usize| match x {
        Some(v) => format!("{v:.digits$}"),
        None => "-".into(),
    };
    for k in &report.kernels {
        let interval = match k.interval {
            Some((lo, hi)) => format!("[{lo:.3}, {hi:.3}]"),
            None => "-".into(),
        };
        out.push_str(&format!(
            "{:>10}  {:>10}  {:>6}  {:>15}  {:>7}  {:<18}  {}\n",
            num(k.base_median_us, 1),
            num(k.new_median_us, 1),
            num(k.ratio, 3),
            interval,
            num(k.p, 4),
            k.outcome.word(),
            k.kernel
        ));
    }
    let count = |o: Outcome| report.kernels.iter().filter(|k| k.outcome == o).count();
    let counted =
        |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    out.push_str(&format!(
        "{}, {}, {} unchanged, {} inconclusive, {} with not enough samples, {} with not enough runs, {} only on one side (noise band ±{}%, {confidence}% confidence; BASE {}, NEW {})\n",
        counted(report.regressions, "regression", "regressions"),
        counted(report.improvements, "improvement", "improvements"),
        count(Outcome::Judged(Change::Unchanged)),
        count(Outcome::Judged(Change::Inconclusive)),
        count(Outcome::Judged(Change::NotEnoughSamples)),
        count(Outcome::Judged(Change::NotEnoughRuns)),
        count(Outcome::OnlyInBase) + count(Outcome::OnlyInNew),
        report.threshold * 100.0,
        counted(report.base_runs, "run", "runs"),
        counted(report.new_runs, "run", "runs"),
    ));
    out.push_str(&noise_line(report));
    out.push('\n');
    out
}

/// How the noise between runs entered the intervals, in words.
fn noise_line(report: &CompareReport) -> String {
    match (report.noise_model, report.run_noise) {
        (NoiseModel::Runs, _) => {
            "noise between runs: in the intervals (runs resampled, then their samples)".into()
        }
        (NoiseModel::RunsAndKernelSpread, Some(sd)) => format!(
            "noise between runs: in the intervals (runs resampled, then their samples), and ±{:.1}% a kernel (the spread of the ratios across kernels) added to every interval",
            sd * 100.0
        ),
        (NoiseModel::KernelSpread, Some(sd)) => format!(
            "noise between runs: ±{:.1}% a kernel (the spread of the ratios across kernels; one run on a side), added to every interval",
            sd * 100.0
        ),
        _ => format!(
            "noise between runs: not known (one run on a side and fewer than {} kernels to see it): a ratio outside the noise band is \"not enough runs\", not a verdict; compare several runs a side (DIR@COMMIT)",
            lockstep_stats::MIN_KERNELS_FOR_NOISE
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(kernels: &[(&str, Vec<f64>)]) -> Side {
        Side {
            label: "x".into(),
            measured: Measured::Kernels,
            runs: 1,
            kernels: kernels
                .iter()
                .map(|(k, v)| (k.to_string(), vec![v.clone()]))
                .collect(),
        }
    }

    /// `n` kernels timed in `runs` runs; kernel `i`'s run `r` is
    /// `level(i, r)` times a steady pattern of samples.
    fn runs_side(n: usize, runs: usize, level: impl Fn(usize, usize) -> f64) -> Side {
        let steady: Vec<f64> = (0..30).map(|i| 100.0 + (i % 7) as f64).collect();
        Side {
            label: "x".into(),
            measured: Measured::Kernels,
            runs,
            kernels: (0..n)
                .map(|i| {
                    let per_run = (0..runs)
                        .map(|r| steady.iter().map(|t| t * level(i, r)).collect())
                        .collect();
                    (format!("k{i}"), per_run)
                })
                .collect(),
        }
    }

    /// Kernels that each moved up to ±30% between two single runs are
    /// noise, not 5 regressions; a kernel 3x slower is still found.
    #[test]
    fn single_runs_are_judged_against_the_spread_across_kernels() {
        let base = runs_side(20, 1, |_, _| 1.0);
        let drift = |i: usize| 1.0 + 0.3 * (((i * 7) % 13) as f64 / 6.0 - 1.0);
        let new = runs_side(20, 1, |i, _| if i == 19 { 3.0 } else { drift(i) });
        let report = compare(&base, &new, &Rule::default());
        assert_eq!(report.noise_model, NoiseModel::KernelSpread);
        let sd = report.run_noise.unwrap();
        assert!(sd > 0.1, "{sd}");
        let regressed: Vec<&str> = report
            .kernels
            .iter()
            .filter(|k| k.outcome == Outcome::Judged(Change::Regression))
            .map(|k| k.kernel.as_str())
            .collect();
        assert_eq!(regressed, ["k19"]);
        assert!(render(&report).contains("a kernel (the spread of the ratios across kernels"));
    }

    /// Test steps: a time that is missing, zero, negative or not a number
    /// is no timing (the test is left out), never a sample.
    #[test]
    fn test_steps_take_positive_times_only() {
        let doc = serde_json::json!({"tests": [
            {"id": "a", "steps": [{"kind": "benchmark", "status": "passed", "metrics": {"time_ms": 2.0}}]},
            {"id": "b", "steps": [{"kind": "benchmark", "status": "failed", "metrics": {"time_ms": -1.0}}]},
            {"id": "c", "steps": [{"kind": "benchmark", "status": "passed", "metrics": {"time_ms": 0.0}}]},
            {"id": "d", "steps": [{"kind": "benchmark", "status": "passed", "metrics": {"time_ms": "fast"}}]},
            {"id": "e", "steps": [{"kind": "benchmark", "status": "passed", "metrics": null}]},
            {"id": "f", "steps": [{"kind": "compile", "status": "passed", "metrics": {"time_ms": 3.0}}]}
        ]});
        let steps = test_steps(&doc);
        assert_eq!(steps.len(), 1);
        assert_eq!(
            (steps[0].name.as_str(), steps[0].times_us.as_slice()),
            ("a", &[2000.0][..])
        );
    }

    /// Several runs a side: the runs are resampled, so one slow run does
    /// not make a regression, and the noise is not estimated from kernels.
    #[test]
    fn several_runs_a_side_hold_their_own_drift() {
        let base = runs_side(3, 3, |_, _| 1.0);
        let new = runs_side(3, 3, |_, r| if r == 0 { 1.4 } else { 1.0 });
        let report = compare(&base, &new, &Rule::default());
        assert_eq!(report.noise_model, NoiseModel::Runs);
        assert_eq!(report.run_noise, None);
        assert_eq!(report.regressions, 0, "{}", render(&report));
        let slower = runs_side(3, 3, |_, _| 1.4);
        assert_eq!(compare(&base, &slower, &Rule::default()).regressions, 3);
    }

    #[test]
    fn kernels_on_one_side_and_too_few_samples_are_never_regressions() {
        let steady: Vec<f64> = (0..30).map(|i| 100.0 + (i % 7) as f64).collect();
        let slow: Vec<f64> = steady.iter().map(|t| t * 1.2).collect();
        let base = side(&[
            ("a", steady.clone()),
            ("b", steady.clone()),
            ("gone", steady.clone()),
            ("few", vec![1.0, 2.0]),
        ]);
        let new = side(&[
            ("a", steady.clone()),
            ("b", slow),
            ("added", steady),
            ("few", vec![9.0, 9.0]),
        ]);
        let report = compare(&base, &new, &Rule::default());
        let outcome = |name: &str| {
            report
                .kernels
                .iter()
                .find(|k| k.kernel == name)
                .unwrap()
                .outcome
        };
        assert_eq!(outcome("a"), Outcome::Judged(Change::Unchanged));
        // One run a side and two kernels: the noise between runs is not
        // known, so 1.2x is a ratio without a verdict.
        assert_eq!(outcome("b"), Outcome::Judged(Change::NotEnoughRuns));
        assert_eq!(outcome("gone"), Outcome::OnlyInBase);
        assert_eq!(outcome("added"), Outcome::OnlyInNew);
        assert_eq!(outcome("few"), Outcome::Judged(Change::NotEnoughSamples));
        assert_eq!(report.regressions, 0);
        let text = render(&report);
        assert!(
            text.contains("0 regressions, 0 improvements, 1 unchanged, 0 inconclusive, 1 with not enough samples, 1 with not enough runs, 2 only on one side"),
            "{text}"
        );
        assert!(text.contains("BASE 1 run, NEW 1 run"), "{text}");
        let b = text.lines().find(|l| l.ends_with("  b")).unwrap();
        assert!(
            b.contains("1.200") && b.contains("not enough runs"),
            "{text}"
        );
    }

    /// A kernel is its arguments: the table never cuts one.
    #[test]
    fn long_kernel_names_are_whole() {
        let steady: Vec<f64> = (0..30).map(|i| 100.0 + (i % 7) as f64).collect();
        let long = "convbfp16 -n 128 -c 256 -H 56 -W 56 -k 512 -y 3 -x 3 -p 1 -q 1 -u 1 -v 1 -l 1 -j 1 -m conv -g 1 -F 1 -t 1 --in_layout NHWC --out_layout NHWC --fil_layout NHWC";
        let report = compare(
            &side(&[(long, steady.clone())]),
            &side(&[(long, steady)]),
            &Rule::default(),
        );
        let text = render(&report);
        assert!(text.lines().any(|l| l.ends_with(long)), "{text}");
    }

    #[test]
    fn thresholds_are_percentages_or_fractions_in_range() {
        assert_eq!(parse_threshold("5%").unwrap(), 0.05);
        assert_eq!(parse_threshold("0.1").unwrap(), 0.1);
        for bad in ["0", "0%", "-5%", "150%", "x", "", "NaN", "inf"] {
            assert!(parse_threshold(bad).is_err(), "{bad}");
        }
    }
}
