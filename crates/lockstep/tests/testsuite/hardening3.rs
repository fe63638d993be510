//! The third hardening round (issue 29) at the command line: inputs stay
//! inputs, reads that cannot block, checks before the first side effect,
//! terminal-safe output. Each case failed before its fix.

use std::path::Path;
use std::process::{Command, Output};

use crate::common::*;

/// `lockstep ARGS` in `cwd` with a home and cache of its own (no IREE).
fn bare(cwd: &Path, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockstep"));
    cmd.args(args).current_dir(cwd);
    isolate(&mut cmd, &cwd.join(".home"), &cwd.join(".cache"));
    cmd.output().expect("run lockstep")
}

#[test]
fn events_never_overwrite_a_history_run_or_a_compare_input() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    write(&cwd.join("h/bench-b0.json"), "{\"keep\":1}\n");
    write(&cwd.join("h/x.json"), "{\"a\":1}\n");
    write(&cwd.join("h/y.json"), "{\"a\":2}\n");
    write(&cwd.join("base.json"), "{\"rows\":[]}\n");
    for args in [
        &["--events", "h/bench-b0.json", "history", "list", "h"][..],
        &["--events", "h/new.json", "history", "list", "h"][..],
        &[
            "--events", "h/x.json", "bench", "compare", "h/x.json", "h/y.json",
        ][..],
        &[
            "--events",
            "h/new.json",
            "bench",
            "compare",
            "base.json",
            "h@latest",
        ][..],
        &[
            "--events",
            "h/new.json",
            "report",
            "site",
            "--history",
            "h",
            "--out",
            "site",
        ][..],
        &[
            "--events",
            "h/new.json",
            "history",
            "import",
            "base.json",
            "--to",
            "h",
        ][..],
    ] {
        let out = bare(cwd, args);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--events"), "{err}");
    }
    assert_eq!(
        std::fs::read_to_string(cwd.join("h/bench-b0.json")).unwrap(),
        "{\"keep\":1}\n"
    );
    assert_eq!(
        std::fs::read_to_string(cwd.join("h/x.json")).unwrap(),
        "{\"a\":1}\n"
    );
    assert!(!cwd.join("h/new.json").exists());
    assert!(!cwd.join("site").exists());
}

#[test]
fn a_fifo_a_writer_keeps_open_ends_the_compare_instead_of_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    write(&cwd.join("base.json"), "{\"rows\":[]}\n");
    let fifo = cwd.join("new.fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    // A writer that holds the FIFO open after half a document (opened
    // read-write: the bytes wait in the FIFO before lockstep starts).
    let writer = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(&fifo)
        .unwrap();
    std::io::Write::write_all(&mut &writer, b"{\"rows\"").unwrap();
    let out = bare(cwd, &["bench", "compare", "base.json", "new.fifo"]);
    drop(writer);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("wrote nothing more"), "{err}");
}

/// A test-results document of one timed benchmark step per `(id, ms)`.
fn timed_tests(tests: &[(&str, f64)]) -> String {
    let tests: Vec<serde_json::Value> = tests
        .iter()
        .map(|(id, ms)| {
            serde_json::json!({"id": id, "steps": [
                {"kind": "benchmark", "status": "passed", "metrics": {"time_ms": ms}}
            ]})
        })
        .collect();
    serde_json::json!({"schema": 1, "tests": tests}).to_string()
}

#[test]
fn untrusted_text_reaches_the_terminal_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let evil = "t\u{1b}[2J\u{1b}]0;owned\u{7}\rx";
    write(
        &cwd.join("a.json"),
        &timed_tests(&[(evil, 1.0), ("plain", 1.0)]),
    );
    write(
        &cwd.join("b.json"),
        &timed_tests(&[(evil, 9.0), ("plain", 1.0)]),
    );
    let out = bare(cwd, &["bench", "compare", "a.json", "b.json"]);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{7}') && !text.contains('\r'),
        "{text:?}"
    );
    assert!(text.contains("t\\u{1b}[2J"), "{text}");
}

