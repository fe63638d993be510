//! pytest suites (`[[test.pytest]]` of lockstep.toml): a project's Python
//! tests run by the real pytest against the packages it built, each pytest
//! test a lockstep test.
//!
//! pytest itself lists the tests (its configuration, conftest.py and
//! plugins decide what a test is) and runs them; lockstep chooses which
//! (`-k`, `-m`, `--last-failed`, `--shard`) and reads the outcomes back from
//! pytest's own JUnit report, never from its console. A small plugin of
//! lockstep's, loaded with `-p` from the run directory, does three things
//! pytest has no flag for: it writes the collected node ids (with their
//! marks and the modules that failed to import) as JSON, it keeps only the
//! node ids lockstep selected (read from a file: no command-line length
//! limit), and it marks a non-strict XPASS in the report (pytest's JUnit
//! writes it as a plain pass).
//!
//! The venv: the one made from the wheelhouse manifest when there is one
//! (exactly its wheels, then the suite's `requirements` and what the wheels
//! require from the default index: [`lockstep_python::venv::create_for_tests`]),
//! kept in the cache under a key of the manifest's bytes, the requirements
//! and the Python; else the project's own venv (`.venv` beside
//! lockstep.toml, else `$VIRTUAL_ENV`), which lockstep never installs into.
//! A suite that cannot run (no venv, pytest missing, pytest ending before
//! it listed anything) is one failing test naming why; the other tests of
//! the run still run. pytest runs in lockstep.toml's directory
//! (`--rootdir` there: node ids are relative to it) without writing into
//! the tree (`-p no:cacheprovider`, no bytecode), without `PYTEST_ADDOPTS`
//! (the suite's `args` are the configuration) and without lockstep's
//! credentials.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use lockstep_core::events::Sink;
use lockstep_core::Error;
use serde::Deserialize;

use crate::model::Outcome;

/// The plugin's module name (a file in a directory put on `PYTHONPATH`).
const PLUGIN_MODULE: &str = "_lockstep_pytest";

/// The plugin: lists (`LOCKSTEP_PYTEST_COLLECT`), selects
/// (`LOCKSTEP_PYTEST_SELECT`) and marks non-strict XPASSes.
const PLUGIN: &str = r#"# Written by lockstep for one run: lists and selects tests, marks XPASS.
import json
import os

import pytest

_errors = []


def _read_selection():
    path = os.environ.get("LOCKSTEP_PYTEST_SELECT")
    if not path:
        return None
    with open(path, encoding="utf-8") as f:
        return set(json.load(f))


def pytest_collectreport(report):
    if report.failed:
        _errors.append({"nodeid": report.nodeid, "message": str(report.longrepr)[-4000:]})


def pytest_collection_modifyitems(session, config, items):
    wanted = _read_selection()
    if wanted is None:
        return
    keep = [item for item in items if item.nodeid in wanted]
    dropped = [item for item in items if item.nodeid not in wanted]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep


def pytest_collection_finish(session):
    path = os.environ.get("LOCKSTEP_PYTEST_COLLECT")
    if not path:
        return
    listed = {
        "items": [
            {"nodeid": item.nodeid, "markers": sorted({m.name for m in item.iter_markers()})}
            for item in session.items
        ],
        "errors": _errors,
    }
    with open(path + ".part", "w", encoding="utf-8") as f:
        json.dump(listed, f)
    os.replace(path + ".part", path)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when == "call" and report.passed and hasattr(report, "wasxfail"):
        item.user_properties.append(("lockstep_outcome", "xpassed"))
"#;

/// How long listing a suite's tests may take.
pub const LIST_TIMEOUT: Duration = Duration::from_secs(300);

/// What a pytest run may take beyond its tests' own time (its start,
/// collection, writing the report).
const MARGIN: Duration = Duration::from_secs(300);

/// The largest list or report read back.
const MAX_READ_BYTES: u64 = 256 << 20;

/// Lines of pytest's output a failure keeps.
const TAIL_LINES: usize = 30;

/// Arguments of a suite's `args` that lockstep sets itself.
const OWN_ARGS: &[&str] = &[
    "--junitxml",
    "--junit-xml",
    "--collect-only",
    "--co",
    "--rootdir",
    "--continue-on-collection-errors",
];

/// pytest marks that say how a test is called, not what it is: not markers.
const MECHANICS: &[&str] = &["parametrize", "usefixtures", "filterwarnings"];

/// One `[[test.pytest]]` table.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PytestConfig {
    /// The suite's name in results (each test's group).
    pub name: String,
    /// Passed to pytest, relative to lockstep.toml (default `["tests"]`).
    #[serde(default = "default_paths")]
    pub paths: Vec<String>,
    /// Extra pytest arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Installed beside the wheels (default `["pytest"]`).
    #[serde(default = "default_requirements")]
    pub requirements: Vec<String>,
}

fn default_paths() -> Vec<String> {
    vec!["tests".into()]
}

fn default_requirements() -> Vec<String> {
    vec!["pytest".into()]
}

