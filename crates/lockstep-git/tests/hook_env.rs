//! Git exports GIT_DIR and friends to hooks; a Repo must still act on its own
//! directory when lockstep runs under such an environment. This is its own
//! test binary because it sets process-wide environment variables.

// Test code starts its fixtures' processes directly; product code goes
// through lockstep_core::process (clippy.toml).
#![allow(clippy::disallowed_methods)]

use std::path::Path;
use std::process::Command;

use lockstep_git::Repo;

fn init_with_commit(dir: &Path, subject: &str) -> String {
    let git = |args: &[&str]| {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(args)
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .output()
            .expect("run git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8(out.stdout).expect("utf-8")
    };
    git(&["init", "-q", "-b", "main"]);
    git(&[
        "-c",
        "user.name=T",
        "-c",
        "user.email=t@example.com",
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        subject,
    ]);
    git(&["rev-parse", "HEAD"]).trim().to_string()
}

#[test]
fn repo_ignores_git_dir_and_work_tree_from_the_environment() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mine = tmp.path().join("mine");
    let other = tmp.path().join("other");
    std::fs::create_dir_all(&mine).expect("mkdir");
    std::fs::create_dir_all(&other).expect("mkdir");
    let my_head = init_with_commit(&mine, "mine");
    let other_head = init_with_commit(&other, "other");
    assert_ne!(my_head, other_head);

    // What a hook in `other` would see.
    std::env::set_var("GIT_DIR", other.join(".git"));
    std::env::set_var("GIT_WORK_TREE", &other);
    std::env::set_var("GIT_INDEX_FILE", other.join(".git/index"));

    let repo = Repo::new(&mine);
    assert_eq!(repo.resolve("HEAD").expect("resolve"), Some(my_head));
    let git_dir = repo.git_dir().expect("git dir");
    assert_eq!(
        git_dir.canonicalize().expect("canonical"),
        mine.join(".git").canonicalize().expect("canonical")
    );
    let top = repo
        .git(&["rev-parse", "--show-toplevel"])
        .expect("toplevel");
    assert_eq!(
        Path::new(top.trim()).canonicalize().expect("canonical"),
        mine.canonicalize().expect("canonical")
    );
}
