//! The plan: everything the workflows are generated from, resolved from
//! lockstep.toml in one place and validated before anything is written.
//!
//! Every value that reaches YAML is checked here (names that become job ids
//! and artifact names, runner labels, branches, shard counts, timeouts), so
//! the generator can print them without second-guessing and a bad config is
//! one clear error naming its key.

use std::path::{Component, Path, PathBuf};

use lockstep_pkg::config::{PkgConfig, DEFAULT_VARIANT};
use lockstep_suite::config::TestConfig;

use crate::config::{CiConfig, CiLockstep, RunsOn};
use lockstep_core::Error;

/// GitHub runs at most 256 jobs of one matrix.
pub const MAX_SHARDS: u32 = 256;
pub use crate::checks::MAX_TIMEOUT_MINUTES;
use crate::checks::{check_name, check_text, inside, relative_slash, timeout};

/// How the runners get lockstep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockstepInstall {
    /// `cargo install --locked --git URL --rev REV lockstep`, cached by revision.
    Git { url: String, rev: String },
    /// `cargo install --locked --path PATH` in the checkout (relative to the
    /// repository's top), cached by the hash of the Rust sources.
    Path { path: String },
    /// `lockstep-cli==VERSION` from its index, every wheel pinned by hash
    /// (`--require-hashes`), into a venv of its own.
    Release(crate::released::Released),
}

/// One test target's jobs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetJob {
    pub name: String,
    /// One label, or every label of a self-hosted runner.
    pub runs_on: Vec<String>,
    pub shards: u32,
}

/// What the workflows are generated from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    /// lockstep.toml, relative to the repository's top (for the header).
    pub config: String,
    /// lockstep.toml's directory relative to the top (`""` at the top): the
    /// jobs' working directory.
    pub workdir: String,
    /// Where the workflow goes.
    pub out: PathBuf,
    /// Where the linters' configuration goes (`actionlint.yaml`,
    /// `zizmor.yml`): `out`'s parent, when that is inside the repository;
    /// `None` when `--out` names a directory whose parent is outside it
    /// (the files are then not written).
    pub lint_dir: Option<PathBuf>,
    pub branches: Vec<String>,
    pub pythons: Vec<String>,
    /// The default variant first, then the others by name.
    pub variants: Vec<String>,
    /// The variants a release publishes: the default, and every other whose
    /// `name-suffix` gives its distributions names of their own (one index
    /// can hold them side by side).
    pub published_variants: Vec<String>,
    /// lockstep.toml has `[[pkg.package]]`s: the workflow builds them, and
    /// the tests use the IREE toolchain of the built wheels. `false`: tests
    /// only, with the toolchain from PyPI (`[toolchain] iree`).
    pub builds: bool,
    pub build_runs_on: Vec<String>,
    pub test_python: String,
    /// The Pythons the test jobs run under (`[ci] test-pythons`): every
    /// `[pkg] python` when the workflow builds, else the first.
    pub test_pythons: Vec<String>,
    pub test_variant: String,
    /// Empty when lockstep.toml names no tests (no `[test] paths`, no suite
    /// configs, no `suites/` beside it): the workflow then only builds.
    pub targets: Vec<TargetJob>,
    pub lockstep: LockstepInstall,
    /// `[test] suite-configs` (relative to the working directory): the
    /// xfail lists `--update-xfails` rewrites, uploaded when tests fail.
    pub xfail_configs: Vec<String>,
    pub build_timeout_minutes: u32,
    pub test_timeout_minutes: u32,
    /// The manylinux container image the build job runs in (`None` for
    /// `[pkg] manylinux = "off"`).
    pub build_image: Option<String>,
    /// Native builds use a compiler cache (`[pkg] compiler-cache`), whose
    /// directory the build job keeps in the GitHub Actions cache.
    pub compiler_cache: bool,
    /// The build checks out submodules (`[pkg] submodules`, and the
    /// repository has a `.gitmodules`): `pkg build` stages them.
    pub build_submodules: bool,
    /// The `uses:` of every action (by SHA unless `[ci] pin-actions = false`).
    pub actions: crate::actions::Pins,
    /// `lockstep-release.yml`, when `[ci.release]` is configured.
    pub release: Option<crate::stages::ReleaseStage>,
    /// `lockstep-integrate.yml`, when `[ci.integrate] schedule` is set.
    pub integrate: Option<crate::stages::IntegrateStage>,
    /// lockstep.toml has `[[test.pytest]]` suites: the test jobs run them
    /// against the built wheels (`--wheels`), in the first target's jobs.
    pub pytest: bool,
    /// Its only tests are `[[test.pytest]]` suites: the test jobs install
    /// no IREE toolchain.
    pub pytest_only: bool,
    /// The files naming what tests fetch by URL (`*.suite.toml`,
    /// torch_ops' `run_module_io.json` under the test paths; relative to
    /// the repository's top): the downloads area's cache key hashes them.
    pub suite_globs: Vec<String>,
}

