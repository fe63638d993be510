//! A loopback stand-in for the parts of GitHub's REST API that the demo
//! drives (`integrate publish`: pull requests listed by head branch,
//! created, updated, marked ready through GraphQL) plus a webhook receiver:
//! real HTTP on 127.0.0.1, answering like GitHub does (401 for a bad token,
//! 404 for an unknown repository, 422 for a second open pull request of a
//! branch). Tests script failures in front of the normal answers (a 429
//! with `Retry-After`, a 500, garbage) and read back every request it saw.
//!
//! The parts only tests use (GitHub Releases and their assets, a CI's check
//! runs) are served by lockstep-testkit's `github`, plugged in through
//! [`Routes`]: the released binary (which links this crate through the
//! demo) does not carry them.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Value};

/// A pull request the server holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pull {
    pub number: u64,
    pub head: String,
    pub base: String,
    pub title: String,
    pub body: String,
    pub draft: bool,
    /// `open` or `closed`.
    pub state: String,
}

/// One request as the server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// Path and query.
    pub target: String,
    /// It carried the right token.
    pub authorised: bool,
    pub body: String,
}

/// Every exchange of a server, written as JSON lines: `lockstep demo` keeps
/// one when `LOCKSTEP_DEMO_GITHUB_LOG=FILE` is set, so that a test can hold
/// the demo's own loopback GitHub (which runs inside the lockstep process)
/// to GitHub's description (lockstep-testkit's `check_exchange_log`). The
/// token is never written: of the request's headers only `Accept` is.
pub struct ExchangeLog {
    file: Mutex<std::fs::File>,
}

/// One exchange as [`ExchangeLog`] wrote it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Logged {
    pub method: String,
    pub target: String,
    /// The request's `Accept` header, when it had one.
    pub accept: Option<String>,
    pub request_body: String,
    pub status: u16,
    pub response_body: String,
    /// A test's (or the demo's) scripted answer, not the stand-in's own.
    pub played: bool,
    pub repository: String,
    pub enterprise: bool,
}

impl ExchangeLog {
    /// A log written to `path` (created or truncated).
    pub fn create(path: &std::path::Path) -> std::io::Result<Arc<ExchangeLog>> {
        Ok(Arc::new(ExchangeLog {
            file: Mutex::new(std::fs::File::create(path)?),
        }))
    }

    /// The exchanges a log holds, in order (a line that does not read is an
    /// error naming it).
    pub fn read(path: &std::path::Path) -> std::io::Result<Vec<Logged>> {
        let text = std::fs::read_to_string(path)?;
        text.lines()
            .enumerate()
            .filter(|(_, line)| !line.trim().is_empty())
            .map(|(n, line)| {
                serde_json::from_str(line).map_err(|e| {
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidData,
                        format!("{} line {}: {e}", path.display(), n + 1),
                    )
                })
            })
            .collect()
    }
}

impl Observe for ExchangeLog {
    fn exchange(&self, asked: &Asked<'_>, status: u16, body: &[u8], played: bool) {
        let logged = Logged {
            method: asked.method.to_string(),
            target: asked.target.to_string(),
            accept: asked
                .headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("accept"))
                .map(|(_, v)| v.clone()),
            request_body: String::from_utf8_lossy(asked.body).into_owned(),
            status,
            response_body: String::from_utf8_lossy(body).into_owned(),
            played,
            repository: asked.repository.to_string(),
            enterprise: asked.enterprise,
        };
        if let Ok(line) = serde_json::to_string(&logged) {
            let mut file = self.file.lock().unwrap_or_else(|e| e.into_inner());
            let _ = writeln!(file, "{line}");
        }
    }
}

