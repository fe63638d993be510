//! `lockstep init`: lockstep-init's survey written as lockstep.toml (or
//! printed, `--dry-run`), checked first by every table's loader.

use lockstep_core::Error;

use crate::context::Ctx;
use lockstep_cmdline::InitArgs;

pub fn run(args: InitArgs, ctx: &Ctx) -> Result<i32, Error> {
    let dir = match &args.dir {
        Some(dir) => ctx.cwd.join(dir),
        None => ctx.cwd.clone(),
    };
    let iree = lockstep_iree::config::DEFAULT_IREE_VERSION;
    let sections = crate::config::SECTIONS;
    let made = lockstep_init::make(&dir, args.pin.as_deref(), iree, sections)?;
    if args.dry_run {
        ctx.out().print(&made.text);
        return Ok(0);
    }
    lockstep_init::write_new(&made.path, &made.text)?;
    ctx.out().print(&lockstep_init::human::written(&made));
    Ok(0)
}
