//! The commits a bisection walks: GOOD..BAD resolved in a repository and
//! checked, oldest first (`pkg bisect` and `bench bisect` walk them).

use std::path::Path;

use lockstep_core::Error;
use lockstep_git::Repo;

use crate::require_range;

/// The commits on the ancestry path from `good` (excluded) to `bad`
/// (included), in the repository at `root`, oldest first.
pub struct Range {
    pub repo: Repo,
    /// The full names of GOOD and BAD.
    pub good: String,
    pub bad: String,
    pub commits: Vec<String>,
}

/// Resolves and checks a GOOD..BAD range (usage errors: an unknown
/// revision, the same commit twice, GOOD not an ancestor of BAD).
pub fn range(root: &Path, good_rev: &str, bad_rev: &str) -> Result<Range, Error> {
    let repo = Repo::discover(root)?;
    let good = repo
        .must_resolve(&format!("{good_rev}^{{commit}}"))?
        .to_string();
    let bad = repo
        .must_resolve(&format!("{bad_rev}^{{commit}}"))?
        .to_string();
    require_range(&good, &bad, good_rev, bad_rev)?;
    if !repo.is_ancestor(&good, &bad)? {
        return Err(Error::usage(format!(
            "--good {good_rev} is not an ancestor of --bad {bad_rev}"
        ))
        .hint("pass a good commit older than the bad one, on its history"));
    }
    let commits: Vec<String> = repo
        .rev_list(&["--ancestry-path", "--reverse", &format!("{good}..{bad}")])?
        .into_iter()
        .map(|o| o.to_string())
        .collect();
    if commits.is_empty() {
        return Err(Error::usage(format!(
            "no commits lead from --good {good_rev} to --bad {bad_rev}"
        )));
    }
    Ok(Range {
        repo,
        good,
        bad,
        commits,
    })
}
