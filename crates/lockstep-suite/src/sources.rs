//! Where tests come from: directories in the iree-test-suites layout (a case
//! is a directory with `run_module_io_flags.txt` and `model.mlir`/`.mlirbc`),
//! their JSON/JSON5 configs, and native `*.suite.toml` files.
//!
//! Parsing is strict: an unknown key or a malformed file is an error naming the
//! file, line and key, before anything runs.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
}

impl SuiteConfig {
    /// Reads a JSON or JSON5 config.
    pub fn load(path: &Path) -> Result<SuiteConfig, Error> {
        let text = fs_err::read_to_string(path).map_err(|e| {
            Error::usage(format!("cannot read suite config {}", path.display()))
                .cause(e.to_string())
                .hint("pass an existing file with --suite-config")
        })?;
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

/// Finds every case under `root` (sorted by name). `root` itself may be a case.
pub fn find_layout_cases(root: &Path) -> Result<Vec<LayoutCase>, Error> {
    let mut cases = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = fs_err::read_dir(&dir).map_err(|e| {
            Error::usage(format!("cannot read {}", dir.display())).cause(e.to_string())
        })?;
        let mut subdirs = Vec::new();
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() && !entry.file_name().to_string_lossy().starts_with('.') {
                subdirs.push(path);
            }
        }
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
        stack.extend(subdirs);
    }
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(cases)
}

/// Finds `*.suite.toml` files under `root` (or `root` itself), sorted.
pub fn find_suite_files(root: &Path) -> Result<Vec<PathBuf>, Error> {
    if root.is_file() {
        return Ok(vec![root.to_path_buf()]);
    }
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = fs_err::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() && !name.starts_with('.') {
                stack.push(path);
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
        let text = fs_err::read_to_string(path).map_err(|e| {
            Error::usage(format!("cannot read {}", path.display())).cause(e.to_string())
        })?;
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
        for t in &suite.tests {
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
