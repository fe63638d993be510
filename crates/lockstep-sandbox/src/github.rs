//! A loopback stand-in for the parts of GitHub's REST API that lockstep
//! uses (`integrate publish`: pull requests listed by head branch, created,
//! updated, and check runs; `release publish --github-release`: releases by
//! tag, created, and asset uploads on a separate `upload_url`) plus a
//! webhook receiver, for the demo and the tests: real HTTP
//! on 127.0.0.1, answering like GitHub does (401 for a bad token, 404 for
//! an unknown repository, 422 for a second open pull request of a branch).
//! Tests script failures in front of the normal answers (a 429 with
//! `Retry-After`, a 500, garbage) and read back every request it saw.

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

/// A GitHub Release the server holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    pub id: u64,
    pub tag: String,
    pub prerelease: bool,
    /// Asset name -> bytes.
    pub assets: std::collections::BTreeMap<String, Vec<u8>>,
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

/// A canned answer served before the normal ones.
#[derive(Debug, Clone)]
pub struct Scripted {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// Decides a commit's CI conclusion (`success`, `failure` ...).
pub type Oracle = Arc<dyn Fn(&str) -> String + Send + Sync>;

/// Check runs every commit answers with instead of the CI's one run
/// ([`FakeGithub::set_check_runs`]): served in pages of `per_page` (the
/// request's, GitHub's default 30, at most 100) with `Link: <...>;
/// rel="next"` headers as GitHub does.
#[derive(Debug, Clone, Default)]
pub struct CheckRuns {
    /// The runs, as GitHub's JSON objects (a `name` may be null or absent).
    pub runs: Vec<Value>,
    /// `total_count` claimed instead of the number of runs.
    pub claimed_total: Option<u64>,
    /// No `Link` headers: a careless server that pages without saying so.
    pub no_links: bool,
}

#[derive(Default)]
struct State {
    pulls: Vec<Pull>,
    releases: Vec<Release>,
    seen: Vec<Seen>,
    scripted: VecDeque<Scripted>,
    webhook_posts: Vec<String>,
    /// The CI: its oracle and how many polls of a commit answer
    /// `in_progress` first.
    ci: Option<(Oracle, usize)>,
    /// Every answer repeats the token ([`FakeGithub::echo_token`]).
    echo: bool,
    /// Polls of each commit's check runs, in order of first poll.
    polls: Vec<(String, usize)>,
    /// Pull requests marked ready for review (GraphQL), in order.
    ready_marked: Vec<u64>,
    /// Release listings repeat each release (pages shifted by a release
    /// made between two of them).
    list_twice: bool,
    /// Assets are described without `digest` (as GitHub did before 2025).
    no_digests: bool,
    /// Check runs served instead of the CI's.
    check_runs: Option<CheckRuns>,
    /// The answer to every GraphQL request instead of doing it.
    graphql_answer: Option<Value>,
}

/// The server; it stops with the process (its thread only accepts).
pub struct FakeGithub {
    port: u16,
    token: String,
    repository: String,
    state: Arc<Mutex<State>>,
}

impl FakeGithub {
    /// Serves `repository` (`OWNER/NAME`) to requests bearing `token`.
    pub fn start(repository: &str, token: &str) -> std::io::Result<FakeGithub> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let server = FakeGithub {
            port,
            token: token.to_string(),
            repository: repository.to_string(),
            state: Arc::new(Mutex::new(State::default())),
        };
        let shared = server.state.clone();
        let (token, repository) = (server.token.clone(), server.repository.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let _ = serve_one(stream, port, &token, &repository, &shared);
            }
        });
        Ok(server)
    }

    /// The API base (`$GITHUB_API_URL`).
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A webhook URL on this server (posts are counted, answered 204).
    pub fn webhook_url(&self) -> String {
        format!("{}/hooks/integrate", self.url())
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn pulls(&self) -> Vec<Pull> {
        self.state().pulls.clone()
    }

    /// The GitHub Releases created, in order.
    pub fn releases(&self) -> Vec<Release> {
        self.state().releases.clone()
    }

    /// Adds a release with these assets, as if made earlier (benchmarks,
    /// and stores rebuilt from Releases).
    pub fn add_release(&self, tag: &str, prerelease: bool, assets: Vec<(String, Vec<u8>)>) {
        let mut s = self.state();
        let id = s.releases.iter().map(|r| r.id).max().unwrap_or(0) + 1;
        s.releases.push(Release {
            id,
            tag: tag.to_string(),
            prerelease,
            assets: assets.into_iter().collect(),
        });
    }

    /// Replaces an asset's bytes (or adds it) as a person with write access
    /// could: the same name, other content.
    pub fn set_asset(&self, tag: &str, name: &str, bytes: Vec<u8>) -> bool {
        let mut s = self.state();
        s.releases
            .iter_mut()
            .find(|r| r.tag == tag)
            .map(|r| r.assets.insert(name.to_string(), bytes))
            .is_some()
    }

    /// From now on every release listing names each release twice.
    pub fn list_each_release_twice(&self) {
        self.state().list_twice = true;
    }

    /// From now on assets are described without their `digest`.
    pub fn without_digests(&self) {
        self.state().no_digests = true;
    }

    /// Deletes an asset as a person would in the web UI; whether it was there.
    pub fn delete_asset(&self, tag: &str, name: &str) -> bool {
        let mut s = self.state();
        s.releases
            .iter_mut()
            .find(|r| r.tag == tag)
            .is_some_and(|r| r.assets.remove(name).is_some())
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

    /// Deletes every Release (a fresh repository's; fuzzing reuses one
    /// server for many inputs).
    pub fn reset_releases(&self) {
        self.state().releases.clear();
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

    /// Runs a CI: the check runs of a commit answer `in_progress` for the
    /// first `delay` polls, then `completed` with `oracle(sha)`.
    pub fn set_ci(&self, oracle: Oracle, delay: usize) {
        self.state().ci = Some((oracle, delay));
    }

    /// Every commit's check runs are `runs` from now on, paged as GitHub
    /// pages them (`None`: the CI's, [`FakeGithub::set_ci`]).
    pub fn set_check_runs(&self, runs: Option<CheckRuns>) {
        self.state().check_runs = runs;
    }

    /// Every GraphQL request is answered `answer` (HTTP 200) without doing
    /// anything (`{"data": null}`, errors ...); `None`: answered for real.
    pub fn set_graphql_answer(&self, answer: Option<Value>) {
        self.state().graphql_answer = answer;
    }

    /// The commits whose check runs were polled (the CI rounds), in order.
    pub fn ci_commits(&self) -> Vec<String> {
        self.state()
            .polls
            .iter()
            .map(|(sha, _)| sha.clone())
            .collect()
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

fn pull_json(pull: &Pull, port: u16, repository: &str) -> Value {
    json!({
        "number": pull.number,
        "state": pull.state,
        "draft": pull.draft,
        "title": pull.title,
        "html_url": format!("http://127.0.0.1:{port}/{repository}/pull/{}", pull.number),
        "node_id": format!("PR_node_{}", pull.number),
        "head": {"ref": pull.head, "repo": {"full_name": repository}},
        "base": {"ref": pull.base},
        "merged_at": Value::Null,
    })
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

fn serve_one(
    mut stream: TcpStream,
    port: u16,
    token: &str,
    repository: &str,
    state: &Arc<Mutex<State>>,
) -> std::io::Result<()> {
    let request = read_request(&stream)?;
    let authorised = request.has_bearer(token);
    let body = String::from_utf8_lossy(&request.body).into_owned();
    let bytes = request.body;
    let (method, target) = (request.method, request.target);
    let answer = {
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        s.seen.push(Seen {
            method: method.clone(),
            target: target.clone(),
            authorised,
            body: body.clone(),
        });
        match s.scripted.pop_front() {
            Some(scripted) => scripted,
            None if target.contains("/releases") => releases(
                &mut s, &method, &target, bytes, authorised, port, repository,
            ),
            None => route(
                &mut s, &method, &target, &body, authorised, port, repository,
            ),
        }
    };
    let echo = state.lock().map(|s| s.echo).unwrap_or(false);
    let body = match serde_json::from_slice::<Value>(&answer.body) {
        Ok(mut value) if echo => {
            echo_in(&mut value, token);
            value.to_string().into_bytes()
        }
        _ => answer.body,
    };
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

fn reply(status: u16, body: Value) -> Scripted {
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
    if let Some(sha) = path
        .strip_prefix(&commits)
        .and_then(|r| r.strip_suffix("/check-runs"))
    {
        if let Some(listed) = &s.check_runs {
            return paged(
                &listed.runs,
                query,
                &format!("http://127.0.0.1:{port}{path}"),
                !listed.no_links,
                |runs, total| json!({"total_count": listed.claimed_total.unwrap_or(total as u64), "check_runs": runs}),
            );
        }
        return check_runs(s, sha);
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
                .map(|p| pull_json(p, port, repository))
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

/// An asset's id: stable while the release's assets are not removed.
fn asset_id(release: &Release, position: usize) -> u64 {
    release.id * 1_000_000 + position as u64
}

fn release_json(release: &Release, port: u16, repository: &str, digests: bool) -> Value {
    let assets: Vec<Value> = release
        .assets
        .iter()
        .enumerate()
        .map(|(i, (n, b))| {
            let mut asset = json!({
                "id": asset_id(release, i),
                "name": n,
                "size": b.len(),
                "digest": format!("sha256:{}", lockstep_core::hash::sha256_bytes(b)),
                "browser_download_url": format!("http://127.0.0.1:{port}/{repository}/releases/download/{}/{n}", release.tag),
            });
            if !digests {
                if let Some(fields) = asset.as_object_mut() {
                    fields.remove("digest");
                }
            }
            asset
        })
        .collect();
    json!({
        "id": release.id,
        "tag_name": release.tag,
        "prerelease": release.prerelease,
        "draft": false,
        "html_url": format!("http://127.0.0.1:{port}/{repository}/releases/tag/{}", release.tag),
        "upload_url": format!("http://127.0.0.1:{port}/uploads/repos/{repository}/releases/{}/assets{{?name,label}}", release.id),
        "assets": assets,
    })
}

/// Releases: by tag, created, and their assets uploaded (a second asset of
/// a name is GitHub's 422 `already_exists`).
fn releases(
    s: &mut State,
    method: &str,
    target: &str,
    body: Vec<u8>,
    authorised: bool,
    port: u16,
    repository: &str,
) -> Scripted {
    let not_found = || reply(404, json!({"message": "Not Found"}));
    // The public download URLs of assets (what a links page points at).
    if let Some(rest) = target.strip_prefix(&format!("/{repository}/releases/download/")) {
        let (tag, name) = rest.split_once('/').unwrap_or_default();
        let (tag, name) = (percent_decode(tag), percent_decode(name));
        return match s
            .releases
            .iter()
            .find(|r| r.tag == tag)
            .and_then(|r| r.assets.get(&name))
        {
            Some(bytes) if method == "GET" || method == "HEAD" => Scripted {
                status: 200,
                headers: Vec::new(),
                body: bytes.clone(),
            },
            _ => not_found(),
        };
    }
    if !authorised {
        return reply(401, json!({"message": "Bad credentials"}));
    }
    let api = format!("/repos/{repository}/releases");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if method == "GET" && path == api {
        let number = |name: &str, default: usize| {
            query
                .split('&')
                .filter_map(|kv| kv.split_once('='))
                .find(|(k, _)| *k == name)
                .and_then(|(_, v)| v.parse::<usize>().ok())
                .unwrap_or(default)
        };
        let (per_page, page) = (
            number("per_page", 30).clamp(1, 100),
            number("page", 1).max(1),
        );
        let twice = if s.list_twice { 2 } else { 1 };
        let digests = !s.no_digests;
        let listed: Vec<Value> = s
            .releases
            .iter()
            .rev()
            .flat_map(|r| std::iter::repeat_n(r, twice))
            .skip((page - 1) * per_page)
            .take(per_page)
            .map(|r| release_json(r, port, repository, digests))
            .collect();
        return reply(200, Value::Array(listed));
    }
    if let Some(id) = path.strip_prefix(&format!("{api}/assets/")) {
        let id: u64 = id.parse().unwrap_or(0);
        let found = s.releases.iter().find_map(|r| {
            r.assets
                .values()
                .enumerate()
                .find(|(i, _)| asset_id(r, *i) == id)
                .map(|(_, bytes)| bytes.clone())
        });
        return match found {
            Some(bytes) => Scripted {
                status: 200,
                headers: vec![("Content-Type".into(), "application/octet-stream".into())],
                body: bytes,
            },
            None => not_found(),
        };
    }
    if method == "DELETE" {
        if let Some(id) = path.strip_prefix(&format!("{api}/")) {
            let id: u64 = id.parse().unwrap_or(0);
            let before = s.releases.len();
            s.releases.retain(|r| r.id != id);
            return match s.releases.len() < before {
                true => Scripted {
                    status: 204,
                    headers: Vec::new(),
                    body: Vec::new(),
                },
                false => not_found(),
            };
        }
    }
    if let Some(tag) = target.strip_prefix(&format!("{api}/tags/")) {
        return match s.releases.iter().find(|r| r.tag == tag) {
            Some(release) => reply(200, release_json(release, port, repository, !s.no_digests)),
            None => not_found(),
        };
    }
    if method == "POST" && target == api {
        let Ok(asked) = serde_json::from_slice::<Value>(&body) else {
            return reply(400, json!({"message": "Problems parsing JSON"}));
        };
        let tag = asked["tag_name"].as_str().unwrap_or_default().to_string();
        if tag.is_empty() || s.releases.iter().any(|r| r.tag == tag) {
            return reply(422, json!({"message": "Validation Failed"}));
        }
        let release = Release {
            id: s.releases.iter().map(|r| r.id).max().unwrap_or(0) + 1,
            tag,
            prerelease: asked["prerelease"].as_bool().unwrap_or(false),
            assets: Default::default(),
        };
        let answer = release_json(&release, port, repository, !s.no_digests);
        s.releases.push(release);
        return reply(201, answer);
    }
    let uploads = format!("/uploads/repos/{repository}/releases/");
    if let Some(rest) = target.strip_prefix(&uploads) {
        let (id, name) = rest.split_once("/assets?name=").unwrap_or_default();
        let id: u64 = id.parse().unwrap_or(0);
        let name = percent_decode(name);
        let Some(release) = s.releases.iter_mut().find(|r| r.id == id) else {
            return not_found();
        };
        if release.assets.contains_key(&name) {
            return reply(
                422,
                json!({"message": "Validation Failed", "errors": [{"resource": "ReleaseAsset", "code": "already_exists", "field": "name"}]}),
            );
        }
        release.assets.insert(name.clone(), body);
        return reply(201, json!({"name": name}));
    }
    not_found()
}

/// One page of `items` as GitHub answers a list: `per_page` (default 30,
/// at most 100) and `page` from `query` (the other parameters kept in the
/// links), the body made by `body` from the page's items and the whole
/// list's length, and with `links` a `Link` header naming the next and
/// last pages when there are more.
fn paged(
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

/// The check runs of `sha` as the CI answers them now.
fn check_runs(s: &mut State, sha: &str) -> Scripted {
    let Some((oracle, delay)) = s.ci.clone() else {
        return reply(200, json!({"total_count": 0, "check_runs": []}));
    };
    let polls = match s.polls.iter_mut().find(|(c, _)| c == sha) {
        Some((_, n)) => {
            *n += 1;
            *n
        }
        None => {
            s.polls.push((sha.to_string(), 1));
            1
        }
    };
    let run = if polls <= delay {
        json!({"name": "ci", "status": "in_progress", "conclusion": Value::Null})
    } else {
        json!({"name": "ci", "status": "completed", "conclusion": oracle(sha)})
    };
    reply(200, json!({"total_count": 1, "check_runs": [run]}))
}

/// `%XX` escapes of a query value decoded (`+` is a space).
fn percent_decode(text: &str) -> String {
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
