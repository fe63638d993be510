//! Shared harness for the CLI integration tests: a sandbox of real git
//! repositories in a temporary directory and a way to run the real `lockstep`
//! binary in it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use lockstep_integrate::sandbox::{self, Sandbox, SandboxSpec};

/// A sandbox plus the temporary directory that holds it.
pub struct Env {
    pub dir: tempfile::TempDir,
    pub sb: Sandbox,
}

/// A small sandbox: `commits` pending upstream commits, 60% affecting.
pub fn spec(commits: usize) -> SandboxSpec {
    SandboxSpec {
        commits,
        affecting_ratio: 0.6,
        breaks: vec![],
        patches: false,
        conflict_at: None,
        upstreams_patch_at: None,
        docs_commits: 0,
        seed: 7,
    }
}

impl Env {
    pub fn new(spec: &SandboxSpec) -> Env {
        let dir = tempfile::tempdir().expect("temp dir");
        let sb = sandbox::create(&dir.path().join("sb"), spec).expect("sandbox");
        Env { dir, sb }
    }

    /// The superproject work tree.
    pub fn sp(&self) -> &Path {
        &self.sb.superproject
    }

    /// The submodule work tree.
    pub fn sub(&self) -> PathBuf {
        self.sb.superproject.join(&self.sb.submodule_path)
    }

    /// A `lockstep` command run in the superproject, isolated from the user's
    /// lockstep home.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_lockstep"));
        cmd.args(args)
            .current_dir(self.sp())
            .env("LOCKSTEP_HOME", self.dir.path().join("home"))
            .env_remove("LOCKSTEP_WEBHOOK_URL");
        cmd
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.cmd(args).output().expect("run lockstep")
    }

    /// Runs and asserts the exit status; returns stdout.
    pub fn ok(&self, args: &[&str], code: i32) -> String {
        let out = self.run(args);
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(
            out.status.code(),
            Some(code),
            "lockstep {args:?} exited {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            out.status.code()
        );
        stdout
    }

    pub fn status(&self) -> serde_json::Value {
        let out = self.ok(&["integrate", "status", "--json"], 0);
        serde_json::from_str(&out).expect("status json")
    }

    pub fn start(&self) {
        self.ok(&["integrate", "start"], 0);
    }
}

/// A sandbox with one API break halfway and carried patches.
pub fn with_break(commits: usize) -> SandboxSpec {
    SandboxSpec {
        breaks: vec![0.5],
        patches: true,
        ..spec(commits)
    }
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts the exit code of an already-run command; returns (stdout, stderr).
pub fn expect_code(out: &Output, code: i32, what: &str) -> (String, String) {
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(code),
        "{what} exited {:?}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status.code()
    );
    (stdout, stderr)
}

/// Runs git in `dir`, asserting success; returns trimmed stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?} in {} failed: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Subjects of the superproject's first-parent history, newest first.
pub fn subjects(dir: &Path) -> Vec<String> {
    git(dir, &["log", "--format=%s"])
        .lines()
        .map(str::to_string)
        .collect()
}

/// Whether git reports anything uncommitted (submodule included).
pub fn is_clean(dir: &Path) -> bool {
    git(dir, &["status", "--porcelain", "--ignore-submodules=none"]).is_empty()
}

/// Lines appended by the sandbox smoke script (one per smoke run).
pub fn smoke_count(log: &Path) -> usize {
    std::fs::read_to_string(log)
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

/// The branch the superproject has checked out (`HEAD` when detached).
pub fn current_branch(env: &Env) -> String {
    git(env.sp(), &["rev-parse", "--abbrev-ref", "HEAD"])
}

/// Whether commit `a` is an ancestor of (or equal to) `b` in `repo`.
pub fn is_ancestor(repo: &Path, a: &str, b: &str) -> bool {
    Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["merge-base", "--is-ancestor", a, b])
        .status()
        .expect("git")
        .success()
}

/// Steps a binary search needs over `n` candidates.
pub fn ceil_log2(n: usize) -> usize {
    (usize::BITS - (n.max(1) - 1).leading_zeros()) as usize
}

/// Writes `text` to `path` and makes it executable.
pub fn write_executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).expect("write script");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}
