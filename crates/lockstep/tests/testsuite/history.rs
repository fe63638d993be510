//! The results history end to end with the real `lockstep` binary
//! (docs/history.md): `--record DIR` and `[history] dir` on `test`, `bench`
//! and `integrate loop` with the real IREE tools and a real integrate
//! sandbox, every written run checked against docs/schemas/history-run.json;
//! `history import` of earlier `--json` files; `history list` over a
//! directory holding bad files.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{assert_schema, expect, git, iree_bin, stderr, stdout, Project};
use serde_json::Value;

/// A small convolution (timed 3 times).
const SMALL: &str = "conv -n 1 -c 4 -H 8 -W 8 -k 4 -y 3 -x 3 -p 1 -q 1 -i 3";
/// An upstream commit the fixtures pin.
const LLVM: &str = "0123456789abcdef0123456789abcdef01234567";
const LLVM_FILE: &str = "89abcdef0123456789abcdef0123456789abcdef";

/// `lockstep ARGS` in the project, outside any CI run (the tests' own CI
/// must not name the runs).
fn cmd(p: &Project, args: &[&str]) -> Command {
    let mut cmd = p.cmd(args);
    for var in [
        "GITHUB_RUN_ID",
        "GITHUB_RUN_ATTEMPT",
        "GITHUB_JOB",
        "RUNNER_NAME",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

fn run(p: &Project, args: &[&str], code: i32) -> (String, String) {
    let out = expect(&mut cmd(p, args), code);
    (stdout(&out), stderr(&out))
}

/// The `*.json` files of `dir`, by name (none when it does not exist).
fn files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|e| e.unwrap().path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    files.sort();
    files
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The runs of `dir`, each checked against the schema and its file name.
fn runs(dir: &Path) -> Vec<Value> {
    files(dir)
        .iter()
        .map(|path| {
            let run = read_json(path);
            assert_schema("history-run.json", &run);
            let name = format!(
                "{}-{}.json",
                run["kind"].as_str().unwrap(),
                run["id"].as_str().unwrap()
            );
            assert_eq!(path.file_name().unwrap().to_string_lossy(), name);
            run
        })
        .collect()
}

/// A project in a git repository whose HEAD pins an LLVM submodule and a
/// `[release]` pin file, with a suite `s` of one test (passing or not).
fn project_in_git(passing: bool) -> Project {
    let p = Project::new();
    p.add_suite(&[(
        "add",
        if passing {
            "11 22 33 44"
        } else {
            "11 22 33 45"
        },
    )]);
    p.write(
        "lockstep.toml",
        "[release]\npin-files = [\"llvm.version\"]\n",
    );
    p.write("llvm.version", &format!("{LLVM_FILE}\n"));
    let dir = p.path();
    git(&dir, &["init", "-q", "-b", "main"]);
    git(&dir, &["add", "-A"]);
    // A submodule that is not checked out: its gitlink and an empty directory.
    std::fs::create_dir_all(dir.join("third_party/llvm-project")).unwrap();
    git(
        &dir,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{LLVM},third_party/llvm-project"),
        ],
    );
    crate::common::commit_as_tester(&dir, "the project", false);
    p
}

#[test]
fn test_record_writes_one_valid_run_per_run_with_commit_pins_and_machine() {
    let p = project_in_git(true);
    let head = git(&p.path(), &["rev-parse", "HEAD"]);
    let (_, err) = run(
        &p,
        &["test", "s", "--record", "history", "--json", "out.json"],
        0,
    );
    assert!(err.contains("recorded "), "{err}");
    let history = p.path().join("history");
    let found = runs(&history);
    assert_eq!(found.len(), 1);
    let r = &found[0];
    assert_eq!(r["kind"], "test");
    assert_eq!(r["source"]["commit"], head.as_str());
    assert_eq!(r["source"]["branch"], "main");
    // The untracked history and out.json do not make the tree dirty.
    assert_eq!(r["source"]["dirty"], false);
    assert_eq!(r["pins"]["third_party/llvm-project"], LLVM);
    assert_eq!(r["pins"]["llvm.version"], LLVM_FILE);
    assert!(r["machine"]["cores"].as_u64().unwrap() >= 1);
    assert!(!r["machine"]["cpu"].as_str().unwrap().is_empty());
    assert!(r["machine"]["os"].as_str().unwrap().starts_with("linux-"));
    let id = r["id"].as_str().unwrap();
    assert_eq!(id.len(), "20250101T000000Z-".len() + 8, "{id}");
    assert!(r["started"].as_str() <= r["finished"].as_str());
    // `results` is the --json document, exactly.
    assert_eq!(r["results"], p.json("out.json"));
    assert_schema("test-results.json", &r["results"]);
    assert_eq!(r["toolchain"], r["results"]["summary"]["compiler_identity"]);

    // A second run (in CI) is a second file; nothing is replaced.
    let mut second = cmd(&p, &["test", "s", "--record", "history"]);
    second
        .env("GITHUB_RUN_ID", "77")
        .env("GITHUB_RUN_ATTEMPT", "2")
        .env("GITHUB_JOB", "test")
        .env("RUNNER_NAME", "runner-9");
    expect(&mut second, 0);
    let found = runs(&history);
    assert_eq!(found.len(), 2);
    let ci = found
        .iter()
        .find(|r| r["id"] != id)
        .expect("the second run");
    assert!(
        ci["id"].as_str().unwrap().contains("Z-77-2-test-"),
        "{}",
        ci["id"]
    );
    assert_eq!(ci["machine"]["host"], "runner-9");
}

#[test]
fn a_failing_test_run_is_recorded_outside_git_too() {
    let p = Project::new();
    p.add_suite(&[("wrong", "11 22 33 45")]);
    run(&p, &["test", "s", "--record", "history"], 1);
    let found = runs(&p.path().join("history"));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["results"]["summary"]["failed"], true);
    assert_eq!(found[0]["results"]["summary"]["fail"], 1);
    assert_eq!(found[0]["source"]["commit"], Value::Null);
    assert_eq!(found[0]["pins"], serde_json::json!({}));
}

