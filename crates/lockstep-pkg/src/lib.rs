//! The package engine behind `lockstep pkg`: build every (package, Python,
//! variant) cell of a set from the committed tree ([`build`]), write the
//! PEP 751 manifest of exactly those wheels, install a manifest into a venv
//! ([`lockstep_python::venv`]), fetch a CI run's wheelhouse ([`fetch`]) and
//! bisect with each commit's packages ([`bisect`]).
//!
//! It reads `[pkg]` (and `[integrate] submodule` for the pin revision),
//! emits [`events::PkgEvent`]s and returns data; it never prints. Builds run
//! in staged copies of `git archive REV`, so the user's working tree is never
//! written to and untracked files never reach a wheel.

pub mod bisect;
pub mod build;
pub mod compiler_cache;
pub mod config;
pub mod events;
pub mod fetch;
pub mod human;
pub mod repair;

mod stage;

pub use build::{build, BuildReport, BuildRequest};