/// A canned answer served before the normal ones.
#[derive(Debug, Clone)]
pub struct Scripted {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// A part of GitHub's API served in front of this server's own (the
/// tests' releases and CI, in lockstep-testkit); [`FakeGithub::add_routes`]
/// plugs one in. The demo plugs in none.
pub trait Routes: Send + Sync {
    /// The answer to `request`, or `None` to leave it to the next routes
    /// and then to this server's own.
    fn answer(&self, request: &Asked<'_>) -> Option<Scripted>;
}

/// Sees every exchange the server answers, after it is answered
/// (lockstep-testkit's conformance layer, which holds it to GitHub's
/// description). The demo adds none.
pub trait Observe: Send + Sync {
    /// `request` was answered `status` with `body`; `played`: the answer
    /// is a failure a test plays on purpose (a scripted answer,
    /// [`FakeGithub::script`], or the token echoed, [`FakeGithub::echo_token`]),
    /// not the stand-in's own.
    fn exchange(&self, request: &Asked<'_>, status: u16, body: &[u8], played: bool);
}

/// A request as [`Routes`] see it.
#[derive(Debug, Clone, Copy)]
pub struct Asked<'a> {
    pub method: &'a str,
    /// Path and query.
    pub target: &'a str,
    pub body: &'a [u8],
    /// The request's headers, as sent.
    pub headers: &'a [(String, String)],
    /// It carried the right token.
    pub authorised: bool,
    /// The server's port (the host is 127.0.0.1).
    pub port: u16,
    /// `OWNER/NAME` the server serves.
    pub repository: &'a str,
    /// Served as a GitHub Enterprise Server ([`FakeGithub::start_enterprise`]):
    /// `target` is the path under `/api/v3` (`/graphql` for `/api/graphql`,
    /// `/uploads/...` for `/api/uploads/...`).
    pub enterprise: bool,
}

#[derive(Default)]
struct State {
    pulls: Vec<Pull>,
    seen: Vec<Seen>,
    scripted: VecDeque<Scripted>,
    webhook_posts: Vec<String>,
    /// Every answer repeats the token ([`FakeGithub::echo_token`]).
    echo: bool,
    /// Pull requests marked ready for review (GraphQL), in order.
    ready_marked: Vec<u64>,
    /// The answer to every GraphQL request instead of doing it.
    graphql_answer: Option<Value>,
    /// Served in front of the server's own answers, in order.
    routes: Vec<Arc<dyn Routes>>,
    /// Told of every exchange.
    observers: Vec<Arc<dyn Observe>>,
}

/// The server; it stops with the process (its thread only accepts).
pub struct FakeGithub {
    port: u16,
    token: String,
    repository: String,
    enterprise: bool,
    state: Arc<Mutex<State>>,
}

impl FakeGithub {
    /// Serves `repository` (`OWNER/NAME`) to requests bearing `token`.
    pub fn start(repository: &str, token: &str) -> std::io::Result<FakeGithub> {
        Self::serve(repository, token, false)
    }

    /// Serves `repository` as a GitHub Enterprise Server does: the REST API
    /// under `/api/v3` (what [`FakeGithub::url`] gives), GraphQL at
    /// `/api/graphql`, uploads at `/api/uploads`; the URLs in its answers
    /// name those. A request for the API without the prefix is answered
    /// 404, as GHES answers it: a client that drops the prefix fails.
    pub fn start_enterprise(repository: &str, token: &str) -> std::io::Result<FakeGithub> {
        Self::serve(repository, token, true)
    }

    fn serve(repository: &str, token: &str, enterprise: bool) -> std::io::Result<FakeGithub> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let server = FakeGithub {
            port,
            token: token.to_string(),
            repository: repository.to_string(),
            enterprise,
            state: Arc::new(Mutex::new(State::default())),
        };
        let shared = server.state.clone();
        let (token, repository) = (server.token.clone(), server.repository.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let _ = serve_one(stream, port, &token, &repository, enterprise, &shared);
            }
        });
        Ok(server)
    }

    /// The API base (`$GITHUB_API_URL`): `http://127.0.0.1:PORT`, or
    /// `http://127.0.0.1:PORT/api/v3` for an Enterprise Server.
    pub fn url(&self) -> String {
        match self.enterprise {
            true => format!("{}{ENTERPRISE_API}", self.origin()),
            false => self.origin(),
        }
    }

    /// `http://127.0.0.1:PORT`, the web host (webhooks, downloads).
    fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A webhook URL on this server (posts are counted, answered 204).
    pub fn webhook_url(&self) -> String {
        format!("{}/hooks/integrate", self.origin())
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn pulls(&self) -> Vec<Pull> {
        self.state().pulls.clone()
    }

    /// Serves `routes` in front of this server's own answers (after any
    /// scripted one): lockstep-testkit's releases and CI.
    pub fn add_routes(&self, routes: Arc<dyn Routes>) {
        self.state().routes.push(routes);
    }

    /// Tells `observer` of every exchange from now on.
    pub fn add_observer(&self, observer: Arc<dyn Observe>) {
        self.state().observers.push(observer);
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.state().seen.clone()
    }

    /// The bodies posted to [`FakeGithub::webhook_url`].
    pub fn webhook_posts(&self) -> Vec<String> {
        self.state().webhook_posts.clone()
    }

    /// Answers the next request with `status`, `headers` and `body`.
    pub fn script(&self, status: u16, headers: &[(&str, &str)], body: &str) {
        self.state().scripted.push_back(Scripted {
            status,
            headers: headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            body: body.as_bytes().to_vec(),
        });
    }

    /// Forgets the scripted answers not served yet.
    pub fn clear_scripts(&self) {
        self.state().scripted.clear();
    }

    /// A hostile or careless server: from now on every JSON answer repeats
    /// the token wherever that keeps the answer usable (each `html_url`
    /// gets `?t=TOKEN`, each object an `echo` field, each `message` and
    /// `name` a suffix).
    pub fn echo_token(&self) {
        self.state().echo = true;
    }

    /// Every GraphQL request is answered `answer` (HTTP 200) without doing
    /// anything (`{"data": null}`, errors ...); `None`: answered for real.
    pub fn set_graphql_answer(&self, answer: Option<Value>) {
        self.state().graphql_answer = answer;
    }

    /// The pull requests marked ready for review through GraphQL.
    pub fn ready_marked(&self) -> Vec<u64> {
        self.state().ready_marked.clone()
    }

    /// Closes pull request `number`, as a reviewer would.
    pub fn close_pull(&self, number: u64) {
        for pull in &mut self.state().pulls {
            if pull.number == number {
                pull.state = "closed".into();
            }
        }
    }
}

