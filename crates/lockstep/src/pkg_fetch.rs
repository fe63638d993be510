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
    _args: cli::PkgBisectArgs,
    _loaded: &Loaded,
    _cwd: &Path,
    _rep: &Reporters,
) -> Result<i32, Error> {
    Err(Error::failed("pkg bisect: in progress"))
}
