//! `lockstep ci generate`: dispatch and printing (the generator is lockstep-ci).

use std::path::Path;

use lockstep_core::config::Loaded;
use lockstep_core::Error;
use lockstep_report::Reporters;

use crate::cli;

pub fn run(_cmd: cli::Ci, _loaded: &Loaded, _cwd: &Path, _rep: &Reporters) -> Result<i32, Error> {
    Err(Error::failed("ci generate: in progress"))
}
