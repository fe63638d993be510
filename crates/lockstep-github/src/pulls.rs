//! Pull requests: find the one for a branch, open it as a draft, update its
//! title and body (`lockstep integrate publish`).
//!
//! A pull request is found by its head branch (`GET /pulls?head=OWNER:BRANCH
//! &state=all`), so a rerun updates the one it opened instead of opening a
//! second; one that someone closed is reported, never reopened. Creating is
//! a POST, never retried but for a rate limit (a repeat could open two);
//! updating is a PATCH of the same fields, safe to repeat.

use lockstep_core::Error;
use lockstep_http::HttpError;
use serde::{Deserialize, Serialize};

use crate::client::{parse, Client, MAX_JSON_BYTES};
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

/// At most this many pages of 100 open pull requests are read.
const MAX_PULL_PAGES: u32 = 10;

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
    /// itself (not a fork), newest first.
    pub fn open_pulls(&self, repo: &Repo) -> Result<Vec<PullRequest>, Error> {
        let what = format!("the open pull requests of {repo}");
        let own = repo.to_string();
        let mut all = Vec::new();
        for page in 1..=MAX_PULL_PAGES {
            let request = self
                .api_request(&format!("/repos/{repo}/pulls"))
                .query("state", "open")
                .query("sort", "created")
                .query("direction", "desc")
                .query("per_page", "100")
                .query("page", &page.to_string());
            let fetched = request
                .fetch(MAX_JSON_BYTES)
                .map_err(|e| self.error(e, &what))?;
            let pulls: Vec<PullRequest> = parse(&fetched.body, &what, &self.scrubber())?;
            let short = pulls.len() < 100;
            all.extend(pulls.into_iter().filter(|p| {
                p.is_open()
                    && p.head
                        .as_ref()
                        .and_then(|h| h.repo.as_ref())
                        .is_some_and(|r| r.full_name.eq_ignore_ascii_case(&own))
            }));
            if short {
                break;
            }
        }
        Ok(all)
    }

    /// Marks a draft pull request ready for review (GraphQL
    /// `markPullRequestReadyForReview`: the REST API cannot).
    pub fn mark_ready_for_review(&self, repo: &Repo, pull: &PullRequest) -> Result<(), Error> {
        let what = format!(
            "marking pull request #{} of {repo} ready for review",
            pull.number
        );
        let id = pull
            .node_id
            .as_deref()
            .ok_or_else(|| Error::failed(format!("{what}: GitHub gave no node_id for it")))?;
        let query = serde_json::json!({
            "query": "mutation($id: ID!) { markPullRequestReadyForReview(input: {pullRequestId: $id}) { pullRequest { isDraft } } }",
            "variables": {"id": id},
        });
        let answer: serde_json::Value =
            self.post_json_to(&self.graphql_endpoint(), &query, &what)?;
        if let Some(errors) = answer
            .get("errors")
            .and_then(|e| e.as_array())
            .filter(|e| !e.is_empty())
        {
            let said: Vec<String> = errors
                .iter()
                .filter_map(|e| {
                    e.get("message")
                        .and_then(|m| m.as_str())
                        .map(str::to_string)
                })
                .collect();
            return Err(Error::failed(format!("GitHub refused {what}")).cause(said.join("; ")));
        }
        Ok(())
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
                HttpError::Status(s) if s.status == 404 => Error::failed(format!(
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
