//! `lockstep cache info` and `lockstep cache prune`: one view and one pruning
//! over every area of lockstep's cache (lockstep-cache does the work).

use std::time::Duration;

use lockstep_cache::{format_size, parse_size, Policy};
use lockstep_core::Error;
use lockstep_report::Out;

use crate::cli;
use crate::context::Ctx;

pub fn run(cmd: cli::Cache, ctx: &Ctx) -> Result<i32, Error> {
    let cache = ctx.cache()?;
    match cmd {
        cli::Cache::Info { json: _ } => {
            let info = cache.info();
            ctx.result(&info, |out| {
                out.line(format!("cache: {}", info.root.display()));
                for area in &info.areas {
                    out.line(format!(
                        "{:<11} {:>6} entries {:>8}  {}{}",
                        area.name,
                        area.entries,
                        format_size(area.bytes),
                        area.path.display(),
                        if area.enabled {
                            ""
                        } else {
                            " (off: BOO_CACHE_ON=0)"
                        }
                    ));
                }
                print_foreign(&info.foreign, out);
            })?;
            Ok(0)
        }
        cli::Cache::Prune {
            max_size,
            older_than,
        } => {
            if max_size.is_none() && older_than.is_none() {
                return Err(Error::usage("nothing to prune by")
                    .hint("give --max-size SIZE and/or --older-than DAYS"));
            }
            let policy = Policy {
                max_size: max_size.as_deref().map(parse_size).transpose()?,
                older_than: older_than.map(|days| Duration::from_secs(days.saturating_mul(86_400))),
            };
            let pruned = cache.prune(&policy);
            let out = ctx.out();
            for area in &pruned.areas {
                out.line(format!(
                    "{}: removed {} entries ({}); kept {} ({}{}) in {}",
                    area.name,
                    area.removed,
                    format_size(area.freed_bytes),
                    area.kept,
                    format_size(area.kept_bytes),
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
    }
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
