//! Writing the release store: one writer at a time under the store's lock
//! ([`lock`]), and every change one [`Transaction`] (publish, promote,
//! sync, prune, yank, hosting on GitHub): the changed version directories
//! and the whole index are built beside the live ones and checked, then
//! swapped in; a failure anywhere before the last swap puts every swapped
//! path back, so the store and its index are byte-identical to what they
//! were. A journal (`files/.txn-PID.json`) lets the next writer roll back
//! what a killed one left half-swapped ([`reclaim`]). `release yank` and
//! `release index` are the smallest writers, here too.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lockstep_core::Error;
use serde::{Deserialize, Serialize};

use crate::index::IndexReport;
use crate::store::{
    check_hosted, check_record, check_version_name, describe, releases, save, Release, FILES,
    RELEASE_JSON, SIMPLE,
};

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
        if names_version_of(index, version) && !back.exists() {
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
fn names_version_of(index: &Path, version: &str) -> bool {
    let needle = format!("/{FILES}/{version}/");
    let Ok(projects) = std::fs::read_dir(index.join(SIMPLE)) else {
        return false;
    };
    projects.flatten().any(|project| {
        std::fs::read_to_string(project.path().join("index.html"))
            .is_ok_and(|page| page.contains(&needle))
    })
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
    pub fn commit(mut self) -> Result<IndexReport, Error> {
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

/// `release index`: checks `base_url`, then regenerates the index under
/// the store's lock.
pub fn rebuild(index: &Path, base_url: Option<&str>) -> Result<IndexReport, Error> {
    if let Some(url) = base_url {
        crate::index::check_base_url(url)?;
    }
    let _lock = lock(index)?;
    crate::index::write_index(index, base_url)
}

/// `release yank`: marks `version` yanked (PEP 592) and regenerates the
/// index, in one store transaction.
pub fn yank_and_index(index: &Path, version: &str, reason: &str) -> Result<Release, Error> {
    if version.parse::<pep440_rs::Version>().is_err() {
        return Err(Error::usage(format!(
            "`{}` is not a PEP 440 version",
            version.escape_debug()
        )));
    }
    if !index.is_dir() {
        return Err(
            Error::usage(format!("{version} is not in the release store"))
                .cause(format!("{} holds no store yet", index.display())),
        );
    }
    let mut tx = Transaction::begin(index)?;
    let yanked = yank(&mut tx, version, reason)?;
    tx.commit()?;
    Ok(yanked)
}

/// Marks every file of `version` yanked with `reason`, in `tx`.
pub fn yank(tx: &mut Transaction, version: &str, reason: &str) -> Result<Release, Error> {
    let Ok(wanted) = version.parse::<pep440_rs::Version>() else {
        return Err(Error::usage(format!(
            "`{}` is not a PEP 440 version",
            version.escape_debug()
        )));
    };
    // `7.0.0RC2` is the stored `7.0.0rc2`: versions compare as PEP 440 says.
    let stored = tx
        .view()
        .keys()
        .find(|v| v.parse::<pep440_rs::Version>().is_ok_and(|v| v == wanted))
        .cloned();
    let Some(version) = stored else {
        let known: Vec<String> = tx.view().keys().cloned().collect();
        return Err(
            Error::usage(format!("{version} is not in the release store")).cause(format!(
                "released: {}",
                if known.is_empty() {
                    "nothing yet".into()
                } else {
                    known.join(", ")
                }
            )),
        );
    };
    if reason.trim().is_empty() || reason.len() > 1000 || reason.chars().any(char::is_control) {
        return Err(Error::usage(
            "--reason must be one line of 1 to 1000 characters",
        ));
    }
    let mut release = tx.view()[&version].clone();
    release.yanked = Some(reason.to_string());
    tx.set_record(release.clone())?;
    Ok(release)
}
