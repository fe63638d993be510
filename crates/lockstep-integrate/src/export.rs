//! Publishing patched submodule heads so every pin the superproject records
//! stays fetchable.
//!
//! The scheme is megabump's splice: the export branch only ever fast-forwards.
//! When the pinned head is not already on the branch, a "splice" commit with the
//! head's tree and two parents (the head, then the old branch tip) is pushed, so
//! earlier rebased heads stay reachable and protected branches accept the push.
//! Never a force push.

use lockstep_core::Error;
use lockstep_git::Oid;
use serde::Serialize;

use crate::Integrate;

/// What an export did.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Exported {
    /// The head is an upstream commit: nothing to publish.
    PureUpstream { head: Oid },
    /// The branch already contains the head.
    AlreadyThere { branch: String, head: Oid },
    /// The branch did not exist and now points at the head.
    Created { branch: String, head: Oid },
    /// A splice commit fast-forwarded the branch.
    Spliced {
        branch: String,
        head: Oid,
        splice: Oid,
        previous: Oid,
    },
}

impl Exported {
    pub fn describe(&self) -> String {
        match self {
            Exported::PureUpstream { .. } => "nothing to export (pure upstream)".into(),
            Exported::AlreadyThere { branch, .. } => format!("already on {branch}"),
            Exported::Created { branch, head } => {
                format!("pushed {} to new branch {branch}", crate::halt::short(head))
            }
            Exported::Spliced { branch, splice, .. } => {
                format!("spliced onto {branch} ({})", crate::halt::short(splice))
            }
        }
    }
}

/// The export branch name for the superproject's current branch.
pub fn export_branch(ig: &Integrate) -> Result<String, Error> {
    let branch = ig.branch()?;
    let name = ig
        .cfg
        .export
        .branch
        .replace("{repo}", &ig.repo_name())
        .replace("{branch}", &branch);
    match lockstep_git::branch_name_problem(&name) {
        None => Ok(name),
        Some(problem) => Err(Error::usage(format!(
            "the export branch `{name}` ([integrate.export] branch = {:?}) cannot be a branch name: {problem}",
            ig.cfg.export.branch
        ))
        .hint("change [integrate.export] branch in lockstep.toml (or the directory name {repo} stands for); nothing was exported")),
    }
}

/// `integrate export`: publishes the pin recorded in the superproject's HEAD.
pub fn export(ig: &Integrate) -> Result<Exported, Error> {
    let _lock = ig.lock("integrate export")?;
    let _session = crate::recover::begin_session(ig, "integrate export")?;
    let pin = ig.pin()?;
    crate::export::export_head(ig, &pin)
}

/// Publishes `head` with the splice scheme.
pub fn export_head(ig: &Integrate, head: &str) -> Result<Exported, Error> {
    if !ig.pin_of().carries_patches() {
        return Err(Error::usage(format!(
            "nothing to export: {} carries no patches",
            ig.pin_of().describe()
        ))
        .hint(
            "a pin kept in a file pins upstream's own commits; export is for patched submodules",
        ));
    }
    let upstream = ig.upstream_head()?;
    if ig.sub.is_ancestor(head, &upstream)? {
        return Ok(Exported::PureUpstream {
            head: head.to_string(),
        });
    }
    let remote = &ig.cfg.export.remote;
    let branch = crate::export::export_branch(ig)?;
    let remote_ref = format!("refs/lockstep/export/{branch}");
    let tip = ig.sub.ls_remote_branch(remote, &branch).map_err(|e| {
        e.context(format!(
            "cannot read export branch `{branch}` from remote `{remote}`"
        ))
        .hint("check [integrate.export] remote in lockstep.toml")
    })?;
    let Some(tip) = tip else {
        ig.sub.push(remote, head, &branch)?;
        return Ok(crate::export::exported(
            ig,
            Exported::Created {
                branch,
                head: head.to_string(),
            },
        ));
    };
    if tip == head {
        return Ok(Exported::AlreadyThere {
            branch,
            head: head.to_string(),
        });
    }
    if !ig.sub.has_commit(&tip)? {
        ig.sub
            .fetch(remote, &[&format!("+refs/heads/{branch}:{remote_ref}")])?;
    }
    if ig.sub.is_ancestor(head, &tip)? {
        return Ok(Exported::AlreadyThere {
            branch,
            head: head.to_string(),
        });
    }
    let tree = ig.sub.tree_of(head)?;
    let message = format!("Splice submodule rebase {head} onto {tip}\n");
    let splice = ig
        .sub
        .commit_tree(&tree, &[head, &tip], &message, None, None)?;
    ig.sub.push(remote, &splice, &branch).map_err(|e| {
        e.context(format!(
            "the export branch `{branch}` moved while exporting"
        ))
        .hint("rerun `lockstep integrate export`; it splices onto the new tip (never a force push)")
    })?;
    Ok(crate::export::exported(
        ig,
        Exported::Spliced {
            branch,
            head: head.to_string(),
            splice,
            previous: tip,
        },
    ))
}

fn exported(ig: &Integrate, e: Exported) -> Exported {
    if let Exported::Created { branch, .. } | Exported::Spliced { branch, .. } = &e {
        ig.emit(crate::events::IntegrateEvent::Exported {
            branch: branch.clone(),
            commit: match &e {
                Exported::Spliced { splice, .. } => splice.clone(),
                Exported::Created { head, .. } => head.clone(),
                _ => String::new(),
            },
        });
    }
    e
}
