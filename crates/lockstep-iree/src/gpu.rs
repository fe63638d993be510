//! GPUs: the target chip of the machine's `cuda` or `hip` device, so
//! `--device cuda` and `--device hip` compile for the GPU that will run the
//! kernel without hand configuration (IREE's own package CI names the chip:
//! `--iree-cuda-target=sm_80`, `--iree-rocm-target=gfx942`).
//!
//! - NVIDIA: `nvidia-smi --query-gpu=compute_cap` (`8.6` -> `sm_86`; newer
//!   than the compiler's newest target, that one: [`NEWEST_CUDA_TARGET`]).
//! - AMD: the kernel driver's topology, no process needed
//!   (`/sys/class/kfd/kfd/topology/nodes/N/properties`, `gfx_target_version
//!   90402` -> `gfx942`), as rocminfo reads it.
//!
//! Where no GPU is found the answer says what was looked at, so a caller can
//! name it: a compile for cuda falls back to the compiler's default target,
//! one for hip needs the chip named (`[bench.devices.hip] compile-flags`).

use std::path::Path;
use std::time::Duration;

use lockstep_core::process;

/// Where the AMD kernel driver lists its nodes.
const KFD_NODES: &str = "/sys/class/kfd/kfd/topology/nodes";

/// The target chip of the first GPU of `driver` (`cuda` or `hip`), or why
/// there is none; asked once per process (a GPU does not come and go, and
/// nvidia-smi takes a while).
pub fn detect(driver: &str) -> Result<String, String> {
    static SEEN: std::sync::Mutex<Vec<(String, Result<String, String>)>> =
        std::sync::Mutex::new(Vec::new());
    if let Some((_, found)) = SEEN
        .lock()
        .ok()
        .and_then(|seen| seen.iter().find(|(d, _)| d == driver).cloned())
    {
        return found;
    }
    let found = match driver {
        "cuda" => detect_cuda(),
        "hip" => detect_hip(Path::new(KFD_NODES)),
        other => Err(format!("no GPU target for driver `{other}`")),
    };
    if let Ok(mut seen) = SEEN.lock() {
        seen.push((driver.to_string(), found.clone()));
    }
    found
}

/// The iree-compile flags that pin `chip` for `driver`.
pub fn chip_flags(driver: &str, chip: &str) -> Vec<String> {
    let target = match driver {
        "cuda" => format!("--iree-cuda-target={chip}"),
        _ => format!("--iree-rocm-target={chip}"),
    };
    vec![format!("--iree-hal-target-device={driver}"), target]
}

fn detect_cuda() -> Result<String, String> {
    let Some(smi) = process::on_path("nvidia-smi") else {
        return Err("no NVIDIA GPU found: nvidia-smi is not on PATH".into());
    };
    let text = capture(&smi, &["--query-gpu=compute_cap", "--format=csv,noheader"])
        .map_err(|e| format!("no NVIDIA GPU found: {e}"))?;
    text.lines()
        .find_map(sm_of_compute_cap)
        .ok_or_else(|| "no NVIDIA GPU found: nvidia-smi lists no GPU".to_string())
}

