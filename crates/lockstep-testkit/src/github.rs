//! The loopback GitHub as the tests drive it: lockstep-sandbox's
//! [`lockstep_sandbox::github::FakeGithub`] (pull requests, GraphQL, the
//! webhook receiver, scripted answers; what the demo uses) plus what only
//! tests use, served through its [`Routes`]: GitHub Releases (by tag,
//! created, listed in pages, deleted, assets uploaded and downloaded,
//! a 422 `already_exists` for a second asset of a name) and a CI whose
//! check runs a commit answers (`in_progress` for a while, then an
//! oracle's conclusion, or a fixed paged list).
//!
//! [`FakeGithub`] dereferences to the sandbox's server, so a test calls
//! both kinds of method on one value.

use std::ops::Deref;
use std::sync::{Arc, Mutex, MutexGuard};

use lockstep_sandbox::github::{
    paged, percent_decode, reply, simple_user, Asked, Routes, Scripted, MADE_AT,
};
use serde_json::{json, Value};

/// A GitHub Release the server holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Release {
    pub id: u64,
    pub tag: String,
    pub prerelease: bool,
    /// Asset name -> bytes.
    pub assets: std::collections::BTreeMap<String, Vec<u8>>,
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
    releases: Vec<Release>,
    /// Release listings repeat each release (pages shifted by a release
    /// made between two of them).
    list_twice: bool,
    /// Assets are described without `digest` (as GitHub did before 2025).
    no_digests: bool,
    /// The CI: its oracle and how many polls of a commit answer
    /// `in_progress` first.
    ci: Option<(Oracle, usize)>,
    /// Polls of each commit's check runs, in order of first poll.
    polls: Vec<(String, usize)>,
    /// Check runs served instead of the CI's.
    check_runs: Option<CheckRuns>,
}

/// The releases and the CI, served in front of the sandbox server's answers.
#[derive(Default)]
struct Host {
    state: Mutex<State>,
}