#[test]
fn a_history_file_whose_name_is_not_utf8_is_listed_as_skipped() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    std::fs::create_dir_all(cwd.join("h")).unwrap();
    let name = std::ffi::OsStr::from_bytes(b"bad-\xff\x1b[2J.json");
    std::fs::write(cwd.join("h").join(name), "{}").unwrap();
    let out = bare(cwd, &["history", "list", "h", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let skipped = listed["skipped"].as_array().expect("skipped");
    assert_eq!(skipped.len(), 1, "{listed}");
    assert!(
        skipped[0]["path"]
            .as_str()
            .unwrap()
            .contains("bad-\u{fffd}"),
        "{listed}"
    );
    assert!(!stderr(&out).contains('\u{1b}'), "{}", stderr(&out));
    let out = bare(cwd, &["history", "list", "h"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!stderr(&out).contains('\u{1b}') && !stdout(&out).contains('\u{1b}'));
}

#[test]
fn a_committed_link_at_pyproject_toml_is_named_as_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("proj");
    lockstep_sandbox::packages::create(&cwd, "1.0.0", "").expect("fixture");
    std::fs::remove_file(cwd.join("pure/pyproject.toml")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", cwd.join("pure/pyproject.toml")).unwrap();
    commit_as_tester(&cwd, "A link", true);
    let out = bare(&cwd, &["pkg", "build", "--out", "wh"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("pure/pyproject.toml is a symbolic link"),
        "{err}"
    );
    assert!(!cwd.join("wh").exists());
}

#[test]
fn stamped_versions_must_be_written_in_normal_form() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().join("proj");
    lockstep_sandbox::packages::create(&cwd, "1.0.0", "").expect("fixture");
    for bad in ["1.0.0-rc1", "1.0.0rc1 ", "1.0.0\n"] {
        let out = bare(&cwd, &["pkg", "build", "--out", "wh", "--version", bad]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {err}");
        assert!(err.contains("normal form"), "{err}");
        assert!(!cwd.join("wh").exists());
    }
}

#[test]
fn a_token_with_a_line_break_and_a_missing_git_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    let out = {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockstep"));
        cmd.args([
            "pkg", "fetch", "--repo", "o/r", "--run", "1", "--out", "got",
        ])
        .current_dir(cwd);
        isolate(&mut cmd, &cwd.join(".home"), &cwd.join(".cache"));
        cmd.env("GITHUB_API_URL", "http://127.0.0.1:9")
            .env("GITHUB_TOKEN", "ghp_abc\r\nX-Injected: 1");
        cmd.output().unwrap()
    };
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("$GITHUB_TOKEN holds a line break"), "{err}");
    assert!(!err.contains("ghp_abc"), "{err}");

    // No git on PATH: said as such, not as a missing repository.
    write(&cwd.join("lockstep.toml"), "");
    let empty = cwd.join("empty-path");
    std::fs::create_dir_all(&empty).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockstep"));
    cmd.args(["integrate", "status"]).current_dir(cwd);
    isolate(&mut cmd, &cwd.join(".home"), &cwd.join(".cache"));
    let out = cmd.env("PATH", &empty).output().unwrap();
    let err = stderr(&out);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("cannot run git"), "{err}");
    assert!(err.contains("install git"), "{err}");
    assert!(!err.contains("not inside a git work tree"), "{err}");
}

#[test]
fn a_results_file_named_explicitly_has_the_bound_of_a_history_run() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    write(&cwd.join("base.json"), "{\"rows\":[]}\n");
    // Sparse: 73 MB on paper, nothing on disk; refused before it is read.
    let big = std::fs::File::create(cwd.join("big.json")).unwrap();
    big.set_len(73_000_000).unwrap();
    let out = bare(cwd, &["bench", "compare", "base.json", "big.json"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("larger than 67108864 bytes"), "{err}");
}
