//! lit suites: a directory with a `lit.cfg.py` (or `lit.site.cfg.py`) is
//! run by LLVM's real `lit`, each of its tests a lockstep test.
//!
//! lit itself lists the tests (`--show-tests`: its configuration decides
//! what a test is) and runs them; lockstep chooses which (keyword, markers,
//! `--last-failed`, shard, the cache) and reads the results from lit's own
//! JSON report (`-o`), never from its console. A lit run goes through a
//! site configuration of lockstep's (in the run directory) that keeps the
//! suite's files where they are (`%s`, `%S` and paths relative to them
//! unchanged) but sends lit's `Output/` to the run directory: the user's
//! tree is not lockstep's to write. It gets `PATH` with `FileCheck`, lit's
//! venv and the IREE tools first, and none of lit's `LIT_*` variables (they
//! would override the command line). A configuration that does not load, a
//! lit that lists no tests (a `lit.cfg.py` that calls `sys.exit(0)` or
//! `os._exit(0)` ends lit with status 0 and no list), a lit that writes no
//! report, or a report missing a test it was given, is an error naming the
//! suite: no test is recorded as a pass on a partial result, and a suite
//! that exits early is never "no tests". What lockstep reads back from a lit
//! run (the list, the report, the log) goes through
//! `lockstep_core::fs::read_tree_file`: a path the configuration replaced
//! with a FIFO is refused at once, never waited on. Every lit process has a
//! time bound ([`LIST_TIMEOUT`]; a run: its tests' timeouts one after
//! another, plus [`LIT_MARGIN`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_core::Error;
use serde::Deserialize;

use crate::model::Outcome;

/// The configuration files that make a directory a lit suite.
pub const CONFIGS: [&str; 2] = ["lit.cfg.py", "lit.site.cfg.py"];

/// The largest report read back.
const MAX_REPORT_BYTES: u64 = 256 << 20;

/// How long listing a suite's tests may take.
pub const LIST_TIMEOUT: Duration = Duration::from_secs(300);

/// What a lit run may take beyond its tests' own timeouts (lit's start,
/// loading the configuration, writing the report).
pub const LIT_MARGIN: Duration = Duration::from_secs(300);

/// The largest listing or log read back.
const MAX_LISTING_BYTES: u64 = 64 << 20;

/// The line `lit --show-tests` prints before its list.
const LIST_HEADER: &str = "-- Available Tests --";

/// Reads back a file of a lit run (its list, report or log): a regular
/// file only (the suite's configuration runs inside lit and may have put a
/// FIFO where lockstep reads), at most `max` bytes.
fn read_back(what: &str, path: &Path, max: u64) -> Result<String, Error> {
    let bytes = lockstep_core::fs::read_tree_file(what, path, max)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// lit, and the directories put first on the RUN lines' `PATH`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LitProgram {
    pub lit: PathBuf,
    pub path: Vec<PathBuf>,
    /// What the tools are (a cache key part).
    pub identity: String,
}

impl LitProgram {
    /// lit and FileCheck, set up (from PyPI, once, under the toolchains
    /// directory) with lockstep's own uv.
    pub fn provision(sink: &dyn lockstep_core::events::Sink) -> Result<LitProgram, Error> {
        let uv = lockstep_python::uv::find_default(sink)?;
        let root = lockstep_core::paths::toolchains_dir()?;
        let tools = lockstep_python::tools::LitTools::ensure(&uv, &root, sink)?;
        Ok(LitProgram {
            lit: tools.lit,
            path: tools.path,
            identity: tools.pins,
        })
    }

    /// [`LitProgram::provision`] when `dirs` hold a lit suite
    /// ([`find_suites`]): lit lists a lit suite's tests.
    pub fn for_suites(
        dirs: &[PathBuf],
        sink: &dyn lockstep_core::events::Sink,
    ) -> Result<Option<LitProgram>, Error> {
        match dirs.iter().any(|d| !find_suites(d).is_empty()) {
            true => LitProgram::provision(sink).map(Some),
            false => Ok(None),
        }
    }
}