impl Host {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Routes for Host {
    fn answer(&self, asked: &Asked<'_>) -> Option<Scripted> {
        let mut s = self.state();
        if asked.target.contains("/releases") {
            return Some(releases(&mut s, asked));
        }
        let (path, query) = asked.target.split_once('?').unwrap_or((asked.target, ""));
        let sha = path
            .strip_prefix(&format!("/repos/{}/commits/", asked.repository))
            .and_then(|r| r.strip_suffix("/check-runs"))?;
        if !asked.authorised {
            return None;
        }
        if let Some(listed) = &s.check_runs {
            let runs: Vec<Value> = listed
                .runs
                .iter()
                .map(|given| completed_check_run(given, asked.port, asked.repository, sha))
                .collect();
            return Some(paged(
                &runs,
                query,
                &format!("http://127.0.0.1:{}{path}", asked.port),
                !listed.no_links,
                |runs, total| json!({"total_count": listed.claimed_total.unwrap_or(total as u64), "check_runs": runs}),
            ));
        }
        check_runs(&mut s, sha, asked.port, asked.repository)
    }
}

/// The loopback GitHub with releases and a CI, every exchange held to
/// GitHub's description ([`crate::conformance`]); it stops with the
/// process. Dropped with departures found (and no panic under way), it
/// fails the test, naming each.
pub struct FakeGithub {
    server: lockstep_sandbox::github::FakeGithub,
    host: Arc<Host>,
    checks: Arc<Checks>,
}

/// The conformance layer's findings for one server.
struct Checks {
    host: Arc<Host>,
    /// Operation ids checked, in order (with repeats).
    operations: Mutex<Vec<String>>,
    departures: Mutex<Vec<String>>,
}

impl Checks {
    fn departures(&self) -> MutexGuard<'_, Vec<String>> {
        self.departures.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Checks {
    /// A GraphQL request against GitHub's schema.
    fn check_graphql(&self, body: &[u8]) {
        match crate::conformance::graphql() {
            Ok(schema) => match schema.check(body) {
                Ok(()) => {
                    log_operation("graphql");
                    self.operations
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push("graphql".into());
                }
                Err(problems) => self.departures().extend(problems),
            },
            Err(e) => self
                .departures()
                .push(format!("GitHub's GraphQL schema is not at hand: {e}")),
        }
    }
}

impl lockstep_sandbox::github::Observe for Checks {
    fn exchange(&self, asked: &Asked<'_>, status: u16, body: &[u8], played: bool) {
        // A failure a test plays on purpose is not the stand-in's answer.
        let played = played
            || (asked.target.contains("/check-runs")
                && self
                    .host
                    .state()
                    .check_runs
                    .as_ref()
                    .is_some_and(|c| departs_on_purpose(&c.runs)));
        if played {
            return;
        }
        if asked.method == "POST" && asked.target == "/graphql" {
            return self.check_graphql(asked.body);
        }
        let Some(target) = api_target(asked) else {
            return;
        };
        let accept = asked
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case("accept"))
            .map(|(_, v)| v.as_str());
        let exchange = crate::conformance::Exchange {
            method: asked.method,
            target,
            accept,
            request_body: asked.body,
            status,
            response_body: body,
        };
        // An Enterprise Server is held to its own description alone.
        if asked.enterprise {
            return self.check_enterprise(&exchange, true);
        }
        let described = match crate::conformance::github() {
            Ok(d) => d,
            Err(e) => {
                let mut found = self.departures();
                if found.is_empty() {
                    found.push(format!("GitHub's description is not at hand: {e}"));
                }
                return;
            }
        };
        match described.check(&exchange) {
            Ok(id) => {
                log_operation(&id);
                self.operations
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(id);
            }
            Err(problems) => self.departures().extend(problems),
        }
        // The same exchange as GitHub Enterprise Server describes it (under
        // /api/v3): what lockstep relies on must be there too.
        self.check_enterprise(&exchange, false);
    }
}

impl Checks {
    /// Checks `exchange` against GitHub Enterprise Server's description
    /// (`served`: the server is one, so the operation is counted here).
    fn check_enterprise(&self, exchange: &crate::conformance::Exchange<'_>, served: bool) {
        let server = crate::conformance::ENTERPRISE_VERSION;
        match crate::conformance::enterprise() {
            Ok(enterprise) => match enterprise.check(exchange) {
                Ok(id) if served => {
                    let id = format!("ghes:{id}");
                    log_operation(&id);
                    self.operations
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push(id);
                }
                Ok(_) => {}
                Err(problems) => self
                    .departures()
                    .extend(problems.into_iter().map(|p| format!("GHES {server}: {p}"))),
            },
            Err(e) => self
                .departures()
                .push(format!("GHES's description is not at hand: {e}")),
        }
    }
}

/// Holds the exchanges an [`lockstep_sandbox::github::ExchangeLog`] wrote
/// (the demo's own loopback GitHub) to GitHub's description, as a running
/// [`FakeGithub`] holds its own: the operations checked, in order, and the
/// departures (empty when every exchange conforms).
pub fn check_exchange_log(path: &std::path::Path) -> std::io::Result<(Vec<String>, Vec<String>)> {
    let checks = Checks {
        host: Arc::new(Host::default()),
        operations: Mutex::default(),
        departures: Mutex::default(),
    };
    for logged in lockstep_sandbox::github::ExchangeLog::read(path)? {
        let headers: Vec<(String, String)> = logged
            .accept
            .iter()
            .map(|v| ("Accept".to_string(), v.clone()))
            .collect();
        let asked = Asked {
            method: &logged.method,
            target: &logged.target,
            body: logged.request_body.as_bytes(),
            headers: &headers,
            authorised: true,
            port: 0,
            repository: &logged.repository,
            enterprise: logged.enterprise,
        };
        lockstep_sandbox::github::Observe::exchange(
            &checks,
            &asked,
            logged.status,
            logged.response_body.as_bytes(),
            logged.played,
        );
    }
    let operations = checks
        .operations
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let departures = checks.departures().clone();
    Ok((operations, departures))
}

/// The API path of an exchange, or `None` for what is not GitHub's REST
/// API: the webhook receiver, an asset's public download, GraphQL (checked
/// against its own schema, [`Checks::check_graphql`]). Uploads are served
/// under `/uploads` here, as GitHub serves them from their own host.
fn api_target<'a>(asked: &Asked<'a>) -> Option<&'a str> {
    let target = asked.target;
    if target.starts_with("/hooks/")
        || target.starts_with("/graphql")
        || target.starts_with(&format!("/{}/releases/download/", asked.repository))
    {
        return None;
    }
    Some(target.strip_prefix("/uploads").unwrap_or(target))
}