/// Refuses what serde accepts in `[[test.pytest]]` but cannot run: a bad
/// or repeated name, no paths, a path that does not exist or leaves the
/// project, an argument lockstep sets itself, an empty requirement.
pub fn check_configs(configs: &[PytestConfig], root: &Path, origin: &Path) -> Result<(), Error> {
    let mut names = std::collections::HashSet::new();
    for config in configs {
        let name = &config.name;
        crate::names::check_name(name, "[[test.pytest]]", origin)?;
        if !names.insert(name.as_str()) {
            return Err(Error::usage(format!(
                "two [[test.pytest]] suites in {} are named {name:?}",
                origin.display()
            ))
            .hint("give each suite its own name: it is the group of its tests in results"));
        }
        if config.paths.is_empty() {
            return Err(Error::usage(format!(
                "[[test.pytest]] {name:?} in {} has no paths",
                origin.display()
            ))
            .hint("name the directories or files pytest collects, e.g. `paths = [\"tests\"]`"));
        }
        for path in &config.paths {
            let full = lockstep_core::fs::inside_tree(root, path, "a [[test.pytest]] path")
                .map_err(|e| {
                    e.context(format!("[[test.pytest]] {name:?} in {}", origin.display()))
                })?;
            if !full.exists() {
                return Err(Error::usage(format!(
                    "path {path:?} of [[test.pytest]] {name:?} in {} does not exist ({})",
                    origin.display(),
                    full.display()
                ))
                .hint(
                    "paths are relative to lockstep.toml's directory; fix the path or remove it",
                ));
            }
        }
        for arg in &config.args {
            let flag = arg.split('=').next().unwrap_or(arg);
            if OWN_ARGS.contains(&flag) {
                return Err(Error::usage(format!(
                    "args of [[test.pytest]] {name:?} in {} give {flag}, which lockstep sets itself",
                    origin.display()
                ))
                .hint("lockstep writes pytest's JUnit report and lists the tests itself; use `lockstep test --junit FILE` for a report"));
            }
        }
        if config.requirements.iter().any(|r| r.trim().is_empty()) {
            return Err(Error::usage(format!(
                "[[test.pytest]] {name:?} in {} has an empty requirement",
                origin.display()
            ))
            .hint(
                "write requirements as pip does, e.g. `requirements = [\"pytest>=8\", \"numpy\"]`",
            ));
        }
    }
    Ok(())
}

/// A suite ready to list: where pytest runs and in which Python.
#[derive(Debug)]
pub struct PytestSuite {
    pub name: String,
    /// Where pytest runs (lockstep.toml's directory; its `--rootdir`).
    pub root: PathBuf,
    pub paths: Vec<String>,
    pub args: Vec<String>,
    /// The venv's python, or why the suite cannot run.
    pub python: Result<PathBuf, String>,
    /// Which venv, in words.
    pub venv: String,
}

/// One pytest test (or, with `problem`, a suite that could not run).
#[derive(Debug, Clone)]
pub struct PytestCase {
    pub suite: Arc<PytestSuite>,
    /// pytest's node id (`tests/test_x.py::test_y[1]`), relative to the root.
    pub nodeid: String,
    /// Why the test fails without running (the suite has no venv or
    /// pytest, or pytest listed nothing).
    pub problem: Option<String>,
}

/// Where a suite's packages come from.
pub enum Packages<'a> {
    /// A wheelhouse manifest: a venv of exactly its wheels.
    Manifest(&'a Path),
    /// No wheelhouse: the project's own venv.
    Project,
}

/// The suites of `configs`, each with its venv (made or found here; a
/// suite without one carries why).
pub fn prepare(
    configs: &[PytestConfig],
    root: &Path,
    packages: Packages<'_>,
    sink: &dyn Sink,
) -> Vec<Arc<PytestSuite>> {
    let mut venvs: HashMap<Vec<String>, (Result<PathBuf, String>, String)> = HashMap::new();
    configs
        .iter()
        .map(|config| {
            let (python, venv) = venvs
                .entry(config.requirements.clone())
                .or_insert_with(|| venv_for(&packages, &config.requirements, root, sink))
                .clone();
            let python = python.and_then(|p| has_pytest(&p, &venv).map(|()| p));
            Arc::new(PytestSuite {
                name: config.name.clone(),
                root: root.to_path_buf(),
                paths: config.paths.clone(),
                args: config.args.clone(),
                python,
                venv,
            })
        })
        .collect()
}

/// The venv's python and its description, or why there is none.
fn venv_for(
    packages: &Packages<'_>,
    requirements: &[String],
    root: &Path,
    sink: &dyn Sink,
) -> (Result<PathBuf, String>, String) {
    match packages {
        Packages::Manifest(manifest) => {
            let venv = format!("the venv of {}", manifest.display());
            (wheel_venv(manifest, requirements, sink), venv)
        }
        Packages::Project => match project_venv(root) {
            Some(dir) => {
                let venv = format!("the project's venv {}", dir.display());
                (Ok(dir.join("bin/python")), venv)
            }
            None => (
                Err(format!(
                    "no venv to run pytest in: no wheelhouse manifest (`lockstep pkg build`, or --wheels FILE) and no {} or $VIRTUAL_ENV",
                    root.join(".venv").display()
                )),
                "no venv".into(),
            ),
        },
    }
}

