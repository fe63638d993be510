//! lit suites in `lockstep test`, with LLVM's real lit and FileCheck from
//! PyPI and the real `iree-opt`: outcomes from lit's own report (pass,
//! FileCheck failure, XFAIL, XPASS, REQUIRES as a marker and UNSUPPORTED as
//! a skip), selection (`-k`, `-m`, `--last-failed`, shards), the cache, the
//! result formats, and the bad inputs (a config that fails to load, a tool
//! that does not exist, a test that hangs).

use std::collections::BTreeMap;

use crate::common::*;

const CONFIG: &str = r#"import lit.formats
config.name = "iree-lit"
config.test_format = lit.formats.ShTest()
config.suffixes = [".mlir"]
"#;

const ADD_ZERO: &str = r#"func.func @f(%a: i32) -> i32 {
  %c0 = arith.constant 0 : i32
  %r = arith.addi %a, %c0 : i32
  return %r : i32
}
"#;

/// A project whose `suites/lit` holds `tests` (name, text).
fn lit_project(tests: &[(&str, String)]) -> Project {
    let p = Project::new();
    p.write("suites/lit/lit.cfg.py", CONFIG);
    for (name, text) in tests {
        p.write(&format!("suites/lit/{name}"), text);
    }
    p
}

fn standard_tests() -> Vec<(&'static str, String)> {
    vec![
        (
            "canonicalize.mlir",
            format!("// RUN: iree-opt --canonicalize %s | FileCheck %s\n// CHECK-LABEL: func.func @f\n// CHECK-NEXT: return %arg0\n{ADD_ZERO}"),
        ),
        (
            "wrong.mlir",
            format!("// RUN: iree-opt --canonicalize %s | FileCheck %s\n// CHECK: arith.addi\n{ADD_ZERO}"),
        ),
        (
            "known-bad.mlir",
            format!("// RUN: iree-opt --canonicalize %s | FileCheck %s\n// XFAIL: *\n// CHECK: arith.addi\n{ADD_ZERO}"),
        ),
        (
            "fixed.mlir",
            format!("// RUN: iree-opt --canonicalize %s | FileCheck %s\n// XFAIL: *\n// CHECK: return %arg0\n{ADD_ZERO}"),
        ),
        (
            "vulkan.mlir",
            "// RUN: iree-opt %s | FileCheck %s\n// REQUIRES: vulkan\n// CHECK: func\nfunc.func @g() { return }\n".into(),
        ),
        (
            "split.mlir",
            "// RUN: iree-opt --split-input-file %s | FileCheck %s\n// CHECK-LABEL: @a\nfunc.func @a() { return }\n// -----\n// CHECK-LABEL: @b\nfunc.func @b() { return }\n".into(),
        ),
        (
            "diagnostics.mlir",
            "// RUN: iree-opt --verify-diagnostics %s\nfunc.func @h(%a: i32) -> i64 {\n  // expected-error @+1 {{type of return operand 0 ('i32') doesn't match function result type ('i64')}}\n  return %a : i32\n}\n".into(),
        ),
        (
            "no-tool.mlir",
            "// RUN: iree-no-such-tool %s\nfunc.func @i() { return }\n".into(),
        ),
        // A file beside the suite, by a path relative to the test's own.
        (
            "relative.mlir",
            "// RUN: cat %S/../expected.txt | FileCheck %s\n// CHECK: beside the suite\n".into(),
        ),
    ]
}

/// `lockstep test` with `args` (JSON results to `out.json`); the outcome of
/// each test by id, and the document.
fn run_tests(
    p: &Project,
    args: &[&str],
    code: i32,
) -> (BTreeMap<String, String>, serde_json::Value) {
    let mut all = vec!["test", "--json", "out.json"];
    all.extend_from_slice(args);
    p.run(&all, code);
    let doc = p.json("out.json");
    let outcomes = doc["tests"]
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
    (outcomes, doc)
}

