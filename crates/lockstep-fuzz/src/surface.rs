//! Fuzz targets over lockstep's release surface, where the input is what a
//! hostile or careless server answers: the `release.json` a GitHub Release
//! carries (read back by `release sync --from-github` and by `release prune`
//! before it deletes anything), and the body an upload index answers to a
//! refused upload. Each runs the real command path against a loopback
//! server (lockstep-sandbox's GitHub, a small echoing index) and checks the
//! contract that matters there, beyond "no panic, no hang":
//!
//! - `release-sync`: a refused record leaves the store and index byte for
//!   byte as they were; an accepted one links only the Release's own
//!   downloads.
//! - `release-prune`: a Release is deleted only when its record names the
//!   pruned version and tag.
//! - `release-promote`: a hosted candidate's files are fetched from its
//!   Release (whose `release.json` and asset bytes are the input) only when
//!   the Release proves it is the candidate's and each file has the
//!   recorded sha256; nothing fetched is kept otherwise.
//! - `release-upload-answer`: the credentials handed to `uv publish` never
//!   reach an error, an event or a log file, whatever the server echoes.
//!
//! Records are written with `{BASE}`, `{TAG}` and `{SHA}` placeholders (the
//! Release's download base, its tag, the one asset's sha256) so that
//! mutations start from records that prove themselves.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use lockstep_testkit::github::FakeGithub;

use crate::contract::Outcome;

const REPO: &str = "o/r";
const TOKEN: &str = "ghp_fuzz_release_T0KEN";
/// The one wheel the fuzzed records list, as an asset.
const WHEEL: &str = "demo_pure-3.14.0rc1-py3-none-any.whl";
const WHEEL_BYTES: &[u8] = b"not really a wheel: sync reads records, not wheels";

/// The loopback GitHub every input of these targets talks to (one per
/// process: its thread lives as long as the process).
fn github() -> &'static FakeGithub {
    static SERVER: OnceLock<FakeGithub> = OnceLock::new();
    SERVER.get_or_init(|| FakeGithub::start(REPO, TOKEN).expect("a loopback GitHub"))
}

fn client() -> Option<(lockstep_github::Client, lockstep_github::Repo)> {
    let token = lockstep_github::client::Token::new(TOKEN, "the fuzz token");
    let client = lockstep_github::Client::new(&github().url(), Some(token)).ok()?;
    let repo = lockstep_github::repo::resolve(Some(REPO), None, &client.web_host()).ok()?;
    Some((client, repo))
}

/// A fresh tag per input: nothing of an earlier input is mistaken for this one's.
fn next_tag() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!("fuzz-{}", NEXT.fetch_add(1, Ordering::Relaxed))
}

fn download_base(tag: &str) -> String {
    format!("{}/{REPO}/releases/download/{tag}/", github().url())
}

/// The input with its placeholders filled for the Release of `tag`.
fn record_for(input: &[u8], tag: &str) -> Vec<u8> {
    String::from_utf8_lossy(input)
        .replace("{BASE}", &download_base(tag))
        .replace("{TAG}", tag)
        .replace("{SHA}", &lockstep_core::hash::sha256_bytes(WHEEL_BYTES))
        .into_bytes()
}

/// Every file under `dir` with its bytes (the store's lock file left out).
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(next) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&next) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let rel = path
                .strip_prefix(dir)
                .map(|r| r.to_string_lossy().into_owned())
                .unwrap_or_default();
            match entry.file_type() {
                Ok(t) if t.is_dir() => pending.push(path),
                Ok(_) if rel == ".lock" => {}
                Ok(_) => {
                    out.insert(rel, std::fs::read(&path).unwrap_or_default());
                }
                Err(_) => {}
            }
        }
    }
    out
}