#[test]
fn bench_record_keeps_every_sample() {
    let p = Project::new();
    let tools = iree_bin().display().to_string();
    let mut args = vec![
        "bench",
        "--iree-bin",
        &tools,
        "--record",
        "history",
        "--json",
        "b.json",
    ];
    args.extend(SMALL.split_whitespace());
    run(&p, &args, 0);
    let found = runs(&p.path().join("history"));
    assert_eq!(found.len(), 1);
    let r = &found[0];
    assert_eq!(r["kind"], "bench");
    assert_eq!(r["results"], p.json("b.json"));
    assert_schema("bench-results.json", &r["results"]);
    assert!(r["toolchain"].as_str().is_some_and(|t| !t.is_empty()));
    let samples = r["results"]["rows"][0]["stats"]["times_us"]
        .as_array()
        .expect("every sample");
    assert!(samples.len() >= 3, "{samples:?}");
    assert!(samples.iter().all(|s| s.as_f64().is_some_and(|t| t > 0.0)));
}

#[test]
fn the_history_dir_of_lockstep_toml_records_and_no_record_skips() {
    let p = Project::new();
    p.add_suite(&[("add", "11 22 33 44")]);
    p.write("lockstep.toml", "[history]\ndir = \"hist\"\n");
    // Relative to lockstep.toml's directory, not to where lockstep runs.
    let sub = p.path().join("sub");
    std::fs::create_dir_all(&sub).unwrap();
    let mut from_sub = cmd(&p, &["test", "../s"]);
    from_sub.current_dir(&sub);
    expect(&mut from_sub, 0);
    let hist = p.path().join("hist");
    assert_eq!(runs(&hist).len(), 1);
    assert!(!sub.join("hist").exists());
    run(&p, &["test", "s", "--no-record"], 0);
    assert_eq!(runs(&hist).len(), 1);
    // The flag wins over the table.
    run(&p, &["test", "s", "--record", "other"], 0);
    assert_eq!(runs(&hist).len(), 1);
    assert_eq!(runs(&p.path().join("other")).len(), 1);
    let (_, err) = run(&p, &["test", "s", "--record", "x", "--no-record"], 2);
    assert!(err.contains("--no-record"), "{err}");
}

#[test]
fn a_record_dir_that_is_a_file_or_an_input_is_a_usage_error_before_anything_runs() {
    let p = Project::new();
    p.add_suite(&[("add", "11 22 33 44")]);
    p.write("notdir", "a file\n");
    for (dir, says) in [
        ("notdir", "is not a directory"),
        ("s", "is the suite directory"),
        ("s/deeper", "is inside the suite directory"),
        (".", "lockstep.toml's directory"),
    ] {
        let (out, err) = run(&p, &["test", "s", "--record", dir, "--json", "r.json"], 2);
        assert!(err.contains(says), "{dir}: {err}");
        assert!(!out.contains("passed"), "{out}");
        assert!(!p.path().join("r.json").exists(), "nothing ran");
    }
    assert!(!p.path().join("s/deeper").exists());
    assert_eq!(p.read("notdir"), "a file\n");
    let tools = iree_bin().display().to_string();
    let mut args = vec![
        "bench",
        "--iree-bin",
        &tools,
        "--record",
        "notdir",
        "--json",
        "b.json",
    ];
    args.extend(SMALL.split_whitespace());
    let (_, err) = run(&p, &args, 2);
    assert!(err.contains("--record notdir is not a directory"), "{err}");
    assert!(!p.path().join("b.json").exists());
}

