//! `lockstep.toml`: found by walking up from the current directory (or named by
//! `--config`), parsed strictly (unknown keys are errors citing `file:line:col`),
//! every key defaulted where a default makes sense. Each area owns one table.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use crate::error::{Error, Result};

/// File name looked up from the current directory upwards.
pub const FILE_NAME: &str = "lockstep.toml";

/// The whole configuration file.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct Config {
    #[serde(default)]
    pub integrate: IntegrateConfig,
    #[serde(default)]
    pub toolchain: ToolchainConfig,
    #[serde(default)]
    pub test: TestConfig,
    #[serde(default)]
    pub bench: BenchConfig,
    #[serde(default)]
    pub preprocess: PreprocessConfig,
    #[serde(default)]
    pub pkg: PkgConfig,
    #[serde(default)]
    pub ci: CiConfig,
    #[serde(default)]
    pub release: ReleaseConfig,
}

/// The IREE version lockstep provisions when no tools are given.
pub const DEFAULT_IREE_VERSION: &str = "3.13.0";

/// `[toolchain]`: which IREE tools commands use.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct ToolchainConfig {
    /// Version of iree-base-compiler / iree-base-runtime to provision.
    pub iree: String,
    /// A directory of IREE tools to use instead of a provisioned toolchain
    /// (relative to lockstep.toml).
    pub iree_bin: Option<PathBuf>,
    /// A PEP 751 manifest of built wheels the toolchain is installed from
    /// (relative to lockstep.toml); `$LOCKSTEP_IREE_MANIFEST` wins.
    pub manifest: Option<PathBuf>,
}

impl Default for ToolchainConfig {
    fn default() -> Self {
        ToolchainConfig {
            iree: DEFAULT_IREE_VERSION.into(),
            iree_bin: None,
            manifest: None,
        }
    }
}

/// `[test]`: regression tests.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct TestConfig {
    /// What `lockstep test` runs without PATH arguments (relative to lockstep.toml).
    pub paths: Vec<PathBuf>,
    /// Suite configs used when no --suite-config is given.
    pub suite_configs: Vec<PathBuf>,
    /// Targets used when no --target is given (default `["cpu"]`).
    pub default_targets: Vec<String>,
    /// Per-process timeouts.
    #[serde(deserialize_with = "duration")]
    pub compile_timeout: Duration,
    #[serde(deserialize_with = "duration")]
    pub run_timeout: Duration,
    /// Named targets (`[test.targets.NAME]`), beside the built-in `cpu` and `cpu-sync`.
    pub targets: std::collections::BTreeMap<String, TargetConfig>,
}

impl Default for TestConfig {
    fn default() -> Self {
        TestConfig {
            paths: Vec::new(),
            suite_configs: Vec::new(),
            default_targets: Vec::new(),
            compile_timeout: Duration::from_secs(600),
            run_timeout: Duration::from_secs(300),
            targets: Default::default(),
        }
    }
}

/// One `[test.targets.NAME]` table.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct TargetConfig {
    pub compile_flags: Vec<String>,
    pub run_flags: Vec<String>,
    pub markers: Vec<String>,
    /// The GitHub Actions runner of this target's test jobs (`lockstep ci
    /// generate`): a label or a list of self-hosted labels; default `[ci] runs-on`.
    pub runs_on: Option<RunsOn>,
    /// How many test jobs share this target's tests (`--shard i/N`); default 1.
    pub shards: Option<u32>,
}

/// A GitHub Actions `runs-on` value.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum RunsOn {
    /// One label (`ubuntu-24.04`).
    Label(String),
    /// Every label a self-hosted runner must carry (`["self-hosted", "mi300"]`).
    Labels(Vec<String>),
}

impl Default for RunsOn {
    fn default() -> Self {
        RunsOn::Label("ubuntu-24.04".into())
    }
}

/// The variant every package has and that `pylock.toml` describes.
pub const DEFAULT_VARIANT: &str = "release";

