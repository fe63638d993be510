//! The command-line surface, pinned by snapshots: help texts and the shape of
//! error reports. A change here is a change users see.

use std::process::Command;

fn lockstep(args: &[&str], cwd: &std::path::Path) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(args)
        .current_dir(cwd)
        .env("NO_COLOR", "1")
        .output()
        .expect("run lockstep");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn top_level_help() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, _) = lockstep(&["--help"], dir.path());
    assert_eq!(code, 0);
    insta::assert_snapshot!(stdout);
}

#[test]
fn integrate_help() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, _) = lockstep(&["integrate", "--help"], dir.path());
    assert_eq!(code, 0);
    insta::assert_snapshot!(stdout);
}

#[test]
fn loop_help() {
    let dir = tempfile::tempdir().unwrap();
    let (code, stdout, _) = lockstep(&["integrate", "loop", "--help"], dir.path());
    assert_eq!(code, 0);
    insta::assert_snapshot!(stdout);
}

#[test]
fn unknown_config_key_names_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("lockstep.toml"),
        "[integrate]\nsubmodule = \"deps/llvm\"\nsmoke-timout = \"2h\"\n",
    )
    .unwrap();
    let (code, _, stderr) = lockstep(&["integrate", "status"], dir.path());
    assert_eq!(code, 2);
    let stderr = stderr.replace(&dir.path().display().to_string(), "[DIR]");
    insta::assert_snapshot!(stderr);
}

#[test]
fn outside_a_repository_is_a_usage_error_with_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let (code, _, stderr) = lockstep(&["integrate", "status"], dir.path());
    assert_eq!(code, 2);
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains("hint: "), "{stderr}");
}