/// Whether `dir` is a lit suite.
pub fn is_suite(dir: &Path) -> bool {
    CONFIGS.iter().any(|c| dir.join(c).is_file())
}

/// The lit suites under `root`: `root` itself when it is one, else every
/// directory below it that is (not looking inside a suite, nor into hidden
/// directories or lit's `Output/`).
pub fn find_suites(root: &Path) -> Vec<PathBuf> {
    const DEEPEST: usize = 16;
    let mut found = Vec::new();
    let mut pending = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = pending.pop() {
        if !dir.is_dir() {
            continue;
        }
        if is_suite(&dir) {
            found.push(dir);
            continue;
        }
        if depth >= DEEPEST {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || name == "Output" {
                continue;
            }
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                pending.push((entry.path(), depth + 1));
            }
        }
    }
    found.sort();
    found
}

/// One lit test.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LitCase {
    /// The suite's directory (where its configuration is).
    pub suite: PathBuf,
    /// The test's path relative to the suite directory (`/`-separated).
    pub path: String,
    /// `REQUIRES:` features, as markers.
    pub requires: Vec<String>,
}

impl LitCase {
    pub fn file(&self) -> PathBuf {
        self.suite.join(&self.path)
    }
}

/// The tests lit finds in `suite` (`lit --show-tests`).
pub fn discover(program: &LitProgram, suite: &Path, work: &Path) -> Result<Vec<LitCase>, Error> {
    fs_err::create_dir_all(work)?;
    let log = work.join("lit-show-tests.log");
    let out = work.join("lit-show-tests.out");
    let argv = vec![
        program.lit.display().to_string(),
        "--show-tests".into(),
        suite.display().to_string(),
    ];
    let finished = spawn(program, None, &argv, work, &log, Some(&out), LIST_TIMEOUT)?;
    if finished.exit != lockstep_core::process::Exit::Code(0) {
        return Err(config_error(suite, &finished.exit, &log));
    }
    let listed = read_back("lit's list of tests", &out, MAX_LISTING_BYTES).map_err(|e| {
        e.context(format!(
            "cannot read lit's list of the suite {}",
            suite.display()
        ))
    })?;
    // lit prints its list under a header, and lists at least one test or
    // exits 2 itself: no header is a lit that never listed (a lit.cfg.py
    // that ended the process), never a suite without tests.
    let Some((_, list)) = listed.split_once(LIST_HEADER) else {
        return Err(Error::failed(format!(
            "lit listed no tests of the suite {} ({}, but no list)",
            suite.display(),
            finished.exit.describe()
        ))
        .cause(format!("log: {}", log.display()))
        .hint("its lit.cfg.py ends lit early (sys.exit or os._exit while loading?): make it load to the end; no result was recorded"));
    };
    let mut cases = Vec::new();
    for line in list.lines() {
        // "  NAME :: PATH" under "-- Available Tests --".
        let Some((_, path)) = line.trim().split_once(" :: ") else {
            continue;
        };
        let path = path.trim().to_string();
        let file = suite.join(&path);
        if !file.is_file() {
            continue;
        }
        let requires = requires_of(&file);
        cases.push(LitCase {
            suite: suite.to_path_buf(),
            path,
            requires,
        });
    }
    if cases.is_empty() {
        return Err(Error::failed(format!(
            "lit listed no test files of the suite {}",
            suite.display()
        ))
        .cause(format!("log: {}", log.display()))
        .hint(
            "check its lit.cfg.py (config.suffixes, config.test_format); no result was recorded",
        ));
    }
    cases.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(cases)
}