/// `.venv` beside lockstep.toml, else the active `$VIRTUAL_ENV`.
fn project_venv(root: &Path) -> Option<PathBuf> {
    let local = root.join(".venv");
    if local.join("bin/python").exists() {
        return Some(local);
    }
    let active = PathBuf::from(std::env::var_os("VIRTUAL_ENV")?);
    active.join("bin/python").exists().then_some(active)
}

/// The venv of `manifest`'s wheels plus `requirements`, kept in the cache
/// (made once per manifest, requirements and Python; under a lock, so
/// parallel runs make it once).
fn wheel_venv(
    manifest: &Path,
    requirements: &[String],
    sink: &dyn Sink,
) -> Result<PathBuf, String> {
    let text = |e: Error| {
        let mut words = e.message.clone();
        for cause in &e.causes {
            words.push_str(": ");
            words.push_str(cause);
        }
        words
    };
    let bytes = lockstep_core::fs::read_input("the wheelhouse manifest", manifest, 64 << 20)
        .map_err(text)?;
    let mut key = lockstep_core::hash::sha256_bytes(&bytes);
    key.push_str(&requirements.join("\n"));
    key.push_str(&std::env::var("UV_PYTHON").unwrap_or_default());
    key.push_str(&wheels_python(manifest).unwrap_or_default());
    let key = lockstep_core::hash::sha256_bytes(key.as_bytes());
    let root = lockstep_core::paths::cache().join("pytest-venvs");
    let dir = root.join(key.get(..24).unwrap_or(&key));
    let ready = |dir: &Path| dir.join(lockstep_python::venv::MARKER).is_file();
    if ready(&dir) {
        return Ok(dir.join("bin/python"));
    }
    fs_err::create_dir_all(&root).map_err(|e| text(e.into()))?;
    let lock = root.join(format!("{}.lock", lockstep_core::fs::file_name(&dir)));
    let _lock = lockstep_core::lock::FileLock::wait(&lock, "making a pytest venv", Some(sink))
        .map_err(text)?;
    if !ready(&dir) {
        let uv = lockstep_python::uv::find_default(sink).map_err(text)?;
        let from = lockstep_python::venv::From::Manifest(manifest);
        let python = wheels_python(manifest);
        lockstep_python::venv::create_for_tests(
            &uv,
            &dir,
            from,
            python.as_deref(),
            requirements,
            sink,
        )
        .map_err(text)?;
    }
    Ok(dir.join("bin/python"))
}

/// The Python the manifest's wheels are built for (`3.11` of `cp311`
/// wheels), so the venv is made with one they install on; with wheels for
/// several, the lowest; `None` for pure wheels only, or when `UV_PYTHON`
/// chooses (uv's own choice then).
fn wheels_python(manifest: &Path) -> Option<String> {
    if std::env::var("UV_PYTHON").is_ok_and(|p| !p.trim().is_empty()) {
        return None;
    }
    let lock = lockstep_python::pylock::Lock::load(manifest).ok()?;
    let mut versions: Vec<(u32, u32)> = lock
        .packages
        .iter()
        .flat_map(|p| p.wheels.iter())
        .filter_map(|w| w.name.as_deref())
        .filter_map(cpython_of_wheel)
        .collect();
    versions.sort();
    versions.dedup();
    versions
        .first()
        .map(|(major, minor)| format!("{major}.{minor}"))
}

/// `(3, 11)` of a wheel file name whose python tag is `cp311` (an abi3
/// wheel's is its lowest Python, which any later one also installs).
fn cpython_of_wheel(name: &str) -> Option<(u32, u32)> {
    let stem = name.strip_suffix(".whl")?;
    let parts: Vec<&str> = stem.split('-').collect();
    let tag = parts.get(parts.len().checked_sub(3)?)?;
    let digits = tag.split('.').next()?.strip_prefix("cp")?;
    let (major, minor) = digits.split_at_checked(1)?;
    Some((major.parse().ok()?, minor.parse().ok()?))
}

/// Whether pytest imports in the venv of `python` (within a minute).
fn has_pytest(python: &Path, venv: &str) -> Result<(), String> {
    use lockstep_core::process::{capture, command, Bounds, Exit};
    let mut cmd = command(python);
    cmd.args(["-c", "import pytest"])
        .env("PYTHONDONTWRITEBYTECODE", "1");
    let bounds = Bounds {
        max_stdout: Some(64 << 10),
        max_stderr: Some(64 << 10),
    };
    match capture(&mut cmd, None, Some(Duration::from_secs(60)), bounds) {
        Ok(c) if c.exit == Exit::Code(0) => Ok(()),
        Ok(_) => Err(format!(
            "pytest is not installed in {venv}: add it to the suite's requirements (with a wheelhouse) or install it there (`uv pip install --python {} pytest`)",
            python.display()
        )),
        Err(e) => Err(format!("cannot start {} of {venv}: {e}", python.display())),
    }
}

