//! `lockstep init` on real git repositories made here: what it finds (a
//! submodule, a pin file, a pin inside workspace.bzl, packages, suites, lit
//! suites) becomes a lockstep.toml every command accepts; bad inputs (not a
//! repository, a lockstep.toml already there, two candidate pins, an
//! unreadable file) are clear errors that write nothing.

mod common;

use std::path::{Path, PathBuf};

use common::*;

const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

/// A superproject at `ROOT/proj` with an LLVM submodule (a real one, from a
/// local repository), a Python package beside a test-only one, a native
/// suite and a lit suite.
fn project(p: &Project) -> PathBuf {
    let upstream = p.root().join("upstream/llvm-project");
    write(&upstream.join("README.md"), "llvm\n");
    git(&upstream, &["init", "-q", "-b", "main"]);
    commit_as_tester(&upstream, "llvm", true);
    let proj = p.root().join("proj");
    write(
        &proj.join("python/pyproject.toml"),
        "[project]\nname = \"my-compiler\"\nversion = \"0.1\"\n",
    );
    write(
        &proj.join("tests/fixture/pyproject.toml"),
        "[project]\nname = \"not-a-package\"\n",
    );
    write(&proj.join("suites/add.mlir"), ADD);
    write(
        &proj.join("suites/adds.suite.toml"),
        &native_add_test("add", "add.mlir", "4xf32=2 4 6 8"),
    );
    write(&proj.join("test/lit.cfg.py"), "config.name = 'x'\n");
    git(&proj, &["init", "-q", "-b", "main"]);
    git(
        &proj,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            &upstream.display().to_string(),
            "third_party/llvm-project",
        ],
    );
    commit_as_tester(&proj, "project", true);
    proj
}

fn init(p: &Project, dir: &Path, args: &[&str], code: i32) -> std::process::Output {
    let mut all = vec!["init"];
    all.extend_from_slice(args);
    expect(&mut p.cmd_in(dir, &all), code)
}

#[test]
fn init_writes_what_it_finds_and_every_command_accepts_it() {
    let p = Project::new();
    let proj = project(&p);
    // --dry-run prints the file and writes nothing.
    let dry = init(&p, &proj, &["--dry-run"], 0);
    let text = stdout(&dry);
    assert!(!proj.join("lockstep.toml").exists());
    assert!(
        text.contains("submodule = \"third_party/llvm-project\""),
        "{text}"
    );
    assert!(text.contains("upstream-url = "), "{text}");
    assert!(
        text.contains("name = \"my-compiler\"\nsource = \"python\""),
        "{text}"
    );
    assert!(!text.contains("not-a-package"), "{text}");
    assert!(text.contains("paths = [\"suites\"]"), "{text}");
    assert!(text.contains("iree = \"3.13.0\""), "{text}");
    assert!(
        text.contains("lit suite at test/lit.cfg.py: add \"test\" to paths"),
        "{text}"
    );
    // Every setting says where it came from.
    for setting in ["submodule =", "name =", "paths =", "iree ="] {
        let line = text.lines().position(|l| l.starts_with(setting)).unwrap();
        let above = text.lines().nth(line - 1).unwrap();
        assert!(
            above.starts_with('#'),
            "{setting}: no comment above\n{text}"
        );
    }

    // Written, it is the same text, and lockstep runs the suite with it.
    let out = init(&p, &proj, &[], 0);
    assert!(stdout(&out).contains("wrote "), "{}", stdout(&out));
    assert_eq!(
        std::fs::read_to_string(proj.join("lockstep.toml")).unwrap(),
        text
    );
    let listed = expect(&mut p.cmd_in(&proj, &["test", "--list"]), 0);
    assert!(stdout(&listed).contains("add"), "{}", stdout(&listed));
    // With [ci] lockstep named, the workflow of the written file lints clean.
    let mut config = text.clone();
    config.push_str("\n[ci]\nlockstep = { git = \"https://github.com/example/lockstep\", rev = \"0123456789abcdef0123456789abcdef01234567\" }\n");
    std::fs::write(proj.join("lockstep.toml"), &config).unwrap();
    expect(&mut p.cmd_in(&proj, &["ci", "generate"]), 0);
    lint(&proj);

    // A second init replaces nothing.
    let before = std::fs::read_to_string(proj.join("lockstep.toml")).unwrap();
    for args in [&[][..], &["--dry-run"][..]] {
        let again = init(&p, &proj, args, 2);
        assert!(
            stderr(&again).contains("lockstep.toml already exists"),
            "{}",
            stderr(&again)
        );
        assert!(stdout(&again).is_empty());
    }
    assert_eq!(
        std::fs::read_to_string(proj.join("lockstep.toml")).unwrap(),
        before
    );
}

