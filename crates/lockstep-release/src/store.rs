//! The release store: `<index>/files/<version>/` holds a version's wheels
//! and sdists, each wheel's core metadata (`<wheel>.metadata`, PEP 658;
//! an sdist's PKG-INFO may declare fields dynamic, so none is served) and
//! `release.json` (what was released from where, the files' hashes, the
//! yank). Files are immutable: a different file under an existing name is
//! refused, identical bytes are a no-op.
//!
//! Every write is a [`Transaction`] (publish, promote, sync, prune, yank,
//! hosting on GitHub): the changed version directories and the whole index
//! are built beside the live ones and checked, then swapped in; a failure
//! anywhere before the last swap puts every swapped path back, so the store
//! and its index are byte-identical to what they were. A journal
//! (`files/.txn-PID.json`) lets the next writer roll back what a killed one
//! left half-swapped.

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

/// Under the store's lock: what killed writers left. A transaction's
/// journal of a dead process is rolled back (every path it swapped gets its
/// old self back), then the staging and set-aside paths of dead processes
/// are removed. A prune of an earlier lockstep (`files/.V.pruned-PID`) is
/// finished when the index no longer names V, and put back otherwise.
/// Returns the versions put back.
fn reclaim(index: &Path) -> Result<Vec<String>, Error> {
    let files = index.join(FILES);
    let Ok(entries) = std::fs::read_dir(&files) else {
        return Ok(Vec::new());
    };
    let names: Vec<(String, PathBuf)> = entries
        .flatten()
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    for (name, path) in &names {
        let Some(pid) = name
            .strip_prefix(".txn-")
            .and_then(|rest| rest.strip_suffix(".json"))
            .and_then(|pid| pid.parse::<i32>().ok())
        else {
            continue;
        };
        if !lockstep_core::process::pid_alive(pid) {
            tracing::info!(journal = %path.display(), "rolling back what a killed release command left half-done");
            Journal::roll_back(index, path)?;
        }
    }
    for dir in [index.to_path_buf(), files.clone()] {
        remove_dead_staging(&dir);
    }
    let mut restored = Vec::new();
    for (name, path) in names {
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
            fs_err::rename(&path, &back)?;
            restored.push(version.to_string());
        } else {
            tracing::info!(version, "finishing what a killed prune started");
            fs_err::remove_dir_all(&path)?;
        }
    }
    Ok(restored)
}

/// Removes `.NAME.tmp-PID-N` and `.NAME.old-PID-N` entries of `dir` whose
/// process is gone (staging directories, set-aside paths).
fn remove_dead_staging(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.starts_with('.') {
            continue;
        }
        let Some(at) = name.rfind(".tmp-").or_else(|| name.rfind(".old-")) else {
            continue;
        };
        let Some((pid, n)) = name[at + 5..].split_once('-') else {
            continue;
        };
        let (Ok(pid), true) = (pid.parse::<i32>(), n.bytes().all(|b| b.is_ascii_digit())) else {
            continue;
        };
        if !lockstep_core::process::pid_alive(pid) {
            remove_any(&entry.path());
        }
    }
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

/// A change of the store made whole or not at all (see the module doc).
/// Holds the store's lock from [`Transaction::begin`] to its end; dropped
/// without [`Transaction::commit`], it leaves the store as it was.
pub struct Transaction {
    index: PathBuf,
    _lock: StoreLock,
    /// The store as it will be once committed.
    view: BTreeMap<String, Release>,
    /// Each version directory this transaction replaces, adds or removes.
    changes: BTreeMap<String, Change>,
}

enum Change {
    /// The version's whole new directory, built beside `files/VERSION`.
    Put(lockstep_core::fs::StagedDir),
    Remove,
}

impl Transaction {
    /// Takes the store's lock (creating the index directory) and reads it.
    pub fn begin(index: &Path) -> Result<Transaction, Error> {
        let lock = lock(index)?;
        Ok(Transaction {
            index: index.to_path_buf(),
            view: releases(index)?,
            _lock: lock,
            changes: BTreeMap::new(),
        })
    }

    /// The store as it will be once committed, by version.
    pub fn view(&self) -> &BTreeMap<String, Release> {
        &self.view
    }

    /// The index directory.
    pub fn index(&self) -> &Path {
        &self.index
    }

    /// Where `version`'s new directory is being built: the committed one's
    /// files (hard links: stored files are never written in place) when it
    /// exists, so a change adds to or takes from what is there.
    pub fn staged_dir(&mut self, version: &str) -> Result<PathBuf, Error> {
        check_version_name(version)?;
        if let Some(Change::Put(staged)) = self.changes.get(version) {
            return Ok(staged.path().to_path_buf());
        }
        let live = self.index.join(FILES).join(version);
        fs_err::create_dir_all(self.index.join(FILES))?;
        let staged = lockstep_core::fs::StagedDir::beside(&live)?;
        let removed = matches!(self.changes.get(version), Some(Change::Remove));
        if live.is_dir() && !removed {
            for entry in fs_err::read_dir(&live)? {
                let entry = entry?;
                if !entry.file_type()?.is_file() {
                    continue;
                }
                let to = staged.path().join(entry.file_name());
                if std::fs::hard_link(entry.path(), &to).is_err() {
                    fs_err::copy(entry.path(), &to)?;
                }
            }
        }
        let path = staged.path().to_path_buf();
        self.changes
            .insert(version.to_string(), Change::Put(staged));
        Ok(path)
    }

