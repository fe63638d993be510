//! `lockstep test` and `lockstep cache`: resolve options, dispatch to
//! lockstep-suite, print progress and the summary, write the reports.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_core::config::Loaded;
use lockstep_core::Error;
use lockstep_suite::history::{self, History};
use lockstep_suite::markers::MarkerExpr;
use lockstep_suite::model::{Outcome, RunReport, StepKind, StepStatus, TestResult};
use lockstep_suite::plan::{self, Selection, Test};
use lockstep_suite::runner::{self, Progress, RunOptions};
use lockstep_suite::sources::SuiteConfig;
use lockstep_suite::{report, xfails};

use crate::cli;
use crate::output::Console;

pub fn run(args: cli::TestArgs, loaded: &Loaded, cwd: &Path) -> Result<i32, Error> {
    let cfg = &loaded.config.test;
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
    let known = plan::targets(cfg);
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
    let mut history = History::open(cwd)?;
    let only = if args.last_failed {
        let failed = history.failed();
        if failed.is_empty() {
            eprintln!("no failures recorded from the last run; running every selected test");
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
    };
    let tests = plan::plan(&paths, &selection)?;
    if args.list {
        for t in &tests {
            println!("{}  [{}]", t.id, t.markers.join(", "));
        }
        eprintln!("{} tests", tests.len());
        return Ok(0);
    }
    if tests.is_empty() {
        eprintln!("no tests selected");
        return Ok(0);
    }
    let console = Console::new();
    let tc = crate::toolchain::resolve(args.iree_bin.as_deref(), loaded, &console)?;
    let run_dir = history::state_dir(cwd).join("test-runs").join(
        jiff::Timestamp::now()
            .strftime("%Y%m%dT%H%M%S%.3f")
            .to_string(),
    );
    let opts = RunOptions {
        jobs: args.jobs.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        }),
        compile_timeout: args
            .timeout
            .map(Duration::from_secs)
            .unwrap_or(cfg.compile_timeout),
        run_timeout: args
            .timeout
            .map(Duration::from_secs)
            .unwrap_or(cfg.run_timeout),
        no_cache: args.no_cache,
        run_dir: run_dir.clone(),
    };
    eprintln!(
        "{} tests, {} workers, {} ({})",
        tests.len(),
        opts.jobs,
        tc.compiler_version,
        tc.bin.display()
    );
    let progress = Printer::new(tests.len());
    let mut report = runner::run(
        &tests,
        &tc,
        &lockstep_cache::Cache::resolve(loaded),
        &opts,
        &progress,
    )?;
    progress.done();
    report.changes = history.record(&report)?;
    print!("{}", report::console_summary(&report));
    println!("logs: {}", run_dir.display());
    if let Some(path) = &args.junit {
        write(path, &report::junit(&report)?)?;
    }
    if let Some(path) = &args.json {
        write(path, &report::json(&report)?)?;
    }
    report::write_summary(&report, args.summary.as_deref())?;
    if args.update_xfails {
        update_xfails(&tests, &report)?;
    }
    Ok(if report.failed() { 1 } else { 0 })
}

