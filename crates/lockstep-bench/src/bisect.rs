//! `lockstep bench bisect`: the first commit between a good and a bad one
//! whose packages make a kernel slower, decided with statistics.
//!
//! The commits are walked with lockstep-bisect's [`range`] and
//! [`narrow_stored`], each commit's venv given by the [`CommitVenvs`] the
//! caller hands over (the binary passes lockstep-pkg's: the commit's
//! packages built from the committed tree through the wheel cache,
//! installed by manifest into a fresh venv), and the kernels are compiled and
//! timed with the IREE tools of that venv's `bin/` (as `bench --iree-bin`
//! would); the user's working tree is never checked out. The tools'
//! identity is combined with the commit, so the kernel cache never hands one
//! commit's modules to another (console scripts look alike across commits)
//! while a rerun reuses a commit's own compiles.
//!
//! GOOD's venv is kept for the whole bisection and GOOD measured right
//! before each measurement of a commit (a drift of the machine's load hits
//! both sides alike); the commit's samples are compared with GOOD's, each
//! side holding one run per repeat (lockstep-stats [`compare_runs`]: from
//! two repeats on, the repeats are resampled before their samples, so
//! the drift between measurements is in the interval). No verdict is
//! given on a single measurement (unless `max_repeats` is 1): one pair
//! taken in a noisy moment must not name a culprit. A regression of any kernel is bad; every
//! kernel unchanged within the noise band (the interval's top at most
//! `1 + threshold`) or faster is good; anything else (an interval across
//! the band's edge, too few samples) is undecided and both are measured
//! again, up to `max_repeats`
//! measurements; still undecided, the commit is skipped (125, as in `git
//! bisect run`). BAD is judged the same way before the walk: when BAD is no
//! regression against GOOD there is nothing to bisect and the answer is an
//! error with the figures, never a made-up culprit. Verdicts of the commits
//! in between go to the one verdict store, keyed by the commit, GOOD, the
//! kernels, the variant, the Python, the threshold, the device and compile
//! flags and the repeat bound.

use std::path::{Path, PathBuf};

use lockstep_bisect::{narrow_stored, range, CommitVenvs, Verdict};
use lockstep_cache::Cache;
use lockstep_core::events::Sink;
use lockstep_core::hash::Framed;
use lockstep_core::words::count;
use lockstep_core::Error;
use lockstep_iree::Toolchain;
use lockstep_stats::{compare_runs, Rule};
use lockstep_store::Store;
use serde::{Deserialize, Serialize};

use crate::config::BenchConfig;
use crate::session::{self, Request};

/// What to bisect.
pub struct BisectRequest<'a> {
    /// The repository whose commits are bisected.
    pub root: &'a Path,
    /// Each commit's packages in a fresh venv (lockstep-pkg's, from the binary).
    pub venvs: &'a dyn CommitVenvs,
    pub good: String,
    pub bad: String,
    /// The bench settings: device, compile flags, timeout, threads, and the
    /// kernels as `commands_file` (else [`BisectRequest::kernels`]).
    pub bench: Request,
    /// MIOpenDriver command lines, one per entry (when no commands file).
    pub kernels: Vec<String>,
    pub max_repeats: u32,
    pub rule: Rule,
    /// The revisions are superproject commits of an integrate branch: BAD
    /// must also be on the current branch.
    pub superproject: bool,
}

/// One kernel's comparison with GOOD.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct KernelFigure {
    /// The MIOpen arguments and the function (a `-F 0` line has several).
    pub kernel: String,
    pub func_name: String,
    /// `median(commit) / median(GOOD)`.
    pub ratio: Option<f64>,
    /// Its bootstrap confidence interval.
    pub interval: Option<(f64, f64)>,
    /// Mann-Whitney's two-sided p-value.
    pub p: Option<f64>,
    pub good_median_us: Option<f64>,
    pub median_us: Option<f64>,
    pub good_samples: usize,
    pub samples: usize,
    /// lockstep-stats' verdict: regression, improvement, unchanged,
    /// inconclusive, not_enough_samples.
    pub stats: String,
}

/// What the measurements of one commit said (kept as the stored detail).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Judgement {
    /// How many times the commit was measured.
    pub measurements: u32,
    pub kernels: Vec<KernelFigure>,
    /// Why it was skipped, when it was.
    pub note: Option<String>,
}

/// A judged commit.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub commit: String,
    pub verdict: Verdict,
    pub cached: bool,
    #[serde(flatten)]
    pub judgement: Judgement,
}

