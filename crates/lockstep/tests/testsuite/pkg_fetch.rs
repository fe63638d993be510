//! `lockstep pkg fetch` against a loopback server standing in for the GitHub
//! REST API and its artifact storage (the download redirects there), with
//! real zip archives of a real wheelhouse; then `pkg venv` installs what was
//! fetched. The bad inputs of docs/pkg.md: unsafe entries, a tampered wheel,
//! expired artifacts, a bad token and rate limiting.

use std::collections::HashMap;
use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::common::*;

const TOKEN: &str = "ghp_test_token_never_printed";
const SIGNATURE: &str = "sig=storage-signature-never-printed";

/// One request the server saw.
#[derive(Debug, Clone)]
struct Seen {
    target: String,
    headers: HashMap<String, String>,
}

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

fn json(status: u16, value: serde_json::Value) -> Reply {
    Reply {
        status,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: value.to_string().into_bytes(),
    }
}

type Route = dyn Fn(&str, u16) -> Reply + Send + Sync;
type RouteSeen = dyn Fn(&Seen, u16) -> Reply + Send + Sync;

/// A reply header that the server does not send: it announces the whole
/// body's length, sends this many bytes of it and closes (a transfer that
/// breaks off).
const CUT_AFTER: &str = "x-test-cut-after";

/// An HTTP/1.1 server on 127.0.0.1 answering every request with `route(target, port)`.
struct Server {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    fn start(route: Box<Route>) -> Server {
        Server::start_seen(Box::new(move |seen: &Seen, port| route(&seen.target, port)))
    }

    /// Like [`Server::start`], the route seeing the request's headers too.
    fn start_seen(route: Box<RouteSeen>) -> Server {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(10)));
                let mut reader = std::io::BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                let target = request_line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or_default()
                    .to_string();
                let mut headers = HashMap::new();
                let mut line = String::new();
                while reader.read_line(&mut line).map(|n| n > 0).unwrap_or(false) {
                    if line == "\r\n" || line == "\n" {
                        break;
                    }
                    if let Some((k, v)) = line.split_once(':') {
                        headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_string());
                    }
                    line.clear();
                }
                let seen = Seen {
                    target: target.clone(),
                    headers,
                };
                log.lock().unwrap().push(seen.clone());
                let reply = route(&seen, port);
                let mut head = format!(
                    "HTTP/1.1 {} X\r\nContent-Length: {}\r\nConnection: close\r\n",
                    reply.status,
                    reply.body.len()
                );
                let mut cut = reply.body.len();
                for (k, v) in &reply.headers {
                    if k.eq_ignore_ascii_case(CUT_AFTER) {
                        cut = v.parse().unwrap();
                        continue;
                    }
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                let _ = stream.write_all(head.as_bytes());
                let _ = stream.write_all(&reply.body[..cut.min(reply.body.len())]);
                let _ = stream.flush();
            }
        });
        Server { port, seen }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

/// The fixture's release wheelhouse, built once per test binary: a real
/// pure-Python wheel and a real C extension wheel with their manifest.
fn wheelhouse() -> &'static Path {
    static HOUSE: OnceLock<(Project, PathBuf)> = OnceLock::new();
    &HOUSE
        .get_or_init(|| {
            let p = Project::new();
            lockstep_sandbox::packages::create(&p.path(), "3.1.0", "").expect("fixture");
            p.run(&["pkg", "build", "--variant", "release", "-j", "2"], 0);
            let house = p.path().join("wheelhouse");
            (p, house)
        })
        .1
}

/// A zip of `dir`'s files (relative names), plus `extra` entries as given.
fn zip_of(dir: &Path, extra: &[(&str, &[u8])], link: Option<(&str, &str)>) -> Vec<u8> {
    let mut buf = std::io::Cursor::new(Vec::new());
    {
        let mut w = zip::ZipWriter::new(&mut buf);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        for file in walk(dir) {
            let name = file
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if name.starts_with('.') {
                continue;
            }
            w.start_file(name, opts).unwrap();
            let mut bytes = Vec::new();
            std::fs::File::open(&file)
                .unwrap()
                .read_to_end(&mut bytes)
                .unwrap();
            w.write_all(&bytes).unwrap();
        }
        for (name, bytes) in extra {
            w.start_file(*name, opts).unwrap();
            w.write_all(bytes).unwrap();
        }
        if let Some((name, target)) = link {
            w.add_symlink(name, target, opts).unwrap();
        }
        w.finish().unwrap();
    }
    buf.into_inner()
}

