//! Records the git URL and commit this binary is built from, when the build
//! runs in a clean clone of lockstep itself whose `origin` a CI runner could
//! clone over https and which has the commit: `lockstep ci generate` then
//! installs this very lockstep on the runners when `[ci] lockstep` is
//! unset. Anything else (a tarball, a dirty tree, an unpushed commit, a
//! local remote, an enclosing repository that is not lockstep's, no git)
//! records nothing, and the generator asks for the key. Credentials in the
//! remote URL are never recorded; scp-style and ssh URLs become https.

// A build script runs at build time, outside the binary, and does not use
// lockstep_core::process (clippy.toml's door for product code): it links no lockstep crate.
#![allow(clippy::disallowed_methods)]

use std::path::{Path, PathBuf};
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

/// `origin` as an https URL without credentials, when it can be one.
fn https_url(url: &str) -> Option<String> {
    let url = url.trim();
    let (host, path) = if let Some(rest) = url.strip_prefix("git@") {
        rest.split_once(':')?
    } else if let Some(rest) = url
        .strip_prefix("ssh://")
        .or_else(|| url.strip_prefix("https://"))
    {
        let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
        let (host, path) = rest.split_once('/')?;
        (host.split(':').next()?, path)
    } else {
        return None;
    };
    let ok = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | '/'))
    };
    (ok(host) && ok(path)).then(|| format!("https://{host}/{path}"))
}

fn main() {
    let Some(manifest_dir) = std::env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from) else {
        return;
    };
    let Some(top) = git(&manifest_dir, &["rev-parse", "--show-toplevel"]).map(PathBuf::from) else {
        return;
    };
    let git_dir = git(&manifest_dir, &["rev-parse", "--absolute-git-dir"]).unwrap_or_default();
    // Rerun when HEAD moves, the branch it names moves, or the index changes.
    // Only files that exist: cargo takes a missing one as changed at every
    // build (a repository without packed refs rebuilt the binary each time);
    // a ref packed later removes its loose file, which is a change.
    let mut watched = vec!["HEAD".to_string(), "index".into(), "packed-refs".into()];
    watched.extend(git(&manifest_dir, &["symbolic-ref", "-q", "HEAD"]));
    for file in watched {
        let path = Path::new(&git_dir).join(file);
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    // Only lockstep's own repository: not an enclosing one (a home directory in git).
    let ours = std::fs::canonicalize(top.join("crates/lockstep")).ok()
        == std::fs::canonicalize(&manifest_dir).ok();
    let clean =
        git(&top, &["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| s.is_empty());
    let rev = git(&manifest_dir, &["rev-parse", "HEAD"]).unwrap_or_default();
    let pushed = git(&top, &["branch", "-r", "--contains", "HEAD"]).is_some_and(|s| !s.is_empty());
    let url = git(&manifest_dir, &["remote", "get-url", "origin"]).and_then(|u| https_url(&u));
    if let (true, true, true, 40, Some(url)) = (ours, clean, pushed, rev.len(), url) {
        println!("cargo:rustc-env=LOCKSTEP_BUILT_FROM_GIT={url}");
        println!("cargo:rustc-env=LOCKSTEP_BUILT_FROM_REV={rev}");
    }
}