/// `REQUIRES:` features of a test (each a marker), from its first 64 KiB
/// (a regular file only: a link to a FIFO reads as nothing, never waited
/// on).
fn requires_of(file: &Path) -> Vec<String> {
    use std::io::Read;
    let text = lockstep_core::fs::open_tree_file("a lit test", file, u64::MAX)
        .ok()
        .map(|(f, _)| {
            let mut bytes = Vec::new();
            let _ = f.take(64 << 10).read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
        .unwrap_or_default();
    let mut features = Vec::new();
    for line in text.lines() {
        let Some((_, rest)) = line.split_once("REQUIRES:") else {
            continue;
        };
        for feature in rest.split(',') {
            let feature = feature.trim();
            let plain = !feature.is_empty()
                && feature
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
            if plain && !features.iter().any(|f| f == feature) {
                features.push(feature.to_string());
            }
        }
    }
    features
}

/// A lit test's result.
#[derive(Debug, Clone, PartialEq)]
pub struct LitResult {
    pub outcome: Outcome,
    /// lit's code (`PASS`, `FAIL`, `XFAIL`, `UNSUPPORTED`, `TIMEOUT` ...).
    pub code: String,
    pub seconds: f64,
    /// lit's output for the test.
    pub output: String,
}

/// How a batch runs.
pub struct Batch<'a> {
    pub program: &'a LitProgram,
    /// The IREE tools' directory (after the lit tools on `PATH`).
    pub tools: &'a Path,
    pub jobs: usize,
    /// lit's per-test `--timeout`.
    pub timeout: Duration,
    /// A directory of this run's own (the suite is copied there).
    pub work: PathBuf,
}

/// Test paths given to one lit process at most (a command line has a
/// length limit; a suite of thousands of tests runs in several).
const PATHS_PER_LIT: usize = 1000;

/// Runs `cases` (all of one suite) with lit; each case's result, in order.
pub fn run(batch: &Batch, suite: &Path, cases: &[LitCase]) -> Result<Vec<LitResult>, Error> {
    if cases.is_empty() {
        return Ok(Vec::new());
    }
    let site = site_config(suite, &batch.work)?;
    let mut results = Vec::with_capacity(cases.len());
    for (n, chunk) in cases.chunks(PATHS_PER_LIT).enumerate() {
        results.extend(run_chunk(batch, suite, &site, chunk, n + 1)?);
    }
    Ok(results)
}

/// A directory holding a `lit.site.cfg.py` that runs `suite`'s own
/// configuration with its sources where they are and lit's output under
/// `work/exec`; lit runs a test of the suite as `SITE/PATH`.
fn site_config(suite: &Path, work: &Path) -> Result<PathBuf, Error> {
    let site = work.join("site");
    fs_err::create_dir_all(&site)?;
    let main = CONFIGS
        .iter()
        .map(|c| suite.join(c))
        .find(|c| c.is_file())
        .ok_or_else(|| Error::failed(format!("{} has no lit configuration", suite.display())))?;
    // JSON string literals are Python string literals.
    let literal = |p: &Path| serde_json::Value::from(p.display().to_string()).to_string();
    let text = format!(
        "# Written by lockstep: the suite's own configuration, its output elsewhere.\n\
         config.test_source_root = {}\n\
         config.test_exec_root = {}\n\
         lit_config.load_config(config, {})\n",
        literal(suite),
        literal(&work.join("exec")),
        literal(&main)
    );
    fs_err::write(site.join("lit.site.cfg.py"), text)?;
    Ok(site)
}

/// The log of the lit process that ran the `n`th (0-based) case of a batch.
pub fn log_of(work: &Path, n: usize) -> PathBuf {
    work.join(format!("lit-{}.log", n / PATHS_PER_LIT + 1))
}

/// One lit process over `cases` (named under the site directory `site`).
fn run_chunk(
    batch: &Batch,
    suite: &Path,
    site: &Path,
    cases: &[LitCase],
    n: usize,
) -> Result<Vec<LitResult>, Error> {
    let report = batch.work.join(format!("lit-{n}.json"));
    let log = batch.work.join(format!("lit-{n}.log"));
    let mut argv = vec![
        batch.program.lit.display().to_string(),
        "-q".into(),
        "--skip-test-time-recording".into(),
        "--order=lexical".into(),
        "-j".into(),
        batch.jobs.max(1).to_string(),
        "--timeout".into(),
        batch.timeout.as_secs().max(1).to_string(),
        "-o".into(),
        report.display().to_string(),
    ];
    argv.extend(
        cases
            .iter()
            .map(|c| site.join(&c.path).display().to_string()),
    );
    // The whole batch may take its tests' time one after another, plus lit.
    let limit = batch
        .timeout
        .saturating_mul(u32::try_from(cases.len()).unwrap_or(u32::MAX))
        .saturating_add(LIT_MARGIN);
    let finished = spawn(
        batch.program,
        Some(batch.tools),
        &argv,
        &batch.work,
        &log,
        None,
        limit,
    )
    .map_err(|e| e.context(format!("cannot run lit on {}", suite.display())))?;
    let code = finished.exit;
    // Not there: lit ended before writing it (a configuration that does not
    // load, or one that ends the process). Anything but a regular file (a
    // FIFO the configuration put there) is refused at once.
    if report.symlink_metadata().is_err() {
        return Err(config_error(suite, &code, &log));
    }
    let bytes = lockstep_core::fs::read_tree_file("lit's report", &report, MAX_REPORT_BYTES)
        .map_err(|e| {
            Error::failed(format!(
                "lit's report on {} cannot be read",
                suite.display()
            ))
            .cause(e.message)
            .cause(format!("log: {}", log.display()))
            .hint("its lit.cfg.py must leave lit's report (-o) alone; no result was recorded")
        })?;
    let parsed = parse_report(&bytes).map_err(|why| {
        Error::failed(format!(
            "lit's report on {} cannot be read",
            suite.display()
        ))
        .cause(why)
        .cause(format!("log: {}", log.display()))
    })?;
    let by_path: BTreeMap<String, LitResult> = parsed
        .into_iter()
        .filter_map(|(name, result)| {
            let path = name.split_once(" :: ").map(|(_, p)| p.trim().to_string())?;
            Some((path, result))
        })
        .collect();
    // Every test lit was given has its result, or the run is not lit's
    // whole answer: an error naming the suite, never a partial result.
    let missing: Vec<&str> = cases
        .iter()
        .filter(|c| !by_path.contains_key(&c.path))
        .map(|c| c.path.as_str())
        .collect();
    if let Some(first) = missing.first() {
        return Err(Error::failed(format!(
            "lit reported {} of the {} tests it listed in the suite {}",
            cases.len() - missing.len(),
            cases.len(),
            suite.display()
        ))
        .cause(format!(
            "no result for {first}{}",
            match missing.len() {
                1 => String::new(),
                n => format!(" and {} more", n - 1),
            }
        ))
        .cause(format!("lit: {}; log: {}", code.describe(), log.display()))
        .hint("its lit.cfg.py decides differently when the tests run than when they are listed (or ends lit early): fix it; no result was recorded"));
    }
    Ok(cases.iter().map(|c| by_path[&c.path].clone()).collect())
}

/// Runs lit with the RUN lines' `PATH` (lit's tools, then `tools`, then
/// the inherited one) and without lit's own variables.
fn spawn(
    program: &LitProgram,
    tools: Option<&Path>,
    argv: &[String],
    cwd: &Path,
    log: &Path,
    stdout: Option<&Path>,
    timeout: Duration,
) -> Result<lockstep_core::process::Finished, Error> {
    let mut path: Vec<String> = program
        .path
        .iter()
        .map(|p| p.display().to_string())
        .collect();
    if let Some(tools) = tools {
        path.push(tools.display().to_string());
    }
    path.push(std::env::var("PATH").unwrap_or_default());
    let spec = lockstep_core::process::Spec {
        argv: argv.to_vec(),
        cwd: cwd.to_path_buf(),
        env: vec![("PATH".into(), path.join(":"))],
        timeout: Some(timeout),
        log: log.to_path_buf(),
        header: Some(format!("$ {}", argv.join(" "))),
    };
    let options = lockstep_core::process::Options {
        env_remove: lit_variables(),
        die_with_parent: true,
        stdout: stdout.map(Path::to_path_buf),
        scrub: None,
    };
    lockstep_core::process::run_with(&spec, &options, |_| {})
}

/// lit's environment variables (`LIT_OPTS`, `LIT_FILTER` ...), which would
/// override lockstep's command line.
fn lit_variables() -> Vec<String> {
    std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| k.starts_with("LIT_"))
        .collect()
}

