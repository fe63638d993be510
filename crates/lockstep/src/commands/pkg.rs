//! `lockstep pkg ...`: flags into lockstep-pkg's requests (build, venv,
//! manifest, fetch, bisect), and the human form of what they return.

use std::path::{Path, PathBuf};

use lockstep_cache::Area;
use lockstep_core::Error;
use lockstep_github::Client;
use lockstep_pkg::config::{PkgConfig, DEFAULT_VARIANT};
use lockstep_pkg::fetch::{FetchRequest, RunChoice};
use lockstep_pkg::BuildRequest;
use lockstep_python::venv::{self, From};
use lockstep_python::{pylock, uv};

use crate::cli;
use crate::context::Ctx;

pub fn run(cmd: cli::Pkg, ctx: &Ctx) -> Result<i32, Error> {
    match cmd {
        cli::Pkg::Build(args) => build(args, ctx),
        cli::Pkg::Venv(args) => make_venv(args, ctx),
        cli::Pkg::Manifest { dir } => write_manifest(&ctx.cwd.join(dir), ctx),
        cli::Pkg::Fetch(args) => fetch(args, ctx),
        cli::Pkg::Bisect(args) => bisect(args, ctx),
    }
}

/// uv, found or installed the way toolchains find it.
pub fn find_uv(ctx: &Ctx) -> Result<uv::Uv, Error> {
    uv::find_default(ctx.sink())
}

/// The configured build of HEAD (`[pkg]`, the wheels cache, and the pin of
/// `[integrate] submodule` when lockstep.toml has that table).
pub(crate) fn configured<'a>(
    ctx: &'a Ctx,
    pkg: &'a PkgConfig,
    uv: &'a uv::Uv,
) -> Result<BuildRequest<'a>, Error> {
    let loaded = ctx.loaded()?;
    let pin_path = match loaded.has_section("integrate") {
        true => Some(
            loaded
                .section::<lockstep_integrate::config::IntegrateConfig>()?
                .submodule,
        ),
        false => None,
    };
    let cache = ctx.cache()?;
    Ok(BuildRequest {
        compiler_area: Some(cache.dir(Area::Compiler)),
        ..BuildRequest::configured(
            pkg,
            &loaded.root,
            pin_path,
            Some(cache.bucket(Area::Wheels)),
            uv,
        )?
    })
}

/// The wheelhouse: `--out`, else `[pkg] out` (relative to lockstep.toml).
fn wheelhouse(flag: Option<PathBuf>, pkg: &PkgConfig, ctx: &Ctx) -> Result<PathBuf, Error> {
    Ok(match flag {
        Some(dir) => ctx.cwd.join(dir),
        None => ctx.root()?.join(&pkg.out),
    })
}

fn build(args: cli::PkgBuildArgs, ctx: &Ctx) -> Result<i32, Error> {
    let pkg: PkgConfig = ctx.section()?;
    let out = wheelhouse(args.out, &pkg, ctx)?;
    let jobs = match args.jobs {
        Some(_) => Some(lockstep_core::pool::jobs(args.jobs, "-j")?),
        None => None,
    };
    let uv = find_uv(ctx)?;
    let configured = configured(ctx, &pkg, &uv)?;
    let request = BuildRequest {
        pythons: args.pythons,
        variants: args.variants,
        packages: args.packages,
        out,
        version: args.version,
        jobs: jobs.unwrap_or(configured.jobs),
        rev: args.rev,
        ..configured
    };
    let report = lockstep_pkg::build(&request, ctx.sink())?;
    ctx.result(&report, |out| {
        for manifest in &report.manifests {
            out.line(manifest.display());
        }
    })?;
    Ok(0)
}

fn make_venv(args: cli::PkgVenvArgs, ctx: &Ctx) -> Result<i32, Error> {
    let manifest = pylock::variant_manifest(&args.manifest, args.variant.as_deref())?;
    let uv = find_uv(ctx)?;
    let made = venv::create_exact(
        &uv,
        &args.dir,
        From::Manifest(&manifest),
        args.python.as_deref(),
        ctx.sink(),
    )?;
    ctx.result(&made, |out| {
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
    })?;
    Ok(0)
}

/// `pkg manifest DIR`: DIR/pylock.toml for the wheels in DIR, paths relative.
fn write_manifest(dir: &Path, ctx: &Ctx) -> Result<i32, Error> {
    let mut lock = pylock::from_dir(dir)?;
    for package in &mut lock.packages {
        for wheel in &mut package.wheels {
            wheel.path = wheel.name.clone();
        }
    }
    let path = dir.join(pylock::FILE);
    lockstep_core::fs::write_atomic(&path, lock.to_toml()?.as_bytes())?;
    ctx.out().line(path.display());
    Ok(0)
}

fn fetch(args: cli::PkgFetchArgs, ctx: &Ctx) -> Result<i32, Error> {
    let pkg: PkgConfig = ctx.section()?;
    let client = Client::from_env()?;
    let repo = lockstep_pkg::fetch::repository(args.repo.as_deref(), &client, &ctx.cwd)?;
    let run = match (args.run, args.latest_green) {
        (Some(id), _) => RunChoice::Id(id),
        (None, Some(branch)) => RunChoice::LatestGreen {
            branch,
            workflow: args.workflow,
        },
        (None, None) => return Err(Error::usage("pass --run ID or --latest-green BRANCH")),
    };
    let fetched = lockstep_pkg::fetch::fetch(
        &client,
        &FetchRequest {
            repo,
            run,
            name: args.name,
            out: wheelhouse(args.out, &pkg, ctx)?,
        },
        ctx.sink(),
    )?;
    ctx.result(&fetched, |out| {
        for manifest in &fetched.manifests {
            out.line(manifest.display());
        }
    })?;
    Ok(0)
}

fn bisect(args: cli::PkgBisectArgs, ctx: &Ctx) -> Result<i32, Error> {
    let timeout = match args.timeout {
        Some(secs) => lockstep_core::config::seconds("--timeout", secs)?,
        None => std::time::Duration::from_secs(3600),
    };
    let pkg: PkgConfig = ctx.section()?;
    let uv = find_uv(ctx)?;
    let python = args.python.or_else(|| pkg.python.first().cloned());
    let report = lockstep_pkg::bisect::bisect(
        &lockstep_pkg::bisect::BisectRequest {
            build: configured(ctx, &pkg, &uv)?,
            good: args.good,
            bad: args.bad,
            variant: args.variant.unwrap_or_else(|| DEFAULT_VARIANT.into()),
            python,
            command: args.command,
            cwd: ctx.cwd.clone(),
            timeout,
        },
        ctx.sink(),
    )?;
    ctx.result(&report, |out| match &report.first_bad {
        Some(commit) => out.line(format!("first bad commit: {commit}")),
        None => out.line(format!(
            "the first bad commit is one of (skipped commits leave it open): {}",
            report.candidates.join(" ")
        )),
    })?;
    Ok(0)
}
