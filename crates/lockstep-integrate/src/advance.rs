//! Advancing the pin: `integrate next`, and the commits the loop makes.
//!
//! An advance is journaled before it acts: the submodule moves to the new
//! (replayed) head, exactly the submodule path is staged, the superproject gets
//! `Advance <upstream> to <sha>: <subject> (<author> on <date>) (<k> of <n>)`,
//! and the patched head is exported. A rerun after a crash finishes it.

use lockstep_core::Error;
use lockstep_git::{Commit, Oid};
use serde::Serialize;

use crate::halt::{ConflictInfo, Halt, HaltKind};
use crate::journal::AdvanceJournal;
use crate::replay::{load_stack, replay, Dropped, Replay};
use crate::Integrate;

/// A planned advance.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    pub target: Commit,
    /// The new submodule head (the target itself when nothing is carried).
    pub head: Oid,
    pub dropped: Vec<Dropped>,
    /// 1-based position of the target in the pending list and its length.
    pub position: usize,
    pub pending: usize,
    pub message: String,
}

/// What `integrate next` did.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum NextOutcome {
    UpToDate,
    WouldAdvance {
        plan: Plan,
    },
    WouldConflict {
        target: Commit,
        conflict: ConflictInfo,
    },
    Advanced {
        plan: Plan,
        superproject_commit: Oid,
        export: Option<String>,
    },
    Conflict {
        halt: Box<Halt>,
    },
    /// A crashed `next` was finished instead of starting a new advance.
    Resumed {
        resumed: crate::journal::Resumed,
    },
}

/// Options of `integrate next`.
#[derive(Debug, Clone, Default)]
pub struct NextOptions {
    pub to: Option<String>,
    pub no_export: bool,
    pub dry_run: bool,
}

/// `integrate next`.
///
/// A usage error leaves the repositories as they were: `--to` is
/// checked first, and when it is refused only after upstream was fetched
/// (it may name a commit the fetch brings), the fetch's remote and
/// tracking ref are put back.
pub fn next(ig: &Integrate, opts: &NextOptions) -> Result<NextOutcome, Error> {
    if let Some(to) = &opts.to {
        crate::context::check_rev("--to", to)?;
    }
    // An advance is a commit on the integrate branch: a detached HEAD
    // is refused before anything runs.
    if !opts.dry_run {
        ig.branch()?;
    }
    ig.or_restore_upstream(|| crate::advance::next_steps(ig, opts))
}

fn next_steps(ig: &Integrate, opts: &NextOptions) -> Result<NextOutcome, Error> {
    let _lock = if opts.dry_run {
        None
    } else {
        Some(ig.lock("integrate next")?)
    };
    let session = if opts.dry_run {
        None
    } else {
        Some(crate::recover::begin_session(ig, "integrate next")?)
    };
    // Rerunning `next` after a crash finishes the interrupted advance: that
    // was this command's step, so it stops there.
    if let Some(resumed) = session.as_ref().and_then(|s| s.resumed.last()) {
        return Ok(NextOutcome::Resumed {
            resumed: resumed.clone(),
        });
    }
    ig.require_clean()?;
    let status = crate::status::position(ig)?;
    let (target, position) = match &opts.to {
        None => match status.pending.first() {
            Some(c) => (c.clone(), 1),
            None if status.upstream_head != status.merge_base => {
                // Only untracked commits remain: take upstream head itself.
                (ig.sub.commit(&status.upstream_head)?, 0)
            }
            None => return Ok(NextOutcome::UpToDate),
        },
        Some(rev) => crate::advance::resolve_target(
            ig,
            rev,
            &status.merge_base,
            &status.upstream_head,
            &status.pending,
        )?,
    };
    let stack = load_stack(&ig.sub, &status.merge_base, &status.current)?;
    let replayed = if stack.is_empty() {
        Replay::Applied {
            head: target.sha.clone(),
            kept: vec![],
            dropped: vec![],
        }
    } else {
        replay(&ig.sub, &stack, &target.sha)?
    };
    match replayed {
        Replay::Conflict {
            sha,
            subject,
            files,
        } => {
            let conflict = ConflictInfo {
                patch: sha,
                subject,
                files,
            };
            if opts.dry_run {
                return Ok(NextOutcome::WouldConflict { target, conflict });
            }
            let halt = crate::advance::conflict_halt(ig, &target, &status.merge_base, conflict)?;
            Ok(NextOutcome::Conflict {
                halt: Box::new(halt),
            })
        }
        Replay::Applied { head, dropped, .. } => {
            let plan =
                crate::advance::plan(ig, target, head, dropped, position, status.pending.len());
            if opts.dry_run {
                return Ok(NextOutcome::WouldAdvance { plan });
            }
            let (superproject_commit, export) =
                crate::advance::commit_advance(ig, &plan, !opts.no_export)?;
            if let Some(halt) = crate::halt::halt(ig)? {
                if ig.sub.is_ancestor(&halt.culprit.sha, &plan.target.sha)? {
                    crate::halt::clear_halt(ig)?;
                }
            }
            Ok(NextOutcome::Advanced {
                plan,
                superproject_commit,
                export,
            })
        }
    }
}

