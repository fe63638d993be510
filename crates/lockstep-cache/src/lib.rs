//! lockstep's one content-addressed cache, in the spirit of uv's `uv-cache`:
//! one [`Cache`] value handed to every engine, named [`Area`]s (compiled test
//! modules, bench kernels, preprocessed executables, downloads, bench
//! reference outputs, built wheels), one key builder ([`KeyBuilder`]), one entry protocol
//! ([`Slot`]: stage, fsync, rename, seal with size and sha256, verify on read,
//! rebuild a corrupt entry, per-entry locks) and one `info` / `prune` over
//! every area ([`maintain`]).
//!
//! Where each area lives is decided here and nowhere else: under
//! `$LOCKSTEP_CACHE` (default `$LOCKSTEP_HOME/cache`), except the kernel area,
//! which `$LOCKSTEP_KERNEL_CACHE_DIR`, `$BOO_CACHE_DIR` or `[bench] cache-dir`
//! may move (and `LOCKSTEP_KERNEL_CACHE=0` or `BOO_CACHE_ON=0` turn off), as
//! BOO's driver does.
//!
//! lockstep only ever removes files it recognises as its own (sealed entries,
//! its staging files, its lock stripes and the layouts of earlier lockstep
//! versions); anything else found in an area is *foreign*: listed by `info`
//! and `prune`, never touched. This crate knows nothing of what the entries
//! mean: engines give it bytes and metadata.

// Unit tests start their fixtures' processes directly; product code goes
// through lockstep_core::process (clippy.toml), checked without cfg(test).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod download;
pub mod human;
mod key;
mod layout;
pub mod maintain;
mod slot;

use std::path::{Path, PathBuf};

pub use key::{Key, KeyBuilder};
pub use maintain::{format_size, parse_size, AreaInfo, Info, Policy, Pruned, PrunedArea};
pub use slot::{Entry, Slot, SlotLock, Stage};

/// Moves the kernel area (lockstep's own name for `BOO_CACHE_DIR`).
pub const ENV_KERNEL_CACHE_DIR: &str = "LOCKSTEP_KERNEL_CACHE_DIR";
/// `0` turns the kernel area off (lockstep's own name for `BOO_CACHE_ON`).
pub const ENV_KERNEL_CACHE: &str = "LOCKSTEP_KERNEL_CACHE";

/// A named part of the cache, with its own directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Area {
    /// Modules compiled by `lockstep test` (and cached compile failures).
    Compile,
    /// Kernels compiled by `lockstep bench`, in BOO's layout.
    Kernels,
    /// Executables preprocessed by `lockstep preprocess`.
    Preprocess,
    /// Files downloaded by URL and checked against their sha256.
    Downloads,
    /// The f64 reference outputs `lockstep bench --verify` compares with.
    References,
    /// Rows `lockstep bench` timed and verified cleanly, keyed by all they
    /// depend on: what a warm rerun answers from.
    Results,
    /// Wheels built by `lockstep pkg build`, keyed by the commit's tree, the
    /// package, the version, the interpreter and the variant's settings.
    Wheels,
    /// IREE toolchains lockstep provisioned (`iree-VERSION/`, `iree-set-KEY/`
    /// in `$LOCKSTEP_TOOLCHAINS`, installed by lockstep-iree under
    /// `.iree-NAME.lock`): whole directories, pruned like entries.
    Toolchains,
    /// The compiler cache native package builds run under (`sccache/` or
    /// `ccache/`, in the tool's own layout, used under `.TOOL.lock`): each
    /// object file is pruned like an entry.
    Compiler,
}

impl Area {
    /// Every area, in the order `info` and `prune` list them.
    pub const ALL: [Area; 9] = [
        Area::Compile,
        Area::Kernels,
        Area::Preprocess,
        Area::Downloads,
        Area::References,
        Area::Results,
        Area::Wheels,
        Area::Toolchains,
        Area::Compiler,
    ];

    /// The area's name in output and in keys.
    pub fn name(self) -> &'static str {
        match self {
            Area::Compile => "compile",
            Area::Kernels => "kernels",
            Area::Preprocess => "preprocess",
            Area::Downloads => "downloads",
            Area::References => "references",
            Area::Results => "results",
            Area::Wheels => "wheels",
            Area::Toolchains => "toolchains",
            Area::Compiler => "compiler",
        }
    }

    /// Its directory under the cache root (the kernel area's keeps the name
    /// it had before areas had names, so existing caches stay where they are).
    fn dir_name(self) -> &'static str {
        match self {
            Area::Kernels => "bench",
            other => other.name(),
        }
    }
}

/// Whether `rel` (a path relative to a cache's root, `/`-separated) is in
/// an area's lock directory: lock stripes are how writers meet, not what
/// the cache holds (a bundle's listing leaves them out).
pub fn is_lock_path(rel: &str) -> bool {
    rel.split('/').any(|part| part == layout::LOCKS)
}