/// What `program ARGS` prints (stdout and stderr together), or why it did
/// not run or failed (its first line).
fn capture(program: &Path, args: &[&str]) -> Result<String, String> {
    let name = program.file_name().map_or_else(
        || program.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let log = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    let mut argv = vec![program.to_string_lossy().into_owned()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let finished = process::run_with(
        &process::Spec {
            argv,
            cwd: std::env::temp_dir(),
            env: Vec::new(),
            timeout: Some(Duration::from_secs(30)),
            log: log.path().to_path_buf(),
            header: None,
        },
        &process::Options {
            env_remove: process::secret_vars(&[]),
            die_with_parent: true,
            stdout: None,
            scrub: None,
        },
        |_| {},
    )
    .map_err(|e| format!("cannot run {name}: {}", e.render()))?;
    let text = std::fs::read_to_string(log.path()).unwrap_or_default();
    if finished.exit != process::Exit::Code(0) {
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(format!(
            "{name} failed ({}): {first}",
            finished.exit.describe()
        ));
    }
    Ok(text)
}

/// The HAL drivers and devices an IREE runtime has here, as
/// `iree-run-module --list_drivers` and `--list_devices` print them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct RuntimeDevices {
    /// Every driver compiled into the runtime (`cuda`, `hip`, `local-task` ...).
    pub drivers: Vec<String>,
    /// Every device found (`local-task://`, `cuda://GPU-...`).
    pub devices: Vec<String>,
}

impl RuntimeDevices {
    /// Whether `runtime_device`'s driver has a device here.
    pub fn has(&self, runtime_device: &str) -> bool {
        let driver = crate::driver(runtime_device);
        self.devices.iter().any(|d| crate::driver(d) == driver)
    }

    /// Why `runtime_device` cannot run here (`None` when it can).
    pub fn missing(&self, runtime_device: &str) -> Option<String> {
        let driver = crate::driver(runtime_device);
        if !self.drivers.iter().any(|d| d == driver) {
            return Some(format!(
                "this IREE runtime has no `{driver}` HAL driver (it has {})",
                self.drivers.join(", ")
            ));
        }
        (!self.has(runtime_device)).then(|| {
            let found: Vec<&str> = self.devices.iter().map(String::as_str).collect();
            format!(
                "the `{driver}` HAL driver finds no device on this machine (devices here: {})",
                if found.is_empty() {
                    "none".to_string()
                } else {
                    found.join(", ")
                }
            )
        })
    }
}

/// Lists the drivers and devices of the runtime whose `iree-run-module` is
/// `run_module`.
pub fn runtime_devices(run_module: &Path) -> Result<RuntimeDevices, String> {
    let drivers = capture(run_module, &["--list_drivers"])?;
    let devices = capture(run_module, &["--list_devices"])?;
    Ok(parse_runtime_devices(&drivers, &devices))
}

/// Why `runtime_device` cannot run with the runtime whose iree-run-module is
/// `run_module` ([`RuntimeDevices::missing`]): `None` for the local drivers
/// (always there, nothing is launched), when the device is there, or when
/// the runtime cannot list its devices (the run then says what is wrong).
/// Each runtime is listed once per process.
pub fn missing_device(run_module: &Path, runtime_device: &str) -> Option<String> {
    if matches!(crate::driver(runtime_device), "local-task" | "local-sync") {
        return None;
    }
    static LISTED: std::sync::Mutex<Vec<(std::path::PathBuf, Option<RuntimeDevices>)>> =
        std::sync::Mutex::new(Vec::new());
    let known = LISTED.lock().ok().and_then(|l| {
        l.iter()
            .find(|(p, _)| p == run_module)
            .map(|(_, d)| d.clone())
    });
    let found = match known {
        Some(found) => found,
        None => {
            let found = runtime_devices(run_module).ok();
            if let Ok(mut listed) = LISTED.lock() {
                listed.push((run_module.to_path_buf(), found.clone()));
            }
            found
        }
    };
    found?.missing(runtime_device)
}

/// [`runtime_devices`] from the two outputs.
pub fn parse_runtime_devices(drivers: &str, devices: &str) -> RuntimeDevices {
    let drivers = drivers
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once(':'))
        .map(|(name, _)| name.trim().to_string())
        .filter(|name| !name.is_empty() && !name.contains(' '))
        .collect();
    let devices = devices
        .lines()
        .map(str::trim)
        .filter(|l| !l.starts_with('#') && l.contains("://"))
        .map(|l| l.split_whitespace().next().unwrap_or(l).to_string())
        .collect();
    RuntimeDevices { drivers, devices }
}

/// The newest CUDA target the IREE compiler lockstep provisions (3.13)
/// knows: its target table stops at Ada, so `--iree-cuda-target=sm_90`
/// fails with "missing GPU target in #hal.executable.target" (and
/// `hopper` crashes it). A newer GPU gets code for this target: IREE embeds
/// PTX, which the driver compiles for the GPU it runs on.
pub const NEWEST_CUDA_TARGET: (u32, u32) = (8, 9);

/// `8.6` -> `sm_86`; a capability newer than [`NEWEST_CUDA_TARGET`] (`9.0`,
/// an H100) -> that target (`sm_89`).
pub fn sm_of_compute_cap(line: &str) -> Option<String> {
    let (major, minor) = line.trim().split_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit());
    if !(digits(major) && digits(minor)) {
        return None;
    }
    let cap: (u32, u32) = (major.parse().ok()?, minor.parse().ok()?);
    let (major, minor) = cap.min(NEWEST_CUDA_TARGET);
    Some(format!("sm_{major}{minor}"))
}

fn detect_hip(nodes: &Path) -> Result<String, String> {
    let none = || format!("no AMD GPU found (no GPU node in {})", nodes.display());
    let mut entries: Vec<_> = std::fs::read_dir(nodes)
        .map_err(|_| none())?
        .filter_map(|e| e.ok())
        .map(|e| e.path().join("properties"))
        .collect();
    entries.sort();
    entries
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .find_map(|text| gfx_of_properties(&text))
        .ok_or_else(none)
}

