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

use lockstep_core::Error;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Where kernels are cached, or `None` when the cache is off; `configured`
/// is `[bench] cache-dir` (already resolved against lockstep.toml's directory).
pub fn location(configured: Option<&Path>) -> Option<PathBuf> {
    if std::env::var("BOO_CACHE_ON").is_ok_and(|v| v.trim() == "0") {
        return None;
    }
    match std::env::var_os("BOO_CACHE_DIR") {
        Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir)),
        _ => Some(
            configured
                .map(Path::to_path_buf)
                .unwrap_or_else(|| lockstep_core::paths::cache().join("bench")),
        ),
    }
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

    pub fn remove(&self) {
        for path in [self.meta(), self.module(), self.command(), self.mlir()] {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// A unique temporary name next to `path` (same directory, so a rename is atomic).
pub fn temp_name(path: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(
        ".{name}.tmp-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
}

/// Writes `bytes` to `path` through a temporary file and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    if let Some(dir) = path.parent() {
        fs_err::create_dir_all(dir)?;
    }
    let tmp = temp_name(path);
    fs_err::write(&tmp, bytes)?;
    fs_err::rename(&tmp, path)?;
    Ok(())
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
}