/// The answer.
#[derive(Debug, Clone, Serialize)]
pub struct BisectReport {
    pub good: String,
    pub bad: String,
    pub threshold: f64,
    pub max_repeats: u32,
    /// The first bad commit, when the skips leave one candidate.
    pub first_bad: Option<String>,
    /// The commits it could be (one when `first_bad` is known).
    pub candidates: Vec<String>,
    /// BAD against GOOD, measured before the walk.
    pub endpoint: Step,
    /// The commits probed in between, in the order probed.
    pub steps: Vec<Step>,
}

/// `bench bisect`'s rule from its flags, checked before anything is
/// built: `--threshold` (a noise band) and `--max-repeats` (1 or more).
pub fn rule(threshold: &str, max_repeats: u32) -> Result<Rule, Error> {
    let threshold = crate::regressions::parse_threshold(threshold)?;
    if max_repeats == 0 {
        return Err(
            Error::usage("--max-repeats 0: a commit needs one measurement at least")
                .hint("give --max-repeats 1 or more (default 5)"),
        );
    }
    Ok(Rule {
        threshold,
        ..Rule::default()
    })
}

/// Everything a measurement needs.
struct Bench<'a> {
    request: Request,
    cfg: &'a BenchConfig,
    cache: &'a Cache,
    sink: &'a dyn Sink,
}

/// Samples per kernel, one list per measurement, in the order of the rows.
#[derive(Default)]
struct Pool(Vec<(String, String, Vec<Vec<f64>>)>);

impl Pool {
    fn add(&mut self, rows: Vec<(String, String, Vec<f64>)>) {
        for (kernel, func, samples) in rows {
            match self
                .0
                .iter_mut()
                .find(|(k, f, _)| *k == kernel && *f == func)
            {
                Some((_, _, runs)) => runs.push(samples),
                None => self.0.push((kernel, func, vec![samples])),
            }
        }
    }
}

/// The fewest measurements a verdict is given on (when `max_repeats`
/// allows): the second one lets the bootstrap see the drift between them.
const MIN_MEASUREMENTS: u32 = 2;

/// Bisects; see the module doc. Usage errors come before anything is built.
pub fn bisect(
    req: &BisectRequest<'_>,
    cfg: &BenchConfig,
    cache: &Cache,
    sink: &dyn Sink,
) -> Result<BisectReport, Error> {
    if req.max_repeats == 0 {
        return Err(
            Error::usage("--max-repeats 0: a commit needs one measurement at least")
                .hint("give --max-repeats 1 or more (default 5)"),
        );
    }
    let scratch = tempfile::Builder::new()
        .prefix("lockstep-bench-bisect-")
        .tempdir()
        .map_err(|e| Error::failed("cannot create a temporary directory").cause(e.to_string()))?;
    let request = kernels_request(req, scratch.path())?;
    let prepared = session::prepare(&request, cfg, sink)?;
    if prepared.jobs.is_empty() {
        return Err(Error::usage("no kernels to bisect")
            .hint("give MIOpenDriver command lines after `--`, or --commands-file FILE"));
    }
    if let Some((job, why)) = prepared
        .jobs
        .iter()
        .find_map(|j| j.parsed.as_ref().err().map(|why| (j, why)))
    {
        return Err(Error::usage(format!(
            "invalid kernel{}: {why}",
            job.line
                .map(|l| format!(" on line {l}"))
                .unwrap_or_default()
        ))
        .hint("fix the command line; `lockstep bench -- CMD` checks one"));
    }
    let kernels: Vec<String> = prepared.jobs.iter().map(|j| j.arguments.clone()).collect();
    let range = range(req.root, &req.good, &req.bad)?;
    if req.superproject {
        let head = range.repo.must_resolve("HEAD^{commit}")?.to_string();
        if !range.repo.is_ancestor(&range.bad, &head)? {
            return Err(Error::usage(format!(
                "--bad {} is not on the current branch (--superproject)",
                req.bad
            ))
            .hint("check out the integrate branch whose superproject commits you bisect"));
        }
    }
    let store = Store::open(&range.repo.state_dir()?)?;
    let bench = Bench {
        request,
        cfg,
        cache,
        sink,
    };
    let good = range.good.clone();
    let bad = range.bad.clone();
    let mut report = None;
    let good_built = req.venvs.with_venv(&good, sink, &mut |good_venv| {
        let good_tools = venv_tools(good_venv, &good, sink)?
            .map_err(|why| Error::failed(format!("GOOD {}: {why}", req.good)))?;
        let endpoint = match in_venv(req, &bench, &good_tools, &bad)? {
            Ok(step) => step,
            Err(why) => return Err(Error::failed(format!("BAD {}: {why}", req.bad))),
        };
        if endpoint.verdict != Verdict::Bad {
            return Err(no_regression(req, &endpoint));
        }
        sink.note(format!(
            "BAD {} is a regression against GOOD {} ({}); bisecting {}",
            req.bad,
            req.good,
            figures(&endpoint.judgement),
            count(range.commits.len(), "commit", "commits")
        ));
        let mut steps = Vec::new();
        let (first_bad, candidates) = narrow_stored(
            &range,
            &store,
            "bench-bisect",
            |commit| verdict_key(req, &good, &kernels, commit),
            |commit| {
                let step = in_venv(req, &bench, &good_tools, commit)?
                    .unwrap_or_else(|why| skipped(commit, 0, why));
                let detail = serde_json::to_string(&step.judgement)
                    .map_err(|e| Error::failed("cannot record a verdict").cause(e.to_string()))?;
                Ok((step.verdict, detail))
            },
            |commit, verdict, cached, detail, remaining| {
                let judgement = serde_json::from_str(detail).unwrap_or_else(|_| Judgement {
                    note: Some(detail.to_string()),
                    ..Judgement::default()
                });
                let step = Step {
                    commit: commit.to_string(),
                    verdict,
                    cached,
                    judgement,
                };
                sink.note(format!(
                    "{}: {}{} ({}); about {} left",
                    short(commit),
                    verdict.as_str(),
                    if cached { " (cached)" } else { "" },
                    figures(&step.judgement),
                    remaining
                ));
                steps.push(step);
            },
        )?;
        report = Some(BisectReport {
            good: good.clone(),
            bad: bad.clone(),
            threshold: req.rule.threshold,
            max_repeats: req.max_repeats,
            first_bad,
            candidates,
            endpoint,
            steps,
        });
        Ok(())
    })?;
    good_built.map_err(|why| Error::failed(format!("GOOD {}: {why}", req.good)))?;
    report.ok_or_else(|| Error::failed("bench bisect ended without a report"))
}

