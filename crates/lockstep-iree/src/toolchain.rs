//! Which IREE tools a command uses, and provisioning them.
//!
//! Precedence ([`for_command`]): `--iree-bin DIR`, then `$LOCKSTEP_IREE_BIN`,
//! then `[toolchain] iree-bin`, then the built set of `$LOCKSTEP_IREE_MANIFEST`
//! or `[toolchain] manifest`, then the provisioned toolchain for the pinned
//! version (installed on first use). Tools on `PATH` are never used: results must say
//! which compiler produced them.
//!
//! A provisioned toolchain lives in `$LOCKSTEP_TOOLCHAINS/iree-<version>/`:
//!
//! ```text
//! venv/            uv venv with iree-base-compiler and iree-base-runtime
//! bin/             relative symlinks to the native binaries inside venv/
//! toolchain.json   the Toolchain (identity computed once, at install time)
//! ```
//!
//! [`install`] builds it in a staging directory beside it
//! (`.iree-<version>.tmp-<pid>-<n>/`, a [`lockstep_core::fs::StagedDir`])
//! under an exclusive `flock` on `.iree-<version>.lock`, writes
//! `toolchain.json` last, then moves the directory into place, so the final
//! name only ever holds a complete install; what a killed install left is
//! removed under the lock. The venv is made and filled by lockstep-python's
//! layer (`uv venv`, `uv pip install` of the pinned packages from PyPI, with
//! its timeouts, logs and environment policy). The venv's console scripts (`venv/bin/iree-compile`, Python
//! wrappers with absolute shebangs) are never used; the native binaries find
//! `libIREECompiler.so` through `$ORIGIN`, which the kernel resolves through the
//! symlinks, so renaming the directory does not break them.

use std::collections::HashMap;
use std::ffi::OsString;
use std::os::unix::fs::{symlink, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, UNIX_EPOCH};

use lockstep_core::events::Sink;
use lockstep_core::fs::StagedDir;
use lockstep_core::lock::FileLock;
use lockstep_core::process::{self, Exit};
use lockstep_core::{paths, Error};

use crate::config::ToolchainConfig;
use lockstep_python::uv::{find_uv, Install, NewVenv};

mod set;
use lockstep_core::hash::Framed;
use serde::{Deserialize, Serialize};
pub use set::{install_set, resolve_set, SetFrom};

/// Environment variable naming a directory of IREE tools.
pub const ENV_IREE_BIN: &str = "LOCKSTEP_IREE_BIN";

/// The PyPI packages a provisioned toolchain consists of.
pub const PACKAGES: [&str; 2] = ["iree-base-compiler", "iree-base-runtime"];

/// Which part of IREE a distribution is, whatever its variant suffix:
/// `iree-base-compiler`, `iree-base-compiler-asserts` ... are the compiler
/// (index 0 of [`PACKAGES`]), `iree-base-runtime*` the runtime (1). A
/// variant of a project's build is named with a suffix; recognising only
/// the exact names would take such a set for "not IREE" and install PyPI's
/// compiler under it.
pub fn iree_part(distribution: &str) -> Option<usize> {
    let name = lockstep_python::wheel::normalize(distribution);
    PACKAGES.iter().position(|base| {
        name == *base
            || name
                .strip_prefix(base)
                .is_some_and(|rest| rest.starts_with('-') && rest.len() > 1)
    })
}

/// The manifest that marks a provisioned toolchain complete.
const MANIFEST: &str = "toolchain.json";

/// The compiler library whose content goes into the identity of a build tree.
const COMPILER_LIB: &str = "libIREECompiler.so";

/// How identities are computed (a manifest of another version is recomputed).
pub(crate) const IDENTITY_VERSION: u32 = 3;

/// Folders inside site-packages whose native `iree-*` executables are linked
/// into `bin/` (compiler first; `_runtime_libs_tracy` is deliberately absent).
const NATIVE_DIRS: [&str; 2] = ["iree/compiler/_mlir_libs", "iree/_runtime_libs"];

/// Where the tools came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    Flag,
    Env,
    Config,
    Provisioned,
    /// The `iree-base-compiler` of the running Python environment (the
    /// `lockstep_kernels` package).
    Python,
}

impl Source {
    /// How the source is named in messages.
    pub fn describe(self) -> &'static str {
        match self {
            Source::Flag => "--iree-bin",
            Source::Env => "$LOCKSTEP_IREE_BIN",
            Source::Config => "[toolchain] iree-bin",
            Source::Provisioned => "the provisioned toolchain",
            Source::Python => "the Python environment's iree-base-compiler",
        }
    }

    pub(crate) fn fix_hint(self) -> &'static str {
        match self {
            Source::Flag => "pass --iree-bin a directory holding iree-compile and iree-run-module, or omit it to use the provisioned IREE",
            Source::Env => "set LOCKSTEP_IREE_BIN to a directory holding iree-compile and iree-run-module, or unset it to use the provisioned IREE",
            Source::Config => "fix `iree-bin` in the [toolchain] table of lockstep.toml (relative to the file), or remove it to use the provisioned IREE",
            Source::Provisioned => "reinstall it: remove the toolchain directory and run `lockstep toolchain install`",
            Source::Python => "install iree-base-compiler in this Python environment (`pip install iree-base-compiler`), or set LOCKSTEP_IREE_BIN to a directory holding iree-compile",
        }
    }
}

/// A set of IREE tools and the identity of its compiler.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Toolchain {
    /// One directory holding every tool (for a provisioned toolchain: symlinks to the native binaries).
    pub bin: PathBuf,
    pub source: Source,
    /// Package versions, e.g. [("iree-base-compiler","3.13.0"),("iree-base-runtime","3.13.0")] (empty for --iree-bin dirs).
    pub packages: Vec<(String, String)>,
    /// The `IREE compiler version ...` line of `iree-compile --version`
    /// (e.g. "IREE compiler version 3.13.0rc20261016 @ 89ece87b...").
    pub compiler_version: String,
    /// Identity of the compiler for cache keys, from content only (never a
    /// path or an mtime), so the same IREE installed anywhere shares cache
    /// entries: hex sha256 over the version output and, for pip-installed
    /// tools, each IREE package's name, version and the sha256 of every file
    /// its wheel installed (from the dist-info RECORD); for a build tree, the
    /// sha256 of iree-compile and libIREECompiler.so. Computed once per
    /// provisioned toolchain and stored in `<dir>/toolchain.json`.
    pub identity: String,
    /// How `identity` was computed ([`IDENTITY_VERSION`]; 0 in old manifests).
    #[serde(default)]
    pub identity_version: u32,
}

impl Toolchain {
    /// No IREE at all: what a run of tests that need none (pytest suites
    /// alone) records, instead of installing a compiler it never starts.
    pub fn absent() -> Toolchain {
        Toolchain {
            bin: PathBuf::new(),
            source: Source::Provisioned,
            packages: Vec::new(),
            compiler_version: "none (no test of this run uses IREE)".into(),
            identity: String::new(),
            identity_version: 0,
        }
    }

