//! What commit messages say about reverts: git's `This reverts commit X.`
//! line, lockstep's `Lockstep-Revert:` trailer on a carried revert, and
//! whether upstream caught up with a carried revert (reverted or relanded
//! the commit itself). Below status, the replay and the revert command, so
//! each reads reverts the same way.

use std::sync::LazyLock;

use lockstep_core::Error;
use lockstep_git::{Oid, Repo};
use regex::Regex;

/// The trailer naming the upstream commit a carried revert reverts.
pub const REVERT_TRAILER: &str = "Lockstep-Revert:";

/// `This reverts commit <sha>.` in a message.
pub fn reverted_commit(message: &str) -> Option<String> {
    // Compiled once: status asks this of every carried patch and every
    // upstream commit it scans.
    static REVERTS: LazyLock<Option<Regex>> =
        LazyLock::new(|| Regex::new(r"This reverts commit ([0-9a-f]{7,40})").ok());
    let re = REVERTS.as_ref()?;
    re.captures(message).map(|c| c[1].to_string())
}

/// The upstream commit a carried patch reverts: its `Lockstep-Revert:`
/// trailer, else git's `This reverts commit X.` line.
pub fn reverted_by_patch(message: &str) -> Option<String> {
    message
        .lines()
        .find_map(|l| l.strip_prefix(REVERT_TRAILER).map(|s| s.trim().to_string()))
        .filter(|s| !s.is_empty())
        .or_else(|| reverted_commit(message))
}

/// Why a carried revert of `reverted` is no longer needed at `onto`: an
/// upstream commit in `base..onto` that reverts it too, or relands it.
pub(crate) fn caught_up(
    repo: &Repo,
    base: &str,
    onto: &str,
    reverted: &str,
) -> Result<Option<(Oid, &'static str)>, Error> {
    if base == onto {
        return Ok(None);
    }
    let key = &reverted[..reverted.len().min(12)];
    let found = repo.messages(
        &[
            onto,
            &format!("^{base}"),
            "--fixed-strings",
            "--regexp-ignore-case",
            &format!("--grep={key}"),
        ],
        &[],
    )?;
    // Oldest first: the first answer upstream gave.
    for (sha, message) in found {
        if reverted_commit(&message).is_some_and(|r| reverted.starts_with(&r)) {
            return Ok(Some((sha, "reverted upstream")));
        }
        if message.to_lowercase().contains("reland") {
            return Ok(Some((sha, "relanded upstream")));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git(dir: &std::path::Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@e"])
            .args(args)
            .output()
            .expect("git");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    fn commit(dir: &std::path::Path, text: &str, message: &str) -> String {
        std::fs::write(dir.join("f"), text).expect("write");
        git(dir, &["add", "f"]);
        git(dir, &["commit", "-qm", message]);
        git(dir, &["rev-parse", "HEAD"])
    }

    #[test]
    fn upstream_reverting_or_relanding_the_commit_catches_up() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path();
        git(dir, &["init", "-q", "-b", "main"]);
        let base = commit(dir, "a\n", "base");
        let x = commit(dir, "b\n", "[mlir] Change it");
        let after_x = commit(dir, "b\nc\n", "unrelated");
        let repo = Repo::new(dir);
        assert_eq!(caught_up(&repo, &after_x, &after_x, &x).expect("ok"), None);
        // A reland that names the commit (after an upstream revert earlier
        // than this range).
        let reland = commit(
            dir,
            "b\nc\nd\n",
            &format!("Reland \"[mlir] Change it\"\n\nThis relands {x} with a fix."),
        );
        let found = caught_up(&repo, &after_x, &reland, &x).expect("ok");
        assert_eq!(found, Some((reland.clone(), "relanded upstream")));
        // A revert of the same commit.
        let revert = commit(
            dir,
            "a\nc\nd\n",
            &format!("Revert \"[mlir] Change it\"\n\nThis reverts commit {x}."),
        );
        let found = caught_up(&repo, &reland, &revert, &x).expect("ok");
        assert_eq!(found, Some((revert, "reverted upstream")));
        // Unrelated commits say nothing; neither does the range before X.
        assert_eq!(caught_up(&repo, &base, &x, &after_x).expect("ok"), None);
        assert_eq!(
            reverted_by_patch(&format!("Revert \"x\"\n\nLockstep-Revert: {x}\n")).as_deref(),
            Some(x.as_str())
        );
    }
}