/// The name of the tag file that tells backup tools to skip a directory
/// (<https://bford.info/cachedir/>).
pub const CACHEDIR_TAG: &str = "CACHEDIR.TAG";

const CACHEDIR_TAG_TEXT: &str = "Signature: 8a477f597d28d172789f06886806bc55\n\
# This file is a cache directory tag created by lockstep.\n\
# For information about cache directory tags see https://bford.info/cachedir/\n";

/// Where every area lives. Cheap to clone; hand one to every engine.
#[derive(Debug, Clone)]
pub struct Cache {
    root: PathBuf,
    kernels: PathBuf,
    kernels_on: bool,
    toolchains: PathBuf,
}

impl Cache {
    /// Everything under `root` (the kernel area at `root/bench`, on; the
    /// toolchains at `root/toolchains`).
    pub fn at(root: impl Into<PathBuf>) -> Cache {
        let root = root.into();
        Cache {
            kernels: root.join(Area::Kernels.dir_name()),
            toolchains: root.join(Area::Toolchains.dir_name()),
            root,
            kernels_on: true,
        }
    }

    /// The cache as a command sees it: `$LOCKSTEP_CACHE`; the kernel area at
    /// `$LOCKSTEP_KERNEL_CACHE_DIR`, else `$BOO_CACHE_DIR`, else
    /// `kernels_configured` (`[bench] cache-dir`, which the bench engine
    /// resolves), else `$LOCKSTEP_CACHE/bench`; `LOCKSTEP_KERNEL_CACHE=0`
    /// (else `BOO_CACHE_ON=0`) turns the kernel area off. The Python
    /// package reads the same variables, so both share one kernel cache.
    pub fn from_env(kernels_configured: Option<PathBuf>) -> Cache {
        let mut cache = Cache::at(lockstep_core::paths::cache());
        let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let dir = set(ENV_KERNEL_CACHE_DIR).or_else(|| set("BOO_CACHE_DIR"));
        if let Some(dir) = dir.map(PathBuf::from).or(kernels_configured) {
            cache.kernels = dir;
        }
        let switch = std::env::var(ENV_KERNEL_CACHE)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .or_else(|| std::env::var("BOO_CACHE_ON").ok());
        cache.kernels_on = switch.is_none_or(|v| v.trim() != "0");
        // Toolchains keep their own variable: tests share them while
        // isolating everything else.
        cache.toolchains = std::path::absolute(lockstep_core::paths::toolchains())
            .unwrap_or_else(|_| lockstep_core::paths::toolchains());
        cache
    }

    /// The same cache with the kernel area at `dir`, on (the Python
    /// package's resolved kernel cache).
    pub fn with_kernels_at(mut self, dir: impl Into<PathBuf>) -> Cache {
        self.kernels = dir.into();
        self.kernels_on = true;
        self
    }

    /// `$LOCKSTEP_CACHE` (or what [`Cache::at`] was given).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory of `area`.
    pub fn dir(&self, area: Area) -> PathBuf {
        match area {
            Area::Kernels => self.kernels.clone(),
            Area::Toolchains => self.toolchains.clone(),
            other => self.root.join(other.dir_name()),
        }
    }

    /// Whether `area` is in use (only the kernel area can be off).
    pub fn is_on(&self, area: Area) -> bool {
        area != Area::Kernels || self.kernels_on
    }

    /// The area's entries, whether the area is on or not (`info` and `prune`
    /// see every area).
    pub fn bucket(&self, area: Area) -> Bucket {
        Bucket {
            area,
            dir: self.dir(area),
        }
    }

    /// The area's entries, or `None` when the area is off.
    pub fn enabled(&self, area: Area) -> Option<Bucket> {
        self.is_on(area).then(|| self.bucket(area))
    }
}

/// Writes `CACHEDIR.TAG` in `root` once (best effort: a read-only cache still
/// works). Only lockstep's own root gets one: a directory shared with others
/// (the kernel area under `$BOO_CACHE_DIR`) is left as it is.
fn tag_root(root: &Path) {
    let tag = root.join(CACHEDIR_TAG);
    if !tag.exists() {
        let _ = lockstep_core::fs::write_atomic(&tag, CACHEDIR_TAG_TEXT.as_bytes());
    }
}

/// One area's directory: where its entries are addressed ([`Bucket::slot`]).
#[derive(Debug, Clone)]
pub struct Bucket {
    area: Area,
    dir: PathBuf,
}

impl Bucket {
    pub fn area(&self) -> Area {
        self.area
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The entry `key` (for the kernel area, in the directory `name`, the
    /// kernel's function name, as BOO lays it out; other areas shard by the
    /// key's first two hex digits and ignore `name`).
    pub fn slot(&self, key: &Key, name: Option<&str>) -> Slot {
        let group = match (self.area, name) {
            (Area::Kernels, Some(name)) if layout::is_group_name(name) => name.to_string(),
            _ => key.as_str()[..2].to_string(),
        };
        Slot::new(self.area, self.dir.join(group), &self.dir, key.clone())
    }
}
