//! `--events FILE|-` on every runner and on integrate: the stream validates
//! against docs/schemas/events.json line by line, starts with
//! `command_started` and ends with `command_finished`, and names every unit
//! of work (test id, kernel function name, executable symbol, probed
//! commit); with `--events -` stdout carries only the stream, and another
//! output on stdout beside it is a usage error.

use crate::common::Project;

use serde_json::Value;

/// Parses a stream and checks every line against the schema and the
/// stream's frame; returns the events.
fn stream(text: &str, command: &str) -> Vec<Value> {
    let events: Vec<Value> = text
        .lines()
        .map(|line| {
            let event: Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
            crate::common::assert_schema("events.json", &event);
            assert_eq!(event["command"], command, "{line}");
            event
        })
        .collect();
    let names: Vec<&str> = events
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(names.first(), Some(&"command_started"), "{names:?}");
    assert_eq!(names.last(), Some(&"command_finished"), "{names:?}");
    events
}

fn named<'a>(events: &'a [Value], name: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event"] == name).collect()
}

#[test]
fn test_events_name_every_test() {
    let p = Project::new();
    p.add_suite(&[("good", "11 22 33 44"), ("bad", "11 22 33 45")]);
    p.run(&["test", "s", "--events", "ev.jsonl", "-j", "2"], 1);
    let events = stream(&p.read("ev.jsonl"), "test");
    let finished = named(&events, "test_finished");
    let mut ids: Vec<&str> = finished.iter().map(|e| e["id"].as_str().unwrap()).collect();
    ids.sort();
    assert_eq!(ids, ["adds/bad [cpu]", "adds/good [cpu]"]);
    let outcome = |id: &str| {
        finished
            .iter()
            .find(|e| e["id"] == id)
            .map(|e| e["outcome"].clone())
            .unwrap()
    };
    assert_eq!(outcome("adds/good [cpu]"), "pass");
    assert_eq!(outcome("adds/bad [cpu]"), "fail");
    assert_eq!(named(&events, "test_started").len(), 2);
    // One compile serves both tests.
    let compiles = named(&events, "compile_started");
    assert_eq!(compiles.len(), 1);
    assert_eq!(compiles[0]["tests"].as_array().unwrap().len(), 2);
    assert_eq!(named(&events, "run_finished")[0]["failed"], true);
    assert_eq!(named(&events, "command_finished")[0]["exit_code"], 1);
}

