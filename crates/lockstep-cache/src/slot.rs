//! The entry protocol every area uses.
//!
//! Reading ([`Slot::get`]) takes no lock: the seal lists every payload file
//! with its size and sha256 and is checked against them, so a reader either
//! sees a whole entry or none. Writing happens under the key's lock
//! ([`Slot::lock`]): look again (another process may have just built it),
//! stage the payload files under temporary names ([`Stage`]), fsync them,
//! rename them into place, then write the seal (itself through a temporary
//! name, fsync and rename) and fsync the directory. A crash at any point
//! leaves either the old state or staging files that `prune` reclaims.
//! An entry that fails its check is removed under the lock and rebuilt by
//! the caller. Pruning takes the same lock, so it never removes an entry
//! that is being written.

use std::collections::BTreeMap;
use std::fs::File;

use lockstep_core::lock::FileLock;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use lockstep_core::Error;
use serde::{Deserialize, Serialize};

use crate::layout::{self, LOCKS, SEAL, STRIPE_DIGITS};
use crate::{Area, Key};

/// The seal's format version.
const SEAL_VERSION: u32 = 1;
/// The largest seal read (a real one is a few hundred bytes).
const MAX_SEAL_BYTES: u64 = 16 << 20;

/// What a seal records: every payload file's size and sha256, and the
/// area's own metadata.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Seal {
    pub lockstep_cache: u32,
    pub area: String,
    pub key: String,
    pub files: BTreeMap<String, FileRecord>,
    #[serde(default)]
    pub meta: serde_json::Value,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct FileRecord {
    pub size: u64,
    pub sha256: String,
}

impl Seal {
    /// The seal at `path` when it is lockstep's and names `key`.
    /// Read through lockstep-core's tree door: a seal that is a FIFO, a
    /// device or a link to one (a planted or hostile cache, a bundle) is
    /// no seal, at once.
    pub(crate) fn read(path: &Path, key: &str) -> Option<Seal> {
        let text =
            lockstep_core::fs::read_tree_text("the cache seal", path, MAX_SEAL_BYTES).ok()?;
        let seal: Seal = serde_json::from_str(&text).ok()?;
        (seal.lockstep_cache == SEAL_VERSION && seal.key == key).then_some(seal)
    }

    /// Bytes of the payload files plus the seal itself.
    pub(crate) fn size(&self, seal_path: &Path) -> u64 {
        let own = std::fs::metadata(seal_path).map_or(0, |m| m.len());
        self.files.values().map(|f| f.size).sum::<u64>() + own
    }
}

/// The address of one entry: where its files and its lock are.
#[derive(Debug, Clone)]
pub struct Slot {
    area: Area,
    group: PathBuf,
    area_dir: PathBuf,
    key: Key,
}

/// A verified entry.
#[derive(Debug, Clone)]
pub struct Entry {
    key: Key,
    files: BTreeMap<String, PathBuf>,
    meta: serde_json::Value,
}

impl Entry {
    pub fn key(&self) -> &Key {
        &self.key
    }

    /// The payload file stored under `suffix`.
    pub fn file(&self, suffix: &str) -> Option<&Path> {
        self.files.get(suffix).map(PathBuf::as_path)
    }

    /// The metadata the writer sealed with the entry.
    pub fn meta(&self) -> &serde_json::Value {
        &self.meta
    }

    /// The metadata as the area's own type (`None` when it does not fit).
    pub fn meta_as<T: serde::de::DeserializeOwned>(&self) -> Option<T> {
        serde_json::from_value(self.meta.clone()).ok()
    }
}

/// Why a sealed entry cannot be used.
enum Check {
    Missing,
    Corrupt(Seal),
    Good(Entry),
}

impl Slot {
    pub(crate) fn new(area: Area, group: PathBuf, area_dir: &Path, key: Key) -> Slot {
        Slot {
            area,
            group,
            area_dir: area_dir.to_path_buf(),
            key,
        }
    }

    pub fn key(&self) -> &Key {
        &self.key
    }

    /// Where the payload `suffix` of this entry lives once sealed.
    pub fn path(&self, suffix: &str) -> PathBuf {
        self.group.join(format!("{}.{suffix}", self.key))
    }

    fn seal_path(&self) -> PathBuf {
        self.path(SEAL)
    }

    pub(crate) fn stripe_path(area_dir: &Path, key: &str) -> PathBuf {
        area_dir
            .join(LOCKS)
            .join(format!("{}.lock", &key[..STRIPE_DIGITS]))
    }

    /// The entry when it is whole; a corrupt one is removed (under the
    /// lock) so the caller rebuilds it. A hit marks the entry used.
    pub fn get(&self) -> Option<Entry> {
        match self.check() {
            Check::Missing => None,
            Check::Good(entry) => {
                self.mark_used();
                Some(entry)
            }
            // It may be being rewritten: decide under the lock.
            Check::Corrupt(_) => self.lock().ok()?.get(),
        }
    }