/// The manylinux images a build job can run in, pinned by digest (an
/// image tag can move under a workflow; zizmor refuses unpinned images).
/// The manylinux_2_28 digest is the one IREE's CPU builder image is built
/// from. GitHub's actions run on Node 24 inside the job's container, which
/// needs glibc 2.28, so manylinux2014 (glibc 2.17) cannot host them.
pub const MANYLINUX_IMAGES: &[((u32, u32), &str)] = &[(
    (2, 28),
    "quay.io/pypa/manylinux_2_28_x86_64@sha256:634656edbdeb07f955667e645762ad218eefe25f0d185fef913221855d610456",
)];

/// The build job's image for `[pkg] manylinux`: unset takes manylinux_2_28
/// (what IREE's release builds use), `"off"` none.
fn build_image(pkg: &PkgConfig) -> Result<Option<String>, Error> {
    let policy = lockstep_pkg::repair::Policy::parse(pkg.manylinux.as_deref())?;
    let wanted = match policy {
        lockstep_pkg::repair::Policy::Off => return Ok(None),
        lockstep_pkg::repair::Policy::Lowest => (2, 28),
        lockstep_pkg::repair::Policy::Exactly(a, b) => (a, b),
    };
    match MANYLINUX_IMAGES.iter().find(|(v, _)| *v == wanted) {
        Some((_, image)) => Ok(Some(image.to_string())),
        None => Err(Error::usage(format!(
            "[pkg] manylinux = \"{}_{}\" has no build image lockstep ci generate knows",
            wanted.0, wanted.1
        ))
        .cause("the build job runs in a manylinux image pinned by digest whose glibc GitHub's actions (Node 24) run on: lockstep knows manylinux_2_28")
        .hint("use \"2_28\" (or leave it out), or \"off\" to build on the runner without repair")),
    }
}

/// What the plan is made from: the tables of lockstep.toml it reads, where
/// the file is, and what the command line adds.
pub struct PlanInputs<'a> {
    pub ci: &'a CiConfig,
    pub test: &'a TestConfig,
    pub pkg: &'a PkgConfig,
    /// The directory of lockstep.toml.
    pub root: &'a Path,
    /// The configuration file, when there is one.
    pub config_path: Option<&'a Path>,
    /// `--out`, resolved (absolute): any directory the user names. Default
    /// `[ci] out` under the repository's top, which must stay inside it.
    pub out: Option<PathBuf>,
    /// The git URL and commit this binary was built from, when known.
    pub built_from: Option<(String, String)>,
    /// This binary's own release with its wheels' hashes, when `[ci]
    /// lockstep` is unset and the index has it (looked up by the caller:
    /// [`crate::released::lookup`]); the default install.
    pub released: Option<crate::released::Released>,
    /// What `[release]` says, when lockstep.toml has it.
    pub release: Option<crate::stages::ReleaseFacts>,
    /// What `[integrate]` says, when lockstep.toml has it.
    pub integrate: Option<crate::stages::IntegrateFacts>,
}