/// PATH arguments, else `[test] paths`, else `suites/` next to lockstep.toml.
fn suite_paths(args: &cli::TestArgs, loaded: &Loaded, cwd: &Path) -> Result<Vec<PathBuf>, Error> {
    if !args.paths.is_empty() {
        return Ok(args.paths.iter().map(|p| cwd.join(p)).collect());
    }
    if !loaded.config.test.paths.is_empty() {
        return Ok(loaded
            .config
            .test
            .paths
            .iter()
            .map(|p| loaded.root.join(p))
            .collect());
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

/// Writes a report whole (through a rename: a reader never sees half of it).
fn write(path: &Path, text: &str) -> Result<(), Error> {
    lockstep_core::cache::write_atomic(path, text.as_bytes())
        .map_err(|e| e.context(format!("cannot write {}", path.display())))
}

/// Updates each config's expected-failure lists from this run's results.
///
/// Starts from the lists in the file and changes only the cases whose step
/// ran: a test filtered out (`-k`, `-m`, `--shard`, `--last-failed`), or whose
/// run was skipped (`--skip-all-runs`, `skip_run_tests`), keeps its entries.
fn update_xfails(tests: &[Test], report: &RunReport) -> Result<(), Error> {
    let results: HashMap<&str, &TestResult> =
        report.results.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut lists: BTreeMap<PathBuf, XfailLists> = BTreeMap::new();
    for t in tests {
        let (Some(config), Some(r)) = (&t.config, results.get(t.id.as_str())) else {
            continue;
        };
        let entry = match lists.entry(config.clone()) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(XfailLists::load(config)?),
        };
        entry.apply(&t.case, r);
    }
    for (path, lists) in lists {
        let text = fs_err::read_to_string(&path)?;
        let compile: Vec<String> = lists.compile.into_iter().collect();
        let run: Vec<String> = lists.run.into_iter().collect();
        let updated = xfails::rewrite_lists(&text, &compile, &run)?;
        if updated != text {
            write(&path, &updated)?;
        }
        eprintln!(
            "updated {}: {} expected compile failures, {} expected run failures",
            path.display(),
            compile.len(),
            run.len()
        );
    }
    Ok(())
}

/// A config's expected-failure lists being updated.
struct XfailLists {
    compile: BTreeSet<String>,
    run: BTreeSet<String>,
}

impl XfailLists {
    fn load(path: &Path) -> Result<XfailLists, Error> {
        let config = SuiteConfig::load(path)?;
        Ok(XfailLists {
            compile: config.expected_compile_failures.into_iter().collect(),
            run: config.expected_run_failures.into_iter().collect(),
        })
    }

    /// Lists or unlists `case` by the steps of `r` that ran.
    fn apply(&mut self, case: &str, r: &TestResult) {
        let status = |kind: StepKind| {
            r.steps
                .iter()
                .find(|s| s.kind == kind)
                .map_or(StepStatus::Skipped, |s| s.status)
        };
        match status(StepKind::Compile) {
            StepStatus::Skipped => {}
            StepStatus::Failed => {
                self.compile.insert(case.to_string());
                // A case that cannot compile cannot run: one list says it.
                self.run.remove(case);
            }
            StepStatus::Passed => {
                self.compile.remove(case);
            }
        }
        match status(StepKind::Run) {
            StepStatus::Skipped => {}
            StepStatus::Failed => {
                self.run.insert(case.to_string());
            }
            StepStatus::Passed => {
                self.run.remove(case);
            }
        }
    }
}

/// Progress: a bar on a TTY, plain lines otherwise.
struct Printer {
    bar: Option<indicatif::ProgressBar>,
}

impl Printer {
    fn new(total: usize) -> Printer {
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar = indicatif::ProgressBar::new(total as u64);
            if let Ok(style) =
                indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} {elapsed} {msg}")
            {
                bar.set_style(style);
            }
            bar
        });
        Printer { bar }
    }

    fn done(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

impl Progress for Printer {
    // The runner calls this under its state lock: lines never interleave.
    fn finished(&self, r: &TestResult, done: usize, total: usize) {
        let line = format!(
            "[{done}/{total}] {:<5} {} ({:.1}s){}",
            r.outcome.as_str(),
            r.id,
            r.seconds,
            if r.reason.is_empty() || r.outcome == Outcome::Pass {
                String::new()
            } else {
                format!(" - {}", r.reason)
            }
        );
        match &self.bar {
            Some(bar) => {
                if r.outcome != Outcome::Pass {
                    bar.println(line);
                }
                bar.set_message(r.id.clone());
                bar.inc(1);
            }
            None => eprintln!("{line}"),
        }
    }
}

/// The test part of `lockstep demo`: the embedded smoke suite on the CPU.
pub fn demo() -> Result<i32, Error> {
    let smoke = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../suites/smoke");
    println!("\n== lockstep test suites/smoke (the embedded smoke suite, real IREE compiler and runtime)");
    if !smoke.is_dir() {
        println!("   suites/smoke is not here: run the demo from a lockstep checkout");
        return Ok(0);
    }
    let cwd = std::env::current_dir()?;
    let loaded = lockstep_core::config::load(None, &smoke)?;
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
    run(args, &loaded, &cwd)
}
