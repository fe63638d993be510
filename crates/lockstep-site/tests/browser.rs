//! The report site in a real browser: Debian's Chromium driven by
//! Playwright (npm `playwright-core`, installed once into the shared test
//! tools directory, like the linters). A site generated from a small
//! history shaped like real runs (test runs with a flaky test and a
//! benchmark step against its golden, bench runs with one kernel slowed
//! down 15%, integrate loops, a release store) must load with no console
//! error and no request, link every page to every other, draw one mark per
//! data point, mark the regression on the slowed kernel only, and list the
//! flaky test. Screenshots of every page in light and dark go to
//! `<target>/report-screenshots/`.
//!
//! A project's first runs are where a site reads wrong most easily (a
//! golden line of one point, a noise band over one point, an axis padded
//! below zero, two runs of one commit labelled alike), so sites of 1, 2 and
//! 30 runs of each kind are checked too, in the page as drawn: no negative
//! tick on a time axis, whole ticks from 0 on a count axis, a golden line
//! and a noise band that have a size, x labels that tell two runs apart,
//! the pull request an integrate loop published, one time format and no
//! internal names. Their screenshots (light) go to
//! `<target>/report-screenshots/runs-N/`, and with
//! `LOCKSTEP_UPDATE_SCREENSHOTS=1` also to docs/report/ as
//! `runs-N-PAGE.png` (what docs/report.md shows).
//!
//! Never skipped: without Chromium the test fails and says how to install
//! it (scripts/test installs it on Debian).

// Test code starts its fixtures' processes directly; product code goes
// through lockstep_core::process (clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use lockstep_history::{Kind, Machine, RunRecord, Source};
use serde_json::{json, Value};

const PLAYWRIGHT: &str = "playwright-core@1.65.1";
const DRIVER: &str = include_str!("browser/drive.js");

fn toolchains() -> PathBuf {
    std::env::var_os("LOCKSTEP_TOOLCHAINS")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME"))
                .join(".cache/lockstep/toolchains")
        })
}

/// `node_modules/playwright-core`, installed from npm once (beside the
/// shared toolchains, so it survives between runs).
fn playwright() -> PathBuf {
    let root = toolchains().join("../test-tools");
    let dir = root.join(PLAYWRIGHT.replace('@', "-"));
    let module = dir.join("node_modules/playwright-core");
    if module.join("package.json").exists() {
        return module;
    }
    std::fs::create_dir_all(&root).unwrap();
    let staging = tempfile::tempdir_in(&root).unwrap();
    let tmp = staging.path().join("npm");
    std::fs::create_dir_all(&tmp).unwrap();
    let out = Command::new("npm")
        .args(["install", "--no-audit", "--no-fund", "--silent", "--prefix"])
        .arg(&tmp)
        .arg(PLAYWRIGHT)
        .env("PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD", "1")
        .output()
        .expect("npm (node 20) is required to install playwright-core");
    assert!(
        out.status.success(),
        "installing {PLAYWRIGHT} from npm failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Another test binary may have won the race; either copy is whole.
    let _ = std::fs::rename(&tmp, &dir);
    assert!(module.join("package.json").exists());
    module
}

/// The browser, or `None` when it is missing and the run asked to install
/// nothing system-wide (`LOCKSTEP_TEST_NO_SYSTEM=1`, said by scripts/test):
/// the test then says it was skipped and why. Missing otherwise, it fails.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("LOCKSTEP_CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    if !path.exists() && std::env::var_os("LOCKSTEP_TEST_NO_SYSTEM").is_some_and(|v| v == "1") {
        eprintln!(
            "note: skipped: {} is missing and LOCKSTEP_TEST_NO_SYSTEM=1 installs nothing system-wide (the site's pages are not checked in a browser)",
            path.display()
        );
        return None;
    }
    assert!(
        path.exists(),
        "{} is missing: the browser tests need Chromium (apt-get install -y chromium, or set LOCKSTEP_CHROMIUM; LOCKSTEP_TEST_NO_SYSTEM=1 skips them)",
        path.display()
    );
    Some(path)
}

/// `<target>` of this build: the test binary is `<target>/<profile>/deps/…`.
fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().unwrap();
    exe.ancestors().nth(3).unwrap().to_path_buf()
}

