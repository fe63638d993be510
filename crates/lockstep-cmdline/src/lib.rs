//! lockstep's command line, as uv keeps its in `uv-cli`: the clap
//! definitions of every command and flag, each documented where it is
//! defined (their doc comments are the help text the CLI snapshot tests
//! pin), and the output specification derived from them ([`outputs`]).
//! The binary parses with these and dispatches; it holds no definitions.
//!
//! This crate must not run anything, read configuration or know what a
//! command does beyond its flags.

mod cli;
pub mod outputs;

pub use cli::*;
