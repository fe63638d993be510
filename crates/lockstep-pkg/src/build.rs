//! `lockstep pkg build`: every (package, Python, variant) cell of the set
//! built with `uv build --wheel` from a staged copy of a commit, the version
//! stamped, the wheels and one PEP 751 manifest per variant written into the
//! wheelhouse.
//!
//! Everything that can be checked is checked before anything is built: the
//! packages and their committed `pyproject.toml`, the variants, each
//! interpreter (found by uv; a missing one is an error naming it) and the
//! version. Cells build in parallel up to `jobs`, each in its own staged
//! tree (setuptools writes `build/` into the source directory, so two cells
//! must never share one). A `py3-none-any` wheel is built for the first
//! Python only and serves every Python cell. Wheels are kept in the cache's
//! `wheels` area keyed by the commit's tree, the package, the version, the
//! interpreter and the variant's settings, so rebuilding a commit (a rerun,
//! a bisection) costs a copy. A failing cell fails the command, is named,
//! and its log is kept; no manifest is written for a set with a hole in it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::config::{PkgConfig, VersionScheme, DEFAULT_VARIANT};
use lockstep_cache::{Area, Bucket, KeyBuilder};
use lockstep_core::events::Sink;
use lockstep_core::Error;
use lockstep_git::Repo;
use lockstep_python::pylock::{
    self, Lock, Package, PackageInfo, PackageTool, SetInfo, Wheel, WheelInfo,
};
use lockstep_python::uv::{Build, Uv};
use lockstep_python::wheel::{self, WheelName};
use serde::Serialize;

use crate::compiler_cache;
use crate::config::CompilerCache;
use crate::events::PkgEvent;
use crate::repair;
use crate::stage;
use lockstep_python::tools::BuildTools;

/// How cache keys of this area are computed (bump to invalidate).
const KEY_VERSION: u32 = 2;

/// The most bytes of a wheel's METADATA read to check its version.
const MAX_METADATA: u64 = 4 << 20;

/// Lines of a failed build's log shown in the error.
const LOG_TAIL: usize = 20;

/// What to build.
pub struct BuildRequest<'a> {
    /// The directory `[pkg] package.source` paths are relative to (lockstep.toml's).
    pub root: &'a Path,
    pub pkg: &'a PkgConfig,
    /// `--python` (empty = `[pkg] python`).
    pub pythons: Vec<String>,
    /// `--variant` (empty = every variant some package has).
    pub variants: Vec<String>,
    /// `--package` (empty = every package): a subset makes a partial set.
    pub packages: Vec<String>,
    /// The wheelhouse.
    pub out: PathBuf,
    /// `--version`: overrides the scheme for every package.
    pub version: Option<String>,
    pub jobs: usize,
    /// The commit to build (default `HEAD`).
    pub rev: String,
    /// `[integrate]`'s pin (any kind), whose commit goes into the build
    /// record and the manifest as the upstream revision.
    pub pin: Option<lockstep_pin::Pin>,
    /// The cache's `wheels` area (None = no cache).
    pub cache: Option<Bucket>,
    /// The cache's `compiler` area (None = no compiler cache, whatever
    /// `[pkg] compiler-cache` says).
    pub compiler_area: Option<PathBuf>,
    pub uv: &'a Uv,
}

impl<'a> BuildRequest<'a> {
    /// A build of HEAD's whole matrix into `[pkg] out` (under `root`) with
    /// `[pkg] jobs` workers (else every core): what each command narrows.
    pub fn configured(
        pkg: &'a PkgConfig,
        root: &'a Path,
        pin: Option<lockstep_pin::Pin>,
        cache: Option<Bucket>,
        uv: &'a Uv,
    ) -> Result<BuildRequest<'a>, Error> {
        Ok(BuildRequest {
            root,
            pkg,
            pythons: Vec::new(),
            variants: Vec::new(),
            packages: Vec::new(),
            out: root.join(&pkg.out),
            version: None,
            jobs: lockstep_core::pool::jobs(pkg.jobs, "[pkg] jobs")?,
            rev: "HEAD".into(),
            pin,
            cache,
            compiler_area: None,
            uv,
        })
    }

    /// [`BuildRequest::configured`] over lockstep's cache: whole builds in
    /// its wheels area, the compiler cache in its compiler area.
    pub fn cached(
        pkg: &'a PkgConfig,
        root: &'a Path,
        pin: Option<lockstep_pin::Pin>,
        cache: &lockstep_cache::Cache,
        uv: &'a Uv,
    ) -> Result<BuildRequest<'a>, Error> {
        Ok(BuildRequest {
            compiler_area: Some(cache.dir(Area::Compiler)),
            ..Self::configured(pkg, root, pin, Some(cache.bucket(Area::Wheels)), uv)?
        })
    }
}

/// What was built.
#[derive(Debug, Clone, Serialize)]
pub struct BuildReport {
    pub revision: String,
    pub dirty: bool,
    /// The set's version, when every package is at one (each package's is
    /// in the manifest and in `wheels`).
    pub version: Option<String>,
    pub manifests: Vec<PathBuf>,
    pub wheels: Vec<Built>,
    /// The submodules staged with the commit (path, commit).
    pub submodules: Vec<(String, String)>,
    /// The compiler cache's tool and counts, when one ran.
    pub compiler_cache: Option<CompilerCacheReport>,
}

/// `compiler_cache` of the report.
#[derive(Debug, Clone, Serialize)]
pub struct CompilerCacheReport {
    pub tool: String,
    pub hits: u64,
    pub misses: u64,
    /// Calls the cache could not cache, by the tool's reason (sccache's
    /// `not_cached`: `-E`, `multiple input files` ...).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub not_cached: BTreeMap<String, u64>,
}

/// One wheel of the report.
#[derive(Debug, Clone, Serialize)]
pub struct Built {
    pub package: String,
    pub variant: String,
    /// The Pythons it serves.
    pub pythons: Vec<String>,
    pub file: PathBuf,
    pub seconds: f64,
    pub cached: bool,
    /// The manylinux policy it was repaired to.
    pub manylinux: Option<String>,
    /// The package's source distribution, not a wheel.
    pub sdist: bool,
}

/// An interpreter of the matrix.
#[derive(Debug, Clone)]
struct Python {
    /// As configured (`3.11`).
    version: String,
    /// Where uv found it.
    path: PathBuf,
    /// `Python 3.11.7` (part of the cache key).
    full: String,
}

/// One (package, variant): its Pythons build in order, the first deciding
/// whether the wheel is universal.
#[derive(Debug, Clone)]
struct Group {
    /// As configured (`[[pkg.package]] name`).
    package: String,
    /// The distribution built: `package` plus the variant's `name-suffix`.
    dist: String,
    /// Relative to the repository's top.
    source: String,
    variant: String,
    env: BTreeMap<String, String>,
    version: Option<String>,
    /// How `version` gets into the wheel.
    stamp: Stamp,
    /// An sdist is built too (`[[pkg.package]] sdist`).
    sdist: bool,
}

