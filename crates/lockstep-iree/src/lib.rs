//! The IREE toolchain: provisioning `iree-base-compiler` and `iree-base-runtime`
//! from PyPI (a venv per version, made with uv), resolving which tools a command
//! uses (`--iree-bin`, `LOCKSTEP_IREE_BIN`, `[toolchain] iree-bin`, then the
//! provisioned one; never PATH), and the compiler identity that caches key on.
//!
//! It must not know about suites, benchmarks or integrates.

pub mod toolchain;