/// The error for a suite whose configuration lit could not load (or a lit
/// that wrote no report): the end of its output.
fn config_error(suite: &Path, exit: &lockstep_core::process::Exit, log: &Path) -> Error {
    let text = read_back("lit's log", log, MAX_LISTING_BYTES).unwrap_or_default();
    let tail: Vec<&str> = text.lines().rev().take(12).collect();
    let mut err = Error::failed(format!(
        "lit could not run the suite {} ({})",
        suite.display(),
        exit.describe()
    ));
    for line in tail.into_iter().rev() {
        err = err.cause(line.to_string());
    }
    err.hint(format!(
        "fix its lit.cfg.py (the lines above are lit's; the whole log is {}); no result was recorded",
        log.display()
    ))
}

#[derive(Deserialize)]
struct Report {
    #[serde(default)]
    tests: Vec<ReportTest>,
}

#[derive(Deserialize)]
struct ReportTest {
    name: String,
    code: String,
    #[serde(default)]
    elapsed: Option<f64>,
    #[serde(default)]
    output: String,
}

/// lit's `-o` JSON report: each test's full name (`SUITE :: PATH`) and
/// result.
pub fn parse_report(bytes: &[u8]) -> Result<Vec<(String, LitResult)>, String> {
    let report: Report = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
    Ok(report
        .tests
        .into_iter()
        .map(|t| {
            let outcome = outcome_of(&t.code);
            (
                t.name,
                LitResult {
                    outcome,
                    code: t.code,
                    seconds: t.elapsed.unwrap_or(0.0).max(0.0),
                    output: t.output,
                },
            )
        })
        .collect())
}

