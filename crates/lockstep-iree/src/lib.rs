//! The IREE toolchain: provisioning `iree-base-compiler` and `iree-base-runtime`
//! from PyPI (a venv per version, made with uv), resolving which tools a command
//! uses (`--iree-bin`, `LOCKSTEP_IREE_BIN`, `[toolchain] iree-bin`, then the
//! provisioned one; never PATH), the compiler identity that caches key on,
//! and the one layer that builds and runs IREE tool command lines and reads
//! what they print ([`invoke`], [`benchmark`]).
//!
//! It must not know about suites, benchmarks or integrates.

pub mod benchmark;
pub mod config;
pub mod gpu;
pub mod invoke;
pub mod python_env;
pub mod toolchain;

pub use invoke::{Benchmark, Compile, Invocation, Limits, MinTime, Phase, Ran, RunModule};
pub use toolchain::Toolchain;

/// iree-compile flags for the host CPU with the llvm-cpu backend (what tests,
/// benchmarks and the demo compile for when no GPU target is configured).
pub const HOST_CPU_FLAGS: &[&str] = &[
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
];

/// The iree-compile target flags a runtime device's driver has by default
/// (`local-task://0` -> the host CPU's), the one table of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DriverTarget {
    /// iree-compile's flags for it.
    Flags(Vec<String>),
    /// A driver iree-compile has no default target for (hip: the GPU's
    /// architecture must be named), on a machine where none was detected
    /// (why: what [`gpu::detect`] said).
    NeedsTarget(String),
    /// A driver IREE does not have.
    Unknown,
}

/// The driver of a runtime device (`cuda://0` -> `cuda`).
pub fn driver(device: &str) -> &str {
    device.split("://").next().unwrap_or(device)
}

/// The default target flags for `runtime_device`'s driver: the host CPU's
/// for the local drivers; for `cuda` and `hip` the chip of this machine's
/// GPU ([`gpu::detect`]), else for cuda the compiler's default target (a
/// compile-only machine) and for hip [`DriverTarget::NeedsTarget`].
pub fn driver_target(runtime_device: &str) -> DriverTarget {
    let owned = |flags: &[&str]| DriverTarget::Flags(flags.iter().map(|f| f.to_string()).collect());
    match driver(runtime_device) {
        "local-task" | "local-sync" => owned(HOST_CPU_FLAGS),
        d @ ("cuda" | "hip") => match gpu::detect(d) {
            Ok(chip) => DriverTarget::Flags(gpu::chip_flags(d, &chip)),
            Err(_) if d == "cuda" => owned(&["--iree-hal-target-device=cuda"]),
            Err(why) => DriverTarget::NeedsTarget(why),
        },
        "vulkan" => owned(&["--iree-hal-target-device=vulkan"]),
        _ => DriverTarget::Unknown,
    }
}

/// What a compile cache key must cover besides the compiler identity: with
/// `--iree-llvmcpu-target-cpu=host` the module depends on the machine that
/// compiled it, so the host CPU's model and feature flags (from
/// /proc/cpuinfo) join the key and a cache shared between machines never
/// hands out code built for another CPU.
pub fn key_identity(compiler_identity: &str, flags: &[String]) -> String {
    if flags.iter().any(|f| f == "--iree-llvmcpu-target-cpu=host") {
        format!("{compiler_identity}\0host-cpu:{}", host_cpu())
    } else {
        compiler_identity.to_string()
    }
}

/// The first processor's model name and feature flags, as /proc/cpuinfo
/// lists them (empty where there is no such file).
fn host_cpu() -> &'static str {
    static CPU: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    CPU.get_or_init(|| {
        let text = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |name: &str| {
            text.lines()
                .find(|l| l.split(':').next().is_some_and(|k| k.trim() == name))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
                .unwrap_or_default()
        };
        format!("{}|{}", field("model name"), field("flags"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_driver_has_its_default_target_or_says_why_not() {
        let host: Vec<String> = HOST_CPU_FLAGS.iter().map(|f| f.to_string()).collect();
        assert_eq!(
            driver_target("local-task"),
            DriverTarget::Flags(host.clone())
        );
        assert_eq!(driver_target("local-sync://"), DriverTarget::Flags(host));
        // The GPU drivers name this machine's chip, or (none here) fall
        // back to the compiler's default (cuda) or say why not (hip).
        match (gpu::detect("cuda"), driver_target("cuda://0")) {
            (Ok(chip), target) => {
                assert_eq!(target, DriverTarget::Flags(gpu::chip_flags("cuda", &chip)))
            }
            (Err(_), target) => assert_eq!(
                target,
                DriverTarget::Flags(vec!["--iree-hal-target-device=cuda".into()])
            ),
        }
        match (gpu::detect("hip"), driver_target("hip://1")) {
            (Ok(chip), target) => {
                assert_eq!(target, DriverTarget::Flags(gpu::chip_flags("hip", &chip)))
            }
            (Err(why), target) => assert_eq!(target, DriverTarget::NeedsTarget(why)),
        }
        assert_eq!(driver_target("tpu"), DriverTarget::Unknown);
        assert_eq!(driver("vulkan://2"), "vulkan");
    }

    #[test]
    fn host_cpu_compiles_key_on_the_machine() {
        let host: Vec<String> = HOST_CPU_FLAGS.iter().map(|f| f.to_string()).collect();
        let with_host = key_identity("iree 3.13.0", &host);
        assert!(
            with_host.starts_with("iree 3.13.0\0host-cpu:"),
            "{with_host}"
        );
        if std::path::Path::new("/proc/cpuinfo").exists() {
            assert!(with_host.len() > "iree 3.13.0\0host-cpu:|".len());
        }
        let gpu = vec!["--iree-hal-target-device=vulkan".to_string()];
        assert_eq!(key_identity("iree 3.13.0", &gpu), "iree 3.13.0");
    }
}
