//! Probing one upstream commit: replay the carried patches onto it, check the
//! result out in the submodule, run the smoke command in the superproject, and
//! cache the verdict in the store.
//!
//! The cache key is (superproject tree without the submodule entry, upstream
//! commit, patch stack, smoke command): a rerun never repeats a smoke already
//! run, and a fix committed in the superproject gets a fresh smoke.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use crate::events::IntegrateEvent as Event;
use lockstep_core::hash::Framed;
use lockstep_core::process::{self, Exit, Spec};
use lockstep_core::Error;
use lockstep_git::{Commit, Oid};
use serde::Serialize;

use crate::halt::ConflictInfo;
use crate::journal::ProbeJournal;
use crate::replay::{replay, Dropped, Replay, StackEntry};
use crate::Integrate;

/// The verdict on one commit: the one bisection's type.
pub use lockstep_bisect::Verdict;

/// What probing one commit found.
#[derive(Debug, Clone)]
pub struct Probe {
    pub commit: Commit,
    pub verdict: Verdict,
    /// The patched head that was (or would be) tested.
    pub head: Option<Oid>,
    pub dropped: Vec<Dropped>,
    pub conflict: Option<ConflictInfo>,
    pub log: Option<String>,
    pub exit: Option<String>,
    pub cached: bool,
}

/// Runs probes for one search (one loop iteration or one bisect).
pub struct Prober<'i, 'a> {
    ig: &'i Integrate<'a>,
    pub stack: Vec<StackEntry>,
    pub command: Vec<String>,
    timeout: Option<Duration>,
    /// Hash of the superproject tree and the command: what every verdict of
    /// this search depends on besides the commit and the patches.
    context: String,
    run_dir: PathBuf,
    replays: HashMap<Oid, Replay>,
    journal: Option<(i64, ProbeJournal)>,
    /// Smoke processes actually started (cache hits excluded).
    pub runs: usize,
    pub cache_hits: usize,
    /// What the submodule is checked out at now.
    checked_out: Oid,
    /// Exit codes of 128 and above (and signals) abort instead of meaning bad.
    pub abort_on_crash: bool,
}

impl<'i, 'a> Prober<'i, 'a> {
    /// Prepares probes against the current superproject HEAD.
    pub fn new(
        ig: &'i Integrate<'a>,
        stack: Vec<StackEntry>,
        command: Vec<String>,
        timeout: Option<Duration>,
        label: &str,
    ) -> Result<Self, Error> {
        if command.is_empty() {
            return Err(Error::usage("no smoke command is configured")
                .hint("set [integrate] smoke = [\"./build_tools/smoke.sh\"] in lockstep.toml"));
        }
        let context = verdict_context(&superproject_tree_key(ig)?, &command);
        let checked_out = ig.checked_out()?;
        Ok(Prober {
            ig,
            stack,
            command,
            timeout,
            context,
            run_dir: ig.run_dir(label)?,
            replays: HashMap::new(),
            journal: None,
            runs: 0,
            cache_hits: 0,
            checked_out,
            abort_on_crash: false,
        })
    }

    /// Replays the stack onto `commit` (memoized).
    pub fn replay(&mut self, commit: &str) -> Result<Replay, Error> {
        if let Some(r) = self.replays.get(commit) {
            return Ok(r.clone());
        }
        let r = replay(&self.ig.sub, &self.stack, commit)?;
        self.replays.insert(commit.to_string(), r.clone());
        Ok(r)
    }

    fn key(&self, upstream: &str, patch_ids: &[String]) -> String {
        Framed::new("lockstep-integrate", "verdict", 2)
            .part("context", &self.context)
            .part("upstream", upstream)
            .parts("patches", patch_ids)
            .hex()
    }

    /// Verdicts recorded earlier for these commits in this context (the patch
    /// stack is not checked here: [`Prober::probe`] checks it when asked).
    pub fn earlier_verdicts(&self) -> Result<HashMap<Oid, Verdict>, Error> {
        Ok(self
            .ig
            .store
            .probes_in_context(&self.context)?
            .into_iter()
            .map(|r| (r.commit, Verdict::parse(&r.outcome)))
            .collect())
    }

