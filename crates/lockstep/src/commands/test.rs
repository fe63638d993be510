//! `lockstep test`: flags into a lockstep-suite request, then the plan, the
//! run, the summary and the result formats, and the run recorded in the
//! results history when asked (`--record`, `[history] dir`).

use lockstep_core::Error;
use lockstep_history::Kind;
use lockstep_suite::results;
use lockstep_suite::session::{self, Request};

use crate::cli::TestArgs;
use crate::context::Ctx;

pub fn run(args: TestArgs, ctx: &Ctx) -> Result<i32, Error> {
    if let Some(dir) = args.from_bundle.clone() {
        return run_bundle(args, ctx, &ctx.cwd.join(dir));
    }
    let bundle_dir = args.bundle.as_ref().map(|d| ctx.cwd.join(d));
    if let Some(dir) = &bundle_dir {
        lockstep_core::fs::require_new_or_empty_dir("--bundle", dir)?;
        if args.no_cache || args.update_xfails {
            return Err(Error::usage(
                "--bundle compiles into the bundle's own cache: give no --no-cache or --update-xfails",
            ));
        }
    }
    // Written through a link to the directory, never over the link.
    let bundle_dir = bundle_dir.map(|d| std::fs::canonicalize(&d).unwrap_or(d));
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
        skip_all_runs: args.skip_all_runs || bundle_dir.is_some(),
        update_xfails: args.update_xfails,
        lit: None,
        held: None,
    };
    let cfg = loaded.section()?;
    let suite_dirs = request.suite_dirs(&cfg, &loaded.root, &ctx.cwd);
    if let Some(dir) = &bundle_dir {
        lockstep_suite::bundle::check_destination(dir, &suite_dirs)?;
    }
    // lit lists a lit suite's tests: set up (from PyPI, once) only when
    // the paths hold one.
    let request = Request {
        lit: lit_program(ctx, &suite_dirs)?,
        ..request
    };
    let planned = session::plan(
        &request,
        &cfg,
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
        ctx.out().print(&planned.listing());
        ctx.sink().note(lockstep_core::words::count(
            planned.tests.len(),
            "test",
            "tests",
        ));
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
    let Some(dir) = bundle_dir else {
        let finished = session::run(planned, &toolchain, &ctx.cache()?, ctx.sink())?;
        return finish(ctx, finished, &toolchain, recording);
    };
    // A bundle: compiled into its own cache, then the suites, the [test]
    // table and the manifest beside them, built beside its place and moved
    // there whole.
    if let Some(why) = planned
        .tests
        .iter()
        .find(|t| t.compile.is_none() && t.lit.is_none())
        .and_then(|t| t.skip_reason.clone())
    {
        return Err(Error::usage(format!(
            "--bundle: nothing to compile for: {why}"
        )));
    }
    let targets = session::selected_targets(&request, &cfg)?;
    let tests = planned.tests.clone();
    let staged = lockstep_core::fs::StagedDir::beside(&dir)?;
    let finished = session::run(
        planned,
        &toolchain,
        &lockstep_suite::bundle::cache(staged.path()),
        ctx.sink(),
    )?;
    let written = lockstep_suite::bundle::write(
        staged.path(),
        &suite_dirs,
        lockstep_suite::bundle::test_table(loaded.path.as_deref())?,
        &tests,
        &targets,
        &toolchain,
        ctx.sink(),
    )?;
    staged
        .install()
        .map_err(|e| e.context(format!("cannot move the bundle into {}", dir.display())))?;
    ctx.sink().note(format!(
        "bundle written to {} ({} for {}, compiled by {}; bundle.json sha256 {})",
        dir.display(),
        lockstep_core::words::count(written.tests.len(), "test", "tests"),
        written.targets.join(", "),
        toolchain.compiler_stamp(),
        written.sha256
    ));
    finish(ctx, finished, &toolchain, recording)
}