/// How a group's version gets into what it builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stamp {
    /// No version asked: the backend's own.
    None,
    /// The staged pyproject's static `[project] version` rewritten.
    Pyproject,
    /// Through what the build reads: `[pkg.version]` write-file and/or env
    /// (a dynamic `[project]` version, or a setup.py without `[project]`).
    Backend,
    /// The build cannot take a version: the built wheel is rewritten
    /// (`[pkg.version] rewrite`).
    AfterBuild,
}

/// Builds the set; see the module doc.
pub fn build(req: &BuildRequest<'_>, sink: &dyn Sink) -> Result<BuildReport, Error> {
    let repo = Repo::discover(req.root)?;
    let top = repo_top(&repo)?;
    let revision = repo
        .must_resolve(&format!("{}^{{commit}}", req.rev))?
        .to_string();
    let variants = select_variants(req.pkg, &req.variants)?;
    let pythons = find_pythons(req.uv, req.pkg, &req.pythons, req.root)?;
    let mut groups = plan_groups(req, &repo, &top, &revision, &variants)?;
    set_versions(req, &repo, &revision, &mut groups)?;
    let submodules = if req.pkg.submodules {
        stage::submodules(&repo, &top, &revision)?
    } else {
        Vec::new()
    };
    let manylinux = repair::Policy::parse(req.pkg.manylinux.as_deref())?;
    let dirty = is_dirty(&repo)?;
    if dirty && req.rev == "HEAD" {
        sink.warn(format!(
            "the working tree has uncommitted changes: building commit {} without them (dirty = true in the manifest)",
            &revision[..12.min(revision.len())]
        ));
    }
    let pin = match &req.pin {
        Some(pin) => match pin.read_at(&repo, &revision) {
            Ok(commit) => Some(commit),
            // A default submodule [integrate] never named, not there.
            Err(_) if pin.assumed() => None,
            Err(e) => {
                return Err(e.context(format!(
                    "cannot read the upstream revision {} pins at {}",
                    pin.describe(),
                    &revision[..12.min(revision.len())]
                )))
            }
        },
        None => None,
    };
    let tree = repo.tree_of(&revision)?.to_string();
    fs_err::create_dir_all(&req.out).map_err(|e| {
        Error::usage(format!(
            "cannot create the wheelhouse {}",
            req.out.display()
        ))
        .cause(e.to_string())
    })?;
    let out = std::path::absolute(&req.out).unwrap_or_else(|_| req.out.clone());
    let mut compiler = req
        .compiler_area
        .as_ref()
        .map(|_| req.pkg.compiler_cache.unwrap_or(CompilerCache::Sccache))
        .unwrap_or(CompilerCache::None);
    // Asked for by name, the tools are required; by default they are used
    // when they can be had (a pure-Python set builds offline).
    let required = req.pkg.compiler_cache == Some(CompilerCache::Sccache)
        || matches!(manylinux, repair::Policy::Exactly(..));
    let tools = if compiler == CompilerCache::Sccache || manylinux != repair::Policy::Off {
        let root = lockstep_core::paths::toolchains_dir()?;
        match BuildTools::ensure(req.uv, &root, sink) {
            Ok(tools) => Some(tools),
            Err(e) if !required => {
                sink.warn(format!(
                    "the build tools (sccache, auditwheel) are not available: building without a compiler cache, and native wheels keep their linux_* tag ({})",
                    e.message
                ));
                compiler = CompilerCache::None;
                None
            }
            Err(e) => return Err(e),
        }
    } else {
        None
    };
    let scratch = Scratch::new(&out)?;
    let running = match &req.compiler_area {
        Some(area) => {
            let user_env: Vec<(String, String)> = groups
                .iter()
                .flat_map(|g| g.env.iter().map(|(k, v)| (k.clone(), v.clone())))
                .collect();
            compiler_cache::start(
                compiler,
                area,
                &scratch.0,
                tools.as_ref(),
                req.uv,
                &user_env,
                sink,
            )?
        }
        None => None,
    };
    let cells: usize = groups.len() * pythons.len() + groups.iter().filter(|g| g.sdist).count();
    sink.emit(&PkgEvent::BuildStarted {
        cells,
        jobs: req.jobs,
        revision: revision.clone(),
        dirty,
    });
    // The commit's time as SOURCE_DATE_EPOCH: the backends stamp it into
    // the archives instead of the clock, so a pure wheel built in every
    // Python's cell is the same bytes (one file in the index).
    let epoch = repo
        .git(&["show", "-s", "--format=%ct", &revision])?
        .trim()
        .to_string();
    let ctx = Context {
        req,
        repo: &repo,
        revision: &revision,
        epoch: &epoch,
        tree: &tree,
        pythons: &pythons,
        scratch: &scratch,
        out: &out,
        submodules: &submodules,
        tools: tools.as_ref(),
        manylinux,
        compiler: running.as_ref(),
    };
    let results = run_groups(&ctx, &groups, sink)?;
    let compiler_cache = running.as_ref().and_then(|r| match r.stats() {
        Ok(stats) => {
            sink.emit(&PkgEvent::CompilerCache {
                tool: r.name().to_string(),
                hits: stats.hits,
                misses: stats.misses,
                not_cached: stats.not_cached.clone(),
            });
            Some(CompilerCacheReport {
                tool: r.name().to_string(),
                hits: stats.hits,
                misses: stats.misses,
                not_cached: stats.not_cached,
            })
        }
        Err(e) => {
            sink.warn(format!(
                "cannot read the compiler cache's counts: {}",
                e.message
            ));
            None
        }
    });
    let mut built = Vec::new();
    let mut failures = Vec::new();
    for result in results {
        match result {
            Ok(mut wheels) => built.append(&mut wheels),
            Err(failure) => failures.push(failure),
        }
    }
    if !failures.is_empty() {
        return Err(failed_cells(failures, cells));
    }
    // The versions the wheels were built at (a backend's own, where none
    // was asked): one, or each package its own.
    let mut versions: Vec<(String, String)> = built
        .iter()
        .filter_map(|m| {
            dist_name(&m.info.name, m.report.sdist).map(|(_, v)| (m.report.package.clone(), v))
        })
        .collect();
    versions.sort();
    versions.dedup();
    let distinct: std::collections::BTreeSet<&str> =
        versions.iter().map(|(_, v)| v.as_str()).collect();
    if req.pkg.one_version && distinct.len() > 1 {
        let listed: Vec<String> = versions.iter().map(|(p, v)| format!("{p} {v}")).collect();
        return Err(Error::usage(
            "the set was built at more than one version ([pkg] one-version = true); nothing was written",
        )
        .cause(listed.join(", "))
        .hint("pass --version to stamp one version into every package, make their versions equal, or remove [pkg] one-version"));
    }
    let manifests = write_set(&ctx, &groups, &mut built, dirty, pin.as_deref(), sink)?;
    let version = match distinct.len() {
        1 => distinct.iter().next().map(|v| v.to_string()),
        _ => None,
    };
    Ok(BuildReport {
        revision,
        dirty,
        version,
        manifests,
        wheels: built.into_iter().map(|b| b.report).collect(),
        submodules: submodules
            .iter()
            .map(|s| (s.path.clone(), s.commit.clone()))
            .collect(),
        compiler_cache,
    })
}

