//! Verdicts remembered: a revision's verdict is looked up in a verdict store
//! under the caller's key before anything runs, and what a run decided is
//! stored under it ([`recall_or_judge`]); [`narrow_stored`] narrows a
//! [`Range`] that way.
//!
//! Why here, behind a trait: `integrate` (smokes and CI rounds), `pkg
//! bisect` and `bench bisect` all remember verdicts, and each once had its
//! own copy of this lookup. The store (lockstep-store's probe records)
//! implements [`VerdictStore`]; this crate stores nothing itself.

use std::time::Instant;

use lockstep_core::Error;

use crate::range::Range;
use crate::{candidates, narrow, Verdict};

/// A verdict as the store keeps it.
#[derive(Debug, Clone)]
pub struct Stored {
    /// The caller's key (a `Framed` hash of everything the verdict depends on).
    pub key: String,
    /// Which command stored it (`pkg-bisect`, `ci` ...).
    pub context: String,
    pub commit: String,
    pub verdict: Verdict,
    pub detail: String,
    pub log: Option<String>,
    pub seconds: f64,
}

/// Where verdicts are remembered (lockstep-store's `Store`).
pub trait VerdictStore {
    /// The verdict stored under `key`, if any.
    fn recall(&self, key: &str) -> Result<Option<Stored>, Error>;
    /// Stores `verdict` under its key (replacing an older one).
    fn remember(&self, verdict: &Stored) -> Result<(), Error>;
}

/// What a run decided.
#[derive(Debug, Clone)]
pub struct Judged {
    pub verdict: Verdict,
    pub detail: String,
    pub log: Option<String>,
    /// How long the judging took, when the judge measured it itself (the
    /// command alone, without preparing the revision); else the call's time.
    pub seconds: Option<f64>,
}

/// A verdict, stored before or judged now.
#[derive(Debug, Clone)]
pub struct Recalled {
    pub verdict: Verdict,
    pub detail: String,
    pub log: Option<String>,
    pub seconds: f64,
    /// It came from the store: nothing ran.
    pub cached: bool,
}

/// The verdict stored under `key`, else `judge`'s (stored under `key` with
/// `context` and `commit`). A judge's error (a command that must stop the
/// bisection) stores nothing.
pub fn recall_or_judge(
    store: &dyn VerdictStore,
    key: String,
    context: &str,
    commit: &str,
    judge: impl FnOnce() -> Result<Judged, Error>,
) -> Result<Recalled, Error> {
    if let Some(stored) = store.recall(&key)? {
        return Ok(Recalled {
            verdict: stored.verdict,
            detail: stored.detail,
            log: stored.log,
            seconds: stored.seconds,
            cached: true,
        });
    }
    let started = Instant::now();
    let judged = judge()?;
    let seconds = judged
        .seconds
        .unwrap_or_else(|| started.elapsed().as_secs_f64());
    store.remember(&Stored {
        key,
        context: context.to_string(),
        commit: commit.to_string(),
        verdict: judged.verdict,
        detail: judged.detail.clone(),
        log: judged.log.clone(),
        seconds,
    })?;
    Ok(Recalled {
        verdict: judged.verdict,
        detail: judged.detail,
        log: judged.log,
        seconds,
        cached: false,
    })
}

/// Narrows `range` to its first bad commit ([`narrow`]), each commit's
/// verdict recalled from `store` under `key(commit)` or else from `judge`
/// (a verdict and its detail, then stored under `context`);
/// `step(commit, verdict, cached, detail, remaining)` sees each probe.
/// Returns the first bad commit when the skips leave one candidate, and
/// the candidates.
pub fn narrow_stored(
    range: &Range,
    store: &dyn VerdictStore,
    context: &str,
    key: impl Fn(&str) -> String,
    mut judge: impl FnMut(&str) -> Result<(Verdict, String), Error>,
    mut step: impl FnMut(&str, Verdict, bool, &str, usize),
) -> Result<(Option<String>, Vec<String>), Error> {
    let commits = &range.commits;
    let last = commits.len() - 1;
    let mut probed = 0;
    let mut skipped = Vec::new();
    let (_, hi) = narrow(-1, last, &mut skipped, |m| {
        let commit = &commits[m];
        let recalled = recall_or_judge(store, key(commit), context, commit, || {
            let (verdict, detail) = judge(commit)?;
            Ok(Judged {
                verdict,
                detail,
                log: None,
                seconds: None,
            })
        })?;
        probed += 1;
        step(
            commit,
            recalled.verdict,
            recalled.cached,
            &recalled.detail,
            last.saturating_sub(probed),
        );
        Ok(recalled.verdict)
    })?;
    let candidates: Vec<String> = candidates(-1, hi, &skipped)
        .into_iter()
        .map(|i| commits[i].clone())
        .collect();
    let first_bad = (candidates.len() == 1).then(|| candidates[0].clone());
    Ok((first_bad, candidates))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::HashMap;

    /// A store in memory (the real one is lockstep-store's SQLite, tested there).
    #[derive(Default)]
    struct Memory(RefCell<HashMap<String, Stored>>);

    impl VerdictStore for Memory {
        fn recall(&self, key: &str) -> Result<Option<Stored>, Error> {
            Ok(self.0.borrow().get(key).cloned())
        }
        fn remember(&self, verdict: &Stored) -> Result<(), Error> {
            self.0
                .borrow_mut()
                .insert(verdict.key.clone(), verdict.clone());
            Ok(())
        }
    }

    fn judged(verdict: Verdict) -> Result<Judged, Error> {
        Ok(Judged {
            verdict,
            detail: "ran".into(),
            log: Some("log".into()),
            seconds: Some(2.5),
        })
    }

    #[test]
    fn a_stored_verdict_is_recalled_and_nothing_runs() {
        let store = Memory::default();
        let first =
            recall_or_judge(&store, "k".into(), "test", "c1", || judged(Verdict::Bad)).unwrap();
        assert!(!first.cached);
        assert_eq!((first.verdict, first.seconds), (Verdict::Bad, 2.5));
        let again = recall_or_judge(
            &store,
            "k".into(),
            "test",
            "c1",
            || -> Result<Judged, Error> { panic!("judged twice") },
        )
        .unwrap();
        assert!(again.cached);
        assert_eq!(
            (again.verdict, again.log.as_deref()),
            (Verdict::Bad, Some("log"))
        );
    }

    #[test]
    fn a_judge_that_fails_stores_nothing() {
        let store = Memory::default();
        let err = recall_or_judge(&store, "k".into(), "test", "c1", || {
            Err(Error::failed("crashed"))
        });
        assert!(err.is_err());
        assert!(store.0.borrow().is_empty());
    }
}