/// `commit` judged in its own venv against GOOD's tools; `Ok(Err(why))`
/// when its packages give no venv (a commit to skip).
fn in_venv(
    req: &BisectRequest<'_>,
    bench: &Bench<'_>,
    good_tools: &Toolchain,
    commit: &str,
) -> Result<Result<Step, String>, Error> {
    let mut step = None;
    let built = req.venvs.with_venv(commit, bench.sink, &mut |venv| {
        step = Some(judge(req, bench, good_tools, venv, commit)?);
        Ok(())
    })?;
    Ok(built.and_then(|()| step.ok_or_else(|| "no measurement was taken".to_string())))
}

/// The bench request whose kernels are the commands file, else the
/// command lines written one per line into a commands file in `scratch`
/// (each checked first: a bad line is a usage error, nothing runs).
fn kernels_request(req: &BisectRequest<'_>, scratch: &Path) -> Result<Request, Error> {
    let mut request = req.bench.clone();
    request.command = Vec::new();
    if request.commands_file.is_some() {
        if !req.kernels.is_empty() {
            return Err(Error::usage("both --commands-file and kernels after `--`")
                .hint("give the kernels one way"));
        }
        return Ok(request);
    }
    if req.kernels.is_empty() {
        return Err(Error::usage("no kernels to bisect")
            .hint("give MIOpenDriver command lines after `--` (one per argument), or --commands-file FILE"));
    }
    for kernel in &req.kernels {
        lockstep_kernels::commands::parse_line(kernel).map_err(|why| {
            Error::usage(format!("invalid kernel {why}")).hint(
                "give each MIOpenDriver command line as one argument: -- 'conv -n 1 -c 16 ...'",
            )
        })?;
    }
    let file: PathBuf = scratch.join("kernels.txt");
    fs_err::write(&file, format!("{}\n", req.kernels.join("\n")))?;
    request.commands_file = Some(file);
    Ok(request)
}

/// The verdict store's key of `commit` under everything a verdict depends on.
fn verdict_key(req: &BisectRequest<'_>, good: &str, kernels: &[String], commit: &str) -> String {
    // Version 2: verdicts from the two-level bootstrap over repeats.
    Framed::new("lockstep-bench", "bisect", 2)
        .part("commit", commit)
        .part("good", good)
        .parts("kernels", kernels)
        .part("variant", req.venvs.variant())
        .part("python", req.venvs.python().unwrap_or("-"))
        .part("threshold", req.rule.threshold.to_string())
        .part("confidence", req.rule.confidence.to_string())
        .part("device", req.bench.device.as_deref().unwrap_or("-"))
        .parts("compile-flags", &req.bench.compile_flags)
        .part("max-repeats", req.max_repeats.to_string())
        .hex()
}

