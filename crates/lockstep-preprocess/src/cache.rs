//! The preprocessing cache: one file per (executable text, command, tool
//! identity) under `$LOCKSTEP_CACHE/preprocess`, holding the checked output.
//!
//! Same approach as the compile cache: an entry is written to a temporary file
//! and renamed into place, so a reader never sees half an entry; a header line
//! records the content's length and sha256, so a damaged entry is detected,
//! removed and recomputed. Only successes are cached.

use std::path::{Path, PathBuf};

use lockstep_core::cache::Item;
use lockstep_core::Error;
use sha2::{Digest, Sha256};

const MAGIC: &str = "// lockstep-preprocess-cache v1";

#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
}

/// The cache key of one step on one executable.
pub fn key(input: &str, step_material: &str) -> String {
    let mut h = Sha256::new();
    h.update(b"lockstep-preprocess-v1\0");
    h.update(Sha256::digest(input.as_bytes()));
    h.update(b"\0");
    h.update(step_material.as_bytes());
    hex::encode(h.finalize())
}

impl Cache {
    pub fn new(root: PathBuf) -> Cache {
        Cache { root }
    }

    /// `$LOCKSTEP_CACHE/preprocess`.
    pub fn default_location() -> Cache {
        Cache::new(lockstep_core::paths::cache().join("preprocess"))
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, key: &str) -> PathBuf {
        self.root.join(&key[..2]).join(format!("{key}.mlir"))
    }

    /// The cached output, or `None` (a damaged entry is removed).
    pub fn get(&self, key: &str) -> Option<String> {
        let path = self.path(key);
        let text = std::fs::read_to_string(&path).ok()?;
        let (header, body) = text.split_once('\n')?;
        let expected = format!(
            "{MAGIC} {key} {} {}",
            body.len(),
            hex::encode(Sha256::digest(body.as_bytes()))
        );
        if header == expected {
            lockstep_core::cache::mark_used(&path);
            Some(body.to_string())
        } else {
            tracing::warn!("removing damaged cache entry {}", path.display());
            let _ = std::fs::remove_file(&path);
            None
        }
    }

    /// Stores `output` under `key` (atomically; a concurrent writer of the
    /// same key writes the same bytes).
    pub fn put(&self, key: &str, output: &str) -> Result<(), Error> {
        let path = self.path(key);
        let header = format!(
            "{MAGIC} {key} {} {}\n",
            output.len(),
            hex::encode(Sha256::digest(output.as_bytes()))
        );
        let mut bytes = header.into_bytes();
        bytes.extend_from_slice(output.as_bytes());
        lockstep_core::cache::write_atomic(&path, &bytes)
    }

    /// Every entry, for `lockstep cache prune` (last use: the file's
    /// modification time, moved on each hit).
    pub fn items(&self) -> Vec<Item> {
        let mut found = Vec::new();
        for shard in std::fs::read_dir(&self.root)
            .into_iter()
            .flatten()
            .flatten()
        {
            for file in std::fs::read_dir(shard.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                let path = file.path();
                let hidden = file.file_name().to_string_lossy().starts_with('.');
                if hidden || path.extension().is_none_or(|e| e != "mlir") {
                    continue;
                }
                found.push(Item {
                    cache: "preprocess",
                    size: file.metadata().map(|m| m.len()).unwrap_or(0),
                    used: lockstep_core::cache::modified(&path),
                    paths: vec![path],
                });
            }
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path().to_path_buf());
        let k = key("hal.executable @x {}", "tool\0cat");
        assert_ne!(k, key("hal.executable @x {}", "tool\0tac"));
        assert_ne!(k, key("hal.executable @y {}", "tool\0cat"));
        assert!(cache.get(&k).is_none());
        cache.put(&k, "out {\n}\n").unwrap();
        assert_eq!(cache.get(&k).as_deref(), Some("out {\n}\n"));
        let path = cache.path(&k);
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, &text[..text.len() - 2]).unwrap();
        assert!(cache.get(&k).is_none());
        assert!(!path.exists());
    }
}
