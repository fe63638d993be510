//! `lockstep bench`: flags into a lockstep-bench request (its events print
//! BOO's lines), then the result formats.

use lockstep_bench::session::{self, Request};
use lockstep_core::Error;

use crate::cli::BenchArgs;
use crate::context::Ctx;

pub fn run(args: BenchArgs, ctx: &Ctx) -> Result<i32, Error> {
    let request = Request {
        commands_file: args.commands_file,
        command: args.command,
        verify: args.verify,
        jobs: args.jobs,
        device: args.device,
        compile_flags: args.compile_flags,
        timeout: args.timeout,
        threads: args.threads,
        splat_input_value: args.splat_input_value,
        max_bytes: args.max_bytes,
    };
    let prepared = session::prepare(&request, &ctx.section()?, ctx.sink())?;
    let toolchain = ctx.toolchain(args.iree_bin.as_deref())?;
    let finished = session::run(prepared, &toolchain, &ctx.cache()?, ctx.sink())?;
    let summary = &finished.summary;
    ctx.write_output("--csv", || {
        Ok(lockstep_bench::rows::csv(&summary.rows).into_bytes())
    })?;
    ctx.write_document("--json", summary)?;
    Ok(if summary.failed() > 0 { 1 } else { 0 })
}
