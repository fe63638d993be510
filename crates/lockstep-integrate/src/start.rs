//! `integrate start`: a fresh integrate branch from the configured base, with
//! an empty commit that names it. Journaled, so a crash mid-start finishes on
//! rerun and `integrate abort --all` can return to where the user was.

use std::path::Path;

use crate::config::IntegrateConfig;
use lockstep_core::Error;
use lockstep_git::{Oid, Repo};
use serde::Serialize;

use crate::journal::{StartJournal, INTEGRATE_RECORD};
use crate::Integrate;

/// What `start` did.
#[derive(Debug, Clone, Serialize)]
pub struct Started {
    pub branch: String,
    pub base: Oid,
    pub commit: Oid,
}

/// How many integrate branches one day may have (`_1` ... `_999`).
const MAX_SAME_DAY: u32 = 999;

/// `[integrate] branch` with `{date}` filled in: `integrates/llvm-20261124`.
fn dated_branch_name(cfg: &IntegrateConfig) -> String {
    let date = jiff::Zoned::now().strftime("%Y%m%d").to_string();
    cfg.branch.replace("{date}", &date)
}

/// Checks the branch `start` would create (`--branch`, else the template's
/// result) in the superproject found from `root`: callers run it before the
/// store is opened, so that a refused name leaves nothing behind.
pub fn check_start_names(
    cfg: &IntegrateConfig,
    root: &Path,
    branch: Option<&str>,
) -> Result<(), Error> {
    let (name, source) = match branch {
        Some(name) => (name.to_string(), "--branch"),
        None => (dated_branch_name(cfg), "[integrate] branch"),
    };
    check_branch_name(&name, source)?;
    let superproject = Repo::discover(root)?;
    if let Some(current) = superproject.current_branch()? {
        if is_integrate_branch(cfg, &current) {
            return Err(on_integrate_branch(&current));
        }
    }
    let remotes = superproject.git(&["remote"])?;
    let remotes: Vec<&str> = remotes.lines().map(str::trim).collect();
    match branch_problem(&name, &remotes) {
        None => Ok(()),
        Some(what) => Err(Error::usage(format!(
            "`{name}` from {source} cannot be a branch name: {what}"
        ))
        .hint("use a plain branch name such as `integrates/llvm-20261124`; nothing was done")),
    }
}

