//! `lockstep pkg ...`: dispatch and printing (the engine is lockstep-pkg).

use std::path::{Path, PathBuf};

use lockstep_cache::Area;
use lockstep_core::config::Loaded;
use lockstep_core::Error;
use lockstep_pkg::config::{PkgConfig, DEFAULT_VARIANT};
use lockstep_python::venv::{self, From};
use lockstep_python::{pylock, uv};
use lockstep_report::Reporters;

use crate::cli;

pub fn run(cmd: cli::Pkg, loaded: &Loaded, cwd: &Path, rep: &Reporters) -> Result<i32, Error> {
    match cmd {
        cli::Pkg::Build(args) => build(args, loaded, cwd, rep),
        cli::Pkg::Venv(args) => make_venv(args, rep),
        cli::Pkg::Manifest { dir } => write_manifest(&cwd.join(dir), rep),
        // Dispatched by main to pkg_fetch, which builds on this module.
        cli::Pkg::Fetch(_) | cli::Pkg::Bisect(_) => Err(Error::failed(
            "internal: pkg fetch and bisect are dispatched by main",
        )),
    }
}

/// uv, found or installed the way toolchains find it.
pub fn find_uv(rep: &Reporters) -> Result<uv::Uv, Error> {
    let root = std::path::absolute(lockstep_core::paths::toolchains())?;
    fs_err::create_dir_all(&root)?;
    uv::find_uv(&root, &root, rep)
}

/// The wheelhouse: `--out`, else `[pkg] out` (relative to lockstep.toml).
pub fn wheelhouse(flag: Option<PathBuf>, loaded: &Loaded, cwd: &Path) -> Result<PathBuf, Error> {
    match flag {
        Some(dir) => Ok(cwd.join(dir)),
        None => Ok(loaded.root.join(loaded.section::<PkgConfig>()?.out)),
    }
}

fn build(
    args: cli::PkgBuildArgs,
    loaded: &Loaded,
    cwd: &Path,
    rep: &Reporters,
) -> Result<i32, Error> {
    let jobs = match args.jobs {
        Some(_) => lockstep_core::pool::jobs(args.jobs, "-j")?,
        None => lockstep_core::pool::jobs(loaded.section::<PkgConfig>()?.jobs, "[pkg] jobs")?,
    };
    let uv = find_uv(rep)?;
    let pkg: PkgConfig = loaded.section()?;
    let request = lockstep_pkg::BuildRequest {
        pythons: args.pythons,
        variants: args.variants,
        out: wheelhouse(args.out, loaded, cwd)?,
        version: args.version,
        jobs,
        rev: args.rev,
        ..build_request(&pkg, loaded, &uv)?
    };
    let report = lockstep_pkg::build(&request, rep)?;
    let out = rep.out();
    if args.json {
        out.line(crate::output::json_document(&report)?);
    } else {
        for manifest in &report.manifests {
            out.line(manifest.display());
        }
    }
    Ok(0)
}

/// A build of HEAD's whole matrix into `[pkg] out` with every core, the
/// wheel cache on: what each command then narrows.
pub fn build_request<'a>(
    pkg: &'a PkgConfig,
    loaded: &'a Loaded,
    uv: &'a uv::Uv,
) -> Result<lockstep_pkg::BuildRequest<'a>, Error> {
    Ok(lockstep_pkg::BuildRequest {
        root: &loaded.root,
        pkg,
        pythons: Vec::new(),
        variants: Vec::new(),
        out: loaded.root.join(&pkg.out),
        version: None,
        jobs: pkg.jobs.unwrap_or_else(lockstep_core::pool::cpus),
        rev: "HEAD".into(),
        pin_path: pin_path(loaded)?,
        cache: Some(crate::config::cache(loaded)?.bucket(Area::Wheels)),
        uv,
    })
}

/// The submodule whose pin goes into the manifest, when lockstep.toml has
/// an `[integrate]` table.
pub fn pin_path(loaded: &Loaded) -> Result<Option<String>, Error> {
    if !loaded.has_section("integrate") {
        return Ok(None);
    }
    let integrate: lockstep_integrate::config::IntegrateConfig = loaded.section()?;
    Ok(Some(integrate.submodule))
}

fn make_venv(args: cli::PkgVenvArgs, rep: &Reporters) -> Result<i32, Error> {
    let manifest = variant_manifest(&args.manifest, args.variant.as_deref())?;
    let uv = find_uv(rep)?;
    let made = venv::create_exact(
        &uv,
        &args.dir,
        From::Manifest(&manifest),
        args.python.as_deref(),
        rep,
    )?;
    let out = rep.out();
    if args.json {
        out.line(crate::output::json_document(&made)?);
    } else {
        let packages: Vec<String> = made
            .packages
            .iter()
            .map(|(n, v)| format!("{n}=={v}"))
            .collect();
        out.line(format!(
            "{} ({}): {}",
            made.dir.display(),
            made.python,
            packages.join(" ")
        ));
    }
    Ok(0)
}

