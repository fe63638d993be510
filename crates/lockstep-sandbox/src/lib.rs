//! Fixtures for `lockstep demo` and the tests: synthetic git repositories of
//! an upstream, a fork carrying patches and a superproject pinning it
//! ([`repos`]), and the demo's story on them ([`demo`]: start an integrate,
//! loop to upstream head, resolve each halt the way a person would).
//!
//! It stands above the engines and is used by the binary's `demo` command
//! and by tests; no engine may depend on it.

pub mod demo;
pub mod packages;
pub mod repos;

pub use repos::{api_level_at, create, Sandbox, SandboxSpec};
