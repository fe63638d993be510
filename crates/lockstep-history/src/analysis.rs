//! What the history says across runs: test outcomes per test and run,
//! flaky tests, the outcome heatmap, benchmark steps against their goldens,
//! kernel timing series with run-to-run regressions, the integrate
//! timeline, and the release list.
//!
//! Why here and not in the report site: these are facts about the history
//! (`bench compare` and a future `history` query read them too), and they
//! are pure functions over `&[RunRecord]`, so they are tested without
//! files or HTML. Every function reads documents through [`crate::views`]
//! and never panics on what a results document holds; the bounded ones
//! (`last`, `max_*` arguments) keep their output small whatever the
//! history's size, so a page built from them is bounded too.

use std::collections::{BTreeMap, HashMap};

use lockstep_stats::{Change, Comparison, Rule};
use serde_json::Value;

use crate::record::{Kind, RunRecord};
use crate::views::{
    bench_kernels, integrate_loop, test_rows, BenchmarkStep, IntegrateLoop, Outcome, TestRow,
};

/// One test's result in one run.
#[derive(Debug, Clone, PartialEq)]
pub struct TestOutcome<'a> {
    /// The run's index in the slice given.
    pub run: usize,
    pub row: TestRow<'a>,
}

/// Every test of every test run, run by run (oldest first).
pub fn test_outcomes(runs: &[RunRecord]) -> Vec<TestOutcome<'_>> {
    test_runs(runs)
        .flat_map(|(run, record)| {
            test_rows(&record.results)
                .into_iter()
                .map(move |row| TestOutcome { run, row })
        })
        .collect()
}

fn test_runs(runs: &[RunRecord]) -> impl Iterator<Item = (usize, &RunRecord)> {
    runs.iter()
        .enumerate()
        .filter(|(_, r)| r.kind == Kind::Test)
}

/// The run succeeded at the test (`pass`, `xpass`: the test's code ran
/// green) or not (`fail`, `xfail`); `None` for a skip.
fn green(outcome: Outcome) -> Option<bool> {
    match outcome {
        Outcome::Pass | Outcome::Xpass => Some(true),
        Outcome::Fail | Outcome::Xfail => Some(false),
        Outcome::Skip | Outcome::Unknown => None,
    }
}

/// A test that both passed and failed on one source commit and toolchain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlakyTest {
    /// The test's id (`<case> [<group>]`).
    pub test: String,
    pub commit: String,
    pub toolchain: Option<String>,
    /// Runs where it ran green (`pass`, `xpass`).
    pub passes: usize,
    /// Runs where it did not (`fail`, `xfail`).
    pub failures: usize,
}

/// Tests that both passed and failed on the same source commit and
/// toolchain across the history, sorted by test then commit. Runs without
/// a commit, or from a dirty tree (not that commit's source), say nothing
/// about flakiness and are left out.
pub fn flaky_tests(runs: &[RunRecord]) -> Vec<FlakyTest> {
    TestHistory::new(runs).flaky()
}

/// Outcome counts of a set of tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OutcomeCounts {
    pub pass: usize,
    pub fail: usize,
    pub xfail: usize,
    pub xpass: usize,
    pub skip: usize,
    pub unknown: usize,
}

impl OutcomeCounts {
    pub fn add(&mut self, outcome: Outcome) {
        match outcome {
            Outcome::Pass => self.pass += 1,
            Outcome::Fail => self.fail += 1,
            Outcome::Xfail => self.xfail += 1,
            Outcome::Xpass => self.xpass += 1,
            Outcome::Skip => self.skip += 1,
            Outcome::Unknown => self.unknown += 1,
        }
    }

    pub fn total(&self) -> usize {
        self.pass + self.fail + self.xfail + self.xpass + self.skip + self.unknown
    }

    /// Tests that fail the run (`fail`, `xpass`).
    pub fn failures(&self) -> usize {
        self.fail + self.xpass
    }
}

/// The latest run of one suite on one target.
#[derive(Debug, Clone, PartialEq)]
pub struct SuiteLatest {
    pub suite: String,
    pub target: String,
    /// Index of the run in the slice given.
    pub run: usize,
    pub counts: OutcomeCounts,
}

/// For each (suite, target) the latest test run holding it, with the
/// outcome counts of that suite and target in that run; sorted by suite
/// then target.
pub fn latest_by_suite_target(runs: &[RunRecord]) -> Vec<SuiteLatest> {
    TestHistory::new(runs).latest_by_suite_target()
}

/// A cell of the heatmap: what one test did on one commit (over every run
/// of that commit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    pub state: CellState,
    /// Runs where it ran green (`pass`, `xpass`).
    pub passes: usize,
    /// Runs where it did not (`fail`, `xfail`).
    pub failures: usize,
    pub skips: usize,
}

/// The colour of a heatmap cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CellState {
    Pass,
    Fail,
    /// Passed and failed on this commit.
    Flaky,
    Xfail,
    Xpass,
    Skip,
}

