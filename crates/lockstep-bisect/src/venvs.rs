//! What a bisection over *packages* probes in: a fresh environment holding
//! one commit's packages ([`CommitVenvs`]).
//!
//! Why a trait: `pkg bisect` builds and installs them (lockstep-pkg
//! implements it); `bench bisect` times kernels in them and must not depend
//! on how packages are built, so it is handed the implementation.

use std::path::Path;

use lockstep_core::events::Sink;
use lockstep_core::Error;

/// A commit's packages in a fresh venv.
pub trait CommitVenvs {
    /// The variant whose packages are built (part of a verdict's key).
    fn variant(&self) -> &str;
    /// The Python they are built for and installed with, when one was named.
    fn python(&self) -> Option<&str>;
    /// Builds `commit`'s packages, installs them into a fresh venv and calls
    /// `f` with the venv's directory (removed afterwards). `Ok(Err(why))`
    /// when the packages do not build or install (a commit to skip); `f`'s
    /// error comes back as it is.
    fn with_venv(
        &self,
        commit: &str,
        sink: &dyn Sink,
        f: &mut dyn FnMut(&Path) -> Result<(), Error>,
    ) -> Result<Result<(), String>, Error>;
}