/// `lockstep test --from-bundle DIR`: the bundle's tests, from its copied
/// suites and compiled modules, on the runtime's tools alone.
fn run_bundle(args: TestArgs, ctx: &Ctx, dir: &std::path::Path) -> Result<i32, Error> {
    if !args.paths.is_empty()
        || !args.targets.is_empty()
        || !args.suite_configs.is_empty()
        || args.skip_all_runs
        || args.update_xfails
        || args.no_cache
        || args.last_failed
    {
        return Err(Error::usage(
            "--from-bundle runs the bundle's own suites and targets: give no PATH, --target, --suite-config, --skip-all-runs, --update-xfails, --no-cache or --last-failed",
        )
        .hint("-k, -m, --shard, -j and --timeout still select and pace its tests"));
    }
    let manifest = lockstep_suite::bundle::load(dir)?;
    // What to compare with the sha256 printed where it was made.
    ctx.sink().note(format!(
        "running the bundle {} (bundle.json sha256 {})",
        dir.display(),
        manifest.sha256
    ));
    let (config, text) = lockstep_suite::bundle::config(dir)?;
    let loaded = crate::config::parse_at(&config, text)?;
    let cfg = loaded.section()?;
    let request = Request {
        paths: Vec::new(),
        suite_configs: Vec::new(),
        targets: manifest.targets.clone(),
        markers: args.markers,
        keyword: args.keyword,
        jobs: args.jobs,
        shard: args.shard,
        last_failed: false,
        timeout: args.timeout,
        no_cache: false,
        ignore_xfails: args.ignore_xfails,
        skip_all_runs: false,
        update_xfails: false,
        lit: None,
        // What it was made with (`-k`, `-m`, `--shard` there): those tests,
        // narrowed by this command line's.
        held: Some(lockstep_suite::bundle::held(&manifest)),
    };
    let planned = session::plan(
        &request,
        &cfg,
        &loaded.root,
        loaded.origin(),
        dir,
        ctx.sink(),
    )?;
    let read = planned.inputs();
    let read: Vec<(&str, &std::path::Path)> =
        read.iter().map(|(what, p)| (*what, p.as_path())).collect();
    ctx.inputs_read(&read)?;
    if planned.tests.is_empty() {
        ctx.sink().note("no tests selected");
        return Ok(0);
    }
    let mut toolchain = ctx.runtime_toolchain(args.iree_bin.as_deref())?;
    // The keys are the bundle's compiler's (the runtime here may have no
    // compiler at all).
    toolchain.identity = manifest.identity.clone();
    toolchain.compiler_version = manifest.compiler_version.clone();
    lockstep_suite::bundle::check(dir, &manifest, &planned.tests, &toolchain)?;
    let recording = super::history::start(ctx, &args.record, Kind::Test, &[])?;
    let finished = session::run(
        planned.without_compiles(),
        &toolchain,
        &lockstep_suite::bundle::cache(dir),
        ctx.sink(),
    )?;
    finish(ctx, finished, &toolchain, recording)
}

/// The summary, the result formats and the history record of a run.
fn finish(
    ctx: &Ctx,
    finished: session::Finished,
    toolchain: &lockstep_iree::Toolchain,
    recording: Option<lockstep_history::collect::Recording>,
) -> Result<i32, Error> {
    let report = &finished.report;
    let out = ctx.out();
    out.print(&results::console_summary(report));
    out.line(format!("logs: {}", finished.run_dir.display()));
    // An integrate's final check asks for the results here (by name).
    if let Some(path) = std::env::var_os(lockstep_integrate::final_checks::RESULTS_VAR) {
        lockstep_core::fs::write_atomic(
            std::path::Path::new(&path),
            results::json(report)?.as_bytes(),
        )?;
    }
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

/// lit and FileCheck when `dirs` hold a lit suite
/// ([`lockstep_suite::lit::find_suites`]).
fn lit_program(
    ctx: &Ctx,
    dirs: &[std::path::PathBuf],
) -> Result<Option<lockstep_suite::lit::LitProgram>, Error> {
    if !dirs
        .iter()
        .any(|d| !lockstep_suite::lit::find_suites(d).is_empty())
    {
        return Ok(None);
    }
    let uv = super::pkg::find_uv(ctx)?;
    let root = lockstep_core::paths::toolchains_dir()?;
    let tools = lockstep_python::tools::LitTools::ensure(&uv, &root, ctx.sink())?;
    Ok(Some(lockstep_suite::lit::LitProgram {
        lit: tools.lit,
        path: tools.path,
        identity: tools.pins,
    }))
}
