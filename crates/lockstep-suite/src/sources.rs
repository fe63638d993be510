//! Where tests come from: directories in the iree-test-suites layout (a case
//! is a directory with `run_module_io_flags.txt` and `model.mlir`/`.mlirbc`),
//! their JSON/JSON5 configs, and native `*.suite.toml` files.
//!
//! Parsing is strict: an unknown key or a malformed file is an error naming the
//! file, line and key, before anything runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lockstep_core::error::printable_line;
use lockstep_core::events::Sink;
use lockstep_core::Error;
use serde::Deserialize;

use crate::markers::MarkerExpr;
use crate::names::check_name;
use crate::walk::Walk;

/// A config file of the iree-test-suites runner.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SuiteConfig {
    pub config_name: String,
    #[serde(default)]
    pub iree_compile_flags: Vec<String>,
    #[serde(default)]
    pub iree_run_module_flags: Vec<String>,
    #[serde(default)]
    pub skip_compile_tests: Vec<String>,
    #[serde(default)]
    pub skip_run_tests: Vec<String>,
    #[serde(default)]
    pub expected_compile_failures: Vec<String>,
    #[serde(default)]
    pub expected_run_failures: Vec<String>,
    /// torch_ops benchmarks: each test's golden time in milliseconds.
    #[serde(default)]
    pub golden_times_ms: BTreeMap<String, f64>,
    /// torch_ops benchmarks pass when golden x this >= the measured time
    /// (default 1.1).
    #[serde(default)]
    pub tolerance_factor: Option<f64>,
    /// Where it was read from (for `--update-xfails` and messages).
    #[serde(skip)]
    pub path: PathBuf,
    /// True when the file is named `.json` but only JSON5 reads it.
    #[serde(skip)]
    pub json5_in_json: bool,
}

impl SuiteConfig {
    /// Reads a JSON or JSON5 config (at most [`MAX_SUITE_BYTES`]).
    pub fn load(path: &Path) -> Result<SuiteConfig, Error> {
        let text = lockstep_core::fs::read_input_text("--suite-config", path, MAX_SUITE_BYTES)?;
        SuiteConfig::parse(&text, path)
    }

    /// Parses and checks the text of a JSON or JSON5 config read from
    /// `origin` (which every error names, with the line and column where
    /// there is one). Never panics, whatever the text.
    pub fn parse(text: &str, origin: &Path) -> Result<SuiteConfig, Error> {
        let mut config: SuiteConfig = json5::from_str(text).map_err(|e| {
            let (location, message) = match &e {
                json5::Error::Message { msg, location: Some(l) } => {
                    (format!("{}:{}:{}", origin.display(), l.line, l.column), msg.clone())
                }
                json5::Error::Message { msg, location: None } => (origin.display().to_string(), msg.clone()),
            };
            Error::usage(format!("invalid suite config at {location}"))
                .cause(message)
                .hint("keys: config_name, iree_compile_flags, iree_run_module_flags, skip_compile_tests, skip_run_tests, expected_compile_failures, expected_run_failures, golden_times_ms, tolerance_factor")
        })?;
        check_name(&config.config_name, "config", origin)?;
        for (test, ms) in &config.golden_times_ms {
            if !ms.is_finite() || *ms <= 0.0 {
                return Err(Error::usage(format!(
                    "golden_times_ms of `{}` in {} is {ms}, not a time in milliseconds > 0",
                    printable_line(test),
                    origin.display()
                )));
            }
        }
        if let Some(f) = config.tolerance_factor {
            if !f.is_finite() || f <= 0.0 {
                return Err(Error::usage(format!(
                    "tolerance_factor in {} is {f}, not a number > 0",
                    origin.display()
                ))
                .hint("1.1 (the default) lets a benchmark be 10% slower than its golden time"));
            }
        }
        config.path = origin.to_path_buf();
        // iree-test-suites writes JSON5 into files named .json: accepted,
        // and said, since a strict JSON reader of the same file would fail.
        config.json5_in_json = origin.extension().is_some_and(|e| e == "json")
            && serde_json::from_str::<serde_json::Value>(text).is_err();
        Ok(config)
    }
}

