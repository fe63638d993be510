//! `[[test.pytest]]` suites in `lockstep test`, with the real pytest from
//! PyPI in a venv made from a wheelhouse manifest: outcomes read back from
//! pytest's JUnit (pass, fail, error, skip, xfail, strict and non-strict
//! XPASS, a module that fails to import) whose counts equal pytest's own
//! report of the same tests, selection across formats (`-k`, `-m`,
//! `--last-failed`, `--shard`), and the bad inputs (a path that does not
//! exist, an argument lockstep sets itself, no venv, pytest missing, a
//! pytest that dies before writing its report).

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

/// A wheel of the pure-Python package `calc` 1.0 (`add`, `VERSION`) in `dir`.
fn calc_wheel(dir: &Path) {
    std::fs::create_dir_all(dir).expect("create");
    let script = r#"
import sys, zipfile
d = sys.argv[1]
info = "calc-1.0.dist-info"
with zipfile.ZipFile(f"{d}/calc-1.0-py3-none-any.whl", "w") as z:
    z.writestr("calc/__init__.py", "VERSION = '1.0'\ndef add(a, b):\n    return a + b\n")
    z.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: calc\nVersion: 1.0\n\n")
    z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
    z.writestr(f"{info}/RECORD", "")
"#;
    expect(Command::new("python3").args(["-c", script]).arg(dir), 0);
}

const TESTS: &str = r#"import pytest

import calc


def test_add():
    assert calc.add(1, 2) == 3


def test_fail():
    assert calc.add(1, 2) == 4


@pytest.mark.skip(reason="not today")
def test_skip():
    pass


@pytest.mark.xfail(reason="known bug")
def test_xfail():
    assert False


@pytest.mark.xfail(reason="fixed upstream?", strict=True)
def test_xpass_strict():
    pass


@pytest.mark.xfail(reason="flaky")
def test_xpass_loose():
    pass


@pytest.mark.parametrize("a,b", [(1, 2), (3, 4)])
def test_param(a, b):
    assert calc.add(a, b) == a + b


@pytest.mark.slow
def test_slow():
    pass


class TestVersion:
    def test_version(self):
        assert calc.VERSION == "1.0"


@pytest.fixture
def broken():
    raise RuntimeError("setup broke")


def test_setup_error(broken):
    pass
"#;

/// A project with the `calc` wheelhouse (its manifest where `[pkg]`
/// puts it) and a `[[test.pytest]]` suite `unit` over `tests/`.
fn pytest_project(extra: &str) -> Project {
    let p = Project::new();
    p.write(
        "lockstep.toml",
        &format!("[[test.pytest]]\nname = \"unit\"\npaths = [\"tests\"]\n{extra}"),
    );
    calc_wheel(&p.path().join("wheelhouse"));
    p.run(&["pkg", "manifest", "wheelhouse"], 0);
    p.write("tests/test_calc.py", TESTS);
    p.write("tests/test_broken.py", "import not_a_module\n");
    p
}

/// The venvs lockstep made for pytest suites.
fn pytest_venvs(p: &Project) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(p.cache().join("pytest-venvs"))
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|e| e.is_dir())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// (pass, fail, skip, xfail) of a JUnit report's testcases: lockstep's (an
/// XFAIL is a success whose output says so) or pytest's (an XFAIL is a
/// `pytest.xfail` skip; an error is a failure).
fn counts(xml: &str) -> [usize; 4] {
    let mut c = [0; 4];
    for (_, cases) in junit_suites(xml) {
        for case in cases {
            let body = &case.body;
            let i = if body.contains("<failure") || body.contains("<error") {
                1
            } else if body.contains("type=\"pytest.xfail\"") || body.contains("XFAIL:") {
                3
            } else if body.contains("<skipped") {
                2
            } else {
                0
            };
            c[i] += 1;
        }
    }
    c
}

