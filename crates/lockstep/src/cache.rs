//! `lockstep cache info` and `lockstep cache prune`: one view and one pruning
//! over every area of lockstep's cache (lockstep-cache does the work).

use std::time::Duration;

use lockstep_cache::{parse_size, Cache, Policy};
use lockstep_core::config::Loaded;
use lockstep_core::Error;

use lockstep_report::{Out, Reporters};

use crate::cli;

pub fn run(cmd: cli::Cache, loaded: &Loaded, rep: &Reporters) -> Result<i32, Error> {
    let cache = crate::config::cache(loaded)?;
    let out = rep.out();
    match cmd {
        cli::Cache::Info { json } => info(&cache, json, out),
        cli::Cache::Prune {
            max_size,
            older_than,
        } => prune(&cache, max_size.as_deref(), older_than, out),
    }
}

fn info(cache: &Cache, json: bool, out: Out) -> Result<i32, Error> {
    let info = cache.info();
    if json {
        // `Info` carries its own `schema`.
        let text = serde_json::to_string_pretty(&info)
            .map_err(|e| Error::failed("cannot encode the cache info").cause(e.to_string()))?;
        out.line(text);
        return Ok(0);
    }
    out.line(format!("cache: {}", info.root.display()));
    for area in &info.areas {
        out.line(format!(
            "{:<11} {:>6} entries {:>12} bytes  {}{}",
            area.name,
            area.entries,
            area.bytes,
            area.path.display(),
            if area.enabled {
                ""
            } else {
                " (off: BOO_CACHE_ON=0)"
            }
        ));
    }
    print_foreign(&info.foreign, out);
    Ok(0)
}

fn prune(
    cache: &Cache,
    max_size: Option<&str>,
    older_than: Option<u64>,
    out: Out,
) -> Result<i32, Error> {
    if max_size.is_none() && older_than.is_none() {
        return Err(Error::usage("nothing to prune by")
            .hint("give --max-size SIZE and/or --older-than DAYS"));
    }
    let policy = Policy {
        max_size: max_size.map(parse_size).transpose()?,
        older_than: older_than.map(|days| Duration::from_secs(days.saturating_mul(86_400))),
    };
    let pruned = cache.prune(&policy);
    for area in &pruned.areas {
        out.line(format!(
            "{}: removed {} entries ({} bytes); kept {} ({} bytes{}) in {}",
            area.name,
            area.removed,
            area.freed_bytes,
            area.kept,
            area.kept_bytes,
            if area.busy > 0 {
                format!(", {} in use", area.busy)
            } else {
                String::new()
            },
            area.path.display()
        ));
    }
    print_foreign(&pruned.foreign, out);
    Ok(0)
}

/// Names what lockstep found but did not create (and so leaves alone).
fn print_foreign(foreign: &[std::path::PathBuf], out: Out) {
    if foreign.is_empty() {
        return;
    }
    out.line(format!(
        "{} files in the cache areas are not lockstep's; left alone:",
        foreign.len()
    ));
    for path in foreign {
        out.line(format!("  {}", path.display()));
    }
}
