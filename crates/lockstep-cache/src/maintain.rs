//! `lockstep cache info` and `lockstep cache prune` over every area at once.
//!
//! Both walk the areas the same way ([`scan`]): sealed entries, staging files
//! and entries of earlier lockstep versions are lockstep's; everything else is
//! *foreign* and only ever listed. Pruning removes least recently used entries
//! first (the seal's modification time, moved on each hit), across areas, and
//! takes each entry's lock first: an entry being written or read under its
//! lock is kept. Staging files are removed when their key's lock is free (a
//! writer stages only while holding it, so a free lock means its writer died).
//! Entries of earlier lockstep versions are pruned like any other (no key can
//! hit them again, so they age out).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use lockstep_core::Error;
use serde::Serialize;

use crate::layout::{self, LOCKS, SEAL};
use crate::slot::{Seal, Slot};
use crate::{Area, Cache, Key, CACHEDIR_TAG};

/// What `cache info` reports.
#[derive(Debug, Clone, Serialize)]
pub struct Info {
    pub root: PathBuf,
    pub areas: Vec<AreaInfo>,
    /// Files and directories in lockstep's areas that lockstep did not create.
    pub foreign: Vec<PathBuf>,
}

/// One area in `cache info`.
#[derive(Debug, Clone, Serialize)]
pub struct AreaInfo {
    pub name: &'static str,
    pub path: PathBuf,
    /// Sealed entries (plus entries of earlier lockstep versions).
    pub entries: usize,
    /// Bytes of those entries and of leftover staging files.
    pub bytes: u64,
    /// False for the kernel area under `BOO_CACHE_ON=0`.
    pub enabled: bool,
}

/// What to prune.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    /// Keep the areas together under this many bytes.
    pub max_size: Option<u64>,
    /// Remove entries unused for longer.
    pub older_than: Option<Duration>,
}

impl Policy {
    /// `cache prune`'s policy from its flags: `--max-size SIZE` and/or
    /// `--older-than DAYS` (one of them at least).
    pub fn from_flags(max_size: Option<&str>, older_than: Option<u64>) -> Result<Policy, Error> {
        if max_size.is_none() && older_than.is_none() {
            return Err(Error::usage("nothing to prune by")
                .hint("give --max-size SIZE and/or --older-than DAYS"));
        }
        Ok(Policy {
            max_size: max_size.map(parse_size).transpose()?,
            older_than: older_than.map(|days| Duration::from_secs(days.saturating_mul(86_400))),
        })
    }
}

/// What `cache prune` did.
#[derive(Debug, Clone, Serialize)]
pub struct Pruned {
    pub root: PathBuf,
    pub areas: Vec<PrunedArea>,
    pub foreign: Vec<PathBuf>,
}

/// One area in `cache prune`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PrunedArea {
    pub name: &'static str,
    pub path: PathBuf,
    pub removed: usize,
    pub freed_bytes: u64,
    pub kept: usize,
    pub kept_bytes: u64,
    /// Entries kept because another process held their lock.
    pub busy: usize,
}

/// What one thing in an area is.
#[derive(Debug, Clone)]
enum Kind {
    /// A sealed entry in `group`.
    Entry { key: Key, group: PathBuf },
    /// A staging file of a writer (alive while its key is locked).
    Staging { key: Key },
    /// An entry of an earlier lockstep version.
    Legacy,
    /// A provisioned toolchain directory, installed under `lock`
    /// (`half_built`: what a killed install left).
    Toolchain { lock: PathBuf, half_built: bool },
    /// An object file of a compiler cache, used under `lock`.
    CompilerObject { lock: PathBuf },
}

#[derive(Debug, Clone)]
struct Item {
    area: Area,
    kind: Kind,
    paths: Vec<PathBuf>,
    size: u64,
    used: SystemTime,
}

impl Cache {
    /// Entries and bytes per area, and the foreign files found.
    pub fn info(&self) -> Info {
        let (items, foreign) = self.scan_all();
        let areas = Area::ALL
            .iter()
            .map(|&area| {
                let mine = items.iter().filter(|i| i.area == area);
                AreaInfo {
                    name: area.name(),
                    path: self.dir(area),
                    entries: mine.clone().filter(|i| !is_staging(i)).count(),
                    bytes: mine.map(|i| i.size).sum(),
                    enabled: self.is_on(area),
                }
            })
            .collect();
        Info {
            root: self.root.clone(),
            areas,
            foreign,
        }
    }

