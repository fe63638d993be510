//! The content-addressed compile cache, shared by concurrent runners.
//!
//! Key: the compiler's identity, the source bytes and every flag. Entries are
//! built in a temporary directory and renamed into place, so a reader never
//! sees half an entry; `meta.json` (written last) records the module's size and
//! sha256, so a truncated or corrupt entry is detected, removed and rebuilt. A
//! per-key `flock` lets a second runner wait for the first instead of compiling
//! the same module twice. Deterministic compile errors are cached too (a second
//! run of an unchanged suite compiles nothing); timeouts and crashes are not.
//! Pruning removes an entry together with its lock file, and reclaims what
//! crashed runs left in `tmp/`.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use lockstep_core::cache::{dir_size, mark_used, modified, temp_name, Item};

use lockstep_core::Error;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// How long a `tmp/` entry stays untouched before pruning treats it as left
/// behind by a crashed run (no compile takes a day).
pub const STALE_TMP: Duration = Duration::from_secs(86_400);

/// The compile cache under `$LOCKSTEP_CACHE/compile`.
#[derive(Debug, Clone)]
pub struct CompileCache {
    root: PathBuf,
}

/// What `meta.json` records.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    pub key: String,
    /// `None` for a cached compile failure.
    pub module_sha256: Option<String>,
    pub module_size: u64,
    pub command: String,
    pub compiler: String,
    /// Exit and output tail of a cached failure.
    pub failure: Option<Failure>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Failure {
    pub exit: String,
    pub output: String,
}

/// A usable entry.
#[derive(Debug, Clone)]
pub struct Entry {
    pub dir: PathBuf,
    pub meta: Meta,
}

impl Entry {
    pub fn module(&self) -> PathBuf {
        self.dir.join("module.vmfb")
    }

    pub fn statistics(&self) -> PathBuf {
        self.dir.join("statistics.json")
    }
}

/// Computes a cache key.
pub fn key(identity: &str, source: &[u8], flags: &[String], statistics: bool) -> String {
    key_of_digest(identity, &Sha256::digest(source), flags, statistics)
}

/// [`key`] from the source's sha256 (raw bytes), so a runner hashes each
/// source once however many tests compile it.
pub fn key_of_digest(
    identity: &str,
    source_sha256: &[u8],
    flags: &[String],
    statistics: bool,
) -> String {
    let mut h = Sha256::new();
    h.update(b"lockstep-compile-v1\0");
    h.update(identity.as_bytes());
    h.update(b"\0");
    h.update(source_sha256);
    for f in flags {
        h.update(b"\0f");
        h.update(f.as_bytes());
    }
    h.update(if statistics { b"\0stats" } else { b"\0plain" });
    hex::encode(h.finalize())
}

pub use lockstep_core::hash::sha256_file;

impl CompileCache {
    pub fn new(root: PathBuf) -> CompileCache {
        CompileCache { root }
    }

    /// `$LOCKSTEP_CACHE/compile`.
    pub fn default_location() -> CompileCache {
        CompileCache::new(lockstep_core::paths::cache().join("compile"))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn entry_dir(&self, key: &str) -> PathBuf {
        self.root.join(&key[..2]).join(key)
    }

    /// A verified entry, or `None` (a corrupt one is removed first).
    pub fn lookup(&self, key: &str) -> Option<Entry> {
        let dir = self.entry_dir(key);
        if !dir.exists() {
            return None;
        }
        match verify(&dir, key) {
            Some(meta) => {
                mark_used(&dir.join("used"));
                Some(Entry { dir, meta })
            }
            None => {
                tracing::warn!("removing corrupt cache entry {}", dir.display());
                remove_entry(&dir);
                None
            }
        }
    }

    fn lock_path(&self, key: &str) -> PathBuf {
        self.root.join("locks").join(format!("{key}.lock"))
    }

    /// Holds an exclusive lock on `key` until dropped (other processes wait).
    pub fn lock(&self, key: &str) -> Result<File, Error> {
        let path = self.lock_path(key);
        if let Some(dir) = path.parent() {
            fs_err::create_dir_all(dir)?;
        }
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::failed("cannot create a cache lock").cause(e.to_string()))?;
        file.lock()
            .map_err(|e| Error::failed("cannot lock a cache entry").cause(e.to_string()))?;
        Ok(file)
    }