    /// Path of a tool ("iree-compile", "iree-run-module", ...) in `bin`; error naming the tool and dir when missing.
    pub fn tool(&self, name: &str) -> Result<PathBuf, Error> {
        let path = self.bin.join(name);
        if is_executable(&path) {
            return Ok(path);
        }
        let message = format!(
            "IREE tool {name} not found in {} (from {})",
            self.bin.display(),
            self.source.describe()
        );
        let err = match self.source {
            Source::Provisioned => Error::failed(message),
            _ => Error::usage(message),
        };
        Err(err.hint(self.source.fix_hint()))
    }

    /// The version part of [`Toolchain::compiler_version`] (`3.13.0rc20261016 @ 89ece87b...`).
    pub fn compiler_stamp(&self) -> &str {
        let v = self.compiler_version.trim();
        v.strip_prefix("IREE compiler version ").unwrap_or(v)
    }

    /// How `toolchain install` says what it installed: the packages and
    /// their directory, then the compiler's own version.
    pub fn installed(&self) -> String {
        let packages: Vec<String> = self
            .packages
            .iter()
            .map(|(name, version)| format!("{name} {version}"))
            .collect();
        let dir = self.bin.parent().unwrap_or(&self.bin);
        format!(
            "{} in {}\niree-compile reports {}\n",
            packages.join(", "),
            dir.display(),
            self.compiler_stamp()
        )
    }
}

/// What a command asked for.
pub struct Request<'a> {
    /// `--iree-bin`.
    pub flag: Option<&'a Path>,
    /// `[toolchain] iree-bin`, already resolved against the config file's directory.
    pub config_bin: Option<&'a Path>,
    /// `[toolchain] iree` (or `--iree`): the version to provision when no directory is given.
    pub version: &'a str,
}

/// Precedence: flag, then env LOCKSTEP_IREE_BIN (non-empty), then config_bin, then the provisioned `version` (installed on first
/// use with a note "installing IREE 3.13.0 into ... (first use)"). Never PATH.
/// A given dir must exist and contain iree-compile (error naming where it came from: "--iree-bin", "$LOCKSTEP_IREE_BIN", "[toolchain] iree-bin").
pub fn resolve(req: &Request, sink: &dyn Sink) -> Result<Toolchain, Error> {
    let env = std::env::var_os(ENV_IREE_BIN);
    resolve_in(req, env, &toolchains_root()?, sink)
}

/// Environment variable naming the manifest of a built set the toolchain comes from.
pub const ENV_IREE_MANIFEST: &str = "LOCKSTEP_IREE_MANIFEST";

/// The IREE tools a command uses, by the one precedence: `--iree-bin`
/// (`flag`), else `$LOCKSTEP_IREE_BIN`, else `[toolchain] iree-bin`
/// (relative to `root`, lockstep.toml's directory), else the set of
/// `$LOCKSTEP_IREE_MANIFEST` or `[toolchain] manifest`, else the provisioned
/// `[toolchain] iree` version (installed on first use).
pub fn for_command(
    flag: Option<&Path>,
    cfg: &ToolchainConfig,
    root: &Path,
    sink: &dyn Sink,
) -> Result<Toolchain, Error> {
    let config_bin = cfg.iree_bin.as_ref().map(|p| root.join(p));
    let env_bin = std::env::var_os(ENV_IREE_BIN).is_some_and(|v| !v.is_empty());
    if flag.is_none() && !env_bin && config_bin.is_none() {
        if let Some(manifest) = configured_manifest(cfg, root) {
            return resolve_set(SetFrom::Manifest(&manifest), &cfg.iree, sink);
        }
    }
    resolve(
        &Request {
            flag,
            config_bin: config_bin.as_deref(),
            version: &cfg.iree,
        },
        sink,
    )
}

/// `(compiler version, runtime version)` when modules compiled with the
/// IREE of `built` (a bundle's packages) meet another IREE runtime here
/// (a module's format follows its compiler); `None` when they agree or
/// either version is unknown. Both as a message shows them: the bundle's
/// is the bundle's word, escaped and cut
/// ([`lockstep_core::error::shown`]).
pub fn runtime_mismatch(
    built: &[(String, String)],
    here: &[(String, String)],
) -> Option<(String, String)> {
    let version = |packages: &[(String, String)], name: &str| {
        packages
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let built = version(built, PACKAGES[0])?;
    let here = version(here, PACKAGES[1])?;
    (built != here).then(|| {
        (
            lockstep_core::error::shown(&built, 80),
            lockstep_core::error::shown(&here, 80),
        )
    })
}

/// The IREE runtime tools a command that compiles nothing uses (`lockstep
/// bench --from-bundle`): by [`for_command`]'s precedence, except that a
/// named directory needs only `iree-run-module` (a GPU machine may have the
/// runtime alone, e.g. iree-base-runtime's `iree/_runtime_libs`). Such a
/// toolchain has no compiler identity; its packages are the IREE
/// distributions installed around it, when it sits in a site-packages.
pub fn runtime_for_command(
    flag: Option<&Path>,
    cfg: &ToolchainConfig,
    root: &Path,
    sink: &dyn Sink,
) -> Result<Toolchain, Error> {
    let env = std::env::var_os(ENV_IREE_BIN).filter(|v| !v.is_empty());
    let named = match (flag, env, &cfg.iree_bin) {
        (Some(dir), _, _) => Some((dir.to_path_buf(), Source::Flag)),
        (None, Some(dir), _) => Some((PathBuf::from(dir), Source::Env)),
        (None, None, Some(dir)) => Some((root.join(dir), Source::Config)),
        _ => None,
    };
    match named {
        Some((dir, source)) if !is_executable(&dir.join("iree-compile")) => {
            let bin = std::path::absolute(&dir).unwrap_or(dir);
            if !is_executable(&bin.join("iree-run-module")) {
                return Err(Error::usage(format!(
                    "the IREE tools directory {} (from {}) holds no executable iree-run-module",
                    bin.display(),
                    source.describe()
                ))
                .hint(source.fix_hint()));
            }
            let packages = bin
                .ancestors()
                .skip(1)
                .take(3)
                .find_map(|d| package_versions(d).ok().filter(|p| !p.is_empty()))
                .unwrap_or_default();
            Ok(Toolchain {
                bin,
                source,
                packages,
                compiler_version: String::new(),
                identity: String::new(),
                identity_version: IDENTITY_VERSION,
            })
        }
        _ => for_command(flag, cfg, root, sink),
    }
}

/// Where the IREE tools a command would use are, by [`for_command`]'s
/// precedence, without installing anything (`lockstep doctor`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Located {
    /// `--iree-bin`, `$LOCKSTEP_IREE_BIN`, `[toolchain] iree-bin`, a
    /// manifest, or the provisioned version.
    pub source: String,
    /// The tools' directory (where a provisioned one would be installed).
    pub bin: PathBuf,
    /// `iree-compile` is there.
    pub present: bool,
    /// lockstep installs it on first use (the PyPI version or a set).
    pub provisioned: bool,
}