/// Every `href` and JSON `url` the index under `dir` links.
fn links(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for (name, bytes) in tree(dir) {
        if !(name.ends_with(".html") || name.ends_with(".json")) || name.starts_with("files") {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        for marker in ["href=\"", "\"url\":\""] {
            for part in text.split(marker).skip(1) {
                found.push(part.split('"').next().unwrap_or_default().to_string());
            }
        }
    }
    found
}

/// `release sync --from-github` of a Release whose `release.json` is the
/// input, into an empty store.
pub fn release_sync(input: &[u8]) -> Outcome {
    let (Some((client, repo)), Ok(dir)) = (client(), tempfile::tempdir()) else {
        return Outcome::Accepted;
    };
    let index = dir.path().join("index");
    let tag = next_tag();
    github().reset_releases();
    github().add_release(
        &tag,
        true,
        vec![
            (WHEEL.to_string(), WHEEL_BYTES.to_vec()),
            ("release.json".into(), record_for(input, &tag)),
        ],
    );
    let before = tree(&index);
    match lockstep_release::sync::from_github(
        &index,
        &client,
        &repo,
        &lockstep_core::events::NullSink,
    ) {
        Ok(_) => {
            let base = download_base(&tag);
            let relative = |l: &str| l.starts_with("../") || l.ends_with('/') && !l.contains(':');
            if let Some(bad) = links(&index)
                .into_iter()
                .find(|l| !(l.starts_with(&base) || relative(l)))
            {
                return Outcome::Unnamed(format!("the index links `{bad}`"));
            }
            Outcome::Accepted
        }
        Err(e) => {
            if tree(&index) != before {
                return Outcome::Unnamed(format!("refused ({}) but the store changed", e.message));
            }
            let text = e.render();
            let first = text.lines().next().unwrap_or_default().to_string();
            match text.contains(&tag) || text.contains("release.json") {
                true => Outcome::Refused(first),
                false => Outcome::Unnamed(first),
            }
        }
    }
}

/// A hosted version's record in the store under `index`.
fn store_version(index: &Path, version: &str, tag: &str) {
    let dir = index.join("files").join(version);
    let _ = std::fs::create_dir_all(&dir);
    let record = serde_json::json!({
        "version": version,
        "tag": tag,
        "hosted": download_base(tag),
        "files": [{
            "filename": format!("demo_pure-{version}-py3-none-any.whl"),
            "project": "demo-pure",
            "sha256": lockstep_core::hash::sha256_bytes(WHEEL_BYTES),
            "size": WHEEL_BYTES.len(),
            "upload_time": "2026-11-01T00:00:00Z",
        }],
    });
    let _ = std::fs::write(dir.join("release.json"), record.to_string());
}

/// `release prune` of a hosted snapshot whose Release's `release.json` is
/// the input: the Release goes only if the input names that version and tag.
pub fn release_prune(input: &[u8]) -> Outcome {
    let (Some((client, repo)), Ok(dir)) = (client(), tempfile::tempdir()) else {
        return Outcome::Accepted;
    };
    let index = dir.path().join("index");
    let (old, new) = (next_tag(), next_tag());
    store_version(&index, "3.14.0rc1", &old);
    store_version(&index, "3.14.0rc2", &new);
    github().reset_releases();
    let record = record_for(input, &old);
    github().add_release(
        &old,
        true,
        vec![
            (WHEEL.to_string(), WHEEL_BYTES.to_vec()),
            ("release.json".into(), record.clone()),
        ],
    );
    let request = lockstep_release::prune::PruneRequest {
        index: &index,
        keep_snapshots: Some(1),
        keep_days: None,
        repo: None,
        branches: &[],
        pin_files: &[],
        yank: false,
        dry_run: false,
        github: Some((&client, &repo)),
    };
    let pruned = match lockstep_release::prune::prune(&request) {
        Ok(pruned) => pruned,
        Err(e) => return Outcome::Refused(e.message),
    };
    let deleted = !github().releases().iter().any(|r| r.tag == old);
    let proves =
        serde_json::from_slice::<lockstep_release::store::Release>(&record).is_ok_and(|r| {
            r.tag.as_deref() == Some(old.as_str())
                && r.version.parse::<pep440_rs::Version>().ok()
                    == "3.14.0rc1".parse::<pep440_rs::Version>().ok()
        });
    match (deleted, proves) {
        (true, false) => Outcome::Unnamed(format!(
            "deleted a Release whose record does not name 3.14.0rc1 and {old}"
        )),
        (false, true) => {
            Outcome::Unnamed("kept a Release that proves it is the pruned version's".into())
        }
        (true, true) => Outcome::Accepted,
        (false, false) => match pruned.releases_left.first() {
            Some(left) => Outcome::Refused(format!("left alone: {}", left.why)),
            None => Outcome::Unnamed("a Release was neither deleted nor named as left".into()),
        },
    }
}

/// Where a `release-promote` input's `release.json` ends and the
/// candidate's asset bytes begin.
const ASSET_SEPARATOR: &[u8] = b"\n--asset--\n";

/// `release promote`'s fetch of a hosted candidate (3.14.0rc1, recorded in
/// the store with the wheel's sha256) from a Release whose `release.json`
/// and asset bytes are the input (`RECORD\n--asset--\nBYTES`; no separator:
/// the asset is the wheel the record lists).
pub fn release_promote(input: &[u8]) -> Outcome {
    let (Some((client, repo)), Ok(dir)) = (client(), tempfile::tempdir()) else {
        return Outcome::Accepted;
    };
    let index = dir.path().join("index");
    let staging = dir.path().join("staging");
    if std::fs::create_dir_all(&staging).is_err() {
        return Outcome::Accepted;
    }
    let tag = next_tag();
    store_version(&index, "3.14.0rc1", &tag);
    let (record, asset) = match input
        .windows(ASSET_SEPARATOR.len())
        .position(|w| w == ASSET_SEPARATOR)
    {
        Some(at) => (&input[..at], input[at + ASSET_SEPARATOR.len()..].to_vec()),
        None => (input, WHEEL_BYTES.to_vec()),
    };
    let filename = "demo_pure-3.14.0rc1-py3-none-any.whl";
    github().reset_releases();
    github().add_release(
        &tag,
        true,
        vec![
            (filename.to_string(), asset.clone()),
            ("release.json".into(), record_for(record, &tag)),
        ],
    );
    let stored = match lockstep_release::final_release::candidate(&index, "3.14.0rc1") {
        Ok(stored) => stored,
        Err(e) => return Outcome::Unnamed(format!("the fixture's candidate: {}", e.message)),
    };
    let fetched = || tree(&staging);
    match lockstep_release::final_release::fetch_hosted(&stored, &staging, &client, &repo) {
        Ok(()) => {
            let want = lockstep_core::hash::sha256_bytes(WHEEL_BYTES);
            match fetched().get(filename) {
                Some(bytes) if lockstep_core::hash::sha256_bytes(bytes) == want => {
                    Outcome::Accepted
                }
                _ => {
                    Outcome::Unnamed("fetched a file that is not the one the store records".into())
                }
            }
        }
        Err(e) => {
            let text = e.render();
            let first = text.lines().next().unwrap_or_default().to_string();
            if fetched().values().any(|b| {
                lockstep_core::hash::sha256_bytes(b)
                    != lockstep_core::hash::sha256_bytes(WHEEL_BYTES)
            }) {
                return Outcome::Unnamed(format!("refused ({first}) but kept a tampered file"));
            }
            match text.contains(&tag) || text.contains("release.json") || text.contains(filename) {
                true => Outcome::Refused(first),
                false => Outcome::Unnamed(first),
            }
        }
    }
}

/// The password the upload target hands uv, and what its log must never hold.
const PASSWORD: &str = "fuzz-S3cret-pw";

/// The body the echoing index answers next (with the credentials it was
/// sent appended), and its status.
static ANSWER: Mutex<(u16, Vec<u8>)> = Mutex::new((403, Vec::new()));

/// An upload index on 127.0.0.1 that answers every request with
/// [`ANSWER`], the credentials it received appended in every form a
/// careless server could echo them.
fn echoing_index() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
        std::thread::spawn(move || {
            for mut stream in listener.incoming().flatten() {
                let Ok(request) = lockstep_sandbox::github::read_request(&stream) else {
                    continue;
                };
                let auth = request
                    .header("authorization")
                    .unwrap_or_default()
                    .to_string();
                let (status, mut body) = ANSWER
                    .lock()
                    .map(|a| a.clone())
                    .unwrap_or((500, Vec::new()));
                body.extend_from_slice(
                    format!("\nyou sent {auth} (alice:{PASSWORD}) {PASSWORD}").as_bytes(),
                );
                let _ = lockstep_sandbox::github::write_response(&mut stream, status, &[], &body);
            }
        });
        format!("http://127.0.0.1:{port}/legacy/")
    })
}