/// A case in the iree-test-suites layout.
#[derive(Debug, Clone)]
pub struct LayoutCase {
    /// Path relative to the suite root, with `/` separators.
    pub name: String,
    pub dir: PathBuf,
    pub model: PathBuf,
}

fn hidden(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
}

/// Finds every case under `root` (sorted by name). `root` itself may be a case.
pub fn find_layout_cases(root: &Path, sink: &dyn Sink) -> Result<Vec<LayoutCase>, Error> {
    let mut cases = Vec::new();
    let mut walk = Walk::new(root, sink)?;
    while let Some((dir, depth, entries)) = walk.next_dir()? {
        if let Some(case) = layout_case(root, &dir) {
            cases.push(case);
            continue;
        }
        for entry in entries.iter().filter(|e| e.is_dir && !hidden(&e.path)) {
            walk.descend(entry, depth);
        }
    }
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(cases)
}

/// The case `dir` is, when it holds `run_module_io_flags.txt` and a model.
fn layout_case(root: &Path, dir: &Path) -> Option<LayoutCase> {
    if !dir.join("run_module_io_flags.txt").is_file() {
        return None;
    }
    let model = ["model.mlir", "model.mlirbc"]
        .iter()
        .map(|m| dir.join(m))
        .find(|p| p.is_file())?;
    Some(LayoutCase {
        name: case_name(root, dir),
        dir: dir.to_path_buf(),
        model,
    })
}

/// A case's name: its path under the root with `/` separators (the root's
/// own name when the root is the case). Directory names may hold anything
/// but `/`: control characters are escaped, so a name prints on one line.
fn case_name(root: &Path, dir: &Path) -> String {
    let rel = dir.strip_prefix(root).unwrap_or(dir);
    let name = if rel.as_os_str().is_empty() {
        lockstep_core::fs::file_name(dir)
    } else {
        rel.components()
            .map(|c| c.as_os_str().to_string_lossy())
            .collect::<Vec<_>>()
            .join("/")
    };
    printable_line(&name).into_owned()
}

/// Finds `*.suite.toml` files under `root` (or `root` itself), sorted.
/// Only regular files are suite files: a FIFO would block the read, so one
/// found by the walk is skipped with a warning.
pub fn find_suite_files(root: &Path, sink: &dyn Sink) -> Result<Vec<PathBuf>, Error> {
    let meta = std::fs::metadata(root).map_err(|e| {
        Error::usage(format!("cannot search {}: {e}", root.display()))
            .hint("pass suite directories or *.suite.toml files")
    })?;
    if meta.is_file() {
        return Ok(vec![root.to_path_buf()]);
    }
    if !meta.is_dir() {
        return Err(Error::usage(format!(
            "{} is neither a directory nor a regular file (a FIFO or a device)",
            root.display()
        ))
        .hint("pass suite directories or *.suite.toml files"));
    }
    let mut found = Vec::new();
    let mut walk = Walk::new(root, sink)?;
    while let Some((_, depth, entries)) = walk.next_dir()? {
        for entry in entries {
            let is_suite = entry
                .path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with(".suite.toml"));
            if entry.is_dir && !hidden(&entry.path) {
                walk.descend(&entry, depth);
            } else if is_suite && entry.is_file {
                found.push(entry.path);
            } else if is_suite && !entry.is_dir {
                sink.warn(format!(
                    "skipped {}: not a regular file (a FIFO, a device or a dangling link)",
                    printable_line(&entry.path.display().to_string())
                ));
            }
        }
    }
    found.sort();
    Ok(found)
}

/// A native suite file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NativeSuite {
    #[serde(default)]
    pub suite: SuiteHeader,
    #[serde(default, rename = "test")]
    pub tests: Vec<NativeTest>,
    #[serde(skip)]
    pub path: PathBuf,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SuiteHeader {
    pub name: Option<String>,
    #[serde(default)]
    pub markers: Vec<String>,
    #[serde(default)]
    pub compile_flags: Vec<String>,
}