/// A lit result code as a lockstep outcome: UNRESOLVED and TIMEOUT fail, an
/// unknown code fails too (never a pass by default).
pub fn outcome_of(code: &str) -> Outcome {
    match code {
        "PASS" | "FLAKYPASS" | "FIXED" => Outcome::Pass,
        "XFAIL" => Outcome::Xfail,
        "XPASS" => Outcome::Xpass,
        "UNSUPPORTED" | "SKIPPED" | "EXCLUDED" => Outcome::Skip,
        _ => Outcome::Fail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_map_every_code_and_unknown_ones_fail() {
        let json = br#"{"__version__":[23,1,5],"elapsed":0.3,"tests":[
            {"code":"FAIL","elapsed":0.12,"name":"mini :: fail.mlir","output":"Exit Code: 1"},
            {"code":"PASS","elapsed":0.2,"name":"mini :: pass.mlir","output":""},
            {"code":"XFAIL","name":"mini :: x.mlir","output":""},
            {"code":"XPASS","name":"mini :: y.mlir","output":""},
            {"code":"UNSUPPORTED","name":"mini :: u.mlir","output":""},
            {"code":"TIMEOUT","name":"mini :: t.mlir","output":""},
            {"code":"UNRESOLVED","name":"mini :: r.mlir","output":""},
            {"code":"SOMETHING NEW","name":"mini :: n.mlir","output":""}]}"#;
        let parsed = parse_report(json).unwrap();
        let outcomes: Vec<Outcome> = parsed.iter().map(|(_, r)| r.outcome).collect();
        assert_eq!(
            outcomes,
            [
                Outcome::Fail,
                Outcome::Pass,
                Outcome::Xfail,
                Outcome::Xpass,
                Outcome::Skip,
                Outcome::Fail,
                Outcome::Fail,
                Outcome::Fail
            ]
        );
        assert_eq!(parsed[0].0, "mini :: fail.mlir");
        assert!(parse_report(b"not json").is_err());
        assert!(parse_report(b"{}").unwrap().is_empty());
    }

    /// A "lit" that writes no report: every test of the batch is an error
    /// naming the suite, never a pass.
    #[test]
    fn a_lit_without_a_report_is_an_error_naming_the_suite() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let suite = dir.path().join("suite");
        std::fs::create_dir_all(&suite).unwrap();
        std::fs::write(suite.join("lit.cfg.py"), "config.name = 'x'\n").unwrap();
        std::fs::write(suite.join("a.mlir"), "// RUN: true\n").unwrap();
        let fake = dir.path().join("lit");
        std::fs::write(
            &fake,
            "#!/bin/sh\necho 'lit: something went wrong' >&2\nexit 0\n",
        )
        .unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let program = LitProgram {
            lit: fake,
            path: Vec::new(),
            identity: "fake".into(),
        };
        let batch = Batch {
            program: &program,
            tools: dir.path(),
            jobs: 1,
            timeout: Duration::from_secs(30),
            work: dir.path().join("work"),
        };
        let case = LitCase {
            suite: suite.clone(),
            path: "a.mlir".into(),
            requires: Vec::new(),
        };
        let err = run(&batch, &suite, &[case]).unwrap_err();
        assert!(
            err.message.contains("lit could not run the suite"),
            "{}",
            err.message
        );
        assert!(
            err.causes
                .iter()
                .any(|c| c.starts_with("lit: something went wrong")),
            "{:?}",
            err.causes
        );
        // Nothing was written into the suite.
        assert!(!suite.join("Output").exists());
    }

    /// A "lit" (a shell script standing in for it) in a fresh directory,
    /// with a one-test suite beside it.
    fn fake_lit(script: &str) -> (tempfile::TempDir, LitProgram, PathBuf) {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let suite = dir.path().join("suite");
        std::fs::create_dir_all(&suite).unwrap();
        std::fs::write(suite.join("lit.cfg.py"), "config.name = 'x'\n").unwrap();
        std::fs::write(suite.join("a.mlir"), "// RUN: false\n").unwrap();
        std::fs::write(suite.join("b.mlir"), "// RUN: false\n").unwrap();
        let fake = dir.path().join("lit");
        std::fs::write(&fake, format!("#!/bin/sh\n{script}")).unwrap();
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
        let program = LitProgram {
            lit: fake,
            path: Vec::new(),
            identity: "fake".into(),
        };
        (dir, program, suite)
    }

    fn case(suite: &Path, path: &str) -> LitCase {
        LitCase {
            suite: suite.to_path_buf(),
            path: path.into(),
            requires: Vec::new(),
        }
    }

    /// The report path: the argument after `-o`.
    const REPORT: &str = "while [ \"$1\" != -o ]; do shift; done; r=\"$2\"\n";

    /// A lit.cfg.py that calls `sys.exit(0)` or `os._exit(0)` ends lit
    /// with status 0 and no list: an error naming the suite, never "no
    /// tests".
    #[test]
    fn a_lit_that_exits_0_without_a_list_is_an_error_naming_the_suite() {
        let (dir, program, suite) = fake_lit("exit 0\n");
        let err = discover(&program, &suite, &dir.path().join("work")).unwrap_err();
        assert!(
            err.message.contains("lit listed no tests of the suite"),
            "{}",
            err.message
        );
        assert!(
            err.message.contains(&suite.display().to_string()),
            "{}",
            err.message
        );
        assert!(err.hint.unwrap().contains("sys.exit"));
        // A list that names no file of the suite: the same.
        let (dir, program, suite) =
            fake_lit("echo '-- Available Tests --'\necho '  x :: gone.mlir'\n");
        let err = discover(&program, &suite, &dir.path().join("work")).unwrap_err();
        assert!(
            err.message
                .contains("lit listed no test files of the suite"),
            "{}",
            err.message
        );
        // lit's own list is read.
        let (dir, program, suite) =
            fake_lit("echo '-- Available Tests --'\necho '  x :: b.mlir'\necho '  x :: a.mlir'\n");
        let cases = discover(&program, &suite, &dir.path().join("work")).unwrap();
        assert_eq!(
            cases.iter().map(|c| c.path.as_str()).collect::<Vec<_>>(),
            ["a.mlir", "b.mlir"]
        );
    }

    fn make_batch<'a>(program: &'a LitProgram, dir: &'a Path) -> Batch<'a> {
        Batch {
            program,
            tools: dir,
            jobs: 1,
            timeout: Duration::from_secs(30),
            work: dir.join("work"),
        }
    }

    /// A report without a result for every test lit was given: an error
    /// naming the suite and the test, not a partial result.
    #[test]
    fn a_report_missing_a_listed_test_is_an_error_naming_the_suite() {
        let (dir, program, suite) = fake_lit(&format!(
            "{REPORT}echo '{{\"tests\":[{{\"name\":\"x :: a.mlir\",\"code\":\"PASS\"}}]}}' > \"$r\"\nexit 0\n"
        ));
        let batch = make_batch(&program, dir.path());
        let err = run(
            &batch,
            &suite,
            &[case(&suite, "a.mlir"), case(&suite, "b.mlir")],
        )
        .unwrap_err();
        assert!(
            err.message
                .contains("lit reported 1 of the 2 tests it listed in the suite"),
            "{}",
            err.message
        );
        assert!(
            err.causes
                .iter()
                .any(|c| c.contains("no result for b.mlir")),
            "{:?}",
            err.causes
        );
        // Both there: both results, in order.
        let (dir, program, suite) = fake_lit(&format!(
            "{REPORT}echo '{{\"tests\":[{{\"name\":\"x :: b.mlir\",\"code\":\"FAIL\"}},{{\"name\":\"x :: a.mlir\",\"code\":\"PASS\"}}]}}' > \"$r\"\nexit 1\n"
        ));
        let batch = make_batch(&program, dir.path());
        let results = run(
            &batch,
            &suite,
            &[case(&suite, "a.mlir"), case(&suite, "b.mlir")],
        )
        .unwrap();
        assert_eq!(
            results.iter().map(|r| r.outcome).collect::<Vec<_>>(),
            [Outcome::Pass, Outcome::Fail]
        );
    }

    /// A report path the configuration replaced with a FIFO (or a link to
    /// one) is refused at once: lockstep never waits on it.
    #[test]
    fn a_report_replaced_by_a_fifo_is_refused_at_once() {
        let (dir, program, suite) =
            fake_lit(&format!("{REPORT}rm -f \"$r\"; mkfifo \"$r\"\nexit 0\n"));
        let batch = make_batch(&program, dir.path());
        let err = run(&batch, &suite, &[case(&suite, "a.mlir")]).unwrap_err();
        assert!(err.message.contains("lit's report on"), "{}", err.message);
        assert!(
            err.causes.iter().any(|c| c.contains("a FIFO")),
            "{:?}",
            err.causes
        );
        // The list read back from a lit that replaced its own stdout file
        // with a FIFO: refused too.
        let (dir, program, suite) =
            fake_lit("out=$(readlink /proc/$$/fd/1); rm -f \"$out\"; mkfifo \"$out\"\nexit 0\n");
        let err = discover(&program, &suite, &dir.path().join("work")).unwrap_err();
        assert!(err.render().contains("a FIFO"), "{}", err.render());
    }

    proptest::proptest! {
        #[test]
        fn any_report_text_is_read_without_panicking(text in "(.|\n){0,300}") {
            let _ = parse_report(text.as_bytes());
        }
    }
}