/// `pkg manifest DIR`: DIR/pylock.toml for the wheels in DIR, paths relative.
fn write_manifest(dir: &Path, rep: &Reporters) -> Result<i32, Error> {
    let mut lock = pylock::from_dir(dir)?;
    for package in &mut lock.packages {
        for wheel in &mut package.wheels {
            wheel.path = wheel.name.clone();
        }
    }
    let path = dir.join(pylock::FILE);
    lockstep_core::fs::write_atomic(&path, lock.to_toml()?.as_bytes())?;
    rep.out().line(path.display());
    Ok(0)
}

/// `--variant NAME` picks `pylock.NAME.toml` beside the given manifest.
pub fn variant_manifest(manifest: &Path, variant: Option<&str>) -> Result<PathBuf, Error> {
    let Some(variant) = variant.filter(|v| *v != DEFAULT_VARIANT) else {
        return Ok(manifest.to_path_buf());
    };
    if !variant
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
        || variant.is_empty()
    {
        return Err(Error::usage(format!(
            "--variant `{}` is not a variant name",
            lockstep_core::error::printable(variant)
        )));
    }
    let dir = if manifest.is_dir() {
        manifest
    } else {
        manifest.parent().unwrap_or(Path::new("."))
    };
    let path = dir.join(pylock::file_name(variant));
    if !path.is_file() {
        return Err(Error::usage(format!(
            "no manifest for variant {variant}: {} does not exist",
            path.display()
        ))
        .hint(format!(
            "build it with `lockstep pkg build --variant {variant}`"
        )));
    }
    Ok(path)
}

/// The package part of `lockstep demo`: the fixture packages built with
/// `pkg build` (2 variants, in parallel), installed with `pkg venv` by
/// manifest, and imported from that venv.
pub fn demo(rep: &Reporters) -> Result<i32, Error> {
    let out = rep.out();
    let dir = tempfile::tempdir()?;
    let project = dir.path().join("packages");
    lockstep_sandbox::packages::create(&project, "1.0.0", "")?;
    let loaded = crate::config::load(None, &project)?;
    let pkg: PkgConfig = loaded.section()?;
    out.line("\n== lockstep pkg build --version 1.0.0rc1 -j 2");
    let uv = find_uv(rep)?;
    let request = lockstep_pkg::BuildRequest {
        out: project.join("wheelhouse"),
        version: Some("1.0.0rc1".into()),
        jobs: 2,
        pin_path: None,
        ..build_request(&pkg, &loaded, &uv)?
    };
    let report = lockstep_pkg::build(&request, rep)?;
    for wheel in &report.wheels {
        out.line(format!(
            "   {} ({}): {}",
            wheel.package,
            wheel.variant,
            wheel
                .file
                .file_name()
                .map(|n| n.to_string_lossy())
                .unwrap_or_default()
        ));
    }
    let mut code = 0;
    for variant in ["release", "asserts"] {
        let manifest = project.join("wheelhouse").join(pylock::file_name(variant));
        let venv_dir = project.join(format!("venv-{variant}"));
        out.line(format!(
            "\n== lockstep pkg venv venv-{variant} --manifest wheelhouse/{}",
            pylock::file_name(variant)
        ));
        let made = venv::create_exact(&uv, &venv_dir, From::Manifest(&manifest), None, rep)?;
        let probe = uv.venv(&venv_dir).run(
            &[
                "python".into(),
                "-c".into(),
                "import demo_cext; print('demo_cext.asserts() =', demo_cext.asserts())".into(),
            ],
            &venv::RunIn {
                what: "the import probe",
                cwd: &project,
                timeout: std::time::Duration::from_secs(120),
                log: None,
            },
        )?;
        let text = probe.output().trim().to_string();
        let want = format!(
            "demo_cext.asserts() = {}",
            if variant == "asserts" {
                "True"
            } else {
                "False"
            }
        );
        let packages: Vec<String> = made
            .packages
            .iter()
            .map(|(n, v)| format!("{n}=={v}"))
            .collect();
        out.line(format!("   installed {}", packages.join(" ")));
        out.line(format!(
            "   import: {text} {}",
            if text == want {
                "(as built)"
            } else {
                "(WRONG)"
            }
        ));
        if text != want {
            code = 1;
        }
    }
    Ok(code)
}