#[test]
fn lit_tests_are_lockstep_tests_with_lits_own_results() {
    iree_bin();
    let p = lit_project(&standard_tests());
    p.write("suites/expected.txt", "beside the suite\n");
    let (outcomes, doc) = run_tests(&p, &["suites", "--junit", "junit.xml"], 1);
    assert_schema("test-results.json", &doc);
    let expect = [
        ("lit/canonicalize.mlir [lit]", "pass"),
        ("lit/wrong.mlir [lit]", "fail"),
        ("lit/known-bad.mlir [lit]", "xfail"),
        ("lit/fixed.mlir [lit]", "xpass"),
        ("lit/vulkan.mlir [lit]", "skip"),
        ("lit/split.mlir [lit]", "pass"),
        ("lit/diagnostics.mlir [lit]", "pass"),
        ("lit/no-tool.mlir [lit]", "fail"),
        ("lit/relative.mlir [lit]", "pass"),
    ];
    for (id, outcome) in expect {
        assert_eq!(
            outcomes.get(id).map(String::as_str),
            Some(outcome),
            "{id}: {outcomes:?}"
        );
    }
    let reason = |id: &str| {
        doc["tests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .map(|t| t["reason"].as_str().unwrap_or_default().to_string())
            .unwrap_or_default()
    };
    // The reason names the suite's own file (not lit's copy) and what broke.
    let wrong = reason("lit/wrong.mlir [lit]");
    assert!(
        wrong.contains(&format!(
            "{}/suites/lit/wrong.mlir:2: error:",
            p.path().display()
        )),
        "{wrong}"
    );
    assert!(
        reason("lit/no-tool.mlir [lit]").contains("iree-no-such-tool"),
        "no tool"
    );
    // lit wrote nothing into the suite.
    assert!(!p.path().join("suites/lit/Output").exists());
    let junit = p.read("junit.xml");
    assert!(
        junit.contains("canonicalize.mlir") && junit.contains("<failure"),
        "{junit}"
    );

    // The history records them; the site's heatmap (what went wrong, per
    // commit) shows a failing one.
    for _ in 0..2 {
        p.run(&["test", "suites", "-k", "wrong", "--record", "hist"], 1);
    }
    let recorded: String = walk(&p.path().join("hist"))
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .collect();
    assert!(recorded.contains("lit/wrong.mlir [lit]"), "not recorded");
    p.run(&["report", "site", "--history", "hist", "--out", "site"], 0);
    let pages: String = walk(&p.path().join("site"))
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "html"))
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .collect();
    assert!(
        pages.contains("lit/wrong.mlir"),
        "the site does not show the lit test"
    );

    // Selection: a keyword, a marker from REQUIRES, the last failures, shards.
    let (only, _) = run_tests(&p, &["suites", "-k", "split"], 0);
    assert_eq!(only.keys().collect::<Vec<_>>(), ["lit/split.mlir [lit]"]);
    let (without, _) = run_tests(&p, &["suites", "-m", "not vulkan", "-k", "canonical"], 0);
    assert_eq!(without.len(), 1);
    let (vulkan, _) = run_tests(&p, &["suites", "-m", "vulkan"], 0);
    assert_eq!(vulkan.keys().collect::<Vec<_>>(), ["lit/vulkan.mlir [lit]"]);
    let (failed, _) = run_tests(&p, &["suites", "--last-failed"], 1);
    let mut failed: Vec<&String> = failed.keys().collect();
    failed.sort();
    // An XPASS is a failure too.
    assert_eq!(
        failed,
        [
            "lit/fixed.mlir [lit]",
            "lit/no-tool.mlir [lit]",
            "lit/wrong.mlir [lit]"
        ]
    );
    let mut sharded = Vec::new();
    for shard in ["1/2", "2/2"] {
        // Either shard may hold a failure: its exit code says nothing here.
        output(&mut p.cmd(&["test", "suites", "--shard", shard, "--json", "shard.json"]));
        let doc = p.json("shard.json");
        for t in doc["tests"].as_array().unwrap() {
            sharded.push(t["id"].as_str().unwrap().to_string());
        }
    }
    sharded.sort();
    assert_eq!(sharded.len(), 9, "{sharded:?}");
    sharded.dedup();
    assert_eq!(sharded.len(), 9, "every test in exactly one shard");

    // The cache: passing tests with unchanged inputs are not run again;
    // a changed test is.
    let (_, warm) = run_tests(&p, &["suites"], 1);
    let cached = |doc: &serde_json::Value, id: &str| {
        doc["tests"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .map(|t| t["steps"][0]["cached"] == true)
            .unwrap_or(false)
    };
    assert!(cached(&warm, "lit/canonicalize.mlir [lit]"));
    assert!(!cached(&warm, "lit/wrong.mlir [lit]"), "failures run again");
    // A file of the suite a test may read (Inputs/) changed: run again.
    p.write("suites/lit/Inputs/data.txt", "new input\n");
    let (_, inputs) = run_tests(&p, &["suites", "-k", "split"], 0);
    assert!(!cached(&inputs, "lit/split.mlir [lit]"), "an input changed");
    let text = p.read("suites/lit/canonicalize.mlir");
    p.write(
        "suites/lit/canonicalize.mlir",
        &text.replace("func.func @f(", "func.func @g("),
    );
    let (after, changed) = run_tests(&p, &["suites", "-k", "canonical"], 1);
    assert!(!cached(&changed, "lit/canonicalize.mlir [lit]"));
    assert_eq!(
        after["lit/canonicalize.mlir [lit]"], "fail",
        "the CHECK-LABEL @f no longer matches"
    );
}