    /// Whether `commit` was found bad with exactly the current stack
    /// replayed onto it: an earlier verdict under other patches (a revert
    /// carried since) says nothing about now.
    pub fn bad_with_this_stack(&mut self, commit: &str) -> Result<bool, Error> {
        let Replay::Applied { kept, .. } = self.replay(commit)? else {
            return Ok(false);
        };
        let key = rules_key(&self.key(commit, &kept), &self.ig.cfg.verdicts);
        Ok(self
            .ig
            .store
            .probe(&key)?
            .is_some_and(|r| Verdict::parse(&r.outcome) == Verdict::Bad))
    }

    /// Probes the current pin (the submodule HEAD, patches as they are).
    pub fn probe_head(
        &mut self,
        commit: &Commit,
        head: &str,
        position: usize,
        total: usize,
    ) -> Result<Probe, Error> {
        let ids: Vec<String> = self.stack.iter().map(|e| e.patch_id.clone()).collect();
        self.run_probe(commit, head.to_string(), ids, Vec::new(), position, total)
    }

    /// Probes `head`: upstream `commit` with the carried patches and one
    /// more change (`extra`, its cache identity: a carried revert).
    pub fn probe_patched(
        &mut self,
        commit: &Commit,
        head: &str,
        extra: &str,
        position: usize,
        total: usize,
    ) -> Result<Probe, Error> {
        let mut ids: Vec<String> = self.stack.iter().map(|e| e.patch_id.clone()).collect();
        ids.push(extra.to_string());
        self.run_probe(commit, head.to_string(), ids, Vec::new(), position, total)
    }

    /// Probes upstream `commit` with the carried patches replayed onto it.
    pub fn probe(
        &mut self,
        commit: &Commit,
        position: usize,
        total: usize,
    ) -> Result<Probe, Error> {
        match self.replay(&commit.sha)? {
            Replay::Conflict {
                sha,
                subject,
                files,
            } => Ok(Probe {
                commit: commit.clone(),
                verdict: Verdict::Conflict,
                head: None,
                dropped: Vec::new(),
                conflict: Some(ConflictInfo {
                    patch: sha,
                    subject,
                    files,
                }),
                log: None,
                exit: None,
                cached: false,
            }),
            Replay::Applied {
                head,
                kept,
                dropped,
            } => self.run_probe(commit, head, kept, dropped, position, total),
        }
    }

    fn run_probe(
        &mut self,
        commit: &Commit,
        head: Oid,
        patch_ids: Vec<String>,
        dropped: Vec<Dropped>,
        position: usize,
        total: usize,
    ) -> Result<Probe, Error> {
        let log = self
            .run_dir
            .join(format!("smoke-{}.log", crate::halt::short(&commit.sha)));
        let spec = Spec {
            argv: self.command.clone(),
            cwd: self.ig.superproject.dir().to_path_buf(),
            env: self.ig.probe_env(commit, &head, &log),
            timeout: self.timeout,
            log,
            header: None,
        };
        let run = CachedRun {
            key: self.key(&commit.sha, &patch_ids),
            context: self.context.clone(),
            commit,
            position,
            total,
            spec,
            abort_on_crash: self.abort_on_crash,
        };
        let ig = self.ig;
        let ran = run_cached(ig, run, || {
            self.begin_journal()?;
            self.checkout(&head)?;
            match &self.journal {
                Some((id, state)) => Ok(Some((*id, journal_value(state)?))),
                None => Ok(None),
            }
        })?;
        if ran.cached {
            self.cache_hits += 1;
        } else {
            self.runs += 1;
        }
        Ok(Probe {
            commit: commit.clone(),
            verdict: ran.verdict,
            head: Some(head),
            dropped,
            conflict: None,
            log: ran.log,
            exit: Some(ran.detail),
            cached: ran.cached,
        })
    }

