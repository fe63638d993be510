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

use crate::{Area, Cache, Key, KeyBuilder};

/// Longest a download may take.
pub const TIMEOUT: Duration = Duration::from_secs(600);

/// Largest file lockstep downloads (a bigger body is refused, nothing kept).
pub const MAX_BYTES: u64 = 8 << 30;

/// The payload's suffix in the area.
const DATA: &str = "data";

/// The local copy of `url`, whose content must have `sha256`.
pub fn fetch(cache: &Cache, url: &str, sha256: &str) -> Result<PathBuf, Error> {
    fetch_mirrored(cache, url, sha256, &Mirrors::default())
}

/// [`fetch`], the file fetched from where `mirrors` send its URL (the
/// digest decides what is kept, wherever it came from).
pub fn fetch_mirrored(
    cache: &Cache,
    url: &str,
    sha256: &str,
    mirrors: &Mirrors,
) -> Result<PathBuf, Error> {
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
    let got = download_to(&mirrors.apply(url), &temp)?;
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

/// URL prefixes rewritten before anything is fetched (`[test.mirrors]`,
/// `LOCKSTEP_TEST_MIRRORS`): a fleet's local copy of a blob host, or the
/// only way a machine without the internet reaches the files. Entries are
/// kept under the original URL, so a mirror and the origin share them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Mirrors {
    /// (from, to) prefixes, longest `from` first.
    rules: Vec<(String, String)>,
}

impl Mirrors {
    /// Mirrors from `(from, to)` pairs, each an http(s) URL prefix; `origin`
    /// names where they were read from in an error.
    pub fn new(
        pairs: impl IntoIterator<Item = (String, String)>,
        origin: &str,
    ) -> Result<Mirrors, Error> {
        let mut rules = Vec::new();
        for (from, to) in pairs {
            for side in [&from, &to] {
                check_prefix(side, origin)?;
            }
            rules.push((from, to));
        }
        rules.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
        Ok(Mirrors { rules })
    }

