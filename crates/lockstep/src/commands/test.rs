//! `lockstep test`: flags into a lockstep-suite request, then the plan, the
//! run, the summary and the result formats, and the run recorded in the
//! results history when asked (`--record`, `[history] dir`).

use std::path::PathBuf;

use lockstep_core::Error;
use lockstep_history::Kind;
use lockstep_suite::results;
use lockstep_suite::session::{self, Request};

use crate::cli::TestArgs;
use crate::context::Ctx;

pub fn run(args: TestArgs, ctx: &Ctx) -> Result<i32, Error> {
    let loaded = ctx.loaded()?;
    let request = Request {
        paths: args.paths,
        suite_configs: args.suite_configs,
        targets: args.targets,
        markers: args.markers,
        keyword: args.keyword,
        jobs: args.jobs,
        shard: args.shard,
        last_failed: args.last_failed,
        timeout: args.timeout,
        no_cache: args.no_cache,
        ignore_xfails: args.ignore_xfails,
        skip_all_runs: args.skip_all_runs,
        update_xfails: args.update_xfails,
    };
    let suite_dirs = suite_dirs(&request, ctx)?;
    let planned = session::plan(
        &request,
        &loaded.section()?,
        &loaded.root,
        loaded.origin(),
        &ctx.cwd,
        ctx.sink(),
    )?;
    let read = planned.inputs();
    let read: Vec<(&str, &std::path::Path)> =
        read.iter().map(|(what, p)| (*what, p.as_path())).collect();
    ctx.inputs_read(&read)?;
    if args.list {
        for t in &planned.tests {
            ctx.out()
                .line(format!("{}  [{}]", t.id, t.markers.join(", ")));
        }
        ctx.sink().note(format!("{} tests", planned.tests.len()));
        return Ok(0);
    }
    if planned.tests.is_empty() {
        ctx.sink().note("no tests selected");
        return Ok(0);
    }
    let suites: Vec<(&str, &std::path::Path)> = suite_dirs
        .iter()
        .map(|d| ("the suite directory", d.as_path()))
        .collect();
    let recording = super::history::start(ctx, &args.record, Kind::Test, &suites)?;
    let toolchain = ctx.toolchain(args.iree_bin.as_deref())?;
    let finished = session::run(planned, &toolchain, &ctx.cache()?, ctx.sink())?;
    let report = &finished.report;
    let out = ctx.out();
    out.print(&results::console_summary(report));
    out.line(format!("logs: {}", finished.run_dir.display()));
    let written = (|| {
        ctx.write_output("--junit", || Ok(results::junit(report)?.into_bytes()))?;
        ctx.write_output("--json", || Ok(results::json(report)?.into_bytes()))?;
        results::write_summary(report, ctx.spec.target("--summary").as_ref())
    })();
    // Recorded whatever the outcome (and after the other outputs).
    lockstep_history::recorder::finish(
        recording,
        || results::json(report),
        Some(toolchain.identity.clone()),
        ctx.sink(),
    );
    written?;
    Ok(if report.failed() { 1 } else { 0 })
}

/// The suite directories the run reads (a results history must not be one
/// of them): the paths given, else `[test] paths`, else `suites/`.
fn suite_dirs(request: &Request, ctx: &Ctx) -> Result<Vec<PathBuf>, Error> {
    let loaded = ctx.loaded()?;
    let paths: Vec<PathBuf> = if !request.paths.is_empty() {
        request.paths.iter().map(|p| ctx.cwd.join(p)).collect()
    } else {
        let cfg: lockstep_suite::config::TestConfig = loaded.section()?;
        if cfg.paths.is_empty() {
            vec![loaded.root.join("suites")]
        } else {
            cfg.paths.iter().map(|p| loaded.root.join(p)).collect()
        }
    };
    Ok(paths.into_iter().filter(|p| p.is_dir()).collect())
}