/// A wheel uv accepts to upload: `demo-pure` 1.0, metadata only.
fn minimal_wheel() -> zip::result::ZipResult<Vec<u8>> {
    use std::io::Write;
    let mut out = std::io::Cursor::new(Vec::new());
    let mut zip = zip::ZipWriter::new(&mut out);
    let options = zip::write::SimpleFileOptions::default();
    for (name, text) in [
        ("demo_pure/__init__.py", ""),
        (
            "demo_pure-1.0.dist-info/METADATA",
            "Metadata-Version: 2.1\nName: demo-pure\nVersion: 1.0\n\n",
        ),
        (
            "demo_pure-1.0.dist-info/WHEEL",
            "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        ),
        ("demo_pure-1.0.dist-info/RECORD", ""),
    ] {
        zip.start_file(name, options)?;
        zip.write_all(text.as_bytes())?;
    }
    zip.finish()?;
    Ok(out.into_inner())
}

/// `release upload` of one wheel to an index that refuses it with the
/// input as its message (the first byte picks 400, 403, 409 or 500), the
/// credentials echoed: they must reach neither the error nor uv's log.
pub fn release_upload_answer(input: &[u8]) -> Outcome {
    static SETUP: OnceLock<Option<(tempfile::TempDir, lockstep_python::uv::Uv)>> = OnceLock::new();
    let Some((dir, uv)) = SETUP.get_or_init(|| {
        let dir = tempfile::tempdir().ok()?;
        let uv = lockstep_python::uv::find_default(&lockstep_core::events::NullSink)
            .ok()?
            .logs_in(&dir.path().join("logs"));
        std::env::set_var("TWINE_USERNAME", "alice");
        std::env::set_var("TWINE_PASSWORD", PASSWORD);
        let wheel = dir.path().join("demo_pure-1.0-py3-none-any.whl");
        std::fs::write(&wheel, minimal_wheel().ok()?).ok()?;
        Some((dir, uv))
    }) else {
        return Outcome::Accepted;
    };
    let status = match input.first().copied().unwrap_or(0) % 4 {
        0 => 400,
        1 => 403,
        2 => 409,
        _ => 500,
    };
    if let Ok(mut answer) = ANSWER.lock() {
        *answer = (status, input.to_vec());
    }
    let wheel = dir.path().join("demo_pure-1.0-py3-none-any.whl");
    let outcome = lockstep_release::upload::upload(uv, echoing_index(), &wheel);
    let leaked = |text: &str| {
        text.to_ascii_lowercase()
            .contains(&PASSWORD.to_ascii_lowercase())
    };
    for (name, bytes) in tree(&dir.path().join("logs")) {
        if leaked(&String::from_utf8_lossy(&bytes)) {
            return Outcome::Unnamed(format!("the password stayed in the log {name}"));
        }
    }
    match outcome {
        Ok(_) => Outcome::Accepted,
        Err(e) => {
            let text = e.render();
            if leaked(&text) {
                return Outcome::Unnamed(format!("the password reached the error: {text}"));
            }
            let first = text.lines().next().unwrap_or_default().to_string();
            match first.contains("demo_pure-1.0-py3-none-any.whl") {
                true => Outcome::Refused(first),
                false => Outcome::Unnamed(first),
            }
        }
    }
}
