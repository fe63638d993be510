//! A blocking client for the few REST endpoints lockstep needs: a run's
//! artifacts, the newest successful run of a workflow on a branch, and an
//! artifact's zip.
//!
//! Every answer is bounded (JSON bodies by [`MAX_JSON_BYTES`], downloads by
//! the caller's limit, counted as they stream) and timed (connect and read
//! timeouts; a whole JSON exchange by [`JSON_TIMEOUT`]). HTTP failures become
//! errors in the user's terms: 401 names the variable the token came from,
//! 403/429 with an exhausted rate limit gives the reset time, 404 says what
//! was not found, 410 says the artifact expired.

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use lockstep_core::Error;
use serde::Deserialize;

use crate::repo::Repo;

/// Where the API is when `$GITHUB_API_URL` is unset.
pub const DEFAULT_API_URL: &str = "https://api.github.com";
/// The largest JSON answer read.
pub const MAX_JSON_BYTES: u64 = 8 << 20;
/// The longest one JSON request may take in all.
pub const JSON_TIMEOUT: Duration = Duration::from_secs(60);
/// Pages of artifacts read at most (100 per page).
const MAX_PAGES: u32 = 10;
/// Characters of an error answer's message quoted in the error.
const EXCERPT: usize = 200;

/// A token and the variable it came from (the error for a 401 names it).
#[derive(Clone)]
pub struct Token {
    value: String,
    pub source: &'static str,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Token(from ${})", self.source)
    }
}

impl Token {
    pub fn new(value: impl Into<String>, source: &'static str) -> Token {
        Token {
            value: value.into(),
            source,
        }
    }

    /// `$GITHUB_TOKEN`, else `$GH_TOKEN` (empty values are unset).
    pub fn from_env() -> Option<Token> {
        ["GITHUB_TOKEN", "GH_TOKEN"].into_iter().find_map(|var| {
            std::env::var(var)
                .ok()
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .map(|v| Token::new(v, var))
        })
    }
}

/// A workflow run.
#[derive(Debug, Clone, Deserialize)]
pub struct Run {
    pub id: u64,
    #[serde(default)]
    pub html_url: String,
    #[serde(default)]
    pub head_sha: String,
    #[serde(default)]
    pub head_branch: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub conclusion: Option<String>,
    #[serde(default)]
    pub created_at: String,
    /// `push`, `pull_request`, ...
    #[serde(default)]
    pub event: Option<String>,
    /// Where the run's code came from (a fork for pull requests from forks).
    #[serde(default)]
    pub head_repository: Option<RunRepository>,
}

/// A run's `head_repository`.
#[derive(Debug, Clone, Deserialize)]
pub struct RunRepository {
    #[serde(default)]
    pub full_name: String,
}

/// A run's artifact.
#[derive(Debug, Clone, Deserialize)]
pub struct Artifact {
    pub id: u64,
    pub name: String,
    #[serde(default)]
    pub size_in_bytes: u64,
    #[serde(default)]
    pub expired: bool,
    #[serde(default)]
    pub archive_download_url: String,
    #[serde(default)]
    pub expires_at: Option<String>,
}

#[derive(Deserialize)]
struct ArtifactPage {
    #[serde(default)]
    total_count: u64,
    #[serde(default)]
    artifacts: Vec<Artifact>,
}

#[derive(Deserialize)]
struct RunPage {
    #[serde(default)]
    workflow_runs: Vec<Run>,
}

/// The API client.
pub struct Client {
    api: String,
    token: Option<Token>,
    agent: ureq::Agent,
}

