//! `lockstep cache prune`: one pruning over every cache lockstep keeps (the
//! compile cache of `lockstep test`, the kernel cache of `lockstep bench`
//! and the preprocessing cache), least recently used first.

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
    let bench = lockstep_bench::cache::dir(loaded);
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
