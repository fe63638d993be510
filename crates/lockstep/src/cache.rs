//! `lockstep cache prune`: one pruning over every cache lockstep keeps (the
//! compile cache of `lockstep test`, the kernel cache of `lockstep bench`
//! and the preprocessing cache), least recently used first.

use std::path::PathBuf;

use lockstep_core::cache::{self, Item};
use lockstep_core::config::Loaded;
use lockstep_core::Error;
use lockstep_suite::cache::CompileCache;

use crate::cli;

pub fn run(cmd: cli::Cache, loaded: &Loaded) -> Result<i32, Error> {
    let cli::Cache::Prune {
        max_size,
        older_than,
    } = cmd;
    if max_size.is_none() && older_than.is_none() {
        return Err(Error::usage("nothing to prune by")
            .hint("give --max-size SIZE and/or --older-than DAYS"));
    }
    let max = max_size.as_deref().map(cache::parse_size).transpose()?;
    let compile = CompileCache::default_location();
    let bench = bench_root(loaded);
    let preprocess = lockstep_preprocess::cache::Cache::default_location();
    let mut items: Vec<Item> = compile.items();
    items.extend(lockstep_bench::cache::items(&bench));
    items.extend(preprocess.items());
    let pruned = cache::prune(items, max, older_than);
    let roots = [
        ("compile", compile.root()),
        ("bench", bench.as_path()),
        ("preprocess", preprocess.root()),
    ];
    for (name, root) in roots {
        let counts = pruned
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, c)| c.clone())
            .unwrap_or_default();
        println!(
            "{name}: removed {} entries ({} bytes); kept {} ({} bytes) in {}",
            counts.removed,
            counts.freed_bytes,
            counts.kept,
            counts.kept_bytes,
            root.display()
        );
    }
    Ok(0)
}

/// The bench cache's directory, found as `lockstep bench` finds it
/// (`BOO_CACHE_DIR`, `[bench] cache-dir`, `$LOCKSTEP_CACHE/bench`); its
/// default place when `BOO_CACHE_ON=0`, since pruning never fills it.
fn bench_root(loaded: &Loaded) -> PathBuf {
    let configured = loaded
        .config
        .bench
        .cache_dir
        .as_ref()
        .map(|dir| loaded.root.join(dir));
    lockstep_bench::cache::location(configured.as_deref())
        .unwrap_or_else(|| lockstep_core::paths::cache().join("bench"))
}
