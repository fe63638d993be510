//! `integrate loop`: smoke and advance until upstream head or a halt.
//!
//! Two strategies share one prober:
//! - `each` (megabump's loop): one smoke and one commit per affecting commit.
//! - `gallop` (default): find the first commit the carried patches conflict
//!   at (replays only, no smoke), probe the farthest candidate before it, and
//!   when that fails bisect for the first bad commit (verifying the pin only
//!   when nothing is good). Like git bisect it assumes a breakage persists;
//!   exit 125 is skipped by probing a neighbour. For K breaking commits among N
//!   candidates this needs at most K x (ceil(log2 N) + 2) smoke runs, plus one
//!   for the run that reaches head.
//!
//! Candidates are the pending affecting commits, plus upstream head itself when
//! it is not one of them, so the loop finishes at head.

use std::time::Duration;

use crate::config::Strategy;
use lockstep_core::Error;
use lockstep_git::Commit;
use serde::Serialize;

use crate::halt::{Halt, HaltKind};
use crate::probe::{Probe, Prober, Verdict};
use crate::replay::{load_stack, Replay};
use crate::status::Status;
use crate::Integrate;
use lockstep_bisect::narrow;

/// Options of `integrate loop`.
#[derive(Debug, Clone)]
pub struct LoopOptions {
    pub strategy: Strategy,
    /// Consider at most this many pending commits.
    pub max_steps: Option<usize>,
    /// At upstream head, poll for new commits this often instead of exiting.
    pub wait: Option<Duration>,
    pub dry_run: bool,
    pub no_export: bool,
    pub fetch: bool,
    /// What a smoke failure at an upstream commit does.
    pub on_break: OnBreak,
    /// Move every `[[integrate.follow]]` to its branch head first.
    pub bump_followers: bool,
}

/// `loop --on-break`: what a commit that breaks the smoke does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum OnBreak {
    /// Halt and report (the default).
    #[default]
    Halt,
    /// Carry a revert of the culprit when it applies and makes the smoke
    /// pass, then go on; halt otherwise.
    Revert,
}

/// How the loop ended.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum LoopEnd {
    /// The pin is at upstream head.
    AtHead,
    /// `--max-steps` ran out; these are still pending.
    StepsExhausted { pending: Vec<Commit> },
    /// Halted at a breaking or conflicting commit.
    Halted { halt: Box<Halt> },
    /// `--dry-run`: what would be probed.
    Plan {
        candidates: Vec<Commit>,
        strategy: String,
    },
}

impl std::str::FromStr for OnBreak {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "halt" => Ok(OnBreak::Halt),
            "revert" => Ok(OnBreak::Revert),
            other => Err(format!(
                "unknown --on-break `{other}`: expected `halt` or `revert`"
            )),
        }
    }
}

/// The loop's outcome with its cost.
#[derive(Debug, Clone, Serialize)]
pub struct LoopReport {
    pub end: LoopEnd,
    /// Smoke processes started.
    pub smoke_runs: usize,
    /// Probe verdicts taken from the store instead of running the smoke.
    pub cached: usize,
    /// Superproject commits made (one per advance).
    pub advances: Vec<String>,
    /// Candidate commits the searches considered (what `each` smokes).
    pub candidates: usize,
    /// Upstream commits `--on-break revert` reverted (a revert of each is
    /// carried now).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reverted: Vec<Commit>,
    /// `--bump-followers`: the followers moved.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub bumped: Vec<crate::follow::Bumped>,
    /// Where the followers stand at the end (when any are configured).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub followers: Vec<crate::follow::Follower>,
}

/// Where a search left things.
enum SearchEnd {
    /// Advanced to (or stayed at) the end of the candidates.
    Done,
    /// Advanced past a culprit by carrying its revert: look again.
    Again,
    Halt(Box<Halt>),
}