/// When everything the stand-in makes was made (GitHub's timestamps).
pub const MADE_AT: &str = "2026-01-01T00:00:00Z";

/// A user as GitHub describes one (`simple-user`), served from this host.
pub fn simple_user(port: u16, login: &str, id: u64) -> Value {
    let api = format!("http://127.0.0.1:{port}/users/{login}");
    json!({
        "login": login,
        "id": id,
        "node_id": format!("U_{id}"),
        "avatar_url": format!("http://127.0.0.1:{port}/avatars/{login}"),
        "gravatar_id": "",
        "url": api,
        "html_url": format!("http://127.0.0.1:{port}/{login}"),
        "followers_url": format!("{api}/followers"),
        "following_url": format!("{api}/following{{/other_user}}"),
        "gists_url": format!("{api}/gists{{/gist_id}}"),
        "starred_url": format!("{api}/starred{{/owner}}{{/repo}}"),
        "subscriptions_url": format!("{api}/subscriptions"),
        "organizations_url": format!("{api}/orgs"),
        "repos_url": format!("{api}/repos"),
        "events_url": format!("{api}/events{{/privacy}}"),
        "received_events_url": format!("{api}/received_events"),
        "type": "User",
        "site_admin": false,
    })
}

/// A repository as GitHub describes one (`repository`), served from this host.
pub fn repository_json(port: u16, repository: &str) -> Value {
    let (owner, name) = repository
        .split_once('/')
        .unwrap_or((repository, repository));
    let api = format!("http://127.0.0.1:{port}/repos/{repository}");
    let web = format!("http://127.0.0.1:{port}/{repository}");
    let mut fields = serde_json::Map::new();
    fields.insert(
        "archive_url".into(),
        json!(format!("{api}/{{archive_format}}{{/ref}}")),
    );
    fields.insert(
        "assignees_url".into(),
        json!(format!("{api}/assignees{{/user}}")),
    );
    fields.insert(
        "blobs_url".into(),
        json!(format!("{api}/git/blobs{{/sha}}")),
    );
    fields.insert(
        "branches_url".into(),
        json!(format!("{api}/branches{{/branch}}")),
    );
    fields.insert(
        "collaborators_url".into(),
        json!(format!("{api}/collaborators{{/collaborator}}")),
    );
    fields.insert(
        "comments_url".into(),
        json!(format!("{api}/comments{{/number}}")),
    );
    fields.insert(
        "commits_url".into(),
        json!(format!("{api}/commits{{/sha}}")),
    );
    fields.insert(
        "compare_url".into(),
        json!(format!("{api}/compare/{{base}}...{{head}}")),
    );
    fields.insert(
        "contents_url".into(),
        json!(format!("{api}/contents/{{+path}}")),
    );
    fields.insert(
        "contributors_url".into(),
        json!(format!("{api}/contributors")),
    );
    fields.insert(
        "deployments_url".into(),
        json!(format!("{api}/deployments")),
    );
    fields.insert("downloads_url".into(), json!(format!("{api}/downloads")));
    fields.insert("events_url".into(), json!(format!("{api}/events")));
    fields.insert("forks_url".into(), json!(format!("{api}/forks")));
    fields.insert(
        "git_commits_url".into(),
        json!(format!("{api}/git/commits{{/sha}}")),
    );
    fields.insert(
        "git_refs_url".into(),
        json!(format!("{api}/git/refs{{/sha}}")),
    );
    fields.insert(
        "git_tags_url".into(),
        json!(format!("{api}/git/tags{{/sha}}")),
    );
    fields.insert("hooks_url".into(), json!(format!("{api}/hooks")));
    fields.insert(
        "issue_comment_url".into(),
        json!(format!("{api}/issues/comments{{/number}}")),
    );
    fields.insert(
        "issue_events_url".into(),
        json!(format!("{api}/issues/events{{/number}}")),
    );
    fields.insert(
        "issues_url".into(),
        json!(format!("{api}/issues{{/number}}")),
    );
    fields.insert("keys_url".into(), json!(format!("{api}/keys{{/key_id}}")));
    fields.insert("labels_url".into(), json!(format!("{api}/labels{{/name}}")));
    fields.insert("languages_url".into(), json!(format!("{api}/languages")));
    fields.insert("merges_url".into(), json!(format!("{api}/merges")));
    fields.insert(
        "milestones_url".into(),
        json!(format!("{api}/milestones{{/number}}")),
    );
    fields.insert(
        "notifications_url".into(),
        json!(format!("{api}/notifications{{?since,all,participating}}")),
    );
    fields.insert("pulls_url".into(), json!(format!("{api}/pulls{{/number}}")));
    fields.insert(
        "releases_url".into(),
        json!(format!("{api}/releases{{/id}}")),
    );
    fields.insert("stargazers_url".into(), json!(format!("{api}/stargazers")));
    fields.insert(
        "statuses_url".into(),
        json!(format!("{api}/statuses/{{sha}}")),
    );
    fields.insert(
        "subscribers_url".into(),
        json!(format!("{api}/subscribers")),
    );
    fields.insert(
        "subscription_url".into(),
        json!(format!("{api}/subscription")),
    );
    fields.insert("tags_url".into(), json!(format!("{api}/tags")));
    fields.insert("teams_url".into(), json!(format!("{api}/teams")));
    fields.insert(
        "trees_url".into(),
        json!(format!("{api}/git/trees{{/sha}}")),
    );
    let mut repo = json!({
        "id": 1,
        "node_id": "R_1",
        "name": name,
        "full_name": repository,
        "owner": simple_user(port, owner, 2),
        "private": false,
        "html_url": web,
        "description": Value::Null,
        "fork": false,
        "url": api,
        "clone_url": format!("{web}.git"),
        "git_url": format!("git://127.0.0.1:{port}/{repository}.git"),
        "ssh_url": format!("git@127.0.0.1:{repository}.git"),
        "svn_url": web,
        "mirror_url": Value::Null,
        "homepage": Value::Null,
        "language": Value::Null,
        "default_branch": "main",
        "forks": 0,
        "forks_count": 0,
        "stargazers_count": 0,
        "watchers": 0,
        "watchers_count": 0,
        "size": 0,
        "open_issues": 0,
        "open_issues_count": 0,
        "has_downloads": true,
        "has_issues": true,
        "has_projects": true,
        "has_wiki": true,
        "has_pages": false,
        "archived": false,
        "disabled": false,
        "license": Value::Null,
        "pushed_at": MADE_AT,
        "created_at": MADE_AT,
        "updated_at": MADE_AT,
    });
    if let Some(repo) = repo.as_object_mut() {
        repo.extend(fields);
    }
    repo
}

