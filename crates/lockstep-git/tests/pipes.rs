//! Commands that take large stdin and answer as they read must not deadlock.

// Test code starts its fixtures' processes directly; product code goes
// through lockstep_core::process (clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use lockstep_git::Repo;

/// Runs `f` on its own thread and fails the test if it outlives `limit`,
/// so a pipe deadlock shows as a failure instead of a hung test run.
fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(limit)
        .expect("git call still running: stdin and stdout pipes deadlocked")
}

/// A repository with `n` commits, each changing one line of one file,
/// built with fast-import so thousands of commits take a second.
fn repo_with_commits(dir: &std::path::Path, n: usize) -> Vec<String> {
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .output()
            .expect("run git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).expect("utf-8")
    };
    git(&["init", "-q", "-b", "main"]);
    let mut stream = String::new();
    for i in 0..n {
        let body = format!("line {i}\n");
        stream.push_str(&format!(
            "commit refs/heads/main\ncommitter T <t@example.com> {} +0000\ndata 2\nc\n\
             M 100644 inline f.txt\ndata {}\n{body}\n",
            1_700_000_000 + i,
            body.len()
        ));
    }
    let mut child = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .spawn()
        .expect("run fast-import");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stream.as_bytes())
        .expect("feed fast-import");
    assert!(child.wait().expect("fast-import").success());
    git(&["rev-list", "--reverse", "main"])
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn patch_ids_of_thousands_of_commits_does_not_deadlock() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let shas = repo_with_commits(tmp.path(), 3000);
    assert_eq!(shas.len(), 3000);
    let repo = Repo::new(tmp.path());
    let wanted = shas.clone();
    let ids = within(Duration::from_secs(60), move || {
        let refs: Vec<&str> = wanted.iter().map(String::as_str).collect();
        repo.patch_ids_of(&refs).expect("patch ids")
    });
    assert_eq!(ids.len(), shas.len(), "one patch id per commit");
    let mut got: Vec<&str> = ids.iter().map(|(_, sha)| sha.as_str()).collect();
    let mut want: Vec<&str> = shas.iter().map(String::as_str).collect();
    got.sort_unstable();
    want.sort_unstable();
    assert_eq!(got, want);
}

#[test]
fn megabytes_of_stdin_with_streaming_output_does_not_deadlock() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let shas = repo_with_commits(tmp.path(), 1);
    let repo = Repo::new(tmp.path());
    // 2 MB of input; cat-file answers each line before reading the next.
    let input = format!("{}\n", shas[0]).repeat(50_000);
    let out = within(Duration::from_secs(60), move || {
        repo.git_env(&["cat-file", "--batch-check"], &[], Some(input.as_bytes()))
            .expect("cat-file")
    });
    assert_eq!(out.lines().count(), 50_000);
    assert!(out
        .lines()
        .all(|l| l.starts_with(&shas[0]) && l.contains(" commit ")));
}

#[test]
fn batched_lookups_agree_with_per_commit_ones() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let shas = repo_with_commits(tmp.path(), 5);
    let repo = Repo::new(tmp.path());
    let details = repo
        .commit_details(&["--reverse", "main"])
        .expect("details");
    assert_eq!(details.len(), shas.len());
    for (batch, sha) in details.iter().zip(&shas) {
        let one = repo.commit_detail(sha).expect("detail");
        assert_eq!(batch.sha, one.sha);
        assert_eq!(batch.parents, one.parents);
        assert_eq!(batch.tree, one.tree);
        assert_eq!(batch.committer_date, one.committer_date);
        assert_eq!(batch.message, one.message);
    }
    let refs: Vec<&str> = shas.iter().map(String::as_str).collect();
    let ids = repo.patch_ids_of(&refs).expect("patch ids");
    for (id, sha) in &ids {
        assert_eq!(
            repo.patch_id(sha).expect("patch id").as_deref(),
            Some(id.as_str())
        );
    }
    assert_eq!(repo.changed_paths_of(&refs).expect("paths"), vec!["f.txt"]);
}
