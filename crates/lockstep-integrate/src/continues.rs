//! `integrate continue`: a scheduled integrate picks up the open one
//! instead of starting over every night.
//!
//! The open integrate is the newest open pull request of the repository
//! whose head is an integrate branch (`[integrate] branch`) of the
//! repository itself. When there is one, its branch is fetched and checked
//! out as the integrate branch (the fixups people pushed after a call for
//! help included), and the loop goes on from its pin; the pull request is
//! the one `loop --publish` updates. Only when none is open (the last was
//! merged, or a person closed it) does a new integrate start, on a dated
//! name free both here and on the remote. `--dry-run` only says which
//! branch it would be (the workflow keys its verdict cache by it), after the
//! same checks the real run makes before it changes anything: where
//! `continue` would exit 2 (on an integrate branch, uncommitted changes, the
//! submodule off its pin), so does the dry run.
//!
//! Nothing is checked out over local work: a local branch of that name that
//! has diverged from the remote one is an error, as in `integrate resume`.

use lockstep_core::Error;
use serde::Serialize;

use crate::journal::StartJournal;
use crate::Integrate;

/// What `integrate continue` did (or, with `--dry-run`, would do).
#[derive(Debug, Clone, Serialize)]
pub struct Continued {
    /// The integrate branch the loop works on.
    pub branch: String,
    /// `resume` (an open pull request's branch) or `start` (a new one).
    pub action: Action,
    /// The open pull request taken up.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pull: Option<u64>,
    pub dry_run: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Action {
    Resume,
    Start,
}

/// `integrate continue [--dry-run]`.
pub fn continue_open(ig: &Integrate, dry_run: bool) -> Result<Continued, Error> {
    let (client, repo, remote, _) = crate::publish::github_repo(ig, "continue")?;
    let open = client.open_pulls(&repo)?.into_iter().find(|p| {
        p.head
            .as_ref()
            .is_some_and(|h| crate::start::is_integrate_branch(&ig.cfg, &h.branch))
    });
    let Some(pull) = open else {
        let branch = crate::start::free_branch_name_here_and_on(ig, &remote)?;
        if dry_run {
            // What `start` would refuse is refused here too (exit 2).
            crate::start::check_start(ig, Some(&branch))?;
        } else {
            crate::start::start(ig, Some(&branch), true)?;
        }
        return Ok(Continued {
            branch,
            action: Action::Start,
            pull: None,
            dry_run,
        });
    };
    let branch = pull
        .head
        .as_ref()
        .map(|h| h.branch.clone())
        .unwrap_or_default();
    if dry_run {
        // What taking it up refuses before it fetches (exit 2).
        ig.require_clean()?;
    } else {
        crate::continues::take_up(ig, &remote, &branch)?;
        ig.info(format!(
            "continuing the integrate of pull request #{} on {branch}",
            pull.number
        ));
    }
    Ok(Continued {
        branch,
        action: Action::Resume,
        pull: Some(pull.number),
        dry_run,
    })
}

/// Checks out `branch` as the remote has it (a local branch of that
/// name may be behind it, never diverged) and records it as the
/// integrate branch.
fn take_up(ig: &Integrate, remote: &str, branch: &str) -> Result<(), Error> {
    let _lock = ig.lock("integrate continue")?;
    let _session = crate::recover::begin_session(ig, "integrate continue")?;
    ig.require_clean()?;
    let sp = &ig.superproject;
    let tracking = format!("refs/remotes/{remote}/{branch}");
    sp.git(&[
        "fetch",
        "--quiet",
        "--",
        remote,
        &format!("+refs/heads/{branch}:{tracking}"),
    ])?;
    let theirs = sp.must_resolve(&tracking)?.to_string();
    if sp.branch_exists(branch)? {
        let mine = sp
            .must_resolve(&format!("refs/heads/{branch}"))?
            .to_string();
        if !sp.is_ancestor(&mine, &theirs)? && !sp.is_ancestor(&theirs, &mine)? {
            return Err(Error::failed(format!(
                "the local branch {branch} and {remote}/{branch} have diverged"
            ))
            .hint(format!(
                "nothing was changed: rebase or merge your commits onto {remote}/{branch} and push them, then continue"
            )));
        }
        if sp.is_ancestor(&mine, &theirs)? && mine != theirs {
            // Behind: fast-forward (by merge when it is checked out).
            if sp.current_branch()?.as_deref() == Some(branch) {
                sp.git(&["merge", "--ff-only", "--quiet", &theirs])?;
            } else {
                sp.git(&["branch", "--force", branch, &theirs])?;
            }
        }
    } else {
        sp.git(&["branch", "--no-track", branch, &theirs])?;
    }
    let base_ref = sp.must_resolve(&ig.cfg.base)?.to_string();
    let base = sp
        .merge_base(&base_ref, &format!("refs/heads/{branch}"))?
        .ok_or_else(|| {
            Error::failed(format!(
                "{branch} shares no history with the integrate base `{}`",
                ig.cfg.base
            ))
        })?;
    let state = StartJournal {
        branch: branch.to_string(),
        base,
        original_branch: sp.current_branch()?,
        original_head: sp.head()?,
    };
    let id = ig
        .store
        .begin(<StartJournal as crate::journal::Journaled>::KIND, &state)?;
    crate::start::finish_start(ig, id, &state)?;
    Ok(())
}
