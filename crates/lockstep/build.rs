//! Records the git URL and commit this binary is built from, when the build
//! runs in a clean clone whose `origin` a CI runner could clone (https, ssh):
//! `lockstep ci generate` then installs this very lockstep on the runners
//! when `[ci] lockstep` is unset. Anything else (a tarball, a dirty tree, a
//! local remote, no git) records nothing, and the generator asks for the key.

use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let Some(manifest_dir) = std::env::var_os("CARGO_MANIFEST_DIR") else {
        return;
    };
    let dir = Path::new(&manifest_dir);
    let Some(top) = git(dir, &["rev-parse", "--show-toplevel"]) else {
        return;
    };
    let git_dir = git(dir, &["rev-parse", "--absolute-git-dir"]).unwrap_or_default();
    for file in ["HEAD", "index"] {
        println!("cargo:rerun-if-changed={git_dir}/{file}");
    }
    let clean = git(
        Path::new(&top),
        &["status", "--porcelain", "--untracked-files=no"],
    )
    .is_some_and(|s| s.is_empty());
    let rev = git(dir, &["rev-parse", "HEAD"]).unwrap_or_default();
    let url = git(dir, &["remote", "get-url", "origin"]).unwrap_or_default();
    let reachable = ["https://", "ssh://", "git@"]
        .iter()
        .any(|p| url.starts_with(p))
        && !url.contains(char::is_whitespace);
    if clean && rev.len() == 40 && reachable {
        println!("cargo:rustc-env=LOCKSTEP_BUILT_FROM_GIT={url}");
        println!("cargo:rustc-env=LOCKSTEP_BUILT_FROM_REV={rev}");
    }
}
