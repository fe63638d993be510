//! How outputs are chosen on the command line: runners write `--json -` to
//! stdout (one JSON document with `schema`, nothing else on stdout; the
//! human output moves to stderr, as with `--csv -`), `-q`
//! keeps progress off stderr, and in `lockstep bench` options before the
//! MIOpen command word are lockstep's while after it they are MIOpen's
//! (`-q` there is the pad width) (docs/output.md).

mod common;

use common::Project;
use serde_json::Value;

#[test]
fn a_runner_writes_its_json_to_stdout_with_a_dash() {
    let p = Project::new();
    p.add_suite(&[("add", "11 22 33 44")]);
    let out = p.run(&["test", "s", "--json", "-"], 0);
    // Stdout is the document alone; the human summary moved to stderr.
    let doc: Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
    assert_eq!(doc["schema"], 1);
    assert_eq!(doc["summary"]["pass"], 1);
    assert!(String::from_utf8_lossy(&out.stderr).contains("test result: ok."));
    assert!(!p.path().join("-").exists(), "`-` is stdout, not a file");
}

#[test]
fn bench_csv_on_stdout_moves_the_boo_lines_to_stderr() {
    let p = Project::new();
    let out = p.run(
        &[
            "bench", "--csv", "-", "conv", "-n", "1", "-c", "4", "-H", "6", "-W", "6", "-k", "8",
            "-y", "3", "-x", "3", "-F", "1",
        ],
        0,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "a header and one row:\n{stdout}");
    assert!(lines[0].starts_with("arguments,min_time (us),"), "{stdout}");
    assert!(String::from_utf8_lossy(&out.stderr).contains(">>> tensor("));
}

#[test]
fn quiet_keeps_progress_off_stderr_but_not_results() {
    let p = Project::new();
    p.add_suite(&[("add", "11 22 33 44")]);
    let loud = p.run(&["test", "s"], 0);
    assert!(String::from_utf8_lossy(&loud.stderr).contains("1 tests, "));
    let quiet = p.run(&["-q", "test", "s"], 0);
    let stderr = String::from_utf8_lossy(&quiet.stderr);
    assert!(
        !stderr.contains("1 tests, ") && !stderr.contains("[1/1]"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&quiet.stdout).contains("1 pass"));
}

#[test]
fn bench_options_before_the_command_word_are_lockstep_s() {
    let p = Project::new();
    let conv = [
        "conv", "-n", "1", "-c", "4", "-H", "6", "-W", "6", "-k", "8", "-y", "3", "-x", "3", "-F",
        "1",
    ];
    // Before the command word: lockstep's quiet flag.
    let mut args = vec!["bench", "-q", "--json", "quiet.json"];
    args.extend(conv);
    let out = p.run(&args, 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains(">>> tensor("));
    let row = &p.json("quiet.json")["rows"][0];
    assert!(
        row["func_name"].as_str().unwrap().contains("_0x0p_"),
        "{row}"
    );
    // After it: MIOpen's pad width.
    let mut args = vec!["bench", "--json", "pad.json"];
    args.extend(conv);
    args.extend(["-q", "1"]);
    p.run(&args, 0);
    let row = &p.json("pad.json")["rows"][0];
    assert!(
        row["func_name"].as_str().unwrap().contains("_0x1p_"),
        "{row}"
    );
}