impl CellState {
    pub fn name(self) -> &'static str {
        match self {
            CellState::Pass => "pass",
            CellState::Fail => "fail",
            CellState::Flaky => "flaky",
            CellState::Xfail => "xfail",
            CellState::Xpass => "xpass",
            CellState::Skip => "skip",
        }
    }

    /// Worth a row of the heatmap.
    pub fn is_bad(self) -> bool {
        matches!(self, CellState::Fail | CellState::Flaky | CellState::Xpass)
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct CellAcc {
    outcomes: OutcomeCounts,
}

impl CellAcc {
    fn cell(&self) -> Option<Cell> {
        let o = &self.outcomes;
        if o.total() == 0 {
            return None;
        }
        let passes = o.pass + o.xpass;
        let failures = o.fail + o.xfail;
        let state = if o.pass > 0 && o.fail > 0 {
            CellState::Flaky
        } else if o.fail > 0 {
            CellState::Fail
        } else if o.xpass > 0 {
            CellState::Xpass
        } else if o.pass > 0 {
            CellState::Pass
        } else if o.xfail > 0 {
            CellState::Xfail
        } else {
            CellState::Skip
        };
        Some(Cell {
            state,
            passes,
            failures,
            skips: o.skip + o.unknown,
        })
    }
}

/// A column of the heatmap: one source commit (or one run without one).
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    /// The commit; `None` for a run that had none.
    pub commit: Option<String>,
    /// The runs of it (indices in the slice given), oldest first.
    pub runs: Vec<usize>,
}

/// A row of the heatmap.
#[derive(Debug, Clone, PartialEq)]
pub struct HeatRow {
    pub test: String,
    /// One per column; `None` where no run of that commit had the test.
    pub cells: Vec<Option<Cell>>,
    /// Cells that are `fail`, `flaky` or `xpass`.
    pub bad: usize,
}

/// Outcome per test per commit over the last commits tested, the tests
/// that ever went wrong in them only.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Heatmap {
    /// Oldest first.
    pub columns: Vec<Column>,
    /// The tests with a bad cell, most bad cells first (at most `max_rows`).
    pub rows: Vec<HeatRow>,
    /// Tests with a result in these columns and no bad cell.
    pub green_tests: usize,
    /// Tests with a bad cell beyond `max_rows`.
    pub hidden_rows: usize,
    /// Commits tested before the first column.
    pub older_commits: usize,
}

/// The heatmap of the last `max_commits` commits tested (a commit's
/// column sits where it was first tested), rows for at most `max_rows`
/// tests that failed, flaked or xpassed in them.
pub fn test_heatmap(runs: &[RunRecord], max_commits: usize, max_rows: usize) -> Heatmap {
    TestHistory::new(runs).heatmap(max_commits, max_rows)
}

/// A benchmark step's time in one run, next to its golden.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GoldenPoint {
    pub run: usize,
    pub time_ms: f64,
    pub golden_time_ms: Option<f64>,
    /// The step passed (a time beyond the golden's tolerance fails it).
    pub passed: bool,
}

/// The benchmark step times of one test across runs.
#[derive(Debug, Clone, PartialEq)]
pub struct GoldenSeries {
    pub test: String,
    /// The last points, oldest first.
    pub points: Vec<GoldenPoint>,
    /// Points in the whole history.
    pub total_points: usize,
}

impl GoldenSeries {
    /// The latest time over its golden (`None` without a golden).
    pub fn latest_ratio(&self) -> Option<f64> {
        let last = self.points.last()?;
        let golden = last.golden_time_ms.filter(|g| *g > 0.0)?;
        Some(last.time_ms / golden)
    }
}

/// Benchmark step times per test (the tests with a benchmark step that
/// measured a time), the last `last` points each; the `max_tests` whose
/// latest time is the largest share of their golden come first (tests
/// without a golden after them, by name). Returns the series and how many
/// tests were left out.
pub fn golden_series(
    runs: &[RunRecord],
    last: usize,
    max_tests: usize,
) -> (Vec<GoldenSeries>, usize) {
    TestHistory::new(runs).golden_series(last, max_tests)
}

/// The test runs of a history read once, every test interned: the tests
/// page's analyses share one reading of what may be a million rows, and
/// work on numbers instead of hashing names again.
pub struct TestHistory<'a> {
    runs: &'a [RunRecord],
    /// Distinct tests, by first appearance.
    tests: Vec<TestInfo<'a>>,
    /// Distinct (suite, target) pairs.
    pairs: Vec<(&'a str, &'a str)>,
    read: Vec<RunTests>,
}

/// A distinct test of the history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TestInfo<'a> {
    pub id: &'a str,
    pub suite: &'a str,
    pub target: &'a str,
    /// Its (suite, target) pair.
    pair: u32,
}

/// One test run: its index, and per row the test and outcome.
struct RunTests {
    run: usize,
    outcomes: Vec<(u32, Outcome)>,
    benchmarks: Vec<(u32, BenchmarkStep)>,
}

/// What one reader thread read: its own numbering of tests.
struct Part<'a> {
    tests: Vec<TestInfo<'a>>,
    read: Vec<RunTests>,
}

fn read_part<'a>(part: &[(usize, &'a RunRecord)]) -> Part<'a> {
    let mut ids: HashMap<&'a str, u32> = HashMap::new();
    let mut tests = Vec::new();
    let read = part
        .iter()
        .map(|&(run, record)| {
            let mut outcomes = Vec::new();
            let mut benchmarks = Vec::new();
            for row in test_rows(&record.results) {
                let t = *ids.entry(row.id).or_insert_with(|| {
                    tests.push(TestInfo {
                        id: row.id,
                        suite: row.suite,
                        target: row.target,
                        pair: 0,
                    });
                    (tests.len() - 1) as u32
                });
                outcomes.push((t, row.outcome));
                if let Some(step) = row.benchmark {
                    benchmarks.push((t, step));
                }
            }
            RunTests {
                run,
                outcomes,
                benchmarks,
            }
        })
        .collect();
    Part { tests, read }
}

