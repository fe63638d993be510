//! `lockstep bench compare BASE NEW` on real kernels timed by `lockstep
//! bench` with the real IREE tools: the same build twice is no
//! regression; a planted slowdown of the same kernel (a benchmark runner
//! reporting every time 3x slower: deterministic in size, where a build at
//! -O0 measured 1.2x to 1.6x depending on the machine and its load) is
//! one, exit 1; history selections pool runs of a commit; bad inputs are
//! usage errors naming the argument, never a verdict.

use crate::common::*;

const KERNEL: &str = "conv -n 1 -c 16 -H 32 -W 32 -k 16 -y 3 -x 3 -p 1 -q 1 -F 1 -t 1";
const OTHER: &str = "conv -n 1 -c 4 -H 8 -W 8 -k 4 -y 3 -x 3 -p 1 -q 1 -F 1 -t 1";

/// `lockstep bench --json NAME` of `lines` (a commands file) with the IREE
/// tools of `iree_bin`.
fn bench_with(p: &Project, name: &str, lines: &[&str], iree_bin: &str) -> serde_json::Value {
    let file = format!("{name}.commands");
    p.write(&file, &(lines.join("\n") + "\n"));
    p.run(
        &[
            "bench",
            "--iree-bin",
            iree_bin,
            "--commands-file",
            &file,
            "--json",
            name,
        ],
        0,
    );
    p.json(name)
}

fn compare(p: &Project, base: &str, new: &str, extra: &[&str], code: i32) -> serde_json::Value {
    let mut args = vec!["bench", "compare", base, new, "--json"];
    args.extend_from_slice(extra);
    let out = p.run(&args, code);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_schema("bench-compare.json", &doc);
    doc
}