/// Resolves and validates the plan.
pub fn plan(inputs: &PlanInputs) -> Result<Plan, Error> {
    let (ci, pkg, test) = (inputs.ci, inputs.pkg, inputs.test);
    // Canonical, so `--config ../lockstep.toml` and a symlinked checkout
    // give the same bytes as running in place.
    let root = std::fs::canonicalize(inputs.root).or_else(|_| std::path::absolute(inputs.root))?;
    let top = repository_top(&root);
    let workdir = relative_slash(&root, &top);
    check_path_text(
        "the directory of lockstep.toml (relative to the repository)",
        &workdir,
    )?;
    let config_name = inputs
        .config_path
        .and_then(|p| p.file_name())
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "lockstep.toml".into());
    check_path_text("the configuration file's name", &config_name)?;

    // A project may only test (the IREE toolchain from PyPI), only build
    // packages, or both.
    let builds = !pkg.package.is_empty();
    if pkg.python.is_empty() {
        return Err(Error::usage("[pkg] python is empty")
            .hint("list the interpreters to build for, e.g. [\"3.11\"]"));
    }
    for python in &pkg.python {
        check_name("[pkg] python", python, |c| {
            c.is_ascii_alphanumeric() || c == '.'
        })?;
    }
    let mut pythons: Vec<String> = Vec::new();
    for python in &pkg.python {
        if !pythons.contains(python) {
            pythons.push(python.clone());
        }
    }
    let variants = if builds { variants(pkg)? } else { Vec::new() };
    let cells = pythons.len() * variants.len();
    if cells > MAX_SHARDS as usize {
        return Err(Error::usage(format!(
            "[pkg] python and the variants make {cells} build jobs ({} x {})",
            pythons.len(),
            variants.len()
        ))
        .cause(format!("GitHub runs at most {MAX_SHARDS} jobs of a matrix"))
        .hint("build fewer Python versions or variants in CI"));
    }
    let test_variant = ci
        .test_variant
        .clone()
        .unwrap_or_else(|| DEFAULT_VARIANT.into());
    if builds && !variants.contains(&test_variant) {
        return Err(Error::usage(format!(
            "[ci] test-variant `{test_variant}` is not a variant of any package"
        ))
        .cause(format!("the variants: {}", variants.join(", ")))
        .hint("name one of them, or add it to a [[pkg.package]] variants list"));
    }
    let branches = ci.branches.clone();
    for branch in &branches {
        check_text("[ci] branches", branch)?;
    }
    let build_runs_on = runs_on("[ci] runs-on", &ci.runs_on)?;
    // `lockstep test` without PATH runs `[test] paths`, the suite configs or
    // `suites/`: with none of them a test job could only fail.
    let iree_tests =
        !test.paths.is_empty() || !test.suite_configs.is_empty() || root.join("suites").is_dir();
    let has_tests = iree_tests || !test.pytest.is_empty();
    // Checked either way: a bad [test.targets] table is an error.
    let mut targets = targets(test, ci, &build_runs_on)?;
    if !has_tests {
        targets.clear();
    }
    if !builds && targets.is_empty() {
        return Err(Error::usage(
            "lockstep ci generate has nothing to run: lockstep.toml has no [[pkg.package]] and names no tests",
        )
        .cause("tests are `[test] paths`, `[test] suite-configs`, a `suites/` directory beside lockstep.toml or `[[test.pytest]]` suites")
        .hint("add tests (docs/test.md) or a [[pkg.package]] (docs/pkg.md); `lockstep init` writes both from what it finds in the repository; nothing was written"));
    }
    if !builds && !test.pytest.is_empty() {
        // A CI job has no project venv: the suite would fail with "no venv".
        return Err(Error::usage(
            "[[test.pytest]] suites run against the wheels the build job makes, and lockstep.toml has no [[pkg.package]]",
        )
        .cause("a CI test job has no project venv (.venv) to run pytest in")
        .hint("add the packages the tests import as [[pkg.package]] (docs/pkg.md; `lockstep init` proposes them), or run the pytest suites outside the generated workflow; nothing was written"));
    }
    if !builds && ci.release.is_some() {
        return Err(Error::usage(
            "[ci.release] publishes packages, and lockstep.toml has no [[pkg.package]]",
        )
        .hint("add the packages to release (docs/pkg.md), or remove [ci.release]; nothing was written"));
    }
    let test_pythons: Vec<String> = match (builds, ci.test_pythons) {
        (true, crate::config::TestPythons::All) => pythons.clone(),
        _ => vec![pkg.python[0].clone()],
    };
    for target in &targets {
        let jobs = target.shards as usize * test_pythons.len();
        if jobs > MAX_SHARDS as usize {
            return Err(Error::usage(format!(
                "test target `{}` makes {jobs} jobs ({} shards x {} Pythons)",
                target.name,
                target.shards,
                test_pythons.len()
            ))
            .cause(format!("GitHub runs at most {MAX_SHARDS} jobs of a matrix"))
            .hint("fewer shards, or [ci] test-pythons = \"first\""));
        }
    }
    let build_timeout_minutes = timeout("[ci] build-timeout-minutes", ci.build_timeout_minutes)?;
    let test_timeout_minutes = timeout("[ci] test-timeout-minutes", ci.test_timeout_minutes)?;
    let lockstep = lockstep_install(
        ci.lockstep.as_ref(),
        &root,
        &top,
        inputs.released.as_ref(),
        inputs.built_from.as_ref(),
    )?;
    let mut xfail_configs = Vec::new();
    for path in &test.suite_configs {
        xfail_configs.push(inside("[test] suite-configs", path)?);
    }
    let (out, lint_dir) = match &inputs.out {
        // The command line may name any directory; the linters' files go
        // beside it only inside the repository.
        Some(out) => {
            let out = normalise(out);
            let lint_dir = out
                .parent()
                .filter(|parent| within(parent, &top))
                .map(Path::to_path_buf);
            (out, lint_dir)
        }
        // GitHub reads workflows at the repository's top only.
        None => {
            let out = configured_out(&ci.out, &top)?;
            let lint_dir = out.parent().map(Path::to_path_buf);
            (out, lint_dir)
        }
    };
    let suite_globs = suite_globs(test, &root, &workdir)?;
    Ok(Plan {
        config: join_slash(&workdir, &config_name),
        workdir,
        out,
        lint_dir,
        branches,
        pythons,
        published_variants: variants
            .iter()
            .enumerate()
            .filter(|(i, v)| {
                *i == 0
                    || pkg
                        .variants
                        .get(*v)
                        .and_then(|c| c.name_suffix.as_deref())
                        .is_some_and(|suffix| !suffix.is_empty())
            })
            .map(|(_, v)| v.clone())
            .collect(),
        variants,
        builds,
        build_runs_on,
        test_python: pkg.python[0].clone(),
        test_pythons,
        test_variant,
        targets,
        lockstep,
        xfail_configs,
        build_timeout_minutes,
        test_timeout_minutes,
        build_image: build_image(pkg)?,
        compiler_cache: pkg
            .compiler_cache
            .is_none_or(|c| c != lockstep_pkg::config::CompilerCache::None),
        build_submodules: pkg.submodules && top.join(".gitmodules").is_file(),
        actions: crate::actions::Pins::resolve(ci.pin_actions, &ci.pins)?,
        release: crate::stages::release(ci, inputs.release.as_ref())?,
        integrate: crate::stages::integrate(ci, inputs.integrate.as_ref())?,
        pytest: !test.pytest.is_empty(),
        pytest_only: !iree_tests && !test.pytest.is_empty(),
        suite_globs,
    })
}

