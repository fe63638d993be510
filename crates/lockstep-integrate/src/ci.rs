//! `integrate bisect --ci`: CI as the bisection's oracle (megabump:
//! "bisecting with full CI means pushing to a temporary PR and running
//! automation").
//!
//! At each step the candidate is made into a superproject commit CI can
//! build: in submodule mode the upstream commit with the carried patches
//! replayed, pushed to the submodule's export remote, and a superproject
//! commit on top of HEAD pinning it (same tree otherwise, HEAD's author and
//! dates, so the same candidate is the same commit every run); in
//! superproject mode the integrate branch's commit itself. It is pushed to
//! the base remote as `lockstep-bisect/SHA12`, and lockstep waits for its
//! check runs through the REST API (polling with backoff, bounded by
//! `--ci-timeout`): all passed is good, a failure or time-out bad, cancelled
//! or stale skip. Verdicts are kept in the store by the pushed commit, so a
//! rerun asks CI nothing it answered. The temporary branches are deleted at
//! the end, whatever happened.

use std::time::{Duration, Instant};

use lockstep_core::hash::Framed;
use lockstep_core::Error;
use lockstep_git::{Commit, Oid};
use lockstep_github::checks::{summarize, Checks};

use crate::bisect::{BisectOptions, BisectResult, Step, Trail};
use crate::halt::short;
use crate::probe::Verdict;
use crate::publish::Target;
use crate::replay::{replay, Replay};
use crate::Integrate;

/// The prefix of the temporary branches.
pub const BRANCH_PREFIX: &str = "lockstep-bisect/";

/// How CI is waited for.
#[derive(Debug, Clone, Copy)]
pub struct CiOptions {
    /// The longest wait for one commit's checks.
    pub timeout: Duration,
    /// The first pause between polls (then x1.5, at most 5 minutes).
    pub poll: Duration,
}

/// The branches pushed so far, deleted when dropped.
struct Pushed<'i, 'a> {
    ig: &'i Integrate<'a>,
    remote: String,
    /// (repository, branch): the superproject's or the submodule's.
    branches: Vec<(bool, String)>,
}

impl Drop for Pushed<'_, '_> {
    fn drop(&mut self) {
        for (in_submodule, branch) in &self.branches {
            let (repo, remote) = if *in_submodule {
                (&self.ig.sub, self.ig.cfg.export.remote.as_str())
            } else {
                (&self.ig.superproject, self.remote.as_str())
            };
            let deleted = repo.try_git_remote(
                remote,
                &[
                    "push",
                    "--quiet",
                    "--delete",
                    "--",
                    remote,
                    &format!("refs/heads/{branch}"),
                ],
            );
            if !deleted.is_ok_and(|o| o.code == 0) {
                self.ig.warn(format!(
                    "could not delete the temporary branch {branch} from {remote}"
                ));
            }
        }
    }
}

/// `integrate bisect --ci`.
pub fn bisect_ci(
    ig: &Integrate,
    opts: &BisectOptions,
    ci: &CiOptions,
) -> Result<BisectResult, Error> {
    crate::context::check_rev("--good", &opts.good)?;
    crate::context::check_rev("--bad", &opts.bad)?;
    let target = crate::publish::github_target(ig, "bisect --ci")?;
    let _lock = ig.lock("integrate bisect --ci")?;
    let _session = crate::recover::begin_session(ig, "integrate bisect --ci")?;
    ig.require_clean()?;
    let mut pushed = Pushed {
        ig,
        remote: target.remote.clone(),
        branches: Vec::new(),
    };
    let head = ig.superproject.head()?;
    let (candidates, good, stack) = if opts.superproject {
        let good = ig.superproject.must_resolve(&opts.good)?;
        (
            crate::bisect::candidates_in(&ig.superproject, &opts.good, &opts.bad, true)?,
            good,
            None,
        )
    } else {
        let (candidates, good, stack) = crate::bisect::upstream_range(ig, opts)?;
        (candidates, good, Some(stack))
    };
    let n = candidates.len();
    let mut steps = Vec::new();
    let mut skipped = Vec::new();
    let mut rounds = 0;
    let (lo, hi) = lockstep_bisect::narrow(-1, n - 1, &mut skipped, |m| {
        let commit = &candidates[m];
        let built = match &stack {
            None => Some(commit.sha.clone()),
            Some(stack) => crate::ci::ci_commit(ig, &head, commit, stack, &mut pushed)?,
        };
        let Some(sha) = built else {
            steps.push(step(
                commit,
                Verdict::Skip,
                false,
                "the carried patches conflict here",
            ));
            return Ok(Verdict::Skip);
        };
        let key = Framed::new("lockstep-integrate", "ci-verdict", 1)
            .part("repository", target.repo.to_string())
            .part("commit", &sha)
            .hex();
        let recalled = lockstep_bisect::recall_or_judge(&ig.store, key, "ci", &commit.sha, || {
            rounds += 1;
            let branch = format!("{BRANCH_PREFIX}{}", short(&sha));
            crate::ci::push_temporary(&ig.superproject, &target.remote, &sha, &branch)?;
            pushed.branches.push((false, branch.clone()));
            ig.info(format!(
                "CI round {rounds}: {} ({} of {n}) pushed as {branch}; waiting for its checks",
                short(&commit.sha),
                m + 1
            ));
            let (verdict, detail) = crate::ci::wait_for_checks(&target, &sha, ci)?;
            ig.info(format!(
                "  {} {} ({detail})",
                short(&commit.sha),
                verdict.as_str()
            ));
            Ok(lockstep_bisect::Judged {
                verdict,
                detail,
                log: None,
                seconds: None,
            })
        })?;
        steps.push(step(
            commit,
            recalled.verdict,
            recalled.cached,
            &recalled.detail,
        ));
        Ok(recalled.verdict)
    })?;
    drop(pushed);
    let mode = if opts.superproject {
        "superproject (ci)"
    } else {
        "submodule (ci)"
    };
    let trail = Trail {
        steps,
        skipped,
        runs: rounds,
    };
    Ok(crate::bisect::bisect_result(
        ig,
        mode,
        &candidates,
        (lo, hi),
        trail,
        &good,
    ))
}