/// [`Located`] for `cfg` (paths relative to `root`, lockstep.toml's directory).
pub fn locate(cfg: &ToolchainConfig, root: &Path) -> Located {
    let at = |source: String, bin: PathBuf| Located {
        present: is_executable(&bin.join("iree-compile")),
        provisioned: false,
        source,
        bin,
    };
    if let Some(dir) = std::env::var_os(ENV_IREE_BIN).filter(|v| !v.is_empty()) {
        return at(Source::Env.describe().into(), PathBuf::from(dir));
    }
    if let Some(dir) = &cfg.iree_bin {
        return at(Source::Config.describe().into(), root.join(dir));
    }
    let toolchains = toolchains_root().unwrap_or_else(|_| paths::toolchains());
    if let Some(manifest) = configured_manifest(cfg, root) {
        // A set's directory is named by its wheels' content: where it goes
        // (and whether it is there) is known once the manifest is read, so
        // it is reported as installed on first use.
        return Located {
            source: format!("the wheels of {}", manifest.display()),
            present: false,
            provisioned: true,
            bin: toolchains,
        };
    }
    Located {
        provisioned: true,
        ..at(
            format!("IREE {} from PyPI, provisioned", cfg.iree),
            toolchains.join(dir_name(&cfg.iree)).join("bin"),
        )
    }
}

/// What `lockstep toolchain install` was asked for.
#[derive(Debug, Default)]
pub struct InstallRequest {
    /// `--iree VERSION` (else `[toolchain] iree`).
    pub iree: Option<String>,
    /// `--manifest FILE` (else `$LOCKSTEP_IREE_MANIFEST`, `[toolchain] manifest`).
    pub manifest: Option<PathBuf>,
    /// `--wheels DIR`.
    pub wheels: Option<PathBuf>,
}

/// Installs what `req` asks for (idempotent): a built set from a manifest
/// or a directory of wheels, else the PyPI version.
pub fn install_requested(
    req: &InstallRequest,
    cfg: &ToolchainConfig,
    root: &Path,
    sink: &dyn Sink,
) -> Result<Toolchain, Error> {
    let version = req.iree.as_deref().unwrap_or(&cfg.iree);
    let manifest = req
        .manifest
        .clone()
        .or_else(|| configured_manifest(cfg, root));
    match (&manifest, &req.wheels) {
        (Some(m), _) => install_set(SetFrom::Manifest(m), version, sink),
        (None, Some(d)) => install_set(SetFrom::Wheels(d), version, sink),
        (None, None) => install(version, sink),
    }
}

/// `$LOCKSTEP_IREE_MANIFEST` (non-empty), else `[toolchain] manifest`.
fn configured_manifest(cfg: &ToolchainConfig, root: &Path) -> Option<PathBuf> {
    std::env::var_os(ENV_IREE_MANIFEST)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| cfg.manifest.as_ref().map(|p| root.join(p)))
}

/// Installs (idempotent): $LOCKSTEP_TOOLCHAINS/iree-<version>/ containing venv/, bin/ (symlinks), toolchain.json.
pub fn install(version: &str, sink: &dyn Sink) -> Result<Toolchain, Error> {
    install_in(&toolchains_root()?, version, sink, false)
}

/// Accepts a PEP 440 version in its normal form (`3.13.0`,
/// `3.13.0rc20261016`, `3.14.0a1`, `3.13.0.post1`, `3.14.0.dev20261101`),
/// as `pep440_rs` parses and prints it: the version becomes a directory name
/// and a requirement, so two spellings of one version must not make two
/// toolchains. Anything else is a usage error.
pub fn validate_version(version: &str) -> Result<(), Error> {
    let parsed = (version.len() <= 64)
        .then(|| lockstep_python::wheel::parse_version(version).ok())
        .flatten();
    match parsed {
        Some(v) if v.to_string() == version => Ok(()),
        other => {
            let mut err = Error::usage(format!("invalid IREE version `{version}`")).cause(
                "expected a release version such as 3.13.0, 3.13.0rc20261016 or 3.14.0.dev20261101",
            );
            if let Some(normal) = other {
                err = err.cause(format!("its PEP 440 normal form is {normal}"));
            }
            Err(err.hint("pass --iree VERSION (or set [toolchain] iree in lockstep.toml) to a version listed at https://pypi.org/project/iree-base-compiler/#history"))
        }
    }
}

fn dir_name(version: &str) -> String {
    format!("iree-{version}")
}

fn toolchains_root() -> Result<PathBuf, Error> {
    let root = paths::toolchains();
    std::path::absolute(&root).map_err(|e| {
        Error::failed(format!(
            "cannot locate the toolchains directory {}",
            root.display()
        ))
        .cause(e.to_string())
    })
}

/// [`resolve`] with the environment value and the toolchains root given.
fn resolve_in(
    req: &Request,
    env_bin: Option<OsString>,
    root: &Path,
    sink: &dyn Sink,
) -> Result<Toolchain, Error> {
    if let Some(dir) = req.flag {
        return user_dir(dir, Source::Flag);
    }
    if let Some(dir) = env_bin.filter(|v| !v.is_empty()) {
        return user_dir(Path::new(&dir), Source::Env);
    }
    if let Some(dir) = req.config_bin {
        return user_dir(dir, Source::Config);
    }
    validate_version(req.version)?;
    if let Some(toolchain) = installed_in(root, req.version)? {
        return Ok(toolchain);
    }
    install_in(root, req.version, sink, true)
}

/// A directory of tools the user named.
fn user_dir(dir: &Path, source: Source) -> Result<Toolchain, Error> {
    let bin = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    if !bin.is_dir() {
        return Err(Error::usage(format!(
            "the IREE tools directory {} (from {}) does not exist",
            bin.display(),
            source.describe()
        ))
        .hint(source.fix_hint()));
    }
    let compile = bin.join("iree-compile");
    if !is_executable(&compile) {
        return Err(Error::usage(format!(
            "the IREE tools directory {} (from {}) holds no executable iree-compile",
            bin.display(),
            source.describe()
        ))
        .hint(source.fix_hint()));
    }
    let output = version_output(&compile).map_err(|e| {
        e.context(format!(
            "cannot use the IREE tools from {}",
            source.describe()
        ))
    })?;
    let identity = identity(&output, &user_dir_content(&compile)?);
    Ok(Toolchain {
        bin,
        source,
        packages: Vec::new(),
        compiler_version: compiler_version_line(&output),
        identity,
        identity_version: IDENTITY_VERSION,
    })
}

/// `libIREECompiler.so` next to `bin`, next to the real iree-compile (a pip
/// layout), or in `../lib` of either (a build tree).
pub(crate) fn compiler_lib_near(compile: &Path) -> Option<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(d) = compile.parent() {
        dirs.push(d.to_path_buf());
    }
    if let Some(d) = std::fs::canonicalize(compile)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
    {
        dirs.push(d);
    }
    let with_lib: Vec<PathBuf> = dirs.iter().map(|d| d.join("../lib")).collect();
    dirs.extend(with_lib);
    dirs.into_iter()
        .map(|d| d.join(COMPILER_LIB))
        .find(|p| p.is_file())
}

