//! One `lockstep test` from request to results: which suites and configs,
//! which targets, markers, keyword and shard (resolved against `[test]`),
//! the plan, then the run with its history, run directory and expected-
//! failure updates. The demo and CI use the two calls [`plan`] and [`run`].
//!
//! The command line adds where it compiles and runs ([`Mode`]: here, into
//! a bundle, a bundle's tests): its flags checked before lockstep.toml is
//! read ([`mode`]), the plan in that mode ([`prepare`]), the run
//! ([`execute`]). The binary parses flags into a [`Request`], resolves the
//! toolchain, prints, and writes the result formats ([`crate::results`]).

use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_cache::Cache;
use lockstep_core::config::{Loaded, SectionSpec};
use lockstep_core::events::Sink;
use lockstep_core::Error;
use lockstep_iree::Toolchain;

use crate::bundle::{self, Manifest};
use crate::config::TestConfig;
use crate::last_results::{self, LastResults};
use crate::markers::MarkerExpr;
use crate::model::RunReport;
use crate::plan::{self, CompileSpec, Selection, Source, Test};
use crate::runner::{self, RunOptions};
use crate::sources::SuiteConfig;
use crate::xfails;

/// What a `lockstep test` command line asks for (paths relative to the
/// working directory; empty lists mean "what `[test]` says").
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub paths: Vec<PathBuf>,
    pub suite_configs: Vec<PathBuf>,
    pub targets: Vec<String>,
    pub markers: Option<String>,
    pub keyword: Option<String>,
    pub jobs: Option<usize>,
    pub shard: Option<String>,
    pub last_failed: bool,
    /// Seconds for every compile and run (`--timeout`).
    pub timeout: Option<u64>,
    pub no_cache: bool,
    pub ignore_xfails: bool,
    pub skip_all_runs: bool,
    pub update_xfails: bool,
    /// lit, when the paths hold lit suites ([`crate::lit::find_suites`]).
    pub lit: Option<crate::lit::LitProgram>,
    /// The ids of the tests a bundle holds (`--from-bundle`): nothing else
    /// is selected, whatever else its copied suites list.
    pub held: Option<std::collections::HashSet<String>>,
    /// `--bundle DIR`: compile only, into a bundle written to DIR.
    pub bundle: Option<PathBuf>,
    /// `--from-bundle DIR`: run the tests of the bundle in DIR.
    pub from_bundle: Option<PathBuf>,
    /// `--refresh-downloads`: fetch files named by URL alone again.
    pub refresh_downloads: bool,
    /// The wheelhouse manifest `[[test.pytest]]` suites run against
    /// (`--wheels`, else the `[pkg]` wheelhouse's when it exists); `None`:
    /// the project's venv.
    pub wheels: Option<PathBuf>,
    /// The `[[test.pytest]]` suites of the run, ready to list
    /// ([`crate::pytest::prepare`]).
    pub pytest: Vec<std::sync::Arc<crate::pytest::PytestSuite>>,
    /// Recorded seconds per test id, from the results history: `--shard`
    /// balances by them ([`crate::plan::shards`]).
    pub durations: Option<std::collections::BTreeMap<String, f64>>,
}

impl Request {
    /// The suite directories the run reads (a results history must not be
    /// one of them): the paths given (relative to `cwd`), else `[test]
    /// paths`, else `suites/` (relative to lockstep.toml's directory
    /// `root`); those that are directories.
    pub fn suite_dirs(&self, cfg: &TestConfig, root: &Path, cwd: &Path) -> Vec<PathBuf> {
        let paths: Vec<PathBuf> = if !self.paths.is_empty() {
            self.paths.iter().map(|p| cwd.join(p)).collect()
        } else if cfg.paths.is_empty() {
            vec![root.join("suites")]
        } else {
            cfg.paths.iter().map(|p| root.join(p)).collect()
        };
        paths.into_iter().filter(|p| p.is_dir()).collect()
    }
}