impl Client {
    /// A client for `api` (no trailing slash needed).
    pub fn new(api: &str, token: Option<Token>) -> Result<Client, Error> {
        let api = api.trim().trim_end_matches('/').to_string();
        // Plain http only to this machine: the token must not cross a network in clear.
        let loopback = ["http://127.0.0.1", "http://localhost", "http://[::1]"]
            .iter()
            .any(|p| {
                api.strip_prefix(p)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with([':', '/']))
            });
        if !(api.starts_with("https://") || loopback) {
            return Err(
                Error::usage(format!("the GitHub API URL `{api}` is not an http(s) URL"))
                    .hint("set GITHUB_API_URL to e.g. https://api.github.com, or unset it"),
            );
        }
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(Duration::from_secs(30))
            .timeout_read(Duration::from_secs(120))
            .timeout_write(Duration::from_secs(120))
            .redirects(0)
            .user_agent(concat!("lockstep/", env!("CARGO_PKG_VERSION")))
            .build();
        Ok(Client { api, token, agent })
    }

    /// `$GITHUB_API_URL` (default api.github.com) and the token from the environment.
    pub fn from_env() -> Result<Client, Error> {
        let api = std::env::var("GITHUB_API_URL")
            .ok()
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_API_URL.to_string());
        Client::new(&api, Token::from_env())
    }

    /// Whether `url` is on the API's scheme and host (and port).
    fn on_api_host(&self, url: &str) -> bool {
        let origin_end = |u: &str| {
            let after_scheme = u.find("://").map_or(0, |i| i + 3);
            u[after_scheme..]
                .find('/')
                .map_or(u.len(), |i| after_scheme + i)
        };
        let api_origin = &self.api[..origin_end(&self.api)];
        url.len() >= api_origin.len() && url[..origin_end(url)].eq_ignore_ascii_case(api_origin)
    }

    /// The API's host (remote URLs on it name repositories): `github.com`
    /// for api.github.com, else the API URL's own host.
    pub fn web_host(&self) -> String {
        let host = self
            .api
            .split_once("://")
            .map_or(self.api.as_str(), |(_, rest)| rest)
            .split(['/', ':'])
            .next()
            .unwrap_or_default();
        host.strip_prefix("api.").unwrap_or(host).to_string()
    }

    fn api_request(&self, path: &str) -> ureq::Request {
        self.api_request_to(&format!("{}{path}", self.api))
    }

    /// A request to `url` with the API's headers (and the token): only for
    /// URLs on the API's own host.
    fn api_request_to(&self, url: &str) -> ureq::Request {
        let mut request = self
            .agent
            .get(url)
            .set("Accept", "application/vnd.github+json")
            .set("X-GitHub-Api-Version", "2022-11-28");
        if let Some(token) = &self.token {
            request = request.set("Authorization", &format!("Bearer {}", token.value));
        }
        request
    }

    fn get_json<T: for<'de> Deserialize<'de>>(
        &self,
        request: ureq::Request,
        what: &str,
    ) -> Result<T, Error> {
        // A renamed or transferred repository answers 301 to its new URL on
        // the same host: followed (a few times), with the token, only there.
        let mut result = request.timeout(JSON_TIMEOUT).call();
        for _ in 0..3 {
            let location = match &result {
                Ok(r) if matches!(r.status(), 301 | 302 | 307 | 308) => {
                    r.header("location").map(str::to_string)
                }
                _ => None,
            };
            match location.filter(|l| self.on_api_host(l)) {
                Some(url) => result = self.api_request_to(&url).timeout(JSON_TIMEOUT).call(),
                None => break,
            }
        }
        let response = self.answer(result, what)?;
        let mut body = Vec::new();
        response
            .into_reader()
            .take(MAX_JSON_BYTES + 1)
            .read_to_end(&mut body)
            .map_err(|e| {
                Error::failed(format!("cannot read GitHub's answer for {what}"))
                    .cause(e.to_string())
            })?;
        if body.len() as u64 > MAX_JSON_BYTES {
            return Err(Error::failed(format!(
                "GitHub's answer for {what} is larger than {MAX_JSON_BYTES} bytes"
            )));
        }
        serde_json::from_slice(&body).map_err(|e| {
            Error::failed(format!(
                "GitHub's answer for {what} is not what lockstep expects"
            ))
            .cause(e.to_string())
        })
    }

    /// A 2xx response, or the error for whatever came back instead.
    fn answer(
        &self,
        result: Result<ureq::Response, ureq::Error>,
        what: &str,
    ) -> Result<ureq::Response, Error> {
        match result {
            Ok(response) if (200..300).contains(&response.status()) => Ok(response),
            Ok(response) => Err(status_error(
                response.status(),
                response,
                what,
                self.token.as_ref(),
            )),
            Err(ureq::Error::Status(code, response)) => {
                Err(status_error(code, response, what, self.token.as_ref()))
            }
            Err(ureq::Error::Transport(t)) => Err(transport_error(&t, what, &self.api)),
        }
    }

    /// Every artifact of run `run_id`.
    pub fn run_artifacts(&self, repo: &Repo, run_id: u64) -> Result<Vec<Artifact>, Error> {
        let what = format!("the artifacts of run {run_id} in {repo}");
        let mut artifacts = Vec::new();
        for page in 1..=MAX_PAGES {
            let request = self
                .api_request(&format!("/repos/{repo}/actions/runs/{run_id}/artifacts"))
                .query("per_page", "100")
                .query("page", &page.to_string());
            let answer: ArtifactPage = self.get_json(request, &what)?;
            let short = answer.artifacts.len() < 100;
            artifacts.extend(answer.artifacts);
            if short || artifacts.len() as u64 >= answer.total_count {
                break;
            }
        }
        Ok(artifacts)
    }

    /// The newest run on `branch` that succeeded (its conclusion is
    /// `success`, not merely completed), of `workflow` (a file name or id)
    /// when given.
    pub fn latest_green_run(
        &self,
        repo: &Repo,
        branch: &str,
        workflow: Option<&str>,
    ) -> Result<Run, Error> {
        let path = match workflow {
            Some(workflow) => {
                check_workflow(workflow)?;
                format!("/repos/{repo}/actions/workflows/{workflow}/runs")
            }
            None => format!("/repos/{repo}/actions/runs"),
        };
        let what = match workflow {
            Some(w) => format!("the runs of {w} on {branch} in {repo}"),
            None => format!("the runs on {branch} in {repo}"),
        };
        let request = self
            .api_request(&path)
            .query("branch", branch)
            .query("event", "push")
            .query("status", "success")
            .query("per_page", "50");
        let page: RunPage = self.get_json(request, &what)?;
        newest_green(page.workflow_runs, branch, &repo.to_string()).ok_or_else(|| {
            Error::failed(format!("no successful run found: {what}"))
                .hint("pass --run ID, or check the branch and --workflow")
        })
    }

    /// Downloads `artifact`'s zip to `dest` (created new; removed again on
    /// failure), at most `max_bytes`. The API answers with a redirect to a
    /// signed storage URL, followed without the token.
    pub fn download_artifact(
        &self,
        repo: &Repo,
        artifact: &Artifact,
        dest: &Path,
        max_bytes: u64,
    ) -> Result<(), Error> {
        let what = format!("artifact {} ({}) of {repo}", artifact.name, artifact.id);
        let first = self.answer_or_redirect(
            self.api_request(&format!(
                "/repos/{repo}/actions/artifacts/{}/zip",
                artifact.id
            ))
            .call(),
            &what,
        )?;
        let response = match first {
            Answer::Body(response) => *response,
            Answer::Redirect(location) => {
                // No Authorization header: the token is for the API host only.
                let request = self.agent.get(&location);
                match request.call() {
                    Ok(r) if r.status() == 200 => r,
                    Ok(r) => return Err(status_error(r.status(), r, &what, None)),
                    Err(ureq::Error::Status(code, r)) => {
                        return Err(status_error(code, r, &what, None))
                    }
                    Err(ureq::Error::Transport(t)) => {
                        return Err(transport_error(&t, &what, "the storage host"))
                    }
                }
            }
        };
        if let Some(length) = response
            .header("content-length")
            .and_then(|v| v.trim().parse::<u64>().ok())
        {
            if length > max_bytes {
                return Err(Error::failed(format!(
                    "{what} is {length} bytes, more than lockstep downloads ({max_bytes})"
                )));
            }
        }
        let written = stream_to(response, dest, max_bytes, &what);
        if written.is_err() {
            let _ = std::fs::remove_file(dest);
        }
        written
    }

    fn answer_or_redirect(
        &self,
        result: Result<ureq::Response, ureq::Error>,
        what: &str,
    ) -> Result<Answer, Error> {
        match result {
            Ok(response) if matches!(response.status(), 301 | 302 | 303 | 307 | 308) => {
                let location = response
                    .header("location")
                    .unwrap_or_default()
                    .trim()
                    .to_string();
                if !(location.starts_with("https://") || location.starts_with("http://")) {
                    return Err(Error::failed(format!(
                        "GitHub redirected the download of {what} to something that is not an http(s) URL"
                    )));
                }
                Ok(Answer::Redirect(location))
            }
            other => self.answer(other, what).map(|r| Answer::Body(Box::new(r))),
        }
    }
}