/// A pull request as GitHub describes one (`pull-request`): what the
/// stand-in holds, and GitHub's other fields as a new pull request has them.
fn pull_json(pull: &Pull, port: u16, repository: &str) -> Value {
    let owner = repository.split('/').next().unwrap_or_default();
    let api = format!("http://127.0.0.1:{port}/repos/{repository}");
    let html = format!("http://127.0.0.1:{port}/{repository}/pull/{}", pull.number);
    let self_url = format!("{api}/pulls/{}", pull.number);
    let issue = format!("{api}/issues/{}", pull.number);
    let link = |href: &str| json!({"href": href});
    let branch = |name: &str| {
        json!({
            "label": format!("{owner}:{name}"),
            "ref": name,
            "repo": repository_json(port, repository),
            "sha": "0".repeat(40),
            "user": simple_user(port, owner, 2),
        })
    };
    let mut value = json!({
        "url": self_url,
        "id": pull.number,
        "node_id": format!("PR_node_{}", pull.number),
        "html_url": html,
        "diff_url": format!("{html}.diff"),
        "patch_url": format!("{html}.patch"),
        "issue_url": issue,
        "commits_url": format!("{self_url}/commits"),
        "review_comments_url": format!("{self_url}/comments"),
        "review_comment_url": format!("{api}/pulls/comments{{/number}}"),
        "comments_url": format!("{issue}/comments"),
        "statuses_url": format!("{api}/statuses/{}", "0".repeat(40)),
        "number": pull.number,
        "state": pull.state,
        "locked": false,
        "title": pull.title,
        "user": simple_user(port, "lockstep-bot", 1),
        "body": pull.body,
        "labels": [],
        "milestone": Value::Null,
        "created_at": MADE_AT,
        "updated_at": MADE_AT,
        "closed_at": Value::Null,
        "merged_at": Value::Null,
        "merge_commit_sha": Value::Null,
        "assignee": Value::Null,
    });
    let rest = json!({
        "head": branch(&pull.head),
        "base": branch(&pull.base),
        "_links": {
            "self": link(&self_url),
            "html": link(&html),
            "issue": link(&issue),
            "comments": link(&format!("{issue}/comments")),
            "review_comments": link(&format!("{self_url}/comments")),
            "review_comment": link(&format!("{api}/pulls/comments{{/number}}")),
            "commits": link(&format!("{self_url}/commits")),
            "statuses": link(&format!("{api}/statuses/{}", "0".repeat(40))),
        },
        "author_association": "CONTRIBUTOR",
        "auto_merge": Value::Null,
        "draft": pull.draft,
        "merged": false,
        "mergeable": Value::Null,
        "mergeable_state": "unknown",
        "merged_by": Value::Null,
        "comments": 0,
        "review_comments": 0,
        "maintainer_can_modify": false,
        "commits": 1,
        "additions": 0,
        "deletions": 0,
        "changed_files": 0,
    });
    if let (Some(value), Value::Object(rest)) = (value.as_object_mut(), rest) {
        value.extend(rest);
    }
    value
}