impl<'a> TestHistory<'a> {
    /// Reads every test run of `runs` (on the worker pool, up to 4 parts).
    pub fn new(runs: &'a [RunRecord]) -> TestHistory<'a> {
        let todo: Vec<(usize, &RunRecord)> = test_runs(runs).collect();
        let threads = lockstep_core::pool::cpus().clamp(1, 4);
        let chunk = todo.len().div_ceil(threads).max(1);
        let chunks: Vec<&[(usize, &RunRecord)]> = todo.chunks(chunk).collect();
        // Without threads (none could start), the same parts in turn.
        let parts: Vec<Part<'a>> =
            lockstep_core::pool::map_all("test history reader", threads, chunks.len(), |i| {
                read_part(chunks[i])
            })
            .unwrap_or_else(|_| chunks.iter().map(|part| read_part(part)).collect());
        // One numbering: each part's tests mapped onto the first part's.
        let mut ids: HashMap<&'a str, u32> = HashMap::new();
        let mut pair_ids: HashMap<(&'a str, &'a str), u32> = HashMap::new();
        let mut tests: Vec<TestInfo<'a>> = Vec::new();
        let mut pairs = Vec::new();
        let mut read = Vec::with_capacity(todo.len());
        for part in parts {
            let remap: Vec<u32> = part
                .tests
                .iter()
                .map(|info| {
                    *ids.entry(info.id).or_insert_with(|| {
                        let pair =
                            *pair_ids
                                .entry((info.suite, info.target))
                                .or_insert_with(|| {
                                    pairs.push((info.suite, info.target));
                                    (pairs.len() - 1) as u32
                                });
                        tests.push(TestInfo { pair, ..*info });
                        (tests.len() - 1) as u32
                    })
                })
                .collect();
            for mut r in part.read {
                for (t, _) in r.outcomes.iter_mut() {
                    *t = remap[*t as usize];
                }
                for (t, _) in r.benchmarks.iter_mut() {
                    *t = remap[*t as usize];
                }
                read.push(r);
            }
        }
        TestHistory {
            runs,
            tests,
            pairs,
            read,
        }
    }

    /// The distinct tests, by first appearance.
    pub fn tests(&self) -> &[TestInfo<'a>] {
        &self.tests
    }

    /// See [`flaky_tests`].
    pub fn flaky(&self) -> Vec<FlakyTest> {
        let mut groups: HashMap<(&str, Option<&str>), u64> = HashMap::new();
        let mut counts: HashMap<u64, (usize, usize)> = HashMap::new();
        for r in &self.read {
            let record = &self.runs[r.run];
            let Some(commit) = record.source.commit.as_deref() else {
                continue;
            };
            if record.source.dirty {
                continue;
            }
            let next = groups.len() as u64;
            let group = *groups
                .entry((commit, record.toolchain.as_deref()))
                .or_insert(next);
            for &(t, outcome) in &r.outcomes {
                let Some(green) = green(outcome) else {
                    continue;
                };
                let entry = counts.entry(group << 32 | u64::from(t)).or_default();
                if green {
                    entry.0 += 1;
                } else {
                    entry.1 += 1;
                }
            }
        }
        let group_keys: HashMap<u64, (&str, Option<&str>)> =
            groups.into_iter().map(|(k, v)| (v, k)).collect();
        let mut flaky: Vec<FlakyTest> = counts
            .into_iter()
            .filter(|(_, (p, f))| *p > 0 && *f > 0)
            .filter_map(|(key, (passes, failures))| {
                let (commit, toolchain) = group_keys.get(&(key >> 32))?;
                Some(FlakyTest {
                    test: self.tests.get((key & 0xffff_ffff) as usize)?.id.to_string(),
                    commit: commit.to_string(),
                    toolchain: toolchain.map(str::to_string),
                    passes,
                    failures,
                })
            })
            .collect();
        flaky.sort_by(|a, b| {
            (&a.test, &a.commit, &a.toolchain).cmp(&(&b.test, &b.commit, &b.toolchain))
        });
        flaky
    }

    /// See [`latest_by_suite_target`].
    pub fn latest_by_suite_target(&self) -> Vec<SuiteLatest> {
        let mut found: Vec<Option<SuiteLatest>> = vec![None; self.pairs.len()];
        let mut missing = self.pairs.len();
        // Newest first; usually the newest run holds every pair.
        for r in self.read.iter().rev() {
            if missing == 0 {
                break;
            }
            let mut here: HashMap<u32, OutcomeCounts> = HashMap::new();
            for &(t, outcome) in &r.outcomes {
                let pair = self.tests[t as usize].pair;
                if found[pair as usize].is_none() {
                    here.entry(pair).or_default().add(outcome);
                }
            }
            for (pair, counts) in here {
                let (suite, target) = self.pairs[pair as usize];
                found[pair as usize] = Some(SuiteLatest {
                    suite: suite.to_string(),
                    target: target.to_string(),
                    run: r.run,
                    counts,
                });
                missing -= 1;
            }
        }
        let mut latest: Vec<SuiteLatest> = found.into_iter().flatten().collect();
        latest.sort_by(|a, b| (&a.suite, &a.target).cmp(&(&b.suite, &b.target)));
        latest
    }

    /// See [`test_heatmap`].
    pub fn heatmap(&self, max_commits: usize, max_rows: usize) -> Heatmap {
        // Columns, as indices into `read`.
        let mut columns: Vec<(Option<&str>, Vec<usize>)> = Vec::new();
        let mut by_commit: HashMap<&str, usize> = HashMap::new();
        for (i, r) in self.read.iter().enumerate() {
            match self.runs[r.run].source.commit.as_deref() {
                Some(commit) => match by_commit.get(commit) {
                    Some(&c) => columns[c].1.push(i),
                    None => {
                        by_commit.insert(commit, columns.len());
                        columns.push((Some(commit), vec![i]));
                    }
                },
                None => columns.push((None, vec![i])),
            }
        }
        let older_commits = columns.len().saturating_sub(max_commits);
        let columns = columns.split_off(older_commits);
        let width = columns.len();
        let mut accs: Vec<Option<Vec<CellAcc>>> = vec![None; self.tests.len()];
        for (c, (_, reads)) in columns.iter().enumerate() {
            for &i in reads {
                for &(t, outcome) in &self.read[i].outcomes {
                    accs[t as usize].get_or_insert_with(|| vec![CellAcc::default(); width])[c]
                        .outcomes
                        .add(outcome);
                }
            }
        }
        let mut green_tests = 0;
        let mut rows: Vec<HeatRow> = Vec::new();
        for (t, cells) in accs.into_iter().enumerate() {
            let Some(cells) = cells else { continue };
            let cells: Vec<Option<Cell>> = cells.iter().map(CellAcc::cell).collect();
            let bad = cells.iter().flatten().filter(|c| c.state.is_bad()).count();
            if bad == 0 {
                green_tests += 1;
            } else {
                rows.push(HeatRow {
                    test: self.tests[t].id.to_string(),
                    cells,
                    bad,
                });
            }
        }
        rows.sort_by(|a, b| b.bad.cmp(&a.bad).then_with(|| a.test.cmp(&b.test)));
        let hidden_rows = rows.len().saturating_sub(max_rows);
        rows.truncate(max_rows);
        Heatmap {
            columns: columns
                .into_iter()
                .map(|(commit, reads)| Column {
                    commit: commit.map(str::to_string),
                    runs: reads.iter().map(|&i| self.read[i].run).collect(),
                })
                .collect(),
            rows,
            green_tests,
            hidden_rows,
            older_commits,
        }
    }

    /// See [`golden_series`].
    pub fn golden_series(&self, last: usize, max_tests: usize) -> (Vec<GoldenSeries>, usize) {
        let mut series: HashMap<u32, Vec<GoldenPoint>> = HashMap::new();
        for r in &self.read {
            for &(t, step) in &r.benchmarks {
                let Some(time_ms) = step.time_ms else {
                    continue;
                };
                series.entry(t).or_default().push(GoldenPoint {
                    run: r.run,
                    time_ms,
                    golden_time_ms: step.golden_time_ms,
                    passed: step.passed,
                });
            }
        }
        let mut out: Vec<GoldenSeries> = series
            .into_iter()
            .map(|(t, mut points)| {
                let total_points = points.len();
                let points = points.split_off(total_points.saturating_sub(last));
                GoldenSeries {
                    test: self.tests[t as usize].id.to_string(),
                    points,
                    total_points,
                }
            })
            .collect();
        out.sort_by(|a, b| {
            match (a.latest_ratio(), b.latest_ratio()) {
                (Some(x), Some(y)) => y.total_cmp(&x),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => std::cmp::Ordering::Equal,
            }
            .then_with(|| a.test.cmp(&b.test))
        });
        let hidden = out.len().saturating_sub(max_tests);
        out.truncate(max_tests);
        (out, hidden)
    }
}

/// One kernel in one bench run.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchPoint {
    pub run: usize,
    /// Median of its samples (µs); `None` when it was not timed.
    pub median_us: Option<f64>,
    pub samples: usize,
    pub gflops: Option<f64>,
    /// The row's status (`ok` or why it failed).
    pub status: String,
    /// Against the previous point of the series that had samples; `None`
    /// for the first one.
    pub comparison: Option<Comparison>,
}