#[test]
fn integrate_loop_records_its_halt() {
    let env = crate::common::Env::new(&crate::common::with_break(8));
    env.start();
    let head = git(env.sp(), &["rev-parse", "HEAD"]);
    let pin = git(
        env.sp(),
        &["rev-parse", &format!("HEAD:{}", env.sb.submodule_path)],
    );
    let history = env.dir.path().join("history");
    let out = env
        .cmd(&["integrate", "loop", "--json", "--record"])
        .arg(&history)
        .env_remove("GITHUB_RUN_ID")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let found = runs(&history);
    assert_eq!(found.len(), 1);
    let r = &found[0];
    assert_eq!(r["kind"], "integrate");
    assert_eq!(r["toolchain"], Value::Null);
    assert_eq!(r["results"]["end"]["result"], "halted");
    assert_eq!(
        r["results"],
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    );
    // The source and pins are those the loop started from.
    assert_eq!(r["source"]["commit"], head.as_str());
    assert_eq!(r["pins"][env.sb.submodule_path.as_str()], pin.as_str());
}

#[test]
fn import_converts_results_files_once_and_refuses_foreign_ones() {
    let p = Project::new();
    p.add_suite(&[("add", "11 22 33 44")]);
    run(&p, &["test", "s", "--json", "t.json"], 0);
    let tools = iree_bin().display().to_string();
    let mut args = vec!["bench", "--iree-bin", &tools, "--json", "b.json"];
    args.extend(SMALL.split_whitespace());
    run(&p, &args, 0);
    p.write("foreign.json", "{\"hello\": [1, 2]}\n");
    let to = p.path().join("imported");

    let (_, err) = run(
        &p,
        &[
            "history",
            "import",
            "t.json",
            "b.json",
            "foreign.json",
            "--to",
            "imported",
        ],
        2,
    );
    assert!(err.contains("foreign.json"), "{err}");
    assert!(files(&to).is_empty(), "nothing is written for any file");

    let import = [
        "history",
        "import",
        "t.json",
        "b.json",
        "--to",
        "imported",
        "--commit",
        "ABCDEF12",
        "--toolchain",
        "tc-1",
    ];
    let (out, _) = run(&p, &import, 0);
    assert_eq!(out.matches("imported ").count(), 2, "{out}");
    let found = runs(&to);
    assert_eq!(found.len(), 2);
    let test = found.iter().find(|r| r["kind"] == "test").unwrap();
    let bench = found.iter().find(|r| r["kind"] == "bench").unwrap();
    assert_eq!(test["results"], p.json("t.json"));
    assert_eq!(bench["results"], p.json("b.json"));
    for r in [test, bench] {
        assert_eq!(r["source"]["commit"], "abcdef12");
        assert_eq!(r["toolchain"], "tc-1");
        assert_eq!(r["machine"]["cpu"], "unknown");
    }

    // Again (and a copy of one file): already there, nothing written.
    std::fs::copy(p.path().join("t.json"), p.path().join("t-copy.json")).unwrap();
    let (out, _) = run(
        &p,
        &[
            "history",
            "import",
            "t.json",
            "b.json",
            "t-copy.json",
            "--to",
            "imported",
        ],
        0,
    );
    assert_eq!(out.matches("already in the history").count(), 3, "{out}");
    assert_eq!(files(&to).len(), 2);
}

