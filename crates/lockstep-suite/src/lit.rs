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
//! would override the command line). A configuration that does not load, or a lit that
//! writes no report, is an error naming the suite: no test is recorded as a
//! pass on a partial result.

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
const LIST_TIMEOUT: Duration = Duration::from_secs(300);

/// lit, and the directories put first on the RUN lines' `PATH`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LitProgram {
    pub lit: PathBuf,
    pub path: Vec<PathBuf>,
    /// What the tools are (a cache key part).
    pub identity: String,
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
    let listed = fs_err::read_to_string(&out).unwrap_or_default();
    if finished.exit != lockstep_core::process::Exit::Code(0) {
        return Err(config_error(suite, &finished.exit, &log));
    }
    let mut cases = Vec::new();
    for line in listed.lines() {
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
    cases.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(cases)
}

/// `REQUIRES:` features of a test (each a marker), from its first 64 KiB.
fn requires_of(file: &Path) -> Vec<String> {
    let text = lockstep_core::fs::read_input_text("a lit test", file, 64 << 10).unwrap_or_default();
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
        .saturating_add(Duration::from_secs(300));
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
    let parsed = match std::fs::metadata(&report) {
        Ok(meta) if meta.len() <= MAX_REPORT_BYTES => {
            let bytes = fs_err::read(&report)?;
            parse_report(&bytes).map_err(|why| {
                Error::failed(format!(
                    "lit's report on {} cannot be read",
                    suite.display()
                ))
                .cause(why)
                .cause(format!("log: {}", log.display()))
            })?
        }
        Ok(_) => {
            return Err(Error::failed(format!(
                "lit's report on {} is larger than lockstep reads",
                suite.display()
            )))
        }
        Err(_) => return Err(config_error(suite, &code, &log)),
    };
    let by_path: BTreeMap<String, LitResult> = parsed
        .into_iter()
        .filter_map(|(name, result)| {
            let path = name.split_once(" :: ").map(|(_, p)| p.trim().to_string())?;
            Some((path, result))
        })
        .collect();
    Ok(cases
        .iter()
        .map(|c| {
            by_path.get(&c.path).cloned().unwrap_or_else(|| LitResult {
                outcome: Outcome::Fail,
                code: "NO RESULT".into(),
                seconds: 0.0,
                output: format!(
                    "lit reported no result for this test (it exited with {}; log: {})",
                    code.describe(),
                    log.display()
                ),
            })
        })
        .collect())
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
    let text = std::fs::read_to_string(log).unwrap_or_default();
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
                .any(|c| c.contains("something went wrong")),
            "{:?}",
            err.causes
        );
        // Nothing was written into the suite.
        assert!(!suite.join("Output").exists());
    }

    proptest::proptest! {
        #[test]
        fn any_report_text_is_read_without_panicking(text in "(.|\n){0,300}") {
            let _ = parse_report(text.as_bytes());
        }
    }
}
