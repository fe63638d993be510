//! `integrate bisect`: find the first bad commit with a user command, with the
//! submodule's carried patches handled.
//!
//! Submodule mode (default) bisects upstream commits: at every step the
//! pristine upstream commit gets the carried patch stack replayed onto it, the
//! result is checked out, and the command runs in the superproject. Superproject
//! mode bisects the integrate branch itself, updating the submodule at every
//! step (what `git bisect` alone does not do). Exit codes follow
//! `git bisect run`: 0 good, 125 skip, 1-127 bad, anything else aborts.
//! Verdicts are cached in the store like smoke results.

use std::time::Duration;

use lockstep_core::hash::Framed;
use lockstep_core::process::Spec;
use lockstep_core::Error;
use lockstep_git::{Commit, Oid};
use serde::Serialize;

use crate::journal::SuperBisectJournal;
use crate::probe::{journal_value, run_cached, CachedRun, Prober, Verdict};
use crate::replay::load_stack;
use crate::Integrate;
use lockstep_bisect::narrow;

/// Options of `integrate bisect`.
#[derive(Debug, Clone)]
pub struct BisectOptions {
    pub good: String,
    pub bad: String,
    pub superproject: bool,
    pub command: Vec<String>,
    pub timeout: Option<Duration>,
}

/// One tested commit.
#[derive(Debug, Clone, Serialize)]
pub struct Step {
    pub commit: Commit,
    pub verdict: Verdict,
    pub cached: bool,
    pub log: Option<String>,
}

/// What the bisect found.
#[derive(Debug, Clone, Serialize)]
pub struct BisectResult {
    pub mode: String,
    pub first_bad: Commit,
    pub last_good: Option<Commit>,
    /// Untestable commits that lie between the last good and the first bad:
    /// the first bad commit may be any of them.
    pub ambiguous: Vec<Oid>,
    pub candidates: usize,
    pub steps: Vec<Step>,
    pub runs: usize,
}

/// What a search went through: its steps, the candidates it skipped (by
/// index) and how many smokes it ran.
#[derive(Default)]
pub(crate) struct Trail {
    pub steps: Vec<Step>,
    pub skipped: Vec<usize>,
    pub runs: usize,
}

/// `integrate bisect`.
pub fn bisect(ig: &Integrate, opts: &BisectOptions) -> Result<BisectResult, Error> {
    if opts.command.is_empty() {
        return Err(Error::usage("no command to bisect with")
            .hint("pass it after `--`: lockstep integrate bisect --good A --bad B -- ./repro.sh"));
    }
    crate::context::check_rev("--good", &opts.good)?;
    crate::context::check_rev("--bad", &opts.bad)?;
    let _lock = ig.lock("integrate bisect")?;
    let _session = crate::recover::begin_session(ig, "integrate bisect")?;
    ig.require_clean()?;
    if opts.superproject {
        crate::bisect::bisect_superproject(ig, opts)
    } else {
        // A usage error (a revision unknown even after the fetch) puts
        // the upstream remote and its tracking ref back.
        ig.or_restore_upstream(|| crate::bisect::bisect_submodule(ig, opts))
    }
}

pub(crate) fn candidates_in(
    repo: &lockstep_git::Repo,
    good: &str,
    bad: &str,
    first_parent: bool,
) -> Result<Vec<Commit>, Error> {
    let good_sha = repo.must_resolve(good)?;
    let bad_sha = repo.must_resolve(bad)?;
    lockstep_bisect::require_range(&good_sha.to_string(), &bad_sha.to_string(), good, bad)?;
    if !repo.is_ancestor(&good_sha, &bad_sha)? {
        return Err(
            Error::usage(format!("--good {good} is not an ancestor of --bad {bad}"))
                .hint("give an older good commit and a newer bad one"),
        );
    }
    let exclude = format!("^{good_sha}");
    let mut args = vec![bad_sha.as_str(), exclude.as_str()];
    if first_parent {
        args.insert(0, "--first-parent");
    } else {
        args.insert(0, "--ancestry-path");
    }
    repo.log(&args, &[])
}

/// The upstream commits a submodule bisect steps through (`good..bad`,
/// patched commits standing for their upstream base), the good commit
/// and the carried patch stack replayed at each step.
pub(crate) fn upstream_range(
    ig: &Integrate,
    opts: &BisectOptions,
) -> Result<(Vec<Commit>, Oid, Vec<crate::replay::StackEntry>), Error> {
    let upstream = ig.upstream_head()?;
    let current = ig.checked_out()?;
    let merge_base = ig
        .sub
        .merge_base(&current, &upstream)?
        .unwrap_or_else(|| current.clone());
    // Patched commits given as good/bad stand for their upstream base.
    let to_upstream = |rev: &str| -> Result<Oid, Error> {
        let sha = ig.sub.must_resolve(rev)?;
        Ok(ig.sub.merge_base(&sha, &upstream)?.unwrap_or(sha))
    };
    let good = to_upstream(&opts.good)?;
    let bad = to_upstream(&opts.bad)?;
    let candidates = crate::bisect::candidates_in(&ig.sub, &good, &bad, false)?;
    let stack = load_stack(&ig.sub, &merge_base, &current)?;
    Ok((candidates, good, stack))
}