fn outcome(doc: &serde_json::Value, kernel: &str) -> String {
    doc["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kernel"] == kernel)
        .unwrap_or_else(|| panic!("no {kernel} in {doc}"))["outcome"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_real_slowdown_is_a_regression_and_the_same_build_is_not() {
    // Real kernels compiled and run, their times planted (a fixed base and
    // a fixed factor): the verdicts never depend on the CPU or its load;
    // scripts/bench-report measures the false-regression rate on real times.
    let p = Project::new();
    let same_bin = planted_iree_bin(&p.root().join("same-tools"), 1.0);
    let same_bin = same_bin.to_str().expect("utf-8 path");
    bench_with(&p, "base.json", &[KERNEL, OTHER], same_bin);
    bench_with(&p, "again.json", &[KERNEL], same_bin);
    let slow_bin = planted_iree_bin(&p.root().join("slow-tools"), PLANTED_SLOWDOWN);
    bench_with(
        &p,
        "slow.json",
        &[KERNEL],
        slow_bin.to_str().expect("utf-8 path"),
    );
    // The same build: no regression at the default band.
    let same = compare(&p, "base.json", "again.json", &[], 0);
    assert_eq!(same["regressions"], 0, "{same}");
    assert_ne!(outcome(&same, KERNEL), "regression");
    assert_eq!(outcome(&same, OTHER), "only_in_base");
    // Three times slower, one run a side and one kernel: nothing shows the
    // noise between runs, so the ratio without a verdict, exit 0.
    let single = compare(&p, "base.json", "slow.json", &[], 0);
    assert_eq!(outcome(&single, KERNEL), "not_enough_runs", "{single}");
    assert_eq!(single["noise_model"], "within_run");
    assert!(
        single["kernels"][0]["ratio"].as_f64().unwrap() > 2.0,
        "{single}"
    );
    // Two runs a side (a history selection of each commit): a regression,
    // exit 1, at the default band.
    let base2 = bench_with(&p, "base2.json", &[KERNEL], same_bin);
    let slow2 = bench_with(
        &p,
        "slow2.json",
        &[KERNEL],
        slow_bin.to_str().expect("utf-8 path"),
    );
    let hist = p.path().join("hist");
    let (a, b) = ("a".repeat(40), "b".repeat(40));
    history_run(&hist, "1", "bench", &a, p.json("base.json"));
    history_run(&hist, "2", "bench", &a, base2);
    history_run(&hist, "3", "bench", &b, p.json("slow.json"));
    history_run(&hist, "4", "bench", &b, slow2);
    let slow = compare(&p, "hist@aaaa", "hist@bbbb", &[], 1);
    assert_eq!(
        (slow["base_runs"].as_u64(), slow["new_runs"].as_u64()),
        (Some(2), Some(2))
    );
    assert_eq!(outcome(&slow, KERNEL), "regression", "{slow}");
    let kernel = slow["kernels"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kernel"] == KERNEL)
        .unwrap()
        .clone();
    let (lo, ratio) = (
        kernel["interval"][0].as_f64().unwrap(),
        kernel["ratio"].as_f64().unwrap(),
    );
    assert!(lo > 1.5 && ratio >= lo, "{kernel}");
    assert!(kernel["p"].as_f64().unwrap() < 0.05, "{kernel}");
    // The human table says the same, the kernel whole at the end of its
    // line.
    let out = p.run(&["bench", "compare", "hist@aaaa", "hist@bbbb"], 1);
    let text = stdout(&out);
    assert!(
        text.lines()
            .any(|l| l.contains("regression") && l.ends_with(KERNEL))
            && text.contains("1 regression, 0 improvements"),
        "{text}"
    );
}

/// A bench results document of one kernel with `samples`.
fn results(kernel: &str, samples: &[f64]) -> serde_json::Value {
    serde_json::json!({"schema": 1, "rows": [{"arguments": kernel, "status": "ok", "stats": {"times_us": samples}}]})
}

#[test]
fn history_selections_pool_the_runs_of_a_commit_and_bad_inputs_are_named() {
    let p = Project::new();
    let hist = p.path().join("hist");
    let steady = |center: f64, seed: u64| -> Vec<f64> {
        (0..40)
            .map(|i| center * (1.0 + 0.01 * (((i * 7 + seed) % 11) as f64 - 5.0) / 5.0))
            .collect()
    };
    let (a, b) = ("a".repeat(40), "b".repeat(40));
    history_run(&hist, "1", "bench", &a, results("k", &steady(100.0, 1)));
    history_run(&hist, "22", "bench", &a, results("k", &steady(100.0, 2)));
    history_run(&hist, "333", "bench", &b, results("k", &steady(130.0, 3)));
    history_run(&hist, "4444", "test", &b, serde_json::json!({"tests": []}));
    history_run(&hist, "55555", "bench", &b, results("k", &steady(130.0, 4)));
    // A truncated file and a foreign one are skipped, not fatal.
    write(&hist.join("bench-broken.json"), "{\"schema\": 1, \"id\"");
    write(&hist.join("other.json"), "[1, 2, 3]");
    let doc = compare(&p, "hist@aaaa", "hist@latest", &[], 1);
    assert_eq!(doc["base_runs"], 2);
    assert_eq!(doc["new_runs"], 2);
    assert_eq!(outcome(&doc, "k"), "regression");
    // One run a side (the run files themselves): a ratio, no verdict.
    let one = compare(&p, "hist/bench-1.json", "hist/bench-333.json", &[], 0);
    assert_eq!(outcome(&one, "k"), "not_enough_runs");
    assert_eq!(doc["kernels"][0]["base_samples"], 80);
    // Each skipped file is named once, though both sides read the history.
    let out = p.run(&["bench", "compare", "hist@aaaa", "hist@latest"], 1);
    let err = stderr(&out);
    assert_eq!(err.matches("skipped").count(), 2, "{err}");
    assert_eq!(err.matches("bench-broken.json").count(), 1, "{err}");
    // Too few samples: "not enough samples", never a verdict.
    write(
        &p.path().join("few.json"),
        &results("k", &[1.0, 2.0]).to_string(),
    );
    let doc = compare(&p, "few.json", "hist@bbbb", &[], 0);
    assert_eq!(outcome(&doc, "k"), "not_enough_samples");

    for (args, expected) in [
        (vec!["missing.json", "few.json"], "missing.json"),
        (
            vec!["hist/other.json", "few.json"],
            "is not a bench or test result",
        ),
        (
            vec!["hist/test-4444.json", "few.json"],
            "has no timed benchmark step",
        ),
        (vec!["hist", "few.json"], "is a directory"),
        (vec!["hist@zz", "few.json"], "is not a commit"),
        (
            vec!["hist@cccc", "few.json"],
            "has no bench or test run of cccc",
        ),
        (
            vec!["few.json", "few.json", "--threshold", "0"],
            "--threshold `0`",
        ),
        (
            vec!["few.json", "few.json", "--confidence", "2"],
            "--confidence 2",
        ),
    ] {
        let mut all = vec!["bench", "compare"];
        all.extend(args);
        let out = p.run(&all, 2);
        assert!(
            stderr(&out).contains(expected),
            "{expected}: {}",
            stderr(&out)
        );
        assert!(stdout(&out).is_empty());
    }
}

/// A test-results document whose tests each have a benchmark step taking
/// `time_ms(test)`.
fn test_results(tests: &[(&str, f64)]) -> serde_json::Value {
    let tests: Vec<serde_json::Value> = tests
        .iter()
        .map(|(id, time_ms)| {
            serde_json::json!({"id": id, "case": id, "group": "cpu", "outcome": "pass", "steps": [
                {"kind": "compile", "status": "passed", "command": "iree-compile x.mlir"},
                {"kind": "benchmark", "status": "passed", "metrics": {"time_ms": time_ms, "golden_time_ms": 2.0}}
            ]})
        })
        .collect();
    serde_json::json!({"schema": 1, "tests": tests})
}

/// Test benchmark steps compare like kernels: one time per test per run,
/// so single runs give "not enough samples" and three runs a side give a
/// verdict; a test run is not compared with a bench run.
#[test]
fn test_benchmark_steps_compare_across_runs() {
    let p = Project::new();
    let hist = p.path().join("hist");
    let (a, b) = ("a".repeat(40), "b".repeat(40));
    let ids: Vec<String> = (0..8).map(|i| format!("s/t{i} [cpu]")).collect();
    for run in 0..3 {
        let wobble = 1.0 + 0.01 * run as f64;
        let base: Vec<(&str, f64)> = ids.iter().map(|id| (id.as_str(), 2.0 * wobble)).collect();
        let new: Vec<(&str, f64)> = ids
            .iter()
            .enumerate()
            .map(|(i, id)| {
                (
                    id.as_str(),
                    if i == 0 { 6.0 * wobble } else { 2.0 * wobble },
                )
            })
            .collect();
        history_run(&hist, &format!("a{run}"), "test", &a, test_results(&base));
        history_run(&hist, &format!("b{run}"), "test", &b, test_results(&new));
    }
    // A bench run of another commit: aaaa and bbbb still mean their test runs.
    history_run(
        &hist,
        "c0",
        "bench",
        &"c".repeat(40),
        results("k", &[1.0, 2.0, 3.0]),
    );
    let doc = compare(&p, "hist@aaaa", "hist@bbbb", &[], 1);
    assert_eq!(doc["measured"], "test_steps");
    assert_eq!(doc["base_runs"], 3);
    assert_eq!(outcome(&doc, "s/t0 [cpu]"), "regression");
    assert_eq!(outcome(&doc, "s/t1 [cpu]"), "unchanged");
    assert_eq!(doc["regressions"], 1);
    let ratio = doc["kernels"][0]["ratio"].as_f64().unwrap();
    assert!((ratio - 3.0).abs() < 1e-9, "{ratio}");

    // One run a side: one sample each, no verdict.
    write(
        &p.path().join("one.json"),
        &test_results(&[("s/t0 [cpu]", 2.0)]).to_string(),
    );
    write(
        &p.path().join("two.json"),
        &test_results(&[("s/t0 [cpu]", 9.0)]).to_string(),
    );
    let doc = compare(&p, "one.json", "two.json", &[], 0);
    assert_eq!(outcome(&doc, "s/t0 [cpu]"), "not_enough_samples");

    // Kernels against test steps: a usage error.
    write(
        &p.path().join("kernels.json"),
        &results("k", &[1.0, 2.0, 3.0]).to_string(),
    );
    let out = p.run(&["bench", "compare", "kernels.json", "one.json"], 2);
    assert!(
        stderr(&out).contains("nothing to compare"),
        "{}",
        stderr(&out)
    );
    assert!(stdout(&out).is_empty());
}