/// With `LOCKSTEP_GITHUB_CONFORMANCE_LOG=FILE`, each operation checked is
/// appended there (what the closing note counts).
fn log_operation(id: &str) {
    use std::io::Write as _;
    let Some(path) = std::env::var_os("LOCKSTEP_GITHUB_CONFORMANCE_LOG") else {
        return;
    };
    if let Ok(mut file) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        // One write per line: tests append side by side.
        let _ = file.write_all(format!("{id}\n").as_bytes());
    }
}

impl Drop for FakeGithub {
    fn drop(&mut self) {
        let found = self.checks.departures().clone();
        if !found.is_empty() && !std::thread::panicking() {
            panic!(
                "the loopback GitHub departed from GitHub's description ({}):\n{}",
                crate::conformance::OPENAPI_PACKAGE,
                found.join("\n")
            );
        }
    }
}

impl Deref for FakeGithub {
    type Target = lockstep_sandbox::github::FakeGithub;

    fn deref(&self) -> &Self::Target {
        &self.server
    }
}

impl FakeGithub {
    /// Serves `repository` (`OWNER/NAME`) to requests bearing `token`.
    pub fn start(repository: &str, token: &str) -> std::io::Result<FakeGithub> {
        Self::with(lockstep_sandbox::github::FakeGithub::start(
            repository, token,
        )?)
    }

    /// The same as a GitHub Enterprise Server: the API under `/api/v3`
    /// (its `url()`), GraphQL at `/api/graphql`, uploads at `/api/uploads`,
    /// every exchange held to Enterprise Server's description
    /// ([`crate::conformance::ENTERPRISE_VERSION`]); the operations checked
    /// are counted as `ghes:ID`.
    pub fn start_enterprise(repository: &str, token: &str) -> std::io::Result<FakeGithub> {
        Self::with(lockstep_sandbox::github::FakeGithub::start_enterprise(
            repository, token,
        )?)
    }

    fn with(server: lockstep_sandbox::github::FakeGithub) -> std::io::Result<FakeGithub> {
        let host = Arc::new(Host::default());
        server.add_routes(host.clone());
        let checks = Arc::new(Checks {
            host: host.clone(),
            operations: Mutex::default(),
            departures: Mutex::default(),
        });
        server.add_observer(checks.clone());
        Ok(FakeGithub {
            server,
            host,
            checks,
        })
    }

