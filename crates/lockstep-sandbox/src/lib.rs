//! Fixtures for `lockstep demo` and the tests: synthetic git repositories of
//! an upstream, a fork carrying patches and a superproject pinning it
//! ([`repos`]), a project of Python packages ([`packages`]), and an
//! IREE-shaped project whose native package builds from a submodule
//! ([`native`]), and a loopback GitHub REST API with a webhook receiver
//! ([`github`]).
//!
//! The released binary links this crate (through the demo), so it holds
//! what the demo needs and no more. What only the tests and benchmarks use
//! is in dev-only crates the binary never carries: the GitHub Actions
//! emulator (`lockstep-actions`), and random carried stacks, real-shaped
//! native packages, the loopback GitHub's Releases and CI and the fixture
//! programs (`lockstep-testkit`, which builds on [`repos`]' public building
//! blocks and plugs into [`github::Routes`]). `crates/lockstep/tests/testsuite/docs.rs`
//! checks that neither is in the binary's dependencies.
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

pub use repos::{api_level_at, create, Sandbox, SandboxSpec};
