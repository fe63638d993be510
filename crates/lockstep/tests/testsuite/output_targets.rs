//! Every command's output files pointed at what is not a plain new file: a
//! FIFO (written in place, read by its reader), a symbolic link (its target
//! written, the link kept), `/dev/null` (still a device afterwards) and a
//! directory or a missing parent (a usage error before any work, nothing
//! left behind); and an output that is one of the inputs (refused, the input
//! unchanged). See lockstep_core::output and docs/reliability.md.

use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;

use crate::common::{stderr, Project};

const CPU_FLAGS: [&str; 3] = [
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
];

const GEMM: [&str; 9] = ["gemm", "-m", "4", "-n", "4", "-k", "4", "-t", "1"];

/// A FIFO with a reader collecting what is written to it.
struct Fifo {
    path: PathBuf,
    reader: Option<JoinHandle<Vec<u8>>>,
}

impl Fifo {
    fn new(path: PathBuf) -> Fifo {
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(made.success());
        let reader = {
            let path = path.clone();
            std::thread::spawn(move || std::fs::read(path).unwrap())
        };
        Fifo {
            path,
            reader: Some(reader),
        }
    }

    fn arg(&self) -> &str {
        self.path.to_str().unwrap()
    }

    /// What was written, once the command is done (a reader still waiting
    /// for a writer is released, so a command that never wrote fails the
    /// test instead of hanging it).
    fn contents(mut self) -> String {
        let release = std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(nix::libc::O_NONBLOCK)
            .open(&self.path);
        drop(release);
        let bytes = self.reader.take().unwrap().join().unwrap();
        assert!(
            std::fs::symlink_metadata(&self.path)
                .unwrap()
                .file_type()
                .is_fifo(),
            "{} is still a FIFO",
            self.path.display()
        );
        String::from_utf8(bytes).unwrap()
    }
}

/// `name` in the project as a link to `target/name` (a directory of its own).
fn link(p: &Project, name: &str) -> (String, PathBuf) {
    let real = p.root().join("real").join(name);
    std::fs::create_dir_all(real.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&real, p.path().join(name)).unwrap();
    (name.to_string(), real)
}

fn assert_link_kept(p: &Project, name: &str) {
    let meta = std::fs::symlink_metadata(p.path().join(name)).unwrap();
    assert!(meta.file_type().is_symlink(), "{name} is still a link");
}

fn assert_dev_null_kept() {
    let meta = std::fs::symlink_metadata("/dev/null").unwrap();
    assert!(
        meta.file_type().is_char_device(),
        "/dev/null is still a device"
    );
}

/// Every path under `dir`, for "nothing was created" checks.
fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut all = crate::common::walk(dir);
    all.sort();
    all
}

#[test]
fn test_outputs_go_to_a_fifo_a_link_and_dev_null() {
    let p = Project::new();
    p.add_suite(&[("add", "11 22 33 44")]);
    let fifo = Fifo::new(p.path().join("results.fifo"));
    let events = Fifo::new(p.path().join("events.fifo"));
    let (junit, real_junit) = link(&p, "junit.xml");
    let out = p.run(
        &[
            "--events",
            events.arg(),
            "test",
            "s",
            "--json",
            fifo.arg(),
            "--junit",
            &junit,
            "--summary",
            "/dev/null",
        ],
        0,
    );
    let json: serde_json::Value = serde_json::from_str(&fifo.contents()).unwrap();
    assert_eq!(json["summary"]["pass"], 1, "{}", stderr(&out));
    assert!(events.contents().contains("\"command_finished\""));
    assert!(std::fs::read_to_string(real_junit)
        .unwrap()
        .contains("<testsuites"));
    assert_link_kept(&p, "junit.xml");
    assert_dev_null_kept();
}

#[test]
fn bench_outputs_go_to_a_fifo_a_link_and_dev_null() {
    let p = Project::new();
    let fifo = Fifo::new(p.path().join("rows.fifo"));
    let (json, real_json) = link(&p, "rows.json");
    let mut args = vec!["bench", "--csv", fifo.arg(), "--json", &json];
    args.extend(GEMM);
    p.run(&args, 0);
    assert!(fifo.contents().contains("gemm"));
    assert!(std::fs::read_to_string(real_json)
        .unwrap()
        .contains("\"rows\""));
    assert_link_kept(&p, "rows.json");
    let mut args = vec!["bench", "--csv", "/dev/null"];
    args.extend(GEMM);
    p.run(&args, 0);
    assert_dev_null_kept();
}

#[test]
fn preprocess_outputs_go_to_a_fifo_a_link_and_dev_null() {
    let p = Project::new();
    p.write("add.mlir", crate::common::ADD);
    let fifo = Fifo::new(p.path().join("out.fifo"));
    let (vmfb, real_vmfb) = link(&p, "add.vmfb");
    let mut args = vec![
        "preprocess",
        "add.mlir",
        "-o",
        fifo.arg(),
        "--with",
        "cat",
        "--compile",
        &vmfb,
        "--json",
        "/dev/null",
        "--",
    ];
    args.extend(CPU_FLAGS);
    p.run(&args, 0);
    assert!(fifo.contents().contains("hal.executable"));
    assert!(std::fs::metadata(&real_vmfb).unwrap().len() > 0);
    assert_link_kept(&p, "add.vmfb");
    assert_dev_null_kept();
}