/// Whether `branch` is a name `start` gives: the `[integrate] branch`
/// template with any date for `{date}`, perhaps with a `_N` suffix.
pub fn is_integrate_branch(cfg: &IntegrateConfig, branch: &str) -> bool {
    let Some((before, after)) = cfg.branch.split_once("{date}") else {
        return branch == cfg.branch
            || branch
                .strip_prefix(cfg.branch.as_str())
                .and_then(|rest| rest.strip_prefix('_'))
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    };
    let Some(rest) = branch.strip_prefix(before) else {
        return false;
    };
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits != 8 {
        return false;
    }
    let rest = &rest[digits..];
    let Some(tail) = rest.strip_prefix(after) else {
        return false;
    };
    tail.is_empty()
        || tail
            .strip_prefix('_')
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// The refusal of `start` on an integrate branch: a second start there
/// would branch a new integrate off the unfinished one.
fn on_integrate_branch(branch: &str) -> Error {
    Error::usage(format!(
        "the superproject is on the integrate branch `{branch}`: `integrate start` begins a new integrate from the base"
    ))
    .hint("continue this one with `lockstep integrate resume` (or `lockstep integrate loop`); to start another, check out the branch integrates start from first (`git switch main`); nothing was done")
}

/// Why `name` cannot be an integrate branch in a superproject with
/// `remotes`, or `None`: what git refuses or misreads
/// ([`lockstep_git::branch_name_problem`]) and what it would shadow
/// ([`shadowed`]).
pub fn branch_problem(name: &str, remotes: &[&str]) -> Option<String> {
    lockstep_git::branch_name_problem(name).or_else(|| shadowed(name, remotes))
}

/// What a local branch `name` would hide from git's reading of names
/// (`git rev-parse` tries `refs/NAME`, `refs/tags/NAME` and
/// `refs/heads/NAME` before `refs/remotes/NAME`), given the superproject's
/// `remotes`; `None` when it hides nothing.
pub fn shadowed(name: &str, remotes: &[&str]) -> Option<String> {
    let first = name.split('/').next().unwrap_or(name);
    if name.contains('/') && matches!(first, "heads" | "tags" | "remotes") {
        return Some(format!(
            "git reads `{name}` as refs/{name}, not as the branch refs/heads/{name}"
        ));
    }
    let remote = remotes.iter().find(|r| **r == first)?;
    Some(if name == *remote {
        format!("it would shadow the remote `{remote}` (git reads `{remote}` as its default branch, refs/remotes/{remote}/HEAD)")
    } else {
        format!(
            "it would shadow the remote-tracking branch `{name}` of the remote `{remote}` (git would read `{name}` as this local branch instead)"
        )
    })
}

/// A usage error unless `name` can be an integrate branch (`source` says
/// where the name came from).
fn check_branch_name(name: &str, source: &str) -> Result<(), Error> {
    match lockstep_git::branch_name_problem(name) {
        None => Ok(()),
        Some(problem) => Err(Error::usage(format!(
            "`{name}` from {source} cannot be a branch name: {problem}"
        ))
        .hint("use a plain branch name such as `integrates/llvm-20261124`; nothing was done")),
    }
}

/// What `start` checks before it changes anything: the branch name, the
/// branch checked out (not an integrate branch), no uncommitted
/// changes, the submodule at its pin. `continue --dry-run` runs these
/// same checks, so that it fails (exit 2) where `continue` would.
pub(crate) fn check_start(ig: &Integrate, branch: Option<&str>) -> Result<(), Error> {
    check_start_names(&ig.cfg, ig.superproject.dir(), branch)?;
    if let (Some(current), Some(record)) = (
        ig.superproject.current_branch()?,
        ig.store.get::<StartJournal>(INTEGRATE_RECORD)?,
    ) {
        if current == record.branch {
            return Err(on_integrate_branch(&current));
        }
    }
    crate::start::check_clean_at_pin(ig)
}

/// No uncommitted changes, and the submodule at the commit the
/// superproject pins.
fn check_clean_at_pin(ig: &Integrate) -> Result<(), Error> {
    ig.require_clean()?;
    let pin = ig.pin()?;
    if ig.checked_out()? != pin {
        return Err(Error::usage(format!(
            "{} is not at the commit the superproject pins",
            ig.pin_of().describe()
        ))
        .hint(ig.pin_of().restore_hint()));
    }
    Ok(())
}

/// `integrate start [--branch NAME]`.
pub fn start(ig: &Integrate, branch: Option<&str>, fetch: bool) -> Result<Started, Error> {
    crate::start::check_start(ig, branch)?;
    let _lock = ig.lock("integrate start")?;
    let _session = crate::recover::begin_session(ig, "integrate start")?;
    // Again under the lock: nothing changed the tree meanwhile.
    crate::start::check_clean_at_pin(ig)?;
    if fetch {
        if let Some((remote, _)) = ig.cfg.base.split_once('/') {
            if ig.superproject.remote_url(remote)?.is_some() {
                ig.info(format!("fetching {remote}"));
                ig.superproject.fetch(remote, &[])?;
            }
        }
        ig.fetch_upstream()?;
    }
    let base = ig.superproject.must_resolve(&ig.cfg.base).map_err(|e| {
        Error::from(e)
            .context(format!(
                "the integrate base `{}` does not exist",
                ig.cfg.base
            ))
            .hint("set [integrate] base in lockstep.toml to an existing ref")
    })?;
    let branch = match branch {
        Some(name) => {
            if ig.superproject.branch_exists(name)? {
                return Err(Error::usage(format!("branch `{name}` already exists"))
                    .hint("choose another --branch, or omit it for a dated name"));
            }
            name.to_string()
        }
        None => crate::start::free_branch_name(ig)?,
    };
    let state = StartJournal {
        branch: branch.clone(),
        base,
        original_branch: ig.superproject.current_branch()?,
        original_head: ig.superproject.head()?,
    };
    let id = ig
        .store
        .begin(<StartJournal as crate::journal::Journaled>::KIND, &state)?;
    crate::start::finish_start(ig, id, &state).map_err(|e| {
        e.context(format!("cannot start the integrate branch {branch}"))
            .hint("fix the cause and rerun (the start is finished then), or `lockstep integrate abort` to undo it")
    })
}

/// [`crate::start::free_branch_name`], also free on `remote` (a fresh
/// clone in CI has none of the earlier integrates' branches locally).
pub(crate) fn free_branch_name_here_and_on(ig: &Integrate, remote: &str) -> Result<String, Error> {
    let name = dated_branch_name(&ig.cfg);
    let taken = |candidate: &str| -> Result<bool, Error> {
        Ok(ig.superproject.branch_exists(candidate)?
            || ig
                .superproject
                .ls_remote_branch(remote, candidate)?
                .is_some())
    };
    if !taken(&name)? {
        return Ok(name);
    }
    for n in 1..=MAX_SAME_DAY {
        let candidate = format!("{name}_{n}");
        if !taken(&candidate)? {
            return Ok(candidate);
        }
    }
    Err(Error::usage(format!(
        "`{name}` and {MAX_SAME_DAY} numbered variants of it already exist here or on `{remote}`"
    ))
    .hint("delete old integrate branches"))
}

/// The dated name, with `_1`, `_2` ... appended while taken.
fn free_branch_name(ig: &Integrate) -> Result<String, Error> {
    let name = dated_branch_name(&ig.cfg);
    if !ig.superproject.branch_exists(&name)? {
        return Ok(name);
    }
    for n in 1..=MAX_SAME_DAY {
        let candidate = format!("{name}_{n}");
        if !ig.superproject.branch_exists(&candidate)? {
            return Ok(candidate);
        }
    }
    Err(Error::usage(format!(
        "`{name}` and {MAX_SAME_DAY} numbered variants of it already exist"
    ))
    .hint("delete old integrate branches, or pass --branch NAME"))
}

pub(crate) fn finish_start(
    ig: &Integrate,
    id: i64,
    state: &StartJournal,
) -> Result<Started, Error> {
    let sp = &ig.superproject;
    if !sp.branch_exists(&state.branch)? {
        sp.git(&["branch", "--no-track", &state.branch, &state.base])?;
    }
    if sp.current_branch()?.as_deref() != Some(state.branch.as_str()) {
        sp.git(&["checkout", "-q", &state.branch])?;
    }
    crate::checkout::sync_submodule_to_pin(ig)?;
    let commit = if sp.head()? == state.base {
        let message = format!(
            "Start {} integrate {}\n",
            ig.cfg.upstream_name, state.branch
        );
        sp.commit_staged(&message, true)?
    } else {
        sp.head()?
    };
    ig.store.set(INTEGRATE_RECORD, state)?;
    crate::halt::clear_halt(ig)?;
    ig.store.finish(id, "done")?;
    Ok(Started {
        branch: state.branch.clone(),
        base: state.base.clone(),
        commit,
    })
}

/// Returns to where the user was before `start` (the branch is kept).
pub(crate) fn undo_start(ig: &Integrate, state: &StartJournal) -> Result<(), Error> {
    crate::checkout::return_to(ig, state.original_branch.as_deref(), &state.original_head)
}

/// A start is finished by a rerun and undone by `abort` here.
impl crate::journal::Journaled for StartJournal {
    const KIND: &'static str = "start";

    fn resume(&self, ig: &Integrate, id: i64) -> Result<Option<crate::journal::Resumed>, Error> {
        ig.info(format!(
            "finishing the interrupted start of {}",
            self.branch
        ));
        crate::start::finish_start(ig, id, self).map_err(|e| {
            e.context(format!(
                "cannot finish the interrupted start of {}",
                self.branch
            ))
            .hint("fix the cause and rerun, or `lockstep integrate abort` to undo the start")
        })?;
        Ok(None)
    }

    fn undo(&self, ig: &Integrate) -> Result<String, Error> {
        crate::start::undo_start(ig, self)?;
        Ok(format!("start of {}", self.branch))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integrate_branches_are_told_by_the_template() {
        let mut cfg = IntegrateConfig {
            branch: "integrates/llvm-{date}".into(),
            ..IntegrateConfig::default()
        };
        for name in [
            "integrates/llvm-20261127",
            "integrates/llvm-20261127_1",
            "integrates/llvm-20251231_42",
        ] {
            assert!(is_integrate_branch(&cfg, name), "{name}");
        }
        for name in [
            "main",
            "integrates/llvm-2026112",
            "integrates/llvm-20261127_",
            "integrates/llvm-20261127-x",
            "integrates/llvm-20261127_1a",
            "integrates/mlir-20261127",
        ] {
            assert!(!is_integrate_branch(&cfg, name), "{name}");
        }
        cfg.branch = "bump-llvm".into();
        assert!(is_integrate_branch(&cfg, "bump-llvm"));
        assert!(is_integrate_branch(&cfg, "bump-llvm_3"));
        assert!(!is_integrate_branch(&cfg, "bump-llvm-3"));
    }

    #[test]
    fn names_that_shadow_a_remote_or_another_namespace_are_named() {
        let remotes = ["origin", "upstream"];
        for name in [
            "origin/main",
            "upstream/x/y",
            "origin",
            "tags/v1",
            "remotes/a/b",
            "heads/x",
        ] {
            assert!(shadowed(name, &remotes).is_some(), "{name}");
        }
        for name in ["integrates/llvm-1", "originals/x", "mine/origin", "tags"] {
            assert_eq!(shadowed(name, &remotes), None, "{name}");
        }
    }
}