/// What the plugin listed.
#[derive(Debug, Default, Deserialize)]
pub struct Listed {
    #[serde(default)]
    pub items: Vec<Item>,
    #[serde(default)]
    pub errors: Vec<CollectError>,
}

#[derive(Debug, Deserialize)]
pub struct Item {
    pub nodeid: String,
    #[serde(default)]
    pub markers: Vec<String>,
}

#[derive(Debug, Deserialize)]
pub struct CollectError {
    pub nodeid: String,
    #[serde(default)]
    pub message: String,
}

/// The tests of `suite`: what pytest collects, modules that fail to import
/// included (each a test pytest reports as an error); a suite that cannot
/// run, or whose pytest lists nothing, is one test carrying why.
pub fn discover(suite: &Arc<PytestSuite>, work: &Path) -> Vec<(PytestCase, Vec<String>)> {
    let problem = |why: String| {
        vec![(
            PytestCase {
                suite: suite.clone(),
                nodeid: String::new(),
                problem: Some(why),
            },
            Vec::new(),
        )]
    };
    let python = match &suite.python {
        Ok(p) => p.clone(),
        Err(why) => return problem(why.clone()),
    };
    let listed = match list(suite, &python, work) {
        Ok(listed) => listed,
        Err(e) => return problem(e),
    };
    let mut cases: Vec<(PytestCase, Vec<String>)> = Vec::new();
    for item in listed.items {
        let markers = item
            .markers
            .into_iter()
            .filter(|m| !MECHANICS.contains(&m.as_str()) && is_marker(m))
            .collect();
        cases.push((
            PytestCase {
                suite: suite.clone(),
                nodeid: item.nodeid,
                problem: None,
            },
            markers,
        ));
    }
    for error in listed.errors {
        if error.nodeid.is_empty() || cases.iter().any(|(c, _)| c.nodeid == error.nodeid) {
            continue;
        }
        cases.push((
            PytestCase {
                suite: suite.clone(),
                nodeid: error.nodeid,
                problem: None,
            },
            Vec::new(),
        ));
    }
    if cases.is_empty() {
        return problem(format!(
            "pytest collected no tests from {} (in {})",
            suite.paths.join(", "),
            suite.root.display()
        ));
    }
    cases
}

/// Whether `name` is a marker `-m` can select.
fn is_marker(name: &str) -> bool {
    crate::markers::MarkerExpr::parse(name)
        .ok()
        .is_some_and(|e| e.single_marker() == Some(name))
}

/// Runs the plugin's listing.
fn list(suite: &PytestSuite, python: &Path, work: &Path) -> Result<Listed, String> {
    let dir = work.join(&suite.name);
    fs_err::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let out = dir.join("collected.json");
    let log = dir.join("collect.log");
    let _ = std::fs::remove_file(&out);
    let mut argv = base_argv(suite, python, work)?;
    argv.extend(["--collect-only".into(), "-q".into()]);
    argv.extend(suite.paths.iter().cloned());
    let finished = spawn(
        suite,
        &argv,
        work,
        &log,
        &[("LOCKSTEP_PYTEST_COLLECT", out.display().to_string())],
        LIST_TIMEOUT,
    )?;
    if !out.is_file() {
        return Err(format!(
            "pytest listed no tests of [[test.pytest]] {:?} ({}): {}",
            suite.name,
            finished.exit.describe(),
            last_lines(&log, 6).join(" | ")
        ) + &format!(" (log: {})", log.display()));
    }
    let bytes = lockstep_core::fs::read_tree_file("pytest's list of tests", &out, MAX_READ_BYTES)
        .map_err(|e| e.message)?;
    serde_json::from_slice(&bytes)
        .map_err(|e| format!("cannot read pytest's list {}: {e}", out.display()))
}

/// `python -m pytest` with the plugin, no cache provider, the root as
/// rootdir, then the suite's own args.
fn base_argv(suite: &PytestSuite, python: &Path, work: &Path) -> Result<Vec<String>, String> {
    let plugin_dir = work.join("plugin");
    fs_err::create_dir_all(&plugin_dir).map_err(|e| e.to_string())?;
    let plugin = plugin_dir.join(format!("{PLUGIN_MODULE}.py"));
    if !plugin.is_file() {
        lockstep_core::fs::write_atomic(&plugin, PLUGIN.as_bytes()).map_err(|e| e.message)?;
    }
    let mut argv = vec![
        python.display().to_string(),
        "-m".into(),
        "pytest".into(),
        "-p".into(),
        PLUGIN_MODULE.into(),
        "-p".into(),
        "no:cacheprovider".into(),
        format!("--rootdir={}", suite.root.display()),
    ];
    argv.extend(suite.args.iter().cloned());
    Ok(argv)
}