#[test]
fn pins_by_file_and_inside_a_larger_file_and_two_candidates_need_a_choice() {
    let p = Project::new();
    let proj = project(&p);
    write(
        &proj.join("build_tools/llvm_version.txt"),
        &format!("{SHA}\n"),
    );
    // Two candidates: an error naming both, nothing written.
    let out = init(&p, &proj, &[], 2);
    let err = stderr(&out);
    assert!(err.contains("found 2 candidate pins"), "{err}");
    assert!(
        err.contains("third_party/llvm-project (a submodule)"),
        "{err}"
    );
    assert!(
        err.contains("build_tools/llvm_version.txt (a pin file)"),
        "{err}"
    );
    assert!(err.contains("--pin"), "{err}");
    assert!(!proj.join("lockstep.toml").exists());
    // --pin chooses; one it did not find is refused.
    let out = init(
        &p,
        &proj,
        &["--dry-run", "--pin", "build_tools/llvm_version.txt"],
        0,
    );
    assert!(stdout(&out).contains("pin-file = \"build_tools/llvm_version.txt\""));
    let out = init(&p, &proj, &["--pin", "nowhere"], 2);
    assert!(stderr(&out).contains("--pin nowhere is not a pin lockstep init found"));

    // TensorFlow's shape: the commit and the archive's checksum inside a
    // .bzl file.
    let p2 = Project::new();
    let tf = p2.root().join("tf");
    write(
        &tf.join("third_party/llvm/workspace.bzl"),
        &format!(
            "def repo(name):\n    LLVM_COMMIT = \"{SHA}\"\n    LLVM_SHA256 = \"{}\"\n",
            "ab".repeat(32)
        ),
    );
    git(&tf, &["init", "-q"]);
    let out = init(&p2, &tf, &[], 0);
    let text = std::fs::read_to_string(tf.join("lockstep.toml")).unwrap();
    assert!(stdout(&out).contains("third_party/llvm/workspace.bzl (a pin inside the file)"));
    assert!(
        text.contains(r#"pin = { file = "third_party/llvm/workspace.bzl", pattern = 'LLVM_COMMIT = "([0-9a-f]{40})"', sha256 = { pattern = 'LLVM_SHA256 = "([0-9a-f]{64})"', archive = "https://github.com/llvm/llvm-project/archive/{commit}.tar.gz" } }"#),
        "{text}"
    );
    // No packages, no suites: said, with what to write.
    assert!(text.contains("# No Python packages found"), "{text}");
    assert!(text.contains("# No suites found"), "{text}");
}

#[test]
fn outside_a_repository_or_with_an_unreadable_file_nothing_is_written() {
    let p = Project::new();
    let plain = p.root().join("plain");
    std::fs::create_dir_all(&plain).unwrap();
    let out = init(&p, &plain, &[], 2);
    assert!(
        stderr(&out).contains("is not inside a git work tree"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("git init"), "{}", stderr(&out));
    assert!(!plain.join("lockstep.toml").exists());

    let proj = project(&p);
    // A package file that cannot be read (a link to nothing): named.
    std::fs::create_dir_all(proj.join("broken")).unwrap();
    std::os::unix::fs::symlink("missing.toml", proj.join("broken/pyproject.toml")).unwrap();
    let out = init(&p, &proj, &[], 2);
    assert!(
        stderr(&out).contains("cannot read") && stderr(&out).contains("broken/pyproject.toml"),
        "{}",
        stderr(&out)
    );
    assert!(!proj.join("lockstep.toml").exists());

    // DIR that is not a directory.
    let out = init(&p, &proj, &["no-such-dir"], 2);
    assert!(
        stderr(&out).contains("is not a directory"),
        "{}",
        stderr(&out)
    );
}