    /// Removes entries by `policy`, least recently used first, across areas.
    pub fn prune(&self, policy: &Policy) -> Pruned {
        let (mut items, foreign) = self.scan_all();
        items.sort_by_key(|i| i.used);
        let mut per_area: BTreeMap<Area, PrunedArea> = Area::ALL
            .iter()
            .map(|&a| {
                let counts = PrunedArea {
                    name: a.name(),
                    path: self.dir(a),
                    ..PrunedArea::default()
                };
                (a, counts)
            })
            .collect();
        let mut total: u64 = items.iter().map(|i| i.size).sum();
        let now = SystemTime::now();
        for item in items {
            let old = policy
                .older_than
                .is_some_and(|limit| now.duration_since(item.used).is_ok_and(|age| age > limit));
            let big = policy.max_size.is_some_and(|max| total > max);
            let counts = per_area.entry(item.area).or_default();
            let wanted = match item.kind {
                Kind::Entry { .. } | Kind::Legacy => old || big,
                Kind::Toolchain { half_built, .. } => half_built || old || big,
                Kind::CompilerObject { .. } => old || big,
                Kind::Staging { .. } => true,
            };
            let outcome = if wanted {
                self.remove(&item)
            } else {
                Removal::Kept
            };
            match outcome {
                Removal::Removed => {
                    total = total.saturating_sub(item.size);
                    if !is_staging(&item) {
                        counts.removed += 1;
                    }
                    counts.freed_bytes += item.size;
                }
                Removal::Busy | Removal::Kept => {
                    if matches!(outcome, Removal::Busy) && !is_staging(&item) {
                        counts.busy += 1;
                    }
                    if !is_staging(&item) {
                        counts.kept += 1;
                        counts.kept_bytes += item.size;
                    }
                }
            }
        }
        Pruned {
            root: self.root.clone(),
            areas: per_area.into_values().collect(),
            foreign,
        }
    }

    /// Removes one item under its key's lock (a held lock keeps it).
    fn remove(&self, item: &Item) -> Removal {
        let area_dir = self.dir(item.area);
        match &item.kind {
            Kind::Entry { key, group } => {
                let slot = Slot::new(item.area, group.clone(), &area_dir, key.clone());
                match slot.try_lock() {
                    Ok(Some(lock)) => {
                        lock.remove();
                        drop(lock);
                        // Only empty directories go; a shared one keeps its files.
                        let _ = std::fs::remove_dir(group);
                        Removal::Removed
                    }
                    _ => Removal::Busy,
                }
            }
            Kind::Staging { key } => {
                let group = item.paths[0].parent().unwrap_or(&area_dir).to_path_buf();
                let slot = Slot::new(item.area, group, &area_dir, key.clone());
                match slot.try_lock() {
                    Ok(Some(_lock)) => {
                        remove_paths(&item.paths);
                        Removal::Removed
                    }
                    _ => Removal::Busy,
                }
            }
            Kind::Legacy => {
                remove_paths(&item.paths);
                Removal::Removed
            }
            // Under its install (or build) lock: an install or a build in
            // progress keeps it.
            Kind::Toolchain { lock, .. } | Kind::CompilerObject { lock } => {
                match lockstep_core::lock::FileLock::try_take(lock, "pruning the cache") {
                    Ok(Ok(_held)) => {
                        remove_paths(&item.paths);
                        Removal::Removed
                    }
                    _ => Removal::Busy,
                }
            }
        }
    }