/// `[pkg]`: Python packages built once and tested exactly (`lockstep pkg`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct PkgConfig {
    /// Interpreter versions wheels are built for (found by uv; a missing one
    /// is an error naming it).
    pub python: Vec<String>,
    /// The packages of the set, all at one version.
    pub package: Vec<PackageConfig>,
    /// Build settings of each named variant (`[pkg.variants.NAME]`).
    pub variants: std::collections::BTreeMap<String, VariantConfig>,
    pub version: VersionConfig,
    /// Where `pkg build` writes wheels and manifests (relative to lockstep.toml).
    pub out: PathBuf,
    /// Cells built at once when no `-j` is given (default: every core).
    pub jobs: Option<usize>,
    /// One cell's build counts as failed after this long.
    #[serde(deserialize_with = "duration")]
    pub build_timeout: Duration,
}

impl Default for PkgConfig {
    fn default() -> Self {
        PkgConfig {
            python: vec!["3.11".into()],
            package: Vec::new(),
            variants: Default::default(),
            version: VersionConfig::default(),
            out: PathBuf::from("wheelhouse"),
            jobs: None,
            build_timeout: Duration::from_secs(3600),
        }
    }
}

/// One `[[pkg.package]]`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PackageConfig {
    /// Distribution name (the `[project] name` of its pyproject.toml).
    pub name: String,
    /// Directory holding pyproject.toml, relative to lockstep.toml.
    pub source: PathBuf,
    /// Variants built for this package; default `["release"]`.
    #[serde(default = "default_variants")]
    pub variants: Vec<String>,
}

fn default_variants() -> Vec<String> {
    vec![DEFAULT_VARIANT.into()]
}

/// One `[pkg.variants.NAME]`: how a variant's build differs.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct VariantConfig {
    /// Environment of the build backend (`DEMO_ENABLE_ASSERTS = "ON"`).
    pub env: std::collections::BTreeMap<String, String>,
}

/// `[pkg.version]`: which version the wheels get.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct VersionConfig {
    pub scheme: VersionScheme,
}

/// How `pkg build` picks the version when no `--version` is given.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VersionScheme {
    /// Each package's pyproject version, unchanged.
    #[default]
    Source,
    /// `X.Y.Z.dev0+g<sha>` from the pyproject's release and the commit.
    Dev,
    /// `--version` is required.
    Explicit,
}

/// `[ci]`: the GitHub Actions workflows `lockstep ci generate` writes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct CiConfig {
    /// How the runners get lockstep: `{ git = URL, rev = REV }` or `{ path = DIR }`.
    pub lockstep: Option<CiLockstep>,
    /// Where workflows are written (relative to lockstep.toml's directory).
    pub out: PathBuf,
    /// Branches whose pushes run the workflow (pull requests always do).
    pub branches: Vec<String>,
    /// The runner of build jobs and of targets without their own `runs-on`.
    pub runs_on: RunsOn,
    /// Shards of the built-in `cpu` target when no `[test.targets]` are configured.
    pub shards: u32,
    /// The variant test jobs install (default `release`).
    pub test_variant: Option<String>,
    pub build_timeout_minutes: u32,
    pub test_timeout_minutes: u32,
}

impl Default for CiConfig {
    fn default() -> Self {
        CiConfig {
            lockstep: None,
            out: PathBuf::from(".github/workflows"),
            branches: vec!["main".into()],
            runs_on: RunsOn::default(),
            shards: 1,
            test_variant: None,
            build_timeout_minutes: 60,
            test_timeout_minutes: 60,
        }
    }
}

