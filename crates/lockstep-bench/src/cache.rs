//! The bench kernel cache, laid out like BOO's: `<dir>/<func_name>/<key>.vmfb`
//! next to `<key>.mlir`, `<key>.cmd` (the exact compile command) and
//! `<key>.json` (size and sha256 of the module, written last).
//!
//! Location: `$BOO_CACHE_DIR` when set, else `[bench] cache-dir`, else
//! `$LOCKSTEP_CACHE/bench`; `BOO_CACHE_ON=0` turns it off. The key covers the compiler identity, the
//! MLIR text and every compile flag (BOO's ignores the compiler version).
//! Every file is written under a temporary name and renamed into place; an
//! entry whose module is missing, truncated or altered is removed and rebuilt.

use std::path::{Path, PathBuf};

use lockstep_core::cache::{modified, Item};
use lockstep_core::config::Loaded;
use lockstep_core::Error;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The kernel cache's directory: `$BOO_CACHE_DIR`, else `[bench] cache-dir`
/// (relative to lockstep.toml), else `$LOCKSTEP_CACHE/bench`.
pub fn dir(loaded: &Loaded) -> PathBuf {
    match std::env::var_os("BOO_CACHE_DIR") {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => match &loaded.config.bench.cache_dir {
            Some(dir) => loaded.root.join(dir),
            None => lockstep_core::paths::cache().join("bench"),
        },
    }
}

/// Where kernels are cached, or `None` when `BOO_CACHE_ON=0` turns the
/// cache off.
pub fn location(loaded: &Loaded) -> Option<PathBuf> {
    let off = std::env::var("BOO_CACHE_ON").is_ok_and(|v| v.trim() == "0");
    (!off).then(|| dir(loaded))
}

/// The cache key of one kernel.
pub fn key(identity: &str, mlir: &str, flags: &[String]) -> String {
    let mut h = Sha256::new();
    h.update(b"lockstep-bench-v1\0");
    h.update(identity.as_bytes());
    h.update(b"\0");
    h.update(Sha256::digest(mlir.as_bytes()));
    for f in flags {
        h.update(b"\0f");
        h.update(f.as_bytes());
    }
    hex::encode(h.finalize())
}

/// What `<key>.json` records.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    pub key: String,
    pub module_sha256: String,
    pub module_size: u64,
    pub command: String,
}

/// The files of one entry.
#[derive(Debug, Clone)]
pub struct Entry {
    pub dir: PathBuf,
    pub key: String,
}

impl Entry {
    pub fn new(root: &Path, func_name: &str, key: &str) -> Entry {
        Entry {
            dir: root.join(func_name),
            key: key.to_string(),
        }
    }

    pub fn module(&self) -> PathBuf {
        self.dir.join(format!("{}.vmfb", self.key))
    }

    pub fn mlir(&self) -> PathBuf {
        self.dir.join(format!("{}.mlir", self.key))
    }

    pub fn command(&self) -> PathBuf {
        self.dir.join(format!("{}.cmd", self.key))
    }

    pub fn meta(&self) -> PathBuf {
        self.dir.join(format!("{}.json", self.key))
    }

    /// True when the entry is complete and its module matches its record; a
    /// corrupt entry is removed.
    pub fn is_valid(&self) -> bool {
        let Ok(text) = std::fs::read_to_string(self.meta()) else {
            if self.module().exists() {
                self.remove();
            }
            return false;
        };
        let ok = serde_json::from_str::<Meta>(&text).is_ok_and(|meta| {
            meta.key == self.key
                && std::fs::metadata(self.module()).is_ok_and(|m| m.len() == meta.module_size)
                && sha256_file(&self.module()).is_ok_and(|sha| sha == meta.module_sha256)
        });
        if !ok {
            tracing::warn!(
                "removing corrupt bench cache entry {}",
                self.module().display()
            );
            self.remove();
        }
        ok
    }

    /// Records a module compiled at `self.module()` (already renamed into
    /// place) with its command; the record is written last.
    pub fn seal(&self, command: &str) -> Result<(), Error> {
        let module = self.module();
        let meta = Meta {
            key: self.key.clone(),
            module_sha256: sha256_file(&module)?,
            module_size: fs_err::metadata(&module)?.len(),
            command: command.to_string(),
        };
        let text = serde_json::to_string_pretty(&meta)
            .map_err(|e| Error::failed("cannot encode a cache record").cause(e.to_string()))?;
        write_atomic(&self.meta(), text.as_bytes())
    }

