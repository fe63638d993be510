//! The release store: `<index>/files/<version>/` holds a version's wheels
//! and sdists, each wheel's core metadata (`<wheel>.metadata`, PEP 658;
//! an sdist's PKG-INFO may declare fields dynamic, so none is served) and
//! `release.json` (what was released from where, the files' hashes, the
//! yank). Files are immutable: a different file under an existing name is
//! refused, identical bytes are a no-op.
//!
//! Every write goes through one transaction (`crate::txn`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lockstep_core::Error;
use lockstep_python::sdist::SdistName;
use lockstep_python::wheel::{normalize, wheel_facts, WheelName};
use serde::{Deserialize, Serialize};

/// The store's directory under the index directory.
pub const FILES: &str = "files";

/// The index's pages, beside `files/`.
pub const SIMPLE: &str = "simple";
/// A version's record.
pub const RELEASE_JSON: &str = "release.json";

/// `release.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Release {
    pub version: String,
    #[serde(default)]
    pub tag: Option<String>,
    #[serde(default)]
    pub channel: Option<String>,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub pins: BTreeMap<String, String>,
    /// PEP 592: the reason, when yanked.
    #[serde(default)]
    pub yanked: Option<String>,
    /// Promoted from this version.
    #[serde(default)]
    pub promoted_from: Option<String>,
    /// Where the files are served from when they are not kept here
    /// (`[release] hosting = "github-releases"`: the GitHub Release's
    /// download URL, ending in `/`); the index links `HOSTED + filename`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hosted: Option<String>,
    pub files: Vec<StoredFile>,
}

/// One file of a release.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StoredFile {
    pub filename: String,
    pub project: String,
    pub sha256: String,
    pub size: u64,
    #[serde(default)]
    pub requires_python: Option<String>,
    /// sha256 of `<filename>.metadata`; none for an sdist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata_sha256: Option<String>,
    /// RFC 3339, when it entered the store.
    pub upload_time: String,
}

/// Every release in the store, by version directory name.
pub fn releases(index: &Path) -> Result<BTreeMap<String, Release>, Error> {
    let files = index.join(FILES);
    let mut out = BTreeMap::new();
    let Ok(entries) = std::fs::read_dir(&files) else {
        return Ok(out);
    };
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !entry.path().is_dir() {
            continue;
        }
        out.insert(name, load_or_scan(&entry.path())?);
    }
    Ok(out)
}

/// A version directory's `release.json`, completed with any wheel it does
/// not list yet (wheels dropped into the store by hand or by another tool:
/// hashed, their metadata extracted beside them).
pub fn load_or_scan(dir: &Path) -> Result<Release, Error> {
    let path = dir.join(RELEASE_JSON);
    let mut release: Release = match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            Error::failed(format!("{} is not a release record", path.display()))
                .cause(e.to_string())
        })?,
        Err(_) => Release {
            version: lockstep_core::fs::file_name(dir),
            ..Release::default()
        },
    };
    let listed: std::collections::BTreeSet<String> =
        release.files.iter().map(|f| f.filename.clone()).collect();
    let mut wheels: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::failed(format!("cannot list {}", dir.display())).cause(e.to_string()))?
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap_or_default().to_string_lossy();
            name.ends_with(".whl") || SdistName::looks_like(&name)
        })
        .filter(|p| {
            !listed.contains(
                &p.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned(),
            )
        })
        .collect();
    wheels.sort();
    for wheel in wheels {
        // A stray or half-copied file must not take the whole index down.
        match describe(&wheel, None) {
            Ok(file) => release.files.push(file),
            Err(e) => {
                tracing::warn!(file = %wheel.display(), error = %e.message, "skipping a file that is not a readable wheel")
            }
        }
    }
    check_record(&path, &release)?;
    release.files.sort_by(|a, b| a.filename.cmp(&b.filename));
    Ok(release)
}

/// [`check_record`] of a record that is not (yet) a file: `label` names it.
pub fn check_record_named(label: &str, release: &Release) -> Result<(), Error> {
    check_record(Path::new(label), release)
}

/// Refuses a record whose names or hashes could escape a path or an HTML
/// attribute (a record edited by hand or synced from elsewhere).
pub(crate) fn check_record(path: &Path, release: &Release) -> Result<(), Error> {
    let hex64 = |h: &str| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit());
    for f in &release.files {
        let project = WheelName::parse(&f.filename)
            .map(|w| w.name)
            .or_else(|| SdistName::parse(&f.filename).map(|s| s.name));
        let ok = !f.filename.contains(['/', '\\', '"', '<', '>', '&'])
            && project.is_some_and(|name| normalize(&name) == f.project)
            && hex64(&f.sha256)
            && f.metadata_sha256.as_deref().is_none_or(hex64);
        if !ok {
            return Err(Error::failed(format!(
                "{} has a bad file entry `{}`",
                path.display(),
                f.filename.escape_debug()
            ))
            .hint("restore the record (it is written by release publish) or remove the entry"));
        }
    }
    if let Some(base) = &release.hosted {
        check_hosted(base).map_err(|why| {
            Error::failed(format!(
                "{} says its files are at `{}`",
                path.display(),
                lockstep_http::shown(base)
            ))
            .cause(why)
            .hint("restore the record (release publish --github-release writes it) or remove the version; an index never links anything else")
        })?;
    }
    Ok(())
}