/// The IREE tools of a venv's `bin/`, identified by their content and by
/// `commit`; `Ok(Err(why))` when the venv has none.
fn venv_tools(
    venv: &Path,
    commit: &str,
    sink: &dyn Sink,
) -> Result<Result<Toolchain, String>, Error> {
    let bin = venv.join("bin");
    let found = lockstep_iree::toolchain::resolve(
        &lockstep_iree::toolchain::Request {
            flag: Some(&bin),
            config_bin: None,
            version: "",
        },
        sink,
    );
    Ok(match found {
        Ok(mut tools) => {
            tools.identity = Framed::new("lockstep-bench", "bisect-tools", 1)
                .part("identity", &tools.identity)
                .part("commit", commit)
                .hex();
            Ok(tools)
        }
        Err(e) => Err(format!(
            "its packages give no usable IREE tools: {}",
            e.message
        )),
    })
}

/// Compiles and times every kernel once: samples per kernel, or why a row failed.
#[allow(clippy::type_complexity)]
fn measure(
    bench: &Bench<'_>,
    tools: &Toolchain,
) -> Result<Result<Vec<(String, String, Vec<f64>)>, String>, Error> {
    let prepared = session::prepare(&bench.request, bench.cfg, bench.sink)?;
    let finished = session::run(prepared, tools, bench.cache, bench.sink)?;
    let mut out = Vec::new();
    for row in finished.summary.rows {
        match (&row.stats, row.ok()) {
            (Some(stats), true) => out.push((row.arguments, row.func_name, stats.times_us.clone())),
            _ => return Ok(Err(format!("`{}`: {}", row.arguments, row.status))),
        }
    }
    Ok(Ok(out))
}

/// Measures `commit` (its venv at `venv`) against GOOD until the statistics
/// decide or `max_repeats` measurements were taken: GOOD is measured right
/// before each measurement of the commit, each side's samples pooled over
/// the repeats.
fn judge(
    req: &BisectRequest<'_>,
    bench: &Bench<'_>,
    good_tools: &Toolchain,
    venv: &Path,
    commit: &str,
) -> Result<Step, Error> {
    let mut good = Pool::default();
    let good = &mut good;
    let tools = match venv_tools(venv, commit, bench.sink)? {
        Ok(tools) => tools,
        Err(why) => return Ok(skipped(commit, 0, why)),
    };
    let mut pool = Pool::default();
    let mut kernels = Vec::new();
    for n in 1..=req.max_repeats {
        // GOOD right before the commit, so that a drift of the machine's
        // load affects both sides alike.
        match measure(bench, good_tools)? {
            Ok(rows) => good.add(rows),
            Err(why) => return Err(Error::failed(format!("GOOD cannot be timed again: {why}"))),
        }
        match measure(bench, &tools)? {
            Ok(rows) => pool.add(rows),
            Err(why) => return Ok(skipped(commit, n, format!("a kernel failed: {why}"))),
        }
        // No verdict before the minimum, so no bootstrap either.
        if n < MIN_MEASUREMENTS.min(req.max_repeats) {
            continue;
        }
        kernels = compare_pools(good, &pool, &req.rule);
        if let Some(verdict) = classify(&kernels, req.rule.threshold) {
            return Ok(Step {
                commit: commit.to_string(),
                verdict,
                cached: false,
                judgement: Judgement {
                    measurements: n,
                    kernels,
                    note: None,
                },
            });
        }
    }
    let mut step = skipped(
        commit,
        req.max_repeats,
        format!(
            "undecided after {} (the statistics never settled)",
            count(req.max_repeats as usize, "measurement", "measurements")
        ),
    );
    step.judgement.kernels = kernels;
    Ok(step)
}

fn skipped(commit: &str, measurements: u32, why: String) -> Step {
    Step {
        commit: commit.to_string(),
        verdict: Verdict::Skip,
        cached: false,
        judgement: Judgement {
            measurements,
            kernels: Vec::new(),
            note: Some(why),
        },
    }
}

fn compare_pools(good: &Pool, new: &Pool, rule: &Rule) -> Vec<KernelFigure> {
    new.0
        .iter()
        .map(|(kernel, func, runs)| {
            let base: &[Vec<f64>] = good
                .0
                .iter()
                .find(|(k, f, _)| k == kernel && f == func)
                .map_or(&[], |(_, _, s)| s.as_slice());
            let c = compare_runs(base, runs, rule);
            KernelFigure {
                kernel: kernel.clone(),
                func_name: func.clone(),
                ratio: c.ratio,
                interval: c.interval,
                p: c.p,
                good_median_us: c.base_median,
                median_us: c.new_median,
                good_samples: base.iter().map(Vec::len).sum(),
                samples: runs.iter().map(Vec::len).sum(),
                stats: serde_json::to_value(c.verdict)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
            }
        })
        .collect()
}

