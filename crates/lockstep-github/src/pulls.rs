//! Pull requests: find the one for a branch, open it as a draft, update its
//! title and body (`lockstep integrate publish`).
//!
//! A pull request is found by its head branch (`GET /pulls?head=OWNER:BRANCH
//! &state=all`), so a rerun updates the one it opened instead of opening a
//! second; one that someone closed is reported, never reopened. Creating is
//! a POST, never retried but for a rate limit (a repeat could open two);
//! updating is a PATCH of the same fields, safe to repeat.

use lockstep_core::Error;
use lockstep_http::{HttpError, StatusClass};
use serde::{Deserialize, Serialize};

use crate::client::{parse, Client, ListPage, PastLastPage, MAX_JSON_BYTES};
use crate::repo::Repo;

/// A pull request as the API describes it (the fields lockstep reads).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub struct PullRequest {
    pub number: u64,
    /// `open` or `closed`.
    pub state: String,
    #[serde(default)]
    pub draft: bool,
    #[serde(default)]
    pub html_url: Option<String>,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub merged_at: Option<String>,
    /// The GraphQL id (what `markPullRequestReadyForReview` takes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<PullHead>,
}

/// A pull request's head: its branch and the repository it is in.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub struct PullHead {
    #[serde(rename = "ref")]
    pub branch: String,
    #[serde(default)]
    pub sha: Option<String>,
    /// `None` when the fork it came from was deleted.
    #[serde(default)]
    pub repo: Option<HeadRepo>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
pub struct HeadRepo {
    pub full_name: String,
}

impl PullRequest {
    pub fn is_open(&self) -> bool {
        self.state == "open"
    }
}

/// What a new pull request says.
#[derive(Debug, Clone, Serialize)]
pub struct NewPull<'a> {
    pub title: &'a str,
    /// The branch with the changes.
    pub head: &'a str,
    /// The branch it merges into.
    pub base: &'a str,
    pub body: &'a str,
    pub draft: bool,
}

#[derive(Serialize)]
struct Edit<'a> {
    title: &'a str,
    body: &'a str,
}

impl Client {
    /// The newest pull request whose head is `branch` of `repo` (open or
    /// closed), if any.
    pub fn pull_for_branch(&self, repo: &Repo, branch: &str) -> Result<Option<PullRequest>, Error> {
        let what = format!("the pull requests of branch {branch} in {repo}");
        let head = format!("{}:{branch}", repo.owner);
        let request = self
            .api_request(&format!("/repos/{repo}/pulls"))
            .query("head", &head)
            .query("state", "all")
            .query("sort", "created")
            .query("direction", "desc")
            .query("per_page", "10");
        let fetched = request
            .fetch(MAX_JSON_BYTES)
            .map_err(|e| self.error(e, &what))?;
        let pulls: Vec<PullRequest> = parse(&fetched.body, &what, &self.scrubber())?;
        // Open first: a branch reopened after a closed PR has both.
        Ok(pulls
            .iter()
            .find(|p| p.is_open())
            .or_else(|| pulls.first())
            .cloned())
    }

    /// The open pull requests of `repo` whose head is a branch of `repo`
    /// itself (not a fork), newest first: the first [`crate::client::MAX_PAGES`] pages
    /// (1,000 pull requests; an integrate's is among the newest).
    pub fn open_pulls(&self, repo: &Repo) -> Result<Vec<PullRequest>, Error> {
        let what = format!("the open pull requests of {repo}");
        let own = repo.to_string();
        let scrub = self.scrubber();
        let all = self.list(
            &format!("/repos/{repo}/pulls"),
            &[
                ("state", "open"),
                ("sort", "created"),
                ("direction", "desc"),
            ],
            &what,
            PastLastPage::Stop,
            |bytes| {
                Ok(ListPage {
                    items: parse::<Vec<PullRequest>>(bytes, &what, &scrub)?,
                    total: None,
                })
            },
        )?;
        Ok(all
            .into_iter()
            .filter(|p| {
                p.is_open()
                    && p.head
                        .as_ref()
                        .and_then(|h| h.repo.as_ref())
                        .is_some_and(|r| r.full_name.eq_ignore_ascii_case(&own))
            })
            .collect())
    }

    /// Marks a draft pull request ready for review (GraphQL
    /// `markPullRequestReadyForReview`: the REST API cannot). Done only
    /// when GitHub's answer says the pull request is no longer a draft:
    /// errors, a null `data` or a missing field are failures.
    pub fn mark_ready_for_review(&self, repo: &Repo, pull: &PullRequest) -> Result<(), Error> {
        let what = format!(
            "marking pull request #{} of {repo} ready for review",
            pull.number
        );
        let id = pull
            .node_id
            .as_deref()
            .ok_or_else(|| Error::failed(format!("{what}: GitHub gave no node_id for it")))?;
        let field = "markPullRequestReadyForReview";
        let done = self.graphql(
            "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { isDraft } } }",
            serde_json::json!({"id": id}),
            field,
            &what,
        )?;
        ready_answer(&done, &what)
    }

