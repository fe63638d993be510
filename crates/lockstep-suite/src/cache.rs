//! The content-addressed compile cache, shared by concurrent runners.
//!
//! Key: the compiler's identity, the source bytes and every flag. Entries are
//! built in a temporary directory and renamed into place, so a reader never
//! sees half an entry; `meta.json` (written last) records the module's size and
//! sha256, so a truncated or corrupt entry is detected, removed and rebuilt. A
//! per-key `flock` lets a second runner wait for the first instead of compiling
//! the same module twice. Deterministic compile errors are cached too (a second
//! run of an unchanged suite compiles nothing); timeouts and crashes are not.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use lockstep_core::Error;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

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
    let mut h = Sha256::new();
    h.update(b"lockstep-compile-v1\0");
    h.update(identity.as_bytes());
    h.update(b"\0");
    h.update(Sha256::digest(source));
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
                let _ = touch(&dir.join("used"));
                Some(Entry { dir, meta })
            }
            None => {
                tracing::warn!("removing corrupt cache entry {}", dir.display());
                remove_entry(&self.root, &dir);
                None
            }
        }
    }

    /// Holds an exclusive lock on `key` until dropped (other processes wait).
    pub fn lock(&self, key: &str) -> Result<File, Error> {
        let dir = self.root.join("locks");
        fs_err::create_dir_all(&dir)?;
        let file = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(format!("{key}.lock")))
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
        touch(&staging.join("used"))?;
        let dir = self.entry_dir(key);
        if let Some(parent) = dir.parent() {
            fs_err::create_dir_all(parent)?;
        }
        if std::fs::rename(staging, &dir).is_err() {
            // Another runner committed first (or a corrupt entry is in the way).
            if self.lookup(key).is_none() {
                remove_entry(&self.root, &dir);
                fs_err::rename(staging, &dir)?;
            } else {
                let _ = std::fs::remove_dir_all(staging);
            }
        }
        Ok(Entry { dir, meta })
    }

    /// Every entry with its size and last use.
    pub fn entries(&self) -> Vec<(PathBuf, u64, SystemTime)> {
        let mut found = Vec::new();
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
                let size = dir_size(&dir);
                let used = std::fs::metadata(dir.join("used"))
                    .and_then(|m| m.modified())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                found.push((dir, size, used));
            }
        }
        found
    }
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

fn touch(path: &Path) -> Result<(), Error> {
    let file = fs_err::File::create(path)?;
    file.set_modified(SystemTime::now())?;
    Ok(())
}

/// Moves an entry out of the way atomically, then deletes it.
pub fn remove_entry(root: &Path, dir: &Path) {
    let trash = root.join("tmp").join(format!(
        "trash-{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
    ));
    let _ = std::fs::create_dir_all(root.join("tmp"));
    if std::fs::rename(dir, &trash).is_ok() {
        let _ = std::fs::remove_dir_all(&trash);
    }
}

fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .filter_map(|e| e.metadata().ok())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

/// Parses `500M`, `2G`, `1024K`, `123` (bytes).
pub fn parse_size(text: &str) -> Result<u64, Error> {
    let t = text.trim();
    let (num, mult) = match t.char_indices().last() {
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let m = match c.to_ascii_uppercase() {
                'K' => 1u64 << 10,
                'M' => 1 << 20,
                'G' => 1 << 30,
                'T' => 1 << 40,
                'B' => 1,
                _ => 0,
            };
            (&t[..i], m)
        }
        _ => (t, 1),
    };
    let value: f64 = num.trim().parse().unwrap_or(-1.0);
    if mult == 0 || value < 0.0 {
        return Err(
            Error::usage(format!("invalid size `{text}`")).hint("write e.g. 500M, 2G or 1048576")
        );
    }
    Ok((value * mult as f64) as u64)
}

/// What pruning removed.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Pruned {
    pub removed: usize,
    pub freed_bytes: u64,
    pub kept: usize,
    pub kept_bytes: u64,
}

/// Removes entries unused for `older_than_days`, then the least recently used
/// until the cache is at most `max_size` bytes.
pub fn prune(cache: &CompileCache, max_size: Option<u64>, older_than_days: Option<u64>) -> Pruned {
    let mut entries = cache.entries();
    entries.sort_by_key(|(_, _, used)| *used);
    let now = SystemTime::now();
    let mut pruned = Pruned::default();
    let mut total: u64 = entries.iter().map(|(_, s, _)| s).sum();
    for (dir, size, used) in entries {
        let too_old = older_than_days
            .map(|d| {
                now.duration_since(used)
                    .map(|age| age.as_secs() > d * 86_400)
                    .unwrap_or(false)
            })
            .unwrap_or(false);
        let too_big = max_size.map(|m| total > m).unwrap_or(false);
        if too_old || too_big {
            remove_entry(cache.root(), &dir);
            pruned.removed += 1;
            pruned.freed_bytes += size;
            total = total.saturating_sub(size);
        } else {
            pruned.kept += 1;
            pruned.kept_bytes += size;
        }
    }
    pruned
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
        let pruned = prune(&cache, Some(5000), None);
        assert_eq!(pruned.removed, 1);
        assert!(cache.lookup(&a).is_none() && cache.lookup(&b).is_some());
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert!(parse_size("lots").is_err());
    }
}