/// Bad when a kernel regressed; good when every kernel is faster or its
/// interval stays under the band's top; otherwise undecided (`None`).
fn classify(kernels: &[KernelFigure], threshold: f64) -> Option<Verdict> {
    if kernels.is_empty() {
        return None;
    }
    if kernels.iter().any(|k| k.stats == "regression") {
        return Some(Verdict::Bad);
    }
    let settled = |k: &KernelFigure| match k.stats.as_str() {
        "improvement" => true,
        "unchanged" | "inconclusive" => k.interval.is_some_and(|(_, hi)| hi <= 1.0 + threshold),
        _ => false,
    };
    kernels.iter().all(settled).then_some(Verdict::Good)
}

fn no_regression(req: &BisectRequest<'_>, endpoint: &Step) -> Error {
    let mut err = Error::failed("no regression between GOOD and BAD to bisect")
        .cause(format!("GOOD {}, BAD {}", req.good, req.bad));
    for k in &endpoint.judgement.kernels {
        err = err.cause(kernel_line(k));
    }
    if let Some(note) = &endpoint.judgement.note {
        err = err.cause(note.clone());
    }
    err.cause(format!(
        "{} of BAD; a regression needs the whole interval above {:.3}",
        count(
            endpoint.judgement.measurements as usize,
            "measurement",
            "measurements"
        ),
        1.0 + req.rule.threshold
    ))
    .hint(
        "check the range with `lockstep bench compare`, or lower --threshold / raise --max-repeats",
    )
}

/// `KERNEL: ratio 1.671 [1.650, 1.690], 100 vs 100 samples, unchanged`.
pub fn kernel_line(k: &KernelFigure) -> String {
    let ratio = k.ratio.map_or("-".to_string(), |r| format!("{r:.3}"));
    let interval = k
        .interval
        .map_or("-".to_string(), |(lo, hi)| format!("[{lo:.3}, {hi:.3}]"));
    format!(
        "{} ({}): ratio {ratio} {interval}, {} vs {}, {}",
        k.kernel,
        k.func_name,
        k.good_samples,
        count(k.samples, "sample", "samples"),
        k.stats
    )
}

/// A step's figures on one line: per kernel ratio and interval, and the measurements.
pub fn figures(j: &Judgement) -> String {
    let mut parts: Vec<String> = j
        .kernels
        .iter()
        .map(|k| {
            format!(
                "ratio {} {}",
                k.ratio.map_or("-".into(), |r| format!("{r:.3}")),
                k.interval
                    .map_or("-".into(), |(lo, hi)| format!("[{lo:.3}, {hi:.3}]"))
            )
        })
        .collect();
    parts.push(count(
        j.measurements as usize,
        "measurement",
        "measurements",
    ));
    if let Some(note) = &j.note {
        parts.push(note.clone());
    }
    parts.join(", ")
}

fn short(commit: &str) -> &str {
    &commit[..commit.len().min(12)]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(stats: &str, interval: (f64, f64)) -> KernelFigure {
        KernelFigure {
            kernel: "conv".into(),
            func_name: "f".into(),
            ratio: Some((interval.0 + interval.1) / 2.0),
            interval: Some(interval),
            p: None,
            good_median_us: None,
            median_us: None,
            good_samples: 10,
            samples: 10,
            stats: stats.into(),
        }
    }

    #[test]
    fn classify_needs_the_statistics_to_settle() {
        assert_eq!(
            classify(&[figure("regression", (1.5, 1.7))], 0.05),
            Some(Verdict::Bad)
        );
        assert_eq!(
            classify(&[figure("unchanged", (0.97, 1.03))], 0.05),
            Some(Verdict::Good)
        );
        assert_eq!(
            classify(&[figure("improvement", (0.5, 0.7))], 0.05),
            Some(Verdict::Good)
        );
        // Across the band's top: measure again.
        assert_eq!(classify(&[figure("unchanged", (1.01, 1.09))], 0.05), None);
        assert_eq!(
            classify(&[figure("not_enough_samples", (1.0, 1.0))], 0.05),
            None
        );
        assert_eq!(classify(&[], 0.05), None);
        assert_eq!(
            classify(
                &[
                    figure("unchanged", (0.99, 1.02)),
                    figure("regression", (1.2, 1.3))
                ],
                0.05
            ),
            Some(Verdict::Bad)
        );
    }
}