    fn begin_journal(&mut self) -> Result<(), Error> {
        if self.journal.is_some() {
            return Ok(());
        }
        let state = ProbeJournal {
            superproject_head: self.ig.superproject.head()?,
            restore: self.ig.checked_out()?,
            pgid: None,
            moving_to: None,
        };
        let id = self
            .ig
            .store
            .begin(<ProbeJournal as crate::journal::Journaled>::KIND, &state)?;
        self.journal = Some((id, state));
        Ok(())
    }

    fn checkout(&mut self, head: &str) -> Result<(), Error> {
        if self.checked_out != head {
            if let Some((id, state)) = &mut self.journal {
                state.moving_to = Some(head.to_string());
                state.pgid = None;
                self.ig.store.update(*id, state)?;
            }
            crate::checkout::checkout_submodule(self.ig, head, &[&self.checked_out, head])?;
            self.checked_out = head.to_string();
        }
        Ok(())
    }

    /// The submodule was moved by an advance: that is now where probes return to.
    pub fn rebase_on(&mut self, stack: Vec<StackEntry>) -> Result<(), Error> {
        self.stack = stack;
        self.replays.clear();
        self.checked_out = self.ig.checked_out()?;
        if let Some((id, state)) = &mut self.journal {
            state.superproject_head = self.ig.superproject.head()?;
            state.restore = self.checked_out.clone();
            self.ig.store.update(*id, state)?;
        }
        Ok(())
    }

    /// Returns the submodule to where the search started (or the last advance
    /// put it) and closes the journal entry.
    pub fn finish(mut self) -> Result<(), Error> {
        if let Some((id, state)) = self.journal.take() {
            let current = self.checked_out.clone();
            crate::checkout::checkout_submodule(
                self.ig,
                &state.restore,
                &[&current, &state.restore],
            )?;
            self.ig.store.finish(id, "done")?;
        }
        Ok(())
    }
}

/// One run of a user command at a commit, its verdict cached in the store.
pub(crate) struct CachedRun<'c> {
    pub key: String,
    pub context: String,
    pub commit: &'c Commit,
    pub position: usize,
    pub total: usize,
    pub spec: Spec,
    /// Exit codes of 128 and above (and signals) abort instead of meaning bad.
    pub abort_on_crash: bool,
}

/// What a [`CachedRun`] found, from the cache or by running.
pub(crate) struct Ran {
    pub verdict: Verdict,
    pub detail: String,
    pub log: Option<String>,
    pub cached: bool,
}

/// A journal state as JSON, so [`run_cached`] can add the process group to it.
pub(crate) fn journal_value(state: &impl Serialize) -> Result<serde_json::Value, Error> {
    serde_json::to_value(state)
        .map_err(|e| Error::failed("cannot record the journal state").cause(e.to_string()))
}

