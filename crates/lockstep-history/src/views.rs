//! What the history's readers (bench compare, the report site) take out of
//! a run's results document: kernels and their timing samples, tests and
//! their outcomes, what an integrate loop did. One reading of each document
//! kind, so `bench compare` and the site never disagree on what a run
//! measured. Readers are forgiving: a key that is missing or of the wrong
//! type leaves its field empty, never a panic (the history holds files
//! from other lockstep versions and other machines).

use serde_json::Value;

/// One kernel of a bench run: its name (MIOpenDriver's arguments, which
/// identify the problem) and every timing sample in microseconds.
#[derive(Debug, Clone, PartialEq)]
pub struct KernelSamples {
    /// The row's `arguments` (e.g. `conv -n 1 -c 4 ...`): the same problem
    /// in two runs has the same arguments. When one command line timed
    /// several kernels, each is `ARGS (FUNC)` ([`bench_kernels`]).
    pub name: String,
    /// The IREE function name, when the row has one.
    pub func_name: Option<String>,
    /// Every sample (`stats.times_us`); empty when the row was not timed
    /// or failed.
    pub times_us: Vec<f64>,
    pub gflops: Option<f64>,
    /// The row's `status` (`ok`, `failed` ...).
    pub status: String,
}

/// The kernels of a bench-results document (`lockstep bench --json`), in
/// row order. Rows without arguments are left out; a document that is not
/// a bench result gives none. One command line can time several kernels
/// (`-F 6`: backward data and backward weights, two rows with the same
/// arguments): those are told apart by their function name, `ARGS
/// (FUNC)` (or `ARGS (#N)` without one), the same in every run, so two
/// kernels are never taken for two timings of one.
pub fn bench_kernels(results: &Value) -> Vec<KernelSamples> {
    let mut kernels = read_bench_rows(results);
    // Almost every document has no repeated command line: nothing is
    // allocated then.
    let mut count: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
    for k in &kernels {
        *count.entry(k.name.as_str()).or_default() += 1;
    }
    let repeated: std::collections::HashSet<String> = count
        .into_iter()
        .filter(|(_, n)| *n > 1)
        .map(|(name, _)| name.to_string())
        .collect();
    if repeated.is_empty() {
        return kernels;
    }
    let mut seen: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for k in kernels.iter_mut().filter(|k| repeated.contains(&k.name)) {
        let n = seen.entry(k.name.clone()).or_default();
        *n += 1;
        k.name = match k.func_name.as_deref().filter(|f| !f.is_empty()) {
            Some(func) => format!("{} ({func})", k.name),
            None => format!("{} (#{n})", k.name),
        };
    }
    kernels
}

fn read_bench_rows(results: &Value) -> Vec<KernelSamples> {
    let Some(rows) = results.get("rows").and_then(Value::as_array) else {
        return Vec::new();
    };
    rows.iter()
        .filter_map(|row| {
            let name = row.get("arguments")?.as_str()?.trim().to_string();
            if name.is_empty() {
                return None;
            }
            let times_us = row
                .get("stats")
                .and_then(|s| s.get("times_us"))
                .and_then(Value::as_array)
                .map(|t| {
                    t.iter()
                        .filter_map(Value::as_f64)
                        .filter(|x| x.is_finite())
                        .collect()
                })
                .unwrap_or_default();
            Some(KernelSamples {
                name,
                func_name: row
                    .get("func_name")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                times_us,
                gflops: row.get("gflops").and_then(Value::as_f64),
                status: row
                    .get("status")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown")
                    .to_string(),
            })
        })
        .collect()
}

/// A test's verdict in a test-results document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Outcome {
    Pass,
    Fail,
    /// Failed as expected.
    Xfail,
    /// Passed although a failure was expected (counts as a failure).
    Xpass,
    Skip,
    /// An outcome this reader does not know (a newer lockstep's).
    Unknown,
}

impl Outcome {
    /// The outcome named `name` in a document (`pass`, `fail` ...).
    pub fn parse(name: &str) -> Outcome {
        match name {
            "pass" => Outcome::Pass,
            "fail" => Outcome::Fail,
            "xfail" => Outcome::Xfail,
            "xpass" => Outcome::Xpass,
            "skip" => Outcome::Skip,
            _ => Outcome::Unknown,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::Xfail => "xfail",
            Outcome::Xpass => "xpass",
            Outcome::Skip => "skip",
            Outcome::Unknown => "unknown",
        }
    }