    /// Every item of every area, and what is foreign (sorted).
    fn scan_all(&self) -> (Vec<Item>, Vec<PathBuf>) {
        let mut items = Vec::new();
        let mut foreign = Vec::new();
        let area_dirs: Vec<PathBuf> = Area::ALL.iter().map(|&a| self.dir(a)).collect();
        let mut seen_dirs: Vec<PathBuf> = Vec::new();
        for &area in &Area::ALL {
            let dir = self.dir(area);
            // Two areas sharing a directory (BOO_CACHE_DIR=$LOCKSTEP_CACHE/compile)
            // are walked once, as the first.
            if seen_dirs.contains(&dir) {
                continue;
            }
            seen_dirs.push(dir.clone());
            match area {
                Area::Toolchains => scan_toolchains(&dir, &mut items, &mut foreign),
                Area::Compiler => scan_compiler(&dir, &mut items, &mut foreign),
                _ => scan(area, &dir, &area_dirs, &mut items, &mut foreign),
            }
        }
        // The root holds the areas and the tag; anything else is not ours.
        for path in children(&self.root) {
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let is_area = Area::ALL.iter().any(|a| a.dir_name() == name);
            if !(is_area || name == CACHEDIR_TAG || area_dirs.contains(&path)) {
                foreign.push(path);
            }
        }
        foreign.sort();
        foreign.dedup();
        (items, foreign)
    }
}

enum Removal {
    Removed,
    Busy,
    Kept,
}

/// What a writer is making (or a killed one left): not an entry.
fn is_staging(item: &Item) -> bool {
    matches!(
        item.kind,
        Kind::Staging { .. }
            | Kind::Toolchain {
                half_built: true,
                ..
            }
    )
}

/// Walks one area directory.
fn scan(
    area: Area,
    dir: &Path,
    area_dirs: &[PathBuf],
    items: &mut Vec<Item>,
    foreign: &mut Vec<PathBuf>,
) {
    for path in children(dir) {
        let name = lockstep_core::fs::file_name(&path);
        if name == LOCKS || name == CACHEDIR_TAG || area_dirs.contains(&path) {
            continue;
        }
        if layout::is_legacy(area, &path, true) {
            items.push(legacy(area, vec![path]));
        } else if path.is_dir() && !path.is_symlink() && is_group(area, &name) {
            scan_group(area, &path, items, foreign);
        } else {
            foreign.push(path);
        }
    }
}

/// The toolchains directory: `iree-NAME/` toolchains (last used when their
/// `toolchain.json` was last read), their `.iree-NAME.lock` files,
/// lockstep's own uv (`uv/VERSION`, and `.uv/` of older lockstep versions,
/// kept), the build tools and lit's tools (with their locks); half-built `.iree-NAME.tmp-*` /
/// `.iree-NAME.old-*` directories (removed under the install lock); what
/// else is there is not lockstep's.
fn scan_toolchains(dir: &Path, items: &mut Vec<Item>, foreign: &mut Vec<PathBuf>) {
    for path in children(dir) {
        let name = lockstep_core::fs::file_name(&path);
        let is_dir = path.is_dir() && !path.is_symlink();
        if name == ".uv"
            || (is_dir && name == "uv")
            || (name.starts_with(".iree-") && name.ends_with(".lock"))
            || name.starts_with(".build-tools-")
            || name.starts_with(".lit-tools-")
        {
            continue;
        }
        if is_dir && name.starts_with("iree-") {
            let manifest = path.join("toolchain.json");
            items.push(Item {
                area: Area::Toolchains,
                size: size_of(&path),
                used: if manifest.is_file() {
                    modified(&manifest)
                } else {
                    modified(&path)
                },
                kind: Kind::Toolchain {
                    lock: dir.join(format!(".{name}.lock")),
                    half_built: false,
                },
                paths: vec![path],
            });
            continue;
        }
        let half_built = name
            .strip_prefix('.')
            .and_then(|rest| {
                rest.split_once(".tmp-")
                    .or_else(|| rest.split_once(".old-"))
            })
            .filter(|(stem, _)| stem.starts_with("iree-"));
        match half_built {
            Some((stem, _)) if is_dir => items.push(Item {
                area: Area::Toolchains,
                size: size_of(&path),
                used: modified(&path),
                kind: Kind::Toolchain {
                    lock: dir.join(format!(".{stem}.lock")),
                    half_built: true,
                },
                paths: vec![path],
            }),
            _ => foreign.push(path),
        }
    }
}

