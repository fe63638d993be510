//! The command-line surface, pinned by snapshots: help texts and the shape of
//! error reports. A change here is a change users see.

mod common;

use common::Project;

/// `lockstep ARGS` in a fresh project: its exit code, stdout and stderr.
fn lockstep(p: &Project, args: &[&str]) -> (i32, String, String) {
    let out = common::output(p.cmd(args).env("NO_COLOR", "1"));
    (
        out.status.code().unwrap_or(-1),
        common::stdout(&out),
        common::stderr(&out),
    )
}

#[test]
fn top_level_help() {
    let (code, stdout, _) = lockstep(&Project::new(), &["--help"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!(stdout);
}

#[test]
fn integrate_help() {
    let (code, stdout, _) = lockstep(&Project::new(), &["integrate", "--help"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!(stdout);
}

#[test]
fn loop_help() {
    let (code, stdout, _) = lockstep(&Project::new(), &["integrate", "loop", "--help"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!(stdout);
}

#[test]
fn unknown_config_key_names_file_line_and_key() {
    let p = Project::new();
    p.write(
        "lockstep.toml",
        "[integrate]\nsubmodule = \"deps/llvm\"\nsmoke-timout = \"2h\"\n",
    );
    let (code, _, stderr) = lockstep(&p, &["integrate", "status"]);
    assert_eq!(code, 2);
    let stderr = stderr.replace(&p.path().display().to_string(), "[DIR]");
    insta::assert_snapshot!(stderr);
}

#[test]
fn outside_a_repository_is_a_usage_error_with_a_hint() {
    let (code, _, stderr) = lockstep(&Project::new(), &["integrate", "status"]);
    assert_eq!(code, 2);
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains("hint: "), "{stderr}");
}

/// The README's first command: the whole demo, end to end, with the real
/// tools (provisioned on first use) and a cache of its own.
#[test]
fn demo_runs_end_to_end() {
    let p = Project::new();
    let demo = p.root().join("demo");
    let out = common::output(p.cmd(&["demo", "--dir"]).arg(&demo));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("halts: 3 (3 expected culprits named exactly: yes)"),
        "{stdout}"
    );
    assert!(stdout.contains("24 tests: 24 pass, 0 fail"), "{stdout}");
    assert!(
        stdout.contains("PASS") && !stdout.contains("FAIL ("),
        "{stdout}"
    );
}
