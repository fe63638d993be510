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
    parse_url, ClientConfig, HttpError, Redirects, Request, Scrubber, StatusClass, StatusError,
    Url, UrlError, UrlRules,
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
/// Items asked for per page of a list (GitHub's most).
pub const PER_PAGE: u32 = 100;
/// Pages of one list read at most ([`Client::list`]): 1,000 items at 100
/// a page. A list that goes on past it is an error, never a short answer.
pub const MAX_PAGES: u32 = 10;

/// One page of a list the API answers in pages: its items and, when the
/// answer says it (`total_count`), how many the whole list has.
pub struct ListPage<T> {
    pub items: Vec<T>,
    pub total: Option<u64>,
}

/// What [`Client::list`] does with a list longer than [`MAX_PAGES`] pages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PastLastPage {
    /// An error: a verdict over the list (every check run passed) must not
    /// be drawn from part of it.
    Fail,
    /// Keep the first pages (a newest-first search that may stop early).
    Stop,
}

/// How many items lists may answer before one is refused (a server that
/// pages forever, or answers huge pages, is bounded by pages times this).
const MAX_LIST_ITEMS: usize = (MAX_PAGES * PER_PAGE) as usize * 2;

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
    total_count: Option<u64>,
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

    /// Runs one GraphQL operation whose answer's top field is `field`
    /// (`markPullRequestReadyForReview`) and returns that field's value:
    /// never retried but for a 429 (a mutation). GitHub answers 200 to
    /// refused operations, so the body decides ([`graphql_field`]).
    pub(crate) fn graphql(
        &self,
        query: &str,
        variables: serde_json::Value,
        field: &str,
        what: &str,
    ) -> Result<serde_json::Value, Error> {
        let body = serde_json::json!({"query": query, "variables": variables});
        let answer: serde_json::Value = self.post_json_to(&self.graphql_endpoint(), &body, what)?;
        graphql_field(answer, field, what)
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

    /// Every item of a list the API answers in pages: `path` with `query`
    /// and `per_page=100`, then each page the answer's `Link: <URL>;
    /// rel="next"` names (on the API's origin and under its path, with the
    /// token; anything else is refused), at most [`MAX_PAGES`] pages
    /// (`past_last` says what more pages mean). `page` decodes one answer
    /// (its items, and `total_count` when the list has one). When the
    /// answers said how many the list has, fewer items than that is an
    /// error naming `what`, never a shorter list.
    pub fn list<T>(
        &self,
        path: &str,
        query: &[(&str, &str)],
        what: &str,
        past_last: PastLastPage,
        page: impl Fn(&[u8]) -> Result<ListPage<T>, Error>,
    ) -> Result<Vec<T>, Error> {
        let mut url = self.endpoint(path);
        for (name, value) in query {
            url.query_pairs_mut().append_pair(name, value);
        }
        url.query_pairs_mut()
            .append_pair("per_page", &PER_PAGE.to_string());
        let mut items = Vec::new();
        let mut total: Option<u64> = None;
        let mut pages = 0;
        let mut cut = false;
        let mut next = Some(url);
        while let Some(url) = next.take() {
            if pages == MAX_PAGES {
                match past_last {
                    PastLastPage::Stop => {
                        cut = true;
                        break;
                    }
                    PastLastPage::Fail => {
                        return Err(Error::failed(format!(
                            "{what} go on past {MAX_PAGES} pages of {PER_PAGE}: more than lockstep reads"
                        ))
                        .hint("nothing was decided from part of the list; check the repository on GitHub"))
                    }
                }
            }
            pages += 1;
            let fetched = self
                .authorised(self.http.get(&url))
                .fetch(MAX_JSON_BYTES)
                .map_err(|e| self.error(e, what))?;
            let answer = page(&fetched.body)?;
            if let Some(count) = answer.total {
                total = Some(total.map_or(count, |t| t.max(count)));
            }
            items.extend(answer.items);
            if items.len() > MAX_LIST_ITEMS {
                return Err(Error::failed(format!(
                    "GitHub's answer for {what} holds more than {MAX_LIST_ITEMS} items"
                )));
            }
            next = match fetched.header("link").and_then(next_link) {
                Some(link) => Some(self.next_page(&link, what)?),
                None => None,
            };
        }
        if let Some(total) = total {
            if (items.len() as u64) < total && !cut {
                return Err(Error::failed(format!(
                    "GitHub listed {} of the {total} {what}",
                    items.len()
                ))
                .cause("its answers say the list is longer than the pages they link")
                .hint("nothing was decided from part of the list: run it again (a list that changes while read is read again)"));
            }
        }
        Ok(items)
    }

    /// The URL a `Link: <...>; rel="next"` names, checked: on the API's
    /// origin and under its path (the token goes with it).
    fn next_page(&self, link: &str, what: &str) -> Result<Url, Error> {
        let refused = |why: String| {
            Error::failed(format!(
                "GitHub's answer for {what} links its next page somewhere lockstep does not go"
            ))
            .cause(why)
        };
        let url = parse_url(link, UrlRules::CREDENTIALED).map_err(|e| refused(e.to_string()))?;
        let base = self.api.path().trim_end_matches('/');
        let under = url.path() == base || url.path().starts_with(&format!("{base}/"));
        if !lockstep_http::same_origin(&url, &self.api) || !under {
            return Err(refused(format!(
                "{} is not on the API at {}",
                lockstep_http::redacted(&url),
                lockstep_http::redacted(&self.api)
            )));
        }
        Ok(url)
    }

    /// Every artifact of run `run_id`.
    pub fn run_artifacts(&self, repo: &Repo, run_id: u64) -> Result<Vec<Artifact>, Error> {
        let what = format!("the artifacts of run {run_id} in {repo}");
        let scrub = self.scrubber();
        self.list(
            &format!("/repos/{repo}/actions/runs/{run_id}/artifacts"),
            &[],
            &what,
            PastLastPage::Fail,
            |bytes| {
                let answer: ArtifactPage = parse(bytes, &what, &scrub)?;
                Ok(ListPage {
                    items: answer.artifacts,
                    total: answer.total_count,
                })
            },
        )
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

/// The value of `data.FIELD` in a GraphQL answer, or an error naming the
/// operation (`what`, and `field`): an answer with `errors` (any but an
/// empty list), without `data`, with `data: null` or without the field (or
/// with it null) is a failure, never a success: GitHub answers HTTP 200 to
/// an operation it refused.
pub fn graphql_field(
    answer: serde_json::Value,
    field: &str,
    what: &str,
) -> Result<serde_json::Value, Error> {
    use serde_json::Value;
    let shown = |text: &str| {
        let text: String = text.chars().take(300).collect();
        lockstep_core::error::printable_line(&text).into_owned()
    };
    let Value::Object(mut answer) = answer else {
        return Err(Error::failed(format!(
            "GitHub's GraphQL answer to {what} ({field}) is not an object"
        )));
    };
    match answer.get("errors") {
        None | Some(Value::Null) => {}
        Some(Value::Array(errors)) if errors.is_empty() => {}
        Some(errors) => {
            let said: Vec<String> = match errors {
                Value::Array(errors) => errors
                    .iter()
                    .take(10)
                    .map(|e| match e.get("message").and_then(Value::as_str) {
                        Some(message) => shown(message),
                        None => shown(&e.to_string()),
                    })
                    .collect(),
                other => vec![shown(&other.to_string())],
            };
            let mut error = Error::failed(format!("GitHub refused {what} ({field})"));
            for line in said {
                error = error.cause(format!("GitHub said: {line}"));
            }
            return Err(error);
        }
    }
    let data = match answer.remove("data") {
        Some(Value::Object(data)) => data,
        None | Some(Value::Null) => {
            return Err(Error::failed(format!(
                "GitHub's GraphQL answer to {what} ({field}) holds no data"
            ))
            .cause("it said neither what was done nor what went wrong")
            .hint("nothing is assumed done: check on GitHub, then run it again"))
        }
        Some(_) => {
            return Err(Error::failed(format!(
                "GitHub's GraphQL answer to {what} ({field}) is not what lockstep expects"
            ))
            .cause("`data` is not an object"))
        }
    };
    match data.get(field) {
        Some(value) if !value.is_null() => Ok(value.clone()),
        _ => Err(Error::failed(format!(
            "GitHub's GraphQL answer to {what} has no `{field}`"
        ))
        .hint("nothing is assumed done: check on GitHub, then run it again")),
    }
}

/// The target of the `rel="next"` link of a `Link` header
/// (`<https://...&page=2>; rel="next", <...>; rel="last"`), if any.
pub fn next_link(header: &str) -> Option<String> {
    let mut rest = header;
    while let Some(open) = rest.find('<') {
        let after = &rest[open + 1..];
        let close = after.find('>')?;
        let target = &after[..close];
        let params_end = after[close..].find('<').map_or(after.len(), |i| close + i);
        // `; rel="next"` up to the `,` before the next link.
        let params = after[close + 1..params_end].split(',').next().unwrap_or("");
        let is_next = params.split(';').any(|p| {
            let Some((key, value)) = p.split_once('=') else {
                return false;
            };
            key.trim().eq_ignore_ascii_case("rel")
                && value
                    .trim()
                    .trim_matches('"')
                    .split_ascii_whitespace()
                    .any(|r| r.eq_ignore_ascii_case("next"))
        });
        if is_next {
            return Some(target.trim().to_string());
        }
        rest = &after[params_end..];
    }
    None
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

/// The error for an HTTP status other than 2xx, by its class.
fn status_error(status: &StatusError, what: &str, token: Option<&Token>) -> Error {
    let code = status.status;
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
    let error = match status.class() {
        StatusClass::RateLimited => {
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
        StatusClass::Unauthorized => match token {
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
        StatusClass::Forbidden => {
            Error::failed(format!("GitHub refused access (HTTP 403) to {what}"))
                .hint("the token needs actions:read on the repository")
        }
        StatusClass::NotFound => {
            Error::failed(format!("not found (HTTP 404): {what}")).hint(if token.is_some() {
                "check --repo and --run, and that the token can see the repository"
            } else {
                "check --repo and --run; a private repository needs GITHUB_TOKEN"
            })
        }
        StatusClass::Gone => Error::failed(format!("{what} expired (HTTP 410)"))
            .hint("rerun the workflow, or build the packages locally with `lockstep pkg build`"),
        StatusClass::ServerError if status.attempts > 1 => Error::failed(format!(
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
    fn the_next_link_is_found_among_others() {
        let header = r#"<https://api.github.com/r?page=1>; rel="prev", <https://api.github.com/r?page=3>; rel="next", <https://api.github.com/r?page=9>; rel="last""#;
        assert_eq!(
            next_link(header).as_deref(),
            Some("https://api.github.com/r?page=3")
        );
        assert_eq!(
            next_link(r#"<https://x/a?b=1>;rel=next"#).as_deref(),
            Some("https://x/a?b=1")
        );
        for none in [
            "",
            "garbage",
            r#"<https://x/a>; rel="last""#,
            "<unclosed; rel=next",
        ] {
            assert_eq!(next_link(none), None, "{none}");
        }
    }

    /// GraphQL beside the REST API: api.github.com's `/graphql`, and
    /// Enterprise Server's `/api/graphql` beside its `/api/v3`.
    #[test]
    fn graphql_is_where_github_and_enterprise_server_serve_it() {
        let at = |api: &str| {
            Client::new(api, None)
                .unwrap()
                .graphql_endpoint()
                .to_string()
        };
        assert_eq!(
            at("https://api.github.com"),
            "https://api.github.com/graphql"
        );
        assert_eq!(
            at("https://ghe.example.com/api/v3"),
            "https://ghe.example.com/api/graphql"
        );
        assert_eq!(
            at("https://ghe.example.com/api/v3/"),
            "https://ghe.example.com/api/graphql"
        );
    }

    #[test]
    fn a_next_page_off_the_api_is_refused() {
        let c = Client::new("https://ghe.example.com/api/v3", None).unwrap();
        assert!(c
            .next_page("https://ghe.example.com/api/v3/repos/o/r/x?page=2", "it")
            .is_ok());
        for off in [
            "https://evil.example.com/api/v3/repos/o/r/x?page=2",
            "http://ghe.example.com/api/v3/repos/o/r/x?page=2",
            "https://ghe.example.com:444/api/v3/repos/o/r/x",
            "https://ghe.example.com/elsewhere?page=2",
            "https://ghe.example.com/api/v30/x",
            "https://user:pw@ghe.example.com/api/v3/x",
            "/api/v3/relative",
        ] {
            let err = c.next_page(off, "the check runs").expect_err(off);
            assert!(
                err.render()
                    .contains("links its next page somewhere lockstep does not go"),
                "{}",
                err.render()
            );
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
