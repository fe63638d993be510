//! `integrate resume`: pick the integrate up after others pushed to it.
//!
//! Megabump's "git pull --ff-only; git submodule update" (and its TODO,
//! "automate merging from main"): the integrate branch is fast-forwarded
//! from its remote (the fixup commits people pushed after a call for help),
//! the submodule (or nothing, for a pin file) follows the pin, and with
//! `--merge-main` the project's base branch is merged in. A branch that has
//! diverged from its remote, or a merge that conflicts, stops with nothing
//! changed: the merge is aborted, never left half done. The caller then
//! runs the loop again, whose verdict cache keeps every smoke already run
//! (a fixup changes the superproject's tree, so its commits get fresh ones).

use lockstep_core::Error;
use serde::Serialize;

use crate::halt::short;
use crate::Integrate;

/// What `integrate resume` did before the loop.
#[derive(Debug, Clone, Serialize)]
pub struct Resumed {
    pub branch: String,
    /// Where the branch was.
    pub from: String,
    /// Where it is now.
    pub to: String,
    /// Commits fast-forwarded from the remote branch.
    pub pulled: usize,
    /// The merge commit of `--merge-main`, when one was made.
    pub merged: Option<String>,
}

/// Fast-forwards the integrate branch from its remote, optionally merges
/// the base branch, and puts the submodule at the pin.
pub fn resume(ig: &Integrate, merge_main: bool) -> Result<Resumed, Error> {
    let _lock = ig.lock("integrate resume")?;
    let _session = crate::recover::begin_session(ig, "integrate resume")?;
    ig.require_clean()?;
    let (branch, remote, base_branch, _) = crate::publish::branch_and_remote(ig, "resume")?;
    let from = ig.superproject.head()?.to_string();
    let tracking = format!("refs/remotes/{remote}/{branch}");
    // A branch the remote does not have is nothing to bring in; a fetch
    // that fails otherwise (network, permissions) is an error.
    let mut pulled = 0;
    if ig
        .superproject
        .ls_remote_branch(&remote, &branch)?
        .is_some()
    {
        ig.superproject.git(&[
            "fetch",
            "--quiet",
            "--",
            &remote,
            &format!("+refs/heads/{branch}:{tracking}"),
        ])?;
        pulled = crate::resume::fast_forward(ig, &branch, &tracking)?;
    } else {
        ig.info(format!(
            "{remote} has no branch {branch} yet: nothing to bring in"
        ));
    }
    let merged = if merge_main {
        crate::resume::merge_base_branch(ig, &remote, &base_branch)?
    } else {
        None
    };
    crate::checkout::sync_submodule_to_pin(ig)?;
    Ok(Resumed {
        branch,
        from,
        to: ig.superproject.head()?.to_string(),
        pulled,
        merged,
    })
}

/// `git merge --ff-only` of `tracking`; the number of commits taken.
fn fast_forward(ig: &Integrate, branch: &str, tracking: &str) -> Result<usize, Error> {
    let head = ig.superproject.head()?.to_string();
    let theirs = ig.superproject.must_resolve(tracking)?.to_string();
    if ig.superproject.is_ancestor(&theirs, &head)? {
        return Ok(0);
    }
    if !ig.superproject.is_ancestor(&head, &theirs)? {
        let mine = ig.superproject.rev_list(&[&format!("{theirs}..{head}")])?;
        let other = ig.superproject.rev_list(&[&format!("{head}..{theirs}")])?;
        return Err(Error::failed(format!(
            "{branch} and {tracking} have diverged: {} here, {} there",
            lockstep_core::words::count(mine.len(), "commit", "commits"),
            other.len()
        ))
        .hint(format!(
            "nothing was changed: rebase your commits onto theirs (`git rebase {tracking}`) or merge them by hand, then resume"
        )));
    }
    let count = ig
        .superproject
        .rev_list(&[&format!("{head}..{theirs}")])?
        .len();
    ig.superproject
        .git(&["merge", "--ff-only", "--quiet", &theirs])?;
    ig.info(format!(
        "fast-forwarded {branch} by {} from {tracking} ({} -> {})",
        lockstep_core::words::count(count, "commit", "commits"),
        short(&head),
        short(&theirs)
    ));
    Ok(count)
}

/// Merges the freshly fetched base branch; a conflict aborts the merge
/// and is an error naming the files.
fn merge_base_branch(
    ig: &Integrate,
    remote: &str,
    base_branch: &str,
) -> Result<Option<String>, Error> {
    let base = format!("refs/remotes/{remote}/{base_branch}");
    ig.superproject.git(&[
        "fetch",
        "--quiet",
        "--",
        remote,
        &format!("+refs/heads/{base_branch}:{base}"),
    ])?;
    let head = ig.superproject.head()?.to_string();
    if ig.superproject.is_ancestor(&base, &head)? {
        ig.info(format!("{remote}/{base_branch} is merged already"));
        return Ok(None);
    }
    let message = format!("Merge {remote}/{base_branch} into the integrate");
    let conflicts = match ig
        .superproject
        .merge(&["--no-ff", "--no-edit", "-m", &message, &base])
    {
        Ok(()) => {
            let merged = ig.superproject.head()?.to_string();
            ig.info(format!(
                "merged {remote}/{base_branch} ({})",
                short(&merged)
            ));
            return Ok(Some(merged));
        }
        Err(lockstep_git::GitError::Conflict { paths, .. }) => paths,
        Err(other) => return Err(Error::from(other)),
    };
    let aborted = ig.superproject.try_git(&["merge", "--abort"])?;
    let mut err = Error::failed(format!(
        "merging {remote}/{base_branch} into the integrate conflicts"
    ));
    for file in &conflicts {
        err = err.cause(format!("conflict: {file}"));
    }
    if aborted.code != 0 {
        err = err.cause(format!(
            "`git merge --abort` failed: {}",
            aborted.stderr.trim()
        ));
    }
    Err(err.hint(format!(
        "the merge was aborted and the branch is as it was; merge {remote}/{base_branch} by hand (`git merge {base}`), commit, then `lockstep integrate loop`"
    )))
}
