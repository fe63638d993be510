//! Check runs of a commit (`GET /repos/{o}/{r}/commits/{sha}/check-runs`):
//! what `lockstep integrate bisect --ci` reads as CI's verdict on a commit
//! it pushed.

use lockstep_core::Error;
use lockstep_http::Scrubber;
use serde::Deserialize;

use crate::client::{parse, Client, ListPage, PastLastPage};
use crate::repo::Repo;

/// One check run (the fields lockstep reads). Every field may be missing
/// or null in an answer: a run without a name is still a run whose verdict
/// counts ([`CheckRun::label`]), one without a status has not finished.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq, Default)]
pub struct CheckRun {
    #[serde(default)]
    pub id: Option<u64>,
    #[serde(default)]
    pub name: Option<String>,
    /// `queued`, `in_progress`, `completed` (and the newer `waiting`, `pending`, `requested`).
    #[serde(default)]
    pub status: Option<String>,
    /// Set once completed: `success`, `failure`, `neutral`, `cancelled`,
    /// `skipped`, `timed_out`, `action_required`, `stale`.
    #[serde(default)]
    pub conclusion: Option<String>,
}

impl CheckRun {
    /// How the run is named in messages and pull request bodies: its name
    /// (control and invisible characters escaped), or `(unnamed check run
    /// ID)` when it has none.
    pub fn label(&self) -> String {
        match self
            .name
            .as_deref()
            .map(str::trim)
            .filter(|n| !n.is_empty())
        {
            Some(name) => {
                let name: String = name.chars().take(200).collect();
                lockstep_core::error::printable_line(&name).into_owned()
            }
            None => match self.id {
                Some(id) => format!("(unnamed check run {id})"),
                None => "(unnamed check run)".to_string(),
            },
        }
    }

    /// `NAME (conclusion)`.
    pub fn described(&self) -> String {
        let conclusion = self.conclusion.as_deref().unwrap_or("no conclusion");
        let conclusion: String = conclusion.chars().take(40).collect();
        format!(
            "{} ({})",
            self.label(),
            lockstep_core::error::printable_line(&conclusion)
        )
    }

    fn completed(&self) -> bool {
        self.status.as_deref() == Some("completed")
    }
}

#[derive(Deserialize)]
struct Page {
    #[serde(default)]
    total_count: Option<u64>,
    #[serde(default)]
    check_runs: Option<Vec<CheckRun>>,
}

/// One page of `GET .../check-runs` decoded: its runs and `total_count`.
/// An answer without a `check_runs` list is not a page of them (a verdict
/// must not come from an answer that lists nothing because it is another
/// answer).
pub fn check_run_page(
    bytes: &[u8],
    what: &str,
    scrub: &Scrubber,
) -> Result<ListPage<CheckRun>, Error> {
    let page: Page = parse(bytes, what, scrub)?;
    let items = page.check_runs.ok_or_else(|| {
        Error::failed(format!(
            "GitHub's answer for {what} is not what lockstep expects"
        ))
        .cause("it has no `check_runs` list")
    })?;
    Ok(ListPage {
        items,
        total: page.total_count,
    })
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
    /// Every check run of commit `sha`: all pages (`Link: rel="next"`),
    /// checked against the answers' `total_count` (fewer is an error).
    pub fn check_runs(&self, repo: &Repo, sha: &str) -> Result<Vec<CheckRun>, Error> {
        let short: String = sha.chars().take(12).collect();
        let what = format!("the check runs of {short} in {repo}");
        let scrub = self.scrubber();
        self.list(
            &format!("/repos/{repo}/commits/{sha}/check-runs"),
            &[],
            &what,
            PastLastPage::Fail,
            |bytes| check_run_page(bytes, &what, &scrub),
        )
    }
}

/// The verdict of a commit's check runs.
pub fn summarize(runs: &[CheckRun]) -> Checks {
    if runs.is_empty() || runs.iter().any(|r| !r.completed()) {
        return Checks::Pending;
    }
    let conclusion = |r: &CheckRun| r.conclusion.clone().unwrap_or_default();
    if let Some(r) = runs
        .iter()
        .find(|r| matches!(conclusion(r).as_str(), "failure" | "timed_out"))
    {
        return Checks::Failed(r.described());
    }
    if let Some(r) = runs.iter().find(|r| !passed(r)) {
        return Checks::Inconclusive(r.described());
    }
    Checks::Passed
}

/// Whether a completed run counts as passed (`success`, `neutral`, `skipped`).
pub fn passed(run: &CheckRun) -> bool {
    matches!(
        run.conclusion.as_deref(),
        Some("success" | "neutral" | "skipped")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(status: &str, conclusion: Option<&str>) -> CheckRun {
        CheckRun {
            id: Some(7),
            name: Some("build".into()),
            status: Some(status.into()),
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

    #[test]
    fn a_run_without_a_name_or_status_is_a_named_run_not_a_parse_failure() {
        let scrub = Scrubber::new();
        let page = check_run_page(
            br#"{"total_count": 3, "check_runs": [
                {"id": 5, "name": null, "status": "completed", "conclusion": "failure"},
                {"id": 6, "status": null, "conclusion": null},
                {"name": "lint\u202e", "status": "completed", "conclusion": "success"}
            ]}"#,
            "the check runs",
            &scrub,
        )
        .unwrap();
        assert_eq!(page.total, Some(3));
        assert_eq!(page.items[0].label(), "(unnamed check run 5)");
        assert_eq!(page.items[1].label(), "(unnamed check run 6)");
        assert_eq!(page.items[2].label(), "lint\\u{202e}");
        // One without a status has not finished.
        assert_eq!(summarize(&page.items), Checks::Pending);
        assert_eq!(
            summarize(&page.items[..1]),
            Checks::Failed("(unnamed check run 5) (failure)".into())
        );
        // An answer that is not a list of runs is not an empty list.
        for bad in [
            &br#"{"total_count": 0}"#[..],
            b"[]",
            b"null",
            b"{\"check_runs\": 5}",
        ] {
            assert!(check_run_page(bad, "the check runs", &scrub).is_err());
        }
    }
}