    /// The run fails because of it (`fail`, `xpass`), as `lockstep test`
    /// decides its exit status.
    pub fn is_failure(self) -> bool {
        matches!(self, Outcome::Fail | Outcome::Xpass)
    }
}

/// A test's benchmark step: the measured time next to its golden.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BenchmarkStep {
    /// Median time of one call (ms); `None` when not measured.
    pub time_ms: Option<f64>,
    /// The golden time (ms); `None` without a golden.
    pub golden_time_ms: Option<f64>,
    /// The step's status was `passed`.
    pub passed: bool,
}

/// One test of a test-results document, borrowed from it.
#[derive(Debug, Clone, PartialEq)]
pub struct TestRow<'a> {
    /// `<case> [<group>]`: the same test in two runs has the same id.
    pub id: &'a str,
    pub case: &'a str,
    /// The case's first path component (the suite of a native suite);
    /// empty when the case has none.
    pub suite: &'a str,
    /// The case after its suite.
    pub test: &'a str,
    /// The group: the target (native suites) or config (iree-test-suites).
    pub target: &'a str,
    pub outcome: Outcome,
    /// Its benchmark step, when it has one that reported metrics.
    pub benchmark: Option<BenchmarkStep>,
}

/// The tests of a test-results document (`lockstep test --json`), in
/// report order. Rows without a string `id` are left out; a document that
/// is not a test result gives none.
pub fn test_rows(results: &Value) -> Vec<TestRow<'_>> {
    let Some(tests) = results.get("tests").and_then(Value::as_array) else {
        return Vec::new();
    };
    tests.iter().filter_map(test_row).collect()
}

/// The keys of a test row [`test_row`] reads, and `seconds`, which
/// [`crate::durations`] reads (the history's loader keeps only these:
/// crate::trimmed).
pub(crate) const TEST_KEYS: &[&str] = &["id", "case", "group", "outcome", "seconds", "steps"];
/// The keys of a test row's step it reads.
pub(crate) const STEP_KEYS: &[&str] = &["kind", "status", "metrics"];
/// The keys of a step's metrics it reads.
pub(crate) const METRIC_KEYS: &[&str] = &["time_ms", "golden_time_ms"];

/// One row: its keys read in one pass over the object (a history holds
/// millions of rows; a lookup per key would hash every key name).
fn test_row(row: &Value) -> Option<TestRow<'_>> {
    let (mut id, mut case, mut target, mut outcome, mut steps) = (None, None, "", "", None);
    for (key, value) in row.as_object()? {
        match key.as_str() {
            "id" => id = value.as_str(),
            "case" => case = value.as_str(),
            "group" => target = value.as_str().unwrap_or(""),
            "outcome" => outcome = value.as_str().unwrap_or(""),
            "steps" => steps = value.as_array().filter(|s| !s.is_empty()),
            _ => {}
        }
    }
    let id = id?;
    let case = case.unwrap_or(id);
    let (suite, test) = case.split_once('/').unwrap_or(("", case));
    let benchmark = steps
        .into_iter()
        .flatten()
        .find(|s| s.get("kind").and_then(Value::as_str) == Some("benchmark"))
        .and_then(|step| {
            let metrics = step.get("metrics")?.as_object()?;
            let number = |k: &str| {
                metrics
                    .get(k)
                    .and_then(Value::as_f64)
                    .filter(|x| x.is_finite())
            };
            Some(BenchmarkStep {
                time_ms: number("time_ms"),
                golden_time_ms: number("golden_time_ms"),
                passed: step.get("status").and_then(Value::as_str) == Some("passed"),
            })
        });
    Some(TestRow {
        id,
        case,
        suite,
        test,
        target,
        outcome: Outcome::parse(outcome),
        benchmark,
    })
}

/// A commit as `git log` describes it (integrate documents).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CommitInfo {
    pub sha: String,
    pub subject: String,
    pub author: String,
    pub date: String,
}