    /// Waits for the key's lock (other processes and threads writing or
    /// pruning keys of the same stripe hold it).
    pub fn lock(&self) -> Result<SlotLock, Error> {
        let lock = FileLock::wait(&self.stripe(), &self.purpose(), None)
            .map_err(|e| cache_write_error(self.area, e))?;
        Ok(SlotLock {
            slot: self.clone(),
            _lock: lock,
        })
    }

    /// The key's lock if nobody holds it.
    pub fn try_lock(&self) -> Result<Option<SlotLock>, Error> {
        let taken = FileLock::try_take(&self.stripe(), &self.purpose())
            .map_err(|e| cache_write_error(self.area, e))?;
        Ok(taken.ok().map(|lock| SlotLock {
            slot: self.clone(),
            _lock: lock,
        }))
    }

    /// The entry when it is whole, without touching anything: a corrupt
    /// one stays (a bundle's entries are the user's files, not a cache's).
    pub fn peek(&self) -> Option<Entry> {
        match self.check() {
            Check::Good(entry) => Some(entry),
            Check::Missing | Check::Corrupt(_) => None,
        }
    }

    fn stripe(&self) -> PathBuf {
        Slot::stripe_path(&self.area_dir, self.key.as_str())
    }

    fn purpose(&self) -> String {
        format!("the {} cache entry {}", self.area.name(), self.key)
    }

    fn check(&self) -> Check {
        let seal_path = self.seal_path();
        if !seal_path.exists() {
            return Check::Missing;
        }
        let Some(seal) = Seal::read(&seal_path, self.key.as_str()) else {
            // Not lockstep's seal (or unreadable): nothing here is ours.
            return Check::Missing;
        };
        let mut files = BTreeMap::new();
        for (suffix, record) in &seal.files {
            let path = self.path(suffix);
            // Opened as a regular file and hashed no further than the
            // sealed size: a payload that is a FIFO or a link to
            // /dev/zero is corrupt at once, never read without end.
            let whole = layout::is_suffix(suffix)
                && lockstep_core::fs::sha256_tree_file("the cache file", &path, record.size)
                    .is_ok_and(|(h, size)| size == record.size && h == record.sha256);
            if !whole {
                return Check::Corrupt(seal);
            }
            files.insert(suffix.clone(), path);
        }
        Check::Good(Entry {
            key: self.key.clone(),
            files,
            meta: seal.meta,
        })
    }

    /// Moves the seal's modification time (the entry's last use) to now.
    /// Best effort: a read-only cache still works.
    fn mark_used(&self) {
        if let Ok(file) = File::options().append(true).open(self.seal_path()) {
            let _ = file.set_modified(SystemTime::now());
        }
    }

    /// Removes the seal, then the files it lists (and nothing else).
    fn remove(&self, seal: &Seal) {
        let _ = std::fs::remove_file(self.seal_path());
        for suffix in seal.files.keys().filter(|s| layout::is_suffix(s)) {
            let _ = std::fs::remove_file(self.path(suffix));
        }
    }
}

/// The key's lock, held until dropped.
pub struct SlotLock {
    slot: Slot,
    _lock: FileLock,
}

impl SlotLock {
    pub fn slot(&self) -> &Slot {
        &self.slot
    }

    /// [`Slot::get`] under the lock: a corrupt entry is removed at once.
    pub fn get(&self) -> Option<Entry> {
        match self.slot.check() {
            Check::Missing => None,
            Check::Good(entry) => {
                self.slot.mark_used();
                Some(entry)
            }
            Check::Corrupt(seal) => {
                tracing::warn!(
                    "removing a corrupt {} cache entry {} in {}",
                    self.slot.area.name(),
                    self.slot.key,
                    self.slot.group.display()
                );
                self.slot.remove(&seal);
                None
            }
        }
    }

    /// Removes the entry if there is one (used by prune).
    pub(crate) fn remove(&self) {
        if let Some(seal) = Seal::read(&self.slot.seal_path(), self.slot.key.as_str()) {
            self.slot.remove(&seal);
        }
    }

    /// Starts writing the entry.
    pub fn stage(&self) -> Stage<'_> {
        Stage {
            lock: self,
            staged: Vec::new(),
        }
    }
}

/// Payload files being written; dropped without [`Stage::commit`], they are
/// removed.
pub struct Stage<'a> {
    lock: &'a SlotLock,
    staged: Vec<(String, PathBuf)>,
}

