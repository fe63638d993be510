//! The release store: `<index>/files/<version>/` holds a version's wheels
//! and sdists, each wheel's core metadata (`<wheel>.metadata`, PEP 658;
//! an sdist's PKG-INFO may declare fields dynamic, so none is served) and
//! `release.json` (what was released from where, the files' hashes, the
//! yank). Files are immutable: a different file under an existing name is
//! refused, identical bytes are a no-op. Everything arrives through a
//! staging directory and a rename, so a failed publish leaves nothing.

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

/// Refuses a record whose names or hashes could escape a path or an HTML
/// attribute (a record edited by hand or synced from elsewhere).
fn check_record(path: &Path, release: &Release) -> Result<(), Error> {
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

/// Holds the store's lock: one writer at a time (publish, promote, yank,
/// prune, index), so two cells of one version published at once merge
/// their records instead of one losing, and index swaps never interleave.
/// The kernel releases it when the process ends.
pub struct StoreLock {
    _lock: lockstep_core::lock::FileLock,
}

/// The store's lock when the index directory exists (a command that would
/// only change an existing store writes nothing for a missing one: it then
/// fails its own checks).
pub fn lock_existing(index: &Path) -> Result<Option<StoreLock>, Error> {
    if index.is_dir() {
        lock(index).map(Some)
    } else {
        Ok(None)
    }
}

/// Takes the store's lock, waiting for another writer when there is one
/// (the index directory is created for it).
pub fn lock(index: &Path) -> Result<StoreLock, Error> {
    let lock = lockstep_core::lock::FileLock::wait(
        &index.join(".lock"),
        "writing the release store",
        None,
    )?;
    reclaim(index)?;
    Ok(StoreLock { _lock: lock })
}

/// A version a prune moved aside: `files/.VERSION.pruned-PID`.
pub fn pruned_name(version: &str) -> String {
    format!(".{version}.pruned-{}", std::process::id())
}

/// Under the store's lock: what a killed prune left (`files/.V.pruned-PID`
/// of a dead PID) is finished when the index no longer names V (the prune
/// got past rewriting it), and put back otherwise, so a kill never loses a
/// version the index still offers. Returns the versions put back.
fn reclaim(index: &Path) -> Result<Vec<String>, Error> {
    let files = index.join(FILES);
    let Ok(entries) = std::fs::read_dir(&files) else {
        return Ok(Vec::new());
    };
    let mut restored = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some((version, pid)) = name
            .strip_prefix('.')
            .and_then(|rest| rest.rsplit_once(".pruned-"))
        else {
            continue;
        };
        let Ok(pid) = pid.parse::<i32>() else {
            continue;
        };
        if lockstep_core::process::pid_alive(pid) {
            continue;
        }
        let back = files.join(version);
        if names_version(index, version) && !back.exists() {
            tracing::info!(version, "putting back a version a killed prune moved aside");
            fs_err::rename(entry.path(), &back)?;
            restored.push(version.to_string());
        } else {
            tracing::info!(version, "finishing what a killed prune started");
            fs_err::remove_dir_all(entry.path())?;
        }
    }
    Ok(restored)
}

/// Whether the index's pages link a file of `version` (`files/VERSION/`).
fn names_version(index: &Path, version: &str) -> bool {
    let needle = format!("/{FILES}/{version}/");
    let Ok(projects) = std::fs::read_dir(index.join(SIMPLE)) else {
        return false;
    };
    projects.flatten().any(|project| {
        std::fs::read_to_string(project.path().join("index.html"))
            .is_ok_and(|page| page.contains(&needle))
    })
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

/// Adds `wheels` to the store as `release` (immutably); returns the files
/// that were new. Nothing is added unless every file can be.
pub fn add(index: &Path, release: &Release, wheels: &[PathBuf]) -> Result<Vec<String>, Error> {
    let dir = index.join(FILES).join(&release.version);
    // A version hosted elsewhere keeps only its record: what it lists is there.
    let recorded: BTreeMap<String, String> = match dir.join(RELEASE_JSON).is_file() {
        true => load_or_scan(&dir)?
            .files
            .into_iter()
            .map(|f| (f.filename, f.sha256))
            .collect(),
        false => BTreeMap::new(),
    };
    // Check every name first: a different file under an existing name is refused.
    let mut new = Vec::new();
    for wheel in wheels {
        let name = lockstep_core::fs::file_name(wheel);
        let existing = dir.join(&name);
        let have = match (existing.exists(), recorded.get(&name)) {
            (true, _) => Some(lockstep_core::hash::sha256_file(&existing)?),
            (false, Some(sha256)) => Some(sha256.clone()),
            (false, None) => None,
        };
        if let Some(have) = have {
            if have != lockstep_core::hash::sha256_file(wheel)? {
                return Err(Error::usage(format!(
                    "{name} is already released with different bytes"
                ))
                .cause(format!("in {}", dir.display()))
                .hint("released files are immutable: build a new version (release cut) instead"));
            }
            continue;
        }
        new.push((name, wheel));
    }
    if new.is_empty() && dir.join(RELEASE_JSON).exists() {
        return Ok(Vec::new());
    }
    let files_dir = index.join(FILES);
    fs_err::create_dir_all(&files_dir)?;
    let staging = files_dir.join(format!(".{}.tmp-{}", release.version, std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let result = (|| {
        fs_err::create_dir_all(&staging)?;
        let now = jiff::Timestamp::now().to_string();
        let mut record = if dir.exists() {
            load_or_scan(&dir)?
        } else {
            Release {
                files: Vec::new(),
                ..release.clone()
            }
        };
        for (name, wheel) in &new {
            let staged = staging.join(name);
            fs_err::copy(wheel, &staged)?;
            record.files.push(describe(&staged, Some(&now))?);
        }
        record.files.sort_by(|a, b| a.filename.cmp(&b.filename));
        if !dir.exists() {
            save(&staging, &record)?;
            return fs_err::rename(&staging, &dir).map_err(Error::from);
        }
        // Another cell of an existing version: each file moves in by rename, then the record.
        for (name, _) in &new {
            fs_err::rename(staging.join(name), dir.join(name))?;
            let meta = format!("{name}.metadata");
            if staging.join(&meta).exists() {
                fs_err::rename(staging.join(&meta), dir.join(&meta))?;
            }
        }
        save(&dir, &record)
    })();
    let _ = std::fs::remove_dir_all(&staging);
    result?;
    Ok(new.into_iter().map(|(n, _)| n).collect())
}