    /// Makes `record` the record of its version (checked first).
    pub fn set_record(&mut self, record: Release) -> Result<(), Error> {
        let dir = self.staged_dir(&record.version)?;
        check_record(&dir.join(RELEASE_JSON), &record)?;
        save(&dir, &record)?;
        self.view.insert(record.version.clone(), record);
        Ok(())
    }

    /// Removes `version` from the store.
    pub fn remove(&mut self, version: &str) -> Result<(), Error> {
        check_version_name(version)?;
        self.changes.insert(version.to_string(), Change::Remove);
        self.view.remove(version);
        Ok(())
    }

    /// Adds `wheels` to the store as `release` (immutably: a different file
    /// under a name the version has is refused; identical bytes are a
    /// no-op). Returns the files that were new.
    pub fn add(&mut self, release: &Release, wheels: &[PathBuf]) -> Result<Vec<String>, Error> {
        let version = release.version.clone();
        check_version_name(&version)?;
        // A version hosted elsewhere keeps only its record: what it lists is there.
        let existing = self.view.get(&version).cloned();
        let recorded: BTreeMap<String, String> = existing
            .iter()
            .flat_map(|r| r.files.iter())
            .map(|f| (f.filename.clone(), f.sha256.clone()))
            .collect();
        let live = self.index.join(FILES).join(&version);
        let mut new = Vec::new();
        for wheel in wheels {
            let name = lockstep_core::fs::file_name(wheel);
            let have = match (recorded.get(&name), live.join(&name).is_file()) {
                (Some(sha256), _) => Some(sha256.clone()),
                (None, true) => Some(lockstep_core::hash::sha256_file(&live.join(&name))?),
                (None, false) => None,
            };
            if let Some(have) = have {
                if have != lockstep_core::hash::sha256_file(wheel)? {
                    return Err(Error::usage(format!(
                        "{name} is already released with different bytes"
                    ))
                    .cause(format!("in {}", live.display()))
                    .hint(
                        "released files are immutable: build a new version (release cut) instead",
                    ));
                }
                continue;
            }
            new.push((name, wheel));
        }
        if new.is_empty() && existing.is_some() {
            return Ok(Vec::new());
        }
        let dir = self.staged_dir(&version)?;
        let now = jiff::Timestamp::now().to_string();
        let mut record = existing.unwrap_or_else(|| Release {
            files: Vec::new(),
            ..release.clone()
        });
        for (name, wheel) in &new {
            let staged = dir.join(name);
            fs_err::copy(wheel, &staged)?;
            record.files.push(describe(&staged, Some(&now))?);
        }
        record.files.sort_by(|a, b| a.filename.cmp(&b.filename));
        self.set_record(record)?;
        Ok(new.into_iter().map(|(n, _)| n).collect())
    }

    /// After `version`'s files became assets of its GitHub Release at
    /// `base`: the record says where they are served from, and the store
    /// keeps only the record and the core metadata (the Actions cache and the
    /// Pages site stay small).
    pub fn mark_hosted(&mut self, version: &str, base: &str) -> Result<(), Error> {
        check_hosted(base).map_err(|why| {
            Error::failed(format!(
                "{version} would be served from `{}`",
                lockstep_core::error::printable(base)
            ))
            .cause(why)
        })?;
        let mut record = self
            .view
            .get(version)
            .cloned()
            .ok_or_else(|| Error::failed(format!("{version} is not in the release store")))?;
        let dir = self.staged_dir(version)?;
        for file in &record.files {
            let path = dir.join(&file.filename);
            if path.exists() {
                fs_err::remove_file(&path)?;
            }
        }
        record.hosted = Some(base.to_string());
        self.set_record(record)
    }

