//! Shared foundation of lockstep: the `lockstep.toml` configuration, per-user
//! paths, running external processes (argv, timeouts, captured logs), the event
//! stream that engines emit and reporters consume, and the error type every
//! command reports through.
//!
//! This crate must not run git, know SQLite, HTTP or any one area's engine or
//! table: it is the layer the others stand on. Of git it knows only the
//! `GIT_CONFIG_*` credentials a job hands git (kept from every other child)
//! and the format of the stable-release mark (`marks`), which integrate
//! writes and release reads.

// Unit tests start their fixtures' processes directly; product code goes
// through lockstep_core::process (clippy.toml), checked without cfg(test).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod archive;
pub mod config;
pub mod diagnostics;
pub mod error;
pub mod events;
pub mod fs;
pub mod hash;
pub mod listing;
pub mod lock;
pub mod marks;
pub mod output;
pub mod paths;
pub mod pool;
pub mod process;
pub mod scrub;
pub mod words;

pub use error::{Error, ErrorKind, Result};
