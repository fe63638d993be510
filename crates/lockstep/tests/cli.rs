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

/// The README's first command: the whole demo, end to end, with the real
/// tools (provisioned on first use) and a cache of its own.
#[test]
fn demo_runs_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let toolchains = std::env::var_os("LOCKSTEP_TOOLCHAINS").unwrap_or_else(|| {
        std::path::Path::new(&std::env::var_os("HOME").expect("HOME"))
            .join(".cache/lockstep/toolchains")
            .into_os_string()
    });
    let out = Command::new(env!("CARGO_BIN_EXE_lockstep"))
        .args(["demo", "--dir"])
        .arg(dir.path().join("demo"))
        .current_dir(dir.path())
        .env("LOCKSTEP_HOME", dir.path().join("home"))
        .env("LOCKSTEP_CACHE", dir.path().join("cache"))
        .env("LOCKSTEP_TOOLCHAINS", toolchains)
        .env_remove("LOCKSTEP_IREE_BIN")
        .output()
        .expect("run lockstep demo");
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
