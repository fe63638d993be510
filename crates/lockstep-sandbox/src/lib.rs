//! Fixtures for `lockstep demo` and the tests: synthetic git repositories of
//! an upstream, a fork carrying patches and a superproject pinning it
//! ([`repos`]), a project of Python packages ([`packages`]), and an
//! IREE-shaped project whose native package builds from a submodule
//! ([`native`]), and a loopback GitHub REST API with a webhook receiver
//! ([`github`]).
//!
//! The GitHub Actions emulator the tests run generated workflows on is not
//! here: it is `lockstep-actions`, a dev-dependency only, so that the
//! released binary (which links this crate through the demo) never carries it.
//!
//! It knows git, not lockstep's engines: the demo's story (lockstep-demo)
//! and the tests drive the engines on these fixtures. No engine may depend
//! on it.

// Unit tests start their fixtures' processes directly; product code goes
// through lockstep_core::process (clippy.toml), checked without cfg(test).
#![cfg_attr(test, allow(clippy::disallowed_methods))]

pub mod github;
pub mod native;
pub mod packages;
pub mod repos;
pub mod shapes;
pub mod stacks;

pub use repos::{api_level_at, create, Sandbox, SandboxSpec};