fn outcomes(p: &Project, json: &str) -> Vec<(String, String)> {
    let v = p.json(json);
    let mut out: Vec<(String, String)> = v["tests"]
        .as_array()
        .expect("tests")
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap_or_default().to_string(),
                t["outcome"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

#[test]
fn pytest_suites_run_against_the_wheelhouse_and_count_as_pytest_does() {
    let p = pytest_project("");
    let out = p.run(&["test", "--junit", "junit.xml", "--json", "r.json"], 1);
    let err = stderr(&out);
    let got = outcomes(&p, "r.json");
    let id = |nodeid: &str| format!("tests/test_calc.py::{nodeid} [unit]");
    let want: Vec<(String, String)> = {
        let mut w: Vec<(String, String)> = [
            (id("test_add"), "pass"),
            (id("test_fail"), "fail"),
            (id("test_skip"), "skip"),
            (id("test_xfail"), "xfail"),
            (id("test_xpass_strict"), "xpass"),
            (id("test_xpass_loose"), "pass"),
            (id("test_param[1-2]"), "pass"),
            (id("test_param[3-4]"), "pass"),
            (id("test_slow"), "pass"),
            (id("TestVersion::test_version"), "pass"),
            (id("test_setup_error"), "fail"),
            ("tests/test_broken.py [unit]".to_string(), "fail"),
        ]
        .into_iter()
        .map(|(a, b)| (a, b.to_string()))
        .collect();
        w.sort();
        w
    };
    assert_eq!(got, want, "{err}");
    let v = p.json("r.json");
    let test = |want: &str| {
        v["tests"]
            .as_array()
            .expect("tests")
            .iter()
            .find(|t| t["id"] == want)
            .cloned()
            .unwrap_or_else(|| panic!("no {want}"))
    };
    let fail = test(&id("test_fail"));
    assert_eq!(fail["steps"][0]["kind"], "pytest");
    assert!(
        fail["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("assert 3 == 4"),
        "{fail}"
    );
    assert!(
        fail["steps"][0]["command"]
            .as_str()
            .unwrap_or_default()
            .ends_with("-m pytest tests/test_calc.py::test_fail"),
        "{fail}"
    );
    let broken = test("tests/test_broken.py [unit]");
    assert!(
        broken["steps"][0]["output_tail"]
            .as_str()
            .unwrap_or_default()
            .contains("not_a_module"),
        "{broken}"
    );
    assert!(test(&id("test_xpass_loose"))["reason"]
        .as_str()
        .unwrap_or_default()
        .starts_with("XPASS"));
    assert_eq!(test(&id("test_skip"))["reason"], "pytest skip: not today");
    assert!(test(&id("test_slow"))["markers"]
        .as_array()
        .expect("markers")
        .contains(&serde_json::json!("slow")));

    // pytest's own report of the same tests, in the same venv: the same
    // pass, fail, skip and xfail counts as lockstep's JUnit.
    let venvs = pytest_venvs(&p);
    assert_eq!(venvs.len(), 1, "{venvs:?}");
    let own = p.path().join("own.xml");
    let status = Command::new(venvs[0].join("bin/python"))
        .args(["-m", "pytest", "-p", "no:cacheprovider"])
        .arg("--continue-on-collection-errors")
        .arg(format!("--junitxml={}", own.display()))
        .arg("tests")
        .current_dir(p.path())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run pytest");
    assert_eq!(status.status.code(), Some(1), "{}", stdout(&status));
    let theirs = counts(&std::fs::read_to_string(&own).expect("pytest's report"));
    let ours = counts(&p.read("junit.xml"));
    assert_eq!(ours, theirs, "lockstep {ours:?} vs pytest {theirs:?}");
    assert_eq!(theirs, [6, 4, 1, 1]);

    // pytest wrote nothing into the tree.
    assert!(!p.path().join(".pytest_cache").exists());
    assert!(!p.path().join("tests/__pycache__").exists());

    // Selection, as for every format.
    let listed = stdout(&p.run(&["test", "--list", "-k", "test_param"], 0));
    assert_eq!(listed.lines().count(), 2, "{listed}");
    let listed = stdout(&p.run(&["test", "--list", "-m", "slow"], 0));
    assert!(listed.starts_with(&id("test_slow")), "{listed}");
    p.run(&["test", "--last-failed", "--json", "again.json"], 1);
    let again: Vec<String> = outcomes(&p, "again.json")
        .into_iter()
        .map(|(i, _)| i)
        .collect();
    assert_eq!(
        again,
        [
            "tests/test_broken.py [unit]".to_string(),
            id("test_fail"),
            id("test_setup_error"),
            id("test_xpass_strict"),
        ]
    );
    let mut shards = Vec::new();
    for shard in ["1/2", "2/2"] {
        let listed = stdout(&p.run(&["test", "--list", "--shard", shard], 0));
        shards.extend(listed.lines().map(str::to_string));
    }
    shards.sort();
    let all: Vec<String> = want.iter().map(|(i, _)| i.clone()).collect();
    let mut all_listed: Vec<String> = shards
        .iter()
        .map(|l| l.split("  [").next().unwrap_or_default().to_string())
        .collect();
    all_listed.sort();
    assert_eq!(all_listed, all);

    // The venv is made once per manifest and requirements.
    p.run(&["test", "-k", "test_add"], 0);
    assert_eq!(pytest_venvs(&p).len(), 1);
}

#[test]
fn bad_pytest_suites_are_named_and_the_other_tests_still_run() {
    // A path that does not exist, an argument lockstep sets itself.
    let p = pytest_project("");
    p.write(
        "lockstep.toml",
        "[[test.pytest]]\nname = \"unit\"\npaths = [\"tests\", \"nope\"]\n",
    );
    let err = stderr(&p.run(&["test"], 2));
    assert!(
        err.contains("path \"nope\" of [[test.pytest]] \"unit\"") && err.contains("does not exist"),
        "{err}"
    );
    p.write(
        "lockstep.toml",
        "[[test.pytest]]\nname = \"unit\"\nargs = [\"--junitxml=x.xml\"]\n",
    );
    let err = stderr(&p.run(&["test"], 2));
    assert!(
        err.contains("--junitxml, which lockstep sets itself"),
        "{err}"
    );
    assert!(
        pytest_venvs(&p).is_empty(),
        "nothing made before the checks"
    );

    // pytest missing from the venv; a native test beside it still runs.
    p.write(
        "lockstep.toml",
        "[test]\npaths = [\"s\"]\n[[test.pytest]]\nname = \"unit\"\nrequirements = []\n",
    );
    p.add_suite(&[("adds", "11 22 33 44")]);
    p.run(&["test", "--json", "r.json"], 1);
    let got = outcomes(&p, "r.json");
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0], ("adds/adds [cpu]".to_string(), "pass".to_string()));
    assert_eq!(got[1], ("unit [unit]".to_string(), "fail".to_string()));
    let v = p.json("r.json");
    let reason = v["tests"][1]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        reason.contains("pytest is not installed in the venv of"),
        "{reason}"
    );

    // No wheelhouse and no venv of the project's.
    std::fs::remove_dir_all(p.path().join("wheelhouse")).expect("remove");
    let out = p
        .cmd(&["test", "--json", "r.json"])
        .env_remove("VIRTUAL_ENV")
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let v = p.json("r.json");
    let reason = v["tests"][1]["reason"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(reason.contains("no venv to run pytest in"), "{reason}");
    assert_eq!(v["tests"][0]["outcome"], "pass");

    // --wheels names a manifest that does not exist.
    let err = stderr(&p.run(&["test", "--wheels", "nowhere/pylock.toml"], 2));
    assert!(
        err.contains("--wheels nowhere/pylock.toml: no such manifest"),
        "{err}"
    );
}

#[test]
fn a_pytest_that_dies_before_its_report_fails_each_selected_test() {
    let p = pytest_project("");
    p.write(
        "tests/conftest.py",
        "import os\n\ndef pytest_runtest_call(item):\n    os._exit(7)\n",
    );
    std::fs::remove_file(p.path().join("tests/test_broken.py")).expect("remove");
    let err = stderr(&p.run(&["test", "-k", "test_add", "--json", "r.json"], 1));
    let v = p.json("r.json");
    let tests = v["tests"].as_array().expect("tests");
    assert_eq!(tests.len(), 1, "{err}");
    let reason = tests[0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("pytest ended (exit status 7) before writing its JUnit report"),
        "{reason}"
    );
}

#[test]
fn shards_balance_by_the_times_of_unsharded_runs_in_the_history() {
    let p = Project::new();
    p.write(
        "lockstep.toml",
        "[history]\ndir = \"hist\"\n[[test.pytest]]\nname = \"unit\"\n",
    );
    calc_wheel(&p.path().join("wheelhouse"));
    p.run(&["pkg", "manifest", "wheelhouse"], 0);
    let mut tests = String::from("import time\n\ndef test_long():\n    time.sleep(1.5)\n");
    for i in 0..7 {
        tests.push_str(&format!("\ndef test_quick_{i}():\n    pass\n"));
    }
    p.write("tests/test_times.py", &tests);
    let list = |shard: &str| -> (Vec<String>, String) {
        let out = p.run(&["test", "--list", "--shard", shard], 0);
        let ids = stdout(&out)
            .lines()
            .map(|l| l.split("  [").next().unwrap_or_default().to_string())
            .collect();
        (ids, stderr(&out))
    };
    // No history yet: by name.
    let (_, err) = list("1/2");
    assert!(!err.contains("balanced by the recorded times"), "{err}");

    // One unsharded run recorded: test_long alone holds as much time as
    // the seven others, so it is a shard of its own.
    p.run(&["test"], 0);
    let (first, err) = list("1/2");
    assert!(
        err.contains("--shard: balanced by the recorded times of 8 tests in"),
        "{err}"
    );
    assert_eq!(first, ["tests/test_times.py::test_long [unit]"]);
    let (second, _) = list("2/2");
    assert_eq!(second.len(), 7, "{second:?}");

    // A shard's own recorded run never moves a test of the partition.
    p.run(&["test", "--shard", "1/2"], 0);
    assert_eq!(list("1/2").0, first);
    assert_eq!(list("2/2").0, second);
}