fn repo_top(repo: &Repo) -> Result<PathBuf, Error> {
    let top = repo.git(&["rev-parse", "--show-toplevel"])?;
    Ok(PathBuf::from(top.trim()))
}

/// Tracked files changed (untracked files never count).
fn is_dirty(repo: &Repo) -> Result<bool, Error> {
    let out = repo.git(&["status", "--porcelain=v1", "-z", "--untracked-files=no"])?;
    Ok(!out.is_empty())
}

/// `--variant` names checked against the configuration; every configured
/// variant when none is given.
fn select_variants(pkg: &PkgConfig, asked: &[String]) -> Result<Vec<String>, Error> {
    if pkg.package.is_empty() {
        return Err(
            Error::usage("no packages to build: lockstep.toml has no [[pkg.package]]")
                .hint("add a [[pkg.package]] with `name` and `source` (see docs/pkg.md)"),
        );
    }
    let mut known: Vec<String> = vec![DEFAULT_VARIANT.to_string()];
    known.extend(pkg.variants.keys().cloned());
    for package in &pkg.package {
        if !wheel::is_valid_name(&package.name) {
            return Err(Error::usage(format!(
                "[[pkg.package]] name `{}` is not a valid distribution name",
                lockstep_core::error::printable(&package.name)
            ))
            .hint(
                "use letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit",
            ));
        }
        if let Some(v) = package.variants.iter().find(|v| !known.contains(v)) {
            return Err(unknown_variant(
                v,
                &known,
                &format!("[[pkg.package]] {} variants", package.name),
            ));
        }
    }
    let mut names: Vec<&str> = pkg.package.iter().map(|p| p.name.as_str()).collect();
    names.sort();
    if let Some(w) = names
        .windows(2)
        .find(|w| wheel::normalize(w[0]) == wheel::normalize(w[1]))
    {
        return Err(Error::usage(format!(
            "[[pkg.package]] {} is listed twice",
            w[1]
        )));
    }
    if asked.is_empty() {
        let mut all: Vec<String> = pkg
            .package
            .iter()
            .flat_map(|p| p.variants.clone())
            .collect();
        all.sort();
        all.dedup();
        return Ok(all);
    }
    for v in asked {
        if !known.contains(v) {
            return Err(unknown_variant(v, &known, "--variant"));
        }
    }
    let mut asked = asked.to_vec();
    asked.dedup();
    Ok(asked)
}

fn unknown_variant(name: &str, known: &[String], origin: &str) -> Error {
    let mut err = Error::usage(format!(
        "{origin}: unknown variant `{}`",
        lockstep_core::error::printable(name)
    ))
    .cause(format!("known variants: {}", known.join(", ")));
    if let Some(close) = known.iter().find(|k| strsim::levenshtein(k, name) <= 2) {
        err = err.cause(format!("did you mean `{close}`?"));
    }
    err.hint("define it as [pkg.variants.NAME] in lockstep.toml (\"release\" always exists)")
}

/// Each interpreter, found by uv; a missing one is a usage error naming it.
fn find_pythons(
    uv: &Uv,
    pkg: &PkgConfig,
    asked: &[String],
    cwd: &Path,
) -> Result<Vec<Python>, Error> {
    let versions = if asked.is_empty() {
        pkg.python.clone()
    } else {
        asked.to_vec()
    };
    if versions.is_empty() {
        return Err(Error::usage("[pkg] python is empty")
            .hint("list the interpreters to build for, e.g. python = [\"3.11\"]"));
    }
    let mut found = Vec::new();
    for version in versions {
        if !is_python_request(&version) {
            return Err(Error::usage(format!(
                "`{}` is not a Python version",
                lockstep_core::error::printable(&version)
            ))
            .hint("give versions such as 3.11 or 3.12 (in [pkg] python or --python)"));
        }
        if found.iter().any(|p: &Python| p.version == version) {
            continue;
        }
        let path = lockstep_python::pythons::find(uv, &version, cwd)?;
        let full = lockstep_python::venv::python_version(&path);
        found.push(Python {
            version,
            path,
            full,
        });
    }
    Ok(found)
}

fn is_python_request(v: &str) -> bool {
    let parts: Vec<&str> = v.split('.').collect();
    (2..=3).contains(&parts.len())
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.len() <= 3 && p.bytes().all(|b| b.is_ascii_digit()))
}

/// The (package, variant) groups, each package's source checked in `revision`.
fn plan_groups(
    req: &BuildRequest<'_>,
    repo: &Repo,
    top: &Path,
    revision: &str,
    variants: &[String],
) -> Result<Vec<Group>, Error> {
    let root = std::fs::canonicalize(req.root).unwrap_or_else(|_| req.root.to_path_buf());
    let top = std::fs::canonicalize(top).unwrap_or_else(|_| top.to_path_buf());
    let mut groups = Vec::new();
    let chosen = choose_packages(req.pkg, &req.packages)?;
    for package in req.pkg.package.iter().filter(|p| chosen.contains(&p.name)) {
        let source = relative_source(&root, &top, &package.source, &package.name)?;
        let in_source = |file: &str| {
            if source.is_empty() {
                file.to_string()
            } else {
                format!("{source}/{file}")
            }
        };
        // A package is a pyproject.toml, or a setup.py alone (built with
        // setuptools' legacy backend).
        let mut committed = false;
        for file in ["pyproject.toml", "setup.py"] {
            committed |= repo
                .resolve_blob(&format!("{revision}:{}", in_source(file)))?
                .is_some();
        }
        if !committed {
            let pyproject = in_source("pyproject.toml");
            let on_disk = ["pyproject.toml", "setup.py"]
                .iter()
                .any(|f| top.join(in_source(f)).is_file());
            return Err(Error::usage(format!(
                "package {}: {} {}",
                package.name,
                if on_disk { in_source("pyproject.toml / setup.py") } else { pyproject },
                if on_disk {
                    "is not committed (lockstep builds the committed tree)"
                } else {
                    "does not exist, nor does a setup.py beside it"
                }
            ))
            .hint(if on_disk {
                "commit it (`git add` and `git commit`), then build again"
            } else {
                "point [[pkg.package]] source at the directory holding the package's pyproject.toml (or setup.py)"
            }));
        }
        for variant in package.variants.iter().filter(|v| variants.contains(v)) {
            let settings = req.pkg.variants.get(variant);
            let mut env = package.env.clone();
            env.extend(settings.map(|v| v.env.clone()).unwrap_or_default());
            let suffix = settings
                .and_then(|v| v.name_suffix.clone())
                .unwrap_or_default();
            let dist = format!("{}{suffix}", package.name);
            if !wheel::is_valid_name(&dist) {
                return Err(Error::usage(format!(
                    "[pkg.variants.{variant}] name-suffix `{}` makes `{}` of {}: not a valid distribution name",
                    lockstep_core::error::printable_line(&suffix),
                    lockstep_core::error::printable_line(&dist),
                    package.name
                ))
                .hint("use letters, digits, `-`, `_` and `.` (for example \"-asserts\")"));
            }
            groups.push(Group {
                package: package.name.clone(),
                dist,
                source: source.clone(),
                variant: variant.clone(),
                env,
                version: None,
                stamp: Stamp::None,
                sdist: package.sdist,
            });
        }
    }
    if groups.is_empty() {
        return Err(Error::usage(format!(
            "no package has the {} {}",
            if variants.len() == 1 {
                "variant"
            } else {
                "variants"
            },
            variants.join(", ")
        ))
        .hint("list the variant in a package's `variants`, or pick another with --variant"));
    }
    Ok(groups)
}