/// The installed toolchain in `root`, if complete.
fn installed_in(root: &Path, version: &str) -> Result<Option<Toolchain>, Error> {
    validate_version(version)?;
    installed_at(&root.join(dir_name(version)))
}

/// The toolchain in `dir`, if complete.
fn installed_at(dir: &Path) -> Result<Option<Toolchain>, Error> {
    let dir = dir.to_path_buf();
    let manifest = dir.join(MANIFEST);
    let text = match std::fs::read_to_string(&manifest) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(
                Error::failed(format!("cannot read {}", manifest.display())).cause(e.to_string())
            )
        }
    };
    let bin = dir.join("bin");
    if !is_executable(&bin.join("iree-compile")) {
        tracing::warn!(dir = %dir.display(), "toolchain has a manifest but no bin/iree-compile");
        return Ok(None);
    }
    match serde_json::from_str::<Toolchain>(&text) {
        Ok(mut toolchain) => {
            // The directory may have moved with $LOCKSTEP_TOOLCHAINS.
            toolchain.bin = bin;
            toolchain.source = Source::Provisioned;
            if toolchain.identity_version != IDENTITY_VERSION {
                refresh_identity(&dir, &manifest, &mut toolchain)?;
            }
            // Its last use, for `cache prune` (the toolchains area); best
            // effort: a read-only toolchain still works.
            if let Ok(file) = std::fs::File::options().append(true).open(&manifest) {
                let _ = file.set_modified(std::time::SystemTime::now());
            }
            Ok(Some(toolchain))
        }
        Err(e) => {
            tracing::warn!(manifest = %manifest.display(), error = %e, "unreadable toolchain manifest");
            Ok(None)
        }
    }
}

/// [`install`] into `root`.
fn install_in(
    root: &Path,
    version: &str,
    sink: &dyn Sink,
    first_use: bool,
) -> Result<Toolchain, Error> {
    validate_version(version)?;
    if let Some(toolchain) = installed_in(root, version)? {
        return Ok(toolchain);
    }
    paths::create_toolchains_dir(root)?;
    let _lock = lock(root, version, sink)?;
    // Another process may have finished while we waited.
    if let Some(toolchain) = installed_in(root, version)? {
        return Ok(toolchain);
    }
    let final_dir = root.join(dir_name(version));
    sink.note(format!(
        "installing IREE {version} into {}{}",
        final_dir.display(),
        if first_use { " (first use)" } else { "" }
    ));
    remove_leftovers(root, version, &final_dir)?;
    let staged = StagedDir::beside(&final_dir)?;
    let toolchain = build(staged.path(), &final_dir, version, sink)?;
    move_into_place(staged, &final_dir)?;
    Ok(toolchain)
}

/// The toolchain built in `staged` moves to `final_dir`; a toolchain that
/// fails to build is removed with its staging directory (dropped), so the
/// final name only ever holds a complete install.
fn move_into_place(staged: StagedDir, final_dir: &Path) -> Result<(), Error> {
    staged.install().map_err(|e| {
        e.context(format!(
            "cannot move the new toolchain into {}",
            final_dir.display()
        ))
    })
}

/// Takes the per-version install lock, saying so when someone else holds it.
fn lock(root: &Path, version: &str, sink: &dyn Sink) -> Result<FileLock, Error> {
    FileLock::wait(
        &root.join(format!(".iree-{version}.lock")),
        &format!("installing IREE {version}"),
        Some(sink),
    )
}

/// Under the lock: staging directories of killed installs (whatever their
/// PID: no other install of this version runs while we hold the lock), and
/// a final directory without a valid manifest, are garbage.
fn remove_leftovers(root: &Path, version: &str, final_dir: &Path) -> Result<(), Error> {
    let prefixes = [
        format!(".iree-{version}.tmp-"),
        format!(".iree-{version}.old-"),
    ];
    let entries = std::fs::read_dir(root).map_err(|e| {
        Error::failed(format!("cannot list {}", root.display())).cause(e.to_string())
    })?;
    let mut garbage: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            prefixes.iter().any(|p| name.starts_with(p))
        })
        .map(|e| e.path())
        .collect();
    if final_dir.symlink_metadata().is_ok() {
        garbage.push(final_dir.to_path_buf());
    }
    for path in garbage {
        tracing::info!(path = %path.display(), "removing an incomplete toolchain");
        let removed = if path.is_dir() && !path.is_symlink() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.map_err(|e| {
            Error::failed(format!(
                "cannot remove the incomplete toolchain {}",
                path.display()
            ))
            .cause(e.to_string())
            .hint("remove it by hand and run `lockstep toolchain install` again")
        })?;
    }
    Ok(())
}

/// Builds a complete toolchain in `tmp` that will be moved to `final_dir`.
fn build(tmp: &Path, final_dir: &Path, version: &str, sink: &dyn Sink) -> Result<Toolchain, Error> {
    let root = tmp.parent().unwrap_or(tmp);
    let uv = find_uv(root, tmp, sink)?;
    // Built in a staging directory and moved into place: the layer's venvs
    // are relocatable, so the venv's own scripts keep working after the move.
    let venv = uv
        .create_venv(&tmp.join("venv"), &NewVenv::default())
        .map_err(|e| {
            e.context(format!("cannot create a Python venv for IREE {version}"))
                .hint("check that uv can find or download a Python interpreter (`uv python list`)")
        })?;

    sink.note(format!(
        "downloading {} {version} from PyPI (about 500 MB unless uv's cache has them)",
        PACKAGES.join(" and ")
    ));
    let requirements: Vec<String> = PACKAGES.iter().map(|p| format!("{p}=={version}")).collect();
    if let Err(err) = uv.install(&venv, Install::Pypi(&requirements)) {
        let text = err.causes.join("\n").to_lowercase();
        if text.contains("no version of") || text.contains("no versions of") {
            // uv names the first package it could not find.
            let missing = PACKAGES
                .iter()
                .filter_map(|p| text.find(&format!("of {p}")).map(|at| (at, *p)))
                .min()
                .map_or(PACKAGES[0], |(_, p)| p);
            let mut e = Error::usage(format!(
                "no version {version} of {missing} on the package index"
            ));
            e.causes = err.causes;
            return Err(e.hint("pick a released version from https://pypi.org/project/iree-base-compiler/#history (the default is 3.13.0)"));
        }
        return Err(err
            .context(format!("cannot install IREE {version} from PyPI"))
            .hint("check network access to PyPI, then run `lockstep toolchain install` again"));
    }
    let venv = venv.dir().to_path_buf();

    let site = site_packages(&venv)?;
    let packages = package_versions(&site)?;
    for name in PACKAGES {
        if !packages.iter().any(|(n, _)| n == name) {
            return Err(
                Error::failed(format!("uv installed no {name} into {}", venv.display()))
                    .hint("run `lockstep toolchain install` again; report a bug if it persists"),
            );
        }
    }

    let bin = tmp.join("bin");
    fs_err::create_dir_all(&bin)?;
    link_native_tools(tmp, &site, &bin)?;
    for required in ["iree-compile", "iree-run-module"] {
        if !is_executable(&bin.join(required)) {
            return Err(Error::failed(format!(
                "the IREE {version} packages hold no native {required}"
            ))
            .cause(format!("looked in {}", NATIVE_DIRS.join(" and ")))
            .hint("this IREE version is packaged differently; pick another with --iree VERSION"));
        }
    }

    let output = version_output(&bin.join("iree-compile"))?;
    let identity = identity(&output, &wheel_content(&site)?);
    let toolchain = Toolchain {
        bin: final_dir.join("bin"),
        source: Source::Provisioned,
        packages,
        compiler_version: compiler_version_line(&output),
        identity,
        identity_version: IDENTITY_VERSION,
    };
    write_manifest(&tmp.join(MANIFEST), &toolchain)?;
    Ok(toolchain)
}

