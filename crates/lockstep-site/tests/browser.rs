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
//! Never skipped: without Chromium the test fails and says how to install
//! it (scripts/test installs it on Debian).

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

#[test]
fn the_site_in_chromium() {
    let Some(chromium) = chromium() else {
        return;
    };
    let playwright = playwright();
    let dir = tempfile::tempdir().unwrap();
    let (history, store) = fixture(dir.path());
    let loaded = lockstep_history::load(&history).unwrap();
    assert_eq!(loaded.runs.len(), TEST_RUNS + BENCH_RUNS + 2);
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
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        json!({"site": site, "screenshots": shots, "playwright": playwright, "chromium": chromium})
            .to_string(),
    )
    .unwrap();
    let driver = dir.path().join("drive.js");
    std::fs::write(&driver, DRIVER).unwrap();
    let out = Command::new("node")
        .arg(&driver)
        .arg(&config)
        .output()
        .expect("node");
    assert!(
        out.status.success(),
        "the browser driver failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();

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
