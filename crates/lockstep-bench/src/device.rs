//! Devices: what `--device D` means for compiling and running a kernel.
//!
//! A device pairs the iree-compile target flags with the IREE runtime device
//! the timing and verification processes open. `[bench.devices.NAME]` in
//! lockstep.toml defines or overrides one; otherwise the driver part of `D`
//! (before `://`) picks a built-in:
//!
//! - `local-task`, `local-sync`: the host CPU (`--iree-llvmcpu-target-cpu=host`);
//! - `cuda`, `hip`: the chip of this machine's GPU (`--iree-cuda-target=sm_86`,
//!   `--iree-rocm-target=gfx942`, lockstep-iree's `gpu::detect`); with no GPU
//!   here cuda takes the compiler's default target (compile here, run
//!   there) and hip, which iree-compile has no default for, must be
//!   configured (the error says how);
//! - `vulkan`: `--iree-hal-target-device=vulkan`.
//!
//! A GPU device compiles here like any other; running it needs the GPU and
//! its driver library, and the runtime's error lands on the kernel's row.

use crate::config::BenchConfig;
use lockstep_core::Error;
use lockstep_iree::DriverTarget;

/// The device every kernel of a run is compiled for and run on.
#[derive(Debug, Clone)]
pub struct Device {
    /// The name given (`--device`, `[bench] device` or `local-task`).
    pub name: String,
    /// `--device=` of iree-benchmark-module and iree-run-module.
    pub runtime: String,
    /// iree-compile target flags.
    pub target_flags: Vec<String>,
    /// Extra flags for the runtime tools.
    pub run_flags: Vec<String>,
    /// Why there are no target flags (hip with no GPU here to detect and
    /// none configured): such a device can be skipped on a machine without
    /// it, never compiled for.
    pub unresolved: Option<Error>,
}

impl Device {
    /// True for the CPU task executor, whose worker count `--threads` sets.
    pub fn is_local_task(&self) -> bool {
        lockstep_iree::driver(&self.runtime) == "local-task"
    }
}

/// The device used when neither `--device` nor `[bench] device` names one.
pub const DEFAULT_DEVICE: &str = "local-task";

/// The driver of a runtime device: `hip` for `hip://0`, `local-task` for itself.
/// Resolves `flag` (from `--device`) against the configuration.
pub fn resolve(flag: Option<&str>, config: &BenchConfig) -> Result<Device, Error> {
    let name = flag
        .or(config.device.as_deref())
        .unwrap_or(DEFAULT_DEVICE)
        .to_string();
    if name.trim().is_empty() {
        return Err(Error::usage("--device must not be empty")
            .hint("name a runtime device such as local-task, local-sync, cuda or vulkan"));
    }
    let configured = config.devices.get(&name);
    let runtime = configured
        .and_then(|d| d.runtime_device.clone())
        .unwrap_or_else(|| name.clone());
    let run_flags = configured.map(|d| d.run_flags.clone()).unwrap_or_default();
    let (target_flags, unresolved) = match configured.and_then(|d| d.compile_flags.clone()) {
        Some(flags) => (flags, None),
        None => match builtin_target_flags(&name, &runtime) {
            Ok(flags) => (flags, None),
            Err(e)
                if matches!(
                    lockstep_iree::driver_target(&runtime),
                    DriverTarget::NeedsTarget(_)
                ) =>
            {
                (Vec::new(), Some(e))
            }
            Err(e) => return Err(e),
        },
    };
    Ok(Device {
        name,
        runtime,
        target_flags,
        run_flags,
        unresolved,
    })
}