    /// A fresh directory to build an entry in.
    pub fn staging(&self, key: &str) -> Result<PathBuf, Error> {
        let tmp = self.root.join("tmp");
        fs_err::create_dir_all(&tmp)?;
        let dir = tempfile::Builder::new()
            .prefix(&format!("{}-", &key[..16]))
            .tempdir_in(&tmp)
            .map_err(|e| Error::failed("cannot create a staging directory").cause(e.to_string()))?;
        Ok(dir.keep())
    }

    /// Seals `staging` (holding `module.vmfb` unless `failure`) and renames it
    /// into place. Returns the entry.
    pub fn commit(
        &self,
        key: &str,
        staging: &Path,
        command: &str,
        compiler: &str,
        failure: Option<Failure>,
    ) -> Result<Entry, Error> {
        let module = staging.join("module.vmfb");
        let (sha, size) = if failure.is_none() {
            (
                Some(sha256_file(&module)?),
                fs_err::metadata(&module)?.len(),
            )
        } else {
            (None, 0)
        };
        let meta = Meta {
            key: key.to_string(),
            module_sha256: sha,
            module_size: size,
            command: command.to_string(),
            compiler: compiler.to_string(),
            failure,
        };
        let text = serde_json::to_string_pretty(&meta).map_err(|e| Error::failed(e.to_string()))?;
        fs_err::write(staging.join("meta.json"), text)?;
        // Created now: its modification time is the entry's last use.
        fs_err::write(staging.join("used"), b"")?;
        let dir = self.entry_dir(key);
        if let Some(parent) = dir.parent() {
            fs_err::create_dir_all(parent)?;
        }
        if std::fs::rename(staging, &dir).is_err() {
            // Another runner committed first (or a corrupt entry is in the way).
            if self.lookup(key).is_none() {
                remove_entry(&dir);
                fs_err::rename(staging, &dir)?;
            } else {
                let _ = std::fs::remove_dir_all(staging);
            }
        }
        Ok(Entry { dir, meta })
    }

    /// Every entry, for pruning: its directory and lock file, size and last
    /// use; plus what crashed runs left in `tmp/` (see [`STALE_TMP`]).
    pub fn items(&self) -> Vec<Item> {
        let mut found = self.stale_tmp();
        let Ok(shards) = std::fs::read_dir(&self.root) else {
            return found;
        };
        for shard in shards.flatten() {
            let name = shard.file_name().to_string_lossy().into_owned();
            if name.len() != 2 {
                continue;
            }
            let Ok(entries) = std::fs::read_dir(shard.path()) else {
                continue;
            };
            for entry in entries.flatten() {
                let dir = entry.path();
                let lock = self.lock_path(&entry.file_name().to_string_lossy());
                found.push(Item {
                    cache: "compile",
                    size: dir_size(&dir),
                    used: modified(&dir.join("used")),
                    paths: vec![dir, lock],
                });
            }
        }
        found
    }

    /// Staging directories and trash in `tmp/` untouched for [`STALE_TMP`]:
    /// a run that crashed mid-compile or mid-delete left them. Younger ones
    /// may belong to a running compile and are not listed.
    fn stale_tmp(&self) -> Vec<Item> {
        let Ok(entries) = std::fs::read_dir(self.root.join("tmp")) else {
            return Vec::new();
        };
        let now = SystemTime::now();
        entries
            .flatten()
            .map(|e| e.path())
            .filter_map(|path| {
                let used = modified(&path);
                let age = now.duration_since(used).ok()?;
                (age > STALE_TMP).then(|| Item {
                    cache: "compile",
                    size: if path.is_dir() {
                        dir_size(&path)
                    } else {
                        file_len(&path)
                    },
                    used,
                    paths: vec![path],
                })
            })
            .collect()
    }
}

