//! Python packaging plumbing shared by `lockstep pkg`, `lockstep toolchain`
//! and (later) `lockstep release`: finding uv ([`uv`]), wheel file names and
//! PEP 440 versions ([`wheel`]), PEP 751 `pylock.toml` manifests ([`pylock`])
//! and venvs holding exactly a manifest's wheels ([`venv`]).
//!
//! It owns no command: engines above it decide what to build or install.
//! It never reaches the network on its own except through uv when a caller
//! asks for an online install (the IREE toolchain from PyPI); exact installs
//! from a manifest are always `--offline`.

pub mod pylock;
pub mod uv;
pub mod venv;
pub mod wheel;
