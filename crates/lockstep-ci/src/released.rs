//! lockstep's own release as the runners' lockstep: `lockstep-cli` at the
//! version of the running binary, pinned by the sha256 of its wheels,
//! looked up on the package index that hosts it.
//!
//! A generated workflow that installs lockstep by hash needs those hashes
//! when it is written: the binary cannot know the hash of the wheel it
//! ships in. They are read from the index's PEP 691 page (JSON; a PEP 503
//! HTML page's `#sha256=` fragments too). Published files never change, so
//! a hash once read stays right; a lookup that fails (offline, a version
//! not published) is not an error here: the caller falls back and says so.

use std::time::Duration;

use lockstep_core::Error;

/// The distribution lockstep is published as (`lockstep` is taken on PyPI).
pub const DISTRIBUTION: &str = "lockstep-cli";
/// The index it is looked up on unless `$LOCKSTEP_CLI_INDEX` names another.
pub const DEFAULT_INDEX: &str = "https://pypi.org/simple";
/// The largest index page read.
const MAX_PAGE_BYTES: u64 = 8 << 20;

/// A release of lockstep the runners install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Released {
    pub version: String,
    /// The sha256 of each of its wheels (one line pins them all).
    pub sha256: Vec<String>,
    /// The index it comes from; `None`: PyPI (the installer's default).
    pub index: Option<String>,
}

/// The index `$LOCKSTEP_CLI_INDEX` names, else PyPI's.
pub fn index_from_env() -> String {
    std::env::var("LOCKSTEP_CLI_INDEX")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_INDEX.to_string())
}

/// The wheels of `lockstep-cli` `version` on `index`, with their hashes.
pub fn lookup(index: &str, version: &str) -> Result<Released, Error> {
    let base = index.trim_end_matches('/');
    let url = format!("{base}/{DISTRIBUTION}/");
    let failed = |cause: String| {
        Error::failed(format!(
            "cannot read {DISTRIBUTION} {version}'s hashes from {}",
            lockstep_core::error::without_userinfo(&url)
        ))
        .cause(cause)
    };
    let parsed = lockstep_http::parse_url(
        &url,
        lockstep_http::UrlRules {
            userinfo: false,
            plain_http: lockstep_http::PlainHttp::LoopbackOnly,
        },
    )
    .map_err(|e| failed(e.to_string()))?;
    let client = lockstep_http::Client::new(lockstep_http::ClientConfig {
        deadline: Duration::from_secs(30),
        ..lockstep_http::ClientConfig::default()
    });
    let response = client
        .get(&parsed)
        .header(
            "Accept",
            "application/vnd.pypi.simple.v1+json, text/html;q=0.1",
        )
        .call()
        .map_err(|e| failed(e.to_string()))?;
    if response.status() != 200 {
        return Err(failed(format!("the index answered {}", response.status())));
    }
    let bytes = response
        .bytes(MAX_PAGE_BYTES)
        .map_err(|e| failed(e.to_string()))?;
    let page = String::from_utf8_lossy(&bytes);
    let sha256 = wheel_hashes(&page, version);
    if sha256.is_empty() {
        return Err(failed(format!("the index lists no wheel of {version}")));
    }
    Ok(Released {
        version: version.to_string(),
        sha256,
        index: (base != DEFAULT_INDEX).then(|| base.to_string()),
    })
}

/// The sha256 of each `lockstep_cli-VERSION-*.whl` an index page lists:
/// PEP 691 JSON (`files[].filename`, `files[].hashes.sha256`), else PEP
/// 503 HTML (`href="...lockstep_cli-VERSION-....whl#sha256=HEX"`).
pub fn wheel_hashes(page: &str, version: &str) -> Vec<String> {
    let prefix = format!("{}-{version}-", DISTRIBUTION.replace('-', "_"));
    let is_hex = |h: &str| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit());
    let mut found: Vec<String> = Vec::new();
    if let Ok(doc) = serde_json::from_str::<serde_json::Value>(page) {
        for file in doc["files"].as_array().into_iter().flatten() {
            let name = file["filename"].as_str().unwrap_or_default();
            let hash = file["hashes"]["sha256"].as_str().unwrap_or_default();
            if name.starts_with(&prefix) && name.ends_with(".whl") && is_hex(hash) {
                found.push(hash.to_ascii_lowercase());
            }
        }
    } else {
        for link in page.split("href=\"").skip(1) {
            let target = link.split('"').next().unwrap_or_default();
            let name = target.rsplit('/').next().unwrap_or_default();
            let Some((file, hash)) = name.split_once("#sha256=") else {
                continue;
            };
            if file.starts_with(&prefix) && file.ends_with(".whl") && is_hex(hash) {
                found.push(hash.to_ascii_lowercase());
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_from_json_and_html_pages() {
        let a = "a".repeat(64);
        let b = "B".repeat(64);
        let json = format!(
            r#"{{"files": [
                {{"filename": "lockstep_cli-0.1.0-py3-none-manylinux_2_28_x86_64.whl", "hashes": {{"sha256": "{a}"}}}},
                {{"filename": "lockstep_cli-0.1.0.tar.gz", "hashes": {{"sha256": "{a}"}}}},
                {{"filename": "lockstep_cli-0.1.1-py3-none-any.whl", "hashes": {{"sha256": "{a}"}}}},
                {{"filename": "lockstep_cli-0.1.0-py3-none-macosx_11_0_arm64.whl", "hashes": {{"sha256": "{b}"}}}},
                {{"filename": "lockstep_cli-0.1.0-py3-none-any.whl", "hashes": {{"sha256": "short"}}}}
            ]}}"#
        );
        assert_eq!(wheel_hashes(&json, "0.1.0"), [a.clone(), b.to_lowercase()]);
        let html = format!(
            "<a href=\"../../files/lockstep_cli-0.1.0-py3-none-linux_x86_64.whl#sha256={a}\">x</a><a href=\"lockstep_cli-0.1.0.dev1-py3-none-any.whl#sha256={a}\">y</a>"
        );
        assert_eq!(wheel_hashes(&html, "0.1.0"), [a]);
        assert!(wheel_hashes("not a page", "0.1.0").is_empty());
    }

    proptest::proptest! {
        #[test]
        fn any_page_is_read_without_panicking(page in "\\PC{0,400}", version in "[0-9.]{0,8}") {
            let _ = wheel_hashes(&page, &version);
        }
    }
}
