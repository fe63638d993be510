//! Every machine-readable output validates against its schema under
//! docs/schemas/ (events.json is checked line by line in tests/testsuite/events.rs):
//! the runners' `--json FILE` documents and the queries' bare `--json`,
//! produced by real runs, and the schemas themselves reject what they
//! should.

use crate::common::{assert_schema, check_schema, Env, Project};
use serde_json::Value;

fn parse(bytes: &[u8], what: &str) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|e| {
        panic!(
            "{what}: not JSON ({e}):\n{}",
            String::from_utf8_lossy(bytes)
        )
    })
}

#[test]
fn test_results_match_their_schema() {
    let p = Project::new();
    p.add_suite(&[("good", "11 22 33 44"), ("bad", "11 22 33 45")]);
    p.run(&["test", "s", "--json", "cold.json"], 1);
    let cold = p.json("cold.json");
    assert_schema("test-results.json", &cold);
    assert_eq!(cold["schema"], 1);
    assert_eq!(cold["summary"]["compiles_run"], 1, "{cold:#}");
    // A warm run (cached compile) and stdout as the destination.
    let out = p.run(&["test", "s", "--json", "-", "-q"], 1);
    let warm = parse(&out.stdout, "test --json -");
    assert_schema("test-results.json", &warm);
    assert_eq!(warm["summary"]["compiles_run"], 0, "{warm:#}");
}

#[test]
fn bench_results_match_their_schema() {
    let p = Project::new();
    p.write(
        "cmds.txt",
        "conv -n 1 -c 4 -H 6 -W 6 -k 8 -y 3 -x 3 -F 1\n\
         convfp16 -n 1 -c 4 -H 6 -W 6 -k 8 -y 3 -x 3 -F 4\n",
    );
    p.run(
        &[
            "bench",
            "--commands-file",
            "cmds.txt",
            "--verify",
            "--json",
            "r.json",
        ],
        0,
    );
    let results = p.json("r.json");
    assert_schema("bench-results.json", &results);
    // Every sample is kept, and the median is theirs.
    for row in results["rows"].as_array().expect("rows") {
        let stats = &row["stats"];
        let times: Vec<f64> = stats["times_us"]
            .as_array()
            .expect("times_us")
            .iter()
            .filter_map(|t| t.as_f64())
            .collect();
        assert_eq!(Some(times.len() as u64), stats["samples"].as_u64(), "{row}");
        let mut sorted = times.clone();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len();
        let median = if n % 2 == 1 {
            sorted[n / 2]
        } else {
            (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0
        };
        // The same median, up to rounding (an even count averages two).
        let reported = stats["median"].as_f64().expect("median");
        assert!(
            (reported - median).abs() <= 1e-9 * median.abs().max(1.0),
            "median {reported} vs {median}: {row}"
        );
    }
    assert_eq!(
        results["rows"].as_array().map(Vec::len),
        Some(2),
        "{results:#}"
    );
}

#[test]
fn preprocess_results_match_their_schema() {
    let p = Project::new();
    p.write("a.mlir", crate::common::ADD);
    p.run(
        &[
            "preprocess",
            "a.mlir",
            "-o",
            "out.mlir",
            "--with",
            "cat",
            "--json",
            "r.json",
            "--",
            "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=llvm-cpu",
        ],
        0,
    );
    assert_schema("preprocess-results.json", &p.json("r.json"));
}

#[test]
fn cache_info_and_toolchain_match_their_schemas() {
    let p = Project::new();
    std::fs::create_dir_all(p.cache().join("compile")).unwrap();
    std::fs::write(p.cache().join("compile/not-ours.txt"), "x").unwrap();
    let info = parse(&p.run(&["cache", "info", "--json"], 0).stdout, "cache info");
    assert_schema("cache-info.json", &info);
    assert_eq!(
        info["foreign"].as_array().map(Vec::len),
        Some(1),
        "{info:#}"
    );
    // Installed already by the harness: this only reports it.
    let toolchain = parse(
        &p.run(&["toolchain", "install", "--json"], 0).stdout,
        "toolchain install",
    );
    assert_schema("toolchain.json", &toolchain);
}

#[test]
fn integrate_outputs_match_their_schemas() {
    let env = Env::new(&crate::common::with_break(24));
    let json = |args: &[&str], code: i32| parse(env.ok(args, code).as_bytes(), &args.join(" "));

    assert_schema(
        "integrate-start.json",
        &json(&["integrate", "start", "--json"], 0),
    );
    assert_schema("integrate-status.json", &env.status());
    let dry = json(&["integrate", "next", "--dry-run", "--json"], 0);
    assert_schema("integrate-next.json", &dry);
    assert_eq!(dry["result"], "would_advance", "{dry:#}");
    let next = json(&["integrate", "next", "--no-export", "--json"], 0);
    assert_schema("integrate-next.json", &next);
    assert_eq!(next["result"], "advanced", "{next:#}");
    let export = json(&["integrate", "export", "--json"], 0);
    assert_schema("integrate-export.json", &export);

    let halted = json(&["integrate", "loop", "--json"], 3);
    assert_schema("integrate-loop.json", &halted);
    assert_schema("integrate-status.json", &env.status());
    assert_schema(
        "integrate-report.json",
        &json(&["integrate", "report", "--json"], 0),
    );
    let bisect = json(
        &[
            "integrate",
            "bisect",
            "--good",
            &env.sb.base,
            "--bad",
            &env.sb.head,
            "--json",
            "--",
            "./build_tools/smoke.sh",
        ],
        0,
    );
    assert_schema("integrate-bisect.json", &bisect);
    assert_eq!(bisect["first_bad"]["sha"], env.sb.breaks[0].as_str());
    assert_schema(
        "integrate-abort.json",
        &json(&["integrate", "abort", "--json"], 0),
    );
}

#[test]
fn the_schemas_reject_what_they_should() {
    // A missing required key, a wrong type, a wrong schema version.
    let areas: Vec<Value> = ["compile", "kernels", "preprocess", "downloads", "references", "results", "wheels", "toolchains", "compiler"]
        .iter()
        .map(|name| serde_json::json!({"name": name, "path": format!("/c/{name}"), "entries": 0, "bytes": 0, "enabled": true}))
        .collect();
    let info = serde_json::json!({"schema": 1, "root": "/c", "foreign": [], "areas": areas});
    assert!(check_schema("cache-info.json", &info).is_ok());
    let mut no_areas = info.clone();
    no_areas.as_object_mut().unwrap().remove("areas");
    assert!(check_schema("cache-info.json", &no_areas).is_err());
    let mut text_bytes = info.clone();
    text_bytes["areas"][0]["bytes"] = "0".into();
    assert!(check_schema("cache-info.json", &text_bytes).is_err());
    let mut no_downloads = info.clone();
    no_downloads["areas"].as_array_mut().unwrap().remove(3);
    assert!(check_schema("cache-info.json", &no_downloads).is_err());
    let mut version_two = info;
    version_two["schema"] = 2.into();
    assert!(check_schema("cache-info.json", &version_two).is_err());
    // A tagged output with an unknown tag.
    let next = serde_json::json!({"schema": 1, "result": "exploded"});
    assert!(check_schema("integrate-next.json", &next).is_err());
}