/// The largest suite file or config read (real ones are a few KB).
pub const MAX_SUITE_BYTES: u64 = 16 << 20;

/// The largest file of a suite hashed or copied (a test's source, its
/// data, a model's weights): beyond any real one, so that only a file that
/// grows while read is cut there and refused.
pub const MAX_SOURCE_BYTES: u64 = 64 << 30;

/// A marker `-m` can select: what the `-m` parser reads as one marker name
/// (so not `and`, `(` or `a b`).
fn check_marker(marker: &str, owner: &str, path: &Path) -> Result<(), Error> {
    let single = MarkerExpr::parse(marker)
        .ok()
        .is_some_and(|e| e.single_marker() == Some(marker));
    if single {
        return Ok(());
    }
    Err(Error::usage(format!(
        "marker {marker:?} of {owner} in {} can never be selected with -m",
        path.display()
    ))
    .hint("markers are names of letters, digits, `_`, `.` and `-`, and not `and`, `or` or `not`"))
}

/// A tolerance or golden: a finite number, at least 0.
fn check_number(value: f64, key: &str, test: &str, path: &Path) -> Result<(), Error> {
    if value.is_finite() && value >= 0.0 {
        return Ok(());
    }
    Err(Error::usage(format!(
        "test `{test}` in {}: `{key} = {value}` must be a finite number, at least 0",
        path.display()
    )))
}

/// The most repetitions and the longest minimum time a benchmark may ask
/// for: each repetition of each benchmark runs under the run timeout.
const MAX_REPETITIONS: u32 = 1000;
const MAX_MIN_TIME_S: f64 = 3600.0;

impl NativeTest {
    /// What TOML cannot say: sane names, markers, numbers and digests.
    fn validate(&self, path: &Path) -> Result<(), Error> {
        check_name(&self.name, "test", path)?;
        let owner = format!("test `{}`", self.name);
        for marker in &self.markers {
            check_marker(marker, &owner, path)?;
        }
        if let Some(tolerance) = self.tolerance {
            check_number(tolerance, "tolerance", &self.name, path)?;
        }
        if let Some(sha) = &self.sha256 {
            self.check_sha256(sha, path)?;
        }
        if let Some(b) = &self.benchmark {
            b.validate(&self.name, path)?;
        }
        self.check_parameters(path)?;
        self.check_source(path)
    }

    /// Each parameter file: a scope IREE reads back (letters, digits, `_`,
    /// `-`, `.`), and exactly one of `file` and `url` (with its sha256).
    fn check_parameters(&self, path: &Path) -> Result<(), Error> {
        let bad = |why: String| {
            Error::usage(format!("test `{}` in {}: {why}", self.name, path.display()))
                .hint("parameters = [{ scope = \"model\", url = \"https://...\", sha256 = \"<hex>\" }] or [{ scope = \"model\", file = \"weights.irpa\" }]")
        };
        if self.parameters.len() > MAX_PARAMETERS {
            return Err(bad(format!("more than {MAX_PARAMETERS} parameter files")));
        }
        for p in &self.parameters {
            let scope_ok = !p.scope.is_empty()
                && p.scope.len() <= 128
                && p.scope
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
            if !scope_ok {
                return Err(bad(format!(
                    "parameter scope `{}` must be letters, digits, `_`, `-` or `.`",
                    printable_line(&p.scope)
                )));
            }
            match (&p.file, &p.url, &p.sha256) {
                (Some(_), None, None) => {}
                (None, Some(url), Some(sha)) => {
                    if !(url.starts_with("https://") || url.starts_with("http://")) {
                        return Err(bad(format!(
                            "parameter url `{}` is not an http(s) URL",
                            printable_line(url)
                        )));
                    }
                    if !(sha.len() == 64 && sha.chars().all(|c| c.is_ascii_hexdigit())) {
                        return Err(bad(format!(
                            "parameter sha256 `{}` is not a sha256 digest",
                            printable_line(sha)
                        )));
                    }
                }
                (None, Some(_), None) => {
                    return Err(bad(format!(
                        "parameters of scope `{}` have a url but no sha256",
                        p.scope
                    )))
                }
                _ => {
                    return Err(bad(format!(
                        "parameters of scope `{}` need exactly one of `file` or `url`",
                        p.scope
                    )))
                }
            }
        }
        Ok(())
    }