#[test]
fn a_directory_or_missing_parent_is_refused_before_any_work() {
    let p = Project::new();
    p.add_suite(&[("add", "11 22 33 44")]);
    p.write("add.mlir", crate::common::ADD);
    std::fs::create_dir_all(p.path().join("out")).unwrap();
    let before = listing(p.root());
    let bench = |flag: &'static str, path: &'static str| {
        let mut args = vec!["bench", flag, path];
        args.extend(GEMM);
        args
    };
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["test", "s", "--json", "out"],
            "--json out is a directory",
        ),
        (
            vec!["test", "s", "--junit", "out"],
            "--junit out is a directory",
        ),
        (
            vec!["test", "s", "--summary", "out"],
            "--summary out is a directory",
        ),
        (bench("--csv", "out"), "--csv out is a directory"),
        (
            bench("--json", "no/such/r.json"),
            "the directory no/such of --json",
        ),
        (
            vec!["preprocess", "add.mlir", "-o", "out", "--with", "cat"],
            "-o out is a directory",
        ),
        (
            vec![
                "preprocess",
                "add.mlir",
                "-o",
                "x.mlir",
                "--compile",
                "out",
                "--with",
                "cat",
            ],
            "--compile out is a directory",
        ),
        (
            vec!["--events", "out", "cache", "info"],
            "--events out is a directory",
        ),
        (
            vec!["--events", "none/e.jsonl", "cache", "info"],
            "the directory none of --events",
        ),
    ];
    for (args, needle) in cases {
        let out = p.run(&args, 2);
        let err = stderr(&out);
        assert!(err.contains(needle), "{args:?}: {err}");
        let only_the_error = err.lines().all(|l| {
            ["error:", "cause:", "hint:"]
                .iter()
                .any(|h| l.starts_with(h))
        });
        assert!(only_the_error, "{args:?} did no work: {err}");
        assert_eq!(listing(p.root()), before, "{args:?} created nothing");
    }
}

#[test]
fn an_output_that_is_an_input_is_refused() {
    let p = Project::new();
    let cmds = p.write("same.txt", &format!("{}\n", GEMM.join(" ")));
    let before = listing(p.root());
    let out = p.run(
        &["bench", "--commands-file", "same.txt", "--csv", "same.txt"],
        2,
    );
    assert!(
        stderr(&out).contains("--csv same.txt is also the input --commands-file same.txt"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        std::fs::read_to_string(&cmds).unwrap(),
        format!("{}\n", GEMM.join(" "))
    );
    p.add_suite(&[("add", "11 22 33 44")]);
    let out = p.run(
        &["test", "s/adds.suite.toml", "--json", "s/adds.suite.toml"],
        2,
    );
    assert!(
        stderr(&out).contains("is also the input PATH"),
        "{}",
        stderr(&out)
    );
    let out = p.run(&["test", "s", "--json", "r.json", "--junit", "./r.json"], 2);
    assert!(
        stderr(&out).contains("are the same file"),
        "{}",
        stderr(&out)
    );
    assert_eq!(
        listing(p.root()).len(),
        before.len() + 2,
        "only the suite was added"
    );
}

#[test]
fn outputs_that_are_files_the_command_found_to_read_are_refused() {
    let p = Project::new();
    p.add_suite(&[("adds", "11 22 33 44")]);
    p.write("lockstep.toml", "[test]\ncompile-timeout = \"5m\"\n");
    let suite = p.read("s/adds.suite.toml");
    let source = p.read("s/add.mlir");
    let config = p.read("lockstep.toml");
    for args in [
        vec!["test", "s", "--json", "s/adds.suite.toml"],
        vec!["test", "s", "--junit", "s/add.mlir"],
        vec!["test", "s", "--summary", "s/adds.suite.toml"],
        vec!["--events", "s/adds.suite.toml", "test", "s"],
        vec!["--events", "s/add.mlir", "test", "s", "--list"],
        vec!["test", "s", "--json", "lockstep.toml"],
        vec!["--events", "lockstep.toml", "integrate", "status"],
        vec!["--events", "lockstep.toml", "cache", "info"],
    ] {
        let out = p.run(&args, 2);
        let text = stderr(&out);
        assert!(text.contains("is also the input"), "{args:?}: {text}");
        assert!(!text.contains("test result"), "{args:?} ran tests: {text}");
        assert_eq!(p.read("s/adds.suite.toml"), suite, "{args:?}");
        assert_eq!(p.read("s/add.mlir"), source, "{args:?}");
        assert_eq!(p.read("lockstep.toml"), config, "{args:?}");
    }
    // The state database lockstep keeps for this directory is an input too.
    let out = p.run(&["test", "s", "--list"], 0);
    assert!(stderr(&out).contains("1 test"));
    let db = lockstep_suite_state_db(&p);
    let before = std::fs::read(&db).unwrap();
    let out = p.run(&["test", "s", "--json", db.to_str().unwrap()], 2);
    assert!(
        stderr(&out).contains("is also the input"),
        "{}",
        stderr(&out)
    );
    assert_eq!(std::fs::read(&db).unwrap(), before);
}

/// The test history's database of the project (outside a git repository:
/// under `$LOCKSTEP_HOME/state`).
fn lockstep_suite_state_db(p: &Project) -> PathBuf {
    let state = p.home().join("state");
    let dir = std::fs::read_dir(&state)
        .unwrap()
        .flatten()
        .next()
        .expect("one state directory")
        .path();
    dir.join("state.db")
}