/// A pull request as GitHub lists one (`pull-request-simple`): without
/// the counts and merge state only a single pull request's answer has.
fn pull_listed_json(pull: &Pull, port: u16, repository: &str) -> Value {
    let mut value = pull_json(pull, port, repository);
    if let Some(fields) = value.as_object_mut() {
        for detail in [
            "merged",
            "mergeable",
            "mergeable_state",
            "merged_by",
            "comments",
            "review_comments",
            "maintainer_can_modify",
            "commits",
            "additions",
            "deletions",
            "changed_files",
        ] {
            fields.remove(detail);
        }
    }
    value
}

/// One HTTP/1.1 request as a loopback test server reads it.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: String,
    /// Path and query.
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Whether it carried `Authorization: Bearer TOKEN`.
    pub fn has_bearer(&self, token: &str) -> bool {
        self.header("authorization") == Some(format!("Bearer {token}").as_str())
    }
}

/// Reads one request from `stream` (a 10 s read timeout, bodies of at most
/// 256 MiB: a release asset may be a whole program): the one request reader of the tests' loopback servers.
pub fn read_request(stream: &TcpStream) -> std::io::Result<Request> {
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let mut parts = line.split_whitespace();
    let method = parts.next().unwrap_or_default().to_string();
    let target = parts.next().unwrap_or_default().to_string();
    let mut headers = Vec::new();
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header == "\r\n" {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
    }
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
        .min(256 << 20);
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    Ok(Request {
        method,
        target,
        headers,
        body,
    })
}

/// Writes a JSON answer (`Connection: close`) with `headers` besides.
pub fn write_response(
    stream: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
) -> std::io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}

/// Where an Enterprise Server serves its REST API, GraphQL and uploads.
const ENTERPRISE_API: &str = "/api/v3";
const ENTERPRISE_GRAPHQL: &str = "/api/graphql";
const ENTERPRISE_UPLOADS: &str = "/api/uploads/";

