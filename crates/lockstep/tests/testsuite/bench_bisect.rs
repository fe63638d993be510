//! `lockstep bench bisect` with real components: a git repository of a
//! Python package whose console scripts `iree-compile`, `iree-run-module`
//! and `iree-benchmark-module` exec the real (provisioned) IREE tools, built
//! per commit with real uv and setuptools, and from one commit on reporting
//! every benchmark time 3x slower (a planted slowdown, deterministic in
//! size: a build at -O0 measured 1.2x to 1.6x depending on the machine and
//! its load); the bisection finds that commit, a range without a slowdown
//! is refused, and bad inputs are usage errors before anything is built.

use std::path::Path;

use crate::common::*;

/// The convolution timed: reported 3x slower with the knob on.
const KERNEL: &str = "conv -n 1 -c 16 -H 32 -W 32 -k 16 -y 3 -x 3 -p 1 -q 1 -F 1 -t 1";

const CONFIG: &str = r#"[pkg]
python = ["3.11"]

[[pkg.package]]
name = "fake-iree"
source = "tools"
"#;

/// The wrappers: exec the real tool in `real`; with `slow`,
/// iree-benchmark-module reports every time [`PLANTED_SLOWDOWN`] times
/// slower.
fn wrapper(real: &Path, slow: bool) -> String {
    let real = real.to_str().expect("utf-8 path");
    let factor = if slow { PLANTED_SLOWDOWN } else { 1.0 };
    format!(
        r#""""IREE tools that exec the real ones (lockstep's bench bisect fixture)."""

import os
import sys

REAL = {real:?}
{SCALED_BENCHMARK_PY}

def _exec(name, args):
    path = os.path.join(REAL, name)
    os.execv(path, [path, *args])


def compile():
    _exec("iree-compile", sys.argv[1:])


def run_module():
    _exec("iree-run-module", sys.argv[1:])


def benchmark_module_script():
    benchmark_module(os.path.realpath(os.path.join(REAL, "iree-benchmark-module")), {factor:?})
"#
    )
}

const PYPROJECT: &str = r#"[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "fake-iree"
version = "1.0.0"

[project.scripts]
iree-compile = "fake_iree:compile"
iree-run-module = "fake_iree:run_module"
iree-benchmark-module = "fake_iree:benchmark_module_script"
"#;

fn commit(p: &Project, message: &str) -> String {
    commit_as_tester(&p.path(), message, true)
}

/// The fixture: commits c1..c7, the knob on from c5. Returns (project, [c1..c7]).
fn fixture() -> (Project, Vec<String>) {
    let p = Project::new();
    let real = iree_bin();
    p.write("lockstep.toml", CONFIG);
    p.write(".gitignore", "wheelhouse/\n");
    p.write("tools/pyproject.toml", PYPROJECT);
    p.write("tools/src/fake_iree/__init__.py", &wrapper(real, false));
    git(&p.path(), &["init", "-q", "-b", "main"]);
    let mut commits = vec![commit(&p, "c1: the tools")];
    for n in 2..=7 {
        if n == 5 {
            p.write("tools/src/fake_iree/__init__.py", &wrapper(real, true));
        } else {
            p.write(&format!("tools/src/fake_iree/note{n}.py"), "X = 1\n");
        }
        commits.push(commit(&p, &format!("c{n}")));
    }
    (p, commits)
}

fn built_wheels(p: &Project) -> usize {
    walk(&p.cache())
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "whl"))
        .count()
}

// A single-threaded runtime and a 25% band: on a loaded 2-core machine
// unchanged commits measured up to ~1.1-1.4x GOOD at 5% (the within-run
// bootstrap does not see run-to-run drift); the knob is a planted 3x.
#[test]
fn bench_bisect_finds_the_slower_commit_refuses_no_regression_and_checks_inputs() {
    let (p, c) = fixture();
    let bisect = |good: &str, bad: &str, extra: &[&str], code: i32| {
        let mut args = vec![
            "bench",
            "bisect",
            "--good",
            good,
            "--bad",
            bad,
            "--threads",
            "1",
            "--threshold",
            "25%",
        ];
        args.extend_from_slice(extra);
        args.extend_from_slice(&["--", KERNEL]);
        p.run(&args, code)
    };

    // Bad inputs: usage errors, nothing built.
    let out = bisect("no-such-rev", "HEAD", &[], 2);
    assert!(stderr(&out).contains("no-such-rev"), "{}", stderr(&out));
    let out = bisect("HEAD", &c[0], &[], 2);
    assert!(stderr(&out).contains("not an ancestor"), "{}", stderr(&out));
    let out = bisect(&c[0], "HEAD", &["--max-repeats", "0"], 2);
    assert!(stderr(&out).contains("--max-repeats 0"), "{}", stderr(&out));
    let out = p.run(
        &[
            "bench",
            "bisect",
            "--good",
            &c[0],
            "--bad",
            "HEAD",
            "--",
            "conv -Z 3",
        ],
        2,
    );
    assert!(stderr(&out).contains("invalid kernel"), "{}", stderr(&out));
    assert_eq!(built_wheels(&p), 0, "a usage error built packages");

    // The bisection: c5 flipped the knob.
    let out = bisect(&c[0], "HEAD", &["--json"], 0);
    let report: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    // On a busy machine a commit may stay undecided and be skipped (its
    // interval never settles): the answer is then a set of candidates
    // holding c5, never another commit; every verdict given is right.
    let steps = report["steps"].as_array().expect("steps");
    let skipped = steps.iter().any(|s| s["verdict"] == "skip");
    if skipped {
        let candidates = report["candidates"].as_array().expect("candidates");
        assert!(
            candidates.iter().any(|x| x.as_str() == Some(c[4].as_str())),
            "{report}"
        );
    } else {
        assert_eq!(
            report["first_bad"].as_str(),
            Some(c[4].as_str()),
            "{report}"
        );
    }
    let endpoint = &report["endpoint"];
    assert_eq!(endpoint["verdict"], "bad", "{report}");
    let ratio = endpoint["kernels"][0]["ratio"].as_f64().expect("ratio");
    assert!(ratio > 2.0, "BAD/GOOD ratio {ratio}: {report}");
    assert!(!steps.is_empty() && steps.len() <= 6, "{steps:?}");
    for step in steps {
        // A verdict takes two measurements at least (one pair taken in a
        // noisy moment never decides).
        assert!(step["measurements"].as_u64().expect("measurements") >= 2);
        assert!(step["kernels"][0]["interval"].is_array(), "{step}");
        let at = c
            .iter()
            .position(|x| x == step["commit"].as_str().unwrap_or(""));
        let at = at.expect("a commit of the range");
        let expected = if at >= 4 { "bad" } else { "good" };
        if step["verdict"] != "skip" {
            assert_eq!(step["verdict"], expected, "{step}");
        }
    }
    assert_schema("bench-bisect.json", &report);

    // Again: the verdicts in between come from the store.
    let out = bisect(&c[0], "HEAD", &["--json"], 0);
    let again: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(again["first_bad"], report["first_bad"]);
    assert!(again["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .all(|s| s["cached"] == true));

    // A range without a slowdown is refused, with the figures.
    let out = bisect(&c[4], &c[6], &["--max-repeats", "2"], 1);
    let err = stderr(&out);
    assert!(
        err.contains("no regression between GOOD") && err.contains("ratio"),
        "{err}"
    );
    // The working tree was never touched.
    assert!(is_clean(&p.path()));
}
