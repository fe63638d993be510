//! Carried reverts: `integrate revert COMMIT --reason TEXT` carries a local
//! revert of an upstream commit as one more patch on the pin ("carry a local
//! revert of that patch for an integrate cycle or two"), and the replay drops
//! it by itself once upstream catches up: when upstream reverts the same
//! commit (the carried revert becomes empty) or relands it (a later upstream
//! commit that says it relands it: the carried revert would otherwise undo
//! the reland).
//!
//! The revert is computed in the object store (`git merge-tree` of the
//! commit's parent onto the pin), never with `git revert` in the work tree,
//! and committed to the superproject through the journaled advance, so a
//! kill -9 is finished by the next command like any advance.

use lockstep_core::Error;
use lockstep_git::{Merge, Oid, Repo};
use serde::Serialize;

use crate::halt::short;
use crate::reverts::{reverted_by_patch, REVERT_TRAILER};
use crate::Integrate;

/// The longest `--reason`.
const MAX_REASON: usize = 500;

/// What `integrate revert` did.
#[derive(Debug, Clone, Serialize)]
pub struct Reverted {
    /// The upstream commit reverted.
    pub reverted: String,
    pub subject: String,
    pub reason: String,
    /// The new pin: the old one plus the revert.
    pub head: Oid,
    /// The superproject commit carrying it.
    pub superproject_commit: Oid,
    pub exported: Option<String>,
}

/// `integrate revert`: carries a revert of upstream commit `rev`.
pub fn revert(ig: &Integrate, rev: &str, reason: &str, export: bool) -> Result<Reverted, Error> {
    if !ig.pin_of().carries_patches() {
        return Err(Error::usage(format!(
            "{} carries no patches, so it cannot carry a revert",
            ig.pin_of().describe()
        ))
        .hint("pin the last good upstream commit instead, or move the pin to a submodule"));
    }
    let reason = check_reason(reason)?;
    crate::context::check_rev("COMMIT", rev)?;
    let _lock = ig.lock("integrate revert")?;
    let _session = crate::recover::begin_session(ig, "integrate revert")?;
    ig.require_clean()?;
    let status = crate::status::position(ig)?;
    let commit = ig
        .sub
        .resolve(&format!("{rev}^{{commit}}"))?
        .ok_or_else(|| {
            Error::usage(format!("`{rev}` is not a commit of the upstream history"))
                .hint("name an upstream commit the pin already includes (`git -C SUBMODULE log`)")
        })?;
    if !ig.sub.is_ancestor(&commit, &status.merge_base)? {
        return Err(Error::usage(format!(
            "{} is not in the pinned upstream history (the pin is based on {})",
            short(&commit),
            short(&status.merge_base)
        ))
        .hint("only commits the pin includes can be reverted; advance to it first (`lockstep integrate next --to COMMIT`)"));
    }
    let carried = ig
        .sub
        .messages(&[&status.current, &format!("^{}", status.merge_base)], &[])?;
    if let Some((sha, _)) = carried.iter().find(|(_, m)| {
        reverted_by_patch(m).is_some_and(|r| commit.starts_with(&r) || r.starts_with(&commit))
    }) {
        return Err(Error::usage(format!(
            "a revert of {} is carried already ({})",
            short(&commit),
            short(sha)
        )));
    }
    let detail = ig.sub.commit_detail(&commit)?;
    let parent = detail.parents.first().cloned().ok_or_else(|| {
        Error::usage(format!(
            "{} has no parent: it cannot be reverted",
            short(&commit)
        ))
    })?;
    let head = revert_onto(
        &ig.sub,
        &commit,
        &parent,
        &status.current,
        &detail.subject,
        &reason,
    )?;
    let message = format!(
        "Carry a revert of {} in {}: {}\n\n{}\nLockstep-Reason: {reason}\n{REVERT_TRAILER} {commit}\n",
        short(&commit),
        ig.cfg.upstream_name,
        detail.subject,
        ig.commit_link(&commit)
            .map(|l| format!("{l}\n"))
            .unwrap_or_default(),
    );
    let base = ig.sub.commit(&status.merge_base)?;
    let mut plan = crate::advance::plan(ig, base, head.clone(), Vec::new(), 0, 0);
    plan.message = message;
    let (superproject_commit, exported) = crate::advance::commit_advance(ig, &plan, export)?;
    ig.info(format!(
        "carrying a revert of {} {} ({})",
        short(&commit),
        detail.subject,
        reason
    ));
    Ok(Reverted {
        reverted: commit,
        subject: detail.subject,
        reason,
        head,
        superproject_commit,
        exported,
    })
}

/// The commit reverting `commit` (whose parent is `parent`) on top of
/// `head`, or an error naming the conflicting files.
pub(crate) fn revert_onto(
    repo: &Repo,
    commit: &str,
    parent: &str,
    head: &str,
    subject: &str,
    reason: &str,
) -> Result<Oid, Error> {
    let head_tree = repo.tree_of(head)?;
    let tree = match repo.merge_tree(commit, head, parent)? {
        Merge::Clean { tree } => tree,
        Merge::Conflict { files } => {
            let mut err = Error::failed(format!(
                "the revert of {} does not apply on the pin",
                short(commit)
            ));
            for f in files {
                err = err.cause(format!("conflict: {f}"));
            }
            return Err(err.hint("nothing was changed: revert it by hand in the submodule (resolve, commit), then commit the pin"));
        }
    };
    if tree == head_tree {
        return Err(Error::usage(format!(
            "reverting {} changes nothing on the pin (its change is gone already)",
            short(commit)
        )));
    }
    let message = format!(
        "Revert \"{subject}\"\n\nThis reverts commit {commit}.\n\nLockstep-Reason: {reason}\n{REVERT_TRAILER} {commit}\n"
    );
    repo.commit_tree(&tree, &[head], &message, None, None)
}

/// A reason: one line, not empty, bounded.
fn check_reason(reason: &str) -> Result<String, Error> {
    let reason = reason.trim();
    if reason.is_empty() || reason.contains(['\n', '\r']) || reason.len() > MAX_REASON {
        return Err(Error::usage(format!(
            "--reason must be one line of 1 to {MAX_REASON} characters"
        ))
        .hint("say why the revert is carried, e.g. --reason \"breaks our ROCm lowering; fix in review\""));
    }
    Ok(reason.to_string())
}