/// An Enterprise Server's request target as github.com's would be (the
/// path under `/api/v3`), or `None` for an API path without its prefix
/// (answered 404). Webhooks and downloads are on the web host, unprefixed.
fn enterprise_target(target: &str, repository: &str) -> Option<String> {
    if let Some(rest) = target
        .strip_prefix(ENTERPRISE_API)
        .filter(|r| r.starts_with('/'))
    {
        return Some(rest.to_string());
    }
    if let Some(rest) = target.strip_prefix(ENTERPRISE_GRAPHQL) {
        return Some(format!("/graphql{rest}"));
    }
    if let Some(rest) = target.strip_prefix(ENTERPRISE_UPLOADS) {
        return Some(format!("/uploads/{rest}"));
    }
    let web = target.starts_with("/hooks/")
        || target.starts_with(&format!("/{repository}/releases/download/"));
    web.then(|| target.to_string())
}

/// An answer's URLs as an Enterprise Server writes them: its API under
/// `/api/v3`, uploads under `/api/uploads`.
fn enterprise_urls(value: &mut Value, origin: &str) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(|v| enterprise_urls(v, origin)),
        Value::Object(map) => map.values_mut().for_each(|v| enterprise_urls(v, origin)),
        // A URL, not text that starts with one (a body, a message).
        Value::String(text) if !text.contains(char::is_whitespace) => {
            if let Some(path) = text.strip_prefix(origin) {
                let api = ["/repos/", "/users/", "/orgs/"]
                    .iter()
                    .any(|p| path.starts_with(p));
                if let Some(rest) = path.strip_prefix("/uploads/") {
                    *text = format!("{origin}{ENTERPRISE_UPLOADS}{rest}");
                } else if api {
                    *text = format!("{origin}{ENTERPRISE_API}{path}");
                }
            }
        }
        _ => {}
    }
}

fn serve_one(
    mut stream: TcpStream,
    port: u16,
    token: &str,
    repository: &str,
    enterprise: bool,
    state: &Arc<Mutex<State>>,
) -> std::io::Result<()> {
    let request = read_request(&stream)?;
    let authorised = request.has_bearer(token);
    let body = String::from_utf8_lossy(&request.body).into_owned();
    let bytes = request.body;
    let headers = request.headers;
    let method = request.method;
    let target = match enterprise {
        false => request.target,
        true => match enterprise_target(&request.target, repository) {
            Some(target) => target,
            None => {
                let answer = reply(404, json!({"message": "Not Found"}));
                return write_response(&mut stream, answer.status, &answer.headers, &answer.body);
            }
        },
    };
    let (scripted, routes) = {
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        s.seen.push(Seen {
            method: method.clone(),
            target: target.clone(),
            authorised,
            body: body.clone(),
        });
        (s.scripted.pop_front(), s.routes.clone())
    };
    let asked = Asked {
        method: &method,
        target: &target,
        body: &bytes,
        headers: &headers,
        authorised,
        port,
        repository,
        enterprise,
    };
    let was_scripted = scripted.is_some();
    let answer = match scripted {
        Some(scripted) => scripted,
        None => match routes.iter().find_map(|r| r.answer(&asked)) {
            Some(answer) => answer,
            None => {
                let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
                route(
                    &mut s, &method, &target, &body, authorised, port, repository,
                )
            }
        },
    };
    let (echo, observers) = {
        let s = state.lock().unwrap_or_else(|e| e.into_inner());
        (s.echo, s.observers.clone())
    };
    let body = match serde_json::from_slice::<Value>(&answer.body) {
        Ok(mut value) if echo || enterprise => {
            if enterprise {
                enterprise_urls(&mut value, &format!("http://127.0.0.1:{port}"));
            }
            if echo {
                echo_in(&mut value, token);
            }
            value.to_string().into_bytes()
        }
        _ => answer.body,
    };
    for observer in &observers {
        observer.exchange(&asked, answer.status, &body, was_scripted || echo);
    }
    write_response(&mut stream, answer.status, &answer.headers, &body)
}

/// Puts `token` into every object of `value` ([`FakeGithub::echo_token`]).
fn echo_in(value: &mut Value, token: &str) {
    match value {
        Value::Array(items) => items.iter_mut().for_each(|v| echo_in(v, token)),
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                match (key.as_str(), v) {
                    ("html_url", Value::String(url)) => url.push_str(&format!("?t={token}")),
                    ("message" | "name", Value::String(text)) => {
                        text.push_str(&format!(" (Bearer {token})"))
                    }
                    (_, v) => echo_in(v, token),
                }
            }
            map.insert("echo".into(), Value::String(token.to_string()));
        }
        _ => {}
    }
}

/// A JSON answer with `status`.
pub fn reply(status: u16, body: Value) -> Scripted {
    Scripted {
        status,
        headers: Vec::new(),
        body: body.to_string().into_bytes(),
    }
}