    fn check_sha256(&self, sha: &str, path: &Path) -> Result<(), Error> {
        if sha.len() == 64 && sha.chars().all(|c| c.is_ascii_hexdigit()) {
            return Ok(());
        }
        Err(Error::usage(format!(
            "test `{}` in {}: `sha256 = {sha:?}` is not a sha256 digest",
            self.name,
            path.display()
        ))
        .hint("write the 64 hex digits `sha256sum FILE` prints"))
    }

    /// Exactly one of `source` and `url`, and a `url` with its digest.
    fn check_source(&self, path: &Path) -> Result<(), Error> {
        match (&self.source, &self.url) {
            (Some(_), None) => Ok(()),
            (None, Some(_)) if self.sha256.is_some() => Ok(()),
            (None, Some(_)) => Err(Error::usage(format!(
                "test `{}` in {} has a url but no sha256",
                self.name,
                path.display()
            ))
            .hint("add sha256 = \"<hex>\" so the download can be verified")),
            _ => Err(Error::usage(format!(
                "test `{}` in {} needs exactly one of `source` or `url`",
                self.name,
                path.display()
            ))),
        }
    }
}

impl BenchmarkGoldens {
    /// Goldens are finite and not negative, the tolerance at least 1, and
    /// the repetitions and minimum time bounded.
    fn validate(&self, test: &str, path: &Path) -> Result<(), Error> {
        check_number(self.tolerance, "benchmark.tolerance", test, path)?;
        check_number(self.min_time_s, "benchmark.min-time-s", test, path)?;
        if let Some(t) = self.time_ms {
            check_number(t, "benchmark.time-ms", test, path)?;
        }
        let bad = |message: String| {
            Err(Error::usage(format!(
                "test `{test}` in {}: {message}",
                path.display()
            )))
        };
        if self.tolerance < 1.0 {
            return bad(format!(
                "`benchmark.tolerance = {}` must be at least 1 (time may be up to time-ms x tolerance)",
                self.tolerance
            ));
        }
        if self.repetitions == 0 || self.repetitions > MAX_REPETITIONS {
            return bad(format!(
                "`benchmark.repetitions = {}` must be 1 to {MAX_REPETITIONS}",
                self.repetitions
            ));
        }
        if self.min_time_s > MAX_MIN_TIME_S {
            return bad(format!(
                "`benchmark.min-time-s = {}` must be at most {MAX_MIN_TIME_S}",
                self.min_time_s
            ));
        }
        Ok(())
    }
}

/// One `[[test]]` of a native suite.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct NativeTest {
    pub name: String,
    pub source: Option<String>,
    pub url: Option<String>,
    pub sha256: Option<String>,
    #[serde(default = "default_function")]
    pub function: String,
    #[serde(default)]
    pub inputs: Vec<String>,
    #[serde(default)]
    pub outputs: Vec<String>,
    pub tolerance: Option<f64>,
    #[serde(default)]
    pub compile_flags: Vec<String>,
    #[serde(default)]
    pub run_flags: Vec<String>,
    #[serde(default)]
    pub markers: Vec<String>,
    #[serde(default)]
    pub targets: BTreeMap<String, TargetOverride>,
    pub benchmark: Option<BenchmarkGoldens>,
    /// Parameter files (`.irpa`, `.safetensors`, `.gguf`) handed to the
    /// module as `--parameters=SCOPE=PATH`.
    #[serde(default)]
    pub parameters: Vec<ParameterFile>,
}