/// The compiler cache's directory: `sccache/` and `ccache/` in their tools'
/// own layouts (every file below is one object, last used when it was last
/// written: both tools rewrite or touch what they hit), their `.TOOL.lock`
/// files and `bin/` (the launcher and compiler shims `pkg build` rewrites
/// each build: neither an object nor foreign); anything else is not
/// lockstep's.
fn scan_compiler(dir: &Path, items: &mut Vec<Item>, foreign: &mut Vec<PathBuf>) {
    for path in children(dir) {
        let name = lockstep_core::fs::file_name(&path);
        let is_dir = path.is_dir() && !path.is_symlink();
        if name == ".sccache.lock" || name == ".ccache.lock" || (is_dir && name == "bin") {
            continue;
        }
        if is_dir && (name == "sccache" || name == "ccache") {
            let lock = dir.join(format!(".{name}.lock"));
            scan_objects(&path, &lock, 0, items);
        } else {
            foreign.push(path);
        }
    }
}

/// Every regular file under `dir` (a bounded depth: both tools nest two or
/// three levels) as one compiler-cache object.
fn scan_objects(dir: &Path, lock: &Path, depth: usize, items: &mut Vec<Item>) {
    if depth > 4 {
        return;
    }
    for path in children(dir) {
        let Ok(meta) = path.symlink_metadata() else {
            continue;
        };
        if meta.is_dir() {
            scan_objects(&path, lock, depth + 1, items);
        } else if meta.is_file() {
            items.push(Item {
                area: Area::Compiler,
                size: meta.len(),
                used: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                kind: Kind::CompilerObject {
                    lock: lock.to_path_buf(),
                },
                paths: vec![path],
            });
        }
    }
}

/// Group directories: two hex digits, or (kernels) a function name.
fn is_group(area: Area, name: &str) -> bool {
    match area {
        Area::Kernels => layout::is_group_name(name),
        _ => name.len() == 2 && name.bytes().all(|b| b.is_ascii_hexdigit()),
    }
}

/// Walks one group directory: seals first, then what they do not claim.
fn scan_group(area: Area, group: &Path, items: &mut Vec<Item>, foreign: &mut Vec<PathBuf>) {
    let files = children(group);
    let mut claimed: Vec<PathBuf> = Vec::new();
    for path in &files {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let Some(key) = name.strip_suffix(&format!(".{SEAL}")).and_then(Key::parse) else {
            continue;
        };
        if name != format!("{key}.{SEAL}") {
            continue;
        }
        let Some(seal) = Seal::read(path, key.as_str()) else {
            continue;
        };
        let mut paths = vec![path.clone()];
        for suffix in seal.files.keys().filter(|s| layout::is_suffix(s)) {
            let payload = group.join(format!("{key}.{suffix}"));
            if payload.exists() {
                paths.push(payload);
            }
        }
        claimed.extend(paths.iter().cloned());
        items.push(Item {
            area,
            size: seal.size(path),
            used: modified(path),
            kind: Kind::Entry {
                key,
                group: group.to_path_buf(),
            },
            paths,
        });
    }
    let mut legacy_by_key: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for path in files {
        if claimed.contains(&path) {
            continue;
        }
        let name = lockstep_core::fs::file_name(&path);
        if let Some(key) = layout::staging_key(&name).and_then(Key::parse) {
            items.push(Item {
                area,
                size: size_of(&path),
                used: modified(&path),
                kind: Kind::Staging { key },
                paths: vec![path],
            });
        } else if layout::is_legacy(area, &path, false) {
            let key = layout::key_of(&name).unwrap_or(&name).to_string();
            legacy_by_key.entry(key).or_default().push(path);
        } else {
            foreign.push(path);
        }
    }
    items.extend(legacy_by_key.into_values().map(|paths| legacy(area, paths)));
}

fn legacy(area: Area, paths: Vec<PathBuf>) -> Item {
    Item {
        area,
        size: paths.iter().map(|p| size_of(p)).sum(),
        // An old compile entry kept its last use in its `used` file.
        used: paths
            .iter()
            .map(|p| match p.join("used") {
                used if used.is_file() => modified(&used),
                _ => modified(p),
            })
            .max()
            .unwrap_or(SystemTime::UNIX_EPOCH),
        kind: Kind::Legacy,
        paths,
    }
}