/// Runs pytest in the suite's root with the plugin on `PYTHONPATH`.
fn spawn(
    suite: &PytestSuite,
    argv: &[String],
    work: &Path,
    log: &Path,
    env: &[(&str, String)],
    timeout: Duration,
) -> Result<lockstep_core::process::Finished, String> {
    let mut path = vec![work.join("plugin").display().to_string()];
    if let Ok(existing) = std::env::var("PYTHONPATH") {
        if !existing.is_empty() {
            path.push(existing);
        }
    }
    let mut vars = vec![
        ("PYTHONPATH".to_string(), path.join(":")),
        ("PYTHONDONTWRITEBYTECODE".to_string(), "1".to_string()),
    ];
    vars.extend(env.iter().map(|(k, v)| (k.to_string(), v.clone())));
    let spec = lockstep_core::process::Spec {
        argv: argv.to_vec(),
        cwd: suite.root.clone(),
        env: vars,
        timeout: Some(timeout),
        log: log.to_path_buf(),
        header: Some(format!(
            "$ {}",
            lockstep_core::process::shell_command(&suite.root, argv)
        )),
    };
    let mut remove = lockstep_core::process::secret_vars(&[]);
    remove.extend(
        [
            "PYTEST_ADDOPTS",
            "LOCKSTEP_PYTEST_SELECT",
            "LOCKSTEP_PYTEST_COLLECT",
        ]
        .map(String::from),
    );
    let options = lockstep_core::process::Options {
        env_remove: remove,
        die_with_parent: true,
        stdout: None,
        scrub: None,
    };
    lockstep_core::process::run_with(&spec, &options, |_| {}).map_err(|e| e.message)
}

/// The last `n` lines of a log (for an error).
fn last_lines(log: &Path, n: usize) -> Vec<String> {
    let text = lockstep_core::fs::read_tree_file("pytest's log", log, MAX_READ_BYTES)
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default();
    lockstep_core::words::last_lines(&text, n)
}

/// One test's outcome as pytest reported it.
#[derive(Debug, Clone, PartialEq)]
pub struct Reported {
    pub outcome: Outcome,
    /// pytest's message (the skip or xfail reason, the failure's first line).
    pub message: String,
    /// The failure's text.
    pub text: String,
    pub seconds: f64,
}

/// What one pytest run gave: each selected node id's outcome (`None`: not
/// in the report), the command, the log.
pub struct Ran {
    pub reported: Vec<Option<Reported>>,
    pub command: String,
    pub log: PathBuf,
}

/// Runs the selected `nodeids` of `suite` in one pytest process (their
/// files as arguments, the ids as the plugin's selection) and reads its
/// JUnit report back. An error: pytest wrote no report (it crashed, was
/// killed or timed out before the end).
pub fn run(
    suite: &PytestSuite,
    nodeids: &[String],
    work: &Path,
    per_test: Duration,
) -> Result<Ran, (String, Ran)> {
    let dir = work.join(&suite.name);
    let log = dir.join("pytest.log");
    let junit = dir.join("junit.xml");
    let select = dir.join("selected.json");
    let empty = |command: String| Ran {
        reported: vec![None; nodeids.len()],
        command,
        log: log.clone(),
    };
    let python = match &suite.python {
        Ok(p) => p.clone(),
        Err(why) => return Err((why.clone(), empty(String::new()))),
    };
    let prepared = (|| -> Result<Vec<String>, String> {
        fs_err::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let _ = std::fs::remove_file(&junit);
        let ids = serde_json::to_vec(nodeids).map_err(|e| e.to_string())?;
        lockstep_core::fs::write_atomic(&select, &ids).map_err(|e| e.message)?;
        let mut argv = base_argv(suite, &python, work)?;
        argv.extend([
            "--continue-on-collection-errors".into(),
            "-o".into(),
            "junit_family=xunit2".into(),
            format!("--junitxml={}", junit.display()),
        ]);
        argv.extend(files_of(nodeids));
        Ok(argv)
    })();
    let argv = match prepared {
        Ok(argv) => argv,
        Err(e) => return Err((e, empty(String::new()))),
    };
    let command = lockstep_core::process::shell_command(&suite.root, &argv);
    let count = u32::try_from(nodeids.len()).unwrap_or(u32::MAX).max(1);
    let timeout = per_test.saturating_mul(count).saturating_add(MARGIN);
    let finished = spawn(
        suite,
        &argv,
        work,
        &log,
        &[("LOCKSTEP_PYTEST_SELECT", select.display().to_string())],
        timeout,
    );
    let ended = match &finished {
        Ok(f) => f.exit.describe(),
        Err(e) => return Err((format!("cannot start pytest: {e}"), empty(command))),
    };
    if !junit.is_file() {
        let why = format!(
            "pytest ended ({ended}) before writing its JUnit report: {}",
            last_lines(&log, 4).join(" | ")
        );
        return Err((why, empty(command)));
    }
    let read = lockstep_core::fs::read_tree_file("pytest's JUnit report", &junit, MAX_READ_BYTES)
        .map_err(|e| e.message)
        .and_then(|b| parse_junit(&String::from_utf8_lossy(&b)));
    match read {
        Ok(cases) => Ok(Ran {
            reported: match_cases(nodeids, &cases),
            command,
            log,
        }),
        Err(e) => Err((
            format!("cannot read pytest's JUnit report {}: {e}", junit.display()),
            empty(command),
        )),
    }
}