/// The selected tests and everything the run needs, checked.
pub struct Planned {
    pub tests: Vec<Test>,
    /// The suite files and configs the plan read.
    read: Vec<(&'static str, PathBuf)>,
    history: LastResults,
    opts: RunOptions,
    update_xfails: bool,
    shard: Option<(usize, usize)>,
}

/// A finished run.
pub struct Finished {
    pub report: RunReport,
    /// Where the logs are.
    pub run_dir: PathBuf,
}

impl Finished {
    /// The console summary and where the logs are.
    pub fn human(&self) -> String {
        format!(
            "{}logs: {}\n",
            crate::results::console_summary(&self.report),
            self.run_dir.display()
        )
    }
}

/// Where a `lockstep test` compiles and runs ([`crate::bundle`]).
pub enum Mode {
    /// Compile (through the cache) and run here.
    Here,
    /// `--bundle`: compile only, into a bundle moved to this directory
    /// whole at the end.
    Bundle(PathBuf),
    /// `--from-bundle`: the bundle's tests, from its copied suites and
    /// compiled modules, on the runtime's tools alone.
    FromBundle(PathBuf, Box<Manifest>),
}

/// The mode `req` asks for, its flags checked before lockstep.toml is
/// read (what a mode excludes is a usage error); a bundle to run is read
/// and checked against its listing here.
pub fn mode(req: &Request, sink: &dyn Sink) -> Result<Mode, Error> {
    if let Some(dir) = &req.from_bundle {
        if !req.paths.is_empty()
            || !req.targets.is_empty()
            || !req.suite_configs.is_empty()
            || req.skip_all_runs
            || req.update_xfails
            || req.no_cache
            || req.last_failed
        {
            return Err(Error::usage(
                "--from-bundle runs the bundle's own suites and targets: give no PATH, --target, --suite-config, --skip-all-runs, --update-xfails, --no-cache or --last-failed",
            )
            .hint("-k, -m, --shard, -j and --timeout still select and pace its tests"));
        }
        let manifest = bundle::load(dir)?;
        // What to compare with the sha256 printed where it was made.
        sink.note(format!(
            "running the bundle {} (bundle.json sha256 {})",
            dir.display(),
            manifest.sha256
        ));
        return Ok(Mode::FromBundle(dir.clone(), Box::new(manifest)));
    }
    let Some(dir) = &req.bundle else {
        return Ok(Mode::Here);
    };
    lockstep_core::fs::require_new_or_empty_dir("--bundle", dir)?;
    if req.no_cache || req.update_xfails {
        return Err(Error::usage(
            "--bundle compiles into the bundle's own cache: give no --no-cache or --update-xfails",
        ));
    }
    // Written through a link to the directory, never over the link.
    Ok(Mode::Bundle(
        std::fs::canonicalize(dir).unwrap_or_else(|_| dir.clone()),
    ))
}

impl Mode {
    /// The configuration a bundle's tests run with: its own lockstep.toml
    /// (relative paths in it relative to the bundle), every table checked
    /// by `sections`; `None` outside `--from-bundle`.
    pub fn config(&self, sections: &[SectionSpec]) -> Result<Option<Loaded>, Error> {
        let Mode::FromBundle(dir, _) = self else {
            return Ok(None);
        };
        let (path, text) = bundle::config(dir)?;
        let root = path.parent().unwrap_or(dir).to_path_buf();
        lockstep_core::config::parse(text, Some(path), root, sections).map(Some)
    }
}

/// A `lockstep test` planned in its mode.
pub struct Prepared {
    pub planned: Planned,
    mode: Mode,
    /// The suite directories it reads (a bundle copies them).
    suite_dirs: Vec<PathBuf>,
    /// The lockstep.toml whose `[test]` table a bundle carries.
    config_path: Option<PathBuf>,
    targets: Vec<plan::Target>,
}

/// Plans `req` in `mode` with the configuration `loaded` (a bundle's own:
/// [`Mode::config`]); `cwd` is where relative flags point. lit is set up
/// (from PyPI, once) only when the suites hold a lit suite.
pub fn prepare(
    req: Request,
    mode: Mode,
    loaded: &Loaded,
    cwd: &Path,
    sink: &dyn Sink,
) -> Result<Prepared, Error> {
    let cfg: TestConfig = loaded.section()?;
    if let Mode::FromBundle(dir, manifest) = &mode {
        // What it was made with (`-k`, `-m`, `--shard` there): those
        // tests, narrowed by this command line's.
        let req = Request {
            targets: manifest.targets.clone(),
            held: Some(bundle::held(manifest)),
            ..req
        };
        let planned = plan(&req, &cfg, &loaded.root, loaded.origin(), dir, sink)?;
        return Ok(Prepared {
            planned,
            mode,
            suite_dirs: Vec::new(),
            config_path: None,
            targets: Vec::new(),
        });
    }
    let bundle_dir = match &mode {
        Mode::Bundle(dir) => Some(dir),
        _ => None,
    };
    let suite_dirs = req.suite_dirs(&cfg, &loaded.root, cwd);
    if let Some(dir) = bundle_dir {
        bundle::check_destination(dir, &suite_dirs)?;
    }
    let pytest = match bundle_dir {
        None => pytest_suites(&req, &cfg, loaded, cwd, sink)?,
        Some(_) => {
            if !cfg.pytest.is_empty() {
                sink.note("[[test.pytest]] suites are not bundled: they run where the packages are installed");
            }
            Vec::new()
        }
    };
    let req = Request {
        skip_all_runs: req.skip_all_runs || bundle_dir.is_some(),
        lit: crate::lit::LitProgram::for_suites(&suite_dirs, sink)?,
        pytest,
        ..req
    };
    let planned = plan(&req, &cfg, &loaded.root, loaded.origin(), cwd, sink)?;
    let targets = match bundle_dir {
        Some(_) => selected_targets(&req, &cfg)?,
        None => Vec::new(),
    };
    Ok(Prepared {
        planned,
        mode,
        suite_dirs,
        config_path: loaded.path.clone(),
        targets,
    })
}

impl Prepared {
    /// The suite directories the run reads (a results history must not be
    /// one of them).
    pub fn suites(&self) -> Vec<(&'static str, &Path)> {
        self.suite_dirs
            .iter()
            .map(|d| ("the suite directory", d.as_path()))
            .collect()
    }