/// Links every native `iree-*` executable of the packages into `bin` with
/// relative symlinks (`../venv/...`), valid wherever the directory moves.
fn link_native_tools(top: &Path, site: &Path, bin: &Path) -> Result<(), Error> {
    for rel in NATIVE_DIRS {
        let dir = site.join(rel);
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut names: Vec<OsString> = entries
            .filter_map(|e| e.ok())
            .filter(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.starts_with("iree-")
                    && !name.contains('.')
                    && e.file_type().is_ok_and(|t| t.is_file())
                    && is_executable(&e.path())
            })
            .map(|e| e.file_name())
            .collect();
        names.sort();
        for name in names {
            let link = bin.join(&name);
            if link.symlink_metadata().is_ok() {
                continue; // the compiler's copy wins
            }
            let target = dir.join(&name);
            let relative = Path::new("..").join(target.strip_prefix(top).map_err(|_| {
                Error::failed(format!("{} is outside {}", target.display(), top.display()))
            })?);
            symlink(&relative, &link).map_err(|e| {
                Error::failed(format!("cannot link {}", link.display())).cause(e.to_string())
            })?;
        }
    }
    Ok(())
}

/// `venv/lib/python3.X/site-packages` holding `iree/`.
fn site_packages(venv: &Path) -> Result<PathBuf, Error> {
    let lib = venv.join("lib");
    let mut candidates: Vec<PathBuf> = std::fs::read_dir(&lib)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok())
                .map(|e| e.path().join("site-packages"))
                .collect()
        })
        .unwrap_or_default();
    candidates.sort();
    candidates
        .into_iter()
        .find(|p| p.join("iree").is_dir())
        .ok_or_else(|| {
            Error::failed(format!(
                "no site-packages with iree/ under {}",
                lib.display()
            ))
            .hint("run `lockstep toolchain install` again; report a bug if it persists")
        })
}

/// Versions of the IREE packages from the `*.dist-info` directory names.
fn package_versions(site: &Path) -> Result<Vec<(String, String)>, Error> {
    let entries = std::fs::read_dir(site).map_err(|e| {
        Error::failed(format!("cannot list {}", site.display())).cause(e.to_string())
    })?;
    let found: Vec<(String, String)> = entries
        .filter_map(|e| e.ok())
        .filter_map(|e| parse_dist_info(&e.file_name().to_string_lossy()))
        .collect();
    Ok((0..PACKAGES.len())
        .filter_map(|part| {
            found
                .iter()
                .find(|(name, _)| iree_part(name) == Some(part))
                .cloned()
        })
        .collect())
}

/// `iree_base_compiler-3.13.0.dist-info` -> `("iree-base-compiler", "3.13.0")`.
fn parse_dist_info(name: &str) -> Option<(String, String)> {
    let stem = name.strip_suffix(".dist-info")?;
    let (package, version) = stem.split_once('-')?;
    if package.is_empty() || version.is_empty() {
        return None;
    }
    let package = package.to_lowercase().replace(['_', '.'], "-");
    Some((package, version.to_string()))
}

fn write_manifest(path: &Path, toolchain: &Toolchain) -> Result<(), Error> {
    let text = serde_json::to_string_pretty(toolchain)
        .map_err(|e| Error::failed("cannot encode the toolchain manifest").cause(e.to_string()))?;
    lockstep_core::fs::write_atomic(path, format!("{text}\n").as_bytes())
        .map_err(|e| e.context(format!("cannot write {}", path.display())))
}

/// Size and mtime of a file (following symlinks): what the per-process
/// memo of `--version` output is keyed by (never an identity).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    size: u64,
    mtime_ns: u128,
}

pub(crate) fn stamp(path: &Path) -> Option<Stamp> {
    let meta = std::fs::metadata(path).ok()?;
    let mtime_ns = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    Some(Stamp {
        size: meta.len(),
        mtime_ns,
    })
}

/// `iree-compile --version` output, memoized per process by path, size and mtime.
pub(crate) fn version_output(compile: &Path) -> Result<String, Error> {
    static SEEN: Mutex<Option<HashMap<PathBuf, (Stamp, String)>>> = Mutex::new(None);
    let key = std::fs::canonicalize(compile).unwrap_or_else(|_| compile.to_path_buf());
    let current = stamp(&key);
    if let (Some(current), Ok(seen)) = (current, SEEN.lock()) {
        if let Some((s, out)) = seen.as_ref().and_then(|m| m.get(&key)) {
            if *s == current {
                return Ok(out.clone());
            }
        }
    }
    let text = run_version(compile)?;
    if let (Some(current), Ok(mut seen)) = (current, SEEN.lock()) {
        seen.get_or_insert_with(HashMap::new)
            .insert(key, (current, text.clone()));
    }
    Ok(text)
}

/// How long `iree-compile --version` may take.
const VERSION_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs `iree-compile --version`: its stdout, else (nothing there) its stderr.
fn run_version(compile: &Path) -> Result<String, Error> {
    let what = format!("{} --version", compile.display());
    let scratch = tempfile::tempdir()
        .map_err(|e| Error::failed("cannot create a temporary directory").cause(e.to_string()))?;
    let (log, out) = (scratch.path().join("log"), scratch.path().join("stdout"));
    let finished = process::run_with(
        &process::Spec {
            argv: vec![compile.to_string_lossy().into_owned(), "--version".into()],
            cwd: scratch.path().to_path_buf(),
            env: Vec::new(),
            timeout: Some(VERSION_TIMEOUT),
            log: log.clone(),
            header: None,
        },
        &process::Options {
            stdout: Some(out.clone()),
            die_with_parent: true,
            ..process::Options::default()
        },
        |_| {},
    )
    .map_err(|e| e.context(format!("cannot run {what}")))?;
    let stdout = std::fs::read_to_string(&out).unwrap_or_default();
    let stderr = std::fs::read_to_string(&log).unwrap_or_default();
    if finished.exit != Exit::Code(0) {
        let mut err = Error::failed(format!("{what} failed ({})", finished.exit.describe()));
        let tail: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = tail[tail.len().saturating_sub(15)..].join("\n");
        if !tail.is_empty() {
            err = err.cause(tail);
        }
        return Err(err);
    }
    Ok(if stdout.trim().is_empty() {
        stderr
    } else {
        stdout
    })
}