enum Answer {
    Body(Box<ureq::Response>),
    Redirect(String),
}

fn stream_to(
    response: ureq::Response,
    dest: &Path,
    max_bytes: u64,
    what: &str,
) -> Result<(), Error> {
    let mut out = fs_err::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dest)?;
    let mut reader = response.into_reader().take(max_bytes.saturating_add(1));
    let copied = std::io::copy(&mut reader, &mut out).map_err(|e| {
        Error::failed(format!("the download of {what} broke off")).cause(e.to_string())
    })?;
    if copied > max_bytes {
        return Err(Error::failed(format!(
            "{what} is more than {max_bytes} bytes"
        )));
    }
    out.flush()?;
    out.sync_all()?;
    Ok(())
}

/// A workflow file name (`lockstep-pkgci.yml`) or numeric id: it goes into
/// a URL path, so nothing else is accepted.
fn check_workflow(workflow: &str) -> Result<(), Error> {
    let ok = !workflow.is_empty()
        && workflow.len() <= 255
        && !workflow.starts_with('.')
        && workflow
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(
            Error::usage(format!("`{workflow}` is not a workflow file name"))
                .hint("pass --workflow the file's name, e.g. lockstep-pkgci.yml"),
        )
    }
}

/// The newest (by creation time, then id) run on `branch` whose conclusion
/// is success, of a push to `repo` itself: a pull request from a fork can
/// name its branch `main` too, and its wheels are the fork's code.
fn newest_green(runs: Vec<Run>, branch: &str, repo: &str) -> Option<Run> {
    runs.into_iter()
        .filter(|r| r.conclusion.as_deref() == Some("success"))
        .filter(|r| r.head_branch.as_deref() == Some(branch))
        .filter(|r| r.event.as_deref() == Some("push"))
        .filter(|r| {
            r.head_repository
                .as_ref()
                .is_some_and(|h| h.full_name.eq_ignore_ascii_case(repo))
        })
        .max_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)))
}