/// The `gfx` name of a kfd node's properties (`gfx_target_version 90402` ->
/// `gfx942`, `90010` -> `gfx90a`); `None` for a CPU node (version 0).
pub fn gfx_of_properties(text: &str) -> Option<String> {
    let version: u32 = text.lines().find_map(|l| {
        let mut words = l.split_whitespace();
        (words.next() == Some("gfx_target_version"))
            .then(|| words.next()?.parse().ok())
            .flatten()
    })?;
    if version == 0 {
        return None;
    }
    let (major, minor, stepping) = (version / 10000, (version / 100) % 100, version % 100);
    (minor < 16 && stepping < 16).then(|| format!("gfx{major}{minor:x}{stepping:x}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compute_capabilities_name_sm_targets() {
        // Hopper: the newest target the provisioned compiler knows.
        assert_eq!(sm_of_compute_cap("9.0").as_deref(), Some("sm_89"));
        assert_eq!(sm_of_compute_cap("8.0").as_deref(), Some("sm_80"));
        assert_eq!(sm_of_compute_cap(" 8.6 \n").as_deref(), Some("sm_86"));
        assert_eq!(sm_of_compute_cap("[N/A]"), None);
        assert_eq!(sm_of_compute_cap("9."), None);
        assert_eq!(sm_of_compute_cap("999.0"), None);
    }

    #[test]
    fn kfd_versions_name_gfx_targets() {
        let props =
            |v: &str| format!("cpu_cores_count 0\ngfx_target_version {v}\nvendor_id 4098\n");
        assert_eq!(
            gfx_of_properties(&props("90402")).as_deref(),
            Some("gfx942")
        );
        assert_eq!(
            gfx_of_properties(&props("90010")).as_deref(),
            Some("gfx90a")
        );
        assert_eq!(
            gfx_of_properties(&props("110000")).as_deref(),
            Some("gfx1100")
        );
        assert_eq!(gfx_of_properties(&props("0")), None);
        assert_eq!(gfx_of_properties("nothing"), None);
        assert_eq!(gfx_of_properties(&props("-1")), None);
    }

    #[test]
    fn runtime_listings_parse_into_drivers_and_devices() {
        let drivers = "# ====\n# Available HAL drivers\n# ====\n# Use --list_devices={driver name} to enumerate available devices.\n\n            cuda: NVIDIA CUDA HAL driver (via dylib)\n             hip: HIP HAL driver (via dylib)\n      local-sync: Local execution\n      local-task: Local execution using the IREE multithreading task system\n";
        let devices = "local-sync://\nlocal-task://\n";
        let found = parse_runtime_devices(drivers, devices);
        assert_eq!(found.drivers, ["cuda", "hip", "local-sync", "local-task"]);
        assert_eq!(found.devices, ["local-sync://", "local-task://"]);
        assert!(found.has("local-task"));
        assert!(found.missing("local-sync://0").is_none());
        let cuda = found.missing("cuda").unwrap();
        assert!(cuda.contains("`cuda` HAL driver finds no device"), "{cuda}");
        assert!(found
            .missing("metal")
            .unwrap()
            .contains("no `metal` HAL driver"));
        let gpu = parse_runtime_devices(drivers, "cuda://GPU-1234 (NVIDIA H100)\nlocal-task://\n");
        assert!(gpu.has("cuda://0"));
    }

    #[test]
    fn a_machine_without_gpus_says_what_it_looked_at() {
        let dir = tempfile::tempdir().unwrap();
        let err = detect_hip(&dir.path().join("missing")).unwrap_err();
        assert!(err.contains("no AMD GPU found"), "{err}");
        // A CPU-only topology (node 0 with version 0).
        let node = dir.path().join("0");
        std::fs::create_dir_all(&node).unwrap();
        std::fs::write(node.join("properties"), "gfx_target_version 0\n").unwrap();
        assert!(detect_hip(dir.path()).is_err());
        let gpu = dir.path().join("1");
        std::fs::create_dir_all(&gpu).unwrap();
        std::fs::write(gpu.join("properties"), "gfx_target_version 90402\n").unwrap();
        assert_eq!(detect_hip(dir.path()).unwrap(), "gfx942");
        assert!(detect("tpu").is_err());
        assert_eq!(
            chip_flags("hip", "gfx942"),
            ["--iree-hal-target-device=hip", "--iree-rocm-target=gfx942"]
        );
    }
}