    /// Opens a pull request (`POST /repos/{o}/{r}/pulls`).
    pub fn create_pull(&self, repo: &Repo, new: &NewPull<'_>) -> Result<PullRequest, Error> {
        let what = format!("a pull request for {} in {repo}", new.head);
        self.post_json(&format!("/repos/{repo}/pulls"), new, &what)
    }

    /// Replaces the title and body of pull request `number`.
    pub fn update_pull(
        &self,
        repo: &Repo,
        number: u64,
        title: &str,
        body: &str,
    ) -> Result<PullRequest, Error> {
        let what = format!("pull request #{number} of {repo}");
        let payload = serde_json::to_vec(&Edit { title, body })
            .map_err(|e| Error::failed("cannot encode the pull request").cause(e.to_string()))?;
        let response = self
            .api_patch(&format!("/repos/{repo}/pulls/{number}"))
            .send("application/json", &payload)
            .map_err(|e| match e {
                HttpError::Status(s) if s.class() == StatusClass::NotFound => Error::failed(format!(
                    "{what} does not exist (any more)"
                ))
                .hint("a deleted pull request is not recreated: publish again from a new integrate branch"),
                other => self.error(other, &what),
            })?;
        let bytes = response
            .bytes(MAX_JSON_BYTES)
            .map_err(|e| self.error(e, &what))?;
        parse(&bytes, &what, &self.scrubber())
    }
}

/// Whether `markPullRequestReadyForReview`'s value says the pull request is
/// ready now (`pullRequest.isDraft` is `false`): anything else is a failure
/// naming `what`.
pub fn ready_answer(done: &serde_json::Value, what: &str) -> Result<(), Error> {
    match done
        .get("pullRequest")
        .and_then(|p| p.get("isDraft"))
        .and_then(serde_json::Value::as_bool)
    {
        Some(false) => Ok(()),
        Some(true) => Err(Error::failed(format!(
            "GitHub answered {what}, but the pull request is still a draft"
        ))
        .hint("check the pull request on GitHub, then run it again")),
        None => Err(Error::failed(format!(
            "GitHub's answer to {what} does not say whether the pull request is still a draft"
        ))
        .hint("nothing is assumed done: check the pull request on GitHub, then run it again")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::graphql_field;
    use serde_json::json;

    fn mark(answer: serde_json::Value) -> Result<(), Error> {
        let what = "marking pull request #1 of o/r ready for review";
        let done = graphql_field(answer, "markPullRequestReadyForReview", what)?;
        ready_answer(&done, what)
    }

    #[test]
    fn only_an_answer_that_says_ready_is_ready() {
        assert!(mark(
            json!({"data": {"markPullRequestReadyForReview": {"pullRequest": {"isDraft": false}}}})
        )
        .is_ok());
        for (answer, said) in [
            (json!({"data": null}), "holds no data"),
            (json!({}), "holds no data"),
            (
                json!({"data": {}}),
                "has no `markPullRequestReadyForReview`",
            ),
            (
                json!({"data": {"markPullRequestReadyForReview": null}}),
                "has no",
            ),
            (
                json!({"data": {"markPullRequestReadyForReview": {}}}),
                "does not say",
            ),
            (
                json!({"data": {"markPullRequestReadyForReview": {"pullRequest": {"isDraft": true}}}}),
                "still a draft",
            ),
            (
                json!({"data": {"markPullRequestReadyForReview": {"pullRequest": {"isDraft": false}}}, "errors": [{"message": "Resource not accessible by integration"}]}),
                "refused",
            ),
            (
                json!({"data": null, "errors": [{"type": "NOT_FOUND"}]}),
                "refused",
            ),
            (json!({"errors": "nope"}), "refused"),
            (json!([1, 2]), "not an object"),
            (json!({"data": [1]}), "not what lockstep expects"),
        ] {
            let err = mark(answer.clone()).expect_err(&answer.to_string());
            let text = err.render();
            assert!(text.contains(said), "{answer}: {text}");
            assert!(
                text.contains("markPullRequestReadyForReview") || text.contains("ready for review"),
                "{text}"
            );
            assert_eq!(err.exit_code(), 1);
        }
        let err = mark(json!({"errors": [{"message": "Resource not accessible by integration"}]}))
            .unwrap_err();
        assert!(
            err.render()
                .contains("GitHub said: Resource not accessible by integration"),
            "{}",
            err.render()
        );
    }
}
