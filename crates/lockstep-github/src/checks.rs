//! Check runs of a commit (`GET /repos/{o}/{r}/commits/{sha}/check-runs`):
//! what `lockstep integrate bisect --ci` reads as CI's verdict on a commit
//! it pushed.

use lockstep_core::Error;
use serde::Deserialize;

use crate::client::{parse, Client, MAX_JSON_BYTES};
use crate::repo::Repo;

/// One check run (the fields lockstep reads).
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct CheckRun {
    #[serde(default)]
    pub name: String,
    /// `queued`, `in_progress`, `completed` (and the newer `waiting`, `pending`, `requested`).
    pub status: String,
    /// Set once completed: `success`, `failure`, `neutral`, `cancelled`,
    /// `skipped`, `timed_out`, `action_required`, `stale`.
    #[serde(default)]
    pub conclusion: Option<String>,
}

#[derive(Deserialize)]
struct Page {
    #[serde(default)]
    check_runs: Vec<CheckRun>,
}

/// What the check runs of a commit say together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checks {
    /// No check run yet, or some still running.
    Pending,
    /// Every run completed successfully (or neutral, or skipped).
    Passed,
    /// A run failed or timed out: its name.
    Failed(String),
    /// Runs were cancelled, went stale or wait for a person: no verdict.
    Inconclusive(String),
}

impl Client {
    /// The check runs of commit `sha` (the first 100).
    pub fn check_runs(&self, repo: &Repo, sha: &str) -> Result<Vec<CheckRun>, Error> {
        let what = format!("the check runs of {} in {repo}", &sha[..sha.len().min(12)]);
        let fetched = self
            .api_request(&format!("/repos/{repo}/commits/{sha}/check-runs"))
            .query("per_page", "100")
            .fetch(MAX_JSON_BYTES)
            .map_err(|e| self.error(e, &what))?;
        let page: Page = parse(&fetched.body, &what, &self.scrubber())?;
        Ok(page.check_runs)
    }
}

/// The verdict of a commit's check runs.
pub fn summarize(runs: &[CheckRun]) -> Checks {
    if runs.is_empty() || runs.iter().any(|r| r.status != "completed") {
        return Checks::Pending;
    }
    let conclusion = |r: &CheckRun| r.conclusion.clone().unwrap_or_default();
    if let Some(r) = runs
        .iter()
        .find(|r| matches!(conclusion(r).as_str(), "failure" | "timed_out"))
    {
        return Checks::Failed(format!("{} ({})", r.name, conclusion(r)));
    }
    if let Some(r) = runs
        .iter()
        .find(|r| !matches!(conclusion(r).as_str(), "success" | "neutral" | "skipped"))
    {
        return Checks::Inconclusive(format!("{} ({})", r.name, conclusion(r)));
    }
    Checks::Passed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(status: &str, conclusion: Option<&str>) -> CheckRun {
        CheckRun {
            name: "build".into(),
            status: status.into(),
            conclusion: conclusion.map(String::from),
        }
    }

    #[test]
    fn runs_summarize_to_one_verdict() {
        assert_eq!(summarize(&[]), Checks::Pending);
        assert_eq!(
            summarize(&[run("completed", Some("success")), run("in_progress", None)]),
            Checks::Pending
        );
        assert_eq!(
            summarize(&[
                run("completed", Some("success")),
                run("completed", Some("skipped"))
            ]),
            Checks::Passed
        );
        assert!(matches!(
            summarize(&[
                run("completed", Some("success")),
                run("completed", Some("failure"))
            ]),
            Checks::Failed(_)
        ));
        assert!(matches!(
            summarize(&[run("completed", Some("cancelled"))]),
            Checks::Inconclusive(_)
        ));
    }
}