#[test]
fn a_config_that_fails_and_a_test_that_hangs_are_named() {
    iree_bin();
    let p = lit_project(&[(
        "hang.mlir",
        "// RUN: sleep 100\nfunc.func @j() { return }\n".into(),
    )]);
    let (outcomes, doc) = run_tests(&p, &["suites", "--timeout", "2"], 1);
    assert_eq!(outcomes["lit/hang.mlir [lit]"], "fail");
    let reason = doc["tests"][0]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("TIMEOUT"), "{reason}");

    // A configuration that does not load: the suite and lit's words, exit 1.
    p.write(
        "suites/lit/lit.cfg.py",
        "raise RuntimeError('boom from the config')\n",
    );
    let err = stderr(&p.run(&["test", "suites"], 1));
    assert!(
        err.contains("lit could not run the suite") && err.contains("suites/lit"),
        "{err}"
    );
    assert!(err.contains("boom from the config"), "{err}");
}

#[test]
fn a_suite_of_thousands_of_tests_runs_in_several_lit_processes() {
    iree_bin();
    let tests: Vec<(String, String)> = (0..1_200)
        .map(|i| (format!("t{i:04}.mlir"), "// RUN: true\n".to_string()))
        .collect();
    let p = Project::new();
    p.write("suites/lit/lit.cfg.py", CONFIG);
    for (name, text) in &tests {
        p.write(&format!("suites/lit/{name}"), text);
    }
    let (outcomes, doc) = run_tests(&p, &["suites", "--no-cache"], 0);
    assert_eq!(outcomes.len(), 1_200);
    assert!(outcomes.values().all(|o| o == "pass"));
    // Two lit processes: each test's step names its own log.
    let logs: std::collections::BTreeSet<String> = doc["tests"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["steps"][0]["log"].as_str())
        .map(|l| l.rsplit('/').next().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        logs.into_iter().collect::<Vec<_>>(),
        ["lit-1.log", "lit-2.log"]
    );
}

/// A `lit.cfg.py` that ends lit early (`sys.exit(0)`, `os._exit(0)`: status
/// 0 and no list) in a suite holding a failing test: an error naming the
/// suite (exit 1), never "no tests selected". One that puts a FIFO where lit
/// writes its report and ends lit: every test of the suite fails naming
/// the report, at once (lockstep never waits on the FIFO).
#[test]
fn a_config_that_exits_early_or_plants_a_fifo_is_an_error_naming_the_suite() {
    iree_bin();
    let p = lit_project(&[("fails.mlir", "// RUN: false\n".into())]);
    for ending in ["import sys\nsys.exit(0)\n", "import os\nos._exit(0)\n"] {
        p.write("suites/lit/lit.cfg.py", &format!("{CONFIG}{ending}"));
        let err = stderr(&p.run(&["test", "suites"], 1));
        assert!(
            err.contains("lit listed no tests of the suite") && err.contains("suites/lit"),
            "{ending}: {err}"
        );
        assert!(!err.contains("no tests selected"), "{err}");
    }
    // Listed in full; when run, the report path becomes a FIFO and lit ends.
    p.write(
        "suites/lit/lit.cfg.py",
        &format!(
            "{CONFIG}import os, sys\nif '-o' in sys.argv:\n    report = sys.argv[sys.argv.index('-o') + 1]\n    os.mkfifo(report)\n    os._exit(0)\n"
        ),
    );
    let (outcomes, doc) = run_tests(&p, &["suites"], 1);
    assert_eq!(outcomes["lit/fails.mlir [lit]"], "fail");
    let test = &doc["tests"][0];
    let reason = test["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("lit's report on") && reason.contains("suites/lit"),
        "{reason}"
    );
    let tail = test["steps"][0]["output_tail"].as_str().unwrap_or_default();
    assert!(tail.contains("a FIFO"), "{tail}");
}

/// The GitHub Actions runtime's token and URLs (exported by cache actions
/// into later steps) never reach lit or its lit.cfg.py.
#[test]
fn the_actions_runtime_token_never_reaches_lit_cfg_py() {
    iree_bin();
    let p = lit_project(&[("ok.mlir", "// RUN: true\n".into())]);
    let seen = p.root().join("seen-env.txt");
    p.write(
        "suites/lit/lit.cfg.py",
        &format!(
            "{CONFIG}import os\nwith open({:?}, 'a') as f:\n    f.write(''.join(f'{{k}}={{v}}\\n' for k, v in os.environ.items()))\n",
            seen.display().to_string()
        ),
    );
    let mut cmd = p.cmd(&["test", "suites", "--no-cache"]);
    for var in [
        "ACTIONS_RUNTIME_TOKEN",
        "ACTIONS_RUNTIME_URL",
        "ACTIONS_RESULTS_URL",
        "ACTIONS_CACHE_URL",
    ] {
        cmd.env(var, format!("actions-secret-{var}"));
    }
    cmd.env("LOCKSTEP_TEST_VISIBLE", "visible");
    expect(&mut cmd, 0);
    let env = std::fs::read_to_string(&seen).expect("lit.cfg.py wrote its environment");
    assert!(env.contains("LOCKSTEP_TEST_VISIBLE=visible"), "{env}");
    assert!(!env.contains("actions-secret-"), "{env}");
}