/// The error for an HTTP status other than 2xx.
fn status_error(code: u16, response: ureq::Response, what: &str, token: Option<&Token>) -> Error {
    let remaining = response
        .header("x-ratelimit-remaining")
        .map(str::trim)
        .map(str::to_string);
    let reset = response
        .header("x-ratelimit-reset")
        .and_then(|v| v.trim().parse::<i64>().ok());
    let retry_after = response
        .header("retry-after")
        .and_then(|v| v.trim().parse::<u64>().ok());
    let message = github_message(response);
    let said = message.as_deref().map(|m| format!("GitHub said: {m}"));
    let with_said = |e: Error| match &said {
        Some(s) => e.cause(s.clone()),
        None => e,
    };
    let rate_limited = remaining.as_deref() == Some("0")
        || (code == 429)
        || (code == 403 && retry_after.is_some());
    if matches!(code, 403 | 429) && rate_limited {
        let when = match (reset, retry_after) {
            (Some(reset), _) => format!("it resets at {}", format_reset(reset)),
            (None, Some(secs)) => format!("retry after {secs} seconds"),
            (None, None) => "GitHub did not say when it resets".to_string(),
        };
        let hint = if token.is_some() {
            "wait until then, or use another token"
        } else {
            "wait until then, or set GITHUB_TOKEN for a higher limit"
        };
        return with_said(
            Error::failed(format!(
                "GitHub's API rate limit is exhausted (HTTP {code}) reading {what}"
            ))
            .cause(when),
        )
        .hint(hint);
    }
    let error = match code {
        401 => match token {
            Some(token) => Error::failed(format!(
                "GitHub refused the token from ${} (HTTP 401) reading {what}",
                token.source
            ))
            .hint(format!(
                "check ${}: it may be expired, revoked or mistyped",
                token.source
            )),
            None => Error::failed(format!("GitHub wants a token (HTTP 401) for {what}"))
                .hint("set GITHUB_TOKEN (or GH_TOKEN) to a token with actions:read"),
        },
        403 => Error::failed(format!("GitHub refused access (HTTP 403) to {what}"))
            .hint("the token needs actions:read on the repository"),
        404 => Error::failed(format!("not found (HTTP 404): {what}")).hint(if token.is_some() {
            "check --repo and --run, and that the token can see the repository"
        } else {
            "check --repo and --run; a private repository needs GITHUB_TOKEN"
        }),
        410 => Error::failed(format!("{what} expired (HTTP 410)"))
            .hint("rerun the workflow, or build the packages locally with `lockstep pkg build`"),
        _ => Error::failed(format!("GitHub answered HTTP {code} for {what}")),
    };
    with_said(error)
}

/// `2030-03-17T17:46:40Z`, or the raw number when it is not a time.
fn format_reset(epoch: i64) -> String {
    match jiff::Timestamp::from_second(epoch) {
        Ok(t) => t.to_string(),
        Err(_) => format!("epoch second {epoch}"),
    }
}