impl BenchPoint {
    pub fn verdict(&self) -> Option<Change> {
        self.comparison.map(|c| c.verdict)
    }
}

/// One kernel across bench runs.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchSeries {
    /// The kernel's MIOpen arguments.
    pub kernel: String,
    pub func_name: Option<String>,
    /// The last points, oldest first.
    pub points: Vec<BenchPoint>,
    /// Points in the whole history.
    pub total_points: usize,
}

impl BenchSeries {
    pub fn regressions(&self) -> usize {
        self.points
            .iter()
            .filter(|p| p.verdict() == Some(Change::Regression))
            .count()
    }
}

/// Timing series per kernel over the bench runs, the last `last` points
/// each (sorted by kernel), each point compared with the kernel's previous
/// point that had samples under `rule` (lockstep-stats: a regression only
/// when the bootstrap interval of the ratio of medians lies above the
/// noise band). When the two medians are within the band the interval
/// cannot lie outside it, and the bootstrap is not run (verdict
/// `Unchanged`, no interval): it keeps a history of thousands of runs
/// quick. A run with enough kernels to show how far a kernel drifts from
/// one run to the next (lockstep-stats `run_noise`) has that drift added
/// to its intervals: a busy machine's drift is not a regression; a run
/// without enough kernels to see it gives a ratio outside the band "not
/// enough runs" (lockstep-stats `judge`, the rule `bench compare` uses).
pub fn bench_series(runs: &[RunRecord], rule: &Rule, last: usize) -> Vec<BenchSeries> {
    struct Raw {
        run: usize,
        times: Vec<f64>,
        median: Option<f64>,
        gflops: Option<f64>,
        status: String,
    }
    let mut by_kernel: BTreeMap<String, (Option<String>, Vec<Raw>)> = BTreeMap::new();
    for (run, record) in runs.iter().enumerate() {
        if record.kind != Kind::Bench {
            continue;
        }
        for k in bench_kernels(&record.results) {
            let entry = by_kernel.entry(k.name).or_default();
            if entry.0.is_none() {
                entry.0 = k.func_name.filter(|f| !f.is_empty());
            }
            entry.1.push(Raw {
                run,
                median: lockstep_stats::median(&k.times_us),
                times: k.times_us,
                gflops: k.gflops.filter(|g| g.is_finite()),
                status: k.status,
            });
        }
    }
    let threshold = rule.threshold.clamp(0.0, 10.0);
    let noise = run_noise_by_run(
        by_kernel
            .values()
            .map(|(_, raws)| raws.iter().map(|r| (r.run, r.median)).collect::<Vec<_>>()),
    );
    by_kernel
        .into_iter()
        .map(|(kernel, (func_name, raws))| {
            let total_points = raws.len();
            let first = total_points.saturating_sub(last);
            // The comparison base of the first kept point is the last
            // earlier point with samples.
            let mut base: Option<&[f64]> = raws[..first]
                .iter()
                .rev()
                .find(|r| !r.times.is_empty())
                .map(|r| r.times.as_slice());
            let mut points = Vec::with_capacity(total_points - first);
            for raw in &raws[first..] {
                let median_us = raw.median;
                let comparison = match base {
                    Some(b) if !raw.times.is_empty() => {
                        let c = compare_quick(b, &raw.times, rule, threshold);
                        // One run against the one before: the same rule as
                        // `bench compare` of two single runs.
                        Some(lockstep_stats::judge(
                            &c,
                            noise.get(&raw.run).copied(),
                            false,
                            rule,
                        ))
                    }
                    _ => None,
                };
                if !raw.times.is_empty() {
                    base = Some(&raw.times);
                }
                points.push(BenchPoint {
                    run: raw.run,
                    median_us,
                    samples: raw.times.len(),
                    gflops: raw.gflops,
                    status: raw.status.clone(),
                    comparison,
                });
            }
            BenchSeries {
                kernel,
                func_name,
                points,
                total_points,
            }
        })
        .collect()
}