/// Resolves `--to REV` inside the pending range; returns the commit and its
/// 1-based position among the pending affecting commits (the number of
/// pending commits it includes).
fn resolve_target(
    ig: &Integrate,
    rev: &str,
    base: &str,
    upstream: &str,
    pending: &[Commit],
) -> Result<(Commit, usize), Error> {
    let range_hint = || {
        format!(
            "the pending range is {}..{} ({}); `lockstep integrate status` lists them",
            crate::halt::short(base),
            crate::halt::short(upstream),
            lockstep_core::words::count(pending.len(), "affecting commit", "affecting commits")
        )
    };
    let Some(sha) = ig.sub.resolve(rev)? else {
        return Err(Error::usage(format!(
            "`{rev}` does not name exactly one commit in {}",
            ig.pin_of().history_name()
        ))
        .cause("it is unknown, or an ambiguous abbreviation")
        .hint(range_hint()));
    };
    let in_range =
        sha != base && ig.sub.is_ancestor(base, &sha)? && ig.sub.is_ancestor(&sha, upstream)?;
    if !in_range {
        return Err(
            Error::usage(format!("`{rev}` ({sha}) is not in the pending range")).hint(range_hint()),
        );
    }
    if let Some(i) = pending.iter().position(|c| c.sha == sha) {
        return Ok((pending[i].clone(), i + 1));
    }
    // An untracked commit: count the pending commits it includes.
    let (mut lo, mut hi) = (0usize, pending.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        if ig.sub.is_ancestor(&pending[mid].sha, &sha)? {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    Ok((ig.sub.commit(&sha)?, lo))
}

/// Builds the commit message and plan for advancing to `target`.
pub fn plan(
    ig: &Integrate,
    target: Commit,
    head: Oid,
    dropped: Vec<Dropped>,
    position: usize,
    pending: usize,
) -> Plan {
    let date = target.date.get(..10).unwrap_or(&target.date).to_string();
    let mut message = format!(
        "Advance {} to {}: {} ({} on {}) ({} of {})\n",
        ig.cfg.upstream_name, target.sha, target.subject, target.author, date, position, pending
    );
    if !dropped.is_empty() {
        message.push('\n');
        for d in &dropped {
            message.push_str(&format!(
                "Lockstep-Dropped-Patch: {} {}{}\n",
                d.sha,
                d.subject,
                d.why
                    .as_deref()
                    .map(|w| format!(" ({w})"))
                    .unwrap_or_default()
            ));
        }
    }
    Plan {
        target,
        head,
        dropped,
        position,
        pending,
        message,
    }
}

/// Moves the submodule, commits the new pin, exports. Journaled.
pub fn commit_advance(
    ig: &Integrate,
    plan: &Plan,
    export: bool,
) -> Result<(Oid, Option<String>), Error> {
    let state = AdvanceJournal {
        target: plan.target.sha.clone(),
        superproject_before: ig.superproject.head()?,
        submodule_before: ig.checked_out()?,
        new_head: plan.head.clone(),
        message: plan.message.clone(),
        export,
    };
    let id = ig
        .store
        .begin(<AdvanceJournal as crate::journal::Journaled>::KIND, &state)?;
    crate::advance::finish_advance(ig, id, &state)
}

/// Rolls an advance forward from wherever it stopped.
pub(crate) fn finish_advance(
    ig: &Integrate,
    id: i64,
    state: &AdvanceJournal,
) -> Result<(Oid, Option<String>), Error> {
    let head = ig.superproject.head()?;
    let committed = if head == state.superproject_before {
        false
    } else {
        let parent = ig.superproject.resolve("HEAD^")?;
        if parent.as_deref() == Some(state.superproject_before.as_str())
            && ig.pin()? == state.new_head
        {
            true
        } else {
            return Err(Error::failed(
                "cannot finish the interrupted advance: the superproject moved",
            )
            .cause(format!(
                "expected HEAD at {} or one commit after it",
                state.superproject_before
            ))
            .hint("run `lockstep integrate abort` to drop the interrupted step"));
        }
    };
    let current = ig.checked_out()?;
    crate::checkout::checkout_submodule(
        ig,
        &state.new_head,
        &[&current, &state.new_head, &state.submodule_before],
    )?;
    let commit = if committed {
        head
    } else {
        ig.stage_pin(&state.new_head)?;
        let commit = ig.superproject.commit_staged(&state.message, false)?;
        ig.emit(crate::events::IntegrateEvent::Advanced {
            commit: state.target.clone(),
            superproject_commit: commit.clone(),
            message: state.message.lines().next().unwrap_or("").to_string(),
        });
        commit
    };
    // A pin kept in a file carries no patches: nothing to export.
    let exported = if state.export && ig.pin_of().carries_patches() {
        Some(crate::export::export_head(ig, &state.new_head)?.describe())
    } else {
        None
    };
    ig.store.finish(id, "done")?;
    Ok((commit, exported))
}

/// Records a conflict halt at `target`.
pub(crate) fn conflict_halt(
    ig: &Integrate,
    target: &Commit,
    last_good: &str,
    conflict: ConflictInfo,
) -> Result<Halt, Error> {
    let last_good = ig.sub.commit(last_good)?;
    let (untracked, untracked_total) =
        crate::status::untracked_between(ig, &last_good.sha, &target.sha)?;
    crate::halt::record_halt(
        ig,
        Halt {
            kind: HaltKind::Conflict,
            culprit: target.clone(),
            last_good,
            at_pin: false,
            branch: ig.superproject.current_branch()?.unwrap_or_default(),
            superproject_head: ig.superproject.head()?,
            probe_head: None,
            conflict: Some(conflict),
            log: None,
            exit: None,
            skipped: vec![],
            untracked,
            untracked_total,
            smoke: ig.cfg.smoke.clone(),
            pin: ig.pin_path().to_string(),
            submodule: ig.pin_of().checkout_path().map(String::from),
            superproject: ig.superproject.dir().display().to_string(),
            link: ig.commit_link(&target.sha),
            report_path: String::new(),
            created_at: jiff::Timestamp::now().to_string(),
        },
    )
}

/// An advance is finished by a rerun and undone by `abort` here, beside
/// the code that journals it.
impl crate::journal::Journaled for AdvanceJournal {
    const KIND: &'static str = "advance";

    fn resume(&self, ig: &Integrate, id: i64) -> Result<Option<crate::journal::Resumed>, Error> {
        ig.info(format!(
            "finishing the interrupted advance to {}",
            self.target
        ));
        let (commit, export) = crate::advance::finish_advance(ig, id, self).map_err(|e| {
            e.context("cannot finish an interrupted advance")
                .hint("fix the cause and rerun, or `lockstep integrate abort` to undo the advance")
        })?;
        Ok(Some(crate::journal::Resumed {
            target: self.target.clone(),
            superproject_commit: commit,
            message: self.message.clone(),
            export,
        }))
    }

    fn undo(&self, ig: &Integrate) -> Result<String, Error> {
        let head = ig.superproject.head()?;
        if head != self.superproject_before {
            let parent = ig.superproject.resolve("HEAD^")?;
            if parent.as_deref() == Some(self.superproject_before.as_str())
                && ig.pin()? == self.new_head
            {
                ig.superproject
                    .git(&["reset", "-q", "--keep", &self.superproject_before])?;
            } else {
                return Err(
                    Error::failed("the superproject moved since the interrupted advance")
                        .hint("inspect `git log` and reset by hand"),
                );
            }
        }
        // Unstage the new pin an interrupted commit may have left staged.
        ig.superproject.git(&["reset", "-q", "--", ig.pin_path()])?;
        let current = ig.checked_out()?;
        crate::checkout::checkout_submodule(
            ig,
            &self.submodule_before,
            &[&current, &self.new_head, &self.submodule_before],
        )?;
        Ok(format!("advance to {}", self.target))
    }
}