/// The superproject commit pinning `commit` with the stack replayed
/// (its patched head pushed to the export remote); None on a conflict.
fn ci_commit(
    ig: &Integrate,
    head: &str,
    commit: &Commit,
    stack: &[crate::replay::StackEntry],
    pushed: &mut Pushed,
) -> Result<Option<Oid>, Error> {
    let patched = match replay(&ig.sub, stack, &commit.sha)? {
        Replay::Applied { head, .. } => head,
        Replay::Conflict { .. } => return Ok(None),
    };
    if ig.pin_of().carries_patches() && patched != commit.sha {
        let branch = format!("{BRANCH_PREFIX}{}", short(&patched));
        crate::ci::push_temporary(&ig.sub, &ig.cfg.export.remote, &patched, &branch)?;
        pushed.branches.push((true, branch));
    }
    let index = ig
        .state_dir
        .join(format!("ci-index-{}", std::process::id()));
    // An empty GIT_INDEX_FILE would be the real index: refuse a path
    // git cannot be given.
    let index_path = index.to_str().ok_or_else(|| {
        Error::failed(format!(
            "the state directory {} is not a UTF-8 path",
            ig.state_dir.display()
        ))
    })?;
    let env = [("GIT_INDEX_FILE", index_path)];
    let sp = &ig.superproject;
    let result = (|| -> Result<Oid, Error> {
        sp.git_env(&["read-tree", head], &env, None)?;
        let entry = ig
            .pin_of()
            .index_entry(sp, head, &patched, &ig.checksums())?;
        sp.git_env(
            &["update-index", "--cacheinfo", &entry.cacheinfo()],
            &env,
            None,
        )?;
        let tree = sp.git_env(&["write-tree"], &env, None)?.trim().to_string();
        let detail = sp.commit_detail(head)?;
        let message = format!(
            "lockstep bisect --ci: {} at {} {}\n\nA temporary commit for CI; its branch is deleted when the bisect ends.\n",
            ig.cfg.upstream_name, commit.sha, commit.subject
        );
        sp.commit_tree(
            &tree,
            &[head],
            &message,
            Some((
                &detail.author_name,
                &detail.author_email,
                &detail.author_date,
            )),
            Some(&detail.committer_date),
        )
    })();
    let _ = std::fs::remove_file(&index);
    result.map(Some)
}

/// Pushes `sha` to `refs/heads/BRANCH` of `remote` (never forced: the
/// branch names a commit, so an existing one holds the same).
fn push_temporary(
    repo: &lockstep_git::Repo,
    remote: &str,
    sha: &str,
    branch: &str,
) -> Result<(), Error> {
    let out = repo.try_git_remote(
        remote,
        &[
            "push",
            "--quiet",
            "--",
            remote,
            &format!("{sha}:refs/heads/{branch}"),
        ],
    )?;
    if out.code != 0 && repo.ls_remote_branch(remote, branch)?.as_deref() != Some(sha) {
        return Err(Error::failed(format!("cannot push the temporary branch {branch} to {remote}"))
            .cause(out.stderr.trim().to_string())
            .hint("check that the remote accepts pushes (CI bisect pushes lockstep-bisect/* branches and deletes them at the end)"));
    }
    Ok(())
}

/// Polls the check runs of `sha` until they decide, with backoff,
/// at most `ci.timeout`.
fn wait_for_checks(target: &Target, sha: &str, ci: &CiOptions) -> Result<(Verdict, String), Error> {
    let started = Instant::now();
    let mut pause = ci.poll;
    loop {
        let runs = target.client.check_runs(&target.repo, sha)?;
        match summarize(&runs) {
            Checks::Passed => {
                return Ok((
                    Verdict::Good,
                    format!(
                        "{} passed",
                        lockstep_core::words::count(runs.len(), "check run", "check runs")
                    ),
                ))
            }
            Checks::Failed(which) => return Ok((Verdict::Bad, format!("check {which}"))),
            Checks::Inconclusive(which) => return Ok((Verdict::Skip, format!("check {which}"))),
            Checks::Pending => {}
        }
        if started.elapsed() + pause > ci.timeout {
            return Err(Error::failed(format!(
                "CI gave no verdict on {} within {} s ({} seen)",
                short(sha),
                ci.timeout.as_secs(),
                lockstep_core::words::count(runs.len(), "check run", "check runs")
            ))
            .hint("raise --ci-timeout, or check that CI runs on lockstep-bisect/* branches; rerun: verdicts CI gave are kept"));
        }
        std::thread::sleep(pause);
        pause = (pause.mul_f64(1.5)).min(Duration::from_secs(300));
    }
}

fn step(commit: &Commit, verdict: Verdict, cached: bool, detail: &str) -> Step {
    Step {
        commit: commit.clone(),
        verdict,
        cached,
        log: Some(detail.to_string()),
    }
}