    /// Whether the run needs only IREE's runtime tools (a bundle's tests:
    /// nothing is compiled; a GPU machine may have no compiler).
    pub fn runtime_only(&self) -> bool {
        matches!(self.mode, Mode::FromBundle(..))
    }

    /// The runtime `toolchain` a bundle's tests run with, checked against
    /// the bundle before anything runs: its keys are the bundle's
    /// compiler's (the runtime here may have no compiler at all).
    pub fn bundle_runtime(&self, mut toolchain: Toolchain) -> Result<Toolchain, Error> {
        if let Mode::FromBundle(dir, manifest) = &self.mode {
            toolchain.identity = manifest.identity.clone();
            toolchain.compiler_version = manifest.compiler_version.clone();
            bundle::check(dir, manifest, &self.planned.tests, &toolchain)?;
        }
        Ok(toolchain)
    }
}

/// Runs a prepared `lockstep test` in its mode: here through `cache`,
/// into a bundle (built beside its place from the suites, the `[test]`
/// table and the compiled modules, then moved there whole), or a
/// bundle's tests from its modules ([`Prepared::bundle_runtime`] first).
pub fn execute(
    prepared: Prepared,
    toolchain: &Toolchain,
    cache: &Cache,
    sink: &dyn Sink,
) -> Result<Finished, Error> {
    let dir = match &prepared.mode {
        Mode::Here => return run(prepared.planned, toolchain, cache, sink),
        Mode::FromBundle(dir, _) => {
            let cache = bundle::cache(dir);
            return run(prepared.planned.without_compiles(), toolchain, &cache, sink);
        }
        Mode::Bundle(dir) => dir,
    };
    if let Some(why) = prepared
        .planned
        .tests
        .iter()
        .find(|t| t.compile.is_none() && t.lit.is_none())
        .and_then(|t| t.skip_reason.clone())
    {
        return Err(Error::usage(format!(
            "--bundle: nothing to compile for: {why}"
        )));
    }
    let tests = prepared.planned.tests.clone();
    let staged = lockstep_core::fs::StagedDir::beside(dir)?;
    let finished = run(
        prepared.planned,
        toolchain,
        &bundle::cache(staged.path()),
        sink,
    )?;
    let written = bundle::write(
        staged.path(),
        &prepared.suite_dirs,
        bundle::test_table(prepared.config_path.as_deref())?,
        &tests,
        &prepared.targets,
        toolchain,
        sink,
    )?;
    staged
        .install()
        .map_err(|e| e.context(format!("cannot move the bundle into {}", dir.display())))?;
    sink.note(format!(
        "bundle written to {} ({} for {}, compiled by {}; bundle.json sha256 {})",
        dir.display(),
        lockstep_core::words::count(written.tests.len(), "test", "tests"),
        written.targets.join(", "),
        toolchain.compiler_stamp(),
        written.sha256
    ));
    Ok(finished)
}

/// Resolves `req` against `cfg` (`root`: lockstep.toml's directory, `cwd`:
/// where relative flags point) and plans the tests; nothing runs yet.
pub fn plan(
    req: &Request,
    cfg: &TestConfig,
    root: &Path,
    origin: &Path,
    cwd: &Path,
    sink: &dyn Sink,
) -> Result<Planned, Error> {
    let paths = suite_paths(req, cfg, root, cwd)?;
    let config_paths: Vec<PathBuf> = if req.suite_configs.is_empty() {
        cfg.suite_configs.iter().map(|p| root.join(p)).collect()
    } else {
        req.suite_configs.iter().map(|p| cwd.join(p)).collect()
    };
    let configs = config_paths
        .iter()
        .map(|p| SuiteConfig::load(p))
        .collect::<Result<Vec<_>, _>>()?;
    plan::check_test_config(cfg, origin)?;
    if req.update_xfails {
        xfails::check_updatable(&configs)?;
    }
    for config in configs.iter().filter(|c| c.json5_in_json) {
        sink.note(format!(
            "{} is JSON5, not JSON (comments, trailing commas or unquoted keys): read as JSON5",
            config.path.display()
        ));
    }
    let targets = selected_targets(req, cfg)?;
    let known = plan::targets(cfg);
    let markers = req.markers.as_deref().map(MarkerExpr::parse).transpose()?;
    let shard = req.shard.as_deref().map(plan::parse_shard).transpose()?;
    let jobs = lockstep_core::pool::jobs(req.jobs, "-j")?;
    let compile_timeout = timeout(req.timeout, cfg.compile_timeout)?;
    let run_timeout = timeout(req.timeout, cfg.run_timeout)?;
    let downloads = crate::torch_ops::Downloads {
        mirrors: mirrors(cfg, origin)?,
        refresh: req.refresh_downloads,
    };
    let history = LastResults::open(cwd)?;
    let last_failed = match req.last_failed {
        false => None,
        true => {
            let failed = history.failed();
            if failed.is_empty() {
                sink.note("no failures recorded from the last run; running every selected test");
                None
            } else {
                Some(failed)
            }
        }
    };
    let only = match (last_failed, &req.held) {
        (Some(failed), Some(held)) => Some(failed.intersection(held).cloned().collect()),
        (failed, held) => failed.or_else(|| held.clone()),
    };
    let run_dir = last_results::state_dir(cwd).join("test-runs").join(
        jiff::Timestamp::now()
            .strftime("%Y%m%dT%H%M%S%.3f")
            .to_string(),
    );
    let selection = Selection {
        configs,
        targets,
        markers,
        keyword: req.keyword.clone(),
        shard,
        only,
        skip_all_runs: req.skip_all_runs,
        ignore_xfails: req.ignore_xfails,
        known_targets: known
            .keys()
            .cloned()
            .chain(plan::GPU_TARGETS.iter().map(|t| t.to_string()))
            .collect(),
        lit: req.lit.clone(),
        work: run_dir.clone(),
        pytest: req.pytest.clone(),
        durations: req.durations.clone(),
    };
    let planned = plan::plan(&paths, &selection, sink)?;
    let mut read: Vec<(&'static str, PathBuf)> = planned
        .suite_files
        .into_iter()
        .map(|f| ("the suite file", f))
        .collect();
    read.extend(config_paths.into_iter().map(|c| ("the suite config", c)));
    let tests = planned.tests;
    Ok(Planned {
        tests,
        read,
        history,
        opts: RunOptions {
            jobs,
            compile_timeout,
            run_timeout,
            no_cache: req.no_cache,
            run_dir,
            lit: req.lit.clone(),
            no_compile: false,
            downloads,
        },
        update_xfails: req.update_xfails,
        shard,
    })
}

impl Planned {
    /// Compile nothing: every module must be in the cache the run is
    /// given (a bundle's, [`crate::bundle`]).
    pub fn without_compiles(mut self) -> Planned {
        self.opts.no_compile = true;
        self
    }

    /// `test --list`: one line per selected test, with its markers.
    pub fn listing(&self) -> String {
        self.tests
            .iter()
            .map(|t| format!("{}  [{}]\n", t.id, t.markers.join(", ")))
            .collect()
    }

    /// Every file the run reads: suite files and configs, each test's
    /// source and data, and the history's database (an output must be none
    /// of them).
    pub fn inputs(&self) -> Vec<(&'static str, PathBuf)> {
        let mut read = self.read.clone();
        for test in &self.tests {
            if let Some(CompileSpec {
                source: Source::File(path),
                ..
            }) = &test.compile
            {
                read.push(("the source", path.clone()));
            }
            if let Some(run) = &test.run {
                read.extend(run.files.iter().map(|f| ("the test data", f.clone())));
            }
        }
        read.push(("the test history", self.history.database()));
        read.sort();
        read.dedup();
        read
    }
}

/// Runs the planned tests, records them in the history (what changed since
/// the last run) and, when asked, rewrites the expected-failure lists.
pub fn run(
    mut planned: Planned,
    toolchain: &Toolchain,
    cache: &Cache,
    sink: &dyn Sink,
) -> Result<Finished, Error> {
    skip_missing_devices(&mut planned.tests, toolchain);
    let mut report = runner::run(&planned.tests, toolchain, cache, &planned.opts, sink)?;
    report.shard = planned.shard.map(|(i, n)| format!("{i}/{n}"));
    report.changes = planned.history.record(&report)?;
    if planned.update_xfails {
        for updated in xfails::update(&planned.tests, &report)? {
            sink.note(format!(
                "updated {}: {}, {}",
                updated.path.display(),
                lockstep_core::words::count(
                    updated.compile,
                    "expected compile failure",
                    "expected compile failures"
                ),
                lockstep_core::words::count(
                    updated.run,
                    "expected run failure",
                    "expected run failures"
                )
            ));
        }
    }
    Ok(Finished {
        report,
        run_dir: planned.opts.run_dir,
    })
}

/// The targets a request selects: `--target`, else `[test]
/// default-targets`, else `cpu`; built-ins, `[test.targets.NAME]` and the
/// built-in GPUs (an unknown name is a usage error listing the known ones).
pub fn selected_targets(req: &Request, cfg: &TestConfig) -> Result<Vec<plan::Target>, Error> {
    let known = plan::targets(cfg);
    let target_names: Vec<String> = if !req.targets.is_empty() {
        req.targets.clone()
    } else if !cfg.default_targets.is_empty() {
        cfg.default_targets.clone()
    } else {
        vec!["cpu".into()]
    };
    let targets = target_names
        .iter()
        .map(|n| {
            let builtin_gpu = || {
                plan::GPU_TARGETS
                    .contains(&n.as_str())
                    .then(|| plan::gpu_target(n))
                    .flatten()
            };
            known.get(n).cloned().or_else(builtin_gpu).ok_or_else(|| {
                Error::usage(format!("unknown target `{n}`")).hint(format!(
                    "known targets: {}, and the GPUs {} (define more in [test.targets.NAME])",
                    known.keys().cloned().collect::<Vec<_>>().join(", "),
                    plan::GPU_TARGETS.join(", ")
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(targets)
}

/// Tests whose run names a device this machine lacks (`--device=cuda` of
/// a GPU target, with no NVIDIA GPU here) still compile, but their run is
/// skipped saying which driver found no device: never a failure.
fn skip_missing_devices(tests: &mut [Test], toolchain: &Toolchain) {
    let Ok(run_module) = toolchain.tool("iree-run-module") else {
        return;
    };
    for t in tests.iter_mut().filter(|t| t.skip_reason.is_none()) {
        let Some(device) = t.run.as_ref().and_then(|r| {
            r.flags
                .iter()
                .rev()
                .find_map(|f| f.strip_prefix("--device="))
                .map(str::to_string)
        }) else {
            continue;
        };
        if let Some(why) = lockstep_iree::gpu::missing_device(&run_module, &device) {
            t.run = None;
            t.benchmark = None;
            t.skip_reason = Some(format!(
                "no `{}` device on this machine: {why}",
                lockstep_iree::driver(&device)
            ));
        }
    }
}

/// PATH arguments, else `[test] paths`, else `suites/` next to lockstep.toml.
fn suite_paths(
    req: &Request,
    cfg: &TestConfig,
    root: &Path,
    cwd: &Path,
) -> Result<Vec<PathBuf>, Error> {
    if !req.paths.is_empty() {
        return Ok(req.paths.iter().map(|p| cwd.join(p)).collect());
    }
    if !cfg.paths.is_empty() {
        return Ok(cfg.paths.iter().map(|p| root.join(p)).collect());
    }
    let default = root.join("suites");
    if default.is_dir() {
        return Ok(vec![default]);
    }
    if !req.pytest.is_empty() {
        return Ok(Vec::new());
    }
    Err(
        Error::usage("no tests to run: give suite directories or files")
            .hint("lockstep test path/to/suite, or set [test] paths in lockstep.toml"),
    )
}

/// The `[[test.pytest]]` suites a run here takes (all of them without PATH
/// arguments, else those with a path at, inside or around a PATH), checked
/// and each with its venv.
fn pytest_suites(
    req: &Request,
    cfg: &TestConfig,
    loaded: &Loaded,
    cwd: &Path,
    sink: &dyn Sink,
) -> Result<Vec<std::sync::Arc<crate::pytest::PytestSuite>>, Error> {
    use crate::pytest::{self, Packages};
    if cfg.pytest.is_empty() {
        return Ok(Vec::new());
    }
    pytest::check_configs(&cfg.pytest, &loaded.root, loaded.origin())?;
    let real = |p: &Path| lockstep_core::fs::real_path(p);
    let given: Vec<PathBuf> = req.paths.iter().map(|p| real(&cwd.join(p))).collect();
    let chosen: Vec<pytest::PytestConfig> = cfg
        .pytest
        .iter()
        .filter(|suite| {
            given.is_empty()
                || suite.paths.iter().any(|p| {
                    let p = real(&loaded.root.join(p));
                    given.iter().any(|g| p.starts_with(g) || g.starts_with(&p))
                })
        })
        .cloned()
        .collect();
    if chosen.is_empty() {
        return Ok(Vec::new());
    }
    let packages = match &req.wheels {
        Some(manifest) => Packages::Manifest(manifest),
        None => Packages::Project,
    };
    Ok(pytest::prepare(&chosen, &loaded.root, packages, sink))
}

/// The per-process timeout of `--timeout SECS`, else `default`; 0 is
/// refused (every process would be stopped at once).
/// The URL rewrites of this run: `LOCKSTEP_TEST_MIRRORS` when set (it wins:
/// a fleet's machines set it without editing the project), else `[test.mirrors]`.
fn mirrors(cfg: &TestConfig, origin: &Path) -> Result<lockstep_cache::download::Mirrors, Error> {
    use lockstep_cache::download::Mirrors;
    match std::env::var("LOCKSTEP_TEST_MIRRORS") {
        Ok(text) if !text.trim().is_empty() => Mirrors::parse_env(&text),
        _ => Mirrors::new(
            cfg.mirrors.iter().map(|(a, b)| (a.clone(), b.clone())),
            &format!("[test.mirrors] of {}", origin.display()),
        ),
    }
}

fn timeout(flag: Option<u64>, default: Duration) -> Result<Duration, Error> {
    match flag {
        Some(0) => Err(
            Error::usage("--timeout 0: every process would be stopped at once")
                .hint("give a number of seconds, at least 1"),
        ),
        Some(secs) => Ok(Duration::from_secs(secs)),
        None => Ok(default),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mode_s_excluded_flags_are_refused_before_anything_is_read() {
        use lockstep_core::events::NullSink;
        let dir = tempfile::tempdir().unwrap();
        let bundle = dir.path().join("absent");
        let from = |edit: fn(&mut Request)| {
            let mut req = Request {
                from_bundle: Some(bundle.clone()),
                ..Request::default()
            };
            edit(&mut req);
            mode(&req, &NullSink)
        };
        for edit in [
            (|r| r.paths = vec!["s".into()]) as fn(&mut Request),
            |r| r.targets = vec!["cpu".into()],
            |r| r.suite_configs = vec!["c.json".into()],
            |r| r.skip_all_runs = true,
            |r| r.update_xfails = true,
            |r| r.no_cache = true,
            |r| r.last_failed = true,
        ] {
            let err = from(edit).err().expect("refused");
            assert_eq!(err.exit_code(), 2);
            assert!(
                err.message.contains("the bundle's own suites"),
                "{}",
                err.message
            );
        }
        // Otherwise the bundle is read: here, none.
        let err = from(|_| {}).err().expect("not a bundle");
        assert!(err.message.contains("not a bundle"), "{}", err.message);
        for edit in [(|r| r.no_cache = true) as fn(&mut Request), |r| {
            r.update_xfails = true
        }] {
            let mut req = Request {
                bundle: Some(dir.path().join("new")),
                ..Request::default()
            };
            edit(&mut req);
            let err = mode(&req, &NullSink).err().expect("refused");
            assert!(
                err.message.contains("the bundle's own cache"),
                "{}",
                err.message
            );
        }
        let req = Request {
            bundle: Some(dir.path().join("new")),
            ..Request::default()
        };
        assert!(matches!(mode(&req, &NullSink), Ok(Mode::Bundle(_))));
        assert!(matches!(
            mode(&Request::default(), &NullSink),
            Ok(Mode::Here)
        ));
    }

    #[test]
    fn zero_timeouts_are_refused() {
        let default = Duration::from_secs(7);
        assert!(timeout(Some(0), default).is_err_and(|e| e.exit_code() == 2));
        assert!(timeout(Some(u64::MAX), default).is_ok());
        assert!(timeout(None, default).is_ok_and(|d| d == default));
    }
}