/// `[ci] out` resolved against the repository's `top`: after normalising
/// (`.` and `..` taken lexically, an absolute path as it is) it must lie
/// strictly below `top`, so that the workflow and the linters' files beside
/// it (in its parent) stay in the repository, and the directories of it that
/// exist must not lead out of it through a symbolic link.
fn configured_out(out: &Path, top: &Path) -> Result<PathBuf, Error> {
    let text = out.to_string_lossy();
    let refuse = |why: String| {
        Error::usage(format!(
            "[ci] out `{}` is not a directory inside the repository",
            text.escape_debug()
        ))
        .cause(why)
        .hint("GitHub reads workflows from the repository: use a relative path inside it such as the default `.github/workflows` (to write elsewhere once, pass --out DIR); nothing was written")
    };
    if out.as_os_str().is_empty() || text.chars().any(char::is_control) {
        return Err(refuse("it is empty or holds control characters".into()));
    }
    let resolved = normalise(&top.join(out));
    if resolved == top || !within(&resolved, top) {
        return Err(refuse(format!(
            "it resolves to {}, and the repository's top is {} (the workflow goes there, the linters' files beside it)",
            resolved.display(),
            top.display()
        )));
    }
    // The part below the top that exists, with its links followed, must
    // still be inside.
    if let Some(real) = resolved
        .ancestors()
        .take_while(|a| *a != top)
        .find(|a| a.symlink_metadata().is_ok())
        .and_then(|a| std::fs::canonicalize(a).ok())
    {
        let real_top = std::fs::canonicalize(top).unwrap_or_else(|_| top.to_path_buf());
        if !within(&real, &real_top) {
            return Err(refuse(format!(
                "{} leads out of the repository through a symbolic link (to {})",
                resolved.display(),
                real.display()
            )));
        }
    }
    // Git's own directory is not the work tree: a workflow written into
    // `.git/hooks` would run as a hook, and GitHub never reads `.git`.
    if resolved
        .strip_prefix(top)
        .ok()
        .and_then(|rel| rel.components().next())
        .is_some_and(|first| first.as_os_str() == ".git")
    {
        return Err(refuse(
            "it is inside `.git`, git's own directory (hooks run from there; GitHub never reads it)"
                .into(),
        ));
    }
    Ok(resolved)
}