/// The `IREE compiler version ...` line, else the first non-empty line.
pub(crate) fn compiler_version_line(output: &str) -> String {
    let lines = || output.lines().map(str::trim).filter(|l| !l.is_empty());
    lines()
        .find(|l| l.contains("IREE compiler version"))
        .or_else(|| lines().next())
        .unwrap_or_default()
        .to_string()
}

/// The identity: sha256 over the version output and the content lines
/// ([`wheel_content`] or [`binary_content`]).
pub(crate) fn identity(version_output: &str, content: &[String]) -> String {
    Framed::new("lockstep-iree", "identity", IDENTITY_VERSION)
        .part("version-output", version_output)
        .parts("content", content)
        .hex()
}

/// What identifies the IREE packages installed in `site` (a site-packages
/// directory): per package, its name, version and the sha256 of every file
/// its wheel installed, as the dist-info RECORD lists them. Files the
/// installer wrote itself (console scripts outside the package, which carry
/// the venv's Python path, and the dist-info's own records) are left out, so
/// the same wheels installed anywhere give the same lines.
fn wheel_content(site: &Path) -> Result<Vec<String>, Error> {
    let mut lines = Vec::new();
    for entry in dist_infos(site)? {
        let Some((name, version)) = parse_dist_info(&entry.file_name().to_string_lossy()) else {
            continue;
        };
        if !PACKAGES.contains(&name.as_str()) {
            continue;
        }
        let record = entry.path().join("RECORD");
        let text = std::fs::read_to_string(&record).map_err(|e| {
            Error::failed(format!("cannot read {}", record.display()))
                .cause(e.to_string())
                .hint("reinstall the IREE packages (`lockstep toolchain install`, or pip for --iree-bin)")
        })?;
        lines.push(format!("package {name} {version} {}", record_digest(&text)));
    }
    lines.sort();
    if lines.is_empty() {
        return Err(Error::failed(format!(
            "no IREE package records in {}",
            site.display()
        )));
    }
    Ok(lines)
}

fn dist_infos(site: &Path) -> Result<Vec<std::fs::DirEntry>, Error> {
    let entries = std::fs::read_dir(site).map_err(|e| {
        Error::failed(format!("cannot list {}", site.display())).cause(e.to_string())
    })?;
    Ok(entries
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".dist-info"))
        .collect())
}

/// sha256 over the sorted `path,hash` lines of a RECORD that name a file of
/// the package itself (no `..`, not the dist-info) with a hash.
fn record_digest(record: &str) -> String {
    let mut lines: Vec<&str> = record
        .lines()
        .filter(|line| {
            let mut fields = line.split(',');
            let path = fields.next().unwrap_or("");
            let hash = fields.next().unwrap_or("");
            !hash.is_empty()
                && !path.split('/').any(|part| part == "..")
                && !path
                    .split('/')
                    .next()
                    .is_some_and(|top| top.ends_with(".dist-info"))
        })
        .map(|line| {
            line.rsplit_once(',')
                .map_or(line, |(path_hash, _size)| path_hash)
        })
        .collect();
    lines.sort_unstable();
    Framed::new("lockstep-iree", "record", 1)
        .parts("lines", lines)
        .hex()
}

/// The content lines of a user's tools directory: the wheel records when the
/// real iree-compile sits in a pip-installed package, else the binaries'
/// own sha256 ([`binary_content`]).
pub(crate) fn user_dir_content(compile: &Path) -> Result<Vec<String>, Error> {
    let real = std::fs::canonicalize(compile).unwrap_or_else(|_| compile.to_path_buf());
    // `site-packages/iree/compiler/_mlir_libs/iree-compile`.
    let site = real.ancestors().skip(1).take(4).find(|dir| {
        dist_infos(dir).is_ok_and(|infos| {
            infos.iter().any(|e| {
                parse_dist_info(&e.file_name().to_string_lossy())
                    .is_some_and(|(name, _)| iree_part(&name) == Some(0))
            })
        })
    });
    match site {
        Some(site) => wheel_content(site),
        None => binary_content(&real, compiler_lib_near(compile).as_deref()),
    }
}

/// `file NAME sha256 HEX` for iree-compile and libIREECompiler.so (a build
/// tree), hashed once per file version (see [`lockstep_core::hash::sha256_file_memo`]).
fn binary_content(compile: &Path, lib: Option<&Path>) -> Result<Vec<String>, Error> {
    let memo = paths::file_hashes();
    let mut lines = Vec::new();
    for (label, path) in [("iree-compile", Some(compile)), (COMPILER_LIB, lib)] {
        lines.push(match path {
            Some(path) => format!(
                "file {label} sha256 {}",
                lockstep_core::hash::sha256_file_memo(path, &memo)?
            ),
            None => format!("file {label} absent"),
        });
    }
    Ok(lines)
}

/// Recomputes the identity of a toolchain installed by an older lockstep
/// (its manifest's identity was not content-based) and saves it.
fn refresh_identity(dir: &Path, manifest: &Path, toolchain: &mut Toolchain) -> Result<(), Error> {
    let site = site_packages(&dir.join("venv"))?;
    let output = version_output(&toolchain.bin.join("iree-compile"))?;
    toolchain.identity = identity(&output, &wheel_content(&site)?);
    toolchain.identity_version = IDENTITY_VERSION;
    write_manifest(manifest, toolchain)
}

