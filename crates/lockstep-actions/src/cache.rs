//! actions/cache emulated over `root/cache/`: restore by exact key, else by
//! prefix (the key, then each restore key, newest entry first); save in the
//! post phase when the job succeeded without an exact hit; entries are
//! immutable and written to a temporary directory, then renamed. A `!PATH`
//! line of `path:` leaves that path (and what is below it) out of what is
//! saved, as the real action's exclusion patterns do.
//!
//! Why: a workflow's second day must see what the first day saved, exactly
//! as GitHub's cache service would serve it (an entry only matches a step
//! listing the same paths, as GitHub's cache "version" does).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use super::context::{note, JobRun, Post, StepIo};
use super::glob::{copy_tree, copy_tree_except};
use super::inputs::ActionResult;

/// One stored entry.
struct Entry {
    dir: PathBuf,
    key: String,
    paths: Vec<String>,
    created: u128,
}

fn cache_dir(root: &Path) -> PathBuf {
    root.join("cache")
}

/// The directory of `key`: readable, unique per key.
fn entry_dir(root: &Path, key: &str) -> PathBuf {
    let safe: String = key
        .chars()
        .take(80)
        .map(|c| {
            if c.is_ascii_alphanumeric() || ".-_".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    let digest = hex::encode(Sha256::digest(key.as_bytes()));
    cache_dir(root).join(format!("{safe}-{}", &digest[..12]))
}

fn entries(root: &Path) -> Vec<Entry> {
    let Ok(dirs) = fs_err::read_dir(cache_dir(root)) else {
        return Vec::new();
    };
    dirs.filter_map(Result::ok)
        .filter(|d| !d.file_name().to_string_lossy().starts_with(".tmp"))
        .filter_map(|d| read_entry(&d.path()))
        .collect()
}

fn read_entry(dir: &Path) -> Option<Entry> {
    let text = fs_err::read_to_string(dir.join("manifest.json")).ok()?;
    let m: Value = serde_json::from_str(&text).ok()?;
    Some(Entry {
        dir: dir.to_path_buf(),
        key: m.get("key")?.as_str()?.to_string(),
        paths: m
            .get("paths")?
            .as_array()?
            .iter()
            .filter_map(|p| p.as_str().map(String::from))
            .collect(),
        created: m.get("created")?.as_str()?.parse().ok()?,
    })
}

/// Removes every entry whose key starts with `prefix`, as GitHub's cache
/// evicts entries unused for 7 days (or over 10 GB); how many went.
pub(crate) fn evict(root: &Path, prefix: &str) -> Result<usize, String> {
    let mut gone = 0;
    for entry in entries(root)
        .into_iter()
        .filter(|e| e.key.starts_with(prefix))
    {
        fs_err::remove_dir_all(&entry.dir).map_err(|e| e.to_string())?;
        gone += 1;
    }
    Ok(gone)
}

/// The `path:` input as a list (one per line), rejecting what the
/// emulation does not do.
pub(crate) fn paths_input(raw: &str) -> Result<Vec<String>, String> {
    let paths: Vec<String> = raw
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect();
    if paths.is_empty() {
        return Err("input `path` is required".to_string());
    }
    if let Some(p) = paths
        .iter()
        .find(|p| super::glob::is_glob(p.strip_prefix('!').unwrap_or(p)))
    {
        return Err(format!(
            "cache path `{p}`: patterns are not supported by the emulation"
        ));
    }
    Ok(paths)
}

/// What a restore found.
pub(crate) struct Restored {
    pub matched: Option<String>,
    pub exact: bool,
}

/// Finds and (unless `lookup_only`) restores the entry for `key`.
pub(crate) fn restore(
    job: &JobRun,
    key: &str,
    restore_keys: &[String],
    paths: &[String],
    lookup_only: bool,
) -> Result<Restored, String> {
    let all: Vec<Entry> = entries(&job.run.cfg.root)
        .into_iter()
        .filter(|e| e.paths == paths)
        .collect();
    let exact = all.iter().find(|e| e.key == key);
    let found = exact.or_else(|| {
        std::iter::once(key.to_string())
            .chain(restore_keys.iter().cloned())
            .find_map(|prefix| {
                all.iter()
                    .filter(|e| e.key.starts_with(&prefix))
                    .max_by_key(|e| e.created)
            })
    });
    let Some(entry) = found else {
        return Ok(Restored {
            matched: None,
            exact: false,
        });
    };
    if !lookup_only {
        for (i, p) in entry.paths.iter().enumerate() {
            if p.starts_with('!') {
                continue;
            }
            let data = entry.dir.join("data").join(i.to_string());
            if fs_err::symlink_metadata(&data).is_ok() {
                copy_tree(&data, &job.resolve(p)).map_err(|e| format!("restoring `{p}`: {e}"))?;
            }
        }
    }
    Ok(Restored {
        matched: Some(entry.key.clone()),
        exact: entry.key == key,
    })
}

/// Saves `paths` of the job under `key`; the message says what happened
/// (a failure to save is a warning, as on GitHub).
pub(crate) fn save(job: &JobRun, key: &str, paths: &[String]) -> String {
    let sources: Vec<(&str, PathBuf)> = paths
        .iter()
        .map(|p| (p.as_str(), job.resolve(p.strip_prefix('!').unwrap_or(p))))
        .collect();
    if sources
        .iter()
        .filter(|(p, _)| !p.starts_with('!'))
        .all(|(_, s)| fs_err::symlink_metadata(s).is_err())
    {
        return "warning: none of the cache paths exist, hence no cache is being saved".to_string();
    }
    let refs: Vec<(&str, &Path)> = sources.iter().map(|(p, s)| (*p, s.as_path())).collect();
    match store(&job.run.cfg.root, key, &refs) {
        Ok(true) => format!("cache saved with key: {key}"),
        Ok(false) => {
            format!("warning: cache entry `{key}` already exists; caches are immutable, not saved")
        }
        Err(e) => format!("warning: failed to save cache `{key}`: {e}"),
    }
}

/// [`super::seed_cache`]: every source must exist.
pub(crate) fn seed(root: &Path, key: &str, files: &[(&str, &Path)]) -> Result<(), String> {
    if let Some((p, s)) = files.iter().find(|(_, s)| !s.exists()) {
        return Err(format!(
            "the source of `{p}`, {}, does not exist",
            s.display()
        ));
    }
    match store(root, key, files)? {
        true => Ok(()),
        false => Err("an entry with this key exists (cache entries are immutable)".to_string()),
    }
}

static SEQUENCE: AtomicU64 = AtomicU64::new(0);

/// Writes an entry; false when the key already has one.
fn store(root: &Path, key: &str, files: &[(&str, &Path)]) -> Result<bool, String> {
    let dest = entry_dir(root, key);
    if dest.exists() {
        return Ok(false);
    }
    let seq = SEQUENCE.fetch_add(1, Ordering::SeqCst);
    let tmp = cache_dir(root).join(format!(".tmp-{}-{seq}", std::process::id()));
    let result = fill(&tmp, key, files).and_then(|()| {
        if dest.exists() {
            return Ok(false);
        }
        fs_err::rename(&tmp, &dest)
            .map(|()| true)
            .map_err(|e| e.to_string())
    });
    let _ = fs_err::remove_dir_all(&tmp);
    result
}

fn fill(tmp: &Path, key: &str, files: &[(&str, &Path)]) -> Result<(), String> {
    let _ = fs_err::remove_dir_all(tmp);
    fs_err::create_dir_all(tmp.join("data")).map_err(|e| e.to_string())?;
    let excluded: Vec<PathBuf> = files
        .iter()
        .filter(|(path, _)| path.starts_with('!'))
        .map(|(_, source)| source.to_path_buf())
        .collect();
    for (i, (path, source)) in files.iter().enumerate() {
        if path.starts_with('!') {
            continue;
        }
        if fs_err::symlink_metadata(source).is_ok() {
            copy_tree_except(source, &tmp.join("data").join(i.to_string()), &excluded)
                .map_err(|e| format!("`{path}`: {e}"))?;
        }
    }
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let manifest = json!({
        "key": key,
        "paths": files.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
        "created": created.to_string(),
    });
    fs_err::write(tmp.join("manifest.json"), manifest.to_string()).map_err(|e| e.to_string())
}

/// The `actions/cache` step (and its `restore` / `save` halves).
pub(crate) fn action(
    job: &mut JobRun,
    io: &StepIo,
    part: &str,
    with: &BTreeMap<String, String>,
) -> ActionResult {
    let key = with
        .get("key")
        .map(|k| k.trim().to_string())
        .filter(|k| !k.is_empty())
        .ok_or("input `key` is required")?;
    let paths: Vec<String> = paths_input(with.get("path").map(String::as_str).unwrap_or_default())?
        .iter()
        .map(|p| match p.strip_prefix('!') {
            Some(excluded) => format!("!{}", job.portable(excluded)),
            None => job.portable(p),
        })
        .collect();
    if part == "save" {
        note(&io.log, &save(job, &key, &paths));
        return Ok((true, Vec::new()));
    }
    let restore_keys: Vec<String> = with
        .get("restore-keys")
        .map(|r| {
            r.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    let flag = |name: &str| with.get(name).is_some_and(|v| v.trim() == "true");
    let found = restore(job, &key, &restore_keys, &paths, flag("lookup-only"))?;
    if found.matched.is_none() && flag("fail-on-cache-miss") {
        return Err(format!(
            "no cache entry for key `{key}` (fail-on-cache-miss)"
        ));
    }
    if part.is_empty() && !found.exact && !flag("lookup-only") {
        job.posts.push(Post::SaveCache {
            step: format!("step {}", io.index),
            key: key.clone(),
            paths,
        });
    }
    match &found.matched {
        Some(m) => note(&io.log, &format!("cache restored from key: {m}")),
        None => note(&io.log, &format!("cache not found for input keys: {key}")),
    }
    let mut outputs = vec![("cache-primary-key".to_string(), key)];
    if let Some(m) = &found.matched {
        outputs.push(("cache-hit".into(), found.exact.to_string()));
        outputs.push(("cache-matched-key".into(), m.clone()));
    }
    Ok((true, outputs))
}