fn route(
    s: &mut State,
    method: &str,
    target: &str,
    body: &str,
    authorised: bool,
    port: u16,
    repository: &str,
) -> Scripted {
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if path == "/hooks/integrate" && method == "POST" {
        s.webhook_posts.push(body.to_string());
        return Scripted {
            status: 204,
            headers: Vec::new(),
            body: Vec::new(),
        };
    }
    if !authorised {
        return reply(401, json!({"message": "Bad credentials"}));
    }
    if path == "/graphql" && method == "POST" {
        if let Some(answer) = &s.graphql_answer {
            return reply(200, answer.clone());
        }
        return graphql(s, body);
    }
    let commits = format!("/repos/{repository}/commits/");
    if path.starts_with(&commits) && path.ends_with("/check-runs") {
        // No CI here (lockstep-testkit's routes run one): no check runs.
        return reply(200, json!({"total_count": 0, "check_runs": []}));
    }
    let prefix = format!("/repos/{repository}/pulls");
    let Some(rest) = path.strip_prefix(&prefix) else {
        return reply(404, json!({"message": "Not Found"}));
    };
    let owner = repository.split('/').next().unwrap_or_default();
    match (method, rest) {
        ("GET", "") => {
            let head = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("head="))
                .map(percent_decode);
            let state = query
                .split('&')
                .find_map(|kv| kv.strip_prefix("state="))
                .unwrap_or("open")
                .to_string();
            let found: Vec<Value> = s
                .pulls
                .iter()
                .rev()
                .filter(|p| match &head {
                    Some(head) => Some(p.head.as_str()) == head.strip_prefix(&format!("{owner}:")),
                    None => true,
                })
                .filter(|p| state == "all" || p.state == state)
                .map(|p| pull_listed_json(p, port, repository))
                .collect();
            paged(
                &found,
                query,
                &format!("http://127.0.0.1:{port}{path}"),
                true,
                |items, _| Value::Array(items),
            )
        }
        ("POST", "") => {
            let Ok(new) = serde_json::from_str::<Value>(body) else {
                return reply(400, json!({"message": "Problems parsing JSON"}));
            };
            let head = new["head"].as_str().unwrap_or_default().to_string();
            if s.pulls.iter().any(|p| p.head == head && p.state == "open") {
                return reply(
                    422,
                    json!({"message": "Validation Failed", "errors": [{"message": format!("A pull request already exists for {owner}:{head}.")}]}),
                );
            }
            let pull = Pull {
                number: s.pulls.len() as u64 + 1,
                head,
                base: new["base"].as_str().unwrap_or_default().to_string(),
                title: new["title"].as_str().unwrap_or_default().to_string(),
                body: new["body"].as_str().unwrap_or_default().to_string(),
                draft: new["draft"].as_bool().unwrap_or(false),
                state: "open".into(),
            };
            let answer = pull_json(&pull, port, repository);
            s.pulls.push(pull);
            reply(201, answer)
        }
        ("PATCH", number) => {
            let number: u64 = number.trim_start_matches('/').parse().unwrap_or(0);
            let Ok(edit) = serde_json::from_str::<Value>(body) else {
                return reply(400, json!({"message": "Problems parsing JSON"}));
            };
            let Some(pull) = s.pulls.iter_mut().find(|p| p.number == number) else {
                return reply(404, json!({"message": "Not Found"}));
            };
            if let Some(title) = edit["title"].as_str() {
                pull.title = title.to_string();
            }
            if let Some(body) = edit["body"].as_str() {
                pull.body = body.to_string();
            }
            let pull = pull.clone();
            reply(200, pull_json(&pull, port, repository))
        }
        _ => reply(404, json!({"message": "Not Found"})),
    }
}

/// The one GraphQL mutation lockstep sends: marking a draft ready.
fn graphql(s: &mut State, body: &str) -> Scripted {
    let Ok(asked) = serde_json::from_str::<Value>(body) else {
        return reply(400, json!({"message": "Problems parsing JSON"}));
    };
    let query = asked["query"].as_str().unwrap_or_default();
    if !query.contains("markPullRequestReadyForReview") {
        return reply(
            200,
            json!({"errors": [{"message": "not answered by the loopback GitHub"}]}),
        );
    }
    let id = asked["variables"]["id"].as_str().unwrap_or_default();
    let number: u64 = id
        .strip_prefix("PR_node_")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    match s.pulls.iter_mut().find(|p| p.number == number) {
        Some(pull) => {
            pull.draft = false;
            s.ready_marked.push(number);
            reply(
                200,
                json!({"data": {"markPullRequestReadyForReview": {"pullRequest": {"isDraft": false}}}}),
            )
        }
        None => reply(
            200,
            json!({"data": null, "errors": [{"type": "NOT_FOUND", "message": format!("Could not resolve to a node with the global id of '{id}'")}]}),
        ),
    }
}