/// `path` with `.` and `..` taken lexically (`..` at the root stays there).
fn normalise(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    out.push(component);
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// Whether `path` is `dir` or below it (both normalised).
fn within(path: &Path, dir: &Path) -> bool {
    path.starts_with(dir)
}

/// The nearest directory at or above `dir` holding `.git`; `dir` itself
/// when there is none (the files are then previewed, not committed).
fn repository_top(dir: &Path) -> PathBuf {
    dir.ancestors()
        .find(|d| d.join(".git").symlink_metadata().is_ok())
        .unwrap_or(dir)
        .to_path_buf()
}

/// `dir/name`, or `name` when `dir` is empty.
pub fn join_slash(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// Every variant of any package: the default first, then by name.
fn variants(pkg: &PkgConfig) -> Result<Vec<String>, Error> {
    let mut names: Vec<String> = pkg
        .package
        .iter()
        .flat_map(|p| p.variants.iter().cloned())
        .collect();
    names.sort();
    names.dedup();
    for name in &names {
        check_name("a [[pkg.package]] variant", name, |c| {
            c.is_ascii_alphanumeric() || matches!(c, '-' | '_')
        })?;
    }
    if let Some(i) = names.iter().position(|n| n == DEFAULT_VARIANT) {
        let default = names.remove(i);
        names.insert(0, default);
    }
    Ok(names)
}

/// What the downloads area's key hashes: under each `[test] paths` entry
/// (else `suites/`), its native suite files and torch_ops cases (a suite
/// file itself when the path is one), relative to the repository's top.
fn suite_globs(test: &TestConfig, root: &Path, workdir: &str) -> Result<Vec<String>, Error> {
    let mut paths = vec!["suites".to_string()];
    if !test.paths.is_empty() {
        paths.clear();
        for path in &test.paths {
            let path = inside("[test] paths", path)?;
            // A glob's and an expression's own characters would change
            // what `hashFiles('...')` reads.
            if let Some(c) = path.chars().find(|c| "'\"$`{}[]*?!\\".contains(*c)) {
                return Err(Error::usage(format!(
                    "[test] paths entry `{}` holds `{c}`, which a workflow's hashFiles() pattern cannot carry",
                    path.escape_debug()
                ))
                .hint("rename the directory; nothing was written"));
            }
            check_text("[test] paths", &path)?;
            paths.push(path);
        }
    }
    let mut globs = Vec::new();
    for path in paths {
        let at = join_slash(workdir, &path);
        if root.join(&path).is_file() {
            globs.push(at);
        } else {
            globs.push(format!("{at}/**/*.suite.toml"));
            globs.push(format!("{at}/**/run_module_io.json"));
        }
    }
    Ok(globs)
}

/// The test jobs: every `[test.targets.NAME]` and `[test] default-targets`
/// entry, or the built-in `cpu` when neither names any.
fn targets(
    test: &TestConfig,
    ci: &CiConfig,
    default_runs_on: &[String],
) -> Result<Vec<TargetJob>, Error> {
    let mut names: Vec<String> = test.targets.keys().cloned().collect();
    names.extend(test.default_targets.iter().cloned());
    if names.is_empty() {
        names.push("cpu".into());
    }
    names.sort();
    names.dedup();
    // Job ids are case-insensitive on GitHub: `gpu` and `GPU` would collide.
    let mut seen = std::collections::BTreeSet::new();
    for name in &names {
        if !seen.insert(name.to_ascii_lowercase()) {
            return Err(Error::usage(format!(
                "test targets `{name}` and another differ only in case"
            ))
            .hint("GitHub job ids ignore case: rename one of them"));
        }
    }
    let mut jobs = Vec::new();
    for name in names {
        check_name("a test target", &name, |c| {
            c.is_ascii_alphanumeric() || matches!(c, '-' | '_')
        })?;
        let configured = test.targets.get(&name);
        let runs_on = match configured.and_then(|t| t.runs_on.as_ref()) {
            Some(r) => runs_on(&format!("[test.targets.{name}] runs-on"), r)?,
            None => default_runs_on.to_vec(),
        };
        let shards = match configured.and_then(|t| t.shards) {
            Some(n) => shards(&format!("[test.targets.{name}] shards"), n)?,
            None if configured.is_none() => shards("[ci] shards", ci.shards)?,
            None => 1,
        };
        jobs.push(TargetJob {
            name,
            runs_on,
            shards,
        });
    }
    Ok(jobs)
}

pub(crate) fn runs_on(key: &str, value: &RunsOn) -> Result<Vec<String>, Error> {
    let labels = match value {
        RunsOn::Label(label) => vec![label.clone()],
        RunsOn::Labels(labels) => labels.clone(),
    };
    if labels.is_empty() {
        return Err(Error::usage(format!("{key} is empty"))
            .hint("name a runner label, e.g. \"ubuntu-24.04\""));
    }
    for label in &labels {
        check_text(key, label)?;
    }
    Ok(labels)
}

fn shards(key: &str, n: u32) -> Result<u32, Error> {
    if (1..=MAX_SHARDS).contains(&n) {
        Ok(n)
    } else {
        Err(
            Error::usage(format!("{key} = {n} is out of range")).hint(format!(
                "use 1 to {MAX_SHARDS} (GitHub runs at most {MAX_SHARDS} jobs of a matrix)"
            )),
        )
    }
}

fn lockstep_install(
    configured: Option<&CiLockstep>,
    root: &Path,
    top: &Path,
    released: Option<&crate::released::Released>,
    built_from: Option<&(String, String)>,
) -> Result<LockstepInstall, Error> {
    match configured {
        Some(CiLockstep::Release {
            version,
            sha256,
            index,
        }) => Ok(LockstepInstall::Release(check_release(
            version,
            &sha256.list(),
            index.as_deref(),
        )?)),
        Some(CiLockstep::Git { git, rev }) => {
            check_git_url(git)?;
            check_rev(rev)?;
            Ok(LockstepInstall::Git {
                url: git.clone(),
                rev: rev.clone(),
            })
        }
        Some(CiLockstep::Path { path }) => {
            let rel = inside("[ci] lockstep path", Path::new(path))?;
            let crate_dir = root.join(&rel);
            if !crate_dir.join("Cargo.toml").is_file() {
                return Err(Error::usage(format!("[ci] lockstep path `{path}` holds no Cargo.toml"))
                    .cause(format!("looked in {}", crate_dir.display()))
                    .hint("name lockstep's crate directory (crates/lockstep in lockstep's repository)"));
            }
            Ok(LockstepInstall::Path {
                path: relative_slash(&crate_dir, top),
            })
        }
        None => match (released, built_from) {
            (Some(r), _) => Ok(LockstepInstall::Release(check_release(
                &r.version,
                &r.sha256,
                r.index.as_deref(),
            )?)),
            (None, Some((url, rev))) if check_git_url(url).is_ok() && check_rev(rev).is_ok() => Ok(LockstepInstall::Git {
                url: url.clone(),
                rev: rev.clone(),
            }),
            _ if is_lockstep_repository(top) => Ok(LockstepInstall::Path {
                path: "crates/lockstep".into(),
            }),
            _ => Err(Error::usage("lockstep does not know where CI runners can install it from")
                .cause(format!("[ci] lockstep is unset, this version's release ({} {}) was not found on its index, and this binary was not built from a clean clone of a public repository", crate::released::DISTRIBUTION, env!("CARGO_PKG_VERSION")))
                .hint("set [ci] lockstep in lockstep.toml: { version = \"X\", sha256 = \"HASH\" } (a release of lockstep-cli), { git = URL, rev = COMMIT } (the repository you install lockstep from), or { path = DIR } (lockstep's crate in your repository); docs/ci.md")),
        },
    }
}

/// A release to install: a PEP 440 version in the characters a
/// requirement line allows, 64-hex hashes, an https (or loopback http)
/// index without credentials.
fn check_release(
    version: &str,
    sha256: &[String],
    index: Option<&str>,
) -> Result<crate::released::Released, Error> {
    let version_ok = !version.is_empty()
        && version.len() <= 64
        && version.starts_with(|c: char| c.is_ascii_digit())
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '+' | '!' | '-' | '_'));
    if !version_ok {
        return Err(Error::usage(format!(
            "[ci] lockstep version `{}` is not a version",
            version.escape_debug()
        ))
        .hint("give lockstep-cli's version as released, e.g. \"0.1.0\""));
    }
    let hex = |h: &String| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit());
    if sha256.is_empty() || sha256.len() > 32 || !sha256.iter().all(hex) {
        return Err(Error::usage("[ci] lockstep sha256 must be the 64-hex sha256 of each wheel of the release (1 to 32)")
            .hint("copy them from the release's SHA256SUMS or the index page; `lockstep ci generate` looks them up when [ci] lockstep is unset"));
    }
    let index = match index {
        None => None,
        Some(index) => {
            let https = index.starts_with("https://");
            let loopback = ["http://127.0.0.1", "http://localhost", "http://[::1]"]
                .iter()
                .any(|p| index.starts_with(p));
            let clean = !index.contains('@')
                && index.len() <= 500
                && !index.chars().any(|c| {
                    c.is_control() || c.is_whitespace() || matches!(c, '\'' | '"' | '$' | '`')
                });
            if !(https || loopback) || !clean {
                return Err(Error::usage(format!(
                    "[ci] lockstep index `{}` is not an index URL a runner can use",
                    lockstep_core::error::without_userinfo(index).escape_debug()
                ))
                .hint("an https:// PEP 503 index URL without credentials (e.g. https://pypi.org/simple)"));
            }
            Some(index.trim_end_matches('/').to_string())
        }
    };
    Ok(crate::released::Released {
        version: version.to_string(),
        sha256: sha256.iter().map(|h| h.to_ascii_lowercase()).collect(),
        index,
    })
}