fn artifacts_json(expired: bool) -> serde_json::Value {
    serde_json::json!({
        "total_count": 2,
        "artifacts": [
            {"id": 11, "name": "junit-cpu-1", "size_in_bytes": 10, "expired": false},
            {"id": 7, "name": "wheels-py3.11-release", "size_in_bytes": 1000, "expired": expired,
             "expires_at": "2026-12-01T00:00:00Z"}
        ]
    })
}

/// A GitHub standing in: run 42 has the wheelhouse artifact 7, whose zip
/// redirects to storage serving `zip`; run 43 (newer) failed; run 44 (newest,
/// green) is a fork's pull request whose branch is also called main.
fn github(zip: Vec<u8>) -> Server {
    Server::start(Box::new(move |target, port| {
        let path = target.split('?').next().unwrap_or_default();
        match path {
            "/repos/owner/proj/actions/runs/42/artifacts" => json(200, artifacts_json(false)),
            "/repos/owner/proj/actions/workflows/lockstep-pkgci.yml/runs" => json(
                200,
                serde_json::json!({"total_count": 3, "workflow_runs": [
                    {"id": 44, "head_branch": "main", "conclusion": "success", "status": "completed", "event": "pull_request",
                     "head_repository": {"full_name": "attacker/proj"},
                     "created_at": "2026-11-21T00:00:00Z", "html_url": "https://example/44", "head_sha": "f"},
                    {"id": 43, "head_branch": "main", "conclusion": "failure", "status": "completed", "event": "push",
                     "head_repository": {"full_name": "owner/proj"},
                     "created_at": "2026-11-20T00:00:00Z", "html_url": "https://example/43", "head_sha": "b"},
                    {"id": 42, "head_branch": "main", "conclusion": "success", "status": "completed", "event": "push",
                     "head_repository": {"full_name": "owner/proj"},
                     "created_at": "2026-11-19T00:00:00Z", "html_url": "https://example/42", "head_sha": "a"},
                    {"id": 41, "head_branch": "main", "conclusion": "success", "status": "completed", "event": "push",
                     "head_repository": {"full_name": "owner/proj"},
                     "created_at": "2026-11-18T00:00:00Z", "html_url": "https://example/41", "head_sha": "c"}
                ]}),
            ),
            // A renamed repository: GitHub answers 301 to the new URL.
            "/repos/old/proj/actions/runs/42/artifacts" => Reply {
                status: 301,
                headers: vec![(
                    "Location".into(),
                    format!("http://127.0.0.1:{port}/repos/owner/proj/actions/runs/42/artifacts?per_page=100&page=1"),
                )],
                body: Vec::new(),
            },
            "/repos/owner/proj/actions/artifacts/7/zip" | "/repos/old/proj/actions/artifacts/7/zip" => Reply {
                status: 302,
                headers: vec![(
                    "Location".into(),
                    format!("http://127.0.0.1:{port}/storage/blob.zip?{SIGNATURE}"),
                )],
                body: Vec::new(),
            },
            "/storage/blob.zip" => Reply {
                status: 200,
                headers: vec![("Content-Type".into(), "application/zip".into())],
                body: zip.clone(),
            },
            _ => json(404, serde_json::json!({"message": "Not Found"})),
        }
    }))
}

fn fetch_cmd(p: &Project, server: &Server, args: &[&str]) -> std::process::Command {
    let mut all = vec!["pkg", "fetch", "--repo", "owner/proj"];
    all.extend_from_slice(args);
    let mut cmd = p.cmd(&all);
    cmd.env("GITHUB_API_URL", server.url())
        .env("GITHUB_TOKEN", TOKEN);
    cmd
}

fn assert_no_secrets(out: &std::process::Output) {
    for text in [stdout(out), stderr(out)] {
        assert!(!text.contains(TOKEN), "the token was printed:\n{text}");
        assert!(
            !text.contains(SIGNATURE),
            "the signed URL was printed:\n{text}"
        );
    }
}