/// Per bench run, the run-to-run noise its kernels show against their
/// previous points (lockstep-stats `run_noise`: the spread of the ratios
/// of medians across kernels), for the runs with enough kernels to see it.
/// Each run is a single run against single runs, so the within-run
/// interval alone would call that drift a regression.
fn run_noise_by_run(
    kernels: impl Iterator<Item = Vec<(usize, Option<f64>)>>,
) -> BTreeMap<usize, lockstep_stats::RunNoise> {
    let mut ratios: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for points in kernels {
        let mut previous: Option<f64> = None;
        for (run, median) in points {
            let Some(median) = median else {
                continue;
            };
            if let Some(before) = previous.filter(|b| *b > 0.0) {
                ratios.entry(run).or_default().push(median / before);
            }
            previous = Some(median);
        }
    }
    ratios
        .into_iter()
        .filter_map(|(run, r)| Some((run, lockstep_stats::run_noise(&r)?)))
        .collect()
}

fn compare_quick(base: &[f64], new: &[f64], rule: &Rule, threshold: f64) -> Comparison {
    if base.len() >= lockstep_stats::MIN_SAMPLES && new.len() >= lockstep_stats::MIN_SAMPLES {
        if let (Some(b), Some(n)) = (lockstep_stats::median(base), lockstep_stats::median(new)) {
            let ratio = n / b;
            if b != 0.0 && ratio.is_finite() && (ratio - 1.0).abs() <= threshold {
                return Comparison {
                    base_median: Some(b),
                    new_median: Some(n),
                    ratio: Some(ratio),
                    interval: None,
                    p: None,
                    verdict: Change::Unchanged,
                };
            }
        }
    }
    lockstep_stats::compare(base, new, rule)
}

/// One integrate loop of the history.
#[derive(Debug, Clone, PartialEq)]
pub struct IntegrateEntry {
    pub run: usize,
    pub what: IntegrateLoop,
}

/// Every integrate-loop run of the history, oldest first (documents that
/// are not loops are left out).
pub fn integrate_timeline(runs: &[RunRecord]) -> Vec<IntegrateEntry> {
    runs.iter()
        .enumerate()
        .filter(|(_, r)| r.kind == Kind::Integrate)
        .filter_map(|(run, r)| {
            Some(IntegrateEntry {
                run,
                what: integrate_loop(&r.results)?,
            })
        })
        .collect()
}

