//! A blocking client for the few REST endpoints lockstep needs: a run's
//! artifacts, the newest successful run of a workflow on a branch, and an
//! artifact's zip.
//!
//! The wire is lockstep-http's (timeouts, retries on 429/5xx, redirects,
//! scrubbing of the token and the signed storage URL, resumable downloads);
//! this module knows GitHub. Every answer is bounded (JSON bodies by
//! [`MAX_JSON_BYTES`], downloads by the caller's limit, counted as they
//! stream) and timed (a whole JSON exchange by [`JSON_TIMEOUT`], a download
//! by [`DOWNLOAD_TIMEOUT`]). HTTP failures become
//! errors in the user's terms: 401 names the variable the token came from,
//! 403/429 with an exhausted rate limit gives the reset time, 404 says what
//! was not found, 410 says the artifact expired.

use std::path::Path;
use std::time::Duration;

use lockstep_core::Error;
use lockstep_http::{
    parse_url, ClientConfig, HttpError, Redirects, Request, Scrubber, StatusError, Url, UrlError,
    UrlRules,
};
use serde::Deserialize;

use crate::repo::Repo;

/// Where the API is when `$GITHUB_API_URL` is unset.
pub const DEFAULT_API_URL: &str = "https://api.github.com";
/// The largest JSON answer read.
pub const MAX_JSON_BYTES: u64 = 8 << 20;
/// The longest one JSON request may take in all.
pub const JSON_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest an artifact download may take in all, resumes included.
pub const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(3600);
/// Pages of artifacts read at most (100 per page).
const MAX_PAGES: u32 = 10;

/// A token and the variable it came from (the error for a 401 names it).
#[derive(Clone)]
pub struct Token {
    value: String,
    /// The variable's name (`GITHUB_TOKEN`), for messages.
    pub source: String,
}

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Token(from ${})", self.source)
    }
}

impl Token {
    pub fn new(value: impl Into<String>, source: impl Into<String>) -> Token {
        Token {
            value: value.into(),
            source: source.into(),
        }
    }

    /// The first of `vars` that is set and not empty.
    pub fn from_vars(vars: &[&str]) -> Option<Token> {
        vars.iter().find_map(|var| {
            std::env::var(var)
                .ok()
                .map(|v| v.trim().to_string())
                .filter(|v| !v.is_empty())
                .map(|v| Token::new(v, *var))
        })
    }

    /// `$GITHUB_TOKEN`, else `$GH_TOKEN` (empty values are unset).
    pub fn from_env() -> Option<Token> {
        Token::from_vars(&["GITHUB_TOKEN", "GH_TOKEN"])
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

/// An API answer decoded as `T`, every string in it passed through
/// `scrub` first (a server that echoes the token in a URL, a name or a
/// message must not get it printed, stored or published), or an error
/// saying GitHub's answer for `what` is not what lockstep expects.
pub fn parse<T: for<'de> Deserialize<'de>>(
    bytes: &[u8],
    what: &str,
    scrub: &Scrubber,
) -> Result<T, Error> {
    let not_expected = |e: serde_json::Error| {
        Error::failed(format!(
            "GitHub's answer for {what} is not what lockstep expects"
        ))
        .cause(e.to_string())
    };
    let mut value: serde_json::Value = serde_json::from_slice(bytes).map_err(not_expected)?;
    scrub_strings(&mut value, scrub);
    serde_json::from_value(value).map_err(not_expected)
}

/// Every string of `value` (keys too) with `scrub` applied.
fn scrub_strings(value: &mut serde_json::Value, scrub: &Scrubber) {
    use serde_json::Value;
    // An explicit stack: a deeply nested answer must not overflow ours.
    let mut stack = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::String(s) => *s = scrub.apply(s),
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(map) => {
                let dirty: Vec<String> = map
                    .keys()
                    .filter(|k| scrub.apply(k) != **k)
                    .cloned()
                    .collect();
                for key in dirty {
                    if let Some(moved) = map.remove(&key) {
                        map.insert(scrub.apply(&key), moved);
                    }
                }
                stack.extend(map.values_mut());
            }
            _ => {}
        }
    }
}

/// The API client.
pub struct Client {
    api: Url,
    token: Option<Token>,
    http: lockstep_http::Client,
}

impl Client {
    /// A client for `api` (no trailing slash needed): https, or plain http
    /// to this machine only (the token must not cross a network in clear),
    /// and never with `user:password@` (the host after the `@` would get
    /// the token). A refused URL is a usage error: nothing is sent.
    pub fn new(api: &str, token: Option<Token>) -> Result<Client, Error> {
        if let Some(token) = &token {
            // A header cannot hold a line break: said here, naming the
            // variable, rather than as an HTTP failure after the request.
            if token.value.chars().any(|c| c.is_control() || c == ' ') {
                return Err(Error::usage(format!(
                    "${} holds a line break, a space or another control character: it is not a token",
                    token.source
                ))
                .hint(format!(
                    "set {} to the token alone (check how it was pasted or read from a file); nothing was sent",
                    token.source
                )));
            }
        }
        let text = api.trim().trim_end_matches('/');
        let api = parse_url(text, UrlRules::CREDENTIALED).map_err(|reason| {
            let shown = match &reason {
                // Userinfo may be a password: the URL is not repeated.
                UrlError::Userinfo => "with user:password@".to_string(),
                _ => format!("`{}`", lockstep_core::error::printable_line(text)),
            };
            Error::usage(format!("the GitHub API URL {shown} is refused"))
                .cause(reason.to_string())
                .hint("set GITHUB_API_URL to e.g. https://api.github.com (http:// only to 127.0.0.1 or localhost), or unset it")
        })?;
        let http = lockstep_http::Client::new(ClientConfig {
            deadline: JSON_TIMEOUT,
            ..ClientConfig::default()
        });
        Ok(Client { api, token, http })
    }