/// Answers `run` from the cache, or prepares the work trees (`prepare`, which
/// returns the journal entry guarding them) and runs the command.
///
/// The command's process group goes into the journal while it runs, so that
/// a lockstep that dies mid-run leaves recovery a group to kill instead of a
/// command still running against the half-moved checkout.
pub(crate) fn run_cached(
    ig: &Integrate,
    run: CachedRun<'_>,
    prepare: impl FnOnce() -> Result<Option<(i64, serde_json::Value)>, Error>,
) -> Result<Ran, Error> {
    let commit = run.commit;
    // Rules decide verdicts: other rules, other cached verdicts (none: the
    // keys verdicts were always stored under).
    let run = CachedRun {
        key: rules_key(&run.key, &ig.cfg.verdicts),
        ..run
    };
    let recalled = lockstep_bisect::recall_or_judge(
        &ig.store,
        run.key,
        run.context.as_str(),
        &commit.sha,
        || {
            ig.emit(Event::ProbeStarted {
                commit: commit.sha.clone(),
                subject: commit.subject.clone(),
                position: run.position,
                total: run.total,
            });
            let journal = prepare()?;
            let finished = run_journaled(ig, &run.spec, journal)?;
            let log = run.spec.log.display().to_string();
            let ruled = apply_rules(&ig.cfg.verdicts, finished.exit, &run.spec.log);
            if ruled.is_none() && run.abort_on_crash && lockstep_bisect::aborts(finished.exit) {
                // `git bisect run` semantics: not a verdict, so nothing is cached.
                return Err(lockstep_bisect::abort_error(
                    &run.spec.argv,
                    finished.exit,
                    &commit.sha,
                )
                .cause(format!("log: {log}")));
            }
            let exit_detail = match finished.exit {
                Exit::TimedOut => format!(
                    "timed out after {} (smoke-timeout)",
                    humantime_secs(run.spec.timeout.unwrap_or_default())
                ),
                other => other.describe(),
            };
            let (verdict, detail) = match ruled {
                Some((verdict, name)) => (
                    verdict,
                    format!(
                        "{exit_detail}; verdict {} by rule `{name}`",
                        verdict.as_str()
                    ),
                ),
                None => (Verdict::from_exit(finished.exit), exit_detail),
            };
            Ok(lockstep_bisect::Judged {
                verdict,
                detail,
                log: Some(log),
                seconds: Some(finished.elapsed.as_secs_f64()),
            })
        },
    )?;
    ig.emit(Event::ProbeFinished {
        commit: commit.sha.clone(),
        outcome: recalled.verdict.as_str().into(),
        cached: recalled.cached,
        seconds: recalled.seconds,
    });
    Ok(Ran {
        verdict: recalled.verdict,
        detail: recalled.detail,
        log: recalled.log,
        cached: recalled.cached,
    })
}

/// `key` extended by the verdict rules (unchanged without rules).
fn rules_key(key: &str, rules: &[crate::config::VerdictRule]) -> String {
    if rules.is_empty() {
        return key.to_string();
    }
    let encoded = serde_json::to_string(rules).unwrap_or_default();
    Framed::new("lockstep-integrate", "ruled-verdict", 1)
        .part("key", key)
        .part("rules", &encoded)
        .hex()
}

/// The verdict of the first rule matching `exit` and the output in `log`,
/// with the rule's name.
fn apply_rules(
    rules: &[crate::config::VerdictRule],
    exit: Exit,
    log: &std::path::Path,
) -> Option<(Verdict, String)> {
    if rules.is_empty() {
        return None;
    }
    let code = match exit {
        Exit::Code(c) => Some(c),
        Exit::Signal(s) => Some(128 + s),
        Exit::TimedOut => None,
    };
    // The log's last 8 MiB: where a crash or a missing device is reported.
    let output = read_tail(log, 8 << 20);
    rules.iter().enumerate().find_map(|(n, rule)| {
        let exit_ok = rule.exit.is_empty() || code.is_some_and(|c| rule.exit.contains(&c));
        let output_ok = rule
            .output
            .as_ref()
            .is_none_or(|needle| output.contains(needle.as_str()));
        (exit_ok && output_ok).then(|| {
            let verdict = match rule.verdict {
                crate::config::RuleVerdict::Good => Verdict::Good,
                crate::config::RuleVerdict::Bad => Verdict::Bad,
                crate::config::RuleVerdict::Skip => Verdict::Skip,
            };
            (
                verdict,
                rule.name.clone().unwrap_or_else(|| format!("#{}", n + 1)),
            )
        })
    })
}

/// The last `max` bytes of `path` as text (empty when unreadable).
fn read_tail(path: &std::path::Path, max: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(max)));
    let mut bytes = Vec::new();
    let _ = file.take(max).read_to_end(&mut bytes);
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Runs `spec` with its process group recorded in `journal` while it runs
/// (and removed again once it has exited, so recovery never kills a group
/// whose number has been reused).
fn run_journaled(
    ig: &Integrate,
    spec: &Spec,
    journal: Option<(i64, serde_json::Value)>,
) -> Result<process::Finished, Error> {
    let finished = process::run(spec, |pgid| {
        if let Some((id, mut state)) = journal.clone() {
            if let Some(fields) = state.as_object_mut() {
                fields.insert("pgid".into(), pgid.into());
                let _ = ig.store.update(id, &state);
            }
        }
    })?;
    if let Some((id, state)) = &journal {
        ig.store.update(*id, state)?;
    }
    Ok(finished)
}