/// A commit id that differs in its first characters.
fn sha(n: usize) -> String {
    let x = (n as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    format!("{x:016x}{:016x}{:08x}", x.rotate_left(17), n)
}

fn record(n: usize, kind: Kind, commit: usize, results: Value) -> RunRecord {
    RunRecord {
        schema: 1,
        id: format!("2026-02-0{}T10:00:{n:02}Z-ci-{n}", 1 + n / 10),
        kind,
        started: format!("2026-02-0{}T10:00:{n:02}Z", 1 + n / 10),
        finished: format!("2026-02-0{}T10:00:{n:02}Z", 1 + n / 10),
        source: Source {
            commit: Some(sha(commit)),
            branch: Some("main".into()),
            dirty: false,
        },
        pins: BTreeMap::from([(
            "third_party/llvm-project".into(),
            format!("{:040x}", 0x11 + commit),
        )]),
        toolchain: Some("a".repeat(64)),
        machine: Machine {
            cpu: "AMD EPYC".into(),
            cores: 16,
            os: "linux-x86_64".into(),
            host: "runner-1".into(),
        },
        results,
    }
}

fn test_run(run: usize, commit: usize) -> Value {
    let flaky = if run.is_multiple_of(2) {
        "pass"
    } else {
        "fail"
    };
    let broken = if commit == 2 { "fail" } else { "pass" };
    let test = |case: &str, outcome: &str, steps: Value| {
        json!({"id": format!("{case} [cpu]"), "case": case, "group": "cpu", "outcome": outcome,
               "reason": if outcome == "pass" { "" } else { "outputs differ <b>&amp;</b>" },
               "steps": steps, "seconds": 0.4, "markers": ["smoke"]})
    };
    let bench_step = json!([{"kind": "benchmark", "status": "passed", "command": "iree-benchmark-module",
        "log": null, "seconds": 0.2, "cached": false, "message": "", "output_tail": "",
        "metrics": {"time_ms": 1.0 + 0.05 * run as f64, "golden_time_ms": 1.5, "dispatch_count": 2, "vmfb_size": 4096}}]);
    json!({"schema": 1, "version": 1,
    "summary": {"total": 4, "pass": 3, "fail": 1, "xfail": 0, "xpass": 0, "skip": 0, "failed": true,
                "wall_seconds": 2.0, "jobs": 2, "compiles_run": 4, "compiles_cached": 0,
                "compiler": "IREE compiler version 3.13.0", "compiler_identity": "a".repeat(64)},
    "changes": {"newly_failing": [], "newly_passing": [], "slower": []},
    "tests": [
        test("smoke/flaky_add", flaky, json!([])),
        test("smoke/matmul_f32", "pass", bench_step),
        test("onnx/conv <relu>", broken, json!([])),
        test("onnx/softmax", "pass", json!([])),
    ]})
}

/// Five kernels: enough to see the noise between runs (lockstep-stats
/// `MIN_KERNELS_FOR_NOISE`), so a slowdown gets a verdict.
const KERNELS: [&str; 5] = [
    "conv -n 1 -c 64 -H 56 -W 56 -k 64 -y 3 -x 3 -p 1 -q 1 -F 1",
    "conv -n 4 -c 32 -H 28 -W 28 -k 32 -y 1 -x 1 -F 1",
    "convbfp16 -n 2 -c 16 -H 14 -W 14 -k 16 -y 3 -x 3 -F 1",
    "conv -n 1 -c 8 -H 16 -W 16 -k 8 -y 3 -x 3 -p 1 -q 1 -F 1",
    "convfp16 -n 1 -c 16 -H 7 -W 7 -k 32 -y 1 -x 1 -F 1",
];
const SLOWED: usize = 1;
const BENCH_RUNS: usize = 6;
const TEST_RUNS: usize = 6;

fn bench_run(run: usize) -> Value {
    let rows: Vec<Value> = KERNELS
        .iter()
        .enumerate()
        .map(|(k, args)| {
            let slow = if k == SLOWED && run >= 3 { 1.15 } else { 1.0 };
            let base = 100.0 * (k + 1) as f64 * slow;
            let times: Vec<f64> = (0..12)
                .map(|i| base * (1.0 + 0.01 * ((i * 7 + run * 3) % 5) as f64 / 4.0))
                .collect();
            json!({"command": k, "line": k + 1, "arguments": args, "func_name": format!("conv_2d_float32_forward_{k}"),
                "output_shape": [1, 64, 56, 56], "output_dtype": "float32",
                "stats": {"min": base, "max": base * 1.01, "mean": base, "median": base, "stddev": 0.3,
                          "samples": 12, "times_us": times},
                "gflops": 230.0 / slow / (k + 1) as f64, "gbps": 10.0, "verify": "", "status": "ok", "cached": true,
                "compile_seconds": 0.0, "timing_seconds": 0.3, "module": null, "repeat": null, "check": null, "notes": []})
        })
        .collect();
    json!({"schema": 1, "device": "local-task", "runtime_device": "local-task", "rows": rows,
           "compiled": 0, "cache_hits": 3})
}

fn commit(sha: &str, subject: &str) -> Value {
    json!({"sha": sha.repeat(40 / sha.len()), "subject": subject, "author": "Dev", "date": "2026-02-01T09:00:00+00:00"})
}

/// A history directory and a release store like the commands write them.
fn fixture(dir: &Path) -> (PathBuf, PathBuf) {
    let history = dir.join("history");
    let mut n = 0;
    for run in 0..TEST_RUNS {
        lockstep_history::write(
            &history,
            &record(n, Kind::Test, run / 2, test_run(run, run / 2)),
        )
        .unwrap();
        n += 1;
    }
    for run in 0..BENCH_RUNS {
        lockstep_history::write(&history, &record(n, Kind::Bench, run / 2, bench_run(run)))
            .unwrap();
        n += 1;
    }
    lockstep_history::write(
        &history,
        &record(
            n,
            Kind::Integrate,
            1,
            json!({"schema": 1, "smoke_runs": 3, "cached": 1,
            "advances": ["1".repeat(40), "2".repeat(40)], "end": {"result": "at_head"}}),
        ),
    )
    .unwrap();
    n += 1;
    lockstep_history::write(
        &history,
        &record(n, Kind::Integrate, 2, json!({"schema": 1, "smoke_runs": 5, "cached": 0, "advances": [],
            "reverted": [commit("ab", "[mlir] Fold <tensor.pad> into conv")],
            "end": {"result": "halted", "halt": {"kind": "smoke", "culprit": commit("cd", "[LLVM] Change the ABI"),
                "last_good": commit("ef", "ok"), "at_pin": false, "branch": "integrate", "superproject_head": "1".repeat(40),
                "probe_head": null, "conflict": null, "log": "/tmp/smoke.log", "exit": "exit status 1", "skipped": [],
                "untracked": [], "untracked_total": 2, "smoke": ["make", "check"], "submodule": "third_party/llvm-project",
                "superproject": ".", "link": "https://github.com/llvm/llvm-project/commit/cdcd", "report_path": "r.md",
                "created_at": "2026-02-02T00:00:00Z"}}})),
    )
    .unwrap();
    // Two runs of scripts/bench-all: the speed page's table, one row over
    // its target.
    for (i, ratio) in [(0, 0.9), (1, 1.3)] {
        n += 1;
        lockstep_history::write(
            &history,
            &record(n, Kind::Speed, 2 + i, json!({"schema": 1, "document": "lockstep-speed", "rows": [
                {"command": "lockstep integrate status", "work": "382 upstream commits", "lockstep_s": 0.02 * ratio,
                 "reference": "git log --format -- PATH", "reference_s": 0.02, "ratio": ratio, "target": "<= 1.1"},
                {"command": "lockstep test (warm)", "work": "40 generated cases, -j 2", "lockstep_s": 0.02,
                 "reference": "lockstep cold", "reference_s": 6.4, "ratio": 0.003, "target": "<= 0.005"}]})),
        )
        .unwrap();
    }
    // A truncated file: listed as a warning, not a crash.
    std::fs::write(
        history.join("test-truncated.json"),
        "{\"schema\": 1, \"id\"",
    )
    .unwrap();

    let store = dir.join("index");
    for (version, day) in [("0.3.0rc20260201", 1), ("0.3.0rc20260202", 2)] {
        let files = store.join("files").join(version);
        std::fs::create_dir_all(&files).unwrap();
        std::fs::write(
            files.join("release.json"),
            json!({"version": version, "tag": format!("snapshot-{version}"), "channel": "nightly",
                "source": "9".repeat(40), "pins": {"third_party/llvm-project": "8".repeat(40)}, "yanked": null,
                "files": [{"filename": format!("demo_compiler-{version}-cp311-cp311-linux_x86_64.whl"),
                           "project": "demo-compiler", "sha256": "0".repeat(64), "size": 1234,
                           "upload_time": format!("2026-02-0{day}T12:00:00Z")}]})
            .to_string(),
        )
        .unwrap();
    }
    (history, store)
}

/// Runs drive.js with `config` (written into `dir`): what it saw.
fn drive(dir: &Path, config: Value) -> Value {
    let path = dir.join("config.json");
    std::fs::write(&path, config.to_string()).unwrap();
    let driver = dir.join("drive.js");
    std::fs::write(&driver, DRIVER).unwrap();
    let out = Command::new("node")
        .arg(&driver)
        .arg(&path)
        .output()
        .expect("node");
    assert!(
        out.status.success(),
        "the browser driver failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_site_in_chromium() {
    let Some(chromium) = chromium() else {
        return;
    };
    let playwright = playwright();
    let dir = tempfile::tempdir().unwrap();
    let (history, store) = fixture(dir.path());
    let loaded = lockstep_history::load(&history).unwrap();
    assert_eq!(loaded.runs.len(), TEST_RUNS + BENCH_RUNS + 4);
    assert_eq!(loaded.skipped.len(), 1);
    let site = dir.path().join("site");
    let report = lockstep_site::site(
        &loaded,
        Some(&store),
        &site,
        Some("https://example.github.io/demo"),
    )
    .unwrap();
    assert_eq!(report.flaky_tests, 1);
    assert_eq!(report.regressions, 1);
    assert_eq!(report.warnings.len(), 1);

    let shots = target_dir().join("report-screenshots");
    let seen = drive(
        dir.path(),
        json!({"site": site, "screenshots": shots, "playwright": playwright, "chromium": chromium}),
    );

    // Nothing went wrong and nothing was fetched.
    assert_eq!(
        seen["errors"],
        json!([]),
        "console errors or failed requests"
    );
    assert_eq!(seen["requests"], json!([]), "requests outside the site");

    let pages = [
        "index.html",
        "tests.html",
        "bench.html",
        "integrate.html",
        "releases.html",
        "speed.html",
    ];
    for scheme in ["light", "dark"] {
        for page in pages {
            let facts = &seen["pages"][format!("{scheme}/{page}")];
            assert_eq!(facts["ok"], json!(true), "{scheme}/{page}");
            assert_eq!(facts["scripts"], json!(0), "{page} loads nothing");
            // Every page links to every page (the overview included).
            let links: Vec<&str> = facts["links"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(Value::as_str)
                .collect();
            for target in pages {
                assert!(links.contains(&target), "{page} does not link {target}");
            }
            for chart in facts["charts"].as_array().unwrap() {
                assert_eq!(chart["role"], "img", "{page}: {chart}");
                assert!(!chart["label"].as_str().unwrap_or("").is_empty());
                assert!(!chart["title"].as_str().unwrap_or("").is_empty());
                assert!(!chart["desc"].as_str().unwrap_or("").is_empty());
                assert!(
                    chart["axis_texts"].as_u64().unwrap() >= 3,
                    "{page}: {chart}"
                );
            }
        }
        // The colour scheme follows the browser's.
        let background = seen["pages"][format!("{scheme}/index.html")]["background"]
            .as_str()
            .unwrap()
            .to_string();
        let expected = if scheme == "light" {
            "rgb(255, 255, 255)"
        } else {
            "rgb(13, 17, 23)"
        };
        assert_eq!(background, expected, "{scheme}");
    }

    // Every link between pages (and to an anchor) leads to a page.
    let links = seen["links"].as_array().unwrap();
    assert!(links.len() > 25);
    for link in links {
        if link["external"] == json!(true) {
            let href = link["href"].as_str().unwrap();
            assert!(href.starts_with("https://"), "{link}");
            continue;
        }
        assert_eq!(link["ok"], json!(true), "broken link {link}");
    }

    let charts = |page: &str| -> Vec<Value> {
        seen["pages"][format!("light/{page}")]["charts"]
            .as_array()
            .unwrap()
            .clone()
    };
    // Benchmarks: one time and one GFLOPS chart per kernel, one mark per
    // run, the regression on the slowed kernel only.
    let bench = charts("bench.html");
    assert_eq!(bench.len(), 2 * KERNELS.len());
    for chart in &bench {
        let kernel = chart["kernel"].as_str().unwrap();
        assert_eq!(chart["marks"], json!(BENCH_RUNS), "{chart}");
        let slowed = kernel == KERNELS[SLOWED];
        let regressions = chart["regressions"].as_u64().unwrap();
        match (chart["chart"].as_str().unwrap(), slowed) {
            ("time", true) => assert_eq!(regressions, 1, "{chart}"),
            _ => assert_eq!(regressions, 0, "{chart}"),
        }
    }
    // Tests: the heatmap has a cell per (test that went wrong, commit):
    // the flaky test and the broken one on 3 commits; the golden chart a
    // mark per run; the flaky test is listed.
    let tests = charts("tests.html");
    let heat = tests.iter().find(|c| c["chart"] == "heatmap").unwrap();
    assert_eq!(heat["marks"], json!(2 * TEST_RUNS / 2));
    let golden = tests.iter().find(|c| c["chart"] == "golden").unwrap();
    assert_eq!(golden["test"], "smoke/matmul_f32 [cpu]");
    assert_eq!(golden["marks"], json!(TEST_RUNS));
    // One row per commit it flaked on (it flaked on all three).
    assert_eq!(
        seen["pages"]["light/tests.html"]["flaky"],
        json!(vec!["smoke/flaky_add [cpu]"; TEST_RUNS / 2])
    );
    let integrate = charts("integrate.html");
    assert_eq!(integrate.len(), 1);
    assert_eq!(integrate[0]["marks"], json!(2));

    for page in pages {
        for scheme in ["light", "dark"] {
            let shot = shots.join(format!("{}-{scheme}.png", page.trim_end_matches(".html")));
            assert!(shot.metadata().unwrap().len() > 1000, "{}", shot.display());
        }
    }
}

/// The pull request every loop of the start fixtures published.
const PULL_URL: &str = "https://github.com/acme/super/pull/1";

/// Run `n` of a start fixture of `kind` (0 test, 1 bench, 2 integrate),
/// stamped as `lockstep` stamps runs (RFC 3339 to the millisecond, an id
/// from the start): each run of a kind 7 minutes after the one before, two
/// runs per commit.
fn start_record(run: usize, kind: Kind, results: Value) -> RunRecord {
    let slot = match kind {
        Kind::Test => 0,
        Kind::Bench => 1,
        _ => 2,
    };
    let minutes = run * 7 + slot * 2;
    let (h, m) = (9 + minutes / 60, minutes % 60);
    let mut r = record(0, kind, run / 2, results);
    r.id = format!("20260301T{h:02}{m:02}05Z-{:08x}", run * 3 + slot);
    r.started = format!("2026-03-01T{h:02}:{m:02}:05.{:03}Z", run * 37 % 1000);
    r.finished = format!("2026-03-01T{h:02}:{m:02}:45.{:03}Z", run * 41 % 1000);
    r
}

/// A test run of a start fixture: a benchmark step far under its golden
/// (the margin of such a chart once reached below zero), a flaky test and
/// one that fails on one commit.
fn start_test_run(run: usize) -> Value {
    let mut doc = test_run(run, run / 2);
    let step = &mut doc["tests"][1]["steps"][0]["metrics"];
    step["time_ms"] = json!(0.04 + 0.002 * (run % 5) as f64);
    step["golden_time_ms"] = json!(2.0);
    doc
}

/// An integrate loop of a start fixture: one advance a loop at first (a
/// count axis once read 0.90 to 1.10), then a few, some halted; every loop
/// published pull request #1 (`--publish`), the first one opening it.
fn start_loop(run: usize, runs: usize) -> Value {
    let advances = if runs <= 2 { 1 } else { run % 4 };
    let result = match run % 7 {
        3 => "halted",
        5 => "steps_exhausted",
        _ => "at_head",
    };
    let mut end = json!({"result": result});
    if result == "halted" {
        end["halt"] = json!({"kind": "smoke", "culprit": commit("cd", "[LLVM] Change the ABI"),
            "at_pin": false, "exit": "exit status 1", "untracked_total": 0,
            "link": "https://github.com/llvm/llvm-project/commit/cdcd"});
    }
    if result == "steps_exhausted" {
        end["pending"] = json!([commit("ef", "[mlir] Next")]);
    }
    json!({"schema": 1, "smoke_runs": 2 + run % 3, "cached": run % 2, "candidates": 4,
        "advances": (0..advances).map(|a| format!("{:040x}", run * 10 + a)).collect::<Vec<_>>(),
        "end": end,
        "published": {"repository": "acme/super", "remote": "origin", "branch": "integrate/llvm",
            "head": "7".repeat(40), "pushed": true, "created": run == 0, "needs_help": result == "halted",
            "pull": {"number": 1, "state": "open", "draft": true, "html_url": PULL_URL,
                     "title": "Integrate llvm-project", "merged_at": null}}})
}

/// A history of `runs` runs of each kind (two per commit: with two runs,
/// both of one commit) and a release store of up to 3 releases whose
/// files carry upload times to the nanosecond, as lockstep writes them.
fn start_fixture(dir: &Path, runs: usize) -> (PathBuf, PathBuf) {
    let history = dir.join("history");
    for run in 0..runs {
        for (kind, results) in [
            (Kind::Test, start_test_run(run)),
            (Kind::Bench, start_bench_run(run, runs)),
            (Kind::Integrate, start_loop(run, runs)),
        ] {
            lockstep_history::write(&history, &start_record(run, kind, results)).unwrap();
        }
    }
    let store = dir.join("index");
    for day in 1..=runs.min(3) {
        let version = format!("0.3.0rc2026030{day}");
        let files = store.join("files").join(&version);
        std::fs::create_dir_all(&files).unwrap();
        std::fs::write(
            files.join("release.json"),
            json!({"version": version, "tag": format!("snapshot-{version}"), "channel": "nightly",
                "source": sha(day), "pins": {"third_party/llvm-project": "8".repeat(40)}, "yanked": null,
                "files": [{"filename": format!("demo_compiler-{version}-cp311-cp311-linux_x86_64.whl"),
                           "project": "demo-compiler", "sha256": "0".repeat(64), "size": 1234,
                           "upload_time": format!("2026-03-0{day}T12:00:00.123456789Z")}]})
            .to_string(),
        )
        .unwrap();
    }
    (history, store)
}

/// A bench run of a start fixture: the five kernels, the slowed one 15%
/// slower in the last third of a long history.
fn start_bench_run(run: usize, runs: usize) -> Value {
    let slowed_from = if runs >= 6 { runs * 2 / 3 } else { usize::MAX };
    bench_run(if run >= slowed_from { 3 + run } else { run % 3 })
}

/// What is wrong with the light pages of a start fixture of `runs` runs
/// (as drive.js saw them); empty when nothing is.
fn start_problems(seen: &Value, runs: usize) -> Vec<String> {
    let mut problems = Vec::new();
    if seen["errors"] != json!([]) || seen["requests"] != json!([]) {
        problems.push(format!(
            "errors {} requests {}",
            seen["errors"], seen["requests"]
        ));
    }
    for page in PAGES {
        let facts = &seen["pages"][format!("light/{page}")];
        problems.extend(text_problems(page, facts["text"].as_str().unwrap_or("")));
        for chart in facts["charts"].as_array().into_iter().flatten() {
            problems.extend(chart_problems(page, chart, runs));
        }
    }
    let pulls = &seen["pages"]["light/integrate.html"]["pulls"];
    let expected: Vec<Value> = vec![json!({"text": "#1", "href": PULL_URL}); runs];
    if pulls != &json!(expected) {
        problems.push(format!(
            "integrate.html: the pull request column reads {pulls}"
        ));
    }
    problems
}

const PAGES: [&str; 6] = [
    "index.html",
    "tests.html",
    "bench.html",
    "integrate.html",
    "releases.html",
    "speed.html",
];

/// One time format (`2026-03-01 09:07`, never RFC 3339 at any precision)
/// and words, not the documents' names, for how a loop ended.
fn text_problems(page: &str, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let bytes = text.as_bytes();
    for (i, _) in text.match_indices('T') {
        // YYYY-MM-DDTHH:MM
        let date = i >= 10
            && bytes[i - 10..i]
                .iter()
                .filter(|b| b.is_ascii_digit())
                .count()
                == 8;
        let time = bytes.len() > i + 3 && bytes[i + 1..i + 3].iter().all(u8::is_ascii_digit);
        if date && time && bytes[i - 3] == b'-' && bytes[i - 6] == b'-' {
            let end = (i + 25).min(text.len());
            let raw = String::from_utf8_lossy(&bytes[i - 10..end]);
            problems.push(format!("{page}: a raw timestamp {raw:?}"));
            break;
        }
    }
    for name in ["at_head", "steps_exhausted"] {
        if text.contains(name) {
            problems.push(format!("{page}: shows the internal name {name}"));
        }
    }
    if page == "integrate.html" && !text.contains("at upstream head") {
        problems.push(format!("{page}: no loop reads `at upstream head`"));
    }
    problems
}

/// A chart's axes, golden line, noise band and x labels.
fn chart_problems(page: &str, chart: &Value, runs: usize) -> Vec<String> {
    let kind = chart["chart"].as_str().unwrap_or("");
    let name = format!("{page} {kind} {}", chart["kernel"].as_str().unwrap_or(""));
    let strings = |key: &str| -> Vec<String> {
        chart[key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    };
    let (y, x) = (strings("y_ticks"), strings("x_ticks"));
    let mut problems = Vec::new();
    if kind == "heatmap" {
        return problems;
    }
    if y.is_empty() {
        problems.push(format!("{name}: no y tick labels"));
    }
    let negative = y.iter().any(|t| t.starts_with('-') || t.starts_with('−'));
    if matches!(kind, "golden" | "time" | "gflops") && negative {
        problems.push(format!("{name}: a time or rate axis below zero: {y:?}"));
    }
    let whole =
        y.iter().all(|t| t.parse::<u64>().is_ok()) && y.first().map(String::as_str) == Some("0");
    if kind == "integrate" && !whole {
        problems.push(format!(
            "{name}: a count axis not in whole numbers from 0: {y:?}"
        ));
    }
    let has_size = |key: &str, both: bool| {
        let w = chart[key]["width"].as_f64().unwrap_or(0.0);
        let h = chart[key]["height"].as_f64().unwrap_or(0.0);
        w > 1.0 && (!both || h > 1.0)
    };
    if kind == "golden" && !has_size("golden", false) {
        problems.push(format!(
            "{name}: the golden line has no length: {}",
            chart["golden"]
        ));
    }
    if kind == "time" && runs >= 2 && !has_size("band", true) {
        problems.push(format!(
            "{name}: the noise band has no area: {}",
            chart["band"]
        ));
    }
    let marks = chart["marks"].as_u64().unwrap_or(0);
    let labels_ok = match marks {
        0 | 1 => x.len() == 1 && !x[0].is_empty(),
        _ => x.len() == 2 && x[0] != x[1],
    };
    if !labels_ok {
        problems.push(format!("{name}: {marks} marks, x labels {x:?}"));
    }
    problems
}

#[test]
fn a_project_reads_right_from_its_first_run() {
    let Some(chromium) = chromium() else {
        return;
    };
    let playwright = playwright();
    let update_docs = std::env::var_os("LOCKSTEP_UPDATE_SCREENSHOTS").is_some_and(|v| v == "1");
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/report");
    let mut problems = Vec::new();
    for runs in [1, 2, 30] {
        let dir = tempfile::tempdir().unwrap();
        let (history, store) = start_fixture(dir.path(), runs);
        let loaded = lockstep_history::load(&history).unwrap();
        assert_eq!(loaded.runs.len(), 3 * runs);
        let site = dir.path().join("site");
        lockstep_site::site(&loaded, Some(&store), &site, None).unwrap();
        let shots = target_dir().join(format!("report-screenshots/runs-{runs}"));
        let seen = drive(
            dir.path(),
            json!({"site": site, "screenshots": shots, "playwright": playwright, "chromium": chromium,
                   "schemes": ["light"], "follow_links": false, "shot_names": "page"}),
        );
        problems.extend(
            start_problems(&seen, runs)
                .into_iter()
                .map(|p| format!("{runs} runs: {p}")),
        );
        for page in PAGES {
            let name = page.trim_end_matches(".html");
            let shot = shots.join(format!("{name}.png"));
            assert!(shot.metadata().unwrap().len() > 1000, "{}", shot.display());
            if update_docs {
                std::fs::copy(&shot, docs.join(format!("runs-{runs}-{name}.png"))).unwrap();
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