/// One page of `items` as GitHub answers a list: `per_page` (default 30,
/// at most 100) and `page` from `query` (the other parameters kept in the
/// links), the body made by `body` from the page's items and the whole
/// list's length, and with `links` a `Link` header naming the next and
/// last pages when there are more.
pub fn paged(
    items: &[Value],
    query: &str,
    base: &str,
    links: bool,
    body: impl Fn(Vec<Value>, usize) -> Value,
) -> Scripted {
    let mut others = Vec::new();
    let (mut per_page, mut page) = (30usize, 1usize);
    for kv in query.split('&').filter(|kv| !kv.is_empty()) {
        match kv.split_once('=') {
            Some(("per_page", v)) => per_page = v.parse().unwrap_or(30),
            Some(("page", v)) => page = v.parse().unwrap_or(1),
            _ => others.push(kv),
        }
    }
    let (per_page, page) = (per_page.clamp(1, 100), page.max(1));
    let last = items.len().div_ceil(per_page).max(1);
    let shown: Vec<Value> = items
        .iter()
        .skip((page - 1).saturating_mul(per_page))
        .take(per_page)
        .cloned()
        .collect();
    let mut answer = reply(200, body(shown, items.len()));
    if links && page < last {
        let link = |n: usize| {
            let mut q = others.clone();
            let (pp, p) = (format!("per_page={per_page}"), format!("page={n}"));
            q.push(&pp);
            q.push(&p);
            format!("{base}?{}", q.join("&"))
        };
        answer.headers.push((
            "Link".into(),
            format!(
                "<{}>; rel=\"next\", <{}>; rel=\"last\"",
                link(page + 1),
                link(last)
            ),
        ));
    }
    answer
}

/// `%XX` escapes of a query value decoded (`+` is a space).
pub fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push((h * 16 + l) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_enterprise_server_serves_its_api_under_its_prefixes_alone() {
        let at = |t| enterprise_target(t, "o/r");
        assert_eq!(
            at("/api/v3/repos/o/r/pulls?state=open").as_deref(),
            Some("/repos/o/r/pulls?state=open")
        );
        assert_eq!(at("/api/graphql").as_deref(), Some("/graphql"));
        assert_eq!(
            at("/api/uploads/repos/o/r/releases/1/assets?name=a").as_deref(),
            Some("/uploads/repos/o/r/releases/1/assets?name=a")
        );
        assert_eq!(at("/hooks/integrate").as_deref(), Some("/hooks/integrate"));
        assert_eq!(
            at("/o/r/releases/download/v1/a.whl").as_deref(),
            Some("/o/r/releases/download/v1/a.whl")
        );
        for unprefixed in [
            "/repos/o/r/pulls",
            "/graphql",
            "/uploads/repos/o/r/releases/1/assets",
            "/api/v3",
            "/api/v3x/repos",
        ] {
            assert_eq!(at(unprefixed), None, "{unprefixed}");
        }
    }

    #[test]
    fn an_enterprise_answer_names_its_api_and_uploads() {
        let origin = "http://127.0.0.1:9";
        let mut answer = json!({
            "url": format!("{origin}/repos/o/r/releases/1"),
            "upload_url": format!("{origin}/uploads/repos/o/r/releases/1/assets{{?name,label}}"),
            "html_url": format!("{origin}/o/r/releases/tag/v1"),
            "user": {"url": format!("{origin}/users/octocat")},
            "body": "http://127.0.0.1:9/repos/ in text is text",
        });
        enterprise_urls(&mut answer, origin);
        assert_eq!(
            answer["url"],
            format!("{origin}/api/v3/repos/o/r/releases/1")
        );
        assert_eq!(
            answer["upload_url"],
            format!("{origin}/api/uploads/repos/o/r/releases/1/assets{{?name,label}}")
        );
        assert_eq!(answer["html_url"], format!("{origin}/o/r/releases/tag/v1"));
        assert_eq!(
            answer["user"]["url"],
            format!("{origin}/api/v3/users/octocat")
        );
        assert_eq!(answer["body"], "http://127.0.0.1:9/repos/ in text is text");
    }
}
