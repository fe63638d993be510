//! `lockstep init` on real git repositories made here: what it finds (a
//! submodule, a pin file, a pin inside workspace.bzl, packages, suites, lit
//! suites) becomes a lockstep.toml every command accepts; bad inputs (not a
//! repository, a lockstep.toml already there, two candidate pins, an
//! unreadable file) are clear errors that write nothing.

use std::path::{Path, PathBuf};

use crate::common::*;

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
    write(
        &proj.join("test/test_not_pytest.py"),
        "# a lit suite's file\n",
    );
    write(
        &proj.join("python/tests/test_api.py"),
        "def test_api():\n    pass\n",
    );
    write(
        &proj.join("python/tests/more/test_more.py"),
        "def test_more():\n    pass\n",
    );
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
    // pytest tests become a [[test.pytest]] suite (not the lit suite's files).
    assert!(
        text.contains("[[test.pytest]]\n# pytest tests found")
            && text.contains("name = \"pytest\"\npaths = [\"python/tests\"]\n"),
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
    // No wheelhouse or .venv yet: the pytest suite is one test saying so.
    assert!(
        stdout(&listed).contains("pytest [pytest]  [pytest]"),
        "{}",
        stdout(&listed)
    );
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
        err.contains("the submodule third_party/llvm-project"),
        "{err}"
    );
    assert!(
        err.contains("the pin file build_tools/llvm_version.txt"),
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
    assert!(stdout(&out).contains("the pin in third_party/llvm/workspace.bzl"));
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

/// Runs `lockstep init` in `dir` and checks its exit code, failing the test
/// (instead of hanging it) when the command never ends: a file init reads
/// must be refused at once, never waited on. The bound is a guard against
/// a hang, not a measure of speed.
fn init_bounded(p: &Project, dir: &Path, args: &[&str], code: i32) -> std::process::Output {
    use std::process::Stdio;
    let mut all = vec!["init"];
    all.extend_from_slice(args);
    let mut cmd = p.cmd_in(dir, &all);
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start lockstep");
    let guard = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while child.try_wait().expect("wait for lockstep").is_none() {
        if std::time::Instant::now() > guard {
            let _ = child.kill();
            let _ = child.wait();
            panic!("lockstep {all:?} never ended (it waited on a file it should have refused)");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().expect("lockstep's output");
    expect_code(&out, code, &format!("{cmd:?}"));
    out
}

fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo")
        .arg(path)
        .status()
        .expect("run mkfifo");
    assert!(made.success(), "mkfifo {}", path.display());
}

fn link(target: &Path, at: &Path) {
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(target, at).unwrap();
}

/// A link to a FIFO (or a device) where init reads a file for its name (a
/// pin file, a `.bzl` file, pyproject.toml, setup.py, .gitmodules): an error
/// naming it at once (exit 2, nothing written), never a wait. A `*.json`
/// on one is no suite config: passed over.
#[test]
fn a_link_to_a_fifo_or_a_device_where_init_reads_is_refused_at_once() {
    let p = Project::new();
    let proj = project(&p);
    let fifo = p.root().join("a-fifo");
    mkfifo(&fifo);
    let gitmodules = std::fs::read_to_string(proj.join(".gitmodules")).unwrap();
    for (rel, target, kind) in [
        ("build_tools/llvm_version.txt", fifo.as_path(), "a FIFO"),
        ("third_party/llvm/workspace.bzl", fifo.as_path(), "a FIFO"),
        ("pkg/pyproject.toml", fifo.as_path(), "a FIFO"),
        ("pkg/setup.py", fifo.as_path(), "a FIFO"),
        ("pkg/pyproject.toml", Path::new("/dev/zero"), "a device"),
        (".gitmodules", fifo.as_path(), "a FIFO"),
    ] {
        let at = proj.join(rel);
        let _ = std::fs::remove_file(&at);
        link(target, &at);
        for args in [&["--dry-run"][..], &[][..]] {
            let out = init_bounded(&p, &proj, args, 2);
            let err = stderr(&out);
            assert!(
                err.contains("cannot read") && err.contains(rel),
                "{rel}: {err}"
            );
            assert!(err.contains(kind), "{rel}: {err}");
            assert!(err.contains("nothing was written"), "{rel}: {err}");
            assert!(stdout(&out).is_empty(), "{rel}");
            assert!(!proj.join("lockstep.toml").exists(), "{rel}");
        }
        std::fs::remove_file(&at).unwrap();
    }
    std::fs::write(proj.join(".gitmodules"), gitmodules).unwrap();
    // A JSON name on a FIFO: not a config, so passed over, never read.
    link(&fifo, &proj.join("configs/onnx_cpu.json"));
    let out = init_bounded(&p, &proj, &["--dry-run"], 0);
    let text = stdout(&out);
    assert!(!text.contains("onnx_cpu.json"), "{text}");
    assert!(text.contains("paths = [\"suites\"]"), "{text}");
}

/// A directory named to write settings of its own (a newline, then a
/// `[[integrate.verdicts]]` rule counting every failing smoke as good),
/// or holding ESC, CR or a bidi control: refused, exit 2, the name spelled
/// out, nothing written, with or without --dry-run.
#[test]
fn directory_names_with_control_characters_are_refused_never_written() {
    let p = Project::new();
    let proj = project(&p);
    let injected = "evil\n[[integrate.verdicts]]\nverdict = \"good\"\n#";
    for (name, spelled) in [
        (
            injected,
            "evil\\n[[integrate.verdicts]]\\nverdict = \"good\"\\n#",
        ),
        ("esc\u{1b}[31mred", "esc\\u{1b}[31mred"),
        ("cr\rname", "cr\\rname"),
        ("bidi\u{202e}txt.cfg", "bidi\\u{202e}txt.cfg"),
    ] {
        // As a lit suite (named in a comment) and as a suite directory
        // (named in [test] paths).
        for (file, text) in [
            ("lit.cfg.py", "config.name = 'x'\n".to_string()),
            (
                "adds.suite.toml",
                native_add_test("add2", "add.mlir", "4xf32=2 4 6 8"),
            ),
        ] {
            let dir = proj.join(name);
            write(&dir.join(file), &text);
            for args in [&["--dry-run"][..], &[][..]] {
                let out = init_bounded(&p, &proj, args, 2);
                let err = stderr(&out);
                assert!(
                    err.contains("lockstep init cannot write"),
                    "{name:?}: {err}"
                );
                assert!(err.contains(spelled), "{name:?}: {spelled} not in {err}");
                assert!(err.contains("hint: rename it"), "{err}");
                assert!(
                    !err.contains('\u{1b}') && !err.contains('\r') && !err.contains('\u{202e}'),
                    "{err:?}"
                );
                assert!(stdout(&out).is_empty(), "{name:?}: {}", stdout(&out));
                assert!(!proj.join("lockstep.toml").exists(), "{name:?}");
            }
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
}

/// `init --dry-run` prints exactly the bytes `init` writes: with names in
/// any script (é, CJK) both are the same file; a C1 control (U+0085,
/// which the terminal rule would escape in the dry run only) is refused by
/// both alike.
#[test]
fn the_dry_run_prints_the_bytes_init_writes() {
    let p = Project::new();
    let proj = project(&p);
    write(
        &proj.join("régression-测试/adds.suite.toml"),
        &native_add_test("add3", "add.mlir", "4xf32=2 4 6 8"),
    );
    write(&proj.join("régression-测试/add.mlir"), ADD);
    write(&proj.join("模型/lit.cfg.py"), "config.name = 'x'\n");
    write(
        &proj.join("café/pyproject.toml"),
        "[project]\nname = \"cafe\"\n",
    );
    let dry = init_bounded(&p, &proj, &["--dry-run"], 0);
    let text = stdout(&dry);
    assert!(text.contains("\"régression-测试\""), "{text}");
    assert!(text.contains("模型/lit.cfg.py"), "{text}");
    init_bounded(&p, &proj, &[], 0);
    let written = std::fs::read(proj.join("lockstep.toml")).unwrap();
    assert_eq!(dry.stdout, written, "the dry run and the file differ");
    std::fs::remove_file(proj.join("lockstep.toml")).unwrap();

    write(
        &proj.join("c1\u{85}name/adds.suite.toml"),
        &native_add_test("add4", "add.mlir", "4xf32=2 4 6 8"),
    );
    let dry = init_bounded(&p, &proj, &["--dry-run"], 2);
    let wet = init_bounded(&p, &proj, &[], 2);
    assert!(stderr(&dry).contains("c1\\u{85}name"), "{}", stderr(&dry));
    assert_eq!(stderr(&dry), stderr(&wet));
    assert!(dry.stdout.is_empty() && wet.stdout.is_empty());
    assert!(!proj.join("lockstep.toml").exists());
}