/// lockstep's own repository: its binary crate is `crates/lockstep`.
fn is_lockstep_repository(top: &Path) -> bool {
    std::fs::read_to_string(top.join("crates/lockstep/Cargo.toml"))
        .map(|text| text.lines().any(|l| l.trim() == "name = \"lockstep\""))
        .unwrap_or(false)
}

/// Hosted runners have no SSH key and `cargo install --git` takes URLs, not
/// scp-style paths: only `https://`, and never with credentials in it (the
/// URL is written into the committed workflow).
fn check_git_url(url: &str) -> Result<(), Error> {
    let authority = url
        .strip_prefix("https://")
        .map(|rest| rest.split('/').next().unwrap_or_default());
    let ok = authority.is_some_and(|a| !a.is_empty() && !a.contains('@'))
        && url.len() <= 500
        && !url
            .chars()
            .any(|c| c.is_control() || c.is_whitespace() || matches!(c, '\'' | '"' | '$' | '`'));
    if !ok {
        return Err(Error::usage(format!(
            "[ci] lockstep git `{}` is not a URL a runner can clone",
            lockstep_core::error::without_userinfo(url).escape_debug()
        ))
        .hint("use an https:// URL without credentials (a public repository, or one the runner's token can read)"));
    }
    Ok(())
}