/// A file of a release.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseFile {
    pub filename: String,
    /// Its normalized project name.
    pub project: String,
    pub sha256: String,
    pub size: u64,
    pub upload_time: String,
}

/// A release store's `files/<version>/release.json`
/// (docs/schemas/release-record.json).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Release {
    pub version: String,
    pub tag: Option<String>,
    pub channel: Option<String>,
    /// The source revision built.
    pub source: Option<String>,
    pub pins: BTreeMap<String, String>,
    /// The yank reason, when yanked.
    pub yanked: Option<String>,
    pub promoted_from: Option<String>,
    pub files: Vec<ReleaseFile>,
}

impl Release {
    /// The earliest upload time of its files (RFC 3339 sorts as text).
    pub fn published(&self) -> Option<&str> {
        self.files.iter().map(|f| f.upload_time.as_str()).min()
    }
}

/// A release record; `None` when it has no string `version`. Files
/// without a name are left out.
pub fn release_record(value: &Value) -> Option<Release> {
    let version = value.get("version")?.as_str()?.to_string();
    let string = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let pins = value
        .get("pins")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let files = value
        .get("files")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|f| {
            Some(ReleaseFile {
                filename: string(f, "filename")?,
                project: string(f, "project").unwrap_or_default(),
                sha256: string(f, "sha256").unwrap_or_default(),
                size: f.get("size").and_then(Value::as_u64).unwrap_or(0),
                upload_time: string(f, "upload_time").unwrap_or_default(),
            })
        })
        .collect();
    Some(Release {
        version,
        tag: string(value, "tag"),
        channel: string(value, "channel"),
        source: string(value, "source"),
        pins,
        yanked: string(value, "yanked"),
        promoted_from: string(value, "promoted_from"),
        files,
    })
}