#[test]
fn fetch_downloads_extracts_checks_and_the_venv_installs_it() {
    let server = github(zip_of(wheelhouse(), &[], None));
    let p = Project::new();
    let out = expect(
        &mut fetch_cmd(&p, &server, &["--run", "42", "--out", "got"]),
        0,
    );
    assert_no_secrets(&out);
    assert!(stdout(&out).contains("pylock.toml"), "{}", stdout(&out));
    assert!(p.path().join("got/pylock.toml").is_file());
    // Nothing beside it: the zip went to a temporary file that is gone.
    let names: Vec<String> = std::fs::read_dir(p.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!names.iter().any(|n| n.contains(".zip")), "{names:?}");

    // The token went to the API host only, never to storage.
    let seen = server.seen();
    let storage: Vec<&Seen> = seen
        .iter()
        .filter(|s| s.target.starts_with("/storage/"))
        .collect();
    assert_eq!(storage.len(), 1, "{seen:?}");
    assert!(
        !storage[0].headers.contains_key("authorization"),
        "{seen:?}"
    );
    for api in seen.iter().filter(|s| s.target.starts_with("/repos/")) {
        assert_eq!(
            api.headers.get("authorization").map(String::as_str),
            Some(format!("Bearer {TOKEN}").as_str())
        );
    }

    // What was fetched installs exactly, offline.
    p.run(&["pkg", "venv", "venv", "--manifest", "got/pylock.toml"], 0);
    let py = p.path().join("venv/bin/python");
    let check = output(std::process::Command::new(&py).args([
        "-c",
        "import demo_pure, demo_cext; from importlib.metadata import version; print(version('demo-pure'), demo_cext.asserts())",
    ]));
    assert_eq!(stdout(&check).trim(), "3.1.0 False", "{}", stderr(&check));
}

#[test]
fn a_renamed_repository_is_followed_on_the_api_host() {
    let server = github(zip_of(wheelhouse(), &[], None));
    let p = Project::new();
    let mut cmd = p.cmd(&[
        "pkg", "fetch", "--repo", "old/proj", "--run", "42", "--out", "got",
    ]);
    cmd.env("GITHUB_API_URL", server.url())
        .env("GITHUB_TOKEN", TOKEN);
    let out = expect(&mut cmd, 0);
    assert_no_secrets(&out);
    let followed = server
        .seen()
        .into_iter()
        .find(|s| s.target.starts_with("/repos/owner/proj/actions/runs/42"))
        .expect("followed");
    assert_eq!(
        followed.headers.get("authorization").map(String::as_str),
        Some(format!("Bearer {TOKEN}").as_str())
    );
}

#[test]
fn latest_green_takes_the_newest_successful_run() {
    let server = github(zip_of(wheelhouse(), &[], None));
    let p = Project::new();
    let out = expect(
        &mut fetch_cmd(&p, &server, &["--latest-green", "main", "--json"]),
        0,
    );
    let doc: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("json");
    assert_eq!(doc["run_id"], 42, "{doc}");
    assert_eq!(doc["artifact"], "wheels-py3.11-release");
    assert!(doc["wheels"].as_u64().unwrap() >= 2, "{doc}");
    // The default wheelhouse ([pkg] out) is where it went.
    assert!(p.path().join("wheelhouse/pylock.toml").is_file());
    let asked = server
        .seen()
        .iter()
        .find(|s| s.target.contains("/workflows/"))
        .map(|s| s.target.clone())
        .unwrap();
    assert!(
        asked.contains("branch=main") && asked.contains("status=success"),
        "{asked}"
    );
}

#[test]
fn unsafe_or_tampered_artifacts_are_refused_and_leave_nothing() {
    let p = Project::new();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            zip_of(wheelhouse(), &[("../escaped.txt", b"x")], None),
            "`../escaped.txt` climbs out",
        ),
        (
            zip_of(wheelhouse(), &[], Some(("evil", "/etc/passwd"))),
            "`evil` is a symlink",
        ),
        (zip_of(&tamper(), &[], None), "does not match its manifest"),
        (b"not a zip at all".to_vec(), "is not a zip archive"),
    ];
    for (zip, expected) in cases {
        let server = github(zip);
        let out = expect(
            &mut fetch_cmd(&p, &server, &["--run", "42", "--out", "got"]),
            1,
        );
        assert_no_secrets(&out);
        assert!(
            stderr(&out).contains(expected),
            "{expected}:\n{}",
            stderr(&out)
        );
        let left: Vec<String> = std::fs::read_dir(p.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, vec!["lockstep.toml".to_string()], "{expected}");
        assert!(!p.root().join("escaped.txt").exists());
    }
}