/// `parameters = [{ scope = "model", url = "...", sha256 = "..." }]` or
/// `{ scope = "model", file = "weights.irpa" }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ParameterFile {
    pub scope: String,
    pub file: Option<String>,
    pub url: Option<String>,
    pub sha256: Option<String>,
}

/// The most parameter files one test may name.
const MAX_PARAMETERS: usize = 64;

fn default_function() -> String {
    "main".into()
}

/// `[test.targets.NAME]`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct TargetOverride {
    #[serde(default)]
    pub compile_flags: Vec<String>,
    #[serde(default)]
    pub run_flags: Vec<String>,
    pub expect: Option<ExpectText>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ExpectText {
    CompileFail,
    RunFail,
}

/// `[test.benchmark]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct BenchmarkGoldens {
    pub time_ms: Option<f64>,
    #[serde(default = "default_tolerance")]
    pub tolerance: f64,
    pub dispatch_count: Option<u64>,
    pub vmfb_size: Option<u64>,
    #[serde(default = "default_repetitions")]
    pub repetitions: u32,
    /// Minimum time per repetition, in seconds (`--benchmark_min_time`).
    #[serde(default = "default_min_time")]
    pub min_time_s: f64,
}

fn default_min_time() -> f64 {
    0.05
}

fn default_tolerance() -> f64 {
    1.2
}

fn default_repetitions() -> u32 {
    5
}

impl NativeSuite {
    /// Reads and checks the suite file `path` (at most [`MAX_SUITE_BYTES`]).
    pub fn load(path: &Path) -> Result<NativeSuite, Error> {
        // Found in a tree (a repository, a bundle): a regular file or
        // nothing, never a read that blocks.
        let text = lockstep_core::fs::read_tree_text("the suite file", path, MAX_SUITE_BYTES)?;
        NativeSuite::parse(&text, path)
    }

    /// Parses and checks the text of a suite file read from `origin` (which
    /// every error names, with the line and column where there is one).
    /// Never panics, whatever the text.
    pub fn parse(text: &str, origin: &Path) -> Result<NativeSuite, Error> {
        let mut suite: NativeSuite = toml::from_str(text).map_err(|err| {
            let location = match err.span() {
                Some(span) => {
                    let (line, col) = lockstep_core::config::line_col(text, span.start);
                    format!("{}:{line}:{col}", origin.display())
                }
                None => origin.display().to_string(),
            };
            Error::usage(format!("invalid suite file at {location}"))
                .cause(err.message().to_string())
                .hint("the format is documented in docs/test.md (Native suite files)")
        })?;
        suite.path = origin.to_path_buf();
        suite.validate()?;
        Ok(suite)
    }

    fn validate(&self) -> Result<(), Error> {
        let path = &self.path;
        match &self.suite.name {
            Some(name) => check_name(name, "suite", path)?,
            None => check_name(&self.name(), "suite", path)
                .map_err(|e| e.hint("rename the file, or give the suite a name under [suite]"))?,
        }
        for marker in &self.suite.markers {
            check_marker(marker, "the suite", path)?;
        }
        let mut seen = std::collections::HashSet::new();
        for t in &self.tests {
            t.validate(path)?;
            if !seen.insert(t.name.as_str()) {
                return Err(Error::usage(format!(
                    "test `{}` appears twice in {}",
                    t.name,
                    path.display()
                ))
                .hint("give every [[test]] a unique name"));
            }
        }
        Ok(())
    }

    pub fn name(&self) -> String {
        self.suite.name.clone().unwrap_or_else(|| {
            self.path
                .file_name()
                .map(|n| {
                    n.to_string_lossy()
                        .trim_end_matches(".suite.toml")
                        .to_string()
                })
                .unwrap_or_default()
        })
    }