/// `[release]`: snapshot versions, tags, the static package index (`lockstep release`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct ReleaseConfig {
    /// The project's name in tags and messages (default: the directory's name).
    pub name: Option<String>,
    /// The release being prepared (`3.14.0`); or read from `version-file`.
    pub version_base: Option<String>,
    /// A file holding the base version: plain text, or JSON with `package-version`.
    pub version_file: Option<PathBuf>,
    /// Template of snapshot versions: `{base}`, `{date}` (UTC `YYYYMMDD`), `{n}` / `{n:02}`.
    pub snapshot: String,
    /// Template of candidate versions (same placeholders).
    pub candidate: String,
    /// Template of tag names: `{version}`, `{name}`, `{channel}`.
    pub tag: String,
    /// Files holding one upstream revision each (40 hex digits).
    pub pin_files: Vec<PathBuf>,
    /// Where `release bump` reads upstream's head.
    pub upstream_url: Option<String>,
    /// The upstream branch `release bump` follows.
    pub upstream_branch: String,
    /// The release store and static index (relative to lockstep.toml).
    pub index: PathBuf,
    /// A command `release publish` runs in the validation venv (`sh -c`).
    pub smoke: Option<String>,
    /// Retention of `release prune` (default: keep everything).
    pub keep: KeepConfig,
    /// Branches whose manifests and pin files `release prune` never prunes a version of.
    pub branches: Vec<String>,
}

impl Default for ReleaseConfig {
    fn default() -> Self {
        ReleaseConfig {
            name: None,
            version_base: None,
            version_file: None,
            snapshot: "{base}rc{date}{n:02}".into(),
            candidate: "{base}rc{date}{n:02}".into(),
            tag: "{name}-{version}".into(),
            pin_files: Vec::new(),
            upstream_url: None,
            upstream_branch: "main".into(),
            index: PathBuf::from("release/index"),
            smoke: None,
            keep: KeepConfig::default(),
            branches: vec!["main".into()],
        }
    }
}

/// `[release] keep`: how many snapshots `release prune` keeps.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct KeepConfig {
    /// Keep at least the newest this many snapshot versions.
    pub snapshots: Option<u32>,
    /// Keep every snapshot younger than this many days.
    pub days: Option<u32>,
}

/// `[ci] lockstep`: where the runners install lockstep from.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum CiLockstep {
    /// `cargo install --locked --git URL --rev REV lockstep`.
    Git { git: String, rev: String },
    /// `cargo install --locked --path DIR` inside the checked-out repository.
    Path { path: String },
}

/// `[preprocess]`: defaults of `lockstep preprocess`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct PreprocessConfig {
    /// Steps used when no `--with` is given (tool paths relative to
    /// lockstep.toml's directory).
    pub with: Vec<String>,
    /// Run `with` steps through `sh -c` (as `--with-shell`).
    pub with_shell: bool,
    /// Concurrency limit when no `-j` is given (default: every core).
    pub jobs: Option<usize>,
    /// Per tool process when no `--timeout` is given (default: none).
    #[serde(default, deserialize_with = "optional_duration")]
    pub timeout: Option<Duration>,
}

/// `[bench]`: kernel benchmarks.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct BenchConfig {
    /// Kernel cache directory (relative to lockstep.toml); `$BOO_CACHE_DIR`
    /// overrides it, the default is `$LOCKSTEP_CACHE/bench`.
    pub cache_dir: Option<PathBuf>,
    /// Device used when no `--device` is given (default `local-task`).
    pub device: Option<String>,
    /// iree-compile flags added to every kernel's compile, after the device's.
    pub compile_flags: Vec<String>,
    /// Per compile and per timed process (default 10m); `--timeout` wins.
    #[serde(default, deserialize_with = "optional_duration")]
    pub timeout: Option<Duration>,
    /// Named devices (`[bench.devices.NAME]`), beside the built-in ones.
    pub devices: std::collections::BTreeMap<String, BenchDeviceConfig>,
    /// The most bytes one kernel's tensors may need (`8G`, `500M`); default
    /// half of the free memory or disk. `--max-bytes` wins.
    pub max_bytes: Option<String>,
}

/// One `[bench.devices.NAME]` table: how to compile for a device and which
/// runtime device runs the kernels.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct BenchDeviceConfig {
    /// The IREE runtime device (`--device=` of the runtime tools); default NAME.
    pub runtime_device: Option<String>,
    /// The iree-compile target flags, replacing the built-in ones for NAME.
    pub compile_flags: Option<Vec<String>>,
    /// Extra flags for iree-benchmark-module and iree-run-module.
    pub run_flags: Vec<String>,
}

/// A loaded configuration and where it came from.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub config: Config,
    /// The file, or `None` when no file was found and defaults are in force.
    pub path: Option<PathBuf>,
    /// The directory relative paths in the file are resolved against.
    pub root: PathBuf,
}