fn file_len(path: &Path) -> u64 {
    std::fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

fn verify(dir: &Path, key: &str) -> Option<Meta> {
    let meta: Meta =
        serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).ok()?).ok()?;
    if meta.key != key {
        return None;
    }
    if meta.failure.is_some() {
        return Some(meta);
    }
    let module = dir.join("module.vmfb");
    let size = std::fs::metadata(&module).ok()?.len();
    if size != meta.module_size
        || meta.module_sha256.as_deref() != sha256_file(&module).ok().as_deref()
    {
        return None;
    }
    Some(meta)
}

/// Renames an entry aside, then deletes it: a reader never finds half of it.
fn remove_entry(dir: &Path) {
    let aside = temp_name(dir);
    if std::fs::rename(dir, &aside).is_ok() {
        let _ = std::fs::remove_dir_all(&aside);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn staged(cache: &CompileCache, key: &str, bytes: &[u8]) -> Entry {
        let staging = cache.staging(key).unwrap();
        std::fs::write(staging.join("module.vmfb"), bytes).unwrap();
        cache
            .commit(key, &staging, "cmd", "compiler", None)
            .unwrap()
    }

    #[test]
    fn commit_then_lookup_and_detect_corruption() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CompileCache::new(dir.path().to_path_buf());
        let k = key("id", b"src", &["-x".into()], false);
        assert!(cache.lookup(&k).is_none());
        let entry = staged(&cache, &k, b"module bytes");
        assert_eq!(std::fs::read(entry.module()).unwrap(), b"module bytes");
        assert!(cache.lookup(&k).is_some());
        // Truncate: detected and removed.
        std::fs::write(entry.module(), b"modu").unwrap();
        assert!(cache.lookup(&k).is_none());
        assert!(!entry.dir.exists());
    }

    #[test]
    fn keys_cover_compiler_source_and_flags() {
        let base = key("id", b"src", &["-a".into()], false);
        assert_ne!(base, key("id2", b"src", &["-a".into()], false));
        assert_ne!(base, key("id", b"src2", &["-a".into()], false));
        assert_ne!(base, key("id", b"src", &["-b".into()], false));
        assert_ne!(base, key("id", b"src", &["-a".into()], true));
        let digest = Sha256::digest(b"src");
        assert_eq!(base, key_of_digest("id", &digest, &["-a".into()], false));
    }

    #[test]
    fn prune_by_size_removes_least_recently_used() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CompileCache::new(dir.path().to_path_buf());
        let a = key("id", b"a", &[], false);
        let b = key("id", b"b", &[], false);
        staged(&cache, &a, &[0u8; 4000]);
        std::thread::sleep(std::time::Duration::from_millis(20));
        staged(&cache, &b, &[0u8; 4000]);
        let pruned = lockstep_core::cache::prune(cache.items(), Some(5000), None);
        assert_eq!(pruned[0].1.removed, 1);
        assert!(cache.lookup(&a).is_none() && cache.lookup(&b).is_some());
    }

    #[test]
    fn prune_reclaims_lock_files_and_stale_staging() {
        let dir = tempfile::tempdir().unwrap();
        let cache = CompileCache::new(dir.path().to_path_buf());
        let k = key("id", b"a", &[], false);
        drop(cache.lock(&k).unwrap());
        staged(&cache, &k, &[0u8; 100]);
        let lock = cache.lock_path(&k);
        assert!(lock.is_file());
        let stale = cache.staging(&k).unwrap();
        std::fs::write(stale.join("module.vmfb"), [0u8; 10]).unwrap();
        let old = SystemTime::now() - STALE_TMP - Duration::from_secs(60);
        File::open(&stale).unwrap().set_modified(old).unwrap();
        let fresh = cache.staging(&k).unwrap();

        let items = cache.items();
        assert_eq!(items.len(), 2, "{items:?}");
        assert!(items.iter().any(|i| i.paths == [stale.clone()]));
        let pruned = lockstep_core::cache::prune(items, Some(0), None);
        assert_eq!(pruned[0].1.removed, 2);
        assert!(!lock.exists() && !stale.exists());
        assert!(cache.lookup(&k).is_none());
        // A young staging directory may belong to a running compile.
        assert!(fresh.is_dir());
    }
}