/// The `message` of a GitHub error answer, short and on one line.
fn github_message(response: ureq::Response) -> Option<String> {
    let mut body = Vec::new();
    response
        .into_reader()
        .take(64 << 10)
        .read_to_end(&mut body)
        .ok()?;
    let value: serde_json::Value = serde_json::from_slice(&body).ok()?;
    let message = value.get("message")?.as_str()?;
    let one_line: String = message.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut short: String = one_line.chars().take(EXCERPT).collect();
    if one_line.chars().count() > EXCERPT {
        short.push('…');
    }
    Some(short)
}

/// A transport error, built from its parts: ureq's own text starts with the
/// URL, which for a storage download carries a signature.
fn transport_error(t: &ureq::Transport, what: &str, host: &str) -> Error {
    let mut cause = t.kind().to_string();
    if let Some(message) = t.message() {
        cause = format!("{cause}: {message}");
    }
    Error::failed(format!("cannot reach {host} for {what}"))
        .cause(cause)
        .hint("check the network, or GITHUB_API_URL")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: u64, created: &str, conclusion: Option<&str>, branch: &str) -> Run {
        Run {
            id,
            html_url: String::new(),
            head_sha: String::new(),
            head_branch: Some(branch.into()),
            status: Some("completed".into()),
            conclusion: conclusion.map(str::to_string),
            created_at: created.into(),
            event: Some("push".into()),
            head_repository: Some(RunRepository {
                full_name: "o/n".into(),
            }),
        }
    }

    #[test]
    fn newest_green_skips_failures_and_other_branches() {
        let runs = vec![
            run(5, "2026-11-05T00:00:00Z", Some("failure"), "main"),
            run(4, "2026-11-04T00:00:00Z", Some("success"), "other"),
            run(3, "2026-11-03T00:00:00Z", Some("success"), "main"),
            run(2, "2026-11-02T00:00:00Z", Some("success"), "main"),
            run(6, "2026-11-06T00:00:00Z", None, "main"),
        ];
        let mut fork = run(7, "2026-11-07T00:00:00Z", Some("success"), "main");
        fork.event = Some("pull_request".into());
        fork.head_repository = Some(RunRepository {
            full_name: "attacker/n".into(),
        });
        let mut runs = runs;
        runs.push(fork);
        assert_eq!(newest_green(runs, "main", "o/n").map(|r| r.id), Some(3));
        assert!(newest_green(vec![], "main", "o/n").is_none());
    }

    #[test]
    fn reset_time_is_readable() {
        assert_eq!(format_reset(1_900_000_000), "2030-03-17T17:46:40Z");
        assert!(format_reset(i64::MAX).starts_with("epoch second"));
    }

    #[test]
    fn workflow_names_are_checked() {
        assert!(check_workflow("lockstep-pkgci.yml").is_ok());
        assert!(check_workflow("12345").is_ok());
        for bad in ["", "../x.yml", "a/b.yml", "x.yml?y=1", ".hidden"] {
            assert!(check_workflow(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_token_never_prints() {
        let token = Token::new("ghp_secret", "GITHUB_TOKEN");
        assert!(!format!("{token:?}").contains("ghp_secret"));
    }

    #[test]
    fn redirects_are_followed_only_on_the_api_host() {
        let c = Client::new("https://api.github.com", None).unwrap();
        assert!(c.on_api_host("https://api.github.com/repositories/1/actions/runs"));
        assert!(!c.on_api_host("https://api.github.com.evil.example/x"));
        assert!(!c.on_api_host("http://api.github.com/x"));
        assert!(!c.on_api_host("https://storage.example/x"));
        let c = Client::new("http://127.0.0.1:8080/api", None).unwrap();
        assert!(c.on_api_host("http://127.0.0.1:8080/other"));
        assert!(!c.on_api_host("http://127.0.0.1:9090/other"));
    }

    #[test]
    fn web_host_follows_the_api() {
        let c = Client::new("https://api.github.com/", None).unwrap();
        assert_eq!(c.web_host(), "github.com");
        let c = Client::new("https://ghe.example.com/api/v3", None).unwrap();
        assert_eq!(c.web_host(), "ghe.example.com");
        assert!(Client::new("ftp://x", None).is_err());
        assert!(Client::new("http://api.example.com", None).is_err());
        assert!(Client::new("http://127.0.0.1:8080", None).is_ok());
        assert!(Client::new("http://127.0.0.1.evil.example", None).is_err());
    }
}