/// Where and why an integrate loop halted.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Halt {
    /// `smoke` or `conflict`.
    pub kind: String,
    /// The first bad upstream commit.
    pub culprit: Option<CommitInfo>,
    pub last_good: Option<CommitInfo>,
    /// The current pin itself fails the smoke.
    pub at_pin: bool,
    /// How the smoke ended (`exit status 1`).
    pub exit: Option<String>,
    /// The carried patch that does not apply (a conflict): its commit and
    /// subject.
    pub conflict: Option<(String, String)>,
    /// Upstream commits between the last good one and the culprit that do
    /// not touch the tracked paths.
    pub untracked_total: u64,
    /// The culprit's web page (`[integrate] commit-url`).
    pub link: Option<String>,
    pub report_path: Option<String>,
}

/// An integrate-loop document (`lockstep integrate loop --json`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IntegrateLoop {
    /// How it ended: `at_head`, `steps_exhausted`, `halted`, `plan`, or a
    /// newer lockstep's word.
    pub result: String,
    /// Superproject commits made, one per advance.
    pub advances: Vec<String>,
    /// Smoke processes started.
    pub smoke_runs: u64,
    /// Verdicts taken from the store instead of a smoke.
    pub cached: u64,
    /// Candidate commits the searches considered.
    pub candidates: Option<u64>,
    pub halt: Option<Halt>,
    /// Upstream commits whose revert the loop carries.
    pub reverted: Vec<CommitInfo>,
    /// Affecting commits still pending (`steps_exhausted`).
    pub pending: Vec<CommitInfo>,
    /// The pull request published (`--publish`): number and page.
    pub pull: Option<(u64, Option<String>)>,
    /// Followers moved: name, from, to.
    pub bumped: Vec<(String, String, String)>,
}

fn commit_info(value: &Value) -> Option<CommitInfo> {
    let text = |k: &str| {
        value
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    value.as_object()?;
    Some(CommitInfo {
        sha: text("sha"),
        subject: text("subject"),
        author: text("author"),
        date: text("date"),
    })
}

fn commit_list(value: Option<&Value>) -> Vec<CommitInfo> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(commit_info)
        .collect()
}