    pub fn dir(&self) -> PathBuf {
        self.path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SUITE: &str = r#"[suite]
name = "smoke"
markers = ["presubmit"]
compile-flags = ["--iree-opt-level=O2"]

[[test]]
name = "matmul_f32"
source = "matmul_f32.mlir"
function = "main"
inputs = ["@data/in0.npy", "4xf32=1 2 3 4"]
outputs = ["@data/out0.npy"]
tolerance = 1e-05
markers = ["matmul", "f32"]

[test.targets.cpu]
run-flags = ["--task_topology_max_group_count=2"]
expect = "run-fail"

[test.benchmark]
time-ms = 50.0
tolerance = 2.0
dispatch-count = 10
vmfb-size = 2000000
"#;

    const CONFIG: &str = r#"// a JSON5 config, as iree-test-suites writes them
{
  config_name: 'cpu_llvm_task',
  "iree_compile_flags": ["--iree-hal-target-backends=llvm-cpu"],
  iree_run_module_flags: ["--device=local-task",],
  skip_compile_tests: [],
  skip_run_tests: ["onnx/node/a"],
  expected_compile_failures: ["onnx/node/b"],
  expected_run_failures: [],
}
"#;

    fn suite_error(text: &str) -> Error {
        match NativeSuite::parse(text, Path::new("dir/bad.suite.toml")) {
            Ok(suite) => panic!("accepted: {suite:?}\n{text}"),
            Err(err) => err,
        }
    }

    /// The whole report of `err`: the file may be named in any line.
    fn names(err: &Error, file: &str) -> bool {
        err.render().contains(file)
    }

    #[test]
    fn the_examples_parse() -> Result<(), Error> {
        let suite = NativeSuite::parse(SUITE, Path::new("s/smoke.suite.toml"))?;
        assert_eq!(suite.tests.len(), 1);
        assert_eq!(suite.name(), "smoke");
        let config = SuiteConfig::parse(CONFIG, Path::new("c.json"))?;
        assert_eq!(config.config_name, "cpu_llvm_task");
        assert!(
            config.json5_in_json,
            "a .json file in JSON5 is said to be JSON5"
        );
        let strict = SuiteConfig::parse(r#"{"config_name": "x"}"#, Path::new("c.json"))?;
        assert!(!strict.json5_in_json);
        Ok(())
    }

    #[test]
    fn bad_numbers_are_refused_naming_file_test_and_value() {
        for (extra, needle) in [
            ("tolerance = nan", "`tolerance = NaN`"),
            ("tolerance = inf", "`tolerance = inf`"),
            ("tolerance = -inf", "`tolerance = -inf`"),
            ("tolerance = -1.0", "`tolerance = -1`"),
            (
                "[test.benchmark]\ntime-ms = -0.5",
                "`benchmark.time-ms = -0.5`",
            ),
            (
                "[test.benchmark]\ntime-ms = nan",
                "`benchmark.time-ms = NaN`",
            ),
            ("[test.benchmark]\ntolerance = 0.5", "must be at least 1"),
            ("[test.benchmark]\nmin-time-s = 1e30", "at most 3600"),
            ("[test.benchmark]\nrepetitions = 0", "must be 1 to 1000"),
            ("sha256 = \"xyz\"", "not a sha256 digest"),
        ] {
            let text = format!("[[test]]\nname = \"t1\"\nsource = \"a.mlir\"\n{extra}\n");
            let err = suite_error(&text);
            assert_eq!(err.exit_code(), 2);
            assert!(err.message.contains(needle), "{extra}: {}", err.message);
            assert!(err.message.contains("`t1`"), "{}", err.message);
            assert!(names(&err, "dir/bad.suite.toml"), "{}", err.message);
        }
    }

    #[test]
    fn unselectable_markers_are_refused() {
        for marker in ["and", "or", "not", "(", "a b", "", " gpu", "gpu)", "é"] {
            let text =
                format!("[[test]]\nname = \"t\"\nsource = \"a.mlir\"\nmarkers = [{marker:?}]\n");
            let err = suite_error(&text);
            assert!(
                err.message.contains("can never be selected"),
                "{marker:?}: {}",
                err.message
            );
        }
        let err = suite_error("[suite]\nmarkers = [\"not\"]\n");
        assert!(err.message.contains("of the suite"), "{}", err.message);
    }

    #[test]
    fn a_bad_name_in_a_config_is_refused() {
        for name in ["", "  ", "a\nb", "../up", &"c".repeat(200)] {
            let text = format!("{{\"config_name\": {}}}", serde_json::json!(name));
            let err = match SuiteConfig::parse(&text, Path::new("cfg.json")) {
                Ok(_) => panic!("{name:?} accepted"),
                Err(err) => err,
            };
            assert!(
                err.message.contains("invalid config name"),
                "{}",
                err.message
            );
            assert!(names(&err, "cfg.json"));
        }
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        let deep = "[".repeat(100_000);
        let err = suite_error(&format!("a = {deep}"));
        assert!(names(&err, "bad.suite.toml"));
        let err = match SuiteConfig::parse(&format!("{{config_name: {deep}"), Path::new("c.json5"))
        {
            Ok(_) => panic!("accepted"),
            Err(err) => err,
        };
        assert!(names(&err, "c.json5"));
    }

    /// `doc` with edits applied: at a character position, delete some
    /// characters and insert a string (positions wrap around the length).
    fn mutate(doc: &str, edits: &[(usize, usize, String)]) -> String {
        let mut chars: Vec<char> = doc.chars().collect();
        for (at, delete, insert) in edits {
            let at = at % (chars.len() + 1);
            let end = (at + delete % 8).min(chars.len());
            chars.splice(at..end, insert.chars());
        }
        chars.into_iter().collect()
    }

    fn edits() -> impl Strategy<Value = Vec<(usize, usize, String)>> {
        let insert = prop_oneof![
            Just(String::new()),
            Just("\"".to_string()),
            Just("[".to_string()),
            Just("]".to_string()),
            Just("{".to_string()),
            Just("\n[[test]]\n".to_string()),
            Just("nan".to_string()),
            Just("-1e309".to_string()),
            Just("\u{0}".to_string()),
            Just("../".to_string()),
            "\\PC{0,6}",
        ];
        proptest::collection::vec((any::<usize>(), any::<usize>(), insert), 1..6)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn any_suite_text_is_parsed_or_refused_naming_the_file(text in "\\PC{0,400}") {
            if let Err(err) = NativeSuite::parse(&text, Path::new("p/fuzz.suite.toml")) {
                prop_assert!(names(&err, "fuzz.suite.toml"), "{}", err.render());
                prop_assert_eq!(err.exit_code(), 2);
            }
        }

        #[test]
        fn mutated_suites_are_parsed_or_refused_naming_the_file(e in edits()) {
            let text = mutate(SUITE, &e);
            if let Err(err) = NativeSuite::parse(&text, Path::new("p/fuzz.suite.toml")) {
                prop_assert!(names(&err, "fuzz.suite.toml"), "{}", err.render());
                prop_assert_eq!(err.exit_code(), 2);
            }
        }

        #[test]
        fn any_config_text_is_parsed_or_refused_naming_the_file(text in "\\PC{0,400}") {
            for origin in ["p/fuzz.json", "p/fuzz.json5"] {
                if let Err(err) = SuiteConfig::parse(&text, Path::new(origin)) {
                    prop_assert!(names(&err, origin), "{}", err.render());
                    prop_assert_eq!(err.exit_code(), 2);
                }
            }
        }

        #[test]
        fn mutated_configs_are_parsed_or_refused_naming_the_file(e in edits()) {
            let text = mutate(CONFIG, &e);
            for origin in ["p/fuzz.json", "p/fuzz.json5"] {
                if let Err(err) = SuiteConfig::parse(&text, Path::new(origin)) {
                    prop_assert!(names(&err, origin), "{}", err.render());
                    prop_assert_eq!(err.exit_code(), 2);
                }
            }
        }
    }
}
