//! The IREE toolchain: provisioning `iree-base-compiler` and `iree-base-runtime`
//! from PyPI (a venv per version, made with uv), resolving which tools a command
//! uses (`--iree-bin`, `LOCKSTEP_IREE_BIN`, `[toolchain] iree-bin`, then the
//! provisioned one; never PATH), and the compiler identity that caches key on.
//!
//! It must not know about suites, benchmarks or integrates.

pub mod toolchain;

/// iree-compile flags for the host CPU with the llvm-cpu backend (what tests,
/// benchmarks and the demo compile for when no GPU target is configured).
pub const HOST_CPU_FLAGS: &[&str] = &[
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
];