/// What an integrate-loop document says; `None` for a document without
/// `end.result` (not an integrate loop).
pub fn integrate_loop(results: &Value) -> Option<IntegrateLoop> {
    let end = results.get("end")?;
    let result = end.get("result")?.as_str()?.to_string();
    let count = |k: &str| results.get(k).and_then(Value::as_u64);
    let string = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let halt = end.get("halt").filter(|h| h.is_object()).map(|h| Halt {
        kind: string(h, "kind").unwrap_or_default(),
        culprit: h.get("culprit").and_then(commit_info),
        last_good: h.get("last_good").and_then(commit_info),
        at_pin: h.get("at_pin").and_then(Value::as_bool).unwrap_or(false),
        exit: string(h, "exit"),
        conflict: h.get("conflict").filter(|c| c.is_object()).map(|c| {
            (
                string(c, "patch").unwrap_or_default(),
                string(c, "subject").unwrap_or_default(),
            )
        }),
        untracked_total: h
            .get("untracked_total")
            .and_then(Value::as_u64)
            .unwrap_or(0),
        link: string(h, "link"),
        report_path: string(h, "report_path"),
    });
    let pull = results
        .get("published")
        .and_then(|p| p.get("pull"))
        .and_then(|p| Some((p.get("number")?.as_u64()?, string(p, "html_url"))));
    let bumped = results
        .get("bumped")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|b| Some((string(b, "name")?, string(b, "from")?, string(b, "to")?)))
        .collect();
    Some(IntegrateLoop {
        result,
        advances: results
            .get("advances")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(str::to_string))
            .collect(),
        smoke_runs: count("smoke_runs").unwrap_or(0),
        cached: count("cached").unwrap_or(0),
        candidates: count("candidates"),
        halt,
        reverted: commit_list(results.get("reverted")),
        pending: commit_list(end.get("pending")),
        pull,
        bumped,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    #[test]
    fn test_rows_read_suite_target_outcome_and_golden() {
        let doc = json!({"schema": 1, "tests": [
            {"id": "smoke/matmul [cpu]", "case": "smoke/matmul", "group": "cpu",
             "outcome": "fail", "reason": "mismatch", "seconds": 1.5, "markers": [],
             "steps": [{"kind": "compile", "status": "passed", "metrics": null},
                       {"kind": "benchmark", "status": "failed",
                        "metrics": {"time_ms": 2.5, "golden_time_ms": 2.0}}]},
            {"id": "plain [x]", "outcome": "weird", "seconds": null},
            {"case": "no id"}
        ]});
        let rows = test_rows(&doc);
        assert_eq!(rows.len(), 2);
        assert_eq!(
            (rows[0].suite, rows[0].test, rows[0].target),
            ("smoke", "matmul", "cpu")
        );
        assert_eq!(rows[0].outcome, Outcome::Fail);
        assert!(rows[0].outcome.is_failure());
        assert_eq!(
            rows[0].benchmark,
            Some(BenchmarkStep {
                time_ms: Some(2.5),
                golden_time_ms: Some(2.0),
                passed: false
            })
        );
        assert_eq!((rows[1].suite, rows[1].test), ("", "plain [x]"));
        assert_eq!(rows[1].outcome, Outcome::Unknown);
    }

    #[test]
    fn kernels_sharing_a_command_line_are_told_apart_by_function() {
        let doc = json!({"rows": [
            {"arguments": "conv -F 6", "func_name": "bwd_data", "status": "ok", "stats": {"times_us": [1.0]}},
            {"arguments": "conv -F 6", "func_name": "bwd_weights", "status": "ok", "stats": {"times_us": [9.0]}},
            {"arguments": "conv -F 1", "func_name": "fwd", "status": "ok", "stats": {"times_us": [2.0]}},
            {"arguments": "gemm", "status": "ok"},
            {"arguments": "gemm", "status": "ok"}
        ]});
        let names: Vec<String> = bench_kernels(&doc).into_iter().map(|k| k.name).collect();
        assert_eq!(
            names,
            [
                "conv -F 6 (bwd_data)",
                "conv -F 6 (bwd_weights)",
                "conv -F 1",
                "gemm (#1)",
                "gemm (#2)"
            ]
        );
    }

    #[test]
    fn integrate_loop_reads_a_halt_and_reverts() {
        let doc = json!({"schema": 1, "smoke_runs": 4, "cached": 1, "advances": ["a", "b"],
            "reverted": [{"sha": "r1", "subject": "bad", "author": "x", "date": "d"}],
            "published": {"pull": {"number": 7, "html_url": "https://e/7"}},
            "end": {"result": "halted", "halt": {"kind": "conflict",
                "culprit": {"sha": "c", "subject": "s", "author": "a", "date": "d"},
                "conflict": {"patch": "p", "subject": "carried", "files": []},
                "at_pin": false, "untracked_total": 3}}});
        let l = integrate_loop(&doc).unwrap();
        assert_eq!(l.result, "halted");
        assert_eq!(l.advances, vec!["a", "b"]);
        assert_eq!((l.smoke_runs, l.cached), (4, 1));
        assert_eq!(l.reverted[0].subject, "bad");
        assert_eq!(l.pull, Some((7, Some("https://e/7".into()))));
        let halt = l.halt.unwrap();
        assert_eq!(halt.conflict, Some(("p".into(), "carried".into())));
        assert_eq!(halt.culprit.unwrap().sha, "c");
        assert_eq!(halt.untracked_total, 3);
        assert!(integrate_loop(&json!({"rows": []})).is_none());
    }

    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<f64>().prop_map(|f| json!(f)),
            any::<i64>().prop_map(|i| json!(i)),
            prop_oneof![
                Just("pass".to_string()),
                Just("fail".to_string()),
                Just("benchmark".to_string()),
                ".{0,8}"
            ]
            .prop_map(Value::String),
        ];
        leaf.prop_recursive(4, 48, 6, |inner| {
            let keys = prop_oneof![
                Just("tests".to_string()),
                Just("rows".to_string()),
                Just("id".to_string()),
                Just("case".to_string()),
                Just("outcome".to_string()),
                Just("steps".to_string()),
                Just("kind".to_string()),
                Just("metrics".to_string()),
                Just("time_ms".to_string()),
                Just("stats".to_string()),
                Just("times_us".to_string()),
                Just("arguments".to_string()),
                Just("end".to_string()),
                Just("result".to_string()),
                Just("halt".to_string()),
                Just("advances".to_string()),
                Just("culprit".to_string()),
                "[a-z]{1,6}",
            ];
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((keys, inner), 0..6)
                    .prop_map(|kv| Value::Object(kv.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #[test]
        fn readers_never_panic(doc in any_json()) {
            let _ = test_rows(&doc);
            let _ = bench_kernels(&doc);
            let _ = integrate_loop(&doc);
        }
    }
}