/// `integrate loop`.
///
/// A usage error (no smoke command configured, say) puts the upstream
/// remote and its tracking ref back as they were before its fetch.
pub fn run_loop(ig: &Integrate, opts: &LoopOptions) -> Result<LoopReport, Error> {
    let mut report = ig.or_restore_upstream(|| crate::search::loop_steps(ig, opts))?;
    // Which followers now pin an older upstream than the integrate.
    if !ig.cfg.follow.is_empty() && !opts.dry_run {
        let base = crate::status::position(ig)?.merge_base;
        report.followers = crate::follow::report_followers(ig, &base)?;
    }
    Ok(report)
}

fn loop_steps(ig: &Integrate, opts: &LoopOptions) -> Result<LoopReport, Error> {
    let _lock = if opts.dry_run {
        None
    } else {
        Some(ig.lock("integrate loop")?)
    };
    let _session = if opts.dry_run {
        None
    } else {
        Some(crate::recover::begin_session(ig, "integrate loop")?)
    };
    let mut report = LoopReport {
        end: LoopEnd::AtHead,
        smoke_runs: 0,
        cached: 0,
        advances: vec![],
        candidates: 0,
        reverted: Vec::new(),
        bumped: Vec::new(),
        followers: Vec::new(),
    };
    // Uncommitted changes are a usage error: found before the fetch,
    // which would otherwise have changed the submodule first.
    ig.require_clean()?;
    if opts.fetch {
        ig.fetch_upstream()?;
    }
    if opts.bump_followers && !opts.dry_run {
        report.bumped = crate::follow::bump_followers(ig)?;
    }
    loop {
        ig.require_clean()?;
        let status = crate::status::position(ig)?;
        let (candidates, limited) = candidates(ig, &status, opts.max_steps)?;
        if opts.dry_run {
            report.end = LoopEnd::Plan {
                candidates,
                strategy: format!("{:?}", opts.strategy).to_lowercase(),
            };
            return Ok(report);
        }
        if candidates.is_empty() {
            if let Some(wait) = opts.wait {
                ig.info(format!(
                    "at upstream head; checking again in {}s",
                    wait.as_secs()
                ));
                std::thread::sleep(wait);
                ig.fetch_upstream()?;
                continue;
            }
            report.end = LoopEnd::AtHead;
            return Ok(report);
        }
        crate::halt::clear_halt(ig)?;
        report.candidates += candidates.len();
        let (runs_before, cached_before) = (report.smoke_runs, report.cached);
        let end = crate::search::search(ig, &status, &candidates, opts, &mut report)?;
        crate::publish::record_loop_cost(
            ig,
            report.smoke_runs - runs_before,
            report.cached - cached_before,
        )?;
        match end {
            SearchEnd::Halt(halt) => {
                report.end = LoopEnd::Halted { halt };
                return Ok(report);
            }
            SearchEnd::Done if limited => {
                let status = crate::status::position(ig)?;
                report.end = LoopEnd::StepsExhausted {
                    pending: status.pending,
                };
                return Ok(report);
            }
            SearchEnd::Done if opts.wait.is_none() => {
                report.end = LoopEnd::AtHead;
                return Ok(report);
            }
            SearchEnd::Done | SearchEnd::Again => continue,
        }
    }
}

fn search(
    ig: &Integrate,
    status: &Status,
    candidates: &[Commit],
    opts: &LoopOptions,
    report: &mut LoopReport,
) -> Result<SearchEnd, Error> {
    let stack = load_stack(&ig.sub, &status.merge_base, &status.current)?;
    let mut prober = Prober::new(
        ig,
        stack,
        ig.cfg.smoke.clone(),
        Some(ig.cfg.smoke_timeout),
        "loop",
    )?;
    let mut search = Search {
        ig,
        status,
        candidates,
        no_export: opts.no_export,
        on_break: opts.on_break,
        report,
    };
    let result = match opts.strategy {
        Strategy::Gallop => search.gallop(&mut prober),
        Strategy::Each => search.each(&mut prober),
    };
    search.report.smoke_runs += prober.runs;
    search.report.cached += prober.cache_hits;
    let finished = prober.finish();
    let end = result?;
    finished?;
    Ok(end)
}

