//! `lockstep cache info` and `lockstep cache prune`: one view and one pruning
//! over every area of lockstep's cache (lockstep-cache does the work and
//! says how it reads).

use lockstep_cache::{human, Policy};
use lockstep_core::Error;

use crate::context::Ctx;
use lockstep_cmdline as cli;

pub fn run(cmd: cli::Cache, ctx: &Ctx) -> Result<i32, Error> {
    let cache = ctx.cache()?;
    match cmd {
        cli::Cache::Info { json: _ } => ctx.show(&cache.info(), human::info),
        cli::Cache::Prune {
            max_size,
            older_than,
        } => {
            let policy = Policy::from_flags(max_size.as_deref(), older_than)?;
            ctx.out().print(&human::pruned(&cache.prune(&policy)));
            Ok(0)
        }
    }
}