    /// `$GITHUB_API_URL` (default api.github.com) and the token from the environment.
    pub fn from_env() -> Result<Client, Error> {
        Client::with_token(Token::from_env())
    }

    /// `$GITHUB_API_URL` (default api.github.com) with `token`.
    pub fn with_token(token: Option<Token>) -> Result<Client, Error> {
        let api = std::env::var("GITHUB_API_URL")
            .ok()
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| DEFAULT_API_URL.to_string());
        Client::new(&api, token)
    }

    /// The API's host (remote URLs on it name repositories): `github.com`
    /// for api.github.com, else the API URL's own host.
    pub fn web_host(&self) -> String {
        let host = self.api.host_str().unwrap_or_default();
        host.strip_prefix("api.").unwrap_or(host).to_string()
    }

    /// The URL of `path` under the API (which may itself have a path, as
    /// GitHub Enterprise's `/api/v3` does).
    pub(crate) fn endpoint(&self, path: &str) -> Url {
        let mut url = self.api.clone();
        let joined = format!("{}{path}", self.api.path().trim_end_matches('/'));
        url.set_path(&joined);
        url
    }

    /// A GET of `path` with the API's headers and the token. Redirects are
    /// followed on the API's origin only, with the token: a renamed or
    /// transferred repository answers 301 to its new URL on the same host.
    pub(crate) fn api_request(&self, path: &str) -> Request<'_> {
        self.authorised(self.http.get(&self.endpoint(path)))
    }

    /// POSTs `body` as JSON to `path` and decodes the answer (`what` names
    /// it in errors): how a release or a pull request is created.
    pub(crate) fn post_json<B: serde::Serialize, T: for<'de> Deserialize<'de>>(
        &self,
        path: &str,
        body: &B,
        what: &str,
    ) -> Result<T, Error> {
        self.post_json_to(&self.endpoint(path), body, what)
    }

    /// POSTs `body` as JSON to `url` (an API path, or the GraphQL
    /// endpoint) and decodes the answer; never retried but for a 429.
    pub(crate) fn post_json_to<B: serde::Serialize, T: for<'de> Deserialize<'de>>(
        &self,
        url: &Url,
        body: &B,
        what: &str,
    ) -> Result<T, Error> {
        let payload = serde_json::to_vec(body)
            .map_err(|e| Error::failed(format!("cannot encode {what}")).cause(e.to_string()))?;
        let response = self
            .authorised(self.http.post(url))
            .retry(lockstep_http::RetryOn::RateLimitOnly)
            .send("application/json", &payload)
            .map_err(|e| self.error(e, what))?;
        let bytes = response
            .bytes(MAX_JSON_BYTES)
            .map_err(|e| self.error(e, what))?;
        parse(&bytes, what, &self.scrubber())
    }

    /// The GraphQL endpoint: `/graphql` beside the REST API
    /// (`https://api.github.com/graphql`), `/api/graphql` for a GitHub
    /// Enterprise API at `/api/v3`.
    pub(crate) fn graphql_endpoint(&self) -> Url {
        let mut url = self.api.clone();
        let path = self.api.path().trim_end_matches('/');
        let base = path.strip_suffix("/v3").unwrap_or(path);
        url.set_path(&format!("{base}/graphql"));
        url
    }

    /// A PATCH of `path` with the API's headers and the token: it sets
    /// fields to given values, so a repeat after a 5xx is safe.
    pub(crate) fn api_patch(&self, path: &str) -> Request<'_> {
        self.authorised(self.http.request("PATCH", &self.endpoint(path)))
            .retry(lockstep_http::RetryOn::Transient)
    }

    /// `request` with the API's headers and the token; redirects on the
    /// same origin only.
    pub(crate) fn authorised<'a>(&'a self, request: Request<'a>) -> Request<'a> {
        let mut request = request
            .header("Accept", "application/vnd.github+json")
            .header("X-GitHub-Api-Version", "2022-11-28")
            .redirects(Redirects::SameOrigin);
        if let Some(token) = &self.token {
            request = request.bearer(&token.value);
        }
        request
    }

    /// The HTTP client underneath.
    pub(crate) fn http(&self) -> &lockstep_http::Client {
        &self.http
    }

    /// The API's base URL.
    pub fn api_url(&self) -> &Url {
        &self.api
    }

    /// Hides the token (in every form the scrubber knows) in server text.
    pub fn scrubber(&self) -> Scrubber {
        let mut scrub = Scrubber::new();
        if let Some(token) = &self.token {
            scrub.add_token(&token.value);
        }
        scrub
    }

    /// Whether a token is set.
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }

    pub(crate) fn get_json<T: for<'de> Deserialize<'de>>(
        &self,
        request: Request<'_>,
        what: &str,
    ) -> Result<T, Error> {
        let fetched = request
            .fetch(MAX_JSON_BYTES)
            .map_err(|e| self.error(e, what))?;
        parse(&fetched.body, what, &self.scrubber())
    }

    /// The error for `what` in the user's terms.
    pub(crate) fn error(&self, error: HttpError, what: &str) -> Error {
        match error {
            HttpError::Status(status) => status_error(&status, what, self.token.as_ref()),
            HttpError::Transport(t) => {
                Error::failed(format!("cannot reach GitHub for {what}: {}", t.reason()))
                    .cause(t.detail)
                    .hint("check the network, or GITHUB_API_URL")
            }
            HttpError::TooLarge { limit } => Error::failed(format!(
                "GitHub's answer for {what} is larger than {limit} bytes"
            )),
            other => other.into_error("GitHub", what),
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

    /// Downloads `artifact`'s zip to `dest` (written beside it first, renamed
    /// when whole; a broken transfer is resumed), at most `max_bytes`. The API
    /// answers with a redirect to a signed storage URL, followed without the
    /// token (whatever host the storage is on) and never printed.
    pub fn download_artifact(
        &self,
        repo: &Repo,
        artifact: &Artifact,
        dest: &Path,
        max_bytes: u64,
    ) -> Result<(), Error> {
        let what = format!(
            "artifact {} ({}) of {repo}",
            lockstep_core::error::printable_line(&artifact.name),
            artifact.id
        );
        self.api_request(&format!(
            "/repos/{repo}/actions/artifacts/{}/zip",
            artifact.id
        ))
        .redirects(Redirects::AnyOriginCredentialsFirstOnly)
        .deadline(DOWNLOAD_TIMEOUT)
        .download(dest, max_bytes)
        .map_err(|e| match e {
            HttpError::TooLarge { limit } => Error::failed(format!(
                "{what} is more than lockstep downloads ({limit} bytes)"
            )),
            HttpError::Transport(t) => {
                Error::failed(format!("the download of {what} broke off: {}", t.reason()))
                    .cause(t.detail)
                    .hint("check the network, then fetch again")
            }
            HttpError::Redirect(r) => Error::failed(format!(
                "GitHub redirected the download of {what} somewhere lockstep does not follow"
            ))
            .cause(r.to_string()),
            other => self.error(other, what.as_str()),
        })?;
        Ok(())
    }
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
fn status_error(status: &StatusError, what: &str, token: Option<&Token>) -> Error {
    let code = status.status;
    let remaining = status.header("x-ratelimit-remaining").map(str::trim);
    let reset = status
        .header("x-ratelimit-reset")
        .and_then(|v| v.trim().parse::<i64>().ok());
    let retry_after = status
        .header("retry-after")
        .and_then(|v| v.trim().parse::<u64>().ok());
    let said = status.message().map(|m| format!("GitHub said: {m}"));
    let with_said = |e: Error| match &said {
        Some(s) => e.cause(s.clone()),
        None => e,
    };
    let rate_limited =
        remaining == Some("0") || (code == 429) || (code == 403 && retry_after.is_some());
    if matches!(code, 403 | 429) && rate_limited {
        let when = match (reset, retry_after) {
            (Some(reset), _) => format!("it resets at {}", format_reset(reset)),
            (None, Some(secs)) => format!(
                "retry after {}",
                lockstep_core::words::count(secs as usize, "second", "seconds")
            ),
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
        500..=599 if status.attempts > 1 => Error::failed(format!(
            "GitHub answered HTTP {code} for {what} ({} attempts)",
            status.attempts
        ))
        .hint("GitHub is having trouble: try again later"),
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
    fn web_host_follows_the_api() {
        let c = Client::new("https://api.github.com/", None).unwrap();
        assert_eq!(c.web_host(), "github.com");
        let c = Client::new("https://ghe.example.com/api/v3", None).unwrap();
        assert_eq!(c.web_host(), "ghe.example.com");
        assert!(Client::new("ftp://x", None).is_err());
        assert!(Client::new("http://api.example.com", None).is_err());
        assert!(Client::new("http://127.0.0.1:8080", None).is_ok());
        assert!(Client::new("http://127.0.0.1.evil.example", None).is_err());
        // The host after `@` is the one reached: refused, and not repeated.
        let err = Client::new("http://127.0.0.1:1@localhost:8080/", None)
            .err()
            .expect("userinfo is refused");
        assert_eq!(err.exit_code(), 2);
        assert!(!err.render().contains("127.0.0.1:1"), "{}", err.render());
        let c = Client::new("https://ghe.example.com/api/v3/", None).unwrap();
        assert_eq!(
            c.endpoint("/repos/o/r").as_str(),
            "https://ghe.example.com/api/v3/repos/o/r"
        );
    }
}