/// scripts/bench-all's JSON (a lockstep-speed document) is imported as a
/// `speed` run, listed with its rows over target, and the report site shows
/// the latest table beside the run before.
#[test]
fn bench_all_tables_import_as_speed_runs_the_site_shows() {
    let p = Project::new();
    let table = |ratio: f64| {
        serde_json::json!({"schema": 1, "document": "lockstep-speed", "rows": [
            {"command": "lockstep integrate status (repeated)", "work": "382 commits of a real upstream",
             "lockstep_s": 0.017 * ratio, "reference": "git log --format -- PATH", "reference_s": 0.017,
             "ratio": ratio, "target": "<= 1.1"},
            {"command": "lockstep bench --verify (warm)", "work": "the embedded commands",
             "lockstep_s": 0.3, "reference": "lockstep cold", "reference_s": 2.9, "ratio": 0.103, "target": "<= 0.05"}]})
        .to_string()
    };
    // A speed document without its rows, or with rows that are not a
    // list, is no results document: exit 2 naming it, nothing written.
    p.write(
        "rowless.json",
        "{\"schema\": 1, \"document\": \"lockstep-speed\"}\n",
    );
    p.write(
        "rows-text.json",
        "{\"schema\": 1, \"document\": \"lockstep-speed\", \"rows\": \"x\"}\n",
    );
    for bad in ["rowless.json", "rows-text.json"] {
        let (_, err) = run(&p, &["history", "import", bad, "--to", "h"], 2);
        assert!(err.contains(bad), "{err}");
    }
    assert!(files(&p.path().join("h")).is_empty());
    p.write("before.json", &table(1.7));
    let (out, _) = run(&p, &["history", "import", "before.json", "--to", "h"], 0);
    assert!(out.contains("imported"), "{out}");
    // Later, so the site's latest is `after`.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    p.write("after.json", &table(0.8));
    run(&p, &["history", "import", "after.json", "--to", "h"], 0);
    let found = runs(&p.path().join("h"));
    assert_eq!(found.len(), 2);
    assert!(found.iter().all(|r| r["kind"] == "speed"), "{found:?}");
    let (list, _) = run(&p, &["history", "list", "h"], 0);
    assert_eq!(
        list.matches("2 benchmark rows, 1 over target").count(),
        1,
        "{list}"
    );
    assert_eq!(
        list.matches("2 benchmark rows, 2 over target").count(),
        1,
        "{list}"
    );
    run(
        &p,
        &["report", "site", "--history", "h", "--out", "site"],
        0,
    );
    let html = std::fs::read_to_string(p.path().join("site/speed.html")).unwrap();
    assert!(html.contains("The latest of 2 speed runs"), "{html}");
    assert!(
        html.contains("<td class=\"n\">0.80</td><td>&lt;= 1.1</td><td class=\"n\">1.70</td>"),
        "{html}"
    );
    assert!(html.contains("1 row over its target"), "{html}");
}

#[test]
fn list_names_every_bad_file_and_exits_0() {
    let p = Project::new();
    p.write("lockstep.toml", "[history]\ndir = \"h\"\n");
    p.write(
        "bench.json",
        "{\"schema\": 1, \"rows\": [{\"status\": \"ok\"}]}\n",
    );
    p.write(
        "test.json",
        "{\"schema\": 1, \"summary\": {\"pass\": 3, \"fail\": 1, \"failed\": true}, \"tests\": []}\n",
    );
    run(
        &p,
        &[
            "history",
            "import",
            "bench.json",
            "test.json",
            "--to",
            "h",
            "--commit",
            LLVM,
        ],
        0,
    );
    let h = p.path().join("h");
    let good = files(&h);
    assert_eq!(good.len(), 2);
    let text = std::fs::read_to_string(&good[0]).unwrap();
    p.write("h/truncated.json", &text[..text.len() / 2]);
    p.write("h/foreign.json", "{\"hello\": 1}\n");
    let mut newer = read_json(&good[0]);
    newer["schema"] = 2.into();
    newer["id"] = "20990101T000000Z-00000000".into();
    p.write("h/newer.json", &newer.to_string());
    std::fs::copy(&good[1], h.join("zz-copy.json")).unwrap();

    let (out, err) = run(&p, &["history", "list"], 0);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(out.contains("1 kernel"), "{out}");
    assert!(out.contains("3 passed, 1 failed"), "{out}");
    assert!(out.contains(&LLVM[..12]), "{out}");
    for (name, why) in [
        ("truncated.json", "not JSON"),
        ("foreign.json", "not a lockstep history run"),
        ("newer.json", "newer lockstep"),
        ("zz-copy.json", "already in the history"),
    ] {
        let line = err
            .lines()
            .find(|l| l.contains(name))
            .unwrap_or_else(|| panic!("{name} not named: {err}"));
        assert!(line.contains(why), "{line}");
    }

    let (out, _) = run(&p, &["history", "list", "h", "--json"], 0);
    let listed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(listed["schema"], 1);
    assert_eq!(listed["runs"].as_array().unwrap().len(), 2);
    let skipped = listed["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 4);
    assert!(skipped
        .iter()
        .all(|s| s["path"].is_string() && s["reason"].is_string()));

    // A directory that is not there is a usage error.
    let (_, err) = run(&p, &["history", "list", "missing"], 2);
    assert!(err.contains("missing"), "{err}");
}