/// `[integrate]`: stepping an upstream pin forward.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct IntegrateConfig {
    /// Path of the pinned upstream checkout (a git submodule), relative to the superproject.
    pub submodule: String,
    /// Instead of a submodule: a file holding the pinned upstream revision (one
    /// 40-hex line), relative to the superproject. Upstream's history then lives
    /// in a bare clone of `upstream-url` under `.git/lockstep/`.
    pub pin_file: Option<String>,
    /// Remote inside the submodule that tracks upstream.
    pub upstream_remote: String,
    /// When set, the upstream remote is created (or corrected) with this URL.
    pub upstream_url: Option<String>,
    pub upstream_branch: String,
    /// How the upstream is named in messages ("Advance LLVM to ...").
    pub upstream_name: String,
    /// Superproject ref a new integrate branch starts from.
    pub base: String,
    /// Integrate branch name; `{date}` becomes YYYYMMDD.
    pub branch: String,
    /// Only commits touching these paths are stopping points; empty means all.
    pub track_paths: Vec<String>,
    /// Commits whose subject contains one of these are never stopping points.
    pub skip_subjects: Vec<String>,
    /// Smoke command (argv) run in the superproject: 0 good, 125 skip, other bad.
    #[serde(deserialize_with = "argv")]
    pub smoke: Vec<String>,
    /// A smoke that runs longer counts as bad.
    #[serde(deserialize_with = "duration")]
    pub smoke_timeout: Duration,
    pub strategy: Strategy,
    /// Link to an upstream commit; `{sha}` is replaced.
    pub commit_url: Option<String>,
    pub export: ExportConfig,
    pub notify: NotifyConfig,
    pub report: ReportConfig,
}

impl Default for IntegrateConfig {
    fn default() -> Self {
        IntegrateConfig {
            submodule: "third_party/llvm-project".into(),
            pin_file: None,
            upstream_remote: "upstream".into(),
            upstream_url: None,
            upstream_branch: "main".into(),
            upstream_name: "LLVM".into(),
            base: "origin/main".into(),
            branch: "integrates/llvm-{date}".into(),
            track_paths: Vec::new(),
            skip_subjects: vec!["[Docs]".into(), "Apply clang-tidy fixes".into()],
            smoke: Vec::new(),
            smoke_timeout: Duration::from_secs(2 * 3600),
            strategy: Strategy::Gallop,
            commit_url: None,
            export: ExportConfig::default(),
            notify: NotifyConfig::default(),
            report: ReportConfig::default(),
        }
    }
}

/// How `integrate loop` chooses which commits to smoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// Probe upstream head, bisect to the first bad commit: logarithmic smokes.
    Gallop,
    /// One smoke and one commit per affecting commit (megabump's loop).
    Each,
}

impl std::str::FromStr for Strategy {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "gallop" => Ok(Strategy::Gallop),
            "each" => Ok(Strategy::Each),
            other => Err(format!(
                "unknown strategy `{other}`: expected `gallop` or `each`"
            )),
        }
    }
}

/// `[integrate.export]`: where patched submodule heads are published.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct ExportConfig {
    /// Remote inside the submodule that receives patched heads.
    pub remote: String,
    /// `{repo}` = superproject directory name, `{branch}` = integrate branch.
    pub branch: String,
}

impl Default for ExportConfig {
    fn default() -> Self {
        ExportConfig {
            remote: "origin".into(),
            branch: "sm-{repo}-{branch}".into(),
        }
    }
}

/// `[integrate.notify]`: where `integrate report --post` sends the report.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct NotifyConfig {
    pub kind: NotifyKind,
    /// Name of the environment variable holding the webhook URL (never printed).
    pub url_env: String,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        NotifyConfig {
            kind: NotifyKind::Discord,
            url_env: "LOCKSTEP_WEBHOOK_URL".into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum NotifyKind {
    Discord,
    Slack,
    Json,
}

/// `[integrate.report]`: how the error summary is cut from a smoke log.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct ReportConfig {
    /// A log line is an error line when it contains one of these substrings.
    pub error_patterns: Vec<String>,
    /// At most this many error lines, then `... and N more`.
    pub max_error_lines: usize,
}

