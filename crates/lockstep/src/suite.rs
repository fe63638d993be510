//! `lockstep test`: resolve options, plan, call lockstep-suite's runner with
//! the reporters, write the reports.

use std::path::{Path, PathBuf};

use lockstep_core::config::Loaded;
use lockstep_core::output::{self, Target};
use lockstep_core::Error;
use lockstep_report::test_results as report;
use lockstep_report::Reporters;
use lockstep_suite::history::{self, History};
use lockstep_suite::markers::MarkerExpr;
use lockstep_suite::plan::{self, Selection};
use lockstep_suite::runner::{self, RunOptions};
use lockstep_suite::sources::SuiteConfig;
use lockstep_suite::xfails;

use crate::cli;

pub fn run(
    args: cli::TestArgs,
    loaded: &Loaded,
    cwd: &Path,
    rep: &Reporters,
) -> Result<i32, Error> {
    let out = rep.out();
    let cfg: lockstep_suite::config::TestConfig = loaded.section()?;
    let cfg = &cfg;
    let paths = suite_paths(&args, loaded, cwd)?;
    let config_paths: Vec<PathBuf> = if args.suite_configs.is_empty() {
        cfg.suite_configs
            .iter()
            .map(|p| loaded.root.join(p))
            .collect()
    } else {
        args.suite_configs.clone()
    };
    let configs = config_paths
        .iter()
        .map(|p| SuiteConfig::load(p))
        .collect::<Result<Vec<_>, _>>()?;
    let origin = loaded.path.as_deref().unwrap_or(Path::new("lockstep.toml"));
    plan::check_test_config(cfg, origin)?;
    if args.update_xfails {
        xfails::check_updatable(&configs)?;
    }
    let known = plan::targets(cfg);
    for config in configs.iter().filter(|c| c.json5_in_json) {
        (rep as &dyn lockstep_core::events::Sink).note(format!(
            "{} is JSON5, not JSON (comments, trailing commas or unquoted keys): read as JSON5",
            config.path.display()
        ));
    }
    let target_names: Vec<String> = if !args.targets.is_empty() {
        args.targets.clone()
    } else if !cfg.default_targets.is_empty() {
        cfg.default_targets.clone()
    } else {
        vec!["cpu".into()]
    };
    let targets = target_names
        .iter()
        .map(|n| {
            known.get(n).cloned().ok_or_else(|| {
                Error::usage(format!("unknown target `{n}`")).hint(format!(
                    "known targets: {} (define more in [test.targets.NAME])",
                    known.keys().cloned().collect::<Vec<_>>().join(", ")
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let markers = args.markers.as_deref().map(MarkerExpr::parse).transpose()?;
    let shard = args.shard.as_deref().map(plan::parse_shard).transpose()?;
    let jobs = lockstep_core::pool::jobs(args.jobs, "-j")?;
    let compile_timeout = RunOptions::timeout_from_flag(args.timeout, cfg.compile_timeout)?;
    let run_timeout = RunOptions::timeout_from_flag(args.timeout, cfg.run_timeout)?;
    let mut history = History::open(cwd)?;
    let sink: &dyn lockstep_core::events::Sink = rep;
    let only = if args.last_failed {
        let failed = history.failed();
        if failed.is_empty() {
            sink.note("no failures recorded from the last run; running every selected test");
            None
        } else {
            Some(failed)
        }
    } else {
        None
    };
    let selection = Selection {
        configs,
        targets,
        markers,
        keyword: args.keyword.clone(),
        shard,
        only,
        skip_all_runs: args.skip_all_runs,
        ignore_xfails: args.ignore_xfails,
        known_targets: known.keys().cloned().collect(),
    };
    let tests = plan::plan(&paths, &selection, sink)?;
    if args.list {
        for t in &tests {
            out.line(format!("{}  [{}]", t.id, t.markers.join(", ")));
        }
        sink.note(format!("{} tests", tests.len()));
        return Ok(0);
    }
    if tests.is_empty() {
        sink.note("no tests selected");
        return Ok(0);
    }
    let tc = crate::toolchain::resolve(args.iree_bin.as_deref(), loaded, rep)?;
    let run_dir = history::state_dir(cwd).join("test-runs").join(
        jiff::Timestamp::now()
            .strftime("%Y%m%dT%H%M%S%.3f")
            .to_string(),
    );
    let opts = RunOptions {
        jobs,
        compile_timeout,
        run_timeout,
        no_cache: args.no_cache,
        run_dir: run_dir.clone(),
    };
    let mut report = runner::run(&tests, &tc, &crate::config::cache(loaded)?, &opts, sink)?;
    report.changes = history.record(&report)?;
    out.print(&report::console_summary(&report));
    out.line(format!("logs: {}", run_dir.display()));
    if let Some(path) = &args.junit {
        output::write_as(
            "--junit",
            &Target::parse(path),
            report::junit(&report)?.as_bytes(),
        )?;
    }
    if let Some(path) = &args.json {
        output::write_as(
            "--json",
            &Target::parse(path),
            report::json(&report)?.as_bytes(),
        )?;
    }
    report::write_summary(&report, args.summary.as_deref().map(Target::parse).as_ref())?;
    if args.update_xfails {
        for updated in xfails::update(&tests, &report)? {
            sink.note(format!(
                "updated {}: {} expected compile failures, {} expected run failures",
                updated.path.display(),
                updated.compile,
                updated.run
            ));
        }
    }
    Ok(if report.failed() { 1 } else { 0 })
}

/// PATH arguments, else `[test] paths`, else `suites/` next to lockstep.toml.
fn suite_paths(args: &cli::TestArgs, loaded: &Loaded, cwd: &Path) -> Result<Vec<PathBuf>, Error> {
    if !args.paths.is_empty() {
        return Ok(args.paths.iter().map(|p| cwd.join(p)).collect());
    }
    let test: lockstep_suite::config::TestConfig = loaded.section()?;
    if !test.paths.is_empty() {
        return Ok(test.paths.iter().map(|p| loaded.root.join(p)).collect());
    }
    let default = loaded.root.join("suites");
    if default.is_dir() {
        return Ok(vec![default]);
    }
    Err(
        Error::usage("no tests to run: give suite directories or files")
            .hint("lockstep test path/to/suite, or set [test] paths in lockstep.toml"),
    )
}

/// The test part of `lockstep demo`: the embedded smoke suite on the CPU.
pub fn demo(rep: &Reporters) -> Result<i32, Error> {
    let smoke = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../suites/smoke");
    let out = rep.out();
    out.line("\n== lockstep test suites/smoke (the embedded smoke suite, real IREE compiler and runtime)");
    if !smoke.is_dir() {
        out.line("   suites/smoke is not here: run the demo from a lockstep checkout");
        return Ok(0);
    }
    let cwd = std::env::current_dir()?;
    let loaded = crate::config::load(None, &smoke)?;
    let args = cli::TestArgs {
        paths: vec![smoke.clone()],
        suite_configs: vec![],
        targets: vec![],
        markers: None,
        keyword: None,
        jobs: None,
        shard: None,
        list: false,
        last_failed: false,
        timeout: None,
        junit: None,
        json: None,
        summary: None,
        no_cache: false,
        ignore_xfails: false,
        skip_all_runs: false,
        update_xfails: false,
        iree_bin: None,
    };
    run(args, &loaded, &cwd, rep)
}