    /// `LOCKSTEP_TEST_MIRRORS="FROM=TO,FROM=TO"`.
    pub fn parse_env(text: &str) -> Result<Mirrors, Error> {
        let pairs = text
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(|pair| {
                pair.split_once('=')
                    .map(|(a, b)| (a.trim().to_string(), b.trim().to_string()))
                    .ok_or_else(|| {
                        Error::usage(format!(
                            "LOCKSTEP_TEST_MIRRORS entry `{}` is not FROM=TO",
                            printable_line(pair)
                        ))
                        .hint("e.g. LOCKSTEP_TEST_MIRRORS=\"https://sharkpublic.blob.core.windows.net/=http://127.0.0.1:8000/\"")
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Mirrors::new(pairs, "LOCKSTEP_TEST_MIRRORS")
    }

    /// Where `url` is fetched from.
    pub fn apply(&self, url: &str) -> String {
        self.rules
            .iter()
            .find_map(|(from, to)| {
                url.strip_prefix(from.as_str())
                    .map(|rest| format!("{to}{rest}"))
            })
            .unwrap_or_else(|| url.to_string())
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

/// A mirror side must be an http(s) URL prefix with a host, no
/// credentials, no query: anything else would rewrite URLs into nonsense.
fn check_prefix(prefix: &str, origin: &str) -> Result<(), Error> {
    let refuse = |why: &str| {
        Error::usage(format!(
            "mirror `{}` in {origin} is not an http(s) URL prefix: {why}",
            printable_line(prefix)
        ))
        .hint("a mirror maps a URL prefix to another, e.g. \"https://sharkpublic.blob.core.windows.net/\" = \"http://127.0.0.1:8000/\"")
    };
    let rest = prefix
        .strip_prefix("https://")
        .or_else(|| prefix.strip_prefix("http://"))
        .ok_or_else(|| refuse("it does not start with http:// or https://"))?;
    let host = rest.split('/').next().unwrap_or_default();
    if host.is_empty() {
        return Err(refuse("it has no host"));
    }
    if host.contains('@') {
        return Err(refuse("it holds credentials"));
    }
    if prefix.contains(['?', '#']) || prefix.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(refuse(
            "it holds a query, a fragment, spaces or control characters",
        ));
    }
    Ok(())
}

/// A file given by URL alone (iree-test-suites names expected outputs with
/// no checksum): downloaded once into the downloads area under its URL,
/// through `mirrors`, and reused until `refresh` asks for it again. Returns
/// its path and the sha256 of what was fetched (for the results).
pub fn fetch_unpinned(
    cache: &Cache,
    url: &str,
    mirrors: &Mirrors,
    refresh: bool,
) -> Result<(PathBuf, String), Error> {
    let key = KeyBuilder::new(Area::Downloads, 1)
        .part("url", url)
        .finish();
    let slot = cache.bucket(Area::Downloads).slot(&key, None);
    let kept = |entry: crate::Entry| {
        let path = entry.file(DATA).map(PathBuf::from)?;
        let sha = entry.meta()["sha256"].as_str()?.to_string();
        Some((path, sha))
    };
    if !refresh {
        if let Some(found) = slot.get().and_then(kept) {
            return Ok(found);
        }
    }
    let lock = slot.lock()?;
    if !refresh {
        if let Some(found) = lock.get().and_then(kept) {
            return Ok(found);
        }
    }
    let source = mirrors.apply(url);
    let mut stage = lock.stage();
    let temp = stage.path(DATA)?;
    let sha = download_to(&source, &temp).map_err(|e| {
        if source == url {
            e
        } else {
            e.context(format!(
                "{} is mirrored as {}",
                printable_line(url),
                printable_line(&source)
            ))
        }
    })?;
    let entry = stage.commit(
        serde_json::json!({ "url": url, "fetched_from": redacted_text(&source), "sha256": sha }),
    )?;
    let path = entry
        .file(DATA)
        .map(PathBuf::from)
        .ok_or_else(|| Error::failed(format!("internal: the download of {url} has no file")))?;
    Ok((path, sha))
}

/// `url` with any credentials hidden, for what is written down.
fn redacted_text(url: &str) -> String {
    match parse_url(url, UrlRules::CHECKED_CONTENT) {
        Ok(parsed) => redacted(&parsed).to_string(),
        Err(_) => printable_line(url).into_owned(),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_longest_prefix_wins_and_only_prefixes_are_rewritten() {
        let m = Mirrors::parse_env(
            "https://blob.example/=http://127.0.0.1:8000/, https://blob.example/big/=http://10.0.0.2/big/",
        )
        .unwrap();
        assert_eq!(
            m.apply("https://blob.example/a.npy"),
            "http://127.0.0.1:8000/a.npy"
        );
        assert_eq!(
            m.apply("https://blob.example/big/w.irpa"),
            "http://10.0.0.2/big/w.irpa"
        );
        assert_eq!(
            m.apply("https://other.example/blob.example/"),
            "https://other.example/blob.example/"
        );
    }

    #[test]
    fn what_is_not_an_http_prefix_is_refused_by_name() {
        for (text, needle) in [
            ("https://a/=file:///etc/", "file:///etc/"),
            ("ftp://a/=http://b/", "ftp://a/"),
            ("https://u:p@a/=http://b/", "credentials"),
            ("https://a/=http://b/?x", "query"),
            ("https:///=http://b/", "no host"),
            ("nothing", "FROM=TO"),
        ] {
            let e = Mirrors::parse_env(text).unwrap_err();
            let shown = e.to_string();
            assert!(shown.contains(needle), "{text}: {shown}");
        }
    }

    proptest! {
        #[test]
        fn parsing_and_applying_never_panic(text in ".{0,200}", url in ".{0,200}") {
            if let Ok(m) = Mirrors::parse_env(&text) {
                let _ = m.apply(&url);
            }
        }
    }
}