/// The command that reruns one test by hand, from a shell (without
/// lockstep's plugin: pytest selects the node id itself).
pub fn reproduce(suite: &PytestSuite, nodeid: &str) -> String {
    let python = match &suite.python {
        Ok(p) => p.display().to_string(),
        Err(_) => "python".into(),
    };
    let mut argv = vec![python, "-m".into(), "pytest".into()];
    argv.extend(suite.args.iter().cloned());
    argv.push(nodeid.to_string());
    lockstep_core::process::shell_command(&suite.root, &argv)
}

/// The files of `nodeids` (what pytest is given), each once, in order.
fn files_of(nodeids: &[String]) -> Vec<String> {
    let mut files: Vec<String> = Vec::new();
    for id in nodeids {
        let file = id.split("::").next().unwrap_or(id).to_string();
        if !files.contains(&file) {
            files.push(file);
        }
    }
    files
}

/// `(classname, name)` pytest's JUnit gives a node id (its
/// `mangle_test_address`): the file's path dotted without `.py`, the
/// classes, the function with its parameters.
pub fn junit_address(nodeid: &str) -> (String, String) {
    let (path, params) = match nodeid.find('[') {
        Some(i) => (&nodeid[..i], &nodeid[i..]),
        None => (nodeid, ""),
    };
    let mut names: Vec<String> = path.split("::").map(str::to_string).collect();
    if let Some(first) = names.first_mut() {
        let dotted = first.replace('/', ".");
        *first = dotted.strip_suffix(".py").unwrap_or(&dotted).to_string();
    }
    if let Some(last) = names.last_mut() {
        last.push_str(params);
    }
    let name = names.pop().unwrap_or_default();
    (names.join("."), name)
}

/// Each node id's case of the report (`None`: the report lacks it).
fn match_cases(nodeids: &[String], cases: &[JunitCase]) -> Vec<Option<Reported>> {
    let mut by_address: BTreeMap<(&str, &str), &JunitCase> = BTreeMap::new();
    for case in cases {
        by_address.insert((&case.classname, &case.name), case);
    }
    nodeids
        .iter()
        .map(|id| {
            let (classname, name) = junit_address(id);
            by_address
                .get(&(classname.as_str(), name.as_str()))
                .map(|c| c.reported())
        })
        .collect()
}

/// A `<testcase>` of pytest's JUnit report.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JunitCase {
    pub classname: String,
    pub name: String,
    pub seconds: f64,
    /// `failure` or `error`: (message, text).
    pub failure: Option<(String, String)>,
    pub error: Option<(String, String)>,
    /// `skipped`: (type, message).
    pub skipped: Option<(String, String)>,
    /// `<property name=... value=...>`.
    pub properties: Vec<(String, String)>,
}

impl JunitCase {
    /// The outcome: a failure or error fails (`[XPASS(strict)]` is an
    /// XPASS), a `pytest.xfail` skip is an XFAIL, another skip a SKIP, the
    /// plugin's mark a non-strict XPASS (a pass, as pytest counts it).
    pub fn reported(&self) -> Reported {
        let seconds = if self.seconds.is_finite() && self.seconds >= 0.0 {
            self.seconds
        } else {
            0.0
        };
        let make = |outcome, message: &str, text: &str| Reported {
            outcome,
            message: first_line(message),
            text: text.to_string(),
            seconds,
        };
        if let Some((message, text)) = self.failure.as_ref().or(self.error.as_ref()) {
            let what = if self.failure.is_some() {
                "failed"
            } else {
                "error"
            };
            let outcome = match message.starts_with("[XPASS(strict)]") {
                true => Outcome::Xpass,
                false => Outcome::Fail,
            };
            let message = if message.trim().is_empty() {
                format!("pytest: {what}")
            } else {
                format!("pytest: {what}: {message}")
            };
            return make(outcome, &message, text);
        }
        if let Some((kind, message)) = &self.skipped {
            return match kind.as_str() {
                "pytest.xfail" => make(Outcome::Xfail, &format!("pytest xfail: {message}"), ""),
                _ => make(Outcome::Skip, &format!("pytest skip: {message}"), ""),
            };
        }
        if self
            .properties
            .iter()
            .any(|(k, v)| k == "lockstep_outcome" && v == "xpassed")
        {
            return make(
                Outcome::Pass,
                "XPASS: an xfail-marked test passed (not strict: pytest counts it as passing)",
                "",
            );
        }
        make(Outcome::Pass, "", "")
    }
}

fn first_line(text: &str) -> String {
    text.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .chars()
        .take(500)
        .collect()
}