/// A copy of the wheelhouse with one wheel's bytes changed.
fn tamper() -> PathBuf {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    let dir = DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        for file in walk(wheelhouse()) {
            let rel = file.strip_prefix(wheelhouse()).unwrap();
            let to = dir.path().join(rel);
            std::fs::create_dir_all(to.parent().unwrap()).unwrap();
            std::fs::copy(&file, &to).unwrap();
            if to.extension().is_some_and(|e| e == "whl") && to.to_string_lossy().contains("pure") {
                let mut f = std::fs::OpenOptions::new().append(true).open(&to).unwrap();
                f.write_all(b"tampered").unwrap();
            }
        }
        dir
    });
    dir.path().to_path_buf()
}

/// A server answering every API request with `reply`.
fn failing(reply: fn() -> Reply) -> Server {
    Server::start(Box::new(move |_, _| reply()))
}

#[test]
fn http_failures_are_named_in_the_users_terms() {
    let p = Project::new();
    let run = |server: &Server, code: i32| {
        let out = expect(
            &mut fetch_cmd(&p, server, &["--run", "42", "--out", "got"]),
            code,
        );
        assert_no_secrets(&out);
        assert!(!p.path().join("got").exists());
        stderr(&out)
    };

    let err = run(
        &failing(|| json(401, serde_json::json!({"message": "Bad credentials"}))),
        1,
    );
    assert!(
        err.contains("refused the token from $GITHUB_TOKEN"),
        "{err}"
    );
    assert!(err.contains("Bad credentials"), "{err}");

    let err = run(
        &failing(|| Reply {
            headers: vec![
                ("x-ratelimit-remaining".into(), "0".into()),
                ("x-ratelimit-reset".into(), "1900000000".into()),
            ],
            ..json(
                403,
                serde_json::json!({"message": "API rate limit exceeded"}),
            )
        }),
        1,
    );
    assert!(err.contains("rate limit is exhausted"), "{err}");
    assert!(err.contains("resets at 2030-03-17T17:46:40Z"), "{err}");

    let err = run(
        &failing(|| json(404, serde_json::json!({"message": "Not Found"}))),
        1,
    );
    assert!(
        err.contains("not found (HTTP 404): the artifacts of run 42 in owner/proj"),
        "{err}"
    );

    // Listed as expired: no download is attempted.
    let expired = Server::start(Box::new(|_, _| json(200, artifacts_json(true))));
    let err = run(&expired, 1);
    assert!(err.contains("expired on 2026-12-01"), "{err}");
    assert!(expired.seen().iter().all(|s| !s.target.contains("/zip")));

    // Listed as live, but storage says 410 Gone.
    let gone = Server::start(Box::new(|target, _| {
        if target.contains("/artifacts/7/zip") {
            json(410, serde_json::json!({"message": "Artifact has expired"}))
        } else {
            json(200, artifacts_json(false))
        }
    }));
    let err = run(&gone, 1);
    assert!(err.contains("expired (HTTP 410)"), "{err}");
}

#[test]
fn bad_fetch_usage_changes_nothing() {
    let server = github(zip_of(wheelhouse(), &[], None));
    let p = Project::new();
    p.write("got/mine.txt", "keep");
    let err = stderr(&expect(
        &mut fetch_cmd(&p, &server, &["--run", "42", "--out", "got"]),
        2,
    ));
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(p.read("got/mine.txt"), "keep");

    let err = stderr(&expect(
        &mut fetch_cmd(
            &p,
            &server,
            &["--run", "42", "--name", "nope", "--out", "x"],
        ),
        2,
    ));
    assert!(err.contains("no artifact named nope"), "{err}");
    assert!(err.contains("wheels-py3.11-release"), "{err}");

    let mut cmd = p.cmd(&["pkg", "fetch", "--run", "42", "--repo", "not a repo"]);
    cmd.env("GITHUB_API_URL", server.url());
    let err = stderr(&expect(&mut cmd, 2));
    assert!(err.contains("is not a GitHub repository"), "{err}");

    // No --repo, no $GITHUB_REPOSITORY, not a GitHub clone.
    let mut cmd = p.cmd(&["pkg", "fetch", "--run", "42"]);
    cmd.env("GITHUB_API_URL", server.url());
    let err = stderr(&expect(&mut cmd, 2));
    assert!(err.contains("pass --repo OWNER/NAME"), "{err}");
}