/// The packages `--package` names (every package without it), each
/// checked to be configured.
fn choose_packages(pkg: &PkgConfig, asked: &[String]) -> Result<Vec<String>, Error> {
    let known: Vec<String> = pkg.package.iter().map(|p| p.name.clone()).collect();
    if asked.is_empty() {
        return Ok(known);
    }
    for name in asked {
        let found = known
            .iter()
            .any(|k| wheel::normalize(k) == wheel::normalize(name));
        if !found {
            let close = known
                .iter()
                .find(|k| strsim::levenshtein(&k.to_lowercase(), &name.to_lowercase()) <= 2);
            let mut err = Error::usage(format!(
                "--package {}: no [[pkg.package]] has that name",
                lockstep_core::error::printable_line(name)
            ))
            .cause(format!("the packages are: {}", known.join(", ")));
            if let Some(k) = close {
                err = err.hint(format!("did you mean `{k}`?"));
            }
            return Err(err);
        }
    }
    Ok(known
        .into_iter()
        .filter(|k| {
            asked
                .iter()
                .any(|a| wheel::normalize(a) == wheel::normalize(k))
        })
        .collect())
}

/// `source` relative to the repository's top, refusing paths that leave it.
fn relative_source(root: &Path, top: &Path, source: &Path, name: &str) -> Result<String, Error> {
    let joined = root.join(source);
    let full = std::fs::canonicalize(&joined).unwrap_or(joined);
    let rel = full.strip_prefix(top).map_err(|_| {
        Error::usage(format!(
            "package {name}: source {} is outside the repository {}",
            source.display(),
            top.display()
        ))
        .hint("point [[pkg.package]] source at a directory of this repository")
    })?;
    Ok(rel.to_string_lossy().into_owned())
}

/// The version of each group (`--version`, else the scheme) and how it is
/// stamped: a static `[project] version` in the pyproject; a dynamic one,
/// or a setup.py without `[project]`, through `[pkg.version]` write-file /
/// env; a build that cannot take a version, in the built wheel. A package
/// with no `[project]` table builds at its backend's version when none is
/// asked. With `[pkg] one-version`, the set must end up at one version.
fn set_versions(
    req: &BuildRequest<'_>,
    repo: &Repo,
    revision: &str,
    groups: &mut [Group],
) -> Result<(), Error> {
    if let Some(v) = &req.version {
        wheel::check_stamp_version("--version", v)?;
    }
    let how = &req.pkg.version;
    for package in &req.pkg.package {
        stage::check_env_table(&format!("[[pkg.package]] {}:", package.name), &package.env)?;
    }
    for (name, variant) in &req.pkg.variants {
        stage::check_env_table(&format!("[pkg.variants.{name}]"), &variant.env)?;
    }
    let write_file = stage::check_write_file(how.write_file.as_deref())?;
    if let Some(var) = &how.env {
        stage::check_env_name(var)?;
    }
    let mut projects = BTreeMap::new();
    for g in groups.iter() {
        if projects.contains_key(&g.package) {
            continue;
        }
        let path = if g.source.is_empty() {
            "pyproject.toml".to_string()
        } else {
            format!("{}/pyproject.toml", g.source)
        };
        let project = if repo.resolve_blob(&format!("{revision}:{path}"))?.is_some() {
            if repo
                .tree_entry(revision, &path)?
                .is_some_and(|e| e.mode == "120000")
            {
                return Err(Error::usage(format!(
                    "package {}: {path} is a symbolic link in the commit",
                    g.package
                ))
                .hint("commit the pyproject.toml itself: lockstep builds from the commit's tree, and a link could point anywhere; nothing was built"));
            }
            let text = repo.git(&["show", &format!("{revision}:{path}")])?;
            stage::read_project(&text, &format!("{path} (package {})", g.package))?
        } else {
            // A setup.py-only package (plan_groups checked it has one).
            stage::Project::default()
        };
        if let Some(name) = &project.name {
            if wheel::normalize(name) != wheel::normalize(&g.package) {
                return Err(Error::usage(format!(
                    "package {}: {path} names the project `{name}`",
                    g.package
                ))
                .hint("make [[pkg.package]] name the [project] name of its pyproject.toml"));
            }
        }
        projects.insert(g.package.clone(), project);
    }
    let short = &revision[..7.min(revision.len())];
    let through_backend = write_file.is_some() || how.env.is_some();
    for g in groups.iter_mut() {
        let project = &projects[&g.package];
        let static_version = project.version.is_some() && !project.dynamic_version;
        // Read only where it decides the version (the dev scheme's release).
        let dev = req.version.is_none() && how.scheme == VersionScheme::Dev;
        let from_file = match (&write_file, !static_version && dev) {
            (Some(file), true) => {
                stage::committed_version(repo, revision, &g.source, file, &g.package)?
            }
            _ => None,
        };
        g.version = match (&req.version, how.scheme) {
            (Some(v), _) => Some(v.clone()),
            (None, VersionScheme::Explicit) => {
                return Err(Error::usage(
                    "[pkg.version] scheme is \"explicit\": --version is required",
                )
                .hint("pass --version VERSION (for example 3.14.0rc20261124)"))
            }
            (None, VersionScheme::Source) => None,
            (None, VersionScheme::Dev) => {
                let base = project.version.as_deref().or(from_file.as_deref()).ok_or_else(|| {
                    Error::usage(format!(
                        "package {}: the dev scheme needs a static [project] version, or a dynamic one in [pkg.version] write-file",
                        g.package
                    ))
                    .hint("give it `version = \"X.Y.Z\"`, set [pkg.version] write-file to the file its backend reads the version from, or use --version")
                })?;
                let parsed = wheel::check_version(&format!("the version of {}", g.package), base)?;
                let release: Vec<String> = parsed.release().iter().map(u64::to_string).collect();
                Some(format!("{}.dev0+g{short}", release.join(".")))
            }
        };
        g.stamp = match (&g.version, static_version, through_backend) {
            (None, _, _) => Stamp::None,
            (Some(_), true, _) => Stamp::Pyproject,
            (Some(_), false, true) => Stamp::Backend,
            (Some(_), false, false) if how.rewrite && !g.sdist => Stamp::AfterBuild,
            (Some(v), false, false) => {
                let (why, fix) = if g.sdist {
                    (
                        "an sdist cannot be stamped after its build (its setup.py would build the old version)",
                        "set [pkg.version] write-file / env to what its build reads the version from, or give it a static `version` in [project]",
                    )
                } else {
                    (
                        "[pkg.version] rewrite = false",
                        "set [pkg.version] write-file = \"FILE\" (the file its build reads the version from) and/or env = \"VARIABLE\" (read by its build), give it a static `version` in [project], or allow rewrite = true (the built wheel is stamped)",
                    )
                };
                return Err(Error::usage(format!(
                    "cannot stamp version {v} into {}: it has no static [project] version and no [pkg.version] write-file or env, and {why}",
                    g.package
                ))
                .hint(fix));
            }
        };
    }
    if req.pkg.one_version {
        let versions: Vec<(&str, String)> = groups
            .iter()
            .map(|g| {
                (
                    g.package.as_str(),
                    g.version
                        .clone()
                        .or_else(|| projects[&g.package].version.clone())
                        .unwrap_or_default(),
                )
            })
            .collect();
        if let Some(other) = versions
            .iter()
            .find(|(_, v)| !v.is_empty() && *v != versions[0].1)
        {
            return Err(Error::usage(format!(
                "the set is not at one version ([pkg] one-version = true): {} is {}, {} is {}",
                versions[0].0, versions[0].1, other.0, other.1
            ))
            .hint("pass --version to stamp one version into every package, make their versions equal, or remove [pkg] one-version"));
        }
    }
    Ok(())
}