impl Stage<'_> {
    /// A temporary path beside the entry for the payload `suffix`, for a tool
    /// to write (e.g. iree-compile's `-o`). [`Stage::commit`] takes it.
    pub fn path(&mut self, suffix: &str) -> Result<PathBuf, Error> {
        let slot = &self.lock.slot;
        if !layout::is_suffix(suffix) || self.staged.iter().any(|(s, _)| s == suffix) {
            return Err(Error::failed(format!(
                "internal: bad or repeated cache file suffix `{suffix}`"
            )));
        }
        fs_err::create_dir_all(&slot.group).map_err(|e| cache_write_error(slot.area, e.into()))?;
        let path = slot.group.join(staging_name(slot.key.as_str(), suffix));
        self.staged.push((suffix.to_string(), path.clone()));
        Ok(path)
    }

    /// Stages `bytes` as the payload `suffix`; returns the staging path.
    pub fn write(&mut self, suffix: &str, bytes: &[u8]) -> Result<PathBuf, Error> {
        let path = self.path(suffix)?;
        fs_err::write(&path, bytes)
            .map_err(|e| cache_write_error(self.lock.slot.area, e.into()))?;
        Ok(path)
    }

    /// Stages a copy of `from` as the payload `suffix`.
    pub fn copy(&mut self, suffix: &str, from: &Path) -> Result<(), Error> {
        let path = self.path(suffix)?;
        fs_err::copy(from, &path)
            .map(|_| ())
            .map_err(|e| cache_write_error(self.lock.slot.area, e.into()))
    }

    /// Fsyncs and renames every staged file into place, then writes the seal
    /// with `meta`; returns the entry.
    pub fn commit(mut self, meta: serde_json::Value) -> Result<Entry, Error> {
        let slot = self.lock.slot.clone();
        let area = slot.area;
        // An entry may have no payload (a cached failure): the directory
        // may not exist yet.
        fs_err::create_dir_all(&slot.group).map_err(|e| cache_write_error(area, e.into()))?;
        // Whatever was there (a corrupt entry) stops being an entry first.
        self.lock.remove();
        let mut records = BTreeMap::new();
        let mut files = BTreeMap::new();
        for (suffix, temp) in std::mem::take(&mut self.staged) {
            let record = sync_and_record(&temp).map_err(|e| {
                let _ = std::fs::remove_file(&temp);
                cache_write_error(area, e)
            })?;
            let final_path = slot.path(&suffix);
            fs_err::rename(&temp, &final_path).map_err(|e| cache_write_error(area, e.into()))?;
            records.insert(suffix.clone(), record);
            files.insert(suffix, final_path);
        }
        let seal = Seal {
            lockstep_cache: SEAL_VERSION,
            area: area.name().to_string(),
            key: slot.key.to_string(),
            files: records,
            meta,
        };
        let text = serde_json::to_vec_pretty(&seal)
            .map_err(|e| Error::failed("cannot encode a cache seal").cause(e.to_string()))?;
        write_synced(&slot.seal_path(), &text).map_err(|e| cache_write_error(area, e))?;
        sync_dir(&slot.group);
        if area != Area::Kernels {
            if let Some(root) = slot.area_dir.parent() {
                crate::tag_root(root);
            }
        }
        Ok(Entry {
            key: slot.key.clone(),
            files,
            meta: seal.meta,
        })
    }
}

impl Drop for Stage<'_> {
    fn drop(&mut self) {
        for (_, temp) in &self.staged {
            let _ = std::fs::remove_file(temp);
        }
    }
}

/// `.KEY.SUFFIX.tmp-PID-N`: hidden, recognisable, unique in the process.
fn staging_name(key: &str, suffix: &str) -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        ".{key}.{suffix}.tmp-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Flushes a staged file to disk and records its size and sha256.
fn sync_and_record(path: &Path) -> Result<FileRecord, Error> {
    let file = File::open(path).map_err(|e| {
        Error::failed(format!(
            "a staged cache file is missing: {}",
            path.display()
        ))
        .cause(e.to_string())
    })?;
    file.sync_all()?;
    let size = file.metadata()?.len();
    Ok(FileRecord {
        size,
        sha256: lockstep_core::hash::sha256_file(path)?,
    })
}

/// Writes `path` through a synced temporary file and a rename.
fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let temp = lockstep_core::fs::temp_name(path);
    let written = (|| -> std::io::Result<()> {
        let mut file = File::create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()
    })();
    if let Err(e) = written.and_then(|()| std::fs::rename(&temp, path)) {
        let _ = std::fs::remove_file(&temp);
        return Err(Error::failed(format!("cannot write {}", path.display())).cause(e.to_string()));
    }
    Ok(())
}