impl Default for ReportConfig {
    fn default() -> Self {
        ReportConfig {
            error_patterns: vec!["FAILED: ".into(), " error: ".into(), "Assertion".into()],
            max_error_lines: 20,
        }
    }
}

/// Accepts an argv array, or a string split like a shell would.
fn argv<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Argv {
        List(Vec<String>),
        Line(String),
    }
    match Argv::deserialize(d)? {
        Argv::List(v) => Ok(v),
        Argv::Line(s) => shell_words(&s).map_err(serde::de::Error::custom),
    }
}

fn duration<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Duration, D::Error> {
    let text = String::deserialize(d)?;
    parse_duration(&text).map_err(serde::de::Error::custom)
}

fn optional_duration<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Option<Duration>, D::Error> {
    duration(d).map(Some)
}

/// A `--timeout SECS`-style flag's value as a duration: a usage error
/// naming `flag` unless it is a finite number of seconds greater than 0
/// that a duration holds (`1e30` is refused, not a panic).
pub fn seconds(flag: &str, secs: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            Error::usage(format!("invalid {flag} {secs}")).hint(format!(
                "give a number of seconds greater than 0, e.g. {flag} 30"
            ))
        })
}

/// Parses `90s`, `5m`, `2h`, `1h 30m` (humantime syntax).
pub fn parse_duration(text: &str) -> std::result::Result<Duration, String> {
    humantime::parse_duration(text)
        .map_err(|e| format!("invalid duration `{text}` ({e}); write e.g. `90s`, `20m` or `2h`"))
}

/// Splits a command line like a POSIX shell would (quotes, backslashes).
pub fn shell_words(line: &str) -> std::result::Result<Vec<String>, String> {
    shlex::split(line).ok_or_else(|| format!("cannot split `{line}` into words: unbalanced quotes"))
}

/// Finds `lockstep.toml` in `start` or its ancestors.
pub fn discover(start: &Path) -> Option<PathBuf> {
    start
        .ancestors()
        .map(|dir| dir.join(FILE_NAME))
        .find(|candidate| candidate.is_file())
}

/// Loads the configuration: `explicit` (from `--config`) or the file found from
/// `cwd` upwards, or defaults when there is none.
pub fn load(explicit: Option<&Path>, cwd: &Path) -> Result<Loaded> {
    // --config names a file that must be one: a directory or a device is
    // refused by read_input with what it is.
    let path = explicit.map(Path::to_path_buf).or_else(|| discover(cwd));
    let what = if explicit.is_some() {
        "--config"
    } else {
        "the configuration"
    };
    match path {
        None => Ok(Loaded {
            config: Config::default(),
            path: None,
            root: cwd.to_path_buf(),
        }),
        Some(path) => {
            let text = crate::fs::read_input_text(what, &path, MAX_CONFIG_BYTES)?;
            let config = parse(&text, &path)?;
            let root = path
                .parent()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| cwd.to_path_buf());
            let root = if root.as_os_str().is_empty() {
                cwd.to_path_buf()
            } else {
                root
            };
            Ok(Loaded {
                config,
                path: Some(path),
                root,
            })
        }
    }
}

/// The largest lockstep.toml read (a real one is a few KB).
const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// Parses configuration text; errors cite `file:line:col` and the key.
pub fn parse(text: &str, path: &Path) -> Result<Config> {
    let config = toml::from_str::<Config>(text).map_err(|err| {
        let location = match err.span() {
            Some(span) => {
                let (line, col) = line_col(text, span.start);
                format!("{}:{line}:{col}", path.display())
            }
            None => path.display().to_string(),
        };
        Error::usage(format!("invalid configuration at {location}"))
            .cause(err.message().to_string())
            .hint(format!(
                "fix {} (each table's keys are documented in docs/: [integrate] in \
                 integrate.md, [toolchain] and [test] in test.md, [preprocess] in \
                 preprocess.md, [bench] in bench.md, [pkg] in pkg.md, [ci] in ci.md, [release] in release.md)",
                path.display()
            ))
    })?;
    refuse_nul(text, path)?;
    Ok(config)
}