/// The build's scratch directory inside the wheelhouse's parent, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(out: &Path) -> Result<Scratch, Error> {
        let dir = out.join(format!(".lockstep-build-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        fs_err::create_dir_all(&dir)?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct Context<'a> {
    req: &'a BuildRequest<'a>,
    repo: &'a Repo,
    revision: &'a str,
    /// The revision's committer time (seconds): SOURCE_DATE_EPOCH.
    epoch: &'a str,
    tree: &'a str,
    pythons: &'a [Python],
    scratch: &'a Scratch,
    out: &'a Path,
    submodules: &'a [stage::Submodule],
    /// sccache, auditwheel and patchelf (when a compiler cache or a repair
    /// needs them).
    tools: Option<&'a BuildTools>,
    manylinux: repair::Policy,
    /// The compiler cache every native build goes through.
    compiler: Option<&'a compiler_cache::Running>,
}

/// A wheel built (or taken from the cache) into the scratch directory.
struct Made {
    staged: PathBuf,
    info: WheelInfo,
    report: Built,
}

/// A failed cell.
struct Failure {
    cell: String,
    log: PathBuf,
    message: String,
}

/// A group's wheels, or its failed cell.
type GroupResult = Result<Vec<Made>, Failure>;

/// Runs the groups on `jobs` worker threads, in order of submission.
fn run_groups(
    ctx: &Context<'_>,
    groups: &[Group],
    sink: &dyn Sink,
) -> Result<Vec<GroupResult>, Error> {
    lockstep_core::pool::map_all("pkg-build", ctx.req.jobs, groups.len(), |index| {
        build_group(ctx, index, &groups[index], sink)
    })
}

/// The group's first Python, then the others unless the wheel is universal.
fn build_group(
    ctx: &Context<'_>,
    index: usize,
    group: &Group,
    sink: &dyn Sink,
) -> Result<Vec<Made>, Failure> {
    let mut made: Vec<Made> = Vec::new();
    if group.sdist {
        made.push(build_cell(ctx, index, group, &ctx.pythons[0], true, sink)?);
    }
    for (i, python) in ctx.pythons.iter().enumerate() {
        let wheel = build_cell(ctx, index, group, python, false, sink)?;
        let universal = WheelName::parse(&wheel.info.name).is_some_and(|w| w.is_universal());
        made.push(wheel);
        if i == 0 && universal {
            let all: Vec<String> = ctx.pythons.iter().map(|p| p.version.clone()).collect();
            let first = made.last_mut().expect("the wheel just built");
            first.info.cells = all.iter().map(|v| cell_name(v, &group.variant)).collect();
            first.report.pythons = all;
            break;
        }
    }
    Ok(made)
}

fn cell_name(python: &str, variant: &str) -> String {
    format!("python={python} variant={variant}")
}

fn cell_label(group: &Group, python: &Python) -> String {
    format!(
        "{} (python {}, variant {})",
        group.package, python.version, group.variant
    )
}

/// One cell (a wheel, or with `sdist` the package's sdist): from the
/// wheel cache, else built in a staged tree.
fn build_cell(
    ctx: &Context<'_>,
    index: usize,
    group: &Group,
    python: &Python,
    sdist: bool,
    sink: &dyn Sink,
) -> Result<Made, Failure> {
    let (label, cell_dir, log_name) = if sdist {
        (
            format!("{} (sdist, variant {})", group.package, group.variant),
            ctx.scratch.0.join(format!("{index}-sdist")),
            format!(
                "{}-{}-sdist.log",
                wheel::normalize(&group.dist),
                group.variant
            ),
        )
    } else {
        (
            cell_label(group, python),
            ctx.scratch.0.join(format!("{index}-{}", python.version)),
            format!(
                "{}-{}-py{}.log",
                wheel::normalize(&group.dist),
                group.variant,
                python.version
            ),
        )
    };
    let log = ctx.out.join(".logs").join(log_name);
    let fail = |message: String| {
        sink.emit(&PkgEvent::CellFailed {
            package: group.package.clone(),
            python: python.version.clone(),
            variant: group.variant.clone(),
            log: log.display().to_string(),
        });
        Failure {
            cell: label.clone(),
            log: log.clone(),
            message,
        }
    };
    let key = cache_key(ctx, group, python, sdist);
    let dist = cell_dir.join("dist");
    fs_err::create_dir_all(&dist).map_err(|e| fail(e.to_string()))?;
    let command = build_command(group, python, sdist);
    if let Some(made) = from_cache(ctx, &key, &dist, group, python, &command, sdist) {
        emit_built(sink, group, python, &made);
        return Ok(made);
    }
    let started = Instant::now();
    let src = cell_dir.join("src");
    fs_err::create_dir_all(&src).map_err(|e| fail(e.to_string()))?;
    stage::archive(ctx.repo, ctx.revision, ctx.submodules, &src).map_err(|e| fail(e.render()))?;
    let package_dir = if group.source.is_empty() {
        src.clone()
    } else {
        src.join(&group.source)
    };
    let cell_cache = match ctx.compiler {
        Some(running) => Some(running.cell().map_err(|e| fail(e.render()))?),
        None => None,
    };
    let mut env: Vec<(String, String)> = cell_cache
        .as_ref()
        .map(|c| c.env().to_vec())
        .unwrap_or_default();
    env.push(("SOURCE_DATE_EPOCH".into(), ctx.epoch.to_string()));
    // A package's own [pkg] env comes after, so it may set another epoch.
    env.extend(group.env.iter().map(|(k, v)| (k.clone(), v.clone())));
    if group.dist != group.package {
        stage::stamp_name(
            &package_dir.join("pyproject.toml"),
            &group.package,
            &group.dist,
        )
        .map_err(|e| fail(e.render()))?;
    }
    if let Some(version) = &group.version {
        let how = &ctx.req.pkg.version;
        match group.stamp {
            Stamp::Pyproject => {
                stage::stamp_version(&package_dir.join("pyproject.toml"), &group.package, version)
                    .map_err(|e| fail(e.render()))?
            }
            // The file and the variable are how a dynamic version (or a
            // setup.py's) is set.
            Stamp::Backend => {
                if let Some(file) = &how.write_file {
                    stage::stamp_file(&package_dir, file, &group.package, version)
                        .map_err(|e| fail(e.render()))?;
                }
                if let Some(var) = &how.env {
                    env.push((var.clone(), version.clone()));
                }
            }
            Stamp::AfterBuild | Stamp::None => {}
        }
    }
    let ran = ctx
        .req
        .uv
        .build(&Build {
            sdist,
            python: &python.path,
            package: &package_dir,
            out_dir: &dist,
            cwd: &cell_dir,
            env: &env,
            timeout: ctx.req.pkg.build_timeout,
            log: &log,
        })
        .map_err(|e| fail(e.render()))?;
    if let Some(cell_cache) = cell_cache {
        if let Err(e) = cell_cache.finish() {
            sink.warn(format!(
                "cannot read the compiler cache's counts of {label}: {}",
                e.message
            ));
        }
    }
    if !ran.success() {
        return Err(fail(format!("uv build {}", ran.exit.describe())));
    }
    let file = single_dist(&dist, group, sdist).map_err(fail)?;
    let file = match (&group.version, group.stamp) {
        (Some(version), Stamp::AfterBuild) if !built_at(&file, version) => {
            restamp_wheel(&file, group, version, &cell_dir, sink).map_err(fail)?
        }
        _ => file,
    };
    if let Some(version) = &group.version {
        check_metadata_version(&file, group, version, sdist).map_err(fail)?;
    }
    let _ = std::fs::remove_dir_all(&src);
    let (file, policy) = if sdist {
        (file, None)
    } else {
        repair_wheel(ctx, &file, &cell_dir).map_err(fail)?
    };
    if let Some(policy) = &policy {
        sink.emit(&PkgEvent::Repaired {
            wheel: lockstep_core::fs::file_name(&file),
            policy: policy.clone(),
        });
    }
    let seconds = started.elapsed().as_secs_f64();
    store_in_cache(ctx, &key, &file, policy.as_deref(), sdist);
    let mut made = made(file, group, python, command, seconds, false, sdist);
    made.info.manylinux = policy.clone();
    made.report.manylinux = policy;
    emit_built(sink, group, python, &made);
    Ok(made)
}

/// The built wheel repaired to its manylinux policy (the repaired file
/// replaces it), or as it is when it is pure or repair is off.
fn repair_wheel(
    ctx: &Context<'_>,
    file: &Path,
    cell_dir: &Path,
) -> Result<(PathBuf, Option<String>), String> {
    let Some(tools) = ctx.tools else {
        return Ok((file.to_path_buf(), None));
    };
    let out = cell_dir.join("repaired");
    match repair::repair(tools, file, ctx.manylinux, &out, ctx.req.pkg.build_timeout)? {
        Some(repaired) => {
            let _ = std::fs::remove_file(file);
            Ok((repaired.file, Some(repaired.policy)))
        }
        None => Ok((file.to_path_buf(), None)),
    }
}

/// Whether the wheel `file` is already at `version` (a backend's own
/// version asked for again: nothing to stamp).
fn built_at(file: &Path, version: &str) -> bool {
    let name = lockstep_core::fs::file_name(file);
    matches!(
        (
            WheelName::parse(&name).map(|w| wheel::parse_version(&w.version)),
            wheel::parse_version(version),
        ),
        (Some(Ok(a)), Ok(b)) if a == b
    )
}

/// A wheel built at its backend's version, rewritten at `version` (the
/// rewrite `release promote` does) into the cell's directory; the built
/// one is removed. Says so, naming text members that still hold the old
/// version.
fn restamp_wheel(
    file: &Path,
    group: &Group,
    version: &str,
    cell_dir: &Path,
    sink: &dyn Sink,
) -> Result<PathBuf, String> {
    let name = lockstep_core::fs::file_name(file);
    let built = WheelName::parse(&name)
        .map(|w| w.version)
        .ok_or_else(|| format!("`{name}` is not a wheel file name"))?;
    let to = wheel::parse_version(version)?.to_string();
    let out = cell_dir.join("restamped");
    fs_err::create_dir_all(&out).map_err(|e| e.to_string())?;
    let (restamped, stamps, _dropped) =
        lockstep_python::restamp::rewrite_wheel(file, &out, &built, &to, false)
            .map_err(|e| e.render())?;
    let _ = std::fs::remove_file(file);
    sink.emit(&PkgEvent::Restamped {
        package: group.dist.clone(),
        wheel: lockstep_core::fs::file_name(&restamped),
        from: built,
        to,
        stamps,
    });
    Ok(restamped)
}

/// The wheel's METADATA (the sdist's PKG-INFO) `Version` equals the
/// stamped one (a backend that ignored the stamp would otherwise ship
/// another version under this name).
fn check_metadata_version(
    file: &Path,
    group: &Group,
    version: &str,
    sdist: bool,
) -> Result<(), String> {
    let found = if sdist {
        lockstep_python::sdist::metadata_version(file)?
    } else {
        wheel::metadata_version(file, MAX_METADATA)?
    };
    let same = matches!(
        (wheel::parse_version(version), wheel::parse_version(&found)),
        (Ok(a), Ok(b)) if a == b
    );
    if same {
        return Ok(());
    }
    Err(format!(
        "the build of {} produced METADATA version {found} instead of the stamped {version}: its build backend ignored the stamp ([pkg.version] write-file / env must be what it reads the version from)",
        group.package
    ))
}

fn emit_built(sink: &dyn Sink, group: &Group, python: &Python, made: &Made) {
    sink.emit(&PkgEvent::CellBuilt {
        package: group.dist.clone(),
        python: python.version.clone(),
        variant: group.variant.clone(),
        wheel: made.info.name.clone(),
        seconds: made.info.seconds,
        cached: made.info.cached,
    });
}

/// What the manifest records as the cell's build command (paths of the
/// scratch tree left out: they do not exist after the build).
fn build_command(group: &Group, python: &Python, sdist: bool) -> Vec<String> {
    let mut command: Vec<String> = group.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let kind = if sdist { "--sdist" } else { "--wheel" };
    command.extend(["uv", "build", kind, "--python"].map(String::from));
    command.push(python.version.clone());
    command.push(if group.source.is_empty() {
        ".".into()
    } else {
        group.source.clone()
    });
    command
}

fn made(
    file: PathBuf,
    group: &Group,
    python: &Python,
    command: Vec<String>,
    seconds: f64,
    cached: bool,
    sdist: bool,
) -> Made {
    let name = lockstep_core::fs::file_name(&file);
    // An sdist serves every Python of its variant.
    let cells = if sdist {
        vec![format!("variant={}", group.variant)]
    } else {
        vec![cell_name(&python.version, &group.variant)]
    };
    Made {
        info: WheelInfo {
            name,
            cells,
            command,
            seconds: (seconds * 1000.0).round() / 1000.0,
            cached,
            manylinux: None,
        },
        report: Built {
            package: group.dist.clone(),
            variant: group.variant.clone(),
            pythons: vec![python.version.clone()],
            file: file.clone(),
            seconds,
            cached,
            manylinux: None,
            sdist,
        },
        staged: file,
    }
}

/// The one wheel (sdist) uv wrote, named for the package (and the stamped version).
fn single_dist(dist: &Path, group: &Group, sdist: bool) -> Result<PathBuf, String> {
    let file = &if sdist {
        wheel::single_file_in(dist, ".tar.gz", "sdists", "uv build")?
    } else {
        wheel::single_wheel_in(dist, "uv build")?
    };
    let name = lockstep_core::fs::file_name(file);
    let parsed = dist_name(&name, sdist)
        .ok_or_else(|| format!("`{name}` is not a wheel or sdist file name lockstep can read"))?;
    if parsed.0 != wheel::normalize(&group.dist) {
        return Err(format!(
            "the build of {} produced {name}: another distribution's name",
            group.package
        ));
    }
    if let (Some(v), false) = (&group.version, group.stamp == Stamp::AfterBuild) {
        let same = matches!((wheel::parse_version(v), wheel::parse_version(&parsed.1)), (Ok(a), Ok(b)) if a == b);
        if !same {
            return Err(format!(
                "the build of {} produced version {} instead of the stamped {v}: its build backend ignored the stamp ([pkg.version] write-file / env must be what it reads the version from)",
                group.package, parsed.1
            ));
        }
    }
    Ok(file.clone())
}

/// (normalised name, version) of a wheel or sdist file name.
fn dist_name(name: &str, sdist: bool) -> Option<(String, String)> {
    if sdist {
        lockstep_python::sdist::SdistName::parse(name).map(|n| (n.name, n.version))
    } else {
        WheelName::parse(name).map(|n| (n.name, n.version))
    }
}

/// The cache item holding the file.
fn cache_item(sdist: bool) -> &'static str {
    if sdist {
        "sdist"
    } else {
        "whl"
    }
}

