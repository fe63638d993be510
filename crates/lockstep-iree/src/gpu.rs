//! GPUs: the target chip of the machine's `cuda` or `hip` device, so
//! `--device cuda` and `--device hip` compile for the GPU that will run the
//! kernel without hand configuration (IREE's own package CI names the chip:
//! `--iree-cuda-target=sm_90`, `--iree-hip-target=gfx942`).
//!
//! - NVIDIA: `nvidia-smi --query-gpu=compute_cap` (`9.0` -> `sm_90`).
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
/// there is none.
pub fn detect(driver: &str) -> Result<String, String> {
    match driver {
        "cuda" => detect_cuda(),
        "hip" => detect_hip(Path::new(KFD_NODES)),
        other => Err(format!("no GPU target for driver `{other}`")),
    }
}

/// The iree-compile flags that pin `chip` for `driver`.
pub fn chip_flags(driver: &str, chip: &str) -> Vec<String> {
    let target = match driver {
        "cuda" => format!("--iree-cuda-target={chip}"),
        _ => format!("--iree-hip-target={chip}"),
    };
    vec![format!("--iree-hal-target-device={driver}"), target]
}

fn detect_cuda() -> Result<String, String> {
    let Some(smi) = process::on_path("nvidia-smi") else {
        return Err("no NVIDIA GPU found: nvidia-smi is not on PATH".into());
    };
    let log = tempfile::NamedTempFile::new().map_err(|e| e.to_string())?;
    let finished = process::run_with(
        &process::Spec {
            argv: vec![
                smi.to_string_lossy().into_owned(),
                "--query-gpu=compute_cap".into(),
                "--format=csv,noheader".into(),
            ],
            cwd: std::env::temp_dir(),
            env: Vec::new(),
            timeout: Some(Duration::from_secs(20)),
            log: log.path().to_path_buf(),
            header: None,
        },
        &process::Options {
            env_remove: process::secret_vars(&[]),
            die_with_parent: true,
            stdout: None,
        },
        |_| {},
    )
    .map_err(|e| format!("cannot run nvidia-smi: {}", e.render()))?;
    let text = std::fs::read_to_string(log.path()).unwrap_or_default();
    if finished.exit != process::Exit::Code(0) {
        let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(format!("no NVIDIA GPU found: nvidia-smi failed: {first}"));
    }
    text.lines()
        .find_map(sm_of_compute_cap)
        .ok_or_else(|| "no NVIDIA GPU found: nvidia-smi lists no GPU".to_string())
}

/// `9.0` -> `sm_90`.
pub fn sm_of_compute_cap(line: &str) -> Option<String> {
    let (major, minor) = line.trim().split_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.len() <= 2 && s.bytes().all(|b| b.is_ascii_digit());
    (digits(major) && digits(minor)).then(|| format!("sm_{major}{minor}"))
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
        assert_eq!(sm_of_compute_cap("9.0").as_deref(), Some("sm_90"));
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
            ["--iree-hal-target-device=hip", "--iree-hip-target=gfx942"]
        );
    }
}