#[test]
fn userinfo_in_the_api_url_is_refused_and_nothing_is_sent() {
    let server = github(zip_of(wheelhouse(), &[], None));
    let p = Project::new();
    // The old prefix check took this for loopback; the request went to the
    // host after `@` with the token in clear.
    let mut cmd = p.cmd(&[
        "pkg",
        "fetch",
        "--repo",
        "owner/proj",
        "--run",
        "42",
        "--out",
        "got",
    ]);
    cmd.env(
        "GITHUB_API_URL",
        format!("http://127.0.0.1:1@localhost:{}/", server.port),
    )
    .env("GITHUB_TOKEN", TOKEN);
    let out = expect(&mut cmd, 2);
    assert_no_secrets(&out);
    let err = stderr(&out);
    assert!(err.contains("GitHub API URL"), "{err}");
    assert!(err.contains("user name or password"), "{err}");
    assert!(server.seen().is_empty(), "{:?}", server.seen());
    assert!(!p.path().join("got").exists());
}

#[test]
fn a_token_echoed_by_the_server_is_not_printed() {
    let p = Project::new();
    for code in [401, 404, 500] {
        let server = Server::start_seen(Box::new(move |seen: &Seen, _| {
            let auth = seen
                .headers
                .get("authorization")
                .cloned()
                .unwrap_or_default();
            json(
                code,
                serde_json::json!({"message": format!("Bad credentials: {auth} (token {TOKEN})")}),
            )
        }));
        let out = expect(
            &mut fetch_cmd(&p, &server, &["--run", "42", "--out", "got"]),
            1,
        );
        assert_no_secrets(&out);
        let err = stderr(&out);
        assert!(err.contains("Bad credentials"), "{err}");
        assert!(err.contains("<token>"), "{err}");
    }
}

#[test]
fn a_token_echoed_in_every_field_of_an_answer_is_not_relayed() {
    // Every string GitHub sends holds the token: the artifact names (the
    // one asked for among them), run URLs, expiry dates.
    let server = Server::start(Box::new(move |target, _| {
        let path = target.split('?').next().unwrap_or_default();
        match path {
            "/repos/owner/proj/actions/runs/42/artifacts" => json(
                200,
                serde_json::json!({"total_count": 2, "artifacts": [
                    {"id": 7, "name": format!("wheels-py3.11 Bearer {TOKEN}"), "size_in_bytes": 1,
                     "expired": true, "expires_at": format!("2026-12-01 {TOKEN}"),
                     "archive_download_url": format!("https://example/zip?t={TOKEN}")},
                    {"id": 8, "name": format!("logs-{TOKEN}"), "size_in_bytes": 1, "expired": false}
                ]}),
            ),
            _ => json(
                404,
                serde_json::json!({"message": format!("Not Found {TOKEN}")}),
            ),
        }
    }));
    let p = Project::new();
    for args in [
        &["--run", "42", "--out", "got"][..],
        &["--run", "42", "--name", "nope", "--out", "got"][..],
        &["--run", "43", "--out", "got"][..],
    ] {
        let out = fetch_cmd(&p, &server, args).output().unwrap();
        assert_ne!(out.status.code(), Some(0));
        assert_no_secrets(&out);
        let err = stderr(&out);
        assert!(err.contains("<token>"), "{err}");
    }
}