/// A NUL character cannot be part of a path, a command argument or a git
/// name, so a string holding one (`"\u0000"`) is refused with its key
/// rather than failing later in some command that uses it.
fn refuse_nul(text: &str, path: &Path) -> Result<()> {
    fn find(value: &toml::Value, key: &mut Vec<String>) -> Option<String> {
        match value {
            toml::Value::String(s) if s.contains('\0') => Some(key.join(".")),
            toml::Value::Table(table) => table.iter().find_map(|(k, v)| {
                key.push(k.clone());
                let found = find(v, key);
                key.pop();
                found
            }),
            toml::Value::Array(items) => items.iter().enumerate().find_map(|(i, v)| {
                key.push(i.to_string());
                let found = find(v, key);
                key.pop();
                found
            }),
            _ => None,
        }
    }
    let Ok(table) = text.parse::<toml::Table>() else {
        return Ok(());
    };
    match find(&toml::Value::Table(table), &mut Vec::new()) {
        None => Ok(()),
        Some(key) => Err(Error::usage(format!(
            "invalid configuration in {}: `{key}` contains a NUL character",
            path.display()
        ))
        .hint("remove the \\u0000 from that string")),
    }
}

/// 1-based line and column of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_config_files_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let err = load(Some(dir.path()), dir.path()).unwrap_err();
        assert!(err.message.contains("is a directory"), "{}", err.message);
        let err = load(Some(Path::new("/dev/zero")), dir.path()).unwrap_err();
        assert!(err.message.contains("larger than"), "{}", err.message);
        let err = load(Some(&dir.path().join("none.toml")), dir.path()).unwrap_err();
        assert!(err.message.contains("does not exist"), "{}", err.message);
        let file = dir.path().join("lockstep.toml");
        std::fs::write(&file, "[integrate]\nsubmodule = \"third_party/\\u0000x\"\n").unwrap();
        let err = load(None, dir.path()).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(
            err.message.contains("`integrate.submodule` contains a NUL"),
            "{}",
            err.message
        );
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(512))]
        /// Any text: a Config or an error naming the file, never a panic.
        #[test]
        fn any_text_parses_or_names_the_file(text in "(\\PC|\n|\\[|\\]|=|\"){0,200}") {
            if let Err(e) = parse(&text, Path::new("fuzz.toml")) {
                proptest::prop_assert!(e.message.contains("fuzz.toml"), "{}", e.message);
                proptest::prop_assert_eq!(e.exit_code(), 2);
            }
        }

        /// Valid tables with arbitrary values for known keys.
        #[test]
        fn known_keys_with_any_values(
            (table, key) in proptest::sample::select(vec![
                ("integrate", "submodule"), ("integrate", "upstream-remote"), ("integrate", "branch"),
                ("integrate", "smoke"), ("integrate", "smoke-timeout"), ("integrate", "strategy"),
                ("integrate", "track-paths"), ("integrate.export", "remote"), ("integrate.notify", "kind"),
                ("integrate.report", "max-error-lines"), ("toolchain", "iree"), ("toolchain", "iree-bin"),
                ("test", "paths"), ("test", "compile-timeout"), ("test", "default-targets"),
                ("test.targets.cpu", "compile-flags"), ("preprocess", "jobs"), ("preprocess", "timeout"),
                ("preprocess", "with"), ("bench", "timeout"), ("bench", "device"), ("bench", "nonsense"),
            ]),
            value in proptest::prop_oneof![
                "\"(\\PC){0,30}\"",
                "-?[0-9]{1,25}(\\.[0-9]{0,5})?(e[0-9]{1,3})?",
                proptest::strategy::Just("nan".to_string()),
                proptest::strategy::Just("inf".to_string()),
                proptest::strategy::Just("[1, \"a\"]".to_string()),
            ],
        ) {
            let text = format!("[{table}]\n{key} = {value}\n");
            if let Err(e) = parse(&text, Path::new("fuzz.toml")) {
                proptest::prop_assert!(e.message.contains("fuzz.toml"), "{}", e.message);
            }
        }
    }

    #[test]
    fn test_targets_and_toolchain() {
        let text = "[toolchain]\niree = \"3.12.0\"\n[test]\ndefault-targets = [\"gpu\"]\n[test.targets.gpu]\nrun-flags = [\"--device=hip\"]\n";
        let c = parse(text, Path::new("x")).unwrap();
        assert_eq!(c.toolchain.iree, "3.12.0");
        assert_eq!(c.test.default_targets, vec!["gpu"]);
        assert_eq!(c.test.targets["gpu"].run_flags, vec!["--device=hip"]);
        assert_eq!(c.test.compile_timeout, Duration::from_secs(600));
    }

    #[test]
    fn bench_devices() {
        let text = "[bench]\ncache-dir = \"k\"\ndevice = \"mi300\"\ntimeout = \"2m\"\n\
                    [bench.devices.mi300]\nruntime-device = \"hip://0\"\n\
                    compile-flags = [\"--iree-hal-target-device=hip\", \"--iree-hip-target=gfx942\"]\n";
        let c = parse(text, Path::new("x")).unwrap();
        assert_eq!(c.bench.cache_dir, Some(PathBuf::from("k")));
        assert_eq!(c.bench.device.as_deref(), Some("mi300"));
        assert_eq!(c.bench.timeout, Some(Duration::from_secs(120)));
        let d = &c.bench.devices["mi300"];
        assert_eq!(d.runtime_device.as_deref(), Some("hip://0"));
        assert_eq!(d.compile_flags.as_ref().map(Vec::len), Some(2));
        assert!(d.run_flags.is_empty());
        let err = parse("[bench.devices.x]\nflags = []\n", Path::new("x")).unwrap_err();
        assert!(err.causes[0].contains("flags"), "{:?}", err.causes);
        assert_eq!(parse("", Path::new("x")).unwrap().bench.timeout, None);
    }

    #[test]
    fn preprocess_defaults() {
        let text = "[preprocess]\nwith = [\"tools/swap\", \"builtin.module(canonicalize)\"]\njobs = 3\ntimeout = \"30s\"\n";
        let c = parse(text, Path::new("x")).unwrap().preprocess;
        assert_eq!(c.with.len(), 2);
        assert_eq!(c.jobs, Some(3));
        assert_eq!(c.timeout, Some(Duration::from_secs(30)));
        assert!(!c.with_shell);
    }

    #[test]
    fn defaults_apply() {
        let c = parse(
            "[integrate]\nsubmodule = \"deps/llvm\"\n",
            Path::new("x.toml"),
        )
        .unwrap();
        assert_eq!(c.integrate.submodule, "deps/llvm");
        assert_eq!(c.integrate.upstream_remote, "upstream");
        assert_eq!(c.integrate.strategy, Strategy::Gallop);
        assert_eq!(c.integrate.smoke_timeout, Duration::from_secs(7200));
    }

    #[test]
    fn unknown_key_cites_line_and_column() {
        let text = "[integrate]\nsubmodule = \"a\"\n  smoke-timout = \"2h\"\n";
        let err = parse(text, Path::new("lockstep.toml")).unwrap_err();
        assert!(err.message.contains("lockstep.toml:3:3"), "{}", err.message);
        assert!(err.causes[0].contains("smoke-timout"), "{:?}", err.causes);
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn smoke_accepts_string_or_list() {
        let c = parse("[integrate]\nsmoke = \"./x.sh 'a b'\"\n", Path::new("x")).unwrap();
        assert_eq!(c.integrate.smoke, vec!["./x.sh", "a b"]);
        let c = parse("[integrate]\nsmoke = [\"a\", \"b\"]\n", Path::new("x")).unwrap();
        assert_eq!(c.integrate.smoke, vec!["a", "b"]);
    }

    #[test]
    fn bad_duration_is_named() {
        let err = parse("[integrate]\nsmoke-timeout = \"soon\"\n", Path::new("x")).unwrap_err();
        assert!(err.causes[0].contains("soon"), "{:?}", err.causes);
    }
}
