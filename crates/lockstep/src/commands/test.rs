//! `lockstep test`: flags into a lockstep-suite request (planned and run in
//! its mode: here, into a bundle, a bundle's tests), then the summary, the
//! result formats, and the run recorded in the results history when asked
//! (`--record`, `[history] dir`).

use lockstep_core::Error;
use lockstep_history::Kind;
use lockstep_suite::results;
use lockstep_suite::session::{self, Request};

use crate::context::Ctx;
use lockstep_cmdline::TestArgs;

pub fn run(args: TestArgs, ctx: &Ctx) -> Result<i32, Error> {
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
        refresh_downloads: args.refresh_downloads,
        bundle: args.bundle.map(|d| ctx.cwd.join(d)),
        from_bundle: args.from_bundle.map(|d| ctx.cwd.join(d)),
        ..Request::default()
    };
    let mode = session::mode(&request, ctx.sink())?;
    let bundled = mode.config(crate::config::SECTIONS)?;
    let loaded = match &bundled {
        Some(loaded) => loaded,
        None => ctx.loaded()?,
    };
    let request = Request {
        wheels: wheels(args.wheels.as_deref(), loaded, ctx)?,
        durations: match request.shard {
            Some(_) => durations(&args.record, ctx)?,
            None => None,
        },
        ..request
    };
    let prepared = session::prepare(request, mode, loaded, &ctx.cwd, ctx.sink())?;
    let (planned, read) = (&prepared.planned, prepared.planned.inputs());
    let read: Vec<_> = read.iter().map(|(what, p)| (*what, p.as_path())).collect();
    ctx.inputs_read(&read)?;
    if args.list {
        ctx.out().print(&planned.listing());
        let count = lockstep_core::words::count(planned.tests.len(), "test", "tests");
        ctx.sink().note(count);
        return Ok(0);
    }
    if planned.tests.is_empty() {
        ctx.sink().note("no tests selected");
        return Ok(0);
    }
    let flag = args.iree_bin.as_deref();
    // A bundle's runtime is checked against it before anything is recorded.
    let runtime = match prepared.runtime_only() {
        true => Some(prepared.bundle_runtime(ctx.runtime_toolchain(flag)?)?),
        false => None,
    };
    let recording = super::history::start(ctx, &args.record, Kind::Test, &prepared.suites())?;
    let pytest_only = planned.tests.iter().all(|t| t.pytest.is_some());
    let toolchain = match runtime {
        Some(runtime) => runtime,
        None if pytest_only && flag.is_none() => lockstep_iree::Toolchain::absent(),
        None => ctx.toolchain(flag)?,
    };
    let finished = session::execute(prepared, &toolchain, &ctx.cache()?, ctx.sink())?;
    let report = &finished.report;
    ctx.out().print(&finished.human());
    // An integrate's final check asks for the results here (by name).
    if let Some(path) = std::env::var_os(lockstep_integrate::final_checks::RESULTS_VAR) {
        let json = results::json(report)?;
        lockstep_core::fs::write_atomic(std::path::Path::new(&path), json.as_bytes())?;
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

/// The wheelhouse manifest `[[test.pytest]]` suites run against: `--wheels`
/// (relative to the working directory; it must exist), else the `[pkg]`
/// wheelhouse's `pylock.toml` when there is one.
fn wheels(
    flag: Option<&std::path::Path>,
    loaded: &lockstep_core::config::Loaded,
    ctx: &Ctx,
) -> Result<Option<std::path::PathBuf>, Error> {
    if let Some(flag) = flag {
        let path = ctx.cwd.join(flag);
        if !path.is_file() {
            return Err(
                Error::usage(format!("--wheels {}: no such manifest", flag.display()))
                    .hint("name the pylock.toml `lockstep pkg build` wrote (in its wheelhouse)"),
            );
        }
        return Ok(Some(path));
    }
    let pkg: lockstep_pkg::config::PkgConfig = loaded.section()?;
    let default = loaded
        .root
        .join(&pkg.out)
        .join(lockstep_python::pylock::FILE);
    Ok(default.is_file().then_some(default))
}

/// The recorded test times `--shard` balances by: those of the results
/// history (`--record DIR`, else `[history] dir`) when it exists and holds
/// unsharded test runs (`lockstep_history::durations`).
fn durations(
    record: &lockstep_cmdline::Record,
    ctx: &Ctx,
) -> Result<Option<std::collections::BTreeMap<String, f64>>, Error> {
    let dir = match &record.record {
        Some(dir) => Some(ctx.cwd.join(dir)),
        None => super::history::configured_dir(ctx)?,
    };
    let Some(dir) = dir.filter(|d| d.is_dir()) else {
        return Ok(None);
    };
    let loaded = lockstep_history::load(&dir)?;
    let durations = lockstep_history::durations::test_durations(&loaded);
    if durations.is_empty() {
        return Ok(None);
    }
    ctx.sink().note(format!(
        "--shard: balanced by the recorded times of {} in {}",
        lockstep_core::words::count(durations.len(), "test", "tests"),
        dir.display()
    ));
    Ok(Some(durations))
}