#[test]
fn bench_events_name_every_kernel_and_stdout_carries_only_the_stream() {
    let p = Project::new();
    let out = p.run(
        &[
            "bench", "--events", "-", "--verify", "conv", "-n", "1", "-c", "4", "-H", "6", "-W",
            "6", "-k", "8", "-y", "3", "-x", "3", "-F", "3",
        ],
        0,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let events = stream(&stdout, "bench");
    let rows = named(&events, "row_finished");
    assert_eq!(rows.len(), 2, "forward and backward data");
    for row in &rows {
        let name = row["row"]["func_name"].as_str().unwrap();
        assert!(name.starts_with("conv_2d_float32_"), "{row}");
        assert_eq!(row["row"]["verify"], "PASS");
        assert!(row["boo_lines"][0].as_str().unwrap().contains(name));
    }
    let compiled = named(&events, "kernel_compiled");
    assert_eq!(compiled.len(), 2);
    assert!(compiled.iter().all(|e| e["func_name"]
        .as_str()
        .unwrap()
        .starts_with("conv_2d_float32_")));
    // The BOO lines moved to stderr.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(">>> tensor(size="), "{stderr}");
}

#[test]
fn preprocess_events_name_every_executable() {
    let p = Project::new();
    let program =
        "func.func @main(%a: tensor<2xf32>, %b: tensor<3xf32>) -> (tensor<2xf32>, tensor<3xf32>) {
  %0 = arith.mulf %a, %a : tensor<2xf32>
  %1 = arith.mulf %b, %b : tensor<3xf32>
  return %0, %1 : tensor<2xf32>, tensor<3xf32>
}
";
    p.write("a.mlir", program);
    let out = p.run(
        &[
            "preprocess",
            "a.mlir",
            "-o",
            "out.mlir",
            "--with",
            "cat",
            "--events",
            "ev.jsonl",
            "--",
            "--iree-hal-target-device=local",
            "--iree-hal-local-target-device-backends=llvm-cpu",
        ],
        0,
    );
    let events = stream(&p.read("ev.jsonl"), "preprocess");
    let started = named(&events, "module_started");
    let count = started[0]["executables"].as_u64().unwrap() as usize;
    assert!(count >= 2, "{started:?}");
    let finished = named(&events, "executable_finished");
    assert_eq!(finished.len(), count);
    assert!(finished
        .iter()
        .all(|e| e["ok"] == true && e["symbol"].as_str().unwrap().contains("dispatch")));
    let phases: Vec<&Value> = named(&events, "phase_started")
        .iter()
        .map(|e| &e["phase"])
        .collect();
    assert_eq!(phases, ["compile-to-executable-sources"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("preprocessed"));
}

#[test]
fn integrate_events_name_every_probed_commit() {
    let env = crate::common::Env::new(&crate::common::with_break(24));
    env.start();
    let out = env.run(&["integrate", "loop", "--events", "-"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let events = stream(&String::from_utf8_lossy(&out.stdout), "integrate loop");
    let started = named(&events, "probe_started");
    // A verdict taken from the store is only finished (`cached`): after an
    // advance the loop asks again for the candidate it stopped at.
    let finished: Vec<&Value> = named(&events, "probe_finished")
        .into_iter()
        .filter(|e| e["cached"] != true)
        .collect();
    assert!(!started.is_empty());
    assert_eq!(started.len(), finished.len());
    for (s, f) in started.iter().zip(&finished) {
        assert_eq!(s["commit"].as_str().unwrap().len(), 40, "{s}");
        assert_eq!(s["commit"], f["commit"]);
    }
    assert!(!named(&events, "advanced").is_empty());
    assert_eq!(named(&events, "command_finished")[0]["exit_code"], 3);
    // The human report of the halt went to stderr.
    assert!(String::from_utf8_lossy(&out.stderr).contains("halted"));
}

#[test]
fn a_second_stdout_output_beside_events_is_a_usage_error() {
    let p = Project::new();
    for args in [
        &["test", "s", "--json", "-", "--events", "-"][..],
        &["bench", "--events", "-", "--csv", "-", "conv"],
        &["bench", "--json", "-", "--csv", "-", "conv"],
        &[
            "preprocess",
            "a.mlir",
            "-o",
            "-",
            "--with",
            "cat",
            "--events",
            "-",
        ],
        &["cache", "info", "--json", "--events", "-"],
        &["integrate", "status", "--json", "--events", "-"],
    ] {
        let out = p.run(args, 2);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("cannot both write to standard output"),
            "{args:?}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{args:?}");
    }
    // An events file that cannot be opened is a usage error too.
    let out = p.run(&["cache", "info", "--events", "no/such/dir/ev.jsonl"], 2);
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("the directory no/such/dir of --events no/such/dir/ev.jsonl does not exist"));
}

#[test]
fn query_commands_stream_events_and_errors_end_the_stream() {
    let p = Project::new();
    let out = p.run(&["cache", "info", "--events", "-"], 0);
    let events = stream(&String::from_utf8_lossy(&out.stdout), "cache info");
    assert_eq!(events.len(), 2, "{events:?}");
    // An error is an event before command_finished.
    let out = p.run(&["test", "no-such-suite", "--events", "-"], 2);
    let events = stream(&String::from_utf8_lossy(&out.stdout), "test");
    let error = named(&events, "error");
    assert_eq!(error.len(), 1);
    assert_eq!(error[0]["exit_code"], 2);
    assert!(String::from_utf8_lossy(&out.stderr).contains("error:"));
}

#[test]
fn the_schema_rejects_incomplete_or_unknown_events() {
    let valid = |v: Value| crate::common::check_schema("events.json", &v).is_ok();
    let time = "2026-11-24T03:18:19.275Z";
    let line = |event: &str, extra: Value| {
        let mut v =
            serde_json::json!({"schema": 1, "command": "test", "event": event, "time": time});
        v.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        v
    };
    assert!(valid(line("note", serde_json::json!({"message": "hi"}))));
    assert!(
        !valid(line("note", serde_json::json!({}))),
        "message missing"
    );
    assert!(!valid(line(
        "test_finished",
        serde_json::json!({"id": "x"})
    )));
    assert!(!valid(line("no_such_event", serde_json::json!({}))));
    let mut bad_time = line("note", serde_json::json!({"message": "hi"}));
    bad_time["time"] = "2026-11-24 03:18".into();
    assert!(!valid(bad_time));
    let mut bad_schema = line("note", serde_json::json!({"message": "hi"}));
    bad_schema["schema"] = 2.into();
    assert!(!valid(bad_schema));
}