fn cache_key(
    ctx: &Context<'_>,
    group: &Group,
    python: &Python,
    sdist: bool,
) -> lockstep_cache::Key {
    let env: Vec<String> = group.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    KeyBuilder::new(Area::Wheels, KEY_VERSION)
        .part("kind", cache_item(sdist))
        .part("tree", ctx.tree)
        .part("package", &group.dist)
        .part("source", &group.source)
        .part("version", group.version.as_deref().unwrap_or(""))
        .part("python", &python.full)
        .part("python-path", python.path.to_string_lossy().as_bytes())
        .part("env", env.join("\n"))
        .part("submodules", submodule_lines(ctx.submodules))
        .part("manylinux", format!("{:?}", ctx.manylinux))
        .part(
            "write-file",
            ctx.req
                .pkg
                .version
                .write_file
                .as_deref()
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default(),
        )
        .part(
            "version-env",
            ctx.req.pkg.version.env.as_deref().unwrap_or(""),
        )
        .finish()
}

fn submodule_lines(submodules: &[stage::Submodule]) -> String {
    submodules
        .iter()
        .map(|s| format!("{} {}", s.path, s.commit))
        .collect::<Vec<_>>()
        .join("\n")
}

fn from_cache(
    ctx: &Context<'_>,
    key: &lockstep_cache::Key,
    dist: &Path,
    group: &Group,
    python: &Python,
    command: &[String],
    sdist: bool,
) -> Option<Made> {
    let bucket = ctx.req.cache.as_ref()?;
    let entry = bucket.slot(key, None).get()?;
    let name: String = entry.meta().get("file")?.as_str()?.to_string();
    dist_name(&name, sdist)?;
    let policy = entry
        .meta()
        .get("manylinux")
        .and_then(|p| p.as_str())
        .map(String::from);
    let cached = entry.file(cache_item(sdist))?;
    let dest = dist.join(&name);
    std::fs::copy(cached, &dest).ok()?;
    let mut made = made(dest, group, python, command.to_vec(), 0.0, true, sdist);
    made.info.manylinux = policy.clone();
    made.report.manylinux = policy;
    Some(made)
}