    /// Every file of the entry, the record first (removing it first makes
    /// the entry invalid before any other file goes).
    pub fn files(&self) -> [PathBuf; 4] {
        [self.meta(), self.module(), self.command(), self.mlir()]
    }

    pub fn remove(&self) {
        for path in self.files() {
            let _ = std::fs::remove_file(path);
        }
    }
}

pub use lockstep_core::cache::{temp_name, write_atomic};

/// Every entry under `root`, for `lockstep cache prune`: its four files, their
/// size and its last use (the record's modification time, moved on each hit).
pub fn items(root: &Path) -> Vec<Item> {
    let mut found = Vec::new();
    for dir in std::fs::read_dir(root).into_iter().flatten().flatten() {
        let dir = dir.path();
        // An entry is its key's files, whichever exist: a failed compile
        // leaves `.mlir` and `.cmd` without a module, and they must go too.
        let mut keys = std::collections::BTreeSet::new();
        for file in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let name = file.file_name().to_string_lossy().into_owned();
            if let Some((key, _)) = name.split_once('.').filter(|(key, _)| !key.is_empty()) {
                keys.insert(key.to_string());
            }
        }
        for key in keys {
            let entry = Entry {
                dir: dir.clone(),
                key,
            };
            let paths: Vec<PathBuf> = entry.files().into_iter().filter(|p| p.exists()).collect();
            found.push(Item {
                cache: "bench",
                // Last use is the record's time (a hit moves it); an entry
                // without a record is as old as its newest file.
                used: if entry.meta().exists() {
                    modified(&entry.meta())
                } else {
                    paths
                        .iter()
                        .map(|p| modified(p))
                        .max()
                        .unwrap_or(std::time::UNIX_EPOCH)
                },
                size: paths
                    .iter()
                    .filter_map(|p| std::fs::metadata(p).ok())
                    .map(|m| m.len())
                    .sum(),
                paths,
            });
        }
    }
    found
}

pub use lockstep_core::hash::sha256_file;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_covers_identity_source_and_flags() {
        let flags = vec!["--a".to_string()];
        let base = key("id", "module", &flags);
        assert_eq!(base, key("id", "module", &flags));
        assert_ne!(base, key("id2", "module", &flags));
        assert_ne!(base, key("id", "module2", &flags));
        assert_ne!(base, key("id", "module", &["--b".to_string()]));
        assert_ne!(base, key("id", "module", &[]));
    }

    #[test]
    fn corrupt_entries_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        let entry = Entry::new(dir.path(), "f", "abc");
        assert!(!entry.is_valid());
        write_atomic(&entry.module(), b"module bytes").unwrap();
        write_atomic(&entry.command(), b"iree-compile x").unwrap();
        entry.seal("iree-compile x").unwrap();
        assert!(entry.is_valid());
        std::fs::write(entry.module(), b"module bytez").unwrap();
        assert!(!entry.is_valid());
        assert!(!entry.module().exists());
        assert!(!entry.meta().exists());
        // A module without its record is incomplete.
        write_atomic(&entry.module(), b"module bytes").unwrap();
        assert!(!entry.is_valid());
        assert!(!entry.module().exists());
    }

    #[test]
    fn items_cover_sealed_entries_and_failed_compiles() {
        let dir = tempfile::tempdir().unwrap();
        let sealed = Entry::new(dir.path(), "f", "aaa");
        write_atomic(&sealed.mlir(), b"module {}").unwrap();
        write_atomic(&sealed.module(), b"module bytes").unwrap();
        write_atomic(&sealed.command(), b"iree-compile x").unwrap();
        sealed.seal("iree-compile x").unwrap();
        // A failed compile leaves its source and command, no module.
        let failed = Entry::new(dir.path(), "f", "bbb");
        write_atomic(&failed.mlir(), b"module {}").unwrap();
        write_atomic(&failed.command(), b"iree-compile y").unwrap();
        let mut items = items(dir.path());
        items.sort_by_key(|i| i.paths.len());
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].paths.len(), 2, "{:?}", items[0].paths);
        assert_eq!(items[0].size, 9 + 14);
        assert_eq!(items[1].paths.len(), 4, "{:?}", items[1].paths);
        assert!(items.iter().all(|i| i.cache == "bench"));
    }
}