/// Makes the renames in `dir` durable (best effort).
fn sync_dir(dir: &Path) {
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

fn cache_write_error(area: Area, err: Error) -> Error {
    err.context(format!("cannot write the {} cache", area.name()))
        .hint("check free space and permissions of $LOCKSTEP_CACHE (or run with --no-cache)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Cache, KeyBuilder};

    fn key(text: &str) -> Key {
        KeyBuilder::new(Area::Compile, 1).part("t", text).finish()
    }

    #[test]
    fn stage_commit_get_and_rebuild_after_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::at(dir.path());
        let slot = cache.bucket(Area::Compile).slot(&key("a"), None);
        assert!(slot.get().is_none());
        let lock = slot.lock().unwrap();
        assert!(lock.get().is_none());
        let mut stage = lock.stage();
        let out = stage.path("vmfb").unwrap();
        std::fs::write(&out, b"module bytes").unwrap();
        stage.write("log", b"ok").unwrap();
        let entry = stage
            .commit(serde_json::json!({"command": "iree-compile x"}))
            .unwrap();
        drop(lock);
        assert_eq!(
            std::fs::read(entry.file("vmfb").unwrap()).unwrap(),
            b"module bytes"
        );
        assert!(!out.exists(), "the staging file was renamed");
        let hit = slot.get().unwrap();
        assert_eq!(hit.meta()["command"], "iree-compile x");
        assert!(dir.path().join(crate::CACHEDIR_TAG).is_file());
        // A truncated payload: the entry is removed, to be rebuilt.
        std::fs::write(entry.file("vmfb").unwrap(), b"modu").unwrap();
        assert!(slot.get().is_none());
        assert!(!slot.path("vmfb").exists() && !slot.path("json").exists());
    }

    #[test]
    fn an_entry_may_hold_only_metadata() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::at(dir.path());
        let slot = cache.bucket(Area::Compile).slot(&key("failure"), None);
        let lock = slot.lock().unwrap();
        lock.stage()
            .commit(serde_json::json!({"failure": "exit status 1"}))
            .unwrap();
        drop(lock);
        let entry = slot.get().unwrap();
        assert_eq!(entry.meta()["failure"], "exit status 1");
        assert!(entry.file("vmfb").is_none());
    }

    #[test]
    fn dropping_a_stage_leaves_nothing_and_locks_exclude() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::at(dir.path());
        let slot = cache.bucket(Area::Compile).slot(&key("b"), None);
        let lock = slot.lock().unwrap();
        {
            let mut stage = lock.stage();
            stage.write("vmfb", b"half").unwrap();
        }
        assert!(slot.try_lock().unwrap().is_none(), "held by `lock`");
        drop(lock);
        assert!(slot.try_lock().unwrap().is_some());
        let group = slot.path("vmfb").parent().unwrap().to_path_buf();
        assert_eq!(std::fs::read_dir(group).unwrap().count(), 0);
    }

    fn mkfifo(path: &Path) {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(made.success());
    }

    #[test]
    fn seals_and_payloads_that_are_fifos_or_devices_are_never_read() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::at(dir.path());
        let slot = cache.bucket(Area::Kernels).slot(&key("d"), Some("gemm"));
        let lock = slot.lock().unwrap();
        let mut stage = lock.stage();
        stage.write("vmfb", b"").unwrap();
        stage.commit(serde_json::json!({})).unwrap();
        drop(lock);
        assert!(slot.peek().is_some());
        // An empty payload swapped for a link to /dev/zero (its size still
        // "matches"): corrupt at once, not hashed without end.
        std::fs::remove_file(slot.path("vmfb")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", slot.path("vmfb")).unwrap();
        assert!(slot.peek().is_none());
        // A FIFO: nobody writes to it, and nothing waits for it.
        std::fs::remove_file(slot.path("vmfb")).unwrap();
        mkfifo(&slot.path("vmfb"));
        assert!(slot.peek().is_none());
        // The seal itself a FIFO, or a link to /dev/urandom: no entry.
        std::fs::remove_file(slot.path("json")).unwrap();
        mkfifo(&slot.path("json"));
        assert!(slot.peek().is_none());
        std::fs::remove_file(slot.path("json")).unwrap();
        std::os::unix::fs::symlink("/dev/urandom", slot.path("json")).unwrap();
        assert!(slot.peek().is_none());
    }

    #[test]
    fn a_seal_that_is_not_lockstep_s_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::at(dir.path());
        let k = key("c");
        let slot = cache.bucket(Area::Kernels).slot(&k, Some("conv"));
        std::fs::create_dir_all(slot.path("json").parent().unwrap()).unwrap();
        std::fs::write(slot.path("json"), b"{\"someone\": \"else\"}").unwrap();
        std::fs::write(slot.path("vmfb"), b"theirs").unwrap();
        assert!(slot.get().is_none());
        assert!(slot.path("vmfb").exists() && slot.path("json").exists());
    }
}
