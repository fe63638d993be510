//! Bad suites are refused before any compile, naming the file, the test and
//! the value; suite discovery follows each directory once, so symbolic link
//! loops end (with a warning naming the skipped link) instead of hanging or
//! listing tests many times (docs/test.md, docs/reliability.md).

use crate::common::{stderr, stdout, Project, ADD};

/// A suite whose one test has `extra` lines added.
fn suite_with(p: &Project, name: &str, extra: &str) {
    p.write("s/add.mlir", ADD);
    p.write(
        "s/bad.suite.toml",
        &format!(
            "[[test]]\nname = {name}\nsource = \"add.mlir\"\nfunction = \"main\"\n\
             inputs = [\"4xf32=1\", \"4xf32=2\"]\noutputs = [\"4xf32=3\"]\n{extra}"
        ),
    );
}

#[test]
fn bad_values_are_refused_with_file_test_and_value() {
    let cases = [
        (
            "\"add\"",
            "tolerance = nan",
            "`tolerance = NaN` must be a finite number",
        ),
        (
            "\"add\"",
            "tolerance = inf",
            "`tolerance = inf` must be a finite number",
        ),
        (
            "\"add\"",
            "tolerance = -1.0",
            "`tolerance = -1` must be a finite number",
        ),
        (
            "\"add\"",
            "[test.benchmark]\ntime-ms = -2.0",
            "`benchmark.time-ms = -2`",
        ),
        (
            "\"add\"",
            "[test.benchmark]\ntime-ms = 2.0\ntolerance = 0.5",
            "must be at least 1",
        ),
        ("\"\"", "", "invalid test name \"\""),
        ("\"   \"", "", "it is empty"),
        ("\"a\\nb\"", "", "control character"),
        ("\"../x\"", "", "`..`"),
        ("\"a/b\"", "", "`/`"),
        (&format!("\"{}\"", "n".repeat(300)), "", "at most 128"),
        (
            "\"add\"",
            "markers = [\"and\"]",
            "marker \"and\" of test `add`",
        ),
        ("\"add\"", "markers = [\"(\"]", "can never be selected"),
        (
            "\"add\"",
            "[test.targets.cpu-snyc]\nrun-flags = []",
            "target `cpu-snyc`, which does not exist (did you mean `cpu-sync`?)",
        ),
    ];
    for (name, extra, needle) in cases {
        let p = Project::new();
        suite_with(&p, name, extra);
        let out = p.run(&["test", "s", "--list"], 2);
        let err = stderr(&out);
        assert!(err.contains(needle), "{name} {extra}: {err}");
        assert!(
            err.contains("bad.suite.toml"),
            "{name} {extra}: names the file: {err}"
        );
        assert!(!err.contains('\u{1b}'), "no raw control characters");
    }
}

#[test]
fn a_source_that_is_not_a_file_says_what_it_is() {
    let p = Project::new();
    std::fs::create_dir_all(p.path().join("s/dir.mlir")).unwrap();
    p.write(
        "s/x.suite.toml",
        "[[test]]\nname = \"a\"\nsource = \"dir.mlir\"\nfunction = \"main\"\n",
    );
    let out = p.run(&["test", "s"], 1);
    assert!(
        stdout(&out).contains("is a directory") || stderr(&out).contains("is a directory"),
        "{}",
        stderr(&out)
    );
    let out = p.run(&["test", "--suite-config", "/dev/zero", "s", "--list"], 2);
    assert!(
        stderr(&out).contains("/dev/zero is larger than"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_json5_config_named_json_is_read_with_a_note() {
    let p = Project::new();
    p.add_suite(&[("add", "11 22 33 44")]);
    p.write(
        "c.json",
        "// JSON5\n{config_name: 'cpu', iree_compile_flags: [],}\n",
    );
    let out = p.run(&["test", "--suite-config", "c.json", "s", "--list"], 0);
    assert!(
        stderr(&out).contains("c.json is JSON5, not JSON"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn symbolic_link_loops_end_and_list_each_test_once() {
    let p = Project::new();
    p.add_suite(&[("add", "11 22 33 44")]);
    std::os::unix::fs::symlink(".", p.path().join("s/a")).unwrap();
    std::os::unix::fs::symlink(".", p.path().join("s/b")).unwrap();
    std::os::unix::fs::symlink("..", p.path().join("s/up")).unwrap();
    let out = p.run(&["test", "s", "--list"], 0);
    let listed = stdout(&out);
    assert_eq!(listed.matches("add [cpu]").count(), 1, "{listed}");
    let err = stderr(&out);
    assert!(err.contains("skipped") && err.contains("s/a"), "{err}");
    // /proc/self (links to / among them) ends too.
    p.write("lockstep.toml", "[test]\npaths = [\"/proc/self/fd\"]\n");
    let out = crate::common::output(&mut p.cmd(&["test", "--list"]));
    assert!(matches!(out.status.code(), Some(0..=2)), "{}", stderr(&out));
}