/// The entries of a directory, sorted (none when it cannot be read).
fn children(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    paths.sort();
    paths
}

fn remove_paths(paths: &[PathBuf]) {
    for path in paths {
        let removed = if path.is_dir() && !path.is_symlink() {
            std::fs::remove_dir_all(path)
        } else {
            std::fs::remove_file(path)
        };
        if let Err(e) = removed {
            tracing::warn!("cannot remove {}: {e}", path.display());
        }
    }
}

/// Bytes of a file, or of everything below a directory (symlinks not followed).
fn size_of(path: &Path) -> u64 {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => children(path).iter().map(|p| size_of(p)).sum(),
        Ok(m) => m.len(),
        Err(_) => 0,
    }
}

fn modified(path: &Path) -> SystemTime {
    std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
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
    if mult == 0 || !(value >= 0.0 && value.is_finite()) || value * mult as f64 > u64::MAX as f64 {
        return Err(
            Error::usage(format!("invalid size `{text}`")).hint("write e.g. 500M, 2G or 1048576")
        );
    }
    Ok((value * mult as f64) as u64)
}

/// A size as people read it, in the units [`parse_size`] accepts: `0 B`,
/// `812 B`, `4.2K`, `1.5M`, `12G` (binary units).
pub fn format_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["K", "M", "G", "T"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value < 10.0 {
        format!("{value:.1}{}", UNITS[unit])
    } else {
        format!("{value:.0}{}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::KeyBuilder;

    fn put(cache: &Cache, area: Area, text: &str, name: Option<&str>, bytes: usize) -> Slot {
        let key = KeyBuilder::new(area, 1).part("t", text).finish();
        let slot = cache.bucket(area).slot(&key, name);
        let lock = slot.lock().unwrap();
        let mut stage = lock.stage();
        stage.write("bin", &vec![7u8; bytes]).unwrap();
        stage.commit(serde_json::Value::Null).unwrap();
        drop(lock);
        slot
    }

    fn age(slot: &Slot, days: u64) {
        let file = std::fs::File::options()
            .append(true)
            .open(slot.path("json"))
            .unwrap();
        file.set_modified(SystemTime::now() - Duration::from_secs(days * 86_400 + 60))
            .unwrap();
    }

    #[test]
    fn sizes_print_in_units_that_parse_back() {
        assert_eq!(format_size(0), "0 B");
        assert_eq!(format_size(812), "812 B");
        assert_eq!(format_size(4300), "4.2K");
        assert_eq!(format_size(3 << 30), "3.0G");
        assert_eq!(format_size(u64::MAX), "16777216T");
        for bytes in [1500u64, 5 << 20, 700 << 30] {
            let back = parse_size(&format_size(bytes)).unwrap();
            assert!(back.abs_diff(bytes) <= bytes / 20, "{bytes} -> {back}");
        }
    }

    #[test]
    fn sizes_parse_with_units() {
        assert_eq!(parse_size("123").unwrap(), 123);
        assert_eq!(parse_size("2K").unwrap(), 2048);
        assert_eq!(parse_size("1.5M").unwrap(), 3 << 19);
        assert_eq!(parse_size("1g").unwrap(), 1 << 30);
        for bad in ["", "x", "-1M", "2Q", "nanK", "1e30T"] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn prune_removes_old_then_least_recently_used_across_areas() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::at(dir.path());
        let a = put(&cache, Area::Compile, "a", None, 1000);
        let b = put(&cache, Area::Kernels, "b", Some("conv"), 1000);
        let c = put(&cache, Area::Compile, "c", None, 1000);
        let d = put(&cache, Area::Downloads, "d", None, 1000);
        age(&a, 40);
        age(&b, 3);
        age(&c, 2);
        age(&d, 1);
        let info = cache.info();
        assert_eq!(info.areas.iter().map(|a| a.entries).sum::<usize>(), 4);
        let seal = std::fs::metadata(a.path("json")).unwrap().len();
        let pruned = cache.prune(&Policy {
            max_size: Some(1500 + seal),
            older_than: Some(Duration::from_secs(30 * 86_400)),
        });
        let get = |name| {
            pruned
                .areas
                .iter()
                .find(|a| a.name == name)
                .unwrap()
                .clone()
        };
        // a is too old; b and c go for size (oldest first); d stays.
        assert_eq!(get("compile").removed, 2);
        assert_eq!(get("kernels").removed, 1);
        assert_eq!(get("downloads").kept, 1);
        assert!(b.get().is_none() && d.get().is_some());
        assert!(
            !dir.path().join("bench/conv").exists(),
            "empty group removed"
        );
    }

    #[test]
    fn foreign_files_are_named_and_kept_busy_entries_kept_staging_reclaimed() {
        let dir = tempfile::tempdir().unwrap();
        let boo = dir.path().join("boo");
        let mut cache = Cache::at(dir.path().join("cache"));
        cache.kernels = boo.clone();
        let mine = put(&cache, Area::Kernels, "k", Some("conv_x"), 100);
        std::fs::write(boo.join("conv_x/0123.vmfb"), b"BOO's module").unwrap();
        std::fs::write(boo.join("notes.txt"), b"mine, not lockstep's").unwrap();
        let busy = put(&cache, Area::Compile, "busy", None, 100);
        let held = busy.lock().unwrap();
        // A writer that died mid-stage.
        let dead = put(&cache, Area::Preprocess, "dead", None, 10);
        let lock = dead.lock().unwrap();
        let mut stage = lock.stage();
        stage.write("bin", b"half").unwrap();
        let staged: Vec<PathBuf> = children(dead.path("bin").parent().unwrap());
        std::mem::forget(stage);
        drop(lock);
        assert_eq!(staged.len(), 3, "{staged:?}");

        let info = cache.info();
        assert_eq!(
            info.foreign,
            vec![boo.join("conv_x/0123.vmfb"), boo.join("notes.txt")]
        );
        let pruned = cache.prune(&Policy {
            max_size: Some(0),
            older_than: None,
        });
        assert_eq!(pruned.foreign.len(), 2);
        assert!(mine.get().is_none());
        assert!(boo.join("conv_x/0123.vmfb").exists() && boo.join("notes.txt").exists());
        let compile = pruned.areas.iter().find(|a| a.name == "compile").unwrap();
        assert_eq!((compile.busy, compile.kept), (1, 1));
        drop(held);
        assert!(busy.get().is_some());
        let left = children(dead.path("bin").parent().unwrap());
        assert!(left.is_empty(), "{left:?}");
    }

    #[test]
    fn entries_of_earlier_versions_are_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::at(dir.path());
        let key = "ab".repeat(32);
        let old_compile = dir.path().join(format!("compile/ab/{key}"));
        std::fs::create_dir_all(&old_compile).unwrap();
        std::fs::write(old_compile.join("meta.json"), b"{}").unwrap();
        std::fs::create_dir_all(dir.path().join("compile/locks")).unwrap();
        let old_kernel = dir.path().join("bench/conv");
        std::fs::create_dir_all(&old_kernel).unwrap();
        std::fs::write(
            old_kernel.join(format!("{key}.json")),
            format!("{{\"key\": \"{key}\", \"module_sha256\": \"x\"}}"),
        )
        .unwrap();
        std::fs::write(old_kernel.join(format!("{key}.vmfb")), b"old").unwrap();
        std::fs::create_dir_all(dir.path().join("preprocess/ab")).unwrap();
        std::fs::write(
            dir.path().join(format!("preprocess/ab/{key}.mlir")),
            "// lockstep-preprocess-cache v1 x\nbody",
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("downloads")).unwrap();
        std::fs::write(dir.path().join(format!("downloads/{key}")), b"old").unwrap();
        let info = cache.info();
        assert!(info.foreign.is_empty(), "{:?}", info.foreign);
        assert_eq!(info.areas.iter().map(|a| a.entries).sum::<usize>(), 5);
        cache.prune(&Policy {
            max_size: Some(0),
            older_than: None,
        });
        let info = cache.info();
        assert_eq!(info.areas.iter().map(|a| a.bytes).sum::<u64>(), 0);
    }
}