fn store_in_cache(
    ctx: &Context<'_>,
    key: &lockstep_cache::Key,
    file: &Path,
    policy: Option<&str>,
    sdist: bool,
) {
    let Some(bucket) = &ctx.req.cache else { return };
    let slot = bucket.slot(key, None);
    let stored = (|| -> Result<(), Error> {
        let lock = slot.lock()?;
        if lock.get().is_some() {
            return Ok(());
        }
        let mut stage = lock.stage();
        stage.copy(cache_item(sdist), file)?;
        let name = lockstep_core::fs::file_name(file);
        stage.commit(serde_json::json!({ "file": name, "manylinux": policy }))?;
        Ok(())
    })();
    if let Err(e) = stored {
        tracing::warn!("cannot keep the wheel in the cache: {}", e.message);
    }
}

/// The error for failed cells: each named with its log's last lines.
fn failed_cells(failures: Vec<Failure>, cells: usize) -> Error {
    let names: Vec<&str> = failures.iter().map(|f| f.cell.as_str()).collect();
    let mut err = Error::failed(format!(
        "{} of {} failed to build: {}",
        failures.len(),
        lockstep_core::words::count(cells, "cell", "cells"),
        names.join("; ")
    ));
    for f in &failures {
        let tail = log_tail(&f.log, LOG_TAIL);
        err = err.cause(format!(
            "{}: {}{}",
            f.cell,
            f.message,
            if tail.is_empty() {
                String::new()
            } else {
                format!("\n{tail}")
            }
        ));
        if f.log.is_file() {
            err = err.cause(format!("full log: {}", f.log.display()));
        }
    }
    err.hint("no manifest was written; fix the build and run `lockstep pkg build` again")
}

