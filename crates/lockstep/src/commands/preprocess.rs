//! `lockstep preprocess`: flags into a lockstep-preprocess request, the
//! direct form (results with `--json FILE`) or the `--wrap` form.

use lockstep_core::Error;
use lockstep_preprocess::session::{self, Request};

use crate::context::Ctx;
use lockstep_cmdline::PreprocessArgs;

pub fn run(args: PreprocessArgs, ctx: &Ctx) -> Result<i32, Error> {
    let loaded = ctx.loaded()?;
    let request = Request {
        input: args.input,
        output: args.output,
        with: args.with,
        with_shell: args.with_shell,
        jobs: args.jobs,
        no_cache: args.no_cache,
        only: args.only,
        only_target: args.only_target,
        with_inputs: args.with_inputs,
        no_batch: args.no_batch,
        timeout: args.timeout,
        keep_temps: args.keep_temps,
        compile: args.compile,
        wrap: args.wrap,
        rest: args.rest,
    };
    let cfg = loaded.section()?;
    let cache = ctx.cache()?;
    if request.wrap {
        session::wrap(
            &request,
            &cfg,
            &cache,
            &ctx.cwd,
            &mut std::io::stdin().lock(),
            &mut std::io::stdout().lock(),
        )?;
        return Ok(0);
    }
    let prepared = session::prepare(&request, &cfg, &cache, &loaded.root, &ctx.cwd)?;
    let toolchain = ctx.toolchain(args.iree_bin.as_deref())?;
    let report = session::run(prepared, &toolchain, ctx.sink())?;
    ctx.write_document("--json", &report)?;
    Ok(0)
}
