//! `lockstep pkg ...`: flags into lockstep-pkg's requests (build, venv,
//! manifest, fetch, bisect); what they return printed as JSON or in its
//! human form (lockstep_pkg::human).

use std::path::PathBuf;

use lockstep_core::Error;
use lockstep_github::Client;
use lockstep_pkg::config::{PkgConfig, DEFAULT_VARIANT};
use lockstep_pkg::fetch::{FetchRequest, RunChoice};
use lockstep_pkg::{human, BuildRequest};
use lockstep_python::venv::{self, From};
use lockstep_python::{pylock, uv};

use crate::context::Ctx;
use lockstep_cmdline as cli;

pub fn run(cmd: cli::Pkg, ctx: &Ctx) -> Result<i32, Error> {
    match cmd {
        cli::Pkg::Build(args) => build(args, ctx),
        cli::Pkg::Venv(args) => {
            let manifest = pylock::variant_manifest(&args.manifest, args.variant.as_deref())?;
            let from = From::Manifest(&manifest);
            let python = args.python.as_deref();
            let uv = find_uv(ctx)?;
            let made = match &args.dependency_index {
                Some(index) => {
                    let index = lockstep_release::settings::index_url(index, "--dependency-index")?;
                    venv::create_with_dependencies(
                        &uv,
                        &args.dir,
                        from,
                        python,
                        &index,
                        ctx.sink(),
                    )?
                }
                None => venv::create_exact(&uv, &args.dir, from, python, ctx.sink())?,
            };
            ctx.show(&made, human::venv)
        }
        cli::Pkg::Manifest { dir } => {
            let path = pylock::write_for_dir(&ctx.cwd.join(dir))?;
            ctx.out().line(path.display());
            Ok(0)
        }
        cli::Pkg::Fetch(args) => fetch(args, ctx),
        cli::Pkg::Bisect(args) => bisect(args, ctx),
    }
}

/// uv, found or installed the way toolchains find it.
pub fn find_uv(ctx: &Ctx) -> Result<uv::Uv, Error> {
    uv::find_default(ctx.sink())
}

/// The configured build of HEAD (`[pkg]`, the cache, and `[integrate]`'s
/// pin, of any kind, when lockstep.toml has that table).
pub(crate) fn configured<'a>(
    ctx: &'a Ctx,
    pkg: &'a PkgConfig,
    uv: &'a uv::Uv,
) -> Result<BuildRequest<'a>, Error> {
    let loaded = ctx.loaded()?;
    let pin = lockstep_integrate::config::configured_pin(loaded)?;
    BuildRequest::cached(pkg, &loaded.root, pin, &ctx.cache()?, uv)
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
    ctx.show(&report, |r| human::manifests(&r.manifests))
}

fn fetch(args: cli::PkgFetchArgs, ctx: &Ctx) -> Result<i32, Error> {
    let pkg: PkgConfig = ctx.section()?;
    let client = Client::from_env()?;
    let repo = lockstep_pkg::fetch::repository(args.repo.as_deref(), &client, &ctx.cwd)?;
    let run = RunChoice::from_flags(args.run, args.latest_green, args.workflow)?;
    let request = FetchRequest {
        repo,
        run,
        name: args.name,
        out: wheelhouse(args.out, &pkg, ctx)?,
    };
    let fetched = lockstep_pkg::fetch::fetch(&client, &request, ctx.sink())?;
    ctx.show(&fetched, |f| human::manifests(&f.manifests))
}

fn bisect(args: cli::PkgBisectArgs, ctx: &Ctx) -> Result<i32, Error> {
    let timeout = lockstep_pkg::bisect::timeout(args.timeout)?;
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
    ctx.show(&report, human::bisected)
}