    /// The operations of GitHub's description this server's exchanges
    /// were, in order (with repeats).
    pub fn operations_checked(&self) -> Vec<String> {
        self.checks
            .operations
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// What keeps this server's checks from being an Enterprise Server's
    /// alone: each of `wanted` (`ghes:ID`, or `graphql`) it did not check,
    /// and each check that was neither Enterprise Server's nor GraphQL's.
    /// Empty for a test that did what it meant to on an Enterprise Server.
    pub fn enterprise_gaps(&self, wanted: &[&str]) -> Vec<String> {
        let checked = self.operations_checked();
        let missing = wanted
            .iter()
            .filter(|w| !checked.iter().any(|c| c == *w))
            .map(|w| format!("{w}: not checked"));
        let foreign = checked
            .iter()
            .filter(|c| !c.starts_with("ghes:") && *c != "graphql")
            .map(|c| format!("{c}: checked as api.github.com's"));
        missing.chain(foreign).collect()
    }

    /// Where its exchanges departed from GitHub's description (the test
    /// fails with them when the server is dropped).
    pub fn departures(&self) -> Vec<String> {
        self.checks.departures().clone()
    }

    /// The GitHub Releases created, in order.
    pub fn releases(&self) -> Vec<Release> {
        self.host.state().releases.clone()
    }

    /// Adds a release with these assets, as if made earlier (benchmarks,
    /// and stores rebuilt from Releases).
    pub fn add_release(&self, tag: &str, prerelease: bool, assets: Vec<(String, Vec<u8>)>) {
        let mut s = self.host.state();
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
        let mut s = self.host.state();
        s.releases
            .iter_mut()
            .find(|r| r.tag == tag)
            .map(|r| r.assets.insert(name.to_string(), bytes))
            .is_some()
    }

    /// From now on every release listing names each release twice.
    pub fn list_each_release_twice(&self) {
        self.host.state().list_twice = true;
    }

    /// From now on assets are described without their `digest`.
    pub fn without_digests(&self) {
        self.host.state().no_digests = true;
    }

    /// Deletes an asset as a person would in the web UI; whether it was there.
    pub fn delete_asset(&self, tag: &str, name: &str) -> bool {
        let mut s = self.host.state();
        s.releases
            .iter_mut()
            .find(|r| r.tag == tag)
            .is_some_and(|r| r.assets.remove(name).is_some())
    }

    /// Deletes every Release (a fresh repository's; fuzzing reuses one
    /// server for many inputs).
    pub fn reset_releases(&self) {
        self.host.state().releases.clear();
    }

    /// Runs a CI: the check runs of a commit answer `in_progress` for the
    /// first `delay` polls, then `completed` with `oracle(sha)`.
    pub fn set_ci(&self, oracle: Oracle, delay: usize) {
        self.host.state().ci = Some((oracle, delay));
    }

    /// Every commit's check runs are `runs` from now on, paged as GitHub
    /// pages them (`None`: the CI's, [`FakeGithub::set_ci`]).
    pub fn set_check_runs(&self, runs: Option<CheckRuns>) {
        self.host.state().check_runs = runs;
    }

    /// The commits whose check runs were polled (the CI rounds), in order.
    pub fn ci_commits(&self) -> Vec<String> {
        self.host
            .state()
            .polls
            .iter()
            .map(|(sha, _)| sha.clone())
            .collect()
    }
}

/// An asset's id: stable while the release's assets are not removed.
fn asset_id(release: &Release, position: usize) -> u64 {
    release.id * 1_000_000 + position as u64
}

/// An asset as GitHub describes one (`release-asset`); without `digests`
/// its `digest` is null, as GitHub answers for assets uploaded before it
/// kept them.
fn asset_json(
    release: &Release,
    position: usize,
    name: &str,
    bytes: &[u8],
    port: u16,
    repository: &str,
    digests: bool,
) -> Value {
    let id = asset_id(release, position);
    json!({
        "url": format!("http://127.0.0.1:{port}/repos/{repository}/releases/assets/{id}"),
        "browser_download_url": format!("http://127.0.0.1:{port}/{repository}/releases/download/{}/{name}", release.tag),
        "id": id,
        "node_id": format!("RA_{id}"),
        "name": name,
        "label": Value::Null,
        "state": "uploaded",
        "content_type": "application/octet-stream",
        "size": bytes.len(),
        "digest": match digests {
            true => json!(format!("sha256:{}", lockstep_core::hash::sha256_bytes(bytes))),
            false => Value::Null,
        },
        "download_count": 0,
        "created_at": MADE_AT,
        "updated_at": MADE_AT,
        "uploader": simple_user(port, "lockstep-bot", 1),
    })
}

/// A release as GitHub describes one (`release`).
fn release_json(release: &Release, port: u16, repository: &str, digests: bool) -> Value {
    let api = format!(
        "http://127.0.0.1:{port}/repos/{repository}/releases/{}",
        release.id
    );
    let assets: Vec<Value> = release
        .assets
        .iter()
        .enumerate()
        .map(|(i, (n, b))| asset_json(release, i, n, b, port, repository, digests))
        .collect();
    json!({
        "url": api,
        "html_url": format!("http://127.0.0.1:{port}/{repository}/releases/tag/{}", release.tag),
        "assets_url": format!("{api}/assets"),
        "upload_url": format!("http://127.0.0.1:{port}/uploads/repos/{repository}/releases/{}/assets{{?name,label}}", release.id),
        "tarball_url": format!("http://127.0.0.1:{port}/repos/{repository}/tarball/{}", release.tag),
        "zipball_url": format!("http://127.0.0.1:{port}/repos/{repository}/zipball/{}", release.tag),
        "id": release.id,
        "node_id": format!("RE_{}", release.id),
        "tag_name": release.tag,
        "target_commitish": "main",
        "name": release.tag,
        "body": "",
        "draft": false,
        "prerelease": release.prerelease,
        "created_at": MADE_AT,
        "published_at": MADE_AT,
        "author": simple_user(port, "lockstep-bot", 1),
        "assets": assets,
    })
}

/// Releases: by tag, created, and their assets uploaded (a second asset of
/// a name is GitHub's 422 `already_exists`).
fn releases(s: &mut State, asked: &Asked<'_>) -> Scripted {
    let (method, target, authorised, port, repository) = (
        asked.method,
        asked.target,
        asked.authorised,
        asked.port,
        asked.repository,
    );
    let body = asked.body.to_vec();
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
        let digests = !s.no_digests;
        // Its bytes when asked for them (`Accept: application/octet-stream`),
        // else its description: only the one answered is made.
        let raw = asked.headers.iter().any(|(n, v)| {
            n.eq_ignore_ascii_case("accept") && v.contains("application/octet-stream")
        });
        let found = s.releases.iter().find_map(|r| {
            r.assets
                .iter()
                .enumerate()
                .find(|(i, _)| asset_id(r, *i) == id)
                .map(|(i, (name, bytes))| match raw {
                    true => Scripted {
                        status: 200,
                        headers: vec![("Content-Type".into(), "application/octet-stream".into())],
                        body: bytes.clone(),
                    },
                    false => reply(
                        200,
                        asset_json(r, i, name, bytes, port, repository, digests),
                    ),
                })
        });
        return found.unwrap_or_else(not_found);
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
        let digests = !s.no_digests;
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
        let release = &*release;
        let position = release.assets.keys().position(|n| *n == name).unwrap_or(0);
        let bytes = release.assets.get(&name).map_or(&[][..], Vec::as_slice);
        return reply(
            201,
            asset_json(release, position, &name, bytes, port, repository, digests),
        );
    }
    not_found()
}

