//! `[bench]`: defaults and devices of `lockstep bench`.

use std::path::PathBuf;
use std::time::Duration;

use lockstep_core::config::{de, Section};
use serde::Deserialize;

/// `[bench]`: kernel benchmarks.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct BenchConfig {
    /// Kernel cache directory (relative to lockstep.toml); `$BOO_CACHE_DIR`
    /// overrides it, the default is `$LOCKSTEP_CACHE/bench`.
    pub cache_dir: Option<PathBuf>,
    /// Device used when no `--device` is given (default `local-task`).
    pub device: Option<String>,
    /// iree-compile flags added to every kernel's compile, after the device's.
    pub compile_flags: Vec<String>,
    /// Per compile and per timed process (default 10m); `--timeout` wins.
    #[serde(default, deserialize_with = "de::optional_duration")]
    pub timeout: Option<Duration>,
    /// Named devices (`[bench.devices.NAME]`), beside the built-in ones.
    pub devices: std::collections::BTreeMap<String, BenchDeviceConfig>,
    /// The most bytes one kernel's tensors may need (`8G`, `500M`); default
    /// half of the free memory or disk. `--max-bytes` wins.
    pub max_bytes: Option<String>,
}

/// One `[bench.devices.NAME]` table: how to compile for a device and which
/// runtime device runs the kernels.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct BenchDeviceConfig {
    /// The IREE runtime device (`--device=` of the runtime tools); default NAME.
    pub runtime_device: Option<String>,
    /// The iree-compile target flags, replacing the built-in ones for NAME.
    pub compile_flags: Option<Vec<String>>,
    /// Extra flags for iree-benchmark-module and iree-run-module.
    pub run_flags: Vec<String>,
}

impl BenchConfig {
    /// The cache as every command sees it: `$LOCKSTEP_CACHE`, the kernel
    /// area moved by `cache-dir` (relative to lockstep.toml's directory
    /// `root`).
    pub fn cache(&self, root: &std::path::Path) -> lockstep_cache::Cache {
        lockstep_cache::Cache::from_env(self.cache_dir.as_ref().map(|dir| root.join(dir)))
    }
}

impl Section for BenchConfig {
    const NAME: &'static str = "bench";
    const DOCS: &'static str = "bench.md";
}