#[test]
fn artifact_names_with_newlines_are_printed_escaped() {
    let forged = "wheels-x\nerror: forged line\u{1b}[2J";
    let server = Server::start(Box::new(move |_, _| {
        json(
            200,
            serde_json::json!({"total_count": 2, "artifacts": [
                {"id": 7, "name": forged, "size_in_bytes": 1, "expired": true,
                 "expires_at": "2026-12-01T00:00:00Z"},
                {"id": 8, "name": "other\nname", "size_in_bytes": 1, "expired": false}
            ]}),
        )
    }));
    let p = Project::new();
    let out = expect(
        &mut fetch_cmd(&p, &server, &["--run", "42", "--out", "got"]),
        1,
    );
    let err = stderr(&out);
    assert!(
        err.contains("wheels-x\\nerror: forged line\\u{1b}[2J"),
        "{err}"
    );
    assert!(!err.contains("\nerror: forged"), "{err}");
    assert!(!err.contains('\u{1b}'), "{err}");

    let out = expect(
        &mut fetch_cmd(
            &p,
            &server,
            &["--run", "42", "--name", "nope", "--out", "got"],
        ),
        2,
    );
    let err = stderr(&out);
    assert!(err.contains("other\\nname"), "{err}");
    assert!(!err.lines().any(|l| l.starts_with("name")), "{err}");
}

/// GitHub whose storage breaks the zip's transfer off halfway the first
/// `breaks` times, then answers a `Range` request with 206 (or the whole body
/// when `honour_range` is false).
fn flaky_storage(zip: Vec<u8>, breaks: usize) -> Server {
    let count = Arc::new(Mutex::new(0usize));
    Server::start_seen(Box::new(move |seen: &Seen, port| {
        let path = seen.target.split('?').next().unwrap_or_default();
        match path {
            "/repos/owner/proj/actions/runs/42/artifacts" => json(200, artifacts_json(false)),
            "/repos/owner/proj/actions/artifacts/7/zip" => Reply {
                status: 302,
                headers: vec![(
                    "Location".into(),
                    format!("http://127.0.0.1:{port}/storage/blob.zip?{SIGNATURE}"),
                )],
                body: Vec::new(),
            },
            "/storage/blob.zip" => {
                let mut n = count.lock().unwrap();
                *n += 1;
                let etag = ("ETag".to_string(), "\"blob-1\"".to_string());
                let (status, body, mut headers) = match seen.headers.get("range") {
                    Some(range) => {
                        let start: usize = range
                            .trim_start_matches("bytes=")
                            .trim_end_matches('-')
                            .parse()
                            .unwrap();
                        let range = format!("bytes {start}-{}/{}", zip.len() - 1, zip.len());
                        (
                            206,
                            zip[start..].to_vec(),
                            vec![etag, ("Content-Range".into(), range)],
                        )
                    }
                    None => (200, zip.clone(), vec![etag]),
                };
                if *n <= breaks {
                    headers.push((CUT_AFTER.into(), (body.len() / 2).to_string()));
                }
                Reply {
                    status,
                    headers,
                    body,
                }
            }
            _ => json(404, serde_json::json!({"message": "Not Found"})),
        }
    }))
}

#[test]
fn an_interrupted_artifact_download_is_resumed() {
    let server = flaky_storage(zip_of(wheelhouse(), &[], None), 1);
    let p = Project::new();
    let out = expect(
        &mut fetch_cmd(&p, &server, &["--run", "42", "--out", "got"]),
        0,
    );
    assert_no_secrets(&out);
    assert!(p.path().join("got/pylock.toml").is_file());
    let storage: Vec<Seen> = server
        .seen()
        .into_iter()
        .filter(|s| s.target.starts_with("/storage/"))
        .collect();
    assert_eq!(storage.len(), 2, "{storage:?}");
    assert!(!storage[0].headers.contains_key("range"));
    assert!(
        storage[1]
            .headers
            .get("range")
            .is_some_and(|r| r.starts_with("bytes=")),
        "{storage:?}"
    );
    assert_eq!(
        storage[1].headers.get("if-range").map(String::as_str),
        Some("\"blob-1\"")
    );
    assert!(storage
        .iter()
        .all(|s| !s.headers.contains_key("authorization")));
}

#[test]
fn a_download_that_keeps_breaking_off_leaves_no_partial_file() {
    let server = flaky_storage(zip_of(wheelhouse(), &[], None), usize::MAX);
    let p = Project::new();
    let out = expect(
        &mut fetch_cmd(&p, &server, &["--run", "42", "--out", "got"]),
        1,
    );
    assert_no_secrets(&out);
    let err = stderr(&out);
    assert!(err.contains("broke off"), "{err}");
    let left: Vec<String> = std::fs::read_dir(p.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec!["lockstep.toml".to_string()]);
}