/// The loop's stopping points: pending affecting commits, then upstream head.
fn candidates(
    ig: &Integrate,
    status: &Status,
    max_steps: Option<usize>,
) -> Result<(Vec<Commit>, bool), Error> {
    let mut list = status.pending.clone();
    let head_listed = list
        .last()
        .map(|c| c.sha == status.upstream_head)
        .unwrap_or(false);
    if !head_listed && status.upstream_head != status.merge_base {
        list.push(ig.sub.commit(&status.upstream_head)?);
    }
    match max_steps {
        Some(n) if n < list.len() => {
            list.truncate(n);
            Ok((list, true))
        }
        _ => Ok((list, false)),
    }
}

struct Search<'s, 'a> {
    ig: &'s Integrate<'a>,
    status: &'s Status,
    candidates: &'s [Commit],
    no_export: bool,
    on_break: OnBreak,
    report: &'s mut LoopReport,
}

impl Search<'_, '_> {
    /// The pin's own verdict, asked for when every candidate probed so far is
    /// bad: a failing pin halts (nothing upstream to blame).
    fn verify_pin(&mut self, prober: &mut Prober) -> Result<Option<Box<Halt>>, Error> {
        let base = self.ig.sub.commit(&self.status.merge_base)?;
        let probe = prober.probe_head(&base, &self.status.current, 0, self.candidates.len())?;
        match probe.verdict {
            Verdict::Bad => Ok(Some(Box::new(self.smoke_halt(
                &probe,
                &base,
                true,
                vec![],
            )?))),
            Verdict::Skip => {
                self.ig.warn(
                    "the smoke test cannot test the current pin (exit 125); assuming it is good",
                );
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    fn each(&mut self, prober: &mut Prober) -> Result<SearchEnd, Error> {
        let total = self.candidates.len();
        let mut last_good = self.ig.sub.commit(&self.status.merge_base)?;
        let mut skipped = Vec::new();
        for (i, commit) in self.candidates.iter().enumerate() {
            let probe = prober.probe(commit, i + 1, total)?;
            match probe.verdict {
                Verdict::Good => {
                    self.advance(prober, &probe, i)?;
                    last_good = commit.clone();
                    skipped.clear();
                }
                Verdict::Skip => skipped.push(commit.sha.clone()),
                Verdict::Bad => {
                    // Nothing good yet in this run: the pin itself may be broken.
                    if self.report.advances.is_empty() {
                        if let Some(halt) = self.verify_pin(prober)? {
                            return Ok(SearchEnd::Halt(halt));
                        }
                    }
                    if self.revert_culprit(prober, &probe, i)? {
                        return Ok(SearchEnd::Again);
                    }
                    return Ok(SearchEnd::Halt(Box::new(
                        self.smoke_halt(&probe, &last_good, false, skipped)?,
                    )));
                }
                Verdict::Conflict => {
                    return Ok(SearchEnd::Halt(Box::new(
                        self.conflict(&probe, &last_good)?,
                    )))
                }
            }
        }
        Ok(SearchEnd::Done)
    }

    fn gallop(&mut self, prober: &mut Prober) -> Result<SearchEnd, Error> {
        let n = self.candidates.len();
        // 1. The first commit the patches conflict at, with replays alone.
        let conflict_at = self.first_conflict(prober)?;
        let limit = conflict_at.unwrap_or(n);
        // 2. The first smoke failure before it.
        let mut good: Option<usize> = None;
        let mut bad: Option<usize> = None;
        let mut skipped: Vec<usize> = Vec::new();
        let mut probes: Vec<Option<Probe>> = vec![None; n];
        // Start from what earlier runs found: the first candidate known bad
        // bounds the search (a rerun after a halt probes nothing new).
        // Otherwise probe the farthest candidate first (a neighbour when it is
        // untestable).
        let earlier = prober.earlier_verdicts()?;
        let mut known_bad = None;
        for i in 0..limit {
            let sha = &self.candidates[i].sha;
            if matches!(earlier.get(sha), Some(Verdict::Bad)) && prober.bad_with_this_stack(sha)? {
                known_bad = Some(i);
                break;
            }
        }
        let order: Vec<usize> = match known_bad {
            Some(i) => std::iter::once(i)
                .chain((0..limit).rev().filter(|&j| j != i))
                .collect(),
            None => (0..limit).rev().collect(),
        };
        for i in order {
            let probe = prober.probe(&self.candidates[i], i + 1, n)?;
            let verdict = probe.verdict;
            probes[i] = Some(probe);
            match verdict {
                Verdict::Good => {
                    good = Some(i);
                    break;
                }
                Verdict::Bad | Verdict::Conflict => {
                    bad = Some(i);
                    break;
                }
                Verdict::Skip => skipped.push(i),
            }
        }
        if let Some(hi) = bad {
            let candidates = self.candidates;
            let (lo, hi) = narrow(-1, hi, &mut skipped, |m| {
                let probe = prober.probe(&candidates[m], m + 1, n)?;
                let verdict = probe.verdict;
                probes[m] = Some(probe);
                Ok(verdict)
            })?;
            good = if lo >= 0 { Some(lo as usize) } else { None };
            bad = Some(hi);
        }
        // Only when no candidate is good can the pin itself be to blame:
        // verify it then (and only then, to keep the smoke count down). A
        // conflict is the patches' fault, not the pin's: no smoke for it.
        let bad_is_smoke = bad.is_some_and(|b| {
            probes[b]
                .as_ref()
                .is_some_and(|p| p.verdict == Verdict::Bad)
        });
        if bad_is_smoke && good.is_none() {
            if let Some(halt) = self.verify_pin(prober)? {
                return Ok(SearchEnd::Halt(halt));
            }
        }
        let mut last_good = self.ig.sub.commit(&self.status.merge_base)?;
        let advanced = match good {
            Some(g) => {
                let probe = probes[g]
                    .clone()
                    .ok_or_else(|| Error::failed("internal: missing probe"))?;
                self.advance(prober, &probe, g)?;
                last_good = self.candidates[g].clone();
                true
            }
            None => false,
        };
        // Where the search stops: the first bad candidate, else the first
        // one the patches conflict at.
        if let Some(stop) = bad.or(conflict_at) {
            let found = probes[stop].take();
            // One replay rule: a candidate is judged with the carried
            // patches as they stand after the last advance. What the search
            // found with the stack it started from is only taken when that
            // stack is still the one carried.
            let probe = if advanced {
                match self.recheck(prober, stop, found.as_ref())? {
                    Some(probe) => probe,
                    None => return Ok(SearchEnd::Again),
                }
            } else {
                match found {
                    Some(probe) => probe,
                    None => prober.probe(&self.candidates[stop], stop + 1, n)?,
                }
            };
            match probe.verdict {
                Verdict::Conflict => {
                    return Ok(SearchEnd::Halt(Box::new(
                        self.conflict(&probe, &last_good)?,
                    )))
                }
                // It passes with the rebased patches: search on from the
                // new pin.
                Verdict::Good | Verdict::Skip => return Ok(SearchEnd::Again),
                Verdict::Bad => {}
            }
            let lo = good.map(|g| g as isize).unwrap_or(-1);
            let ambiguous: Vec<String> = skipped
                .iter()
                .filter(|&&s| (s as isize) > lo && s < stop)
                .map(|&s| self.candidates[s].sha.clone())
                .collect();
            if ambiguous.is_empty() && self.revert_culprit(prober, &probe, stop)? {
                return Ok(SearchEnd::Again);
            }
            return Ok(SearchEnd::Halt(Box::new(
                self.smoke_halt(&probe, &last_good, false, ambiguous)?,
            )));
        }
        if good.is_none() && limit > 0 {
            self.ig
                .warn("every remaining candidate was untestable (exit 125); the pin did not move");
        }
        // A candidate an earlier search found bad passed now (the carried
        // patches changed: a revert, a fix): the ones after it were never
        // probed, so look again from the new pin.
        if let Some(g) = good {
            if (g + 1..limit).any(|j| probes[j].is_none()) {
                return Ok(SearchEnd::Again);
            }
        }
        Ok(SearchEnd::Done)
    }

    /// The stopping candidate `i` judged again after an advance rebased the
    /// carried patches: a conflict when the rebased stack does not apply
    /// there (no smoke); a smoke failure found with the old stack is smoked
    /// again with the new one (from the store when it holds that verdict:
    /// one smoke at most, where a new search would bisect again); `None`
    /// for a conflict the old stack had and the new one has not: the
    /// candidate needs a fresh search from the new pin.
    fn recheck(
        &mut self,
        prober: &mut Prober,
        i: usize,
        found: Option<&Probe>,
    ) -> Result<Option<Probe>, Error> {
        let commit = &self.candidates[i];
        let conflicts = matches!(prober.replay(&commit.sha)?, Replay::Conflict { .. });
        let smoke_failed = found.is_some_and(|p| p.verdict == Verdict::Bad);
        if conflicts || smoke_failed {
            return Ok(Some(prober.probe(commit, i + 1, self.candidates.len())?));
        }
        Ok(None)
    }

    /// Binary search over replays for the first candidate the patches conflict at.
    fn first_conflict(&mut self, prober: &mut Prober) -> Result<Option<usize>, Error> {
        let n = self.candidates.len();
        if prober.stack.is_empty() || n == 0 {
            return Ok(None);
        }
        let conflicts = |p: &mut Prober, i: usize, c: &[Commit]| -> Result<bool, Error> {
            Ok(matches!(p.replay(&c[i].sha)?, Replay::Conflict { .. }))
        };
        if !conflicts(prober, n - 1, self.candidates)? {
            return Ok(None);
        }
        let (mut lo, mut hi): (isize, usize) = (-1, n - 1);
        while hi as isize - lo > 1 {
            let mid = ((lo + hi as isize) / 2) as usize;
            if conflicts(prober, mid, self.candidates)? {
                hi = mid;
            } else {
                lo = mid as isize;
            }
        }
        Ok(Some(hi))
    }

    /// Commits the pin at candidate `i` (exporting unless told not to).
    fn advance(&mut self, prober: &mut Prober, probe: &Probe, i: usize) -> Result<(), Error> {
        let head = probe
            .head
            .clone()
            .ok_or_else(|| Error::failed("internal: advance without a head"))?;
        // Candidates are the pending list, then possibly upstream head (which
        // includes every pending commit).
        let pending = self.status.pending.len();
        let plan = crate::advance::plan(
            self.ig,
            probe.commit.clone(),
            head,
            probe.dropped.clone(),
            (i + 1).min(pending),
            pending,
        );
        let (commit, _) = crate::advance::commit_advance(self.ig, &plan, !self.no_export)?;
        self.report.advances.push(commit);
        // The patch stack is now the replayed one; later probes replay it.
        let merge_base = probe.commit.sha.clone();
        let stack = load_stack(&self.ig.sub, &merge_base, &plan.head)?;
        prober.rebase_on(stack)
    }

    /// `--on-break revert`: carries a revert of the culprit `probe` found
    /// bad when the revert applies onto its patched head and the smoke
    /// passes with it, advancing the pin onto the culprit; false (halt as
    /// usual) otherwise.
    fn revert_culprit(
        &mut self,
        prober: &mut Prober,
        probe: &Probe,
        i: usize,
    ) -> Result<bool, Error> {
        if self.on_break != OnBreak::Revert {
            return Ok(false);
        }
        let culprit = &probe.commit;
        let Some(head) = probe.head.clone() else {
            return Ok(false);
        };
        let detail = self.ig.sub.commit_detail(&culprit.sha)?;
        let Some(parent) = detail.parents.first() else {
            return Ok(false);
        };
        let reason = "the smoke test failed at it (carried by `integrate loop --on-break revert`)";
        let reverted = match crate::revert::revert_onto(
            &self.ig.sub,
            &culprit.sha,
            parent,
            &head,
            &culprit.subject,
            reason,
        ) {
            Ok(reverted) => reverted,
            Err(e) => {
                self.ig.warn(format!(
                    "cannot carry a revert of {}: {}; halting",
                    crate::halt::short(&culprit.sha),
                    e.message
                ));
                return Ok(false);
            }
        };
        let extra = format!("revert:{}", culprit.sha);
        let checked =
            prober.probe_patched(culprit, &reverted, &extra, i + 1, self.candidates.len())?;
        if checked.verdict != Verdict::Good {
            self.ig.warn(format!(
                "the smoke test fails at {} even with it reverted; halting",
                crate::halt::short(&culprit.sha)
            ));
            return Ok(false);
        }
        let pending = self.status.pending.len();
        let mut plan = crate::advance::plan(
            self.ig,
            culprit.clone(),
            reverted,
            probe.dropped.clone(),
            (i + 1).min(pending),
            pending,
        );
        plan.message.push_str(&format!(
            "{}Lockstep-Reason: {reason}\n{} {}\n",
            if plan.dropped.is_empty() { "\n" } else { "" },
            crate::reverts::REVERT_TRAILER,
            culprit.sha
        ));
        let (commit, _) = crate::advance::commit_advance(self.ig, &plan, !self.no_export)?;
        self.ig.info(format!(
            "the smoke failed at {} {}: carrying its revert and going on",
            crate::halt::short(&culprit.sha),
            culprit.subject
        ));
        self.report.advances.push(commit);
        self.report.reverted.push(culprit.clone());
        let stack = load_stack(&self.ig.sub, &culprit.sha, &plan.head)?;
        prober.rebase_on(stack)?;
        Ok(true)
    }

    fn smoke_halt(
        &self,
        probe: &Probe,
        last_good: &Commit,
        at_pin: bool,
        skipped: Vec<String>,
    ) -> Result<Halt, Error> {
        let (untracked, untracked_total) = if at_pin {
            (vec![], 0)
        } else {
            crate::status::untracked_between(self.ig, &last_good.sha, &probe.commit.sha)?
        };
        crate::halt::record_halt(
            self.ig,
            Halt {
                kind: HaltKind::Smoke,
                culprit: probe.commit.clone(),
                last_good: last_good.clone(),
                at_pin,
                branch: self.ig.superproject.current_branch()?.unwrap_or_default(),
                superproject_head: self.ig.superproject.head()?,
                probe_head: probe.head.clone(),
                conflict: None,
                log: probe.log.clone(),
                exit: probe.exit.clone(),
                skipped,
                untracked,
                untracked_total,
                smoke: self.ig.cfg.smoke.clone(),
                pin: self.ig.pin_path().to_string(),
                submodule: self.ig.pin_of().checkout_path().map(String::from),
                superproject: self.ig.superproject.dir().display().to_string(),
                link: self.ig.commit_link(&probe.commit.sha),
                report_path: String::new(),
                created_at: jiff::Timestamp::now().to_string(),
            },
        )
    }

    fn conflict(&self, probe: &Probe, last_good: &Commit) -> Result<Halt, Error> {
        let conflict = probe
            .conflict
            .clone()
            .ok_or_else(|| Error::failed("internal: conflict without details"))?;
        crate::advance::conflict_halt(self.ig, &probe.commit, &last_good.sha, conflict)
    }
}
