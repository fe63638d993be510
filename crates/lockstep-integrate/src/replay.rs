//! Replaying the carried patch stack onto another upstream commit.
//!
//! The replay is computed entirely in the object store (`git merge-tree
//! --write-tree` and `git commit-tree`): no work tree, no index, no rebase
//! state. A conflict therefore cannot leave a half-done rebase behind, and a
//! process killed mid-replay leaves only unreferenced objects. Replays are
//! deterministic (author kept, committer date taken from the target), so the
//! same stack onto the same target always gives the same commit ids.

use std::collections::HashMap;

use lockstep_core::Error;
use lockstep_git::{CommitDetail, Merge, Oid, Repo};
use serde::{Deserialize, Serialize};

/// A carried patch as the replay needs it.
#[derive(Debug, Clone)]
pub struct StackEntry {
    pub detail: CommitDetail,
    /// Stable patch-id of the change (for cache keys).
    pub patch_id: String,
}

/// A patch the replay dropped because upstream already has its change (or,
/// for a carried revert, reverted or relanded the commit itself).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dropped {
    pub sha: Oid,
    pub subject: String,
    /// Why, for a carried revert: `reverted upstream in SHA`, `relanded
    /// upstream in SHA`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// What replaying onto one target gave.
#[derive(Debug, Clone)]
pub enum Replay {
    /// The patched head; `kept` are the patch-ids that still apply.
    Applied {
        head: Oid,
        kept: Vec<String>,
        dropped: Vec<Dropped>,
    },
    /// Patch `patch` does not apply; `files` conflict.
    Conflict {
        sha: Oid,
        subject: String,
        files: Vec<String>,
    },
}

/// Loads the stack `base..head` (oldest first) with patch-ids.
pub fn load_stack(repo: &Repo, base: &str, head: &str) -> Result<Vec<StackEntry>, Error> {
    if base == head {
        return Ok(Vec::new());
    }
    // Two git processes for the whole stack, not a few per patch.
    let details = repo.commit_details(&["--reverse", &format!("{base}..{head}")])?;
    let shas: Vec<&str> = details.iter().map(|d| d.sha.as_str()).collect();
    let mut ids: HashMap<Oid, String> = repo
        .patch_ids_of(&shas)?
        .into_iter()
        .map(|(id, sha)| (sha, id))
        .collect();
    Ok(details
        .into_iter()
        .map(|detail| StackEntry {
            patch_id: ids
                .remove(&detail.sha)
                .unwrap_or_else(|| format!("empty:{}", detail.sha)),
            detail,
        })
        .collect())
}

/// Replays `stack` onto `onto`.
pub fn replay(repo: &Repo, stack: &[StackEntry], onto: &str) -> Result<Replay, Error> {
    let onto_detail = repo.commit_detail(onto)?;
    let committer_date = onto_detail.committer_date;
    let mut head = onto.to_string();
    let mut head_tree = onto_detail.tree;
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    // The upstream commit the stack sits on: the range `base..onto` is what
    // this replay takes from upstream.
    let base = stack
        .first()
        .and_then(|e| e.detail.parents.first().cloned())
        .unwrap_or_else(|| onto.to_string());
    for entry in stack {
        let patch = &entry.detail;
        let Some(parent) = patch.parents.first() else {
            return Err(Error::failed(format!(
                "carried patch {} has no parent",
                patch.sha
            )));
        };
        if let Some(reverted) = crate::reverts::reverted_by_patch(&patch.message) {
            if let Some((by, what)) = crate::reverts::caught_up(repo, &base, onto, &reverted)? {
                dropped.push(Dropped {
                    sha: patch.sha.clone(),
                    subject: patch.subject.clone(),
                    why: Some(format!("{what} in {}", &by[..by.len().min(12)])),
                });
                continue;
            }
        }
        match repo.merge_tree(parent, &head, &patch.sha)? {
            Merge::Conflict { files } => {
                return Ok(Replay::Conflict {
                    sha: patch.sha.clone(),
                    subject: patch.subject.clone(),
                    files,
                })
            }
            Merge::Clean { tree } if tree == head_tree => dropped.push(Dropped {
                sha: patch.sha.clone(),
                subject: patch.subject.clone(),
                why: None,
            }),
            Merge::Clean { tree } => {
                head = repo.commit_tree(
                    &tree,
                    &[&head],
                    &patch.message,
                    Some((&patch.author_name, &patch.author_email, &patch.author_date)),
                    Some(&committer_date),
                )?;
                head_tree = tree;
                kept.push(entry.patch_id.clone());
            }
        }
    }
    Ok(Replay::Applied {
        head,
        kept,
        dropped,
    })
}