/// The built-in target flags for the runtime device's driver.
fn builtin_target_flags(name: &str, runtime: &str) -> Result<Vec<String>, Error> {
    match lockstep_iree::driver_target(runtime) {
        DriverTarget::Flags(flags) => Ok(flags),
        DriverTarget::NeedsTarget(why) => Err(Error::usage(format!(
            "device `{name}` needs a GPU target: iree-compile has no default for hip, and {why}"
        ))
        .hint(format!(
            "add to lockstep.toml:\n  [bench.devices.{name}]\n  compile-flags = \
             [\"--iree-hal-target-device=hip\", \"--iree-rocm-target=gfx942\"]\n\
             with your GPU's architecture (rocminfo names it)"
        ))),
        DriverTarget::Unknown => Err(Error::usage(format!(
            "unknown device `{name}` (driver `{}`)",
            lockstep_iree::driver(runtime)
        ))
        .hint(format!(
            "use local-task, local-sync, cuda, hip or vulkan, or define it in lockstep.toml:\n  \
                 [bench.devices.{name}]\n  runtime-device = \"...\"\n  compile-flags = [\"...\"]"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::BenchDeviceConfig;

    fn config(device: Option<&str>, devices: &[(&str, BenchDeviceConfig)]) -> BenchConfig {
        BenchConfig {
            device: device.map(str::to_string),
            devices: devices
                .iter()
                .map(|(n, d)| (n.to_string(), d.clone()))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn the_default_is_the_host_cpu_on_local_task() {
        let d = resolve(None, &BenchConfig::default()).unwrap();
        assert_eq!(d.name, "local-task");
        assert_eq!(d.runtime, "local-task");
        assert_eq!(d.target_flags, lockstep_iree::HOST_CPU_FLAGS);
        assert!(d.is_local_task());
        let sync = resolve(Some("local-sync"), &BenchConfig::default()).unwrap();
        assert_eq!(sync.target_flags, lockstep_iree::HOST_CPU_FLAGS);
        assert!(!sync.is_local_task());
    }

    #[test]
    fn gpu_drivers_get_their_target_device() {
        let d = resolve(Some("cuda://0"), &BenchConfig::default()).unwrap();
        assert_eq!(d.runtime, "cuda://0");
        assert_eq!(d.target_flags, ["--iree-hal-target-device=cuda"]);
        let v = resolve(Some("vulkan"), &BenchConfig::default()).unwrap();
        assert_eq!(v.target_flags, ["--iree-hal-target-device=vulkan"]);
    }

    #[test]
    fn hip_and_unknown_devices_say_how_to_configure_them() {
        let hip = resolve(Some("hip"), &BenchConfig::default()).unwrap();
        if lockstep_iree::gpu::detect("hip").is_ok() {
            return;
        }
        let err = hip.unresolved.unwrap();
        assert_eq!(err.exit_code(), 2);
        assert!(
            err.render().contains("[bench.devices.hip]"),
            "{}",
            err.render()
        );
        let err = resolve(Some("tpu"), &BenchConfig::default()).unwrap_err();
        assert!(
            err.render().contains("unknown device `tpu`"),
            "{}",
            err.render()
        );
        assert!(resolve(Some(" "), &BenchConfig::default()).is_err());
    }

    #[test]
    fn configured_devices_win_and_the_config_picks_the_default() {
        let mi300 = BenchDeviceConfig {
            runtime_device: Some("hip://1".into()),
            compile_flags: Some(vec!["--iree-rocm-target=gfx942".into()]),
            run_flags: vec!["--hip_use_streams=true".into()],
        };
        let cpu = BenchDeviceConfig {
            compile_flags: None,
            runtime_device: Some("local-task".into()),
            run_flags: vec![],
        };
        let c = config(Some("mi300"), &[("mi300", mi300), ("cpu", cpu)]);
        let d = resolve(None, &c).unwrap();
        assert_eq!(d.name, "mi300");
        assert_eq!(d.runtime, "hip://1");
        assert_eq!(d.target_flags, ["--iree-rocm-target=gfx942"]);
        assert_eq!(d.run_flags, ["--hip_use_streams=true"]);
        // A configured name without flags falls back to its driver's built-in.
        let cpu = resolve(Some("cpu"), &c).unwrap();
        assert_eq!(cpu.target_flags, lockstep_iree::HOST_CPU_FLAGS);
    }
}
