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

use std::collections::BTreeMap;
use std::path::Path;

use lockstep_core::Error;
use lockstep_history::views::{bench_kernels, KernelSamples};
use lockstep_history::{Kind, RunRecord};
use lockstep_stats::{Rule, Verdict};
use serde::Serialize;

/// The largest results file read.
const MAX_RESULTS_BYTES: u64 = 256 << 20;

/// One side of a comparison: where it came from and its kernels' samples.
#[derive(Debug, Clone)]
pub struct Side {
    /// What the user named, for the report.
    pub label: String,
    /// The runs it pooled.
    pub runs: usize,
    /// Kernel name -> samples (µs), in first-seen order of names.
    pub kernels: Vec<(String, Vec<f64>)>,
}

/// What a kernel's comparison says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Regression,
    Improvement,
    Unchanged,
    NotEnoughSamples,
    /// The kernel is in BASE only.
    OnlyInBase,
    /// The kernel is in NEW only.
    OnlyInNew,
}

impl Outcome {
    fn word(self) -> &'static str {
        match self {
            Outcome::Regression => "REGRESSION",
            Outcome::Improvement => "improvement",
            Outcome::Unchanged => "unchanged",
            Outcome::NotEnoughSamples => "not enough samples",
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
    pub threshold: f64,
    pub confidence: f64,
    pub kernels: Vec<KernelComparison>,
    pub regressions: usize,
    pub improvements: usize,
}

/// Compares every kernel of `new` with `base` under `rule`.
pub fn compare(base: &Side, new: &Side, rule: &Rule) -> CompareReport {
    let base_map: BTreeMap<&str, &Vec<f64>> =
        base.kernels.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let new_map: BTreeMap<&str, &Vec<f64>> =
        new.kernels.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut kernels = Vec::new();
    for (name, samples) in &base.kernels {
        let c = match new_map.get(name.as_str()) {
            Some(new_samples) => compared(name, samples, new_samples, rule),
            None => one_sided(name, samples, &[], Outcome::OnlyInBase),
        };
        kernels.push(c);
    }
    for (name, samples) in &new.kernels {
        if !base_map.contains_key(name.as_str()) {
            kernels.push(one_sided(name, &[], samples, Outcome::OnlyInNew));
        }
    }
    let count = |o: Outcome| kernels.iter().filter(|k| k.outcome == o).count();
    CompareReport {
        base: base.label.clone(),
        new: new.label.clone(),
        base_runs: base.runs,
        new_runs: new.runs,
        threshold: rule.threshold,
        confidence: rule.confidence,
        regressions: count(Outcome::Regression),
        improvements: count(Outcome::Improvement),
        kernels,
    }
}

fn compared(name: &str, base: &[f64], new: &[f64], rule: &Rule) -> KernelComparison {
    let c = lockstep_stats::compare(base, new, rule);
    KernelComparison {
        kernel: name.to_string(),
        base_samples: base.len(),
        new_samples: new.len(),
        base_median_us: c.base_median,
        new_median_us: c.new_median,
        ratio: c.ratio,
        interval: c.interval,
        p: c.p,
        outcome: match c.verdict {
            Verdict::Regression => Outcome::Regression,
            Verdict::Improvement => Outcome::Improvement,
            Verdict::Unchanged => Outcome::Unchanged,
            Verdict::NotEnoughSamples => Outcome::NotEnoughSamples,
        },
    }
}

fn one_sided(name: &str, base: &[f64], new: &[f64], outcome: Outcome) -> KernelComparison {
    KernelComparison {
        kernel: name.to_string(),
        base_samples: base.len(),
        new_samples: new.len(),
        base_median_us: lockstep_stats::median(base),
        new_median_us: lockstep_stats::median(new),
        ratio: None,
        interval: None,
        p: None,
        outcome,
    }
}

/// Reads one side: a results file, a history run file, or `DIR@COMMIT` /
/// `DIR@latest`. `flag` names the argument in errors (`BASE`, `NEW`).
pub fn load_side(flag: &str, spec: &str, cwd: &Path) -> Result<Side, Error> {
    if let Some((dir, rev)) = spec.rsplit_once('@') {
        let path = cwd.join(dir);
        if path.is_dir() {
            return history_side(flag, spec, &path, rev);
        }
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
        Some("bench") => value.get("results").cloned().unwrap_or_default(),
        Some(other) => {
            return Err(Error::usage(format!(
                "{flag} {} is a history run of `lockstep {other}`, not of `lockstep bench`",
                path.display()
            )))
        }
        None => value,
    };
    if results.get("rows").and_then(|r| r.as_array()).is_none() {
        return Err(
            Error::usage(format!("{flag} {} is not a bench result", path.display()))
                .cause("it has no \"rows\" (docs/schemas/bench-results.json)")
                .hint("name a `lockstep bench --json` results file, a history run, or DIR@COMMIT"),
        );
    }
    Ok(Side {
        label: spec.to_string(),
        runs: 1,
        kernels: pooled(&[bench_kernels(&results)]),
    })
}

fn history_side(flag: &str, spec: &str, dir: &Path, rev: &str) -> Result<Side, Error> {
    let loaded = lockstep_history::load(dir)?;
    for skipped in &loaded.skipped {
        tracing::warn!("skipped {}: {}", skipped.path.display(), skipped.reason);
    }
    let bench: Vec<&RunRecord> = loaded
        .runs
        .iter()
        .filter(|r| r.kind == Kind::Bench)
        .collect();
    let commit_of = |r: &RunRecord| r.source.commit.clone().unwrap_or_default();
    let wanted = match rev {
        "latest" => match bench.last() {
            Some(run) => commit_of(run),
            None => String::new(),
        },
        prefix => {
            let ok = prefix.len() >= 4
                && prefix.len() <= 40
                && prefix.chars().all(|c| c.is_ascii_hexdigit());
            if !ok {
                return Err(Error::usage(format!(
                    "{flag} `{spec}`: `{prefix}` is not a commit (4 to 40 hex digits) or `latest`"
                )));
            }
            prefix.to_ascii_lowercase()
        }
    };
    let chosen: Vec<&RunRecord> = bench
        .into_iter()
        .filter(|r| !wanted.is_empty() && commit_of(r).starts_with(&wanted))
        .collect();
    if chosen.is_empty() {
        return Err(Error::usage(format!(
            "{flag} `{spec}`: the history in {} has no bench run of {}",
            dir.display(),
            if rev == "latest" { "any commit" } else { rev }
        ))
        .hint("`lockstep history list DIR` shows its runs; record some with `lockstep bench --record DIR`"));
    }
    let per_run: Vec<Vec<KernelSamples>> =
        chosen.iter().map(|r| bench_kernels(&r.results)).collect();
    Ok(Side {
        label: spec.to_string(),
        runs: chosen.len(),
        kernels: pooled(&per_run),
    })
}

/// Every kernel's samples from all runs, concatenated (first-seen order).
fn pooled(runs: &[Vec<KernelSamples>]) -> Vec<(String, Vec<f64>)> {
    let mut order: Vec<String> = Vec::new();
    let mut samples: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for run in runs {
        for kernel in run {
            if !samples.contains_key(&kernel.name) {
                order.push(kernel.name.clone());
            }
            samples
                .entry(kernel.name.clone())
                .or_default()
                .extend(kernel.times_us.iter().copied());
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

/// The report as a table, one kernel per line, then the counts.
pub fn render(report: &CompareReport) -> String {
    let mut out = String::new();
    let width = report
        .kernels
        .iter()
        .map(|k| k.kernel.chars().count())
        .max()
        .unwrap_or(6)
        .clamp(6, 60);
    let confidence = (report.confidence * 100.0).round();
    out.push_str(&format!(
        "{:<width$}  {:>10}  {:>10}  {:>6}  {:>15}  {:>7}  verdict\n",
        "kernel",
        "base µs",
        "new µs",
        "ratio",
        format!("{confidence}% interval"),
        "p"
    ));
    let num = |x: Option<f64>, digits: usize| match x {
        Some(v) => format!("{v:.digits$}"),
        None => "-".into(),
    };
    for k in &report.kernels {
        let name: String = k.kernel.chars().take(width).collect();
        let interval = match k.interval {
            Some((lo, hi)) => format!("[{lo:.3}, {hi:.3}]"),
            None => "-".into(),
        };
        out.push_str(&format!(
            "{:<width$}  {:>10}  {:>10}  {:>6}  {:>15}  {:>7}  {}\n",
            name,
            num(k.base_median_us, 1),
            num(k.new_median_us, 1),
            num(k.ratio, 3),
            interval,
            num(k.p, 4),
            k.outcome.word()
        ));
    }
    let count = |o: Outcome| report.kernels.iter().filter(|k| k.outcome == o).count();
    out.push_str(&format!(
        "{} regression(s), {} improvement(s), {} unchanged, {} with not enough samples, {} only on one side (noise band ±{}%, {confidence}% confidence; BASE {} run(s), NEW {} run(s))\n",
        report.regressions,
        report.improvements,
        count(Outcome::Unchanged),
        count(Outcome::NotEnoughSamples),
        count(Outcome::OnlyInBase) + count(Outcome::OnlyInNew),
        report.threshold * 100.0,
        report.base_runs,
        report.new_runs
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn side(kernels: &[(&str, Vec<f64>)]) -> Side {
        Side {
            label: "x".into(),
            runs: 1,
            kernels: kernels
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        }
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
        assert_eq!(outcome("a"), Outcome::Unchanged);
        assert_eq!(outcome("b"), Outcome::Regression);
        assert_eq!(outcome("gone"), Outcome::OnlyInBase);
        assert_eq!(outcome("added"), Outcome::OnlyInNew);
        assert_eq!(outcome("few"), Outcome::NotEnoughSamples);
        assert_eq!(report.regressions, 1);
        let text = render(&report);
        assert!(text.contains("1 regression(s)"), "{text}");
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