/// A path that goes into YAML (a comment header, `working-directory`,
/// artifact paths): one line, no expressions, no glob characters.
fn check_path_text(what: &str, text: &str) -> Result<(), Error> {
    let bad = text.chars().any(|c| {
        c.is_control()
            || matches!(
                c,
                '*' | '?' | '[' | ']' | '!' | '{' | '}' | '$' | '#' | '\'' | '"' | '\\'
            )
    });
    if bad || text.len() > 200 {
        return Err(Error::usage(format!(
            "{what} `{}` cannot be written into a workflow",
            text.escape_debug()
        ))
        .hint("rename it with letters, digits, `.`, `_`, `-` and `/`"));
    }
    Ok(())
}

fn check_rev(rev: &str) -> Result<(), Error> {
    let ok = !rev.is_empty()
        && rev.len() <= 200
        && !rev.starts_with('-')
        && rev
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/'));
    if !ok {
        return Err(Error::usage(format!(
            "[ci] lockstep rev `{}` is not a git revision",
            rev.escape_debug()
        ))
        .hint("use a commit id (or a tag)"));
    }
    Ok(())
}

/// `[ci] out` as [`plan`] resolves it, for the fuzz runner: the directory
/// the workflow would be written to, or the refusal.
pub fn resolve_configured_out(out: &Path, top: &Path) -> Result<PathBuf, Error> {
    configured_out(out, top)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_outside_the_repository_is_refused_naming_the_key() {
        let top = tempfile::tempdir().unwrap();
        let top = std::fs::canonicalize(top.path()).unwrap();
        for out in [
            "../../escape",
            "..",
            ".",
            "",
            "/tmp/escape",
            "a/../../b",
            ".github/../..",
            "./",
            ".git/hooks",
            ".git",
            "x/../.git/info",
        ] {
            let err = configured_out(Path::new(out), &top).unwrap_err();
            assert_eq!(err.kind, lockstep_core::ErrorKind::Usage, "{out}");
            assert!(err.message.contains("[ci] out"), "{out}: {}", err.message);
        }
        for (out, want) in [
            (".github/workflows", ".github/workflows"),
            ("./ci/../.github/workflows", ".github/workflows"),
            ("a", "a"),
        ] {
            assert_eq!(
                configured_out(Path::new(out), &top).unwrap(),
                top.join(want),
                "{out}"
            );
        }
        // An absolute path inside the repository is taken as it is.
        let inside = top.join("ci/workflows");
        assert_eq!(configured_out(&inside, &top).unwrap(), inside);
    }

    #[test]
    fn out_through_a_link_leading_outside_is_refused() {
        let top = tempfile::tempdir().unwrap();
        let top = std::fs::canonicalize(top.path()).unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), top.join(".github")).unwrap();
        let err = configured_out(Path::new(".github/workflows"), &top).unwrap_err();
        assert!(
            err.causes.iter().any(|c| c.contains("symbolic link")),
            "{err:?}"
        );
        // A link that stays inside is fine.
        std::fs::create_dir(top.join("real")).unwrap();
        std::os::unix::fs::symlink(top.join("real"), top.join("ci")).unwrap();
        configured_out(Path::new("ci/workflows"), &top).unwrap();
    }

    proptest::proptest! {
        /// Whatever `[ci] out` says, the workflow directory and its parent
        /// (where the linters' files go) stay inside the repository.
        #[test]
        fn a_resolved_out_and_its_parent_stay_inside(
            parts in proptest::collection::vec("(\\.\\.|\\.|[a-z]{1,3}|/)", 0..8)
        ) {
            let top = Path::new("/repo/top");
            let out = parts.concat();
            let resolved = configured_out(Path::new(&out), top);
            // A relative path of names (and `.`) always resolves.
            let components: Vec<Component> = Path::new(&out).components().collect();
            let plain = components.iter().any(|c| matches!(c, Component::Normal(_)))
                && components.iter().all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
            proptest::prop_assert!(resolved.is_ok() || !plain, "{out}: {resolved:?}");
            if let Ok(dir) = resolved {
                proptest::prop_assert!(dir.starts_with(top) && dir != top, "{out}: {}", dir.display());
                proptest::prop_assert!(dir.parent().is_some_and(|p| p.starts_with(top)), "{out}");
            }
        }
    }
}