    /// Builds the index of [`Transaction::view`], then swaps every changed
    /// version directory and the index in; any failure puts back what was
    /// swapped. Returns what the new index holds.
    pub fn commit(mut self) -> Result<crate::index::IndexReport, Error> {
        let staged_index = crate::index::stage_index(&self.index, &self.view, None)?;
        let files = self.index.join(FILES);
        let mut swaps = Vec::new();
        let changes = std::mem::take(&mut self.changes);
        let mut keep_alive = Vec::new();
        for (version, change) in changes {
            let dest = files.join(&version);
            match change {
                Change::Put(staged) => {
                    swaps.push(Swap::new(&dest, Some(staged.path())));
                    keep_alive.push(staged);
                }
                Change::Remove => swaps.push(Swap::new(&dest, None)),
            }
        }
        swaps.push(Swap::new(
            &self.index.join(SIMPLE),
            Some(staged_index.simple()),
        ));
        swaps.push(Swap::new(
            &self.index.join(crate::index::LINKS),
            Some(staged_index.links()),
        ));
        let journal = Journal::path(&self.index);
        lockstep_core::fs::write_atomic(&journal, &Journal::bytes(&self.index, &swaps)?)?;
        let mut applied = 0;
        let mut failed = None;
        for swap in swaps.iter_mut() {
            if let Err(e) = swap.apply() {
                failed = Some(e);
                break;
            }
            applied += 1;
        }
        if let Some(e) = failed {
            for swap in swaps[..=applied.min(swaps.len() - 1)].iter().rev() {
                swap.undo();
            }
            let _ = std::fs::remove_file(&journal);
            return Err(Error::failed(format!(
                "cannot update the release store {}",
                self.index.display()
            ))
            .cause(e)
            .hint("the store and its index were left as they were; fix the cause and run the command again"));
        }
        // The commit point: from here on the new store stands.
        fs_err::remove_file(&journal)?;
        for swap in &swaps {
            swap.drop_aside();
        }
        drop(keep_alive);
        Ok(staged_index.report())
    }
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

/// One path of the store replaced by another (or removed), with the old one
/// kept aside until the transaction's commit point.
struct Swap {
    dest: PathBuf,
    new: Option<PathBuf>,
    aside: PathBuf,
    had_old: bool,
    applied: bool,
}

impl Swap {
    fn new(dest: &Path, new: Option<&Path>) -> Swap {
        let aside = lockstep_core::fs::temp_name(dest);
        let name = lockstep_core::fs::file_name(&aside).replacen(".tmp-", ".old-", 1);
        Swap {
            dest: dest.to_path_buf(),
            new: new.map(Path::to_path_buf),
            aside: aside.with_file_name(name),
            had_old: dest.symlink_metadata().is_ok(),
            applied: false,
        }
    }

    fn apply(&mut self) -> Result<(), String> {
        let fail = |what: &str, path: &Path, e: std::io::Error| {
            format!("cannot {what} {}: {e}", path.display())
        };
        if self.had_old {
            std::fs::rename(&self.dest, &self.aside)
                .map_err(|e| fail("move aside", &self.dest, e))?;
        }
        if let Some(new) = &self.new {
            if let Err(e) = std::fs::rename(new, &self.dest) {
                if self.had_old {
                    let _ = std::fs::rename(&self.aside, &self.dest);
                }
                return Err(fail("move into place", &self.dest, e));
            }
        }
        self.applied = true;
        Ok(())
    }

    /// Puts the old path back (what [`Swap::apply`] did, undone).
    fn undo(&self) {
        if !self.applied {
            return;
        }
        if let Some(new) = &self.new {
            let _ = std::fs::rename(&self.dest, new);
        }
        if self.had_old {
            let _ = std::fs::rename(&self.aside, &self.dest);
        }
    }

    fn drop_aside(&self) {
        if self.had_old {
            remove_any(&self.aside);
        }
    }
}

fn remove_any(path: &Path) {
    let removed = match path.symlink_metadata() {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(_) => Ok(()),
    };
    if let Err(e) = removed {
        tracing::warn!(path = %path.display(), "cannot remove: {e}");
    }
}

/// What a transaction is swapping, written before the first swap and
/// removed at its commit point: a writer that finds one of a dead process
/// ([`reclaim`]) puts every old path back.
struct Journal;

#[derive(Serialize, Deserialize)]
struct JournalEntry {
    dest: String,
    aside: String,
    had_old: bool,
}

impl Journal {
    fn path(index: &Path) -> PathBuf {
        index
            .join(FILES)
            .join(format!(".txn-{}.json", std::process::id()))
    }

    fn bytes(index: &Path, swaps: &[Swap]) -> Result<Vec<u8>, Error> {
        let rel = |p: &Path| {
            p.strip_prefix(index)
                .map(|r| r.to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let entries: Vec<JournalEntry> = swaps
            .iter()
            .map(|s| JournalEntry {
                dest: rel(&s.dest),
                aside: rel(&s.aside),
                had_old: s.had_old,
            })
            .collect();
        serde_json::to_vec(&entries)
            .map_err(|e| Error::failed("cannot write the store's journal").cause(e.to_string()))
    }

    /// Rolls back the transaction `journal` describes: each path that was
    /// swapped gets its old self back (a new path that had none is removed).
    fn roll_back(index: &Path, journal: &Path) -> Result<(), Error> {
        let bytes = fs_err::read(journal)?;
        let entries: Vec<JournalEntry> = serde_json::from_slice(&bytes).unwrap_or_default();
        for entry in entries.iter().rev() {
            let inside = |rel: &str| {
                (!rel.is_empty() && !rel.split('/').any(|p| p == ".." || p.is_empty()))
                    .then(|| index.join(rel))
            };
            let (Some(dest), Some(aside)) = (inside(&entry.dest), inside(&entry.aside)) else {
                continue;
            };
            match (entry.had_old, aside.symlink_metadata().is_ok()) {
                (true, true) => {
                    remove_any(&dest);
                    fs_err::rename(&aside, &dest)?;
                }
                // Not swapped yet: the old one is still in place.
                (true, false) => {}
                (false, _) => remove_any(&dest),
            }
        }
        fs_err::remove_file(journal)?;
        Ok(())
    }
}
