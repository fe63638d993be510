//! `lockstep bench`: flags into a lockstep-bench request (its events print
//! BOO's lines), then the result formats.

use lockstep_bench::session::{self, Request};
use lockstep_core::Error;

use crate::context::Ctx;
use lockstep_cmdline::BenchArgs;

pub fn run(args: BenchArgs, ctx: &Ctx) -> Result<i32, Error> {
    match args.action {
        Some(lockstep_cmdline::BenchAction::Compare(compare)) => return compare_runs(compare, ctx),
        Some(lockstep_cmdline::BenchAction::Bisect(bisect)) => return bisect_commits(*bisect, ctx),
        None => {}
    }
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
        compile_only: args.compile_only,
        bundle: args.bundle.map(|d| ctx.cwd.join(d)),
        from_bundle: args.from_bundle.map(|d| ctx.cwd.join(d)),
        no_cache: args.no_cache,
    };
    let prepared = session::prepare(&request, &ctx.section()?, ctx.sink())?;
    let recording = super::history::start(ctx, &args.record, lockstep_history::Kind::Bench, &[])?;
    let prepared = match recording {
        Some(_) => prepared.measuring_every_row(),
        None => prepared,
    };
    let toolchain = match prepared.runtime_only() {
        true => ctx.runtime_toolchain(args.iree_bin.as_deref())?,
        false => ctx.toolchain(args.iree_bin.as_deref())?,
    };
    let finished = session::run(prepared, &toolchain, &ctx.cache()?, ctx.sink())?;
    let summary = &finished.summary;
    let written = ctx
        .write_output("--csv", || {
            Ok(lockstep_bench::rows::csv(&summary.rows).into_bytes())
        })
        .and_then(|()| ctx.write_document("--json", summary));
    // Recorded whatever the outcome (and after the other outputs).
    lockstep_history::recorder::finish(
        recording,
        || lockstep_core::output::document(summary),
        Some(toolchain.identity.clone()),
        ctx.sink(),
    );
    written?;
    Ok(if summary.failed() > 0 { 1 } else { 0 })
}

/// `lockstep bench compare BASE NEW`: exit 1 when a kernel regressed.
fn compare_runs(args: lockstep_cmdline::BenchCompareArgs, ctx: &Ctx) -> Result<i32, Error> {
    use lockstep_bench::regressions;
    let rule = regressions::rule(&args.threshold, args.confidence)?;
    let (base, new) = regressions::load_sides(&args.base, &args.new, &ctx.cwd, ctx.sink())?;
    let report = regressions::compare(&base, &new, &rule);
    ctx.show(&report, lockstep_bench::human::compared)?;
    Ok(if report.regressions > 0 { 1 } else { 0 })
}

/// `lockstep bench bisect`: the first commit whose packages made a kernel
/// slower (lockstep-bench's bisect, handed lockstep-pkg's venvs).
fn bisect_commits(args: lockstep_cmdline::BenchBisectArgs, ctx: &Ctx) -> Result<i32, Error> {
    use lockstep_bench::bisect;
    let rule = bisect::rule(&args.threshold, args.max_repeats)?;
    let pkg: lockstep_pkg::config::PkgConfig = ctx.section()?;
    let uv = super::pkg::find_uv(ctx)?;
    let build = super::pkg::configured(ctx, &pkg, &uv)?;
    let venvs = lockstep_pkg::bisect::CommitVenvs::new(build, args.variant, args.python, &pkg);
    let request = bisect::BisectRequest {
        root: venvs.build.root,
        venvs: &venvs,
        good: args.good,
        bad: args.bad,
        bench: Request {
            commands_file: args.commands_file.map(|f| ctx.cwd.join(f)),
            device: args.device,
            compile_flags: args.compile_flags,
            timeout: args.timeout,
            threads: args.threads,
            ..Request::default()
        },
        kernels: args.kernels,
        max_repeats: args.max_repeats,
        rule,
        superproject: args.superproject,
    };
    let report = bisect::bisect(&request, &ctx.section()?, &ctx.cache()?, ctx.sink())?;
    ctx.show(&report, lockstep_bench::human::bisected)
}