/// Releases newest first (by their earliest upload, then version).
pub fn release_list(mut releases: Vec<Release>) -> Vec<Release> {
    releases.sort_by(|a, b| {
        b.published()
            .cmp(&a.published())
            .then_with(|| b.version.cmp(&a.version))
    });
    releases
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Machine, Source};
    use proptest::prelude::*;
    use serde_json::json;

    fn run(n: usize, kind: Kind, commit: &str, results: Value) -> RunRecord {
        RunRecord {
            schema: 1,
            id: format!("run-{n:04}"),
            kind,
            started: format!("2026-01-01T00:{:02}:{:02}Z", n / 60, n % 60),
            finished: String::new(),
            source: Source {
                commit: Some(commit.to_string()),
                branch: None,
                dirty: false,
            },
            pins: BTreeMap::new(),
            toolchain: Some("tc".into()),
            machine: Machine::default(),
            results,
        }
    }

    fn tests_doc(outcomes: &[(&str, &str)]) -> Value {
        let tests: Vec<Value> = outcomes
            .iter()
            .map(|(id, o)| json!({"id": format!("{id} [cpu]"), "case": id, "group": "cpu", "outcome": o}))
            .collect();
        json!({"schema": 1, "tests": tests})
    }

    fn bench_doc(kernels: &[(&str, f64)]) -> Value {
        let rows: Vec<Value> = kernels
            .iter()
            .map(|(k, t)| {
                let times: Vec<f64> = (0..9).map(|i| t * (1.0 + 0.002 * f64::from(i))).collect();
                json!({"arguments": k, "func_name": "f", "status": "ok", "gflops": 1.0,
                       "stats": {"times_us": times}})
            })
            .collect();
        json!({"schema": 1, "rows": rows})
    }

    #[test]
    fn a_test_that_passed_and_failed_on_one_commit_is_flaky() {
        let runs = vec![
            run(
                0,
                Kind::Test,
                "c1",
                tests_doc(&[("s/a", "pass"), ("s/b", "pass")]),
            ),
            run(
                1,
                Kind::Test,
                "c1",
                tests_doc(&[("s/a", "fail"), ("s/b", "pass")]),
            ),
            run(
                2,
                Kind::Test,
                "c1",
                tests_doc(&[("s/a", "pass"), ("s/b", "skip")]),
            ),
            // Failing on another commit is a change, not flakiness.
            run(
                3,
                Kind::Test,
                "c2",
                tests_doc(&[("s/a", "pass"), ("s/b", "fail")]),
            ),
        ];
        let flaky = flaky_tests(&runs);
        assert_eq!(
            flaky,
            vec![FlakyTest {
                test: "s/a [cpu]".into(),
                commit: "c1".into(),
                toolchain: Some("tc".into()),
                passes: 2,
                failures: 1
            }]
        );
        // Another toolchain on the same commit is another build.
        let mut other = runs.clone();
        other[1].toolchain = Some("tc2".into());
        assert!(flaky_tests(&other).is_empty());
        // A dirty tree is not the commit's source.
        other[1].toolchain = Some("tc".into());
        other[1].source.dirty = true;
        assert!(flaky_tests(&other).is_empty());

        let outcomes = test_outcomes(&runs);
        assert_eq!(outcomes.len(), 8);
        assert_eq!(outcomes[2].run, 1);
        assert_eq!(outcomes[2].row.outcome, Outcome::Fail);
    }

    #[test]
    fn heatmap_keeps_the_last_commits_and_the_tests_that_went_wrong() {
        let runs = vec![
            run(
                0,
                Kind::Test,
                "c0",
                tests_doc(&[("s/a", "fail"), ("s/b", "pass")]),
            ),
            run(
                1,
                Kind::Test,
                "c1",
                tests_doc(&[("s/a", "pass"), ("s/b", "pass")]),
            ),
            run(2, Kind::Bench, "c1", bench_doc(&[("k", 10.0)])),
            run(
                3,
                Kind::Test,
                "c2",
                tests_doc(&[("s/a", "pass"), ("s/b", "fail"), ("s/c", "pass")]),
            ),
            run(
                4,
                Kind::Test,
                "c2",
                tests_doc(&[("s/a", "fail"), ("s/b", "fail"), ("s/c", "pass")]),
            ),
        ];
        let map = test_heatmap(&runs, 2, 10);
        assert_eq!(map.older_commits, 1);
        let commits: Vec<_> = map
            .columns
            .iter()
            .map(|c| c.commit.clone().unwrap())
            .collect();
        assert_eq!(commits, vec!["c1", "c2"]);
        assert_eq!(map.columns[1].runs, vec![3, 4]);
        assert_eq!(map.green_tests, 1);
        let states: Vec<(String, Vec<Option<CellState>>)> = map
            .rows
            .iter()
            .map(|r| {
                (
                    r.test.clone(),
                    r.cells.iter().map(|c| c.map(|c| c.state)).collect(),
                )
            })
            .collect();
        assert_eq!(
            states,
            vec![
                (
                    "s/a [cpu]".into(),
                    vec![Some(CellState::Pass), Some(CellState::Flaky)]
                ),
                (
                    "s/b [cpu]".into(),
                    vec![Some(CellState::Pass), Some(CellState::Fail)]
                ),
            ]
        );
        let capped = test_heatmap(&runs, 60, 1);
        assert_eq!((capped.rows.len(), capped.hidden_rows), (1, 1));

        let latest = latest_by_suite_target(&runs);
        assert_eq!(latest.len(), 1);
        assert_eq!(
            (
                latest[0].suite.as_str(),
                latest[0].target.as_str(),
                latest[0].run
            ),
            ("s", "cpu", 4)
        );
        assert_eq!((latest[0].counts.pass, latest[0].counts.failures()), (1, 2));
    }

    #[test]
    fn a_slowdown_is_one_regression_on_its_kernel_only() {
        // Enough kernels in each run to see the noise between runs.
        let others = ["conv b", "conv c", "conv d", "conv e", "conv f"];
        let mut runs = Vec::new();
        let mut two_kernels = Vec::new();
        for n in 0..8 {
            let slow = if n >= 5 { 1.15 } else { 1.0 };
            let mut kernels = vec![("conv a", 100.0 * slow)];
            kernels.extend(others.iter().map(|k| (*k, 50.0)));
            runs.push(run(n, Kind::Bench, &format!("c{n}"), bench_doc(&kernels)));
            two_kernels.push(run(
                n,
                Kind::Bench,
                &format!("c{n}"),
                bench_doc(&kernels[..2]),
            ));
        }
        // Two kernels a run: nothing shows the noise between runs, so the
        // slowdown is a ratio without a verdict, as in `bench compare`.
        let unknown = bench_series(&two_kernels, &Rule::default(), 6);
        assert_eq!(unknown[0].points[3].verdict(), Some(Change::NotEnoughRuns));
        assert_eq!(unknown[0].regressions(), 0);
        let series = bench_series(&runs, &Rule::default(), 6);
        assert_eq!(series.len(), 6);
        let a = &series[0];
        assert_eq!(a.kernel, "conv a");
        assert_eq!((a.points.len(), a.total_points), (6, 8));
        // The first kept point is compared with the point before it.
        assert!(a.points[0].comparison.is_some());
        let verdicts: Vec<_> = a.points.iter().map(|p| p.verdict().unwrap()).collect();
        assert_eq!(verdicts[3], Change::Regression);
        assert_eq!(a.regressions(), 1);
        assert!(series[1..].iter().all(|s| s.regressions() == 0));
        assert_eq!(a.points[5].samples, 9);
        assert!((a.points[5].median_us.unwrap() - 115.0 * 1.008).abs() < 1e-6);
    }

    /// Two bench runs whose kernels each moved up to ±25% (the drift of a
    /// busy machine) mark no regression, except the kernel 3x slower.
    #[test]
    fn drift_between_runs_is_noise_and_a_real_slowdown_still_shows() {
        let kernels: Vec<String> = (0..12).map(|i| format!("conv k{i}")).collect();
        let doc = |level: &dyn Fn(usize) -> f64| {
            let rows: Vec<(&str, f64)> = kernels
                .iter()
                .enumerate()
                .map(|(i, k)| (k.as_str(), 100.0 * level(i)))
                .collect();
            bench_doc(&rows)
        };
        let drift = |i: usize| 1.0 + 0.25 * (((i * 5) % 11) as f64 / 5.0 - 1.0);
        let runs = vec![
            run(0, Kind::Bench, "c0", doc(&|_| 1.0)),
            run(
                1,
                Kind::Bench,
                "c1",
                doc(&|i| if i == 11 { 3.0 } else { drift(i) }),
            ),
        ];
        let series = bench_series(&runs, &Rule::default(), 6);
        let regressed: Vec<&str> = series
            .iter()
            .filter(|s| s.regressions() > 0)
            .map(|s| s.kernel.as_str())
            .collect();
        assert_eq!(regressed, ["conv k11"]);
    }

    #[test]
    fn golden_series_put_the_tests_nearest_their_golden_first() {
        let doc = |t: f64| {
            json!({"tests": [
                {"id": "a", "outcome": "pass", "steps": [{"kind": "benchmark", "status": "passed", "metrics": {"time_ms": t, "golden_time_ms": 10.0}}]},
                {"id": "b", "outcome": "pass", "steps": [{"kind": "benchmark", "status": "passed", "metrics": {"time_ms": 9.0, "golden_time_ms": 10.0}}]},
                {"id": "c", "outcome": "pass", "steps": [{"kind": "benchmark", "status": "passed", "metrics": {"time_ms": 9.0, "golden_time_ms": null}}]}
            ]})
        };
        let runs: Vec<_> = (0..4)
            .map(|n| run(n, Kind::Test, "c", doc(5.0 + n as f64)))
            .collect();
        let (series, hidden) = golden_series(&runs, 3, 2);
        assert_eq!(hidden, 1);
        assert_eq!(series[0].test, "b");
        assert_eq!(series[1].test, "a");
        assert_eq!(series[1].points.len(), 3);
        assert_eq!(series[1].total_points, 4);
        assert_eq!(series[1].points[2].time_ms, 8.0);
    }

    #[test]
    fn integrate_timeline_and_releases() {
        let runs = vec![
            run(
                0,
                Kind::Integrate,
                "c",
                json!({"end": {"result": "at_head"}, "advances": ["x"], "smoke_runs": 2}),
            ),
            run(1, Kind::Integrate, "c", json!({"not": "a loop"})),
        ];
        let timeline = integrate_timeline(&runs);
        assert_eq!(timeline.len(), 1);
        assert_eq!(timeline[0].what.advances, vec!["x"]);

        let r1 = release_record(&json!({"version": "1.0rc1", "pins": {"llvm": "abc", "bad": 1},
            "files": [{"filename": "a.whl", "project": "a", "upload_time": "2026-01-02T00:00:00Z"}, {"size": 1}]}))
        .unwrap();
        assert_eq!(r1.pins.len(), 1);
        assert_eq!(r1.files.len(), 1);
        let r0 = release_record(&json!({"version": "0.9", "files": [{"filename": "a.whl", "upload_time": "2026-01-01T00:00:00Z"}]})).unwrap();
        let list = release_list(vec![r0, r1]);
        assert_eq!(list[0].version, "1.0rc1");
        assert!(release_record(&json!({"files": []})).is_none());
    }

    fn any_results() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<f64>().prop_map(|f| json!(f)),
            (0u64..100).prop_map(|i| json!(i)),
            prop_oneof![
                Just("pass".to_string()),
                Just("fail".to_string()),
                Just("benchmark".to_string()),
                Just("ok".to_string()),
                ".{0,6}"
            ]
            .prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 64, 6, |inner| {
            let keys = prop_oneof![
                Just("tests".to_string()),
                Just("rows".to_string()),
                Just("id".to_string()),
                Just("case".to_string()),
                Just("group".to_string()),
                Just("outcome".to_string()),
                Just("steps".to_string()),
                Just("kind".to_string()),
                Just("metrics".to_string()),
                Just("time_ms".to_string()),
                Just("golden_time_ms".to_string()),
                Just("stats".to_string()),
                Just("times_us".to_string()),
                Just("arguments".to_string()),
                Just("gflops".to_string()),
                Just("end".to_string()),
                Just("result".to_string()),
                Just("halt".to_string()),
                Just("version".to_string()),
                Just("files".to_string()),
                Just("pins".to_string()),
                "[a-z]{1,5}",
            ];
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..8).prop_map(Value::Array),
                prop::collection::vec((keys, inner), 0..8)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    fn any_kind() -> impl Strategy<Value = Kind> {
        prop_oneof![Just(Kind::Test), Just(Kind::Bench), Just(Kind::Integrate)]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn nothing_panics_on_arbitrary_results(
            docs in prop::collection::vec((any_kind(), 0usize..3, any::<bool>(), any_results()), 0..6)
        ) {
            let runs: Vec<RunRecord> = docs
                .into_iter()
                .enumerate()
                .map(|(n, (kind, commit, dirty, results))| {
                    let mut r = run(n, kind, &format!("c{commit}"), results);
                    r.source.dirty = dirty;
                    if commit == 2 { r.source.commit = None; }
                    r
                })
                .collect();
            let _ = test_outcomes(&runs);
            let _ = flaky_tests(&runs);
            let _ = latest_by_suite_target(&runs);
            let _ = test_heatmap(&runs, 2, 2);
            let _ = test_heatmap(&runs, 0, 0);
            let _ = golden_series(&runs, 2, 1);
            let _ = bench_series(&runs, &Rule { resamples: 100, ..Rule::default() }, 2);
            let _ = integrate_timeline(&runs);
            for r in &runs {
                let _ = release_record(&r.results);
            }
        }
    }
}