fn log_tail(log: &Path, n: usize) -> String {
    let Ok(bytes) = lockstep_core::fs::read_input("the build log", log, 64 << 20) else {
        return String::new();
    };
    let text = String::from_utf8_lossy(&bytes);
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| format!("  | {}", lockstep_core::error::printable_line(l)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The file in each wheel's `.dist-info` saying what it was built from.
pub const BUILD_INFO: &str = "lockstep_build.json";

/// [`BUILD_INFO`]'s text: the source commit, whether the tree was dirty,
/// the variant, each submodule's commit and the upstream pin.
fn build_info(
    ctx: &Context<'_>,
    variant: &str,
    dirty: bool,
    pin: Option<&str>,
) -> Result<Vec<u8>, Error> {
    let submodules: BTreeMap<&str, &str> = ctx
        .submodules
        .iter()
        .map(|s| (s.path.as_str(), s.commit.as_str()))
        .collect();
    let info = serde_json::json!({
        "source-revision": ctx.revision,
        "dirty": dirty,
        "variant": variant,
        "submodules": submodules,
        "upstream-revision": pin,
        "built-by": format!("lockstep {}", env!("CARGO_PKG_VERSION")),
    });
    serde_json::to_vec_pretty(&info)
        .map_err(|e| Error::failed("cannot encode the build info").cause(e.to_string()))
}

/// Moves the wheels into the wheelhouse and writes one manifest per variant.
fn write_set(
    ctx: &Context<'_>,
    groups: &[Group],
    built: &mut [Made],
    dirty: bool,
    pin: Option<&str>,
    sink: &dyn Sink,
) -> Result<Vec<PathBuf>, Error> {
    let mut variants: Vec<&str> = groups.iter().map(|g| g.variant.as_str()).collect();
    variants.sort();
    variants.dedup();
    let mut manifests = Vec::new();
    for variant in variants {
        let manifest_path = ctx.out.join(pylock::file_name(variant));
        let dir = if variant == DEFAULT_VARIANT {
            ctx.out.to_path_buf()
        } else {
            ctx.out.join(variant)
        };
        fs_err::create_dir_all(&dir)?;
        let mut packages: BTreeMap<String, Package> = BTreeMap::new();
        let mut count = 0;
        for made in built.iter_mut().filter(|m| m.report.variant == variant) {
            let dest = dir.join(&made.info.name);
            // What the wheel was built from goes inside it (added here, not
            // kept in the cache: a cached wheel serves every commit of its
            // tree). An sdist is the tree itself: it moves in as built.
            let ready = if made.report.sdist {
                made.staged.clone()
            } else {
                let stamped = made
                    .staged
                    .with_file_name(format!(".with-build-info-{}", made.info.name));
                wheel::add_dist_info_file(
                    &made.staged,
                    &stamped,
                    BUILD_INFO,
                    &build_info(ctx, variant, dirty, pin)?,
                )?;
                stamped
            };
            std::fs::rename(&ready, &dest).map_err(|e| {
                Error::failed(format!(
                    "cannot move {} into {}",
                    made.info.name,
                    dir.display()
                ))
                .cause(e.to_string())
            })?;
            made.report.file = dest.clone();
            let rel = dest
                .strip_prefix(ctx.out)
                .unwrap_or(&dest)
                .to_string_lossy()
                .into_owned();
            let version = dist_name(&made.info.name, made.report.sdist)
                .map(|(_, version)| version)
                .unwrap_or_default();
            let package = packages
                .entry(made.report.package.clone())
                .or_insert_with(|| Package {
                    name: wheel::normalize(&made.report.package),
                    version: Some(version),
                    sdist: None,
                    wheels: Vec::new(),
                    tool: Some(PackageTool {
                        lockstep: Some(PackageInfo {
                            source_revision: Some(ctx.revision.to_string()),
                            upstream_revision: pin.map(String::from),
                            wheels: Vec::new(),
                            sdist: None,
                        }),
                    }),
                });
            let entry = Wheel {
                name: Some(made.info.name.clone()),
                path: Some(rel),
                size: Some(fs_err::metadata(&dest)?.len()),
                hashes: BTreeMap::from([(
                    "sha256".to_string(),
                    lockstep_core::hash::sha256_file(&dest)?,
                )]),
            };
            let info = package.tool.as_mut().and_then(|t| t.lockstep.as_mut());
            if made.report.sdist {
                package.sdist = Some(entry);
                if let Some(info) = info {
                    info.sdist = Some(made.info.clone());
                }
                continue;
            }
            package.wheels.push(entry);
            if let Some(info) = info {
                info.wheels.push(made.info.clone());
            }
            count += 1;
        }
        let mut lock = Lock::new();
        lock.packages = packages.into_values().collect();
        for p in &mut lock.packages {
            p.wheels.sort_by(|a, b| a.name.cmp(&b.name));
            if let Some(info) = p.tool.as_mut().and_then(|t| t.lockstep.as_mut()) {
                info.wheels.sort_by(|a, b| a.name.cmp(&b.name));
            }
        }
        lock.tool = Some(pylock::LockTool {
            lockstep: Some(SetInfo {
                variant: variant.to_string(),
                source_revision: Some(ctx.revision.to_string()),
                dirty,
                partial: {
                    let configured = ctx
                        .req
                        .pkg
                        .package
                        .iter()
                        .filter(|p| p.variants.iter().any(|v| v == variant))
                        .count();
                    groups.iter().filter(|g| g.variant == variant).count() < configured
                },
                submodules: ctx
                    .submodules
                    .iter()
                    .map(|s| (s.path.clone(), s.commit.clone()))
                    .collect(),
            }),
        });
        lockstep_core::fs::write_atomic(&manifest_path, lock.to_toml()?.as_bytes())?;
        sink.emit(&PkgEvent::ManifestWritten {
            path: manifest_path.display().to_string(),
            wheels: count,
        });
        manifests.push(manifest_path);
    }
    Ok(manifests)
}