/// The `<testcase>`s of a JUnit report (any nesting of `<testsuites>` and
/// `<testsuite>`); an error when it is not well-formed XML.
pub fn parse_junit(xml: &str) -> Result<Vec<JunitCase>, String> {
    use quick_xml::events::{BytesStart, Event};
    fn attr(e: &BytesStart<'_>, name: &str) -> String {
        e.attributes()
            .flatten()
            .find(|a| a.key.as_ref() == name.as_bytes())
            .and_then(|a| a.unescape_value().ok().map(|v| v.into_owned()))
            .unwrap_or_default()
    }
    fn open_case(e: &BytesStart<'_>) -> JunitCase {
        JunitCase {
            classname: attr(e, "classname"),
            name: attr(e, "name"),
            seconds: attr(e, "time").parse().unwrap_or(0.0),
            ..JunitCase::default()
        }
    }
    /// A child of a testcase: what it says, its text to follow.
    fn child(case: &mut JunitCase, e: &BytesStart<'_>) -> Option<&'static str> {
        match e.name().as_ref() {
            b"failure" => {
                case.failure = Some((attr(e, "message"), String::new()));
                Some("failure")
            }
            b"error" => {
                case.error = Some((attr(e, "message"), String::new()));
                Some("error")
            }
            b"skipped" => {
                case.skipped = Some((attr(e, "type"), attr(e, "message")));
                None
            }
            b"property" => {
                case.properties.push((attr(e, "name"), attr(e, "value")));
                None
            }
            _ => None,
        }
    }
    const MAX_TEXT: usize = 64 << 10;
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut cases = Vec::new();
    let mut current: Option<JunitCase> = None;
    let mut text_of: Option<&'static str> = None;
    loop {
        let event = reader
            .read_event()
            .map_err(|e| format!("at byte {}: {e}", reader.buffer_position()))?;
        match event {
            Event::Eof => break,
            Event::Start(e) => match current.as_mut() {
                None if e.name().as_ref() == b"testcase" => current = Some(open_case(&e)),
                None => {}
                Some(case) => text_of = child(case, &e),
            },
            Event::Empty(e) => match current.as_mut() {
                None if e.name().as_ref() == b"testcase" => cases.push(open_case(&e)),
                None => {}
                Some(case) => {
                    child(case, &e);
                }
            },
            Event::End(e) => {
                if e.name().as_ref() == b"testcase" {
                    cases.extend(current.take());
                    text_of = None;
                } else if matches!(e.name().as_ref(), b"failure" | b"error") {
                    text_of = None;
                }
            }
            Event::Text(t) => {
                let piece = t.decode().map(|c| c.into_owned()).unwrap_or_default();
                append_text(current.as_mut(), text_of, &piece, MAX_TEXT);
            }
            Event::CData(t) => {
                let piece = t.decode().map(|c| c.into_owned()).unwrap_or_default();
                append_text(current.as_mut(), text_of, &piece, MAX_TEXT);
            }
            Event::GeneralRef(r) => {
                let piece = match r.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    _ => match r
                        .decode()
                        .map(|d| d.into_owned())
                        .unwrap_or_default()
                        .as_str()
                    {
                        "lt" => "<".into(),
                        "gt" => ">".into(),
                        "amp" => "&".into(),
                        "quot" => "\"".into(),
                        "apos" => "'".into(),
                        _ => String::new(),
                    },
                };
                append_text(current.as_mut(), text_of, &piece, MAX_TEXT);
            }
            _ => {}
        }
    }
    if current.is_some() {
        return Err("the report ends inside a <testcase>".into());
    }
    Ok(cases)
}

/// Adds `piece` to the text of the open failure or error, up to `max`.
fn append_text(case: Option<&mut JunitCase>, which: Option<&str>, piece: &str, max: usize) {
    let Some(case) = case else { return };
    let target = match which {
        Some("failure") => case.failure.as_mut(),
        Some("error") => case.error.as_mut(),
        _ => None,
    };
    if let Some((_, text)) = target {
        if text.len() < max {
            text.extend(piece.chars().take(max - text.len()));
        }
    }
}

