//! `lockstep release publish --github-release` against a loopback server
//! that answers like GitHub's REST API (release by tag, create release,
//! asset uploads on a separate `upload_url`, 422 `already_exists`).

mod common;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use common::*;

const TOKEN: &str = "ghp_release_token_never_printed";

/// Assets by name.
type Assets = BTreeMap<String, Vec<u8>>;

/// What the fake GitHub holds.
#[derive(Default)]
struct State {
    /// tag -> (id, prerelease, assets)
    releases: BTreeMap<String, (u64, bool, Assets)>,
    /// (method, target, had the token)
    requests: Vec<(String, String, bool)>,
}

struct Github {
    port: u16,
    state: Arc<Mutex<State>>,
}

impl Github {
    fn start() -> Github {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let state = Arc::new(Mutex::new(State::default()));
        let shared = state.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let _ = serve_one(stream, port, &shared);
            }
        });
        Github { port, state }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

fn serve_one(
    mut stream: std::net::TcpStream,
    port: u16,
    state: &Arc<Mutex<State>>,
) -> std::io::Result<()> {
    let request = lockstep_sandbox::github::read_request(&stream)?;
    let authorised = request.has_bearer(TOKEN);
    let (status, reply) = {
        let mut s = state.lock().expect("state");
        s.requests
            .push((request.method.clone(), request.target.clone(), authorised));
        route(&mut s, port, &request.method, &request.target, request.body)
    };
    lockstep_sandbox::github::write_response(&mut stream, status, &[], reply.to_string().as_bytes())
}

fn release_json(
    port: u16,
    tag: &str,
    id: u64,
    assets: &BTreeMap<String, Vec<u8>>,
) -> serde_json::Value {
    serde_json::json!({
        "id": id,
        "tag_name": tag,
        "html_url": format!("https://github.example/o/r/releases/tag/{tag}"),
        "upload_url": format!("http://127.0.0.1:{port}/uploads/repos/o/r/releases/{id}/assets{{?name,label}}"),
        "assets": assets.iter().map(|(n, b)| serde_json::json!({"name": n, "size": b.len()})).collect::<Vec<_>>(),
    })
}

fn route(
    s: &mut State,
    port: u16,
    method: &str,
    target: &str,
    body: Vec<u8>,
) -> (u16, serde_json::Value) {
    let not_found = (404, serde_json::json!({"message": "Not Found"}));
    if let Some(tag) = target.strip_prefix("/repos/o/r/releases/tags/") {
        return match s.releases.get(tag) {
            Some((id, _, assets)) => (200, release_json(port, tag, *id, assets)),
            None => not_found,
        };
    }
    if method == "POST" && target == "/repos/o/r/releases" {
        let asked: serde_json::Value = serde_json::from_slice(&body).expect("JSON body");
        let tag = asked["tag_name"].as_str().expect("tag_name").to_string();
        let id = s.releases.len() as u64 + 1;
        let prerelease = asked["prerelease"].as_bool().unwrap_or(false);
        s.releases
            .insert(tag.clone(), (id, prerelease, BTreeMap::new()));
        return (201, release_json(port, &tag, id, &BTreeMap::new()));
    }
    if let Some(rest) = target.strip_prefix("/uploads/repos/o/r/releases/") {
        let (id, query) = rest.split_once("/assets?name=").unwrap_or_default();
        let id: u64 = id.parse().unwrap_or(0);
        let Some((_, (_, _, assets))) = s.releases.iter_mut().find(|(_, r)| r.0 == id) else {
            return not_found;
        };
        if assets.contains_key(query) {
            return (
                422,
                serde_json::json!({"message": "Validation Failed", "errors": [{"resource": "ReleaseAsset", "code": "already_exists", "field": "name"}]}),
            );
        }
        assets.insert(query.to_string(), body);
        return (201, serde_json::json!({"name": query}));
    }
    not_found
}

fn publish(
    p: &Project,
    github: &Github,
    args: &[&str],
    token: bool,
    code: i32,
) -> std::process::Output {
    let mut all = vec!["release", "publish"];
    all.extend_from_slice(args);
    let mut cmd = p.cmd(&all);
    cmd.env("GITHUB_API_URL", github.url())
        .env("GITHUB_REPOSITORY", "o/r");
    if token {
        cmd.env("GITHUB_TOKEN", TOKEN);
    }
    let out = expect(&mut cmd, code);
    assert!(!stdout(&out).contains(TOKEN) && !stderr(&out).contains(TOKEN));
    out
}

#[test]
fn publish_creates_and_completes_the_github_release_with_checksums() {
    let p = Project::new();
    lockstep_sandbox::packages::create(
        &p.path(),
        "3.14.0",
        "\n[release]\nname = \"demo\"\nversion-base = \"3.14.0\"\n",
    )
    .expect("fixture");
    let github = Github::start();
    p.run(
        &[
            "pkg",
            "build",
            "--variant",
            "release",
            "--version",
            "3.14.0rc1",
            "--out",
            "wh",
        ],
        0,
    );
    let index_files = p.path().join("release/index/files/3.14.0rc1");

    // Checked before anything is published: no token, no tag.
    let out = publish(
        &p,
        &github,
        &["wh", "--tag", "demo-3.14.0rc1", "--github-release"],
        false,
        2,
    );
    assert!(stderr(&out).contains("needs a token"), "{}", stderr(&out));
    let out = publish(&p, &github, &["wh", "--github-release"], true, 2);
    assert!(stderr(&out).contains("needs --tag"), "{}", stderr(&out));
    assert!(!index_files.exists());
    assert!(github.state.lock().expect("state").requests.is_empty());

    let out = publish(
        &p,
        &github,
        &[
            "wh",
            "--tag",
            "demo-3.14.0rc1",
            "--github-release",
            "--json",
        ],
        true,
        0,
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let g = &report["github_release"];
    assert_eq!(g["created"], true, "{report}");
    assert_eq!(g["uploaded"].as_array().map(Vec::len), Some(3), "{report}");
    {
        let state = github.state.lock().expect("state");
        let (_, prerelease, assets) = &state.releases["demo-3.14.0rc1"];
        assert!(*prerelease, "no channel recorded: a prerelease");
        let sums = String::from_utf8(assets["SHA256SUMS"].clone()).expect("text");
        for (name, bytes) in assets.iter().filter(|(n, _)| n.ends_with(".whl")) {
            let on_disk = std::fs::read(index_files.join(name)).expect("stored wheel");
            assert_eq!(&on_disk, bytes, "{name}");
            assert!(
                sums.contains(&format!("{}  {name}\n", sha256_of(&index_files.join(name)))),
                "{sums}"
            );
        }
        assert!(
            state.requests.iter().all(|(_, _, token)| *token),
            "every request carried the token"
        );
    }

    // A rerun uploads nothing again.
    let out = publish(
        &p,
        &github,
        &[
            "wh",
            "--tag",
            "demo-3.14.0rc1",
            "--github-release",
            "--json",
        ],
        true,
        0,
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(report["github_release"]["created"], false, "{report}");
    assert_eq!(
        report["github_release"]["uploaded"]
            .as_array()
            .map(Vec::len),
        Some(0)
    );
    assert_eq!(
        report["github_release"]["already_there"]
            .as_array()
            .map(Vec::len),
        Some(3)
    );
}
