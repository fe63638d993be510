//! Fuzzing for every parser and file format lockstep reads from its users
//! (lockstep.toml, native suites, iree-test-suites configs, `-m` marker
//! expressions, MIOpen lines and commands files, MLIR modules, the state
//! database), on stable Rust and without instrumentation: inputs are the
//! corpus under `fuzz/corpus/TARGET/` and mutations of it, each run on a
//! worker thread under a time limit. The contract every target must keep: no
//! panic, no hang, and a refusal that names the file it read.
//!
//! `cargo test -p lockstep-fuzz` runs every target for a bounded number of
//! inputs (part of `scripts/test`); `scripts/fuzz` runs each for minutes and
//! keeps inputs with new outcomes in the corpus.

pub mod contract;
pub mod lit;
/// The binary's list of lockstep.toml's tables, compiled from its own file
/// so that the fuzz target checks exactly what the binary loads.
#[path = "../../lockstep/src/config.rs"]
#[allow(dead_code)]
mod lockstep_config;
pub mod mutate;
pub mod ready;
pub mod run;
pub mod surface;
pub mod targets;
pub mod trees;

pub use run::{fuzz, Limits, Report};
pub use targets::{all, find, Outcome, Target};
