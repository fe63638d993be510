//! Where tests come from: directories in the iree-test-suites layout (a case
//! is a directory with `run_module_io_flags.txt` and `model.mlir`/`.mlirbc`),
//! their JSON/JSON5 configs, and native `*.suite.toml` files.
//!
//! Parsing is strict: an unknown key or a malformed file is an error naming the
//! file, line and key, before anything runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lockstep_core::events::Sink;
use lockstep_core::Error;
use serde::Deserialize;

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
    /// Where it was read from (for `--update-xfails` and messages).
    #[serde(skip)]
    pub path: PathBuf,
    /// True when the file is named `.json` but only JSON5 reads it.
    #[serde(skip)]
    pub json5_in_json: bool,
}

impl SuiteConfig {
    /// Reads a JSON or JSON5 config.
    pub fn load(path: &Path) -> Result<SuiteConfig, Error> {
        let text = lockstep_core::fs::read_input_text("--suite-config", path, MAX_SUITE_BYTES)?;
        let mut config: SuiteConfig = json5::from_str(&text).map_err(|e| {
            let (location, message) = match &e {
                json5::Error::Message { msg, location: Some(l) } => {
                    (format!("{}:{}:{}", path.display(), l.line, l.column), msg.clone())
                }
                json5::Error::Message { msg, location: None } => (path.display().to_string(), msg.clone()),
            };
            Error::usage(format!("invalid suite config at {location}"))
                .cause(message)
                .hint("keys: config_name, iree_compile_flags, iree_run_module_flags, skip_compile_tests, skip_run_tests, expected_compile_failures, expected_run_failures")
        })?;
        config.path = path.to_path_buf();
        // iree-test-suites writes JSON5 into files named .json: accepted,
        // and said, since a strict JSON reader of the same file would fail.
        config.json5_in_json = path.extension().is_some_and(|e| e == "json")
            && serde_json::from_str::<serde_json::Value>(&text).is_err();
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

/// How deep a suite tree may go, and how many directories it may hold: a
/// bound on the walk whatever the tree is (a mount of /proc, say).
const MAX_DEPTH: usize = 64;
const MAX_DIRS: usize = 50_000;

/// A walk of the directories under a root that visits each directory once,
/// by (device, inode): a symbolic link loop (`s/a -> .`), or two links to
/// the same place, cost one visit and a note, not a hang or duplicates.
struct Walk<'a> {
    stack: Vec<(PathBuf, usize)>,
    seen: std::collections::HashSet<(u64, u64)>,
    visited: usize,
    root: PathBuf,
    sink: &'a dyn Sink,
}

impl<'a> Walk<'a> {
    fn new(root: &Path, sink: &'a dyn Sink) -> Walk<'a> {
        let mut walk = Walk {
            stack: Vec::new(),
            seen: std::collections::HashSet::new(),
            visited: 0,
            root: root.to_path_buf(),
            sink,
        };
        walk.push(root.to_path_buf(), 0);
        walk
    }

    /// Queues `dir` unless its directory was seen already (then says so).
    fn push(&mut self, dir: PathBuf, depth: usize) {
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = std::fs::metadata(&dir) else {
            return;
        };
        if !self.seen.insert((meta.dev(), meta.ino())) {
            self.sink.warn(format!(
                "skipped {}: it leads to a directory already searched (a symbolic link loop or a second link)",
                dir.display()
            ));
            return;
        }
        self.stack.push((dir, depth));
    }

    /// The next directory and its entries' paths, sorted; an error when the
    /// tree is deeper or larger than any suite tree.
    fn next_dir(&mut self) -> Result<Option<(PathBuf, usize, Vec<PathBuf>)>, Error> {
        let Some((dir, depth)) = self.stack.pop() else {
            return Ok(None);
        };
        self.visited += 1;
        if depth > MAX_DEPTH || self.visited > MAX_DIRS {
            return Err(Error::usage(format!(
                "{} holds more than {MAX_DIRS} directories or is deeper than {MAX_DEPTH}: not a suite tree",
                self.root.display()
            ))
            .hint("point lockstep test (or [test] paths) at the directory that holds the suites"));
        }
        let mut entries: Vec<PathBuf> = match fs_err::read_dir(&dir) {
            Ok(entries) => entries.flatten().map(|e| e.path()).collect(),
            Err(_) => Vec::new(),
        };
        entries.sort();
        Ok(Some((dir, depth, entries)))
    }
}

fn hidden(path: &Path) -> bool {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with('.'))
}

/// Finds every case under `root` (sorted by name). `root` itself may be a case.
pub fn find_layout_cases(root: &Path, sink: &dyn Sink) -> Result<Vec<LayoutCase>, Error> {
    let mut cases = Vec::new();
    let mut walk = Walk::new(root, sink);
    while let Some((dir, depth, entries)) = walk.next_dir()? {
        if dir.join("run_module_io_flags.txt").is_file() {
            let model = ["model.mlir", "model.mlirbc"]
                .iter()
                .map(|m| dir.join(m))
                .find(|p| p.is_file());
            if let Some(model) = model {
                let rel = dir.strip_prefix(root).unwrap_or(&dir);
                let name = if rel.as_os_str().is_empty() {
                    dir.file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default()
                } else {
                    rel.components()
                        .map(|c| c.as_os_str().to_string_lossy())
                        .collect::<Vec<_>>()
                        .join("/")
                };
                cases.push(LayoutCase {
                    name,
                    dir: dir.clone(),
                    model,
                });
                continue;
            }
        }
        for path in entries {
            if path.is_dir() && !hidden(&path) {
                walk.push(path, depth + 1);
            }
        }
    }
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(cases)
}

/// Finds `*.suite.toml` files under `root` (or `root` itself), sorted.
pub fn find_suite_files(root: &Path, sink: &dyn Sink) -> Result<Vec<PathBuf>, Error> {
    if root.is_file() {
        return Ok(vec![root.to_path_buf()]);
    }
    let mut found = Vec::new();
    let mut walk = Walk::new(root, sink);
    while let Some((_, depth, entries)) = walk.next_dir()? {
        for path in entries {
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if path.is_dir() && !hidden(&path) {
                walk.push(path, depth + 1);
            } else if name.ends_with(".suite.toml") {
                found.push(path);
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
const MAX_SUITE_BYTES: u64 = 16 << 20;

/// The longest test or suite name: names become file names (logs, cache
/// keys), and a file name may have 255 bytes.
const MAX_NAME: usize = 128;

/// A test or suite name that can be a file name and a line of output:
/// not empty or blank, no `/` or `..`, no control characters, not too long.
fn check_name(name: &str, what: &str, path: &Path) -> Result<(), Error> {
    let why = if name.trim().is_empty() {
        Some("it is empty".to_string())
    } else if name != name.trim() {
        Some("it starts or ends with white space".to_string())
    } else if name.chars().any(char::is_control) {
        Some("it contains a control character (a newline, a tab ...)".to_string())
    } else if name.contains('/') || name.contains('\\') || name == "." || name.contains("..") {
        Some("it contains `/`, `\\` or `..` (names are used in file names)".to_string())
    } else if name.len() > MAX_NAME {
        Some(format!(
            "it is {} bytes long; at most {MAX_NAME}",
            name.len()
        ))
    } else {
        None
    };
    match why {
        None => Ok(()),
        Some(why) => Err(Error::usage(format!(
            "invalid {what} name {:?} in {}: {why}",
            name,
            path.display()
        ))
        .hint("use letters, digits, `_`, `-` and `.`")),
    }
}

/// A marker `-m` can select: a single name of its grammar.
fn check_marker(marker: &str, owner: &str, path: &Path) -> Result<(), Error> {
    let selectable = !marker.is_empty()
        && marker
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
        && !matches!(marker, "and" | "or" | "not");
    if selectable {
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

impl NativeTest {
    /// What TOML cannot say: sane names, markers and numbers.
    fn validate(&self, path: &Path) -> Result<(), Error> {
        check_name(&self.name, "test", path)?;
        let owner = format!("test `{}`", self.name);
        for marker in &self.markers {
            check_marker(marker, &owner, path)?;
        }
        if let Some(tolerance) = self.tolerance {
            check_number(tolerance, "tolerance", &self.name, path)?;
        }
        if let Some(b) = &self.benchmark {
            check_number(b.tolerance, "benchmark.tolerance", &self.name, path)?;
            check_number(b.min_time_s, "benchmark.min-time-s", &self.name, path)?;
            if let Some(t) = b.time_ms {
                check_number(t, "benchmark.time-ms", &self.name, path)?;
            }
            if b.tolerance < 1.0 {
                return Err(Error::usage(format!(
                    "test `{}` in {}: `benchmark.tolerance = {}` must be at least 1 (time may be up to time-ms x tolerance)",
                    self.name,
                    path.display(),
                    b.tolerance
                )));
            }
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
}

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
    pub fn load(path: &Path) -> Result<NativeSuite, Error> {
        let text = lockstep_core::fs::read_input_text("the suite file", path, MAX_SUITE_BYTES)?;
        let mut suite: NativeSuite = toml::from_str(&text).map_err(|err| {
            let location = match err.span() {
                Some(span) => {
                    let (line, col) = lockstep_core::config::line_col(&text, span.start);
                    format!("{}:{line}:{col}", path.display())
                }
                None => path.display().to_string(),
            };
            Error::usage(format!("invalid suite file at {location}"))
                .cause(err.message().to_string())
                .hint("the format is documented in docs/test.md (Native suite files)")
        })?;
        suite.path = path.to_path_buf();
        let mut seen = std::collections::HashSet::new();
        if let Some(name) = &suite.suite.name {
            check_name(name, "suite", path)?;
        }
        for marker in &suite.suite.markers {
            check_marker(marker, "suite", path)?;
        }
        for t in &suite.tests {
            t.validate(path)?;
            if !seen.insert(t.name.clone()) {
                return Err(Error::usage(format!(
                    "test `{}` appears twice in {}",
                    t.name,
                    path.display()
                ))
                .hint("give every [[test]] a unique name"));
            }
            match (&t.source, &t.url) {
                (Some(_), None) => {}
                (None, Some(_)) if t.sha256.is_some() => {}
                (None, Some(_)) => {
                    return Err(Error::usage(format!(
                        "test `{}` in {} has a url but no sha256",
                        t.name,
                        path.display()
                    ))
                    .hint("add sha256 = \"<hex>\" so the download can be verified"))
                }
                _ => {
                    return Err(Error::usage(format!(
                        "test `{}` in {} needs exactly one of `source` or `url`",
                        t.name,
                        path.display()
                    )))
                }
            }
        }
        Ok(suite)
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