pub(crate) fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_core::events::{Collect, NullSink};

    /// Tests that write or run the fake tool scripts take turns: a script being
    /// written while another thread forks can fail to execute ("Text file busy").
    fn serial() -> std::sync::MutexGuard<'static, ()> {
        static SERIAL: Mutex<()> = Mutex::new(());
        SERIAL.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A directory with an executable `iree-compile` printing `stamp`.
    fn fake_tools(parent: &Path, name: &str, stamp: &str) -> PathBuf {
        let dir = parent.join(name);
        std::fs::create_dir_all(&dir).unwrap();
        for tool in ["iree-compile", "iree-run-module"] {
            let path = dir.join(tool);
            std::fs::write(
                &path,
                format!("#!/bin/sh\necho 'IREE (https://iree.dev):'\necho '  IREE compiler version {stamp} @ fake'\n"),
            )
            .unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        dir
    }

    /// A complete-looking provisioned toolchain in `root` (no network).
    fn fake_install(root: &Path, version: &str) -> PathBuf {
        let dir = root.join(dir_name(version));
        let bin = fake_tools(&dir, "bin", "provisioned");
        let toolchain = Toolchain {
            bin: PathBuf::from("/moved/elsewhere/bin"),
            source: Source::Provisioned,
            packages: PACKAGES
                .iter()
                .map(|p| (p.to_string(), version.to_string()))
                .collect(),
            compiler_version: "IREE compiler version provisioned @ fake".into(),
            identity: "0".repeat(64),
            identity_version: IDENTITY_VERSION,
        };
        write_manifest(&dir.join(MANIFEST), &toolchain).unwrap();
        bin
    }

    fn req<'a>(flag: Option<&'a Path>, config: Option<&'a Path>) -> Request<'a> {
        Request {
            flag,
            config_bin: config,
            version: "3.13.0",
        }
    }

    #[test]
    fn versions_are_validated() {
        for good in [
            "3.13.0",
            "3.13",
            "3",
            "3.13.0rc20261016",
            "3.14.0a1",
            "3.14.0b2",
            "3.13.0.post1",
            "3.14.0.dev20261101",
            "3.14.0rc1.post2.dev3",
        ] {
            assert!(validate_version(good).is_ok(), "{good} should be valid");
        }
        for bad in [
            "",
            "1.2.x",
            "v3.13.0",
            "3.13.0 ",
            "3..13",
            "3.13.",
            ".3",
            "../x",
            "3.13.0rc",
            "3.13.0-1",
            "latest",
            "3.13.0/..",
            "3.13.0.dev",
            "3.13.0c1",
            "3.13.0post1",
        ] {
            let err = validate_version(bad).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad}");
            assert!(err.message.contains(bad), "{}", err.message);
        }
    }

    #[test]
    fn dist_info_names_parse() {
        assert_eq!(
            parse_dist_info("iree_base_compiler-3.13.0.dist-info"),
            Some(("iree-base-compiler".into(), "3.13.0".into()))
        );
        assert_eq!(
            parse_dist_info("iree_base_runtime-3.14.0rc20261101.dist-info"),
            Some(("iree-base-runtime".into(), "3.14.0rc20261101".into()))
        );
        assert_eq!(parse_dist_info("iree"), None);
        assert_eq!(parse_dist_info("numpy.libs"), None);
    }

    #[test]
    fn package_versions_read_dist_info_dirs() {
        let tmp = tempfile::tempdir().unwrap();
        for d in [
            "iree_base_runtime-3.13.0.dist-info",
            "numpy-2.4.6.dist-info",
            "iree_base_compiler-3.13.0.dist-info",
            "iree",
        ] {
            std::fs::create_dir(tmp.path().join(d)).unwrap();
        }
        assert_eq!(
            package_versions(tmp.path()).unwrap(),
            vec![
                ("iree-base-compiler".to_string(), "3.13.0".to_string()),
                ("iree-base-runtime".to_string(), "3.13.0".to_string())
            ]
        );
    }

    #[test]
    fn precedence_flag_env_config() {
        let _serial = serial();
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("toolchains");
        let flag = fake_tools(tmp.path(), "flag", "1.0.0");
        let env = fake_tools(tmp.path(), "env", "2.0.0");
        let config = fake_tools(tmp.path(), "config", "3.0.0");
        let env_os = || Some(env.clone().into_os_string());

        let t = resolve_in(&req(Some(&flag), Some(&config)), env_os(), &root, &NullSink).unwrap();
        assert_eq!((t.source, &t.bin), (Source::Flag, &flag));
        assert_eq!(t.compiler_version, "IREE compiler version 1.0.0 @ fake");
        assert_eq!(t.compiler_stamp(), "1.0.0 @ fake");
        assert!(t.packages.is_empty());

        // The environment beats the configuration.
        let t = resolve_in(&req(None, Some(&config)), env_os(), &root, &NullSink).unwrap();
        assert_eq!((t.source, &t.bin), (Source::Env, &env));
        assert_eq!(t.compiler_version, "IREE compiler version 2.0.0 @ fake");

        // An empty environment variable counts as unset.
        let t = resolve_in(&req(None, Some(&config)), Some("".into()), &root, &NullSink).unwrap();
        assert_eq!((t.source, &t.bin), (Source::Config, &config));
        assert_eq!(t.compiler_version, "IREE compiler version 3.0.0 @ fake");

        // Nothing was provisioned along the way.
        assert!(!root.exists());
    }

    #[test]
    fn missing_dirs_name_their_source() {
        let _serial = serial();
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("toolchains");
        let missing = tmp.path().join("nope");
        let cases = [
            (req(Some(&missing), None), None, "--iree-bin"),
            (
                req(None, None),
                Some(missing.clone().into_os_string()),
                "$LOCKSTEP_IREE_BIN",
            ),
            (req(None, Some(&missing)), None, "[toolchain] iree-bin"),
        ];
        for (request, env, source) in cases {
            let err = resolve_in(&request, env, &root, &NullSink).unwrap_err();
            assert_eq!(err.exit_code(), 2);
            assert!(err.message.contains(source), "{}", err.message);
            assert!(err.message.contains("nope"), "{}", err.message);
            assert!(err.message.contains("does not exist"), "{}", err.message);
        }

        // A directory without iree-compile is as bad as a missing one.
        let empty = tmp.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        let err = resolve_in(&req(Some(&empty), None), None, &root, &NullSink).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(
            err.message.contains("no executable iree-compile"),
            "{}",
            err.message
        );
        assert!(err.message.contains("--iree-bin"), "{}", err.message);
        assert!(err.hint.is_some());
    }

    #[test]
    fn path_is_never_used() {
        let _serial = serial();
        let tmp = tempfile::tempdir().unwrap();
        let on_path = fake_tools(tmp.path(), "on-path", "from-PATH");
        let old = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![on_path.clone()];
        dirs.extend(std::env::split_paths(&old));
        std::env::set_var("PATH", std::env::join_paths(dirs).unwrap());

        // Without a flag, env or config: the provisioned toolchain, not PATH.
        let root = tmp.path().join("toolchains");
        let bin = fake_install(&root, "3.13.0");
        let t = resolve_in(&req(None, None), None, &root, &NullSink).unwrap();
        assert_eq!(t.source, Source::Provisioned);
        assert_eq!(t.bin, bin);
        assert!(!t.compiler_version.contains("from-PATH"));
        assert_eq!(t.tool("iree-compile").unwrap(), bin.join("iree-compile"));

        // A bad pinned version is an error, not a fall back to PATH.
        let bad = Request {
            flag: None,
            config_bin: None,
            version: "1.2.x",
        };
        let err = resolve_in(&bad, None, &root, &NullSink).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        std::env::set_var("PATH", old);
    }

    #[test]
    fn installed_needs_manifest_and_compiler() {
        let _serial = serial();
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        assert!(installed_in(root, "3.13.0").unwrap().is_none());

        // A half-built directory of a killed install is not named like the final one.
        fake_install(&root.join(".iree-3.13.0.tmp-4242"), "3.13.0");
        assert!(installed_in(root, "3.13.0").unwrap().is_none());

        // Tools without a manifest: incomplete.
        let dir = root.join("iree-3.13.0");
        fake_tools(&dir, "bin", "x");
        assert!(installed_in(root, "3.13.0").unwrap().is_none());

        // A manifest without tools: incomplete.
        let bin = fake_install(root, "3.13.0");
        std::fs::remove_file(bin.join("iree-compile")).unwrap();
        assert!(installed_in(root, "3.13.0").unwrap().is_none());

        // Complete: bin follows the directory, whatever the manifest says.
        let bin = fake_install(root, "3.13.0");
        let t = installed_in(root, "3.13.0").unwrap().unwrap();
        assert_eq!(t.bin, bin);
        assert_eq!(t.source, Source::Provisioned);
        assert_eq!(
            t.packages[0],
            ("iree-base-compiler".into(), "3.13.0".into())
        );

        // A corrupt manifest: incomplete (the next install replaces it).
        std::fs::write(root.join("iree-3.13.0").join(MANIFEST), "{").unwrap();
        assert!(installed_in(root, "3.13.0").unwrap().is_none());

        assert_eq!(installed_in(root, "../etc").unwrap_err().exit_code(), 2);
    }

    #[test]
    fn leftovers_are_removed_under_the_lock() {
        let _serial = serial();
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        fake_install(&root.join(".iree-3.13.0.tmp-4242"), "3.13.0");
        // A staging directory of this very process (a PID alive) is garbage
        // under the lock too, and so is a directory moved aside.
        let live = root.join(format!(".iree-3.13.0.tmp-{}-0", std::process::id()));
        fake_install(&live, "3.13.0");
        std::fs::create_dir_all(root.join(".iree-3.13.0.old-4242-0")).unwrap();
        fake_install(&root.join(".iree-3.13.tmp-4242"), "3.13");
        std::fs::create_dir_all(root.join("iree-3.13.0/venv")).unwrap();
        let sink = Collect::default();
        let _lock = lock(root, "3.13.0", &sink).unwrap();
        remove_leftovers(root, "3.13.0", &root.join("iree-3.13.0")).unwrap();
        assert!(!root.join(".iree-3.13.0.tmp-4242").exists());
        assert!(!live.exists() && !root.join(".iree-3.13.0.old-4242-0").exists());
        assert!(!root.join("iree-3.13.0").exists());
        // Another version's build is not ours to remove.
        assert!(root.join(".iree-3.13.tmp-4242").exists());
        assert!(root.join(".iree-3.13.0.lock").exists());
    }

    #[test]
    fn identity_follows_the_compiler_not_its_place() {
        let _serial = serial();
        let tmp = tempfile::tempdir().unwrap();
        let dir = fake_tools(tmp.path(), "tools", "1.0.0");
        let a = resolve_in(&req(Some(&dir), None), None, tmp.path(), &NullSink).unwrap();
        let b = resolve_in(&req(Some(&dir), None), None, tmp.path(), &NullSink).unwrap();
        assert_eq!(a.identity, b.identity);
        assert_eq!(a.identity.len(), 64);

        // The same binaries elsewhere, written later: the same identity.
        let copy = fake_tools(tmp.path(), "elsewhere", "1.0.0");
        let c = resolve_in(&req(Some(&copy), None), None, tmp.path(), &NullSink).unwrap();
        assert_eq!(a.identity, c.identity);

        // A rebuilt compiler (different content and output) is a different identity.
        fake_tools(tmp.path(), "tools", "1.0.0-rebuilt");
        let d = resolve_in(&req(Some(&dir), None), None, tmp.path(), &NullSink).unwrap();
        assert_ne!(a.identity, d.identity);
        assert_eq!(
            d.compiler_version,
            "IREE compiler version 1.0.0-rebuilt @ fake"
        );
    }

    /// A site-packages with the two IREE dist-infos, their RECORDs naming
    /// `compiler_hash` for the compiler's library and a console script
    /// whose hash depends on `venv`.
    fn fake_site(root: &Path, venv: &str, compiler_hash: &str) -> PathBuf {
        let site = root.join(venv).join("lib/python3.11/site-packages");
        for (dist, lib) in [
            (
                "iree_base_compiler-3.13.0",
                "iree/compiler/_mlir_libs/libIREECompiler.so",
            ),
            (
                "iree_base_runtime-3.13.0",
                "iree/_runtime_libs/iree-run-module",
            ),
        ] {
            let info = site.join(format!("{dist}.dist-info"));
            std::fs::create_dir_all(&info).unwrap();
            std::fs::write(
                info.join("RECORD"),
                format!(
                    "../../../bin/iree-compile,sha256={venv},394\n\
                     {lib},sha256={compiler_hash},1000\n\
                     {dist}.dist-info/INSTALLER,sha256={venv},2\n\
                     {dist}.dist-info/RECORD,,\n"
                ),
            )
            .unwrap();
        }
        std::fs::create_dir_all(site.join("numpy-2.0.0.dist-info")).unwrap();
        site
    }

    #[test]
    fn wheel_identity_is_the_same_in_any_venv() {
        let tmp = tempfile::tempdir().unwrap();
        let a = wheel_content(&fake_site(tmp.path(), "a", "AAA")).unwrap();
        let b = wheel_content(&fake_site(tmp.path(), "b", "AAA")).unwrap();
        assert_eq!(a, b, "installer files and scripts do not count");
        assert_eq!(a.len(), 2, "{a:?}");
        assert!(
            a[0].starts_with("package iree-base-compiler 3.13.0 "),
            "{a:?}"
        );
        let c = wheel_content(&fake_site(tmp.path(), "c", "CCC")).unwrap();
        assert_ne!(a, c, "another wheel is another identity");
        assert_ne!(identity("out", &a), identity("out", &c));
        assert!(wheel_content(tmp.path()).is_err());
    }

    #[test]
    fn missing_tool_names_tool_and_dir() {
        let _serial = serial();
        let tmp = tempfile::tempdir().unwrap();
        let dir = fake_tools(tmp.path(), "tools", "1.0.0");
        let t = resolve_in(&req(Some(&dir), None), None, tmp.path(), &NullSink).unwrap();
        assert_eq!(
            t.tool("iree-run-module").unwrap(),
            dir.join("iree-run-module")
        );
        let err = t.tool("iree-benchmark-module").unwrap_err();
        assert!(
            err.message.contains("iree-benchmark-module"),
            "{}",
            err.message
        );
        assert!(
            err.message.contains(&dir.display().to_string()),
            "{}",
            err.message
        );
        assert!(err.message.contains("--iree-bin"), "{}", err.message);
    }

    #[test]
    fn version_line_and_tail() {
        let out = "IREE (https://iree.dev):\n  IREE compiler version 3.13.0rc20261016 @ 89ece87b\n  LLVM version 24.0.0git\n";
        assert_eq!(
            compiler_version_line(out),
            "IREE compiler version 3.13.0rc20261016 @ 89ece87b"
        );
        assert_eq!(compiler_version_line("custom 1\n"), "custom 1");
        assert_eq!(compiler_version_line(""), "");
    }
}