/// The text a failure keeps: its last lines.
pub fn tail(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(TAIL_LINES)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_suite_configs_are_refused_naming_the_suite_and_setting() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("tests")).unwrap();
        let origin = dir.path().join("lockstep.toml");
        let suite = |name: &str, paths: &[&str], args: &[&str], reqs: &[&str]| PytestConfig {
            name: name.into(),
            paths: paths.iter().map(|p| p.to_string()).collect(),
            args: args.iter().map(|a| a.to_string()).collect(),
            requirements: reqs.iter().map(|r| r.to_string()).collect(),
        };
        let refused = |configs: &[PytestConfig], needle: &str| {
            let e = check_configs(configs, dir.path(), &origin).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{e:?}");
            let text = format!("{} {:?}", e.message, e.causes);
            assert!(text.contains(needle), "{needle}: {text}");
        };
        let good = suite("unit", &["tests"], &[], &["pytest"]);
        assert!(check_configs(std::slice::from_ref(&good), dir.path(), &origin).is_ok());
        refused(&[good.clone(), good.clone()], "two [[test.pytest]] suites");
        refused(
            &[suite("a/b", &["tests"], &[], &[])],
            "invalid [[test.pytest]] name",
        );
        refused(&[suite("unit", &[], &[], &[])], "has no paths");
        refused(&[suite("unit", &["nope"], &[], &[])], "does not exist");
        refused(
            &[suite("unit", &["../outside"], &[], &[])],
            "[[test.pytest]] \"unit\"",
        );
        refused(
            &[suite("unit", &["tests"], &["--junit-xml=x"], &[])],
            "lockstep sets itself",
        );
        refused(
            &[suite("unit", &["tests"], &["--co"], &[])],
            "lockstep sets itself",
        );
        refused(
            &[suite("unit", &["tests"], &[], &[" "])],
            "an empty requirement",
        );
    }

    #[test]
    fn a_wheels_python_is_its_cpython_tag() {
        assert_eq!(
            cpython_of_wheel("nanobind_example-0.0.1-cp311-cp311-manylinux_2_34_x86_64.whl"),
            Some((3, 11))
        );
        assert_eq!(
            cpython_of_wheel("x-1.0-cp39-abi3-linux_x86_64.whl"),
            Some((3, 9))
        );
        assert_eq!(cpython_of_wheel("calc-1.0-py3-none-any.whl"), None);
        assert_eq!(cpython_of_wheel("nonsense"), None);
        assert_eq!(cpython_of_wheel("a-cp-b-c.whl"), None);
    }

    #[test]
    fn node_ids_map_to_pytests_junit_addresses() {
        assert_eq!(
            junit_address("tests/test_calc.py::test_add"),
            ("tests.test_calc".into(), "test_add".into())
        );
        assert_eq!(
            junit_address("tests/test_calc.py::TestC::test_y[1-a.b::c]"),
            ("tests.test_calc.TestC".into(), "test_y[1-a.b::c]".into())
        );
        assert_eq!(
            junit_address("tests/test_broken.py"),
            ("".into(), "tests.test_broken".into())
        );
    }

    #[test]
    fn pytests_junit_outcomes_are_read_back() {
        let xml = r#"<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="1" failures="2" skipped="2" tests="7">
<testcase classname="t.test_a" name="test_pass" time="0.001" />
<testcase classname="t.test_a" name="test_fail" time="0.5"><failure message="assert 1 == 2">def test_fail():
&gt;       assert 1 == 2</failure></testcase>
<testcase classname="t.test_a" name="test_skip" time="0"><skipped type="pytest.skip" message="no GPU">t/test_a.py:9: no GPU</skipped></testcase>
<testcase classname="t.test_a" name="test_xfail" time="0"><skipped type="pytest.xfail" message="bug 12" /></testcase>
<testcase classname="t.test_a" name="test_strict" time="0"><failure message="[XPASS(strict)] bug 13" /></testcase>
<testcase classname="t.test_a" name="test_loose" time="0"><properties><property name="lockstep_outcome" value="xpassed" /></properties></testcase>
<testcase classname="" name="t.test_broken" time="0"><error message="collection failure">ImportError: no module x</error></testcase>
</testsuite></testsuites>"#;
        let cases = parse_junit(xml).expect("parses");
        let outcomes: Vec<Outcome> = cases.iter().map(|c| c.reported().outcome).collect();
        assert_eq!(
            outcomes,
            [
                Outcome::Pass,
                Outcome::Fail,
                Outcome::Skip,
                Outcome::Xfail,
                Outcome::Xpass,
                Outcome::Pass,
                Outcome::Fail
            ]
        );
        let fail = cases[1].reported();
        assert_eq!(fail.message, "pytest: failed: assert 1 == 2");
        assert!(fail.text.contains(">       assert 1 == 2"), "{}", fail.text);
        assert_eq!(fail.seconds, 0.5);
        assert!(cases[5].reported().message.starts_with("XPASS"));
        let ids: Vec<String> = [
            "t/test_a.py::test_fail",
            "t/test_broken.py",
            "t/test_a.py::test_missing",
        ]
        .map(String::from)
        .to_vec();
        let matched = match_cases(&ids, &cases);
        assert_eq!(matched[0].as_ref().map(|r| r.outcome), Some(Outcome::Fail));
        assert!(matched[1]
            .as_ref()
            .is_some_and(|r| r.text.contains("ImportError")));
        assert!(matched[2].is_none());
        assert!(parse_junit("<testsuite><testcase name=\"x\">").is_err());
    }

    proptest::proptest! {
        #[test]
        fn junit_reading_never_panics(xml in "\\PC{0,400}") {
            if let Ok(cases) = parse_junit(&xml) {
                for case in cases {
                    let _ = case.reported();
                }
            }
        }

        #[test]
        fn junit_addresses_never_panic(id in "\\PC{0,80}") {
            let _ = junit_address(&id);
        }
    }
}
