//! What lockstep's file caches share: atomic writes (a temporary name in the
//! same directory, then a rename, so a reader never sees half a file), a
//! last-use mark, and pruning by age and total size.
//!
//! The compile cache (lockstep-suite), the kernel cache (lockstep-bench) and
//! the preprocessing cache (lockstep-preprocess) lay their entries out
//! differently; each lists its entries as [`Item`]s and `lockstep cache
//! prune` prunes them together, least recently used first.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use serde::Serialize;

use crate::error::{Error, Result};

/// A unique temporary name next to `path` (same directory, so a rename into
/// `path` is atomic).
pub fn temp_name(path: &Path) -> PathBuf {
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
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent() {
        fs_err::create_dir_all(dir)?;
    }
    let tmp = temp_name(path);
    if let Err(e) = fs_err::write(&tmp, bytes) {
        let _ = std::fs::remove_file(&tmp);
        return Err(e.into());
    }
    fs_err::rename(&tmp, path)?;
    Ok(())
}

/// Marks `path` as used now (its modification time), for least-recently-used
/// pruning. Best effort: a read-only cache still works.
pub fn mark_used(path: &Path) {
    if let Ok(file) = std::fs::OpenOptions::new().append(true).open(path) {
        let _ = file.set_modified(SystemTime::now());
    }
}

/// One cache entry as pruning sees it.
#[derive(Debug, Clone)]
pub struct Item {
    /// Which cache it belongs to (`compile`, `bench`, `preprocess`).
    pub cache: &'static str,
    /// The files and directories that make up the entry, removed together.
    pub paths: Vec<PathBuf>,
    pub size: u64,
    /// Last use (creation when never marked).
    pub used: SystemTime,
}

impl Item {
    /// Removes the entry; a directory is first renamed aside so a reader
    /// never finds half of it.
    fn remove(&self) {
        for path in &self.paths {
            if path.is_dir() {
                let aside = temp_name(path);
                if std::fs::rename(path, &aside).is_ok() {
                    let _ = std::fs::remove_dir_all(&aside);
                }
            } else {
                let _ = std::fs::remove_file(path);
            }
        }
    }
}

/// Total size of the files below `dir`.
pub fn dir_size(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => dir_size(&e.path()),
                    _ => e.metadata().map(|m| m.len()).unwrap_or(0),
                })
                .sum()
        })
        .unwrap_or(0)
}

/// The modification time of `path`, or the epoch when it has none.
pub fn modified(path: &Path) -> SystemTime {
    std::fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// Parses `500M`, `2G`, `1024K`, `123` (bytes).
pub fn parse_size(text: &str) -> Result<u64> {
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
    if mult == 0 || !(value >= 0.0 && value.is_finite()) {
        return Err(
            Error::usage(format!("invalid size `{text}`")).hint("write e.g. 500M, 2G or 1048576")
        );
    }
    Ok((value * mult as f64) as u64)
}

/// What pruning did to one cache.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Pruned {
    pub removed: usize,
    pub freed_bytes: u64,
    pub kept: usize,
    pub kept_bytes: u64,
}

/// Removes the items unused for more than `older_than_days`, then the least
/// recently used until the rest fit in `max_size` bytes; returns the counts
/// per cache name, in the order the caches first appear in `items`.
pub fn prune(
    mut items: Vec<Item>,
    max_size: Option<u64>,
    older_than_days: Option<u64>,
) -> Vec<(&'static str, Pruned)> {
    let mut per_cache: Vec<(&'static str, Pruned)> = Vec::new();
    for item in &items {
        if !per_cache.iter().any(|(name, _)| *name == item.cache) {
            per_cache.push((item.cache, Pruned::default()));
        }
    }
    items.sort_by_key(|item| item.used);
    let now = SystemTime::now();
    let mut total: u64 = items.iter().map(|i| i.size).sum();
    for item in items {
        let too_old = older_than_days.is_some_and(|days| {
            now.duration_since(item.used)
                .is_ok_and(|age| age.as_secs() > days.saturating_mul(86_400))
        });
        let too_big = max_size.is_some_and(|max| total > max);
        let Some((_, counts)) = per_cache.iter_mut().find(|(name, _)| *name == item.cache) else {
            continue;
        };
        if too_old || too_big {
            item.remove();
            counts.removed += 1;
            counts.freed_bytes += item.size;
            total = total.saturating_sub(item.size);
        } else {
            counts.kept += 1;
            counts.kept_bytes += item.size;
        }
    }
    per_cache
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn item(dir: &Path, cache: &'static str, name: &str, size: usize, age_days: u64) -> Item {
        let path = dir.join(name);
        std::fs::write(&path, vec![0u8; size]).unwrap();
        Item {
            cache,
            paths: vec![path],
            size: size as u64,
            used: SystemTime::now() - Duration::from_secs(age_days * 86_400 + 60),
        }
    }

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("123").unwrap(), 123);
        assert_eq!(parse_size("2K").unwrap(), 2048);
        assert_eq!(parse_size("1.5M").unwrap(), 3 << 19);
        assert_eq!(parse_size("1g").unwrap(), 1 << 30);
        for bad in ["", "x", "-1M", "2Q", "nanK"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn prune_removes_old_then_least_recently_used_across_caches() {
        let dir = tempfile::tempdir().unwrap();
        let items = vec![
            item(dir.path(), "compile", "a", 100, 40),
            item(dir.path(), "bench", "b", 100, 3),
            item(dir.path(), "compile", "c", 100, 2),
            item(dir.path(), "preprocess", "d", 100, 1),
        ];
        let result = prune(items, Some(150), Some(30));
        let get = |name| result.iter().find(|(n, _)| *n == name).unwrap().1.clone();
        // a is too old; b and c go for size (oldest first); d stays.
        assert_eq!(get("compile").removed, 2);
        assert_eq!(get("bench").removed, 1);
        assert_eq!(get("preprocess").kept, 1);
        assert_eq!(get("preprocess").kept_bytes, 100);
        assert!(!dir.path().join("b").exists() && dir.path().join("d").exists());
        assert_eq!(result[0].0, "compile");
    }

    #[test]
    fn writes_are_atomic_and_marks_move_the_clock() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x/y.bin");
        write_atomic(&path, b"abc").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"abc");
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().collect();
        assert_eq!(names.len(), 1, "no temporary file left");
        let file = std::fs::File::options().append(true).open(&path).unwrap();
        file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1))
            .unwrap();
        mark_used(&path);
        assert!(modified(&path) > SystemTime::UNIX_EPOCH + Duration::from_secs(10));
        assert_eq!(dir_size(dir.path()), 3);
    }
}
