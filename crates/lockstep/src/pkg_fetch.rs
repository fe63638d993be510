//! `lockstep pkg fetch` and `lockstep pkg bisect`: dispatch and printing.

use std::path::Path;

use lockstep_core::config::Loaded;
use lockstep_core::Error;
use lockstep_report::Reporters;

use crate::cli;

pub fn run(
    _args: cli::PkgFetchArgs,
    _loaded: &Loaded,
    _cwd: &Path,
    _rep: &Reporters,
) -> Result<i32, Error> {
    Err(Error::failed("pkg fetch: in progress"))
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
    let python = args
        .python
        .or_else(|| loaded.config.pkg.python.first().cloned());
    let report = lockstep_pkg::bisect::bisect(
        &lockstep_pkg::bisect::BisectRequest {
            build: crate::pkg::build_request(loaded, &uv),
            good: args.good,
            bad: args.bad,
            variant: args
                .variant
                .unwrap_or_else(|| lockstep_core::config::DEFAULT_VARIANT.into()),
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