/// A `hosted` base as lockstep writes it and nothing else:
/// `https://HOST[:PORT]/OWNER/REPO/releases/download/TAG/` (plain http only
/// to this machine), without `user:password@`, query or fragment, in the
/// URL parser's own normal form (so no quote, space or control character
/// reaches an HTML attribute). Everything the index links comes from here
/// or from the store itself.
pub fn check_hosted(base: &str) -> Result<(), String> {
    let url = lockstep_http::parse_url(base, lockstep_http::UrlRules::CREDENTIALED)
        .map_err(|e| e.to_string())?;
    if url.as_str() != base || url.query().is_some() || url.fragment().is_some() {
        return Err(
            "it is not a plain URL in normal form (no query, fragment or escapes to normalize)"
                .into(),
        );
    }
    let segments: Vec<&str> = url.path().split('/').skip(1).collect();
    let shaped = matches!(
        segments.as_slice(),
        [owner, repo, "releases", "download", tag, ""]
            if !owner.is_empty() && !repo.is_empty() && !tag.is_empty()
                && ![owner, repo, tag].iter().any(|s| **s == "." || **s == "..")
    );
    if !shaped {
        return Err(
            "its path is not /OWNER/REPO/releases/download/TAG/ (a GitHub Release's downloads)"
                .into(),
        );
    }
    Ok(())
}

/// An sdist's name and Requires-Python, its PKG-INFO checked to agree
/// with its file name (every member checked on the way).
pub fn sdist_facts(path: &Path) -> Result<(String, Option<String>), Error> {
    let file_name = lockstep_core::fs::file_name(path);
    let name = SdistName::parse(&file_name)
        .ok_or_else(|| Error::usage(format!("{file_name} is not an sdist file name")))?;
    let info = lockstep_python::sdist::pkg_info(path)?;
    let text = String::from_utf8_lossy(&info);
    let header = |key: &str| lockstep_python::sdist::metadata_header(&text, key).unwrap_or("");
    let same_version = lockstep_python::wheel::parse_version(header("Version:"))
        .ok()
        .zip(lockstep_python::wheel::parse_version(&name.version).ok())
        .is_some_and(|(a, b)| a == b);
    if normalize(header("Name:")) != name.name || !same_version {
        return Err(Error::usage(format!(
            "{file_name}: its file name and PKG-INFO disagree (PKG-INFO says {} {})",
            header("Name:"),
            header("Version:")
        ))
        .hint("rebuild the sdist; installers refuse or mis-report such an sdist"));
    }
    let requires_python =
        lockstep_python::sdist::metadata_header(&text, "Requires-Python:").map(String::from);
    Ok((name.name, requires_python))
}

/// A stored file's record; writes `<wheel>.metadata` beside a wheel when
/// missing.
pub fn describe(file: &Path, upload_time: Option<&str>) -> Result<StoredFile, Error> {
    let is_sdist = SdistName::looks_like(&file.file_name().unwrap_or_default().to_string_lossy());
    let (project, requires_python, metadata_sha256) = if is_sdist {
        let (project, requires_python) = sdist_facts(file)?;
        (project, requires_python, None)
    } else {
        let facts = wheel_facts(file)?;
        let metadata_path = metadata_path(file);
        if !metadata_path.exists() {
            lockstep_core::fs::write_atomic(&metadata_path, &facts.metadata)?;
        }
        (
            normalize(&facts.name.name),
            facts.requires_python,
            Some(lockstep_core::hash::sha256_bytes(&facts.metadata)),
        )
    };
    let wheel = file;
    let size = fs_err::metadata(wheel)?.len();
    let upload_time = match upload_time {
        Some(t) => t.to_string(),
        None => fs_err::metadata(wheel)?
            .modified()
            .ok()
            .and_then(|m| jiff::Timestamp::try_from(m).ok())
            .unwrap_or_else(jiff::Timestamp::now)
            .to_string(),
    };
    Ok(StoredFile {
        filename: lockstep_core::fs::file_name(wheel),
        project,
        sha256: lockstep_core::hash::sha256_file(wheel)?,
        size,
        requires_python,
        metadata_sha256,
        upload_time,
    })
}

pub fn metadata_path(wheel: &Path) -> PathBuf {
    let mut name = wheel.as_os_str().to_os_string();
    name.push(".metadata");
    PathBuf::from(name)
}

/// A version a prune moved aside: `files/.VERSION.pruned-PID`.
pub fn pruned_name(version: &str) -> String {
    format!(".{version}.pruned-{}", std::process::id())
}

/// Writes `release` as the version directory's record (atomically).
/// A record as `release.json` holds it.
pub fn record_bytes(release: &Release) -> Result<Vec<u8>, Error> {
    let mut text = serde_json::to_string_pretty(release)
        .map_err(|e| Error::failed("cannot encode release.json").cause(e.to_string()))?;
    text.push('\n');
    Ok(text.into_bytes())
}

pub fn save(dir: &Path, release: &Release) -> Result<(), Error> {
    lockstep_core::fs::write_atomic(&dir.join(RELEASE_JSON), &record_bytes(release)?)
}

/// A version directory's name: the version as a plain path segment.
pub fn check_version_name(version: &str) -> Result<(), Error> {
    let plain = !version.is_empty()
        && version.len() <= 128
        && !version.starts_with('.')
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '!' | '_' | '-'));
    if !plain {
        return Err(Error::failed(format!(
            "`{}` is not a version the store can hold",
            lockstep_core::error::printable(version)
        ))
        .hint(
            "versions are PEP 440 versions in normal form (e.g. 3.14.0rc1); nothing was changed",
        ));
    }
    Ok(())
}