/// A check run as GitHub describes one (`check-run`): the fields a test or
/// the CI gave over GitHub's others as a run of `sha` has them. A test's
/// run without a name stays without one (a departure it plays on purpose,
/// [`departs_on_purpose`]).
fn completed_check_run(given: &Value, port: u16, repository: &str, sha: &str) -> Value {
    let id = given["id"].as_u64().unwrap_or(1);
    let api = format!("http://127.0.0.1:{port}/repos/{repository}/check-runs/{id}");
    let mut run = json!({
        "id": id,
        "node_id": format!("CR_{id}"),
        "head_sha": sha,
        "external_id": "",
        "url": api,
        "html_url": format!("http://127.0.0.1:{port}/{repository}/runs/{id}"),
        "details_url": Value::Null,
        "name": "ci",
        "status": "queued",
        "conclusion": Value::Null,
        "started_at": MADE_AT,
        "completed_at": Value::Null,
        "output": {"title": Value::Null, "summary": Value::Null, "text": Value::Null,
                   "annotations_count": 0, "annotations_url": format!("{api}/annotations")},
        "check_suite": {"id": 1},
        "app": Value::Null,
        "pull_requests": [],
    });
    if let (Some(run), Some(given)) = (run.as_object_mut(), given.as_object()) {
        if !given.contains_key("name") {
            run.remove("name");
        }
        run.extend(given.clone());
    }
    run
}

/// Whether a test's check runs depart from GitHub's description on
/// purpose (a run whose name is null or absent): such an answer is the
/// test's, not the stand-in's.
fn departs_on_purpose(runs: &[Value]) -> bool {
    runs.iter().any(|r| !r["name"].is_string())
}

