//! Files given by URL: downloaded once into the `downloads` area under their
//! sha256, checked before anything is kept (a mismatch caches nothing), then
//! reused by every run. The body is streamed to a staging file (never held in
//! memory) and bounded in size and time by lockstep-http, which also retries
//! and resumes a broken transfer.

use std::path::PathBuf;
use std::time::Duration;

use lockstep_core::error::printable_line;
use lockstep_core::Error;
use lockstep_http::{parse_url, redacted, Client, ClientConfig, HttpError, Redirects, UrlRules};

use crate::{Area, Cache, Key};

/// Longest a download may take.
pub const TIMEOUT: Duration = Duration::from_secs(600);

/// Largest file lockstep downloads (a bigger body is refused, nothing kept).
pub const MAX_BYTES: u64 = 8 << 30;

/// The payload's suffix in the area.
const DATA: &str = "data";

/// The local copy of `url`, whose content must have `sha256`.
pub fn fetch(cache: &Cache, url: &str, sha256: &str) -> Result<PathBuf, Error> {
    let key = Key::parse(sha256).ok_or_else(|| {
        Error::usage(format!("sha256 `{sha256}` for {url} is not 64 hex digits"))
            .hint("give the sha256 of the file's content (e.g. from `sha256sum FILE`)")
    })?;
    let slot = cache.bucket(Area::Downloads).slot(&key, None);
    if let Some(path) = slot.get().and_then(|e| e.file(DATA).map(PathBuf::from)) {
        return Ok(path);
    }
    let lock = slot.lock()?;
    if let Some(path) = lock.get().and_then(|e| e.file(DATA).map(PathBuf::from)) {
        return Ok(path);
    }
    let mut stage = lock.stage();
    let temp = stage.path(DATA)?;
    let got = download_to(url, &temp)?;
    if got != key.as_str() {
        return Err(Error::failed(format!(
            "download of {url} has sha256 {got}, expected {key}; nothing was cached"
        ))
        .hint("update sha256 in the suite file if the source changed on purpose"));
    }
    let entry = stage.commit(serde_json::json!({ "url": url }))?;
    entry
        .file(DATA)
        .map(PathBuf::from)
        .ok_or_else(|| Error::failed(format!("internal: the download of {url} has no file")))
}

/// Streams `url` into `path` through lockstep-http (retried and resumed when
/// a transfer breaks off, renamed into place only when whole); returns the
/// content's sha256. Plain http is fine here: the content is checked.
fn download_to(url: &str, path: &std::path::Path) -> Result<String, Error> {
    let parsed = parse_url(url, UrlRules::CHECKED_CONTENT).map_err(|reason| {
        Error::usage(format!("cannot download {}", printable_line(url)))
            .cause(reason.to_string())
            .hint("give an http(s) URL without user:password@ in the suite file")
    })?;
    let shown = redacted(&parsed);
    let client = Client::new(ClientConfig {
        deadline: TIMEOUT,
        ..ClientConfig::default()
    });
    let got = client
        .get(&parsed)
        .rules(UrlRules::CHECKED_CONTENT)
        .redirects(Redirects::AnyOrigin)
        .scrub(|s| {
            s.add_url_secrets(&parsed);
        })
        .download(path, MAX_BYTES)
        .map_err(|e| match e {
            HttpError::TooLarge { .. } => {
                Error::failed(format!("cannot download {shown}")).cause(format!(
                    "the file is larger than {} GiB; lockstep does not download it",
                    MAX_BYTES >> 30
                ))
            }
            other => other
                .into_error("the server", &shown)
                .context(format!("cannot download {shown}")),
        })?;
    Ok(got.sha256)
}
