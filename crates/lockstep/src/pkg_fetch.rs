//! `lockstep pkg fetch` and `lockstep pkg bisect`: dispatch and printing.

use std::path::Path;

use lockstep_core::config::Loaded;
use lockstep_core::Error;
use lockstep_report::Reporters;

use lockstep_github::Client;
use lockstep_pkg::fetch::{FetchRequest, RunChoice};

use crate::cli;

/// The workflow `--latest-green` looks at unless `--workflow` names another:
/// the one `lockstep ci generate` writes.
const DEFAULT_WORKFLOW: &str = "lockstep-pkgci.yml";

pub fn run(
    args: cli::PkgFetchArgs,
    loaded: &Loaded,
    cwd: &Path,
    rep: &Reporters,
) -> Result<i32, Error> {
    let client = Client::from_env()?;
    let repo = lockstep_pkg::fetch::repository(args.repo.as_deref(), &client, cwd)?;
    let run = match (args.run, args.latest_green) {
        (Some(id), _) => RunChoice::Id(id),
        (None, Some(branch)) => RunChoice::LatestGreen {
            branch,
            workflow: Some(args.workflow.unwrap_or_else(|| DEFAULT_WORKFLOW.into())),
        },
        (None, None) => return Err(Error::usage("pass --run ID or --latest-green BRANCH")),
    };
    let out = crate::pkg::wheelhouse(args.out, loaded, cwd)?;
    let fetched = lockstep_pkg::fetch::fetch(
        &client,
        &FetchRequest {
            repo,
            run,
            name: args.name,
            out,
        },
        rep,
    )?;
    let out = rep.out();
    if args.json {
        out.line(crate::output::json_document(&fetched)?);
    } else {
        for manifest in &fetched.manifests {
            out.line(manifest.display());
        }
    }
    Ok(0)
}

pub fn bisect(
    args: cli::PkgBisectArgs,
    loaded: &Loaded,
    cwd: &Path,
    rep: &Reporters,
) -> Result<i32, Error> {
    let timeout = match args.timeout {
        Some(secs) => lockstep_core::config::seconds("--timeout", secs)?,
        None => std::time::Duration::from_secs(3600),
    };
    let uv = crate::pkg::find_uv(rep)?;
    let pkg: lockstep_pkg::config::PkgConfig = loaded.section()?;
    let python = args.python.or_else(|| pkg.python.first().cloned());
    let report = lockstep_pkg::bisect::bisect(
        &lockstep_pkg::bisect::BisectRequest {
            build: crate::pkg::build_request(&pkg, loaded, &uv)?,
            good: args.good,
            bad: args.bad,
            variant: args
                .variant
                .unwrap_or_else(|| lockstep_pkg::config::DEFAULT_VARIANT.into()),
            python,
            command: args.command,
            cwd: cwd.to_path_buf(),
            timeout,
        },
        rep,
    )?;
    let out = rep.out();
    if args.json {
        out.line(crate::output::json_document(&report)?);
    } else {
        match &report.first_bad {
            Some(commit) => out.line(format!("first bad commit: {commit}")),
            None => out.line(format!(
                "the first bad commit is one of (skipped commits leave it open): {}",
                report.candidates.join(" ")
            )),
        }
    }
    Ok(0)
}
