//! `lockstep demo`: every area's part of the story, told by lockstep-demo
//! (its story goes where human output goes).

use lockstep_core::Error;

use crate::context::Ctx;
use lockstep_cmdline::DemoArgs;

pub fn run(args: DemoArgs, ctx: &Ctx) -> Result<i32, Error> {
    let ok = lockstep_demo::run(args.dir.as_deref(), ctx.sink(), &mut ctx.out())?;
    Ok(if ok { 0 } else { 1 })
}
