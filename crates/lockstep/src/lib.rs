//! What the `lockstep` binary shares with the tools beside it: the list of
//! lockstep.toml's tables and how a command loads them ([`config`]).
//! lockstep-fuzz fuzzes the configuration through this very list, so a new
//! table cannot be left out of it. Everything else of the binary (the
//! command line, the handlers) stays in `main.rs`'s modules.

pub mod config;
