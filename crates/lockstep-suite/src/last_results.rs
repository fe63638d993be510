//! The last results of the tests (not the results history: that is
//! lockstep-history's per-run files), kept in the store: the last outcome and time of
//! every test, so `--last-failed` reruns only failures and a report can say
//! what is newly failing, newly passing, or slower than its golden allows.
//!
//! The store lives in the git common dir of the directory the tests run from
//! (`.git/lockstep/state.db`), or under `$LOCKSTEP_HOME/state/` outside git.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lockstep_core::Error;
use lockstep_store::Store;
use serde::{Deserialize, Serialize};

use crate::model::{Changes, Outcome, RunReport};

const RECORD: &str = "test-history";

/// One test's last result.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Last {
    pub outcome: Outcome,
    pub seconds: f64,
    pub time_ms: Option<f64>,
}

/// The history for a directory.
pub struct LastResults {
    store: Store,
    pub tests: BTreeMap<String, Last>,
}

/// Where the store for `cwd` lives: `lockstep/` in the git common dir of the
/// repository holding `cwd` (git run through lockstep-git, so a hook's
/// `GIT_DIR` does not redirect it), else a directory under
/// `$LOCKSTEP_HOME/state` named after `cwd`.
pub fn state_dir(cwd: &Path) -> PathBuf {
    match lockstep_git::Repo::new(cwd).state_dir() {
        Ok(dir) => dir,
        Err(_) => {
            let id = lockstep_core::hash::sha256_bytes(cwd.display().to_string().as_bytes());
            lockstep_core::paths::states().join(id.get(..16).unwrap_or(&id))
        }
    }
}

impl LastResults {
    pub fn open(cwd: &Path) -> Result<LastResults, Error> {
        let store = Store::open(&state_dir(cwd))?;
        let tests = store.get(RECORD)?.unwrap_or_default();
        Ok(LastResults { store, tests })
    }

    /// The database file the history lives in.
    pub fn database(&self) -> PathBuf {
        self.store.path().to_path_buf()
    }

    /// Tests whose last outcome was a failure.
    pub fn failed(&self) -> std::collections::HashSet<String> {
        self.tests
            .iter()
            .filter(|(_, l)| l.outcome.is_failure())
            .map(|(id, _)| id.clone())
            .collect()
    }

    /// Compares `report` with the history, then records it.
    pub fn record(&mut self, report: &RunReport) -> Result<Changes, Error> {
        let mut changes = Changes::default();
        for r in &report.results {
            let time_ms = r
                .steps
                .iter()
                .filter_map(|s| s.metrics.as_ref())
                .find_map(|m| m.time_ms);
            if let Some(prev) = self.tests.get(&r.id) {
                if !prev.outcome.is_failure() && r.outcome.is_failure() {
                    changes.newly_failing.push(r.id.clone());
                }
                if prev.outcome.is_failure()
                    && !r.outcome.is_failure()
                    && r.outcome != Outcome::Skip
                {
                    changes.newly_passing.push(r.id.clone());
                }
            }
            let golden = r
                .steps
                .iter()
                .filter_map(|s| s.metrics.as_ref())
                .find_map(|m| m.golden_time_ms);
            if let (Some(t), Some(g)) = (time_ms, golden) {
                let step_failed = r
                    .steps
                    .iter()
                    .any(|s| s.metrics.is_some() && s.status == crate::model::StepStatus::Failed);
                if step_failed && t > g {
                    changes.slower.push((r.id.clone(), t));
                }
            }
            self.tests.insert(
                r.id.clone(),
                Last {
                    outcome: r.outcome,
                    seconds: r.seconds,
                    time_ms,
                },
            );
        }
        self.store.set(RECORD, &self.tests)?;
        Ok(changes)
    }
}