/// The check runs of `sha` as the CI answers them now.
fn check_runs(s: &mut State, sha: &str, port: u16, repository: &str) -> Option<Scripted> {
    // No CI: the sandbox server answers (no check runs).
    let (oracle, delay) = s.ci.clone()?;
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
        json!({"id": 1, "name": "ci", "status": "in_progress", "conclusion": Value::Null})
    } else {
        json!({"id": 1, "name": "ci", "status": "completed", "conclusion": oracle(sha)})
    };
    let run = completed_check_run(&run, port, repository, sha);
    Some(reply(200, json!({"total_count": 1, "check_runs": [run]})))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read as _, Write as _};

    /// `GET target` with the token, as a client sends it; the status line.
    fn get(server: &FakeGithub, target: &str) -> String {
        let address = server
            .url()
            .trim_start_matches("http://")
            .trim_end_matches("/api/v3")
            .to_string();
        let mut stream = std::net::TcpStream::connect(address).unwrap();
        write!(
            stream,
            "GET {target} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\nContent-Length: 0\r\n\r\n"
        )
        .unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).unwrap();
        answer.lines().next().unwrap_or_default().to_string()
    }

    /// An Enterprise Server answers under `/api/v3` alone, counts its
    /// checks as `ghes:`, and `enterprise_gaps` names what is missing or
    /// was checked as api.github.com's.
    #[test]
    fn an_enterprise_server_counts_its_checks_and_names_the_gaps() {
        let ghes = FakeGithub::start_enterprise("o/r", "t").unwrap();
        assert!(get(&ghes, "/api/v3/repos/o/r/pulls?per_page=100").contains(" 200 "));
        assert!(get(&ghes, "/repos/o/r/pulls?per_page=100").contains(" 404 "));
        assert_eq!(ghes.operations_checked(), ["ghes:pulls/list"]);
        assert!(ghes.enterprise_gaps(&["ghes:pulls/list"]).is_empty());
        assert_eq!(
            ghes.enterprise_gaps(&["ghes:pulls/create"]),
            ["ghes:pulls/create: not checked"]
        );
        let plain = FakeGithub::start("o/r", "t").unwrap();
        get(&plain, "/repos/o/r/pulls?per_page=100");
        assert_eq!(
            plain.enterprise_gaps(&[]),
            ["pulls/list: checked as api.github.com's"]
        );
    }

    /// A logged server (the demo's) is held to the description as a running
    /// one: a few-field pull request is a departure naming the operation; a
    /// played answer is not the stand-in's.
    #[test]
    fn a_logged_exchange_is_checked_like_a_served_one() {
        use lockstep_sandbox::github::Logged;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("github.jsonl");
        let exchange = |played| Logged {
            method: "POST".into(),
            target: "/repos/o/r/pulls".into(),
            accept: None,
            request_body: r#"{"title":"t","head":"h","base":"main","body":"b","draft":true}"#
                .into(),
            status: 201,
            response_body: r#"{"number":1}"#.into(),
            played,
            repository: "o/r".into(),
            enterprise: false,
        };
        let lines: Vec<String> = [exchange(false), exchange(true)]
            .iter()
            .map(|e| serde_json::to_string(e).unwrap())
            .collect();
        std::fs::write(&log, lines.join("\n")).unwrap();
        let (_, departures) = check_exchange_log(&log).unwrap();
        assert!(!departures.is_empty());
        assert!(
            departures.iter().all(|d| d.contains("pulls/create")),
            "{departures:?}"
        );
        // The played one alone: nothing to hold; a line that does not read
        // is named.
        std::fs::write(&log, lines[1].clone()).unwrap();
        assert!(check_exchange_log(&log).unwrap().1.is_empty());
        std::fs::write(&log, "{not json").unwrap();
        let err = check_exchange_log(&log).unwrap_err();
        assert!(err.to_string().contains("line 1"), "{err}");
    }

    /// The layer is on in every server: a conforming exchange is counted,
    /// a departing one named, and the server fails its test when dropped.
    #[test]
    fn a_departure_is_named_and_fails_the_test_that_made_it() {
        let server = FakeGithub::start("o/r", "t").unwrap();
        assert!(get(&server, "/repos/o/r/pulls?per_page=100").contains(" 200 "));
        assert_eq!(server.operations_checked(), ["pulls/list"]);
        assert!(server.departures().is_empty(), "{:?}", server.departures());
        get(&server, "/repos/o/r/pulls?page_size=3");
        let found = server.departures().join("\n");
        assert!(
            found.contains("pulls/list") && found.contains("`page_size`"),
            "{found}"
        );
        assert!(
            found.contains("GHES 3.19"),
            "checked against Enterprise Server too: {found}"
        );
        let dropped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(server)));
        let said = dropped.expect_err("a departing server fails its test");
        let said = said.downcast_ref::<String>().cloned().unwrap_or_default();
        assert!(
            said.contains("departed from GitHub's description") && said.contains("page_size"),
            "{said}"
        );
    }
}