fn humantime_secs(d: Duration) -> String {
    format!("{}s", d.as_secs())
}

/// The superproject tree and the command: what every verdict of a search
/// depends on besides the commit and the patches.
fn verdict_context(tree_key: &str, command: &[String]) -> String {
    Framed::new("lockstep-integrate", "verdict-context", 2)
        .part("tree", tree_key)
        .parts("command", command)
        .hex()
}

/// Hash of the superproject's HEAD tree listing without the submodule entry.
pub fn superproject_tree_key(ig: &Integrate) -> Result<String, Error> {
    let listing = ig
        .superproject
        .git(&["ls-tree", "-r", "-z", "--full-tree", "HEAD"])?;
    let entries = listing.split('\0').filter(|entry| {
        let path = entry.split_once('\t').map(|(_, p)| p).unwrap_or("");
        !entry.is_empty() && path != ig.pin_path()
    });
    Ok(Framed::new("lockstep-integrate", "superproject-tree", 2)
        .parts("entries", entries)
        .hex())
}

/// `release bump --smoke` with `[integrate] pin-file`: the smoke tried
/// through this engine's prober (its runner, its verdict cache, its
/// checkout: the pin file written, then put back), so a revision smoked by
/// `integrate loop` is never smoked again.
pub struct PinSmoke<'i, 'a> {
    ig: &'i Integrate<'a>,
    label: &'static str,
}

/// The smoke of `release bump` (upstream fetched first).
pub fn pin_smoke<'i, 'a>(ig: &'i Integrate<'a>) -> Result<PinSmoke<'i, 'a>, Error> {
    ig.fetch_upstream()?;
    Ok(PinSmoke {
        ig,
        label: "release-bump",
    })
}

impl lockstep_bisect::Probe for PinSmoke<'_, '_> {
    fn probe(&mut self, rev: &str) -> Result<lockstep_bisect::Tried, Error> {
        let sha = self.ig.sub.must_resolve(rev)?;
        let commit = self.ig.sub.commit(&sha)?;
        let mut prober = Prober::new(
            self.ig,
            Vec::new(),
            self.ig.cfg.smoke.clone(),
            Some(self.ig.cfg.smoke_timeout),
            self.label,
        )?;
        let probe = prober.probe(&commit, 1, 1);
        prober.finish()?;
        let probe = probe?;
        Ok(lockstep_bisect::Tried {
            verdict: probe.verdict,
            cached: probe.cached,
            log: probe.log,
        })
    }
}

/// Puts the submodule back where a search found it.
fn undo_probe(ig: &Integrate, state: &ProbeJournal) -> Result<(), Error> {
    let target = if ig.superproject.head()? == state.superproject_head {
        state.restore.clone()
    } else {
        ig.pin()?
    };
    let current = ig.checked_out()?;
    let mut sources = vec![current.as_str(), target.as_str()];
    if let Some(m) = &state.moving_to {
        sources.push(m);
    }
    crate::checkout::checkout_submodule(ig, &target, &sources)
}

/// A probe's checkout is put back after a crash and by `abort` alike.
impl crate::journal::Journaled for ProbeJournal {
    const KIND: &'static str = "probe";

    fn resume(&self, ig: &Integrate, id: i64) -> Result<Option<crate::journal::Resumed>, Error> {
        crate::probe::undo_probe(ig, self)?;
        ig.store.finish(id, "interrupted")?;
        Ok(None)
    }

    fn undo(&self, ig: &Integrate) -> Result<String, Error> {
        crate::probe::undo_probe(ig, self)?;
        Ok("probe checkout".into())
    }
}