fn bisect_submodule(ig: &Integrate, opts: &BisectOptions) -> Result<BisectResult, Error> {
    let (candidates, good, stack) = crate::bisect::upstream_range(ig, opts)?;
    let mut prober = Prober::new(ig, stack, opts.command.clone(), opts.timeout, "bisect")?;
    prober.abort_on_crash = true;
    let n = candidates.len();
    let mut trail = Trail::default();
    let result = narrow(-1, n - 1, &mut trail.skipped, |m| {
        let probe = prober.probe(&candidates[m], m + 1, n)?;
        trail.steps.push(Step {
            commit: probe.commit.clone(),
            verdict: probe.verdict,
            cached: probe.cached,
            log: probe.log.clone(),
        });
        Ok(probe.verdict)
    });
    trail.runs = prober.runs;
    let restored = prober.finish();
    let bounds = result?;
    restored?;
    Ok(crate::bisect::bisect_result(
        ig,
        "submodule",
        &candidates,
        bounds,
        trail,
        &good,
    ))
}

/// The result of a search over `candidates` that ended between `lo`
/// (last good; -1: `good` itself) and `hi` (first bad), with the steps
/// it took and the candidates it skipped.
pub(crate) fn bisect_result(
    ig: &Integrate,
    mode: &str,
    candidates: &[Commit],
    (lo, hi): (isize, usize),
    trail: Trail,
    good: &str,
) -> BisectResult {
    let Trail {
        steps,
        skipped,
        runs,
    } = trail;
    let last_good = if lo >= 0 {
        Some(candidates[lo as usize].clone())
    } else {
        ig.sub
            .commit(good)
            .ok()
            .or_else(|| ig.superproject.commit(good).ok())
    };
    BisectResult {
        mode: mode.into(),
        first_bad: candidates[hi].clone(),
        last_good,
        ambiguous: skipped
            .iter()
            .filter(|&&s| (s as isize) > lo && s < hi)
            .map(|&s| candidates[s].sha.clone())
            .collect(),
        candidates: candidates.len(),
        steps,
        runs,
    }
}

fn bisect_superproject(ig: &Integrate, opts: &BisectOptions) -> Result<BisectResult, Error> {
    let sp = &ig.superproject;
    let candidates = crate::bisect::candidates_in(sp, &opts.good, &opts.bad, true)?;
    let good_sha = sp.must_resolve(&opts.good)?;
    let state = SuperBisectJournal {
        original_branch: sp.current_branch()?,
        original_head: sp.head()?,
    };
    let id = ig.store.begin(
        <SuperBisectJournal as crate::journal::Journaled>::KIND,
        &state,
    )?;
    let run_dir = ig.run_dir("bisect")?;
    let n = candidates.len();
    let mut trail = Trail::default();
    let result = narrow(-1, n - 1, &mut trail.skipped, |m| {
        let commit = &candidates[m];
        let key = Framed::new("lockstep-integrate", "superproject-bisect", 2)
            .part("tree", sp.tree_of(&commit.sha)?)
            .parts("command", &opts.command)
            .hex();
        let log = run_dir.join(format!("bisect-{}.log", crate::halt::short(&commit.sha)));
        let run = CachedRun {
            key,
            context: "superproject-bisect".into(),
            commit,
            position: m + 1,
            total: n,
            spec: Spec {
                argv: opts.command.clone(),
                cwd: sp.dir().to_path_buf(),
                env: vec![("LOCKSTEP_PROBE_COMMIT".into(), commit.sha.clone())],
                timeout: opts.timeout,
                log,
                header: None,
            },
            abort_on_crash: true,
        };
        let ran = run_cached(ig, run, || {
            sp.checkout_detached(&commit.sha)?;
            crate::checkout::sync_submodule_to_pin(ig)?;
            Ok(Some((id, journal_value(&state)?)))
        })?;
        if !ran.cached {
            trail.runs += 1;
        }
        trail.steps.push(Step {
            commit: commit.clone(),
            verdict: ran.verdict,
            cached: ran.cached,
            log: ran.log,
        });
        Ok(ran.verdict)
    });
    let restored = crate::bisect::restore_superproject(ig, &state);
    ig.store.finish(id, "done")?;
    let bounds = result?;
    restored?;
    Ok(crate::bisect::bisect_result(
        ig,
        "superproject",
        &candidates,
        bounds,
        trail,
        &good_sha,
    ))
}

/// Returns the superproject (and its submodule) to where the user was.
pub(crate) fn restore_superproject(
    ig: &Integrate,
    state: &SuperBisectJournal,
) -> Result<(), Error> {
    crate::checkout::return_to(ig, state.original_branch.as_deref(), &state.original_head)
}

/// A superproject bisect's checkout is put back after a crash and by
/// `abort` alike.
impl crate::journal::Journaled for SuperBisectJournal {
    const KIND: &'static str = "bisect-superproject";

    fn resume(&self, ig: &Integrate, id: i64) -> Result<Option<crate::journal::Resumed>, Error> {
        crate::bisect::restore_superproject(ig, self)?;
        ig.store.finish(id, "interrupted")?;
        Ok(None)
    }

    fn undo(&self, ig: &Integrate) -> Result<String, Error> {
        crate::bisect::restore_superproject(ig, self)?;
        Ok("superproject bisect checkout".into())
    }
}
